/* ONNX writer: in-memory round trips of every IR feature, atomic saving,
 * refusing to overwrite the source. */
#include <glib/gstdio.h>
#include <string.h>
#include "ir-compare.h"
#include "loader.h"
#include "onnx/reader.h"
#include "onnx/writer.h"
#include "../test-scratch.h"

static GraftTensor *
float_tensor (const char *name, int rank, const gint64 *dims, const float *values)
{
  GraftTensor *tensor = graft_tensor_new (name, GRAFT_DTYPE_FLOAT32, rank, dims);
  g_autoptr(GBytes) bytes = g_bytes_new (values, graft_tensor_get_nbytes (tensor));

  g_assert_true (graft_tensor_set_data (tensor, bytes, NULL));
  return tensor;
}

static void
set_type (GraftValue *value, GraftDType dtype, int rank, const char *const *dims)
{
  value->dtype = dtype;
  graft_shape_init (&value->shape, rank);
  for (int i = 0; i < rank; i++)
    {
      char *end = NULL;
      gint64 n = g_ascii_strtoll (dims[i], &end, 10);
      value->shape.dims[i] = *end == '\0' ? graft_dim_fixed (n)
                             : strcmp (dims[i], "?") == 0 ? graft_dim_unknown () : graft_dim_symbolic (dims[i]);
    }
}

/* A model using every attribute type, a subgraph with an outer-scope
 * reference, value_info, string tensors, metadata and a local function. */
static GraftModel *
build_model (void)
{
  GraftModel *model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *graph = graft_graph_new ("everything");
  GraftGraph *then_branch = graft_graph_new ("then");
  GraftGraph *body = graft_graph_new ("Twice");
  GraftFunction *function = g_new0 (GraftFunction, 1);
  static const float w_values[] = { 1, 2, 3, 4, 5, 6 };
  static const gint64 w_dims[] = { 2, 3 };
  static const gint64 ints[] = { 1, -2, 3 };
  static const double floats[] = { 0.5, -1.25 };
  GraftValue *x, *w, *cond, *sum, *y, *words, *inner, *f_in, *f_out;
  GraftNode *add, *iff, *node, *call;
  GraftAttribute *attribute;
  GraftTensor *strings;

  graft_model_set_ir_version (model, 8);
  graft_model_set_producer (model, "graft-test", "1.0");
  graft_model_set_domain (model, "org.graft.test");
  graft_model_set_model_version (model, 3);
  graft_model_set_doc_string (model, "a model for the writer test");
  graft_model_set_opset (model, "", 17);
  graft_model_set_opset (model, "com.example", 2);
  graft_model_add_metadata (model, "author", "graft");
  graft_model_add_metadata (model, "note", "ünïcode");

  x = graft_graph_ensure_value (graph, "x");
  set_type (x, GRAFT_DTYPE_FLOAT32, 2, (const char *[]) { "batch", "3" });
  x->doc_string = g_strdup ("the input");
  graft_graph_add_input (graph, x);
  cond = graft_graph_ensure_value (graph, "cond");
  set_type (cond, GRAFT_DTYPE_BOOL, 0, NULL);
  graft_graph_add_input (graph, cond);
  w = graft_graph_ensure_value (graph, "w");
  graft_graph_add_initializer (graph, w, float_tensor ("w", 2, w_dims, w_values));

  strings = graft_tensor_new ("words", GRAFT_DTYPE_STRING, 1, (gint64[]) { 2 });
  g_ptr_array_add (strings->strings, g_bytes_new_static ("a", 1));
  g_ptr_array_add (strings->strings, g_bytes_new_static ("b\0c", 3));
  words = graft_graph_ensure_value (graph, "words");
  graft_graph_add_initializer (graph, words, strings);

  add = graft_graph_add_node (graph, NULL, "Add", "/block/Add");
  add->doc_string = g_strdup ("adds");
  graft_node_add_input (add, x);
  graft_node_add_input (add, w);
  sum = graft_graph_ensure_value (graph, "sum");
  set_type (sum, GRAFT_DTYPE_FLOAT32, 2, (const char *[]) { "batch", "?" });
  graft_node_add_output (add, sum);

  node = graft_graph_add_node (graph, "com.example", "Everything", "attrs");
  graft_node_add_input (node, sum);
  graft_node_add_input (node, NULL);
  graft_node_add_input (node, words);
  graft_node_add_attribute (node, graft_attribute_new_int ("i", -7));
  graft_node_add_attribute (node, graft_attribute_new_float ("f", 0.25));
  graft_node_add_attribute (node, graft_attribute_new_string ("s", "SAME_UPPER"));
  graft_node_add_attribute (node, graft_attribute_new_ints ("ints", ints, 3));
  graft_node_add_attribute (node, graft_attribute_new_floats ("floats", floats, 2));
  attribute = graft_attribute_new ("t", GRAFT_ATTR_TENSOR);
  attribute->t = float_tensor ("t", 2, w_dims, w_values);
  graft_node_add_attribute (node, attribute);
  attribute = graft_attribute_new ("strings", GRAFT_ATTR_STRINGS);
  g_ptr_array_add (attribute->strings, g_bytes_new_static ("x", 1));
  g_ptr_array_add (attribute->strings, g_bytes_new_static ("", 0));
  graft_node_add_attribute (node, attribute);
  attribute = graft_attribute_new ("tensors", GRAFT_ATTR_TENSORS);
  g_ptr_array_add (attribute->tensors, float_tensor ("t0", 2, w_dims, w_values));
  graft_node_add_attribute (node, attribute);
  attribute = graft_attribute_new ("tp", GRAFT_ATTR_TYPE);
  attribute->s = g_bytes_new_static ("seq(tensor(int64))", 18);
  graft_node_add_attribute (node, attribute);
  attribute = graft_attribute_new ("sparse", GRAFT_ATTR_SPARSE_TENSOR);
  attribute->t = float_tensor ("sp", 2, w_dims, (const float[]) { 0, 0, 3, 0, 5, 0 });
  graft_node_add_attribute (node, attribute);
  y = graft_graph_ensure_value (graph, "attrs_out");
  graft_node_add_output (node, y);
  graft_node_add_output (node, NULL);

  iff = graft_graph_add_node (graph, "", "If", "if");
  graft_node_add_input (iff, cond);
  inner = graft_graph_ensure_value (then_branch, "inner");
  node = graft_graph_add_node (then_branch, "", "Identity", "pass");
  graft_node_add_input (node, sum);   /* outer scope */
  graft_node_add_output (node, inner);
  set_type (inner, GRAFT_DTYPE_FLOAT32, 2, (const char *[]) { "batch", "3" });
  graft_graph_add_output (then_branch, inner);
  graft_node_add_attribute (iff, graft_attribute_new_graph ("then_branch", then_branch));
  graft_node_adopt_subgraph (iff, then_branch);
  graft_node_add_output (iff, graft_graph_ensure_value (graph, "if_out"));

  /* Local function com.example::Twice(a) = a + a, called once. */
  function->name = g_strdup ("Twice");
  function->domain = g_strdup ("com.example");
  function->attribute_names = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (function->attribute_names, g_strdup ("alpha"));
  function->opsets = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_hash_table_insert (function->opsets, g_strdup ("onnx"), g_memdup2 (&(gint64) { 17 }, sizeof (gint64)));
  function->body = body;
  f_in = graft_graph_ensure_value (body, "a");
  graft_graph_add_input (body, f_in);
  node = graft_graph_add_node (body, "", "Add", "");
  graft_node_add_input (node, f_in);
  graft_node_add_input (node, f_in);
  f_out = graft_graph_ensure_value (body, "b");
  graft_node_add_output (node, f_out);
  graft_graph_add_output (body, f_out);
  graft_model_add_function (model, function);

  call = graft_graph_add_node (graph, "com.example", "Twice", "call");
  graft_node_add_input (call, sum);
  attribute = graft_attribute_new ("alpha", GRAFT_ATTR_FLOAT);
  attribute->f = 2.0;
  graft_node_add_attribute (call, attribute);
  graft_node_add_output (call, graft_graph_ensure_value (graph, "twice"));

  graft_graph_add_output (graph, graft_graph_lookup_value (graph, "twice"));
  set_type (graft_graph_lookup_value (graph, "twice"), GRAFT_DTYPE_FLOAT32, 2, (const char *[]) { "batch", "3" });
  graft_graph_add_output (graph, graft_graph_lookup_value (graph, "if_out"));
  graft_graph_build_groups_from_names (graph);
  graft_model_set_graph (model, graph);
  return model;
}

static void
test_round_trip_in_memory (void)
{
  g_autoptr(GraftModel) model = build_model ();
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) bytes = graft_onnx_model_to_bytes (model, &error);
  g_autoptr(GraftModel) again = NULL;
  g_autoptr(GBytes) bytes_again = NULL;
  g_autoptr(GString) why = g_string_new (NULL);

  g_assert_no_error (error);
  again = graft_onnx_read_bytes (bytes, "memory", NULL, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  if (!graft_test_models_equal (model, again, why))
    g_error ("round trip differs: %s", why->str);
  /* Serialising is deterministic: the second save is byte-identical. */
  bytes_again = graft_onnx_model_to_bytes (again, &error);
  g_assert_no_error (error);
  g_assert_true (g_bytes_equal (bytes, bytes_again));
}

static char *
make_temp_dir (void)
{
  g_autoptr(GError) error = NULL;
  char *dir = graft_test_scratch_dir ("graft-writer-XXXXXX", &error);

  g_assert_no_error (error);
  return dir;
}

static guint
count_entries (const char *dir)
{
  g_autoptr(GDir) d = g_dir_open (dir, 0, NULL);
  guint n = 0;

  while (g_dir_read_name (d) != NULL)
    n++;
  return n;
}

static void
test_write_file_atomic (void)
{
  g_autoptr(GraftModel) model = build_model ();
  g_autofree char *dir = make_temp_dir ();
  g_autofree char *path = g_build_filename (dir, "out.onnx", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) loaded = NULL;
  g_autoptr(GString) why = g_string_new (NULL);
  GStatBuf st;

  g_assert_true (graft_onnx_write_file (model, path, GRAFT_ONNX_WRITE_NONE, &error));
  g_assert_no_error (error);
  /* Only the file itself: the temporary file was renamed, not left behind. */
  g_assert_cmpuint (count_entries (dir), ==, 1);
  g_assert_cmpint (g_stat (path, &st), ==, 0);
  g_assert_cmpint (st.st_mode & 0600, ==, 0600);
  loaded = graft_model_load (path, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_true (graft_test_models_equal (model, loaded, why));

  /* Saving again replaces the file whole. */
  g_assert_true (graft_onnx_write_file (model, path, GRAFT_ONNX_WRITE_NONE, &error));
  g_assert_cmpuint (count_entries (dir), ==, 1);
  graft_test_remove_tree (dir);
}

static void
test_refuses_source (void)
{
  g_autoptr(GraftModel) model = build_model ();
  g_autofree char *dir = make_temp_dir ();
  g_autofree char *path = g_build_filename (dir, "model.onnx", NULL);
  g_autofree char *link = g_build_filename (dir, "link.onnx", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) opened = NULL;
  g_autofree char *before = NULL, *after = NULL;
  gsize before_len, after_len;

  g_assert_true (graft_onnx_write_file (model, path, GRAFT_ONNX_WRITE_NONE, &error));
  opened = graft_model_load (path, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_true (g_file_get_contents (path, &before, &before_len, NULL));
  graft_model_set_doc_string (opened, "changed");

  g_assert_false (graft_onnx_write_file (opened, path, GRAFT_ONNX_WRITE_NONE, &error));
  g_assert_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSAFE);
  g_assert_nonnull (strstr (error->message, "opened from"));
  g_clear_error (&error);
  /* Through a symlink too. */
  g_assert_cmpint (symlink (path, link), ==, 0);
  g_assert_false (graft_onnx_write_file (opened, link, GRAFT_ONNX_WRITE_NONE, &error));
  g_assert_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSAFE);
  g_clear_error (&error);
  g_assert_true (g_file_get_contents (path, &after, &after_len, NULL));
  g_assert_cmpmem (before, before_len, after, after_len);

  g_assert_true (graft_onnx_write_file (opened, path, GRAFT_ONNX_WRITE_OVERWRITE_SOURCE, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (count_entries (dir), ==, 2);
  graft_test_remove_tree (dir);
}

static void
test_write_errors (void)
{
  g_autoptr(GraftModel) model = build_model ();
  g_autoptr(GraftModel) torch = graft_model_new (GRAFT_MODEL_FORMAT_TORCHSCRIPT);
  g_autofree char *dir = make_temp_dir ();
  g_autofree char *missing = g_build_filename (dir, "no-such-folder", "out.onnx", NULL);
  g_autofree char *out = g_build_filename (dir, "out.onnx", NULL);
  g_autoptr(GError) error = NULL;

  g_assert_false (graft_onnx_write_file (model, missing, GRAFT_ONNX_WRITE_NONE, &error));
  g_assert_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_IO);
  g_assert_nonnull (strstr (error->message, missing));
  g_clear_error (&error);

  g_assert_false (graft_onnx_write_file (model, dir, GRAFT_ONNX_WRITE_NONE, &error));
  g_assert_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_IO);
  g_clear_error (&error);

  graft_model_set_graph (torch, graft_graph_new ("forward"));
  g_assert_false (graft_onnx_write_file (torch, out, GRAFT_ONNX_WRITE_NONE, &error));
  g_assert_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED);
  g_assert_nonnull (strstr (error->message, "torch.onnx.export"));
  g_clear_error (&error);
  g_assert_cmpuint (count_entries (dir), ==, 0);
  graft_test_remove_tree (dir);
}

/* An initializer under 1 KiB read from a data file is written inline (as
 * onnx does), and no empty data file is left beside the model. */
static void
test_external_data_embedded (void)
{
  g_autoptr(GraftModel) model = build_model ();
  g_autofree char *dir = make_temp_dir ();
  g_autofree char *data_path = g_build_filename (dir, "weights.bin", NULL);
  g_autofree char *out = g_build_filename (dir, "out.onnx", NULL);
  static const float values[] = { 1, 2, 3, 4, 5, 6 };
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) loaded = NULL;
  GraftValue *w = graft_graph_lookup_value (graft_model_get_graph (model), "w");
  GraftValue *w2;
  GBytes *bytes;

  g_assert_true (g_file_set_contents (data_path, (const char *) values, sizeof values, NULL));
  g_autoptr(GraftExternalFile) data_file = graft_external_file_open_inside (dir, "weights.bin", &error);
  g_assert_no_error (error);
  graft_tensor_set_external (w->initializer, data_file, 0, sizeof values);
  g_assert_true (graft_onnx_write_file (model, out, GRAFT_ONNX_WRITE_NONE, &error));
  g_assert_no_error (error);
  {
    g_autofree char *beside = g_strconcat (out, ".data", NULL);
    g_assert_false (g_file_test (beside, G_FILE_TEST_EXISTS));
  }
  g_unlink (data_path);   /* the saved model must not need it */
  loaded = graft_model_load (out, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  w2 = graft_graph_lookup_value (graft_model_get_graph (loaded), "w");
  g_assert_false (graft_tensor_is_external (w2->initializer));
  bytes = graft_tensor_get_data (w2->initializer, &error);
  g_assert_no_error (error);
  g_assert_cmpmem (g_bytes_get_data (bytes, NULL), g_bytes_get_size (bytes), values, sizeof values);
  graft_test_remove_tree (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/onnx-writer/round-trip-in-memory", test_round_trip_in_memory);
  g_test_add_func ("/onnx-writer/write-file-atomic", test_write_file_atomic);
  g_test_add_func ("/onnx-writer/refuses-source", test_refuses_source);
  g_test_add_func ("/onnx-writer/errors", test_write_errors);
  g_test_add_func ("/onnx-writer/external-data-embedded", test_external_data_embedded);
  return g_test_run ();
}
