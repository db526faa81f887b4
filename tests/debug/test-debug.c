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

/* Runs check-reduced.py on model with extra args; returns its node names. */
static GStrv
check_reduced (const char *model, const char *const *extra)
{
  const char *src = g_getenv ("GRAFT_SOURCE_DIR");
  g_autofree char *python = graft_test_python ();
  g_autofree char *script = g_build_filename (src, "tests", "debug", "check-reduced.py", NULL);
  g_autoptr(GPtrArray) argv = g_ptr_array_new ();
  g_autofree char *out = NULL, *err = NULL;
  g_autoptr(GError) error = NULL;
  int status;

  g_ptr_array_add (argv, python);
  g_ptr_array_add (argv, script);
  g_ptr_array_add (argv, (char *) model);
  for (guint i = 0; extra && extra[i]; i++)
    g_ptr_array_add (argv, (char *) extra[i]);
  g_ptr_array_add (argv, NULL);
  g_assert_true (g_spawn_sync (NULL, (char **) argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status,
                               &error));
  g_assert_no_error (error);
  if (!g_spawn_check_wait_status (status, NULL))
    g_error ("check-reduced.py %s: %s", model, err);
  g_strstrip (out);
  return g_strsplit (out, "\n", -1);
}

/* graft-cli debug reduce MODEL -o SCRATCH/SMALL.onnx ARGS...: succeeds,
 * says how many nodes it kept, and the saved model passes check-reduced.py
 * (with extra); returns the kept nodes' names. */
static GStrv
reduce (const char *model, const char *const *args, const char *const *extra, char **inputs_dir)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = graft_test_scratch_dir ("graft-reduce-XXXXXX", &error);
  g_autofree char *small = g_build_filename (dir, "small.onnx", NULL);
  g_autoptr(GPtrArray) argv = g_ptr_array_new ();
  g_auto(Run) run = { 0 };

  g_assert_no_error (error);
  *inputs_dir = g_build_filename (dir, "inputs", NULL);
  g_ptr_array_add (argv, "debug");
  g_ptr_array_add (argv, "reduce");
  g_ptr_array_add (argv, (char *) model);
  g_ptr_array_add (argv, "-o");
  g_ptr_array_add (argv, small);
  g_ptr_array_add (argv, "--save-inputs");
  g_ptr_array_add (argv, *inputs_dir);
  for (guint i = 0; args[i]; i++)
    g_ptr_array_add (argv, (char *) args[i]);
  g_ptr_array_add (argv, NULL);
  run_cli (&run, (const char *const *) argv->pdata);
  if (run.status != 0)
    g_error ("debug reduce %s: %s%s", model, run.out, run.err);
  g_assert_true (g_str_has_prefix (run.out, "kept "));
  GStrv nodes = check_reduced (small, extra);
  /* "kept N of M nodes": N is what the file holds */
  g_autofree char *kept = g_strdup_printf ("kept %u of ", g_strv_length (nodes));
  g_assert_true (g_str_has_prefix (run.out, kept));
  return nodes;
}

static void
test_reduce_nan (void)
{
  g_autofree char *model = fixture ("div0.onnx");
  g_autofree char *input = fixture ("input.npy");
  g_autofree char *inputs = NULL;
  const char *args[] = { "--nan", "--input", input, NULL };
  const char *extra[] = { "--inputs", NULL, "--nonfinite", NULL };

  /* the inputs dir is known only once reduce made it: check twice */
  g_auto(GStrv) nodes = reduce (model, args, NULL, &inputs);
  g_assert_cmpstrv (nodes, ((const char *const[]) { "planted_div", NULL }));
  extra[1] = inputs;
  g_autofree char *small = g_build_filename (inputs, "..", "small.onnx", NULL);
  g_auto(GStrv) again = check_reduced (small, extra);
  g_assert_cmpstrv (again, ((const char *const[]) { "planted_div", NULL }));
}

static void
test_reduce_mismatch (gconstpointer data)
{
  gboolean folder = GPOINTER_TO_INT (data);
  g_autofree char *model = fixture ("swapped.onnx");
  g_autofree char *input = fixture ("input.npy");
  g_autofree char *values = fixture ("ort-values");
  g_autofree char *inputs = NULL;
  const char *args[] = { "--mismatch", folder ? values : resnet18, "--input", input, NULL };

  g_auto(GStrv) nodes = reduce (model, args, NULL, &inputs);
  g_assert_true (g_strv_contains ((const char *const *) nodes, swapped_conv));
  /* the conv and the exporter's Identity of its weight, nothing else */
  g_assert_cmpuint (g_strv_length (nodes), <=, 2);
  /* onnxruntime, fed the reduced model's inputs, differs from SRC too */
  g_autofree char *small = g_build_filename (inputs, "..", "small.onnx", NULL);
  const char *extra[] = { "--inputs", inputs, "--differs", values, NULL };
  g_auto(GStrv) again = check_reduced (small, extra);
  g_assert_cmpstrv (again, (const char *const *) nodes);
}

static void
test_reduce_command (void)
{
  g_autofree char *model = fixture ("div0.onnx");
  g_autofree char *inputs = NULL;
  /* fails while the file holds a Div */
  const char *args[] = { "--command", "grep -q Div {model} && exit 1; exit 0", NULL };

  g_auto(GStrv) nodes = reduce (model, args, NULL, &inputs);
  g_assert_cmpstrv (nodes, ((const char *const[]) { "planted_div", NULL }));
}

static void
test_reduce_fails_in_graft (void)
{
  g_autofree char *model = fixture ("bad-reshape.onnx");
  g_autofree char *input = fixture ("input.npy");
  g_autofree char *inputs = NULL;
  const char *args[] = { "--fails-in", "graft", "--input", input, NULL };

  g_auto(GStrv) nodes = reduce (model, args, NULL, &inputs);
  g_assert_cmpstrv (nodes, ((const char *const[]) { "planted_reshape", NULL }));
}

/* An op no runtime has: the model cannot even be planned, its inputs are
 * random data of the declared types, values before the op are recorded
 * where a part of the model runs. (The op's output has no type anyone
 * knows, so this file is not checked with onnx.checker.) */
static void
test_reduce_unknown_op (void)
{
  g_autofree char *model = fixture ("mystery.onnx");
  g_autofree char *out = fixture ("mystery-small.onnx");
  g_auto(Run) run = { 0 };

  const char *args[] = { "debug", "reduce", model, "-o", out, "--fails-in", "graft", "--random", "--dim", "batch=1",
                         NULL };
  run_cli (&run, args);
  if (run.status != 0)
    g_error ("debug reduce: %s%s", run.out, run.err);
  g_assert_true (g_str_has_prefix (run.out, "kept 1 of "));
  g_assert_nonnull (strstr (run.out, "\n  planted_mystery\n"));
  g_assert_nonnull (strstr (run.out, "com.example::Mystery"));
}

/* TorchScript and .pt2 are lowered to ONNX first: the Div of the hook
 * (and the zeros it divides by) is what stays. */
static void
test_reduce_torch (gconstpointer data)
{
  const char *name = data;
  g_autofree char *model = fixture (name);
  g_autofree char *inputs = NULL;
  const char *args[] = { "--nan", "--random", "--shape", "x=1x3x64x64", NULL };

  g_auto(GStrv) nodes = reduce (model, args, NULL, &inputs);
  g_assert_cmpuint (g_strv_length (nodes), <=, 2);
  g_assert_true (g_str_has_suffix (nodes[g_strv_length (nodes) - 1], "/Div"));
  g_assert_true (g_str_has_prefix (nodes[g_strv_length (nodes) - 1], "/layer2/0/"));
}

static void
test_reduce_nothing_to_reduce (void)
{
  g_autofree char *input = fixture ("input.npy");
  g_autofree char *out = fixture ("never.onnx");
  g_auto(Run) run = { 0 };

  const char *args[] = { "debug", "reduce", resnet18, "-o", out, "--nan", "--input", input, NULL };
  run_cli (&run, args);
  g_assert_cmpint (run.status, ==, 1);
  g_assert_nonnull (strstr (run.err, "does not fail that way"));
  g_assert_false (g_file_test (out, G_FILE_TEST_EXISTS));

  g_auto(Run) usage = { 0 };
  const char *two[] = { "debug", "reduce", resnet18, "-o", out, "--nan", "--mismatch", resnet18, NULL };
  run_cli (&usage, two);
  g_assert_cmpint (usage.status, ==, 2);
  g_assert_nonnull (strstr (usage.err, "give one failure condition"));
}

/* diff MODEL --reference DIR against onnxruntime's value of every tensor
 * of the unchanged export: the swapped conv is the first divergent node. */
static void
test_diff_reference (void)
{
  g_autofree char *model = fixture ("swapped.onnx");
  g_autofree char *input = fixture ("input.npy");
  g_autofree char *values = fixture ("ort-values");
  g_auto(Run) run = { 0 };

  const char *args[] = { "diff", model, "--reference", values, "--input", input, "--json", NULL };
  run_cli (&run, args);
  g_assert_cmpint (run.status, ==, 1);
  g_autoptr(JsonNode) root = parse_json (run.out);
  JsonObject *report = json_node_get_object (root);
  /* every value of the graph has onnxruntime's counterpart */
  g_assert_cmpint (json_object_get_int_member (report, "compared"), ==,
                   json_object_get_int_member (report, "reference_values"));
  g_assert_false (json_object_get_boolean_member (report, "outputs_close"));
  JsonObject *first = json_object_get_object_member (report, "first_divergent");
  g_assert_cmpstr (json_object_get_string_member (json_object_get_object_member (first, "node_a"), "name"), ==,
                   swapped_conv);
  g_assert_cmpfloat (json_object_get_double_member (first, "max_rel"), >, 0.1);

  /* the unchanged export agrees with onnxruntime value by value */
  g_auto(Run) clean = { 0 };
  const char *clean_args[] = { "diff", resnet18, "--reference", values, "--input", input, "--rtol", "1e-4",
                               "--atol", "1e-4", NULL };
  run_cli (&clean, clean_args);
  g_assert_cmpint (clean.status, ==, 0);
  g_assert_nonnull (strstr (clean.out, ", 0 differ"));
  g_assert_nonnull (strstr (clean.out, "outputs: close"));

  /* a folder naming no value of the model is the wrong folder; one with
   * the input only (input.npy) has nothing to compare */
  g_autoptr(GError) error = NULL;
  g_autofree char *empty = graft_test_scratch_dir ("graft-empty-XXXXXX", &error);
  g_assert_no_error (error);
  g_auto(Run) wrong = { 0 };
  const char *wrong_args[] = { "diff", resnet18, "--reference", empty, "--input", input, NULL };
  run_cli (&wrong, wrong_args);
  g_assert_cmpint (wrong.status, ==, 2);
  g_assert_nonnull (strstr (wrong.err, "holds no .npy file named after a value"));
  g_auto(Run) inputs_only = { 0 };
  const char *inputs_args[] = { "diff", resnet18, "--reference", fixtures, "--input", input, NULL };
  run_cli (&inputs_only, inputs_args);
  g_assert_cmpint (inputs_only.status, ==, 2);
  g_assert_nonnull (strstr (inputs_only.err, "computes has a .npy file in"));
}

static JsonObject *
find_by_member (JsonArray *array, const char *member, const char *value)
{
  for (guint i = 0; i < json_array_get_length (array); i++)
    {
      JsonObject *object = json_array_get_object_element (array, i);
      if (g_strcmp0 (json_object_get_string_member (object, member), value) == 0)
        return object;
    }
  return NULL;
}

/* info --cost on ResNet-18 at 224: the known 1.82 GMACs, the first conv's
 * 118 M, groups that add up, and the plan's peak is what the runtime
 * measures, byte for byte, at two batch sizes. */
static void
test_cost_resnet18 (gconstpointer data)
{
  const char *batch = data;
  g_auto(Run) run = { 0 };

  const char *args[] = { "info", resnet18, "--cost", "--run", "--json", "--dim", batch, NULL };
  run_cli (&run, args);
  g_assert_cmpint (run.status, ==, 0);
  g_autoptr(JsonNode) root = parse_json (run.out);
  JsonObject *cost = json_node_get_object (root);
  gint64 n = g_ascii_strtoll (strchr (batch, '=') + 1, NULL, 10);
  gint64 macs = json_object_get_int_member (cost, "macs");
  /* torchvision's figure for ResNet-18: 1.82 GMACs per image */
  g_assert_cmpint (macs, >, n * 1800000000);
  g_assert_cmpint (macs, <, n * 1830000000);
  g_assert_cmpint (json_object_get_int_member (cost, "flops"), >=, 2 * macs);
  g_assert_cmpint (json_object_get_int_member (cost, "unknown_nodes"), ==, 0);
  /* 11.69 M float parameters */
  g_assert_cmpint (json_object_get_int_member (cost, "parameter_bytes"), >, 46000000);
  g_assert_cmpint (json_object_get_int_member (cost, "parameter_bytes"), <, 47000000);
  gint64 peak = json_object_get_int_member (cost, "peak_bytes");
  g_assert_cmpint (peak, ==, json_object_get_int_member (cost, "measured_peak_bytes"));
  g_assert_cmpint (peak * 4, <, json_object_get_int_member (cost, "activation_bytes"));
  g_assert_cmpint (json_object_get_int_member (cost, "arena_bytes"), >=, peak - n * 3 * 224 * 224 * 4);

  JsonArray *nodes = json_object_get_array_member (cost, "nodes");
  JsonObject *conv1 = find_by_member (nodes, "name", "/conv1/Conv");
  g_assert_cmpint (json_object_get_int_member (conv1, "macs"), ==, n * 64 * 112 * 112 * 3 * 7 * 7);
  g_assert_cmpfloat (json_object_get_double_member (conv1, "seconds"), >, 0);
  JsonArray *groups = json_object_get_array_member (cost, "groups");
  gint64 layers = 0;
  for (int i = 1; i <= 4; i++)
    {
      g_autofree char *path = g_strdup_printf ("layer%d", i);
      JsonObject *group = find_by_member (groups, "path", path);
      g_assert_nonnull (group);
      layers += json_object_get_int_member (group, "macs");
    }
  gint64 fc = json_object_get_int_member (find_by_member (groups, "path", "fc"), "macs");
  g_assert_cmpint (fc, ==, n * 512 * 1000);
  g_assert_cmpint (layers + fc + json_object_get_int_member (conv1, "macs"), ==, macs);
}

/* The plan's peak is what the runtime holds, byte for byte: ReLU6 (Clip)
 * written in place in MobileNetV2, a TransformerEncoder's attention. */
static void
test_cost_plan_matches_runtime (gconstpointer data)
{
  const char *src = g_getenv ("GRAFT_SOURCE_DIR");
  g_autofree char *file = g_strconcat ((const char *) data, ".onnx", NULL);
  g_autofree char *model = g_build_filename (src, "tests", "fixtures-generated", "models", file, NULL);
  g_auto(Run) run = { 0 };

  const char *args[] = { "info", model, "--cost", "--run", "--json", NULL };
  run_cli (&run, args);
  g_assert_cmpint (run.status, ==, 0);
  g_autoptr(JsonNode) root = parse_json (run.out);
  JsonObject *cost = json_node_get_object (root);
  g_assert_cmpint (json_object_get_int_member (cost, "unknown_nodes"), ==, 0);
  g_assert_cmpint (json_object_get_int_member (cost, "peak_bytes"), ==,
                   json_object_get_int_member (cost, "measured_peak_bytes"));
  g_assert_cmpint (json_object_get_int_member (cost, "peak_bytes") * 2, <,
                   json_object_get_int_member (cost, "activation_bytes"));
  if (g_str_equal (data, "mobilenet_v2"))
    {
      /* torchvision's figure: 300 MMACs */
      g_assert_cmpint (json_object_get_int_member (cost, "macs"), >, 295000000);
      g_assert_cmpint (json_object_get_int_member (cost, "macs"), <, 305000000);
    }
}

/* edit --float16 --auto-keep on a TransformerEncoder whose first
 * decomposed LayerNorm overflows in float16 on its input: the plain
 * conversion gives NaN in Graft's runtime (which rounds every node's
 * output to float16), the kept set holds that LayerNorm's Pow, and the
 * saved model is within the tolerance in Graft and in onnxruntime. */
static void
test_float16_auto_keep (void)
{
  g_autofree char *model = fixture ("encoder.onnx");
  g_autofree char *input = fixture ("encoder-input.npy");
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = graft_test_scratch_dir ("graft-fp16-XXXXXX", &error);
  g_autofree char *plain = g_build_filename (dir, "plain.onnx", NULL);
  g_autofree char *kept = g_build_filename (dir, "kept.onnx", NULL);
  g_assert_no_error (error);

  g_auto(Run) convert = { 0 };
  const char *convert_args[] = { "edit", model, "-o", plain, "--float16", "--keep-io-types", NULL };
  run_cli (&convert, convert_args);
  g_assert_cmpint (convert.status, ==, 0);
  g_auto(Run) broken = { 0 };
  const char *broken_args[] = { "run", plain, "--input", input, "--validate", NULL };
  run_cli (&broken, broken_args);
  g_assert_cmpint (broken.status, ==, 1);
  /* the planted fault: the first LayerNorm's squares pass 65504 */
  g_assert_nonnull (strstr (broken.out, "NaN/Inf first produced by onnx::Pow '/layers.0/norm1/Pow'"));
  /* reduced, the float16 model's NaN/Inf comes from that Pow alone (with
   * its exponent), in Graft and in onnxruntime */
  g_autofree char *inputs = NULL;
  const char *reduce_args[] = { "--nan", "--input", input, NULL };
  const char *nonfinite[] = { "--inputs", NULL, "--nonfinite", NULL };
  g_auto(GStrv) reduced = reduce (plain, reduce_args, NULL, &inputs);
  g_assert_true (g_strv_contains ((const char *const *) reduced, "/layers.0/norm1/Pow"));
  g_assert_cmpuint (g_strv_length (reduced), <=, 2);
  nonfinite[1] = inputs;
  g_autofree char *small = g_build_filename (inputs, "..", "small.onnx", NULL);
  g_auto(GStrv) in_ort = check_reduced (small, nonfinite);
  g_assert_cmpstrv (in_ort, (const char *const *) reduced);

  g_auto(Run) search = { 0 };
  const char *search_args[] = { "edit", model, "-o", kept, "--float16", "--keep-io-types", "--auto-keep", "--rtol",
                                "1e-2", "--atol", "1e-2", "--input", input, NULL };
  run_cli (&search, search_args);
  if (search.status != 0)
    g_error ("edit --auto-keep: %s%s", search.out, search.err);
  g_assert_nonnull (strstr (search.out, "  /layers.0/norm1/Pow\n"));
  /* parts of the LayerNorms (whose variances overflow), not the model */
  const char *count = strstr (search.out, "auto-keep: ");
  g_assert_nonnull (count);
  gint64 n_kept = g_ascii_strtoll (count + strlen ("auto-keep: "), NULL, 10);
  g_assert_cmpint (n_kept, >=, 1);
  g_assert_cmpint (n_kept, <=, 20);
  g_auto(GStrv) lines = g_strsplit (search.out, "\n", -1);
  guint n_listed = 0;
  for (guint i = 0; lines[i] != NULL; i++)
    if (g_str_has_prefix (lines[i], "  /"))
      {
        g_assert_nonnull (strstr (lines[i], "/norm"));
        n_listed++;
      }
  g_assert_cmpint (n_listed, ==, n_kept);
  g_auto(Run) fine = { 0 };
  const char *fine_args[] = { "run", kept, "--input", input, "--validate", NULL };
  run_cli (&fine, fine_args);
  g_assert_cmpint (fine.status, ==, 0);

  const char *src = g_getenv ("GRAFT_SOURCE_DIR");
  g_autofree char *python = graft_test_python ();
  g_autofree char *script = g_build_filename (src, "tests", "debug", "check-float16.py", NULL);
  g_autofree char *out = NULL;
  int status;
  const char *argv[] = { python, script, model, kept, input, "1e-2", "1e-2", NULL };
  g_assert_true (g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, &out, NULL, &status,
                               &error));
  g_assert_no_error (error);
  g_assert_true (g_spawn_check_wait_status (status, NULL));
  g_assert_cmpstr (g_strstrip (out), ==, "close");
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

  const char *export_argv[] = { python, export_script, models, "resnet18", "mobilenet_v2", "transformer24", NULL };
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
  g_test_add_func ("/debug/reduce/nan", test_reduce_nan);
  g_test_add_data_func ("/debug/reduce/mismatch-model", GINT_TO_POINTER (FALSE), test_reduce_mismatch);
  g_test_add_data_func ("/debug/reduce/mismatch-folder", GINT_TO_POINTER (TRUE), test_reduce_mismatch);
  g_test_add_func ("/debug/reduce/command", test_reduce_command);
  g_test_add_func ("/debug/reduce/fails-in-graft", test_reduce_fails_in_graft);
  g_test_add_func ("/debug/reduce/unknown-op", test_reduce_unknown_op);
  g_test_add_data_func ("/debug/reduce/torchscript", "r18-div0.pt", test_reduce_torch);
  g_test_add_data_func ("/debug/reduce/pt2", "r18-div0.pt2", test_reduce_torch);
  g_test_add_func ("/debug/reduce/nothing-to-reduce", test_reduce_nothing_to_reduce);
  g_test_add_func ("/debug/diff-reference", test_diff_reference);
  g_test_add_data_func ("/debug/cost/resnet18-batch1", "batch=1", test_cost_resnet18);
  g_test_add_data_func ("/debug/cost/resnet18-batch3", "batch=3", test_cost_resnet18);
  g_test_add_data_func ("/debug/cost/mobilenet-v2", "mobilenet_v2", test_cost_plan_matches_runtime);
  g_test_add_data_func ("/debug/cost/transformer24", "transformer24", test_cost_plan_matches_runtime);
  g_test_add_func ("/debug/float16-auto-keep", test_float16_auto_keep);
  return g_test_run ();
}
