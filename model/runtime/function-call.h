/* ONNX model-local functions (FunctionProto) for the runtime: a call is
 * planned as its own copy of the function body, with the caller's
 * attributes substituted for the body's attribute references. */
#pragma once

#include "ir/model.h"

G_BEGIN_DECLS

/* The local function that node calls, or NULL. */
GraftFunction *graft_function_for_call (GraftModel *model, GraftNode *call);

/* A fresh graph (free with graft_graph_free) equal to function's body,
 * where every attribute with a ref_attr_name takes the value of the
 * call's attribute of that name (and is left out when the call has none,
 * as the ONNX spec says). Subgraphs are copied too. */
GraftGraph *graft_function_instantiate (GraftFunction *function, GraftNode *call, GError **error);

G_END_DECLS
