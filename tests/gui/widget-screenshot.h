/* Renders a realized widget (usually a whole window) to a PNG file, the way
 * it is on screen, for the GUI tests' screenshots. The picture is made
 * from the render nodes of the last paint, and a widget that has asked to
 * be redrawn since has none: call this right after a paint (the frame
 * clock's "after-paint") for a reliable result. */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

gboolean graft_widget_save_png (GtkWidget *widget, const char *path, GError **error);

G_END_DECLS
