/* 3-D convolutions (NCDHW) through the 2-D convolution paths.
 *
 * The depth taps of a window become input channels: output depth od of
 * image n is the 2-D convolution over (H, W) of the C·KD planes
 * x [n, c, od·sd + kd·dd - pd] (zero where that depth is padding), plane
 * c·KD + kd, with the weights [M, C/g, KD, KH, KW] read where they lie
 * as [M, C/g·KD, KH, KW]. Those planes, gathered for every (n, od), are
 * one 2-D convolution of N·OD images that Winograd, the packed GEMM or
 * the small-map kernels compute with bias, residual and clamp in their
 * epilogue (see conv-3d.c). */
#pragma once

#include "runtime/op.h"
#include "runtime/kernels/window.h"

G_BEGIN_DECLS

/* w is a 3-D window graft_conv3d_f32 takes: every axis has an input,
 * an output and a tap. */
gboolean graft_conv3d_supports (const GraftWindow *w);

/* x [N, C, D, H, W], weight [M, C/group, KD, KH, KW], bias [M] or NULL,
 * y [N, M, OD, OH, OW], residual y's shape or NULL (added before the
 * clamp the engine fused); w a window graft_conv3d_supports takes. ctx may be NULL (no threads). */
gboolean graft_conv3d_f32 (GraftKernelContext *ctx, const float *x, const float *weight, const float *bias, float *y,
                           gint64 N, gint64 C, gint64 M, gint64 group, const GraftWindow *w, const float *residual,
                           GError **error);

G_END_DECLS
