#include "model-open.h"

typedef struct {
  char *path;
  GMainContext *context;
  GraftProgressFunc progress;
  gpointer progress_data;
  /* The reader reports often; only the newest fraction matters, so one
   * pending main-loop callback carries whatever is current when it runs. */
  GMutex lock;
  double fraction;
  gboolean update_pending;
} LoadJob;

static void
load_job_free (LoadJob *job)
{
  g_free (job->path);
  g_main_context_unref (job->context);
  g_mutex_clear (&job->lock);
  g_free (job);
}

static gboolean
deliver_progress (gpointer user_data)
{
  GTask *task = user_data;
  LoadJob *job = g_task_get_task_data (task);
  double fraction;

  g_mutex_lock (&job->lock);
  fraction = job->fraction;
  job->update_pending = FALSE;
  g_mutex_unlock (&job->lock);

  if (!g_task_had_error (task) && !g_cancellable_is_cancelled (g_task_get_cancellable (task)))
    job->progress (fraction, job->progress_data);
  return G_SOURCE_REMOVE;
}

static void
on_reader_progress (double fraction, gpointer user_data)
{
  GTask *task = user_data;
  LoadJob *job = g_task_get_task_data (task);
  gboolean schedule;

  g_mutex_lock (&job->lock);
  job->fraction = fraction;
  schedule = !job->update_pending;
  job->update_pending = TRUE;
  g_mutex_unlock (&job->lock);

  if (schedule)
    g_main_context_invoke_full (job->context, G_PRIORITY_DEFAULT, deliver_progress,
                                g_object_ref (task), g_object_unref);
}

static void
load_thread (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
  LoadJob *job = task_data;
  GError *error = NULL;
  GraftModel *model;

  model = graft_model_load (job->path, cancellable,
                            job->progress != NULL ? on_reader_progress : NULL, task,
                            &error);
  if (model == NULL)
    g_task_return_error (task, error);
  else
    g_task_return_pointer (task, model, g_object_unref);
}

void
graft_model_load_async (const char *path,
                        GCancellable *cancellable,
                        GraftProgressFunc progress,
                        gpointer progress_data,
                        GAsyncReadyCallback callback,
                        gpointer user_data)
{
  g_autoptr(GTask) task = g_task_new (NULL, cancellable, callback, user_data);
  LoadJob *job = g_new0 (LoadJob, 1);

  job->path = g_strdup (path);
  job->context = g_main_context_ref_thread_default ();
  job->progress = progress;
  job->progress_data = progress_data;
  g_mutex_init (&job->lock);
  g_task_set_task_data (task, job, (GDestroyNotify) load_job_free);
  g_task_set_source_tag (task, graft_model_load_async);
  g_task_run_in_thread (task, load_thread);
}

GraftModel *
graft_model_load_finish (GAsyncResult *result, GError **error)
{
  g_return_val_if_fail (g_task_is_valid (result, NULL), NULL);
  return g_task_propagate_pointer (G_TASK (result), error);
}
