/* Broadcasting binary and variadic operators: arithmetic, comparison,
 * logical and bitwise ops, Pow, Mod, PRelu, Where.
 *
 * Integer arithmetic wraps (two's complement) as numpy does; integer
 * division by zero yields 0 instead of trapping. */
#include <math.h>
#include <string.h>
#include "runtime/kernels/aten-args.h"
#include "runtime/kernels/simd-target.h"

typedef enum {
  OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MAX, OP_MIN,
  OP_EQUAL, OP_LESS, OP_GREATER, OP_LESS_EQUAL, OP_GREATER_EQUAL,
  OP_AND, OP_OR, OP_XOR, OP_BIT_AND, OP_BIT_OR, OP_BIT_XOR,
  OP_SHIFT_LEFT, OP_SHIFT_RIGHT, OP_MOD_C, OP_MOD_PY, OP_PRELU,
  N_OPS
} BinaryOp;

#define RUN_FN(name, T, OT, expr) RUN_FN_U (name, T, T, OT, expr)
#define RUN_FN_U(name, T, UT, OT, expr)                                            \
  static void name (const void *pa, gint64 sa, const void *pb, gint64 sb,          \
                    void *po, gint64 n, gconstpointer u)                           \
  {                                                                                \
    typedef T elem_t G_GNUC_UNUSED; typedef UT uelem_t G_GNUC_UNUSED;               \
    const T *a = pa; const T *b = pb; OT *o = po;                                  \
    if (sa == 1 && sb == 1)                                                        \
      for (gint64 i = 0; i < n; i++) { T x = a[i], y = b[i]; o[i] = (OT) (expr); (void) x; (void) y; } \
    else if (sa == 1 && sb == 0)                                                   \
      { T y = b[0]; for (gint64 i = 0; i < n; i++) { T x = a[i]; o[i] = (OT) (expr); (void) x; (void) y; } } \
    else                                                                           \
      for (gint64 i = 0; i < n; i++) { T x = a[i * sa], y = b[i * sb]; o[i] = (OT) (expr); (void) x; (void) y; } \
  }

/* Wrapping integer arithmetic via the unsigned type. */
#define INT_TYPES(X, op, expr_signed, expr_unsigned) \
  X (op##_i8, gint8, guint8, expr_signed) X (op##_i16, gint16, guint16, expr_signed) \
  X (op##_i32, gint32, guint32, expr_signed) X (op##_i64, gint64, guint64, expr_signed) \
  X (op##_u8, guint8, guint8, expr_unsigned) X (op##_u16, guint16, guint16, expr_unsigned) \
  X (op##_u32, guint32, guint32, expr_unsigned) X (op##_u64, guint64, guint64, expr_unsigned)

#define RUN_INT(name, T, UT, expr) RUN_FN_U (name, T, UT, T, expr)
#define RUN_CMP_INT(name, T, UT, expr) RUN_FN_U (name, T, UT, guint8, expr)

#define ARITH(op, fexpr, sexpr, uexpr)                                     \
  RUN_FN (op##_f32, float, float, fexpr)                                   \
  RUN_FN (op##_f64, double, double, fexpr)                                 \
  INT_TYPES (RUN_INT, op, sexpr, uexpr)

#define TABLE(op) { [GRAFT_DTYPE_FLOAT32] = op##_f32, [GRAFT_DTYPE_FLOAT64] = op##_f64, \
  [GRAFT_DTYPE_INT8] = op##_i8, [GRAFT_DTYPE_INT16] = op##_i16, [GRAFT_DTYPE_INT32] = op##_i32, \
  [GRAFT_DTYPE_INT64] = op##_i64, [GRAFT_DTYPE_UINT8] = op##_u8, [GRAFT_DTYPE_UINT16] = op##_u16, \
  [GRAFT_DTYPE_UINT32] = op##_u32, [GRAFT_DTYPE_UINT64] = op##_u64 }
#define INT_TABLE(op) { [GRAFT_DTYPE_INT8] = op##_i8, [GRAFT_DTYPE_INT16] = op##_i16, \
  [GRAFT_DTYPE_INT32] = op##_i32, [GRAFT_DTYPE_INT64] = op##_i64, [GRAFT_DTYPE_UINT8] = op##_u8, \
  [GRAFT_DTYPE_UINT16] = op##_u16, [GRAFT_DTYPE_UINT32] = op##_u32, [GRAFT_DTYPE_UINT64] = op##_u64 }

#define WRAP(e) ((elem_t) (uelem_t) (e))
ARITH (add, x + y, WRAP ((uelem_t) x + (uelem_t) y), x + y)
ARITH (sub, x - y, WRAP ((uelem_t) x - (uelem_t) y), x - y)
ARITH (mul, x * y, WRAP ((uelem_t) x * (uelem_t) y), x * y)

/* float32 Add, Sub, Mul and Div once more per instruction set, the loops
 * vectorised at -O3 (the build's baseline, SSE2 at -O2, left them scalar:
 * EfficientNet's squeeze-and-excitation Mul of [N, C, H, W] by
 * [N, C, 1, 1], PoolFormer's layer scales and residual Adds). Each lane
 * rounds as the scalar loop does, so every level gives the same bits.
 * ivdep: out is a distinct tensor or exactly one of the inputs (in
 * place), never a shifted view, so the loops need no overlap check. */
#define RUN_F32_AT(name, target, expr)                                                    \
  static target GRAFT_HOT_LOOP void name (const void *pa, gint64 sa, const void *pb,     \
                                          gint64 sb, void *po, gint64 n, gconstpointer u) \
  {                                                                                       \
    const float *a = pa, *b = pb;                                                         \
    float *o = po;                                                                        \
    if (sa == 1 && sb == 1)                                                               \
      {                                                                                   \
        _Pragma ("GCC ivdep") for (gint64 i = 0; i < n; i++)                              \
          {                                                                               \
            float x = a[i], y = b[i];                                                     \
            o[i] = (expr);                                                                \
          }                                                                               \
      }                                                                                   \
    else if (sa == 1 && sb == 0)                                                          \
      {                                                                                   \
        float y = b[0];                                                                   \
        _Pragma ("GCC ivdep") for (gint64 i = 0; i < n; i++)                              \
          {                                                                               \
            float x = a[i];                                                               \
            o[i] = (expr);                                                                \
          }                                                                               \
      }                                                                                   \
    else if (sa == 0 && sb == 1)                                                          \
      {                                                                                   \
        float x = a[0];                                                                   \
        _Pragma ("GCC ivdep") for (gint64 i = 0; i < n; i++)                              \
          {                                                                               \
            float y = b[i];                                                               \
            o[i] = (expr);                                                                \
          }                                                                               \
      }                                                                                   \
    else                                                                                  \
      for (gint64 i = 0; i < n; i++)                                                      \
        {                                                                                 \
          float x = a[i * sa], y = b[i * sb];                                             \
          o[i] = (expr);                                                                  \
        }                                                                                 \
  }

#ifdef GRAFT_HAVE_X86_SIMD
#define ARITH_F32(op, expr)                                                             \
  RUN_F32_AT (op##_f32_sse2, , expr)                                                    \
  RUN_F32_AT (op##_f32_avx2, GRAFT_TARGET_AVX2_FMA, expr)                               \
  RUN_F32_AT (op##_f32_avx512, __attribute__ ((target ("avx512f"))), expr)
ARITH_F32 (add, x + y)
ARITH_F32 (sub, x - y)
ARITH_F32 (mul, x * y)
ARITH_F32 (div, x / y)

/* By SIMD level (portable, AVX2, AVX-512) and op; NULL: the table's run. */
static const GraftBinaryRun float_runs[GRAFT_SIMD_N_LEVELS][N_OPS] = {
#define LEVEL(isa) { [OP_ADD] = add_f32_##isa, [OP_SUB] = sub_f32_##isa, [OP_MUL] = mul_f32_##isa, \
                     [OP_DIV] = div_f32_##isa }
  LEVEL (sse2), LEVEL (avx2), LEVEL (avx512),
#undef LEVEL
};
#endif

/* The run of op on dtype at the kernel table's SIMD level. */
static GraftBinaryRun run_for (BinaryOp op, GraftDType dtype);
ARITH (max, (isnan (x) || isnan (y)) ? NAN : (x > y ? x : y), x > y ? x : y, x > y ? x : y)
ARITH (min, (isnan (x) || isnan (y)) ? NAN : (x < y ? x : y), x < y ? x : y, x < y ? x : y)
ARITH (prelu, x < 0 ? y * x : x, x < 0 ? WRAP ((uelem_t) y * (uelem_t) x) : x, x)
/* Signed division: C truncates toward zero like ONNX; guard /0 and MIN/-1. */
ARITH (div, x / y, y == 0 ? 0 : (y == -1 ? WRAP (0 - (uelem_t) x) : x / y), y == 0 ? 0 : x / y)
ARITH (modc, fmod (x, y), y == 0 ? 0 : (y == -1 ? 0 : x % y), y == 0 ? 0 : x % y)
/* Mod without fmod takes the divisor's sign, as Python's % does. */
static inline double
python_fmod (double x, double y)
{
  double r = fmod (x, y);
  return r != 0 && (r < 0) != (y < 0) ? r + y : r;
}
ARITH (modpy, python_fmod (x, y), y == 0 ? 0 : (y == -1 ? 0 : ((x % y) != 0 && ((x % y) < 0) != (y < 0) ? x % y + y : x % y)),
       y == 0 ? 0 : x % y)

#define CMP(op, expr) \
  RUN_FN (op##_f32, float, guint8, expr) RUN_FN (op##_f64, double, guint8, expr) \
  INT_TYPES (RUN_CMP_INT, op, expr, expr) RUN_FN (op##_b, guint8, guint8, expr)
CMP (eq, x == y)
CMP (lt, x < y)
CMP (gt, x > y)
CMP (le, x <= y)
CMP (ge, x >= y)

#define BITS(op, expr) INT_TYPES (RUN_INT, op, expr, expr)
BITS (band, x & y)
BITS (bor, x | y)
BITS (bxor, x ^ y)
/* Left shifts go through the unsigned type: bits shifted past the sign bit
 * are dropped, not undefined behaviour. */
BITS (shl, (guint64) y >= sizeof (elem_t) * 8 ? 0 : (elem_t) ((uelem_t) x << y))
/* Right shifts of signed values are arithmetic; a shift out of range
 * leaves only the sign fill (-1 for a negative value). */
BITS (shr, (guint64) y >= sizeof (elem_t) * 8 ? (elem_t) (x < 1 && x != 0 ? -1 : 0) : (elem_t) (x >> y))

RUN_FN (land_b, guint8, guint8, (x != 0) && (y != 0))
RUN_FN (lor_b, guint8, guint8, (x != 0) || (y != 0))
RUN_FN (lxor_b, guint8, guint8, (x != 0) != (y != 0))

typedef GraftBinaryRun RunTable[GRAFT_DTYPE_BFLOAT16 + 1];

static const RunTable tables[N_OPS] = {
  [OP_ADD] = TABLE (add), [OP_SUB] = TABLE (sub), [OP_MUL] = TABLE (mul), [OP_DIV] = TABLE (div),
  [OP_MAX] = TABLE (max), [OP_MIN] = TABLE (min), [OP_PRELU] = TABLE (prelu),
  [OP_MOD_C] = TABLE (modc), [OP_MOD_PY] = TABLE (modpy),
  [OP_EQUAL] = { [GRAFT_DTYPE_FLOAT32] = eq_f32, [GRAFT_DTYPE_FLOAT64] = eq_f64, [GRAFT_DTYPE_INT8] = eq_i8,
                 [GRAFT_DTYPE_INT16] = eq_i16, [GRAFT_DTYPE_INT32] = eq_i32, [GRAFT_DTYPE_INT64] = eq_i64,
                 [GRAFT_DTYPE_UINT8] = eq_u8, [GRAFT_DTYPE_UINT16] = eq_u16, [GRAFT_DTYPE_UINT32] = eq_u32,
                 [GRAFT_DTYPE_UINT64] = eq_u64, [GRAFT_DTYPE_BOOL] = eq_b },
  [OP_LESS] = { [GRAFT_DTYPE_FLOAT32] = lt_f32, [GRAFT_DTYPE_FLOAT64] = lt_f64, [GRAFT_DTYPE_INT8] = lt_i8,
                [GRAFT_DTYPE_INT16] = lt_i16, [GRAFT_DTYPE_INT32] = lt_i32, [GRAFT_DTYPE_INT64] = lt_i64,
                [GRAFT_DTYPE_UINT8] = lt_u8, [GRAFT_DTYPE_UINT16] = lt_u16, [GRAFT_DTYPE_UINT32] = lt_u32,
                [GRAFT_DTYPE_UINT64] = lt_u64, [GRAFT_DTYPE_BOOL] = lt_b },
  [OP_GREATER] = { [GRAFT_DTYPE_FLOAT32] = gt_f32, [GRAFT_DTYPE_FLOAT64] = gt_f64, [GRAFT_DTYPE_INT8] = gt_i8,
                   [GRAFT_DTYPE_INT16] = gt_i16, [GRAFT_DTYPE_INT32] = gt_i32, [GRAFT_DTYPE_INT64] = gt_i64,
                   [GRAFT_DTYPE_UINT8] = gt_u8, [GRAFT_DTYPE_UINT16] = gt_u16, [GRAFT_DTYPE_UINT32] = gt_u32,
                   [GRAFT_DTYPE_UINT64] = gt_u64, [GRAFT_DTYPE_BOOL] = gt_b },
  [OP_LESS_EQUAL] = { [GRAFT_DTYPE_FLOAT32] = le_f32, [GRAFT_DTYPE_FLOAT64] = le_f64, [GRAFT_DTYPE_INT8] = le_i8,
                      [GRAFT_DTYPE_INT16] = le_i16, [GRAFT_DTYPE_INT32] = le_i32, [GRAFT_DTYPE_INT64] = le_i64,
                      [GRAFT_DTYPE_UINT8] = le_u8, [GRAFT_DTYPE_UINT16] = le_u16, [GRAFT_DTYPE_UINT32] = le_u32,
                      [GRAFT_DTYPE_UINT64] = le_u64, [GRAFT_DTYPE_BOOL] = le_b },
  [OP_GREATER_EQUAL] = { [GRAFT_DTYPE_FLOAT32] = ge_f32, [GRAFT_DTYPE_FLOAT64] = ge_f64, [GRAFT_DTYPE_INT8] = ge_i8,
                         [GRAFT_DTYPE_INT16] = ge_i16, [GRAFT_DTYPE_INT32] = ge_i32, [GRAFT_DTYPE_INT64] = ge_i64,
                         [GRAFT_DTYPE_UINT8] = ge_u8, [GRAFT_DTYPE_UINT16] = ge_u16, [GRAFT_DTYPE_UINT32] = ge_u32,
                         [GRAFT_DTYPE_UINT64] = ge_u64, [GRAFT_DTYPE_BOOL] = ge_b },
  [OP_AND] = { [GRAFT_DTYPE_BOOL] = land_b }, [OP_OR] = { [GRAFT_DTYPE_BOOL] = lor_b },
  [OP_XOR] = { [GRAFT_DTYPE_BOOL] = lxor_b },
  [OP_BIT_AND] = INT_TABLE (band), [OP_BIT_OR] = INT_TABLE (bor), [OP_BIT_XOR] = INT_TABLE (bxor),
  [OP_SHIFT_LEFT] = INT_TABLE (shl), [OP_SHIFT_RIGHT] = INT_TABLE (shr),
};

static GraftBinaryRun
run_for (BinaryOp op, GraftDType dtype)
{
  if ((guint) dtype > GRAFT_DTYPE_BFLOAT16)
    return NULL;
#ifdef GRAFT_HAVE_X86_SIMD
  if (dtype == GRAFT_DTYPE_FLOAT32 && float_runs[graft_kernel_table ()->level][op] != NULL)
    return float_runs[graft_kernel_table ()->level][op];
#endif
  return tables[op][dtype];
}

static gboolean
is_comparison (BinaryOp op)
{
  return op >= OP_EQUAL && op <= OP_XOR;
}

static BinaryOp
op_for_node (GraftNode *node)
{
  static const struct { const char *name; BinaryOp op; } names[] = {
    { "Add", OP_ADD }, { "Sub", OP_SUB }, { "Mul", OP_MUL }, { "Div", OP_DIV },
    { "Max", OP_MAX }, { "Min", OP_MIN }, { "Sum", OP_ADD }, { "Mean", OP_ADD },
    { "Equal", OP_EQUAL }, { "Less", OP_LESS }, { "Greater", OP_GREATER },
    { "LessOrEqual", OP_LESS_EQUAL }, { "GreaterOrEqual", OP_GREATER_EQUAL },
    { "And", OP_AND }, { "Or", OP_OR }, { "Xor", OP_XOR },
    { "BitwiseAnd", OP_BIT_AND }, { "BitwiseOr", OP_BIT_OR }, { "BitwiseXor", OP_BIT_XOR },
    { "PRelu", OP_PRELU },
    { "add", OP_ADD }, { "add_", OP_ADD }, { "sub", OP_SUB }, { "sub_", OP_SUB },
    { "mul", OP_MUL }, { "mul_", OP_MUL }, { "div", OP_DIV }, { "div_", OP_DIV },
    { "maximum", OP_MAX }, { "minimum", OP_MIN }, { "eq", OP_EQUAL }, { "lt", OP_LESS },
    { "gt", OP_GREATER }, { "le", OP_LESS_EQUAL }, { "ge", OP_GREATER_EQUAL },
  };
  const char *t = node->op_type;
  if (strcmp (t, "BitShift") == 0)
    return strcmp (graft_node_attr_string (node, "direction", "LEFT"), "RIGHT") == 0 ? OP_SHIFT_RIGHT : OP_SHIFT_LEFT;
  if (strcmp (t, "Mod") == 0)
    return graft_node_attr_int (node, "fmod", 0) ? OP_MOD_C : OP_MOD_PY;
  for (gsize i = 0; i < G_N_ELEMENTS (names); i++)
    if (strcmp (names[i].name, t) == 0)
      return names[i].op;
  return N_OPS;
}

static gboolean
infer_binary (GraftInferContext *ctx, GError **error)
{
  GraftShape shape;
  BinaryOp op = op_for_node (ctx->node);
  GraftInferValue *a = graft_infer_input (ctx, 0);

  if (a == NULL)
    return graft_kernel_fail (error, "input 0 is missing");
  if (!graft_infer_broadcast_inputs (ctx, 0, ctx->n_inputs, &shape, error))
    return FALSE;
  if (op == OP_PRELU)
    {
      graft_shape_clear (&shape);
      graft_shape_copy (&shape, &a->shape);
    }
  graft_infer_set_output (ctx, 0, is_comparison (op) ? GRAFT_DTYPE_BOOL : a->dtype, &shape);
  graft_shape_clear (&shape);
  return TRUE;
}

static GraftRtTensor *
apply (BinaryOp op, GraftRtTensor *a, GraftRtTensor *b, GraftRtTensor *out, GError **error)
{
  if (a->dtype != b->dtype)
    return graft_kernel_fail (error, "inputs have different element types (%s and %s)",
                              graft_dtype_to_string (a->dtype), graft_dtype_to_string (b->dtype)), NULL;
  if (op == OP_EQUAL && a->dtype == GRAFT_DTYPE_STRING)
    {
      const GraftRtTensor *ins[2] = { a, b };
      GraftBroadcastIter it;
      graft_broadcast_iter_init (&it, out, ins, 2);
      for (gint64 i = 0; i < out->numel; i++, graft_broadcast_iter_next (&it))
        ((guint8 *) out->data)[i] = g_strcmp0 (((char **) a->data)[it.offsets[0]], ((char **) b->data)[it.offsets[1]]) == 0;
      return out;
    }
  GraftBinaryRun run = run_for (op, a->dtype);
  if (run == NULL)
    return graft_kernel_unsupported (error, "element type %s is not supported", graft_dtype_to_string (a->dtype)), NULL;
  graft_broadcast_binary (a, b, out, run, NULL);
  return out;
}

/* Parallel split of a large same-shape float32 op across the pool. */
typedef struct {
  GraftBinaryRun run;
  const float *a, *b;
  float *out;
  gint64 n, chunk;
} SplitJob;

static void
split_chunk (gint64 index, gpointer data)
{
  SplitJob *job = data;
  gint64 start = index * job->chunk, n = MIN (job->chunk, job->n - start);
  job->run (job->a + start, 1, job->b + start, 1, job->out + start, n, NULL);
}

static int
dtype_category (GraftDType t)
{
  return t == GRAFT_DTYPE_BOOL ? 0 : graft_dtype_is_float (t) ? 2 : 1;
}

/* TRUE when PyTorch's result type of aten::op(self, other) is not self's:
 * an integer tensor times a float number (SAM's arange(n)[:, None] * 1.0),
 * an integer compared with a float, a 0-d self with a tensor of another
 * type; and a constant self. The same-type case, and a float tensor with a
 * Python number, stay on this file's kernels. */
static gboolean
aten_result_is_not_self (GraftKernelContext *ctx, const GraftRtTensor *a)
{
  GraftAtenArg args[2];
  graft_aten_args (ctx, NULL, 2, args);
  /* a constant self (2 * x, scripted RAFT's 2 * 2 ** (levels - 1)): input
   * 0 is other, which only the promoting kernel reads by position */
  if (args[0].attr != NULL)
    return TRUE;
  if (a == NULL)
    return FALSE;
  /* list + list (group_norm's [N*C // G, G] + list(size[2:])) */
  if (a->kind != GRAFT_RT_TENSOR)
    return TRUE;
  if (args[1].attr)
    return args[1].attr->type == GRAFT_ATTR_FLOAT && !graft_dtype_is_float (a->dtype);
  const GraftRtTensor *b = args[1].value;
  if (b == NULL || b->kind != GRAFT_RT_TENSOR || b->dtype == a->dtype)
    return FALSE;
  return dtype_category (b->dtype) > dtype_category (a->dtype) || (a->rank == 0 && b->rank > 0);
}

/* div(self, other, rounding_mode='floor' | 'trunc'): not a plain Div. */
static gboolean
aten_div_rounds (GraftKernelContext *ctx, BinaryOp op)
{
  if (op != OP_DIV)
    return FALSE;
  static const char *const names[] = { "self", "other", "rounding_mode" };
  GraftAtenArg args[3];
  g_autofree char *owned = NULL;
  graft_aten_args (ctx, names, 3, args);
  return graft_arg_string (&args[2], &owned) != NULL;
}

/* Broadcasting small against big gives big's shape. */
static gboolean
broadcasts_to (const GraftRtTensor *small, const GraftRtTensor *big)
{
  if (small->kind != GRAFT_RT_TENSOR || big->kind != GRAFT_RT_TENSOR || small->rank > big->rank)
    return FALSE;
  for (int i = 1; i <= small->rank; i++)
    if (small->dims[small->rank - i] != 1 && small->dims[small->rank - i] != big->dims[big->rank - i])
      return FALSE;
  return TRUE;
}

static gboolean
kernel_binary (GraftKernelContext *ctx, GError **error)
{
  BinaryOp op = op_for_node (ctx->node);
  GraftRtTensor *a = graft_kernel_input (ctx, 0);
  GraftRtTensor *b = graft_kernel_input (ctx, 1);
  GraftRtTensor *out;

  if (op == N_OPS)
    return graft_kernel_unsupported (error, "unknown binary op %s", ctx->node->op);
  if (g_str_has_prefix (ctx->node->op, "aten::") && (aten_result_is_not_self (ctx, a) || aten_div_rounds (ctx, op)))
    return graft_aten_binary_promoted (ctx, error);
  out = NULL;
  /* Residual adds, and scalings broadcast over a map (squeeze-and-
   * excitation, layer scale): write into an input of the output's shape
   * that is not needed afterwards. */
  if (b && ctx->n_inputs == 2 && !is_comparison (op) && a->dtype == b->dtype && a->dtype == GRAFT_DTYPE_FLOAT32)
    {
      gboolean onnx = g_str_has_prefix (ctx->node->op, "onnx::");
      if (graft_rt_tensor_same_shape (a, b) || (onnx && broadcasts_to (b, a)))
        out = graft_kernel_steal_input (ctx, 0);
      if (out == NULL && (graft_rt_tensor_same_shape (a, b) || (onnx && op != OP_PRELU && broadcasts_to (a, b))))
        out = graft_kernel_steal_input (ctx, 1);
      if (out)
        graft_kernel_set_output (ctx, 0, out);
    }
  if (out == NULL && (out = graft_kernel_output (ctx, 0, error)) == NULL)
    return FALSE;

  g_autoptr(GraftRtTensor) constant_b = NULL;
  if (g_str_has_prefix (ctx->node->op, "aten::"))
    {
      /* aten::add/sub(self, other, alpha): other may be a folded constant */
      GraftAtenArg args[3];
      GraftAttribute *ba;
      graft_aten_args (ctx, NULL, 3, args);
      ba = args[1].attr;
      if (ba != NULL && ba->type != GRAFT_ATTR_NONE)
        {
          constant_b = graft_aten_constant_tensor (ba, error);
          if (constant_b == NULL)
            return FALSE;
          b = constant_b;
        }
      else
        b = ba == NULL ? args[1].value : NULL;
      if ((op == OP_ADD || op == OP_SUB) && graft_arg_double (&args[2], 1.0) != 1.0)
        return graft_kernel_unsupported (error, "alpha != 1 is not supported");
      if (b == NULL)
        return graft_kernel_fail (error, "the second operand is missing");
    }
  if (b && a->dtype != b->dtype && g_str_has_prefix (ctx->node->op, "aten::"))
    {
      /* TorchScript scalars arrive as 0-d tensors of another type. */
      g_autoptr(GraftRtTensor) cast = graft_rt_tensor_cast (b, a->dtype, error);
      if (cast == NULL)
        return FALSE;
      return apply (op, a, cast, out, error) != NULL;
    }

  if (b == NULL)
    {
      /* Variadic with one input: a copy */
      memcpy (out->data, a->data, MIN (out->nbytes, a->nbytes));
    }
  else if (a->dtype == GRAFT_DTYPE_FLOAT32 && graft_rt_tensor_same_shape (a, b) && a->numel >= 65536 &&
           graft_kernel_get_n_threads (ctx) > 1 && out->dtype == GRAFT_DTYPE_FLOAT32)
    {
      SplitJob job = { run_for (op, GRAFT_DTYPE_FLOAT32), a->data, b->data, out->data, a->numel, 0 };
      gint64 chunks = graft_kernel_get_n_threads (ctx) * 4;
      job.chunk = (a->numel + chunks - 1) / chunks;
      graft_kernel_parallel_for (ctx, (a->numel + job.chunk - 1) / job.chunk, split_chunk, &job);
    }
  else if (apply (op, a, b, out, error) == NULL)
    return FALSE;

  /* Sum/Max/Min/Mean with more than two inputs: fold the rest in. */
  for (guint i = 2; i < ctx->n_inputs && !g_str_has_prefix (ctx->node->op, "aten::"); i++)
    {
      GraftRtTensor *c = ctx->inputs[i];
      if (c == NULL)
        continue;
      if (apply (op, out, c, out, error) == NULL)
        return FALSE;
    }
  if (strcmp (ctx->node->op_type, "Mean") == 0)
    for (gint64 i = 0; i < out->numel; i++)
      graft_rt_tensor_set_f64 (out, i, graft_rt_tensor_get_f64 (out, i) / ctx->n_inputs);
  return TRUE;
}

/* Folding in place above needs the accumulator to be the broadcast output:
 * graft_broadcast_binary reads a at broadcast offsets, and out already has
 * the full shape, so out op c is well defined. */

/* float32 x raised to one exponent e, element by element, without the
 * broadcast walk. For e = 2 (RMSNorm's and T5's x.pow(2)) x·x, and for
 * e = ½ sqrtf (but at −0 and −∞, where pow gives +0 and +∞): both
 * correctly rounded, as PyTorch and onnxruntime compute them, where glibc's
 * powf is off by an ulp in about 6 of 10,000 squares (and 22 % of T5's
 * run went to it). For e = 3 (GPT-2's tanh GELU, x + 0.044715·x³)
 * x·x·x, as both of them compute a cube: powf took 40 % of GPT-2's run. */
GRAFT_HOT_LOOP void
graft_f32_pow_scalar (const float *x, float e, float *y, gint64 n)
{
  if (e == 2.0f)
    for (gint64 i = 0; i < n; i++)
      y[i] = x[i] * x[i];
  else if (e == 3.0f)
    for (gint64 i = 0; i < n; i++)
      y[i] = x[i] * x[i] * x[i];
  else if (e == 1.0f)
    memmove (y, x, n * sizeof (float));
  else if (e == 0.5f)
    for (gint64 i = 0; i < n; i++)
      y[i] = x[i] == 0.0f ? 0.0f : x[i] == -INFINITY ? INFINITY : sqrtf (x[i]);
  else
    for (gint64 i = 0; i < n; i++)
      y[i] = powf (x[i], e);
}

static gboolean
kernel_pow (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *a = graft_kernel_input (ctx, 0);
  GraftRtTensor *b = graft_kernel_input (ctx, 1);
  GraftRtTensor *out = graft_kernel_output (ctx, 0, error);
  const GraftRtTensor *ins[2] = { a, b };
  GraftBroadcastIter iter;

  if (out == NULL)
    return FALSE;
  if (a->dtype == GRAFT_DTYPE_FLOAT32 && b->dtype == GRAFT_DTYPE_FLOAT32 && b->numel == 1 && a->numel == out->numel)
    {
      graft_f32_pow_scalar (a->data, ((const float *) b->data)[0], out->data, out->numel);
      return TRUE;
    }
  graft_broadcast_iter_init (&iter, out, ins, 2);
  gboolean int_exact = graft_dtype_is_integer (a->dtype) && graft_dtype_is_integer (b->dtype);
  for (gint64 i = 0; i < out->numel; i++, graft_broadcast_iter_next (&iter))
    {
      if (int_exact)
        {
          gint64 base = graft_rt_tensor_get_i64 (a, iter.offsets[0]);
          gint64 e = graft_rt_tensor_get_i64 (b, iter.offsets[1]);
          guint64 r = 1;
          for (gint64 k = 0; k < e && k < 64; k++)
            r *= (guint64) base;
          graft_rt_tensor_set_i64 (out, i, e < 0 ? 0 : (gint64) r);
        }
      else if (a->dtype == GRAFT_DTYPE_FLOAT32 && b->dtype == GRAFT_DTYPE_FLOAT32)
        ((float *) out->data)[i] = powf (((float *) a->data)[iter.offsets[0]], ((float *) b->data)[iter.offsets[1]]);
      else
        graft_rt_tensor_set_f64 (out, i, pow (graft_rt_tensor_get_f64 (a, iter.offsets[0]),
                                              graft_rt_tensor_get_f64 (b, iter.offsets[1])));
    }
  return TRUE;
}

static gboolean
infer_where (GraftInferContext *ctx, GError **error)
{
  GraftShape shape;
  GraftInferValue *x = graft_infer_input (ctx, 1);
  if (x == NULL)
    return graft_kernel_fail (error, "input X is missing");
  if (!graft_infer_broadcast_inputs (ctx, 0, 3, &shape, error))
    return FALSE;
  graft_infer_set_output (ctx, 0, x->dtype, &shape);
  graft_shape_clear (&shape);
  return TRUE;
}

/* Where row by row of the last axis, on elements of 1, 2, 4 or 8 bytes
 * (the element by element walk with a memcpy each took wav2vec2's mask
 * Where 0.09 ms for [2, 12, 49, 49]). */
#define WHERE_ROW(type)                                                                          \
  for (gint64 k = 0; k < inner; k++)                                                             \
    ((type *) o)[k] = cond[k * sc] ? ((const type *) xs)[k * sx] : ((const type *) ys)[k * sy]

static void
where_rows (const GraftRtTensor *c, const GraftRtTensor *x, const GraftRtTensor *y, GraftRtTensor *out,
            GraftBroadcastIter *iter)
{
  gsize size = graft_rt_dtype_size (out->dtype);
  int last = out->rank - 1;
  gint64 inner = out->dims[last];
  gint64 sc = iter->strides[0][last], sx = iter->strides[1][last], sy = iter->strides[2][last];
  for (gint64 row = 0; row < out->numel; row += inner, graft_broadcast_iter_next_row (iter))
    {
      const guint8 *cond = (const guint8 *) c->data + iter->offsets[0];
      const guint8 *xs = (const guint8 *) x->data + iter->offsets[1] * size;
      const guint8 *ys = (const guint8 *) y->data + iter->offsets[2] * size;
      guint8 *o = (guint8 *) out->data + row * size;
      switch (size)
        {
        case 1: WHERE_ROW (guint8); break;
        case 2: WHERE_ROW (guint16); break;
        case 4: WHERE_ROW (guint32); break;
        default: WHERE_ROW (guint64); break;
        }
    }
}
#undef WHERE_ROW

static gboolean
kernel_where (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *c = graft_kernel_input (ctx, 0);
  GraftRtTensor *x = graft_kernel_input (ctx, 1);
  GraftRtTensor *y = graft_kernel_input (ctx, 2);
  GraftRtTensor *out = graft_kernel_output (ctx, 0, error);
  const GraftRtTensor *ins[3] = { c, x, y };
  GraftBroadcastIter iter;

  if (out == NULL)
    return FALSE;
  if (x->dtype != y->dtype)
    return graft_kernel_fail (error, "X and Y have different element types");
  gsize elem = graft_rt_dtype_size (out->dtype);
  graft_broadcast_iter_init (&iter, out, ins, 3);
  if (out->numel > 0 && out->rank > 0 && out->dtype != GRAFT_DTYPE_STRING &&
      (elem == 1 || elem == 2 || elem == 4 || elem == 8))
    {
      where_rows (c, x, y, out, &iter);
      return TRUE;
    }
  for (gint64 i = 0; i < out->numel; i++, graft_broadcast_iter_next (&iter))
    {
      gboolean take_x = ((guint8 *) c->data)[iter.offsets[0]] != 0;
      const GraftRtTensor *src = take_x ? x : y;
      gint64 off = take_x ? iter.offsets[1] : iter.offsets[2];
      if (out->dtype == GRAFT_DTYPE_STRING)
        {
          g_free (((char **) out->data)[i]);
          ((char **) out->data)[i] = g_strdup (((char **) src->data)[off]);
        }
      else
        memcpy ((char *) out->data + i * elem, (const char *) src->data + off * elem, elem);
    }
  return TRUE;
}

static gboolean
kernel_bitwise_not (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = graft_kernel_input (ctx, 0);
  GraftRtTensor *out = graft_kernel_output (ctx, 0, error);
  if (out == NULL)
    return FALSE;
  for (gint64 i = 0; i < x->numel; i++)
    graft_rt_tensor_set_i64 (out, i, ~graft_rt_tensor_get_i64 (x, i));
  return TRUE;
}

#define BIN(op, since, input_names, output_names) { "onnx::" op, since, 0, infer_binary, kernel_binary, GRAFT_OP_HALF_AS_FLOAT, input_names, output_names }
#define ATEN_BIN(op) { "aten::" op, 0, 0, infer_binary, kernel_binary, GRAFT_OP_HALF_AS_FLOAT }

const GraftOpSchema graft_ops_binary[] = {
  BIN ("Add", 1, "A B", "C"), BIN ("Sub", 1, "A B", "C"), BIN ("Mul", 1, "A B", "C"), BIN ("Div", 1, "A B", "C"), BIN ("Max", 1, "data_0...", "max"), BIN ("Min", 1, "data_0...", "min"),
  BIN ("Sum", 1, "data_0...", "sum"), BIN ("Mean", 1, "data_0...", "mean"), BIN ("Equal", 1, "A B", "C"), BIN ("Less", 1, "A B", "C"), BIN ("Greater", 1, "A B", "C"),
  BIN ("LessOrEqual", 12, "A B", "C"), BIN ("GreaterOrEqual", 12, "A B", "C"), BIN ("And", 1, "A B", "C"), BIN ("Or", 1, "A B", "C"), BIN ("Xor", 1, "A B", "C"),
  BIN ("BitwiseAnd", 18, "A B", "C"), BIN ("BitwiseOr", 18, "A B", "C"), BIN ("BitwiseXor", 18, "A B", "C"), BIN ("BitShift", 11, "X Y", "Z"),
  BIN ("Mod", 10, "A B", "C"), BIN ("PRelu", 1, "X slope", "Y"),
  { "onnx::BitwiseNot", 18, 0, graft_infer_same_as_input, kernel_bitwise_not, 0, "X", "Y" },
  { "onnx::Pow", 1, 0, infer_binary, kernel_pow, GRAFT_OP_HALF_AS_FLOAT, "X Y", "Z" },
  { "onnx::Where", 9, 0, infer_where, kernel_where, 0, "condition X Y", "output" },
  ATEN_BIN ("add"), ATEN_BIN ("add_"), ATEN_BIN ("sub"), ATEN_BIN ("sub_"), ATEN_BIN ("mul"),
  ATEN_BIN ("mul_"), ATEN_BIN ("div"), ATEN_BIN ("div_"), ATEN_BIN ("maximum"), ATEN_BIN ("minimum"),
  ATEN_BIN ("eq"), ATEN_BIN ("lt"), ATEN_BIN ("gt"), ATEN_BIN ("le"), ATEN_BIN ("ge"),
  { NULL }
};
