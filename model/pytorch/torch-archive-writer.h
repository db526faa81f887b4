/* Writes the ZIP container PyTorch's PyTorchStreamWriter writes
 * (caffe2/serialize/inline_container.cc), so that torch's own readers
 * and Graft's (torch-archive.h) take it as theirs: every record under one
 * top folder, Stored, its data 64-byte aligned by an "FB" padding extra
 * field, ZIP64 end records always present (and ZIP64 fields where a size
 * or offset needs them), and the end records PyTorch adds:
 * .data/version, byteorder, .data/serialization_id.
 *
 * Records are streamed to a file descriptor in the order added and never
 * seeked back to, so the output may be a pipe. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct _GraftTorchArchiveWriter GraftTorchArchiveWriter;

/* path names the output in error messages; prefix is the top folder
 * ("model" for model.pt2, as torch names it after the file). */
GraftTorchArchiveWriter *graft_torch_archive_writer_new (int fd, const char *path, const char *prefix);
void graft_torch_archive_writer_free (GraftTorchArchiveWriter *writer);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftTorchArchiveWriter, graft_torch_archive_writer_free)

/* Adds record (a name below the top folder, "data/weights/weight_0"). */
gboolean graft_torch_archive_writer_add (GraftTorchArchiveWriter *writer, const char *record, const void *data,
                                         gsize len, GError **error);
gboolean graft_torch_archive_writer_has (GraftTorchArchiveWriter *writer, const char *record);

/* Writes PyTorch's end records (.data/version = file_version, byteorder,
 * .data/serialization_id) and the central directory. */
gboolean graft_torch_archive_writer_finish (GraftTorchArchiveWriter *writer, guint file_version, GError **error);

/* The top folder torch gives a file saved to path: its base name without
 * the last extension ("resnet.v2.pt2" → "resnet.v2"). */
char *graft_torch_archive_prefix_for_path (const char *path);

G_END_DECLS
