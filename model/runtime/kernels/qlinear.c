/* Integer convolution and matrix products (ConvInteger, QLinearConv,
 * MatMulInteger, QLinearMatMul) on one packed integer GEMM, and the
 * com.microsoft quantized operators onnxruntime's quantize_static writes
 * in its QOperator format (QLinearAdd, QLinearGlobalAveragePool, QGemm).
 *
 * The general form widens operands to int16 with their zero points
 * subtracted, so u8·u8, u8·s8 and s8·s8 all become one exact product:
 * |a|,|b| ≤ 255, and a pair sum of two products stays far inside int32
 * (vpmaddwd with AVX2, vpdpwssd with VNNI). Convolutions whose filters
 * fit a signed byte take the byte form instead (raw u8 activations ×
 * s8 weights: vpmaddubsw for 7-bit weights, VNNI's vpdpbusd or AMX's
 * tdpbsud for any), as an implicit GEMM that packs its panels straight
 * from the input and requantizes each tile as it is done. */
#include <math.h>
#include <string.h>

#include "runtime/kernels/kernel-util.h"
#include "runtime/kernels/qlinear.h"
#include "runtime/kernels/qgemm-private.h"
#include "runtime/kernels/avx2-lanes.h"

#include "runtime/kernels/window.h"
#include "runtime/fusion-patterns.h"

/* ---- operands, zero points, requantization ---- */

static gboolean
is_8bit (const GraftRtTensor *t)
{
  return t->dtype == GRAFT_DTYPE_UINT8 || t->dtype == GRAFT_DTYPE_INT8;
}

static gint64
element_i64 (const GraftRtTensor *t, gint64 i)
{
  if (t->dtype == GRAFT_DTYPE_UINT8)
    return ((const guint8 *) t->data)[i];
  if (t->dtype == GRAFT_DTYPE_INT8)
    return ((const gint8 *) t->data)[i];
  return graft_rt_tensor_get_i64 (t, i);
}

/* Zero point `which` of zp (a scalar or one per row/column), 0 if absent. */
static gint64
zero_point_at (const GraftRtTensor *zp, gint64 which)
{
  if (zp == NULL || zp->numel == 0)
    return 0;
  return element_i64 (zp, zp->numel > 1 ? which : 0);
}

static gboolean
check_operand (const GraftRtTensor *t, const char *what, const GraftRtTensor *zp, gint64 n_params, GError **error)
{
  if (!is_8bit (t))
    return graft_kernel_unsupported (error, "%s is %s; only uint8 and int8 are supported", what,
                                     graft_dtype_to_string (t->dtype));
  if (zp && zp->numel > 1 && zp->numel != n_params)
    return graft_kernel_fail (error, "%s has %" G_GINT64_FORMAT " zero points for %" G_GINT64_FORMAT " rows or columns",
                              what, zp->numel, n_params);
  return TRUE;
}

/* The saturating round-to-nearest-even of quantization, as QuantizeLinear. */
static inline gint64
requantize_value (float v, gint64 zero, gint64 lo, gint64 hi)
{
  gint64 q = (gint64) nearbyintf (v) + zero;
  return CLAMP (q, lo, hi);
}

static void
quant_limits (GraftDType dtype, gint64 *lo, gint64 *hi)
{
  *lo = dtype == GRAFT_DTYPE_INT8 ? -128 : 0;
  *hi = dtype == GRAFT_DTYPE_INT8 ? 127 : 255;
}

static void
store_quantized (GraftRtTensor *y, gint64 i, gint64 q)
{
  if (y->dtype == GRAFT_DTYPE_INT8)
    ((gint8 *) y->data)[i] = q;
  else
    ((guint8 *) y->data)[i] = q;
}

/* dst[i] = saturate (round ((src[i] + bias) · scale) + zero), 8-bit
 * (int8 when is_signed); rounding half to even, as QuantizeLinear. */
static void
requantize_row_portable (const gint32 *src, gint64 n, gint32 bias, float scale, gint32 zero, gboolean is_signed,
                         void *dst)
{
  gint64 lo = is_signed ? -128 : 0, hi = is_signed ? 127 : 255;
  for (gint64 i = 0; i < n; i++)
    {
      gint64 q = requantize_value ((float) (src[i] + bias) * scale, zero, lo, hi);
      if (is_signed)
        ((gint8 *) dst)[i] = q;
      else
        ((guint8 *) dst)[i] = q;
    }
}

#ifdef GRAFT_HAVE_X86_SIMD
/* vcvtps2dq rounds half to even under the default MXCSR; the float clamp
 * first keeps it in range, the saturating packs then only narrow. */
GRAFT_TARGET_AVX2_FMA static void
requantize_row_avx2 (const gint32 *src, gint64 n, gint32 bias, float scale, gint32 zero, gboolean is_signed, void *dst)
{
  float lo = (is_signed ? -128 : 0) - zero, hi = (is_signed ? 127 : 255) - zero;
  __m256 vscale = _mm256_set1_ps (scale), vlo = _mm256_set1_ps (lo), vhi = _mm256_set1_ps (hi);
  __m256i vbias = _mm256_set1_epi32 (bias), vzero = _mm256_set1_epi32 (zero);
  gint64 i = 0;
  for (; i + 8 <= n; i += 8)
    {
      __m256i acc = _mm256_add_epi32 (_mm256_loadu_si256 ((const __m256i *) (src + i)), vbias);
      __m256 v = _mm256_mul_ps (_mm256_cvtepi32_ps (acc), vscale);
      v = _mm256_min_ps (_mm256_max_ps (v, vlo), vhi);
      __m256i q = _mm256_add_epi32 (_mm256_cvtps_epi32 (v), vzero);
      __m128i q16 = _mm_packs_epi32 (_mm256_castsi256_si128 (q), _mm256_extracti128_si256 (q, 1));
      __m128i q8 = is_signed ? _mm_packs_epi16 (q16, q16) : _mm_packus_epi16 (q16, q16);
      _mm_storel_epi64 ((__m128i *) ((guint8 *) dst + i), q8);
    }
  requantize_row_portable (src + i, n - i, bias, scale, zero, is_signed, (guint8 *) dst + i);
}
#endif

/* avx2: the kernel table's, read once per tile rather than per row */
static void
requantize_row (gboolean avx2, const gint32 *src, gint64 n, gint32 bias, float scale, gint32 zero, gboolean is_signed,
                void *dst)
{
#ifdef GRAFT_HAVE_X86_SIMD
  if (avx2)
    {
      requantize_row_avx2 (src, n, bias, scale, zero, is_signed, dst);
      return;
    }
#endif
  requantize_row_portable (src, n, bias, scale, zero, is_signed, dst);
}

/* dst[i] = t[i] - zero as int16, t 8-bit. */
GRAFT_HOT_LOOP static void
widen_minus_zero (const GraftRtTensor *t, gint64 zero, gint16 *dst)
{
  if (t->dtype == GRAFT_DTYPE_INT8)
    for (gint64 i = 0; i < t->numel; i++)
      dst[i] = ((const gint8 *) t->data)[i] - zero;
  else
    for (gint64 i = 0; i < t->numel; i++)
      dst[i] = ((const guint8 *) t->data)[i] - zero;
}

static gboolean
check_scale (const GraftRtTensor *scale, const char *what, gint64 n_params, GError **error)
{
  if (scale == NULL || (scale->numel != 1 && scale->numel != n_params))
    return graft_kernel_fail (error, "%s must have 1 or %" G_GINT64_FORMAT " values", what, n_params);
  return TRUE;
}

/* ---- ConvInteger, QLinearConv ---- */

/* dst[i] = src[i · stride] for i < n: one im2col row's values inside
 * the input. */
static void
gather_s16 (gint16 *dst, const gint16 *src, gint64 n, gint64 stride)
{
  if (stride == 1)
    memcpy (dst, src, sizeof (gint16) * n);
  else
    for (gint64 i = 0; i < n; i++)
      dst[i] = src[i * stride];
}

/* Rows (channel, kernel tap) of one group's im2col matrix for the 2-D
 * case, in rows `stride` values long. Padding reads 0: the zero point,
 * once subtracted. */
static void
im2col_2d (const gint16 *x, const GraftWindow *w, gint64 channels, gint16 *col, gint64 stride)
{
  gint64 H = w->in[0], W = w->in[1], OH = w->out[0], OW = w->out[1];
  gint64 row = 0;
  for (gint64 c = 0; c < channels; c++)
    for (gint64 kh = 0; kh < w->kernel[0]; kh++)
      for (gint64 kw = 0; kw < w->kernel[1]; kw++, row++)
        {
          gint16 *dst = col + row * stride;
          gint64 ow_lo, ow_hi;
          graft_window_inside (w, 1, kw, &ow_lo, &ow_hi);
          for (gint64 oh = 0; oh < OH; oh++, dst += OW)
            {
              gint64 ih = oh * w->stride[0] + kh * w->dilation[0] - w->pad_begin[0];
              if (ih < 0 || ih >= H)
                {
                  memset (dst, 0, sizeof (gint16) * OW);
                  continue;
                }
              const gint16 *src = x + (c * H + ih) * W + kw * w->dilation[1] - w->pad_begin[1];
              memset (dst, 0, sizeof (gint16) * ow_lo);
              gather_s16 (dst + ow_lo, src + ow_lo * w->stride[1], ow_hi - ow_lo, w->stride[1]);
              memset (dst + ow_hi, 0, sizeof (gint16) * (OW - ow_hi));
            }
        }
}

/* Any number of spatial axes, one output position at a time. */
static void
im2col_nd (const gint16 *x, const GraftWindow *w, gint64 channels, gint16 *col, gint64 stride)
{
  gint64 in_size = graft_dims_product (w->in, 0, w->n), out_size = graft_dims_product (w->out, 0, w->n);
  gint64 taps = graft_dims_product (w->kernel, 0, w->n);
  for (gint64 c = 0; c < channels; c++)
    {
      gint64 tap[GRAFT_WINDOW_MAX_DIMS] = { 0 };
      for (gint64 t = 0; t < taps; t++)
        {
          gint16 *dst = col + (c * taps + t) * stride;
          gint64 out[GRAFT_WINDOW_MAX_DIMS] = { 0 };
          for (gint64 o = 0; o < out_size; o++)
            {
              gint64 offset = 0;
              gboolean inside = TRUE;
              for (int d = 0; d < w->n && inside; d++)
                {
                  gint64 i = out[d] * w->stride[d] + tap[d] * w->dilation[d] - w->pad_begin[d];
                  inside = i >= 0 && i < w->in[d];
                  offset = offset * w->in[d] + i;
                }
              dst[o] = inside ? x[c * in_size + offset] : 0;
              graft_index_next (out, w->out, w->n);
            }
          graft_index_next (tap, w->kernel, w->n);
        }
    }
}

/* The zero points a kept operand was made for, to tell whether it still
 * fits the zero-point tensor of a later run. */
typedef struct {
  gint64 n;
  gint64 *values;       /* g_free */
} KeptZeroPoints;

static void
kept_zero_points_init (KeptZeroPoints *kept, const GraftRtTensor *zp)
{
  kept->n = zp ? zp->numel : 0;
  kept->values = g_new (gint64, MAX (kept->n, 1));
  for (gint64 i = 0; i < kept->n; i++)
    kept->values[i] = element_i64 (zp, i);
}

static gboolean
kept_zero_points_match (const KeptZeroPoints *kept, const GraftRtTensor *zp)
{
  if (kept->n != (zp ? zp->numel : 0))
    return FALSE;
  for (gint64 i = 0; i < kept->n; i++)
    if (kept->values[i] != element_i64 (zp, i))
      return FALSE;
  return TRUE;
}

/* A filter as the GEMM reads it: per group, Mg rows of K int16s (zero
 * point subtracted) padded as qgemm_pack_a does; when every such value
 * fits in −64..64, also as bytes for the vpmaddubsw GEMM, with each row's
 * sum. Kept between runs on the node for a constant filter, with the
 * zero points it was made for. */
typedef struct {
  gint64 group, K, lda, rows;
  KeptZeroPoints zero_points;
  gint16 *packed;       /* group × rows × lda */
  gint64 lda8;          /* K rounded up to 4, or to AMX_DEPTH where AMX was usable */
  gint64 rows8;         /* rows, or also a multiple of AMX_ROWS where AMX was usable */
  gint8 *packed8;       /* group × rows8 × lda8, or NULL */
  gboolean bytes_need_vnni;  /* packed8 has values outside −64..64: exact only with vpdpbusd */
  gint32 *row_sums;     /* M */
  gint64 M;
} PackedFilter;

static void
packed_filter_free (gpointer data)
{
  PackedFilter *f = data;
  g_free (f->zero_points.values);
  g_free (f->packed);
  g_free (f->packed8);
  g_free (f->row_sums);
  g_free (f);
}

static gboolean
packed_filter_fits (const PackedFilter *f, const GraftRtTensor *wzp, gint64 group, gint64 K)
{
  return f->group == group && f->K == K && kept_zero_points_match (&f->zero_points, wzp);
}

/* The byte form, when every value fits vpmaddubsw exactly (within
 * −64..64), or is a signed byte and the CPU has VNNI, whose vpdpbusd
 * sums the products in int32 without an int16 step to saturate. */
GRAFT_HOT_LOOP static void
packed_filter_add_bytes (PackedFilter *f, gint64 M)
{
  gint64 n = f->group * f->rows * f->lda;
  gint16 lo = 0, hi = 0;
  const gint16 *packed = f->packed;
  for (gint64 i = 0; i < n; i++)
    {
      lo = MIN (lo, packed[i]);
      hi = MAX (hi, packed[i]);
    }
  if (lo < -64 || hi > 64)
    {
      if (lo < -128 || hi > 127 || !graft_kernel_table ()->vnni)
        return;
      f->bytes_need_vnni = TRUE;
    }
  gint64 Mg = M / f->group;
  /* The AMX geometry serves the other byte kernels too (more zeros). */
  gboolean amx = graft_kernel_table ()->amx;
  f->lda8 = amx ? (f->K + AMX_DEPTH - 1) / AMX_DEPTH * AMX_DEPTH : (f->K + 3) / 4 * 4;
  f->rows8 = amx ? (f->rows + AMX_ROWS - 1) / AMX_ROWS * AMX_ROWS : f->rows;
  f->packed8 = g_new0 (gint8, MAX (f->group * f->rows8 * f->lda8, 1));
  f->row_sums = g_new0 (gint32, MAX (M, 1));
  for (gint64 m = 0; m < M; m++)
    {
      /* Locals: stores through a byte pointer could alias f's fields. */
      gint64 K = f->K;
      const gint16 *src = f->packed + ((m / Mg) * f->rows + m % Mg) * f->lda;
      gint8 *dst = f->packed8 + ((m / Mg) * f->rows8 + m % Mg) * f->lda8;
      gint32 sum = 0;
      for (gint64 k = 0; k < K; k++)
        {
          dst[k] = src[k];
          sum += src[k];
        }
      f->row_sums[m] = sum;
    }
}

GRAFT_HOT_LOOP static PackedFilter *
packed_filter_new (const GraftRtTensor *wt, const GraftRtTensor *wzp, gint64 group, gint64 K)
{
  PackedFilter *f = g_new0 (PackedFilter, 1);
  gint64 M = wt->dims[0], Mg = M / group;
  f->group = group;
  f->M = M;
  f->K = K;
  f->lda = (K + 1) / 2 * 2;
  f->rows = (Mg + TILE_ROWS - 1) / TILE_ROWS * TILE_ROWS;
  kept_zero_points_init (&f->zero_points, wzp);
  f->packed = g_new0 (gint16, MAX (group * f->rows * f->lda, 1));
  for (gint64 m = 0; m < M; m++)
    {
      gint16 zero = zero_point_at (wzp, m);
      gint16 *dst = f->packed + ((m / Mg) * f->rows + m % Mg) * f->lda;
      const guint8 *row = (const guint8 *) wt->data + m * K;
      if (wt->dtype == GRAFT_DTYPE_INT8)
        for (gint64 k = 0; k < K; k++)
          dst[k] = (gint8) row[k] - zero;
      else
        for (gint64 k = 0; k < K; k++)
          dst[k] = row[k] - zero;
    }
  packed_filter_add_bytes (f, M);
  return f;
}

typedef struct {
  const GraftRtTensor *wt, *wzp;
  gint64 group, K;
} PackedFilterArgs;

static gboolean
packed_filter_args_fit (gconstpointer kept, gconstpointer args)
{
  const PackedFilterArgs *a = args;
  return packed_filter_fits (kept, a->wzp, a->group, a->K);
}

static gpointer
packed_filter_make (gconstpointer args)
{
  const PackedFilterArgs *a = args;
  return packed_filter_new (a->wt, a->wzp, a->group, a->K);
}

static const GraftDerivedKind packed_filter_kind = { "packed 8-bit filter", packed_filter_free, TRUE };

/* The packed filter of this node: the kept one when it fits, else a new
 * one, kept when the filter is a constant (else *owned frees it). */
static const PackedFilter *
packed_filter_get (GraftKernelContext *ctx, const GraftRtTensor *wt, const GraftRtTensor *wzp, gint64 group, gint64 K,
                   PackedFilter **owned)
{
  PackedFilterArgs args = { wt, wzp, group, K };
  return graft_kernel_derived (ctx, &packed_filter_kind, wt->data, packed_filter_args_fit, packed_filter_make, &args,
                               (gpointer *) owned);
}

typedef struct {
  GraftRtTensor *x, *w, *xzp, *wzp;
  /* QLinearConv only */
  GraftRtTensor *x_scale, *w_scale, *y_scale, *yzp, *bias;
} ConvOperands;

static void
conv_operands (GraftKernelContext *ctx, gboolean requantize, ConvOperands *o)
{
  memset (o, 0, sizeof *o);
  o->x = ctx->inputs[0];
  if (!requantize)
    {
      o->w = ctx->inputs[1];
      o->xzp = graft_kernel_input (ctx, 2);
      o->wzp = graft_kernel_input (ctx, 3);
      return;
    }
  o->x_scale = ctx->inputs[1];
  o->xzp = graft_kernel_input (ctx, 2);
  o->w = ctx->inputs[3];
  o->w_scale = ctx->inputs[4];
  o->wzp = graft_kernel_input (ctx, 5);
  o->y_scale = ctx->inputs[6];
  o->yzp = graft_kernel_input (ctx, 7);
  o->bias = graft_kernel_input (ctx, 8);
}

/* How graft::ConvIntegerToFloat's float operations read an operand. */
typedef enum {
  OPERAND_NONE,
  OPERAND_SCALAR,
  OPERAND_PER_CHANNEL,          /* [M] broadcast along the output's axis 1 */
  OPERAND_FULL,                 /* one value per output element */
} OperandForm;

/* The float operations after the int32 sums, in the pattern's order:
 * (float) sum · scale, + the first addend, + the second, Relu. */
typedef struct {
  const float *scale, *add[2];
  OperandForm scale_form, add_form[2];
  gboolean relu;
} ConvToFloat;

/* Where a convolution's GEMM hands its tiles: y[n][m][p] from the sums
 * of row m (output channel m0 + m of the group) and column n·P + p, plus
 * row_add[m] (the bias, and the byte form's zero-point correction),
 * requantized with scales[m], or as int32 without scales, or through
 * to_float's operations into float32. */
typedef struct {
  GraftRtTensor *y;
  gint64 M, m0, P;
  const gint32 *row_add;
  const float *scales;
  gint32 y_zero;
  const ConvToFloat *to_float;
} ConvOutput;

static inline float
operand_at (const float *v, OperandForm form, gint64 m, gint64 at)
{
  return v[form == OPERAND_FULL ? at : form == OPERAND_PER_CHANNEL ? m : 0];
}

/* The nodes' operations, one float at a time as the nodes do them (Cast,
 * Mul, Add, Add, Relu), so the result is the unfused one bit for bit. */
static void
to_float_row_portable (const ConvToFloat *f, const gint32 *src, gint64 n, gint32 add, gint64 m, gint64 at,
                       float *dst)
{
  float scale = operand_at (f->scale, f->scale_form, m, 0);
  for (gint64 k = 0; k < n; k++)
    {
      float v = (float) (src[k] + add) * scale;
      for (int a = 0; a < 2; a++)
        if (f->add_form[a] != OPERAND_NONE)
          v = v + operand_at (f->add[a], f->add_form[a], m, at + k);
      if (f->relu)
        v = v > 0 ? v : 0;
      dst[k] = v;
    }
}

#ifdef GRAFT_HAVE_X86_SIMD
/* The same eight at a time, the row's end through masked loads and
 * stores: vcvtdq2ps, vmulps and vaddps round as the scalar operations
 * do, and vmaxps (v, 0) gives 0 for NaN and −0 as `v > 0 ? v : 0` does. */
GRAFT_TARGET_AVX2_FMA static void
to_float_row_avx2 (const ConvToFloat *f, const gint32 *src, gint64 n, gint32 add, gint64 m, gint64 at, float *dst)
{
  __m256 scale = _mm256_set1_ps (operand_at (f->scale, f->scale_form, m, 0)), zero = _mm256_setzero_ps ();
  __m256i bias = _mm256_set1_epi32 (add);
  __m256 row_value[2] = { zero, zero };
  const float *full[2] = { NULL, NULL };
  gboolean have[2];
  for (int a = 0; a < 2; a++)
    {
      have[a] = f->add_form[a] != OPERAND_NONE;
      if (f->add_form[a] == OPERAND_FULL)
        full[a] = f->add[a] + at;
      else if (have[a])
        row_value[a] = _mm256_set1_ps (operand_at (f->add[a], f->add_form[a], m, 0));
    }
  gboolean relu = f->relu;
  for (gint64 k = 0; k < n; k += 8)
    {
      gint64 left = n - k;
      __m256i lanes = graft_first_lanes8 (left);
      gboolean whole = left >= 8;
      __m256i sum = whole ? _mm256_loadu_si256 ((const __m256i *) (src + k)) : _mm256_maskload_epi32 (src + k, lanes);
      __m256 v = _mm256_mul_ps (_mm256_cvtepi32_ps (_mm256_add_epi32 (sum, bias)), scale);
      for (int a = 0; a < 2; a++)
        if (have[a])
          v = _mm256_add_ps (v, full[a] == NULL ? row_value[a]
                                : whole ? _mm256_loadu_ps (full[a] + k) : _mm256_maskload_ps (full[a] + k, lanes));
      if (relu)
        v = _mm256_max_ps (v, zero);
      if (whole)
        _mm256_storeu_ps (dst + k, v);
      else
        _mm256_maskstore_ps (dst + k, lanes, v);
    }
}
#endif

typedef void (*ToFloatRow) (const ConvToFloat *f, const gint32 *src, gint64 n, gint32 add, gint64 m, gint64 at,
                            float *dst);

static void
conv_output_tile (gconstpointer data, const gint32 *tile, gint64 ld, gint64 i0, gint64 rows, gint64 j0, gint64 cols)
{
  const ConvOutput *out = data;
  gboolean is_signed = out->y->dtype == GRAFT_DTYPE_INT8;
  /* the SIMD level's rows once per tile, not per row */
  gboolean avx2 = graft_kernel_table ()->avx2;
  ToFloatRow to_float_row = NULL;
  if (out->to_float)
    {
      to_float_row = to_float_row_portable;
#ifdef GRAFT_HAVE_X86_SIMD
      if (avx2)
        to_float_row = to_float_row_avx2;
#endif
    }
  /* The tile's columns, split where one image's positions end. */
  for (gint64 done = 0, run; done < cols; done += run)
    {
      gint64 n = (j0 + done) / out->P, p = (j0 + done) % out->P;
      run = MIN (cols - done, out->P - p);
      for (gint64 i = 0; i < rows; i++)
        {
          gint64 m = out->m0 + i0 + i, at = (n * out->M + m) * out->P + p;
          const gint32 *src = tile + i * ld + done;
          if (out->scales)
            requantize_row (avx2, src, run, out->row_add[m], out->scales[m], out->y_zero, is_signed,
                            (guint8 *) out->y->data + at);
          else if (to_float_row)
            to_float_row (out->to_float, src, run, out->row_add[m], m, at, (float *) out->y->data + at);
          else
            for (gint64 k = 0; k < run; k++)
              ((gint32 *) out->y->data)[at + k] = src[k] + out->row_add[m];
        }
    }
}

/* The byte form of one convolution (vpmaddubsw, or VNNI's vpdpbusd):
 * x as raw unsigned bytes (int8 moved up by 128), padding its zero
 * point, K rounded up to 4 (zero weights there); each channel's sums
 * then lose zero point × weight row sum (taken from row_add). FALSE when
 * the filter has no byte form, the window is not 1-D/2-D or the CPU
 * lacks AVX2. */
static gboolean
conv_byte_form (const GraftRtTensor *x, gint64 x_zero, const PackedFilter *filter, const GraftWindow *w2, gint64 M,
                gint32 *row_add, gint64 *zero_u8)
{
#ifdef GRAFT_HAVE_X86_SIMD
  if (filter->packed8 == NULL || w2->n != 2 || !graft_kernel_table ()->avx2 ||
      (filter->bytes_need_vnni && !graft_kernel_table ()->vnni))
    return FALSE;
  *zero_u8 = x->dtype == GRAFT_DTYPE_INT8 ? x_zero + 128 : x_zero;
  for (gint64 m = 0; m < M; m++)
    row_add[m] -= (gint32) (*zero_u8 * filter->row_sums[m]);
  return TRUE;
#else
  return FALSE;
#endif
}

#ifdef GRAFT_HAVE_X86_SIMD
/* ---- the byte form as an implicit GEMM over a padded copy of x ----
 *
 * Rather than writing the im2col matrix (K × N·P bytes: megabytes for an
 * early layer, written once and read back once to pack it) each GEMM
 * task packs its panels straight from x. In a copy of x whose planes
 * carry their padding (the zero point) around them, tap k of column j
 * (image n, output oh, ow) lies at base(j) + taps[k], with no bounds to
 * check: base(j) = n·image + oh·sh·Wp + ow·sw, taps[k] = c·plane +
 * kh·dh·Wp + kw·dw. Columns of one output row are sw bytes apart, so a
 * panel's 16 columns are one load per tap (two for stride 2) when they
 * lie in one output row, and one load per output row, blended in by
 * lanes, when they do not. */

/* Readable bytes before and after the padded copy: a blended load
 * starts up to 15 columns before its run and ends up to 31 bytes after. */
#define CONV_SLACK 64

typedef struct {
  const guint8 *x;          /* this group's first padded plane */
  const gint64 *taps;       /* 4 × quads offsets; the ones past K read anything (zero weights) */
  gint64 quads;
  gint64 N, P, OW;          /* columns: N = images × P output positions, OW per output row */
  gint64 image, row_step, col_step;
} ConvPanels;

typedef struct {
  const guint8 *x;
  guint8 *padded;           /* the first padded plane */
  gint64 H, W, Hp, Wp, top, left;
  guint8 pad;
  gboolean flip;            /* int8 input: every byte moved up by 128 */
} ConvPadJob;

static void
conv_pad_plane (gint64 plane, gpointer data)
{
  const ConvPadJob *job = data;
  const guint8 *src = job->x + plane * job->H * job->W;
  guint8 *dst = job->padded + plane * job->Hp * job->Wp;
  for (gint64 r = 0; r < job->Hp; r++, dst += job->Wp)
    {
      gint64 h = r - job->top;
      if (h < 0 || h >= job->H)
        {
          memset (dst, job->pad, job->Wp);
          continue;
        }
      memset (dst, job->pad, job->left);
      const guint8 *row = src + h * job->W;
      if (job->flip)
        for (gint64 i = 0; i < job->W; i++)
          dst[job->left + i] = row[i] ^ 0x80;
      else
        memcpy (dst + job->left, row, job->W);
      memset (dst + job->left + job->W, job->pad, job->Wp - job->left - job->W);
    }
}

/* 16 bytes of column lanes from a run whose lane 0 would read at p. */
static inline __attribute__ ((always_inline)) GRAFT_TARGET_AVX2_FMA __m128i
conv_load_run (const guint8 *p, gint64 col_step)
{
  if (col_step == 1)
    return _mm_loadu_si128 ((const __m128i *) p);
  /* Stride 2: the even bytes of 32. */
  __m256i v = _mm256_and_si256 (_mm256_loadu_si256 ((const __m256i *) p), _mm256_set1_epi16 (0xff));
  return _mm_packus_epi16 (_mm256_castsi256_si128 (v), _mm256_extracti128_si256 (v, 1));
}

static inline __attribute__ ((always_inline)) GRAFT_TARGET_AVX2_FMA void
conv_panel_one_run (const ConvPanels *cp, const guint8 *x, guint8 *panel, const gint64 col_step)
{
  const gint64 *taps = cp->taps;
  for (gint64 q = 0; q < cp->quads; q++, taps += 4)
    _graft_qgemm_store_quad_u8 (panel + q * TILE_COLS * 4, conv_load_run (x + taps[0], col_step),
                                conv_load_run (x + taps[1], col_step), conv_load_run (x + taps[2], col_step),
                                conv_load_run (x + taps[3], col_step));
}

GRAFT_TARGET_AVX2_FMA GRAFT_HOT_LOOP static void
conv_panel_avx2 (const ConvPanels *cp, gint64 j, guint8 *panel)
{
  gint64 cols = MIN (TILE_COLS, cp->N - j), cs = cp->col_step;
  /* The panel's columns as runs of one output row each: lanes
   * [lane[r], lane[r + 1]), lane l of run r at start[r] + l·cs. */
  int n_runs = 0, lane[TILE_COLS + 1];
  gint64 start[TILE_COLS];
  gint64 n = j / cp->P, pos = j % cp->P, oh = pos / cp->OW, ow = pos % cp->OW;
  for (int l = 0; l < cols; l++)
    {
      if (l == 0 || ow == 0)
        {
          lane[n_runs] = l;
          start[n_runs++] = n * cp->image + oh * cp->row_step + (ow - l) * cs;
        }
      if (++ow == cp->OW)
        {
          ow = 0;
          if (++oh * cp->OW == cp->P)
            oh = 0, n++;
        }
    }
  lane[n_runs] = cols;
  if (n_runs == 1 && cols == TILE_COLS && cs <= 2)
    {
      if (cs == 1)
        conv_panel_one_run (cp, cp->x + start[0], panel, 1);
      else
        conv_panel_one_run (cp, cp->x + start[0], panel, 2);
      return;
    }
  __m128i mask[TILE_COLS];
  const __m128i lanes = _mm_setr_epi8 (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  for (int r = 0; r < n_runs; r++)
    mask[r] = _mm_andnot_si128 (_mm_cmpgt_epi8 (_mm_set1_epi8 (lane[r]), lanes),
                                _mm_cmpgt_epi8 (_mm_set1_epi8 (lane[r + 1]), lanes));
  for (gint64 q = 0; q < cp->quads; q++)
    {
      __m128i rows[4];
      for (int t = 0; t < 4; t++)
        {
          gint64 tap = cp->taps[4 * q + t];
          __m128i v = _mm_setzero_si128 ();
          if (cs <= 2)
            for (int r = 0; r < n_runs; r++)
              v = _mm_blendv_epi8 (v, conv_load_run (cp->x + start[r] + tap, cs), mask[r]);
          else
            {
              guint8 bytes[TILE_COLS] = { 0 };
              for (int r = 0; r < n_runs; r++)
                for (int l = lane[r]; l < lane[r + 1]; l++)
                  bytes[l] = cp->x[start[r] + l * cs + tap];
              v = _mm_loadu_si128 ((const __m128i *) bytes);
            }
          rows[t] = v;
        }
      _graft_qgemm_store_quad_u8 (panel + q * TILE_COLS * 4, rows[0], rows[1], rows[2], rows[3]);
    }
}

static void
conv_panels_avx2 (gconstpointer data, gint64 j0, gint64 n_panels, guint8 *panels, gint64 panel_bytes)
{
  for (gint64 p = 0; p < n_panels; p++)
    conv_panel_avx2 (data, j0 + p * TILE_COLS, panels + p * panel_bytes);
}

/* The byte-form convolution, group by group, into out. */
static void
conv_bytes_run (GraftKernelContext *ctx, const GraftRtTensor *x, const GraftWindow *w, const PackedFilter *filter,
                gint64 group, gint64 zero_u8, ConvOutput *out)
{
  gint64 N = x->dims[0], C = x->dims[1], Cg = C / group, Mg = filter->M / group;
  gint64 KH = w->kernel[0], KW = w->kernel[1], P = w->out[0] * w->out[1];
  gint64 Hp = MAX (w->pad_begin[0] + w->in[0], (w->out[0] - 1) * w->stride[0] + (KH - 1) * w->dilation[0] + 1);
  gint64 Wp = MAX (w->pad_begin[1] + w->in[1], (w->out[1] - 1) * w->stride[1] + (KW - 1) * w->dilation[1] + 1);
  gint64 plane = Hp * Wp;
  g_autofree guint8 *padded = g_malloc (N * C * plane + 2 * CONV_SLACK);
  memset (padded, zero_u8, CONV_SLACK);
  memset (padded + CONV_SLACK + N * C * plane, zero_u8, CONV_SLACK);
  ConvPadJob pad = { x->data, padded + CONV_SLACK, w->in[0], w->in[1], Hp, Wp, w->pad_begin[0], w->pad_begin[1],
                     (guint8) zero_u8, x->dtype == GRAFT_DTYPE_INT8 };
  graft_kernel_parallel_for (ctx, N * C, conv_pad_plane, &pad);

  g_autofree gint64 *taps = g_new0 (gint64, filter->lda8);
  gint64 k = 0;
  for (gint64 c = 0; c < Cg; c++)
    for (gint64 kh = 0; kh < KH; kh++)
      for (gint64 kw = 0; kw < KW; kw++)
        taps[k++] = c * plane + kh * w->dilation[0] * Wp + kw * w->dilation[1];
  ConvPanels panels = { NULL, taps, filter->lda8 / 4, N * P, P, w->out[1], C * plane, w->stride[0] * Wp,
                        w->stride[1] };
  QGemmKind kind = _graft_qgemm_kind_u8s8 ();
  if (graft_kernel_table ()->amx && filter->lda8 % AMX_DEPTH == 0 && filter->rows8 % AMX_ROWS == 0)
    kind = (QGemmKind) { .size = 1, .depth = 4, .max_panels = QGEMM_MAX_PANELS, .rows = AMX_ROWS, .amx = TRUE };
  for (gint64 g = 0; g < group; g++)
    {
      panels.x = padded + CONV_SLACK + g * Cg * plane;
      out->m0 = g * Mg;
      QGemmJob job = { .a = (const guint8 *) (filter->packed8 + g * filter->rows8 * filter->lda8),
                       .source = conv_panels_avx2, .source_data = &panels, .epilogue = conv_output_tile,
                       .epilogue_data = out, .M = Mg, .N = N * P, .K = filter->lda8, .lda = filter->lda8,
                       .kind = kind };
      _graft_qgemm_run (ctx, &job);
    }
}
#endif

/* One group's im2col matrix (int16), one (image, channel) per task. */
typedef struct {
  const gint16 *x16;
  const GraftWindow *w;
  gint64 C, Cg, g, in_size, P, N, taps;
  gint16 *col;
} Im2colJob;

static void
im2col_task (gint64 task, gpointer data)
{
  const Im2colJob *job = data;
  gint64 n = task / job->Cg, c = task % job->Cg, stride = job->N * job->P;
  gint64 image = (n * job->C + job->g * job->Cg + c) * job->in_size, at = c * job->taps * stride + n * job->P;
  if (job->w->n == 2)
    im2col_2d (job->x16 + image, job->w, 1, job->col + at, stride);
  else
    im2col_nd (job->x16 + image, job->w, 1, job->col + at, stride);
}

static gboolean conv_integer (GraftKernelContext *ctx, gboolean requantize, const ConvToFloat *to_float,
                              GError **error);

gboolean
graft_conv_integer_run (GraftKernelContext *ctx, gboolean requantize, GError **error)
{
  return conv_integer (ctx, requantize, NULL, error);
}

/* How t broadcasts against an output of dims [N, M, ...] (rank `rank`)
 * without changing its shape: OPERAND_NONE when it would, or t is not
 * float32. */
static OperandForm
operand_form (const GraftRtTensor *t, const gint64 *dims, int rank, gint64 numel)
{
  if (t == NULL || t->dtype != GRAFT_DTYPE_FLOAT32 || t->rank > rank)
    return OPERAND_NONE;
  if (t->numel == 1)
    return OPERAND_SCALAR;
  gboolean channel = t->numel == dims[1], full = t->numel == numel;
  for (int i = 0; i < t->rank; i++)
    {
      int at = i + rank - t->rank;
      channel &= t->dims[i] == (at == 1 ? dims[1] : 1);
      full &= t->dims[i] == dims[at];
    }
  return full ? OPERAND_FULL : channel ? OPERAND_PER_CHANNEL : OPERAND_NONE;
}

/* graft::ConvIntegerToFloat (see fusion-patterns.h): ConvInteger, Cast,
 * Mul, [Add], [Add], [Relu] as one step. It declines (no output: the
 * nodes run) a scale or addend that is not float32 or would broadcast
 * the output to another shape. */
gboolean
graft_conv_integer_to_float_run (GraftKernelContext *ctx, GError **error)
{
  const GraftConvIntegerFloatFusion *f = graft_kernel_get_pattern (ctx);
  GraftRtTensor *x = ctx->inputs[0], *wt = ctx->inputs[1];
  if (f == NULL || x->rank < 3 || wt->rank != x->rank)
    return TRUE;
  /* the output's shape: what ConvInteger gives, its spatial dims
   * checked by the convolution itself */
  GraftWindow w;
  int ns = x->rank - 2;
  g_autoptr(GError) window_error = NULL;
  if (ns > GRAFT_WINDOW_MAX_DIMS ||
      !graft_window_geometry (ctx->node, ns, x->dims + 2, wt->dims + 2, FALSE, FALSE, &w, &window_error))
    return TRUE;
  gint64 dims[GRAFT_RT_MAX_RANK] = { x->dims[0], wt->dims[0] }, numel = x->dims[0] * wt->dims[0];
  for (int i = 0; i < ns; i++)
    {
      dims[i + 2] = w.out[i];
      numel *= w.out[i];
    }
  ConvToFloat to_float = { 0 };
  GraftRtTensor *scale = graft_kernel_input (ctx, GRAFT_CONV_INTEGER_FLOAT_FUSION_SCALE);
  to_float.scale_form = operand_form (scale, dims, x->rank, numel);
  if (to_float.scale_form == OPERAND_NONE || to_float.scale_form == OPERAND_FULL)
    return TRUE;
  to_float.scale = scale->data;
  for (int a = 0; a < 2; a++)
    {
      GraftRtTensor *addend = graft_kernel_input (ctx, GRAFT_CONV_INTEGER_FLOAT_FUSION_ADD1 + a);
      if (addend == NULL)
        continue;
      to_float.add_form[a] = operand_form (addend, dims, x->rank, numel);
      if (to_float.add_form[a] == OPERAND_NONE)
        return TRUE;
      to_float.add[a] = addend->data;
    }
  /* The plan leaves the second Add and the Relu after it out when the
   * second addend comes later than the convolution: then no Relu here. */
  to_float.relu = f->relu;   /* FALSE in a pattern cut before the second Add */
  return conv_integer (ctx, FALSE, &to_float, error);
}

static gboolean
conv_integer (GraftKernelContext *ctx, gboolean requantize, const ConvToFloat *to_float, GError **error)
{
  ConvOperands o;
  conv_operands (ctx, requantize, &o);
  GraftRtTensor *x = o.x, *wt = o.w;
  int ns = x->rank - 2;
  if (ns < 1 || ns > GRAFT_WINDOW_MAX_DIMS || wt->rank != x->rank)
    return graft_kernel_fail (error, "input rank %d and weight rank %d do not fit", x->rank, wt->rank);
  gint64 group = graft_node_attr_int (ctx->node, "group", 1);
  gint64 N = x->dims[0], C = x->dims[1], M = wt->dims[0];
  if (group <= 0 || C % group != 0 || M % group != 0 || wt->dims[1] * group != C)
    return graft_kernel_fail (error, "%" G_GINT64_FORMAT " input channels and weights %s do not fit group %" G_GINT64_FORMAT,
                              C, graft_rt_tensor_describe (wt), group);
  if (!check_operand (x, "x", o.xzp, 1, error) || !check_operand (wt, "w", o.wzp, M, error))
    return FALSE;
  if (o.xzp && o.xzp->numel > 1)
    return graft_kernel_fail (error, "x_zero_point must be a scalar");
  GraftWindow w;
  if (!graft_window_geometry (ctx->node, ns, x->dims + 2, wt->dims + 2, FALSE, FALSE, &w, error))
    return FALSE;
  g_autofree float *scales = NULL;
  GraftDType out_dtype = to_float ? GRAFT_DTYPE_FLOAT32 : GRAFT_DTYPE_INT32;
  if (requantize)
    {
      if (!check_scale (o.x_scale, "x_scale", 1, error) || !check_scale (o.w_scale, "w_scale", M, error) ||
          !check_scale (o.y_scale, "y_scale", 1, error))
        return FALSE;
      if (o.bias && o.bias->numel != M)
        return graft_kernel_fail (error, "B has %" G_GINT64_FORMAT " values for %" G_GINT64_FORMAT " output channels",
                                  o.bias->numel, M);
      out_dtype = o.yzp ? o.yzp->dtype : x->dtype;
      /* In float, as onnxruntime forms its per-channel output scales. */
      scales = g_new (float, M);
      float xs = graft_rt_tensor_get_f64 (o.x_scale, 0), ys = graft_rt_tensor_get_f64 (o.y_scale, 0);
      for (gint64 m = 0; m < M; m++)
        scales[m] = xs * (float) graft_rt_tensor_get_f64 (o.w_scale, o.w_scale->numel > 1 ? m : 0) / ys;
    }
  gint64 dims[GRAFT_RT_MAX_RANK] = { N, M };
  for (int i = 0; i < ns; i++)
    dims[i + 2] = w.out[i];
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, out_dtype, x->rank, dims, error);
  if (y == NULL)
    return FALSE;

  gint64 Cg = C / group, Mg = M / group;
  gint64 in_size = graft_dims_product (w.in, 0, ns), P = graft_dims_product (w.out, 0, ns);
  gint64 K = Cg * graft_dims_product (w.kernel, 0, ns);
  if (y->numel == 0)
    return TRUE;
  gint64 x_zero = zero_point_at (o.xzp, 0);
  PackedFilter *owned_filter;
  const PackedFilter *filter = packed_filter_get (ctx, wt, o.wzp, group, K, &owned_filter);
  GraftWindow w2 = w;
  if (ns == 1)
    {
      /* One axis is the 2-D case with a height of 1. */
      w2 = (GraftWindow) { .n = 2, .in = { 1, w.in[0] }, .out = { 1, w.out[0] }, .kernel = { 1, w.kernel[0] },
                           .stride = { 1, w.stride[0] }, .dilation = { 1, w.dilation[0] },
                           .pad_begin = { 0, w.pad_begin[0] }, .pad_end = { 0, w.pad_end[0] } };
    }
  g_autofree gint32 *row_add = g_new0 (gint32, M);
  if (o.bias)
    for (gint64 m = 0; m < M; m++)
      row_add[m] = graft_rt_tensor_get_i64 (o.bias, m);
  ConvOutput out = { y, M, 0, P, row_add, scales, zero_point_at (o.yzp, 0), to_float };
  gint64 zero_u8 = 0;
#ifdef GRAFT_HAVE_X86_SIMD
  if (conv_byte_form (x, x_zero, filter, &w2, M, row_add, &zero_u8))
    {
      conv_bytes_run (ctx, x, &w2, filter, group, zero_u8, &out);
      g_clear_pointer (&owned_filter, packed_filter_free);
      return TRUE;
    }
#endif
  g_autofree gint16 *x16 = g_new (gint16, MAX (x->numel, 1));
  widen_minus_zero (x, x_zero, x16);
  /* All images of a group in one GEMM: a wider b keeps the small
   * late-layer maps from leaving tile columns empty. */
  g_autofree gint16 *col = g_new (gint16, MAX (K * N * P, 1));
  Im2colJob im2col = { x16, &w2, C, Cg, 0, in_size, P, N, K / Cg, col };
  for (gint64 g = 0; g < group; g++)
    {
      im2col.g = g;
      graft_kernel_parallel_for (ctx, N * Cg, im2col_task, &im2col);
      out.m0 = g * Mg;
      QGemmJob job = { .a = (const guint8 *) (filter->packed + g * filter->rows * filter->lda), .b = col,
                       .epilogue = conv_output_tile, .epilogue_data = &out, .M = Mg, .N = N * P, .K = K,
                       .lda = filter->lda, .kind = _graft_qgemm_kind_s16 () };
      _graft_qgemm_run (ctx, &job);
    }
  g_clear_pointer (&owned_filter, packed_filter_free);
  return TRUE;
}

/* ---- MatMulInteger, QLinearMatMul ---- */

/* Offset (in matrices) of batch item `index` of out in an operand whose
 * batch axes are the last `rank` of out's, size-1 axes broadcast. */
static gint64
batch_offset (const GraftRtTensor *out, int out_batch_rank, const GraftRtTensor *t, int rank, gint64 index)
{
  gint64 offset = 0, stride = 1;
  for (int d = out_batch_rank - 1, td = rank - 1; d >= 0; d--, td--)
    {
      gint64 i = index % out->dims[d];
      index /= out->dims[d];
      if (td < 0)
        continue;
      if (t->dims[td] != 1)
        offset += i * stride;
      stride *= t->dims[td];
    }
  return offset;
}

gboolean
graft_matmul_integer_run (GraftKernelContext *ctx, gboolean requantize, GError **error)
{
  GraftRtTensor *a = ctx->inputs[0], *b = ctx->inputs[requantize ? 3 : 1];
  GraftRtTensor *azp = graft_kernel_input (ctx, 2), *bzp = graft_kernel_input (ctx, requantize ? 5 : 3);
  GraftRtTensor *out = graft_kernel_output (ctx, 0, error);
  if (out == NULL)
    return FALSE;
  int ra = a->rank, rb = b->rank;
  if (ra < 1 || rb < 1)
    return graft_kernel_fail (error, "operands must have at least one axis");
  gint64 M = ra >= 2 ? a->dims[ra - 2] : 1, K = a->dims[ra - 1];
  gint64 N = rb >= 2 ? b->dims[rb - 1] : 1, Kb = rb >= 2 ? b->dims[rb - 2] : b->dims[0];
  if (K != Kb)
    return graft_kernel_fail (error, "inner dimensions %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT " differ", K, Kb);
  if (!check_operand (a, "A", azp, M, error) || !check_operand (b, "B", bzp, N, error))
    return FALSE;
  g_autofree float *scales = NULL;
  gint64 lo = 0, hi = 0, y_zero = 0;
  if (requantize)
    {
      GraftRtTensor *as = ctx->inputs[1], *bs = ctx->inputs[4], *ys = ctx->inputs[6];
      if (!check_scale (as, "a_scale", M, error) || !check_scale (bs, "b_scale", N, error) ||
          !check_scale (ys, "y_scale", 1, error))
        return FALSE;
      quant_limits (out->dtype, &lo, &hi);
      y_zero = zero_point_at (graft_kernel_input (ctx, 7), 0);
      scales = g_new (float, M * N);
      float y_scale = graft_rt_tensor_get_f64 (ys, 0);
      for (gint64 i = 0; i < M; i++)
        for (gint64 j = 0; j < N; j++)
          scales[i * N + j] = (float) graft_rt_tensor_get_f64 (as, as->numel > 1 ? i : 0) *
                              (float) graft_rt_tensor_get_f64 (bs, bs->numel > 1 ? j : 0) / y_scale;
    }
  g_autofree gint16 *a16 = g_new (gint16, MAX (a->numel, 1));
  g_autofree gint16 *b16 = g_new (gint16, MAX (b->numel, 1));
  for (gint64 i = 0; i < a->numel; i++)
    a16[i] = element_i64 (a, i) - zero_point_at (azp, (i / K) % M);
  for (gint64 i = 0; i < b->numel; i++)
    b16[i] = element_i64 (b, i) - zero_point_at (bzp, i % N);
  int out_batch_rank = out->rank - (ra >= 2) - (rb >= 2);
  gint64 batches = graft_dims_product (out->dims, 0, out_batch_rank);
  g_autofree gint32 *acc = requantize ? g_new (gint32, MAX (M * N, 1)) : NULL;
  for (gint64 bi = 0; bi < batches; bi++)
    {
      gint64 oa = batch_offset (out, out_batch_rank, a, ra - 2, bi) * M * K;
      gint64 ob = batch_offset (out, out_batch_rank, b, rb - 2, bi) * K * N;
      gint32 *c = requantize ? acc : (gint32 *) out->data + bi * M * N;
      graft_qgemm_s16 (ctx, M, N, K, a16 + oa, b16 + ob, c, N);
      if (requantize)
        for (gint64 i = 0; i < M * N; i++)
          store_quantized (out, bi * M * N + i, requantize_value ((float) acc[i] * scales[i], y_zero, lo, hi));
    }
  return TRUE;
}

/* ---- com.microsoft QGemm: a quantized Gemm with an int32 bias ---- */

static gboolean
infer_qgemm (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *a = graft_infer_input (ctx, 0), *b = graft_infer_input (ctx, 3);
  GraftInferValue *y_scale = graft_infer_input (ctx, 7), *y_zero = graft_infer_input (ctx, 8);
  GraftDType dtype = y_scale == NULL ? GRAFT_DTYPE_FLOAT32 : y_zero ? y_zero->dtype : a->dtype;
  gboolean ta = graft_node_attr_int (ctx->node, "transA", 0), tb = graft_node_attr_int (ctx->node, "transB", 0);
  if ((a->shape.rank >= 0 && a->shape.rank != 2) || (b->shape.rank >= 0 && b->shape.rank != 2))
    return graft_kernel_fail (error, "A and B must be 2-D");
  GraftShape out;
  graft_shape_init (&out, 2);
  out.dims[0] = a->shape.rank == 2 ? a->shape.dims[ta ? 1 : 0] : graft_dim_unknown ();
  out.dims[1] = b->shape.rank == 2 ? b->shape.dims[tb ? 0 : 1] : graft_dim_unknown ();
  graft_infer_set_output (ctx, 0, dtype, &out);
  graft_shape_clear (&out);
  return TRUE;
}

/* t (2-D, 8-bit) minus its zero points as int16, transposed when asked;
 * zero points run along axis `zp_axis` of the untransposed result. */
static gint16 *
operand_s16 (const GraftRtTensor *t, gboolean transpose, const GraftRtTensor *zp, int zp_axis)
{
  gint64 rows = t->dims[0], cols = t->dims[1];
  gint16 *r = g_new (gint16, MAX (t->numel, 1));
  for (gint64 i = 0; i < rows; i++)
    for (gint64 j = 0; j < cols; j++)
      {
        gint64 ri = transpose ? j : i, rj = transpose ? i : j, rcols = transpose ? rows : cols;
        r[ri * rcols + rj] = element_i64 (t, i * cols + j) - zero_point_at (zp, zp_axis == 0 ? ri : rj);
      }
  return r;
}

/* QGemm's B as operand_s16 makes it, kept on the node for a constant B
 * with the layout and zero points it was made for. */
typedef struct {
  gint64 rows, cols;
  gboolean transpose;
  KeptZeroPoints zero_points;
  gint16 *values;
} KeptOperand;

static void
kept_operand_free (gpointer data)
{
  KeptOperand *k = data;
  g_free (k->zero_points.values);
  g_free (k->values);
  g_free (k);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (KeptOperand, kept_operand_free)

static gboolean
kept_operand_fits (const KeptOperand *k, const GraftRtTensor *t, gboolean transpose, const GraftRtTensor *zp)
{
  return k->rows == t->dims[0] && k->cols == t->dims[1] && k->transpose == transpose &&
         kept_zero_points_match (&k->zero_points, zp);
}

typedef struct {
  const GraftRtTensor *t, *zp;
  gboolean transpose;
  int zp_axis;
} OperandArgs;

static gboolean
kept_operand_args_fit (gconstpointer kept, gconstpointer args)
{
  const OperandArgs *a = args;
  return kept_operand_fits (kept, a->t, a->transpose, a->zp);
}

static gpointer
kept_operand_make (gconstpointer args)
{
  const OperandArgs *a = args;
  KeptOperand *k = g_new0 (KeptOperand, 1);
  *k = (KeptOperand) { a->t->dims[0], a->t->dims[1], a->transpose, { 0, NULL },
                       operand_s16 (a->t, a->transpose, a->zp, a->zp_axis) };
  kept_zero_points_init (&k->zero_points, a->zp);
  return k;
}

static const GraftDerivedKind kept_operand_kind = { "16-bit operand", kept_operand_free, TRUE };

/* operand_s16 (t, transpose, zp, zp_axis), from the node's kept copy
 * when it fits; else made, and kept when t is a constant (*owned set
 * otherwise, to free with kept_operand_free). */
static const gint16 *
operand_s16_kept (GraftKernelContext *ctx, const GraftRtTensor *t, gboolean transpose, const GraftRtTensor *zp,
                  int zp_axis, KeptOperand **owned)
{
  OperandArgs args = { t, zp, transpose, zp_axis };
  const KeptOperand *k = graft_kernel_derived (ctx, &kept_operand_kind, t->data, kept_operand_args_fit,
                                               kept_operand_make, &args, (gpointer *) owned);
  return k->values;
}

static gboolean
kernel_qgemm (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *a = ctx->inputs[0], *as = ctx->inputs[1], *azp = graft_kernel_input (ctx, 2);
  GraftRtTensor *b = ctx->inputs[3], *bs = ctx->inputs[4], *bzp = graft_kernel_input (ctx, 5);
  GraftRtTensor *c = graft_kernel_input (ctx, 6), *ys = graft_kernel_input (ctx, 7), *yzp = graft_kernel_input (ctx, 8);
  gboolean ta = graft_node_attr_int (ctx->node, "transA", 0), tb = graft_node_attr_int (ctx->node, "transB", 0);
  float alpha = graft_node_attr_float (ctx->node, "alpha", 1.0);
  if (a->rank != 2 || b->rank != 2)
    return graft_kernel_fail (error, "A and B must be 2-D");
  gint64 M = a->dims[ta ? 1 : 0], K = a->dims[ta ? 0 : 1], N = b->dims[tb ? 0 : 1];
  if (b->dims[tb ? 1 : 0] != K)
    return graft_kernel_fail (error, "inner dimensions %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT " differ", K,
                              b->dims[tb ? 1 : 0]);
  if (!check_operand (a, "A", azp, 1, error) || !check_operand (b, "B", bzp, N, error) ||
      !check_scale (as, "a_scale", 1, error) || !check_scale (bs, "b_scale", N, error) ||
      (ys && !check_scale (ys, "y_scale", 1, error)))
    return FALSE;
  if (c && c->numel != N && c->numel != 1 && c->numel != M * N)
    return graft_kernel_fail (error, "C has %" G_GINT64_FORMAT " values for a %" G_GINT64_FORMAT "×%" G_GINT64_FORMAT " output",
                              c->numel, M, N);
  GraftRtTensor *out = graft_kernel_output (ctx, 0, error);
  if (out == NULL)
    return FALSE;
  g_autofree gint16 *a16 = operand_s16 (a, ta, azp, 0);
  g_autoptr(KeptOperand) owned_b16 = NULL;
  const gint16 *b16 = operand_s16_kept (ctx, b, tb, bzp, 1, &owned_b16);
  g_autofree gint32 *acc = g_new (gint32, MAX (M * N, 1));
  graft_qgemm_s16 (ctx, M, N, K, a16, b16, acc, N);
  gint64 lo = 0, hi = 0, y_zero = zero_point_at (yzp, 0);
  if (ys)
    quant_limits (out->dtype, &lo, &hi);
  float y_scale = ys ? graft_rt_tensor_get_f64 (ys, 0) : 1.0f;
  float a_scale = graft_rt_tensor_get_f64 (as, 0);
  for (gint64 i = 0; i < M; i++)
    for (gint64 j = 0; j < N; j++)
      {
        gint64 at = i * N + j;
        gint64 bias = c == NULL ? 0 : graft_rt_tensor_get_i64 (c, c->numel == 1 ? 0 : c->numel == N ? j : at);
        float scale = alpha * a_scale * (float) graft_rt_tensor_get_f64 (bs, bs->numel > 1 ? j : 0);
        float v = (float) (acc[at] + bias) * scale;
        if (ys)
          store_quantized (out, at, requantize_value (v / y_scale, y_zero, lo, hi));
        else
          ((float *) out->data)[at] = v;
      }
  return TRUE;
}

/* ---- com.microsoft QLinearAdd: C = quantize(dequantize(A) + dequantize(B)) ---- */

static gboolean
infer_qlinear_add (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *a = graft_infer_input (ctx, 0), *b = graft_infer_input (ctx, 3);
  GraftShape out;
  if (!graft_shape_broadcast (&a->shape, &b->shape, &out, error))
    return FALSE;
  GraftInferValue *zp = graft_infer_input (ctx, 7);
  graft_infer_set_output (ctx, 0, zp ? zp->dtype : a->dtype, &out);
  graft_shape_clear (&out);
  return TRUE;
}

typedef struct {
  GraftDType a_dtype, b_dtype, out_dtype;
  float a_scale, b_scale;     /* over the output scale */
  gint64 a_zero, b_zero, out_zero, lo, hi;
} QLinearAddParams;

static void
qlinear_add_run (const void *a, gint64 sa, const void *b, gint64 sb, void *out, gint64 n, gconstpointer user_data)
{
  const QLinearAddParams *p = user_data;
  for (gint64 i = 0; i < n; i++)
    {
      gint64 av = p->a_dtype == GRAFT_DTYPE_INT8 ? ((const gint8 *) a)[i * sa] : ((const guint8 *) a)[i * sa];
      gint64 bv = p->b_dtype == GRAFT_DTYPE_INT8 ? ((const gint8 *) b)[i * sb] : ((const guint8 *) b)[i * sb];
      float v = (av - p->a_zero) * p->a_scale + (bv - p->b_zero) * p->b_scale;
      gint64 q = requantize_value (v, p->out_zero, p->lo, p->hi);
      if (p->out_dtype == GRAFT_DTYPE_INT8)
        ((gint8 *) out)[i] = q;
      else
        ((guint8 *) out)[i] = q;
    }
}

#ifdef GRAFT_HAVE_X86_SIMD
/* Same-shape operands of one 8-bit dtype: eight lanes at a time, with
 * the portable loop's separate multiplies and add (no FMA), so the two
 * round the same sums. */
GRAFT_TARGET_AVX2_FMA static void
qlinear_add_same_shape_avx2 (const guint8 *a, const guint8 *b, guint8 *out, gint64 n, const QLinearAddParams *p)
{
  gboolean is_signed = p->out_dtype == GRAFT_DTYPE_INT8;
  __m256 as = _mm256_set1_ps (p->a_scale), bs = _mm256_set1_ps (p->b_scale);
  __m256 lo = _mm256_set1_ps (p->lo - p->out_zero), hi = _mm256_set1_ps (p->hi - p->out_zero);
  __m256i az = _mm256_set1_epi32 (p->a_zero), bz = _mm256_set1_epi32 (p->b_zero), oz = _mm256_set1_epi32 (p->out_zero);
  gint64 i = 0;
  for (; i + 8 <= n; i += 8)
    {
      __m128i a8 = _mm_loadl_epi64 ((const __m128i *) (a + i)), b8 = _mm_loadl_epi64 ((const __m128i *) (b + i));
      __m256i ai = is_signed ? _mm256_cvtepi8_epi32 (a8) : _mm256_cvtepu8_epi32 (a8);
      __m256i bi = is_signed ? _mm256_cvtepi8_epi32 (b8) : _mm256_cvtepu8_epi32 (b8);
      __m256 va = _mm256_mul_ps (_mm256_cvtepi32_ps (_mm256_sub_epi32 (ai, az)), as);
      __m256 vb = _mm256_mul_ps (_mm256_cvtepi32_ps (_mm256_sub_epi32 (bi, bz)), bs);
      __m256 v = _mm256_min_ps (_mm256_max_ps (_mm256_add_ps (va, vb), lo), hi);
      __m256i q = _mm256_add_epi32 (_mm256_cvtps_epi32 (v), oz);
      __m128i q16 = _mm_packs_epi32 (_mm256_castsi256_si128 (q), _mm256_extracti128_si256 (q, 1));
      _mm_storel_epi64 ((__m128i *) (out + i), is_signed ? _mm_packs_epi16 (q16, q16) : _mm_packus_epi16 (q16, q16));
    }
  qlinear_add_run (a + i, 1, b + i, 1, out + i, n - i, p);
}
#endif

static gboolean
kernel_qlinear_add (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *a = ctx->inputs[0], *b = ctx->inputs[3];
  GraftRtTensor *as = ctx->inputs[1], *bs = ctx->inputs[4], *cs = ctx->inputs[6];
  GraftRtTensor *out = graft_kernel_output (ctx, 0, error);
  if (out == NULL)
    return FALSE;
  if (!check_operand (a, "A", NULL, 1, error) || !check_operand (b, "B", NULL, 1, error) ||
      !check_scale (as, "A_scale", 1, error) || !check_scale (bs, "B_scale", 1, error) ||
      !check_scale (cs, "C_scale", 1, error))
    return FALSE;
  if (!is_8bit (out))
    return graft_kernel_unsupported (error, "C is %s; only uint8 and int8 are supported", graft_dtype_to_string (out->dtype));
  float c_scale = graft_rt_tensor_get_f64 (cs, 0);
  QLinearAddParams p = { a->dtype, b->dtype, out->dtype,
                         (float) graft_rt_tensor_get_f64 (as, 0) / c_scale, (float) graft_rt_tensor_get_f64 (bs, 0) / c_scale,
                         zero_point_at (graft_kernel_input (ctx, 2), 0), zero_point_at (graft_kernel_input (ctx, 5), 0),
                         zero_point_at (graft_kernel_input (ctx, 7), 0), 0, 0 };
  quant_limits (out->dtype, &p.lo, &p.hi);
#ifdef GRAFT_HAVE_X86_SIMD
  if (graft_kernel_table ()->avx2 && graft_rt_tensor_same_shape (a, b) &&
      a->dtype == b->dtype && a->dtype == out->dtype)
    {
      qlinear_add_same_shape_avx2 (a->data, b->data, out->data, out->numel, &p);
      return TRUE;
    }
#endif
  graft_broadcast_binary (a, b, out, qlinear_add_run, &p);
  return TRUE;
}

/* ---- com.microsoft QLinearGlobalAveragePool ---- */

static gboolean
infer_qlinear_global_average_pool (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *x = graft_infer_input (ctx, 0);
  if (x->shape.rank < 0)
    {
      graft_infer_set_output_unknown (ctx, 0, x->dtype, -1);
      return TRUE;
    }
  if (x->shape.rank < 3)
    return graft_kernel_fail (error, "X needs a batch, a channel and at least one spatial axis");
  gboolean channels_last = graft_node_attr_int (ctx->node, "channels_last", 0);
  GraftShape out;
  graft_shape_init (&out, x->shape.rank);
  for (int i = 0; i < x->shape.rank; i++)
    out.dims[i] = graft_dim_fixed (1);
  out.dims[0] = x->shape.dims[0];
  int channel_axis = channels_last ? x->shape.rank - 1 : 1;
  out.dims[channel_axis] = x->shape.dims[channel_axis];
  GraftInferValue *zp = graft_infer_input (ctx, 4);
  graft_infer_set_output (ctx, 0, zp ? zp->dtype : x->dtype, &out);
  graft_shape_clear (&out);
  return TRUE;
}

static gboolean
kernel_qlinear_global_average_pool (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0], *xs = ctx->inputs[1], *ys = ctx->inputs[3];
  gboolean channels_last = graft_node_attr_int (ctx->node, "channels_last", 0);
  GraftRtTensor *out = graft_kernel_output (ctx, 0, error);
  if (out == NULL)
    return FALSE;
  if (!check_operand (x, "X", NULL, 1, error) || !check_scale (xs, "x_scale", 1, error) ||
      !check_scale (ys, "y_scale", 1, error))
    return FALSE;
  if (!is_8bit (out))
    return graft_kernel_unsupported (error, "Y is %s; only uint8 and int8 are supported", graft_dtype_to_string (out->dtype));
  gint64 N = x->dims[0], C = x->dims[channels_last ? x->rank - 1 : 1];
  gint64 S = x->numel / MAX (N * C, 1);
  gint64 x_zero = zero_point_at (graft_kernel_input (ctx, 2), 0), y_zero = zero_point_at (graft_kernel_input (ctx, 4), 0);
  gint64 lo, hi;
  quant_limits (out->dtype, &lo, &hi);
  float scale = (float) graft_rt_tensor_get_f64 (xs, 0) / ((float) graft_rt_tensor_get_f64 (ys, 0) * S);
  for (gint64 n = 0; n < N; n++)
    for (gint64 c = 0; c < C; c++)
      {
        gint64 sum = 0;
        for (gint64 s = 0; s < S; s++)
          sum += element_i64 (x, channels_last ? (n * S + s) * C + c : (n * C + c) * S + s);
        store_quantized (out, n * C + c, requantize_value ((float) (sum - x_zero * S) * scale, y_zero, lo, hi));
      }
  return TRUE;
}

#define MS(name, infer, kernel, input_names, output_names) { "com.microsoft::" name, 1, 0, infer, kernel, 0, input_names, output_names }

const GraftOpSchema graft_ops_qlinear[] = {
  MS ("QGemm", infer_qgemm, kernel_qgemm, "A a_scale a_zero_point B b_scale b_zero_point C y_scale y_zero_point", "Y"),
  MS ("QLinearAdd", infer_qlinear_add, kernel_qlinear_add, "A A_scale A_zero_point B B_scale B_zero_point C_scale C_zero_point", "C"),
  MS ("QLinearGlobalAveragePool", infer_qlinear_global_average_pool, kernel_qlinear_global_average_pool,
      "X x_scale x_zero_point y_scale y_zero_point", "Y"),
  { NULL }
};

