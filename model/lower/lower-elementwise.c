/* Elementwise aten ops: activations, arithmetic and comparisons on
 * tensors and on TorchScript scalars (size arithmetic stays a graph of
 * 0-d int64 tensors; constants fold while lowering). */
#include "lower/lower-private.h"

#include <math.h>
#include <string.h>

/* ---- unary ---- */

typedef struct {
  const char *op;        /* aten::relu */
  const char *onnx;      /* Relu */
  gboolean in_float;     /* integer inputs computed in float32, as PyTorch does */
} UnaryRow;

static const UnaryRow unary_rows[] = {
  { "relu", "Relu" }, { "relu_", "Relu" }, { "sigmoid", "Sigmoid", TRUE }, { "sigmoid_", "Sigmoid", TRUE },
  { "tanh", "Tanh", TRUE }, { "tanh_", "Tanh", TRUE }, { "exp", "Exp", TRUE }, { "log", "Log", TRUE },
  { "sqrt", "Sqrt", TRUE }, { "neg", "Neg" }, { "abs", "Abs" }, { "erf", "Erf", TRUE }, { "floor", "Floor" },
  { "ceil", "Ceil" }, { "reciprocal", "Reciprocal", TRUE }, { "sin", "Sin", TRUE }, { "cos", "Cos", TRUE },
  { "logical_not", "Not" }, { "bitwise_not", "Not" }, { "sign", "Sign" }, { "softplus", "Softplus", TRUE },
  { "exp_", "Exp", TRUE }, { "neg_", "Neg" }, { "hardswish", "HardSwish", TRUE }, { "hardswish_", "HardSwish", TRUE },
  { "rsqrt", NULL, TRUE }, { "detach", "Identity" }, { "contiguous", "Identity" }, { "clone", "Identity" },
  /* torch.export's copies and views of a value that nothing writes to */
  { "detach_", "Identity" }, { "lift_fresh_copy", "Identity" }, { "alias", "Identity" },
};

static const UnaryRow *
unary_row (GraftNode *node)
{
  for (guint i = 0; i < G_N_ELEMENTS (unary_rows); i++)
    if (strcmp (node->op_type, unary_rows[i].op) == 0)
      return &unary_rows[i];
  return NULL;
}

static gboolean
lower_unary (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  LowerValue *number = graft_lower_arg (ctx, node, 0);
  gboolean up = strcmp (node->op_type, "ceil") == 0;
  if ((up || strcmp (node->op_type, "floor") == 0) && number != NULL && number->kind == LOWER_CONST &&
      (number->constant->type == GRAFT_ATTR_FLOAT || number->constant->type == GRAFT_ATTR_INT))
    {
      /* math.ceil / math.floor of a number known while converting: an int */
      double v = number->constant->type == GRAFT_ATTR_FLOAT ? number->constant->f : (double) number->constant->i;
      g_autoptr(GraftAttribute) rounded = graft_attribute_new_int ("value", (gint64) (up ? ceil (v) : floor (v)));
      graft_lower_bind (ctx, g_ptr_array_index (node->outputs, 0), graft_lower_value_const (rounded));
      return TRUE;
    }
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  const UnaryRow *row = unary_row (node);
  const char *onnx = row ? row->onnx : NULL;
  if (x == NULL)
    return FALSE;
  GraftDType dtype = graft_lower_dtype (ctx, x);
  if (row && row->in_float && (graft_dtype_is_integer (dtype) || dtype == GRAFT_DTYPE_BOOL))
    x = graft_lower_cast (ctx, x, GRAFT_DTYPE_FLOAT32);
  if (strcmp (node->op_type, "rsqrt") == 0)
    {
      graft_lower_set_output (ctx, node, 0, graft_lower_op (ctx, "Reciprocal", 1, graft_lower_op (ctx, "Sqrt", 1, x)));
      return TRUE;
    }
  if (strcmp (onnx, "Identity") == 0)
    {
      /* No node: the value itself (contiguous, detach and clone are no-ops here). */
      graft_lower_bind (ctx, g_ptr_array_index (node->outputs, 0), graft_lower_value_copy (graft_lower_arg (ctx, node, 0)));
      return TRUE;
    }
  graft_lower_set_output (ctx, node, 0, graft_lower_op (ctx, onnx, 1, x));
  return TRUE;
}

/* dropout(input, p, train) and friends: identity in eval. */
static gboolean
lower_identity (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  LowerValue *v = graft_lower_arg (ctx, node, 0);
  if (v == NULL)
    return graft_lower_fail (error, node, "has no input");
  graft_lower_bind (ctx, g_ptr_array_index (node->outputs, 0), graft_lower_value_copy (v));
  return TRUE;
}

static GraftValue *
clip (GraftLowerContext *ctx, GraftValue *x, double lo, double hi)
{
  GraftDType dtype = graft_lower_dtype (ctx, x);
  GraftValue *min = isinf (lo) ? NULL : graft_lower_const_scalar (ctx, dtype, lo);
  GraftValue *max = isinf (hi) ? NULL : graft_lower_const_scalar (ctx, dtype, hi);
  return graft_lower_op (ctx, "Clip", 3, x, min, max);
}

/* hardtanh(x, min_val=-1, max_val=1), relu6, clamp(x, min, max) */
static gboolean
lower_clip (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  double lo = -INFINITY, hi = INFINITY;
  if (x == NULL)
    return FALSE;
  if (g_str_has_prefix (node->op_type, "relu6"))
    lo = 0, hi = 6;
  else if (g_str_has_prefix (node->op_type, "hardtanh"))
    {
      if (!graft_lower_arg_double (ctx, node, 1, -1, &lo, error) || !graft_lower_arg_double (ctx, node, 2, 1, &hi, error))
        return FALSE;
    }
  else if (g_str_has_prefix (node->op_type, "clamp_max"))
    {
      if (!graft_lower_arg_double (ctx, node, 1, INFINITY, &hi, error))
        return FALSE;
    }
  else if (!graft_lower_arg_double (ctx, node, 1, -INFINITY, &lo, error) ||
           !graft_lower_arg_double (ctx, node, 2, INFINITY, &hi, error))
    return FALSE;
  graft_lower_set_output (ctx, node, 0, clip (ctx, x, lo, hi));
  return TRUE;
}

static gboolean
lower_hardsigmoid (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  if (x == NULL)
    return FALSE;
  GraftNode *n = graft_lower_node (ctx, "HardSigmoid", 1, 1, x);
  graft_node_add_attribute (n, graft_attribute_new_float ("alpha", 1.0 / 6));
  graft_node_add_attribute (n, graft_attribute_new_float ("beta", 0.5));
  graft_lower_set_output (ctx, node, 0, graft_lower_finish (ctx, n));
  return TRUE;
}

/* silu(x) = x·sigmoid(x) */
static gboolean
lower_silu (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  if (x == NULL)
    return FALSE;
  graft_lower_set_output (ctx, node, 0, graft_lower_op (ctx, "Mul", 2, x, graft_lower_op (ctx, "Sigmoid", 1, x)));
  return TRUE;
}

/* gelu(x, approximate="none"|"tanh"): Gelu from opset 20, else its formula. */
static gboolean
lower_gelu (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  LowerValue *approximate = graft_lower_arg (ctx, node, 1);
  g_autofree char *mode = approximate && approximate->kind == LOWER_CONST
                          ? graft_attribute_dup_string (approximate->constant) : NULL;
  gboolean tanh_mode = mode != NULL && strcmp (mode, "tanh") == 0;
  GraftDType dtype;
  if (x == NULL)
    return FALSE;
  dtype = graft_lower_dtype (ctx, x);
  if (ctx->opset >= 20)
    {
      GraftNode *n = graft_lower_node (ctx, "Gelu", 1, 1, x);
      if (tanh_mode)
        graft_node_add_attribute (n, graft_attribute_new_string ("approximate", "tanh"));
      graft_lower_set_output (ctx, node, 0, graft_lower_finish (ctx, n));
      return TRUE;
    }
  GraftValue *inner;
  if (tanh_mode)
    {
      /* 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) */
      GraftValue *cube = graft_lower_op (ctx, "Mul", 2, x, graft_lower_op (ctx, "Mul", 2, x, x));
      GraftValue *sum = graft_lower_op (ctx, "Add", 2, x, graft_lower_op (ctx, "Mul", 2, cube,
                                                                           graft_lower_const_scalar (ctx, dtype, 0.044715)));
      inner = graft_lower_op (ctx, "Tanh", 1, graft_lower_op (ctx, "Mul", 2, sum,
                                                              graft_lower_const_scalar (ctx, dtype, sqrt (2 / G_PI))));
    }
  else
    /* 0.5·x·(1 + erf(x/√2)) */
    inner = graft_lower_op (ctx, "Erf", 1, graft_lower_op (ctx, "Div", 2, x, graft_lower_const_scalar (ctx, dtype, G_SQRT2)));
  GraftValue *one_plus = graft_lower_op (ctx, "Add", 2, inner, graft_lower_const_scalar (ctx, dtype, 1));
  GraftValue *half_x = graft_lower_op (ctx, "Mul", 2, x, graft_lower_const_scalar (ctx, dtype, 0.5));
  graft_lower_set_output (ctx, node, 0, graft_lower_op (ctx, "Mul", 2, half_x, one_plus));
  return TRUE;
}

/* ---- binary: tensors, scalars and folded constants ---- */

typedef enum { B_ADD, B_SUB, B_MUL, B_DIV, B_FLOORDIV, B_REM, B_POW, B_EQ, B_NE, B_LT, B_LE, B_GT, B_GE,
               B_AND, B_OR, B_RSUB } BinaryOp;

static const struct { const char *op; BinaryOp kind; const char *onnx; } binary_rows[] = {
  { "add", B_ADD, "Add" }, { "add_", B_ADD, "Add" }, { "sub", B_SUB, "Sub" }, { "sub_", B_SUB, "Sub" },
  { "rsub", B_RSUB, "Sub" }, { "mul", B_MUL, "Mul" }, { "mul_", B_MUL, "Mul" }, { "div", B_DIV, "Div" },
  { "div_", B_DIV, "Div" }, { "floordiv", B_FLOORDIV, "Div" }, { "floor_divide", B_FLOORDIV, "Div" },
  { "remainder", B_REM, "Mod" }, { "pow", B_POW, "Pow" }, { "eq", B_EQ, "Equal" }, { "ne", B_NE, "Equal" },
  { "lt", B_LT, "Less" }, { "le", B_LE, "LessOrEqual" }, { "gt", B_GT, "Greater" },
  { "ge", B_GE, "GreaterOrEqual" }, { "__and__", B_AND, "And" }, { "__or__", B_OR, "Or" },
  { "logical_and", B_AND, "And" }, { "logical_or", B_OR, "Or" }, { "bitwise_and", B_AND, "And" },
  { "bitwise_or", B_OR, "Or" },
};

static gboolean
const_number (const LowerValue *v, double *out, gboolean *is_float)
{
  if (v == NULL || v->kind != LOWER_CONST)
    return FALSE;
  switch (v->constant->type)
    {
    case GRAFT_ATTR_INT: case GRAFT_ATTR_BOOL: *out = (double) v->constant->i; *is_float = FALSE; return TRUE;
    case GRAFT_ATTR_FLOAT: *out = v->constant->f; *is_float = TRUE; return TRUE;
    default: return FALSE;
    }
}

static gboolean
is_comparison (BinaryOp op)
{
  return op >= B_EQ && op <= B_OR;
}

static double
fold (BinaryOp op, double a, double b, gboolean as_float)
{
  switch (op)
    {
    case B_ADD: return a + b;
    case B_SUB: return a - b;
    case B_RSUB: return b - a;
    case B_MUL: return a * b;
    case B_DIV: return a / b;
    case B_FLOORDIV: return floor (a / b);
    case B_REM: return as_float ? a - floor (a / b) * b : (double) ((((gint64) a % (gint64) b) + (gint64) b) % (gint64) b);
    case B_POW: return pow (a, b);
    case B_EQ: return a == b;
    case B_NE: return a != b;
    case B_LT: return a < b;
    case B_LE: return a <= b;
    case B_GT: return a > b;
    case B_GE: return a >= b;
    case B_AND: return a != 0 && b != 0;
    case B_OR: return a != 0 || b != 0;
    }
  return 0;
}

static LowerValue *
number_value (double value, GraftAttrType type)
{
  g_autoptr(GraftAttribute) a = graft_attribute_new ("value", type);
  if (type == GRAFT_ATTR_FLOAT)
    a->f = value;
  else
    a->i = (gint64) value;
  return graft_lower_value_const (a);
}

/* Two constants: the result is a constant too (dim checks, size math of
 * fixed dims); equality of strings and None folds as well. */
static gboolean
fold_binary (GraftNode *node, GraftLowerContext *ctx, BinaryOp op, LowerValue *a, LowerValue *b)
{
  double x, y;
  gboolean fx, fy;
  if (!const_number (a, &x, &fx) || !const_number (b, &y, &fy))
    {
      if ((op == B_EQ || op == B_NE) && a && b && a->kind == LOWER_CONST && b->kind == LOWER_CONST &&
          a->constant->type == GRAFT_ATTR_STRING && b->constant->type == GRAFT_ATTR_STRING)
        {
          gboolean same = g_bytes_equal (a->constant->s, b->constant->s);
          graft_lower_bind (ctx, g_ptr_array_index (node->outputs, 0), number_value (op == B_EQ ? same : !same, GRAFT_ATTR_BOOL));
          return TRUE;
        }
      return FALSE;
    }
  if ((op == B_FLOORDIV || op == B_REM) && y == 0)
    return FALSE;
  gboolean as_float = fx || fy || op == B_DIV;
  GraftAttrType type = is_comparison (op) ? GRAFT_ATTR_BOOL : as_float ? GRAFT_ATTR_FLOAT : GRAFT_ATTR_INT;
  graft_lower_bind (ctx, g_ptr_array_index (node->outputs, 0), number_value (fold (op, x, y, as_float), type));
  return TRUE;
}

static guint
list_length (const LowerValue *v)
{
  return v->kind == LOWER_LIST ? v->items->len : v->constant->ints->len;
}

/* Item i of a list or of a constant int list, as a (borrowed or scratch) value. */
static LowerValue *
list_item (GraftLowerContext *ctx, LowerValue *v, guint i)
{
  if (v->kind == LOWER_LIST)
    return v->items->pdata[i];
  LowerValue *item = number_value ((double) g_array_index (v->constant->ints, gint64, i), GRAFT_ATTR_INT);
  g_ptr_array_add (ctx->scratch, item);
  return item;
}

static gboolean
is_list (const LowerValue *v)
{
  return v != NULL && (v->kind == LOWER_LIST || (v->kind == LOWER_CONST && v->constant->type == GRAFT_ATTR_INTS));
}

/* list == list / list != list: item by item, folded where both are
 * constants, else Equal of the sizes joined by And. */
static gboolean
compare_lists (GraftLowerContext *ctx, GraftNode *node, BinaryOp op, LowerValue *a, LowerValue *b, GError **error)
{
  gboolean equal = list_length (a) == list_length (b);
  GraftValue *runtime = NULL;
  for (guint i = 0; equal && i < list_length (a); i++)
    {
      LowerValue *x = list_item (ctx, a, i), *y = list_item (ctx, b, i);
      double u, v;
      gboolean fu, fv;
      if (const_number (x, &u, &fu) && const_number (y, &v, &fv))
        equal = u == v;
      else if ((x->kind == LOWER_TENSOR || x->kind == LOWER_CONST) && (y->kind == LOWER_TENSOR || y->kind == LOWER_CONST))
        {
          GraftValue *tx = x->kind == LOWER_TENSOR ? x->value : graft_lower_const_attribute (ctx, x->constant, error);
          GraftValue *ty = y->kind == LOWER_TENSOR ? y->value : graft_lower_const_attribute (ctx, y->constant, error);
          if (tx == NULL || ty == NULL)
            return FALSE;
          GraftValue *same = graft_lower_op (ctx, "Equal", 2, graft_lower_cast (ctx, tx, GRAFT_DTYPE_INT64),
                                             graft_lower_cast (ctx, ty, GRAFT_DTYPE_INT64));
          runtime = runtime ? graft_lower_op (ctx, "And", 2, runtime, same) : same;
        }
      else
        return graft_lower_fail (error, node, "compares lists of items that are not numbers");
    }
  if (!equal || runtime == NULL)
    {
      graft_lower_bind (ctx, g_ptr_array_index (node->outputs, 0), number_value (op == B_EQ ? equal : !equal, GRAFT_ATTR_BOOL));
      return TRUE;
    }
  graft_lower_set_output_scalar (ctx, node, 0, op == B_EQ ? runtime : graft_lower_op (ctx, "Not", 1, runtime));
  return TRUE;
}

/* Arguments k and k + 1 as tensors: the tensor one sets the dtype of a
 * Python number on the other side. */
static gboolean
operand_pair (GraftLowerContext *ctx, GraftNode *node, guint k, GraftValue **x, GraftValue **y, GError **error)
{
  LowerValue *a = graft_lower_arg (ctx, node, k), *b = graft_lower_arg (ctx, node, k + 1);
  gboolean b_first = (a == NULL || a->kind != LOWER_TENSOR) && b != NULL && b->kind == LOWER_TENSOR;
  if (b_first)
    {
      *y = graft_lower_arg_tensor (ctx, node, k + 1, error);
      *x = *y ? graft_lower_arg_like (ctx, node, k, *y, error) : NULL;
    }
  else
    {
      *x = graft_lower_arg_tensor (ctx, node, k, error);
      *y = *x ? graft_lower_arg_like (ctx, node, k + 1, *x, error) : NULL;
    }
  return *x != NULL && *y != NULL;
}

static gboolean
lower_binary (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  BinaryOp op = B_ADD;
  const char *onnx = "Add";
  for (guint i = 0; i < G_N_ELEMENTS (binary_rows); i++)
    if (strcmp (node->op_type, binary_rows[i].op) == 0)
      op = binary_rows[i].kind, onnx = binary_rows[i].onnx;
  LowerValue *a = graft_lower_arg (ctx, node, 0), *b = graft_lower_arg (ctx, node, 1);
  double alpha = 1;
  if ((op == B_ADD || op == B_SUB || op == B_RSUB) && !graft_lower_arg_double (ctx, node, 2, 1, &alpha, error))
    return FALSE;
  if (alpha == 1 && fold_binary (node, ctx, op, a, b))
    return TRUE;
  if ((op == B_EQ || op == B_NE) && is_list (a) && is_list (b))
    return compare_lists (ctx, node, op, a, b, error);
  if (op == B_ADD && is_list (a) && is_list (b))
    {
      /* list + list: a new list of both lists' items */
      LowerValue *joined = graft_lower_value_list ();
      for (guint i = 0; i < list_length (a); i++)
        g_ptr_array_add (joined->items, graft_lower_value_copy (list_item (ctx, a, i)));
      for (guint i = 0; i < list_length (b); i++)
        g_ptr_array_add (joined->items, graft_lower_value_copy (list_item (ctx, b, i)));
      graft_lower_bind (ctx, g_ptr_array_index (node->outputs, 0), joined);
      return TRUE;
    }
  if (a == NULL || b == NULL || a->kind == LOWER_NONE || b->kind == LOWER_NONE)
    {
      /* `x is None`-style comparisons fold on presence. */
      if ((op == B_EQ || op == B_NE) && a && b)
        {
          gboolean same = a->kind == b->kind;
          graft_lower_bind (ctx, g_ptr_array_index (node->outputs, 0), number_value (op == B_EQ ? same : !same, GRAFT_ATTR_BOOL));
          return TRUE;
        }
      return graft_lower_fail (error, node, "needs two operands");
    }
  gboolean scalar = a->kind != LOWER_TENSOR || a->scalar;
  scalar &= b->kind != LOWER_TENSOR || b->scalar;
  GraftValue *x, *y;
  if (!operand_pair (ctx, node, 0, &x, &y, error))
    return FALSE;
  GraftDType dx = graft_lower_dtype (ctx, x), dy = graft_lower_dtype (ctx, y);
  if (op == B_DIV)
    {
      LowerValue *mode = graft_lower_arg (ctx, node, 2);
      g_autofree char *rounding = mode && mode->kind == LOWER_CONST ? graft_attribute_dup_string (mode->constant) : NULL;
      if (rounding == NULL && !graft_dtype_is_float (dx) && !graft_dtype_is_float (dy))
        {
          /* true division of ints gives a float */
          x = graft_lower_cast (ctx, x, GRAFT_DTYPE_FLOAT32);
          y = graft_lower_cast (ctx, y, GRAFT_DTYPE_FLOAT32);
        }
      else if (graft_dtype_is_float (dx) != graft_dtype_is_float (dy))
        {
          /* a float by an int (RAFT's coordinates by a traced size) */
          x = graft_lower_cast (ctx, x, graft_dtype_is_float (dx) ? dx : dy);
          y = graft_lower_cast (ctx, y, graft_dtype_is_float (dx) ? dx : dy);
        }
      if (rounding != NULL && strcmp (rounding, "floor") == 0)
        op = B_FLOORDIV;
    }
  else if (dx != dy && dx != GRAFT_DTYPE_UNDEFINED && dy != GRAFT_DTYPE_UNDEFINED && !is_comparison (op))
    {
      /* int scalar · float scalar → float, as Python does */
      if (graft_dtype_is_float (dx) && !graft_dtype_is_float (dy))
        y = graft_lower_cast (ctx, y, dx);
      else if (graft_dtype_is_float (dy) && !graft_dtype_is_float (dx))
        x = graft_lower_cast (ctx, x, dy);
      else
        y = graft_lower_cast (ctx, y, dx);
    }
  else if (dx != dy && dx != GRAFT_DTYPE_UNDEFINED && dy != GRAFT_DTYPE_UNDEFINED)
    y = graft_lower_cast (ctx, y, dx);
  if (alpha != 1)
    y = graft_lower_op (ctx, "Mul", 2, y, graft_lower_const_scalar (ctx, graft_lower_dtype (ctx, y), alpha));
  GraftValue *result;
  if (op == B_RSUB)
    result = graft_lower_op (ctx, "Sub", 2, y, x);
  else
    result = graft_lower_op (ctx, onnx, 2, x, y);
  if (op == B_NE)
    result = graft_lower_op (ctx, "Not", 1, result);
  if (op == B_FLOORDIV && graft_dtype_is_float (graft_lower_dtype (ctx, result)))
    result = graft_lower_op (ctx, "Floor", 1, result);
  if (scalar)
    graft_lower_set_output_scalar (ctx, node, 0, result);
  else
    graft_lower_set_output (ctx, node, 0, result);
  return TRUE;
}

/* __not__, Bool / Int / Float conversions of scalars */
static gboolean
lower_not (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  LowerValue *a = graft_lower_arg (ctx, node, 0);
  double x;
  gboolean f;
  if (const_number (a, &x, &f))
    {
      graft_lower_bind (ctx, g_ptr_array_index (node->outputs, 0), number_value (x == 0, GRAFT_ATTR_BOOL));
      return TRUE;
    }
  GraftValue *t = graft_lower_arg_tensor (ctx, node, 0, error);
  if (t == NULL)
    return FALSE;
  graft_lower_set_output_scalar (ctx, node, 0, graft_lower_op (ctx, "Not", 1, graft_lower_cast (ctx, t, GRAFT_DTYPE_BOOL)));
  return TRUE;
}

static gboolean
lower_to_scalar (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  LowerValue *a = graft_lower_arg (ctx, node, 0);
  gboolean to_float = strcmp (node->op_type, "Float") == 0;
  gboolean to_bool = strcmp (node->op_type, "Bool") == 0;
  gboolean item = strcmp (node->op_type, "item") == 0;
  double x;
  gboolean f;
  if (const_number (a, &x, &f))
    {
      graft_lower_bind (ctx, g_ptr_array_index (node->outputs, 0),
                        number_value (to_bool ? x != 0 : to_float ? x : trunc (x),
                                      to_float ? GRAFT_ATTR_FLOAT : to_bool ? GRAFT_ATTR_BOOL : GRAFT_ATTR_INT));
      return TRUE;
    }
  GraftValue *t = graft_lower_arg_tensor (ctx, node, 0, error);
  if (t == NULL)
    return FALSE;
  if (graft_lower_rank (ctx, t) != 0)
    t = graft_lower_op (ctx, "Reshape", 2, t, graft_lower_const_ints (ctx, NULL, 0, FALSE));
  if (item)
    {
      /* the tensor's own dtype: a float tensor's item is a Python float */
      graft_lower_set_output_scalar (ctx, node, 0, t);
      return TRUE;
    }
  graft_lower_set_output_scalar (ctx, node, 0,
                                 graft_lower_cast (ctx, t, to_float ? GRAFT_DTYPE_FLOAT32 : to_bool ? GRAFT_DTYPE_BOOL
                                                                      : GRAFT_DTYPE_INT64));
  return TRUE;
}

/* masked_fill(self, mask, value) → Where(mask, value, self) */
static gboolean
lower_masked_fill (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  GraftValue *mask = x ? graft_lower_arg_tensor (ctx, node, 1, error) : NULL;
  GraftValue *value = mask ? graft_lower_arg_like (ctx, node, 2, x, error) : NULL;
  if (value == NULL)
    return FALSE;
  value = graft_lower_cast (ctx, value, graft_lower_dtype (ctx, x));
  graft_lower_set_output (ctx, node, 0, graft_lower_op (ctx, "Where", 3, graft_lower_cast (ctx, mask, GRAFT_DTYPE_BOOL),
                                                        value, x));
  return TRUE;
}

/* to(self, dtype, …), to(self, device, dtype, …), to(self, other, …),
 * _to_copy(self, dtype=…), type_as(self, other): a Cast, or the value
 * itself where the dtype stays (a move to the CPU, a copy). */
static gboolean
lower_to (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  GraftDType dtype = GRAFT_DTYPE_UNDEFINED;
  if (x == NULL)
    return FALSE;
  GraftAttribute *keyword = graft_node_get_attribute (node, "dtype");
  if (keyword != NULL && keyword->type == GRAFT_ATTR_INT)
    dtype = graft_dtype_from_torch_scalar_type (keyword->i);
  for (guint k = 1; keyword == NULL && k <= 2; k++)
    {
      LowerValue *v = graft_lower_arg (ctx, node, k);
      if (v != NULL && v->kind == LOWER_TENSOR && !v->scalar && k == 1)
        dtype = graft_lower_dtype (ctx, v->value);
      else if (v != NULL && v->kind == LOWER_CONST && v->constant->type == GRAFT_ATTR_INT)
        dtype = graft_dtype_from_torch_scalar_type (v->constant->i);
      /* to(self, device, dtype, …): the dtype follows the device */
      else if (k == 1 && v != NULL && v->kind == LOWER_CONST && v->constant->type == GRAFT_ATTR_STRING)
        continue;
      break;
    }
  if (dtype == GRAFT_DTYPE_UNDEFINED)
    {
      graft_lower_bind (ctx, g_ptr_array_index (node->outputs, 0), graft_lower_value_copy (graft_lower_arg (ctx, node, 0)));
      return TRUE;
    }
  graft_lower_set_output (ctx, node, 0, graft_lower_cast (ctx, x, dtype));
  return TRUE;
}

/* where(condition, self, other): either side may be a Python number,
 * which takes the other's dtype. */
static gboolean
lower_where (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  GraftValue *condition = graft_lower_arg_tensor (ctx, node, 0, error);
  if (condition == NULL)
    return FALSE;
  GraftValue *x, *y;
  if (!operand_pair (ctx, node, 1, &x, &y, error))
    return FALSE;
  GraftDType dx = graft_lower_dtype (ctx, x), dy = graft_lower_dtype (ctx, y);
  if (dx != dy && dx != GRAFT_DTYPE_UNDEFINED && dy != GRAFT_DTYPE_UNDEFINED)
    {
      if (graft_dtype_is_float (dy) && !graft_dtype_is_float (dx))
        x = graft_lower_cast (ctx, x, dy);
      else
        y = graft_lower_cast (ctx, y, dx);
    }
  graft_lower_set_output (ctx, node, 0, graft_lower_op (ctx, "Where", 3, graft_lower_cast (ctx, condition, GRAFT_DTYPE_BOOL),
                                                        x, y));
  return TRUE;
}

/* leaky_relu(self, negative_slope), elu(self, alpha, scale, input_scale) */
static gboolean
lower_alpha_unary (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gboolean leaky = g_str_has_prefix (node->op_type, "leaky_relu");
  double alpha;
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  if (x == NULL || !graft_lower_arg_double (ctx, node, 1, leaky ? 0.01 : 1.0, &alpha, error))
    return FALSE;
  GraftNode *n = graft_lower_node (ctx, leaky ? "LeakyRelu" : "Elu", 1, 1, x);
  graft_node_add_attribute (n, graft_attribute_new_float ("alpha", alpha));
  graft_lower_set_output (ctx, node, 0, graft_lower_finish (ctx, n));
  return TRUE;
}

#define UNARY(name) { "aten::" name, 0, lower_unary, "self" }
#define BINARY(name) { "aten::" name, 0, lower_binary, "self other alpha" }

const GraftLowering graft_lowerings_elementwise[] = {
  UNARY ("relu"), UNARY ("relu_"), UNARY ("sigmoid"), UNARY ("sigmoid_"), UNARY ("tanh"), UNARY ("tanh_"),
  UNARY ("exp"), UNARY ("log"), UNARY ("sqrt"), UNARY ("rsqrt"), UNARY ("neg"), UNARY ("abs"), UNARY ("erf"),
  UNARY ("floor"), UNARY ("ceil"), UNARY ("reciprocal"), UNARY ("sin"), UNARY ("cos"), UNARY ("logical_not"),
  UNARY ("detach"), UNARY ("contiguous"), UNARY ("clone"), UNARY ("detach_"), UNARY ("lift_fresh_copy"),
  UNARY ("alias"), UNARY ("bitwise_not"), UNARY ("sign"), UNARY ("softplus"), UNARY ("exp_"), UNARY ("neg_"),
  { "aten::leaky_relu", 0, lower_alpha_unary, "self negative_slope" },
  { "aten::leaky_relu_", 0, lower_alpha_unary, "self negative_slope" },
  { "aten::elu", 0, lower_alpha_unary, "self alpha scale input_scale" },
  { "aten::hardswish", 14, lower_unary, "self" }, { "aten::hardswish_", 14, lower_unary, "self" },
  { "aten::hardsigmoid", 0, lower_hardsigmoid, "self" }, { "aten::hardsigmoid_", 0, lower_hardsigmoid, "self" },
  { "aten::silu", 0, lower_silu, "self" }, { "aten::silu_", 0, lower_silu, "self" },
  { "aten::gelu", 0, lower_gelu, "self approximate" },
  { "aten::relu6", 0, lower_clip, "self" }, { "aten::relu6_", 0, lower_clip, "self" },
  { "aten::hardtanh", 0, lower_clip, "self min_val max_val" }, { "aten::hardtanh_", 0, lower_clip, "self min_val max_val" },
  { "aten::clamp_min", 0, lower_clip, "self min" }, { "aten::clamp_min_", 0, lower_clip, "self min" },
  { "aten::clamp_max", 0, lower_clip, "self max" }, { "aten::clamp_max_", 0, lower_clip, "self max" },
  { "aten::clamp", 0, lower_clip, "self min max" }, { "aten::clamp_", 0, lower_clip, "self min max" },
  { "aten::dropout", 0, lower_identity, "input p train" }, { "aten::dropout_", 0, lower_identity, "input p train" },
  { "aten::feature_dropout", 0, lower_identity, "input p train" },
  { "aten::alpha_dropout", 0, lower_identity, "input p train" },
  { "prim::unchecked_cast", 0, lower_identity, "x" },
  BINARY ("add"), BINARY ("add_"), BINARY ("sub"), BINARY ("sub_"), BINARY ("rsub"), BINARY ("mul"), BINARY ("mul_"),
  { "aten::div", 0, lower_binary, "self other rounding_mode" }, { "aten::div_", 0, lower_binary, "self other rounding_mode" },
  BINARY ("floordiv"), BINARY ("floor_divide"), BINARY ("remainder"), BINARY ("pow"),
  BINARY ("eq"), BINARY ("ne"), BINARY ("lt"), BINARY ("le"), BINARY ("gt"), BINARY ("ge"),
  BINARY ("__and__"), BINARY ("__or__"), BINARY ("logical_and"), BINARY ("logical_or"),
  BINARY ("bitwise_and"), BINARY ("bitwise_or"),
  /* torch.export's arithmetic on symbolic sizes (s0 * 4) */
  { "_operator::add", 0, lower_binary, "a b" }, { "_operator::sub", 0, lower_binary, "a b" },
  { "_operator::mul", 0, lower_binary, "a b" }, { "_operator::floordiv", 0, lower_binary, "a b" },
  { "_operator::eq", 0, lower_binary, "a b" }, { "_operator::ne", 0, lower_binary, "a b" },
  { "_operator::lt", 0, lower_binary, "a b" }, { "_operator::le", 0, lower_binary, "a b" },
  { "_operator::gt", 0, lower_binary, "a b" }, { "_operator::ge", 0, lower_binary, "a b" },
  { "aten::__not__", 0, lower_not, "self" },
  { "aten::Bool", 0, lower_to_scalar, "a" }, { "aten::Int", 0, lower_to_scalar, "a" },
  { "aten::Float", 0, lower_to_scalar, "a" }, { "aten::ScalarImplicit", 0, lower_to_scalar, "a" },
  { "aten::item", 0, lower_to_scalar, "self" },
  { "aten::to", 0, lower_to, "self dtype non_blocking copy memory_format" },
  { "aten::_to_copy", 0, lower_to, "self dtype layout device pin_memory non_blocking memory_format" },
  { "aten::type_as", 0, lower_to, "self other" },
  { "aten::where", 0, lower_where, "condition self other" },
  { "aten::masked_fill", 0, lower_masked_fill, "self mask value" },
  { "aten::masked_fill_", 0, lower_masked_fill, "self mask value" },
  { NULL }
};
