/* Normalisations: BatchNormalization, InstanceNormalization,
 * LayerNormalization, RMSNormalization, GroupNormalization, LRN,
 * MeanVarianceNormalization, LpNormalization. Statistics are accumulated in double. */
#include <math.h>
#include <string.h>
#include "runtime/fusion-patterns.h"
#include "runtime/kernels/kernel-util.h"
#include "runtime/kernels/norm.h"
#include "runtime/kernels/simd-target.h"
#include "runtime/kernels/vector-math.h"

static gboolean
infer_batch_norm (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *x = graft_infer_input (ctx, 0);
  GraftInferValue *mean = graft_infer_input (ctx, 3);
  graft_infer_set_output (ctx, 0, x->dtype, &x->shape);
  for (guint i = 1; i < ctx->n_outputs; i++)
    if (mean)
      graft_infer_set_output (ctx, i, mean->dtype, &mean->shape);
  return TRUE;
}

typedef struct {
  const float *x;
  float *y;
  const float *scale, *shift;   /* folded per channel */
  gint64 C, spatial;
  gint64 N, rows;               /* affine_rows: N rows, `rows` a call */
} AffineJob;

/* Spatial size 1 ([N, C]: LeViT's BatchNorm1d over its flattened tokens):
 * `rows` whole rows a call, the channels along each, where a plane a
 * call would cost a call per value. The same products and sums as
 * affine_plane's. */
static GRAFT_HOT_LOOP void
affine_rows (gint64 index, gpointer data)
{
  AffineJob *job = data;
  gint64 C = job->C;
  const float *scale = job->scale, *shift = job->shift;
  for (gint64 n = index * job->rows; n < MIN ((index + 1) * job->rows, job->N); n++)
    {
      const float *x = job->x + n * C;
      float *y = job->y + n * C;
      for (gint64 c = 0; c < C; c++)
        y[c] = x[c] * scale[c] + shift[c];
    }
}

static void
affine_plane (gint64 index, gpointer data)
{
  AffineJob *job = data;
  gint64 c = index % job->C;
  const float *x = job->x + index * job->spatial;
  float *y = job->y + index * job->spatial;
  float s = job->scale[c], b = job->shift[c];
  for (gint64 i = 0; i < job->spatial; i++)
    y[i] = x[i] * s + b;
}

static gboolean
kernel_batch_norm (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0];
  GraftRtTensor *scale = ctx->inputs[1], *bias = ctx->inputs[2], *mean = ctx->inputs[3], *var = ctx->inputs[4];
  double eps = graft_node_attr_float (ctx->node, "epsilon", 1e-5);
  double momentum = graft_node_attr_float (ctx->node, "momentum", 0.9);
  gboolean training = graft_node_attr_int (ctx->node, "training_mode", 0);
  GraftRtTensor *y = graft_kernel_output (ctx, 0, error);
  if (y == NULL)
    return FALSE;
  if (x->rank < 2 && x->rank != 1)
    return graft_kernel_fail (error, "input must have rank >= 1");
  gint64 N = x->dims[0], C = x->rank > 1 ? x->dims[1] : 1;
  gint64 spatial = graft_dims_product (x->dims, 2, x->rank);
  if (scale->numel != C || bias->numel != C || mean->numel != C || var->numel != C)
    return graft_kernel_fail (error, "scale, B, mean and var must have %" G_GINT64_FORMAT " values", C);

  g_autofree double *m = g_new0 (double, C);
  g_autofree double *v = g_new0 (double, C);
  for (gint64 c = 0; c < C; c++)
    {
      m[c] = graft_rt_tensor_get_f64 (mean, c);
      v[c] = graft_rt_tensor_get_f64 (var, c);
    }
  if (training)
    {
      /* batch statistics; running stats are updated for the optional outputs */
      g_autofree double *bm = g_new0 (double, C), *bv = g_new0 (double, C);
      for (gint64 n = 0; n < N; n++)
        for (gint64 c = 0; c < C; c++)
          for (gint64 i = 0; i < spatial; i++)
            bm[c] += graft_rt_tensor_get_f64 (x, (n * C + c) * spatial + i);
      for (gint64 c = 0; c < C; c++)
        bm[c] /= MAX (N * spatial, 1);
      for (gint64 n = 0; n < N; n++)
        for (gint64 c = 0; c < C; c++)
          for (gint64 i = 0; i < spatial; i++)
            {
              double d = graft_rt_tensor_get_f64 (x, (n * C + c) * spatial + i) - bm[c];
              bv[c] += d * d;
            }
      for (gint64 c = 0; c < C; c++)
        bv[c] /= MAX (N * spatial, 1);
      for (guint o = 1; o < 3 && o < ctx->n_outputs; o++)
        {
          if (!graft_kernel_wants_output (ctx, o))
            continue;
          GraftRtTensor *t = graft_kernel_output (ctx, o, error);
          if (t == NULL)
            return FALSE;
          for (gint64 c = 0; c < C; c++)
            graft_rt_tensor_set_f64 (t, c, o == 1 ? m[c] * momentum + bm[c] * (1 - momentum)
                                                  : v[c] * momentum + bv[c] * (1 - momentum));
        }
      memcpy (m, bm, sizeof (double) * C);
      memcpy (v, bv, sizeof (double) * C);
    }

  g_autofree float *fs = g_new (float, C), *fb = g_new (float, C);
  for (gint64 c = 0; c < C; c++)
    {
      double s = graft_rt_tensor_get_f64 (scale, c) / sqrt (v[c] + eps);
      fs[c] = s;
      fb[c] = graft_rt_tensor_get_f64 (bias, c) - m[c] * s;
    }
  if (x->dtype == GRAFT_DTYPE_FLOAT32)
    {
      AffineJob job = { x->data, y->data, fs, fb, C, spatial, N, MAX (1, 16384 / MAX (C, 1)) };
      if (spatial == 1)
        graft_kernel_parallel_for (ctx, (N + job.rows - 1) / job.rows, affine_rows, &job);
      else
        graft_kernel_parallel_for (ctx, N * C, affine_plane, &job);
    }
  else
    for (gint64 i = 0; i < x->numel; i++)
      {
        gint64 c = (i / spatial) % C;
        graft_rt_tensor_set_f64 (y, i, graft_rt_tensor_get_f64 (x, i) * fs[c] + fb[c]);
      }
  return TRUE;
}

/* Normalises groups of `count` consecutive values: y = (x - mean) / sqrt(var + eps),
 * then applies scale/bias through a callback-free index rule. */
static void
normalize_groups (const GraftRtTensor *x, GraftRtTensor *y, gint64 groups, gint64 count, double eps,
                  double *means, double *inv_stds)
{
  for (gint64 g = 0; g < groups; g++)
    {
      double s = 0, sq = 0;
      for (gint64 i = 0; i < count; i++)
        s += graft_rt_tensor_get_f64 (x, g * count + i);
      double mean = count ? s / count : 0;
      for (gint64 i = 0; i < count; i++)
        {
          double d = graft_rt_tensor_get_f64 (x, g * count + i) - mean;
          sq += d * d;
        }
      double inv = 1.0 / sqrt ((count ? sq / count : 0) + eps);
      for (gint64 i = 0; i < count; i++)
        graft_rt_tensor_set_f64 (y, g * count + i, (graft_rt_tensor_get_f64 (x, g * count + i) - mean) * inv);
      if (means)
        means[g] = mean;
      if (inv_stds)
        inv_stds[g] = inv;
    }
}

static void
group_norm_task (gint64 index, gpointer data)
{
  const GraftGroupNormJob *job = data;
  gint64 g = index % job->groups, per_group = job->C / job->groups;
  const float *x = job->x + index * per_group * job->spatial;
  float *y = job->y + index * per_group * job->spatial;
  float mean, inv;
  graft_vm_moments (x, per_group * job->spatial, job->eps, &mean, &inv);
  float a = inv * (job->group_scale ? job->group_scale[g] : 1.0f);
  float b = job->group_bias ? job->group_bias[g] : 0.0f;
  for (gint64 k = 0; k < per_group; k++)
    {
      gint64 c = g * per_group + k;
      float s = job->channel_scale ? job->channel_scale[c] : 1.0f;
      float t = job->channel_bias ? job->channel_bias[c] : 0.0f;
      graft_vm_affine (x + k * job->spatial, y + k * job->spatial, job->spatial, mean, a * s, b * s + t, job->silu);
    }
}

void
graft_group_norm_f32 (GraftKernelContext *ctx, const GraftGroupNormJob *job, gint64 N)
{
  graft_kernel_parallel_for (ctx, N * job->groups, group_norm_task, (gpointer) job);
}

static gboolean
all_float32 (GraftRtTensor *const *tensors, guint n)
{
  for (guint i = 0; i < n; i++)
    if (tensors[i] && (tensors[i]->kind != GRAFT_RT_TENSOR || tensors[i]->dtype != GRAFT_DTYPE_FLOAT32))
      return FALSE;
  return TRUE;
}

static gboolean
kernel_instance_norm (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0], *scale = ctx->inputs[1], *bias = ctx->inputs[2];
  GraftRtTensor *y = graft_kernel_output (ctx, 0, error);
  if (y == NULL)
    return FALSE;
  if (x->rank < 2)
    return graft_kernel_fail (error, "input must have rank >= 2");
  gint64 N = x->dims[0], C = x->dims[1], spatial = graft_dims_product (x->dims, 2, x->rank);
  if (scale->numel != C || bias->numel != C)
    return graft_kernel_fail (error, "scale and B must have %" G_GINT64_FORMAT " values", C);
  double eps = graft_node_attr_float (ctx->node, "epsilon", 1e-5);
  GraftRtTensor *tensors[] = { x, scale, bias, y };
  if (all_float32 (tensors, G_N_ELEMENTS (tensors)))
    {
      GraftGroupNormJob job = { x->data, y->data, scale->data, bias->data, NULL, NULL, C, MAX (C, 1), spatial, eps, FALSE };
      graft_group_norm_f32 (ctx, &job, C > 0 ? N : 0);
      return TRUE;
    }
  normalize_groups (x, y, N * C, spatial, eps, NULL, NULL);
  for (gint64 i = 0; i < y->numel; i++)
    {
      gint64 c = (i / MAX (spatial, 1)) % C;
      graft_rt_tensor_set_f64 (y, i, graft_rt_tensor_get_f64 (y, i) * graft_rt_tensor_get_f64 (scale, c) +
                                     graft_rt_tensor_get_f64 (bias, c));
    }
  return TRUE;
}

static gboolean
infer_layer_norm (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *x = graft_infer_input (ctx, 0);
  gint64 axis = graft_node_attr_int (ctx->node, "axis", -1);
  graft_infer_set_output (ctx, 0, x->dtype, &x->shape);
  if (ctx->n_outputs > 1 && x->shape.rank >= 0)
    {
      if (!graft_normalize_axis (&axis, x->shape.rank, error))
        return FALSE;
      GraftShape s;
      graft_shape_copy (&s, &x->shape);
      for (int d = axis; d < s.rank; d++)
        s.dims[d] = graft_dim_fixed (1);
      GraftDType stash = graft_node_attr_int (ctx->node, "stash_type", 1);
      for (guint i = 1; i < ctx->n_outputs; i++)
        graft_infer_set_output (ctx, i, stash == GRAFT_DTYPE_FLOAT32 ? x->dtype : stash, &s);
      graft_shape_clear (&s);
    }
  return TRUE;
}

/* LayerNormalization and RMSNormalization normalise groups of the trailing
 * axes from `axis` on: the group count and size, and output 0. */
static GraftRtTensor *
trailing_groups_output (GraftKernelContext *ctx, gint64 *groups, gint64 *count, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0];
  gint64 axis = graft_node_attr_int (ctx->node, "axis", -1);
  if (!graft_normalize_axis (&axis, x->rank, error))
    return NULL;
  *groups = graft_dims_product (x->dims, 0, axis);
  *count = graft_dims_product (x->dims, axis, x->rank);
  return graft_kernel_output (ctx, 0, error);
}

/* float32 rows with a whole-row scale (and bias): the vectorised rows of
 * vector-math.h, parallel over the rows. */
typedef struct {
  const float *x, *scale, *bias;
  float *y;
  double *means, *inv_stds;       /* per row, or NULL */
  gint64 groups, count, rows_per_block;
  float eps;
  gboolean rms;
} NormRowsJob;

static void
norm_rows_block (gint64 block, gpointer data)
{
  NormRowsJob *job = data;
  gint64 end = MIN ((block + 1) * job->rows_per_block, job->groups);
  for (gint64 g = block * job->rows_per_block; g < end; g++)
    {
      float mean, inv_std;
      graft_vm_normalize_row (job->x + g * job->count, job->y + g * job->count, job->count, job->scale, job->bias,
                              job->eps, job->rms, &mean, &inv_std);
      if (job->means)
        {
          job->means[g] = mean;
          job->inv_stds[g] = inv_std;
        }
    }
}

/* job's rows over the pool in blocks of at least ~64 K values: a pool
 * wake-up costs more than a short row */
static void
run_norm_rows (GraftKernelContext *ctx, NormRowsJob *job)
{
  gint64 threads = graft_kernel_get_n_threads (ctx);
  job->rows_per_block = MAX (1, MIN ((job->groups + threads - 1) / threads, 65536 / MAX (job->count, 1)));
  graft_kernel_parallel_for (ctx, (job->groups + job->rows_per_block - 1) / job->rows_per_block, norm_rows_block, job);
}

static gboolean
float_rows_apply (const GraftRtTensor *x, const GraftRtTensor *scale, const GraftRtTensor *bias, const GraftRtTensor *y,
                  gint64 count)
{
  return x->dtype == GRAFT_DTYPE_FLOAT32 && y->dtype == GRAFT_DTYPE_FLOAT32 && scale->dtype == GRAFT_DTYPE_FLOAT32 &&
         scale->numel == count && (bias == NULL || (bias->dtype == GRAFT_DTYPE_FLOAT32 && bias->numel == count));
}

static void
normalize_float_rows (GraftKernelContext *ctx, const GraftRtTensor *x, const GraftRtTensor *scale,
                      const GraftRtTensor *bias, GraftRtTensor *y, gint64 groups, gint64 count, double eps,
                      gboolean rms, double *means, double *inv_stds)
{
  NormRowsJob job = { x->data, scale->data, bias ? bias->data : NULL, y->data, means, inv_stds, groups, count,
                      0, eps, rms };
  run_norm_rows (ctx, &job);
}

void
graft_layer_norm_rows_f32 (GraftKernelContext *ctx, const float *x, const float *scale, const float *bias, float *y,
                           gint64 rows, gint64 count, double eps)
{
  /* the row kernel multiplies by a scale: ones where the caller has none */
  g_autofree float *ones = NULL;
  if (scale == NULL)
    {
      ones = g_new (float, MAX (count, 1));
      for (gint64 i = 0; i < count; i++)
        ones[i] = 1;
      scale = ones;
    }
  NormRowsJob job = { x, scale, bias, y, NULL, NULL, rows, count, 0, eps, FALSE };
  run_norm_rows (ctx, &job);
}

static gboolean
kernel_layer_norm (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0], *scale = ctx->inputs[1], *bias = graft_kernel_input (ctx, 2);
  gint64 groups, count;
  GraftRtTensor *y = trailing_groups_output (ctx, &groups, &count, error);
  if (y == NULL)
    return FALSE;
  double eps = graft_node_attr_float (ctx->node, "epsilon", 1e-5);
  g_autofree double *means = g_new (double, MAX (groups, 1)), *invs = g_new (double, MAX (groups, 1));
  if (float_rows_apply (x, scale, bias, y, count))
    normalize_float_rows (ctx, x, scale, bias, y, groups, count, eps, FALSE, means, invs);
  else
    {
      normalize_groups (x, y, groups, count, eps, means, invs);
      for (gint64 i = 0; i < y->numel; i++)
        {
          gint64 k = i % MAX (count, 1);
          /* scale and bias broadcast against the normalised trailing axes */
          double s = graft_rt_tensor_get_f64 (scale, scale->numel == count ? k : k % MAX (scale->numel, 1));
          double b = bias ? graft_rt_tensor_get_f64 (bias, bias->numel == count ? k : k % MAX (bias->numel, 1)) : 0;
          graft_rt_tensor_set_f64 (y, i, graft_rt_tensor_get_f64 (y, i) * s + b);
        }
    }
  for (guint o = 1; o < 3; o++)
    if (graft_kernel_wants_output (ctx, o))
      {
        GraftRtTensor *t = graft_kernel_output (ctx, o, error);
        if (t == NULL)
          return FALSE;
        for (gint64 g = 0; g < groups; g++)
          graft_rt_tensor_set_f64 (t, g, o == 1 ? means[g] : invs[g]);
      }
  return TRUE;
}

/* Scale broadcasts unidirectionally against X's trailing axes: the
 * normalised element k of a group reads scale at k modulo its size (scale
 * covers either the whole group or trailing axes of it). */
static double
broadcast_trailing (const GraftRtTensor *t, gint64 k)
{
  return graft_rt_tensor_get_f64 (t, k % MAX (t->numel, 1));
}

static gboolean
infer_rms_norm (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *x = graft_infer_input (ctx, 0), *scale = graft_infer_input (ctx, 1);
  graft_infer_set_output (ctx, 0, scale->dtype, &x->shape);
  return TRUE;
}

static gboolean
kernel_rms_norm (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0], *scale = ctx->inputs[1];
  gint64 groups, count;
  GraftRtTensor *y = trailing_groups_output (ctx, &groups, &count, error);
  if (y == NULL)
    return FALSE;
  double eps = graft_node_attr_float (ctx->node, "epsilon", 1e-5);
  if (count % MAX (scale->numel, 1) != 0)
    return graft_kernel_fail (error, "scale (%" G_GINT64_FORMAT " values) does not broadcast to the %"
                              G_GINT64_FORMAT " normalised values", scale->numel, count);
  if (float_rows_apply (x, scale, NULL, y, count))
    {
      g_autofree double *means = g_new (double, MAX (groups, 1)), *inv_rms = g_new (double, MAX (groups, 1));
      normalize_float_rows (ctx, x, scale, NULL, y, groups, count, eps, TRUE, means, inv_rms);
      return TRUE;
    }
  for (gint64 g = 0; g < groups; g++)
    {
      double sq = 0;
      for (gint64 k = 0; k < count; k++)
        {
          double v = graft_rt_tensor_get_f64 (x, g * count + k);
          sq += v * v;
        }
      double inv_rms = 1.0 / sqrt ((count ? sq / count : 0) + eps);
      for (gint64 k = 0; k < count; k++)
        graft_rt_tensor_set_f64 (y, g * count + k,
                                 graft_rt_tensor_get_f64 (x, g * count + k) * inv_rms * broadcast_trailing (scale, k));
    }
  return TRUE;
}

static gboolean
kernel_group_norm (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0], *scale = ctx->inputs[1], *bias = ctx->inputs[2];
  gint64 groups = graft_node_attr_int (ctx->node, "num_groups", 1);
  double eps = graft_node_attr_float (ctx->node, "epsilon", 1e-5);
  GraftRtTensor *y = graft_kernel_output (ctx, 0, error);
  if (y == NULL)
    return FALSE;
  if (x->rank < 2)
    return graft_kernel_fail (error, "input must have rank >= 2");
  gint64 N = x->dims[0], C = x->dims[1], spatial = graft_dims_product (x->dims, 2, x->rank);
  if (groups <= 0 || C % groups != 0)
    return graft_kernel_fail (error, "%" G_GINT64_FORMAT " channels do not divide into %" G_GINT64_FORMAT " groups", C, groups);
  /* per channel from opset 21, per group in opset 18 */
  if ((scale->numel != C && scale->numel != groups) || bias->numel != scale->numel)
    return graft_kernel_fail (error, "scale and bias must have %" G_GINT64_FORMAT " values", C);
  GraftRtTensor *tensors[] = { x, scale, bias, y };
  if (all_float32 (tensors, G_N_ELEMENTS (tensors)))
    {
      gboolean per_channel = scale->numel == C;
      GraftGroupNormJob job = { x->data, y->data, per_channel ? NULL : scale->data, per_channel ? NULL : bias->data,
                           per_channel ? scale->data : NULL, per_channel ? bias->data : NULL, C, groups, spatial, eps,
                           FALSE };
      graft_group_norm_f32 (ctx, &job, N);
      return TRUE;
    }
  normalize_groups (x, y, N * groups, C / groups * spatial, eps, NULL, NULL);
  for (gint64 i = 0; i < y->numel; i++)
    {
      gint64 c = (i / MAX (spatial, 1)) % C;
      gint64 sc = scale->numel == C ? c : c / (C / groups);
      graft_rt_tensor_set_f64 (y, i, graft_rt_tensor_get_f64 (y, i) * graft_rt_tensor_get_f64 (scale, sc) +
                                     graft_rt_tensor_get_f64 (bias, sc));
    }
  return TRUE;
}

/* t holds one value per channel of a tensor of `rank` axes, axis 1 being
 * its C channels, as a Mul or Add broadcasts it ([C, 1, 1] for NCHW), or
 * a single value: *per_channel says which. */
static gboolean
broadcasts_per_channel (const GraftRtTensor *t, int rank, gint64 C, gboolean *per_channel)
{
  if (t->rank > rank)
    return FALSE;
  *per_channel = FALSE;
  for (int d = 0; d < t->rank; d++)
    {
      int axis = rank - t->rank + d;
      if (t->dims[d] == 1)
        continue;
      if (axis != 1 || t->dims[d] != C)
        return FALSE;
      *per_channel = TRUE;
    }
  return *per_channel || t->numel == 1;
}

/* The shape `spec` (a Reshape's, allowzero as given) gives a tensor of
 * `from` dims (n_from axes) and numel values: FALSE unless it is `want`. */
static gboolean
reshape_gives (const GraftRtTensor *spec, gboolean allowzero, const gint64 *from, int n_from, gint64 numel,
               const gint64 *want, int n_want)
{
  gint64 dims[GRAFT_RT_MAX_RANK], n, known = 1;
  int infer = -1;
  if (!graft_rt_tensor_read_ints (spec, dims, GRAFT_RT_MAX_RANK, &n) || n != n_want)
    return FALSE;
  for (int d = 0; d < n; d++)
    {
      if (dims[d] == 0 && !allowzero)
        {
          if (d >= n_from)
            return FALSE;
          dims[d] = from[d];
        }
      if (dims[d] == -1 && infer < 0)
        infer = d;
      else if (dims[d] < 0)
        return FALSE;
      else
        known *= dims[d];
    }
  if (infer >= 0)
    {
      if (known == 0 || numel % known != 0)
        return FALSE;
      dims[infer] = numel / known;
    }
  return memcmp (dims, want, sizeof (gint64) * n) == 0;
}

/* graft::GroupNorm (fusion-patterns.h): declines (no output: the nodes
 * run) anything but float32 tensors, groups of whole channels, the
 * Reshape back restoring x's shape and a per-channel scale and shift. */
static gboolean
kernel_group_norm_fusion (GraftKernelContext *ctx, GError **error)
{
  const GraftGroupNormFusion *f = graft_kernel_get_pattern (ctx);
  if (f == NULL)
    return TRUE;
  GraftRtTensor *x = ctx->inputs[GRAFT_GROUP_NORM_FUSION_X];
  GraftRtTensor *grouped_shape = ctx->inputs[GRAFT_GROUP_NORM_FUSION_GROUPED_SHAPE];
  GraftRtTensor *group_scale = ctx->inputs[GRAFT_GROUP_NORM_FUSION_GROUP_SCALE];
  GraftRtTensor *group_bias = ctx->inputs[GRAFT_GROUP_NORM_FUSION_GROUP_BIAS];
  GraftRtTensor *shape = graft_kernel_input (ctx, GRAFT_GROUP_NORM_FUSION_SHAPE);
  GraftRtTensor *scale = ctx->inputs[GRAFT_GROUP_NORM_FUSION_SCALE], *bias = ctx->inputs[GRAFT_GROUP_NORM_FUSION_BIAS];
  GraftRtTensor *floats[] = { x, group_scale, group_bias, scale, bias };
  if (x == NULL || grouped_shape == NULL || group_scale == NULL || group_bias == NULL || scale == NULL ||
      bias == NULL || !all_float32 (floats, G_N_ELEMENTS (floats)) || x->rank < 2 || x->numel == 0)
    return TRUE;
  gint64 N = x->dims[0], C = x->dims[1], groups = group_scale->numel;
  if (groups <= 0 || C % groups != 0 || group_bias->numel != groups)
    return TRUE;
  gint64 grouped[3] = { N, groups, x->numel / MAX (N * groups, 1) };
  gboolean scale_per_channel, bias_per_channel;
  if (!reshape_gives (grouped_shape, graft_node_attr_int (ctx->node, "allowzero", 0), x->dims, x->rank, x->numel,
                      grouped, 3) ||
      (shape && !reshape_gives (shape, graft_node_attr_int (f->reshape_back, "allowzero", 0), grouped, 3, x->numel,
                                x->dims, x->rank)) ||
      !broadcasts_per_channel (scale, x->rank, C, &scale_per_channel) ||
      !broadcasts_per_channel (bias, x->rank, C, &bias_per_channel))
    return TRUE;
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_FLOAT32, x->rank, x->dims, error);
  if (y == NULL)
    return FALSE;
  g_autofree float *channel_scale = g_new (float, C), *channel_bias = g_new (float, C);
  for (gint64 c = 0; c < C; c++)
    {
      channel_scale[c] = graft_cf32 (scale)[scale_per_channel ? c : 0];
      channel_bias[c] = graft_cf32 (bias)[bias_per_channel ? c : 0];
    }
  GraftGroupNormJob job = { x->data, y->data, group_scale->data, group_bias->data, channel_scale, channel_bias, C, groups,
                       graft_dims_product (x->dims, 2, x->rank),
                       graft_node_attr_float (f->instance_norm, "epsilon", 1e-5), f->silu };
  graft_group_norm_f32 (ctx, &job, N);
  return TRUE;
}

/* graft::RMSNorm (fusion-patterns.h): declines (no output: the nodes
 * run) anything but a float32 x reduced over its last axis and a float32
 * scale of that axis's length ([D] or with leading 1s): then each row as
 * RMSNormalization normalises it, in the rows of vector-math.h. */
static gboolean
kernel_rms_norm_fusion (GraftKernelContext *ctx, GError **error)
{
  const GraftRmsNormFusion *f = graft_kernel_get_pattern (ctx);
  GraftRtTensor *x = ctx->inputs[GRAFT_RMS_NORM_FUSION_X], *scale = ctx->inputs[GRAFT_RMS_NORM_FUSION_SCALE];
  if (f == NULL || x == NULL || scale == NULL || x->kind != GRAFT_RT_TENSOR || scale->kind != GRAFT_RT_TENSOR ||
      x->dtype != GRAFT_DTYPE_FLOAT32 || scale->dtype != GRAFT_DTYPE_FLOAT32 || x->rank < 1 || x->numel == 0 ||
      (f->axis != -1 && f->axis != x->rank - 1))
    return TRUE;
  gint64 count = x->dims[x->rank - 1];
  if (scale->numel != count || scale->rank > x->rank || (scale->rank > 0 && scale->dims[scale->rank - 1] != count))
    return TRUE;
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_FLOAT32, x->rank, x->dims, error);
  if (y == NULL)
    return FALSE;
  gint64 groups = x->numel / count;
  g_autofree double *means = g_new (double, groups), *inv_rms = g_new (double, groups);
  normalize_float_rows (ctx, x, scale, NULL, y, groups, count, f->epsilon, TRUE, means, inv_rms);
  return TRUE;
}

static gboolean
kernel_lrn (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0];
  double alpha = graft_node_attr_float (ctx->node, "alpha", 1e-4), beta = graft_node_attr_float (ctx->node, "beta", 0.75);
  double bias = graft_node_attr_float (ctx->node, "bias", 1.0);
  gint64 size = graft_node_attr_int (ctx->node, "size", 1);
  GraftRtTensor *y = graft_kernel_output (ctx, 0, error);
  if (y == NULL)
    return FALSE;
  gint64 N = x->dims[0], C = x->dims[1], spatial = graft_dims_product (x->dims, 2, x->rank);
  gint64 lo = (size - 1) / 2, hi = size - 1 - lo;
  for (gint64 n = 0; n < N; n++)
    for (gint64 c = 0; c < C; c++)
      for (gint64 i = 0; i < spatial; i++)
        {
          double sq = 0;
          for (gint64 k = MAX (0, c - lo); k <= MIN (C - 1, c + hi); k++)
            {
              double v = graft_rt_tensor_get_f64 (x, (n * C + k) * spatial + i);
              sq += v * v;
            }
          gint64 idx = (n * C + c) * spatial + i;
          graft_rt_tensor_set_f64 (y, idx, graft_rt_tensor_get_f64 (x, idx) / pow (bias + alpha / size * sq, beta));
        }
  return TRUE;
}

static gboolean
kernel_mvn (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0];
  guint na;
  const gint64 *axes = graft_node_attr_ints (ctx->node, "axes", &na);
  gint64 default_axes[3] = { 0, 2, 3 };
  if (axes == NULL)
    {
      axes = default_axes;
      na = 3;
    }
  GraftRtTensor *y = graft_kernel_output (ctx, 0, error);
  if (y == NULL)
    return FALSE;
  gboolean mask[GRAFT_RT_MAX_RANK] = { 0 };
  for (guint i = 0; i < na; i++)
    {
      gint64 a = axes[i];
      if (!graft_normalize_axis (&a, x->rank, error))
        return FALSE;
      mask[a] = TRUE;
    }
  /* group index of each element: its coordinates on the kept axes */
  gint64 n_groups = 1;
  for (int d = 0; d < x->rank; d++)
    if (!mask[d])
      n_groups *= x->dims[d];
  g_autofree double *sum = g_new0 (double, MAX (n_groups, 1)), *sq = g_new0 (double, MAX (n_groups, 1));
  g_autofree gint64 *group_of = g_new (gint64, MAX (x->numel, 1));
  gint64 index[GRAFT_RT_MAX_RANK] = { 0 };
  for (gint64 i = 0; i < x->numel; i++)
    {
      gint64 g = 0;
      for (int d = 0; d < x->rank; d++)
        if (!mask[d])
          g = g * x->dims[d] + index[d];
      group_of[i] = g;
      double v = graft_rt_tensor_get_f64 (x, i);
      sum[g] += v;
      sq[g] += v * v;
      graft_index_next (index, x->dims, x->rank);
    }
  gint64 count = x->numel / MAX (n_groups, 1);
  for (gint64 i = 0; i < x->numel; i++)
    {
      gint64 g = group_of[i];
      double mean = sum[g] / count, var = sq[g] / count - mean * mean;
      graft_rt_tensor_set_f64 (y, i, (graft_rt_tensor_get_f64 (x, i) - mean) / (sqrt (MAX (var, 0)) + 1e-9));
    }
  return TRUE;
}

static gboolean
kernel_lp_norm (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0];
  gint64 axis = graft_node_attr_int (ctx->node, "axis", -1), p = graft_node_attr_int (ctx->node, "p", 2);
  if (!graft_normalize_axis (&axis, x->rank, error))
    return FALSE;
  GraftRtTensor *y = graft_kernel_output (ctx, 0, error);
  if (y == NULL)
    return FALSE;
  gint64 outer = graft_dims_product (x->dims, 0, axis), n = x->dims[axis];
  gint64 inner = graft_dims_product (x->dims, axis + 1, x->rank);
  for (gint64 o = 0; o < outer; o++)
    for (gint64 i = 0; i < inner; i++)
      {
        double norm = 0;
        for (gint64 k = 0; k < n; k++)
          {
            double v = graft_rt_tensor_get_f64 (x, (o * n + k) * inner + i);
            norm += p == 1 ? fabs (v) : v * v;
          }
        if (p == 2)
          norm = sqrt (norm);
        for (gint64 k = 0; k < n; k++)
          {
            gint64 idx = (o * n + k) * inner + i;
            graft_rt_tensor_set_f64 (y, idx, norm ? graft_rt_tensor_get_f64 (x, idx) / norm : 0);
          }
      }
  return TRUE;
}

#define NORM(name, since, infer, kernel, input_names, output_names) { "onnx::" name, since, 0, infer, kernel, GRAFT_OP_HALF_AS_FLOAT, input_names, output_names }

const GraftOpSchema graft_ops_norm[] = {
  /* The labels have always called these weights "mean", "var" and "scale"
   * (the ONNX schema says input_mean, input_var and, for LayerNormalization,
   * Scale): the shorter names fit the node boxes. The runtime-kernels
   * test holds every row to data/onnx-schemas.tsv, these names its only
   * renames. */
  NORM ("BatchNormalization", 1, infer_batch_norm, kernel_batch_norm, "X scale B mean var", "Y running_mean running_var"),
  NORM ("InstanceNormalization", 1, graft_infer_same_as_input, kernel_instance_norm, "input scale B", "output"),
  NORM ("LayerNormalization", 17, infer_layer_norm, kernel_layer_norm, "X scale B", "Y Mean InvStdDev"),
  NORM ("RMSNormalization", 23, infer_rms_norm, kernel_rms_norm, "X scale", "Y"),
  NORM ("GroupNormalization", 18, graft_infer_same_as_input, kernel_group_norm, "X scale bias", "Y"),
  NORM ("LRN", 1, graft_infer_same_as_input, kernel_lrn, "X", "Y"),
  NORM ("MeanVarianceNormalization", 9, graft_infer_same_as_input, kernel_mvn, "X", "Y"),
  NORM ("LpNormalization", 1, graft_infer_same_as_input, kernel_lp_norm, "input", "output"),
  { GRAFT_GROUP_NORM_FUSION_OP, 1, 0, graft_infer_same_as_input, kernel_group_norm_fusion, 0,
    "X grouped_shape group_scale group_bias shape scale bias", "Y" },
  { GRAFT_RMS_NORM_FUSION_OP, 1, 0, graft_infer_same_as_input, kernel_rms_norm_fusion, 0, "X scale", "Y" },
  { NULL }
};
