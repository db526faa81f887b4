/* The int8 GEMM's AVX2 kernels: vpmaddwd on int16 pairs, vpmaddubsw on
 * u8 × s8 quads of 7-bit weights. */
#include "runtime/kernels/qgemm-private.h"

#ifdef GRAFT_HAVE_X86_SIMD
/* Full panels, two rows at a time: vpunpck{l,h}wd interleave within each
 * 128-bit lane, the permutes put columns 0-7 and 8-15 back in order. */
GRAFT_TARGET_AVX2_FMA void
_graft_qgemm_pack_b_panel_avx2 (const void *bv, gint64 N, gint64 K, gint64 j0, void *panelv)
{
  const gint16 *b = bv;
  gint16 *panel = panelv;
  if (N - j0 < TILE_COLS)
    {
      _graft_qgemm_pack_b_panel_portable (b, N, K, j0, panel);
      return;
    }
  gint64 p = 0;
  for (; 2 * p + 1 < K; p++)
    {
      __m256i r0 = _mm256_loadu_si256 ((const __m256i *) (b + 2 * p * N + j0));
      __m256i r1 = _mm256_loadu_si256 ((const __m256i *) (b + (2 * p + 1) * N + j0));
      __m256i lo = _mm256_unpacklo_epi16 (r0, r1), hi = _mm256_unpackhi_epi16 (r0, r1);
      _mm256_storeu_si256 ((__m256i *) (panel + p * TILE_COLS * 2), _mm256_permute2x128_si256 (lo, hi, 0x20));
      _mm256_storeu_si256 ((__m256i *) (panel + p * TILE_COLS * 2 + 16), _mm256_permute2x128_si256 (lo, hi, 0x31));
    }
  if (K % 2)
    {
      /* The odd last row pairs with zeros. */
      __m256i r0 = _mm256_loadu_si256 ((const __m256i *) (b + (K - 1) * N + j0)), zero = _mm256_setzero_si256 ();
      __m256i lo = _mm256_unpacklo_epi16 (r0, zero), hi = _mm256_unpackhi_epi16 (r0, zero);
      _mm256_storeu_si256 ((__m256i *) (panel + p * TILE_COLS * 2), _mm256_permute2x128_si256 (lo, hi, 0x20));
      _mm256_storeu_si256 ((__m256i *) (panel + p * TILE_COLS * 2 + 16), _mm256_permute2x128_si256 (lo, hi, 0x31));
    }
}
#endif


#ifdef GRAFT_HAVE_X86_SIMD
/* Named accumulators rather than an array: GCC then keeps all twelve in
 * registers without copying them each step. */
#define QGEMM_ROW_STEP(i, c0, c1)                                              \
  do                                                                           \
    {                                                                          \
      gint32 pair;                                                             \
      memcpy (&pair, a + (i) * lda + 2 * p, sizeof pair);                      \
      __m256i ai = _mm256_set1_epi32 (pair);                                   \
      c0 = _mm256_add_epi32 (c0, _mm256_madd_epi16 (ai, b0));                 \
      c1 = _mm256_add_epi32 (c1, _mm256_madd_epi16 (ai, b1));                 \
    }                                                                          \
  while (0)

/* The twelve accumulators of a 6×16 tile, and a step on each row's pair. */
#define QGEMM_ACCUMULATORS                                                                        \
  __m256i c00 = _mm256_setzero_si256 (), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00; \
  __m256i c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00

#define QGEMM_EACH_ROW(step)                                                   \
  do                                                                           \
    {                                                                          \
      step (0, c00, c01);                                                      \
      step (1, c10, c11);                                                      \
      step (2, c20, c21);                                                      \
      step (3, c30, c31);                                                      \
      step (4, c40, c41);                                                      \
      step (5, c50, c51);                                                      \
    }                                                                          \
  while (0)

#define QGEMM_ROW_STORE(i, c0, c1)                                             \
  do                                                                           \
    {                                                                          \
      _mm256_storeu_si256 ((__m256i *) (c + (i) * ldc), c0);                  \
      _mm256_storeu_si256 ((__m256i *) (c + (i) * ldc + 8), c1);              \
    }                                                                          \
  while (0)

GRAFT_TARGET_AVX2_FMA GRAFT_HOT_LOOP void
_graft_qgemm_tile_avx2 (const void *av, gint64 lda, const void *panelv, gint64 pairs, gint32 *c, gint64 ldc)
{
  const gint16 *a = av, *panel = panelv;
  G_STATIC_ASSERT (TILE_ROWS == 6 && TILE_COLS == 16);
  QGEMM_ACCUMULATORS;
  for (gint64 p = 0; p < pairs; p++)
    {
      __m256i b0 = _mm256_loadu_si256 ((const __m256i *) (panel + p * TILE_COLS * 2));
      __m256i b1 = _mm256_loadu_si256 ((const __m256i *) (panel + p * TILE_COLS * 2 + 16));
      QGEMM_EACH_ROW (QGEMM_ROW_STEP);
    }
  QGEMM_EACH_ROW (QGEMM_ROW_STORE);
}
#endif


#ifdef GRAFT_HAVE_X86_SIMD
/* Full panels, four rows at a time. */
GRAFT_TARGET_AVX2_FMA void
_graft_qgemm_pack_b_panel_u8_avx2 (const void *bv, gint64 N, gint64 K, gint64 j0, void *panelv)
{
  const guint8 *b = bv;
  guint8 *panel = panelv;
  if (N - j0 < TILE_COLS || K % 4)
    {
      _graft_qgemm_pack_b_panel_u8_portable (bv, N, K, j0, panelv);
      return;
    }
  for (gint64 q = 0; q < K / 4; q++)
    {
      const guint8 *row = b + 4 * q * N + j0;
      _graft_qgemm_store_quad_u8 (panel + q * TILE_COLS * 4, _mm_loadu_si128 ((const __m128i *) row),
                                  _mm_loadu_si128 ((const __m128i *) (row + N)), _mm_loadu_si128 ((const __m128i *) (row + 2 * N)),
                                  _mm_loadu_si128 ((const __m128i *) (row + 3 * N)));
    }
}

#define QGEMM_U8S8_ROW_STEP(i, c0, c1)                                         \
  do                                                                           \
    {                                                                          \
      gint32 quad;                                                             \
      memcpy (&quad, a + (i) * lda + 4 * q, sizeof quad);                      \
      __m256i ai = _mm256_set1_epi32 (quad);                                   \
      c0 = _mm256_add_epi32 (c0, _mm256_madd_epi16 (_mm256_maddubs_epi16 (b0, ai), ones)); \
      c1 = _mm256_add_epi32 (c1, _mm256_madd_epi16 (_mm256_maddubs_epi16 (b1, ai), ones)); \
    }                                                                          \
  while (0)

GRAFT_TARGET_AVX2_FMA GRAFT_HOT_LOOP void
_graft_qgemm_u8s8_tile_avx2 (const void *av, gint64 lda, const void *panelv, gint64 quads, gint32 *c, gint64 ldc)
{
  G_STATIC_ASSERT (TILE_ROWS == 6 && TILE_COLS == 16);
  const gint8 *a = av;
  const guint8 *panel = panelv;
  const __m256i ones = _mm256_set1_epi16 (1);
  QGEMM_ACCUMULATORS;
  for (gint64 q = 0; q < quads; q++)
    {
      __m256i b0 = _mm256_loadu_si256 ((const __m256i *) (panel + q * TILE_COLS * 4));
      __m256i b1 = _mm256_loadu_si256 ((const __m256i *) (panel + q * TILE_COLS * 4 + 32));
      QGEMM_EACH_ROW (QGEMM_U8S8_ROW_STEP);
    }
  QGEMM_EACH_ROW (QGEMM_ROW_STORE);
}
#endif

