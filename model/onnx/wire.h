/* A pre-pass over the protobuf wire format of a serialized ONNX ModelProto.
 *
 * protobuf-c copies every `bytes` field while unpacking, which would double
 * the memory of a model whose weights are TensorProto.raw_data. This pass
 * checks the wire format of every message (lengths, varints, the wire type
 * of every field the schema knows, nesting depth), guided by protobuf-c's
 * generated descriptors, and writes a copy of the message in
 * which large raw_data fields are replaced by a small marker field that
 * indexes a table of (offset, length) slices of the original buffer. The
 * reader then wraps those slices of the mapped file instead of copying.
 */
#pragma once

#include <glib.h>
#include <protobuf-c/protobuf-c.h>

G_BEGIN_DECLS

/* Messages nested deeper than this are refused (the onnx Python package's
 * C++ protobuf has the same default limit). */
#define GRAFT_ONNX_WIRE_MAX_DEPTH 100

/* raw_data shorter than this stays inline: replacing it would not save memory. */
#define GRAFT_ONNX_WIRE_MIN_STRIP 64

typedef struct {
  gsize offset;   /* in the original buffer */
  gsize length;
  GBytes *copy;   /* NULL, or the reader's aligned copy of those bytes: read it, not the buffer */
} GraftOnnxSlice;

/* Returns the stripped copy and fills slices (GraftOnnxSlice), or NULL with
 * a GRAFT_MODEL_ERROR naming the byte offset of the problem. */
GBytes *graft_onnx_wire_strip (const guint8 *data,
                               gsize length,
                               gsize min_strip,
                               GArray *slices,
                               GError **error);

/* If message (an unpacked TensorProto) carries the marker left by
 * graft_onnx_wire_strip(), returns TRUE and the slice it names. */
gboolean graft_onnx_wire_get_raw_slice (const ProtobufCMessage *message,
                                        const GArray *slices,
                                        GraftOnnxSlice *slice);

/* Whether an unknown field of an unpacked message is the marker
 * graft_onnx_wire_strip() left in place of a raw_data. */
gboolean graft_onnx_wire_is_marker (const ProtobufCMessageUnknownField *field);

G_END_DECLS
