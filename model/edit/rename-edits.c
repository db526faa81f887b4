/* Renaming nodes and values. Edges are pointers in the IR, so consumers,
 * graph outputs and value_info follow a renamed value by themselves; only
 * the name tables need care. */
#include "edit/edit-private.h"
#include "ir/graph-surgery.h"

#include <string.h>

static gboolean
check_new_name (const char *to, GError **error)
{
  if (to == NULL || *to == '\0')
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "a new name must not be empty");
      return FALSE;
    }
  return TRUE;
}

static gboolean
rename_node (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  const char *to = graft_edit_param_string (params, "to");
  GraftNode *node = graft_edit_find_node (scope->graph, graft_edit_param_string (params, "node"), error);

  if (node == NULL || !check_new_name (to, error))
    return FALSE;
  for (guint i = 0; i < scope->graph->nodes->len; i++)
    if (g_ptr_array_index (scope->graph->nodes, i) != node
        && strcmp (((GraftNode *) g_ptr_array_index (scope->graph->nodes, i))->name, to) == 0)
      {
        g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "another node is already named '%s'", to);
        return FALSE;
      }
  g_free (node->name);
  node->name = g_strdup (to);
  return TRUE;
}

/* ONNX names are unique over a graph and every graph nested in it or
 * enclosing it (a subgraph reads outer values by name). */
static gboolean
name_is_taken (GraftGraph *graph, const char *name)
{
  for (GraftGraph *g = graph; g != NULL; g = g->parent_graph)
    if (graft_graph_lookup_value (g, name) != NULL)
      return TRUE;
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      g_autoptr(GPtrArray) subgraphs = graft_node_get_subgraphs (g_ptr_array_index (graph->nodes, i));
      for (guint j = 0; j < subgraphs->len; j++)
        if (graft_graph_lookup_value (g_ptr_array_index (subgraphs, j), name) != NULL)
          return TRUE;
    }
  return FALSE;
}

static gboolean
rename_value (GraftEditScope *scope, GVariant *params, GPtrArray *notes, GError **error)
{
  const char *to = graft_edit_param_string (params, "to");
  GraftValue *value = graft_edit_find_value (scope->graph, graft_edit_param_string (params, "value"), error);

  if (value == NULL || !check_new_name (to, error))
    return FALSE;
  if (name_is_taken (scope->graph, to))
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "the name '%s' is already used by another value",
                   to);
      return FALSE;
    }
  graft_graph_rename_value (scope->graph, value, to);
  if (value->is_graph_input || value->is_graph_output)
    g_ptr_array_add (notes, g_strdup_printf ("the graph %s is now called '%s'",
                                             value->is_graph_input ? "input" : "output", to));
  return TRUE;
}

static char *
describe_rename_node (GVariant *params)
{
  return g_strdup_printf ("Rename node %s → %s", graft_edit_param_string (params, "node"),
                          graft_edit_param_string (params, "to"));
}

static char *
describe_rename_value (GVariant *params)
{
  return g_strdup_printf ("Rename value %s → %s", graft_edit_param_string (params, "value"),
                          graft_edit_param_string (params, "to"));
}

static char *
suggest_node_name (GraftGraph *graph, const char *target)
{
  return g_strdup (target);
}

const GraftEditOperation graft_edit_ops_rename[] = {
  { .id = "rename-node", .node_params = "node", .value_params = "", .apply = rename_node,
    .describe = describe_rename_node,
    .option = "--rename-node", .argument = "OLD=NEW", .parse = graft_edit_parse_pair, .keys = "node to",
    .help = "rename a node",
    .target = GRAFT_EDIT_TARGET_NODE, .label = "_Rename…", .rank = 10,
    .heading = "Rename Node", .apply_label = "_Rename", .suggest = suggest_node_name },
  { .id = "rename-value", .node_params = "", .value_params = "value", .apply = rename_value,
    .describe = describe_rename_value,
    .option = "--rename-value", .argument = "OLD=NEW", .parse = graft_edit_parse_pair, .keys = "value to",
    .help = "rename a value (consumers and outputs follow)" },
  { NULL },
};
