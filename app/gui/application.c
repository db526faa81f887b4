#define G_SETTINGS_ENABLE_BACKEND
#include "application.h"

#include <gio/gsettingsbackend.h>

#include "graft-config.h"
#include "gui-config.h"
#include "window.h"
#include "compare-window.h"

#define SAMPLE_NAME "tiny-cnn.onnx"

struct _GraftApplication
{
  AdwApplication parent_instance;

  GSettings *settings;
  gboolean compare;   /* --compare: the two files opened next are compared */
};

G_DEFINE_FINAL_TYPE (GraftApplication, graft_application, ADW_TYPE_APPLICATION)

/* The data folder of the build tree graft runs from, or NULL when it is
 * installed. Programs built here (app/gui/graft, the GUI tests in
 * tests/gui) sit two folders below the build root, whose data/ holds the
 * compiled schema and a copy of the sample. */
static const char *
uninstalled_data_dir (void)
{
  static char *data_dir;
  static gsize looked;

  if (g_once_init_enter (&looked))
    {
      g_autofree char *exe = g_file_read_link ("/proc/self/exe", NULL);
      g_autofree char *exe_dir = exe != NULL ? g_path_get_dirname (exe) : NULL;

      if (exe_dir != NULL && g_strcmp0 (exe_dir, GRAFT_BINDIR) != 0)
        {
          g_autofree char *dir = g_build_filename (exe_dir, "..", "..", "data", NULL);
          g_autofree char *schema = g_build_filename (dir, "gschemas.compiled", NULL);

          if (g_file_test (schema, G_FILE_TEST_IS_REGULAR))
            data_dir = g_canonicalize_filename (dir, NULL);
        }
      g_once_init_leave (&looked, 1);
    }
  return data_dir;
}

static GSettingsSchema *
lookup_schema (void)
{
  GSettingsSchemaSource *installed = g_settings_schema_source_get_default ();
  GSettingsSchema *schema = NULL;

  /* From the build tree the freshly compiled schema wins over an older
   * installed one. */
  if (uninstalled_data_dir () != NULL)
    {
      g_autoptr(GSettingsSchemaSource) build_source =
        g_settings_schema_source_new_from_directory (uninstalled_data_dir (), installed, FALSE, NULL);

      if (build_source != NULL)
        schema = g_settings_schema_source_lookup (build_source, GRAFT_APP_ID, TRUE);
    }
  if (schema == NULL && installed != NULL)
    schema = g_settings_schema_source_lookup (installed, GRAFT_APP_ID, TRUE);
  return schema;
}

/* Without a session bus (containers, ssh -X) the default backend, dconf,
 * cannot write, and every change snaps back to its old value: keep the
 * settings in a key file in the user's config folder instead. A backend
 * named in GSETTINGS_BACKEND is the user's (or a test's) choice. */
static GSettingsBackend *
dup_settings_backend (GApplication *app)
{
  g_autofree char *path = NULL;

  if (g_getenv ("GSETTINGS_BACKEND") != NULL || g_application_get_dbus_connection (app) != NULL)
    return NULL;
  path = g_build_filename (g_get_user_config_dir (), "graft", "settings.ini", NULL);
  g_debug ("no session bus: settings are kept in %s", path);
  return g_keyfile_settings_backend_new (path, "/org/graft/Graft/", "Graft");
}

GSettings *
graft_application_get_settings (GraftApplication *self)
{
  g_return_val_if_fail (GRAFT_IS_APPLICATION (self), NULL);
  return self->settings;
}

char *
graft_application_dup_sample_path (GraftApplication *self)
{
  if (uninstalled_data_dir () != NULL)
    return g_build_filename (uninstalled_data_dir (), "samples", SAMPLE_NAME, NULL);
  return g_build_filename (GRAFT_DATADIR, "samples", SAMPLE_NAME, NULL);
}

static void
graft_application_activate (GApplication *app)
{
  GraftApplication *self = GRAFT_APPLICATION (app);
  GtkWindow *window = gtk_application_get_active_window (GTK_APPLICATION (app));

  if (window == NULL)
    {
      window = GTK_WINDOW (graft_window_new (self));
      graft_window_start (GRAFT_WINDOW (window));
    }
  gtk_window_present (window);
}

static void
graft_application_open (GApplication *app, GFile **files, int n_files, const char *hint)
{
  GraftApplication *self = GRAFT_APPLICATION (app);

  if (self->compare && n_files == 2)
    {
      g_autofree char *a = g_file_get_path (files[0]);
      g_autofree char *b = g_file_get_path (files[1]);
      self->compare = FALSE;
      graft_compare_window_open_paths (GTK_APPLICATION (app), NULL, a, b);
      return;
    }
  if (self->compare)
    g_printerr ("graft: --compare takes two files, not %d\n", n_files);
  for (int i = 0; i < n_files; i++)
    {
      GtkWindow *active = gtk_application_get_active_window (GTK_APPLICATION (app));
      GraftWindow *window;

      /* Reuse a window that shows nothing yet; otherwise one window per model. */
      if (active != NULL && GRAFT_IS_WINDOW (active) && graft_window_is_empty (GRAFT_WINDOW (active)))
        window = GRAFT_WINDOW (active);
      else
        window = graft_window_new (self);
      graft_window_open_file (window, files[i]);
      gtk_window_present (GTK_WINDOW (window));
    }
}

static void
show_about (GSimpleAction *action, GVariant *parameter, gpointer user_data)
{
  GtkApplication *app = user_data;
  const char *developers[] = { "The Graft developers", NULL };
  GtkWidget *about;

  about = g_object_new (ADW_TYPE_ABOUT_WINDOW,
                        "transient-for", gtk_application_get_active_window (app),
                        "application-name", "Graft",
                        "application-icon", GRAFT_APP_ID,
                        "developer-name", "The Graft developers",
                        "version", GRAFT_VERSION,
                        "comments", "View, check and edit ONNX and TorchScript models.",
                        "license-type", GTK_LICENSE_GPL_3_0,
                        "developers", developers,
                        NULL);
  gtk_window_present (GTK_WINDOW (about));
}

static void
quit_app (GSimpleAction *action, GVariant *parameter, gpointer user_data)
{
  GList *windows = g_list_copy (gtk_application_get_windows (GTK_APPLICATION (user_data)));

  /* Closing each window saves its size; g_application_quit() would not. */
  for (GList *l = windows; l != NULL; l = l->next)
    gtk_window_close (l->data);
  g_list_free (windows);
}

static void
new_window_action (GSimpleAction *action, GVariant *parameter, gpointer user_data)
{
  GraftWindow *window = graft_window_new (GRAFT_APPLICATION (user_data));

  graft_window_start (window);
  gtk_window_present (GTK_WINDOW (window));
}

static const GActionEntry app_actions[] = {
  { "about", show_about },
  { "quit", quit_app },
  { "new-window", new_window_action },
};

static void
graft_application_startup (GApplication *app)
{
  GraftApplication *self = GRAFT_APPLICATION (app);
  g_autoptr(GSettingsSchema) schema = NULL;
  g_autoptr(GSettingsBackend) backend = NULL;
  const char *quit_accels[] = { "<Control>q", NULL };
  const char *new_window_accels[] = { "<Control>n", NULL };

  G_APPLICATION_CLASS (graft_application_parent_class)->startup (app);

  schema = lookup_schema ();
  backend = dup_settings_backend (app);
  if (schema != NULL)
    self->settings = g_settings_new_full (schema, backend, NULL);
  else
    g_message ("GSettings schema %s not found; settings will not be saved", GRAFT_APP_ID);

  g_action_map_add_action_entries (G_ACTION_MAP (app), app_actions, G_N_ELEMENTS (app_actions), app);
  gtk_application_set_accels_for_action (GTK_APPLICATION (app), "app.quit", quit_accels);
  gtk_application_set_accels_for_action (GTK_APPLICATION (app), "app.new-window", new_window_accels);
}

static int
graft_application_handle_local_options (GApplication *app, GVariantDict *options)
{
  if (g_variant_dict_contains (options, "version"))
    {
      g_print ("graft %s\n", GRAFT_VERSION);
      return 0;
    }
  GRAFT_APPLICATION (app)->compare = g_variant_dict_contains (options, "compare");
  return -1;
}

static void
graft_application_finalize (GObject *object)
{
  GraftApplication *self = GRAFT_APPLICATION (object);

  g_clear_object (&self->settings);
  G_OBJECT_CLASS (graft_application_parent_class)->finalize (object);
}

static void
graft_application_class_init (GraftApplicationClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GApplicationClass *app_class = G_APPLICATION_CLASS (klass);

  object_class->finalize = graft_application_finalize;
  app_class->activate = graft_application_activate;
  app_class->open = graft_application_open;
  app_class->startup = graft_application_startup;
  app_class->handle_local_options = graft_application_handle_local_options;
}

static const GOptionEntry options[] = {
  { "version", 0, 0, G_OPTION_ARG_NONE, NULL, "Print the version and exit", NULL },
  { "compare", 0, 0, G_OPTION_ARG_NONE, NULL, "Compare the two FILEs side by side", NULL },
  { NULL }
};

static void
graft_application_init (GraftApplication *self)
{
  g_application_add_main_option_entries (G_APPLICATION (self), options);
  g_application_set_option_context_parameter_string (G_APPLICATION (self), "[FILE…]");
  g_application_set_option_context_summary (G_APPLICATION (self),
                                            "View ONNX and TorchScript models.");
}

GraftApplication *
graft_application_new (void)
{
  return g_object_new (GRAFT_TYPE_APPLICATION,
                       "application-id", GRAFT_APP_ID,
                       "flags", G_APPLICATION_HANDLES_OPEN,
                       "resource-base-path", "/org/graft/Graft",
                       NULL);
}
