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

G_END_DECLS
