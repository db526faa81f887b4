/* 2-D max pooling with AVX-512 or AVX2, separably: per output row, the
 * max over the window's rows into a row padded with -inf, then over each
 * window's columns of it, 16 (8) outputs per vector (a horizontal stride
 * of 2 picks the even lanes of two loads). Same NaN rule as the portable
 * loop in pool.c: a NaN input never wins. */
#pragma once

#include "runtime/op.h"
#include "runtime/kernels/window.h"

G_BEGIN_DECLS

/* TRUE when the SIMD level is AVX2 or AVX-512 and w is 2-D, undilated,
 * with a horizontal stride of 1 or 2. */
gboolean graft_max_pool2d_supports (const GraftWindow *w);

/* x [planes, H, W] → y [planes, OH, OW]; ctx may be NULL (one thread). */
void graft_max_pool2d (GraftKernelContext *ctx, const float *x, float *y, gint64 planes, const GraftWindow *w);

G_END_DECLS
