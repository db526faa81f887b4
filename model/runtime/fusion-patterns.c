/* Patterns the runtime fuses: see fusion-patterns.h. */
#include "runtime/fusion-patterns.h"
#include "runtime/op.h"

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
  if (v == NULL || v->is_graph_output || v->consumers == NULL || v->consumers->len != 1)
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

gboolean
graft_fusion_constant_scalar (GraftValue *v, float *out)
{
  GraftTensor *t = v ? v->initializer : NULL;
  if (t == NULL && v && v->producer && strcmp (v->producer->op, "onnx::Constant") == 0)
    {
      GraftAttribute *a = graft_node_get_attribute (v->producer, "value");
      t = a ? a->t : NULL;
    }
  if (t == NULL || graft_tensor_get_numel (t) != 1 || t->dtype != GRAFT_DTYPE_FLOAT32)
    return FALSE;
  GBytes *bytes = graft_tensor_get_data (t, NULL);
  if (bytes == NULL || g_bytes_get_size (bytes) != 4)
    return FALSE;
  memcpy (out, g_bytes_get_data (bytes, NULL), 4);
  return TRUE;
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
