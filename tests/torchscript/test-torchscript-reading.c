/* TorchScript that reads like the model. The aten schemas shipped in
 * data/aten-schemas.tsv: overload choice for TorchScript calls, and nodes
 * labelled with the schema's argument names (stride = [2, 2], weight: …)
 * instead of positions (that the file matches torch is the test
 * aten-schemas-match-torch). Branches on self.training in a module saved
 * in eval mode are dead code, not control flow to look at. */
#include <string.h>
#include <glib/gstdio.h>

#include "loader.h"
#include "analysis/diagnostics.h"
#include "layout/labels.h"
#include "torchscript/aten-schemas.h"
#include "../test-python.h"

static void
test_lookup (void)
{
  const gboolean conv_values[] = { TRUE, TRUE, FALSE, FALSE, FALSE, FALSE, FALSE };
  const gboolean add_tensors[] = { TRUE, TRUE, FALSE };
  const gboolean add_ints[] = { FALSE, FALSE };
  const char *const keywords[] = { NULL, NULL, "alpha" };
  guint index[7];
  const GraftAtenSchema *schema;

  g_assert_cmpuint (graft_aten_schema_count (), >, 2000);
  schema = graft_aten_schema_find ("aten::conv2d", 7, NULL, conv_values, index);
  g_assert_nonnull (schema);
  g_assert_cmpstr (schema->overload, ==, "");
  g_assert_cmpstr (schema->arguments[index[1]].name, ==, "weight");
  g_assert_cmpstr (schema->arguments[index[3]].name, ==, "stride");
  g_assert_cmpstr (schema->arguments[index[6]].name, ==, "groups");
  /* Defaults may be left out. */
  schema = graft_aten_schema_find ("aten::conv2d", 2, NULL, conv_values, index);
  g_assert_nonnull (schema);
  g_assert_cmpstr (schema->arguments[index[1]].name, ==, "weight");

  /* Tensor + tensor with alpha by keyword, and int + int. */
  schema = graft_aten_schema_find ("aten::add", 3, keywords, add_tensors, index);
  g_assert_cmpstr (schema->overload, ==, "Tensor");
  g_assert_cmpstr (schema->arguments[index[2]].name, ==, "alpha");
  schema = graft_aten_schema_find ("aten::add", 2, NULL, add_ints, index);
  g_assert_cmpstr (schema->arguments[index[0]].name, ==, "a");

  /* Too many arguments, an unknown keyword, an unknown op. */
  g_assert_null (graft_aten_schema_find ("aten::relu", 2, NULL, NULL, NULL));
  {
    const char *const unknown[] = { NULL, "no_such_argument" };
    g_assert_null (graft_aten_schema_find ("aten::relu", 2, unknown, NULL, NULL));
  }
  g_assert_null (graft_aten_schema_find ("aten::no_such_op", 1, NULL, NULL, NULL));
}

static char *
conv_model_dir (void)
{
  g_autofree char *python = graft_test_python ();
  g_autofree char *script = g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "tests", "torchscript",
                                              "make-conv-model.py", NULL);
  char *dir = g_build_filename (g_getenv ("GRAFT_BUILD_DIR"), "tests", "torchscript", "conv-model", NULL);
  const char *argv[] = { python, script, dir, NULL };
  g_autoptr(GError) error = NULL;
  g_autofree char *err = NULL;
  int status;

  g_assert_true (g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL, &err, &status,
                               &error));
  g_assert_no_error (error);
  if (!g_spawn_check_wait_status (status, NULL))
    g_error ("make-conv-model.py failed: %s", err);
  return dir;
}

static GraftNode *
find_op (GraftGraph *graph, const char *op)
{
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);

      if (g_str_has_suffix (node->op, op))
        return node;
    }
  return NULL;
}

static char *
label_of (GraftNode *node)
{
  GraftLabelOptions options = { FALSE, TRUE, TRUE };
  cairo_surface_t *surface = cairo_image_surface_create (CAIRO_FORMAT_ARGB32, 1, 1);
  cairo_t *cr = cairo_create (surface);
  g_auto(GStrv) lines = graft_node_label_lines (node, &options, cr, 1000);

  cairo_destroy (cr);
  cairo_surface_destroy (surface);
  return g_strjoinv ("\n", lines);
}

static void
assert_conv_labels (const char *path, const char *conv_op)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);
  GraftGraph *graph;
  GraftNode *conv, *pool, *linear;
  g_autofree char *conv_label = NULL;
  g_autofree char *pool_label = NULL;
  g_autofree char *linear_label = NULL;

  g_assert_no_error (error);
  graph = graft_model_get_graph (model);
  conv = find_op (graph, conv_op);
  pool = find_op (graph, "max_pool2d");
  linear = find_op (graph, "linear");
  g_assert_nonnull (conv);
  g_assert_nonnull (pool);
  g_assert_nonnull (linear);
  conv_label = label_of (conv);
  pool_label = label_of (pool);
  linear_label = label_of (linear);
  g_test_message ("%s:\n%s\n%s\n%s", path, conv_label, pool_label, linear_label);
  g_assert_nonnull (strstr (conv_label, "stride = [2, 2]"));
  g_assert_nonnull (strstr (conv_label, "padding = [1, 1]"));
  g_assert_nonnull (strstr (conv_label, "weight: float32[8,3,3,3]"));
  g_assert_null (strstr (conv_label, "arg3"));
  g_assert_null (strstr (conv_label, "in1"));
  g_assert_nonnull (strstr (pool_label, "kernel_size = [3, 3]"));
  g_assert_nonnull (strstr (linear_label, "weight: float32[4,8]"));
  g_assert_nonnull (strstr (linear_label, "bias: float32[4]"));
}

static void
test_torchscript_labels (void)
{
  g_autofree char *dir = conv_model_dir ();
  g_autofree char *traced = g_build_filename (dir, "conv_traced.pt", NULL);
  g_autofree char *scripted = g_build_filename (dir, "conv_scripted.pt", NULL);

  assert_conv_labels (traced, "_convolution");
  assert_conv_labels (scripted, "conv2d");
}

static GPtrArray *
control_flow_notes (const char *path)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);
  g_autoptr(GPtrArray) diagnostics = NULL;
  GPtrArray *names = g_ptr_array_new_with_free_func (g_free);

  g_assert_no_error (error);
  diagnostics = graft_lint_model (model, NULL);
  for (guint i = 0; i < diagnostics->len; i++)
    {
      GraftDiagnostic *diagnostic = g_ptr_array_index (diagnostics, i);

      if (g_str_equal (diagnostic->rule, "control-flow"))
        g_ptr_array_add (names, g_strdup (diagnostic->node_name));
    }
  g_ptr_array_add (names, NULL);
  return names;
}

static void
test_dead_training_branches (void)
{
  g_autofree char *dir = conv_model_dir ();
  g_autofree char *eval_path = g_build_filename (dir, "conv_scripted.pt", NULL);
  g_autofree char *train_path = g_build_filename (dir, "conv_scripted_train.pt", NULL);
  g_autoptr(GPtrArray) eval_notes = control_flow_notes (eval_path);
  g_autoptr(GPtrArray) train_notes = control_flow_notes (train_path);
  g_autofree char *eval_list = g_strjoinv (", ", (char **) eval_notes->pdata);
  g_autofree char *train_list = g_strjoinv (", ", (char **) train_notes->pdata);

  g_test_message ("control flow in eval mode: %s", eval_list);
  g_test_message ("control flow in training mode: %s", train_list);
  /* BatchNorm's `if self.training:` and `if self.training and
   * self.track_running_stats:` are live only in training mode; its input
   * rank check stays. */
  g_assert_cmpuint (eval_notes->len - 1, <, train_notes->len - 1);
  g_assert_cmpuint (eval_notes->len - 1, <=, 2);
  g_assert_cmpuint (train_notes->len - 1, >=, eval_notes->len - 1 + 2);
}

/* The line python_source ("FILE:LINE") names, read from that file. */
static char *
source_line (const char *python_source)
{
  const char *colon = strrchr (python_source, ':');
  g_autofree char *file = g_strndup (python_source, colon - python_source);
  g_autofree char *text = NULL;
  g_auto(GStrv) lines = NULL;
  guint64 line = g_ascii_strtoull (colon + 1, NULL, 10);

  g_assert_true (g_file_get_contents (file, &text, NULL, NULL));
  lines = g_strsplit (text, "\n", -1);
  g_assert_cmpuint (line, >=, 1);
  g_assert_cmpuint (line, <=, g_strv_length (lines));
  return g_strdup (lines[line - 1]);
}

/* The code/ debug_pkl records lead each node back to the Python line it came from:
 * torch's own modules, and the model's forward. */
static void
test_python_source (void)
{
  g_autofree char *dir = conv_model_dir ();
  const char *files[] = { "conv_scripted.pt", "conv_traced.pt" };

  for (guint f = 0; f < G_N_ELEMENTS (files); f++)
    {
      g_autofree char *path = g_build_filename (dir, files[f], NULL);
      g_autoptr(GError) error = NULL;
      g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);
      GraftNode *conv, *relu;
      g_autofree char *conv_line = NULL;
      g_autofree char *relu_line = NULL;

      g_assert_no_error (error);
      conv = find_op (graft_model_get_graph (model), f == 0 ? "conv2d" : "_convolution");
      relu = find_op (graft_model_get_graph (model), "relu");
      g_assert_nonnull (conv->python_source);
      g_assert_nonnull (relu->python_source);
      g_test_message ("%s: conv at %s, relu at %s", files[f], conv->python_source, relu->python_source);
      g_assert_nonnull (strstr (conv->python_source, "torch/nn/modules/conv.py:"));
      conv_line = source_line (conv->python_source);
      g_assert_nonnull (strstr (conv_line, "conv2d"));
      g_assert_nonnull (strstr (relu->python_source, "make-conv-model.py:"));
      relu_line = source_line (relu->python_source);
      g_assert_nonnull (strstr (relu_line, "torch.relu"));
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/aten-schemas/lookup", test_lookup);
  g_test_add_func ("/aten-schemas/torchscript-labels", test_torchscript_labels);
  g_test_add_func ("/torchscript-reading/dead-training-branches", test_dead_training_branches);
  g_test_add_func ("/torchscript-reading/python-source", test_python_source);
  return g_test_run ();
}
