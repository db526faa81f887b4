/* Patterns the runtime fuses: see fusion-patterns.h. */
#include "runtime/fusion-patterns.h"
#include "runtime/op.h"
#include "runtime/kernels/aten-args.h"

#include <math.h>
#include <string.h>

static gboolean
is_op (GraftNode *node, const char *op)
{
  return node != NULL && strcmp (node->op, op) == 0;
}

GraftNode *
graft_fusion_sole_reader (GraftNode *node, GraftValue **out_value)
{
  GraftValue *v = node->outputs->len == 1 ? node->outputs->pdata[0] : NULL;
  *out_value = v;
  if (v == NULL || graft_value_leaves_run (v) || v->consumers == NULL || v->consumers->len != 1)
    return NULL;
  GraftNode *reader = v->consumers->pdata[0];
  if (reader->graph != node->graph)
    return NULL;
  for (guint k = 0; k < node->graph->outputs->len; k++)
    if (node->graph->outputs->pdata[k] == v)
      return NULL;
  return reader;
}

static GraftNode *
sole_reader (GraftNode *node)
{
  GraftValue *v;
  return graft_fusion_sole_reader (node, &v);
}

/* v is a constant of one value of dtype (an initializer or a Constant
 * node's value) whose size bytes go to out. */
static gboolean
constant_one_value (GraftValue *v, GraftDType dtype, gpointer out, gsize size)
{
  GraftTensor *t = v ? v->initializer : NULL;
  if (t == NULL && v && v->producer && strcmp (v->producer->op, "onnx::Constant") == 0)
    {
      GraftAttribute *a = graft_node_get_attribute (v->producer, "value");
      t = a ? a->t : NULL;
    }
  if (t == NULL || graft_tensor_get_numel (t) != 1 || t->dtype != dtype)
    return FALSE;
  GBytes *bytes = graft_tensor_get_data (t, NULL);
  if (bytes == NULL || g_bytes_get_size (bytes) != size)
    return FALSE;
  memcpy (out, g_bytes_get_data (bytes, NULL), size);
  return TRUE;
}

gboolean
graft_fusion_constant_scalar (GraftValue *v, float *out)
{
  return constant_one_value (v, GRAFT_DTYPE_FLOAT32, out, sizeof *out);
}

/* node's other input than the value `chain` (two inputs, chain once), or NULL. */
static GraftValue *
other_input (GraftNode *node, GraftValue *chain, guint *chain_index)
{
  if (node->inputs->len != 2 || node->inputs->pdata[0] == node->inputs->pdata[1])
    return NULL;
  *chain_index = node->inputs->pdata[0] == chain ? 0 : 1;
  return node->inputs->pdata[1 - *chain_index];
}

static GraftValue *
output_of (GraftNode *node)
{
  return node->outputs->len == 1 ? node->outputs->pdata[0] : NULL;
}

/* TensorProto.FLOAT, Cast's `to` for float32 */
#define GRAFT_ATTENTION_FUSION_FLOAT 1

gboolean
graft_attention_fusion_match (GraftNode *qk, gint64 (*opset_of) (GraftNode *node, gpointer data), gpointer data,
                              GraftAttentionFusion *fusion)
{
  memset (fusion, 0, sizeof *fusion);
  if (!is_op (qk, "onnx::MatMul") || qk->inputs->len != 2 || qk->inputs->pdata[0] == NULL ||
      qk->inputs->pdata[1] == NULL)
    return FALSE;
  fusion->inputs[GRAFT_ATTENTION_FUSION_Q] = qk->inputs->pdata[0];
  fusion->inputs[GRAFT_ATTENTION_FUSION_KT] = qk->inputs->pdata[1];
  fusion->nodes[fusion->n_nodes++] = qk;

  GraftNode *node = sole_reader (qk);
  guint index;
  if (is_op (node, "onnx::Mul") || is_op (node, "onnx::Div"))
    {
      GraftValue *scale = other_input (node, output_of (fusion->nodes[fusion->n_nodes - 1]), &index);
      gboolean divide = is_op (node, "onnx::Div");
      if (scale == NULL || (divide && index != 0))
        return FALSE;
      fusion->inputs[divide ? GRAFT_ATTENTION_FUSION_DIVISOR : GRAFT_ATTENTION_FUSION_SCALE] = scale;
      fusion->nodes[fusion->n_nodes++] = node;
      node = sole_reader (node);
    }
  if (is_op (node, "onnx::Add"))
    {
      GraftValue *mask = other_input (node, output_of (fusion->nodes[fusion->n_nodes - 1]), &index);
      if (mask == NULL)
        return FALSE;
      fusion->inputs[GRAFT_ATTENTION_FUSION_MASK] = mask;
      fusion->nodes[fusion->n_nodes++] = node;
      node = sole_reader (node);
    }
  if (!is_op (node, "onnx::Softmax") || node->inputs->len != 1)
    return FALSE;
  if (graft_node_has_attr (node, "axis") ? graft_node_attr_int (node, "axis", 0) != -1 : opset_of (node, data) < 13)
    return FALSE;
  fusion->nodes[fusion->n_nodes++] = node;

  GraftNode *av = sole_reader (node);
  if (is_op (av, "onnx::Cast") && graft_node_attr_int (av, "to", 0) == GRAFT_ATTENTION_FUSION_FLOAT)
    {
      /* GPT-2's export casts the weights to float: nothing to do on the
       * float32 the fused kernel takes */
      node = av;
      fusion->nodes[fusion->n_nodes++] = node;
      av = sole_reader (node);
    }
  if (!is_op (av, "onnx::MatMul") || av->inputs->len != 2 || av->inputs->pdata[0] != output_of (node) ||
      av->inputs->pdata[1] == NULL || av->inputs->pdata[1] == output_of (node) || av->outputs->len != 1)
    return FALSE;
  fusion->inputs[GRAFT_ATTENTION_FUSION_V] = av->inputs->pdata[1];
  fusion->nodes[fusion->n_nodes++] = av;
  return TRUE;
}

/* node is op with the value v as one input and the constant scalar want
 * as the other. */
static gboolean
scalar_operation (GraftNode *node, const char *op, GraftValue *v, float want)
{
  float c;
  if (!is_op (node, op) || node->inputs->len != 2)
    return FALSE;
  GraftValue *other = node->inputs->pdata[0] == v ? node->inputs->pdata[1] : node->inputs->pdata[0];
  return (node->inputs->pdata[0] == v || node->inputs->pdata[1] == v) && other != v &&
         graft_fusion_constant_scalar (other, &c) && c == want;
}

gboolean
graft_gelu_fusion_match (GraftNode *div, GraftNode *nodes[GRAFT_GELU_FUSION_N_NODES])
{
  GraftValue *v, *x = div->inputs->len == 2 ? div->inputs->pdata[0] : NULL;
  nodes[0] = div;
  if (x == NULL || !scalar_operation (div, "onnx::Div", x, (float) G_SQRT2) || div->inputs->pdata[1] == x)
    return FALSE;
  GraftNode *erf = nodes[1] = graft_fusion_sole_reader (div, &v);
  if (!is_op (erf, "onnx::Erf"))
    return FALSE;
  GraftNode *add = nodes[2] = graft_fusion_sole_reader (erf, &v);
  if (!scalar_operation (add, "onnx::Add", v, 1))
    return FALSE;
  GraftNode *mul = nodes[3] = graft_fusion_sole_reader (add, &v);
  if (!is_op (mul, "onnx::Mul") || mul->inputs->len != 2 ||
      !((mul->inputs->pdata[0] == x && mul->inputs->pdata[1] == v) ||
        (mul->inputs->pdata[0] == v && mul->inputs->pdata[1] == x)))
    return FALSE;
  GraftNode *half = nodes[4] = graft_fusion_sole_reader (mul, &v);
  return scalar_operation (half, "onnx::Mul", v, 0.5f) && half->outputs->len == 1;
}

/* v's producer when it is op with two inputs and its only reader is next */
static GraftNode *
producer_read_only_by (GraftValue *v, const char *op, GraftNode *next)
{
  GraftNode *producer = v ? v->producer : NULL;
  GraftValue *out;
  if (!is_op (producer, op) || producer->inputs->len != 2 || graft_fusion_sole_reader (producer, &out) != next)
    return NULL;
  return producer;
}

/* node's operand beside the constant scalar want (on either side), or NULL */
static GraftValue *
operand_of_scalar (GraftNode *node, float want)
{
  if (node == NULL || node->inputs->len != 2 || node->inputs->pdata[0] == node->inputs->pdata[1])
    return NULL;
  for (guint k = 0; k < 2; k++)
    {
      float c;
      if (graft_fusion_constant_scalar (node->inputs->pdata[k], &c) && c == want)
        return node->inputs->pdata[1 - k];
    }
  return NULL;
}

static void
gelu_tanh_add (GraftGeluTanhFusion *f, GraftNode *node)
{
  f->nodes[f->n_nodes++] = node;
}

/* cube, read only by next, is x³: Pow (x, 3) or x·(x·x) */
static gboolean
gelu_tanh_cube (GraftValue *cube, GraftValue *x, GraftNode *next, GraftGeluTanhFusion *f)
{
  float c;
  GraftNode *pow = producer_read_only_by (cube, "onnx::Pow", next);
  if (pow != NULL)
    {
      if (pow->inputs->pdata[0] != x || !graft_fusion_constant_scalar (pow->inputs->pdata[1], &c) || c != 3)
        return FALSE;
      gelu_tanh_add (f, pow);
      return TRUE;
    }
  GraftNode *mul = producer_read_only_by (cube, "onnx::Mul", next);
  for (guint k = 0; mul != NULL && k < 2; k++)
    {
      GraftNode *square = mul->inputs->pdata[k] == x ? producer_read_only_by (mul->inputs->pdata[1 - k], "onnx::Mul", mul)
                                                      : NULL;
      if (square && square->inputs->pdata[0] == x && square->inputs->pdata[1] == x)
        {
          gelu_tanh_add (f, square);
          gelu_tanh_add (f, mul);
          return TRUE;
        }
    }
  return FALSE;
}

gboolean
graft_gelu_tanh_fusion_match (GraftNode *tanh, GraftGeluTanhFusion *f)
{
  memset (f, 0, sizeof *f);
  if (!is_op (tanh, "onnx::Tanh") || tanh->inputs->len != 1)
    return FALSE;
  /* backwards from the Tanh: √(2/π)·(x + 0.044715·x³) */
  GraftNode *scale = producer_read_only_by (tanh->inputs->pdata[0], "onnx::Mul", tanh);
  GraftNode *sum = producer_read_only_by (operand_of_scalar (scale, (float) sqrt (2 / G_PI)), "onnx::Add", scale);
  GraftValue *x = NULL;
  for (guint k = 0; sum != NULL && k < 2 && x == NULL; k++)
    {
      GraftNode *times = producer_read_only_by (sum->inputs->pdata[k], "onnx::Mul", sum);
      f->n_nodes = 0;
      if (gelu_tanh_cube (operand_of_scalar (times, 0.044715f), sum->inputs->pdata[1 - k], times, f))
        {
          x = sum->inputs->pdata[1 - k];
          gelu_tanh_add (f, times);
        }
    }
  if (x == NULL)
    return FALSE;
  gelu_tanh_add (f, sum);
  gelu_tanh_add (f, scale);
  gelu_tanh_add (f, tanh);

  /* forwards: 1 + tanh, then the products by x and by 0.5 in any of the three orders */
  GraftValue *t, *e, *m;
  GraftNode *plus = graft_fusion_sole_reader (tanh, &t);
  if (!is_op (plus, "onnx::Add") || operand_of_scalar (plus, 1) != t)
    return FALSE;
  gelu_tanh_add (f, plus);
  GraftNode *next = graft_fusion_sole_reader (plus, &e), *last = next;
  if (!is_op (next, "onnx::Mul") || next->inputs->len != 2)
    return FALSE;
  GraftValue *other = next->inputs->pdata[0] == e ? next->inputs->pdata[1] : next->inputs->pdata[0];
  if (other == x || operand_of_scalar (next, 0.5f) == e)
    {
      /* x·(1 + tanh) then ·0.5, or (1 + tanh)·0.5 then ·x */
      last = graft_fusion_sole_reader (next, &m);
      GraftValue *want = other == x ? operand_of_scalar (last, 0.5f) : NULL;
      if (other != x && is_op (last, "onnx::Mul") && last->inputs->len == 2 &&
          ((last->inputs->pdata[0] == x && last->inputs->pdata[1] == m) ||
           (last->inputs->pdata[0] == m && last->inputs->pdata[1] == x)))
        want = m;
      if (!is_op (last, "onnx::Mul") || want != m)
        return FALSE;
      gelu_tanh_add (f, next);
    }
  else
    {
      /* (0.5·x)·(1 + tanh) */
      GraftNode *half = producer_read_only_by (other, "onnx::Mul", next);
      if (half == NULL || operand_of_scalar (half, 0.5f) != x)
        return FALSE;
      gelu_tanh_add (f, half);
    }
  gelu_tanh_add (f, last);
  f->x = x;
  return last->outputs->len == 1;
}

gboolean
graft_fusion_activation_bounds (GraftNode *act, GraftValue *v, float *lo, float *hi)
{
  *lo = -INFINITY;
  *hi = INFINITY;
  if (act == NULL || act->inputs->len < 1 || act->inputs->pdata[0] != v || act->outputs->len != 1)
    return FALSE;
  /* aten::relu(_): a PyTorch file's residual add → relu (runtime-fusion.c) */
  if (strcmp (act->op, "onnx::Relu") == 0 ||
      ((strcmp (act->op, "aten::relu") == 0 || strcmp (act->op, "aten::relu_") == 0) && act->inputs->len == 1))
    {
      *lo = 0;
      return TRUE;
    }
  /* Clip before opset 11 takes its bounds from attributes: not fused */
  if (strcmp (act->op, "onnx::Clip") != 0 || graft_node_has_attr (act, "min") || graft_node_has_attr (act, "max"))
    return FALSE;
  GraftValue *vmin = act->inputs->len > 1 ? act->inputs->pdata[1] : NULL;
  GraftValue *vmax = act->inputs->len > 2 ? act->inputs->pdata[2] : NULL;
  return (vmin == NULL || graft_fusion_constant_scalar (vmin, lo)) &&
         (vmax == NULL || graft_fusion_constant_scalar (vmax, hi));
}

/* A Conv node with its data input and weight, and a bias or none. */
static gboolean
is_conv (GraftNode *node)
{
  return is_op (node, "onnx::Conv") && node->inputs->len >= 2 && node->inputs->len <= 3 &&
         node->inputs->pdata[0] != NULL && node->inputs->pdata[1] != NULL && node->outputs->len == 1;
}

/* node's activation (its sole reader) when it is a Relu/Clip that
 * fuses: nodes[] and the bounds get it; returns the value after it. */
static GraftValue *
take_activation (GraftNode *node, GraftPointwiseDepthwiseFusion *f, int which)
{
  GraftValue *v;
  GraftNode *act = graft_fusion_sole_reader (node, &v);
  f->lo[which] = -INFINITY;
  f->hi[which] = INFINITY;
  if (act && graft_fusion_activation_bounds (act, v, &f->lo[which], &f->hi[which]))
    {
      f->nodes[f->n_nodes++] = act;
      return act->outputs->pdata[0];
    }
  f->lo[which] = -INFINITY;
  f->hi[which] = INFINITY;
  return v;
}

/* A Conv whose window is 1×1 where kernel_shape tells (the kernel checks
 * the weights) and of one group. */
static gboolean
is_pointwise_conv (GraftNode *node)
{
  guint n;
  const gint64 *kernel = is_conv (node) ? graft_node_attr_ints (node, "kernel_shape", &n) : NULL;
  return is_conv (node) && (kernel == NULL || (n == 2 && kernel[0] == 1 && kernel[1] == 1)) &&
         graft_node_attr_int (node, "group", 1) == 1;
}

gboolean
graft_pointwise_depthwise_fusion_match (GraftNode *first, GraftPointwiseDepthwiseFusion *f)
{
  memset (f, 0, sizeof *f);
  f->lo[0] = -INFINITY;
  f->hi[0] = INFINITY;
  GraftValue *v, *between = NULL;
  GraftNode *depthwise = first;
  if (is_pointwise_conv (first))
    {
      f->pointwise = first;
      f->nodes[f->n_nodes++] = first;
      between = take_activation (first, f, 0);
      depthwise = graft_fusion_sole_reader (f->nodes[f->n_nodes - 1], &v);
      if (between == NULL || v != between || !is_conv (depthwise) || depthwise->inputs->pdata[0] != between)
        return FALSE;
    }
  if (!is_conv (depthwise) || graft_node_attr_int (depthwise, "group", 1) <= 1 ||
      depthwise->inputs->pdata[1] == depthwise->inputs->pdata[0] ||
      (depthwise->inputs->len > 2 && depthwise->inputs->pdata[2] == depthwise->inputs->pdata[0]))
    return FALSE;
  f->nodes[f->n_nodes++] = depthwise;
  f->depthwise = depthwise;
  GraftValue *after = take_activation (depthwise, f, 1);
  GraftValue *x = f->inputs[GRAFT_POINTWISE_DEPTHWISE_FUSION_X] = first->inputs->pdata[0];
  /* the projection back to few channels, and the residual Add of the
   * block's input, when they follow */
  GraftNode *project = graft_fusion_sole_reader (f->nodes[f->n_nodes - 1], &v);
  if (after && v == after && is_pointwise_conv (project) && project->inputs->pdata[0] == after &&
      project->inputs->pdata[1] != after && (project->inputs->len < 3 || project->inputs->pdata[2] != after))
    {
      f->nodes[f->n_nodes++] = project;
      f->project = project;
      f->inputs[GRAFT_POINTWISE_DEPTHWISE_FUSION_W3] = project->inputs->pdata[1];
      f->inputs[GRAFT_POINTWISE_DEPTHWISE_FUSION_B3] = project->inputs->len > 2 ? project->inputs->pdata[2] : NULL;
      GraftNode *add = graft_fusion_sole_reader (project, &v);
      if (is_op (add, "onnx::Add") && add->inputs->len == 2 && add->outputs->len == 1 &&
          ((add->inputs->pdata[0] == v && add->inputs->pdata[1] == x) ||
           (add->inputs->pdata[1] == v && add->inputs->pdata[0] == x)))
        {
          f->nodes[f->n_nodes++] = add;
          f->residual = TRUE;
        }
    }
  /* a depthwise layer alone gains nothing from the bands */
  if (f->pointwise == NULL && f->project == NULL)
    return FALSE;
  if (f->pointwise)
    {
      f->inputs[GRAFT_POINTWISE_DEPTHWISE_FUSION_W1] = first->inputs->pdata[1];
      f->inputs[GRAFT_POINTWISE_DEPTHWISE_FUSION_B1] = first->inputs->len > 2 ? first->inputs->pdata[2] : NULL;
    }
  f->inputs[GRAFT_POINTWISE_DEPTHWISE_FUSION_W2] = depthwise->inputs->pdata[1];
  f->inputs[GRAFT_POINTWISE_DEPTHWISE_FUSION_B2] = depthwise->inputs->len > 2 ? depthwise->inputs->pdata[2] : NULL;
  return TRUE;
}

/* node is a two-input op reading v once: its other input, else NULL */
static GraftValue *
binary_with (GraftNode *node, const char *op, GraftValue *v)
{
  guint at;
  GraftValue *other = is_op (node, op) && node->outputs->len == 1 ? other_input (node, v, &at) : NULL;
  return other && node->inputs->pdata[at] == v ? other : NULL;
}

gboolean
graft_conv_integer_float_fusion_match (GraftNode *conv, GraftConvIntegerFloatFusion *f)
{
  memset (f, 0, sizeof *f);
  if (!is_op (conv, "onnx::ConvInteger") || conv->inputs->len < 2 || conv->outputs->len != 1 ||
      conv->inputs->pdata[0] == NULL || conv->inputs->pdata[1] == NULL)
    return FALSE;
  for (guint i = 0; i < conv->inputs->len && i <= GRAFT_CONV_INTEGER_FLOAT_FUSION_W_ZERO; i++)
    f->inputs[i] = conv->inputs->pdata[i];
  f->nodes[f->n_nodes++] = conv;
  GraftValue *v;
  GraftNode *cast = graft_fusion_sole_reader (conv, &v);
  if (!is_op (cast, "onnx::Cast") || cast->inputs->len != 1 || cast->outputs->len != 1 ||
      graft_node_attr_int (cast, "to", 0) != GRAFT_ATTENTION_FUSION_FLOAT)
    return FALSE;
  f->nodes[f->n_nodes++] = cast;
  GraftNode *mul = graft_fusion_sole_reader (cast, &v);
  GraftValue *scale = binary_with (mul, "onnx::Mul", v);
  if (scale == NULL)
    return FALSE;
  f->inputs[GRAFT_CONV_INTEGER_FLOAT_FUSION_SCALE] = scale;
  f->nodes[f->n_nodes++] = mul;
  GraftNode *last = mul;
  for (int a = 0; a < 2; a++)
    {
      GraftNode *add = graft_fusion_sole_reader (last, &v);
      GraftValue *addend = binary_with (add, "onnx::Add", v);
      if (addend == NULL)
        break;
      f->inputs[GRAFT_CONV_INTEGER_FLOAT_FUSION_ADD1 + a] = addend;
      f->nodes[f->n_nodes++] = last = add;
      if (a == 0)
        f->n_nodes_to_first_add = f->n_nodes;
    }
  GraftNode *relu = graft_fusion_sole_reader (last, &v);
  if (is_op (relu, "onnx::Relu") && relu->inputs->len == 1 && relu->outputs->len == 1)
    {
      f->nodes[f->n_nodes++] = relu;
      f->relu = TRUE;
    }
  return TRUE;
}

/* The Mul of v by Sigmoid (v) that reads v's two readers, v not a graph
 * output: the SiLU after a GroupNorm; its Sigmoid in *sigmoid. */
static GraftNode *
silu_of (GraftNode *producer, GraftValue *v, GraftNode **sigmoid)
{
  GraftValue *unused;
  if (v == NULL || graft_value_leaves_run (v) || v->consumers == NULL || v->consumers->len != 2)
    return NULL;
  for (guint k = 0; k < producer->graph->outputs->len; k++)
    if (producer->graph->outputs->pdata[k] == v)
      return NULL;
  for (guint k = 0; k < 2; k++)
    {
      GraftNode *s = v->consumers->pdata[k], *m = v->consumers->pdata[1 - k];
      if (is_op (s, "onnx::Sigmoid") && s->inputs->len == 1 && s->graph == producer->graph &&
          is_op (m, "onnx::Mul") && m->graph == producer->graph && graft_fusion_sole_reader (s, &unused) == m &&
          m->inputs->len == 2 && output_of (m) != NULL &&
          ((m->inputs->pdata[0] == v && m->inputs->pdata[1] == output_of (s)) ||
           (m->inputs->pdata[1] == v && m->inputs->pdata[0] == output_of (s))))
        {
          *sigmoid = s;
          return m;
        }
    }
  return NULL;
}

gboolean
graft_group_norm_fusion_match (GraftNode *reshape, GraftGroupNormFusion *f)
{
  memset (f, 0, sizeof *f);
  if (!is_op (reshape, "onnx::Reshape") || reshape->inputs->len != 2 || reshape->inputs->pdata[0] == NULL ||
      reshape->inputs->pdata[1] == NULL)
    return FALSE;
  GraftValue *x = reshape->inputs->pdata[0];
  GraftNode *norm = sole_reader (reshape);
  if (!is_op (norm, "onnx::InstanceNormalization") || norm->inputs->len != 3 ||
      norm->inputs->pdata[0] != output_of (reshape) || norm->inputs->pdata[1] == NULL || norm->inputs->pdata[2] == NULL)
    return FALSE;
  GraftNode *back = sole_reader (norm);
  if (!is_op (back, "onnx::Reshape") || back->inputs->len != 2 || back->inputs->pdata[0] != output_of (norm) ||
      back->inputs->pdata[1] == NULL)
    return FALSE;
  GraftValue *shape = back->inputs->pdata[1];
  gboolean shape_of_x = shape->producer && is_op (shape->producer, "onnx::Shape") &&
                        shape->producer->inputs->len == 1 && shape->producer->inputs->pdata[0] == x &&
                        graft_node_get_attribute (shape->producer, "start") == NULL &&
                        graft_node_get_attribute (shape->producer, "end") == NULL;
  guint chain_index;
  GraftNode *mul = sole_reader (back);
  GraftValue *scale = is_op (mul, "onnx::Mul") ? other_input (mul, output_of (back), &chain_index) : NULL;
  GraftNode *add = scale ? sole_reader (mul) : NULL;
  GraftValue *bias = is_op (add, "onnx::Add") ? other_input (add, output_of (mul), &chain_index) : NULL;
  if (bias == NULL || output_of (add) == NULL)
    return FALSE;
  GraftValue *inputs[] = { x, reshape->inputs->pdata[1], norm->inputs->pdata[1], norm->inputs->pdata[2],
                           shape_of_x ? NULL : shape, scale, bias };
  memcpy (f->inputs, inputs, sizeof inputs);
  f->instance_norm = norm;
  f->reshape_back = back;
  GraftNode *nodes[] = { reshape, norm, back, mul, add };
  memcpy (f->nodes, nodes, sizeof nodes);
  f->n_nodes = G_N_ELEMENTS (nodes);
  GraftNode *sigmoid = NULL, *silu = silu_of (add, output_of (add), &sigmoid);
  if (silu)
    {
      f->silu = TRUE;
      f->nodes[f->n_nodes++] = sigmoid;
      f->nodes[f->n_nodes++] = silu;
    }
  return TRUE;
}

/* A ReduceMean keeping its one reduced axis (from its axes attribute, or
 * from opset 18 its constant axes input): that axis. */
static gboolean
mean_over_one_axis (GraftNode *mean, GraftValue *x, gint64 *axis)
{
  guint n;
  const gint64 *axes = graft_node_attr_ints (mean, "axes", &n);
  if (!is_op (mean, "onnx::ReduceMean") || mean->inputs->len < 1 || mean->inputs->pdata[0] != x ||
      graft_node_attr_int (mean, "keepdims", 1) != 1)
    return FALSE;
  if (axes != NULL)
    {
      *axis = axes[0];
      return n == 1 && mean->inputs->len == 1;
    }
  return mean->inputs->len == 2 && constant_one_value (mean->inputs->pdata[1], GRAFT_DTYPE_INT64, axis, sizeof *axis);
}

gboolean
graft_rms_norm_fusion_match (GraftNode *pow, GraftRmsNormFusion *f)
{
  memset (f, 0, sizeof *f);
  GraftValue *x = is_op (pow, "onnx::Pow") && pow->inputs->len == 2 ? pow->inputs->pdata[0] : NULL;
  float two;
  if (x == NULL || pow->inputs->pdata[1] == x || !graft_fusion_constant_scalar (pow->inputs->pdata[1], &two) ||
      two != 2)
    return FALSE;
  GraftNode *mean = sole_reader (pow);
  if (!mean_over_one_axis (mean, output_of (pow), &f->axis))
    return FALSE;
  GraftNode *add = sole_reader (mean);
  guint index;
  GraftValue *eps = is_op (add, "onnx::Add") ? other_input (add, output_of (mean), &index) : NULL;
  if (eps == NULL || !graft_fusion_constant_scalar (eps, &f->epsilon))
    return FALSE;
  GraftNode *sqrt_node = sole_reader (add);
  if (!is_op (sqrt_node, "onnx::Sqrt") || sqrt_node->inputs->len != 1)
    return FALSE;
  GraftNode *inverse = sole_reader (sqrt_node);
  gboolean reciprocal = is_op (inverse, "onnx::Reciprocal") && inverse->inputs->len == 1;
  if (!reciprocal && !(scalar_operation (inverse, "onnx::Div", output_of (sqrt_node), 1) &&
                       inverse->inputs->pdata[1] == output_of (sqrt_node)))
    return FALSE;
  GraftNode *normed = sole_reader (inverse);
  GraftValue *other = is_op (normed, "onnx::Mul") ? other_input (normed, output_of (inverse), &index) : NULL;
  if (other != x)
    return FALSE;
  GraftNode *scaled = sole_reader (normed);
  GraftValue *scale = is_op (scaled, "onnx::Mul") ? other_input (scaled, output_of (normed), &index) : NULL;
  if (scale == NULL || scale == x || output_of (scaled) == NULL)
    return FALSE;
  f->inputs[GRAFT_RMS_NORM_FUSION_X] = x;
  f->inputs[GRAFT_RMS_NORM_FUSION_SCALE] = scale;
  GraftNode *nodes[] = { pow, mean, add, sqrt_node, inverse, normed, scaled };
  memcpy (f->nodes, nodes, sizeof nodes);
  f->n_nodes = G_N_ELEMENTS (nodes);
  return TRUE;
}

/* ---- the same patterns in PyTorch files (aten:: nodes) ---- */

/* Argument k of an aten node: a constant number in *value; FALSE when it
 * is an input or not a number. */
static gboolean
aten_constant_number (GraftNode *node, guint k, double *value)
{
  GraftValue *v;
  GraftAttribute *a = graft_aten_node_arg (node, k, &v);
  if (a == NULL)
    return FALSE;
  if (a->type == GRAFT_ATTR_INT || a->type == GRAFT_ATTR_BOOL)
    *value = a->i;
  else if (a->type == GRAFT_ATTR_FLOAT)
    *value = a->f;
  else
    return FALSE;
  return TRUE;
}

/* Argument k is absent or None. */
static gboolean
aten_arg_none (GraftNode *node, guint k)
{
  GraftValue *v;
  GraftAttribute *a = graft_aten_node_arg (node, k, &v);
  return a ? a->type == GRAFT_ATTR_NONE : v == NULL;
}

/* The only reader of node's single output besides torch.export's
 * aten::_assert_tensor_metadata checks (which the plan skips, see
 * runtime-fusion.c), as graft_fusion_sole_reader; else NULL. */
static GraftNode *
aten_sole_reader (GraftNode *node)
{
  GraftValue *v = output_of (node);
  GraftNode *reader = NULL;
  if (v == NULL || graft_value_leaves_run (v) || v->consumers == NULL)
    return NULL;
  for (guint k = 0; k < v->consumers->len; k++)
    {
      GraftNode *c = v->consumers->pdata[k];
      if (is_op (c, "aten::_assert_tensor_metadata"))
        continue;
      if (reader != NULL || c->graph != node->graph)
        return NULL;
      reader = c;
    }
  for (guint k = 0; reader && k < node->graph->outputs->len; k++)
    if (node->graph->outputs->pdata[k] == v)
      return NULL;
  return reader;
}

/* node is op with `values` runtime inputs and one output. */
static gboolean
is_aten (GraftNode *node, const char *op, guint values)
{
  return is_op (node, op) && node->inputs->len == values && node->outputs->len == 1 && output_of (node) != NULL;
}

static gboolean is_aten_to_float (GraftNode *node, GraftValue *x);

gboolean
graft_attention_fusion_match_aten (GraftNode *first, GraftAttentionFusion *fusion)
{
  double c;
  memset (fusion, 0, sizeof *fusion);
  fusion->aten = TRUE;
  GraftNode *qk = first;
  if (!is_aten (qk, "aten::matmul", 2) || qk->inputs->pdata[0] == NULL || qk->inputs->pdata[1] == NULL)
    return FALSE;
  fusion->inputs[GRAFT_ATTENTION_FUSION_Q] = qk->inputs->pdata[0];
  fusion->inputs[GRAFT_ATTENTION_FUSION_KT] = qk->inputs->pdata[1];
  fusion->nodes[fusion->n_nodes++] = qk;

  GraftNode *node = aten_sole_reader (qk);
  guint index;
  if (is_op (node, "aten::mul") || (is_op (node, "aten::div") && aten_arg_none (node, 2)))
    {
      gboolean divide = is_op (node, "aten::div");
      GraftValue *chain = output_of (fusion->nodes[fusion->n_nodes - 1]), *scale = NULL;
      if (node->outputs->len != 1 || node->inputs->len == 0 || node->inputs->len > 2)
        return FALSE;
      if (node->inputs->len == 1)
        {
          if (node->inputs->pdata[0] != chain || !aten_constant_number (node, 1, &c))
            return FALSE;
          if (divide)
            {
              fusion->has_divisor_constant = TRUE;
              fusion->divisor_constant = (float) c;
            }
          else
            {
              fusion->has_scale_constant = TRUE;
              fusion->scale_constant = (float) c;
            }
        }
      else if ((scale = other_input (node, chain, &index)) == NULL || (divide && index != 0))
        return FALSE;
      if (scale)
        fusion->inputs[divide ? GRAFT_ATTENTION_FUSION_DIVISOR : GRAFT_ATTENTION_FUSION_SCALE] = scale;
      fusion->nodes[fusion->n_nodes++] = node;
      node = aten_sole_reader (node);
    }
  if (is_aten (node, "aten::add", 2) && (aten_arg_none (node, 2) || (aten_constant_number (node, 2, &c) && c == 1)))
    {
      GraftValue *mask = other_input (node, output_of (fusion->nodes[fusion->n_nodes - 1]), &index);
      if (mask == NULL)
        return FALSE;
      fusion->inputs[GRAFT_ATTENTION_FUSION_MASK] = mask;
      fusion->nodes[fusion->n_nodes++] = node;
      node = aten_sole_reader (node);
    }
  double dtype = 6;
  /* dtype None or float32 (ScalarType 6: Llama's softmax(…, dtype=float32).to(float32)),
   * which on the float32 scores the kernel takes changes nothing */
  if (!is_aten (node, "aten::softmax", 1) || !aten_constant_number (node, 1, &c) ||
      !(aten_arg_none (node, 2) || (aten_constant_number (node, 2, &dtype) && dtype == 6)))
    return FALSE;
  fusion->softmax_dim = (gint64) c;
  fusion->nodes[fusion->n_nodes++] = node;

  GraftNode *av = aten_sole_reader (node);
  if (is_aten_to_float (av, output_of (node)))
    {
      node = av;
      fusion->nodes[fusion->n_nodes++] = node;
      av = aten_sole_reader (node);
    }
  if (is_aten (av, "aten::dropout", 1) && aten_constant_number (av, 2, &c) && c == 0)
    {
      node = av;
      fusion->nodes[fusion->n_nodes++] = node;
      av = aten_sole_reader (node);
    }
  if (!is_aten (av, "aten::matmul", 2) || av->inputs->pdata[0] != output_of (node) || av->inputs->pdata[1] == NULL ||
      av->inputs->pdata[1] == output_of (node))
    return FALSE;
  fusion->inputs[GRAFT_ATTENTION_FUSION_V] = av->inputs->pdata[1];
  fusion->nodes[fusion->n_nodes++] = av;
  return TRUE;
}

/* t holds one float32 or float64 value: it in *out. */
static gboolean
tensor_one_float (GraftTensor *t, float *out)
{
  if (t == NULL || graft_tensor_get_numel (t) != 1 ||
      (t->dtype != GRAFT_DTYPE_FLOAT32 && t->dtype != GRAFT_DTYPE_FLOAT64))
    return FALSE;
  GBytes *bytes = graft_tensor_get_data (t, NULL);
  gsize size = 0;
  gconstpointer data = bytes ? g_bytes_get_data (bytes, &size) : NULL;
  if (data == NULL || size != graft_dtype_get_size (t->dtype))
    return FALSE;
  *out = t->dtype == GRAFT_DTYPE_FLOAT32 ? *(const float *) data : (float) *(const double *) data;
  return TRUE;
}

/* Argument k of an aten node as one float: a constant number, or a
 * constant tensor of one float value (an attribute or an initializer:
 * T5's ε). */
static gboolean
aten_constant_float (GraftNode *node, guint k, float *out)
{
  GraftValue *v;
  double c;
  GraftAttribute *a = graft_aten_node_arg (node, k, &v);
  if (a && a->type == GRAFT_ATTR_TENSOR)
    return tensor_one_float (a->t, out);
  if (a == NULL)
    return v != NULL && tensor_one_float (v->initializer, out);
  if (!aten_constant_number (node, k, &c))
    return FALSE;
  *out = (float) c;
  return TRUE;
}

/* aten::mean (x, [axis], keepdim=True, dtype=None): the axis, from a
 * constant list or a prim::ListConstruct of one constant. */
static gboolean
aten_mean_over_one_axis (GraftNode *mean, GraftValue *x, gint64 *axis)
{
  GraftValue *dims;
  double keep, c;
  if (!is_op (mean, "aten::mean") || mean->outputs->len != 1 || mean->inputs->len < 1 ||
      mean->inputs->pdata[0] != x || !aten_constant_number (mean, 2, &keep) || keep != 1 ||
      !aten_arg_none (mean, 3))
    return FALSE;
  GraftAttribute *a = graft_aten_node_arg (mean, 1, &dims);
  if (a)
    {
      if (a->type != GRAFT_ATTR_INTS || a->ints->len != 1)
        return FALSE;
      *axis = g_array_index (a->ints, gint64, 0);
      return TRUE;
    }
  GraftNode *list = dims ? dims->producer : NULL;
  if (!is_op (list, "prim::ListConstruct") || list->inputs->len != 0 || !aten_constant_number (list, 0, &c) ||
      graft_node_get_attribute (list, "arg1") != NULL)
    return FALSE;
  *axis = (gint64) c;
  return TRUE;
}

/* aten::to (x, float32, …) of a float32 x is x: the casts RMSNorm
 * writes around its float32 computation. */
static gboolean
is_aten_to_float (GraftNode *node, GraftValue *x)
{
  double dtype;
  /* ScalarType 6: float32 */
  return is_aten (node, "aten::to", 1) && node->inputs->pdata[0] == x && aten_constant_number (node, 1, &dtype) &&
         dtype == 6;
}

gboolean
graft_rms_norm_fusion_match_aten (GraftNode *pow, GraftRmsNormFusion *f)
{
  double c;
  memset (f, 0, sizeof *f);
  GraftValue *x = is_aten (pow, "aten::pow", 1) ? pow->inputs->pdata[0] : NULL;
  if (x == NULL || !aten_constant_number (pow, 1, &c) || c != 2)
    return FALSE;
  GraftNode *mean = aten_sole_reader (pow);
  if (!aten_mean_over_one_axis (mean, output_of (pow), &f->axis))
    return FALSE;
  GraftNode *add = aten_sole_reader (mean);
  if (!is_op (add, "aten::add") || add->outputs->len != 1 || add->inputs->len < 1 ||
      add->inputs->pdata[0] != output_of (mean) || !aten_constant_float (add, 1, &f->epsilon) ||
      !(aten_arg_none (add, 2) || (aten_constant_number (add, 2, &c) && c == 1)))
    return FALSE;
  GraftNode *rsqrt = aten_sole_reader (add);
  if (!is_aten (rsqrt, "aten::rsqrt", 1))
    return FALSE;
  GraftNode *normed = aten_sole_reader (rsqrt);
  guint index;
  GraftValue *other = is_aten (normed, "aten::mul", 2) ? other_input (normed, output_of (rsqrt), &index) : NULL;
  if (other != x)
    return FALSE;
  GraftNode *nodes[8] = { pow, mean, add, rsqrt, normed };
  guint n = 5;
  GraftNode *scaled = aten_sole_reader (normed);
  if (is_aten_to_float (scaled, output_of (normed)))
    {
      nodes[n++] = scaled;
      scaled = aten_sole_reader (scaled);
    }
  GraftValue *scale = is_aten (scaled, "aten::mul", 2) ? other_input (scaled, output_of (nodes[n - 1]), &index) : NULL;
  if (scale == NULL || scale == x)
    return FALSE;
  nodes[n++] = scaled;
  if (n > G_N_ELEMENTS (f->nodes))
    return FALSE;
  f->inputs[GRAFT_RMS_NORM_FUSION_X] = x;
  f->inputs[GRAFT_RMS_NORM_FUSION_SCALE] = scale;
  memcpy (f->nodes, nodes, n * sizeof nodes[0]);
  f->n_nodes = n;
  return TRUE;
}

/* ---- parallel linear branches of one input, summed ---- */

typedef struct {
  GraftFusionConstantOf constant_of;
  gpointer data;
  gboolean failed;
  GraftValue *x;
  /* every node of the tree, the root first */
  guint n_nodes;
  GraftNode *nodes[GRAFT_CONV_BRANCHES_MAX_NODES];
  guint n_convs, n_diagonal, n_opaque;
  GraftNode *convs[GRAFT_CONV_BRANCHES_MAX_NODES];
  GraftValue *opaque[GRAFT_CONV_BRANCHES_MAX_NODES];
  /* the host's shape: M outputs, Cg inputs per group, K × K */
  gint64 M, Cg, K, group, stride;
  double *weight, *bias;
} Branches;

static gboolean
branches_has (Branches *b, GraftNode *node)
{
  for (guint k = 0; k < b->n_nodes; k++)
    if (b->nodes[k] == node)
      return TRUE;
  return FALSE;
}

static void
branches_add (Branches *b, GraftNode *node)
{
  if (branches_has (b, node))
    return;
  if (b->n_nodes == GRAFT_CONV_BRANCHES_MAX_NODES)
    b->failed = TRUE;
  else
    b->nodes[b->n_nodes++] = node;
}

static void
branches_take_x (Branches *b, GraftValue *x)
{
  if (b->x == NULL)
    b->x = x;
  else if (b->x != x)
    b->failed = TRUE;
}

/* conv's square odd kernel k with "same" padding, its stride and groups,
 * dilation 1; FALSE for other convolutions */
static gboolean
branches_conv_shape (Branches *b, GraftNode *conv, GraftRtTensor **w, gint64 *k, gint64 *stride, gint64 *group)
{
  guint n;
  *w = conv->inputs->len >= 2 ? b->constant_of (conv->inputs->pdata[1], b->data) : NULL;
  if (*w == NULL || (*w)->dtype != GRAFT_DTYPE_FLOAT32 || (*w)->rank != 4 || (*w)->dims[2] != (*w)->dims[3] ||
      (*w)->dims[2] % 2 != 1 || conv->outputs->len != 1 ||
      strcmp (graft_node_attr_string (conv, "auto_pad", "NOTSET"), "NOTSET") != 0)
    return FALSE;
  *k = (*w)->dims[2];
  *group = graft_node_attr_int (conv, "group", 1);
  const gint64 *a = graft_node_attr_ints (conv, "dilations", &n);
  for (guint i = 0; a && i < n; i++)
    if (a[i] != 1)
      return FALSE;
  a = graft_node_attr_ints (conv, "strides", &n);
  *stride = a && n == 2 ? a[0] : 1;
  if (a && (n != 2 || a[1] != a[0]))
    return FALSE;
  a = graft_node_attr_ints (conv, "pads", &n);
  for (guint i = 0; i < 4; i++)
    if ((a && n == 4 ? a[i] : 0) != (*k - 1) / 2 || (a && n != 4))
      return FALSE;
  return *group > 0;
}

/* Finds the tree's nodes, its input x and its convolutions. */
static void
branches_walk (Branches *b, GraftValue *v, gboolean root)
{
  GraftNode *node = v ? v->producer : NULL;
  if (b->failed || v == NULL)
    {
      b->failed = TRUE;
      return;
    }
  if (v == b->x)
    return;
  /* a value read by a convolution or another op is x or outside the tree */
  for (guint k = 0; !root && v->consumers && k < v->consumers->len; k++)
    {
      GraftNode *reader = v->consumers->pdata[k];
      if (!is_op (reader, "onnx::Add") && !is_op (reader, "onnx::Sub") && !is_op (reader, "onnx::Mul"))
        node = NULL;
    }
  if (is_op (node, "onnx::Conv") && node->inputs->len >= 2)
    {
      if (!branches_has (b, node) && b->n_convs < GRAFT_CONV_BRANCHES_MAX_NODES)
        b->convs[b->n_convs++] = node;
      branches_add (b, node);
      branches_take_x (b, node->inputs->pdata[0]);
    }
  else if (is_op (node, "onnx::BatchNormalization") && node->inputs->len == 5 && node->outputs->len == 1)
    {
      branches_add (b, node);
      b->n_diagonal++;
      branches_take_x (b, node->inputs->pdata[0]);
    }
  else if ((is_op (node, "onnx::Add") || is_op (node, "onnx::Sub") || is_op (node, "onnx::Mul")) &&
           node->inputs->len == 2 && node->outputs->len == 1)
    {
      branches_add (b, node);
      for (guint k = 0; k < 2; k++)
        if (b->constant_of (node->inputs->pdata[k], b->data) == NULL)
          branches_walk (b, node->inputs->pdata[k], FALSE);
    }
  else if (b->n_opaque < GRAFT_CONV_BRANCHES_MAX_NODES)
    {
      /* x itself, when a convolution reads it too */
      b->opaque[b->n_opaque++] = v;
      b->n_diagonal++;
    }
  else
    b->failed = TRUE;
}

/* constant v's value for each of the M output channels: one value, or M
 * along axis 1 of the 4-D output */
static GraftRtTensor *
branches_channel_constant (Branches *b, GraftValue *v)
{
  GraftRtTensor *t = b->constant_of (v, b->data);
  if (t == NULL || t->dtype != GRAFT_DTYPE_FLOAT32 || t->rank > 4 || (t->numel != 1 && t->numel != b->M))
    return NULL;
  for (int a = 0; a < t->rank; a++)
    if (t->dims[a] != 1 && 4 - t->rank + a != 1)
      return NULL;
  return t;
}

/* constant v of M float32 values (a bias, a BatchNormalization's statistics) */
static GraftRtTensor *
branches_vector (Branches *b, GraftValue *v)
{
  GraftRtTensor *t = v ? b->constant_of (v, b->data) : NULL;
  return t && t->dtype == GRAFT_DTYPE_FLOAT32 && t->rank == 1 && t->numel == b->M ? t : NULL;
}

static double
channel_value (const GraftRtTensor *t, gint64 m)
{
  return ((const float *) t->data)[t->numel == 1 ? 0 : m];
}

/* adds s[m]·value[m] at the centre of the host's kernel of channel m on
 * its own input channel */
static void
branches_add_diagonal (Branches *b, const double *s, const double *value)
{
  gint64 centre = (b->K - 1) / 2;
  for (gint64 m = 0; m < b->M; m++)
    b->weight[((m * b->Cg + m % b->Cg) * b->K + centre) * b->K + centre] += s[m] * (value ? value[m] : 1);
}

static gboolean
branches_add_conv (Branches *b, GraftNode *conv, const double *s)
{
  GraftRtTensor *w;
  gint64 k, stride, group;
  GraftRtTensor *bias = conv->inputs->len > 2 ? branches_vector (b, conv->inputs->pdata[2]) : NULL;
  if (!branches_conv_shape (b, conv, &w, &k, &stride, &group) || w->dims[0] != b->M || stride != b->stride ||
      k > b->K || (conv->inputs->len > 2 && conv->inputs->pdata[2] && (bias == NULL || bias->numel != b->M)))
    return FALSE;
  for (gint64 m = 0; bias && m < b->M; m++)
    b->bias[m] += s[m] * channel_value (bias, m);
  const float *src = w->data;
  if (group == b->group && w->dims[1] == b->Cg)
    {
      gint64 off = (b->K - k) / 2;
      for (gint64 m = 0; m < b->M; m++)
        for (gint64 c = 0; c < b->Cg; c++)
          for (gint64 i = 0; i < k; i++)
            for (gint64 j = 0; j < k; j++)
              b->weight[((m * b->Cg + c) * b->K + off + i) * b->K + off + j] +=
                s[m] * src[((m * b->Cg + c) * k + i) * k + j];
      return TRUE;
    }
  /* depthwise, on the diagonal of a host with more inputs per group */
  if (group != b->M || w->dims[1] != 1 || b->M != b->Cg * b->group || k != 1)
    return FALSE;
  g_autofree double *value = g_new (double, b->M);
  for (gint64 m = 0; m < b->M; m++)
    value[m] = src[m];
  branches_add_diagonal (b, s, value);
  return TRUE;
}

static gboolean
branches_add_batch_norm (Branches *b, GraftNode *bn, const double *s)
{
  GraftRtTensor *p[4];
  for (guint k = 0; k < 4; k++)
    if ((p[k] = branches_vector (b, bn->inputs->pdata[k + 1])) == NULL)
      return FALSE;
  if (graft_node_attr_int (bn, "training_mode", 0) != 0 || b->stride != 1 || b->M != b->Cg * b->group)
    return FALSE;
  double eps = graft_node_attr_float (bn, "epsilon", 1e-5);
  g_autofree double *value = g_new (double, b->M);
  for (gint64 m = 0; m < b->M; m++)
    {
      /* (x - mean) / sqrt (var + eps) · scale + B */
      value[m] = channel_value (p[0], m) / sqrt (channel_value (p[3], m) + eps);
      b->bias[m] += s[m] * (channel_value (p[1], m) - channel_value (p[2], m) * value[m]);
    }
  branches_add_diagonal (b, s, value);
  return TRUE;
}

/* Adds s[m] times v's linear function of x into the host's weight and bias. */
static gboolean
branches_eval (Branches *b, GraftValue *v, const double *s)
{
  GraftNode *node = v->producer;
  if (v == b->x)
    {
      if (b->stride != 1 || b->M != b->Cg * b->group)
        return FALSE;
      branches_add_diagonal (b, s, NULL);
      return TRUE;
    }
  if (is_op (node, "onnx::Conv"))
    return branches_add_conv (b, node, s);
  if (is_op (node, "onnx::BatchNormalization"))
    return branches_add_batch_norm (b, node, s);
  g_autofree double *t = g_new (double, b->M);
  GraftRtTensor *c[2] = { branches_channel_constant (b, node->inputs->pdata[0]),
                          branches_channel_constant (b, node->inputs->pdata[1]) };
  if (is_op (node, "onnx::Mul"))
    {
      guint k = c[0] ? 0 : 1;
      if ((c[0] == NULL) == (c[1] == NULL))
        return FALSE;
      for (gint64 m = 0; m < b->M; m++)
        t[m] = s[m] * channel_value (c[k], m);
      return branches_eval (b, node->inputs->pdata[1 - k], t);
    }
  for (guint k = 0; k < 2; k++)
    {
      double sign = is_op (node, "onnx::Sub") && k == 1 ? -1 : 1;
      for (gint64 m = 0; m < b->M; m++)
        t[m] = sign * s[m];
      if (c[k])
        for (gint64 m = 0; m < b->M; m++)
          b->bias[m] += t[m] * channel_value (c[k], m);
      else if (b->constant_of (node->inputs->pdata[k], b->data) != NULL || !branches_eval (b, node->inputs->pdata[k], t))
        return FALSE;
    }
  return TRUE;
}

/* Each value in the tree but the root's is read only by its nodes. */
static gboolean
branches_closed (Branches *b, GraftNode *root)
{
  for (guint k = 0; k < b->n_nodes; k++)
    {
      GraftNode *node = b->nodes[k];
      GraftValue *v = output_of (node);
      if (node == root)
        continue;
      if (v == NULL || graft_value_leaves_run (v) || v->consumers == NULL || node->graph != root->graph)
        return FALSE;
      for (guint j = 0; j < node->graph->outputs->len; j++)
        if (node->graph->outputs->pdata[j] == v)
          return FALSE;
      for (guint j = 0; j < v->consumers->len; j++)
        if (!branches_has (b, v->consumers->pdata[j]))
          return FALSE;
    }
  return TRUE;
}

/* The host: the widest kernel, then the fewest groups. */
static GraftNode *
branches_host (Branches *b)
{
  GraftNode *host = NULL;
  gint64 best_k = 0, best_group = 0;
  for (guint k = 0; k < b->n_convs; k++)
    {
      GraftRtTensor *w;
      gint64 kk, stride, group;
      if (!branches_conv_shape (b, b->convs[k], &w, &kk, &stride, &group))
        return NULL;
      if (host == NULL || kk > best_k || (kk == best_k && group < best_group))
        {
          host = b->convs[k];
          best_k = kk, best_group = group;
          b->M = w->dims[0], b->Cg = w->dims[1], b->K = kk, b->group = group, b->stride = stride;
        }
    }
  return host;
}

/* The nodes from the host's reader to the root. */
static gboolean
branches_path (GraftConvBranchesFusion *f)
{
  GraftNode *node = f->host;
  while (node != f->root)
    {
      GraftValue *v = output_of (node);
      if (v == NULL || v->consumers == NULL || v->consumers->len != 1 || f->n_path == GRAFT_CONV_BRANCHES_MAX_NODES)
        return FALSE;
      GraftNode *next = v->consumers->pdata[0];
      if (next->inputs->pdata[0] == next->inputs->pdata[1] || is_op (next, "onnx::Conv") ||
          is_op (next, "onnx::BatchNormalization"))
        return FALSE;
      f->path_input[f->n_path] = next->inputs->pdata[0] == v ? 0 : 1;
      f->path[f->n_path++] = next;
      node = next;
    }
  return TRUE;
}

gboolean
graft_conv_branches_fusion_match (GraftNode *root, GraftFusionConstantOf constant_of, gpointer data,
                                  GraftConvBranchesFusion *f)
{
  memset (f, 0, sizeof *f);
  if ((!is_op (root, "onnx::Add") && !is_op (root, "onnx::Sub")) || root->inputs->len != 2 ||
      root->outputs->len != 1)
    return FALSE;
  Branches b = { constant_of, data };
  branches_walk (&b, output_of (root), TRUE);
  for (guint k = 0; k < b.n_opaque; k++)
    if (b.opaque[k] != b.x)
      b.failed = TRUE;
  if (b.failed || b.x == NULL || b.n_convs + b.n_diagonal < 2 || !branches_closed (&b, root))
    return FALSE;
  f->root = root;
  f->x = b.x;
  if ((f->host = branches_host (&b)) == NULL || !branches_path (f))
    return FALSE;
  b.weight = g_new0 (double, b.M * b.Cg * b.K * b.K);
  b.bias = g_new0 (double, b.M);
  g_autofree double *ones = g_new (double, b.M);
  for (gint64 m = 0; m < b.M; m++)
    ones[m] = 1;
  gboolean ok = branches_eval (&b, output_of (root), ones);
  if (ok)
    {
      gint64 dims[4] = { b.M, b.Cg, b.K, b.K };
      f->weight = graft_rt_tensor_new (GRAFT_DTYPE_FLOAT32, 4, dims, NULL);
      f->bias = graft_rt_tensor_new (GRAFT_DTYPE_FLOAT32, 1, dims, NULL);
      for (gint64 i = 0; i < f->weight->numel; i++)
        ((float *) f->weight->data)[i] = (float) b.weight[i];
      for (gint64 m = 0; m < b.M; m++)
        ((float *) f->bias->data)[m] = (float) b.bias[m];
      for (guint k = 0; k < b.n_nodes; k++)
        {
          gboolean on_path = b.nodes[k] == f->host;
          for (guint j = 0; j < f->n_path; j++)
            on_path |= b.nodes[k] == f->path[j];
          if (!on_path)
            f->others[f->n_others++] = b.nodes[k];
        }
    }
  g_free (b.weight);
  g_free (b.bias);
  return ok;
}

void
graft_conv_branches_fusion_clear (GraftConvBranchesFusion *f)
{
  g_clear_pointer (&f->weight, graft_rt_tensor_unref);
  g_clear_pointer (&f->bias, graft_rt_tensor_unref);
}
