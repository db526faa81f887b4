/* Diagnostics as JSON, for graft-cli lint --json and the Python module. */
#include <json-glib/json-glib.h>

#include "report/lint-json.h"
#include "lint/diagnostics.h"
#include "lint/deploy-target.h"
#include "lint/target-check.h"

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


char *
graft_diagnostics_to_json (GPtrArray *diagnostics, const GraftTargetReport *report)
{
  g_autoptr(JsonBuilder) builder = json_builder_new ();
  g_autoptr(JsonGenerator) generator = json_generator_new ();
  g_autoptr(JsonNode) root = NULL;

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
  return json_generator_to_data (generator, NULL);
}
