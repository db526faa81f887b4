/* The simplifier's fusions: subgraphs that exporters write out op by op
 * become the opset's own operator, each a row of the operation table usable
 * on its own and a pass of "simplify", and each only where the model's
 * ONNX opset has the operator (a file of an older opset is left alone and
 * the note says why):
 *   GELU, erf form  x·½·(1 + erf(x/√2))               → Gelu          (opset 20)
 *   GELU, tanh form x·½·(1 + tanh(√(2/π)(x + 0.044715x³)))
 *                                                     → Gelu tanh     (opset 20)
 *   LayerNorm       (x − mean)/√(var + ε)·γ + β over the last axes
 *                                                     → LayerNormalization (17);
 *                   over the channels of NCHW (SAM's, ConvNeXt's LayerNorm2d)
 *                   the same between two Transposes
 *   RMSNorm         x/√(mean(x²) + ε)·γ               → RMSNormalization (23)
 *   attention       softmax(Q·Kᵀ·s + mask)·V          → Attention     (23)
 * Every value inside a match must be read only inside it: the last node
 * becomes the fused operator (its output keeps its name and readers), the
 * others go with the dead code. */
#include "edit/edit-private.h"
#include "ir/graph-surgery.h"
#include "runtime/fusion-patterns.h"
#include "runtime/op.h"

#include <math.h>
#include <string.h>

#define MATCH_MAX_NODES 16

typedef struct {
  GraftNode *nodes[MATCH_MAX_NODES];
  guint n_nodes;
} Match;

static gboolean
is_onnx_op (GraftNode *node, const char *op_type)
{
  return node != NULL && strcmp (node->domain, "onnx") == 0 && strcmp (node->op_type, op_type) == 0;
}

static GraftValue *
input_at (GraftNode *node, guint i)
{
  return node != NULL && i < node->inputs->len ? g_ptr_array_index (node->inputs, i) : NULL;
}

static GraftValue *
output_of (GraftNode *node)
{
  return node != NULL && node->outputs->len == 1 ? g_ptr_array_index (node->outputs, 0) : NULL;
}

static void
match_add (Match *match, GraftNode *node)
{
  g_assert (match->n_nodes < MATCH_MAX_NODES);
  match->nodes[match->n_nodes++] = node;
}

/* The node of graph that produces value, or NULL. */
static GraftNode *
producer_in (GraftGraph *graph, GraftValue *value)
{
  return value != NULL && value->producer != NULL && value->producer->graph == graph ? value->producer : NULL;
}

/* The only reader of node's single output, or NULL. */
static GraftNode *
sole_reader (GraftNode *node)
{
  GraftValue *out;

  return graft_fusion_sole_reader (node, &out);
}

/* value is a float32 scalar constant within a relative 1e-4 of expected
 * (exporters round √2, √(2/π) to float). */
static gboolean
is_scalar (GraftValue *value, double expected)
{
  float c;

  return graft_fusion_constant_scalar (value, &c) && fabs (c - expected) <= 1e-4 * MAX (1.0, fabs (expected));
}

/* node is the binary op_type with from as one operand (the first, unless
 * commutative allows the second): the other operand, or NULL. */
static GraftValue *
operand_besides (GraftNode *node, const char *op_type, GraftValue *from, gboolean commutative)
{
  if (!is_onnx_op (node, op_type) || node->inputs->len != 2 || node->outputs->len != 1
      || input_at (node, 0) == input_at (node, 1))
    return NULL;
  if (input_at (node, 0) == from)
    return input_at (node, 1);
  return commutative && input_at (node, 1) == from ? input_at (node, 0) : NULL;
}

/* node is x·c or x/(1/c) for the scalar c. */
static gboolean
scales_by (GraftNode *node, GraftValue *x, double c)
{
  return is_scalar (operand_besides (node, "Mul", x, TRUE), c) || is_scalar (operand_besides (node, "Div", x, FALSE), 1 / c);
}

/* Every value a node of match gives, but the last node's output, is read
 * only by nodes of match and is no graph output. */
static gboolean
match_is_closed (Match *match)
{
  for (guint i = 0; i < match->n_nodes; i++)
    for (guint k = 0; k < match->nodes[i]->outputs->len; k++)
      {
        GraftValue *out = g_ptr_array_index (match->nodes[i]->outputs, k);

        if (out == NULL || (i == match->n_nodes - 1 && k == 0))
          continue;
        if (out->is_graph_output)
          return FALSE;
        for (guint c = 0; c < out->consumers->len; c++)
          {
            gboolean inside = FALSE;
            for (guint j = 0; j < match->n_nodes && !inside; j++)
              inside = match->nodes[j] == g_ptr_array_index (out->consumers, c);
            if (!inside)
              return FALSE;
          }
      }
  return match->n_nodes > 0 && match->nodes[match->n_nodes - 1]->outputs->len == 1;
}

/* The last node of match becomes domain-less op_type reading inputs
 * (NULL: an omitted optional input), named in the match's scope; the
 * others are left for the dead code. */
static GraftNode *
become (GraftGraph *graph, Match *match, const char *op_type, GraftValue *const *inputs, guint n_inputs)
{
  GraftNode *node = match->nodes[match->n_nodes - 1];
  const char *slash = node->name ? strrchr (node->name, '/') : NULL;
  g_autofree char *hint = slash ? g_strdup_printf ("%.*s/%s", (int) (slash - node->name), node->name, op_type)
                                : g_strdup (op_type);
  g_autofree char *op = g_strconcat ("onnx::", op_type, NULL);

  node->domain = g_intern_string ("onnx");
  node->op_type = g_intern_string (op_type);
  node->op = g_intern_string (op);
  g_ptr_array_set_size (node->attributes, 0);
  for (guint i = 0; i < n_inputs; i++)
    {
      if (i < node->inputs->len)
        graft_node_set_input (node, i, inputs[i]);
      else
        graft_node_add_input (node, inputs[i]);
    }
  while (node->inputs->len > n_inputs)
    {
      graft_node_set_input (node, node->inputs->len - 1, NULL);
      g_ptr_array_set_size (node->inputs, node->inputs->len - 1);
    }
  g_free (node->name);
  node->name = graft_edit_unique_node_name (graph, hint);
  return node;
}

/* The inference's dtype and rank of value, FALSE when unknown. */
static gboolean
value_rank (GraftInference *inference, GraftValue *value, GraftDType *dtype, int *rank)
{
  const GraftShape *shape;

  if (value == NULL || !graft_edit_value_type (inference, value, dtype, &shape) || shape == NULL || shape->rank < 0)
    return FALSE;
  *rank = shape->rank;
  return TRUE;
}

/* ---------- GELU ---------- */

/* From the value one_plus = 1 + f(x) (its producer already in match) to
 * the end of ½·x·one_plus, in the three orders exporters write it. */
static gboolean
match_gelu_tail (GraftGraph *graph, Match *match, GraftValue *x, GraftValue *one_plus)
{
  GraftNode *reader = sole_reader (one_plus->producer);
  GraftValue *other = operand_besides (reader, "Mul", one_plus, TRUE);
  GraftNode *half_x = producer_in (graph, other);

  if (other == NULL)
    return FALSE;
  if (other == x)
    {
      /* (x · (1 + f)) · ½ */
      GraftNode *half = sole_reader (reader);
      match_add (match, reader);
      if (!scales_by (half, output_of (reader), 0.5))
        return FALSE;
      match_add (match, half);
      return TRUE;
    }
  if (scales_by (half_x, x, 0.5))
    {
      /* (x · ½) · (1 + f), GPT-2's */
      match_add (match, half_x);
      match_add (match, reader);
      return TRUE;
    }
  if (is_scalar (other, 0.5))
    {
      /* ((1 + f) · ½) · x */
      GraftNode *times_x = sole_reader (reader);
      match_add (match, reader);
      if (operand_besides (times_x, "Mul", output_of (reader), TRUE) != x)
        return FALSE;
      match_add (match, times_x);
      return TRUE;
    }
  return FALSE;
}

/* erf(x/√2) (or x·(1/√2)) + 1, then the tail: Gelu(x). */
static gboolean
match_gelu_erf (GraftGraph *graph, GraftNode *erf, Match *match, GraftValue **x)
{
  GraftNode *scaled = producer_in (graph, input_at (erf, 0));
  GraftNode *add = sole_reader (erf);

  if (!is_onnx_op (erf, "Erf") || scaled == NULL || scaled->inputs->len != 2)
    return FALSE;
  *x = input_at (scaled, 0);
  if (!scales_by (scaled, *x, 1 / G_SQRT2))
    {
      *x = input_at (scaled, 1);
      if (!scales_by (scaled, *x, 1 / G_SQRT2))
        return FALSE;
    }
  match_add (match, scaled);
  match_add (match, erf);
  if (!is_scalar (operand_besides (add, "Add", output_of (erf), TRUE), 1.0))
    return FALSE;
  match_add (match, add);
  return match_gelu_tail (graph, match, *x, output_of (add));
}

/* x³ as Pow(x, 3) or x·x·x. */
static gboolean
match_cube (GraftGraph *graph, GraftValue *cube, Match *match, GraftValue *x)
{
  GraftNode *node = producer_in (graph, cube);
  GraftValue *other;
  GraftNode *square;

  if (is_onnx_op (node, "Pow") && input_at (node, 0) == x && is_scalar (input_at (node, 1), 3.0))
    {
      match_add (match, node);
      return TRUE;
    }
  if ((other = operand_besides (node, "Mul", x, TRUE)) == NULL || (square = producer_in (graph, other)) == NULL
      || operand_besides (square, "Mul", x, TRUE) != x)
    return FALSE;
  match_add (match, square);
  match_add (match, node);
  return TRUE;
}

/* tanh(√(2/π)·(x + 0.044715·x³)) + 1, then the tail: Gelu(x, tanh). */
static gboolean
match_gelu_tanh (GraftGraph *graph, GraftNode *tanh_node, Match *match, GraftValue **x)
{
  GraftNode *scaled = producer_in (graph, input_at (tanh_node, 0));
  GraftNode *inner, *cubic, *add;
  GraftValue *inner_value;
  int slot;

  if (!is_onnx_op (tanh_node, "Tanh") || scaled == NULL || scaled->inputs->len != 2)
    return FALSE;
  for (slot = 0; slot < 2; slot++)
    if (scales_by (scaled, input_at (scaled, slot), sqrt (2 / G_PI)))
      break;
  if (slot == 2 || (inner = producer_in (graph, inner_value = input_at (scaled, slot))) == NULL
      || !is_onnx_op (inner, "Add") || inner->inputs->len != 2)
    return FALSE;
  /* inner = x + 0.044715·x³: x is the operand that is not the product */
  for (slot = 0; slot < 2; slot++)
    {
      Match attempt = *match;
      *x = input_at (inner, slot);
      cubic = producer_in (graph, input_at (inner, 1 - slot));
      if (cubic == NULL || cubic->inputs->len != 2)
        continue;
      for (int c = 0; c < 2; c++)
        if (is_scalar (input_at (cubic, 1 - c), 0.044715) && is_onnx_op (cubic, "Mul")
            && match_cube (graph, input_at (cubic, c), &attempt, *x))
          {
            *match = attempt;
            match_add (match, cubic);
            match_add (match, inner);
            match_add (match, scaled);
            match_add (match, tanh_node);
            add = sole_reader (tanh_node);
            if (!is_scalar (operand_besides (add, "Add", output_of (tanh_node), TRUE), 1.0))
              return FALSE;
            match_add (match, add);
            return match_gelu_tail (graph, match, *x, output_of (add));
          }
    }
  return FALSE;
}

/* ---------- LayerNorm, RMSNorm ---------- */

/* The axes a ReduceMean keeping its dims reduces (attribute before opset
 * 18, input from 18 on), made non-negative for rank; NULL when not
 * constant or it reduces everything by default. */
static gint64 *
mean_axes (GraftNode *mean, int rank, guint *n)
{
  const gint64 *attribute;
  gint64 *axes = NULL;

  if (!is_onnx_op (mean, "ReduceMean") || graft_node_attr_int (mean, "keepdims", 1) != 1 || mean->outputs->len != 1)
    return NULL;
  if (input_at (mean, 1) != NULL)
    axes = graft_edit_int64_values (input_at (mean, 1), n);
  else if ((attribute = graft_node_attr_ints (mean, "axes", n)) != NULL)
    axes = g_memdup2 (attribute, sizeof (gint64) * *n);
  if (axes == NULL || *n == 0)
    {
      g_free (axes);
      return NULL;
    }
  for (guint k = 0; k < *n; k++)
    if (axes[k] < 0)
      axes[k] += rank;
  return axes;
}

static gboolean
same_axes (const gint64 *a, guint n_a, const gint64 *b, guint n_b)
{
  return n_a == n_b && memcmp (a, b, sizeof (gint64) * n_a) == 0;
}

/* Where the normalised axes are: the trailing ones (LayerNormalization's
 * own), or the channel axis 1 of a rank-4 NCHW tensor. */
typedef enum { AXES_NONE, AXES_TRAILING, AXES_CHANNELS } AxesKind;

static AxesKind
axes_kind (const gint64 *axes, guint n, int rank, int *first)
{
  for (guint k = 0; k < n; k++)
    if (axes[k] != rank - (gint64) n + k)
      {
        if (n == 1 && axes[0] == 1 && rank == 4)
          return AXES_CHANNELS;
        return AXES_NONE;
      }
  *first = rank - (int) n;
  return rank > 0 ? AXES_TRAILING : AXES_NONE;
}

/* v² as Pow(v, 2) or v·v. */
static GraftNode *
square_of (GraftNode *node, GraftValue *v)
{
  if (is_onnx_op (node, "Pow") && input_at (node, 0) == v && is_scalar (input_at (node, 1), 2.0))
    return node;
  if (is_onnx_op (node, "Mul") && node->inputs->len == 2 && input_at (node, 0) == v && input_at (node, 1) == v)
    return node;
  return NULL;
}

/* From √(ms + ε) read by the ReduceMean's Add to d/√(…) (Div, or
 * Reciprocal and Mul, or Pow(·, -0.5) and Mul): ε and the normalised
 * value's producer. */
static GraftNode *
match_inverse_root (GraftGraph *graph, Match *match, GraftNode *mean, GraftValue *d, float *epsilon)
{
  GraftNode *add = sole_reader (mean);
  GraftValue *eps = operand_besides (add, "Add", output_of (mean), TRUE);
  GraftNode *root, *next;

  if (eps == NULL || !graft_fusion_constant_scalar (eps, epsilon))
    return NULL;
  match_add (match, add);
  root = sole_reader (add);
  if (is_onnx_op (root, "Pow") && is_scalar (input_at (root, 1), -0.5))
    {
      match_add (match, root);
      next = sole_reader (root);
      return operand_besides (next, "Mul", output_of (root), TRUE) == d ? (match_add (match, next), next) : NULL;
    }
  if (!is_onnx_op (root, "Sqrt"))
    return NULL;
  match_add (match, root);
  next = sole_reader (root);
  if (is_onnx_op (next, "Div") && input_at (next, 0) == d && input_at (next, 1) == output_of (root))
    {
      match_add (match, next);
      return next;
    }
  if (is_onnx_op (next, "Reciprocal") || (is_onnx_op (next, "Div") && is_scalar (input_at (next, 0), 1.0)))
    {
      GraftNode *times = sole_reader (next);
      match_add (match, next);
      if (operand_besides (times, "Mul", output_of (next), TRUE) != d)
        return NULL;
      match_add (match, times);
      return times;
    }
  return NULL;
}

/* A float32 constant of size elements that broadcasts over the
 * normalised axes only: its shape is [.., size] with ones before (or, for
 * channels, [size, 1, 1]). */
static GraftTensor *
affine_constant (GraftValue *value, gint64 size, AxesKind kind)
{
  GraftTensor *c = graft_edit_constant_of (value);

  if (c == NULL || c->dtype != GRAFT_DTYPE_FLOAT32 || graft_tensor_get_numel (c) != size
      || graft_tensor_get_data (c, NULL) == NULL)
    return NULL;
  if (kind == AXES_CHANNELS)
    return c->rank >= 3 && c->dims[c->rank - 3] == size ? c : NULL;
  return c->rank >= 1 && c->dims[c->rank - 1] == size ? c : NULL;
}

/* An optional · γ then + β after the normalised value: the scale and
 * bias constants (NULL when absent), the node giving the result. */
static GraftNode *
match_affine (Match *match, GraftNode *normalised, gint64 size, AxesKind kind, gboolean with_bias,
              GraftTensor **scale, GraftTensor **bias)
{
  GraftNode *next = sole_reader (normalised), *end = normalised;
  GraftValue *other;

  *scale = *bias = NULL;
  if ((other = operand_besides (next, "Mul", output_of (end), TRUE)) != NULL
      && (*scale = affine_constant (other, size, kind)) != NULL)
    {
      match_add (match, next);
      end = next;
      next = sole_reader (next);
    }
  if (with_bias && (other = operand_besides (next, "Add", output_of (end), TRUE)) != NULL
      && (*bias = affine_constant (other, size, kind)) != NULL)
    {
      match_add (match, next);
      end = next;
    }
  return end;
}

/* The normalised size: the product of x's static dims at the axes, or -1. */
static gint64
normalised_size (GraftInference *inference, GraftValue *x, const gint64 *axes, guint n)
{
  GraftDType dtype;
  const GraftShape *shape;
  gint64 size = 1;

  if (!graft_edit_value_type (inference, x, &dtype, &shape) || shape == NULL)
    return -1;
  for (guint k = 0; k < n; k++)
    {
      if (axes[k] < 0 || axes[k] >= shape->rank || shape->dims[axes[k]].kind != GRAFT_DIM_FIXED)
        return -1;
      size *= shape->dims[axes[k]].value;
    }
  return size;
}

/* A float32 initializer of dims holding tensor's elements, or ones when
 * tensor is NULL. */
static GraftValue *
affine_initializer (GraftGraph *graph, const char *hint, GraftTensor *tensor, int rank, const gint64 *dims)
{
  GraftValue *value = graft_graph_new_anonymous_value (graph, hint);
  GraftTensor *result = graft_tensor_new (value->name, GRAFT_DTYPE_FLOAT32, rank, dims);
  gint64 n = graft_tensor_get_numel (result);
  g_autoptr(GBytes) bytes = NULL;

  if (tensor != NULL)
    bytes = g_bytes_ref (graft_tensor_get_data (tensor, NULL));
  else
    {
      float *ones = g_new (float, MAX (n, 1));
      for (gint64 i = 0; i < n; i++)
        ones[i] = 1.0f;
      bytes = g_bytes_new_take (ones, sizeof (float) * n);
    }
  graft_tensor_set_data (result, bytes, NULL);
  graft_graph_add_initializer (graph, value, result);
  value->dtype = GRAFT_DTYPE_FLOAT32;
  graft_shape_clear (&value->shape);
  graft_shape_init_fixed (&value->shape, rank, dims);
  return value;
}

typedef struct {
  GraftValue *x;
  AxesKind kind;
  int first_axis;
  gint64 size;          /* elements of the normalised axes */
  int n_axes;
  gint64 axis_dims[8];       /* the normalised axes' dims */
  float epsilon;
  GraftTensor *scale, *bias;
} Normalization;

/* The start of a normalisation over x: the ReduceMean mean of `of`,
 * normalised axes read from it. */
static gboolean
normalization_axes (GraftInference *inference, GraftNode *mean, GraftValue *x, Normalization *norm,
                    gint64 **axes, guint *n)
{
  GraftDType dtype;
  int rank;
  const GraftShape *shape;

  if (!value_rank (inference, x, &dtype, &rank) || dtype != GRAFT_DTYPE_FLOAT32
      || (*axes = mean_axes (mean, rank, n)) == NULL)
    return FALSE;
  norm->x = x;
  norm->kind = axes_kind (*axes, *n, rank, &norm->first_axis);
  if (norm->kind == AXES_NONE || *n > G_N_ELEMENTS (norm->axis_dims)
      || (norm->size = normalised_size (inference, x, *axes, *n)) <= 0)
    return FALSE;
  graft_edit_value_type (inference, x, &dtype, &shape);
  norm->n_axes = (int) *n;
  for (guint k = 0; k < *n; k++)
    norm->axis_dims[k] = shape->dims[(*axes)[k]].value;
  return TRUE;
}

/* ReduceMean(x) → Sub(x, ·) → square → ReduceMean → + ε → √ → divide →
 * [· γ] [+ β], opened by the first ReduceMean. */
static gboolean
match_layer_norm (GraftGraph *graph, GraftInference *inference, GraftNode *mean, Match *match, Normalization *norm)
{
  g_autofree gint64 *axes = NULL, *var_axes = NULL;
  guint n, n_var;
  GraftNode *sub = NULL, *square = NULL, *variance, *normalised;
  GraftValue *d;
  int rank;

  if (!is_onnx_op (mean, "ReduceMean") || !normalization_axes (inference, mean, input_at (mean, 0), norm, &axes, &n))
    return FALSE;
  rank = norm->kind == AXES_CHANNELS ? 4 : norm->first_axis + norm->n_axes;
  /* the mean's reader is the Sub; the Sub's readers the square and the divide */
  sub = sole_reader (mean);
  if (!is_onnx_op (sub, "Sub") || input_at (sub, 0) != norm->x || input_at (sub, 1) != output_of (mean))
    return FALSE;
  d = output_of (sub);
  for (guint c = 0; d != NULL && c < d->consumers->len && square == NULL; c++)
    square = square_of (g_ptr_array_index (d->consumers, c), d);
  if (square == NULL || (variance = sole_reader (square)) == NULL
      || (var_axes = mean_axes (variance, rank, &n_var)) == NULL
      || !same_axes (axes, n, var_axes, n_var) || input_at (variance, 0) != output_of (square))
    return FALSE;
  match_add (match, mean);
  match_add (match, sub);
  match_add (match, square);
  match_add (match, variance);
  if ((normalised = match_inverse_root (graph, match, variance, d, &norm->epsilon)) == NULL)
    return FALSE;
  match_affine (match, normalised, norm->size, norm->kind, TRUE, &norm->scale, &norm->bias);
  return TRUE;
}

/* square(x) → ReduceMean → + ε → √ → divide → [· γ], opened by the ReduceMean. */
static gboolean
match_rms_norm (GraftGraph *graph, GraftInference *inference, GraftNode *mean, Match *match, Normalization *norm)
{
  GraftNode *square = producer_in (graph, input_at (mean, 0));
  GraftValue *x = square ? input_at (square, 0) : NULL;
  g_autofree gint64 *axes = NULL;
  guint n;
  GraftNode *normalised;

  if (!is_onnx_op (mean, "ReduceMean") || square == NULL || square_of (square, x) == NULL
      || !normalization_axes (inference, mean, x, norm, &axes, &n) || norm->kind != AXES_TRAILING)
    return FALSE;
  match_add (match, square);
  match_add (match, mean);
  if ((normalised = match_inverse_root (graph, match, mean, x, &norm->epsilon)) == NULL)
    return FALSE;
  match_affine (match, normalised, norm->size, norm->kind, FALSE, &norm->scale, &norm->bias);
  return TRUE;
}

/* A new node op_type (in, [second]) named in near's scope: its output. */
static GraftValue *
add_scoped_node (GraftGraph *graph, GraftNode *near, const char *op_type, GraftValue *in, GraftValue *second)
{
  const char *slash = near->name ? strrchr (near->name, '/') : NULL;
  g_autofree char *hint = slash ? g_strdup_printf ("%.*s/%s", (int) (slash - near->name), near->name, op_type)
                                : g_strdup (op_type);
  g_autofree char *name = graft_edit_unique_node_name (graph, hint);
  GraftNode *node = graft_graph_add_node (graph, "", op_type, name);
  GraftValue *out = graft_graph_new_anonymous_value (graph, name);

  graft_node_add_input (node, in);
  if (second != NULL)
    graft_node_add_input (node, second);
  graft_node_add_output (node, out);
  return out;
}

static GraftValue *
add_transpose (GraftGraph *graph, GraftNode *near, GraftValue *in, const gint64 perm[4])
{
  GraftValue *out = add_scoped_node (graph, near, "Transpose", in, NULL);

  graft_node_add_attribute (out->producer, graft_attribute_new_ints ("perm", perm, 4));
  return out;
}

/* The match's last node becomes op_type over norm (with a bias when
 * with_bias and there is one); channel-first norms between two Transposes. */
static void
replace_normalization (GraftGraph *graph, Match *match, Normalization *norm, const char *op_type, gboolean with_bias)
{
  static const gint64 to_last[4] = { 0, 2, 3, 1 }, back[4] = { 0, 3, 1, 2 };
  GraftNode *last = match->nodes[match->n_nodes - 1], *node;
  GraftValue *x = norm->x, *inputs[3];
  gboolean channels = norm->kind == AXES_CHANNELS;
  GraftValue *normalised = NULL;

  if (channels)
    {
      /* the last node gives the Transpose back; a new node normalises */
      x = add_transpose (graph, last, x, to_last);
      node = graft_graph_add_node (graph, "", op_type, "");
      normalised = graft_graph_new_anonymous_value (graph, op_type);
      graft_node_add_input (node, x);
      graft_node_add_input (node, affine_initializer (graph, "scale", norm->scale, 1, &norm->size));
      if (with_bias && norm->bias != NULL)
        graft_node_add_input (node, affine_initializer (graph, "bias", norm->bias, 1, &norm->size));
      graft_node_add_output (node, normalised);
      inputs[0] = normalised;
      last = become (graph, match, "Transpose", inputs, 1);
      graft_node_add_attribute (last, graft_attribute_new_ints ("perm", back, 4));
      /* named in the scope of the nodes it replaces, as the Transpose is */
      g_free (node->name);
      node->name = g_strdup ("");
      {
        const char *slash = strrchr (last->name, '/');
        g_autofree char *hint = slash ? g_strdup_printf ("%.*s/%s", (int) (slash - last->name), last->name, op_type)
                                      : g_strdup (op_type);
        g_free (node->name);
        node->name = graft_edit_unique_node_name (graph, hint);
      }
    }
  else
    {
      inputs[0] = x;
      inputs[1] = affine_initializer (graph, "scale", norm->scale, norm->n_axes, norm->axis_dims);
      inputs[2] = with_bias && norm->bias != NULL
                    ? affine_initializer (graph, "bias", norm->bias, norm->n_axes, norm->axis_dims) : NULL;
      node = become (graph, match, op_type, inputs, inputs[2] != NULL ? 3 : 2);
    }
  graft_node_add_attribute (node, graft_attribute_new_int ("axis", channels ? -1 : norm->first_axis));
  graft_node_add_attribute (node, graft_attribute_new_float ("epsilon", norm->epsilon));
}

/* ---------- attention ---------- */

typedef struct {
  GraftValue *q, *key_transposed, *v, *mask;
  double scale;
} AttentionMatch;

/* operand, or its input when it is a Mul by a scalar that only the node
 * reads (torch.export's SDPA scales Q and Kᵀ by √scale each): *scale
 * multiplied by it. */
static GraftValue *
unscaled_operand (GraftGraph *graph, Match *match, GraftValue *operand, double *scale)
{
  GraftNode *mul = producer_in (graph, operand);
  float c, ignored;

  if (!is_onnx_op (mul, "Mul") || mul->inputs->len != 2 || operand->consumers->len != 1 || operand->is_graph_output)
    return operand;
  for (int slot = 0; slot < 2; slot++)
    if (!graft_fusion_constant_scalar (input_at (mul, slot), &ignored)
        && graft_fusion_constant_scalar (input_at (mul, 1 - slot), &c))
      {
        *scale *= c;
        match_add (match, mul);
        return input_at (mul, slot);
      }
  return operand;
}

/* A float32 constant whose elements are all finite. */
static gboolean
is_finite_constant (GraftValue *value)
{
  GraftTensor *c = graft_edit_constant_of (value);
  gint64 n;

  if (c == NULL || c->dtype != GRAFT_DTYPE_FLOAT32 || graft_tensor_get_data (c, NULL) == NULL)
    return FALSE;
  n = graft_tensor_get_numel (c);
  for (gint64 i = 0; i < n; i++)
    if (!isfinite (graft_tensor_get_element_as_double (c, i)))
      return FALSE;
  return TRUE;
}

/* MatMul([Q·a], [Kᵀ·b]) → [· s or / d] → [+ mask] → Softmax (last axis)
 * → [Cast to float] → [Where (IsNaN (·), 0, ·)] → MatMul (·, V), opened by
 * the first MatMul: the torch.onnx exporter's eager attention and
 * torch.export's decomposed scaled_dot_product_attention. */
static gboolean
match_attention (GraftGraph *graph, GraftModel *model, GraftNode *qk, Match *match, AttentionMatch *attention)
{
  GraftNode *node, *softmax, *av;
  GraftValue *other;
  float c;

  attention->scale = 1.0;
  if (!is_onnx_op (qk, "MatMul") || qk->inputs->len != 2 || input_at (qk, 0) == NULL || input_at (qk, 1) == NULL
      || input_at (qk, 0) == input_at (qk, 1))
    return FALSE;
  attention->q = unscaled_operand (graph, match, input_at (qk, 0), &attention->scale);
  attention->key_transposed = unscaled_operand (graph, match, input_at (qk, 1), &attention->scale);
  match_add (match, qk);
  node = sole_reader (qk);
  if ((other = operand_besides (node, "Mul", output_of (qk), TRUE)) != NULL && graft_fusion_constant_scalar (other, &c))
    attention->scale *= c;
  else if ((other = operand_besides (node, "Div", output_of (qk), FALSE)) != NULL
           && graft_fusion_constant_scalar (other, &c) && c != 0)
    attention->scale /= c;
  else
    other = NULL;
  if (other != NULL)
    {
      match_add (match, node);
      node = sole_reader (node);
    }
  if ((other = operand_besides (node, "Add", output_of (match->nodes[match->n_nodes - 1]), TRUE)) != NULL)
    {
      attention->mask = other;
      match_add (match, node);
      node = sole_reader (node);
    }
  softmax = node;
  if (!is_onnx_op (softmax, "Softmax") || softmax->inputs->len != 1
      || (graft_node_get_attribute (softmax, "axis") != NULL ? graft_node_attr_int (softmax, "axis", 0) != -1
                                                             : graft_model_get_opset (model, "onnx") < 13))
    return FALSE;
  match_add (match, softmax);
  node = softmax;
  av = sole_reader (softmax);
  if (is_onnx_op (av, "Cast") && graft_node_attr_int (av, "to", 0) == GRAFT_DTYPE_FLOAT32)
    {
      match_add (match, av);
      node = av;
      av = sole_reader (av);
    }
  if (av == NULL && output_of (node) != NULL && output_of (node)->consumers->len == 2)
    {
      /* Where (IsNaN (p), 0, p): rows with every key masked by -inf. With
       * no mask or a finite constant one no row is, and p has no NaN
       * unless the inputs had one. */
      GraftValue *p = output_of (node);
      GraftNode *is_nan = g_ptr_array_index (p->consumers, 0), *where = g_ptr_array_index (p->consumers, 1);

      if (!is_onnx_op (is_nan, "IsNaN"))
        {
          GraftNode *swap = is_nan;
          is_nan = where;
          where = swap;
        }
      if (!is_onnx_op (is_nan, "IsNaN") || sole_reader (is_nan) != where || !is_onnx_op (where, "Where")
          || input_at (where, 0) != output_of (is_nan) || !is_scalar (input_at (where, 1), 0.0)
          || input_at (where, 2) != p || (attention->mask != NULL && !is_finite_constant (attention->mask)))
        return FALSE;
      match_add (match, is_nan);
      match_add (match, where);
      node = where;
      av = sole_reader (where);
    }
  if (!is_onnx_op (av, "MatMul") || av->inputs->len != 2 || input_at (av, 0) != output_of (node)
      || input_at (av, 1) == output_of (node))
    return FALSE;
  attention->v = input_at (av, 1);
  match_add (match, av);
  return TRUE;
}

/* Kᵀ as torch.export's SDPA writes it: Reshape (Transpose (X, [0, 2, 1]),
 * [B, H, D, S]) of X = [B·H, S, D]: K is Reshape (X, [B, H, S, D]). */
static GraftValue *
key_of_reshaped (GraftGraph *graph, GraftInference *inference, GraftNode *near, GraftNode *reshape)
{
  GraftNode *transpose = producer_in (graph, input_at (reshape, 0));
  GraftValue *x = input_at (transpose, 0);
  const gint64 *perm;
  guint n, n_target;
  g_autofree gint64 *target = NULL;
  GraftDType dtype;
  const GraftShape *in_shape, *out_shape;

  if (!is_onnx_op (reshape, "Reshape") || !is_onnx_op (transpose, "Transpose")
      || (perm = graft_node_attr_ints (transpose, "perm", &n)) == NULL || n != 3 || perm[0] != 0 || perm[1] != 2
      || perm[2] != 1 || (target = graft_edit_int64_values (input_at (reshape, 1), &n_target)) == NULL
      || n_target != 4
      || !graft_edit_value_type (inference, input_at (reshape, 0), &dtype, &in_shape) || in_shape == NULL
      || in_shape->rank != 3 || !graft_edit_value_type (inference, output_of (reshape), &dtype, &out_shape)
      || out_shape == NULL || out_shape->rank != 4 || !graft_dim_equal (&in_shape->dims[1], &out_shape->dims[2])
      || !graft_dim_equal (&in_shape->dims[2], &out_shape->dims[3]))
    return NULL;
  for (guint k = 0; k < 4; k++)
    if (target[k] == 0)
      return NULL;   /* a 0 copies the input's dim, which the swap would move */
  gint64 swapped[4] = { target[0], target[1], target[3], target[2] };
  return add_scoped_node (graph, near, "Reshape", x, graft_graph_add_int64_constant (graph, "key_shape", swapped, 4, FALSE));
}

/* K from Kᵀ: its source when Kᵀ = Transpose (K, [0, 1, 3, 2]), else a
 * Transpose of the source by the composed perm, or the Reshape of
 * torch.export's SDPA; NULL when Kᵀ is none of them. */
static GraftValue *
key_of (GraftGraph *graph, GraftInference *inference, GraftNode *near, GraftValue *key_transposed)
{
  GraftNode *transpose = producer_in (graph, key_transposed);
  const gint64 *perm;
  guint n;
  gint64 key_perm[4];
  gboolean identity = TRUE;

  if (is_onnx_op (transpose, "Reshape"))
    return key_of_reshaped (graph, inference, near, transpose);
  if (!is_onnx_op (transpose, "Transpose") || (perm = graft_node_attr_ints (transpose, "perm", &n)) == NULL || n != 4)
    return NULL;
  /* K = Transpose(Kᵀ, [0, 1, 3, 2]) = Transpose(source, perm ∘ [0, 1, 3, 2]) */
  for (guint i = 0; i < 4; i++)
    {
      static const gint64 swap[4] = { 0, 1, 3, 2 };
      key_perm[i] = perm[swap[i]];
      identity &= key_perm[i] == (gint64) i;
    }
  if (identity)
    return input_at (transpose, 0);
  return add_transpose (graph, near, input_at (transpose, 0), key_perm);
}

static gboolean
is_rank_4_float (GraftInference *inference, GraftValue *value)
{
  GraftDType dtype;
  int rank;

  return value_rank (inference, value, &dtype, &rank) && rank == 4 && dtype == GRAFT_DTYPE_FLOAT32;
}

/* ---------- the passes ---------- */

typedef enum { FUSE_GELU, FUSE_LAYER_NORM, FUSE_RMS_NORM, FUSE_ATTENTION } FusionKind;

static const struct {
  const char *op_type;
  gint64 since;          /* the opset that has the operator */
  const char *what;
} fusion_kinds[] = {
  [FUSE_GELU] = { "Gelu", 20, "GELU subgraphs (erf and tanh forms) became Gelu" },
  [FUSE_LAYER_NORM] = { "LayerNormalization", 17, "LayerNorm subgraphs became LayerNormalization" },
  [FUSE_RMS_NORM] = { "RMSNormalization", 23, "RMSNorm subgraphs became RMSNormalization" },
  [FUSE_ATTENTION] = { "Attention", 23, "attention subgraphs (MatMul, scale, mask, Softmax, MatMul) became Attention" },
};

/* Fuses the match node opens, if any: TRUE when the graph changed. */
static gboolean
fuse_at (GraftEditScope *scope, GraftInference *inference, FusionKind kind, GraftNode *node)
{
  GraftGraph *graph = scope->graph;
  Match match = { 0 };
  GraftValue *x, *inputs[4];
  Normalization norm = { 0 };

  switch (kind)
    {
    case FUSE_GELU:
      {
        gboolean tanh_form = is_onnx_op (node, "Tanh");
        GraftDType dtype;
        int rank;
        GraftNode *fused;

        if (!(tanh_form ? match_gelu_tanh (graph, node, &match, &x) : match_gelu_erf (graph, node, &match, &x))
            || !match_is_closed (&match) || !value_rank (inference, x, &dtype, &rank) || dtype != GRAFT_DTYPE_FLOAT32)
          return FALSE;
        inputs[0] = x;
        fused = become (graph, &match, "Gelu", inputs, 1);
        if (tanh_form)
          graft_node_add_attribute (fused, graft_attribute_new_string ("approximate", "tanh"));
        return TRUE;
      }
    case FUSE_LAYER_NORM:
    case FUSE_RMS_NORM:
      if (!(kind == FUSE_LAYER_NORM ? match_layer_norm (graph, inference, node, &match, &norm)
                                    : match_rms_norm (graph, inference, node, &match, &norm))
          || !match_is_closed (&match))
        return FALSE;
      replace_normalization (graph, &match, &norm, fusion_kinds[kind].op_type, kind == FUSE_LAYER_NORM);
      return TRUE;
    case FUSE_ATTENTION:
      {
        AttentionMatch attention = { 0 };
        GraftValue *key;
        GraftNode *fused;

        if (!match_attention (graph, scope->model, node, &match, &attention) || !match_is_closed (&match)
            || !is_rank_4_float (inference, attention.q) || !is_rank_4_float (inference, attention.key_transposed)
            || !is_rank_4_float (inference, attention.v))
          return FALSE;
        if (attention.mask != NULL)
          {
            GraftDType dtype;
            int rank;
            if (!value_rank (inference, attention.mask, &dtype, &rank) || rank > 4 || dtype != GRAFT_DTYPE_FLOAT32)
              return FALSE;
          }
        if ((key = key_of (graph, inference, node, attention.key_transposed)) == NULL)
          return FALSE;
        inputs[0] = attention.q;
        inputs[1] = key;
        inputs[2] = attention.v;
        inputs[3] = attention.mask;
        fused = become (graph, &match, "Attention", inputs, attention.mask != NULL ? 4 : 3);
        /* without the attribute the scale would be 1/√head_size */
        graft_node_add_attribute (fused, graft_attribute_new_float ("scale", attention.scale));
        return TRUE;
      }
    }
  g_return_val_if_reached (FALSE);
}

/* The nodes that open a match of kind. */
static gboolean
opens_match (FusionKind kind, GraftNode *node)
{
  switch (kind)
    {
    case FUSE_GELU:
      return is_onnx_op (node, "Erf") || is_onnx_op (node, "Tanh");
    case FUSE_LAYER_NORM:
    case FUSE_RMS_NORM:
      return is_onnx_op (node, "ReduceMean");
    case FUSE_ATTENTION:
      return is_onnx_op (node, "MatMul");
    }
  return FALSE;
}

static gboolean
fuse (GraftEditScope *scope, FusionKind kind, GPtrArray *notes, GError **error)
{
  GraftGraph *graph = scope->graph;
  gint64 opset = graft_model_get_opset (scope->model, "onnx");
  guint before = graph->nodes->len, fused = 0;
  g_autoptr(GraftInference) inference = NULL;
  g_autoptr(GPtrArray) openers = g_ptr_array_new ();

  if (opset < fusion_kinds[kind].since)
    {
      g_ptr_array_add (notes, g_strdup_printf ("nothing fused: the model's ONNX opset %" G_GINT64_FORMAT
                                               " has no %s (opset %" G_GINT64_FORMAT " has)",
                                               opset, fusion_kinds[kind].op_type, fusion_kinds[kind].since));
      return TRUE;
    }
  inference = graft_edit_infer (scope->model);
  /* the openers first: a fusion removes nodes and adds others */
  for (guint i = 0; i < graph->nodes->len; i++)
    if (opens_match (kind, g_ptr_array_index (graph->nodes, i)))
      g_ptr_array_add (openers, g_ptr_array_index (graph->nodes, i));
  for (guint i = 0; i < openers->len; i++)
    {
      GraftNode *node = g_ptr_array_index (openers, i);
      /* a node an earlier fusion made dead or rewrote opens nothing */
      if (opens_match (kind, node) && fuse_at (scope, inference, kind, node))
        fused++;
    }
  graft_graph_prune (graph);
  if (fused > 0 && !graft_edit_toposort (graph, error))
    return FALSE;
  g_ptr_array_add (notes, g_strdup_printf ("%u %s (%u → %u nodes)", fused, fusion_kinds[kind].what, before,
                                           graph->nodes->len));
  return TRUE;
}

char *
graft_edit_fusions_unavailable (GraftModel *model)
{
  gint64 opset = graft_model_get_opset (model, "onnx");
  g_autoptr(GString) missing = g_string_new (NULL);

  for (guint k = 0; k < G_N_ELEMENTS (fusion_kinds); k++)
    if (opset < fusion_kinds[k].since)
      g_string_append_printf (missing, "%s%s needs opset %" G_GINT64_FORMAT, missing->len ? ", " : "",
                              fusion_kinds[k].op_type, fusion_kinds[k].since);
  if (missing->len == 0)
    return NULL;
  return g_strdup_printf ("not fused: %s; the model has opset %" G_GINT64_FORMAT, missing->str, opset);
}

static gboolean
fuse_gelu (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  return fuse (scope, FUSE_GELU, notes, error);
}

static gboolean
fuse_layer_norm (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  return fuse (scope, FUSE_LAYER_NORM, notes, error);
}

static gboolean
fuse_rms_norm (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  return fuse (scope, FUSE_RMS_NORM, notes, error);
}

static gboolean
fuse_attention (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  return fuse (scope, FUSE_ATTENTION, notes, error);
}

static char *describe_gelu (GVariant *params) { return g_strdup ("Fuse GELU into Gelu"); }
static char *describe_layer_norm (GVariant *params) { return g_strdup ("Fuse LayerNorm into LayerNormalization"); }
static char *describe_rms_norm (GVariant *params) { return g_strdup ("Fuse RMSNorm into RMSNormalization"); }
static char *describe_attention (GVariant *params) { return g_strdup ("Fuse attention into Attention"); }

const GraftEditOperation graft_edit_ops_fusions[] = {
  { .id = "fuse-layer-norm", .node_params = "", .value_params = "", .apply = fuse_layer_norm,
    .describe = describe_layer_norm,
    .option = "--fuse-layer-norm",
    .help = "ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div[/Mul/Add] over the last axes (or the channels of NCHW, then "
            "between two Transposes) becomes LayerNormalization, from opset 17 on" },
  { .id = "fuse-rms-norm", .node_params = "", .value_params = "", .apply = fuse_rms_norm, .describe = describe_rms_norm,
    .option = "--fuse-rms-norm",
    .help = "Pow/ReduceMean/Add/Sqrt/Reciprocal/Mul[/Mul] over the last axes becomes RMSNormalization, from opset "
            "23 on" },
  { .id = "fuse-gelu", .node_params = "", .value_params = "", .apply = fuse_gelu, .describe = describe_gelu,
    .option = "--fuse-gelu",
    .help = "x*0.5*(1+erf(x/sqrt(2))) and the tanh form become Gelu, from opset 20 on" },
  { .id = "fuse-attention", .node_params = "", .value_params = "", .apply = fuse_attention,
    .describe = describe_attention,
    .option = "--fuse-attention",
    .help = "MatMul(Q,K^T)[*scale][+mask]/Softmax/MatMul(.,V) on rank-4 float32 becomes Attention, from opset 23 on" },
  { NULL },
};
