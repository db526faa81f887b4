#include "ir/graph-surgery.h"

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

static void
unset_inputs (GraftNode *node, gpointer data)
{
  for (guint i = 0; i < node->inputs->len; i++)
    graft_node_set_input (node, i, NULL);
}

/* Detaches node from the values it reads and writes; its subgraphs go
 * with it, so their reads of outer values end too. */
static void
unlink_node (GraftNode *node)
{
  g_autoptr(GPtrArray) subgraphs = graft_node_get_subgraphs (node);

  unset_inputs (node, NULL);
  for (guint i = 0; i < subgraphs->len; i++)
    graft_graph_foreach_node_recursive (g_ptr_array_index (subgraphs, i), unset_inputs, NULL);
  for (guint i = 0; i < node->outputs->len; i++)
    {
      GraftValue *out = g_ptr_array_index (node->outputs, i);
      if (out != NULL && out->producer == node)
        out->producer = NULL;
    }
}

void
graft_graph_remove_node (GraftGraph *graph, GraftNode *node)
{
  guint index = node->index;

  unlink_node (node);
  if (node->group != NULL)
    g_ptr_array_remove (node->group->nodes, node);
  g_ptr_array_remove_index (graph->nodes, index);   /* frees the node */
  for (guint i = index; i < graph->nodes->len; i++)
    ((GraftNode *) g_ptr_array_index (graph->nodes, i))->index = i;
  graft_graph_update_group_counts (graph);
}

void
graft_graph_move_node_before (GraftGraph *graph, GraftNode *node, GraftNode *before)
{
  g_ptr_array_steal_index (graph->nodes, node->index);
  g_ptr_array_insert (graph->nodes, before->index, node);
  for (guint i = 0; i < graph->nodes->len; i++)
    ((GraftNode *) g_ptr_array_index (graph->nodes, i))->index = i;
}

void
graft_graph_remove_nodes_keeping_values (GraftGraph *graph, GHashTable *doomed, GPtrArray *kept)
{
  g_autoptr(GPtrArray) placeholders = g_ptr_array_new ();

  /* The doomed producers hold placeholders in those slots until they go. */
  for (guint i = 0; i < kept->len; i++)
    {
      GraftValue *value = g_ptr_array_index (kept, i);
      GraftValue *placeholder;

      if (value == NULL || value->producer == NULL)
        continue;
      placeholder = graft_graph_new_anonymous_value (graph, value->name);
      value->producer->outputs->pdata[value->producer_index] = placeholder;
      placeholder->producer = value->producer;
      placeholder->producer_index = value->producer_index;
      value->producer = NULL;
      g_ptr_array_add (placeholders, placeholder);
    }
  graft_graph_remove_nodes (graph, doomed);
  for (guint i = 0; i < placeholders->len; i++)
    graft_graph_remove_value (graph, g_ptr_array_index (placeholders, i));
}

void
graft_graph_move_node_to_group (GraftGraph *graph, GraftNode *node, GraftGroup *group)
{
  if (group == NULL || group == graph->root_group)
    return;
  g_ptr_array_remove (graph->root_group->nodes, node);
  node->group = NULL;
  graft_group_add_node (group, node);
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

/* Keeps the elements of array that are not in doomed, in order; the
 * others go through the array's free function. */
static void
compact (GPtrArray *array, GHashTable *doomed)
{
  guint kept = 0;
  g_autoptr(GPtrArray) gone = g_ptr_array_new ();

  for (guint i = 0; i < array->len; i++)
    {
      gpointer item = g_ptr_array_index (array, i);
      if (g_hash_table_contains (doomed, item))
        g_ptr_array_add (gone, item);
      else
        array->pdata[kept++] = item;
    }
  for (guint i = 0; i < gone->len; i++)
    array->pdata[kept + i] = g_ptr_array_index (gone, i);
  g_ptr_array_set_size (array, kept);
}

void
graft_graph_remove_nodes (GraftGraph *graph, GHashTable *doomed)
{
  g_autoptr(GHashTable) groups = g_hash_table_new (NULL, NULL);
  GHashTableIter iter;
  gpointer item;

  if (g_hash_table_size (doomed) == 0)
    return;
  g_hash_table_iter_init (&iter, doomed);
  while (g_hash_table_iter_next (&iter, &item, NULL))
    {
      GraftNode *node = item;

      unlink_node (node);
      if (node->group != NULL)
        g_hash_table_add (groups, node->group);
    }
  g_hash_table_iter_init (&iter, groups);
  while (g_hash_table_iter_next (&iter, &item, NULL))
    compact (((GraftGroup *) item)->nodes, doomed);
  compact (graph->nodes, doomed);   /* frees the nodes */
  for (guint i = 0; i < graph->nodes->len; i++)
    ((GraftNode *) g_ptr_array_index (graph->nodes, i))->index = i;
  graft_graph_update_group_counts (graph);
}

/* Uses of value that are not by a node in dead (nor in its subgraphs). */
static gboolean
used_outside (GraftValue *value, GHashTable *dead)
{
  if (value->is_graph_output)
    return TRUE;
  for (guint i = 0; i < value->consumers->len; i++)
    {
      GraftNode *consumer = g_ptr_array_index (value->consumers, i);
      while (consumer->graph != value->graph && consumer->graph->parent_node != NULL)
        consumer = consumer->graph->parent_node;
      if (!g_hash_table_contains (dead, consumer))
        return TRUE;
    }
  return FALSE;
}

static gboolean
is_dead (GraftNode *node, GHashTable *dead)
{
  for (guint j = 0; j < node->outputs->len; j++)
    {
      GraftValue *out = g_ptr_array_index (node->outputs, j);
      if (out != NULL && used_outside (out, dead))
        return FALSE;
    }
  return TRUE;
}

static void
collect_reads (GraftNode *node, gpointer data)
{
  GPtrArray *reads = data;

  for (guint i = 0; i < node->inputs->len; i++)
    if (g_ptr_array_index (node->inputs, i) != NULL)
      g_ptr_array_add (reads, g_ptr_array_index (node->inputs, i));
}

guint
graft_graph_prune (GraftGraph *graph)
{
  g_autoptr(GHashTable) dead = g_hash_table_new (NULL, NULL);
  g_autoptr(GHashTable) dead_values = g_hash_table_new (NULL, NULL);
  g_autoptr(GPtrArray) queue = g_ptr_array_new ();
  guint removed;

  /* A worklist from the nodes nothing reads back to their producers, so
   * that pruning stays linear on large graphs. */
  for (guint i = graph->nodes->len; i > 0; i--)
    if (is_dead (g_ptr_array_index (graph->nodes, i - 1), dead))
      {
        g_hash_table_add (dead, g_ptr_array_index (graph->nodes, i - 1));
        g_ptr_array_add (queue, g_ptr_array_index (graph->nodes, i - 1));
      }
  while (queue->len > 0)
    {
      GraftNode *node = g_ptr_array_steal_index_fast (queue, queue->len - 1);
      g_autoptr(GPtrArray) reads = g_ptr_array_new ();
      g_autoptr(GPtrArray) subgraphs = graft_node_get_subgraphs (node);

      collect_reads (node, reads);
      for (guint i = 0; i < subgraphs->len; i++)
        graft_graph_foreach_node_recursive (g_ptr_array_index (subgraphs, i), collect_reads, reads);
      for (guint i = 0; i < reads->len; i++)
        {
          GraftValue *in = g_ptr_array_index (reads, i);
          GraftNode *producer = in->producer;
          if (producer != NULL && producer->graph == graph && !g_hash_table_contains (dead, producer)
              && is_dead (producer, dead))
            {
              g_hash_table_add (dead, producer);
              g_ptr_array_add (queue, producer);
            }
        }
    }
  removed = g_hash_table_size (dead);
  graft_graph_remove_nodes (graph, dead);
  for (guint i = 0; i < graph->values->len; i++)
    {
      GraftValue *value = g_ptr_array_index (graph->values, i);
      if (!is_used (value) && !value->is_graph_input && value->producer == NULL)
        {
          g_hash_table_add (dead_values, value);
          g_hash_table_remove (graph->value_by_name, value->name);
        }
    }
  if (g_hash_table_size (dead_values) > 0)
    {
      compact (graph->initializers, dead_values);
      compact (graph->outputs, dead_values);
      compact (graph->values, dead_values);   /* frees the values */
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

  if (!out->is_graph_output)
    {
      graft_graph_replace_uses (graph, out, in);
      graft_graph_remove_node (graph, node);
      return TRUE;
    }
  return graft_graph_bypass_into_output (graph, node, input);
}

gboolean
graft_graph_bypass_into_output (GraftGraph *graph, GraftNode *node, guint input)
{
  GraftValue *in = g_ptr_array_index (node->inputs, input);
  GraftValue *out = g_ptr_array_index (node->outputs, 0);
  GraftNode *producer = in->producer;

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
