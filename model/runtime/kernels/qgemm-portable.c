/* The int8 GEMM's portable kernels: the reference the others are held to. */
#include "runtime/kernels/qgemm-private.h"

/* ---- the int16 GEMM ---- */

/* b packed for one tile column: for each k pair, TILE_COLS columns of
 * (b[2p][j], b[2p+1][j]), so one 32-bit lane holds what vpmaddwd pairs
 * with a broadcast (a[i][2p], a[i][2p+1]). */
void
_graft_qgemm_pack_b_panel_portable (const void *bv, gint64 N, gint64 K, gint64 j0, void *panelv)
{
  const gint16 *b = bv;
  gint16 *panel = panelv;
  gint64 cols = MIN (TILE_COLS, N - j0), pairs = (K + 1) / 2;
  memset (panel, 0, sizeof (gint16) * pairs * TILE_COLS * 2);
  for (gint64 k = 0; k < K; k++)
    {
      const gint16 *row = b + k * N + j0;
      gint16 *dst = panel + (k / 2) * TILE_COLS * 2 + (k % 2);
      for (gint64 j = 0; j < cols; j++)
        dst[j * 2] = row[j];
    }
}

void
_graft_qgemm_tile_portable (const void *av, gint64 lda, const void *panelv, gint64 pairs, gint32 *c, gint64 ldc)
{
  const gint16 *a = av, *panel = panelv;
  for (int i = 0; i < TILE_ROWS; i++)
    {
      gint32 acc[TILE_COLS] = { 0 };
      for (gint64 p = 0; p < pairs; p++)
        {
          gint32 a0 = a[i * lda + 2 * p], a1 = a[i * lda + 2 * p + 1];
          const gint16 *bp = panel + p * TILE_COLS * 2;
          for (int j = 0; j < TILE_COLS; j++)
            acc[j] += a0 * bp[2 * j] + a1 * bp[2 * j + 1];
        }
      memcpy (c + i * ldc, acc, sizeof acc);
    }
}

/* ---- u8 × s8 with vpmaddubsw, for weights of at most 7 bits ----
 *
 * vpmaddubsw multiplies unsigned bytes by signed bytes and adds each
 * pair into a saturating int16: exact when |w| ≤ 64, as 2·255·64 =
 * 32640 < 32767 (onnxruntime's reduce_range weights, −64..64), then
 * vpmaddwd by ones widens the pair sums into int32. Twice the products
 * per instruction of the int16 path, from operands half the size. The
 * activations go in raw (0..255); the caller subtracts zero point × row
 * sum of the weights. */

/* b (K×N bytes) packed for one tile column: for each k quad, TILE_COLS
 * columns of (b[4q][j] … b[4q+3][j]), one 32-bit lane per column. */
void
_graft_qgemm_pack_b_panel_u8_portable (const void *bv, gint64 N, gint64 K, gint64 j0, void *panelv)
{
  const guint8 *b = bv;
  guint8 *panel = panelv;
  gint64 cols = MIN (TILE_COLS, N - j0), quads = (K + 3) / 4;
  memset (panel, 0, quads * TILE_COLS * 4);
  for (gint64 k = 0; k < K; k++)
    {
      const guint8 *row = b + k * N + j0;
      guint8 *dst = panel + (k / 4) * TILE_COLS * 4 + (k % 4);
      for (gint64 j = 0; j < cols; j++)
        dst[j * 4] = row[j];
    }
}

void
_graft_qgemm_u8s8_tile_portable (const void *av, gint64 lda, const void *panelv, gint64 quads, gint32 *c, gint64 ldc)
{
  const gint8 *a = av;
  const guint8 *panel = panelv;
  for (int i = 0; i < TILE_ROWS; i++)
    {
      gint32 acc[TILE_COLS] = { 0 };
      for (gint64 q = 0; q < quads; q++)
        for (int j = 0; j < TILE_COLS; j++)
          for (int r = 0; r < 4; r++)
            acc[j] += a[i * lda + 4 * q + r] * panel[q * TILE_COLS * 4 + j * 4 + r];
      memcpy (c + i * ldc, acc, sizeof acc);
    }
}

