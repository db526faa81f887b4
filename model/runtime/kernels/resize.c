/* Resize (nearest / n-linear / cubic, every coordinate transformation
 * mode of opsets 10-18) and Upsample. Separable: each axis gets a list of
 * (source index, weight) taps per output coordinate. */
#include <math.h>
#include <string.h>
#include "runtime/kernels/kernel-util.h"
#include "runtime/kernels/simd-target.h"

/* 4 taps suffice without antialias; an antialiased downscale by s needs
 * about 4 / s (cubic). */
#define MAX_TAPS 64

typedef struct {
  gint64 index[MAX_TAPS];
  double weight[MAX_TAPS];
  int n;
  gboolean outside;    /* tf_crop_and_resize: extrapolate */
} Taps;

typedef struct {
  gint64 out_dims[GRAFT_RT_MAX_RANK];
  double scales[GRAFT_RT_MAX_RANK];
  double roi_start[GRAFT_RT_MAX_RANK], roi_end[GRAFT_RT_MAX_RANK];
  gboolean known;
} ResizeSpec;

/* keep_aspect_ratio_policy (opset 18): one scale for every resized axis,
 * the smallest (not_larger) or largest (not_smaller) that sizes asks for;
 * the sizes then follow from it, rounded half up. */
static gboolean
keep_aspect_ratio (GraftNode *node, const GraftShape *in_shape, const int *map, int n, ResizeSpec *spec, GError **error)
{
  const char *policy = graft_node_attr_string (node, "keep_aspect_ratio_policy", "stretch");
  gboolean smaller = g_str_equal (policy, "not_larger");
  if (g_str_equal (policy, "stretch"))
    return TRUE;
  if (!smaller && !g_str_equal (policy, "not_smaller"))
    return graft_kernel_fail (error, "unknown keep_aspect_ratio_policy '%s'", policy);
  double scale = smaller ? INFINITY : 0;
  for (int i = 0; i < n; i++)
    scale = smaller ? MIN (scale, spec->scales[map[i]]) : MAX (scale, spec->scales[map[i]]);
  for (int i = 0; i < n; i++)
    {
      int d = map[i];
      spec->scales[d] = scale;
      double size = scale * in_shape->dims[d].value + 0.5;
      if (in_shape->dims[d].kind == GRAFT_DIM_FIXED && !(size < 4611686018427387904.0))
        return graft_kernel_fail (error, "keep_aspect_ratio_policy gives more than 2^62 elements on axis %d", d);
      if (in_shape->dims[d].kind == GRAFT_DIM_FIXED)
        spec->out_dims[d] = (gint64) size;
    }
  return TRUE;
}

static gboolean
resize_spec (GraftNode *node, gint64 opset, int rank, const GraftShape *in_shape,
             GraftRtTensor *roi, GraftRtTensor *scales, GraftRtTensor *sizes, gboolean scales_known,
             ResizeSpec *spec, GError **error)
{
  guint n_axes = 0;
  const gint64 *axes = graft_node_attr_ints (node, "axes", &n_axes);
  int map[GRAFT_RT_MAX_RANK];
  int n = axes ? (int) n_axes : rank;
  for (int i = 0; i < n; i++)
    {
      gint64 a = axes ? axes[i] : i;
      if (!graft_normalize_axis (&a, rank, error))
        return FALSE;
      map[i] = a;
    }
  spec->known = TRUE;
  for (int d = 0; d < rank; d++)
    {
      spec->scales[d] = 1;
      spec->roi_start[d] = 0;
      spec->roi_end[d] = 1;
      spec->out_dims[d] = in_shape->dims[d].kind == GRAFT_DIM_FIXED ? in_shape->dims[d].value : -1;
    }
  if (roi && roi->numel == 2 * n)
    for (int i = 0; i < n; i++)
      {
        spec->roi_start[map[i]] = graft_rt_tensor_get_f64 (roi, i);
        spec->roi_end[map[i]] = graft_rt_tensor_get_f64 (roi, i + n);
      }
  if (sizes && sizes->numel > 0)
    {
      if (sizes->numel != n)
        return graft_kernel_fail (error, "sizes has %" G_GINT64_FORMAT " entries for %d axes", sizes->numel, n);
      for (int i = 0; i < n; i++)
        {
          int d = map[i];
          spec->out_dims[d] = graft_rt_tensor_get_i64 (sizes, i);
          spec->scales[d] = spec->out_dims[d] > 0 && in_shape->dims[d].kind == GRAFT_DIM_FIXED && in_shape->dims[d].value > 0 ?
                            (double) spec->out_dims[d] / in_shape->dims[d].value : 1;
        }
      return keep_aspect_ratio (node, in_shape, map, n, spec, error);
    }
  if (scales && scales->numel > 0)
    {
      if (scales->numel != n)
        return graft_kernel_fail (error, "scales has %" G_GINT64_FORMAT " entries for %d axes", scales->numel, n);
      for (int i = 0; i < n; i++)
        {
          int d = map[i];
          spec->scales[d] = graft_rt_tensor_get_f64 (scales, i);
          if (!(spec->scales[d] > 0) || !isfinite (spec->scales[d]))
            return graft_kernel_fail (error, "scale %g on axis %d is not a positive number", spec->scales[d], d);
          double size = floor (spec->out_dims[d] * spec->scales[d]);
          if (spec->out_dims[d] >= 0 && !(size < 4611686018427387904.0))
            return graft_kernel_fail (error, "scale %g on axis %d gives more than 2^62 elements", spec->scales[d], d);
          if (spec->out_dims[d] >= 0)
            spec->out_dims[d] = (gint64) size;
        }
      return TRUE;
    }
  if (!scales_known)
    spec->known = FALSE;
  return TRUE;
}

static void
get_inputs (GraftNode *node, gint64 opset, guint n, GraftRtTensor **inputs,
            GraftRtTensor **roi, GraftRtTensor **scales, GraftRtTensor **sizes)
{
  *roi = *scales = *sizes = NULL;
  if (strcmp (node->op_type, "Upsample") == 0 || opset < 11)
    {
      *scales = n > 1 ? inputs[1] : NULL;
      return;
    }
  *roi = n > 1 ? inputs[1] : NULL;
  *scales = n > 2 ? inputs[2] : NULL;
  *sizes = n > 3 ? inputs[3] : NULL;
}

static GraftRtTensor *
upsample_attr_scales (GraftNode *node)
{
  guint n;
  const double *s = graft_node_attr_floats (node, "scales", &n);
  if (s == NULL)
    return NULL;
  gint64 dim = n;
  GraftRtTensor *t = graft_rt_tensor_new (GRAFT_DTYPE_FLOAT32, 1, &dim, NULL);
  for (guint i = 0; i < n; i++)
    ((float *) t->data)[i] = s[i];
  return t;
}

static gboolean
infer_resize (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *x = graft_infer_input (ctx, 0);
  if (x->shape.rank < 0 || x->shape.rank > GRAFT_RT_MAX_RANK)
    {
      graft_infer_set_output_unknown (ctx, 0, x->dtype, -1);
      return TRUE;
    }
  GraftRtTensor *vals[4] = { NULL };
  gboolean all_known = TRUE;
  for (guint i = 1; i < ctx->n_inputs && i < 4; i++)
    if (graft_infer_input (ctx, i))
      {
        vals[i] = ctx->inputs[i].data;
        if (vals[i] == NULL)
          all_known = FALSE;
      }
  GraftRtTensor *roi, *scales, *sizes;
  get_inputs (ctx->node, ctx->opset, MIN (ctx->n_inputs, 4), vals, &roi, &scales, &sizes);
  g_autoptr(GraftRtTensor) attr_scales = NULL;
  if (scales == NULL && strcmp (ctx->node->op_type, "Upsample") == 0)
    scales = attr_scales = upsample_attr_scales (ctx->node);
  ResizeSpec spec;
  if (!all_known)
    {
      graft_infer_set_output_unknown (ctx, 0, x->dtype, x->shape.rank);
      return TRUE;
    }
  if (!resize_spec (ctx->node, ctx->opset, x->shape.rank, &x->shape, roi, scales, sizes, TRUE, &spec, error))
    return FALSE;
  GraftShape out;
  graft_shape_init (&out, x->shape.rank);
  for (int d = 0; d < out.rank; d++)
    out.dims[d] = spec.out_dims[d] >= 0 ? graft_dim_fixed (spec.out_dims[d]) : graft_dim_unknown ();
  graft_infer_set_output (ctx, 0, x->dtype, &out);
  graft_shape_clear (&out);
  return TRUE;
}

static double
cubic_weight (double x, double a)
{
  x = fabs (x);
  if (x <= 1)
    return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2)
    return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

/* Antialiased downscaling (opset 18) stretches the linear or cubic
 * filter by 1 / scale, normalised, over the taps ONNX's reference picks. */
static void
antialias_taps (double x, double scale, gboolean cubic, double a, gboolean exclude, gint64 in_len, Taps *t)
{
  double ratio = x == floor (x) ? 1 : x - floor (x);
  gint64 first = (gint64) floor ((cubic ? -2 : -1) / scale) + 1;
  int n = (int) MIN (2 - 2 * first, MAX_TAPS);   /* kernel_resize refuses scales needing more */
  double sum = 0;
  for (int k = 0; k < n; k++)
    {
      double u = scale * (first + k - ratio);
      t->weight[k] = cubic ? cubic_weight (u, a) : MAX (0, 1 - fabs (u));
    }
  /* the n neighbours of x, preferring the lower ones, before clamping */
  gint64 pad = (n + 1) / 2;
  double padded = x + pad;
  gint64 p = (gint64) floor (padded);
  double frac = padded - p;
  gint64 offset = n % 2 == 0 ? (frac == 0 ? -(n / 2) : -(n / 2) + 1) : (frac <= 0.5 ? -((n - 1) / 2) : -((n - 1) / 2) + 1);
  for (int k = 0; k < n; k++)
    {
      gint64 index = p + offset + k - pad;
      if (exclude && (index < 0 || index >= in_len))
        t->weight[k] = 0;
      t->index[k] = CLAMP (index, 0, in_len - 1);
      sum += t->weight[k];
    }
  for (int k = 0; k < n && sum != 0; k++)
    t->weight[k] /= sum;
  t->n = n;
}

static void
axis_taps (GraftNode *node, gboolean upsample, gint64 in_len, gint64 out_len, double scale, double roi_start,
           double roi_end, Taps *taps)
{
  const char *mode = upsample ? graft_node_attr_string (node, "mode", "nearest") : graft_node_attr_string (node, "mode", "nearest");
  const char *ctm = upsample ? "asymmetric" : graft_node_attr_string (node, "coordinate_transformation_mode", "half_pixel");
  const char *nearest = upsample ? "floor" : graft_node_attr_string (node, "nearest_mode", "round_prefer_floor");
  double a = graft_node_attr_float (node, "cubic_coeff_a", -0.75);
  gboolean exclude = graft_node_attr_int (node, "exclude_outside", 0);
  gboolean antialias = !upsample && graft_node_attr_int (node, "antialias", 0);

  /* an axis of scale 1 and no ROI (the batch and channel axes of an
   * upsampled map) reads output o from input o in every mode but the
   * two TensorFlow ones (cubic and linear give the other taps weight 0): its
   * taps without the per-element string tests below (256 channels of
   * them took as long as YOLO's upsampling itself) */
  if (in_len == out_len && scale == 1 && strcmp (ctm, "tf_crop_and_resize") != 0 &&
      strcmp (ctm, "tf_half_pixel_for_nn") != 0)
    {
      for (gint64 o = 0; o < out_len; o++)
        {
          taps[o].n = 1;
          taps[o].index[0] = o;
          taps[o].weight[0] = 1;
          taps[o].outside = FALSE;
        }
      return;
    }

  for (gint64 o = 0; o < out_len; o++)
    {
      Taps *t = &taps[o];
      double x;
      t->outside = FALSE;
      if (strcmp (ctm, "pytorch_half_pixel") == 0)
        x = out_len > 1 ? (o + 0.5) / scale - 0.5 : 0;
      else if (strcmp (ctm, "align_corners") == 0)
        {
          /* the reference uses the unrounded resized length in_len × scale */
          double resized = in_len * scale;
          x = out_len == 1 ? 0 : o * (double) (in_len - 1) / (resized - 1);
        }
      else if (strcmp (ctm, "asymmetric") == 0)
        x = o / scale;
      else if (strcmp (ctm, "tf_half_pixel_for_nn") == 0)
        x = (o + 0.5) / scale;
      else if (strcmp (ctm, "tf_crop_and_resize") == 0)
        {
          x = out_len > 1 ? roi_start * (in_len - 1) + o * (roi_end - roi_start) * (in_len - 1) / (out_len - 1)
                          : 0.5 * (roi_start + roi_end) * (in_len - 1);
          if (x < 0 || x > in_len - 1)
            t->outside = TRUE;
        }
      else if (strcmp (ctm, "half_pixel_symmetric") == 0)
        {
          /* centres the implicit ROI when out_len is a rounded in_len × scale */
          double offset = in_len / 2.0 * (1 - out_len / (scale * in_len));
          x = offset + (o + 0.5) / scale - 0.5;
        }
      else
        x = (o + 0.5) / scale - 0.5;

      if (antialias && scale < 1 && strcmp (mode, "nearest") != 0)
        antialias_taps (x, scale, strcmp (mode, "cubic") == 0, a, exclude, in_len, t);
      else if (strcmp (mode, "nearest") == 0)
        {
          double r;
          if (strcmp (nearest, "round_prefer_ceil") == 0)
            r = floor (x + 0.5);
          else if (strcmp (nearest, "floor") == 0)
            r = floor (x);
          else if (strcmp (nearest, "ceil") == 0)
            r = ceil (x);
          else
            r = (x - floor (x) == 0.5) ? floor (x) : round (x);
          t->n = 1;
          t->index[0] = CLAMP ((gint64) r, 0, in_len - 1);
          t->weight[0] = 1;
        }
      else if (strcmp (mode, "linear") == 0)
        {
          double xc = CLAMP (x, 0, in_len - 1);
          gint64 i0 = (gint64) floor (xc);
          double r = xc - i0;
          t->n = 2;
          t->index[0] = CLAMP (i0, 0, in_len - 1);
          t->index[1] = CLAMP (i0 + 1, 0, in_len - 1);
          t->weight[0] = 1 - r;
          t->weight[1] = r;
        }
      else
        {
          gint64 i0 = (gint64) floor (x);
          double r = x - i0, sum = 0;
          t->n = 4;
          for (int k = 0; k < 4; k++)
            {
              gint64 idx = i0 - 1 + k;
              double w = cubic_weight (r - (k - 1), a);
              if (exclude && (idx < 0 || idx >= in_len))
                w = 0;
              t->index[k] = CLAMP (idx, 0, in_len - 1);
              t->weight[k] = w;
              sum += w;
            }
          if (exclude && sum != 0)
            for (int k = 0; k < 4; k++)
              t->weight[k] /= sum;
        }
    }
}

/* ---- float32 planes ----
 * When only the last two axes change (the others' taps are the identity)
 * and no tap extrapolates, each [H, W] plane is resized separably: an
 * input row is interpolated along W once into a cache of the rows the
 * current output row reads, and each output row is the weighted sum of
 * its cached rows (one vector multiply-add per tap). Nearest rows
 * gather once and repeat the row above when they read the same input
 * row. Sums in float, in the order of the taps. */

/* the rows an output row reads at most (cubic reads 4, antialiased
 * downscaling more: those take the general path) */
#define PLANE_CACHE_ROWS 8

typedef struct {
  const float *x;
  float *y;
  gint64 planes, H, W, OH, OW, planes_per_task;
  const Taps *rows;
  int col_taps;                   /* taps per output column */
  const gint64 *col_index;        /* [OW][col_taps] */
  const float *col_weight;        /* [OW][col_taps] */
  gboolean nearest;               /* one tap of weight 1 on both axes */
  gboolean doubled;               /* nearest, and output column o reads input o / 2 */
  void (*gather) (const float *src, float *dst, gint64 OW, int col_taps, const gint64 *index, const float *weight);
  void (*accumulate) (float *y, const float *row, gint64 n, float w, gboolean first);
} PlaneJob;

static inline __attribute__ ((always_inline)) void
gather_body (const float *src, float *dst, gint64 OW, int col_taps, const gint64 *index, const float *weight)
{
  if (col_taps == 1)
    for (gint64 o = 0; o < OW; o++)
      dst[o] = src[index[o]] * weight[o];
  else if (col_taps == 2)
    for (gint64 o = 0; o < OW; o++)
      dst[o] = src[index[2 * o]] * weight[2 * o] + src[index[2 * o + 1]] * weight[2 * o + 1];
  else
    for (gint64 o = 0; o < OW; o++)
      {
        float acc = 0;
        for (int k = 0; k < col_taps; k++)
          acc += src[index[o * col_taps + k]] * weight[o * col_taps + k];
        dst[o] = acc;
      }
}

static inline __attribute__ ((always_inline)) void
accumulate_body (float *restrict y, const float *restrict row, gint64 n, float w, gboolean first)
{
  if (first)
    for (gint64 i = 0; i < n; i++)
      y[i] = row[i] * w;
  else
    for (gint64 i = 0; i < n; i++)
      y[i] += row[i] * w;
}

static GRAFT_HOT_LOOP void
gather_portable (const float *src, float *dst, gint64 OW, int col_taps, const gint64 *index, const float *weight)
{
  gather_body (src, dst, OW, col_taps, index, weight);
}

static GRAFT_HOT_LOOP void
accumulate_portable (float *y, const float *row, gint64 n, float w, gboolean first)
{
  accumulate_body (y, row, n, w, first);
}

#ifdef GRAFT_HAVE_X86_SIMD
static GRAFT_TARGET_AVX2_FMA GRAFT_HOT_LOOP void
gather_avx2 (const float *src, float *dst, gint64 OW, int col_taps, const gint64 *index, const float *weight)
{
  gather_body (src, dst, OW, col_taps, index, weight);
}

static GRAFT_TARGET_AVX2_FMA GRAFT_HOT_LOOP void
accumulate_avx2 (float *y, const float *row, gint64 n, float w, gboolean first)
{
  accumulate_body (y, row, n, w, first);
}
#else
#define gather_avx2 gather_portable
#define accumulate_avx2 accumulate_portable
#endif

static void
resize_plane (const PlaneJob *job, const float *x, float *y, float *cache, gint64 *cached)
{
  int next_slot = 0;
  for (int s = 0; s < PLANE_CACHE_ROWS; s++)
    cached[s] = -1;
  for (gint64 oy = 0; oy < job->OH; oy++)
    {
      const Taps *t = &job->rows[oy];
      float *out = y + oy * job->OW;
      if (job->nearest)
        {
          /* in line: small maps (YOLO's 2×2 and 4×4 upsampled) have rows
           * of a few floats, where a call per row cost more than the copy */
          if (oy > 0 && t->index[0] == job->rows[oy - 1].index[0])
            memcpy (out, out - job->OW, job->OW * sizeof (float));
          else if (job->doubled)
            {
              const float *src = x + t->index[0] * job->W;
              for (gint64 o = 0; o < job->W; o++)
                out[2 * o] = out[2 * o + 1] = src[o];
            }
          else
            {
              const float *src = x + t->index[0] * job->W;
              for (gint64 o = 0; o < job->OW; o++)
                out[o] = src[job->col_index[o]];
            }
          continue;
        }
      gboolean first = TRUE;
      for (int k = 0; k < t->n; k++)
        {
          float w = t->weight[k];
          if (w == 0 && !(first && k == t->n - 1))
            continue;
          int s = 0;
          while (s < PLANE_CACHE_ROWS && cached[s] != t->index[k])
            s++;
          if (s == PLANE_CACHE_ROWS)
            {
              /* the rows come in order: the oldest slot is the one not read for longest */
              s = next_slot;
              next_slot = (next_slot + 1) % PLANE_CACHE_ROWS;
              cached[s] = t->index[k];
              job->gather (x + t->index[k] * job->W, cache + s * job->OW, job->OW, job->col_taps, job->col_index,
                           job->col_weight);
            }
          job->accumulate (out, cache + s * job->OW, job->OW, w, first);
          first = FALSE;
        }
    }
}

static void
resize_planes_task (gint64 index, gpointer data)
{
  const PlaneJob *job = data;
  g_autofree float *cache = job->nearest ? NULL : g_new (float, PLANE_CACHE_ROWS * job->OW);
  gint64 cached[PLANE_CACHE_ROWS];
  gint64 end = MIN ((index + 1) * job->planes_per_task, job->planes);
  for (gint64 p = index * job->planes_per_task; p < end; p++)
    resize_plane (job, job->x + p * job->H * job->W, job->y + p * job->OH * job->OW, cache, cached);
}

/* The taps of an axis left as it is: output o reads input o alone. */
static gboolean
taps_identity (const Taps *taps, gint64 in_len, gint64 out_len)
{
  if (in_len != out_len)
    return FALSE;
  for (gint64 o = 0; o < out_len; o++)
    {
      if (taps[o].outside || taps[o].index[0] != o || taps[o].weight[0] != 1)
        return FALSE;
      for (int k = 1; k < taps[o].n; k++)
        if (taps[o].weight[k] != 0)
          return FALSE;
    }
  return TRUE;
}

/* FALSE when the case is not one the plane path takes (nothing written). */
static gboolean
resize_float_planes (GraftKernelContext *ctx, const GraftRtTensor *x, GraftRtTensor *y, Taps *const *taps)
{
  int r = x->rank;
  if (x->dtype != GRAFT_DTYPE_FLOAT32 || r < 2)
    return FALSE;
  for (int d = 0; d < r - 2; d++)
    if (!taps_identity (taps[d], x->dims[d], y->dims[d]))
      return FALSE;
  gint64 H = x->dims[r - 2], W = x->dims[r - 1], OH = y->dims[r - 2], OW = y->dims[r - 1];
  int col_taps = 1, row_taps = 1;
  for (gint64 o = 0; o < OH; o++)
    row_taps = MAX (row_taps, taps[r - 2][o].n);
  for (gint64 o = 0; o < OW; o++)
    col_taps = MAX (col_taps, taps[r - 1][o].n);
  if (row_taps > PLANE_CACHE_ROWS || H == 0 || W == 0)
    return FALSE;
  for (int d = r - 2; d < r; d++)
    for (gint64 o = 0; o < y->dims[d]; o++)
      if (taps[d][o].outside)
        return FALSE;
  g_autofree gint64 *col_index = g_new0 (gint64, OW * col_taps);
  g_autofree float *col_weight = g_new0 (float, OW * col_taps);
  gboolean nearest = row_taps == 1 && col_taps == 1;
  for (gint64 o = 0; o < OW; o++)
    for (int k = 0; k < taps[r - 1][o].n; k++)
      {
        col_index[o * col_taps + k] = taps[r - 1][o].index[k];
        col_weight[o * col_taps + k] = taps[r - 1][o].weight[k];
      }
  for (gint64 o = 0; o < OW && nearest; o++)
    nearest = col_weight[o] == 1;
  for (gint64 o = 0; o < OH && nearest; o++)
    nearest = taps[r - 2][o].weight[0] == 1;
  gboolean doubled = nearest && OW == 2 * W;
  for (gint64 o = 0; o < OW && doubled; o++)
    doubled = col_index[o] == o / 2;
  gboolean avx2 = graft_kernel_table ()->avx2;
  PlaneJob job = { x->data, y->data, graft_dims_product (x->dims, 0, r - 2), H, W, OH, OW, 1, taps[r - 2], col_taps,
                   col_index, col_weight, nearest, doubled, avx2 ? gather_avx2 : gather_portable,
                   avx2 ? accumulate_avx2 : accumulate_portable };
  gint64 tasks = MIN (job.planes, (gint64) graft_kernel_get_n_threads (ctx) * 4);
  job.planes_per_task = (job.planes + MAX (tasks, 1) - 1) / MAX (tasks, 1);
  graft_kernel_parallel_for (ctx, (job.planes + job.planes_per_task - 1) / job.planes_per_task, resize_planes_task,
                             &job);
  return TRUE;
}

static gboolean
kernel_resize (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0];
  GraftRtTensor *roi, *scales, *sizes;
  gboolean upsample = strcmp (ctx->node->op_type, "Upsample") == 0;
  get_inputs (ctx->node, ctx->opset, ctx->n_inputs, ctx->inputs, &roi, &scales, &sizes);
  g_autoptr(GraftRtTensor) attr_scales = NULL;
  if (scales == NULL && upsample)
    scales = attr_scales = upsample_attr_scales (ctx->node);
  GraftShape shape;
  ResizeSpec spec;
  graft_rt_tensor_get_shape (x, &shape);
  gboolean ok = resize_spec (ctx->node, ctx->opset, x->rank, &shape, roi, scales, sizes, TRUE, &spec, error);
  graft_shape_clear (&shape);
  if (!ok)
    return FALSE;
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, x->dtype, x->rank, spec.out_dims, error);
  if (y == NULL)
    return FALSE;
  if (y->numel == 0)
    return TRUE;
  double extrapolation = graft_node_attr_float (ctx->node, "extrapolation_value", 0);
  g_autofree Taps **taps = g_new0 (Taps *, x->rank);
  for (int d = 0; d < x->rank; d++)
    if (graft_node_attr_int (ctx->node, "antialias", 0) && !upsample && 2 - 2 * (floor (-2 / spec.scales[d]) + 1) > MAX_TAPS)
      return graft_kernel_unsupported (error, "antialiased downscaling by %g (at most %d taps per output)",
                                       spec.scales[d], MAX_TAPS);
  for (int d = 0; d < x->rank; d++)
    {
      /* not zeroed: a Taps is 1 KB, and axis_taps sets what is read of it */
      taps[d] = g_new (Taps, MAX (spec.out_dims[d], 1));
      axis_taps (ctx->node, upsample, x->dims[d], spec.out_dims[d], spec.scales[d], spec.roi_start[d], spec.roi_end[d], taps[d]);
    }
  if (resize_float_planes (ctx, x, y, taps))
    {
      for (int d = 0; d < x->rank; d++)
        g_free (taps[d]);
      return TRUE;
    }
  gint64 strides[GRAFT_RT_MAX_RANK], index[GRAFT_RT_MAX_RANK] = { 0 };
  graft_rt_strides (x->rank, x->dims, strides);
  gboolean nearest = !upsample ? strcmp (graft_node_attr_string (ctx->node, "mode", "nearest"), "nearest") == 0 :
                                 strcmp (graft_node_attr_string (ctx->node, "mode", "nearest"), "nearest") == 0;
  for (gint64 o = 0; o < y->numel; o++)
    {
      gboolean outside = FALSE;
      for (int d = 0; d < x->rank; d++)
        outside |= taps[d][index[d]].outside;
      if (outside)
        graft_rt_tensor_set_f64 (y, o, extrapolation);
      else if (nearest)
        {
          gint64 off = 0;
          for (int d = 0; d < x->rank; d++)
            off += taps[d][index[d]].index[0] * strides[d];
          graft_copy_element (y, o, x, off);
        }
      else
        {
          /* sum over the product of every axis's taps */
          int k[GRAFT_RT_MAX_RANK] = { 0 };
          double acc = 0;
          for (;;)
            {
              double w = 1;
              gint64 off = 0;
              for (int d = 0; d < x->rank; d++)
                {
                  Taps *t = &taps[d][index[d]];
                  w *= t->weight[k[d]];
                  off += t->index[k[d]] * strides[d];
                }
              if (w != 0)
                acc += w * graft_rt_tensor_get_f64 (x, off);
              int d = x->rank - 1;
              for (; d >= 0; d--)
                {
                  if (++k[d] < taps[d][index[d]].n)
                    break;
                  k[d] = 0;
                }
              if (d < 0)
                break;
            }
          if (graft_dtype_is_integer (y->dtype))
            acc = nearbyint (acc);
          graft_rt_tensor_set_f64 (y, o, acc);
        }
      graft_index_next (index, y->dims, x->rank);
    }
  for (int d = 0; d < x->rank; d++)
    g_free (taps[d]);
  return TRUE;
}

const GraftOpSchema graft_ops_resize[] = {
  { "onnx::Resize", 10, 0, infer_resize, kernel_resize, GRAFT_OP_HALF_AS_FLOAT, "X roi scales sizes", "Y" },
  { "onnx::Upsample", 7, 9, infer_resize, kernel_resize, GRAFT_OP_HALF_AS_FLOAT, "X scales", "Y" },
  { NULL }
};
