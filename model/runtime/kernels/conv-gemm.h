/* 2-D convolution as a GEMM with Graft's own AVX-512 and AVX2+FMA micro-kernels.
 *
 * y [M, pixels] = W [M, K] · im2col (x) [K, pixels], K = C/group·KH·KW.
 * The filter is packed once into panels of GRAFT_CONV_GEMM_ROWS output
 * channels (and kept by the engine between runs); the im2col matrix is
 * never written out: each block of output pixels (of every image, side
 * by side) is gathered straight from x into a cache-resident panel, and
 * bias and clamp are applied while the result tile is hot. With AVX2, a
 * 1×1 window of unit stride and no padding skips the panels and tiles:
 * per image it is W · x read from x and written to y in place, bias,
 * residual and clamp applied in the micro-kernel. */
#pragma once

#include "runtime/op.h"
#include "runtime/kernels/window.h"

G_BEGIN_DECLS

typedef struct _GraftPackedFilter GraftPackedFilter;

/* TRUE when the SIMD level (runtime/simd.h) is AVX2 (AVX2+FMA kernels) or
 * AVX-512 (AVX-512F kernels); at the portable level (GRAFT_SIMD=portable
 * or an older CPU) convolutions take the im2col + OpenBLAS path. */
gboolean graft_conv_gemm_available (void);
/* Available, and w is a 2-D window the packed path takes. */
gboolean graft_conv_gemm_supports (const GraftWindow *w);

/* weight [group·Mg, K] row-major. */
GraftPackedFilter *graft_packed_filter_new (const float *weight, gint64 group, gint64 Mg, gint64 K);
void graft_packed_filter_free (GraftPackedFilter *filter);
/* The packed filter of weight, cached on the node when weight is constant.
 * Borrowed when cached; else *owned holds it (free it). */
const GraftPackedFilter *graft_packed_filter_for (GraftKernelContext *ctx, const float *weight, gint64 group,
                                                  gint64 Mg, gint64 K, GraftPackedFilter **owned);

typedef struct {
  const float *x;          /* x [N, C, H, W] */
  float *y;                /* y [N, M, OH, OW] */
  const float *bias;       /* [M] or NULL */
  const float *residual;   /* [N, M, OH, OW], added before the clamp, or NULL */
  gint64 N, C, M, group;
  const GraftWindow *w;    /* 2-D */
  gboolean clamp;
  float lo, hi;
} GraftConvGemmArgs;

/* Every group of the convolution; ctx may be NULL (one thread). */
gboolean graft_conv_gemm (GraftKernelContext *ctx, const GraftPackedFilter *filter, const GraftConvGemmArgs *args,
                          GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftPackedFilter, graft_packed_filter_free)

G_END_DECLS
