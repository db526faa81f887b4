/* Static shape and dtype inference over a model's graph and its subgraphs.
 *
 * Returns a GraftInference: per value (subgraph values too), the inferred
 * dtype and shape, and the known integer contents of shape vectors. The
 * model is only read, so that lint, a layout and a run can look at one
 * model at the same time; probes with other input shapes pass them in
 * GraftShapeInferenceOptions.input_shapes instead of editing the inputs.
 * Inference follows symbolic dims
 * through the graph: an input of shape batch×3×224×224 gives outputs like
 * batch×1000, and Reshape(-1) of batch×512×1×1 gives batch×512.
 *
 * Per node, in this order: the driver's own rules for the ops that carry
 * shape vectors as data (Shape, Gather, Unsqueeze, Squeeze, Concat, Cast,
 * Identity, Constant, Reshape, Expand, ConstantOfShape, Tile, and
 * Add/Sub/Mul/Div/Mod and Slice of integer shape data, Range(0, n, 1)), which
 * track symbolic elements the registry cannot see; then the runtime
 * registry's inference function for the op and opset, which follows
 * symbolic dims too. A node neither knows leaves its outputs
 * without an inferred type, and so do nodes downstream of it whose rules
 * need the missing information. Subgraphs (If/Loop/Scan bodies) are
 * inferred too, from their declared inputs, before the node that owns them.
 */
#pragma once

#include "ir/model.h"

G_BEGIN_DECLS

/* The result of a run: immutable once returned, so it may be read from
 * any thread. Its keys are the values of the graph as it was when
 * inferred; after an edit that replaces the graph, infer again. */
typedef struct _GraftInference GraftInference;

GraftInference *graft_inference_ref (GraftInference *inference);
void graft_inference_unref (GraftInference *inference);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftInference, graft_inference_unref)

/* TRUE if inference gave value a type; dtype and shape (valid as long as
 * inference) may be NULL. inference may be NULL (nothing inferred). */
gboolean graft_inference_lookup (GraftInference *inference, const GraftValue *value,
                                 GraftDType *dtype, const GraftShape **shape);
/* The inferred shape, or NULL. */
const GraftShape *graft_inference_get_shape (GraftInference *inference, const GraftValue *value);
/* The inferred dtype, or GRAFT_DTYPE_UNDEFINED. */
GraftDType graft_inference_get_dtype (GraftInference *inference, const GraftValue *value);
/* The known integer contents of a value (shape vectors, small int
 * constants), elements possibly symbolic; NULL if unknown. */
GArray *graft_inference_get_data (GraftInference *inference, const GraftValue *value);

typedef struct {
  guint n_nodes;          /* main-graph nodes visited */
  guint n_inferred;       /* values that received an inferred type */
  guint n_unknown;        /* node outputs left without one */
  GPtrArray *problems;    /* char*: "node '/Reshape' (onnx::Reshape): ..." */
} GraftShapeInferenceReport;

/* report may be NULL. Never fails: problems are collected in the report. */
GraftInference *graft_shape_inference_run (GraftModel *model, GraftShapeInferenceReport *report) G_GNUC_WARN_UNUSED_RESULT;
void graft_shape_inference_report_clear (GraftShapeInferenceReport *report);

typedef struct {
  guint element;
  GraftDim dim;
} GraftShapeOverride;

/* Called for each main-graph node just before it is inferred (its inputs
 * are by then, in inference, the run's result so far), so that it may add overrides[node] that take effect at
 * once: a chain of findings that each depend on the previous one needs one
 * run, not one run per link. */
typedef void (*GraftShapeInferenceHook) (GraftNode *node, GraftInference *inference, GHashTable *overrides,
                                         gpointer user_data);

typedef struct {
  GraftShapeInferenceReport *report;   /* may be NULL */
  /* GraftValue* → GraftShape*: shapes that graph inputs are inferred
   * with instead of their declared ones (the baked-shape probe). */
  GHashTable *input_shapes;
  /* The dtype of a graph input given a shape in input_shapes that declares
   * none (TorchScript inputs are untyped Tensors); UNDEFINED leaves it so. */
  GraftDType given_input_dtype;
  /* GraftNode* → GArray of GraftShapeOverride: after node N is inferred,
   * these dims of its first output are replaced. The baked-shape search
   * uses it to see past a constant it has already found, as if that
   * constant were repaired. */
  GHashTable *overrides;
  GraftShapeInferenceHook hook;        /* needs overrides */
  gpointer hook_data;
  /* A finished run over the same graph, without overrides, whose input
   * shapes differ from this run's only where input_shapes says (a probe of
   * one dim over the check's plain inference): the run infers only the
   * nodes whose inputs read differently from base, and holds only what
   * differs, reading the rest from base (which it keeps). Ignored with a
   * report, or when base is itself over a base. May be NULL. */
  GraftInference *base;
} GraftShapeInferenceOptions;

/* options may be NULL. */
GraftInference *graft_shape_inference_run_full (GraftModel *model, const GraftShapeInferenceOptions *options)
  G_GNUC_WARN_UNUSED_RESULT;

/* Inference one node at a time, in graph order, for an editor that
 * changes the graph as it goes and needs, at node N, exactly what a whole
 * run would show for N (an edit that checks each of 500 repairs otherwise
 * reruns the whole graph 500 times). The session keeps a prefix of
 * graph->nodes inferred for the graph as it is now; the caller says what
 * it changed:
 *  - rewind(node): node (its inputs, attributes, or a node newly moved to
 *    its position) changed, so it and everything after it is stale;
 *  - node_removed(index): the node that was at index was removed.
 * Initializers added meanwhile are seeded when a node first reads them.
 * Only for a main graph whose nodes are in topological order and own no
 * subgraphs (where graph order is as good as the run's own order):
 * returns NULL otherwise, and the caller runs the whole inference. Runs
 * without overrides and without a report. The session's result is
 * graft_shape_inference_session_get_inference(), current up to the last
 * node inferred. */
typedef struct _GraftShapeInferenceSession GraftShapeInferenceSession;
GraftShapeInferenceSession *graft_shape_inference_session_new (GraftModel *model);
/* Infers what is stale up to and including node (of the session's graph). */
void graft_shape_inference_session_infer_through (GraftShapeInferenceSession *session, GraftNode *node);
void graft_shape_inference_session_rewind (GraftShapeInferenceSession *session, GraftNode *node);
void graft_shape_inference_session_node_removed (GraftShapeInferenceSession *session, guint index);
void graft_shape_inference_session_free (GraftShapeInferenceSession *session);
/* Borrowed; changes as the session infers. */
GraftInference *graft_shape_inference_session_get_inference (GraftShapeInferenceSession *session);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftShapeInferenceSession, graft_shape_inference_session_free)

/* Declared shape if the file has one for every dim, else the inferred one
 * (inference may be NULL), else the partly known declared one, else NULL. */
const GraftShape *graft_value_get_best_shape (const GraftValue *value, GraftInference *inference);

/* Shapes from fixed shapes a user gives for the graph inputs, by name
 * ("x" → 1×3×224×224; TorchScript files declare none). An input without a
 * declared dtype is taken as float32. Static inference first; the values
 * it leaves without a full shape (aten operators have kernels but no shape
 * rules) take the shapes of one run of the main graph on random data of
 * those shapes (given-shapes.c; a model that does not run keeps the static
 * ones). Fails, naming the inputs there are, when a name is not a tensor
 * input of the main graph, when a shape has a dim without a size, or when
 * its rank differs from the declared one. */
GraftInference *graft_shape_inference_run_given (GraftModel *model, GHashTable *shapes_by_name,
                                                 GError **error) G_GNUC_WARN_UNUSED_RESULT;

G_END_DECLS
