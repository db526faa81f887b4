/* Convolutions of few input channels: a network's stem (an RGB image,
 * 3×3 at stride 2) straight from the input, pixels in the lanes.
 *
 * The packed GEMM (conv-gemm.c) gathers im2col (x) panel by panel (per
 * output row where the stride leaves the output narrower than the phase
 * planes, as a stem without padding does), multiplies a K of only C·KH·KW
 * = 27 into a tile and copies the tile to y: the gather and the copy
 * took as long as the products. Here x is laid out once, zero-padded,
 * in planes per column phase of the stride (phase p holds the padded
 * columns p, p + s, p + 2s, …), so that every tap of every output vector
 * is one unmasked load at a fixed offset; the sums of a few vectors of a
 * row times a panel of filter rows stay in registers over all taps, and
 * go to y with bias, residual and clamp straight from them. */
#pragma once

#include "runtime/kernels/conv-gemm.h"

G_BEGIN_DECLS

/* TRUE when the SIMD level has the kernels (AVX2 or AVX-512) and the
 * convolution is a stem they take: ungrouped, 2-D, at most
 * GRAFT_CONV_STEM_MAX_CHANNELS input channels, C·KH·KW at most
 * GRAFT_CONV_STEM_MAX_TAPS, a column stride of at most 4. */
#define GRAFT_CONV_STEM_MAX_CHANNELS 4
#define GRAFT_CONV_STEM_MAX_TAPS 64
gboolean graft_conv_stem_pays (const GraftWindow *w, gint64 C, gint64 M, gint64 group);

/* y = clamp (conv (x) + bias [+ residual]) for a convolution that
 * graft_conv_stem_pays takes, filter its weights packed for the GEMM
 * (graft_packed_filter_new, group 1, K = C·KH·KW); ctx may be NULL (one
 * thread). */
gboolean graft_conv_stem (GraftKernelContext *ctx, const GraftPackedFilter *filter, const GraftConvGemmArgs *args,
                          GError **error);

/* even[j] = row[2j], odd[j] = row[2j + 1] for j < n (a row into the
 * column phases of a stride of 2), with AVX2 where the SIMD level has it. */
void graft_conv_split_pairs (const float *row, gint64 n, float *even, float *odd);

G_END_DECLS
