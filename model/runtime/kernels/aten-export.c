/* Operators that torch.export programs use and TorchScript graphs do not:
 * symbolic-size arithmetic (aten::sym_size and Python's _operator.mul,
 * floordiv, ge… on SymInts), runtime assertions (aten::_assert_scalar,
 * sym_constrain_range), aten::nonzero, aten::unflatten,
 * aten::scaled_dot_product_attention (float32), and what transformers'
 * Whisper adds: embedding, index.Tensor, cumsum, diff, new_ones,
 * _assert_tensor_metadata. Arguments arrive as the
 * reader in model/pt2 lays them out: constants as "argN" attributes,
 * values as inputs (see aten-args.h). */
#include <math.h>
#include <string.h>
#include "runtime/kernels/aten-args.h"

/* ---- symbolic sizes ---- */

/* (self, dim, …): the tensor and its normalised dim; args gets n arguments. */
static GraftRtTensor *
tensor_and_dim (GraftKernelContext *ctx, GraftAtenArg *args, guint n, gint64 *dim, GError **error)
{
  graft_aten_args (ctx, NULL, n, args);
  GraftRtTensor *x = graft_aten_need_tensor (&args[0], 0, error);
  if (x == NULL)
    return NULL;
  *dim = graft_arg_int (&args[1], 0);
  return graft_normalize_axis (dim, x->rank, error) ? x : NULL;
}

static gboolean
kernel_sym_size (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[2];
  gint64 dim;
  GraftRtTensor *x = tensor_and_dim (ctx, args, 2, &dim, error);
  if (x == NULL)
    return FALSE;
  graft_kernel_set_output (ctx, 0, graft_rt_tensor_new_scalar_i64 (x->dims[dim]));
  return TRUE;
}

typedef enum { SYM_ADD, SYM_SUB, SYM_MUL, SYM_FLOORDIV, SYM_MOD, SYM_EQ, SYM_NE, SYM_LT, SYM_LE, SYM_GT, SYM_GE,
               SYM_TRUEDIV } SymOp;

static const struct { const char *name; SymOp op; } sym_ops[] = {
  { "add", SYM_ADD }, { "sub", SYM_SUB }, { "mul", SYM_MUL }, { "floordiv", SYM_FLOORDIV }, { "mod", SYM_MOD },
  { "eq", SYM_EQ }, { "ne", SYM_NE }, { "lt", SYM_LT }, { "le", SYM_LE }, { "gt", SYM_GT }, { "ge", SYM_GE },
  { "truediv", SYM_TRUEDIV },
};

static gboolean
is_float_arg (const GraftAtenArg *arg)
{
  if (arg->attr)
    return arg->attr->type == GRAFT_ATTR_FLOAT;
  return arg->value && arg->value->kind == GRAFT_RT_TENSOR && graft_dtype_is_float (arg->value->dtype);
}

/* Python's operator module on SymInt / SymFloat values. */
static gboolean
kernel_python_operator (GraftKernelContext *ctx, GError **error)
{
  SymOp op = SYM_ADD;
  gboolean known = FALSE;
  for (guint i = 0; i < G_N_ELEMENTS (sym_ops); i++)
    if (strcmp (ctx->node->op_type, sym_ops[i].name) == 0)
      op = sym_ops[i].op, known = TRUE;
  if (!known)
    return graft_kernel_unsupported (error, "_operator.%s on symbolic values", ctx->node->op_type);
  GraftAtenArg args[2];
  graft_aten_args (ctx, NULL, 2, args);
  if ((args[0].attr == NULL && args[0].value == NULL) || (args[1].attr == NULL && args[1].value == NULL))
    return graft_kernel_fail (error, "_operator.%s needs two operands", ctx->node->op_type);
  gboolean as_float = is_float_arg (&args[0]) || is_float_arg (&args[1]) || op == SYM_TRUEDIV;
  if (as_float)
    {
      double a = graft_arg_double (&args[0], 0), b = graft_arg_double (&args[1], 0), r = 0;
      gboolean truth = FALSE, is_bool = op >= SYM_EQ && op <= SYM_GE;
      switch (op)
        {
        case SYM_ADD: r = a + b; break;
        case SYM_SUB: r = a - b; break;
        case SYM_MUL: r = a * b; break;
        case SYM_TRUEDIV: r = a / b; break;
        case SYM_FLOORDIV: r = floor (a / b); break;
        case SYM_MOD: r = a - floor (a / b) * b; break;
        case SYM_EQ: truth = a == b; break;
        case SYM_NE: truth = a != b; break;
        case SYM_LT: truth = a < b; break;
        case SYM_LE: truth = a <= b; break;
        case SYM_GT: truth = a > b; break;
        case SYM_GE: truth = a >= b; break;
        }
      graft_kernel_set_output (ctx, 0, is_bool ? graft_aten_new_bool (truth) : graft_aten_new_f64 (r));
      return TRUE;
    }
  gint64 a = graft_arg_int (&args[0], 0), b = graft_arg_int (&args[1], 0);
  if ((op == SYM_FLOORDIV || op == SYM_MOD) && b == 0)
    return graft_kernel_fail (error, "_operator.%s: division of a size by zero", ctx->node->op_type);
  gint64 r = 0;
  switch (op)
    {
    case SYM_ADD: r = a + b; break;
    case SYM_SUB: r = a - b; break;
    case SYM_MUL: r = a * b; break;
    case SYM_FLOORDIV: r = a / b - ((a % b != 0) && ((a < 0) != (b < 0))); break;
    case SYM_MOD: r = ((a % b) + b) % b; break;
    case SYM_EQ: case SYM_NE: case SYM_LT: case SYM_LE: case SYM_GT: case SYM_GE:
      {
        gboolean truth = op == SYM_EQ ? a == b : op == SYM_NE ? a != b : op == SYM_LT ? a < b
                         : op == SYM_LE ? a <= b : op == SYM_GT ? a > b : a >= b;
        graft_kernel_set_output (ctx, 0, graft_aten_new_bool (truth));
        return TRUE;
      }
    case SYM_TRUEDIV: break;
    }
  graft_kernel_set_output (ctx, 0, graft_rt_tensor_new_scalar_i64 (r));
  return TRUE;
}

/* ---- runtime assertions ---- */

static gboolean
kernel_assert_scalar (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[2];
  graft_aten_args (ctx, NULL, 2, args);
  gboolean truth = FALSE;
  if (args[0].attr != NULL)
    truth = graft_arg_int (&args[0], 0) != 0;
  else if (args[0].value == NULL || !graft_aten_truth (args[0].value, &truth, error))
    return error && *error ? FALSE : graft_kernel_fail (error, "%s has no condition", ctx->node->op);
  if (truth)
    return TRUE;
  g_autofree char *message = args[1].attr ? graft_attribute_dup_string (args[1].attr) : NULL;
  g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INPUT, "%s", message ? message
               : "a runtime assertion of the exported program failed");
  return FALSE;
}

/* sym_constrain_range(size, min=, max=): the value must lie in the range. */
static gboolean
kernel_constrain_range (GraftKernelContext *ctx, GError **error)
{
  static const char *const names[] = { NULL, "min", "max" };
  GraftAtenArg args[3];
  graft_aten_args (ctx, names, 3, args);
  if (args[0].value == NULL && args[0].attr == NULL)
    return graft_kernel_fail (error, "%s has no value to check", ctx->node->op);
  gint64 value = graft_arg_int (&args[0], 0);
  gboolean has_min = !graft_arg_is_none (&args[1]), has_max = !graft_arg_is_none (&args[2]);
  gint64 min = graft_arg_int (&args[1], G_MININT64), max = graft_arg_int (&args[2], G_MAXINT64);
  if ((has_min && value < min) || (has_max && value > max))
    {
      g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INPUT,
                   "%s: the data-dependent value %" G_GINT64_FORMAT " is outside [%" G_GINT64_FORMAT ", %"
                   G_GINT64_FORMAT "]", ctx->node->name, value, has_min ? min : 0, max);
      return FALSE;
    }
  /* The functional variants return a token. */
  if (ctx->n_outputs > 0)
    graft_kernel_set_output (ctx, 0, graft_rt_tensor_new_none (GRAFT_DTYPE_UNDEFINED));
  return TRUE;
}

/* ---- data-dependent shapes ---- */

static gboolean
kernel_nonzero (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = graft_kernel_input (ctx, 0);
  if (x == NULL || x->kind != GRAFT_RT_TENSOR || x->dtype == GRAFT_DTYPE_STRING)
    return graft_kernel_fail (error, "aten::nonzero needs a numeric tensor");
  gint64 count = 0;
  for (gint64 i = 0; i < x->numel; i++)
    count += graft_rt_tensor_get_f64 (x, i) != 0;
  gint64 dims[2] = { count, x->rank };
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_INT64, 2, dims, error);
  if (y == NULL)
    return FALSE;
  gint64 index[GRAFT_RT_MAX_RANK] = { 0 }, row = 0;
  gint64 *out = y->data;
  for (gint64 i = 0; i < x->numel; i++)
    {
      if (graft_rt_tensor_get_f64 (x, i) != 0)
        {
          memcpy (out + row * x->rank, index, x->rank * sizeof (gint64));
          row++;
        }
      graft_index_next (index, x->dims, x->rank);
    }
  return TRUE;
}

/* ---- shapes ---- */

static gboolean
kernel_unflatten (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[3];
  gint64 dim;
  GraftRtTensor *x = tensor_and_dim (ctx, args, 3, &dim, error);
  if (x == NULL)
    return FALSE;
  gint64 sizes[GRAFT_RT_MAX_RANK];
  guint n = 0;
  if (!graft_arg_ints (&args[2], sizes, GRAFT_RT_MAX_RANK, &n, 0, error))
    return FALSE;
  if (n == 0 || x->rank - 1 + (int) n > GRAFT_RT_MAX_RANK)
    return graft_kernel_fail (error, "aten::unflatten: %u sizes do not fit rank %d", n, x->rank);
  gint64 known = 1;
  int infer = -1;
  for (guint i = 0; i < n; i++)
    if (sizes[i] == -1 && infer < 0)
      infer = (int) i;
    else
      known *= sizes[i];
  if (infer >= 0 && known != 0)
    sizes[infer] = x->dims[dim] / known, known *= sizes[infer];
  if (known != x->dims[dim])
    return graft_kernel_fail (error, "aten::unflatten: sizes multiply to %" G_GINT64_FORMAT ", dim %" G_GINT64_FORMAT
                              " has %" G_GINT64_FORMAT, known, dim, x->dims[dim]);
  gint64 dims[GRAFT_RT_MAX_RANK];
  int rank = 0;
  for (int d = 0; d < x->rank; d++)
    if (d == dim)
      for (guint i = 0; i < n; i++)
        dims[rank++] = sizes[i];
    else
      dims[rank++] = x->dims[d];
  GraftRtTensor *y = graft_rt_tensor_reshape (x, rank, dims, error);
  if (y == NULL)
    return FALSE;
  graft_kernel_set_output (ctx, 0, y);
  return TRUE;
}

/* ---- indexing and scans (Hugging Face models) ---- */

/* embedding(weight, indices, padding_idx=-1, …): rows of weight. */
static gboolean
kernel_embedding (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[2];
  graft_aten_args (ctx, NULL, 2, args);
  GraftRtTensor *weight = graft_aten_need_tensor (&args[0], 0, error);
  GraftRtTensor *indices = weight ? graft_aten_need_tensor (&args[1], 1, error) : NULL;
  if (indices == NULL)
    return FALSE;
  if (weight->rank != 2 || indices->rank + 1 > GRAFT_RT_MAX_RANK)
    return graft_kernel_fail (error, "aten::embedding needs a 2-D weight");
  gint64 dims[GRAFT_RT_MAX_RANK];
  memcpy (dims, indices->dims, indices->rank * sizeof (gint64));
  dims[indices->rank] = weight->dims[1];
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, weight->dtype, indices->rank + 1, dims, error);
  if (y == NULL)
    return FALSE;
  for (gint64 i = 0; i < indices->numel; i++)
    {
      gint64 row = graft_rt_tensor_get_i64 (indices, i);
      if (row < 0 || row >= weight->dims[0])
        return graft_kernel_fail (error, "aten::embedding: index %" G_GINT64_FORMAT " is outside the %" G_GINT64_FORMAT
                                  " rows of the weight", row, weight->dims[0]);
      graft_copy_block (y, i * weight->dims[1], weight, row * weight->dims[1], weight->dims[1]);
    }
  return TRUE;
}

/* index.Tensor(self, indices): advanced indexing by k index tensors on
 * the first k dims (torch broadcasts them); no None entries. */
static gboolean
kernel_index (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = graft_kernel_input (ctx, 0);
  GraftRtTensor *list = graft_kernel_input (ctx, 1);
  if (x == NULL || list == NULL || list->kind != GRAFT_RT_SEQUENCE || list->items->len == 0 ||
      list->items->len > (guint) x->rank || list->items->len > 8)
    return graft_kernel_unsupported (error, "aten::index with other than 1 to 8 index tensors on the leading dims");
  guint k = list->items->len;
  const GraftRtTensor *indices[8];
  for (guint i = 0; i < k; i++)
    {
      indices[i] = g_ptr_array_index (list->items, i);
      if (indices[i]->kind != GRAFT_RT_TENSOR || indices[i]->dtype == GRAFT_DTYPE_BOOL)
        return graft_kernel_unsupported (error, "aten::index with None or boolean-mask indices");
    }
  /* the broadcast shape of the indices */
  int brank = 0;
  gint64 bdims[GRAFT_RT_MAX_RANK];
  for (guint i = 0; i < k; i++)
    brank = MAX (brank, indices[i]->rank);
  for (int d = 0; d < brank; d++)
    {
      bdims[d] = 1;
      for (guint i = 0; i < k; i++)
        {
          int at = d - (brank - indices[i]->rank);
          gint64 n = at >= 0 ? indices[i]->dims[at] : 1;
          if (n != 1 && bdims[d] != 1 && n != bdims[d])
            return graft_kernel_fail (error, "aten::index: index shapes do not broadcast");
          if (n != 1)
            bdims[d] = n;
        }
    }
  if (brank + x->rank - (int) k > GRAFT_RT_MAX_RANK)
    return graft_kernel_fail (error, "aten::index: result rank too large");
  gint64 dims[GRAFT_RT_MAX_RANK], inner = 1;
  memcpy (dims, bdims, brank * sizeof (gint64));
  for (int d = k; d < x->rank; d++)
    dims[brank + d - k] = x->dims[d], inner *= x->dims[d];
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, x->dtype, brank + x->rank - k, dims, error);
  if (y == NULL)
    return FALSE;
  gint64 outer = y->numel / MAX (inner, 1), index[GRAFT_RT_MAX_RANK] = { 0 };
  for (gint64 o = 0; o < outer; o++)
    {
      gint64 source = 0;
      for (guint i = 0; i < k; i++)
        {
          gint64 at = 0, stride = 1;
          for (int d = indices[i]->rank - 1; d >= 0; d--)
            {
              int bd = d + brank - indices[i]->rank;
              at += (indices[i]->dims[d] == 1 ? 0 : index[bd]) * stride;
              stride *= indices[i]->dims[d];
            }
          gint64 v = graft_rt_tensor_get_i64 (indices[i], at);
          if (v < 0)
            v += x->dims[i];
          if (v < 0 || v >= x->dims[i])
            return graft_kernel_fail (error, "aten::index: index %" G_GINT64_FORMAT " is outside dim %u of size %"
                                      G_GINT64_FORMAT, v, i, x->dims[i]);
          source = source * x->dims[i] + v;
        }
      graft_copy_block (y, o * inner, x, source * inner, inner);
      graft_index_next (index, bdims, brank);
    }
  return TRUE;
}

/* cumsum(self, dim, dtype=None); bool and integers sum as int64. */
static gboolean
kernel_cumsum (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[2];
  gint64 dim;
  GraftRtTensor *x = tensor_and_dim (ctx, args, 2, &dim, error);
  if (x == NULL)
    return FALSE;
  GraftDType dtype = graft_dtype_is_float (x->dtype) ? x->dtype : GRAFT_DTYPE_INT64;
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, dtype, x->rank, x->dims, error);
  if (y == NULL)
    return FALSE;
  gint64 inner = 1;
  for (int d = dim + 1; d < x->rank; d++)
    inner *= x->dims[d];
  gint64 n = x->dims[dim], outer = x->numel / MAX (n * inner, 1);
  for (gint64 o = 0; o < outer; o++)
    for (gint64 i = 0; i < inner; i++)
      {
        double sum = 0;
        for (gint64 j = 0; j < n; j++)
          {
            gint64 at = (o * n + j) * inner + i;
            sum += graft_rt_tensor_get_f64 (x, at);
            graft_rt_tensor_set_f64 (y, at, sum);
          }
      }
  return TRUE;
}

/* diff(self, n=1, dim=-1, prepend=None, append=None) for n = 1. */
static gboolean
kernel_diff (GraftKernelContext *ctx, GError **error)
{
  static const char *const names[] = { NULL, "n", "dim", "prepend", "append" };
  GraftAtenArg args[5];
  graft_aten_args (ctx, names, 5, args);
  GraftRtTensor *x = graft_aten_need_tensor (&args[0], 0, error);
  if (x == NULL)
    return FALSE;
  if (graft_arg_int (&args[1], 1) != 1)
    return graft_kernel_unsupported (error, "aten::diff with n ≠ 1");
  gint64 dim = graft_arg_int (&args[2], -1);
  if (!graft_normalize_axis (&dim, x->rank, error))
    return FALSE;
  GraftRtTensor *parts[3] = { graft_arg_tensor (&args[3]), x, graft_arg_tensor (&args[4]) };
  gint64 total = 0;
  for (guint p = 0; p < 3; p++)
    if (parts[p] != NULL)
      {
        if (parts[p]->rank != x->rank)
          return graft_kernel_fail (error, "aten::diff: prepend/append must have the input's rank");
        total += parts[p]->dims[dim];
      }
  if (total < 1)
    return graft_kernel_fail (error, "aten::diff of an empty dim");
  gint64 dims[GRAFT_RT_MAX_RANK];
  memcpy (dims, x->dims, x->rank * sizeof (gint64));
  dims[dim] = total - 1;
  GraftDType dtype = x->dtype == GRAFT_DTYPE_BOOL ? GRAFT_DTYPE_BOOL : x->dtype;
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, dtype, x->rank, dims, error);
  if (y == NULL)
    return FALSE;
  gint64 inner = 1;
  for (int d = dim + 1; d < x->rank; d++)
    inner *= x->dims[d];
  gint64 outer = y->numel / MAX (dims[dim] * inner, 1);
  g_autofree double *line = g_new (double, total);
  for (gint64 o = 0; o < outer; o++)
    for (gint64 i = 0; i < inner; i++)
      {
        gint64 j = 0;
        for (guint p = 0; p < 3; p++)
          for (gint64 t = 0; parts[p] && t < parts[p]->dims[dim]; t++)
            line[j++] = graft_rt_tensor_get_f64 (parts[p], (o * parts[p]->dims[dim] + t) * inner + i);
        for (gint64 t = 0; t + 1 < total; t++)
          graft_rt_tensor_set_f64 (y, (o * dims[dim] + t) * inner + i,
                                   dtype == GRAFT_DTYPE_BOOL ? (line[t + 1] != line[t]) : line[t + 1] - line[t]);
      }
  return TRUE;
}

/* new_ones(self, size, dtype=None, …): ones of size, self's dtype unless given. */
static gboolean
kernel_new_ones (GraftKernelContext *ctx, GError **error)
{
  static const char *const names[] = { NULL, "size", "dtype" };
  GraftAtenArg args[3];
  graft_aten_args (ctx, names, 3, args);
  GraftRtTensor *x = graft_aten_need_tensor (&args[0], 0, error);
  if (x == NULL)
    return FALSE;
  gint64 dims[GRAFT_RT_MAX_RANK];
  guint rank = 0;
  if (!graft_arg_ints (&args[1], dims, GRAFT_RT_MAX_RANK, &rank, 0, error))
    return FALSE;
  GraftDType dtype = graft_arg_is_none (&args[2]) ? x->dtype : graft_aten_scalar_type (graft_arg_int (&args[2], 6));
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, dtype, (int) rank, dims, error);
  if (y == NULL)
    return FALSE;
  for (gint64 i = 0; i < y->numel; i++)
    graft_rt_tensor_set_f64 (y, i, 1);
  return TRUE;
}

/* _assert_tensor_metadata(a, size, stride, dtype, …): export's check that
 * a value has the dtype it traced with. */
static gboolean
kernel_assert_tensor_metadata (GraftKernelContext *ctx, GError **error)
{
  static const char *const names[] = { NULL, "size", "stride", "dtype" };
  GraftAtenArg args[4];
  graft_aten_args (ctx, names, 4, args);
  GraftRtTensor *x = graft_aten_need_tensor (&args[0], 0, error);
  if (x == NULL)
    return FALSE;
  if (!graft_arg_is_none (&args[3]))
    {
      GraftDType want = graft_aten_scalar_type (graft_arg_int (&args[3], -1));
      if (want != GRAFT_DTYPE_UNDEFINED && want != x->dtype)
        return graft_kernel_fail (error, "%s: expected %s, got %s", ctx->node->name, graft_dtype_to_string (want),
                                  graft_dtype_to_string (x->dtype));
    }
  return TRUE;
}

/* ---- attention ---- */

typedef struct {
  const float *q, *k, *v, *mask_f;
  const guint8 *mask_b;
  float *out;
  gint64 L, S, E, Ev;
  gint64 mask_batch_stride;   /* 0 when the mask is shared by every batch */
  float scale;
  gboolean causal;
} Attention;

/* One query row r (batch r / L, position r % L). */
static void
attention_row (gint64 r, gpointer data)
{
  const Attention *a = data;
  g_autofree float *scores = g_new (float, a->S);
  gint64 b = r / a->L, i = r % a->L;
  const float *q = a->q + r * a->E;
  const float *k = a->k + b * a->S * a->E;
  const float *v = a->v + b * a->S * a->Ev;
  float best = -INFINITY;
  for (gint64 j = 0; j < a->S; j++)
    {
      float s = 0;
      for (gint64 e = 0; e < a->E; e++)
        s += q[e] * k[j * a->E + e];
      s *= a->scale;
      gint64 m = b * a->mask_batch_stride + i * a->S + j;
      if (a->mask_b && !a->mask_b[m])
        s = -INFINITY;
      else if (a->mask_f)
        s += a->mask_f[m];
      if (a->causal && j > i)
        s = -INFINITY;
      scores[j] = s;
      best = MAX (best, s);
    }
  float sum = 0;
  for (gint64 j = 0; j < a->S; j++)
    {
      scores[j] = best == -INFINITY ? 0 : expf (scores[j] - best);
      sum += scores[j];
    }
  float *out = a->out + r * a->Ev;
  memset (out, 0, a->Ev * sizeof (float));
  for (gint64 j = 0; j < a->S; j++)
    graft_f32_axpy (out, v + j * a->Ev, a->Ev, sum > 0 ? scores[j] / sum : 0);
}

/* scaled_dot_product_attention(query, key, value, attn_mask=None,
 * dropout_p=0, is_causal=False, scale=None, enable_gqa=False) for float32
 * tensors whose leading dims agree (no dropout at inference). */
static gboolean
kernel_scaled_dot_product_attention (GraftKernelContext *ctx, GError **error)
{
  static const char *const names[] = { NULL, NULL, NULL, "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa" };
  GraftAtenArg args[8];
  graft_aten_args (ctx, names, 8, args);
  GraftRtTensor *q = graft_aten_need_tensor (&args[0], 0, error);
  GraftRtTensor *k = q ? graft_aten_need_tensor (&args[1], 1, error) : NULL;
  GraftRtTensor *v = k ? graft_aten_need_tensor (&args[2], 2, error) : NULL;
  if (v == NULL)
    return FALSE;
  if (q->dtype != GRAFT_DTYPE_FLOAT32 || k->dtype != GRAFT_DTYPE_FLOAT32 || v->dtype != GRAFT_DTYPE_FLOAT32)
    return graft_kernel_unsupported (error, "scaled_dot_product_attention on %s (float32 only)",
                                     graft_dtype_to_string (q->dtype));
  int rank = q->rank;
  if (rank < 2 || k->rank != rank || v->rank != rank)
    return graft_kernel_fail (error, "scaled_dot_product_attention: query, key and value must have one rank ≥ 2");
  gint64 batch = 1;
  for (int d = 0; d < rank - 2; d++)
    {
      if (k->dims[d] != q->dims[d] || v->dims[d] != q->dims[d])
        return graft_kernel_unsupported (error, "scaled_dot_product_attention with broadcast batch dims");
      batch *= q->dims[d];
    }
  Attention a = {
    .q = graft_cf32 (q), .k = graft_cf32 (k), .v = graft_cf32 (v),
    .L = q->dims[rank - 2], .S = k->dims[rank - 2], .E = q->dims[rank - 1], .Ev = v->dims[rank - 1],
    .causal = graft_arg_int (&args[5], 0) != 0,
  };
  if (k->dims[rank - 1] != a.E || v->dims[rank - 2] != a.S)
    return graft_kernel_fail (error, "scaled_dot_product_attention: key/value shapes do not match the query");
  a.scale = graft_arg_is_none (&args[6]) ? 1.0f / sqrtf ((float) a.E) : (float) graft_arg_double (&args[6], 1);
  GraftRtTensor *mask = graft_arg_tensor (&args[3]);
  if (mask != NULL)
    {
      if (mask->numel != a.L * a.S && mask->numel != batch * a.L * a.S)
        return graft_kernel_unsupported (error, "scaled_dot_product_attention with a mask of %" G_GINT64_FORMAT
                                         " elements (L×S or batch×L×S only)", mask->numel);
      a.mask_batch_stride = mask->numel == a.L * a.S ? 0 : a.L * a.S;
      if (mask->dtype == GRAFT_DTYPE_BOOL)
        a.mask_b = mask->data;
      else if (mask->dtype == GRAFT_DTYPE_FLOAT32)
        a.mask_f = graft_cf32 (mask);
      else
        return graft_kernel_unsupported (error, "scaled_dot_product_attention with a %s mask",
                                         graft_dtype_to_string (mask->dtype));
    }
  gint64 dims[GRAFT_RT_MAX_RANK];
  memcpy (dims, q->dims, rank * sizeof (gint64));
  dims[rank - 1] = a.Ev;
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_FLOAT32, rank, dims, error);
  if (y == NULL)
    return FALSE;
  a.out = graft_f32 (y);
  graft_kernel_parallel_for (ctx, batch * a.L, attention_row, &a);
  return TRUE;
}

#define OP(name, kernel) { name, 0, 0, NULL, kernel, 0 }

const GraftOpSchema graft_ops_aten_export[] = {
  OP ("aten::sym_size", kernel_sym_size),
  OP ("aten::_assert_scalar", kernel_assert_scalar),
  OP ("aten::sym_constrain_range", kernel_constrain_range),
  OP ("aten::sym_constrain_range_for_size", kernel_constrain_range),
  OP ("aten::_functional_sym_constrain_range", kernel_constrain_range),
  OP ("aten::_functional_sym_constrain_range_for_size", kernel_constrain_range),
  OP ("aten::nonzero", kernel_nonzero),
  OP ("aten::unflatten", kernel_unflatten),
  OP ("aten::embedding", kernel_embedding),
  OP ("aten::index", kernel_index),
  OP ("aten::cumsum", kernel_cumsum),
  OP ("aten::diff", kernel_diff),
  OP ("aten::new_ones", kernel_new_ones),
  OP ("aten::_assert_tensor_metadata", kernel_assert_tensor_metadata),
  OP ("aten::scaled_dot_product_attention", kernel_scaled_dot_product_attention),
  OP ("_operator::add", kernel_python_operator), OP ("_operator::sub", kernel_python_operator),
  OP ("_operator::mul", kernel_python_operator), OP ("_operator::floordiv", kernel_python_operator),
  OP ("_operator::mod", kernel_python_operator), OP ("_operator::truediv", kernel_python_operator),
  OP ("_operator::eq", kernel_python_operator), OP ("_operator::ne", kernel_python_operator),
  OP ("_operator::lt", kernel_python_operator), OP ("_operator::le", kernel_python_operator),
  OP ("_operator::gt", kernel_python_operator), OP ("_operator::ge", kernel_python_operator),
  { NULL }
};
