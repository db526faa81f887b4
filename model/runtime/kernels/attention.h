/* The blocked attention of graft::ScaledDotProductAttention (attention.c)
 * for aten::scaled_dot_product_attention (aten-nn.c), so that a PyTorch
 * file's attention runs on the kernel its ONNX export's fused pattern
 * runs on. */
#pragma once

#include "runtime/kernels/kernel-util.h"

G_BEGIN_DECLS

/* softmax (q kᵀ · scale + mask [causal]) v into ctx's output 0, a block
 * of queries at a time: q [.., L, E], k [.., S, E], v [.., S, Ev], a
 * float32 mask broadcasting to [.., L, S] or NULL. *declined (TRUE, and
 * no output) for what it does not take: other types, batch dims that
 * differ, a mask with -inf, the portable SIMD level. */
gboolean graft_attention_sdpa_blocked (GraftKernelContext *ctx, const GraftRtTensor *q, const GraftRtTensor *k,
                                       const GraftRtTensor *v, const GraftRtTensor *mask, float scale,
                                       gboolean causal, gboolean *declined, GError **error);

G_END_DECLS
