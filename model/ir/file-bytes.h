/* A model file's bytes for as long as the model is open.
 *
 * Tensors keep slices of the file's bytes. With a plain mapping, a file
 * rewritten in place while it is open (torch.onnx.export or torch.jit.save
 * run again from a training script) shrinks under the mapping, and the
 * next touch of a weight is SIGBUS. So a file this process may write to
 * (access W_OK: the user's own files, anything as root) is read into
 * memory; a read-only file is mapped, which keeps the page cache's
 * sharing for the large read-only models of a system install. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

GBytes *graft_file_bytes_open (const char *path, GError **error);

/* For a reader that copies out what it keeps (the ONNX reader's aligned
 * weights): a regular file is read into pages of this process's own even
 * when it is read-only, since a mapping would only leave the runtime to
 * copy its unaligned weights a second time. *out_private tells whether
 * the bytes are such pages, which graft_file_bytes_release() can give
 * back part by part while the copying goes on; it is FALSE for what is
 * not a regular file (a pipe), read onto the heap. */
GBytes *graft_file_bytes_open_for_copy_out (const char *path, gboolean *out_private, GError **error);

/* Gives the whole pages inside [offset, offset + length) of private bytes
 * back to the system. They must not be read again: they read as zeros. */
void graft_file_bytes_release (GBytes *bytes, gsize offset, gsize length);

/* Anonymous memory of this process's own, page-aligned and zeroed: it is
 * not the heap's, so it goes back to the system whole when freed, or in
 * parts (madvise), and a large one costs no pages until written. */
typedef struct {
  gpointer data;
  gsize size;
} GraftPages;

GraftPages *graft_pages_new (gsize size);   /* NULL: no room for it */
/* Asks the kernel for 2 MB pages over the whole ones in [data, data +
 * size) (transparent huge pages in their `madvise` mode, Debian's
 * default): a model's weights then take a page fault per 2 MB, not per
 * 4 KB, as they are read or copied in — most of the CPU time of opening
 * a large model. Nothing where the kernel has no such pages. */
void graft_pages_advise_huge (gpointer data, gsize size);
void graft_pages_free (gpointer pages);     /* a GDestroyNotify */

G_END_DECLS
