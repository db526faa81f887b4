/* The document (app/gui/document.c) without a display: real files opened
 * on its worker, edits with undo and redo announced by "changed", saving
 * (the file re-opens equal, its mode kept), the file monitor (a write by
 * someone else is a change on disk, the document's own save is not), and
 * loads that fail. */
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <glib/gstdio.h>

#include "document.h"
#include "loader.h"
#include "edit/edit-operation.h"
#include "gui-fixtures.h"
#include "../edit/ir-compare.h"
#include "../test-python.h"
#include "../test-scratch.h"

/* What the document said, in order. */
typedef struct {
  GArray *changes;            /* GraftDocumentChange */
  GPtrArray *descriptions;    /* of each change, "" for none */
  guint n_modified_notes;
  guint n_saved;
  char *saved_path;
  guint n_changed_on_disk;
  gboolean deleted_on_disk;
  guint n_loaded;
  guint n_failed;
  GError *failure;
  guint n_progress;
  guint n_checked;
} Heard;

static void
on_changed (GraftDocument *document, int change, const char *description, Heard *heard)
{
  g_array_append_val (heard->changes, change);
  g_ptr_array_add (heard->descriptions, g_strdup (description != NULL ? description : ""));
}

static void
on_modified (GraftDocument *document, GParamSpec *pspec, Heard *heard)
{
  heard->n_modified_notes++;
}

static void
on_saved (GraftDocument *document, const char *path, Heard *heard)
{
  heard->n_saved++;
  g_free (heard->saved_path);
  heard->saved_path = g_strdup (path);
}

static void
on_changed_on_disk (GraftDocument *document, gboolean deleted, Heard *heard)
{
  heard->n_changed_on_disk++;
  heard->deleted_on_disk = deleted;
}

static void
on_loaded (GraftDocument *document, const char *path, Heard *heard)
{
  heard->n_loaded++;
  /* The document shows the new model when it says so. */
  g_assert_nonnull (graft_document_get_model (document));
  g_assert_false (graft_document_is_loading (document));
}

static void
on_load_failed (GraftDocument *document, const char *path, const GError *error, Heard *heard)
{
  heard->n_failed++;
  g_clear_error (&heard->failure);
  heard->failure = g_error_copy (error);
}

static void
on_load_progress (GraftDocument *document, double fraction, Heard *heard)
{
  heard->n_progress++;
  g_assert_cmpfloat (fraction, >=, 0);
  g_assert_cmpfloat (fraction, <=, 1);
}

static void
on_checked (GraftDocument *document, Heard *heard)
{
  heard->n_checked++;
  g_assert_false (graft_document_is_checking (document));
}

static GraftDocument *
new_document (Heard *heard)
{
  GraftDocument *document = graft_document_new ();

  memset (heard, 0, sizeof *heard);
  heard->changes = g_array_new (FALSE, FALSE, sizeof (GraftDocumentChange));
  heard->descriptions = g_ptr_array_new_with_free_func (g_free);
  g_signal_connect (document, "changed", G_CALLBACK (on_changed), heard);
  g_signal_connect (document, "notify::modified", G_CALLBACK (on_modified), heard);
  g_signal_connect (document, "saved", G_CALLBACK (on_saved), heard);
  g_signal_connect (document, "changed-on-disk", G_CALLBACK (on_changed_on_disk), heard);
  g_signal_connect (document, "loaded", G_CALLBACK (on_loaded), heard);
  g_signal_connect (document, "load-failed", G_CALLBACK (on_load_failed), heard);
  g_signal_connect (document, "load-progress", G_CALLBACK (on_load_progress), heard);
  g_signal_connect (document, "checked", G_CALLBACK (on_checked), heard);
  return document;
}

static void
heard_clear (Heard *heard)
{
  g_array_unref (heard->changes);
  g_ptr_array_unref (heard->descriptions);
  g_free (heard->saved_path);
  g_clear_error (&heard->failure);
}

/* Runs the main context until *counter reaches at_least, for at most
 * seconds; TRUE if it did. */
static gboolean
wait_for (const guint *counter, guint at_least, double seconds)
{
  gint64 deadline = g_get_monotonic_time () + (gint64) (seconds * G_USEC_PER_SEC);

  while (*counter < at_least && g_get_monotonic_time () < deadline)
    if (!g_main_context_iteration (NULL, FALSE))
      g_usleep (10000);
  return *counter >= at_least;
}

/* Loads path into document through its worker and waits for the model. */
static void
load_and_wait (GraftDocument *document, Heard *heard, const char *path)
{
  guint loaded = heard->n_loaded;

  g_assert_true (graft_document_load (document, path));
  g_assert_true (graft_document_is_loading (document));
  g_assert_true (wait_for (&heard->n_loaded, loaded + 1, 60));
  g_assert_cmpuint (heard->n_failed, ==, 0);
  g_assert_cmpstr (graft_model_get_path (graft_document_get_model (document)), ==, path);
}

static char *
copy_sample (const char *dir, const char *name)
{
  g_autofree char *sample = g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "data", "samples", "tiny-cnn.onnx", NULL);
  char *path = g_build_filename (dir, name, NULL);
  g_autofree char *bytes = NULL;
  gsize length;

  g_assert_true (g_file_get_contents (sample, &bytes, &length, NULL));
  g_assert_true (g_file_set_contents (path, bytes, length, NULL));
  return path;
}

static GraftNode *
find_node (GraftDocument *document, const char *name)
{
  GraftGraph *graph = graft_model_get_graph (graft_document_get_model (document));

  for (guint i = 0; i < graph->nodes->len; i++)
    if (g_strcmp0 (((GraftNode *) g_ptr_array_index (graph->nodes, i))->name, name) == 0)
      return g_ptr_array_index (graph->nodes, i);
  return NULL;
}

static GraftEdit *
rename_node_edit (const char *node, const char *to)
{
  g_autoptr(GError) error = NULL;
  GraftEdit *edit = graft_edit_new_operation ("rename-node",
                                              graft_edit_params_new ("node", g_variant_new_string (node),
                                                                     "to", g_variant_new_string (to), NULL),
                                              &error);

  g_assert_no_error (error);
  return edit;
}

static void
assert_last_change (Heard *heard, guint n_changes, GraftDocumentChange change, const char *description)
{
  g_assert_cmpuint (heard->changes->len, ==, n_changes);
  g_assert_cmpint (g_array_index (heard->changes, GraftDocumentChange, n_changes - 1), ==, change);
  g_assert_cmpstr (g_ptr_array_index (heard->descriptions, n_changes - 1), ==, description);
}

/* An ONNX file: an edit, undo, redo, each announced with what changed;
 * an edit of an input dim hands out its copy for the proof. */
static void
test_onnx_edit_undo_redo (void)
{
  g_autofree char *dir = graft_test_scratch_dir ("graft-document-XXXXXX", NULL);
  g_autofree char *path = copy_sample (dir, "model.onnx");
  g_autoptr(GraftEdit) rename = NULL;
  g_autoptr(GraftEdit) dynamic = graft_edit_new_make_dim_dynamic ("image", 2, "height");
  g_autoptr(GraftModel) to_verify = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *first = NULL;
  const char *description;
  Heard heard;
  GraftDocument *document = new_document (&heard);

  g_assert_null (graft_document_get_model (document));
  load_and_wait (document, &heard, path);
  g_assert_cmpstr (graft_document_get_title (document), ==, "model.onnx");
  g_assert_cmpstr (graft_document_get_path (document), ==, path);
  g_assert_cmpstr (graft_document_get_watched_path (document), ==, path);
  g_assert_null (graft_document_get_saved_path (document));
  g_assert_false (graft_document_is_modified (document));
  g_assert_cmpstr (graft_document_get_save_format (document)->id, ==, "onnx");
  g_assert_cmpuint (heard.changes->len, ==, 0);

  /* The check on its worker: lint, the inferred shapes, a target's
   * verdicts. Its copy of the graph is the first edit's undo snapshot. */
  graft_document_check (document, NULL, graft_deploy_target_lookup ("ort-nnapi"));
  g_assert_true (graft_document_is_checking (document));
  g_assert_true (wait_for (&heard.n_checked, 1, 60));
  g_assert_nonnull (graft_document_get_diagnostics (document));
  g_assert_nonnull (graft_document_get_inference (document));
  g_assert_nonnull (graft_document_get_target_report (document));
  g_assert_cmpuint (graft_document_get_target_report (document)->n_nodes, ==,
                    graft_model_get_graph (graft_document_get_model (document))->nodes->len);

  first = g_strdup (((GraftNode *) g_ptr_array_index (graft_model_get_graph (graft_document_get_model (document))->nodes, 0))->name);
  rename = rename_node_edit (first, "renamed_by_the_document_test");
  description = graft_edit_get_description (rename);
  g_assert_true (graft_document_apply_edit (document, rename, &to_verify, &error));
  g_assert_no_error (error);
  /* The results pointed into the graph the edit replaced. */
  g_assert_null (graft_document_get_diagnostics (document));
  g_assert_null (graft_document_get_target_report (document));
  /* A rename changes no input dim: nothing to prove. */
  g_assert_null (to_verify);
  assert_last_change (&heard, 1, GRAFT_DOCUMENT_CHANGE_EDIT, description);
  g_assert_nonnull (find_node (document, "renamed_by_the_document_test"));
  g_assert_null (find_node (document, first));
  g_assert_true (graft_document_is_modified (document));
  g_assert_cmpuint (heard.n_modified_notes, ==, 1);

  g_assert_true (graft_document_undo (document, &error));
  g_assert_no_error (error);
  assert_last_change (&heard, 2, GRAFT_DOCUMENT_CHANGE_UNDO, description);
  g_assert_nonnull (find_node (document, first));
  g_assert_false (graft_document_is_modified (document));

  g_assert_true (graft_document_redo (document, &error));
  g_assert_no_error (error);
  assert_last_change (&heard, 3, GRAFT_DOCUMENT_CHANGE_REDO, description);
  g_assert_nonnull (find_node (document, "renamed_by_the_document_test"));
  g_assert_true (graft_document_is_modified (document));
  g_assert_cmpuint (heard.n_modified_notes, ==, 3);

  /* Nothing left to redo: an error, and no announcement. */
  g_assert_false (graft_document_redo (document, &error));
  g_assert_nonnull (error);
  g_clear_error (&error);
  g_assert_cmpuint (heard.changes->len, ==, 3);

  /* A dim made dynamic: the copy to prove it on, already edited. */
  g_assert_true (graft_document_apply_edit (document, dynamic, &to_verify, &error));
  g_assert_no_error (error);
  assert_last_change (&heard, 4, GRAFT_DOCUMENT_CHANGE_EDIT, graft_edit_get_description (dynamic));
  g_assert_nonnull (to_verify);
  g_assert_true (to_verify != graft_document_get_model (document));
  {
    GraftValue *input = g_ptr_array_index (graft_model_get_graph (to_verify)->inputs, 0);
    g_assert_cmpstr (input->name, ==, "image");
    g_assert_cmpint (input->shape.dims[2].kind, ==, GRAFT_DIM_SYMBOLIC);
  }

  /* Several edits, one announcement. */
  graft_document_begin_changes (document);
  g_assert_true (graft_document_undo (document, &error));
  g_assert_true (graft_document_undo (document, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (heard.changes->len, ==, 4);
  graft_document_end_changes (document);
  assert_last_change (&heard, 5, GRAFT_DOCUMENT_CHANGE_EDITS, "");
  g_assert_false (graft_document_is_modified (document));

  /* A check dropped by another: only the second lands. */
  graft_document_check (document, NULL, NULL);
  graft_document_check (document, NULL, NULL);
  g_assert_true (wait_for (&heard.n_checked, 2, 60));
  g_assert_false (wait_for (&heard.n_checked, 3, 1));
  g_assert_null (graft_document_get_target_report (document));

  g_assert_finalize_object (document);
  heard_clear (&heard);
}

static guint
file_mode (const char *path)
{
  GStatBuf info;

  g_assert_cmpint (g_stat (path, &info), ==, 0);
  return info.st_mode & 07777;
}

static uid_t
file_owner (const char *path)
{
  GStatBuf info;

  g_assert_cmpint (g_stat (path, &info), ==, 0);
  return info.st_uid;
}

/* Save writes the edited model where asked, keeping the mode of the file
 * it replaces; it opens again equal. The document's own write is no
 * change on disk; another program's write is, and so is a deletion. */
static void
test_save_and_watch (void)
{
  g_autofree char *dir = graft_test_scratch_dir ("graft-document-XXXXXX", NULL);
  g_autofree char *path = copy_sample (dir, "model.onnx");
  g_autofree char *target = g_build_filename (dir, "edited.onnx", NULL);
  g_autoptr(GraftEdit) rename = NULL;
  g_autoptr(GraftModel) reopened = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GString) why = g_string_new (NULL);
  g_autofree char *sample_bytes = NULL;
  gsize sample_length;
  g_autofree char *first = NULL;
  Heard heard;
  GraftDocument *document = new_document (&heard);

  load_and_wait (document, &heard, path);
  first = g_strdup (((GraftNode *) g_ptr_array_index (graft_model_get_graph (graft_document_get_model (document))->nodes, 0))->name);
  rename = rename_node_edit (first, "saved_name");
  g_assert_true (graft_document_apply_edit (document, rename, NULL, &error));
  g_assert_no_error (error);

  /* An older file, readable by the group only; run as root, it belongs
   * to someone else too (as a file saved into a shared folder may). */
  g_assert_true (g_file_set_contents (target, "an older file", -1, NULL));
  g_assert_cmpint (g_chmod (target, 0640), ==, 0);
  if (geteuid () == 0)
    g_assert_cmpint (chown (target, 4321, 4321), ==, 0);
  g_assert_true (graft_document_save (document, target, FALSE, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (heard.n_saved, ==, 1);
  g_assert_cmpstr (heard.saved_path, ==, target);
  g_assert_cmpuint (file_mode (target), ==, 0640);
  if (geteuid () == 0)
    g_assert_cmpuint (file_owner (target), ==, 4321);
  g_assert_cmpstr (graft_document_get_title (document), ==, "edited.onnx");
  g_assert_cmpstr (graft_document_get_path (document), ==, target);
  g_assert_cmpstr (graft_document_get_saved_path (document), ==, target);
  g_assert_cmpstr (graft_document_get_watched_path (document), ==, target);
  g_assert_false (graft_document_is_modified (document));
  /* Saving changes no graph: nothing to show again. */
  g_assert_cmpuint (heard.changes->len, ==, 1);

  reopened = graft_model_load (target, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  if (!graft_test_models_equal (graft_document_get_model (document), reopened, why))
    g_error ("the saved file differs from the model saved: %s", why->str);

  /* The model's own file is replaced only when the caller says so. */
  g_assert_false (graft_document_save (document, target, FALSE, &error));
  g_assert_nonnull (error);
  g_clear_error (&error);
  g_assert_true (graft_document_save (document, target, TRUE, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (heard.n_saved, ==, 2);
  g_assert_cmpuint (file_mode (target), ==, 0640);
  if (geteuid () == 0)
    g_assert_cmpuint (file_owner (target), ==, 4321);

  /* The document's own writes: no change on disk, however long one waits
   * for GIO's delayed events. */
  g_assert_false (wait_for (&heard.n_changed_on_disk, 1, 2.5));

  /* Another program writes the file (torch.onnx.export again, say). */
  g_assert_true (g_file_get_contents (path, &sample_bytes, &sample_length, NULL));
  g_assert_true (g_file_set_contents (target, sample_bytes, sample_length, NULL));
  g_assert_true (wait_for (&heard.n_changed_on_disk, 1, 20));
  g_assert_false (heard.deleted_on_disk);
  /* The model in memory stays as it was. */
  g_assert_nonnull (find_node (document, "saved_name"));

  g_assert_cmpint (g_unlink (target), ==, 0);
  g_assert_true (wait_for (&heard.n_changed_on_disk, heard.n_changed_on_disk + 1, 20));
  g_assert_true (heard.deleted_on_disk);

  g_assert_finalize_object (document);
  heard_clear (&heard);
}

/* A scripted TorchScript file through the same worker: shown, edited and
 * undone; Save has no TorchScript writer (the window exports ONNX). */
static void
test_torchscript (void)
{
  g_autofree char *path = generated_fixture ("make-small-cnn-script.py", "small-cnn-script.pt");
  g_autoptr(GraftEdit) rename = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *first = NULL;
  Heard heard;
  GraftDocument *document = new_document (&heard);

  load_and_wait (document, &heard, path);
  g_assert_cmpint (graft_model_get_format (graft_document_get_model (document)), ==, GRAFT_MODEL_FORMAT_TORCHSCRIPT);
  g_assert_cmpstr (graft_document_get_title (document), ==, "small-cnn-script.pt");
  g_assert_null (graft_document_get_save_format (document));

  first = g_strdup (((GraftNode *) g_ptr_array_index (graft_model_get_graph (graft_document_get_model (document))->nodes, 0))->name);
  rename = rename_node_edit (first, "renamed_in_torchscript");
  g_assert_true (graft_document_apply_edit (document, rename, NULL, &error));
  g_assert_no_error (error);
  assert_last_change (&heard, 1, GRAFT_DOCUMENT_CHANGE_EDIT, graft_edit_get_description (rename));
  g_assert_nonnull (find_node (document, "renamed_in_torchscript"));
  g_assert_true (graft_document_undo (document, &error));
  g_assert_no_error (error);
  assert_last_change (&heard, 2, GRAFT_DOCUMENT_CHANGE_UNDO, graft_edit_get_description (rename));
  g_assert_nonnull (find_node (document, first));
  g_assert_false (graft_document_is_modified (document));

  g_assert_finalize_object (document);
  heard_clear (&heard);
}

/* Loads that fail say why, and the model shown stays: a broken file on
 * the worker, a folder at once; a cancelled load says nothing. */
static void
test_load_failures (void)
{
  g_autofree char *dir = graft_test_scratch_dir ("graft-document-XXXXXX", NULL);
  g_autofree char *path = copy_sample (dir, "model.onnx");
  g_autofree char *broken = g_build_filename (dir, "broken.onnx", NULL);
  GraftModel *shown;
  Heard heard;
  GraftDocument *document = new_document (&heard);

  load_and_wait (document, &heard, path);
  shown = graft_document_get_model (document);

  /* The first 300 bytes of a real file: a protobuf cut short. */
  {
    g_autofree char *bytes = NULL;
    gsize length;
    g_assert_true (g_file_get_contents (path, &bytes, &length, NULL));
    g_assert_true (g_file_set_contents (broken, bytes, MIN (length, 300), NULL));
  }
  g_assert_true (graft_document_load (document, broken));
  g_assert_true (wait_for (&heard.n_failed, 1, 60));
  g_assert_nonnull (heard.failure);
  g_assert_nonnull (strstr (heard.failure->message, "broken.onnx"));
  g_assert_false (graft_document_is_loading (document));
  g_assert_true (graft_document_get_model (document) == shown);
  g_assert_cmpstr (graft_document_get_title (document), ==, "model.onnx");
  g_assert_cmpuint (heard.n_loaded, ==, 1);

  /* A folder is refused before any worker reads it. */
  g_assert_false (graft_document_load (document, dir));
  g_assert_cmpuint (heard.n_failed, ==, 2);
  g_assert_error (heard.failure, G_IO_ERROR, G_IO_ERROR_IS_DIRECTORY);
  g_assert_false (graft_document_is_loading (document));

  /* Cancelled: neither "loaded" nor "load-failed", the model stays. */
  g_assert_true (graft_document_load (document, path));
  graft_document_cancel_load (document);
  g_assert_false (graft_document_is_loading (document));
  g_assert_false (wait_for (&heard.n_loaded, 2, 2));
  g_assert_cmpuint (heard.n_failed, ==, 2);
  g_assert_true (graft_document_get_model (document) == shown);

  g_assert_finalize_object (document);
  heard_clear (&heard);
}

int
main (int argc, char *argv[])
{
  g_test_init (&argc, &argv, NULL);
  graft_test_require_venv ();

  g_test_add_func ("/gui/document/onnx-edit-undo-redo", test_onnx_edit_undo_redo);
  g_test_add_func ("/gui/document/save-and-watch", test_save_and_watch);
  g_test_add_func ("/gui/document/torchscript", test_torchscript);
  g_test_add_func ("/gui/document/load-failures", test_load_failures);
  return g_test_run ();
}
