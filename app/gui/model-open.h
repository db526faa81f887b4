/* graft_model_load() in a worker thread, with its progress reported on the
 * main thread, so the window stays responsive and can cancel. */
#pragma once

#include <gio/gio.h>
#include "loader.h"

G_BEGIN_DECLS

/* progress is called on the thread default main context of the caller. */
void graft_model_load_async (const char *path,
                             GCancellable *cancellable,
                             GraftProgressFunc progress,
                             gpointer progress_data,
                             GAsyncReadyCallback callback,
                             gpointer user_data);

GraftModel *graft_model_load_finish (GAsyncResult *result, GError **error);

G_END_DECLS
