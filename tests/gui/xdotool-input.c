#include "xdotool-input.h"
#include "window-harness.h"

#include <gdk/x11/gdkx.h>

typedef struct {
  gboolean exited;
  int status;
} Child;

static void
on_child_exited (GPid pid, int status, gpointer data)
{
  Child *child = data;

  child->status = status;
  child->exited = TRUE;
  g_spawn_close_pid (pid);
}

static gboolean
child_has_exited (gpointer data)
{
  return ((Child *) data)->exited;
}

void
xdotool_run (GraftWindow *window, const char *const *commands)
{
  GdkSurface *surface = gtk_native_get_surface (GTK_NATIVE (window));
  g_autofree char *xid = g_strdup_printf ("%lu", (unsigned long) gdk_x11_surface_get_xid (surface));
  g_autoptr(GPtrArray) argv = g_ptr_array_new ();
  g_autoptr(GError) error = NULL;
  Child child = { FALSE, 0 };
  GPid pid;

  g_ptr_array_add (argv, (char *) "xdotool");
  for (guint i = 0; commands[i] != NULL; i++)
    g_ptr_array_add (argv, g_str_equal (commands[i], "WINDOW") ? xid : (char *) commands[i]);
  g_ptr_array_add (argv, NULL);
  g_assert_true (g_spawn_async (NULL, (char **) argv->pdata, NULL, G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD,
                                NULL, NULL, &pid, &error));
  g_assert_no_error (error);
  g_child_watch_add (pid, on_child_exited, &child);
  harness_wait_for (child_has_exited, &child);
  g_assert_true (g_spawn_check_wait_status (child.status, NULL));
  harness_settle (window);
}

gboolean
xdotool_available (void)
{
  g_autofree char *path = g_find_program_in_path ("xdotool");

  if (path == NULL)
    g_test_skip ("needs xdotool (Debian package xdotool) to send real key events");
  return path != NULL;
}

/* widget's (x, y) as xdotool's "mousemove --window" coordinates. */
static void
window_coordinates (GraftWindow *window, GtkWidget *widget, double x, double y, char **x_text, char **y_text)
{
  graphene_point_t point;
  double offset_x, offset_y;

  gtk_native_get_surface_transform (GTK_NATIVE (window), &offset_x, &offset_y);
  g_assert_true (gtk_widget_compute_point (widget, GTK_WIDGET (window), &GRAPHENE_POINT_INIT (x, y), &point));
  *x_text = g_strdup_printf ("%d", (int) (point.x + offset_x));
  *y_text = g_strdup_printf ("%d", (int) (point.y + offset_y));
}

void
xdotool_click_widget (GraftWindow *window, GtkWidget *widget, double x, double y)
{
  g_autofree char *x_text = NULL;
  g_autofree char *y_text = NULL;

  window_coordinates (window, widget, x, y, &x_text, &y_text);
  {
    const char *commands[] = { "windowfocus", "WINDOW", "mousemove", "--window", "WINDOW", x_text, y_text,
                               "click", "1", NULL };

    xdotool_run (window, commands);
  }
}

void
xdotool_move_to_widget (GraftWindow *window, GtkWidget *widget, double x, double y)
{
  g_autofree char *x_text = NULL;
  g_autofree char *y_text = NULL;

  window_coordinates (window, widget, x, y, &x_text, &y_text);
  {
    const char *commands[] = { "windowfocus", "WINDOW", "mousemove", "--window", "WINDOW", x_text, y_text, NULL };

    xdotool_run (window, commands);
  }
}
