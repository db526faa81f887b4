/* Pooling: MaxPool (with Indices), AveragePool, LpPool, their Global
 * forms, MaxUnpool, and aten max_pool2d / avg_pool2d / adaptive_avg_pool2d.
 * float32 compute (other float types through the engine's conversion). */
#include <math.h>
#include <string.h>
#include "runtime/kernels/kernel-util.h"
#include "runtime/kernels/pool-separable.h"
#include "runtime/kernels/simd-target.h"
#include "runtime/kernels/vector-math.h"
#include "runtime/kernels/window.h"

typedef enum { POOL_MAX, POOL_AVG, POOL_LP } PoolKind;

static PoolKind
pool_kind (const char *op_type)
{
  if (strstr (op_type, "Max") || strstr (op_type, "max"))
    return POOL_MAX;
  if (strstr (op_type, "Lp"))
    return POOL_LP;
  return POOL_AVG;
}

static gboolean
pool_window (GraftNode *node, int ns, const gint64 *in, GraftWindow *w, GError **error)
{
  guint n;
  const gint64 *ks = graft_node_attr_ints (node, "kernel_shape", &n);
  if (ks == NULL || (int) n != ns)
    return graft_kernel_fail (error, "kernel_shape must have %d entries", ns);
  return graft_window_geometry (node, ns, in, ks, FALSE, graft_node_attr_int (node, "ceil_mode", 0), w, error);
}

static gboolean
infer_pool (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *x = graft_infer_input (ctx, 0);
  gboolean global = g_str_has_prefix (ctx->node->op_type, "Global");
  if (x->shape.rank < 3)
    {
      if (x->shape.rank >= 0)
        return graft_kernel_fail (error, "input must have rank >= 3");
      graft_infer_set_output_unknown (ctx, 0, x->dtype, -1);
      if (ctx->n_outputs > 1)
        graft_infer_set_output_unknown (ctx, 1, GRAFT_DTYPE_INT64, -1);
      return TRUE;
    }
  int ns = x->shape.rank - 2;
  GraftShape out;
  graft_shape_copy (&out, &x->shape);
  if (global)
    for (int i = 0; i < ns; i++)
      out.dims[i + 2] = graft_dim_fixed (1);
  else
    {
      gint64 in[GRAFT_WINDOW_MAX_DIMS];
      gboolean fixed = ns <= GRAFT_WINDOW_MAX_DIMS;
      for (int i = 0; fixed && i < ns; i++)
        {
          fixed = x->shape.dims[i + 2].kind == GRAFT_DIM_FIXED;
          in[i] = x->shape.dims[i + 2].value;
        }
      GraftWindow w;
      if (fixed)
        {
          if (!pool_window (ctx->node, ns, in, &w, error))
            {
              graft_shape_clear (&out);
              return FALSE;
            }
          for (int i = 0; i < ns; i++)
            out.dims[i + 2] = graft_dim_fixed (w.out[i]);
        }
      else
        for (int i = 0; i < ns; i++)
          out.dims[i + 2] = graft_dim_unknown ();
    }
  graft_infer_set_output (ctx, 0, x->dtype, &out);
  if (ctx->n_outputs > 1)
    graft_infer_set_output (ctx, 1, GRAFT_DTYPE_INT64, &out);
  graft_shape_clear (&out);
  return TRUE;
}

typedef struct {
  const GraftRtTensor *x;
  GraftRtTensor *y, *indices;
  const GraftWindow *w;
  PoolKind kind;
  gboolean count_include_pad;
  double p;
  gint64 in_size, out_size, k_size;
  gboolean column_major;  /* storage_order = 1 */
} PoolJob;

static void
pool_plane (gint64 plane, gpointer data)
{
  PoolJob *job = data;
  const GraftWindow *w = job->w;
  const float *x = (const float *) job->x->data + plane * job->in_size;
  float *y = (float *) job->y->data + plane * job->out_size;
  gint64 *ind = job->indices ? (gint64 *) job->indices->data + plane * job->out_size : NULL;
  gint64 oidx[GRAFT_WINDOW_MAX_DIMS] = { 0 };

  /* 2-D max pooling without dilation: the common case, kept tight */
  if (w->n == 2 && job->kind == POOL_MAX && ind == NULL && w->dilation[0] == 1 && w->dilation[1] == 1)
    {
      gint64 H = w->in[0], W = w->in[1];
      for (gint64 oh = 0; oh < w->out[0]; oh++)
        for (gint64 ow = 0; ow < w->out[1]; ow++)
          {
            gint64 h0 = oh * w->stride[0] - w->pad_begin[0], w0 = ow * w->stride[1] - w->pad_begin[1];
            gint64 h1 = MIN (h0 + w->kernel[0], H), w1 = MIN (w0 + w->kernel[1], W);
            float m = -INFINITY;
            for (gint64 h = MAX (h0, 0); h < h1; h++)
              for (gint64 ww = MAX (w0, 0); ww < w1; ww++)
                m = x[h * W + ww] > m ? x[h * W + ww] : m;
            y[oh * w->out[1] + ow] = m;
          }
      return;
    }

  for (gint64 o = 0; o < job->out_size; o++)
    {
      double acc = job->kind == POOL_MAX ? -INFINITY : 0;
      gint64 best = -1, count = 0;
      gint64 kidx[GRAFT_WINDOW_MAX_DIMS] = { 0 };
      for (gint64 k = 0; k < job->k_size; k++)
        {
          gint64 off = 0;
          gboolean inside = TRUE, in_padded = TRUE;
          for (int d = 0; d < w->n; d++)
            {
              gint64 i = oidx[d] * w->stride[d] + kidx[d] * w->dilation[d] - w->pad_begin[d];
              if (i < 0 || i >= w->in[d])
                {
                  inside = FALSE;
                  if (i < -w->pad_begin[d] || i >= w->in[d] + w->pad_end[d])
                    in_padded = FALSE;
                }
              off = off * w->in[d] + i;
            }
          if (inside)
            {
              double v = x[off];
              if (job->kind == POOL_MAX)
                {
                  if (v > acc || best < 0)
                    {
                      acc = v;
                      best = off;
                    }
                }
              else if (job->kind == POOL_AVG)
                acc += v;
              else
                acc += pow (fabs (v), job->p);
              count++;
            }
          else if (in_padded && job->count_include_pad)
            count++;
          graft_index_next (kidx, w->kernel, w->n);
        }
      if (job->kind == POOL_AVG)
        acc = count ? acc / count : 0;
      else if (job->kind == POOL_LP)
        acc = pow (acc, 1.0 / job->p);
      y[o] = acc;
      if (ind)
        {
          gint64 flat = best;
          if (job->column_major && best >= 0)
            {
              /* storage_order=1: index in column-major order of the spatial dims */
              gint64 rem = best, cm = 0, mul = 1, coords[GRAFT_WINDOW_MAX_DIMS];
              for (int d = w->n - 1; d >= 0; d--)
                {
                  coords[d] = rem % w->in[d];
                  rem /= w->in[d];
                }
              for (int d = 0; d < w->n; d++)
                {
                  cm += coords[d] * mul;
                  mul *= w->in[d];
                }
              flat = cm;
            }
          ind[o] = flat + plane * job->in_size;
        }
      graft_index_next (oidx, w->out, w->n);
    }
}

/* 8-bit 2-D max pooling without dilation or indices, on the bytes
 * themselves (no float round trip): per output row, the max over the
 * window's rows into one row padded with the type's lowest value, then
 * the max over each run of KW columns of it (both loops vectorise), then
 * every stride-th of those. ONNX keeps pads below the kernel, so no
 * window is only padding and the lowest value never wins. */
typedef struct {
  const GraftRtTensor *x;
  GraftRtTensor *y;
  const GraftWindow *w;
} MaxPool8Job;

#define DEFINE_MAX_POOL_8BIT(name, type, lowest)                                               \
  static GRAFT_HOT_LOOP void                                                                   \
  name (const type *x, type *y, const GraftWindow *w, type *buffer)                            \
  {                                                                                            \
    gint64 H = w->in[0], W = w->in[1], OW = w->out[1], KW = w->kernel[1];                      \
    gint64 sw = w->stride[1], left = w->pad_begin[1];                                          \
    gint64 span = (OW - 1) * sw + KW, starts = (OW - 1) * sw + 1;                              \
    gint64 inside = MIN (W, span - left);                                                      \
    type *padded = buffer, *row = buffer + left, *colmax = buffer + span;                      \
    for (gint64 i = 0; i < span; i++)                                                          \
      padded[i] = lowest;                                                                      \
    for (gint64 oh = 0; oh < w->out[0]; oh++, y += OW)                                         \
      {                                                                                        \
        gint64 h0 = oh * w->stride[0] - w->pad_begin[0];                                       \
        gint64 h1 = MIN (h0 + w->kernel[0], H);                                                \
        h0 = MAX (h0, 0);                                                                      \
        memcpy (row, x + h0 * W, sizeof (type) * inside);                                      \
        for (gint64 h = h0 + 1; h < h1; h++)                                                   \
          for (gint64 i = 0; i < inside; i++)                                                  \
            row[i] = MAX (row[i], x[h * W + i]);                                               \
        memcpy (colmax, padded, sizeof (type) * starts);                                       \
        for (gint64 kj = 1; kj < KW; kj++)                                                     \
          for (gint64 i = 0; i < starts; i++)                                                  \
            colmax[i] = MAX (colmax[i], padded[i + kj]);                                       \
        if (sw == 1)                                                                           \
          memcpy (y, colmax, sizeof (type) * OW);                                              \
        else                                                                                   \
          for (gint64 ow = 0; ow < OW; ow++)                                                   \
            y[ow] = colmax[ow * sw];                                                           \
      }                                                                                        \
  }

DEFINE_MAX_POOL_8BIT (max_pool_u8, guint8, 0)
DEFINE_MAX_POOL_8BIT (max_pool_s8, gint8, G_MININT8)

static void
max_pool_8bit_plane (gint64 plane, gpointer data)
{
  const MaxPool8Job *job = data;
  const GraftWindow *w = job->w;
  gint64 in_size = w->in[0] * w->in[1], out_size = w->out[0] * w->out[1];
  g_autofree guint8 *buffer = g_malloc (2 * ((w->out[1] - 1) * w->stride[1] + w->kernel[1]));
  if (job->x->dtype == GRAFT_DTYPE_UINT8)
    max_pool_u8 ((const guint8 *) job->x->data + plane * in_size, (guint8 *) job->y->data + plane * out_size, w,
                 buffer);
  else
    max_pool_s8 ((const gint8 *) job->x->data + plane * in_size, (gint8 *) job->y->data + plane * out_size, w,
                 (gint8 *) buffer);
}

static gboolean
max_pool_8bit_fits (GraftKernelContext *ctx, const GraftRtTensor *x, const GraftWindow *w)
{
  if ((x->dtype != GRAFT_DTYPE_UINT8 && x->dtype != GRAFT_DTYPE_INT8) || w->n != 2 || w->dilation[0] != 1 ||
      w->dilation[1] != 1 || graft_kernel_wants_output (ctx, 1))
    return FALSE;
  for (int d = 0; d < 2; d++)
    if (w->pad_begin[d] >= w->kernel[d] || w->out[d] < 1 || w->in[d] < 1 ||
        (w->out[d] - 1) * w->stride[d] - w->pad_begin[d] >= w->in[d])
      return FALSE;
  return TRUE;
}

static gboolean
max_pool_8bit (GraftKernelContext *ctx, const GraftRtTensor *x, const GraftWindow *w, GError **error)
{
  gint64 dims[4] = { x->dims[0], x->dims[1], w->out[0], w->out[1] };
  MaxPool8Job job = { x, graft_kernel_alloc_output (ctx, 0, x->dtype, 4, dims, error), w };
  if (job.y == NULL)
    return FALSE;
  graft_kernel_parallel_for (ctx, dims[0] * dims[1], max_pool_8bit_plane, &job);
  return TRUE;
}

static gboolean
kernel_pool (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x0 = graft_kernel_input (ctx, 0);
  g_autoptr(GraftRtTensor) xf = NULL;
  GraftRtTensor *x = x0;
  PoolKind kind = pool_kind (ctx->node->op_type);
  gboolean global = g_str_has_prefix (ctx->node->op_type, "Global");
  int ns = x->rank - 2;
  GraftWindow w;

  if (ns < 1 || ns > GRAFT_WINDOW_MAX_DIMS)
    return graft_kernel_fail (error, "input rank %d is not supported", x->rank);
  if (kind == POOL_MAX && !global && ns == 2 && (x->dtype == GRAFT_DTYPE_UINT8 || x->dtype == GRAFT_DTYPE_INT8) &&
      pool_window (ctx->node, ns, x->dims + 2, &w, NULL) && max_pool_8bit_fits (ctx, x, &w))
    return max_pool_8bit (ctx, x, &w, error);
  if (x->dtype != GRAFT_DTYPE_FLOAT32)
    {
      if (kind != POOL_MAX || !graft_dtype_is_integer (x->dtype))
        {
          xf = graft_rt_tensor_cast (x, GRAFT_DTYPE_FLOAT32, error);
          if (xf == NULL)
            return FALSE;
          x = xf;
        }
      else
        {
          /* 8/16-bit integers are exact in float32 */
          xf = graft_rt_tensor_cast (x, GRAFT_DTYPE_FLOAT32, error);
          if (xf == NULL)
            return FALSE;
          x = xf;
        }
    }
  if (global)
    {
      memset (&w, 0, sizeof w);
      w.n = ns;
      for (int i = 0; i < ns; i++)
        {
          w.in[i] = w.kernel[i] = x->dims[i + 2];
          w.out[i] = w.stride[i] = w.dilation[i] = 1;
        }
    }
  else if (!pool_window (ctx->node, ns, x->dims + 2, &w, error))
    return FALSE;

  gint64 dims[GRAFT_RT_MAX_RANK] = { x->dims[0], x->dims[1] };
  PoolJob job = { x, NULL, NULL, &w, kind, graft_node_attr_int (ctx->node, "count_include_pad", 0),
                  graft_node_attr_int (ctx->node, "p", 2), 1, 1, 1,
                  graft_node_attr_int (ctx->node, "storage_order", 0) };
  for (int i = 0; i < ns; i++)
    {
      dims[i + 2] = w.out[i];
      job.in_size *= w.in[i];
      job.out_size *= w.out[i];
      job.k_size *= w.kernel[i];
    }
  /* float32 results go straight into the output, from the run's buffer
   * pool; others are cast into it at the end */
  gboolean direct = x0->dtype == GRAFT_DTYPE_FLOAT32;
  job.y = direct ? graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_FLOAT32, x->rank, dims, error)
                 : graft_rt_tensor_new (GRAFT_DTYPE_FLOAT32, x->rank, dims, error);
  if (job.y == NULL)
    return FALSE;
  if (graft_kernel_wants_output (ctx, 1))
    {
      job.indices = graft_kernel_alloc_output (ctx, 1, GRAFT_DTYPE_INT64, x->rank, dims, error);
      if (job.indices == NULL)
        {
          if (!direct)
            graft_rt_tensor_unref (job.y);
          return FALSE;
        }
    }
  if (global && kind == POOL_AVG)
    graft_vm_means (x->data, job.y->data, dims[0] * dims[1], job.in_size);
  else if (kind == POOL_MAX && !global && job.indices == NULL && graft_pool2d_separable_supports (&w))
    graft_max_pool2d (ctx, x->data, job.y->data, dims[0] * dims[1], &w);
  else if (kind == POOL_AVG && !global && graft_pool2d_separable_supports (&w))
    graft_avg_pool2d (ctx, x->data, job.y->data, dims[0] * dims[1], &w, job.count_include_pad);
  else
    graft_kernel_parallel_for (ctx, dims[0] * dims[1], pool_plane, &job);

  if (direct)
    return TRUE;
  GraftRtTensor *cast = graft_rt_tensor_cast (job.y, x0->dtype, error);
  graft_rt_tensor_unref (job.y);
  if (cast == NULL)
    return FALSE;
  graft_kernel_set_output (ctx, 0, cast);
  return TRUE;
}

/* ---- MaxUnpool ---- */

static gboolean
infer_max_unpool (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *x = graft_infer_input (ctx, 0);
  gint64 n;
  g_autofree gint64 *shape = graft_infer_input_ints (ctx, 2, &n);
  if (shape)
    {
      graft_infer_set_output_fixed (ctx, 0, x->dtype, n, shape);
      return TRUE;
    }
  if (graft_infer_input (ctx, 2) || x->shape.rank < 3 || !graft_shape_is_fully_fixed (&x->shape))
    {
      graft_infer_set_output_unknown (ctx, 0, x->dtype, x->shape.rank);
      return TRUE;
    }
  guint nk, nst, np;
  const gint64 *ks = graft_node_attr_ints (ctx->node, "kernel_shape", &nk);
  const gint64 *st = graft_node_attr_ints (ctx->node, "strides", &nst);
  const gint64 *pads = graft_node_attr_ints (ctx->node, "pads", &np);
  int ns = x->shape.rank - 2;
  gint64 dims[GRAFT_RT_MAX_RANK];
  dims[0] = x->shape.dims[0].value;
  dims[1] = x->shape.dims[1].value;
  for (int i = 0; i < ns; i++)
    {
      gint64 s = st && (int) nst == ns ? st[i] : 1;
      gint64 k = ks && (int) nk == ns ? ks[i] : 1;
      gint64 p = pads && (int) np == 2 * ns ? pads[i] + pads[i + ns] : 0;
      dims[i + 2] = (x->shape.dims[i + 2].value - 1) * s + k - p;
    }
  graft_infer_set_output_fixed (ctx, 0, x->dtype, x->shape.rank, dims);
  return TRUE;
}

static gboolean
kernel_max_unpool (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0], *ind = ctx->inputs[1];
  GraftRtTensor *y = graft_kernel_output (ctx, 0, error);
  if (y == NULL)
    return FALSE;
  memset (y->data, 0, y->nbytes);
  /* MaxPool's indices are flat positions in the (N, C, spatial...) tensor
   * that was pooled, whose spatial size follows from the kernel, strides and
   * pads; with a different output_shape each position keeps its coordinates
   * (the suite's reference places them so). */
  int ns = x->rank - 2;
  gint64 pooled[GRAFT_RT_MAX_RANK];
  guint nk = 0, nst = 0, np = 0;
  const gint64 *ks = graft_node_attr_ints (ctx->node, "kernel_shape", &nk);
  const gint64 *st = graft_node_attr_ints (ctx->node, "strides", &nst);
  const gint64 *pads = graft_node_attr_ints (ctx->node, "pads", &np);
  gboolean remap = FALSE;
  if (ns < 1 || y->rank != x->rank)
    return graft_kernel_fail (error, "input rank %d and output rank %d do not fit", x->rank, y->rank);
  pooled[0] = y->dims[0];
  pooled[1] = y->dims[1];
  for (int d = 0; d < ns; d++)
    {
      gint64 k = ks && (int) nk == ns ? ks[d] : 1, s = st && (int) nst == ns ? st[d] : 1;
      gint64 p = pads && (int) np == 2 * ns ? pads[d] + pads[d + ns] : 0;
      pooled[d + 2] = (x->dims[d + 2] - 1) * s + k - p;
      remap |= pooled[d + 2] != y->dims[d + 2] && ks && (int) nk == ns;
    }
  for (gint64 i = 0; i < x->numel; i++)
    {
      gint64 idx = graft_rt_tensor_get_i64 (ind, i);
      gint64 target = idx;
      if (remap && idx >= 0)
        {
          gint64 rest = idx, stride = 1;
          target = 0;
          for (int d = x->rank - 1; d >= 0; d--)
            {
              gint64 c = rest % pooled[d];
              rest /= pooled[d];
              if (c >= y->dims[d])
                return graft_kernel_fail (error, "index %" G_GINT64_FORMAT " is outside the output", idx);
              target += c * stride;
              stride *= y->dims[d];
            }
          if (rest != 0)
            target = -1;
        }
      if (target < 0 || target >= y->numel)
        return graft_kernel_fail (error, "index %" G_GINT64_FORMAT " is outside the output", idx);
      graft_copy_element (y, target, x, i);
    }
  return TRUE;
}

#define POOL(name, input_names, output_names) { "onnx::" name, 1, 0, infer_pool, kernel_pool, GRAFT_OP_HALF_AS_FLOAT, input_names, output_names }

const GraftOpSchema graft_ops_pool[] = {
  POOL ("MaxPool", "X", "Y Indices"), POOL ("AveragePool", "X", "Y"), POOL ("LpPool", "X", "Y"),
  POOL ("GlobalMaxPool", "X", "Y"), POOL ("GlobalAveragePool", "X", "Y"), POOL ("GlobalLpPool", "X", "Y"),
  { "onnx::MaxUnpool", 9, 0, infer_max_unpool, kernel_max_unpool, 0, "X I output_shape", "output" },
  { NULL }
};
