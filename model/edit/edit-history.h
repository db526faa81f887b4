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
gboolean graft_edit_history_undo (GraftEditHistory *self, GError **error);
gboolean graft_edit_history_redo (GraftEditHistory *self, GError **error);

gboolean graft_edit_history_can_undo (GraftEditHistory *self);
gboolean graft_edit_history_can_redo (GraftEditHistory *self);
/* Descriptions for "Undo …"/"Redo …" menu items; NULL if nothing. */
const char *graft_edit_history_get_undo_description (GraftEditHistory *self);
const char *graft_edit_history_get_redo_description (GraftEditHistory *self);

/* The edits applied and not undone, oldest first (GraftEdit*, borrowed):
 * the session a recipe saves. */
GPtrArray *graft_edit_history_get_applied (GraftEditHistory *self);

/* Call after saving: the current state becomes the unmodified one. */
void graft_edit_history_mark_saved (GraftEditHistory *self);
gboolean graft_edit_history_is_modified (GraftEditHistory *self);

G_END_DECLS
