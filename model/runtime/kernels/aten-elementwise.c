/* aten:: arithmetic, comparisons, clamps, softmax, reductions and the
 * inference no-ops (dropout, contiguous), with PyTorch's type promotion:
 * a number (constant argument or 0-d value) adopts the dtype of a
 * dimensioned tensor of the same category; int with float gives float. */
#include <math.h>
#include <string.h>
#include "runtime/kernels/aten-args.h"

typedef enum {
  B_ADD, B_SUB, B_MUL, B_DIV, B_FLOORDIV, B_REM, B_EQ, B_NE, B_LT, B_GT, B_LE, B_GE, B_MAX, B_MIN,
  B_TRUEDIV_TRUNC, B_TRUEDIV_FLOOR, B_POW, B_N
} BinOp;

static const struct { const char *name; BinOp op; } bin_names[] = {
  { "add", B_ADD }, { "add_", B_ADD }, { "sub", B_SUB }, { "sub_", B_SUB }, { "rsub", B_SUB },
  { "mul", B_MUL }, { "mul_", B_MUL }, { "div", B_DIV }, { "div_", B_DIV }, { "floor_divide", B_FLOORDIV },
  { "floordiv", B_FLOORDIV }, { "remainder", B_REM }, { "eq", B_EQ }, { "ne", B_NE }, { "lt", B_LT },
  { "gt", B_GT }, { "le", B_LE }, { "ge", B_GE }, { "maximum", B_MAX }, { "minimum", B_MIN },
  { "pow", B_POW },
};

static gboolean
is_compare (BinOp op)
{
  return op >= B_EQ && op <= B_GE;
}

static int
category (GraftDType t)
{
  return t == GRAFT_DTYPE_BOOL ? 0 : graft_dtype_is_float (t) ? 2 : 1;
}

/* PyTorch's result type for a op b. */
static GraftDType
promote (const GraftRtTensor *a, const GraftRtTensor *b)
{
  int ca = category (a->dtype), cb = category (b->dtype);
  gboolean da = a->rank > 0, db = b->rank > 0;
  if (da != db)
    {
      const GraftRtTensor *dim = da ? a : b, *num = da ? b : a;
      if (category (num->dtype) <= category (dim->dtype))
        return dim->dtype;
      return category (num->dtype) == 2 ? GRAFT_DTYPE_FLOAT32 : GRAFT_DTYPE_INT64;
    }
  if (ca != cb)
    return ca > cb ? a->dtype : b->dtype;
  if (a->dtype == b->dtype)
    return a->dtype;
  return graft_dtype_get_size (a->dtype) >= graft_dtype_get_size (b->dtype) ? a->dtype : b->dtype;
}

static double
apply_f (BinOp op, double x, double y)
{
  switch (op)
    {
    case B_ADD: return x + y;
    case B_SUB: return x - y;
    case B_MUL: return x * y;
    case B_DIV: return x / y;
    case B_FLOORDIV: return floor (x / y);
    case B_REM: { double r = fmod (x, y); return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r; }
    case B_EQ: return x == y;
    case B_NE: return x != y;
    case B_LT: return x < y;
    case B_GT: return x > y;
    case B_LE: return x <= y;
    case B_GE: return x >= y;
    case B_MAX: return x > y ? x : y;
    case B_MIN: return x < y ? x : y;
    case B_TRUEDIV_TRUNC: return trunc (x / y);
    case B_TRUEDIV_FLOOR: return floor (x / y);
    case B_POW: return pow (x, y);
    default: return 0;
    }
}

static gint64
apply_i (BinOp op, gint64 x, gint64 y, gboolean *div_zero)
{
  switch (op)
    {
    case B_ADD: return (gint64) ((guint64) x + (guint64) y);
    case B_SUB: return (gint64) ((guint64) x - (guint64) y);
    case B_MUL: return (gint64) ((guint64) x * (guint64) y);
    case B_FLOORDIV:
    case B_TRUEDIV_FLOOR:
    case B_TRUEDIV_TRUNC:
    case B_REM:
      {
        if (y == 0 || (x == G_MININT64 && y == -1))
          {
            *div_zero = TRUE;
            return 0;
          }
        gint64 q = x / y, r = x % y;
        if (op == B_TRUEDIV_TRUNC)
          return q;
        if (r != 0 && ((r < 0) != (y < 0)))
          {
            q--;
            r += y;
          }
        return op == B_REM ? r : q;
      }
    case B_EQ: return x == y;
    case B_NE: return x != y;
    case B_LT: return x < y;
    case B_GT: return x > y;
    case B_LE: return x <= y;
    case B_GE: return x >= y;
    case B_MAX: return x > y ? x : y;
    case B_MIN: return x < y ? x : y;
    case B_POW:
      {
        /* integer powers wrap like PyTorch's; a negative exponent is an
         * error there, 0 here (1 for a base of ±1) */
        guint64 result = 1, base = (guint64) x;
        if (y < 0)
          return x == 1 ? 1 : x == -1 ? ((y & 1) ? -1 : 1) : 0;
        for (; y > 0; y >>= 1, base *= base)
          if (y & 1)
            result *= base;
        return (gint64) result;
      }
    default: return 0;
    }
}

typedef struct { BinOp op; } RunData;

static void
run_f32 (const void *pa, gint64 sa, const void *pb, gint64 sb, void *po, gint64 n, gconstpointer user_data)
{
  const RunData *d = user_data;
  const float *a = pa, *b = pb;
  float *o = po;
  switch (d->op)
    {
    case B_ADD:
      for (gint64 i = 0; i < n; i++) o[i] = a[i * sa] + b[i * sb];
      break;
    case B_SUB:
      for (gint64 i = 0; i < n; i++) o[i] = a[i * sa] - b[i * sb];
      break;
    case B_MUL:
      for (gint64 i = 0; i < n; i++) o[i] = a[i * sa] * b[i * sb];
      break;
    case B_DIV:
      for (gint64 i = 0; i < n; i++) o[i] = a[i * sa] / b[i * sb];
      break;
    case B_POW:
      /* x.pow(2) of RMSNorm: one exponent for the whole run */
      if (sa == 1 && sb == 0)
        {
          graft_f32_pow_scalar (a, b[0], o, n);
          break;
        }
      for (gint64 i = 0; i < n; i++) o[i] = (float) apply_f (d->op, a[i * sa], b[i * sb]);
      break;
    default:
      for (gint64 i = 0; i < n; i++) o[i] = (float) apply_f (d->op, a[i * sa], b[i * sb]);
      break;
    }
}

static gboolean
broadcast_dims (const GraftRtTensor *a, const GraftRtTensor *b, int *rank, gint64 *dims, GError **error)
{
  int r = MAX (a->rank, b->rank);
  for (int i = 0; i < r; i++)
    {
      int ia = i - (r - a->rank), ib = i - (r - b->rank);
      gint64 da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
      if (da != db && da != 1 && db != 1)
        return graft_kernel_fail (error, "shapes do not broadcast (dimension %d: %" G_GINT64_FORMAT " vs %"
                                  G_GINT64_FORMAT ")", i, da, db);
      dims[i] = da == 1 ? db : da;
    }
  *rank = r;
  return TRUE;
}

/* out = a op (alpha * b) in dtype compute, result dtype out_dtype */
static GraftRtTensor *
binary (GraftKernelContext *ctx, BinOp op, GraftRtTensor *a, GraftRtTensor *b, double alpha, GError **error)
{
  GraftDType compute = promote (a, b);
  if (op == B_DIV && category (compute) < 2)
    compute = (a->rank > 0 || b->rank > 0) ? GRAFT_DTYPE_FLOAT32 : GRAFT_DTYPE_FLOAT64;
  if (compute == GRAFT_DTYPE_BOOL && !is_compare (op) && op != B_MAX && op != B_MIN)
    compute = GRAFT_DTYPE_INT64;
  GraftDType out_dtype = is_compare (op) ? GRAFT_DTYPE_BOOL : compute;
  int rank = 0;
  gint64 dims[GRAFT_RT_MAX_RANK];
  if (!broadcast_dims (a, b, &rank, dims, error))
    return NULL;
  g_autoptr(GraftRtTensor) ca = graft_aten_as_dtype (a, compute, error);
  if (ca == NULL)
    return NULL;
  g_autoptr(GraftRtTensor) cb = graft_aten_as_dtype (b, compute, error);
  if (cb == NULL)
    return NULL;
  if (alpha != 1.0)
    {
      GraftRtTensor *scaled = graft_rt_tensor_copy (cb, error);
      if (scaled == NULL)
        return NULL;
      for (gint64 i = 0; i < scaled->numel; i++)
        graft_rt_tensor_set_f64 (scaled, i, alpha * graft_rt_tensor_get_f64 (scaled, i));
      graft_rt_tensor_unref (cb);
      cb = scaled;
    }
  GraftRtTensor *out = graft_rt_tensor_new (out_dtype, rank, dims, error);
  if (out == NULL)
    return NULL;
  if (compute == GRAFT_DTYPE_FLOAT32 && out_dtype == GRAFT_DTYPE_FLOAT32)
    {
      RunData d = { op };
      graft_broadcast_binary (ca, cb, out, run_f32, &d);
      return out;
    }
  const GraftRtTensor *ins[2] = { ca, cb };
  GraftBroadcastIter it;
  graft_broadcast_iter_init (&it, out, ins, 2);
  gboolean is_float = category (compute) == 2, div_zero = FALSE;
  for (gint64 i = 0; i < out->numel; i++, graft_broadcast_iter_next (&it))
    {
      if (is_float)
        graft_rt_tensor_set_f64 (out, i, apply_f (op, graft_rt_tensor_get_f64 (ca, it.offsets[0]),
                                                  graft_rt_tensor_get_f64 (cb, it.offsets[1])));
      else
        graft_rt_tensor_set_i64 (out, i, apply_i (op, graft_rt_tensor_get_i64 (ca, it.offsets[0]),
                                                  graft_rt_tensor_get_i64 (cb, it.offsets[1]), &div_zero));
    }
  if (div_zero)
    {
      graft_rt_tensor_unref (out);
      graft_kernel_fail (error, "integer division by zero");
      return NULL;
    }
  (void) ctx;
  return out;
}

gboolean
graft_aten_binary_promoted (GraftKernelContext *ctx, GError **error)
{
  BinOp op = B_N;
  for (guint i = 0; i < G_N_ELEMENTS (bin_names); i++)
    if (strcmp (ctx->node->op_type, bin_names[i].name) == 0)
      op = bin_names[i].op;
  /* div's third argument is rounding_mode (a str), the others' alpha */
  static const char *const names[] = { "self", "other", "alpha" };
  static const char *const div_names[] = { "self", "other", "rounding_mode" };
  GraftAtenArg args[3];
  graft_aten_args (ctx, op == B_DIV ? div_names : names, 3, args);
  g_autoptr(GraftRtTensor) a = graft_arg_value (&args[0], error);
  if (a == NULL)
    return FALSE;
  g_autoptr(GraftRtTensor) b = graft_arg_value (&args[1], error);
  if (b == NULL)
    return FALSE;
  if (a->kind != GRAFT_RT_TENSOR || b->kind != GRAFT_RT_TENSOR)
    {
      /* list == list, None comparisons */
      if ((op == B_EQ || op == B_NE) && a->kind == GRAFT_RT_SEQUENCE && b->kind == GRAFT_RT_SEQUENCE)
        {
          gboolean same = a->items->len == b->items->len;
          for (guint i = 0; same && i < a->items->len; i++)
            same = graft_rt_tensor_get_f64 (a->items->pdata[i], 0) == graft_rt_tensor_get_f64 (b->items->pdata[i], 0);
          graft_kernel_set_output (ctx, 0, graft_aten_new_bool (op == B_EQ ? same : !same));
          return TRUE;
        }
      /* list + list: a new list, the items of self then other's */
      if (op == B_ADD && a->kind == GRAFT_RT_SEQUENCE && b->kind == GRAFT_RT_SEQUENCE)
        {
          GraftRtTensor *joined = graft_rt_tensor_new_sequence (a->dtype);
          for (guint i = 0; i < a->items->len; i++)
            g_ptr_array_add (joined->items, graft_rt_tensor_ref (a->items->pdata[i]));
          for (guint i = 0; i < b->items->len; i++)
            g_ptr_array_add (joined->items, graft_rt_tensor_ref (b->items->pdata[i]));
          graft_kernel_set_output (ctx, 0, joined);
          return TRUE;
        }
      return graft_kernel_unsupported (error, "%s on %s values", ctx->node->op,
                                       a->kind != GRAFT_RT_TENSOR ? "non-tensor" : "non-tensor");
    }
  /* str + str in scripted code (an assertion's message) */
  if (op == B_ADD && (a->dtype == GRAFT_DTYPE_STRING || b->dtype == GRAFT_DTYPE_STRING))
    {
      char *owned_a = NULL, *owned_b = NULL;
      const char *text_a = graft_arg_string (&args[0], &owned_a), *text_b = graft_arg_string (&args[1], &owned_b);
      g_autofree char *free_a = owned_a, *free_b = owned_b;
      if (text_a == NULL || text_b == NULL)
        return graft_kernel_unsupported (error, "%s of text and a number", ctx->node->op);
      graft_kernel_set_output (ctx, 0, graft_aten_new_string (g_strconcat (text_a, text_b, NULL)));
      return TRUE;
    }
  if (strcmp (ctx->node->op_type, "rsub") == 0)
    {
      GraftRtTensor *t = a;
      a = b;
      b = t;
    }
  if (op == B_DIV)
    {
      g_autofree char *owned_mode = NULL;
      const char *mode = graft_arg_string (&args[2], &owned_mode);
      if (mode && strcmp (mode, "trunc") == 0)
        op = B_TRUEDIV_TRUNC;
      else if (mode && strcmp (mode, "floor") == 0)
        op = B_TRUEDIV_FLOOR;
      if (op != B_DIV && category (promote (a, b)) < 2)
        {
          /* integer division keeps the integer type */
          GraftRtTensor *out = binary (ctx, B_FLOORDIV, a, b, 1.0, error);
          if (out == NULL)
            return FALSE;
          if (op == B_TRUEDIV_TRUNC)
            {
              g_autoptr(GraftRtTensor) q = binary (ctx, B_TRUEDIV_TRUNC, a, b, 1.0, error);
              graft_rt_tensor_unref (out);
              if (q == NULL)
                return FALSE;
              out = graft_rt_tensor_ref (q);
            }
          graft_kernel_set_output (ctx, 0, out);
          return TRUE;
        }
    }
  double alpha = graft_arg_double (&args[2], 1.0);
  GraftRtTensor *out = binary (ctx, op, a, b, (op == B_ADD || op == B_SUB) ? alpha : 1.0, error);
  if (out == NULL)
    return FALSE;
  graft_kernel_set_output (ctx, 0, out);
  return TRUE;
}

/* ---- clamp / hardtanh ---- */


/* ---- softmax ---- */


/* ---- dropout, contiguous, detach: identity at inference ---- */

static gboolean
kernel_identity (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[1];
  graft_aten_args (ctx, NULL, 1, args);
  GraftRtTensor *x = graft_aten_need_tensor (&args[0], 0, error);
  if (x == NULL)
    return FALSE;
  graft_kernel_set_output (ctx, 0, graft_rt_tensor_ref (x));
  return TRUE;
}

/* ---- reductions: sum, mean, max/min (all or along dims) ---- */

typedef enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_ANY, R_ALL } RedOp;

static gboolean
reduce (GraftKernelContext *ctx, RedOp op, GraftRtTensor *x, const gboolean *reduced, gboolean keepdim,
        GraftDType dtype, gboolean want_indices, GError **error)
{
  gint64 odims[GRAFT_RT_MAX_RANK], kdims[GRAFT_RT_MAX_RANK];
  int orank = 0;
  for (int d = 0; d < x->rank; d++)
    {
      kdims[d] = reduced[d] ? 1 : x->dims[d];
      if (!reduced[d] || keepdim)
        odims[orank++] = kdims[d];
    }
  gint64 ostrides[GRAFT_RT_MAX_RANK];
  graft_rt_strides (x->rank, kdims, ostrides);
  gint64 onumel = graft_dims_product (kdims, 0, x->rank);
  g_autofree double *acc = g_new0 (double, MAX (onumel, 1));
  g_autofree gint64 *arg = g_new0 (gint64, MAX (onumel, 1));
  g_autofree gint64 *count = g_new0 (gint64, MAX (onumel, 1));
  gint64 index[GRAFT_RT_MAX_RANK] = { 0 };
  gint64 rsize = onumel ? x->numel / onumel : 0;
  const float *pf = x->dtype == GRAFT_DTYPE_FLOAT32 ? x->data : NULL;
  for (gint64 i = 0; i < x->numel; i++)
    {
      gint64 o = 0, r = 0, rs = 1;
      for (int d = x->rank - 1; d >= 0; d--)
        {
          if (!reduced[d])
            o += index[d] * ostrides[d];
          else
            {
              r += index[d] * rs;
              rs *= x->dims[d];
            }
        }
      double v = pf ? pf[i] : graft_rt_tensor_get_f64 (x, i);
      if (count[o] == 0)
        {
          acc[o] = op == R_SUM || op == R_MEAN ? v : op == R_ANY ? (v != 0) : op == R_ALL ? (v != 0) : v;
          arg[o] = r;
        }
      else
        switch (op)
          {
          case R_SUM:
          case R_MEAN: acc[o] += v; break;
          case R_MAX: if (v > acc[o] || isnan (v)) { acc[o] = v; arg[o] = r; } break;
          case R_MIN: if (v < acc[o] || isnan (v)) { acc[o] = v; arg[o] = r; } break;
          case R_ANY: acc[o] = acc[o] || v != 0; break;
          case R_ALL: acc[o] = acc[o] && v != 0; break;
          }
      count[o]++;
      graft_index_next (index, x->dims, x->rank);
    }
  if (onumel > 0 && rsize == 0 && (op == R_MAX || op == R_MIN))
    return graft_kernel_fail (error, "max()/min() of an empty tensor");
  GraftRtTensor *out = graft_rt_tensor_new (dtype, orank, odims, error);
  if (out == NULL)
    return FALSE;
  for (gint64 o = 0; o < onumel; o++)
    graft_rt_tensor_set_f64 (out, o, op == R_MEAN ? acc[o] / (double) rsize : acc[o]);
  graft_kernel_set_output (ctx, 0, out);
  if (want_indices)
    {
      GraftRtTensor *idx = graft_rt_tensor_new (GRAFT_DTYPE_INT64, orank, odims, error);
      if (idx == NULL)
        return FALSE;
      for (gint64 o = 0; o < onumel; o++)
        ((gint64 *) idx->data)[o] = arg[o];
      graft_kernel_set_output (ctx, 1, idx);
    }
  return TRUE;
}

static gboolean
kernel_reduce (GraftKernelContext *ctx, GError **error)
{
  const char *name = ctx->node->op_type;
  RedOp op = strcmp (name, "sum") == 0 ? R_SUM : strcmp (name, "mean") == 0 ? R_MEAN
             : strcmp (name, "max") == 0 ? R_MAX : strcmp (name, "min") == 0 ? R_MIN
             : strcmp (name, "any") == 0 ? R_ANY : R_ALL;
  GraftAtenArg args[4];
  graft_aten_args (ctx, NULL, 4, args);
  if ((op == R_ANY || op == R_ALL) && args[0].value && args[0].value->kind == GRAFT_RT_SEQUENCE)
    {
      GraftRtTensor *list = args[0].value;
      gboolean r = op == R_ALL;
      for (guint i = 0; i < list->items->len; i++)
        {
          gboolean v = graft_rt_tensor_get_f64 (list->items->pdata[i], 0) != 0;
          r = op == R_ALL ? r && v : r || v;
        }
      graft_kernel_set_output (ctx, 0, graft_aten_new_bool (r));
      return TRUE;
    }
  GraftRtTensor *x = graft_aten_need_tensor (&args[0], 0, error);
  if (x == NULL)
    return FALSE;
  GraftRtTensor *other = graft_arg_tensor (&args[1]);
  if ((op == R_MAX || op == R_MIN) && other && ctx->n_outputs == 1)
    {
      /* max(self, other) / min(self, other), one output (max.dim has two): elementwise */
      GraftRtTensor *out = binary (ctx, op == R_MAX ? B_MAX : B_MIN, x, other, 1.0, error);
      if (out == NULL)
        return FALSE;
      graft_kernel_set_output (ctx, 0, out);
      return TRUE;
    }
  gboolean reduced[GRAFT_RT_MAX_RANK];
  gboolean keepdim = FALSE, all = graft_arg_is_none (&args[1]);
  GraftDType dtype = x->dtype;
  if (op == R_SUM && category (dtype) < 2)
    dtype = GRAFT_DTYPE_INT64;
  if (op == R_ANY || op == R_ALL)
    dtype = GRAFT_DTYPE_BOOL;
  for (int d = 0; d < x->rank; d++)
    reduced[d] = all;
  if (!all)
    {
      gint64 dims[GRAFT_RT_MAX_RANK];
      guint n;
      if (!graft_arg_ints (&args[1], dims, GRAFT_RT_MAX_RANK, &n, 0, error))
        return FALSE;
      if (n == 0)
        for (int d = 0; d < x->rank; d++)
          reduced[d] = TRUE;
      for (guint k = 0; k < n; k++)
        {
          if (!graft_normalize_axis (&dims[k], MAX (x->rank, 1), error))
            return FALSE;
          if (x->rank)
            reduced[dims[k]] = TRUE;
        }
      keepdim = graft_arg_int (&args[2], 0) != 0;
      if ((op == R_SUM || op == R_MEAN) && !graft_arg_is_none (&args[3]))
        dtype = graft_dtype_from_torch_scalar_type (graft_arg_int (&args[3], 6));
    }
  else if ((op == R_SUM || op == R_MEAN) && ctx->n_inputs == 1 && graft_node_has_attr (ctx->node, "dtype") &&
           graft_node_get_attribute (ctx->node, "dtype")->type == GRAFT_ATTR_INT)
    dtype = graft_dtype_from_torch_scalar_type (graft_node_attr_int (ctx->node, "dtype", 6));
  gboolean indices = (op == R_MAX || op == R_MIN) && !all && ctx->n_outputs > 1;
  return reduce (ctx, op, x, reduced, keepdim, dtype, indices, error);
}

/* ---- logical ops, masked_fill, to, is_floating_point ---- */

/* logical_not/and/or/xor: truth values of any dtype, a bool result.
 * __and__ / __or__ / __xor__ and bitwise_*: logical on bools, bitwise on
 * integers, for Python scalars and (broadcast) tensors alike. */
static gboolean
kernel_logical (GraftKernelContext *ctx, GError **error)
{
  const char *op = ctx->node->op_type;
  gboolean logical = g_str_has_prefix (op, "logical_");
  op += logical ? strlen ("logical_") : g_str_has_prefix (op, "bitwise_") ? strlen ("bitwise_") : strlen ("__");
  GraftAtenArg args[2];
  graft_aten_args (ctx, NULL, 2, args);
  g_autoptr(GraftRtTensor) a = graft_arg_value (&args[0], error);
  if (a == NULL)
    return FALSE;
  gboolean unary = strcmp (op, "not") == 0;
  g_autoptr(GraftRtTensor) b = unary ? graft_rt_tensor_ref (a) : graft_arg_value (&args[1], error);
  if (b == NULL)
    return FALSE;
  if (a->kind != GRAFT_RT_TENSOR || b->kind != GRAFT_RT_TENSOR)
    return graft_kernel_fail (error, "%s needs tensors", ctx->node->op);
  if (!logical && (graft_dtype_is_float (a->dtype) || graft_dtype_is_float (b->dtype)))
    return graft_kernel_fail (error, "%s needs bool or integer values", ctx->node->op);
  GraftDType dtype = GRAFT_DTYPE_BOOL;
  if (!logical && (a->dtype != GRAFT_DTYPE_BOOL || b->dtype != GRAFT_DTYPE_BOOL))
    dtype = promote (a, b) == GRAFT_DTYPE_BOOL ? GRAFT_DTYPE_INT64 : promote (a, b);
  int rank = 0;
  gint64 dims[GRAFT_RT_MAX_RANK];
  if (!broadcast_dims (a, b, &rank, dims, error))
    return FALSE;
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, dtype, rank, dims, error);
  if (y == NULL)
    return FALSE;
  const GraftRtTensor *ins[2] = { a, b };
  GraftBroadcastIter it;
  graft_broadcast_iter_init (&it, y, ins, 2);
  for (gint64 i = 0; i < y->numel; i++, graft_broadcast_iter_next (&it))
    {
      gint64 x, z;
      if (logical)
        {
          x = graft_rt_tensor_get_f64 (a, it.offsets[0]) != 0;
          z = graft_rt_tensor_get_f64 (b, it.offsets[1]) != 0;
        }
      else
        {
          x = graft_rt_tensor_get_i64 (a, it.offsets[0]);
          z = graft_rt_tensor_get_i64 (b, it.offsets[1]);
        }
      gint64 inverse = logical || dtype == GRAFT_DTYPE_BOOL ? !x : ~x;
      graft_rt_tensor_set_i64 (y, i, unary ? inverse : op[0] == 'a' ? (x & z) : op[0] == 'o' ? (x | z) : (x ^ z));
    }
  return TRUE;
}

/* clamp(self, min=None, max=None), clamp_min / clamp_max(self, bound) and
 * hardtanh(self, min_val=-1, max_val=1):
 * the bounds are usually constants, which the builder keeps as attributes */
static gboolean
kernel_clamp (GraftKernelContext *ctx, GError **error)
{
  gboolean hardtanh = g_str_has_prefix (ctx->node->op_type, "hardtanh");
  GraftAtenArg args[3];
  graft_aten_args (ctx, NULL, 3, args);
  GraftRtTensor *x = graft_aten_need_tensor (&args[0], 0, error);
  if (x == NULL)
    return FALSE;
  if (graft_arg_tensor (&args[1]) && graft_arg_tensor (&args[1])->numel > 1)
    return graft_kernel_unsupported (error, "%s with tensor bounds", ctx->node->op);
  if (graft_arg_tensor (&args[2]) && graft_arg_tensor (&args[2])->numel > 1)
    return graft_kernel_unsupported (error, "%s with tensor bounds", ctx->node->op);
  double lo = graft_arg_is_none (&args[1]) ? (hardtanh ? -1 : -INFINITY) : graft_arg_double (&args[1], 0);
  double hi = graft_arg_is_none (&args[2]) ? (hardtanh ? 1 : INFINITY) : graft_arg_double (&args[2], 0);
  /* clamp_min(self, min) / clamp_max(self, max): one bound */
  if (g_str_has_prefix (ctx->node->op_type, "clamp_min"))
    hi = INFINITY;
  else if (g_str_has_prefix (ctx->node->op_type, "clamp_max"))
    hi = lo, lo = -INFINITY;
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, x->dtype, x->rank, x->dims, error);
  if (y == NULL)
    return FALSE;
  if (x->dtype == GRAFT_DTYPE_FLOAT32)
    {
      memcpy (y->data, x->data, x->nbytes);
      graft_f32_clamp (y->data, y->numel, (float) lo, (float) hi);
      return TRUE;
    }
  for (gint64 i = 0; i < x->numel; i++)
    {
      double v = graft_rt_tensor_get_f64 (x, i);
      graft_rt_tensor_set_f64 (y, i, v < lo ? lo : v > hi ? hi : v);
    }
  return TRUE;
}

/* masked_fill(self, mask, value): value where mask is true */
static gboolean
kernel_masked_fill (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[3];
  graft_aten_args (ctx, NULL, 3, args);
  GraftRtTensor *x = graft_aten_need_tensor (&args[0], 0, error);
  GraftRtTensor *mask = x ? graft_aten_need_tensor (&args[1], 1, error) : NULL;
  if (mask == NULL)
    return FALSE;
  int rank = 0;
  gint64 dims[GRAFT_RT_MAX_RANK];
  if (!broadcast_dims (x, mask, &rank, dims, error))
    return FALSE;
  gboolean fits = rank == x->rank;
  for (int d = 0; fits && d < rank; d++)
    fits = dims[d] == x->dims[d];
  if (!fits)
    return graft_kernel_fail (error, "the mask does not broadcast to the tensor's shape");
  double value = graft_arg_double (&args[2], 0);
  GraftRtTensor *y = graft_rt_tensor_copy (x, error);
  if (y == NULL)
    return FALSE;
  const GraftRtTensor *ins[2] = { y, mask };
  GraftBroadcastIter it;
  graft_broadcast_iter_init (&it, y, ins, 2);
  if (y->dtype == GRAFT_DTYPE_FLOAT32 && (mask->dtype == GRAFT_DTYPE_BOOL || mask->dtype == GRAFT_DTYPE_UINT8) &&
      y->rank > 0 && y->numel > 0)
    {
      /* a row at a time (DeBERTa's attention masks: an element at a
       * time through doubles took four times a Where's time) */
      gint64 inner = y->dims[y->rank - 1], step = it.strides[1][y->rank - 1];
      float fill = (float) value;
      for (gint64 row = 0; row < y->numel; row += inner, graft_broadcast_iter_next_row (&it))
        {
          const guint8 *m = (const guint8 *) mask->data + it.offsets[1];
          float *out = (float *) y->data + row;
          for (gint64 i = 0; i < inner; i++)
            if (m[i * step])
              out[i] = fill;
        }
      graft_kernel_set_output (ctx, 0, y);
      return TRUE;
    }
  for (gint64 i = 0; i < y->numel; i++, graft_broadcast_iter_next (&it))
    if (graft_rt_tensor_get_f64 (mask, it.offsets[1]) != 0)
      graft_rt_tensor_set_f64 (y, i, value);
  graft_kernel_set_output (ctx, 0, y);
  return TRUE;
}

/* where(condition, self, other): self where condition holds, else other,
 * the three broadcast together; self and other promote as in add, two
 * Python numbers give the default dtype (float32) or int64. */
static gboolean
kernel_where (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[3];
  graft_aten_args (ctx, NULL, 3, args);
  GraftRtTensor *cond = graft_aten_need_tensor (&args[0], 0, error);
  if (cond == NULL)
    return FALSE;
  if (args[1].attr == NULL && args[1].value == NULL)
    return graft_kernel_unsupported (error, "aten::where(condition) with one argument (nonzero as a tuple)");
  g_autoptr(GraftRtTensor) a = graft_arg_value (&args[1], error);
  if (a == NULL)
    return FALSE;
  g_autoptr(GraftRtTensor) b = graft_arg_value (&args[2], error);
  if (b == NULL)
    return FALSE;
  if (a->kind != GRAFT_RT_TENSOR || b->kind != GRAFT_RT_TENSOR)
    return graft_kernel_fail (error, "where needs tensors or numbers for self and other");
  GraftDType dtype = promote (a, b);
  if (args[1].attr && args[2].attr && a->rank == 0 && b->rank == 0 && category (dtype) == 2)
    dtype = GRAFT_DTYPE_FLOAT32;
  /* a Python number (a constant argument) does not raise a tensor's dtype
   * within its category, 0-d tensors included: torch.where (mask, a
   * float32 0-d tensor, float min), a transformer's mask, is float32 */
  else if (args[2].attr && !args[1].attr && category (b->dtype) <= category (a->dtype))
    dtype = a->dtype;
  else if (args[1].attr && !args[2].attr && category (a->dtype) <= category (b->dtype))
    dtype = b->dtype;
  int rank = 0, rank2 = 0;
  gint64 dims[GRAFT_RT_MAX_RANK], dims2[GRAFT_RT_MAX_RANK];
  if (!broadcast_dims (a, b, &rank, dims, error))
    return FALSE;
  GraftRtTensor shape = { .kind = GRAFT_RT_TENSOR, .rank = rank };
  memcpy (shape.dims, dims, sizeof (gint64) * rank);
  if (!broadcast_dims (cond, &shape, &rank2, dims2, error))
    return FALSE;
  g_autoptr(GraftRtTensor) ca = graft_aten_as_dtype (a, dtype, error);
  g_autoptr(GraftRtTensor) cb = ca ? graft_aten_as_dtype (b, dtype, error) : NULL;
  if (cb == NULL)
    return FALSE;
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, dtype, rank2, dims2, error);
  if (y == NULL)
    return FALSE;
  const GraftRtTensor *ins[3] = { cond, ca, cb };
  GraftBroadcastIter it;
  graft_broadcast_iter_init (&it, y, ins, 3);
  gsize item = graft_dtype_get_size (dtype);
  gboolean cond_bool = cond->dtype == GRAFT_DTYPE_BOOL || cond->dtype == GRAFT_DTYPE_UINT8;
  for (gint64 i = 0; i < y->numel; i++, graft_broadcast_iter_next (&it))
    {
      gboolean take = cond_bool ? ((const guint8 *) cond->data)[it.offsets[0]] != 0
                                : graft_rt_tensor_get_f64 (cond, it.offsets[0]) != 0;
      const GraftRtTensor *from = take ? ca : cb;
      memcpy ((guint8 *) y->data + i * item, (const guint8 *) from->data + it.offsets[take ? 1 : 2] * item, item);
    }
  return TRUE;
}

/* argmax / argmin(self, dim=None, keepdim=False): the index of the first
 * largest (smallest) value, NaN counting as the largest (and smallest) as
 * in PyTorch; without dim, of the flattened tensor. */
static gboolean
kernel_arg_reduce (GraftKernelContext *ctx, GError **error)
{
  gboolean is_max = strcmp (ctx->node->op_type, "argmax") == 0;
  GraftAtenArg args[3];
  graft_aten_args (ctx, NULL, 3, args);
  GraftRtTensor *x = graft_aten_need_tensor (&args[0], 0, error);
  if (x == NULL)
    return FALSE;
  if (x->dtype == GRAFT_DTYPE_STRING || x->dtype == GRAFT_DTYPE_BOOL)
    return graft_kernel_unsupported (error, "%s of a %s tensor", ctx->node->op, graft_dtype_to_string (x->dtype));
  gboolean keepdim = graft_arg_int (&args[2], 0) != 0, flat = graft_arg_is_none (&args[1]) || x->rank == 0;
  gint64 axis = flat ? 0 : graft_arg_int (&args[1], 0);
  if (!flat && !graft_normalize_axis (&axis, x->rank, error))
    return FALSE;
  gint64 outer = flat ? 1 : graft_dims_product (x->dims, 0, axis);
  gint64 size = flat ? x->numel : x->dims[axis];
  gint64 inner = flat ? 1 : graft_dims_product (x->dims, axis + 1, x->rank);
  if (size == 0)
    return graft_kernel_fail (error, "%s of an empty dimension", ctx->node->op);
  gint64 dims[GRAFT_RT_MAX_RANK];
  int rank = 0;
  for (int d = 0; d < x->rank; d++)
    if (!flat && d != axis)
      dims[rank++] = x->dims[d];
    else if (keepdim)
      dims[rank++] = 1;
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_INT64, rank, dims, error);
  if (y == NULL)
    return FALSE;
  gint64 *out = y->data;
  for (gint64 o = 0; o < outer; o++)
    for (gint64 in = 0; in < inner; in++)
      {
        gint64 best = 0;
        double best_value = graft_rt_tensor_get_f64 (x, o * size * inner + in);
        for (gint64 k = 1; k < size && !isnan (best_value); k++)
          {
            double v = graft_rt_tensor_get_f64 (x, (o * size + k) * inner + in);
            if (isnan (v) || (is_max ? v > best_value : v < best_value))
              best = k, best_value = v;
          }
        out[o * inner + in] = best;
      }
  return TRUE;
}

/* to(self, dtype, ...), to(self, device, dtype, ...), to(self, other, ...) */
static gboolean
kernel_to (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[3];
  graft_aten_args (ctx, NULL, 3, args);
  GraftRtTensor *x = graft_aten_need_tensor (&args[0], 0, error);
  if (x == NULL)
    return FALSE;
  GraftDType dtype = x->dtype;
  GraftAttribute *kw = graft_node_get_attribute (ctx->node, "dtype");
  GraftRtTensor *other = graft_arg_tensor (&args[1]);
  if (kw && kw->type == GRAFT_ATTR_INT)
    dtype = graft_dtype_from_torch_scalar_type (kw->i);
  else if (other && other->rank > 0)
    dtype = other->dtype;
  else if ((args[1].attr && args[1].attr->type == GRAFT_ATTR_INT) ||
           (other && other->numel == 1 && !graft_dtype_is_float (other->dtype) && other->dtype != GRAFT_DTYPE_STRING))
    dtype = graft_dtype_from_torch_scalar_type (graft_arg_int (&args[1], 6));
  else if (!graft_arg_is_none (&args[2]) && ((args[2].attr && args[2].attr->type == GRAFT_ATTR_INT) ||
                                             graft_arg_tensor (&args[2])))
    dtype = graft_dtype_from_torch_scalar_type (graft_arg_int (&args[2], 6));
  if (dtype == GRAFT_DTYPE_UNDEFINED)
    return graft_kernel_unsupported (error, "conversion to that dtype");
  GraftRtTensor *y = graft_aten_as_dtype (x, dtype, error);
  if (y == NULL)
    return FALSE;
  graft_kernel_set_output (ctx, 0, y);
  return TRUE;
}

/* type_as(self, other): self in other's dtype */
static gboolean
kernel_type_as (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[2];
  graft_aten_args (ctx, NULL, 2, args);
  GraftRtTensor *x = graft_aten_need_tensor (&args[0], 0, error);
  GraftRtTensor *other = x ? graft_aten_need_tensor (&args[1], 1, error) : NULL;
  if (other == NULL)
    return FALSE;
  GraftRtTensor *y = graft_aten_as_dtype (x, other->dtype, error);
  if (y == NULL)
    return FALSE;
  graft_kernel_set_output (ctx, 0, y);
  return TRUE;
}

static gboolean
kernel_is_floating_point (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0];
  if (x == NULL || x->kind != GRAFT_RT_TENSOR)
    return graft_kernel_fail (error, "is_floating_point() needs a tensor");
  graft_kernel_set_output (ctx, 0, graft_aten_new_bool (graft_dtype_is_float (x->dtype)));
  return TRUE;
}

#define OP(name, kernel) { "aten::" name, 0, 0, NULL, kernel, GRAFT_OP_HALF_AS_FLOAT }

const GraftOpSchema graft_ops_aten_elementwise[] = {
  OP ("rsub", graft_aten_binary_promoted),
  OP ("floor_divide", graft_aten_binary_promoted), OP ("floordiv", graft_aten_binary_promoted),
  OP ("remainder", graft_aten_binary_promoted), OP ("ne", graft_aten_binary_promoted), OP ("pow", graft_aten_binary_promoted),
  OP ("alpha_dropout", kernel_identity),
  OP ("logical_not", kernel_logical), OP ("logical_and", kernel_logical), OP ("logical_or", kernel_logical),
  OP ("logical_xor", kernel_logical), OP ("__and__", kernel_logical), OP ("__or__", kernel_logical),
  OP ("__xor__", kernel_logical), OP ("bitwise_and", kernel_logical), OP ("bitwise_or", kernel_logical),
  OP ("bitwise_xor", kernel_logical), OP ("bitwise_not", kernel_logical), OP ("clamp", kernel_clamp), OP ("clamp_", kernel_clamp),
  OP ("clamp_min", kernel_clamp), OP ("clamp_min_", kernel_clamp), OP ("clamp_max", kernel_clamp),
  OP ("clamp_max_", kernel_clamp), OP ("hardtanh", kernel_clamp), OP ("hardtanh_", kernel_clamp), OP ("masked_fill", kernel_masked_fill), OP ("masked_fill_", kernel_masked_fill),
  OP ("to", kernel_to), OP ("is_floating_point", kernel_is_floating_point), OP ("where", kernel_where),
  OP ("argmax", kernel_arg_reduce), OP ("argmin", kernel_arg_reduce),
  OP ("min", kernel_reduce), OP ("max", kernel_reduce), OP ("type_as", kernel_type_as),
  OP ("any", kernel_reduce), OP ("all", kernel_reduce),
  { NULL }
};
