/* The window's edits (window-edits.c): undoable edits through the
 * document, with the guards while a run, a check, a layout or another
 * edit is under way, the place and open groups kept across an edit, the
 * proof of an edit of input dims at other sizes, slow edits on a worker
 * with Cancel, Undo/Redo, Save and Save As, and the questions before
 * closing or opening over unsaved changes. Its actions are on the
 * window's class (win.undo, win.save…); its state is a part of its own
 * beside the window, which it reaches through window.h. The window's
 * graft_window_try_edit(), graft_window_apply_edit() and
 * graft_window_edits_allowed() come here. */
#pragma once

#include "window.h"

G_BEGIN_DECLS

#define GRAFT_TYPE_WINDOW_EDITS (graft_window_edits_get_type ())
G_DECLARE_FINAL_TYPE (GraftWindowEdits, graft_window_edits, GRAFT, WINDOW_EDITS, GObject)

void graft_window_class_add_edit_actions (GtkWidgetClass *widget_class);
/* The part for window (which keeps the reference and disposes it with
 * itself: edits and proofs under way are dropped). */
GraftWindowEdits *graft_window_edits_new (GraftWindow *window);
/* FALSE (with a toast saying why) while a run, a check, a layout or
 * another edit must finish first. */
gboolean graft_window_edits_can_start (GraftWindowEdits *self);
/* Applies edit as the user's (graft_window_try_edit()). */
gboolean graft_window_edits_try (GraftWindowEdits *self, GraftEdit *edit, GError **error);
/* Applies edit as the user's, a refusal shown in a dialog
 * (graft_window_apply_edit()). */
void graft_window_edits_apply (GraftWindowEdits *self, GraftEdit *edit);
/* TRUE while an edit is applied on a worker (edits, undo, a check wait). */
gboolean graft_window_edits_is_busy (GraftWindowEdits *self);
/* The document shows another model: nothing of the last one's edits goes on. */
void graft_window_edits_reset (GraftWindowEdits *self);
/* The graph changed or another file opens: a proof under way and its
 * "Run with New Shape" describe the wrong model. */
void graft_window_edits_forget_verdict (GraftWindowEdits *self);
/* "Run with New Shape" was taken. */
void graft_window_edits_dismiss_shape_toast (GraftWindowEdits *self);
/* Once the edited graph is shown: the groups open before the edit open
 * again; once it is laid out, the place shown before it is shown again
 * (graft_window_edits_restore_place() waits for the layout itself). */
void graft_window_edits_restore_groups (GraftWindowEdits *self);
void graft_window_edits_restore_place (GraftWindowEdits *self);
/* FALSE if opening path must wait for the user's answer (unsaved changes). */
gboolean graft_window_edits_confirm_open (GraftWindowEdits *self, const char *path);
/* TRUE if closing must wait for the user's answer. */
gboolean graft_window_edits_close_request (GraftWindowEdits *self);

G_END_DECLS
