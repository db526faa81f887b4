/* Real key and pointer events for the GUI tests: xdotool sends them to the
 * X server (Xvfb), which delivers them to the window as a user's would. */
#pragma once

#include "window.h"

G_BEGIN_DECLS

/* FALSE, with the test skipped, when xdotool is not installed. */
gboolean xdotool_available (void);
/* Runs xdotool with the window's X id in place of "WINDOW", while the main
 * loop keeps running so the window receives what it sends; then settles. */
void xdotool_run (GraftWindow *window, const char *const *commands);
/* A left click at (x, y) of widget's own coordinates. */
void xdotool_click_widget (GraftWindow *window, GtkWidget *widget, double x, double y);
/* The pointer to (x, y) of widget's own coordinates, nothing pressed. */
void xdotool_move_to_widget (GraftWindow *window, GtkWidget *widget, double x, double y);

G_END_DECLS
