/* torchvision resnet18 / mobilenet_v2, a 24-layer nn.TransformerEncoder and
 * transformers' BERT and GPT-2, exported by torch.onnx.export with both the
 * TorchScript-based and the dynamo exporter
 * (tests/fixtures/make-onnx-models.py): the reader and `graft-cli info
 * --json` must agree with onnx.load(), and a dynamo export, whose node names
 * carry no scope, must show the module groups of the TorchScript-based one. */
#include <string.h>
#include <json-glib/json-glib.h>
#include <glib/gstdio.h>
#include <sys/wait.h>

#include "loader.h"
#include "onnx/reader.h"
#include "onnx/writer.h"
#include "fixtures.h"
#include "../test-scratch.h"

static char *models_dir;

static const char *const model_names[] = {
  "resnet18", "mobilenet_v2", "transformer24", "control_flow", "bert", "gpt2",
  "resnet18_dynamo", "mobilenet_v2_dynamo", "transformer24_dynamo", "bert_dynamo", "gpt2_dynamo", NULL
};

/* Models exported both ways: NAME and NAME_dynamo. */
static const char *const dynamo_pairs[] = { "resnet18", "mobilenet_v2", "transformer24", "bert", "gpt2" };

static JsonObject *
load_expected (const char *name, JsonParser **parser_out)
{
  g_autofree char *file = g_strconcat (name, ".json", NULL);
  g_autofree char *path = g_build_filename (models_dir, file, NULL);
  g_autoptr(GError) error = NULL;
  JsonParser *parser = json_parser_new ();

  if (!json_parser_load_from_file (parser, path, &error))
    g_error ("%s: %s", path, error->message);
  *parser_out = parser;
  return json_node_get_object (json_parser_get_root (parser));
}

static void
count_op (GraftNode *node, gpointer user_data)
{
  GHashTable *counts = user_data;

  g_hash_table_replace (counts, (gpointer) node->op,
                        GUINT_TO_POINTER (GPOINTER_TO_UINT (g_hash_table_lookup (counts, node->op)) + 1));
}

/* Compares expected [{"name","dtype","shape"}] with graph values. */
static void
check_values (JsonArray *expected, GPtrArray *values)
{
  guint n = 0;

  for (guint i = 0; i < values->len; i++)
    {
      GraftValue *value = g_ptr_array_index (values, i);
      JsonObject *want;
      JsonArray *shape;

      if (value->initializer != NULL)
        continue;
      g_assert_cmpuint (n, <, json_array_get_length (expected));
      want = json_array_get_object_element (expected, n++);
      g_assert_cmpstr (value->name, ==, json_object_get_string_member (want, "name"));
      g_assert_cmpstr (graft_dtype_to_string (value->dtype), ==, json_object_get_string_member (want, "dtype"));
      shape = json_object_get_array_member (want, "shape");
      g_assert_cmpint (value->shape.rank, ==, json_array_get_length (shape));
      for (int d = 0; d < value->shape.rank; d++)
        {
          JsonNode *dim = json_array_get_element (shape, d);
          if (JSON_NODE_HOLDS_NULL (dim))
            g_assert_cmpint (value->shape.dims[d].kind, ==, GRAFT_DIM_UNKNOWN);
          else if (json_node_get_value_type (dim) == G_TYPE_STRING)
            g_assert_cmpstr (value->shape.dims[d].symbol, ==, json_node_get_string (dim));
          else
            {
              g_assert_cmpint (value->shape.dims[d].kind, ==, GRAFT_DIM_FIXED);
              g_assert_cmpint (value->shape.dims[d].value, ==, json_node_get_int (dim));
            }
        }
    }
  g_assert_cmpuint (n, ==, json_array_get_length (expected));
}

static void
find_gemm (GraftNode *node, gpointer user_data)
{
  if (strcmp (node->op, "onnx::Gemm") == 0)
    *(GraftNode **) user_data = node;
}

/* The Loop body's Gemm reads weights that are initializers of the main graph. */
static void
check_outer_scope (GraftGraph *graph)
{
  GraftNode *gemm = NULL;
  GraftValue *weight;

  graft_graph_foreach_node_recursive (graph, find_gemm, &gemm);
  g_assert_nonnull (gemm);
  g_assert_true (gemm->graph != graph);
  g_assert_nonnull (gemm->graph->parent_node);
  weight = g_ptr_array_index (gemm->inputs, 1);
  g_assert_true (weight->graph == graph);
  g_assert_nonnull (weight->initializer);
}

static void
test_reader (gconstpointer data)
{
  const char *name = data;
  g_autoptr(JsonParser) parser = NULL;
  JsonObject *expected = load_expected (name, &parser);
  g_autofree char *file = g_strconcat (name, ".onnx", NULL);
  g_autofree char *path = g_build_filename (models_dir, file, NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);
  g_autoptr(GHashTable) counts = g_hash_table_new (g_direct_hash, g_direct_equal);
  g_autoptr(GList) ops = NULL;
  JsonObject *expected_ops = json_object_get_object_member (expected, "ops");
  GraftGraph *graph;

  g_assert_no_error (error);
  graph = graft_model_get_graph (model);
  g_assert_cmpuint (graph->nodes->len, ==, json_object_get_int_member (expected, "nodes"));
  g_assert_cmpuint (graft_graph_count_nodes_recursive (graph), ==, json_object_get_int_member (expected, "nodes_recursive"));
  g_assert_cmpuint (graph->initializers->len, ==, json_object_get_int_member (expected, "initializers"));
  g_assert_cmpstr (graft_model_get_producer_name (model), ==, json_object_get_string_member (expected, "producer"));
  g_assert_cmpint (graft_model_get_opset (model, "onnx"), ==,
                   json_object_get_int_member (json_object_get_object_member (expected, "opsets"), "onnx"));
  check_values (json_object_get_array_member (expected, "inputs"), graph->inputs);
  check_values (json_object_get_array_member (expected, "outputs"), graph->outputs);

  graft_graph_foreach_node_recursive (graph, count_op, counts);
  g_assert_cmpuint (g_hash_table_size (counts), ==, json_object_get_size (expected_ops));
  ops = json_object_get_members (expected_ops);
  for (GList *l = ops; l != NULL; l = l->next)
    g_assert_cmpuint (GPOINTER_TO_UINT (g_hash_table_lookup (counts, g_intern_string (l->data))), ==,
                      json_object_get_int_member (expected_ops, l->data));

  if (strcmp (name, "control_flow") == 0)
    check_outer_scope (graph);
  else
    /* torch names nodes by module path: the group tree must not be flat. */
    g_assert_cmpuint (graph->root_group->children->len, >, 0);

  /* Every initializer's data is readable and has the declared size. */
  for (guint i = 0; i < graph->initializers->len; i++)
    {
      GraftValue *value = g_ptr_array_index (graph->initializers, i);
      GBytes *bytes = graft_tensor_get_data (value->initializer, &error);

      g_assert_no_error (error);
      g_assert_cmpuint (g_bytes_get_size (bytes), ==, graft_tensor_get_nbytes (value->initializer));
    }
}

static GraftModel *
load_model (const char *name)
{
  g_autofree char *file = g_strconcat (name, ".onnx", NULL);
  g_autofree char *path = g_build_filename (models_dir, file, NULL);
  g_autoptr(GError) error = NULL;
  GraftModel *model = graft_model_load (path, NULL, NULL, NULL, &error);

  g_assert_no_error (error);
  return model;
}

static int
compare_strings (gconstpointer a, gconstpointer b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

static void
collect_group_paths (GraftGroup *group, GPtrArray *paths)
{
  for (guint i = 0; i < group->children->len; i++)
    {
      GraftGroup *child = g_ptr_array_index (group->children, i);

      g_ptr_array_add (paths, child->path);
      collect_group_paths (child, paths);
    }
}

/* Every group path of the tree, one a line, sorted: equal texts mean the
 * same groups with the same nesting (a path names all its ancestors). */
static char *
group_tree_text (GraftGraph *graph, guint *n_groups)
{
  g_autoptr(GPtrArray) paths = g_ptr_array_new ();
  g_autoptr(GString) text = g_string_new (NULL);

  collect_group_paths (graph->root_group, paths);
  g_ptr_array_sort (paths, compare_strings);
  for (guint i = 0; i < paths->len; i++)
    g_string_append_printf (text, "%s\n", (char *) g_ptr_array_index (paths, i));
  *n_groups = paths->len;
  return g_string_free (g_steal_pointer (&text), FALSE);
}

static guint
count_grouped_nodes (GraftGraph *graph)
{
  return graph->root_group->total_nodes - graph->root_group->nodes->len;
}

/* Names the groups only one side has, before the assertion prints both. */
static void
report_missing_lines (const char *label, const char *text, const char *other)
{
  g_auto(GStrv) lines = g_strsplit (text, "\n", -1);
  g_auto(GStrv) other_lines = g_strsplit (other, "\n", -1);

  for (guint i = 0; lines[i] != NULL; i++)
    if (lines[i][0] != '\0' && !g_strv_contains ((const char *const *) other_lines, lines[i]))
      g_test_message ("only in %s: %s", label, lines[i]);
}

/* The dynamo export's module groups, built from its node metadata, are
 * those its TorchScript-based twin's node names give. */
static void
test_dynamo_groups (gconstpointer data)
{
  const char *name = data;
  g_autofree char *dynamo_name = g_strconcat (name, "_dynamo", NULL);
  g_autoptr(GraftModel) torchscript = load_model (name);
  g_autoptr(GraftModel) dynamo = load_model (dynamo_name);
  GraftGraph *torchscript_graph = graft_model_get_graph (torchscript);
  GraftGraph *dynamo_graph = graft_model_get_graph (dynamo);
  guint n_torchscript, n_dynamo;
  g_autofree char *want = group_tree_text (torchscript_graph, &n_torchscript);
  g_autofree char *got = group_tree_text (dynamo_graph, &n_dynamo);

  g_test_message ("%s: %u groups (%u of %u nodes grouped); %s: %u groups (%u of %u nodes grouped)", name,
                  n_torchscript, count_grouped_nodes (torchscript_graph), torchscript_graph->nodes->len,
                  dynamo_name, n_dynamo, count_grouped_nodes (dynamo_graph), dynamo_graph->nodes->len);
  for (guint i = 0; i < dynamo_graph->nodes->len; i++)
    g_assert_null (strchr (((GraftNode *) g_ptr_array_index (dynamo_graph->nodes, i))->name, '/'));
  g_assert_cmpuint (n_dynamo, >, 0);
  report_missing_lines (name, want, got);
  report_missing_lines (dynamo_name, got, want);
  g_assert_cmpstr (got, ==, want);
}

/* Saving a dynamo export keeps every node's metadata, so the saved file
 * shows the same groups. */
static void
test_dynamo_round_trip (gconstpointer data)
{
  g_autofree char *name = g_strconcat (data, "_dynamo", NULL);
  g_autoptr(GraftModel) model = load_model (name);
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) bytes = graft_onnx_model_to_bytes (model, &error);
  g_autoptr(GraftModel) saved = NULL;
  GraftGraph *graph = graft_model_get_graph (model), *saved_graph;
  guint n_groups, n_saved_groups, n_entries = 0;
  g_autofree char *groups = NULL;
  g_autofree char *saved_groups = NULL;

  g_assert_no_error (error);
  saved = graft_onnx_read_bytes (bytes, name, NULL, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  saved_graph = graft_model_get_graph (saved);
  g_assert_cmpuint (saved_graph->nodes->len, ==, graph->nodes->len);
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      GraftNode *saved_node = g_ptr_array_index (saved_graph->nodes, i);

      g_assert_cmpuint (graft_node_get_n_metadata (saved_node), ==, graft_node_get_n_metadata (node));
      for (guint j = 0; j < graft_node_get_n_metadata (node); j++)
        {
          g_assert_cmpstr (g_ptr_array_index (saved_node->metadata_keys, j), ==, g_ptr_array_index (node->metadata_keys, j));
          g_assert_cmpstr (g_ptr_array_index (saved_node->metadata_values, j), ==,
                           g_ptr_array_index (node->metadata_values, j));
        }
      n_entries += graft_node_get_n_metadata (node);
    }
  groups = group_tree_text (graph, &n_groups);
  saved_groups = group_tree_text (saved_graph, &n_saved_groups);
  g_test_message ("%s: %u metadata entries on %u nodes kept", name, n_entries, graph->nodes->len);
  g_assert_cmpuint (n_entries, >=, graph->nodes->len);
  g_assert_cmpstr (saved_groups, ==, groups);
}

/* Runs build/app/graft-cli with args; returns its exit status. */
static int
run_graft_cli (const char *const *args, char **out, char **err)
{
  g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func (NULL);
  g_autofree char *cli = g_build_filename (g_getenv ("GRAFT_BUILD_DIR"), "app", "graft-cli", NULL);
  g_autoptr(GError) error = NULL;
  int status;

  g_ptr_array_add (argv, cli);
  for (guint i = 0; args[i] != NULL; i++)
    g_ptr_array_add (argv, (gpointer) args[i]);
  g_ptr_array_add (argv, NULL);
  g_assert_true (g_spawn_sync (NULL, (char **) argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL, out, err, &status,
                               &error));
  g_assert_no_error (error);
  return WIFEXITED (status) ? WEXITSTATUS (status) : -1;
}

/* `graft-cli render` draws a dynamo export (its groups collapsed and all
 * expanded) and `graft-cli lint` finds no errors in it. */
static void
test_dynamo_render_lint (gconstpointer data)
{
  const char *name = data;
  g_autofree char *file = g_strconcat (name, "_dynamo.onnx", NULL);
  g_autofree char *path = g_build_filename (models_dir, file, NULL);
  g_autofree char *dir = graft_test_scratch_dir ("graft-dynamo-XXXXXX", NULL);
  g_autofree char *picture = g_build_filename (dir, "graph.svg", NULL);
  /* Expanded, a dynamo transformer is too tall for a readable PNG: SVG. */
  g_autofree char *expanded = g_build_filename (dir, "graph-all.svg", NULL);
  const char *render[] = { "render", path, "-o", picture, NULL };
  const char *render_all[] = { "render", path, "-o", expanded, "--expand-all", NULL };
  const char *lint[] = { "lint", path, "--json", NULL };
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonParser) parser = json_parser_new ();
  GStatBuf st;

  for (guint i = 0; i < 2; i++)
    {
      g_autofree char *out = NULL, *err = NULL;
      const char *out_path = i == 0 ? picture : expanded;

      g_assert_cmpint (run_graft_cli (i == 0 ? render : render_all, &out, &err), ==, 0);
      g_assert_cmpint (g_stat (out_path, &st), ==, 0);
      g_assert_cmpint (st.st_size, >, 1000);
      g_remove (out_path);
    }
  g_rmdir (dir);
  {
    g_autofree char *out = NULL, *err = NULL;
    JsonArray *diagnostics;

    g_assert_cmpint (run_graft_cli (lint, &out, &err), ==, 0);
    g_assert_true (json_parser_load_from_data (parser, out, -1, &error));
    g_assert_no_error (error);
    diagnostics = json_object_get_array_member (json_node_get_object (json_parser_get_root (parser)), "diagnostics");
    g_test_message ("%s_dynamo: %u lint diagnostics, none an error", name, json_array_get_length (diagnostics));
  }
}

static void
test_cli_json (gconstpointer data)
{
  const char *name = data;
  g_autoptr(JsonParser) parser = NULL;
  g_autoptr(JsonParser) output = json_parser_new ();
  JsonObject *expected = load_expected (name, &parser);
  g_autofree char *file = g_strconcat (name, ".onnx", NULL);
  g_autofree char *path = g_build_filename (models_dir, file, NULL);
  const char *args[] = { "info", path, "--json", NULL };
  g_autofree char *out = NULL;
  g_autofree char *err = NULL;
  g_autoptr(GError) error = NULL;
  JsonObject *root, *graph, *ops;
  g_autoptr(GList) members = NULL;
  gint64 sum = 0;

  g_assert_cmpint (run_graft_cli (args, &out, &err), ==, 0);
  g_assert_cmpstr (err, ==, "");
  g_assert_true (json_parser_load_from_data (output, out, -1, &error));
  root = json_node_get_object (json_parser_get_root (output));

  g_assert_cmpstr (json_object_get_string_member (root, "format"), ==, "onnx");
  g_assert_cmpstr (json_object_get_string_member (root, "producer"), ==, "pytorch");
  g_assert_cmpint (json_object_get_int_member (json_object_get_object_member (root, "opsets"), "onnx"), ==,
                   json_object_get_int_member (json_object_get_object_member (expected, "opsets"), "onnx"));
  g_assert_true (json_node_equal (json_object_get_member (root, "inputs"), json_object_get_member (expected, "inputs")));
  g_assert_true (json_node_equal (json_object_get_member (root, "outputs"), json_object_get_member (expected, "outputs")));
  g_assert_cmpuint (json_array_get_length (json_object_get_array_member (root, "graphs")), ==, 1);
  graph = json_array_get_object_element (json_object_get_array_member (root, "graphs"), 0);
  g_assert_cmpint (json_object_get_int_member (graph, "nodes"), ==, json_object_get_int_member (expected, "nodes"));
  g_assert_cmpint (json_object_get_int_member (graph, "initializer_elements"), ==,
                   json_object_get_int_member (expected, "initializer_elements"));
  ops = json_object_get_object_member (graph, "ops");
  g_assert_true (json_node_equal (json_object_get_member (graph, "ops"), json_object_get_member (expected, "ops")));
  members = json_object_get_members (ops);
  for (GList *l = members; l != NULL; l = l->next)
    sum += json_object_get_int_member (ops, l->data);
  g_assert_cmpint (sum, ==, json_object_get_int_member (expected, "nodes_recursive"));
}

static gint64
peak_rss_bytes (void)
{
  g_autofree char *status = NULL;
  const char *line;

  if (!g_file_get_contents ("/proc/self/status", &status, NULL, NULL))
    return -1;
  line = strstr (status, "VmHWM:");
  return line ? g_ascii_strtoll (line + 6, NULL, 10) * 1024 : -1;
}

/* The brief's memory budget: loading a ~45 MB model peaks under twice its
 * size, even after every weight has been read once. Runs in a fresh child
 * so that earlier tests do not count. */
static void
test_peak_memory (void)
{
  if (g_test_subprocess ())
    {
      g_autofree char *path = g_build_filename (models_dir, "resnet18.onnx", NULL);
      g_autoptr(GError) error = NULL;
      g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);
      GraftGraph *graph;
      gint64 size, peak;
      double checksum = 0;

      g_assert_no_error (error);
      graph = graft_model_get_graph (model);
      for (guint i = 0; i < graph->initializers->len; i++)
        {
          GraftTensor *tensor = ((GraftValue *) g_ptr_array_index (graph->initializers, i))->initializer;
          GBytes *bytes = graft_tensor_get_data (tensor, &error);
          const guint8 *p = g_bytes_get_data (bytes, NULL);

          for (gsize k = 0; k < g_bytes_get_size (bytes); k += 4096)
            checksum += p[k];
        }
      {
        GStatBuf st;
        g_assert_cmpint (g_stat (path, &st), ==, 0);
        size = st.st_size;
      }
      peak = peak_rss_bytes ();
      g_printerr ("resnet18.onnx: %" G_GINT64_FORMAT " bytes, peak RSS %" G_GINT64_FORMAT " bytes (%.2fx), checksum %g\n",
                  size, peak, (double) peak / size, checksum);
      g_assert_cmpint (peak, >, 0);
      g_assert_cmpint (peak, <, 2 * size);
      return;
    }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("*peak RSS*");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  models_dir = graft_test_generate_fixtures ("tests/fixtures/make-onnx-models.py", "tests/fixtures-generated/models",
                                             model_names);

  for (gsize i = 0; model_names[i] != NULL; i++)
    {
      g_autofree char *reader_path = g_strconcat ("/onnx/torch-exports/reader/", model_names[i], NULL);
      g_autofree char *cli_path = g_strconcat ("/onnx/torch-exports/cli-info-json/", model_names[i], NULL);

      g_test_add_data_func (reader_path, model_names[i], test_reader);
      g_test_add_data_func (cli_path, model_names[i], test_cli_json);
    }
  for (gsize i = 0; i < G_N_ELEMENTS (dynamo_pairs); i++)
    {
      g_autofree char *path = g_strconcat ("/onnx/torch-exports/dynamo-groups/", dynamo_pairs[i], NULL);
      g_autofree char *render_path = g_strconcat ("/onnx/torch-exports/dynamo-render-lint/", dynamo_pairs[i], NULL);
      g_autofree char *round_trip_path = g_strconcat ("/onnx/torch-exports/dynamo-round-trip/", dynamo_pairs[i], NULL);

      g_test_add_data_func (path, dynamo_pairs[i], test_dynamo_groups);
      g_test_add_data_func (render_path, dynamo_pairs[i], test_dynamo_render_lint);
      g_test_add_data_func (round_trip_path, dynamo_pairs[i], test_dynamo_round_trip);
    }
  g_test_add_func ("/onnx/torch-exports/peak-memory", test_peak_memory);
  return g_test_run ();
}
