/* TorchScript archives made by torch.jit.trace / torch.jit.script (Debian
 * python3-torch 1.13): Graft's graph must hold exactly the aten:: nodes of
 * torch.jit.load(f).inlined_graph (blocks included), with the forward
 * inputs, the parameters and the module groups. Also the other PyTorch
 * file kinds, which must be recognised with a precise message, and
 * graft-cli info --json on a TorchScript file. */
#include <string.h>
#include <json-glib/json-glib.h>
#include "loader.h"
#include "../onnx/fixtures.h"
#include "../test-python.h"

static char *fixture_dir;

static const char *
fixtures (void)
{
  if (fixture_dir == NULL)
    fixture_dir = graft_test_generate_fixtures_with (GRAFT_TEST_LEGACY_PYTHON, "tests/fixtures/make-torchscript-fixtures.py",
                                                "tests/fixtures-generated/torchscript", NULL);
  return fixture_dir;
}

static void
count_aten (GraftNode *node, gpointer data)
{
  GHashTable *histogram = data;
  if (!g_str_has_prefix (node->op, "aten::"))
    return;
  guint n = GPOINTER_TO_UINT (g_hash_table_lookup (histogram, node->op));
  g_hash_table_insert (histogram, (gpointer) node->op, GUINT_TO_POINTER (n + 1));
}

static JsonObject *
load_json (const char *path, JsonParser **parser)
{
  g_autoptr(GError) error = NULL;
  *parser = json_parser_new ();
  g_assert_true (json_parser_load_from_file (*parser, path, &error));
  g_assert_no_error (error);
  return json_node_get_object (json_parser_get_root (*parser));
}

/* "x.1" → "x": PyTorch's debug names carry a uniquing suffix */
static char *
base_name (const char *name)
{
  const char *dot = strrchr (name, '.');
  if (dot && dot[1] && strspn (dot + 1, "0123456789") == strlen (dot + 1))
    return g_strndup (name, (gsize) (dot - name));
  return g_strdup (name);
}

/* A module called more than once has a group per call: "relu", "relu_1"
 * (the group of the Nth call nests its submodules' groups). */
static char *
group_module_path (GraftGroup *group, JsonObject *groups)
{
  g_auto(GStrv) parts = g_strsplit (group->path, ".", -1);
  g_autofree char *resolved = NULL;

  for (guint k = 0; parts[k] != NULL; k++)
    {
      g_autofree char *exact = resolved ? g_strconcat (resolved, ".", parts[k], NULL) : g_strdup (parts[k]);
      const char *underscore = strrchr (parts[k], '_');
      g_autofree char *base = NULL;

      if (json_object_has_member (groups, exact))
        {
          g_free (resolved);
          resolved = g_steal_pointer (&exact);
          continue;
        }
      if (underscore == NULL || underscore[1] == '\0' || strspn (underscore + 1, "0123456789") != strlen (underscore + 1))
        return NULL;
      base = g_strndup (parts[k], underscore - parts[k]);
      g_free (exact);
      exact = resolved ? g_strconcat (resolved, ".", base, NULL) : g_strdup (base);
      if (!json_object_has_member (groups, exact))
        return NULL;
      g_free (resolved);
      resolved = g_steal_pointer (&exact);
    }
  return g_steal_pointer (&resolved);
}

static void
check_groups (GraftGroup *group, JsonObject *groups, guint *n_checked)
{
  for (guint k = 0; k < group->children->len; k++)
    {
      GraftGroup *child = g_ptr_array_index (group->children, k);
      g_autofree char *module_path = group_module_path (child, groups);
      if (module_path == NULL)
        g_error ("group %s is not a module path of the model", child->path);
      const char *original = json_object_get_string_member (groups, module_path);
      g_assert_nonnull (child->class_name);
      const char *last = strrchr (child->class_name, '.');
      g_assert_cmpstr (last ? last + 1 : child->class_name, ==, original);
      (*n_checked)++;
      check_groups (child, groups, n_checked);
    }
}

static void
test_fixture (gconstpointer data)
{
  const char *name = data;
  g_autofree char *pt = g_strdup_printf ("%s/%s.pt", fixtures (), name);
  g_autofree char *js = g_strdup_printf ("%s/%s.hist.json", fixtures (), name);
  g_autoptr(JsonParser) parser = NULL;
  JsonObject *expected = load_json (js, &parser);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (pt, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpint (graft_model_get_format (model), ==, GRAFT_MODEL_FORMAT_TORCHSCRIPT);
  g_assert_cmpint (graft_model_get_opset (model, "torchscript"), >=, 1);
  GraftGraph *graph = graft_model_get_graph (model);

  /* aten:: histogram, blocks included: equal to PyTorch's */
  g_autoptr(GHashTable) got = g_hash_table_new (g_str_hash, g_str_equal);
  graft_graph_foreach_node_recursive (graph, count_aten, got);
  JsonObject *hist = json_object_get_object_member (expected, "histogram");
  g_autoptr(GString) diff = g_string_new (NULL);
  g_autoptr(GList) kinds = json_object_get_members (hist);
  for (GList *l = kinds; l; l = l->next)
    {
      guint want = (guint) json_object_get_int_member (hist, l->data);
      guint have = GPOINTER_TO_UINT (g_hash_table_lookup (got, g_intern_string (l->data)));
      if (want != have)
        g_string_append_printf (diff, " %s: torch %u, graft %u;", (char *) l->data, want, have);
    }
  GHashTableIter it;
  gpointer op, count;
  g_hash_table_iter_init (&it, got);
  while (g_hash_table_iter_next (&it, &op, &count))
    if (!json_object_has_member (hist, op))
      g_string_append_printf (diff, " %s: torch 0, graft %u;", (char *) op, GPOINTER_TO_UINT (count));
  if (diff->len)
    g_error ("%s: aten histogram differs:%s", name, diff->str);
  g_test_message ("%s: %" G_GINT64_FORMAT " aten nodes match", name, json_object_get_int_member (expected, "n_aten"));

  /* forward inputs */
  JsonArray *inputs = json_object_get_array_member (expected, "inputs");
  g_assert_cmpuint (graph->inputs->len, ==, json_array_get_length (inputs));
  for (guint k = 0; k < graph->inputs->len; k++)
    {
      JsonObject *in = json_array_get_object_element (inputs, k);
      g_autofree char *want = base_name (json_object_get_string_member (in, "name"));
      GraftValue *value = g_ptr_array_index (graph->inputs, k);
      g_assert_cmpstr (value->name, ==, want);
      const char *type = json_object_get_string_member (in, "type");
      if (strcmp (type, "Tensor") == 0)
        g_assert_cmpint (value->kind, ==, GRAFT_VALUE_TENSOR);
      else
        g_assert_cmpstr (value->type_string, !=, NULL);
    }
  g_assert_cmpuint (graph->outputs->len, >=, 1);

  /* parameters and buffers: named by module path, with shape and dtype */
  JsonObject *params = json_object_get_object_member (expected, "parameters");
  GPtrArray *tensors = graft_model_get_tensors (model);
  g_autoptr(GHashTable) by_name = g_hash_table_new (g_str_hash, g_str_equal);
  for (guint k = 0; k < tensors->len; k++)
    {
      GraftTensor *t = g_ptr_array_index (tensors, k);
      g_hash_table_insert (by_name, t->name, t);
    }
  g_autoptr(GList) pnames = json_object_get_members (params);
  for (GList *l = pnames; l; l = l->next)
    {
      JsonObject *p = json_object_get_object_member (params, l->data);
      GraftTensor *t = g_hash_table_lookup (by_name, l->data);
      if (t == NULL)
        g_error ("%s: parameter %s missing", name, (char *) l->data);
      JsonArray *shape = json_object_get_array_member (p, "shape");
      g_assert_cmpint (t->rank, ==, (int) json_array_get_length (shape));
      for (int d = 0; d < t->rank; d++)
        g_assert_cmpint (t->dims[d], ==, json_array_get_int_element (shape, (guint) d));
      const char *dtype = json_object_get_string_member (p, "dtype");
      g_assert_cmpstr (graft_dtype_to_string (t->dtype), ==, dtype);
      g_assert_nonnull (t->data);
      g_assert_cmpuint (g_bytes_get_size (t->data), ==, graft_tensor_get_nbytes (t));
      /* the values, read through the slice of the mapped file */
      JsonArray *first = json_object_get_array_member (p, "first");
      for (guint e = 0; e < json_array_get_length (first); e++)
        g_assert_cmpfloat_with_epsilon (graft_tensor_get_element_as_double (t, e),
                                        json_array_get_double_element (first, e), 1e-6);
      if (graft_tensor_get_numel (t) > 0)
        g_assert_cmpfloat_with_epsilon (graft_tensor_get_element_as_double (t, graft_tensor_get_numel (t) - 1),
                                        json_object_get_double_member (p, "last"), 1e-6);
    }

  /* groups: module paths with their class names */
  guint n_groups = 0;
  check_groups (graph->root_group, json_object_get_object_member (expected, "groups"), &n_groups);
  g_test_message ("%s: %u groups checked", name, n_groups);
}

static void
test_resnet_groups (void)
{
  g_autofree char *pt = g_strdup_printf ("%s/resnet18_scripted.pt", fixtures ());
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (pt, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  GraftGraph *graph = graft_model_get_graph (model);
  GraftGroup *conv = graft_group_find_path (graph->root_group, "layer1.0.conv1");
  g_assert_nonnull (conv);
  g_assert_cmpstr (conv->class_name, ==, "torch.nn.modules.conv.Conv2d");
  GraftGroup *block = graft_group_find_path (graph->root_group, "layer1.0");
  g_assert_cmpstr (block->class_name, ==, "torchvision.models.resnet.BasicBlock");
  g_assert_cmpstr (graph->root_group->class_name, ==, "torchvision.models.resnet.ResNet");
  gboolean has_conv = FALSE;
  for (guint k = 0; k < conv->nodes->len; k++)
    has_conv |= strcmp (((GraftNode *) g_ptr_array_index (conv->nodes, k))->op, "aten::conv2d") == 0;
  g_assert_true (has_conv);
  /* the weight is a root initializer referenced by path */
  GraftValue *w = graft_graph_lookup_value (graph, "layer1.0.conv1.weight");
  g_assert_nonnull (w);
  g_assert_nonnull (w->initializer);
  g_assert_cmpuint (w->consumers->len, ==, 1);
  /* BasicBlock calls its one ReLU twice: a group per call, one relu_ each,
   * so that the layout has no cycle between the block's boxes */
  for (guint call = 0; call < 2; call++)
    {
      GraftGroup *relu = graft_group_find_path (graph->root_group, call == 0 ? "layer1.0.relu" : "layer1.0.relu_1");
      g_assert_nonnull (relu);
      g_assert_cmpstr (relu->class_name, ==, "torch.nn.modules.activation.ReLU");
      g_assert_cmpuint (relu->nodes->len, ==, 1);
      g_assert_cmpstr (((GraftNode *) g_ptr_array_index (relu->nodes, 0))->op, ==, "aten::relu_");
    }
  /* BatchNorm's training branch is a prim::If with two blocks */
  GraftGroup *bn = graft_group_find_path (graph->root_group, "layer1.0.bn1");
  guint n_if = 0;
  for (guint k = 0; k < bn->nodes->len; k++)
    {
      GraftNode *node = g_ptr_array_index (bn->nodes, k);
      if (strcmp (node->op, "prim::If") == 0)
        {
          g_autoptr(GPtrArray) subs = graft_node_get_subgraphs (node);
          g_assert_cmpuint (subs->len, ==, 2);
          n_if++;
        }
    }
  g_assert_cmpuint (n_if, >=, 2);
}

static void
test_state_dict (void)
{
  g_autofree char *pt = g_strdup_printf ("%s/state_dict.pt", fixtures ());
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (pt, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpint (graft_model_get_format (model), ==, GRAFT_MODEL_FORMAT_STATE_DICT);
  GPtrArray *tensors = graft_model_get_tensors (model);
  g_assert_cmpuint (tensors->len, ==, 2);
  GraftTensor *w = g_ptr_array_index (tensors, 0);
  g_assert_cmpstr (w->name, ==, "lin.weight");
  g_assert_cmpint (w->rank, ==, 2);
  g_assert_cmpint (w->dims[0], ==, 4);
  g_assert_cmpint (w->dims[1], ==, 3);
  g_assert_cmpuint (g_bytes_get_size (w->data), ==, 48);

  g_autofree char *ck = g_strdup_printf ("%s/checkpoint.pt", fixtures ());
  g_autoptr(GraftModel) checkpoint = graft_model_load (ck, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  GraftTensor *cw = g_ptr_array_index (graft_model_get_tensors (checkpoint), 0);
  g_assert_cmpstr (cw->name, ==, "model.lin.weight");
}

typedef struct {
  const char *file;
  const char *message;   /* substring */
} Recognition;

static const Recognition recognitions[] = {
  { "whole_module.pt", "whole Python object pickled with torch.save(model) (class __main__.Tiny)" },
  { "whole_module_legacy.pt", "legacy torch.save file (the pre-1.6 pickle stream, or _use_new_zipfile_serialization=False) "
    "holding a whole Python object pickled with torch.save(model) (class __main__.Tiny)" },
  { "state_dict_legacy.pt", "holding a state_dict" },
  { "bytecode_only.ptl", "PyTorch Mobile lite-interpreter file (bytecode.pkl) without TorchScript code" },
  { "exported.pt2", "torch.export ExportedProgram (.pt2)" },
};

static void
test_recognition (gconstpointer data)
{
  const Recognition *r = data;
  g_autofree char *path = g_strdup_printf ("%s/%s", fixtures (), r->file);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);
  g_assert_null (model);
  g_assert_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, r->message));
  /* and it says how to get a file Graft can open */
  g_assert_true (strstr (error->message, "torch.jit.save") || strstr (error->message, "torch.onnx.export"));
}

static void
test_lite_interpreter_with_code (void)
{
  g_autofree char *path = g_strdup_printf ("%s/tiny_lite.ptl", fixtures ());
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpint (graft_model_get_format (model), ==, GRAFT_MODEL_FORMAT_TORCHSCRIPT);
  g_autoptr(GHashTable) got = g_hash_table_new (g_str_hash, g_str_equal);
  graft_graph_foreach_node_recursive (graft_model_get_graph (model), count_aten, got);
  g_assert_cmpuint (GPOINTER_TO_UINT (g_hash_table_lookup (got, g_intern_string ("aten::linear"))), ==, 1);
}

static void
test_cli_info (void)
{
  g_autofree char *cli = g_build_filename (g_getenv ("GRAFT_BUILD_DIR"), "app", "graft-cli", NULL);
  g_autofree char *path = g_strdup_printf ("%s/resnet18_traced.pt", fixtures ());
  const char *argv[] = { cli, "info", "--json", path, NULL };
  g_autofree char *out = NULL, *err = NULL;
  int status;
  g_autoptr(GError) error = NULL;
  g_assert_true (g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status, &error));
  g_assert_no_error (error);
  if (!g_spawn_check_wait_status (status, NULL))
    g_error ("graft-cli info failed: %s", err);
  g_autoptr(JsonParser) parser = json_parser_new ();
  g_assert_true (json_parser_load_from_data (parser, out, -1, &error));
  JsonObject *root = json_node_get_object (json_parser_get_root (parser));
  g_assert_cmpstr (json_object_get_string_member (root, "format"), ==, "torchscript");
  JsonArray *inputs = json_object_get_array_member (root, "inputs");
  g_assert_cmpuint (json_array_get_length (inputs), ==, 1);
  JsonObject *graph = json_array_get_object_element (json_object_get_array_member (root, "graphs"), 0);
  JsonObject *ops = json_object_get_object_member (graph, "ops");
  g_assert_true (json_object_has_member (ops, "aten::_convolution"));
  g_assert_cmpint (json_object_get_int_member (ops, "aten::_convolution"), ==, 20);
  g_assert_cmpint (json_object_get_int_member (ops, "aten::linear"), ==, 1);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GDir) dir = g_dir_open (fixtures (), 0, NULL);
  g_assert_nonnull (dir);
  const char *entry;
  while ((entry = g_dir_read_name (dir)))
    if (g_str_has_suffix (entry, ".hist.json"))
      g_ptr_array_add (names, g_strndup (entry, strlen (entry) - strlen (".hist.json")));
  for (guint i = 1; i < names->len; i++)
    for (guint j = i; j > 0 && strcmp (g_ptr_array_index (names, j - 1), g_ptr_array_index (names, j)) > 0; j--)
      {
        gpointer t = names->pdata[j];
        names->pdata[j] = names->pdata[j - 1];
        names->pdata[j - 1] = t;
      }
  g_assert_cmpuint (names->len, >=, 20);
  for (guint k = 0; k < names->len; k++)
    {
      g_autofree char *path = g_strdup_printf ("/torchscript/fixture/%s", (char *) g_ptr_array_index (names, k));
      g_test_add_data_func (path, g_ptr_array_index (names, k), test_fixture);
    }
  g_test_add_func ("/torchscript/resnet18-groups", test_resnet_groups);
  g_test_add_func ("/torchscript/state-dict", test_state_dict);
  g_test_add_func ("/torchscript/lite-interpreter-with-code", test_lite_interpreter_with_code);
  for (guint k = 0; k < G_N_ELEMENTS (recognitions); k++)
    {
      g_autofree char *path = g_strdup_printf ("/torchscript/recognise/%s", recognitions[k].file);
      g_test_add_data_func (path, &recognitions[k], test_recognition);
    }
  g_test_add_func ("/torchscript/cli-info", test_cli_info);
  int status = g_test_run ();
  g_free (fixture_dir);
  return status;
}
