/* Which kernel of each family runs, chosen in one place as onnxruntime's
 * MLAS platform does: one table per SIMD level (with AMX and without),
 * filled once from the variants the families offer per level; kernels read
 * graft_kernel_table (), never the level. The level follows the cap
 * (graft_simd_set_max_level, GRAFT_SIMD, runtime/simd.h), so tests still
 * run every slower variant against the same reference. */
#pragma once

#include <glib.h>

#include "runtime/simd.h"

G_BEGIN_DECLS

#define GRAFT_SIMD_N_LEVELS (GRAFT_SIMD_AVX512 + 1)

typedef struct _GraftPackedGemmIsa GraftPackedGemmIsa;     /* gemm-packed.c */
typedef struct _GraftConvGemmIsa GraftConvGemmIsa;         /* conv-gemm.c */
typedef struct _GraftPointwiseIsa GraftPointwiseIsa;       /* conv-gemm.c */
typedef struct _GraftWinogradIsa GraftWinogradIsa;         /* conv-winograd.c */

typedef struct {
  GraftSimdLevel level;        /* the row routines of vector-math.c switch on it */
  gboolean avx2;               /* the AVX2 + FMA paths may run */
  gboolean avx512;             /* the AVX-512F paths may run */
  gboolean vnni;               /* AVX-512 VNNI byte products (vpdpbusd) */
  gboolean amx;                /* AMX-INT8 tiles */
  const GraftPackedGemmIsa *packed_gemm;
  /* bfloat16 products of a packed matrix (AVX512_BF16), for runs at
   * GRAFT_PRECISION_BF16; NULL: none at this level or on this CPU */
  const GraftPackedGemmIsa *packed_gemm_bf16;
  const GraftConvGemmIsa *conv_gemm;     /* NULL: no packed convolution at this level */
  /* the same over bfloat16 pairs (AVX512_BF16), for runs at
   * GRAFT_PRECISION_BF16; NULL: none at this level or on this CPU */
  const GraftConvGemmIsa *conv_gemm_bf16;
  const GraftPointwiseIsa *pointwise;    /* NULL: as conv_gemm */
  const GraftWinogradIsa *winograd;
} GraftKernelTable;

/* The variants each family offers, by level (NULL: none at that level). */
extern const GraftPackedGemmIsa *const graft_packed_gemm_isas[GRAFT_SIMD_N_LEVELS];
extern const GraftPackedGemmIsa *const graft_packed_gemm_bf16_isa;   /* AVX-512 level, AVX512_BF16 CPUs */
extern const GraftConvGemmIsa *const graft_conv_gemm_isas[GRAFT_SIMD_N_LEVELS];
extern const GraftConvGemmIsa *const graft_conv_gemm_bf16_isa;       /* AVX-512 level, AVX512_BF16 CPUs */
extern const GraftPointwiseIsa *const graft_pointwise_isas[GRAFT_SIMD_N_LEVELS];
extern const GraftWinogradIsa *const graft_winograd_isas[GRAFT_SIMD_N_LEVELS];

/* The table of the level the kernels may use now. */
const GraftKernelTable *graft_kernel_table (void);

G_END_DECLS
