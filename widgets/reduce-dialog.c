#include "reduce-dialog.h"

#include "debug/reference-values.h"
#include "onnx/writer.h"
#include "runtime/inputs.h"

#define PROGRESS_POLL_MS 100

struct _GraftReduceDialog
{
  AdwWindow parent_instance;

  /* Template widgets */
  AdwWindowTitle *window_title;
  GtkButton *cancel_button;
  AdwComboRow *condition_row;
  AdwEntryRow *reference_row;
  GtkWidget *tolerance_row;
  GtkSpinButton *rtol_spin;
  GtkSpinButton *atol_spin;
  AdwEntryRow *command_row;
  AdwActionRow *inputs_row;
  AdwEntryRow *output_row;
  GtkProgressBar *progress_bar;
  GtkLabel *status_label;

  /* Owned references */
  GraftModel *model;
  GHashTable *inputs;               /* char* → GraftRtTensor* */
  GCancellable *cancellable;        /* while a search runs */
  struct _ReduceJob *job;           /* borrowed from the task while it runs */

  /* State */
  guint progress_id;
};

G_DEFINE_FINAL_TYPE (GraftReduceDialog, graft_reduce_dialog, ADW_TYPE_WINDOW)

enum { SIGNAL_REDUCED, N_SIGNALS };
static guint signals[N_SIGNALS];

enum {
  PROP_0,
  PROP_RUNNING,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

/* What the worker reads, and what it found. */
typedef struct _ReduceJob {
  GraftReduceDialog *dialog;        /* strong: released on the UI thread */
  GraftModel *model;
  GHashTable *inputs;
  GraftReduceCondition condition;
  char *reference;
  double rtol, atol;
  char *command;
  char *output;
  gint runs, kept;                  /* atomic: written by the worker's progress */
  gint64 start_time;
  /* results */
  char **kept_nodes;
  guint n_runs, n_original;
  char *failure;
} ReduceJob;

static void
reduce_job_free (ReduceJob *job)
{
  g_object_unref (job->model);
  g_hash_table_unref (job->inputs);
  g_free (job->reference);
  g_free (job->command);
  g_free (job->output);
  g_strfreev (job->kept_nodes);
  g_free (job->failure);
  g_free (job);
}

static GHashTable *
copy_inputs (GHashTable *inputs)
{
  GHashTable *copy = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) graft_rt_tensor_unref);
  GHashTableIter iter;
  gpointer name, tensor;

  g_hash_table_iter_init (&iter, inputs);
  while (g_hash_table_iter_next (&iter, &name, &tensor))
    g_hash_table_insert (copy, g_strdup (name), graft_rt_tensor_ref (tensor));
  return copy;
}

static void
on_search_progress (guint runs, guint kept_nodes, gpointer user_data)
{
  ReduceJob *job = user_data;

  g_atomic_int_set (&job->runs, runs);
  if (kept_nodes > 0)
    g_atomic_int_set (&job->kept, kept_nodes);
}

static void
reduce_thread (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
  ReduceJob *job = task_data;
  GError *error = NULL;
  g_autoptr(GHashTable) shapes = graft_runtime_input_shapes (job->inputs);
  g_autoptr(GraftModel) onnx = graft_model_as_onnx (job->model, shapes, &error);

  if (onnx == NULL)
    {
      g_task_return_error (task, error);
      return;
    }
  g_autoptr(GraftReduce) reduce = graft_reduce_new (onnx, job->condition, job->inputs);
  if (job->condition == GRAFT_REDUCE_MISMATCH)
    {
      g_autoptr(GHashTable) reference = graft_reference_values_load (graft_model_get_graph (onnx), job->reference,
                                                                     job->inputs, shapes, &error);
      if (reference == NULL)
        {
          g_task_return_error (task, error);
          return;
        }
      graft_reduce_set_reference (reduce, reference, job->rtol, job->atol);
    }
  if (job->condition == GRAFT_REDUCE_COMMAND)
    graft_reduce_set_command (reduce, job->command);
  g_autoptr(GraftModel) reduced = graft_reduce_run (reduce, on_search_progress, job, cancellable, &error);
  if (reduced == NULL || !graft_onnx_write_file (reduced, job->output, GRAFT_ONNX_WRITE_NONE, &error))
    {
      g_task_return_error (task, error);
      return;
    }
  GPtrArray *kept = graft_reduce_get_kept_nodes (reduce);
  job->kept_nodes = g_new0 (char *, kept->len + 1);
  for (guint i = 0; i < kept->len; i++)
    job->kept_nodes[i] = g_strdup (kept->pdata[i]);
  job->n_runs = graft_reduce_get_n_runs (reduce);
  job->n_original = graft_reduce_get_n_original_nodes (reduce);
  job->failure = g_strdup (graft_reduce_get_failure (reduce));
  g_task_return_boolean (task, TRUE);
}

static void
set_status (GraftReduceDialog *self, const char *status, gboolean error)
{
  gtk_label_set_text (self->status_label, status);
  (error ? gtk_widget_add_css_class : gtk_widget_remove_css_class) (GTK_WIDGET (self->status_label), "error");
}

static void
update_actions (GraftReduceDialog *self)
{
  gboolean running = self->cancellable != NULL;

  gtk_widget_action_set_enabled (GTK_WIDGET (self), "reduce.start", !running);
  gtk_button_set_label (self->cancel_button, running ? "_Cancel" : "_Close");
  gtk_widget_set_sensitive (GTK_WIDGET (self->condition_row), !running);
  gtk_widget_set_sensitive (GTK_WIDGET (self->reference_row), !running);
  gtk_widget_set_sensitive (self->tolerance_row, !running);
  gtk_widget_set_sensitive (GTK_WIDGET (self->command_row), !running);
  gtk_widget_set_sensitive (GTK_WIDGET (self->output_row), !running);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_RUNNING]);
}

static gboolean
poll_progress (gpointer user_data)
{
  GraftReduceDialog *self = user_data;
  int runs = g_atomic_int_get (&self->job->runs);
  int kept = g_atomic_int_get (&self->job->kept);
  g_autofree char *text = NULL;

  gtk_progress_bar_pulse (self->progress_bar);
  if (runs == 0)
    text = g_strdup ("Recording a run of the whole model…");
  else if (kept == 0)
    text = g_strdup_printf ("%d part%s tried", runs, runs == 1 ? "" : "s");
  else
    text = g_strdup_printf ("%d part%s tried · the smallest that fails so far: %d node%s", runs, runs == 1 ? "" : "s",
                            kept, kept == 1 ? "" : "s");
  gtk_progress_bar_set_text (self->progress_bar, text);
  return G_SOURCE_CONTINUE;
}

static void
stop_running (GraftReduceDialog *self)
{
  g_clear_object (&self->cancellable);
  g_clear_handle_id (&self->progress_id, g_source_remove);
  self->job = NULL;
  update_actions (self);
}

static void
on_reduced (GObject *source, GAsyncResult *result, gpointer user_data)
{
  ReduceJob *job = g_task_get_task_data (G_TASK (result));
  g_autoptr(GraftReduceDialog) self = user_data;
  g_autoptr(GError) error = NULL;
  double seconds = (g_get_monotonic_time () - job->start_time) / 1e6;

  /* a search the dialog gave up on (closed) */
  if (self->job != job)
    return;
  stop_running (self);
  if (!g_task_propagate_boolean (G_TASK (result), &error))
    {
      gboolean cancelled = g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED)
                           || g_error_matches (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_CANCELLED);
      g_autofree char *status = cancelled ? g_strdup ("Cancelled") : g_strdup_printf ("Could not reduce: %s",
                                                                                      error->message);
      gtk_widget_set_visible (GTK_WIDGET (self->progress_bar), FALSE);
      set_status (self, status, !cancelled);
      return;
    }
  guint n_kept = g_strv_length (job->kept_nodes);
  g_autofree char *base = g_path_get_basename (job->output);
  g_autofree char *status = g_strdup_printf ("Kept %u of %u nodes in %u runs (%.1f s), saved as %s and opened. %s%s",
                                             n_kept, job->n_original, job->n_runs, seconds, base,
                                             job->failure ? "It fails: " : "", job->failure ? job->failure : "");
  gtk_progress_bar_set_fraction (self->progress_bar, 1.0);
  gtk_progress_bar_set_text (self->progress_bar, "Done");
  set_status (self, status, FALSE);
  g_signal_emit (self, signals[SIGNAL_REDUCED], 0, job->output, job->kept_nodes);
}

static char *
entry_text (AdwEntryRow *row)
{
  return g_strstrip (g_strdup (gtk_editable_get_text (GTK_EDITABLE (row))));
}

static GraftReduceCondition
chosen_condition (GraftReduceDialog *self)
{
  return (GraftReduceCondition) adw_combo_row_get_selected (self->condition_row);
}

static void
start_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftReduceDialog *self = GRAFT_REDUCE_DIALOG (widget);
  g_autoptr(GTask) task = NULL;
  ReduceJob *job;

  if (self->cancellable != NULL)
    return;
  job = g_new0 (ReduceJob, 1);
  job->model = g_object_ref (self->model);
  job->inputs = copy_inputs (self->inputs);
  job->condition = chosen_condition (self);
  job->reference = entry_text (self->reference_row);
  job->rtol = gtk_spin_button_get_value (self->rtol_spin);
  job->atol = gtk_spin_button_get_value (self->atol_spin);
  job->command = entry_text (self->command_row);
  job->output = entry_text (self->output_row);
  job->start_time = g_get_monotonic_time ();
  const char *missing = job->output[0] == '\0' ? "Choose where to save the reduced model"
                        : job->condition == GRAFT_REDUCE_MISMATCH && job->reference[0] == '\0'
                          ? "Give the reference: a model file or a folder of .npy values"
                        : job->condition == GRAFT_REDUCE_COMMAND && job->command[0] == '\0'
                          ? "Give the command that fails on a bad model"
                          : NULL;
  if (missing != NULL)
    {
      set_status (self, missing, TRUE);
      reduce_job_free (job);
      return;
    }
  self->job = job;
  self->cancellable = g_cancellable_new ();
  gtk_widget_set_visible (GTK_WIDGET (self->progress_bar), TRUE);
  gtk_progress_bar_set_fraction (self->progress_bar, 0);
  set_status (self, "Reducing…", FALSE);
  poll_progress (self);
  self->progress_id = g_timeout_add (PROGRESS_POLL_MS, poll_progress, self);
  update_actions (self);
  /* The dialog is not the task's source object: the worker may drop the
   * task's last reference, and a widget is only disposed on the UI thread. */
  task = g_task_new (NULL, self->cancellable, on_reduced, g_object_ref (self));
  g_task_set_task_data (task, job, (GDestroyNotify) reduce_job_free);
  /* a search that finished (and saved) just as Cancel was pressed says so */
  g_task_set_check_cancellable (task, FALSE);
  g_task_run_in_thread (task, reduce_thread);
}

static void
cancel_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftReduceDialog *self = GRAFT_REDUCE_DIALOG (widget);

  if (self->cancellable != NULL)
    g_cancellable_cancel (self->cancellable);
  else
    gtk_window_close (GTK_WINDOW (self));
}

static void
on_condition_changed (GraftReduceDialog *self)
{
  GraftReduceCondition condition = chosen_condition (self);

  gtk_widget_set_visible (GTK_WIDGET (self->reference_row), condition == GRAFT_REDUCE_MISMATCH);
  gtk_widget_set_visible (self->tolerance_row, condition == GRAFT_REDUCE_MISMATCH);
  gtk_widget_set_visible (GTK_WIDGET (self->command_row), condition == GRAFT_REDUCE_COMMAND);
}

static void
on_file_chosen (GtkNativeDialog *chooser, int response, AdwEntryRow *row)
{
  if (response == GTK_RESPONSE_ACCEPT)
    {
      g_autoptr(GFile) file = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (chooser));
      g_autofree char *path = file ? g_file_get_path (file) : NULL;
      if (path != NULL)
        gtk_editable_set_text (GTK_EDITABLE (row), path);
    }
  gtk_native_dialog_destroy (chooser);
  g_object_unref (chooser);
}

static void
choose_file (GraftReduceDialog *self, AdwEntryRow *row, const char *title, GtkFileChooserAction action)
{
  GtkFileChooserNative *chooser = gtk_file_chooser_native_new (title, GTK_WINDOW (self), action, NULL, NULL);
  g_autofree char *current = entry_text (row);

  if (current[0] != '\0')
    {
      g_autoptr(GFile) file = g_file_new_for_path (current);
      g_autoptr(GFile) folder = g_file_get_parent (file);
      if (folder != NULL)
        gtk_file_chooser_set_current_folder (GTK_FILE_CHOOSER (chooser), folder, NULL);
      if (action == GTK_FILE_CHOOSER_ACTION_SAVE)
        {
          g_autofree char *base = g_file_get_basename (file);
          gtk_file_chooser_set_current_name (GTK_FILE_CHOOSER (chooser), base);
        }
    }
  g_signal_connect (chooser, "response", G_CALLBACK (on_file_chosen), row);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (chooser));
}

static void
on_choose_reference (GraftReduceDialog *self)
{
  choose_file (self, self->reference_row, "Reference Model", GTK_FILE_CHOOSER_ACTION_OPEN);
}

static void
on_choose_reference_folder (GraftReduceDialog *self)
{
  choose_file (self, self->reference_row, "Folder of Reference Values", GTK_FILE_CHOOSER_ACTION_SELECT_FOLDER);
}

static void
on_choose_output (GraftReduceDialog *self)
{
  choose_file (self, self->output_row, "Save the Reduced Model", GTK_FILE_CHOOSER_ACTION_SAVE);
}

static gboolean
graft_reduce_dialog_close_request (GtkWindow *window)
{
  GraftReduceDialog *self = GRAFT_REDUCE_DIALOG (window);

  /* the worker stops at its next candidate; its result is dropped */
  if (self->cancellable != NULL)
    g_cancellable_cancel (self->cancellable);
  stop_running (self);
  return GTK_WINDOW_CLASS (graft_reduce_dialog_parent_class)->close_request (window);
}

static void
graft_reduce_dialog_dispose (GObject *object)
{
  GraftReduceDialog *self = GRAFT_REDUCE_DIALOG (object);

  if (self->cancellable != NULL)
    g_cancellable_cancel (self->cancellable);
  g_clear_object (&self->cancellable);
  g_clear_handle_id (&self->progress_id, g_source_remove);
  self->job = NULL;
  gtk_widget_dispose_template (GTK_WIDGET (self), GRAFT_TYPE_REDUCE_DIALOG);
  G_OBJECT_CLASS (graft_reduce_dialog_parent_class)->dispose (object);
}

static void
graft_reduce_dialog_finalize (GObject *object)
{
  GraftReduceDialog *self = GRAFT_REDUCE_DIALOG (object);

  g_clear_object (&self->model);
  g_clear_pointer (&self->inputs, g_hash_table_unref);
  G_OBJECT_CLASS (graft_reduce_dialog_parent_class)->finalize (object);
}

static void
graft_reduce_dialog_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  GraftReduceDialog *self = GRAFT_REDUCE_DIALOG (object);

  switch (prop_id)
    {
    case PROP_RUNNING: g_value_set_boolean (value, self->cancellable != NULL); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
graft_reduce_dialog_class_init (GraftReduceDialogClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);
  GtkWindowClass *window_class = GTK_WINDOW_CLASS (klass);

  object_class->dispose = graft_reduce_dialog_dispose;
  object_class->get_property = graft_reduce_dialog_get_property;
  object_class->finalize = graft_reduce_dialog_finalize;
  window_class->close_request = graft_reduce_dialog_close_request;

  /* TRUE while the search runs (Cancel stops it). */
  properties[PROP_RUNNING] =
    g_param_spec_boolean ("running", NULL, NULL, FALSE,
                          G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);

  /* (path of the saved model, GStrv of the original nodes it kept) */
  signals[SIGNAL_REDUCED] = g_signal_new ("reduced", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                                          NULL, G_TYPE_NONE, 2, G_TYPE_STRING, G_TYPE_STRV);

  gtk_widget_class_install_action (widget_class, "reduce.start", NULL, start_action);
  gtk_widget_class_install_action (widget_class, "reduce.cancel", NULL, cancel_action);
  gtk_widget_class_set_template_from_resource (widget_class, "/org/graft/Graft/ui/reduce-dialog.ui");
  gtk_widget_class_bind_template_child (widget_class, GraftReduceDialog, window_title);
  gtk_widget_class_bind_template_child (widget_class, GraftReduceDialog, cancel_button);
  gtk_widget_class_bind_template_child (widget_class, GraftReduceDialog, condition_row);
  gtk_widget_class_bind_template_child (widget_class, GraftReduceDialog, reference_row);
  gtk_widget_class_bind_template_child (widget_class, GraftReduceDialog, tolerance_row);
  gtk_widget_class_bind_template_child (widget_class, GraftReduceDialog, rtol_spin);
  gtk_widget_class_bind_template_child (widget_class, GraftReduceDialog, atol_spin);
  gtk_widget_class_bind_template_child (widget_class, GraftReduceDialog, command_row);
  gtk_widget_class_bind_template_child (widget_class, GraftReduceDialog, inputs_row);
  gtk_widget_class_bind_template_child (widget_class, GraftReduceDialog, output_row);
  gtk_widget_class_bind_template_child (widget_class, GraftReduceDialog, progress_bar);
  gtk_widget_class_bind_template_child (widget_class, GraftReduceDialog, status_label);
  gtk_widget_class_bind_template_callback (widget_class, on_condition_changed);
  gtk_widget_class_bind_template_callback (widget_class, on_choose_reference);
  gtk_widget_class_bind_template_callback (widget_class, on_choose_reference_folder);
  gtk_widget_class_bind_template_callback (widget_class, on_choose_output);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_Escape, 0, "reduce.cancel", NULL);
}

static void
graft_reduce_dialog_init (GraftReduceDialog *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));
  update_actions (self);
}

GraftReduceDialog *
graft_reduce_dialog_new (GtkWindow *parent, GraftModel *model, GHashTable *inputs, const char *inputs_description,
                         const char *output_path)
{
  GraftReduceDialog *self = g_object_new (GRAFT_TYPE_REDUCE_DIALOG, "transient-for", parent, NULL);
  const char *path = graft_model_get_path (model);
  g_autofree char *base = path ? g_path_get_basename (path) : NULL;

  self->model = g_object_ref (model);
  self->inputs = copy_inputs (inputs);
  if (base != NULL)
    adw_window_title_set_subtitle (self->window_title, base);
  adw_action_row_set_subtitle (self->inputs_row, inputs_description);
  gtk_editable_set_text (GTK_EDITABLE (self->output_row), output_path);
  return self;
}

void
graft_reduce_dialog_set_condition (GraftReduceDialog *self, GraftReduceCondition condition)
{
  g_return_if_fail (GRAFT_IS_REDUCE_DIALOG (self));
  adw_combo_row_set_selected (self->condition_row, condition);
}
