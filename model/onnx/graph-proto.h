/* ONNX GraphProto / NodeProto / AttributeProto / FunctionProto → Graft IR. */
#pragma once

#include "ir/model.h"
#include "onnx.pb-c.h"
#include "onnx/read-context.h"

G_BEGIN_DECLS

/* parent_node is the node whose attribute holds this graph (NULL for the
 * main graph): the new graph resolves outer-scope names through it. */
GraftGraph *graft_onnx_graph_from_proto (GraftOnnxReadContext *context,
                                         const Onnx__GraphProto *proto,
                                         GraftNode *parent_node,
                                         GError **error);

GraftFunction *graft_onnx_function_from_proto (GraftOnnxReadContext *context,
                                               const Onnx__FunctionProto *proto,
                                               GError **error);

G_END_DECLS
