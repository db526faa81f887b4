/* Constant tensor data: initializers, Constant attributes, TorchScript
 * parameters and buffers.
 *
 * Data is referenced, not copied: a tensor holds a GBytes that is usually a
 * slice of the mapped model file (or of a zip entry), so opening a 500 MB
 * model does not double its memory. External ONNX data is read lazily on
 * the first graft_tensor_get_data(), through the descriptor opened when
 * the model was read.
 *
 * In memory the layout is always contiguous, row-major, little-endian,
 * graft_dtype_get_size() bytes per element (float16/bfloat16 as their
 * 16-bit patterns, bool as one byte 0/1). Readers convert typed ONNX
 * fields (float_data, int32_data...) to this layout.
 */
#pragma once

#include <gio/gio.h>
#include "ir/dtype.h"
#include "ir/external-file.h"

G_BEGIN_DECLS

typedef struct _GraftTensor GraftTensor;

struct _GraftTensor {
  /*< private >*/
  gint ref_count;

  /*< public >*/
  char *name;
  char *doc_string;
  GraftDType dtype;
  int rank;
  gint64 *dims;        /* rank entries; NULL for a scalar */

  /* Exactly one of these describes the data: */
  GBytes *data;        /* numeric data, or NULL until external data is loaded */
  GPtrArray *strings;  /* GBytes* elements, for GRAFT_DTYPE_STRING */

  /* ONNX external data (data == NULL until loaded): the file opened when
   * the model was read, checked to lie inside the model's folder. */
  GraftExternalFile *external_file;
  guint64 external_offset;
  gint64 external_length;  /* -1: to the end of the file */

  /* PyTorch storages may be views: strides in elements (NULL = contiguous)
   * and the storage offset are kept to display them; data already points at
   * the first element. */
  gint64 *strides;

  /* ONNX pass-through (onnx/kept-fields.h): TensorProto fields the IR has
   * no place for (segment, metadata_props), and for a tensor read from a
   * SparseTensorProto that proto as read, packed, so that it is saved
   * sparse again. graft_tensor_set_data() drops onnx_sparse: it would no
   * longer describe the data. */
  GBytes *onnx_kept_fields;
  GBytes *onnx_sparse;

  /* Where data can be read again (the ONNX reader's copy of a raw_data
   * from the model file, the file kept open): a holder that has the
   * values in another form, the runtime's packed weights, may give data's
   * pages back (graft_tensor_give_back); graft_tensor_get_data() and
   * graft_tensor_restore() read them in again, checked against the
   * checksum taken when they went. */
  GraftExternalFile *source_file;
  guint64 source_offset;
  gboolean given_back;
  guint64 given_back_checksum;
};

GraftTensor *graft_tensor_new (const char *name, GraftDType dtype, int rank, const gint64 *dims);
GraftTensor *graft_tensor_ref (GraftTensor *tensor);
void graft_tensor_unref (GraftTensor *tensor);

/* Takes a reference on data; checks the size matches dtype × numel. */
gboolean graft_tensor_set_data (GraftTensor *tensor, GBytes *data, GError **error);
void graft_tensor_set_external (GraftTensor *tensor, GraftExternalFile *file, guint64 offset, gint64 length);

gint64 graft_tensor_get_numel (const GraftTensor *tensor);
gsize graft_tensor_get_nbytes (const GraftTensor *tensor);
gboolean graft_tensor_is_external (const GraftTensor *tensor);

/* Returns the bytes (loading external data on first use) or NULL with an
 * error naming the tensor and the problem. The returned GBytes is owned by
 * the tensor. */
GBytes *graft_tensor_get_data (GraftTensor *tensor, GError **error);

/* data is a copy of nbytes at offset in file (see source_file above). */
void graft_tensor_set_source (GraftTensor *tensor, GraftExternalFile *file, guint64 offset);
/* Gives the whole pages of data back to the system, keeping its address
 * and GBytes: TRUE when it did (a tensor with a source and data of its
 * own, not given back already). Only for a holder that knows nobody reads
 * data without graft_tensor_get_data() or graft_tensor_restore() first:
 * a page given back reads as zeros. */
gboolean graft_tensor_give_back (GraftTensor *tensor);
/* Reads data given back in again, at the same address; FALSE (and the
 * tensor stays given back) when the file no longer holds what was given
 * back (rewritten in place since). TRUE at once for any other tensor. */
gboolean graft_tensor_restore (GraftTensor *tensor, GError **error);

/* Element i converted to double (for statistics and display); strings and
 * complex types are not supported and return NAN. */
double graft_tensor_get_element_as_double (GraftTensor *tensor, gint64 index);

/* Element index as text exactly as stored: integers without a detour
 * through double (int64 ids stay exact), bool as true/false, floats with
 * the digits their type holds. NULL for strings and complex types. */
char *graft_tensor_format_element (GraftTensor *tensor, gint64 index);
/* The same in at most six significant digits for floating-point types
 * ("1.05228"), for labels; integers still print exactly. */
char *graft_tensor_format_element_short (GraftTensor *tensor, gint64 index);

typedef struct {
  double min, max, mean;
  gint64 count;       /* elements summarised (all but NaN) */
  gint64 nan_count;
  double std;         /* population standard deviation of the summarised elements */
  gint64 zero_count;  /* elements equal to zero: sparsity is zero_count / numel */
  gint64 min_index, max_index; /* an element holding min, max: integers print from it exactly */
} GraftTensorStats;

gboolean graft_tensor_compute_stats (GraftTensor *tensor, GraftTensorStats *stats, GError **error);
/* The same, checking cancellable (may be NULL) as it goes, for a worker
 * summarising a big tensor the user has already left. */
gboolean graft_tensor_compute_stats_cancellable (GraftTensor *tensor, GraftTensorStats *stats,
                                                 GCancellable *cancellable, GError **error);

/* "float32[64,3,7,7]" */
char *graft_tensor_describe (const GraftTensor *tensor);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftTensor, graft_tensor_unref)

G_END_DECLS
