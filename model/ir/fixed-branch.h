/* If branches a module's own attributes decide: `if self.training:` of
 * BatchNorm and Dropout in a module saved in eval mode, or stochastic
 * depth's `if p < 0.0 or p > 1.0: raise` on its own p, always takes the
 * same branch, so the other one is dead code. Lint leaves such Ifs out of
 * its control-flow notes and its op checks, the viewer greys their dead
 * branch, and the runtime neither plans it nor asks kernels for its ops
 * (stochastic depth's aten::bernoulli_ sits only in `if self.training`). */
#pragma once

#include "ir/graph.h"

G_BEGIN_DECLS

/* The branch a prim::If takes in every run (its then or else graph), or
 * NULL when the condition depends on the input (or node is no prim::If).
 * Fixed conditions are constants, plain module attributes, comparisons
 * of such numbers or strings (`in` a constant list too), their negations
 * and what an If on those yields. */
GraftGraph *graft_if_get_fixed_branch (GraftNode *node);

/* The subgraphs of node that can run: all of graft_node_get_subgraphs()
 * except the branch a fixed If never takes. */
GPtrArray *graft_node_get_live_subgraphs (GraftNode *node);

/* Whether node reads a number out of a tensor's data (aten::Bool(t),
 * t.item(), int(t)): what such a number decides follows the input's
 * values, not its sizes. */
gboolean graft_node_reads_tensor_data (GraftNode *node);

/* Whether node, or a node in its subgraphs, changes a tensor, list, dict
 * or module attribute it is given (append, d[k] = v, self.x = v, add_)
 * or raises: what TorchScript code does besides computing values. */
gboolean graft_node_changes_state (GraftNode *node);
/* Whether a node of graph changes state (graft_node_changes_state). */
gboolean graft_graph_changes_state (GraftGraph *graph);

G_END_DECLS
