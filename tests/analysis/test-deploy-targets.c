/* The deployment target table (data/targets/NAME.target, compiled in) and the
 * checks on models built here: every file parses, every input a condition
 * names exists in the op's ONNX schema, a broken file is refused naming
 * its line, and the partitions follow onnxruntime's grouping. The
 * agreement with onnxruntime and OpenVINO on real exports is
 * check-deploy-targets.py. */
#include <string.h>

#include "lint/deploy-target.h"
#include "lint/target-check.h"
#include "ir/graph.h"
#include "ir/model.h"
#include "onnx/op-schemas.h"

static const char *const expected_targets[] = {
  "executorch-xnnpack", "openvino", "ort-coreml", "ort-coreml-mlprogram", "ort-cuda",
  "ort-nnapi", "ort-qnn", "ort-xnnpack", "tensorrt",
};

static void
test_table (void)
{
  guint n_targets;
  const GraftDeployTarget *const *targets = graft_deploy_targets (&n_targets);

  g_assert_cmpuint (n_targets, ==, G_N_ELEMENTS (expected_targets));
  for (guint i = 0; i < n_targets; i++)
    {
      g_assert_cmpstr (targets[i]->name, ==, expected_targets[i]);
      g_assert_nonnull (targets[i]->sources[0]);
      g_assert_cmpuint (g_hash_table_size (targets[i]->ops), >, 5);
      g_assert_true (graft_deploy_target_lookup (targets[i]->name) == targets[i]);
    }
  g_assert_null (graft_deploy_target_lookup ("tpu"));
  g_assert_false (graft_deploy_target_lookup ("tensorrt")->host_fallback);
  g_assert_true (graft_deploy_target_lookup ("ort-nnapi")->static_shapes);
  g_assert_cmpint (graft_deploy_target_lookup ("ort-coreml")->max_rank, ==, 5);
}

/* A condition naming an input the op never has would silently pass: every
 * name must be in the op's schema at some opset. */
static void
test_condition_names_resolve (void)
{
  guint n_targets;
  const GraftDeployTarget *const *targets = graft_deploy_targets (&n_targets);
  guint checked = 0;

  for (guint t = 0; t < n_targets; t++)
    {
      GHashTableIter iter;
      gpointer key, value;

      if (targets[t]->graph != GRAFT_TARGET_GRAPH_ONNX)
        continue;
      g_hash_table_iter_init (&iter, targets[t]->ops);
      while (g_hash_table_iter_next (&iter, &key, &value))
        {
          const GraftTargetOp *op = g_ptr_array_index ((GPtrArray *) value, 0);
          const char *colons = strstr (op->op, "::");
          g_autofree char *domain = g_strndup (op->op, colons - op->op);

          for (guint c = 0; c < op->conditions->len; c++)
            for (const GraftTargetCondition *alt = g_ptr_array_index (op->conditions, c); alt; alt = alt->otherwise)
              {
                gboolean is_input = alt->kind == GRAFT_CONDITION_RANK || alt->kind == GRAFT_CONDITION_CONST
                                    || alt->kind == GRAFT_CONDITION_STATIC || alt->kind == GRAFT_CONDITION_DTYPE;
                for (guint s = 0; is_input && alt->subjects[s] != NULL; s++)
                  {
                    const char *name = alt->subjects[s];
                    gboolean found = FALSE;

                    if (g_ascii_isdigit (name[0]) || strcmp (name, "*") == 0)
                      continue;
                    for (gint64 opset = 1; opset <= 26 && !found; opset++)
                      {
                        const GraftOnnxSchema *schema = graft_onnx_schema_lookup (domain, colons + 2, opset);
                        g_auto(GStrv) inputs = schema ? g_strsplit (schema->inputs, " ", -1) : NULL;
                        for (guint k = 0; inputs != NULL && inputs[k] != NULL && !found; k++)
                          {
                            inputs[k][strcspn (inputs[k], "?.")] = '\0';
                            found = strcmp (inputs[k], name) == 0;
                          }
                      }
                    if (!found)
                      g_error ("%s: %s has no input named '%s'", targets[t]->name, op->op, name);
                    checked++;
                  }
              }
        }
    }
  g_assert_cmpuint (checked, >, 50);
}

static void
test_parse_errors (void)
{
  const char *good = "name t\ntitle T\nsource s\nversion 1\nop Conv rank:X=4 const:W,B -- 2-D\n";
  const char *bad_condition = "name t\ntitle T\nsource s\nversion 1\n\nop Conv wrong:X\n";
  const char *bad_dtype = "name t\ntitle T\nsource s\nversion 1\nop Relu dtype:X=float33\n";
  const char *no_source = "name t\ntitle T\nversion 1\n";
  const char *bad_alias = "name t\ntitle T\nsource s\nversion 1\nalias aten::conv2d\n";
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftDeployTarget) target = graft_deploy_target_parse (good, strlen (good), "good.target", &error);
  GraftDeployTarget *refused;
  const GraftTargetOp *conv;

  g_assert_no_error (error);
  conv = graft_deploy_target_find_op (target, "onnx::Conv", 17);
  g_assert_nonnull (conv);
  g_assert_cmpuint (conv->conditions->len, ==, 2);
  g_assert_cmpstr (conv->note, ==, "2-D");

  refused = graft_deploy_target_parse (bad_condition, strlen (bad_condition), "bad.target", &error);
  g_assert_null (refused);
  g_assert_nonnull (strstr (error->message, "bad.target:6: unknown condition 'wrong:X'"));
  g_clear_error (&error);
  refused = graft_deploy_target_parse (bad_dtype, strlen (bad_dtype), "bad.target", &error);
  g_assert_null (refused);
  g_assert_nonnull (strstr (error->message, "bad.target:5: unknown dtype 'float33'"));
  g_clear_error (&error);
  refused = graft_deploy_target_parse (no_source, strlen (no_source), "bad.target", &error);
  g_assert_null (refused);
  g_assert_nonnull (strstr (error->message, "needs name, title, source and version"));
  g_clear_error (&error);
  refused = graft_deploy_target_parse (bad_alias, strlen (bad_alias), "bad.target", &error);
  g_assert_null (refused);
  g_assert_nonnull (strstr (error->message, "bad.target:5: alias takes FROM TO"));
}

/* alias FROM TO: a node of FROM is judged by TO's lines (ExecuTorch's
 * to_edge turns a saved program's aten::conv2d into aten::convolution). */
static void
test_alias (void)
{
  const char *text = "name t\ntitle T\nsource s\nversion 1\ngraph aten\nalias aten::conv2d aten::convolution\n"
                     "op aten::convolution rank:0=3-4\n";
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftDeployTarget) target = graft_deploy_target_parse (text, strlen (text), "alias.target", &error);
  const GraftDeployTarget *executorch = graft_deploy_target_lookup ("executorch-xnnpack");

  g_assert_no_error (error);
  g_assert_true (graft_deploy_target_find_op (target, "aten::conv2d", -1)
                 == graft_deploy_target_find_op (target, "aten::convolution", -1));
  g_assert_nonnull (graft_deploy_target_find_op (target, "aten::conv2d", -1));
  g_assert_true (graft_deploy_target_lists_op (target, "aten::conv2d"));
  g_assert_false (graft_deploy_target_lists_op (target, "aten::conv3d"));
  /* the shipped file: a training-IR program's ops and their in-place forms */
  g_assert_nonnull (graft_deploy_target_find_op (executorch, "aten::conv2d", -1));
  g_assert_nonnull (graft_deploy_target_find_op (executorch, "aten::relu_", -1));
  g_assert_nonnull (graft_deploy_target_find_op (executorch, "aten::batch_norm", -1));
}

static GraftValue *
add_value (GraftGraph *graph, const char *name, int rank, const gint64 *dims)
{
  GraftValue *value = graft_graph_ensure_value (graph, name);
  value->dtype = GRAFT_DTYPE_FLOAT32;
  graft_shape_init_fixed (&value->shape, rank, dims);
  return value;
}

static GraftNode *
add_node (GraftGraph *graph, const char *op, const char *name, GraftValue *in, GraftValue *in2, GraftValue *out)
{
  GraftNode *node = graft_graph_add_node (graph, NULL, op, name);
  graft_node_add_input (node, in);
  if (in2 != NULL)
    graft_node_add_input (node, in2);
  graft_node_add_output (node, out);
  return node;
}

/* x → Relu a → Erf b → Add(a, b) c → Relu d, and a → Sigmoid e → output:
 * on NNAPI, Erf falls back; Add reads Erf, so it cannot join the first
 * partition (data would leave through Erf and come back): two partitions,
 * {Relu, Sigmoid} and {Add, Relu}, as onnxruntime groups them. */
static void
test_partitions (void)
{
  g_autoptr(GraftModel) model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *graph = graft_graph_new ("g");
  const gint64 dims[] = { 1, 4 };
  GraftValue *x = add_value (graph, "x", 2, dims), *a = add_value (graph, "a", 2, dims);
  GraftValue *b = add_value (graph, "b", 2, dims), *c = add_value (graph, "c", 2, dims);
  GraftValue *d = add_value (graph, "d", 2, dims), *e = add_value (graph, "e", 2, dims);
  g_autoptr(GraftTargetReport) report = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *summary = NULL;
  GraftPartition *first, *second;

  graft_graph_add_input (graph, x);
  add_node (graph, "Relu", "relu", x, NULL, a);
  add_node (graph, "Erf", "erf", a, NULL, b);
  add_node (graph, "Add", "add", a, b, c);
  add_node (graph, "Relu", "relu2", c, NULL, d);
  add_node (graph, "Sigmoid", "sigmoid", a, NULL, e);
  graft_graph_add_output (graph, d);
  graft_graph_add_output (graph, e);
  graft_model_set_graph (model, graph);
  graft_model_set_opset (model, "onnx", 17);

  report = graft_target_check (model, graft_deploy_target_lookup ("ort-nnapi"), NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (report->n_nodes, ==, 5);
  g_assert_cmpuint (report->n_supported, ==, 4);
  g_assert_cmpuint (report->partitions->len, ==, 2);
  first = g_ptr_array_index (report->partitions, 0);
  second = g_ptr_array_index (report->partitions, 1);
  g_assert_cmpuint (first->nodes->len, ==, 2);
  g_assert_cmpstr (((GraftNode *) g_ptr_array_index (first->nodes, 1))->name, ==, "sigmoid");
  g_assert_cmpuint (second->nodes->len, ==, 2);
  /* Borders: the first partition takes x and gives a (to Erf and Add) and e. */
  g_assert_cmpuint (first->inputs->len, ==, 1);
  g_assert_true (g_ptr_array_index (first->inputs, 0) == x);
  g_assert_true (g_ptr_array_find (first->outputs, a, NULL) && g_ptr_array_find (first->outputs, e, NULL));
  g_assert_true (g_ptr_array_find (second->inputs, b, NULL) && g_ptr_array_find (second->inputs, a, NULL));
  summary = graft_target_report_summary (report);
  g_assert_cmpstr (summary, ==, "2 partitions, 4/5 nodes on ort-nnapi; Erf falls back");
  g_assert_cmpint (graft_target_report_lookup (report, g_ptr_array_index (graph->nodes, 1))->reason, ==,
                   GRAFT_SUPPORT_OP);

  /* The aten target refuses an ONNX model, saying what it reads. */
  g_assert_null (graft_target_check (model, graft_deploy_target_lookup ("executorch-xnnpack"), NULL, &error));
  g_assert_nonnull (strstr (error->message, "torch.export programs"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/deploy-targets/table", test_table);
  g_test_add_func ("/deploy-targets/condition-names-resolve", test_condition_names_resolve);
  g_test_add_func ("/deploy-targets/parse-errors", test_parse_errors);
  g_test_add_func ("/deploy-targets/alias", test_alias);
  g_test_add_func ("/deploy-targets/partitions", test_partitions);
  return g_test_run ();
}
