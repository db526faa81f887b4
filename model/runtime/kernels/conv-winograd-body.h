/* One instruction-set variant of conv-winograd.c's task, written once:
 * conv-winograd.c includes this file per variant after defining
 *   WG_SUFFIX   the variant's name suffix
 *   WG_ATTR     the function attributes (the target), or nothing
 *   VG, VG_LANES the matrix-product vector type and its floats
 *   KR, KV      the product tile: KR filter rows × KV vectors of tiles
 *   K1R         the filter rows of the one-vector tile (the last vector of
 *               a block, and whole blocks of eight tiles): as many as the
 *               registers allow, for enough multiply-add chains in flight
 * The transforms work on 8 tiles at a time in GraftV8f vectors whatever
 * the variant. No include guard on purpose. */

#define WG_CAT2(name, suffix) name##_##suffix
#define WG_CAT(name, suffix) WG_CAT2 (name, suffix)
#define WG(name) WG_CAT (name, WG_SUFFIX)

/* The product tiles: conv-gemm.c's tile micro-kernel (conv-tile-body.h),
 * tile [rows][vecs·VG_LANES] = a [K][PACK_ROWS] (its first rows) ·
 * b [K][vecs·VG_LANES], rows of b ldb apart, of the tile ldt apart;
 * next_lines lines from next on (the filter rows multiplied next) are
 * asked into L2 on the way. One body for KR rows, one for K1R. */
#define TB_V VG
#define TB_LANES VG_LANES
#define TB_ROWS KR
#define TB_SUFFIX WG_CAT (kr, WG_SUFFIX)
#include "runtime/kernels/conv-tile-body.h"
#define TB_V VG
#define TB_LANES VG_LANES
#define TB_ROWS K1R
#define TB_SUFFIX WG_CAT (k1r, WG_SUFFIX)
#include "runtime/kernels/conv-tile-body.h"

#if VG_LANES > 8
/* the last eight tiles of a block in half vectors, not in a whole one
 * half zeros (ResNet-like 8×8 maps at batch 2 have eight tiles) */
#define TB_V GraftV8f
#define TB_LANES 8
#define TB_ROWS K1R
#define TB_SUFFIX WG_CAT (half, WG_SUFFIX)
#include "runtime/kernels/conv-tile-body.h"

static WG_ATTR GRAFT_HOT_LOOP __attribute__ ((noinline)) void
WG (kernel_half) (gint64 K, const float *a, const float *b, gint64 ldb, float *tile, gint64 ldt, const float *next,
                 gint64 next_lines)
{
  WG (tile_body_half) (K, a, b, ldb, tile, ldt, FALSE, NULL, 0, next, next_lines, 1);
}
#endif

static WG_ATTR GRAFT_HOT_LOOP __attribute__ ((noinline)) void
WG (kernel_1) (gint64 K, const float *a, const float *b, gint64 ldb, float *tile, gint64 ldt, const float *next,
              gint64 next_lines)
{
  WG (tile_body_k1r) (K, a, b, ldb, tile, ldt, FALSE, NULL, 0, next, next_lines, 1);
}

#if KV >= 3
static WG_ATTR GRAFT_HOT_LOOP __attribute__ ((noinline)) void
WG (kernel_2) (gint64 K, const float *a, const float *b, gint64 ldb, float *tile, gint64 ldt, const float *next,
              gint64 next_lines)
{
  WG (tile_body_kr) (K, a, b, ldb, tile, ldt, FALSE, NULL, 0, next, next_lines, 2);
}

static WG_ATTR GRAFT_HOT_LOOP __attribute__ ((noinline)) void
WG (kernel_3) (gint64 K, const float *a, const float *b, gint64 ldb, float *tile, gint64 ldt, const float *next,
              gint64 next_lines)
{
  WG (tile_body_kr) (K, a, b, ldb, tile, ldt, FALSE, NULL, 0, next, next_lines, 3);
}
#endif

/* d[r][j] over 8 tiles → Bᵀ d B, stored as V [ξ][C][tb] at v (ξ = 6i + k). */
static inline __attribute__ ((always_inline)) void
WG (input_transform) (GraftV8f d[6][6], float *v, gint64 xi_stride)
{
  GraftV8f t[6][6];
  for (int r = 0; r < 6; r++)
    bt_rows (d[r], t[r]);
  for (int k = 0; k < 6; k++)
    {
      GraftV8f col[6] = { t[0][k], t[1][k], t[2][k], t[3][k], t[4][k], t[5][k] }, out[6];
      bt_rows (col, out);
      for (int i = 0; i < 6; i++)
        memcpy (v + (6 * i + k) * xi_stride, &out[i], sizeof (GraftV8f));
    }
}

/* Channel c of the tile rows g0 … g0 + count - 1 (over the batch) into
 * the bands at band (job->band_floats, zero where nothing is copied:
 * each channel writes the same places). */
static WG_ATTR GRAFT_HOT_LOOP void
WG (copy_bands) (const WinogradJob *job, gint64 c, gint64 g0, gint64 count, float *band)
{
  const GraftConvGemmArgs *a = job->args;
  gint64 H = job->H, W = job->W, PW = job->PW, cols = MIN (W, PW - job->pl);
  if (cols <= 0)
    return;
  for (gint64 i = 0; i < count; i++)
    {
      gint64 n = (g0 + i) / job->TH, ih0 = (g0 + i) % job->TH * TILE - job->pt;
      const float *plane = a->x + (n * a->C + c) * H * W;
      for (gint64 r = MAX (0, -ih0); r < 6 && ih0 + r < H; r++)
        {
          const float *src = plane + (ih0 + r) * W;
          float *dst = band + (6 * i + r) * PW + job->pl;
          gint64 j = 0;
          for (; j + 8 <= cols; j += 8)
            memcpy (dst + j, src + j, 8 * sizeof (float));
          for (; j < cols; j++)
            dst[j] = src[j];
        }
    }
}

/* The 6×6 input patches of tiles t_first … t_first + 7 into d[r][j]
 * (lane = tile) from the bands of tile rows g0 …
 * (copy_bands): each patch row of a tile is one load of eight floats (six
 * used), and the eight tiles' rows are transposed into the columns. */
static WG_ATTR GRAFT_HOT_LOOP void
WG (load_band_patches) (const WinogradJob *job, const float *band, gint64 g0, gint64 t_first, GraftV8f d[6][6])
{
  gint64 PW = job->PW;
  /* lanes past the last tile repeat it (no store_tiles writes them):
   * loads without a branch, which GCC would make a copy through the
   * stack that no store forwards */
  const float *at[8];
  for (int t = 0; t < 8; t++)
    {
      gint64 tile = MIN (t_first + t, job->tiles - 1);
      at[t] = band + (tile / job->TW - g0) * 6 * PW + tile % job->TW * TILE;
    }
#pragma GCC unroll 6
  for (int r = 0; r < 6; r++)
    {
      GraftV8f rows[8];
#pragma GCC unroll 8
      for (int t = 0; t < 8; t++)
        memcpy (&rows[t], at[t] + r * PW, sizeof (GraftV8f));
      transpose_tiles (rows, d[r]);
    }
}

/* Every tile of the block, every channel: V [36][C][tb]; band:
 * job->band_floats of scratch. */
static WG_ATTR void
WG (transform_inputs) (const WinogradJob *job, gint64 t0, gint64 groups, float *v, float *band)
{
  gint64 C = job->args->C, tb = job->tb;
  gint64 g0 = t0 / job->TW, count = (MIN (t0 + 8 * groups, job->tiles) - 1) / job->TW - g0 + 1;
  memset (band, 0, count * 6 * job->PW * sizeof (float));
  for (gint64 c = 0; c < C; c++)
    {
      WG (copy_bands) (job, c, g0, count, band);
      for (gint64 g = 0; g < groups; g++)
        {
          GraftV8f d[6][6];
          WG (load_band_patches) (job, band, g0, t0 + 8 * g, d);
          WG (input_transform) (d, v + c * tb + 8 * g, C * tb);
        }
    }
}

/* Output channel m of tiles t_first … t_first + 7 from the products at
 * y_in ([36] ξ_stride apart): Aᵀ M A, plus bias (and residual), clamped. */
static WG_ATTR GRAFT_HOT_LOOP void
WG (store_tiles) (const WinogradJob *job, gint64 m, gint64 t_first, const float *y_in, gint64 xi_stride)
{
  const GraftConvGemmArgs *a = job->args;
  GraftV8f t[6][4], o[4][4];
  /* unrolled: else GCC copies the rows through the stack in halves,
   * which no store forwards to a vector load (a fifth of the time) */
#pragma GCC unroll 6
  for (int i = 0; i < 6; i++)
    {
      GraftV8f row[6];
#pragma GCC unroll 6
      for (int k = 0; k < 6; k++)
        memcpy (&row[k], y_in + (6 * i + k) * xi_stride, sizeof (GraftV8f));
      at_rows (row, t[i]);
    }
  float bias = a->bias ? a->bias[m] : 0;
  for (int k = 0; k < 4; k++)
    {
      GraftV8f col[6] = { t[0][k], t[1][k], t[2][k], t[3][k], t[4][k], t[5][k] }, out[4];
      at_rows (col, out);
      for (int r = 0; r < 4; r++)
        o[r][k] = out[r] + bias;
    }

  gint64 OH = job->OH, OW = job->OW, per_image = job->TH * job->TW;
  gint64 n = t_first / per_image, th = t_first % per_image / job->TW, tw = t_first % job->TW;
  gint64 plane = (n * a->M + m) * OH * OW;
  if (t_first + 8 <= job->tiles && tw + 8 <= job->TW)
    {
      /* eight tiles side by side: each output row is 32 floats (fewer
       * where the last tile crosses the edge of y) */
      GraftV8f lo = { a->lo, a->lo, a->lo, a->lo, a->lo, a->lo, a->lo, a->lo };
      GraftV8f hi = { a->hi, a->hi, a->hi, a->hi, a->hi, a->hi, a->hi, a->hi };
      gint64 n_cols = MIN (8 * TILE, OW - tw * TILE);
      for (int r = 0; r < 4 && th * TILE + r < OH; r++)
        {
          gint64 at = plane + (th * TILE + r) * OW + tw * TILE;
          GraftV8f row[4];
          join_fours (o[r], row);
          if (n_cols < 8 * TILE)
            {
              float part[8 * TILE];
              memcpy (part, row, sizeof part);
              for (gint64 i = 0; i < n_cols; i++)
                {
                  float value = part[i] + (a->residual ? a->residual[at + i] : 0);
                  a->y[at + i] = a->clamp ? clamp1 (value, a->lo, a->hi) : value;
                }
              continue;
            }
          for (int i = 0; i < 4; i++)
            {
              if (a->residual)
                {
                  GraftV8f res;
                  memcpy (&res, a->residual + at + 8 * i, sizeof res);
                  row[i] += res;
                }
              if (a->clamp)
                clamp8 (&row[i], &lo, &hi);
              memcpy (a->y + at + 8 * i, &row[i], sizeof (GraftV8f));
            }
        }
      return;
    }
  /* tile by tile: out[r][4i …] is row r of tile i */
  float out[4][32];
  for (int r = 0; r < 4; r++)
    transpose_rows (o[r], out[r]);
  for (int i = 0; i < 8 && t_first + i < job->tiles; i++, tw++)
    {
      if (tw == job->TW)
        {
          tw = 0;
          if (++th == job->TH)
            th = 0, n++;
          plane = (n * a->M + m) * OH * OW;
        }
      gint64 n_cols = MIN (TILE, OW - tw * TILE);
      for (int r = 0; r < 4 && th * TILE + r < OH; r++)
        {
          gint64 at = plane + (th * TILE + r) * OW + tw * TILE;
          if (n_cols == TILE)
            {
              GraftV4f row;
              memcpy (&row, out[r] + 4 * i, sizeof row);
              if (a->residual)
                {
                  GraftV4f res;
                  memcpy (&res, a->residual + at, sizeof res);
                  row += res;
                }
              if (a->clamp)
                clamp4 (&row, a->lo, a->hi);
              memcpy (a->y + at, &row, sizeof row);
              continue;
            }
          for (gint64 k = 0; k < n_cols; k++)
            {
              float value = out[r][4 * i + k];
              if (a->residual)
                value += a->residual[at + k];
              a->y[at + k] = a->clamp ? clamp1 (value, a->lo, a->hi) : value;
            }
        }
    }
}

/* Block block of the tiles, filter panel range split of m_splits; v:
 * job->task_floats of scratch. */
static WG_ATTR void
WG (task) (const WinogradJob *job, gint64 block, gint64 split, float *v)
{
  const GraftWinogradFilter *f = job->filter;
  gint64 C = f->C, tb = job->tb, panels = f->panels;
  gint64 p0 = split * panels / job->m_splits, p1 = (split + 1) * panels / job->m_splits;
  gint64 t0 = block * tb, n_tiles = MIN (tb, job->tiles - t0);
  gint64 cols = (n_tiles + 7) / 8 * 8, groups = cols / 8;
  gint64 rows = (p1 - p0) * PACK_ROWS;
  float *y = v + 36 * C * tb;

  WG (transform_inputs) (job, t0, groups, v, v + job->task_floats - job->band_floats);

  /* Per ξ, sliver by sliver: KV vectors of tiles over all C stay in L1
   * while the filter rows stream past. */
  for (gint64 xi = 0; xi < 36; xi++)
    {
      const float *u = f->data + xi * panels * C * PACK_ROWS;
      const float *b = v + xi * C * tb;
      float *out = y + xi * rows * tb;
      for (gint64 col = 0, vecs = KV; col < cols; col += vecs * VG_LANES)
        {
#if VG_LANES > 8
          /* eight tiles left: half vectors (kernel_half), one step */
          gboolean half = cols - col < VG_LANES;
#endif
#if KV >= 3
          /* four vectors left: two and two, not three and a narrow one */
          gint64 left = (cols - col) / VG_LANES;
          vecs = left == 4 ? 2 : MAX (MIN (KV, left), 1);
#endif
          for (gint64 p = p0; p < p1; p++)
            {
              const float *ap = u + p * C * PACK_ROWS;
              float *tile = out + (p - p0) * PACK_ROWS * tb + col;
              /* The first sliver reads U_ξ from memory (ResNet-18's
               * layer3 streams 9.4 MB of it a run, layer2 2.4), the
               * others from L2: it asks for the panel after this one,
               * or the next ξ's first, as it goes. */
              const float *next = NULL;
              if (col == 0)
                next = p + 1 < p1 ? ap + C * PACK_ROWS : xi + 1 < 36 ? u + (panels + p0) * C * PACK_ROWS : NULL;
              gint64 lines = next ? C * PACK_ROWS / 16 : 0;
              /* a panel's calls (rows r of it) share its lines */
#define WG_NEXT(r, n) (next ? next + lines * (r) / PACK_ROWS * 16 : NULL), lines * (n) / PACK_ROWS
#if VG_LANES > 8
              if (half)
                {
                  for (int r = 0; r < PACK_ROWS; r += K1R)
                    WG (kernel_half) (C, ap + r, b + col, tb, tile + r * tb, tb, WG_NEXT (r, K1R));
                  continue;
                }
#endif
#if KV >= 3
              if (vecs > 1)
                {
                  for (int r = 0; r < PACK_ROWS; r += KR)
                    if (vecs == 3)
                      WG (kernel_3) (C, ap + r, b + col, tb, tile + r * tb, tb, WG_NEXT (r, KR));
                    else
                      WG (kernel_2) (C, ap + r, b + col, tb, tile + r * tb, tb, WG_NEXT (r, KR));
                  continue;
                }
#endif
              for (int r = 0; r < PACK_ROWS; r += K1R)
                WG (kernel_1) (C, ap + r, b + col, tb, tile + r * tb, tb, WG_NEXT (r, K1R));
#undef WG_NEXT
            }
        }
    }

  gint64 m_end = MIN (p1 * PACK_ROWS, f->M);
  for (gint64 m = p0 * PACK_ROWS; m < m_end; m++)
    for (gint64 g = 0; g * 8 < n_tiles; g++)
      WG (store_tiles) (job, m, t0 + 8 * g, y + (m - p0 * PACK_ROWS) * tb + 8 * g, rows * tb);
}

#undef WG_CAT2
#undef WG_CAT
#undef WG
#undef WG_SUFFIX
#undef WG_ATTR
#undef VG
#undef VG_LANES
#undef KR
#undef KV
#undef K1R
