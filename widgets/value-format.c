#include "value-format.h"

#include <string.h>

char *
graft_value_format_type (const GraftValue *value, GraftInference *inference)
{
  GraftDType dtype = value->dtype;
  const GraftShape *shape = &value->shape;
  g_autofree char *shape_text = NULL;

  if (value->kind != GRAFT_VALUE_TENSOR && value->type_string != NULL)
    return g_strdup (value->type_string);

  GraftDType inferred_dtype;
  const GraftShape *inferred_shape;

  if (graft_inference_lookup (inference, value, &inferred_dtype, &inferred_shape))
    {
      if (dtype == GRAFT_DTYPE_UNDEFINED)
        dtype = inferred_dtype;
      if (shape->rank < 0)
        shape = inferred_shape;
    }

  if (value->initializer != NULL && dtype == GRAFT_DTYPE_UNDEFINED)
    return graft_tensor_describe (value->initializer);

  if (dtype == GRAFT_DTYPE_UNDEFINED && shape->rank < 0)
    return g_strdup (value->type_string != NULL ? value->type_string : "Tensor · dtype and shape not recorded");

  shape_text = graft_shape_to_string (shape);
  if (dtype == GRAFT_DTYPE_UNDEFINED)
    return g_strdup (shape_text);
  return g_strdup_printf ("%s · %s", graft_dtype_to_string (dtype), shape_text);
}

char *
graft_node_format_label (const GraftNode *node)
{
  if (node->name == NULL || node->name[0] == '\0')
    return g_strdup (node->op_type);
  return g_strdup_printf ("%s “%s”", node->op_type, node->name);
}

GPtrArray *
graft_graph_get_ancestry (GraftGraph *graph)
{
  GPtrArray *chain = g_ptr_array_new ();

  for (GraftGraph *g = graph; g != NULL; g = g->parent_graph)
    g_ptr_array_insert (chain, 0, g);
  return chain;
}

static const char *
find_holding_attribute (GraftGraph *graph)
{
  GraftNode *parent = graph->parent_node;

  if (parent == NULL)
    return NULL;
  for (guint i = 0; i < parent->attributes->len; i++)
    {
      GraftAttribute *attribute = g_ptr_array_index (parent->attributes, i);

      if (attribute->g == graph)
        return attribute->name;
      if (attribute->graphs != NULL)
        for (guint j = 0; j < attribute->graphs->len; j++)
          if (g_ptr_array_index (attribute->graphs, j) == graph)
            return attribute->name;
    }
  return NULL;
}

char *
graft_graph_format_name (GraftGraph *graph)
{
  const char *attribute_name;

  if (graph->parent_graph == NULL)
    return g_strdup (graph->name != NULL && graph->name[0] != '\0' ? graph->name : "main graph");

  /* ONNX exporters name bodies after the attribute ("then_branch") or
   * not at all; the attribute name is what the user recognises. */
  attribute_name = find_holding_attribute (graph);
  if (attribute_name != NULL && (graph->name == NULL || graph->name[0] == '\0'
                                 || strcmp (graph->name, attribute_name) == 0))
    return g_strdup (attribute_name);
  if (attribute_name != NULL)
    return g_strdup_printf ("%s (%s)", attribute_name, graph->name);
  return g_strdup (graph->name != NULL && graph->name[0] != '\0' ? graph->name : "subgraph");
}

char *
graft_graph_format_location (GraftGraph *graph)
{
  g_autoptr(GPtrArray) chain = graft_graph_get_ancestry (graph);
  GString *out = g_string_new (NULL);

  for (guint i = 0; i < chain->len; i++)
    {
      GraftGraph *level = g_ptr_array_index (chain, i);
      g_autofree char *name = graft_graph_format_name (level);

      if (level->parent_node != NULL)
        {
          g_autofree char *holder = graft_node_format_label (level->parent_node);

          g_string_append_printf (out, " › %s › ", holder);
        }
      g_string_append (out, name);
    }
  return g_string_free (out, FALSE);
}
