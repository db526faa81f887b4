#include <math.h>
#include <string.h>

#include "runtime/kernels/vector-math.h"
#include "runtime/kernels/simd-target.h"

/* ---- portable: one float per "vector" ---- */

typedef float VPortable;

static void softmax_column_double (const float *x, float *y, gint64 n, gint64 stride, gboolean log_form);

static inline float
pow2i_portable (float n)
{
  guint32 bits = (guint32) ((gint32) n + 127) << 23;
  float f;
  memcpy (&f, &bits, sizeof f);
  return f;
}

/* 2^k for k + 127 in the low bits of t's mantissa (t a float near 1.5·2^23) */
static inline float
pow2_low_bits_portable (float t)
{
  guint32 bits;
  float f;
  memcpy (&bits, &t, sizeof bits);
  bits <<= 23;
  memcpy (&f, &bits, sizeof f);
  return f;
}

#define V VPortable
#define VW 1
#define VM_SUFFIX portable
#define V_SET1(f) ((float) (f))
#define V_LOAD(p) (*(p))
#define V_STORE(p, v) (*(p) = (v))
#define V_ADD(a, b) ((a) + (b))
#define V_SUB(a, b) ((a) - (b))
#define V_MUL(a, b) ((a) * (b))
#define V_DIV(a, b) ((a) / (b))
#define V_FMA(a, b, c) ((a) * (b) + (c))
/* the operand order of the SIMD min and max: the second when either is NaN */
#define V_MIN(a, b) ((a) < (b) ? (a) : (b))
#define V_MAX(a, b) ((a) > (b) ? (a) : (b))
#define V_ABS(a) fabsf (a)
#define V_ROUND(a) nearbyintf (a)
#define V_POW2I(n) pow2i_portable (n)
#define V_POW2_LOW_BITS(t) pow2_low_bits_portable (t)
#define VM_SHORT_CHAINS 0
#define V_COPYSIGN(mag, sign) copysignf (mag, sign)
/* copysign for a magnitude known to be ≥ 0 (the SIMD ones skip its abs) */
#define V_OR_SIGN(mag, sign) copysignf (mag, sign)
#define V_SELECT_LT(a, b, t, f) ((a) < (b) ? (t) : (f))
#define V_KEEP_NAN(x, r) (isnan (x) ? (x) : (r))
/* the first n < VW values (never reached with one value a vector) */
#define V_LOAD_PARTIAL(p, n, fill) ((n) > 0 ? *(p) : (fill))
#define V_STORE_PARTIAL(p, v, n) do { if ((n) > 0) *(p) = (v); } while (0)
#define V_HMAX(v) (v)
#define V_HSUM_DOUBLE(v) ((double) (v))
#include "runtime/kernels/vector-math-body.h"
#include "runtime/kernels/vector-math-end.h"

#ifdef GRAFT_HAVE_X86_SIMD

/* ---- AVX2 + FMA: 8 floats ---- */

#pragma GCC push_options
#pragma GCC target ("avx2,fma")
#if defined(__clang__)
#pragma clang attribute push (__attribute__ ((target ("avx2,fma"))), apply_to = function)
#endif

#define V __m256
#define VW 8
#define VM_SUFFIX avx2
#define V_SET1(f) _mm256_set1_ps (f)
#define V_LOAD(p) _mm256_loadu_ps (p)
#define V_STORE(p, v) _mm256_storeu_ps (p, v)
#define V_ADD(a, b) _mm256_add_ps (a, b)
#define V_SUB(a, b) _mm256_sub_ps (a, b)
#define V_MUL(a, b) _mm256_mul_ps (a, b)
#define V_DIV(a, b) _mm256_div_ps (a, b)
#define V_FMA(a, b, c) _mm256_fmadd_ps (a, b, c)
#define V_MIN(a, b) _mm256_min_ps (a, b)
#define V_MAX(a, b) _mm256_max_ps (a, b)
#define V_ABS(a) _mm256_andnot_ps (_mm256_set1_ps (-0.0f), a)
#define V_ROUND(a) _mm256_round_ps (a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define V_POW2I(n) \
  _mm256_castsi256_ps (_mm256_slli_epi32 (_mm256_add_epi32 (_mm256_cvtps_epi32 (n), _mm256_set1_epi32 (127)), 23))
#define V_POW2_LOW_BITS(t) _mm256_castsi256_ps (_mm256_slli_epi32 (_mm256_castps_si256 (t), 23))
#define V_OR_SIGN(mag, sign) _mm256_or_ps (mag, _mm256_and_ps (_mm256_set1_ps (-0.0f), sign))
#define VM_SHORT_CHAINS 1
#define V_COPYSIGN(mag, sign) \
  _mm256_or_ps (V_ABS (mag), _mm256_and_ps (_mm256_set1_ps (-0.0f), sign))
#define V_SELECT_LT(a, b, t, f) _mm256_blendv_ps (f, t, _mm256_cmp_ps (a, b, _CMP_LT_OQ))
#define V_KEEP_NAN(x, r) _mm256_blendv_ps (r, x, _mm256_cmp_ps (x, x, _CMP_UNORD_Q))
#define V_LANES_BELOW(n) _mm256_cmpgt_epi32 (_mm256_set1_epi32 ((int) (n)), _mm256_setr_epi32 (0, 1, 2, 3, 4, 5, 6, 7))
#define V_LOAD_PARTIAL(p, n, fill) \
  _mm256_blendv_ps (_mm256_set1_ps (fill), _mm256_maskload_ps (p, V_LANES_BELOW (n)), \
                    _mm256_castsi256_ps (V_LANES_BELOW (n)))
#define V_STORE_PARTIAL(p, v, n) _mm256_maskstore_ps (p, V_LANES_BELOW (n), v)

/* Across the lanes by shuffles: through memory and a scalar loop, these
 * were a fifth of a softmax over 79 values. */
static inline float
hmax_avx2 (__m256 v)
{
  __m128 m = _mm_max_ps (_mm256_castps256_ps128 (v), _mm256_extractf128_ps (v, 1));
  m = _mm_max_ps (m, _mm_movehl_ps (m, m));
  return _mm_cvtss_f32 (_mm_max_ss (m, _mm_movehdup_ps (m)));
}

/* the lanes in double, so that a long row's sum keeps a float's digits */
static inline double
hsum_double_avx2 (__m256 v)
{
  __m256d d = _mm256_add_pd (_mm256_cvtps_pd (_mm256_castps256_ps128 (v)), _mm256_cvtps_pd (_mm256_extractf128_ps (v, 1)));
  __m128d s = _mm_add_pd (_mm256_castpd256_pd128 (d), _mm256_extractf128_pd (d, 1));
  return _mm_cvtsd_f64 (_mm_add_sd (s, _mm_unpackhi_pd (s, s)));
}
#define V_HMAX(v) hmax_avx2 (v)
#define V_HSUM_DOUBLE(v) hsum_double_avx2 (v)
#include "runtime/kernels/vector-math-body.h"
#undef V_LANES_BELOW
#include "runtime/kernels/vector-math-end.h"

#if defined(__clang__)
#pragma clang attribute pop
#endif
#pragma GCC pop_options

/* ---- AVX-512F: 16 floats (AVX-512F alone has no float and/or, so the
 * sign bits go through the integer operations) ---- */

GRAFT_TARGET_AVX512_BEGIN

#define V __m512
#define VW 16
#define VM_SUFFIX avx512
#define V_SET1(f) _mm512_set1_ps (f)
#define V_LOAD(p) _mm512_loadu_ps (p)
#define V_STORE(p, v) _mm512_storeu_ps (p, v)
#define V_ADD(a, b) _mm512_add_ps (a, b)
#define V_SUB(a, b) _mm512_sub_ps (a, b)
#define V_MUL(a, b) _mm512_mul_ps (a, b)
#define V_DIV(a, b) _mm512_div_ps (a, b)
#define V_FMA(a, b, c) _mm512_fmadd_ps (a, b, c)
#define V_MIN(a, b) _mm512_min_ps (a, b)
#define V_MAX(a, b) _mm512_max_ps (a, b)
#define V_ABS(a) _mm512_castsi512_ps (_mm512_and_si512 (_mm512_castps_si512 (a), _mm512_set1_epi32 (0x7fffffff)))
#define V_ROUND(a) _mm512_roundscale_ps (a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define V_POW2I(n) \
  _mm512_castsi512_ps (_mm512_slli_epi32 (_mm512_add_epi32 (_mm512_cvtps_epi32 (n), _mm512_set1_epi32 (127)), 23))
#define V_POW2_LOW_BITS(t) _mm512_castsi512_ps (_mm512_slli_epi32 (_mm512_castps_si512 (t), 23))
/* mag | (sign & sign bit) */
#define V_OR_SIGN(mag, sign)                                                                  \
  _mm512_castsi512_ps (_mm512_ternarylogic_epi32 (_mm512_castps_si512 (mag), _mm512_castps_si512 (sign), \
                                                  _mm512_set1_epi32 (G_MININT32), 0xf8))
#define VM_SHORT_CHAINS 0
#define V_COPYSIGN(mag, sign)                                                                          \
  _mm512_castsi512_ps (_mm512_or_si512 (_mm512_castps_si512 (V_ABS (mag)),                             \
                                        _mm512_and_si512 (_mm512_castps_si512 (sign), _mm512_set1_epi32 (G_MININT32))))
#define V_SELECT_LT(a, b, t, f) _mm512_mask_blend_ps (_mm512_cmp_ps_mask (a, b, _CMP_LT_OQ), f, t)
#define V_KEEP_NAN(x, r) _mm512_mask_blend_ps (_mm512_cmp_ps_mask (x, x, _CMP_UNORD_Q), r, x)
#define V_LOAD_PARTIAL(p, n, fill) _mm512_mask_loadu_ps (_mm512_set1_ps (fill), (__mmask16) ((1u << (n)) - 1), p)
#define V_STORE_PARTIAL(p, v, n) _mm512_mask_storeu_ps (p, (__mmask16) ((1u << (n)) - 1), v)

static inline double
hsum_double_avx512 (__m512 v)
{
  __m256 high = _mm256_castpd_ps (_mm512_extractf64x4_pd (_mm512_castps_pd (v), 1));
  return _mm512_reduce_add_pd (_mm512_add_pd (_mm512_cvtps_pd (_mm512_castps512_ps256 (v)), _mm512_cvtps_pd (high)));
}
#define V_HMAX(v) _mm512_reduce_max_ps (v)
#define V_HSUM_DOUBLE(v) hsum_double_avx512 (v)
#include "runtime/kernels/vector-math-body.h"
#include "runtime/kernels/vector-math-end.h"

GRAFT_TARGET_AVX512_END

#endif

/* The variant this CPU may run (0 portable, 1 AVX2, 2 AVX-512). */
static GraftSimdLevel
level (void)
{
#ifdef GRAFT_HAVE_X86_SIMD
  return graft_kernel_table ()->level;
#else
  return GRAFT_SIMD_PORTABLE;
#endif
}

#ifdef GRAFT_HAVE_X86_SIMD
#define DISPATCH(name, ...)                                                    \
  switch (level ())                                                            \
    {                                                                          \
    case GRAFT_SIMD_AVX512: return name##_avx512 (__VA_ARGS__);                \
    case GRAFT_SIMD_AVX2: return name##_avx2 (__VA_ARGS__);                    \
    default: return name##_portable (__VA_ARGS__);                             \
    }
#else
#define DISPATCH(name, ...) return name##_portable (__VA_ARGS__)
#endif

static void
elementwise (void (*const rows[3]) (const float *, float *, gint64, gboolean), const float *x, float *y, gint64 n,
             gboolean flag)
{
  rows[level ()] (x, y, n, flag);
}

#ifdef GRAFT_HAVE_X86_SIMD
#define ROWS(name) { name##_row_portable, name##_row_avx2, name##_row_avx512 }
#else
#define ROWS(name) { name##_row_portable, name##_row_portable, name##_row_portable }
#endif

void
graft_vm_exp (const float *x, float *y, gint64 n)
{
  static void (*const rows[3]) (const float *, float *, gint64, gboolean) = ROWS (exp);
  elementwise (rows, x, y, n, FALSE);
}

void
graft_vm_erf (const float *x, float *y, gint64 n)
{
  static void (*const rows[3]) (const float *, float *, gint64, gboolean) = ROWS (erf);
  elementwise (rows, x, y, n, FALSE);
}

void
graft_vm_tanh (const float *x, float *y, gint64 n)
{
  static void (*const rows[3]) (const float *, float *, gint64, gboolean) = ROWS (tanh);
  elementwise (rows, x, y, n, FALSE);
}

void
graft_vm_gelu (const float *x, float *y, gint64 n, gboolean tanh_form)
{
  static void (*const rows[3]) (const float *, float *, gint64, gboolean) = ROWS (gelu);
  elementwise (rows, x, y, n, tanh_form);
}

void
graft_vm_sigmoid (const float *x, float *y, gint64 n)
{
  static void (*const rows[3]) (const float *, float *, gint64, gboolean) = ROWS (sigmoid);
  elementwise (rows, x, y, n, FALSE);
}

void
graft_vm_hard_swish (const float *x, float *y, gint64 n)
{
  static void (*const rows[3]) (const float *, float *, gint64, gboolean) = ROWS (hard_swish);
  elementwise (rows, x, y, n, FALSE);
}

static gboolean
softmax_row (const float *x, float *y, gint64 n, gboolean log_form, float *inv_sum)
{
  DISPATCH (softmax_row, x, y, n, log_form, inv_sum)
}

/* What the reference kernel computes, for the n values x[0], x[stride] …
 * of a row or a column with infinities or NaN. */
static void
softmax_column_double (const float *x, float *y, gint64 n, gint64 stride, gboolean log_form)
{
  double mx = -INFINITY, sum = 0;
  for (gint64 k = 0; k < n; k++)
    if (x[k * stride] > mx)
      mx = x[k * stride];
  for (gint64 k = 0; k < n; k++)
    sum += exp (x[k * stride] - mx);
  for (gint64 k = 0; k < n; k++)
    y[k * stride] = log_form ? x[k * stride] - mx - log (sum) : exp (x[k * stride] - mx) / sum;
}

void
graft_vm_softmax_rows (const float *x, float *y, gint64 rows, gint64 n, gboolean log_form)
{
  for (gint64 r = 0; r < rows; r++)
    if (!softmax_row (x + r * n, y + r * n, n, log_form, NULL))
      softmax_column_double (x + r * n, y + r * n, n, 1, log_form);
}

void
graft_vm_softmax_rows_unscaled (const float *x, float *y, gint64 rows, gint64 n, float *inv_sums)
{
  for (gint64 r = 0; r < rows; r++)
    if (!softmax_row (x + r * n, y + r * n, n, FALSE, &inv_sums[r]))
      {
        softmax_column_double (x + r * n, y + r * n, n, 1, FALSE);
        inv_sums[r] = 1;
      }
}

static void
softmax_columns (const float *x, float *y, gint64 n, gint64 stride, gint64 width, gboolean log_form)
{
  DISPATCH (softmax_columns, x, y, n, stride, width, log_form)
}

void
graft_vm_softmax_inner (const float *x, float *y, gint64 outer, gint64 n, gint64 inner, gboolean log_form)
{
  g_return_if_fail (x != y || outer * n * inner == 0);
  for (gint64 o = 0; o < outer; o++)
    softmax_columns (x + o * n * inner, y + o * n * inner, n, inner, inner, log_form);
}

void
graft_vm_means (const float *x, float *y, gint64 rows, gint64 n)
{
  DISPATCH (means, x, y, rows, n)
}

void
graft_vm_normalize_row (const float *x, float *y, gint64 n, const float *scale, const float *bias, float eps,
                        gboolean rms, float *mean, float *inv_std)
{
  DISPATCH (normalize_row, x, y, n, scale, bias, eps, rms, mean, inv_std)
}

void
graft_vm_moments (const float *x, gint64 n, float eps, float *mean, float *inv_std)
{
  DISPATCH (moments, x, n, eps, mean, inv_std)
}

void
graft_vm_hard_sigmoid (const float *x, float *y, gint64 n, float alpha, float beta)
{
  DISPATCH (hard_sigmoid_row, x, y, n, alpha, beta)
}

void
graft_vm_affine (const float *x, float *y, gint64 n, float center, float a, float b, gboolean silu)
{
  DISPATCH (affine_row, x, y, n, center, a, b, silu)
}
