/* Orders and classes of a main graph's nodes (graph-order.h). */
#include "ir/graph-order.h"

GPtrArray *
graft_graph_topological_order (GraftGraph *graph)
{
  g_autoptr(GHashTable) pending = g_hash_table_new (NULL, NULL);
  g_autoptr(GQueue) ready = g_queue_new ();
  GPtrArray *order = g_ptr_array_new ();

  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = graph->nodes->pdata[i];
      guint waiting = 0;
      for (guint k = 0; k < node->inputs->len; k++)
        {
          GraftValue *in = node->inputs->pdata[k];
          if (in && in->producer && in->producer->graph == graph)
            waiting++;
        }
      g_hash_table_insert (pending, node, GUINT_TO_POINTER (waiting));
      if (waiting == 0)
        g_queue_push_tail (ready, node);
    }
  while (!g_queue_is_empty (ready))
    {
      GraftNode *node = g_queue_pop_head (ready);
      g_ptr_array_add (order, node);
      for (guint k = 0; k < node->outputs->len; k++)
        {
          GraftValue *out = node->outputs->pdata[k];
          for (guint c = 0; out && c < out->consumers->len; c++)
            {
              GraftNode *consumer = out->consumers->pdata[c];
              gpointer left;
              if (!g_hash_table_lookup_extended (pending, consumer, NULL, &left))
                continue;  /* a node of a subgraph */
              guint waiting = GPOINTER_TO_UINT (left) - 1;
              g_hash_table_insert (pending, consumer, GUINT_TO_POINTER (waiting));
              if (waiting == 0)
                g_queue_push_tail (ready, consumer);
            }
        }
    }
  return order;
}

static gboolean
has_subgraphs (GraftNode *node)
{
  g_autoptr(GPtrArray) subgraphs = graft_node_get_subgraphs (node);
  return subgraphs->len > 0;
}

GHashTable *
graft_graph_find_constant_nodes (GPtrArray *order)
{
  GHashTable *constant = g_hash_table_new (NULL, NULL);

  for (guint i = 0; i < order->len; i++)
    {
      GraftNode *node = order->pdata[i];
      gboolean computes_constant = !has_subgraphs (node);
      for (guint k = 0; computes_constant && k < node->inputs->len; k++)
        {
          GraftValue *in = node->inputs->pdata[k];
          if (in == NULL || in->initializer != NULL)
            continue;
          computes_constant = in->producer != NULL && g_hash_table_contains (constant, in->producer);
        }
      if (computes_constant)
        g_hash_table_add (constant, node);
    }
  return constant;
}
