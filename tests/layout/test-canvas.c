/* The graph canvas in a real window (run under xvfb-run): it lays out the
 * sample asynchronously, draws it, selects through the API and actions,
 * expands and collapses, exports. With --frames MODEL it instead prints
 * the frames per second the window presents while zooming and panning
 * the fully expanded model at 1280×800, for tests/bench/bench-layout. */
#include <adwaita.h>
#include <string.h>
#include "loader.h"
#include "widgets/graph-canvas.h"
#include "test-files.h"

static void
wait_until_idle (GraftGraphCanvas *canvas)
{
  gint64 deadline = g_get_monotonic_time () + 60 * G_USEC_PER_SEC;
  gboolean busy = TRUE;

  /* Let a layout start, then wait for it to land and for a frame. */
  while (g_main_context_iteration (NULL, FALSE))
    ;
  while (g_get_monotonic_time () < deadline)
    {
      g_object_get (canvas, "busy", &busy, NULL);
      if (!busy)
        break;
      g_main_context_iteration (NULL, TRUE);
    }
  g_assert_false (busy);
  for (int i = 0; i < 20; i++)
    {
      g_usleep (5000);
      while (g_main_context_iteration (NULL, FALSE))
        ;
    }
}

static GdkTexture *
render_canvas (GtkWidget *widget)
{
  int width = gtk_widget_get_width (widget), height = gtk_widget_get_height (widget);
  GtkSnapshot *snapshot = gtk_snapshot_new ();
  GskRenderNode *node;
  GdkTexture *texture;

  GTK_WIDGET_GET_CLASS (widget)->snapshot (widget, snapshot);
  node = gtk_snapshot_free_to_node (snapshot);
  texture = gsk_renderer_render_texture (gtk_native_get_renderer (gtk_widget_get_native (widget)), node,
                                         &GRAPHENE_RECT_INIT (0, 0, width, height));
  gsk_render_node_unref (node);
  return texture;
}

static guint
count_pixels_near (GdkTexture *texture, guint32 rgb, int tolerance, guint *distinct_from)
{
  int width = gdk_texture_get_width (texture), height = gdk_texture_get_height (texture);
  g_autofree guint32 *data = g_new (guint32, width * height);
  guint n = 0, other = 0;

  gdk_texture_download (texture, (guchar *) data, width * 4);
  for (int i = 0; i < width * height; i++)
    {
      guint32 p = data[i];
      gboolean near = ABS ((int) (p >> 16 & 0xff) - (int) (rgb >> 16 & 0xff)) <= tolerance
                      && ABS ((int) (p >> 8 & 0xff) - (int) (rgb >> 8 & 0xff)) <= tolerance
                      && ABS ((int) (p & 0xff) - (int) (rgb & 0xff)) <= tolerance;
      n += near;
      other += !near;
    }
  if (distinct_from != NULL)
    *distinct_from = other;
  return n;
}

typedef struct {
  GtkWidget *window;
  GraftGraphCanvas *canvas;
  GraftModel *model;
} Fixture;

static void
fixture_open (Fixture *fixture, const char *path, int width, int height)
{
  g_autoptr (GError) error = NULL;

  fixture->model = graft_model_load (path, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  fixture->window = gtk_window_new ();
  gtk_window_set_default_size (GTK_WINDOW (fixture->window), width, height);
  fixture->canvas = GRAFT_GRAPH_CANVAS (graft_graph_canvas_new ());
  gtk_window_set_child (GTK_WINDOW (fixture->window), GTK_WIDGET (fixture->canvas));
  gtk_window_present (GTK_WINDOW (fixture->window));
  graft_graph_canvas_set_graph (fixture->canvas, fixture->model, graft_model_get_graph (fixture->model));
  wait_until_idle (fixture->canvas);
}

static void
fixture_close (Fixture *fixture)
{
  gtk_window_destroy (GTK_WINDOW (fixture->window));
  g_clear_object (&fixture->model);
}

static void
on_notify (GObject *object, GParamSpec *pspec, gpointer user_data)
{
  (*(guint *) user_data)++;
}

static void
test_canvas_sample (void)
{
  g_autofree char *path = g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "data", "samples", "tiny-cnn.onnx", NULL);
  g_autofree char *dir = g_dir_make_tmp ("graft-canvas-XXXXXX", NULL);
  g_autofree char *shot = g_build_filename (dir, "canvas.png", NULL);
  g_autofree char *exported = g_build_filename (dir, "export.svg", NULL);
  g_autoptr (GError) error = NULL;
  Fixture fixture = { 0 };
  GraftGraph *graph;
  GraftNode *conv = NULL;
  GdkTexture *texture;
  guint non_background = 0, notified = 0;

  fixture_open (&fixture, path, 900, 700);
  graph = graft_graph_canvas_get_graph (fixture.canvas);
  g_assert_nonnull (graph);

  texture = render_canvas (GTK_WIDGET (fixture.canvas));
  count_pixels_near (texture, 0xfafafb, 0, &non_background);
  g_assert_cmpuint (non_background, >, 5000);
  g_object_unref (texture);

  for (guint i = 0; i < graph->nodes->len && conv == NULL; i++)
    if (strcmp (((GraftNode *) g_ptr_array_index (graph->nodes, i))->op_type, "Conv") == 0)
      conv = g_ptr_array_index (graph->nodes, i);
  g_assert_nonnull (conv);

  g_signal_connect (fixture.canvas, "notify::selected-node", G_CALLBACK (on_notify), &notified);
  graft_graph_canvas_select_node (fixture.canvas, conv);
  wait_until_idle (fixture.canvas);
  g_assert_true (graft_graph_canvas_get_selected_node (fixture.canvas) == conv);
  g_assert_cmpuint (notified, ==, 1);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture.canvas), "canvas.zoom-selection", NULL));
  while (g_main_context_iteration (NULL, FALSE))
    ;
  texture = render_canvas (GTK_WIDGET (fixture.canvas));
  /* The selected node's border is drawn in the accent colour. */
  g_assert_cmpuint (count_pixels_near (texture, 0x1c71d8, 10, NULL), >, 100);
  g_assert_true (gdk_texture_save_to_png (texture, shot));
  g_test_message ("screenshot: %s", shot);
  g_object_unref (texture);

  /* Zoom actions, collapse and expand all, toggles. */
  for (guint i = 0; i < 3; i++)
    g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture.canvas), "canvas.zoom-in", NULL));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture.canvas), "canvas.zoom-out", NULL));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture.canvas), "canvas.zoom-reset", NULL));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture.canvas), "canvas.pan", "(dd)", 40.0, -20.0));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture.canvas), "canvas.collapse-all", NULL));
  wait_until_idle (fixture.canvas);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture.canvas), "canvas.expand-all", NULL));
  wait_until_idle (fixture.canvas);
  g_object_set (fixture.canvas, "show-names", TRUE, "direction", "LR", "dark", TRUE, NULL);
  wait_until_idle (fixture.canvas);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture.canvas), "canvas.zoom-fit", NULL));
  while (g_main_context_iteration (NULL, FALSE))
    ;
  texture = render_canvas (GTK_WIDGET (fixture.canvas));
  count_pixels_near (texture, 0x1e1e21, 0, &non_background);
  g_assert_cmpuint (non_background, >, 5000);
  g_object_unref (texture);

  g_assert_true (graft_graph_canvas_export (fixture.canvas, exported, &error));
  g_assert_no_error (error);
  g_assert_true (g_file_test (exported, G_FILE_TEST_IS_REGULAR));

  /* A value can be selected too, and clearing works. */
  graft_graph_canvas_select_value (fixture.canvas, g_ptr_array_index (conv->outputs, 0));
  wait_until_idle (fixture.canvas);
  g_assert_null (graft_graph_canvas_get_selected_node (fixture.canvas));
  g_assert_true (graft_graph_canvas_get_selected_value (fixture.canvas) == g_ptr_array_index (conv->outputs, 0));
  graft_graph_canvas_select_node (fixture.canvas, NULL);
  g_assert_null (graft_graph_canvas_get_selected_value (fixture.canvas));

  /* Switching graphs while a layout runs must not crash or leak a stale scene. */
  graft_graph_canvas_set_graph (fixture.canvas, fixture.model, graph);
  graft_graph_canvas_set_graph (fixture.canvas, NULL, NULL);
  wait_until_idle (fixture.canvas);
  g_assert_null (graft_graph_canvas_get_graph (fixture.canvas));
  g_assert_false (graft_graph_canvas_export (fixture.canvas, exported, &error));
  g_clear_error (&error);
  fixture_close (&fixture);
  test_remove_dir (dir);
}

typedef struct {
  const char *how;
  gint64 start;
  guint frames;
  gboolean done;
} Animation;

/* Drives the canvas from the frame clock, as a user's drag or scroll
 * would, and counts the frames GTK manages to present. */
static gboolean
on_tick (GtkWidget *canvas, GdkFrameClock *clock, gpointer user_data)
{
  Animation *animation = user_data;
  gint64 now = gdk_frame_clock_get_frame_time (clock);

  if (animation->start == 0)
    animation->start = now;
  else
    animation->frames++;
  if (now - animation->start >= 3 * G_USEC_PER_SEC)
    {
      animation->done = TRUE;
      return G_SOURCE_REMOVE;
    }
  if (strcmp (animation->how, "pan") == 0)
    gtk_widget_activate_action (canvas, "canvas.pan", "(dd)", -9.0, -5.0);
  else
    /* A new zoom every frame, as while scrolling. */
    gtk_widget_activate_action (canvas, animation->frames % 2 ? "canvas.zoom-in" : "canvas.zoom-out", NULL);
  return G_SOURCE_CONTINUE;
}

static double
frames_per_second (GtkWidget *canvas, const char *how)
{
  Animation animation = { how };

  gtk_widget_add_tick_callback (canvas, on_tick, &animation, NULL);
  while (!animation.done)
    g_main_context_iteration (NULL, TRUE);
  return animation.frames / 3.0;
}

static int
measure_frames (const char *path)
{
  Fixture fixture = { 0 };
  GtkWidget *canvas;
  const double zooms[] = { 0, 0.25, 0.5, 1.0 };

  fixture_open (&fixture, path, 1280, 800);
  canvas = GTK_WIDGET (fixture.canvas);
  gtk_widget_activate_action (canvas, "canvas.expand-all", NULL);
  wait_until_idle (fixture.canvas);
  for (guint z = 0; z < G_N_ELEMENTS (zooms); z++)
    {
      g_autofree char *view = zooms[z] > 0 ? g_strdup_printf ("zoom-%.2f", zooms[z]) : g_strdup ("fit-all");
      double zooming, panning;

      gtk_widget_activate_action (canvas, "canvas.zoom-fit", NULL);
      if (zooms[z] > 0)
        {
          gtk_widget_activate_action (canvas, "canvas.zoom-reset", NULL);
          for (double zoom = 1.0; zoom > zooms[z] * 1.01; zoom /= 2)
            gtk_widget_activate_action (canvas, "canvas.zoom-out", NULL);
        }
      zooming = frames_per_second (canvas, "zoom");
      panning = frames_per_second (canvas, "pan");
      printf ("canvas-fps %s %.1f %.1f\n", view, zooming, panning);
    }
  fixture_close (&fixture);
  return 0;
}

/* Marks, heat and Find's matches are only drawn: the count properties
 * and the accessible description say what the scene shows of them. */
static void
test_canvas_marks_counted (void)
{
  g_autofree char *path = g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "data", "samples", "tiny-cnn.onnx", NULL);
  g_autoptr (GPtrArray) found = g_ptr_array_new ();
  g_autoptr (GPtrArray) shown = g_ptr_array_new ();
  Fixture fixture = { 0 };
  GraftGraph *graph;
  guint n_marked = 0, n_found = 0, n_heated = 0, notified = 0;

  fixture_open (&fixture, path, 900, 700);
  graph = graft_graph_canvas_get_graph (fixture.canvas);
  g_object_get (fixture.canvas, "n-marked", &n_marked, "n-found-shown", &n_found, "n-heated", &n_heated, NULL);
  g_assert_cmpuint (n_marked + n_found + n_heated, ==, 0);
  g_assert_false (gtk_test_accessible_has_property (GTK_ACCESSIBLE (fixture.canvas),
                                                    GTK_ACCESSIBLE_PROPERTY_DESCRIPTION));

  /* Three nodes drawn as boxes of their own. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (fixture.canvas), "canvas.expand-all", NULL));
  wait_until_idle (fixture.canvas);
  for (guint i = 0; i < graph->nodes->len && shown->len < 3; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      GraftRect box;

      if (graft_graph_canvas_get_node_bounds (fixture.canvas, node, &box))
        g_ptr_array_add (shown, node);
    }
  g_assert_cmpuint (shown->len, ==, 3);
  g_signal_connect (fixture.canvas, "notify::n-marked", G_CALLBACK (on_notify), &notified);
  graft_graph_canvas_mark_node (fixture.canvas, g_ptr_array_index (shown, 0), 2, "first");
  graft_graph_canvas_mark_node (fixture.canvas, g_ptr_array_index (shown, 1), 3, NULL);
  graft_graph_canvas_set_node_heat (fixture.canvas, g_ptr_array_index (shown, 1), 0.5);
  g_ptr_array_add (found, g_ptr_array_index (shown, 2));
  graft_graph_canvas_set_found (fixture.canvas, found);
  wait_until_idle (fixture.canvas);
  g_object_get (fixture.canvas, "n-marked", &n_marked, "n-found-shown", &n_found, "n-heated", &n_heated, NULL);
  /* Marks are applied once before the next frame, or when counted. */
  g_assert_cmpuint (notified, ==, 1);
  g_assert_cmpuint (n_marked, ==, 2);
  g_assert_cmpuint (n_found, ==, 1);
  g_assert_cmpuint (n_heated, ==, 1);
  gtk_test_accessible_assert_property (fixture.canvas, GTK_ACCESSIBLE_PROPERTY_DESCRIPTION,
                                       "2 nodes marked. 1 box shows an error stripe. 1 match shown.");

  graft_graph_canvas_clear_marks (fixture.canvas);
  graft_graph_canvas_set_found (fixture.canvas, NULL);
  g_assert_cmpuint (notified, ==, 2);
  g_object_get (fixture.canvas, "n-marked", &n_marked, "n-found-shown", &n_found, "n-heated", &n_heated, NULL);
  g_assert_cmpuint (n_marked + n_found + n_heated, ==, 0);
  g_assert_false (gtk_test_accessible_has_property (GTK_ACCESSIBLE (fixture.canvas),
                                                    GTK_ACCESSIBLE_PROPERTY_DESCRIPTION));
  fixture_close (&fixture);
}

int
main (int argc, char **argv)
{
  if (argc == 3 && strcmp (argv[1], "--frames") == 0)
    {
      gtk_init ();
      adw_init ();
      return measure_frames (argv[2]);
    }
  g_test_init (&argc, &argv, NULL);
  gtk_init ();
  adw_init ();
  g_test_add_func ("/canvas/sample", test_canvas_sample);
  g_test_add_func ("/canvas/marks-counted", test_canvas_marks_counted);
  return g_test_run ();
}
