#include "onnx/writer.h"
#include "onnx/writer-proto.h"
#include "onnx/kept-fields.h"
#include "onnx/type-proto.h"
#include "ir/model-error.h"
#include "ir/atomic-save.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <glib/gstdio.h>

/* protobuf's own parsers refuse messages of 2 GiB or more. */
#define MAX_MODEL_BYTES ((guint64) G_MAXINT32)
/* Room for the graph itself when deciding whether weights fit inline. */
#define DATA_FILE_MARGIN_BYTES ((guint64) 64 << 20)

#define ALLOC_MESSAGE(context, type, init) \
  ({ type *_m = graft_onnx_write_alloc ((context), sizeof (type)); type _i = init; *_m = _i; _m; })

static Onnx__GraphProto *graph_to_proto (GraftOnnxWriteContext *context, GraftGraph *graph, GError **error);

static char *
domain_to_proto (const char *domain)
{
  /* The default domain is written as "", as exporters do. */
  if (domain == NULL || graft_canonical_domain (domain) == g_intern_static_string ("onnx"))
    return NULL;
  return (char *) domain;
}

static gboolean
fail_attribute (GError **error, GraftNode *node, GraftAttribute *attribute, const char *detail)
{
  g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED,
               "node '%s' (%s) attribute '%s': %s", node ? node->name : "", node ? node->op : "",
               attribute->name, detail);
  return FALSE;
}

/* The TypeProto read for entry index of a TYPE/TYPES attribute, while its
 * text form is still the attribute's (text). */
static Onnx__TypeProto *
kept_attribute_type (GraftOnnxWriteContext *context, GraftAttribute *attribute, guint index, GBytes *text)
{
  Onnx__TypeProto *type;
  g_autofree char *read_as = NULL;

  if (attribute->onnx_types == NULL || index >= attribute->onnx_types->len || text == NULL)
    return NULL;
  type = graft_onnx_kept_type (context, g_ptr_array_index (attribute->onnx_types, index));
  if (type == NULL)
    return NULL;
  read_as = graft_onnx_type_to_string (type);
  if (strlen (read_as) != g_bytes_get_size (text) || memcmp (read_as, g_bytes_get_data (text, NULL), strlen (read_as)) != 0)
    return NULL;
  return type;
}

/* A TENSORS attribute read from SPARSE_TENSORS goes back as one while
 * every tensor still has its sparse form. */
static gboolean
tensors_to_sparse_protos (GraftOnnxWriteContext *context, GraftAttribute *attribute, Onnx__AttributeProto *proto)
{
  guint n = attribute->tensors->len;
  Onnx__SparseTensorProto **sparse = graft_onnx_write_alloc (context, sizeof (gpointer) * n);

  for (guint i = 0; i < n; i++)
    {
      GraftTensor *tensor = g_ptr_array_index (attribute->tensors, i);
      if ((sparse[i] = graft_onnx_kept_sparse_to_proto (context, tensor, tensor->name)) == NULL)
        return FALSE;
    }
  if (n == 0)
    return FALSE;
  proto->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS;
  proto->n_sparse_tensors = n;
  proto->sparse_tensors = sparse;
  return TRUE;
}

static gboolean
attribute_values_to_proto (GraftOnnxWriteContext *context, GraftNode *node, GraftAttribute *attribute,
                           Onnx__AttributeProto *proto, GError **error)
{
  gsize len;

  switch (attribute->type)
    {
    case GRAFT_ATTR_UNDEFINED:
    case GRAFT_ATTR_NONE:
      break;
    case GRAFT_ATTR_FLOAT:
      proto->has_f = TRUE;
      proto->f = (float) attribute->f;
      break;
    case GRAFT_ATTR_INT:
    case GRAFT_ATTR_BOOL:
      proto->has_i = TRUE;
      proto->i = attribute->i;
      break;
    case GRAFT_ATTR_STRING:
      proto->has_s = TRUE;
      if (attribute->s != NULL)
        {
          proto->s.data = (uint8_t *) g_bytes_get_data (attribute->s, &len);
          proto->s.len = len;
        }
      break;
    case GRAFT_ATTR_TENSOR:
      if (attribute->t != NULL
          && (proto->t = graft_onnx_tensor_to_proto (context, attribute->t, attribute->t->name, error)) == NULL)
        return FALSE;
      break;
    case GRAFT_ATTR_SPARSE_TENSOR:
      if (attribute->t != NULL
          && (proto->sparse_tensor = graft_onnx_tensor_to_sparse_proto (context, attribute->t, error)) == NULL)
        return FALSE;
      break;
    case GRAFT_ATTR_GRAPH:
      if (attribute->g != NULL && (proto->g = graph_to_proto (context, attribute->g, error)) == NULL)
        return FALSE;
      break;
    case GRAFT_ATTR_TYPE:
      {
        g_autofree char *text = graft_attribute_dup_string (attribute);

        proto->tp = kept_attribute_type (context, attribute, 0, attribute->s);
        if (proto->tp == NULL)
          proto->tp = graft_onnx_type_from_string (context, text);
        if (proto->tp == NULL)
          return fail_attribute (error, node, attribute, "the type is not in ONNX's type syntax");
      }
      break;
    case GRAFT_ATTR_FLOATS:
      proto->n_floats = attribute->floats->len;
      proto->floats = graft_onnx_write_alloc (context, sizeof (float) * attribute->floats->len);
      for (guint i = 0; i < attribute->floats->len; i++)
        proto->floats[i] = (float) g_array_index (attribute->floats, double, i);
      break;
    case GRAFT_ATTR_INTS:
      proto->n_ints = attribute->ints->len;
      proto->ints = (int64_t *) attribute->ints->data;
      break;
    case GRAFT_ATTR_STRINGS:
      proto->n_strings = attribute->strings->len;
      proto->strings = graft_onnx_write_alloc (context, sizeof (ProtobufCBinaryData) * attribute->strings->len);
      for (guint i = 0; i < attribute->strings->len; i++)
        {
          proto->strings[i].data = (uint8_t *) g_bytes_get_data (g_ptr_array_index (attribute->strings, i), &len);
          proto->strings[i].len = len;
        }
      break;
    case GRAFT_ATTR_TYPES:
      proto->n_type_protos = attribute->strings->len;
      proto->type_protos = graft_onnx_write_alloc (context, sizeof (gpointer) * attribute->strings->len);
      for (guint i = 0; i < attribute->strings->len; i++)
        {
          GBytes *bytes = g_ptr_array_index (attribute->strings, i);
          g_autofree char *text = g_strndup (g_bytes_get_data (bytes, NULL), g_bytes_get_size (bytes));

          proto->type_protos[i] = kept_attribute_type (context, attribute, i, bytes);
          if (proto->type_protos[i] == NULL)
            proto->type_protos[i] = graft_onnx_type_from_string (context, text);
          if (proto->type_protos[i] == NULL)
            return fail_attribute (error, node, attribute, "a type is not in ONNX's type syntax");
        }
      break;
    case GRAFT_ATTR_TENSORS:
      if (tensors_to_sparse_protos (context, attribute, proto))
        break;
      proto->n_tensors = attribute->tensors->len;
      proto->tensors = graft_onnx_write_alloc (context, sizeof (gpointer) * attribute->tensors->len);
      for (guint i = 0; i < attribute->tensors->len; i++)
        {
          GraftTensor *tensor = g_ptr_array_index (attribute->tensors, i);
          if ((proto->tensors[i] = graft_onnx_tensor_to_proto (context, tensor, tensor->name, error)) == NULL)
            return FALSE;
        }
      break;
    case GRAFT_ATTR_GRAPHS:
      proto->n_graphs = attribute->graphs->len;
      proto->graphs = graft_onnx_write_alloc (context, sizeof (gpointer) * attribute->graphs->len);
      for (guint i = 0; i < attribute->graphs->len; i++)
        if ((proto->graphs[i] = graph_to_proto (context, g_ptr_array_index (attribute->graphs, i), error)) == NULL)
          return FALSE;
      break;
    default:
      return fail_attribute (error, node, attribute, "unknown attribute type");
    }
  return TRUE;
}

static Onnx__AttributeProto__AttributeType
attribute_type_to_proto (GraftAttrType type)
{
  switch (type)
    {
    case GRAFT_ATTR_FLOAT: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    case GRAFT_ATTR_INT:
    case GRAFT_ATTR_BOOL: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    case GRAFT_ATTR_STRING: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    case GRAFT_ATTR_TENSOR: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    case GRAFT_ATTR_GRAPH: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
    case GRAFT_ATTR_FLOATS: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
    case GRAFT_ATTR_INTS: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    case GRAFT_ATTR_STRINGS: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
    case GRAFT_ATTR_TENSORS: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS;
    case GRAFT_ATTR_GRAPHS: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS;
    case GRAFT_ATTR_TYPE: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO;
    case GRAFT_ATTR_TYPES: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS;
    case GRAFT_ATTR_SPARSE_TENSOR: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR;
    default: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED;
    }
}

static Onnx__AttributeProto *
attribute_to_proto (GraftOnnxWriteContext *context, GraftNode *node, GraftAttribute *attribute, GError **error)
{
  Onnx__AttributeProto *proto = ALLOC_MESSAGE (context, Onnx__AttributeProto, ONNX__ATTRIBUTE_PROTO__INIT);

  proto->name = attribute->name;
  proto->doc_string = graft_onnx_write_string (attribute->doc_string);
  proto->ref_attr_name = graft_onnx_write_string (attribute->ref_attr_name);
  proto->type = attribute_type_to_proto (attribute->type);
  proto->has_type = proto->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED;
  /* A reference to a caller's attribute carries no value of its own. */
  if (attribute->ref_attr_name == NULL && !attribute_values_to_proto (context, node, attribute, proto, error))
    return NULL;
  return proto;
}

static char **
value_names (GraftOnnxWriteContext *context, GPtrArray *values)
{
  char **names = graft_onnx_write_alloc (context, sizeof (char *) * values->len);

  for (guint i = 0; i < values->len; i++)
    {
      GraftValue *value = g_ptr_array_index (values, i);
      names[i] = value ? value->name : "";
    }
  return names;
}

static Onnx__NodeProto *
node_to_proto (GraftOnnxWriteContext *context, GraftNode *node, GError **error)
{
  Onnx__NodeProto *proto = ALLOC_MESSAGE (context, Onnx__NodeProto, ONNX__NODE_PROTO__INIT);

  proto->name = graft_onnx_write_string (node->name);
  proto->op_type = (char *) node->op_type;
  proto->domain = domain_to_proto (node->domain);
  proto->doc_string = graft_onnx_write_string (node->doc_string);
  proto->n_input = node->inputs->len;
  proto->input = value_names (context, node->inputs);
  proto->n_output = node->outputs->len;
  proto->output = value_names (context, node->outputs);
  proto->n_attribute = node->attributes->len;
  proto->attribute = graft_onnx_write_alloc (context, sizeof (gpointer) * node->attributes->len);
  for (guint i = 0; i < node->attributes->len; i++)
    if ((proto->attribute[i] = attribute_to_proto (context, node, g_ptr_array_index (node->attributes, i), error)) == NULL)
      return NULL;
  proto->n_metadata_props = graft_node_get_n_metadata (node);
  proto->metadata_props = graft_onnx_write_alloc (context, sizeof (gpointer) * proto->n_metadata_props);
  for (guint i = 0; i < proto->n_metadata_props; i++)
    proto->metadata_props[i] = graft_onnx_string_entry_to_proto (context, g_ptr_array_index (node->metadata_keys, i),
                                                      g_ptr_array_index (node->metadata_values, i));
  if (!graft_onnx_restore_kept_fields (context, &proto->base, node->onnx_kept_fields, error))
    return NULL;
  return proto;
}

static Onnx__ValueInfoProto *
value_info_to_proto (GraftOnnxWriteContext *context, const GraftValue *value)
{
  Onnx__ValueInfoProto *proto = ALLOC_MESSAGE (context, Onnx__ValueInfoProto, ONNX__VALUE_INFO_PROTO__INIT);

  proto->name = value->name;
  proto->doc_string = graft_onnx_write_string (value->doc_string);
  proto->type = graft_onnx_value_type_to_proto (context, value);
  /* The fields were read as protobuf and parse again. */
  graft_onnx_restore_kept_fields (context, &proto->base, value->onnx_kept_fields, NULL);
  return proto;
}

static Onnx__ValueInfoProto **
value_infos_to_proto (GraftOnnxWriteContext *context, GPtrArray *values)
{
  Onnx__ValueInfoProto **protos = graft_onnx_write_alloc (context, sizeof (gpointer) * values->len);

  for (guint i = 0; i < values->len; i++)
    protos[i] = value_info_to_proto (context, g_ptr_array_index (values, i));
  return protos;
}

static gboolean
has_declared_type (const GraftValue *value)
{
  return value->dtype != GRAFT_DTYPE_UNDEFINED || value->shape.rank >= 0
         || (value->kind != GRAFT_VALUE_TENSOR && value->type_string != NULL);
}

typedef struct {
  guint position;          /* in the file's value_info; G_MAXUINT: new */
  Onnx__ValueInfoProto *proto;
} PlacedValueInfo;

static int
compare_placed (gconstpointer a, gconstpointer b)
{
  guint pa = ((const PlacedValueInfo *) a)->position;
  guint pb = ((const PlacedValueInfo *) b)->position;

  return pa < pb ? -1 : pa > pb;
}

/* The file's value_info entries first, in its order (also those naming no
 * value of the graph, kept aside by the reader, and those of graph inputs
 * and outputs); then values that gained a declared type since. An
 * initializer gets an entry only if the file had one: the reader gives it
 * the tensor's type either way. */
static gboolean
value_info_to_protos (GraftOnnxWriteContext *context, GraftGraph *graph, Onnx__GraphProto *proto, GError **error)
{
  g_autoptr(GArray) placed = g_array_new (FALSE, FALSE, sizeof (PlacedValueInfo));
  GArray *unbound = graph->onnx_unbound_value_info;

  for (guint i = 0; i < graph->values->len; i++)
    {
      GraftValue *value = g_ptr_array_index (graph->values, i);
      PlacedValueInfo entry = { value->onnx_value_info_position ? value->onnx_value_info_position : G_MAXUINT, NULL };

      /* Inputs and outputs are declared in their own lists. */
      if (value->onnx_value_info_position == 0
          && (value->is_graph_input || value->is_graph_output || value->initializer != NULL
              || !has_declared_type (value)))
        continue;
      entry.proto = value_info_to_proto (context, value);
      g_array_append_val (placed, entry);
    }
  for (guint i = 0; unbound != NULL && i < unbound->len; i++)
    {
      GraftOnnxUnboundValueInfo *kept = &g_array_index (unbound, GraftOnnxUnboundValueInfo, i);
      PlacedValueInfo entry = { kept->position, (Onnx__ValueInfoProto *) graft_onnx_unpack_kept (
                                                  context, &onnx__value_info_proto__descriptor, kept->value_info) };
      if (entry.proto == NULL)
        {
          g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_MALFORMED,
                       "graph '%s': a value_info entry kept from the original file does not parse", graph->name);
          return FALSE;
        }
      g_array_append_val (placed, entry);
    }
  g_array_sort (placed, compare_placed);   /* stable */
  proto->n_value_info = placed->len;
  proto->value_info = graft_onnx_write_alloc (context, sizeof (gpointer) * placed->len);
  for (guint i = 0; i < placed->len; i++)
    proto->value_info[i] = g_array_index (placed, PlacedValueInfo, i).proto;
  return TRUE;
}

/* Initializers read sparse are saved sparse (graph.sparse_initializer)
 * unless an edit replaced their data (graft_tensor_set_data() and new
 * tensors have no onnx_sparse); all others dense. */
static gboolean
initializers_to_proto (GraftOnnxWriteContext *context, GraftGraph *graph, Onnx__GraphProto *proto, GError **error)
{
  guint n = graph->initializers->len;

  proto->initializer = graft_onnx_write_alloc (context, sizeof (gpointer) * n);
  proto->sparse_initializer = graft_onnx_write_alloc (context, sizeof (gpointer) * n);
  for (guint i = 0; i < n; i++)
    {
      GraftValue *value = g_ptr_array_index (graph->initializers, i);
      Onnx__TensorProto *dense;

      if (value->initializer->onnx_sparse != NULL)
        {
          /* As read, or (when that pointed at external data) its non-zeros. */
          Onnx__SparseTensorProto *sparse = graft_onnx_tensor_to_sparse_proto (context, value->initializer, error);

          if (sparse == NULL)
            return FALSE;
          sparse->values->name = value->name;
          proto->sparse_initializer[proto->n_sparse_initializer++] = sparse;
          continue;
        }
      if ((dense = graft_onnx_initializer_to_proto (context, value->initializer, value->name, error)) == NULL)
        return FALSE;
      proto->initializer[proto->n_initializer++] = dense;
    }
  return TRUE;
}

static Onnx__GraphProto *
graph_to_proto (GraftOnnxWriteContext *context, GraftGraph *graph, GError **error)
{
  Onnx__GraphProto *proto = ALLOC_MESSAGE (context, Onnx__GraphProto, ONNX__GRAPH_PROTO__INIT);

  proto->name = graft_onnx_write_string (graph->name);
  proto->doc_string = graft_onnx_write_string (graph->doc_string);

  proto->n_node = graph->nodes->len;
  proto->node = graft_onnx_write_alloc (context, sizeof (gpointer) * graph->nodes->len);
  for (guint i = 0; i < graph->nodes->len; i++)
    if ((proto->node[i] = node_to_proto (context, g_ptr_array_index (graph->nodes, i), error)) == NULL)
      return NULL;

  if (!initializers_to_proto (context, graph, proto, error))
    return NULL;

  proto->n_input = graph->inputs->len;
  proto->input = value_infos_to_proto (context, graph->inputs);
  proto->n_output = graph->outputs->len;
  proto->output = value_infos_to_proto (context, graph->outputs);

  if (!value_info_to_protos (context, graph, proto, error))
    return NULL;
  if (!graft_onnx_restore_kept_fields (context, &proto->base, graph->onnx_kept_fields, error))
    return NULL;
  return proto;
}

static Onnx__OperatorSetIdProto *
opset_to_proto (GraftOnnxWriteContext *context, const char *domain, gint64 version)
{
  Onnx__OperatorSetIdProto *proto = ALLOC_MESSAGE (context, Onnx__OperatorSetIdProto,
                                                   ONNX__OPERATOR_SET_ID_PROTO__INIT);

  proto->domain = domain_to_proto (domain);
  if (proto->domain == NULL)
    proto->domain = "";   /* written explicitly, as onnx.helper does */
  proto->has_version = TRUE;
  proto->version = version;
  return proto;
}

static Onnx__FunctionProto *
function_to_proto (GraftOnnxWriteContext *context, GraftFunction *function, GError **error)
{
  Onnx__FunctionProto *proto = ALLOC_MESSAGE (context, Onnx__FunctionProto, ONNX__FUNCTION_PROTO__INIT);
  GraftGraph *body = function->body;
  GHashTableIter iter;
  gpointer key, version;
  guint n = 0;

  proto->name = function->name;
  proto->domain = function->domain ? function->domain : "";
  proto->doc_string = graft_onnx_write_string (function->doc_string);
  proto->n_input = body->inputs->len;
  proto->input = value_names (context, body->inputs);
  proto->n_output = body->outputs->len;
  proto->output = value_names (context, body->outputs);
  if (function->attribute_names != NULL)
    {
      proto->n_attribute = function->attribute_names->len;
      proto->attribute = (char **) function->attribute_names->pdata;
    }
  proto->n_node = body->nodes->len;
  proto->node = graft_onnx_write_alloc (context, sizeof (gpointer) * body->nodes->len);
  for (guint i = 0; i < body->nodes->len; i++)
    if ((proto->node[i] = node_to_proto (context, g_ptr_array_index (body->nodes, i), error)) == NULL)
      return NULL;
  if (function->opsets != NULL)
    {
      g_autoptr(GHashTable) written = g_hash_table_new (g_str_hash, g_str_equal);

      proto->opset_import = graft_onnx_write_alloc (context, sizeof (gpointer) * g_hash_table_size (function->opsets));
      /* File order first; then any domain added since. */
      for (guint i = 0; function->opset_order != NULL && i < function->opset_order->len; i++)
        {
          key = g_ptr_array_index (function->opset_order, i);
          version = g_hash_table_lookup (function->opsets, key);
          if (version != NULL && g_hash_table_add (written, key))
            proto->opset_import[n++] = opset_to_proto (context, key, *(gint64 *) version);
        }
      g_hash_table_iter_init (&iter, function->opsets);
      while (g_hash_table_iter_next (&iter, &key, &version))
        if (g_hash_table_add (written, key))
          proto->opset_import[n++] = opset_to_proto (context, key, *(gint64 *) version);
      proto->n_opset_import = n;
    }
  if (!graft_onnx_restore_kept_fields (context, &proto->base, function->onnx_kept_fields, error))
    return NULL;
  return proto;
}

static Onnx__ModelProto *
model_to_proto (GraftOnnxWriteContext *context, GraftModel *model, GError **error)
{
  Onnx__ModelProto *proto = ALLOC_MESSAGE (context, Onnx__ModelProto, ONNX__MODEL_PROTO__INIT);
  GPtrArray *domains = graft_model_get_opset_order (model);
  GPtrArray *functions = graft_model_get_functions (model);
  guint n_metadata = graft_model_get_n_metadata (model);

  if (graft_model_get_format (model) != GRAFT_MODEL_FORMAT_ONNX || graft_model_get_graph (model) == NULL)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED,
                   "only ONNX models can be saved as ONNX; this is a %s model (export it with torch.onnx.export)",
                   graft_model_format_to_string (graft_model_get_format (model)));
      return NULL;
    }

  /* -1 is the IR's "absent". */
  proto->has_ir_version = graft_model_get_ir_version (model) >= 0;
  proto->ir_version = graft_model_get_ir_version (model);
  proto->producer_name = graft_onnx_write_string (graft_model_get_producer_name (model));
  proto->producer_version = graft_onnx_write_string (graft_model_get_producer_version (model));
  proto->domain = graft_onnx_write_string (graft_model_get_domain (model));
  proto->has_model_version = graft_model_get_model_version (model) >= 0;
  proto->model_version = graft_model_get_model_version (model);
  proto->doc_string = graft_onnx_write_string (graft_model_get_doc_string (model));

  proto->n_opset_import = domains->len;
  proto->opset_import = graft_onnx_write_alloc (context, sizeof (gpointer) * domains->len);
  for (guint i = 0; i < domains->len; i++)
    {
      const char *domain = g_ptr_array_index (domains, i);
      proto->opset_import[i] = opset_to_proto (context, domain, graft_model_get_opset (model, domain));
    }

  proto->n_metadata_props = n_metadata;
  proto->metadata_props = graft_onnx_write_alloc (context, sizeof (gpointer) * n_metadata);
  for (guint i = 0; i < n_metadata; i++)
    {
      const char *key, *value;

      graft_model_get_metadata (model, i, &key, &value);
      proto->metadata_props[i] = graft_onnx_string_entry_to_proto (context, key, value);
    }

  if ((proto->graph = graph_to_proto (context, graft_model_get_graph (model), error)) == NULL)
    return NULL;

  proto->n_functions = functions->len;
  proto->functions = graft_onnx_write_alloc (context, sizeof (gpointer) * functions->len);
  for (guint i = 0; i < functions->len; i++)
    if ((proto->functions[i] = function_to_proto (context, g_ptr_array_index (functions, i), error)) == NULL)
      return NULL;
  /* training_info and the rest pass through unchanged (onnx/kept-fields.h). */
  if (!graft_onnx_restore_kept_fields (context, &proto->base, graft_model_get_onnx_kept_fields (model), error))
    return NULL;
  return proto;
}

static gboolean
check_size (gsize size, gboolean with_data_file, GError **error)
{
  if (size >= MAX_MODEL_BYTES)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED,
                   "the model would be %" G_GSIZE_FORMAT " bytes, over protobuf's 2 GiB limit%s", size,
                   with_data_file ? " even with its weights in a data file"
                                  : "; save it to a file, where its weights go to a data file beside it");
      return FALSE;
    }
  return TRUE;
}

GBytes *
graft_onnx_model_to_bytes (GraftModel *model, GError **error)
{
  GraftOnnxWriteContext context;
  Onnx__ModelProto *proto;
  GBytes *bytes = NULL;

  graft_onnx_write_context_init (&context);
  proto = model_to_proto (&context, model, error);
  if (proto != NULL)
    {
      gsize size = onnx__model_proto__get_packed_size (proto);

      if (check_size (size, FALSE, error))
        {
          guint8 *buffer = g_malloc (MAX (size, 1));
          onnx__model_proto__pack (proto, buffer);
          bytes = g_bytes_new_take (buffer, size);
        }
    }
  graft_onnx_write_context_clear (&context);
  return bytes;
}

/* Streams the packed message to a file through a staging buffer, so a large
 * model is never held twice in memory. */
typedef struct {
  ProtobufCBuffer base;
  int fd;
  int saved_errno;
  guint8 *staging;
  gsize used;
} FileBuffer;

#define STAGING_SIZE ((gsize) 1 << 20)

static void
write_all (FileBuffer *buffer, const guint8 *data, gsize len)
{
  while (len > 0 && buffer->saved_errno == 0)
    {
      ssize_t n = write (buffer->fd, data, len);

      if (n < 0)
        {
          if (errno != EINTR)
            buffer->saved_errno = errno;
          continue;
        }
      data += n;
      len -= n;
    }
}

static void
file_buffer_flush (FileBuffer *buffer)
{
  write_all (buffer, buffer->staging, buffer->used);
  buffer->used = 0;
}

static void
file_buffer_append (ProtobufCBuffer *base, size_t len, const uint8_t *data)
{
  FileBuffer *buffer = (FileBuffer *) base;

  if (buffer->used + len > STAGING_SIZE)
    file_buffer_flush (buffer);
  if (len >= STAGING_SIZE)
    write_all (buffer, data, len);
  else if (len > 0)
    {
      memcpy (buffer->staging + buffer->used, data, len);
      buffer->used += len;
    }
}

static gboolean
write_proto_to_fd (int fd, const char *path, gpointer user_data, GError **error)
{
  Onnx__ModelProto *proto = user_data;
  FileBuffer buffer = { { file_buffer_append }, fd, 0, g_malloc (STAGING_SIZE), 0 };

  onnx__model_proto__pack_to_buffer (proto, &buffer.base);
  file_buffer_flush (&buffer);
  g_free (buffer.staging);
  if (buffer.saved_errno != 0)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_IO, "cannot save '%s': writing failed: %s",
                   path, g_strerror (buffer.saved_errno));
      return FALSE;
    }
  return TRUE;
}

/* Visits the tensors of graph and its subgraphs (initializers and
 * attribute tensors) until visit returns TRUE; returns that tensor. */
typedef gboolean (*TensorVisitor) (GraftTensor *tensor, gpointer data);

static GraftTensor *
visit_tensors (GraftGraph *graph, TensorVisitor visit, gpointer data)
{
  if (graph == NULL)
    return NULL;
  for (guint i = 0; i < graph->initializers->len; i++)
    {
      GraftValue *value = g_ptr_array_index (graph->initializers, i);
      if (value->initializer != NULL && visit (value->initializer, data))
        return value->initializer;
    }
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      for (guint j = 0; j < node->attributes->len; j++)
        {
          GraftAttribute *attribute = g_ptr_array_index (node->attributes, j);
          GraftTensor *found = attribute->t != NULL && visit (attribute->t, data) ? attribute->t
                                                                                 : visit_tensors (attribute->g, visit, data);
          for (guint k = 0; found == NULL && attribute->tensors && k < attribute->tensors->len; k++)
            if (visit (g_ptr_array_index (attribute->tensors, k), data))
              found = g_ptr_array_index (attribute->tensors, k);
          for (guint k = 0; found == NULL && attribute->graphs && k < attribute->graphs->len; k++)
            found = visit_tensors (g_ptr_array_index (attribute->graphs, k), visit, data);
          if (found != NULL)
            return found;
        }
    }
  return NULL;
}

static GraftTensor *
visit_model_tensors (GraftModel *model, TensorVisitor visit, gpointer data)
{
  GPtrArray *functions = graft_model_get_functions (model);
  GraftTensor *found = visit_tensors (graft_model_get_graph (model), visit, data);

  for (guint i = 0; found == NULL && functions != NULL && i < functions->len; i++)
    found = visit_tensors (((GraftFunction *) g_ptr_array_index (functions, i))->body, visit, data);
  return found;
}

static gboolean
is_external_data_of (GraftTensor *tensor, gpointer target)
{
  return tensor->external_file != NULL && graft_external_file_is (tensor->external_file, target);
}

static gboolean
is_external (GraftTensor *tensor, G_GNUC_UNUSED gpointer data)
{
  return graft_tensor_is_external (tensor);
}

static gboolean
add_bytes (GraftTensor *tensor, gpointer total)
{
  *(guint64 *) total += graft_tensor_get_nbytes (tensor);
  return FALSE;
}

/* Saving over a file the model still reads its weights from would lose
 * them (and, written in place, read back what is being written). */
static GraftTensor *
external_data_written_over (GraftModel *model, const char *path)
{
  GStatBuf target;

  if (g_stat (path, &target) != 0)
    return NULL;
  return visit_model_tensors (model, is_external_data_of, &target);
}

/* Where the data file of a model saved at path goes: beside the file
 * that is finally written (a symbolic link's target), named after it as
 * torch.onnx and onnx name theirs ("model.onnx.data"); NULL when path is
 * no regular file (a pipe has no folder for a data file). */
static char *
data_file_path (const char *path)
{
  g_autofree char *target = NULL;
  GStatBuf st;

  if (g_stat (path, &st) == 0)
    {
      if (!S_ISREG (st.st_mode))
        return NULL;
      target = realpath (path, NULL);
    }
  return g_strconcat (target != NULL ? target : path, ".data", NULL);
}

typedef enum {
  WEIGHTS_INLINE,
  WEIGHTS_KEPT_IN_DATA_FILE,   /* the model read them from one */
  WEIGHTS_TOO_LARGE_INLINE,    /* over protobuf's limit */
} WeightsPlace;

static WeightsPlace
weights_place (GraftModel *model)
{
  guint64 total = 0;

  visit_model_tensors (model, add_bytes, &total);
  if (total >= MAX_MODEL_BYTES - DATA_FILE_MARGIN_BYTES)
    return WEIGHTS_TOO_LARGE_INLINE;
  return visit_model_tensors (model, is_external, NULL) != NULL ? WEIGHTS_KEPT_IN_DATA_FILE : WEIGHTS_INLINE;
}

gboolean
graft_onnx_write_file (GraftModel *model, const char *path, GraftOnnxWriteFlags flags, GError **error)
{
  GraftOnnxWriteContext context;
  Onnx__ModelProto *proto;
  const char *source = graft_model_get_path (model);
  GraftTensor *external;
  g_autofree char *data_path = NULL;
  WeightsPlace place;
  gboolean ok = FALSE;

  if (!graft_atomic_check_target (path, source, (flags & GRAFT_ONNX_WRITE_OVERWRITE_SOURCE) != 0, error))
    return FALSE;
  if ((external = external_data_written_over (model, path)) != NULL)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSAFE,
                   "'%s' holds the external data of '%s', which the model still reads; choose another name", path,
                   external->name);
      return FALSE;
    }

  graft_onnx_write_context_init (&context);
  /* Weights stay in a data file when the model read them from one, and
   * go to one when they would not fit protobuf's limit inline; written
   * to a pipe, they are inline when they fit. */
  place = weights_place (model);
  data_path = place != WEIGHTS_INLINE ? data_file_path (path) : NULL;
  if (data_path == NULL && place == WEIGHTS_TOO_LARGE_INLINE)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED,
                   "'%s' is not a regular file: the model's weights are over protobuf's 2 GiB limit and need a data "
                   "file beside the model", path);
      goto out;
    }
  if (data_path != NULL)
    {
      g_autofree char *location = g_path_get_basename (data_path);
      context.data_file = graft_onnx_data_file_new (location);
    }
  proto = model_to_proto (&context, model, error);
  if (proto == NULL || !check_size (onnx__model_proto__get_packed_size (proto), context.data_file != NULL, error))
    goto out;
  /* The data first: a model file never names offsets its data file does
   * not hold yet. Replacing a data file the model still reads is safe, as
   * the model reads through the descriptor it opened. */
  if (context.data_file != NULL && !graft_onnx_data_file_is_empty (context.data_file)
      && !graft_atomic_save (data_path, graft_onnx_data_file_write, context.data_file, error))
    goto out;
  ok = graft_atomic_save (path, write_proto_to_fd, proto, error);
out:
  g_clear_pointer (&context.data_file, graft_onnx_data_file_free);
  graft_onnx_write_context_clear (&context);
  return ok;
}
