/* graft-cli convert IN.pt -o OUT.onnx [--opset N] [--shape x=1x3x224x224]
 * [--dtype t=int64]... [--dynamic x:0=batch]... [--allow-custom]: a TorchScript archive (or a
 * torch.export program) lowered to ONNX by model/lower, without PyTorch;
 * or, with -o OUT.pt2, a TorchScript archive as a torch.export program
 * (model/migrate). The output's format follows its extension. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "formats.h"
#include "loader.h"
#include "lower/lower.h"
#include "migrate/torchscript-to-pt2.h"
#include "onnx/writer.h"

static void
print_usage (void)
{
  printf ("Usage: graft-cli convert IN.pt -o OUT.onnx|OUT.pt2 [OPTION]...\n"
          "Converts a TorchScript archive (traced or scripted) to ONNX, or to a torch.export program\n"
          "(.pt2, which torch.export.load reads), without PyTorch. OUT's extension picks the format.\n"
          "  --opset N                   ONNX opset to write (default %d; %d to %" G_GINT64_FORMAT ")\n"
          "  --shape INPUT=1x3x224x224   an input's shape (TorchScript files declare none)\n"
          "  --dtype INPUT=TYPE          an input's element type (int64, float16…; TorchScript files\n"
          "                              declare none: float32, or int64 for ids an embedding reads)\n"
          "  --dynamic INPUT:AXIS=NAME[:MIN[:MAX]]\n"
          "                              keep that dim symbolic (named NAME) in the file; a .pt2\n"
          "                              also records its range (default 1 to unbounded)\n"
          "  --allow-custom              (ONNX) write ops without an ONNX lowering as nodes of the \"aten\"\n"
          "                              domain (Graft's runtime runs them) instead of failing\n"
          "  --overwrite                 allow OUT to be IN itself\n"
          "A .pt2 is checked in Graft's runtime at the --shape sizes and, for each dynamic dim, at\n"
          "two other sizes in its range, which also give the sizes that follow the dynamic dims.\n"
          "Exit status: 0 written, 1 the model cannot be converted (the message names every op that\n"
          "has no lowering, or the node torch.export cannot express), 2 bad usage.\n",
          GRAFT_LOWER_DEFAULT_OPSET, GRAFT_LOWER_MIN_OPSET, graft_lower_max_opset ());
}

/* --dtype INPUT=TYPE, for the lowering (a traced UNet's int64 timestep):
 * name → GINT_TO_POINTER (GraftDType), the names checked against model's
 * inputs. */
static GHashTable *
parse_input_dtypes (GraftModel *model, GPtrArray *specs, GError **error)
{
  GraftGraph *graph = graft_model_get_graph (model);
  g_autoptr(GHashTable) dtypes = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  for (guint i = 0; i < specs->len; i++)
    {
      const char *spec = specs->pdata[i], *equals = strchr (spec, '=');
      GraftDType dtype = equals ? graft_dtype_from_string (equals + 1) : GRAFT_DTYPE_UNDEFINED;
      if (dtype == GRAFT_DTYPE_UNDEFINED || dtype == GRAFT_DTYPE_STRING)
        {
          g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                       "--dtype %s: give INPUT=TYPE with a numeric type (float32, int64, bool…)", spec);
          return NULL;
        }
      g_autofree char *name = g_strndup (spec, equals - spec);
      GraftValue *input = graft_graph_lookup_value (graph, name);
      if (input == NULL || !input->is_graph_input || input->initializer != NULL)
        {
          g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "--dtype %s: the model has no input '%s'",
                       spec, name);
          return NULL;
        }
      g_hash_table_replace (dtypes, g_steal_pointer (&name), GINT_TO_POINTER (dtype));
    }
  return g_steal_pointer (&dtypes);
}

/* INPUT=1x3x224x224 */
static gboolean
parse_shape (GHashTable *shapes, const char *spec)
{
  const char *equals = strrchr (spec, '=');
  if (equals == NULL || equals == spec || equals[1] == '\0')
    return FALSE;
  GraftShape *shape = g_new0 (GraftShape, 1);
  if (!graft_shape_parse (equals + 1, shape, NULL))
    {
      graft_shape_free (shape);
      return FALSE;
    }
  g_hash_table_replace (shapes, g_strndup (spec, equals - spec), shape);
  return TRUE;
}

/* INPUT:AXIS=NAME, after the input's --shape */
static gboolean
parse_dynamic (GHashTable *shapes, const char *spec, GError **error)
{
  const char *equals = strrchr (spec, '=');
  const char *colon = equals ? g_strrstr_len (spec, equals - spec, ":") : NULL;
  guint64 axis;
  if (colon == NULL || colon == spec || equals[1] == '\0')
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "cannot read '--dynamic %s' (try --help)", spec);
      return FALSE;
    }
  g_autofree char *input = g_strndup (spec, colon - spec);
  g_autofree char *axis_text = g_strndup (colon + 1, equals - colon - 1);
  GraftShape *shape = g_hash_table_lookup (shapes, input);
  if (!g_ascii_string_to_unsigned (axis_text, 10, 0, G_MAXINT32, &axis, NULL))
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "cannot read the axis of '--dynamic %s'", spec);
      return FALSE;
    }
  if (shape == NULL || (int) axis >= shape->rank)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "--dynamic %s: give '%s' a --shape with at least %u dims first", spec, input, (guint) axis + 1);
      return FALSE;
    }
  shape->dims[axis] = graft_dim_symbolic (g_intern_string (equals + 1));
  return TRUE;
}

GHashTable *
graft_cli_parse_input_shapes (GPtrArray *shape_specs, GPtrArray *dynamic_specs, GError **error)
{
  return graft_cli_parse_input_shapes_of (NULL, shape_specs, dynamic_specs, error);
}

GHashTable *
graft_cli_parse_input_shapes_of (GraftModel *model, GPtrArray *shape_specs, GPtrArray *dynamic_specs, GError **error)
{
  g_autoptr(GHashTable) shapes = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) graft_shape_free);
  /* A torch.export program declares its inputs' shapes: --dynamic may
   * free one of their dims without a --shape. */
  GraftGraph *graph = model != NULL && graft_model_get_format (model) == GRAFT_MODEL_FORMAT_EXPORTED_PROGRAM
                      ? graft_model_get_graph (model) : NULL;
  for (guint i = 0; graph != NULL && i < graph->inputs->len; i++)
    {
      GraftValue *input = g_ptr_array_index (graph->inputs, i);
      if (input->initializer != NULL || input->shape.rank < 0)
        continue;
      GraftShape *shape = g_new0 (GraftShape, 1);
      graft_shape_copy (shape, &input->shape);
      g_hash_table_replace (shapes, g_strdup (input->name), shape);
    }
  for (guint i = 0; i < shape_specs->len; i++)
    if (!parse_shape (shapes, shape_specs->pdata[i]))
      {
        g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "cannot read '--shape %s' (try --help)",
                     (char *) shape_specs->pdata[i]);
        return NULL;
      }
  for (guint i = 0; i < dynamic_specs->len; i++)
    if (!parse_dynamic (shapes, dynamic_specs->pdata[i], error))
      return NULL;
  return g_steal_pointer (&shapes);
}

/* INPUT:AXIS=NAME[:MIN[:MAX]] → a dynamic dim with its range. */
static gboolean
parse_dynamic_range (const char *spec, GraftPt2DynamicDim *dim, GError **error)
{
  const char *equals = strrchr (spec, '=');
  const char *colon = equals ? g_strrstr_len (spec, equals - spec, ":") : NULL;
  guint64 axis = 0, min = 1, max = 0;
  g_auto(GStrv) parts = equals ? g_strsplit (equals + 1, ":", 3) : NULL;
  g_autofree char *axis_text = colon ? g_strndup (colon + 1, equals - colon - 1) : NULL;
  if (colon == NULL || colon == spec || parts == NULL || parts[0] == NULL || *parts[0] == '\0'
      || !g_ascii_string_to_unsigned (axis_text, 10, 0, G_MAXINT32, &axis, NULL)
      || (parts[1] != NULL && !g_ascii_string_to_unsigned (parts[1], 10, 0, G_MAXINT32, &min, NULL))
      || (parts[1] != NULL && parts[2] != NULL && !g_ascii_string_to_unsigned (parts[2], 10, min, G_MAXINT32, &max, NULL)))
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "cannot read '--dynamic %s' (INPUT:AXIS=NAME[:MIN[:MAX]], MIN ≤ MAX)", spec);
      return FALSE;
    }
  g_autofree char *input = g_strndup (spec, colon - spec);
  dim->input = g_intern_string (input);
  dim->axis = (int) axis;
  dim->symbol = g_intern_string (parts[0]);
  dim->min = (gint64) min;
  dim->max = parts[1] != NULL && parts[2] != NULL ? (gint64) max : -1;
  return TRUE;
}

/* convert IN -o OUT.pt2: the TorchScript graph as a torch.export program. */
static int
convert_to_pt2 (const char *in, const char *out, GPtrArray *shape_specs, GPtrArray *dynamic_specs,
                GPtrArray *dtype_specs, gboolean overwrite)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) no_dynamic = g_ptr_array_new ();
  g_autoptr(GHashTable) shapes = graft_cli_parse_input_shapes (shape_specs, no_dynamic, &error);
  g_autoptr(GArray) dims = g_array_new (FALSE, TRUE, sizeof (GraftPt2DynamicDim));
  if (shapes == NULL)
    {
      graft_cli_print_error ("convert: %s", error->message);
      return 2;
    }
  for (guint i = 0; i < dynamic_specs->len; i++)
    {
      GraftPt2DynamicDim dim = { 0 };
      if (!parse_dynamic_range (dynamic_specs->pdata[i], &dim, &error))
        {
          graft_cli_print_error ("convert: %s", error->message);
          return 2;
        }
      g_array_append_val (dims, dim);
    }
  gint64 start = g_get_monotonic_time ();
  g_autoptr(GraftModel) model = graft_model_load (in, NULL, NULL, NULL, &error);
  if (model == NULL)
    {
      graft_cli_print_error ("%s", error->message);
      return 1;
    }
  if (graft_model_get_format (model) == GRAFT_MODEL_FORMAT_EXPORTED_PROGRAM)
    {
      graft_cli_print_error ("convert: %s is a torch.export program already; to save it again (edited) as .pt2 "
                             "use graft-cli edit %s -o %s", in, in, out);
      return 2;
    }
  g_autoptr(GHashTable) input_dtypes = parse_input_dtypes (model, dtype_specs, &error);
  if (input_dtypes == NULL)
    {
      graft_cli_print_error ("convert: %s", error->message);
      return 2;
    }
  gint64 loaded = g_get_monotonic_time ();
  GraftPt2ConvertOptions options = { shapes, input_dtypes, (const GraftPt2DynamicDim *) dims->data, dims->len };
  g_autoptr(GraftModel) program = graft_torchscript_to_pt2 (model, &options, &error);
  gint64 converted = g_get_monotonic_time ();
  if (program == NULL)
    {
      graft_cli_print_error ("%s: %s", in, error->message);
      return error->domain == G_IO_ERROR ? 2 : 1;
    }
  graft_model_set_path (program, in);
  if (!graft_format_save (program, out, "pt2", overwrite, &error))
    {
      graft_cli_print_error ("%s", error->message);
      return 1;
    }
  gint64 written = g_get_monotonic_time ();
  printf ("converted %s to %s: torch.export program, %u nodes (read %.2f s, converted %.2f s, written %.2f s)\n",
          in, out, graft_graph_count_nodes_recursive (graft_model_get_graph (program)), (loaded - start) / 1e6,
          (converted - loaded) / 1e6, (written - converted) / 1e6);
  return 0;
}

int
graft_cli_convert (int argc, char **argv)
{
  const char *in = NULL, *out = NULL;
  gboolean overwrite = FALSE;
  GraftLowerOptions options = { 0 };
  g_autoptr(GHashTable) shapes = NULL;
  g_autoptr(GPtrArray) shape_specs = g_ptr_array_new ();
  g_autoptr(GPtrArray) dynamic = g_ptr_array_new ();
  g_autoptr(GPtrArray) dtypes = g_ptr_array_new ();
  g_autoptr(GError) error = NULL;

  for (int i = 1; i < argc; i++)
    {
      const char *arg = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
      if (strcmp (arg, "--help") == 0)
        {
          print_usage ();
          return 0;
        }
      if (strcmp (arg, "--allow-custom") == 0 || strcmp (arg, "--overwrite") == 0)
        {
          options.allow_custom |= strcmp (arg, "--allow-custom") == 0;
          overwrite |= strcmp (arg, "--overwrite") == 0;
          continue;
        }
      if (arg[0] != '-')
        {
          if (in != NULL)
            {
              graft_cli_print_error ("convert: more than one input model ('%s' and '%s')", in, arg);
              return 2;
            }
          in = arg;
          continue;
        }
      if (next == NULL)
        {
          graft_cli_print_error ("convert: %s needs a value (try --help)", arg);
          return 2;
        }
      i++;
      if (strcmp (arg, "-o") == 0 || strcmp (arg, "--output") == 0)
        out = next;
      else if (strcmp (arg, "--opset") == 0)
        {
          guint64 opset;
          if (!g_ascii_string_to_unsigned (next, 10, GRAFT_LOWER_MIN_OPSET, graft_lower_max_opset (), &opset, NULL))
            {
              graft_cli_print_error ("convert: --opset %s: the conversion writes opsets %d to %" G_GINT64_FORMAT,
                                     next, GRAFT_LOWER_MIN_OPSET, graft_lower_max_opset ());
              return 2;
            }
          options.opset = (gint64) opset;
        }
      else if (strcmp (arg, "--shape") == 0)
        g_ptr_array_add (shape_specs, (gpointer) next);
      else if (strcmp (arg, "--dynamic") == 0)
        g_ptr_array_add (dynamic, (gpointer) next);
      else if (strcmp (arg, "--dtype") == 0)
        g_ptr_array_add (dtypes, (gpointer) next);
      else
        {
          graft_cli_print_error ("convert: unknown option '%s' (try --help)", arg);
          return 2;
        }
    }
  if (in == NULL || out == NULL)
    {
      graft_cli_print_error ("convert: needs an input model and -o OUT (try --help)");
      return 2;
    }
  /* The output format follows OUT's name (convert used to write ONNX
   * bytes into y.pt2 and exit 0). */
  const GraftFormat *out_format = graft_format_for_path (out);
  if (out_format != NULL && strcmp (out_format->id, "pt2") == 0)
    return convert_to_pt2 (in, out, shape_specs, dynamic, dtypes, overwrite);
  if (out_format != NULL && strcmp (out_format->id, "onnx") != 0)
    {
      graft_cli_print_error ("convert: cannot write %s: convert writes ONNX (.onnx) or a torch.export program "
                             "(.pt2), not a %s", out, out_format->title);
      return 2;
    }
  if ((shapes = graft_cli_parse_input_shapes (shape_specs, dynamic, &error)) == NULL)
    {
      graft_cli_print_error ("convert: %s", error->message);
      return 2;
    }
  options.input_shapes = shapes;

  gint64 start = g_get_monotonic_time ();
  g_autoptr(GraftModel) model = graft_model_load (in, NULL, NULL, NULL, &error);
  if (model == NULL)
    {
      graft_cli_print_error ("%s", error->message);
      return 1;
    }
  g_autoptr(GHashTable) input_dtypes = parse_input_dtypes (model, dtypes, &error);
  if (input_dtypes == NULL)
    {
      graft_cli_print_error ("convert: %s", error->message);
      return 2;
    }
  options.input_dtypes = input_dtypes;
  gint64 loaded = g_get_monotonic_time ();
  g_autoptr(GraftModel) onnx = graft_lower_to_onnx (model, &options, &error);
  gint64 lowered = g_get_monotonic_time ();
  if (onnx == NULL)
    {
      graft_cli_print_error ("%s: %s", in, error->message);
      return 1;
    }
  graft_model_set_path (onnx, in);
  if (!graft_onnx_write_file (onnx, out, overwrite ? GRAFT_ONNX_WRITE_OVERWRITE_SOURCE : GRAFT_ONNX_WRITE_NONE, &error))
    {
      graft_cli_print_error ("%s", error->message);
      return 1;
    }
  gint64 written = g_get_monotonic_time ();
  printf ("converted %s to %s: opset %" G_GINT64_FORMAT ", %u nodes (read %.2f s, lowered %.2f s, written %.2f s)\n",
          in, out, graft_model_get_opset (onnx, "onnx"), graft_graph_count_nodes_recursive (graft_model_get_graph (onnx)),
          (loaded - start) / 1e6, (lowered - loaded) / 1e6, (written - lowered) / 1e6);
  return 0;
}
