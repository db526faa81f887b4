/* JSON members for the verbs' --json output (json-glib builders). */
#include <math.h>
#include <stdio.h>
#include "cli.h"

void
graft_cli_json_string (JsonBuilder *b, const char *member, const char *value)
{
  json_builder_set_member_name (b, member);
  if (value)
    json_builder_add_string_value (b, value);
  else
    json_builder_add_null_value (b);
}

void
graft_cli_json_int (JsonBuilder *b, const char *member, gint64 value)
{
  json_builder_set_member_name (b, member);
  json_builder_add_int_value (b, value);
}

void
graft_cli_json_bool (JsonBuilder *b, const char *member, gboolean value)
{
  json_builder_set_member_name (b, member);
  json_builder_add_boolean_value (b, value);
}

void
graft_cli_json_double (JsonBuilder *b, const char *member, double v)
{
  json_builder_set_member_name (b, member);
  if (isfinite (v))
    json_builder_add_double_value (b, v);
  else
    json_builder_add_null_value (b);
}

void
graft_cli_json_print (JsonBuilder *b)
{
  g_autoptr(JsonGenerator) gen = json_generator_new ();
  g_autoptr(JsonNode) root = json_builder_get_root (b);
  json_generator_set_root (gen, root);
  json_generator_set_pretty (gen, TRUE);
  g_autofree char *text = json_generator_to_data (gen, NULL);
  printf ("%s\n", text);
}
