/* Static shape and dtype inference over a model's graph and its subgraphs.
 *
 * Fills value->has_inferred / inferred_dtype / inferred_shape (the
 * declared value->dtype/shape are never touched), following symbolic dims
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

typedef struct {
  guint n_nodes;          /* main-graph nodes visited */
  guint n_inferred;       /* values that received an inferred type */
  guint n_unknown;        /* node outputs left without one */
  GPtrArray *problems;    /* char*: "node '/Reshape' (onnx::Reshape): ..." */
} GraftShapeInferenceReport;

/* report may be NULL. Never fails: problems are collected in the report. */
void graft_shape_inference_run (GraftModel *model, GraftShapeInferenceReport *report);
void graft_shape_inference_report_clear (GraftShapeInferenceReport *report);

typedef struct {
  guint element;
  GraftDim dim;
} GraftShapeOverride;

/* As graft_shape_inference_run(), but after node N is inferred, the dims
 * listed in overrides[N] (GArray of GraftShapeOverride) of its first
 * output are replaced. The baked-shape search uses it to see past a
 * constant it has already found, as if that constant were repaired. */
void graft_shape_inference_run_with_overrides (GraftModel *model, GHashTable *overrides);

/* As graft_shape_inference_run_with_overrides(), and hook is called for
 * each main-graph node just before it is inferred (its inputs are by
 * then), so it may add overrides[node] that take effect at once: a chain
 * of findings that each depend on the previous one needs one run, not one
 * run per link. */
typedef void (*GraftShapeInferenceHook) (GraftNode *node, GHashTable *overrides, gpointer user_data);
void graft_shape_inference_run_with_hook (GraftModel *model, GHashTable *overrides,
                                          GraftShapeInferenceHook hook, gpointer user_data);

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
 * without overrides and without a report; does not publish
 * graft_shape_inference_get_data(). */
typedef struct _GraftShapeInferenceSession GraftShapeInferenceSession;
GraftShapeInferenceSession *graft_shape_inference_session_new (GraftModel *model);
/* Infers what is stale up to and including node (of the session's graph). */
void graft_shape_inference_session_infer_through (GraftShapeInferenceSession *session, GraftNode *node);
void graft_shape_inference_session_rewind (GraftShapeInferenceSession *session, GraftNode *node);
void graft_shape_inference_session_node_removed (GraftShapeInferenceSession *session, guint index);
void graft_shape_inference_session_free (GraftShapeInferenceSession *session);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftShapeInferenceSession, graft_shape_inference_session_free)

/* The known integer contents of a value after inference (shape vectors,
 * small int constants), elements possibly symbolic; NULL if unknown.
 * Valid until the next run on the same model. */
GArray *graft_shape_inference_get_data (GraftModel *model, GraftValue *value);

/* Declared shape if the file has one for every dim, else the inferred one,
 * else NULL. */
const GraftShape *graft_value_get_best_shape (const GraftValue *value);

G_END_DECLS
