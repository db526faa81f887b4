/* 2-D max and average pooling with AVX-512 or AVX2, separably: per
 * output row, the max (sum) over the window's rows into a row padded with
 * -inf (zeros), then over each window's columns of it, 16 (8) outputs per
 * vector (a horizontal stride of 2 picks the even lanes of two loads).
 * Max: same NaN rule as the portable loop in pool.c, a NaN input never
 * wins. Average: the sum times 1/(rows counted · columns counted), the
 * count of a window being the product of its rows' and its columns'
 * (with count_include_pad, those inside the pads; ceil_mode's overhang
 * past them counts neither way), summed in float where the portable loop
 * sums in double. */
#pragma once

#include "runtime/op.h"
#include "runtime/kernels/window.h"

G_BEGIN_DECLS

/* TRUE when the SIMD level is AVX2 or AVX-512 and w is 2-D, undilated,
 * with a horizontal stride of 1 or 2. */
gboolean graft_pool2d_separable_supports (const GraftWindow *w);

/* x [planes, H, W] → y [planes, OH, OW]; ctx may be NULL (one thread). */
void graft_max_pool2d (GraftKernelContext *ctx, const float *x, float *y, gint64 planes, const GraftWindow *w);
void graft_avg_pool2d (GraftKernelContext *ctx, const float *x, float *y, gint64 planes, const GraftWindow *w,
                       gboolean count_include_pad);

G_END_DECLS
