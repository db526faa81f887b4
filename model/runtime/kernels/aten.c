/* TorchScript operators of traced and scripted torchvision classifiers:
 * aten::batch_norm, max_pool2d, adaptive_avg_pool1d/2d/3d,
 * linear/addmm/matmul, flatten, cat, mean/sum/max, dropout (inference),
 * scalar conversions, and prim::Constant, ListConstruct,
 * TupleConstruct, If, Loop. Constant arguments arrive as "argN"
 * attributes (see aten-args.h). float32 compute. */
#include <cblas.h>
#include <math.h>
#include <string.h>
#include "ir/fixed-branch.h"
#include "runtime/kernels/aten-args.h"
#include "runtime/kernels/pool-separable.h"
#include "runtime/kernels/vector-math.h"


static GraftRtTensor *
need_f32 (const GraftAtenArg *arg, const char *what, GError **error)
{
  GraftRtTensor *t = graft_arg_tensor (arg);
  if (t == NULL || t->dtype != GRAFT_DTYPE_FLOAT32)
    {
      graft_kernel_unsupported (error, "%s must be a float32 tensor%s", what, t ? "" : " (it is missing)");
      return NULL;
    }
  return t;
}

/* The int list of arg (a single int repeated to `repeat` entries); -1
 * when the argument is absent, None or not a list of at most max ints. */
static int
arg_ints (const GraftAtenArg *arg, gint64 *values, guint max, guint repeat)
{
  guint n;
  if (graft_arg_is_none (arg) || !graft_arg_ints (arg, values, max, &n, repeat, NULL))
    return -1;
  return n;
}

/* ---- prim:: ---- */

static gboolean
kernel_prim_constant (GraftKernelContext *ctx, GError **error)
{
  GraftAttribute *a = graft_node_get_attribute (ctx->node, "value");
  GraftRtTensor *t = a ? graft_aten_constant_tensor (a, error) : graft_rt_tensor_new_none (GRAFT_DTYPE_UNDEFINED);
  if (t == NULL)
    return FALSE;
  graft_kernel_set_output (ctx, 0, t);
  return TRUE;
}

static gboolean
kernel_prim_list (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *seq = graft_rt_tensor_new_sequence (GRAFT_DTYPE_UNDEFINED);
  /* the items given as constants: attributes arg0..arg63, counted in one
   * pass over the node's attributes (this runs on every call: BERT's
   * view sizes) */
  guint total = ctx->n_inputs, n_table = 0;
  GraftAttribute *const *table = graft_kernel_get_positional_attributes (ctx, &n_table);
  for (guint k = 0; k < n_table && k < 64; k++)
    total += table[k] != NULL;
  for (guint i = 0; table == NULL && i < ctx->node->attributes->len; i++)
    {
      const char *name = ((GraftAttribute *) ctx->node->attributes->pdata[i])->name;
      char *end;
      guint64 k;
      if (g_str_has_prefix (name, "arg") && g_ascii_isdigit (name[3]) &&
          (k = g_ascii_strtoull (name + 3, &end, 10)) < 64 && *end == '\0' && (name[3] != '0' || name[4] == '\0'))
        total++;
    }
  g_autofree GraftAtenArg *args = g_new (GraftAtenArg, MAX (total, 1));
  graft_aten_args (ctx, NULL, total, args);
  for (guint k = 0; k < total; k++)
    {
      GraftAttribute *a = args[k].attr;
      GraftRtTensor *t = args[k].value;
      GraftRtTensor *item = a ? graft_aten_constant_tensor (a, error) : t ? graft_rt_tensor_ref (t) : NULL;
      if (item == NULL)
        {
          graft_rt_tensor_unref (seq);
          return error && *error ? FALSE : graft_kernel_fail (error, "list item %u is missing", k);
        }
      seq->dtype = item->dtype;
      g_ptr_array_add (seq->items, item);
    }
  graft_kernel_set_output (ctx, 0, seq);
  return TRUE;
}

static gboolean
kernel_prim_unpack (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *seq = graft_kernel_input (ctx, 0);
  if (seq == NULL || seq->kind != GRAFT_RT_SEQUENCE || seq->items->len < ctx->n_outputs)
    return graft_kernel_fail (error, "expected a list or tuple of %u items", ctx->n_outputs);
  for (guint i = 0; i < ctx->n_outputs; i++)
    graft_kernel_set_output (ctx, i, graft_rt_tensor_ref (seq->items->pdata[i]));
  return TRUE;
}

/* An If whose condition a number read out of a tensor decides
 * (if x.sum() > 0), not sizes or constants. */
static gboolean
decided_by_tensor_values (GraftNode *node)
{
  GraftValue *cond = node->inputs->len > 0 ? node->inputs->pdata[0] : NULL;
  return cond != NULL && cond->producer != NULL && graft_node_reads_tensor_data (cond->producer);
}

static gboolean
kernel_prim_if (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *cond = graft_kernel_input (ctx, 0);
  gboolean take;
  if (cond)
    take = graft_rt_tensor_get_f64 (cond, 0) != 0;
  else
    {
      GraftAtenArg args[1];
      graft_aten_args (ctx, NULL, 1, args);
      take = graft_arg_int (&args[0], 0) != 0;
    }
  GraftGraph *branch = graft_node_attr_graph (ctx->node, take ? "then_branch" : "else_branch");
  if (branch == NULL)
    return graft_kernel_fail (error, "the branch is missing");
  GraftGraph *other = graft_node_attr_graph (ctx->node, take ? "else_branch" : "then_branch");
  if (other != NULL && graft_kernel_observes_untaken_branches (ctx) && decided_by_tensor_values (ctx->node)
      && !graft_graph_changes_state (other))
    {
      g_autoptr(GError) ignored = NULL;
      g_autoptr(GPtrArray) dropped = graft_kernel_run_subgraph (ctx, other, NULL, 0, &ignored);
    }
  g_autoptr(GPtrArray) outs = graft_kernel_run_subgraph (ctx, branch, NULL, 0, error);
  if (outs == NULL)
    return FALSE;
  for (guint i = 0; i < outs->len && i < ctx->n_outputs; i++)
    graft_kernel_set_output (ctx, i, graft_rt_tensor_ref (outs->pdata[i]));
  return TRUE;
}

/* prim::Loop(max_trip_count, condition, carried...): body(trip, carried...) → (condition, carried...).
 * A constant trip count arrives as the max_trip_count attribute. */
static gboolean
kernel_prim_loop (GraftKernelContext *ctx, GError **error)
{
  GraftGraph *body = graft_node_attr_graph (ctx->node, "body");
  if (body == NULL)
    return graft_kernel_fail (error, "the body is missing");
  guint first = 0;
  gint64 max_trips = G_MAXINT64;
  if (graft_node_has_attr (ctx->node, "max_trip_count"))
    max_trips = graft_node_attr_int (ctx->node, "max_trip_count", G_MAXINT64);
  else
    max_trips = graft_rt_tensor_get_i64 (ctx->inputs[first++], 0);
  gboolean cond;
  if (graft_node_has_attr (ctx->node, "cond"))
    cond = graft_node_attr_int (ctx->node, "cond", 1);
  else
    cond = graft_rt_tensor_get_f64 (ctx->inputs[first++], 0) != 0;
  guint n_carried = ctx->n_inputs - first;
  g_autoptr(GPtrArray) carried = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_rt_tensor_unref);
  for (guint i = 0; i < n_carried; i++)
    g_ptr_array_add (carried, graft_rt_tensor_ref (ctx->inputs[first + i]));
  for (gint64 it = 0; it < max_trips && cond; it++)
    {
      g_autofree GraftRtTensor **ins = g_new0 (GraftRtTensor *, 1 + n_carried);
      g_autoptr(GraftRtTensor) trip = graft_rt_tensor_new_scalar_i64 (it);
      ins[0] = trip;
      for (guint i = 0; i < n_carried; i++)
        ins[1 + i] = carried->pdata[i];
      g_autoptr(GPtrArray) outs = graft_kernel_run_subgraph (ctx, body, ins, 1 + n_carried, error);
      if (outs == NULL)
        return FALSE;
      if (outs->len < 1 + n_carried)
        return graft_kernel_fail (error, "the loop body returns %u values, expected %u", outs->len, 1 + n_carried);
      cond = graft_rt_tensor_get_f64 (outs->pdata[0], 0) != 0;
      for (guint i = 0; i < n_carried; i++)
        {
          graft_rt_tensor_unref (carried->pdata[i]);
          carried->pdata[i] = graft_rt_tensor_ref (outs->pdata[1 + i]);
        }
      if (it > (1 << 24))
        return graft_kernel_fail (error, "more than 16 million iterations: stopping");
    }
  for (guint i = 0; i < ctx->n_outputs && i < n_carried; i++)
    graft_kernel_set_output (ctx, i, graft_rt_tensor_ref (carried->pdata[i]));
  return TRUE;
}

/* ---- scalar conversions and identities ---- */

static gboolean
kernel_to_scalar (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *t = graft_kernel_input (ctx, 0);
  const char *op = ctx->node->op_type;
  GraftDType dtype = strcmp (op, "Bool") == 0 ? GRAFT_DTYPE_BOOL : strcmp (op, "Int") == 0 ? GRAFT_DTYPE_INT64 : GRAFT_DTYPE_FLOAT64;
  if (t == NULL || t->kind != GRAFT_RT_TENSOR || t->numel != 1)
    return graft_kernel_fail (error, "expected a tensor with one element");
  GraftRtTensor *out = graft_rt_tensor_new (dtype, 0, NULL, error);
  if (out == NULL)
    return FALSE;
  if (dtype == GRAFT_DTYPE_FLOAT64)
    *(double *) out->data = graft_rt_tensor_get_f64 (t, 0);
  else
    graft_rt_tensor_set_i64 (out, 0, dtype == GRAFT_DTYPE_BOOL ? graft_rt_tensor_get_f64 (t, 0) != 0 : graft_rt_tensor_get_i64 (t, 0));
  graft_kernel_set_output (ctx, 0, out);
  return TRUE;
}

static gboolean
kernel_identity (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *t = graft_kernel_input (ctx, 0);
  if (t == NULL)
    return graft_kernel_fail (error, "input is missing");
  graft_kernel_set_output (ctx, 0, graft_rt_tensor_ref (t));
  return TRUE;
}

/* clone(x, memory_format=None): a copy, so that in-place ops on it
 * (out.mul_()) leave x alone */
static gboolean
kernel_clone (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *t = graft_kernel_input (ctx, 0);
  if (t == NULL)
    return graft_kernel_fail (error, "input is missing");
  GraftRtTensor *copy = graft_rt_tensor_copy (t, error);
  if (copy == NULL)
    return FALSE;
  graft_kernel_set_output (ctx, 0, copy);
  return TRUE;
}

/* ---- shapes ---- */

static gboolean
kernel_flatten (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = graft_kernel_input (ctx, 0);
  GraftAtenArg args[3];
  graft_aten_args (ctx, NULL, 3, args);
  gint64 start = graft_arg_int (&args[1], 0), end = graft_arg_int (&args[2], -1);
  int rank = MAX (x->rank, 1);
  if (start < 0)
    start += rank;
  if (end < 0)
    end += rank;
  if (start < 0 || end >= rank || start > end)
    return graft_kernel_fail (error, "flatten dims %" G_GINT64_FORMAT "..%" G_GINT64_FORMAT " do not fit rank %d", start, end, x->rank);
  gint64 dims[GRAFT_RT_MAX_RANK];
  int n = 0;
  for (int d = 0; d < start; d++)
    dims[n++] = x->dims[d];
  dims[n++] = x->rank ? graft_dims_product (x->dims, start, end + 1) : 1;
  for (int d = end + 1; d < x->rank; d++)
    dims[n++] = x->dims[d];
  GraftRtTensor *view = graft_rt_tensor_reshape (x, n, dims, error);
  if (view == NULL)
    return FALSE;
  graft_kernel_set_output (ctx, 0, view);
  return TRUE;
}

static gboolean
kernel_cat (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *list = graft_kernel_input (ctx, 0);
  GraftAtenArg args[2];
  graft_aten_args (ctx, NULL, 2, args);
  gint64 axis = graft_arg_int (&args[1], 0);
  if (list == NULL || list->kind != GRAFT_RT_SEQUENCE || list->items->len == 0)
    return graft_kernel_fail (error, "expected a non-empty list of tensors");
  GraftRtTensor *first = list->items->pdata[0];
  if (!graft_normalize_axis (&axis, first->rank, error))
    return FALSE;
  gint64 dims[GRAFT_RT_MAX_RANK];
  memcpy (dims, first->dims, sizeof (gint64) * first->rank);
  dims[axis] = 0;
  for (guint i = 0; i < list->items->len; i++)
    {
      GraftRtTensor *t = list->items->pdata[i];
      if (t->rank != first->rank || t->dtype != first->dtype)
        return graft_kernel_fail (error, "list item %u does not match the first", i);
      for (int d = 0; d < first->rank; d++)
        if (d != axis && t->dims[d] != first->dims[d])
          return graft_kernel_fail (error, "sizes of the tensors must match except along dim %" G_GINT64_FORMAT
                                    ": tensor %u has %" G_GINT64_FORMAT " at dim %d where tensor 0 has %"
                                    G_GINT64_FORMAT, axis, i, t->dims[d], d, first->dims[d]);
      dims[axis] += t->dims[axis];
    }
  GraftRtTensor *out = graft_kernel_alloc_output (ctx, 0, first->dtype, first->rank, dims, error);
  if (out == NULL)
    return FALSE;
  gint64 outer = graft_dims_product (dims, 0, axis), out_block = graft_dims_product (dims, axis, first->rank);
  gint64 offset = 0;
  for (guint i = 0; i < list->items->len; i++)
    {
      GraftRtTensor *t = list->items->pdata[i];
      gint64 block = graft_dims_product (t->dims, axis, t->rank);
      for (gint64 o = 0; o < outer; o++)
        graft_copy_block (out, o * out_block + offset, t, o * block, block);
      offset += block;
    }
  return TRUE;
}

/* The dtype of sum(x) / mean(x): the dtype argument when given, else as
 * torch does: bools and integers sum to int64, the rest keep theirs. */
static GraftDType
reduce_dtype (const char *op, GraftRtTensor *x, const GraftAtenArg *dtype_arg)
{
  if (dtype_arg != NULL && !graft_arg_is_none (dtype_arg))
    return graft_dtype_from_torch_scalar_type (graft_arg_int (dtype_arg, 6));
  if (strcmp (op, "sum") == 0 && (x->dtype == GRAFT_DTYPE_BOOL || graft_dtype_is_integer (x->dtype)))
    return GRAFT_DTYPE_INT64;
  return x->dtype;
}

/* aten::mean/sum(self, dim, keepdim, dtype) and aten::amax(self, dim, keepdim) */
/* sum(int[]) / sum(float[]): Python's sum of a TorchScript list (Swin adds
 * up its shift sizes) */
static gboolean
sum_list (GraftKernelContext *ctx, GraftRtTensor *list, GError **error)
{
  gboolean floats = FALSE;
  double total = 0;
  gint64 whole = 0;
  for (guint i = 0; i < list->items->len; i++)
    {
      GraftRtTensor *item = list->items->pdata[i];
      if (item->kind != GRAFT_RT_TENSOR || item->numel != 1)
        return graft_kernel_fail (error, "sum of a list needs numbers");
      floats |= graft_dtype_is_float (item->dtype);
      total += graft_rt_tensor_get_f64 (item, 0);
      whole += graft_rt_tensor_get_i64 (item, 0);
    }
  graft_kernel_set_output (ctx, 0, floats ? graft_aten_new_f64 (total) : graft_rt_tensor_new_scalar_i64 (whole));
  return TRUE;
}

static gboolean
kernel_reduce (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = graft_kernel_input (ctx, 0);
  const char *op = ctx->node->op_type;
  if (x != NULL && x->kind == GRAFT_RT_SEQUENCE && strcmp (op, "sum") == 0)
    return sum_list (ctx, x, error);
  gboolean is_max = strcmp (op, "amax") == 0;
  /* linalg_vector_norm(self, ord, dim, keepdim, dtype) and norm(self, p,
   * dim, keepdim): F.normalize traced and scripted (EdgeNeXt) */
  gboolean is_norm = strcmp (op, "linalg_vector_norm") == 0 || strcmp (op, "norm") == 0;
  gint64 axes[GRAFT_RT_MAX_RANK];
  GraftAtenArg all_args[5];
  graft_aten_args (ctx, NULL, 5, all_args);
  GraftAtenArg *args = is_norm ? all_args + 1 : all_args;
  double p = is_norm && !graft_arg_is_none (&all_args[1]) ? graft_arg_double (&all_args[1], 2.0) : 2.0;
  if (x == NULL || x->kind != GRAFT_RT_TENSOR)
    return graft_kernel_fail (error, "aten::%s needs a tensor", op);
  if (is_norm && !graft_dtype_is_float (x->dtype))
    return graft_kernel_unsupported (error, "aten::%s of %s", op, graft_dtype_to_string (x->dtype));
  int n = arg_ints (&args[1], axes, GRAFT_RT_MAX_RANK, 1);
  gboolean keepdim = graft_arg_int (&args[2], 0);
  gboolean mask[GRAFT_RT_MAX_RANK] = { 0 };
  for (int d = 0; d < x->rank; d++)
    mask[d] = n <= 0;
  for (int i = 0; i < n; i++)
    {
      gint64 a = axes[i];
      if (!graft_normalize_axis (&a, x->rank, error))
        return FALSE;
      mask[a] = TRUE;
    }
  gint64 dims[GRAFT_RT_MAX_RANK], strides[GRAFT_RT_MAX_RANK], index[GRAFT_RT_MAX_RANK] = { 0 };
  int rank = 0;
  for (int d = 0; d < x->rank; d++)
    if (!mask[d])
      dims[rank++] = x->dims[d];
    else if (keepdim)
      dims[rank++] = 1;
  GraftDType out_dtype = is_max ? x->dtype : reduce_dtype (op, x, is_norm && strcmp (op, "norm") == 0 ? NULL : &args[3]);
  if (out_dtype == GRAFT_DTYPE_UNDEFINED)
    return graft_kernel_unsupported (error, "aten::%s with dtype code %" G_GINT64_FORMAT, op, graft_arg_int (&args[3], -1));
  GraftRtTensor *out = graft_kernel_alloc_output (ctx, 0, out_dtype, rank, dims, error);
  if (out == NULL)
    return FALSE;
  gint64 s = 1, count = 1;
  for (int d = x->rank - 1; d >= 0; d--)
    {
      strides[d] = mask[d] ? 0 : s;
      if (!mask[d])
        s *= x->dims[d];
      else
        count *= x->dims[d];
    }
  g_autofree double *acc = g_new (double, MAX (out->numel, 1));
  for (gint64 i = 0; i < out->numel; i++)
    acc[i] = is_max ? -INFINITY : 0;
  /* float32 summed over its innermost axes (T5's RMSNorm mean over the
   * hidden size): the same sums without the index walk */
  int inner = x->rank;
  while (inner > 0 && mask[inner - 1])
    inner--;
  gboolean rows = x->dtype == GRAFT_DTYPE_FLOAT32 && !is_norm && !is_max;
  for (int d = 0; rows && d < inner; d++)
    rows = !mask[d];
  if (rows)
    graft_f32_add_row_sums (x->data, out->numel, count, acc);
  gint64 off = 0;
  for (gint64 i = 0; !rows && i < x->numel; i++)
    {
      double v = graft_rt_tensor_get_f64 (x, i);
      if (is_norm)
        {
          double a = fabs (v);
          if (isinf (p))
            acc[off] = a > acc[off] || isnan (a) ? a : acc[off];
          else
            acc[off] += p == 2 ? a * a : p == 1 ? a : p == 0 ? (a != 0) : pow (a, p);
        }
      else if (is_max)
        acc[off] = (isnan (v) || v > acc[off]) ? v : acc[off];
      else
        acc[off] += v;
      for (int d = x->rank - 1; d >= 0; d--)
        {
          index[d]++;
          off += strides[d];
          if (index[d] < x->dims[d])
            break;
          off -= strides[d] * index[d];
          index[d] = 0;
        }
    }
  for (gint64 i = 0; i < out->numel; i++)
    {
      double r = strcmp (op, "mean") == 0 ? acc[i] / MAX (count, 1) : acc[i];
      if (is_norm && !isinf (p) && p != 0 && p != 1)
        r = p == 2 ? sqrt (r) : pow (r, 1.0 / p);
      graft_rt_tensor_set_f64 (out, i, r);
    }
  return TRUE;
}

/* ---- linear algebra ---- */

static gboolean
kernel_linear (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[3];
  graft_aten_args (ctx, NULL, 3, args);
  GraftRtTensor *x = graft_arg_tensor (&args[0]), *w = graft_arg_tensor (&args[1]), *b = graft_arg_tensor (&args[2]);
  if (x == NULL || w == NULL || w->rank != 2 || x->rank < 1 || x->dims[x->rank - 1] != w->dims[1])
    return graft_kernel_fail (error, "input and weight shapes do not fit");
  if (x->dtype != GRAFT_DTYPE_FLOAT32 || w->dtype != GRAFT_DTYPE_FLOAT32)
    return graft_kernel_unsupported (error, "linear needs float32");
  gint64 dims[GRAFT_RT_MAX_RANK];
  memcpy (dims, x->dims, sizeof (gint64) * x->rank);
  dims[x->rank - 1] = w->dims[0];
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_FLOAT32, x->rank, dims, error);
  if (y == NULL)
    return FALSE;
  gint64 M = x->numel / MAX (w->dims[1], 1), N = w->dims[0], K = w->dims[1];
  g_autoptr(GraftRtTensor) b32 = b ? graft_aten_as_dtype (b, GRAFT_DTYPE_FLOAT32, error) : NULL;
  if (b && b32 == NULL)
    return FALSE;
  if (b32 && b32->numel != N && b32->numel != 1)
    return graft_kernel_fail (error, "bias has %" G_GINT64_FORMAT " values, expected %" G_GINT64_FORMAT, b32->numel, N);
  graft_linear_f32 (ctx, M, N, K, x->data, w->data, b32 ? b32->data : NULL, b32 ? b32->numel : 0, y->data);
  return TRUE;
}

static gboolean
kernel_addmm (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[5];
  graft_aten_args (ctx, NULL, 5, args);
  GraftRtTensor *bias = graft_arg_tensor (&args[0]), *a = graft_arg_tensor (&args[1]), *b = graft_arg_tensor (&args[2]);
  double beta = graft_arg_double (&args[3], 1), alpha = graft_arg_double (&args[4], 1);
  if (a == NULL || b == NULL || bias == NULL || a->rank != 2 || b->rank != 2 || a->dims[1] != b->dims[0])
    return graft_kernel_fail (error, "addmm operands do not fit");
  gint64 dims[2] = { a->dims[0], b->dims[1] };
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_FLOAT32, 2, dims, error);
  if (y == NULL)
    return FALSE;
  return graft_gemm (ctx, a, FALSE, b, FALSE, bias, alpha, beta, y, error);
}

static gboolean
kernel_matmul (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[2];
  graft_aten_args (ctx, NULL, 2, args);
  GraftRtTensor *a = graft_arg_tensor (&args[0]), *b = graft_arg_tensor (&args[1]);
  if (a == NULL || b == NULL || a->rank < 1 || b->rank < 1)
    return graft_kernel_fail (error, "matmul needs two tensors");
  if (strcmp (ctx->node->op_type, "t") == 0)
    return graft_kernel_unsupported (error, "aten::t");
  int ra = a->rank, rb = b->rank;
  int batch = MAX (ra, rb) - 2;
  gint64 dims[GRAFT_RT_MAX_RANK];
  int n = 0;
  for (int d = 0; d < batch; d++)
    {
      int ia = d - (batch - MAX (ra - 2, 0)), ib = d - (batch - MAX (rb - 2, 0));
      gint64 da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
      dims[n++] = MAX (da, db);
    }
  if (ra >= 2)
    dims[n++] = a->dims[ra - 2];
  if (rb >= 2)
    dims[n++] = b->dims[rb - 1];
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, a->dtype, n, dims, error);
  return y && graft_matmul (ctx, a, b, y, error);
}

/* ---- batch norm, pooling ---- */

static gboolean
kernel_batch_norm (GraftKernelContext *ctx, GError **error)
{
  /* batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled) */
  GraftAtenArg args[8];
  graft_aten_args (ctx, NULL, 8, args);
  GraftRtTensor *x = need_f32 (&args[0], "input", error);
  GraftRtTensor *scale = graft_arg_tensor (&args[1]), *bias = graft_arg_tensor (&args[2]);
  GraftRtTensor *mean = graft_arg_tensor (&args[3]), *var = graft_arg_tensor (&args[4]);
  double eps = graft_arg_double (&args[7], 1e-5);
  if (x == NULL)
    return FALSE;
  if (graft_arg_int (&args[5], 0) && (mean == NULL || var == NULL))
    return graft_kernel_unsupported (error, "batch_norm in training mode without running statistics");
  if (mean == NULL || var == NULL)
    return graft_kernel_fail (error, "running_mean and running_var are missing");
  gint64 C = x->rank > 1 ? x->dims[1] : 1, N = x->dims[0], spatial = graft_dims_product (x->dims, 2, x->rank);
  GraftRtTensor *y = graft_kernel_steal_input (ctx, 0);
  if (y)
    graft_kernel_set_output (ctx, 0, y);
  else if ((y = graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_FLOAT32, x->rank, x->dims, error)) == NULL)
    return FALSE;
  const float *xd = x->data;
  float *yd = y->data;
  /* a SiLU/HardSwish/Relu after it, fused by the engine (runtime-fusion.c):
   * on each map while it is in cache where maps are long enough for the
   * vector rows, else over the whole output after */
  GraftFusedActivation act = graft_kernel_get_fused_activation (ctx);
  gboolean per_map = spatial >= 64;
  for (gint64 c = 0; c < C; c++)
    {
      double s = (scale ? graft_rt_tensor_get_f64 (scale, c) : 1) / sqrt (graft_rt_tensor_get_f64 (var, c) + eps);
      float fs = s, fb = (bias ? graft_rt_tensor_get_f64 (bias, c) : 0) - graft_rt_tensor_get_f64 (mean, c) * s;
      for (gint64 n = 0; n < N; n++)
        {
          gint64 base = (n * C + c) * spatial;
          if (per_map && act == GRAFT_FUSED_ACTIVATION_SILU)
            {
              graft_vm_affine (xd + base, yd + base, spatial, 0, fs, fb, TRUE);
              continue;
            }
          for (gint64 i = 0; i < spatial; i++)
            yd[base + i] = xd[base + i] * fs + fb;
          if (per_map)
            graft_f32_fused_activation (act, yd + base, spatial);
        }
    }
  if (!per_map)
    graft_kernel_apply_fused_activation (ctx, y);
  return TRUE;
}

/* Any NaN among x[0..n), four lanes at a time. */
static gboolean
has_nan (const float *x, gint64 n)
{
  GraftV4i any = { 0, 0, 0, 0 };
  gint64 i = 0;
  for (; i + 4 <= n; i += 4)
    {
      GraftV4f v;
      memcpy (&v, x + i, sizeof v);
      any |= v != v;
    }
  gboolean nan = any[0] || any[1] || any[2] || any[3];
  for (; i < n; i++)
    nan = nan || isnan (x[i]);
  return nan;
}

static gboolean
kernel_max_pool (GraftKernelContext *ctx, GError **error)
{
  /* max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode) */
  GraftAtenArg args[6];
  graft_aten_args (ctx, NULL, 6, args);
  GraftRtTensor *x = need_f32 (&args[0], "input", error);
  if (x == NULL)
    return FALSE;
  if (x->rank != 4 && x->rank != 3)
    return graft_kernel_unsupported (error, "max_pool2d on rank %d", x->rank);
  gint64 k[2], s[2], p[2] = { 0, 0 }, d[2] = { 1, 1 };
  if (arg_ints (&args[1], k, 2, 2) != 2)
    return graft_kernel_fail (error, "kernel_size is missing");
  if (arg_ints (&args[2], s, 2, 2) != 2)
    memcpy (s, k, sizeof s);
  arg_ints (&args[3], p, 2, 2);
  arg_ints (&args[4], d, 2, 2);
  gboolean ceil_mode = graft_arg_int (&args[5], 0);
  gint64 H = x->dims[x->rank - 2], W = x->dims[x->rank - 1], out[2];
  gint64 in[2] = { H, W };
  for (int i = 0; i < 2; i++)
    {
      gint64 span = (k[i] - 1) * d[i] + 1, avail = in[i] + 2 * p[i] - span;
      if (avail < 0 || s[i] <= 0)
        return graft_kernel_fail (error, "the window is larger than the padded input");
      out[i] = (ceil_mode ? (avail + s[i] - 1) / s[i] : avail / s[i]) + 1;
      if (ceil_mode && (out[i] - 1) * s[i] >= in[i] + p[i])
        out[i]--;
    }
  gint64 dims[4];
  memcpy (dims, x->dims, sizeof (gint64) * x->rank);
  dims[x->rank - 2] = out[0];
  dims[x->rank - 1] = out[1];
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_FLOAT32, x->rank, dims, error);
  if (y == NULL)
    return FALSE;
  gint64 planes = x->numel / MAX (H * W, 1);
  /* ONNX MaxPool's vector kernel, where it takes the window; a NaN must
   * win here as in torch, and never does there: only without NaN */
  GraftWindow win = { .n = 2 };
  for (int i = 0; i < 2; i++)
    {
      win.in[i] = in[i];
      win.out[i] = out[i];
      win.kernel[i] = k[i];
      win.stride[i] = s[i];
      win.dilation[i] = d[i];
      win.pad_begin[i] = win.pad_end[i] = p[i];
    }
  if (graft_pool2d_separable_supports (&win) && !has_nan (x->data, x->numel))
    {
      graft_max_pool2d (ctx, x->data, y->data, planes, &win);
      return TRUE;
    }
  for (gint64 pl = 0; pl < planes; pl++)
    {
      const float *xp = (const float *) x->data + pl * H * W;
      float *yp = (float *) y->data + pl * out[0] * out[1];
      for (gint64 oh = 0; oh < out[0]; oh++)
        for (gint64 ow = 0; ow < out[1]; ow++)
          {
            float m = -INFINITY;
            for (gint64 i = 0; i < k[0]; i++)
              {
                gint64 h = oh * s[0] - p[0] + i * d[0];
                if (h < 0 || h >= H)
                  continue;
                for (gint64 j = 0; j < k[1]; j++)
                  {
                    gint64 w = ow * s[1] - p[1] + j * d[1];
                    if (w >= 0 && w < W && (xp[h * W + w] > m || isnan (xp[h * W + w])))
                      m = xp[h * W + w];
                  }
              }
            yp[oh * out[1] + ow] = m;
          }
    }
  return TRUE;
}

/* adaptive_avg_pool1d/2d/3d(input, output_size): PyTorch's bins along
 * each of the last 1, 2 or 3 dims, [floor(i·in/out), ceil((i+1)·in/out)) */
static gboolean
kernel_adaptive_avg_pool (GraftKernelContext *ctx, GError **error)
{
  int ns = ctx->node->op_type[strlen ("adaptive_avg_pool")] - '0';
  GraftAtenArg args[2];
  graft_aten_args (ctx, NULL, 2, args);
  GraftRtTensor *x = need_f32 (&args[0], "input", error);
  gint64 os[3];
  if (x == NULL)
    return FALSE;
  if (ns < 1 || ns > 3 || x->rank < ns + 1 || x->rank > ns + 2 || arg_ints (&args[1], os, ns, ns) != ns)
    return graft_kernel_fail (error, "expected a %d-D or %d-D input and %d output sizes", ns + 1, ns + 2, ns);
  gint64 in[3] = { 1, 1, 1 }, out[3] = { 1, 1, 1 };
  gint64 dims[GRAFT_RT_MAX_RANK];
  memcpy (dims, x->dims, sizeof (gint64) * x->rank);
  for (int d = 0; d < ns; d++)
    {
      if (os[d] <= 0)
        return graft_kernel_fail (error, "output size must be positive");
      in[3 - ns + d] = x->dims[x->rank - ns + d];
      out[3 - ns + d] = dims[x->rank - ns + d] = os[d];
    }
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_FLOAT32, x->rank, dims, error);
  if (y == NULL)
    return FALSE;
  gint64 plane_in = in[0] * in[1] * in[2], plane_out = out[0] * out[1] * out[2];
  gint64 planes = x->numel / MAX (plane_in, 1);
  if (plane_out == 1 && plane_in > 0)
    {
      /* one bin, the whole plane (a CNN's global average pool, and
       * squeeze-and-excitation's): the vector means GlobalAveragePool
       * takes, at memory speed (the double loop below took EfficientNet-B0's
       * 17 pools twice GlobalAveragePool's time) */
      graft_vm_means (x->data, y->data, planes, plane_in);
      return TRUE;
    }
  for (gint64 pl = 0; pl < planes; pl++)
    {
      const float *xp = (const float *) x->data + pl * plane_in;
      float *yp = (float *) y->data + pl * plane_out;
      for (gint64 o0 = 0; o0 < out[0]; o0++)
        for (gint64 o1 = 0; o1 < out[1]; o1++)
          for (gint64 o2 = 0; o2 < out[2]; o2++)
            {
              gint64 a0 = o0 * in[0] / out[0], b0 = ((o0 + 1) * in[0] + out[0] - 1) / out[0];
              gint64 a1 = o1 * in[1] / out[1], b1 = ((o1 + 1) * in[1] + out[1] - 1) / out[1];
              gint64 a2 = o2 * in[2] / out[2], b2 = ((o2 + 1) * in[2] + out[2] - 1) / out[2];
              double sum = 0;
              for (gint64 i0 = a0; i0 < b0; i0++)
                for (gint64 i1 = a1; i1 < b1; i1++)
                  for (gint64 i2 = a2; i2 < b2; i2++)
                    sum += xp[(i0 * in[1] + i1) * in[2] + i2];
              yp[(o0 * out[1] + o1) * out[2] + o2] = sum / MAX ((b0 - a0) * (b1 - a1) * (b2 - a2), 1);
            }
    }
  return TRUE;
}

#define ATEN(name, kernel) { "aten::" name, 0, 0, NULL, kernel, 0 }
#define PRIM(name, kernel) { "prim::" name, 0, 0, NULL, kernel, 0 }

const GraftOpSchema graft_ops_aten[] = {
  PRIM ("Constant", kernel_prim_constant),
  PRIM ("ListConstruct", kernel_prim_list),
  PRIM ("TupleConstruct", kernel_prim_list),
  PRIM ("ListUnpack", kernel_prim_unpack),
  PRIM ("TupleUnpack", kernel_prim_unpack),
  PRIM ("If", kernel_prim_if),
  PRIM ("Loop", kernel_prim_loop),
  ATEN ("Bool", kernel_to_scalar), ATEN ("Int", kernel_to_scalar), ATEN ("Float", kernel_to_scalar),
  ATEN ("dropout", kernel_identity), ATEN ("dropout_", kernel_identity), ATEN ("feature_dropout", kernel_identity),
  ATEN ("contiguous", kernel_identity), ATEN ("detach", kernel_identity), ATEN ("detach_", kernel_identity),
  ATEN ("alias", kernel_identity), ATEN ("lift_fresh", kernel_identity),
  ATEN ("clone", kernel_clone), ATEN ("lift_fresh_copy", kernel_clone),
  ATEN ("flatten", kernel_flatten),
  ATEN ("cat", kernel_cat),
  ATEN ("mean", kernel_reduce), ATEN ("sum", kernel_reduce), ATEN ("amax", kernel_reduce),
  ATEN ("linalg_vector_norm", kernel_reduce), ATEN ("norm", kernel_reduce),
  ATEN ("linear", kernel_linear), ATEN ("addmm", kernel_addmm), ATEN ("matmul", kernel_matmul),
  ATEN ("mm", kernel_matmul), ATEN ("bmm", kernel_matmul),
  ATEN ("batch_norm", kernel_batch_norm),
  ATEN ("max_pool2d", kernel_max_pool),
  ATEN ("adaptive_avg_pool1d", kernel_adaptive_avg_pool), ATEN ("adaptive_avg_pool2d", kernel_adaptive_avg_pool),
  ATEN ("adaptive_avg_pool3d", kernel_adaptive_avg_pool),
  { NULL }
};
