/* Find's matching and the display strings of the sidebar, on a graph built
 * in memory (no display needed). */
#include "widgets/graph-search.h"
#include "widgets/value-format.h"

#include <string.h>

static GraftValue *
add_tensor_value (GraftGraph *graph, const char *name, GraftDType dtype, int rank, const gint64 *dims)
{
  GraftValue *value = graft_graph_ensure_value (graph, name);

  value->dtype = dtype;
  graft_shape_init_fixed (&value->shape, rank, dims);
  return value;
}

/* input → /layer1/conv/Conv → /layer1/Relu → If (then: Identity, else: Neg) */
static GraftGraph *
build_graph (void)
{
  GraftGraph *graph = graft_graph_new ("main");
  const gint64 in_dims[] = { 1, 3, 224, 224 };
  const gint64 mid_dims[] = { 1, 64, 112, 112 };
  GraftValue *input = add_tensor_value (graph, "input", GRAFT_DTYPE_FLOAT32, 4, in_dims);
  GraftValue *conv_out = add_tensor_value (graph, "conv_out", GRAFT_DTYPE_FLOAT32, 4, mid_dims);
  GraftValue *relu_out = add_tensor_value (graph, "relu_out", GRAFT_DTYPE_FLOAT32, 4, mid_dims);
  GraftNode *conv, *relu, *branch, *inner;
  GraftGraph *then_graph = graft_graph_new ("");
  GraftGraph *else_graph = graft_graph_new ("else_body");

  graft_graph_add_input (graph, input);
  conv = graft_graph_add_node (graph, NULL, "Conv", "/layer1/conv/Conv");
  graft_node_add_input (conv, input);
  graft_node_add_output (conv, conv_out);
  relu = graft_graph_add_node (graph, NULL, "Relu", "/layer1/Relu");
  graft_node_add_input (relu, conv_out);
  graft_node_add_output (relu, relu_out);
  branch = graft_graph_add_node (graph, NULL, "If", "branch");
  graft_node_add_input (branch, relu_out);

  inner = graft_graph_add_node (then_graph, NULL, "Identity", "inner_identity");
  graft_node_add_input (inner, graft_graph_resolve_value (then_graph, "relu_out"));
  graft_node_add_output (inner, graft_graph_ensure_value (then_graph, "then_out"));
  inner = graft_graph_add_node (else_graph, NULL, "Neg", "inner_neg");
  graft_node_add_output (inner, graft_graph_ensure_value (else_graph, "else_out"));

  graft_node_add_attribute (branch, graft_attribute_new_graph ("then_branch", then_graph));
  graft_node_adopt_subgraph (branch, then_graph);
  graft_node_add_attribute (branch, graft_attribute_new_graph ("else_branch", else_graph));
  graft_node_adopt_subgraph (branch, else_graph);
  graft_graph_build_groups_from_names (graph);
  return graph;
}

static GraftSearchHit *
hit_at (GPtrArray *hits, guint i)
{
  g_assert_cmpuint (i, <, hits->len);
  return g_ptr_array_index (hits, i);
}

static void
test_search_by_name_and_op (void)
{
  g_autoptr(GraftGraph) graph = build_graph ();
  g_autoptr(GPtrArray) hits = NULL;
  guint total = 0;

  hits = graft_graph_search (graph, NULL, "CONV", 100, &total);
  /* The Conv node (by name and op) and the conv_out value, nothing else. */
  g_assert_cmpuint (total, ==, 2);
  g_assert_cmpstr (hit_at (hits, 0)->node->name, ==, "/layer1/conv/Conv");
  g_assert_cmpint (hit_at (hits, 0)->match, ==, GRAFT_SEARCH_MATCH_NODE_NAME);
  g_assert_cmpstr (hit_at (hits, 0)->title, ==, "/layer1/conv/Conv");
  g_assert_true (g_str_has_prefix (hit_at (hits, 0)->detail, "onnx::Conv · "));
  g_assert_nonnull (strstr (hit_at (hits, 0)->detail, "layer1"));
  g_assert_cmpstr (hit_at (hits, 1)->value->name, ==, "conv_out");
  g_clear_pointer (&hits, g_ptr_array_unref);

  hits = graft_graph_search (graph, NULL, "onnx::relu", 100, &total);
  g_assert_cmpuint (total, ==, 1);
  g_assert_cmpint (hit_at (hits, 0)->match, ==, GRAFT_SEARCH_MATCH_OP_TYPE);
}

static void
test_search_subgraphs (void)
{
  g_autoptr(GraftGraph) graph = build_graph ();
  g_autoptr(GPtrArray) hits = graft_graph_search (graph, NULL, "inner_", 100, NULL);

  g_assert_cmpuint (hits->len, ==, 2);
  g_assert_cmpstr (hit_at (hits, 0)->node->name, ==, "inner_identity");
  g_assert_true (hit_at (hits, 0)->node->graph->parent_node != NULL);
  g_assert_cmpstr (hit_at (hits, 1)->node->name, ==, "inner_neg");
  g_clear_pointer (&hits, g_ptr_array_unref);

  hits = graft_graph_search (graph, NULL, "else_out", 100, NULL);
  g_assert_cmpuint (hits->len, ==, 1);
  g_assert_cmpstr (hit_at (hits, 0)->value->name, ==, "else_out");
}

static void
test_search_by_shape (void)
{
  g_autoptr(GraftGraph) graph = build_graph ();
  g_autoptr(GPtrArray) typed = graft_graph_search (graph, NULL, "1x64x112", 100, NULL);
  g_autoptr(GPtrArray) pasted = graft_graph_search (graph, NULL, "1×64×112×112", 100, NULL);
  g_autoptr(GPtrArray) input = graft_graph_search (graph, NULL, "3x224x224", 100, NULL);

  g_assert_cmpuint (typed->len, ==, 2);
  g_assert_cmpint (hit_at (typed, 0)->match, ==, GRAFT_SEARCH_MATCH_SHAPE);
  g_assert_cmpuint (pasted->len, ==, 2);
  g_assert_cmpuint (input->len, ==, 1);
  g_assert_cmpstr (hit_at (input, 0)->value->name, ==, "input");
  g_assert_cmpstr (hit_at (input, 0)->detail, ==, "float32 · 1×3×224×224");
}

static void
test_search_limits (void)
{
  g_autoptr(GraftGraph) graph = build_graph ();
  g_autoptr(GPtrArray) capped = NULL;
  g_autoptr(GPtrArray) blank = NULL;
  g_autoptr(GPtrArray) none = NULL;
  guint total = 0;

  capped = graft_graph_search (graph, NULL, "_", 1, &total);
  g_assert_cmpuint (capped->len, ==, 1);
  g_assert_cmpuint (total, >, 1);

  blank = graft_graph_search (graph, NULL, "   ", 100, &total);
  g_assert_cmpuint (blank->len, ==, 0);
  g_assert_cmpuint (total, ==, 0);

  none = graft_graph_search (graph, NULL, "softmax", 100, &total);
  g_assert_cmpuint (none->len, ==, 0);
}

static void
test_graph_names (void)
{
  g_autoptr(GraftGraph) graph = build_graph ();
  GraftNode *branch = graft_graph_resolve_value (graph, "relu_out")->consumers->pdata[0];
  g_autoptr(GPtrArray) subgraphs = graft_node_get_subgraphs (branch);
  g_autoptr(GPtrArray) chain = graft_graph_get_ancestry (g_ptr_array_index (subgraphs, 1));
  g_autofree char *main_name = graft_graph_format_name (graph);
  g_autofree char *then_name = graft_graph_format_name (g_ptr_array_index (subgraphs, 0));
  g_autofree char *else_name = graft_graph_format_name (g_ptr_array_index (subgraphs, 1));
  g_autofree char *label = graft_node_format_label (branch);

  g_assert_cmpstr (main_name, ==, "main");
  g_assert_cmpstr (then_name, ==, "then_branch");
  g_assert_cmpstr (else_name, ==, "else_branch (else_body)");
  g_assert_cmpstr (label, ==, "If “branch”");
  g_assert_cmpuint (chain->len, ==, 2);
  g_assert_true (g_ptr_array_index (chain, 0) == graph);
}

static void
test_graph_location (void)
{
  g_autoptr(GraftGraph) graph = build_graph ();
  g_autoptr(GPtrArray) hits = graft_graph_search (graph, NULL, "inner_neg", 100, NULL);
  g_autofree char *location = graft_graph_format_location (hit_at (hits, 0)->node->graph);
  g_autofree char *main_location = graft_graph_format_location (graph);

  g_assert_cmpstr (location, ==, "main › If “branch” › else_branch (else_body)");
  g_assert_cmpstr (main_location, ==, "main");
  /* Nodes outside any group say which graph they are in. */
  g_assert_cmpstr (hit_at (hits, 0)->detail, ==, "onnx::Neg · main › If “branch” › else_branch (else_body)");
}

static void
test_value_types (void)
{
  g_autoptr(GraftGraph) graph = graft_graph_new ("g");
  GraftValue *unknown = graft_graph_ensure_value (graph, "unknown");
  GraftValue *symbolic = graft_graph_ensure_value (graph, "symbolic");
  g_autofree char *unknown_text = NULL;
  g_autofree char *symbolic_text = NULL;

  unknown_text = graft_value_format_type (unknown, NULL);
  g_assert_cmpstr (unknown_text, ==, "Tensor · dtype and shape not recorded");

  symbolic->dtype = GRAFT_DTYPE_INT64;
  graft_shape_init (&symbolic->shape, 2);
  symbolic->shape.dims[0] = graft_dim_symbolic ("batch");
  symbolic->shape.dims[1] = graft_dim_fixed (8);
  symbolic_text = graft_value_format_type (symbolic, NULL);
  g_assert_cmpstr (symbolic_text, ==, "int64 · batch×8");
}

int
main (int argc, char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/gui/search/name-and-op", test_search_by_name_and_op);
  g_test_add_func ("/gui/search/subgraphs", test_search_subgraphs);
  g_test_add_func ("/gui/search/shape", test_search_by_shape);
  g_test_add_func ("/gui/search/limits", test_search_limits);
  g_test_add_func ("/gui/format/graph-names", test_graph_names);
  g_test_add_func ("/gui/format/value-types", test_value_types);
  g_test_add_func ("/gui/format/graph-location", test_graph_location);
  return g_test_run ();
}
