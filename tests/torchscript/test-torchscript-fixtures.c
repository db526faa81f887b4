/* TorchScript archives made by torch.jit.trace / torch.jit.script, by both
 * generations of writers (the venv's PyTorch 2.x and Debian's python3-torch
 * 1.13, see torch-generations.h): Graft's graph must hold exactly the aten:: nodes of
 * torch.jit.load(f).inlined_graph (blocks included), with the forward
 * inputs, the parameters and the module groups. Also the other PyTorch
 * file kinds, which must be recognised with a precise message, and
 * graft-cli info --json on a TorchScript file. */
#include <string.h>
#include <json-glib/json-glib.h>
#include "loader.h"
#include "torch-generations.h"
#include "../onnx/fixtures.h"

static char *fixture_dirs[GRAFT_TORCH_N_GENERATIONS];

/* The generation's fixture folder, or NULL after g_test_skip when that
 * generation's torch is missing or could not make NAME. */
static const char *
fixtures_or_skip (const GraftTorchGenerationCase *c)
{
  return graft_torch_generation_skip (c, fixture_dirs[c->generation]) ? NULL : fixture_dirs[c->generation];
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
  const GraftTorchGenerationCase *c = data;
  const char *name = c->name;
  const char *dir = fixtures_or_skip (c);
  if (dir == NULL)
    return;
  g_autofree char *pt = g_strdup_printf ("%s/%s.pt", dir, name);
  g_autofree char *js = g_strdup_printf ("%s/%s.hist.json", dir, name);
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
    {
      g_test_fail_printf ("%s: aten histogram differs:%s", name, diff->str);
      return;
    }
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

/* torchvision's classes where it imports, tests/fixtures/vision_models.py's
 * copies (same class names, another module) elsewhere */
static void
assert_class (GraftGroup *group, const char *torchvision_class)
{
  const char *dot = strrchr (torchvision_class, '.');
  g_autofree char *suffix = g_strdup (dot);

  g_assert_nonnull (group->class_name);
  if (strcmp (group->class_name, torchvision_class) != 0 && !g_str_has_suffix (group->class_name, suffix))
    g_error ("group %s is a %s, not a %s", group->path, group->class_name, torchvision_class);
}

static void
test_resnet_groups (gconstpointer data)
{
  const GraftTorchGenerationCase *c = data;
  const char *dir = fixtures_or_skip (c);
  if (dir == NULL)
    return;
  g_autofree char *pt = g_strdup_printf ("%s/%s.pt", dir, c->name);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (pt, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  GraftGraph *graph = graft_model_get_graph (model);
  GraftGroup *conv = graft_group_find_path (graph->root_group, "layer1.0.conv1");
  g_assert_nonnull (conv);
  g_assert_cmpstr (conv->class_name, ==, "torch.nn.modules.conv.Conv2d");
  GraftGroup *block = graft_group_find_path (graph->root_group, "layer1.0");
  assert_class (block, "torchvision.models.resnet.BasicBlock");
  assert_class (graph->root_group, "torchvision.models.resnet.ResNet");
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
test_state_dict (gconstpointer data)
{
  const GraftTorchGenerationCase *c = data;
  const char *dir = fixtures_or_skip (c);
  if (dir == NULL)
    return;
  g_autofree char *pt = g_strdup_printf ("%s/state_dict.pt", dir);
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

  g_autofree char *ck = g_strdup_printf ("%s/checkpoint.pt", dir);
  g_autoptr(GraftModel) checkpoint = graft_model_load (ck, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  GraftTensor *cw = g_ptr_array_index (graft_model_get_tensors (checkpoint), 0);
  g_assert_cmpstr (cw->name, ==, "model.lin.weight");
}

/* torch.save(model) in the zip format opens as its module tree, read
 * without running the module's code. */
/* The case's file, loaded; NULL if its generation of PyTorch is missing. */
static GraftModel *
load_case (const GraftTorchGenerationCase *c)
{
  const char *dir = fixtures_or_skip (c);
  if (dir == NULL)
    return NULL;
  g_autofree char *path = g_strdup_printf ("%s/%s", dir, c->name);
  g_autoptr(GError) error = NULL;
  GraftModel *model = graft_model_load (path, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  return model;
}

static void
test_whole_module (gconstpointer data)
{
  g_autoptr(GraftModel) model = load_case (data);
  if (model == NULL)
    return;
  GPtrArray *tensors = graft_model_get_tensors (model);
  g_assert_cmpuint (tensors->len, ==, 2);
  g_assert_cmpstr (((GraftTensor *) g_ptr_array_index (tensors, 0))->name, ==, "lin.weight");
  g_assert_cmpstr (((GraftTensor *) g_ptr_array_index (tensors, 1))->name, ==, "lin.bias");
  g_assert_cmpuint (graft_model_get_graph (model)->nodes->len, ==, 0);
  const char *key, *value;
  graft_model_get_metadata (model, 0, &key, &value);
  g_assert_cmpstr (key, ==, "pickled module");
  g_assert_cmpstr (value, ==, "__main__.Tiny");
  graft_model_get_metadata (model, 1, &key, &value);
  g_assert_cmpstr (key, ==, "module lin");
  g_assert_cmpstr (value, ==, "torch.nn.modules.linear.Linear");
}

typedef struct {
  const char *file;
  const char *message;   /* substring */
} Recognition;

static const Recognition recognitions[] = {
  { "whole_module_legacy.pt", "legacy torch.save file (the pre-1.6 pickle stream, or _use_new_zipfile_serialization=False) "
    "holding a whole Python object pickled with torch.save(model) (class __main__.Tiny)" },
  { "state_dict_legacy.pt", "holding a state_dict" },
  { "bytecode_only.ptl", "PyTorch Mobile lite-interpreter file (bytecode.pkl) without TorchScript code" },
  { "exported.pt2", "torch.export ExportedProgram (.pt2)" },
};

static const Recognition *
find_recognition (const char *file)
{
  for (guint k = 0; k < G_N_ELEMENTS (recognitions); k++)
    if (strcmp (recognitions[k].file, file) == 0)
      return &recognitions[k];
  g_assert_not_reached ();
}

static void
test_recognition (gconstpointer data)
{
  const GraftTorchGenerationCase *c = data;
  const Recognition *r = find_recognition (c->name);
  const char *dir = fixtures_or_skip (c);
  if (dir == NULL)
    return;
  g_autofree char *path = g_strdup_printf ("%s/%s", dir, r->file);
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
test_lite_interpreter_with_code (gconstpointer data)
{
  g_autoptr(GraftModel) model = load_case (data);
  if (model == NULL)
    return;
  g_assert_cmpint (graft_model_get_format (model), ==, GRAFT_MODEL_FORMAT_TORCHSCRIPT);
  g_autoptr(GHashTable) got = g_hash_table_new (g_str_hash, g_str_equal);
  graft_graph_foreach_node_recursive (graft_model_get_graph (model), count_aten, got);
  g_assert_cmpuint (GPOINTER_TO_UINT (g_hash_table_lookup (got, g_intern_string ("aten::linear"))), ==, 1);
}

static void
test_cli_info (gconstpointer data)
{
  const GraftTorchGenerationCase *c = data;
  const char *dir = fixtures_or_skip (c);
  if (dir == NULL)
    return;
  g_autofree char *path = g_strdup_printf ("%s/%s.pt", dir, c->name);
  g_autoptr(JsonParser) parser = graft_test_cli_info_json (path);
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

/* Registers TEST for NAME in every generation: /torchscript/<generation>/<what>/<name> */
static void
add_generation_cases (GPtrArray *cases, const char *what, const char *name, GTestDataFunc test)
{
  for (guint g = 0; g < GRAFT_TORCH_N_GENERATIONS; g++)
    {
      GraftTorchGenerationCase *c = g_new0 (GraftTorchGenerationCase, 1);
      g_autofree char *path = g_strdup_printf ("/torchscript/%s/%s/%s", graft_torch_generation_name (g), what, name);
      c->generation = g;
      c->name = g_intern_string (name);
      g_ptr_array_add (cases, c);
      g_test_add_data_func (path, c, test);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_autoptr(GHashTable) names = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr(GPtrArray) cases = g_ptr_array_new_with_free_func (g_free);
  for (guint g = 0; g < GRAFT_TORCH_N_GENERATIONS; g++)
    {
      fixture_dirs[g] = graft_torch_generation_fixtures (g, NULL);
      if (fixture_dirs[g] != NULL)
        graft_torch_generation_add_names (fixture_dirs[g], names);
    }
  g_autoptr(GPtrArray) sorted = graft_torch_generation_sorted (names);
  g_assert_cmpuint (sorted->len, >=, 20);
  for (guint k = 0; k < sorted->len; k++)
    add_generation_cases (cases, "fixture", sorted->pdata[k], test_fixture);
  add_generation_cases (cases, "groups", "resnet18_scripted", test_resnet_groups);
  add_generation_cases (cases, "state-dict", "state_dict.pt", test_state_dict);
  add_generation_cases (cases, "whole-module", "whole_module.pt", test_whole_module);
  add_generation_cases (cases, "lite-interpreter-with-code", "tiny_lite.ptl", test_lite_interpreter_with_code);
  for (guint k = 0; k < G_N_ELEMENTS (recognitions); k++)
    add_generation_cases (cases, "recognise", recognitions[k].file, test_recognition);
  add_generation_cases (cases, "cli-info", "resnet18_traced", test_cli_info);
  int status = g_test_run ();
  for (guint g = 0; g < GRAFT_TORCH_N_GENERATIONS; g++)
    g_free (fixture_dirs[g]);
  return status;
}
