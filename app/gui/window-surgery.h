/* Graph surgery in the window (window-surgery.c): win.edit-operation
 * (every edit of the operation table by its id, target and argument), the
 * canvas's context menus built from the table, Delete, the entry dialogs,
 * recipes (Save Edits As…, Apply Recipe…). Actions over the window's
 * public face (window.h), with no state of their own. */
#pragma once

#include "window.h"

G_BEGIN_DECLS

void graft_window_class_add_surgery_actions (GtkWidgetClass *widget_class);
/* The canvas's context menu (a secondary click). */
void graft_window_init_surgery (GraftWindow *self);
/* Applies operation id (params: floating or owned, consumed) to the graph
 * the canvas shows, as graft_window_try_edit() does (the pattern dialog,
 * the float16 search and the op picker end here). */
gboolean graft_window_try_operation (GraftWindow *self, const char *id, GVariant *params, GError **error);

G_END_DECLS
