/* Elementwise unary operators: math functions and activations.
 * Computation goes through double except for the hot float32 activations. */
#include <math.h>
#include <string.h>
#include "runtime/kernels/aten-args.h"
#include "runtime/kernels/kernel-util.h"
#include "runtime/kernels/vector-math.h"

typedef struct {
  double alpha, beta, gamma;
  gboolean flag_a, flag_b;
} UnaryParams;

typedef double (*UnaryFunc) (double x, const UnaryParams *p);

static double f_abs (double x, const UnaryParams *p) { return fabs (x); }
static double f_neg (double x, const UnaryParams *p) { return -x; }
static double f_floor (double x, const UnaryParams *p) { return floor (x); }
static double f_ceil (double x, const UnaryParams *p) { return ceil (x); }
static double f_round (double x, const UnaryParams *p) { return nearbyint (x); }
static double f_sqrt (double x, const UnaryParams *p) { return sqrt (x); }
static double f_exp (double x, const UnaryParams *p) { return exp (x); }
static double f_log (double x, const UnaryParams *p) { return log (x); }
static double f_reciprocal (double x, const UnaryParams *p) { return 1.0 / x; }
static double f_sin (double x, const UnaryParams *p) { return sin (x); }
static double f_cos (double x, const UnaryParams *p) { return cos (x); }
static double f_tan (double x, const UnaryParams *p) { return tan (x); }
static double f_asin (double x, const UnaryParams *p) { return asin (x); }
static double f_acos (double x, const UnaryParams *p) { return acos (x); }
static double f_atan (double x, const UnaryParams *p) { return atan (x); }
static double f_sinh (double x, const UnaryParams *p) { return sinh (x); }
static double f_cosh (double x, const UnaryParams *p) { return cosh (x); }
static double f_tanh (double x, const UnaryParams *p) { return tanh (x); }
static double f_asinh (double x, const UnaryParams *p) { return asinh (x); }
static double f_acosh (double x, const UnaryParams *p) { return acosh (x); }
static double f_atanh (double x, const UnaryParams *p) { return atanh (x); }
static double f_erf (double x, const UnaryParams *p) { return erf (x); }
static double f_sign (double x, const UnaryParams *p) { return x > 0 ? 1 : x < 0 ? -1 : 0; }
static double f_sigmoid (double x, const UnaryParams *p) { return x >= 0 ? 1.0 / (1.0 + exp (-x)) : exp (x) / (1.0 + exp (x)); }
static double f_relu (double x, const UnaryParams *p) { return x > 0 ? x : 0; }
static double f_leaky_relu (double x, const UnaryParams *p) { return x >= 0 ? x : p->alpha * x; }
static double f_elu (double x, const UnaryParams *p) { return x >= 0 ? x : p->alpha * (exp (x) - 1); }
static double f_selu (double x, const UnaryParams *p) { return p->gamma * (x > 0 ? x : p->alpha * (exp (x) - 1)); }
static double f_celu (double x, const UnaryParams *p) { return MAX (0, x) + MIN (0, p->alpha * (exp (x / p->alpha) - 1)); }
static double f_hard_sigmoid (double x, const UnaryParams *p) { return MAX (0, MIN (1, p->alpha * x + p->beta)); }
static double f_swish (double x, const UnaryParams *p) { return x * f_sigmoid (p->alpha * x, p); }
static double f_hard_swish (double x, const UnaryParams *p) { return x * MAX (0, MIN (1, x / 6 + 0.5)); }
static double f_softplus (double x, const UnaryParams *p) { return x > 30 ? x : log1p (exp (x)); }
static double f_softsign (double x, const UnaryParams *p) { return x / (1 + fabs (x)); }
static double f_mish (double x, const UnaryParams *p) { return x * tanh (x > 30 ? x : log1p (exp (x))); }
static double f_thresholded_relu (double x, const UnaryParams *p) { return x > p->alpha ? x : 0; }
static double f_shrink (double x, const UnaryParams *p) { return x < -p->alpha ? x + p->beta : x > p->alpha ? x - p->beta : 0; }
static double f_gelu (double x, const UnaryParams *p)
{
  if (p->flag_a) /* tanh approximation */
    return 0.5 * x * (1 + tanh (sqrt (2 / G_PI) * (x + 0.044715 * x * x * x)));
  return 0.5 * x * (1 + erf (x / G_SQRT2));
}
static double f_silu (double x, const UnaryParams *p) { return x * f_sigmoid (x, p); }
static double f_relu6 (double x, const UnaryParams *p) { return MIN (MAX (x, 0), 6); }

static double f_rsqrt (double x, const UnaryParams *p) { return 1.0 / sqrt (x); }

typedef enum {
  UNARY_INTEGER_EXACT = 1 << 0,  /* integer inputs computed exactly in int64 */
} UnaryFlags;

/* Every elementwise unary op is one row: registry name, first opset (0
 * outside ONNX), function, flags, ONNX input and output names. The
 * registry entries and the kernel's function lookup both expand it. */
#define UNARY_OPS(ROW) \
  ROW ("onnx::Abs", 1, f_abs, UNARY_INTEGER_EXACT, "X", "Y") \
  ROW ("onnx::Neg", 1, f_neg, UNARY_INTEGER_EXACT, "X", "Y") \
  ROW ("onnx::Floor", 1, f_floor, 0, "X", "Y") \
  ROW ("onnx::Ceil", 1, f_ceil, 0, "X", "Y") \
  ROW ("onnx::Round", 11, f_round, 0, "X", "Y") \
  ROW ("onnx::Sqrt", 1, f_sqrt, 0, "X", "Y") \
  ROW ("onnx::Exp", 1, f_exp, 0, "input", "output") \
  ROW ("onnx::Log", 1, f_log, 0, "input", "output") \
  ROW ("onnx::Reciprocal", 1, f_reciprocal, 0, "X", "Y") \
  ROW ("onnx::Sin", 7, f_sin, 0, "input", "output") \
  ROW ("onnx::Cos", 7, f_cos, 0, "input", "output") \
  ROW ("onnx::Tan", 7, f_tan, 0, "input", "output") \
  ROW ("onnx::Asin", 7, f_asin, 0, "input", "output") \
  ROW ("onnx::Acos", 7, f_acos, 0, "input", "output") \
  ROW ("onnx::Atan", 7, f_atan, 0, "input", "output") \
  ROW ("onnx::Sinh", 9, f_sinh, 0, "input", "output") \
  ROW ("onnx::Cosh", 9, f_cosh, 0, "input", "output") \
  ROW ("onnx::Tanh", 1, f_tanh, 0, "input", "output") \
  ROW ("onnx::Asinh", 9, f_asinh, 0, "input", "output") \
  ROW ("onnx::Acosh", 9, f_acosh, 0, "input", "output") \
  ROW ("onnx::Atanh", 9, f_atanh, 0, "input", "output") \
  ROW ("onnx::Erf", 9, f_erf, 0, "input", "output") \
  ROW ("onnx::Sign", 9, f_sign, UNARY_INTEGER_EXACT, "input", "output") \
  ROW ("onnx::Sigmoid", 1, f_sigmoid, 0, "X", "Y") \
  ROW ("onnx::Relu", 1, f_relu, UNARY_INTEGER_EXACT, "X", "Y") \
  ROW ("onnx::LeakyRelu", 1, f_leaky_relu, 0, "X", "Y") \
  ROW ("onnx::Elu", 1, f_elu, 0, "X", "Y") \
  ROW ("onnx::Selu", 1, f_selu, 0, "X", "Y") \
  ROW ("onnx::Celu", 12, f_celu, 0, "X", "Y") \
  ROW ("onnx::HardSigmoid", 1, f_hard_sigmoid, 0, "X", "Y") \
  ROW ("onnx::HardSwish", 14, f_hard_swish, 0, "X", "Y") \
  ROW ("onnx::Softplus", 1, f_softplus, 0, "X", "Y") \
  ROW ("onnx::Softsign", 1, f_softsign, 0, "input", "output") \
  ROW ("onnx::Mish", 18, f_mish, 0, "X", "Y") \
  ROW ("onnx::ThresholdedRelu", 10, f_thresholded_relu, 0, "X", "Y") \
  ROW ("onnx::Shrink", 9, f_shrink, 0, "input", "output") \
  ROW ("onnx::Gelu", 20, f_gelu, 0, "X", "Y") \
  ROW ("onnx::Swish", 24, f_swish, 0, "X", "Y") \
  ROW ("aten::relu", 0, f_relu, UNARY_INTEGER_EXACT, NULL, NULL) \
  ROW ("aten::relu_", 0, f_relu, UNARY_INTEGER_EXACT, NULL, NULL) \
  ROW ("aten::sigmoid", 0, f_sigmoid, 0, NULL, NULL) \
  ROW ("aten::sigmoid_", 0, f_sigmoid, 0, NULL, NULL) \
  ROW ("aten::tanh", 0, f_tanh, 0, NULL, NULL) \
  ROW ("aten::tanh_", 0, f_tanh, 0, NULL, NULL) \
  ROW ("aten::hardswish", 0, f_hard_swish, 0, NULL, NULL) \
  ROW ("aten::hardswish_", 0, f_hard_swish, 0, NULL, NULL) \
  ROW ("aten::hardsigmoid", 0, f_hard_sigmoid, 0, NULL, NULL) \
  ROW ("aten::hardsigmoid_", 0, f_hard_sigmoid, 0, NULL, NULL) \
  ROW ("aten::gelu", 0, f_gelu, 0, NULL, NULL) \
  ROW ("aten::silu", 0, f_silu, 0, NULL, NULL) \
  ROW ("aten::silu_", 0, f_silu, 0, NULL, NULL) \
  ROW ("aten::relu6", 0, f_relu6, 0, NULL, NULL) \
  ROW ("aten::leaky_relu", 0, f_leaky_relu, 0, NULL, NULL) \
  ROW ("aten::leaky_relu_", 0, f_leaky_relu, 0, NULL, NULL) \
  ROW ("aten::relu6_", 0, f_relu6, 0, NULL, NULL) \
  ROW ("aten::exp", 0, f_exp, 0, NULL, NULL) \
  ROW ("aten::sin", 0, f_sin, 0, NULL, NULL) \
  ROW ("aten::cos", 0, f_cos, 0, NULL, NULL) \
  ROW ("aten::log", 0, f_log, 0, NULL, NULL) \
  ROW ("aten::sqrt", 0, f_sqrt, 0, NULL, NULL) \
  ROW ("aten::rsqrt", 0, f_rsqrt, 0, NULL, NULL) \
  ROW ("aten::abs", 0, f_abs, UNARY_INTEGER_EXACT, NULL, NULL) \
  ROW ("aten::neg", 0, f_neg, UNARY_INTEGER_EXACT, NULL, NULL) \
  ROW ("aten::erf", 0, f_erf, 0, NULL, NULL) \
  ROW ("aten::softplus", 0, f_softplus, 0, NULL, NULL) \
  ROW ("aten::mish", 0, f_mish, 0, NULL, NULL)

typedef struct {
  const char *op;
  UnaryFunc func;
  guint flags;
} UnaryDef;

#define UNARY_DEF(op, since, func, flags, input_names, output_names) { op, func, flags },
static const UnaryDef unary_defs[] = { UNARY_OPS (UNARY_DEF) };
#undef UNARY_DEF

static const UnaryDef *
find_def (const char *op)
{
  for (gsize i = 0; i < G_N_ELEMENTS (unary_defs); i++)
    if (strcmp (unary_defs[i].op, op) == 0)
      return &unary_defs[i];
  return NULL;
}

extern const GraftOpSchema graft_ops_unary[];

/* The registry's first rows (graft_ops_unary) and unary_defs expand the
 * same list in the same order: a schema of this file finds its function
 * without a scan of ~85 names by strcmp every run. */
static const UnaryDef *
def_of_schema (const GraftOpSchema *schema)
{
  guintptr at = (guintptr) schema, first = (guintptr) graft_ops_unary;
  if (at >= first && at < first + G_N_ELEMENTS (unary_defs) * sizeof (GraftOpSchema))
    return &unary_defs[(at - first) / sizeof (GraftOpSchema)];
  return find_def (schema->name);
}

static void
read_params (GraftNode *node, UnaryParams *p)
{
  const char *op = node->op_type;
  double alpha = 0.01, beta = 0, gamma = 0;

  if (strcmp (op, "Elu") == 0 || strcmp (op, "Celu") == 0 || strcmp (op, "ThresholdedRelu") == 0 ||
      strcmp (op, "Swish") == 0 || strcmp (op, "SwiGLU") == 0)
    alpha = 1.0;
  else if (strcmp (op, "Selu") == 0)
    alpha = 1.67326319217681884765625, gamma = 1.05070102214813232421875;
  else if (strcmp (op, "HardSigmoid") == 0 || strcmp (op, "hardsigmoid") == 0 || strcmp (op, "hardsigmoid_") == 0)
    alpha = strcmp (op, "HardSigmoid") == 0 ? 0.2 : 1.0 / 6, beta = 0.5;
  else if (strcmp (op, "Shrink") == 0)
    {
      p->alpha = graft_node_attr_float (node, "lambd", 0.5);
      p->beta = graft_node_attr_float (node, "bias", 0.0);
      return;
    }
  if (node->domain && strcmp (node->domain, "onnx") == 0)
    {
      p->alpha = graft_node_attr_float (node, "alpha", alpha);
      p->beta = graft_node_attr_float (node, "beta", beta);
      p->gamma = graft_node_attr_float (node, "gamma", gamma);
    }
  else
    {
      p->alpha = alpha;
      p->beta = beta;
      p->gamma = gamma;
    }
  const char *approximate = graft_node_attr_string (node, "approximate", "none");
  p->flag_a = strcmp (approximate, "tanh") == 0;
}

static gboolean
infer_unary (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *in = graft_infer_input (ctx, 0);
  if (in == NULL)
    return graft_kernel_fail (error, "input 0 is missing");
  const char *op = ctx->node->op_type;
  GraftDType dtype = in->dtype;
  if (strcmp (op, "IsNaN") == 0 || strcmp (op, "IsInf") == 0 || strcmp (op, "Not") == 0)
    dtype = GRAFT_DTYPE_BOOL;
  /* PyTorch computes sqrt, exp, sigmoid… of integers in its default float
   * type (RAFT divides by sqrt(torch.tensor(channels))) */
  const UnaryDef *def = find_def (ctx->node->op);
  if (g_str_has_prefix (ctx->node->op, "aten::") && (graft_dtype_is_integer (dtype) || dtype == GRAFT_DTYPE_BOOL) &&
      !(def && (def->flags & UNARY_INTEGER_EXACT)))
    dtype = GRAFT_DTYPE_FLOAT32;
  graft_infer_set_output (ctx, 0, dtype, &in->shape);
  return TRUE;
}

typedef struct {
  const float *in;
  float *out;
  gint64 n;
  gint64 chunk;
  UnaryFunc func;
  UnaryParams params;
} F32Job;

static void
f32_chunk (gint64 index, gpointer data)
{
  F32Job *job = data;
  gint64 start = index * job->chunk, end = MIN (start + job->chunk, job->n);
  const float *in = job->in;
  float *out = job->out;

  if (in != out && (job->func == f_relu || job->func == f_relu6))
    memcpy (out + start, in + start, (end - start) * sizeof (float));
  if (job->func == f_relu)
    graft_f32_clamp (out + start, end - start, 0, INFINITY);
  else if (job->func == f_relu6)
    graft_f32_clamp (out + start, end - start, 0, 6);
  else if (job->func == f_sigmoid)
    graft_vm_sigmoid (in + start, out + start, end - start);
  else if (job->func == f_silu)
    graft_vm_affine (in + start, out + start, end - start, 0, 1, 0, TRUE);
  else if (job->func == f_erf)
    graft_vm_erf (in + start, out + start, end - start);
  else if (job->func == f_tanh)
    graft_vm_tanh (in + start, out + start, end - start);
  else if (job->func == f_exp)
    graft_vm_exp (in + start, out + start, end - start);
  else if (job->func == f_gelu)
    graft_vm_gelu (in + start, out + start, end - start, job->params.flag_a);
  else if (job->func == f_hard_swish)
    graft_vm_hard_swish (in + start, out + start, end - start);
  else if (job->func == f_hard_sigmoid)
    graft_vm_hard_sigmoid (in + start, out + start, end - start, (float) job->params.alpha, (float) job->params.beta);
  else
    for (gint64 i = start; i < end; i++)
      out[i] = (float) job->func (in[i], &job->params);
}

static gboolean
kernel_unary (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = graft_kernel_input (ctx, 0);
  /* by the schema: the runtime may run this kernel for a pattern of other
   * nodes (runtime-fusion.c fuse_patterns runs a GELU written as Div → Erf → … as
   * onnx::Gelu, ctx->node then being the Div, and the tanh one, ctx->node
   * then being its first node) */
  const UnaryDef *def = def_of_schema (ctx->schema);
  UnaryFunc func = def ? def->func : NULL;
  UnaryParams params = { 0 };

  if (func == NULL)
    return graft_kernel_unsupported (error, "no elementwise function for %s", ctx->node->op);
  if (x->kind != GRAFT_RT_TENSOR || x->dtype == GRAFT_DTYPE_STRING)
    return graft_kernel_unsupported (error, "%s does not accept %s", ctx->node->op_type,
                                     graft_dtype_to_string (x->dtype));
  read_params (ctx->node, &params);
  if (func == f_gelu && graft_kernel_get_pattern (ctx) != NULL)
    params.flag_a = TRUE;   /* the tanh GELU's pattern (the erf one has no match) */
  if (g_str_has_prefix (ctx->node->op, "aten::leaky_relu"))
    {
      /* negative_slope: a constant, a keyword or (scripted) a value */
      static const char *const names[] = { "self", "negative_slope" };
      GraftAtenArg args[G_N_ELEMENTS (names)];
      graft_aten_args (ctx, names, G_N_ELEMENTS (names), args);
      params.alpha = graft_arg_double (&args[1], 0.01);
    }

  GraftRtTensor *y = NULL;
  if (x->dtype == GRAFT_DTYPE_FLOAT32 && (y = graft_kernel_steal_input (ctx, 0)) != NULL)
    graft_kernel_set_output (ctx, 0, y);   /* in place */
  else if ((y = graft_kernel_output (ctx, 0, error)) == NULL)
    return FALSE;

  if (x->dtype == GRAFT_DTYPE_FLOAT32)
    {
      F32Job job = { x->data, y->data, x->numel, 0, func, params };
      guint threads = graft_kernel_get_n_threads (ctx);
      gint64 chunks = x->numel >= 65536 ? threads * 4 : 1;
      job.chunk = (x->numel + chunks - 1) / MAX (chunks, 1);
      graft_kernel_parallel_for (ctx, job.chunk > 0 ? (x->numel + job.chunk - 1) / job.chunk : 0, f32_chunk, &job);
    }
  else if (graft_dtype_is_integer (x->dtype) && def && (def->flags & UNARY_INTEGER_EXACT))
    {
      for (gint64 i = 0; i < x->numel; i++)
        {
          gint64 v = graft_rt_tensor_get_i64 (x, i);
          if (func == f_abs)
            v = v < 0 ? (gint64) (0 - (guint64) v) : v;
          else if (func == f_neg)
            v = (gint64) (0 - (guint64) v);
          else if (func == f_sign)
            v = v > 0 ? 1 : v < 0 ? -1 : 0;
          else if (func == f_relu)
            v = v > 0 ? v : 0;
          if (x->dtype == GRAFT_DTYPE_UINT64 && func == f_sign)
            v = ((guint64 *) x->data)[i] != 0;
          graft_rt_tensor_set_i64 (y, i, v);
        }
    }
  else
    for (gint64 i = 0; i < x->numel; i++)
      graft_rt_tensor_set_f64 (y, i, func (graft_rt_tensor_get_f64 (x, i), &params));
  return TRUE;
}

static gboolean
kernel_isnan (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = graft_kernel_input (ctx, 0);
  GraftRtTensor *y = graft_kernel_output (ctx, 0, error);
  if (y == NULL)
    return FALSE;
  for (gint64 i = 0; i < x->numel; i++)
    ((guint8 *) y->data)[i] = isnan (graft_rt_tensor_get_f64 (x, i));
  return TRUE;
}

static gboolean
kernel_isinf (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = graft_kernel_input (ctx, 0);
  gboolean neg = graft_node_attr_int (ctx->node, "detect_negative", 1);
  gboolean pos = graft_node_attr_int (ctx->node, "detect_positive", 1);
  GraftRtTensor *y = graft_kernel_output (ctx, 0, error);
  if (y == NULL)
    return FALSE;
  for (gint64 i = 0; i < x->numel; i++)
    {
      double v = graft_rt_tensor_get_f64 (x, i);
      ((guint8 *) y->data)[i] = isinf (v) && ((v > 0 && pos) || (v < 0 && neg));
    }
  return TRUE;
}

static gboolean
kernel_not (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = graft_kernel_input (ctx, 0);
  GraftRtTensor *y = graft_kernel_output (ctx, 0, error);
  if (y == NULL)
    return FALSE;
  for (gint64 i = 0; i < x->numel; i++)
    ((guint8 *) y->data)[i] = !((guint8 *) x->data)[i];
  return TRUE;
}

/* Clip: bounds from attributes before opset 11, optional inputs since. */
static gboolean
kernel_clip (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = graft_kernel_input (ctx, 0);
  GraftRtTensor *lo_t = graft_kernel_input (ctx, 1), *hi_t = graft_kernel_input (ctx, 2);
  gboolean onnx_attrs = g_str_has_prefix (ctx->node->op, "onnx::") && ctx->opset < 11;
  double lo = -INFINITY, hi = INFINITY;
  if (onnx_attrs)
    {
      lo = graft_node_attr_float (ctx->node, "min", -INFINITY);
      hi = graft_node_attr_float (ctx->node, "max", INFINITY);
    }
  else
    {
      if (lo_t && lo_t->kind == GRAFT_RT_TENSOR && lo_t->numel > 0)
        lo = graft_rt_tensor_get_f64 (lo_t, 0);
      if (hi_t && hi_t->kind == GRAFT_RT_TENSOR && hi_t->numel > 0)
        hi = graft_rt_tensor_get_f64 (hi_t, 0);
    }
  GraftRtTensor *y = NULL;
  if (x->dtype == GRAFT_DTYPE_FLOAT32 && (y = graft_kernel_steal_input (ctx, 0)) != NULL)
    graft_kernel_set_output (ctx, 0, y);
  else if ((y = graft_kernel_output (ctx, 0, error)) == NULL)
    return FALSE;
  if (x->dtype == GRAFT_DTYPE_FLOAT32)
    {
      float *out = y->data, flo = lo, fhi = hi;
      if (y != x)
        memcpy (out, x->data, x->nbytes);
      graft_f32_clamp (out, x->numel, flo, fhi);
    }
  else if (graft_dtype_is_integer (x->dtype))
    {
      for (gint64 i = 0; i < x->numel; i++)
        {
          gint64 v = graft_rt_tensor_get_i64 (x, i);
          if (lo_t && (double) v < lo)
            v = graft_rt_tensor_get_i64 (lo_t, 0);
          if (hi_t && (double) v > hi)
            v = graft_rt_tensor_get_i64 (hi_t, 0);
          graft_rt_tensor_set_i64 (y, i, v);
        }
    }
  else
    for (gint64 i = 0; i < x->numel; i++)
      {
        double v = graft_rt_tensor_get_f64 (x, i);
        graft_rt_tensor_set_f64 (y, i, v < lo ? lo : v > hi ? hi : v);
      }
  return TRUE;
}

/* SwiGLU (opset 28): Swish of the gate A times the value B, same shapes. */
static gboolean
kernel_swiglu (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *gate = ctx->inputs[0], *value = ctx->inputs[1];
  if (gate->rank != value->rank || memcmp (gate->dims, value->dims, sizeof (gint64) * gate->rank) != 0)
    return graft_kernel_fail (error, "A and B must have the same shape (SwiGLU does not broadcast)");
  GraftRtTensor *y = graft_kernel_output (ctx, 0, error);
  if (y == NULL)
    return FALSE;
  UnaryParams params = { 0 };
  read_params (ctx->node, &params);
  for (gint64 i = 0; i < y->numel; i++)
    graft_rt_tensor_set_f64 (y, i, f_swish (graft_rt_tensor_get_f64 (gate, i), &params) *
                                   graft_rt_tensor_get_f64 (value, i));
  return TRUE;
}

#define UNARY_SCHEMA(op, since, func, flags, input_names, output_names) \
  { op, since, 0, infer_unary, kernel_unary, GRAFT_OP_HALF_AS_FLOAT, input_names, output_names },

const GraftOpSchema graft_ops_unary[] = {
  UNARY_OPS (UNARY_SCHEMA)
  { "onnx::SwiGLU", 28, 0, infer_unary, kernel_swiglu, GRAFT_OP_HALF_AS_FLOAT, "A B", "Y" },
  { "onnx::IsNaN", 9, 0, infer_unary, kernel_isnan, 0, "X", "Y" },
  { "onnx::IsInf", 10, 0, infer_unary, kernel_isinf, 0, "X", "Y" },
  { "onnx::Not", 1, 0, infer_unary, kernel_not, 0, "X", "Y" },
  { "onnx::Clip", 1, 0, infer_unary, kernel_clip, GRAFT_OP_HALF_AS_FLOAT, "input min max", "output" },
  { NULL }
};
