#include "analysis/baked-shape.h"
#include "analysis/shape-inference.h"

#include <string.h>

GraftTensor *
graft_value_get_constant (GraftValue *value)
{
  GraftAttribute *attribute;

  if (value == NULL)
    return NULL;
  if (value->initializer != NULL)
    return value->initializer;
  if (value->producer != NULL && value->producer->op == g_intern_static_string ("onnx::Constant")
      && (attribute = graft_node_get_attribute (value->producer, "value")) != NULL)
    return attribute->t;
  return NULL;
}

gint64
graft_tensor_get_int (GraftTensor *tensor, gint64 index)
{
  GBytes *bytes = graft_tensor_get_data (tensor, NULL);
  gsize size = graft_dtype_get_size (tensor->dtype);
  const guint8 *p;
  guint64 v = 0;

  if (bytes == NULL || size == 0 || size > 8 || (gsize) (index + 1) * size > g_bytes_get_size (bytes))
    return 0;
  p = (const guint8 *) g_bytes_get_data (bytes, NULL) + index * size;
  for (gsize b = 0; b < size; b++)
    v |= (guint64) p[b] << (8 * b);
  /* Sign-extend the signed types. */
  if (size < 8 && (tensor->dtype == GRAFT_DTYPE_INT8 || tensor->dtype == GRAFT_DTYPE_INT16
                   || tensor->dtype == GRAFT_DTYPE_INT32) && (v >> (8 * size - 1)) & 1)
    v |= ~(guint64) 0 << (8 * size);
  return (gint64) v;
}

gboolean
graft_dim_mentions (const GraftDim *dim, const char *symbol)
{
  g_auto(GStrv) parts = NULL;

  if (dim->kind != GRAFT_DIM_SYMBOLIC || dim->symbol == NULL)
    return FALSE;
  parts = g_strsplit (dim->symbol, "*", -1);
  return g_strv_contains ((const char *const *) parts, symbol);
}

static const GraftShape *
probed_shape (GraftValue *value)
{
  if (value == NULL)
    return NULL;
  return value->has_inferred ? &value->inferred_shape : &value->shape;
}

static gboolean
carries_probe (GraftValue *value)
{
  const GraftShape *shape = probed_shape (value);

  for (int i = 0; shape && i < shape->rank; i++)
    if (graft_dim_mentions (&shape->dims[i], GRAFT_PROBE_SYMBOL))
      return TRUE;
  return FALSE;
}

static gboolean
probe_at (GraftValue *value, gint64 axis)
{
  const GraftShape *shape = probed_shape (value);

  if (shape == NULL || shape->rank < 0)
    return FALSE;
  if (axis < 0)
    axis += shape->rank;
  return axis >= 0 && axis < shape->rank && graft_dim_mentions (&shape->dims[axis], GRAFT_PROBE_SYMBOL);
}

static gboolean
consumers_carry_probe (GraftValue *value)
{
  for (guint i = 0; value && i < value->consumers->len; i++)
    {
      GraftNode *consumer = g_ptr_array_index (value->consumers, i);
      for (guint j = 0; j < consumer->inputs->len; j++)
        {
          GraftValue *other = g_ptr_array_index (consumer->inputs, j);
          if (other != value && carries_probe (other))
            return TRUE;
        }
    }
  return FALSE;
}

static void
add_matches (GPtrArray *found, GraftNode *node, guint shape_input, gint64 traced, GraftValue *input, int axis,
             gboolean (*relevant) (GraftNode *node, guint element, gpointer data), gpointer data)
{
  GraftValue *constant = shape_input < node->inputs->len ? g_ptr_array_index (node->inputs, shape_input) : NULL;
  GraftTensor *tensor = graft_value_get_constant (constant);
  gint64 n;

  if (tensor == NULL || !graft_dtype_is_integer (tensor->dtype) || (n = graft_tensor_get_numel (tensor)) > 64)
    return;
  for (gint64 e = 0; e < n; e++)
    if (graft_tensor_get_int (tensor, e) == traced
        && (relevant == NULL || relevant (node, e, data)))
      {
        GraftBakedShape *baked = g_new0 (GraftBakedShape, 1);

        baked->node = node;
        baked->shape_input = shape_input;
        baked->constant = constant;
        baked->element = e;
        baked->traced = traced;
        baked->input = input;
        baked->axis = axis;
        g_ptr_array_add (found, baked);
      }
}

/* Slice: the element is an end (or start) on an axis that carries the probe. */
static gboolean
slice_relevant (GraftNode *node, guint element, gpointer data)
{
  GraftValue *axes_value = node->inputs->len > 3 ? g_ptr_array_index (node->inputs, 3) : NULL;
  GraftTensor *axes = graft_value_get_constant (axes_value);
  gint64 axis = element;

  if (axes_value != NULL)
    {
      if (axes == NULL || element >= graft_tensor_get_numel (axes))
        return FALSE;
      axis = graft_tensor_get_int (axes, element);
    }
  return probe_at (g_ptr_array_index (node->inputs, 0), axis);
}

static void
find_in_node (GPtrArray *found, GraftNode *node, gint64 traced, GraftValue *input, int axis)
{
  GraftValue *data = node->inputs->len > 0 ? g_ptr_array_index (node->inputs, 0) : NULL;
  const char *op = node->op;

  if (op == g_intern_static_string ("onnx::Reshape") || op == g_intern_static_string ("onnx::Expand")
      || op == g_intern_static_string ("onnx::Tile"))
    {
      if (carries_probe (data))
        add_matches (found, node, 1, traced, input, axis, NULL, NULL);
    }
  else if (op == g_intern_static_string ("onnx::ConstantOfShape"))
    {
      if (node->outputs->len > 0 && consumers_carry_probe (g_ptr_array_index (node->outputs, 0)))
        add_matches (found, node, 0, traced, input, axis, NULL, NULL);
    }
  else if (op == g_intern_static_string ("onnx::Slice") && node->inputs->len >= 3)
    add_matches (found, node, 2, traced, input, axis, slice_relevant, NULL);
}

GPtrArray *
graft_find_baked_shapes (GraftModel *model, GraftValue *input, int axis)
{
  GPtrArray *found = g_ptr_array_new_with_free_func (g_free);
  GraftGraph *graph = graft_model_get_graph (model);
  GraftDim saved;
  gint64 traced;

  if (graph == NULL || input->shape.rank <= axis || axis < 0 || input->shape.dims[axis].kind != GRAFT_DIM_FIXED)
    return found;
  saved = input->shape.dims[axis];
  traced = saved.value;
  input->shape.dims[axis] = graft_dim_symbolic (GRAFT_PROBE_SYMBOL);
  graft_shape_inference_run (model, NULL);
  for (guint i = 0; i < graph->nodes->len; i++)
    find_in_node (found, g_ptr_array_index (graph->nodes, i), traced, input, axis);
  input->shape.dims[axis] = saved;
  return found;
}
