/* 3×3 stride-1 convolutions by Winograd's minimal filtering F(4×4, 3×3).
 *
 * Each 4×4 block of output pixels (a tile) is computed from the 6×6
 * input patch under it: the patch and the filter are transformed into
 * 36 values each (V = Bᵀ d B, U = G g Gᵀ), multiplied point by point and
 * summed over the input channels, and the 36 sums transformed back
 * (Y = Aᵀ M A). The sums over the channels are 36 matrix products
 * M_ξ [M, tiles] = U_ξ [M, C] · V_ξ [C, tiles], which take 36·M·C
 * multiply-adds per tile instead of the direct 144·M·C: 4× fewer. */
#pragma once

#include "runtime/kernels/conv-gemm.h"

G_BEGIN_DECLS

typedef struct _GraftWinogradFilter GraftWinogradFilter;

/* TRUE when w is a 3×3, stride-1, dilation-1 2-D window (any padding)
 * and group is 1: graft_conv_winograd computes it. */
gboolean graft_conv_winograd_supports (const GraftWindow *w, gint64 group);
/* Supported, and big enough for the transforms to pay against the packed
 * GEMM: at least 16 input channels (any output channels) and 8 tiles over
 * the batch,
 * and a transformed filter (4× the weights, cached for the session) small
 * enough for the tiles it serves. ResNet-18's 512-channel 7×7 layers at
 * batch 2 ran faster with Winograd, but their 38 MB filters each raised
 * the run's peak memory above onnxruntime's; they stay on conv-gemm. */
gboolean graft_conv_winograd_pays (const GraftWindow *w, gint64 N, gint64 C, gint64 M, gint64 group);

/* weight [M, C, 3, 3] transformed (in double precision) and packed. */
GraftWinogradFilter *graft_winograd_filter_new (const float *weight, gint64 M, gint64 C);
void graft_winograd_filter_free (GraftWinogradFilter *filter);
/* The transformed filter of weight, cached on the node when weight is
 * constant. Borrowed when cached; else *owned holds it (free it). */
const GraftWinogradFilter *graft_winograd_filter_for (GraftKernelContext *ctx, const float *weight, gint64 M,
                                                      gint64 C, GraftWinogradFilter **owned);

/* y = clamp (conv (x) + bias [+ residual]) for a window and group
 * graft_conv_winograd_supports takes; ctx may be NULL (one thread). */
gboolean graft_conv_winograd (GraftKernelContext *ctx, const GraftWinogradFilter *filter,
                              const GraftConvGemmArgs *args, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftWinogradFilter, graft_winograd_filter_free)

G_END_DECLS
