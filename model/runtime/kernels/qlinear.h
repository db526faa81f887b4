/* Integer (8-bit quantized) products shared by ConvInteger, QLinearConv,
 * MatMulInteger, QLinearMatMul and com.microsoft's QGemm: operands with
 * their zero points subtracted are int16, products summed exactly in
 * int32, then either kept (the *Integer ops) or requantized. */
#pragma once

#include "runtime/op.h"

G_BEGIN_DECLS

/* c[i·ldc + j] = Σ_k a[i·K + k] · b[k·N + j] for an M×K a and a K×N b.
 * Exact for operands in [-255, 255] and K up to 2^15. Splits over ctx's
 * threads when ctx is not NULL; uses the widest SIMD level allowed
 * (runtime/simd.h). */
void graft_qgemm_s16 (GraftKernelContext *ctx, gint64 M, gint64 N, gint64 K, const gint16 *a, const gint16 *b,
                      gint32 *c, gint64 ldc);

/* The same product for signed bytes a, |a| ≤ 64, and unsigned bytes b, through
 * vpmaddubsw at the AVX2 level (exact only within that bound, which the
 * caller checks). */
void graft_qgemm_u8s8 (GraftKernelContext *ctx, gint64 M, gint64 N, gint64 K, const gint8 *a, const guint8 *b,
                       gint32 *c, gint64 ldc);

/* The kernels of ConvInteger (requantize FALSE) and QLinearConv (TRUE). */
gboolean graft_conv_integer_run (GraftKernelContext *ctx, gboolean requantize, GError **error);
/* The kernel of graft::ConvIntegerToFloat (see runtime/fusion-patterns.h). */
gboolean graft_conv_integer_to_float_run (GraftKernelContext *ctx, GError **error);
/* The kernels of MatMulInteger (requantize FALSE) and QLinearMatMul (TRUE). */
gboolean graft_matmul_integer_run (GraftKernelContext *ctx, gboolean requantize, GError **error);

G_END_DECLS
