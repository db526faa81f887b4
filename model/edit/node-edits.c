/* Delete, bypass and extract: edits of the graph's structure. */
#include "edit/edit-private.h"
#include "ir/graph-surgery.h"
#include "analysis/shape-inference.h"

#include <string.h>

static void
collect_dependents (GraftNode *node, GHashTable *doomed)
{
  if (!g_hash_table_add (doomed, node))
    return;
  for (guint i = 0; i < node->outputs->len; i++)
    {
      GraftValue *out = g_ptr_array_index (node->outputs, i);
      for (guint j = 0; out != NULL && j < out->consumers->len; j++)
        {
          GraftNode *consumer = g_ptr_array_index (out->consumers, j);
          /* A use inside a subgraph takes its whole owning node along. */
          while (consumer->graph != node->graph && consumer->graph->parent_node != NULL)
            consumer = consumer->graph->parent_node;
          if (consumer->graph == node->graph)
            collect_dependents (consumer, doomed);
        }
    }
}

static void
drop_graph_outputs_of (GraftGraph *graph, GraftNode *node)
{
  for (guint i = graph->outputs->len; i > 0; i--)
    {
      GraftValue *out = g_ptr_array_index (graph->outputs, i - 1);
      if (out->producer == node)
        {
          out->is_graph_output = FALSE;
          g_ptr_array_remove_index (graph->outputs, i - 1);
        }
    }
}

static gboolean
delete_node (GraftModel *model, const char *name, GPtrArray *notes, GError **error)
{
  GraftGraph *graph = graft_model_get_graph (model);
  GraftNode *node = graft_edit_find_node (graph, name, error);
  g_autoptr(GHashTable) doomed = NULL;
  g_autoptr(GPtrArray) order = g_ptr_array_new ();
  guint outputs_before = graph->outputs->len;

  if (node == NULL)
    return FALSE;
  doomed = g_hash_table_new (NULL, NULL);
  collect_dependents (node, doomed);
  for (guint i = 0; i < graph->nodes->len; i++)
    if (g_hash_table_contains (doomed, g_ptr_array_index (graph->nodes, i)))
      g_ptr_array_add (order, g_ptr_array_index (graph->nodes, i));
  for (guint i = 0; i < order->len; i++)
    drop_graph_outputs_of (graph, g_ptr_array_index (order, i));
  if (graph->outputs->len == 0)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                   "deleting '%s' would remove every graph output (%u nodes depend on it); to take it out and keep "
                   "what follows, Bypass it (its readers then read its input), or Extract the part you want",
                   name, order->len);
      return FALSE;
    }
  for (guint i = order->len; i > 0; i--)
    graft_graph_remove_node (graph, g_ptr_array_index (order, i - 1));
  graft_graph_prune (graph);
  if (order->len > 1)
    g_ptr_array_add (notes, g_strdup_printf ("removed %u nodes that depend on '%s'", order->len - 1, name));
  if (graph->outputs->len != outputs_before)
    g_ptr_array_add (notes, g_strdup_printf ("removed %u graph outputs", outputs_before - graph->outputs->len));
  return TRUE;
}

static gboolean
bypass_node (GraftModel *model, const char *name, GPtrArray *notes, GError **error)
{
  GraftGraph *graph = graft_model_get_graph (model);
  GraftNode *node = graft_edit_find_node (graph, name, error);
  GraftValue *in, *out;
  g_autofree char *in_shape = NULL, *out_shape = NULL;
  g_autoptr(GraftInference) inference = NULL;

  if (node == NULL)
    return FALSE;
  in = node->inputs->len > 0 ? g_ptr_array_index (node->inputs, 0) : NULL;
  out = node->outputs->len > 0 ? g_ptr_array_index (node->outputs, 0) : NULL;
  if (in == NULL || out == NULL)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                   "'%s' (%s) has no first input or output to connect", name, node->op);
      return FALSE;
    }
  for (guint i = 1; i < node->outputs->len; i++)
    {
      GraftValue *other = g_ptr_array_index (node->outputs, i);
      if (other != NULL && (other->consumers->len > 0 || other->is_graph_output))
        {
          g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                       "'%s' (%s): its output '%s' is used too, and only the first output can be bypassed", name,
                       node->op, other->name);
          return FALSE;
        }
    }
  if (out->is_graph_output && (in->is_graph_input || in->initializer != NULL))
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                   "bypassing '%s' would make the graph input '%s' a graph output directly", name, in->name);
      return FALSE;
    }

  inference = graft_shape_inference_run (model, NULL);
  in_shape = graft_shape_to_string (graft_value_get_best_shape (in, inference) ? graft_value_get_best_shape (in, inference)
                                                                                : &in->shape);
  out_shape = graft_shape_to_string (graft_value_get_best_shape (out, inference)
                                     ? graft_value_get_best_shape (out, inference) : &out->shape);
  if (strcmp (in_shape, out_shape) != 0)
    g_ptr_array_add (notes, g_strdup_printf ("'%s' changed the shape %s → %s: its consumers now get %s", name,
                                             in_shape, out_shape, in_shape));

  if (out->is_graph_output)
    {
      /* Keep the graph output's name: the producer of in now writes it. */
      GraftNode *producer = in->producer;
      graft_graph_replace_uses (graph, in, out);
      graft_graph_remove_node (graph, node);
      out->producer = producer;
      out->producer_index = in->producer_index;
      producer->outputs->pdata[in->producer_index] = out;
      in->producer = NULL;
      graft_graph_remove_value (graph, in);
    }
  else
    {
      graft_graph_replace_uses (graph, out, in);
      graft_graph_remove_node (graph, node);
    }
  graft_graph_prune (graph);
  return TRUE;
}

static gboolean
lookup_all (GraftGraph *graph, const char *const *names, GPtrArray *values, const char *what, GError **error)
{
  for (guint i = 0; names[i] != NULL; i++)
    {
      GraftValue *value = graft_graph_lookup_value (graph, names[i]);
      if (value == NULL)
        {
          g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_NOT_FOUND, "the graph has no value '%s' to use as %s",
                       names[i], what);
          return FALSE;
        }
      g_ptr_array_add (values, value);
    }
  if (values->len == 0)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "an extract needs at least one %s", what);
      return FALSE;
    }
  return TRUE;
}

/* Marks the nodes needed for value, stopping at the new inputs. */
static gboolean
collect_needed (GraftValue *value, GHashTable *inputs, GHashTable *needed, GError **error)
{
  GraftNode *producer = value->producer;

  if (g_hash_table_contains (inputs, value) || value->initializer != NULL)
    return TRUE;
  if (producer == NULL)
    {
      if (value->is_graph_input)
        {
          g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                       "the outputs depend on the graph input '%s', which is not among the extract inputs",
                       value->name);
          return FALSE;
        }
      return TRUE;
    }
  if (!g_hash_table_add (needed, producer))
    return TRUE;
  for (guint i = 0; i < producer->inputs->len; i++)
    {
      GraftValue *in = g_ptr_array_index (producer->inputs, i);
      if (in != NULL && in->graph == producer->graph && !collect_needed (in, inputs, needed, error))
        return FALSE;
    }
  return TRUE;
}

/* The new graph's inputs and outputs need a type in the file: what
 * inference found becomes their declaration (an explicit step of the
 * edit, not a side effect of the inference). */
static void
declare_type (GraftValue *value, GraftInference *inference)
{
  GraftDType dtype;
  const GraftShape *shape;

  if (!graft_inference_lookup (inference, value, &dtype, &shape))
    return;
  if (value->dtype == GRAFT_DTYPE_UNDEFINED)
    value->dtype = dtype;
  if (value->shape.rank < 0)
    graft_shape_copy (&value->shape, shape);
}

static gboolean
extract (GraftModel *model, const char *const *input_names, const char *const *output_names,
         GPtrArray *notes, GError **error)
{
  g_autoptr(GraftInference) inference = NULL;
  GraftGraph *graph = graft_model_get_graph (model);
  g_autoptr(GPtrArray) inputs = g_ptr_array_new ();
  g_autoptr(GPtrArray) outputs = g_ptr_array_new ();
  g_autoptr(GHashTable) input_set = g_hash_table_new (NULL, NULL);
  g_autoptr(GHashTable) needed = g_hash_table_new (NULL, NULL);
  guint before = graph->nodes->len;

  if (!lookup_all (graph, input_names, inputs, "input", error) || !lookup_all (graph, output_names, outputs, "output", error))
    return FALSE;
  for (guint i = 0; i < inputs->len; i++)
    g_hash_table_add (input_set, g_ptr_array_index (inputs, i));
  for (guint i = 0; i < outputs->len; i++)
    if (!collect_needed (g_ptr_array_index (outputs, i), input_set, needed, error))
      return FALSE;

  inference = graft_shape_inference_run (model, NULL);
  for (guint i = 0; i < graph->inputs->len; i++)
    ((GraftValue *) g_ptr_array_index (graph->inputs, i))->is_graph_input = FALSE;
  for (guint i = 0; i < graph->outputs->len; i++)
    ((GraftValue *) g_ptr_array_index (graph->outputs, i))->is_graph_output = FALSE;
  /* Initializers that ONNX lists as inputs stay inputs. */
  g_ptr_array_set_size (graph->outputs, 0);
  {
    g_autoptr(GPtrArray) kept = g_ptr_array_new ();
    for (guint i = 0; i < inputs->len; i++)
      g_ptr_array_add (kept, g_ptr_array_index (inputs, i));
    for (guint i = 0; i < graph->inputs->len; i++)
      {
        GraftValue *old = g_ptr_array_index (graph->inputs, i);
        if (old->initializer != NULL && !g_hash_table_contains (input_set, old))
          g_ptr_array_add (kept, old);
      }
    g_ptr_array_set_size (graph->inputs, 0);
    for (guint i = 0; i < kept->len; i++)
      graft_graph_add_input (graph, g_ptr_array_index (kept, i));
  }
  for (guint i = 0; i < outputs->len; i++)
    graft_graph_add_output (graph, g_ptr_array_index (outputs, i));

  for (guint i = graph->nodes->len; i > 0; i--)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i - 1);
      if (!g_hash_table_contains (needed, node))
        graft_graph_remove_node (graph, node);
    }
  for (guint i = 0; i < inputs->len; i++)
    {
      GraftValue *input = g_ptr_array_index (inputs, i);
      input->producer = NULL;
      declare_type (input, inference);
    }
  for (guint i = 0; i < outputs->len; i++)
    declare_type (g_ptr_array_index (outputs, i), inference);
  graft_graph_prune (graph);
  g_ptr_array_add (notes, g_strdup_printf ("kept %u of %u nodes", graph->nodes->len, before));
  return TRUE;
}

static gboolean
delete_node_op (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  return delete_node (scope->model, graft_edit_param_string (params, "node"), notes, error);
}

static gboolean
bypass_node_op (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  return bypass_node (scope->model, graft_edit_param_string (params, "node"), notes, error);
}

static gboolean
extract_op (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  g_autofree const char **inputs = graft_edit_param_strv (params, "inputs");
  g_autofree const char **outputs = graft_edit_param_strv (params, "outputs");

  return extract (scope->model, inputs, outputs, notes, error);
}

static char *
describe_delete (GVariant *params)
{
  return g_strdup_printf ("Delete %s", graft_edit_param_string (params, "node"));
}

static char *
describe_bypass (GVariant *params)
{
  return g_strdup_printf ("Bypass %s", graft_edit_param_string (params, "node"));
}

static char *
describe_extract (GVariant *params)
{
  g_autofree const char **inputs = graft_edit_param_strv (params, "inputs");
  g_autofree const char **outputs = graft_edit_param_strv (params, "outputs");
  g_autofree char *in = g_strjoinv (", ", (char **) inputs);
  g_autofree char *out = g_strjoinv (", ", (char **) outputs);

  return g_strdup_printf ("Extract %s → %s", in, out);
}

const GraftEditOperation graft_edit_ops_structure[] = {
  { .id = "bypass-node", .node_params = "node", .value_params = "", .apply = bypass_node_op,
    .describe = describe_bypass, .required = "node:s", .flags = GRAFT_EDIT_MAIN_GRAPH,
    .option = "--bypass", .argument = "NODE", .parse = graft_edit_parse_name, .keys = "node",
    .help = "connect NODE's input to its consumers and remove it",
    .target = GRAFT_EDIT_TARGET_NODE, .label = "_Bypass", .when = GRAFT_EDIT_WHEN_MAIN_GRAPH, .rank = 20 },
  { .id = "delete-node", .node_params = "node", .value_params = "", .apply = delete_node_op,
    .describe = describe_delete, .required = "node:s", .flags = GRAFT_EDIT_MAIN_GRAPH,
    .option = "--delete", .argument = "NODE", .parse = graft_edit_parse_name, .keys = "node",
    .help = "remove NODE and everything depending on it",
    .target = GRAFT_EDIT_TARGET_NODE, .label = "_Delete", .when = GRAFT_EDIT_WHEN_MAIN_GRAPH, .rank = 21 },
  { .id = "extract", .node_params = "", .value_params = "inputs outputs", .apply = extract_op,
    .describe = describe_extract, .required = "inputs:as outputs:as", .flags = GRAFT_EDIT_MAIN_GRAPH,
    .option = "--extract", .argument = "IN,..:OUT,..", .parse = graft_edit_parse_extract,
    .help = "keep the part computing OUTs from INs",
    .target = GRAFT_EDIT_TARGET_NODE, .label = "E_xtract This Node", .when = GRAFT_EDIT_WHEN_MAIN_GRAPH, .rank = 22 },
  { NULL },
};
