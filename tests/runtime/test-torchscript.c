/* TorchScript models (tests/fixtures/make-torchscript-fixtures.py) run in
 * Graft against PyTorch's own outputs (tests/runtime/make-torchscript-references.py),
 * for both generations of writers (torch-generations.h):
 * max |graft - torch| ≤ 1e-4 × max |torch| for every output. */
#include <math.h>
#include <string.h>
#include "loader.h"
#include "runtime/npy.h"
#include "runtime/runtime.h"
#include "../torchscript/torch-generations.h"

static char *fixtures_dirs[GRAFT_TORCH_N_GENERATIONS], *refs_dirs[GRAFT_TORCH_N_GENERATIONS];

static const char *cases[] = {
  "tiny_traced", "if_tensor_scripted", "while_loop_scripted",
  "resnet18_traced", "mobilenet_v3_small_traced", "googlenet_traced", "mobilenet_v2_traced",
};


static void
compare_with_torch (gconstpointer data)
{
  const GraftTorchGenerationCase *c = data;
  const char *name = c->name;
  const char *fixtures_dir = fixtures_dirs[c->generation], *refs_dir = refs_dirs[c->generation];
  if (graft_torch_generation_skip (c, fixtures_dir))
    return;
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
  static GraftTorchGenerationCase generation_cases[GRAFT_TORCH_N_GENERATIONS][G_N_ELEMENTS (cases)];

  g_test_init (&argc, &argv, NULL);
  for (guint g = 0; g < GRAFT_TORCH_N_GENERATIONS; g++)
    {
      fixtures_dirs[g] = graft_torch_generation_fixtures (g, NULL);
      if (fixtures_dirs[g] != NULL)
        refs_dirs[g] = graft_torch_generation_run (g, "tests/runtime/make-torchscript-references.py", fixtures_dirs[g],
                                                   "-references");
      for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
        {
          g_autofree char *path = g_strdup_printf ("/torchscript/%s/%s-vs-pytorch", graft_torch_generation_name (g),
                                                   cases[i]);
          generation_cases[g][i] = (GraftTorchGenerationCase) { g, cases[i] };
          g_test_add_data_func (path, &generation_cases[g][i], compare_with_torch);
        }
    }
  return g_test_run ();
}
