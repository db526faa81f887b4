/* graft-cli run on data/samples/tiny-cnn.onnx: inputs from .npy (by name
 * and by position), random inputs with --dim, outputs written as .npy,
 * --repeat and --profile output, and the one-line errors for wrong
 * shapes, wrong dtypes, truncated files, missing dims and bad options. */
#include <string.h>
#include <glib/gstdio.h>
#include "runtime/npy.h"
#include "runtime/simd.h"
#include "../test-scratch.h"

static char *cli_path;
static char *model_path;

static int
run_cli (const char *const *args, char **out, char **err)
{
  g_autoptr(GPtrArray) argv = g_ptr_array_new ();
  g_ptr_array_add (argv, cli_path);
  g_ptr_array_add (argv, "run");
  for (guint i = 0; args[i]; i++)
    g_ptr_array_add (argv, (gpointer) args[i]);
  g_ptr_array_add (argv, NULL);
  int status = -1;
  g_autoptr(GError) error = NULL;
  g_assert_true (g_spawn_sync (NULL, (char **) argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL, out, err, &status, &error));
  g_assert_no_error (error);
  return WIFEXITED (status) ? WEXITSTATUS (status) : -1;
}

static char *
write_input (const char *dir, const char *name, GraftDType dtype, int rank, const gint64 *dims, gsize cut)
{
  g_autoptr(GraftRtTensor) t = graft_rt_tensor_new (dtype, rank, dims, NULL);
  for (gint64 i = 0; i < t->numel; i++)
    graft_rt_tensor_set_f64 (t, i, (i % 17) / 17.0);
  g_autoptr(GBytes) bytes = graft_npy_serialize (t, NULL);
  char *path = g_build_filename (dir, name, NULL);
  gsize len = g_bytes_get_size (bytes);
  g_assert_true (g_file_set_contents (path, g_bytes_get_data (bytes, NULL), cut ? MIN (cut, len) : len, NULL));
  return path;
}

static void
test_npy_input_and_outputs (void)
{
  g_autofree char *dir = graft_test_scratch_dir ("graft-cli-run-XXXXXX", NULL);
  gint64 dims[] = { 2, 3, 32, 32 };
  g_autofree char *input = write_input (dir, "x.npy", GRAFT_DTYPE_FLOAT32, 4, dims, 0);
  g_autofree char *outdir = g_build_filename (dir, "out", NULL);
  g_autofree char *arg = g_strdup_printf ("image=%s", input);
  g_autofree char *out = NULL, *err = NULL;
  int status = run_cli ((const char *[]) { model_path, "--input", arg, "-o", outdir, "--repeat", "3", "--profile", NULL },
                        &out, &err);
  g_assert_cmpint (status, ==, 0);
  g_assert_nonnull (strstr (out, "probabilities: float32[2,10]"));
  g_assert_nonnull (strstr (out, "median time per run:"));
  g_assert_nonnull (strstr (out, "load time: "));
  g_assert_nonnull (strstr (out, "first run "));
  g_assert_nonnull (strstr (out, "median CPU time per run: "));
  /* the timing names the kernels it measured (the same environment's level) */
  g_autofree char *kernels = g_strdup_printf ("%s kernels", graft_simd_level_to_string (graft_simd_get_level ()));
  g_assert_nonnull (strstr (out, kernels));
  g_assert_nonnull (strstr (out, "onnx::Conv"));
  /* nodes by CPU time, wall time beside */
  g_assert_nonnull (strstr (out, "CPU ms/run"));
  g_autofree char *npy = g_build_filename (outdir, "probabilities.npy", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftRtTensor) probs = graft_npy_read (npy, &error);
  g_assert_no_error (error);
  g_assert_cmpint (probs->dims[0], ==, 2);
  double sum = 0;
  for (int i = 0; i < 10; i++)
    sum += ((float *) probs->data)[i];
  g_assert_cmpfloat_with_epsilon (sum, 1.0, 1e-4);   /* a softmax row */

  /* the same file bound by position gives the same result */
  g_autofree char *outdir2 = g_build_filename (dir, "out2", NULL);
  g_autofree char *out2 = NULL, *err2 = NULL;
  g_assert_cmpint (run_cli ((const char *[]) { model_path, "--input", input, "-o", outdir2, NULL }, &out2, &err2), ==, 0);
  g_autofree char *npy2 = g_build_filename (outdir2, "probabilities.npy", NULL);
  g_autoptr(GraftRtTensor) probs2 = graft_npy_read (npy2, &error);
  g_assert_no_error (error);
  g_assert_cmpmem (probs->data, probs->nbytes, probs2->data, probs2->nbytes);
}

static void
test_random_with_dim (void)
{
  g_autofree char *out = NULL, *err = NULL;
  int status = run_cli ((const char *[]) { model_path, "--random", "--seed", "3", NULL }, &out, &err);
  g_assert_cmpint (status, ==, 1);
  g_assert_nonnull (strstr (err, "symbolic dimension 'batch'"));
  g_assert_nonnull (strstr (err, "--dim batch=VALUE"));
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);
  status = run_cli ((const char *[]) { model_path, "--random", "--dim", "batch=3", NULL }, &out, &err);
  g_assert_cmpint (status, ==, 0);
  g_assert_nonnull (strstr (out, "probabilities: float32[3,10]"));
}

static void
test_bad_inputs (void)
{
  g_autofree char *dir = graft_test_scratch_dir ("graft-cli-run-XXXXXX", NULL);
  gint64 wrong_shape[] = { 1, 4, 32, 32 }, dims[] = { 1, 3, 32, 32 };
  g_autofree char *shape_path = write_input (dir, "shape.npy", GRAFT_DTYPE_FLOAT32, 4, wrong_shape, 0);
  g_autofree char *dtype_path = write_input (dir, "dtype.npy", GRAFT_DTYPE_FLOAT64, 4, dims, 0);
  g_autofree char *cut_path = write_input (dir, "cut.npy", GRAFT_DTYPE_FLOAT32, 4, dims, 500);
  struct {
    const char *file;
    const char *expect;
  } cases[] = {
    { shape_path, "input 'image' expects shape batch×3×32×32" },
    { dtype_path, "input 'image' expects element type float32" },
    { cut_path, "truncated .npy data" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *out = NULL, *err = NULL;
      int status = run_cli ((const char *[]) { model_path, "--input", cases[i].file, NULL }, &out, &err);
      g_assert_cmpint (status, ==, 1);
      g_assert_nonnull (strstr (err, cases[i].expect));
      g_assert_cmpint (strchr (err, '\n') - err, ==, (int) strlen (err) - 1);   /* one line */
    }
  g_autofree char *out = NULL, *err = NULL;
  g_assert_cmpint (run_cli ((const char *[]) { model_path, "--input", "nosuch=x.npy", NULL }, &out, &err), ==, 1);
  g_assert_nonnull (strstr (err, "has no input 'nosuch'"));
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);
  g_assert_cmpint (run_cli ((const char *[]) { model_path, NULL }, &out, &err), ==, 1);
  g_assert_nonnull (strstr (err, "input 'image'"));
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);
  g_assert_cmpint (run_cli ((const char *[]) { model_path, "--threads", "0", NULL }, &out, &err), ==, 2);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  const char *build = g_getenv ("GRAFT_BUILD_DIR"), *src = g_getenv ("GRAFT_SOURCE_DIR");
  cli_path = g_build_filename (build ? build : ".", "app", "graft-cli", NULL);
  model_path = g_build_filename (src ? src : ".", "data", "samples", "tiny-cnn.onnx", NULL);
  g_test_add_func ("/cli-run/npy-input-outputs", test_npy_input_and_outputs);
  g_test_add_func ("/cli-run/random-dim", test_random_with_dim);
  g_test_add_func ("/cli-run/bad-inputs", test_bad_inputs);
  return g_test_run ();
}
