#include "edit/address.h"
#include "edit/edit.h"
#include "ir/graph-surgery.h"

#include <string.h>

static const char *
group_path (GraftNode *node)
{
  return node->group && node->group->path ? node->group->path : "";
}

/* Position of node among the nodes of its op (in its group when in_group),
 * and how many there are. */
static guint
op_position (GraftNode *node, gboolean in_group, guint *count)
{
  GraftGraph *graph = node->graph;
  guint position = 0, n = 0;

  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *other = g_ptr_array_index (graph->nodes, i);
      if (other->op != node->op || (in_group && strcmp (group_path (other), group_path (node)) != 0))
        continue;
      if (other == node)
        position = n;
      n++;
    }
  if (count)
    *count = n;
  return position;
}

GVariant *
graft_node_address_new (GraftNode *node)
{
  GVariantDict dict;
  guint count;
  guint op_index = op_position (node, FALSE, &count);

  g_variant_dict_init (&dict, NULL);
  g_variant_dict_insert (&dict, "name", "s", node->name);
  g_variant_dict_insert (&dict, "op", "s", node->op);
  g_variant_dict_insert (&dict, "group", "s", group_path (node));
  g_variant_dict_insert (&dict, "index", "x", (gint64) op_position (node, TRUE, NULL));
  g_variant_dict_insert (&dict, "op_index", "x", (gint64) op_index);
  g_variant_dict_insert (&dict, "op_count", "x", (gint64) count);
  return g_variant_dict_end (&dict);
}

static const char *
lookup_string (GVariant *address, const char *key)
{
  const char *text = NULL;

  if (!g_variant_lookup (address, key, "&s", &text))
    return NULL;
  return text;
}

static gint64
lookup_int (GVariant *address, const char *key)
{
  gint64 value = -1;

  if (!g_variant_lookup (address, key, "x", &value))
    return -1;
  return value;
}

char *
graft_address_describe (GVariant *address)
{
  const char *name = lookup_string (address, "name");
  const char *op = lookup_string (address, "op");
  const char *group = lookup_string (address, "group");
  GVariant *producer = g_variant_lookup_value (address, "producer", G_VARIANT_TYPE_VARDICT);
  char *text;

  if (op != NULL)
    text = g_strdup_printf ("node '%s' (%s, group '%s', #%" G_GINT64_FORMAT ")", name ? name : "", op,
                            group ? group : "", lookup_int (address, "index"));
  else if (producer != NULL)
    {
      g_autofree char *node = graft_address_describe (producer);
      text = g_strdup_printf ("value '%s' (output %" G_GINT64_FORMAT " of %s)", name ? name : "",
                              lookup_int (address, "output"), node);
    }
  else
    text = g_strdup_printf ("value '%s'", name ? name : "");
  g_clear_pointer (&producer, g_variant_unref);
  return text;
}

static GraftNode *
nth_of_op (GraftGraph *graph, const char *op, const char *group, gint64 index)
{
  gint64 n = 0;

  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      if (strcmp (node->op, op) != 0 || (group != NULL && strcmp (group_path (node), group) != 0))
        continue;
      if (n++ == index)
        return node;
    }
  return NULL;
}

GraftNode *
graft_node_address_resolve (GraftGraph *graph, GVariant *address, GError **error)
{
  const char *name = lookup_string (address, "name");
  const char *op = lookup_string (address, "op");
  const char *group = lookup_string (address, "group");
  gint64 index = lookup_int (address, "index");
  gint64 op_index = lookup_int (address, "op_index");
  gint64 op_count = lookup_int (address, "op_count");
  g_autofree char *described = NULL;
  GraftNode *node;

  if (name != NULL && *name != '\0' && (node = graft_graph_find_node (graph, name)) != NULL
      && (op == NULL || strcmp (node->op, op) == 0))
    return node;
  if (op != NULL && group != NULL && index >= 0 && (node = nth_of_op (graph, op, group, index)) != NULL)
    return node;
  if (op != NULL && op_index >= 0)
    {
      guint count = 0;
      node = nth_of_op (graph, op, NULL, op_index);
      if (node != NULL)
        op_position (node, FALSE, &count);
      if (node != NULL && count == op_count)
        return node;
    }
  described = graft_address_describe (address);
  g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_NOT_FOUND,
               "no node fits %s: no node has that name%s, and no group '%s' has that op at that position%s",
               described, op ? " and op" : "", group ? group : "",
               op ? " (nor does the graph have as many nodes of that op as when it was recorded)" : "");
  return NULL;
}

static guint
data_input_position (GraftValue *value)
{
  GraftGraph *graph = value->graph;
  guint n = 0;

  for (guint i = 0; i < graph->inputs->len; i++)
    {
      GraftValue *input = g_ptr_array_index (graph->inputs, i);
      if (input->initializer != NULL)
        continue;
      if (input == value)
        return n;
      n++;
    }
  return G_MAXUINT;
}

GVariant *
graft_value_address_new (GraftValue *value)
{
  GVariantDict dict;

  g_variant_dict_init (&dict, NULL);
  g_variant_dict_insert (&dict, "name", "s", value->name);
  if (value->producer != NULL && value->producer->graph == value->graph)
    {
      g_variant_dict_insert_value (&dict, "producer", graft_node_address_new (value->producer));
      g_variant_dict_insert (&dict, "output", "x", (gint64) value->producer_index);
    }
  else if (value->is_graph_input && value->initializer == NULL)
    g_variant_dict_insert (&dict, "input", "x", (gint64) data_input_position (value));
  else
    for (guint i = 0; i < value->consumers->len; i++)
      {
        GraftNode *consumer = g_ptr_array_index (value->consumers, i);
        if (consumer->graph != value->graph)
          continue;
        for (guint slot = 0; slot < consumer->inputs->len; slot++)
          if (g_ptr_array_index (consumer->inputs, slot) == value)
            {
              g_variant_dict_insert_value (&dict, "consumer", graft_node_address_new (consumer));
              g_variant_dict_insert (&dict, "slot", "x", (gint64) slot);
              return g_variant_dict_end (&dict);
            }
      }
  return g_variant_dict_end (&dict);
}

static GraftValue *
nth_data_input (GraftGraph *graph, gint64 position)
{
  gint64 n = 0;

  for (guint i = 0; i < graph->inputs->len; i++)
    {
      GraftValue *input = g_ptr_array_index (graph->inputs, i);
      if (input->initializer == NULL && n++ == position)
        return input;
    }
  return NULL;
}

GraftValue *
graft_value_address_resolve (GraftGraph *graph, GVariant *address, GError **error)
{
  const char *name = lookup_string (address, "name");
  g_autoptr(GVariant) producer = g_variant_lookup_value (address, "producer", G_VARIANT_TYPE_VARDICT);
  g_autoptr(GVariant) consumer = g_variant_lookup_value (address, "consumer", G_VARIANT_TYPE_VARDICT);
  GraftValue *value;
  GraftNode *node;

  if (name != NULL && (value = graft_graph_lookup_value (graph, name)) != NULL)
    return value;
  if (producer != NULL)
    {
      gint64 output = lookup_int (address, "output");
      if ((node = graft_node_address_resolve (graph, producer, error)) == NULL)
        return NULL;
      if (output >= 0 && output < node->outputs->len && g_ptr_array_index (node->outputs, output) != NULL)
        return g_ptr_array_index (node->outputs, output);
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_NOT_FOUND,
                   "no value '%s': its producer '%s' has no output %" G_GINT64_FORMAT, name ? name : "",
                   node->name, output);
      return NULL;
    }
  if (consumer != NULL)
    {
      gint64 slot = lookup_int (address, "slot");
      if ((node = graft_node_address_resolve (graph, consumer, error)) == NULL)
        return NULL;
      if (slot >= 0 && slot < node->inputs->len && g_ptr_array_index (node->inputs, slot) != NULL)
        return g_ptr_array_index (node->inputs, slot);
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_NOT_FOUND,
                   "no value '%s': node '%s' has no input %" G_GINT64_FORMAT, name ? name : "", node->name, slot);
      return NULL;
    }
  if (lookup_int (address, "input") >= 0 && (value = nth_data_input (graph, lookup_int (address, "input"))) != NULL)
    return value;
  g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_NOT_FOUND, "the graph has no value '%s'", name ? name : "");
  return NULL;
}
