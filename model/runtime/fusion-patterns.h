/* Patterns of nodes that the runtime's plan runs as one fused step, and
 * the matching they share. Pure analysis: the graph is left as it is.
 *
 * Attention fusion: the scaled dot-product attention that exporters write
 * as separate nodes — MatMul (Q, Kᵀ) → [Mul or Div by a scale] → [Add of a
 * mask] → Softmax (last axis) → [Cast to float] → MatMul (·, V), as torch.onnx.export writes
 * BERT's and GPT-2's — recognised as one graft::ScaledDotProductAttention
 * (attention.c), which scores a block of queries at a time in cache
 * instead of writing the [.., queries, keys] scores out four times.
 * Pure analysis: the graph is left as it is; the runtime's plan runs the
 * fused operator at the first MatMul's place and skips the others, unless
 * the kernel declines the run's shapes or types (then the nodes run). */
#pragma once

#include "ir/graph.h"
#include "runtime/rt-tensor.h"

G_BEGIN_DECLS

/* The only reader of node's single output (*out_value, set even when
 * there is no sole reader), in node's graph, and the output not a graph
 * output; else NULL. */
GraftNode *graft_fusion_sole_reader (GraftNode *node, GraftValue **out_value);

/* v is a float32 scalar constant (an initializer or a Constant node's
 * value): its value in *out. */
gboolean graft_fusion_constant_scalar (GraftValue *v, float *out);

enum { GRAFT_ATTENTION_FUSION_Q, GRAFT_ATTENTION_FUSION_KT, GRAFT_ATTENTION_FUSION_V, GRAFT_ATTENTION_FUSION_MASK,
       GRAFT_ATTENTION_FUSION_SCALE, GRAFT_ATTENTION_FUSION_DIVISOR, GRAFT_ATTENTION_FUSION_N_INPUTS };

#define GRAFT_ATTENTION_FUSION_OP "graft::ScaledDotProductAttention"

typedef struct {
  /* by GRAFT_ATTENTION_FUSION_*; NULL: omitted (no mask, no scale) */
  GraftValue *inputs[GRAFT_ATTENTION_FUSION_N_INPUTS];
  /* the pattern's nodes in order: the first MatMul, then up to Mul/Div,
   * Add, Softmax and Cast, and the closing MatMul (its output is the
   * fused operator's) */
  guint n_nodes;
  GraftNode *nodes[7];
  /* PyTorch files (graft_attention_fusion_match_aten): a scale or divisor
   * given as a constant argument rather than an input, and the softmax's
   * axis as written (the kernel takes only the last) */
  gboolean aten;
  gboolean has_scale_constant, has_divisor_constant;
  float scale_constant, divisor_constant;
  gint64 softmax_dim;
} GraftAttentionFusion;

/* Matches the pattern that MatMul node `qk` opens. Every value in between
 * must have one reader, in the same graph, and not be a graph output; the
 * Softmax must be over the last axis: axis -1, or no axis from opset 13
 * on (opset_of gives a node's opset). */
gboolean graft_attention_fusion_match (GraftNode *qk, gint64 (*opset_of) (GraftNode *node, gpointer data),
                                       gpointer data, GraftAttentionFusion *fusion);

/* The same pattern in a traced, scripted or exported PyTorch file (eager
 * attention of BERT, ViT, wav2vec2, Llama): aten::matmul (Q, Kᵀ) →
 * [aten::mul or div by a scalar] → [aten::add of a mask] → aten::softmax
 * (last axis; dtype None or float32) → [aten::to float32] →
 * [aten::dropout, not in training] → aten::matmul (·, V), opened by the
 * first matmul `first`. Kᵀ stays the aten::transpose's output: the
 * product of Q by a transposed K cost more than the transpose. */
gboolean graft_attention_fusion_match_aten (GraftNode *first, GraftAttentionFusion *fusion);

/* GELU as torch.onnx.export writes it before opset 20 (BERT's feed
 * forward): x → Div (x, √2) → Erf → Add 1 → Mul by x → Mul by 0.5, run as
 * onnx::Gelu (approximate "none"). */
#define GRAFT_GELU_FUSION_N_NODES 5

/* Matches the pattern that Div node `div` opens: nodes[] gets the Div,
 * Erf, Add, Mul and the closing Mul, whose output is the GELU's. */
gboolean graft_gelu_fusion_match (GraftNode *div, GraftNode *nodes[GRAFT_GELU_FUSION_N_NODES]);

/* GELU's tanh approximation written out, 0.5·x·(1 + tanh (√(2/π)·(x +
 * 0.044715·x³))), as GPT-2's and Phi's NewGELU export (x³ a Pow) and as
 * torch.onnx.export writes F.gelu (approximate="tanh") before opset 20
 * (x³ as x·(x·x)): run as onnx::Gelu (approximate "tanh"). */
#define GRAFT_GELU_TANH_FUSION_MAX_NODES 9

typedef struct {
  GraftValue *x;
  guint n_nodes;
  /* in the order they were found, not the graph's: the fusion orders them */
  GraftNode *nodes[GRAFT_GELU_TANH_FUSION_MAX_NODES];
} GraftGeluTanhFusion;

/* Matches the pattern around its Tanh node `tanh`; every value between
 * x and the output has one reader (the pattern's next node), in the same
 * graph, and is not a graph output. The constants must be the float32
 * ones the exporters write. */
gboolean graft_gelu_tanh_fusion_match (GraftNode *tanh, GraftGeluTanhFusion *f);

/* Parallel linear branches of one input summed (RepVGG's, MobileOne's,
 * FastViT's training-time blocks as exported): a tree of Add, Sub, Mul
 * by a constant per channel and Add of one, whose leaves are 2-D Convs
 * of x with constant weights ("same" padding, one stride), inference
 * BatchNormalizations of x, and x itself — one convolution of x, whose
 * weight is the host Conv's (the widest kernel, then the fewest groups)
 * with the others' added at its centre (a BatchNormalization, x and a
 * depthwise Conv on the diagonal), as their reparameterisation does.
 * FastViT's RepMixer, x + γ·((dw1×1(x) + BN(x) + dw3×3(x)) − BN'(x)),
 * is one depthwise 3×3 convolution. */
#define GRAFT_CONV_BRANCHES_MAX_NODES 24

typedef struct {
  GraftValue *x;
  GraftNode *root;          /* its output is the sum's */
  GraftNode *host;
  /* the nodes from the host's reader to the root, each with the input
   * that leads back to the host */
  guint n_path;
  GraftNode *path[GRAFT_CONV_BRANCHES_MAX_NODES];
  guint path_input[GRAFT_CONV_BRANCHES_MAX_NODES];
  /* the tree's other nodes, which need not run */
  guint n_others;
  GraftNode *others[GRAFT_CONV_BRANCHES_MAX_NODES];
  /* the host's weight and bias for the whole sum (owned) */
  GraftRtTensor *weight, *bias;
} GraftConvBranchesFusion;

/* A constant tensor for v (borrowed), or NULL. */
typedef GraftRtTensor *(*GraftFusionConstantOf) (GraftValue *v, gpointer data);

/* Matches the tree whose root is the Add or Sub `root`; every value in
 * it but the root's is read only inside it, and is not a graph output.
 * Clear with graft_conv_branches_fusion_clear. */
gboolean graft_conv_branches_fusion_match (GraftNode *root, GraftFusionConstantOf constant_of, gpointer data,
                                           GraftConvBranchesFusion *f);
void graft_conv_branches_fusion_clear (GraftConvBranchesFusion *f);

/* v feeds act, a Relu (or aten::relu(_)) or a Clip whose bounds are
 * constants (inputs, from opset 11): its bounds (±INFINITY for none). */
gboolean graft_fusion_activation_bounds (GraftNode *act, GraftValue *v, float *lo, float *hi);

/* A 1×1 convolution, its Relu/Clip if any, then a grouped convolution
 * (a depthwise one: the kernel checks the shapes) reading it, and its
 * Relu/Clip if any — MobileNet's expansion and depthwise layers — and
 * then, if they follow, a 1×1 convolution (the projection) and an Add of
 * the first convolution's input (the residual); or the same from the
 * depthwise convolution on, without an expansion, when the projection
 * follows (MobileNetV1's blocks, V2's first): run as one
 * graft::PointwiseDepthwiseConv (conv-fused.c), a band of rows at a time
 * in cache, the wide tensors never written out whole. */
#define GRAFT_POINTWISE_DEPTHWISE_FUSION_OP "graft::PointwiseDepthwiseConv"

enum { GRAFT_POINTWISE_DEPTHWISE_FUSION_X, GRAFT_POINTWISE_DEPTHWISE_FUSION_W1, GRAFT_POINTWISE_DEPTHWISE_FUSION_B1,
       GRAFT_POINTWISE_DEPTHWISE_FUSION_W2, GRAFT_POINTWISE_DEPTHWISE_FUSION_B2,
       GRAFT_POINTWISE_DEPTHWISE_FUSION_W3, GRAFT_POINTWISE_DEPTHWISE_FUSION_B3,
       GRAFT_POINTWISE_DEPTHWISE_FUSION_N_INPUTS };

typedef struct {
  /* by GRAFT_POINTWISE_DEPTHWISE_FUSION_*; NULL: no bias (no expansion, no projection) */
  GraftValue *inputs[GRAFT_POINTWISE_DEPTHWISE_FUSION_N_INPUTS];
  GraftNode *pointwise;     /* the expansion, or NULL (then the projection is there) */
  GraftNode *depthwise;
  GraftNode *project;       /* or NULL */
  gboolean residual;        /* the projection's output plus X */
  float lo[2], hi[2];       /* the clamps after the expansion and the depthwise layer, ±INFINITY for none */
  /* in order: the expansion, its activation, the depthwise Conv, its
   * activation, the projection, the Add (those present; the last node
   * gives the fused operator's output) */
  guint n_nodes;
  GraftNode *nodes[6];
} GraftPointwiseDepthwiseFusion;

/* Matches the pattern that Conv node `first` opens (the expansion, or the
 * depthwise layer): the 1×1 windows must be 1×1 where kernel_shape tells
 * (the kernel checks the weights), every value in between has one
 * reader, in the same graph, and is not a graph output. */
gboolean graft_pointwise_depthwise_fusion_match (GraftNode *first, GraftPointwiseDepthwiseFusion *f);

/* onnxruntime's quantize_dynamic writes each convolution as ConvInteger
 * → Cast to float → Mul by the product of the two scales → Add of the
 * bias, then Relu, or an Add of the block's other branch and a Relu: run
 * as one graft::ConvIntegerToFloat (qlinear.c), whose GEMM hands its
 * int32 tiles to those float operations, in the nodes' order, and writes
 * float32 once instead of int32, then four float tensors. */
#define GRAFT_CONV_INTEGER_FLOAT_FUSION_OP "graft::ConvIntegerToFloat"

enum { GRAFT_CONV_INTEGER_FLOAT_FUSION_X, GRAFT_CONV_INTEGER_FLOAT_FUSION_W, GRAFT_CONV_INTEGER_FLOAT_FUSION_X_ZERO,
       GRAFT_CONV_INTEGER_FLOAT_FUSION_W_ZERO, GRAFT_CONV_INTEGER_FLOAT_FUSION_SCALE,
       GRAFT_CONV_INTEGER_FLOAT_FUSION_ADD1, GRAFT_CONV_INTEGER_FLOAT_FUSION_ADD2,
       GRAFT_CONV_INTEGER_FLOAT_FUSION_N_INPUTS };

typedef struct {
  /* by GRAFT_CONV_INTEGER_FLOAT_FUSION_*; NULL: omitted (zero points, Adds) */
  GraftValue *inputs[GRAFT_CONV_INTEGER_FLOAT_FUSION_N_INPUTS];
  /* in order: ConvInteger, Cast, Mul, then those present of Add, Add, Relu */
  guint n_nodes;
  GraftNode *nodes[6];
  /* nodes[] up to the first Add (the pattern without the second Add and
   * the Relu after it, for a plan where the second Add's other operand
   * is computed after the convolution) */
  guint n_nodes_to_first_add;
  gboolean relu;            /* the last node is a Relu */
} GraftConvIntegerFloatFusion;

/* Matches the pattern that ConvInteger node `conv` opens; every value in
 * between has one reader, in the same graph, and is not a graph output.
 * The kernel checks that the scale and the addends are float32 scalars,
 * per-channel vectors or (addends) tensors of the output's shape. */
gboolean graft_conv_integer_float_fusion_match (GraftNode *conv, GraftConvIntegerFloatFusion *f);

/* GroupNorm as torch.onnx.export writes it (diffusers' VAE and UNet):
 * x → Reshape to [N, groups, -1] → InstanceNormalization → Reshape back to
 * x's shape (by Shape (x) or a constant) → Mul by a per-channel scale →
 * Add of a per-channel shift, and when they follow, the SiLU after it
 * (Sigmoid, and a Mul of the Add's output by it): run as one
 * graft::GroupNorm (norm.c), each group's statistics then one pass that
 * scales, shifts and activates, instead of five or seven passes over the
 * feature map. */
#define GRAFT_GROUP_NORM_FUSION_OP "graft::GroupNorm"

enum { GRAFT_GROUP_NORM_FUSION_X, GRAFT_GROUP_NORM_FUSION_GROUPED_SHAPE, GRAFT_GROUP_NORM_FUSION_GROUP_SCALE,
       GRAFT_GROUP_NORM_FUSION_GROUP_BIAS, GRAFT_GROUP_NORM_FUSION_SHAPE, GRAFT_GROUP_NORM_FUSION_SCALE,
       GRAFT_GROUP_NORM_FUSION_BIAS, GRAFT_GROUP_NORM_FUSION_N_INPUTS };

typedef struct {
  /* by GRAFT_GROUP_NORM_FUSION_*; SHAPE is NULL when the Reshape back
   * reads Shape (x) */
  GraftValue *inputs[GRAFT_GROUP_NORM_FUSION_N_INPUTS];
  GraftNode *instance_norm;
  GraftNode *reshape_back;
  gboolean silu;
  /* in order: Reshape, InstanceNormalization, Reshape, Mul, Add, and
   * with silu Sigmoid and Mul (the last gives the fused output) */
  guint n_nodes;
  GraftNode *nodes[7];
} GraftGroupNormFusion;

/* Matches the pattern that Reshape node `reshape` opens; every value in
 * between has one reader in the pattern, in the same graph, and is not a
 * graph output. The kernel checks the shapes: groups of whole channels,
 * the Reshape back restoring x's shape, per-channel scale and shift. */
gboolean graft_group_norm_fusion_match (GraftNode *reshape, GraftGroupNormFusion *f);

/* RMS normalisation over the last axis as exporters write T5's and
 * Llama's RMSNorm: x → Pow (x, 2) → ReduceMean (one axis, keepdims) → Add
 * of a constant ε → Sqrt → Reciprocal, or Div of 1 by it → Mul by x → Mul
 * by a scale: run as one graft::RMSNorm (norm.c), each row's mean square
 * then one pass that scales, instead of seven steps and passes. */
#define GRAFT_RMS_NORM_FUSION_OP "graft::RMSNorm"

enum { GRAFT_RMS_NORM_FUSION_X, GRAFT_RMS_NORM_FUSION_SCALE, GRAFT_RMS_NORM_FUSION_N_INPUTS };

typedef struct {
  GraftValue *inputs[GRAFT_RMS_NORM_FUSION_N_INPUTS];
  float epsilon;
  gint64 axis;               /* the ReduceMean's, as written (the kernel takes only the last axis) */
  /* in order: Pow, ReduceMean, Add, Sqrt, Reciprocal or Div, Mul, Mul
   * (the last gives the fused output); in PyTorch files aten::pow,
   * mean, add, rsqrt, mul, [to,] mul */
  guint n_nodes;
  GraftNode *nodes[7];
} GraftRmsNormFusion;

/* Matches the pattern that Pow node `pow` opens; every value in between
 * has one reader in the pattern, in the same graph, and is not a graph
 * output. The kernel checks the types and shapes. */
gboolean graft_rms_norm_fusion_match (GraftNode *pow, GraftRmsNormFusion *f);

/* The same in a PyTorch file (T5LayerNorm, LlamaRMSNorm): x → [aten::to
 * float32 →] aten::pow (·, 2) → aten::mean (one axis, keepdim) →
 * aten::add of ε → aten::rsqrt → aten::mul by x (or the to's output) →
 * [aten::to] → aten::mul by a scale, opened by the pow (x must be
 * float32: the kernel declines other types). */
gboolean graft_rms_norm_fusion_match_aten (GraftNode *pow, GraftRmsNormFusion *f);

G_END_DECLS
