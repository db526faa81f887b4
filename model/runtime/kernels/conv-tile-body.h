/* The tile micro-kernel of conv-gemm.c and conv-winograd.c, written once
 * over a GCC vector type and included once per instruction set with
 * ROWS (a's floats per k step) and MAX_VECS defined, and:
 *   TB_V       the vector type (vector_size of TB_LANES floats)
 *   TB_LANES   floats per vector
 *   TB_ROWS    filter rows per call (of a panel's ROWS)
 *   TB_SUFFIX  appended to the function's name
 * It defines tile_body_<TB_SUFFIX>: tile [TB_ROWS][vecs·TB_LANES], rows
 * ldt apart, (+)= a [K][ROWS] (its first TB_ROWS rows) · b [K][vecs·
 * TB_LANES]; prefetch_lines lines from prefetch on (lines of y that the
 * next pass writes, see OutputPrefetch) and a_lines lines from next_a
 * on (the filter panel multiplied next, see multiply_avx512) are asked
 * into L2 on the way, spread over the k steps. The loops must unroll
 * completely (accumulators in registers), hence O3 whatever the build
 * type (GRAFT_HOT_LOOP on the callers). */

#define TB_LINE_FLOATS 16         /* floats per 64-byte cache line */
#define TB_PASTE2(a, b) a##_##b
#define TB_PASTE(a, b) TB_PASTE2 (a, b)

static inline __attribute__ ((always_inline)) void
TB_PASTE (tile_body, TB_SUFFIX) (gint64 K, const float *a, const float *b, gint64 ldb, float *tile, gint64 ldt,
                                 gboolean accumulate, const float *prefetch, gint64 prefetch_lines, const float *next_a,
                                 gint64 a_lines, const int vecs)
{
  TB_V acc[TB_ROWS][MAX_VECS];
  for (int r = 0; r < TB_ROWS; r++)
    for (int v = 0; v < vecs; v++)
      {
        if (accumulate)
          memcpy (&acc[r][v], tile + r * ldt + v * TB_LANES, sizeof (TB_V));
        else
          acc[r][v] = (TB_V) { 0 };
      }
#define TB_STEP() \
  do \
    { \
      TB_V bv[MAX_VECS]; \
      for (int v = 0; v < vecs; v++) \
        memcpy (&bv[v], b + v * TB_LANES, sizeof (TB_V)); \
      for (int r = 0; r < TB_ROWS; r++) \
        { \
          float s = a[r]; \
          for (int v = 0; v < vecs; v++) \
            acc[r][v] += s * bv[v]; \
        } \
      a += ROWS; \
      b += ldb; \
    } \
  while (0)
  /* the prefetches spread over groups of four k steps, a few lines each */
  gint64 k = 0, groups = K / 4;
  gint64 per_group = groups > 0 ? (prefetch_lines + groups - 1) / groups : 0;
  gint64 a_per_group = groups > 0 ? (a_lines + groups - 1) / groups : 0;
  for (; k + 4 <= K && (prefetch_lines > 0 || a_lines > 0); k += 4)
    {
      for (gint64 j = 0; j < per_group && prefetch_lines > 0; j++, prefetch_lines--, prefetch += TB_LINE_FLOATS)
        __builtin_prefetch (prefetch, 0, 2);
      for (gint64 j = 0; j < a_per_group && a_lines > 0; j++, a_lines--, next_a += TB_LINE_FLOATS)
        __builtin_prefetch (next_a, 0, 2);
      TB_STEP ();
      TB_STEP ();
      TB_STEP ();
      TB_STEP ();
    }
  /* unrolled: the loop's own adds and branch off the multiply-adds' path (~5 % with AVX2) */
#pragma GCC unroll 4
  for (; k < K; k++)
    TB_STEP ();
#undef TB_STEP
  for (; prefetch_lines > 0; prefetch_lines--, prefetch += TB_LINE_FLOATS)
    __builtin_prefetch (prefetch, 0, 2);
  for (; a_lines > 0; a_lines--, next_a += TB_LINE_FLOATS)
    __builtin_prefetch (next_a, 0, 2);
  for (int r = 0; r < TB_ROWS; r++)
    for (int v = 0; v < vecs; v++)
      memcpy (tile + r * ldt + v * TB_LANES, &acc[r][v], sizeof (TB_V));
}

#undef TB_V
#undef TB_LANES
#undef TB_ROWS
#undef TB_SUFFIX
#undef TB_LINE_FLOATS
