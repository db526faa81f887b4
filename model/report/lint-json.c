/* Diagnostics as JSON, for graft-cli lint --json and the Python module. */
#include <json-glib/json-glib.h>

#include "report/lint-json.h"
#include "analysis/diagnostics.h"

char *
graft_diagnostics_to_json (GPtrArray *diagnostics)
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
  return json_generator_to_data (generator, NULL);
}
