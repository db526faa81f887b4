/* float32 normalisation shared by the ONNX kernels and aten's: group
 * normalisation (InstanceNormalization, GroupNormalization, the fused
 * exported GroupNorm graft::GroupNorm, aten::group_norm) and layer
 * normalisation's rows (LayerNormalization, aten::layer_norm). */
#pragma once

#include "runtime/kernels/kernel-util.h"

G_BEGIN_DECLS

/* float32 [N, C, spatial] in groups of C / groups whole channels (one
 * channel each for InstanceNormalization): each group's mean and
 * 1/sqrt(var + eps) (graft_vm_moments), then per channel one pass of
 * y = (x - mean)·a + b [then SiLU] folding the normalisation with an optional
 * per-group affine (InstanceNormalization's scale and B, before the
 * GroupNorm's) and an optional per-channel one. */
typedef struct {
  const float *x;
  float *y;
  const float *group_scale, *group_bias;       /* `groups` values each, or NULL: 1 and 0 */
  const float *channel_scale, *channel_bias;   /* C values each, or NULL: 1 and 0 */
  gint64 C, groups, spatial;
  float eps;
  gboolean silu;
} GraftGroupNormJob;

/* Runs job over N samples, the N·groups groups in parallel. */
void graft_group_norm_f32 (GraftKernelContext *ctx, const GraftGroupNormJob *job, gint64 N);

/* float32 rows of count values: each row normalised over itself, times
 * scale plus bias (count values each, or NULL: 1 and 0), with the
 * vectorised rows of LayerNormalization, the rows in parallel (ctx NULL:
 * in this thread). x and y may be the same. */
void graft_layer_norm_rows_f32 (GraftKernelContext *ctx, const float *x, const float *scale, const float *bias,
                                float *y, gint64 rows, gint64 count, double eps);

G_END_DECLS
