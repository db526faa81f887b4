/* Depthwise 2-D convolution (group == C == M) with AVX-512 or AVX2+FMA.
 *
 * Every vector of 16 output pixels sums all its taps in registers and
 * reads x in place: masked loads supply the zero padding at the ends of a
 * row, a horizontal stride of 2 picks the even lanes of two loads, and
 * rows above or below the input drop out of the tap list. The input
 * plane is never copied, which is what the portable kernel in conv.c
 * spends most of its time on. */
#pragma once

#include "runtime/op.h"
#include "runtime/kernels/window.h"

G_BEGIN_DECLS

#define GRAFT_CONV_DEPTHWISE_MAX_TAPS 64

/* TRUE when the SIMD level (runtime/simd.h) is AVX2 or AVX-512 and w is a 2-D window of at most GRAFT_CONV_DEPTHWISE_MAX_TAPS
 * taps with a horizontal stride of 1 or 2. */
gboolean graft_conv_depthwise_supports (const GraftWindow *w);

/* x [N, C, H, W], weight [C, 1, KH, KW], bias [C] or NULL, y [N, C, OH, OW];
 * y = clamp (conv (x) + bias, lo, hi) (±INFINITY for no clamp). ctx may be
 * NULL (one thread). */
void graft_conv_depthwise (GraftKernelContext *ctx, const float *x, const float *weight, const float *bias, float *y,
                           gint64 N, gint64 C, const GraftWindow *w, float lo, float hi);

/* A window prepared for many calls on planes of its shape (the lane masks
 * worked out once): graft_conv_depthwise is plan_new, one plan_run over
 * every plane, plan_free. w must be supported.
 * graft_conv_depthwise itself makes its plans for the weights too: on
 * small maps and strided narrow rows (where it pays, see blocked_pays)
 * they run blocks of 16 (AVX-512) or 8 (AVX2) channels transposed into a
 * zero-padded channels-last map, every tap one whole-vector multiply-add,
 * the weights laid out per block once. Plans from plan_new have no
 * weights and keep the row kernels; plan_run on a plan made for weights
 * (conv-fused.c's bands, whose blocks of channels start at any multiple
 * of 8, with the weights offset per call) takes the channel blocks when
 * the call's weights start one of the plan's blocks, else the row
 * kernels. */
typedef struct _GraftDepthwisePlan GraftDepthwisePlan;
GraftDepthwisePlan *graft_conv_depthwise_plan_new (const GraftWindow *w);
void graft_conv_depthwise_plan_free (GraftDepthwisePlan *plan);

/* Planes [0, planes) of x, x_plane floats apart, into those of y, y_plane
 * apart; plane p is channel p % C (weight [C, 1, KH, KW], bias [C] or
 * NULL); clamp as graft_conv_depthwise. ctx NULL: in this thread. */
void graft_conv_depthwise_plan_run (GraftKernelContext *ctx, const GraftDepthwisePlan *plan, const float *x,
                                    gint64 x_plane, const float *weight, const float *bias, float *y, gint64 y_plane,
                                    gint64 planes, gint64 C, float lo, float hi);

/* A plan for w and the weights weight [C, 1, KH, KW] (borrowed: they must
 * outlive the plan), the blocked kernel where it pays; run it with
 * graft_conv_depthwise_run. */
GraftDepthwisePlan *graft_conv_depthwise_plan_new_for_weights (const GraftWindow *w, const float *weight, gint64 C);
/* Whether plan was made for the current SIMD level (runtime/simd.h). */
gboolean graft_conv_depthwise_plan_is_current (const GraftDepthwisePlan *plan);
/* graft_conv_depthwise with a plan for its weights (C as made for). */
void graft_conv_depthwise_run (GraftKernelContext *ctx, const GraftDepthwisePlan *plan, const float *x,
                               const float *bias, float *y, gint64 N, gint64 C, float lo, float hi);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftDepthwisePlan, graft_conv_depthwise_plan_free)

G_END_DECLS
