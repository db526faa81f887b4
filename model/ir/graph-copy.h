/* Deep copies of graphs: the snapshots behind undo. */
#pragma once

#include "ir/model.h"

G_BEGIN_DECLS

/* Copies graph with its nodes, values, attributes, subgraphs and group
 * tree. Tensors are shared (they are never modified in place). Values of
 * enclosing graphs that graph's nodes refer to are looked up in
 * outer_map (old GraftValue* → new), or kept as they are when absent. */
GraftGraph *graft_graph_copy (GraftGraph *graph, GHashTable *outer_map);

GraftAttribute *graft_attribute_copy (const GraftAttribute *attribute, GHashTable *value_map);

/* A model with a copy of model's graph and local functions, its format,
 * IR version and opsets: something to probe or run without touching the
 * model itself. Tensors are shared, so the copy must not outlive model
 * (whose mapped file they may point into). */
GraftModel *graft_model_copy (GraftModel *model);

G_END_DECLS
