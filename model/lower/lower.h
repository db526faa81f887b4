/* Lowering: a TorchScript (or torch.export) graph of aten::/prim:: nodes
 * becomes an ONNX graph at a chosen opset, without PyTorch.
 *
 * Each aten op has one lowering row (lower-private.h) in the file of its
 * family (lower-nn.c, lower-elementwise.c, lower-shape.c, lower-prim.c):
 * the op, the first opset it lowers at and the function that emits the
 * ONNX nodes. Output shapes of emitted nodes come from the runtime
 * registry's inference functions (runtime/op.h), so a lowering that needs
 * a rank or a fixed dim asks the same shape logic the runtime runs.
 *
 * What is written: parameters and buffers become initializers that share
 * the TorchScript tensor data (no copy until the file is written);
 * aten::size and int arithmetic become Shape/Gather/arith nodes, so dims
 * stay symbolic; static lists and tuples are resolved, a list appended to
 * in a loop whose trip count is known only at run time becomes an ONNX
 * sequence carried through the Loop; prim::If/prim::Loop become If/Loop
 * with their bodies; node names carry the module scope
 * ("/layer1/0/conv1/Conv") so the group tree survives the file.
 */
#pragma once

#include "ir/model.h"

G_BEGIN_DECLS

#define GRAFT_LOWER_DEFAULT_OPSET 17
#define GRAFT_LOWER_MIN_OPSET 13

/* The newest ONNX opset the runtime has kernels for. */
gint64 graft_lower_max_opset (void);

typedef struct {
  gint64 opset;              /* 0: GRAFT_LOWER_DEFAULT_OPSET */
  /* Ops without a lowering are written as nodes of the custom domain
   * "org.pytorch.aten" (the runtime still runs them) instead of failing. */
  gboolean allow_custom;
  /* Shapes of graph inputs, by input name (char* → GraftShape*, borrowed;
   * may be NULL). TorchScript declares none: a traced module's input is a
   * plain Tensor. Symbolic dims ("batch") stay dynamic in the file. */
  GHashTable *input_shapes;
  /* Element types of graph inputs, by input name (char* →
   * GINT_TO_POINTER (GraftDType); may be NULL): TorchScript declares none,
   * and float32 (int64 for ids an embedding reads) is taken without. */
  GHashTable *input_dtypes;
} GraftLowerOptions;

/* The element type a TorchScript input (which declares none) is taken
 * to have: int64 for ids an embedding looks up, else float32. */
GraftDType graft_lower_guess_input_dtype (GraftValue *input);

/* An op that has no lowering at the opset. */
typedef struct {
  GraftNode *node;           /* borrowed from the source model */
  char *node_name;
  char *schema;              /* "aten::conv_transpose2d(input, weight, bias, stride, …)" or the op */
  char *help;                /* what would help: "opset 18", "--allow-custom", a rewrite */
} GraftLowerProblem;

void graft_lower_problem_free (GraftLowerProblem *problem);

/* The ops of model that have no lowering at opset (GraftLowerProblem*,
 * graph order, subgraphs included); an empty array when all lower.
 * options (may be NULL) gives input shapes, with which the checks of a
 * scripted module fold away as in a conversion. */
GPtrArray *graft_lower_find_unsupported (GraftModel *model, gint64 opset, const GraftLowerOptions *options);

/* A new ONNX model computing what model (format TORCHSCRIPT or
 * EXPORTED_PROGRAM) computes. Inputs keep the declared shapes of the
 * source (set them first with the edit module's set-input-shape and
 * make-dim-dynamic, which also apply to TorchScript inputs). Fails naming
 * every op without a lowering unless options->allow_custom. */
GraftModel *graft_lower_to_onnx (GraftModel *model, const GraftLowerOptions *options, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftLowerProblem, graft_lower_problem_free)

G_END_DECLS
