/* Test hooks (--screenshot, --select-node, --find, --action): screenshots
 * of the window and its dialogs, and a "key=value" report of what they
 * display, written when GRAFT_TEST_REPORT is set. */
#include "window-private.h"

#include <string.h>

#include "test-report.h"
#include "widgets/widget-screenshot.h"

/* Frames drawn with nothing left to do before a step of the test plan, so
 * the canvas has painted the final scene and the sidebar its new rows. */
#define SCREENSHOT_SETTLE_FRAMES 4
/* A test run that never gets a laid-out model still writes its picture. */
#define TEST_PLAN_TIMEOUT_SECONDS 120

static void
report_widget_bounds (GraftWindow *self, const char *key, GtkWidget *widget)
{
  graphene_rect_t bounds;

  if (!gtk_widget_get_mapped (widget) || !gtk_widget_compute_bounds (widget, GTK_WIDGET (self), &bounds))
    {
      graft_test_report (key, "hidden");
      return;
    }
  graft_test_report (key, "%d,%d,%d,%d", (int) bounds.origin.x, (int) bounds.origin.y,
                     (int) bounds.size.width, (int) bounds.size.height);
}

/* The labels of the Open button's recent-models menu, "|"-separated. */
static void
report_recent_menu (GraftWindow *self)
{
  GMenuModel *menu = G_MENU_MODEL (self->recent_menu);
  GString *labels = g_string_new (NULL);

  for (int i = 0; i < g_menu_model_get_n_items (menu); i++)
    {
      g_autofree char *label = NULL;

      g_menu_model_get_item_attribute (menu, i, G_MENU_ATTRIBUTE_LABEL, "s", &label);
      g_string_append_printf (labels, "%s%s", i > 0 ? "|" : "", label != NULL ? label : "");
    }
  graft_test_report ("recent", "%s", labels->str);
  g_string_free (labels, TRUE);
}

/* The view toggles as the canvas and the settings hold them. */
static void
report_view_options (GraftWindow *self)
{
  gboolean names, attributes, shapes;
  g_autofree char *direction = NULL;

  g_object_get (self->canvas, "show-names", &names, "show-attributes", &attributes,
                "show-shapes", &shapes, "direction", &direction, NULL);
  graft_test_report ("canvas-options", "names=%d attributes=%d shapes=%d direction=%s",
                     names, attributes, shapes, direction);
  if (self->settings != NULL)
    {
      g_autofree char *saved_direction = g_settings_get_string (self->settings, "direction");

      graft_test_report ("settings-options", "names=%d attributes=%d shapes=%d direction=%s",
                         g_settings_get_boolean (self->settings, "show-names"),
                         g_settings_get_boolean (self->settings, "show-attributes"),
                         g_settings_get_boolean (self->settings, "show-shapes"),
                         saved_direction);
    }
}

/* What the window displays, for tests/gui: read from the widgets themselves. */
static void
report_window_state (GraftWindow *self)
{
  GraftNode *node = self->model != NULL ? graft_graph_canvas_get_selected_node (self->canvas) : NULL;
  g_autofree char *crumbs = graft_breadcrumbs_dup_text (self->breadcrumbs);
  int width, height;

  graft_test_report ("state", "%s", gtk_stack_get_visible_child_name (self->main_stack));
  graft_test_report ("title", "%s", adw_window_title_get_title (self->window_title));
  graft_test_report ("subtitle", "%s", adw_window_title_get_subtitle (self->window_title));
  gtk_window_get_default_size (GTK_WINDOW (self), &width, &height);
  graft_test_report ("default-size", "%dx%d", width, height);
  graft_test_report ("window-size", "%dx%d", gtk_widget_get_width (GTK_WIDGET (self)),
                     gtk_widget_get_height (GTK_WIDGET (self)));
  graft_test_report ("sidebar-title", "%s", graft_node_sidebar_get_title (self->sidebar));
  graft_test_report ("sidebar-subtitle", "%s", graft_node_sidebar_get_subtitle (self->sidebar));
  graft_test_report ("sidebar-file", "%s", graft_node_sidebar_get_file (self->sidebar) != NULL
                     ? graft_node_sidebar_get_file (self->sidebar) : "");
  graft_test_report ("model-path", "%s", self->model != NULL && graft_model_get_path (self->model) != NULL
                     ? graft_model_get_path (self->model) : "");
  report_widget_bounds (self, "sidebar-bounds", GTK_WIDGET (self->sidebar));
  report_widget_bounds (self, "canvas-bounds", GTK_WIDGET (self->canvas));
  graft_test_report ("breadcrumbs", "%s", crumbs);
  graft_test_report ("selected-node", "%s", node != NULL ? node->name : "");
  graft_test_report ("no-graph", "%d", gtk_widget_get_mapped (self->no_graph_page));
  report_view_options (self);
  report_recent_menu (self);
  graft_test_report ("find-visible", "%d", self->find_visible && gtk_widget_get_mapped (GTK_WIDGET (self->find_panel)));
  graft_test_report ("find-matches", "%u", graft_find_panel_get_n_matches (self->find_panel));
  graft_test_report ("window-title", "%s", gtk_window_get_title (GTK_WINDOW (self)));
  graft_test_report ("can-undo", "%d", gtk_widget_is_sensitive (GTK_WIDGET (self)) && self->history != NULL
                     && graft_edit_history_can_undo (self->history));
  graft_test_report ("can-redo", "%d", self->history != NULL && graft_edit_history_can_redo (self->history));
  graft_window_report_analysis (self);
  if (gtk_stack_get_visible_child (self->main_stack) == GTK_WIDGET (self->error_page))
    graft_test_report ("error-page", "%s — %s", adw_status_page_get_title (self->error_page),
                       adw_status_page_get_description (self->error_page));
}

/* Dialogs this window shows (shortcuts, About, error details), in the
 * order GTK lists them. */
static GPtrArray *
list_dialogs (GraftWindow *self)
{
  GPtrArray *dialogs = g_ptr_array_new ();
  GListModel *toplevels = gtk_window_get_toplevels ();  /* owned by GTK */

  for (guint i = 0; i < g_list_model_get_n_items (toplevels); i++)
    {
      g_autoptr(GtkWindow) window = g_list_model_get_item (toplevels, i);

      if (window != GTK_WINDOW (self) && gtk_widget_get_visible (GTK_WIDGET (window))
          && gtk_window_get_transient_for (window) == GTK_WINDOW (self))
        g_ptr_array_add (dialogs, window);
    }
  return dialogs;
}

static gboolean
dialogs_are_drawn (GraftWindow *self)
{
  g_autoptr(GPtrArray) dialogs = list_dialogs (self);

  for (guint i = 0; i < dialogs->len; i++)
    if (!gtk_widget_get_mapped (g_ptr_array_index (dialogs, i)))
      return FALSE;
  return TRUE;
}

static void
report_dialog (guint index, GtkWindow *dialog)
{
  g_autofree char *key = g_strdup_printf ("dialog-%u", index);

  if (ADW_IS_MESSAGE_DIALOG (dialog))
    graft_test_report (key, "%s: %s — %s", G_OBJECT_TYPE_NAME (dialog),
                       adw_message_dialog_get_heading (ADW_MESSAGE_DIALOG (dialog)),
                       adw_message_dialog_get_body (ADW_MESSAGE_DIALOG (dialog)));
  else
    graft_test_report (key, "%s: %s", G_OBJECT_TYPE_NAME (dialog),
                       gtk_window_get_title (dialog) != NULL ? gtk_window_get_title (dialog) : "");
}

/* The window to path, and each dialog it shows to path-dialog-N.png. */
static gboolean
save_screenshot (GraftWindow *self, const char *path)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) dialogs = list_dialogs (self);
  g_autofree char *stem = g_str_has_suffix (path, ".png") ? g_strndup (path, strlen (path) - 4) : g_strdup (path);

  if (!graft_widget_save_png (GTK_WIDGET (self), path, &error))
    {
      graft_window_show_toast (self, error->message);
      graft_test_report ("screenshot-error", "%s", error->message);
      return FALSE;
    }
  graft_test_report ("screenshot", "%s", path);
  for (guint i = 0; i < dialogs->len; i++)
    {
      g_autofree char *dialog_path = g_strdup_printf ("%s-dialog-%u.png", stem, i);
      g_autofree char *key = g_strdup_printf ("dialog-%u-screenshot", i);
      g_autoptr(GError) dialog_error = NULL;

      report_dialog (i, g_ptr_array_index (dialogs, i));
      if (graft_widget_save_png (g_ptr_array_index (dialogs, i), dialog_path, &dialog_error))
        graft_test_report (key, "%s", dialog_path);
      else
        graft_test_report ("screenshot-error", "%s", dialog_error->message);
    }
  graft_test_report ("dialogs", "%u", dialogs->len);
  report_window_state (self);
  return TRUE;
}

typedef struct {
  GWeakRef window;
  char *path;
  gulong handler;
} PendingScreenshot;

static void
pending_screenshot_free (gpointer data, GClosure *closure)
{
  PendingScreenshot *pending = data;

  g_weak_ref_clear (&pending->window);
  g_free (pending->path);
  g_free (pending);
}

static void
on_screenshot_painted (GdkFrameClock *clock, PendingScreenshot *pending)
{
  g_autoptr(GraftWindow) self = g_weak_ref_get (&pending->window);

  if (self != NULL)
    save_screenshot (self, pending->path);
  g_signal_handler_disconnect (clock, pending->handler);  /* frees pending */
}

/* Deferred to the next paint, for the reason given in widget-screenshot.h. */
static void
screenshot_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GdkFrameClock *clock = gtk_widget_get_frame_clock (widget);
  PendingScreenshot *pending;

  if (clock == NULL)
    {
      graft_test_report ("screenshot-error", "the window is not shown yet");
      return;
    }
  pending = g_new0 (PendingScreenshot, 1);
  g_weak_ref_init (&pending->window, widget);
  pending->path = g_variant_dup_string (parameter, NULL);
  pending->handler = g_signal_connect_data (clock, "after-paint", G_CALLBACK (on_screenshot_painted),
                                            pending, pending_screenshot_free, 0);
  gtk_widget_queue_draw (widget);
}

static void
test_plan_finish (GraftWindow *self, gboolean timed_out)
{
  self->test_plan_active = FALSE;
  g_clear_handle_id (&self->test_timeout_id, g_source_remove);
  if (timed_out)
    graft_test_report ("timeout", "%d", TEST_PLAN_TIMEOUT_SECONDS);
  if (self->test_screenshot_path != NULL)
    {
      save_screenshot (self, self->test_screenshot_path);
      gtk_window_destroy (GTK_WINDOW (self));
    }
}

static void
on_after_paint (GraftWindow *self, GdkFrameClock *clock)
{
  g_signal_handlers_disconnect_by_func (clock, on_after_paint, self);
  if (self->test_plan_active)
    test_plan_finish (self, FALSE);
}

/* "win.select-node::conv1" → win.select-node with the string "conv1". */
static void
run_detailed_action (GraftWindow *self, const char *detailed)
{
  g_autofree char *name = NULL;
  g_autoptr(GVariant) target = NULL;
  g_autoptr(GError) error = NULL;

  if (!g_action_parse_detailed_name (detailed, &name, &target, &error))
    {
      graft_test_report ("action-error", "%s: %s", detailed, error->message);
      return;
    }
  if (!gtk_widget_activate_action_variant (GTK_WIDGET (self), name, target))
    graft_test_report ("action-error", "%s: no such action", detailed);
}

static gboolean
window_is_settling (GraftWindow *self)
{
  return (self->model != NULL && graft_window_canvas_is_busy (self))
         || graft_node_sidebar_get_pending_stats (self->sidebar) > 0
         || gtk_stack_get_transition_running (self->main_stack)
         || graft_window_analysis_is_busy (self)
         || gtk_revealer_get_reveal_child (self->diagnostics_revealer)
            != gtk_revealer_get_child_revealed (self->diagnostics_revealer)
         || gtk_revealer_get_reveal_child (self->find_revealer) != gtk_revealer_get_child_revealed (self->find_revealer)
         || !dialogs_are_drawn (self);
}

/* Each step (the actions, then the screenshot) waits until the window has
 * drawn a few frames with nothing left to do: layouts, including those a
 * selection starts on idle, statistics, transitions, dialogs. */
static gboolean
test_plan_tick (GtkWidget *widget, GdkFrameClock *clock, gpointer user_data)
{
  GraftWindow *self = GRAFT_WINDOW (widget);

  if (self->load_cancellable != NULL)
    {
      /* An action opened a file: on_model_loaded() resumes the plan. */
      self->test_tick_id = 0;
      return G_SOURCE_REMOVE;
    }
  if (window_is_settling (self))
    {
      self->test_settle_frames = 0;
      return G_SOURCE_CONTINUE;
    }
  if (++self->test_settle_frames < SCREENSHOT_SETTLE_FRAMES)
    return G_SOURCE_CONTINUE;

  self->test_settle_frames = 0;
  /* One action per settled window: a run or a layout an action starts
   * has finished before the next action looks at the result. */
  if (self->test_actions != NULL && self->test_actions[self->test_action_index] != NULL)
    {
      run_detailed_action (self, self->test_actions[self->test_action_index++]);
      if (self->load_cancellable != NULL)
        self->test_tick_id = 0;
      return self->load_cancellable != NULL ? G_SOURCE_REMOVE : G_SOURCE_CONTINUE;
    }
  self->test_tick_id = 0;
  /* The picture comes from the widgets' render nodes, which any redraw
   * request drops until the next paint: take it right after one. */
  g_signal_connect_object (clock, "after-paint", G_CALLBACK (on_after_paint), self, G_CONNECT_SWAPPED);
  gtk_widget_queue_draw (widget);
  return G_SOURCE_REMOVE;
}

/* Called when loading finishes or the window starts empty. */
void
graft_window_test_plan_continue (GraftWindow *self)
{
  if (!self->test_plan_active || self->test_tick_id != 0 || self->load_cancellable != NULL)
    return;
  self->test_settle_frames = 0;
  self->test_tick_id = gtk_widget_add_tick_callback (GTK_WIDGET (self), test_plan_tick, NULL, NULL);
}

static gboolean
test_plan_timeout (gpointer user_data)
{
  GraftWindow *self = user_data;

  self->test_timeout_id = 0;
  if (self->test_tick_id != 0)
    gtk_widget_remove_tick_callback (GTK_WIDGET (self), self->test_tick_id);
  self->test_tick_id = 0;
  test_plan_finish (self, TRUE);
  return G_SOURCE_REMOVE;
}

void
graft_window_set_test_plan (GraftWindow *self,
                            const char *const *actions,
                            const char *screenshot_path)
{
  g_return_if_fail (GRAFT_IS_WINDOW (self));

  g_strfreev (self->test_actions);
  self->test_actions = g_strdupv ((char **) actions);
  self->test_action_index = 0;
  g_free (self->test_screenshot_path);
  self->test_screenshot_path = g_strdup (screenshot_path);
  self->test_plan_active = TRUE;
  /* A blinking text cursor would make pictures differ from run to run. */
  g_object_set (gtk_settings_get_default (), "gtk-cursor-blink", FALSE, NULL);
  self->test_timeout_id = g_timeout_add_seconds (TEST_PLAN_TIMEOUT_SECONDS, test_plan_timeout, self);
}

void
graft_window_class_add_test_actions (GtkWidgetClass *widget_class)
{
  gtk_widget_class_install_action (widget_class, "win.screenshot", "s", screenshot_action);
}
