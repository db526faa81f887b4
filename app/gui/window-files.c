/* Files in and pictures out: the Open dialog, the bundled sample, recent
 * models, drag and drop, and Export. The actions need the window's public
 * face only; the Recent menu, the drop zones and the reload offer are the
 * state of a part of their own (GraftWindowFiles). */
#include <string.h>
#include <glib/gstdio.h>

#include "window-files.h"
#include "compare-window.h"
#include "formats.h"

struct _GraftWindowFiles
{
  GObject parent_instance;

  /* Owned references */
  GraftDocument *document;          /* the window's */
  GMenu *recent_menu;               /* the Open button's */

  /* Borrowed references */
  GraftWindow *window;              /* a weak pointer: the window owns this part */
  GtkRecentManager *recent_manager; /* the default manager */
  GtkWidget *drop_zones;            /* over the canvas while a file is dragged over a shown model */
  GtkWidget *compare_zone;          /* its "Compare with" half */
  GtkWidget *compare_zone_label;
  AdwToast *reload_toast;           /* "changed on disk — Reload": a weak pointer */
};

G_DEFINE_FINAL_TYPE (GraftWindowFiles, graft_window_files, G_TYPE_OBJECT)

#define MAX_RECENT_ITEMS 10

static GraftDocument *
document_of (GraftWindow *window)
{
  return graft_window_get_document (window);
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
  const char *all[] = { "*", NULL };
  GtkFileChooserNative *dialog;
  g_auto(GStrv) models = graft_format_list_patterns ();
  g_autoptr(GtkFileFilter) models_filter = new_filter ("All Models", NULL, (const char *const *) models);
  g_autoptr(GtkFileFilter) all_filter = new_filter ("All Files", NULL, all);

  dialog = gtk_file_chooser_native_new ("Open Model", GTK_WINDOW (self), GTK_FILE_CHOOSER_ACTION_OPEN,
                                        "_Open", "_Cancel");
  gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (dialog), models_filter);
  /* One filter per format of the formats table. */
  for (const GraftFormat *format = graft_formats (); format->id != NULL; format++)
    {
      g_autoptr(GPtrArray) patterns = g_ptr_array_new_with_free_func (g_free);
      for (guint i = 0; format->extensions[i] != NULL; i++)
        g_ptr_array_add (patterns, g_strconcat ("*", format->extensions[i], NULL));
      g_ptr_array_add (patterns, NULL);
      g_autofree char *name = g_strdup_printf ("%ss", format->title);
      g_autoptr(GtkFileFilter) filter = new_filter (name, format->mime_type, (const char *const *) patterns->pdata);
      gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (dialog), filter);
    }
  gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (dialog), all_filter);
  gtk_native_dialog_set_modal (GTK_NATIVE_DIALOG (dialog), TRUE);
  g_signal_connect (dialog, "response", G_CALLBACK (on_open_response), self);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (dialog));
}

static void
on_compare_response (GtkNativeDialog *dialog, int response, GraftWindow *self)
{
  if (response == GTK_RESPONSE_ACCEPT && graft_document_get_model (document_of (self)) != NULL)
    {
      g_autoptr(GFile) file = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (dialog));
      g_autofree char *path = file ? g_file_get_path (file) : NULL;
      if (path != NULL)
        graft_compare_window_open_with (gtk_window_get_application (GTK_WINDOW (self)), GTK_WINDOW (self),
                                        graft_document_get_model (document_of (self)), 0, path);
    }
  g_object_unref (dialog);
}

/* File → Compare With…: the shown model (as edited) against another file. */
static void
compare_with_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);
  g_auto(GStrv) models = graft_format_list_patterns ();
  g_autoptr(GtkFileFilter) models_filter = new_filter ("All Models", NULL, (const char *const *) models);
  if (graft_document_get_model (document_of (self)) == NULL)
    return;
  GtkFileChooserNative *dialog = gtk_file_chooser_native_new ("Compare With", GTK_WINDOW (self),
                                                              GTK_FILE_CHOOSER_ACTION_OPEN, "_Compare", "_Cancel");
  gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (dialog), models_filter);
  gtk_native_dialog_set_modal (GTK_NATIVE_DIALOG (dialog), TRUE);
  g_signal_connect (dialog, "response", G_CALLBACK (on_compare_response), self);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (dialog));
}

/* "win.compare-path::FILE": Compare With… without the dialog. */
static void
compare_path_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);
  if (graft_document_get_model (document_of (self)) != NULL)
    graft_compare_window_open_with (gtk_window_get_application (GTK_WINDOW (self)), GTK_WINDOW (self), graft_document_get_model (document_of (self)),
                                    0, g_variant_get_string (parameter, NULL));
}

/* File → Compare with Saved: the file on disk (A) against the model as
 * edited since (B). */
static void
compare_saved_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);
  const char *path = graft_document_get_path (document_of (self));
  if (graft_document_get_model (document_of (self)) != NULL && path != NULL)
    graft_compare_window_open_with (gtk_window_get_application (GTK_WINDOW (self)), GTK_WINDOW (self), graft_document_get_model (document_of (self)),
                                    1, path);
}

static void
open_sample_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);
  GtkApplication *app = gtk_window_get_application (GTK_WINDOW (self));
  g_autofree char *path = graft_application_dup_sample_path (GRAFT_APPLICATION (app));

  graft_window_open_path (self, path);
}

static void
open_path_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  graft_window_open_path (GRAFT_WINDOW (widget), g_variant_get_string (parameter, NULL));
}

static void
open_recent_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);
  g_autoptr(GFile) file = g_file_new_for_uri (g_variant_get_string (parameter, NULL));

  graft_window_open_file (self, file);
}

static gboolean
is_model_uri (const char *uri)
{
  return graft_format_is_model_path (uri);
}

static int
compare_recent_newest_first (gconstpointer a, gconstpointer b)
{
  GDateTime *ta = gtk_recent_info_get_modified ((GtkRecentInfo *) a);
  GDateTime *tb = gtk_recent_info_get_modified ((GtkRecentInfo *) b);

  return g_date_time_compare (tb, ta);
}

static char *
escape_underscores (const char *text)
{
  g_auto(GStrv) parts = g_strsplit (text, "_", -1);

  return g_strjoinv ("__", parts);
}

static void
rebuild_recent_menu (GraftWindowFiles *self)
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
      g_autofree char *escaped_name = NULL;

      if (!gtk_recent_info_is_local (info) || !gtk_recent_info_exists (info) || !is_model_uri (uri))
        continue;
      /* Menu labels take "_" as a mnemonic mark: resnet18_traced.pt
       * would read "resnet18traced.pt". */
      escaped_name = escape_underscores (gtk_recent_info_get_display_name (info));
      item = g_menu_item_new (escaped_name, NULL);
      g_menu_item_set_action_and_target (item, "win.open-recent", "s", uri);
      g_menu_append_item (self->recent_menu, item);
      n_listed++;
    }
  if (n_listed == 0)
    g_menu_append (self->recent_menu, "No Recent Models", NULL);
  g_list_free_full (items, (GDestroyNotify) gtk_recent_info_unref);
}

/* With a model shown, a file dragged over the window is offered two
 * zones over the canvas: open it here, or compare the shown model (edits
 * included) with it. */
static gboolean
over_compare_zone (GraftWindowFiles *self, double x, double y)
{
  graphene_rect_t bounds;

  return gtk_widget_get_visible (self->drop_zones)
         && gtk_widget_compute_bounds (self->compare_zone, GTK_WIDGET (self->window), &bounds)
         && graphene_rect_contains_point (&bounds, &GRAPHENE_POINT_INIT (x, y));
}

static GdkDragAction
on_drag_motion (GtkDropTarget *target, double x, double y, GraftWindowFiles *self)
{
  if (graft_document_get_model (self->document) != NULL && !gtk_widget_get_visible (self->drop_zones))
    {
      const char *title = graft_document_get_title (self->document);
      g_autofree char *text = g_strdup_printf ("Drop here to compare it with %s",
                                               title != NULL ? title : "the model shown");

      gtk_label_set_text (GTK_LABEL (self->compare_zone_label), text);
      gtk_widget_set_visible (self->drop_zones, TRUE);
    }
  if (over_compare_zone (self, x, y))
    gtk_widget_set_state_flags (self->compare_zone, GTK_STATE_FLAG_DROP_ACTIVE, FALSE);
  else
    gtk_widget_unset_state_flags (self->compare_zone, GTK_STATE_FLAG_DROP_ACTIVE);
  return GDK_ACTION_COPY;
}

static void
on_drag_leave (GtkDropTarget *target, GraftWindowFiles *self)
{
  gtk_widget_set_visible (self->drop_zones, FALSE);
}

static GtkWidget *
drop_zone (const char *icon, const char *text, GtkWidget **label_out)
{
  GtkWidget *zone = gtk_box_new (GTK_ORIENTATION_VERTICAL, 12);
  GtkWidget *image = gtk_image_new_from_icon_name (icon);
  GtkWidget *label = gtk_label_new (text);

  gtk_image_set_pixel_size (GTK_IMAGE (image), 64);
  gtk_widget_set_vexpand (image, TRUE);
  gtk_widget_set_valign (image, GTK_ALIGN_END);
  gtk_label_set_wrap (GTK_LABEL (label), TRUE);
  gtk_label_set_justify (GTK_LABEL (label), GTK_JUSTIFY_CENTER);
  gtk_label_set_max_width_chars (GTK_LABEL (label), 24);
  gtk_widget_set_vexpand (label, TRUE);
  gtk_widget_set_valign (label, GTK_ALIGN_START);
  gtk_widget_set_margin_start (label, 24);
  gtk_widget_set_margin_end (label, 24);
  gtk_widget_add_css_class (label, "title-2");
  gtk_box_append (GTK_BOX (zone), image);
  gtk_box_append (GTK_BOX (zone), label);
  gtk_widget_set_hexpand (zone, TRUE);
  gtk_widget_add_css_class (zone, "card");
  if (label_out != NULL)
    *label_out = label;
  return zone;
}

static void
add_drop_zones (GraftWindowFiles *self)
{
  GtkWidget *overlay = gtk_widget_get_parent (GTK_WIDGET (graft_window_get_canvas (self->window)));

  GtkWidget *zones = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 24);

  gtk_box_set_homogeneous (GTK_BOX (zones), TRUE);
  gtk_widget_set_margin_start (zones, 24);
  gtk_widget_set_margin_end (zones, 24);
  gtk_widget_set_margin_top (zones, 24);
  gtk_widget_set_margin_bottom (zones, 24);
  gtk_widget_set_hexpand (zones, TRUE);
  gtk_box_append (GTK_BOX (zones), drop_zone ("document-open-symbolic", "Drop here to open it", NULL));
  self->compare_zone = drop_zone ("view-dual-symbolic", "Drop here to compare it with the model shown",
                                  &self->compare_zone_label);
  gtk_widget_set_name (self->compare_zone, "compare-drop-zone");
  gtk_box_append (GTK_BOX (zones), self->compare_zone);
  /* on a plain background: the graph would show between the zones */
  self->drop_zones = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 0);
  gtk_widget_add_css_class (self->drop_zones, "view");
  gtk_box_append (GTK_BOX (self->drop_zones), zones);
  gtk_widget_set_can_target (self->drop_zones, FALSE);
  gtk_widget_set_visible (self->drop_zones, FALSE);
  if (GTK_IS_OVERLAY (overlay))
    gtk_overlay_add_overlay (GTK_OVERLAY (overlay), self->drop_zones);
}

static gboolean
on_drop (GtkDropTarget *target, const GValue *value, double x, double y, GraftWindowFiles *self)
{
  GSList *files;
  GtkApplication *app = gtk_window_get_application (GTK_WINDOW (self->window));
  gboolean compare = graft_document_get_model (self->document) != NULL && over_compare_zone (self, x, y);

  gtk_widget_set_visible (self->drop_zones, FALSE);
  if (!G_VALUE_HOLDS (value, GDK_TYPE_FILE_LIST))
    return FALSE;
  files = gdk_file_list_get_files (g_value_get_boxed (value));
  if (files == NULL)
    return FALSE;

  if (compare)
    {
      g_autofree char *path = g_file_get_path (files->data);

      if (path != NULL)
        graft_compare_window_open_with (app, GTK_WINDOW (self->window), graft_document_get_model (self->document), 0,
                                        path);
      g_slist_free (files);
      return path != NULL;
    }
  graft_window_open_file (self->window, files->data);
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

static void
export_picture (GraftWindow *self, const char *path)
{
  g_autoptr(GError) error = NULL;

  if (graft_graph_canvas_export (graft_window_get_canvas (self), path, &error))
    {
      g_autofree char *basename = g_path_get_basename (path);
      g_autofree char *message = g_strdup_printf ("Exported “%s”", basename);

      graft_window_show_toast (self, message);
    }
  else
    {
      GtkWidget *message = adw_message_dialog_new (GTK_WINDOW (self), "Could Not Export the Picture",
                                                   error->message);

      adw_message_dialog_add_response (ADW_MESSAGE_DIALOG (message), "close", "_Close");
      gtk_window_present (GTK_WINDOW (message));
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

void
graft_window_chooser_start_beside_model (GraftWindow *self, GtkFileChooser *chooser)
{
  g_autoptr(GFile) folder = graft_document_dup_folder (document_of (self));

  if (folder != NULL)
    gtk_file_chooser_set_current_folder (chooser, folder, NULL);
}

static void
export_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);
  GtkFileChooserNative *dialog;
  g_autoptr(GtkFileFilter) svg = new_export_filter ("SVG Image", "image/svg+xml", ".svg");
  g_autoptr(GtkFileFilter) png = new_export_filter ("PNG Image", "image/png", ".png");
  g_autoptr(GtkFileFilter) pdf = new_export_filter ("PDF Document", "application/pdf", ".pdf");
  const char *path = graft_document_get_path (document_of (self));
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
  graft_window_chooser_start_beside_model (self, GTK_FILE_CHOOSER (dialog));
  gtk_file_chooser_set_current_name (GTK_FILE_CHOOSER (dialog), suggestion);
  gtk_native_dialog_set_modal (GTK_NATIVE_DIALOG (dialog), TRUE);
  g_signal_connect (dialog, "response", G_CALLBACK (on_export_response), self);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (dialog));
}

/* The document's file changed on disk (a training script saved the model
 * again, say): a toast offers to reload it. */
static void
on_changed_on_disk (GraftWindowFiles *self, gboolean deleted, GraftDocument *document)
{
  const char *path = graft_document_get_watched_path (document);
  g_autofree char *basename = NULL;
  g_autofree char *title = NULL;
  AdwToast *toast;

  if (self->reload_toast != NULL || path == NULL)
    return;   /* one offer at a time */
  basename = g_path_get_basename (path);
  title = g_strdup_printf (deleted ? "“%s” was deleted on disk" : "“%s” changed on disk", basename);
  toast = adw_toast_new (title);
  if (!deleted)
    {
      adw_toast_set_button_label (toast, "_Reload");
      adw_toast_set_action_name (toast, "win.reload");
    }
  adw_toast_set_timeout (toast, 0);
  g_set_weak_pointer (&self->reload_toast, toast);
  graft_window_add_toast (self->window, toast);
}

/* Another model, or the model saved: an offer to reload the file watched
 * before is stale. */
static void
dismiss_reload_toast (GraftWindowFiles *self)
{
  if (self->reload_toast != NULL)
    adw_toast_dismiss (self->reload_toast);
  g_clear_weak_pointer (&self->reload_toast);
}

static void
reload_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);

  if (graft_document_get_watched_path (document_of (self)) != NULL)
    {
      g_autofree char *path = g_strdup (graft_document_get_watched_path (document_of (self)));
      graft_window_open_path (self, path);
    }
}

static void
graft_window_files_dispose (GObject *object)
{
  GraftWindowFiles *self = GRAFT_WINDOW_FILES (object);

  if (self->recent_manager != NULL)
    g_signal_handlers_disconnect_by_data (self->recent_manager, self);
  self->recent_manager = NULL;
  if (self->document != NULL)
    g_signal_handlers_disconnect_by_data (self->document, self);
  g_clear_object (&self->document);
  g_clear_weak_pointer (&self->reload_toast);
  g_clear_weak_pointer (&self->window);
  G_OBJECT_CLASS (graft_window_files_parent_class)->dispose (object);
}

static void
graft_window_files_finalize (GObject *object)
{
  GraftWindowFiles *self = GRAFT_WINDOW_FILES (object);

  g_clear_object (&self->recent_menu);
  G_OBJECT_CLASS (graft_window_files_parent_class)->finalize (object);
}

static void
graft_window_files_class_init (GraftWindowFilesClass *klass)
{
  G_OBJECT_CLASS (klass)->dispose = graft_window_files_dispose;
  G_OBJECT_CLASS (klass)->finalize = graft_window_files_finalize;
}

static void
graft_window_files_init (GraftWindowFiles *self)
{
}

GraftWindowFiles *
graft_window_files_new (GraftWindow *window, AdwSplitButton *open_button)
{
  GraftWindowFiles *self = g_object_new (GRAFT_TYPE_WINDOW_FILES, NULL);
  GtkDropTarget *drop_target;

  g_set_weak_pointer (&self->window, window);
  self->document = g_object_ref (graft_window_get_document (window));
  g_signal_connect_swapped (self->document, "changed-on-disk", G_CALLBACK (on_changed_on_disk), self);
  g_signal_connect_swapped (self->document, "notify::model", G_CALLBACK (dismiss_reload_toast), self);
  g_signal_connect_swapped (self->document, "saved", G_CALLBACK (dismiss_reload_toast), self);
  self->recent_manager = gtk_recent_manager_get_default ();
  self->recent_menu = g_menu_new ();
  adw_split_button_set_menu_model (open_button, G_MENU_MODEL (self->recent_menu));
  g_signal_connect_swapped (self->recent_manager, "changed", G_CALLBACK (rebuild_recent_menu), self);
  rebuild_recent_menu (self);

  add_drop_zones (self);
  drop_target = gtk_drop_target_new (GDK_TYPE_FILE_LIST, GDK_ACTION_COPY);
  /* The window holds the controller, and this part holds no window. */
  g_signal_connect_object (drop_target, "drop", G_CALLBACK (on_drop), self, 0);
  g_signal_connect_object (drop_target, "enter", G_CALLBACK (on_drag_motion), self, 0);
  g_signal_connect_object (drop_target, "motion", G_CALLBACK (on_drag_motion), self, 0);
  g_signal_connect_object (drop_target, "leave", G_CALLBACK (on_drag_leave), self, 0);
  gtk_widget_add_controller (GTK_WIDGET (window), GTK_EVENT_CONTROLLER (drop_target));
  return self;
}

void
graft_window_class_add_file_actions (GtkWidgetClass *widget_class)
{
  gtk_widget_class_install_action (widget_class, "win.open", NULL, open_action);
  gtk_widget_class_install_action (widget_class, "win.open-sample", NULL, open_sample_action);
  gtk_widget_class_install_action (widget_class, "win.open-recent", "s", open_recent_action);
  gtk_widget_class_install_action (widget_class, "win.open-path", "s", open_path_action);
  gtk_widget_class_install_action (widget_class, "win.compare-with", NULL, compare_with_action);
  gtk_widget_class_install_action (widget_class, "win.compare-path", "s", compare_path_action);
  gtk_widget_class_install_action (widget_class, "win.compare-saved", NULL, compare_saved_action);
  gtk_widget_class_install_action (widget_class, "win.export", NULL, export_action);
  gtk_widget_class_install_action (widget_class, "win.export-to", "s", export_to_action);
  gtk_widget_class_install_action (widget_class, "win.reload", NULL, reload_action);
}
