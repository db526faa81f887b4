/* Edit → Simplify… in the window (win.simplify-dialog): the simplify
 * dialog over the document's model, its edit applied as the user's own.
 * It needs the window's public face only (window.h). */
#pragma once

#include "window.h"

G_BEGIN_DECLS

void graft_window_class_add_simplify_actions (GtkWidgetClass *widget_class);

G_END_DECLS
