#include "runtime/kernels/kernel-table.h"

/* [level][AMX usable]: AMX only ever with AVX-512 (graft_simd_has_amx_int8) */
static GraftKernelTable tables[GRAFT_SIMD_N_LEVELS][2];

static void
fill (GraftKernelTable *t, GraftSimdLevel level, gboolean amx)
{
  t->level = level;
  t->avx2 = level >= GRAFT_SIMD_AVX2;
  t->avx512 = level >= GRAFT_SIMD_AVX512;
  t->vnni = level >= GRAFT_SIMD_AVX512 && graft_simd_cpu_has_avx512_vnni ();
  t->amx = amx && level >= GRAFT_SIMD_AVX512;
  t->packed_gemm = graft_packed_gemm_isas[level];
  t->packed_gemm_bf16 = level >= GRAFT_SIMD_AVX512 && graft_simd_cpu_has_avx512_bf16 () ? graft_packed_gemm_bf16_isa : NULL;
  t->conv_gemm = graft_conv_gemm_isas[level];
  t->conv_gemm_bf16 = level >= GRAFT_SIMD_AVX512 && graft_simd_cpu_has_avx512_bf16 () ? graft_conv_gemm_bf16_isa : NULL;
  t->pointwise = graft_pointwise_isas[level];
  t->winograd = graft_winograd_isas[level];
}

const GraftKernelTable *
graft_kernel_table (void)
{
  static gsize filled = 0;

  if (g_once_init_enter (&filled))
    {
      for (int level = 0; level < GRAFT_SIMD_N_LEVELS; level++)
        for (int amx = 0; amx < 2; amx++)
          fill (&tables[level][amx], level, amx);
      g_once_init_leave (&filled, 1);
    }
  GraftSimdLevel level = graft_simd_get_level ();
  return &tables[level][level >= GRAFT_SIMD_AVX512 && graft_simd_has_amx_int8 () ? 1 : 0];
}
