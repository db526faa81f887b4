/* The graft window in a real X server (run under xvfb-run by
 * run-under-xvfb.sh): the app is started as a user would start it, with
 * its test options, and what it displayed is checked from its report and
 * its screenshot. Screenshots stay in BUILD/tests/gui/screenshots. */
#include <gdk-pixbuf/gdk-pixbuf.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "loader.h"
#include "runtime/npy.h"
#include "gui-fixtures.h"
#include "../test-python.h"

#define EXPECTED_WIDTH 1200
#define EXPECTED_HEIGHT 760

typedef struct {
  char *dir;
  char *report_path;
  char *screenshot_path;
  GHashTable *report;
  int exit_status;
  char *stderr_text;
} Run;

static void
run_free (Run *run)
{
  g_free (run->dir);
  g_free (run->report_path);
  g_free (run->screenshot_path);
  g_clear_pointer (&run->report, g_hash_table_unref);
  g_free (run->stderr_text);
  g_free (run);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (Run, run_free)

static char *
screenshot_dir (void)
{
  char *dir = g_build_filename (g_getenv ("GRAFT_BUILD_DIR"), "tests", "gui", "screenshots", NULL);

  g_mkdir_with_parents (dir, 0755);
  return dir;
}

static char *
sample_path (void)
{
  return g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "data", "samples", "tiny-cnn.onnx", NULL);
}

static GHashTable *
parse_report (const char *path)
{
  GHashTable *table = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_autofree char *contents = NULL;
  g_auto(GStrv) lines = NULL;

  if (!g_file_get_contents (path, &contents, NULL, NULL))
    return table;
  lines = g_strsplit (contents, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    {
      char *eq = strchr (lines[i], '=');

      if (eq == NULL)
        continue;
      *eq = '\0';
      g_hash_table_replace (table, g_strdup (lines[i]), g_strdup (eq + 1));
    }
  return table;
}

/* Starts graft with args and extra "NAME=value" environment entries (both
 * NULL-terminated; env may be NULL) and waits for it to quit. */
static Run *
run_graft_env (const char *name, const char *const *args, const char *const *env)
{
  Run *run = g_new0 (Run, 1);
  g_autoptr(GPtrArray) argv = g_ptr_array_new ();
  g_autoptr(GError) error = NULL;
  g_auto(GStrv) envp = g_get_environ ();
  g_autofree char *screenshots = screenshot_dir ();
  g_autofree char *png_name = g_strconcat (name, ".png", NULL);
  g_autofree char *screenshot_arg = NULL;
  g_autofree char *home = NULL;
  int wait_status = 0;

  run->dir = g_dir_make_tmp ("graft-gui-XXXXXX", &error);
  g_assert_no_error (error);
  run->report_path = g_build_filename (run->dir, "report.txt", NULL);
  run->screenshot_path = g_build_filename (screenshots, png_name, NULL);
  g_unlink (run->screenshot_path);
  home = g_build_filename (run->dir, "home", NULL);

  envp = g_environ_setenv (envp, "GRAFT_TEST_REPORT", run->report_path, TRUE);
  envp = g_environ_setenv (envp, "GDK_BACKEND", "x11", TRUE);
  envp = g_environ_setenv (envp, "GSK_RENDERER", "cairo", TRUE);
  envp = g_environ_setenv (envp, "GTK_A11Y", "none", TRUE);
  envp = g_environ_setenv (envp, "GSETTINGS_BACKEND", "memory", TRUE);
  /* No session bus: nothing to hand files to, nothing autolaunched. */
  envp = g_environ_setenv (envp, "DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/graft-test-bus", TRUE);
  /* Recent files and caches go to the scratch folder, not the user's. */
  envp = g_environ_setenv (envp, "HOME", home, TRUE);
  envp = g_environ_setenv (envp, "XDG_DATA_HOME", home, TRUE);
  envp = g_environ_setenv (envp, "XDG_CONFIG_HOME", home, TRUE);
  envp = g_environ_setenv (envp, "XDG_CACHE_HOME", home, TRUE);
  envp = g_environ_setenv (envp, "XDG_RUNTIME_DIR", run->dir, TRUE);
  envp = g_environ_setenv (envp, "G_DEBUG", "fatal-criticals", TRUE);
  for (guint i = 0; env != NULL && env[i] != NULL; i++)
    {
      g_auto(GStrv) pair = g_strsplit (env[i], "=", 2);

      envp = g_environ_setenv (envp, pair[0], pair[1], TRUE);
    }

  screenshot_arg = g_strconcat ("--screenshot=", run->screenshot_path, NULL);
  g_ptr_array_add (argv, (char *) g_getenv ("GRAFT_GUI_BINARY"));
  g_ptr_array_add (argv, screenshot_arg);
  for (guint i = 0; args[i] != NULL; i++)
    g_ptr_array_add (argv, (char *) args[i]);
  g_ptr_array_add (argv, NULL);

  g_spawn_sync (NULL, (char **) argv->pdata, envp, G_SPAWN_DEFAULT, NULL, NULL,
                NULL, &run->stderr_text, &wait_status, &error);
  g_assert_no_error (error);
  run->exit_status = wait_status;
  if (run->stderr_text != NULL && run->stderr_text[0] != '\0')
    g_test_message ("graft stderr: %s", run->stderr_text);

  run->report = parse_report (run->report_path);
  return run;
}

static Run *
run_graft (const char *name, const char *const *args)
{
  return run_graft_env (name, args, NULL);
}

static const char *
report_get (Run *run, const char *key)
{
  return g_hash_table_lookup (run->report, key);
}

static void
assert_exited_cleanly (Run *run)
{
  g_autoptr(GError) error = NULL;

  if (!g_spawn_check_wait_status (run->exit_status, &error))
    g_error ("graft did not exit cleanly: %s\n%s", error->message,
             run->stderr_text != NULL ? run->stderr_text : "");
  if (report_get (run, "screenshot") == NULL)
    {
      g_autofree char *report = NULL;

      g_file_get_contents (run->report_path, &report, NULL, NULL);
      g_error ("graft wrote no screenshot; its report:\n%s\nstderr:\n%s",
               report != NULL ? report : "(none)", run->stderr_text != NULL ? run->stderr_text : "");
    }
  g_assert_null (report_get (run, "timeout"));
  g_assert_cmpstr (report_get (run, "screenshot"), ==, run->screenshot_path);
  /* GTK and GLib warnings are bugs too. */
  g_assert_cmpstr (run->stderr_text, ==, "");
}

/* Standard deviation of the luminance in a rectangle, 0–255. */
static double
luminance_stddev (GdkPixbuf *pixbuf, int x0, int y0, int width, int height)
{
  int channels = gdk_pixbuf_get_n_channels (pixbuf);
  int stride = gdk_pixbuf_get_rowstride (pixbuf);
  const guint8 *pixels = gdk_pixbuf_read_pixels (pixbuf);
  double sum = 0, sum_sq = 0;
  gint64 n = 0;

  for (int y = MAX (y0, 0); y < MIN (y0 + height, gdk_pixbuf_get_height (pixbuf)); y++)
    for (int x = MAX (x0, 0); x < MIN (x0 + width, gdk_pixbuf_get_width (pixbuf)); x++)
      {
        const guint8 *p = pixels + y * stride + x * channels;
        double l = 0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2];

        sum += l;
        sum_sq += l * l;
        n++;
      }
  g_assert_cmpint (n, >, 0);
  return sqrt (MAX (sum_sq / n - (sum / n) * (sum / n), 0));
}

static GdkPixbuf *
load_screenshot (Run *run)
{
  g_autoptr(GError) error = NULL;
  GdkPixbuf *pixbuf = gdk_pixbuf_new_from_file (run->screenshot_path, &error);

  g_assert_no_error (error);
  g_test_message ("screenshot: %s (%dx%d)", run->screenshot_path,
                  gdk_pixbuf_get_width (pixbuf), gdk_pixbuf_get_height (pixbuf));
  return pixbuf;
}

/* The window opens at the default size of the settings schema, and the
 * picture is the whole window: content size = default size minus the
 * client-side frame GTK draws without a compositor. */
static void
assert_window_size (Run *run, GdkPixbuf *pixbuf)
{
  g_autofree char *expected_default = g_strdup_printf ("%dx%d", EXPECTED_WIDTH, EXPECTED_HEIGHT);
  g_autofree char *picture = g_strdup_printf ("%dx%d", gdk_pixbuf_get_width (pixbuf),
                                              gdk_pixbuf_get_height (pixbuf));

  g_assert_cmpstr (report_get (run, "default-size"), ==, expected_default);
  g_assert_cmpstr (report_get (run, "window-size"), ==, picture);
  g_assert_cmpint (gdk_pixbuf_get_width (pixbuf), <=, EXPECTED_WIDTH);
  g_assert_cmpint (gdk_pixbuf_get_width (pixbuf), >=, EXPECTED_WIDTH - 40);
  g_assert_cmpint (gdk_pixbuf_get_height (pixbuf), <=, EXPECTED_HEIGHT);
  g_assert_cmpint (gdk_pixbuf_get_height (pixbuf), >=, EXPECTED_HEIGHT - 40);
}

static void
parse_bounds (Run *run, const char *key, int bounds[4])
{
  const char *text = report_get (run, key);
  g_auto(GStrv) parts = NULL;

  g_assert_nonnull (text);
  g_assert_cmpstr (text, !=, "hidden");
  parts = g_strsplit (text, ",", 4);
  g_assert_cmpuint (g_strv_length (parts), ==, 4);
  for (int i = 0; i < 4; i++)
    bounds[i] = atoi (parts[i]);
}

static GraftNode *
pick_node (GraftModel *model)
{
  GraftGraph *graph = graft_model_get_graph (model);

  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);

      if (g_str_equal (node->op_type, "Conv") && node->name != NULL && node->name[0] != '\0')
        return node;
    }
  g_assert_cmpuint (graph->nodes->len, >, 0);
  return g_ptr_array_index (graph->nodes, 0);
}

static void
test_sample_select_node (void)
{
  g_autofree char *path = sample_path ();
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);
  g_autofree char *select_arg = NULL;
  g_autofree char *basename = g_path_get_basename (path);
  g_autoptr(Run) run = NULL;
  g_autoptr(GdkPixbuf) pixbuf = NULL;
  GraftNode *node;
  int sidebar[4], canvas[4];
  double overall, sidebar_sd, canvas_sd;

  g_assert_no_error (error);
  node = pick_node (model);
  select_arg = g_strconcat ("--select-node=", node->name, NULL);

  run = run_graft ("sample-selected-node", (const char *[]) { select_arg, path, NULL });
  assert_exited_cleanly (run);
  g_assert_cmpstr (report_get (run, "state"), ==, "model");
  g_assert_cmpstr (report_get (run, "title"), ==, basename);
  g_assert_true (g_str_has_prefix (report_get (run, "subtitle"), "ONNX"));
  g_assert_cmpstr (report_get (run, "selected-node"), ==, node->name);
  g_assert_cmpstr (report_get (run, "no-graph"), ==, "0");
  /* The sidebar's header labels show the node. */
  g_assert_cmpstr (report_get (run, "sidebar-title"), ==, node->op_type);
  g_assert_cmpstr (report_get (run, "sidebar-subtitle"), ==, node->name);
  g_assert_null (report_get (run, "select-error"));

  pixbuf = load_screenshot (run);
  assert_window_size (run, pixbuf);
  parse_bounds (run, "sidebar-bounds", sidebar);
  parse_bounds (run, "canvas-bounds", canvas);
  g_assert_cmpint (sidebar[2], >=, 280);
  g_assert_cmpint (canvas[2], >=, 400);
  g_assert_cmpint (sidebar[0], >=, canvas[0] + canvas[2]);

  overall = luminance_stddev (pixbuf, 0, 0, EXPECTED_WIDTH, EXPECTED_HEIGHT);
  sidebar_sd = luminance_stddev (pixbuf, sidebar[0], sidebar[1], sidebar[2], sidebar[3]);
  canvas_sd = luminance_stddev (pixbuf, canvas[0], canvas[1], canvas[2], canvas[3]);
  g_test_message ("luminance stddev: window %.1f, sidebar %.1f, canvas %.1f", overall, sidebar_sd, canvas_sd);
  g_assert_cmpfloat (overall, >, 5);
  g_assert_cmpfloat (sidebar_sd, >, 5);   /* text is drawn there */
  g_assert_cmpfloat (canvas_sd, >, 2);    /* the graph is drawn */
}

static void
test_empty_state (void)
{
  g_autoptr(Run) run = run_graft ("empty-state", (const char *[]) { NULL });
  g_autoptr(GdkPixbuf) pixbuf = NULL;

  assert_exited_cleanly (run);
  g_assert_cmpstr (report_get (run, "state"), ==, "empty");
  pixbuf = load_screenshot (run);
  assert_window_size (run, pixbuf);
  g_assert_cmpfloat (luminance_stddev (pixbuf, 0, 0, EXPECTED_WIDTH, EXPECTED_HEIGHT), >, 5);
}

static void
check_bad_file (const char *name, const guint8 *contents, gsize length)
{
  g_autofree char *dir = g_dir_make_tmp ("graft-bad-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, name, NULL);
  g_autofree char *shot_name = g_strdup_printf ("bad-file-%s", name);
  g_autoptr(Run) run = NULL;
  g_autoptr(GdkPixbuf) pixbuf = NULL;
  const char *error_page;

  g_assert_true (g_file_set_contents (path, (const char *) contents, length, NULL));
  g_strdelimit (shot_name, ".", '-');
  run = run_graft (shot_name, (const char *[]) { path, NULL });

  assert_exited_cleanly (run);
  g_assert_cmpstr (report_get (run, "state"), ==, "error");
  g_assert_nonnull (report_get (run, "error"));
  g_assert_cmpstr (report_get (run, "error"), !=, "");
  error_page = report_get (run, "error-page");
  g_assert_nonnull (error_page);
  g_assert_nonnull (strstr (error_page, name));
  pixbuf = load_screenshot (run);
  assert_window_size (run, pixbuf);
  g_assert_cmpfloat (luminance_stddev (pixbuf, 0, 0, EXPECTED_WIDTH, EXPECTED_HEIGHT), >, 5);

  g_unlink (path);
  g_rmdir (dir);
}

static void
test_bad_file_random (void)
{
  guint8 junk[4096];
  GRand *rand = g_rand_new_with_seed (7);

  for (gsize i = 0; i < sizeof junk; i++)
    junk[i] = g_rand_int_range (rand, 0, 256);
  g_rand_free (rand);
  check_bad_file ("random.onnx", junk, sizeof junk);
}

static void
test_bad_file_truncated (void)
{
  g_autofree char *path = sample_path ();
  g_autofree char *contents = NULL;
  gsize length;

  g_assert_true (g_file_get_contents (path, &contents, &length, NULL));
  check_bad_file ("truncated.onnx", (const guint8 *) contents, length / 2);
}

static void
test_bad_file_empty (void)
{
  check_bad_file ("empty.onnx", (const guint8 *) "", 0);
}

/* A named pipe would block any reader for ever; a folder is no model. */
static void
test_not_a_regular_file (void)
{
  g_autofree char *dir = g_dir_make_tmp ("graft-fifo-XXXXXX", NULL);
  g_autofree char *fifo = g_build_filename (dir, "pipe.onnx", NULL);
  g_autofree char *folder = g_build_filename (dir, "folder.onnx", NULL);
  g_autoptr(Run) fifo_run = NULL;
  g_autoptr(Run) folder_run = NULL;

  g_assert_cmpint (mkfifo (fifo, 0600), ==, 0);
  g_assert_cmpint (g_mkdir (folder, 0700), ==, 0);

  fifo_run = run_graft ("bad-file-fifo", (const char *[]) { fifo, NULL });
  assert_exited_cleanly (fifo_run);
  g_assert_cmpstr (report_get (fifo_run, "state"), ==, "error");
  g_assert_nonnull (strstr (report_get (fifo_run, "error"), "not a regular file"));

  folder_run = run_graft ("bad-file-folder", (const char *[]) { folder, NULL });
  assert_exited_cleanly (folder_run);
  g_assert_cmpstr (report_get (folder_run, "state"), ==, "error");
  g_assert_nonnull (strstr (report_get (folder_run, "error"), "is a folder"));

  g_unlink (fifo);
  g_rmdir (folder);
  g_rmdir (dir);
}

static void
test_unknown_node (void)
{
  g_autofree char *path = sample_path ();
  g_autoptr(Run) run = run_graft ("unknown-node",
                                  (const char *[]) { "--select-node=no-such-node", path, NULL });

  assert_exited_cleanly (run);
  g_assert_cmpstr (report_get (run, "state"), ==, "model");
  g_assert_nonnull (strstr (report_get (run, "select-error"), "no-such-node"));
  g_assert_cmpstr (report_get (run, "selected-node"), ==, "");
}

static char *
if_model_path (void)
{
  return generated_fixture ("make-if-model.py", "if-model.onnx");
}

static void
test_weights_only (void)
{
  g_autofree char *path = generated_fixture ("make-state-dict.py", "weights.pt");
  g_autoptr(Run) run = run_graft ("weights-only", (const char *[]) { path, NULL });
  g_autoptr(GdkPixbuf) pixbuf = NULL;

  assert_exited_cleanly (run);
  g_assert_cmpstr (report_get (run, "state"), ==, "model");
  g_assert_cmpstr (report_get (run, "title"), ==, "weights.pt");
  g_assert_cmpstr (report_get (run, "sidebar-title"), ==, "weights.pt");
  g_assert_cmpstr (report_get (run, "no-graph"), ==, "1");
  pixbuf = load_screenshot (run);
  assert_window_size (run, pixbuf);
}

static void
test_subgraph_breadcrumbs (void)
{
  g_autofree char *path = if_model_path ();
  g_autoptr(Run) run = run_graft ("subgraph-else-branch",
                                  (const char *[]) { "--select-node=else_neg", path, NULL });
  g_autoptr(GdkPixbuf) pixbuf = NULL;

  assert_exited_cleanly (run);
  g_assert_cmpstr (report_get (run, "state"), ==, "model");
  /* Selecting a node of a body shows that body, with the way back. */
  g_assert_cmpstr (report_get (run, "breadcrumbs"), ==, "if_model › If “branch_if” › else_branch");
  g_assert_cmpstr (report_get (run, "selected-node"), ==, "else_neg");
  g_assert_cmpstr (report_get (run, "sidebar-title"), ==, "Neg");
  pixbuf = load_screenshot (run);
  assert_window_size (run, pixbuf);
}

static void
count_conv (GraftNode *node, gpointer user_data)
{
  if (g_str_equal (node->op_type, "Conv"))
    (*(guint *) user_data)++;
}

static void
test_find (void)
{
  g_autofree char *path = sample_path ();
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);
  g_autoptr(Run) run = NULL;
  g_autoptr(GdkPixbuf) pixbuf = NULL;
  guint n_conv = 0;

  g_assert_no_error (error);
  graft_graph_foreach_node_recursive (graft_model_get_graph (model), count_conv, &n_conv);
  g_assert_cmpuint (n_conv, >, 0);

  run = run_graft ("find-conv", (const char *[]) { "--find=conv", path, NULL });
  assert_exited_cleanly (run);
  g_assert_cmpstr (report_get (run, "find-visible"), ==, "1");
  /* Every Conv node, plus values named after them. */
  g_assert_cmpuint (g_ascii_strtoull (report_get (run, "find-matches"), NULL, 10), >=, n_conv);
  pixbuf = load_screenshot (run);
  assert_window_size (run, pixbuf);
}

/* The first initializer the picked node reads (its weight). */
static GraftValue *
pick_initializer (GraftNode *node)
{
  for (guint i = 0; i < node->inputs->len; i++)
    {
      GraftValue *value = g_ptr_array_index (node->inputs, i);

      if (value != NULL && value->initializer != NULL)
        return value;
    }
  g_error ("node %s reads no initializer", node->name);
  return NULL;
}

static void
test_select_initializer_dark (void)
{
  g_autofree char *path = sample_path ();
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);
  g_autofree char *action = NULL;
  g_autoptr(Run) run = NULL;
  g_autoptr(GdkPixbuf) pixbuf = NULL;
  GraftValue *weight;
  int sidebar[4];

  g_assert_no_error (error);
  weight = pick_initializer (pick_node (model));
  action = g_strconcat ("--action=win.select-value::", weight->name, NULL);

  run = run_graft_env ("initializer-dark", (const char *[]) { action, path, NULL },
                       (const char *[]) { "ADW_DEBUG_COLOR_SCHEME=prefer-dark", NULL });
  assert_exited_cleanly (run);
  g_assert_null (report_get (run, "action-error"));
  g_assert_cmpstr (report_get (run, "sidebar-title"), ==, weight->name);
  g_assert_cmpstr (report_get (run, "sidebar-subtitle"), ==, "Initializer");
  pixbuf = load_screenshot (run);
  assert_window_size (run, pixbuf);
  parse_bounds (run, "sidebar-bounds", sidebar);
  g_assert_cmpfloat (luminance_stddev (pixbuf, sidebar[0], sidebar[1], sidebar[2], sidebar[3]), >, 5);
  /* Dark style: the sidebar background is dark. */
  {
    const guint8 *p = gdk_pixbuf_read_pixels (pixbuf)
                      + (sidebar[1] + sidebar[3] - 4) * gdk_pixbuf_get_rowstride (pixbuf)
                      + (sidebar[0] + 4) * gdk_pixbuf_get_n_channels (pixbuf);
    g_assert_cmpint (p[0] + p[1] + p[2], <, 3 * 96);
  }
}

static GdkPixbuf *
load_dialog_screenshot (Run *run, guint index)
{
  g_autofree char *key = g_strdup_printf ("dialog-%u-screenshot", index);
  const char *path = report_get (run, key);
  g_autoptr(GError) error = NULL;
  GdkPixbuf *pixbuf;

  g_assert_nonnull (path);
  pixbuf = gdk_pixbuf_new_from_file (path, &error);
  g_assert_no_error (error);
  g_test_message ("dialog screenshot: %s (%dx%d)", path,
                  gdk_pixbuf_get_width (pixbuf), gdk_pixbuf_get_height (pixbuf));
  return pixbuf;
}

static void
test_open_sample_from_empty_state (void)
{
  g_autoptr(Run) run = run_graft ("open-sample", (const char *[]) { "--action=win.open-sample", NULL });
  g_autoptr(GdkPixbuf) pixbuf = NULL;

  assert_exited_cleanly (run);
  g_assert_null (report_get (run, "action-error"));
  g_assert_cmpstr (report_get (run, "state"), ==, "model");
  g_assert_cmpstr (report_get (run, "title"), ==, "tiny-cnn.onnx");
  g_assert_cmpstr (report_get (run, "sidebar-title"), ==, "tiny-cnn.onnx");
  pixbuf = load_screenshot (run);
  assert_window_size (run, pixbuf);
}

/* A bad file opened over a good one: the model stays, a dialog says why. */
static void
test_error_dialog_keeps_model (void)
{
  g_autofree char *path = sample_path ();
  g_autofree char *dir = g_dir_make_tmp ("graft-bad-XXXXXX", NULL);
  g_autofree char *bad = g_build_filename (dir, "not-a-model.onnx", NULL);
  g_autofree char *action = g_strconcat ("--action=win.open-path::", bad, NULL);
  g_autoptr(Run) run = NULL;
  g_autoptr(GdkPixbuf) dialog = NULL;
  const char *description;

  g_assert_true (g_file_set_contents (bad, "this is text, not protobuf", -1, NULL));
  run = run_graft ("error-dialog", (const char *[]) { action, path, NULL });
  assert_exited_cleanly (run);
  g_assert_cmpstr (report_get (run, "state"), ==, "model");
  g_assert_cmpstr (report_get (run, "title"), ==, "tiny-cnn.onnx");
  g_assert_cmpstr (report_get (run, "dialogs"), ==, "1");
  description = report_get (run, "dialog-0");
  g_assert_true (g_str_has_prefix (description, "AdwMessageDialog: Could Not Open “not-a-model.onnx” — "));
  /* The dialog gives the reader's exact reason. */
  g_assert_nonnull (strstr (description, report_get (run, "error")));
  dialog = load_dialog_screenshot (run, 0);
  g_assert_cmpfloat (luminance_stddev (dialog, 0, 0, gdk_pixbuf_get_width (dialog), gdk_pixbuf_get_height (dialog)), >, 5);
  g_unlink (bad);
  g_rmdir (dir);
}

static void
check_dialog_action (const char *name, const char *action, const char *type_name)
{
  g_autofree char *path = sample_path ();
  g_autofree char *arg = g_strconcat ("--action=", action, NULL);
  g_autoptr(Run) run = run_graft (name, (const char *[]) { arg, path, NULL });
  g_autoptr(GdkPixbuf) dialog = NULL;

  assert_exited_cleanly (run);
  g_assert_null (report_get (run, "action-error"));
  g_assert_cmpstr (report_get (run, "dialogs"), ==, "1");
  g_assert_true (g_str_has_prefix (report_get (run, "dialog-0"), type_name));
  dialog = load_dialog_screenshot (run, 0);
  g_assert_cmpint (gdk_pixbuf_get_width (dialog), >=, 300);
  g_assert_cmpfloat (luminance_stddev (dialog, 0, 0, gdk_pixbuf_get_width (dialog), gdk_pixbuf_get_height (dialog)), >, 5);
}

static void
test_shortcuts_window (void)
{
  check_dialog_action ("shortcuts", "win.show-help-overlay", "GtkShortcutsWindow");
}

static void
test_about_window (void)
{
  check_dialog_action ("about", "app.about", "AdwAboutWindow");
}

/* The toggles are stateful actions: the canvas follows them and the
 * settings keep them. */
static void
test_view_toggles (void)
{
  g_autofree char *path = sample_path ();
  g_autoptr(Run) run = NULL;
  g_autoptr(GdkPixbuf) pixbuf = NULL;
  const char *expected = "names=0 attributes=1 shapes=0 direction=LR";

  run = run_graft ("toggles-left-to-right",
                   (const char *[]) { "--action=win.show-names", "--action=win.show-shapes",
                                      "--action=win.direction::LR", path, NULL });
  assert_exited_cleanly (run);
  g_assert_null (report_get (run, "action-error"));
  g_assert_cmpstr (report_get (run, "canvas-options"), ==, expected);
  g_assert_cmpstr (report_get (run, "settings-options"), ==, expected);
  pixbuf = load_screenshot (run);
  assert_window_size (run, pixbuf);
}

static void
assert_file_starts_with (const char *path, const char *magic, gsize magic_length)
{
  g_autofree char *contents = NULL;
  gsize length = 0;

  g_assert_true (g_file_get_contents (path, &contents, &length, NULL));
  g_assert_cmpuint (length, >, 200);
  g_assert_cmpmem (contents, magic_length, magic, magic_length);
}

static void
test_export_picture (void)
{
  g_autofree char *path = sample_path ();
  g_autofree char *dir = g_dir_make_tmp ("graft-export-XXXXXX", NULL);
  g_autofree char *svg = g_build_filename (dir, "graph.svg", NULL);
  g_autofree char *png = g_build_filename (dir, "graph.png", NULL);
  g_autofree char *pdf = g_build_filename (dir, "graph.pdf", NULL);
  g_autofree char *bad = g_build_filename (dir, "graph.bmp", NULL);
  g_autofree char *to_svg = g_strconcat ("--action=win.export-to::", svg, NULL);
  g_autofree char *to_png = g_strconcat ("--action=win.export-to::", png, NULL);
  g_autofree char *to_pdf = g_strconcat ("--action=win.export-to::", pdf, NULL);
  g_autofree char *to_bad = g_strconcat ("--action=win.export-to::", bad, NULL);
  g_autoptr(Run) run = NULL;
  g_autoptr(Run) bad_run = NULL;
  g_autoptr(GdkPixbuf) picture = NULL;
  g_autoptr(GError) error = NULL;

  run = run_graft ("export", (const char *[]) { to_svg, to_png, to_pdf, path, NULL });
  assert_exited_cleanly (run);
  g_assert_null (report_get (run, "export-error"));
  assert_file_starts_with (svg, "<?xml", 5);
  assert_file_starts_with (png, "\x89PNG", 4);
  assert_file_starts_with (pdf, "%PDF", 4);
  picture = gdk_pixbuf_new_from_file (png, &error);
  g_assert_no_error (error);
  g_assert_cmpfloat (luminance_stddev (picture, 0, 0, gdk_pixbuf_get_width (picture),
                                       gdk_pixbuf_get_height (picture)), >, 5);

  /* An unknown format is refused with a dialog, and nothing is written. */
  bad_run = run_graft ("export-refused", (const char *[]) { to_bad, path, NULL });
  assert_exited_cleanly (bad_run);
  g_assert_nonnull (report_get (bad_run, "export-error"));
  g_assert_cmpstr (report_get (bad_run, "dialogs"), ==, "1");
  g_assert_false (g_file_test (bad, G_FILE_TEST_EXISTS));

  g_unlink (svg);
  g_unlink (png);
  g_unlink (pdf);
  g_rmdir (dir);
}

/* A model opened once is offered in the Open button's menu next time. */
static void
test_recent_models (void)
{
  g_autofree char *path = sample_path ();
  g_autofree char *home = g_dir_make_tmp ("graft-recent-XXXXXX", NULL);
  g_autofree char *data_home = g_strconcat ("XDG_DATA_HOME=", home, NULL);
  const char *env[] = { data_home, NULL };
  g_autoptr(Run) first = NULL;
  g_autoptr(Run) second = NULL;

  first = run_graft_env ("recent-first", (const char *[]) { path, NULL }, env);
  assert_exited_cleanly (first);
  second = run_graft_env ("recent-second", (const char *[]) { NULL }, env);
  assert_exited_cleanly (second);
  g_assert_cmpstr (report_get (second, "state"), ==, "empty");
  g_assert_cmpstr (report_get (second, "recent"), ==, "tiny-cnn.onnx");
}


/* Every value a key had, in report order (a run with several screenshots
 * reports the window state once per picture). */
static GStrv
report_get_all (Run *run, const char *key)
{
  g_autoptr(GStrvBuilder) values = g_strv_builder_new ();
  g_autofree char *contents = NULL;
  g_auto(GStrv) lines = NULL;
  g_autofree char *prefix = g_strconcat (key, "=", NULL);

  g_assert_true (g_file_get_contents (run->report_path, &contents, NULL, NULL));
  lines = g_strsplit (contents, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    if (g_str_has_prefix (lines[i], prefix))
      g_strv_builder_add (values, lines[i] + strlen (prefix));
  return g_strv_builder_end (values);
}

static char *
screenshot_action (const char *name)
{
  g_autofree char *dir = screenshot_dir ();
  g_autofree char *file = g_strconcat (name, ".png", NULL);
  g_autofree char *path = g_build_filename (dir, file, NULL);

  return g_strconcat ("--action=win.screenshot::", path, NULL);
}

/* A copy of the static-batch model in a scratch folder, so saving next to
 * it or over it touches nothing else. */
static char *
static_batch_copy (char **dir)
{
  g_autofree char *fixture = generated_fixture ("make-static-batch-model.py", "static-batch.onnx");
  g_autofree char *contents = NULL;
  gsize length = 0;
  char *path;

  *dir = g_dir_make_tmp ("graft-edit-XXXXXX", NULL);
  path = g_build_filename (*dir, "static-batch.onnx", NULL);
  g_assert_true (g_file_get_contents (fixture, &contents, &length, NULL));
  g_assert_true (g_file_set_contents (path, contents, length, NULL));
  return path;
}

static void
check_with_onnx (const char *path, const char *expected_dim)
{
  g_autofree char *test_python = graft_test_python ();
  const char *script =
    "import sys, onnx\n"
    "m = onnx.load(sys.argv[1])\n"
    "onnx.checker.check_model(m)\n"
    "onnx.shape_inference.infer_shapes(m, strict_mode=True)\n"
    "d = m.graph.input[0].type.tensor_type.shape.dim[0]\n"
    "print(d.dim_param or d.dim_value)\n";
  const char *argv[] = { test_python, "-c", script, path, NULL };
  g_autofree char *out = NULL;
  g_autofree char *err = NULL;
  g_autoptr(GError) error = NULL;
  int status = 0;

  g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status, &error);
  g_assert_no_error (error);
  if (!g_spawn_check_wait_status (status, &error))
    g_error ("onnx.checker refused %s: %s", path, err);
  g_strstrip (out);
  g_assert_cmpstr (out, ==, expected_dim);
}

/* The story of the rewrite issue: a static batch is flagged, made dynamic
 * in one action, undone and redone, saved, and run with batch 4. */
static void
test_diagnostics_edit_save_run (void)
{
  g_autofree char *dir = NULL;
  g_autofree char *path = static_batch_copy (&dir);
  g_autofree char *saved = g_build_filename (dir, "edited.onnx", NULL);
  g_autofree char *save_arg = g_strconcat ("--action=win.save-as-path::", saved, NULL);
  g_autofree char *shot_found = screenshot_action ("edit-1-diagnostics");
  g_autofree char *shot_filtered = screenshot_action ("edit-2-filtered");
  g_autofree char *shot_edited = screenshot_action ("edit-3-made-dynamic");
  g_autofree char *shot_undone = screenshot_action ("edit-4-undone");
  g_autoptr(Run) run = NULL;
  g_auto(GStrv) titles = NULL;
  g_auto(GStrv) counts = NULL;
  g_auto(GStrv) summaries = NULL;
  g_auto(GStrv) marked = NULL;
  g_auto(GStrv) undo = NULL;
  g_auto(GStrv) redo = NULL;
  g_autoptr(GdkPixbuf) pixbuf = NULL;

  run = run_graft ("edit-5-saved-and-run", (const char *[]) {
    "--action=win.show-diagnostics", shot_found,
    "--action=win.filter-diagnostics::baked-shape-constant", shot_filtered,
    "--action=win.filter-diagnostics::", "--action=win.make-dynamic::input:0=batch", shot_edited,
    "--action=win.undo", shot_undone,
    "--action=win.redo", save_arg, "--action=win.run-new-shape::batch=4",
    path, NULL });
  assert_exited_cleanly (run);
  titles = report_get_all (run, "title");
  counts = report_get_all (run, "diagnostics-count");
  summaries = report_get_all (run, "diagnostics");
  marked = report_get_all (run, "canvas-marked");
  undo = report_get_all (run, "can-undo");
  redo = report_get_all (run, "can-redo");
  g_assert_cmpuint (g_strv_length (titles), ==, 5);

  /* Found: both problems, listed and drawn. */
  g_assert_cmpstr (titles[0], ==, "static-batch.onnx");
  g_assert_cmpstr (counts[0], ==, "2");
  g_assert_nonnull (strstr (summaries[0], "warning static-input-dim input"));
  g_assert_nonnull (strstr (summaries[0], "warning baked-shape-constant /Reshape"));
  g_assert_cmpstr (marked[0], ==, "2");
  /* Filtered by rule. */
  g_assert_cmpstr (summaries[1], ==, "warning baked-shape-constant /Reshape");
  /* Made dynamic: the constant is repaired, nothing is left to flag, the
   * title says the model is changed. */
  g_assert_cmpstr (titles[2], ==, "• static-batch.onnx");
  g_assert_cmpstr (counts[2], ==, "0");
  g_assert_cmpstr (marked[2], ==, "0");
  g_assert_cmpstr (undo[2], ==, "1");
  g_assert_nonnull (strstr (report_get (run, "edit-notes"), "[-1, 512]"));
  /* Undone: as loaded. */
  g_assert_cmpstr (titles[3], ==, "static-batch.onnx");
  g_assert_cmpstr (counts[3], ==, "2");
  g_assert_cmpstr (redo[3], ==, "1");
  /* Redone, saved under a new name, run with batch 4. */
  g_assert_cmpstr (report_get (run, "saved"), ==, saved);
  g_assert_cmpstr (titles[4], ==, "edited.onnx");
  g_assert_cmpstr (report_get (run, "diagnostics-count"), ==, "0");
  g_assert_true (g_str_has_prefix (report_get (run, "run-outputs"), "logits float32[4,10] min="));
  g_assert_true (g_str_has_prefix (report_get (run, "run-status"), "Ran in "));
  check_with_onnx (saved, "batch");
  check_with_onnx (path, "2");
  pixbuf = load_screenshot (run);
  assert_window_size (run, pixbuf);
}

/* The Run pane on the sample: random input with a batch of 3, outputs
 * summarised and saved as .npy, nodes coloured by their time. */
static void
test_run_sample (void)
{
  g_autofree char *path = sample_path ();
  g_autofree char *dir = g_dir_make_tmp ("graft-run-XXXXXX", NULL);
  g_autofree char *out = g_build_filename (dir, "outputs", NULL);
  g_autofree char *save_arg = g_strconcat ("--action=win.save-outputs-to::", out, NULL);
  g_autofree char *npy = g_build_filename (out, "probabilities.npy", NULL);
  g_autoptr(Run) run = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftRtTensor) tensor = NULL;
  g_autoptr(GdkPixbuf) pixbuf = NULL;

  run = run_graft ("run-sample", (const char *[]) {
    "--action=win.show-run", "--action=win.set-run-dim::batch=3", "--action=win.run", save_arg,
    "--action=win.show-timings", path, NULL });
  assert_exited_cleanly (run);
  g_assert_cmpstr (report_get (run, "run-visible"), ==, "1");
  g_assert_true (g_str_has_prefix (report_get (run, "run-outputs"), "probabilities float32[3,10] min="));
  g_assert_nonnull (strstr (report_get (run, "run-outputs"), "mean=0.1"));
  g_assert_true (g_str_has_prefix (report_get (run, "run-status"), "Saved 1 output as .npy in "));
  g_assert_cmpint (atoi (report_get (run, "canvas-marked")), >, 3);
  tensor = graft_npy_read (npy, &error);
  g_assert_no_error (error);
  g_assert_cmpint (tensor->rank, ==, 2);
  g_assert_cmpint (tensor->dims[0], ==, 3);
  g_assert_cmpint (tensor->dims[1], ==, 10);
  pixbuf = load_screenshot (run);
  assert_window_size (run, pixbuf);
}

/* An input of the wrong shape is refused before running, naming it. */
static void
test_run_bad_input_file (void)
{
  g_autofree char *path = sample_path ();
  g_autofree char *dir = g_dir_make_tmp ("graft-run-XXXXXX", NULL);
  g_autofree char *npy = g_build_filename (dir, "wrong.npy", NULL);
  g_autoptr(GraftRtTensor) wrong = graft_rt_tensor_new (GRAFT_DTYPE_FLOAT32, 2, (gint64[]) { 2, 5 }, NULL);
  g_autofree char *input_arg = g_strconcat ("--action=win.set-run-input::image=", npy, NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(Run) run = NULL;

  g_assert_true (graft_npy_write (npy, wrong, &error));
  run = run_graft ("run-bad-input", (const char *[]) { "--action=win.show-run", input_arg, "--action=win.run",
                                                       path, NULL });
  assert_exited_cleanly (run);
  g_assert_cmpstr (report_get (run, "run-outputs"), ==, "");
  g_assert_nonnull (strstr (report_get (run, "run-status"), "image"));
}

/* Closing with unsaved changes asks; saving over the opened file asks. */
static void
test_unsaved_changes_ask (void)
{
  g_autofree char *dir = NULL;
  g_autofree char *path = static_batch_copy (&dir);
  g_autofree char *save_arg = g_strconcat ("--action=win.save-as-path::", path, NULL);
  g_autofree char *before = NULL;
  g_autofree char *after = NULL;
  gsize before_length = 0, after_length = 0;
  g_autoptr(Run) close_run = NULL;
  g_autoptr(Run) save_run = NULL;

  g_assert_true (g_file_get_contents (path, &before, &before_length, NULL));
  close_run = run_graft ("edit-close-asks", (const char *[]) {
    "--action=win.make-dynamic::input:0=batch", "--action=window.close", path, NULL });
  assert_exited_cleanly (close_run);
  g_assert_cmpstr (report_get (close_run, "dialogs"), ==, "1");
  g_assert_nonnull (strstr (report_get (close_run, "dialog-0"), "Save Changes to “static-batch.onnx”?"));
  g_assert_cmpstr (report_get (close_run, "state"), ==, "model");

  save_run = run_graft ("edit-replace-asks", (const char *[]) {
    "--action=win.make-dynamic::input:0=batch", save_arg, path, NULL });
  assert_exited_cleanly (save_run);
  g_assert_nonnull (strstr (report_get (save_run, "dialog-0"), "Replace the Original “static-batch.onnx”?"));
  g_assert_null (report_get (save_run, "saved"));
  g_assert_true (g_file_get_contents (path, &after, &after_length, NULL));
  g_assert_cmpmem (before, before_length, after, after_length);
}

/* A refused edit names the problem and leaves a working window (the edit
 * library puts back a copy of the graph: the lists must follow it). */
static void
test_refused_edit (void)
{
  g_autofree char *dir = NULL;
  g_autofree char *path = static_batch_copy (&dir);
  g_autoptr(Run) run = NULL;

  run = run_graft ("edit-refused", (const char *[]) {
    "--action=win.make-dynamic::nosuchinput:0=batch", "--action=win.make-dynamic::input:9=batch",
    "--action=win.show-diagnostics", path, NULL });
  assert_exited_cleanly (run);
  g_assert_nonnull (strstr (report_get (run, "edit-error"), "input"));
  g_assert_cmpstr (report_get (run, "title"), ==, "static-batch.onnx");
  g_assert_cmpstr (report_get (run, "diagnostics-count"), ==, "2");
  g_assert_cmpstr (report_get (run, "canvas-marked"), ==, "2");
  g_assert_nonnull (strstr (report_get (run, "dialog-0"), "Could Not Change the Model"));
}

/* Only ONNX is written: other formats get a reason, and no file. */
static void
test_save_refused_for_non_onnx (void)
{
  g_autofree char *weights = generated_fixture ("make-state-dict.py", "weights.pt");
  g_autofree char *dir = g_dir_make_tmp ("graft-save-XXXXXX", NULL);
  g_autofree char *target = g_build_filename (dir, "weights.onnx", NULL);
  g_autofree char *save_arg = g_strconcat ("--action=win.save-as-path::", target, NULL);
  g_autoptr(Run) run = NULL;

  run = run_graft ("save-refused-state-dict", (const char *[]) { save_arg, weights, NULL });
  assert_exited_cleanly (run);
  g_assert_nonnull (strstr (report_get (run, "save-error"), "Graft saves ONNX files only"));
  g_assert_false (g_file_test (target, G_FILE_TEST_EXISTS));
}

/* Pixels of the canvas close to rgb (the error red of the light style):
 * group outlines and badges. */
static guint
count_canvas_pixels (Run *run, GdkPixbuf *pixbuf, guint rgb)
{
  int channels = gdk_pixbuf_get_n_channels (pixbuf);
  int stride = gdk_pixbuf_get_rowstride (pixbuf);
  const guint8 *pixels = gdk_pixbuf_read_pixels (pixbuf);
  int bounds[4];
  guint n = 0;

  parse_bounds (run, "canvas-bounds", bounds);
  for (int y = MAX (bounds[1], 0); y < MIN (bounds[1] + bounds[3], gdk_pixbuf_get_height (pixbuf)); y++)
    for (int x = MAX (bounds[0], 0); x < MIN (bounds[0] + bounds[2], gdk_pixbuf_get_width (pixbuf)); x++)
      {
        const guint8 *p = pixels + y * stride + x * channels;

        if (ABS (p[0] - (int) (rgb >> 16 & 0xff)) < 24 && ABS (p[1] - (int) (rgb >> 8 & 0xff)) < 24
            && ABS (p[2] - (int) (rgb & 0xff)) < 24)
          n++;
      }
  return n;
}

/* Flagged nodes inside collapsed groups: the first view opens none of the
 * four 80-node groups, so the group boxes carry the marks (outline, "3 ✖"
 * badge); selecting a flagged node opens its group and its nodes carry
 * their own marks again. */
static void
test_marks_in_collapsed_groups (void)
{
  g_autofree char *path = generated_fixture ("make-grouped-model.py", "grouped.onnx");
  g_autofree char *shot_first = screenshot_action ("marks-1-collapsed-groups");
  g_autofree char *dir = screenshot_dir ();
  g_autofree char *first_path = g_build_filename (dir, "marks-1-collapsed-groups.png", NULL);
  g_autoptr(Run) run = NULL;
  g_auto(GStrv) marked = NULL;
  g_auto(GStrv) groups = NULL;
  g_auto(GStrv) hidden = NULL;
  g_autoptr(GdkPixbuf) first = NULL;
  g_autoptr(GdkPixbuf) last = NULL;
  g_autoptr(GError) error = NULL;
  guint red_first, red_last;

  run = run_graft ("marks-2-group-opened", (const char *[]) {
    shot_first, "--action=win.select-node::/block1/FancyNorm_1", path, NULL });
  assert_exited_cleanly (run);
  g_assert_cmpstr (report_get (run, "diagnostics-count"), ==, "5");
  marked = report_get_all (run, "canvas-marked");
  groups = report_get_all (run, "canvas-marked-groups");
  hidden = report_get_all (run, "canvas-marked-hidden");
  g_assert_cmpuint (g_strv_length (marked), ==, 2);
  /* First view: no flagged node has a box; block1 hides 3, block2 2. */
  g_assert_cmpstr (marked[0], ==, "0");
  g_assert_cmpstr (groups[0], ==, "2");
  g_assert_cmpstr (hidden[0], ==, "5");
  /* block1 opened: its 3 nodes are marked themselves, block2 still hides 2. */
  g_assert_cmpstr (report_get (run, "selected-node"), ==, "/block1/FancyNorm_1");
  g_assert_cmpstr (marked[1], ==, "3");
  g_assert_cmpstr (groups[1], ==, "1");
  g_assert_cmpstr (hidden[1], ==, "2");

  /* Drawn: the error red of the outlines and badges is on the canvas. */
  first = gdk_pixbuf_new_from_file (first_path, &error);
  g_assert_no_error (error);
  red_first = count_canvas_pixels (run, first, 0xe01b24);
  g_test_message ("error-red canvas pixels: first view %u", red_first);
  g_assert_cmpuint (red_first, >, 150);
  last = load_screenshot (run);
  red_last = count_canvas_pixels (run, last, 0xe01b24);
  g_test_message ("error-red canvas pixels: block1 open %u", red_last);
  g_assert_cmpuint (red_last, >, 0);
}

/* After Save As the saved file is the model's file: title, sidebar File
 * row and the next Save name it; Save writes it again without asking;
 * Save As onto it asks about it, not about the file first opened. */
static void
test_save_as_becomes_the_file (void)
{
  g_autofree char *dir = NULL;
  g_autofree char *path = static_batch_copy (&dir);
  g_autofree char *saved = g_build_filename (dir, "renamed.onnx", NULL);
  g_autofree char *save_as_arg = g_strconcat ("--action=win.save-as-path::", saved, NULL);
  g_autofree char *shot_saved = screenshot_action ("save-as-1-saved");
  g_autofree char *before = NULL;
  g_autofree char *after = NULL;
  gsize before_length = 0, after_length = 0;
  g_autoptr(Run) run = NULL;
  g_auto(GStrv) titles = NULL;
  g_auto(GStrv) files = NULL;
  g_auto(GStrv) model_paths = NULL;
  g_auto(GStrv) saves = NULL;

  g_assert_true (g_file_get_contents (path, &before, &before_length, NULL));
  run = run_graft ("save-as-2-saved-again", (const char *[]) {
    "--action=win.make-dynamic::input:0=batch", save_as_arg, shot_saved,
    "--action=win.undo", "--action=win.save",
    save_as_arg, path, NULL });
  assert_exited_cleanly (run);
  titles = report_get_all (run, "title");
  files = report_get_all (run, "sidebar-file");
  model_paths = report_get_all (run, "model-path");
  saves = report_get_all (run, "saved");
  g_assert_cmpuint (g_strv_length (titles), ==, 2);

  /* Saved as: everything names the new file. */
  g_assert_cmpstr (titles[0], ==, "renamed.onnx");
  g_assert_cmpstr (files[0], ==, saved);
  g_assert_cmpstr (model_paths[0], ==, saved);
  /* Undone and saved: written to the new file at once, no question. */
  g_assert_cmpuint (g_strv_length (saves), ==, 2);
  g_assert_cmpstr (saves[0], ==, saved);
  g_assert_cmpstr (saves[1], ==, saved);
  g_assert_cmpstr (titles[1], ==, "renamed.onnx");
  g_assert_cmpstr (files[1], ==, saved);
  check_with_onnx (saved, "2");
  /* Save As onto it: the question is about the new file. */
  g_assert_cmpstr (report_get (run, "dialogs"), ==, "1");
  g_assert_nonnull (strstr (report_get (run, "dialog-0"), "Replace the Original “renamed.onnx”?"));
  /* The file first opened was never written. */
  g_assert_true (g_file_get_contents (path, &after, &after_length, NULL));
  g_assert_cmpmem (before, before_length, after, after_length);
}

int
main (int argc, char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  if (g_getenv ("DISPLAY") == NULL)
    g_error ("no X display: run this test through tests/gui/run-under-xvfb.sh");

  g_test_add_func ("/gui/window/sample-select-node", test_sample_select_node);
  g_test_add_func ("/gui/window/empty-state", test_empty_state);
  g_test_add_func ("/gui/window/bad-file-random", test_bad_file_random);
  g_test_add_func ("/gui/window/bad-file-truncated", test_bad_file_truncated);
  g_test_add_func ("/gui/window/bad-file-empty", test_bad_file_empty);
  g_test_add_func ("/gui/window/not-a-regular-file", test_not_a_regular_file);
  g_test_add_func ("/gui/window/unknown-node", test_unknown_node);
  g_test_add_func ("/gui/window/subgraph-breadcrumbs", test_subgraph_breadcrumbs);
  g_test_add_func ("/gui/window/find", test_find);
  g_test_add_func ("/gui/window/select-initializer-dark", test_select_initializer_dark);
  g_test_add_func ("/gui/window/open-sample", test_open_sample_from_empty_state);
  g_test_add_func ("/gui/window/error-dialog-keeps-model", test_error_dialog_keeps_model);
  g_test_add_func ("/gui/window/shortcuts-window", test_shortcuts_window);
  g_test_add_func ("/gui/window/about-window", test_about_window);
  g_test_add_func ("/gui/window/view-toggles", test_view_toggles);
  g_test_add_func ("/gui/window/export-picture", test_export_picture);
  g_test_add_func ("/gui/window/recent-models", test_recent_models);
  g_test_add_func ("/gui/window/weights-only", test_weights_only);
  g_test_add_func ("/gui/window/diagnostics-edit-save-run", test_diagnostics_edit_save_run);
  g_test_add_func ("/gui/window/run-sample", test_run_sample);
  g_test_add_func ("/gui/window/run-bad-input-file", test_run_bad_input_file);
  g_test_add_func ("/gui/window/unsaved-changes-ask", test_unsaved_changes_ask);
  g_test_add_func ("/gui/window/refused-edit", test_refused_edit);
  g_test_add_func ("/gui/window/save-refused-for-non-onnx", test_save_refused_for_non_onnx);
  g_test_add_func ("/gui/window/marks-in-collapsed-groups", test_marks_in_collapsed_groups);
  g_test_add_func ("/gui/window/save-as-becomes-the-file", test_save_as_becomes_the_file);
  return g_test_run ();
}
