/* Unit tests of the IR: shapes, values, nodes, groups, tensors, attributes. */
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include "ir/model.h"
#include "loader.h"
#include "../test-scratch.h"

static void
test_shape_to_string (void)
{
  GraftShape shape;
  g_autofree char *text = NULL;
  g_autofree char *unknown = NULL;
  GraftShape unknown_rank = GRAFT_SHAPE_UNKNOWN;

  graft_shape_init (&shape, 4);
  shape.dims[0] = graft_dim_symbolic ("batch");
  shape.dims[1] = graft_dim_fixed (3);
  shape.dims[3] = graft_dim_fixed (224);
  text = graft_shape_to_string (&shape);
  g_assert_cmpstr (text, ==, "batch×3×?×224");
  g_assert_false (graft_shape_is_fully_fixed (&shape));
  g_assert_cmpint (graft_shape_get_numel (&shape), ==, -1);
  unknown = graft_shape_to_string (&unknown_rank);
  g_assert_cmpstr (unknown, ==, "?");
  graft_shape_clear (&shape);
}

static void
test_shape_numel_overflow (void)
{
  GraftShape shape;
  gint64 dims[] = { G_MAXINT64 / 2, 3 };

  graft_shape_init_fixed (&shape, 2, dims);
  g_assert_cmpint (graft_shape_get_numel (&shape), ==, -1);
  graft_shape_clear (&shape);
}

static void
test_graph_wiring (void)
{
  g_autoptr(GraftGraph) graph = graft_graph_new ("main");
  GraftValue *x = graft_graph_ensure_value (graph, "x");
  GraftValue *y = graft_graph_ensure_value (graph, "y");
  GraftNode *relu;

  graft_graph_add_input (graph, x);
  relu = graft_graph_add_node (graph, "", "Relu", "/block/Relu");
  graft_node_add_input (relu, x);
  graft_node_add_output (relu, y);
  graft_graph_add_output (graph, y);

  g_assert_cmpstr (relu->op, ==, "onnx::Relu");
  g_assert_true (relu->op == g_intern_string ("onnx::Relu"));
  g_assert_true (y->producer == relu);
  g_assert_cmpuint (x->consumers->len, ==, 1);
  g_assert_true (graft_graph_ensure_value (graph, "x") == x);
  g_assert_cmpstr (graft_graph_new_anonymous_value (graph, "x")->name, ==, "x.1");
}

static void
test_groups_from_onnx_names (void)
{
  g_autoptr(GraftGraph) graph = graft_graph_new ("main");
  GraftGroup *block;

  graft_graph_add_node (graph, NULL, "Conv", "/conv1/Conv");
  graft_graph_add_node (graph, NULL, "Conv", "/layer1/layer1.0/conv1/Conv");
  graft_graph_add_node (graph, NULL, "Relu", "/layer1/layer1.0/relu/Relu");
  graft_graph_add_node (graph, NULL, "Add", "/layer1/layer1.0/Add");
  graft_graph_add_node (graph, NULL, "Gemm", "fc");
  graft_graph_build_groups_from_names (graph);

  g_assert_cmpuint (graph->root_group->total_nodes, ==, 5);
  g_assert_cmpuint (graph->root_group->nodes->len, ==, 1); /* "fc" */
  block = graft_group_find_path (graph->root_group, "layer1.0");
  g_assert_nonnull (block);
  g_assert_cmpstr (block->name, ==, "0");
  g_assert_cmpuint (block->nodes->len, ==, 1); /* Add */
  g_assert_cmpuint (block->total_nodes, ==, 3);
  g_assert_nonnull (graft_group_find_path (graph->root_group, "layer1.0.conv1"));
  g_assert_cmpuint (graft_group_get_depth (graft_group_find_path (graph->root_group, "layer1.0.relu")), ==, 3);
}

static void
test_subgraph_resolution (void)
{
  g_autoptr(GraftGraph) graph = graft_graph_new ("main");
  GraftValue *outer = graft_graph_ensure_value (graph, "outer");
  GraftNode *if_node = graft_graph_add_node (graph, NULL, "If", "if");
  GraftGraph *then_branch = graft_graph_new ("then");
  GraftNode *inner;

  graft_node_add_attribute (if_node, graft_attribute_new_graph ("then_branch", then_branch));
  graft_node_adopt_subgraph (if_node, then_branch);
  inner = graft_graph_add_node (then_branch, NULL, "Neg", "neg");
  graft_node_add_input (inner, graft_graph_resolve_value (then_branch, "outer"));
  g_assert_true (inner->inputs->pdata[0] == outer);
  g_assert_null (graft_graph_lookup_value (then_branch, "outer"));
  g_assert_cmpuint (graft_graph_count_nodes_recursive (graph), ==, 2);
}

static void
test_tensor_stats (void)
{
  gint64 dims[] = { 2, 2 };
  float values[] = { -1.0f, 2.0f, 3.0f, NAN };
  g_autoptr(GraftTensor) tensor = graft_tensor_new ("w", GRAFT_DTYPE_FLOAT32, 2, dims);
  g_autoptr(GBytes) bytes = g_bytes_new (values, sizeof values);
  g_autoptr(GBytes) short_bytes = g_bytes_new (values, 3);
  g_autoptr(GError) error = NULL;
  GraftTensorStats stats;
  g_autofree char *desc = NULL;

  g_assert_false (graft_tensor_set_data (tensor, short_bytes, &error));
  g_assert_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED);
  g_clear_error (&error);
  g_assert_true (graft_tensor_set_data (tensor, bytes, &error));
  g_assert_true (graft_tensor_compute_stats (tensor, &stats, &error));
  g_assert_cmpfloat (stats.min, ==, -1.0);
  g_assert_cmpfloat (stats.max, ==, 3.0);
  g_assert_cmpfloat_with_epsilon (stats.mean, 4.0 / 3.0, 1e-9);
  g_assert_cmpint (stats.nan_count, ==, 1);
  /* Population std of -1, 2, 3 (NaN left out), and no zeros. */
  g_assert_cmpfloat_with_epsilon (stats.std, sqrt (78.0 / 27.0), 1e-12);
  g_assert_cmpint (stats.zero_count, ==, 0);
  {
    g_autofree char *first = graft_tensor_format_element (tensor, 0);
    g_autofree char *past = graft_tensor_format_element (tensor, 4);

    g_assert_cmpstr (first, ==, "-1");
    g_assert_null (past);
  }
  desc = graft_tensor_describe (tensor);
  g_assert_cmpstr (desc, ==, "float32[2,2]");
}

static void
test_tensor_float16 (void)
{
  gint64 dims[] = { 3 };
  guint16 halves[] = { 0x3c00 /* 1 */, 0xc000 /* -2 */, 0x0001 /* 2^-24 */ };
  g_autoptr(GraftTensor) tensor = graft_tensor_new ("h", GRAFT_DTYPE_FLOAT16, 1, dims);
  g_autoptr(GBytes) bytes = g_bytes_new (halves, sizeof halves);

  g_assert_true (graft_tensor_set_data (tensor, bytes, NULL));
  g_assert_cmpfloat (graft_tensor_get_element_as_double (tensor, 0), ==, 1.0);
  g_assert_cmpfloat (graft_tensor_get_element_as_double (tensor, 1), ==, -2.0);
  g_assert_cmpfloat (graft_tensor_get_element_as_double (tensor, 2), ==, ldexp (1.0, -24));
  g_assert_true (isnan (graft_tensor_get_element_as_double (tensor, 3)));
}

static void
test_tensor_external_bounds (void)
{
  g_autofree char *dir = graft_test_scratch_dir ("graft-ir-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "weights.bin", NULL);
  float data[4] = { 1, 2, 3, 4 };
  gint64 dims[] = { 2 };
  g_autoptr(GraftTensor) good = graft_tensor_new ("good", GRAFT_DTYPE_FLOAT32, 1, dims);
  g_autoptr(GraftTensor) past_end = graft_tensor_new ("past_end", GRAFT_DTYPE_FLOAT32, 1, dims);
  g_autoptr(GraftTensor) cut = graft_tensor_new ("cut", GRAFT_DTYPE_FLOAT32, 1, dims);
  g_autoptr(GraftExternalFile) file = NULL;
  g_autoptr(GError) error = NULL;

  g_assert_true (g_file_set_contents (path, (const char *) data, sizeof data, NULL));
  file = graft_external_file_open_inside (dir, "weights.bin", &error);
  g_assert_no_error (error);
  graft_tensor_set_external (good, file, 8, 8);
  g_assert_nonnull (graft_tensor_get_data (good, &error));
  g_assert_no_error (error);
  g_assert_cmpfloat (graft_tensor_get_element_as_double (good, 0), ==, 3.0);

  graft_tensor_set_external (past_end, file, 12, 8);
  g_assert_null (graft_tensor_get_data (past_end, &error));
  g_assert_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_TRUNCATED);
  g_assert_nonnull (strstr (error->message, "past_end"));
  g_clear_error (&error);

  /* Cut after it was opened: the read through the descriptor sees it. */
  g_assert_cmpint (truncate (path, 4), ==, 0);
  graft_tensor_set_external (cut, file, 0, 8);
  g_assert_null (graft_tensor_get_data (cut, &error));
  g_assert_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_TRUNCATED);
  g_assert_nonnull (strstr (error->message, "cut since the model was opened"));
  g_clear_error (&error);

  g_assert_null (graft_external_file_open_inside (dir, "missing.bin", &error));
  g_assert_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_IO);

  g_unlink (path);
  g_rmdir (dir);
}

static void
test_attribute_format (void)
{
  gint64 ints[] = { 1, 2, 3, 4, 5 };
  g_autoptr(GraftAttribute) list = graft_attribute_new_ints ("pads", ints, 5);
  g_autoptr(GraftAttribute) text = graft_attribute_new_string ("mode", "SAME\"UPPER");
  g_autoptr(GraftAttribute) number = graft_attribute_new_float ("alpha", 0.25);
  g_autofree char *a = graft_attribute_format_value (list, 3);
  g_autofree char *b = graft_attribute_format_value (list, 0);
  g_autofree char *c = graft_attribute_format_value (text, 0);
  g_autofree char *d = graft_attribute_format_value (number, 0);

  g_assert_cmpstr (a, ==, "[1, 2, 3, …]");
  g_assert_cmpstr (b, ==, "[1, 2, 3, 4, 5]");
  g_assert_cmpstr (c, ==, "\"SAME\\\"UPPER\"");
  g_assert_cmpstr (d, ==, "0.25");
}

static void
test_model_opsets_and_metadata (void)
{
  g_autoptr(GraftModel) model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  g_autofree char *desc = NULL;
  const char *key, *value;

  graft_model_set_opset (model, "", 17);
  graft_model_set_opset (model, "com.microsoft", 1);
  graft_model_set_producer (model, "pytorch", "1.13.1");
  graft_model_add_metadata (model, "author", "me");
  g_assert_cmpint (graft_model_get_opset (model, "ai.onnx"), ==, 17);
  g_assert_cmpint (graft_model_get_opset (model, "ai.onnx.ml"), ==, -1);
  g_assert_cmpuint (graft_model_get_opset_domains (model)->len, ==, 2);
  g_assert_cmpstr (g_ptr_array_index (graft_model_get_opset_domains (model), 0), ==, "com.microsoft");
  graft_model_get_metadata (model, 0, &key, &value);
  g_assert_cmpstr (key, ==, "author");
  desc = graft_model_describe (model);
  g_assert_cmpstr (desc, ==, "ONNX · opset 17 · pytorch 1.13.1");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/ir/shape/to-string", test_shape_to_string);
  g_test_add_func ("/ir/shape/numel-overflow", test_shape_numel_overflow);
  g_test_add_func ("/ir/graph/wiring", test_graph_wiring);
  g_test_add_func ("/ir/graph/groups-from-onnx-names", test_groups_from_onnx_names);
  g_test_add_func ("/ir/graph/subgraph-resolution", test_subgraph_resolution);
  g_test_add_func ("/ir/tensor/stats", test_tensor_stats);
  g_test_add_func ("/ir/tensor/float16", test_tensor_float16);
  g_test_add_func ("/ir/tensor/external-bounds", test_tensor_external_bounds);
  g_test_add_func ("/ir/attribute/format", test_attribute_format);
  g_test_add_func ("/ir/model/opsets-and-metadata", test_model_opsets_and_metadata);
  return g_test_run ();
}
