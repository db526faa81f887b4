/* Masked AVX-512 reads of one row of floats, shared by the convolution
 * kernels. Include inside a GRAFT_TARGET_AVX512_BEGIN region
 * (simd-target.h). */
#pragma once

#include <glib.h>

/* Lanes [from, to) of 16 (empty when to <= from). */
static inline __mmask16
graft_lane_mask16 (gint64 from, gint64 to)
{
  from = MAX (from, 0);
  to = MIN (to, 16);
  return to <= from ? 0 : (__mmask16) (((1u << to) - 1) & ~((1u << from) - 1));
}

/* The even (odd) lanes of lo followed by those of hi: floats 0, 2, … 30
 * (1, 3, … 31) of the 32 in lo, hi. */
static inline __m512
graft_even_lanes16 (__m512 lo, __m512 hi)
{
  const __m512i even = _mm512_set_epi32 (30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  return _mm512_permutex2var_ps (lo, even, hi);
}

static inline __m512
graft_odd_lanes16 (__m512 lo, __m512 hi)
{
  const __m512i odd = _mm512_set_epi32 (31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  return _mm512_permutex2var_ps (lo, odd, hi);
}

/* lane i = p[i·sw] for sw 1 or 2, reading only the lanes of lo_mask
 * (of p[0..16)) and, for sw 2, of hi_mask (of p[16..32)); fill elsewhere. */
static inline __m512
graft_load_strided16 (const float *p, __mmask16 lo_mask, __mmask16 hi_mask, gint64 sw, __m512 fill)
{
  __m512 v = _mm512_mask_loadu_ps (fill, lo_mask, p);
  return sw == 1 ? v : graft_even_lanes16 (v, _mm512_mask_loadu_ps (fill, hi_mask, p + 16));
}

/* lane i = row[q + i·sw] for sw 1 or 2, fill where that column is outside
 * [0, W); columns outside are never read. */
static inline __m512
graft_load_row16_fill (const float *row, gint64 q, gint64 W, gint64 sw, __m512 fill)
{
  return graft_load_strided16 (row + q, graft_lane_mask16 (-q, W - q), graft_lane_mask16 (-q - 16, W - q - 16), sw,
                               fill);
}

/* The same with zeros outside the row (convolution padding). */
static inline __m512
graft_load_row16 (const float *row, gint64 q, gint64 W, gint64 sw)
{
  return graft_load_row16_fill (row, q, W, sw, _mm512_setzero_ps ());
}
