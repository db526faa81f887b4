/* Small structural changes to a graph that keep its bookkeeping (consumer
 * lists, producers, node indices, groups, the name table) consistent. */
#pragma once

#include "ir/graph.h"

G_BEGIN_DECLS

/* Replaces input slot i of node (value may be NULL). */
void graft_node_set_input (GraftNode *node, guint i, GraftValue *value);

/* Every use of old (node inputs of this graph and its subgraphs, graph
 * outputs) now uses replacement. */
void graft_graph_replace_uses (GraftGraph *graph, GraftValue *old, GraftValue *replacement);

/* Removes and frees node; its outputs stay as values without producer. */
void graft_graph_remove_node (GraftGraph *graph, GraftNode *node);
/* Moves node (of graph) to just before before, renumbering the nodes. */
void graft_graph_move_node_before (GraftGraph *graph, GraftNode *node, GraftNode *before);

/* Removes and frees every node in doomed (GraftNode* set) at once, in
 * time linear in the graph. */
void graft_graph_remove_nodes (GraftGraph *graph, GHashTable *doomed);

/* Removes doomed like graft_graph_remove_nodes(), except that the values
 * in kept (outputs of doomed nodes; NULL entries are skipped) stay, without
 * producer, for a new node to produce. */
void graft_graph_remove_nodes_keeping_values (GraftGraph *graph, GHashTable *doomed, GPtrArray *kept);

/* Moves node, in graph's root group, into group (nothing when group is
 * NULL or the root group). Group counts are the caller's to update. */
void graft_graph_move_node_to_group (GraftGraph *graph, GraftNode *node, GraftGroup *group);

/* Removes and frees a value that nothing uses any more. */
void graft_graph_remove_value (GraftGraph *graph, GraftValue *value);

/* Drops nodes whose outputs reach no graph output, then values (and
 * initializers) that are neither used nor graph inputs/outputs. Returns
 * the number of nodes removed. */
guint graft_graph_prune (GraftGraph *graph);

/* A new int64 initializer (rank 1, or 0 when scalar) named after hint. */
GraftValue *graft_graph_add_int64_constant (GraftGraph *graph, const char *hint,
                                            const gint64 *values, guint n, gboolean scalar);

/* Removes node, whose first output then is its input `input` (consumers
 * of the output read the input instead). A graph output keeps its name:
 * the input's producer writes it then. FALSE (nothing changed) when that
 * is impossible: the output is a graph output and the input is a graph
 * input, an initializer, another graph output or an outer-scope value. */
gboolean graft_graph_bypass (GraftGraph *graph, GraftNode *node, guint input);
/* The same, but the input's producer always writes node's first output,
 * which keeps its name and declared type (the input's value goes); FALSE
 * (nothing changed) when the input is no output of a node of graph, or is
 * a graph output. */
gboolean graft_graph_bypass_into_output (GraftGraph *graph, GraftNode *node, guint input);

/* Finds a node of graph by name; NULL if none or if the name is ambiguous. */
GraftNode *graft_graph_find_node (GraftGraph *graph, const char *name);

G_END_DECLS
