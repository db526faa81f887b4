/* `graft-cli info`: the JSON contract, the text report, and the exit status
 * and single stderr line for files it cannot read. */
#include <string.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "cli-run.h"
#include "fixtures.h"
#include "../torchscript/torch-generations.h"
#include "../test-scratch.h"
#include "../test-python.h"

#define source_path graft_test_source_path

static void
test_json_sample (void)
{
  g_autofree char *path = source_path ("data/samples/tiny-cnn.onnx");
  const char *args[] = { "info", path, "--json", NULL };
  g_auto (Run) run = { 0 };
  g_autoptr(JsonParser) parser = json_parser_new ();
  g_autoptr(GError) error = NULL;
  g_autoptr(GList) ops = NULL;
  JsonObject *root, *input, *graph, *op_counts;
  JsonArray *shape;
  gint64 total = 0;

  run_cli (&run, args);
  g_assert_cmpint (run.status, ==, 0);
  g_assert_cmpstr (run.err, ==, "");
  g_assert_true (json_parser_load_from_data (parser, run.out, -1, &error));
  g_assert_no_error (error);
  root = json_node_get_object (json_parser_get_root (parser));

  g_assert_cmpstr (json_object_get_string_member (root, "format"), ==, "onnx");
  g_assert_cmpstr (json_object_get_string_member (root, "producer"), ==, "pytorch");
  g_assert_cmpint (json_object_get_int_member (json_object_get_object_member (root, "opsets"), "onnx"), ==, 17);

  g_assert_cmpuint (json_array_get_length (json_object_get_array_member (root, "inputs")), ==, 1);
  input = json_array_get_object_element (json_object_get_array_member (root, "inputs"), 0);
  g_assert_cmpstr (json_object_get_string_member (input, "name"), ==, "image");
  g_assert_cmpstr (json_object_get_string_member (input, "dtype"), ==, "float32");
  shape = json_object_get_array_member (input, "shape");
  g_assert_cmpuint (json_array_get_length (shape), ==, 4);
  g_assert_cmpstr (json_array_get_string_element (shape, 0), ==, "batch");
  g_assert_cmpint (json_array_get_int_element (shape, 1), ==, 3);
  g_assert_cmpint (json_array_get_int_element (shape, 3), ==, 32);

  g_assert_cmpuint (json_array_get_length (json_object_get_array_member (root, "outputs")), ==, 1);
  g_assert_cmpstr (json_object_get_string_member (json_array_get_object_element (json_object_get_array_member (root, "outputs"), 0), "name"),
                   ==, "probabilities");

  graph = json_array_get_object_element (json_object_get_array_member (root, "graphs"), 0);
  g_assert_cmpint (json_object_get_int_member (graph, "nodes"), ==, 35);
  op_counts = json_object_get_object_member (graph, "ops");
  g_assert_cmpint (json_object_get_int_member (op_counts, "onnx::Conv"), ==, 10);
  ops = json_object_get_members (op_counts);
  for (GList *l = ops; l; l = l->next)
    {
      g_assert_nonnull (strstr (l->data, "::"));
      total += json_object_get_int_member (op_counts, l->data);
    }
  g_assert_cmpint (total, ==, 35);
}

/* A symbolic, a fixed and an unknown dim: ["batch", 2, null]-style shapes. */
static void
test_json_unknown_dims (void)
{
  g_autofree char *path = source_path ("tests/fixtures-generated/onnx/dims.onnx");
  const char *args[] = { "info", "--json", path, NULL };
  g_auto (Run) run = { 0 };
  g_autoptr(JsonParser) parser = json_parser_new ();
  g_autoptr(GError) error = NULL;
  JsonObject *root;
  JsonArray *inputs, *shape;
  JsonObject *graph;

  run_cli (&run, args);
  g_assert_cmpint (run.status, ==, 0);
  g_assert_true (json_parser_load_from_data (parser, run.out, -1, &error));
  root = json_node_get_object (json_parser_get_root (parser));
  inputs = json_object_get_array_member (root, "inputs");
  shape = json_object_get_array_member (json_array_get_object_element (inputs, 0), "shape");
  g_assert_cmpint (json_array_get_int_element (shape, 0), ==, 2);
  g_assert_cmpstr (json_array_get_string_element (shape, 1), ==, "batch");
  g_assert_true (json_array_get_null_element (shape, 2));
  /* unknown rank */
  g_assert_true (json_object_get_null_member (json_array_get_object_element (inputs, 1), "shape"));
  g_assert_cmpstr (json_object_get_string_member (json_array_get_object_element (inputs, 3), "type"), ==,
                   "map(string,tensor(float))");
  g_assert_cmpstr (json_object_get_string_member (json_object_get_object_member (root, "metadata"), "author"), ==, "graft");
  g_assert_cmpint (json_object_get_int_member (json_object_get_object_member (root, "opsets"), "com.example"), ==, 2);
  graph = json_array_get_object_element (json_object_get_array_member (root, "graphs"), 0);
  g_assert_cmpint (json_object_get_int_member (graph, "nodes"), ==, 3);
}

/* nodes counts the main graph; ops counts nested subgraphs too. */
static void
test_json_subgraphs (void)
{
  g_autofree char *path = source_path ("tests/fixtures-generated/onnx/subgraphs.onnx");
  const char *args[] = { "info", "--json", path, NULL };
  g_auto (Run) run = { 0 };
  g_autoptr(JsonParser) parser = json_parser_new ();
  g_autoptr(GError) error = NULL;
  JsonObject *graph, *ops;

  run_cli (&run, args);
  g_assert_cmpint (run.status, ==, 0);
  g_assert_true (json_parser_load_from_data (parser, run.out, -1, &error));
  graph = json_array_get_object_element (json_object_get_array_member (json_node_get_object (json_parser_get_root (parser)),
                                                                       "graphs"), 0);
  g_assert_cmpint (json_object_get_int_member (graph, "nodes"), ==, 2);
  ops = json_object_get_object_member (graph, "ops");
  g_assert_cmpint (json_object_get_int_member (ops, "onnx::Add"), ==, 3);
  g_assert_cmpint (json_object_get_int_member (ops, "onnx::Loop"), ==, 1);
  g_assert_cmpint (json_object_get_int_member (ops, "onnx::If"), ==, 1);
  g_assert_cmpint (json_object_get_int_member (ops, "onnx::Identity"), ==, 1);
}

/* TorchScript fixtures of each generation of writers (torch-generations.h) */
static char *torchscript_dirs[GRAFT_TORCH_N_GENERATIONS];
static const GraftTorchGeneration generations[GRAFT_TORCH_N_GENERATIONS] = { GRAFT_TORCH_CURRENT, GRAFT_TORCH_LEGACY };

/* The generation's folder, or NULL after g_test_skip when its torch is missing. */
static const char *
torchscript_dir_or_skip (gconstpointer data)
{
  GraftTorchGeneration generation = *(const GraftTorchGeneration *) data;

  if (torchscript_dirs[generation] == NULL)
    g_test_skip (graft_torch_generation_missing (generation));
  return torchscript_dirs[generation];
}

static JsonObject *
run_json (JsonParser *parser, const char *path)
{
  const char *args[] = { "info", "--json", path, NULL };
  g_auto (Run) run = { 0 };
  g_autoptr(GError) error = NULL;

  run_cli (&run, args);
  g_assert_cmpint (run.status, ==, 0);
  g_assert_cmpstr (run.err, ==, "");
  g_assert_true (json_parser_load_from_data (parser, run.out, -1, &error));
  g_assert_no_error (error);
  return json_node_get_object (json_parser_get_root (parser));
}

/* The same contract for a TorchScript archive (the reader is another
 * module: info only sees the GraftModel). */
static void
test_json_torchscript (gconstpointer data)
{
  const char *torchscript_dir = torchscript_dir_or_skip (data);
  if (torchscript_dir == NULL)
    return;
  g_autofree char *path = g_build_filename (torchscript_dir, "if_tensor_scripted.pt", NULL);
  g_autoptr(JsonParser) parser = json_parser_new ();
  JsonObject *root = run_json (parser, path);
  JsonObject *graph, *ops;
  g_autoptr(GList) members = NULL;
  gint64 sum = 0;

  g_assert_cmpstr (json_object_get_string_member (root, "format"), ==, "torchscript");
  g_assert_true (json_object_has_member (json_object_get_object_member (root, "opsets"), "torchscript"));
  g_assert_cmpstr (json_object_get_string_member (json_array_get_object_element (json_object_get_array_member (root, "inputs"), 0), "name"),
                   ==, "x");
  graph = json_array_get_object_element (json_object_get_array_member (root, "graphs"), 0);
  ops = json_object_get_object_member (graph, "ops");
  g_assert_cmpint (json_object_get_int_member (ops, "prim::If"), ==, 1);
  members = json_object_get_members (ops);
  for (GList *l = members; l; l = l->next)
    {
      g_assert_true (g_str_has_prefix (l->data, "aten::") || g_str_has_prefix (l->data, "prim::"));
      sum += json_object_get_int_member (ops, l->data);
    }
  /* ops include the If's blocks, nodes only the main graph */
  g_assert_cmpint (sum, ==, json_object_get_int_member (graph, "nodes_recursive"));
  g_assert_cmpint (sum, >, json_object_get_int_member (graph, "nodes"));
}

static void
test_json_state_dict (gconstpointer data)
{
  const char *torchscript_dir = torchscript_dir_or_skip (data);
  if (torchscript_dir == NULL)
    return;
  g_autofree char *path = g_build_filename (torchscript_dir, "state_dict.pt", NULL);
  g_autoptr(JsonParser) parser = json_parser_new ();
  JsonObject *root = run_json (parser, path);
  JsonArray *tensors;
  JsonObject *weight;

  g_assert_cmpstr (json_object_get_string_member (root, "format"), ==, "state_dict");
  tensors = json_object_get_array_member (root, "tensors");
  g_assert_cmpuint (json_array_get_length (tensors), ==, 2);
  weight = json_array_get_object_element (tensors, 0);
  g_assert_cmpstr (json_object_get_string_member (weight, "name"), ==, "lin.weight");
  g_assert_cmpstr (json_object_get_string_member (weight, "dtype"), ==, "float32");
  g_assert_cmpint (json_array_get_int_element (json_object_get_array_member (weight, "shape"), 0), ==, 4);
  g_assert_cmpint (json_array_get_int_element (json_object_get_array_member (weight, "shape"), 1), ==, 3);
}

static void
test_json_functions (void)
{
  g_autofree char *path = source_path ("tests/fixtures-generated/onnx/function.onnx");
  g_autoptr(JsonParser) parser = json_parser_new ();
  JsonObject *root = run_json (parser, path);
  JsonArray *functions = json_object_get_array_member (root, "functions");
  JsonObject *function;

  g_assert_cmpuint (json_array_get_length (functions), ==, 1);
  function = json_array_get_object_element (functions, 0);
  g_assert_cmpstr (json_object_get_string_member (function, "name"), ==, "ScaledRelu");
  g_assert_cmpstr (json_object_get_string_member (function, "domain"), ==, "org.graft");
  g_assert_cmpint (json_object_get_int_member (function, "nodes"), ==, 3);
  g_assert_cmpint (json_object_get_int_member (json_object_get_object_member (function, "ops"), "onnx::Relu"), ==, 1);
  g_assert_cmpint (json_object_get_int_member (json_object_get_object_member (json_array_get_object_element (json_object_get_array_member (root, "graphs"), 0), "ops"),
                                               "org.graft::ScaledRelu"), ==, 1);
}

static void
test_text (void)
{
  g_autofree char *path = source_path ("data/samples/tiny-cnn.onnx");
  const char *args[] = { "info", path, NULL };
  g_auto (Run) run = { 0 };

  run_cli (&run, args);
  g_assert_cmpint (run.status, ==, 0);
  g_assert_cmpstr (run.err, ==, "");
  g_assert_nonnull (strstr (run.out, "Producer:  pytorch"));
  g_assert_nonnull (strstr (run.out, "onnx 17"));
  g_assert_nonnull (strstr (run.out, "image"));
  g_assert_nonnull (strstr (run.out, "float32[batch×3×32×32]"));
  g_assert_nonnull (strstr (run.out, "35 nodes"));
  g_assert_true (g_regex_match_simple ("onnx::Conv +10\n", run.out, 0, 0));
}

static void
test_text_state_dict (gconstpointer data)
{
  const char *torchscript_dir = torchscript_dir_or_skip (data);
  if (torchscript_dir == NULL)
    return;
  g_autofree char *path = g_build_filename (torchscript_dir, "state_dict.pt", NULL);
  const char *args[] = { "info", path, NULL };
  g_auto (Run) run = { 0 };

  run_cli (&run, args);
  g_assert_cmpint (run.status, ==, 0);
  g_assert_nonnull (strstr (run.out, "Tensors: 2"));
  g_assert_true (g_regex_match_simple ("lin.weight +float32\\[4,3\\]", run.out, 0, 0));
  g_assert_null (strstr (run.out, "Inputs:"));
}

static void
assert_fails_cleanly (const char *path, const char *fragment)
{
  const char *args[] = { "info", path, "--json", NULL };
  g_auto (Run) run = { 0 };
  const char *newline;

  run_cli (&run, args);
  g_test_message ("%s: %.*s", path, (int) strcspn (run.err, "\n"), run.err);
  g_assert_cmpint (run.status, ==, 1);
  g_assert_cmpstr (run.out, ==, "");
  g_assert_true (g_str_has_prefix (run.err, "graft-cli: "));
  newline = strchr (run.err, '\n');
  g_assert_nonnull (newline);
  g_assert_cmpstr (newline + 1, ==, "");     /* exactly one line */
  g_assert_nonnull (strstr (run.err, fragment));
}

static void
test_bad_files (void)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = graft_test_scratch_dir ("graft-cli-info-XXXXXX", &error);
  g_autofree char *empty = g_build_filename (dir, "empty.onnx", NULL);
  g_autofree char *garbage = g_build_filename (dir, "garbage.onnx", NULL);
  g_autofree char *cut = g_build_filename (dir, "cut.onnx", NULL);
  g_autofree char *sample = source_path ("data/samples/tiny-cnn.onnx");
  g_autofree char *escape = source_path ("tests/fixtures-generated/onnx/external/escape.onnx");
  g_autofree char *contents = NULL;
  gsize length;

  g_assert_true (g_file_set_contents (empty, "", 0, &error));
  g_assert_true (g_file_set_contents (garbage, "\x0b\x0c\xff\xfe not a model\n", -1, &error));
  g_assert_true (g_file_get_contents (sample, &contents, &length, &error));
  g_assert_true (g_file_set_contents (cut, contents, length / 3, &error));

  assert_fails_cleanly (empty, "empty");
  assert_fails_cleanly (garbage, "wire type");
  assert_fails_cleanly (cut, "ends after");
  assert_fails_cleanly ("/nonexistent/model.onnx", "No such file");
  assert_fails_cleanly (dir, "folder");
  assert_fails_cleanly (escape, "'../outside.bin'");

  g_unlink (empty);
  g_unlink (garbage);
  g_unlink (cut);
  g_rmdir (dir);
}

static void
test_usage (void)
{
  const char *none[] = { "info", NULL };
  const char *two[] = { "info", "a.onnx", "b.onnx", NULL };
  const char *bad_option[] = { "info", "--no-such-option", "a.onnx", NULL };
  g_auto (Run) run1 = { 0 };
  g_auto (Run) run2 = { 0 };
  g_auto (Run) run3 = { 0 };

  run_cli (&run1, none);
  g_assert_cmpint (run1.status, ==, 2);
  g_assert_nonnull (strstr (run1.err, "FILE"));
  run_cli (&run2, two);
  g_assert_cmpint (run2.status, ==, 2);
  run_cli (&run3, bad_option);
  g_assert_cmpint (run3.status, ==, 2);
}

int
main (int argc, char **argv)
{
  g_autofree char *fixtures = NULL;

  g_test_init (&argc, &argv, NULL);
  graft_test_require_venv ();
  /* Shares the reader tests' small fixtures. */
  fixtures = graft_test_generate_fixtures ("tests/onnx/make-reader-fixtures.py", "tests/fixtures-generated/onnx", NULL);
  for (guint g = 0; g < GRAFT_TORCH_N_GENERATIONS; g++)
    torchscript_dirs[g] = graft_torch_generation_fixtures (g, (const char *const[]) { "--small", NULL });

  g_test_add_func ("/cli/info/json-sample", test_json_sample);
  g_test_add_func ("/cli/info/json-unknown-dims", test_json_unknown_dims);
  g_test_add_func ("/cli/info/json-subgraphs", test_json_subgraphs);
  g_test_add_func ("/cli/info/json-functions", test_json_functions);
  for (guint g = 0; g < GRAFT_TORCH_N_GENERATIONS; g++)
    {
      g_autofree char *torchscript = g_strdup_printf ("/cli/info/%s/json-torchscript", graft_torch_generation_name (g));
      g_autofree char *state_dict = g_strdup_printf ("/cli/info/%s/json-state-dict", graft_torch_generation_name (g));
      g_autofree char *text = g_strdup_printf ("/cli/info/%s/text-state-dict", graft_torch_generation_name (g));
      g_test_add_data_func (torchscript, &generations[g], test_json_torchscript);
      g_test_add_data_func (state_dict, &generations[g], test_json_state_dict);
      g_test_add_data_func (text, &generations[g], test_text_state_dict);
    }
  g_test_add_func ("/cli/info/text", test_text);
  g_test_add_func ("/cli/info/bad-files", test_bad_files);
  g_test_add_func ("/cli/info/usage", test_usage);
  int status = g_test_run ();
  for (guint g = 0; g < GRAFT_TORCH_N_GENERATIONS; g++)
    g_free (torchscript_dirs[g]);
  return status;
}
