/* Saving a file so that either the complete new file is there or the old
 * one is untouched, whatever the format: the bytes go to a temporary file
 * in the target's folder (with the replaced file's mode, owner and
 * extended attributes), are synced, and the temporary file is renamed over
 * the target. A symbolic link is followed (its target is replaced, the
 * link stays); a pipe or device (-o /dev/stdout) is written in place. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Writes everything to fd, which is at offset 0 and may be a pipe: the
 * writer never seeks. Errors name path. */
typedef gboolean (*GraftAtomicWriteFunc) (int fd, const char *path, gpointer user_data, GError **error);

gboolean graft_atomic_save (const char *path, GraftAtomicWriteFunc write_func, gpointer user_data, GError **error);

/* write(2) of all len bytes, retrying on EINTR; FALSE with the error
 * (GRAFT_MODEL_ERROR_IO, naming path) on failure. */
gboolean graft_atomic_write_all (int fd, const char *path, const void *data, gsize len, GError **error);

/* TRUE if a and b name the same existing file (device and inode). */
gboolean graft_same_file (const char *a, const char *b);

/* The checks every writer makes before saving: a name is given, it is no
 * folder, and it is not the file the model was read from (source may be
 * NULL) unless overwrite_source. */
gboolean graft_atomic_check_target (const char *path, const char *source, gboolean overwrite_source, GError **error);

G_END_DECLS
