/* graft::PointwiseDepthwiseConv: MobileNet's expansion and depthwise
 * layers, a 1×1 convolution → [Relu/Clip] → depthwise convolution →
 * [Relu/Clip], as one step (runtime/fusion-patterns.h finds the pattern).
 *
 * Run as separate nodes, the expansion writes a tensor six times wider
 * than its input (MobileNetV2's second block: 9.6 MB at batch 2), larger
 * than L2, and the depthwise layer reads it back: both layers then run at
 * the speed of memory, and writing it cost twice as long as computing it.
 * Here each task expands one band of rows of one block of channels into
 * a buffer that stays in L2 (the rows the band's depthwise window reads,
 * so a band repeats the one or two rows where it meets the next) and runs
 * the depthwise window over it straight away: the expanded tensor is
 * never written out. The kernels are those of the separate layers
 * (graft_conv_pointwise_block, graft_conv_depthwise_plan_run), so the
 * sums are the same.
 *
 * It declines (no output: the nodes run) anything but float32 tensors
 * of a 1×1 convolution of one group, unit stride and no padding followed
 * by a depthwise window the AVX kernels take, and at the portable SIMD
 * level. */
#include "runtime/fusion-patterns.h"
#include "runtime/kernels/conv-depthwise.h"
#include "runtime/kernels/conv-gemm.h"
#include "runtime/kernels/kernel-util.h"
#include "runtime/simd.h"

#include <math.h>
#include <string.h>

/* the expanded band of one task: rows × channels sized to stay in L2
 * beside the band of x it is computed from */
#define BAND_BYTES (512 * 1024)
/* channels per block when the rows allow it: each column of x read from
 * L1 serves eight filter panels */
#define MIN_BLOCK_CHANNELS 64
/* expanded-band buffers: one per task running at once (a bit each in a word) */
#define MAX_SLOTS 64

/* How a run's work is cut: bands of output rows, blocks of channels, and
 * the tasks that take them; planned for one shape and thread count and
 * kept with the packed filter while they stay the same. */
typedef struct {
  GraftWindow dw;                   /* the depthwise window over the whole map */
  gint64 N;
  guint threads;
  GraftSimdLevel level;             /* the depthwise plans' kernels are the level's */
  gint64 band_rows, bands;          /* output rows per band (the last may have fewer) */
  gint64 block_channels, blocks;
  gint64 items, tasks;              /* items: image × band × channel block, in ranges per task */
  gint64 task_floats;               /* an expanded band (a block's channels) */
  gint64 *first_row, *rows;         /* per band: the input rows it reads */
  GraftDepthwisePlan **plans;       /* per band; bands of one shape share one (owned by the first) */
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

/* The plan for Ce expanded channels; NULL when a band would read no
 * input row (padding taller than the window's reach: the nodes handle
 * it). */
static BandPlan *
band_plan_new (const GraftWindow *dw, gint64 N, gint64 Ce, guint threads)
{
  g_autoptr(BandPlan) plan = g_new0 (BandPlan, 1);
  plan->dw = *dw;
  plan->N = N;
  plan->threads = threads;
  plan->level = graft_simd_get_level ();
  gint64 OH = dw->out[0], row_bytes = dw->in[1] * (gint64) sizeof (float);
  gint64 reach = (dw->kernel[0] - 1) * dw->dilation[0] + 1, min_block = MIN (Ce, MIN_BLOCK_CHANNELS);
  gint64 max_rows = MAX (BAND_BYTES / (min_block * row_bytes), reach);
  plan->band_rows = CLAMP ((max_rows - reach) / dw->stride[0] + 1, 1, OH);
  plan->bands = (OH + plan->band_rows - 1) / plan->band_rows;
  gint64 band_input = MIN ((plan->band_rows - 1) * dw->stride[0] + reach, dw->in[0]);
  gint64 channels = MAX (BAND_BYTES / (band_input * row_bytes), min_block);
  plan->blocks = (Ce + channels - 1) / channels;
  /* enough items to spread over the threads */
  if (threads > 1 && N * plan->bands * plan->blocks < 2 * (gint64) threads)
    plan->blocks = MAX (plan->blocks, (2 * (gint64) threads + N * plan->bands - 1) / (N * plan->bands));
  /* even blocks, in whole filter panels */
  plan->block_channels = (Ce + plan->blocks - 1) / plan->blocks;
  plan->block_channels = (plan->block_channels + GRAFT_CONV_GEMM_ROWS - 1) / GRAFT_CONV_GEMM_ROWS * GRAFT_CONV_GEMM_ROWS;
  plan->blocks = (Ce + plan->block_channels - 1) / plan->block_channels;
  plan->items = N * plan->bands * plan->blocks;
  /* an item per task, handed out as threads come free: an even share
   * whatever each costs (eight tasks of 3 or 4 items left one of two
   * threads idle for 10 % of the time); at most MAX_SLOTS tasks at once,
   * each with a buffer of its own */
  plan->tasks = threads == 1 ? 1 : threads <= MAX_SLOTS ? plan->items : MIN (plan->items, MAX_SLOTS);
  plan->task_floats = plan->block_channels * band_input * dw->in[1];

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
        plan->plans[b] = graft_conv_depthwise_plan_new (&w);
      last = w;
    }
  return g_steal_pointer (&plan);
}

/* What the step keeps between runs (graft_kernel_derived_keep, keyed by
 * the pointwise weights): the packed filter and the last run's plan. */
typedef struct {
  GraftPackedFilter *filter;
  BandPlan *plan;
} FusedDerived;

static void
fused_derived_free (FusedDerived *derived)
{
  graft_packed_filter_free (derived->filter);
  band_plan_free (derived->plan);
  g_free (derived);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (FusedDerived, fused_derived_free)

typedef struct {
  const float *x, *w2, *b1, *b2;
  float *y;
  const GraftPackedFilter *filter;
  const BandPlan *plan;
  gint64 Cin, Ce, taps;
  gboolean clamp1;
  float lo1, hi1, lo2, hi2;
  float *scratch;                   /* a buffer of plan->task_floats per slot */
  guint64 *free_slots;              /* atomic: bit i, buffer i is free */
} PointwiseDepthwiseJob;

static void
pointwise_depthwise_task (gint64 t, gpointer data)
{
  const PointwiseDepthwiseJob *job = data;
  const BandPlan *plan = job->plan;
  /* a free buffer of the threads' (as many as can run tasks at once) */
  guint64 free_slots = __atomic_load_n (job->free_slots, __ATOMIC_ACQUIRE);
  int slot;
  do
    slot = __builtin_ctzll (free_slots);
  while (!__atomic_compare_exchange_n (job->free_slots, &free_slots, free_slots & ~(G_GUINT64_CONSTANT (1) << slot),
                                       TRUE, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
  float *expanded = job->scratch + slot * plan->task_floats;
  gint64 H = plan->dw.in[0], W = plan->dw.in[1], OH = plan->dw.out[0], OW = plan->dw.out[1];
  for (gint64 item = t * plan->items / plan->tasks; item < (t + 1) * plan->items / plan->tasks; item++)
    {
      gint64 block = item % plan->blocks, band = item / plan->blocks % plan->bands;
      gint64 n = item / plan->blocks / plan->bands;
      gint64 c0 = block * plan->block_channels, c1 = MIN (job->Ce, c0 + plan->block_channels);
      gint64 r0 = plan->first_row[band], cols = plan->rows[band] * W, oh0 = band * plan->band_rows;
      graft_conv_pointwise_block (job->filter, c0, c1, job->x + n * job->Cin * H * W + r0 * W, H * W, cols,
                                  expanded, cols, job->b1 ? job->b1 + c0 : NULL, job->clamp1, job->lo1, job->hi1);
      graft_conv_depthwise_plan_run (NULL, plan->plans[band], expanded, cols, job->w2 + c0 * job->taps,
                                     job->b2 ? job->b2 + c0 : NULL, job->y + ((n * job->Ce + c0) * OH + oh0) * OW,
                                     OH * OW, c1 - c0, c1 - c0, job->lo2, job->hi2);
    }
  __atomic_fetch_or (job->free_slots, G_GUINT64_CONSTANT (1) << slot, __ATOMIC_RELEASE);
}

static gboolean
is_f32 (const GraftRtTensor *t, int rank)
{
  return t->dtype == GRAFT_DTYPE_FLOAT32 && t->rank == rank;
}

/* The depthwise window over x's map, from the depthwise node; FALSE
 * (error cleared: the nodes will say what is wrong) when it does not
 * compute. */
static gboolean
depthwise_window (GraftNode *depthwise, const gint64 *map, const gint64 *kernel, GraftWindow *w)
{
  g_autoptr(GError) ignored = NULL;
  return graft_window_geometry (depthwise, 2, map, kernel, FALSE, FALSE, w, &ignored);
}

static gboolean
kernel_pointwise_depthwise (GraftKernelContext *ctx, GError **error)
{
  GraftPointwiseDepthwiseFusion f;
  const GraftRtTensor *x = ctx->inputs[GRAFT_POINTWISE_DEPTHWISE_FUSION_X];
  const GraftRtTensor *w1 = ctx->inputs[GRAFT_POINTWISE_DEPTHWISE_FUSION_W1];
  const GraftRtTensor *w2 = ctx->inputs[GRAFT_POINTWISE_DEPTHWISE_FUSION_W2];
  const GraftRtTensor *b1 = graft_kernel_input (ctx, GRAFT_POINTWISE_DEPTHWISE_FUSION_B1);
  const GraftRtTensor *b2 = graft_kernel_input (ctx, GRAFT_POINTWISE_DEPTHWISE_FUSION_B2);
  if (!graft_conv_gemm_available () || !graft_pointwise_depthwise_fusion_match (ctx->node, &f) || x == NULL ||
      w1 == NULL || w2 == NULL || !is_f32 (x, 4) || !is_f32 (w1, 4) || !is_f32 (w2, 4) ||
      (b1 && !is_f32 (b1, 1)) || (b2 && !is_f32 (b2, 1)))
    return TRUE;   /* declined: no output */
  gint64 N = x->dims[0], Cin = x->dims[1], Ce = w1->dims[0];
  gint64 one[2] = { 1, 1 };
  GraftWindow pw, dw;
  if (w1->dims[1] != Cin || w1->dims[2] != 1 || w1->dims[3] != 1 || (b1 && b1->dims[0] != Ce) ||
      graft_node_attr_int (f.pointwise, "group", 1) != 1 || !depthwise_window (f.pointwise, x->dims + 2, one, &pw) ||
      pw.stride[0] != 1 || pw.stride[1] != 1 || pw.out[0] != pw.in[0] || pw.out[1] != pw.in[1] ||
      pw.pad_begin[0] != 0 || pw.pad_begin[1] != 0)
    return TRUE;
  if (w2->dims[0] != Ce || w2->dims[1] != 1 || (b2 && b2->dims[0] != Ce) ||
      graft_node_attr_int (f.depthwise, "group", 1) != Ce || !depthwise_window (f.depthwise, x->dims + 2, w2->dims + 2, &dw) ||
      !graft_conv_depthwise_supports (&dw) || dw.out[0] <= 0 || dw.out[1] <= 0 || N == 0 || Ce == 0 || Cin == 0)
    return TRUE;

  /* the packed filter and the plan, kept from the last run when they still fit */
  guint threads = MAX (graft_kernel_get_n_threads (ctx), 1);
  FusedDerived *derived = graft_kernel_derived_lookup (ctx, w1->data, (GDestroyNotify) fused_derived_free);
  g_autoptr(FusedDerived) owned = NULL;
  if (derived == NULL || !graft_packed_filter_matches (derived->filter, 1, Ce, Cin))
    {
      owned = g_new0 (FusedDerived, 1);
      owned->filter = graft_packed_filter_new (w1->data, 1, Ce, Cin);
      if (owned->filter == NULL)
        return graft_kernel_fail (error, "out of memory for the packed filter");
      derived = owned;
    }
  if (derived->plan == NULL || derived->plan->N != N || derived->plan->threads != threads ||
      derived->plan->level != graft_simd_get_level () ||
      !graft_window_equal (&derived->plan->dw, &dw))
    {
      band_plan_free (derived->plan);
      derived->plan = band_plan_new (&dw, N, Ce, threads);
    }
  if (owned && graft_kernel_derived_keep (ctx, w1->data, owned, (GDestroyNotify) fused_derived_free))
    owned = NULL;
  if (derived->plan == NULL)
    return TRUE;   /* declined */

  const BandPlan *plan = derived->plan;
  gint64 dims[4] = { N, Ce, dw.out[0], dw.out[1] };
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_FLOAT32, 4, dims, error);
  gint64 slots = MIN (MIN ((gint64) threads, plan->tasks), MAX_SLOTS);
  g_autoptr(GraftRtTensor) scratch = y ? graft_kernel_scratch (ctx, slots * plan->task_floats * sizeof (float), error)
                                       : NULL;
  if (scratch == NULL)
    return FALSE;
  PointwiseDepthwiseJob job = { x->data, w2->data, b1 ? b1->data : NULL, b2 ? b2->data : NULL, y->data,
                                derived->filter, plan, Cin, Ce, dw.kernel[0] * dw.kernel[1] };
  job.clamp1 = isfinite (f.lo[0]) || isfinite (f.hi[0]);
  job.lo1 = f.lo[0];
  job.hi1 = f.hi[0];
  job.lo2 = f.lo[1];
  job.hi2 = f.hi[1];
  job.scratch = scratch->data;
  guint64 free_slots = slots == MAX_SLOTS ? G_MAXUINT64 : (G_GUINT64_CONSTANT (1) << slots) - 1;
  job.free_slots = &free_slots;
  graft_kernel_parallel_for (ctx, plan->tasks, pointwise_depthwise_task, &job);
  return TRUE;
}

/* [N, Ce, OH, OW] where the shapes tell; the kernel checks the rest */
static gboolean
infer_pointwise_depthwise (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *x = graft_infer_input (ctx, GRAFT_POINTWISE_DEPTHWISE_FUSION_X);
  GraftInferValue *w2 = graft_infer_input (ctx, GRAFT_POINTWISE_DEPTHWISE_FUSION_W2);
  GraftPointwiseDepthwiseFusion f;
  GraftWindow dw;
  gboolean known = x && w2 && x->shape.rank == 4 && w2->shape.rank == 4 && graft_shape_is_fully_fixed (&x->shape) &&
                   graft_shape_is_fully_fixed (&w2->shape) && graft_pointwise_depthwise_fusion_match (ctx->node, &f);
  gint64 map[2] = { known ? x->shape.dims[2].value : 0, known ? x->shape.dims[3].value : 0 };
  gint64 kernel[2] = { known ? w2->shape.dims[2].value : 0, known ? w2->shape.dims[3].value : 0 };
  if (!known || !depthwise_window (f.depthwise, map, kernel, &dw))
    {
      graft_infer_set_output_unknown (ctx, 0, GRAFT_DTYPE_FLOAT32, 4);
      return TRUE;
    }
  gint64 dims[4] = { x->shape.dims[0].value, w2->shape.dims[0].value, dw.out[0], dw.out[1] };
  graft_infer_set_output_fixed (ctx, 0, GRAFT_DTYPE_FLOAT32, 4, dims);
  return TRUE;
}

const GraftOpSchema graft_ops_conv_fused[] = {
  { GRAFT_POINTWISE_DEPTHWISE_FUSION_OP, 1, 0, infer_pointwise_depthwise, kernel_pointwise_depthwise, 0, "X W1 B1 W2 B2", "Y" },
  { NULL }
};
