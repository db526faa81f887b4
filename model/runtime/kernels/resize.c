/* Resize (nearest / n-linear / cubic, every coordinate transformation
 * mode of opsets 10-18) and Upsample. Separable: each axis gets a list of
 * (source index, weight) taps per output coordinate. */
#include <math.h>
#include <string.h>
#include "runtime/kernels/kernel-util.h"

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
      taps[d] = g_new0 (Taps, MAX (spec.out_dims[d], 1));
      axis_taps (ctx->node, upsample, x->dims[d], spec.out_dims[d], spec.scales[d], spec.roi_start[d], spec.roi_end[d], taps[d]);
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
