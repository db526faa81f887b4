/* Graft IR → ONNX ModelProto, and saving it atomically.
 *
 * What is written: ir_version, opset imports, producer, domain,
 * model_version, doc strings, metadata_props, the graph (inputs, outputs,
 * value_info, initializers, nodes with every attribute type, subgraphs) and
 * local functions.
 *
 * Choices and losses, so that callers know what "equivalent" means:
 * - Tensors are always written inline as raw_data (string tensors as
 *   string_data). External-data tensors are read and embedded, so the saved
 *   file stands alone and never points into the source folder; a model whose
 *   protobuf would exceed the 2 GiB protobuf limit is refused.
 * - Sparse initializers and attributes were densified by the reader; sparse
 *   attributes are written back as sparse tensors of their non-zero
 *   elements (linear indices), sparse initializers as dense initializers.
 * - value_info is written for every intermediate value that has a declared
 *   type; inferred shapes (value->inferred_*) are never written.
 * - TYPE_PROTO attributes come back from their text form (element types and
 *   nesting, no shapes). training_info, dim/type denotations and
 *   quantization annotations are not in the IR and are not written.
 */
#pragma once

#include <glib.h>
#include "ir/model.h"

G_BEGIN_DECLS

typedef enum {
  GRAFT_ONNX_WRITE_NONE = 0,
  /* Allow path to be the file the model was opened from. */
  GRAFT_ONNX_WRITE_OVERWRITE_SOURCE = 1 << 0,
} GraftOnnxWriteFlags;

/* Serialises an ONNX model (format GRAFT_MODEL_FORMAT_ONNX). */
GBytes *graft_onnx_model_to_bytes (GraftModel *model, GError **error);

/* Writes the model to path through a temporary file in path's folder,
 * fsync and rename: either the complete new file is there or the old one
 * is untouched. Refuses (GRAFT_MODEL_ERROR_UNSAFE) to replace the model's
 * own source file unless flags has GRAFT_ONNX_WRITE_OVERWRITE_SOURCE. */
gboolean graft_onnx_write_file (GraftModel *model,
                                const char *path,
                                GraftOnnxWriteFlags flags,
                                GError **error);

G_END_DECLS
