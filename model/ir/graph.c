#include "ir/graph.h"
#include "ir/fixed-branch.h"
#include "ir/torch-scopes.h"

#include <string.h>

static void
value_free (GraftValue *value)
{
  g_free (value->name);
  g_free (value->type_string);
  g_free (value->doc_string);
  g_free (value->writes_back_to);
  g_clear_pointer (&value->onnx_type, g_bytes_unref);
  g_clear_pointer (&value->onnx_kept_fields, g_bytes_unref);
  g_clear_pointer (&value->exported_json, g_bytes_unref);
  graft_shape_clear (&value->shape);
  g_ptr_array_unref (value->consumers);
  g_clear_pointer (&value->initializer, graft_tensor_unref);
  g_free (value);
}

static void
node_free (GraftNode *node)
{
  g_free (node->name);
  g_free (node->doc_string);
  g_clear_pointer (&node->onnx_kept_fields, g_bytes_unref);
  g_clear_pointer (&node->exported_json, g_bytes_unref);
  g_free (node->source_range);
  g_free (node->python_source);
  g_clear_pointer (&node->metadata_keys, g_ptr_array_unref);
  g_clear_pointer (&node->input_argument_names, g_ptr_array_unref);
  g_clear_pointer (&node->attribute_argument_names, g_hash_table_unref);
  g_clear_pointer (&node->metadata_values, g_ptr_array_unref);
  g_ptr_array_unref (node->inputs);
  g_ptr_array_unref (node->outputs);
  g_ptr_array_unref (node->attributes);
  g_free (node);
}

GraftGraph *
graft_graph_new (const char *name)
{
  GraftGraph *graph = g_new0 (GraftGraph, 1);

  graph->name = g_strdup (name ? name : "");
  graph->nodes = g_ptr_array_new_with_free_func ((GDestroyNotify) node_free);
  graph->inputs = g_ptr_array_new ();
  graph->outputs = g_ptr_array_new ();
  graph->values = g_ptr_array_new_with_free_func ((GDestroyNotify) value_free);
  graph->value_by_name = g_hash_table_new (g_str_hash, g_str_equal);
  graph->initializers = g_ptr_array_new ();
  graph->root_group = graft_group_new_root ();
  return graph;
}

void
graft_graph_free (GraftGraph *graph)
{
  if (graph == NULL)
    return;
  /* Nodes first: their attributes own subgraphs that point at our values. */
  g_ptr_array_unref (graph->nodes);
  g_ptr_array_unref (graph->inputs);
  g_ptr_array_unref (graph->outputs);
  g_ptr_array_unref (graph->initializers);
  g_hash_table_unref (graph->value_by_name);
  g_ptr_array_unref (graph->values);
  graft_group_free (graph->root_group);
  g_free (graph->name);
  g_free (graph->doc_string);
  g_clear_pointer (&graph->onnx_kept_fields, g_bytes_unref);
  g_clear_pointer (&graph->onnx_unbound_value_info, g_array_unref);
  g_free (graph);
}

GraftValue *
graft_graph_lookup_value (GraftGraph *graph, const char *name)
{
  return g_hash_table_lookup (graph->value_by_name, name);
}

GraftValue *
graft_graph_resolve_value (GraftGraph *graph, const char *name)
{
  for (; graph; graph = graph->parent_graph)
    {
      GraftValue *value = graft_graph_lookup_value (graph, name);
      if (value)
        return value;
    }
  return NULL;
}

static GraftValue *
value_new (GraftGraph *graph, const char *name)
{
  GraftValue *value = g_new0 (GraftValue, 1);

  value->name = g_strdup (name);
  value->graph = graph;
  value->shape = GRAFT_SHAPE_UNKNOWN;
  value->consumers = g_ptr_array_new ();
  g_ptr_array_add (graph->values, value);
  g_hash_table_insert (graph->value_by_name, value->name, value);
  return value;
}

GraftValue *
graft_graph_ensure_value (GraftGraph *graph, const char *name)
{
  GraftValue *value = graft_graph_lookup_value (graph, name);

  return value ? value : value_new (graph, name);
}

GraftValue *
graft_graph_new_anonymous_value (GraftGraph *graph, const char *hint)
{
  g_autofree char *name = NULL;

  if (hint == NULL || *hint == '\0')
    hint = "v";
  if (graft_graph_lookup_value (graph, hint) == NULL)
    return value_new (graph, hint);
  do
    {
      g_free (name);
      name = g_strdup_printf ("%s.%u", hint, ++graph->anonymous_counter);
    }
  while (graft_graph_lookup_value (graph, name) != NULL);
  return value_new (graph, name);
}

void
graft_graph_add_input (GraftGraph *graph, GraftValue *value)
{
  value->is_graph_input = TRUE;
  g_ptr_array_add (graph->inputs, value);
}

void
graft_graph_add_output (GraftGraph *graph, GraftValue *value)
{
  value->is_graph_output = TRUE;
  g_ptr_array_add (graph->outputs, value);
}

void
graft_graph_add_initializer (GraftGraph *graph, GraftValue *value, GraftTensor *tensor)
{
  if (value->initializer == NULL)
    g_ptr_array_add (graph->initializers, value);
  g_clear_pointer (&value->initializer, graft_tensor_unref);
  value->initializer = tensor;
  if (value->dtype == GRAFT_DTYPE_UNDEFINED)
    value->dtype = tensor->dtype;
  if (value->shape.rank < 0)
    graft_shape_init_fixed (&value->shape, tensor->rank, tensor->dims);
}

const char *
graft_canonical_domain (const char *domain)
{
  if (domain == NULL || *domain == '\0' || strcmp (domain, "ai.onnx") == 0 || strcmp (domain, "onnx") == 0)
    return g_intern_static_string ("onnx");
  return g_intern_string (domain);
}

GraftNode *
graft_graph_add_node (GraftGraph *graph, const char *domain, const char *op_type, const char *name)
{
  GraftNode *node = g_new0 (GraftNode, 1);
  g_autofree char *op = NULL;

  node->name = g_strdup (name ? name : "");
  node->domain = graft_canonical_domain (domain);
  node->op_type = g_intern_string (op_type ? op_type : "");
  op = g_strconcat (node->domain, "::", node->op_type, NULL);
  node->op = g_intern_string (op);
  node->graph = graph;
  node->index = graph->nodes->len;
  node->inputs = g_ptr_array_new ();
  node->outputs = g_ptr_array_new ();
  node->attributes = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_attribute_free);
  g_ptr_array_add (graph->nodes, node);
  graft_group_add_node (graph->root_group, node);
  return node;
}

void
graft_node_add_input (GraftNode *node, GraftValue *value)
{
  g_ptr_array_add (node->inputs, value);
  if (value)
    g_ptr_array_add (value->consumers, node);
}

void
graft_node_add_output (GraftNode *node, GraftValue *value)
{
  if (value)
    {
      value->producer = node;
      value->producer_index = node->outputs->len;
    }
  g_ptr_array_add (node->outputs, value);
}

void
graft_node_add_attribute (GraftNode *node, GraftAttribute *attribute)
{
  g_ptr_array_add (node->attributes, attribute);
}

GraftAttribute *
graft_node_get_attribute (GraftNode *node, const char *name)
{
  for (guint i = 0; i < node->attributes->len; i++)
    {
      GraftAttribute *attribute = g_ptr_array_index (node->attributes, i);
      if (strcmp (attribute->name, name) == 0)
        return attribute;
    }
  return NULL;
}

void
graft_node_add_metadata (GraftNode *node, const char *key, const char *value)
{
  if (node->metadata_keys == NULL)
    {
      node->metadata_keys = g_ptr_array_new_with_free_func (g_free);
      node->metadata_values = g_ptr_array_new_with_free_func (g_free);
    }
  g_ptr_array_add (node->metadata_keys, g_strdup (key));
  g_ptr_array_add (node->metadata_values, g_strdup (value));
}

const char *
graft_node_get_metadata (const GraftNode *node, const char *key)
{
  for (guint i = 0; i < graft_node_get_n_metadata (node); i++)
    if (strcmp (g_ptr_array_index (node->metadata_keys, i), key) == 0)
      return g_ptr_array_index (node->metadata_values, i);
  return NULL;
}

void
graft_node_set_input_argument_name (GraftNode *node, guint input, const char *name)
{
  g_return_if_fail (input < node->inputs->len);
  if (node->input_argument_names == NULL)
    node->input_argument_names = g_ptr_array_new_with_free_func (g_free);
  if (node->input_argument_names->len <= input)
    g_ptr_array_set_size (node->input_argument_names, input + 1);
  g_free (g_ptr_array_index (node->input_argument_names, input));
  g_ptr_array_index (node->input_argument_names, input) = g_strdup (name);
}

/* The schema name of input @input, or NULL when the format names none. */
const char *
graft_node_get_input_argument_name (const GraftNode *node, guint input)
{
  if (node->input_argument_names == NULL || input >= node->input_argument_names->len)
    return NULL;
  return g_ptr_array_index (node->input_argument_names, input);
}

void
graft_node_set_attribute_argument_name (GraftNode *node, const char *attribute, const char *name)
{
  if (node->attribute_argument_names == NULL)
    node->attribute_argument_names = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_hash_table_replace (node->attribute_argument_names, g_strdup (attribute), g_strdup (name));
}

/* The schema name of the positional attribute @attribute ("arg3" →
 * "stride"), or NULL when the format names none. */
const char *
graft_node_get_attribute_argument_name (const GraftNode *node, const char *attribute)
{
  return node->attribute_argument_names != NULL ? g_hash_table_lookup (node->attribute_argument_names, attribute)
                                                 : NULL;
}

guint
graft_node_get_n_metadata (const GraftNode *node)
{
  return node->metadata_keys != NULL ? node->metadata_keys->len : 0;
}

void
graft_node_adopt_subgraph (GraftNode *node, GraftGraph *subgraph)
{
  subgraph->parent_graph = node->graph;
  subgraph->parent_node = node;
}

GPtrArray *
graft_node_get_subgraphs (GraftNode *node)
{
  GPtrArray *subgraphs = g_ptr_array_new ();

  for (guint i = 0; i < node->attributes->len; i++)
    {
      GraftAttribute *attribute = g_ptr_array_index (node->attributes, i);
      if (attribute->type == GRAFT_ATTR_GRAPH && attribute->g)
        g_ptr_array_add (subgraphs, attribute->g);
      else if (attribute->type == GRAFT_ATTR_GRAPHS)
        for (guint j = 0; j < attribute->graphs->len; j++)
          g_ptr_array_add (subgraphs, g_ptr_array_index (attribute->graphs, j));
    }
  return subgraphs;
}

static gboolean
graph_is_within (GraftGraph *graph, GraftGraph *ancestor)
{
  for (; graph != NULL; graph = graph->parent_graph)
    if (graph == ancestor)
      return TRUE;
  return FALSE;
}

static void
collect_captures (GraftGraph *body, GraftGraph *owner_body, GPtrArray *captures)
{
  for (guint i = 0; i < body->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (body->nodes, i);
      g_autoptr (GPtrArray) subgraphs = graft_node_get_subgraphs (node);

      for (guint j = 0; j < node->inputs->len; j++)
        {
          GraftValue *value = g_ptr_array_index (node->inputs, j);

          if (value != NULL && value->initializer == NULL && !graph_is_within (value->graph, owner_body)
              && !g_ptr_array_find (captures, value, NULL))
            g_ptr_array_add (captures, value);
        }
      for (guint j = 0; j < subgraphs->len; j++)
        collect_captures (g_ptr_array_index (subgraphs, j), owner_body, captures);
    }
}

GPtrArray *
graft_node_get_captured_values (GraftNode *node)
{
  GPtrArray *captures = g_ptr_array_new ();
  g_autoptr (GPtrArray) subgraphs = graft_node_get_subgraphs (node);

  for (guint i = 0; i < subgraphs->len; i++)
    {
      GraftGraph *body = g_ptr_array_index (subgraphs, i);
      collect_captures (body, body, captures);
    }
  return captures;
}

static void
foreach_node (GraftGraph *graph, GPtrArray *(*subgraphs_of) (GraftNode *node), GraftNodeFunc func,
              gpointer user_data)
{
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      g_autoptr(GPtrArray) subgraphs = NULL;

      func (node, user_data);
      subgraphs = subgraphs_of (node);
      for (guint j = 0; j < subgraphs->len; j++)
        foreach_node (g_ptr_array_index (subgraphs, j), subgraphs_of, func, user_data);
    }
}

void
graft_graph_foreach_node_recursive (GraftGraph *graph, GraftNodeFunc func, gpointer user_data)
{
  foreach_node (graph, graft_node_get_subgraphs, func, user_data);
}

void
graft_graph_foreach_live_node_recursive (GraftGraph *graph, GraftNodeFunc func, gpointer user_data)
{
  foreach_node (graph, graft_node_get_live_subgraphs, func, user_data);
}

static void
count_node (GraftNode *node, gpointer user_data)
{
  (*(guint *) user_data)++;
}

guint
graft_graph_count_nodes_recursive (GraftGraph *graph)
{
  guint count = 0;

  graft_graph_foreach_node_recursive (graph, count_node, &count);
  return count;
}

/* "/layer1/layer1.0/conv1/Conv" → layer1 › 0 › conv1 (the last component
 * names the node itself); the root group when the name has no scope. */
static GraftGroup *
group_from_scoped_name (GraftGroup *root, const char *name)
{
  g_auto(GStrv) parts = g_strsplit (name + 1, "/", -1);
  guint n = g_strv_length (parts);
  GraftGroup *group = root;
  const char *parent_scope = "";

  for (guint j = 0; j + 1 < n; j++)
    {
      if (parts[j][0] == '\0')
        continue;
      group = graft_group_ensure_child (group, graft_group_component_for_scope (parts[j], parent_scope));
      parent_scope = parts[j];
    }
  return group;
}

void
graft_graph_build_groups_from_names (GraftGraph *graph)
{
  GraftGroup *root = graph->root_group;
  g_autoptr(GPtrArray) root_nodes = g_ptr_array_new ();
  g_autoptr(GraftTorchScopeWalk) walk = graft_torch_scope_walk_new (root);

  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      GraftGroup *group;

      if (node->group != root)
        continue;
      if (node->name[0] == '/')
        group = group_from_scoped_name (root, node->name);
      else
        group = graft_torch_scope_walk_place (walk, node);
      if (group == NULL || group == root)
        g_ptr_array_add (root_nodes, node);
      else
        {
          node->group = NULL;
          graft_group_add_node (group, node);
        }
    }
  g_ptr_array_set_size (root->nodes, 0);
  g_ptr_array_extend (root->nodes, root_nodes, NULL, NULL);
  graft_graph_update_group_counts (graph);
}

static guint
update_counts (GraftGroup *group)
{
  guint total = group->nodes->len;

  for (guint i = 0; i < group->children->len; i++)
    total += update_counts (g_ptr_array_index (group->children, i));
  group->total_nodes = total;
  return total;
}

void
graft_graph_update_group_counts (GraftGraph *graph)
{
  update_counts (graph->root_group);
}

static void
clear_unbound_value_info (gpointer data)
{
  GraftOnnxUnboundValueInfo *entry = data;

  g_clear_pointer (&entry->value_info, g_bytes_unref);
}

void
graft_graph_add_onnx_unbound_value_info (GraftGraph *graph, guint position, GBytes *value_info)
{
  GraftOnnxUnboundValueInfo entry = { position, g_bytes_ref (value_info) };

  if (graph->onnx_unbound_value_info == NULL)
    {
      graph->onnx_unbound_value_info = g_array_new (FALSE, FALSE, sizeof (GraftOnnxUnboundValueInfo));
      g_array_set_clear_func (graph->onnx_unbound_value_info, clear_unbound_value_info);
    }
  g_array_append_val (graph->onnx_unbound_value_info, entry);
}

char *
graft_graph_describe_written_back (GraftGraph *graph)
{
  g_autoptr(GString) names = g_string_new (NULL);
  for (guint i = 0; graph && i < graph->values->len; i++)
    {
      GraftValue *v = graph->values->pdata[i];
      if (v->writes_back_to)
        g_string_append_printf (names, "%s%s", names->len ? ", " : "", v->writes_back_to);
    }
  return names->len ? g_string_free (g_steal_pointer (&names), FALSE) : NULL;
}

void
graft_graph_rename_value (GraftGraph *graph, GraftValue *value, const char *name)
{
  for (guint i = 0; i < graph->values->len; i++)
    {
      GraftValue *other = graph->values->pdata[i];
      if (other->writes_back_to && strcmp (other->writes_back_to, value->name) == 0)
        {
          g_free (other->writes_back_to);
          other->writes_back_to = g_strdup (name);
        }
    }
  g_hash_table_remove (graph->value_by_name, value->name);
  g_free (value->name);
  value->name = g_strdup (name);
  g_hash_table_insert (graph->value_by_name, value->name, value);
}
