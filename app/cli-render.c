/* graft-cli render FILE -o OUT.{svg,png,pdf}: lays out and draws a model's
 * main graph with the same layout and painter as the canvas. */
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "loader.h"
#include "analysis/shape-inference.h"
#include "layout/export.h"
#include "layout/layout.h"

int
graft_cli_render (int argc, char **argv)
{
  g_autofree char *output = NULL;
  g_autofree char *direction = NULL;
  gboolean expand_all = FALSE, no_shapes = FALSE, no_attributes = FALSE, names = FALSE, dark = FALSE;
  gboolean timings = FALSE;
  const GOptionEntry entries[] = {
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Picture to write (.svg, .png or .pdf)", "OUT" },
    { "expand-all", 0, 0, G_OPTION_ARG_NONE, &expand_all, "Expand every group", NULL },
    { "direction", 0, 0, G_OPTION_ARG_STRING, &direction, "Layout direction: TB (default) or LR", "DIR" },
    { "no-shapes", 0, 0, G_OPTION_ARG_NONE, &no_shapes, "Hide tensor and weight shapes", NULL },
    { "no-attributes", 0, 0, G_OPTION_ARG_NONE, &no_attributes, "Hide node attributes", NULL },
    { "names", 0, 0, G_OPTION_ARG_NONE, &names, "Show node names", NULL },
    { "dark", 0, 0, G_OPTION_ARG_NONE, &dark, "Use the dark style", NULL },
    { "timings", 0, 0, G_OPTION_ARG_NONE, &timings, "Print load, layout and drawing times on stderr", NULL },
    { NULL }
  };
  g_autoptr (GOptionContext) context = g_option_context_new ("FILE - draw a model's graph");
  g_autoptr (GError) error = NULL;
  g_autoptr (GraftModel) model = NULL;
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
  if (graph == NULL)
    {
      graft_cli_print_error ("'%s' holds no graph to draw (%s)", argv[1],
                             graft_model_format_to_string (graft_model_get_format (model)));
      return 1;
    }
  /* Edges are labelled with shapes: fill in those the file leaves out. */
  if (!no_shapes)
    graft_shape_inference_run (model, NULL);
  loaded = g_get_monotonic_time ();

  layout = graft_layout_new (graph);
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
    fprintf (stderr, "load and shape inference %.3f s, layout %.3f s, draw %.3f s, %u nodes, %u boxes, %u groups\n",
             (loaded - start) / 1e6, (laid_out - loaded) / 1e6, (g_get_monotonic_time () - laid_out) / 1e6,
             graph->nodes->len, graft_scene_get_n_nodes (scene), graft_scene_get_n_groups (scene));
  return 0;
}
