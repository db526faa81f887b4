/* Elementwise unary operators: math functions and activations.
 * Computation goes through double except for the hot float32 activations. */
#include <math.h>
#include <string.h>
#include "runtime/kernels/kernel-util.h"

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

typedef struct {
  const char *op_type;
  UnaryFunc func;
  gboolean integer_exact;  /* integer inputs computed exactly in int64 */
} UnaryDef;

static const UnaryDef unary_defs[] = {
  { "Abs", f_abs, TRUE }, { "Neg", f_neg, TRUE }, { "Floor", f_floor }, { "Ceil", f_ceil },
  { "Round", f_round }, { "Sqrt", f_sqrt }, { "Exp", f_exp }, { "Log", f_log },
  { "Reciprocal", f_reciprocal }, { "Sin", f_sin }, { "Cos", f_cos }, { "Tan", f_tan },
  { "Asin", f_asin }, { "Acos", f_acos }, { "Atan", f_atan }, { "Sinh", f_sinh },
  { "Cosh", f_cosh }, { "Tanh", f_tanh }, { "Asinh", f_asinh }, { "Acosh", f_acosh },
  { "Atanh", f_atanh }, { "Erf", f_erf }, { "Sign", f_sign, TRUE }, { "Sigmoid", f_sigmoid },
  { "Relu", f_relu, TRUE }, { "LeakyRelu", f_leaky_relu }, { "Elu", f_elu }, { "Selu", f_selu },
  { "Celu", f_celu }, { "HardSigmoid", f_hard_sigmoid }, { "HardSwish", f_hard_swish },
  { "Softplus", f_softplus }, { "Softsign", f_softsign }, { "Mish", f_mish },
  { "ThresholdedRelu", f_thresholded_relu }, { "Shrink", f_shrink }, { "Gelu", f_gelu },
  { "Swish", f_swish },
  /* aten:: spellings */
  { "relu", f_relu, TRUE }, { "relu_", f_relu, TRUE }, { "sigmoid", f_sigmoid }, { "sigmoid_", f_sigmoid },
  { "tanh", f_tanh }, { "tanh_", f_tanh }, { "hardswish", f_hard_swish }, { "hardswish_", f_hard_swish },
  { "hardsigmoid", f_hard_sigmoid }, { "hardsigmoid_", f_hard_sigmoid }, { "gelu", f_gelu },
  { "silu", f_silu }, { "silu_", f_silu }, { "relu6", f_relu6 }, { "relu6_", f_relu6 },
  { "exp", f_exp }, { "log", f_log }, { "sqrt", f_sqrt }, { "abs", f_abs }, { "neg", f_neg },
  { "erf", f_erf }, { "rsqrt", NULL }, { "softplus", f_softplus }, { "mish", f_mish },
};

static double f_rsqrt (double x, const UnaryParams *p) { return 1.0 / sqrt (x); }

static const UnaryDef *
find_def (const char *op_type)
{
  for (gsize i = 0; i < G_N_ELEMENTS (unary_defs); i++)
    if (strcmp (unary_defs[i].op_type, op_type) == 0)
      return &unary_defs[i];
  return NULL;
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
    for (gint64 i = start; i < end; i++)
      out[i] = 1.0f / (1.0f + expf (-in[i]));
  else if (job->func == f_hard_swish)
    for (gint64 i = start; i < end; i++)
      {
        float x = in[i], r = x / 6 + 0.5f;
        out[i] = x * (r < 0 ? 0 : r > 1 ? 1 : r);
      }
  else
    for (gint64 i = start; i < end; i++)
      out[i] = (float) job->func (in[i], &job->params);
}

static gboolean
kernel_unary (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = graft_kernel_input (ctx, 0);
  const UnaryDef *def = find_def (ctx->node->op_type);
  UnaryFunc func = def ? def->func : NULL;
  UnaryParams params = { 0 };

  if (strcmp (ctx->node->op_type, "rsqrt") == 0)
    func = f_rsqrt;
  if (func == NULL)
    return graft_kernel_unsupported (error, "no elementwise function for %s", ctx->node->op);
  if (x->kind != GRAFT_RT_TENSOR || x->dtype == GRAFT_DTYPE_STRING)
    return graft_kernel_unsupported (error, "%s does not accept %s", ctx->node->op_type,
                                     graft_dtype_to_string (x->dtype));
  read_params (ctx->node, &params);

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
  else if (graft_dtype_is_integer (x->dtype) && def && def->integer_exact)
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
  if (strcmp (ctx->node->op_type, "hardtanh") == 0 || strcmp (ctx->node->op_type, "hardtanh_") == 0)
    lo = -1, hi = 1;
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

#define UNARY(op, since, input_names, output_names) { "onnx::" op, since, 0, infer_unary, kernel_unary, GRAFT_OP_HALF_AS_FLOAT, input_names, output_names }
#define ATEN_UNARY(op) { "aten::" op, 0, 0, infer_unary, kernel_unary, GRAFT_OP_HALF_AS_FLOAT }

const GraftOpSchema graft_ops_unary[] = {
  UNARY ("Abs", 1, "X", "Y"), UNARY ("Neg", 1, "X", "Y"), UNARY ("Floor", 1, "X", "Y"), UNARY ("Ceil", 1, "X", "Y"), UNARY ("Round", 11, "X", "Y"),
  UNARY ("Sqrt", 1, "X", "Y"), UNARY ("Exp", 1, "input", "output"), UNARY ("Log", 1, "input", "output"), UNARY ("Reciprocal", 1, "X", "Y"),
  UNARY ("Sin", 7, "input", "output"), UNARY ("Cos", 7, "input", "output"), UNARY ("Tan", 7, "input", "output"), UNARY ("Asin", 7, "input", "output"), UNARY ("Acos", 7, "input", "output"),
  UNARY ("Atan", 7, "input", "output"), UNARY ("Sinh", 9, "input", "output"), UNARY ("Cosh", 9, "input", "output"), UNARY ("Tanh", 1, "input", "output"), UNARY ("Asinh", 9, "input", "output"),
  UNARY ("Acosh", 9, "input", "output"), UNARY ("Atanh", 9, "input", "output"), UNARY ("Erf", 9, "input", "output"), UNARY ("Sign", 9, "input", "output"), UNARY ("Sigmoid", 1, "X", "Y"),
  UNARY ("Relu", 1, "X", "Y"), UNARY ("LeakyRelu", 1, "X", "Y"), UNARY ("Elu", 1, "X", "Y"), UNARY ("Selu", 1, "X", "Y"), UNARY ("Celu", 12, "X", "Y"),
  UNARY ("HardSigmoid", 1, "X", "Y"), UNARY ("HardSwish", 14, "X", "Y"), UNARY ("Softplus", 1, "X", "Y"), UNARY ("Softsign", 1, "input", "output"),
  UNARY ("Mish", 18, "X", "Y"), UNARY ("ThresholdedRelu", 10, "X", "Y"), UNARY ("Shrink", 9, "input", "output"), UNARY ("Gelu", 20, "X", "Y"),
  UNARY ("Swish", 24, "X", "Y"),
  { "onnx::SwiGLU", 28, 0, infer_unary, kernel_swiglu, GRAFT_OP_HALF_AS_FLOAT, "A B", "Y" },
  { "onnx::IsNaN", 9, 0, infer_unary, kernel_isnan, 0, "X", "Y" },
  { "onnx::IsInf", 10, 0, infer_unary, kernel_isinf, 0, "X", "Y" },
  { "onnx::Not", 1, 0, infer_unary, kernel_not, 0, "X", "Y" },
  { "onnx::Clip", 1, 0, infer_unary, kernel_clip, GRAFT_OP_HALF_AS_FLOAT, "input min max", "output" },
  { "aten::clamp", 0, 0, infer_unary, kernel_clip, GRAFT_OP_HALF_AS_FLOAT },
  { "aten::clamp_", 0, 0, infer_unary, kernel_clip, GRAFT_OP_HALF_AS_FLOAT },
  { "aten::hardtanh", 0, 0, infer_unary, kernel_clip, GRAFT_OP_HALF_AS_FLOAT },
  { "aten::hardtanh_", 0, 0, infer_unary, kernel_clip, GRAFT_OP_HALF_AS_FLOAT },
  ATEN_UNARY ("relu"), ATEN_UNARY ("relu_"), ATEN_UNARY ("sigmoid"), ATEN_UNARY ("sigmoid_"),
  ATEN_UNARY ("tanh"), ATEN_UNARY ("tanh_"), ATEN_UNARY ("hardswish"), ATEN_UNARY ("hardswish_"),
  ATEN_UNARY ("hardsigmoid"), ATEN_UNARY ("hardsigmoid_"), ATEN_UNARY ("gelu"), ATEN_UNARY ("silu"),
  ATEN_UNARY ("silu_"), ATEN_UNARY ("relu6"), ATEN_UNARY ("relu6_"), ATEN_UNARY ("exp"),
  ATEN_UNARY ("log"), ATEN_UNARY ("sqrt"), ATEN_UNARY ("rsqrt"), ATEN_UNARY ("abs"), ATEN_UNARY ("neg"),
  ATEN_UNARY ("erf"), ATEN_UNARY ("softplus"), ATEN_UNARY ("mish"),
  { NULL }
};
