/* Constants and shape values read far apart, drawn at each reader.
 *
 * An exporter computes a constant once (TorchScript-based ONNX exports put
 * `/layers.0/self_attn/Constant` in the first layer) and every layer reads
 * it; drawn as edges, such a value is a fan of long edges across the whole
 * graph, and the layers stop looking alike. Like weights, it is listed in
 * each reader's box instead ("indices = 0 · shared ×24"), and the nodes that
 * only compute it from constants are not drawn. The window's context menu
 * walks from one reader to the next.
 *
 * Every value computed from constants alone (initializers, ONNX Constant
 * nodes, ops on them) is listed so, as weights are: dot ranks a source at
 * the top of its box, so even one reader's edge may run the box's height
 * (GPT-2's ln_f bias, 42 ranks). A value computed from constants and
 * tensor shapes (Shape, Size) is listed when its readers lie in more than
 * one of the layout's boxes; the node computing it keeps its box and its
 * input edge, and an undrawn edge keeps it before its first reader. The
 * marker "shared ×N" says when more than one node reads it. Values read
 * inside a subgraph, graph outputs and TorchScript's prim:: nodes (the
 * attribute fold's) are drawn as before.
 *
 * This only changes what is drawn: the model is not touched. */
#pragma once

#include "ir/graph.h"

G_BEGIN_DECLS

typedef struct _GraftSharedValues GraftSharedValues;

/* node_groups maps each node of graph to the box it is laid out in (any
 * pointer; nodes mapped to the same pointer are together). */
GraftSharedValues *graft_shared_values_new (GraftGraph *graph, GHashTable *node_groups);
void graft_shared_values_free (GraftSharedValues *self);

gboolean graft_shared_values_is_shared (const GraftSharedValues *self, const GraftValue *value);
gboolean graft_shared_values_is_hidden (const GraftSharedValues *self, const GraftNode *node);

/* How many distinct nodes read value (a node reading it twice counts once). */
guint graft_shared_values_count_readers (const GraftValue *value);

/* The reader of value after current in the value's reader list (the first
 * if current reads it not; wrapping round), and its 1-based position
 * among the distinct readers; NULL if value has no reader. */
GraftNode *graft_shared_values_next_reader (const GraftValue *value, const GraftNode *current, guint *position);

/* "indices = 0 · shared ×24" for each input of node that is shared, in
 * input order, appended to lines (char*, owned by lines); inputs from a
 * folded module attribute (layout/attribute-fold.h) are skipped when
 * skip_folded, as the fold lists them already. */
void graft_shared_values_add_lines (const GraftSharedValues *self, GraftNode *node, gboolean skip_folded,
                                    GPtrArray *lines);

G_END_DECLS
