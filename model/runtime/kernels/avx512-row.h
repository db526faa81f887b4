/* Masked AVX-512 reads of one row of floats, shared by the convolution
 * kernels. Include inside a `#pragma GCC target ("avx512f")` region,
 * after <immintrin.h>. */
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

/* lane i = row[q + i·sw] for sw 1 or 2, fill where that column is outside
 * [0, W); columns outside are never read. */
static inline __m512
graft_load_row16_fill (const float *row, gint64 q, gint64 W, gint64 sw, __m512 fill)
{
  __m512 v = _mm512_mask_loadu_ps (fill, graft_lane_mask16 (-q, W - q), row + q);
  if (sw == 1)
    return v;
  const __m512i pick_even = _mm512_set_epi32 (30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  __m512 hi = _mm512_mask_loadu_ps (fill, graft_lane_mask16 (-q - 16, W - q - 16), row + q + 16);
  return _mm512_permutex2var_ps (v, pick_even, hi);
}

/* The same with zeros outside the row (convolution padding). */
static inline __m512
graft_load_row16 (const float *row, gint64 q, gint64 W, gint64 sw)
{
  return graft_load_row16_fill (row, q, W, sw, _mm512_setzero_ps ());
}
