/* TorchScript models (tests/fixtures/make-torchscript-fixtures.py) run in
 * Graft against PyTorch's own outputs (tests/runtime/make-torchscript-references.py):
 * max |graft - torch| ≤ 1e-4 × max |torch| for every output. */
#include <math.h>
#include <string.h>
#include "loader.h"
#include "runtime/npy.h"
#include "runtime/runtime.h"
#include "../test-python.h"

static char *fixtures_dir, *refs_dir;

static const char *cases[] = {
  "tiny_traced", "if_tensor_scripted", "while_loop_scripted",
  "resnet18_traced", "mobilenet_v3_small_traced", "googlenet_traced",
};

static gboolean
spawn (const char *const *argv, GError **error)
{
  int status;
  g_autofree char *err = NULL;
  if (!g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, &err, &status, error))
    return FALSE;
  if (!g_spawn_check_wait_status (status, error))
    {
      g_prefix_error (error, "%s: %s: ", argv[1], err ? err : "");
      return FALSE;
    }
  return TRUE;
}

static void
compare_with_torch (gconstpointer data)
{
  const char *name = data;
  g_autoptr(GError) error = NULL;
  g_autofree char *model_path = g_strdup_printf ("%s/%s.pt", fixtures_dir, name);
  g_autoptr(GraftModel) model = graft_model_load (model_path, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_autoptr(GraftRuntime) rt = graft_runtime_new (model, &error);
  g_assert_no_error (error);

  GPtrArray *inputs = graft_runtime_get_inputs (rt);
  g_autoptr(GHashTable) feed = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, (GDestroyNotify) graft_rt_tensor_unref);
  guint k = 0;
  for (guint i = 0; i < inputs->len; i++)
    {
      GraftValue *v = inputs->pdata[i];
      if (v->kind == GRAFT_VALUE_OBJECT)
        continue;   /* the module itself (self) */
      g_autofree char *path = g_strdup_printf ("%s/%s.in%u.npy", refs_dir, name, k++);
      GraftRtTensor *t = graft_npy_read (path, &error);
      g_assert_no_error (error);
      g_hash_table_insert (feed, v->name, t);
    }
  g_autoptr(GPtrArray) outs = graft_runtime_run (rt, feed, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  for (guint i = 0; i < outs->len; i++)
    {
      g_autofree char *path = g_strdup_printf ("%s/%s.out%u.npy", refs_dir, name, i);
      g_autoptr(GraftRtTensor) want = graft_npy_read (path, &error);
      g_assert_no_error (error);
      GraftRtTensor *got = outs->pdata[i];
      g_assert_cmpint (got->numel, ==, want->numel);
      double max_ref = 0, max_diff = 0;
      for (gint64 e = 0; e < want->numel; e++)
        {
          double a = graft_rt_tensor_get_f64 (got, e), b = graft_rt_tensor_get_f64 (want, e);
          max_ref = MAX (max_ref, fabs (b));
          max_diff = MAX (max_diff, fabs (a - b));
        }
      g_test_message ("%s output %u: max |graft - torch| = %g, max |torch| = %g", name, i, max_diff, max_ref);
      g_assert_cmpfloat (max_diff, <=, 1e-4 * MAX (max_ref, 1e-30));
    }
}

int
main (int argc, char **argv)
{
  g_autoptr(GError) error = NULL;
  g_test_init (&argc, &argv, NULL);
  const char *src = g_getenv ("GRAFT_SOURCE_DIR");
  fixtures_dir = g_build_filename (src, "tests", "fixtures-generated", "torchscript", NULL);
  refs_dir = g_build_filename (src, "tests", "fixtures-generated", "runtime-torchscript", NULL);
  g_autofree char *fixtures = g_build_filename (src, "tests", "fixtures", "make-torchscript-fixtures.py", NULL);
  g_autofree char *refs = g_build_filename (src, "tests", "runtime", "make-torchscript-references.py", NULL);
  const char *gen1[] = { GRAFT_TEST_LEGACY_PYTHON, fixtures, fixtures_dir, NULL };
  const char *gen2[] = { GRAFT_TEST_LEGACY_PYTHON, refs, fixtures_dir, refs_dir, NULL };
  if (!spawn (gen1, &error) || !spawn (gen2, &error))
    {
      g_printerr ("cannot generate the TorchScript fixtures: %s\n", error->message);
      return 1;
    }
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *path = g_strdup_printf ("/torchscript/%s-vs-pytorch", cases[i]);
      g_test_add_data_func (path, cases[i], compare_with_torch);
    }
  return g_test_run ();
}
