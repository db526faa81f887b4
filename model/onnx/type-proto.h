/* ONNX TypeProto → Graft value types. */
#pragma once

#include "ir/graph.h"
#include "onnx.pb-c.h"

G_BEGIN_DECLS

/* ONNX's own spelling of an element type: "float", "int64", "double"... */
const char *graft_onnx_elem_type_name (int elem_type);

/* "tensor(float)", "seq(tensor(int64))", "map(string,tensor(float))",
 * "optional(seq(tensor(float)))", "sparse_tensor(float)"; "?" when unset. */
char *graft_onnx_type_to_string (const Onnx__TypeProto *type);

/* The element type as a GraftDType; GRAFT_DTYPE_UNDEFINED for anything
 * that is not an ONNX tensor element type. */
GraftDType graft_onnx_dtype_from_elem_type (int elem_type);

/* Sets value's kind, dtype, shape and (for non-tensor kinds) type_string.
 * Sequences and optionals describe their innermost tensor in dtype/shape. */
void graft_onnx_apply_type (GraftValue *value, const Onnx__TypeProto *type);

G_END_DECLS
