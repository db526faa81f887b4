/* graft-cli diff: compares two models (a trace and a script of the same
 * module, a TorchScript model and its ONNX export, an ONNX model and an
 * edit of it).
 *
 *   graft-cli diff A B [--json] [--input NAME=FILE]... [--random] [--seed N]
 *                  [--dim NAME=V[,V...]]... [--shape NAME=DIMS[,DIMS...]]...
 *                  [--rtol R] [--atol A] [--pairs]
 *                  [--target NAME [--target NAME2]]
 *   graft-cli diff MODEL --reference DIR [--input NAME=FILE]... [--random] [--json]
 *
 * --target checks A against the first deployment target and B against the
 * second (or the same): the same model under two targets (diff M M
 * --target ort-nnapi --target openvino), or an export and its fixed copy
 * under one; the aligned nodes the two decide differently are listed.
 * Always aligns the two graphs and prints the structural diff; with
 * --input or --random also runs both in Graft's runtime, once per shape
 * setting (the k-th value of every --dim / --shape list; a shorter list
 * keeps its last value), and compares outputs and matched intermediates.
 * Exit status: 0 equivalent (no structural difference but folded
 * BatchNorms and runtime checks, and all outputs close), 1 they differ,
 * 2 error. With --reference, every value one model computes is compared
 * with DIR/<value name>.npy instead (exit 1 when any differs). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "loader.h"
#include "compare/alignment.h"
#include "compare/input-settings.h"
#include "compare/numeric-diff.h"
#include "compare/structural-diff.h"
#include "debug/reference-values.h"
#include "report/diff-json.h"
#include "compare/target-diff.h"
#include "runtime/inputs.h"
#include "runtime/tensor-file.h"

typedef struct {
  gboolean json;
  gboolean pairs;
  char **inputs;
  gboolean random;
  gint64 seed;
  char **dims;
  char **shapes;
  double rtol;
  double atol;
  char *reference;   /* a folder of .npy values by value name: diff MODEL --reference DIR */
  char **targets;    /* deployment targets of A and B (one: both) */
} DiffOptions;

static gboolean
read_given_inputs (GraftNumericDiff *nd, DiffOptions *opts, GHashTable *given, GError **error)
{
  for (guint i = 0; opts->inputs && opts->inputs[i]; i++)
    {
      const char *arg = opts->inputs[i];
      const char *eq = strchr (arg, '=');
      g_autofree char *name = eq ? g_strndup (arg, eq - arg) : NULL;
      if (!graft_input_settings_read_input (nd, name, eq ? eq + 1 : arg, given, error))
        return g_prefix_error (error, "--input %s: ", arg), FALSE;
    }
  return TRUE;
}

static GraftInputSettings *
parse_settings (DiffOptions *opts, GError **error)
{
  g_autoptr(GraftInputSettings) settings = graft_input_settings_new ();
  for (guint i = 0; opts->dims && opts->dims[i]; i++)
    if (!graft_input_settings_add_dims (settings, opts->dims[i], error))
      return g_prefix_error (error, "--dim: "), NULL;
  for (guint i = 0; opts->shapes && opts->shapes[i]; i++)
    if (!graft_input_settings_add_shapes (settings, opts->shapes[i], error))
      return g_prefix_error (error, "--shape: "), NULL;
  return g_steal_pointer (&settings);
}

static GPtrArray *
run_numeric (GraftNumericDiff *nd, DiffOptions *opts, GError **error)
{
  g_autoptr(GraftInputSettings) settings = parse_settings (opts, error);
  g_autoptr(GHashTable) given = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, (GDestroyNotify) graft_rt_tensor_unref);
  if (settings == NULL || !read_given_inputs (nd, opts, given, error))
    return NULL;
  return graft_input_settings_run_all (settings, nd, given, opts->random, (guint32) opts->seed,
                                       "options: --shape NAME=DIMS, --dim NAME=VALUE, --input NAME=FILE, --random", error);
}

/* ------------------------------------------------------------------ */
/* Output                                                              */

static const char *
node_name (GraftNode *node)
{
  return node && node->name && *node->name ? node->name : node ? node->op : "";
}

static const char *
node_group (GraftNode *node)
{
  return node && node->group && node->group->path ? node->group->path : "";
}

static void
print_node_list (const char *title, GPtrArray *nodes)
{
  if (nodes->len == 0)
    return;
  printf ("\n%s (%u):\n", title, nodes->len);
  for (guint i = 0; i < nodes->len; i++)
    printf ("  %-24s %-40s %s\n", ((GraftNode *) nodes->pdata[i])->op, node_name (nodes->pdata[i]), node_group (nodes->pdata[i]));
}

static void
print_text (GraftAlignment *al, GraftStructuralDiff *sd, GPtrArray *runs, DiffOptions *opts)
{
  printf ("A: %s\nB: %s\n\n%s\n", graft_model_get_path (al->a), graft_model_get_path (al->b), sd->summary);
  printf ("\nAlignment: %u of %u compute nodes of A matched or explained (%.1f%%), %u of %u of B (%.1f%%)\n",
          al->n_matched_a, al->n_compute_a, al->n_compute_a ? 100.0 * al->n_matched_a / al->n_compute_a : 100.0,
          al->n_matched_b, al->n_compute_b, al->n_compute_b ? 100.0 * al->n_matched_b / al->n_compute_b : 100.0);
  if (al->notes->len)
    {
      printf ("\nDifferences explained:\n");
      for (guint i = 0; i < al->notes->len; i++)
        {
          GraftAlignmentNote *n = al->notes->pdata[i];
          printf ("  %-14s %s\n", graft_note_kind_to_string (n->kind), n->description);
        }
    }
  if (sd->changes->len)
    {
      printf ("\nChanged (%u):\n", sd->changes->len);
      for (guint i = 0; i < sd->changes->len; i++)
        {
          GraftChange *c = sd->changes->pdata[i];
          printf ("  %-10s %s %s%s: %s → %s\n", graft_change_kind_to_string (c->kind),
                  c->b ? node_name (c->b) : "input", c->what, c->inferred ? " (inferred)" : "", c->before, c->after);
        }
    }
  print_node_list ("Only in A", al->only_a);
  print_node_list ("Only in B", al->only_b);
  gboolean header = FALSE;
  for (guint i = 0; i < sd->groups->len; i++)
    {
      GraftGroupDiff *g = sd->groups->pdata[i];
      if (g->changed + g->only_a + g->only_b + g->notes == 0)
        continue;
      if (!header)
        printf ("\n%-40s %8s %8s %8s %8s %8s\n", "group", "matched", "changed", "only A", "only B", "notes");
      header = TRUE;
      printf ("%-40s %8u %8u %8u %8u %8u\n", *g->path ? g->path : "(top level)", g->matched, g->changed, g->only_a,
              g->only_b, g->notes);
    }
  if (opts->pairs)
    {
      printf ("\nPairs (%u):\n", al->node_pairs->len);
      for (guint i = 0; i < al->node_pairs->len; i++)
        {
          GraftNodePair *p = &g_array_index (al->node_pairs, GraftNodePair, i);
          printf ("  %-8s %-40s ↔ %-40s (%s)\n", p->kind == GRAFT_MATCH_EXACT ? "exact" : "inferred",
                  node_name (p->a), node_name (p->b), p->reason);
        }
    }
  for (guint r = 0; runs && r < runs->len; r++)
    {
      GraftNumericRun *run = runs->pdata[r];
      double worst_abs = 0, worst_rel = 0;
      for (guint i = 0; i < run->values->len; i++)
        {
          GraftValueError *e = &g_array_index (run->values, GraftValueError, i);
          if (e->a->is_graph_output)
            worst_abs = MAX (worst_abs, e->max_abs), worst_rel = MAX (worst_rel, e->max_rel);
        }
      g_autofree char *verdict = graft_numeric_run_describe (run, al);
      printf ("\n%c%s\n", g_ascii_toupper (verdict[0]), verdict + 1);
      /* A side that failed computed no outputs: nothing to give a maximum of. */
      if (run->error_a || run->error_b)
        printf ("Run at %s: outputs not compared (%s failed); %u values compared before that, %u divergent\n",
                run->label, run->error_a && run->error_b ? "both runs" : run->error_a ? "A's run" : "B's run",
                run->n_compared, run->n_divergent);
      else
        printf ("Run at %s: outputs %s (max abs %.3g, rel %.3g; rtol %g, atol %g); %u values compared, %u divergent\n",
                run->label, run->outputs_close ? "close" : "DIFFER", worst_abs, worst_rel, opts->rtol, opts->atol,
                run->n_compared, run->n_divergent);
      if (run->error_a)
        printf ("  A fails: %s\n", run->error_a);
      if (run->error_b)
        printf ("  B fails: %s\n", run->error_b);
      const GraftValueError *first = graft_numeric_run_get_first_divergent (run);
      if (first && first->shape_differs)
        printf ("  first divergent: %s (%s) ↔ %s (%s): shape %s vs %s\n", node_name (first->a->producer), first->a->name,
                node_name (first->b->producer), first->b->name, first->shape_a, first->shape_b);
      else if (first)
        printf ("  first divergent: %s (%s) ↔ %s (%s): max abs %.3g, rel %.3g\n", node_name (first->a->producer),
                first->a->name, node_name (first->b->producer), first->b->name, first->max_abs, first->max_rel);
    }
}

/* ------------------------------------------------------------------ */

static char *
describe_node (GraftNode *node)
{
  g_autofree char *name = node ? graft_cli_escape_name (node_name (node)) : NULL;

  return node ? g_strdup_printf ("%s '%s'", node->op, name) : g_strdup ("-");
}

/* Each side's summary under its target and the nodes decided differently. */
static void
print_targets (const GraftTargetDiff *targets)
{
  g_autofree char *summary_a = graft_target_report_summary (targets->a);
  g_autofree char *summary_b = graft_target_report_summary (targets->b);

  printf ("\nDeployment targets:\n  A: %s\n  B: %s\n", summary_a, summary_b);
  printf ("  %u node%s decided differently%s\n", targets->differences->len,
          targets->differences->len == 1 ? "" : "s", targets->differences->len ? ":" : "");
  for (guint i = 0; i < targets->differences->len; i++)
    {
      const GraftTargetDifference *d = &g_array_index (targets->differences, GraftTargetDifference, i);
      g_autofree char *a = describe_node (d->a), *b = describe_node (d->b);
      g_autofree char *on_a = graft_target_difference_describe (d->on_a, targets->a->target);
      g_autofree char *on_b = graft_target_difference_describe (d->on_b, targets->b->target);
      g_autofree char *text_a = graft_cli_escape_name (on_a), *text_b = graft_cli_escape_name (on_b);

      if (d->a == NULL || d->b == NULL)
        printf ("    %s (only in %s)\n      %s: %s\n", d->a ? a : b, d->a ? "A" : "B", d->a ? "A" : "B",
                d->a ? text_a : text_b);
      else if (strcmp (a, b) == 0)
        printf ("    %s\n      A: %s\n      B: %s\n", a, text_a, text_b);
      else
        printf ("    A %s: %s\n    B %s: %s\n", a, text_a, b, text_b);
    }
}

static int
diff_models (const char *path_a, const char *path_b, DiffOptions *opts)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) a = graft_model_load (path_a, NULL, NULL, NULL, &error);
  if (a == NULL)
    {
      graft_cli_print_error ("%s", error->message);
      return 2;
    }
  g_autoptr(GraftModel) b = graft_model_load (path_b, NULL, NULL, NULL, &error);
  if (b == NULL)
    {
      graft_cli_print_error ("%s", error->message);
      return 2;
    }
  gint64 start = g_get_monotonic_time ();
  g_autoptr(GraftAlignment) al = graft_alignment_new (a, b, &error);
  double align_seconds = (g_get_monotonic_time () - start) / 1e6;
  if (al == NULL)
    {
      graft_cli_print_error ("diff: %s", error->message);
      return 2;
    }
  g_autoptr(GraftStructuralDiff) sd = graft_structural_diff_new (al);
  gboolean equivalent = graft_structural_diff_is_equivalent (sd);
  g_autoptr(GraftTargetDiff) targets = NULL;

  if (opts->targets != NULL)
    {
      const GraftDeployTarget *target_a = graft_deploy_target_lookup (opts->targets[0]);
      const GraftDeployTarget *target_b = graft_deploy_target_lookup (opts->targets[1] ? opts->targets[1] : opts->targets[0]);
      targets = graft_target_diff_new (al, target_a, target_b, &error);
      if (targets == NULL)
        {
          graft_cli_print_error ("diff: %s", error->message);
          return 2;
        }
    }

  g_autoptr(GPtrArray) runs = NULL;
  if (opts->random || opts->inputs)
    {
      g_autoptr(GraftNumericDiff) nd = graft_numeric_diff_new (al, opts->rtol, opts->atol, &error);
      if (nd == NULL)
        {
          graft_cli_print_error ("diff: %s", error->message);
          return 2;
        }
      runs = run_numeric (nd, opts, &error);
      if (runs == NULL)
        {
          graft_cli_print_error ("diff: %s", error->message);
          return 2;
        }
      for (guint r = 0; r < runs->len; r++)
        equivalent &= ((GraftNumericRun *) runs->pdata[r])->outputs_close;
    }
  if (opts->json)
    {
      g_autofree char *text = graft_diff_to_json (al, sd, runs, opts->rtol, opts->atol, equivalent, align_seconds,
                                                targets);
      printf ("%s\n", text);
    }
  else
    {
      print_text (al, sd, runs, opts);
      if (targets != NULL)
        print_targets (targets);
    }
  return equivalent ? 0 : 1;
}

static void
print_reference_text (const char *path, DiffOptions *opts, GraftNumericRun *run, guint n_reference)
{
  printf ("%s against %s (%u values there): %u compared, %u differ\n", path, opts->reference, n_reference,
          run->n_compared, run->n_divergent);
  const GraftValueError *first = graft_numeric_run_get_first_divergent (run);
  if (first != NULL && first->shape_differs)
    printf ("first divergent: %s '%s' (%s): shape %s, the reference %s\n", first->a->producer->op,
            node_name (first->a->producer), first->a->name, first->shape_b, first->shape_a);
  else if (first != NULL)
    printf ("first divergent: %s '%s' (%s): max abs %.3g, rel %.3g\n", first->a->producer->op,
            node_name (first->a->producer), first->a->name, first->max_abs, first->max_rel);
  if (run->error_a)
    printf ("the run failed: %s\n", run->error_a);
  printf ("outputs: %s\n", run->outputs_close ? "close" : "differ (or have no reference)");
  if (!opts->pairs)
    return;
  for (guint i = 0; i < run->values->len; i++)
    {
      const GraftValueError *e = &g_array_index (run->values, GraftValueError, i);
      printf ("  %-6s %s (%s): max abs %.3g, rel %.3g\n", e->close ? "close" : "DIFFER", e->a->name,
              node_name (e->a->producer), e->max_abs, e->max_rel);
    }
}

/* diff MODEL --reference DIR: every value the run computes against the
 * .npy of the same name. */
static int
diff_reference (const char *path, DiffOptions *opts)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);
  if (model == NULL)
    {
      graft_cli_print_error ("%s", error->message);
      return 2;
    }
  g_autoptr(GraftRuntime) rt = graft_runtime_new (model, &error);
  g_autoptr(GHashTable) reference = NULL;
  g_autoptr(GHashTable) inputs = NULL;
  if (rt == NULL
      || (reference = graft_reference_values_read_folder (graft_model_get_graph (model), opts->reference, &error)) == NULL
      || (inputs = graft_cli_make_inputs (rt, opts->inputs, opts->dims, opts->random, opts->seed, &error)) == NULL)
    {
      graft_cli_print_error ("diff: %s", error->message);
      return 2;
    }
  g_autoptr(GraftNumericRun) run = graft_numeric_run_against_reference (rt, inputs, reference, opts->rtol, opts->atol, NULL);
  if (run->n_compared == 0 && run->error_a == NULL)
    {
      graft_cli_print_error ("diff: no value %s computes has a .npy file in %s", path, opts->reference);
      return 2;
    }
  if (opts->json)
    {
      g_autofree char *text = graft_reference_diff_to_json (path, opts->reference, g_hash_table_size (reference), run);
      printf ("%s\n", text);
    }
  else
    print_reference_text (path, opts, run, g_hash_table_size (reference));
  return run->n_divergent == 0 && run->outputs_close ? 0 : 1;
}

/* At most two --target, each a deployment target. */
static gboolean
targets_known (char **targets)
{
  g_autofree char *names = graft_deploy_target_list_names ();

  if (targets != NULL && g_strv_length (targets) > 2)
    {
      graft_cli_print_error ("diff: at most two --target (one for A, one for B)");
      return FALSE;
    }
  for (guint i = 0; targets != NULL && targets[i] != NULL; i++)
    if (graft_deploy_target_lookup (targets[i]) == NULL)
      {
        graft_cli_print_error ("diff: --target takes a deployment target (%s), not '%s'", names, targets[i]);
        return FALSE;
      }
  return TRUE;
}

int
graft_cli_diff (int argc, char **argv)
{
  DiffOptions opts = { .rtol = 1e-5, .atol = 1e-5 };
  g_auto(GStrv) rest = NULL;
  g_autoptr(GError) error = NULL;
  GOptionEntry entries[] = {
    { "json", 0, 0, G_OPTION_ARG_NONE, &opts.json, "Print the result as JSON", NULL },
    { "pairs", 0, 0, G_OPTION_ARG_NONE, &opts.pairs, "List every matched pair (text output)", NULL },
    { "input", 'i', 0, G_OPTION_ARG_STRING_ARRAY, &opts.inputs, "Input from a .npy or .pb file, fed to both models", "[NAME=]FILE" },
    { "random", 0, 0, G_OPTION_ARG_NONE, &opts.random, "Random data for inputs not given", NULL },
    { "seed", 0, 0, G_OPTION_ARG_INT64, &opts.seed, "Seed for --random (default 0)", "N" },
    { "dim", 0, 0, G_OPTION_ARG_STRING_ARRAY, &opts.dims, "Values of a symbolic dimension, one run each", "NAME=V[,V...]" },
    { "shape", 0, 0, G_OPTION_ARG_STRING_ARRAY, &opts.shapes, "Shapes of a random input, one run each", "NAME=DIMS[,DIMS...]" },
    { "rtol", 0, 0, G_OPTION_ARG_DOUBLE, &opts.rtol, "Relative tolerance (default 1e-5)", "R" },
    { "atol", 0, 0, G_OPTION_ARG_DOUBLE, &opts.atol, "Absolute tolerance (default 1e-5)", "A" },
    { "reference", 0, 0, G_OPTION_ARG_FILENAME, &opts.reference,
      "Compare one model's every value with DIR/<value name>.npy (onnxruntime or PyTorch dumps)", "DIR" },
    { "target", 0, 0, G_OPTION_ARG_STRING_ARRAY, &opts.targets,
      "Check A against this deployment target and B against the next --target (or the same); list the nodes decided "
      "differently", "NAME" },
    { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_STRING_ARRAY, &rest, NULL, "A B" },
    { NULL }
  };
  g_autoptr(GOptionContext) context = g_option_context_new ("A B - compare two models");
  g_option_context_add_main_entries (context, entries, NULL);
  int status;
  if (!g_option_context_parse (context, &argc, &argv, &error))
    {
      graft_cli_print_error ("diff: %s", error->message);
      status = 2;
    }
  else if (opts.reference != NULL && (rest == NULL || rest[0] == NULL || rest[1] != NULL))
    {
      graft_cli_print_error ("diff: --reference DIR compares one MODEL (see graft-cli diff --help)");
      status = 2;
    }
  else if (opts.reference == NULL && (rest == NULL || rest[0] == NULL || rest[1] == NULL || rest[2] != NULL))
    {
      graft_cli_print_error ("diff: expected two models A and B (see graft-cli diff --help)");
      status = 2;
    }
  else if (!targets_known (opts.targets))
    status = 2;
  else if (!(opts.rtol >= 0) || !(opts.atol >= 0))
    {
      graft_cli_print_error ("diff: --rtol and --atol must be non-negative numbers");
      status = 2;
    }
  else if (opts.reference != NULL)
    status = diff_reference (rest[0], &opts);
  else
    status = diff_models (rest[0], rest[1], &opts);
  g_strfreev (opts.inputs);
  g_strfreev (opts.dims);
  g_strfreev (opts.shapes);
  g_free (opts.reference);
  g_strfreev (opts.targets);
  return status;
}
