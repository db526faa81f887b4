/* Times one layout of a model for tests/bench/bench-layout:
 *   layout-bench MODEL first|full|flat [OUT.png]
 * first: the default (partly collapsed) state; full: every group expanded;
 * flat: the whole graph in a single dot run, ignoring groups;
 * frames: the full layout painted 20 times into a 1280×800 image, as the
 * canvas does per frame, at fit-all, 25 %, 50 % and 100 % zoom.
 * Prints "MODE load_s layout_s draw_s boxes" on stdout (frames: one line
 * "frames ZOOM ms_per_frame" per zoom). */
#include <stdio.h>
#include <string.h>
#include <locale.h>
#include "loader.h"
#include "layout/export.h"
#include "layout/layout.h"
#include "layout/painter.h"

#define FRAME_WIDTH 1280
#define FRAME_HEIGHT 800
#define N_FRAMES 20

static void
time_frames (GraftScene *scene)
{
  cairo_surface_t *surface = cairo_image_surface_create (CAIRO_FORMAT_RGB24, FRAME_WIDTH, FRAME_HEIGHT);
  GraftPaintOptions paint = { .paint_background = TRUE };
  GraftRect bounds;
  double zooms[4];

  graft_scene_get_bounds (scene, &bounds);
  zooms[0] = MIN (FRAME_WIDTH / bounds.width, FRAME_HEIGHT / bounds.height);
  zooms[1] = 0.25;
  zooms[2] = 0.5;
  zooms[3] = 1.0;
  for (guint z = 0; z < G_N_ELEMENTS (zooms); z++)
    {
      double zoom = zooms[z];
      /* Centred on the middle of the graph, where it is densest. */
      GraftRect visible = { bounds.x + bounds.width / 2 - FRAME_WIDTH / 2 / zoom,
                            bounds.y + bounds.height / 2 - FRAME_HEIGHT / 2 / zoom,
                            FRAME_WIDTH / zoom, FRAME_HEIGHT / zoom };
      gint64 start = g_get_monotonic_time ();

      for (guint i = 0; i < N_FRAMES; i++)
        {
          cairo_t *cr = cairo_create (surface);

          cairo_scale (cr, zoom, zoom);
          cairo_translate (cr, -visible.x, -visible.y);
          graft_painter_paint (cr, scene, &visible, &paint);
          cairo_destroy (cr);
          cairo_surface_flush (surface);
        }
      printf ("frames %.4f %.2f\n", zoom, (g_get_monotonic_time () - start) / 1e3 / N_FRAMES);
    }
  cairo_surface_destroy (surface);
}

int
main (int argc, char **argv)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GraftModel) model = NULL;
  g_autoptr (GraftLayout) layout = NULL;
  g_autoptr (GraftScene) scene = NULL;
  GraftPaintOptions paint = { 0 };
  gint64 start, loaded, laid_out, drawn;
  const char *mode;

  setlocale (LC_ALL, "C");
  if (argc < 3)
    {
      fprintf (stderr, "usage: layout-bench MODEL first|full|flat|frames [OUT.png]\n");
      return 2;
    }
  mode = argv[2];
  start = g_get_monotonic_time ();
  model = graft_model_load (argv[1], NULL, NULL, NULL, &error);
  if (model == NULL)
    {
      fprintf (stderr, "layout-bench: %s\n", error->message);
      return 1;
    }
  loaded = g_get_monotonic_time ();

  if (strcmp (mode, "flat") == 0)
    layout = graft_layout_new_flat (graft_model_get_graph (model));
  else
    layout = graft_layout_new (graft_model_get_graph (model));
  if (strcmp (mode, "full") == 0 || strcmp (mode, "frames") == 0)
    graft_layout_expand_all (layout);
  scene = graft_layout_compute (layout, NULL, NULL, NULL, &error);
  if (scene == NULL)
    {
      fprintf (stderr, "layout-bench: %s\n", error->message);
      return 1;
    }
  laid_out = g_get_monotonic_time ();
  if (strcmp (mode, "frames") == 0)
    {
      time_frames (scene);
      return 0;
    }
  if (argc > 3 && !graft_scene_export (scene, &paint, argv[3], &error))
    {
      fprintf (stderr, "layout-bench: %s\n", error->message);
      return 1;
    }
  drawn = g_get_monotonic_time ();
  printf ("%s %.3f %.3f %.3f %u\n", mode, (loaded - start) / 1e6, (laid_out - loaded) / 1e6, (drawn - laid_out) / 1e6,
          graft_scene_get_n_nodes (scene) + graft_scene_get_n_groups (scene));
  return 0;
}
