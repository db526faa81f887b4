/* Rewriting the model: undoable edits through the document (which
 * announces each change; the window then shows the new graph and the
 * title's unsaved-changes mark), Save and Save As (the document writes,
 * atomically), and the question when closing with unsaved changes. The
 * state of it all is GraftWindowEdits, a part beside the window. */
#include "window-edits.h"
#include "window-files.h"
#include "view-place.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/dim-check.h"
#include "edit/edit-operation.h"
#include "ir/graph-copy.h"
#include "formats.h"
#include "onnx/writer.h"
#include "lower/lower.h"

struct _GraftWindowEdits
{
  GObject parent_instance;

  /* Owned references */
  GraftDocument *document;          /* the window's (a worker's edit or proof may outlive the window) */
  GCancellable *verify_cancellable; /* while an edit is proved at other sizes */
  GCancellable *edit_cancellable;   /* while a slow edit is applied on a worker */
  char **expanded_before_edit;      /* group paths to expand again once the edited graph shows */
  GraftViewPlace *place_before_edit; /* the spot shown again once the edited graph is laid out */

  /* Borrowed references */
  GraftWindow *window;              /* a weak pointer: the window owns this part */
  AdwToast *shape_toast;            /* "… verifying" / "Run with New Shape": a weak pointer */
  AdwToast *history_toast;          /* "Undone: …" / "Redone: …": a weak pointer */
  AdwToast *edit_toast;             /* "… — applying…" with Cancel: a weak pointer */
  AdwToast *cancelled_toast;        /* "Edit cancelled…": a weak pointer, dismissed by the next edit */

  /* State */
  gboolean close_confirmed;
  gboolean close_after_save;
  gboolean discard_confirmed;       /* the user agreed to open over unsaved changes */
};

G_DEFINE_FINAL_TYPE (GraftWindowEdits, graft_window_edits, G_TYPE_OBJECT)

/* The class's actions reach the window's part through it. */
#define PART_KEY "graft-window-edits"

static GraftWindowEdits *
part_of (gpointer window)
{
  return g_object_get_data (G_OBJECT (window), PART_KEY);
}

static void cancel_background_edit (GraftWindowEdits *self);
/* The overlay queues toasts: a cancelled edit's note would hold back the
 * next edit's outcome for its whole timeout. */
static void
dismiss_cancelled_toast (GraftWindowEdits *self)
{
  if (self->cancelled_toast != NULL)
    adw_toast_dismiss (self->cancelled_toast);
}

void
graft_window_edits_reset (GraftWindowEdits *self)
{
  cancel_background_edit (self);
  self->close_confirmed = FALSE;
}

gboolean
graft_window_edits_is_busy (GraftWindowEdits *self)
{
  return self->edit_cancellable != NULL;
}

void
graft_window_edits_forget_verdict (GraftWindowEdits *self)
{
  if (self->shape_toast != NULL)
    adw_toast_dismiss (self->shape_toast);
  if (self->verify_cancellable != NULL)
    g_cancellable_cancel (self->verify_cancellable);
  g_clear_object (&self->verify_cancellable);
}

void
graft_window_edits_dismiss_shape_toast (GraftWindowEdits *self)
{
  if (self->shape_toast != NULL)
    adw_toast_dismiss (self->shape_toast);
}

void
graft_window_edits_restore_groups (GraftWindowEdits *self)
{
  graft_graph_canvas_expand_groups (graft_window_get_canvas (self->window),
                                    (const char *const *) self->expanded_before_edit);
  g_clear_pointer (&self->expanded_before_edit, g_strfreev);
}

void
graft_window_edits_restore_place (GraftWindowEdits *self)
{
  if (self->place_before_edit == NULL || graft_window_canvas_is_busy (self->window))
    return;
  graft_view_place_restore (self->place_before_edit, graft_window_get_canvas (self->window));
  g_clear_pointer (&self->place_before_edit, graft_view_place_free);
}

static void show_edit_error (GraftWindowEdits *self, const char *heading, const GError *error);
static gboolean edits_allowed (GraftWindowEdits *self);
static void apply_edit (GraftWindowEdits *self, GraftEdit *edit, const char *symbol);

gboolean
graft_window_edits_can_start (GraftWindowEdits *self)
{
  return edits_allowed (self);
}

static void
show_edit_error (GraftWindowEdits *self, const char *heading, const GError *error)
{
  graft_window_show_edit_error (self->window, heading, error);
}

static gboolean
edits_allowed (GraftWindowEdits *self)
{
  if (graft_document_get_history (self->document) == NULL)
    return FALSE;
  if (graft_run_pane_is_running (graft_window_get_run_pane (self->window)))
    {
      graft_window_show_toast (self->window, "Wait for the run to finish, or cancel it, before editing");
      return FALSE;
    }
  if (self->edit_cancellable != NULL)
    {
      graft_window_show_toast (self->window, "Wait until the edit under way is applied, or cancel it");
      return FALSE;
    }
  if (graft_document_is_checking (self->document))
    {
      graft_window_show_toast (self->window, "Wait until the model is checked before editing");
      return FALSE;
    }
  /* An edit replaces the graph object that a layout worker may be reading. */
  if (graft_window_canvas_is_busy (self->window))
    {
      graft_window_show_toast (self->window, "Wait until the graph is laid out before editing");
      return FALSE;
    }
  return TRUE;
}

/* ---------- proving an edit at other sizes ---------- */

typedef struct {
  char *description;
  GArray *dims;         /* GraftDimCheckDim, input names owned by names */
  GPtrArray *names;
  GraftModel *model;    /* a copy of the edited model, the worker's own */
  char *symbol;         /* the dim "Run with New Shape" sets; NULL for set-shape */
} VerifyData;

static void
verify_data_free (VerifyData *data)
{
  g_free (data->description);
  g_array_unref (data->dims);
  g_ptr_array_unref (data->names);
  g_object_unref (data->model);
  g_free (data->symbol);
  g_free (data);
}

static void
verify_thread (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
  VerifyData *data = task_data;
  GArray *dims = data->dims;
  GError *error = NULL;
  GraftDimCheck *check = graft_dim_check_run (data->model, (GraftDimCheckDim *) dims->data, dims->len, &error);

  if (check == NULL)
    g_task_return_error (task, error);
  else
    g_task_return_pointer (task, check, (GDestroyNotify) graft_dim_check_free);
}

/* "batch=1, 5" for one dim; "batch=1, seq=1; batch=5, seq=7" for several. */
static char *
describe_checked_sizes (GraftDimCheck *check)
{
  GString *text = g_string_new (NULL);
  const char *first = check->sizes->len > 0 ? g_ptr_array_index (check->sizes, 0) : "";
  const char *eq = strchr (first, '=');
  gboolean one_dim = eq != NULL && strchr (first, ',') == NULL;

  for (guint i = 0; i < check->sizes->len; i++)
    {
      const char *sizes = g_ptr_array_index (check->sizes, i);

      if (i == 0 || !one_dim)
        g_string_append_printf (text, "%s%s", i > 0 ? "; " : "", sizes);
      else
        g_string_append_printf (text, ", %s", strchr (sizes, '=') + 1);
    }
  return g_string_free (text, FALSE);
}

static void
show_verified_toast (GraftWindowEdits *self, VerifyData *data, GraftDimCheck *check)
{
  g_autofree char *sizes = describe_checked_sizes (check);
  g_autofree char *title = g_strdup_printf ("%s: verified at %s%s%s", data->description, sizes,
                                            check->batch_invariant ? " (batch invariance ok)" : "",
                                            check->complete ? "" : ", partly: see graft-cli edit --verify");
  AdwToast *toast = adw_toast_new (title);

  if (data->symbol != NULL)
    {
      /* Proving the fix in the run pane: the traced size was usually 1 or 2. */
      g_autofree char *target = g_strdup_printf ("%s=4", data->symbol);

      adw_toast_set_button_label (toast, "Run with New Shape");
      adw_toast_set_action_name (toast, "win.run-new-shape");
      adw_toast_set_action_target_value (toast, g_variant_new_string (target));
      g_set_weak_pointer (&self->shape_toast, toast);
    }
  adw_toast_set_timeout (toast, 10);
  graft_window_add_toast (self->window, toast);
}

/* The whole sentence of a failed verification: which size, which node,
 * which constant. */
static void
on_edit_failure_response (AdwMessageDialog *dialog, const char *response, gpointer user_data)
{
  GtkWidget *window = GTK_WIDGET (gtk_window_get_transient_for (GTK_WINDOW (dialog)));

  /* The user's call, as graft-cli edit --force: the edit is wanted anyway. */
  if (window != NULL && g_str_equal (response, "apply"))
    gtk_widget_activate_action (window, "win.redo", NULL);
}

/* The whole sentence of a failed verification: which size, which node,
 * which constant; the edit was undone, and can be applied anyway (to fix
 * the rest by hand, say). */
static void
show_edit_failure_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindowEdits *self = part_of (widget);
  gboolean undone = graft_edit_history_get_redo_description (graft_document_get_history (self->document)) != NULL;
  g_autofree char *body = g_strdup_printf ("%s%s", g_variant_get_string (parameter, NULL),
                                           undone ? "\n\nThe edit was undone." : "");
  GtkWidget *dialog = adw_message_dialog_new (GTK_WINDOW (widget), "The Edit Is Wrong at Other Sizes", body);

  adw_message_dialog_add_response (ADW_MESSAGE_DIALOG (dialog), "close", "_Close");
  if (undone)
    {
      adw_message_dialog_add_response (ADW_MESSAGE_DIALOG (dialog), "apply", "_Apply Anyway");
      adw_message_dialog_set_response_appearance (ADW_MESSAGE_DIALOG (dialog), "apply",
                                                  ADW_RESPONSE_DESTRUCTIVE);
    }
  adw_message_dialog_set_default_response (ADW_MESSAGE_DIALOG (dialog), "close");
  adw_message_dialog_set_close_response (ADW_MESSAGE_DIALOG (dialog), "close");
  g_signal_connect (dialog, "response", G_CALLBACK (on_edit_failure_response), NULL);
  gtk_window_present (GTK_WINDOW (dialog));
}

/* A failed verification, waiting to undo its edit. */
typedef struct {
  GraftWindowEdits *self;  /* owned */
  char *description;
  char *failed_node;     /* may be NULL */
  char *failure;
} FailedEdit;

static void
failed_edit_free (FailedEdit *failed)
{
  g_object_unref (failed->self);
  g_free (failed->description);
  g_free (failed->failed_node);
  g_free (failed->failure);
  g_free (failed);
}

/* A model known to be wrong does not stay the current one: the edit is
 * undone at once (as graft-cli edit saves nothing without --force), which
 * the toast says; Details says what failed where and offers to apply it
 * anyway. Never "Run with New Shape" here. Undo takes exactly this edit
 * back, as long as it is still the last one. The undo frees the graph, so
 * it waits while a layout worker or the background check reads it. */
static gboolean
undo_failed_edit (gpointer user_data)
{
  FailedEdit *failed = user_data;
  GraftWindowEdits *self = failed->self;
  g_autofree char *message = NULL;
  g_autoptr(GError) undo_error = NULL;
  GraftEditHistory *history = graft_document_get_history (self->document);
  gboolean undone;
  AdwToast *toast;

  /* A window closed meanwhile has nothing left to undo or to tell. */
  if (self->window == NULL)
    return G_SOURCE_REMOVE;
  /* Nor while a worker copies the model for the next edit. */
  if (graft_document_get_model (self->document) != NULL
      && (graft_window_canvas_is_busy (self->window) || graft_document_is_checking (self->document) || self->edit_cancellable != NULL))
    return G_SOURCE_CONTINUE;
  undone = history != NULL
           && g_strcmp0 (graft_edit_history_get_undo_description (history), failed->description) == 0
           && graft_document_undo (self->document, &undo_error);
  if (failed->failed_node != NULL)
    message = g_strdup_printf ("%s FAILED at other sizes: node ‘%s’%s", failed->description, failed->failed_node,
                               undone ? " — undone" : "");
  else
    message = g_strdup_printf ("%s FAILED at other sizes%s", failed->description, undone ? " — undone" : "");
  toast = adw_toast_new (message);
  adw_toast_set_button_label (toast, "Details");
  adw_toast_set_action_name (toast, "win.show-edit-failure");
  adw_toast_set_action_target_value (toast, g_variant_new_string (failed->failure));
  adw_toast_set_timeout (toast, 0);
  adw_toast_set_priority (toast, ADW_TOAST_PRIORITY_HIGH);
  graft_window_add_toast (self->window, toast);
  return G_SOURCE_REMOVE;
}

static void
on_edit_verified (GObject *source, GAsyncResult *result, gpointer user_data)
{
  g_autoptr(GraftWindowEdits) self = user_data;
  VerifyData *data = g_task_get_task_data (G_TASK (result));
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftDimCheck) check = g_task_propagate_pointer (G_TASK (result), &error);

  if (g_task_get_cancellable (G_TASK (result)) != self->verify_cancellable)
    return;
  g_clear_object (&self->verify_cancellable);
  if (self->shape_toast != NULL)
    adw_toast_dismiss (self->shape_toast);
  if (check == NULL)
    {
      g_autofree char *message = g_strdup_printf ("%s: could not verify the edit: %s",
                                                  data->description, error->message);
      graft_window_show_toast (self->window, message);
    }
  else if (!check->passed)
    {
      FailedEdit *failed = g_new0 (FailedEdit, 1);

      failed->self = g_object_ref (self);
      failed->description = g_strdup (data->description);
      failed->failed_node = g_strdup (check->failed_node);
      failed->failure = g_strdup (check->failure);
      if (undo_failed_edit (failed) == G_SOURCE_REMOVE)
        failed_edit_free (failed);
      else
        g_timeout_add_full (G_PRIORITY_DEFAULT, 20, undo_failed_edit, failed, (GDestroyNotify) failed_edit_free);
    }
  else
    show_verified_toast (self, data, check);
}

/* The verdict comes as a toast; model is a copy nothing else touches. */
static void
verify_edit_async (GraftWindowEdits *self, GraftEdit *edit, GraftModel *model, const char *symbol)
{
  g_autofree char *title = g_strdup_printf ("%s — verifying at other sizes…", graft_edit_get_description (edit));
  VerifyData *data = g_new0 (VerifyData, 1);
  g_autoptr(GTask) task = NULL;
  AdwToast *toast = adw_toast_new (title);

  self->verify_cancellable = g_cancellable_new ();
  /* The worker's own: an undo or redo rewrites the edit's. */
  data->description = g_strdup (graft_edit_get_description (edit));
  data->dims = g_array_copy (graft_edit_get_changed_dims (edit));
  data->names = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; i < data->dims->len; i++)
    {
      GraftDimCheckDim *dim = &g_array_index (data->dims, GraftDimCheckDim, i);
      dim->input = g_strdup (dim->input);
      g_ptr_array_add (data->names, (char *) dim->input);
    }
  data->model = g_object_ref (model);
  data->symbol = g_strdup (symbol);
  task = g_task_new (NULL, self->verify_cancellable, on_edit_verified, g_object_ref (self));
  g_task_set_task_data (task, data, (GDestroyNotify) verify_data_free);
  g_task_run_in_thread (task, verify_thread);

  /* Shown now, not behind the toasts of earlier edits. */
  adw_toast_set_timeout (toast, 0);
  adw_toast_set_priority (toast, ADW_TOAST_PRIORITY_HIGH);
  g_set_weak_pointer (&self->shape_toast, toast);
  graft_window_add_toast (self->window, toast);
}

/* Read before the edit frees the graph shown; only the main graph's groups
 * and place carry over (a subgraph shown may not survive the edit). */
static void
remember_expanded_groups (GraftWindowEdits *self)
{
  g_clear_pointer (&self->expanded_before_edit, g_strfreev);
  g_clear_pointer (&self->place_before_edit, graft_view_place_free);
  if (graft_graph_canvas_get_graph (graft_window_get_canvas (self->window)) == graft_model_get_graph (graft_document_get_model (self->document)))
    {
      self->expanded_before_edit = graft_graph_canvas_dup_expanded_groups (graft_window_get_canvas (self->window));
      self->place_before_edit = graft_view_place_new (graft_window_get_canvas (self->window));
    }
}

static gboolean
try_edit (GraftWindowEdits *self, GraftEdit *edit, const char *symbol, GError **error)
{
  g_autoptr(GraftModel) edited = NULL;

  if (!edits_allowed (self))
    return FALSE;
  dismiss_cancelled_toast (self);
  remember_expanded_groups (self);
  /* The copy the last check made (edits wait for it; any change since
   * starts another check, which drops it) saves copying the graph here.
   * The proof at other sizes runs on a worker while the user may undo or
   * edit again. */
  if (!graft_document_apply_edit (self->document, edit, &edited, error))
    return FALSE;
  if (edited != NULL)
    verify_edit_async (self, edit, edited, symbol);
  else
    graft_window_show_toast (self->window, graft_edit_get_description (edit));
  return TRUE;
}

static void
apply_edit (GraftWindowEdits *self, GraftEdit *edit, const char *symbol)
{
  g_autoptr(GError) error = NULL;

  if (!try_edit (self, edit, symbol, &error) && error != NULL)
    show_edit_error (self, "Could Not Change the Model", error);
}

gboolean
graft_window_edits_try (GraftWindowEdits *self, GraftEdit *edit, GError **error)
{
  return try_edit (self, edit, NULL, error);
}

/* "Undone: …" / "Redone: …" */
static void
show_history_toast (GraftWindowEdits *self, gboolean undo, const char *description)
{
  g_autofree char *message = g_strdup_printf ("%s: %s", undo ? "Undone" : "Redone", description);
  AdwToast *toast = adw_toast_new (message);

  /* The overlay queues toasts: the last undo's would hide this one for
   * its whole timeout. */
  if (self->history_toast != NULL)
    adw_toast_dismiss (self->history_toast);
  adw_toast_set_timeout (toast, 5);
  g_set_weak_pointer (&self->history_toast, toast);
  graft_window_add_toast (self->window, toast);
}

/* ---------- edits too slow for the UI thread ---------- */

/* Make-dynamic and set-shape repair baked shape constants and re-infer the
 * whole graph: a third of a second on a 10k-node transformer. They are
 * applied to a copy of the model on a worker (edits, undo and a new check
 * wait meanwhile, so the model the worker copies does not change); the
 * edited graph then takes the model's place on the UI thread. */
typedef struct {
  GraftWindowEdits *edits;  /* a reference, dropped on the UI thread once the edit is taken or dropped
                          * (not the task's source object: GIO's worker may finalize the task) */
  GraftEdit *edit;
  GraftModel *model;     /* the window's; the worker only reads it */
  char *symbol;
  gboolean redo;         /* a redo: not proved again ("Apply Anyway" redoes an edit that failed its proof) */
  GError *error;         /* the worker's, until it is shown */
  GraftModel *edited;    /* the worker's result */
  GraftModel *to_verify; /* a copy of it for the proof at other sizes, when the edit changed dims */
} BackgroundEdit;

static void
background_edit_free (BackgroundEdit *data)
{
  g_clear_object (&data->edits);
  g_object_unref (data->edit);
  g_object_unref (data->model);
  g_free (data->symbol);
  g_clear_object (&data->edited);
  g_clear_object (&data->to_verify);
  g_clear_error (&data->error);
  g_free (data);
}

static void
background_edit_thread (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
  BackgroundEdit *data = task_data;
  GError *error = NULL;

  data->edited = graft_edit_apply_to_copy (data->edit, data->model, &error);
  if (data->edited == NULL)
    {
      g_task_return_error (task, error);
      return;
    }
  if (!data->redo && graft_edit_get_changed_dims (data->edit)->len > 0)
    data->to_verify = graft_model_copy (data->edited);
  g_task_return_boolean (task, TRUE);
}

static void
end_background_edit (GraftWindowEdits *self)
{
  g_clear_object (&self->edit_cancellable);
  if (self->edit_toast != NULL)
    adw_toast_dismiss (self->edit_toast);
  g_object_notify (G_OBJECT (self->window), "checking");
  graft_window_update_action_states (self->window);
}

static void
cancel_background_edit (GraftWindowEdits *self)
{
  if (self->edit_cancellable == NULL)
    return;
  /* The worker cannot be stopped inside the repair: its result is dropped. */
  g_cancellable_cancel (self->edit_cancellable);
  end_background_edit (self);
}

/* Replaces the model's graph: not while a layout, a check or a run reads
 * it (the user may have expanded a group, changed the run's input shapes
 * or started a run while the worker was busy); until then edits still
 * wait. */
static gboolean
try_take_background_edit (GraftWindowEdits *self, GTask *task)
{
  BackgroundEdit *data = g_task_get_task_data (task);
  g_autoptr(GError) error = g_steal_pointer (&data->error);

  /* Cancelled, or the window moved on to another model or closed. */
  if (g_task_get_cancellable (task) != self->edit_cancellable)
    return G_SOURCE_REMOVE;
  if (error == NULL
      && (graft_window_canvas_is_busy (self->window) || graft_document_is_checking (self->document)
          || graft_run_pane_is_running (graft_window_get_run_pane (self->window))))
    return G_SOURCE_CONTINUE;
  end_background_edit (self);
  if (error != NULL || !graft_document_commit_edit (self->document, data->edit, data->edited, &error))
    {
      show_edit_error (self, data->redo ? "Could Not Redo" : "Could Not Change the Model", error);
      return G_SOURCE_REMOVE;
    }
  if (data->redo)
    show_history_toast (self, FALSE, graft_edit_get_description (data->edit));
  else if (data->to_verify != NULL)
    verify_edit_async (self, data->edit, data->to_verify, data->symbol);
  else
    graft_window_show_toast (self->window, graft_edit_get_description (data->edit));
  return G_SOURCE_REMOVE;
}

static gboolean
take_background_edit (gpointer user_data)
{
  GTask *task = user_data;
  BackgroundEdit *data = g_task_get_task_data (task);
  gboolean again = try_take_background_edit (data->edits, task);

  if (again == G_SOURCE_REMOVE)
    g_clear_object (&data->edits);
  return again;
}

static void
on_background_edit_done (GObject *source, GAsyncResult *result, gpointer user_data)
{
  GTask *task = G_TASK (result);
  BackgroundEdit *data = g_task_get_task_data (task);

  g_task_propagate_boolean (task, &data->error);
  if (take_background_edit (task) == G_SOURCE_CONTINUE)
    g_timeout_add_full (G_PRIORITY_DEFAULT, 20, take_background_edit, g_object_ref (task), g_object_unref);
}

static void
apply_edit_in_background (GraftWindowEdits *self, GraftEdit *edit, const char *symbol, gboolean redo)
{
  g_autofree char *title = NULL;
  BackgroundEdit *data;
  g_autoptr(GTask) task = NULL;
  AdwToast *toast;

  if (!edits_allowed (self))
    return;
  dismiss_cancelled_toast (self);
  remember_expanded_groups (self);
  data = g_new0 (BackgroundEdit, 1);
  data->edits = g_object_ref (self);
  data->edit = g_object_ref (edit);
  data->model = g_object_ref (graft_document_get_model (self->document));
  data->symbol = g_strdup (symbol);
  data->redo = redo;
  self->edit_cancellable = g_cancellable_new ();
  task = g_task_new (NULL, self->edit_cancellable, on_background_edit_done, NULL);
  g_task_set_task_data (task, data, (GDestroyNotify) background_edit_free);
  g_task_run_in_thread (task, background_edit_thread);

  /* The busy indicator, with the way out. */
  title = g_strdup_printf ("%s — applying…", graft_edit_get_description (edit));
  toast = adw_toast_new (title);
  adw_toast_set_button_label (toast, "Cancel");
  adw_toast_set_action_name (toast, "win.cancel-edit");
  adw_toast_set_timeout (toast, 0);
  adw_toast_set_priority (toast, ADW_TOAST_PRIORITY_HIGH);
  g_set_weak_pointer (&self->edit_toast, toast);
  graft_window_add_toast (self->window, toast);
  g_object_notify (G_OBJECT (self->window), "checking");
  graft_window_update_action_states (self->window);
}

static void
cancel_edit_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindowEdits *self = part_of (widget);
  AdwToast *toast;

  if (self->edit_cancellable == NULL)
    return;
  cancel_background_edit (self);
  toast = adw_toast_new ("Edit cancelled: the model is unchanged");
  adw_toast_set_timeout (toast, 5);
  g_set_weak_pointer (&self->cancelled_toast, toast);
  graft_window_add_toast (self->window, toast);
}

void
graft_window_edits_apply (GraftWindowEdits *self, GraftEdit *edit)
{
  /* The dim "Run with New Shape" sets, for an edit that names one. */
  const char *symbol = graft_edit_param_string (graft_edit_get_params (edit), "symbol");

  if (graft_edit_runs_long (edit))
    apply_edit_in_background (self, edit, symbol, FALSE);
  else
    apply_edit (self, edit, symbol);
}

static void
undo_redo_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindowEdits *self = part_of (widget);
  gboolean undo = g_str_equal (action_name, "win.undo");
  GraftEditHistory *history = graft_document_get_history (self->document);
  GraftEdit *redo_edit;
  g_autofree char *description = NULL;
  g_autoptr(GError) error = NULL;
  gboolean ok;

  if (!edits_allowed (self))
    return;
  dismiss_cancelled_toast (self);
  description = g_strdup (undo ? graft_edit_history_get_undo_description (history)
                               : graft_edit_history_get_redo_description (history));
  if (description == NULL)
    return;
  /* Redoing a make-dynamic repairs the graph again: as slow as the first time. */
  redo_edit = undo ? NULL : graft_edit_history_get_redo_edit (history);
  if (redo_edit != NULL && graft_edit_runs_long (redo_edit))
    {
      apply_edit_in_background (self, redo_edit, NULL, TRUE);
      return;
    }
  remember_expanded_groups (self);
  /* The window follows the document's "changed": "Run with New Shape" no
   * longer describes the model. */
  ok = undo ? graft_document_undo (self->document, &error) : graft_document_redo (self->document, &error);
  if (!ok)
    {
      show_edit_error (self, undo ? "Could Not Undo" : "Could Not Redo", error);
      return;
    }
  show_history_toast (self, undo, description);
}

/* ---------- saving ---------- */

static void
close_now (GraftWindowEdits *self)
{
  self->close_confirmed = TRUE;
  gtk_window_close (GTK_WINDOW (self->window));
}

static void
show_save_error (GraftWindowEdits *self, const char *basename, const char *message)
{
  g_autofree char *heading = g_strdup_printf ("Could Not Save “%s”", basename);
  GtkWidget *dialog = adw_message_dialog_new (GTK_WINDOW (self->window), heading, message);

  adw_message_dialog_add_response (ADW_MESSAGE_DIALOG (dialog), "close", "_Close");
  gtk_window_present (GTK_WINDOW (dialog));
}

/* A TorchScript model (or torch.export program) is exported: converted to
 * ONNX by model/lower and written, while the window keeps showing the
 * TorchScript graph. */
static gboolean
export_as_onnx (GraftWindowEdits *self, const char *path, const char *basename)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) onnx = graft_lower_to_onnx (graft_document_get_model (self->document), NULL, &error);

  if (onnx == NULL || !graft_onnx_write_file (onnx, path, GRAFT_ONNX_WRITE_NONE, &error))
    {
      g_autofree char *message = g_strdup_printf ("%s\n\nTo give the inputs' shapes, convert it with graft-cli "
                                                  "convert IN.pt -o OUT.onnx --shape NAME=1x3x224x224.",
                                                  error->message);
      show_save_error (self, basename, message);
      return FALSE;
    }
  {
    g_autofree char *message = g_strdup_printf ("Exported “%s” (ONNX opset %" G_GINT64_FORMAT ", %u nodes)", basename,
                                                graft_model_get_opset (onnx, "onnx"),
                                                graft_graph_count_nodes_recursive (graft_model_get_graph (onnx)));
    graft_window_show_toast (self->window, message);
  }
  return TRUE;
}

static gboolean
write_model (GraftWindowEdits *self, const char *target, gboolean overwrite_source)
{
  g_autoptr(GError) error = NULL;
  /* target may be the document's saved path, which the save replaces. */
  g_autofree char *path = g_strdup (target);
  g_autofree char *basename = g_path_get_basename (path);
  GraftModelFormat format = graft_model_get_format (graft_document_get_model (self->document));
  const GraftFormat *target_format = graft_format_for_path (path);

  /* TorchScript, and a .pt2 program saved under another name than .pt2,
   * are exported to ONNX; the window keeps the program. */
  if (format == GRAFT_MODEL_FORMAT_TORCHSCRIPT ||
      (format == GRAFT_MODEL_FORMAT_EXPORTED_PROGRAM &&
       (target_format == NULL || !(target_format->writes_from & GRAFT_FORMAT_FROM (format)))))
    return export_as_onnx (self, path, basename);
  if (graft_document_get_save_format (self->document) == NULL)
    {
      g_autofree char *body = g_strdup_printf ("Graft saves ONNX files and torch.export programs, and this is a %s "
                                               "model: its aten:: and prim:: operators have no ONNX form yet. "
                                               "Export it with torch.onnx.export, open the .onnx file and edit that.",
                                               graft_model_format_to_string (graft_model_get_format (graft_document_get_model (self->document))));
      GtkWidget *dialog = adw_message_dialog_new (GTK_WINDOW (self->window), "Cannot Save This Model", body);

      adw_message_dialog_add_response (ADW_MESSAGE_DIALOG (dialog), "close", "_Close");
      gtk_window_present (GTK_WINDOW (dialog));
      return FALSE;
    }
  /* The saved file is the model's file from now on: the title, the
   * sidebar's File row and the next Save name it, and it is the one Save
   * As asks before replacing. */
  if (!graft_document_save (self->document, path, overwrite_source, &error))
    {
      show_save_error (self, basename, error->message);
      return FALSE;
    }
  if (graft_graph_canvas_get_selected_node (graft_window_get_canvas (self->window)) == NULL
      && graft_graph_canvas_get_selected_value (graft_window_get_canvas (self->window)) == NULL)
    graft_node_sidebar_show_model (graft_window_get_sidebar (self->window), graft_document_get_model (self->document));
  {
    g_autoptr(GFile) file = g_file_new_for_path (path);
    g_autofree char *uri = g_file_get_uri (file);

    gtk_recent_manager_add_item (gtk_recent_manager_get_default (), uri);
  }
  {
    g_autofree char *message = g_strdup_printf ("Saved “%s”", basename);

    graft_window_show_toast (self->window, message);
  }
  if (self->close_after_save)
    close_now (self);
  return TRUE;
}

static void
on_replace_response (AdwMessageDialog *dialog, const char *response, GraftWindowEdits *self)
{
  const char *path = g_object_get_data (G_OBJECT (dialog), "graft-path");

  if (g_str_equal (response, "replace"))
    write_model (self, path, TRUE);
  else
    self->close_after_save = FALSE;
}

/* The opened file is replaced only after the user says so. */
static void
save_to (GraftWindowEdits *self, const char *path)
{
  if (graft_document_is_model_file (self->document, path))
    {
      g_autofree char *basename = g_path_get_basename (path);
      g_autofree char *heading = g_strdup_printf ("Replace the Original “%s”?", basename);
      GtkWidget *dialog = adw_message_dialog_new (GTK_WINDOW (self->window), heading,
                                                  "This is the file the model was opened from. Its old "
                                                  "content will be lost; Save As keeps it.");

      adw_message_dialog_add_responses (ADW_MESSAGE_DIALOG (dialog), "cancel", "_Cancel", "replace", "_Replace", NULL);
      adw_message_dialog_set_response_appearance (ADW_MESSAGE_DIALOG (dialog), "replace",
                                                  ADW_RESPONSE_DESTRUCTIVE);
      adw_message_dialog_set_default_response (ADW_MESSAGE_DIALOG (dialog), "cancel");
      g_object_set_data_full (G_OBJECT (dialog), "graft-path", g_strdup (path), g_free);
      g_signal_connect (dialog, "response", G_CALLBACK (on_replace_response), self);
      gtk_window_present (GTK_WINDOW (dialog));
      return;
    }
  write_model (self, path, FALSE);
}

static void
on_save_as_response (GtkNativeDialog *dialog, int response, GraftWindowEdits *self)
{
  g_autoptr(GFile) file = response == GTK_RESPONSE_ACCEPT ? gtk_file_chooser_get_file (GTK_FILE_CHOOSER (dialog)) : NULL;
  g_autofree char *path = file != NULL ? g_file_get_path (file) : NULL;
  const GraftFormat *chosen = path != NULL ? graft_format_for_path (path) : NULL;
  const GraftFormat *own = graft_document_get_save_format (self->document);

  /* A name without the extension of a format Graft writes gets the
   * model's own. */
  if (path != NULL && own != NULL && (chosen == NULL || chosen->write == NULL))
    {
      char *with_suffix = g_strconcat (path, own->extensions[0], NULL);

      g_free (path);
      path = with_suffix;
    }
  if (path != NULL)
    save_to (self, path);
  else
    self->close_after_save = FALSE;
  g_object_unref (dialog);
}

static void
save_as_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindowEdits *self = part_of (widget);
  const char *source = graft_document_get_path (self->document);
  g_autofree char *basename = g_path_get_basename (source != NULL ? source : "model.onnx");
  g_autofree char *suggestion = NULL;
  char *dot = strrchr (basename, '.');
  const GraftFormat *own = graft_document_get_save_format (self->document);
  GtkFileChooserNative *dialog;

  if (own == NULL)
    {
      write_model (self, "", FALSE);  /* explains why */
      return;
    }
  if (dot != NULL && dot != basename)
    *dot = '\0';
  suggestion = g_strconcat (basename, "-edited", own->extensions[0], NULL);
  dialog = gtk_file_chooser_native_new ("Save Model As", GTK_WINDOW (self->window), GTK_FILE_CHOOSER_ACTION_SAVE,
                                        "_Save", "_Cancel");
  /* The model's own format first; a program may also be exported as ONNX. */
  for (const GraftFormat *f = graft_formats (); f->id != NULL; f++)
    {
      if (f->write == NULL || (f != own && strcmp (f->id, "onnx") != 0))
        continue;
      g_autoptr(GtkFileFilter) filter = gtk_file_filter_new ();
      g_autofree char *name = g_strdup_printf ("%ss", f->title);
      gtk_file_filter_set_name (filter, name);
      for (guint i = 0; f->extensions[i] != NULL; i++)
        {
          g_autofree char *pattern = g_strconcat ("*", f->extensions[i], NULL);
          gtk_file_filter_add_pattern (filter, pattern);
        }
      gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (dialog), filter);
      if (f == own)
        gtk_file_chooser_set_filter (GTK_FILE_CHOOSER (dialog), filter);
    }
  graft_window_chooser_start_beside_model (self->window, GTK_FILE_CHOOSER (dialog));
  gtk_file_chooser_set_current_name (GTK_FILE_CHOOSER (dialog), suggestion);
  gtk_native_dialog_set_modal (GTK_NATIVE_DIALOG (dialog), TRUE);
  g_signal_connect (dialog, "response", G_CALLBACK (on_save_as_response), self);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (dialog));
}

/* Scripts and tests name the file. */
static void
save_as_path_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  save_to (part_of (widget), g_variant_get_string (parameter, NULL));
}

static void
save_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindowEdits *self = part_of (widget);
  const char *path = graft_document_get_path (self->document);

  if (graft_document_get_save_format (self->document) == NULL || path == NULL)
    save_as_action (widget, "win.save-as", NULL);
  /* A file this window wrote (it is the model's file since) is written
   * again at once; the file as opened is replaced only when confirmed. */
  else if (graft_document_is_model_file (self->document, graft_document_get_saved_path (self->document)))
    write_model (self, graft_document_get_saved_path (self->document), TRUE);
  else
    save_to (self, path);
}

/* ---------- closing ---------- */

static void
on_close_response (AdwMessageDialog *dialog, const char *response, GraftWindowEdits *self)
{
  if (g_str_equal (response, "discard"))
    close_now (self);
  else if (g_str_equal (response, "save"))
    {
      /* Saving over the opened file asks again; a file saved before
       * in this session is written at once. */
      self->close_after_save = TRUE;
      if (graft_document_is_model_file (self->document, graft_document_get_saved_path (self->document)))
        write_model (self, graft_document_get_saved_path (self->document), TRUE);
      else
        save_as_action (GTK_WIDGET (self->window), "win.save-as", NULL);
    }
}

gboolean
graft_window_edits_close_request (GraftWindowEdits *self)
{
  g_autofree char *heading = NULL;
  GtkWidget *dialog;

  if (self->close_confirmed || !graft_document_is_modified (self->document))
    return FALSE;
  heading = g_strdup_printf ("Save Changes to “%s”?", graft_document_get_title (self->document));
  dialog = adw_message_dialog_new (GTK_WINDOW (self->window), heading,
                                   "The model was changed. Unsaved changes are lost when the window closes.");
  adw_message_dialog_add_responses (ADW_MESSAGE_DIALOG (dialog), "cancel", "_Cancel", "discard", "_Discard",
                                    "save", "_Save As…", NULL);
  adw_message_dialog_set_response_appearance (ADW_MESSAGE_DIALOG (dialog), "discard", ADW_RESPONSE_DESTRUCTIVE);
  adw_message_dialog_set_response_appearance (ADW_MESSAGE_DIALOG (dialog), "save", ADW_RESPONSE_SUGGESTED);
  adw_message_dialog_set_default_response (ADW_MESSAGE_DIALOG (dialog), "save");
  adw_message_dialog_set_close_response (ADW_MESSAGE_DIALOG (dialog), "cancel");
  g_signal_connect (dialog, "response", G_CALLBACK (on_close_response), self);
  gtk_window_present (GTK_WINDOW (dialog));
  return TRUE;
}

static void
on_discard_for_open_response (AdwMessageDialog *dialog, const char *response, GraftWindowEdits *self)
{
  const char *path = g_object_get_data (G_OBJECT (dialog), "graft-path");

  if (!g_str_equal (response, "discard"))
    return;
  self->discard_confirmed = TRUE;
  graft_window_open_path (self->window, path);
}

gboolean
graft_window_edits_confirm_open (GraftWindowEdits *self, const char *path)
{
  g_autofree char *heading = NULL;
  GtkWidget *dialog;

  if (self->discard_confirmed || !graft_document_is_modified (self->document))
    {
      self->discard_confirmed = FALSE;
      /* An edit still being applied would land on the model being left. */
      cancel_background_edit (self);
      return TRUE;
    }
  heading = g_strdup_printf ("Discard Changes to “%s”?", graft_document_get_title (self->document));
  dialog = adw_message_dialog_new (GTK_WINDOW (self->window), heading,
                                   "Opening another model here loses the unsaved changes. Save them first, "
                                   "or open the other model in a new window.");
  adw_message_dialog_add_responses (ADW_MESSAGE_DIALOG (dialog), "cancel", "_Cancel", "discard", "_Discard", NULL);
  adw_message_dialog_set_response_appearance (ADW_MESSAGE_DIALOG (dialog), "discard", ADW_RESPONSE_DESTRUCTIVE);
  adw_message_dialog_set_default_response (ADW_MESSAGE_DIALOG (dialog), "cancel");
  adw_message_dialog_set_close_response (ADW_MESSAGE_DIALOG (dialog), "cancel");
  g_object_set_data_full (G_OBJECT (dialog), "graft-path", g_strdup (path), g_free);
  g_signal_connect (dialog, "response", G_CALLBACK (on_discard_for_open_response), self);
  gtk_window_present (GTK_WINDOW (dialog));
  return FALSE;
}

void
graft_window_class_add_edit_actions (GtkWidgetClass *widget_class)
{
  gtk_widget_class_install_action (widget_class, "win.cancel-edit", NULL, cancel_edit_action);
  gtk_widget_class_install_action (widget_class, "win.show-edit-failure", "s", show_edit_failure_action);
  gtk_widget_class_install_action (widget_class, "win.undo", NULL, undo_redo_action);
  gtk_widget_class_install_action (widget_class, "win.redo", NULL, undo_redo_action);
  gtk_widget_class_install_action (widget_class, "win.save", NULL, save_action);
  gtk_widget_class_install_action (widget_class, "win.save-as", NULL, save_as_action);
  /* The same dialog: a TorchScript model is written converted to ONNX. */
  gtk_widget_class_install_action (widget_class, "win.export-onnx", NULL, save_as_action);
  gtk_widget_class_install_action (widget_class, "win.save-as-path", "s", save_as_path_action);
}

static void
graft_window_edits_dispose (GObject *object)
{
  GraftWindowEdits *self = GRAFT_WINDOW_EDITS (object);

  /* An edit still being applied on a worker is dropped, and its proof. */
  if (self->edit_cancellable != NULL)
    g_cancellable_cancel (self->edit_cancellable);
  g_clear_object (&self->edit_cancellable);
  if (self->verify_cancellable != NULL)
    g_cancellable_cancel (self->verify_cancellable);
  g_clear_object (&self->verify_cancellable);
  g_clear_weak_pointer (&self->edit_toast);
  g_clear_weak_pointer (&self->cancelled_toast);
  g_clear_weak_pointer (&self->shape_toast);
  g_clear_weak_pointer (&self->history_toast);
  if (self->window != NULL)
    g_object_set_data (G_OBJECT (self->window), PART_KEY, NULL);
  g_clear_weak_pointer (&self->window);
  G_OBJECT_CLASS (graft_window_edits_parent_class)->dispose (object);
}

static void
graft_window_edits_finalize (GObject *object)
{
  GraftWindowEdits *self = GRAFT_WINDOW_EDITS (object);

  g_strfreev (self->expanded_before_edit);
  g_clear_pointer (&self->place_before_edit, graft_view_place_free);
  g_clear_object (&self->document);
  G_OBJECT_CLASS (graft_window_edits_parent_class)->finalize (object);
}

static void
graft_window_edits_class_init (GraftWindowEditsClass *klass)
{
  G_OBJECT_CLASS (klass)->dispose = graft_window_edits_dispose;
  G_OBJECT_CLASS (klass)->finalize = graft_window_edits_finalize;
}

static void
graft_window_edits_init (GraftWindowEdits *self)
{
}

GraftWindowEdits *
graft_window_edits_new (GraftWindow *window)
{
  GraftWindowEdits *self = g_object_new (GRAFT_TYPE_WINDOW_EDITS, NULL);

  g_set_weak_pointer (&self->window, window);
  self->document = g_object_ref (graft_window_get_document (window));
  g_object_set_data (G_OBJECT (window), PART_KEY, self);
  return self;
}
