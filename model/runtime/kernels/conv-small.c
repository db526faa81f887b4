/* Convolutions over small maps, output channels in the lanes (see
 * conv-small.h).
 *
 * The filter is packed once into blocks of one vector of output
 * channels, [block][tap][C][lanes]. A task takes one or two blocks (a
 * register tile of P pixels × V blocks) and a range of images; for each
 * tap it lists the pixels whose input for that tap lies inside the map
 * (a box of output rows and columns: graft_window_inside) and runs them
 * through the tile kernels a few pixels at a time, each over the whole
 * depth C. */
#include "runtime/kernels/conv-small.h"
#include "runtime/kernels/conv-winograd.h"
#include "runtime/kernels/simd-target.h"

#include <string.h>

/* Output pixels over the batch up to which the kernels here beat the
 * packed GEMM (see graft_conv_small_pays) */
#define SMALL_MAX_PIXELS 128
#define MAX_TILE_PIXELS 12
#define MAX_LANES 16

struct _GraftSmallConvFilter {
  gint64 M, C, KH, KW;
  gint64 lanes;                   /* output channels per block: the SIMD level's vector */
  gint64 blocks;                  /* ceil (M / lanes) */
  float *data;                    /* [blocks][KH·KW][C][lanes], channels past M zero */
};

typedef void (*SmallTile) (gint64 C, const float *w, gint64 w_stride, const float *const *xs, gint64 plane,
                           float *tile, const gint32 *at, gint64 ldt);

typedef struct {
  gint64 lanes;
  int max_pixels;                 /* per tile call */
  const SmallTile (*tiles)[2][MAX_TILE_PIXELS];
} SmallConvIsa;

#ifdef GRAFT_HAVE_X86_SIMD

typedef float GraftV16f __attribute__ ((vector_size (64)));
typedef float GraftV8f __attribute__ ((vector_size (32)));

GRAFT_TARGET_AVX512_BEGIN
#define SB_V GraftV16f
#define SB_LANES 16
#define SB_TARGET
#define SB_MAX_PIXELS 12
#define SB_SUFFIX avx512
#include "runtime/kernels/conv-small-body.h"
GRAFT_TARGET_AVX512_END

/* 16 ymm: up to 6 pixels × 2 blocks in 12 accumulators, two filter
 * vectors and a broadcast input value */
#define SB_V GraftV8f
#define SB_LANES 8
#define SB_TARGET GRAFT_TARGET_AVX2_FMA
#define SB_MAX_PIXELS 6
#define SB_SUFFIX avx2
#include "runtime/kernels/conv-small-body.h"

static const SmallConvIsa isa_avx512 = { 16, 12, &small_tiles_avx512 };
static const SmallConvIsa isa_avx2 = { 8, 6, &small_tiles_avx2 };

static const SmallConvIsa *
small_isa (void)
{
  const GraftKernelTable *t = graft_kernel_table ();
  return t->avx512 ? &isa_avx512 : t->avx2 ? &isa_avx2 : NULL;
}

#else

static const SmallConvIsa *
small_isa (void)
{
  return NULL;
}

#endif

/* Pointwise windows (1×1, no padding) keep the pointwise kernels of
 * conv-gemm.c, pixels in the lanes, unless their vectors of pixels would
 * be filled less than this: there, each block of output channels fills
 * its vector. Batch 2, one thread, CPU ms, pointwise → here: 512→1000 on
 * 3×3 maps (18 columns: 56 % of two zmm) AVX-512 0.304 → 0.188, 576→96
 * 0.037 → 0.021; but 512→1000 on 5×5 (50 columns, 78 % of four zmm)
 * 0.506 → 0.544. */
#define POINTWISE_MIN_FILL 0.7
/* Up to this fill, deep inputs (from POINTWISE_DEEP channels) still gain:
 * the calls' set-up is paid once per depth. 18 columns at AVX2 (75 % of
 * three ymm): 512→1000 0.250 → 0.220, 256→64 0.012 → 0.009, 576→96 0.032
 * → 0.024; but 96→576 0.035 → 0.038, 64→256 0.013 → 0.015. */
#define POINTWISE_DEEP_MIN_FILL 0.8
#define POINTWISE_DEEP 256

/* The share of the pointwise kernels' vectors that pixels fill: maps
 * narrower than a sliver go side by side (all images in one row), wider
 * ones image by image; maps of up to 8 pixels the AVX-512 kernels take
 * with the channels in the lanes already (pointwise_pair_body). */
static double
pointwise_fill (const SmallConvIsa *isa, gint64 N, gint64 hw)
{
  if (isa->lanes == 16 && hw <= 8)
    return 1;
  gint64 cols = hw < 3 * isa->lanes ? N * hw : hw;
  return (double) cols / ((cols + isa->lanes - 1) / isa->lanes * isa->lanes);
}

/* Measured on one Zen 4 core, CPU µs per run of one convolution at
 * batch 2, packed GEMM → here, AVX-512 (AVX2): 64→64 3×3 on 4×4 42 → 20
 * (71 → 24), 128→128 3×3 on 2×2 67 → 16 (78 → 20), 256→64 3×3 on 2×2
 * 120 → 20, 128→128 3×3/2 from 4×4 76 → 20 (113 → 26), 64→128 3×3/2
 * from 8×8 70 → 47 (95 → 57); even at 128 pixels (32→64 3×3/2 from
 * 16×16, 66 against 65). Winograd stays ahead on the 8×8 maps it takes
 * from 64 channels on (80→80: 116 against 143); 1×1 windows only where
 * the pointwise kernels' vectors go half empty (POINTWISE_MIN_FILL). A
 * window with taps that only ever read padding (graft_window_trim) is
 * left to the trimmed path, which keeps only the others: this filter
 * would hold all of them (DeepLabV3's atrous pyramid at small inputs: 27
 * MB of filters for 3 MB of taps). */
gboolean
graft_conv_small_pays (const GraftWindow *w, gint64 N, gint64 C, gint64 M, gint64 group)
{
  GraftWindow trimmed;
  gint64 trimmed_lo[2];
  const SmallConvIsa *isa = small_isa ();
  if (isa == NULL || group != 1 || w->n != 2 || graft_window_trim (w, &trimmed, trimmed_lo))
    return FALSE;
  if (N * w->out[0] * w->out[1] > SMALL_MAX_PIXELS || C < 8 || M < 8)
    return FALSE;
  if (w->kernel[0] * w->kernel[1] == 1)
    return w->pad_begin[0] == 0 && w->pad_begin[1] == 0 && w->pad_end[0] == 0 && w->pad_end[1] == 0 &&
           M >= isa->lanes &&
           pointwise_fill (isa, N, w->out[0] * w->out[1]) < (C >= POINTWISE_DEEP ? POINTWISE_DEEP_MIN_FILL
                                                                                : POINTWISE_MIN_FILL);
  return !graft_conv_winograd_pays (w, N, C, M, group);
}

GraftSmallConvFilter *
graft_small_conv_filter_new (const float *weight, gint64 M, gint64 C, gint64 KH, gint64 KW)
{
  const SmallConvIsa *isa = small_isa ();
  g_return_val_if_fail (isa != NULL, NULL);
  gint64 lanes = isa->lanes, blocks = (M + lanes - 1) / lanes, taps = KH * KW;
  float *data = g_try_malloc0 ((gsize) MAX (blocks * taps * C * lanes, 1) * sizeof (float));
  if (data == NULL)
    return NULL;
  for (gint64 m = 0; m < M; m++)
    for (gint64 c = 0; c < C; c++)
      for (gint64 t = 0; t < taps; t++)
        data[((m / lanes * taps + t) * C + c) * lanes + m % lanes] = weight[(m * C + c) * taps + t];
  GraftSmallConvFilter *filter = g_new (GraftSmallConvFilter, 1);
  *filter = (GraftSmallConvFilter) { M, C, KH, KW, lanes, blocks, data };
  return filter;
}

void
graft_small_conv_filter_free (GraftSmallConvFilter *filter)
{
  if (filter == NULL)
    return;
  g_free (filter->data);
  g_free (filter);
}

typedef struct {
  const float *weight;
  gint64 M, C, KH, KW;
} SmallFilterArgs;

static gboolean
small_filter_fits (gconstpointer derived, gconstpointer args)
{
  const GraftSmallConvFilter *f = derived;
  const SmallFilterArgs *a = args;
  const SmallConvIsa *isa = small_isa ();
  return isa && f->M == a->M && f->C == a->C && f->KH == a->KH && f->KW == a->KW && f->lanes == isa->lanes;
}

static gpointer
small_filter_make (gconstpointer args)
{
  const SmallFilterArgs *a = args;
  return graft_small_conv_filter_new (a->weight, a->M, a->C, a->KH, a->KW);
}

static const GraftDerivedKind small_filter_kind = {
  "small-map filter", (GDestroyNotify) graft_small_conv_filter_free, FALSE, TRUE
};

const GraftSmallConvFilter *
graft_small_conv_filter_for (GraftKernelContext *ctx, const float *weight, gint64 M, gint64 C, gint64 KH, gint64 KW,
                             GraftSmallConvFilter **owned)
{
  SmallFilterArgs args = { weight, M, C, KH, KW };
  return graft_kernel_derived (ctx, &small_filter_kind, weight, small_filter_fits, small_filter_make, &args,
                               (gpointer *) owned);
}

typedef struct {
  const SmallConvIsa *isa;
  const GraftSmallConvFilter *filter;
  const GraftConvGemmArgs *args;
  gint64 in_size, out_size;
  gint64 vecs;                    /* filter blocks per task: 1 or 2 */
  gint64 block_tasks, image_tasks;
  gint64 tile_floats;             /* per task: [its pixels][vecs · lanes] */
  float *scratch;
} SmallConvJob;

/* Task t: filter blocks [b0, b0 + vecs) of images [n0, n1). */
static void
small_conv_task (gint64 t, gpointer data)
{
  const SmallConvJob *job = data;
  const GraftConvGemmArgs *a = job->args;
  const GraftSmallConvFilter *f = job->filter;
  const GraftWindow *w = a->w;
  gint64 bt = t / job->image_tasks, it = t % job->image_tasks;
  gint64 b0 = bt * job->vecs, vecs = MIN (job->vecs, f->blocks - b0);
  gint64 n0 = it * a->N / job->image_tasks, n1 = (it + 1) * a->N / job->image_tasks;
  gint64 lanes = f->lanes, ldt = job->vecs * lanes, taps = f->KH * f->KW;
  gint64 m0 = b0 * lanes, m1 = MIN (a->M, (b0 + vecs) * lanes);
  gint64 OW = w->out[1], W = w->in[1], pixels = (n1 - n0) * job->out_size;
  float *tile = job->scratch + t * job->tile_floats;
  const float *xs[SMALL_MAX_PIXELS];
  gint32 at[SMALL_MAX_PIXELS];

  float bias[2 * MAX_LANES];
  for (gint64 m = m0; m < m0 + vecs * lanes; m++)
    bias[m - m0] = a->bias && m < a->M ? a->bias[m] : 0;
  for (gint64 p = 0; p < pixels; p++)
    memcpy (tile + p * ldt, bias, vecs * lanes * sizeof (float));

  for (gint64 ki = 0; ki < f->KH; ki++)
    {
      gint64 r0, r1;
      graft_window_inside (w, 0, ki, &r0, &r1);
      for (gint64 kj = 0; kj < f->KW && r1 > r0; kj++)
        {
          gint64 c0, c1, count = 0;
          graft_window_inside (w, 1, kj, &c0, &c1);
          gint64 dh = ki * w->dilation[0] - w->pad_begin[0], dw = kj * w->dilation[1] - w->pad_begin[1];
          for (gint64 n = n0; n < n1; n++)
            for (gint64 oh = r0; oh < r1; oh++)
              for (gint64 ow = c0; ow < c1; ow++, count++)
                {
                  xs[count] = a->x + n * a->C * job->in_size + (oh * w->stride[0] + dh) * W + ow * w->stride[1] + dw;
                  at[count] = (gint32) ((n - n0) * job->out_size + oh * OW + ow);
                }
          if (count == 0)
            continue;
          const float *wt = f->data + (b0 * taps + ki * f->KW + kj) * f->C * lanes;
          /* the pixels in calls of nearly equal size */
          gint64 calls = (count + job->isa->max_pixels - 1) / job->isa->max_pixels;
          for (gint64 i = 0; i < calls; i++)
            {
              gint64 p0 = i * count / calls, p1 = (i + 1) * count / calls;
              (*job->isa->tiles)[vecs - 1][p1 - p0 - 1] (f->C, wt, taps * f->C * lanes, xs + p0, job->in_size, tile,
                                                         at + p0, ldt);
            }
        }
    }

  /* the tile [pixel][channel] into y's planes, with the residual and the clamp */
  for (gint64 n = n0; n < n1; n++)
    for (gint64 m = m0; m < m1; m++)
      {
        gint64 base = (n * a->M + m) * job->out_size;
        const float *src = tile + (n - n0) * job->out_size * ldt + (m - m0);
        float *dst = a->y + base;
        for (gint64 p = 0; p < job->out_size; p++)
          dst[p] = src[p * ldt];
        if (a->residual)
          for (gint64 p = 0; p < job->out_size; p++)
            dst[p] += a->residual[base + p];
        if (a->clamp)
          for (gint64 p = 0; p < job->out_size; p++)
            {
              float v = dst[p];
              v = a->lo > v ? a->lo : v;   /* NaN stays NaN */
              dst[p] = a->hi < v ? a->hi : v;
            }
      }
}

gboolean
graft_conv_small (GraftKernelContext *ctx, const GraftSmallConvFilter *filter, const GraftConvGemmArgs *args,
                  GError **error)
{
  const GraftWindow *w = args->w;
  const SmallConvIsa *isa = small_isa ();
  if (isa == NULL || filter->lanes != isa->lanes || args->group != 1 || w->n != 2 ||
      args->N * w->out[0] * w->out[1] > SMALL_MAX_PIXELS || filter->M != args->M || filter->C != args->C ||
      filter->KH != w->kernel[0] || filter->KW != w->kernel[1])
    return graft_kernel_unsupported (error, "the small-map convolution does not take this window or filter");
  SmallConvJob job = { isa, filter, args };
  job.in_size = w->in[0] * w->in[1];
  job.out_size = w->out[0] * w->out[1];
  if (args->N * job.out_size == 0 || args->M == 0)
    return TRUE;
  gint64 threads = MAX (graft_kernel_get_n_threads (ctx), 1);
  /* two blocks a task where there are enough of them for the threads,
   * else one; the images apart where even that leaves a thread idle */
  job.vecs = filter->blocks >= 2 * threads ? 2 : 1;
  job.block_tasks = (filter->blocks + job.vecs - 1) / job.vecs;
  job.image_tasks = job.block_tasks < threads ? MIN (args->N, threads) : 1;
  job.tile_floats = (args->N + job.image_tasks - 1) / job.image_tasks * job.out_size * job.vecs * isa->lanes;
  gint64 tasks = job.block_tasks * job.image_tasks;
  g_autoptr(GraftRtTensor) scratch = graft_kernel_scratch (ctx, (gsize) tasks * job.tile_floats * sizeof (float),
                                                           error);
  if (scratch == NULL)
    return FALSE;
  job.scratch = scratch->data;
  graft_kernel_parallel_for (ctx, tasks, small_conv_task, &job);
  return TRUE;
}
