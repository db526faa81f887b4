/* Depthwise 2-D convolution with AVX-512 or AVX2 (see conv-depthwise.h). */
#include "runtime/kernels/conv-depthwise.h"
#include "runtime/kernels/simd-target.h"
#include "runtime/kernels/avx2-lanes.h"

#include <string.h>

#define LANES 16

/* A depthwise window prepared once: the kernel for the SIMD level and the
 * window's shape, and the lane masks it reads (per output vector, not
 * per plane), so that many calls on the same shape share them. */
struct _GraftDepthwisePlan {
  GraftWindow w;
  gboolean avx512;
  GraftParallelFunc plane;        /* plane index of a DepthwiseJob (AVX-512) or DepthwiseAvx2Job */
  gint64 safe_lo, safe_hi;        /* see DepthwiseJob */
  gpointer masks;                 /* AVX-512: edge or flat masks (__mmask16); AVX2: flat masks (gint32) or NULL */
  float *zeros;                   /* AVX2, 3×3 of unit dilation: a row of zeros (see DepthwiseAvx2Job) */
  /* AVX2, flat maps of 1, 2 or 4 pixels that keep their size: the planes
   * packed several to a vector (see depthwise_packed_planes_avx2), or NULL */
  GraftParallelFunc packed_planes;
  gint64 planes_per_vector;
  gint32 *packed_masks;           /* [tap][lane] */
  /* small maps and strided narrow rows: channel blocks (see
   * conv-depthwise-blocked-body.h), when the plan was made for weights */
  GraftParallelFunc blocked;      /* ranges of a BlockedJob, or NULL */
  gint64 C;                       /* channels of the weights the plan was made for (0: none) */
  const float *weight;            /* those weights (borrowed: they outlive the plan) */
  gint64 map_pixels;              /* Hp·Wp of the zero-padded map */
  gint64 *in_pos;                 /* input pixel → its position in the map, [H·W] */
  gint64 *out_off;                /* output pixel → the map position of its tap 0, [OH·OW] */
  gint64 *tap_off;                /* tap → floats from tap 0's vector, [KH·KW] */
  float *block_weight;            /* [C / lanes blocks][KH·KW][lanes], zero past C */
};

/* The blocks of a blocked plan's run, in ranges. */
typedef struct {
  const GraftDepthwisePlan *plan;
  const float *x, *bias;
  float *y;
  gint64 C;
  float lo, hi;
  gint64 x_plane, y_plane;
  gint64 blocks, ranges;
  gint64 first_block;             /* the plan's block of weights that x's first channel has */
} BlockedJob;

#ifdef GRAFT_HAVE_X86_SIMD

/* The planes of a depthwise convolution in ranges, a few per thread: a
 * plane of a small map (7×7) is a fraction of a microsecond of work, less
 * than the threads' handing out of one index each would cost. */
typedef struct {
  GraftParallelFunc plane;
  gpointer data;
  gint64 planes, ranges;
} PlaneRanges;

static void
plane_range (gint64 r, gpointer data)
{
  const PlaneRanges *job = data;
  for (gint64 p = r * job->planes / job->ranges; p < (r + 1) * job->planes / job->ranges; p++)
    job->plane (p, job->data);
}

static void
for_each_plane (GraftKernelContext *ctx, gint64 planes, GraftParallelFunc plane, gpointer data)
{
  PlaneRanges job = { plane, data, planes, MIN (planes, 8 * (gint64) MAX (graft_kernel_get_n_threads (ctx), 1)) };
  graft_kernel_parallel_for (ctx, job.ranges, plane_range, &job);
}

gboolean
graft_conv_depthwise_supports (const GraftWindow *w)
{
  return graft_kernel_table ()->avx2 && w->n == 2 && (w->stride[1] == 1 || w->stride[1] == 2) &&
         w->kernel[0] * w->kernel[1] <= GRAFT_CONV_DEPTHWISE_MAX_TAPS;
}

GRAFT_TARGET_AVX512_BEGIN
#include "runtime/kernels/avx512-row.h"

typedef struct {
  const float *x, *weight, *bias;
  float *y;
  const GraftWindow *w;
  gint64 C;
  float lo, hi;
  gint64 x_plane, y_plane;        /* floats from one plane of x (of y) to the next */
  /* output vectors starting in [safe_lo, safe_hi - LANES] read only
   * inside the row for every tap: no masks */
  gint64 safe_lo, safe_hi;
  /* per output vector v and kernel column kj: the lanes of its one or two
   * loads that fall inside the row, [(v·KW + kj)·2 + half] */
  const __mmask16 *edge_masks;
  /* flat planes (see depthwise_flat_plane): per output vector and tap */
  const __mmask16 *flat_masks;
} DepthwiseJob;

/* The taps of one output row that fall on input rows: tap i reads the
 * plane x from x + off[i] (its row and column offset within the window)
 * + the row's offset. Whole kernel rows, so tap i is in column i % KW. */
typedef struct {
  int n;
  const float *x;
  gint64 row;
  const gint64 *off;
  const __m512 *weight;
} Taps;

#define TAP(t, i, q) ((t)->x + ((t)->row + (t)->off[i] + (q)))

static inline __m512
load_inside (const float *p, int sw)
{
  __m512 v = _mm512_loadu_ps (p);
  return sw == 1 ? v : graft_even_lanes16 (v, _mm512_loadu_ps (p + LANES));
}

static inline __m512
clamp (__m512 v, __m512 lo, __m512 hi)
{
  /* max/min return their second operand for NaN: NaN stays NaN */
  return _mm512_min_ps (hi, _mm512_max_ps (lo, v));
}

/* Outputs ow0 .. ow0+31, every tap inside the row; two partial sums per
 * vector so that four FMA chains are in flight. */
static inline __attribute__ ((always_inline)) void
row_inside_2 (float *y, const Taps *t, gint64 ow0, int sw, __m512 bias, __m512 lo, __m512 hi)
{
  __m512 a0 = bias, b0 = _mm512_setzero_ps (), a1 = bias, b1 = _mm512_setzero_ps ();
  gint64 q = ow0 * sw;
  int i = 0;
  for (; i + 2 <= t->n; i += 2)
    {
      a0 = _mm512_fmadd_ps (t->weight[i], load_inside (TAP (t, i, q), sw), a0);
      a1 = _mm512_fmadd_ps (t->weight[i], load_inside (TAP (t, i, q + LANES * sw), sw), a1);
      b0 = _mm512_fmadd_ps (t->weight[i + 1], load_inside (TAP (t, i + 1, q), sw), b0);
      b1 = _mm512_fmadd_ps (t->weight[i + 1], load_inside (TAP (t, i + 1, q + LANES * sw), sw), b1);
    }
  if (i < t->n)
    {
      a0 = _mm512_fmadd_ps (t->weight[i], load_inside (TAP (t, i, q), sw), a0);
      a1 = _mm512_fmadd_ps (t->weight[i], load_inside (TAP (t, i, q + LANES * sw), sw), a1);
    }
  _mm512_storeu_ps (y + ow0, clamp (_mm512_add_ps (a0, b0), lo, hi));
  _mm512_storeu_ps (y + ow0 + LANES, clamp (_mm512_add_ps (a1, b1), lo, hi));
}

static inline __attribute__ ((always_inline)) void
row_inside_1 (float *y, const Taps *t, gint64 ow0, int sw, __m512 bias, __m512 lo, __m512 hi)
{
  __m512 a = bias, b = _mm512_setzero_ps ();
  gint64 q = ow0 * sw;
  int i = 0;
  for (; i + 2 <= t->n; i += 2)
    {
      a = _mm512_fmadd_ps (t->weight[i], load_inside (TAP (t, i, q), sw), a);
      b = _mm512_fmadd_ps (t->weight[i + 1], load_inside (TAP (t, i + 1, q), sw), b);
    }
  if (i < t->n)
    a = _mm512_fmadd_ps (t->weight[i], load_inside (TAP (t, i, q), sw), a);
  _mm512_storeu_ps (y + ow0, clamp (_mm512_add_ps (a, b), lo, hi));
}

/* Outputs ow0 .. min (ow0+16, OW) near the ends of the row. */
static inline __attribute__ ((always_inline)) void
row_edge (float *y, const Taps *t, const __mmask16 *masks, gint64 KW, gint64 ow0, gint64 OW, int sw, __m512 bias,
          __m512 lo, __m512 hi)
{
  __m512 a = bias, b = _mm512_setzero_ps ();
  gint64 q = ow0 * sw;
  for (int i = 0; i < t->n; i++)
    {
      const __mmask16 *m = masks + i % KW * 2;
      __m512 v = graft_load_strided16 (TAP (t, i, q), m[0], m[1], sw, _mm512_setzero_ps ());
      if (i % 2)
        b = _mm512_fmadd_ps (t->weight[i], v, b);
      else
        a = _mm512_fmadd_ps (t->weight[i], v, a);
    }
  _mm512_mask_storeu_ps (y + ow0, graft_lane_mask16 (0, OW - ow0), clamp (_mm512_add_ps (a, b), lo, hi));
}

static inline __attribute__ ((always_inline)) void
depthwise_plane (const DepthwiseJob *job, gint64 index, const int sw)
{
  const GraftWindow *w = job->w;
  gint64 c = index % job->C;
  gint64 H = w->in[0], W = w->in[1], OH = w->out[0], OW = w->out[1];
  gint64 KH = w->kernel[0], KW = w->kernel[1];
  gint64 sh = w->stride[0], dh = w->dilation[0], dw = w->dilation[1];
  gint64 pt = w->pad_begin[0], pl = w->pad_begin[1];
  const float *x = job->x + index * job->x_plane;
  const float *k = job->weight + c * KH * KW;
  float *y = job->y + index * job->y_plane;
  __m512 bias = _mm512_set1_ps (job->bias ? job->bias[c] : 0);
  __m512 lo = _mm512_set1_ps (job->lo), hi = _mm512_set1_ps (job->hi);
  gint64 safe_lo = job->safe_lo, safe_hi = job->safe_hi;
  __m512 weight[GRAFT_CONV_DEPTHWISE_MAX_TAPS];
  gint64 off[GRAFT_CONV_DEPTHWISE_MAX_TAPS];
  for (gint64 ki = 0; ki < KH; ki++)
    for (gint64 kj = 0; kj < KW; kj++)
      {
        weight[ki * KW + kj] = _mm512_set1_ps (k[ki * KW + kj]);
        off[ki * KW + kj] = (ki * dh - pt) * W + kj * dw - pl;
      }

  for (gint64 oh = 0; oh < OH; oh++, y += OW)
    {
      /* the kernel rows on input rows: 0 <= oh·sh + ki·dh - pt < H */
      gint64 ki_lo = 0, ki_hi = KH;
      while (ki_lo < KH && oh * sh + ki_lo * dh - pt < 0)
        ki_lo++;
      while (ki_hi > ki_lo && oh * sh + (ki_hi - 1) * dh - pt >= H)
        ki_hi--;
      Taps taps = { (ki_hi - ki_lo) * KW, x, oh * sh * W, off + ki_lo * KW, weight + ki_lo * KW };
      gint64 ow = 0;
      for (; ow < OW && ow < safe_lo; ow += LANES)
        row_edge (y, &taps, job->edge_masks + ow / LANES * KW * 2, KW, ow, OW, sw, bias, lo, hi);
      for (; ow + 2 * LANES <= safe_hi; ow += 2 * LANES)
        row_inside_2 (y, &taps, ow, sw, bias, lo, hi);
      for (; ow + LANES <= safe_hi; ow += LANES)
        row_inside_1 (y, &taps, ow, sw, bias, lo, hi);
      for (; ow < OW; ow += LANES)
        row_edge (y, &taps, job->edge_masks + ow / LANES * KW * 2, KW, ow, OW, sw, bias, lo, hi);
    }
}

/* Unit strides and OW == W: output j = oh·W + ow of the flattened plane
 * reads x[j + off[t]] for every tap t, so 16 consecutive outputs are one
 * vector whatever rows they span, and a lane mask per (vector, tap)
 * drops the taps that fall outside the row or the plane. Small maps
 * (7×7, 14×14) fill their vectors this way instead of leaving most lanes
 * of one short row idle, and larger ones need no separate edge vectors
 * at both ends of each row (a 56-wide row had two of its four). */
static GRAFT_HOT_LOOP void
depthwise_flat_plane (gint64 index, gpointer data)
{
  const DepthwiseJob *job = data;
  const GraftWindow *w = job->w;
  gint64 c = index % job->C;
  gint64 W = w->in[1], n_out = w->out[0] * w->out[1];
  gint64 KH = w->kernel[0], KW = w->kernel[1], taps = KH * KW;
  const float *x = job->x + index * job->x_plane;
  const float *k = job->weight + c * taps;
  float *y = job->y + index * job->y_plane;
  __m512 bias = _mm512_set1_ps (job->bias ? job->bias[c] : 0);
  __m512 lo = _mm512_set1_ps (job->lo), hi = _mm512_set1_ps (job->hi);
  __m512 weight[GRAFT_CONV_DEPTHWISE_MAX_TAPS];
  gint64 off[GRAFT_CONV_DEPTHWISE_MAX_TAPS];
  for (gint64 ki = 0; ki < KH; ki++)
    for (gint64 kj = 0; kj < KW; kj++)
      {
        weight[ki * KW + kj] = _mm512_set1_ps (k[ki * KW + kj]);
        off[ki * KW + kj] = (ki * w->dilation[0] - w->pad_begin[0]) * W + kj * w->dilation[1] - w->pad_begin[1];
      }
  const __mmask16 *masks = job->flat_masks;
  for (gint64 j0 = 0; j0 < n_out; j0 += LANES, masks += taps)
    {
      __m512 a = bias, b = _mm512_setzero_ps ();
      gint64 t = 0;
      for (; t + 2 <= taps; t += 2)
        {
          a = _mm512_fmadd_ps (weight[t], _mm512_maskz_loadu_ps (masks[t], x + (j0 + off[t])), a);
          b = _mm512_fmadd_ps (weight[t + 1], _mm512_maskz_loadu_ps (masks[t + 1], x + (j0 + off[t + 1])), b);
        }
      if (t < taps)
        a = _mm512_fmadd_ps (weight[t], _mm512_maskz_loadu_ps (masks[t], x + (j0 + off[t])), a);
      _mm512_mask_storeu_ps (y + j0, graft_lane_mask16 (0, n_out - j0), clamp (_mm512_add_ps (a, b), lo, hi));
    }
}

/* The lanes of each flat vector (see depthwise_flat_plane) whose tap
 * reads inside its row and the plane, [vector · taps + tap]. */
static __mmask16 *
flat_masks_new (const GraftWindow *w)
{
  gint64 H = w->in[0], W = w->in[1], KH = w->kernel[0], KW = w->kernel[1], taps = KH * KW;
  gint64 n_out = w->out[0] * w->out[1], vectors = (n_out + LANES - 1) / LANES;
  __mmask16 *masks = g_new0 (__mmask16, MAX (vectors * taps, 1));
  /* the output's row and column counted along, not divided out per tap */
  gint64 row = 0, col = 0;
  for (gint64 j = 0; j < vectors * LANES; j++)
    {
      __mmask16 *m = masks + j / LANES * taps, bit = (__mmask16) (1u << j % LANES);
      for (gint64 ki = 0; j < n_out && ki < KH; ki++)
        {
          gint64 r = row + ki * w->dilation[0] - w->pad_begin[0];
          for (gint64 kj = 0; r >= 0 && r < H && kj < KW; kj++)
            {
              gint64 c = col + kj * w->dilation[1] - w->pad_begin[1];
              if (c >= 0 && c < W)
                m[ki * KW + kj] |= bit;
            }
        }
      if (++col == W)
        col = 0, row++;
    }
  return masks;
}

static GRAFT_HOT_LOOP void
depthwise_plane_stride1 (gint64 index, gpointer data)
{
  depthwise_plane (data, index, 1);
}

static GRAFT_HOT_LOOP void
depthwise_plane_stride2 (gint64 index, gpointer data)
{
  depthwise_plane (data, index, 2);
}

/* The AVX-512 kernel and its masks for plan->w (see GraftDepthwisePlan). */
static void
depthwise_plan_avx512 (GraftDepthwisePlan *plan)
{
  const GraftWindow *w = &plan->w;
  gint64 sw = w->stride[1], pl = w->pad_begin[1];
  if (w->stride[0] == 1 && sw == 1 && w->out[1] == w->in[1] && w->out[0] * w->out[1] <= 1 << 16)
    {
      plan->masks = flat_masks_new (w);
      plan->plane = depthwise_flat_plane;
      return;
    }
  gint64 shift_max = (w->kernel[1] - 1) * w->dilation[1] - pl;
  /* a vector from ow0 reads columns ow0·sw - pl … (ow0 + 16)·sw + shift_max - 1 */
  plan->safe_lo = (pl + sw - 1) / sw;
  plan->safe_hi = w->in[1] - shift_max < 0 ? 0 : MIN ((w->in[1] - shift_max) / sw, w->out[1]);
  if (plan->safe_hi < plan->safe_lo + LANES)
    plan->safe_lo = plan->safe_hi = w->out[1];   /* no vector inside: every one goes through the masked path */
  gint64 KW = w->kernel[1], vectors = (w->out[1] + LANES - 1) / LANES;
  __mmask16 *masks = g_new (__mmask16, MAX (vectors * KW * 2, 1));
  for (gint64 v = 0; v < vectors; v++)
    for (gint64 kj = 0; kj < KW; kj++)
      {
        gint64 q = v * LANES * sw + kj * w->dilation[1] - pl;   /* first column the vector's load reads */
        masks[(v * KW + kj) * 2] = graft_lane_mask16 (-q, w->in[1] - q);
        masks[(v * KW + kj) * 2 + 1] = graft_lane_mask16 (-q - LANES, w->in[1] - q - LANES);
      }
  plan->masks = masks;
  plan->plane = sw == 1 ? depthwise_plane_stride1 : depthwise_plane_stride2;
}

typedef float GraftV16f __attribute__ ((vector_size (64)));

/* The 16 × 16 floats of v transposed in place: pairs, then quads within
 * 128-bit lanes, then the 128-bit lanes across vectors. */
static inline __attribute__ ((always_inline)) void
transpose16 (GraftV16f *v)
{
  __m512 r[16], t[16];
  for (int i = 0; i < 16; i++)
    r[i] = (__m512) v[i];
  for (int i = 0; i < 16; i += 2)
    {
      t[i] = _mm512_unpacklo_ps (r[i], r[i + 1]);
      t[i + 1] = _mm512_unpackhi_ps (r[i], r[i + 1]);
    }
  for (int i = 0; i < 16; i += 4)
    {
      r[i] = _mm512_shuffle_ps (t[i], t[i + 2], _MM_SHUFFLE (1, 0, 1, 0));
      r[i + 1] = _mm512_shuffle_ps (t[i], t[i + 2], _MM_SHUFFLE (3, 2, 3, 2));
      r[i + 2] = _mm512_shuffle_ps (t[i + 1], t[i + 3], _MM_SHUFFLE (1, 0, 1, 0));
      r[i + 3] = _mm512_shuffle_ps (t[i + 1], t[i + 3], _MM_SHUFFLE (3, 2, 3, 2));
    }
  for (int h = 0; h < 16; h += 8)
    for (int i = 0; i < 4; i++)
      {
        t[h + i] = _mm512_shuffle_f32x4 (r[h + i], r[h + i + 4], 0x88);
        t[h + i + 4] = _mm512_shuffle_f32x4 (r[h + i], r[h + i + 4], 0xdd);
      }
  for (int i = 0; i < 8; i++)
    {
      v[i] = (GraftV16f) _mm512_shuffle_f32x4 (t[i], t[i + 8], 0x88);
      v[i + 8] = (GraftV16f) _mm512_shuffle_f32x4 (t[i], t[i + 8], 0xdd);
    }
}

#define DB_V GraftV16f
#define DB_LANES LANES
#define DB_TARGET
#define DB_MASK_T __mmask16
#define DB_FIRST_LANES(n) graft_lane_mask16 (0, (n))
#define DB_MASKED_LOAD(p, m) ((GraftV16f) _mm512_maskz_loadu_ps ((m), (p)))
#define DB_MASKED_STORE(p, m, v) _mm512_mask_storeu_ps ((p), (m), (__m512) (v))
#define DB_CLAMP(v, lo, hi) ((GraftV16f) clamp ((__m512) (v), (__m512) (lo), (__m512) (hi)))
#define DB_TRANSPOSE(v) transpose16 (v)
#define DB_SUFFIX avx512
#include "runtime/kernels/conv-depthwise-blocked-body.h"

GRAFT_TARGET_AVX512_END

/* ---- AVX2 + FMA: the same kernels with 8 lanes ----
 *
 * AVX2's masked loads take a vector of lane masks (sign bits) and, like
 * AVX-512's, never read the lanes left out. Edge masks are worked out in
 * the loop from the lane's column (a compare or two per tap), flat-plane
 * masks once per call. */

#define YMM_LANES 8

typedef struct {
  const float *x, *weight, *bias;
  float *y;
  const GraftWindow *w;
  gint64 C;
  float lo, hi;
  gint64 x_plane, y_plane;        /* as in DepthwiseJob */
  gint64 safe_lo, safe_hi;        /* as in DepthwiseJob */
  const gint32 *flat_masks;       /* flat planes: [vector][tap][lane] */
  const float *zeros;             /* 3×3 windows of unit dilation: an input row of zeros, else NULL */
  gint64 planes_per_vector;       /* packed planes: P of n_out = 8 / P pixels to a vector */
  const gint32 *packed_masks;     /* packed planes: [tap][lane] */
} DepthwiseAvx2Job;

static GRAFT_TARGET_AVX2_FMA inline __m256
clamp8 (__m256 v, __m256 lo, __m256 hi)
{
  /* max/min return their second operand for NaN: NaN stays NaN */
  return _mm256_min_ps (hi, _mm256_max_ps (lo, v));
}

/* The lanes i of a load at column q whose q + i lies in [0, W). */
static GRAFT_TARGET_AVX2_FMA inline __m256i
inside_mask8 (gint64 q, gint64 W)
{
  __m256i col = _mm256_add_epi32 (_mm256_set1_epi32 ((gint32) CLAMP (q, -64, W + 64)),
                                  _mm256_setr_epi32 (0, 1, 2, 3, 4, 5, 6, 7));
  __m256i below = _mm256_cmpgt_epi32 (_mm256_setzero_si256 (), col);
  __m256i inside = _mm256_cmpgt_epi32 (_mm256_set1_epi32 ((gint32) W), col);
  return _mm256_andnot_si256 (below, inside);
}

static inline __attribute__ ((always_inline)) GRAFT_TARGET_AVX2_FMA __m256
load_inside8 (const float *p, int sw)
{
  __m256 v = _mm256_loadu_ps (p);
  return sw == 1 ? v : graft_even_lanes8 (v, _mm256_loadu_ps (p + YMM_LANES));
}

/* lane i = row[q + i·sw], zero outside [0, W); never reads outside */
static inline __attribute__ ((always_inline)) GRAFT_TARGET_AVX2_FMA __m256
load_edge8 (const float *row, gint64 q, gint64 W, int sw)
{
  __m256 v = _mm256_maskload_ps (row + q, inside_mask8 (q, W));
  if (sw == 1)
    return v;
  return graft_even_lanes8 (v, _mm256_maskload_ps (row + q + YMM_LANES, inside_mask8 (q + YMM_LANES, W)));
}

/* Output vector ow of one output row, any window: the taps of kernel rows
 * [ki_lo, ki_hi), masked loads near the ends of the row. */
static inline __attribute__ ((always_inline)) GRAFT_TARGET_AVX2_FMA __m256
vector_any_avx2 (const DepthwiseAvx2Job *job, const float *x, const __m256 *weight, gint64 oh, gint64 ki_lo,
                 gint64 ki_hi, gint64 ow, __m256 bias, const int sw)
{
  const GraftWindow *w = job->w;
  gint64 W = w->in[1], KW = w->kernel[1], sh = w->stride[0], dh = w->dilation[0], dw = w->dilation[1];
  gint64 pt = w->pad_begin[0], pl = w->pad_begin[1];
  gboolean inside = ow >= job->safe_lo && ow + YMM_LANES <= job->safe_hi;
  __m256 a = bias, b = _mm256_setzero_ps ();
  for (gint64 ki = ki_lo; ki < ki_hi; ki++)
    {
      const float *row = x + (oh * sh + ki * dh - pt) * W;
      for (gint64 kj = 0; kj < KW; kj++)
        {
          gint64 q = ow * sw + kj * dw - pl;
          __m256 v = inside ? load_inside8 (row + q, sw) : load_edge8 (row, q, W, sw);
          if (kj % 2)
            b = _mm256_fmadd_ps (weight[ki * KW + kj], v, b);
          else
            a = _mm256_fmadd_ps (weight[ki * KW + kj], v, a);
        }
    }
  return _mm256_add_ps (a, b);
}

/* One kernel row of a 3×3 window for the output vector whose first tap
 * reads p. Stride 2 takes taps 0 and 1 from the even and odd lanes of
 * the same two loads; its in-lane shuffles leave the outputs in the order
 * 0 1 4 5 2 3 6 7, the same for every tap, so the sum is put in order
 * once (unshuffle8). masks NULL: every load inside the row; else (a
 * vector near an end of the row, or past it) only the lanes whose
 * columns lie in [0, W) are read, the others are zero — masks are the
 * inside_mask8 of the loads at p, p + 1, p + 2 (stride 1) or p, p + 8,
 * p + 2, p + 10 (stride 2). */
static inline __attribute__ ((always_inline)) GRAFT_TARGET_AVX2_FMA __m256
tap_load8 (const float *p, const __m256i *masks, int which)
{
  return masks ? _mm256_maskload_ps (p, masks[which]) : _mm256_loadu_ps (p);
}

static inline __attribute__ ((always_inline)) GRAFT_TARGET_AVX2_FMA void
row3_avx2 (const float *p, const __m256i *masks, __m256 w0, __m256 w1, __m256 w2, __m256 *a, __m256 *b,
           const int sw)
{
  if (sw == 1)
    {
      *a = _mm256_fmadd_ps (w0, tap_load8 (p, masks, 0), *a);
      *b = _mm256_fmadd_ps (w1, tap_load8 (p + 1, masks, 1), *b);
      *a = _mm256_fmadd_ps (w2, tap_load8 (p + 2, masks, 2), *a);
      return;
    }
  __m256 lo = tap_load8 (p, masks, 0), hi = tap_load8 (p + YMM_LANES, masks, 1);
  __m256 lo2 = tap_load8 (p + 2, masks, 2), hi2 = tap_load8 (p + 2 + YMM_LANES, masks, 3);
  *a = _mm256_fmadd_ps (w0, _mm256_shuffle_ps (lo, hi, _MM_SHUFFLE (2, 0, 2, 0)), *a);
  *b = _mm256_fmadd_ps (w1, _mm256_shuffle_ps (lo, hi, _MM_SHUFFLE (3, 1, 3, 1)), *b);
  *a = _mm256_fmadd_ps (w2, _mm256_shuffle_ps (lo2, hi2, _MM_SHUFFLE (2, 0, 2, 0)), *a);
}

static inline __attribute__ ((always_inline)) GRAFT_TARGET_AVX2_FMA __m256
unshuffle8 (__m256 v, const int sw)
{
  if (sw == 1)
    return v;
  return _mm256_castpd_ps (_mm256_permute4x64_pd (_mm256_castps_pd (v), _MM_SHUFFLE (3, 1, 2, 0)));
}

/* A 3×3 output vector near an end of the row (or past it), with masked
 * loads (row3_avx2's masks). Copying the columns into a zero-padded buffer
 * instead cost two of the seven vectors of a 56-wide row as much as the
 * other five (MobileNetV2's depthwise layers, AVX2). */
static inline __attribute__ ((always_inline)) GRAFT_TARGET_AVX2_FMA void
edge3_avx2 (float *y, const float *const *rows, gint64 W, gint64 ow, gint64 OW, gint64 pl, __m256 w00, __m256 w01,
            __m256 w02, __m256 w10, __m256 w11, __m256 w12, __m256 w20, __m256 w21, __m256 w22, __m256 bias,
            __m256 lo, __m256 hi, const int sw)
{
  gint64 q = ow * sw - pl;
  __m256i masks[4];
  if (sw == 1)
    for (int j = 0; j < 3; j++)
      masks[j] = inside_mask8 (q + j, W);
  else
    {
      masks[0] = inside_mask8 (q, W);
      masks[1] = inside_mask8 (q + YMM_LANES, W);
      masks[2] = inside_mask8 (q + 2, W);
      masks[3] = inside_mask8 (q + 2 + YMM_LANES, W);
    }
  __m256 a = bias, b = _mm256_setzero_ps ();
  row3_avx2 (rows[0] + q, masks, w00, w01, w02, &a, &b, sw);
  row3_avx2 (rows[1] + q, masks, w10, w11, w12, &a, &b, sw);
  row3_avx2 (rows[2] + q, masks, w20, w21, w22, &a, &b, sw);
  __m256 out = clamp8 (unshuffle8 (_mm256_add_ps (a, b), sw), lo, hi);
  if (ow + YMM_LANES <= OW)
    _mm256_storeu_ps (y + ow, out);
  else
    _mm256_maskstore_ps (y + ow, inside_mask8 (ow, OW), out);
}

static inline __attribute__ ((always_inline)) GRAFT_TARGET_AVX2_FMA void
depthwise_plane_avx2 (const DepthwiseAvx2Job *job, gint64 index, const int sw)
{
  const GraftWindow *w = job->w;
  gint64 c = index % job->C;
  gint64 H = w->in[0], W = w->in[1], OH = w->out[0], OW = w->out[1];
  gint64 KH = w->kernel[0], KW = w->kernel[1];
  gint64 sh = w->stride[0], dh = w->dilation[0];
  gint64 pt = w->pad_begin[0], pl = w->pad_begin[1];
  const float *x = job->x + index * job->x_plane;
  const float *k = job->weight + c * KH * KW;
  float *y = job->y + index * job->y_plane;
  __m256 bias = _mm256_set1_ps (job->bias ? job->bias[c] : 0);
  __m256 lo = _mm256_set1_ps (job->lo), hi = _mm256_set1_ps (job->hi);
  __m256 weight[GRAFT_CONV_DEPTHWISE_MAX_TAPS];
  for (gint64 t = 0; t < KH * KW; t++)
    weight[t] = _mm256_set1_ps (k[t]);
  /* 3×3 with unit dilation (MobileNet's): the vectors inside the row take
   * the unrolled taps, kernel rows off the input reading job->zeros */
  gboolean three = job->zeros != NULL;
  __m256 w00 = weight[0], w01 = weight[1], w02 = weight[2], w10 = weight[3], w11 = weight[4], w12 = weight[5];
  __m256 w20 = weight[6], w21 = weight[7], w22 = weight[8];

  for (gint64 oh = 0; oh < OH; oh++, y += OW)
    {
      gint64 ki_lo = 0, ki_hi = KH;
      while (ki_lo < KH && oh * sh + ki_lo * dh - pt < 0)
        ki_lo++;
      while (ki_hi > ki_lo && oh * sh + (ki_hi - 1) * dh - pt >= H)
        ki_hi--;
      gint64 ow = 0;
      const float *rows[3];
      if (three)
        {
          for (int ki = 0; ki < 3; ki++)
            {
              gint64 ih = oh * sh + ki - pt;
              rows[ki] = ih >= 0 && ih < H ? x + ih * W : job->zeros;
            }
          for (; ow < job->safe_lo && ow < OW; ow += YMM_LANES)
            edge3_avx2 (y, rows, W, ow, OW, pl, w00, w01, w02, w10, w11, w12, w20, w21, w22, bias, lo, hi, sw);
          for (; ow + 2 * YMM_LANES <= job->safe_hi; ow += 2 * YMM_LANES)
            {
              __m256 a0 = bias, b0 = _mm256_setzero_ps (), a1 = bias, b1 = _mm256_setzero_ps ();
              gint64 q0 = ow * sw - pl, q1 = (ow + YMM_LANES) * sw - pl;
              row3_avx2 (rows[0] + q0, NULL, w00, w01, w02, &a0, &b0, sw);
              row3_avx2 (rows[0] + q1, NULL, w00, w01, w02, &a1, &b1, sw);
              row3_avx2 (rows[1] + q0, NULL, w10, w11, w12, &a0, &b0, sw);
              row3_avx2 (rows[1] + q1, NULL, w10, w11, w12, &a1, &b1, sw);
              row3_avx2 (rows[2] + q0, NULL, w20, w21, w22, &a0, &b0, sw);
              row3_avx2 (rows[2] + q1, NULL, w20, w21, w22, &a1, &b1, sw);
              _mm256_storeu_ps (y + ow, clamp8 (unshuffle8 (_mm256_add_ps (a0, b0), sw), lo, hi));
              _mm256_storeu_ps (y + ow + YMM_LANES, clamp8 (unshuffle8 (_mm256_add_ps (a1, b1), sw), lo, hi));
            }
          for (; ow + YMM_LANES <= job->safe_hi; ow += YMM_LANES)
            {
              __m256 a0 = bias, b0 = _mm256_setzero_ps ();
              gint64 q0 = ow * sw - pl;
              row3_avx2 (rows[0] + q0, NULL, w00, w01, w02, &a0, &b0, sw);
              row3_avx2 (rows[1] + q0, NULL, w10, w11, w12, &a0, &b0, sw);
              row3_avx2 (rows[2] + q0, NULL, w20, w21, w22, &a0, &b0, sw);
              _mm256_storeu_ps (y + ow, clamp8 (unshuffle8 (_mm256_add_ps (a0, b0), sw), lo, hi));
            }
        }
      for (; three && ow < OW; ow += YMM_LANES)
        edge3_avx2 (y, rows, W, ow, OW, pl, w00, w01, w02, w10, w11, w12, w20, w21, w22, bias, lo, hi, sw);
      for (; ow < OW; ow += YMM_LANES)
        {
          __m256 out = clamp8 (vector_any_avx2 (job, x, weight, oh, ki_lo, ki_hi, ow, bias, sw), lo, hi);
          if (ow + YMM_LANES <= OW)
            _mm256_storeu_ps (y + ow, out);
          else
            _mm256_maskstore_ps (y + ow, inside_mask8 (ow, OW), out);
        }
    }
}

/* A plane kernel of the AVX2 table: one of the bodies above with its
 * variant's constants. */
#define PLANE_KERNEL_AVX2(name, call)                                                                                 \
  static GRAFT_TARGET_AVX2_FMA GRAFT_HOT_LOOP void name (gint64 index, gpointer data)                                \
  {                                                                                                                    \
    call;                                                                                                              \
  }

PLANE_KERNEL_AVX2 (depthwise_plane_avx2_stride1, depthwise_plane_avx2 (data, index, 1))

PLANE_KERNEL_AVX2 (depthwise_plane_avx2_stride2, depthwise_plane_avx2 (data, index, 2))

/* depthwise_flat_plane with 8 lanes; fixed_taps, when not 0, is KH·KW
 * known at compile time (the tap loop unrolls, weights in registers) */
static inline __attribute__ ((always_inline)) GRAFT_TARGET_AVX2_FMA void
depthwise_flat_plane_avx2_body (gint64 index, const DepthwiseAvx2Job *job, const int fixed_taps)
{
  const GraftWindow *w = job->w;
  gint64 c = index % job->C;
  gint64 W = w->in[1], n_out = w->out[0] * w->out[1];
  gint64 KH = w->kernel[0], KW = w->kernel[1], taps = fixed_taps ? fixed_taps : KH * KW;
  const float *x = job->x + index * job->x_plane;
  const float *k = job->weight + c * taps;
  float *y = job->y + index * job->y_plane;
  __m256 bias = _mm256_set1_ps (job->bias ? job->bias[c] : 0);
  __m256 lo = _mm256_set1_ps (job->lo), hi = _mm256_set1_ps (job->hi);
  __m256 weight[GRAFT_CONV_DEPTHWISE_MAX_TAPS];
  gint64 off[GRAFT_CONV_DEPTHWISE_MAX_TAPS];
  for (gint64 ki = 0; ki < KH; ki++)
    for (gint64 kj = 0; kj < KW; kj++)
      {
        weight[ki * KW + kj] = _mm256_set1_ps (k[ki * KW + kj]);
        off[ki * KW + kj] = (ki * w->dilation[0] - w->pad_begin[0]) * W + kj * w->dilation[1] - w->pad_begin[1];
      }
  const gint32 *masks = job->flat_masks;
  for (gint64 j0 = 0; j0 < n_out; j0 += YMM_LANES, masks += taps * YMM_LANES)
    {
      __m256 a = bias, b = _mm256_setzero_ps ();
#pragma GCC unroll 16
      for (gint64 t = 0; t < taps; t++)
        {
          __m256 v = _mm256_maskload_ps (x + (j0 + off[t]),
                                         _mm256_loadu_si256 ((const __m256i *) (masks + t * YMM_LANES)));
          if (t % 2)
            b = _mm256_fmadd_ps (weight[t], v, b);
          else
            a = _mm256_fmadd_ps (weight[t], v, a);
        }
      __m256 out = clamp8 (_mm256_add_ps (a, b), lo, hi);
      if (j0 + YMM_LANES <= n_out)
        _mm256_storeu_ps (y + j0, out);
      else
        _mm256_maskstore_ps (y + j0, inside_mask8 (j0, n_out), out);
    }
}

PLANE_KERNEL_AVX2 (depthwise_flat_plane_avx2, depthwise_flat_plane_avx2_body (index, data, 0))

PLANE_KERNEL_AVX2 (depthwise_flat_plane_avx2_3x3, depthwise_flat_plane_avx2_body (index, data, 9))

/* Planes P·index … P·index + P - 1 of maps of n_out = 8 / P pixels that
 * keep their size (EfficientNet's 2×2 maps at 64×64 inputs): one vector
 * holds P planes side by side, each lane with its plane's weights and
 * bias, where one plane per call would fill half a vector or less with
 * the setup of a whole call around it (0.5 GFLOPS on 2×2 maps). Lane l
 * reads x at l + the tap's offset, masked off outside its own plane as
 * the flat masks of its pixel say; the store is a whole vector. */
static inline __attribute__ ((always_inline)) GRAFT_TARGET_AVX2_FMA void
depthwise_packed_planes_avx2_body (gint64 index, const DepthwiseAvx2Job *job, const int fixed_taps)
{
  const GraftWindow *w = job->w;
  gint64 P = job->planes_per_vector, n_out = YMM_LANES / P, p0 = index * P;
  gint64 W = w->in[1], KH = w->kernel[0], KW = w->kernel[1], taps = fixed_taps ? fixed_taps : KH * KW;
  const float *x = job->x + p0 * n_out;
  float *y = job->y + p0 * n_out;
  float lane_bias[YMM_LANES], lane_weight[GRAFT_CONV_DEPTHWISE_MAX_TAPS][YMM_LANES];
  for (gint64 q = 0; q < P; q++)
    {
      gint64 c = (p0 + q) % job->C;
      const float *k = job->weight + c * taps;
      for (gint64 l = q * n_out; l < (q + 1) * n_out; l++)
        {
          lane_bias[l] = job->bias ? job->bias[c] : 0;
          for (gint64 t = 0; t < taps; t++)
            lane_weight[t][l] = k[t];
        }
    }
  __m256 a = _mm256_loadu_ps (lane_bias), b = _mm256_setzero_ps ();
#pragma GCC unroll 16
  for (gint64 t = 0; t < taps; t++)
    {
      gint64 ki = t / KW, kj = t % KW;
      gint64 off = (ki * w->dilation[0] - w->pad_begin[0]) * W + kj * w->dilation[1] - w->pad_begin[1];
      __m256 v = _mm256_maskload_ps (x + off,
                                     _mm256_loadu_si256 ((const __m256i *) (job->packed_masks + t * YMM_LANES)));
      if (t % 2)
        b = _mm256_fmadd_ps (_mm256_loadu_ps (lane_weight[t]), v, b);
      else
        a = _mm256_fmadd_ps (_mm256_loadu_ps (lane_weight[t]), v, a);
    }
  _mm256_storeu_ps (y, clamp8 (_mm256_add_ps (a, b), _mm256_set1_ps (job->lo), _mm256_set1_ps (job->hi)));
}

PLANE_KERNEL_AVX2 (depthwise_packed_planes_avx2, depthwise_packed_planes_avx2_body (index, data, 0))

PLANE_KERNEL_AVX2 (depthwise_packed_planes_avx2_3x3, depthwise_packed_planes_avx2_body (index, data, 9))

/* The packed-plane kernel of a flat plan whose maps keep their size and
 * divide a vector (see depthwise_packed_planes_avx2): lane l takes the
 * flat masks of pixel l % n_out. */
static void
depthwise_plan_packed_avx2 (GraftDepthwisePlan *plan, gint64 n_out, gint64 taps)
{
  const GraftWindow *w = &plan->w;
  if (w->out[0] != w->in[0] || YMM_LANES % n_out != 0)
    return;
  const gint32 *flat = plan->masks;
  plan->planes_per_vector = YMM_LANES / n_out;
  plan->packed_masks = g_new (gint32, taps * YMM_LANES);
  for (gint64 t = 0; t < taps; t++)
    for (gint64 l = 0; l < YMM_LANES; l++)
      plan->packed_masks[t * YMM_LANES + l] = flat[t * YMM_LANES + l % n_out];
  plan->packed_planes = taps == 9 ? depthwise_packed_planes_avx2_3x3 : depthwise_packed_planes_avx2;
}

typedef float GraftV8f __attribute__ ((vector_size (32)));

/* The 8 × 8 floats of v transposed in place (as transpose16). */
static inline __attribute__ ((always_inline)) GRAFT_TARGET_AVX2_FMA void
transpose8 (GraftV8f *v)
{
  __m256 r[8], t[8];
  for (int i = 0; i < 8; i += 2)
    {
      t[i] = _mm256_unpacklo_ps ((__m256) v[i], (__m256) v[i + 1]);
      t[i + 1] = _mm256_unpackhi_ps ((__m256) v[i], (__m256) v[i + 1]);
    }
  for (int i = 0; i < 8; i += 4)
    {
      r[i] = _mm256_shuffle_ps (t[i], t[i + 2], _MM_SHUFFLE (1, 0, 1, 0));
      r[i + 1] = _mm256_shuffle_ps (t[i], t[i + 2], _MM_SHUFFLE (3, 2, 3, 2));
      r[i + 2] = _mm256_shuffle_ps (t[i + 1], t[i + 3], _MM_SHUFFLE (1, 0, 1, 0));
      r[i + 3] = _mm256_shuffle_ps (t[i + 1], t[i + 3], _MM_SHUFFLE (3, 2, 3, 2));
    }
  for (int i = 0; i < 4; i++)
    {
      v[i] = (GraftV8f) _mm256_permute2f128_ps (r[i], r[i + 4], 0x20);
      v[i + 4] = (GraftV8f) _mm256_permute2f128_ps (r[i], r[i + 4], 0x31);
    }
}

static inline GRAFT_TARGET_AVX2_FMA GraftV8f
masked_load8 (const float *p, __m256i lanes)
{
  return (GraftV8f) _mm256_maskload_ps (p, lanes);
}

#define DB_V GraftV8f
#define DB_LANES YMM_LANES
#define DB_TARGET GRAFT_TARGET_AVX2_FMA
#define DB_MASK_T __m256i
#define DB_FIRST_LANES(n) graft_first_lanes8 (n)
#define DB_MASKED_LOAD(p, m) masked_load8 ((p), (m))
#define DB_MASKED_STORE(p, m, v) _mm256_maskstore_ps ((p), (m), (__m256) (v))
#define DB_CLAMP(v, lo, hi) ((GraftV8f) clamp8 ((__m256) (v), (__m256) (lo), (__m256) (hi)))
#define DB_TRANSPOSE(v) transpose8 (v)
#define DB_SUFFIX avx2
#include "runtime/kernels/conv-depthwise-blocked-body.h"

/* The AVX2 kernel and its masks for plan->w (see GraftDepthwisePlan). */
static void
depthwise_plan_avx2 (GraftDepthwisePlan *plan)
{
  const GraftWindow *w = &plan->w;
  gint64 sw = w->stride[1], pl = w->pad_begin[1];
  if (w->stride[0] == 1 && sw == 1 && w->out[1] == w->in[1] && w->out[1] < 4 * YMM_LANES &&
      w->out[0] * w->out[1] <= 4096)
    {
      gint64 H = w->in[0], W = w->in[1], KH = w->kernel[0], KW = w->kernel[1];
      gint64 n_out = w->out[0] * W, vectors = (n_out + YMM_LANES - 1) / YMM_LANES;
      gint32 *masks = g_new0 (gint32, MAX (vectors * KH * KW * YMM_LANES, 1));
      gint64 row = 0, col = 0;   /* of output j, counted along */
      for (gint64 j = 0; j < n_out; j++)
        {
          gint32 *m = masks + j / YMM_LANES * KH * KW * YMM_LANES + j % YMM_LANES;
          for (gint64 ki = 0; ki < KH; ki++)
            {
              gint64 r = row + ki * w->dilation[0] - w->pad_begin[0];
              for (gint64 kj = 0; r >= 0 && r < H && kj < KW; kj++)
                {
                  gint64 c = col + kj * w->dilation[1] - w->pad_begin[1];
                  m[(ki * KW + kj) * YMM_LANES] = c >= 0 && c < W ? -1 : 0;
                }
            }
          if (++col == W)
            col = 0, row++;
        }
      plan->masks = masks;
      plan->plane = KH * KW == 9 ? depthwise_flat_plane_avx2_3x3 : depthwise_flat_plane_avx2;
      depthwise_plan_packed_avx2 (plan, n_out, KH * KW);
      return;
    }
  gint64 shift_max = (w->kernel[1] - 1) * w->dilation[1] - pl;
  /* a vector from ow0 reads columns ow0·sw - pl … (ow0 + 8)·sw + shift_max - 1 */
  plan->safe_lo = (pl + sw - 1) / sw;
  plan->safe_hi = w->in[1] - shift_max < 0 ? 0 : MIN ((w->in[1] - shift_max) / sw, w->out[1]);
  if (w->kernel[0] == 3 && w->kernel[1] == 3 && w->dilation[0] == 1 && w->dilation[1] == 1)
    plan->zeros = g_new0 (float, w->in[1]);
  plan->plane = sw == 1 ? depthwise_plane_avx2_stride1 : depthwise_plane_avx2_stride2;
}

GraftDepthwisePlan *
graft_conv_depthwise_plan_new (const GraftWindow *w)
{
  g_return_val_if_fail (graft_conv_depthwise_supports (w), NULL);
  GraftDepthwisePlan *plan = g_new0 (GraftDepthwisePlan, 1);
  plan->w = *w;
  plan->avx512 = graft_kernel_table ()->avx512;
  if (plan->avx512)
    depthwise_plan_avx512 (plan);
  else
    depthwise_plan_avx2 (plan);
  return plan;
}

/* The rows and columns of the blocked kernel's zero-padded map: every
 * input pixel and every position a tap reads. */
static void
blocked_map_size (const GraftWindow *w, gint64 *Hp, gint64 *Wp)
{
  *Hp = MAX (w->pad_begin[0] + w->in[0], (w->out[0] - 1) * w->stride[0] + (w->kernel[0] - 1) * w->dilation[0] + 1);
  *Wp = MAX (w->pad_begin[1] + w->in[1], (w->out[1] - 1) * w->stride[1] + (w->kernel[1] - 1) * w->dilation[1] + 1);
}

/* Whether channel blocks beat the kernels along a plane's rows on w: maps
 * too small or rows too narrow (stride 2) to fill those kernels' vectors,
 * whose per-plane setup and masked loads then cost more than the blocks'
 * transposes; and 5×5 windows, whose 25 whole-vector taps per output
 * outweigh the transposes on any map up to the one the blocks' map keeps
 * in L1 (AVX-512; AVX2's flat kernel takes masked loads for every tap).
 * Measured crossovers, one thread, 2 images of 64 channels (CPU ms, rows
 * vs blocks): AVX-512 3×3 32×32 0.045 vs 0.097, 16×16 0.025 vs 0.023,
 * 3×3 stride 2 on 56×56 0.139 vs 0.094 and on 112×112 0.226 vs 0.237,
 * 5×5 32×32 0.208 vs 0.241, 24×24 0.121 vs 0.089; AVX2 3×3 7×7 0.008 vs
 * 0.010, 3×3 stride 2 on 14×14 0.018 vs 0.014 and on 28×28 0.043 vs
 * 0.045, 5×5 32×32 0.479 vs 0.190. */
static gboolean
blocked_pays (const GraftWindow *w, gboolean avx512)
{
  if (w->pad_begin[0] < 0 || w->pad_begin[1] < 0)
    return FALSE;
  gint64 Hp, Wp, taps = w->kernel[0] * w->kernel[1];
  blocked_map_size (w, &Hp, &Wp);
  if (avx512)
    return w->stride[1] >= 2 ? taps > 9 || Hp * Wp <= 4096 : Hp * Wp <= (taps > 9 ? 1024 : 512);
  return taps > 9 ? Hp * Wp <= 16384 : (w->stride[1] >= 2 && w->out[1] < YMM_LANES) || w->out[0] * w->out[1] <= 16;
}

/* The blocked kernel's map geometry and weights for weight [C, 1, KH, KW]
 * (see GraftDepthwisePlan). */
static void
depthwise_plan_blocked (GraftDepthwisePlan *plan, const float *weight, gint64 C, gint64 lanes)
{
  const GraftWindow *w = &plan->w;
  gint64 H = w->in[0], W = w->in[1], OH = w->out[0], OW = w->out[1], KH = w->kernel[0], KW = w->kernel[1];
  gint64 sh = w->stride[0], sw = w->stride[1], dh = w->dilation[0], dw = w->dilation[1];
  gint64 pt = w->pad_begin[0], pl = w->pad_begin[1], taps = KH * KW;
  gint64 Hp, Wp;
  blocked_map_size (w, &Hp, &Wp);
  plan->map_pixels = Hp * Wp;
  plan->in_pos = g_new (gint64, MAX (H * W, 1));
  for (gint64 r = 0; r < H; r++)
    for (gint64 c = 0; c < W; c++)
      plan->in_pos[r * W + c] = (r + pt) * Wp + c + pl;
  plan->out_off = g_new (gint64, MAX (OH * OW, 1));
  for (gint64 r = 0; r < OH; r++)
    for (gint64 c = 0; c < OW; c++)
      plan->out_off[r * OW + c] = r * sh * Wp + c * sw;
  plan->tap_off = g_new (gint64, taps);
  for (gint64 ki = 0; ki < KH; ki++)
    for (gint64 kj = 0; kj < KW; kj++)
      plan->tap_off[ki * KW + kj] = (ki * dh * Wp + kj * dw) * lanes;
  gint64 blocks = (C + lanes - 1) / lanes;
  plan->block_weight = g_new0 (float, blocks * taps * lanes);
  for (gint64 c = 0; c < C; c++)
    for (gint64 t = 0; t < taps; t++)
      plan->block_weight[(c / lanes * taps + t) * lanes + c % lanes] = weight[c * taps + t];
  plan->blocked = plan->avx512 ? depthwise_blocked_range_avx512 : depthwise_blocked_range_avx2;
}

GraftDepthwisePlan *
graft_conv_depthwise_plan_new_for_weights (const GraftWindow *w, const float *weight, gint64 C)
{
  GraftDepthwisePlan *plan = graft_conv_depthwise_plan_new (w);
  plan->C = C;
  plan->weight = weight;
  if (blocked_pays (w, plan->avx512))
    depthwise_plan_blocked (plan, weight, C, plan->avx512 ? LANES : YMM_LANES);
  return plan;
}

void
graft_conv_depthwise_plan_free (GraftDepthwisePlan *plan)
{
  if (plan == NULL)
    return;
  g_free (plan->masks);
  g_free (plan->zeros);
  g_free (plan->packed_masks);
  g_free (plan->in_pos);
  g_free (plan->out_off);
  g_free (plan->tap_off);
  g_free (plan->block_weight);
  g_free (plan);
}

/* The plan's block of weights whose first channel weight is, or -1
 * when weight is not the first channel of one of its blocks. */
static gint64
blocked_first_block (const GraftDepthwisePlan *plan, const float *weight, gint64 C)
{
  gint64 lanes = plan->avx512 ? LANES : YMM_LANES, taps = plan->w.kernel[0] * plan->w.kernel[1];
  guintptr at = (guintptr) weight, first = (guintptr) plan->weight;
  if (plan->blocked == NULL || at < first || (at - first) % (taps * lanes * sizeof (float)) != 0)
    return -1;
  gint64 c0 = (gint64) ((at - first) / (taps * sizeof (float)));
  return c0 + C <= plan->C ? c0 / lanes : -1;
}

void
graft_conv_depthwise_plan_run (GraftKernelContext *ctx, const GraftDepthwisePlan *plan, const float *x,
                               gint64 x_plane, const float *weight, const float *bias, float *y, gint64 y_plane,
                               gint64 planes, gint64 C, float lo, float hi)
{
  gint64 first_block = blocked_first_block (plan, weight, C);
  if (first_block >= 0 && planes % C == 0)
    {
      gint64 lanes = plan->avx512 ? LANES : YMM_LANES, blocks = planes / C * ((C + lanes - 1) / lanes);
      gint64 threads = MAX (graft_kernel_get_n_threads (ctx), 1);
      BlockedJob job = { plan, x, bias, y, C, lo, hi, x_plane, y_plane, blocks, MIN (blocks, 4 * threads),
                         first_block };
      graft_kernel_parallel_for (ctx, job.ranges, plan->blocked, &job);
      return;
    }
  if (plan->avx512)
    {
      DepthwiseJob job = { x, weight, bias, y, &plan->w, C, lo, hi, x_plane, y_plane, plan->safe_lo, plan->safe_hi };
      job.edge_masks = job.flat_masks = plan->masks;
      for_each_plane (ctx, planes, plan->plane, &job);
    }
  else
    {
      DepthwiseAvx2Job job = { x, weight, bias, y, &plan->w, C, lo, hi, x_plane, y_plane, plan->safe_lo,
                               plan->safe_hi, plan->masks, plan->zeros, plan->planes_per_vector,
                               plan->packed_masks };
      gint64 packed = 0;
      /* planes side by side only where they lie so in x and in y */
      if (plan->packed_planes && x_plane * plan->planes_per_vector == YMM_LANES && y_plane == x_plane)
        {
          packed = planes / plan->planes_per_vector;
          for_each_plane (ctx, packed, plan->packed_planes, &job);
          packed *= plan->planes_per_vector;
        }
      for (gint64 p = packed; p < planes && packed > 0; p++)
        plan->plane (p, &job);
      if (packed == 0)
        for_each_plane (ctx, planes, plan->plane, &job);
    }
}

/* What a depthwise plan is made for: its window and, for the blocked
 * kernel, its weights. */
typedef struct {
  const GraftWindow *w;
  const float *weight;
  gint64 C;
} DepthwisePlanArgs;

static gboolean
depthwise_plan_fits (gconstpointer derived, gconstpointer data)
{
  const GraftDepthwisePlan *plan = derived;
  const DepthwisePlanArgs *args = data;
  return graft_window_equal (&plan->w, args->w) && graft_conv_depthwise_plan_is_current (plan) && plan->C == args->C;
}

gboolean
graft_conv_depthwise_plan_is_current (const GraftDepthwisePlan *plan)
{
  return plan->avx512 == graft_kernel_table ()->avx512;
}

static gpointer
depthwise_plan_make (gconstpointer data)
{
  const DepthwisePlanArgs *args = data;
  return graft_conv_depthwise_plan_new_for_weights (args->w, args->weight, args->C);
}

static const GraftDerivedKind depthwise_plan_kind = {
  "depthwise plan", (GDestroyNotify) graft_conv_depthwise_plan_free, FALSE
};

void
graft_conv_depthwise (GraftKernelContext *ctx, const float *x, const float *weight, const float *bias, float *y,
                      gint64 N, gint64 C, const GraftWindow *w, float lo, float hi)
{
  /* the plan is kept on the step, keyed by the weights, while the window
   * and the level stay the same: its masks cost as much as a small map's
   * convolution (a third of a 112×112 one before they were counted along
   * rather than divided out), and the blocked kernel's weights are laid
   * out once */
  g_autoptr(GraftDepthwisePlan) owned = NULL;
  DepthwisePlanArgs args = { w, weight, C };
  const GraftDepthwisePlan *plan = graft_kernel_derived (ctx, &depthwise_plan_kind, weight, depthwise_plan_fits,
                                                         depthwise_plan_make, &args, (gpointer *) &owned);
  g_return_if_fail (plan != NULL);
  graft_conv_depthwise_run (ctx, plan, x, bias, y, N, C, lo, hi);
}

void
graft_conv_depthwise_run (GraftKernelContext *ctx, const GraftDepthwisePlan *plan, const float *x, const float *bias,
                          float *y, gint64 N, gint64 C, float lo, float hi)
{
  const GraftWindow *w = &plan->w;
  gint64 x_plane = w->in[0] * w->in[1], y_plane = w->out[0] * w->out[1];
  if (plan->blocked)
    {
      g_return_if_fail (plan->C == C);
      gint64 lanes = plan->avx512 ? LANES : YMM_LANES, blocks = N * ((C + lanes - 1) / lanes);
      gint64 threads = MAX (graft_kernel_get_n_threads (ctx), 1);
      BlockedJob job = { plan, x, bias, y, C, lo, hi, x_plane, y_plane, blocks, MIN (blocks, 4 * threads), 0 };
      graft_kernel_parallel_for (ctx, job.ranges, plan->blocked, &job);
      return;
    }
  g_return_if_fail (plan->C == C);
  graft_conv_depthwise_plan_run (ctx, plan, x, x_plane, plan->weight, bias, y, y_plane, N * C, C, lo, hi);
}

#else

gboolean
graft_conv_depthwise_supports (const GraftWindow *w)
{
  return FALSE;
}

GraftDepthwisePlan *
graft_conv_depthwise_plan_new (const GraftWindow *w)
{
  g_return_val_if_reached (NULL);
}

void
graft_conv_depthwise_plan_free (GraftDepthwisePlan *plan)
{
  g_return_if_fail (plan == NULL);
}

void
graft_conv_depthwise_plan_run (GraftKernelContext *ctx, const GraftDepthwisePlan *plan, const float *x,
                               gint64 x_plane, const float *weight, const float *bias, float *y, gint64 y_plane,
                               gint64 planes, gint64 C, float lo, float hi)
{
  g_return_if_reached ();
}

void
graft_conv_depthwise (GraftKernelContext *ctx, const float *x, const float *weight, const float *bias, float *y,
                      gint64 N, gint64 C, const GraftWindow *w, float lo, float hi)
{
  g_return_if_reached ();
}

GraftDepthwisePlan *
graft_conv_depthwise_plan_new_for_weights (const GraftWindow *w, const float *weight, gint64 C)
{
  g_return_val_if_reached (NULL);
}

gboolean
graft_conv_depthwise_plan_is_current (const GraftDepthwisePlan *plan)
{
  return FALSE;
}

void
graft_conv_depthwise_run (GraftKernelContext *ctx, const GraftDepthwisePlan *plan, const float *x,
                          const float *bias, float *y, gint64 N, gint64 C, float lo, float hi)
{
  g_return_if_reached ();
}

#endif
