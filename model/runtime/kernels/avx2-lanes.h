/* Lane masks and the even-lane shuffle of the AVX2 kernels, shared (the
 * AVX-512 ones are in avx512-row.h); empty where the build has no x86
 * SIMD. */
#pragma once

#include <glib.h>

#include "runtime/kernels/simd-target.h"

#ifdef GRAFT_HAVE_X86_SIMD

/* The lanes below n of 8, as vmaskmovps takes them (n may be ≤ 0 or > 8). */
static inline GRAFT_TARGET_AVX2_FMA __m256i
graft_first_lanes8 (gint64 n)
{
  return _mm256_cmpgt_epi32 (_mm256_set1_epi32 ((gint32) CLAMP (n, 0, 8)), _mm256_setr_epi32 (0, 1, 2, 3, 4, 5, 6, 7));
}

/* Floats 0, 2 … 14 of the 16 in lo, hi: in-lane pairs
 * (lo0 lo2 hi0 hi2 | lo4 lo6 hi4 hi6), then the 64-bit halves in order. */
static inline GRAFT_TARGET_AVX2_FMA __m256
graft_even_lanes8 (__m256 lo, __m256 hi)
{
  __m256 pairs = _mm256_shuffle_ps (lo, hi, _MM_SHUFFLE (2, 0, 2, 0));
  return _mm256_castpd_ps (_mm256_permute4x64_pd (_mm256_castps_pd (pairs), _MM_SHUFFLE (3, 1, 2, 0)));
}

#endif
