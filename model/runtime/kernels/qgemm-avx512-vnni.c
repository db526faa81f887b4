#include "runtime/kernels/qgemm-private.h"

/* ---- AVX-512 VNNI: both GEMMs, up to four panels at a time ----
 *
 * vpdpbusd adds the four u8 × s8 products of each 32-bit lane into an
 * int32 accumulator in one instruction, with no int16 step that could
 * saturate; vpdpwssd does the same for the int16 pairs (vpmaddwd and
 * vpaddd in one). One zmm is a whole panel row of quads or pairs (16
 * columns × 4 bytes), so a 6-row tile over four panels is 24 accumulators,
 * and each step's broadcast of a row's four bytes of a serves four panels:
 * a is read once per 64 columns, not per 16 (a deep filter is megabytes).
 * Same packing as the AVX2 kernels; a and the panels are read as bytes. */
#ifdef GRAFT_HAVE_X86_SIMD
#define GRAFT_TARGET_AVX512_VNNI __attribute__ ((target ("avx512f,avx512vnni")))

/* Named accumulators, not an array: GCC keeps an array of __m512i in
 * memory and copies it every step. Panels past n_panels are dead code. */
#define VNNI_OP(c, b, ar) (words ? _mm512_dpwssd_epi32 (c, b, ar) : _mm512_dpbusd_epi32 (c, b, ar))
#define VNNI_ROW(r)                                                            \
  do                                                                           \
    {                                                                          \
      gint32 four;                                                             \
      memcpy (&four, a + (r) * lda_bytes + 4 * s, sizeof four);                \
      __m512i ar = _mm512_set1_epi32 (four);                                   \
      c##r##0 = VNNI_OP (c##r##0, b0, ar);                                     \
      if (n_panels > 1)                                                        \
        c##r##1 = VNNI_OP (c##r##1, b1, ar);                                   \
      if (n_panels > 2)                                                        \
        c##r##2 = VNNI_OP (c##r##2, b2, ar);                                   \
      if (n_panels > 3)                                                        \
        c##r##3 = VNNI_OP (c##r##3, b3, ar);                                   \
    }                                                                          \
  while (0)
#define VNNI_STORE(r)                                                          \
  do                                                                           \
    {                                                                          \
      _mm512_storeu_si512 ((void *) (c + (r) * ldc), c##r##0);                 \
      if (n_panels > 1)                                                        \
        _mm512_storeu_si512 ((void *) (c + (r) * ldc + TILE_COLS), c##r##1);   \
      if (n_panels > 2)                                                        \
        _mm512_storeu_si512 ((void *) (c + (r) * ldc + 2 * TILE_COLS), c##r##2); \
      if (n_panels > 3)                                                        \
        _mm512_storeu_si512 ((void *) (c + (r) * ldc + 3 * TILE_COLS), c##r##3); \
    }                                                                          \
  while (0)

static inline __attribute__ ((always_inline)) GRAFT_TARGET_AVX512_VNNI void
vnni_tiles_body (const guint8 *a, gint64 lda_bytes, const guint8 *panels, gint64 panel_bytes, gint64 steps,
                 gint32 *c, gint64 ldc, const int n_panels, const gboolean words)
{
  G_STATIC_ASSERT (TILE_ROWS == 6 && QGEMM_MAX_PANELS == 4);
  __m512i c00 = _mm512_setzero_si512 (), c01 = c00, c02 = c00, c03 = c00, c10 = c00, c11 = c00, c12 = c00, c13 = c00;
  __m512i c20 = c00, c21 = c00, c22 = c00, c23 = c00, c30 = c00, c31 = c00, c32 = c00, c33 = c00;
  __m512i c40 = c00, c41 = c00, c42 = c00, c43 = c00, c50 = c00, c51 = c00, c52 = c00, c53 = c00;
  for (gint64 s = 0; s < steps; s++)
    {
      const guint8 *b = panels + s * TILE_COLS * 4;
      __m512i b0 = _mm512_loadu_si512 ((const void *) b), b1 = b0, b2 = b0, b3 = b0;
      if (n_panels > 1)
        b1 = _mm512_loadu_si512 ((const void *) (b + panel_bytes));
      if (n_panels > 2)
        b2 = _mm512_loadu_si512 ((const void *) (b + 2 * panel_bytes));
      if (n_panels > 3)
        b3 = _mm512_loadu_si512 ((const void *) (b + 3 * panel_bytes));
      VNNI_ROW (0);
      VNNI_ROW (1);
      VNNI_ROW (2);
      VNNI_ROW (3);
      VNNI_ROW (4);
      VNNI_ROW (5);
    }
  VNNI_STORE (0);
  VNNI_STORE (1);
  VNNI_STORE (2);
  VNNI_STORE (3);
  VNNI_STORE (4);
  VNNI_STORE (5);
}

#define VNNI_TILES(name, n, words)                                                                        \
  GRAFT_TARGET_AVX512_VNNI GRAFT_HOT_LOOP __attribute__ ((noinline)) static void                          \
  name (const guint8 *a, gint64 lda_bytes, const guint8 *panels, gint64 panel_bytes, gint64 steps,       \
        gint32 *c, gint64 ldc)                                                                            \
  {                                                                                                       \
    vnni_tiles_body (a, lda_bytes, panels, panel_bytes, steps, c, ldc, n, words);                         \
  }
VNNI_TILES (vnni_bytes_1, 1, FALSE)
VNNI_TILES (vnni_bytes_2, 2, FALSE)
VNNI_TILES (vnni_bytes_3, 3, FALSE)
VNNI_TILES (vnni_bytes_4, 4, FALSE)
VNNI_TILES (vnni_words_1, 1, TRUE)
VNNI_TILES (vnni_words_2, 2, TRUE)
VNNI_TILES (vnni_words_3, 3, TRUE)
VNNI_TILES (vnni_words_4, 4, TRUE)

typedef void (*VnniTiles) (const guint8 *a, gint64 lda_bytes, const guint8 *panels, gint64 panel_bytes,
                           gint64 steps, gint32 *c, gint64 ldc);
static const VnniTiles vnni_bytes[] = { vnni_bytes_1, vnni_bytes_2, vnni_bytes_3, vnni_bytes_4 };
static const VnniTiles vnni_words[] = { vnni_words_1, vnni_words_2, vnni_words_3, vnni_words_4 };

/* n_panels full panels (panel_bytes apart) of one 6-row tile of a. */
void
_graft_qgemm_u8s8_tiles_avx512_vnni (const void *a, gint64 lda, const void *panels, gint64 panel_bytes, int n_panels,
                                     gint64 steps, gint32 *c, gint64 ldc)
{
  vnni_bytes[n_panels - 1] (a, lda, panels, panel_bytes, steps, c, ldc);
}

void
_graft_qgemm_tiles_avx512_vnni (const void *a, gint64 lda, const void *panels, gint64 panel_bytes, int n_panels,
                                gint64 steps, gint32 *c, gint64 ldc)
{
  vnni_words[n_panels - 1] (a, lda * (gint64) sizeof (gint16), panels, panel_bytes, steps, c, ldc);
}

#endif

