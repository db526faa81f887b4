/* Quantisation: QuantizeLinear, DequantizeLinear (per tensor or per
 * axis), DynamicQuantizeLinear; and the signal windows HannWindow,
 * HammingWindow, BlackmanWindow. */
#include <math.h>
#include <string.h>
#include "runtime/kernels/kernel-util.h"

static void
quant_range (GraftDType dtype, double *lo, double *hi)
{
  switch (dtype)
    {
    case GRAFT_DTYPE_INT8: *lo = -128; *hi = 127; break;
    case GRAFT_DTYPE_INT16: *lo = -32768; *hi = 32767; break;
    case GRAFT_DTYPE_UINT16: *lo = 0; *hi = 65535; break;
    case GRAFT_DTYPE_INT32: *lo = -2147483648.0; *hi = 2147483647.0; break;
    default: *lo = 0; *hi = 255; break;
    }
}

static gboolean
infer_quantize (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *x = graft_infer_input (ctx, 0), *zp = graft_infer_input (ctx, 2);
  graft_infer_set_output (ctx, 0, zp ? zp->dtype : GRAFT_DTYPE_UINT8, &x->shape);
  return TRUE;
}

static gboolean
infer_dequantize (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *x = graft_infer_input (ctx, 0), *scale = graft_infer_input (ctx, 1);
  graft_infer_set_output (ctx, 0, scale ? scale->dtype : GRAFT_DTYPE_FLOAT32, &x->shape);
  return TRUE;
}

/* Index into a per-axis parameter for element i of x. */
static gint64
param_index (const GraftRtTensor *x, const GraftRtTensor *param, gint64 axis, gint64 i)
{
  if (param == NULL || param->numel <= 1)
    return 0;
  gint64 inner = graft_dims_product (x->dims, axis + 1, x->rank);
  return (i / MAX (inner, 1)) % x->dims[axis];
}

static gboolean
kernel_quantize (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0], *scale = ctx->inputs[1], *zp = graft_kernel_input (ctx, 2);
  gint64 axis = graft_node_attr_int (ctx->node, "axis", 1);
  if (scale->numel > 1 && !graft_normalize_axis (&axis, x->rank, error))
    return FALSE;
  GraftRtTensor *y = graft_kernel_output (ctx, 0, error);
  if (y == NULL)
    return FALSE;
  double lo, hi;
  quant_range (y->dtype, &lo, &hi);
  for (gint64 i = 0; i < x->numel; i++)
    {
      gint64 k = param_index (x, scale, axis, i);
      double s = graft_rt_tensor_get_f64 (scale, k);
      double z = zp ? graft_rt_tensor_get_f64 (zp, param_index (x, zp, axis, i)) : 0;
      double v = nearbyint (graft_rt_tensor_get_f64 (x, i) / s) + z;
      graft_rt_tensor_set_i64 (y, i, (gint64) CLAMP (v, lo, hi));
    }
  return TRUE;
}

static gboolean
kernel_dequantize (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0], *scale = ctx->inputs[1], *zp = graft_kernel_input (ctx, 2);
  gint64 axis = graft_node_attr_int (ctx->node, "axis", 1);
  if (scale->numel > 1 && !graft_normalize_axis (&axis, x->rank, error))
    return FALSE;
  GraftRtTensor *y = graft_kernel_output (ctx, 0, error);
  if (y == NULL)
    return FALSE;
  for (gint64 i = 0; i < x->numel; i++)
    {
      double s = graft_rt_tensor_get_f64 (scale, param_index (x, scale, axis, i));
      gint64 z = zp ? graft_rt_tensor_get_i64 (zp, param_index (x, zp, axis, i)) : 0;
      graft_rt_tensor_set_f64 (y, i, (double) (graft_rt_tensor_get_i64 (x, i) - z) * s);
    }
  return TRUE;
}

static gboolean
infer_dynamic_quantize (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *x = graft_infer_input (ctx, 0);
  graft_infer_set_output (ctx, 0, GRAFT_DTYPE_UINT8, &x->shape);
  graft_infer_set_output_fixed (ctx, 1, GRAFT_DTYPE_FLOAT32, 0, NULL);
  graft_infer_set_output_fixed (ctx, 2, GRAFT_DTYPE_UINT8, 0, NULL);
  return TRUE;
}

static gboolean
kernel_dynamic_quantize (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0];
  GraftRtTensor *y = graft_kernel_output (ctx, 0, error);
  GraftRtTensor *ys = y ? graft_kernel_output (ctx, 1, error) : NULL;
  GraftRtTensor *yz = ys ? graft_kernel_output (ctx, 2, error) : NULL;
  if (yz == NULL)
    return FALSE;
  float mn = 0, mx = 0;
  for (gint64 i = 0; i < x->numel; i++)
    {
      float v = ((const float *) x->data)[i];
      mn = MIN (mn, v);
      mx = MAX (mx, v);
    }
  float scale = (mx - mn) / 255.0f;
  float zero = scale != 0 ? nearbyintf (CLAMP (0 - mn / scale, 0, 255)) : 0;
  *(float *) ys->data = scale;
  *(guint8 *) yz->data = (guint8) zero;
  for (gint64 i = 0; i < x->numel; i++)
    {
      float v = scale != 0 ? nearbyintf (((const float *) x->data)[i] / scale) + zero : zero;
      ((guint8 *) y->data)[i] = (guint8) CLAMP (v, 0, 255);
    }
  return TRUE;
}

/* ---- windows ---- */

static gboolean
infer_window (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *size = graft_infer_input (ctx, 0);
  GraftDType dtype = graft_node_attr_int (ctx->node, "output_datatype", GRAFT_DTYPE_FLOAT32);
  if (size->data)
    {
      gint64 n = graft_rt_tensor_get_i64 (size->data, 0);
      graft_infer_set_output_fixed (ctx, 0, dtype, 1, &n);
    }
  else
    graft_infer_set_output_unknown (ctx, 0, dtype, 1);
  return TRUE;
}

static gboolean
kernel_window (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *y = graft_kernel_output (ctx, 0, error);
  gboolean periodic = graft_node_attr_int (ctx->node, "periodic", 1);
  const char *op = ctx->node->op_type;
  if (y == NULL)
    return FALSE;
  gint64 n = y->numel;
  double N = periodic ? n : n - 1;
  for (gint64 i = 0; i < n; i++)
    {
      double x = 2 * G_PI * i / N, v;
      if (strcmp (op, "HannWindow") == 0)
        v = 0.5 - 0.5 * cos (x);
      else if (strcmp (op, "HammingWindow") == 0)
        v = 25.0 / 46 - 21.0 / 46 * cos (x);
      else
        v = 0.42 - 0.5 * cos (x) + 0.08 * cos (2 * x);
      graft_rt_tensor_set_f64 (y, i, v);
    }
  return TRUE;
}

#define OP(name, since, infer, kernel) { "onnx::" name, since, 0, infer, kernel, 0 }

const GraftOpSchema graft_ops_quantize[] = {
  OP ("QuantizeLinear", 10, infer_quantize, kernel_quantize),
  OP ("DequantizeLinear", 10, infer_dequantize, kernel_dequantize),
  OP ("DynamicQuantizeLinear", 11, infer_dynamic_quantize, kernel_dynamic_quantize),
  OP ("HannWindow", 17, infer_window, kernel_window),
  OP ("HammingWindow", 17, infer_window, kernel_window),
  OP ("BlackmanWindow", 17, infer_window, kernel_window),
  { NULL }
};
