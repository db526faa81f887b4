/* QDQ fusion: see qdq-fusion.h. The 8-bit operators are the ones
 * onnxruntime's QOperator format uses, with the same arithmetic, so a
 * QDQ model fused here computes what its QOperator twin computes. */
#include "runtime/qdq-fusion.h"
#include "runtime/op.h"

#include <math.h>
#include <string.h>

typedef struct {
  GraftQdqConstantFunc constant;
  gpointer data;
} Constants;

/* A QuantizeLinear's or DequantizeLinear's constant scale and zero point. */
typedef struct {
  GraftNode *node;
  GraftRtTensor *scale, *zero;   /* zero NULL: omitted */
  gint64 n;                      /* values per parameter */
  gint64 axis;
  GraftDType dtype;              /* the 8-bit side's element type */
} QParams;

static GraftRtTensor *
constant_of (const Constants *c, GraftValue *v)
{
  return v ? c->constant (v, c->data) : NULL;
}

static gboolean
is_8bit (GraftDType t)
{
  return t == GRAFT_DTYPE_UINT8 || t == GRAFT_DTYPE_INT8;
}

static gboolean
is_op (GraftNode *node, const char *op)
{
  return node != NULL && strcmp (node->op, op) == 0;
}

static GraftValue *
input_at (GraftNode *node, guint i)
{
  return i < node->inputs->len ? node->inputs->pdata[i] : NULL;
}

/* Scales positive and finite, zero points 8-bit (int32 for a bias) and
 * as many; blocked quantization and opset 21's output_dtype are left to
 * the float path. */
static gboolean
qparams (const Constants *c, GraftNode *node, GraftDType zero_dtype, QParams *p)
{
  memset (p, 0, sizeof *p);
  p->node = node;
  if (node->inputs->len < 2 || node->outputs->len != 1 || graft_node_has_attr (node, "block_size") ||
      graft_node_has_attr (node, "output_dtype"))
    return FALSE;
  p->scale = constant_of (c, input_at (node, 1));
  p->zero = constant_of (c, input_at (node, 2));
  if (p->scale == NULL || p->scale->dtype != GRAFT_DTYPE_FLOAT32 || p->scale->rank > 1 || p->scale->numel < 1 ||
      (input_at (node, 2) != NULL && p->zero == NULL))
    return FALSE;
  p->n = p->scale->numel;
  for (gint64 i = 0; i < p->n; i++)
    {
      float s = ((const float *) p->scale->data)[i];
      if (!(s > 0) || !isfinite (s))
        return FALSE;
    }
  if (p->zero && ((zero_dtype == GRAFT_DTYPE_INT32 ? p->zero->dtype != zero_dtype : !is_8bit (p->zero->dtype)) ||
                  p->zero->numel != p->n))
    return FALSE;
  p->axis = graft_node_attr_int (node, "axis", 1);
  return TRUE;
}

/* v computed by a DequantizeLinear of 8-bit values; per_tensor: one scale. */
static gboolean
dequantized (const Constants *c, GraftValue *v, gboolean per_tensor, QParams *p)
{
  GraftNode *dq = v ? v->producer : NULL;
  if (!is_op (dq, "onnx::DequantizeLinear") || !qparams (c, dq, GRAFT_DTYPE_UINT8, p) || (per_tensor && p->n != 1))
    return FALSE;
  GraftValue *x = input_at (dq, 0);
  GraftRtTensor *xc = constant_of (c, x);
  p->dtype = p->zero ? p->zero->dtype : xc ? xc->dtype : x ? x->dtype : GRAFT_DTYPE_UNDEFINED;
  return x != NULL && is_8bit (p->dtype) && (xc == NULL || xc->dtype == p->dtype);
}

/* A constant 8-bit weight behind a DequantizeLinear, one scale or one per
 * slice along `axis` of a rank-`rank` weight. */
static GraftRtTensor *
dequantized_weight (const Constants *c, GraftValue *v, int rank, int axis, QParams *p)
{
  if (!dequantized (c, v, FALSE, p))
    return NULL;
  GraftRtTensor *w = constant_of (c, input_at (p->node, 0));
  if (w == NULL || w->rank != rank)
    return NULL;
  if (p->n != 1 && (p->n != w->dims[axis] || (p->axis != axis && p->axis != axis - rank)))
    return NULL;
  return w;
}

/* A bias the 8-bit operators add to their int32 sums: an int32 constant
 * dequantized with zero point 0 and scale x_scale·w_scale (what
 * quantize_static writes); *bias is its DequantizeLinear. Anything else
 * stays on the float path. */
static gboolean
int32_bias (const Constants *c, GraftValue *v, gint64 n, const QParams *px, const QParams *pw, GraftNode **bias)
{
  QParams pb;
  GraftNode *dq = v ? v->producer : NULL;
  if (!is_op (dq, "onnx::DequantizeLinear") || !qparams (c, dq, GRAFT_DTYPE_INT32, &pb))
    return FALSE;
  GraftRtTensor *b = constant_of (c, input_at (dq, 0));
  if (b == NULL || b->dtype != GRAFT_DTYPE_INT32 || b->rank != 1 || b->numel != n || (pb.n != 1 && pb.n != n))
    return FALSE;
  float xs = ((const float *) px->scale->data)[0];
  for (gint64 i = 0; i < n; i++)
    {
      float ws = ((const float *) pw->scale->data)[pw->n > 1 ? i : 0];
      if (((const float *) pb.scale->data)[pb.n > 1 ? i : 0] != xs * ws ||
          (pb.zero && graft_rt_tensor_get_i64 (pb.zero, pb.n > 1 ? i : 0) != 0))
        return FALSE;
    }
  *bias = dq;
  return TRUE;
}

static void
add_inputs (GraftQdqFusion *f, GraftValue *a, GraftValue *b, GraftValue *c)
{
  f->inputs[f->n_inputs++] = a;
  f->inputs[f->n_inputs++] = b;
  f->inputs[f->n_inputs++] = c;
}

/* Value, scale, zero point of an activation's DequantizeLinear. */
static void
add_dequantized (GraftQdqFusion *f, const QParams *p)
{
  add_inputs (f, input_at (p->node, 0), input_at (p->node, 1), input_at (p->node, 2));
  f->dequantize[f->n_dequantize++] = p->node;
}

/* A weight's value, scale, zero point; its DequantizeLinear and the
 * bias's are then read only by the fused step, if by nothing else. */
static void
add_weight (GraftQdqFusion *f, const QParams *p, GraftNode *bias_dq)
{
  add_inputs (f, input_at (p->node, 0), input_at (p->node, 1), input_at (p->node, 2));
  f->dequantize[f->n_dequantize++] = p->node;
  if (bias_dq)
    f->dequantize[f->n_dequantize++] = bias_dq;
}

static void
add_scale_zero (GraftQdqFusion *f, const QParams *p)
{
  f->inputs[f->n_inputs++] = input_at (p->node, 1);
  f->inputs[f->n_inputs++] = input_at (p->node, 2);
}

/* DQ(x) ⊛ DQ(w) [+ DQ(int32 bias)] → QLinearConv */
static gboolean
match_conv (const Constants *c, GraftNode *op, const QParams *py, GraftQdqFusion *f)
{
  QParams px, pw;
  if (op->inputs->len < 2 || !dequantized (c, input_at (op, 0), TRUE, &px))
    return FALSE;
  GraftValue *wv = input_at (op, 1);
  GraftRtTensor *wc = wv && wv->producer ? constant_of (c, input_at (wv->producer, 0)) : NULL;
  GraftRtTensor *w = wc && wc->rank >= 3 ? dequantized_weight (c, wv, wc->rank, 0, &pw) : NULL;
  if (w == NULL)
    return FALSE;
  GraftNode *bias = NULL;
  if (input_at (op, 2) != NULL && !int32_bias (c, input_at (op, 2), w->dims[0], &px, &pw, &bias))
    return FALSE;
  f->op = "onnx::QLinearConv";
  add_dequantized (f, &px);
  add_weight (f, &pw, bias);
  add_scale_zero (f, py);
  f->inputs[f->n_inputs++] = bias ? input_at (bias, 0) : NULL;
  return TRUE;
}

/* DQ(a) · DQ(b)ᵀ? + DQ(int32 bias) → com.microsoft QGemm (alpha = beta = 1) */
static gboolean
match_gemm (const Constants *c, GraftNode *op, const QParams *py, GraftQdqFusion *f)
{
  QParams pa, pb;
  gboolean tb = graft_node_attr_int (op, "transB", 0);
  if (op->inputs->len < 2 || graft_node_attr_float (op, "alpha", 1.0) != 1.0 ||
      graft_node_attr_float (op, "beta", 1.0) != 1.0 || !dequantized (c, input_at (op, 0), TRUE, &pa))
    return FALSE;
  GraftRtTensor *b = dequantized_weight (c, input_at (op, 1), 2, tb ? 0 : 1, &pb);
  if (b == NULL)
    return FALSE;
  GraftNode *bias = NULL;
  if (input_at (op, 2) != NULL && !int32_bias (c, input_at (op, 2), b->dims[tb ? 0 : 1], &pa, &pb, &bias))
    return FALSE;
  f->op = "com.microsoft::QGemm";
  f->opset = 1;
  add_dequantized (f, &pa);
  add_weight (f, &pb, bias);
  f->inputs[f->n_inputs++] = bias ? input_at (bias, 0) : NULL;
  add_scale_zero (f, py);
  return TRUE;
}

/* DQ(a) + DQ(b) → com.microsoft QLinearAdd */
static gboolean
match_add (const Constants *c, GraftNode *op, const QParams *py, GraftQdqFusion *f)
{
  QParams pa, pb;
  if (op->inputs->len != 2 || !dequantized (c, input_at (op, 0), TRUE, &pa) ||
      !dequantized (c, input_at (op, 1), TRUE, &pb))
    return FALSE;
  f->op = "com.microsoft::QLinearAdd";
  f->opset = 1;
  add_dequantized (f, &pa);
  add_dequantized (f, &pb);
  add_scale_zero (f, py);
  return TRUE;
}

/* GlobalAveragePool (DQ(x)) → com.microsoft QLinearGlobalAveragePool */
static gboolean
match_global_average_pool (const Constants *c, GraftNode *op, const QParams *py, GraftQdqFusion *f)
{
  QParams px;
  if (op->inputs->len != 1 || !dequantized (c, input_at (op, 0), TRUE, &px))
    return FALSE;
  f->op = "com.microsoft::QLinearGlobalAveragePool";
  f->opset = 1;
  add_dequantized (f, &px);
  add_scale_zero (f, py);
  return TRUE;
}

static gboolean
same_qparams (const QParams *a, const QParams *b)
{
  return a->dtype == b->dtype && ((const float *) a->scale->data)[0] == ((const float *) b->scale->data)[0] &&
         (a->zero ? graft_rt_tensor_get_i64 (a->zero, 0) : 0) == (b->zero ? graft_rt_tensor_get_i64 (b->zero, 0) : 0);
}

/* MaxPool or Flatten between a DequantizeLinear and a QuantizeLinear of
 * the same scale and zero point: the op on the 8-bit values gives the
 * same result, as quantization is monotonic and moves no values. */
static gboolean
match_on_quantized (const Constants *c, GraftNode *op, const QParams *py, GraftQdqFusion *f)
{
  QParams px;
  if (op->inputs->len != 1 || (op->outputs->len > 1 && op->outputs->pdata[1] != NULL) ||
      !dequantized (c, input_at (op, 0), TRUE, &px) || !same_qparams (&px, py))
    return FALSE;
  f->op = op->op;
  f->inputs[f->n_inputs++] = input_at (px.node, 0);
  f->dequantize[f->n_dequantize++] = px.node;
  return TRUE;
}

gboolean
graft_qdq_fusion_match (GraftNode *quantize, gint64 opset, GraftQdqConstantFunc constant, gpointer user_data,
                        GraftQdqFusion *fusion)
{
  Constants c = { constant, user_data };
  QParams py;
  memset (fusion, 0, sizeof *fusion);
  if (!is_op (quantize, "onnx::QuantizeLinear") || !qparams (&c, quantize, GRAFT_DTYPE_UINT8, &py) || py.n != 1)
    return FALSE;
  py.dtype = py.zero ? py.zero->dtype : GRAFT_DTYPE_UINT8;
  GraftValue *v = input_at (quantize, 0);
  GraftNode *op = v ? v->producer : NULL;
  if (op == NULL || op->graph != quantize->graph || graft_value_leaves_run (v) || v->consumers == NULL ||
      v->consumers->len != 1)
    return FALSE;
  fusion->node = op;
  fusion->opset = opset;
  gboolean matched = FALSE;
  if (is_op (op, "onnx::Conv"))
    matched = match_conv (&c, op, &py, fusion);
  else if (is_op (op, "onnx::Gemm"))
    matched = match_gemm (&c, op, &py, fusion);
  else if (is_op (op, "onnx::Add"))
    matched = match_add (&c, op, &py, fusion);
  else if (is_op (op, "onnx::GlobalAveragePool"))
    matched = match_global_average_pool (&c, op, &py, fusion);
  else if (is_op (op, "onnx::MaxPool") || is_op (op, "onnx::Flatten"))
    matched = match_on_quantized (&c, op, &py, fusion);
  /* The 8-bit operators give the first activation's type when the
   * QuantizeLinear names none. */
  if (matched && py.zero == NULL && fusion->n_dequantize > 0)
    {
      QParams px;
      dequantized (&c, fusion->dequantize[0]->outputs->pdata[0], TRUE, &px);
      matched = px.dtype == py.dtype;
    }
  if (!matched)
    memset (fusion, 0, sizeof *fusion);
  return matched;
}
