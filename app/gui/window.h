/* A Graft window: one model, its graph canvas, details sidebar, Find and
 * breadcrumbs. Everything it does is an action (win.*), so menus,
 * shortcuts and tests share one vocabulary. */
#pragma once

#include <adwaita.h>
#include "application.h"

G_BEGIN_DECLS

#define GRAFT_TYPE_WINDOW (graft_window_get_type ())
G_DECLARE_FINAL_TYPE (GraftWindow, graft_window, GRAFT, WINDOW, AdwApplicationWindow)

GraftWindow *graft_window_new (GraftApplication *application);

void graft_window_open_file (GraftWindow *self, GFile *file);
gboolean graft_window_is_empty (GraftWindow *self);

/* Shows the empty state, for a window with no file to load. */
void graft_window_start (GraftWindow *self);

G_END_DECLS
