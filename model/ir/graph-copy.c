#include "ir/graph-copy.h"

static GraftValue *
map_value (GHashTable *map, GraftValue *value)
{
  GraftValue *mapped;

  if (value == NULL)
    return NULL;
  mapped = g_hash_table_lookup (map, value);
  return mapped ? mapped : value;
}

static GPtrArray *
copy_bytes_array (GPtrArray *array)
{
  GPtrArray *copy = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);

  for (guint i = 0; i < array->len; i++)
    g_ptr_array_add (copy, g_bytes_ref (g_ptr_array_index (array, i)));
  return copy;
}

GraftAttribute *
graft_attribute_copy (const GraftAttribute *attribute, GHashTable *value_map)
{
  GraftAttribute *copy = graft_attribute_new (attribute->name, attribute->type);

  copy->doc_string = g_strdup (attribute->doc_string);
  copy->ref_attr_name = g_strdup (attribute->ref_attr_name);
  copy->f = attribute->f;
  copy->i = attribute->i;
  copy->s = attribute->s ? g_bytes_ref (attribute->s) : NULL;
  copy->t = attribute->t ? graft_tensor_ref (attribute->t) : NULL;
  copy->g = attribute->g ? graft_graph_copy (attribute->g, value_map) : NULL;
  if (attribute->floats)
    {
      g_clear_pointer (&copy->floats, g_array_unref);
      copy->floats = g_array_copy (attribute->floats);
    }
  if (attribute->ints)
    {
      g_clear_pointer (&copy->ints, g_array_unref);
      copy->ints = g_array_copy (attribute->ints);
    }
  if (attribute->strings)
    {
      g_clear_pointer (&copy->strings, g_ptr_array_unref);
      copy->strings = copy_bytes_array (attribute->strings);
    }
  if (attribute->tensors)
    {
      g_clear_pointer (&copy->tensors, g_ptr_array_unref);
      copy->tensors = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_tensor_unref);
      for (guint i = 0; i < attribute->tensors->len; i++)
        g_ptr_array_add (copy->tensors, graft_tensor_ref (g_ptr_array_index (attribute->tensors, i)));
    }
  if (attribute->onnx_types)
    copy->onnx_types = copy_bytes_array (attribute->onnx_types);
  if (attribute->graphs)
    {
      g_clear_pointer (&copy->graphs, g_ptr_array_unref);
      copy->graphs = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_graph_free);
      for (guint i = 0; i < attribute->graphs->len; i++)
        g_ptr_array_add (copy->graphs, graft_graph_copy (g_ptr_array_index (attribute->graphs, i), value_map));
    }
  return copy;
}

static void
copy_value_fields (GraftValue *dest, const GraftValue *src)
{
  dest->kind = src->kind;
  dest->dtype = src->dtype;
  graft_shape_clear (&dest->shape);
  graft_shape_copy (&dest->shape, &src->shape);
  dest->type_string = g_strdup (src->type_string);
  dest->doc_string = g_strdup (src->doc_string);
  dest->writes_back_to = g_strdup (src->writes_back_to);
  dest->onnx_type = src->onnx_type ? g_bytes_ref (src->onnx_type) : NULL;
  dest->onnx_kept_fields = src->onnx_kept_fields ? g_bytes_ref (src->onnx_kept_fields) : NULL;
  dest->onnx_value_info_position = src->onnx_value_info_position;
  dest->exported_json = src->exported_json ? g_bytes_ref (src->exported_json) : NULL;
}

/* The node's group in the copy, found by the chain of group names. */
static GraftGroup *
copy_group_path (GraftGroup *new_root, GraftGroup *group)
{
  g_autoptr(GPtrArray) chain = g_ptr_array_new ();
  GraftGroup *target = new_root;

  for (GraftGroup *g = group; g != NULL && g->parent != NULL; g = g->parent)
    g_ptr_array_insert (chain, 0, g);
  for (guint i = 0; i < chain->len; i++)
    {
      GraftGroup *old = g_ptr_array_index (chain, i);
      target = graft_group_ensure_child (target, old->name);
      if (target->class_name == NULL && old->class_name != NULL)
        target->class_name = g_strdup (old->class_name);
    }
  return target;
}

/* torch.export's argument names ("weight", "stride"), which the labels and
 * the sidebar show in place of positions. */
static void
copy_argument_names (GraftNode *node, const GraftNode *old)
{
  GHashTableIter iter;
  gpointer attribute, name;

  for (guint j = 0; j < old->inputs->len; j++)
    if (graft_node_get_input_argument_name (old, j) != NULL)
      graft_node_set_input_argument_name (node, j, graft_node_get_input_argument_name (old, j));
  if (old->attribute_argument_names == NULL)
    return;
  g_hash_table_iter_init (&iter, old->attribute_argument_names);
  while (g_hash_table_iter_next (&iter, &attribute, &name))
    graft_node_set_attribute_argument_name (node, attribute, name);
}

GraftGraph *
graft_graph_copy (GraftGraph *graph, GHashTable *outer_map)
{
  GraftGraph *copy = graft_graph_new (graph->name);
  g_autoptr(GHashTable) own_map = NULL;
  GHashTable *map = outer_map;

  if (map == NULL)
    map = own_map = g_hash_table_new (NULL, NULL);
  copy->doc_string = g_strdup (graph->doc_string);
  copy->onnx_kept_fields = graph->onnx_kept_fields ? g_bytes_ref (graph->onnx_kept_fields) : NULL;
  for (guint i = 0; graph->onnx_unbound_value_info != NULL && i < graph->onnx_unbound_value_info->len; i++)
    {
      GraftOnnxUnboundValueInfo *entry = &g_array_index (graph->onnx_unbound_value_info, GraftOnnxUnboundValueInfo, i);
      graft_graph_add_onnx_unbound_value_info (copy, entry->position, entry->value_info);
    }
  copy->anonymous_counter = graph->anonymous_counter;

  for (guint i = 0; i < graph->values->len; i++)
    {
      GraftValue *old = g_ptr_array_index (graph->values, i);
      GraftValue *value = graft_graph_ensure_value (copy, old->name);

      copy_value_fields (value, old);
      g_hash_table_insert (map, old, value);
    }
  for (guint i = 0; i < graph->inputs->len; i++)
    graft_graph_add_input (copy, map_value (map, g_ptr_array_index (graph->inputs, i)));
  for (guint i = 0; i < graph->initializers->len; i++)
    {
      GraftValue *old = g_ptr_array_index (graph->initializers, i);
      graft_graph_add_initializer (copy, map_value (map, old), graft_tensor_ref (old->initializer));
    }
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *old = g_ptr_array_index (graph->nodes, i);
      GraftNode *node = graft_graph_add_node (copy, old->domain, old->op_type, old->name);

      node->doc_string = g_strdup (old->doc_string);
      node->onnx_kept_fields = old->onnx_kept_fields ? g_bytes_ref (old->onnx_kept_fields) : NULL;
      node->exported_json = old->exported_json ? g_bytes_ref (old->exported_json) : NULL;
      node->source_range = g_strdup (old->source_range);
      node->python_source = g_strdup (old->python_source);
      for (guint j = 0; j < graft_node_get_n_metadata (old); j++)
        graft_node_add_metadata (node, g_ptr_array_index (old->metadata_keys, j),
                                 g_ptr_array_index (old->metadata_values, j));
      for (guint j = 0; j < old->inputs->len; j++)
        graft_node_add_input (node, map_value (map, g_ptr_array_index (old->inputs, j)));
      copy_argument_names (node, old);
      for (guint j = 0; j < old->outputs->len; j++)
        graft_node_add_output (node, map_value (map, g_ptr_array_index (old->outputs, j)));
      for (guint j = 0; j < old->attributes->len; j++)
        {
          GraftAttribute *attribute = graft_attribute_copy (g_ptr_array_index (old->attributes, j), map);
          graft_node_add_attribute (node, attribute);
          if (attribute->g)
            graft_node_adopt_subgraph (node, attribute->g);
          for (guint k = 0; attribute->graphs && k < attribute->graphs->len; k++)
            graft_node_adopt_subgraph (node, g_ptr_array_index (attribute->graphs, k));
        }
      if (old->group != NULL && old->group != graph->root_group)
        {
          g_ptr_array_remove (copy->root_group->nodes, node);
          node->group = NULL;
          graft_group_add_node (copy_group_path (copy->root_group, old->group), node);
        }
    }
  for (guint i = 0; i < graph->outputs->len; i++)
    graft_graph_add_output (copy, map_value (map, g_ptr_array_index (graph->outputs, i)));
  graft_graph_update_group_counts (copy);
  return copy;
}

static GraftFunction *
function_copy (const GraftFunction *function)
{
  GraftFunction *copy = g_new0 (GraftFunction, 1);

  copy->name = g_strdup (function->name);
  copy->domain = g_strdup (function->domain);
  copy->doc_string = g_strdup (function->doc_string);
  copy->attribute_names = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; function->attribute_names && i < function->attribute_names->len; i++)
    g_ptr_array_add (copy->attribute_names, g_strdup (g_ptr_array_index (function->attribute_names, i)));
  copy->body = function->body ? graft_graph_copy (function->body, NULL) : NULL;
  /* Nothing changes a function's opset table after loading. */
  copy->opsets = function->opsets ? g_hash_table_ref (function->opsets) : NULL;
  copy->opset_order = function->opset_order ? g_ptr_array_ref (function->opset_order) : NULL;
  copy->onnx_kept_fields = function->onnx_kept_fields ? g_bytes_ref (function->onnx_kept_fields) : NULL;
  return copy;
}

GraftModel *
graft_model_copy (GraftModel *model)
{
  GraftModel *copy = graft_model_new (graft_model_get_format (model));
  GPtrArray *domains = graft_model_get_opset_order (model);
  GPtrArray *functions = graft_model_get_functions (model);
  GraftGraph *graph = graft_model_get_graph (model);

  graft_model_set_path (copy, graft_model_get_path (model));
  graft_model_set_ir_version (copy, graft_model_get_ir_version (model));
  for (guint i = 0; i < domains->len; i++)
    {
      const char *domain = g_ptr_array_index (domains, i);
      graft_model_set_opset (copy, domain, graft_model_get_opset (model, domain));
    }
  for (guint i = 0; i < functions->len; i++)
    graft_model_add_function (copy, function_copy (g_ptr_array_index (functions, i)));
  if (graph != NULL)
    graft_model_set_graph (copy, graft_graph_copy (graph, NULL));
  return copy;
}
