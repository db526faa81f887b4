/* Which graph an operation edits: the main graph, a subgraph reached by a
 * path of NODE#ATTRIBUTE steps, or a local function's body. */
#include "edit/edit-private.h"
#include "edit/address.h"

#include <string.h>

static GraftGraph *
subgraph_of (GraftNode *node, const char *attribute_name, GError **error)
{
  GraftAttribute *attribute = graft_node_get_attribute (node, attribute_name);

  if (attribute != NULL && attribute->type == GRAFT_ATTR_GRAPH && attribute->g != NULL)
    return attribute->g;
  g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_NOT_FOUND, "node '%s' (%s) has no graph attribute '%s'",
               node->name, node->op, attribute_name);
  return NULL;
}

static GraftGraph *
resolve_path_string (GraftGraph *graph, const char *path, GVariantBuilder *recorded, GError **error)
{
  g_auto(GStrv) steps = g_strsplit (path, "#", -1);
  guint n = g_strv_length (steps);

  if (n % 2 != 0)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                   "subgraph path '%s' must be NODE#ATTRIBUTE steps (\"loop#body#if#then_branch\")", path);
      return NULL;
    }
  for (guint i = 0; i < n; i += 2)
    {
      GraftNode *node = graft_edit_find_node (graph, steps[i], error);
      if (node == NULL || (graph = subgraph_of (node, steps[i + 1], error)) == NULL)
        return NULL;
      if (recorded != NULL)
        g_variant_builder_add (recorded, "v", graft_edit_params_new ("node", graft_node_address_new (node),
                                                                      "attribute", g_variant_new_string (steps[i + 1]),
                                                                      NULL));
    }
  return graph;
}

/* A recorded path (av of {node: address, attribute}) back to "NODE#ATTR…". */
static char *
path_from_recorded (GraftGraph *graph, GVariant *steps, GError **error)
{
  g_autoptr(GString) path = g_string_new (NULL);

  for (gsize i = 0; i < g_variant_n_children (steps); i++)
    {
      g_autoptr(GVariant) boxed = g_variant_get_child_value (steps, i);
      g_autoptr(GVariant) step = g_variant_is_of_type (boxed, G_VARIANT_TYPE_VARIANT) ? g_variant_get_variant (boxed)
                                                                                        : g_variant_ref (boxed);
      g_autoptr(GVariant) address = g_variant_lookup_value (step, "node", G_VARIANT_TYPE_VARDICT);
      const char *name = graft_edit_param_string (step, "node");
      const char *attribute = graft_edit_param_string (step, "attribute");
      GraftNode *node;

      /* A hand-written path may name its nodes, as a step's targets may. */
      if ((address == NULL && name == NULL) || attribute == NULL)
        {
          g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID,
                       "step %" G_GSIZE_FORMAT " of the subgraph path has no node or attribute", i + 1);
          return NULL;
        }
      node = address ? graft_node_address_resolve (graph, address, error) : graft_edit_find_node (graph, name, error);
      if (node == NULL || (graph = subgraph_of (node, attribute, error)) == NULL)
        return NULL;
      g_string_append_printf (path, "%s%s#%s", path->len ? "#" : "", node->name, attribute);
    }
  return g_strdup (path->str);
}

char *
graft_edit_scope_path_from_recorded (GraftModel *model, GVariant *recorded, GError **error)
{
  return path_from_recorded (graft_model_get_graph (model), recorded, error);
}

/* A scope given as anything but a name would otherwise read as absent,
 * and the edit would land on the top-level graph. */
static gboolean
scope_key_is_string (GVariant *params, const char *key, GError **error)
{
  g_autoptr(GVariant) value = params ? g_variant_lookup_value (params, key, NULL) : NULL;

  if (value == NULL || g_variant_is_of_type (value, G_VARIANT_TYPE_STRING))
    return TRUE;
  g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "'%s' must be a name, not %s", key,
               g_variant_is_of_type (value, G_VARIANT_TYPE_VARDICT) ? "an object"
               : g_variant_is_of_type (value, G_VARIANT_TYPE_ARRAY) ? "a list"
               : g_variant_is_of_type (value, G_VARIANT_TYPE_BOOLEAN) ? "true or false"
                                                                      : "a number");
  return FALSE;
}

gboolean
graft_edit_scope_resolve (GraftModel *model, GVariant *params, GraftEditScope *scope, GVariant **recorded_path,
                          GError **error)
{
  const char *function_name = graft_edit_param_string (params, "function");
  const char *path = graft_edit_param_string (params, "graph");
  GVariantBuilder recorded;

  if (!scope_key_is_string (params, "function", error) || !scope_key_is_string (params, "graph", error))
    return FALSE;
  scope->model = model;
  scope->function = NULL;
  scope->graph = graft_model_get_graph (model);
  if (function_name != NULL)
    {
      GPtrArray *functions = graft_model_get_functions (model);
      for (guint i = 0; i < functions->len && scope->function == NULL; i++)
        {
          GraftFunction *function = g_ptr_array_index (functions, i);
          if (strcmp (function->name, function_name) == 0)
            scope->function = function;
        }
      if (scope->function == NULL)
        {
          g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_NOT_FOUND, "the model has no local function '%s'",
                       function_name);
          return FALSE;
        }
      scope->graph = scope->function->body;
    }
  if (scope->graph == NULL)
    {
      g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "the model has no graph to edit");
      return FALSE;
    }
  if (path == NULL || *path == '\0')
    {
      if (recorded_path)
        *recorded_path = NULL;
      return TRUE;
    }
  g_variant_builder_init (&recorded, G_VARIANT_TYPE ("av"));
  scope->graph = resolve_path_string (scope->graph, path, &recorded, error);
  if (scope->graph == NULL)
    {
      g_variant_builder_clear (&recorded);
      return FALSE;
    }
  if (recorded_path)
    *recorded_path = g_variant_ref_sink (g_variant_builder_end (&recorded));
  else
    g_variant_builder_clear (&recorded);
  return TRUE;
}

char *
graft_edit_unique_node_name (GraftGraph *graph, const char *hint)
{
  g_autoptr(GHashTable) names = g_hash_table_new (g_str_hash, g_str_equal);
  char *name = g_strdup (hint);

  for (guint i = 0; i < graph->nodes->len; i++)
    g_hash_table_add (names, ((GraftNode *) g_ptr_array_index (graph->nodes, i))->name);
  for (guint n = 1; g_hash_table_contains (names, name); n++)
    {
      g_free (name);
      name = g_strdup_printf ("%s_%u", hint, n);
    }
  return name;
}

char *
graft_edit_describe_graph (GraftGraph *graph)
{
  g_autoptr(GString) path = g_string_new (NULL);

  for (; graph->parent_node != NULL; graph = graph->parent_graph)
    {
      const char *attribute = "";
      for (guint i = 0; i < graph->parent_node->attributes->len; i++)
        {
          GraftAttribute *candidate = g_ptr_array_index (graph->parent_node->attributes, i);
          if (candidate->g == graph || (candidate->graphs && g_ptr_array_find (candidate->graphs, graph, NULL)))
            attribute = candidate->name;
        }
      g_string_prepend (path, attribute);
      g_string_prepend_c (path, '#');
      g_string_prepend (path, graph->parent_node->name);
      if (graph->parent_graph->parent_node != NULL)
        g_string_prepend_c (path, '#');
    }
  return path->len ? g_string_free (g_steal_pointer (&path), FALSE) : g_strdup ("the graph");
}
