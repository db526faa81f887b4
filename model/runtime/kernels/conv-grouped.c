/* Grouped convolutions with few channels per group, output channels in
 * the lanes (see conv-grouped.h).
 *
 * The filter is packed once into blocks of 8 output channels of a group,
 * [group][block][KH·KW][Cg][8]. A task takes a range of (image, group)
 * pairs; for each it copies the group's input planes into zero-bordered
 * planes of the window's reach, then runs every block of the group over
 * the image's pixels a few at a time, each over the whole depth
 * Cg·KH·KW: pixel p, tap and channel k read the padded planes at
 * pixel_off[p] + k_off[k]. The AVX2 + FMA kernel serves the AVX-512 level
 * too: with 8 channels a group a zmm would be half empty. */
#include "runtime/kernels/conv-grouped.h"
#include "runtime/kernels/simd-target.h"
#include "runtime/kernels/avx2-lanes.h"

#include <string.h>

#define LANES 8                   /* output channels per filter block: one ymm */
#define MAX_PIXELS 8              /* per tile call: 8 accumulators, a filter vector and a broadcast in 16 ymm */
/* Where these kernels beat the packed GEMM (conv-grouped.h), measured on
 * one Zen 4 core, CPU ms per 3×3 convolution at batch 2, packed GEMM →
 * here, AVX2 (AVX-512): 8 channels a group on 56×56 maps 0.86 → 0.76
 * (0.76 → 0.76), on 28×28 0.47 → 0.40 (0.43 → 0.41), stride 2 from
 * 112×112 2.24 → 0.97 (1.25 → 0.94); 4 in and out a group (ResNeXt's
 * 128 channels in 32 groups) on 56×56 2.98 → 2.58 (2.42 → 2.58: half the
 * lanes empty; on 16×16 maps, still even at AVX-512). Deeper groups
 * only on small maps, where the GEMM's gathers are short: 32 a group on
 * 2×2 maps 0.41 → 0.11 (0.27 → 0.11), on 7×7 1.58 → 0.86 (1.00 → 0.87),
 * on 14×14 3.83 → 3.96 (3.05 → 3.94). */
#define MAX_GROUP_CHANNELS 16     /* input channels a group taken on any map */
#define MAX_DEEP_GROUP_CHANNELS 32 /* … and on maps of up to DEEP_MAX_PIXELS pixels */
#define DEEP_MAX_PIXELS 64
#define HALF_EMPTY_MAX_PIXELS 1024 /* fewer than LANES output channels a group: maps up to this many pixels */
#define MIN_GROUP_OUTPUTS 4       /* output channels a group, at least: fewer leave most lanes empty */
#define MAX_DEPTH 1024            /* Cg·KH·KW */

struct _GraftGroupedConvFilter {
  gint64 group, Mg, Cg, KH, KW;
  gint64 blocks;                  /* per group: ceil (Mg / LANES) */
  float *data;                    /* [group][blocks][KH·KW][Cg][LANES], channels past Mg zero */
};

/* tile [P][LANES] = Σ_k w [k][LANES] · x [pixel_off[p] + k_off[k]] */
typedef void (*GroupedTile) (gint64 K, const float *w, const gint32 *k_off, const float *x, const gint32 *pixel_off,
                             float *tile);

typedef struct {
  const GroupedTile *tiles;
  const GraftGroupedConvFilter *filter;
  const GraftConvGemmArgs *args;
  gint64 in_size, out_size;
  gint64 Hp, Wp, plane;           /* the padded planes: rows, columns, floats */
  const gint32 *k_off;            /* [Cg·KH·KW]: tap and channel k at k_off[k] in the padded planes */
  const gint32 *pixel_off;        /* [out_size]: output pixel p's window at pixel_off[p] */
  gint64 tasks, items;            /* items: (image, group) pairs */
  gsize task_floats;              /* per task: the padded planes, then a tile */
  float *scratch;
} GroupedConvJob;

#ifdef GRAFT_HAVE_X86_SIMD

typedef float GraftV8f __attribute__ ((vector_size (32)));

static inline __attribute__ ((always_inline)) GRAFT_TARGET_AVX2_FMA void
grouped_tile (gint64 K, const float *w, const gint32 *k_off, const float *x, const gint32 *pixel_off, float *tile,
              const int P)
{
  GraftV8f acc[MAX_PIXELS];
  const float *xs[MAX_PIXELS];
  for (int p = 0; p < P; p++)
    {
      acc[p] = (GraftV8f) { 0 };
      xs[p] = x + pixel_off[p];
    }
  for (gint64 k = 0; k < K; k++, w += LANES)
    {
      GraftV8f wv;
      memcpy (&wv, w, sizeof wv);
      gint64 o = k_off[k];
      for (int p = 0; p < P; p++)
        acc[p] += xs[p][o] * wv;
    }
  for (int p = 0; p < P; p++)
    memcpy (tile + p * LANES, &acc[p], sizeof (GraftV8f));
}

#define GROUPED_TILE(P)                                                                                                \
  static GRAFT_TARGET_AVX2_FMA GRAFT_HOT_LOOP __attribute__ ((noinline)) void grouped_tile_##P (                     \
    gint64 K, const float *w, const gint32 *k_off, const float *x, const gint32 *pixel_off, float *tile)              \
  {                                                                                                                    \
    grouped_tile (K, w, k_off, x, pixel_off, tile, P);                                                               \
  }
GROUPED_TILE (1) GROUPED_TILE (2) GROUPED_TILE (3) GROUPED_TILE (4)
GROUPED_TILE (5) GROUPED_TILE (6) GROUPED_TILE (7) GROUPED_TILE (8)

static const GroupedTile grouped_tiles[MAX_PIXELS] = { grouped_tile_1, grouped_tile_2, grouped_tile_3, grouped_tile_4,
                                                       grouped_tile_5, grouped_tile_6, grouped_tile_7, grouped_tile_8 };

/* n floats, a few at a time: rows of small maps, where a call to memcpy
 * per row would cost more than the copy */
static inline GRAFT_TARGET_AVX2_FMA void
copy_row (float *dst, const float *src, gint64 n)
{
  gint64 i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps (dst + i, _mm256_loadu_ps (src + i));
  for (; i + 4 <= n; i += 4)
    _mm_storeu_ps (dst + i, _mm_loadu_ps (src + i));
  for (; i < n; i++)
    dst[i] = src[i];
}

/* The group's input planes of image n into the padded planes, whose
 * borders (the padding) stay zero from the task's start: every pair
 * writes the same interior. */
static GRAFT_TARGET_AVX2_FMA void
pad_planes (const GroupedConvJob *job, gint64 n, gint64 g, float *planes)
{
  const GraftConvGemmArgs *a = job->args;
  const GraftWindow *w = a->w;
  gint64 Cg = job->filter->Cg, H = w->in[0], W = w->in[1], pt = w->pad_begin[0], pl = w->pad_begin[1];
  gint64 rows = MIN (H, job->Hp - pt), cols = MIN (W, job->Wp - pl);
  if (rows <= 0 || cols <= 0)
    return;
  for (gint64 c = 0; c < Cg; c++)
    {
      const float *src = a->x + (n * a->C + g * Cg + c) * job->in_size;
      float *dst = planes + c * job->plane + pt * job->Wp + pl;
      for (gint64 r = 0; r < rows; r++, src += W, dst += job->Wp)
        copy_row (dst, src, cols);
    }
}

/* The 8 × 8 floats of r transposed: r[i][j] → r[j][i]. */
static inline GRAFT_TARGET_AVX2_FMA void
transpose8 (__m256 r[8])
{
  __m256 t[8], u[8];
  for (int i = 0; i < 8; i += 2)
    {
      t[i] = _mm256_unpacklo_ps (r[i], r[i + 1]);
      t[i + 1] = _mm256_unpackhi_ps (r[i], r[i + 1]);
    }
  for (int i = 0; i < 8; i += 4)
    {
      u[i] = _mm256_shuffle_ps (t[i], t[i + 2], _MM_SHUFFLE (1, 0, 1, 0));
      u[i + 1] = _mm256_shuffle_ps (t[i], t[i + 2], _MM_SHUFFLE (3, 2, 3, 2));
      u[i + 2] = _mm256_shuffle_ps (t[i + 1], t[i + 3], _MM_SHUFFLE (1, 0, 1, 0));
      u[i + 3] = _mm256_shuffle_ps (t[i + 1], t[i + 3], _MM_SHUFFLE (3, 2, 3, 2));
    }
  for (int i = 0; i < 4; i++)
    {
      r[i] = _mm256_permute2f128_ps (u[i], u[i + 4], 0x20);
      r[i + 4] = _mm256_permute2f128_ps (u[i], u[i + 4], 0x31);
    }
}

/* tile [P][LANES] (channels m0 .. m1 of y, m1 - m0 ≤ LANES) into y's
 * planes at pixels p0 .. p0 + P of image n, with bias, residual and
 * clamp: transposed in registers, a channel's P pixels a vector. */
static GRAFT_TARGET_AVX2_FMA void
store_tile (const GroupedConvJob *job, const float *tile, gint64 n, gint64 m0, gint64 m1, gint64 p0, gint64 P)
{
  const GraftConvGemmArgs *a = job->args;
  __m256 r[8];
  for (int p = 0; p < 8; p++)
    r[p] = p < P ? _mm256_loadu_ps (tile + p * LANES) : _mm256_setzero_ps ();
  transpose8 (r);
  __m256i lanes = graft_first_lanes8 (P);
  __m256 lo = _mm256_set1_ps (a->lo), hi = _mm256_set1_ps (a->hi);
  for (gint64 m = m0; m < m1; m++)
    {
      gint64 at = (n * a->M + m) * job->out_size + p0;
      __m256 v = r[m - m0];
      if (a->bias)
        v = _mm256_add_ps (v, _mm256_set1_ps (a->bias[m]));
      if (a->residual)
        v = _mm256_add_ps (v, P == 8 ? _mm256_loadu_ps (a->residual + at) : _mm256_maskload_ps (a->residual + at, lanes));
      if (a->clamp)
        v = _mm256_min_ps (hi, _mm256_max_ps (lo, v));   /* the second operand for NaN: NaN stays NaN */
      if (P == 8)
        _mm256_storeu_ps (a->y + at, v);
      else
        _mm256_maskstore_ps (a->y + at, lanes, v);
    }
}

static GRAFT_TARGET_AVX2_FMA void
grouped_conv_task (gint64 t, gpointer data)
{
  const GroupedConvJob *job = data;
  const GraftConvGemmArgs *a = job->args;
  const GraftGroupedConvFilter *f = job->filter;
  gint64 i0 = t * job->items / job->tasks, i1 = (t + 1) * job->items / job->tasks;
  gint64 K = f->Cg * f->KH * f->KW, Mg = f->Mg, out_size = job->out_size;
  float *planes = job->scratch + t * job->task_floats;
  float *tile = planes + f->Cg * job->plane;
  /* calls of nearly equal numbers of pixels */
  gint64 calls = (out_size + MAX_PIXELS - 1) / MAX_PIXELS;

  memset (planes, 0, f->Cg * job->plane * sizeof (float));
  for (gint64 i = i0; i < i1; i++)
    {
      gint64 n = i / a->group, g = i % a->group;
      pad_planes (job, n, g, planes);
      for (gint64 b = 0; b < f->blocks; b++)
        {
          const float *wb = f->data + (g * f->blocks + b) * K * LANES;
          gint64 m0 = g * Mg + b * LANES, m1 = g * Mg + MIN (Mg, (b + 1) * LANES);
          for (gint64 c = 0; c < calls; c++)
            {
              gint64 p0 = c * out_size / calls, p1 = (c + 1) * out_size / calls;
              job->tiles[p1 - p0 - 1] (K, wb, job->k_off, planes, job->pixel_off + p0, tile);
              store_tile (job, tile, n, m0, m1, p0, p1 - p0);
            }
        }
    }
}

static const GroupedTile *
tiles_for_level (void)
{
  return graft_kernel_table ()->avx2 ? grouped_tiles : NULL;
}

#else

static const GroupedTile *
tiles_for_level (void)
{
  return NULL;
}

/* never run: graft_conv_grouped_pays declines every convolution here */
static void
grouped_conv_task (gint64 t, gpointer data)
{
  g_return_if_reached ();
}

#endif

gboolean
graft_conv_grouped_pays (const GraftWindow *w, gint64 N, gint64 C, gint64 M, gint64 group)
{
  if (tiles_for_level () == NULL || w->n != 2 || group <= 1 || C % group != 0 || M % group != 0 ||
      w->out[0] <= 0 || w->out[1] <= 0 || w->pad_begin[0] < 0 || w->pad_begin[1] < 0)
    return FALSE;
  gint64 Cg = C / group, Mg = M / group, taps = w->kernel[0] * w->kernel[1], pixels = w->out[0] * w->out[1];
  /* a 1×1 window: the pointwise kernels read x in place, nothing to gather */
  if (taps == 1 || Mg < MIN_GROUP_OUTPUTS || Cg * taps > MAX_DEPTH ||
      Cg > (pixels <= DEEP_MAX_PIXELS ? MAX_DEEP_GROUP_CHANNELS : MAX_GROUP_CHANNELS) ||
      (Mg < LANES && pixels > HALF_EMPTY_MAX_PIXELS))
    return FALSE;
  /* taps that only ever read padding: the trimmed path keeps only the others */
  GraftWindow trimmed;
  gint64 trimmed_lo[2];
  if (graft_window_trim (w, &trimmed, trimmed_lo))
    return FALSE;
  /* the padded planes of a group are addressed with 32-bit offsets */
  gint64 Hp = (w->out[0] - 1) * w->stride[0] + (w->kernel[0] - 1) * w->dilation[0] + 1;
  gint64 Wp = (w->out[1] - 1) * w->stride[1] + (w->kernel[1] - 1) * w->dilation[1] + 1;
  return Cg * Hp * Wp < G_MAXINT32;
}

GraftGroupedConvFilter *
graft_grouped_conv_filter_new (const float *weight, gint64 group, gint64 Mg, gint64 Cg, gint64 KH, gint64 KW)
{
  gint64 blocks = (Mg + LANES - 1) / LANES, taps = KH * KW;
  float *data = g_try_malloc0 ((gsize) MAX (group * blocks * taps * Cg * LANES, 1) * sizeof (float));
  if (data == NULL)
    return NULL;
  for (gint64 g = 0; g < group; g++)
    for (gint64 m = 0; m < Mg; m++)
      for (gint64 c = 0; c < Cg; c++)
        for (gint64 t = 0; t < taps; t++)
          data[(((g * blocks + m / LANES) * taps + t) * Cg + c) * LANES + m % LANES] =
            weight[((g * Mg + m) * Cg + c) * taps + t];
  GraftGroupedConvFilter *filter = g_new (GraftGroupedConvFilter, 1);
  *filter = (GraftGroupedConvFilter) { group, Mg, Cg, KH, KW, blocks, data };
  return filter;
}

void
graft_grouped_conv_filter_free (GraftGroupedConvFilter *filter)
{
  if (filter == NULL)
    return;
  g_free (filter->data);
  g_free (filter);
}

typedef struct {
  const float *weight;
  gint64 group, Mg, Cg, KH, KW;
} GroupedFilterArgs;

static gboolean
grouped_filter_fits (gconstpointer derived, gconstpointer args)
{
  const GraftGroupedConvFilter *f = derived;
  const GroupedFilterArgs *a = args;
  return f->group == a->group && f->Mg == a->Mg && f->Cg == a->Cg && f->KH == a->KH && f->KW == a->KW;
}

static gpointer
grouped_filter_make (gconstpointer args)
{
  const GroupedFilterArgs *a = args;
  return graft_grouped_conv_filter_new (a->weight, a->group, a->Mg, a->Cg, a->KH, a->KW);
}

static const GraftDerivedKind grouped_filter_kind = {
  "grouped filter", (GDestroyNotify) graft_grouped_conv_filter_free, FALSE, TRUE
};

const GraftGroupedConvFilter *
graft_grouped_conv_filter_for (GraftKernelContext *ctx, const float *weight, gint64 group, gint64 Mg, gint64 Cg,
                               gint64 KH, gint64 KW, GraftGroupedConvFilter **owned)
{
  GroupedFilterArgs args = { weight, group, Mg, Cg, KH, KW };
  return graft_kernel_derived (ctx, &grouped_filter_kind, weight, grouped_filter_fits, grouped_filter_make, &args,
                               (gpointer *) owned);
}

gboolean
graft_conv_grouped (GraftKernelContext *ctx, const GraftGroupedConvFilter *filter, const GraftConvGemmArgs *args,
                    GError **error)
{
  const GraftWindow *w = args->w;
  const GroupedTile *tiles = tiles_for_level ();
  if (!graft_conv_grouped_pays (w, args->N, args->C, args->M, args->group) || filter->group != args->group ||
      filter->Mg * args->group != args->M || filter->Cg * args->group != args->C || filter->KH != w->kernel[0] ||
      filter->KW != w->kernel[1])
    return graft_kernel_unsupported (error, "the grouped convolution does not take this window or filter");
  GroupedConvJob job = { tiles, filter, args };
  job.in_size = w->in[0] * w->in[1];
  job.out_size = w->out[0] * w->out[1];
  job.items = args->N * args->group;
  if (job.items == 0 || job.out_size == 0)
    return TRUE;
  job.Hp = (w->out[0] - 1) * w->stride[0] + (w->kernel[0] - 1) * w->dilation[0] + 1;
  job.Wp = (w->out[1] - 1) * w->stride[1] + (w->kernel[1] - 1) * w->dilation[1] + 1;
  job.plane = job.Hp * job.Wp;
  gint64 K = filter->Cg * filter->KH * filter->KW, threads = MAX (graft_kernel_get_n_threads (ctx), 1);
  job.tasks = MIN (job.items, threads > 1 ? 4 * threads : 1);
  job.task_floats = (gsize) filter->Cg * job.plane + MAX_PIXELS * LANES;

  gsize ints = (gsize) (K + job.out_size + 15) / 16 * 16;
  g_autoptr(GraftRtTensor) scratch =
    graft_kernel_scratch (ctx, (ints + job.tasks * job.task_floats) * sizeof (float), error);
  if (scratch == NULL)
    return FALSE;
  gint32 *k_off = scratch->data, *pixel_off = k_off + K;
  for (gint64 t = 0; t < filter->KH * filter->KW; t++)
    for (gint64 c = 0; c < filter->Cg; c++)
      k_off[t * filter->Cg + c] = (gint32) (c * job.plane + t / filter->KW * w->dilation[0] * job.Wp +
                                            t % filter->KW * w->dilation[1]);
  for (gint64 p = 0; p < job.out_size; p++)
    pixel_off[p] = (gint32) (p / w->out[1] * w->stride[0] * job.Wp + p % w->out[1] * w->stride[1]);
  job.k_off = k_off;
  job.pixel_off = pixel_off;
  job.scratch = (float *) scratch->data + ints;
  graft_kernel_parallel_for (ctx, job.tasks, grouped_conv_task, &job);
  return TRUE;
}
