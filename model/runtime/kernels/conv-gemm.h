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

#define GRAFT_CONV_GEMM_ROWS 8    /* output channels per filter panel */

/* TRUE when the SIMD level (runtime/simd.h) is AVX2 (AVX2+FMA kernels) or
 * AVX-512 (AVX-512F kernels); at the portable level (GRAFT_SIMD=portable
 * or an older CPU) convolutions take the im2col + OpenBLAS path. */
gboolean graft_conv_gemm_available (void);
/* Available, and w is a 2-D window the packed path takes. */
gboolean graft_conv_gemm_supports (const GraftWindow *w);

/* weight [group·Mg, K] row-major. */
GraftPackedFilter *graft_packed_filter_new (const float *weight, gint64 group, gint64 Mg, gint64 K);
/* The same in bfloat16 pairs (rounded to nearest even) for the bf16
 * tiles (kernel-table.h: conv_gemm_bf16), which graft_conv_gemm takes for
 * such a filter: float32 sums, the gathered input rounded to bf16. */
GraftPackedFilter *graft_packed_filter_new_bf16 (const float *weight, gint64 group, gint64 Mg, gint64 K);
void graft_packed_filter_free (GraftPackedFilter *filter);
/* filter is not NULL and was packed for these sizes */
gboolean graft_packed_filter_matches (const GraftPackedFilter *filter, gint64 group, gint64 Mg, gint64 K);
/* The float32 panels of a filter of one group: [ceil (Mg / GRAFT_CONV_GEMM_ROWS)][K][GRAFT_CONV_GEMM_ROWS],
 * rows past Mg zero; NULL for a bf16 filter. */
const float *graft_packed_filter_panels (const GraftPackedFilter *filter);
/* The packed filter of weight, cached on the node when weight is constant.
 * Borrowed when cached; else *owned holds it (free it). */
const GraftPackedFilter *graft_packed_filter_for (GraftKernelContext *ctx, const float *weight, gint64 group,
                                                  gint64 Mg, gint64 K, GraftPackedFilter **owned);
/* The same packed in bf16 (graft_packed_filter_new_bf16). */
const GraftPackedFilter *graft_packed_filter_bf16_for (GraftKernelContext *ctx, const float *weight, gint64 group,
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

/* Rows [m0, m1) of y [M, n] = clamp (W · x [K, n] + bias [+ res]) in
 * this thread, W the packed filter of a 1×1 convolution of one group, m0
 * a multiple of GRAFT_CONV_GEMM_ROWS; x's rows ldx floats apart, y's and
 * res's ldy (y, res and bias from row m0; bias NULL or [m1 - m0], res
 * NULL or as y). The same kernels and the same sums as graft_conv_gemm's
 * pointwise path: the same results. */
void graft_conv_pointwise_block (const GraftPackedFilter *filter, gint64 m0, gint64 m1, const float *x, gint64 ldx,
                                 gint64 n, float *y, const float *res, gint64 ldy, const float *bias, gboolean clamp,
                                 float lo, float hi);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftPackedFilter, graft_packed_filter_free)

G_END_DECLS
