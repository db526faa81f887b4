/* graft::PointwiseDepthwiseConv: MobileNet's inverted residual block —
 * a 1×1 convolution → [Relu/Clip] → depthwise convolution → [Relu/Clip]
 * [→ 1×1 projection [→ + the block's input]], or the same without the
 * first convolution when the projection is there (MobileNetV1's blocks,
 * V2's first: the depthwise layer reads x's rows in place) — as one step
 * (runtime/fusion-patterns.h finds the pattern).
 *
 * Run as separate nodes, the expansion writes a tensor six times wider
 * than its input (MobileNetV2's second block: 9.6 MB at batch 2), larger
 * than L2, the depthwise layer reads it back and writes another as wide,
 * and the projection reads that: each layer then runs at the speed of
 * memory (writing the expansion cost twice as long as computing it).
 * Here a task expands a band of rows into a buffer that stays in L2 (the
 * rows the band's depthwise window reads) and runs the depthwise window
 * over it straight away, and with a projection, projects the band's
 * depthwise output (also in L2) into y, adding the residual: neither wide
 * tensor is written out. A task takes consecutive bands of one image and
 * keeps the rows where one band's window meets the next's, so only its
 * first band recomputes them. Where an image gives too few bands for the
 * threads (7×7 maps at batch 1), tasks take bands of a block of channels
 * instead, and the projection runs over the whole depthwise output
 * afterwards. The kernels are those of the separate layers
 * (graft_conv_pointwise_block, graft_conv_depthwise_plan_run, the
 * pointwise path of graft_conv_gemm), so the sums are the same.
 *
 * It declines (no output: the nodes run) anything but float32 tensors
 * of 1×1 convolutions of one group, unit stride and no padding around a
 * depthwise window the AVX kernels take, a residual of y's shape, maps
 * of up to SEPARATE_MAX_PIXELS pixels, and the portable SIMD level. */
#include "runtime/fusion-patterns.h"
#include "runtime/kernels/conv-depthwise.h"
#include "runtime/kernels/conv-gemm.h"
#include "runtime/kernels/kernel-util.h"
#include "runtime/kernels/kernel-table.h"

#include <math.h>
#include <string.h>

/* a task's buffers (the expanded band, and the depthwise band when it is
 * projected) sized to stay in L2 beside the band of x they come from */
#define BAND_BYTES (512 * 1024)
#define WHOLE_BAND_BYTES (1024 * 1024)
/* channels per block when the rows allow it: each column of x read from
 * L1 serves eight filter panels */
#define MIN_BLOCK_CHANNELS 64
/* whole bands: a task takes at least this many output rows, so that the
 * rows it recomputes where it starts stay few */
#define MIN_TASK_ROWS 8
/* Maps of up to this many pixels are left to the separate nodes: their
 * pointwise kernels take every image in one pass over the filter (16
 * channels × 8 columns a vector at AVX-512, the images side by side at
 * AVX2), the bands here one image at a time in kernels of 4 columns, and
 * the expanded tensor of such maps stays in cache anyway. MnasNet 0.5's
 * five blocks on 2×2 maps at batch 2, one thread, CPU ms: AVX-512 0.257
 * → 0.235, AVX2 0.306 → 0.255; its 4×4 blocks stay fused (separate:
 * 0.047 → 0.069 AVX-512, 0.072 → 0.083 AVX2). */
#define SEPARATE_MAX_PIXELS 8
/* task buffers: one per task running at once (a bit each in a word) */
#define MAX_SLOTS 64

/* How a run's work is cut: bands of output rows, blocks of channels, and
 * the tasks that take them; planned for one shape and thread count and
 * kept with the packed filter while they stay the same. */
typedef struct {
  GraftWindow dw;                   /* the depthwise window over the whole map */
  gint64 N;
  guint threads;
  GraftSimdLevel level;             /* the depthwise plans' kernels are the level's */
  gboolean expand, project;         /* planned for an expansion, a projection */
  /* whole bands (every channel, the projection per band, tasks of
   * consecutive bands of one image); else bands of channel blocks */
  gboolean whole;
  gint64 band_rows, bands;          /* output rows per band (the last may have fewer) */
  gint64 block_channels, blocks;    /* channel blocks (whole: one, every channel) */
  gint64 ranges;                    /* whole: tasks per image, each a range of bands */
  gint64 items, tasks;              /* blocks: image × band × block, a range per task */
  gint64 e_plane;                   /* floats per channel of the expanded buffer (its most rows × W) */
  gint64 d_plane;                   /* whole: floats per channel of the depthwise band */
  gint64 slot_floats;               /* a task's buffers */
  gint64 *first_row, *rows;         /* per band: the input rows it reads */
  GraftDepthwisePlan **plans;       /* per band; bands of one shape share one (owned by the first) */
  const float *w2;                  /* the depthwise weights the plans were made for */
} BandPlan;

static void
band_plan_free (BandPlan *plan)
{
  if (plan == NULL)
    return;
  for (gint64 b = 0; plan->plans && b < plan->bands; b++)
    if (b == 0 || plan->plans[b] != plan->plans[b - 1])
      graft_conv_depthwise_plan_free (plan->plans[b]);
  g_free (plan->plans);
  g_free (plan->first_row);
  g_free (plan->rows);
  g_free (plan);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (BandPlan, band_plan_free)

/* Input rows that output rows [oh0, oh0 + count) of window w read. */
static void
band_input_rows (const GraftWindow *w, gint64 oh0, gint64 count, gint64 *first, gint64 *last)
{
  gint64 top = oh0 * w->stride[0] - w->pad_begin[0];
  *first = MAX (top, 0);
  *last = MIN (w->in[0], top + (count - 1) * w->stride[0] + (w->kernel[0] - 1) * w->dilation[0] + 1);
}

/* Output rows per band whose buffers fit in `bytes`: the expanded rows
 * of `channels` channels, and with `depthwise_too` their depthwise rows. */
static gint64
rows_that_fit (const GraftWindow *dw, gint64 channels, gboolean depthwise_too, gint64 bytes)
{
  gint64 reach = (dw->kernel[0] - 1) * dw->dilation[0] + 1, row = dw->in[1] * (gint64) sizeof (float);
  gint64 out_row = depthwise_too ? dw->out[1] * (gint64) sizeof (float) : 0;
  /* (r - 1)·s + reach expanded rows and r depthwise rows, per channel */
  gint64 per_rows = channels * (dw->stride[0] * row + out_row), fixed = channels * (reach - dw->stride[0]) * row;
  return CLAMP ((bytes - fixed) / MAX (per_rows, 1), 1, dw->out[0]);
}

/* The plan for Ce expanded channels; NULL when a band would read no
 * input row (padding taller than the window's reach: the nodes handle
 * it). */
static BandPlan *
band_plan_new (const GraftWindow *dw, const float *w2, gint64 N, gint64 Ce, guint threads, gboolean expand,
               gboolean project)
{
  g_autoptr(BandPlan) plan = g_new0 (BandPlan, 1);
  plan->w2 = w2;
  plan->dw = *dw;
  plan->N = N;
  plan->threads = threads;
  plan->level = graft_kernel_table ()->level;
  plan->expand = expand;
  plan->project = project;
  gint64 OH = dw->out[0], W = dw->in[1], reach = (dw->kernel[0] - 1) * dw->dilation[0] + 1;

  /* whole bands when each thread gets a task of MIN_TASK_ROWS rows */
  gint64 per_image = CLAMP ((2 * (gint64) threads + N - 1) / N, 1, MAX (OH / MIN_TASK_ROWS, 1));
  plan->whole = project && (threads == 1 || N * per_image >= (gint64) threads);
  if (plan->whole)
    {
      plan->band_rows = MIN (rows_that_fit (dw, Ce, TRUE, WHOLE_BAND_BYTES), (OH + per_image - 1) / per_image);
      plan->bands = (OH + plan->band_rows - 1) / plan->band_rows;
      plan->ranges = MIN (per_image, plan->bands);
      plan->block_channels = Ce;
      plan->blocks = 1;
      plan->items = plan->tasks = N * plan->ranges;
    }
  else
    {
      gint64 min_block = MIN (Ce, MIN_BLOCK_CHANNELS);
      plan->band_rows = rows_that_fit (dw, min_block, FALSE, BAND_BYTES);
      plan->bands = (OH + plan->band_rows - 1) / plan->band_rows;
      gint64 band_input = MIN ((plan->band_rows - 1) * dw->stride[0] + reach, dw->in[0]);
      gint64 channels = MAX (BAND_BYTES / (band_input * W * (gint64) sizeof (float)), min_block);
      plan->blocks = (Ce + channels - 1) / channels;
      /* enough items to spread over the threads */
      if (threads > 1 && N * plan->bands * plan->blocks < 2 * (gint64) threads)
        plan->blocks = MAX (plan->blocks, (2 * (gint64) threads + N * plan->bands - 1) / (N * plan->bands));
      /* even blocks, in whole filter panels */
      plan->block_channels = (Ce + plan->blocks - 1) / plan->blocks;
      plan->block_channels = (plan->block_channels + GRAFT_CONV_GEMM_ROWS - 1) / GRAFT_CONV_GEMM_ROWS *
                             GRAFT_CONV_GEMM_ROWS;
      plan->blocks = (Ce + plan->block_channels - 1) / plan->block_channels;
      plan->items = N * plan->bands * plan->blocks;
      /* an item per task, handed out as threads come free: an even share
       * whatever each costs (eight tasks of 3 or 4 items left one of two
       * threads idle for 10 % of the time) */
      plan->tasks = threads == 1 ? 1 : threads <= MAX_SLOTS ? plan->items : MIN (plan->items, MAX_SLOTS);
    }
  gint64 band_input = MIN ((plan->band_rows - 1) * dw->stride[0] + reach, dw->in[0]);
  plan->e_plane = band_input * W;
  plan->d_plane = plan->whole ? plan->band_rows * dw->out[1] : 0;
  plan->slot_floats = MAX (plan->block_channels * ((expand ? plan->e_plane : 0) + plan->d_plane), 1);

  plan->first_row = g_new (gint64, plan->bands);
  plan->rows = g_new (gint64, plan->bands);
  plan->plans = g_new0 (GraftDepthwisePlan *, plan->bands);
  GraftWindow last = { 0 };   /* the previous band's window */
  for (gint64 b = 0; b < plan->bands; b++)
    {
      gint64 oh0 = b * plan->band_rows, count = MIN (plan->band_rows, OH - oh0), r1;
      band_input_rows (dw, oh0, count, &plan->first_row[b], &r1);
      plan->rows[b] = r1 - plan->first_row[b];
      if (plan->rows[b] <= 0)
        return NULL;
      GraftWindow w = *dw;
      w.in[0] = plan->rows[b];
      w.out[0] = count;
      w.pad_begin[0] = plan->first_row[b] - (oh0 * dw->stride[0] - dw->pad_begin[0]);
      w.pad_end[0] = MAX ((count - 1) * dw->stride[0] + reach - w.pad_begin[0] - w.in[0], 0);
      if (b > 0 && graft_window_equal (&w, &last))
        plan->plans[b] = plan->plans[b - 1];
      else
        plan->plans[b] = graft_conv_depthwise_plan_new_for_weights (&w, w2, Ce);
      last = w;
    }
  return g_steal_pointer (&plan);
}

/* What the step keeps between runs (graft_kernel_derived, keyed by
 * the expansion's weights): the packed filters and the last run's plan. */
typedef struct {
  GraftPackedFilter *filter;        /* the expansion's */
  GraftPackedFilter *project;       /* the projection's, or NULL */
  BandPlan *plan;
} FusedDerived;

static void
fused_derived_free (FusedDerived *derived)
{
  graft_packed_filter_free (derived->filter);
  graft_packed_filter_free (derived->project);
  band_plan_free (derived->plan);
  g_free (derived);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (FusedDerived, fused_derived_free)

typedef struct {
  const GraftRtTensor *w1, *w3;     /* the expansion's and projection's weights, or NULL */
  gint64 Cin, Ce, M;
} FusedFilterArgs;

static gboolean
fused_filters_fit (gconstpointer kept, gconstpointer args)
{
  const FusedDerived *derived = kept;
  const FusedFilterArgs *a = args;
  return (a->w1 == NULL || graft_packed_filter_matches (derived->filter, 1, a->Ce, a->Cin)) &&
         (a->w3 == NULL || graft_packed_filter_matches (derived->project, 1, a->M, a->Ce));
}

/* The packed filters (the plan comes later), or NULL when out of memory. */
static gpointer
fused_filters_make (gconstpointer args)
{
  const FusedFilterArgs *a = args;
  g_autoptr(FusedDerived) derived = g_new0 (FusedDerived, 1);
  derived->filter = a->w1 ? graft_packed_filter_new (a->w1->data, 1, a->Ce, a->Cin) : NULL;
  derived->project = a->w3 ? graft_packed_filter_new (a->w3->data, 1, a->M, a->Ce) : NULL;
  if ((a->w1 && derived->filter == NULL) || (a->w3 && derived->project == NULL))
    return NULL;
  return g_steal_pointer (&derived);
}

static const GraftDerivedKind fused_derived_kind = {
  "packed filters of an inverted residual", (GDestroyNotify) fused_derived_free, FALSE
};

typedef struct {
  const float *x, *w2, *b1, *b2, *b3, *residual;
  float *y;                         /* the depthwise output (blocks) or the projection's (whole) */
  const GraftPackedFilter *filter, *project;
  const BandPlan *plan;
  gint64 Cin, Ce, M, taps;          /* M: the projection's channels */
  gboolean clamp1;
  float lo1, hi1, lo2, hi2;
  float *scratch;                   /* plan->slot_floats per slot */
  guint64 *free_slots;              /* atomic: bit i, buffer i is free */
} PointwiseDepthwiseJob;

/* A free buffer of the threads' (as many as can run tasks at once, up to
 * MAX_SLOTS: past that a task waits for one). */
static int
take_slot (const PointwiseDepthwiseJob *job)
{
  for (;;)
    {
      guint64 free_slots = __atomic_load_n (job->free_slots, __ATOMIC_ACQUIRE);
      if (free_slots == 0)
        {
          g_thread_yield ();
          continue;
        }
      int slot = __builtin_ctzll (free_slots);
      if (__atomic_compare_exchange_n (job->free_slots, &free_slots, free_slots & ~(G_GUINT64_CONSTANT (1) << slot),
                                       FALSE, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return slot;
    }
}

static void
give_slot (const PointwiseDepthwiseJob *job, int slot)
{
  __atomic_fetch_or (job->free_slots, G_GUINT64_CONSTANT (1) << slot, __ATOMIC_RELEASE);
}

/* Blocks: items (image, band, channel block) of the depthwise output. */
static void
block_task (gint64 t, gpointer data)
{
  const PointwiseDepthwiseJob *job = data;
  const BandPlan *plan = job->plan;
  int slot = take_slot (job);
  float *expanded = job->scratch + slot * plan->slot_floats;
  gint64 H = plan->dw.in[0], W = plan->dw.in[1], OH = plan->dw.out[0], OW = plan->dw.out[1];
  for (gint64 item = t * plan->items / plan->tasks; item < (t + 1) * plan->items / plan->tasks; item++)
    {
      gint64 block = item % plan->blocks, band = item / plan->blocks % plan->bands;
      gint64 n = item / plan->blocks / plan->bands;
      gint64 c0 = block * plan->block_channels, c1 = MIN (job->Ce, c0 + plan->block_channels);
      gint64 r0 = plan->first_row[band], cols = plan->rows[band] * W, oh0 = band * plan->band_rows;
      /* the depthwise layer's input: the expanded band, or x's rows themselves */
      const float *source = job->x + (n * job->Cin + c0) * H * W + r0 * W;
      gint64 source_plane = H * W;
      if (job->filter)
        {
          graft_conv_pointwise_block (job->filter, c0, c1, job->x + n * job->Cin * H * W + r0 * W, H * W, cols,
                                      expanded, NULL, plan->e_plane, job->b1 ? job->b1 + c0 : NULL, job->clamp1,
                                      job->lo1, job->hi1);
          source = expanded;
          source_plane = plan->e_plane;
        }
      graft_conv_depthwise_plan_run (NULL, plan->plans[band], source, source_plane, job->w2 + c0 * job->taps,
                                     job->b2 ? job->b2 + c0 : NULL, job->y + ((n * job->Ce + c0) * OH + oh0) * OW,
                                     OH * OW, c1 - c0, c1 - c0, job->lo2, job->hi2);
    }
  give_slot (job, slot);
}

/* Whole bands: task t is range t % ranges of the bands of image t /
 * ranges, expanded, depthwise and projected band by band; the expanded
 * rows a band shares with the one before are kept, not recomputed. */
static void
whole_task (gint64 t, gpointer data)
{
  const PointwiseDepthwiseJob *job = data;
  const BandPlan *plan = job->plan;
  int slot = take_slot (job);
  /* the expanded band (with an expansion), then the depthwise band */
  float *expanded = job->scratch + slot * plan->slot_floats;
  float *depthwise = expanded + (job->filter ? job->Ce * plan->e_plane : 0);
  gint64 H = plan->dw.in[0], W = plan->dw.in[1], OH = plan->dw.out[0], OW = plan->dw.out[1];
  gint64 n = t / plan->ranges, range = t % plan->ranges;
  gint64 have_first = 0, have_last = 0;   /* the input rows in the expanded buffer */
  for (gint64 band = range * plan->bands / plan->ranges; band < (range + 1) * plan->bands / plan->ranges; band++)
    {
      gint64 r0 = plan->first_row[band], r1 = r0 + plan->rows[band], oh0 = band * plan->band_rows;
      /* the depthwise layer's input: the expanded band, or x's rows themselves */
      const float *source = job->x + (n * job->Cin * H + r0) * W;
      gint64 source_plane = H * W;
      if (job->filter)
        {
          gint64 keep = have_first <= r0 && r0 < have_last ? MIN (have_last, r1) - r0 : 0;
          if (keep > 0 && r0 > have_first)
            for (gint64 c = 0; c < job->Ce; c++)
              memmove (expanded + c * plan->e_plane, expanded + c * plan->e_plane + (r0 - have_first) * W,
                       keep * W * sizeof (float));
          graft_conv_pointwise_block (job->filter, 0, job->Ce, job->x + (n * job->Cin * H + r0 + keep) * W, H * W,
                                      (r1 - r0 - keep) * W, expanded + keep * W, NULL, plan->e_plane, job->b1,
                                      job->clamp1, job->lo1, job->hi1);
          have_first = r0;
          have_last = r1;
          source = expanded;
          source_plane = plan->e_plane;
        }
      graft_conv_depthwise_plan_run (NULL, plan->plans[band], source, source_plane, job->w2, job->b2, depthwise,
                                     plan->d_plane, job->Ce, job->Ce, job->lo2, job->hi2);
      gint64 at = n * job->M * OH * OW + oh0 * OW, count = MIN (plan->band_rows, OH - oh0);
      graft_conv_pointwise_block (job->project, 0, job->M, depthwise, plan->d_plane, count * OW, job->y + at,
                                  job->residual ? job->residual + at : NULL, OH * OW, job->b3, FALSE, -INFINITY,
                                  INFINITY);
    }
  give_slot (job, slot);
}

static gboolean
is_f32 (const GraftRtTensor *t, int rank)
{
  return t->dtype == GRAFT_DTYPE_FLOAT32 && t->rank == rank;
}

/* The window of a Conv node of the pattern over map; FALSE (error
 * cleared: the nodes will say what is wrong) when it does not compute. */
static gboolean
node_window (GraftNode *conv, const gint64 *map, const gint64 *kernel, GraftWindow *w)
{
  g_autoptr(GError) ignored = NULL;
  return graft_window_geometry (conv, 2, map, kernel, FALSE, FALSE, w, &ignored);
}

/* A 1×1 window of unit stride and no padding over map (the matcher has
 * seen that the node has one group). */
static gboolean
pointwise_window (GraftNode *node, const gint64 *map)
{
  gint64 one[2] = { 1, 1 };
  GraftWindow w;
  return node_window (node, map, one, &w) && w.stride[0] == 1 && w.stride[1] == 1 && w.out[0] == w.in[0] &&
         w.out[1] == w.in[1] && w.pad_begin[0] == 0 && w.pad_begin[1] == 0;
}

static gboolean
kernel_pointwise_depthwise (GraftKernelContext *ctx, GError **error)
{
  const GraftPointwiseDepthwiseFusion *f = graft_kernel_get_pattern (ctx);
  const GraftRtTensor *x = ctx->inputs[GRAFT_POINTWISE_DEPTHWISE_FUSION_X];
  const GraftRtTensor *w1 = ctx->inputs[GRAFT_POINTWISE_DEPTHWISE_FUSION_W1];
  const GraftRtTensor *w2 = ctx->inputs[GRAFT_POINTWISE_DEPTHWISE_FUSION_W2];
  const GraftRtTensor *w3 = graft_kernel_input (ctx, GRAFT_POINTWISE_DEPTHWISE_FUSION_W3);
  const GraftRtTensor *b1 = graft_kernel_input (ctx, GRAFT_POINTWISE_DEPTHWISE_FUSION_B1);
  const GraftRtTensor *b2 = graft_kernel_input (ctx, GRAFT_POINTWISE_DEPTHWISE_FUSION_B2);
  const GraftRtTensor *b3 = graft_kernel_input (ctx, GRAFT_POINTWISE_DEPTHWISE_FUSION_B3);
  if (!graft_conv_gemm_available () || f == NULL || x == NULL ||
      w2 == NULL || (f->pointwise != NULL) != (w1 != NULL) || (f->project != NULL) != (w3 != NULL) || !is_f32 (x, 4) ||
      (w1 && !is_f32 (w1, 4)) || !is_f32 (w2, 4) || (w3 && !is_f32 (w3, 4)) || (b1 && !is_f32 (b1, 1)) ||
      (b2 && !is_f32 (b2, 1)) || (b3 && !is_f32 (b3, 1)))
    return TRUE;   /* declined: no output */
  gint64 N = x->dims[0], Cin = x->dims[1], Ce = w1 ? w1->dims[0] : Cin, M = w3 ? w3->dims[0] : Ce;
  GraftWindow dw;
  if (w1 && (w1->dims[1] != Cin || w1->dims[2] != 1 || w1->dims[3] != 1 || (b1 && b1->dims[0] != Ce) ||
             !pointwise_window (f->pointwise, x->dims + 2)))
    return TRUE;
  if (w2->dims[0] != Ce || w2->dims[1] != 1 || (b2 && b2->dims[0] != Ce) ||
      graft_node_attr_int (f->depthwise, "group", 1) != Ce || !node_window (f->depthwise, x->dims + 2, w2->dims + 2, &dw) ||
      !graft_conv_depthwise_supports (&dw) || dw.out[0] <= 0 || dw.out[1] <= 0 || N == 0 || Ce == 0 || Cin == 0)
    return TRUE;
  if (w3 && (w3->dims[1] != Ce || w3->dims[2] != 1 || w3->dims[3] != 1 || (b3 && b3->dims[0] != M) || M == 0 ||
             !pointwise_window (f->project, dw.out)))
    return TRUE;
  if (x->dims[2] * x->dims[3] <= SEPARATE_MAX_PIXELS)
    return TRUE;
  /* the residual is x: it must have y's shape (no broadcasting here) */
  if (f->residual && (Cin != M || dw.out[0] != dw.in[0] || dw.out[1] != dw.in[1]))
    return TRUE;

  /* the packed filters and the plan, kept from the last run when they
   * still fit, keyed by the first convolution's weights */
  guint threads = MAX (graft_kernel_get_n_threads (ctx), 1);
  gconstpointer key = w1 ? w1->data : w2->data;
  FusedFilterArgs filter_args = { w1, w3, Cin, Ce, M };
  g_autoptr(FusedDerived) owned = NULL;
  /* the other weights are constant too when the first are (kept with
   * them); otherwise nothing is kept */
  FusedDerived *derived = graft_kernel_derived (ctx, &fused_derived_kind, key, fused_filters_fit, fused_filters_make,
                                                &filter_args, (gpointer *) &owned);
  if (derived == NULL)
    return graft_kernel_fail (error, "out of memory for the packed filters");
  if (derived->plan == NULL || derived->plan->N != N || derived->plan->threads != threads ||
      derived->plan->level != graft_kernel_table ()->level || derived->plan->expand != (w1 != NULL) ||
      derived->plan->project != (w3 != NULL) || derived->plan->w2 != w2->data ||
      !graft_window_equal (&derived->plan->dw, &dw))
    {
      band_plan_free (derived->plan);
      derived->plan = band_plan_new (&dw, w2->data, N, Ce, threads, w1 != NULL, w3 != NULL);
    }
  if (derived->plan == NULL)
    return TRUE;   /* declined */

  const BandPlan *plan = derived->plan;
  gint64 OH = dw.out[0], OW = dw.out[1];
  gint64 dims[4] = { N, M, OH, OW };
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_FLOAT32, 4, dims, error);
  gint64 slots = MIN (MIN ((gint64) threads, plan->tasks), MAX_SLOTS);
  g_autoptr(GraftRtTensor) scratch = y ? graft_kernel_scratch (ctx, slots * plan->slot_floats * sizeof (float), error)
                                       : NULL;
  /* blocks with a projection: the depthwise output in full, projected afterwards */
  g_autoptr(GraftRtTensor) depthwise = scratch && w3 && !plan->whole
                                       ? graft_kernel_scratch (ctx, N * Ce * OH * OW * sizeof (float), error) : NULL;
  if (scratch == NULL || (w3 && !plan->whole && depthwise == NULL))
    return FALSE;
  PointwiseDepthwiseJob job = { x->data, w2->data, b1 ? b1->data : NULL, b2 ? b2->data : NULL, b3 ? b3->data : NULL,
                                f->residual ? x->data : NULL, depthwise ? depthwise->data : y->data,
                                derived->filter, derived->project, plan, Cin, Ce, M, dw.kernel[0] * dw.kernel[1] };
  job.clamp1 = isfinite (f->lo[0]) || isfinite (f->hi[0]);
  job.lo1 = f->lo[0];
  job.hi1 = f->hi[0];
  job.lo2 = f->lo[1];
  job.hi2 = f->hi[1];
  job.scratch = scratch->data;
  guint64 free_slots = slots == MAX_SLOTS ? G_MAXUINT64 : (G_GUINT64_CONSTANT (1) << slots) - 1;
  job.free_slots = &free_slots;
  if (plan->whole)
    {
      graft_kernel_parallel_for (ctx, plan->tasks, whole_task, &job);
      return TRUE;
    }
  graft_kernel_parallel_for (ctx, plan->tasks, block_task, &job);
  if (w3 == NULL)
    return TRUE;
  GraftWindow one = { 2, { OH, OW }, { OH, OW }, { 1, 1 }, { 1, 1 }, { 1, 1 } };
  GraftConvGemmArgs args = { depthwise->data, y->data, job.b3, job.residual, N, Ce, M, 1, &one, FALSE, -INFINITY,
                             INFINITY };
  return graft_conv_gemm (ctx, derived->project, &args, error);
}

/* [N, Ce, OH, OW] where the shapes tell; the kernel checks the rest */
static gboolean
infer_pointwise_depthwise (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *x = graft_infer_input (ctx, GRAFT_POINTWISE_DEPTHWISE_FUSION_X);
  GraftInferValue *w2 = graft_infer_input (ctx, GRAFT_POINTWISE_DEPTHWISE_FUSION_W2);
  GraftInferValue *w3 = graft_infer_input (ctx, GRAFT_POINTWISE_DEPTHWISE_FUSION_W3);
  const GraftPointwiseDepthwiseFusion *f = ctx->pattern;
  GraftWindow dw;
  gboolean known = x && w2 && x->shape.rank == 4 && w2->shape.rank == 4 && graft_shape_is_fully_fixed (&x->shape) &&
                   graft_shape_is_fully_fixed (&w2->shape) && (w3 == NULL || (w3->shape.rank == 4 &&
                   graft_shape_is_fully_fixed (&w3->shape))) && f != NULL;
  gint64 map[2] = { known ? x->shape.dims[2].value : 0, known ? x->shape.dims[3].value : 0 };
  gint64 kernel[2] = { known ? w2->shape.dims[2].value : 0, known ? w2->shape.dims[3].value : 0 };
  if (!known || !node_window (f->depthwise, map, kernel, &dw))
    {
      graft_infer_set_output_unknown (ctx, 0, GRAFT_DTYPE_FLOAT32, 4);
      return TRUE;
    }
  gint64 dims[4] = { x->shape.dims[0].value, (w3 ? w3 : w2)->shape.dims[0].value, dw.out[0], dw.out[1] };
  graft_infer_set_output_fixed (ctx, 0, GRAFT_DTYPE_FLOAT32, 4, dims);
  return TRUE;
}

const GraftOpSchema graft_ops_conv_fused[] = {
  { GRAFT_POINTWISE_DEPTHWISE_FUSION_OP, 1, 0, infer_pointwise_depthwise, kernel_pointwise_depthwise, 0, "X W1 B1 W2 B2 W3 B3", "Y" },
  { NULL }
};
