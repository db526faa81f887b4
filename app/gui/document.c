#include "document.h"

#include <string.h>
#include <sys/stat.h>
#include <glib/gstdio.h>

#include "edit/recipe.h"
#include "model-open.h"
#include "ir/graph-copy.h"
#include "lint/diagnostics.h"

struct _GraftDocument
{
  GObject parent_instance;

  /* Owned references */
  GraftModel *model;
  GraftEditHistory *history;
  char *title;              /* the file's name, shown in the title */
  char *saved_path;         /* the file this document wrote last; NULL until it saved */
  GFileMonitor *file_monitor;
  char *watched_path;
  GStatBuf watched_stat;    /* the file as it was when watching began */
  GCancellable *load_cancellable;  /* while a load is under way */
  char *loading_path;
  GCancellable *check_cancellable; /* while the graph is checked (lint, shape inference) */
  GPtrArray *diagnostics;          /* the last check's */
  GraftInference *inference;
  GraftTargetReport *target_report;
  GraftGraph *spare_snapshot;      /* a copy of the main graph the last check made: the next edit's undo
                                    * snapshot; NULL once the graph may have changed */

  /* State */
  gboolean modified;        /* mirrors the history, so that "modified" is notified on change only */
  guint changes_depth;      /* inside graft_document_begin_changes() */
  gboolean changes_pending; /* an edit was applied in there */
};

G_DEFINE_FINAL_TYPE (GraftDocument, graft_document, G_TYPE_OBJECT)

enum {
  PROP_0,
  PROP_MODEL,
  PROP_TITLE,
  PROP_MODIFIED,
  PROP_LOADING,
  PROP_CHECKING,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

enum {
  CHANGED,
  SAVED,
  CHANGED_ON_DISK,
  LOAD_PROGRESS,
  LOADED,
  LOAD_FAILED,
  CHECKED,
  N_SIGNALS
};

static guint signals[N_SIGNALS];

/* ---------- the check ---------- */

typedef struct {
  GPtrArray *diagnostics;
  GraftInference *inference;
  GraftTargetReport *target_report;  /* when a deployment target is given */
  GraftGraph *copy;      /* of the main graph, for the next edit's undo snapshot */
  GraftGraph *copy_of;   /* the graph it copies (compared, never read) */
} CheckResult;

static void
check_result_free (gpointer data)
{
  CheckResult *result = data;

  g_clear_pointer (&result->diagnostics, g_ptr_array_unref);
  g_clear_pointer (&result->inference, graft_inference_unref);
  g_clear_pointer (&result->target_report, graft_target_report_free);
  g_clear_pointer (&result->copy, graft_graph_free);
  g_free (result);
}

/* What a check reads: the model, and the input shapes given (the Run
 * pane's, say) for inputs that declare none. */
typedef struct {
  GraftModel *model;
  GHashTable *input_shapes;   /* name → GraftShape*, a copy */
  const GraftDeployTarget *target;  /* static, or NULL */
} CheckInput;

static void
check_input_free (gpointer data)
{
  CheckInput *input = data;

  g_object_unref (input->model);
  g_hash_table_unref (input->input_shapes);
  g_free (input);
}

static CheckInput *
check_input_new (GraftModel *model, GHashTable *input_shapes, const GraftDeployTarget *target)
{
  CheckInput *input = g_new0 (CheckInput, 1);
  GHashTableIter iter;
  gpointer name, shape;

  input->model = g_object_ref (model);
  input->target = target;
  input->input_shapes = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) graft_shape_free);
  if (input_shapes == NULL)
    return input;
  g_hash_table_iter_init (&iter, input_shapes);
  while (g_hash_table_iter_next (&iter, &name, &shape))
    {
      GraftShape *copy = g_new0 (GraftShape, 1);

      graft_shape_copy (copy, shape);
      g_hash_table_insert (input->input_shapes, g_strdup (name), copy);
    }
  return input;
}

static void
check_thread (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
  CheckInput *input = task_data;
  CheckResult *result = g_new0 (CheckResult, 1);
  GraftLintOptions options = { .deploy_target = input->target };

  if (g_hash_table_size (input->input_shapes) == 0)
    result->diagnostics = graft_lint_model_with_inference (input->model, &options, &result->inference);
  else
    {
      g_autoptr(GError) error = NULL;

      /* The edges show what the given shapes imply; a shape that no
       * longer fits (an edit renamed the input) leaves the declared ones. */
      result->diagnostics = graft_lint_model (input->model, &options);
      result->inference = graft_shape_inference_run_given (input->model, input->input_shapes, &error);
      if (result->inference == NULL)
        result->inference = graft_shape_inference_run (input->model, NULL);
    }
  /* A target that reads another kind of graph has said so in the
   * diagnostics; there is no report then. */
  if (input->target != NULL)
    result->target_report = graft_target_check (input->model, input->target, result->inference, NULL);
  /* Edits wait for the check, so nothing changes the graph while it is
   * copied here. The copy of a 10k-node graph is tens of ms: made here,
   * the next edit's undo snapshot does not cost the UI thread that. */
  result->copy_of = graft_model_get_graph (input->model);
  if (result->copy_of != NULL && !g_cancellable_is_cancelled (cancellable))
    result->copy = graft_graph_copy (result->copy_of, NULL);
  g_task_return_pointer (task, result, check_result_free);
}

static void
on_model_checked (GObject *source, GAsyncResult *result, gpointer user_data)
{
  g_autoptr(GraftDocument) self = user_data;
  CheckResult *check = g_task_propagate_pointer (G_TASK (result), NULL);

  /* A check of a graph an edit or another file has replaced since. */
  if (g_task_get_cancellable (G_TASK (result)) != self->check_cancellable || check == NULL)
    {
      if (check != NULL)
        check_result_free (check);
      return;
    }
  g_clear_object (&self->check_cancellable);
  g_clear_pointer (&self->spare_snapshot, graft_graph_free);
  if (self->model != NULL && check->copy_of == graft_model_get_graph (self->model))
    self->spare_snapshot = g_steal_pointer (&check->copy);
  g_clear_pointer (&self->diagnostics, g_ptr_array_unref);
  self->diagnostics = g_steal_pointer (&check->diagnostics);
  g_clear_pointer (&self->inference, graft_inference_unref);
  self->inference = g_steal_pointer (&check->inference);
  g_clear_pointer (&self->target_report, graft_target_report_free);
  self->target_report = g_steal_pointer (&check->target_report);
  check_result_free (check);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_CHECKING]);
  g_signal_emit (self, signals[CHECKED], 0);
}

/* They point into the graph they judged: not past a change of it. */
static void
drop_check_results (GraftDocument *self)
{
  g_clear_pointer (&self->spare_snapshot, graft_graph_free);
  g_clear_pointer (&self->diagnostics, g_ptr_array_unref);
  g_clear_pointer (&self->inference, graft_inference_unref);
  g_clear_pointer (&self->target_report, graft_target_report_free);
}

void
graft_document_cancel_check (GraftDocument *self)
{
  g_return_if_fail (GRAFT_IS_DOCUMENT (self));

  /* A check is started whenever the graph changed: the copy is stale. */
  g_clear_pointer (&self->spare_snapshot, graft_graph_free);
  if (self->check_cancellable == NULL)
    return;
  g_cancellable_cancel (self->check_cancellable);
  g_clear_object (&self->check_cancellable);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_CHECKING]);
}

void
graft_document_check (GraftDocument *self, GHashTable *input_shapes, const GraftDeployTarget *target)
{
  g_autoptr(GTask) task = NULL;

  g_return_if_fail (GRAFT_IS_DOCUMENT (self));

  graft_document_cancel_check (self);
  if (self->model == NULL)
    return;
  self->check_cancellable = g_cancellable_new ();
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_CHECKING]);
  /* The document is not the task's source object: GIO's worker drops its
   * reference to the task after the callback may have run, so the task can
   * be finalized there, and what listens to the document (a window) must
   * never be disposed off the UI thread. user_data's reference goes in the
   * callback. */
  task = g_task_new (NULL, self->check_cancellable, on_model_checked, g_object_ref (self));
  /* The task's own reference keeps the model alive while it is read, even
   * if the document moves on to another file. */
  g_task_set_task_data (task, check_input_new (self->model, input_shapes, target), check_input_free);
  g_task_run_in_thread (task, check_thread);
}

gboolean
graft_document_is_checking (GraftDocument *self)
{
  g_return_val_if_fail (GRAFT_IS_DOCUMENT (self), FALSE);
  return self->check_cancellable != NULL;
}

GPtrArray *
graft_document_get_diagnostics (GraftDocument *self)
{
  g_return_val_if_fail (GRAFT_IS_DOCUMENT (self), NULL);
  return self->diagnostics;
}

GraftInference *
graft_document_get_inference (GraftDocument *self)
{
  g_return_val_if_fail (GRAFT_IS_DOCUMENT (self), NULL);
  return self->inference;
}

GraftTargetReport *
graft_document_get_target_report (GraftDocument *self)
{
  g_return_val_if_fail (GRAFT_IS_DOCUMENT (self), NULL);
  return self->target_report;
}

/* ---------- loading ---------- */

static void
stop_loading (GraftDocument *self)
{
  if (self->load_cancellable == NULL)
    return;
  g_cancellable_cancel (self->load_cancellable);
  g_clear_object (&self->load_cancellable);
  g_clear_pointer (&self->loading_path, g_free);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_LOADING]);
}

static void
on_load_progress (double fraction, gpointer user_data)
{
  GraftDocument *self = user_data;

  g_signal_emit (self, signals[LOAD_PROGRESS], 0, fraction);
}

static void
on_model_loaded (GObject *source, GAsyncResult *result, gpointer user_data)
{
  g_autoptr(GraftDocument) self = user_data;
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load_finish (result, &error);
  g_autofree char *path = NULL;

  /* A load cancelled, or replaced by another, may still finish (a reader
   * blocked in read() cannot be interrupted). */
  if (g_task_get_cancellable (G_TASK (result)) != self->load_cancellable)
    return;
  path = g_steal_pointer (&self->loading_path);
  g_clear_object (&self->load_cancellable);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_LOADING]);
  if (model == NULL)
    {
      g_signal_emit (self, signals[LOAD_FAILED], 0, path, error);
      return;
    }
  graft_document_set_model (self, model, path);
  g_signal_emit (self, signals[LOADED], 0, path);
}

/* Folders, pipes and devices: reading them could block for ever. */
static gboolean
check_regular_file (const char *path, GError **error)
{
  GStatBuf info;

  if (g_stat (path, &info) != 0)
    return TRUE;  /* the reader reports a missing or unreadable file */
  if (S_ISDIR (info.st_mode))
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_IS_DIRECTORY,
                   "%s is a folder; open the model file inside it", path);
      return FALSE;
    }
  if (!S_ISREG (info.st_mode))
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_REGULAR_FILE,
                   "%s is not a regular file (a pipe, socket or device)", path);
      return FALSE;
    }
  return TRUE;
}

gboolean
graft_document_load (GraftDocument *self, const char *path)
{
  g_autoptr(GError) error = NULL;

  g_return_val_if_fail (GRAFT_IS_DOCUMENT (self), FALSE);
  g_return_val_if_fail (path != NULL, FALSE);

  stop_loading (self);
  if (!check_regular_file (path, &error))
    {
      g_signal_emit (self, signals[LOAD_FAILED], 0, path, error);
      return FALSE;
    }
  self->load_cancellable = g_cancellable_new ();
  self->loading_path = g_strdup (path);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_LOADING]);
  graft_model_load_async (path, self->load_cancellable, on_load_progress, self, on_model_loaded, g_object_ref (self));
  return TRUE;
}

void
graft_document_cancel_load (GraftDocument *self)
{
  g_return_if_fail (GRAFT_IS_DOCUMENT (self));
  stop_loading (self);
}

gboolean
graft_document_is_loading (GraftDocument *self)
{
  g_return_val_if_fail (GRAFT_IS_DOCUMENT (self), FALSE);
  return self->load_cancellable != NULL;
}

/* ---------- the file on disk ---------- */

/* A training script that saves the model again (torch.onnx.export,
 * torch.jit.save) while Graft shows it: the model in memory stays as it
 * was opened (model files are read, not mapped, when they can change:
 * ir/file-bytes.h), and the document says the file changed. */
static void
on_watched_file_changed (GFileMonitor *monitor, GFile *file, GFile *other, GFileMonitorEvent event,
                         GraftDocument *self)
{
  GStatBuf now;
  gboolean deleted;

  if (event != G_FILE_MONITOR_EVENT_CHANGES_DONE_HINT && event != G_FILE_MONITOR_EVENT_CREATED &&
      event != G_FILE_MONITOR_EVENT_MOVED_IN && event != G_FILE_MONITOR_EVENT_RENAMED &&
      event != G_FILE_MONITOR_EVENT_DELETED)
    return;
  /* Events of a write finished before watching began can still arrive
   * (GIO shares and delays a folder's inotify watch, and a file saved a
   * moment ago, such as Reduce's result or this document's own save, is
   * watched at once): a file as it was then has not changed. */
  if (event != G_FILE_MONITOR_EVENT_DELETED && g_stat (self->watched_path, &now) == 0
      && now.st_ino == self->watched_stat.st_ino && now.st_size == self->watched_stat.st_size
      && now.st_mtim.tv_sec == self->watched_stat.st_mtim.tv_sec
      && now.st_mtim.tv_nsec == self->watched_stat.st_mtim.tv_nsec)
    return;
  deleted = event == G_FILE_MONITOR_EVENT_DELETED && !g_file_test (self->watched_path, G_FILE_TEST_EXISTS);
  g_signal_emit (self, signals[CHANGED_ON_DISK], 0, deleted);
}

/* Watches path (NULL: nothing). */
static void
watch_file (GraftDocument *self, const char *path)
{
  g_autoptr(GFile) file = NULL;

  if (self->file_monitor != NULL)
    {
      g_signal_handlers_disconnect_by_data (self->file_monitor, self);
      g_file_monitor_cancel (self->file_monitor);
      g_clear_object (&self->file_monitor);
    }
  g_clear_pointer (&self->watched_path, g_free);
  if (path == NULL)
    return;
  file = g_file_new_for_path (path);
  self->file_monitor = g_file_monitor_file (file, G_FILE_MONITOR_WATCH_MOVES, NULL, NULL);
  if (self->file_monitor == NULL)
    return;   /* no monitoring here (some network file systems): no offer, nothing breaks */
  self->watched_path = g_strdup (path);
  if (g_stat (path, &self->watched_stat) != 0)
    memset (&self->watched_stat, 0, sizeof self->watched_stat);
  g_signal_connect (self->file_monitor, "changed", G_CALLBACK (on_watched_file_changed), self);
}

const char *
graft_document_get_watched_path (GraftDocument *self)
{
  g_return_val_if_fail (GRAFT_IS_DOCUMENT (self), NULL);
  return self->watched_path;
}

/* ---------- the model and its history ---------- */

static void
update_modified (GraftDocument *self)
{
  gboolean modified = self->history != NULL && graft_edit_history_is_modified (self->history);

  if (modified == self->modified)
    return;
  self->modified = modified;
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_MODIFIED]);
}

/* The history says so inside an undo or redo too, when the graph has just
 * been replaced but "changed" is not emitted yet: only the unsaved state
 * follows here. */
static void
on_history_changed (GraftDocument *self)
{
  update_modified (self);
}

static void
drop_history (GraftDocument *self)
{
  if (self->history != NULL)
    g_signal_handlers_disconnect_by_data (self->history, self);
  g_clear_object (&self->history);
}

void
graft_document_set_model (GraftDocument *self, GraftModel *model, const char *path)
{
  g_return_if_fail (GRAFT_IS_DOCUMENT (self));
  g_return_if_fail (model == NULL || GRAFT_IS_MODEL (model));

  drop_history (self);
  g_clear_pointer (&self->title, g_free);
  g_clear_pointer (&self->saved_path, g_free);
  drop_check_results (self);
  g_set_object (&self->model, model);
  if (model != NULL)
    {
      self->history = graft_edit_history_new (model);
      g_signal_connect_swapped (self->history, "changed", G_CALLBACK (on_history_changed), self);
      self->title = path != NULL ? g_path_get_basename (path) : NULL;
    }
  watch_file (self, model != NULL ? path : NULL);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_MODEL]);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_TITLE]);
  update_modified (self);
}

GraftModel *
graft_document_get_model (GraftDocument *self)
{
  g_return_val_if_fail (GRAFT_IS_DOCUMENT (self), NULL);
  return self->model;
}

GraftEditHistory *
graft_document_get_history (GraftDocument *self)
{
  g_return_val_if_fail (GRAFT_IS_DOCUMENT (self), NULL);
  return self->history;
}

const char *
graft_document_get_title (GraftDocument *self)
{
  g_return_val_if_fail (GRAFT_IS_DOCUMENT (self), NULL);
  return self->title;
}

const char *
graft_document_get_path (GraftDocument *self)
{
  g_return_val_if_fail (GRAFT_IS_DOCUMENT (self), NULL);
  return self->model != NULL ? graft_model_get_path (self->model) : NULL;
}

GFile *
graft_document_dup_folder (GraftDocument *self)
{
  const char *path = graft_document_get_path (self);
  g_autofree char *dir = path != NULL ? g_path_get_dirname (path) : NULL;
  g_autoptr(GFile) folder = dir != NULL ? g_file_new_for_path (dir) : NULL;

  if (folder == NULL || g_file_query_file_type (folder, G_FILE_QUERY_INFO_NONE, NULL) != G_FILE_TYPE_DIRECTORY)
    return NULL;
  return g_steal_pointer (&folder);
}

const char *
graft_document_get_saved_path (GraftDocument *self)
{
  g_return_val_if_fail (GRAFT_IS_DOCUMENT (self), NULL);
  return self->saved_path;
}

gboolean
graft_document_is_modified (GraftDocument *self)
{
  g_return_val_if_fail (GRAFT_IS_DOCUMENT (self), FALSE);
  return self->modified;
}

/* ---------- edits ---------- */

static void
emit_changed (GraftDocument *self, GraftDocumentChange change, const char *description)
{
  drop_check_results (self);
  if (self->changes_depth > 0)
    {
      self->changes_pending = TRUE;
      return;
    }
  g_signal_emit (self, signals[CHANGED], 0, (int) change, description);
}

static gboolean
check_has_model (GraftDocument *self, GError **error)
{
  if (self->history != NULL)
    return TRUE;
  g_set_error_literal (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_STATE, "No model is open to edit");
  return FALSE;
}

gboolean
graft_document_apply_edit (GraftDocument *self, GraftEdit *edit, GraftModel **to_verify, GError **error)
{
  GraftGraph *before;

  g_return_val_if_fail (GRAFT_IS_DOCUMENT (self), FALSE);
  g_return_val_if_fail (GRAFT_IS_EDIT (edit), FALSE);

  if (to_verify != NULL)
    *to_verify = NULL;
  if (!check_has_model (self, error))
    return FALSE;
  before = graft_model_get_graph (self->model);
  /* The copy the last check made saves copying the graph here. */
  if (!graft_edit_history_apply_with_snapshot (self->history, edit, g_steal_pointer (&self->spare_snapshot), error))
    {
      /* What points into the old graph must follow the copy. */
      if (graft_model_get_graph (self->model) != before)
        emit_changed (self, GRAFT_DOCUMENT_CHANGE_RESTORED, NULL);
      return FALSE;
    }
  /* The proof runs on a worker while the user may undo or edit again: its
   * copy is made before anyone (a check on a worker) reads the new graph. */
  if (to_verify != NULL && graft_edit_get_changed_dims (edit)->len > 0)
    *to_verify = graft_model_copy (self->model);
  emit_changed (self, GRAFT_DOCUMENT_CHANGE_EDIT, graft_edit_get_description (edit));
  return TRUE;
}

gboolean
graft_document_commit_edit (GraftDocument *self, GraftEdit *edit, GraftModel *edited, GError **error)
{
  gboolean redo;

  g_return_val_if_fail (GRAFT_IS_DOCUMENT (self), FALSE);
  g_return_val_if_fail (GRAFT_IS_EDIT (edit), FALSE);

  if (!check_has_model (self, error))
    return FALSE;
  redo = graft_edit_history_get_redo_edit (self->history) == edit;
  if (!graft_edit_history_commit (self->history, edit, edited, error))
    return FALSE;
  emit_changed (self, redo ? GRAFT_DOCUMENT_CHANGE_REDO : GRAFT_DOCUMENT_CHANGE_EDIT,
                graft_edit_get_description (edit));
  return TRUE;
}

static gboolean
undo_or_redo (GraftDocument *self, gboolean undo, GError **error)
{
  g_autofree char *description = NULL;
  gboolean ok;

  if (!check_has_model (self, error))
    return FALSE;
  /* Read before the step: it moves the edit to the other stack. */
  description = g_strdup (undo ? graft_edit_history_get_undo_description (self->history)
                               : graft_edit_history_get_redo_description (self->history));
  ok = undo ? graft_edit_history_undo (self->history, error) : graft_edit_history_redo (self->history, error);
  if (ok)
    emit_changed (self, undo ? GRAFT_DOCUMENT_CHANGE_UNDO : GRAFT_DOCUMENT_CHANGE_REDO, description);
  return ok;
}

gboolean
graft_document_undo (GraftDocument *self, GError **error)
{
  g_return_val_if_fail (GRAFT_IS_DOCUMENT (self), FALSE);
  return undo_or_redo (self, TRUE, error);
}

gboolean
graft_document_redo (GraftDocument *self, GError **error)
{
  g_return_val_if_fail (GRAFT_IS_DOCUMENT (self), FALSE);
  return undo_or_redo (self, FALSE, error);
}

gboolean
graft_document_replay_recipe (GraftDocument *self, const char *path, GPtrArray *applied, GError **error)
{
  guint n_before;
  gboolean ok;

  g_return_val_if_fail (GRAFT_IS_DOCUMENT (self), FALSE);
  g_return_val_if_fail (applied != NULL, FALSE);

  if (!check_has_model (self, error))
    return FALSE;
  n_before = applied->len;
  ok = graft_recipe_replay_file (path, self->history, applied, error);
  if (applied->len > n_before)
    emit_changed (self, GRAFT_DOCUMENT_CHANGE_EDITS, NULL);
  return ok;
}

void
graft_document_begin_changes (GraftDocument *self)
{
  g_return_if_fail (GRAFT_IS_DOCUMENT (self));
  self->changes_depth++;
}

void
graft_document_end_changes (GraftDocument *self)
{
  g_return_if_fail (GRAFT_IS_DOCUMENT (self));
  g_return_if_fail (self->changes_depth > 0);

  if (--self->changes_depth > 0 || !self->changes_pending)
    return;
  self->changes_pending = FALSE;
  emit_changed (self, GRAFT_DOCUMENT_CHANGE_EDITS, NULL);
}

/* ---------- saving ---------- */

const GraftFormat *
graft_document_get_save_format (GraftDocument *self)
{
  GraftModelFormat format;

  g_return_val_if_fail (GRAFT_IS_DOCUMENT (self), NULL);

  if (self->model == NULL)
    return NULL;
  format = graft_model_get_format (self->model);
  for (const GraftFormat *f = graft_formats (); f->id != NULL; f++)
    if (f->write != NULL && (f->writes_from & GRAFT_FORMAT_FROM (format)))
      return f;
  return NULL;
}

gboolean
graft_document_is_model_file (GraftDocument *self, const char *path)
{
  const char *source = graft_document_get_path (self);
  g_autoptr(GFile) a = NULL;
  g_autoptr(GFile) b = NULL;

  if (source == NULL || path == NULL)
    return FALSE;
  a = g_file_new_for_path (source);
  b = g_file_new_for_path (path);
  return g_file_equal (a, b);
}

gboolean
graft_document_save (GraftDocument *self, const char *path, gboolean overwrite_source, GError **error)
{
  /* path may be the saved path, which is replaced below. */
  g_autofree char *target = g_strdup (path);

  g_return_val_if_fail (GRAFT_IS_DOCUMENT (self), FALSE);
  g_return_val_if_fail (path != NULL, FALSE);

  if (self->model == NULL)
    {
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "No model is open to save");
      return FALSE;
    }
  if (!graft_format_save (self->model, target, NULL, overwrite_source, error))
    return FALSE;
  /* The tensors are in memory or at absolute external paths, and the
   * writer replaces files by renaming, so nothing still reads the old file
   * through its name. */
  g_free (self->saved_path);
  self->saved_path = g_strdup (target);
  graft_model_set_path (self->model, target);
  g_free (self->title);
  self->title = g_path_get_basename (target);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_TITLE]);
  if (self->history != NULL)
    graft_edit_history_mark_saved (self->history);
  /* Watched again as written: this write is no change on disk. */
  watch_file (self, target);
  g_signal_emit (self, signals[SAVED], 0, target);
  return TRUE;
}

/* ---------- life cycle ---------- */

static void
graft_document_dispose (GObject *object)
{
  GraftDocument *self = GRAFT_DOCUMENT (object);

  stop_loading (self);
  graft_document_cancel_check (self);
  watch_file (self, NULL);
  drop_history (self);
  g_clear_object (&self->model);
  G_OBJECT_CLASS (graft_document_parent_class)->dispose (object);
}

static void
graft_document_finalize (GObject *object)
{
  GraftDocument *self = GRAFT_DOCUMENT (object);

  g_free (self->title);
  g_free (self->saved_path);
  g_free (self->loading_path);
  drop_check_results (self);
  G_OBJECT_CLASS (graft_document_parent_class)->finalize (object);
}

static void
graft_document_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  GraftDocument *self = GRAFT_DOCUMENT (object);

  switch (prop_id)
    {
    case PROP_MODEL: g_value_set_object (value, self->model); break;
    case PROP_TITLE: g_value_set_string (value, self->title); break;
    case PROP_MODIFIED: g_value_set_boolean (value, self->modified); break;
    case PROP_LOADING: g_value_set_boolean (value, self->load_cancellable != NULL); break;
    case PROP_CHECKING: g_value_set_boolean (value, self->check_cancellable != NULL); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
graft_document_class_init (GraftDocumentClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->dispose = graft_document_dispose;
  object_class->finalize = graft_document_finalize;
  object_class->get_property = graft_document_get_property;

  properties[PROP_MODEL] =
    g_param_spec_object ("model", NULL, NULL, GRAFT_TYPE_MODEL, G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_TITLE] =
    g_param_spec_string ("title", NULL, NULL, NULL, G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_MODIFIED] =
    g_param_spec_boolean ("modified", NULL, NULL, FALSE, G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_LOADING] =
    g_param_spec_boolean ("loading", NULL, NULL, FALSE, G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_CHECKING] =
    g_param_spec_boolean ("checking", NULL, NULL, FALSE, G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);

  /* The model's graph object was replaced (the old one is freed): change
   * is a GraftDocumentChange, description the edit's or NULL. */
  signals[CHANGED] = g_signal_new ("changed", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                   G_TYPE_NONE, 2, G_TYPE_INT, G_TYPE_STRING);
  /* The model was written to path, its file from now on. */
  signals[SAVED] = g_signal_new ("saved", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                 G_TYPE_NONE, 1, G_TYPE_STRING);
  /* The watched file was written or replaced by someone else, or deleted
   * (the boolean). */
  /* How far a load is (0 to 1), when the reader can tell. */
  signals[LOAD_PROGRESS] = g_signal_new ("load-progress", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                                         NULL, G_TYPE_NONE, 1, G_TYPE_DOUBLE);
  /* A load of the path ended: the document shows its model. */
  signals[LOADED] = g_signal_new ("loaded", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                  G_TYPE_NONE, 1, G_TYPE_STRING);
  /* A load of the path failed with the error; the model shown stays. */
  signals[LOAD_FAILED] = g_signal_new ("load-failed", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                                       NULL, G_TYPE_NONE, 2, G_TYPE_STRING, G_TYPE_ERROR);
  /* A check landed: its results are the document's (get_diagnostics(),
   * get_inference(), get_target_report()). */
  signals[CHECKED] = g_signal_new ("checked", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                   G_TYPE_NONE, 0);
  signals[CHANGED_ON_DISK] = g_signal_new ("changed-on-disk", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL,
                                           NULL, NULL, G_TYPE_NONE, 1, G_TYPE_BOOLEAN);
}

static void
graft_document_init (GraftDocument *self)
{
}

GraftDocument *
graft_document_new (void)
{
  return g_object_new (GRAFT_TYPE_DOCUMENT, NULL);
}
