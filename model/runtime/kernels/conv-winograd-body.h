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

/* The 6×6 input patches of tiles t_first … t_first + 7 of channel c
 * into d[r][j] (lane = tile; zero outside x and past the last tile). */
static WG_ATTR GRAFT_HOT_LOOP void
WG (load_patches) (const WinogradJob *job, gint64 c, gint64 t_first, GraftV8f d[6][6])
{
  const GraftConvGemmArgs *a = job->args;
  gint64 H = job->H, W = job->W, per_image = job->TH * job->TW;
  gint64 n = t_first / per_image, th = t_first % per_image / job->TW, tw = t_first % job->TW;
  gint64 ih0 = th * TILE - job->pt, iw0 = tw * TILE - job->pl;
  if (t_first + 8 <= job->tiles && tw + 8 <= job->TW)
    {
      /* eight tiles side by side: each patch row is 34 floats of x (copied
       * with its zero padding where it crosses the edge of x), split into
       * the four columns j mod 4 of the tiles */
      const float *plane = a->x + (n * a->C + c) * H * W;
      gboolean inside_cols = iw0 >= 0 && iw0 + 8 * TILE + 2 <= W;
      for (int r = 0; r < 6; r++)
        {
          gint64 ih = ih0 + r;
          if (ih < 0 || ih >= H)
            {
              for (int j = 0; j < 6; j++)
                d[r][j] = (GraftV8f) { 0 };
              continue;
            }
          const float *src = plane + ih * W + iw0;
          float padded[8 * TILE + 8];
          if (!inside_cols)
            {
              for (gint64 j = 0; j < 8 * TILE + 2; j++)
                padded[j] = iw0 + j >= 0 && iw0 + j < W ? src[j] : 0;
              src = padded;
            }
          GraftV8f p[4], q[4], lo[4], hi[4];
          for (int i = 0; i < 4; i++)
            {
              memcpy (&p[i], src + 8 * i, sizeof (GraftV8f));
              memcpy (&q[i], src + 2 + 8 * i, sizeof (GraftV8f));
            }
          split_fours (p, lo);
          split_fours (q, hi);
          d[r][0] = lo[0], d[r][1] = lo[1], d[r][2] = lo[2], d[r][3] = lo[3];
          d[r][4] = hi[2], d[r][5] = hi[3];
        }
      return;
    }
  float patch[6][6][8];
  for (int t = 0; t < 8; t++, tw++)
    {
      if (tw == job->TW)
        {
          tw = 0;
          if (++th == job->TH)
            th = 0, n++;
        }
      gint64 r0 = th * TILE - job->pt, c0 = tw * TILE - job->pl;
      gboolean real = t_first + t < job->tiles;
      const float *plane = a->x + (real ? (n * a->C + c) * H * W : 0);
      for (int r = 0; r < 6; r++)
        for (int j = 0; j < 6; j++)
          {
            gint64 ih = r0 + r, iw = c0 + j;
            patch[r][j][t] = real && ih >= 0 && ih < H && iw >= 0 && iw < W ? plane[ih * W + iw] : 0;
          }
    }
  memcpy (d, patch, sizeof patch);
}

/* Every tile of the block, every channel: V [36][C][tb]. */
static WG_ATTR void
WG (transform_inputs) (const WinogradJob *job, gint64 t0, gint64 groups, float *v)
{
  gint64 C = job->args->C, tb = job->tb;
  for (gint64 c = 0; c < C; c++)
    for (gint64 g = 0; g < groups; g++)
      {
        GraftV8f d[6][6];
        WG (load_patches) (job, c, t0 + 8 * g, d);
        WG (input_transform) (d, v + c * tb + 8 * g, C * tb);
      }
}

/* Output channel m of tiles t_first … t_first + 7 from the products at
 * y_in ([36] ξ_stride apart): Aᵀ M A, plus bias (and residual), clamped. */
static WG_ATTR GRAFT_HOT_LOOP void
WG (store_tiles) (const WinogradJob *job, gint64 m, gint64 t_first, const float *y_in, gint64 xi_stride)
{
  const GraftConvGemmArgs *a = job->args;
  GraftV8f t[6][4], o[4][4];
  for (int i = 0; i < 6; i++)
    {
      GraftV8f row[6];
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
  float out[4][4][8];
  memcpy (out, o, sizeof out);
  for (int i = 0; i < 8 && t_first + i < job->tiles; i++, tw++)
    {
      if (tw == job->TW)
        {
          tw = 0;
          if (++th == job->TH)
            th = 0, n++;
          plane = (n * a->M + m) * OH * OW;
        }
      for (int r = 0; r < 4 && th * TILE + r < OH; r++)
        for (int k = 0; k < 4 && tw * TILE + k < OW; k++)
          {
            gint64 at = plane + (th * TILE + r) * OW + tw * TILE + k;
            float value = out[r][k][i];
            if (a->residual)
              value += a->residual[at];
            a->y[at] = a->clamp ? clamp1 (value, a->lo, a->hi) : value;
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
  gint64 cols = (n_tiles + VG_LANES - 1) / VG_LANES * VG_LANES, groups = cols / 8;
  gint64 rows = (p1 - p0) * PACK_ROWS;
  float *y = v + 36 * C * tb;

  WG (transform_inputs) (job, t0, groups, v);

  /* Per ξ, sliver by sliver: KV vectors of tiles over all C stay in L1
   * while the filter rows stream past. */
  for (gint64 xi = 0; xi < 36; xi++)
    {
      const float *u = f->data + xi * panels * C * PACK_ROWS;
      const float *b = v + xi * C * tb;
      float *out = y + xi * rows * tb;
      for (gint64 col = 0, vecs = KV; col < cols; col += vecs * VG_LANES)
        {
#if KV >= 3
          /* four vectors left: two and two, not three and a narrow one */
          gint64 left = (cols - col) / VG_LANES;
          vecs = left == 4 ? 2 : MIN (KV, left);
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
