/* Building protobuf-c messages from the IR (private to the ONNX writer).
 *
 * Every message and array is allocated in the context's arena and strings
 * point into the IR, so one graft_onnx_write_context_clear() releases a
 * whole ModelProto; protobuf_c_message_free_unpacked() must never be used
 * on these messages.
 */
#pragma once

#include "ir/model.h"
#include "onnx.pb-c.h"
#include "onnx/data-file-writer.h"

G_BEGIN_DECLS

typedef struct {
  GPtrArray *arena;        /* g_free'd blocks */
  guint64 tensor_bytes;    /* raw data written so far, for the size limit */
  GraftOnnxDataFile *data_file;   /* where large initializers go, or NULL: all inline */
} GraftOnnxWriteContext;

void graft_onnx_write_context_init (GraftOnnxWriteContext *context);
void graft_onnx_write_context_clear (GraftOnnxWriteContext *context);

/* Zeroed block owned by the context. */
gpointer graft_onnx_write_alloc (GraftOnnxWriteContext *context, gsize size);

/* A metadata or external-data entry; key and value are borrowed. */
Onnx__StringStringEntryProto *graft_onnx_string_entry_to_proto (GraftOnnxWriteContext *context, const char *key,
                                                                const char *value);

/* "" and NULL become NULL (field absent); other strings are borrowed. */
char *graft_onnx_write_string (const char *text);

Onnx__TensorProto *graft_onnx_tensor_to_proto (GraftOnnxWriteContext *context,
                                               GraftTensor *tensor,
                                               const char *name,
                                               GError **error);

/* An initializer: placed in context->data_file when there is one and it
 * is large enough, else as graft_onnx_tensor_to_proto. */
Onnx__TensorProto *graft_onnx_initializer_to_proto (GraftOnnxWriteContext *context,
                                                    GraftTensor *tensor,
                                                    const char *name,
                                                    GError **error);

Onnx__SparseTensorProto *graft_onnx_tensor_to_sparse_proto (GraftOnnxWriteContext *context,
                                                            GraftTensor *tensor,
                                                            GError **error);

/* The sparse form tensor was read in (onnx_sparse) with its values named
 * name, or NULL when it has none or it no longer describes the tensor. */
Onnx__SparseTensorProto *graft_onnx_kept_sparse_to_proto (GraftOnnxWriteContext *context,
                                                          GraftTensor *tensor,
                                                          const char *name);

/* A TypeProto kept by the reader (GraftValue.onnx_type,
 * GraftAttribute.onnx_types), unpacked; NULL for NULL. */
Onnx__TypeProto *graft_onnx_kept_type (GraftOnnxWriteContext *context, GBytes *kept);

/* Parses the reader's text form of a type ("seq(tensor(float))"); NULL if
 * it is not one. */
Onnx__TypeProto *graft_onnx_type_from_string (GraftOnnxWriteContext *context, const char *text);

/* The declared type of a value, or NULL when it has none. */
Onnx__TypeProto *graft_onnx_value_type_to_proto (GraftOnnxWriteContext *context, const GraftValue *value);

G_END_DECLS
