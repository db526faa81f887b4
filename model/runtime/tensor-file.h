/* ONNX protobuf tensor files (the backend test suite's input_0.pb): a
 * TensorProto, or a SequenceProto / OptionalProto of tensors. */
#pragma once

#include <glib.h>
#include "ir/graph.h"
#include "runtime/rt-tensor.h"

G_BEGIN_DECLS

/* kind tells which message the file holds (TENSOR, SEQUENCE or OPTIONAL);
 * *name receives the stored name (may be empty), if name is not NULL. */
GraftRtTensor *graft_tensor_file_parse_pb (const guint8 *data, gsize length, GraftValueKind kind,
                                           char **name, const char *what, GError **error);

/* Reads .npy or .pb by content (an .npy starts with "\x93NUMPY"). */
GraftRtTensor *graft_tensor_file_read (const char *path, GraftValueKind kind, char **name, GError **error);

/* A value's name as a file name stem: characters outside [A-Za-z0-9._-]
 * become '_', a leading '.' too, at most 200 bytes; "" for an empty name.
 * graft-cli run -o names its .npy files so, and reference folders of .npy
 * values keyed by value name are read so. */
char *graft_tensor_file_safe_stem (const char *name);

G_END_DECLS
