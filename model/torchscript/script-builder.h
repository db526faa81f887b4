/* Builds the graph torch.jit.load(f).inlined_graph shows from a
 * TorchScript archive: starts at the root module's forward, inlines every
 * method and function call into groups named by module path, turns
 * torch.X calls into aten::X nodes and keeps control flow as prim::If /
 * prim::Loop nodes whose blocks are subgraphs. */
#pragma once

#include <gio/gio.h>
#include "ir/model.h"
#include "torchscript/torch-archive.h"
#include "torchscript/pickle.h"

G_BEGIN_DECLS

/* Limits against hostile code: inlining depth and total nodes. */
#define GRAFT_SCRIPT_MAX_CALL_DEPTH 64
#define GRAFT_SCRIPT_MAX_NODES 4000000

/* Fills model (format TORCHSCRIPT) from the archive: graph, parameters as
 * initializers and model tensors. */
gboolean graft_script_build (GraftTorchArchive *archive, GraftModel *model,
                             GCancellable *cancellable, GError **error);

/* "__torch__.torch.nn.modules.conv.___torch_mangle_127.Conv2d" →
 * "torch.nn.modules.conv.Conv2d" */
char *graft_script_demangle_class (const char *qualified_name);

/* A tensor from the pickle, with its data sliced from the archive record
 * <dir>/<storage key> (no copy when contiguous). */
GraftTensor *graft_script_make_tensor (GraftTorchArchive *archive, const char *dir,
                                       GraftPickleValue *value, const char *name, GError **error);

G_END_DECLS
