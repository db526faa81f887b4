/* The operator registry and what a kernel file needs.
 *
 * Every operator has ONE schema entry: its name ("onnx::Conv",
 * "aten::conv2d"), the opset range it covers (ONNX domains only), its
 * shape/dtype inference and its kernel. Kernel files (kernels/<family>.c) each
 * export an array `const GraftOpSchema graft_ops_<family>[]` terminated by
 * an entry with name NULL, and list <family> in kernels/meson.build.
 *
 * Inference works on the IR's GraftShape/GraftDType, so it runs both
 * statically (symbolic or unknown dims, constant data only when known) and
 * at run time (all dims fixed, all data known): the engine calls it before
 * each kernel to learn the output shapes it allocates, so the shape logic
 * of an op lives in one place. At run time the engine reuses what infer
 * gave while the step's inputs keep their types, shapes and, for integer
 * inputs of up to 256 elements and floating-point ones of up to 16, their
 * values (runtime-run.c infer_outputs): infer must read the values of no
 * other input, and must have no other effect.
 */
#pragma once

#include <glib.h>
#include "ir/graph.h"
#include "runtime/precision.h"
#include "runtime/rt-tensor.h"

G_BEGIN_DECLS

typedef struct {
  gboolean present;        /* FALSE: omitted optional input / output not inferred */
  GraftValueKind kind;     /* TENSOR, SEQUENCE or OPTIONAL */
  GraftDType dtype;        /* element type, UNDEFINED if unknown */
  GraftShape shape;        /* owned; rank -1 if unknown */
  GraftRtTensor *data;     /* the value when known (constants, run time), not owned; else NULL */
} GraftInferValue;

typedef struct {
  GraftNode *node;
  gint64 opset;
  guint n_inputs;
  GraftInferValue *inputs;
  guint n_outputs;
  GraftInferValue *outputs;  /* to fill; start as not present */
  /* Static inference only (NULL at run time): what it inferred for a
   * value of one of node's subgraphs, which are inferred before node
   * (an If's result is what its branches give). FALSE if nothing. */
  gboolean (*lookup_subgraph_value) (gpointer lookup_data, const GraftValue *value, GraftDType *dtype,
                                     const GraftShape **shape);
  gpointer lookup_data;
  /* Run time only: for a fused step, the match the planner made of its
   * pattern (graft_kernel_get_pattern); else NULL. */
  gconstpointer pattern;
} GraftInferContext;

typedef gboolean (*GraftInferFunc) (GraftInferContext *ctx, GError **error);

typedef struct _GraftKernelContext GraftKernelContext;
typedef gboolean (*GraftKernelFunc) (GraftKernelContext *ctx, GError **error);

typedef enum {
  /* The engine converts float16/bfloat16 inputs to float32 before the
   * kernel and the float32 outputs back afterwards. */
  GRAFT_OP_HALF_AS_FLOAT = 1 << 0,
  /* The kernel reads the values of a constant input only through
   * graft_kernel_derived or after graft_kernel_need_values: the engine
   * may then leave that input's pages given back when it runs (see
   * graft_runtime_get_given_back_bytes); for other ops it reads them in
   * again first. */
  GRAFT_OP_ASKS_FOR_VALUES = 1 << 1,
} GraftOpFlags;

typedef struct {
  const char *name;        /* "onnx::Conv" */
  int since;               /* first opset (ONNX domains), 0 for others */
  int until;               /* last opset, 0 = still current */
  GraftInferFunc infer;    /* may be NULL: outputs unknown until the kernel runs */
  GraftKernelFunc kernel;
  guint flags;
  /* The ONNX schema's input and output names, space-separated ("X W B");
   * a trailing "..." marks a variadic last parameter ("inputs..."). NULL
   * when the op has no ONNX schema (aten::, prim::). */
  const char *input_names;
  const char *output_names;
} GraftOpSchema;

/* Finds the schema for node->op at opset (ignored when the op's schemas
 * have no range). NULL if the runtime has no kernel for it. */
const GraftOpSchema *graft_op_registry_lookup (const char *op, gint64 opset);
/* Every schema (for listings and tests). */
GPtrArray *graft_op_registry_list (void);
/* The schema's name of input / output index of op at opset ("W" for
 * input 1 of onnx::Conv), an interned string; NULL when the registry has
 * no name for it. A variadic last parameter names every index from it on. */
const char *graft_op_registry_input_name (const char *op, gint64 opset, guint index);
/* The name of the schema's first input when node lacks it, else NULL:
 * shape functions and kernels read input 0 unchecked (ONNX marks it
 * optional only for Loop, Scan-8 and the Optional ops). */
const char *graft_op_schema_missing_first_input (const GraftOpSchema *schema, GraftNode *node);

/* Attributes (usable from infer and kernels). */
gint64 graft_node_attr_int (GraftNode *node, const char *name, gint64 fallback);
double graft_node_attr_float (GraftNode *node, const char *name, double fallback);
/* Borrowed NUL-terminated copy cached on the attribute; fallback if absent. */
const char *graft_node_attr_string (GraftNode *node, const char *name, const char *fallback);
/* Returns the INTS attribute's values (borrowed) or NULL; sets *n. */
const gint64 *graft_node_attr_ints (GraftNode *node, const char *name, guint *n);
const double *graft_node_attr_floats (GraftNode *node, const char *name, guint *n);
gboolean graft_node_has_attr (GraftNode *node, const char *name);
GraftGraph *graft_node_attr_graph (GraftNode *node, const char *name);

/* Inference helpers */
GraftInferValue *graft_infer_input (GraftInferContext *ctx, guint i); /* NULL if absent */
void graft_infer_set_output (GraftInferContext *ctx, guint i, GraftDType dtype, const GraftShape *shape);
void graft_infer_set_output_fixed (GraftInferContext *ctx, guint i, GraftDType dtype, int rank, const gint64 *dims);
void graft_infer_set_output_unknown (GraftInferContext *ctx, guint i, GraftDType dtype, int rank);
void graft_infer_set_output_kind (GraftInferContext *ctx, guint i, GraftValueKind kind, GraftDType dtype);
/* Output i has input j's dtype and shape. */
gboolean graft_infer_same_as_input (GraftInferContext *ctx, GError **error);
/* Numpy broadcasting of shapes; FALSE with error if incompatible. */
gboolean graft_shape_broadcast (const GraftShape *a, const GraftShape *b, GraftShape *out, GError **error);
/* Values of a constant int tensor input (any int dtype); NULL if not known. g_free the result. */
gint64 *graft_infer_input_ints (GraftInferContext *ctx, guint i, gint64 *n);
/* Normalises a possibly negative axis against rank; FALSE with error when out of range. */
gboolean graft_normalize_axis (gint64 *axis, int rank, GError **error);

/* Kernel context */
struct _GraftKernelContext {
  GraftNode *node;
  const GraftOpSchema *schema;
  gint64 opset;
  guint n_inputs;
  GraftRtTensor **inputs;       /* NULL for omitted optional inputs */
  guint n_outputs;
  GraftRtTensor **outputs;      /* set by the kernel (or by graft_kernel_output) */
  GraftInferValue *inferred;    /* n_outputs, from the schema's infer */
  gpointer engine;              /* private: frame for subgraphs, pool, threads */
};

GraftRtTensor *graft_kernel_input (GraftKernelContext *ctx, guint i); /* NULL if absent */
/* Output i allocated with its inferred dtype and shape (which must be fixed). */
GraftRtTensor *graft_kernel_output (GraftKernelContext *ctx, guint i, GError **error);
GraftRtTensor *graft_kernel_alloc_output (GraftKernelContext *ctx, guint i, GraftDType dtype,
                                          int rank, const gint64 *dims, GError **error);
/* Takes ownership of tensor. */
void graft_kernel_set_output (GraftKernelContext *ctx, guint i, GraftRtTensor *tensor);
gboolean graft_kernel_wants_output (GraftKernelContext *ctx, guint i);
/* Input i if this node is its last user and nobody else holds it: the
 * caller owns the returned reference and may write into it (in-place
 * kernels). NULL otherwise; ctx->inputs[i] stays valid either way. */
GraftRtTensor *graft_kernel_steal_input (GraftKernelContext *ctx, guint i);
/* TRUE if the engine fused a following Relu/Clip into this node: the
 * kernel must clamp its output to [lo, hi]. With a residual (below) only
 * once the kernel has taken it. */
gboolean graft_kernel_get_fused_clamp (GraftKernelContext *ctx, float *lo, float *hi);
/* An activation fused by the engine into a Conv (onnx::Conv, an aten
 * convolution) or an aten::batch_norm whose output it alone reads
 * (EfficientNet's SiLU as Sigmoid and Mul or aten::silu_, MobileNetV3's
 * HardSwish, a TorchScript Relu after a batch_norm): the kernel must
 * apply it to its whole output, and the activation's nodes then forward
 * that output. ONNX Relu/Clip after a Conv go the clamp's way instead. */
typedef enum {
  GRAFT_FUSED_ACTIVATION_NONE,
  GRAFT_FUSED_ACTIVATION_SILU,         /* x·sigmoid(x), as graft_vm_affine's silu */
  GRAFT_FUSED_ACTIVATION_HARD_SWISH,   /* x·clamp(x/6 + 1/2, 0, 1), as onnx::HardSwish */
  GRAFT_FUSED_ACTIVATION_RELU,         /* max(x, 0), NaN kept */
} GraftFusedActivation;
GraftFusedActivation graft_kernel_get_fused_activation (GraftKernelContext *ctx);
/* TRUE if the engine folded the eval-mode aten::batch_norm that reads
 * this aten convolution's output into its weight and bias: the kernel
 * must convolve with *weight (float32, the weight's shape) and *bias
 * (float32, one per output channel) instead of its own, and the
 * batch_norm then forwards the output. Borrowed; FALSE while observing.
 * The weight's values are there only for graft_kernel_derived's make and
 * after graft_kernel_need_values: between runs the engine keeps them in
 * the derived form alone (a packed filter). */
gboolean graft_kernel_get_folded_weights (GraftKernelContext *ctx, GraftRtTensor **weight, GraftRtTensor **bias);
/* A kernel about to read the values of data, a folded weight
 * (graft_kernel_get_folded_weights) or a constant input of an op with
 * GRAFT_OP_ASKS_FOR_VALUES, other than through graft_kernel_derived
 * (which calls this before make) calls this first: they are computed or
 * read in again if the engine gave them back. Other data is left alone.
 * FALSE when they cannot be read again (the model file changed). */
gboolean graft_kernel_need_values (GraftKernelContext *ctx, gconstpointer data, GError **error);
/* TRUE if input i is given with its last two axes swapped: the engine
 * skipped the Transpose (of just those axes) that the node reads it
 * through, and the kernel must read it transposed. Only MatMul's B. */
gboolean graft_kernel_input_transposed (GraftKernelContext *ctx, guint i);
/* The other operand of the Add that is this Conv's only consumer, when it
 * is ready before the Conv runs; NULL otherwise. A kernel that adds it
 * into its output (before any fused clamp) calls graft_kernel_take_residual,
 * and the Add then forwards the Conv's output instead of running. */
GraftRtTensor *graft_kernel_get_residual (GraftKernelContext *ctx);
void graft_kernel_take_residual (GraftKernelContext *ctx);
/* One kind of data that kernels derive from a constant input (a packed
 * filter, say): a step keeps one such datum between runs, keyed by the
 * input's data pointer and tagged with its kind (a step whose path
 * changes with the SIMD level may have kept another kind). keep_first: a
 * kept datum that no longer fits stays kept, and the one made instead is
 * the caller's (by default the new one takes its place). holds_values:
 * the kernel that uses a kept datum reads nothing of the input's values
 * besides (a packed copy, unlike a plan of the work): the engine may then
 * give back the memory of an input it computed itself (a folded weight). */
typedef struct {
  const char *name;
  GDestroyNotify free;
  gboolean keep_first;
  gboolean holds_values;
} GraftDerivedKind;
/* Whether kept data still serves the call described by args (shapes,
 * layout, zero points, SIMD level). */
typedef gboolean (*GraftDerivedFits) (gconstpointer derived, gconstpointer args);
/* New derived data for args, or NULL. */
typedef gpointer (*GraftDerivedMake) (gconstpointer args);
/* The data of kind derived from input_data, the data of one of the
 * node's inputs: the step's kept datum when it is of kind, from that
 * input, and fits args (fits NULL: whenever); else make (args), kept on
 * the step when input_data is a constant input's and the runtime keeps
 * derived weights (graft_runtime_set_keep_derived_weights), or else handed
 * to the caller in *owned, to free with kind->free. NULL (and *owned NULL)
 * when make gives NULL. ctx may be NULL: nothing is kept. */
gpointer graft_kernel_derived (GraftKernelContext *ctx, const GraftDerivedKind *kind, gconstpointer input_data,
                               GraftDerivedFits fits, GraftDerivedMake make, gconstpointer args, gpointer *owned);
/* Whether data is the data of one of the node's constant inputs (an
 * initializer, not a fed or computed value, nor a buffer a run writes back). */
gboolean graft_kernel_input_data_is_constant (GraftKernelContext *ctx, gconstpointer data);
/* For a step that computes a pattern of nodes as one fused operator
 * (runtime-fusion.c), the match the planner made of that pattern: the
 * fusion-patterns.h struct of the operator (GraftPointwiseDepthwiseFusion
 * for graft::PointwiseDepthwise, …), as planned (a pattern cut short has
 * the nodes and inputs it was cut to). NULL for any other step. */
gconstpointer graft_kernel_get_pattern (GraftKernelContext *ctx);
/* The node's constant arguments by position ("arg<k>" attributes, NULL
 * where an input gives it), found once at plan time for aten:: and
 * prim:: steps (aten-args.h graft_aten_args); NULL when the engine has
 * no such table for ctx. */
GraftAttribute *const *graft_kernel_get_positional_attributes (GraftKernelContext *ctx, guint *n);
/* A float32 work buffer of at least nbytes from the runtime's pool (not zeroed). */
GraftRtTensor *graft_kernel_scratch (GraftKernelContext *ctx, gsize nbytes, GError **error);

/* Runs a subgraph of the current node with the given inputs (borrowed) and
 * returns its outputs (new array of owned tensors, graph output order).
 * Outer-scope values resolve through the running frames. */
GPtrArray *graft_kernel_run_subgraph (GraftKernelContext *ctx, GraftGraph *graph,
                                      GraftRtTensor **inputs, guint n_inputs, GError **error);

/* Calls func (index, data) for index in [0, n) on the worker pool. */
typedef void (*GraftParallelFunc) (gint64 index, gpointer data);
void graft_kernel_parallel_for (GraftKernelContext *ctx, gint64 n, GraftParallelFunc func, gpointer data);
guint graft_kernel_get_n_threads (GraftKernelContext *ctx);
/* The run's precision for products against constant weights (f32 when ctx
 * is NULL); a kernel that has no bf16 path computes in f32. */
GraftPrecision graft_kernel_get_precision (GraftKernelContext *ctx);
/* The module attributes the run has set (TorchScript's prim::SetAttr: RAFT
 * keeps its correlation pyramid on a submodule), by qualified name
 * ("raft.corr_block.corr_pyramid") → GraftRtTensor* (owned); made on first
 * use, gone with the run. NULL outside a run. */
GHashTable *graft_kernel_module_attributes (GraftKernelContext *ctx);
/* graft_runtime_set_observe_untaken_branches is on, and an observer set */
gboolean graft_kernel_observes_untaken_branches (GraftKernelContext *ctx);

/* Error helpers: messages are prefixed with the node by the engine. */
/* Set error and return FALSE. */
gboolean graft_kernel_fail (GError **error, const char *format, ...) G_GNUC_PRINTF (2, 3);
gboolean graft_kernel_unsupported (GError **error, const char *format, ...) G_GNUC_PRINTF (2, 3);

/* Numeric helpers shared by kernels */
/* Row-major strides of a shape (in elements). */
void graft_rt_strides (int rank, const gint64 *dims, gint64 *strides);

G_END_DECLS
