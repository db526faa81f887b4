/* QDQ fusion: the patterns onnxruntime's quantize_static writes in its
 * QDQ format — DequantizeLinear → float op → QuantizeLinear — recognised
 * as one 8-bit operator (QLinearConv, QGemm, QLinearAdd,
 * QLinearGlobalAveragePool, or MaxPool/Flatten on the 8-bit values).
 * Pure analysis: the graph is left as it is; the runtime's plan runs the
 * 8-bit operator in place of the pattern. */
#pragma once

#include "ir/graph.h"
#include "runtime/rt-tensor.h"

G_BEGIN_DECLS

#define GRAFT_QDQ_MAX_INPUTS 9

typedef struct {
  const char *op;             /* registry name of the 8-bit operator */
  gint64 opset;
  GraftNode *node;            /* the float op: the 8-bit operator reads its attributes */
  guint n_inputs;
  GraftValue *inputs[GRAFT_QDQ_MAX_INPUTS];  /* NULL: omitted optional input */
  guint n_dequantize;
  GraftNode *dequantize[4];   /* the DequantizeLinear nodes it reads, activations first */
} GraftQdqFusion;

/* The constant tensor of v (an initializer), or NULL. */
typedef GraftRtTensor *(*GraftQdqConstantFunc) (GraftValue *v, gpointer user_data);

/* Matches the pattern that QuantizeLinear node `quantize` closes. The
 * float op's output must feed only `quantize`; every scale and zero
 * point must be a constant; weights and biases constants too. The
 * 8-bit result may differ from the float path by one quantum (rounding
 * of the float sums), never more. */
gboolean graft_qdq_fusion_match (GraftNode *quantize, gint64 opset, GraftQdqConstantFunc constant, gpointer user_data,
                                 GraftQdqFusion *fusion);

G_END_DECLS
