/* The micro-kernel of gemm-packed.c, written once over a GCC vector type
 * and included once per instruction set with:
 *   GP_V         the vector type (vector_size of GP_LANES floats)
 *   GP_LANES     floats per vector
 *   GP_MAX_ROWS  rows of the largest tile
 *   GP_MAX_VECS  vectors per tile row
 *   GP_SUFFIX    appended to the function's name
 * It defines tile_body_<GP_SUFFIX>: tile [rows][vecs·GP_LANES] of C (+)=
 * rows of A, packed as [K][GP_MAX_ROWS] (or, when direct, read where they
 * are, lda floats apart), · a K-slice of packed B, whose
 * columns are in panels of GP_PANEL floats, pstride floats apart; when not
 * accumulating, the sums start from bias (the tile's columns of a row
 * added to every row) if it is not NULL. prefetch_lines lines of B's
 * next slice from prefetch on are asked into L2: spread over the k steps
 * when GP_SPREAD_PREFETCH is defined, else all before them. */

#define GP_PASTE2(a, b) a##_##b
#define GP_PASTE(a, b) GP_PASTE2 (a, b)

static inline __attribute__ ((always_inline)) void
GP_PASTE (tile_body, GP_SUFFIX) (gint64 K, const float *a, const float *b, gint64 pstride, float *c, gint64 ldc,
                                 gboolean accumulate, const float *bias, const float *prefetch,
                                 gint64 prefetch_lines, const int rows, const int vecs, const int direct,
                                 gint64 lda)
{
  /* The loops over the tile's rows and vectors are unrolled by pragma:
   * left to GCC's later passes, the sums were built on the stack, loaded
   * from there before the k steps and stored there after them (96 zmm
   * moves a 12 × 32 tile, about a tenth of a 16-deep tile's time). They
   * start from C's rows, the bias row for each row, or zeros. */
  static const float zeros[GP_MAX_VECS * GP_LANES];
  const float *start = accumulate ? c : bias ? bias : zeros;
  gint64 start_ld = accumulate ? ldc : 0;
  GP_V acc[GP_MAX_ROWS][GP_MAX_VECS];
#pragma GCC unroll 16
  for (int r = 0; r < rows; r++)
#pragma GCC unroll 4
    for (int v = 0; v < vecs; v++)
      memcpy (&acc[r][v], start + r * start_ld + v * GP_LANES, sizeof (GP_V));
  /* a k step: the tile's rows of A broadcast against the B line */
#define GP_STEP() \
  do \
    { \
      GP_V bv[GP_MAX_VECS]; \
      _Pragma ("GCC unroll 4") \
      for (int v = 0; v < vecs; v++) \
        memcpy (&bv[v], b + (v * GP_LANES / GP_PANEL) * pstride + (v * GP_LANES) % GP_PANEL, sizeof (GP_V)); \
      _Pragma ("GCC unroll 16") \
      for (int r = 0; r < rows; r++) \
        { \
          float s = direct ? a[r * lda] : a[r]; \
          _Pragma ("GCC unroll 4") \
          for (int v = 0; v < vecs; v++) \
            acc[r][v] += s * bv[v]; \
        } \
      b += GP_PANEL; \
      a += direct ? 1 : GP_MAX_ROWS; \
    } \
  while (0)
  gint64 k = 0;
#ifdef GP_SPREAD_PREFETCH
  /* the prefetches spread over groups of four k steps, a few lines each */
  gint64 groups = K / 4;
  gint64 per_group = groups > 0 ? (prefetch_lines + groups - 1) / groups : 0;
  for (; k + 4 <= K; k += 4)
    {
      for (gint64 j = 0; j < per_group && prefetch_lines > 0; j++, prefetch_lines--, prefetch += GP_PANEL)
        __builtin_prefetch (prefetch, 0, 2);
      GP_STEP ();
      GP_STEP ();
      GP_STEP ();
      GP_STEP ();
    }
#else
  /* all at once, before the k steps */
  for (; prefetch_lines > 0; prefetch_lines--, prefetch += GP_PANEL)
    __builtin_prefetch (prefetch, 0, 2);
#endif
#pragma GCC unroll 4
  for (; k < K; k++)
    GP_STEP ();
#undef GP_STEP
  for (; prefetch_lines > 0; prefetch_lines--, prefetch += GP_PANEL)
    __builtin_prefetch (prefetch, 0, 2);
#pragma GCC unroll 16
  for (int r = 0; r < rows; r++)
#pragma GCC unroll 4
    for (int v = 0; v < vecs; v++)
      memcpy (c + r * ldc + v * GP_LANES, &acc[r][v], sizeof (GP_V));
}

#undef GP_V
#undef GP_LANES
#undef GP_MAX_ROWS
#undef GP_MAX_VECS
#undef GP_SUFFIX
#undef GP_SPREAD_PREFETCH
