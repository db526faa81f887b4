/* Module groups from the node metadata of torch's dynamo ONNX exporter.
 *
 * torch.onnx.export(..., dynamo=True) names nodes "node_Conv_12", without
 * the "/layer1/layer1.0/conv1/Conv" scope of the TorchScript-based
 * exporter, but records on each node (NodeProto.metadata_props):
 *   pkg.torch.onnx.name_scopes      "['', 'layer1', 'layer1.0', 'layer1.0.conv1', 'conv2d_1']"
 *   pkg.torch.onnx.class_hierarchy  "['vision_models.ResNet', '...Sequential', '...BasicBlock', '...Conv2d', 'aten.conv2d.default']"
 * (Python list literals: the root module, each module down to the node,
 * then the FX node itself), plus "namespace", "pkg.torch.onnx.fx_node" and
 * "pkg.torch.onnx.stack_trace", which grouping does not need.
 *
 * A walk over a graph's nodes in file order turns these into the groups
 * the TorchScript-based export of the same model shows. */
#pragma once

#include <glib.h>
#include "ir/group.h"

G_BEGIN_DECLS

#define GRAFT_TORCH_NAME_SCOPES_KEY "pkg.torch.onnx.name_scopes"
#define GRAFT_TORCH_CLASS_HIERARCHY_KEY "pkg.torch.onnx.class_hierarchy"
#define GRAFT_ONNXSCRIPT_RULE_NAME_KEY "pkg.onnxscript.rewriter.rule_name"

typedef struct _GraftTorchScopeWalk GraftTorchScopeWalk;

GraftTorchScopeWalk *graft_torch_scope_walk_new (GraftGroup *root);
void graft_torch_scope_walk_free (GraftTorchScopeWalk *walk);

/* The group node belongs in, creating it as needed, or NULL when its
 * metadata names no module or cannot be read (the caller falls back to
 * name-based groups). Nodes must come in file order: a module that is
 * called again within the same call of its parent gets a group of its own,
 * "relu_1", as the TorchScript-based exporter names it. */
GraftGroup *graft_torch_scope_walk_place (GraftTorchScopeWalk *walk, GraftNode *node);

/* The strings of a Python list literal of str ("['', 'a.b', \"c'd\"]"), or
 * NULL when text is not one. */
GPtrArray *graft_torch_parse_string_list (const char *text);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftTorchScopeWalk, graft_torch_scope_walk_free)

G_END_DECLS
