/* A Graft window: one model, its graph canvas, details sidebar, Find and
 * breadcrumbs. Everything it does is an action (win.*), so menus,
 * shortcuts and tests share one vocabulary. */
#pragma once

#include <adwaita.h>
#include "application.h"
#include "document.h"

G_BEGIN_DECLS

#define GRAFT_TYPE_WINDOW (graft_window_get_type ())
G_DECLARE_FINAL_TYPE (GraftWindow, graft_window, GRAFT, WINDOW, AdwApplicationWindow)

GraftWindow *graft_window_new (GraftApplication *application);

void graft_window_open_file (GraftWindow *self, GFile *file);
gboolean graft_window_is_empty (GraftWindow *self);

/* Shows the empty state, for a window with no file to load. */
void graft_window_start (GraftWindow *self);

/* What the window's parts (its dialogs) use besides the document. */
/* The document the window shows: the model, its file, its edits, its check. */
GraftDocument *graft_window_get_document (GraftWindow *self);
/* A short note over the graph. */
void graft_window_show_toast (GraftWindow *self, const char *text);
/* FALSE (with a toast saying why) while a run, a check or a layout must finish first. */
gboolean graft_window_edits_allowed (GraftWindow *self);
/* Applies edit through the document as an edit of the user's (undoable;
 * the window keeps its place, proves an edit of input dims at other sizes
 * and says what was done); a refusal is returned for the caller to show
 * where the edit was asked for; FALSE without error when edits must wait
 * (a toast says why). */
gboolean graft_window_try_edit (GraftWindow *self, GraftEdit *edit, GError **error);

G_END_DECLS
