/* Convolutions over small maps (YOLO's 2×2 to 8×8 neck and head at
 * 64×64 inputs) with the output channels in the vector lanes.
 *
 * The packed GEMM (conv-gemm.c) puts pixels in the lanes: a 2×2 map at
 * batch 2 fills half a zmm, a 4×4 one gathers every row of its im2col
 * panel from eight runs of four pixels, and the taps that read only
 * padding (5 of 9 per pixel on a 2×2 map) are multiplied like the
 * others. Here each vector holds a block of output channels, and for
 * every tap only the pixels it reads the map for take part: per tap and
 * input channel, a vector of filter values times each of those pixels'
 * input value, broadcast from x where it lies. Nothing is gathered and
 * no padding is multiplied; the sums go through a small [pixel][channel]
 * tile that starts at the bias and is transposed into y at the end, with
 * the residual and the clamp. */
#pragma once

#include "runtime/kernels/conv-gemm.h"

G_BEGIN_DECLS

typedef struct _GraftSmallConvFilter GraftSmallConvFilter;

/* TRUE when the SIMD level has the kernels (AVX2 or AVX-512) and the
 * convolution is one they serve better than the packed GEMM or
 * Winograd: ungrouped, 2-D, more than one tap, and few output pixels
 * over the batch. */
gboolean graft_conv_small_pays (const GraftWindow *w, gint64 N, gint64 C, gint64 M, gint64 group);

/* weight [M, C, KH, KW] packed for the current SIMD level's vectors. */
GraftSmallConvFilter *graft_small_conv_filter_new (const float *weight, gint64 M, gint64 C, gint64 KH, gint64 KW);
void graft_small_conv_filter_free (GraftSmallConvFilter *filter);
/* The packed filter of weight, cached on the node when weight is
 * constant. Borrowed when cached; else *owned holds it (free it). */
const GraftSmallConvFilter *graft_small_conv_filter_for (GraftKernelContext *ctx, const float *weight, gint64 M,
                                                         gint64 C, gint64 KH, gint64 KW, GraftSmallConvFilter **owned);

/* y = clamp (conv (x) + bias [+ residual]) for a convolution that
 * graft_conv_small_pays takes (group 1); ctx may be NULL (one thread). */
gboolean graft_conv_small (GraftKernelContext *ctx, const GraftSmallConvFilter *filter, const GraftConvGemmArgs *args,
                           GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftSmallConvFilter, graft_small_conv_filter_free)

G_END_DECLS
