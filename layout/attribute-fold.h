/* TorchScript's module attributes and materialized constants as arguments
 * of the nodes that read them, as Netron shows them.
 *
 * A scripted module reads its non-tensor attributes through prim::GetAttr
 * nodes (self.training, self.eps, self.num_heads) and constants that must be
 * values through prim::Constant nodes: boxes that say little and multiply
 * edges. When folded, such a node is not drawn and each node reading it
 * lists it with its other attributes: "training = False". Weights are
 * initializers, listed in the reading box already ("weight: float32[64,3,7,7]").
 *
 * This only changes what is drawn: the model keeps its nodes, and the
 * view's option (GraftLayoutOptions.show_module_attributes, the "Module
 * Attribute Nodes" toggle, graft-cli render --attribute-nodes) brings the
 * boxes back. */
#pragma once

#include "ir/graph.h"

G_BEGIN_DECLS

/* TRUE if node is a prim::GetAttr or prim::Constant without inputs whose
 * every output is read, only by nodes of its own graph, and is no graph
 * output: a box the view can fold into its readers. */
gboolean graft_attribute_fold_applies (const GraftNode *node);

/* TRUE if node has outputs, each read, only by nodes of node's own graph,
 * and none a graph output: a box whose every reader can list instead. */
gboolean graft_node_outputs_read_in_own_graph (const GraftNode *node);

/* TRUE if input k of node comes from a node that folds. */
gboolean graft_attribute_fold_is_folded_input (const GraftNode *node, guint input);

/* "training = False" for each input of node that comes from a folded
 * node, in input order, appended to lines (char*, owned by lines). */
void graft_attribute_fold_add_lines (const GraftNode *node, GPtrArray *lines);

G_END_DECLS
