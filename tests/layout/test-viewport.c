/* The canvas viewport: zoom about a point, pan, fit. No display needed. */
#include "widgets/canvas-viewport.h"

static void
test_zoom_about_point (void)
{
  g_autoptr (GraftCanvasViewport) viewport = graft_canvas_viewport_new ();
  double before_x, before_y, after_x, after_y;

  graft_canvas_viewport_set_size (viewport, 800, 600);
  graft_canvas_viewport_set_origin (viewport, 100, 50);
  graft_canvas_viewport_screen_to_scene (viewport, 200, 150, &before_x, &before_y);
  graft_canvas_viewport_zoom_at (viewport, 2.5, 200, 150);
  g_assert_cmpfloat_with_epsilon (graft_canvas_viewport_get_zoom (viewport), 2.5, 1e-9);
  graft_canvas_viewport_screen_to_scene (viewport, 200, 150, &after_x, &after_y);
  g_assert_cmpfloat_with_epsilon (before_x, after_x, 1e-9);
  g_assert_cmpfloat_with_epsilon (before_y, after_y, 1e-9);

  /* Zoom is clamped, and the point still stays put. */
  graft_canvas_viewport_zoom_at (viewport, 1e6, 10, 20);
  g_assert_cmpfloat (graft_canvas_viewport_get_zoom (viewport), ==, GRAFT_CANVAS_MAX_ZOOM);
  graft_canvas_viewport_zoom_at (viewport, 1e-9, 10, 20);
  g_assert_cmpfloat (graft_canvas_viewport_get_zoom (viewport), ==, GRAFT_CANVAS_MIN_ZOOM);
}

static void
test_pan_and_convert (void)
{
  g_autoptr (GraftCanvasViewport) viewport = graft_canvas_viewport_new ();
  double sx, sy, x, y;

  graft_canvas_viewport_set_size (viewport, 400, 300);
  graft_canvas_viewport_set_zoom (viewport, 2);
  graft_canvas_viewport_set_origin (viewport, 0, 0);
  graft_canvas_viewport_pan (viewport, 40, -20);
  /* Content moved right/up by the drag: scene (0,0) is now at (40,-20). */
  graft_canvas_viewport_scene_to_screen (viewport, 0, 0, &sx, &sy);
  g_assert_cmpfloat_with_epsilon (sx, 40, 1e-9);
  g_assert_cmpfloat_with_epsilon (sy, -20, 1e-9);
  graft_canvas_viewport_screen_to_scene (viewport, sx, sy, &x, &y);
  g_assert_cmpfloat_with_epsilon (x, 0, 1e-9);
  g_assert_cmpfloat_with_epsilon (y, 0, 1e-9);
}

static void
test_fit (void)
{
  g_autoptr (GraftCanvasViewport) viewport = graft_canvas_viewport_new ();
  GraftRect tall = { 100, 200, 300, 3000 };
  GraftRect small = { 0, 0, 50, 20 };
  GraftRect visible;
  double cx, cy;

  graft_canvas_viewport_set_size (viewport, 800, 600);
  graft_canvas_viewport_fit (viewport, &tall, 20, 1.0);
  g_assert_true (graft_canvas_viewport_shows (viewport, &tall));
  /* Height is the limit: (600 - 40) / 3000. */
  g_assert_cmpfloat_with_epsilon (graft_canvas_viewport_get_zoom (viewport), 560.0 / 3000, 1e-9);
  graft_canvas_viewport_scene_to_screen (viewport, 250, 1700, &cx, &cy);
  g_assert_cmpfloat_with_epsilon (cx, 400, 1e-6);
  g_assert_cmpfloat_with_epsilon (cy, 300, 1e-6);

  /* A small graph is not blown up past max_zoom. */
  graft_canvas_viewport_fit (viewport, &small, 20, 1.0);
  g_assert_cmpfloat (graft_canvas_viewport_get_zoom (viewport), ==, 1.0);
  graft_canvas_viewport_get_visible (viewport, &visible);
  g_assert_cmpfloat_with_epsilon (visible.width, 800, 1e-9);
  g_assert_cmpfloat_with_epsilon (visible.x + visible.width / 2, 25, 1e-9);

  graft_canvas_viewport_center_on (viewport, 1000, 1000);
  graft_canvas_viewport_scene_to_screen (viewport, 1000, 1000, &cx, &cy);
  g_assert_cmpfloat_with_epsilon (cx, 400, 1e-9);
  g_assert_cmpfloat_with_epsilon (cy, 300, 1e-9);
}

static void
on_notify (GObject *object, GParamSpec *pspec, gpointer user_data)
{
  (*(guint *) user_data)++;
}

static void
test_notify (void)
{
  g_autoptr (GraftCanvasViewport) viewport = graft_canvas_viewport_new ();
  guint n = 0;

  g_signal_connect (viewport, "notify::zoom", G_CALLBACK (on_notify), &n);
  graft_canvas_viewport_set_size (viewport, 100, 100);
  graft_canvas_viewport_set_zoom (viewport, 1);
  g_assert_cmpuint (n, ==, 0);
  graft_canvas_viewport_set_zoom (viewport, 3);
  g_assert_cmpuint (n, ==, 1);
  g_object_set (viewport, "zoom", 0.5, NULL);
  g_assert_cmpuint (n, ==, 2);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/viewport/zoom-about-point", test_zoom_about_point);
  g_test_add_func ("/viewport/pan-and-convert", test_pan_and_convert);
  g_test_add_func ("/viewport/fit", test_fit);
  g_test_add_func ("/viewport/notify", test_notify);
  return g_test_run ();
}
