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
#include "analysis/deploy-target.h"
#include "analysis/target-check.h"

static void
add_string_array (JsonBuilder *builder, const char *member, GPtrArray *strings)
{
  json_builder_set_member_name (builder, member);
  json_builder_begin_array (builder);
  for (guint i = 0; i < strings->len; i++)
    json_builder_add_string_value (builder, g_ptr_array_index (strings, i));
  json_builder_end_array (builder);
}

static void
add_value_names (JsonBuilder *builder, const char *member, GPtrArray *values)
{
  g_autoptr(GPtrArray) names = g_ptr_array_new ();
  for (guint i = 0; i < values->len; i++)
    g_ptr_array_add (names, ((GraftValue *) g_ptr_array_index (values, i))->name);
  add_string_array (builder, member, names);
}

/* "target": the target and every counted node's verdict; "partitions":
 * the supported groups with their sizes and borders. */
static void
add_target_report (JsonBuilder *builder, const GraftTargetReport *report)
{
  const GraftDeployTarget *target = report->target;
  g_autoptr(GPtrArray) ops = graft_target_report_unsupported_ops (report);
  g_autofree char *summary = graft_target_report_summary (report);

  json_builder_set_member_name (builder, "target");
  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "name");
  json_builder_add_string_value (builder, target->name);
  json_builder_set_member_name (builder, "title");
  json_builder_add_string_value (builder, target->title);
  json_builder_set_member_name (builder, "version");
  json_builder_add_string_value (builder, target->version);
  json_builder_set_member_name (builder, "sources");
  json_builder_begin_array (builder);
  for (guint i = 0; target->sources[i] != NULL; i++)
    json_builder_add_string_value (builder, target->sources[i]);
  json_builder_end_array (builder);
  json_builder_set_member_name (builder, "summary");
  json_builder_add_string_value (builder, summary);
  add_string_array (builder, "unsupported_ops", ops);
  json_builder_set_member_name (builder, "nodes");
  json_builder_begin_array (builder);
  for (guint i = 0; i < report->nodes->len; i++)
    {
      const GraftNodeSupport *support = g_ptr_array_index (report->nodes, i);
      g_autofree char *name = graft_node_display_name (support->node);

      json_builder_begin_object (builder);
      json_builder_set_member_name (builder, "node");
      json_builder_add_string_value (builder, name);
      json_builder_set_member_name (builder, "op");
      json_builder_add_string_value (builder, support->node->op);
      json_builder_set_member_name (builder, "supported");
      json_builder_add_boolean_value (builder, support->reason == GRAFT_SUPPORT_OK);
      json_builder_set_member_name (builder, "reason");
      if (support->reason == GRAFT_SUPPORT_OK)
        json_builder_add_null_value (builder);
      else
        json_builder_add_string_value (builder, graft_support_reason_to_string (support->reason));
      json_builder_set_member_name (builder, "partition");
      json_builder_add_int_value (builder, support->partition);
      json_builder_end_object (builder);
    }
  json_builder_end_array (builder);
  json_builder_end_object (builder);

  json_builder_set_member_name (builder, "partitions");
  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "count");
  json_builder_add_int_value (builder, report->partitions->len);
  json_builder_set_member_name (builder, "supported_nodes");
  json_builder_add_int_value (builder, report->n_supported);
  json_builder_set_member_name (builder, "total_nodes");
  json_builder_add_int_value (builder, report->n_nodes);
  json_builder_set_member_name (builder, "sizes");
  json_builder_begin_array (builder);
  for (guint i = 0; i < report->partitions->len; i++)
    json_builder_add_int_value (builder, ((GraftPartition *) g_ptr_array_index (report->partitions, i))->nodes->len);
  json_builder_end_array (builder);
  json_builder_set_member_name (builder, "groups");
  json_builder_begin_array (builder);
  for (guint i = 0; i < report->partitions->len; i++)
    {
      GraftPartition *partition = g_ptr_array_index (report->partitions, i);

      json_builder_begin_object (builder);
      json_builder_set_member_name (builder, "size");
      json_builder_add_int_value (builder, partition->nodes->len);
      json_builder_set_member_name (builder, "nodes");
      json_builder_begin_array (builder);
      for (guint k = 0; k < partition->nodes->len; k++)
        {
          g_autofree char *name = graft_node_display_name (g_ptr_array_index (partition->nodes, k));
          json_builder_add_string_value (builder, name);
        }
      json_builder_end_array (builder);
      add_value_names (builder, "inputs", partition->inputs);
      add_value_names (builder, "outputs", partition->outputs);
      json_builder_end_object (builder);
    }
  json_builder_end_array (builder);
  json_builder_end_object (builder);
}

static void
print_json (GPtrArray *diagnostics, const GraftTargetReport *report)
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
      if (d->node != NULL)
        {
          json_builder_set_member_name (builder, "op");
          json_builder_add_string_value (builder, d->node->op);
        }
      if (d->reason != NULL)
        {
          json_builder_set_member_name (builder, "reason");
          json_builder_add_string_value (builder, d->reason);
        }
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
  if (report != NULL)
    add_target_report (builder, report);
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
      const char *where = d->node_name ? d->node_name : d->value ? d->value->name : "";

      counts[d->severity]++;
      printf ("%s: %s [%s] %s: %s\n", path, graft_severity_to_string (d->severity), d->rule, where, d->message);
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

int
graft_cli_lint (int argc, char **argv)
{
  gboolean json = FALSE;
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
  if (options.deploy_target != NULL)
    report = graft_target_check (model, options.deploy_target, NULL, NULL);
  if (json)
    print_json (diagnostics, report);
  else
    {
      print_text (path, diagnostics);
      if (report != NULL)
        print_target_report (report);
    }
  return graft_diagnostics_have_errors (diagnostics) ? 1 : 0;
}
