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
 * _convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, …) */
static gboolean
lower_conv (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gboolean underscore = strcmp (node->op_type, "_convolution") == 0;
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  GraftValue *w = x ? graft_lower_arg_tensor (ctx, node, 1, error) : NULL;
  GraftValue *b = NULL;
  gint64 stride[MAX_SPATIAL], pad[MAX_SPATIAL], dilation[MAX_SPATIAL], groups, transposed = 0;
  guint ns_stride, ns_pad, ns_dilation;
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
      !graft_lower_arg_ints (ctx, node, 5, dilation, ns, &ns_dilation, ns, error) ||
      (underscore && !graft_lower_arg_int (ctx, node, 6, 0, &transposed, error)) ||
      !graft_lower_arg_int (ctx, node, underscore ? 8 : 6, 1, &groups, error))
    return FALSE;
  if (transposed)
    return graft_lower_fail (error, node, "transposed convolution through _convolution is not lowered yet");
  for (guint i = 0; i < ns; i++)
    {
      if (ns_stride == 0) stride[i] = 1;
      if (ns_pad == 0) pad[i] = 0;
      if (ns_dilation == 0) dilation[i] = 1;
    }
  GraftNode *conv = graft_lower_node (ctx, "Conv", 1, b ? 3 : 2, x, w, b);
  const GraftShape *ws = graft_lower_shape (ctx, w);
  gint64 kernel[MAX_SPATIAL];
  gboolean kernel_known = TRUE;
  for (guint i = 0; i < ns; i++)
    {
      kernel_known &= ws->dims[i + 2].kind == GRAFT_DIM_FIXED;
      kernel[i] = ws->dims[i + 2].value;
    }
  if (kernel_known)
    add_ints (conv, "kernel_shape", kernel, ns);
  add_ints (conv, "strides", stride, ns);
  add_pads (conv, pad, ns);
  add_ints (conv, "dilations", dilation, ns);
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

/* layer_norm(input, normalized_shape, weight, bias, eps, cudnn_enable) */
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
  if (scale == NULL)
    {
      gint64 numel = 1;
      for (guint i = 0; i < n; i++)
        numel *= shape[i];
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

/* adaptive_avg_pool2d(input, output_size): GlobalAveragePool for 1×1,
 * an AveragePool when the input size divides evenly. */
static gboolean
lower_adaptive_avg_pool (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gint64 size[2];
  guint n;
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  if (x == NULL || !graft_lower_arg_ints (ctx, node, 1, size, 2, &n, 2, error))
    return FALSE;
  if (n == 2 && size[0] == 1 && size[1] == 1)
    {
      graft_lower_set_output (ctx, node, 0, graft_lower_op (ctx, "GlobalAveragePool", 1, x));
      return TRUE;
    }
  const GraftShape *s = graft_lower_shape (ctx, x);
  if (s->rank != 4 || s->dims[2].kind != GRAFT_DIM_FIXED || s->dims[3].kind != GRAFT_DIM_FIXED ||
      s->dims[2].value % size[0] != 0 || s->dims[3].value % size[1] != 0)
    return graft_lower_fail (error, node, "output size other than 1×1 needs fixed input sizes that it divides");
  gint64 kernel[2] = { s->dims[2].value / size[0], s->dims[3].value / size[1] };
  GraftNode *pool = graft_lower_node (ctx, "AveragePool", 1, 1, x);
  add_ints (pool, "kernel_shape", kernel, 2);
  add_ints (pool, "strides", kernel, 2);
  graft_lower_set_output (ctx, node, 0, graft_lower_finish (ctx, pool));
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

/* linear(input, weight, bias): Gemm for a 2-D input, else MatMul by the
 * transposed weight (+ bias). */
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
  if (graft_lower_rank (ctx, x) == 2 && graft_lower_rank (ctx, w) == 2)
    {
      graft_lower_set_output (ctx, node, 0, gemm (ctx, x, w, b, TRUE, 1, 1));
      return TRUE;
    }
  GraftNode *t = graft_lower_node (ctx, "Transpose", 1, 1, w);
  add_ints (t, "perm", (gint64[]) { 1, 0 }, 2);
  GraftValue *y = graft_lower_op (ctx, "MatMul", 2, x, graft_lower_finish (ctx, t));
  if (b != NULL)
    y = graft_lower_op (ctx, "Add", 2, y, b);
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
    x = graft_lower_cast (ctx, x, graft_lower_scalar_type (dtype));
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
  if (causal)
    return graft_lower_fail (error, node, "is_causal=True is not lowered yet; pass the causal mask as attn_mask");
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
  GraftNode *softmax = graft_lower_node (ctx, "Softmax", 1, 1, scores);
  graft_node_add_attribute (softmax, graft_attribute_new_int ("axis", -1));
  graft_lower_set_output (ctx, node, 0, graft_lower_op (ctx, "MatMul", 2, graft_lower_finish (ctx, softmax), v));
  return TRUE;
}

const GraftLowering graft_lowerings_nn[] = {
  { "aten::conv1d", 0, lower_conv, "input weight bias stride padding dilation groups" },
  { "aten::conv2d", 0, lower_conv, "input weight bias stride padding dilation groups" },
  { "aten::conv3d", 0, lower_conv, "input weight bias stride padding dilation groups" },
  { "aten::_convolution", 0, lower_conv,
    "input weight bias stride padding dilation transposed output_padding groups benchmark deterministic cudnn_enabled allow_tf32" },
  { "aten::batch_norm", 0, lower_batch_norm,
    "input weight bias running_mean running_var training momentum eps cudnn_enabled" },
  { "aten::layer_norm", 17, lower_layer_norm, "input normalized_shape weight bias eps cudnn_enable" },
  { "aten::max_pool1d", 0, lower_pool, "self kernel_size stride padding dilation ceil_mode" },
  { "aten::max_pool2d", 0, lower_pool, "self kernel_size stride padding dilation ceil_mode" },
  { "aten::avg_pool2d", 0, lower_pool, "self kernel_size stride padding ceil_mode count_include_pad divisor_override" },
  { "aten::adaptive_avg_pool2d", 0, lower_adaptive_avg_pool, "self output_size" },
  { "aten::linear", 0, lower_linear, "input weight bias" },
  { "aten::addmm", 0, lower_addmm, "self mat1 mat2 beta alpha" },
  { "aten::matmul", 0, lower_matmul, "self other" },
  { "aten::mm", 0, lower_matmul, "self mat2" },
  { "aten::bmm", 0, lower_matmul, "self mat2" },
  { "aten::softmax", 0, lower_softmax, "self dim dtype" },
  { "aten::log_softmax", 0, lower_softmax, "self dim dtype" },
  { "aten::embedding", 0, lower_embedding, "weight indices padding_idx scale_grad_by_freq sparse" },
  { "aten::scaled_dot_product_attention", 0, lower_sdpa,
    "query key value attn_mask dropout_p is_causal scale enable_gqa" },
  { NULL }
};
