/* ONNX fields that Graft's IR does not interpret, carried from the reader
 * to the writer as protobuf wire bytes.
 *
 * A lossless save must give back what Graft only passes through:
 * training_info, device configurations, quantization annotations,
 * metadata_props on graphs and value_info, a function's attribute_proto /
 * value_info / overload, a tensor's segment and metadata, fields of a newer
 * onnx.proto that this build does not know (protobuf unknown fields), and
 * whole messages the IR keeps only in a reduced form (a TypeProto's
 * shapes and denotations, a sparse tensor's own indices). The reader packs
 * them into a GBytes stored beside the IR object they belong to; the writer
 * unpacks them into the message it builds. What they name (initializers of
 * training_info bindings, tensors of a quantization annotation) is not
 * followed by graph edits: an edit that renames or removes such a value
 * leaves the kept field pointing at the old name, as onnx's own tools do.
 */
#pragma once

#include "onnx/read-context.h"
#include "onnx/writer-proto.h"

G_BEGIN_DECLS

/* The fields of message (a ModelProto, GraphProto, NodeProto,
 * ValueInfoProto, FunctionProto or TensorProto) that the IR has no place
 * for, packed; NULL when the message sets none. */
GBytes *graft_onnx_keep_fields (const GraftOnnxReadContext *context, const ProtobufCMessage *message);

/* The whole message packed (raw_data that the reader's wire pass moved out
 * is put back in). */
GBytes *graft_onnx_keep_message (const GraftOnnxReadContext *context, const ProtobufCMessage *message);

/* Sets the fields packed in kept (by graft_onnx_keep_fields() from a
 * message of the same type) on message. NULL kept does nothing. */
gboolean graft_onnx_restore_kept_fields (GraftOnnxWriteContext *context,
                                         ProtobufCMessage *message,
                                         GBytes *kept,
                                         GError **error);

/* Unpacks a message kept by graft_onnx_keep_message(); its memory belongs
 * to the write context. NULL if kept does not parse. */
ProtobufCMessage *graft_onnx_unpack_kept (GraftOnnxWriteContext *context,
                                          const ProtobufCMessageDescriptor *descriptor,
                                          GBytes *kept);

G_END_DECLS
