/* graft-cli lint FILE [--json] [--onnx-export]: the diagnostics of
 * model/analysis. Exit status 1 when any has severity error. */
#include <stdio.h>
#include <string.h>
#include <json-glib/json-glib.h>

#include "cli.h"
#include "loader.h"
#include "analysis/diagnostics.h"
#include "analysis/lint-rules.h"
#include "lower/lower.h"

static void
print_json (GPtrArray *diagnostics)
{
  g_autoptr(JsonBuilder) builder = json_builder_new ();
  g_autoptr(JsonGenerator) generator = json_generator_new ();
  g_autoptr(JsonNode) root = NULL;
  g_autofree char *text = NULL;

  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "diagnostics");
  json_builder_begin_array (builder);
  for (guint i = 0; i < diagnostics->len; i++)
    {
      GraftDiagnostic *d = g_ptr_array_index (diagnostics, i);

      json_builder_begin_object (builder);
      json_builder_set_member_name (builder, "rule");
      json_builder_add_string_value (builder, d->rule);
      json_builder_set_member_name (builder, "severity");
      json_builder_add_string_value (builder, graft_severity_to_string (d->severity));
      json_builder_set_member_name (builder, "node");
      if (d->node_name)
        json_builder_add_string_value (builder, d->node_name);
      else
        json_builder_add_null_value (builder);
      json_builder_set_member_name (builder, "value");
      if (d->value)
        json_builder_add_string_value (builder, d->value->name);
      else
        json_builder_add_null_value (builder);
      json_builder_set_member_name (builder, "message");
      json_builder_add_string_value (builder, d->message);
      json_builder_end_object (builder);
    }
  json_builder_end_array (builder);
  json_builder_end_object (builder);
  root = json_builder_get_root (builder);
  json_generator_set_root (generator, root);
  json_generator_set_pretty (generator, TRUE);
  text = json_generator_to_data (generator, NULL);
  printf ("%s\n", text);
}

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

int
graft_cli_lint (int argc, char **argv)
{
  gboolean json = FALSE;
  GraftLintOptions options = { FALSE };
  const char *path = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = NULL;
  g_autoptr(GPtrArray) diagnostics = NULL;

  for (int i = 1; i < argc; i++)
    {
      if (strcmp (argv[i], "--json") == 0)
        json = TRUE;
      else if (strcmp (argv[i], "--onnx-export") == 0)
        options.onnx_export_target = TRUE;
      else if (strcmp (argv[i], "--target") == 0 || g_str_has_prefix (argv[i], "--target="))
        {
          const char *target = argv[i][8] == '=' ? argv[i] + 9 : i + 1 < argc ? argv[++i] : "";
          guint64 opset = GRAFT_LOWER_DEFAULT_OPSET;
          if (!g_str_has_prefix (target, "onnx") || (target[4] != '\0' && target[4] != ':') ||
              (target[4] == ':' && !g_ascii_string_to_unsigned (target + 5, 10, GRAFT_LOWER_MIN_OPSET,
                                                                  graft_lower_max_opset (), &opset, NULL)))
            {
              graft_cli_print_error ("lint: --target takes onnx or onnx:OPSET (opset %d to %" G_GINT64_FORMAT "), not '%s'",
                                     GRAFT_LOWER_MIN_OPSET, graft_lower_max_opset (), target);
              return 2;
            }
          options.onnx_target_opset = (gint64) opset;
        }
      else if (strcmp (argv[i], "--list-rules") == 0)
        {
          print_rules ();
          return 0;
        }
      else if (strcmp (argv[i], "--help") == 0)
        {
          printf ("Usage: graft-cli lint FILE [--json] [--onnx-export] [--target onnx[:OPSET]]\n"
                  "       graft-cli lint --list-rules\n"
                  "Lists unsupported ops, static input dims, baked shape constants and trace hazards.\n"
                  "--onnx-export: the TorchScript model is meant for torch.onnx.export.\n"
                  "--target onnx[:OPSET]: the model is to be converted with graft-cli convert; ops it cannot\n"
                  "  write at that opset (default 17) are unsupported-op errors.\n"
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

  model = graft_model_load (path, NULL, NULL, NULL, &error);
  if (model == NULL)
    {
      graft_cli_print_error ("%s", error->message);
      return 1;
    }
  diagnostics = graft_lint_model (model, &options);
  if (json)
    print_json (diagnostics);
  else
    print_text (path, diagnostics);
  return graft_diagnostics_have_errors (diagnostics) ? 1 : 0;
}
