/* The ZIP container PyTorch writes (torch.jit.save, torch.save ≥ 1.6,
 * lite-interpreter .ptl): one top folder, Stored storages aligned for
 * mapping, Deflate code files.
 *
 * The file is mapped once; Stored records are returned as slices of the
 * mapping (no copy), Deflate records are inflated through libzip. */
#pragma once

#include <gio/gio.h>
#include "ir/tensor.h"
#include "ir/tensor-view.h"
#include "pytorch/pickle.h"

G_BEGIN_DECLS

typedef struct _GraftTorchArchive GraftTorchArchive;

typedef struct {
  char *name;          /* full name in the zip, e.g. "resnet18/data/0" */
  const char *record;  /* name below the top folder: "data/0" (points into name) */
  guint64 index;       /* libzip index */
  guint16 method;      /* 0 Stored, 8 Deflate */
  guint64 compressed_size;
  guint64 size;
  guint64 header_offset;   /* local file header */
} GraftTorchArchiveEntry;

/* Limit on the inflated size of one Deflate record (code files are small;
 * a huge declared size is a hostile or corrupt file). */
#define GRAFT_TORCH_ARCHIVE_MAX_INFLATED (256u * 1024u * 1024u)
/* Limit on the memory one load allocates for the file's data: inflated
 * Deflate records and tensors gathered from strided views. A small zip of
 * many highly compressed entries, or a stride-0 view of 2^30 elements,
 * must not allocate without bound. Each record is inflated once and kept,
 * however many tensors share it; Stored records are slices of the file. */
#define GRAFT_TORCH_ARCHIVE_MAX_ALLOCATED (2048ull * 1024u * 1024u)

GraftTorchArchive *graft_torch_archive_open (const char *path, GError **error);
/* Opens an archive held in memory (bytes are referenced, not copied);
 * display_name names it in error messages. */
GraftTorchArchive *graft_torch_archive_open_bytes (GBytes *bytes, const char *display_name, GError **error);
void graft_torch_archive_free (GraftTorchArchive *archive);

const char *graft_torch_archive_get_path (GraftTorchArchive *archive);

/* The load this archive serves: inflating checks the cancellable, and the
 * pickles read from it share one budget of values (GraftPickleBudget). */
void graft_torch_archive_set_cancellable (GraftTorchArchive *archive, GCancellable *cancellable);
GraftPickleBudget *graft_torch_archive_get_pickle_budget (GraftTorchArchive *archive);

/* Takes n bytes from the load's allocation budget
 * (GRAFT_TORCH_ARCHIVE_MAX_ALLOCATED) before they are allocated; the error
 * names what wanted them. */
gboolean graft_torch_archive_spend (GraftTorchArchive *archive, guint64 n, const char *what, GError **error);
/* The bytes of the tensor that view (ir/tensor-view.h) describes in
 * storage, a record of this archive (storage_name in messages), in
 * row-major order: a slice of storage when the view is contiguous, else a
 * copy paid for from the allocation budget (a stride-0 view may be far
 * larger than its storage); *copied (may be NULL) says which. Errors
 * name the file, the storage and the tensor. */
GBytes *graft_torch_archive_view (GraftTorchArchive *archive, GBytes *storage, const char *storage_name,
                                  const GraftTensorView *view, const char *tensor_name, gboolean *copied,
                                  GError **error);
/* The single top folder ("resnet18", "archive"); "" when entries sit at
 * the zip root (torch.export .pt2 before 2.8). */
const char *graft_torch_archive_get_prefix (GraftTorchArchive *archive);

guint graft_torch_archive_get_n_entries (GraftTorchArchive *archive);
const GraftTorchArchiveEntry *graft_torch_archive_get_entry (GraftTorchArchive *archive, guint i);

/* Looks a record up by its name below the top folder ("data.pkl",
 * "code/__torch__.py"); NULL if absent. */
const GraftTorchArchiveEntry *graft_torch_archive_lookup (GraftTorchArchive *archive, const char *record);
gboolean graft_torch_archive_has (GraftTorchArchive *archive, const char *record);
/* TRUE if some record name starts with prefix ("code/"). */
gboolean graft_torch_archive_has_prefix (GraftTorchArchive *archive, const char *prefix);

/* The record's bytes: a slice of the mapping for Stored records, an
 * inflated copy for Deflate ones. */
GBytes *graft_torch_archive_read (GraftTorchArchive *archive, const char *record, GError **error);
GBytes *graft_torch_archive_read_entry (GraftTorchArchive *archive, const GraftTorchArchiveEntry *entry, GError **error);

/* The file-format version: ".data/version" if present, else "version";
 * 0 if neither exists. Fails if the record is not a number. */
gboolean graft_torch_archive_get_version (GraftTorchArchive *archive, guint64 *version, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftTorchArchive, graft_torch_archive_free)

/* A tensor from the pickle, with its data sliced from the archive record
 * <dir>/<storage key> (no copy when contiguous). */
GraftTensor *graft_torch_archive_load_tensor (GraftTorchArchive *archive, const char *dir,
                                              GraftPickleValue *value, const char *name, GError **error);

G_END_DECLS
