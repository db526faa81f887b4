/* 2-D max and average pooling with AVX-512 or AVX2 (see pool-separable.h). */
#include "runtime/kernels/pool-separable.h"
#include "runtime/kernels/simd-target.h"
#include "runtime/kernels/avx2-lanes.h"

#include <math.h>

#define LANES 16

#ifdef GRAFT_HAVE_X86_SIMD

gboolean
graft_pool2d_separable_supports (const GraftWindow *w)
{
  return graft_kernel_table ()->avx2 && w->n == 2 && w->dilation[0] == 1 && w->dilation[1] == 1 &&
         (w->stride[1] == 1 || w->stride[1] == 2);
}

typedef struct {
  const float *x;
  float *y;
  const GraftWindow *w;
  /* average only: 1/count of each output row's window rows, and of each
   * output column's window columns (LANES past OW, for whole-vector loads) */
  const float *row_scale, *column_scale;
  gint64 planes;
  gint64 ranges;                  /* the planes in this many ranges (the plane kernels) */
} SeparablePoolJob;

/* Output rows whose vertical pass the plane kernels run before their
 * horizontal one */
#define CHUNK_ROWS 8

/* CHUNK_ROWS rows of fill (*length floats each) long enough for the
 * windows of every vector of `lanes` outputs of a row, and a second
 * load's worth past them (stride 2 loads two vectors per window column). */
static float *
padded_rows_new (const GraftWindow *w, gint64 lanes, float fill, gint64 *length)
{
  gint64 vectors = (w->out[1] + lanes - 1) / lanes;
  *length = vectors * lanes * w->stride[1] + w->kernel[1] + lanes;
  float *padded = g_new (float, CHUNK_ROWS * *length);
  for (gint64 i = 0; i < CHUNK_ROWS * *length; i++)
    padded[i] = fill;
  return padded;
}

/* Planes of up to this many input pixels go through max_pool_tiny */
#define TINY_PLANE 64
#define TINY_PLANES_PER_TASK 64

GRAFT_TARGET_AVX512_BEGIN
#include "runtime/kernels/avx512-row.h"

#define PS_V __m512
#define PS_LANES LANES
#define PS_MASK_T __mmask16
#define PS_FIRST_LANES(n) graft_lane_mask16 (0, (n))
#define PS_MASKED_LOAD(p, m) _mm512_maskz_loadu_ps ((m), (p))
#define PS_MASKED_STORE(p, m, v) _mm512_mask_storeu_ps ((p), (m), (v))
#define PS_LOAD(p) _mm512_loadu_ps (p)
#define PS_STORE(p, v) _mm512_storeu_ps ((p), (v))
#define PS_BLEND(m, a, b) _mm512_mask_blend_ps ((m), (b), (a))
#define PS_MASK_ANDNOT(a, b) ((__mmask16) (~(a) & (b)))
#define PS_EVEN(p) graft_even_lanes16 (_mm512_loadu_ps (p), _mm512_loadu_ps ((p) + LANES))
#define PS_MAX(v, m) _mm512_max_ps ((v), (m))
#define PS_ADD(v, m) _mm512_add_ps ((v), (m))
#define PS_MUL(a, b) _mm512_mul_ps ((a), (b))
#define PS_SET1(f) _mm512_set1_ps (f)
#define PS_TARGET
#define PS_SUFFIX avx512
#include "runtime/kernels/pool-separable-body.h"

GRAFT_TARGET_AVX512_END

#define YMM_LANES 8

#define PS_V __m256
#define PS_LANES YMM_LANES
#define PS_MASK_T __m256i
#define PS_FIRST_LANES(n) graft_first_lanes8 (n)
#define PS_MASKED_LOAD(p, m) _mm256_maskload_ps ((p), (m))
#define PS_MASKED_STORE(p, m, v) _mm256_maskstore_ps ((p), (m), (v))
#define PS_LOAD(p) _mm256_loadu_ps (p)
#define PS_STORE(p, v) _mm256_storeu_ps ((p), (v))
#define PS_BLEND(m, a, b) _mm256_blendv_ps ((b), (a), _mm256_castsi256_ps (m))
#define PS_MASK_ANDNOT(a, b) _mm256_andnot_si256 ((a), (b))
#define PS_EVEN(p) graft_even_lanes8 (_mm256_loadu_ps (p), _mm256_loadu_ps ((p) + YMM_LANES))
#define PS_MAX(v, m) _mm256_max_ps ((v), (m))
#define PS_ADD(v, m) _mm256_add_ps ((v), (m))
#define PS_MUL(a, b) _mm256_mul_ps ((a), (b))
#define PS_SET1(f) _mm256_set1_ps (f)
#define PS_TARGET GRAFT_TARGET_AVX2_FMA
#define PS_SUFFIX avx2
#include "runtime/kernels/pool-separable-body.h"

/* Ranges of planes for the plane kernels: a few per thread, so that a
 * thread slowed by another process leaves its share to the others. */
static gint64
plane_ranges (GraftKernelContext *ctx, gint64 planes)
{
  return MIN (planes, 8 * (gint64) MAX (graft_kernel_get_n_threads (ctx), 1));
}

void
graft_max_pool2d (GraftKernelContext *ctx, const float *x, float *y, gint64 planes, const GraftWindow *w)
{
  g_return_if_fail (graft_pool2d_separable_supports (w));
  SeparablePoolJob job = { x, y, w, .planes = planes };
  if (w->in[0] * w->in[1] <= TINY_PLANE && w->out[0] <= TINY_PLANE && w->out[1] <= TINY_PLANE)
    {
      graft_kernel_parallel_for (ctx, (planes + TINY_PLANES_PER_TASK - 1) / TINY_PLANES_PER_TASK,
                                 graft_kernel_table ()->avx512 ? max_pool_tiny_avx512 : max_pool_tiny_avx2, &job);
      return;
    }
  gboolean avx512 = graft_kernel_table ()->avx512, unit = w->stride[1] == 1;
  job.ranges = plane_ranges (ctx, planes);
  graft_kernel_parallel_for (ctx, job.ranges,
                             avx512 ? (unit ? max_pool_plane_avx512_stride1 : max_pool_plane_avx512_stride2)
                                    : (unit ? max_pool_plane_avx2_stride1 : max_pool_plane_avx2_stride2),
                             &job);
}

/* 1/count of the windows along one axis: the taps inside the input, or
 * with count_include_pad inside the input and its pads (ceil_mode's last
 * window may reach past the end pad); 0 for a window with none. */
static void
window_scales (const GraftWindow *w, int axis, gboolean count_include_pad, float *scale)
{
  gint64 lo = count_include_pad ? -w->pad_begin[axis] : 0;
  gint64 hi = w->in[axis] + (count_include_pad ? w->pad_end[axis] : 0);
  for (gint64 o = 0; o < w->out[axis]; o++)
    {
      gint64 start = o * w->stride[axis] - w->pad_begin[axis];
      gint64 count = MIN (start + w->kernel[axis], hi) - MAX (start, lo);
      scale[o] = count > 0 ? 1.0f / count : 0;
    }
}

void
graft_avg_pool2d (GraftKernelContext *ctx, const float *x, float *y, gint64 planes, const GraftWindow *w,
                  gboolean count_include_pad)
{
  g_return_if_fail (graft_pool2d_separable_supports (w));
  g_autofree float *row_scale = g_new (float, w->out[0]);
  g_autofree float *column_scale = g_new0 (float, w->out[1] + LANES);
  window_scales (w, 0, count_include_pad, row_scale);
  window_scales (w, 1, count_include_pad, column_scale);
  SeparablePoolJob job = { x, y, w, row_scale, column_scale, planes, plane_ranges (ctx, planes) };
  gboolean avx512 = graft_kernel_table ()->avx512, unit = w->stride[1] == 1;
  graft_kernel_parallel_for (ctx, job.ranges,
                             avx512 ? (unit ? avg_pool_plane_avx512_stride1 : avg_pool_plane_avx512_stride2)
                                    : (unit ? avg_pool_plane_avx2_stride1 : avg_pool_plane_avx2_stride2),
                             &job);
}

#else

gboolean
graft_pool2d_separable_supports (const GraftWindow *w)
{
  return FALSE;
}

void
graft_max_pool2d (GraftKernelContext *ctx, const float *x, float *y, gint64 planes, const GraftWindow *w)
{
  g_return_if_reached ();
}

void
graft_avg_pool2d (GraftKernelContext *ctx, const float *x, float *y, gint64 planes, const GraftWindow *w,
                  gboolean count_include_pad)
{
  g_return_if_reached ();
}

#endif
