/* graft-cli run --validate, debug reduce and diff --reference on a
 * ResNet-18 export (tests/fixtures/make-onnx-models.py) with faults
 * planted by make-debug-fixtures.py: a Div by a zero constant, two
 * convolutions' weights exchanged. Each answer must name the planted node;
 * reduced models are checked with onnx.checker (full check) and run in
 * onnxruntime. */
#include <string.h>
#include <json-glib/json-glib.h>
#include "cli-run.h"
#include "../test-python.h"
#include "../test-scratch.h"

static char *fixtures;       /* the planted models, input.npy, ort-values/ */
static char *resnet18;       /* the export they were made from */
static char *swapped_conv;   /* the node whose weights make swapped.onnx differ */

static char *
fixture (const char *name)
{
  return g_build_filename (fixtures, name, NULL);
}

static JsonNode *
parse_json (const char *text)
{
  g_autoptr(JsonParser) parser = json_parser_new ();
  g_autoptr(GError) error = NULL;

  json_parser_load_from_data (parser, text, -1, &error);
  g_assert_no_error (error);
  return json_node_copy (json_parser_get_root (parser));
}

static void
test_validate_planted_div (void)
{
  g_autofree char *model = fixture ("div0.onnx");
  g_autofree char *input = fixture ("input.npy");
  g_auto(Run) run = { 0 };

  const char *args[] = { "run", model, "--input", input, "--validate", "--json", NULL };
  run_cli (&run, args);
  g_assert_cmpint (run.status, ==, 1);
  g_autoptr(JsonNode) root = parse_json (run.out);
  JsonObject *report = json_node_get_object (root);
  JsonArray *sources = json_object_get_array_member (report, "sources");
  g_assert_cmpuint (json_array_get_length (sources), ==, 1);
  JsonObject *first = json_array_get_object_element (sources, 0);
  g_assert_cmpstr (json_object_get_string_member (first, "node"), ==, "planted_div");
  g_assert_cmpstr (json_object_get_string_member (first, "op"), ==, "onnx::Div");
  /* its inputs: the ReLU's finite, non-negative output and the zero */
  JsonArray *inputs = json_object_get_array_member (first, "inputs");
  g_assert_cmpuint (json_array_get_length (inputs), ==, 2);
  JsonObject *relu = json_array_get_object_element (inputs, 0);
  g_assert_cmpstr (json_object_get_string_member (relu, "op"), ==, "onnx::Relu");
  g_assert_cmpfloat (json_object_get_double_member (relu, "min"), ==, 0);
  g_assert_cmpfloat (json_object_get_double_member (relu, "max"), >, 0);
  g_assert_cmpint (json_object_get_int_member (relu, "nan") + json_object_get_int_member (relu, "inf"), ==, 0);
  JsonObject *zero = json_array_get_object_element (inputs, 1);
  g_assert_cmpstr (json_object_get_string_member (zero, "value"), ==, "planted_zero");
  g_assert_cmpfloat (json_object_get_double_member (zero, "max"), ==, 0);
  /* everything downstream holds NaN, the Div itself NaN (0/0) and Inf */
  JsonObject *output = json_object_get_object_member (first, "output");
  g_assert_cmpint (json_object_get_int_member (output, "nan"), >, 0);
  g_assert_cmpint (json_object_get_int_member (output, "inf"), >, 0);
  JsonArray *nonfinite = json_object_get_array_member (report, "nonfinite");
  g_assert_cmpuint (json_array_get_length (nonfinite), >, 20);
  g_assert_cmpstr (json_object_get_string_member (json_array_get_object_element (nonfinite, 0), "node"), ==,
                   "planted_div");

  /* the text report says the same in one line */
  g_auto(Run) text = { 0 };
  const char *text_args[] = { "run", model, "--input", input, "--validate", NULL };
  run_cli (&text, text_args);
  g_assert_cmpint (text.status, ==, 1);
  g_assert_nonnull (strstr (text.out, "NaN/Inf first produced by onnx::Div 'planted_div'"));
  g_assert_nonnull (strstr (text.out, "input 1 'planted_zero': float32[] in [0, 0]"));
}

static void
test_validate_clean (void)
{
  g_autofree char *input = fixture ("input.npy");
  g_auto(Run) run = { 0 };

  const char *args[] = { "run", resnet18, "--input", input, "--validate", NULL };
  run_cli (&run, args);
  g_assert_cmpint (run.status, ==, 0);
  g_assert_nonnull (strstr (run.out, "validate: no NaN or Inf in"));
}

static void
make_fixtures (void)
{
  const char *src = g_getenv ("GRAFT_SOURCE_DIR");
  g_autofree char *python = graft_test_python ();
  g_autofree char *models = g_build_filename (src, "tests", "fixtures-generated", "models", NULL);
  g_autofree char *export_script = g_build_filename (src, "tests", "fixtures", "make-onnx-models.py", NULL);
  g_autofree char *plant_script = g_build_filename (src, "tests", "debug", "make-debug-fixtures.py", NULL);
  g_autoptr(GError) error = NULL;

  const char *export_argv[] = { python, export_script, models, "resnet18", NULL };
  g_assert_true (graft_test_spawn (export_argv, &error));
  g_assert_no_error (error);
  resnet18 = g_build_filename (models, "resnet18.onnx", NULL);
  fixtures = graft_test_scratch_dir ("graft-debug-XXXXXX", &error);
  g_assert_no_error (error);
  const char *plant_argv[] = { python, plant_script, resnet18, fixtures, NULL };
  g_assert_true (graft_test_spawn (plant_argv, &error));
  g_assert_no_error (error);
  g_autofree char *planted = fixture ("planted.txt");
  g_assert_true (g_file_get_contents (planted, &swapped_conv, NULL, &error));
  g_strstrip (swapped_conv);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  make_fixtures ();
  g_test_add_func ("/debug/validate/planted-div", test_validate_planted_div);
  g_test_add_func ("/debug/validate/clean", test_validate_clean);
  return g_test_run ();
}
