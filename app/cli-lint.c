/* graft-cli lint FILE [--json] [--onnx-export] [--target NAME [--fix [-o OUT]]]:
 * the diagnostics of model/analysis, a deployment target's verdicts and
 * the fixes it offers (model/lint/target-fixes.h), applied through an edit
 * history and saved when -o is given. Exit status 1 when any has severity
 * error (before the fixes; after them when they were saved). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "loader.h"
#include "lint/diagnostics.h"
#include "lint/lint-rules.h"
#include "lower/lower.h"
#include "report/lint-json.h"
#include "lint/deploy-target.h"
#include "lint/target-check.h"
#include "edit/edit-history.h"
#include "edit/recipe.h"
#include "lint/target-fixes.h"
#include "onnx/writer.h"


static void
print_text (const char *path, GPtrArray *diagnostics)
{
  guint counts[3] = { 0 };

  for (guint i = 0; i < diagnostics->len; i++)
    {
      GraftDiagnostic *d = g_ptr_array_index (diagnostics, i);
      g_autofree char *where = graft_cli_escape_name (d->node_name ? d->node_name : d->value ? d->value->name : "");
      g_autofree char *message = graft_cli_escape_name (d->message);

      counts[d->severity]++;
      printf ("%s: %s [%s] %s: %s\n", path, graft_severity_to_string (d->severity), d->rule, where, message);
    }
  printf ("%u errors, %u warnings, %u notes\n", counts[GRAFT_SEVERITY_ERROR], counts[GRAFT_SEVERITY_WARNING],
          counts[GRAFT_SEVERITY_INFO]);
}

/* The target's summary and each partition with its borders. */
static void
print_target_report (const GraftTargetReport *report)
{
  g_autofree char *summary = graft_target_report_summary (report);

  printf ("%s (%s; %s)\n", summary, report->target->title, report->target->version);
  for (guint i = 0; i < report->partitions->len; i++)
    {
      GraftPartition *partition = g_ptr_array_index (report->partitions, i);
      g_autofree char *first = graft_node_display_name (g_ptr_array_index (partition->nodes, 0));
      g_autofree char *last = graft_node_display_name (g_ptr_array_index (partition->nodes, partition->nodes->len - 1));
      GString *in = g_string_new (NULL), *out = g_string_new (NULL);

      for (guint k = 0; k < partition->inputs->len; k++)
        g_string_append_printf (in, "%s%s", k ? ", " : "", ((GraftValue *) g_ptr_array_index (partition->inputs, k))->name);
      for (guint k = 0; k < partition->outputs->len; k++)
        g_string_append_printf (out, "%s%s", k ? ", " : "", ((GraftValue *) g_ptr_array_index (partition->outputs, k))->name);
      printf ("  partition %u: %u nodes, %s … %s; data in: %s; out: %s\n", i + 1, partition->nodes->len, first, last,
              in->len ? in->str : "(none)", out->len ? out->str : "(none)");
      g_string_free (in, TRUE);
      g_string_free (out, TRUE);
    }
}

static void
print_targets (void)
{
  guint n_targets;
  const GraftDeployTarget *const *targets = graft_deploy_targets (&n_targets);

  for (guint i = 0; i < n_targets; i++)
    printf ("%-22s %s (%s)\n", targets[i]->name, targets[i]->title, targets[i]->version);
}

static void
print_rules (void)
{
  guint n_rules;
  const GraftLintRule *rules = graft_lint_rules (&n_rules);

  for (guint i = 0; i < n_rules; i++)
    printf ("%-30s %-8s %s%s\n%32s%s\n", rules[i].id, graft_severity_to_string (rules[i].severity), rules[i].title,
            rules[i].fix == GRAFT_LINT_FIX_MAKE_DIM_DYNAMIC ? " (fix: make the dim dynamic)" : "", "",
            rules[i].description);
}

static void
print_fix_plan (const GraftTargetFixPlan *plan)
{
  g_autofree char *summary = graft_target_fix_plan_summary (plan);

  printf ("Fixes for %s: %s\n", plan->target->name, summary);
  for (guint i = 0; i < plan->fixes->len; i++)
    {
      GraftTargetFix *fix = g_ptr_array_index (plan->fixes, i);
      g_autofree char *title = graft_cli_escape_name (fix->title);

      printf ("  %u. [%s] %s: %u → %u nodes rejected, %u → %u partitions\n", i + 1, fix->id, title,
              fix->unsupported_before, fix->unsupported_after, fix->partitions_before, fix->partitions_after);
    }
}

/* Applies the plan's edits through an edit history (as the window does),
 * re-checks, saves; the exit status. */
static int
apply_fix_plan (GraftModel *model, const GraftTargetFixPlan *plan, const char *out, const char *recipe,
                const GraftLintOptions *options)
{
  g_autoptr(GraftEditHistory) history = graft_edit_history_new (model);
  g_autoptr(GraftTargetReport) report = NULL;
  g_autoptr(GPtrArray) diagnostics = NULL;
  g_autoptr(GError) error = NULL;

  for (guint i = 0; i < plan->fixes->len; i++)
    {
      g_autoptr(GPtrArray) edits = graft_target_fix_new_edits (g_ptr_array_index (plan->fixes, i), &error);
      for (guint j = 0; edits != NULL && j < edits->len; j++)
        {
          GraftEdit *edit = g_ptr_array_index (edits, j);
          g_autofree char *description = NULL;
          if (!graft_edit_history_apply (history, edit, &error))
            break;
          description = graft_cli_escape_name (graft_edit_get_description (edit));
          printf ("applied: %s\n", description);
        }
      if (error != NULL)
        {
          graft_cli_print_error ("lint --fix: %s", error->message);
          return 1;
        }
    }
  report = graft_target_check (model, plan->target, NULL, &error);
  if (report == NULL)
    {
      graft_cli_print_error ("lint --fix: %s", error->message);
      return 1;
    }
  printf ("after the fixes: ");
  print_target_report (report);
  if (recipe != NULL && !graft_recipe_save (graft_edit_history_get_applied (history), recipe, &error))
    {
      graft_cli_print_error ("%s", error->message);
      return 1;
    }
  if (!graft_onnx_write_file (model, out, GRAFT_ONNX_WRITE_NONE, &error))
    {
      graft_cli_print_error ("%s", error->message);
      return 1;
    }
  printf ("saved %s%s%s\n", out, recipe ? " and the recipe " : "", recipe ? recipe : "");
  diagnostics = graft_lint_model (model, options);
  return graft_diagnostics_have_errors (diagnostics) ? 1 : 0;
}

int
graft_cli_lint (int argc, char **argv)
{
  gboolean json = FALSE, fix = FALSE;
  const char *out = NULL, *recipe = NULL;
  g_autoptr(GPtrArray) dim_specs = g_ptr_array_new ();
  g_autoptr(GHashTable) dim_sizes = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  GraftLintOptions options = { FALSE };
  const char *path = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = NULL;
  g_autoptr(GPtrArray) diagnostics = NULL;
  g_autoptr(GraftTargetReport) report = NULL;

  for (int i = 1; i < argc; i++)
    {
      if (strcmp (argv[i], "--json") == 0)
        json = TRUE;
      else if (strcmp (argv[i], "--onnx-export") == 0)
        options.onnx_export_target = TRUE;
      else if (strcmp (argv[i], "--fix") == 0)
        fix = TRUE;
      else if ((strcmp (argv[i], "-o") == 0 || strcmp (argv[i], "--output") == 0 || strcmp (argv[i], "--dim") == 0
                || strcmp (argv[i], "--save-recipe") == 0) && i + 1 < argc)
        {
          const char *option = argv[i++];
          if (strcmp (option, "--dim") == 0)
            g_ptr_array_add (dim_specs, argv[i]);
          else if (strcmp (option, "--save-recipe") == 0)
            recipe = argv[i];
          else
            out = argv[i];
        }
      else if (strcmp (argv[i], "--target") == 0 || g_str_has_prefix (argv[i], "--target="))
        {
          const char *target = argv[i][8] == '=' ? argv[i] + 9 : i + 1 < argc ? argv[++i] : "";
          guint64 opset = GRAFT_LOWER_DEFAULT_OPSET;
          if (graft_deploy_target_lookup (target) != NULL)
            {
              options.deploy_target = graft_deploy_target_lookup (target);
              continue;
            }
          if (!g_str_has_prefix (target, "onnx") || (target[4] != '\0' && target[4] != ':') ||
              (target[4] == ':' && !g_ascii_string_to_unsigned (target + 5, 10, GRAFT_LOWER_MIN_OPSET,
                                                                  graft_lower_max_opset (), &opset, NULL)))
            {
              g_autofree char *names = graft_deploy_target_list_names ();
              graft_cli_print_error ("lint: --target takes a deployment target (%s), or onnx or onnx:OPSET (opset %d "
                                     "to %" G_GINT64_FORMAT "), not '%s'", names, GRAFT_LOWER_MIN_OPSET,
                                     graft_lower_max_opset (), target);
              return 2;
            }
          options.onnx_target_opset = (gint64) opset;
        }
      else if (strcmp (argv[i], "--list-targets") == 0)
        {
          print_targets ();
          return 0;
        }
      else if (strcmp (argv[i], "--list-rules") == 0)
        {
          print_rules ();
          return 0;
        }
      else if (strcmp (argv[i], "--help") == 0)
        {
          printf ("Usage: graft-cli lint FILE [--json] [--onnx-export] [--target NAME|onnx[:OPSET]]\n"
                  "       graft-cli lint FILE --target NAME --fix [-o OUT [--save-recipe FILE.json]] [--dim NAME=N]...\n"
                  "       graft-cli lint --list-rules | --list-targets\n"
                  "Lists unsupported ops, static input dims, baked shape constants and trace hazards.\n"
                  "--onnx-export: the TorchScript model is meant for torch.onnx.export.\n"
                  "--target onnx[:OPSET]: the model is to be converted with graft-cli convert; ops it cannot\n"
                  "  write at that opset (default 17) are unsupported-op errors.\n"
                  "--target NAME: a deployment target (--list-targets: tensorrt, ort-nnapi, ort-coreml, openvino…);\n"
                  "  each node it cannot run is an unsupported-op diagnostic with the reason (a warning where the\n"
                  "  target falls back to the host, an error where it refuses the model), and the supported nodes'\n"
                  "  partitions are listed with their sizes and the values crossing their borders ('partitions' in\n"
                  "  --json, as onnxruntime's partitioner groups them).\n"
                  "--fix (with --target NAME): the fixes Graft knows for what the target rejects (fix the dynamic\n"
                  "  input dims, fold the shape math, int32 indices, LayerNormalization and Erf decomposed into ops\n"
                  "  the target has), each tried on a copy and listed only when the target then rejects fewer nodes.\n"
                  "  -o OUT applies them as edits, re-checks and saves the model; --save-recipe FILE.json saves\n"
                  "  them as a recipe (graft-cli edit --recipe); --dim NAME=N sizes a symbolic dim (default 1).\n"
                  "--list-rules: every rule with its usual severity, title and fix.\n"
                  "Exit status: 0 no errors, 1 errors found or unreadable file, 2 bad usage.\n");
          return 0;
        }
      else if (argv[i][0] == '-' || path != NULL)
        {
          graft_cli_print_error ("lint: unexpected argument '%s' (try --help)", argv[i]);
          return 2;
        }
      else
        path = argv[i];
    }
  if (path == NULL)
    {
      graft_cli_print_error ("lint: no model file given (try --help)");
      return 2;
    }

  if ((fix || out != NULL || recipe != NULL || dim_specs->len > 0) && (options.deploy_target == NULL || !fix || json))
    {
      graft_cli_print_error ("lint: --fix goes with --target NAME (a deployment target) and without --json; -o, "
                             "--save-recipe and --dim go with --fix");
      return 2;
    }
  if (recipe != NULL && out == NULL)
    {
      graft_cli_print_error ("lint: --save-recipe needs -o OUT");
      return 2;
    }
  g_ptr_array_add (dim_specs, NULL);
  if (!graft_cli_parse_dims ((char **) dim_specs->pdata, dim_sizes, &error))
    {
      graft_cli_print_error ("lint: %s", error->message);
      return 2;
    }
  model = graft_model_load (path, NULL, NULL, NULL, &error);
  if (model == NULL)
    {
      graft_cli_print_error ("%s", error->message);
      return 1;
    }
  diagnostics = graft_lint_model (model, &options);
  if (options.deploy_target != NULL)
    report = graft_target_check (model, options.deploy_target, NULL, NULL);
  if (json)
    {
      g_autofree char *text = graft_diagnostics_to_json (diagnostics, report);
      printf ("%s\n", text);
    }
  else
    {
      print_text (path, diagnostics);
      if (report != NULL)
        print_target_report (report);
    }
  if (fix)
    {
      g_autoptr(GraftTargetFixPlan) plan = graft_target_fix_plan_new (model, options.deploy_target, dim_sizes, &error);
      if (plan == NULL)
        {
          graft_cli_print_error ("lint --fix: %s", error->message);
          return 1;
        }
      print_fix_plan (plan);
      if (out != NULL)
        return apply_fix_plan (model, plan, out, recipe, &options);
    }
  return graft_diagnostics_have_errors (diagnostics) ? 1 : 0;
}
