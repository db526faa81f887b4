#include "analysis/fallback-infer.h"
#include "analysis/sym-dim.h"

#include <string.h>

static GraftDim
window_output_dim (GraftDim in, gint64 kernel, gint64 stride, gint64 pad_total, gint64 dilation, gboolean ceil_mode)
{
  gint64 span, out;

  if (in.kind != GRAFT_DIM_FIXED || stride <= 0)
    return graft_dim_unknown ();
  span = in.value + pad_total - dilation * (kernel - 1) - 1;
  if (span < 0)
    return graft_dim_unknown ();
  out = ceil_mode ? (span + stride - 1) / stride + 1 : span / stride + 1;
  return graft_dim_fixed (out);
}

/* Conv and pooling: N, C_out, then one windowed dim per spatial axis. */
static gboolean
infer_windowed (GraftInferContext *ctx, gint64 channels, const gint64 *kernel, guint n_kernel, GError **error)
{
  GraftInferValue *x = graft_infer_input (ctx, 0);
  guint n_strides, n_pads, n_dilations;
  const gint64 *strides = graft_node_attr_ints (ctx->node, "strides", &n_strides);
  const gint64 *pads = graft_node_attr_ints (ctx->node, "pads", &n_pads);
  const gint64 *dilations = graft_node_attr_ints (ctx->node, "dilations", &n_dilations);
  const char *auto_pad = graft_node_attr_string (ctx->node, "auto_pad", "NOTSET");
  gboolean ceil_mode = graft_node_attr_int (ctx->node, "ceil_mode", 0) != 0;
  GraftShape out;

  if (x == NULL)
    return graft_kernel_fail (error, "input X is missing");
  if (x->shape.rank < 0 || kernel == NULL || (guint) x->shape.rank != n_kernel + 2)
    {
      graft_infer_set_output_unknown (ctx, 0, x->dtype, x->shape.rank);
      return TRUE;
    }
  graft_shape_init (&out, x->shape.rank);
  out.dims[0] = x->shape.dims[0];
  out.dims[1] = channels >= 0 ? graft_dim_fixed (channels) : x->shape.dims[1];
  for (guint i = 0; i < n_kernel; i++)
    {
      gint64 stride = strides && i < n_strides ? strides[i] : 1;
      gint64 dilation = dilations && i < n_dilations ? dilations[i] : 1;
      gint64 pad = pads && n_pads == 2 * n_kernel ? pads[i] + pads[i + n_kernel] : 0;
      GraftDim in = x->shape.dims[i + 2];

      if (strcmp (auto_pad, "SAME_UPPER") == 0 || strcmp (auto_pad, "SAME_LOWER") == 0)
        out.dims[i + 2] = in.kind == GRAFT_DIM_FIXED ? graft_dim_fixed ((in.value + stride - 1) / stride)
                                                     : graft_dim_unknown ();
      else
        out.dims[i + 2] = window_output_dim (in, kernel[i], stride, pad, dilation, ceil_mode);
    }
  graft_infer_set_output (ctx, 0, x->dtype, &out);
  graft_shape_clear (&out);
  return TRUE;
}

static gboolean
infer_conv (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *w = graft_infer_input (ctx, 1);
  guint n_kernel;
  const gint64 *kernel = graft_node_attr_ints (ctx->node, "kernel_shape", &n_kernel);
  g_autofree gint64 *from_weight = NULL;

  if (w == NULL || w->shape.rank < 3 || w->shape.dims[0].kind != GRAFT_DIM_FIXED)
    return infer_windowed (ctx, -1, NULL, 0, error);
  if (kernel == NULL)
    {
      n_kernel = w->shape.rank - 2;
      from_weight = g_new (gint64, n_kernel);
      for (guint i = 0; i < n_kernel; i++)
        from_weight[i] = w->shape.dims[i + 2].kind == GRAFT_DIM_FIXED ? w->shape.dims[i + 2].value : 1;
      kernel = from_weight;
    }
  return infer_windowed (ctx, w->shape.dims[0].value, kernel, n_kernel, error);
}

static gboolean
infer_pool (GraftInferContext *ctx, GError **error)
{
  guint n_kernel;
  const gint64 *kernel = graft_node_attr_ints (ctx->node, "kernel_shape", &n_kernel);

  return infer_windowed (ctx, -1, kernel, n_kernel, error);
}

static gboolean
infer_global_pool (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *x = graft_infer_input (ctx, 0);
  GraftShape out;

  if (x == NULL)
    return graft_kernel_fail (error, "input X is missing");
  if (x->shape.rank < 2)
    {
      graft_infer_set_output_unknown (ctx, 0, x->dtype, x->shape.rank);
      return TRUE;
    }
  graft_shape_copy (&out, &x->shape);
  for (int i = 2; i < out.rank; i++)
    out.dims[i] = graft_dim_fixed (1);
  graft_infer_set_output (ctx, 0, x->dtype, &out);
  graft_shape_clear (&out);
  return TRUE;
}

static gboolean
infer_flatten (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *x = graft_infer_input (ctx, 0);
  gint64 axis = graft_node_attr_int (ctx->node, "axis", 1);
  GraftShape out;

  if (x == NULL)
    return graft_kernel_fail (error, "input is missing");
  if (x->shape.rank < 0)
    {
      graft_infer_set_output_unknown (ctx, 0, x->dtype, 2);
      return TRUE;
    }
  if (axis < 0)
    axis += x->shape.rank;
  if (axis < 0 || axis > x->shape.rank)
    return graft_kernel_fail (error, "axis %" G_GINT64_FORMAT " is out of range", axis);
  graft_shape_init (&out, 2);
  out.dims[0] = graft_shape_get_dim_product (&x->shape, 0, axis);
  out.dims[1] = graft_shape_get_dim_product (&x->shape, axis, x->shape.rank);
  graft_infer_set_output (ctx, 0, x->dtype, &out);
  graft_shape_clear (&out);
  return TRUE;
}

static GraftDim
dim_of (GraftInferValue *v, int i)
{
  if (v == NULL || v->shape.rank < 0 || i < 0 || i >= v->shape.rank)
    return graft_dim_unknown ();
  return v->shape.dims[i];
}

static gboolean
infer_gemm (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *a = graft_infer_input (ctx, 0), *b = graft_infer_input (ctx, 1);
  gboolean ta = graft_node_attr_int (ctx->node, "transA", 0) != 0;
  gboolean tb = graft_node_attr_int (ctx->node, "transB", 0) != 0;
  GraftShape out;

  if (a == NULL || b == NULL)
    return graft_kernel_fail (error, "inputs A and B are required");
  graft_shape_init (&out, 2);
  out.dims[0] = dim_of (a, ta ? 1 : 0);
  out.dims[1] = dim_of (b, tb ? 0 : 1);
  graft_infer_set_output (ctx, 0, a->dtype, &out);
  graft_shape_clear (&out);
  return TRUE;
}

static gboolean
infer_matmul (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *a = graft_infer_input (ctx, 0), *b = graft_infer_input (ctx, 1);
  GraftShape batch_a = GRAFT_SHAPE_UNKNOWN, batch_b = GRAFT_SHAPE_UNKNOWN, batch, out;

  if (a == NULL || b == NULL)
    return graft_kernel_fail (error, "inputs A and B are required");
  if (a->shape.rank < 2 || b->shape.rank < 2)
    {
      graft_infer_set_output (ctx, 0, a->dtype, NULL);
      return TRUE;
    }
  batch_a.rank = a->shape.rank - 2;
  batch_a.dims = a->shape.dims;
  batch_b.rank = b->shape.rank - 2;
  batch_b.dims = b->shape.dims;
  if (!graft_shape_broadcast (&batch_a, &batch_b, &batch, error))
    return FALSE;
  graft_shape_init (&out, batch.rank + 2);
  for (int i = 0; i < batch.rank; i++)
    out.dims[i] = batch.dims[i];
  out.dims[batch.rank] = a->shape.dims[a->shape.rank - 2];
  out.dims[batch.rank + 1] = b->shape.dims[b->shape.rank - 1];
  graft_infer_set_output (ctx, 0, a->dtype, &out);
  graft_shape_clear (&out);
  graft_shape_clear (&batch);
  return TRUE;
}

static gboolean
infer_first_input (GraftInferContext *ctx, GError **error)
{
  return graft_infer_same_as_input (ctx, error);
}

/* Slice keeps every dim it does not slice, even when the starts and ends
 * are computed at run time (exporters compute them for attention heads). */
static gboolean
infer_slice (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *x = graft_infer_input (ctx, 0);
  g_autofree gint64 *axes_input = NULL;
  const gint64 *axes;
  guint n_attr = 0;
  gint64 n_axes = 0;
  GraftShape out;

  if (x == NULL)
    return graft_kernel_fail (error, "input data is missing");
  if (x->shape.rank < 0)
    {
      graft_infer_set_output (ctx, 0, x->dtype, NULL);
      return TRUE;
    }
  axes = graft_node_attr_ints (ctx->node, "axes", &n_attr);
  n_axes = n_attr;
  if (axes == NULL && ctx->n_inputs > 3 && graft_infer_input (ctx, 3) != NULL)
    axes = axes_input = graft_infer_input_ints (ctx, 3, &n_axes);
  graft_shape_copy (&out, &x->shape);
  if (axes == NULL && (ctx->n_inputs > 3 || graft_node_has_attr (ctx->node, "starts")))
    {
      /* Axes exist but are not known: any dim may be sliced. */
      if ((ctx->n_inputs > 3 && graft_infer_input (ctx, 3) != NULL) || graft_node_has_attr (ctx->node, "axes"))
        for (int i = 0; i < out.rank; i++)
          out.dims[i] = graft_dim_unknown ();
    }
  if (axes == NULL && !(ctx->n_inputs > 3 && graft_infer_input (ctx, 3) != NULL))
    {
      /* Default axes: the first len(starts) dims. */
      GraftInferValue *starts = graft_infer_input (ctx, 1);
      guint n_starts = 0;
      gint64 count = graft_node_attr_ints (ctx->node, "starts", &n_starts) ? n_starts
                     : starts && starts->shape.rank == 1 && starts->shape.dims[0].kind == GRAFT_DIM_FIXED
                       ? starts->shape.dims[0].value : out.rank;
      for (gint64 i = 0; i < count && i < out.rank; i++)
        out.dims[i] = graft_dim_unknown ();
    }
  for (gint64 i = 0; axes != NULL && i < n_axes; i++)
    {
      gint64 a = axes[i] < 0 ? axes[i] + out.rank : axes[i];
      if (a >= 0 && a < out.rank)
        out.dims[a] = graft_dim_unknown ();
    }
  graft_infer_set_output (ctx, 0, x->dtype, &out);
  graft_shape_clear (&out);
  return TRUE;
}

typedef struct {
  const char *op;
  GraftInferFunc infer;
} Fallback;

static const Fallback fallbacks[] = {
  { "onnx::Conv", infer_conv },
  { "onnx::MaxPool", infer_pool },
  { "onnx::AveragePool", infer_pool },
  { "onnx::LpPool", infer_pool },
  { "onnx::GlobalAveragePool", infer_global_pool },
  { "onnx::GlobalMaxPool", infer_global_pool },
  { "onnx::Flatten", infer_flatten },
  { "onnx::Gemm", infer_gemm },
  { "onnx::MatMul", infer_matmul },
  { "onnx::BatchNormalization", infer_first_input },
  { "onnx::Dropout", infer_first_input },
  { "onnx::Softmax", infer_first_input },
  { "onnx::LogSoftmax", infer_first_input },
  { "onnx::LRN", infer_first_input },
  { "onnx::InstanceNormalization", infer_first_input },
  { "onnx::LayerNormalization", infer_first_input },
  { "onnx::Clip", infer_first_input },
  { "onnx::Slice", infer_slice },
};

GraftInferFunc
graft_fallback_infer_lookup (const char *op)
{
  for (gsize i = 0; i < G_N_ELEMENTS (fallbacks); i++)
    if (strcmp (fallbacks[i].op, op) == 0)
      return fallbacks[i].infer;
  return NULL;
}
