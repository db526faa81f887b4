/* Sliding-window geometry shared by convolutions and pooling: strides,
 * dilations, explicit or automatic (SAME_UPPER/SAME_LOWER/VALID) padding,
 * ceil_mode, and ConvTranspose's output_shape/output_padding. */
#pragma once

#include "runtime/op.h"

G_BEGIN_DECLS

#define GRAFT_WINDOW_MAX_DIMS 8

typedef struct {
  int n;
  gint64 in[GRAFT_WINDOW_MAX_DIMS];
  gint64 out[GRAFT_WINDOW_MAX_DIMS];
  gint64 kernel[GRAFT_WINDOW_MAX_DIMS];
  gint64 stride[GRAFT_WINDOW_MAX_DIMS];
  gint64 dilation[GRAFT_WINDOW_MAX_DIMS];
  gint64 pad_begin[GRAFT_WINDOW_MAX_DIMS];
  gint64 pad_end[GRAFT_WINDOW_MAX_DIMS];
  gint64 output_padding[GRAFT_WINDOW_MAX_DIMS];
} GraftWindow;

/* a and b describe the same window (their first n axes: the rest of the
 * arrays is not set) */
static inline gboolean
graft_window_equal (const GraftWindow *a, const GraftWindow *b)
{
  if (a->n != b->n)
    return FALSE;
  for (int i = 0; i < a->n; i++)
    if (a->in[i] != b->in[i] || a->out[i] != b->out[i] || a->kernel[i] != b->kernel[i] ||
        a->stride[i] != b->stride[i] || a->dilation[i] != b->dilation[i] || a->pad_begin[i] != b->pad_begin[i] ||
        a->pad_end[i] != b->pad_end[i] || a->output_padding[i] != b->output_padding[i])
      return FALSE;
  return TRUE;
}

/* Outputs o in [*lo, *hi) of axis whose tap k reads inside the input:
 * 0 <= o·stride + k·dilation - pad_begin < in. */
static inline void
graft_window_inside (const GraftWindow *w, int axis, gint64 k, gint64 *lo, gint64 *hi)
{
  gint64 s = w->stride[axis], shift = k * w->dilation[axis] - w->pad_begin[axis];
  gint64 from = shift >= 0 ? 0 : (-shift + s - 1) / s;
  gint64 to = w->in[axis] - shift <= 0 ? 0 : (w->in[axis] - shift + s - 1) / s;
  *lo = MIN (from, w->out[axis]);
  *hi = CLAMP (to, *lo, w->out[axis]);
}

/* The taps [*lo, *hi] of axis d of w that read the input for some output
 * (the others only ever read padding); FALSE when none does. */
gboolean graft_window_taps_read (const GraftWindow *w, int d, gint64 *lo, gint64 *hi);

/* A 2-D window without the rows and columns of taps that read only
 * padding for every output: a dilation as wide as the map (DeepLabV3's
 * atrous pyramid, dilations 12-36 over a 4×4 map at small inputs, where
 * only the centre tap reads the map) leaves a smaller window over the
 * same outputs. FALSE when every tap reads (or none does); else
 * *trimmed gets that window and lo[] the first tap kept on each axis. */
gboolean graft_window_trim (const GraftWindow *w, GraftWindow *trimmed, gint64 lo[2]);

/* Reads strides/dilations/pads/auto_pad (and output_shape for transpose)
 * from node and computes the output size of every spatial axis. */
gboolean graft_window_geometry (GraftNode *node, int n_spatial, const gint64 *in, const gint64 *kernel,
                                gboolean transpose, gboolean ceil_mode, GraftWindow *window, GError **error);

/* Whether a convolution of these sizes computes in bf16 at
 * GRAFT_PRECISION_BF16 (where the CPU has it and the weights are constant):
 * an ungrouped 2-D one where that is faster than its f32 path (conv.c). */
gboolean graft_conv_bf16_pays (const GraftWindow *w, gint64 N, gint64 C, gint64 M, gint64 group);

/* float32 convolution (bf16 where the run asks for it and it pays):
 * x [N, C, in...], weight [M, C/group, kernel...], bias [M] or NULL,
 * y [N, M, out...], plus residual (y's shape, or NULL) before the clamp
 * the engine fused. ctx may be NULL (no threads). */
gboolean graft_conv2d_f32 (GraftKernelContext *ctx, const float *x, const float *weight, const float *bias,
                           float *y, gint64 N, gint64 C, gint64 M, gint64 group, const GraftWindow *window,
                           const float *residual, GError **error);
/* The residual the engine fused into this convolution (the other operand
 * of the Add that alone reads its output), taken (graft_kernel_take_residual)
 * when it is float32 of y's shape; NULL otherwise, and the Add runs. */
const float *graft_conv_take_residual (GraftKernelContext *ctx, const GraftRtTensor *y);

/* float32 transposed convolution: x [N, C, in...], weight [C, M/group,
 * kernel...], bias [M] or NULL, y [N, M, out...] with window's out sizes. */
gboolean graft_conv_transpose_f32 (const float *x, const float *weight, const float *bias, float *y, gint64 N,
                                   gint64 C, gint64 M, gint64 group, const GraftWindow *window, GError **error);

G_END_DECLS
