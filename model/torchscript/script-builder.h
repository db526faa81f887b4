/* Builds the graph torch.jit.load(f).inlined_graph shows from a
 * TorchScript archive: starts at the root module's forward, inlines every
 * method and function call into groups named by module path, turns
 * torch.X calls into aten::X nodes and keeps control flow as prim::If /
 * prim::Loop nodes whose blocks are subgraphs.
 *
 * Node conventions (for layout, analysis and the runtime):
 * - Arguments keep their call order. A graph value is a node input; a
 *   constant argument is folded into an attribute named after its keyword
 *   ("dtype", "alpha") or "argN" for position N of the call (N counts all
 *   arguments, inputs and attributes together). Constant lists become INTS /
 *   FLOATS / STRINGS attributes; None is GRAFT_ATTR_NONE, bools GRAFT_ATTR_BOOL.
 * - prim::If: condition as input 0 (or attribute "cond"), subgraph
 *   attributes "then_branch" and "else_branch"; output k is output k of
 *   both branches.
 * - prim::Loop: "max_trip_count" and "cond" (input or attribute, in that
 *   order), then the loop-carried initial values; subgraph "body" with
 *   inputs (trip counter, carried…) and outputs (next condition, carried…);
 *   node output k is carried value k.
 * - Parameters and buffers are initializers of the root graph named by
 *   module path ("layer1.0.conv1.weight"); tensor constants of
 *   constants.pkl are named "CONSTANTS.cN". Other module attributes are
 *   prim::GetAttr nodes whose "name" attribute is the attribute's path.
 * - Nodes of an inlined module method sit in the group of its module path,
 *   in the group tree of the (sub)graph that holds them; source_range is
 *   "code/…py:LINE" of the saved code. */
#pragma once

#include <gio/gio.h>
#include "ir/model.h"
#include "pytorch/torch-archive.h"
#include "pytorch/pickle.h"

G_BEGIN_DECLS

/* Limits against hostile code: inlining depth and total nodes; total work
 * (statements run and calls inlined, which a call tree that doubles at
 * every level exhausts without adding nodes; vit_b_16 scripted takes 11k,
 * ~4 µs each); expression evaluation
 * nested across inlined calls; submodule visits (a module reached twice at
 * every level of the tree); length of a module path (self.a.a.a…). */
#define GRAFT_SCRIPT_MAX_CALL_DEPTH 64
#define GRAFT_SCRIPT_MAX_NODES 4000000
#define GRAFT_SCRIPT_MAX_WORK 1000000
#define GRAFT_SCRIPT_MAX_EVAL_DEPTH 2000
#define GRAFT_SCRIPT_MAX_MODULE_VISITS 65536
#define GRAFT_SCRIPT_MAX_PATH_LENGTH 1024

/* The kept record (graft_model_get_kept_record) listing the module paths
 * of the archive's buffers, one a line: TorchScript tells parameters and
 * buffers apart only in each class's __buffers__, which torch.export's
 * signature needs. */
#define GRAFT_TORCHSCRIPT_KEPT_BUFFERS "torchscript/buffers"

/* The kept record saying how forward's result nests, the graph's outputs
 * being its leaves in order: T an output, N a None that is none, (…) a
 * tuple. "T" is one tensor, "(T)" a tuple of one (a traced Hugging Face
 * model's (logits,)). */
#define GRAFT_TORCHSCRIPT_KEPT_RESULT "torchscript/result"

/* Fills model (format TORCHSCRIPT) from the archive: graph, parameters as
 * initializers and model tensors. */
gboolean graft_script_build (GraftTorchArchive *archive, GraftModel *model,
                             GCancellable *cancellable, GError **error);

/* "__torch__.torch.nn.modules.conv.___torch_mangle_127.Conv2d" →
 * "torch.nn.modules.conv.Conv2d" */
char *graft_script_demangle_class (const char *qualified_name);

/* What torch.jit.load reads: the graph of the archive's root forward
 * (a TorchScript archive: data.pkl and code/). */
GraftModel *graft_torchscript_load (GraftTorchArchive *archive, const char *path, GCancellable *cancellable,
                                    GError **error);

G_END_DECLS
