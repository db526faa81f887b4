/* libFuzzer harness: recipes (edit/recipe.h) replayed on a small model
 * with an If whose branches reuse the top graph's node names, then saved
 * as a recipe again, undone step by step and written as ONNX. */
#include "edit/recipe.h"
#include "onnx/reader.h"
#include "onnx/writer.h"
#include "recipe-model.h"

#include <stdlib.h>

int LLVMFuzzerInitialize (int *argc, char ***argv);
int LLVMFuzzerTestOneInput (const guint8 *data, size_t size);

/* A critical or a warning (json-glib's on a node of the wrong type, say)
 * is a finding: abort(), which libFuzzer catches and saves the input
 * for, where G_DEBUG=fatal-warnings would end the run with SIGTRAP. */
static GLogWriterOutput
abort_on_warning (GLogLevelFlags level, const GLogField *fields, gsize n_fields, gpointer user_data)
{
  GLogWriterOutput written = g_log_writer_standard_streams (level, fields, n_fields, user_data);

  if (level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING))
    abort ();
  return written;
}

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  g_log_set_writer_func (abort_on_warning, NULL, NULL);
  return 0;
}

int
LLVMFuzzerTestOneInput (const guint8 *data, size_t size)
{
  g_autoptr(GBytes) bytes = g_bytes_new_static (recipe_model_onnx, sizeof recipe_model_onnx);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_onnx_read_bytes (bytes, "fuzz.onnx", NULL, NULL, NULL, NULL, &error);
  g_autoptr(GraftEditHistory) history = NULL;
  g_autoptr(GPtrArray) applied = g_ptr_array_new_with_free_func (g_object_unref);

  g_assert_no_error (error);
  history = graft_edit_history_new (model);
  if (!graft_recipe_replay ((const char *) data, size, history, applied, &error))
    g_assert (error != NULL);
  g_clear_error (&error);
  /* Every step that applied is recorded again. */
  g_autofree char *again = graft_recipe_to_json (applied, &error);
  g_assert_no_error (error);
  g_assert (again != NULL);
  g_autoptr(GBytes) written = graft_onnx_model_to_bytes (graft_edit_history_get_model (history), NULL);
  g_assert (written == NULL || g_bytes_get_size (written) > 0);
  while (graft_edit_history_can_undo (history))
    g_assert (graft_edit_history_undo (history, NULL));
  return 0;
}
