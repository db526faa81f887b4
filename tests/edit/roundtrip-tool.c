/* roundtrip-tool SUITE_DIR OUT_DIR: for every case listed in
 * SUITE_DIR/expected-counts.tsv, loads the model with Graft, saves it with
 * the ONNX writer to OUT_DIR/<same relative path>, loads the saved file and
 * compares the two IRs; where Graft's runtime runs the original on the
 * case's test_data_set_0 inputs, runs the saved model too and compares the
 * outputs bit for bit. Prints one line per case:
 *   same<TAB>ORIGINAL<TAB>SAVED<TAB><TAB>RUN
 *   differs<TAB>ORIGINAL<TAB>SAVED<TAB>first difference<TAB>RUN
 *   unreadable<TAB>ORIGINAL<TAB><TAB>reader's error
 *   unsaved<TAB>ORIGINAL<TAB><TAB>writer's error
 * RUN is "outputs-identical", "outputs-differ: why" or "not-run: why".
 * A sixth column says whether graft_graph_copy() (the undo snapshot) of the
 * loaded graph equals it: "copy-same" or "copy-differs: why". A seventh
 * makes the first graph input's dim 0 dynamic and saves the result to
 * OUT_DIR/dynamic/<path>: "dynamic-saved", "dynamic-refused: why" or
 * "dynamic-none" (no input with a dim 0).
 */
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include "ir-compare.h"
#include "loader.h"
#include "onnx/writer.h"
#include "ir/graph-copy.h"
#include "edit/edit.h"
#include "runtime/runtime.h"
#include "runtime/tensor-file.h"

/* Outputs of model on the case's first test data set, or NULL (why set). */
static GPtrArray *
run_case (GraftModel *model, const char *case_dir, GString *why)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GHashTable) inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                        (GDestroyNotify) graft_rt_tensor_unref);
  GraftRuntime *runtime = graft_runtime_new (model, &error);
  GPtrArray *wanted, *outputs;

  if (runtime == NULL)
    {
      g_string_append (why, error->message);
      return NULL;
    }
  wanted = graft_runtime_get_inputs (runtime);
  for (guint i = 0; i < wanted->len; i++)
    {
      GraftValue *input = g_ptr_array_index (wanted, i);
      g_autofree char *file = g_strdup_printf ("%s/test_data_set_0/input_%u.pb", case_dir, i);
      GraftRtTensor *tensor = graft_tensor_file_read (file, input->kind, NULL, &error);

      if (tensor == NULL)
        {
          g_string_append (why, error->message);
          graft_runtime_free (runtime);
          return NULL;
        }
      g_hash_table_insert (inputs, input->name, tensor);
    }
  outputs = graft_runtime_run (runtime, inputs, NULL, NULL, NULL, &error);
  if (outputs == NULL)
    g_string_append (why, error->message);
  graft_runtime_free (runtime);
  return outputs;
}

static gboolean
rt_equal (GraftRtTensor *a, GraftRtTensor *b)
{
  if (a == NULL || b == NULL)
    return a == b;
  if (a->kind != b->kind || a->dtype != b->dtype || a->rank != b->rank
      || memcmp (a->dims, b->dims, sizeof (gint64) * a->rank) != 0)
    return FALSE;
  if (a->kind == GRAFT_RT_SEQUENCE)
    {
      if (a->items->len != b->items->len)
        return FALSE;
      for (guint i = 0; i < a->items->len; i++)
        if (!rt_equal (g_ptr_array_index (a->items, i), g_ptr_array_index (b->items, i)))
          return FALSE;
      return TRUE;
    }
  if (a->kind != GRAFT_RT_TENSOR)
    return TRUE;
  if (a->dtype == GRAFT_DTYPE_STRING)
    {
      for (gint64 i = 0; i < a->numel; i++)
        if (g_strcmp0 (((char **) a->data)[i], ((char **) b->data)[i]) != 0)
          return FALSE;
      return TRUE;
    }
  return a->nbytes == b->nbytes && memcmp (a->data, b->data, a->nbytes) == 0;
}

static void
find_random (GraftNode *node, gpointer user_data)
{
  static const char *const random_ops[] = { "Bernoulli", "RandomNormal", "RandomNormalLike", "RandomUniform",
                                            "RandomUniformLike", "Multinomial", NULL };

  if (g_strv_contains (random_ops, node->op_type))
    *(gboolean *) user_data = TRUE;
}

/* "outputs-identical", "outputs-differ: ..." or "not-run: ...". */
static char *
compare_runs (GraftModel *a, GraftModel *b, const char *case_dir)
{
  g_autoptr(GString) why = g_string_new (NULL);
  g_autoptr(GPtrArray) out_a = NULL;
  g_autoptr(GPtrArray) out_b = NULL;
  gboolean random = FALSE;

  /* Two runs of a random op differ whatever the file says. */
  graft_graph_foreach_node_recursive (graft_model_get_graph (a), find_random, &random);
  if (random)
    return g_strdup ("not-run: the model draws random numbers");
  out_a = run_case (a, case_dir, why);

  if (out_a == NULL)
    {
      g_strdelimit (why->str, "\t\n", ' ');
      return g_strdup_printf ("not-run: %s", why->str);
    }
  out_b = run_case (b, case_dir, why);
  if (out_b == NULL)
    {
      g_strdelimit (why->str, "\t\n", ' ');
      return g_strdup_printf ("outputs-differ: the saved model does not run: %s", why->str);
    }
  if (out_a->len != out_b->len)
    return g_strdup ("outputs-differ: output count");
  for (guint i = 0; i < out_a->len; i++)
    if (!rt_equal (g_ptr_array_index (out_a, i), g_ptr_array_index (out_b, i)))
      return g_strdup_printf ("outputs-differ: output %u", i);
  return g_strdup ("outputs-identical");
}

static void
one_line (char *text)
{
  g_strdelimit (text, "\t\n", ' ');
}

static char *
try_dynamic (const char *original, const char *out_dir, const char *relative)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (original, NULL, NULL, NULL, &error);
  g_autoptr(GraftEdit) edit = NULL;
  g_autofree char *path = g_build_filename (out_dir, "dynamic", relative, NULL);
  g_autofree char *dir = g_path_get_dirname (path);
  GraftGraph *graph;
  GraftValue *input = NULL;

  if (model == NULL)
    return g_strdup ("dynamic-none");
  graph = graft_model_get_graph (model);
  for (guint i = 0; i < graph->inputs->len && input == NULL; i++)
    {
      GraftValue *v = g_ptr_array_index (graph->inputs, i);
      if (v->initializer == NULL && v->shape.rank > 0)
        input = v;
    }
  if (input == NULL)
    return g_strdup ("dynamic-none");
  edit = graft_edit_new_make_dim_dynamic (input->name, 0, "N");
  g_mkdir_with_parents (dir, 0755);
  if (!graft_edit_apply (edit, model, &error) || !graft_onnx_write_file (model, path, GRAFT_ONNX_WRITE_NONE, &error))
    {
      one_line (error->message);
      return g_strdup_printf ("dynamic-refused: %s", error->message);
    }
  return g_strdup ("dynamic-saved");
}

int
main (int argc, char **argv)
{
  g_autofree char *list_path = NULL;
  g_autofree char *contents = NULL;
  g_auto(GStrv) lines = NULL;
  g_autoptr(GError) error = NULL;

  if (argc != 3)
    {
      fprintf (stderr, "usage: roundtrip-tool SUITE_DIR OUT_DIR\n");
      return 2;
    }
  list_path = g_build_filename (argv[1], "expected-counts.tsv", NULL);
  if (!g_file_get_contents (list_path, &contents, NULL, &error))
    {
      fprintf (stderr, "roundtrip-tool: %s\n", error->message);
      return 1;
    }
  lines = g_strsplit (contents, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    {
      g_auto(GStrv) fields = g_strsplit (lines[i], "\t", 2);
      g_autofree char *original = NULL, *saved = NULL, *saved_dir = NULL;
      g_autoptr(GraftModel) a = NULL;
      g_autoptr(GraftModel) b = NULL;
      g_autoptr(GString) why = g_string_new (NULL);
      g_autofree char *case_dir = NULL, *ran = NULL, *copy_state = NULL, *dynamic = NULL;

      if (fields[0] == NULL || fields[0][0] == '\0')
        continue;
      original = g_build_filename (argv[1], fields[0], NULL);
      saved = g_build_filename (argv[2], fields[0], NULL);
      saved_dir = g_path_get_dirname (saved);
      g_mkdir_with_parents (saved_dir, 0755);
      g_clear_error (&error);

      a = graft_model_load (original, NULL, NULL, NULL, &error);
      if (a == NULL)
        {
          one_line (error->message);
          printf ("unreadable\t%s\t\t%s\n", original, error->message);
          continue;
        }
      if (!graft_onnx_write_file (a, saved, GRAFT_ONNX_WRITE_NONE, &error))
        {
          one_line (error->message);
          printf ("unsaved\t%s\t\t%s\n", original, error->message);
          continue;
        }
      b = graft_model_load (saved, NULL, NULL, NULL, &error);
      if (b == NULL)
        {
          one_line (error->message);
          printf ("differs\t%s\t%s\treloading failed: %s\n", original, saved, error->message);
          continue;
        }
      case_dir = g_path_get_dirname (original);
      {
        g_autoptr(GraftGraph) copy = graft_graph_copy (graft_model_get_graph (a), NULL);
        g_autoptr(GString) copy_why = g_string_new (NULL);

        if (graft_test_graphs_equal (graft_model_get_graph (a), copy, "copy", copy_why))
          copy_state = g_strdup ("copy-same");
        else
          {
            one_line (copy_why->str);
            copy_state = g_strdup_printf ("copy-differs: %s", copy_why->str);
          }
      }
      ran = compare_runs (a, b, case_dir);
      dynamic = try_dynamic (original, argv[2], fields[0]);
      if (graft_test_models_equal (a, b, why))
        printf ("same\t%s\t%s\t\t%s\t%s\t%s\n", original, saved, ran, copy_state, dynamic);
      else
        {
          one_line (why->str);
          printf ("differs\t%s\t%s\t%s\t%s\t%s\t%s\n", original, saved, why->str, ran, copy_state, dynamic);
        }
    }
  return 0;
}
