/* Undo/redo stacks of GraftEdits over one model, with the "modified since
 * saved" state a window title needs. Emits "changed" after every apply,
 * undo, redo and mark-saved. */
#pragma once

#include "edit/edit.h"

G_BEGIN_DECLS

#define GRAFT_TYPE_EDIT_HISTORY (graft_edit_history_get_type ())
G_DECLARE_FINAL_TYPE (GraftEditHistory, graft_edit_history, GRAFT, EDIT_HISTORY, GObject)

GraftEditHistory *graft_edit_history_new (GraftModel *model);
GraftModel *graft_edit_history_get_model (GraftEditHistory *self);

/* Applies edit and pushes it; clears the redo stack. */
gboolean graft_edit_history_apply (GraftEditHistory *self, GraftEdit *edit, GError **error);
/* With the undo snapshot made beforehand: see graft_edit_apply_with_snapshot(). */
gboolean graft_edit_history_apply_with_snapshot (GraftEditHistory *self, GraftEdit *edit, GraftGraph *snapshot,
                                                 GError **error);
/* Pushes edit, which graft_edit_apply_to_copy() applied to edited, a copy
 * of this history's model taken while the model did not change, and
 * moves the copy's main graph and opset imports into the model (the
 * model's graph object is replaced, as by an apply). An edit from the top
 * of the redo stack (graft_edit_history_get_redo_edit()) is a redo;
 * any other clears the redo stack. edited is left without a graph. */
gboolean graft_edit_history_commit (GraftEditHistory *self, GraftEdit *edit, GraftModel *edited, GError **error);
gboolean graft_edit_history_undo (GraftEditHistory *self, GError **error);
gboolean graft_edit_history_redo (GraftEditHistory *self, GError **error);

gboolean graft_edit_history_can_undo (GraftEditHistory *self);
gboolean graft_edit_history_can_redo (GraftEditHistory *self);
/* Descriptions for "Undo …"/"Redo …" menu items; NULL if nothing. */
const char *graft_edit_history_get_undo_description (GraftEditHistory *self);
const char *graft_edit_history_get_redo_description (GraftEditHistory *self);
/* The edit a redo would apply (borrowed), or NULL. */
GraftEdit *graft_edit_history_get_redo_edit (GraftEditHistory *self);

/* The edits applied and not undone, oldest first (GraftEdit*, borrowed):
 * the session a recipe saves. */
GPtrArray *graft_edit_history_get_applied (GraftEditHistory *self);

/* Call after saving: the current state becomes the unmodified one. */
void graft_edit_history_mark_saved (GraftEditHistory *self);
gboolean graft_edit_history_is_modified (GraftEditHistory *self);

G_END_DECLS
