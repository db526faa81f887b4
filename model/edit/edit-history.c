#include "edit/edit-history.h"

struct _GraftEditHistory {
  GObject parent_instance;

  GraftModel *model;
  GPtrArray *done;      /* GraftEdit*, applied, oldest first */
  GPtrArray *undone;    /* GraftEdit*, most recently undone last */
  gint saved_depth;     /* done->len when saved; -1 once that state is unreachable */
};

G_DEFINE_FINAL_TYPE (GraftEditHistory, graft_edit_history, G_TYPE_OBJECT)

enum { CHANGED, N_SIGNALS };
static guint signals[N_SIGNALS];

static void
graft_edit_history_finalize (GObject *object)
{
  GraftEditHistory *self = GRAFT_EDIT_HISTORY (object);

  g_ptr_array_unref (self->done);
  g_ptr_array_unref (self->undone);
  g_clear_object (&self->model);
  G_OBJECT_CLASS (graft_edit_history_parent_class)->finalize (object);
}

static void
graft_edit_history_class_init (GraftEditHistoryClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = graft_edit_history_finalize;
  signals[CHANGED] = g_signal_new ("changed", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                   G_TYPE_NONE, 0);
}

static void
graft_edit_history_init (GraftEditHistory *self)
{
  self->done = g_ptr_array_new_with_free_func (g_object_unref);
  self->undone = g_ptr_array_new_with_free_func (g_object_unref);
}

GraftEditHistory *
graft_edit_history_new (GraftModel *model)
{
  GraftEditHistory *self = g_object_new (GRAFT_TYPE_EDIT_HISTORY, NULL);

  self->model = g_object_ref (model);
  return self;
}

GraftModel *
graft_edit_history_get_model (GraftEditHistory *self)
{
  return self->model;
}

static void
push_applied (GraftEditHistory *self, GraftEdit *edit)
{
  /* A saved state among the undone edits can no longer be reached. */
  if (self->saved_depth > (gint) self->done->len)
    self->saved_depth = -1;
  g_ptr_array_add (self->done, g_object_ref (edit));
  g_ptr_array_set_size (self->undone, 0);
  g_signal_emit (self, signals[CHANGED], 0);
}

gboolean
graft_edit_history_apply (GraftEditHistory *self, GraftEdit *edit, GError **error)
{
  return graft_edit_history_apply_with_snapshot (self, edit, NULL, error);
}

gboolean
graft_edit_history_apply_with_snapshot (GraftEditHistory *self, GraftEdit *edit, GraftGraph *snapshot,
                                        GError **error)
{
  if (!graft_edit_apply_with_snapshot (edit, self->model, snapshot, error))
    return FALSE;
  push_applied (self, edit);
  return TRUE;
}

gboolean
graft_edit_history_commit (GraftEditHistory *self, GraftEdit *edit, GraftModel *edited, GError **error)
{
  g_autoptr(GVariant) opsets = NULL;

  if (!graft_edit_is_applied (edit) || edited == self->model || graft_model_get_graph (edited) == NULL)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_STATE, "'%s' was not applied to a copy of the model",
                   graft_edit_get_description (edit));
      return FALSE;
    }
  /* An edit may import a domain (a custom op). */
  opsets = graft_model_save_opsets (edited);
  graft_model_restore_opsets (self->model, opsets);
  graft_model_set_graph (self->model, graft_model_steal_graph (edited));
  if (self->undone->len > 0 && g_ptr_array_index (self->undone, self->undone->len - 1) == edit)
    {
      g_ptr_array_add (self->done, g_ptr_array_steal_index (self->undone, self->undone->len - 1));
      g_signal_emit (self, signals[CHANGED], 0);
    }
  else
    push_applied (self, edit);
  return TRUE;
}

gboolean
graft_edit_history_undo (GraftEditHistory *self, GError **error)
{
  GraftEdit *edit;

  if (self->done->len == 0)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_STATE, "nothing to undo");
      return FALSE;
    }
  edit = g_ptr_array_index (self->done, self->done->len - 1);
  if (!graft_edit_undo (edit, self->model, error))
    return FALSE;
  g_ptr_array_add (self->undone, g_ptr_array_steal_index (self->done, self->done->len - 1));
  g_signal_emit (self, signals[CHANGED], 0);
  return TRUE;
}

gboolean
graft_edit_history_redo (GraftEditHistory *self, GError **error)
{
  GraftEdit *edit;

  if (self->undone->len == 0)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_STATE, "nothing to redo");
      return FALSE;
    }
  edit = g_ptr_array_index (self->undone, self->undone->len - 1);
  if (!graft_edit_apply (edit, self->model, error))
    return FALSE;
  g_ptr_array_add (self->done, g_ptr_array_steal_index (self->undone, self->undone->len - 1));
  g_signal_emit (self, signals[CHANGED], 0);
  return TRUE;
}

gboolean
graft_edit_history_can_undo (GraftEditHistory *self)
{
  return self->done->len > 0;
}

gboolean
graft_edit_history_can_redo (GraftEditHistory *self)
{
  return self->undone->len > 0;
}

const char *
graft_edit_history_get_undo_description (GraftEditHistory *self)
{
  return self->done->len ? graft_edit_get_description (g_ptr_array_index (self->done, self->done->len - 1)) : NULL;
}

const char *
graft_edit_history_get_redo_description (GraftEditHistory *self)
{
  return self->undone->len ? graft_edit_get_description (g_ptr_array_index (self->undone, self->undone->len - 1))
                           : NULL;
}

GraftEdit *
graft_edit_history_get_redo_edit (GraftEditHistory *self)
{
  return self->undone->len ? g_ptr_array_index (self->undone, self->undone->len - 1) : NULL;
}

void
graft_edit_history_mark_saved (GraftEditHistory *self)
{
  self->saved_depth = self->done->len;
  g_signal_emit (self, signals[CHANGED], 0);
}

gboolean
graft_edit_history_is_modified (GraftEditHistory *self)
{
  return self->saved_depth != (gint) self->done->len;
}

GPtrArray *
graft_edit_history_get_applied (GraftEditHistory *self)
{
  return self->done;
}
