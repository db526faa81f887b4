/* Surgery operations through GraftEditHistory on small hand-built models:
 * every operation undoes to the graph it started from and redoes to the
 * same result; edits inside a function body and a subgraph undo too; a
 * session saved as a recipe replays on a renamed copy to the same graph;
 * bad steps fail naming what is wrong. */
#include <string.h>
#include "ir-compare.h"
#include "edit/edit.h"
#include "edit/edit-history.h"
#include "edit/edit-operation.h"
#include "ir/graph-copy.h"
#include "ir/graph-surgery.h"
#include "edit/pattern-edits.h"
#include "edit/recipe.h"

static GraftValue *
add_node (GraftGraph *graph, const char *op, const char *name, GraftValue *a, GraftValue *b, const char *out_name)
{
  GraftNode *node = graft_graph_add_node (graph, "", op, name);
  GraftValue *out = graft_graph_ensure_value (graph, out_name);

  graft_node_add_input (node, a);
  if (b != NULL)
    graft_node_add_input (node, b);
  graft_node_add_output (node, out);
  return out;
}

static GraftValue *
add_float_constant (GraftGraph *graph, const char *name, float value)
{
  GraftValue *v = graft_graph_ensure_value (graph, name);
  GraftTensor *tensor = graft_tensor_new (name, GRAFT_DTYPE_FLOAT32, 1, (gint64[]) { 1 });
  g_autoptr(GBytes) data = g_bytes_new (&value, sizeof value);

  graft_tensor_set_data (tensor, data, NULL);
  graft_graph_add_initializer (graph, v, tensor);
  return v;
}

/* x[2,4] → /block/relu (Relu) → /block/mul (Mul by k) → /block/add (Add k2) → y,
 * with k2 a copy of k and a dead /block/neg on the Relu. Scoped names
 * give the group tree "block". */
static GraftModel *
block_model (const char *prefix)
{
  GraftModel *model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *graph = graft_graph_new ("block");
  GraftValue *x = graft_graph_ensure_value (graph, "x");
  GraftValue *k = add_float_constant (graph, "k", 2.0f);
  GraftValue *k2 = add_float_constant (graph, "k2", 2.0f);
  g_autofree char *relu = g_strconcat (prefix, "/block/relu", NULL);
  g_autofree char *mul = g_strconcat (prefix, "/block/mul", NULL);
  g_autofree char *add = g_strconcat (prefix, "/block/add", NULL);
  g_autofree char *neg = g_strconcat (prefix, "/block/neg", NULL);
  GraftValue *r, *m, *y;

  graft_model_set_ir_version (model, 8);
  graft_model_set_opset (model, "", 17);
  x->dtype = GRAFT_DTYPE_FLOAT32;
  graft_shape_init_fixed (&x->shape, 2, (gint64[]) { 2, 4 });
  graft_graph_add_input (graph, x);
  r = add_node (graph, "Relu", relu, x, NULL, *prefix ? "r_renamed" : "r");
  m = add_node (graph, "Mul", mul, r, k, *prefix ? "m_renamed" : "m");
  y = add_node (graph, "Add", add, m, k2, "y");
  add_node (graph, "Neg", neg, r, NULL, *prefix ? "dead_renamed" : "dead");
  y->dtype = GRAFT_DTYPE_FLOAT32;
  graft_shape_init_fixed (&y->shape, 2, (gint64[]) { 2, 4 });
  graft_graph_add_output (graph, y);
  graft_graph_build_groups_from_names (graph);
  graft_model_set_graph (model, graph);
  return model;
}

static GraftEdit *
operation (const char *id, GVariant *params)
{
  g_autoptr(GError) error = NULL;
  GraftEdit *edit = graft_edit_new_operation (id, params, &error);

  g_assert_no_error (error);
  g_assert_nonnull (edit);
  return edit;
}

static void
assert_same_graph (GraftGraph *a, GraftGraph *b)
{
  g_autoptr(GString) why = g_string_new (NULL);

  if (!graft_test_graphs_equal (a, b, "graph", why))
    g_error ("graphs differ: %s", why->str);
}

static void
test_undo_redo_every_operation (void)
{
  struct {
    const char *id;
    GVariant *params;
  } cases[] = {
    { "rename-node", graft_edit_params_new ("node", g_variant_new_string ("/block/relu"),
                                            "to", g_variant_new_string ("act"), NULL) },
    { "rename-value", graft_edit_params_new ("value", g_variant_new_string ("m"), "to", g_variant_new_string ("scaled"), NULL) },
    { "set-initializer-values", graft_edit_params_new ("value", g_variant_new_string ("k"),
                                                       "values", g_variant_new_string ("[3]"), NULL) },
    { "cast-initializer", graft_edit_params_new ("value", g_variant_new_string ("k"),
                                                 "dtype", g_variant_new_string ("float16"), NULL) },
    { "add-output", graft_edit_params_new ("value", g_variant_new_string ("m"), NULL) },
    { "add-input", graft_edit_params_new ("value", g_variant_new_string ("m"), NULL) },
    { "insert-node", graft_edit_params_new ("value", g_variant_new_string ("r"), "op", g_variant_new_string ("Sigmoid"),
                                            NULL) },
    { "insert-node", graft_edit_params_new ("value", g_variant_new_string ("r"), "op", g_variant_new_string ("LeakyRelu"),
                                            "attributes", g_variant_new_strv ((const char *[]) { "alpha=0.2" }, 1),
                                            NULL) },
    { "add-node", graft_edit_params_new ("op", g_variant_new_string ("Add"),
                                         "inputs", g_variant_new_strv ((const char *[]) { "m", "r" }, 2), NULL) },
    { "replace-op", graft_edit_params_new ("node", g_variant_new_string ("/block/relu"),
                                           "op", g_variant_new_string ("Elu"), NULL) },
    { "replace-nodes", graft_edit_params_new ("nodes", g_variant_new_strv ((const char *[]) { "/block/mul", "/block/add" }, 2),
                                              "op", g_variant_new_string ("com.example::ScaleShift"), NULL) },
    /* Mul(r, k) reads k first in the pattern: Mul matches either order. */
    { "replace-pattern", graft_edit_params_new ("pattern", g_variant_new_string ("m=Mul(k,r) Add(m,c)"),
                                                "op", g_variant_new_string ("com.example::ScaleShift"),
                                                "attributes", g_variant_new_strv ((const char *[]) { "mode=string:fast" }, 1),
                                                NULL) },
    { "replace-pattern", graft_edit_params_new ("pattern", g_variant_new_strv ((const char *[]) { "m=Mul(r,k)", "Add(m,c)" }, 2),
                                                "replacement", g_variant_new_string ("d=Div(r,k) Sub(d,c)"), NULL) },
    { "fold-constants", NULL },
    { "cleanup", NULL },
    { "toposort", NULL },
    { "float16", graft_edit_params_new ("keep_io_types", g_variant_new_boolean (TRUE), NULL) },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr(GraftModel) model = block_model ("");
      g_autoptr(GraftEditHistory) history = graft_edit_history_new (model);
      g_autoptr(GraftGraph) before = graft_graph_copy (graft_model_get_graph (model), NULL);
      g_autoptr(GraftGraph) after = NULL;
      g_autoptr(GraftEdit) edit = operation (cases[i].id, cases[i].params);
      g_autoptr(GError) error = NULL;

      if (!graft_edit_history_apply (history, edit, &error))
        g_error ("%s: %s", cases[i].id, error->message);
      g_assert_cmpstr (graft_edit_get_operation_id (edit), ==, cases[i].id);
      g_assert_nonnull (graft_edit_get_recorded_params (edit));
      after = graft_graph_copy (graft_model_get_graph (model), NULL);
      g_assert_true (graft_edit_history_undo (history, &error));
      assert_same_graph (graft_model_get_graph (model), before);
      g_assert_true (graft_edit_history_redo (history, &error));
      g_assert_no_error (error);
      assert_same_graph (graft_model_get_graph (model), after);
    }
}

static void
apply_operation (GraftEditHistory *history, const char *id, GVariant *params)
{
  g_autoptr(GraftEdit) edit = operation (id, params);
  g_autoptr(GError) error = NULL;

  if (!graft_edit_history_apply (history, edit, &error))
    g_error ("%s: %s", id, error->message);
}

static GraftAttribute *
leaky_alpha (GraftModel *model)
{
  return graft_node_get_attribute (graft_graph_find_node (graft_model_get_graph (model), "leaky"), "alpha");
}

/* Setting and removing an attribute the op's schema has, undoable. */
static void
test_schema_attributes (void)
{
  g_autoptr(GraftModel) model = block_model ("");
  g_autoptr(GraftEditHistory) history = graft_edit_history_new (model);
  g_autoptr(GError) error = NULL;
  const char *alpha[] = { "alpha=0.2" };

  apply_operation (history, "insert-node", graft_edit_params_new (
    "value", g_variant_new_string ("r"), "op", g_variant_new_string ("LeakyRelu"), "name", g_variant_new_string ("leaky"),
    "attributes", g_variant_new_strv (alpha, 1), NULL));
  apply_operation (history, "set-attribute", graft_edit_params_new (
    "node", g_variant_new_string ("leaky"), "name", g_variant_new_string ("alpha"), "value", g_variant_new_string ("0.5"),
    NULL));
  g_assert_cmpfloat_with_epsilon (leaky_alpha (model)->f, 0.5, 1e-6);
  g_assert_true (graft_edit_history_undo (history, &error));
  g_assert_cmpfloat_with_epsilon (leaky_alpha (model)->f, 0.2, 1e-6);
  apply_operation (history, "remove-attribute", graft_edit_params_new (
    "node", g_variant_new_string ("leaky"), "name", g_variant_new_string ("alpha"), NULL));
  g_assert_null (leaky_alpha (model));
  g_assert_true (graft_edit_history_undo (history, &error));
  g_assert_no_error (error);
  g_assert_nonnull (leaky_alpha (model));
}

/* An inserted node is named in its producer's scope, as exporters name
 * nodes, not after the value it reads. */
static void
test_inserted_node_name (void)
{
  g_autoptr(GraftModel) model = block_model ("");
  g_autoptr(GraftEditHistory) history = graft_edit_history_new (model);
  GraftNode *inserted;

  apply_operation (history, "insert-node", graft_edit_params_new (
    "value", g_variant_new_string ("r"), "op", g_variant_new_string ("LeakyRelu"), NULL));
  apply_operation (history, "insert-node", graft_edit_params_new (
    "value", g_variant_new_string ("r"), "op", g_variant_new_string ("LeakyRelu"), NULL));
  inserted = graft_graph_find_node (graft_model_get_graph (model), "/block/LeakyRelu");
  g_assert_nonnull (inserted);
  g_assert_cmpstr (((GraftValue *) g_ptr_array_index (inserted->outputs, 0))->name, ==, "/block/LeakyRelu_output_0");
  g_assert_nonnull (graft_graph_find_node (graft_model_get_graph (model), "/block/LeakyRelu_1"));
}

/* After a leaf module's only op (nn.ReLU's Relu, a Conv2d's Conv) an
 * inserted node is named in and joins the module holding that one: it is
 * no part of the leaf module, and joining it would draw a new box around
 * the two. */
static void
test_inserted_after_leaf_module (void)
{
  g_autoptr(GraftModel) model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *graph = graft_graph_new ("stem");
  g_autoptr(GraftEditHistory) history = NULL;
  GraftValue *x = graft_graph_ensure_value (graph, "x");
  GraftValue *c, *y;
  GraftNode *inserted;

  graft_model_set_ir_version (model, 8);
  graft_model_set_opset (model, "", 17);
  x->dtype = GRAFT_DTYPE_FLOAT32;
  graft_shape_init_fixed (&x->shape, 2, (gint64[]) { 2, 4 });
  graft_graph_add_input (graph, x);
  c = add_node (graph, "Neg", "/stem/conv/Neg", x, NULL, "/stem/conv/Neg_output_0");
  y = add_node (graph, "Relu", "/stem/act/Relu", c, NULL, "y");
  y->dtype = GRAFT_DTYPE_FLOAT32;
  graft_shape_init_fixed (&y->shape, 2, (gint64[]) { 2, 4 });
  graft_graph_add_output (graph, y);
  graft_graph_build_groups_from_names (graph);
  graft_model_set_graph (model, graph);
  history = graft_edit_history_new (model);

  apply_operation (history, "insert-node", graft_edit_params_new (
    "value", g_variant_new_string ("/stem/conv/Neg_output_0"), "op", g_variant_new_string ("LeakyRelu"), NULL));
  inserted = graft_graph_find_node (graft_model_get_graph (model), "/stem/LeakyRelu");
  g_assert_nonnull (inserted);
  g_assert_cmpstr (inserted->group->path, ==, "stem");
  g_assert_cmpuint (graft_group_find_path (graft_model_get_graph (model)->root_group, "stem.conv")->total_nodes, ==, 1);
}

static void
test_bad_requests (void)
{
  g_autoptr(GraftModel) model = block_model ("");
  g_autoptr(GraftGraph) before = graft_graph_copy (graft_model_get_graph (model), NULL);
  g_autoptr(GError) error = NULL;
  struct {
    const char *id;
    GVariant *params;
    const char *text;
  } cases[] = {
    { "rename-node", graft_edit_params_new ("node", g_variant_new_string ("/block/relu"), "to",
                                            g_variant_new_string ("/block/mul"), NULL), "already named" },
    { "rename-value", graft_edit_params_new ("value", g_variant_new_string ("nope"), "to", g_variant_new_string ("z"),
                                             NULL), "'nope'" },
    { "set-attribute", graft_edit_params_new ("node", g_variant_new_string ("/block/relu"), "name",
                                              g_variant_new_string ("n"), "value", g_variant_new_string ("x"),
                                              "type", g_variant_new_string ("tensor"), NULL), "unknown attribute type" },
    { "remove-output", graft_edit_params_new ("value", g_variant_new_string ("y"), NULL), "only graph output" },
    { "remove-input", graft_edit_params_new ("value", g_variant_new_string ("x"), NULL), "still used" },
    { "cast-initializer", graft_edit_params_new ("value", g_variant_new_string ("k"), "dtype",
                                                 g_variant_new_string ("float17"), NULL), "unknown dtype" },
    { "insert-node", graft_edit_params_new ("value", g_variant_new_string ("r"), NULL), "an op is needed" },
    /* Attributes are checked against the op's ONNX schema. */
    { "set-attribute", graft_edit_params_new ("node", g_variant_new_string ("/block/relu"), "name",
                                              g_variant_new_string ("note"), "value", g_variant_new_string ("x"),
                                              NULL), "Relu (opset 17) has no attribute 'note'" },
    { "insert-node", graft_edit_params_new ("value", g_variant_new_string ("r"), "op", g_variant_new_string ("LeakyRelu"),
                                            "attributes", g_variant_new_strv ((const char *[]) { "alpha=[1, 2]" }, 1),
                                            NULL), "'alpha' is a float" },
    { "add-node", graft_edit_params_new ("op", g_variant_new_string ("Add"),
                                         "inputs", g_variant_new_strv ((const char *[]) { "m", "nope" }, 2), NULL),
      "no value 'nope'" },
    { "add-node", graft_edit_params_new ("op", g_variant_new_string ("Cast"),
                                         "inputs", g_variant_new_strv ((const char *[]) { "m" }, 1), NULL), "Cast needs the attribute 'to' (int)" },
    { "replace-pattern", graft_edit_params_new ("pattern", g_variant_new_string ("s=Sigmoid(x) Mul(x,s)"),
                                                "op", g_variant_new_string ("com.example::Swish"), NULL),
      "the pattern 's=Sigmoid(x) Mul(x,s)' matches nothing in the graph" },
    /* The Relu output is also read by the dead Neg: removing it would change that. */
    { "replace-pattern", graft_edit_params_new ("pattern", g_variant_new_string ("r=Relu(x) Mul(r,k)"),
                                                "op", g_variant_new_string ("com.example::ReluScale"), NULL),
      "matches nothing" },
    { "replace-pattern", graft_edit_params_new ("pattern", g_variant_new_string ("r=Relu(x) Mul(x,k)"),
                                                "op", g_variant_new_string ("com.example::X"), NULL),
      "feeds no later step" },
    { "replace-pattern", graft_edit_params_new ("pattern", g_variant_new_string ("Mul(r,k)"),
                                                "replacement", g_variant_new_string ("Div(r,q)"), NULL),
      "'q' in 'Div(r,q)' is neither" },
    { "replace-pattern", graft_edit_params_new ("pattern", g_variant_new_string ("Mul(r,k)"),
                                                "op", g_variant_new_string ("Relu"), NULL), "is an ONNX op" },
    { "replace-pattern", graft_edit_params_new ("pattern", g_variant_new_string ("Mul(r,k);fmod=1"),
                                                "op", g_variant_new_string ("a::B"), NULL), "matches nothing" },
    /* Shape inference ignores an input the op does not have: the schema's count is checked. */
    { "replace-pattern", graft_edit_params_new ("pattern", g_variant_new_string ("Mul(r,k)"),
                                                "replacement", g_variant_new_string ("Relu(r,k)"), NULL),
      "replacement step 'Relu(r,k)' gives Relu 2 inputs; it takes 1 (X)" },
    { "replace-pattern", graft_edit_params_new ("pattern", g_variant_new_string ("Mul(r,k Add(m,c)"),
                                                "op", g_variant_new_string ("a::B"), NULL), "a ')' is missing" },
  };

  g_assert_null (graft_edit_new_operation ("no-such-edit", NULL, &error));
  g_assert_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID);
  g_clear_error (&error);
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr(GraftEdit) edit = operation (cases[i].id, cases[i].params);
      g_assert_false (graft_edit_apply (edit, model, &error));
      if (strstr (error->message, cases[i].text) == NULL)
        g_error ("%s: '%s' lacks '%s'", cases[i].id, error->message, cases[i].text);
      g_clear_error (&error);
      /* A failed edit leaves the model as it was. */
      assert_same_graph (graft_model_get_graph (model), before);
    }
}

/* A model whose main graph calls a local function "twice" (x → Relu → Add
 * itself) and has an If whose then branch holds a Neg. */
static GraftModel *
scoped_model (void)
{
  GraftModel *model = block_model ("");
  GraftGraph *graph = graft_model_get_graph (model);
  GraftFunction *function = g_new0 (GraftFunction, 1);
  GraftGraph *body = graft_graph_new ("twice");
  GraftGraph *then_branch = graft_graph_new ("then_branch");
  GraftValue *a = graft_graph_ensure_value (body, "a");
  GraftValue *r, *b, *t;
  GraftNode *branch;

  graft_graph_add_input (body, a);
  r = add_node (body, "Relu", "inner_relu", a, NULL, "ra");
  b = add_node (body, "Add", "inner_add", r, r, "b");
  graft_graph_add_output (body, b);
  function->name = g_strdup ("twice");
  function->domain = g_strdup ("local");
  function->attribute_names = g_ptr_array_new_with_free_func (g_free);
  function->body = body;
  graft_model_add_function (model, function);

  t = add_node (then_branch, "Neg", "then_neg", graft_graph_lookup_value (graph, "m"), NULL, "t");
  graft_graph_add_output (then_branch, t);
  branch = graft_graph_add_node (graph, "", "If", "branch");
  graft_node_add_input (branch, graft_graph_lookup_value (graph, "x"));
  graft_node_add_output (branch, graft_graph_ensure_value (graph, "branch_out"));
  graft_node_add_attribute (branch, graft_attribute_new_graph ("then_branch", then_branch));
  graft_node_adopt_subgraph (branch, then_branch);
  return model;
}

static void
test_function_and_subgraph_scopes (void)
{
  g_autoptr(GraftModel) model = scoped_model ();
  g_autoptr(GraftEditHistory) history = graft_edit_history_new (model);
  GraftFunction *function = g_ptr_array_index (graft_model_get_functions (model), 0);
  g_autoptr(GraftGraph) body_before = graft_graph_copy (function->body, NULL);
  g_autoptr(GraftEdit) in_function = operation ("replace-op", graft_edit_params_new (
      "node", g_variant_new_string ("inner_relu"), "op", g_variant_new_string ("Sigmoid"),
      "function", g_variant_new_string ("twice"), NULL));
  g_autoptr(GraftEdit) in_branch = operation ("rename-node", graft_edit_params_new (
      "node", g_variant_new_string ("then_neg"), "to", g_variant_new_string ("negate"),
      "graph", g_variant_new_string ("branch#then_branch"), NULL));
  g_autoptr(GraftEdit) bad_path = operation ("rename-node", graft_edit_params_new (
      "node", g_variant_new_string ("then_neg"), "to", g_variant_new_string ("n"),
      "graph", g_variant_new_string ("branch#else_branch"), NULL));
  g_autoptr(GError) error = NULL;
  GraftGraph *then_branch;
  GVariant *recorded;
  g_autoptr(GVariant) path = NULL;

  g_assert_true (graft_edit_history_apply (history, in_function, &error));
  g_assert_no_error (error);
  g_assert_cmpstr (((GraftNode *) g_ptr_array_index (function->body->nodes, 0))->op_type, ==, "Sigmoid");
  g_assert_true (graft_edit_history_undo (history, &error));
  assert_same_graph (function->body, body_before);
  g_assert_true (graft_edit_history_redo (history, &error));
  g_assert_cmpstr (((GraftNode *) g_ptr_array_index (function->body->nodes, 0))->op_type, ==, "Sigmoid");

  g_assert_true (graft_edit_history_apply (history, in_branch, &error));
  g_assert_no_error (error);
  then_branch = graft_node_get_attribute (graft_graph_find_node (graft_model_get_graph (model), "branch"),
                                          "then_branch")->g;
  g_assert_cmpstr (((GraftNode *) g_ptr_array_index (then_branch->nodes, 0))->name, ==, "negate");
  /* The recipe keeps the path as node addresses. */
  recorded = graft_edit_get_recorded_params (in_branch);
  path = g_variant_lookup_value (recorded, "graph_path", G_VARIANT_TYPE ("av"));
  g_assert_nonnull (path);
  g_assert_cmpuint (g_variant_n_children (path), ==, 1);

  g_assert_false (graft_edit_history_apply (history, bad_path, &error));
  g_assert_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_NOT_FOUND);
  g_assert_nonnull (strstr (error->message, "else_branch"));
}

static void
test_recipe_replays_on_renamed_copy (void)
{
  g_autoptr(GraftModel) model = block_model ("");
  g_autoptr(GraftModel) renamed = block_model ("/export2");
  g_autoptr(GraftEditHistory) history = graft_edit_history_new (model);
  g_autoptr(GraftEditHistory) replay = graft_edit_history_new (renamed);
  g_autoptr(GPtrArray) applied = g_ptr_array_new_with_free_func (g_object_unref);
  g_autoptr(GError) error = NULL;
  g_autofree char *json = NULL;
  const char *ids[] = { "cleanup", "add-node", "add-output", "insert-node", "rename-node" };
  GVariant *params[] = {
    NULL,
    /* Its inputs are found again by address in the renamed copy. */
    graft_edit_params_new ("op", g_variant_new_string ("Mul"), "name", g_variant_new_string ("product"),
                           "inputs", g_variant_new_strv ((const char *[]) { "r", "m" }, 2),
                           "graph_outputs", g_variant_new_boolean (FALSE), NULL),
    graft_edit_params_new ("value", g_variant_new_string ("r"), NULL),
    graft_edit_params_new ("value", g_variant_new_string ("m"), "op", g_variant_new_string ("Sigmoid"),
                           "name", g_variant_new_string ("gate"), NULL),
    graft_edit_params_new ("node", g_variant_new_string ("/block/mul"), "to", g_variant_new_string ("scale"), NULL),
  };
  GraftGraph *a, *b;

  for (guint i = 0; i < G_N_ELEMENTS (ids); i++)
    {
      g_autoptr(GraftEdit) edit = operation (ids[i], params[i]);
      if (!graft_edit_history_apply (history, edit, &error))
        g_error ("%s: %s", ids[i], error->message);
    }
  json = graft_recipe_to_json (graft_edit_history_get_applied (history), &error);
  g_assert_no_error (error);
  g_assert_nonnull (strstr (json, "\"edit\" : \"insert-node\""));
  g_assert_true (graft_recipe_replay (json, strlen (json), replay, applied, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (applied->len, ==, G_N_ELEMENTS (ids));
  /* Undoable one by one, like edits made by hand. */
  g_assert_true (graft_edit_history_can_undo (replay));

  a = graft_model_get_graph (model);
  b = graft_model_get_graph (renamed);
  g_assert_cmpuint (a->nodes->len, ==, b->nodes->len);
  for (guint i = 0; i < a->nodes->len; i++)
    {
      GraftNode *na = g_ptr_array_index (a->nodes, i), *nb = g_ptr_array_index (b->nodes, i);
      g_assert_cmpstr (na->op, ==, nb->op);
      g_assert_cmpuint (na->attributes->len, ==, nb->attributes->len);
    }
  g_assert_nonnull (graft_graph_find_node (b, "scale"));
  g_assert_nonnull (graft_graph_find_node (b, "gate"));
  g_assert_cmpstr (((GraftValue *) g_ptr_array_index (graft_graph_find_node (b, "product")->inputs, 0))->name, ==,
                   "r_renamed");
  g_assert_cmpuint (b->outputs->len, ==, 2);
  g_assert_cmpstr (((GraftValue *) g_ptr_array_index (b->outputs, 1))->name, ==, "r_renamed");
}

static void
test_recipe_errors (void)
{
  g_autoptr(GraftModel) model = block_model ("");
  g_autoptr(GraftEditHistory) history = graft_edit_history_new (model);
  g_autoptr(GError) error = NULL;
  const char *not_recipe = "[1, 2]";
  const char *unknown = "{\"steps\": [{\"edit\": \"frobnicate\"}]}";
  const char *missing = "{\"steps\": [{\"edit\": \"cleanup\"}, {\"edit\": \"delete-node\", \"node\": "
                        "{\"name\": \"/gone\", \"op\": \"onnx::Relu\", \"group\": \"gone\", \"index\": 3}}]}";
  const char *by_name = "{\"steps\": [{\"edit\": \"rename-node\", \"node\": \"/block/add\", \"to\": \"sum\"}]}";

  g_assert_false (graft_recipe_replay (not_recipe, strlen (not_recipe), history, NULL, &error));
  g_assert_nonnull (strstr (error->message, "steps"));
  g_clear_error (&error);
  g_assert_false (graft_recipe_replay (unknown, strlen (unknown), history, NULL, &error));
  g_assert_nonnull (strstr (error->message, "step 1"));
  g_assert_nonnull (strstr (error->message, "frobnicate"));
  g_clear_error (&error);
  g_assert_false (graft_recipe_replay (missing, strlen (missing), history, NULL, &error));
  g_assert_nonnull (strstr (error->message, "step 2 (delete-node)"));
  g_assert_nonnull (strstr (error->message, "/gone"));
  g_clear_error (&error);
  /* Hand-written steps may name their targets plainly. */
  g_assert_true (graft_recipe_replay (by_name, strlen (by_name), history, NULL, &error));
  g_assert_no_error (error);
  g_assert_nonnull (graft_graph_find_node (graft_model_get_graph (model), "sum"));
}


/* What the Replace Pattern dialog previews: matches, skipped candidates
 * with the reason, the parser's errors, and a pattern suggested from a node. */
static void
test_pattern_preview (void)
{
  g_autoptr(GraftModel) model = block_model ("");
  GraftGraph *graph = graft_model_get_graph (model);
  g_autoptr(GraftPatternPreview) matched = NULL, blocked = NULL, broken = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *chain = NULL, *single = NULL;
  GraftPatternMatch *match;

  matched = graft_pattern_preview_new (model, graph, "m=Mul(r,k)  Add(m,c)", TRUE, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (matched->matches->len, ==, 1);
  g_assert_cmpuint (matched->skipped->len, ==, 0);
  g_assert_cmpuint (matched->n_variables, ==, 3);
  match = g_ptr_array_index (matched->matches, 0);
  g_assert_cmpstr (((GraftNode *) g_ptr_array_index (match->nodes, 0))->name, ==, "/block/mul");
  g_assert_cmpstr (((GraftNode *) g_ptr_array_index (match->nodes, 1))->name, ==, "/block/add");
  g_assert_null (match->reason);

  /* The Relu's output is read by the dead Neg too. */
  blocked = graft_pattern_preview_new (model, graph, "r=Relu(x) Mul(r,k)", TRUE, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (blocked->matches->len, ==, 0);
  g_assert_cmpuint (blocked->skipped->len, ==, 1);
  match = g_ptr_array_index (blocked->skipped, 0);
  g_assert_cmpstr (match->reason, ==, "'r' (of node '/block/relu') is also read by node '/block/neg', outside the match");

  broken = graft_pattern_preview_new (model, graph, "m=Mul(r,k Add(m,c)", TRUE, &error);
  g_assert_null (broken);
  g_assert_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID);
  g_assert_nonnull (strstr (error->message, "is not [NAME=]OP(ARG,...)"));
  g_clear_error (&error);

  g_assert_true (graft_pattern_check_replacement ("r=Relu(x) Mul(r,k)", "n=Neg(x) Mul(n,k)", &error));
  g_assert_no_error (error);
  g_assert_false (graft_pattern_check_replacement ("r=Relu(x) Mul(r,k)", "Neg(r)", &error));
  g_assert_nonnull (strstr (error->message, "'r' in 'Neg(r)' is neither an earlier step nor a variable"));
  g_clear_error (&error);

  /* The Relu is read twice (Mul and Neg): a variable, not a step. */
  chain = graft_pattern_suggest (graft_graph_find_node (graph, "/block/add"), 3);
  g_assert_cmpstr (chain, ==, "m=Mul(x,w) Add(m,w2)");
  single = graft_pattern_suggest (graft_graph_find_node (graph, "/block/add"), 1);
  g_assert_cmpstr (single, ==, "Add(x,w)");
  {
    g_autoptr(GraftPatternPreview) suggested = graft_pattern_preview_new (model, graph, chain, TRUE, &error);
    g_assert_no_error (error);
    g_assert_cmpuint (suggested->matches->len, ==, 1);
  }
}

/* y = Mul(Add(p, q), q): "a=Add(x,y) Mul(a,x)" matches only with the
 * Add's inputs read swapped (x = q), which the Mul step decides after the
 * Add step fitted either way: the matcher has to go back to the Add. */
static void
test_pattern_commutative_search (void)
{
  g_autoptr(GraftModel) model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *graph = graft_graph_new ("commutative");
  GraftValue *p = graft_graph_ensure_value (graph, "p");
  GraftValue *q = graft_graph_ensure_value (graph, "q");
  g_autoptr(GraftEditHistory) history = NULL;
  g_autoptr(GraftEdit) edit = NULL;
  g_autoptr(GraftPatternPreview) preview = NULL;
  g_autoptr(GError) error = NULL;
  GraftValue *a, *y;
  GraftNode *fused;

  graft_model_set_ir_version (model, 8);
  graft_model_set_opset (model, "", 17);
  for (GraftValue **v = (GraftValue *[]) { p, q, NULL }; *v != NULL; v++)
    {
      (*v)->dtype = GRAFT_DTYPE_FLOAT32;
      graft_shape_init_fixed (&(*v)->shape, 2, (gint64[]) { 2, 4 });
      graft_graph_add_input (graph, *v);
    }
  a = add_node (graph, "Add", "add", p, q, "a");
  y = add_node (graph, "Mul", "mul", a, q, "y");
  y->dtype = GRAFT_DTYPE_FLOAT32;
  graft_shape_init_fixed (&y->shape, 2, (gint64[]) { 2, 4 });
  graft_graph_add_output (graph, y);
  graft_model_set_graph (model, graph);

  preview = graft_pattern_preview_new (model, graph, "a=Add(x,y) Mul(a,x)", TRUE, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (preview->matches->len, ==, 1);

  history = graft_edit_history_new (model);
  edit = operation ("replace-pattern", graft_edit_params_new ("pattern", g_variant_new_string ("a=Add(x,y) Mul(a,x)"),
                                                              "op", g_variant_new_string ("com.example::AddMul"), NULL));
  g_assert_true (graft_edit_history_apply (history, edit, &error));
  g_assert_no_error (error);
  fused = graft_graph_find_node (graft_model_get_graph (model), "mul");
  g_assert_cmpstr (fused->op, ==, "com.example::AddMul");
  /* The variables in order of first appearance: x (= q), then y (= p). */
  g_assert_cmpstr (((GraftValue *) g_ptr_array_index (fused->inputs, 0))->name, ==, "q");
  g_assert_cmpstr (((GraftValue *) g_ptr_array_index (fused->inputs, 1))->name, ==, "p");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/edit/surgery/inserted-node-name", test_inserted_node_name);
  g_test_add_func ("/edit/surgery/inserted-after-leaf-module", test_inserted_after_leaf_module);
  g_test_add_func ("/surgery/undo-redo-every-operation", test_undo_redo_every_operation);
  g_test_add_func ("/surgery/bad-requests", test_bad_requests);
  g_test_add_func ("/surgery/schema-attributes", test_schema_attributes);
  g_test_add_func ("/surgery/function-and-subgraph-scopes", test_function_and_subgraph_scopes);
  g_test_add_func ("/surgery/recipe-replays-on-renamed-copy", test_recipe_replays_on_renamed_copy);
  g_test_add_func ("/surgery/recipe-errors", test_recipe_errors);
  g_test_add_func ("/surgery/pattern-preview", test_pattern_preview);
  g_test_add_func ("/surgery/pattern-commutative-search", test_pattern_commutative_search);
  return g_test_run ();
}
