/* Which vector instructions the runtime's kernels may use: what the CPU
 * has, capped by GRAFT_SIMD=portable|avx2|avx512 in the environment (read
 * once) or by graft_simd_set_max_level. The cap lets one machine run and
 * test every slower variant of a kernel against the same reference. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
  GRAFT_SIMD_PORTABLE,
  GRAFT_SIMD_AVX2,      /* AVX2 and FMA */
  GRAFT_SIMD_AVX512,    /* AVX-512F (and AVX2, FMA) */
} GraftSimdLevel;

/* What this CPU can run, whatever the cap. */
GraftSimdLevel graft_simd_cpu_level (void);
/* What the kernels may use now: the lower of the CPU's level and the cap. */
GraftSimdLevel graft_simd_get_level (void);
/* Whether this CPU has AVX-512 VNNI (vpdpbusd: four u8 × s8 products into
 * each int32 lane), whatever the cap; kernels read it from their table
 * (kernels/kernel-table.h), where the level allows AVX-512. */
gboolean graft_simd_cpu_has_avx512_vnni (void);
/* Whether this CPU has AVX512_BF16 (vdpbf16ps: pairs of bfloat16 products
 * into each float lane), whatever the cap; as VNNI, kernels read it from
 * their table where the level allows AVX-512. */
gboolean graft_simd_cpu_has_avx512_bf16 (void);
/* AMX-INT8 (tdpbsud: a 16 × 16 int32 tile of 64-deep byte products per
 * instruction): where the level allows AVX-512, AMX is not turned off
 * (GRAFT_AMX=0 in the environment, read once),
 * the CPU has it and the kernel lets this process use the tile
 * registers (Linux asks for that once, arch_prctl ARCH_REQ_XCOMP_PERM). */
gboolean graft_simd_has_amx_int8 (void);
/* Caps the level; GRAFT_SIMD_AVX512 lifts the cap. */
void graft_simd_set_max_level (GraftSimdLevel level);

const char *graft_simd_level_to_string (GraftSimdLevel level);
gboolean graft_simd_level_from_string (const char *text, GraftSimdLevel *level);

G_END_DECLS
