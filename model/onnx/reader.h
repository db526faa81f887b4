/* The ONNX reader: a serialized ModelProto → GraftModel. */
#pragma once

#include <gio/gio.h>
#include <gio/gio.h>
#include "ir/model.h"
#include "ir/model-error.h"

G_BEGIN_DECLS

/* Maps the file; initializer data stays in the mapping (not copied) and
 * external data is resolved against the file's folder and read lazily. */
GraftModel *graft_onnx_read_file (const char *path,
                                  GCancellable *cancellable,
                                  GraftProgressFunc progress,
                                  gpointer progress_data,
                                  GError **error);

/* Reads a model from memory. display_name names it in messages; model_dir
 * (canonical, may be NULL) is where external data may be read from. */
GraftModel *graft_onnx_read_bytes (GBytes *bytes,
                                   const char *display_name,
                                   const char *model_dir,
                                   GCancellable *cancellable,
                                   GraftProgressFunc progress,
                                   gpointer progress_data,
                                   GError **error);

G_END_DECLS
