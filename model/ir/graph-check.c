#include "ir/graph-check.h"

#include <string.h>
#include "ir/attribute.h"
#include "ir/model-error.h"

typedef struct {
  GraftGraphProblemFunc report;
  gpointer user_data;
  guint count;
} Checker;

static void
problem (Checker *c, GraftNode *node, GraftValue *value, const char *format, ...) G_GNUC_PRINTF (4, 5);

static void
problem (Checker *c, GraftNode *node, GraftValue *value, const char *format, ...)
{
  va_list args;
  va_start (args, format);
  g_autofree char *message = g_strdup_vprintf (format, args);
  va_end (args);
  c->count++;
  c->report (node, value, message, c->user_data);
}

static const char *
node_label (GraftNode *node)
{
  return node->name && *node->name ? node->name : node->op;
}

static void
check_producers (Checker *c, GraftGraph *graph)
{
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = graph->nodes->pdata[i];
      for (guint j = 0; j < node->outputs->len; j++)
        {
          GraftValue *v = node->outputs->pdata[j];
          if (v == NULL)
            continue;
          /* The reader links a value to its last producer: any other node
           * that lists it as an output is a second producer. */
          if (v->producer != node)
            problem (c, node, v, "value '%s' is produced by node '%s' (%s) and by node '%s' (%s): a value must have "
                     "one producer", v->name, node_label (node), node->op,
                     v->producer ? node_label (v->producer) : "?", v->producer ? v->producer->op : "?");
          else if (v->is_graph_input || v->initializer)
            problem (c, node, v, "value '%s' is a graph %s and also the output of node '%s' (%s)", v->name,
                     v->initializer ? "initializer" : "input", node_label (node), node->op);
        }
    }
}

static gboolean
is_defined (GraftGraph *graph, GraftValue *v)
{
  if (v->graph != graph)
    return TRUE;   /* captured from an enclosing graph, checked there */
  return v->producer != NULL || v->is_graph_input || v->initializer != NULL ||
         g_ptr_array_find (graph->inputs, v, NULL);
}

static void
check_inputs_defined (Checker *c, GraftGraph *graph)
{
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = graph->nodes->pdata[i];
      for (guint j = 0; j < node->inputs->len; j++)
        {
          GraftValue *v = node->inputs->pdata[j];
          if (v && !is_defined (graph, v))
            problem (c, node, v, "input '%s' of node '%s' (%s) is not a graph input, an initializer or any node's "
                     "output", v->name, node_label (node), node->op);
        }
    }
  for (guint i = 0; i < graph->outputs->len; i++)
    {
      GraftValue *v = graph->outputs->pdata[i];
      if (v && !is_defined (graph, v))
        problem (c, NULL, v, "graph output '%s' is not a graph input, an initializer or any node's output", v->name);
    }
}

/* Kahn's algorithm over the producer links of this graph: nodes left
 * with inputs pending sit on a cycle (or behind one). */
static void
check_acyclic (Checker *c, GraftGraph *graph)
{
  guint n = graph->nodes->len;
  g_autofree guint *pending = g_new0 (guint, MAX (n, 1));
  g_autoptr(GArray) ready = g_array_new (FALSE, FALSE, sizeof (guint));
  guint done = 0;

  for (guint i = 0; i < n; i++)
    {
      GraftNode *node = graph->nodes->pdata[i];
      for (guint j = 0; j < node->inputs->len; j++)
        {
          GraftValue *v = node->inputs->pdata[j];
          if (v && v->producer && v->producer->graph == graph)
            pending[i]++;
        }
      if (pending[i] == 0)
        g_array_append_val (ready, i);
    }
  while (ready->len > 0)
    {
      guint i = g_array_index (ready, guint, ready->len - 1);
      g_array_set_size (ready, ready->len - 1);
      done++;
      GraftNode *node = graph->nodes->pdata[i];
      for (guint j = 0; j < node->outputs->len; j++)
        {
          GraftValue *v = node->outputs->pdata[j];
          if (v == NULL || v->producer != node)
            continue;
          for (guint k = 0; k < v->consumers->len; k++)
            {
              GraftNode *consumer = v->consumers->pdata[k];
              if (consumer->graph == graph && consumer->index < n && graph->nodes->pdata[consumer->index] == consumer &&
                  pending[consumer->index] > 0 && --pending[consumer->index] == 0)
                g_array_append_val (ready, consumer->index);
            }
        }
    }
  if (done == n)
    return;
  for (guint i = 0; i < n; i++)
    if (pending[i] > 0)
      {
        GraftNode *node = graph->nodes->pdata[i];
        problem (c, node, NULL, "graph '%s' has a cycle: node '%s' (%s) depends on its own output (%u nodes on or "
                 "behind the cycle)", graph->name ? graph->name : "", node_label (node), node->op, n - done);
        return;
      }
}

typedef struct {
  const char *op_type;
  const char *attribute;
  gint64 minimum;
} AttributeRange;

/* No real kernel, stride, dilation or padding comes near this; beyond it
 * the window arithmetic of the kernels would overflow. */
#define ATTRIBUTE_MAXIMUM G_MAXINT32

/* Attributes kernels divide by or loop over, in the default ONNX domain. */
static const AttributeRange attribute_ranges[] = {
  { "MaxPool", "kernel_shape", 1 }, { "MaxPool", "strides", 1 }, { "MaxPool", "dilations", 1 }, { "MaxPool", "pads", 0 },
  { "AveragePool", "kernel_shape", 1 }, { "AveragePool", "strides", 1 }, { "AveragePool", "pads", 0 },
  { "AveragePool", "dilations", 1 },
  { "LpPool", "kernel_shape", 1 }, { "LpPool", "strides", 1 }, { "LpPool", "pads", 0 },
  { "MaxUnpool", "kernel_shape", 1 }, { "MaxUnpool", "strides", 1 }, { "MaxUnpool", "pads", 0 },
  { "Conv", "kernel_shape", 1 }, { "Conv", "strides", 1 }, { "Conv", "dilations", 1 }, { "Conv", "pads", 0 },
  { "Conv", "group", 1 },
  { "ConvTranspose", "kernel_shape", 1 }, { "ConvTranspose", "strides", 1 }, { "ConvTranspose", "dilations", 1 },
  { "ConvTranspose", "pads", 0 }, { "ConvTranspose", "group", 1 },
  { "ConvInteger", "strides", 1 }, { "ConvInteger", "dilations", 1 }, { "ConvInteger", "group", 1 },
  { "QLinearConv", "strides", 1 }, { "QLinearConv", "dilations", 1 }, { "QLinearConv", "group", 1 },
  { "DepthToSpace", "blocksize", 1 }, { "SpaceToDepth", "blocksize", 1 },
  { "Col2Im", "strides", 1 }, { "Col2Im", "dilations", 1 },
  { "LRN", "size", 1 },
};

static void
check_attribute_ranges (Checker *c, GraftGraph *graph)
{
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = graph->nodes->pdata[i];
      if (strcmp (node->domain, "onnx") != 0)
        continue;
      for (guint r = 0; r < G_N_ELEMENTS (attribute_ranges); r++)
        {
          const AttributeRange *range = &attribute_ranges[r];
          if (strcmp (node->op_type, range->op_type) != 0)
            continue;
          GraftAttribute *a = graft_node_get_attribute (node, range->attribute);
          if (a == NULL)
            continue;
          if (a->type == GRAFT_ATTR_INT && (a->i < range->minimum || a->i > ATTRIBUTE_MAXIMUM))
            problem (c, node, NULL, "node '%s' (%s): %s = %" G_GINT64_FORMAT " must be in %" G_GINT64_FORMAT "..%d",
                     node_label (node), node->op, range->attribute, a->i, range->minimum, ATTRIBUTE_MAXIMUM);
          for (guint k = 0; a->type == GRAFT_ATTR_INTS && a->ints && k < a->ints->len; k++)
            {
              gint64 v = g_array_index (a->ints, gint64, k);
              if (v < range->minimum || v > ATTRIBUTE_MAXIMUM)
                {
                  problem (c, node, NULL, "node '%s' (%s): %s[%u] = %" G_GINT64_FORMAT " must be in %" G_GINT64_FORMAT
                           "..%d", node_label (node), node->op, range->attribute, k, v, range->minimum,
                           ATTRIBUTE_MAXIMUM);
                  break;
                }
            }
        }
    }
}

static void
check_graph (Checker *c, GraftGraph *graph, guint depth)
{
  check_producers (c, graph);
  check_inputs_defined (c, graph);
  check_acyclic (c, graph);
  check_attribute_ranges (c, graph);
  for (guint i = 0; i < graph->nodes->len && depth < 64; i++)
    {
      g_autoptr(GPtrArray) subgraphs = graft_node_get_subgraphs (graph->nodes->pdata[i]);
      for (guint k = 0; subgraphs && k < subgraphs->len; k++)
        check_graph (c, subgraphs->pdata[k], depth + 1);
    }
}

guint
graft_graph_check_structure (GraftGraph *graph, GraftGraphProblemFunc report, gpointer user_data)
{
  Checker c = { report, user_data, 0 };

  check_graph (&c, graph, 0);
  return c.count;
}

static void
keep_first (GraftNode *node, GraftValue *value, const char *message, gpointer user_data)
{
  char **first = user_data;
  if (*first == NULL)
    *first = g_strdup (message);
}

gboolean
graft_graph_validate_structure (GraftGraph *graph, GError **error)
{
  g_autofree char *first = NULL;
  guint count = graft_graph_check_structure (graph, keep_first, &first);

  if (count == 0)
    return TRUE;
  g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED, "invalid graph: %s%s", first,
               count > 1 ? " (and more problems: see graft-cli lint)" : "");
  return FALSE;
}
