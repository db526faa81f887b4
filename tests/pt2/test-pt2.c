/* torch.export programs (.pt2) made by tests/fixtures/make-pt2-fixtures.py
 * with the test venv's torch: for each, Graft's graph must hold the op
 * histogram of ep.graph, put every node in the group of its innermost
 * nn_module_stack module, keep each node's stack_trace, and know
 * ep.range_constraints; graft-cli info --json shows ranged dims. */
#include <math.h>
#include <string.h>
#include <json-glib/json-glib.h>
#include "loader.h"
#include "edit/edit.h"
#include "lint/diagnostics.h"
#include "runtime/npy.h"
#include "runtime/runtime.h"
#include "pt2/exported-program.h"
#include "../onnx/fixtures.h"
#include "pt2-test-common.h"

static char *fixture_dir;

static const char *
fixtures (void)
{
  if (fixture_dir == NULL)
    fixture_dir = graft_test_generate_fixtures ("tests/fixtures/make-pt2-fixtures.py", "tests/fixtures-generated/pt2", NULL);
  return fixture_dir;
}

static const char *const programs[] = {
  "cnn_static", "cnn_dynamic", "encoder_dynamic", "data_dependent", "buffer_mutation", "whisper_tiny",
};

static JsonObject *
load_expect (const char *name, JsonParser **parser)
{
  g_autofree char *path = g_strdup_printf ("%s/%s.expect.json", fixtures (), name);
  g_autoptr(GError) error = NULL;
  *parser = json_parser_new ();
  g_assert_true (json_parser_load_from_file (*parser, path, &error));
  g_assert_no_error (error);
  return json_node_get_object (json_parser_get_root (*parser));
}

static GraftModel *
load_program (const char *file)
{
  g_autofree char *path = g_strdup_printf ("%s/%s", fixtures (), file);
  g_autoptr(GError) error = NULL;
  GraftModel *model = graft_model_load (path, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpint (graft_model_get_format (model), ==, GRAFT_MODEL_FORMAT_EXPORTED_PROGRAM);
  return model;
}

/* The nodes of ep.graph: Graft's prim::ListConstruct nodes carry list
 * arguments and have no FX node of their own. */
static GHashTable *
histogram (GraftGraph *graph)
{
  GHashTable *counts = g_hash_table_new (g_str_hash, g_str_equal);
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      if (node->op == g_intern_static_string ("prim::ListConstruct"))
        continue;
      guint n = GPOINTER_TO_UINT (g_hash_table_lookup (counts, node->op));
      g_hash_table_insert (counts, (gpointer) node->op, GUINT_TO_POINTER (n + 1));
    }
  return counts;
}

static void
assert_histogram (GraftGraph *graph, JsonObject *expected)
{
  g_autoptr(GHashTable) got = histogram (graph);
  g_autoptr(GList) ops = json_object_get_members (expected);
  for (GList *l = ops; l; l = l->next)
    {
      guint want = (guint) json_object_get_int_member (expected, l->data);
      guint have = GPOINTER_TO_UINT (g_hash_table_lookup (got, g_intern_string (l->data)));
      if (want != have)
        g_error ("%s: ep.graph has %u, Graft %u", (const char *) l->data, want, have);
    }
  g_assert_cmpuint (g_hash_table_size (got), ==, json_object_get_size (expected));
}

static void
test_program (gconstpointer data)
{
  const char *name = data;
  g_autoptr(JsonParser) parser = NULL;
  JsonObject *expect = load_expect (name, &parser);
  g_autofree char *file = g_strdup_printf ("%s.pt2", name);
  g_autoptr(GraftModel) model = load_program (file);
  GraftGraph *graph = graft_model_get_graph (model);

  assert_histogram (graph, json_object_get_object_member (expect, "histogram"));

  /* groups: the innermost nn_module_stack path of every node */
  JsonObject *groups = json_object_get_object_member (expect, "groups");
  guint checked = 0;
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      if (!json_object_has_member (groups, node->name))
        continue;
      const char *want = json_object_get_string_member (groups, node->name);
      if (g_strcmp0 (node->group->path, want) != 0)
        g_error ("node %s: group %s, nn_module_stack says %s", node->name, node->group->path, want);
      /* the Python line that made it */
      const char *trace = graft_node_get_metadata (node, GRAFT_EXPORTED_STACK_TRACE_KEY);
      g_assert_nonnull (trace);
      g_assert_nonnull (strstr (trace, "line "));
      g_assert_nonnull (node->source_range);
      checked++;
    }
  g_assert_cmpuint (checked, ==, json_object_get_size (groups));

  /* range_constraints */
  JsonObject *ranges = json_object_get_object_member (expect, "ranges");
  g_autoptr(GPtrArray) symbols = graft_model_list_dim_ranges (model);
  g_assert_cmpuint (symbols->len, ==, json_object_get_size (ranges));
  g_autoptr(GList) range_names = json_object_get_members (ranges);
  for (GList *l = range_names; l; l = l->next)
    {
      JsonArray *range = json_object_get_array_member (ranges, l->data);
      gint64 min, max;
      g_assert_true (graft_model_get_dim_range (model, l->data, &min, &max));
      g_assert_cmpint (min, ==, json_array_get_int_element (range, 0));
      if (json_node_is_null (json_array_get_element (range, 1)))
        g_assert_cmpint (max, <, 0);
      else
        g_assert_cmpint (max, ==, json_array_get_int_element (range, 1));
    }

  /* user inputs with their symbolic dims */
  JsonArray *shapes = json_object_get_array_member (expect, "input_shapes");
  g_assert_cmpuint (graph->inputs->len, ==, json_array_get_length (shapes));
  for (guint i = 0; i < graph->inputs->len; i++)
    {
      GraftValue *input = g_ptr_array_index (graph->inputs, i);
      JsonArray *dims = json_array_get_array_element (shapes, i);
      g_assert_cmpint (input->shape.rank, ==, json_array_get_length (dims));
      for (guint d = 0; d < json_array_get_length (dims); d++)
        {
          JsonNode *dim = json_array_get_element (dims, d);
          if (json_node_get_value_type (dim) == G_TYPE_STRING)
            g_assert_cmpstr (input->shape.dims[d].symbol, ==, json_node_get_string (dim));
          else
            g_assert_cmpint (input->shape.dims[d].value, ==, json_node_get_int (dim));
        }
    }

  /* buffers_to_mutate */
  JsonArray *mutated = json_object_get_array_member (expect, "mutated_buffers");
  guint found = 0;
  for (guint i = 0; i < graft_model_get_n_metadata (model); i++)
    {
      const char *key, *value;
      graft_model_get_metadata (model, i, &key, &value);
      if (strcmp (key, "mutated buffer") != 0)
        continue;
      g_assert_true (g_str_has_prefix (value, json_array_get_string_element (mutated, found)));
      found++;
    }
  g_assert_cmpuint (found, ==, json_array_get_length (mutated));
  g_test_message ("%s: %u nodes, %u groups checked, %u ranges", name, graph->nodes->len, checked, symbols->len);
}

/* The flat layout of torch ≤ 2.7 gives the same graph and weights. */
static void
test_flat_layout (void)
{
  g_autoptr(GraftModel) flat = load_program ("flat_cnn_static.pt2");
  g_autoptr(GraftModel) archive = load_program ("cnn_static.pt2");
  g_autoptr(JsonParser) parser = NULL;
  JsonObject *expect = load_expect ("cnn_static", &parser);
  assert_histogram (graft_model_get_graph (flat), json_object_get_object_member (expect, "histogram"));
  GPtrArray *a = graft_model_get_tensors (flat), *b = graft_model_get_tensors (archive);
  g_assert_cmpuint (a->len, ==, b->len);
  for (guint i = 0; i < a->len; i++)
    {
      GraftTensor *x = g_ptr_array_index (a, i), *y = g_ptr_array_index (b, i);
      g_autoptr(GError) error = NULL;
      g_assert_cmpstr (x->name, ==, y->name);
      GBytes *xd = graft_tensor_get_data (x, &error);
      g_assert_no_error (error);
      GBytes *yd = graft_tensor_get_data (y, &error);
      g_assert_no_error (error);
      g_assert_true (g_bytes_equal (xd, yd));
    }
}

/* aten::flatten keeps its "using_ints" overload; conv2d.default needs none. */
static void
test_overload (void)
{
  g_autoptr(GraftModel) model = load_program ("cnn_static.pt2");
  GraftGraph *graph = graft_model_get_graph (model);
  GraftNode *flatten = NULL, *conv = NULL;
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      if (strcmp (node->name, "flatten") == 0)
        flatten = node;
      if (strcmp (node->name, "conv2d") == 0)
        conv = node;
    }
  g_assert_nonnull (flatten);
  g_assert_cmpstr (flatten->op, ==, "aten::flatten");
  g_autofree char *overload = graft_attribute_dup_string (graft_node_get_attribute (flatten, "overload"));
  g_assert_cmpstr (overload, ==, "using_ints");
  g_assert_nonnull (conv);
  g_assert_null (graft_node_get_attribute (conv, "overload"));
}

/* Arguments stay positional for the kernels ("arg3", inputs in order)
 * and carry their schema names for the labels and the sidebar. */
static void
test_argument_names (void)
{
  g_autoptr(GraftModel) model = load_program ("cnn_dynamic.pt2");
  GraftGraph *graph = graft_model_get_graph (model);
  GraftNode *conv = NULL;
  for (guint i = 0; i < graph->nodes->len && conv == NULL; i++)
    if (strcmp (((GraftNode *) g_ptr_array_index (graph->nodes, i))->name, "conv2d") == 0)
      conv = g_ptr_array_index (graph->nodes, i);
  g_assert_nonnull (conv);
  g_assert_cmpuint (conv->inputs->len, ==, 3);
  g_assert_cmpstr (graft_node_get_input_argument_name (conv, 0), ==, "input");
  g_assert_cmpstr (graft_node_get_input_argument_name (conv, 1), ==, "weight");
  g_assert_cmpstr (graft_node_get_input_argument_name (conv, 2), ==, "bias");
  g_assert_null (graft_node_get_input_argument_name (conv, 3));
  g_assert_nonnull (graft_node_get_attribute (conv, "arg3"));
  g_assert_cmpstr (graft_node_get_attribute_argument_name (conv, "arg3"), ==, "stride");
  g_assert_cmpstr (graft_node_get_attribute_argument_name (conv, "arg4"), ==, "padding");
  g_assert_null (graft_node_get_attribute_argument_name (conv, "overload"));

  /* The window's subtitle: the schema and torch versions, not an opset. */
  g_autofree char *description = graft_model_describe (model);
  g_assert_true (g_str_has_prefix (description, "torch.export program · schema 8."));
  g_assert_nonnull (strstr (description, " · torch 2."));
  g_assert_null (strstr (description, "opset"));
}

static void
test_cli_info_ranges (void)
{
  g_autofree char *path = g_strdup_printf ("%s/cnn_dynamic.pt2", fixtures ());
  g_autoptr(JsonParser) parser = graft_test_cli_info_json (path);
  JsonObject *root = json_node_get_object (json_parser_get_root (parser));
  g_assert_cmpstr (json_object_get_string_member (root, "format"), ==, "exported_program");
  JsonObject *input = json_array_get_object_element (json_object_get_array_member (root, "inputs"), 0);
  JsonArray *shape = json_object_get_array_member (input, "shape");
  JsonObject *batch = json_array_get_object_element (shape, 0);
  g_assert_cmpint (json_object_get_int_member (batch, "min"), ==, 2);
  g_assert_cmpint (json_object_get_int_member (batch, "max"), ==, 16);
  g_assert_cmpint (json_array_get_int_element (shape, 1), ==, 3);
}

static guint
count_rule (GPtrArray *diagnostics, const char *rule, const char *needle)
{
  guint n = 0;
  for (guint i = 0; i < diagnostics->len; i++)
    {
      GraftDiagnostic *d = g_ptr_array_index (diagnostics, i);
      if (strcmp (d->rule, rule) == 0 && (needle == NULL || strstr (d->message, needle)))
        n++;
    }
  return n;
}

/* Graft's run of a program on its example inputs against
 * ep.module()(*inputs): max |Graft − torch| ≤ 1e-4·max|torch| per output;
 * after `runs` runs of one runtime, against the outputs of that many calls
 * of one ep.module() (NAME.runN.outputK.npy), whose buffers keep their
 * updates between calls. */
static void
run_model (GraftModel *model, const char *name, guint runs);

static void
run_program (const char *file, const char *name, guint runs)
{
  g_autoptr(GraftModel) model = load_program (file);
  run_model (model, name, runs);
}

static void
run_model (GraftModel *model, const char *name, guint runs)
{
  g_autoptr(GError) error = NULL;
  GraftRuntime *rt = graft_runtime_new (model, &error);
  g_assert_no_error (error);
  GraftGraph *graph = graft_model_get_graph (model);
  g_autoptr(GHashTable) inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                        (GDestroyNotify) graft_rt_tensor_unref);
  for (guint i = 0; i < graph->inputs->len; i++)
    {
      GraftValue *input = g_ptr_array_index (graph->inputs, i);
      g_autofree char *path = g_strdup_printf ("%s/%s.input%u.npy", fixtures (), name, i);
      GraftRtTensor *t = graft_npy_read (path, &error);
      g_assert_no_error (error);
      g_hash_table_insert (inputs, input->name, t);
    }
  g_autoptr(GPtrArray) outputs = NULL;
  for (guint r = 0; r < runs; r++)
    {
      g_clear_pointer (&outputs, g_ptr_array_unref);
      outputs = graft_runtime_run (rt, inputs, NULL, NULL, NULL, &error);
      g_assert_no_error (error);
    }
  g_assert_cmpuint (outputs->len, ==, graph->outputs->len);
  g_autofree char *run = runs > 1 ? g_strdup_printf (".run%u", runs) : g_strdup ("");
  for (guint i = 0; i < outputs->len; i++)
    {
      g_autofree char *path = g_strdup_printf ("%s/%s%s.output%u.npy", fixtures (), name, run, i);
      g_autoptr(GraftRtTensor) want = graft_npy_read (path, &error);
      g_assert_no_error (error);
      g_autofree char *label = g_strdup_printf ("%s output %u", name, i);
      graft_test_assert_matches_torch (g_ptr_array_index (outputs, i), want, label);
    }
  graft_runtime_free (rt);
}

static void
test_run (gconstpointer data)
{
  g_autofree char *file = g_strdup_printf ("%s.pt2", (const char *) data);
  run_program (file, data, 1);
}

/* Buffers the program mutates (a running mean and a step counter) are
 * written back after each run: the third run of one runtime gives what the
 * third call of ep.module() gives, and a new runtime starts again from the
 * saved buffers. */
static void
test_run_mutated_buffers (void)
{
  run_program ("buffer_mutation.pt2", "buffer_mutation", 3);
  run_program ("buffer_mutation.pt2", "buffer_mutation", 1);

  /* a renamed buffer is still the one its update goes to */
  g_autoptr(GraftModel) model = load_program ("buffer_mutation.pt2");
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftEdit) rename = graft_edit_new_operation ("rename-value",
                                                          g_variant_new_parsed ("{'value': <'b_mean'>, 'to': <'b_running'>}"),
                                                          &error);
  g_assert_no_error (error);
  g_assert_true (graft_edit_apply (rename, model, &error));
  g_assert_no_error (error);
  g_autofree char *written_back = graft_graph_describe_written_back (graft_model_get_graph (model));
  g_assert_cmpstr (written_back, ==, "b_running, b_steps");
  run_model (model, "buffer_mutation", 3);
}

/* The flat layout runs as the archive does (weights from the nested
 * torch.save state dict). */
static void
test_run_flat (void)
{
  run_program ("flat_cnn_static.pt2", "cnn_static", 1);
}

/* A size outside a dim's range is refused with the range, as PyTorch does. */
static void
test_run_outside_range (void)
{
  g_autoptr(GraftModel) model = load_program ("cnn_dynamic.pt2");
  g_autoptr(GError) error = NULL;
  GraftRuntime *rt = graft_runtime_new (model, &error);
  g_assert_no_error (error);
  GraftValue *x = g_ptr_array_index (graft_model_get_graph (model)->inputs, 0);
  const gint64 sizes[] = { 1, 17 };
  for (guint i = 0; i < G_N_ELEMENTS (sizes); i++)
    {
      gint64 dims[4] = { sizes[i], 3, 32, 32 };
      g_autoptr(GraftRtTensor) t = graft_rt_tensor_new (GRAFT_DTYPE_FLOAT32, 4, dims, &error);
      g_assert_no_error (error);
      g_autoptr(GHashTable) inputs = g_hash_table_new (g_str_hash, g_str_equal);
      g_hash_table_insert (inputs, x->name, t);
      g_autoptr(GPtrArray) outputs = graft_runtime_run (rt, inputs, NULL, NULL, NULL, &error);
      g_assert_null (outputs);
      g_assert_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INPUT);
      g_test_message ("%s", error->message);
      g_assert_nonnull (strstr (error->message, "outside its range [2, 16]"));
      g_clear_error (&error);
    }
  graft_runtime_free (rt);
}

/* A specialized batch names the Dim that keeps it dynamic; a declared one
 * is not reported; assertions and data-dependent sizes are listed. */
static void
test_lint (void)
{
  g_autoptr(GraftModel) fixed = load_program ("cnn_static.pt2");
  g_autoptr(GPtrArray) fixed_list = graft_lint_model (fixed, NULL);
  g_assert_cmpuint (count_rule (fixed_list, "static-input-dim",
                                "dynamic_shapes={\"x\": {0: Dim(\"batch\", min=2, max=…)}}"), ==, 1);
  g_autoptr(GraftModel) dynamic = load_program ("cnn_dynamic.pt2");
  g_autoptr(GPtrArray) dynamic_list = graft_lint_model (dynamic, NULL);
  g_assert_cmpuint (count_rule (dynamic_list, "static-input-dim", NULL), ==, 0);
  g_autoptr(GraftModel) data_dependent = load_program ("data_dependent.pt2");
  g_autoptr(GPtrArray) list = graft_lint_model (data_dependent, NULL);
  g_assert_cmpuint (count_rule (list, "runtime-assertion", NULL), ==, 4);
  g_assert_cmpuint (count_rule (list, "runtime-assertion", "checks u0 <= 64"), ==, 1);
  g_assert_cmpuint (count_rule (list, "data-dependent-shape", "u1 (∈ [0, 12])"), ==, 1);
  g_assert_cmpuint (count_rule (list, "data-dependent-shape", NULL), ==, 2);
}

int
main (int argc, char *argv[])
{
  g_test_init (&argc, &argv, NULL);
  for (guint i = 0; i < G_N_ELEMENTS (programs); i++)
    {
      g_autofree char *path = g_strdup_printf ("/pt2/program/%s", programs[i]);
      g_test_add_data_func (path, programs[i], test_program);
    }
  g_test_add_func ("/pt2/flat-layout", test_flat_layout);
  g_test_add_func ("/pt2/overload", test_overload);
  g_test_add_func ("/pt2/argument-names", test_argument_names);
  g_test_add_func ("/pt2/cli-info-ranges", test_cli_info_ranges);
  g_test_add_func ("/pt2/lint", test_lint);
  for (guint i = 0; i < G_N_ELEMENTS (programs); i++)
    {
      g_autofree char *path = g_strdup_printf ("/pt2/run/%s", programs[i]);
      g_test_add_data_func (path, programs[i], test_run);
    }
  g_test_add_func ("/pt2/run/flat-layout", test_run_flat);
  g_test_add_func ("/pt2/run/mutated-buffers", test_run_mutated_buffers);
  g_test_add_func ("/pt2/run/outside-range", test_run_outside_range);
  return g_test_run ();
}
