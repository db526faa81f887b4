/* graft-cli info FILE [--json]: what a model file is, its interface and
 * which operators it uses. Works on any GraftModel, whatever its format. */
#include <stdio.h>

#include "cli.h"
#include "loader.h"
#include "report/model-info.h"

/* ---- Text ---- */

static char *
format_value (GraftValue *value)
{
  g_autofree char *shape = graft_shape_to_string (&value->shape);

  if (value->type_string != NULL && value->is_graph_input && value->kind == GRAFT_VALUE_OPTIONAL)
    return g_strdup_printf ("%s (None when not given)", value->type_string);
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
  g_autoptr(GArray) ops = graft_op_histogram (graph, TRUE);
  guint recursive = graft_graph_count_nodes_recursive (graph);
  g_autofree char *size = NULL;
  g_autofree char *shown_name = graft_cli_escape_name (name);
  gint64 elements;
  guint64 bytes;

  graft_graph_count_weights (graph, &elements, &bytes);
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
      g_autofree char *op = graft_cli_escape_name (g_array_index (ops, GraftOpCount, i).op);
      printf ("  %-32s %u\n", op, g_array_index (ops, GraftOpCount, i).count);
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
      g_autoptr(GPtrArray) inputs = graft_graph_list_real_inputs (graph);
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
  gboolean json = FALSE, cost = FALSE, run = FALSE;
  int top = 10;
  g_auto (GStrv) files = NULL;
  g_auto (GStrv) dim_specs = NULL;
  g_auto (GStrv) shape_specs = NULL;
  const GOptionEntry entries[] = {
    { "json", 0, 0, G_OPTION_ARG_NONE, &json, "Print JSON instead of text", NULL },
    { "cost", 0, 0, G_OPTION_ARG_NONE, &cost, "MACs, FLOPs, parameters, activations and peak memory per node and group", NULL },
    { "run", 0, 0, G_OPTION_ARG_NONE, &run, "With --cost: run on random inputs, time every node and measure the peak", NULL },
    { "dim", 0, 0, G_OPTION_ARG_STRING_ARRAY, &dim_specs, "With --cost: a symbolic dim's value (default 1)", "NAME=VALUE" },
    { "shape", 0, 0, G_OPTION_ARG_STRING_ARRAY, &shape_specs, "With --cost: an input's shape", "IN=1x3x224x224" },
    { "top", 0, 0, G_OPTION_ARG_INT, &top, "With --cost: how many nodes to list (default 10)", "N" },
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
  if ((run || dim_specs || shape_specs) && !cost)
    {
      graft_cli_print_error ("info: --run, --dim and --shape go with --cost");
      return 2;
    }

  model = graft_model_load (files[0], NULL, NULL, NULL, &error);
  if (model == NULL)
    {
      graft_cli_print_error ("%s", error->message);
      return 1;
    }

  if (cost)
    {
      g_autoptr(GHashTable) dims = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
      g_autoptr(GPtrArray) shape_list = g_ptr_array_new ();
      g_autoptr(GPtrArray) no_dynamic = g_ptr_array_new ();
      for (guint i = 0; shape_specs && shape_specs[i]; i++)
        g_ptr_array_add (shape_list, shape_specs[i]);
      g_autoptr(GHashTable) shapes = graft_cli_parse_dims (dim_specs, dims, &error)
                                       ? graft_cli_parse_input_shapes (shape_list, no_dynamic, &error) : NULL;
      if (shapes == NULL)
        {
          graft_cli_print_error ("info: %s", error->message);
          return 2;
        }
      int status = graft_cli_print_cost (model, shapes, dims, run, json, top);
      return fflush (stdout) == 0 ? status : 1;
    }
  if (json)
    {
      g_autofree char *text = graft_model_info_to_json (model);
      printf ("%s\n", text);
    }
  else
    print_text (model);
  return fflush (stdout) == 0 ? 0 : 1;
}
