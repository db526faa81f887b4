/* Save as .npy for a tensor the sidebar shows: a chooser beside the model,
 * then the file written (atomically) by a worker, so saving a big
 * embedding never stalls the window. */
#pragma once

#include <adwaita.h>

#include "document.h"
#include "widgets/node-sidebar.h"

G_BEGIN_DECLS

#define GRAFT_TYPE_TENSOR_SAVER (graft_tensor_saver_get_type ())
G_DECLARE_FINAL_TYPE (GraftTensorSaver, graft_tensor_saver, GRAFT, TENSOR_SAVER, GObject)

/* Saves the tensors of document's model that sidebar offers
 * ("save-tensor"), its chooser and errors over window, its outcome as a
 * toast in toasts. */
GraftTensorSaver *graft_tensor_saver_new (GtkWindow *window, AdwToastOverlay *toasts, GraftDocument *document,
                                          GraftNodeSidebar *sidebar);

G_END_DECLS
