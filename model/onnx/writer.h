/* Graft IR → ONNX ModelProto, and saving it atomically.
 *
 * Saving a model that was loaded and not edited gives back every protobuf
 * field of the original (tests/edit/run-lossless.py checks this field by
 * field over the ONNX backend suite): ir_version, opset imports in file
 * order, producer, domain, model_version, doc strings and metadata_props
 * on every level, the graph (inputs, outputs, value_info in file order
 * with its entries for initializers, initializers, sparse initializers,
 * nodes with every attribute type, subgraphs), local functions, and what
 * the IR only carries (onnx/kept-fields.h): training_info, device
 * configurations, quantization annotations, function attribute_proto /
 * value_info / overload, TypeProtos with their denotations, tensor
 * segments, and fields of a newer onnx.proto.
 *
 * Choices, so that callers know what "the same" means:
 * - Tensor data is written inline, as raw_data (string tensors as
 *   string_data): typed fields (float_data...) come back as raw_data with
 *   the same values. External-data tensors are read and embedded, so the
 *   saved file stands alone and never points into the source folder; a
 *   model whose protobuf would exceed the 2 GiB protobuf limit is refused.
 * - Sparse initializers and SPARSE_TENSOR(S) attributes are saved in the
 *   sparse form they were read in while it still describes the tensor; a
 *   sparse initializer an edit replaced is saved dense, an edited sparse
 *   attribute as its non-zero elements with linear indices.
 * - A value's or TYPE_PROTO attribute's type is saved as read while the IR
 *   still says the same; an edited one is written from the IR (element
 *   type, innermost shape; map value shapes are lost) keeping the old
 *   denotations where the structure is the same.
 * - value_info is also written for every intermediate value that gained a
 *   declared type; inferred shapes (analysis) are never written.
 * - Kept fields that name values (training_info bindings, quantization
 *   annotations) are not updated by graph edits.
 * - Empty strings are written as absent fields, and "ai.onnx" domains as "".
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
 * own source file unless flags has GRAFT_ONNX_WRITE_OVERWRITE_SOURCE.
 * Initializers of 1 KiB or more go to a data file beside it, PATH.data,
 * when the model read its weights from a data file or they would be over
 * protobuf's 2 GiB limit inline; they are copied from the old data file
 * in bounded chunks, never loaded whole. */
gboolean graft_onnx_write_file (GraftModel *model,
                                const char *path,
                                GraftOnnxWriteFlags flags,
                                GError **error);

G_END_DECLS
