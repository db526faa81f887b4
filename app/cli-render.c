/* graft-cli render FILE -o OUT.{svg,png,pdf}: lays out and draws a model's
 * main graph, or one of its subgraphs, with the same layout and painter as
 * the canvas. */
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "loader.h"
#include "analysis/shape-inference.h"
#include "layout/export.h"
#include "layout/layout.h"
#include "layout/graphviz.h"

typedef struct {
  const char *name;
  GraftNode *found;
} NodeSearch;

static void
match_node_name (GraftNode *node, gpointer user_data)
{
  NodeSearch *search = user_data;

  if (search->found == NULL && strcmp (node->name, search->name) == 0)
    search->found = node;
}

/* step is "NODE" or "NODE:ATTRIBUTE"; NODE is looked for in graph and,
 * depth first, in its subgraphs. */
static GraftGraph *
find_subgraph (GraftGraph *graph, const char *step, GError **error)
{
  g_autofree char *name = g_strdup (step);
  char *colon = strrchr (name, ':');
  const char *attribute = NULL;
  NodeSearch search = { name, NULL };
  g_autoptr(GPtrArray) subgraphs = NULL;

  if (colon != NULL)
    {
      *colon = '\0';
      attribute = colon + 1;
    }
  graft_graph_foreach_node_recursive (graph, match_node_name, &search);
  if (search.found == NULL)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "no node named '%s' in graph '%s'", name,
                   graph->name);
      return NULL;
    }
  subgraphs = graft_node_get_subgraphs (search.found);
  for (guint i = 0; i < search.found->attributes->len; i++)
    {
      GraftAttribute *a = g_ptr_array_index (search.found->attributes, i);
      if (a->type == GRAFT_ATTR_GRAPH && a->g != NULL && (attribute == NULL || strcmp (a->name, attribute) == 0))
        return a->g;
    }
  g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "node '%s' (%s) has %s", name, search.found->op,
               subgraphs->len == 0 ? "no subgraph"
               : attribute != NULL ? "no subgraph attribute of that name"
               : "only subgraph lists");
  return NULL;
}

int
graft_cli_render (int argc, char **argv)
{
  g_autofree char *output = NULL;
  g_autofree char *direction = NULL;
  gboolean expand_all = FALSE, no_shapes = FALSE, no_attributes = FALSE, names = FALSE, dark = FALSE;
  gboolean timings = FALSE, attribute_nodes = FALSE;
  g_auto(GStrv) subgraph_path = NULL;
  g_auto(GStrv) shape_specs = NULL;
  const GOptionEntry entries[] = {
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Picture to write (.svg, .png or .pdf)", "OUT" },
    { "expand-all", 0, 0, G_OPTION_ARG_NONE, &expand_all, "Expand every group", NULL },
    { "direction", 0, 0, G_OPTION_ARG_STRING, &direction, "Layout direction: TB (default) or LR", "DIR" },
    { "no-shapes", 0, 0, G_OPTION_ARG_NONE, &no_shapes, "Hide tensor and weight shapes", NULL },
    { "no-attributes", 0, 0, G_OPTION_ARG_NONE, &no_attributes, "Hide node attributes", NULL },
    { "names", 0, 0, G_OPTION_ARG_NONE, &names, "Show node names", NULL },
    { "attribute-nodes", 0, 0, G_OPTION_ARG_NONE, &attribute_nodes,
      "Draw TorchScript's prim::GetAttr / prim::Constant nodes instead of listing them in their readers", NULL },
    { "dark", 0, 0, G_OPTION_ARG_NONE, &dark, "Use the dark style", NULL },
    { "timings", 0, 0, G_OPTION_ARG_NONE, &timings, "Print load, layout and drawing times on stderr", NULL },
    { "shape", 0, 0, G_OPTION_ARG_STRING_ARRAY, &shape_specs,
      "An input's shape, for the shapes on the edges (TorchScript files declare none)", "INPUT=1x3x224x224" },
    { "subgraph", 0, 0, G_OPTION_ARG_STRING_ARRAY, &subgraph_path,
      "Draw the body of an If/Loop/Scan node instead (repeat to go deeper)", "NODE[:ATTRIBUTE]" },
    { NULL }
  };
  g_autoptr (GOptionContext) context = g_option_context_new ("FILE - draw a model's graph");
  g_autoptr (GError) error = NULL;
  g_autoptr (GraftModel) model = NULL;
  g_autoptr (GraftInference) inference = NULL;
  g_autoptr (GraftLayout) layout = NULL;
  g_autoptr (GraftScene) scene = NULL;
  GraftLayoutOptions options;
  GraftPaintOptions paint = { 0 };
  GraftExportFormat format;
  GraftGraph *graph;
  gint64 start, loaded, laid_out;

  g_option_context_add_main_entries (context, entries, NULL);
  if (!g_option_context_parse (context, &argc, &argv, &error))
    {
      graft_cli_print_error ("render: %s", error->message);
      return 2;
    }
  if (argc != 2 || output == NULL)
    {
      graft_cli_print_error ("render: usage: graft-cli render FILE -o OUT.{svg,png,pdf} [--expand-all]");
      return 2;
    }
  graft_layout_options_init (&options);
  if (direction != NULL)
    {
      if (g_ascii_strcasecmp (direction, "LR") == 0)
        options.direction = GRAFT_LAYOUT_DIRECTION_LR;
      else if (g_ascii_strcasecmp (direction, "TB") != 0)
        {
          graft_cli_print_error ("render: unknown direction '%s' (use TB or LR)", direction);
          return 2;
        }
    }
  options.show_shapes = !no_shapes;
  options.show_attributes = !no_attributes;
  options.show_names = names;
  options.show_module_attributes = attribute_nodes;
  /* Refuse a bad output name before spending time on the model. */
  if (!graft_export_format_from_path (output, &format, &error))
    {
      graft_cli_print_error ("%s", error->message);
      return 1;
    }

  start = g_get_monotonic_time ();
  model = graft_model_load (argv[1], NULL, NULL, NULL, &error);
  if (model == NULL)
    {
      graft_cli_print_error ("%s", error->message);
      return 1;
    }
  graph = graft_model_get_graph (model);
  if (graph != NULL && graph->nodes->len == 0 && graft_model_get_format (model) == GRAFT_MODEL_FORMAT_STATE_DICT)
    {
      /* A blank picture would look like a drawing bug. */
      graft_cli_print_error ("'%s' is a state_dict: %u tensors and no graph to draw; "
                             "'graft-cli info %s' lists them", argv[1], graft_model_get_tensors (model)->len, argv[1]);
      return 1;
    }
  if (graph == NULL)
    {
      graft_cli_print_error ("'%s' holds no graph to draw (%s)", argv[1],
                             graft_model_format_to_string (graft_model_get_format (model)));
      return 1;
    }
  for (guint i = 0; subgraph_path != NULL && subgraph_path[i] != NULL; i++)
    {
      graph = find_subgraph (graph, subgraph_path[i], &error);
      if (graph == NULL)
        {
          graft_cli_print_error ("render: %s", error->message);
          return 1;
        }
    }
  /* Edges are labelled with shapes: fill in those the file leaves out,
   * from the input shapes given if any. */
  if (shape_specs != NULL)
    {
      g_autoptr(GPtrArray) specs = g_ptr_array_new ();
      g_autoptr(GPtrArray) no_dynamic = g_ptr_array_new ();
      g_autoptr(GHashTable) shapes = NULL;

      for (guint i = 0; shape_specs[i] != NULL; i++)
        g_ptr_array_add (specs, shape_specs[i]);
      shapes = graft_cli_parse_input_shapes (specs, no_dynamic, &error);
      if (shapes == NULL || (inference = graft_shape_inference_run_given (model, shapes, &error)) == NULL)
        {
          graft_cli_print_error ("render: %s: %s", argv[1], error->message);
          return 1;
        }
      if (no_shapes)
        g_clear_pointer (&inference, graft_inference_unref);
    }
  else if (!no_shapes)
    inference = graft_shape_inference_run (model, NULL);
  loaded = g_get_monotonic_time ();

  layout = graft_layout_new (graph);
  graft_layout_set_model (layout, model);
  graft_layout_set_inference (layout, inference);
  graft_layout_set_options (layout, &options);
  if (expand_all)
    graft_layout_expand_all (layout);
  scene = graft_layout_compute (layout, NULL, NULL, NULL, &error);
  if (scene == NULL)
    {
      graft_cli_print_error ("cannot lay out '%s': %s", argv[1], error->message);
      return 1;
    }
  laid_out = g_get_monotonic_time ();

  paint.dark = dark;
  if (!graft_scene_export (scene, &paint, output, &error))
    {
      graft_cli_print_error ("%s", error->message);
      return 1;
    }
  if (timings)
    {
      guint group_layouts;

      /* Alike groups share one dot run: the two counts differ by that. */
      graft_layout_get_last_stats (layout, NULL, &group_layouts);
      fprintf (stderr,
               "load and shape inference %.3f s, layout %.3f s, draw %.3f s, %u nodes, %u boxes, %u groups, "
               "%u group layouts, %u dot runs\n",
               (loaded - start) / 1e6, (laid_out - loaded) / 1e6, (g_get_monotonic_time () - laid_out) / 1e6,
               graph->nodes->len, graft_scene_get_n_nodes (scene), graft_scene_get_n_groups (scene), group_layouts,
               graft_dot_get_n_runs ());
    }
  return 0;
}
