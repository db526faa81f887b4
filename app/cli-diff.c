/* graft-cli diff: compares two models (a trace and a script of the same
 * module, a TorchScript model and its ONNX export, an ONNX model and an
 * edit of it).
 *
 *   graft-cli diff A B [--json] [--input NAME=FILE]... [--random] [--seed N]
 *                  [--dim NAME=V[,V...]]... [--shape NAME=DIMS[,DIMS...]]...
 *                  [--rtol R] [--atol A] [--pairs]
 *   graft-cli diff MODEL --reference DIR [--input NAME=FILE]... [--random] [--json]
 *
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
#include <json-glib/json-glib.h>
#include "cli.h"
#include "loader.h"
#include "compare/alignment.h"
#include "compare/input-settings.h"
#include "compare/numeric-diff.h"
#include "compare/structural-diff.h"
#include "debug/reference-values.h"
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
  g_autoptr(GPtrArray) runs = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_numeric_run_free);
  for (guint k = 0; k < graft_input_settings_get_n_runs (settings); k++)
    {
      g_autofree char *label = NULL;
      g_autoptr(GHashTable) inputs = graft_input_settings_make_inputs (settings, nd, k, given, opts->random,
                                                                       (guint32) opts->seed, &label, error);
      if (inputs == NULL)
        {
          g_autofree char *message = g_strdup ((*error)->message);
          g_clear_error (error);
          g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                       "%s (options: --shape NAME=DIMS, --dim NAME=VALUE, --input NAME=FILE, --random)", message);
          return NULL;
        }
      GraftNumericRun *run = graft_numeric_diff_run (nd, inputs, label, error);
      if (run == NULL)
        return NULL;
      g_ptr_array_add (runs, run);
    }
  return g_steal_pointer (&runs);
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
add_node_object (JsonBuilder *b, GraftNode *node)
{
  json_builder_begin_object (b);
  graft_cli_json_string (b, "name", node->name ? node->name : "");
  graft_cli_json_string (b, "op", node->op);
  graft_cli_json_string (b, "group", node_group (node));
  json_builder_end_object (b);
}

static void
add_node_json (JsonBuilder *b, const char *member, GraftNode *node)
{
  json_builder_set_member_name (b, member);
  if (node == NULL)
    json_builder_add_null_value (b);
  else
    add_node_object (b, node);
}

static void
add_nodes_json (JsonBuilder *b, const char *member, GPtrArray *nodes)
{
  json_builder_set_member_name (b, member);
  json_builder_begin_array (b);
  for (guint i = 0; i < nodes->len; i++)
    add_node_object (b, nodes->pdata[i]);
  json_builder_end_array (b);
}

static void
add_alignment_json (JsonBuilder *b, GraftAlignment *al, GraftStructuralDiff *sd)
{
  json_builder_set_member_name (b, "alignment");
  json_builder_begin_object (b);
  graft_cli_json_int (b, "compute_nodes_a", al->n_compute_a);
  graft_cli_json_int (b, "compute_nodes_b", al->n_compute_b);
  graft_cli_json_int (b, "matched_a", al->n_matched_a);
  graft_cli_json_int (b, "matched_b", al->n_matched_b);
  graft_cli_json_int (b, "exact", sd->n_exact);
  graft_cli_json_int (b, "inferred", sd->n_inferred);
  json_builder_end_object (b);

  json_builder_set_member_name (b, "pairs");
  json_builder_begin_array (b);
  for (guint i = 0; i < al->node_pairs->len; i++)
    {
      GraftNodePair *p = &g_array_index (al->node_pairs, GraftNodePair, i);
      json_builder_begin_object (b);
      add_node_json (b, "a", p->a);
      add_node_json (b, "b", p->b);
      graft_cli_json_string (b, "match", p->kind == GRAFT_MATCH_EXACT ? "exact" : "inferred");
      graft_cli_json_string (b, "reason", p->reason);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);

  json_builder_set_member_name (b, "unmatched");
  json_builder_begin_object (b);
  add_nodes_json (b, "a", al->only_a);
  add_nodes_json (b, "b", al->only_b);
  json_builder_end_object (b);

  json_builder_set_member_name (b, "notes");
  json_builder_begin_array (b);
  for (guint i = 0; i < al->notes->len; i++)
    {
      GraftAlignmentNote *n = al->notes->pdata[i];
      json_builder_begin_object (b);
      graft_cli_json_string (b, "kind", graft_note_kind_to_string (n->kind));
      graft_cli_json_string (b, "side", n->in_a ? "a" : "b");
      add_node_json (b, "node", n->node);
      add_node_json (b, "other", n->other);
      add_nodes_json (b, "absorbed", n->absorbed);
      add_nodes_json (b, "absorbed_other", n->absorbed_other);
      graft_cli_json_string (b, "description", n->description);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
}

static void
add_changes_json (JsonBuilder *b, GraftStructuralDiff *sd)
{
  json_builder_set_member_name (b, "changes");
  json_builder_begin_array (b);
  for (guint i = 0; i < sd->changes->len; i++)
    {
      GraftChange *c = sd->changes->pdata[i];
      json_builder_begin_object (b);
      graft_cli_json_string (b, "kind", graft_change_kind_to_string (c->kind));
      add_node_json (b, "a", c->a);
      add_node_json (b, "b", c->b);
      graft_cli_json_string (b, "what", c->what);
      graft_cli_json_string (b, "before", c->before);
      graft_cli_json_string (b, "after", c->after);
      if (c->kind == GRAFT_CHANGE_SHAPE)
        {
          json_builder_set_member_name (b, "inferred");
          json_builder_add_boolean_value (b, c->inferred);
        }
      json_builder_end_object (b);
    }
  json_builder_end_array (b);

  json_builder_set_member_name (b, "groups");
  json_builder_begin_array (b);
  for (guint i = 0; i < sd->groups->len; i++)
    {
      GraftGroupDiff *g = sd->groups->pdata[i];
      json_builder_begin_object (b);
      graft_cli_json_string (b, "path", g->path);
      const char *names[] = { "matched", "changed", "only_a", "only_b", "notes" };
      guint values[] = { g->matched, g->changed, g->only_a, g->only_b, g->notes };
      for (guint k = 0; k < G_N_ELEMENTS (names); k++)
        {
          graft_cli_json_int (b, names[k], values[k]);
        }
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
}

static void
add_value_error_json (JsonBuilder *b, const GraftValueError *e)
{
  json_builder_begin_object (b);
  graft_cli_json_string (b, "a", e->a->name);
  graft_cli_json_string (b, "b", e->b->name);
  add_node_json (b, "node_a", e->a->producer);
  add_node_json (b, "node_b", e->b->producer);
  graft_cli_json_bool (b, "close", e->close);
  graft_cli_json_double (b, "max_abs", e->max_abs);
  graft_cli_json_double (b, "max_rel", e->max_rel);
  if (e->shape_differs)
    {
      graft_cli_json_string (b, "shape_a", e->shape_a);
      graft_cli_json_string (b, "shape_b", e->shape_b);
    }
  json_builder_end_object (b);
}

/* The run's first divergent value (or null) and every compared value. */
static void
add_run_values_json (JsonBuilder *b, GraftNumericRun *run)
{
  json_builder_set_member_name (b, "first_divergent");
  const GraftValueError *first = graft_numeric_run_get_first_divergent (run);
  if (first)
    add_value_error_json (b, first);
  else
    json_builder_add_null_value (b);
  json_builder_set_member_name (b, "values");
  json_builder_begin_array (b);
  for (guint i = 0; i < run->values->len; i++)
    add_value_error_json (b, &g_array_index (run->values, GraftValueError, i));
  json_builder_end_array (b);
}

static void
add_numeric_json (JsonBuilder *b, GraftAlignment *al, GPtrArray *runs, DiffOptions *opts)
{
  json_builder_set_member_name (b, "numeric");
  if (runs == NULL)
    {
      json_builder_add_null_value (b);
      return;
    }
  json_builder_begin_object (b);
  graft_cli_json_double (b, "rtol", opts->rtol);
  graft_cli_json_double (b, "atol", opts->atol);
  json_builder_set_member_name (b, "runs");
  json_builder_begin_array (b);
  for (guint r = 0; r < runs->len; r++)
    {
      GraftNumericRun *run = runs->pdata[r];
      g_autofree char *verdict = graft_numeric_run_describe (run, al);
      json_builder_begin_object (b);
      graft_cli_json_string (b, "inputs", run->label);
      graft_cli_json_string (b, "verdict", verdict);
      graft_cli_json_bool (b, "outputs_close", run->outputs_close);
      graft_cli_json_string (b, "error_a", run->error_a);
      graft_cli_json_string (b, "error_b", run->error_b);
      graft_cli_json_int (b, "compared", run->n_compared);
      graft_cli_json_int (b, "divergent", run->n_divergent);
      graft_cli_json_double (b, "seconds_a", run->seconds_a);
      graft_cli_json_double (b, "seconds_b", run->seconds_b);
      add_run_values_json (b, run);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  json_builder_end_object (b);
}

static void
print_json (GraftAlignment *al, GraftStructuralDiff *sd, GPtrArray *runs, DiffOptions *opts, gboolean equivalent,
            double align_seconds)
{
  g_autoptr(JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  graft_cli_json_string (b, "a", graft_model_get_path (al->a));
  graft_cli_json_string (b, "b", graft_model_get_path (al->b));
  graft_cli_json_bool (b, "equivalent", equivalent);
  graft_cli_json_string (b, "summary", sd->summary);
  graft_cli_json_double (b, "alignment_seconds", align_seconds);
  add_alignment_json (b, al, sd);
  add_changes_json (b, sd);
  add_numeric_json (b, al, runs, opts);
  json_builder_end_object (b);
  graft_cli_json_print (b);
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
    print_json (al, sd, runs, opts, equivalent, align_seconds);
  else
    print_text (al, sd, runs, opts);
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

static void
print_reference_json (const char *path, DiffOptions *opts, GraftNumericRun *run, guint n_reference)
{
  g_autoptr(JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  graft_cli_json_string (b, "model", path);
  graft_cli_json_string (b, "reference", opts->reference);
  graft_cli_json_int (b, "reference_values", n_reference);
  graft_cli_json_int (b, "compared", run->n_compared);
  graft_cli_json_int (b, "divergent", run->n_divergent);
  graft_cli_json_bool (b, "outputs_close", run->outputs_close);
  graft_cli_json_string (b, "error", run->error_a);
  add_run_values_json (b, run);
  json_builder_end_object (b);
  graft_cli_json_print (b);
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
    print_reference_json (path, opts, run, g_hash_table_size (reference));
  else
    print_reference_text (path, opts, run, g_hash_table_size (reference));
  return run->n_divergent == 0 && run->outputs_close ? 0 : 1;
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
  return status;
}
