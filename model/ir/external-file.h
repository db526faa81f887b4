/* An external data file (ONNX external_data), opened once while the model
 * is read and read through that descriptor for as long as a tensor needs
 * it. Its path is never resolved again: a file swapped for a symbolic
 * link after the load (the GUI keeps models open for hours) cannot change
 * what a later read or save sees. */
#pragma once

#include <glib.h>
#include <glib/gstdio.h>

G_BEGIN_DECLS

typedef struct _GraftExternalFile GraftExternalFile;

/* Opens dir/relative without following a symbolic link on any component
 * below dir (relative has no ".." and is not absolute: the caller checked
 * that). A regular file only; errors are GRAFT_MODEL_ERROR_UNSAFE for a
 * link, GRAFT_MODEL_ERROR_IO otherwise. */
GraftExternalFile *graft_external_file_open_inside (const char *dir, const char *relative, GError **error);
GraftExternalFile *graft_external_file_ref (GraftExternalFile *file);
void graft_external_file_unref (GraftExternalFile *file);

const char *graft_external_file_get_path (GraftExternalFile *file);   /* dir/relative, for messages */
guint64 graft_external_file_get_size (GraftExternalFile *file);       /* when it was opened */
/* Whether st (a g_stat of some path) is this file. */
gboolean graft_external_file_is (GraftExternalFile *file, const GStatBuf *st);

/* length bytes at offset, read now; a file cut short since it was opened
 * is GRAFT_MODEL_ERROR_TRUNCATED. */
GBytes *graft_external_file_read (GraftExternalFile *file, guint64 offset, gsize length, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftExternalFile, graft_external_file_unref)

G_END_DECLS
