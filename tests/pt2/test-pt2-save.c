/* Saving torch.export programs as .pt2 (pt2/exported-program-writer.h,
 * formats.h), checked by torch 2.13 itself: programs exported by
 * tests/pt2/make-pt2-save-fixtures.py (the pt2 fixtures, a torchvision
 * ResNet-18 and a transformers BERT with random weights) are read, saved
 * unedited, and torch.export.load must give the same graph, signature,
 * range constraints, weights and outputs (tests/pt2/compare-pt2.py). The
 * archive has PyTorch's layout; saving keeps the file's mode and refuses
 * what it cannot write. */
#include <string.h>
#include <sys/stat.h>
#include <glib/gstdio.h>
#include "loader.h"
#include "formats.h"
#include "ir/model-error.h"
#include "pytorch/torch-archive.h"
#include "../onnx/fixtures.h"
#include "pt2-test-common.h"
#include "../test-python.h"
#include "../test-scratch.h"


/* Relative to the fixture folder. */
static const char *const programs[] = {
  "programs/cnn_static.pt2", "programs/cnn_dynamic.pt2", "programs/encoder_dynamic.pt2",
  "programs/data_dependent.pt2", "programs/buffer_mutation.pt2", "programs/whisper_tiny.pt2",
  "programs/flat_cnn_static.pt2", "tv_resnet18.pt2", "hf_bert.pt2", "timm_efficientvit_b0.pt2",
};

static char *
saved_path (const char *dir, const char *program)
{
  g_autofree char *base = g_path_get_basename (program);
  return g_build_filename (dir, base, NULL);
}

/* The program at path (in the fixtures when relative), read and saved to out. */
static GraftModel *
load_and_save (const char *path, const char *out)
{
  g_autofree char *full = g_path_is_absolute (path) ? g_strdup (path) : g_build_filename (graft_test_pt2_save_fixtures (), path, NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (full, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_true (graft_format_save (model, out, NULL, FALSE, &error));
  g_assert_no_error (error);
  return g_steal_pointer (&model);
}

/* Runs tests/pt2/compare-pt2.py with args; its error carries the
 * script's stderr. */
static void
run_compare (GPtrArray *args)
{
  g_autofree char *python = graft_test_python ();
  g_autofree char *script = graft_test_source_path ("tests/pt2/compare-pt2.py");
  g_autoptr(GPtrArray) argv = g_ptr_array_new ();
  g_autoptr(GError) error = NULL;

  g_ptr_array_add (argv, python);
  g_ptr_array_add (argv, script);
  for (guint i = 0; i < args->len; i++)
    g_ptr_array_add (argv, g_ptr_array_index (args, i));
  g_ptr_array_add (argv, NULL);
  graft_test_spawn ((const char *const *) argv->pdata, &error);
  g_assert_no_error (error);
}

/* Every program, read and saved unedited, loads in torch as it was. */
static void
test_resave_loads_in_torch (void)
{
  g_autofree char *dir = graft_test_scratch_dir ("graft-pt2-save-XXXXXX", NULL);
  g_autoptr(GPtrArray) args = g_ptr_array_new_with_free_func (g_free);

  g_ptr_array_add (args, g_strdup ("same"));
  for (guint i = 0; i < G_N_ELEMENTS (programs); i++)
    {
      g_autofree char *path = g_build_filename (graft_test_pt2_save_fixtures (), programs[i], NULL);
      g_autofree char *out = saved_path (dir, programs[i]);
      g_autoptr(GError) error = NULL;
      g_autoptr(GraftModel) model = load_and_save (path, out);
      g_ptr_array_add (args, g_strdup (path));
      g_ptr_array_add (args, g_strdup (out));

      /* Graft reads its own file back to the same graph. */
      g_autoptr(GraftModel) again = graft_model_load (out, NULL, NULL, NULL, &error);
      g_assert_no_error (error);
      GraftGraph *a = graft_model_get_graph (model), *b = graft_model_get_graph (again);
      g_assert_cmpuint (a->nodes->len, ==, b->nodes->len);
      g_assert_cmpuint (a->inputs->len, ==, b->inputs->len);
      g_assert_cmpuint (a->outputs->len, ==, b->outputs->len);
      g_assert_cmpuint (a->initializers->len, ==, b->initializers->len);
      for (guint k = 0; k < a->nodes->len; k++)
        {
          GraftNode *na = g_ptr_array_index (a->nodes, k), *nb = g_ptr_array_index (b->nodes, k);
          g_assert_cmpstr (na->name, ==, nb->name);
          g_assert_cmpstr (na->op, ==, nb->op);
          g_assert_cmpuint (na->inputs->len, ==, nb->inputs->len);
          g_assert_cmpuint (na->attributes->len, ==, nb->attributes->len);
        }
    }
  run_compare (args);
}

/* PyTorch's container: one top folder named after the file, every
 * record's data 64-byte aligned, the records torch.export.save writes. */
static void
test_archive_layout (void)
{
  g_autofree char *dir = graft_test_scratch_dir ("graft-pt2-save-XXXXXX", NULL);
  g_autofree char *out = g_build_filename (dir, "my.model.v2.pt2", NULL);
  g_autoptr(GError) error = NULL;
  G_GNUC_UNUSED g_autoptr(GraftModel) model = load_and_save ("programs/cnn_dynamic.pt2", out);

  GraftTorchArchive *archive = graft_torch_archive_open (out, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (graft_torch_archive_get_prefix (archive), ==, "my.model.v2");
  const char *records[] = { "archive_format", "archive_version", ".data/version", "byteorder",
                            ".data/serialization_id", "models/model.json", "data/sample_inputs/model.pt",
                            "data/weights/model_weights_config.json", "data/constants/model_constants_config.json",
                            "data/weights/weight_0" };
  for (guint i = 0; i < G_N_ELEMENTS (records); i++)
    g_assert_true (graft_torch_archive_has (archive, records[i]));
  g_autoptr(GBytes) version = graft_torch_archive_read (archive, ".data/version", &error);
  g_assert_cmpmem (g_bytes_get_data (version, NULL), g_bytes_get_size (version), "6\n", 2);
  g_autoptr(GBytes) format = graft_torch_archive_read (archive, "archive_format", &error);
  g_assert_cmpmem (g_bytes_get_data (format, NULL), g_bytes_get_size (format), "pt2", 3);
  /* the local headers, in the file as written */
  g_autofree char *contents = NULL;
  gsize length = 0;
  g_assert_true (g_file_get_contents (out, &contents, &length, &error));
  g_assert_no_error (error);
  const guint8 *bytes = (const guint8 *) contents;
  for (guint i = 0; i < graft_torch_archive_get_n_entries (archive); i++)
    {
      const GraftTorchArchiveEntry *entry = graft_torch_archive_get_entry (archive, i);
      g_assert_cmpuint (entry->header_offset + 30, <=, length);
      const guint8 *header = bytes + entry->header_offset;
      guint64 data = entry->header_offset + 30 + (header[26] | header[27] << 8) + (header[28] | header[29] << 8);
      g_assert_cmpuint (entry->method, ==, 0);
      g_assert_cmpuint (data % 64, ==, 0);
    }
  graft_torch_archive_free (archive);
}

/* Saving over a file keeps its mode, never replaces the source unless
 * asked, and refuses formats the model cannot be written as. */
static void
test_save_rules (void)
{
  g_autofree char *dir = graft_test_scratch_dir ("graft-pt2-save-XXXXXX", NULL);
  g_autofree char *source = g_build_filename (graft_test_pt2_save_fixtures (), "programs/cnn_static.pt2", NULL);
  g_autofree char *copy = g_build_filename (dir, "copy.pt2", NULL);
  g_autofree char *out = g_build_filename (dir, "out.pt2", NULL);
  g_autoptr(GError) error = NULL;
  g_autofree char *contents = NULL;
  gsize len;
  GStatBuf st;

  g_assert_true (g_file_get_contents (source, &contents, &len, NULL));
  g_assert_true (g_file_set_contents (copy, contents, len, NULL));
  g_autoptr(GraftModel) model = graft_model_load (copy, NULL, NULL, NULL, &error);
  g_assert_no_error (error);

  g_assert_true (g_file_set_contents (out, "old", 3, NULL));
  g_assert_cmpint (g_chmod (out, 0640), ==, 0);
  g_assert_true (graft_format_save (model, out, NULL, FALSE, &error));
  g_assert_no_error (error);
  g_assert_cmpint (g_stat (out, &st), ==, 0);
  g_assert_cmpint (st.st_mode & 0777, ==, 0640);

  g_assert_false (graft_format_save (model, copy, NULL, FALSE, &error));
  g_assert_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSAFE);
  g_clear_error (&error);
  g_assert_true (graft_format_save (model, copy, NULL, TRUE, &error));
  g_assert_no_error (error);
  G_GNUC_UNUSED g_autoptr(GraftModel) reread = graft_model_load (copy, NULL, NULL, NULL, &error);
  g_assert_no_error (error);

  /* A TorchScript name is a format Graft reads only. */
  g_autofree char *torchscript = g_build_filename (dir, "out.pt", NULL);
  g_assert_false (graft_format_save (model, torchscript, NULL, FALSE, &error));
  g_assert_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED);
  g_assert_false (g_file_test (torchscript, G_FILE_TEST_EXISTS));
  g_clear_error (&error);

  /* An ONNX model is no torch.export program. */
  g_autofree char *onnx_path = graft_test_source_path ("data/samples/tiny-cnn.onnx");
  g_autoptr(GraftModel) onnx = graft_model_load (onnx_path, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_autofree char *onnx_out = g_build_filename (dir, "onnx.pt2", NULL);
  g_assert_false (graft_format_save (onnx, onnx_out, NULL, FALSE, &error));
  g_assert_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED);
  g_assert_nonnull (strstr (error->message, ".onnx"));
  g_assert_false (g_file_test (onnx_out, G_FILE_TEST_EXISTS));

}

/* One row per format: the extensions the GUI offers are the table's. */
static void
test_formats_table (void)
{
  g_assert_cmpstr (graft_format_for_path ("a/b/Model.PT2")->id, ==, "pt2");
  g_assert_cmpstr (graft_format_for_path ("x.onnx")->id, ==, "onnx");
  g_assert_cmpstr (graft_format_for_path ("x.pth")->id, ==, "torchscript");
  g_assert_null (graft_format_for_path ("x.bin"));
  g_auto(GStrv) patterns = graft_format_list_patterns ();
  g_assert_true (g_strv_contains ((const char *const *) patterns, "*.pt2"));
  g_assert_true (g_strv_contains ((const char *const *) patterns, "*.onnx"));
  g_assert_true (g_strv_contains ((const char *const *) patterns, "*.pte"));
  g_assert_cmpstr (graft_format_for_path ("x.pte")->mime_type, ==, "application/x-executorch-program");
}

/* An ExecuTorch program (a fuzz seed executorch wrote) is read, not
 * written: saving it as .pte names what it can be saved as instead. */
static void
test_pte_read_only (void)
{
  const char *source = g_getenv ("GRAFT_SOURCE_DIR");
  g_autofree char *path = g_build_filename (source ? source : ".", "tests", "fuzz", "corpus", "torch-archive",
                                            "executorch-mlp.pte", NULL);
  g_autofree char *dir = graft_test_scratch_dir ("graft-pte-save-XXXXXX", NULL);
  g_autofree char *out = g_build_filename (dir, "copy.pte", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);

  g_assert_no_error (error);
  g_assert_cmpint (graft_model_get_format (model), ==, GRAFT_MODEL_FORMAT_EXECUTORCH);
  g_assert_false (graft_format_save (model, out, NULL, FALSE, &error));
  g_assert_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "does not write them"));
  g_assert_false (g_file_test (out, G_FILE_TEST_EXISTS));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/pt2-save/formats-table", test_formats_table);
  g_test_add_func ("/pt2-save/pte-read-only", test_pte_read_only);
  g_test_add_func ("/pt2-save/archive-layout", test_archive_layout);
  g_test_add_func ("/pt2-save/rules", test_save_rules);
  g_test_add_func ("/pt2-save/resave-loads-in-torch", test_resave_loads_in_torch);
  return g_test_run ();
}
