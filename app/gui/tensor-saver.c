#include "tensor-saver.h"

#include "runtime/npy.h"

struct _GraftTensorSaver
{
  GObject parent_instance;

  /* Owned references */
  GraftDocument *document;

  /* Borrowed references (weak pointers: a save may end after the window) */
  GtkWindow *window;
  AdwToastOverlay *toasts;
  AdwToast *toast;          /* "Saved “x.npy”" */
};

G_DEFINE_FINAL_TYPE (GraftTensorSaver, graft_tensor_saver, G_TYPE_OBJECT)

typedef struct {
  GraftModel *model;        /* keeps the tensor's mapped data alive */
  GraftTensor *tensor;
  char *path;
  GraftDType saved_dtype;
} SaveJob;

static void
save_job_free (SaveJob *job)
{
  g_clear_object (&job->model);
  g_clear_pointer (&job->tensor, graft_tensor_unref);
  g_free (job->path);
  g_free (job);
}

static void
save_thread (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
  SaveJob *job = task_data;
  GError *error = NULL;

  if (graft_npy_write_constant (job->path, job->tensor, &job->saved_dtype, &error))
    g_task_return_boolean (task, TRUE);
  else
    g_task_return_error (task, error);
}

static void
save_done (GObject *source, GAsyncResult *result, gpointer user_data)
{
  g_autoptr(GraftTensorSaver) self = user_data;
  SaveJob *job = g_task_get_task_data (G_TASK (result));
  g_autoptr(GError) error = NULL;
  g_autofree char *basename = g_path_get_basename (job->path);

  if (g_task_propagate_boolean (G_TASK (result), &error))
    {
      g_autofree char *text = NULL;
      AdwToast *toast;

      if (self->toasts == NULL)
        return;   /* the window closed meanwhile */
      if (job->saved_dtype != job->tensor->dtype)
        text = g_strdup_printf ("Saved “%s” (%s written as %s, NumPy has no %s)", basename,
                                graft_dtype_to_string (job->tensor->dtype), graft_dtype_to_string (job->saved_dtype),
                                graft_dtype_to_string (job->tensor->dtype));
      else
        text = g_strdup_printf ("Saved “%s”", basename);
      /* Saving several tensors in a row: the last one's toast shows now,
       * not after the earlier ones have timed out. */
      toast = adw_toast_new (text);
      adw_toast_set_timeout (toast, 5);
      if (self->toast != NULL)
        adw_toast_dismiss (self->toast);
      g_set_weak_pointer (&self->toast, toast);
      adw_toast_overlay_add_toast (self->toasts, toast);
    }
  else
    {
      AdwMessageDialog *dialog = ADW_MESSAGE_DIALOG (adw_message_dialog_new (self->window, "Cannot Save the Tensor",
                                                                             error->message));

      adw_message_dialog_add_response (dialog, "close", "_Close");
      gtk_window_present (GTK_WINDOW (dialog));
    }
}

static void
on_save_response (GtkNativeDialog *dialog, int response, GraftTensorSaver *self)
{
  GraftTensor *tensor = g_object_get_data (G_OBJECT (dialog), "graft-tensor");
  GraftModel *model = graft_document_get_model (self->document);
  g_autoptr(GFile) file = response == GTK_RESPONSE_ACCEPT ? gtk_file_chooser_get_file (GTK_FILE_CHOOSER (dialog)) : NULL;
  g_autofree char *path = file != NULL ? g_file_get_path (file) : NULL;

  if (path != NULL && model != NULL)
    {
      /* No source object: a worker may drop the task's last reference,
       * which must not be the one keeping a window's widgets. */
      g_autoptr(GTask) task = g_task_new (NULL, NULL, save_done, g_object_ref (self));
      SaveJob *job = g_new0 (SaveJob, 1);

      job->model = g_object_ref (model);
      job->tensor = graft_tensor_ref (tensor);
      job->path = g_str_has_suffix (path, ".npy") ? g_steal_pointer (&path) : g_strconcat (path, ".npy", NULL);
      g_task_set_task_data (task, job, (GDestroyNotify) save_job_free);
      g_task_run_in_thread (task, save_thread);
    }
  g_object_unref (dialog);
}

/* "layer1.0.conv1.weight.npy"; names with folders ("onnx::Conv_12",
 * "/encoder/w") keep to one file name. */
static char *
suggest_file_name (const GraftTensor *tensor)
{
  g_autofree char *name = g_strdup (tensor->name != NULL && tensor->name[0] != '\0' ? tensor->name : "tensor");

  g_strdelimit (name, "/\\:", '_');
  return g_strconcat (name[0] == '_' && name[1] != '\0' ? name + 1 : name, ".npy", NULL);
}

static void
on_save_tensor (GraftTensorSaver *self, GraftTensor *tensor)
{
  GtkFileChooserNative *dialog;
  g_autoptr(GtkFileFilter) filter = gtk_file_filter_new ();
  g_autofree char *suggestion = suggest_file_name (tensor);
  g_autoptr(GFile) folder = graft_document_dup_folder (self->document);

  if (self->window == NULL)
    return;
  gtk_file_filter_set_name (filter, "NumPy Array");
  gtk_file_filter_add_pattern (filter, "*.npy");
  dialog = gtk_file_chooser_native_new ("Save Tensor as NumPy Array", self->window,
                                        GTK_FILE_CHOOSER_ACTION_SAVE, "_Save", "_Cancel");
  gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (dialog), filter);
  /* Beside the model, not in the folder Graft was launched from. */
  if (folder != NULL)
    gtk_file_chooser_set_current_folder (GTK_FILE_CHOOSER (dialog), folder, NULL);
  gtk_file_chooser_set_current_name (GTK_FILE_CHOOSER (dialog), suggestion);
  g_object_set_data_full (G_OBJECT (dialog), "graft-tensor", graft_tensor_ref (tensor),
                          (GDestroyNotify) graft_tensor_unref);
  gtk_native_dialog_set_modal (GTK_NATIVE_DIALOG (dialog), TRUE);
  g_signal_connect_object (dialog, "response", G_CALLBACK (on_save_response), self, 0);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (dialog));
}

static void
graft_tensor_saver_dispose (GObject *object)
{
  GraftTensorSaver *self = GRAFT_TENSOR_SAVER (object);

  g_clear_weak_pointer (&self->window);
  g_clear_weak_pointer (&self->toasts);
  g_clear_weak_pointer (&self->toast);
  g_clear_object (&self->document);
  G_OBJECT_CLASS (graft_tensor_saver_parent_class)->dispose (object);
}

static void
graft_tensor_saver_class_init (GraftTensorSaverClass *klass)
{
  G_OBJECT_CLASS (klass)->dispose = graft_tensor_saver_dispose;
}

static void
graft_tensor_saver_init (GraftTensorSaver *self)
{
}

GraftTensorSaver *
graft_tensor_saver_new (GtkWindow *window, AdwToastOverlay *toasts, GraftDocument *document,
                        GraftNodeSidebar *sidebar)
{
  GraftTensorSaver *self = g_object_new (GRAFT_TYPE_TENSOR_SAVER, NULL);

  g_set_weak_pointer (&self->window, window);
  g_set_weak_pointer (&self->toasts, toasts);
  self->document = g_object_ref (document);
  g_signal_connect_object (sidebar, "save-tensor", G_CALLBACK (on_save_tensor), self, G_CONNECT_SWAPPED);
  return self;
}
