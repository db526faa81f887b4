/* A Graft window: one model, its graph canvas, details sidebar, Find and
 * breadcrumbs. Everything it does is an action (win.*), so menus,
 * shortcuts and tests share one vocabulary. */
#pragma once

#include <adwaita.h>
#include "application.h"
#include "document.h"
#include "widgets/find-panel.h"
#include "widgets/graph-canvas.h"
#include "widgets/node-sidebar.h"
#include "widgets/run-pane.h"

G_BEGIN_DECLS

#define GRAFT_TYPE_WINDOW (graft_window_get_type ())
G_DECLARE_FINAL_TYPE (GraftWindow, graft_window, GRAFT, WINDOW, AdwApplicationWindow)

GraftWindow *graft_window_new (GraftApplication *application);

void graft_window_open_file (GraftWindow *self, GFile *file);
/* Opens path in this window once the user agreed to leave unsaved
 * changes (a question first, if there are any). */
void graft_window_open_path (GraftWindow *self, const char *path);
gboolean graft_window_is_empty (GraftWindow *self);

/* Shows the empty state, for a window with no file to load. */
void graft_window_start (GraftWindow *self);

/* What the window's parts (window-*.c, each its own object or set of
 * actions) use besides the document's signals and the win.* actions: the
 * window's struct is window.c's alone, and so is every function here. */
/* The document the window shows: the model, its file, its edits, its check. */
GraftDocument *graft_window_get_document (GraftWindow *self);
/* The panes the parts draw on and run with. */
GraftGraphCanvas *graft_window_get_canvas (GraftWindow *self);
GraftNodeSidebar *graft_window_get_sidebar (GraftWindow *self);
GraftRunPane *graft_window_get_run_pane (GraftWindow *self);
GraftFindPanel *graft_window_get_find_panel (GraftWindow *self);
/* A short note over the graph. */
void graft_window_show_toast (GraftWindow *self, const char *text);
/* A toast of the caller's making (a button, a timeout, a priority). */
void graft_window_add_toast (GraftWindow *self, AdwToast *toast);
/* TRUE while the canvas lays out the graph (a worker reads it). */
gboolean graft_window_canvas_is_busy (GraftWindow *self);
/* Shows graph (the model's, or a body in it) on the canvas, breadcrumbs
 * and sidebar. */
void graft_window_show_graph (GraftWindow *self, GraftGraph *graph);
/* The sidebar shows the selected node or value, or the model. */
void graft_window_update_sidebar (GraftWindow *self);
/* Every Find match highlighted on the canvas while Find is open (none
 * while it is closed). */
void graft_window_update_found (GraftWindow *self);
/* Enables the actions for the model, a run, a check, an edit under way. */
void graft_window_update_action_states (GraftWindow *self);
/* The canvas's marks again: the check's, a run's timings, the cost, what
 * a reduction kept. */
void graft_window_refresh_marks (GraftWindow *self);
/* A refused edit, in a dialog headed heading. */
void graft_window_show_edit_error (GraftWindow *self, const char *heading, const GError *error);
/* FALSE (with a toast saying why) while a run, a check or a layout must finish first. */
gboolean graft_window_edits_allowed (GraftWindow *self);
/* Applies edit through the document as an edit of the user's (undoable;
 * the window keeps its place, proves an edit of input dims at other sizes
 * and says what was done); a refusal is returned for the caller to show
 * where the edit was asked for; FALSE without error when edits must wait
 * (a toast says why). */
gboolean graft_window_try_edit (GraftWindow *self, GraftEdit *edit, GError **error);
/* Applies edit as the user's; a refusal is shown in a dialog. An edit that
 * repairs and re-infers the whole graph (graft_edit_runs_long()) runs on a
 * worker; one naming a "symbol" offers Run with New Shape once proven. */
void graft_window_apply_edit (GraftWindow *self, GraftEdit *edit);

G_END_DECLS
