#include "window-harness.h"

#include <gdk/x11/gdkx.h>
#include <glib/gstdio.h>
#include <string.h>

#include "widget-screenshot.h"
#include "widgets/breadcrumbs.h"
#include "widgets/diagnostics-panel.h"
#include "widgets/find-panel.h"
#include "widgets/graph-canvas.h"
#include "widgets/node-sidebar.h"
#include "widgets/run-pane.h"
#include "../test-scratch.h"
#include "widget-inspect.h"
#include "diagnostics-inspect.h"

/* Frames drawn with nothing left to do before a step counts as done, so
 * the canvas has painted the final scene and the sidebar its new rows. */
#define SETTLE_FRAMES 4
#define WAIT_SECONDS 60

/* How long harness_wait_for() waits before failing: WAIT_SECONDS unless a
 * test sets more for a step known to be long (harness_set_wait_seconds). */
static guint wait_seconds = WAIT_SECONDS;

void
harness_set_wait_seconds (guint seconds)
{
  wait_seconds = seconds > 0 ? seconds : WAIT_SECONDS;
}

void
harness_init_environment (void)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *scratch = graft_test_scratch_dir ("graft-gui-XXXXXX", &error);
  g_autofree char *home = g_build_filename (scratch, "home", NULL);

  g_assert_no_error (error);
  g_mkdir_with_parents (home, 0700);
  g_setenv ("HOME", home, TRUE);
  g_setenv ("XDG_DATA_HOME", home, TRUE);
  g_setenv ("XDG_CONFIG_HOME", home, TRUE);
  g_setenv ("XDG_CACHE_HOME", home, TRUE);
  g_setenv ("XDG_RUNTIME_DIR", scratch, TRUE);
  /* Without a session bus GDBus would try to autolaunch one. */
  g_setenv ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/graft-test-bus", FALSE);
}

static void
reset_settings (GSettings *settings)
{
  g_autoptr(GSettingsSchema) schema = NULL;
  g_auto(GStrv) keys = NULL;

  if (settings == NULL)
    return;
  g_object_get (settings, "settings-schema", &schema, NULL);
  keys = g_settings_schema_list_keys (schema);
  for (guint i = 0; keys[i] != NULL; i++)
    g_settings_reset (settings, keys[i]);
}

/* One application for the whole test program: a registered GtkApplication
 * is finalized cleanly only at the end of g_application_run(). */
static GraftApplication *
application (void)
{
  static GraftApplication *app;
  g_autoptr(GError) error = NULL;

  if (app != NULL)
    return app;
  /* A blinking text cursor would make pictures differ from run to run;
   * transitions only delay the final picture. */
  g_object_set (gtk_settings_get_default (), "gtk-cursor-blink", FALSE, "gtk-enable-animations", FALSE, NULL);
  app = graft_application_new ();
  /* Never hand anything to a Graft the user has open. */
  g_application_set_flags (G_APPLICATION (app), G_APPLICATION_NON_UNIQUE | G_APPLICATION_HANDLES_OPEN);
  g_assert_true (g_application_register (G_APPLICATION (app), NULL, &error));
  g_assert_no_error (error);
  return app;
}

GraftWindow *
harness_window_new (void)
{
  GraftApplication *app = application ();
  GraftWindow *window;

  reset_settings (graft_application_get_settings (app));
  window = graft_window_new (app);
  graft_window_start (window);
  gtk_window_present (GTK_WINDOW (window));
  harness_settle (window);
  return window;
}

static gboolean
is_null (gpointer data)
{
  return *(gpointer *) data == NULL;
}

void
harness_window_close (GraftWindow *window)
{
  g_autoptr(GPtrArray) dialogs = harness_list_dialogs (window);
  gpointer weak_window = window;

  for (guint i = 0; i < dialogs->len; i++)
    gtk_window_destroy (g_ptr_array_index (dialogs, i));
  g_object_add_weak_pointer (G_OBJECT (window), &weak_window);
  gtk_window_destroy (GTK_WINDOW (window));
  /* Finalized, once the workers (layout, checks) that hold it report back:
   * nothing else may keep a reference. */
  harness_wait_for (is_null, &weak_window);
}

static gboolean
wake_up (gpointer data)
{
  return G_SOURCE_CONTINUE;
}

void
harness_wait_for (gboolean (*done) (gpointer), gpointer data)
{
  gint64 deadline = g_get_monotonic_time () + (gint64) wait_seconds * G_USEC_PER_SEC;
  guint ticker = g_timeout_add (50, wake_up, NULL);  /* so the deadline is checked */

  while (!done (data) && g_get_monotonic_time () < deadline)
    g_main_context_iteration (NULL, TRUE);
  g_source_remove (ticker);
  g_assert_true (done (data));
}

/* ---------- the widget tree ---------- */

/* The first widget of the tree under root, in depth-first order, that
 * matches; NULL if none. */
static GtkWidget *
find_widget (GtkWidget *root, gboolean (*matches) (GtkWidget *, gconstpointer), gconstpointer data)
{
  if (matches (root, data))
    return root;
  for (GtkWidget *child = gtk_widget_get_first_child (root); child != NULL;
       child = gtk_widget_get_next_sibling (child))
    {
      GtkWidget *found = find_widget (child, matches, data);

      if (found != NULL)
        return found;
    }
  return NULL;
}

static gboolean
has_type (GtkWidget *widget, gconstpointer type)
{
  return G_TYPE_CHECK_INSTANCE_TYPE (widget, GPOINTER_TO_SIZE (type));
}

static gboolean
has_id (GtkWidget *widget, gconstpointer id)
{
  return g_strcmp0 (gtk_buildable_get_buildable_id (GTK_BUILDABLE (widget)), id) == 0;
}

static gboolean
says (GtkWidget *widget, gconstpointer text)
{
  return GTK_IS_LABEL (widget) && strstr (gtk_label_get_text (GTK_LABEL (widget)), text) != NULL;
}

/* A caption of the sidebar's rows (a "property-name" label) reading text. */
static gboolean
is_caption (GtkWidget *widget, gconstpointer text)
{
  return GTK_IS_LABEL (widget) && gtk_widget_has_css_class (widget, "property-name")
         && g_strcmp0 (gtk_label_get_text (GTK_LABEL (widget)), text) == 0;
}

static gboolean
is_moving_revealer (GtkWidget *widget, gconstpointer unused)
{
  return GTK_IS_REVEALER (widget)
         && gtk_revealer_get_reveal_child (GTK_REVEALER (widget)) != gtk_revealer_get_child_revealed (GTK_REVEALER (widget));
}

GtkWidget *
harness_find_type (GtkWidget *root, GType type)
{
  return find_widget (root, has_type, GSIZE_TO_POINTER (type));
}

GtkWidget *
harness_find_id (GtkWidget *root, const char *id)
{
  return find_widget (root, has_id, id);
}

static gboolean
has_name (GtkWidget *widget, gconstpointer name)
{
  return g_strcmp0 (gtk_widget_get_name (widget), name) == 0;
}

GtkWidget *
harness_find_name (GtkWidget *root, const char *name)
{
  return find_widget (root, has_name, name);
}

GtkWidget *
harness_get_name (GtkWidget *root, const char *name)
{
  GtkWidget *widget = harness_find_name (root, name);

  if (widget == NULL)
    g_error ("no widget named '%s'", name);
  return widget;
}

GraftGraph *
harness_shown_graph (GraftWindow *window)
{
  return graft_graph_canvas_get_graph (
    GRAFT_GRAPH_CANVAS (harness_find_type (GTK_WIDGET (window), GRAFT_TYPE_GRAPH_CANVAS)));
}

GtkWindow *
harness_find_dialog (GraftWindow *window, GType type)
{
  g_autoptr(GPtrArray) dialogs = harness_list_dialogs (window);

  for (guint i = 0; i < dialogs->len; i++)
    if (G_TYPE_CHECK_INSTANCE_TYPE (g_ptr_array_index (dialogs, i), type))
      return g_ptr_array_index (dialogs, i);
  return NULL;
}

void
harness_wait_ms (guint ms)
{
  gint64 end = g_get_monotonic_time () + ms * 1000;

  while (g_get_monotonic_time () < end)
    g_main_context_iteration (NULL, FALSE);
}

char *
harness_run_check (const char *const *argv, const char *what)
{
  g_autofree char *out = NULL, *err = NULL;
  g_autoptr(GError) error = NULL;
  int status = 0;

  g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status, &error);
  g_assert_no_error (error);
  if (!g_spawn_check_wait_status (status, &error))
    g_error ("%s fails the check: %s", what, err);
  return g_strstrip (g_steal_pointer (&out));
}

GtkLabel *
harness_find_label (GtkWidget *root, const char *text)
{
  return (GtkLabel *) find_widget (root, says, text);
}

#define FIND(window, Type, TYPE) ((Type *) harness_find_type (GTK_WIDGET (window), TYPE))

GPtrArray *
harness_list_dialogs (GraftWindow *window)
{
  GPtrArray *dialogs = g_ptr_array_new ();
  GListModel *toplevels = gtk_window_get_toplevels ();  /* owned by GTK */

  for (guint i = 0; i < g_list_model_get_n_items (toplevels); i++)
    {
      g_autoptr(GtkWindow) toplevel = g_list_model_get_item (toplevels, i);

      if (toplevel != GTK_WINDOW (window) && gtk_widget_get_visible (GTK_WIDGET (toplevel))
          && gtk_window_get_transient_for (toplevel) == GTK_WINDOW (window))
        g_ptr_array_add (dialogs, toplevel);
    }
  return dialogs;
}

char *
harness_describe_dialog (GtkWindow *dialog)
{
  if (ADW_IS_MESSAGE_DIALOG (dialog))
    return g_strdup_printf ("%s: %s — %s", G_OBJECT_TYPE_NAME (dialog),
                            adw_message_dialog_get_heading (ADW_MESSAGE_DIALOG (dialog)),
                            adw_message_dialog_get_body (ADW_MESSAGE_DIALOG (dialog)));
  return g_strdup_printf ("%s: %s", G_OBJECT_TYPE_NAME (dialog),
                          gtk_window_get_title (dialog) != NULL ? gtk_window_get_title (dialog) : "");
}

/* ---------- settling ---------- */

static gboolean
dialogs_are_drawn (GraftWindow *window)
{
  g_autoptr(GPtrArray) dialogs = harness_list_dialogs (window);

  for (guint i = 0; i < dialogs->len; i++)
    if (!gtk_widget_get_mapped (g_ptr_array_index (dialogs, i)))
      return FALSE;
  return TRUE;
}

static gboolean
window_is_settling (GraftWindow *window)
{
  GtkStack *stack = GTK_STACK (harness_find_id (GTK_WIDGET (window), "main_stack"));
  gboolean canvas_busy = FALSE;

  gboolean checking = FALSE;

  g_object_get (FIND (window, GObject, GRAFT_TYPE_GRAPH_CANVAS), "busy", &canvas_busy, NULL);
  g_object_get (window, "checking", &checking, NULL);
  return canvas_busy || checking
         || g_strcmp0 (gtk_stack_get_visible_child_name (stack), "loading") == 0
         || gtk_stack_get_transition_running (stack)
         || inspect_uint (FIND (window, GraftNodeSidebar, GRAFT_TYPE_NODE_SIDEBAR), "pending-stats") > 0
         || graft_run_pane_is_running (FIND (window, GraftRunPane, GRAFT_TYPE_RUN_PANE))
         /* An edit being proved at other sizes: its toast says so. */
         || harness_find_label (GTK_WIDGET (window), "verifying at other sizes…") != NULL
         || find_widget (GTK_WIDGET (window), is_moving_revealer, NULL) != NULL
         || !dialogs_are_drawn (window);
}

static gboolean
count_quiet_frames (GtkWidget *widget, GdkFrameClock *clock, gpointer user_data)
{
  guint *quiet = user_data;

  *quiet = window_is_settling (GRAFT_WINDOW (widget)) ? 0 : *quiet + 1;
  return G_SOURCE_CONTINUE;
}

static gboolean
is_settled (gpointer data)
{
  return *(guint *) data >= SETTLE_FRAMES;
}

void
harness_settle (GraftWindow *window)
{
  guint quiet = 0;
  guint tick = gtk_widget_add_tick_callback (GTK_WIDGET (window), count_quiet_frames, &quiet, NULL);

  harness_wait_for (is_settled, &quiet);
  gtk_widget_remove_tick_callback (GTK_WIDGET (window), tick);
}

void
harness_open (GraftWindow *window, const char *path)
{
  g_autoptr(GFile) file = g_file_new_for_path (path);

  graft_window_open_file (window, file);
  harness_settle (window);
}

void
harness_activate (GraftWindow *window, const char *detailed_action)
{
  g_autofree char *name = NULL;
  g_autoptr(GVariant) target = NULL;
  g_autoptr(GError) error = NULL;

  g_assert_true (g_action_parse_detailed_name (detailed_action, &name, &target, &error));
  g_assert_no_error (error);
  if (!gtk_widget_activate_action_variant (GTK_WIDGET (window), name, target))
    g_error ("%s: no such action", detailed_action);
  harness_settle (window);
}

/* ---------- screenshots ---------- */

char *
harness_screenshot_path (const char *name)
{
  g_autofree char *dir = g_build_filename (g_getenv ("GRAFT_BUILD_DIR"), "tests", "gui", "screenshots", NULL);
  g_autofree char *file = g_strconcat (name, ".png", NULL);

  g_mkdir_with_parents (dir, 0755);
  return g_build_filename (dir, file, NULL);
}

typedef struct {
  GraftWindow *window;
  const char *name;
  gboolean done;
} Screenshot;

static void
save_screenshots (Screenshot *shot)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) dialogs = harness_list_dialogs (shot->window);
  g_autofree char *path = harness_screenshot_path (shot->name);

  g_assert_true (graft_widget_save_png (GTK_WIDGET (shot->window), path, &error));
  g_assert_no_error (error);
  g_test_message ("screenshot: %s", path);
  for (guint i = 0; i < dialogs->len; i++)
    {
      g_autofree char *dialog_name = g_strdup_printf ("%s-dialog-%u", shot->name, i);
      g_autofree char *dialog_path = harness_screenshot_path (dialog_name);

      g_assert_true (graft_widget_save_png (g_ptr_array_index (dialogs, i), dialog_path, &error));
      g_assert_no_error (error);
    }
}

static void
on_after_paint (GdkFrameClock *clock, Screenshot *shot)
{
  if (shot->done)
    return;
  save_screenshots (shot);
  shot->done = TRUE;
}

static gboolean
screenshot_is_done (gpointer data)
{
  return ((Screenshot *) data)->done;
}

void
harness_screenshot (GraftWindow *window, const char *name)
{
  GdkFrameClock *clock = gtk_widget_get_frame_clock (GTK_WIDGET (window));
  Screenshot shot = { window, name, FALSE };
  gulong handler;

  g_assert_nonnull (clock);
  /* The picture comes from the widgets' render nodes, which any redraw
   * request drops until the next paint: take it right after one. */
  handler = g_signal_connect (clock, "after-paint", G_CALLBACK (on_after_paint), &shot);
  gtk_widget_queue_draw (GTK_WIDGET (window));
  harness_wait_for (screenshot_is_done, &shot);
  g_signal_handler_disconnect (clock, handler);
}

/* ---------- what the window displays ---------- */

static void
put (GHashTable *state, const char *key, const char *format, ...) G_GNUC_PRINTF (3, 4);

static void
put (GHashTable *state, const char *key, const char *format, ...)
{
  va_list args;

  va_start (args, format);
  g_hash_table_replace (state, g_strdup (key), g_strdup_vprintf (format, args));
  va_end (args);
}

static void
put_bounds (GHashTable *state, const char *key, GraftWindow *window, GtkWidget *widget)
{
  graphene_rect_t bounds;

  if (!gtk_widget_get_mapped (widget) || !gtk_widget_compute_bounds (widget, GTK_WIDGET (window), &bounds))
    put (state, key, "hidden");
  else
    put (state, key, "%d,%d,%d,%d", (int) bounds.origin.x, (int) bounds.origin.y,
         (int) bounds.size.width, (int) bounds.size.height);
}

/* The labels of the Open button's recent-models menu, "|"-separated. */
static void
put_recent_menu (GHashTable *state, GraftWindow *window)
{
  AdwSplitButton *open_button = FIND (window, AdwSplitButton, ADW_TYPE_SPLIT_BUTTON);
  GMenuModel *menu = adw_split_button_get_menu_model (open_button);
  g_autoptr(GString) labels = g_string_new (NULL);

  for (int i = 0; menu != NULL && i < g_menu_model_get_n_items (menu); i++)
    {
      g_autofree char *label = NULL;

      g_menu_model_get_item_attribute (menu, i, G_MENU_ATTRIBUTE_LABEL, "s", &label);
      g_string_append_printf (labels, "%s%s", i > 0 ? "|" : "", label != NULL ? label : "");
    }
  put (state, "recent", "%s", labels->str);
}

/* The view toggles as the canvas and the settings hold them. */
static void
put_view_options (GHashTable *state, GraftWindow *window, GraftGraphCanvas *canvas)
{
  GtkApplication *app = gtk_window_get_application (GTK_WINDOW (window));
  GSettings *settings = graft_application_get_settings (GRAFT_APPLICATION (app));
  gboolean names, attributes, shapes;
  g_autofree char *direction = NULL;

  g_object_get (canvas, "show-names", &names, "show-attributes", &attributes,
                "show-shapes", &shapes, "direction", &direction, NULL);
  put (state, "canvas-options", "names=%d attributes=%d shapes=%d direction=%s",
       names, attributes, shapes, direction);
  if (settings != NULL)
    {
      g_autofree char *saved_direction = g_settings_get_string (settings, "direction");

      put (state, "settings-options", "names=%d attributes=%d shapes=%d direction=%s",
           g_settings_get_boolean (settings, "show-names"), g_settings_get_boolean (settings, "show-attributes"),
           g_settings_get_boolean (settings, "show-shapes"), saved_direction);
    }
}

/* Whether a menu item bound to action_name would be sensitive now (the
 * window's own menu items exist only while the menu is open): a button
 * bound to it, in a popover of the window that is never shown. */
gboolean
harness_action_enabled (GraftWindow *window, const char *action_name)
{
  GtkWidget *popover = gtk_popover_new ();
  GtkWidget *probe = gtk_button_new ();
  gboolean enabled;

  /* Detailed: an action with a parameter needs a target to be probed. */
  gtk_actionable_set_detailed_action_name (GTK_ACTIONABLE (probe), action_name);
  gtk_popover_set_child (GTK_POPOVER (popover), probe);
  gtk_widget_set_parent (popover, GTK_WIDGET (window));
  enabled = gtk_widget_get_sensitive (probe);
  gtk_widget_unparent (popover);
  return enabled;
}

static void
put_action_enabled (GHashTable *state, const char *key, GraftWindow *window, const char *action_name)
{
  put (state, key, "%d", harness_action_enabled (window, action_name));
}

static void
put_analysis (GHashTable *state, GraftWindow *window, GraftGraphCanvas *canvas)
{
  GraftDiagnosticsPanel *diagnostics = FIND (window, GraftDiagnosticsPanel, GRAFT_TYPE_DIAGNOSTICS_PANEL);
  GraftRunPane *run_pane = FIND (window, GraftRunPane, GRAFT_TYPE_RUN_PANE);
  GtkLabel *count = GTK_LABEL (harness_find_id (GTK_WIDGET (window), "diagnostics_count"));
  g_autofree char *summary = inspect_dup_diagnostics (diagnostics);
  g_autofree char *outputs = inspect_dup_rows (inspect_template_child (run_pane, GRAFT_TYPE_RUN_PANE, "outputs_list"));

  put (state, "diagnostics-count", "%s", gtk_label_get_text (count));
  put (state, "diagnostics-shown", "%u", inspect_uint (diagnostics, "n-shown"));
  put (state, "diagnostics", "%s", summary);
  put (state, "diagnostics-visible", "%d", gtk_widget_get_mapped (GTK_WIDGET (diagnostics)));
  put (state, "canvas-marked", "%u", inspect_uint (canvas, "n-marked"));
  put (state, "canvas-marked-groups", "%u", inspect_uint (canvas, "n-marked-groups"));
  put (state, "canvas-marked-hidden", "%u", inspect_uint (canvas, "n-hidden-marked"));
  put (state, "run-visible", "%d", gtk_widget_get_mapped (GTK_WIDGET (run_pane)));
  put (state, "run-status", "%s", inspect_label_text (run_pane, GRAFT_TYPE_RUN_PANE, "status_label"));
  put (state, "run-outputs", "%s", outputs);
}

static void
put_dialogs (GHashTable *state, GraftWindow *window)
{
  g_autoptr(GPtrArray) dialogs = harness_list_dialogs (window);

  put (state, "dialogs", "%u", dialogs->len);
  for (guint i = 0; i < dialogs->len; i++)
    {
      g_autofree char *key = g_strdup_printf ("dialog-%u", i);

      g_hash_table_replace (state, g_steal_pointer (&key), harness_describe_dialog (g_ptr_array_index (dialogs, i)));
    }
}

GHashTable *
harness_window_state (GraftWindow *window)
{
  GHashTable *state = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  GtkStack *stack = GTK_STACK (harness_find_id (GTK_WIDGET (window), "main_stack"));
  AdwWindowTitle *title = FIND (window, AdwWindowTitle, ADW_TYPE_WINDOW_TITLE);
  GraftNodeSidebar *sidebar = FIND (window, GraftNodeSidebar, GRAFT_TYPE_NODE_SIDEBAR);
  GraftGraphCanvas *canvas = FIND (window, GraftGraphCanvas, GRAFT_TYPE_GRAPH_CANVAS);
  GraftFindPanel *find_panel = FIND (window, GraftFindPanel, GRAFT_TYPE_FIND_PANEL);
  AdwStatusPage *error_page = ADW_STATUS_PAGE (harness_find_id (GTK_WIDGET (window), "error_page"));
  GraftNode *node = graft_graph_canvas_get_selected_node (canvas);
  g_autofree char *crumbs = inspect_dup_breadcrumbs (FIND (window, GraftBreadcrumbs, GRAFT_TYPE_BREADCRUMBS));
  GtkLabel *file_caption;
  GtkWidget *file_value;
  gboolean find_visible = FALSE;
  int width, height;

  put (state, "state", "%s", gtk_stack_get_visible_child_name (stack));
  put (state, "title", "%s", adw_window_title_get_title (title));
  put (state, "subtitle", "%s", adw_window_title_get_subtitle (title));
  gtk_window_get_default_size (GTK_WINDOW (window), &width, &height);
  put (state, "default-size", "%dx%d", width, height);
  put (state, "window-size", "%dx%d", gtk_widget_get_width (GTK_WIDGET (window)),
       gtk_widget_get_height (GTK_WIDGET (window)));
  put (state, "sidebar-title", "%s", inspect_label_text (sidebar, GRAFT_TYPE_NODE_SIDEBAR, "title_label"));
  put (state, "sidebar-subtitle", "%s", inspect_label_text (sidebar, GRAFT_TYPE_NODE_SIDEBAR, "subtitle_label"));
  /* The model overview's File row: its caption, then its value. */
  file_caption = (GtkLabel *) find_widget (GTK_WIDGET (sidebar), is_caption, "File");
  file_value = file_caption != NULL ? gtk_widget_get_next_sibling (GTK_WIDGET (file_caption)) : NULL;
  put (state, "sidebar-file", "%s", GTK_IS_LABEL (file_value) ? gtk_label_get_text (GTK_LABEL (file_value)) : "");
  put_bounds (state, "sidebar-bounds", window, GTK_WIDGET (sidebar));
  put_bounds (state, "canvas-bounds", window, GTK_WIDGET (canvas));
  put (state, "breadcrumbs", "%s", crumbs);
  put (state, "selected-node", "%s", node != NULL ? node->name : "");
  put (state, "no-graph", "%d", gtk_widget_get_mapped (harness_find_id (GTK_WIDGET (window), "no_graph_page")));
  put_view_options (state, window, canvas);
  put_recent_menu (state, window);
  g_object_get (window, "find-visible", &find_visible, NULL);
  put (state, "find-visible", "%d", find_visible && gtk_widget_get_mapped (GTK_WIDGET (find_panel)));
  put (state, "find-matches", "%u", inspect_uint (find_panel, "n-matches"));
  put (state, "window-title", "%s", gtk_window_get_title (GTK_WINDOW (window)));
  put_action_enabled (state, "can-undo", window, "win.undo");
  put_action_enabled (state, "can-redo", window, "win.redo");
  put_analysis (state, window, canvas);
  if (gtk_stack_get_visible_child (stack) == GTK_WIDGET (error_page))
    put (state, "error-page", "%s — %s", adw_status_page_get_title (error_page),
         adw_status_page_get_description (error_page));
  put_dialogs (state, window);
  return state;
}

/* ---------- real key and pointer events, through the X server ---------- */

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

gboolean
harness_have_xdotool (void)
{
  g_autofree char *path = g_find_program_in_path ("xdotool");

  if (path == NULL)
    g_test_skip ("needs xdotool (Debian package xdotool) to send real key and pointer events");
  return path != NULL;
}

void
harness_xdotool (GtkWindow *window, const char *const *commands)
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
}

GtkDropTarget *
harness_find_drop_target (GtkWidget *widget)
{
  g_autoptr(GListModel) controllers = gtk_widget_observe_controllers (widget);

  for (guint i = 0; i < g_list_model_get_n_items (controllers); i++)
    {
      g_autoptr(GObject) controller = g_list_model_get_item (controllers, i);

      if (GTK_IS_DROP_TARGET (controller))
        return GTK_DROP_TARGET (controller);
    }
  return NULL;
}

gboolean
harness_drop_file (GtkDropTarget *target, const char *path, double x, double y)
{
  g_autoptr(GFile) file = g_file_new_for_path (path);
  GSList files = { file, NULL };
  GValue value = G_VALUE_INIT;
  gboolean accepted = FALSE;

  g_value_init (&value, GDK_TYPE_FILE_LIST);
  g_value_take_boxed (&value, gdk_file_list_new_from_list (&files));
  g_signal_emit_by_name (target, "drop", &value, x, y, &accepted);
  g_value_unset (&value);
  return accepted;
}

GraftNode *
harness_find_op (GraftGraph *graph, const char *op)
{
  for (guint i = 0; i < graph->nodes->len; i++)
    if (strcmp (((GraftNode *) g_ptr_array_index (graph->nodes, i))->op, op) == 0)
      return g_ptr_array_index (graph->nodes, i);
  return NULL;
}
