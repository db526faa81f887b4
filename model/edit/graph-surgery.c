#include "edit/graph-surgery.h"

#include <string.h>

void
graft_node_set_input (GraftNode *node, guint i, GraftValue *value)
{
  GraftValue *old = g_ptr_array_index (node->inputs, i);

  if (old == value)
    return;
  if (old != NULL)
    g_ptr_array_remove (old->consumers, node);   /* one use less */
  node->inputs->pdata[i] = value;
  if (value != NULL)
    g_ptr_array_add (value->consumers, node);
}

void
graft_graph_replace_uses (GraftGraph *graph, GraftValue *old, GraftValue *replacement)
{
  /* old->consumers lists every reader, subgraph nodes included, once per
   * use: walking it instead of the whole graph keeps bulk rewrites
   * (merging thousands of duplicate weights) linear. */
  g_autoptr(GPtrArray) readers = g_ptr_array_copy (old->consumers, NULL, NULL);

  for (guint r = 0; r < readers->len; r++)
    {
      GraftNode *node = g_ptr_array_index (readers, r);
      for (guint i = 0; i < node->inputs->len; i++)
        if (g_ptr_array_index (node->inputs, i) == old)
          graft_node_set_input (node, i, replacement);
    }
  for (guint i = 0; i < graph->outputs->len; i++)
    if (g_ptr_array_index (graph->outputs, i) == old)
      {
        graph->outputs->pdata[i] = replacement;
        replacement->is_graph_output = TRUE;
        old->is_graph_output = FALSE;
      }
}

void
graft_graph_remove_node (GraftGraph *graph, GraftNode *node)
{
  guint index = node->index;

  for (guint i = 0; i < node->inputs->len; i++)
    graft_node_set_input (node, i, NULL);
  for (guint i = 0; i < node->outputs->len; i++)
    {
      GraftValue *out = g_ptr_array_index (node->outputs, i);
      if (out != NULL && out->producer == node)
        out->producer = NULL;
    }
  if (node->group != NULL)
    g_ptr_array_remove (node->group->nodes, node);
  g_ptr_array_remove_index (graph->nodes, index);   /* frees the node */
  for (guint i = index; i < graph->nodes->len; i++)
    ((GraftNode *) g_ptr_array_index (graph->nodes, i))->index = i;
  graft_graph_update_group_counts (graph);
}

void
graft_graph_remove_value (GraftGraph *graph, GraftValue *value)
{
  g_ptr_array_remove (graph->inputs, value);
  g_ptr_array_remove (graph->outputs, value);
  g_ptr_array_remove (graph->initializers, value);
  g_hash_table_remove (graph->value_by_name, value->name);
  g_ptr_array_remove (graph->values, value);   /* frees the value */
}

static gboolean
is_used (GraftValue *value)
{
  return value->consumers->len > 0 || value->is_graph_output;
}

guint
graft_graph_prune (GraftGraph *graph)
{
  guint removed = 0;
  gboolean changed = TRUE;

  while (changed)
    {
      changed = FALSE;
      for (guint i = graph->nodes->len; i > 0; i--)
        {
          GraftNode *node = g_ptr_array_index (graph->nodes, i - 1);
          gboolean live = FALSE;

          for (guint j = 0; j < node->outputs->len && !live; j++)
            {
              GraftValue *out = g_ptr_array_index (node->outputs, j);
              live = out != NULL && is_used (out);
            }
          if (!live)
            {
              graft_graph_remove_node (graph, node);
              removed++;
              changed = TRUE;
            }
        }
    }
  for (guint i = graph->values->len; i > 0; i--)
    {
      GraftValue *value = g_ptr_array_index (graph->values, i - 1);
      if (!is_used (value) && !value->is_graph_input && value->producer == NULL)
        graft_graph_remove_value (graph, value);
    }
  return removed;
}

GraftValue *
graft_graph_add_int64_constant (GraftGraph *graph, const char *hint, const gint64 *values, guint n, gboolean scalar)
{
  gint64 dims[1] = { n };
  GraftValue *value = graft_graph_new_anonymous_value (graph, hint);
  GraftTensor *tensor = graft_tensor_new (value->name, GRAFT_DTYPE_INT64, scalar ? 0 : 1, dims);
  guint8 *bytes = g_malloc (8 * MAX (n, 1));
  g_autoptr(GBytes) data = NULL;

  for (guint i = 0; i < n; i++)
    {
      guint64 le = GUINT64_TO_LE ((guint64) values[i]);
      memcpy (bytes + 8 * i, &le, 8);
    }
  data = g_bytes_new_take (bytes, 8 * n);
  graft_tensor_set_data (tensor, data, NULL);
  graft_graph_add_initializer (graph, value, tensor);
  return value;
}

GraftNode *
graft_graph_find_node (GraftGraph *graph, const char *name)
{
  GraftNode *found = NULL;

  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      if (strcmp (node->name, name) == 0)
        {
          if (found != NULL)
            return NULL;
          found = node;
        }
    }
  return found;
}

gboolean
graft_graph_bypass (GraftGraph *graph, GraftNode *node, guint input)
{
  GraftValue *in = g_ptr_array_index (node->inputs, input);
  GraftValue *out = g_ptr_array_index (node->outputs, 0);
  GraftNode *producer = in->producer;

  if (!out->is_graph_output)
    {
      graft_graph_replace_uses (graph, out, in);
      graft_graph_remove_node (graph, node);
      return TRUE;
    }
  if (producer == NULL || in->graph != graph || in->is_graph_output || in->is_graph_input)
    return FALSE;
  graft_graph_replace_uses (graph, in, out);
  graft_graph_remove_node (graph, node);
  producer->outputs->pdata[in->producer_index] = out;
  out->producer = producer;
  out->producer_index = in->producer_index;
  in->producer = NULL;
  graft_graph_remove_value (graph, in);
  return TRUE;
}
