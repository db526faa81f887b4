/* Network layers: convolution, normalisation, pooling, linear algebra,
 * softmax, embedding and attention. */
#include "lower/lower-private.h"

#include <math.h>
#include <string.h>

#define MAX_SPATIAL 3

static void
add_ints (GraftNode *node, const char *name, const gint64 *values, guint n)
{
  graft_node_add_attribute (node, graft_attribute_new_ints (name, values, n));
}

/* [p0, p1] → ONNX pads [p0, p1, p0, p1] */
static void
add_pads (GraftNode *node, const gint64 *pad, guint n)
{
  gint64 pads[2 * MAX_SPATIAL];
  for (guint i = 0; i < n; i++)
    pads[i] = pads[i + n] = pad[i];
  add_ints (node, "pads", pads, 2 * n);
}

/* conv2d(input, weight, bias, stride, padding, dilation, groups)
 * conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation)
 * _convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, …)
 * torch's transposed weight [in, out/groups, k…] is ONNX ConvTranspose's layout as it is. */
static gboolean
lower_conv (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gboolean underscore = strcmp (node->op_type, "_convolution") == 0;
  gboolean transposed_op = g_str_has_prefix (node->op_type, "conv_transpose");
  guint k_dilation = transposed_op ? 7 : 5, k_groups = underscore ? 8 : 6;
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  GraftValue *w = x ? graft_lower_arg_tensor (ctx, node, 1, error) : NULL;
  GraftValue *b = NULL;
  gint64 stride[MAX_SPATIAL], pad[MAX_SPATIAL], dilation[MAX_SPATIAL], output_padding[MAX_SPATIAL], groups,
    transposed = transposed_op;
  guint ns_stride, ns_pad, ns_dilation, ns_output_padding = 0;
  int w_rank;

  if (w == NULL || !graft_lower_need_rank (ctx, w, &w_rank, error))
    return FALSE;
  guint ns = w_rank - 2;
  if (ns < 1 || ns > MAX_SPATIAL)
    return graft_lower_fail (error, node, "weight of rank %d", w_rank);
  if (!graft_lower_arg_is_none (ctx, node, 2) && (b = graft_lower_arg_tensor (ctx, node, 2, error)) == NULL)
    return FALSE;
  LowerValue *padding = graft_lower_arg (ctx, node, 4);
  if (padding && padding->kind == LOWER_CONST && padding->constant->type == GRAFT_ATTR_STRING)
    {
      g_autofree char *mode = graft_attribute_dup_string (padding->constant);
      if (strcmp (mode, "valid") != 0)
        return graft_lower_fail (error, node, "padding='%s' (only 'valid' and explicit pads are lowered)", mode);
      for (guint i = 0; i < ns; i++)
        pad[i] = 0;
      ns_pad = ns;
    }
  else if (!graft_lower_arg_ints (ctx, node, 4, pad, ns, &ns_pad, ns, error))
    return FALSE;
  if (!graft_lower_arg_ints (ctx, node, 3, stride, ns, &ns_stride, ns, error) ||
      !graft_lower_arg_ints (ctx, node, k_dilation, dilation, ns, &ns_dilation, ns, error) ||
      (underscore && !graft_lower_arg_int (ctx, node, 6, 0, &transposed, error)) ||
      !graft_lower_arg_int (ctx, node, k_groups, 1, &groups, error))
    return FALSE;
  if (transposed && !graft_lower_arg_ints (ctx, node, transposed_op ? 5 : 7, output_padding, ns, &ns_output_padding,
                                           ns, error))
    return FALSE;
  for (guint i = 0; i < ns; i++)
    {
      if (ns_stride == 0) stride[i] = 1;
      if (ns_pad == 0) pad[i] = 0;
      if (ns_dilation == 0) dilation[i] = 1;
      if (ns_output_padding == 0) output_padding[i] = 0;
    }
  GraftNode *conv = graft_lower_node (ctx, transposed ? "ConvTranspose" : "Conv", 1, b ? 3 : 2, x, w, b);
  const GraftShape *ws = graft_lower_shape (ctx, w);
  gint64 kernel[MAX_SPATIAL];
  gboolean kernel_known = TRUE, any_output_padding = FALSE;
  for (guint i = 0; i < ns; i++)
    {
      kernel_known &= ws->dims[i + 2].kind == GRAFT_DIM_FIXED;
      kernel[i] = ws->dims[i + 2].value;
      any_output_padding |= output_padding[i] != 0;
    }
  if (kernel_known)
    add_ints (conv, "kernel_shape", kernel, ns);
  add_ints (conv, "strides", stride, ns);
  add_pads (conv, pad, ns);
  add_ints (conv, "dilations", dilation, ns);
  if (any_output_padding)
    add_ints (conv, "output_padding", output_padding, ns);
  graft_node_add_attribute (conv, graft_attribute_new_int ("group", groups));
  graft_lower_set_output (ctx, node, 0, graft_lower_finish (ctx, conv));
  return TRUE;
}

/* A 1-D float constant filled with value, as long as dim 0 of like. */
static GraftValue *
filled_like (GraftLowerContext *ctx, GraftNode *node, GraftValue *like, double value, GError **error)
{
  const GraftShape *s = graft_lower_shape (ctx, like);
  if (s->rank < 1 || s->dims[0].kind != GRAFT_DIM_FIXED)
    {
      graft_lower_fail (error, node, "needs the channel count of '%s'", like->name);
      return NULL;
    }
  GraftValue *shape = graft_lower_const_int (ctx, s->dims[0].value);
  GraftNode *fill = graft_lower_node (ctx, "ConstantOfShape", 1, 1, shape);
  g_autoptr(GraftTensor) t = graft_tensor_new ("value", graft_lower_dtype (ctx, like), 1, (gint64[]) { 1 });
  float f = (float) value;
  g_autoptr(GBytes) bytes = g_bytes_new (&f, sizeof f);
  graft_tensor_set_data (t, bytes, NULL);
  graft_node_add_attribute (fill, graft_attribute_new_tensor ("value", t));
  return graft_lower_finish (ctx, fill);
}

/* batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled) */
static gboolean
lower_batch_norm (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gint64 training;
  double eps;
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  if (x == NULL || !graft_lower_arg_int (ctx, node, 5, 0, &training, error) ||
      !graft_lower_arg_double (ctx, node, 7, 1e-5, &eps, error))
    return FALSE;
  if (training)
    return graft_lower_fail (error, node, "batch statistics (training mode): export the module in eval() mode");
  if (graft_lower_arg_is_none (ctx, node, 3) || graft_lower_arg_is_none (ctx, node, 4))
    return graft_lower_fail (error, node, "no running statistics (track_running_stats=False) in eval mode");
  GraftValue *mean = graft_lower_arg_tensor (ctx, node, 3, error);
  GraftValue *var = mean ? graft_lower_arg_tensor (ctx, node, 4, error) : NULL;
  if (var == NULL)
    return FALSE;
  GraftValue *scale = graft_lower_arg_is_none (ctx, node, 1) ? filled_like (ctx, node, mean, 1, error)
                      : graft_lower_arg_tensor (ctx, node, 1, error);
  GraftValue *bias = scale == NULL ? NULL : graft_lower_arg_is_none (ctx, node, 2) ? filled_like (ctx, node, mean, 0, error)
                     : graft_lower_arg_tensor (ctx, node, 2, error);
  if (bias == NULL)
    return FALSE;
  GraftNode *bn = graft_lower_node (ctx, "BatchNormalization", 1, 5, x, scale, bias, mean, var);
  graft_node_add_attribute (bn, graft_attribute_new_float ("epsilon", eps));
  graft_lower_set_output (ctx, node, 0, graft_lower_finish (ctx, bn));
  return TRUE;
}

/* ReduceMean keeping the dims: axes an attribute before opset 18, an input from it */
static GraftValue *
reduce_mean (GraftLowerContext *ctx, GraftValue *x, const gint64 *axes, guint n)
{
  if (ctx->opset >= 18)
    return graft_lower_op (ctx, "ReduceMean", 2, x, graft_lower_const_ints (ctx, axes, n, FALSE));
  GraftNode *mean = graft_lower_node (ctx, "ReduceMean", 1, 1, x);
  add_ints (mean, "axes", axes, n);
  return graft_lower_finish (ctx, mean);
}

/* x normalised over its last n dims without LayerNormalization (opsets
 * before 17): (x - mean) / sqrt(var + eps), var the biased variance as torch's. */
static GraftValue *
normalize_decomposed (GraftLowerContext *ctx, GraftValue *x, guint n, double eps)
{
  gint64 axes[8];
  for (guint i = 0; i < n; i++)
    axes[i] = -(gint64) n + i;
  GraftDType dtype = graft_lower_dtype (ctx, x);
  GraftValue *centred = graft_lower_op (ctx, "Sub", 2, x, reduce_mean (ctx, x, axes, n));
  GraftValue *squared = graft_lower_op (ctx, "Pow", 2, centred, graft_lower_const_scalar (ctx, dtype, 2));
  GraftValue *std = graft_lower_op (ctx, "Sqrt", 1, graft_lower_op (ctx, "Add", 2, reduce_mean (ctx, squared, axes, n),
                                                                 graft_lower_const_scalar (ctx, dtype, eps)));
  return graft_lower_op (ctx, "Div", 2, centred, std);
}

/* layer_norm(input, normalized_shape, weight, bias, eps, cudnn_enable): one
 * LayerNormalization from opset 17, the decomposition before it. */
static gboolean
lower_layer_norm (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gint64 shape[8];
  guint n;
  double eps;
  int rank;
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  if (x == NULL || !graft_lower_need_rank (ctx, x, &rank, error) ||
      !graft_lower_arg_ints (ctx, node, 1, shape, G_N_ELEMENTS (shape), &n, 0, error) ||
      !graft_lower_arg_double (ctx, node, 4, 1e-5, &eps, error))
    return FALSE;
  GraftValue *scale = NULL, *bias = NULL;
  if (!graft_lower_arg_is_none (ctx, node, 2) && (scale = graft_lower_arg_tensor (ctx, node, 2, error)) == NULL)
    return FALSE;
  if (!graft_lower_arg_is_none (ctx, node, 3) && (bias = graft_lower_arg_tensor (ctx, node, 3, error)) == NULL)
    return FALSE;
  if (ctx->opset < 17)
    {
      if (n == 0 || (int) n > rank)
        return graft_lower_fail (error, node, "normalized_shape of %u dims on a rank-%d input", n, rank);
      GraftValue *y = normalize_decomposed (ctx, x, n, eps);
      if (scale)
        y = graft_lower_op (ctx, "Mul", 2, y, scale);
      if (bias)
        y = graft_lower_op (ctx, "Add", 2, y, bias);
      graft_lower_set_output (ctx, node, 0, y);
      return TRUE;
    }
  if (scale == NULL)
    {
      GraftNode *fill = graft_lower_node (ctx, "ConstantOfShape", 1, 1, graft_lower_const_ints (ctx, shape, n, FALSE));
      g_autoptr(GraftTensor) one = graft_tensor_new ("value", GRAFT_DTYPE_FLOAT32, 1, (gint64[]) { 1 });
      float f = 1;
      g_autoptr(GBytes) bytes = g_bytes_new (&f, sizeof f);
      graft_tensor_set_data (one, bytes, NULL);
      graft_node_add_attribute (fill, graft_attribute_new_tensor ("value", one));
      scale = graft_lower_finish (ctx, fill);
    }
  GraftNode *ln = graft_lower_node (ctx, "LayerNormalization", 1, bias ? 3 : 2, x, scale, bias);
  graft_node_add_attribute (ln, graft_attribute_new_int ("axis", rank - (int) n));
  graft_node_add_attribute (ln, graft_attribute_new_float ("epsilon", eps));
  graft_lower_set_output (ctx, node, 0, graft_lower_finish (ctx, ln));
  return TRUE;
}

/* A per-channel vector (C) shaped to multiply an N×C×… tensor of rank rank. */
static GraftValue *
per_channel (GraftLowerContext *ctx, GraftValue *v, int rank)
{
  gint64 axes[8];
  if (rank <= 2)
    return v;
  for (int i = 0; i < rank - 2 && i < 8; i++)
    axes[i] = i + 1;
  return graft_lower_op (ctx, "Unsqueeze", 2, v, graft_lower_const_ints (ctx, axes, MIN (rank - 2, 8), FALSE));
}

/* x normalised in groups of channels, as rows of N×G×(C/G·…) (groups 0:
 * one channel each), then scaled and shifted per channel by the weight and
 * bias arguments at weight_k and weight_k + 1 (None: left out). */
static gboolean
grouped_norm (GraftLowerContext *ctx, GraftNode *node, GraftValue *x, int rank, gint64 groups, double eps, guint weight_k,
              GError **error)
{
  GraftValue *rows = graft_lower_op (ctx, "Reshape", 2, x, graft_lower_const_ints (ctx, (gint64[]) { 0, groups, -1 }, 3, FALSE));
  GraftValue *y = graft_lower_op (ctx, "Reshape", 2, normalize_decomposed (ctx, rows, 1, eps), graft_lower_op (ctx, "Shape", 1, x));
  /* back to x's own shape, which inference cannot read from Shape(x) */
  _graft_lower_declare_type (ctx, y, graft_lower_dtype (ctx, x), graft_lower_shape (ctx, x));
  for (guint k = weight_k; k <= weight_k + 1; k++)
    {
      if (graft_lower_arg_is_none (ctx, node, k))
        continue;
      GraftValue *v = graft_lower_arg_tensor (ctx, node, k, error);
      if (v == NULL)
        return FALSE;
      y = graft_lower_op (ctx, k == weight_k ? "Mul" : "Add", 2, y, per_channel (ctx, v, rank));
    }
  graft_lower_set_output (ctx, node, 0, y);
  return TRUE;
}

/* group_norm(input, num_groups, weight, bias, eps, cudnn_enabled) */
static gboolean
lower_group_norm (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gint64 groups;
  double eps;
  int rank;
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  if (x == NULL || !graft_lower_need_rank (ctx, x, &rank, error) || !graft_lower_arg_int (ctx, node, 1, 1, &groups, error) ||
      !graft_lower_arg_double (ctx, node, 4, 1e-5, &eps, error))
    return FALSE;
  if (groups <= 0)
    return graft_lower_fail (error, node, "group_norm with %" G_GINT64_FORMAT " groups", groups);
  return grouped_norm (ctx, node, x, rank, groups, eps, 2, error);
}

/* instance_norm(input, weight, bias, running_mean, running_var,
 * use_input_stats, momentum, eps, cudnn_enabled): one channel per group */
static gboolean
lower_instance_norm (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gint64 own_stats;
  double eps;
  int rank;
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  if (x == NULL || !graft_lower_need_rank (ctx, x, &rank, error) ||
      !graft_lower_arg_int (ctx, node, 5, 1, &own_stats, error) || !graft_lower_arg_double (ctx, node, 7, 1e-5, &eps, error))
    return FALSE;
  if (!own_stats)
    return graft_lower_fail (error, node, "instance_norm with running statistics (use_input_stats=False)");
  return grouped_norm (ctx, node, x, rank, 0, eps, 1, error);
}

/* grid_sampler(input, grid, interpolation_mode, padding_mode,
 * align_corners) on 4-D inputs → GridSample (opset 16; its modes are named
 * linear and cubic from opset 20) */
static gboolean
lower_grid_sampler (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  static const char *const paddings[] = { "zeros", "border", "reflection" };
  gint64 mode, padding, align_corners;
  int rank;
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  GraftValue *grid = x ? graft_lower_arg_tensor (ctx, node, 1, error) : NULL;
  if (grid == NULL || !graft_lower_need_rank (ctx, x, &rank, error) || !graft_lower_arg_int (ctx, node, 2, 0, &mode, error) ||
      !graft_lower_arg_int (ctx, node, 3, 0, &padding, error) || !graft_lower_arg_int (ctx, node, 4, 0, &align_corners, error))
    return FALSE;
  if (rank != 4)
    return graft_lower_fail (error, node, "grid_sampler on a %d-D input (GridSample takes 4-D before opset 20)", rank);
  if (mode < 0 || mode > 2 || padding < 0 || padding > 2)
    return graft_lower_fail (error, node, "grid_sampler mode %" G_GINT64_FORMAT ", padding %" G_GINT64_FORMAT, mode, padding);
  const char *modes[] = { ctx->opset >= 20 ? "linear" : "bilinear", "nearest", ctx->opset >= 20 ? "cubic" : "bicubic" };
  GraftNode *sample = graft_lower_node (ctx, "GridSample", 1, 2, x, graft_lower_cast (ctx, grid, graft_lower_dtype (ctx, x)));
  graft_node_add_attribute (sample, graft_attribute_new_string ("mode", modes[mode]));
  graft_node_add_attribute (sample, graft_attribute_new_string ("padding_mode", paddings[padding]));
  graft_node_add_attribute (sample, graft_attribute_new_int ("align_corners", align_corners != 0));
  graft_lower_set_output (ctx, node, 0, graft_lower_finish (ctx, sample));
  return TRUE;
}

/* upsample_{nearest,bilinear,bicubic}{1,2,3}d(input, output_size, [align_corners,] scale_factors)
 * and the older (input, output_size, [align_corners,] scales_h, scales_w) → Resize, with torch's
 * sampling: nearest is asymmetric/floor, linear half-pixel or align_corners. */
static gboolean
lower_upsample (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gboolean nearest = g_str_has_prefix (node->op_type, "upsample_nearest") ||
                     g_str_has_prefix (node->op_type, "_upsample_nearest");
  gboolean exact = strstr (node->op_type, "nearest_exact") != NULL;
  gboolean cubic = strstr (node->op_type, "bicubic") != NULL;
  gint64 align = 0;
  int rank;
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  if (x == NULL || !graft_lower_need_rank (ctx, x, &rank, error) ||
      (!nearest && !graft_lower_arg_int (ctx, node, 2, 0, &align, error)))
    return FALSE;
  guint scales_at = nearest ? 2 : 3;
  GraftValue *sizes = NULL, *scales = NULL;
  if (!graft_lower_arg_is_none (ctx, node, 1))
    {
      GraftValue *size = graft_lower_arg_int_vector (ctx, node, 1, error);
      if (size == NULL)
        return FALSE;
      /* N and C keep their size */
      GraftValue *leading = graft_lower_op (ctx, "Slice", 3, graft_lower_op (ctx, "Shape", 1, x), graft_lower_const_int (ctx, 0),
                                            graft_lower_const_int (ctx, 2));
      g_autoptr(GPtrArray) parts = g_ptr_array_new ();
      g_ptr_array_add (parts, leading);
      g_ptr_array_add (parts, size);
      sizes = graft_lower_concat (ctx, parts, 0);
    }
  else
    {
      /* scale_factors (a float list), or one float per spatial dim */
      float factors[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
      LowerValue *v = graft_lower_arg (ctx, node, scales_at);
      guint n = 0;
      if (v != NULL && v->kind == LOWER_CONST && v->constant->type == GRAFT_ATTR_FLOATS)
        for (; n < v->constant->floats->len && n + 2 < 8; n++)
          factors[n + 2] = g_array_index (v->constant->floats, double, n);
      else
        for (; n + 2 < (guint) rank && n + 2 < 8; n++)
          {
            double f;
            if (!graft_lower_arg_double (ctx, node, scales_at + n, NAN, &f, error))
              return FALSE;
            if (isnan (f))
              break;
            factors[n + 2] = f;
          }
      if (n == 0 || (int) n + 2 != rank)
        return graft_lower_fail (error, node, "neither an output size nor a scale per spatial dim");
      gint64 dims[1] = { rank };
      GraftTensor *t = graft_tensor_new (NULL, GRAFT_DTYPE_FLOAT32, 1, dims);
      g_autoptr(GBytes) bytes = g_bytes_new (factors, rank * sizeof (float));
      graft_tensor_set_data (t, bytes, NULL);
      scales = _graft_lower_add_constant (ctx, t);
    }
  GraftNode *resize = graft_lower_node (ctx, "Resize", 1, 4, x, NULL, scales, sizes);
  graft_node_add_attribute (resize, graft_attribute_new_string ("mode", nearest ? "nearest" : cubic ? "cubic" : "linear"));
  graft_node_add_attribute (resize, graft_attribute_new_string ("coordinate_transformation_mode",
                                                                nearest ? (exact ? "half_pixel" : "asymmetric")
                                                                : align ? "align_corners" : "pytorch_half_pixel"));
  if (nearest)
    graft_node_add_attribute (resize, graft_attribute_new_string ("nearest_mode", exact ? "round_prefer_ceil" : "floor"));
  if (cubic)
    graft_node_add_attribute (resize, graft_attribute_new_float ("cubic_coeff_a", -0.75));
  graft_lower_set_output (ctx, node, 0, graft_lower_finish (ctx, resize));
  return TRUE;
}

/* _weight_norm(v, g, dim): v·g/‖v‖, the norm over every dim but dim */
static gboolean
lower_weight_norm (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gint64 dim, axes[8];
  int rank;
  guint n = 0;
  GraftValue *v = graft_lower_arg_tensor (ctx, node, 0, error);
  GraftValue *g = v ? graft_lower_arg_tensor (ctx, node, 1, error) : NULL;
  if (g == NULL || !graft_lower_need_rank (ctx, v, &rank, error) || !graft_lower_arg_int (ctx, node, 2, 0, &dim, error))
    return FALSE;
  if (dim < 0)
    dim += rank;
  for (int i = 0; i < rank && n < 8; i++)
    if (i != dim)
      axes[n++] = i;
  GraftNode *norm;
  if (ctx->opset >= 18)
    norm = graft_lower_node (ctx, "ReduceL2", 1, 2, v, graft_lower_const_ints (ctx, axes, n, FALSE));
  else
    {
      norm = graft_lower_node (ctx, "ReduceL2", 1, 1, v);
      add_ints (norm, "axes", axes, n);
    }
  graft_node_add_attribute (norm, graft_attribute_new_int ("keepdims", 1));
  GraftValue *scale = graft_lower_op (ctx, "Div", 2, g, graft_lower_finish (ctx, norm));
  graft_lower_set_output (ctx, node, 0, graft_lower_op (ctx, "Mul", 2, v, scale));
  return TRUE;
}

/* rand(size, dtype, …): only torch.export's eval programs have it, where
 * layer drop draws a number nothing then reads */
static gboolean
lower_rand (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gint64 size[8];
  guint n;
  if (!graft_lower_arg_ints (ctx, node, 0, size, 8, &n, 0, error))
    return FALSE;
  GraftNode *r = graft_lower_node (ctx, "RandomUniform", 1, 0);
  add_ints (r, "shape", size, n);
  graft_lower_set_output (ctx, node, 0, graft_lower_finish (ctx, r));
  return TRUE;
}

/* einsum(equation, tensors, path) → Einsum */
static gboolean
lower_einsum (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  LowerValue *equation = graft_lower_arg (ctx, node, 0), *list = graft_lower_arg (ctx, node, 1);
  if (equation == NULL || equation->kind != LOWER_CONST || equation->constant->type != GRAFT_ATTR_STRING)
    return graft_lower_fail (error, node, "the equation is not a constant string");
  if (list == NULL || list->kind != LOWER_LIST)
    return graft_lower_fail (error, node, "the operand list is not known while converting");
  g_autofree char *text = graft_attribute_dup_string (equation->constant);
  GraftNode *einsum = graft_lower_node (ctx, "Einsum", 1, 0);
  graft_node_add_attribute (einsum, graft_attribute_new_string ("equation", text));
  for (guint i = 0; i < list->items->len; i++)
    {
      LowerValue *item = list->items->pdata[i];
      if (item->kind != LOWER_TENSOR)
        return graft_lower_fail (error, node, "operand %u is not a tensor", i);
      graft_node_add_input (einsum, item->value);
    }
  graft_lower_set_output (ctx, node, 0, graft_lower_finish (ctx, einsum));
  return TRUE;
}

/* max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)
 * avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override) */
static gboolean
lower_pool (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gboolean is_max = g_str_has_prefix (node->op_type, "max_pool");
  gint64 kernel[MAX_SPATIAL], stride[MAX_SPATIAL], pad[MAX_SPATIAL], dilation[MAX_SPATIAL], ceil_mode,
    count_include_pad = 1;
  guint nk, ns, np, nd = 0;
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  if (x == NULL || !graft_lower_arg_ints (ctx, node, 1, kernel, MAX_SPATIAL, &nk, 2, error) ||
      !graft_lower_arg_ints (ctx, node, 2, stride, MAX_SPATIAL, &ns, 2, error) ||
      !graft_lower_arg_ints (ctx, node, 3, pad, MAX_SPATIAL, &np, 2, error) ||
      (is_max && !graft_lower_arg_ints (ctx, node, 4, dilation, MAX_SPATIAL, &nd, 2, error)) ||
      !graft_lower_arg_int (ctx, node, is_max ? 5 : 4, 0, &ceil_mode, error) ||
      (!is_max && !graft_lower_arg_int (ctx, node, 5, 1, &count_include_pad, error)))
    return FALSE;
  if (!is_max && !graft_lower_arg_is_none (ctx, node, 6))
    return graft_lower_fail (error, node, "divisor_override has no ONNX form");
  if (ns == 0)
    memcpy (stride, kernel, sizeof stride), ns = nk;
  for (guint i = np; i < nk; i++)
    pad[i] = 0;
  GraftNode *pool = graft_lower_node (ctx, is_max ? "MaxPool" : "AveragePool", 1, 1, x);
  add_ints (pool, "kernel_shape", kernel, nk);
  add_ints (pool, "strides", stride, nk);
  add_pads (pool, pad, nk);
  if (is_max && nd > 0)
    {
      gboolean ones = TRUE;
      for (guint i = 0; i < nd; i++)
        ones &= dilation[i] == 1;
      if (!ones)
        add_ints (pool, "dilations", dilation, nd);
    }
  if (ceil_mode)
    graft_node_add_attribute (pool, graft_attribute_new_int ("ceil_mode", 1));
  if (!is_max)
    graft_node_add_attribute (pool, graft_attribute_new_int ("count_include_pad", count_include_pad));
  graft_lower_set_output (ctx, node, 0, graft_lower_finish (ctx, pool));
  return TRUE;
}

/* The O×I matrix (I×O transposed) whose row o averages torch's adaptive
 * window [⌊o·I/O⌋, ⌈(o+1)·I/O⌉) of an axis of size I; NULL when too large. */
static GraftValue *
averaging_matrix (GraftLowerContext *ctx, gint64 in, gint64 out, gboolean transposed)
{
  if (in <= 0 || out <= 0 || in * out > (1 << 22))
    return NULL;
  g_autofree float *m = g_new0 (float, in * out);
  for (gint64 o = 0; o < out; o++)
    {
      gint64 start = o * in / out, end = ((o + 1) * in + out - 1) / out;
      for (gint64 i = start; i < end; i++)
        m[transposed ? i * out + o : o * in + i] = 1.0f / (float) (end - start);
    }
  gint64 dims[2] = { transposed ? in : out, transposed ? out : in };
  GraftTensor *t = graft_tensor_new (NULL, GRAFT_DTYPE_FLOAT32, 2, dims);
  g_autoptr(GBytes) bytes = g_bytes_new_take (g_steal_pointer (&m), in * out * sizeof (float));
  graft_tensor_set_data (t, bytes, NULL);
  return _graft_lower_add_constant (ctx, t);
}

/* adaptive_avg_pool1d/2d/3d(input, output_size): GlobalAveragePool for
 * an output of ones, an AveragePool when the input sizes divide evenly,
 * else a product with each axis's averaging matrix (the last axis
 * x · Aᵀ, the one before A · x, the depth A · x over merged rows). */
static gboolean
lower_adaptive_avg_pool (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  int ns = node->op_type[strlen ("adaptive_avg_pool")] - '0';
  gint64 size[3];
  guint n;
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  if (x == NULL || !graft_lower_arg_ints (ctx, node, 1, size, ns, &n, ns, error))
    return FALSE;
  gboolean ones = n == (guint) ns;
  for (int d = 0; d < ns && ones; d++)
    ones = size[d] == 1;
  if (ones)
    {
      graft_lower_set_output (ctx, node, 0, graft_lower_op (ctx, "GlobalAveragePool", 1, x));
      return TRUE;
    }
  const GraftShape *s = graft_lower_shape (ctx, x);
  gint64 in[3];
  gboolean even = TRUE;
  if (s->rank != ns + 2)
    return graft_lower_fail (error, node, "an output size other than ones needs a batched %d-D input of known rank",
                             ns + 2);
  for (int d = 0; d < ns; d++)
    {
      const GraftDim *dim = &s->dims[2 + d];
      if (dim->kind != GRAFT_DIM_FIXED || size[d] <= 0)
        return graft_lower_fail (error, node, "an output size other than ones needs fixed input sizes");
      in[d] = dim->value;
      even &= in[d] % size[d] == 0;
    }
  if (even)
    {
      gint64 kernel[3];
      for (int d = 0; d < ns; d++)
        kernel[d] = in[d] / size[d];
      GraftNode *pool = graft_lower_node (ctx, "AveragePool", 1, 1, x);
      add_ints (pool, "kernel_shape", kernel, ns);
      add_ints (pool, "strides", kernel, ns);
      graft_lower_set_output (ctx, node, 0, graft_lower_finish (ctx, pool));
      return TRUE;
    }
  /* windows of uneven sizes (or an input smaller than the output) */
  GraftValue *matrices[3];
  for (int d = 0; d < ns; d++)
    if ((matrices[d] = averaging_matrix (ctx, in[d], size[d], d == ns - 1)) == NULL)
      return graft_lower_fail (error, node, "an axis of %" G_GINT64_FORMAT " is too large to pool to %" G_GINT64_FORMAT
                               " as a matrix product", in[d], size[d]);
  GraftValue *y = graft_lower_op (ctx, "MatMul", 2, x, matrices[ns - 1]);
  if (ns >= 2)
    y = graft_lower_op (ctx, "MatMul", 2, matrices[ns - 2], y);
  if (ns == 3)
    {
      y = graft_lower_op (ctx, "Reshape", 2, y, graft_lower_const_ints (ctx, (gint64[]) { 0, 0, in[0], -1 }, 4, FALSE));
      y = graft_lower_op (ctx, "MatMul", 2, matrices[0], y);
      y = graft_lower_op (ctx, "Reshape", 2, y,
                          graft_lower_const_ints (ctx, (gint64[]) { 0, 0, size[0], size[1], size[2] }, 5, FALSE));
    }
  graft_lower_set_output (ctx, node, 0, y);
  return TRUE;
}

static GraftValue *
gemm (GraftLowerContext *ctx, GraftValue *a, GraftValue *b, GraftValue *c, gboolean trans_b, double alpha, double beta)
{
  GraftNode *n = graft_lower_node (ctx, "Gemm", 1, c ? 3 : 2, a, b, c);
  if (alpha != 1)
    graft_node_add_attribute (n, graft_attribute_new_float ("alpha", alpha));
  if (beta != 1)
    graft_node_add_attribute (n, graft_attribute_new_float ("beta", beta));
  if (trans_b)
    graft_node_add_attribute (n, graft_attribute_new_int ("transB", 1));
  return graft_lower_finish (ctx, n);
}

/* Wᵀ of a 2-D weight: a transposed constant when W is one (torch.onnx's
 * constant folding does the same), else a Transpose node. */
static GraftValue *
transposed_weight (GraftLowerContext *ctx, GraftValue *w)
{
  GraftTensor *t = w->initializer;
  GBytes *data = t && t->rank == 2 && t->dtype == GRAFT_DTYPE_FLOAT32 ? graft_tensor_get_data (t, NULL) : NULL;
  if (data != NULL)
    {
      gint64 rows = t->dims[0], cols = t->dims[1];
      const float *src = g_bytes_get_data (data, NULL);
      float *dst = g_new (float, MAX (rows * cols, 1));
      /* in tiles, so that both sides stay in cache (ViT-B's 768×3072 weights) */
      enum { TILE = 32 };
      for (gint64 r0 = 0; r0 < rows; r0 += TILE)
        for (gint64 c0 = 0; c0 < cols; c0 += TILE)
          for (gint64 r = r0; r < MIN (r0 + TILE, rows); r++)
            for (gint64 c = c0; c < MIN (c0 + TILE, cols); c++)
              dst[c * rows + r] = src[r * cols + c];
      gint64 dims[2] = { cols, rows };
      GraftTensor *wt = graft_tensor_new (NULL, GRAFT_DTYPE_FLOAT32, 2, dims);
      g_autoptr(GBytes) bytes = g_bytes_new_take (dst, rows * cols * sizeof (float));
      graft_tensor_set_data (wt, bytes, NULL);
      return _graft_lower_add_constant (ctx, wt);
    }
  GraftNode *transpose = graft_lower_node (ctx, "Transpose", 1, 1, w);
  add_ints (transpose, "perm", (gint64[]) { 1, 0 }, 2);
  return graft_lower_finish (ctx, transpose);
}

/* x·Wᵀ + b: Gemm for a 2-D x, else MatMul (+ Add). */
static GraftValue *
linear (GraftLowerContext *ctx, GraftValue *x, GraftValue *w, GraftValue *b)
{
  if (graft_lower_rank (ctx, x) == 2 && graft_lower_rank (ctx, w) == 2)
    return gemm (ctx, x, w, b, TRUE, 1, 1);
  GraftValue *y = graft_lower_op (ctx, "MatMul", 2, x, transposed_weight (ctx, w));
  return b ? graft_lower_op (ctx, "Add", 2, y, b) : y;
}

/* linear(input, weight, bias) */
static gboolean
lower_linear (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  GraftValue *w = x ? graft_lower_arg_tensor (ctx, node, 1, error) : NULL;
  GraftValue *b = NULL;
  if (w == NULL)
    return FALSE;
  if (!graft_lower_arg_is_none (ctx, node, 2) && (b = graft_lower_arg_tensor (ctx, node, 2, error)) == NULL)
    return FALSE;
  graft_lower_set_output (ctx, node, 0, linear (ctx, x, w, b));
  return TRUE;
}

/* Over the last dim: LayerNormalization from opset 17, the decomposition before it. */
static GraftValue *
layer_norm (GraftLowerContext *ctx, GraftValue *x, GraftValue *w, GraftValue *b, double eps)
{
  if (ctx->opset < 17)
    return graft_lower_op (ctx, "Add", 2, graft_lower_op (ctx, "Mul", 2, normalize_decomposed (ctx, x, 1, eps), w), b);
  GraftNode *ln = graft_lower_node (ctx, "LayerNormalization", 1, 3, x, w, b);
  graft_node_add_attribute (ln, graft_attribute_new_int ("axis", -1));
  graft_node_add_attribute (ln, graft_attribute_new_float ("epsilon", eps));
  return graft_lower_finish (ctx, ln);
}

/* Multi-head self-attention of x [batch, length, E] with packed q/k/v
 * projections, as nn.MultiheadAttention computes it. */
static GraftValue *
self_attention (GraftLowerContext *ctx, GraftValue *x, gint64 E, gint64 H, GraftValue *w_qkv, GraftValue *b_qkv,
                GraftValue *w_proj, GraftValue *b_proj)
{
  gint64 D = E / H;
  GraftValue *qkv = linear (ctx, x, w_qkv, b_qkv);
  GraftNode *split = graft_lower_node (ctx, "Split", 3, 2, qkv, graft_lower_const_ints (ctx, (gint64[]) { E, E, E }, 3, FALSE));
  graft_node_add_attribute (split, graft_attribute_new_int ("axis", -1));
  graft_lower_finish (ctx, split);
  GraftValue *heads_shape = graft_lower_const_ints (ctx, (gint64[]) { 0, 0, H, D }, 4, FALSE);
  GraftValue *parts[3];
  static const gint64 perms[3][4] = { { 0, 2, 1, 3 }, { 0, 2, 3, 1 }, { 0, 2, 1, 3 } };
  for (guint i = 0; i < 3; i++)
    {
      GraftValue *r = graft_lower_op (ctx, "Reshape", 2, g_ptr_array_index (split->outputs, i), heads_shape);
      GraftNode *t = graft_lower_node (ctx, "Transpose", 1, 1, r);
      add_ints (t, "perm", perms[i], 4);
      parts[i] = graft_lower_finish (ctx, t);
    }
  GraftValue *scores = graft_lower_op (ctx, "MatMul", 2, parts[0], parts[1]);
  scores = graft_lower_op (ctx, "Mul", 2, scores, graft_lower_const_scalar (ctx, GRAFT_DTYPE_FLOAT32, 1 / sqrt ((double) D)));
  GraftNode *softmax = graft_lower_node (ctx, "Softmax", 1, 1, scores);
  graft_node_add_attribute (softmax, graft_attribute_new_int ("axis", -1));
  GraftValue *context = graft_lower_op (ctx, "MatMul", 2, graft_lower_finish (ctx, softmax), parts[2]);
  GraftNode *back = graft_lower_node (ctx, "Transpose", 1, 1, context);
  add_ints (back, "perm", perms[0], 4);
  GraftValue *merged = graft_lower_op (ctx, "Reshape", 2, graft_lower_finish (ctx, back),
                                       graft_lower_const_ints (ctx, (gint64[]) { 0, 0, E }, 3, FALSE));
  return linear (ctx, merged, w_proj, b_proj);
}

/* _native_multi_head_attention(query, key, value, embed_dim, num_head, qkv_weight, qkv_bias, proj_weight,
 * proj_bias, mask, need_weights, average_attn_weights, mask_type): nn.MultiheadAttention's fast path in
 * eval mode; self-attention without weights (what ViT and encoders use). */
static gboolean
lower_native_mha (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gint64 E, H, need_weights;
  GraftValue *t[9] = { NULL };
  if (!graft_lower_arg_int (ctx, node, 3, 0, &E, error) || !graft_lower_arg_int (ctx, node, 4, 1, &H, error) ||
      !graft_lower_arg_int (ctx, node, 10, 1, &need_weights, error))
    return FALSE;
  for (guint k = 0; k < 9; k++)
    if (k != 3 && k != 4 && (t[k] = graft_lower_arg_tensor (ctx, node, k, error)) == NULL)
      return FALSE;
  if (t[0] != t[1] || t[1] != t[2])
    return graft_lower_fail (error, node, "attention with different query, key and value is not lowered yet");
  if (!graft_lower_arg_is_none (ctx, node, 9))
    return graft_lower_fail (error, node, "an attention mask on the fast path is not lowered yet");
  if (need_weights && node->outputs->len > 1 && ((GraftValue *) g_ptr_array_index (node->outputs, 1))->consumers->len > 0)
    return graft_lower_fail (error, node, "the attention weights output is not lowered yet");
  if (H <= 0 || E <= 0 || E % H != 0 || graft_lower_rank (ctx, t[0]) != 3)
    return graft_lower_fail (error, node, "embed_dim %" G_GINT64_FORMAT " with %" G_GINT64_FORMAT " heads on a "
                             "[batch, length, embed] input", E, H);
  graft_lower_set_output (ctx, node, 0, self_attention (ctx, t[0], E, H, t[5], t[6], t[7], t[8]));
  if (node->outputs->len > 1)
    graft_lower_bind (ctx, g_ptr_array_index (node->outputs, 1), g_new0 (LowerValue, 1));
  return TRUE;
}

/* _transformer_encoder_layer_fwd(src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias,
 * use_gelu, norm_first, eps, norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2, ffn_weight_1, ffn_bias_1,
 * ffn_weight_2, ffn_bias_2, mask, mask_type): the fast path nn.TransformerEncoderLayer takes in eval mode. */
static gboolean
lower_encoder_layer (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gint64 E, H, gelu, norm_first;
  double eps;
  GraftValue *t[18] = { NULL };
  if (!graft_lower_arg_int (ctx, node, 1, 0, &E, error) || !graft_lower_arg_int (ctx, node, 2, 1, &H, error) ||
      !graft_lower_arg_int (ctx, node, 7, 0, &gelu, error) || !graft_lower_arg_int (ctx, node, 8, 0, &norm_first, error) ||
      !graft_lower_arg_double (ctx, node, 9, 1e-5, &eps, error))
    return FALSE;
  if (!graft_lower_arg_is_none (ctx, node, 18))
    return graft_lower_fail (error, node, "an attention mask on the fast path is not lowered yet");
  if (H <= 0 || E <= 0 || E % H != 0)
    return graft_lower_fail (error, node, "embed_dim %" G_GINT64_FORMAT " with %" G_GINT64_FORMAT " heads", E, H);
  for (guint k = 0; k < 18; k++)
    if (k != 1 && k != 2 && (k < 7 || k > 9) && (t[k] = graft_lower_arg_tensor (ctx, node, k, error)) == NULL)
      return FALSE;
  GraftValue *x = t[0];
  GraftValue *attn_in = norm_first ? layer_norm (ctx, x, t[10], t[11], eps) : x;
  GraftValue *h = graft_lower_op (ctx, "Add", 2, x, self_attention (ctx, attn_in, E, H, t[3], t[4], t[5], t[6]));
  if (!norm_first)
    h = layer_norm (ctx, h, t[10], t[11], eps);
  GraftValue *ffn_in = norm_first ? layer_norm (ctx, h, t[12], t[13], eps) : h;
  GraftValue *hidden = linear (ctx, ffn_in, t[14], t[15]);
  if (gelu)
    {
      GraftValue *inner = graft_lower_op (ctx, "Erf", 1, graft_lower_op (ctx, "Div", 2, hidden,
                                                                          graft_lower_const_scalar (ctx, GRAFT_DTYPE_FLOAT32, G_SQRT2)));
      GraftValue *half = graft_lower_op (ctx, "Mul", 2, hidden, graft_lower_const_scalar (ctx, GRAFT_DTYPE_FLOAT32, 0.5));
      hidden = graft_lower_op (ctx, "Mul", 2, half, graft_lower_op (ctx, "Add", 2, inner,
                                                                   graft_lower_const_scalar (ctx, GRAFT_DTYPE_FLOAT32, 1)));
    }
  else
    hidden = graft_lower_op (ctx, "Relu", 1, hidden);
  GraftValue *y = graft_lower_op (ctx, "Add", 2, h, linear (ctx, hidden, t[16], t[17]));
  if (!norm_first)
    y = layer_norm (ctx, y, t[12], t[13], eps);
  graft_lower_set_output (ctx, node, 0, y);
  return TRUE;
}

/* addmm(self, mat1, mat2, beta, alpha) = beta·self + alpha·mat1@mat2 */
static gboolean
lower_addmm (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  double beta, alpha;
  GraftValue *c = graft_lower_arg_tensor (ctx, node, 0, error);
  GraftValue *a = c ? graft_lower_arg_tensor (ctx, node, 1, error) : NULL;
  GraftValue *b = a ? graft_lower_arg_tensor (ctx, node, 2, error) : NULL;
  if (b == NULL || !graft_lower_arg_double (ctx, node, 3, 1, &beta, error) ||
      !graft_lower_arg_double (ctx, node, 4, 1, &alpha, error))
    return FALSE;
  graft_lower_set_output (ctx, node, 0, gemm (ctx, a, b, c, FALSE, alpha, beta));
  return TRUE;
}

static gboolean
lower_matmul (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  GraftValue *a = graft_lower_arg_tensor (ctx, node, 0, error);
  GraftValue *b = a ? graft_lower_arg_tensor (ctx, node, 1, error) : NULL;
  if (b == NULL)
    return FALSE;
  graft_lower_set_output (ctx, node, 0, graft_lower_op (ctx, "MatMul", 2, a, b));
  return TRUE;
}

/* softmax(input, dim, dtype) / log_softmax */
static gboolean
lower_softmax (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gint64 dim, dtype;
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  if (x == NULL || !graft_lower_arg_int (ctx, node, 1, -1, &dim, error) ||
      !graft_lower_arg_int (ctx, node, 2, -1, &dtype, error))
    return FALSE;
  if (dtype >= 0)
    x = graft_lower_cast (ctx, x, graft_dtype_from_torch_scalar_type (dtype));
  GraftNode *n = graft_lower_node (ctx, g_str_has_prefix (node->op_type, "log_") ? "LogSoftmax" : "Softmax", 1, 1, x);
  graft_node_add_attribute (n, graft_attribute_new_int ("axis", dim));
  graft_lower_set_output (ctx, node, 0, graft_lower_finish (ctx, n));
  return TRUE;
}

/* embedding(weight, indices, padding_idx, …) → Gather(weight, indices) */
static gboolean
lower_embedding (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  GraftValue *w = graft_lower_arg_tensor (ctx, node, 0, error);
  GraftValue *indices = w ? graft_lower_arg_tensor (ctx, node, 1, error) : NULL;
  if (indices == NULL)
    return FALSE;
  graft_lower_set_output (ctx, node, 0, graft_lower_op (ctx, "Gather", 2, w, indices));
  return TRUE;
}

/* Dim -2 of value as a 0-d int64, for Range. */
static GraftValue *
length_of (GraftLowerContext *ctx, GraftValue *value)
{
  return graft_lower_op (ctx, "Gather", 2, graft_lower_op (ctx, "Shape", 1, value),
                         graft_lower_const_ints (ctx, (gint64[]) { -2 }, 1, TRUE));
}

/* is_causal's mask: a [L, S] tensor that is 0 where key j ≤ query i and -inf
 * above that diagonal (torch's tril of ones, aligned at the top left), made
 * from the shapes so that it follows any sequence length. */
static GraftValue *
causal_mask (GraftLowerContext *ctx, GraftValue *q, GraftValue *k, GraftDType dtype)
{
  GraftValue *zero = graft_lower_const_ints (ctx, (gint64[]) { 0 }, 1, TRUE);
  GraftValue *one = graft_lower_const_ints (ctx, (gint64[]) { 1 }, 1, TRUE);
  GraftValue *rows = graft_lower_op (ctx, "Range", 3, zero, length_of (ctx, q), one);
  GraftValue *cols = graft_lower_op (ctx, "Range", 3, zero, length_of (ctx, k), one);
  rows = graft_lower_op (ctx, "Unsqueeze", 2, rows, graft_lower_const_int (ctx, 1));
  GraftValue *above = graft_lower_op (ctx, "Greater", 2, cols, rows);
  return graft_lower_op (ctx, "Where", 3, above, graft_lower_const_scalar (ctx, dtype, -INFINITY),
                         graft_lower_const_scalar (ctx, dtype, 0));
}

/* scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa):
 * softmax(q·kᵀ·scale + mask)·v, the scale split over q and k as torch.onnx does. */
static gboolean
lower_sdpa (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gint64 causal;
  double scale;
  int rank;
  GraftValue *q = graft_lower_arg_tensor (ctx, node, 0, error);
  GraftValue *k = q ? graft_lower_arg_tensor (ctx, node, 1, error) : NULL;
  GraftValue *v = k ? graft_lower_arg_tensor (ctx, node, 2, error) : NULL;
  if (v == NULL || !graft_lower_arg_int (ctx, node, 5, 0, &causal, error) ||
      !graft_lower_arg_double (ctx, node, 6, NAN, &scale, error) || !graft_lower_need_rank (ctx, k, &rank, error))
    return FALSE;
  if (causal && !graft_lower_arg_is_none (ctx, node, 3))
    return graft_lower_fail (error, node, "is_causal=True with an attn_mask (torch refuses it too)");
  GraftDType dtype = graft_lower_dtype (ctx, q);
  GraftValue *scaled_q;
  if (isnan (scale))
    {
      /* 1/√(last dim of q), from the shape so it stays right for any size */
      GraftValue *shape = graft_lower_op (ctx, "Shape", 1, q);
      GraftNode *last = graft_lower_node (ctx, "Slice", 1, 3, shape, graft_lower_const_int (ctx, -1),
                                          graft_lower_const_int (ctx, G_MAXINT64));
      GraftValue *d = graft_lower_cast (ctx, graft_lower_finish (ctx, last), dtype);
      scaled_q = graft_lower_op (ctx, "Div", 2, q, graft_lower_op (ctx, "Sqrt", 1, d));
    }
  else
    scaled_q = graft_lower_op (ctx, "Mul", 2, q, graft_lower_const_scalar (ctx, dtype, scale));
  gint64 perm[8];
  for (int i = 0; i < rank; i++)
    perm[i] = i;
  perm[rank - 2] = rank - 1;
  perm[rank - 1] = rank - 2;
  GraftNode *t = graft_lower_node (ctx, "Transpose", 1, 1, k);
  add_ints (t, "perm", perm, rank);
  GraftValue *scores = graft_lower_op (ctx, "MatMul", 2, scaled_q, graft_lower_finish (ctx, t));
  if (!graft_lower_arg_is_none (ctx, node, 3))
    {
      GraftValue *mask = graft_lower_arg_tensor (ctx, node, 3, error);
      if (mask == NULL)
        return FALSE;
      if (graft_lower_dtype (ctx, mask) == GRAFT_DTYPE_BOOL)
        mask = graft_lower_op (ctx, "Where", 3, mask, graft_lower_const_scalar (ctx, dtype, 0),
                               graft_lower_const_scalar (ctx, dtype, -INFINITY));
      scores = graft_lower_op (ctx, "Add", 2, scores, mask);
    }
  if (causal)
    scores = graft_lower_op (ctx, "Add", 2, scores, causal_mask (ctx, q, k, dtype));
  GraftNode *softmax = graft_lower_node (ctx, "Softmax", 1, 1, scores);
  graft_node_add_attribute (softmax, graft_attribute_new_int ("axis", -1));
  graft_lower_set_output (ctx, node, 0, graft_lower_op (ctx, "MatMul", 2, graft_lower_finish (ctx, softmax), v));
  return TRUE;
}

/* An ONNX recurrent layer's kind: torch's gate blocks, in ONNX's order. */
typedef struct {
  const char *op_type;
  guint gates;
  int order[4];   /* ONNX gate g is torch's gate order[g] */
} RnnCell;

/* LSTM: torch (i, f, g, o), ONNX (i, o, f, c); GRU: torch (r, z, n), ONNX (z, r, h). */
static const RnnCell lstm_cell = { "LSTM", 4, { 0, 3, 1, 2 } };
static const RnnCell gru_cell = { "GRU", 3, { 1, 0, 2 } };

/* A [directions, gates·H·n_parts, cols] constant from torch's weights
 * parts[d·n_parts + p] with the gate blocks reordered as ONNX's; for biases
 * cols = 1, n_parts = 2 (input and hidden bias one after the other) and the
 * constant is [directions, 2·gates·H]. */
static GraftValue *
rnn_weight (GraftLowerContext *ctx, const RnnCell *cell, GraftValue *const *parts, guint n_dirs, guint n_parts,
            gint64 hidden, gint64 cols)
{
  gint64 block = hidden * cols, per_part = cell->gates * block;
  float *data = g_new (float, per_part * n_parts * n_dirs);
  for (guint p = 0; p < n_parts * n_dirs; p++)
    {
      GraftTensor *t = parts[p]->initializer;
      GBytes *bytes = t && t->dtype == GRAFT_DTYPE_FLOAT32 && graft_tensor_get_numel (t) == per_part
                      ? graft_tensor_get_data (t, NULL) : NULL;
      if (bytes == NULL)
        {
          g_free (data);
          return NULL;
        }
      const float *src = g_bytes_get_data (bytes, NULL);
      for (guint g = 0; g < cell->gates; g++)
        memcpy (data + p * per_part + g * block, src + cell->order[g] * block, block * sizeof (float));
    }
  gint64 dims[3] = { n_dirs, per_part / cols * n_parts, cols };
  GraftTensor *w = graft_tensor_new (NULL, GRAFT_DTYPE_FLOAT32, cols == 1 ? 2 : 3, dims);
  g_autoptr(GBytes) bytes = g_bytes_new_take (data, per_part * n_parts * n_dirs * sizeof (float));
  graft_tensor_set_data (w, bytes, NULL);
  return _graft_lower_add_constant (ctx, w);
}

static GraftValue *
slice_layer (GraftLowerContext *ctx, GraftValue *state, gint64 first, gint64 count)
{
  return graft_lower_op (ctx, "Slice", 4, state, graft_lower_const_int (ctx, first),
                         graft_lower_const_int (ctx, first + count), graft_lower_const_int (ctx, 0));
}

static GraftValue *
swap_first_dims (GraftLowerContext *ctx, GraftValue *x)
{
  GraftNode *t = graft_lower_node (ctx, "Transpose", 1, 1, x);
  add_ints (t, "perm", (gint64[]) { 1, 0, 2 }, 3);
  return graft_lower_finish (ctx, t);
}

/* lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)
 * gru(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
 * one ONNX LSTM/GRU per layer (dropout between layers is off in eval). hx is
 * [h0, c0] for an LSTM and h0 for a GRU, each [layers·directions, batch, H]. */
static gboolean
lower_rnn (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  const RnnCell *cell = strcmp (node->op_type, "gru") == 0 ? &gru_cell : &lstm_cell;
  gboolean is_lstm = cell == &lstm_cell;
  gint64 has_biases, layers, train, bidirectional, batch_first;
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  LowerValue *hx = graft_lower_arg (ctx, node, 1), *params = graft_lower_arg (ctx, node, 2);
  if (x == NULL || !graft_lower_arg_int (ctx, node, 3, 1, &has_biases, error) ||
      !graft_lower_arg_int (ctx, node, 4, 1, &layers, error) || !graft_lower_arg_int (ctx, node, 6, 0, &train, error) ||
      !graft_lower_arg_int (ctx, node, 7, 0, &bidirectional, error) ||
      !graft_lower_arg_int (ctx, node, 8, 0, &batch_first, error))
    return FALSE;
  guint dirs = bidirectional ? 2 : 1;
  guint per_dir = has_biases ? 4 : 2;
  guint per_layer = per_dir * dirs;
  gboolean hx_ok = is_lstm ? hx != NULL && hx->kind == LOWER_LIST && hx->items->len == 2
                           : hx != NULL && hx->kind == LOWER_TENSOR;
  if (!hx_ok || params == NULL || params->kind != LOWER_LIST || params->items->len != per_layer * layers)
    return graft_lower_fail (error, node, "expects %s and %u weights per layer", is_lstm ? "[h0, c0]" : "h0", per_layer);
  for (guint i = 0; i < params->items->len; i++)
    if (((LowerValue *) params->items->pdata[i])->kind != LOWER_TENSOR)
      return graft_lower_fail (error, node, "weight %u is not a tensor", i);
  GraftValue *h0 = is_lstm ? ((LowerValue *) hx->items->pdata[0])->value : hx->value;
  GraftValue *c0 = is_lstm ? ((LowerValue *) hx->items->pdata[1])->value : NULL;
  GraftValue *seq = batch_first ? swap_first_dims (ctx, x) : x;
  g_autoptr(GPtrArray) last_h = g_ptr_array_new ();
  g_autoptr(GPtrArray) last_c = g_ptr_array_new ();
  for (gint64 l = 0; l < layers; l++)
    {
      /* torch's order per layer: w_ih, w_hh, b_ih, b_hh, then the same for the reverse direction */
      GraftValue *w_ih[2], *w_hh[2], *b[4];
      for (guint d = 0; d < dirs; d++)
        {
          w_ih[d] = ((LowerValue *) params->items->pdata[l * per_layer + d * per_dir])->value;
          w_hh[d] = ((LowerValue *) params->items->pdata[l * per_layer + d * per_dir + 1])->value;
          if (has_biases)
            for (guint k = 0; k < 2; k++)
              b[d * 2 + k] = ((LowerValue *) params->items->pdata[l * per_layer + d * per_dir + 2 + k])->value;
        }
      GraftTensor *t_ih = w_ih[0]->initializer, *t_hh = w_hh[0]->initializer;
      if (t_ih == NULL || t_hh == NULL || t_ih->rank != 2 || t_hh->rank != 2)
        return graft_lower_fail (error, node, "the weights of layer %" G_GINT64_FORMAT " are not constants", l);
      gint64 hidden = t_hh->dims[1];
      GraftValue *W = rnn_weight (ctx, cell, w_ih, dirs, 1, hidden, t_ih->dims[1]);
      GraftValue *R = rnn_weight (ctx, cell, w_hh, dirs, 1, hidden, hidden);
      GraftValue *B = has_biases ? rnn_weight (ctx, cell, b, dirs, 2, hidden, 1) : NULL;
      if (W == NULL || R == NULL || (has_biases && B == NULL))
        return graft_lower_fail (error, node, "the weights of layer %" G_GINT64_FORMAT " are not float32 constants", l);
      GraftNode *rnn = is_lstm
        ? graft_lower_node (ctx, "LSTM", 3, 7, seq, W, R, B, NULL, slice_layer (ctx, h0, l * dirs, dirs),
                            slice_layer (ctx, c0, l * dirs, dirs))
        : graft_lower_node (ctx, "GRU", 2, 6, seq, W, R, B, NULL, slice_layer (ctx, h0, l * dirs, dirs));
      graft_node_add_attribute (rnn, graft_attribute_new_int ("hidden_size", hidden));
      if (bidirectional)
        graft_node_add_attribute (rnn, graft_attribute_new_string ("direction", "bidirectional"));
      if (!is_lstm)  /* torch applies the reset gate after the recurrent product */
        graft_node_add_attribute (rnn, graft_attribute_new_int ("linear_before_reset", 1));
      GraftValue *y = graft_lower_finish (ctx, rnn);
      g_ptr_array_add (last_h, g_ptr_array_index (rnn->outputs, 1));
      if (is_lstm)
        g_ptr_array_add (last_c, g_ptr_array_index (rnn->outputs, 2));
      /* Y is [seq, directions, batch, H]; torch's output is [seq, batch, directions·H] */
      if (bidirectional)
        {
          GraftNode *t = graft_lower_node (ctx, "Transpose", 1, 1, y);
          add_ints (t, "perm", (gint64[]) { 0, 2, 1, 3 }, 4);
          seq = graft_lower_op (ctx, "Reshape", 2, graft_lower_finish (ctx, t),
                                graft_lower_const_ints (ctx, (gint64[]) { 0, 0, -1 }, 3, FALSE));
        }
      else
        seq = graft_lower_op (ctx, "Squeeze", 2, y, graft_lower_const_int (ctx, 1));
    }
  graft_lower_set_output (ctx, node, 0, batch_first ? swap_first_dims (ctx, seq) : seq);
  graft_lower_set_output (ctx, node, 1, last_h->len == 1 ? last_h->pdata[0] : graft_lower_concat (ctx, last_h, 0));
  if (is_lstm)
    graft_lower_set_output (ctx, node, 2, last_c->len == 1 ? last_c->pdata[0] : graft_lower_concat (ctx, last_c, 0));
  return TRUE;
}

const GraftLowering graft_lowerings_nn[] = {
  { "aten::lstm", 0, lower_rnn,
    "input hx params has_biases num_layers dropout train bidirectional batch_first" },
  { "aten::gru", 0, lower_rnn,
    "input hx params has_biases num_layers dropout train bidirectional batch_first" },
  { "aten::conv1d", 0, lower_conv, "input weight bias stride padding dilation groups" },
  { "aten::conv2d", 0, lower_conv, "input weight bias stride padding dilation groups" },
  { "aten::_convolution_mode", 0, lower_conv, "input weight bias stride padding dilation groups" },
  { "aten::conv3d", 0, lower_conv, "input weight bias stride padding dilation groups" },
  { "aten::conv_transpose1d", 0, lower_conv, "input weight bias stride padding output_padding groups dilation" },
  { "aten::conv_transpose2d", 0, lower_conv, "input weight bias stride padding output_padding groups dilation" },
  { "aten::conv_transpose3d", 0, lower_conv, "input weight bias stride padding output_padding groups dilation" },
  { "aten::_convolution", 0, lower_conv,
    "input weight bias stride padding dilation transposed output_padding groups benchmark deterministic cudnn_enabled allow_tf32" },
  { "aten::batch_norm", 0, lower_batch_norm,
    "input weight bias running_mean running_var training momentum eps cudnn_enabled" },
  { "aten::layer_norm", 0, lower_layer_norm, "input normalized_shape weight bias eps cudnn_enable" },
  { "aten::group_norm", 0, lower_group_norm, "input num_groups weight bias eps cudnn_enabled" },
  { "aten::instance_norm", 0, lower_instance_norm,
    "input weight bias running_mean running_var use_input_stats momentum eps cudnn_enabled" },
  { "aten::grid_sampler", 16, lower_grid_sampler, "input grid interpolation_mode padding_mode align_corners" },
  { "aten::upsample_nearest1d", 0, lower_upsample, "input output_size scale_factors" },
  { "aten::upsample_nearest2d", 0, lower_upsample, "input output_size scale_factors" },
  { "aten::upsample_nearest3d", 0, lower_upsample, "input output_size scale_factors" },
  { "aten::_upsample_nearest_exact2d", 0, lower_upsample, "input output_size scale_factors" },
  { "aten::upsample_linear1d", 0, lower_upsample, "input output_size align_corners scale_factors" },
  { "aten::upsample_bilinear2d", 0, lower_upsample, "input output_size align_corners scale_factors" },
  { "aten::upsample_trilinear3d", 0, lower_upsample, "input output_size align_corners scale_factors" },
  { "aten::upsample_bicubic2d", 0, lower_upsample, "input output_size align_corners scale_factors" },
  { "aten::einsum", 12, lower_einsum, "equation tensors path" },
  { "aten::_weight_norm", 0, lower_weight_norm, "v g dim" },
  { "aten::rand", 0, lower_rand, "size dtype layout device pin_memory" },
  { "aten::max_pool1d", 0, lower_pool, "self kernel_size stride padding dilation ceil_mode" },
  { "aten::max_pool2d", 0, lower_pool, "self kernel_size stride padding dilation ceil_mode" },
  { "aten::avg_pool2d", 0, lower_pool, "self kernel_size stride padding ceil_mode count_include_pad divisor_override" },
  { "aten::adaptive_avg_pool1d", 0, lower_adaptive_avg_pool, "self output_size" },
  { "aten::adaptive_avg_pool2d", 0, lower_adaptive_avg_pool, "self output_size" },
  { "aten::adaptive_avg_pool3d", 0, lower_adaptive_avg_pool, "self output_size" },
  { "aten::linear", 0, lower_linear, "input weight bias" },
  { "aten::addmm", 0, lower_addmm, "self mat1 mat2 beta alpha" },
  { "aten::matmul", 0, lower_matmul, "self other" },
  { "aten::mm", 0, lower_matmul, "self mat2" },
  { "aten::bmm", 0, lower_matmul, "self mat2" },
  { "aten::softmax", 0, lower_softmax, "self dim dtype" },
  { "aten::log_softmax", 0, lower_softmax, "self dim dtype" },
  { "aten::embedding", 0, lower_embedding, "weight indices padding_idx scale_grad_by_freq sparse" },
  { "aten::_native_multi_head_attention", 0, lower_native_mha,
    "query key value embed_dim num_head qkv_weight qkv_bias proj_weight proj_bias mask need_weights "
    "average_attn_weights mask_type" },
  { "aten::_transformer_encoder_layer_fwd", 0, lower_encoder_layer,
    "src embed_dim num_heads qkv_weight qkv_bias proj_weight proj_bias use_gelu norm_first eps norm_weight_1 "
    "norm_bias_1 norm_weight_2 norm_bias_2 ffn_weight_1 ffn_bias_1 ffn_weight_2 ffn_bias_2 mask mask_type" },
  { "aten::scaled_dot_product_attention", 0, lower_sdpa,
    "query key value attn_mask dropout_p is_causal scale enable_gqa" },
  { NULL }
};
