/* Changing which ops run: insert a node on an edge, add a free node
 * (reading any values, its outputs graph outputs), give a node another op
 * (keeping its edges; a custom domain makes it a plugin op for TensorRT
 * and friends), and replace a set of nodes (a matched pattern) by one
 * custom-domain node that takes the set's inputs and gives its outputs. */
#include "edit/edit-private.h"
#include "ir/graph-surgery.h"
#include "onnx/op-schemas.h"
#include "runtime/op.h"
#include "pytorch/aten-schemas.h"

#include <string.h>

gboolean
graft_edit_split_op (const char *text, char **domain, char **op_type, GError **error)
{
  const char *separator = text ? strstr (text, "::") : NULL;

  if (text == NULL || *text == '\0' || (separator != NULL && separator[2] == '\0'))
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                   "an op is needed: \"Relu\" or \"domain::Op\" (\"com.example::Swish\")");
      return FALSE;
    }
  *domain = separator ? g_strndup (text, separator - text) : g_strdup ("");
  *op_type = g_strdup (separator ? separator + 2 : text);
  return TRUE;
}

static void
set_op (GraftNode *node, const char *domain, const char *op_type)
{
  g_autofree char *op = NULL;

  node->domain = graft_canonical_domain (domain);
  node->op_type = g_intern_string (op_type);
  op = g_strconcat (node->domain, "::", node->op_type, NULL);
  node->op = g_intern_string (op);
}

void
graft_edit_import_domain (GraftEditScope *scope, GraftNode *node, GVariant *params, GPtrArray *notes)
{
  gint64 version = graft_edit_param_int (params, "opset", 1);

  if (graft_model_get_opset (scope->model, node->domain) >= 0)
    return;
  graft_model_set_opset (scope->model, node->domain, version);
  g_ptr_array_add (notes, g_strdup_printf ("imports domain '%s' version %" G_GINT64_FORMAT, node->domain, version));
}

/* The readers hold an aten call's constants by position ("argK") unless
 * the schema makes them keyword-only, and the runtime and the torch.export
 * writer read them so: a constant an edit gave by keyword
 * ("negative_slope") takes its position when the positions before it are
 * all given. */
static void
position_aten_keywords (GraftNode *node)
{
  g_auto(GraftAtenCall) call = { 0 };
  const char *problem = NULL;
  guint next = 0;
  gboolean moved = TRUE;

  if (!g_str_has_prefix (node->op, "aten::") || !graft_aten_call_bind (node, &call, &problem))
    return;
  next = call.n_positional;
  while (moved)
    {
      moved = FALSE;
      for (guint k = call.n_positional; k < call.n; k++)
        if (call.keywords[k] != NULL && call.bound[k] == next && !call.schema->arguments[next].kwarg_only)
          {
            GraftAttribute *attribute = call.sources[k];
            g_free (attribute->name);
            attribute->name = g_strdup_printf ("arg%u", next);
            graft_node_set_attribute_argument_name (node, attribute->name, call.schema->arguments[next].name);
            call.keywords[k] = NULL;
            next++;
            moved = TRUE;
          }
    }
}

/* The registry checks ops it knows; others are noted as unchecked. */
static gboolean
check_op (GraftEditScope *scope, GraftNode *node, GPtrArray *notes, GError **error)
{
  g_autoptr(GraftInference) inference = NULL;

  position_aten_keywords (node);

  if (scope->function != NULL)
    return TRUE;
  if (graft_op_registry_lookup (node->op, graft_model_get_opset (scope->model, node->domain)) == NULL)
    {
      g_ptr_array_add (notes, g_strdup_printf ("Graft has no schema for %s: its inputs and attributes are not checked",
                                               node->op));
      inference = graft_edit_infer (scope->model);
    }
  else if ((inference = graft_edit_check_node (scope->model, node, error)) == NULL)
    return FALSE;
  graft_edit_refresh_declared_types (inference, scope->model, scope->graph, notes);
  return TRUE;
}

static gboolean
add_extra_inputs (GraftEditScope *scope, GraftNode *node, GVariant *params, GError **error)
{
  g_autofree const char **names = graft_edit_param_strv (params, "inputs");

  for (guint i = 0; names != NULL && names[i] != NULL; i++)
    {
      GraftValue *value = *names[i] ? graft_graph_resolve_value (scope->graph, names[i]) : NULL;
      if (*names[i] != '\0' && value == NULL)
        {
          g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_NOT_FOUND, "the graph has no value '%s' to feed '%s'",
                       names[i], node->name);
          return FALSE;
        }
      graft_node_add_input (node, value);
    }
  return TRUE;
}

/* Gives value's name to other (both in graph), value takes a fresh one. */
static void
swap_names (GraftGraph *graph, GraftValue *value, GraftValue *other)
{
  char *name = value->name;

  g_hash_table_remove (graph->value_by_name, value->name);
  g_hash_table_remove (graph->value_by_name, other->name);
  value->name = other->name;
  other->name = name;
  g_hash_table_insert (graph->value_by_name, value->name, value);
  g_hash_table_insert (graph->value_by_name, other->name, other);
}

/* A TorchScript module attribute or a constant: what a scripted module's
 * group holds beside its op, never drawn on its own. */
static gboolean
is_attribute_node (const GraftNode *node)
{
  if (strcmp (node->domain, "prim") == 0)
    return strcmp (node->op_type, "Constant") == 0 || strcmp (node->op_type, "GetAttr") == 0;
  return strcmp (node->domain, "onnx") == 0 && strcmp (node->op_type, "Constant") == 0;
}

static guint
count_ops (const GraftGroup *group)
{
  guint n = 0;

  for (guint i = 0; i < group->nodes->len; i++)
    n += !is_attribute_node (g_ptr_array_index (group->nodes, i));
  for (guint i = 0; i < group->children->len; i++)
    n += count_ops (g_ptr_array_index (group->children, i));
  return n;
}

/* The group a node inserted after producer joins: the producer's, unless
 * that holds the producer alone (a leaf module: nn.ReLU's Relu, a Conv2d's
 * Conv). The inserted op is no part of that module, and joining it would
 * turn a node drawn in its parent into a box of two. */
static GraftGroup *
inserted_group (GraftNode *producer, gboolean *in_parent)
{
  GraftGroup *group = producer != NULL ? producer->group : NULL;

  *in_parent = group != NULL && group->parent != NULL && count_ops (group) <= 1;
  return *in_parent ? group->parent : group;
}

/* A name for a node of op_type inserted after edge's producer, in the
 * scope of the group it joins as exporters name nodes
 * ("/layer1/layer1.0/conv1/Conv" → "/layer1/layer1.0/LeakyRelu", the
 * Conv being conv1's only op), else after that group
 * ("features.0/LeakyRelu"), else the op alone; never after the value
 * ("Conv_output_0/LeakyRelu"). */
static char *
inserted_name_hint (GraftValue *edge, const char *op_type, GraftGroup *group, gboolean in_parent)
{
  GraftNode *producer = edge->producer;
  const char *name = producer != NULL && producer->name != NULL ? producer->name : "";
  const char *slash = strrchr (name, '/');

  /* One scope up: the slash before the last. */
  while (in_parent && slash != NULL && slash > name && *--slash != '/')
    ;
  if (slash != NULL && *slash == '/')
    return g_strdup_printf ("%.*s%s", (int) (slash - name + 1), name, op_type);
  if (group != NULL && group->path[0] != '\0')
    return g_strdup_printf ("%s/%s", group->path, op_type);
  return g_strdup (op_type);
}

static gboolean
insert_node (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  GraftGraph *graph = scope->graph;
  GraftValue *edge = graft_edit_find_value (graph, graft_edit_param_string (params, "value"), error);
  const char *consumer_name = graft_edit_param_string (params, "consumer");
  GraftNode *consumer = NULL;
  g_autofree char *domain = NULL, *op_type = NULL, *name = NULL, *hint = NULL;
  GraftNode *node;
  GraftValue *out;
  GraftGroup *group;
  gboolean in_parent;

  if (edge == NULL || !graft_edit_split_op (graft_edit_param_string (params, "op"), &domain, &op_type, error))
    return FALSE;
  if (consumer_name != NULL && (consumer = graft_edit_find_node (graph, consumer_name, error)) == NULL)
    return FALSE;
  if (consumer != NULL && !g_ptr_array_find (edge->consumers, consumer, NULL))
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "'%s' does not read '%s'", consumer->name,
                   edge->name);
      return FALSE;
    }
  group = inserted_group (edge->producer, &in_parent);
  hint = inserted_name_hint (edge, op_type, group, in_parent);
  name = graft_edit_param_string (params, "name") ? g_strdup (graft_edit_param_string (params, "name"))
                                                  : graft_edit_unique_node_name (graph, hint);
  g_free (hint);
  hint = g_strdup_printf ("%s_output_0", name);
  if (graft_graph_find_node (graph, name) != NULL)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "a node is already named '%s'", name);
      return FALSE;
    }
  node = graft_graph_add_node (graph, domain, op_type, name);
  out = graft_graph_new_anonymous_value (graph, hint);
  graft_node_add_input (node, edge);
  if (!add_extra_inputs (scope, node, params, error))
    return FALSE;
  graft_node_add_output (node, out);
  if (!graft_edit_add_attributes (scope->model, node, params, error))
    return FALSE;
  if (consumer != NULL)
    {
      for (guint i = 0; i < consumer->inputs->len; i++)
        if (g_ptr_array_index (consumer->inputs, i) == edge)
          graft_node_set_input (consumer, i, out);
    }
  else
    {
      graft_node_set_input (node, 0, NULL);
      graft_graph_replace_uses (graph, edge, out);
      graft_node_set_input (node, 0, edge);
      /* The graph's interface keeps its names: the output is still called as before. */
      if (out->is_graph_output)
        swap_names (graph, edge, out);
    }
  if (group != NULL)
    {
      graft_graph_move_node_to_group (graph, node, group);
      graft_graph_update_group_counts (graph);
    }
  graft_edit_import_domain (scope, node, params, notes);
  if (!graft_edit_toposort (graph, error))
    return FALSE;
  g_ptr_array_add (notes, g_strdup_printf ("added '%s' (%s)", node->name, node->op));
  return check_op (scope, node, notes, error);
}

/* The outputs a new node of op gets when none are named: the ONNX
 * schema's required ones (at least one). */
static guint
default_output_count (GraftEditScope *scope, const char *domain, const char *op_type)
{
  const GraftOnnxSchema *schema =
    graft_onnx_schema_lookup (domain, op_type, graft_model_get_opset (scope->model, graft_canonical_domain (domain)));
  g_auto(GStrv) outputs = schema ? g_strsplit (schema->outputs, " ", -1) : NULL;
  guint n = 0;

  for (guint i = 0; outputs != NULL && outputs[i] != NULL; i++)
    n += *outputs[i] != '\0' && !g_str_has_suffix (outputs[i], "?");
  return MAX (n, 1);
}

static gboolean
add_node (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  GraftGraph *graph = scope->graph;
  g_autofree const char **output_names = graft_edit_param_strv (params, "outputs");
  g_autofree char *domain = NULL, *op_type = NULL, *name = NULL;
  gboolean graph_outputs = graft_edit_param_bool (params, "graph_outputs", TRUE);
  GraftNode *node;
  guint n_outputs;

  if (!graft_edit_split_op (graft_edit_param_string (params, "op"), &domain, &op_type, error))
    return FALSE;
  name = graft_edit_param_string (params, "name") ? g_strdup (graft_edit_param_string (params, "name"))
                                                  : graft_edit_unique_node_name (graph, op_type);
  if (*name == '\0' || graft_graph_find_node (graph, name) != NULL)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                   *name ? "a node is already named '%s'" : "a node needs a name", name);
      return FALSE;
    }
  n_outputs = output_names ? g_strv_length ((char **) output_names) : default_output_count (scope, domain, op_type);
  for (guint i = 0; output_names != NULL && output_names[i] != NULL; i++)
    if (*output_names[i] == '\0' || graft_graph_resolve_value (graph, output_names[i]) != NULL)
      {
        g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                     *output_names[i] ? "the graph already has a value '%s'" : "an output needs a name",
                     output_names[i]);
        return FALSE;
      }
  node = graft_graph_add_node (graph, domain, op_type, name);
  if (!add_extra_inputs (scope, node, params, error))
    return FALSE;
  for (guint i = 0; i < n_outputs; i++)
    {
      g_autofree char *hint = output_names ? g_strdup (output_names[i])
                              : n_outputs == 1 ? g_strdup (name) : g_strdup_printf ("%s.%u", name, i);
      GraftValue *out = graft_graph_new_anonymous_value (graph, hint);
      graft_node_add_output (node, out);
      if (graph_outputs)
        graft_graph_add_output (graph, out);
    }
  if (!graft_edit_add_attributes (scope->model, node, params, error))
    return FALSE;
  graft_edit_import_domain (scope, node, params, notes);
  if (!graft_edit_toposort (graph, error))
    return FALSE;
  g_ptr_array_add (notes, g_strdup_printf ("added '%s' (%s) reading %u values%s", node->name, node->op,
                                           node->inputs->len, graph_outputs ? ", its outputs are graph outputs" : ""));
  return check_op (scope, node, notes, error);
}

static gboolean
replace_op (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  GraftNode *node = graft_edit_find_node (scope->graph, graft_edit_param_string (params, "node"), error);
  g_autofree char *domain = NULL, *op_type = NULL;
  const char *before;

  if (node == NULL || !graft_edit_split_op (graft_edit_param_string (params, "op"), &domain, &op_type, error))
    return FALSE;
  before = node->op;
  set_op (node, domain, op_type);
  /* A plugin op usually takes the attributes of what it replaces; an ONNX
   * op has its own. */
  if (!graft_edit_param_bool (params, "keep_attributes", strcmp (node->domain, "onnx") != 0)
      && node->attributes->len > 0)
    {
      g_ptr_array_add (notes, g_strdup_printf ("dropped %u attributes of %s (set them with set-attribute)",
                                               node->attributes->len, before));
      g_ptr_array_set_size (node->attributes, 0);
    }
  g_ptr_array_add (notes, g_strdup_printf ("'%s': %s → %s", node->name, before, node->op));
  graft_edit_import_domain (scope, node, params, notes);
  return check_op (scope, node, notes, error);
}

/* The values that nodes read from outside the set, in first-use order. */
static void
collect_boundary (GraftGraph *graph, GHashTable *set, GPtrArray *inputs, GPtrArray *outputs)
{
  g_autoptr(GHashTable) seen = g_hash_table_new (NULL, NULL);

  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      if (!g_hash_table_contains (set, node))
        continue;
      for (guint j = 0; j < node->inputs->len; j++)
        {
          GraftValue *in = g_ptr_array_index (node->inputs, j);
          if (in != NULL && !(in->producer && g_hash_table_contains (set, in->producer)) && g_hash_table_add (seen, in))
            g_ptr_array_add (inputs, in);
        }
      for (guint j = 0; j < node->outputs->len; j++)
        {
          GraftValue *out = g_ptr_array_index (node->outputs, j);
          gboolean outside = out != NULL && out->is_graph_output;
          for (guint k = 0; out != NULL && k < out->consumers->len && !outside; k++)
            outside = !g_hash_table_contains (set, g_ptr_array_index (out->consumers, k));
          if (outside)
            g_ptr_array_add (outputs, out);
        }
    }
}

static gboolean
replace_nodes (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  GraftGraph *graph = scope->graph;
  g_autofree const char **names = graft_edit_param_strv (params, "nodes");
  g_autoptr(GHashTable) set = g_hash_table_new (NULL, NULL);
  g_autoptr(GPtrArray) inputs = g_ptr_array_new ();
  g_autoptr(GPtrArray) outputs = g_ptr_array_new ();
  g_autofree char *domain = NULL, *op_type = NULL, *name = NULL;
  GraftGroup *group = NULL;
  GraftNode *replacement;

  if (names == NULL || names[0] == NULL)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "replace-nodes needs the 'nodes' to replace");
      return FALSE;
    }
  if (!graft_edit_split_op (graft_edit_param_string (params, "op"), &domain, &op_type, error))
    return FALSE;
  for (guint i = 0; names[i] != NULL; i++)
    {
      GraftNode *node = graft_edit_find_node (graph, names[i], error);
      if (node == NULL)
        return FALSE;
      g_hash_table_add (set, node);
      group = group ? group : node->group;
    }
  collect_boundary (graph, set, inputs, outputs);
  if (outputs->len == 0)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "nothing outside the %u nodes reads what they compute",
                   g_hash_table_size (set));
      return FALSE;
    }
  name = g_strdup (graft_edit_param_string (params, "name") ? graft_edit_param_string (params, "name") : names[0]);
  graft_graph_remove_nodes_keeping_values (graph, set, outputs);
  replacement = graft_graph_add_node (graph, domain, op_type, name);
  for (guint i = 0; i < inputs->len; i++)
    graft_node_add_input (replacement, g_ptr_array_index (inputs, i));
  for (guint i = 0; i < outputs->len; i++)
    {
      GraftValue *out = g_ptr_array_index (outputs, i);
      graft_node_add_output (replacement, out);
    }
  graft_graph_move_node_to_group (graph, replacement, group);
  graft_graph_update_group_counts (graph);
  graft_graph_prune (graph);
  graft_edit_import_domain (scope, replacement, params, notes);
  if (!graft_edit_toposort (graph, error))
    return FALSE;
  g_ptr_array_add (notes, g_strdup_printf ("%u nodes → '%s' (%s) with %u inputs and %u outputs", g_hash_table_size (set),
                                           replacement->name, replacement->op, inputs->len, outputs->len));
  return check_op (scope, replacement, notes, error);
}

static char *
describe_insert (GVariant *params)
{
  return g_strdup_printf ("Insert %s after %s", graft_edit_param_string (params, "op"),
                          graft_edit_param_string (params, "value"));
}

static char *
describe_add (GVariant *params)
{
  return g_strdup_printf ("Add %s node", graft_edit_param_string (params, "op"));
}

static char *
describe_replace_op (GVariant *params)
{
  return g_strdup_printf ("Replace %s by %s", graft_edit_param_string (params, "node"),
                          graft_edit_param_string (params, "op"));
}

static char *
describe_replace_nodes (GVariant *params)
{
  g_autofree const char **names = graft_edit_param_strv (params, "nodes");

  return g_strdup_printf ("Replace %u nodes by %s", names ? g_strv_length ((char **) names) : 0,
                          graft_edit_param_string (params, "op"));
}

/* The node's op as replace-op reads it: "Relu", "com.example::MyPlugin". */
static char *
suggest_op (GraftGraph *graph, const char *target)
{
  GraftNode *node = graph != NULL ? graft_graph_find_node (graph, target) : NULL;

  if (node == NULL)
    return g_strdup ("");
  return g_strdup (strcmp (node->domain, "onnx") == 0 ? node->op_type : node->op);
}

const GraftEditOperation graft_edit_ops_node[] = {
  { .id = "insert-node", .node_params = "consumer", .value_params = "value inputs", .apply = insert_node,
    .describe = describe_insert,
    .option = "--insert", .argument = "VALUE=OP[(IN,...)][;ATTR=[TYPE:]V...]", .parse = graft_edit_parse_insert,
    .help = "insert OP on the edge VALUE (all its consumers); OP may be DOMAIN::OP; IN are extra inputs",
    .target = GRAFT_EDIT_TARGET_VALUE, .label = "_Insert Node…", .rank = 11, .dialog = "op-picker" },
  { .id = "add-node", .node_params = "", .value_params = "inputs", .apply = add_node, .describe = describe_add,
    .option = "--add-node", .argument = "[NAME=]OP(IN,...)[;ATTR=[TYPE:]V...]", .parse = graft_edit_parse_add_node,
    .help = "add a node reading the values IN ('' for an omitted input); its outputs become graph outputs",
    .target = GRAFT_EDIT_TARGET_GRAPH, .label = "_Add Node…", .rank = 10, .dialog = "op-picker" },
  { .id = "replace-op", .node_params = "node", .value_params = "", .apply = replace_op, .describe = describe_replace_op,
    .option = "--replace-op", .argument = "NODE=OP", .parse = graft_edit_parse_pair, .keys = "node op",
    .help = "give NODE another op, keeping its edges (and its attributes when OP is a custom-domain DOMAIN::OP)",
    .target = GRAFT_EDIT_TARGET_NODE, .label = "Replace _Op…", .rank = 11,
    .heading = "Replace Op",
    .body = "The node keeps its inputs and outputs. An op of a custom domain (“com.example::MyPlugin”) keeps its "
            "attributes too.",
    .apply_label = "_Replace", .suggest = suggest_op },
  { .id = "replace-nodes", .node_params = "nodes", .value_params = "", .apply = replace_nodes,
    .describe = describe_replace_nodes,
    .option = "--replace-nodes", .argument = "N1,N2,...=DOMAIN::OP", .parse = graft_edit_parse_replace_nodes,
    .help = "replace nodes by one (plugin) op taking their inputs and giving their outputs" },
  { NULL },
};
