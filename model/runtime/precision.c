#include "runtime/precision.h"

#include <string.h>

#include "ir/model-error.h"
#include "runtime/kernels/kernel-table.h"

gboolean
graft_precision_from_string (const char *text, GraftPrecision *precision)
{
  static const struct { const char *name; GraftPrecision precision; } names[] = {
    { "f32", GRAFT_PRECISION_F32 }, { "fp32", GRAFT_PRECISION_F32 }, { "float32", GRAFT_PRECISION_F32 },
    { "bf16", GRAFT_PRECISION_BF16 }, { "bfloat16", GRAFT_PRECISION_BF16 },
  };
  for (guint i = 0; text != NULL && i < G_N_ELEMENTS (names); i++)
    if (g_ascii_strcasecmp (text, names[i].name) == 0)
      {
        *precision = names[i].precision;
        return TRUE;
      }
  return FALSE;
}

gboolean
graft_precision_available (GraftPrecision precision, GError **error)
{
  if (precision == GRAFT_PRECISION_F32 || graft_kernel_table ()->packed_gemm_bf16 != NULL)
    return TRUE;
  if (!graft_simd_cpu_has_avx512_bf16 ())
    g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED,
                 "bf16 needs a CPU with AVX512_BF16 (bfloat16 dot products); this one computes in f32 only");
  else
    g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED,
                 "bf16 needs the AVX-512 kernels, and the SIMD level is capped at %s",
                 graft_simd_level_to_string (graft_simd_get_level ()));
  return FALSE;
}
