/* The structural rules a graph must keep for anything to be computed from
 * it, as onnx.checker applies them: one producer per value (SSA), no
 * cycles, every node input defined (a graph input, an initializer, a
 * node output, or a value of an enclosing graph), and the attribute ranges
 * kernels divide or loop by (kernel_shape, strides, dilations > 0, pads
 * ≥ 0). Lint reports every problem (rule "invalid-graph"); the runtime
 * refuses a model with any. Subgraphs are checked too. */
#pragma once

#include "ir/graph.h"

G_BEGIN_DECLS

/* Called once per problem; node and value may be NULL. */
typedef void (*GraftGraphProblemFunc) (GraftNode *node, GraftValue *value, const char *message, gpointer user_data);

/* Calls report for every problem of graph and its subgraphs; returns how many. */
guint graft_graph_check_structure (GraftGraph *graph, GraftGraphProblemFunc report, gpointer user_data);

/* FALSE with the first problem (and the count) as a GRAFT_MODEL_ERROR_MALFORMED error. */
gboolean graft_graph_validate_structure (GraftGraph *graph, GError **error);

G_END_DECLS
