/* Graph inputs and outputs: mark any value as an output (the usual way to
 * look at an intermediate), drop an output, cut the graph at a value that
 * becomes an input, add a new input, remove an unused one. */
#include "edit/edit-private.h"
#include "ir/graph-surgery.h"

#include <string.h>

/* Gives value the type inference knows, so that the file declares it. */
static gboolean
declare_type (GraftEditScope *scope, GraftValue *value, GError **error)
{
  g_autoptr(GraftInference) inference = NULL;
  GraftDType dtype;
  const GraftShape *shape;

  if (value->dtype != GRAFT_DTYPE_UNDEFINED && value->shape.rank >= 0)
    return TRUE;
  inference = graft_edit_infer (scope->model);
  if (!graft_edit_value_type (inference, value, &dtype, &shape))
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                   "the type of '%s' is unknown (neither declared nor inferred)", value->name);
      return FALSE;
    }
  value->dtype = dtype;
  if (value->shape.rank < 0 && shape != NULL && shape != &value->shape)
    graft_shape_copy (&value->shape, shape);
  return TRUE;
}

static gboolean
add_output (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  GraftValue *value = graft_edit_find_value (scope->graph, graft_edit_param_string (params, "value"), error);

  if (value == NULL)
    return FALSE;
  if (value->is_graph_output)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "'%s' is already a graph output", value->name);
      return FALSE;
    }
  if (!declare_type (scope, value, error))
    return FALSE;
  graft_graph_add_output (scope->graph, value);
  if (scope->graph->parent_node != NULL)
    g_ptr_array_add (notes, g_strdup_printf ("'%s' (%s) now has one more subgraph output: its op must accept it",
                                             scope->graph->parent_node->name, scope->graph->parent_node->op));
  return TRUE;
}

static gboolean
remove_output (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  GraftValue *value = graft_edit_find_value (scope->graph, graft_edit_param_string (params, "value"), error);
  guint removed;

  if (value == NULL)
    return FALSE;
  if (!value->is_graph_output)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "'%s' is not a graph output", value->name);
      return FALSE;
    }
  if (scope->graph->outputs->len == 1)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "'%s' is the only graph output", value->name);
      return FALSE;
    }
  g_ptr_array_remove (scope->graph->outputs, value);
  value->is_graph_output = FALSE;
  /* value may go with the nodes: the note names it from the parameters. */
  if ((removed = graft_graph_prune (scope->graph)) > 0)
    g_ptr_array_add (notes, g_strdup_printf ("removed %u nodes that only computed '%s'", removed,
                                             graft_edit_param_string (params, "value")));
  return TRUE;
}

/* "1x3xbatchx224" → shape; symbols for non-numbers, "?" unknown. */
static gboolean
parse_shape (const char *text, GraftShape *shape, GError **error)
{
  g_auto(GStrv) parts = NULL;

  if (text == NULL || strcmp (text, "scalar") == 0 || *text == '\0')
    {
      graft_shape_init (shape, 0);
      return TRUE;
    }
  parts = g_strsplit (text, "x", -1);
  graft_shape_init (shape, g_strv_length (parts));
  for (int i = 0; i < shape->rank; i++)
    {
      guint64 size;
      if (g_ascii_string_to_unsigned (parts[i], 10, 0, G_MAXINT64, &size, NULL))
        shape->dims[i] = graft_dim_fixed (size);
      else if (strcmp (parts[i], "?") == 0)
        shape->dims[i] = graft_dim_unknown ();
      else if (g_ascii_isalpha (parts[i][0]) || parts[i][0] == '_')
        shape->dims[i] = graft_dim_symbolic (g_intern_string (parts[i]));
      else
        {
          g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                       "dim %d of shape '%s' is neither a size, a name nor '?'", i, text);
          graft_shape_clear (shape);
          return FALSE;
        }
    }
  return TRUE;
}

static gboolean
add_input (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  const char *name = graft_edit_param_string (params, "value");
  const char *dtype_name = graft_edit_param_string (params, "dtype");
  GraftValue *value = name ? graft_graph_lookup_value (scope->graph, name) : NULL;
  GraftNode *producer;

  if (name == NULL || *name == '\0')
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "add-input needs a 'value' name");
      return FALSE;
    }
  if (value == NULL)
    {
      GraftDType dtype = dtype_name ? graft_dtype_from_string (dtype_name) : GRAFT_DTYPE_UNDEFINED;
      if (dtype == GRAFT_DTYPE_UNDEFINED)
        {
          g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                       "a new input '%s' needs a dtype (float32, int64…)", name);
          return FALSE;
        }
      value = graft_graph_ensure_value (scope->graph, name);
      value->dtype = dtype;
      if (!parse_shape (graft_edit_param_string (params, "shape"), &value->shape, error))
        return FALSE;
      graft_graph_add_input (scope->graph, value);
      g_ptr_array_add (notes, g_strdup_printf ("nothing reads '%s' yet", name));
      return TRUE;
    }
  if (value->is_graph_input)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "'%s' is already a graph input", name);
      return FALSE;
    }
  if (value->initializer != NULL || (producer = value->producer) == NULL)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                   "'%s' is constant data, not a value computed by a node", name);
      return FALSE;
    }
  if (!declare_type (scope, value, error))
    return FALSE;
  /* The producer keeps a placeholder output; what only fed this value goes. */
  {
    GraftValue *placeholder = graft_graph_new_anonymous_value (scope->graph, name);
    producer->outputs->pdata[value->producer_index] = placeholder;
    placeholder->producer = producer;
    placeholder->producer_index = value->producer_index;
    value->producer = NULL;
  }
  graft_graph_add_input (scope->graph, value);
  {
    guint removed = graft_graph_prune (scope->graph);
    g_ptr_array_add (notes, g_strdup_printf ("'%s' is now fed from outside%s", name,
                                             removed ? "; the nodes that only computed it are removed" : ""));
  }
  return TRUE;
}

static gboolean
remove_input (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  GraftValue *value = graft_edit_find_value (scope->graph, graft_edit_param_string (params, "value"), error);

  if (value == NULL)
    return FALSE;
  if (!value->is_graph_input)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "'%s' is not a graph input", value->name);
      return FALSE;
    }
  if (value->consumers->len > 0 || value->is_graph_output)
    {
      GraftNode *first = value->consumers->len ? g_ptr_array_index (value->consumers, 0) : NULL;
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_BLOCKED, "input '%s' is still used (%s%s%s)", value->name,
                   first ? "by '" : "as a graph output", first ? first->name : "", first ? "'" : "");
      return FALSE;
    }
  value->is_graph_input = FALSE;
  g_ptr_array_remove (scope->graph->inputs, value);
  graft_graph_prune (scope->graph);
  return TRUE;
}

static char *
describe_value_op (const char *verb, GVariant *params)
{
  return g_strdup_printf ("%s %s", verb, graft_edit_param_string (params, "value"));
}

static char *
describe_add_output (GVariant *params)
{
  return describe_value_op ("Mark as output:", params);
}

static char *
describe_remove_output (GVariant *params)
{
  return describe_value_op ("Remove output", params);
}

static char *
describe_add_input (GVariant *params)
{
  return describe_value_op ("Add input", params);
}

static char *
describe_remove_input (GVariant *params)
{
  return describe_value_op ("Remove input", params);
}

/* add-input's value may be a new name: it is not looked up when recorded. */
const GraftEditOperation graft_edit_ops_io[] = {
  { .id = "add-output", .node_params = "", .value_params = "value", .apply = add_output,
    .describe = describe_add_output,
    .option = "--add-output", .argument = "VALUE", .parse = graft_edit_parse_name, .keys = "value",
    .help = "mark a value as a graph output",
    .target = GRAFT_EDIT_TARGET_VALUE, .label = "Mark as Graph _Output", .label_each = "Mark “%s” as Graph Output",
    .when = GRAFT_EDIT_WHEN_NOT_OUTPUT | GRAFT_EDIT_WHEN_ON_PRODUCER, .rank = 10 },
  { .id = "remove-output", .node_params = "", .value_params = "value", .apply = remove_output,
    .describe = describe_remove_output,
    .option = "--remove-output", .argument = "VALUE", .parse = graft_edit_parse_name, .keys = "value",
    .help = "drop a graph output (and what only it needed)",
    .target = GRAFT_EDIT_TARGET_VALUE, .label = "Remove Graph _Output", .when = GRAFT_EDIT_WHEN_OUTPUT, .rank = 10 },
  { .id = "add-input", .node_params = "", .value_params = "", .apply = add_input, .describe = describe_add_input,
    .option = "--add-input", .argument = "VALUE[=DTYPE[:SHAPE]]", .parse = graft_edit_parse_add_input,
    .help = "cut the graph at VALUE, or add a new input (SHAPE like 1xbatchx224; '?' unknown)",
    .target = GRAFT_EDIT_TARGET_VALUE, .label = "_Cut Here (Make It an Input)", .when = GRAFT_EDIT_WHEN_COMPUTED,
    .rank = 12 },
  { .id = "remove-input", .node_params = "", .value_params = "value", .apply = remove_input,
    .describe = describe_remove_input,
    .option = "--remove-input", .argument = "NAME", .parse = graft_edit_parse_name, .keys = "value",
    .help = "remove an unused graph input" },
  { NULL },
};
