/* The pointwise micro-kernel of conv-gemm.c (see PointwiseJob), written
 * once over a GCC vector type and included once per instruction set with:
 *   PW_V                  the vector type (vector_size of PW_LANES floats)
 *   PW_LANES              floats per vector
 *   PW_ROWS               filter rows per call (of a panel's ROWS) of the kernels of two and three vectors
 *   PW_TARGET             the function attribute enabling the ISA (may be empty)
 *   PW_MASK_T             a lane mask; PW_FIRST_LANES (n) the first n lanes (n clamped to 0..PW_LANES)
 *   PW_MASKED_LOAD (p, m) the masked lanes of p, zero elsewhere, as PW_V
 *   PW_MASKED_STORE (p, m, v)
 *   PW_CLAMP (v, lo, hi)  v clamped to [lo, hi], NaN kept (vmaxps/vminps return their second operand for NaN)
 *   PW_SUFFIX             appended to the function's name
 * It defines pointwise_kernel_<PW_SUFFIX>_{3, 3_masked, 2_masked, 1, 1_masked}
 * (PointwiseKernel, for 3, 3, 2, 1 and 1 vectors, the last masked or not;
 * the one of one vector takes a whole panel, ROWS rows: with fewer rows
 * its few accumulators would leave the multiply-adds waiting on each
 * other's latency) around pointwise_body_<PW_SUFFIX>: the tile [rows ≤ prows][n ≤
 * vecs·PW_LANES] of y at dst, rows ldd apart, = clamp (a [K][ROWS] (its
 * first prows rows) · b [K][vecs·PW_LANES] + bias[r] [+ res]), bias NULL
 * or [rows], res NULL or laid out as dst, straight from the accumulators:
 * no tile is written and read back. Columns from n on are never read (the
 * last vector's loads are masked when `masked`) nor written. */

/* Filter panels follow each other in memory, and a large filter (a
 * ResNet's last stages: 1 to 4 MB) comes from memory at each run, faster
 * than the hardware prefetchers bring it: each k step asks L2 for the
 * filter's line 4 KB ahead (128 k steps of a panel, or the next panel's
 * first ones). tv_resnet50 at batch 2, one thread, CPU ms per run: AVX2
 * 18.0 → 16.3, AVX-512 16.0 → 15.6; filters in L2 unchanged. */
#ifndef PW_AHEAD
#define PW_AHEAD 1024             /* floats */
#endif

#define PW_PASTE2(a, b) a##_##b
#define PW_PASTE(a, b) PW_PASTE2 (a, b)

static inline __attribute__ ((always_inline)) PW_TARGET void
PW_PASTE (pointwise_body, PW_SUFFIX) (gint64 K, const float *a, const float *b, gint64 ldb, float *dst,
                                      const float *res, gint64 ldd, const float *bias, int rows, gint64 n,
                                      gboolean clamp, float lo, float hi, const int vecs, const gboolean masked,
                                      const int prows)
{
  /* every loop over rows and vectors unrolled, so that the accumulators
   * live in registers (a loop left rolled keeps them on the stack) */
  PW_V acc[ROWS][MAX_VECS];
#pragma GCC unroll 8
  for (int r = 0; r < prows; r++)
    for (int v = 0; v < vecs; v++)
      acc[r][v] = (PW_V) { 0 };
  PW_MASK_T last = PW_FIRST_LANES (n - (vecs - 1) * PW_LANES);
#pragma GCC unroll 4
  for (gint64 k = 0; k < K; k++, a += ROWS, b += ldb)
    {
      __builtin_prefetch (a + PW_AHEAD, 0, 2);
      PW_V bv[MAX_VECS];
      for (int v = 0; v < vecs; v++)
        {
          if (masked && v == vecs - 1)
            bv[v] = PW_MASKED_LOAD (b + v * PW_LANES, last);
          else
            memcpy (&bv[v], b + v * PW_LANES, sizeof (PW_V));
        }
#pragma GCC unroll 8
      for (int r = 0; r < prows; r++)
        {
          float s = a[r];
          for (int v = 0; v < vecs; v++)
            acc[r][v] += s * bv[v];
        }
    }
  /* only the last vector of a masked kernel is partial: the others are
   * loaded and stored whole (AVX2's masked stores, vmaskmovps, cost AMD
   * cores a dozen cycles each: with them, the epilogue of MobileNetV3's
   * 16 → 64 expansion took as long as its products) */
#pragma GCC unroll 8
  for (int r = 0; r < prows; r++)
#pragma GCC unroll 3
    for (int v = 0; v < vecs && r < rows; v++)
      {
        gboolean partial = masked && v == vecs - 1;
        PW_V out = acc[r][v] + (bias ? bias[r] : 0);
        float *to = dst + r * ldd + v * PW_LANES;
        if (res)
          {
            PW_V more;
            if (partial)
              more = PW_MASKED_LOAD (res + r * ldd + v * PW_LANES, last);
            else
              memcpy (&more, res + r * ldd + v * PW_LANES, sizeof (PW_V));
            out += more;
          }
        if (clamp)
          out = PW_CLAMP (out, lo, hi);
        if (partial)
          PW_MASKED_STORE (to, last, out);
        else
          memcpy (to, &out, sizeof (PW_V));
      }
}

#define PW_KERNEL(tag, vecs, masked, prows)                                                                               \
  static PW_TARGET GRAFT_HOT_LOOP __attribute__ ((noinline)) void PW_PASTE (PW_PASTE (pointwise_kernel, PW_SUFFIX), tag) ( \
    gint64 K, const float *a, const float *b, gint64 ldb, float *dst, const float *res, gint64 ldd,                  \
    const float *bias, int rows, gint64 n, gboolean clamp, float lo, float hi)                                        \
  {                                                                                                                    \
    PW_PASTE (pointwise_body, PW_SUFFIX) (K, a, b, ldb, dst, res, ldd, bias, rows, n, clamp, lo, hi, vecs, masked,   \
                                          prows);                                                                      \
  }
PW_KERNEL (3, 3, FALSE, PW_ROWS)
PW_KERNEL (3_masked, 3, TRUE, PW_ROWS)
PW_KERNEL (2_masked, 2, TRUE, PW_ROWS)
PW_KERNEL (1, 1, FALSE, ROWS)
PW_KERNEL (1_masked, 1, TRUE, ROWS)
#undef PW_KERNEL

#undef PW_V
#undef PW_LANES
#undef PW_ROWS
#undef PW_TARGET
#undef PW_MASK_T
#undef PW_FIRST_LANES
#undef PW_MASKED_LOAD
#undef PW_MASKED_STORE
#undef PW_CLAMP
#undef PW_SUFFIX
