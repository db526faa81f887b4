/* The description of a model that graft-cli info --json prints and the
 * Python module's Model.info returns. */
#include <json-glib/json-glib.h>
#include <string.h>

#include "report/model-info.h"

static void
count_op (GraftNode *node, gpointer user_data)
{
  GHashTable *counts = user_data;

  g_hash_table_replace (counts, (gpointer) node->op,
                        GUINT_TO_POINTER (GPOINTER_TO_UINT (g_hash_table_lookup (counts, node->op)) + 1));
}

static int
compare_by_name (gconstpointer a, gconstpointer b)
{
  return strcmp (((const GraftOpCount *) a)->op, ((const GraftOpCount *) b)->op);
}

static int
compare_by_count (gconstpointer a, gconstpointer b)
{
  const GraftOpCount *x = a, *y = b;

  if (x->count != y->count)
    return x->count < y->count ? 1 : -1;
  return strcmp (x->op, y->op);
}

GArray *
graft_op_histogram (GraftGraph *graph, gboolean by_count)
{
  GCompareFunc order = by_count ? compare_by_count : compare_by_name;
  g_autoptr(GHashTable) counts = g_hash_table_new (g_direct_hash, g_direct_equal);
  GArray *list = g_array_new (FALSE, FALSE, sizeof (GraftOpCount));
  GHashTableIter iter;
  gpointer key, value;

  graft_graph_foreach_node_recursive (graph, count_op, counts);
  g_hash_table_iter_init (&iter, counts);
  while (g_hash_table_iter_next (&iter, &key, &value))
    {
      GraftOpCount entry = { key, GPOINTER_TO_UINT (value) };
      g_array_append_val (list, entry);
    }
  g_array_sort (list, order);
  return list;
}

GPtrArray *
graft_graph_list_real_inputs (GraftGraph *graph)
{
  GPtrArray *inputs = g_ptr_array_new ();

  for (guint i = 0; i < graph->inputs->len; i++)
    {
      GraftValue *value = g_ptr_array_index (graph->inputs, i);
      if (value->initializer == NULL)
        g_ptr_array_add (inputs, value);
    }
  return inputs;
}

void
graft_graph_count_weights (GraftGraph *graph, gint64 *elements, guint64 *bytes)
{
  *elements = 0;
  *bytes = 0;
  for (guint i = 0; i < graph->initializers->len; i++)
    {
      GraftTensor *tensor = ((GraftValue *) g_ptr_array_index (graph->initializers, i))->initializer;
      gint64 numel = graft_tensor_get_numel (tensor);

      if (numel > 0)
        *elements += numel;
      *bytes += graft_tensor_get_nbytes (tensor);
    }
}

/* ---- JSON ---- */

/* A symbolic dim with a known range (torch.export range_constraints) is
 * {"name": "s77", "min": 2, "max": 16}; max is null when unbounded. */
static void
add_symbolic_dim (JsonBuilder *builder, GraftModel *model, const char *symbol)
{
  gint64 min, max;

  if (!graft_model_get_dim_range (model, symbol, &min, &max))
    {
      json_builder_add_string_value (builder, symbol);
      return;
    }
  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "name");
  json_builder_add_string_value (builder, symbol);
  json_builder_set_member_name (builder, "min");
  json_builder_add_int_value (builder, min);
  json_builder_set_member_name (builder, "max");
  if (max < 0)
    json_builder_add_null_value (builder);
  else
    json_builder_add_int_value (builder, max);
  json_builder_end_object (builder);
}

static void
add_shape_member (JsonBuilder *builder, GraftModel *model, const GraftShape *shape)
{
  json_builder_set_member_name (builder, "shape");
  if (shape->rank < 0)
    {
      json_builder_add_null_value (builder);
      return;
    }
  json_builder_begin_array (builder);
  for (int i = 0; i < shape->rank; i++)
    switch (shape->dims[i].kind)
      {
      case GRAFT_DIM_FIXED:
        json_builder_add_int_value (builder, shape->dims[i].value);
        break;
      case GRAFT_DIM_SYMBOLIC:
        add_symbolic_dim (builder, model, shape->dims[i].symbol);
        break;
      default:
        json_builder_add_null_value (builder);
        break;
      }
  json_builder_end_array (builder);
}

static void
add_values_member (JsonBuilder *builder, GraftModel *model, const char *member, GPtrArray *values)
{
  json_builder_set_member_name (builder, member);
  json_builder_begin_array (builder);
  for (guint i = 0; i < values->len; i++)
    {
      GraftValue *value = g_ptr_array_index (values, i);

      json_builder_begin_object (builder);
      json_builder_set_member_name (builder, "name");
      json_builder_add_string_value (builder, value->name);
      json_builder_set_member_name (builder, "dtype");
      json_builder_add_string_value (builder, graft_dtype_to_string (value->dtype));
      add_shape_member (builder, model, &value->shape);
      if (value->type_string != NULL)
        {
          json_builder_set_member_name (builder, "type");
          json_builder_add_string_value (builder, value->type_string);
        }
      if (value->is_graph_input && value->kind == GRAFT_VALUE_OPTIONAL)
        {
          /* None when left out (TorchScript's forward(x, mask=None)) */
          json_builder_set_member_name (builder, "optional");
          json_builder_add_boolean_value (builder, TRUE);
        }
      json_builder_end_object (builder);
    }
  json_builder_end_array (builder);
}

static void
add_graph_object (JsonBuilder *builder, const char *name, const char *domain, GraftGraph *graph)
{
  g_autoptr(GArray) ops = graft_op_histogram (graph, FALSE);
  gint64 elements;
  guint64 bytes;

  graft_graph_count_weights (graph, &elements, &bytes);
  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "name");
  json_builder_add_string_value (builder, name);
  if (domain != NULL)
    {
      json_builder_set_member_name (builder, "domain");
      json_builder_add_string_value (builder, domain);
    }
  json_builder_set_member_name (builder, "nodes");
  json_builder_add_int_value (builder, graph->nodes->len);
  json_builder_set_member_name (builder, "nodes_recursive");
  json_builder_add_int_value (builder, graft_graph_count_nodes_recursive (graph));
  json_builder_set_member_name (builder, "initializers");
  json_builder_add_int_value (builder, graph->initializers->len);
  json_builder_set_member_name (builder, "initializer_elements");
  json_builder_add_int_value (builder, elements);
  json_builder_set_member_name (builder, "initializer_bytes");
  json_builder_add_int_value (builder, (gint64) bytes);
  json_builder_set_member_name (builder, "ops");
  json_builder_begin_object (builder);
  for (guint i = 0; i < ops->len; i++)
    {
      json_builder_set_member_name (builder, g_array_index (ops, GraftOpCount, i).op);
      json_builder_add_int_value (builder, g_array_index (ops, GraftOpCount, i).count);
    }
  json_builder_end_object (builder);
  json_builder_end_object (builder);
}

static void
add_string_member (JsonBuilder *builder, const char *member, const char *value)
{
  json_builder_set_member_name (builder, member);
  if (value != NULL)
    json_builder_add_string_value (builder, value);
  else
    json_builder_add_null_value (builder);
}

static void
add_tensors_member (JsonBuilder *builder, GPtrArray *tensors)
{
  json_builder_set_member_name (builder, "tensors");
  json_builder_begin_array (builder);
  for (guint i = 0; i < tensors->len; i++)
    {
      GraftTensor *tensor = g_ptr_array_index (tensors, i);

      json_builder_begin_object (builder);
      add_string_member (builder, "name", tensor->name);
      add_string_member (builder, "dtype", graft_dtype_to_string (tensor->dtype));
      json_builder_set_member_name (builder, "shape");
      json_builder_begin_array (builder);
      for (int d = 0; d < tensor->rank; d++)
        json_builder_add_int_value (builder, tensor->dims[d]);
      json_builder_end_array (builder);
      json_builder_end_object (builder);
    }
  json_builder_end_array (builder);
}

static void
add_opsets_member (JsonBuilder *builder, GraftModel *model)
{
  GPtrArray *domains = graft_model_get_opset_domains (model);

  json_builder_set_member_name (builder, "opsets");
  json_builder_begin_object (builder);
  for (guint i = 0; domains != NULL && i < domains->len; i++)
    {
      const char *domain = g_ptr_array_index (domains, i);
      json_builder_set_member_name (builder, domain);
      json_builder_add_int_value (builder, graft_model_get_opset (model, domain));
    }
  json_builder_end_object (builder);
}

static void
add_metadata_member (JsonBuilder *builder, GraftModel *model)
{
  json_builder_set_member_name (builder, "metadata");
  json_builder_begin_object (builder);
  for (guint i = 0; i < graft_model_get_n_metadata (model); i++)
    {
      const char *key, *value;
      graft_model_get_metadata (model, i, &key, &value);
      json_builder_set_member_name (builder, key);
      json_builder_add_string_value (builder, value);
    }
  json_builder_end_object (builder);
}

static void
add_dim_ranges_member (JsonBuilder *builder, GraftModel *model)
{
  g_autoptr(GPtrArray) symbols = graft_model_list_dim_ranges (model);

  if (symbols->len == 0)
    return;
  json_builder_set_member_name (builder, "dim_ranges");
  json_builder_begin_array (builder);
  for (guint i = 0; i < symbols->len; i++)
    add_symbolic_dim (builder, model, g_ptr_array_index (symbols, i));
  json_builder_end_array (builder);
}

char *
graft_model_info_to_json (GraftModel *model)
{
  g_autoptr(JsonBuilder) builder = json_builder_new ();
  g_autoptr(JsonGenerator) generator = json_generator_new ();
  g_autoptr(JsonNode) root = NULL;
  GraftGraph *graph = graft_model_get_graph (model);
  GPtrArray *functions = graft_model_get_functions (model);
  GPtrArray *tensors = graft_model_get_tensors (model);

  json_builder_begin_object (builder);
  add_string_member (builder, "format", graft_model_format_to_string (graft_model_get_format (model)));
  add_string_member (builder, "path", graft_model_get_path (model));
  add_string_member (builder, "producer", graft_model_get_producer_name (model));
  add_string_member (builder, "producer_version", graft_model_get_producer_version (model));
  if (graft_model_get_ir_version (model) >= 0)
    {
      json_builder_set_member_name (builder, "ir_version");
      json_builder_add_int_value (builder, graft_model_get_ir_version (model));
    }
  add_opsets_member (builder, model);
  add_metadata_member (builder, model);
  add_dim_ranges_member (builder, model);

  if (graph != NULL)
    {
      g_autoptr(GPtrArray) inputs = graft_graph_list_real_inputs (graph);
      add_values_member (builder, model, "inputs", inputs);
      add_values_member (builder, model, "outputs", graph->outputs);
    }
  else
    {
      g_autoptr(GPtrArray) none = g_ptr_array_new ();
      add_values_member (builder, model, "inputs", none);
      add_values_member (builder, model, "outputs", none);
    }

  json_builder_set_member_name (builder, "graphs");
  json_builder_begin_array (builder);
  if (graph != NULL)
    add_graph_object (builder, graph->name, NULL, graph);
  json_builder_end_array (builder);

  json_builder_set_member_name (builder, "functions");
  json_builder_begin_array (builder);
  for (guint i = 0; functions != NULL && i < functions->len; i++)
    {
      GraftFunction *function = g_ptr_array_index (functions, i);
      add_graph_object (builder, function->name, function->domain, function->body);
    }
  json_builder_end_array (builder);

  if (tensors != NULL && (tensors->len > 0 || graft_model_get_format (model) == GRAFT_MODEL_FORMAT_STATE_DICT))
    add_tensors_member (builder, tensors);
  json_builder_end_object (builder);

  root = json_builder_get_root (builder);
  json_generator_set_root (generator, root);
  json_generator_set_pretty (generator, TRUE);
  return json_generator_to_data (generator, NULL);
}
