/* Grouped convolutions with few channels per group (RegNet's 3×3 of 8
 * channels a group, ResNeXt's) with the group's output channels in the
 * vector lanes.
 *
 * The packed GEMM (conv-gemm.c) runs such a convolution group by group:
 * each group's K = Cg·KH·KW is only 72 for RegNet, and on a small map
 * every row of its im2col panel is gathered from a run of a few pixels
 * per output row and image, so the gathers, not the multiply-adds, are
 * its cost (RegNetY-400MF at 64×64, batch 2, AVX2: 0.17 ms for each 3×3
 * of a few hundred thousand products). Here each image's group planes are
 * copied once into planes padded by the window's padding, and for each
 * pixel every tap and input channel is a vector of filter values (one
 * block of 8 output channels) times the pixel's input value, broadcast
 * from the padded plane at a fixed offset: nothing is gathered, and a
 * block of pixels shares each filter vector. The sums go through a small
 * [pixel][channel] tile transposed into y, with bias, residual and
 * clamp. */
#pragma once

#include "runtime/kernels/conv-gemm.h"

G_BEGIN_DECLS

typedef struct _GraftGroupedConvFilter GraftGroupedConvFilter;

/* TRUE when the SIMD level has the kernels (AVX2 or AVX-512) and the
 * convolution is one they serve better than the packed GEMM (measured,
 * see conv-grouped.c): 2-D, grouped, a window of more than one tap and
 * none that reads only padding (graft_window_trim), up to 16 input
 * channels a group (32 on maps of up to 64 pixels), at least 4 output
 * channels a group (fewer than 8 only on maps of up to 1024 pixels). */
gboolean graft_conv_grouped_pays (const GraftWindow *w, gint64 N, gint64 C, gint64 M, gint64 group);

/* weight [group·Mg, Cg, KH, KW] packed in blocks of 8 output channels. */
GraftGroupedConvFilter *graft_grouped_conv_filter_new (const float *weight, gint64 group, gint64 Mg, gint64 Cg,
                                                       gint64 KH, gint64 KW);
void graft_grouped_conv_filter_free (GraftGroupedConvFilter *filter);
/* The packed filter of weight, cached on the node when weight is
 * constant. Borrowed when cached; else *owned holds it (free it). */
const GraftGroupedConvFilter *graft_grouped_conv_filter_for (GraftKernelContext *ctx, const float *weight,
                                                             gint64 group, gint64 Mg, gint64 Cg, gint64 KH,
                                                             gint64 KW, GraftGroupedConvFilter **owned);

/* y = clamp (conv (x) + bias [+ residual]) for a convolution that
 * graft_conv_grouped_pays takes; ctx may be NULL (one thread). */
gboolean graft_conv_grouped (GraftKernelContext *ctx, const GraftGroupedConvFilter *filter,
                             const GraftConvGemmArgs *args, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftGroupedConvFilter, graft_grouped_conv_filter_free)

G_END_DECLS
