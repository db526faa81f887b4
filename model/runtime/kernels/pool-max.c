/* 2-D max pooling with AVX-512 or AVX2 (see pool-max.h). */
#include "runtime/kernels/pool-max.h"
#include "runtime/kernels/simd-target.h"
#include "runtime/kernels/avx2-lanes.h"

#include <math.h>

#define LANES 16

#ifdef GRAFT_HAVE_X86_SIMD

gboolean
graft_max_pool2d_supports (const GraftWindow *w)
{
  return graft_kernel_table ()->avx2 && w->n == 2 && w->dilation[0] == 1 && w->dilation[1] == 1 &&
         (w->stride[1] == 1 || w->stride[1] == 2);
}

typedef struct {
  const float *x;
  float *y;
  const GraftWindow *w;
} MaxPoolJob;

/* A row of -inf (*length floats) long enough for the windows of every
 * vector of `lanes` outputs of a row, and a second load's worth past them
 * (stride 2 loads two vectors per window column). */
static float *
padded_row_new (const GraftWindow *w, gint64 lanes, gint64 *length)
{
  gint64 vectors = (w->out[1] + lanes - 1) / lanes;
  *length = vectors * lanes * w->stride[1] + w->kernel[1] + lanes;
  float *padded = g_new (float, *length);
  for (gint64 i = 0; i < *length; i++)
    padded[i] = -INFINITY;
  return padded;
}

GRAFT_TARGET_AVX512_BEGIN
#include "runtime/kernels/avx512-row.h"

#define PM_V __m512
#define PM_LANES LANES
#define PM_MASK_T __mmask16
#define PM_FIRST_LANES(n) graft_lane_mask16 (0, (n))
#define PM_MASKED_LOAD(p, m) _mm512_maskz_loadu_ps ((m), (p))
#define PM_MASKED_STORE(p, m, v) _mm512_mask_storeu_ps ((p), (m), (v))
#define PM_LOAD(p) _mm512_loadu_ps (p)
#define PM_EVEN(p) graft_even_lanes16 (_mm512_loadu_ps (p), _mm512_loadu_ps ((p) + LANES))
#define PM_MAX(v, m) _mm512_max_ps ((v), (m))
#define PM_SET1(f) _mm512_set1_ps (f)
#define PM_TARGET
#define PM_SUFFIX avx512
#include "runtime/kernels/pool-max-body.h"

GRAFT_TARGET_AVX512_END

#define YMM_LANES 8

#define PM_V __m256
#define PM_LANES YMM_LANES
#define PM_MASK_T __m256i
#define PM_FIRST_LANES(n) graft_first_lanes8 (n)
#define PM_MASKED_LOAD(p, m) _mm256_maskload_ps ((p), (m))
#define PM_MASKED_STORE(p, m, v) _mm256_maskstore_ps ((p), (m), (v))
#define PM_LOAD(p) _mm256_loadu_ps (p)
#define PM_EVEN(p) graft_even_lanes8 (_mm256_loadu_ps (p), _mm256_loadu_ps ((p) + YMM_LANES))
#define PM_MAX(v, m) _mm256_max_ps ((v), (m))
#define PM_SET1(f) _mm256_set1_ps (f)
#define PM_TARGET GRAFT_TARGET_AVX2_FMA
#define PM_SUFFIX avx2
#include "runtime/kernels/pool-max-body.h"

void
graft_max_pool2d (GraftKernelContext *ctx, const float *x, float *y, gint64 planes, const GraftWindow *w)
{
  g_return_if_fail (graft_max_pool2d_supports (w));
  MaxPoolJob job = { x, y, w };
  gboolean avx512 = graft_kernel_table ()->avx512, unit = w->stride[1] == 1;
  graft_kernel_parallel_for (ctx, planes,
                             avx512 ? (unit ? max_pool_plane_avx512_stride1 : max_pool_plane_avx512_stride2)
                                    : (unit ? max_pool_plane_avx2_stride1 : max_pool_plane_avx2_stride2),
                             &job);
}

#else

gboolean
graft_max_pool2d_supports (const GraftWindow *w)
{
  return FALSE;
}

void
graft_max_pool2d (GraftKernelContext *ctx, const float *x, float *y, gint64 planes, const GraftWindow *w)
{
  g_return_if_reached ();
}

#endif
