/* The tile kernels of conv-small.c, written once over a GCC vector type
 * and included once per instruction set with:
 *   SB_V           the vector type (vector_size of SB_LANES floats)
 *   SB_LANES       floats per vector: output channels per filter block
 *   SB_TARGET      the function attribute enabling the ISA (may be empty)
 *   SB_MAX_PIXELS  the most pixels of a call (P · 2 accumulators fit the registers)
 *   SB_SUFFIX      appended to the names
 * It defines small_tiles_<SB_SUFFIX>[V - 1][P - 1] (NULL past SB_MAX_PIXELS), the kernel of P
 * pixels and V filter blocks: for each pixel p, its V vectors of the
 * tile (at row at[p], rows ldt floats apart) += Σ_c w_v [c] · xs[p][c ·
 * plane], w_v = w + v · w_stride the block's [C][SB_LANES] filter values
 * of one tap. */

/* The filters of a network's last stages (a ResNet's 3×3 at 512
 * channels: 9 MB) come from memory at each run, faster than the hardware
 * prefetchers bring them: each step asks L2 for each filter block's line
 * 4 KB ahead (the same tap's later channels, then the next tap's).
 * Batch 2, one thread, CPU ms per run (ab.sh): tv_resnet50 AVX2 17.6 →
 * 16.4, AVX-512 15.5 → 14.8; tv_resnet18 AVX2 7.1 → 6.3. */
#ifndef SB_AHEAD
#define SB_AHEAD 1024             /* floats */
#endif

#define SB_PASTE2(a, b) a##_##b
#define SB_PASTE(a, b) SB_PASTE2 (a, b)

static inline __attribute__ ((always_inline)) SB_TARGET void
SB_PASTE (small_tile, SB_SUFFIX) (gint64 C, const float *w, gint64 w_stride, const float *const *xs, gint64 plane,
                                  float *tile, const gint32 *at, gint64 ldt, const int P, const int V)
{
  SB_V acc[SB_MAX_PIXELS][2];
  const float *xp[SB_MAX_PIXELS];
  for (int p = 0; p < P; p++)
    {
      xp[p] = xs[p];
      for (int v = 0; v < V; v++)
        memcpy (&acc[p][v], tile + at[p] * ldt + v * SB_LANES, sizeof (SB_V));
    }
  const float *w1 = w + w_stride;
  gint64 off = 0;
  for (gint64 c = 0; c < C; c++, off += plane, w += SB_LANES, w1 += SB_LANES)
    {
      SB_V w0v, w1v = { 0 };
      __builtin_prefetch (w + SB_AHEAD, 0, 2);
      if (V > 1)
        __builtin_prefetch (w1 + SB_AHEAD, 0, 2);
      memcpy (&w0v, w, sizeof w0v);
      if (V > 1)
        memcpy (&w1v, w1, sizeof w1v);
      for (int p = 0; p < P; p++)
        {
          float s = xp[p][off];
          acc[p][0] += s * w0v;
          if (V > 1)
            acc[p][1] += s * w1v;
        }
    }
  for (int p = 0; p < P; p++)
    for (int v = 0; v < V; v++)
      memcpy (tile + at[p] * ldt + v * SB_LANES, &acc[p][v], sizeof (SB_V));
}

#define SB_TILE(P, V)                                                                                                  \
  static SB_TARGET GRAFT_HOT_LOOP __attribute__ ((noinline)) void SB_PASTE (small_tile_##P##_##V, SB_SUFFIX) (       \
    gint64 C, const float *w, gint64 w_stride, const float *const *xs, gint64 plane, float *tile, const gint32 *at,  \
    gint64 ldt)                                                                                                        \
  {                                                                                                                    \
    SB_PASTE (small_tile, SB_SUFFIX) (C, w, w_stride, xs, plane, tile, at, ldt, P, V);                               \
  }

SB_TILE (1, 1) SB_TILE (2, 1) SB_TILE (3, 1) SB_TILE (4, 1) SB_TILE (5, 1) SB_TILE (6, 1)
SB_TILE (1, 2) SB_TILE (2, 2) SB_TILE (3, 2) SB_TILE (4, 2) SB_TILE (5, 2) SB_TILE (6, 2)
#if SB_MAX_PIXELS > 6
SB_TILE (7, 1) SB_TILE (8, 1) SB_TILE (9, 1) SB_TILE (10, 1) SB_TILE (11, 1) SB_TILE (12, 1)
SB_TILE (7, 2) SB_TILE (8, 2) SB_TILE (9, 2) SB_TILE (10, 2) SB_TILE (11, 2) SB_TILE (12, 2)
#define SB_MORE(V) , SB_PASTE (small_tile_7_##V, SB_SUFFIX), SB_PASTE (small_tile_8_##V, SB_SUFFIX),                 \
  SB_PASTE (small_tile_9_##V, SB_SUFFIX), SB_PASTE (small_tile_10_##V, SB_SUFFIX),                                    \
  SB_PASTE (small_tile_11_##V, SB_SUFFIX), SB_PASTE (small_tile_12_##V, SB_SUFFIX)
#else
#define SB_MORE(V)
#endif

#define SB_ROW(V) { SB_PASTE (small_tile_1_##V, SB_SUFFIX), SB_PASTE (small_tile_2_##V, SB_SUFFIX),                  \
                    SB_PASTE (small_tile_3_##V, SB_SUFFIX), SB_PASTE (small_tile_4_##V, SB_SUFFIX),                  \
                    SB_PASTE (small_tile_5_##V, SB_SUFFIX), SB_PASTE (small_tile_6_##V, SB_SUFFIX) SB_MORE (V) }

static const SmallTile SB_PASTE (small_tiles, SB_SUFFIX)[2][MAX_TILE_PIXELS] = { SB_ROW (1), SB_ROW (2) };

#undef SB_TILE
#undef SB_ROW
#undef SB_MORE
#undef SB_V
#undef SB_LANES
#undef SB_TARGET
#undef SB_MAX_PIXELS
#undef SB_SUFFIX
