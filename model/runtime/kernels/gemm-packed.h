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

/* B [K, N] (rows ldb apart) in bf16 into storage of
 * graft_packed_b_bf16_bytes (K, N) that the caller keeps (a product's
 * right operand made at each call: a convolution's im2col matrix). */
gsize graft_packed_b_bf16_bytes (gint64 K, gint64 N);
GraftPackedB *graft_packed_b_new_bf16_in (gpointer storage, const float *b, gint64 K, gint64 N, gint64 ldb);

/* A [M, K] (rows lda apart) packed once in bf16 for the bf16 tiles (a
 * constant left operand); NULL when the CPU has none, or out of memory. */
typedef struct _GraftPackedA GraftPackedA;
GraftPackedA *graft_packed_a_new_bf16 (const float *a, gint64 M, gint64 K, gint64 lda);
gboolean graft_packed_a_matches (const GraftPackedA *packed, gint64 M, gint64 K);
void graft_packed_a_free (GraftPackedA *packed);
/* What a tile of C gets once its sums are complete: row i's bias, then
 * the clamp to [lo, hi] (a convolution's per-channel bias and fused Relu). */
typedef struct {
  const float *row_bias;          /* [M] or NULL */
  gboolean clamp;
  float lo, hi;
} GraftGemmEpilogue;
/* C [M, N] (+)= A · B, both packed in bf16, float32 sums, then the
 * epilogue (NULL: none) on each finished tile. FALSE when the kernel
 * table has no bf16 tiles. */
gboolean graft_packed_gemm_bf16 (GraftKernelContext *ctx, const GraftPackedA *a, const GraftPackedB *b, float *c,
                                 gint64 ldc, gboolean accumulate, const GraftGemmEpilogue *epilogue);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftPackedA, graft_packed_a_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftPackedB, graft_packed_b_free)

G_END_DECLS
