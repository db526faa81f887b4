/* float32 group normalisation, shared by the ONNX InstanceNormalization
 * and GroupNormalization kernels, the fused exported GroupNorm
 * (graft::GroupNorm) and aten::group_norm. */
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

G_END_DECLS
