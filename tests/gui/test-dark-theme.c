/* GTK_THEME=Adwaita:dark darkens the chrome without AdwStyleManager's
 * knowing: the canvas follows the style it is drawn with, not only the
 * style manager, so it is not a white sheet in dark chrome. */
#include <math.h>

#include "window-harness.h"
#include "widgets/graph-canvas.h"

/* Mean luminance (0–255) of the canvas's middle, from the screenshot. */
static double
canvas_luminance (GraftWindow *window, const char *name)
{
  GtkWidget *canvas = harness_find_type (GTK_WIDGET (window), GRAFT_TYPE_GRAPH_CANVAS);
  g_autofree char *path = harness_screenshot_path (name);
  g_autoptr(GError) error = NULL;
  g_autoptr(GdkPixbuf) pixbuf = gdk_pixbuf_new_from_file (path, &error);
  graphene_rect_t bounds;
  int channels, stride;
  const guint8 *pixels;
  double sum = 0;
  int n = 0;

  g_assert_no_error (error);
  g_assert_true (gtk_widget_compute_bounds (canvas, GTK_WIDGET (window), &bounds));
  channels = gdk_pixbuf_get_n_channels (pixbuf);
  stride = gdk_pixbuf_get_rowstride (pixbuf);
  pixels = gdk_pixbuf_read_pixels (pixbuf);
  /* A strip along the canvas's left edge: background, away from the graph. */
  for (int y = bounds.origin.y + 20; y < bounds.origin.y + bounds.size.height - 20; y++)
    for (int x = bounds.origin.x + 4; x < bounds.origin.x + 24; x++)
      {
        const guint8 *p = pixels + y * stride + x * channels;

        sum += 0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2];
        n++;
      }
  g_assert_cmpint (n, >, 0);
  return sum / n;
}

static void
test_dark_theme_canvas (void)
{
  GraftWindow *window = harness_window_new ();
  g_autofree char *sample = g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "data", "samples", "tiny-cnn.onnx", NULL);
  GtkWidget *canvas = harness_find_type (GTK_WIDGET (window), GRAFT_TYPE_GRAPH_CANVAS);
  gboolean dark = FALSE;
  double luminance;

  harness_open (window, sample);
  harness_screenshot (window, "viewer-gtk-theme-dark");
  g_object_get (canvas, "dark", &dark, NULL);
  luminance = canvas_luminance (window, "viewer-gtk-theme-dark");
  g_test_message ("AdwStyleManager dark: %d; canvas dark: %d, background luminance %.0f",
                  adw_style_manager_get_dark (adw_style_manager_get_default ()), dark, luminance);
  g_assert_true (dark);
  g_assert_cmpfloat (luminance, <, 80);
  harness_window_close (window);
}

int
main (int argc, char *argv[])
{
  harness_init_environment ();
  g_setenv ("GTK_THEME", "Adwaita:dark", TRUE);
  gtk_test_init (&argc, &argv, NULL);

  g_test_add_func ("/gui/dark-theme/canvas", test_dark_theme_canvas);
  return g_test_run ();
}
