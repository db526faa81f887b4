/* graft-cli info FILE [--json]: what a model file is, its interface and
 * which operators it uses. Works on any GraftModel, whatever its format. */
#include <stdio.h>
#include <string.h>
#include <json-glib/json-glib.h>

#include "cli.h"
#include "loader.h"

typedef struct {
  const char *op;
  guint count;
} OpCount;

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
  return strcmp (((const OpCount *) a)->op, ((const OpCount *) b)->op);
}

static int
compare_by_count (gconstpointer a, gconstpointer b)
{
  const OpCount *x = a, *y = b;

  if (x->count != y->count)
    return x->count < y->count ? 1 : -1;
  return strcmp (x->op, y->op);
}

/* Op histogram over the graph and all its nested subgraphs. */
static GArray *
op_histogram (GraftGraph *graph, GCompareFunc order)
{
  g_autoptr(GHashTable) counts = g_hash_table_new (g_direct_hash, g_direct_equal);
  GArray *list = g_array_new (FALSE, FALSE, sizeof (OpCount));
  GHashTableIter iter;
  gpointer key, value;

  graft_graph_foreach_node_recursive (graph, count_op, counts);
  g_hash_table_iter_init (&iter, counts);
  while (g_hash_table_iter_next (&iter, &key, &value))
    {
      OpCount entry = { key, GPOINTER_TO_UINT (value) };
      g_array_append_val (list, entry);
    }
  g_array_sort (list, order);
  return list;
}

/* Graph inputs that are not initializers (old ONNX files list weights as inputs). */
static GPtrArray *
real_inputs (GraftGraph *graph)
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

/* Elements and bytes of a graph's initializers (from their shapes: nothing
 * is read, external data included). */
static void
count_weights (GraftGraph *graph, gint64 *elements, guint64 *bytes)
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
      json_builder_end_object (builder);
    }
  json_builder_end_array (builder);
}

static void
add_graph_object (JsonBuilder *builder, const char *name, const char *domain, GraftGraph *graph)
{
  g_autoptr(GArray) ops = op_histogram (graph, compare_by_name);
  gint64 elements;
  guint64 bytes;

  count_weights (graph, &elements, &bytes);
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
      json_builder_set_member_name (builder, g_array_index (ops, OpCount, i).op);
      json_builder_add_int_value (builder, g_array_index (ops, OpCount, i).count);
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

static char *
model_to_json (GraftModel *model)
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
      g_autoptr(GPtrArray) inputs = real_inputs (graph);
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

/* ---- Text ---- */

static char *
format_value (GraftValue *value)
{
  g_autofree char *shape = graft_shape_to_string (&value->shape);

  if (value->type_string != NULL)
    return g_strdup (value->type_string);
  if (value->dtype == GRAFT_DTYPE_UNDEFINED && value->shape.rank < 0)
    return g_strdup ("? (type not declared)");
  return g_strdup_printf ("%s[%s]",
                          value->dtype == GRAFT_DTYPE_UNDEFINED ? "?" : graft_dtype_to_string (value->dtype), shape);
}

static void
print_values (const char *title, GPtrArray *values)
{
  printf ("%s:\n", title);
  if (values->len == 0)
    printf ("  (none)\n");
  for (guint i = 0; i < values->len; i++)
    {
      GraftValue *value = g_ptr_array_index (values, i);
      g_autofree char *type = format_value (value);
      g_autofree char *name = graft_cli_escape_name (value->name);
      printf ("  %-24s %s\n", name, type);
    }
}

static void
print_graph (const char *kind, const char *name, GraftGraph *graph)
{
  g_autoptr(GArray) ops = op_histogram (graph, compare_by_count);
  guint recursive = graft_graph_count_nodes_recursive (graph);
  g_autofree char *size = NULL;
  g_autofree char *shown_name = graft_cli_escape_name (name);
  gint64 elements;
  guint64 bytes;

  count_weights (graph, &elements, &bytes);
  size = g_format_size_full (bytes, G_FORMAT_SIZE_IEC_UNITS);
  printf ("%s '%s': %u nodes", kind, shown_name, graph->nodes->len);
  if (recursive != graph->nodes->len)
    printf (" (%u with subgraphs)", recursive);
  printf (", %u initializers", graph->initializers->len);
  if (graph->initializers->len > 0)
    printf (" (%" G_GINT64_FORMAT " elements, %s)", elements, size);
  printf ("\n");
  for (guint i = 0; i < ops->len; i++)
    {
      g_autofree char *op = graft_cli_escape_name (g_array_index (ops, OpCount, i).op);
      printf ("  %-32s %u\n", op, g_array_index (ops, OpCount, i).count);
    }
}

static void
print_dim_ranges (GraftModel *model)
{
  g_autoptr(GPtrArray) symbols = graft_model_list_dim_ranges (model);

  for (guint i = 0; i < symbols->len; i++)
    {
      const char *symbol = g_ptr_array_index (symbols, i);
      g_autofree char *range = graft_model_describe_dim_range (model, symbol);
      g_autofree char *shown = graft_cli_escape_name (symbol);
      printf ("Dim:       %s %s\n", shown, range);
    }
}

static void
print_text (GraftModel *model)
{
  GraftGraph *graph = graft_model_get_graph (model);
  GPtrArray *domains = graft_model_get_opset_domains (model);
  GPtrArray *functions = graft_model_get_functions (model);
  GPtrArray *tensors = graft_model_get_tensors (model);
  g_autofree char *description = graft_model_describe (model);

  printf ("File:      %s\n", graft_model_get_path (model) ? graft_model_get_path (model) : "?");
  printf ("Format:    %s", description);
  if (graft_model_get_ir_version (model) >= 0)
    printf (" (IR version %" G_GINT64_FORMAT ")", graft_model_get_ir_version (model));
  printf ("\n");
  if (graft_model_get_producer_name (model) && graft_model_get_producer_name (model)[0])
    {
      const char *version = graft_model_get_producer_version (model);
      g_autofree char *producer = graft_cli_escape_name (graft_model_get_producer_name (model));
      g_autofree char *shown_version = graft_cli_escape_name (version ? version : "");
      printf ("Producer:  %s%s%s\n", producer, shown_version[0] ? " " : "", shown_version);
    }
  /* A TorchScript archive's or torch.export program's only "opset" is its
   * format or schema version, which the Format line already gives. */
  if (domains != NULL && domains->len > 0 && graft_model_get_format (model) == GRAFT_MODEL_FORMAT_ONNX)
    {
      printf ("Opsets:   ");
      for (guint i = 0; i < domains->len; i++)
        {
          const char *domain = g_ptr_array_index (domains, i);
          g_autofree char *shown = graft_cli_escape_name (domain);
          printf ("%s %s %" G_GINT64_FORMAT, i ? "," : "", shown, graft_model_get_opset (model, domain));
        }
      printf ("\n");
    }
  for (guint i = 0; i < graft_model_get_n_metadata (model); i++)
    {
      const char *key, *value;
      graft_model_get_metadata (model, i, &key, &value);
      g_autofree char *shown_key = graft_cli_escape_name (key);
      g_autofree char *shown_value = graft_cli_escape_name (value);
      printf ("Metadata:  %s = %s\n", shown_key, shown_value);
    }
  print_dim_ranges (model);

  /* A weight-only file has no interface to show, only its tensors. */
  if (graph != NULL && graft_model_get_format (model) != GRAFT_MODEL_FORMAT_STATE_DICT)
    {
      g_autoptr(GPtrArray) inputs = real_inputs (graph);
      printf ("\n");
      print_values ("Inputs", inputs);
      print_values ("Outputs", graph->outputs);
      printf ("\n");
      print_graph ("Graph", graph->name, graph);
    }
  for (guint i = 0; functions != NULL && i < functions->len; i++)
    {
      GraftFunction *function = g_ptr_array_index (functions, i);
      printf ("\n");
      print_graph ("Function", function->name, function->body);
    }
  if (tensors != NULL && tensors->len > 0)
    {
      printf ("\nTensors: %u\n", tensors->len);
      for (guint i = 0; i < tensors->len; i++)
        {
          g_autofree char *text = graft_tensor_describe (g_ptr_array_index (tensors, i));
          g_autofree char *name = graft_cli_escape_name (((GraftTensor *) g_ptr_array_index (tensors, i))->name);
          printf ("  %-40s %s\n", name, text);
        }
    }
}

int
graft_cli_info (int argc, char **argv)
{
  gboolean json = FALSE;
  g_auto (GStrv) files = NULL;
  const GOptionEntry entries[] = {
    { "json", 0, 0, G_OPTION_ARG_NONE, &json, "Print JSON instead of text", NULL },
    { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &files, NULL, "FILE" },
    { NULL },
  };
  g_autoptr(GOptionContext) context = g_option_context_new ("FILE - describe a model");
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = NULL;

  g_option_context_add_main_entries (context, entries, NULL);
  g_option_context_set_help_enabled (context, TRUE);
  if (!g_option_context_parse (context, &argc, &argv, &error))
    {
      graft_cli_print_error ("info: %s", error->message);
      return 2;
    }
  if (files == NULL || files[0] == NULL || files[1] != NULL)
    {
      graft_cli_print_error ("info: expected exactly one FILE (graft-cli info FILE [--json])");
      return 2;
    }

  model = graft_model_load (files[0], NULL, NULL, NULL, &error);
  if (model == NULL)
    {
      graft_cli_print_error ("%s", error->message);
      return 1;
    }

  if (json)
    {
      g_autofree char *text = model_to_json (model);
      printf ("%s\n", text);
    }
  else
    print_text (model);
  return fflush (stdout) == 0 ? 0 : 1;
}
