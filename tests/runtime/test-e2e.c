/* End to end: torchvision ResNet-18 and MobileNetV2, a TransformerEncoder
 * and transformers' BERT and GPT-2 exported to ONNX by both of torch's
 * exporters (random weights, tests/fixtures/make-onnx-models.py) run in
 * Graft and in onnxruntime (tests/runtime/ort-run.py) on the same .npy
 * input; the outputs must agree to 1e-4 of the output's largest magnitude;
 * and a model with ONNX local functions against onnxruntime. A missing test
 * venv or Python module fails the test. */
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>
#include "loader.h"
#include "runtime/npy.h"
#include "runtime/runtime.h"
#include "../test-python.h"
#include "../test-scratch.h"

static char *models_dir;

/* A model and the input it is fed: uniform floats in [-1, 1), or token
 * ids below vocabulary. */
typedef struct {
  const char *name;
  const char *input_name;
  GraftDType dtype;
  int rank;
  gint64 dims[4];
  gint64 vocabulary;
} E2eCase;

static const E2eCase e2e_cases[] = {
  { "resnet18", "input", GRAFT_DTYPE_FLOAT32, 4, { 2, 3, 224, 224 } },
  { "mobilenet_v2", "input", GRAFT_DTYPE_FLOAT32, 4, { 2, 3, 224, 224 } },
  { "resnet18_dynamo", "input", GRAFT_DTYPE_FLOAT32, 4, { 2, 3, 224, 224 } },
  { "mobilenet_v2_dynamo", "input", GRAFT_DTYPE_FLOAT32, 4, { 2, 3, 224, 224 } },
  { "transformer24", "src", GRAFT_DTYPE_FLOAT32, 3, { 16, 1, 256 } },
  { "transformer24_dynamo", "src", GRAFT_DTYPE_FLOAT32, 3, { 16, 1, 256 } },
  { "bert", "input_ids", GRAFT_DTYPE_INT64, 2, { 2, 16 }, 1000 },
  { "bert_dynamo", "input_ids", GRAFT_DTYPE_INT64, 2, { 2, 16 }, 1000 },
  { "gpt2", "input_ids", GRAFT_DTYPE_INT64, 2, { 2, 16 }, 1000 },
  { "gpt2_dynamo", "input_ids", GRAFT_DTYPE_INT64, 2, { 2, 16 }, 1000 },
};

static GraftRtTensor *
make_input (const E2eCase *e2e)
{
  g_autoptr(GraftRtTensor) x = graft_rt_tensor_new (e2e->dtype, e2e->rank, e2e->dims, NULL);
  g_autoptr(GRand) rng = g_rand_new_with_seed (42);

  for (gint64 i = 0; i < x->numel; i++)
    if (e2e->dtype == GRAFT_DTYPE_INT64)
      ((gint64 *) x->data)[i] = g_rand_int_range (rng, 0, e2e->vocabulary);
    else
      ((float *) x->data)[i] = g_rand_double_range (rng, -1, 1);
  return g_steal_pointer (&x);
}

static void
compare_with_ort (gconstpointer data)
{
  g_autofree char *test_python = graft_test_python ();
  const E2eCase *e2e = data;
  const char *name = e2e->name;
  const char *src = g_getenv ("GRAFT_SOURCE_DIR");
  g_autofree char *model_path = g_strdup_printf ("%s/%s.onnx", models_dir, name);
  g_autofree char *tmp = graft_test_scratch_dir ("graft-e2e-XXXXXX", NULL);
  g_autofree char *input_path = g_build_filename (tmp, "input.npy", NULL);
  g_autofree char *ort_dir = g_build_filename (tmp, "ort", NULL);
  g_autofree char *script = g_build_filename (src, "tests", "runtime", "ort-run.py", NULL);
  g_autoptr(GError) error = NULL;

  g_autoptr(GraftRtTensor) x = make_input (e2e);
  g_assert_true (graft_npy_write (input_path, x, &error));

  g_autofree char *feed = g_strdup_printf ("%s=%s", e2e->input_name, input_path);
  const char *argv[] = { test_python, script, model_path, "--input", feed, "-o", ort_dir, NULL };
  g_assert_true (graft_test_spawn (argv, &error));
  g_assert_no_error (error);
  g_autofree char *ort_out = g_build_filename (ort_dir, "output.npy", NULL);
  g_autoptr(GraftRtTensor) want = graft_npy_read (ort_out, &error);
  g_assert_no_error (error);

  g_autoptr(GraftModel) model = graft_model_load (model_path, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_autoptr(GraftRuntime) rt = graft_runtime_new (model, &error);
  g_assert_no_error (error);
  graft_runtime_set_n_threads (rt, 2);
  g_autoptr(GHashTable) inputs = g_hash_table_new (g_str_hash, g_str_equal);
  g_hash_table_insert (inputs, (gpointer) e2e->input_name, x);
  g_autoptr(GPtrArray) outs = graft_runtime_run (rt, inputs, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  GraftRtTensor *got = outs->pdata[0];
  g_assert_true (graft_rt_tensor_same_shape (got, want));
  double max_ref = 0, max_diff = 0;
  for (gint64 i = 0; i < want->numel; i++)
    {
      double a = ((float *) got->data)[i], b = ((float *) want->data)[i];
      max_ref = MAX (max_ref, fabs (b));
      max_diff = MAX (max_diff, fabs (a - b));
    }
  g_test_message ("%s: max |graft - onnxruntime| = %g, max |onnxruntime| = %g", name, max_diff, max_ref);
  g_assert_cmpfloat (max_ref, >, 0);
  g_assert_cmpfloat (max_diff, <=, 1e-4 * max_ref);

  g_remove (ort_out);
  g_rmdir (ort_dir);
  g_remove (input_path);
  g_rmdir (tmp);
}

/* A model calling ONNX local functions (attribute references, a nested
 * call, an omitted attribute, the functions' own opset imports; built by
 * tests/runtime/make-function-model.py) against onnxruntime. */
static void
test_local_functions (void)
{
  g_autofree char *test_python = graft_test_python ();
  const char *src = g_getenv ("GRAFT_SOURCE_DIR");
  g_autofree char *dir = g_build_filename (src, "tests", "fixtures-generated", "runtime", "functions", NULL);
  g_autofree char *gen = g_build_filename (src, "tests", "runtime", "make-function-model.py", NULL);
  g_autofree char *script = g_build_filename (src, "tests", "runtime", "ort-run.py", NULL);
  g_autofree char *model_path = g_build_filename (dir, "functions.onnx", NULL);
  g_autofree char *x_path = g_build_filename (dir, "x.npy", NULL);
  g_autofree char *b_path = g_build_filename (dir, "b.npy", NULL);
  g_autofree char *ort_dir = g_build_filename (dir, "ort", NULL);
  g_autofree char *x_feed = g_strdup_printf ("x=%s", x_path), *b_feed = g_strdup_printf ("b=%s", b_path);
  g_autoptr(GError) error = NULL;

  const char *gen_argv[] = { test_python, gen, dir, NULL };
  g_assert_true (graft_test_spawn (gen_argv, &error));
  g_assert_no_error (error);
  const char *ort_argv[] = { test_python, script, model_path, "--input", x_feed, "--input", b_feed, "-o", ort_dir, NULL };
  g_assert_true (graft_test_spawn (ort_argv, &error));
  g_assert_no_error (error);

  g_autoptr(GraftModel) model = graft_model_load (model_path, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_autoptr(GPtrArray) unsupported = NULL;
  g_assert_true (graft_runtime_check_supported (model, &unsupported, &error));
  g_assert_cmpuint (unsupported->len, ==, 0);
  g_autoptr(GraftRuntime) rt = graft_runtime_new (model, &error);
  g_assert_no_error (error);
  g_autoptr(GraftRtTensor) x = graft_npy_read (x_path, &error);
  g_assert_no_error (error);
  g_autoptr(GraftRtTensor) b = graft_npy_read (b_path, &error);
  g_assert_no_error (error);
  g_autoptr(GHashTable) inputs = g_hash_table_new (g_str_hash, g_str_equal);
  g_hash_table_insert (inputs, "x", x);
  g_hash_table_insert (inputs, "b", b);
  g_autoptr(GPtrArray) outs = graft_runtime_run (rt, inputs, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (outs->len, ==, 4);
  for (guint k = 0; k < outs->len; k++)
    {
      g_autofree char *name = g_strdup_printf ("y%u.npy", k + 1);
      g_autofree char *path = g_build_filename (ort_dir, name, NULL);
      g_autoptr(GraftRtTensor) want = graft_npy_read (path, &error);
      g_assert_no_error (error);
      GraftRtTensor *got = outs->pdata[k];
      g_assert_true (graft_rt_tensor_same_shape (got, want));
      for (gint64 i = 0; i < want->numel; i++)
        g_assert_cmpfloat_with_epsilon (((float *) got->data)[i], ((float *) want->data)[i], 1e-5);
    }
}

int
main (int argc, char **argv)
{
  g_autofree char *test_python = graft_test_python ();
  g_autoptr(GError) error = NULL;
  g_test_init (&argc, &argv, NULL);
  const char *src = g_getenv ("GRAFT_SOURCE_DIR");
  models_dir = g_build_filename (src, "tests", "fixtures-generated", "models", NULL);
  g_autofree char *script = g_build_filename (src, "tests", "fixtures", "make-onnx-models.py", NULL);
  g_autoptr(GPtrArray) gen = g_ptr_array_new ();
  g_ptr_array_add (gen, test_python);
  g_ptr_array_add (gen, script);
  g_ptr_array_add (gen, models_dir);
  for (gsize i = 0; i < G_N_ELEMENTS (e2e_cases); i++)
    g_ptr_array_add (gen, (gpointer) e2e_cases[i].name);
  g_ptr_array_add (gen, NULL);
  if (!graft_test_spawn ((const char *const *) gen->pdata, &error))
    {
      g_printerr ("cannot generate the models: %s\n", error->message);
      return 1;
    }
  for (gsize i = 0; i < G_N_ELEMENTS (e2e_cases); i++)
    {
      g_autofree char *path = g_strdup_printf ("/e2e/%s-vs-onnxruntime", e2e_cases[i].name);
      g_test_add_data_func (path, &e2e_cases[i], compare_with_ort);
    }
  g_test_add_func ("/e2e/local-functions-vs-onnxruntime", test_local_functions);
  return g_test_run ();
}
