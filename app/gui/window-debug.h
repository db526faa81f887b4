/* The window's Debug part (window-debug.c): Debug → Reduce…, the Run
 * pane's Reduce to Here, and Convert to Float16 Keeping Accuracy…, with
 * the nodes they kept marked on the canvas until the graph changes. An
 * object of its own beside the window, which it reaches through window.h
 * and the document's signals. */
#pragma once

#include "window.h"

G_BEGIN_DECLS

#define GRAFT_TYPE_WINDOW_DEBUG (graft_window_debug_get_type ())
G_DECLARE_FINAL_TYPE (GraftWindowDebug, graft_window_debug, GRAFT, WINDOW_DEBUG, GObject)

void graft_window_class_add_debug_actions (GtkWidgetClass *widget_class);
/* The part for window (which keeps the reference): its actions on
 * window's class find it; it follows window's document and Run pane. */
GraftWindowDebug *graft_window_debug_new (GraftWindow *window);
/* Marks the nodes the last reduction or float16 search kept (under the
 * other marks: the window calls it first when it marks the canvas). */
void graft_window_debug_mark_kept (GraftWindowDebug *self);

G_END_DECLS
