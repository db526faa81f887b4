/* The ONNX backend conformance suite (node tests) run through Graft's
 * runtime. Each case is one TAP test: load model.onnx, feed
 * test_data_set_0/input_*.pb, compare with output_*.pb (rtol 1e-3,
 * atol 1e-7 as the suite's own runner uses).
 *
 * tests/runtime/conformance-expected-failures.txt lists the cases known to
 * fail (name, then a reason). A listed case is reported as skipped with its
 * reason; a listed case that passes fails the test so that the list stays
 * tight; an unlisted failing case fails the test.
 *
 * GRAFT_CONFORMANCE_FILTER=substring runs only matching cases;
 * GRAFT_CONFORMANCE_WRITE=path writes the current failures in the
 * expectations format (to refresh the list after fixing kernels).
 */
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>
#include "loader.h"
#include "runtime/runtime.h"
#include "runtime/tensor-file.h"
#include "../test-python.h"

static GHashTable *expected_failures;  /* name → reason */
static GString *failure_log;
static guint n_passed, n_total;

static char *
suite_dir (void)
{
  const char *src = g_getenv ("GRAFT_SOURCE_DIR");
  return g_build_filename (src ? src : ".", "tests", "fixtures-generated", "onnx-backend", NULL);
}

static gboolean
ensure_suite (GError **error)
{
  g_autofree char *test_python = graft_test_python ();
  const char *src = g_getenv ("GRAFT_SOURCE_DIR");
  g_autofree char *script = g_build_filename (src ? src : ".", "tests", "onnx", "make-backend-suite.py", NULL);
  g_autofree char *dir = suite_dir ();
  const char *argv[] = { test_python, script, dir, NULL };
  int status;
  g_autofree char *err = NULL;

  if (!g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, &err, &status, error))
    return FALSE;
  if (!g_spawn_check_wait_status (status, error))
    {
      g_prefix_error (error, "make-backend-suite.py: %s: ", err ? err : "");
      return FALSE;
    }
  return TRUE;
}

static void
load_expectations (void)
{
  const char *src = g_getenv ("GRAFT_SOURCE_DIR");
  g_autofree char *path = g_build_filename (src ? src : ".", "tests", "runtime",
                                            "conformance-expected-failures.txt", NULL);
  g_autofree char *text = NULL;

  expected_failures = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  if (!g_file_get_contents (path, &text, NULL, NULL))
    return;
  g_auto(GStrv) lines = g_strsplit (text, "\n", -1);
  for (guint i = 0; lines[i]; i++)
    {
      char *line = g_strstrip (lines[i]);
      if (*line == '\0' || *line == '#')
        continue;
      char *space = strpbrk (line, " \t");
      char *reason = space ? g_strstrip (space + 1) : "";
      if (space)
        *space = '\0';
      g_hash_table_insert (expected_failures, g_strdup (line), g_strdup (reason));
    }
}

static gboolean
compare (GraftRtTensor *got, GraftRtTensor *want, const char *name, GError **error)
{
  if (got->kind != want->kind)
    return g_set_error (error, GRAFT_RUNTIME_ERROR, 0, "output '%s': got kind %d, expected %d", name, got->kind, want->kind), FALSE;
  if (want->kind == GRAFT_RT_SEQUENCE)
    {
      if (got->items->len != want->items->len)
        return g_set_error (error, GRAFT_RUNTIME_ERROR, 0, "output '%s': sequence of %u, expected %u",
                            name, got->items->len, want->items->len), FALSE;
      for (guint i = 0; i < want->items->len; i++)
        if (!compare (got->items->pdata[i], want->items->pdata[i], name, error))
          return FALSE;
      return TRUE;
    }
  if (want->kind == GRAFT_RT_NONE)
    return TRUE;
  g_autofree char *gs = graft_rt_tensor_describe (got);
  g_autofree char *ws = graft_rt_tensor_describe (want);
  if (got->dtype != want->dtype || !graft_rt_tensor_same_shape (got, want))
    return g_set_error (error, GRAFT_RUNTIME_ERROR, 0, "output '%s': got %s, expected %s", name, gs, ws), FALSE;
  for (gint64 i = 0; i < want->numel; i++)
    {
      if (want->dtype == GRAFT_DTYPE_STRING)
        {
          const char *a = ((char **) got->data)[i], *b = ((char **) want->data)[i];
          if (strcmp (a, b) != 0)
            return g_set_error (error, GRAFT_RUNTIME_ERROR, 0, "output '%s'[%" G_GINT64_FORMAT "]: got \"%s\", expected \"%s\"",
                                name, i, a, b), FALSE;
          continue;
        }
      if (graft_dtype_is_float (want->dtype))
        {
          double a = graft_rt_tensor_get_f64 (got, i), b = graft_rt_tensor_get_f64 (want, i);
          if (isnan (a) && isnan (b))
            continue;
          if (isinf (a) && a == b)
            continue;
          if (!(fabs (a - b) <= 1e-7 + 1e-3 * fabs (b)))
            return g_set_error (error, GRAFT_RUNTIME_ERROR, 0, "output '%s' %s[%" G_GINT64_FORMAT "]: got %.9g, expected %.9g",
                                name, ws, i, a, b), FALSE;
        }
      else if (graft_rt_tensor_get_i64 (got, i) != graft_rt_tensor_get_i64 (want, i))
        return g_set_error (error, GRAFT_RUNTIME_ERROR, 0, "output '%s' %s[%" G_GINT64_FORMAT "]: got %" G_GINT64_FORMAT
                            ", expected %" G_GINT64_FORMAT, name, ws, i,
                            graft_rt_tensor_get_i64 (got, i), graft_rt_tensor_get_i64 (want, i)), FALSE;
    }
  return TRUE;
}

static gboolean
run_case (const char *case_dir, GError **error)
{
  g_autofree char *model_path = g_build_filename (case_dir, "model.onnx", NULL);
  g_autofree char *data_dir = g_build_filename (case_dir, "test_data_set_0", NULL);
  g_autoptr(GraftModel) model = graft_model_load (model_path, NULL, NULL, NULL, error);
  if (model == NULL)
    return FALSE;
  g_autoptr(GraftRuntime) rt = graft_runtime_new (model, error);
  if (rt == NULL)
    return FALSE;

  GraftGraph *graph = graft_model_get_graph (model);
  g_autoptr(GHashTable) inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                       (GDestroyNotify) graft_rt_tensor_unref);
  /* The suite's input_i.pb files follow graph.input order (which may include initializers). */
  for (guint i = 0; i < graph->inputs->len; i++)
    {
      GraftValue *v = graph->inputs->pdata[i];
      g_autofree char *file = g_strdup_printf ("input_%u.pb", i);
      g_autofree char *path = g_build_filename (data_dir, file, NULL);
      if (!g_file_test (path, G_FILE_TEST_EXISTS))
        continue;
      GraftRtTensor *t = graft_tensor_file_read (path, v->kind, NULL, error);
      if (t == NULL)
        return FALSE;
      /* onnx 1.12's generator stores bfloat16 test data as UINT16 bit patterns. */
      if (v->dtype == GRAFT_DTYPE_BFLOAT16 && t->kind == GRAFT_RT_TENSOR && t->dtype == GRAFT_DTYPE_UINT16)
        t->dtype = GRAFT_DTYPE_BFLOAT16;
      g_hash_table_insert (inputs, v->name, t);
    }

  g_autoptr(GPtrArray) outputs = graft_runtime_run (rt, inputs, NULL, NULL, NULL, error);
  if (outputs == NULL)
    return FALSE;
  for (guint i = 0; i < graph->outputs->len; i++)
    {
      GraftValue *v = graph->outputs->pdata[i];
      g_autofree char *file = g_strdup_printf ("output_%u.pb", i);
      g_autofree char *path = g_build_filename (data_dir, file, NULL);
      g_autoptr(GraftRtTensor) want = graft_tensor_file_read (path, v->kind, NULL, error);
      if (want == NULL)
        return FALSE;
      if (v->dtype == GRAFT_DTYPE_BFLOAT16 && want->kind == GRAFT_RT_TENSOR && want->dtype == GRAFT_DTYPE_UINT16)
        want->dtype = GRAFT_DTYPE_BFLOAT16;
      if (!compare (outputs->pdata[i], want, v->name, error))
        return FALSE;
    }
  return TRUE;
}

static void
test_case (gconstpointer data)
{
  const char *case_dir = data;
  g_autofree char *name = g_path_get_basename (case_dir);
  const char *reason = g_hash_table_lookup (expected_failures, name);
  g_autoptr(GError) error = NULL;
  gboolean ok = run_case (case_dir, &error);

  n_total++;
  if (ok)
    n_passed++;
  else
    g_string_append_printf (failure_log, "%s %s\n", name, error ? error->message : "failed");

  if (reason != NULL)
    {
      if (ok)
        {
          g_test_message ("%s passes now: remove it from conformance-expected-failures.txt", name);
          g_test_fail ();
          return;
        }
      g_autofree char *msg = g_strdup_printf ("expected failure (%s): %s", reason, error ? error->message : "");
      g_test_skip (msg);
      return;
    }
  if (!ok)
    {
      g_test_message ("FAIL %s: %s", name, error ? error->message : "");
      g_test_fail ();
    }
}

static int
compare_paths (gconstpointer a, gconstpointer b)
{
  return strcmp (*(const char *const *) a, *(const char *const *) b);
}

int
main (int argc, char **argv)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = NULL;
  const char *filter = g_getenv ("GRAFT_CONFORMANCE_FILTER");
  GPtrArray *cases = g_ptr_array_new_with_free_func (g_free);

  g_test_init (&argc, &argv, NULL);
  failure_log = g_string_new (NULL);
  load_expectations ();
  if (!ensure_suite (&error))
    {
      g_printerr ("cannot generate the ONNX backend suite: %s\n", error->message);
      return 1;
    }
  dir = suite_dir ();
  g_autofree char *node_dir = g_build_filename (dir, "node", NULL);
  g_autoptr(GDir) d = g_dir_open (node_dir, 0, &error);
  if (d == NULL)
    {
      g_printerr ("%s\n", error->message);
      return 1;
    }
  const char *entry;
  while ((entry = g_dir_read_name (d)))
    if (g_str_has_prefix (entry, "test_") && (filter == NULL || strstr (entry, filter)))
      g_ptr_array_add (cases, g_build_filename (node_dir, entry, NULL));
  g_ptr_array_sort (cases, compare_paths);
  for (guint i = 0; i < cases->len; i++)
    {
      g_autofree char *name = g_path_get_basename (cases->pdata[i]);
      g_autofree char *path = g_strdup_printf ("/conformance/%s", name);
      g_test_add_data_func (path, cases->pdata[i], test_case);
    }
  int status = g_test_run ();
  g_printerr ("# conformance: %u of %u cases pass (%.1f%%)\n", n_passed, n_total,
              n_total ? 100.0 * n_passed / n_total : 0.0);
  const char *write = g_getenv ("GRAFT_CONFORMANCE_WRITE");
  if (write)
    g_file_set_contents (write, failure_log->str, -1, NULL);
  return status;
}
