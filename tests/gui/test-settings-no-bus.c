/* Without a session D-Bus (containers, ssh -X: `env -u
 * DBUS_SESSION_BUS_ADDRESS graft`), and with no GSETTINGS_BACKEND chosen,
 * dconf cannot write and the view toggles snapped back. The application
 * then keeps its settings in a key file: the toggles hold, and a new
 * window starts with them. */
#include <string.h>

#include "window-harness.h"
#include "widgets/graph-canvas.h"

static const char *
get (GHashTable *state, const char *key)
{
  return g_hash_table_lookup (state, key);
}

static void
test_toggles_hold (void)
{
  GraftWindow *window = harness_window_new ();
  GtkApplication *app = gtk_window_get_application (GTK_WINDOW (window));
  g_autofree char *sample = g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "data", "samples", "tiny-cnn.onnx", NULL);
  g_autofree char *keyfile_path = g_build_filename (g_get_user_config_dir (), "graft", "settings.ini", NULL);
  g_autofree char *keyfile = NULL;
  g_autoptr(GHashTable) toggled = NULL;
  g_autoptr(GHashTable) reopened = NULL;
  g_autoptr(GSettingsBackend) backend = NULL;

  g_assert_null (g_application_get_dbus_connection (G_APPLICATION (app)));
  g_assert_nonnull (graft_application_get_settings (GRAFT_APPLICATION (app)));
  g_object_get (graft_application_get_settings (GRAFT_APPLICATION (app)), "backend", &backend, NULL);
  g_test_message ("settings backend: %s", G_OBJECT_TYPE_NAME (backend));

  harness_open (window, sample);
  harness_activate (window, "win.show-names");
  harness_activate (window, "win.show-shapes");
  harness_activate (window, "win.direction::LR");
  harness_activate (window, "win.show-module-attributes");
  /* A failed write would come back as a change to the old value. */
  g_usleep (200 * 1000);
  harness_settle (window);
  harness_screenshot (window, "viewer-no-bus-toggles");
  toggled = harness_window_state (window);
  /* Too long to fit at a readable size, left to right: its start shows. */
  {
    GraftGraphCanvas *canvas = GRAFT_GRAPH_CANVAS (harness_find_type (GTK_WIDGET (window), GRAFT_TYPE_GRAPH_CANVAS));
    GraftRect visible, bounds;

    g_assert_true (graft_graph_canvas_get_view (canvas, &visible, &bounds));
    if (bounds.width > visible.width)
      g_assert_cmpfloat (visible.x, <=, bounds.x + 1);
  }
  g_assert_cmpstr (get (toggled, "canvas-options"), ==, "names=0 attributes=1 shapes=0 direction=LR");
  g_assert_cmpstr (get (toggled, "settings-options"), ==, "names=0 attributes=1 shapes=0 direction=LR");

  g_settings_sync ();
  g_assert_true (g_file_get_contents (keyfile_path, &keyfile, NULL, NULL));
  g_test_message ("%s:\n%s", keyfile_path, keyfile);
  g_assert_nonnull (strstr (keyfile, "show-names=false"));
  g_assert_nonnull (strstr (keyfile, "show-shapes=false"));
  g_assert_nonnull (strstr (keyfile, "direction='LR'"));
  g_assert_nonnull (strstr (keyfile, "show-module-attributes=true"));
  {
    gboolean shown = FALSE;

    g_object_get (window, "show-module-attributes", &shown, NULL);
    g_assert_true (shown);
  }
  harness_window_close (window);

  /* A new window starts as the user left the last one (the harness resets
   * settings only when it makes a window, so make this one directly). */
  window = graft_window_new (GRAFT_APPLICATION (app));
  graft_window_start (window);
  gtk_window_present (GTK_WINDOW (window));
  harness_open (window, sample);
  reopened = harness_window_state (window);
  g_assert_cmpstr (get (reopened, "canvas-options"), ==, "names=0 attributes=1 shapes=0 direction=LR");
  harness_window_close (window);
}

int
main (int argc, char *argv[])
{
  harness_init_environment ();
  /* As in a container: no bus address at all, and no backend chosen. */
  g_unsetenv ("DBUS_SESSION_BUS_ADDRESS");
  g_unsetenv ("GSETTINGS_BACKEND");
  gtk_test_init (&argc, &argv, NULL);

  g_test_add_func ("/gui/settings-no-bus/toggles-hold", test_toggles_hold);
  return g_test_run ();
}
