/* Operators that torch.export programs use and TorchScript graphs do not:
 * symbolic-size arithmetic (aten::sym_size and Python's _operator.mul,
 * floordiv, ge… on SymInts), runtime assertions (aten::_assert_scalar,
 * sym_constrain_range, _assert_tensor_metadata) and aten::nonzero.
 * Arguments arrive as the reader in model/pt2 lays them out: constants as
 * "argN" attributes, values as inputs (see aten-args.h). The ops both
 * kinds of program use (embedding, index, cumsum, scaled_dot_product_
 * attention, …) live in aten-nn.c and aten-shape.c. */
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
      GraftDType want = graft_dtype_from_torch_scalar_type (graft_arg_int (&args[3], -1));
      if (want != GRAFT_DTYPE_UNDEFINED && want != x->dtype)
        return graft_kernel_fail (error, "%s: expected %s, got %s", ctx->node->name, graft_dtype_to_string (want),
                                  graft_dtype_to_string (x->dtype));
    }
  return TRUE;
}

#define OP(name, kernel) { name, 0, 0, NULL, kernel, 0 }
/* Python's operator module: operator.add(a, b) and the like. */
#define PY_OP(name) { "_operator::" name, 0, 0, NULL, kernel_python_operator, 0, "a b", "result" }

const GraftOpSchema graft_ops_aten_export[] = {
  OP ("aten::sym_size", kernel_sym_size),
  OP ("aten::_assert_scalar", kernel_assert_scalar),
  OP ("aten::sym_constrain_range", kernel_constrain_range),
  OP ("aten::sym_constrain_range_for_size", kernel_constrain_range),
  OP ("aten::_functional_sym_constrain_range", kernel_constrain_range),
  OP ("aten::_functional_sym_constrain_range_for_size", kernel_constrain_range),
  OP ("aten::nonzero", kernel_nonzero),
  OP ("aten::_assert_tensor_metadata", kernel_assert_tensor_metadata),
  PY_OP ("add"), PY_OP ("sub"),
  PY_OP ("mul"), PY_OP ("floordiv"),
  PY_OP ("mod"), PY_OP ("truediv"),
  PY_OP ("eq"), PY_OP ("ne"),
  PY_OP ("lt"), PY_OP ("le"),
  PY_OP ("gt"), PY_OP ("ge"),
  { NULL }
};
