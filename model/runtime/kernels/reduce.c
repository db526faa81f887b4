/* Reductions: Reduce{Sum,Mean,Max,Min,Prod,L1,L2,LogSum,LogSumExp,SumSquare},
 * ArgMax/ArgMin, Softmax/LogSoftmax/Hardmax, CumSum, CumProd. */
#include <math.h>
#include <string.h>
#include "runtime/kernels/aten-args.h"
#include "runtime/kernels/vector-math.h"

typedef enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD, R_L1, R_L2, R_LOG_SUM, R_LOG_SUM_EXP, R_SUM_SQUARE } ReduceKind;

static ReduceKind
reduce_kind (const char *op_type)
{
  static const char *names[] = { "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                                 "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare" };
  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    if (strcmp (op_type, names[i]) == 0)
      return i;
  if (strcmp (op_type, "mean") == 0)
    return R_MEAN;
  return R_SUM;
}

/* Axes from the attribute (older opsets) or the second input (ReduceSum
 * 13+, all reductions 18+). *all is TRUE when every axis is reduced. */
static gboolean
reduce_axes (GraftNode *node, GraftInferValue *axes_input, gboolean axes_from_input, int rank,
             gboolean *mask, gboolean *known, GError **error)
{
  gint64 n = 0;
  g_autofree gint64 *axes = NULL;
  gboolean noop = graft_node_attr_int (node, "noop_with_empty_axes", 0);

  *known = TRUE;
  if (axes_from_input)
    {
      if (axes_input && axes_input->data)
        {
          n = axes_input->data->numel;
          axes = g_new (gint64, MAX (n, 1));
          for (gint64 i = 0; i < n; i++)
            axes[i] = graft_rt_tensor_get_i64 (axes_input->data, i);
        }
      else if (axes_input)
        {
          *known = FALSE;
          return TRUE;
        }
    }
  else
    {
      guint na;
      const gint64 *a = graft_node_attr_ints (node, "axes", &na);
      n = na;
      axes = g_memdup2 (a, sizeof (gint64) * MAX (na, 1));
    }
  for (int d = 0; d < rank; d++)
    mask[d] = n == 0 && !noop;
  for (gint64 i = 0; i < n; i++)
    {
      gint64 a = axes[i];
      if (!graft_normalize_axis (&a, rank, error))
        return FALSE;
      mask[a] = TRUE;
    }
  return TRUE;
}

static gboolean
axes_from_input (GraftNode *node, gint64 opset)
{
  if (strcmp (node->op_type, "ReduceSum") == 0)
    return opset >= 13;
  return opset >= 18;
}

static gboolean
infer_reduce (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *in = graft_infer_input (ctx, 0);
  gboolean keepdims = graft_node_attr_int (ctx->node, "keepdims", 1);
  gboolean mask[GRAFT_RT_MAX_RANK], known;

  if (in->shape.rank < 0 || in->shape.rank > GRAFT_RT_MAX_RANK)
    {
      graft_infer_set_output_unknown (ctx, 0, in->dtype, -1);
      return TRUE;
    }
  if (!reduce_axes (ctx->node, graft_infer_input (ctx, 1), axes_from_input (ctx->node, ctx->opset),
                    in->shape.rank, mask, &known, error))
    return FALSE;
  if (!known)
    {
      graft_infer_set_output_unknown (ctx, 0, in->dtype, keepdims ? in->shape.rank : -1);
      return TRUE;
    }
  GraftShape out;
  graft_shape_init (&out, 0);
  out.dims = g_new0 (GraftDim, MAX (in->shape.rank, 1));
  for (int d = 0; d < in->shape.rank; d++)
    if (!mask[d])
      out.dims[out.rank++] = in->shape.dims[d];
    else if (keepdims)
      out.dims[out.rank++] = graft_dim_fixed (1);
  graft_infer_set_output (ctx, 0, in->dtype, &out);
  graft_shape_clear (&out);
  return TRUE;
}

/* Splits a reduction into (outer, reduced, inner) loops after moving the
 * reduced axes: done by iterating over every input element once and
 * accumulating into its output position. */
/* a with v taken in (top: the largest value of v's output, for LogSumExp) */
static inline double
reduce_float (ReduceKind kind, double a, double v, double top)
{
  switch (kind)
    {
    case R_SUM: case R_MEAN: case R_LOG_SUM: return a + v;
    case R_MAX: return (isnan (v) || v > a) ? v : a;
    case R_MIN: return (isnan (v) || v < a) ? v : a;
    case R_PROD: return a * v;
    case R_L1: return a + fabs (v);
    case R_L2: case R_SUM_SQUARE: return a + v * v;
    case R_LOG_SUM_EXP: return a + exp (v - top);
    }
  return a;
}

/* mask reduces a run of innermost axes and nothing else (or nothing) */
static gboolean
reduces_trailing_axes (const gboolean *mask, int rank)
{
  int d = rank;
  while (d > 0 && mask[d - 1])
    d--;
  while (d > 0 && !mask[d - 1])
    d--;
  return d == 0;
}

void
graft_f32_add_row_sums (const float *x, gint64 rows, gint64 count, double *acc)
{
  for (gint64 i = 0; i < rows; i++)
    {
      const float *row = x + i * count;
      double a = acc[i];
      for (gint64 j = 0; j < count; j++)
        a += row[j];
      acc[i] = a;
    }
}

/* Float32 with the reduced axes innermost: output i is row i of count
 * contiguous floats, taken in the same order with the same double
 * arithmetic as the indexed loop of kernel_reduce. A CNN's global average
 * pool written as ReduceMean over H and W (torch.export's) took 0.6 ms
 * through that loop for 2×1280×7×7, a hundred times what it reads. */
static void
reduce_rows_f32 (ReduceKind kind, const float *src, gint64 n_out, gint64 count, double *acc, double *lse_max)
{
  for (gint64 i = 0; i < n_out; i++)
    {
      const float *row = src + i * count;
      double top = -INFINITY;
      if (kind == R_SUM || kind == R_MEAN)
        {
          /* the common case without the switch in the loop */
          graft_f32_add_row_sums (row, 1, count, acc + i);
          continue;
        }
      for (gint64 j = 0; kind == R_LOG_SUM_EXP && j < count; j++)
        top = row[j] > top ? row[j] : top;
      for (gint64 j = 0; j < count; j++)
        acc[i] = reduce_float (kind, acc[i], row[j], top);
      if (lse_max)
        lse_max[i] = top;
    }
}

static gboolean
kernel_reduce (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *in = graft_kernel_input (ctx, 0);
  ReduceKind kind = reduce_kind (ctx->node->op_type);
  gboolean mask[GRAFT_RT_MAX_RANK], known;
  GraftInferValue axes_info = { 0 };
  GraftRtTensor *axes_t = graft_kernel_input (ctx, 1);

  axes_info.present = axes_t != NULL;
  axes_info.data = axes_t;
  if (!reduce_axes (ctx->node, axes_t ? &axes_info : NULL, axes_from_input (ctx->node, ctx->opset),
                    in->rank, mask, &known, error))
    return FALSE;
  GraftRtTensor *out = graft_kernel_output (ctx, 0, error);
  if (out == NULL)
    return FALSE;

  /* out index strides over the input's axes: 0 on reduced axes */
  gint64 out_strides[GRAFT_RT_MAX_RANK], index[GRAFT_RT_MAX_RANK] = { 0 };
  gint64 s = 1, count = 1;
  for (int d = in->rank - 1; d >= 0; d--)
    {
      out_strides[d] = mask[d] ? 0 : s;
      if (!mask[d])
        s *= in->dims[d];
      else
        count *= in->dims[d];
    }
  gint64 n_out = out->numel;
  if (kind == R_MEAN && in->dtype == GRAFT_DTYPE_FLOAT32 && out->dtype == GRAFT_DTYPE_FLOAT32 && count > 0 &&
      reduces_trailing_axes (mask, in->rank))
    {
      /* torch.export's global average pool, vectorised as GlobalAveragePool's */
      graft_vm_means (in->data, out->data, n_out, count);
      return TRUE;
    }
  g_autofree double *acc = g_new (double, MAX (n_out, 1));
  double init = kind == R_MAX ? -INFINITY : kind == R_MIN ? INFINITY : kind == R_PROD ? 1 : 0;
  gboolean integer = graft_dtype_is_integer (in->dtype) || in->dtype == GRAFT_DTYPE_BOOL;
  g_autofree gint64 *iacc = integer ? g_new (gint64, MAX (n_out, 1)) : NULL;
  /* Over an empty set, the identities: bool's range is {0, 1}. */
  gint64 int_max_init = in->dtype == GRAFT_DTYPE_BOOL ? 0 : G_MININT64;
  gint64 int_min_init = in->dtype == GRAFT_DTYPE_BOOL ? 1 : G_MAXINT64;
  for (gint64 i = 0; i < n_out; i++)
    {
      acc[i] = init;
      if (iacc)
        iacc[i] = kind == R_MAX ? int_max_init : kind == R_MIN ? int_min_init : kind == R_PROD ? 1 : 0;
    }
  double *max_for_lse = NULL;
  g_autofree double *lse_max = kind == R_LOG_SUM_EXP ? g_new (double, MAX (n_out, 1)) : NULL;
  gboolean rows = in->dtype == GRAFT_DTYPE_FLOAT32 && reduces_trailing_axes (mask, in->rank);
  if (rows)
    {
      reduce_rows_f32 (kind, in->data, n_out, count, acc, lse_max);
      max_for_lse = lse_max;
    }
  else if (kind == R_LOG_SUM_EXP)
    {
      for (gint64 i = 0; i < n_out; i++)
        lse_max[i] = -INFINITY;
      gint64 off = 0;
      for (gint64 i = 0; i < in->numel; i++)
        {
          double v = graft_rt_tensor_get_f64 (in, i);
          if (v > lse_max[off])
            lse_max[off] = v;
          for (int d = in->rank - 1; d >= 0; d--)
            {
              index[d]++;
              off += out_strides[d];
              if (index[d] < in->dims[d])
                break;
              off -= out_strides[d] * index[d];
              index[d] = 0;
            }
        }
      memset (index, 0, sizeof index);
      max_for_lse = lse_max;
    }

  gint64 off = 0;
  for (gint64 i = 0; !rows && i < in->numel; i++)
    {
      if (iacc && (kind == R_SUM || kind == R_MAX || kind == R_MIN || kind == R_PROD || kind == R_SUM_SQUARE || kind == R_L1))
        {
          gint64 v = graft_rt_tensor_get_i64 (in, i);
          gint64 *a = &iacc[off];
          switch (kind)
            {
            case R_SUM: *a = (gint64) ((guint64) *a + (guint64) v); break;
            case R_MAX: *a = MAX (*a, v); break;
            case R_MIN: *a = MIN (*a, v); break;
            case R_PROD: *a = (gint64) ((guint64) *a * (guint64) v); break;
            case R_SUM_SQUARE: *a += v * v; break;
            case R_L1: *a += v < 0 ? -v : v; break;
            default: break;
            }
        }
      else
        {
          acc[off] = reduce_float (kind, acc[off], graft_rt_tensor_get_f64 (in, i), max_for_lse ? max_for_lse[off] : 0);
        }
      for (int d = in->rank - 1; d >= 0; d--)
        {
          index[d]++;
          off += out_strides[d];
          if (index[d] < in->dims[d])
            break;
          off -= out_strides[d] * index[d];
          index[d] = 0;
        }
    }
  for (gint64 i = 0; i < n_out; i++)
    {
      if (iacc && (kind == R_SUM || kind == R_MAX || kind == R_MIN || kind == R_PROD || kind == R_SUM_SQUARE || kind == R_L1))
        {
          graft_rt_tensor_set_i64 (out, i, iacc[i]);
          continue;
        }
      double v = acc[i];
      switch (kind)
        {
        case R_MEAN: v = count ? v / count : NAN; break;
        case R_L2: v = sqrt (v); break;
        case R_LOG_SUM: v = log (v); break;
        case R_LOG_SUM_EXP: v = count ? log (v) + max_for_lse[i] : -INFINITY; break;
        default: break;
        }
      if (integer && kind == R_MEAN)
        graft_rt_tensor_set_i64 (out, i, (gint64) v);
      else
        graft_rt_tensor_set_f64 (out, i, v);
    }
  return TRUE;
}

/* ---- ArgMax, ArgMin ---- */

static gboolean
infer_arg (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *in = graft_infer_input (ctx, 0);
  gint64 axis = graft_node_attr_int (ctx->node, "axis", 0);
  gboolean keepdims = graft_node_attr_int (ctx->node, "keepdims", 1);
  if (in->shape.rank < 0)
    {
      graft_infer_set_output_unknown (ctx, 0, GRAFT_DTYPE_INT64, -1);
      return TRUE;
    }
  if (!graft_normalize_axis (&axis, in->shape.rank, error))
    return FALSE;
  GraftShape out;
  graft_shape_init (&out, 0);
  out.dims = g_new0 (GraftDim, MAX (in->shape.rank, 1));
  for (int d = 0; d < in->shape.rank; d++)
    if (d != axis)
      out.dims[out.rank++] = in->shape.dims[d];
    else if (keepdims)
      out.dims[out.rank++] = graft_dim_fixed (1);
  graft_infer_set_output (ctx, 0, GRAFT_DTYPE_INT64, &out);
  graft_shape_clear (&out);
  return TRUE;
}

static gboolean
kernel_arg (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *in = graft_kernel_input (ctx, 0);
  gint64 axis = graft_node_attr_int (ctx->node, "axis", 0);
  gboolean last = graft_node_attr_int (ctx->node, "select_last_index", 0);
  gboolean is_max = strcmp (ctx->node->op_type, "ArgMax") == 0;
  if (!graft_normalize_axis (&axis, in->rank, error))
    return FALSE;
  GraftRtTensor *out = graft_kernel_output (ctx, 0, error);
  if (out == NULL)
    return FALSE;
  gint64 outer = graft_dims_product (in->dims, 0, axis), n = in->dims[axis];
  gint64 inner = graft_dims_product (in->dims, axis + 1, in->rank);
  for (gint64 o = 0; o < outer; o++)
    for (gint64 i = 0; i < inner; i++)
      {
        gint64 best = 0;
        double bv = graft_rt_tensor_get_f64 (in, o * n * inner + i);
        for (gint64 k = 1; k < n; k++)
          {
            double v = graft_rt_tensor_get_f64 (in, (o * n + k) * inner + i);
            gboolean better = is_max ? (last ? v >= bv : v > bv) : (last ? v <= bv : v < bv);
            if (better)
              {
                bv = v;
                best = k;
              }
          }
        ((gint64 *) out->data)[o * inner + i] = best;
      }
  return TRUE;
}

/* ---- Softmax, LogSoftmax, Hardmax ---- */

static gboolean
kernel_softmax (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *in = graft_kernel_input (ctx, 0);
  const char *op = ctx->node->op_type;
  gboolean log_mode = strcmp (op, "LogSoftmax") == 0 || strcmp (op, "log_softmax") == 0;
  gboolean hard = strcmp (op, "Hardmax") == 0;
  gboolean old = ctx->opset < 13 && g_str_has_prefix (ctx->node->op, "onnx::");
  gint64 axis = graft_node_attr_int (ctx->node, old ? "axis" : "axis", old ? 1 : -1);
  if (!g_str_has_prefix (ctx->node->op, "onnx::"))
    {
      /* aten::softmax(self, dim, dtype): dim is usually a constant ("arg1") */
      GraftAtenArg args[2];
      graft_aten_args (ctx, NULL, 2, args);
      axis = graft_arg_int (&args[1], -1);
    }
  if (!graft_normalize_axis (&axis, in->rank, error))
    return FALSE;
  GraftRtTensor *out = graft_kernel_output (ctx, 0, error);
  if (out == NULL)
    return FALSE;
  /* Before opset 13 the input is coerced to 2-D at axis; since 13 the op runs along one axis. */
  gint64 outer, n, inner;
  if (old)
    {
      outer = graft_dims_product (in->dims, 0, axis);
      n = graft_dims_product (in->dims, axis, in->rank);
      inner = 1;
    }
  else
    {
      outer = graft_dims_product (in->dims, 0, axis);
      n = in->dims[axis];
      inner = graft_dims_product (in->dims, axis + 1, in->rank);
    }
  if (inner == 1 && !hard && in->dtype == GRAFT_DTYPE_FLOAT32 && out->dtype == GRAFT_DTYPE_FLOAT32 && in != out)
    {
      graft_vm_softmax_rows (in->data, out->data, outer, n, log_mode);
      return TRUE;
    }
  if (inner > 1 && !hard && in->dtype == GRAFT_DTYPE_FLOAT32 && out->dtype == GRAFT_DTYPE_FLOAT32 &&
      in->data != out->data)
    {
      graft_vm_softmax_inner (in->data, out->data, outer, n, inner, log_mode);
      return TRUE;
    }
  for (gint64 o = 0; o < outer; o++)
    for (gint64 i = 0; i < inner; i++)
      {
        gint64 base = o * n * inner + i;
        double mx = -INFINITY;
        gint64 arg = 0;
        for (gint64 k = 0; k < n; k++)
          {
            double v = graft_rt_tensor_get_f64 (in, base + k * inner);
            if (v > mx)
              mx = v, arg = k;
          }
        if (hard)
          {
            for (gint64 k = 0; k < n; k++)
              graft_rt_tensor_set_f64 (out, base + k * inner, k == arg);
            continue;
          }
        double sum = 0;
        for (gint64 k = 0; k < n; k++)
          sum += exp (graft_rt_tensor_get_f64 (in, base + k * inner) - mx);
        for (gint64 k = 0; k < n; k++)
          {
            double v = graft_rt_tensor_get_f64 (in, base + k * inner) - mx;
            graft_rt_tensor_set_f64 (out, base + k * inner, log_mode ? v - log (sum) : exp (v) / sum);
          }
      }
  return TRUE;
}

/* ---- CumSum, CumProd ---- */

static gboolean
kernel_cumulative (GraftKernelContext *ctx, GError **error)
{
  gboolean product = strcmp (ctx->node->op_type, "CumProd") == 0;
  GraftRtTensor *in = graft_kernel_input (ctx, 0);
  gint64 axis = graft_rt_tensor_get_i64 (graft_kernel_input (ctx, 1), 0);
  gboolean exclusive = graft_node_attr_int (ctx->node, "exclusive", 0);
  gboolean reverse = graft_node_attr_int (ctx->node, "reverse", 0);
  if (!graft_normalize_axis (&axis, in->rank, error))
    return FALSE;
  GraftRtTensor *out = graft_kernel_output (ctx, 0, error);
  if (out == NULL)
    return FALSE;
  gint64 outer = graft_dims_product (in->dims, 0, axis), n = in->dims[axis];
  gint64 inner = graft_dims_product (in->dims, axis + 1, in->rank);
  gboolean integer = graft_dtype_is_integer (in->dtype);
  for (gint64 o = 0; o < outer; o++)
    for (gint64 i = 0; i < inner; i++)
      {
        double acc = product ? 1 : 0;
        gint64 iacc = product ? 1 : 0;
        for (gint64 step = 0; step < n; step++)
          {
            gint64 k = reverse ? n - 1 - step : step;
            gint64 idx = (o * n + k) * inner + i;
            if (integer)
              {
                gint64 v = graft_rt_tensor_get_i64 (in, idx);
                if (exclusive)
                  graft_rt_tensor_set_i64 (out, idx, iacc);
                iacc = product ? (gint64) ((guint64) iacc * (guint64) v) : (gint64) ((guint64) iacc + (guint64) v);
                if (!exclusive)
                  graft_rt_tensor_set_i64 (out, idx, iacc);
              }
            else
              {
                double v = graft_rt_tensor_get_f64 (in, idx);
                if (exclusive)
                  graft_rt_tensor_set_f64 (out, idx, acc);
                acc = product ? acc * v : acc + v;
                if (!exclusive)
                  graft_rt_tensor_set_f64 (out, idx, acc);
              }
          }
      }
  return TRUE;
}

#define REDUCE(name, input_names, output_names) { "onnx::" name, 1, 0, infer_reduce, kernel_reduce, GRAFT_OP_HALF_AS_FLOAT, input_names, output_names }

const GraftOpSchema graft_ops_reduce[] = {
  REDUCE ("ReduceSum", "data axes", "reduced"), REDUCE ("ReduceMean", "data axes", "reduced"), REDUCE ("ReduceMax", "data axes", "reduced"), REDUCE ("ReduceMin", "data axes", "reduced"),
  REDUCE ("ReduceProd", "data axes", "reduced"), REDUCE ("ReduceL1", "data axes", "reduced"), REDUCE ("ReduceL2", "data axes", "reduced"), REDUCE ("ReduceLogSum", "data axes", "reduced"),
  REDUCE ("ReduceLogSumExp", "data axes", "reduced"), REDUCE ("ReduceSumSquare", "data axes", "reduced"),
  { "onnx::ArgMax", 1, 0, infer_arg, kernel_arg, 0, "data", "reduced" },
  { "onnx::ArgMin", 1, 0, infer_arg, kernel_arg, 0, "data", "reduced" },
  { "onnx::Softmax", 1, 0, graft_infer_same_as_input, kernel_softmax, GRAFT_OP_HALF_AS_FLOAT, "input", "output" },
  { "onnx::LogSoftmax", 1, 0, graft_infer_same_as_input, kernel_softmax, GRAFT_OP_HALF_AS_FLOAT, "input", "output" },
  { "onnx::Hardmax", 1, 0, graft_infer_same_as_input, kernel_softmax, GRAFT_OP_HALF_AS_FLOAT, "input", "output" },
  { "onnx::CumSum", 11, 0, graft_infer_same_as_input, kernel_cumulative, GRAFT_OP_HALF_AS_FLOAT, "x axis", "y" },
  { "onnx::CumProd", 26, 0, graft_infer_same_as_input, kernel_cumulative, GRAFT_OP_HALF_AS_FLOAT, "x axis", "y" },
  { "aten::softmax", 0, 0, graft_infer_same_as_input, kernel_softmax, GRAFT_OP_HALF_AS_FLOAT },
  { "aten::log_softmax", 0, 0, graft_infer_same_as_input, kernel_softmax, GRAFT_OP_HALF_AS_FLOAT },
  { NULL }
};
