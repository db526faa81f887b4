#include "window.h"

#include <string.h>

#include "widgets/breadcrumbs.h"
#include "widgets/find-panel.h"
#include "widgets/graph-canvas.h"
#include "model-open.h"
#include "widgets/node-sidebar.h"
#include "test-report.h"
#include "widgets/value-format.h"
#include "widgets/widget-screenshot.h"

/* Frames drawn after the layout finishes before a test screenshot, so the
 * canvas has painted the final scene and the sidebar its new rows. */
#define SCREENSHOT_SETTLE_FRAMES 4
/* A test run that never gets a laid-out model still writes its picture. */
#define TEST_PLAN_TIMEOUT_SECONDS 120
#define MAX_RECENT_ITEMS 10
#define SIDEBAR_WIDTH 340

struct _GraftWindow
{
  AdwApplicationWindow parent_instance;

  /* template */
  AdwToastOverlay *toast_overlay;
  AdwSplitButton *open_button;
  AdwWindowTitle *window_title;
  GtkStack *main_stack;
  AdwStatusPage *error_page;
  GtkSpinner *loading_spinner;
  GtkLabel *loading_label;
  GtkProgressBar *loading_progress;
  GtkPaned *paned;
  GtkRevealer *find_revealer;
  GraftFindPanel *find_panel;
  GraftBreadcrumbs *breadcrumbs;
  GraftGraphCanvas *canvas;
  GtkWidget *layout_status;
  GtkProgressBar *layout_progress;
  GraftNodeSidebar *sidebar;

  GSettings *settings;
  GtkRecentManager *recent_manager;
  GMenu *recent_menu;

  GraftModel *model;
  GCancellable *load_cancellable;
  char *loading_path;
  char *last_error;

  /* Properties behind the stateful actions */
  gboolean show_names;
  gboolean show_attributes;
  gboolean show_shapes;
  char *direction;
  gboolean find_visible;
  gboolean sidebar_visible;

  /* Test plan (--find, --select-node, --action, --screenshot) */
  GStrv test_actions;
  char *test_screenshot_path;
  gboolean test_plan_active;
  guint test_settle_frames;
  guint test_timeout_id;
  guint test_tick_id;
};

G_DEFINE_FINAL_TYPE (GraftWindow, graft_window, ADW_TYPE_APPLICATION_WINDOW)

enum {
  PROP_0,
  PROP_SHOW_NAMES,
  PROP_SHOW_ATTRIBUTES,
  PROP_SHOW_SHAPES,
  PROP_DIRECTION,
  PROP_FIND_VISIBLE,
  PROP_SIDEBAR_VISIBLE,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

static void test_plan_continue (GraftWindow *self);

/* ---------- small helpers ---------- */

static void
show_toast (GraftWindow *self, const char *text)
{
  AdwToast *toast = adw_toast_new (text);

  adw_toast_set_timeout (toast, 5);
  adw_toast_overlay_add_toast (self->toast_overlay, toast);
}

static void
update_action_states (GraftWindow *self)
{
  gboolean has_model = self->model != NULL;
  GraftGraph *graph = has_model ? graft_graph_canvas_get_graph (self->canvas) : NULL;
  const char *model_actions[] = {
    "win.export", "win.export-to", "win.zoom-in", "win.zoom-out", "win.zoom-fit", "win.zoom-reset",
    "win.zoom-selection", "win.expand-all", "win.collapse-all", "win.find",
    "win.show-find", "win.find-text", "win.select-node", "win.select-value", "win.show-sidebar",
  };

  for (guint i = 0; i < G_N_ELEMENTS (model_actions); i++)
    gtk_widget_action_set_enabled (GTK_WIDGET (self), model_actions[i], has_model);
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "win.parent-graph",
                                 graph != NULL && graph->parent_graph != NULL);
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "win.cancel-load", self->load_cancellable != NULL);
}

static void
set_titles (GraftWindow *self, const char *title, const char *subtitle)
{
  g_autofree char *window_title = g_strdup_printf ("%s — Graft", title);

  adw_window_title_set_title (self->window_title, title);
  adw_window_title_set_subtitle (self->window_title, subtitle != NULL ? subtitle : "");
  gtk_window_set_title (GTK_WINDOW (self), window_title);
}

static void
show_graph (GraftWindow *self, GraftGraph *graph)
{
  graft_graph_canvas_set_graph (self->canvas, self->model, graph);
  graft_breadcrumbs_set_graph (self->breadcrumbs, graph);
  graft_node_sidebar_show_model (self->sidebar, self->model);
  update_action_states (self);
}

/* ---------- selection and navigation ---------- */

static void
on_selection_changed (GraftWindow *self)
{
  GraftNode *node = graft_graph_canvas_get_selected_node (self->canvas);
  GraftValue *value = graft_graph_canvas_get_selected_value (self->canvas);

  if (self->model == NULL)
    return;
  if (node != NULL)
    graft_node_sidebar_show_node (self->sidebar, self->model, node);
  else if (value != NULL)
    graft_node_sidebar_show_value (self->sidebar, self->model, value);
  else
    graft_node_sidebar_show_model (self->sidebar, self->model);
}

static void
select_item (GraftWindow *self, GraftNode *node, GraftValue *value)
{
  GraftGraph *owner = node != NULL ? node->graph : value->graph;

  if (owner != graft_graph_canvas_get_graph (self->canvas))
    show_graph (self, owner);
  if (node != NULL)
    graft_graph_canvas_select_node (self->canvas, node);
  else
    graft_graph_canvas_select_value (self->canvas, value);
  /* The canvas notifies only on change; show the details in any case. */
  on_selection_changed (self);
}

static void
on_item_activated (GraftWindow *self, gpointer node, gpointer value, GtkWidget *source)
{
  if (node != NULL || value != NULL)
    select_item (self, node, value);
}

static void
on_graph_activated (GraftWindow *self, gpointer graph, GraftBreadcrumbs *breadcrumbs)
{
  if (graph != NULL)
    show_graph (self, graph);
}

static void
on_node_activated (GraftWindow *self, GraftNode *node, GraftGraphCanvas *canvas)
{
  g_autoptr(GPtrArray) subgraphs = NULL;

  if (node == NULL)
    return;
  subgraphs = graft_node_get_subgraphs (node);
  /* The breadcrumbs offer the sibling bodies (If's else_branch). */
  if (subgraphs->len > 0)
    show_graph (self, g_ptr_array_index (subgraphs, 0));
}

static void
on_find_stop (GraftWindow *self)
{
  g_object_set (self, "find-visible", FALSE, NULL);
}

typedef struct {
  const char *name;
  GraftNode *found;
} NodeLookup;

static void
match_node_name (GraftNode *node, gpointer user_data)
{
  NodeLookup *lookup = user_data;

  if (lookup->found == NULL && g_strcmp0 (node->name, lookup->name) == 0)
    lookup->found = node;
}

/* The node in the graph shown, else anywhere in the model. */
static GraftNode *
find_node_by_name (GraftWindow *self, const char *name)
{
  GraftGraph *current = graft_graph_canvas_get_graph (self->canvas);
  NodeLookup lookup = { name, NULL };

  if (current != NULL)
    for (guint i = 0; i < current->nodes->len && lookup.found == NULL; i++)
      match_node_name (g_ptr_array_index (current->nodes, i), &lookup);
  if (lookup.found == NULL)
    graft_graph_foreach_node_recursive (graft_model_get_graph (self->model), match_node_name, &lookup);
  return lookup.found;
}

static void
select_node_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);
  const char *name = g_variant_get_string (parameter, NULL);
  GraftNode *node;

  if (self->model == NULL)
    return;
  node = find_node_by_name (self, name);
  if (node == NULL)
    {
      g_autofree char *message = g_strdup_printf ("No node named “%s” in this model", name);

      show_toast (self, message);
      graft_test_report ("select-error", "%s", message);
      return;
    }
  select_item (self, node, NULL);
}

static void
select_value_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);
  const char *name = g_variant_get_string (parameter, NULL);
  GraftGraph *current;
  GraftValue *value;

  if (self->model == NULL)
    return;
  current = graft_graph_canvas_get_graph (self->canvas);
  value = current != NULL ? graft_graph_resolve_value (current, name) : NULL;
  if (value == NULL)
    {
      g_autofree char *message = g_strdup_printf ("No value named “%s” in this graph", name);

      show_toast (self, message);
      return;
    }
  select_item (self, NULL, value);
}

static void
parent_graph_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);
  GraftGraph *graph = graft_graph_canvas_get_graph (self->canvas);

  if (graph != NULL && graph->parent_graph != NULL)
    show_graph (self, graph->parent_graph);
}

static void
find_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);

  g_object_set (self, "find-visible", TRUE, NULL);
  graft_find_panel_focus_entry (self->find_panel);
}

static void
find_text_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);

  g_object_set (self, "find-visible", TRUE, NULL);
  graft_find_panel_set_text (self->find_panel, g_variant_get_string (parameter, NULL));
}

/* The canvas owns the view actions; the toolbar and the window shortcuts
 * are outside it, so the window forwards them. */
static void
forward_to_canvas (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);
  g_autofree char *canvas_action = g_strconcat ("canvas.", action_name + strlen ("win."), NULL);

  gtk_widget_activate_action_variant (GTK_WIDGET (self->canvas), canvas_action, NULL);
}

/* ---------- loading ---------- */

static void
show_load_error (GraftWindow *self, const char *path, const GError *error)
{
  g_autofree char *basename = g_path_get_basename (path);
  g_autofree char *title = g_strdup_printf ("Could Not Open “%s”", basename);
  g_autofree char *escaped = g_markup_escape_text (error->message, -1);

  g_free (self->last_error);
  self->last_error = g_strdup (error->message);
  graft_test_report ("error", "%s", error->message);

  if (self->model != NULL)
    {
      /* Keep the model on screen; the toast names the file, the dialog
       * gives the whole reason. */
      GtkWidget *dialog = adw_message_dialog_new (GTK_WINDOW (self), title, error->message);

      adw_message_dialog_add_response (ADW_MESSAGE_DIALOG (dialog), "close", "_Close");
      gtk_window_present (GTK_WINDOW (dialog));
      gtk_stack_set_visible_child_name (self->main_stack, "model");
      return;
    }
  adw_status_page_set_title (self->error_page, title);
  adw_status_page_set_description (self->error_page, escaped);
  gtk_stack_set_visible_child_name (self->main_stack, "error");
  set_titles (self, basename, "Not opened");
}

static void
add_to_recent (GraftWindow *self, const char *path)
{
  g_autoptr(GFile) file = g_file_new_for_path (path);
  g_autofree char *uri = g_file_get_uri (file);

  gtk_recent_manager_add_item (self->recent_manager, uri);
}

static void
show_model (GraftWindow *self, GraftModel *model, const char *path)
{
  g_autofree char *basename = g_path_get_basename (path);
  g_autofree char *description = graft_model_describe (model);
  GraftGraph *graph;

  g_set_object (&self->model, model);
  set_titles (self, basename, description);
  graph = graft_model_get_graph (model);
  gtk_stack_set_visible_child_name (self->main_stack, "model");
  graft_find_panel_set_graph (self->find_panel, graph);
  if (graph != NULL)
    show_graph (self, graph);
  else
    graft_node_sidebar_show_model (self->sidebar, model);
  add_to_recent (self, path);
  update_action_states (self);
}

static void
on_load_progress (double fraction, gpointer user_data)
{
  GraftWindow *self = user_data;

  gtk_progress_bar_set_fraction (self->loading_progress, CLAMP (fraction, 0.0, 1.0));
}

static void
on_model_loaded (GObject *source, GAsyncResult *result, gpointer user_data)
{
  g_autoptr(GraftWindow) self = user_data;
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load_finish (result, &error);
  g_autofree char *path = g_steal_pointer (&self->loading_path);

  g_clear_object (&self->load_cancellable);
  gtk_spinner_stop (self->loading_spinner);

  if (model != NULL)
    show_model (self, model, path);
  else if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED)
           || g_error_matches (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_CANCELLED))
    gtk_stack_set_visible_child_name (self->main_stack, self->model != NULL ? "model" : "empty");
  else
    show_load_error (self, path, error);

  update_action_states (self);
  if (self->test_plan_active)
    test_plan_continue (self);
}

static void
open_path (GraftWindow *self, const char *path)
{
  g_autofree char *basename = g_path_get_basename (path);
  g_autofree char *label = g_strdup_printf ("Opening “%s”…", basename);

  if (self->load_cancellable != NULL)
    g_cancellable_cancel (self->load_cancellable);
  g_clear_object (&self->load_cancellable);
  self->load_cancellable = g_cancellable_new ();
  g_free (self->loading_path);
  self->loading_path = g_strdup (path);

  gtk_label_set_text (self->loading_label, label);
  gtk_progress_bar_set_fraction (self->loading_progress, 0);
  gtk_spinner_start (self->loading_spinner);
  gtk_stack_set_visible_child_name (self->main_stack, "loading");
  update_action_states (self);

  graft_model_load_async (path, self->load_cancellable, on_load_progress, self,
                          on_model_loaded, g_object_ref (self));
}

void
graft_window_open_file (GraftWindow *self, GFile *file)
{
  g_autofree char *path = NULL;

  g_return_if_fail (GRAFT_IS_WINDOW (self));

  path = g_file_get_path (file);
  if (path == NULL)
    {
      g_autofree char *uri = g_file_get_uri (file);
      g_autoptr(GError) error = g_error_new (G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                                             "%s is not a local file; Graft opens local files only", uri);

      show_load_error (self, uri, error);
      if (self->test_plan_active)
        test_plan_continue (self);
      return;
    }
  open_path (self, path);
}

gboolean
graft_window_is_empty (GraftWindow *self)
{
  return self->model == NULL && self->load_cancellable == NULL;
}

static void
cancel_load_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);

  if (self->load_cancellable != NULL)
    g_cancellable_cancel (self->load_cancellable);
}

static void
on_open_response (GtkNativeDialog *dialog, int response, GraftWindow *self)
{
  if (response == GTK_RESPONSE_ACCEPT)
    {
      g_autoptr(GFile) file = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (dialog));

      if (file != NULL)
        graft_window_open_file (self, file);
    }
  g_object_unref (dialog);
}

static GtkFileFilter *
new_filter (const char *name, const char *mime_type, const char *const *patterns)
{
  GtkFileFilter *filter = gtk_file_filter_new ();

  gtk_file_filter_set_name (filter, name);
  if (mime_type != NULL)
    gtk_file_filter_add_mime_type (filter, mime_type);
  for (guint i = 0; patterns != NULL && patterns[i] != NULL; i++)
    gtk_file_filter_add_pattern (filter, patterns[i]);
  return filter;
}

static void
open_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);
  const char *onnx[] = { "*.onnx", NULL };
  const char *pytorch[] = { "*.pt", "*.pth", "*.ptl", "*.torchscript", NULL };
  const char *models[] = { "*.onnx", "*.pt", "*.pth", "*.ptl", "*.torchscript", NULL };
  const char *all[] = { "*", NULL };
  GtkFileChooserNative *dialog;
  g_autoptr(GtkFileFilter) models_filter = new_filter ("All Models", NULL, models);
  g_autoptr(GtkFileFilter) onnx_filter = new_filter ("ONNX Models", "application/x-onnx", onnx);
  g_autoptr(GtkFileFilter) pytorch_filter = new_filter ("PyTorch and TorchScript Files", "application/x-pytorch", pytorch);
  g_autoptr(GtkFileFilter) all_filter = new_filter ("All Files", NULL, all);

  dialog = gtk_file_chooser_native_new ("Open Model", GTK_WINDOW (self), GTK_FILE_CHOOSER_ACTION_OPEN,
                                        "_Open", "_Cancel");
  gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (dialog), models_filter);
  gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (dialog), onnx_filter);
  gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (dialog), pytorch_filter);
  gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (dialog), all_filter);
  gtk_native_dialog_set_modal (GTK_NATIVE_DIALOG (dialog), TRUE);
  g_signal_connect (dialog, "response", G_CALLBACK (on_open_response), self);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (dialog));
}

static void
open_sample_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);
  GtkApplication *app = gtk_window_get_application (GTK_WINDOW (self));
  g_autofree char *path = graft_application_dup_sample_path (GRAFT_APPLICATION (app));

  open_path (self, path);
}

static void
open_path_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  open_path (GRAFT_WINDOW (widget), g_variant_get_string (parameter, NULL));
}

static void
open_recent_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);
  g_autoptr(GFile) file = g_file_new_for_uri (g_variant_get_string (parameter, NULL));

  graft_window_open_file (self, file);
}

/* ---------- recent files ---------- */

static gboolean
is_model_uri (const char *uri)
{
  const char *suffixes[] = { ".onnx", ".pt", ".pth", ".ptl", ".torchscript" };

  for (guint i = 0; i < G_N_ELEMENTS (suffixes); i++)
    if (g_str_has_suffix (uri, suffixes[i]))
      return TRUE;
  return FALSE;
}

static int
compare_recent_newest_first (gconstpointer a, gconstpointer b)
{
  GDateTime *ta = gtk_recent_info_get_modified ((GtkRecentInfo *) a);
  GDateTime *tb = gtk_recent_info_get_modified ((GtkRecentInfo *) b);

  return g_date_time_compare (tb, ta);
}

static void
rebuild_recent_menu (GraftWindow *self)
{
  GList *items = gtk_recent_manager_get_items (self->recent_manager);
  guint n_listed = 0;

  g_menu_remove_all (self->recent_menu);
  items = g_list_sort (items, compare_recent_newest_first);
  for (GList *l = items; l != NULL && n_listed < MAX_RECENT_ITEMS; l = l->next)
    {
      GtkRecentInfo *info = l->data;
      const char *uri = gtk_recent_info_get_uri (info);
      g_autoptr(GMenuItem) item = NULL;

      if (!gtk_recent_info_is_local (info) || !gtk_recent_info_exists (info) || !is_model_uri (uri))
        continue;
      item = g_menu_item_new (gtk_recent_info_get_display_name (info), NULL);
      g_menu_item_set_action_and_target (item, "win.open-recent", "s", uri);
      g_menu_append_item (self->recent_menu, item);
      n_listed++;
    }
  if (n_listed == 0)
    g_menu_append (self->recent_menu, "No Recent Models", NULL);
  g_list_free_full (items, (GDestroyNotify) gtk_recent_info_unref);
}

/* ---------- drag and drop ---------- */

static gboolean
on_drop (GtkDropTarget *target, const GValue *value, double x, double y, GraftWindow *self)
{
  GSList *files;
  GtkApplication *app = gtk_window_get_application (GTK_WINDOW (self));

  if (!G_VALUE_HOLDS (value, GDK_TYPE_FILE_LIST))
    return FALSE;
  files = gdk_file_list_get_files (g_value_get_boxed (value));
  if (files == NULL)
    return FALSE;

  graft_window_open_file (self, files->data);
  /* Further files each get their own window, as when opened together. */
  for (GSList *l = files->next; l != NULL; l = l->next)
    {
      GraftWindow *window = graft_window_new (GRAFT_APPLICATION (app));

      graft_window_open_file (window, l->data);
      gtk_window_present (GTK_WINDOW (window));
    }
  g_slist_free (files);
  return TRUE;
}

/* ---------- export and screenshots ---------- */

static void
export_picture (GraftWindow *self, const char *path)
{
  g_autoptr(GError) error = NULL;

  if (graft_graph_canvas_export (self->canvas, path, &error))
    {
      g_autofree char *basename = g_path_get_basename (path);
      g_autofree char *message = g_strdup_printf ("Exported “%s”", basename);

      show_toast (self, message);
      graft_test_report ("exported", "%s", path);
    }
  else
    {
      GtkWidget *message = adw_message_dialog_new (GTK_WINDOW (self), "Could Not Export the Picture",
                                                   error->message);

      adw_message_dialog_add_response (ADW_MESSAGE_DIALOG (message), "close", "_Close");
      gtk_window_present (GTK_WINDOW (message));
      graft_test_report ("export-error", "%s", error->message);
    }
}

/* Without the file chooser: scripts and tests name the file. */
static void
export_to_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  export_picture (GRAFT_WINDOW (widget), g_variant_get_string (parameter, NULL));
}

static void
on_export_response (GtkNativeDialog *dialog, int response, GraftWindow *self)
{
  g_autoptr(GFile) file = NULL;
  g_autofree char *path = NULL;

  if (response == GTK_RESPONSE_ACCEPT)
    file = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (dialog));
  if (file != NULL)
    path = g_file_get_path (file);
  if (path != NULL)
    {
      if (!g_str_has_suffix (path, ".svg") && !g_str_has_suffix (path, ".png") && !g_str_has_suffix (path, ".pdf"))
        {
          GtkFileFilter *filter = gtk_file_chooser_get_filter (GTK_FILE_CHOOSER (dialog));
          const char *suffix = filter != NULL ? g_object_get_data (G_OBJECT (filter), "graft-suffix") : NULL;
          char *with_suffix = g_strconcat (path, suffix != NULL ? suffix : ".svg", NULL);

          g_free (path);
          path = with_suffix;
        }
      export_picture (self, path);
    }
  g_object_unref (dialog);
}

static GtkFileFilter *
new_export_filter (const char *name, const char *mime_type, const char *suffix)
{
  GtkFileFilter *filter = gtk_file_filter_new ();
  g_autofree char *pattern = g_strconcat ("*", suffix, NULL);

  gtk_file_filter_set_name (filter, name);
  gtk_file_filter_add_mime_type (filter, mime_type);
  gtk_file_filter_add_pattern (filter, pattern);
  g_object_set_data_full (G_OBJECT (filter), "graft-suffix", g_strdup (suffix), g_free);
  return filter;
}

static void
export_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);
  GtkFileChooserNative *dialog;
  g_autoptr(GtkFileFilter) svg = new_export_filter ("SVG Image", "image/svg+xml", ".svg");
  g_autoptr(GtkFileFilter) png = new_export_filter ("PNG Image", "image/png", ".png");
  g_autoptr(GtkFileFilter) pdf = new_export_filter ("PDF Document", "application/pdf", ".pdf");
  const char *path = self->model != NULL ? graft_model_get_path (self->model) : NULL;
  g_autofree char *basename = path != NULL ? g_path_get_basename (path) : g_strdup ("graph");
  g_autofree char *suggestion = NULL;
  char *dot = strrchr (basename, '.');

  if (dot != NULL && dot != basename)
    *dot = '\0';
  suggestion = g_strconcat (basename, ".svg", NULL);

  dialog = gtk_file_chooser_native_new ("Export Picture", GTK_WINDOW (self), GTK_FILE_CHOOSER_ACTION_SAVE,
                                        "_Export", "_Cancel");
  gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (dialog), svg);
  gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (dialog), png);
  gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (dialog), pdf);
  gtk_file_chooser_set_current_name (GTK_FILE_CHOOSER (dialog), suggestion);
  gtk_native_dialog_set_modal (GTK_NATIVE_DIALOG (dialog), TRUE);
  g_signal_connect (dialog, "response", G_CALLBACK (on_export_response), self);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (dialog));
}

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
  report_widget_bounds (self, "sidebar-bounds", GTK_WIDGET (self->sidebar));
  report_widget_bounds (self, "canvas-bounds", GTK_WIDGET (self->canvas));
  graft_test_report ("breadcrumbs", "%s", crumbs);
  graft_test_report ("selected-node", "%s", node != NULL ? node->name : "");
  report_view_options (self);
  graft_test_report ("find-visible", "%d", self->find_visible && gtk_widget_get_mapped (GTK_WIDGET (self->find_panel)));
  graft_test_report ("find-matches", "%u", graft_find_panel_get_n_matches (self->find_panel));
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
      show_toast (self, error->message);
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

static void
screenshot_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  save_screenshot (GRAFT_WINDOW (widget), g_variant_get_string (parameter, NULL));
}

/* ---------- test plan ---------- */

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

static gboolean
canvas_is_busy (GraftWindow *self)
{
  gboolean busy = FALSE;

  g_object_get (self->canvas, "busy", &busy, NULL);
  return busy;
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
  return (self->model != NULL && canvas_is_busy (self))
         || graft_node_sidebar_get_pending_stats (self->sidebar) > 0
         || gtk_stack_get_transition_running (self->main_stack)
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
  if (self->test_actions != NULL)
    {
      g_auto(GStrv) actions = g_steal_pointer (&self->test_actions);

      for (guint i = 0; actions[i] != NULL; i++)
        run_detailed_action (self, actions[i]);
      return G_SOURCE_CONTINUE;
    }
  self->test_tick_id = 0;
  test_plan_finish (self, FALSE);
  return G_SOURCE_REMOVE;
}

/* Called when loading finishes or the window starts empty. */
static void
test_plan_continue (GraftWindow *self)
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
  g_free (self->test_screenshot_path);
  self->test_screenshot_path = g_strdup (screenshot_path);
  self->test_plan_active = TRUE;
  self->test_timeout_id = g_timeout_add_seconds (TEST_PLAN_TIMEOUT_SECONDS, test_plan_timeout, self);
}

void
graft_window_start (GraftWindow *self)
{
  g_return_if_fail (GRAFT_IS_WINDOW (self));

  gtk_stack_set_visible_child_name (self->main_stack, "empty");
  if (self->test_plan_active)
    test_plan_continue (self);
}

static void
on_canvas_busy_changed (GraftWindow *self)
{
  gboolean busy = canvas_is_busy (self);

  gtk_widget_set_visible (self->layout_status, busy);
}

static void
on_canvas_progress_changed (GraftWindow *self)
{
  double progress = 0;

  g_object_get (self->canvas, "progress", &progress, NULL);
  gtk_progress_bar_set_fraction (self->layout_progress, CLAMP (progress, 0.0, 1.0));
}

/* ---------- properties ---------- */

static void
set_find_visible (GraftWindow *self, gboolean visible)
{
  if (self->find_visible == visible)
    return;
  self->find_visible = visible;
  gtk_revealer_set_reveal_child (self->find_revealer, visible);
  if (visible)
    graft_find_panel_focus_entry (self->find_panel);
  else
    gtk_widget_grab_focus (GTK_WIDGET (self->canvas));
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_FIND_VISIBLE]);
}

static void
graft_window_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  GraftWindow *self = GRAFT_WINDOW (object);

  switch (prop_id)
    {
    case PROP_SHOW_NAMES: g_value_set_boolean (value, self->show_names); break;
    case PROP_SHOW_ATTRIBUTES: g_value_set_boolean (value, self->show_attributes); break;
    case PROP_SHOW_SHAPES: g_value_set_boolean (value, self->show_shapes); break;
    case PROP_DIRECTION: g_value_set_string (value, self->direction); break;
    case PROP_FIND_VISIBLE: g_value_set_boolean (value, self->find_visible); break;
    case PROP_SIDEBAR_VISIBLE: g_value_set_boolean (value, self->sidebar_visible); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static gboolean
set_boolean (GraftWindow *self, gboolean *field, const GValue *value, guint prop_id)
{
  gboolean new_value = g_value_get_boolean (value);

  if (*field == new_value)
    return FALSE;
  *field = new_value;
  g_object_notify_by_pspec (G_OBJECT (self), properties[prop_id]);
  return TRUE;
}

static void
graft_window_set_property (GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec)
{
  GraftWindow *self = GRAFT_WINDOW (object);
  const char *direction;

  switch (prop_id)
    {
    case PROP_SHOW_NAMES: set_boolean (self, &self->show_names, value, prop_id); break;
    case PROP_SHOW_ATTRIBUTES: set_boolean (self, &self->show_attributes, value, prop_id); break;
    case PROP_SHOW_SHAPES: set_boolean (self, &self->show_shapes, value, prop_id); break;
    case PROP_DIRECTION:
      direction = g_value_get_string (value);
      if (g_strcmp0 (direction, "TB") != 0 && g_strcmp0 (direction, "LR") != 0)
        direction = "TB";
      if (g_strcmp0 (self->direction, direction) != 0)
        {
          g_free (self->direction);
          self->direction = g_strdup (direction);
          g_object_notify_by_pspec (object, pspec);
        }
      break;
    case PROP_FIND_VISIBLE: set_find_visible (self, g_value_get_boolean (value)); break;
    case PROP_SIDEBAR_VISIBLE:
      if (set_boolean (self, &self->sidebar_visible, value, prop_id))
        gtk_widget_set_visible (GTK_WIDGET (self->sidebar), self->sidebar_visible);
      break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

/* ---------- life cycle ---------- */

static void
restore_window_size (GraftWindow *self)
{
  int width = 1200, height = 760;

  if (self->settings != NULL)
    {
      g_settings_get (self->settings, "window-size", "(ii)", &width, &height);
      if (g_settings_get_boolean (self->settings, "window-maximized"))
        gtk_window_maximize (GTK_WINDOW (self));
    }
  gtk_window_set_default_size (GTK_WINDOW (self), width, height);
  /* Wrapped labels ask for their unwrapped width; without a position the
   * sidebar would take half the window. */
  gtk_paned_set_position (self->paned, MAX (width - SIDEBAR_WIDTH, width / 2));
}

static gboolean
graft_window_close_request (GtkWindow *window)
{
  GraftWindow *self = GRAFT_WINDOW (window);

  /* A test run must leave the user's settings alone. */
  if (self->settings != NULL && !graft_test_report_enabled () && self->test_screenshot_path == NULL)
    {
      int width, height;

      gtk_window_get_default_size (window, &width, &height);
      g_settings_set (self->settings, "window-size", "(ii)", width, height);
      g_settings_set_boolean (self->settings, "window-maximized", gtk_window_is_maximized (window));
    }
  return GTK_WINDOW_CLASS (graft_window_parent_class)->close_request (window);
}

static void
bind_view_settings (GraftWindow *self)
{
  const char *keys[] = { "show-names", "show-attributes", "show-shapes", "direction" };

  for (guint i = 0; i < G_N_ELEMENTS (keys); i++)
    {
      if (self->settings != NULL)
        g_settings_bind (self->settings, keys[i], self, keys[i], G_SETTINGS_BIND_DEFAULT);
      g_object_bind_property (self, keys[i], self->canvas, keys[i], G_BINDING_SYNC_CREATE);
    }
  g_object_bind_property (adw_style_manager_get_default (), "dark", self->canvas, "dark",
                          G_BINDING_SYNC_CREATE);
}

static void
graft_window_dispose (GObject *object)
{
  GraftWindow *self = GRAFT_WINDOW (object);

  if (self->load_cancellable != NULL)
    g_cancellable_cancel (self->load_cancellable);
  g_clear_object (&self->load_cancellable);
  g_clear_handle_id (&self->test_timeout_id, g_source_remove);
  if (self->recent_manager != NULL)
    g_signal_handlers_disconnect_by_data (self->recent_manager, self);
  gtk_widget_dispose_template (GTK_WIDGET (self), GRAFT_TYPE_WINDOW);
  g_clear_object (&self->model);
  G_OBJECT_CLASS (graft_window_parent_class)->dispose (object);
}

static void
graft_window_finalize (GObject *object)
{
  GraftWindow *self = GRAFT_WINDOW (object);

  g_clear_object (&self->settings);
  g_clear_object (&self->recent_menu);
  g_free (self->loading_path);
  g_free (self->last_error);
  g_free (self->direction);
  g_strfreev (self->test_actions);
  g_free (self->test_screenshot_path);
  G_OBJECT_CLASS (graft_window_parent_class)->finalize (object);
}

static void
install_properties (GObjectClass *object_class)
{
  properties[PROP_SHOW_NAMES] =
    g_param_spec_boolean ("show-names", NULL, NULL, TRUE, G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_SHOW_ATTRIBUTES] =
    g_param_spec_boolean ("show-attributes", NULL, NULL, TRUE, G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_SHOW_SHAPES] =
    g_param_spec_boolean ("show-shapes", NULL, NULL, TRUE, G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_DIRECTION] =
    g_param_spec_string ("direction", NULL, NULL, "TB", G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_FIND_VISIBLE] =
    g_param_spec_boolean ("find-visible", NULL, NULL, FALSE, G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_SIDEBAR_VISIBLE] =
    g_param_spec_boolean ("sidebar-visible", NULL, NULL, TRUE, G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
install_actions (GtkWidgetClass *widget_class)
{
  const char *canvas_actions[] = {
    "win.zoom-in", "win.zoom-out", "win.zoom-fit", "win.zoom-reset", "win.zoom-selection",
    "win.expand-all", "win.collapse-all", "win.cancel-layout",
  };

  gtk_widget_class_install_action (widget_class, "win.open", NULL, open_action);
  gtk_widget_class_install_action (widget_class, "win.open-sample", NULL, open_sample_action);
  gtk_widget_class_install_action (widget_class, "win.open-recent", "s", open_recent_action);
  gtk_widget_class_install_action (widget_class, "win.open-path", "s", open_path_action);
  gtk_widget_class_install_action (widget_class, "win.cancel-load", NULL, cancel_load_action);
  gtk_widget_class_install_action (widget_class, "win.export", NULL, export_action);
  gtk_widget_class_install_action (widget_class, "win.export-to", "s", export_to_action);
  gtk_widget_class_install_action (widget_class, "win.find", NULL, find_action);
  gtk_widget_class_install_action (widget_class, "win.find-text", "s", find_text_action);
  gtk_widget_class_install_action (widget_class, "win.parent-graph", NULL, parent_graph_action);
  gtk_widget_class_install_action (widget_class, "win.select-node", "s", select_node_action);
  gtk_widget_class_install_action (widget_class, "win.select-value", "s", select_value_action);
  gtk_widget_class_install_action (widget_class, "win.screenshot", "s", screenshot_action);
  for (guint i = 0; i < G_N_ELEMENTS (canvas_actions); i++)
    gtk_widget_class_install_action (widget_class, canvas_actions[i], NULL, forward_to_canvas);

  gtk_widget_class_install_property_action (widget_class, "win.show-names", "show-names");
  gtk_widget_class_install_property_action (widget_class, "win.show-attributes", "show-attributes");
  gtk_widget_class_install_property_action (widget_class, "win.show-shapes", "show-shapes");
  gtk_widget_class_install_property_action (widget_class, "win.direction", "direction");
  gtk_widget_class_install_property_action (widget_class, "win.show-find", "find-visible");
  gtk_widget_class_install_property_action (widget_class, "win.show-sidebar", "sidebar-visible");
}

static void
add_shortcuts (GtkWidgetClass *widget_class)
{
  struct { guint key; GdkModifierType mods; const char *action; } bindings[] = {
    { GDK_KEY_o, GDK_CONTROL_MASK, "win.open" },
    { GDK_KEY_f, GDK_CONTROL_MASK, "win.find" },
    { GDK_KEY_e, GDK_CONTROL_MASK, "win.export" },
    { GDK_KEY_plus, GDK_CONTROL_MASK, "win.zoom-in" },
    { GDK_KEY_equal, GDK_CONTROL_MASK, "win.zoom-in" },
    { GDK_KEY_KP_Add, GDK_CONTROL_MASK, "win.zoom-in" },
    { GDK_KEY_minus, GDK_CONTROL_MASK, "win.zoom-out" },
    { GDK_KEY_KP_Subtract, GDK_CONTROL_MASK, "win.zoom-out" },
    { GDK_KEY_0, GDK_CONTROL_MASK, "win.zoom-fit" },
    { GDK_KEY_1, GDK_CONTROL_MASK, "win.zoom-reset" },
    { GDK_KEY_period, GDK_CONTROL_MASK, "win.zoom-selection" },
    { GDK_KEY_Up, GDK_ALT_MASK, "win.parent-graph" },
    { GDK_KEY_F9, 0, "win.show-sidebar" },
    { GDK_KEY_w, GDK_CONTROL_MASK, "window.close" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (bindings); i++)
    gtk_widget_class_add_binding_action (widget_class, bindings[i].key, bindings[i].mods,
                                         bindings[i].action, NULL);
}

static void
graft_window_class_init (GraftWindowClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);
  GtkWindowClass *window_class = GTK_WINDOW_CLASS (klass);

  object_class->dispose = graft_window_dispose;
  object_class->finalize = graft_window_finalize;
  object_class->get_property = graft_window_get_property;
  object_class->set_property = graft_window_set_property;
  window_class->close_request = graft_window_close_request;

  install_properties (object_class);

  g_type_ensure (GRAFT_TYPE_GRAPH_CANVAS);
  g_type_ensure (GRAFT_TYPE_NODE_SIDEBAR);
  g_type_ensure (GRAFT_TYPE_FIND_PANEL);
  g_type_ensure (GRAFT_TYPE_BREADCRUMBS);

  gtk_widget_class_set_template_from_resource (widget_class, "/org/graft/Graft/ui/window.ui");
  gtk_widget_class_bind_template_child (widget_class, GraftWindow, toast_overlay);
  gtk_widget_class_bind_template_child (widget_class, GraftWindow, open_button);
  gtk_widget_class_bind_template_child (widget_class, GraftWindow, window_title);
  gtk_widget_class_bind_template_child (widget_class, GraftWindow, main_stack);
  gtk_widget_class_bind_template_child (widget_class, GraftWindow, error_page);
  gtk_widget_class_bind_template_child (widget_class, GraftWindow, loading_spinner);
  gtk_widget_class_bind_template_child (widget_class, GraftWindow, loading_label);
  gtk_widget_class_bind_template_child (widget_class, GraftWindow, loading_progress);
  gtk_widget_class_bind_template_child (widget_class, GraftWindow, paned);
  gtk_widget_class_bind_template_child (widget_class, GraftWindow, find_revealer);
  gtk_widget_class_bind_template_child (widget_class, GraftWindow, find_panel);
  gtk_widget_class_bind_template_child (widget_class, GraftWindow, breadcrumbs);
  gtk_widget_class_bind_template_child (widget_class, GraftWindow, canvas);
  gtk_widget_class_bind_template_child (widget_class, GraftWindow, layout_status);
  gtk_widget_class_bind_template_child (widget_class, GraftWindow, layout_progress);
  gtk_widget_class_bind_template_child (widget_class, GraftWindow, sidebar);
  gtk_widget_class_bind_template_callback (widget_class, on_item_activated);
  gtk_widget_class_bind_template_callback (widget_class, on_graph_activated);
  gtk_widget_class_bind_template_callback (widget_class, on_node_activated);
  gtk_widget_class_bind_template_callback (widget_class, on_find_stop);
  gtk_widget_class_bind_template_callback (widget_class, on_selection_changed);
  gtk_widget_class_bind_template_callback (widget_class, on_canvas_busy_changed);

  install_actions (widget_class);
  add_shortcuts (widget_class);
}

static void
graft_window_init (GraftWindow *self)
{
  GtkDropTarget *drop_target;

  self->show_names = TRUE;
  self->show_attributes = TRUE;
  self->show_shapes = TRUE;
  self->direction = g_strdup ("TB");
  self->sidebar_visible = TRUE;

  gtk_widget_init_template (GTK_WIDGET (self));

  g_signal_connect_swapped (self->canvas, "notify::progress", G_CALLBACK (on_canvas_progress_changed), self);

  self->recent_manager = gtk_recent_manager_get_default ();
  self->recent_menu = g_menu_new ();
  adw_split_button_set_menu_model (self->open_button, G_MENU_MODEL (self->recent_menu));
  g_signal_connect_swapped (self->recent_manager, "changed", G_CALLBACK (rebuild_recent_menu), self);
  rebuild_recent_menu (self);

  drop_target = gtk_drop_target_new (GDK_TYPE_FILE_LIST, GDK_ACTION_COPY);
  g_signal_connect (drop_target, "drop", G_CALLBACK (on_drop), self);
  gtk_widget_add_controller (GTK_WIDGET (self), GTK_EVENT_CONTROLLER (drop_target));

  update_action_states (self);
}

GraftWindow *
graft_window_new (GraftApplication *application)
{
  GraftWindow *self = g_object_new (GRAFT_TYPE_WINDOW, "application", application, NULL);
  GSettings *settings = graft_application_get_settings (application);

  /* "application" is not a construct property, so this cannot live in
   * constructed(). */
  if (settings != NULL)
    self->settings = g_object_ref (settings);
  restore_window_size (self);
  bind_view_settings (self);
  return self;
}
