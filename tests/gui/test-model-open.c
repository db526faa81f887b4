/* Loading in a worker thread: the result, progress on the main thread,
 * errors and cancellation, without a display. */
#include <glib/gstdio.h>
#include <string.h>

#include "model-open.h"
#include "../test-scratch.h"

typedef struct {
  GMainLoop *loop;
  GraftModel *model;
  GError *error;
  guint n_progress;
  gboolean progress_on_main_thread;
  double last_fraction;
} LoadResult;

static void
on_progress (double fraction, gpointer user_data)
{
  LoadResult *result = user_data;

  result->n_progress++;
  result->last_fraction = fraction;
  result->progress_on_main_thread &= g_main_context_is_owner (g_main_context_default ());
}

static void
on_loaded (GObject *source, GAsyncResult *res, gpointer user_data)
{
  LoadResult *result = user_data;

  result->model = graft_model_load_finish (res, &result->error);
  g_main_loop_quit (result->loop);
}

static void
load (const char *path, GCancellable *cancellable, LoadResult *result)
{
  result->loop = g_main_loop_new (NULL, FALSE);
  result->progress_on_main_thread = TRUE;
  graft_model_load_async (path, cancellable, on_progress, result, on_loaded, result);
  g_main_loop_run (result->loop);
  g_main_loop_unref (result->loop);
}

static char *
sample_path (void)
{
  return g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "data", "samples", "tiny-cnn.onnx", NULL);
}

static void
test_load_sample (void)
{
  g_autofree char *path = sample_path ();
  LoadResult result = { 0 };

  load (path, NULL, &result);
  g_assert_no_error (result.error);
  g_assert_true (GRAFT_IS_MODEL (result.model));
  g_assert_cmpstr (graft_model_get_path (result.model), ==, path);
  g_assert_cmpuint (graft_model_get_graph (result.model)->nodes->len, >, 0);
  g_assert_true (result.progress_on_main_thread);
  g_object_unref (result.model);
}

static void
test_load_bad_file (void)
{
  g_autofree char *dir = graft_test_scratch_dir ("graft-open-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "junk.onnx", NULL);
  LoadResult result = { 0 };

  g_assert_true (g_file_set_contents (path, "\xff\xff\xff\xff junk", -1, NULL));
  load (path, NULL, &result);
  g_assert_null (result.model);
  g_assert_nonnull (result.error);
  g_assert_nonnull (strstr (result.error->message, "junk.onnx"));
  g_clear_error (&result.error);
  g_unlink (path);
  g_rmdir (dir);
}

static void
test_load_missing_file (void)
{
  LoadResult result = { 0 };

  load ("/nonexistent/graft/model.onnx", NULL, &result);
  g_assert_null (result.model);
  g_assert_nonnull (result.error);
  g_assert_nonnull (strstr (result.error->message, "/nonexistent/graft/model.onnx"));
  g_clear_error (&result.error);
}

static void
test_load_cancelled (void)
{
  g_autofree char *path = sample_path ();
  g_autoptr(GCancellable) cancellable = g_cancellable_new ();
  LoadResult result = { 0 };

  g_cancellable_cancel (cancellable);
  load (path, cancellable, &result);
  g_assert_null (result.model);
  g_assert_true (g_error_matches (result.error, G_IO_ERROR, G_IO_ERROR_CANCELLED)
                 || g_error_matches (result.error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_CANCELLED));
  /* No progress is delivered for a cancelled load. */
  g_assert_cmpuint (result.n_progress, ==, 0);
  g_clear_error (&result.error);
}

int
main (int argc, char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/gui/model-open/sample", test_load_sample);
  g_test_add_func ("/gui/model-open/bad-file", test_load_bad_file);
  g_test_add_func ("/gui/model-open/missing-file", test_load_missing_file);
  g_test_add_func ("/gui/model-open/cancelled", test_load_cancelled);
  return g_test_run ();
}
