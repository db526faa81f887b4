/* 3-D convolutions as 2-D ones over the depth taps (see conv-3d.h).
 *
 * For output depth od, the planes x [n, c, od·sd + kd·dd - pd] are copied
 * side by side as the C·KD channels of one 2-D image (a plane of zeros
 * where the depth is padding): KD/sd copies of the input, whole planes
 * each, against C·KD·KH·KW multiply-adds per output. The 2-D convolution
 * of those N·OD images then picks its kernel as any other (Winograd for
 * 3×3 planes at unit stride, the packed GEMM, the small-map kernels) with
 * the bias, the residual and the fused clamp on each tile; its output
 * [N, OD, M, OH·OW] goes back to [N, M, OD, OH·OW] (the residual comes
 * the other way first), or is y itself when OD = 1. Before, these went
 * through im2col by one output element at a time and OpenBLAS: 20 ms for
 * each 3×3×3 64→64 layer of r3d_18 at 2×64×4×16×16, one thread.
 * onnxruntime (MLAS) writes the whole im2col matrix of the window
 * (vol2col) and runs its SGEMM on it, padding taps included.
 *
 * Taps that read only padding for every output are dropped first, on
 * every axis: a 3×3×3 window over maps of depth 1 (r3d_18's layer3 and
 * layer4) is a 3×3 convolution of a third of the weights. Their copy,
 * and the 2-D path's filter made of it, are kept on the step
 * (TrimmedConv3d); untrimmed weights are read where they lie and the 2-D
 * path keeps its own filter of them. */
#include <math.h>
#include <string.h>
#include "runtime/kernels/conv-3d.h"
#include "runtime/kernels/conv-gemm.h"
#include "runtime/kernels/conv-small.h"
#include "runtime/kernels/conv-winograd.h"
#include "runtime/kernels/kernel-table.h"

/* The 3-D window as a 2-D one over the depth taps. */
typedef struct {
  gint64 lo[3];             /* first tap kept on each axis */
  gint64 taps;              /* depth taps kept */
  gint64 first;             /* the depth that tap lo[0] reads for od = 0: lo[0]·dd - pd */
  GraftWindow plane;        /* over (H, W), the taps kept */
  gboolean trimmed;         /* some taps dropped */
} DepthFold;

static void
fold_window (const GraftWindow *w, DepthFold *f)
{
  gint64 lo[3], hi[3];
  gboolean reads = TRUE;
  for (int d = 0; d < 3; d++)
    reads &= graft_window_taps_read (w, d, &lo[d], &hi[d]);
  *f = (DepthFold) { .plane = { .n = 2 } };
  for (int d = 0; d < 3; d++)
    {
      gint64 K = w->kernel[d], dil = w->dilation[d], a = 0, b = K - 1;
      /* the depth is read at offsets of its own, any cut of it will do;
       * the 2-D kernels take windows with padding, not cuts of the map */
      if (reads && (d == 0 || (w->pad_begin[d] >= lo[d] * dil && w->pad_end[d] >= (K - 1 - hi[d]) * dil)))
        a = lo[d], b = hi[d];
      f->lo[d] = a;
      f->trimmed |= a > 0 || b < K - 1;
      if (d == 0)
        {
          f->taps = b - a + 1;
          f->first = a * dil - w->pad_begin[0];
          continue;
        }
      GraftWindow *p = &f->plane;
      p->in[d - 1] = w->in[d];
      p->out[d - 1] = w->out[d];
      p->kernel[d - 1] = b - a + 1;
      p->stride[d - 1] = w->stride[d];
      p->dilation[d - 1] = dil;
      p->pad_begin[d - 1] = w->pad_begin[d] - a * dil;
      p->pad_end[d - 1] = w->pad_end[d] - (K - 1 - b) * dil;
    }
}

/* A 1×1×1 window with unit strides and no padding: x [N, C, D·H, W] is
 * already the 2-D convolution's input, y its output. */
static gboolean
fold_is_flat (const GraftWindow *w)
{
  for (int d = 0; d < 3; d++)
    if (w->kernel[d] != 1 || w->stride[d] != 1 || w->pad_begin[d] != 0 || w->pad_end[d] != 0)
      return FALSE;
  return TRUE;
}

/* ---- the weights of the taps kept, and their 2-D filter ---- */

typedef enum {
  PLANE_ANY,                /* graft_conv2d_f32 on kept (depthwise, the portable level) */
  PLANE_WINOGRAD,
  PLANE_SMALL,
  PLANE_GEMM,
} PlanePath;

typedef struct {
  /* what it serves: N images of the 2-D convolution per call */
  GraftWindow window;
  gint64 N, C, M, group;
  const GraftKernelTable *table;
  /* PLANE_ANY: the weights [M, C/g, taps, kh, kw] of the taps kept;
   * else one of the filters made of them */
  PlanePath path;
  float *kept;
  GraftWinogradFilter *winograd;
  GraftSmallConvFilter *small;
  GraftPackedFilter *packed;
} TrimmedConv3d;

static void
trimmed_conv3d_free (TrimmedConv3d *t)
{
  g_free (t->kept);
  g_clear_pointer (&t->winograd, graft_winograd_filter_free);
  g_clear_pointer (&t->small, graft_small_conv_filter_free);
  g_clear_pointer (&t->packed, graft_packed_filter_free);
  g_free (t);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (TrimmedConv3d, trimmed_conv3d_free)

typedef struct {
  const GraftWindow *w;
  const float *weight;
  gint64 N, C, M, group;
} TrimmedConv3dArgs;

static gboolean
trimmed_conv3d_fits (gconstpointer derived, gconstpointer args)
{
  const TrimmedConv3d *t = derived;
  const TrimmedConv3dArgs *a = args;
  /* the path and its filter's layout follow the batch and the SIMD level */
  return t->N == a->N && t->C == a->C && t->M == a->M && t->group == a->group &&
         t->table == graft_kernel_table () && graft_window_equal (&t->window, a->w);
}

static float *
keep_taps (const TrimmedConv3dArgs *a, const DepthFold *f)
{
  const GraftWindow *w = a->w;
  gint64 KD = w->kernel[0], KH = w->kernel[1], KW = w->kernel[2];
  gint64 taps = f->taps, kh = f->plane.kernel[0], kw = f->plane.kernel[1];
  gint64 filters = a->M * (a->C / a->group);
  float *kept = g_try_malloc ((gsize) MAX (filters * taps * kh * kw, 1) * sizeof (float));
  if (kept == NULL)
    return NULL;
  for (gint64 mc = 0; mc < filters; mc++)
    for (gint64 t = 0; t < taps; t++)
      for (gint64 i = 0; i < kh; i++)
        memcpy (kept + ((mc * taps + t) * kh + i) * kw,
                a->weight + ((mc * KD + f->lo[0] + t) * KH + f->lo[1] + i) * KW + f->lo[2], kw * sizeof (float));
  return kept;
}

static gpointer
trimmed_conv3d_make (gconstpointer args)
{
  const TrimmedConv3dArgs *a = args;
  DepthFold f;
  fold_window (a->w, &f);
  g_autoptr(TrimmedConv3d) t = g_new0 (TrimmedConv3d, 1);
  t->window = *a->w;
  t->N = a->N;
  t->C = a->C;
  t->M = a->M;
  t->group = a->group;
  t->table = graft_kernel_table ();
  t->kept = keep_taps (a, &f);
  if (t->kept == NULL)
    return NULL;
  gint64 N2 = a->N, C2 = a->C * f.taps, kh = f.plane.kernel[0], kw = f.plane.kernel[1];
  gint64 group = a->group, Mg = a->M / group;
  /* the choice conv.c makes for a 2-D convolution of constant weights */
  if (graft_conv_winograd_pays (&f.plane, N2, C2, a->M, group))
    {
      t->path = PLANE_WINOGRAD;
      t->winograd = graft_winograd_filter_new (t->kept, a->M, C2);
      if (t->winograd == NULL)
        return NULL;
    }
  else if (graft_conv_small_pays (&f.plane, N2, C2, a->M, group))
    {
      t->path = PLANE_SMALL;
      t->small = graft_small_conv_filter_new (t->kept, a->M, C2, kh, kw);
      if (t->small == NULL)
        return NULL;
    }
  else if (graft_conv_gemm_supports (&f.plane) && !(group == C2 && a->M == C2))
    {
      t->path = PLANE_GEMM;
      t->packed = graft_packed_filter_new (t->kept, group, Mg, C2 / group * kh * kw);
      if (t->packed == NULL)
        return NULL;
    }
  if (t->path != PLANE_ANY)
    g_clear_pointer (&t->kept, g_free);
  return g_steal_pointer (&t);
}

static const GraftDerivedKind trimmed_conv3d_kind = {
  "trimmed 3-D convolution", (GDestroyNotify) trimmed_conv3d_free, FALSE, TRUE
};

/* ---- the planes in and out ---- */

typedef struct {
  const float *x;
  float *planes;            /* images [first, …) of [N·OD, C, taps, plane] */
  gint64 first_image;
  gint64 C, D, OD, plane, taps, first, sd, dd;
} DepthTapsJob;

/* Image first_image + index of the 2-D convolution: n·OD + od. */
static void
depth_taps_image (gint64 index, gpointer data)
{
  const DepthTapsJob *job = data;
  gint64 image = job->first_image + index, n = image / job->OD, od = image % job->OD;
  float *dst = job->planes + index * job->C * job->taps * job->plane;
  for (gint64 c = 0; c < job->C; c++)
    for (gint64 t = 0; t < job->taps; t++, dst += job->plane)
      {
        gint64 id = od * job->sd + job->first + t * job->dd;
        if (id < 0 || id >= job->D)
          memset (dst, 0, job->plane * sizeof (float));
        else
          memcpy (dst, job->x + ((n * job->C + c) * job->D + id) * job->plane, job->plane * sizeof (float));
      }
}

typedef struct {
  float *volume;            /* [N, M, OD, pixels] */
  float *slices;            /* images [first, …) of [N·OD, M, pixels] */
  gint64 first_image;
  gint64 M, OD, pixels;
  gboolean to_volume;       /* slices → volume; else the other way */
} DepthOrderJob;

/* Channel m of image first_image + index / M. */
static void
depth_order_channel (gint64 index, gpointer data)
{
  const DepthOrderJob *job = data;
  gint64 image = job->first_image + index / job->M, m = index % job->M;
  gint64 n = image / job->OD, od = image % job->OD, P = job->pixels;
  float *volume = job->volume + ((n * job->M + m) * job->OD + od) * P, *slice = job->slices + index * P;
  if (job->to_volume)
    memcpy (volume, slice, P * sizeof (float));
  else
    memcpy (slice, volume, P * sizeof (float));
}

static void
depth_order (GraftKernelContext *ctx, float *volume, float *slices, gint64 first_image, gint64 images, gint64 M,
             gint64 OD, gint64 pixels, gboolean to_volume)
{
  DepthOrderJob job = { volume, slices, first_image, M, OD, pixels, to_volume };
  graft_kernel_parallel_for (ctx, images * M, depth_order_channel, &job);
}

/* ---- the convolution ---- */

static gboolean
plane_conv (GraftKernelContext *ctx, const TrimmedConv3d *trim, const float *x, const float *weight,
            const float *bias, float *y, gint64 N, gint64 C, gint64 M, gint64 group, const GraftWindow *w,
            const float *residual, GError **error)
{
  if (trim == NULL || trim->path == PLANE_ANY)
    return graft_conv2d_f32 (ctx, x, trim ? trim->kept : weight, bias, y, N, C, M, group, w, residual, error);
  GraftConvGemmArgs args = { x, y, bias, residual, N, C, M, group, w, FALSE, -INFINITY, INFINITY };
  args.clamp = graft_kernel_get_fused_clamp (ctx, &args.lo, &args.hi);
  if (trim->path == PLANE_WINOGRAD)
    return graft_conv_winograd (ctx, trim->winograd, &args, error);
  if (trim->path == PLANE_SMALL)
    return graft_conv_small (ctx, trim->small, &args, error);
  return graft_conv_gemm (ctx, trim->packed, &args, error);
}

gboolean
graft_conv3d_supports (const GraftWindow *w)
{
  if (w->n != 3)
    return FALSE;
  for (int d = 0; d < 3; d++)
    if (w->in[d] < 1 || w->out[d] < 1 || w->kernel[d] < 1)
      return FALSE;
  return TRUE;
}

/* The gathered planes of the images of one 2-D call, at most (or one
 * image's): r3d_18 at 16×112×112 would otherwise gather 77 MB for its
 * layer1, three times its input. */
#define PLANES_BUDGET_FLOATS (4 << 20)

gboolean
graft_conv3d_f32 (GraftKernelContext *ctx, const float *x, const float *weight, const float *bias, float *y,
                  gint64 N, gint64 C, gint64 M, gint64 group, const GraftWindow *w, const float *residual,
                  GError **error)
{
  g_return_val_if_fail (graft_conv3d_supports (w), FALSE);
  if (fold_is_flat (w))
    {
      GraftWindow flat = { 2, { w->in[0] * w->in[1], w->in[2] }, { w->out[0] * w->out[1], w->out[2] }, { 1, 1 },
                           { 1, 1 }, { 1, 1 } };
      return graft_conv2d_f32 (ctx, x, weight, bias, y, N, C, M, group, &flat, residual, error);
    }
  DepthFold f;
  fold_window (w, &f);
  gint64 D = w->in[0], OD = w->out[0], plane = w->in[1] * w->in[2], pixels = w->out[1] * w->out[2];
  gint64 images = N * OD, C2 = C * f.taps;
  /* maps of depth 1 read by one tap are the planes already */
  gboolean gather = D != 1 || OD != 1 || f.taps != 1;
  /* calls of as many images each: the 2-D path chooses its kernel (and
   * the filter it keeps) by their number, the same for every call */
  gint64 per_call = gather ? CLAMP (PLANES_BUDGET_FLOATS / MAX (C2 * plane, 1), 1, images) : images;
  while (images % per_call != 0)
    per_call--;

  g_autoptr(TrimmedConv3d) owned = NULL;
  const TrimmedConv3d *trim = NULL;
  if (f.trimmed)
    {
      TrimmedConv3dArgs args = { w, weight, per_call, C, M, group };
      trim = graft_kernel_derived (ctx, &trimmed_conv3d_kind, weight, trimmed_conv3d_fits, trimmed_conv3d_make, &args,
                                   (gpointer *) &owned);
      if (trim == NULL)
        return graft_kernel_need_values (ctx, weight, error) &&
               graft_kernel_fail (error, "out of memory for the weights of the taps kept (%" G_GINT64_FORMAT
                                  " × %" G_GINT64_FORMAT ")", M, C / group * f.taps * f.plane.kernel[0] * f.plane.kernel[1]);
    }
  if (!gather)
    return plane_conv (ctx, trim, x, weight, bias, y, images, C2, M, group, &f.plane, residual, error);

  g_autoptr(GraftRtTensor) planes = graft_kernel_scratch (ctx, (gsize) per_call * C2 * plane * sizeof (float), error);
  gsize out_bytes = (gsize) per_call * M * pixels * sizeof (float);
  g_autoptr(GraftRtTensor) slices = planes && OD > 1 ? graft_kernel_scratch (ctx, out_bytes, error) : NULL;
  g_autoptr(GraftRtTensor) residual_slices = slices && residual ? graft_kernel_scratch (ctx, out_bytes, error) : NULL;
  if (planes == NULL || (OD > 1 && slices == NULL) || (OD > 1 && residual && residual_slices == NULL))
    return FALSE;
  for (gint64 first = 0; first < images; first += per_call)
    {
      gint64 count = MIN (per_call, images - first);
      DepthTapsJob job = { x, planes->data, first, C, D, OD, plane, f.taps, f.first, w->stride[0], w->dilation[0] };
      graft_kernel_parallel_for (ctx, count, depth_taps_image, &job);
      if (OD == 1)
        {
          /* image n of the 2-D convolution is image n of y */
          if (!plane_conv (ctx, trim, planes->data, weight, bias, y + first * M * pixels, count, C2, M, group,
                           &f.plane, residual ? residual + first * M * pixels : NULL, error))
            return FALSE;
          continue;
        }
      if (residual)
        depth_order (ctx, (float *) residual, residual_slices->data, first, count, M, OD, pixels, FALSE);
      if (!plane_conv (ctx, trim, planes->data, weight, bias, slices->data, count, C2, M, group, &f.plane,
                       residual ? residual_slices->data : NULL, error))
        return FALSE;
      depth_order (ctx, y, slices->data, first, count, M, OD, pixels, TRUE);
    }
  return TRUE;
}
