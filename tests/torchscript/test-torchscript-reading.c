/* TorchScript that reads like the model. The aten schemas shipped in
 * data/aten-schemas.tsv: overload choice for TorchScript calls, and nodes
 * labelled with the schema's argument names (stride = [2, 2], weight: …)
 * instead of positions (that the file matches torch is the test
 * aten-schemas-match-torch). Branches on self.training in a module saved
 * in eval mode are dead code, not control flow to look at. Module
 * attributes (prim::GetAttr) are listed in the boxes that read them unless
 * the view asks for their boxes, the model untouched; activation shapes
 * come from an input shape the user gives. */
#include <string.h>
#include <glib/gstdio.h>

#include "loader.h"
#include "lint/diagnostics.h"
#include "analysis/shape-inference.h"
#include "layout/attribute-fold.h"
#include "layout/labels.h"
#include "layout/layout.h"
#include "pytorch/aten-schemas.h"
#include "../test-labels.h"
#include "../test-python.h"

/* Every row of data/aten-schemas.tsv (op, overload, arguments) is one
 * overload its op lists; there are over 2000. */
static void
assert_every_schema_listed (void)
{
  g_autofree char *path = g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "data", "aten-schemas.tsv", NULL);
  g_autoptr(GHashTable) rows = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr(GError) error = NULL;
  g_autofree char *text = NULL;
  g_auto(GStrv) lines = NULL;
  GHashTableIter iter;
  gpointer op, n_rows;
  guint n = 0;

  g_file_get_contents (path, &text, NULL, &error);
  g_assert_no_error (error);
  lines = g_strsplit (text, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    {
      const char *tab = strchr (lines[i], '\t');
      char *name;

      if (lines[i][0] == '#' || tab == NULL)
        continue;
      name = g_strndup (lines[i], tab - lines[i]);
      g_hash_table_replace (rows, name, GUINT_TO_POINTER (GPOINTER_TO_UINT (g_hash_table_lookup (rows, name)) + 1));
      n++;
    }
  g_assert_cmpuint (n, >, 2000);
  g_hash_table_iter_init (&iter, rows);
  while (g_hash_table_iter_next (&iter, &op, &n_rows))
    {
      GPtrArray *overloads = graft_aten_schema_list (op);

      g_assert_nonnull (overloads);
      g_assert_cmpuint (overloads->len, ==, GPOINTER_TO_UINT (n_rows));
    }
}

static void
test_lookup (void)
{
  const gboolean conv_values[] = { TRUE, TRUE, FALSE, FALSE, FALSE, FALSE, FALSE };
  const gboolean add_tensors[] = { TRUE, TRUE, FALSE };
  const gboolean add_ints[] = { FALSE, FALSE };
  const char *const keywords[] = { NULL, NULL, "alpha" };
  guint index[7];
  const GraftAtenSchema *schema;

  assert_every_schema_listed ();
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

/* The box's lines; show_module_attributes: prim::GetAttr readers do not
 * list the attributes (their boxes are drawn). */
static char *
label_with (GraftNode *node, gboolean show_module_attributes)
{
  GraftLabelOptions options = { FALSE, TRUE, TRUE, show_module_attributes };

  return graft_test_label_text (node, &options);
}

static char *
label_of (GraftNode *node)
{
  return label_with (node, FALSE);
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

/* Module attributes as the view shows them, and activation shapes from a
 * given input shape: make-conv-model.py's AttributeNet, scripted by the
 * test venv's torch, whose forward reads self.scale (0.5) and
 * self.start_dim (1) through prim::GetAttr. */
static GraftNode *
find_exact_op (GraftGraph *graph, const char *op)
{
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);

      if (strcmp (node->op, op) == 0)
        return node;
    }
  return NULL;
}

static GraftModel *
load_attribute_model (void)
{
  g_autofree char *dir = conv_model_dir ();
  g_autofree char *path = g_build_filename (dir, "attribute_scripted.pt", NULL);
  g_autoptr(GError) error = NULL;
  GraftModel *model = graft_model_load (path, NULL, NULL, NULL, &error);

  g_assert_no_error (error);
  return model;
}



static GraftScene *
lay_out (GraftGraph *graph, gboolean show_module_attributes)
{
  g_autoptr(GraftLayout) layout = graft_layout_new (graph);
  g_autoptr(GError) error = NULL;
  GraftLayoutOptions options;
  GraftScene *scene;

  graft_layout_options_init (&options);
  options.show_module_attributes = show_module_attributes;
  graft_layout_set_options (layout, &options);
  graft_layout_expand_all (layout);
  scene = graft_layout_compute (layout, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  return scene;
}

static guint
count_op (GraftGraph *graph, const char *op)
{
  guint n = 0;

  for (guint i = 0; i < graph->nodes->len; i++)
    n += strcmp (((GraftNode *) g_ptr_array_index (graph->nodes, i))->op, op) == 0;
  return n;
}

static void
test_attributes_fold (void)
{
  g_autoptr(GraftModel) model = load_attribute_model ();
  GraftGraph *graph = graft_model_get_graph (model);
  guint n_nodes = graph->nodes->len;
  GraftNode *mul = find_exact_op (graph, "aten::mul");
  GraftNode *flatten = find_exact_op (graph, "aten::flatten");
  GraftNode *conv = find_exact_op (graph, "aten::conv2d");
  g_autofree char *mul_folded = NULL;
  g_autofree char *flatten_folded = NULL;
  g_autofree char *mul_shown = NULL;
  g_autofree char *conv_label = NULL;
  g_autoptr(GraftScene) folded = NULL;
  g_autoptr(GraftScene) shown = NULL;
  guint n_get_attr = count_op (graph, "prim::GetAttr");

  g_assert_nonnull (mul);
  g_assert_nonnull (flatten);
  g_assert_nonnull (conv);
  /* self.scale and self.start_dim; the conv's weights are initializers. */
  g_assert_cmpuint (n_get_attr, ==, 2);
  g_assert_true (graft_attribute_fold_is_folded_input (mul, 1));
  g_assert_false (graft_attribute_fold_is_folded_input (mul, 0));
  g_assert_false (graft_attribute_fold_applies (conv));

  mul_folded = label_of (mul);
  flatten_folded = label_of (flatten);
  mul_shown = label_with (mul, TRUE);
  conv_label = label_of (conv);
  g_test_message ("folded:\n%s\n%s\nshown:\n%s\n%s", mul_folded, flatten_folded, mul_shown, conv_label);
  /* The schema's argument names and the attribute's value. */
  g_assert_nonnull (strstr (mul_folded, "other = 0.5"));
  g_assert_nonnull (strstr (flatten_folded, "start_dim = 1"));
  g_assert_null (strstr (mul_shown, "other ="));
  g_assert_nonnull (strstr (conv_label, "weight: float32[8,3,3,3]"));

  /* Folded: the GetAttr boxes and their edges are gone from the picture. */
  folded = lay_out (graph, FALSE);
  shown = lay_out (graph, TRUE);
  g_test_message ("boxes: %u folded, %u shown; edges %u / %u", graft_scene_get_n_nodes (folded),
                  graft_scene_get_n_nodes (shown), graft_scene_get_n_edges (folded), graft_scene_get_n_edges (shown));
  g_assert_cmpuint (graft_scene_get_n_nodes (folded) + n_get_attr, ==, graft_scene_get_n_nodes (shown));
  g_assert_cmpuint (graft_scene_get_n_edges (folded) + n_get_attr, ==, graft_scene_get_n_edges (shown));
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      gboolean get_attr = strcmp (node->op, "prim::GetAttr") == 0;

      g_assert_cmpint (graft_scene_find_node (folded, node) >= 0, ==, !get_attr);
      g_assert_cmpint (graft_scene_find_node (shown, node), >=, 0);
    }
  /* A view: the model keeps its nodes. */
  g_assert_cmpuint (graph->nodes->len, ==, n_nodes);
  g_assert_cmpuint (count_op (graph, "prim::GetAttr"), ==, 2);
}

static GraftValue *
graph_output (GraftModel *model)
{
  return g_ptr_array_index (graft_model_get_graph (model)->outputs, 0);
}

static void
test_given_shapes (void)
{
  g_autoptr(GraftModel) model = load_attribute_model ();
  g_autoptr(GHashTable) shapes = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, NULL);
  g_autoptr(GraftInference) declared = graft_shape_inference_run (model, NULL);
  g_autoptr(GraftInference) given = NULL;
  g_autoptr(GError) error = NULL;
  GraftGraph *graph = graft_model_get_graph (model);
  GraftValue *input = NULL;
  GraftNode *conv = find_exact_op (graph, "aten::conv2d");
  GraftShape shape = { 0 };
  g_autofree char *conv_shape = NULL;
  g_autofree char *out_shape = NULL;

  for (guint i = 0; i < graph->inputs->len && input == NULL; i++)
    if (((GraftValue *) g_ptr_array_index (graph->inputs, i))->kind == GRAFT_VALUE_TENSOR)
      input = g_ptr_array_index (graph->inputs, i);
  g_assert_nonnull (input);
  /* TorchScript declares no input shape, so nothing is known... */
  g_assert_cmpint (input->shape.rank, <, 0);
  g_assert_null (graft_inference_get_shape (declared, graph_output (model)));

  /* ...until the user gives one. */
  g_assert_true (graft_shape_parse ("1x3x16x16", &shape, &error));
  g_assert_no_error (error);
  g_hash_table_insert (shapes, input->name, &shape);
  given = graft_shape_inference_run_given (model, shapes, &error);
  g_assert_no_error (error);
  conv_shape = graft_value_shape_label (g_ptr_array_index (conv->outputs, 0), given);
  out_shape = graft_value_shape_label (graph_output (model), given);
  g_test_message ("%s=1x3x16x16: conv %s, output %s", input->name, conv_shape, out_shape);
  g_assert_cmpstr (conv_shape, ==, "1×8×16×16");
  g_assert_cmpstr (out_shape, ==, "1×2048");
  g_assert_cmpint (graft_inference_get_dtype (given, graph_output (model)), ==, GRAFT_DTYPE_FLOAT32);

  /* A name that is no input: the message lists the inputs. */
  g_hash_table_remove_all (shapes);
  g_hash_table_insert (shapes, (gpointer) "image", &shape);
  g_assert_null (graft_shape_inference_run_given (model, shapes, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "no tensor input 'image'"));
  g_assert_nonnull (strstr (error->message, input->name));
  graft_shape_clear (&shape);
}

static void
test_shape_parse (void)
{
  const char *good[][2] = {
    { "1x3x224x224", "1×3×224×224" }, { "1×3×224×224", "1×3×224×224" }, { " 2, 8 ", "2×8" }, { "7", "7" },
    { "1X4", "1×4" },
  };
  const char *bad[] = { "", "x", "1xx2", "0x3", "-1x3", "ax3", "1x3.5", "99999999999", NULL };

  for (guint i = 0; i < G_N_ELEMENTS (good); i++)
    {
      GraftShape shape = { 0 };
      g_autoptr(GError) error = NULL;
      g_autofree char *text = NULL;

      g_assert_true (graft_shape_parse (good[i][0], &shape, &error));
      g_assert_no_error (error);
      text = graft_shape_to_string (&shape);
      g_assert_cmpstr (text, ==, good[i][1]);
      graft_shape_clear (&shape);
    }
  for (guint i = 0; bad[i] != NULL; i++)
    {
      GraftShape shape = { 0 };
      g_autoptr(GError) error = NULL;

      g_assert_false (graft_shape_parse (bad[i], &shape, &error));
      g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  graft_test_require_venv ();
  g_test_add_func ("/aten-schemas/lookup", test_lookup);
  g_test_add_func ("/aten-schemas/torchscript-labels", test_torchscript_labels);
  g_test_add_func ("/torchscript-reading/dead-training-branches", test_dead_training_branches);
  g_test_add_func ("/torchscript-reading/python-source", test_python_source);
  g_test_add_func ("/torchscript-reading/attributes-fold", test_attributes_fold);
  g_test_add_func ("/torchscript-reading/given-shapes", test_given_shapes);
  g_test_add_func ("/torchscript-reading/shape-parse", test_shape_parse);
  return g_test_run ();
}
