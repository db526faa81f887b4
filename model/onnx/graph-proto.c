#include "onnx/graph-proto.h"
#include "onnx/kept-fields.h"
#include "onnx/tensor-proto.h"
#include "onnx/type-proto.h"

#include <string.h>

/* How often (in nodes) progress is reported and cancellation checked. */
#define PROGRESS_STEP 256

static char *
describe_node (GraftNode *node)
{
  if (node->name[0] != '\0')
    return g_strdup_printf ("node '%s' (%s)", node->name, node->op_type);
  return g_strdup_printf ("node #%u (%s) of graph '%s'", node->index, node->op_type, node->graph->name);
}

static GraftAttrType
attribute_type (const Onnx__AttributeProto *proto)
{
  if (proto->has_type && proto->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED)
    switch (proto->type)
      {
      case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: return GRAFT_ATTR_FLOAT;
      case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: return GRAFT_ATTR_INT;
      case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: return GRAFT_ATTR_STRING;
      case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: return GRAFT_ATTR_TENSOR;
      case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH: return GRAFT_ATTR_GRAPH;
      case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR: return GRAFT_ATTR_SPARSE_TENSOR;
      case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO: return GRAFT_ATTR_TYPE;
      case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: return GRAFT_ATTR_FLOATS;
      case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS: return GRAFT_ATTR_INTS;
      case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: return GRAFT_ATTR_STRINGS;
      case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS: return GRAFT_ATTR_TENSORS;
      case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS: return GRAFT_ATTR_GRAPHS;
      /* The IR has no list-of-sparse type: they are kept densified. */
      case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS: return GRAFT_ATTR_TENSORS;
      case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS: return GRAFT_ATTR_TYPES;
      default: return GRAFT_ATTR_UNDEFINED;
      }

  /* Files from before IR version 2 carry no type: infer it from the field set. */
  if (proto->n_floats) return GRAFT_ATTR_FLOATS;
  if (proto->n_ints) return GRAFT_ATTR_INTS;
  if (proto->n_strings) return GRAFT_ATTR_STRINGS;
  if (proto->n_tensors || proto->n_sparse_tensors) return GRAFT_ATTR_TENSORS;
  if (proto->n_graphs) return GRAFT_ATTR_GRAPHS;
  if (proto->n_type_protos) return GRAFT_ATTR_TYPES;
  if (proto->t) return GRAFT_ATTR_TENSOR;
  if (proto->g) return GRAFT_ATTR_GRAPH;
  if (proto->sparse_tensor) return GRAFT_ATTR_SPARSE_TENSOR;
  if (proto->tp) return GRAFT_ATTR_TYPE;
  if (proto->has_s) return GRAFT_ATTR_STRING;
  if (proto->has_i) return GRAFT_ATTR_INT;
  if (proto->has_f) return GRAFT_ATTR_FLOAT;
  return GRAFT_ATTR_UNDEFINED;
}

static GBytes *
type_to_bytes (const Onnx__TypeProto *type)
{
  char *text = graft_onnx_type_to_string (type);

  return g_bytes_new_take (text, strlen (text));
}

static gboolean
fill_attribute (GraftOnnxReadContext *context, GraftNode *node, GraftAttribute *attribute,
                const Onnx__AttributeProto *proto, const char *where, GError **error)
{
  switch (attribute->type)
    {
    case GRAFT_ATTR_FLOAT:
      attribute->f = proto->f;
      break;
    case GRAFT_ATTR_INT:
      attribute->i = proto->i;
      break;
    case GRAFT_ATTR_STRING:
      attribute->s = g_bytes_new (proto->s.data, proto->s.len);
      break;
    case GRAFT_ATTR_TYPE:
      attribute->s = type_to_bytes (proto->tp);
      if (proto->tp != NULL)
        {
          attribute->onnx_types = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
          g_ptr_array_add (attribute->onnx_types, graft_onnx_keep_message (context, &proto->tp->base));
        }
      break;
    case GRAFT_ATTR_TENSOR:
      if (proto->t == NULL)
        break;
      attribute->t = graft_onnx_tensor_from_proto (context, proto->t, where, error);
      return attribute->t != NULL;
    case GRAFT_ATTR_SPARSE_TENSOR:
      if (proto->sparse_tensor == NULL)
        break;
      attribute->t = graft_onnx_tensor_from_sparse_proto (context, proto->sparse_tensor, where, error);
      return attribute->t != NULL;
    case GRAFT_ATTR_GRAPH:
      if (proto->g == NULL)
        break;
      attribute->g = graft_onnx_graph_from_proto (context, proto->g, node, error);
      if (attribute->g == NULL)
        return FALSE;
      graft_node_adopt_subgraph (node, attribute->g);
      break;
    case GRAFT_ATTR_FLOATS:
      for (size_t i = 0; i < proto->n_floats; i++)
        {
          double v = proto->floats[i];
          g_array_append_val (attribute->floats, v);
        }
      break;
    case GRAFT_ATTR_INTS:
      g_array_append_vals (attribute->ints, proto->ints, proto->n_ints);
      break;
    case GRAFT_ATTR_STRINGS:
      for (size_t i = 0; i < proto->n_strings; i++)
        g_ptr_array_add (attribute->strings, g_bytes_new (proto->strings[i].data, proto->strings[i].len));
      break;
    case GRAFT_ATTR_TYPES:
      attribute->onnx_types = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
      for (size_t i = 0; i < proto->n_type_protos; i++)
        {
          g_ptr_array_add (attribute->strings, type_to_bytes (proto->type_protos[i]));
          g_ptr_array_add (attribute->onnx_types, graft_onnx_keep_message (context, &proto->type_protos[i]->base));
        }
      break;
    case GRAFT_ATTR_TENSORS:
      for (size_t i = 0; i < proto->n_tensors; i++)
        {
          GraftTensor *t = graft_onnx_tensor_from_proto (context, proto->tensors[i], where, error);
          if (t == NULL)
            return FALSE;
          g_ptr_array_add (attribute->tensors, t);
        }
      for (size_t i = 0; i < proto->n_sparse_tensors; i++)
        {
          GraftTensor *t = graft_onnx_tensor_from_sparse_proto (context, proto->sparse_tensors[i], where, error);
          if (t == NULL)
            return FALSE;
          g_ptr_array_add (attribute->tensors, t);
        }
      break;
    case GRAFT_ATTR_GRAPHS:
      for (size_t i = 0; i < proto->n_graphs; i++)
        {
          GraftGraph *g = graft_onnx_graph_from_proto (context, proto->graphs[i], node, error);
          if (g == NULL)
            return FALSE;
          g_ptr_array_add (attribute->graphs, g);
          graft_node_adopt_subgraph (node, g);
        }
      break;
    default:
      break;
    }

  /* A value-carrying type without its value is only legal as a reference
   * to a function attribute. */
  if (proto->ref_attr_name == NULL
      && ((attribute->type == GRAFT_ATTR_TENSOR && attribute->t == NULL)
          || (attribute->type == GRAFT_ATTR_SPARSE_TENSOR && attribute->t == NULL)
          || (attribute->type == GRAFT_ATTR_GRAPH && attribute->g == NULL)))
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED, "%s: declared %s but has no value",
                   where, graft_attr_type_to_string (attribute->type));
      return FALSE;
    }
  return TRUE;
}

static GraftAttribute *
attribute_from_proto (GraftOnnxReadContext *context, GraftNode *node, const Onnx__AttributeProto *proto,
                      GError **error)
{
  g_autoptr(GraftAttribute) attribute = NULL;
  g_autofree char *node_text = describe_node (node);
  g_autofree char *where = g_strdup_printf ("%s attribute '%s'", node_text, proto->name ? proto->name : "");

  attribute = graft_attribute_new (proto->name, attribute_type (proto));
  if (proto->doc_string != NULL && proto->doc_string[0] != '\0')
    attribute->doc_string = g_strdup (proto->doc_string);
  if (proto->ref_attr_name != NULL && proto->ref_attr_name[0] != '\0')
    attribute->ref_attr_name = g_strdup (proto->ref_attr_name);
  if (!fill_attribute (context, node, attribute, proto, where, error))
    return NULL;
  return g_steal_pointer (&attribute);
}

static void
apply_value_info (GraftOnnxReadContext *context, GraftValue *value, const Onnx__ValueInfoProto *info)
{
  graft_onnx_apply_type (value, info->type);
  g_clear_pointer (&value->onnx_type, g_bytes_unref);
  if (info->type != NULL)
    value->onnx_type = graft_onnx_keep_message (context, &info->type->base);
  g_clear_pointer (&value->onnx_kept_fields, g_bytes_unref);
  value->onnx_kept_fields = graft_onnx_keep_fields (context, &info->base);
  if (info->doc_string != NULL && info->doc_string[0] != '\0')
    {
      g_free (value->doc_string);
      value->doc_string = g_strdup (info->doc_string);
    }
}

static GraftValue *
named_value (GraftGraph *graph, const char *name)
{
  if (name == NULL || name[0] == '\0')
    return graft_graph_new_anonymous_value (graph, "unnamed");
  return graft_graph_ensure_value (graph, name);
}

static gboolean
report_progress (GraftOnnxReadContext *context, GError **error)
{
  context->nodes_done++;
  if (context->nodes_done % PROGRESS_STEP != 0)
    return TRUE;
  if (g_cancellable_is_cancelled (context->cancellable))
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_CANCELLED, "loading was cancelled");
      return FALSE;
    }
  if (context->progress != NULL && context->nodes_total > 0)
    context->progress (MIN (1.0, (double) context->nodes_done / context->nodes_total), context->progress_data);
  return TRUE;
}

/* Adds the nodes of a graph or function body. Every output is created
 * first, so that inputs (also those of nested subgraphs, which see this
 * graph as their outer scope) resolve even in files that are not
 * topologically sorted. */
static gboolean
add_nodes (GraftOnnxReadContext *context, GraftGraph *graph, Onnx__NodeProto *const *nodes, size_t n_nodes,
           GError **error)
{
  for (size_t i = 0; i < n_nodes; i++)
    for (size_t j = 0; j < nodes[i]->n_output; j++)
      if (nodes[i]->output[j][0] != '\0')
        graft_graph_ensure_value (graph, nodes[i]->output[j]);

  for (size_t i = 0; i < n_nodes; i++)
    {
      const Onnx__NodeProto *proto = nodes[i];
      GraftNode *node = graft_graph_add_node (graph, proto->domain, proto->op_type, proto->name);

      if (proto->doc_string != NULL && proto->doc_string[0] != '\0')
        node->doc_string = g_strdup (proto->doc_string);
      node->onnx_kept_fields = graft_onnx_keep_fields (context, &proto->base);
      for (size_t j = 0; j < proto->n_metadata_props; j++)
        graft_node_add_metadata (node, proto->metadata_props[j]->key ? proto->metadata_props[j]->key : "",
                                 proto->metadata_props[j]->value ? proto->metadata_props[j]->value : "");
      for (size_t j = 0; j < proto->n_input; j++)
        {
          const char *name = proto->input[j];
          GraftValue *value = NULL;

          if (name[0] != '\0')
            {
              value = graft_graph_resolve_value (graph, name);
              if (value == NULL)
                value = graft_graph_ensure_value (graph, name);
            }
          graft_node_add_input (node, value);
        }
      for (size_t j = 0; j < proto->n_output; j++)
        graft_node_add_output (node, proto->output[j][0] != '\0'
                                       ? graft_graph_lookup_value (graph, proto->output[j]) : NULL);
      for (size_t j = 0; j < proto->n_attribute; j++)
        {
          GraftAttribute *attribute = attribute_from_proto (context, node, proto->attribute[j], error);
          if (attribute == NULL)
            return FALSE;
          graft_node_add_attribute (node, attribute);
        }
      if (!report_progress (context, error))
        return FALSE;
    }
  return TRUE;
}

static gboolean
add_initializers (GraftOnnxReadContext *context, GraftGraph *graph, const Onnx__GraphProto *proto, GError **error)
{
  for (size_t i = 0; i < proto->n_initializer; i++)
    {
      g_autofree char *where = g_strdup_printf ("initializer '%s'", proto->initializer[i]->name ? proto->initializer[i]->name : "");
      GraftTensor *tensor = graft_onnx_tensor_from_proto (context, proto->initializer[i], where, error);

      if (tensor == NULL)
        return FALSE;
      graft_graph_add_initializer (graph, named_value (graph, tensor->name), tensor);
    }
  for (size_t i = 0; i < proto->n_sparse_initializer; i++)
    {
      const Onnx__SparseTensorProto *sparse = proto->sparse_initializer[i];
      g_autofree char *where = g_strdup_printf ("sparse initializer '%s'",
                                                sparse->values && sparse->values->name ? sparse->values->name : "");
      GraftTensor *tensor = graft_onnx_tensor_from_sparse_proto (context, sparse, where, error);

      if (tensor == NULL)
        return FALSE;
      graft_graph_add_initializer (graph, named_value (graph, tensor->name), tensor);
    }
  return TRUE;
}

GraftGraph *
graft_onnx_graph_from_proto (GraftOnnxReadContext *context, const Onnx__GraphProto *proto, GraftNode *parent_node,
                             GError **error)
{
  g_autoptr(GraftGraph) graph = graft_graph_new (proto->name);

  if (proto->doc_string != NULL && proto->doc_string[0] != '\0')
    graph->doc_string = g_strdup (proto->doc_string);
  graph->onnx_kept_fields = graft_onnx_keep_fields (context, &proto->base);
  if (parent_node != NULL)
    graft_node_adopt_subgraph (parent_node, graph);

  for (size_t i = 0; i < proto->n_input; i++)
    {
      GraftValue *value = named_value (graph, proto->input[i]->name);
      apply_value_info (context, value, proto->input[i]);
      graft_graph_add_input (graph, value);
    }
  if (!add_initializers (context, graph, proto, error))
    return NULL;
  if (!add_nodes (context, graph, proto->node, proto->n_node, error))
    return NULL;

  /* value_info only annotates values of this graph; an entry naming an
   * outer-scope value must not shadow it. */
  for (size_t i = 0; i < proto->n_value_info; i++)
    {
      GraftValue *value = proto->value_info[i]->name ? graft_graph_lookup_value (graph, proto->value_info[i]->name) : NULL;
      if (value != NULL)
        {
          apply_value_info (context, value, proto->value_info[i]);
          value->onnx_value_info_position = i + 1;
        }
      else
        {
          g_autoptr(GBytes) kept = graft_onnx_keep_message (context, &proto->value_info[i]->base);
          graft_graph_add_onnx_unbound_value_info (graph, i + 1, kept);
        }
    }

  for (size_t i = 0; i < proto->n_output; i++)
    {
      const char *name = proto->output[i]->name;
      GraftValue *value = name && name[0] ? graft_graph_lookup_value (graph, name) : NULL;

      /* A subgraph may pass an outer-scope value straight through. */
      if (value == NULL && name && name[0])
        value = graft_graph_resolve_value (graph, name);
      if (value == NULL)
        value = named_value (graph, name);
      if (value->graph == graph)
        apply_value_info (context, value, proto->output[i]);
      graft_graph_add_output (graph, value);
    }

  graft_graph_build_groups_from_names (graph);
  return g_steal_pointer (&graph);
}

static GHashTable *
opsets_from_proto (Onnx__OperatorSetIdProto *const *opsets, size_t n, GPtrArray *order)
{
  GHashTable *table = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);

  for (size_t i = 0; i < n; i++)
    {
      const char *domain = graft_canonical_domain (opsets[i]->domain);

      if (!g_hash_table_contains (table, domain))
        g_ptr_array_add (order, g_strdup (domain));
      g_hash_table_insert (table, g_strdup (domain), g_memdup2 (&opsets[i]->version, sizeof (gint64)));
    }
  return table;
}

GraftFunction *
graft_onnx_function_from_proto (GraftOnnxReadContext *context, const Onnx__FunctionProto *proto, GError **error)
{
  GraftFunction *function = g_new0 (GraftFunction, 1);
  GraftGraph *body;

  function->name = g_strdup (proto->name ? proto->name : "");
  function->domain = g_strdup (proto->domain ? proto->domain : "");
  function->doc_string = g_strdup (proto->doc_string);
  function->attribute_names = g_ptr_array_new_with_free_func (g_free);
  for (size_t i = 0; i < proto->n_attribute; i++)
    g_ptr_array_add (function->attribute_names, g_strdup (proto->attribute[i]));
  function->opset_order = g_ptr_array_new_with_free_func (g_free);
  function->opsets = opsets_from_proto (proto->opset_import, proto->n_opset_import, function->opset_order);
  function->onnx_kept_fields = graft_onnx_keep_fields (context, &proto->base);
  function->body = body = graft_graph_new (function->name);

  for (size_t i = 0; i < proto->n_input; i++)
    graft_graph_add_input (body, named_value (body, proto->input[i]));
  if (!add_nodes (context, body, proto->node, proto->n_node, error))
    {
      g_prefix_error (error, "function '%s': ", function->name);
      graft_function_free (function);
      return NULL;
    }
  for (size_t i = 0; i < proto->n_output; i++)
    graft_graph_add_output (body, named_value (body, proto->output[i]));
  graft_graph_build_groups_from_names (body);
  return function;
}
