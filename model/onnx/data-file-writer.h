/* The external data file an ONNX model is saved with: initializers laid
 * out one after another (onnx's convention: large ones at page boundaries,
 * so onnxruntime can map them), then copied in one streaming pass, so a
 * model of many gigabytes is never held in memory to be saved. */
#pragma once

#include "ir/tensor.h"

G_BEGIN_DECLS

/* Initializers smaller than this stay in the model file, as onnx's
 * convert_model_to_external_data (size_threshold=1024) leaves them. */
#define GRAFT_ONNX_EXTERNAL_MIN_BYTES 1024

typedef struct _GraftOnnxDataFile GraftOnnxDataFile;

/* location: the data file's name, relative to the model's folder. */
GraftOnnxDataFile *graft_onnx_data_file_new (const char *location);
void graft_onnx_data_file_free (GraftOnnxDataFile *file);

const char *graft_onnx_data_file_get_location (GraftOnnxDataFile *file);
gboolean graft_onnx_data_file_is_empty (GraftOnnxDataFile *file);

/* Reserves room for tensor's raw bytes (borrowed until the file is
 * written); returns their offset. */
guint64 graft_onnx_data_file_place (GraftOnnxDataFile *file, GraftTensor *tensor);

/* A GraftAtomicWriteFunc: writes the placed tensors (user_data is the
 * GraftOnnxDataFile), reading external data in bounded chunks. */
gboolean graft_onnx_data_file_write (int fd, const char *path, gpointer user_data, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftOnnxDataFile, graft_onnx_data_file_free)

G_END_DECLS
