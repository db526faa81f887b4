/* Orders and classes of a main graph's nodes that analyses share: the
 * topological order, and the nodes that compute constants. */
#pragma once

#include "ir/graph.h"

G_BEGIN_DECLS

/* graph's own nodes (not its subgraphs'), each after the producers of its
 * inputs (Kahn's order, ties in file order): ONNX files are sorted,
 * lowered or edited graphs need not be. GraftNode*, borrowed. */
GPtrArray *graft_graph_topological_order (GraftGraph *graph);

/* The nodes of order whose inputs are all initializers or outputs of such
 * nodes (Constant, ConstantOfShape of a constant, an exporter's Identity
 * of a shared weight), and that own no subgraph: they compute the same
 * tensor on every run. A set of GraftNode*. */
GHashTable *graft_graph_find_constant_nodes (GPtrArray *order);

G_END_DECLS
