/* 2-D max pooling with AVX-512 (see pool-max.h). */
#include "runtime/kernels/pool-max.h"
#include "runtime/kernels/simd-target.h"

#include <math.h>

#define LANES 16

#ifdef GRAFT_HAVE_X86_SIMD

gboolean
graft_max_pool2d_supports (const GraftWindow *w)
{
  return graft_simd_get_level () >= GRAFT_SIMD_AVX512 && w->n == 2 && w->dilation[0] == 1 && w->dilation[1] == 1 &&
         (w->stride[1] == 1 || w->stride[1] == 2);
}

GRAFT_TARGET_AVX512_BEGIN
#include "runtime/kernels/avx512-row.h"

typedef struct {
  const float *x;
  float *y;
  const GraftWindow *w;
} MaxPoolJob;

static inline __attribute__ ((always_inline)) void
max_pool_plane (const MaxPoolJob *job, gint64 plane, const int sw)
{
  const GraftWindow *w = job->w;
  gint64 H = w->in[0], W = w->in[1], OH = w->out[0], OW = w->out[1];
  gint64 KH = w->kernel[0], KW = w->kernel[1], sh = w->stride[0];
  gint64 pt = w->pad_begin[0], pl = w->pad_begin[1];
  const float *x = job->x + plane * H * W;
  float *y = job->y + plane * OH * OW;
  const __m512 minus_inf = _mm512_set1_ps (-INFINITY);

  for (gint64 oh = 0; oh < OH; oh++, y += OW)
    {
      gint64 h0 = MAX (oh * sh - pt, 0), h1 = MIN (oh * sh - pt + KH, H);
      for (gint64 ow = 0; ow < OW; ow += LANES)
        {
          __m512 m = minus_inf;
          for (gint64 h = h0; h < h1; h++)
            for (gint64 kj = 0; kj < KW; kj++)
              /* max returns its second operand when either is NaN: m, so a NaN never wins */
              m = _mm512_max_ps (graft_load_row16_fill (x + h * W, ow * sw + kj - pl, W, sw, minus_inf), m);
          _mm512_mask_storeu_ps (y + ow, graft_lane_mask16 (0, OW - ow), m);
        }
    }
}

static GRAFT_HOT_LOOP void
max_pool_plane_stride1 (gint64 plane, gpointer data)
{
  max_pool_plane (data, plane, 1);
}

static GRAFT_HOT_LOOP void
max_pool_plane_stride2 (gint64 plane, gpointer data)
{
  max_pool_plane (data, plane, 2);
}

GRAFT_TARGET_AVX512_END

void
graft_max_pool2d (GraftKernelContext *ctx, const float *x, float *y, gint64 planes, const GraftWindow *w)
{
  g_return_if_fail (graft_max_pool2d_supports (w));
  MaxPoolJob job = { x, y, w };
  graft_kernel_parallel_for (ctx, planes, w->stride[1] == 1 ? max_pool_plane_stride1 : max_pool_plane_stride2, &job);
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
