/* ExecuTorch programs (.pte) as a GraftModel.
 *
 * A .pte is a flatbuffer of ExecuTorch's schema/program.fbs (file
 * identifier "ET" + two digits, "ET12" since executorch 0.4), optionally
 * with an extended header ("eh00" at byte 8) that places data segments
 * after the flatbuffer: constant tensors, delegate payloads, named data.
 *
 * The first execution plan becomes the graph (the others are named in the
 * model's metadata, "execution plans"). Each KernelCall is a node; its
 * operator, an out variant ("aten::add.out"), becomes the functional op
 * the rest of Graft knows (aten::add), its out arguments the node's
 * results, and constant Int / Double / Bool / list values become "argN"
 * attributes as the aten kernels read them (runtime/kernels/aten-args.h);
 * the file's own operator name stays in the node metadata
 * GRAFT_EXECUTORCH_OPERATOR_KEY. Constant tensors are initializers whose
 * data are slices of the file (the inline constant_buffer of older files
 * or the constant segment), named by their fully qualified name when the
 * program records one. A DelegateCall is one node "executorch_delegate::
 * <backend id>" with the payload's size and compile specs as attributes. */
#pragma once

#include <gio/gio.h>
#include "ir/model.h"

G_BEGIN_DECLS

/* Node metadata: the operator as the program names it,
 * "aten::convolution.out". */
#define GRAFT_EXECUTORCH_OPERATOR_KEY "executorch_operator"
/* Domain of delegate call nodes. */
#define GRAFT_EXECUTORCH_DELEGATE_DOMAIN "executorch_delegate"

GraftModel *graft_executorch_program_load (const char *path, GCancellable *cancellable, GError **error);

G_END_DECLS
