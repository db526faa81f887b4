/* Winograd F(4×4, 3×3) convolution (see conv-winograd.h).
 *
 * The tiles of all images are numbered in a row (image, tile row, tile
 * column) and cut into blocks of tb. Per block, one task transforms the
 * input patches of every channel into V [36][C][tb], multiplies each
 * V_ξ by the packed filter U_ξ into M [36][rows][tb] with a register-tiled
 * kernel, and transforms M back into y, adding bias and residual and
 * clamping while the tile is in registers. The transforms take eight
 * tiles per vector. Per channel, the task first copies the input rows
 * under its tiles into bands of six rows per row of tiles, zero where the
 * padding is; each patch row of a tile is then one plain load, and eight
 * tiles' rows are transposed into the lanes by shuffles, whatever the
 * map's size and the tiles' places (a vae decoder's 8×8 and 16×16 maps,
 * the 7×7 of ResNet's last layers: no element-by-element gathering at
 * the edges, nor where a vector of eight tiles wraps to the next row or
 * image). Outputs go back the same way: where eight tiles lie side by
 * side inside y, whole rows; elsewhere a row of four per tile.
 *
 * F(4, 3) multiplies errors more than F(2, 3) (the transforms have
 * entries up to 8 and 5): in test-conv-winograd the error to a
 * double-precision convolution reaches 1.3e-5 of the largest output (300
 * input channels), inside the 1e-4 the conversions allow, and ResNet-18's
 * output stays within 5.5e-7 of onnxruntime's; the filter transform is
 * done in double. */
#include "runtime/kernels/conv-winograd.h"
#include "runtime/kernels/simd-target.h"

#include <string.h>

#define TILE 4                    /* output pixels per tile side */
#define PACK_ROWS 8               /* output channels per packed filter panel */
#define ROWS PACK_ROWS            /* conv-tile-body.h: a's floats per k step … */
#define MAX_VECS 3                /* … and the most vectors of a tile row */

struct _GraftWinogradFilter {
  /* Always 0. The node keeps one derived object per weight, which may be
   * a GraftPackedFilter from an earlier run at another SIMD level; that
   * one starts with its group count (≥ 1), so a lookup tells them apart. */
  gint64 zero;
  gint64 M, C;
  gint64 panels;                  /* ceil (M / PACK_ROWS) */
  float *data;                    /* U [36][panels][C][PACK_ROWS], rows past M zero */
};

typedef struct {
  const GraftWinogradFilter *filter;
  const GraftConvGemmArgs *args;
  gint64 H, W, OH, OW, pt, pl;
  gint64 TH, TW, tiles;           /* tiles per image column and row; over the batch */
  /* The input rows under the tiles of a block, a band of six rows per
   * row of tiles (of any image), copied per channel with the padding
   * zero: x (ih, iw) of tile row th at band row ih + pt - 4 th, column
   * iw + pl; PW floats a row (two more than the patches reach: a patch
   * row is read as one vector of eight). */
  gint64 PW, bands;
  gsize band_floats;
  gint64 tb, blocks;              /* tiles per block (a multiple of 8 and of the kernel's vector) */
  gint64 block_tasks, m_splits;   /* blocks spread over block_tasks, filter panels over m_splits */
  gsize task_floats;
  float *scratch;
} WinogradJob;

typedef float GraftV8f __attribute__ ((vector_size (32)));
typedef gint32 GraftV8i __attribute__ ((vector_size (32)));
typedef float GraftV4f __attribute__ ((vector_size (16)));
typedef gint32 GraftV4i __attribute__ ((vector_size (16)));

/* out = G (a0, a1, a2)ᵀ, G the filter transform:
 *   ( 1/4      0     0 )
 *   (-1/6   -1/6  -1/6 )
 *   (-1/6    1/6  -1/6 )
 *   ( 1/24  1/12   1/6 )
 *   ( 1/24 -1/12   1/6 )
 *   (  0      0     1  ) */
static inline void
g_column (double a0, double a1, double a2, double out[6])
{
  double even = a0 + a2, sum = a0 / 4 + a2;
  out[0] = a0 / 4;
  out[1] = -(even + a1) / 6;
  out[2] = -(even - a1) / 6;
  out[3] = (sum + a1 / 2) / 6;
  out[4] = (sum - a1 / 2) / 6;
  out[5] = a2;
}

/* out = Bᵀ in, on six vectors */
static inline __attribute__ ((always_inline)) void
bt_rows (const GraftV8f in[6], GraftV8f out[6])
{
  GraftV8f a = in[4] - 4 * in[2], b = in[3] - 4 * in[1];
  GraftV8f c = in[4] - in[2], e = 2 * (in[3] - in[1]);
  out[0] = 4 * in[0] - 5 * in[2] + in[4];
  out[1] = a + b;
  out[2] = a - b;
  out[3] = c + e;
  out[4] = c - e;
  out[5] = 4 * in[1] - 5 * in[3] + in[5];
}

/* out = Aᵀ in: six vectors into four */
static inline __attribute__ ((always_inline)) void
at_rows (const GraftV8f in[6], GraftV8f out[4])
{
  GraftV8f s12 = in[1] + in[2], d12 = in[1] - in[2], s34 = in[3] + in[4], d34 = in[3] - in[4];
  out[0] = in[0] + s12 + s34;
  out[1] = d12 + 2 * d34;
  out[2] = s12 + 4 * s34;
  out[3] = d12 + 8 * d34 + in[5];
}

/* out[q][t] = f[4t + q] (32 floats f, four vectors) into f: the four
 * columns of eight tiles side by side into their rows */
static inline __attribute__ ((always_inline)) void
join_fours (const GraftV8f in[4], GraftV8f out[4])
{
  GraftV8f lo01 = __builtin_shufflevector (in[0], in[1], 0, 8, 1, 9, 2, 10, 3, 11);
  GraftV8f hi01 = __builtin_shufflevector (in[0], in[1], 4, 12, 5, 13, 6, 14, 7, 15);
  GraftV8f lo23 = __builtin_shufflevector (in[2], in[3], 0, 8, 1, 9, 2, 10, 3, 11);
  GraftV8f hi23 = __builtin_shufflevector (in[2], in[3], 4, 12, 5, 13, 6, 14, 7, 15);
  out[0] = __builtin_shufflevector (lo01, lo23, 0, 1, 8, 9, 2, 3, 10, 11);
  out[1] = __builtin_shufflevector (lo01, lo23, 4, 5, 12, 13, 6, 7, 14, 15);
  out[2] = __builtin_shufflevector (hi01, hi23, 0, 1, 8, 9, 2, 3, 10, 11);
  out[3] = __builtin_shufflevector (hi01, hi23, 4, 5, 12, 13, 6, 7, 14, 15);
}

/* r[i] (eight floats of tile i) into out[j] = (r[0][j], …, r[7][j]), j < 6 */
static inline __attribute__ ((always_inline)) void
transpose_tiles (const GraftV8f r[8], GraftV8f out[6])
{
  GraftV8f t[8], u[8];
  for (int i = 0; i < 8; i += 2)
    {
      t[i] = __builtin_shufflevector (r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
      t[i + 1] = __builtin_shufflevector (r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
    }
  for (int i = 0; i < 8; i += 4)
    {
      u[i] = __builtin_shufflevector (t[i], t[i + 2], 0, 1, 8, 9, 4, 5, 12, 13);
      u[i + 1] = __builtin_shufflevector (t[i], t[i + 2], 2, 3, 10, 11, 6, 7, 14, 15);
      u[i + 2] = __builtin_shufflevector (t[i + 1], t[i + 3], 0, 1, 8, 9, 4, 5, 12, 13);
      u[i + 3] = __builtin_shufflevector (t[i + 1], t[i + 3], 2, 3, 10, 11, 6, 7, 14, 15);
    }
  for (int j = 0; j < 4; j++)
    out[j] = __builtin_shufflevector (u[j], u[j + 4], 0, 1, 2, 3, 8, 9, 10, 11);
  for (int j = 4; j < 6; j++)
    out[j] = __builtin_shufflevector (u[j - 4], u[j], 4, 5, 6, 7, 12, 13, 14, 15);
}

/* in[k] (column k of eight tiles, lane = tile) into out[4i … 4i + 3] =
 * row of tile i: (in[0][i], …, in[3][i]) */
static inline __attribute__ ((always_inline)) void
transpose_rows (const GraftV8f in[4], float out[32])
{
  GraftV8f t0 = __builtin_shufflevector (in[0], in[1], 0, 8, 1, 9, 4, 12, 5, 13);
  GraftV8f t1 = __builtin_shufflevector (in[0], in[1], 2, 10, 3, 11, 6, 14, 7, 15);
  GraftV8f t2 = __builtin_shufflevector (in[2], in[3], 0, 8, 1, 9, 4, 12, 5, 13);
  GraftV8f t3 = __builtin_shufflevector (in[2], in[3], 2, 10, 3, 11, 6, 14, 7, 15);
  /* tiles 0 and 4, 1 and 5, 2 and 6, 3 and 7 */
  GraftV8f u[4] = { __builtin_shufflevector (t0, t2, 0, 1, 8, 9, 4, 5, 12, 13),
                    __builtin_shufflevector (t0, t2, 2, 3, 10, 11, 6, 7, 14, 15),
                    __builtin_shufflevector (t1, t3, 0, 1, 8, 9, 4, 5, 12, 13),
                    __builtin_shufflevector (t1, t3, 2, 3, 10, 11, 6, 7, 14, 15) };
  GraftV8f v[4] = { __builtin_shufflevector (u[0], u[1], 0, 1, 2, 3, 8, 9, 10, 11),
                    __builtin_shufflevector (u[2], u[3], 0, 1, 2, 3, 8, 9, 10, 11),
                    __builtin_shufflevector (u[0], u[1], 4, 5, 6, 7, 12, 13, 14, 15),
                    __builtin_shufflevector (u[2], u[3], 4, 5, 6, 7, 12, 13, 14, 15) };
  /* in halves, as store_tiles reads them back: a load that takes part
   * of a wider store waits for it to reach the cache (stores of the
   * whole array were read back as 64-byte vectors at AVX-512, and the
   * 32-byte ones as 16-byte rows at AVX2: 15–25 % of store_tiles) */
  for (int j = 0; j < 4; j++)
    {
      GraftV4f lo = __builtin_shufflevector (v[j], v[j], 0, 1, 2, 3);
      GraftV4f hi = __builtin_shufflevector (v[j], v[j], 4, 5, 6, 7);
      memcpy (out + 8 * j, &lo, sizeof lo);
      memcpy (out + 8 * j + 4, &hi, sizeof hi);
    }
}

/* min (max (v, lo), hi) lane-wise, NaN kept (GCC's C has no vector ?:) */
static inline __attribute__ ((always_inline)) void
clamp8 (GraftV8f *v, const GraftV8f *lo, const GraftV8f *hi)
{
  GraftV8i below = *v < *lo;
  *v = (GraftV8f) (((GraftV8i) *lo & below) | ((GraftV8i) *v & ~below));
  GraftV8i above = *v > *hi;
  *v = (GraftV8f) (((GraftV8i) *hi & above) | ((GraftV8i) *v & ~above));
}

static inline __attribute__ ((always_inline)) void
clamp4 (GraftV4f *v, float lo, float hi)
{
  GraftV4f vlo = { lo, lo, lo, lo }, vhi = { hi, hi, hi, hi };
  GraftV4i below = *v < vlo;
  *v = (GraftV4f) (((GraftV4i) vlo & below) | ((GraftV4i) *v & ~below));
  GraftV4i above = *v > vhi;
  *v = (GraftV4f) (((GraftV4i) vhi & above) | ((GraftV4i) *v & ~above));
}

static inline float
clamp1 (float v, float lo, float hi)
{
  v = v < lo ? lo : v;
  return v > hi ? hi : v;
}

/* ---- the variants ---- */

typedef struct _GraftWinogradIsa {
  void (*task) (const WinogradJob *job, gint64 block, gint64 split, float *scratch);
  gint64 lanes, unit;             /* floats per product vector; tiles per kernel call (KV vectors) */
  gint64 rows;                    /* filter rows per kernel call */
} WinogradIsa;

#define WG_SUFFIX portable
#define WG_ATTR
#define VG GraftV8f
#define VG_LANES 8
#define KR 4
#define KV 1
#define K1R 4
#include "runtime/kernels/conv-winograd-body.h"

static const WinogradIsa isa_portable = { task_portable, 8, 8, 4 };

#ifdef GRAFT_HAVE_X86_SIMD
#define WG_SUFFIX avx2
#define WG_ATTR GRAFT_TARGET_AVX2_FMA
#define VG GraftV8f
#define VG_LANES 8
#define KR 4
#define KV 3
#define K1R 8
#include "runtime/kernels/conv-winograd-body.h"

/* 4 × 24: the tile of conv-gemm.c's AVX2 kernel (12 ymm accumulators) */
static const WinogradIsa isa_avx2 = { task_avx2, 8, 24, 4 };

GRAFT_TARGET_AVX512_BEGIN
typedef float GraftV16f __attribute__ ((vector_size (64)));
#define WG_SUFFIX avx512
/* with FMA on top of the region's AVX-512F: the transforms and the
 * half-vector products work on ymm vectors, whose FMA is not AVX-512F's
 * (every CPU of the AVX-512 level has FMA, runtime/simd.c). AVX-512F is
 * named again: clang's target attribute replaces its pragma region's
 * features where GCC's adds to them. */
#define WG_ATTR __attribute__ ((target ("avx512f,avx2,fma")))
#define VG GraftV16f
#define VG_LANES 16
#define KR 8
#define KV 3
#define K1R 8
#include "runtime/kernels/conv-winograd-body.h"
GRAFT_TARGET_AVX512_END

/* 8 × 48: 24 zmm accumulators */
static const WinogradIsa isa_avx512 = { task_avx512, 16, 48, 8 };
#endif

const GraftWinogradIsa *const graft_winograd_isas[GRAFT_SIMD_N_LEVELS] = {
  &isa_portable,
#ifdef GRAFT_HAVE_X86_SIMD
  &isa_avx2, &isa_avx512,
#endif
};

/* ---- the filter ---- */

GraftWinogradFilter *
graft_winograd_filter_new (const float *weight, gint64 M, gint64 C)
{
  gint64 panels = (M + PACK_ROWS - 1) / PACK_ROWS;
  float *data = g_try_malloc0 ((gsize) MAX (36 * panels * C * PACK_ROWS, 1) * sizeof (float));
  if (data == NULL)
    return NULL;
  /* in the order of data within each ξ, so that the 36 planes are
   * written as 36 sequential streams */
  for (gint64 p = 0; p < panels; p++)
    for (gint64 c = 0; c < C; c++)
      for (gint64 m = p * PACK_ROWS; m < MIN (M, (p + 1) * PACK_ROWS); m++)
        {
          const float *g = weight + (m * C + c) * 9;
          double gt[3][6];        /* (G g)ᵀ: column j of g transformed */
          for (int j = 0; j < 3; j++)
            g_column (g[j], g[3 + j], g[6 + j], gt[j]);
          for (int i = 0; i < 6; i++)
            {
              double u[6];        /* row i of G g Gᵀ */
              g_column (gt[0][i], gt[1][i], gt[2][i], u);
              for (int k = 0; k < 6; k++)
                data[(((6 * i + k) * panels + p) * C + c) * PACK_ROWS + m % PACK_ROWS] = (float) u[k];
            }
        }
  GraftWinogradFilter *filter = g_new (GraftWinogradFilter, 1);
  *filter = (GraftWinogradFilter) { 0, M, C, panels, data };
  return filter;
}

void
graft_winograd_filter_free (GraftWinogradFilter *filter)
{
  if (filter == NULL)
    return;
  g_free (filter->data);
  g_free (filter);
}

typedef struct {
  const float *weight;
  gint64 M, C;
} WinogradFilterArgs;

static gboolean
winograd_filter_fits (gconstpointer derived, gconstpointer args)
{
  const GraftWinogradFilter *filter = derived;
  const WinogradFilterArgs *a = args;
  return filter->zero == 0 && filter->M == a->M && filter->C == a->C;
}

static gpointer
winograd_filter_make (gconstpointer args)
{
  const WinogradFilterArgs *a = args;
  return graft_winograd_filter_new (a->weight, a->M, a->C);
}

static const GraftDerivedKind winograd_filter_kind = {
  "Winograd filter", (GDestroyNotify) graft_winograd_filter_free, FALSE, TRUE
};

const GraftWinogradFilter *
graft_winograd_filter_for (GraftKernelContext *ctx, const float *weight, gint64 M, gint64 C,
                           GraftWinogradFilter **owned)
{
  WinogradFilterArgs args = { weight, M, C };
  return graft_kernel_derived (ctx, &winograd_filter_kind, weight, winograd_filter_fits, winograd_filter_make, &args,
                               (gpointer *) owned);
}

/* ---- planning ---- */

gboolean
graft_conv_winograd_supports (const GraftWindow *w, gint64 group)
{
  return w->n == 2 && group == 1 && w->kernel[0] == 3 && w->kernel[1] == 3 && w->stride[0] == 1 &&
         w->stride[1] == 1 && w->dilation[0] == 1 && w->dilation[1] == 1;
}

/* The transformed filter is 36/9 = 4× the bytes of the weights, and it is
 * cached for the session. Each of its floats serves one multiply-add per
 * tile, so on layers with many filter floats per tile the run streams 4×
 * conv-gemm's filter bytes for little arithmetic, and the cached copies
 * dominate the process's memory: ResNet-18's layer4 (512 channels, 7×7
 * maps, 8 tiles at batch 2) would hold 38 MB per layer. Such layers stay
 * on conv-gemm until the batch brings enough tiles. */
#define MAX_FILTER_FLOATS_PER_TILE (96 * 1024)

gboolean
graft_conv_winograd_pays (const GraftWindow *w, gint64 N, gint64 C, gint64 M, gint64 group)
{
  if (!graft_conv_winograd_supports (w, group))
    return FALSE;
  gint64 tiles = N * ((w->out[0] + TILE - 1) / TILE) * ((w->out[1] + TILE - 1) / TILE);
  /* any M: the output transform's cost per output channel stays below
   * the packed GEMM's nine taps per input channel from 16 input channels
   * on (16 → 3 and 64 → 1 on 16×16 maps, batch 2: 0.64–0.73 of
   * conv-gemm's time at AVX-512 and AVX2); at 8 input channels it loses
   * at AVX2 on 32×32 maps */
  return C >= 16 && M >= 1 && tiles >= 8 && 36 * M * C <= tiles * MAX_FILTER_FLOATS_PER_TILE;
}

typedef struct {
  const WinogradIsa *isa;
  WinogradJob *job;
} WinogradRun;

/* Task i of the pool: its share of the blocks, one filter panel range. */
static void
winograd_run_task (gint64 index, gpointer data)
{
  const WinogradRun *run = data;
  const WinogradJob *job = run->job;
  gint64 bt = index / job->m_splits, split = index % job->m_splits;
  gint64 b0 = bt * job->blocks / job->block_tasks, b1 = (bt + 1) * job->blocks / job->block_tasks;
  for (gint64 b = b0; b < b1; b++)
    run->isa->task (job, b, split, job->scratch + index * job->task_floats);
}

gboolean
graft_conv_winograd (GraftKernelContext *ctx, const GraftWinogradFilter *filter, const GraftConvGemmArgs *args,
                     GError **error)
{
  const GraftWindow *w = args->w;
  if (!graft_conv_winograd_supports (w, args->group) || filter->C != args->C || filter->M != args->M)
    return graft_kernel_unsupported (error, "the Winograd convolution handles 3×3 stride-1 windows of one group");
  const WinogradIsa *isa = graft_kernel_table ()->winograd;
  WinogradJob job = { filter, args, w->in[0], w->in[1], w->out[0], w->out[1], w->pad_begin[0], w->pad_begin[1] };
  job.TH = (job.OH + TILE - 1) / TILE;
  job.TW = (job.OW + TILE - 1) / TILE;
  job.tiles = args->N * job.TH * job.TW;
  if (job.tiles == 0 || args->M == 0)
    return TRUE;

  gint64 threads = MAX (graft_kernel_get_n_threads (ctx), 1);
  /* V and M of a block within about 1 MB (L2 and a bit), but at least
   * two kernel calls wide (fewer narrow calls for the last tiles) */
  gint64 align = MAX (isa->lanes, 8), rows = filter->panels * PACK_ROWS;
  gint64 per_tile = 36 * (args->C + rows);
  gint64 widths = MAX ((gint64) (256 * 1024) / (per_tile * isa->unit), 2);
  job.tb = MIN (widths * isa->unit, (job.tiles + align - 1) / align * align);
  job.blocks = (job.tiles + job.tb - 1) / job.tb;
  job.block_tasks = MIN (threads, job.blocks);
  job.m_splits = 1;
  /* Few blocks for the threads: narrower ones (two per thread) while they
   * stay a vector multiple wide, rather than splitting a block's filter
   * rows, which has every split transform the block's inputs again
   * (ResNet-18's 28×28 and 14×14 layers at 2 threads: 15–20 % faster). */
  if (threads > 1 && job.blocks < 2 * threads && job.tiles >= 2 * threads * align)
    {
      job.tb = ((job.tiles + 2 * threads - 1) / (2 * threads) + align - 1) / align * align;
      job.blocks = (job.tiles + job.tb - 1) / job.tb;
      job.block_tasks = MIN (threads, job.blocks);
    }
  if (threads > 1 && job.blocks < 2 * threads)
    {
      job.m_splits = MAX (MIN (threads, filter->panels), 1);
      rows = (filter->panels + job.m_splits - 1) / job.m_splits * PACK_ROWS;
    }
  gint64 tasks = job.block_tasks * job.m_splits;
  job.PW = job.TW * TILE + 4;
  job.bands = MIN (args->N * job.TH, (job.tb - 1) / job.TW + 2);
  job.band_floats = (gsize) job.bands * 6 * job.PW;
  job.task_floats = (gsize) 36 * (args->C + rows) * job.tb + job.band_floats;

  g_autoptr(GraftRtTensor) scratch = graft_kernel_scratch (ctx, tasks * job.task_floats * sizeof (float), error);
  if (scratch == NULL)
    return FALSE;
  job.scratch = scratch->data;
  WinogradRun run = { isa, &job };
  graft_kernel_parallel_for (ctx, tasks, winograd_run_task, &run);
  return TRUE;
}
