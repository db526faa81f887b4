/* Einsum against onnxruntime: the equations real models use, every kind
 * the spec allows (transposes, diagonals, traces, sums, outer products,
 * three operands, implicit outputs, '...' with broadcasting, empty axes)
 * and 60 random equations mixing batch, contracted, repeated and summed
 * labels, built by tests/runtime/make-einsum-cases.py with onnxruntime's
 * outputs; float32 within 1e-5 of the output's largest magnitude at every
 * SIMD level and at one and two threads, float64 likewise, int32 exactly. */
#include <math.h>
#include <string.h>
#include "loader.h"
#include "runtime/npy.h"
#include "runtime/runtime.h"
#include "../test-python.h"
#include "simd-levels.h"

typedef struct {
  char *name;
  char *equation;
  guint n_inputs;
} EinsumCase;

static char *cases_dir;

static double
max_abs_difference (const GraftRtTensor *got, const GraftRtTensor *want, double *max_want)
{
  double diff = 0;
  *max_want = 0;
  for (gint64 i = 0; i < want->numel; i++)
    {
      double w = graft_rt_tensor_get_f64 (want, i), g = graft_rt_tensor_get_f64 (got, i);
      *max_want = MAX (*max_want, fabs (w));
      diff = isnan (g) ? INFINITY : MAX (diff, fabs (g - w));
    }
  return diff;
}

static void
check_case (gconstpointer item, GraftSimdLevel level)
{
  const EinsumCase *c = item;
  g_autoptr(GError) error = NULL;
  g_autofree char *file = g_strdup_printf ("%s.onnx", c->name);
  g_autofree char *model_path = g_build_filename (cases_dir, file, NULL);
  g_autofree char *folder = g_build_filename (cases_dir, c->name, NULL);
  g_autofree char *want_path = g_build_filename (folder, "out.npy", NULL);

  g_test_message ("%s: %s at %s", c->name, c->equation, graft_simd_level_to_string (level));
  g_autoptr(GraftModel) model = graft_model_load (model_path, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_autoptr(GraftRtTensor) want = graft_npy_read (want_path, &error);
  g_assert_no_error (error);
  g_autoptr(GPtrArray) inputs = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_rt_tensor_unref);
  g_autoptr(GHashTable) bound = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  for (guint k = 0; k < c->n_inputs; k++)
    {
      g_autofree char *name = g_strdup_printf ("in%u.npy", k);
      g_autofree char *path = g_build_filename (folder, name, NULL);
      GraftRtTensor *x = graft_npy_read (path, &error);
      g_assert_no_error (error);
      g_ptr_array_add (inputs, x);
      g_hash_table_insert (bound, g_strdup_printf ("in%u", k), x);
    }
  for (guint threads = 1; threads <= 2; threads++)
    {
      g_autoptr(GraftRuntime) rt = graft_runtime_new (model, &error);
      g_assert_no_error (error);
      graft_runtime_set_n_threads (rt, threads);
      g_autoptr(GPtrArray) outs = graft_runtime_run (rt, bound, NULL, NULL, NULL, &error);
      g_assert_no_error (error);
      g_assert_cmpuint (outs->len, ==, 1);
      GraftRtTensor *got = outs->pdata[0];
      g_assert_cmpint (got->dtype, ==, want->dtype);
      g_assert_true (graft_rt_tensor_same_shape (got, want));
      double max_want;
      double diff = max_abs_difference (got, want, &max_want);
      g_test_message ("  %u thread%s: max |graft - onnxruntime| = %g, max |onnxruntime| = %g", threads,
                      threads == 1 ? "" : "s", diff, max_want);
      if (want->dtype == GRAFT_DTYPE_INT32)
        g_assert_cmpfloat (diff, ==, 0);
      else
        g_assert_cmpfloat (diff, <=, 1e-5 * MAX (max_want, 1e-30));
    }
}

static GPtrArray *
read_cases (const char *path)
{
  g_autofree char *text = NULL;
  g_autoptr(GError) error = NULL;
  if (!g_file_get_contents (path, &text, NULL, &error))
    g_error ("%s", error->message);
  GPtrArray *cases = g_ptr_array_new ();
  g_auto(GStrv) lines = g_strsplit (text, "\n", -1);
  for (char **line = lines; *line; line++)
    {
      g_auto(GStrv) fields = g_strsplit (*line, " ", -1);
      if (g_strv_length (fields) != 3)
        continue;
      EinsumCase *c = g_new (EinsumCase, 1);
      c->name = g_strdup (fields[0]);
      c->equation = g_strdup (fields[1]);
      c->n_inputs = (guint) g_ascii_strtoull (fields[2], NULL, 10);
      g_ptr_array_add (cases, c);
    }
  return cases;
}

/* Runs make-einsum-cases.py into cases_dir. */
static gboolean
make_cases (void)
{
  g_autofree char *python = graft_test_python ();
  g_autofree char *script = g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "tests", "runtime",
                                              "make-einsum-cases.py", NULL);
  const char *argv[] = { python, script, cases_dir, NULL };
  g_autoptr(GError) error = NULL;
  if (graft_test_spawn (argv, &error))
    return TRUE;
  g_printerr ("cannot make the einsum cases: %s\n", error->message);
  return FALSE;
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  graft_test_require_venv ();
  cases_dir = g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "tests", "fixtures-generated", "runtime", "einsum",
                                NULL);
  if (!make_cases ())
    return 1;
  g_autofree char *list = g_build_filename (cases_dir, "cases.txt", NULL);
  GPtrArray *cases = read_cases (list);
  /* the table outlives the tests: g_test_run uses it to the end */
  EinsumCase *table = g_new (EinsumCase, cases->len);
  for (guint i = 0; i < cases->len; i++)
    table[i] = *(EinsumCase *) cases->pdata[i];
  graft_test_add_checks_at_levels ("/einsum", table, sizeof (EinsumCase), cases->len, check_case);
  int status = g_test_run ();
  for (guint i = 0; i < cases->len; i++)
    {
      g_free (table[i].name);
      g_free (table[i].equation);
      g_free (cases->pdata[i]);
    }
  g_free (table);
  g_ptr_array_unref (cases);
  g_free (cases_dir);
  return status;
}
