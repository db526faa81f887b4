/* graft-cli run --validate: the values holding NaN or Inf, the nodes that
 * introduced them and their inputs' ranges, as text or JSON. */
#include <math.h>
#include <stdio.h>
#include <json-glib/json-glib.h>
#include "cli.h"
#include "debug/value-check.h"

static const char *
node_label (GraftNode *node)
{
  return node->name && *node->name ? node->name : "(unnamed)";
}

static void
print_source (GraftValueCheck *check, const GraftValueRange *range, gboolean first)
{
  g_autofree char *desc = graft_value_range_describe (range);
  GraftNode *node = range->value->producer;

  if (node == NULL)
    {
      printf ("%s graph input '%s' holds NaN/Inf: %s\n", first ? "NaN/Inf first comes from" : "  also from",
              range->value->name, desc);
      return;
    }
  printf ("%s %s '%s' (output '%s': %s)\n", first ? "NaN/Inf first produced by" : "  also introduced by", node->op,
          node_label (node), range->value->name, desc);
  g_autoptr(GPtrArray) inputs = graft_value_check_get_input_ranges (check, node);
  for (guint i = 0; i < inputs->len; i++)
    {
      GraftValueRange *in = inputs->pdata[i];
      GraftValue *value = node->inputs->pdata[i];
      if (value == NULL)
        continue;
      g_autofree char *in_desc = in ? graft_value_range_describe (in) : g_strdup ("not computed");
      printf ("    input %u '%s': %s\n", i, value->name, in_desc);
    }
}

static void
print_text (GraftValueCheck *check)
{
  if (check->nonfinite->len == 0)
    {
      printf ("validate: no NaN or Inf in %u values%s\n", check->values->len,
              check->run_error ? " (up to where the run failed)" : "");
      return;
    }
  printf ("validate: %u of %u values hold NaN or Inf\n", check->nonfinite->len, check->values->len);
  for (guint i = 0; i < check->sources->len; i++)
    print_source (check, &g_array_index (check->values, GraftValueRange, g_array_index (check->sources, guint, i)),
                  i == 0);
  printf ("values holding NaN or Inf, in run order:\n");
  for (guint i = 0; i < check->nonfinite->len; i++)
    {
      const GraftValueRange *range = &g_array_index (check->values, GraftValueRange, g_array_index (check->nonfinite, guint, i));
      g_autofree char *desc = graft_value_range_describe (range);
      GraftNode *node = range->value->producer;
      printf ("  %s: %s", range->value->name, desc);
      if (node != NULL)
        printf ("  (%s '%s')", node->op, node_label (node));
      printf ("\n");
    }
}

static void
add_range_json (JsonBuilder *b, const GraftValueRange *range, GraftValue *value)
{
  json_builder_begin_object (b);
  graft_cli_json_string (b, "value", value->name);
  graft_cli_json_string (b, "type", range ? range->shape : NULL);
  if (range != NULL && range->numeric)
    {
      gboolean any_finite = range->nan_count + range->inf_count < range->count;
      graft_cli_json_double (b, "min", any_finite ? range->min : NAN);
      graft_cli_json_double (b, "max", any_finite ? range->max : NAN);
      graft_cli_json_int (b, "nan", range->nan_count);
      graft_cli_json_int (b, "inf", range->inf_count);
    }
  GraftNode *node = value->producer;
  graft_cli_json_string (b, "node", node ? node_label (node) : NULL);
  graft_cli_json_string (b, "op", node ? node->op : NULL);
  json_builder_end_object (b);
}

static void
add_source_json (JsonBuilder *b, GraftValueCheck *check, const GraftValueRange *range)
{
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "output");
  add_range_json (b, range, range->value);
  GraftNode *node = range->value->producer;
  graft_cli_json_string (b, "node", node ? node_label (node) : NULL);
  graft_cli_json_string (b, "op", node ? node->op : NULL);
  json_builder_set_member_name (b, "inputs");
  json_builder_begin_array (b);
  if (node != NULL)
    {
      g_autoptr(GPtrArray) inputs = graft_value_check_get_input_ranges (check, node);
      for (guint i = 0; i < inputs->len; i++)
        if (node->inputs->pdata[i] != NULL)
          add_range_json (b, inputs->pdata[i], node->inputs->pdata[i]);
    }
  json_builder_end_array (b);
  json_builder_end_object (b);
}

static void
print_json (GraftValueCheck *check, GPtrArray *output_values, GPtrArray *outputs)
{
  g_autoptr(JsonBuilder) b = json_builder_new ();

  json_builder_begin_object (b);
  json_builder_set_member_name (b, "outputs");
  json_builder_begin_array (b);
  for (guint i = 0; outputs && i < outputs->len; i++)
    {
      GraftValueRange range;
      graft_value_range_compute (output_values->pdata[i], outputs->pdata[i], &range);
      add_range_json (b, &range, output_values->pdata[i]);
      graft_value_range_clear (&range);
    }
  json_builder_end_array (b);
  graft_cli_json_string (b, "run_error", check->run_error);
  graft_cli_json_int (b, "values_checked", check->values->len);
  json_builder_set_member_name (b, "sources");
  json_builder_begin_array (b);
  for (guint i = 0; i < check->sources->len; i++)
    add_source_json (b, check, &g_array_index (check->values, GraftValueRange, g_array_index (check->sources, guint, i)));
  json_builder_end_array (b);
  json_builder_set_member_name (b, "nonfinite");
  json_builder_begin_array (b);
  for (guint i = 0; i < check->nonfinite->len; i++)
    {
      const GraftValueRange *range = &g_array_index (check->values, GraftValueRange, g_array_index (check->nonfinite, guint, i));
      add_range_json (b, range, range->value);
    }
  json_builder_end_array (b);
  json_builder_end_object (b);

  graft_cli_json_print (b);
}

void
graft_cli_print_value_check (GraftValueCheck *check, GPtrArray *output_values, GPtrArray *outputs, gboolean json)
{
  if (json)
    print_json (check, output_values, outputs);
  else
    print_text (check);
}
