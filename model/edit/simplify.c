/* The graph-level simplifications cleanup makes once types are inferred:
 * arithmetic with a neutral constant (x + 0, x · 1, x / 1, x ^ 1) that does
 * not broadcast (and MatMul by ones of [..., 1, 1], which a Softmax over
 * a single element is), ops that do nothing (identity Transpose, Cast to
 * the same type, Reshape or Expand to the same static shape, Expand by
 * ones, Slice of everything, Concat of one input, reductions over dims of
 * size 1, Pad by zeros), Concats of Concats and Slices of Slices as one,
 * Transpose pairs (merged into one, which goes when they cancel), and
 * chains of Reshape, Squeeze, Unsqueeze and Flatten that end in a static
 * shape, which become one Reshape. */
#include "edit/edit-private.h"
#include "ir/graph-surgery.h"
#include "runtime/op.h"

#include <math.h>
#include <string.h>

GraftTensor *
graft_edit_constant_of (GraftValue *value)
{
  return value != NULL && value->initializer != NULL && !value->is_graph_input ? value->initializer : NULL;
}

static gboolean
all_equal_to (GraftTensor *tensor, double neutral)
{
  gint64 n = graft_tensor_get_numel (tensor);

  if (tensor->dtype == GRAFT_DTYPE_STRING || graft_tensor_get_data (tensor, NULL) == NULL || n > 1 << 24)
    return FALSE;
  for (gint64 i = 0; i < n; i++)
    if (graft_tensor_get_element_as_double (tensor, i) != neutral)
      return FALSE;
  return TRUE;
}

/* x op c gives x's shape: c's dims are 1 or x's (fixed) dims. */
static gboolean
broadcast_keeps_shape (GraftTensor *c, const GraftShape *x)
{
  if (x == NULL || x->rank < c->rank)
    return FALSE;
  for (int i = 0; i < c->rank; i++)
    {
      const GraftDim *d = &x->dims[x->rank - c->rank + i];
      if (c->dims[i] != 1 && !(d->kind == GRAFT_DIM_FIXED && d->value == c->dims[i]))
        return FALSE;
    }
  return TRUE;
}

/* A shape with every dim known (fixed or a symbol). */
static const GraftShape *
known_shape (GraftInference *inference, GraftValue *value, GraftDType *dtype)
{
  const GraftShape *shape;

  if (value == NULL || !graft_edit_value_type (inference, value, dtype, &shape) || shape == NULL || shape->rank < 0)
    return NULL;
  for (int d = 0; d < shape->rank; d++)
    if (shape->dims[d].kind == GRAFT_DIM_UNKNOWN)
      return NULL;
  return shape;
}

/* a is [..., 1, 1] of ones: a constant of ones, or a Softmax over its
 * last axis, of size 1 (attention over a single token). */
static gboolean
is_single_one (GraftInference *inference, GraftValue *a)
{
  GraftTensor *ones = graft_edit_constant_of (a);
  GraftNode *softmax = a ? a->producer : NULL;
  GraftDType dtype;
  const GraftShape *shape;

  if (ones != NULL)
    return ones->rank >= 2 && ones->dims[ones->rank - 1] == 1 && ones->dims[ones->rank - 2] == 1
           && all_equal_to (ones, 1.0);
  if (softmax == NULL || strcmp (softmax->op, "onnx::Softmax") != 0 || (shape = known_shape (inference, a, &dtype)) == NULL
      || shape->rank < 2)
    return FALSE;
  /* without the attribute the default axis depends on the opset, except at rank 2 */
  gint64 axis = graft_node_get_attribute (softmax, "axis") ? graft_node_attr_int (softmax, "axis", -1) : shape->rank == 2 ? 1 : 0;
  return (axis == -1 || axis == shape->rank - 1) && graft_dim_equal (&shape->dims[shape->rank - 1], &(GraftDim) { .kind = GRAFT_DIM_FIXED, .value = 1 })
         && graft_dim_equal (&shape->dims[shape->rank - 2], &(GraftDim) { .kind = GRAFT_DIM_FIXED, .value = 1 });
}

/* MatMul(a, b) is b where a is [..., 1, 1] of ones and the product has
 * b's shape: each row of b is multiplied by a single 1. */
static gboolean
multiplies_by_one (GraftInference *inference, GraftNode *node)
{
  GraftValue *b = g_ptr_array_index (node->inputs, 1);
  GraftDType b_dtype, out_dtype;
  const GraftShape *b_shape = known_shape (inference, b, &b_dtype);
  const GraftShape *out_shape = known_shape (inference, g_ptr_array_index (node->outputs, 0), &out_dtype);

  return b_shape != NULL && out_shape != NULL && b_dtype == out_dtype && graft_shape_equal (b_shape, out_shape)
         && is_single_one (inference, g_ptr_array_index (node->inputs, 0));
}

/* The input slot whose value the node passes through, or -1. */
static int
neutral_operand (GraftInference *inference, GraftNode *node)
{
  static const struct {
    const char *op;
    double neutral;
    gboolean commutative;
  } rules[] = {
    { "onnx::Add", 0, TRUE }, { "onnx::Sub", 0, FALSE }, { "onnx::Mul", 1, TRUE },
    { "onnx::Div", 1, FALSE }, { "onnx::Pow", 1, FALSE },
  };

  if (node->inputs->len != 2 || node->outputs->len != 1)
    return -1;
  if (strcmp (node->op, "onnx::MatMul") == 0)
    return multiplies_by_one (inference, node) ? 1 : -1;
  for (guint r = 0; r < G_N_ELEMENTS (rules); r++)
    {
      if (strcmp (node->op, rules[r].op) != 0)
        continue;
      for (int slot = 1; slot >= (rules[r].commutative ? 0 : 1); slot--)
        {
          GraftTensor *c = graft_edit_constant_of (g_ptr_array_index (node->inputs, slot));
          GraftValue *x = g_ptr_array_index (node->inputs, 1 - slot);
          GraftValue *out = g_ptr_array_index (node->outputs, 0);
          GraftDType x_dtype, out_dtype;
          const GraftShape *x_shape, *out_shape;

          if (c == NULL || x == NULL || out == NULL || !graft_edit_value_type (inference, x, &x_dtype, &x_shape)
              || !graft_edit_value_type (inference, out, &out_dtype, &out_shape) || x_dtype != out_dtype
              || (strcmp (node->op, "onnx::Pow") != 0 && x_dtype != c->dtype))
            continue;
          if (broadcast_keeps_shape (c, x_shape) && all_equal_to (c, rules[r].neutral))
            return 1 - slot;
        }
    }
  return -1;
}

static gboolean
same_static_shape (GraftInference *inference, GraftValue *a, GraftValue *b)
{
  GraftDType a_dtype, b_dtype;
  const GraftShape *a_shape, *b_shape;

  return a != NULL && b != NULL && graft_edit_value_type (inference, a, &a_dtype, &a_shape)
         && graft_edit_value_type (inference, b, &b_dtype, &b_shape) && a_shape && b_shape
         && graft_shape_is_fully_fixed (a_shape) && graft_shape_equal (a_shape, b_shape);
}

gint64 *
graft_edit_int64_values (GraftValue *value, guint *n)
{
  GraftTensor *tensor = graft_edit_constant_of (value);
  GBytes *data = tensor ? graft_tensor_get_data (tensor, NULL) : NULL;
  const guint8 *bytes;
  gint64 *values;

  if (data == NULL || (tensor->dtype != GRAFT_DTYPE_INT64 && tensor->dtype != GRAFT_DTYPE_INT32) || tensor->rank > 1)
    return NULL;
  bytes = g_bytes_get_data (data, NULL);
  *n = graft_tensor_get_numel (tensor);
  values = g_new (gint64, MAX (*n, 1));
  /* read as integers: through a double, INT64_MAX ("to the end") would overflow */
  for (guint k = 0; k < *n; k++)
    {
      if (tensor->dtype == GRAFT_DTYPE_INT64)
        {
          guint64 le;
          memcpy (&le, bytes + 8 * k, 8);
          values[k] = (gint64) GUINT64_FROM_LE (le);
        }
      else
        {
          guint32 le;
          memcpy (&le, bytes + 4 * k, 4);
          values[k] = (gint32) GUINT32_FROM_LE (le);
        }
    }
  return values;
}

static gint64 *
int64_constant (GraftNode *node, guint i, guint *n)
{
  return graft_edit_int64_values (i < node->inputs->len ? g_ptr_array_index (node->inputs, i) : NULL, n);
}

/* Slice with steps of 1 from the start of each axis to its end: from 0
 * (or from before the start) to past the end (INT_MAX, or the static dim). */
static gboolean
slices_everything (GraftInference *inference, GraftNode *node, GraftValue *in, GraftValue *out)
{
  g_autofree gint64 *starts = NULL, *ends = NULL, *axes = NULL, *steps = NULL;
  guint n_starts, n_ends, n_axes = 0, n_steps = 0;
  GraftDType dtype;
  const GraftShape *shape;

  if (node->inputs->len < 3 || (starts = int64_constant (node, 1, &n_starts)) == NULL
      || (ends = int64_constant (node, 2, &n_ends)) == NULL || n_starts != n_ends
      || (node->inputs->len > 3 && g_ptr_array_index (node->inputs, 3) != NULL
          && ((axes = int64_constant (node, 3, &n_axes)) == NULL || n_axes != n_starts))
      || (node->inputs->len > 4 && g_ptr_array_index (node->inputs, 4) != NULL
          && ((steps = int64_constant (node, 4, &n_steps)) == NULL || n_steps != n_starts)))
    return FALSE;
  if (same_static_shape (inference, in, out))
    {
      for (guint k = 0; k < n_steps; k++)
        if (steps[k] != 1)
          return FALSE;
      return TRUE;   /* steps of 1 keeping every axis' length keep all of it */
    }
  if (!graft_edit_value_type (inference, in, &dtype, &shape) || shape == NULL)
    return FALSE;
  for (guint k = 0; k < n_starts; k++)
    {
      gint64 axis = axes ? axes[k] : (gint64) k;
      const GraftDim *dim;

      if (axis < 0)
        axis += shape->rank;
      if (axis < 0 || axis >= shape->rank || (steps != NULL && steps[k] != 1))
        return FALSE;
      dim = &shape->dims[axis];
      if (!(starts[k] == 0 || (dim->kind == GRAFT_DIM_FIXED && starts[k] <= -dim->value)))
        return FALSE;
      if (!(ends[k] >= G_MAXINT32 || (dim->kind == GRAFT_DIM_FIXED && ends[k] >= dim->value)))
        return FALSE;
    }
  return TRUE;
}

/* Expand by a shape of ones no longer than the input's rank. */
static gboolean
expands_by_ones (GraftInference *inference, GraftNode *node, GraftValue *in)
{
  g_autofree gint64 *shape_values = NULL;
  guint n;
  GraftDType dtype;
  const GraftShape *shape;

  if ((shape_values = int64_constant (node, 1, &n)) == NULL || !graft_edit_value_type (inference, in, &dtype, &shape)
      || shape == NULL || shape->rank < (int) n)
    return FALSE;
  for (guint k = 0; k < n; k++)
    if (shape_values[k] != 1)
      return FALSE;
  return TRUE;
}

/* ReduceMean/Sum/Max/Min/Prod keeping dims over dims of size 1 (a
 * global pooling of a 1×1 map). */
/* The axes of a Squeeze/Unsqueeze/Reduce*: the constant second input
 * (opset 13 on, 18 for most Reduce ops) or the attribute; NULL when not
 * known or empty. */
static gint64 *
axes_of (GraftNode *node, guint *n)
{
  const gint64 *attribute;

  if (node->inputs->len >= 2 && g_ptr_array_index (node->inputs, 1) != NULL)
    return graft_edit_int64_values (g_ptr_array_index (node->inputs, 1), n);
  if ((attribute = graft_node_attr_ints (node, "axes", n)) == NULL || *n == 0)
    return NULL;
  return g_memdup2 (attribute, sizeof (gint64) * *n);
}

static gboolean
reduces_ones (GraftInference *inference, GraftNode *node, GraftValue *in)
{
  static const char *const reductions[] = {
    "onnx::ReduceMean", "onnx::ReduceSum", "onnx::ReduceMax", "onnx::ReduceMin", "onnx::ReduceProd", NULL,
  };
  g_autofree gint64 *axes = NULL;
  guint n = 0;
  GraftDType dtype;
  const GraftShape *shape;
  gboolean axes_input = node->inputs->len > 1 && g_ptr_array_index (node->inputs, 1) != NULL;

  if (!g_strv_contains (reductions, node->op) || graft_node_attr_int (node, "keepdims", 1) != 1
      || !graft_edit_value_type (inference, in, &dtype, &shape) || shape == NULL || shape->rank < 0)
    return FALSE;
  if ((axes = axes_of (node, &n)) == NULL)
    {
      if (axes_input)
        return FALSE;   /* axes computed at run time */
      n = 0;
    }
  if (n == 0 && graft_node_attr_int (node, "noop_with_empty_axes", 0) != 0)
    return TRUE;
  for (int k = 0; k < (n > 0 ? (int) n : shape->rank); k++)
    {
      gint64 axis = n > 0 ? axes[k] : k;
      axis = axis < 0 ? axis + shape->rank : axis;
      if (axis < 0 || axis >= shape->rank || shape->dims[axis].kind != GRAFT_DIM_FIXED || shape->dims[axis].value != 1)
        return FALSE;
    }
  return TRUE;
}

/* Concat(…, Concat(a, b), …) along the same axis: one Concat of all the
 * parts (the inner one goes once no other node reads it). */
static gboolean
flatten_concats (GraftGraph *graph, GraftNode *node)
{
  gboolean flattened = FALSE;

  if (strcmp (node->op, "onnx::Concat") != 0)
    return FALSE;
  for (guint i = 0; i < node->inputs->len; i++)
    {
      GraftValue *in = g_ptr_array_index (node->inputs, i);
      GraftNode *inner = in ? in->producer : NULL;
      g_autoptr(GPtrArray) parts = NULL;

      if (inner == NULL || strcmp (inner->op, "onnx::Concat") != 0 || inner->graph != graph
          || graft_node_attr_int (inner, "axis", G_MININT64) != graft_node_attr_int (node, "axis", G_MAXINT64))
        continue;
      /* node's inputs from i on: inner's parts, then the rest */
      parts = g_ptr_array_new ();
      for (guint k = 0; k < inner->inputs->len; k++)
        g_ptr_array_add (parts, g_ptr_array_index (inner->inputs, k));
      for (guint k = i + 1; k < node->inputs->len; k++)
        g_ptr_array_add (parts, g_ptr_array_index (node->inputs, k));
      for (guint k = 0; k < parts->len; k++)
        {
          if (i + k < node->inputs->len)
            graft_node_set_input (node, i + k, g_ptr_array_index (parts, k));
          else
            graft_node_add_input (node, g_ptr_array_index (parts, k));
        }
      i += inner->inputs->len - 1;
      flattened = TRUE;
    }
  return flattened;
}

/* Pad by zeros everywhere. */
static gboolean
pads_nothing (GraftNode *node)
{
  g_autofree gint64 *pads = NULL;
  const gint64 *attribute;
  guint n = 0;

  if (node->inputs->len > 1)
    pads = graft_edit_int64_values (g_ptr_array_index (node->inputs, 1), &n);
  else if ((attribute = graft_node_attr_ints (node, "pads", &n)) != NULL)
    pads = g_memdup2 (attribute, sizeof (gint64) * n);
  if (pads == NULL)
    return FALSE;
  for (guint k = 0; k < n; k++)
    if (pads[k] != 0)
      return FALSE;
  return TRUE;
}

/* The starts, ends, axes and steps of a Slice (opset 10 on) as constants,
 * axes made non-negative; FALSE when one is not constant. */
static gboolean
slice_arguments (GraftInference *inference, GraftNode *node, GArray *arguments[4])
{
  GraftValue *in = g_ptr_array_index (node->inputs, 0);
  GraftDType dtype;
  const GraftShape *shape;
  guint n = 0;

  if (strcmp (node->op, "onnx::Slice") != 0 || node->inputs->len < 3 || in == NULL)
    return FALSE;
  for (guint k = 0; k < 4; k++)
    {
      GraftValue *value = k + 1 < node->inputs->len ? g_ptr_array_index (node->inputs, k + 1) : NULL;
      g_autofree gint64 *values = NULL;
      guint n_values;

      arguments[k] = g_array_new (FALSE, FALSE, sizeof (gint64));
      if (value == NULL && k >= 2)
        {
          for (guint i = 0; i < n; i++)
            g_array_append_val (arguments[k], (gint64) { k == 2 ? (gint64) i : 1 });
          continue;
        }
      if ((values = graft_edit_int64_values (value, &n_values)) == NULL || (k > 0 && n_values != n))
        return FALSE;
      n = n_values;
      g_array_append_vals (arguments[k], values, n);
    }
  for (guint i = 0; i < n; i++)
    {
      gint64 *axis = &g_array_index (arguments[2], gint64, i);
      if (*axis < 0)
        {
          if (!graft_edit_value_type (inference, in, &dtype, &shape) || shape == NULL || shape->rank < 0)
            return FALSE;
          *axis += shape->rank;
        }
    }
  return TRUE;
}

static void
clear_arguments (GArray *arguments[4])
{
  for (guint k = 0; k < 4; k++)
    g_clear_pointer (&arguments[k], g_array_unref);
}

/* Slice(Slice(x)) along other axes: one Slice with both sets of
 * arguments (the inner one goes once no other node reads it). */
static gboolean
merge_slices (GraftInference *inference, GraftGraph *graph, GraftNode *node)
{
  GraftValue *in = node->inputs->len >= 3 ? g_ptr_array_index (node->inputs, 0) : NULL;
  GraftNode *inner = in ? in->producer : NULL;
  GArray *outer_arguments[4] = { 0 }, *inner_arguments[4] = { 0 };
  gboolean merged = FALSE;

  if (inner != NULL && inner->graph == graph && slice_arguments (inference, node, outer_arguments) && slice_arguments (inference, inner, inner_arguments))
    {
      merged = TRUE;
      for (guint i = 0; i < outer_arguments[2]->len; i++)
        for (guint j = 0; j < inner_arguments[2]->len; j++)
          merged &= g_array_index (outer_arguments[2], gint64, i) != g_array_index (inner_arguments[2], gint64, j);
    }
  if (merged)
    {
      static const char *const hints[] = { "starts", "ends", "axes", "steps" };
      graft_node_set_input (node, 0, g_ptr_array_index (inner->inputs, 0));
      for (guint k = 0; k < 4; k++)
        {
          GraftValue *value;
          g_array_append_vals (inner_arguments[k], outer_arguments[k]->data, outer_arguments[k]->len);
          value = graft_graph_add_int64_constant (graph, hints[k], (gint64 *) inner_arguments[k]->data,
                                                  inner_arguments[k]->len, FALSE);
          if (k + 1 < node->inputs->len)
            graft_node_set_input (node, k + 1, value);
          else
            graft_node_add_input (node, value);
        }
    }
  clear_arguments (outer_arguments);
  clear_arguments (inner_arguments);
  return merged;
}

/* Reshape(x, target) where every entry of target is x's own dim there
 * (fixed and equal, or a 0 that copies it), but for at most one -1: that
 * one then is x's dim too, symbolic or not. */
static gboolean
reshape_keeps_shape (GraftInference *inference, GraftNode *node, GraftValue *in)
{
  GraftDType dtype;
  const GraftShape *shape;
  g_autofree gint64 *target = NULL;
  gboolean allowzero = graft_node_attr_int (node, "allowzero", 0) != 0;
  guint n, inferred = 0;

  if (node->inputs->len != 2 || !graft_edit_value_type (inference, in, &dtype, &shape) || shape == NULL
      || (target = graft_edit_int64_values (g_ptr_array_index (node->inputs, 1), &n)) == NULL
      || (int) n != shape->rank)
    return FALSE;
  for (guint k = 0; k < n; k++)
    {
      const GraftDim *dim = &shape->dims[k];
      gboolean fixed = dim->kind == GRAFT_DIM_FIXED;

      if (target[k] == -1)
        inferred++;
      else if (target[k] == 0 && !allowzero)
        continue;
      else if (!fixed || dim->value != target[k] || target[k] == 0)
        return FALSE;
    }
  return inferred <= 1;
}

static gboolean
does_nothing (GraftInference *inference, GraftNode *node)
{
  GraftValue *in = node->inputs->len > 0 ? g_ptr_array_index (node->inputs, 0) : NULL;
  GraftValue *out = node->outputs->len == 1 ? g_ptr_array_index (node->outputs, 0) : NULL;
  GraftDType dtype;
  const GraftShape *shape;

  if (in == NULL || out == NULL)
    return FALSE;
  if (strcmp (node->op, "onnx::Transpose") == 0)
    {
      guint n;
      const gint64 *perm = graft_node_attr_ints (node, "perm", &n);
      for (guint i = 0; perm != NULL && i < n; i++)
        if (perm[i] != (gint64) i)
          return FALSE;
      return perm != NULL;
    }
  if (strcmp (node->op, "onnx::Cast") == 0)
    return graft_edit_value_type (inference, in, &dtype, &shape) && dtype == graft_node_attr_int (node, "to", -1);
  if (strcmp (node->op, "onnx::Reshape") == 0)
    return same_static_shape (inference, in, out) || reshape_keeps_shape (inference, node, in);
  if (strcmp (node->op, "onnx::Expand") == 0)
    return same_static_shape (inference, in, out) || expands_by_ones (inference, node, in);
  if (strcmp (node->op, "onnx::Concat") == 0)
    return node->inputs->len == 1;
  if (strcmp (node->op, "onnx::Slice") == 0)
    return slices_everything (inference, node, in, out);
  if (strcmp (node->op, "onnx::Pad") == 0)
    return pads_nothing (node);
  return reduces_ones (inference, node, in);
}

static gboolean
is_shape_only (GraftNode *node)
{
  return node != NULL
         && (strcmp (node->op, "onnx::Reshape") == 0 || strcmp (node->op, "onnx::Squeeze") == 0
             || strcmp (node->op, "onnx::Unsqueeze") == 0 || strcmp (node->op, "onnx::Flatten") == 0);
}

/* A Transpose that only moves dims of size 1 keeps the order of the
 * elements: it is a reshape. */
static gboolean
moves_only_ones (GraftInference *inference, GraftNode *node)
{
  GraftValue *in = node->inputs->len == 1 ? g_ptr_array_index (node->inputs, 0) : NULL;
  GraftDType dtype;
  const GraftShape *shape;
  const gint64 *perm;
  guint n;
  gint64 last = -1;

  if (strcmp (node->op, "onnx::Transpose") != 0 || in == NULL || !graft_edit_value_type (inference, in, &dtype, &shape)
      || shape == NULL || (perm = graft_node_attr_ints (node, "perm", &n)) == NULL || (int) n != shape->rank)
    return FALSE;
  for (guint k = 0; k < n; k++)
    {
      const GraftDim *dim;
      if (perm[k] < 0 || perm[k] >= shape->rank)
        return FALSE;
      dim = &shape->dims[perm[k]];
      if (dim->kind == GRAFT_DIM_FIXED && dim->value == 1)
        continue;
      if (perm[k] < last)
        return FALSE;
      last = perm[k];
    }
  return TRUE;
}

/* Reshape to a constant target without zeros (which would copy dims of
 * its input) only needs the number of elements of its input: a shape-only
 * node before it that nobody else reads can go. */
static gboolean
skip_shape_only_input (GraftInference *inference, GraftGraph *graph, GraftNode *node)
{
  GraftValue *in = node->inputs->len == 2 ? g_ptr_array_index (node->inputs, 0) : NULL;
  GraftNode *previous = in ? in->producer : NULL;
  g_autofree gint64 *target = NULL;
  guint n;

  if (strcmp (node->op, "onnx::Reshape") != 0 || previous == NULL
      || !(is_shape_only (previous) || moves_only_ones (inference, previous)) || previous->graph != graph
      || in->consumers->len != 1 || in->is_graph_output || previous->inputs->len < 1
      || g_ptr_array_index (previous->inputs, 0) == NULL
      || (target = graft_edit_int64_values (g_ptr_array_index (node->inputs, 1), &n)) == NULL)
    return FALSE;
  for (guint k = 0; k < n; k++)
    if (target[k] == 0)
      return FALSE;
  graft_node_set_input (node, 0, g_ptr_array_index (previous->inputs, 0));
  return TRUE;
}

/* node reads a shape-only node's output that nobody else reads and gives
 * a static shape: it becomes Reshape(that node's input, the shape). */
static gboolean
merge_into_reshape (GraftInference *inference, GraftGraph *graph, GraftNode *node)
{
  GraftValue *in = node->inputs->len > 0 ? g_ptr_array_index (node->inputs, 0) : NULL;
  GraftValue *out = node->outputs->len == 1 ? g_ptr_array_index (node->outputs, 0) : NULL;
  GraftNode *previous = in ? in->producer : NULL;
  GraftValue *source;
  GraftValue *shape_value;
  GraftDType dtype;
  const GraftShape *shape;
  g_autofree gint64 *dims = NULL;
  g_autofree char *op = NULL;

  if (!is_shape_only (node) || !is_shape_only (previous) || previous->graph != graph || in->consumers->len != 1
      || in->is_graph_output || out == NULL || !graft_edit_value_type (inference, out, &dtype, &shape) || shape == NULL
      || !graft_shape_is_fully_fixed (shape) || (source = g_ptr_array_index (previous->inputs, 0)) == NULL)
    return FALSE;
  dims = g_new (gint64, MAX (shape->rank, 1));
  for (int i = 0; i < shape->rank; i++)
    if ((dims[i] = shape->dims[i].value) == 0)
      return FALSE;   /* Reshape would copy a 0 from the input */
  shape_value = graft_graph_add_int64_constant (graph, "shape", dims, shape->rank, FALSE);
  node->op_type = g_intern_string ("Reshape");
  op = g_strconcat (node->domain, "::Reshape", NULL);
  node->op = g_intern_string (op);
  g_ptr_array_set_size (node->attributes, 0);
  graft_node_set_input (node, 0, source);
  if (node->inputs->len < 2)
    graft_node_add_input (node, shape_value);
  else
    graft_node_set_input (node, 1, shape_value);
  while (node->inputs->len > 2)
    {
      graft_node_set_input (node, node->inputs->len - 1, NULL);
      g_ptr_array_set_size (node->inputs, node->inputs->len - 1);
    }
  return TRUE;
}

/* Transpose(Transpose(x, p1), p2) = Transpose(x, p1∘p2); the first stays
 * for its other readers. */
static gboolean
merge_transposes (GraftGraph *graph, GraftNode *node)
{
  GraftValue *in = node->inputs->len == 1 ? g_ptr_array_index (node->inputs, 0) : NULL;
  GraftNode *previous = in ? in->producer : NULL;
  const gint64 *p1, *p2;
  guint n1, n2;
  GraftAttribute *perm;

  if (strcmp (node->op, "onnx::Transpose") != 0 || previous == NULL || strcmp (previous->op, "onnx::Transpose") != 0
      || previous->graph != graph || (p1 = graft_node_attr_ints (previous, "perm", &n1)) == NULL
      || (p2 = graft_node_attr_ints (node, "perm", &n2)) == NULL || n1 != n2)
    return FALSE;
  perm = graft_node_get_attribute (node, "perm");
  for (guint i = 0; i < n2; i++)
    g_array_index (perm->ints, gint64, i) = p1[p2[i]];
  graft_node_set_input (node, 0, g_ptr_array_index (previous->inputs, 0));
  return TRUE;
}

/* Sorts axes normalized against rank; FALSE when one is out of range or
 * repeated. */
static gboolean
normalize_axes (gint64 *axes, guint n, int rank)
{
  for (guint k = 0; k < n; k++)
    {
      if (axes[k] < -rank || axes[k] >= rank)
        return FALSE;
      if (axes[k] < 0)
        axes[k] += rank;
    }
  for (guint k = 1; k < n; k++)   /* insertion sort: a handful of axes */
    for (guint j = k; j > 0 && axes[j - 1] > axes[j]; j--)
      {
        gint64 t = axes[j];
        axes[j] = axes[j - 1];
        axes[j - 1] = t;
      }
  for (guint k = 1; k < n; k++)
    if (axes[k] == axes[k - 1])
      return FALSE;
  return TRUE;
}

static int
output_rank (GraftInference *inference, GraftNode *node)
{
  GraftDType dtype;
  const GraftShape *shape;
  GraftValue *out = node->outputs->len == 1 ? g_ptr_array_index (node->outputs, 0) : NULL;

  return out != NULL && graft_edit_value_type (inference, out, &dtype, &shape) && shape != NULL ? shape->rank : -1;
}

/* The node's axes become values, in the form (input or attribute) it had. */
static void
set_axes (GraftGraph *graph, GraftNode *node, const gint64 *axes, guint n)
{
  if (node->inputs->len >= 2 && g_ptr_array_index (node->inputs, 1) != NULL)
    graft_node_set_input (node, 1, graft_graph_add_int64_constant (graph, "axes", axes, n, FALSE));
  else
    {
      GraftAttribute *attribute = graft_node_get_attribute (node, "axes");
      g_array_set_size (attribute->ints, n);
      memcpy (attribute->ints->data, axes, sizeof (gint64) * n);
    }
}

/* Unsqueeze(Unsqueeze(x, a1), a2) = Unsqueeze(x, a2 ∪ a1 placed among the
 * final dims a2 leaves free); the first stays for its other readers. */
static gboolean
merge_unsqueezes (GraftInference *inference, GraftGraph *graph, GraftNode *node)
{
  GraftValue *in = node->inputs->len >= 1 ? g_ptr_array_index (node->inputs, 0) : NULL;
  GraftNode *previous = in ? in->producer : NULL;
  g_autofree gint64 *first = NULL, *second = NULL, *merged = NULL;
  guint n1, n2;
  int rank;

  if (strcmp (node->op, "onnx::Unsqueeze") != 0 || previous == NULL || strcmp (previous->op, "onnx::Unsqueeze") != 0
      || previous->graph != graph || (rank = output_rank (inference, node)) < 0
      || (first = axes_of (previous, &n1)) == NULL || (second = axes_of (node, &n2)) == NULL
      || (guint) rank < n1 + n2 || !normalize_axes (first, n1, rank - (int) n2) || !normalize_axes (second, n2, rank)
      || g_ptr_array_index (previous->inputs, 0) == NULL)
    return FALSE;
  merged = g_new (gint64, n1 + n2);
  memcpy (merged, second, sizeof (gint64) * n2);
  /* position p of the first's output is the p-th final dim the second
   * does not insert */
  for (guint k = 0; k < n1; k++)
    {
      gint64 free_seen = -1, position = 0;
      for (guint j = 0;; position++)
        {
          if (j < n2 && second[j] == position)
            {
              j++;
              continue;
            }
          if (++free_seen == first[k])
            break;
        }
      merged[n2 + k] = position;
    }
  if (!normalize_axes (merged, n1 + n2, rank))
    return FALSE;
  set_axes (graph, node, merged, n1 + n2);
  graft_node_set_input (node, 0, g_ptr_array_index (previous->inputs, 0));
  return TRUE;
}

/* Unsqueeze(Reshape(x, target), axes) = Reshape(x, target with 1s at
 * axes), and Squeeze(Reshape(x, target), axes) the same without target's
 * 1s there; the Reshape stays for its other readers. A 0 that copies a
 * dim of x would move with the inserted dims, so then nothing is done. */
static gboolean
merge_into_constant_reshape (GraftInference *inference, GraftGraph *graph, GraftNode *node)
{
  GraftValue *in = node->inputs->len >= 1 ? g_ptr_array_index (node->inputs, 0) : NULL;
  GraftNode *reshape = in ? in->producer : NULL;
  gboolean unsqueeze = strcmp (node->op, "onnx::Unsqueeze") == 0;
  g_autofree gint64 *target = NULL, *axes = NULL, *merged = NULL;
  guint n_target, n_axes, n = 0;
  int rank;

  if ((!unsqueeze && strcmp (node->op, "onnx::Squeeze") != 0) || reshape == NULL || reshape->graph != graph
      || strcmp (reshape->op, "onnx::Reshape") != 0 || reshape->inputs->len != 2
      || g_ptr_array_index (reshape->inputs, 0) == NULL
      || (target = graft_edit_int64_values (g_ptr_array_index (reshape->inputs, 1), &n_target)) == NULL
      || (axes = axes_of (node, &n_axes)) == NULL || n_axes == 0
      || !normalize_axes (axes, n_axes, rank = unsqueeze ? (int) (n_target + n_axes) : (int) n_target))
    return FALSE;
  if (graft_node_attr_int (reshape, "allowzero", 0) == 0)
    for (guint k = 0; k < n_target; k++)
      if (target[k] == 0)
        return FALSE;
  merged = g_new (gint64, rank);
  for (int position = 0, next_target = 0, next_axis = 0; position < rank; position++)
    {
      gboolean at_axis = next_axis < (int) n_axes && axes[next_axis] == position;

      if (at_axis)
        next_axis++;
      if (unsqueeze)
        merged[n++] = at_axis ? 1 : target[next_target++];
      else if (!at_axis)
        merged[n++] = target[position];
      else if (target[position] != 1)
        return FALSE;   /* squeezing a dim not known to be 1 */
    }
  node->op_type = g_intern_string ("Reshape");
  node->op = g_intern_string ("onnx::Reshape");
  g_ptr_array_set_size (node->attributes, 0);
  if (graft_node_attr_int (reshape, "allowzero", 0) != 0)
    graft_node_add_attribute (node, graft_attribute_new_int ("allowzero", 1));
  graft_node_set_input (node, 0, g_ptr_array_index (reshape->inputs, 0));
  if (node->inputs->len < 2)
    graft_node_add_input (node, NULL);
  graft_node_set_input (node, 1, graft_graph_add_int64_constant (graph, "shape", merged, n, FALSE));
  return TRUE;
}

/* Reduce*(x, axes, keepdims=0) read only by Unsqueeze(·, the same axes) is
 * Reduce*(x, axes, keepdims=1): the Reduce writes the Unsqueeze's output
 * (with its declared type) and the Unsqueeze goes. */
static gboolean
keep_reduced_dims (GraftInference *inference, GraftGraph *graph, GraftNode *node)
{
  GraftValue *in = node->inputs->len >= 1 ? g_ptr_array_index (node->inputs, 0) : NULL;
  GraftValue *out = node->outputs->len == 1 ? g_ptr_array_index (node->outputs, 0) : NULL;
  GraftNode *reduce = in ? in->producer : NULL;
  GraftAttribute *keepdims;
  g_autofree gint64 *reduced = NULL, *inserted = NULL;
  guint n1, n2;
  int rank;

  if (strcmp (node->op, "onnx::Unsqueeze") != 0 || out == NULL || reduce == NULL || reduce->graph != graph
      || !g_str_has_prefix (reduce->op, "onnx::Reduce") || reduce->outputs->len != 1 || in->consumers->len != 1
      || in->is_graph_output || (keepdims = graft_node_get_attribute (reduce, "keepdims")) == NULL
      || keepdims->type != GRAFT_ATTR_INT || keepdims->i != 0 || (rank = output_rank (inference, node)) < 0
      || (reduced = axes_of (reduce, &n1)) == NULL || (inserted = axes_of (node, &n2)) == NULL || n1 != n2
      || n1 == 0 || !normalize_axes (reduced, n1, rank) || !normalize_axes (inserted, n2, rank)
      || memcmp (reduced, inserted, sizeof (gint64) * n1) != 0)
    return FALSE;
  keepdims->i = 1;
  return graft_graph_bypass_into_output (graph, node, 0);
}

guint
graft_edit_simplify (GraftInference *inference, GraftGraph *graph)
{
  guint simplified = 0;

  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      int passed = neutral_operand (inference, node);

      if (passed < 0 && does_nothing (inference, node))
        passed = 0;
      if (passed >= 0 && graft_graph_bypass (graph, node, passed))
        {
          simplified++;
          i--;
          continue;
        }
      if (keep_reduced_dims (inference, graph, node))
        {
          simplified++;
          i--;   /* this node is gone */
          continue;
        }
      if (merge_transposes (graph, node) || flatten_concats (graph, node) || merge_slices (inference, graph, node)
          || merge_unsqueezes (inference, graph, node) || merge_into_constant_reshape (inference, graph, node))
        {
          simplified++;
          i--;   /* the merged perm may be the identity */
          continue;
        }
      if (skip_shape_only_input (inference, graph, node) || merge_into_reshape (inference, graph, node))
        simplified++;
    }
  return simplified;
}
