/* float32 GEMM against a B packed once (a constant weight): C = A · B with
 * Graft's own AVX-512, AVX2+FMA and portable micro-kernels.
 *
 * OpenBLAS repacks B on every call, which for a transformer's weights is
 * as much memory traffic as the product at small M; packing a constant B
 * once per session (kept by the engine with the node's step, as
 * conv-gemm.h keeps packed filters) saves that. */
#pragma once

#include "runtime/op.h"

G_BEGIN_DECLS

typedef struct _GraftPackedB GraftPackedB;

/* B [K, N] with rows ldb apart, or, when transposed, Bᵀ stored as [N, K]
 * with rows ldb apart. NULL when out of memory. */
GraftPackedB *graft_packed_b_new (const float *b, gint64 K, gint64 N, gint64 ldb, gboolean transposed);
/* The same in bfloat16 (rounded to nearest even), for the AVX512_BF16
 * tiles: products of bfloat16 pairs summed in float32. */
GraftPackedB *graft_packed_b_new_bf16 (const float *b, gint64 K, gint64 N, gint64 ldb, gboolean transposed);
void graft_packed_b_free (GraftPackedB *packed);
/* The packed form of b, cached on the node when b is one of its constant
 * inputs (then borrowed); else *owned holds it (free it). A constant b is
 * packed in bf16 when the run's precision is bf16 and the kernel table
 * has bf16 tiles. NULL when out of memory. */
const GraftPackedB *graft_packed_b_for (GraftKernelContext *ctx, const float *b, gint64 K, gint64 N, gint64 ldb,
                                        gboolean transposed, GraftPackedB **owned);

/* C [M, N] (rows ldc apart) = A [M, K] (rows lda apart) · B, plus C's own
 * values when accumulate, or plus bias ([N], added to every row; NULL:
 * none; not with accumulate) — the sums start from it, in the order a C
 * holding it and accumulated into would give, without that pass over C.
 * Runs with the micro-kernels of the SIMD level (runtime/simd.h) over the
 * worker pool of ctx (which may be NULL: one thread). FALSE, with C
 * untouched, when out of memory (A is copied). */
/* (A is rounded to bfloat16 as it is packed when b is.) FALSE too when b
 * is bf16 and the kernel table has no bf16 tiles. */
gboolean graft_packed_gemm (GraftKernelContext *ctx, gint64 M, const float *a, gint64 lda, const GraftPackedB *b,
                            float *c, gint64 ldc, gboolean accumulate, const float *bias);

/* The bytes of B [K, N] packed in bf16. */
gsize graft_packed_b_bf16_bytes (gint64 K, gint64 N);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftPackedB, graft_packed_b_free)

G_END_DECLS
