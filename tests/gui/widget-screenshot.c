#include "widget-screenshot.h"

gboolean
graft_widget_save_png (GtkWidget *widget, const char *path, GError **error)
{
  g_autoptr(GdkPaintable) paintable = NULL;
  g_autoptr(GtkSnapshot) snapshot = NULL;
  g_autoptr(GskRenderNode) node = NULL;
  g_autoptr(GdkTexture) texture = NULL;
  GskRenderer *renderer;
  GtkNative *native;
  int width = gtk_widget_get_width (widget);
  int height = gtk_widget_get_height (widget);

  native = gtk_widget_get_native (widget);
  if (native == NULL || !gtk_widget_get_realized (widget) || width <= 0 || height <= 0)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_INITIALIZED,
                   "Cannot write %s: the window is not shown yet", path);
      return FALSE;
    }
  renderer = gtk_native_get_renderer (native);

  paintable = gtk_widget_paintable_new (widget);
  snapshot = gtk_snapshot_new ();
  gdk_paintable_snapshot (paintable, GDK_SNAPSHOT (snapshot), width, height);
  node = gtk_snapshot_free_to_node (g_steal_pointer (&snapshot));
  if (node == NULL)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED,
                   "Cannot write %s: the window drew nothing", path);
      return FALSE;
    }

  texture = gsk_renderer_render_texture (renderer, node,
                                         &GRAPHENE_RECT_INIT (0, 0, width, height));
  if (!gdk_texture_save_to_png (texture, path))
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED,
                   "Cannot write the screenshot %s", path);
      return FALSE;
    }
  return TRUE;
}
