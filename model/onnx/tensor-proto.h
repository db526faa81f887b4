/* ONNX TensorProto / SparseTensorProto → GraftTensor in Graft's raw
 * little-endian layout. */
#pragma once

#include "ir/tensor.h"
#include "onnx.pb-c.h"
#include "onnx/read-context.h"

G_BEGIN_DECLS

/* where names the tensor's place for messages ("initializer 'w'",
 * "node 'Constant_0' attribute 'value'"). */
GraftTensor *graft_onnx_tensor_from_proto (GraftOnnxReadContext *context,
                                           const Onnx__TensorProto *proto,
                                           const char *where,
                                           GError **error);

/* Densifies a sparse tensor (values scattered at indices into zeros). */
GraftTensor *graft_onnx_tensor_from_sparse_proto (GraftOnnxReadContext *context,
                                                  const Onnx__SparseTensorProto *proto,
                                                  const char *where,
                                                  GError **error);

G_END_DECLS
