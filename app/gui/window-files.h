/* The window's files (window-files.c): Open, the bundled sample, Recent
 * Models, drag and drop (open here, or compare with the model shown),
 * Export, Compare With…, and the offer to reload a file changed on disk.
 * Its actions are on the window's class; the Recent menu, the drop zones
 * and the reload offer are the state of a part of their own beside the
 * window, which it reaches through window.h and the document's signals. */
#pragma once

#include "window.h"

G_BEGIN_DECLS

#define GRAFT_TYPE_WINDOW_FILES (graft_window_files_get_type ())
G_DECLARE_FINAL_TYPE (GraftWindowFiles, graft_window_files, GRAFT, WINDOW_FILES, GObject)

void graft_window_class_add_file_actions (GtkWidgetClass *widget_class);
/* The part for window (which keeps the reference): the Recent menu on
 * open_button, the drop zones over the canvas, the reload offer. */
GraftWindowFiles *graft_window_files_new (GraftWindow *window, AdwSplitButton *open_button);
/* Starts a Save/Export chooser in the folder of the model shown (not the
 * folder Graft was launched from). */
void graft_window_chooser_start_beside_model (GraftWindow *self, GtkFileChooser *chooser);

G_END_DECLS
