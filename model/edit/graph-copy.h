/* Deep copies of graphs: the snapshots behind undo. */
#pragma once

#include "ir/graph.h"

G_BEGIN_DECLS

/* Copies graph with its nodes, values, attributes, subgraphs and group
 * tree. Tensors are shared (they are never modified in place). Values of
 * enclosing graphs that graph's nodes refer to are looked up in
 * outer_map (old GraftValue* → new), or kept as they are when absent. */
GraftGraph *graft_graph_copy (GraftGraph *graph, GHashTable *outer_map);

GraftAttribute *graft_attribute_copy (const GraftAttribute *attribute, GHashTable *value_map);

G_END_DECLS
