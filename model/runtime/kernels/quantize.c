/* Quantisation: QuantizeLinear, DequantizeLinear (per tensor or per
 * axis), DynamicQuantizeLinear; and signal processing: the windows
 * HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix, and DFT /
 * STFT (direct O(n²) transforms in double). */
#include <math.h>
#include <string.h>
#include "runtime/kernels/kernel-util.h"
#include "runtime/kernels/simd-target.h"

#include "ir/narrow-dtype.h"

static void
quant_range (GraftDType dtype, double *lo, double *hi)
{
  switch (dtype)
    {
    case GRAFT_DTYPE_INT8: *lo = -128; *hi = 127; break;
    case GRAFT_DTYPE_INT16: *lo = -32768; *hi = 32767; break;
    case GRAFT_DTYPE_UINT16: *lo = 0; *hi = 65535; break;
    case GRAFT_DTYPE_INT32: *lo = -2147483648.0; *hi = 2147483647.0; break;
    case GRAFT_DTYPE_INT4: *lo = -8; *hi = 7; break;
    case GRAFT_DTYPE_UINT4: *lo = 0; *hi = 15; break;
    case GRAFT_DTYPE_INT2: *lo = -2; *hi = 1; break;
    case GRAFT_DTYPE_UINT2: *lo = 0; *hi = 3; break;
    default: *lo = 0; *hi = 255; break;
    }
}

/* The float8/float4 targets take x / scale + zero point unrounded. */
static gboolean
is_narrow_float (GraftDType dtype)
{
  return graft_narrow_dtype_is_narrow (dtype) && dtype != GRAFT_DTYPE_INT4 && dtype != GRAFT_DTYPE_UINT4 &&
         dtype != GRAFT_DTYPE_INT2 && dtype != GRAFT_DTYPE_UINT2;
}

static gboolean
infer_quantize (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *x = graft_infer_input (ctx, 0), *zp = graft_infer_input (ctx, 2);
  GraftDType dtype = graft_node_attr_int (ctx->node, "output_dtype", GRAFT_DTYPE_UNDEFINED);
  if (zp)
    dtype = zp->dtype;
  graft_infer_set_output (ctx, 0, dtype != GRAFT_DTYPE_UNDEFINED ? dtype : GRAFT_DTYPE_UINT8, &x->shape);
  return TRUE;
}

static gboolean
infer_dequantize (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *x = graft_infer_input (ctx, 0), *scale = graft_infer_input (ctx, 1);
  GraftDType dtype = graft_node_attr_int (ctx->node, "output_dtype", GRAFT_DTYPE_UNDEFINED);
  if (dtype == GRAFT_DTYPE_UNDEFINED)
    dtype = scale ? scale->dtype : GRAFT_DTYPE_FLOAT32;
  graft_infer_set_output (ctx, 0, dtype, &x->shape);
  return TRUE;
}

/* How scale and zero point map onto x: one value, one per index of
 * `axis`, or (block_size > 0, opset 21) one per block of block_size
 * indices along `axis`, the parameters having x's rank. */
typedef struct {
  gint64 axis, block_size;
} QuantLayout;

static gboolean
quant_layout_init (QuantLayout *layout, GraftKernelContext *ctx, const GraftRtTensor *x, const GraftRtTensor *scale,
                   GError **error)
{
  layout->axis = graft_node_attr_int (ctx->node, "axis", 1);
  layout->block_size = graft_node_attr_int (ctx->node, "block_size", 0);
  if (scale->numel <= 1 && layout->block_size == 0)
    return TRUE;
  if (!graft_normalize_axis (&layout->axis, x->rank, error))
    return FALSE;
  if (layout->block_size > 0)
    {
      if (scale->rank != x->rank)
        return graft_kernel_fail (error, "blocked scale must have x's rank %d, not %d", x->rank, scale->rank);
      for (int d = 0; d < x->rank; d++)
        {
          gint64 want = d == layout->axis ? (x->dims[d] + layout->block_size - 1) / layout->block_size : x->dims[d];
          if (scale->dims[d] != want)
            return graft_kernel_fail (error, "blocked scale axis %d has %" G_GINT64_FORMAT " values, expected %"
                                      G_GINT64_FORMAT, d, scale->dims[d], want);
        }
    }
  else if (scale->numel != x->dims[layout->axis])
    return graft_kernel_fail (error, "scale has %" G_GINT64_FORMAT " values, axis %" G_GINT64_FORMAT " has %"
                              G_GINT64_FORMAT, scale->numel, layout->axis, x->dims[layout->axis]);
  return TRUE;
}

/* Index into a scale or zero point for element i of x. */
static gint64
param_index (const QuantLayout *layout, const GraftRtTensor *x, const GraftRtTensor *param, gint64 i)
{
  if (param == NULL || param->numel <= 1)
    return 0;
  if (layout->block_size <= 0)
    {
      gint64 inner = graft_dims_product (x->dims, layout->axis + 1, x->rank);
      return (i / MAX (inner, 1)) % x->dims[layout->axis];
    }
  gint64 index = 0, stride = 1;
  for (int d = x->rank - 1; d >= 0; d--)
    {
      gint64 coordinate = i % x->dims[d];
      i /= x->dims[d];
      if (d == layout->axis)
        coordinate /= layout->block_size;
      index += coordinate * stride;
      stride *= param->dims[d];
    }
  return index;
}

/* The common layouts as (outer, channels, inner) runs: one scale for all,
 * or one per index of `axis`. FALSE for blocked ones. */
static gboolean
quant_runs (const QuantLayout *layout, const GraftRtTensor *x, const GraftRtTensor *scale, gint64 *outer,
            gint64 *channels, gint64 *inner)
{
  if (layout->block_size > 0)
    return FALSE;
  if (scale->numel <= 1)
    {
      *outer = 1;
      *channels = 1;
      *inner = x->numel;
      return TRUE;
    }
  *outer = graft_dims_product (x->dims, 0, layout->axis);
  *channels = x->dims[layout->axis];
  *inner = graft_dims_product (x->dims, layout->axis + 1, x->rank);
  return TRUE;
}

static gboolean
is_8bit (GraftDType dtype)
{
  return dtype == GRAFT_DTYPE_UINT8 || dtype == GRAFT_DTYPE_INT8;
}

#ifdef GRAFT_HAVE_X86_SIMD
/* The loop below, eight at a time: the same float32 quotient (vdivps
 * rounds as the scalar division does), vroundps to nearest even as
 * nearbyintf, the zero point added and the clamp in float, then exact
 * narrowing. Returns how many it did. */
GRAFT_TARGET_AVX2_FMA static gint64
quantize_run_avx2 (const float *src, gint64 n, float s, float z, float lo, float hi, gboolean is_signed, void *dst)
{
  __m256 vs = _mm256_set1_ps (s), vz = _mm256_set1_ps (z), vlo = _mm256_set1_ps (lo), vhi = _mm256_set1_ps (hi);
  gint64 i = 0;
  for (; i + 8 <= n; i += 8)
    {
      __m256 q = _mm256_round_ps (_mm256_div_ps (_mm256_loadu_ps (src + i), vs),
                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      /* max takes its second operand for a NaN: the lowest value */
      q = _mm256_min_ps (_mm256_max_ps (_mm256_add_ps (q, vz), vlo), vhi);
      __m256i qi = _mm256_cvtps_epi32 (q);
      __m128i q16 = _mm_packs_epi32 (_mm256_castsi256_si128 (qi), _mm256_extracti128_si256 (qi, 1));
      _mm_storel_epi64 ((__m128i *) ((guint8 *) dst + i), is_signed ? _mm_packs_epi16 (q16, q16)
                                                                     : _mm_packus_epi16 (q16, q16));
    }
  return i;
}
#endif

/* float32 to 8 bits: the general loop's arithmetic (a float32 quotient,
 * rounded half to even), without its per-element dtype dispatch. */
GRAFT_HOT_LOOP static gboolean
quantize_f32_to_8bit (const QuantLayout *layout, const GraftRtTensor *x, const GraftRtTensor *scale,
                      const GraftRtTensor *zp, GraftRtTensor *y)
{
  gint64 outer, channels, inner;
  if (x->dtype != GRAFT_DTYPE_FLOAT32 || scale->dtype != GRAFT_DTYPE_FLOAT32 || !is_8bit (y->dtype) ||
      (zp && zp->dtype != y->dtype) || !quant_runs (layout, x, scale, &outer, &channels, &inner))
    return FALSE;
  gboolean is_signed = y->dtype == GRAFT_DTYPE_INT8;
  float lo = is_signed ? -128 : 0, hi = is_signed ? 127 : 255;
  const float *src = x->data;
  for (gint64 o = 0; o < outer; o++)
    for (gint64 c = 0; c < channels; c++)
      {
        float s = ((const float *) scale->data)[scale->numel > 1 ? c : 0];
        float z = zp == NULL ? 0 : graft_rt_tensor_get_f64 (zp, zp->numel > 1 ? c : 0);
        gint64 at = (o * channels + c) * inner, done = 0;
#ifdef GRAFT_HAVE_X86_SIMD
        if (graft_kernel_table ()->avx2)
          done = quantize_run_avx2 (src + at, inner, s, z, lo, hi, is_signed, (guint8 *) y->data + at);
#endif
        if (is_signed)
          for (gint64 i = done; i < inner; i++)
            ((gint8 *) y->data)[at + i] = CLAMP (nearbyintf (src[at + i] / s) + z, lo, hi);
        else
          for (gint64 i = done; i < inner; i++)
            ((guint8 *) y->data)[at + i] = CLAMP (nearbyintf (src[at + i] / s) + z, lo, hi);
      }
  return TRUE;
}

/* 8 bits to float32: (x - z) · s is exact before its one rounding to
 * float, as in the general loop. */
GRAFT_HOT_LOOP static gboolean
dequantize_8bit_to_f32 (const QuantLayout *layout, const GraftRtTensor *x, const GraftRtTensor *scale,
                        const GraftRtTensor *zp, GraftRtTensor *y)
{
  gint64 outer, channels, inner;
  if (!is_8bit (x->dtype) || scale->dtype != GRAFT_DTYPE_FLOAT32 || y->dtype != GRAFT_DTYPE_FLOAT32 ||
      (zp && zp->dtype != x->dtype) || !quant_runs (layout, x, scale, &outer, &channels, &inner))
    return FALSE;
  float *dst = y->data;
  for (gint64 o = 0; o < outer; o++)
    for (gint64 c = 0; c < channels; c++)
      {
        float s = ((const float *) scale->data)[scale->numel > 1 ? c : 0];
        gint32 z = zp == NULL ? 0 : graft_rt_tensor_get_i64 (zp, zp->numel > 1 ? c : 0);
        gint64 at = (o * channels + c) * inner;
        if (x->dtype == GRAFT_DTYPE_INT8)
          for (gint64 i = 0; i < inner; i++)
            dst[at + i] = (float) (((const gint8 *) x->data)[at + i] - z) * s;
        else
          for (gint64 i = 0; i < inner; i++)
            dst[at + i] = (float) (((const guint8 *) x->data)[at + i] - z) * s;
      }
  return TRUE;
}

static gboolean
kernel_quantize (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0], *scale = ctx->inputs[1], *zp = graft_kernel_input (ctx, 2);
  QuantLayout layout;
  if (!quant_layout_init (&layout, ctx, x, scale, error))
    return FALSE;
  GraftRtTensor *y = graft_kernel_output (ctx, 0, error);
  if (y == NULL)
    return FALSE;
  if (quantize_f32_to_8bit (&layout, x, scale, zp, y))
    return TRUE;
  gboolean saturate = graft_node_attr_int (ctx->node, "saturate", 1) != 0;
  double lo, hi;
  quant_range (y->dtype, &lo, &hi);
  for (gint64 i = 0; i < x->numel; i++)
    {
      double s = graft_rt_tensor_get_f64 (scale, param_index (&layout, x, scale, i));
      double z = zp ? graft_rt_tensor_get_f64 (zp, param_index (&layout, x, zp, i)) : 0;
      /* float32 inputs divide in float32, as the reference does (the rounding of x / s differs in double) */
      double q = x->dtype == GRAFT_DTYPE_FLOAT32 ? (double) ((float) graft_rt_tensor_get_f64 (x, i) / (float) s)
                                                 : graft_rt_tensor_get_f64 (x, i) / s;
      if (is_narrow_float (y->dtype))
        ((guint8 *) y->data)[i] = graft_narrow_dtype_encode (y->dtype, q + z, saturate);
      else
        graft_rt_tensor_set_i64 (y, i, (gint64) CLAMP (nearbyint (q) + z, lo, hi));
    }
  return TRUE;
}

static gboolean
kernel_dequantize (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0], *scale = ctx->inputs[1], *zp = graft_kernel_input (ctx, 2);
  QuantLayout layout;
  if (!quant_layout_init (&layout, ctx, x, scale, error))
    return FALSE;
  GraftRtTensor *y = graft_kernel_output (ctx, 0, error);
  if (y == NULL)
    return FALSE;
  if (dequantize_8bit_to_f32 (&layout, x, scale, zp, y))
    return TRUE;
  for (gint64 i = 0; i < x->numel; i++)
    {
      double s = graft_rt_tensor_get_f64 (scale, param_index (&layout, x, scale, i));
      double z = zp ? graft_rt_tensor_get_f64 (zp, param_index (&layout, x, zp, i)) : 0;
      /* int32 and narrower are exact in double, as are the float8 values. */
      graft_rt_tensor_set_f64 (y, i, (graft_rt_tensor_get_f64 (x, i) - z) * s);
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

/* The smallest and largest of x, starting from 0 as the range must hold
 * zero. */
static void
dynamic_range_portable (const float *x, gint64 n, float *mn, float *mx)
{
  for (gint64 i = 0; i < n; i++)
    {
      *mn = MIN (*mn, x[i]);
      *mx = MAX (*mx, x[i]);
    }
}

/* y = saturate (round_half_even (x / scale) + zero), as the loop below. */
static void
dynamic_quantize_portable (const float *x, gint64 n, float scale, float zero, guint8 *y)
{
  for (gint64 i = 0; i < n; i++)
    {
      float v = scale != 0 ? nearbyintf (x[i] / scale) + zero : zero;
      y[i] = (guint8) CLAMP (v, 0, 255);
    }
}

#ifdef GRAFT_HAVE_X86_SIMD
/* Eight lanes at a time; minimum and maximum do not depend on the order
 * they are taken in (only a zero's sign could, which neither the scale
 * nor the zero point sees). */
GRAFT_TARGET_AVX2_FMA static void
dynamic_range_avx2 (const float *x, gint64 n, float *mn, float *mx)
{
  __m256 vmin = _mm256_set1_ps (*mn), vmax = _mm256_set1_ps (*mx);
  gint64 i = 0;
  for (; i + 8 <= n; i += 8)
    {
      __m256 v = _mm256_loadu_ps (x + i);
      vmin = _mm256_min_ps (vmin, v);
      vmax = _mm256_max_ps (vmax, v);
    }
  float lanes_min[8], lanes_max[8];
  _mm256_storeu_ps (lanes_min, vmin);
  _mm256_storeu_ps (lanes_max, vmax);
  dynamic_range_portable (lanes_min, 8, mn, mx);
  dynamic_range_portable (lanes_max, 8, mn, mx);
  dynamic_range_portable (x + i, n - i, mn, mx);
}

/* The same division and round-half-even (vroundps) as nearbyintf. */
static void
dynamic_quantize_avx2 (const float *x, gint64 n, float scale, float zero, guint8 *y)
{
  gint64 i = scale != 0 ? quantize_run_avx2 (x, n, scale, zero, 0, 255, FALSE, y) : 0;
  dynamic_quantize_portable (x + i, n - i, scale, zero, y + i);
}
#endif

static gboolean
kernel_dynamic_quantize (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0];
  GraftRtTensor *y = graft_kernel_output (ctx, 0, error);
  GraftRtTensor *ys = y ? graft_kernel_output (ctx, 1, error) : NULL;
  GraftRtTensor *yz = ys ? graft_kernel_output (ctx, 2, error) : NULL;
  if (yz == NULL)
    return FALSE;
  const float *xf = x->data;
  gboolean avx2 = FALSE;
#ifdef GRAFT_HAVE_X86_SIMD
  avx2 = graft_kernel_table ()->avx2;
#endif
  float mn = 0, mx = 0;
#ifdef GRAFT_HAVE_X86_SIMD
  if (avx2)
    dynamic_range_avx2 (xf, x->numel, &mn, &mx);
#endif
  if (!avx2)
    dynamic_range_portable (xf, x->numel, &mn, &mx);
  float scale = (mx - mn) / 255.0f;
  float zero = scale != 0 ? nearbyintf (CLAMP (0 - mn / scale, 0, 255)) : 0;
  *(float *) ys->data = scale;
  *(guint8 *) yz->data = (guint8) zero;
#ifdef GRAFT_HAVE_X86_SIMD
  if (avx2)
    {
      dynamic_quantize_avx2 (xf, x->numel, scale, zero, y->data);
      return TRUE;
    }
#endif
  dynamic_quantize_portable (xf, x->numel, scale, zero, y->data);
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

/* ---- DFT, STFT ---- */

/* One transform of n complex samples (stride apart) into out (m bins). */
static void
dft_1d (const double *re, const double *im, gint64 n, gint64 m, gboolean inverse, double *out_re, double *out_im)
{
  double sign = inverse ? 1 : -1;
  for (gint64 k = 0; k < m; k++)
    {
      double sr = 0, si = 0;
      for (gint64 t = 0; t < n; t++)
        {
          double a = sign * 2 * G_PI * (double) ((k * t) % n) / n;
          sr += re[t] * cos (a) - im[t] * sin (a);
          si += re[t] * sin (a) + im[t] * cos (a);
        }
      out_re[k] = inverse ? sr / n : sr;
      out_im[k] = inverse ? si / n : si;
    }
}

/* DFT-17 takes the axis as an attribute (default 1), DFT-20 as input 2
 * (default -2); both count it over x's full rank, whose last axis holds
 * the real (and imaginary) parts. inverse + onesided is an inverse real
 * transform: n / 2 + 1 bins in, n real samples out. */
static gboolean
kernel_dft (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0], *len_t = graft_kernel_input (ctx, 1), *axis_t = graft_kernel_input (ctx, 2);
  gint64 axis = ctx->opset >= 20 ? (axis_t ? graft_rt_tensor_get_i64 (axis_t, 0) : -2)
                                 : graft_node_attr_int (ctx->node, "axis", 1);
  gboolean inverse = graft_node_attr_int (ctx->node, "inverse", 0);
  gboolean onesided = graft_node_attr_int (ctx->node, "onesided", 0);
  if (x->rank < 2 || (x->dims[x->rank - 1] != 1 && x->dims[x->rank - 1] != 2))
    return graft_kernel_fail (error, "the last dimension must be 1 (real) or 2 (complex)");
  if (!graft_normalize_axis (&axis, x->rank, error))
    return FALSE;
  if (axis == x->rank - 1)
    return graft_kernel_fail (error, "axis must not be the last (real, imaginary) axis");
  gboolean complex_in = x->dims[x->rank - 1] == 2, real_out = inverse && onesided;
  gint64 n_in = x->dims[axis];
  gint64 n = len_t ? graft_rt_tensor_get_i64 (len_t, 0) : real_out ? 2 * (n_in - 1) : n_in;
  if (n < 1 || n > (1 << 24))
    return graft_kernel_fail (error, "dft_length %" G_GINT64_FORMAT " is not a usable length", n);
  gint64 m = real_out ? n : onesided ? n / 2 + 1 : n;
  gint64 dims[GRAFT_RT_MAX_RANK];
  memcpy (dims, x->dims, sizeof (gint64) * x->rank);
  dims[axis] = m;
  dims[x->rank - 1] = real_out ? 1 : 2;
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, x->dtype, x->rank, dims, error);
  if (y == NULL)
    return FALSE;
  gint64 outer = graft_dims_product (x->dims, 0, axis), inner = graft_dims_product (x->dims, axis + 1, x->rank - 1);
  gint64 cin = complex_in ? 2 : 1, cout = real_out ? 1 : 2;
  g_autofree double *re = g_new0 (double, MAX (n, 1)), *im = g_new0 (double, MAX (n, 1));
  g_autofree double *ore = g_new (double, MAX (m, 1)), *oim = g_new (double, MAX (m, 1));
  for (gint64 o = 0; o < outer; o++)
    for (gint64 i = 0; i < inner; i++)
      {
        for (gint64 t = 0; t < n; t++)
          {
            gint64 base = ((o * n_in + t) * inner + i) * cin;
            re[t] = t < n_in ? graft_rt_tensor_get_f64 (x, base) : 0;
            im[t] = t < n_in && complex_in ? graft_rt_tensor_get_f64 (x, base + 1) : 0;
          }
        if (real_out)
          /* the bins past n / 2 are the conjugates of those before */
          for (gint64 t = n_in; t < n; t++)
            {
              re[t] = re[n - t];
              im[t] = -im[n - t];
            }
        dft_1d (re, im, n, m, inverse, ore, oim);
        for (gint64 k = 0; k < m; k++)
          {
            gint64 base = ((o * m + k) * inner + i) * cout;
            graft_rt_tensor_set_f64 (y, base, ore[k]);
            if (!real_out)
              graft_rt_tensor_set_f64 (y, base + 1, oim[k]);
          }
      }
  return TRUE;
}

static gboolean
kernel_stft (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0], *step_t = ctx->inputs[1];
  GraftRtTensor *window = graft_kernel_input (ctx, 2), *flen_t = graft_kernel_input (ctx, 3);
  gboolean onesided = graft_node_attr_int (ctx->node, "onesided", 1);
  if (x->rank != 3 || (x->dims[2] != 1 && x->dims[2] != 2))
    return graft_kernel_fail (error, "the signal must be [batch, length, 1 or 2]");
  gint64 step = graft_rt_tensor_get_i64 (step_t, 0);
  gint64 flen = flen_t ? graft_rt_tensor_get_i64 (flen_t, 0) : window ? window->numel : 0;
  gint64 B = x->dims[0], L = x->dims[1], cin = x->dims[2];
  if (step <= 0 || flen <= 0 || flen > L)
    return graft_kernel_fail (error, "frame_step and frame_length must be positive and fit the signal");
  gint64 frames = (L - flen) / step + 1, bins = onesided ? flen / 2 + 1 : flen;
  gint64 dims[4] = { B, frames, bins, 2 };
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, x->dtype, 4, dims, error);
  if (y == NULL)
    return FALSE;
  g_autofree double *re = g_new (double, flen), *im = g_new (double, flen);
  g_autofree double *ore = g_new (double, bins), *oim = g_new (double, bins);
  for (gint64 b = 0; b < B; b++)
    for (gint64 f = 0; f < frames; f++)
      {
        for (gint64 t = 0; t < flen; t++)
          {
            double w = window ? graft_rt_tensor_get_f64 (window, t) : 1;
            gint64 base = (b * L + f * step + t) * cin;
            re[t] = graft_rt_tensor_get_f64 (x, base) * w;
            im[t] = cin == 2 ? graft_rt_tensor_get_f64 (x, base + 1) * w : 0;
          }
        dft_1d (re, im, flen, bins, FALSE, ore, oim);
        for (gint64 k = 0; k < bins; k++)
          {
            gint64 base = ((b * frames + f) * bins + k) * 2;
            graft_rt_tensor_set_f64 (y, base, ore[k]);
            graft_rt_tensor_set_f64 (y, base + 1, oim[k]);
          }
      }
  return TRUE;
}

/* ---- MelWeightMatrix: triangular filters on the mel scale ---- */

static gboolean
kernel_mel_weight_matrix (GraftKernelContext *ctx, GError **error)
{
  gint64 n_mel = graft_rt_tensor_get_i64 (ctx->inputs[0], 0), dft = graft_rt_tensor_get_i64 (ctx->inputs[1], 0);
  gint64 rate = graft_rt_tensor_get_i64 (ctx->inputs[2], 0);
  /* the edges in float32, as the spec's reference computes them */
  float lower = graft_rt_tensor_get_f64 (ctx->inputs[3], 0), upper = graft_rt_tensor_get_f64 (ctx->inputs[4], 0);
  GraftDType dtype = graft_node_attr_int (ctx->node, "output_datatype", GRAFT_DTYPE_FLOAT32);
  if (n_mel <= 0 || dft <= 0 || rate <= 0 || n_mel > (1 << 20) || dft > (1 << 26))
    return graft_kernel_fail (error, "num_mel_bins %" G_GINT64_FORMAT ", dft_length %" G_GINT64_FORMAT
                              " and sample_rate %" G_GINT64_FORMAT " must be positive (and not huge)", n_mel, dft, rate);
  gint64 n_spec = dft / 2 + 1;
  gint64 dims[2] = { n_spec, n_mel };
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, dtype, 2, dims, error);
  if (y == NULL)
    return FALSE;
  float low_mel = 2595 * log10f (1 + lower / 700), high_mel = 2595 * log10f (1 + upper / 700);
  float step = (high_mel - low_mel) / (float) (n_mel + 2);
  g_autofree gint64 *bins = g_new (gint64, n_mel + 2);
  for (gint64 i = 0; i < n_mel + 2; i++)
    {
      double hz = 700 * (pow (10, (i * (double) step + low_mel) / 2595) - 1);
      bins[i] = (gint64) floor ((dft + 1) * hz / rate);
    }
  g_autofree double *w = g_new0 (double, n_spec * n_mel);
  for (gint64 i = 0; i < n_mel; i++)
    {
      gint64 lo = bins[i], mid = bins[i + 1], hi = bins[i + 2];
      if (mid == lo)
        {
          if (mid >= 0 && mid < n_spec)
            w[mid * n_mel + i] = 1;
        }
      else
        for (gint64 j = MAX (lo, 0); j <= mid && j < n_spec; j++)
          w[j * n_mel + i] = (double) (j - lo) / (double) (mid - lo);
      if (hi > mid)
        for (gint64 j = MAX (mid, 0); j < hi && j < n_spec; j++)
          w[j * n_mel + i] = (double) (hi - j) / (double) (hi - mid);
    }
  for (gint64 k = 0; k < n_spec * n_mel; k++)
    graft_rt_tensor_set_f64 (y, k, w[k]);
  return TRUE;
}

#define OP(name, since, infer, kernel, input_names, output_names) { "onnx::" name, since, 0, infer, kernel, 0, input_names, output_names }

const GraftOpSchema graft_ops_quantize[] = {
  OP ("QuantizeLinear", 10, infer_quantize, kernel_quantize, "x y_scale y_zero_point", "y"),
  OP ("DequantizeLinear", 10, infer_dequantize, kernel_dequantize, "x x_scale x_zero_point", "y"),
  OP ("DynamicQuantizeLinear", 11, infer_dynamic_quantize, kernel_dynamic_quantize, "x", "y y_scale y_zero_point"),
  OP ("HannWindow", 17, infer_window, kernel_window, "size", "output"),
  OP ("HammingWindow", 17, infer_window, kernel_window, "size", "output"),
  OP ("BlackmanWindow", 17, infer_window, kernel_window, "size", "output"),
  { "onnx::DFT", 17, 0, NULL, kernel_dft, GRAFT_OP_HALF_AS_FLOAT, "input dft_length axis", "output" },
  { "onnx::STFT", 17, 0, NULL, kernel_stft, GRAFT_OP_HALF_AS_FLOAT, "signal frame_step window frame_length", "output" },
  OP ("MelWeightMatrix", 17, NULL, kernel_mel_weight_matrix, "num_mel_bins dft_length sample_rate lower_edge_hertz upper_edge_hertz", "output"),
  { NULL }
};
