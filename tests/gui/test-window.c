/* The graft window in a real X server (run under xvfb-run by
 * run-under-xvfb.sh), in-process: the real GraftWindow of a fresh
 * application, driven through its actions as menus and shortcuts drive
 * it, and checked from its widget tree and its screenshots (kept in
 * BUILD/tests/gui/screenshots). */
#include <gdk-pixbuf/gdk-pixbuf.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "loader.h"
#include "runtime/npy.h"
#include "runtime/simd.h"
#include "widgets/graph-canvas.h"
#include "widgets/run-pane.h"
#include "gui-fixtures.h"
#include "../onnx/fixtures.h"
#include "window-harness.h"
#include "canvas-inspect.h"
#include "../test-python.h"
#include "../test-scratch.h"

#define EXPECTED_WIDTH 1200
#define EXPECTED_HEIGHT 760

/* One window, from the test's start to its end. */
typedef struct {
  GraftWindow *window;
} Gui;

static void
gui_start (Gui *gui)
{
  gui->window = harness_window_new ();
}

static void
gui_finish (Gui *gui)
{
  if (gui->window != NULL)
    harness_window_close (g_steal_pointer (&gui->window));
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Gui, gui_finish)

/* The window after its screenshot name.png: what it displays. */
static GHashTable *
capture (Gui *gui, const char *name)
{
  harness_screenshot (gui->window, name);
  return harness_window_state (gui->window);
}

static const char *
get (GHashTable *state, const char *key)
{
  return g_hash_table_lookup (state, key);
}

/* A toast or other label of the window saying text. */
static gboolean
window_says (Gui *gui, const char *text)
{
  return harness_find_label (GTK_WIDGET (gui->window), text) != NULL;
}

static char *
sample_path (void)
{
  return g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "data", "samples", "tiny-cnn.onnx", NULL);
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

static double
whole_stddev (GdkPixbuf *pixbuf)
{
  return luminance_stddev (pixbuf, 0, 0, gdk_pixbuf_get_width (pixbuf), gdk_pixbuf_get_height (pixbuf));
}

/* name.png of BUILD/tests/gui/screenshots */
static GdkPixbuf *
load_screenshot (const char *name)
{
  g_autofree char *path = harness_screenshot_path (name);
  g_autoptr(GError) error = NULL;
  GdkPixbuf *pixbuf = gdk_pixbuf_new_from_file (path, &error);

  g_assert_no_error (error);
  g_test_message ("screenshot: %s (%dx%d)", path, gdk_pixbuf_get_width (pixbuf), gdk_pixbuf_get_height (pixbuf));
  return pixbuf;
}

static GdkPixbuf *
load_dialog_screenshot (const char *name, guint index)
{
  g_autofree char *dialog_name = g_strdup_printf ("%s-dialog-%u", name, index);

  return load_screenshot (dialog_name);
}

/* The window opens at the default size of the settings schema, and the
 * picture is the whole window: content size = default size minus the
 * client-side frame GTK draws without a compositor. */
static void
assert_window_size (GHashTable *state, GdkPixbuf *pixbuf)
{
  g_autofree char *expected_default = g_strdup_printf ("%dx%d", EXPECTED_WIDTH, EXPECTED_HEIGHT);
  g_autofree char *picture = g_strdup_printf ("%dx%d", gdk_pixbuf_get_width (pixbuf),
                                              gdk_pixbuf_get_height (pixbuf));

  g_assert_cmpstr (get (state, "default-size"), ==, expected_default);
  g_assert_cmpstr (get (state, "window-size"), ==, picture);
  g_assert_cmpint (gdk_pixbuf_get_width (pixbuf), <=, EXPECTED_WIDTH);
  g_assert_cmpint (gdk_pixbuf_get_width (pixbuf), >=, EXPECTED_WIDTH - 40);
  g_assert_cmpint (gdk_pixbuf_get_height (pixbuf), <=, EXPECTED_HEIGHT);
  g_assert_cmpint (gdk_pixbuf_get_height (pixbuf), >=, EXPECTED_HEIGHT - 40);
}

/* The picture name.png has the window's size; returned for more checks. */
static GdkPixbuf *
load_window_screenshot (GHashTable *state, const char *name)
{
  GdkPixbuf *pixbuf = load_screenshot (name);

  assert_window_size (state, pixbuf);
  return pixbuf;
}

static void
parse_bounds (GHashTable *state, const char *key, int bounds[4])
{
  const char *text = get (state, key);
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
  g_autofree char *action = NULL;
  g_autofree char *basename = g_path_get_basename (path);
  g_auto(Gui) gui = { 0 };
  g_autoptr(GHashTable) state = NULL;
  g_autoptr(GdkPixbuf) pixbuf = NULL;
  GraftNode *node;
  int sidebar[4], canvas[4];
  double overall, sidebar_sd, canvas_sd;

  g_assert_no_error (error);
  node = pick_node (model);
  action = g_strconcat ("win.select-node::", node->name, NULL);

  gui_start (&gui);
  harness_open (gui.window, path);
  harness_activate (gui.window, action);
  state = capture (&gui, "sample-selected-node");
  g_assert_cmpstr (get (state, "state"), ==, "model");
  g_assert_cmpstr (get (state, "title"), ==, basename);
  g_assert_true (g_str_has_prefix (get (state, "subtitle"), "ONNX"));
  g_assert_cmpstr (get (state, "selected-node"), ==, node->name);
  g_assert_cmpstr (get (state, "no-graph"), ==, "0");
  /* The sidebar's header labels show the node. */
  g_assert_cmpstr (get (state, "sidebar-title"), ==, node->op_type);
  g_assert_cmpstr (get (state, "sidebar-subtitle"), ==, node->name);
  g_assert_false (window_says (&gui, "No node named"));

  pixbuf = load_window_screenshot (state, "sample-selected-node");
  parse_bounds (state, "sidebar-bounds", sidebar);
  parse_bounds (state, "canvas-bounds", canvas);
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
  g_auto(Gui) gui = { 0 };
  g_autoptr(GHashTable) state = NULL;
  g_autoptr(GdkPixbuf) pixbuf = NULL;

  gui_start (&gui);
  state = capture (&gui, "empty-state");
  g_assert_cmpstr (get (state, "state"), ==, "empty");
  g_assert_cmpstr (get (state, "can-undo"), ==, "0");
  g_assert_cmpstr (get (state, "can-redo"), ==, "0");
  pixbuf = load_window_screenshot (state, "empty-state");
  g_assert_cmpfloat (whole_stddev (pixbuf), >, 5);
}

/* The window after opening path, and the picture name.png. */
static GHashTable *
open_and_capture (Gui *gui, const char *path, const char *name)
{
  gui_start (gui);
  harness_open (gui->window, path);
  return capture (gui, name);
}

static void
check_bad_file (const char *name, const guint8 *contents, gsize length)
{
  g_autofree char *dir = graft_test_scratch_dir ("graft-bad-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, name, NULL);
  g_autofree char *shot_name = g_strdup_printf ("bad-file-%s", name);
  g_auto(Gui) gui = { 0 };
  g_autoptr(GHashTable) state = NULL;
  g_autoptr(GdkPixbuf) pixbuf = NULL;
  const char *error_page;

  g_assert_true (g_file_set_contents (path, (const char *) contents, length, NULL));
  g_strdelimit (shot_name, ".", '-');
  state = open_and_capture (&gui, path, shot_name);

  g_assert_cmpstr (get (state, "state"), ==, "error");
  error_page = get (state, "error-page");
  g_assert_nonnull (error_page);
  g_assert_nonnull (strstr (error_page, name));
  /* The reader's reason follows the heading. */
  g_assert_false (g_str_has_suffix (error_page, " — "));
  pixbuf = load_window_screenshot (state, shot_name);
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

static void
check_error_page_says (const char *path, const char *name, const char *reason)
{
  g_auto(Gui) gui = { 0 };
  g_autoptr(GHashTable) state = open_and_capture (&gui, path, name);

  g_assert_cmpstr (get (state, "state"), ==, "error");
  g_assert_nonnull (strstr (get (state, "error-page"), reason));
}

/* A named pipe would block any reader for ever; a folder is no model. */
static void
test_not_a_regular_file (void)
{
  g_autofree char *dir = graft_test_scratch_dir ("graft-fifo-XXXXXX", NULL);
  g_autofree char *fifo = g_build_filename (dir, "pipe.onnx", NULL);
  g_autofree char *folder = g_build_filename (dir, "folder.onnx", NULL);

  g_assert_cmpint (mkfifo (fifo, 0600), ==, 0);
  g_assert_cmpint (g_mkdir (folder, 0700), ==, 0);
  check_error_page_says (fifo, "bad-file-fifo", "not a regular file");
  check_error_page_says (folder, "bad-file-folder", "is a folder");
  g_unlink (fifo);
  g_rmdir (folder);
  g_rmdir (dir);
}

static void
test_unknown_node (void)
{
  g_autofree char *path = sample_path ();
  g_auto(Gui) gui = { 0 };
  g_autoptr(GHashTable) state = NULL;

  gui_start (&gui);
  harness_open (gui.window, path);
  harness_activate (gui.window, "win.select-node::no-such-node");
  state = capture (&gui, "unknown-node");
  g_assert_cmpstr (get (state, "state"), ==, "model");
  /* The toast names the node. */
  g_assert_true (window_says (&gui, "No node named “no-such-node”"));
  g_assert_cmpstr (get (state, "selected-node"), ==, "");
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
  g_auto(Gui) gui = { 0 };
  g_autoptr(GHashTable) state = open_and_capture (&gui, path, "weights-only");
  g_autoptr(GdkPixbuf) pixbuf = NULL;

  g_assert_cmpstr (get (state, "state"), ==, "model");
  g_assert_cmpstr (get (state, "title"), ==, "weights.pt");
  g_assert_cmpstr (get (state, "sidebar-title"), ==, "weights.pt");
  g_assert_cmpstr (get (state, "no-graph"), ==, "1");
  pixbuf = load_window_screenshot (state, "weights-only");
}

static void
test_subgraph_breadcrumbs (void)
{
  g_autofree char *path = if_model_path ();
  g_auto(Gui) gui = { 0 };
  g_autoptr(GHashTable) state = NULL;
  g_autoptr(GdkPixbuf) pixbuf = NULL;

  gui_start (&gui);
  harness_open (gui.window, path);
  harness_activate (gui.window, "win.select-node::else_neg");
  state = capture (&gui, "subgraph-else-branch");
  g_assert_cmpstr (get (state, "state"), ==, "model");
  /* Selecting a node of a body shows that body, with the way back. */
  g_assert_cmpstr (get (state, "breadcrumbs"), ==, "if_model › If “branch_if” › else_branch");
  g_assert_cmpstr (get (state, "selected-node"), ==, "else_neg");
  g_assert_cmpstr (get (state, "sidebar-title"), ==, "Neg");
  pixbuf = load_window_screenshot (state, "subgraph-else-branch");
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
  g_auto(Gui) gui = { 0 };
  g_autoptr(GHashTable) state = NULL;
  g_autoptr(GdkPixbuf) pixbuf = NULL;
  guint n_conv = 0;

  g_assert_no_error (error);
  graft_graph_foreach_node_recursive (graft_model_get_graph (model), count_conv, &n_conv);
  g_assert_cmpuint (n_conv, >, 0);

  gui_start (&gui);
  harness_open (gui.window, path);
  harness_activate (gui.window, "win.find-text::conv");
  state = capture (&gui, "find-conv");
  g_assert_cmpstr (get (state, "find-visible"), ==, "1");
  /* Every Conv node, plus values named after them. */
  g_assert_cmpuint (g_ascii_strtoull (get (state, "find-matches"), NULL, 10), >=, n_conv);
  pixbuf = load_window_screenshot (state, "find-conv");
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
  AdwStyleManager *style = adw_style_manager_get_default ();
  g_autofree char *action = NULL;
  g_auto(Gui) gui = { 0 };
  g_autoptr(GHashTable) state = NULL;
  g_autoptr(GdkPixbuf) pixbuf = NULL;
  GraftValue *weight;
  int sidebar[4];

  g_assert_no_error (error);
  weight = pick_initializer (pick_node (model));
  action = g_strconcat ("win.select-value::", weight->name, NULL);

  adw_style_manager_set_color_scheme (style, ADW_COLOR_SCHEME_FORCE_DARK);
  gui_start (&gui);
  harness_open (gui.window, path);
  harness_activate (gui.window, action);
  state = capture (&gui, "initializer-dark");
  adw_style_manager_set_color_scheme (style, ADW_COLOR_SCHEME_DEFAULT);
  g_assert_false (window_says (&gui, "No value named"));
  g_assert_cmpstr (get (state, "sidebar-title"), ==, weight->name);
  g_assert_cmpstr (get (state, "sidebar-subtitle"), ==, "Initializer");
  pixbuf = load_window_screenshot (state, "initializer-dark");
  parse_bounds (state, "sidebar-bounds", sidebar);
  g_assert_cmpfloat (luminance_stddev (pixbuf, sidebar[0], sidebar[1], sidebar[2], sidebar[3]), >, 5);
  /* Dark style: the sidebar background is dark. */
  {
    const guint8 *p = gdk_pixbuf_read_pixels (pixbuf)
                      + (sidebar[1] + sidebar[3] - 4) * gdk_pixbuf_get_rowstride (pixbuf)
                      + (sidebar[0] + 4) * gdk_pixbuf_get_n_channels (pixbuf);
    g_assert_cmpint (p[0] + p[1] + p[2], <, 3 * 96);
  }
}

static void
test_open_sample_from_empty_state (void)
{
  g_auto(Gui) gui = { 0 };
  g_autoptr(GHashTable) state = NULL;
  g_autoptr(GdkPixbuf) pixbuf = NULL;

  gui_start (&gui);
  harness_activate (gui.window, "win.open-sample");
  state = capture (&gui, "open-sample");
  g_assert_cmpstr (get (state, "state"), ==, "model");
  g_assert_cmpstr (get (state, "title"), ==, "tiny-cnn.onnx");
  g_assert_cmpstr (get (state, "sidebar-title"), ==, "tiny-cnn.onnx");
  pixbuf = load_window_screenshot (state, "open-sample");
}

/* A bad file opened over a good one: the model stays, a dialog says why. */
static void
test_error_dialog_keeps_model (void)
{
  g_autofree char *path = sample_path ();
  g_autofree char *dir = graft_test_scratch_dir ("graft-bad-XXXXXX", NULL);
  g_autofree char *bad = g_build_filename (dir, "not-a-model.onnx", NULL);
  g_autofree char *action = g_strconcat ("win.open-path::", bad, NULL);
  g_autoptr(GError) reason = NULL;
  g_autoptr(GraftModel) no_model = NULL;
  g_auto(Gui) gui = { 0 };
  g_autoptr(GHashTable) state = NULL;
  g_autoptr(GdkPixbuf) dialog = NULL;
  const char *description;

  g_assert_true (g_file_set_contents (bad, "this is text, not protobuf", -1, NULL));
  no_model = graft_model_load (bad, NULL, NULL, NULL, &reason);
  g_assert_null (no_model);
  g_assert_nonnull (reason);

  gui_start (&gui);
  harness_open (gui.window, path);
  harness_activate (gui.window, action);
  state = capture (&gui, "error-dialog");
  g_assert_cmpstr (get (state, "state"), ==, "model");
  g_assert_cmpstr (get (state, "title"), ==, "tiny-cnn.onnx");
  g_assert_cmpstr (get (state, "dialogs"), ==, "1");
  description = get (state, "dialog-0");
  g_assert_true (g_str_has_prefix (description, "AdwMessageDialog: Could Not Open “not-a-model.onnx” — "));
  /* The dialog gives the reader's exact reason. */
  g_assert_nonnull (strstr (description, reason->message));
  dialog = load_dialog_screenshot ("error-dialog", 0);
  g_assert_cmpfloat (whole_stddev (dialog), >, 5);
  g_unlink (bad);
  g_rmdir (dir);
}

static void
check_dialog_action (const char *name, const char *action, const char *type_name)
{
  g_autofree char *path = sample_path ();
  g_auto(Gui) gui = { 0 };
  g_autoptr(GHashTable) state = NULL;
  g_autoptr(GdkPixbuf) dialog = NULL;

  gui_start (&gui);
  harness_open (gui.window, path);
  harness_activate (gui.window, action);
  state = capture (&gui, name);
  g_assert_cmpstr (get (state, "dialogs"), ==, "1");
  g_assert_true (g_str_has_prefix (get (state, "dialog-0"), type_name));
  dialog = load_dialog_screenshot (name, 0);
  g_assert_cmpint (gdk_pixbuf_get_width (dialog), >=, 300);
  g_assert_cmpfloat (whole_stddev (dialog), >, 5);
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
  g_auto(Gui) gui = { 0 };
  g_autoptr(GHashTable) state = NULL;
  g_autoptr(GdkPixbuf) pixbuf = NULL;
  const char *expected = "names=0 attributes=1 shapes=0 direction=LR";

  gui_start (&gui);
  harness_open (gui.window, path);
  harness_activate (gui.window, "win.show-names");
  harness_activate (gui.window, "win.show-shapes");
  harness_activate (gui.window, "win.direction::LR");
  state = capture (&gui, "toggles-left-to-right");
  g_assert_cmpstr (get (state, "canvas-options"), ==, expected);
  g_assert_cmpstr (get (state, "settings-options"), ==, expected);
  pixbuf = load_window_screenshot (state, "toggles-left-to-right");
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
export_to (Gui *gui, const char *path)
{
  g_autofree char *action = g_strconcat ("win.export-to::", path, NULL);

  harness_activate (gui->window, action);
}

static void
test_export_picture (void)
{
  g_autofree char *path = sample_path ();
  g_autofree char *dir = graft_test_scratch_dir ("graft-export-XXXXXX", NULL);
  g_autofree char *svg = g_build_filename (dir, "graph.svg", NULL);
  g_autofree char *png = g_build_filename (dir, "graph.png", NULL);
  g_autofree char *pdf = g_build_filename (dir, "graph.pdf", NULL);
  g_autofree char *bad = g_build_filename (dir, "graph.bmp", NULL);
  g_autofree char *to_bad = g_strconcat ("win.export-to::", bad, NULL);
  g_auto(Gui) gui = { 0 };
  g_autoptr(GHashTable) state = NULL;
  g_autoptr(GdkPixbuf) picture = NULL;
  g_autoptr(GError) error = NULL;

  gui_start (&gui);
  harness_open (gui.window, path);
  export_to (&gui, svg);
  export_to (&gui, png);
  export_to (&gui, pdf);
  state = capture (&gui, "export");
  g_assert_cmpstr (get (state, "dialogs"), ==, "0");
  assert_file_starts_with (svg, "<?xml", 5);
  assert_file_starts_with (png, "\x89PNG", 4);
  assert_file_starts_with (pdf, "%PDF", 4);
  picture = gdk_pixbuf_new_from_file (png, &error);
  g_assert_no_error (error);
  g_assert_cmpfloat (whole_stddev (picture), >, 5);

  /* An unknown format is refused with a dialog, and nothing is written. */
  g_clear_pointer (&state, g_hash_table_unref);
  harness_activate (gui.window, to_bad);
  state = capture (&gui, "export-refused");
  g_assert_cmpstr (get (state, "dialogs"), ==, "1");
  g_assert_true (g_str_has_prefix (get (state, "dialog-0"), "AdwMessageDialog: Could Not Export the Picture — "));
  g_assert_false (g_file_test (bad, G_FILE_TEST_EXISTS));

  g_unlink (svg);
  g_unlink (png);
  g_unlink (pdf);
  g_rmdir (dir);
}

static gboolean
recent_menu_lists_sample (gpointer data)
{
  g_autoptr(GHashTable) state = harness_window_state (data);

  return g_strcmp0 (get (state, "recent"), "tiny-cnn.onnx") == 0;
}

/* A model opened once is offered in the Open button's menu next time. */
static void
test_recent_models (void)
{
  g_autofree char *path = sample_path ();
  g_auto(Gui) first = { 0 };
  g_auto(Gui) second = { 0 };
  g_autoptr(GHashTable) opened = NULL;
  g_autoptr(GHashTable) state = NULL;

  /* Only what this test opens. */
  gtk_recent_manager_purge_items (gtk_recent_manager_get_default (), NULL);
  opened = open_and_capture (&first, path, "recent-first");
  g_assert_cmpstr (get (opened, "state"), ==, "model");
  gui_finish (&first);

  gui_start (&second);
  harness_wait_for (recent_menu_lists_sample, second.window);
  state = capture (&second, "recent-second");
  g_assert_cmpstr (get (state, "state"), ==, "empty");
  g_assert_cmpstr (get (state, "recent"), ==, "tiny-cnn.onnx");
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

  *dir = graft_test_scratch_dir ("graft-edit-XXXXXX", NULL);
  path = g_build_filename (*dir, "static-batch.onnx", NULL);
  g_assert_true (g_file_get_contents (fixture, &contents, &length, NULL));
  g_assert_true (g_file_set_contents (path, contents, length, NULL));
  return path;
}

/* onnx.checker and strict shape inference accept each file of paths
 * (NULL-terminated), and their first inputs' dim 0 are expected_dims
 * ("batch 2"): one Python for all, as starting it takes seconds. */
static void
check_with_onnx (const char *const *paths, const char *expected_dims)
{
  g_autofree char *test_python = graft_test_python ();
  const char *script =
    "import sys, onnx\n"
    "dims = []\n"
    "for path in sys.argv[1:]:\n"
    "    m = onnx.load(path)\n"
    "    onnx.checker.check_model(m)\n"
    "    onnx.shape_inference.infer_shapes(m, strict_mode=True)\n"
    "    d = m.graph.input[0].type.tensor_type.shape.dim[0]\n"
    "    dims.append(str(d.dim_param or d.dim_value))\n"
    "print(' '.join(dims))\n";
  g_autoptr(GPtrArray) argv = g_ptr_array_new ();
  g_autofree char *out = NULL;
  g_autofree char *err = NULL;
  g_autoptr(GError) error = NULL;
  int status = 0;

  g_ptr_array_add (argv, test_python);
  g_ptr_array_add (argv, "-c");
  g_ptr_array_add (argv, (char *) script);
  for (guint i = 0; paths[i] != NULL; i++)
    g_ptr_array_add (argv, (char *) paths[i]);
  g_ptr_array_add (argv, NULL);
  g_spawn_sync (NULL, (char **) argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status, &error);
  g_assert_no_error (error);
  if (!g_spawn_check_wait_status (status, &error))
    g_error ("onnx.checker refused %s: %s", paths[0], err);
  g_strstrip (out);
  g_assert_cmpstr (out, ==, expected_dims);
}

/* Graft reads path back with its first input's dim 0 named symbol. */
static void
assert_first_dim_named (const char *path, const char *symbol)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);
  GraftValue *input;

  g_assert_no_error (error);
  input = g_ptr_array_index (graft_model_get_graph (model)->inputs, 0);
  g_assert_cmpint (input->shape.dims[0].kind, ==, GRAFT_DIM_SYMBOLIC);
  g_assert_cmpstr (input->shape.dims[0].symbol, ==, symbol);
}

/* The shape constant the Reshape of the graph shown reads, as "[a, b]". */
static char *
shown_reshape_target (Gui *gui)
{
  GraftGraphCanvas *canvas = GRAFT_GRAPH_CANVAS (harness_find_type (GTK_WIDGET (gui->window),
                                                                    GRAFT_TYPE_GRAPH_CANVAS));
  GraftGraph *graph = graft_graph_canvas_get_graph (canvas);
  g_autoptr(GString) text = g_string_new ("[");

  g_assert_nonnull (graph);
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      GraftValue *shape;

      if (!g_str_equal (node->op_type, "Reshape"))
        continue;
      shape = g_ptr_array_index (node->inputs, 1);
      g_assert_nonnull (shape->initializer);
      for (gint64 k = 0; k < graft_tensor_get_numel (shape->initializer); k++)
        g_string_append_printf (text, "%s%.0f", k > 0 ? ", " : "",
                                graft_tensor_get_element_as_double (shape->initializer, k));
      g_string_append (text, "]");
      return g_string_free (g_steal_pointer (&text), FALSE);
    }
  g_error ("no Reshape in the graph shown");
  return NULL;
}

/* The story of the rewrite issue: a static batch is flagged, made dynamic
 * in one action, undone and redone, saved, and run with batch 4. */
static void
test_diagnostics_edit_save_run (void)
{
  g_autofree char *dir = NULL;
  g_autofree char *path = static_batch_copy (&dir);
  g_autofree char *saved = g_build_filename (dir, "edited.onnx", NULL);
  g_autofree char *save_action = g_strconcat ("win.save-as-path::", saved, NULL);
  g_autofree char *target = NULL;
  g_auto(Gui) gui = { 0 };
  g_autoptr(GHashTable) found = NULL;
  g_autoptr(GHashTable) filtered = NULL;
  g_autoptr(GHashTable) edited = NULL;
  g_autoptr(GHashTable) undone = NULL;
  g_autoptr(GHashTable) state = NULL;
  g_autoptr(GdkPixbuf) pixbuf = NULL;

  gui_start (&gui);
  harness_open (gui.window, path);
  harness_activate (gui.window, "win.show-diagnostics");
  found = capture (&gui, "edit-1-diagnostics");
  harness_activate (gui.window, "win.filter-diagnostics::baked-shape-constant");
  filtered = capture (&gui, "edit-2-filtered");
  harness_activate (gui.window, "win.filter-diagnostics::");
  harness_activate (gui.window, "win.edit-operation(('make-dim-dynamic', '', 'input:0=batch'))");
  edited = capture (&gui, "edit-3-made-dynamic");
  target = shown_reshape_target (&gui);
  harness_activate (gui.window, "win.undo");
  undone = capture (&gui, "edit-4-undone");
  harness_activate (gui.window, "win.redo");
  harness_activate (gui.window, save_action);
  harness_activate (gui.window, "win.run-new-shape::batch=4");
  state = capture (&gui, "edit-5-saved-and-run");

  /* Found: both problems, listed and drawn. */
  g_assert_cmpstr (get (found, "title"), ==, "static-batch.onnx");
  g_assert_cmpstr (get (found, "diagnostics-count"), ==, "2");
  g_assert_nonnull (strstr (get (found, "diagnostics"), "warning static-input-dim input"));
  g_assert_nonnull (strstr (get (found, "diagnostics"), "warning baked-shape-constant /Reshape"));
  g_assert_cmpstr (get (found, "canvas-marked"), ==, "2");
  /* Filtered by rule. */
  g_assert_cmpstr (get (filtered, "diagnostics"), ==, "warning baked-shape-constant /Reshape");
  /* Made dynamic: the constant is repaired, nothing is left to flag, the
   * title says the model is changed. */
  g_assert_cmpstr (get (edited, "title"), ==, "• static-batch.onnx");
  g_assert_cmpstr (get (edited, "diagnostics-count"), ==, "0");
  g_assert_cmpstr (get (edited, "canvas-marked"), ==, "0");
  g_assert_cmpstr (get (edited, "can-undo"), ==, "1");
  g_assert_cmpstr (target, ==, "[-1, 512]");
  /* Undone: as loaded. */
  g_assert_cmpstr (get (undone, "title"), ==, "static-batch.onnx");
  g_assert_cmpstr (get (undone, "diagnostics-count"), ==, "2");
  g_assert_cmpstr (get (undone, "can-undo"), ==, "0");
  g_assert_cmpstr (get (undone, "can-redo"), ==, "1");
  /* Redone, saved under a new name, run with batch 4. */
  g_assert_true (g_file_test (saved, G_FILE_TEST_IS_REGULAR));
  g_assert_cmpstr (get (state, "title"), ==, "edited.onnx");
  g_assert_cmpstr (get (state, "sidebar-file"), ==, saved);
  g_assert_cmpstr (get (state, "diagnostics-count"), ==, "0");
  g_assert_true (g_str_has_prefix (get (state, "run-outputs"), "logits float32[4,10] min="));
  g_assert_true (g_str_has_prefix (get (state, "run-status"), "Ran in "));
  check_with_onnx ((const char *[]) { saved, path, NULL }, "batch 2");
  pixbuf = load_window_screenshot (state, "edit-5-saved-and-run");
}

static gboolean
canvas_has_graph (gpointer data)
{
  return graft_graph_canvas_get_graph (data) != NULL;
}

static gboolean
window_is_checking (GraftWindow *window)
{
  gboolean checking = FALSE;

  g_object_get (window, "checking", &checking, NULL);
  return checking;
}

static gboolean
check_is_done (gpointer data)
{
  return !window_is_checking (data);
}

/* Lint only reads the model: the graph is shown and usable while a
 * 24-layer transformer is checked (seconds), and a run goes on beside it;
 * its problems and inferred shapes appear when the check lands. */
static void
test_check_in_background (void)
{
  g_autofree char *dir = graft_test_generate_fixtures ("tests/fixtures/make-rewrite-fixtures.py",
                                                       "tests/fixtures-generated/rewrite", NULL);
  g_autofree char *path = g_build_filename (dir, "encoder24-b2.onnx", NULL);
  g_autoptr(GFile) file = g_file_new_for_path (path);
  g_auto(Gui) gui = { 0 };
  GraftGraphCanvas *canvas;
  g_autoptr(GHashTable) during = NULL;
  g_autoptr(GHashTable) after = NULL;

  gui_start (&gui);
  canvas = GRAFT_GRAPH_CANVAS (harness_find_type (GTK_WIDGET (gui.window), GRAFT_TYPE_GRAPH_CANVAS));
  graft_window_open_file (gui.window, file);
  harness_wait_for (canvas_has_graph, canvas);
  /* Shown at once, checked meanwhile: the canvas and a run work, edits wait. */
  g_assert_true (window_is_checking (gui.window));
  during = harness_window_state (gui.window);
  g_assert_cmpstr (get (during, "diagnostics-count"), ==, "…");
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (gui.window), "win.zoom-in", NULL));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (gui.window), "win.show-run", NULL));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (gui.window), "win.run", NULL));
  /* An edit would free the graph the check reads: refused (disabled, or
   * told to wait), the model unchanged. */
  gtk_widget_activate_action (GTK_WIDGET (gui.window), "win.edit-operation", "(sss)", "make-dim-dynamic", "",
                              "src:0=batch");
  g_assert_true (window_is_checking (gui.window));
  g_assert_cmpstr (gtk_window_get_title (GTK_WINDOW (gui.window)), ==, "encoder24-b2.onnx — Graft");
  harness_wait_for (check_is_done, gui.window);
  harness_settle (gui.window);
  after = capture (&gui, "check-in-background");
  g_assert_cmpint (atoi (get (after, "diagnostics-count")), >, 0);
  g_assert_true (g_str_has_prefix (get (after, "run-status"), "Ran in "));
}

/* Opens path, shows the Run pane, sets a dim ("batch=3", or NULL to keep
 * the pane's default) and runs. */
static void
open_and_run (Gui *gui, const char *path, const char *dim_setting)
{
  g_autofree char *dim_action = dim_setting ? g_strconcat ("win.set-run-dim::", dim_setting, NULL) : NULL;

  gui_start (gui);
  harness_open (gui->window, path);
  harness_activate (gui->window, "win.show-run");
  if (dim_action != NULL)
    harness_activate (gui->window, dim_action);
  harness_activate (gui->window, "win.run");
}

/* The Run pane on the sample: random input with a batch of 3, outputs
 * summarised and saved as .npy, nodes coloured by their time. */
static void
test_run_sample (void)
{
  g_autofree char *path = sample_path ();
  g_autofree char *dir = graft_test_scratch_dir ("graft-run-XXXXXX", NULL);
  g_autofree char *out = g_build_filename (dir, "outputs", NULL);
  g_autofree char *save_action = g_strconcat ("win.save-outputs-to::", out, NULL);
  g_autofree char *npy = g_build_filename (out, "probabilities.npy", NULL);
  g_auto(Gui) gui = { 0 };
  g_autoptr(GHashTable) state = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftRtTensor) tensor = NULL;
  g_autoptr(GdkPixbuf) pixbuf = NULL;

  open_and_run (&gui, path, "batch=3");
  harness_activate (gui.window, save_action);
  harness_activate (gui.window, "win.show-timings");
  state = capture (&gui, "run-sample");
  g_assert_cmpstr (get (state, "run-visible"), ==, "1");
  g_assert_true (g_str_has_prefix (get (state, "run-outputs"), "probabilities float32[3,10] min="));
  g_assert_nonnull (strstr (get (state, "run-outputs"), "mean=0.1"));
  g_assert_true (g_str_has_prefix (get (state, "run-status"), "Saved 1 output as .npy in "));
  g_assert_cmpint (atoi (get (state, "canvas-marked")), >, 3);
  tensor = graft_npy_read (npy, &error);
  g_assert_no_error (error);
  g_assert_cmpint (tensor->rank, ==, 2);
  g_assert_cmpint (tensor->dims[0], ==, 3);
  g_assert_cmpint (tensor->dims[1], ==, 10);
  pixbuf = load_window_screenshot (state, "run-sample");
}

/* Timings of a model whose blocks the runtime fuses (two MobileNetV2
 * inverted residual blocks, exported by PyTorch): each block's first
 * Conv carries the block's time, marked fused, and the overlay shows it. */
static void
test_run_fused_timings (void)
{
  g_autofree char *path = generated_fixture ("make-inverted-residual-model.py", "inverted-residual.onnx");
  g_auto(Gui) gui = { 0 };
  g_autoptr(GHashTable) state = NULL;
  g_autoptr(GdkPixbuf) pixbuf = NULL;

  open_and_run (&gui, path, NULL);
  harness_activate (gui.window, "win.show-timings");
  state = capture (&gui, "run-fused-timings");
  g_assert_cmpstr (get (state, "run-visible"), ==, "1");
  g_assert_true (g_str_has_prefix (get (state, "run-outputs"), "y float32[1,16,28,28] min="));
  GraftRunPane *pane = GRAFT_RUN_PANE (harness_find_type (GTK_WIDGET (gui.window), GRAFT_TYPE_RUN_PANE));
  GraftGraphCanvas *canvas = GRAFT_GRAPH_CANVAS (harness_find_type (GTK_WIDGET (gui.window), GRAFT_TYPE_GRAPH_CANVAS));
  GHashTable *fused = graft_run_pane_get_fused (pane);
  /* SIMD kernels run the fused operator; the portable level runs the nodes */
  guint want = graft_simd_get_level () >= GRAFT_SIMD_AVX2 ? 2 : 0;
  g_assert_nonnull (fused);
  g_assert_cmpuint (g_hash_table_size (fused), ==, want);
  GHashTableIter iter;
  gpointer node, op;
  g_hash_table_iter_init (&iter, fused);
  while (g_hash_table_iter_next (&iter, &node, &op))
    {
      g_auto(GStrv) marks = inspect_canvas_node_marks (canvas, node);
      g_test_message ("%s: %s", ((GraftNode *) node)->name, marks[0]);
      g_assert_cmpstr (op, ==, "graft::PointwiseDepthwiseConv");
      g_assert_cmpstr (((GraftNode *) node)->op, ==, "onnx::Conv");
      g_assert_nonnull (marks[0]);
      g_assert_true (g_str_has_suffix (marks[0], " ms fused"));
    }
  pixbuf = load_window_screenshot (state, "run-fused-timings");
}

/* The Run pane on a torch.export program: batch 4 runs, batch 17 is
 * refused before running with the range torch.export declared. */
static char *
pt2_fixture (const char *file_name)
{
  g_autofree char *dir = graft_test_generate_fixtures ("tests/fixtures/make-pt2-fixtures.py",
                                                       "tests/fixtures-generated/pt2", NULL);

  return g_build_filename (dir, file_name, NULL);
}

static void
test_run_pt2_range (void)
{
  g_autofree char *path = pt2_fixture ("cnn_dynamic.pt2");
  g_auto(Gui) gui = { 0 };
  g_autoptr(GHashTable) state = NULL;
  g_autoptr(GHashTable) refused = NULL;
  g_autoptr(GHashTable) selected = NULL;
  g_autoptr(GdkPixbuf) pixbuf = NULL;

  open_and_run (&gui, path, "s77=4");
  /* The dim's row says its range. */
  g_assert_nonnull (harness_find_label (GTK_WIDGET (gui.window), "random inputs' size · ∈ [2, 16]"));
  state = capture (&gui, "run-pt2");
  g_assert_cmpstr (get (state, "state"), ==, "model");
  g_assert_true (g_str_has_prefix (get (state, "subtitle"), "torch.export program · schema "));
  g_assert_null (strstr (get (state, "subtitle"), "opset"));
  g_assert_cmpstr (get (state, "run-visible"), ==, "1");
  g_assert_true (g_str_has_prefix (get (state, "run-outputs"), "linear float32[4,10] min="));
  g_assert_true (g_str_has_prefix (get (state, "run-status"), "Ran in "));
  pixbuf = load_window_screenshot (state, "run-pt2");

  harness_activate (gui.window, "win.set-run-dim::s77=17");
  harness_activate (gui.window, "win.run");
  refused = capture (&gui, "run-pt2-refused");
  g_assert_cmpstr (get (refused, "run-outputs"), ==, "");
  g_assert_nonnull (strstr (get (refused, "run-status"), "[2, 16]"));

  /* The sidebar names the conv's arguments by their schema names. */
  harness_activate (gui.window, "win.select-node::conv2d");
  selected = capture (&gui, "pt2-conv2d-selected");
  g_assert_cmpstr (get (selected, "selected-node"), ==, "conv2d");
  g_assert_nonnull (harness_find_label (GTK_WIDGET (gui.window), "stride"));
  g_assert_nonnull (harness_find_label (GTK_WIDGET (gui.window), "weight · initializer"));
  g_assert_null (harness_find_label (GTK_WIDGET (gui.window), "arg3"));
}

/* A run whose outputs hold NaN: the pane runs it again watching every
 * value, names the Div by zero planted in the model, and the window
 * selects that node and marks it. */
static void
test_run_nan_source (void)
{
  g_autofree char *path = generated_fixture ("make-nan-model.py", "nan.onnx");
  g_auto(Gui) gui = { 0 };

  open_and_run (&gui, path, NULL);
  g_autoptr(GHashTable) state = capture (&gui, "run-nan-source");
  g_test_message ("run: %s", get (state, "run-status"));
  GraftRunPane *pane = GRAFT_RUN_PANE (harness_find_type (GTK_WIDGET (gui.window), GRAFT_TYPE_RUN_PANE));
  GraftGraphCanvas *canvas = GRAFT_GRAPH_CANVAS (harness_find_type (GTK_WIDGET (gui.window), GRAFT_TYPE_GRAPH_CANVAS));
  GraftNode *source = graft_run_pane_get_nonfinite_node (pane);
  g_assert_nonnull (source);
  g_assert_cmpstr (source->op, ==, "onnx::Div");
  g_autofree char *said = g_strdup_printf ("NaN/Inf first produced by onnx::Div '%s'", source->name);
  g_assert_nonnull (strstr (get (state, "run-status"), said));
  g_assert_cmpstr (get (state, "selected-node"), ==, source->name);
  g_auto(GStrv) marks = inspect_canvas_node_marks (canvas, source);
  g_assert_cmpstr (marks[0], ==, "NaN/Inf");
}

/* Colour Nodes by Cost: every computing node of the sample gets its FLOPs
 * as heat and badge, the convolutions the most. */
static void
test_cost_overlay (void)
{
  g_autofree char *path = sample_path ();
  g_auto(Gui) gui = { 0 };

  gui_start (&gui);
  harness_open (gui.window, path);
  harness_activate (gui.window, "win.show-cost");
  G_GNUC_UNUSED g_autoptr(GHashTable) state = capture (&gui, "cost-overlay");
  GraftGraphCanvas *canvas = GRAFT_GRAPH_CANVAS (harness_find_type (GTK_WIDGET (gui.window), GRAFT_TYPE_GRAPH_CANVAS));
  GraftGraph *graph = harness_shown_graph (gui.window);
  guint n_convs = 0;
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = graph->nodes->pdata[i];
      double heat = 0;
      if (strcmp (node->op, "onnx::Conv") != 0)
        continue;
      g_auto(GStrv) marks = inspect_canvas_node_marks (canvas, node);
      n_convs++;
      g_test_message ("%s: %s", node->name, marks[0]);
      g_assert_nonnull (marks[0]);
      g_assert_true (g_str_has_suffix (marks[0], "FLOPs"));
      g_assert_true (graft_graph_canvas_get_node_heat (canvas, node, &heat));
      g_assert_cmpfloat (heat, >, 0);
    }
  g_assert_cmpuint (n_convs, >, 0);
}

/* Untouched, a ranged dim starts at its minimum (2), so Run just works. */
static void
test_run_pt2_default_dim (void)
{
  g_autofree char *path = pt2_fixture ("cnn_dynamic.pt2");
  g_auto(Gui) gui = { 0 };
  g_autoptr(GHashTable) state = NULL;

  open_and_run (&gui, path, NULL);
  state = capture (&gui, "run-pt2-default-dim");
  g_assert_true (g_str_has_prefix (get (state, "run-outputs"), "linear float32[2,10] min="));
}

/* An input of the wrong shape is refused before running, naming it. */
static void
test_run_bad_input_file (void)
{
  g_autofree char *path = sample_path ();
  g_autofree char *dir = graft_test_scratch_dir ("graft-run-XXXXXX", NULL);
  g_autofree char *npy = g_build_filename (dir, "wrong.npy", NULL);
  g_autoptr(GraftRtTensor) wrong = graft_rt_tensor_new (GRAFT_DTYPE_FLOAT32, 2, (gint64[]) { 2, 5 }, NULL);
  g_autofree char *input_action = g_strconcat ("win.set-run-input::image=", npy, NULL);
  g_autoptr(GError) error = NULL;
  g_auto(Gui) gui = { 0 };
  g_autoptr(GHashTable) state = NULL;

  g_assert_true (graft_npy_write (npy, wrong, &error));
  gui_start (&gui);
  harness_open (gui.window, path);
  harness_activate (gui.window, "win.show-run");
  harness_activate (gui.window, input_action);
  harness_activate (gui.window, "win.run");
  state = capture (&gui, "run-bad-input");
  g_assert_cmpstr (get (state, "run-outputs"), ==, "");
  g_assert_nonnull (strstr (get (state, "run-status"), "image"));
}

static void
assert_file_unchanged (const char *path, const char *before, gsize before_length)
{
  g_autofree char *after = NULL;
  gsize after_length = 0;

  g_assert_true (g_file_get_contents (path, &after, &after_length, NULL));
  g_assert_cmpmem (before, before_length, after, after_length);
}

/* Closing with unsaved changes asks; saving over the opened file asks. */
static void
test_unsaved_changes_ask (void)
{
  g_autofree char *dir = NULL;
  g_autofree char *path = static_batch_copy (&dir);
  g_autofree char *save_action = g_strconcat ("win.save-as-path::", path, NULL);
  g_autofree char *before = NULL;
  gsize before_length = 0;
  g_auto(Gui) close_gui = { 0 };
  g_auto(Gui) save_gui = { 0 };
  g_autoptr(GHashTable) close_state = NULL;
  g_autoptr(GHashTable) save_state = NULL;

  g_assert_true (g_file_get_contents (path, &before, &before_length, NULL));
  gui_start (&close_gui);
  harness_open (close_gui.window, path);
  harness_activate (close_gui.window, "win.edit-operation(('make-dim-dynamic', '', 'input:0=batch'))");
  harness_activate (close_gui.window, "window.close");
  close_state = capture (&close_gui, "edit-close-asks");
  g_assert_cmpstr (get (close_state, "dialogs"), ==, "1");
  g_assert_nonnull (strstr (get (close_state, "dialog-0"), "Save Changes to “static-batch.onnx”?"));
  g_assert_cmpstr (get (close_state, "state"), ==, "model");
  gui_finish (&close_gui);

  gui_start (&save_gui);
  harness_open (save_gui.window, path);
  harness_activate (save_gui.window, "win.edit-operation(('make-dim-dynamic', '', 'input:0=batch'))");
  harness_activate (save_gui.window, save_action);
  save_state = capture (&save_gui, "edit-replace-asks");
  g_assert_nonnull (strstr (get (save_state, "dialog-0"), "Replace the Original “static-batch.onnx”?"));
  assert_file_unchanged (path, before, before_length);
}

/* A refused edit names the problem and leaves a working window (the edit
 * library puts back a copy of the graph: the lists must follow it). */
/* Make Dynamic proves the edit at other sizes on a worker and says so in
 * the toast that offers "Run with New Shape"; the edit whose baked batch
 * no rewrite can trace back is reported as failed, naming the node, and
 * offers no run. */
static void
test_edit_verified_in_toast (void)
{
  g_autofree char *dir = NULL;
  g_autofree char *path = static_batch_copy (&dir);
  g_auto(Gui) gui = { 0 };
  g_autoptr(GHashTable) state = NULL;
  g_autoptr(GdkPixbuf) pixbuf = NULL;
  GtkLabel *label;

  gui_start (&gui);
  harness_open (gui.window, path);
  harness_activate (gui.window, "win.edit-operation(('make-dim-dynamic', '', 'input:0=batch'))");
  state = capture (&gui, "edit-verified-toast");
  label = harness_find_label (GTK_WIDGET (gui.window), "verified at batch=1, ");
  g_assert_nonnull (label);
  g_assert_nonnull (strstr (gtk_label_get_text (label), "Make input:0 dynamic"));
  g_assert_nonnull (strstr (gtk_label_get_text (label), "(batch invariance ok)"));
  g_assert_true (window_says (&gui, "Run with New Shape"));
  g_assert_false (window_says (&gui, "FAILED"));
  pixbuf = load_window_screenshot (state, "edit-verified-toast");
}

static GraftDimKind
shown_input_dim_kind (Gui *gui)
{
  GraftGraphCanvas *canvas = GRAFT_GRAPH_CANVAS (harness_find_type (GTK_WIDGET (gui->window), GRAFT_TYPE_GRAPH_CANVAS));

  return ((GraftValue *) g_ptr_array_index (graft_graph_canvas_get_graph (canvas)->inputs, 0))->shape.dims[0].kind;
}

/* Make-dynamic repairs and re-infers on a worker: until it lands the model
 * is unchanged, the window busy (edits and undo wait, Cancel offered), and
 * Cancel leaves the model as it was. Applied, it undoes and redoes (the
 * redo on a worker too). */
static void
test_edit_in_background (void)
{
  g_autofree char *dir = NULL;
  g_autofree char *path = static_batch_copy (&dir);
  g_auto(Gui) gui = { 0 };
  g_autoptr(GHashTable) cancelled = NULL;
  g_autoptr(GHashTable) applied = NULL;
  g_autoptr(GHashTable) redone = NULL;

  gui_start (&gui);
  harness_open (gui.window, path);
  g_assert_cmpint (shown_input_dim_kind (&gui), ==, GRAFT_DIM_FIXED);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (gui.window), "win.edit-operation", "(sss)", "make-dim-dynamic",
                                             "", "input:0=batch"));
  /* The result comes back through the main loop, not run yet. */
  g_assert_true (window_is_checking (gui.window));
  g_assert_cmpint (shown_input_dim_kind (&gui), ==, GRAFT_DIM_FIXED);
  g_assert_cmpstr (gtk_window_get_title (GTK_WINDOW (gui.window)), ==, "static-batch.onnx — Graft");
  /* Other edits wait; Cancel is offered. */
  g_assert_false (harness_action_enabled (gui.window, "win.edit-operation(('add-node', '', ''))"));
  g_assert_true (harness_action_enabled (gui.window, "win.cancel-edit"));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (gui.window), "win.cancel-edit", NULL));
  harness_settle (gui.window);
  cancelled = capture (&gui, "edit-background-cancelled");
  g_assert_cmpstr (get (cancelled, "title"), ==, "static-batch.onnx");
  g_assert_cmpstr (get (cancelled, "can-undo"), ==, "0");
  g_assert_cmpint (shown_input_dim_kind (&gui), ==, GRAFT_DIM_FIXED);
  g_assert_true (window_says (&gui, "Edit cancelled"));
  g_assert_true (harness_action_enabled (gui.window, "win.edit-operation(('add-node', '', ''))"));
  g_assert_false (harness_action_enabled (gui.window, "win.cancel-edit"));

  harness_activate (gui.window, "win.edit-operation(('make-dim-dynamic', '', 'input:0=batch'))");
  applied = capture (&gui, "edit-background-applied");
  g_assert_cmpstr (get (applied, "title"), ==, "• static-batch.onnx");
  g_assert_cmpstr (get (applied, "can-undo"), ==, "1");
  g_assert_cmpint (shown_input_dim_kind (&gui), ==, GRAFT_DIM_SYMBOLIC);
  /* The cancelled edit's note does not stand over the next edit's outcome. */
  g_assert_false (window_says (&gui, "Edit cancelled"));
  harness_activate (gui.window, "win.undo");
  g_assert_cmpint (shown_input_dim_kind (&gui), ==, GRAFT_DIM_FIXED);
  harness_activate (gui.window, "win.redo");
  redone = capture (&gui, "edit-background-redone");
  g_assert_cmpint (shown_input_dim_kind (&gui), ==, GRAFT_DIM_SYMBOLIC);
  g_assert_cmpstr (get (redone, "can-undo"), ==, "1");
  g_assert_cmpstr (get (redone, "can-redo"), ==, "0");
}

static void
test_edit_verify_failed_in_toast (void)
{
  g_autofree char *path = generated_fixture ("make-opaque-batch-model.py", "opaque-batch.onnx");
  g_auto(Gui) gui = { 0 };
  g_autoptr(GHashTable) state = NULL;
  g_autoptr(GHashTable) details_state = NULL;
  g_autoptr(GHashTable) applied_state = NULL;
  g_autoptr(GPtrArray) dialogs = NULL;
  g_autoptr(GdkPixbuf) pixbuf = NULL;
  g_autoptr(GdkPixbuf) details_pixbuf = NULL;
  GtkLabel *label, *details;
  GtkWidget *button;

  gui_start (&gui);
  harness_open (gui.window, path);
  harness_activate (gui.window, "win.edit-operation(('make-dim-dynamic', '', 'x:0=batch'))");
  state = capture (&gui, "edit-verify-failed-toast");
  label = harness_find_label (GTK_WIDGET (gui.window), "Make x:0 dynamic");
  g_assert_nonnull (label);
  g_assert_nonnull (strstr (gtk_label_get_text (label), "FAILED at other sizes: node ‘/Reshape’ — undone"));
  g_assert_false (window_says (&gui, "Run with New Shape"));
  g_assert_false (window_says (&gui, "verified at"));
  /* A model known to be wrong does not stay: the edit was undone (and can be redone). */
  g_assert_cmpstr (get (state, "can-undo"), ==, "0");
  g_assert_cmpstr (get (state, "can-redo"), ==, "1");
  g_assert_cmpstr (get (state, "title"), ==, "opaque-batch.onnx");
  pixbuf = load_window_screenshot (state, "edit-verify-failed-toast");

  /* Details: the whole sentence, with the size and the node. */
  details = harness_find_label (GTK_WIDGET (gui.window), "Details");
  g_assert_nonnull (details);
  button = gtk_widget_get_ancestor (GTK_WIDGET (details), GTK_TYPE_BUTTON);
  g_assert_nonnull (button);
  g_assert_cmpstr (gtk_actionable_get_action_name (GTK_ACTIONABLE (button)), ==, "win.show-edit-failure");
  g_assert_true (gtk_widget_activate_action_variant (button, "win.show-edit-failure",
                                                     gtk_actionable_get_action_target_value (GTK_ACTIONABLE (button))));
  harness_settle (gui.window);
  details_state = capture (&gui, "edit-verify-failed-details");
  g_assert_nonnull (strstr (get (details_state, "dialog-0"), "The Edit Is Wrong at Other Sizes"));
  g_assert_nonnull (strstr (get (details_state, "dialog-0"), "at batch=1: node '/Reshape'"));
  g_assert_nonnull (strstr (get (details_state, "dialog-0"), "The edit was undone."));

  /* Apply Anyway: the user's call, as graft-cli edit --force. */
  dialogs = harness_list_dialogs (gui.window);
  g_assert_cmpuint (dialogs->len, ==, 1);
  g_assert_true (adw_message_dialog_has_response (g_ptr_array_index (dialogs, 0), "apply"));
  g_assert_cmpstr (adw_message_dialog_get_response_label (g_ptr_array_index (dialogs, 0), "apply"), ==,
                   "_Apply Anyway");
  details_pixbuf = load_window_screenshot (details_state, "edit-verify-failed-details");
  adw_message_dialog_response (g_ptr_array_index (dialogs, 0), "apply");
  harness_settle (gui.window);
  applied_state = capture (&gui, "edit-verify-failed-applied");
  g_assert_cmpstr (get (applied_state, "can-undo"), ==, "1");
  g_assert_cmpstr (get (applied_state, "title"), ==, "• opaque-batch.onnx");
}

static void
test_refused_edit (void)
{
  g_autofree char *dir = NULL;
  g_autofree char *path = static_batch_copy (&dir);
  g_auto(Gui) gui = { 0 };
  g_autoptr(GHashTable) state = NULL;

  gui_start (&gui);
  harness_open (gui.window, path);
  harness_activate (gui.window, "win.edit-operation(('make-dim-dynamic', '', 'nosuchinput:0=batch'))");
  harness_activate (gui.window, "win.edit-operation(('make-dim-dynamic', '', 'input:9=batch'))");
  harness_activate (gui.window, "win.show-diagnostics");
  state = capture (&gui, "edit-refused");
  g_assert_cmpstr (get (state, "title"), ==, "static-batch.onnx");
  g_assert_cmpstr (get (state, "diagnostics-count"), ==, "2");
  g_assert_cmpstr (get (state, "canvas-marked"), ==, "2");
  g_assert_true (g_str_has_prefix (get (state, "dialog-0"), "AdwMessageDialog: Could Not Change the Model — "));
  /* The reason names the input. */
  g_assert_nonnull (strstr (get (state, "dialog-0") + strlen ("AdwMessageDialog: Could Not Change the Model — "),
                            "input"));
}

/* Only ONNX and .pt2 programs are written: other formats get a reason, and no file. */
static void
test_save_refused_for_non_onnx (void)
{
  g_autofree char *weights = generated_fixture ("make-state-dict.py", "weights.pt");
  g_autofree char *dir = graft_test_scratch_dir ("graft-save-XXXXXX", NULL);
  g_autofree char *target = g_build_filename (dir, "weights.onnx", NULL);
  g_autofree char *save_action = g_strconcat ("win.save-as-path::", target, NULL);
  g_auto(Gui) gui = { 0 };
  g_autoptr(GHashTable) state = NULL;

  gui_start (&gui);
  harness_open (gui.window, weights);
  harness_activate (gui.window, save_action);
  state = capture (&gui, "save-refused-state-dict");
  g_assert_nonnull (strstr (get (state, "dialog-0"), "Cannot Save This Model — Graft saves ONNX files and torch.export programs"));
  g_assert_false (g_file_test (target, G_FILE_TEST_EXISTS));
}

/* A TorchScript model is exported: converted to ONNX and written, while
 * the window keeps the TorchScript graph. */
static void
test_export_torchscript_as_onnx (void)
{
  g_autofree char *script = generated_fixture ("make-small-cnn-script.py", "cnn-script.pt");
  g_autofree char *dir = graft_test_scratch_dir ("graft-export-XXXXXX", NULL);
  g_autofree char *target = g_build_filename (dir, "cnn.onnx", NULL);
  g_autofree char *save_action = g_strconcat ("win.save-as-path::", target, NULL);
  g_auto(Gui) gui = { 0 };
  g_autoptr(GHashTable) state = NULL;
  g_autoptr(GraftModel) exported = NULL;
  g_autoptr(GError) error = NULL;

  gui_start (&gui);
  harness_open (gui.window, script);
  harness_activate (gui.window, save_action);
  state = capture (&gui, "export-torchscript-onnx");
  g_assert_cmpstr (get (state, "title"), ==, "cnn-script.pt");
  g_assert_null (g_hash_table_lookup (state, "dialog-0"));
  exported = graft_model_load (target, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpint (graft_model_get_format (exported), ==, GRAFT_MODEL_FORMAT_ONNX);
  /* Conv (batch norm folded in), Relu, GlobalAveragePool, Flatten, Gemm */
  g_assert_cmpuint (graft_model_get_graph (exported)->nodes->len, ==, 5);
}

/* A torch.export program edited in the window is saved as .pt2 (the
 * program, not ONNX), and Save As .onnx still exports it. */
static void
test_save_pt2_as_pt2 (void)
{
  g_autofree char *path = pt2_fixture ("cnn_static.pt2");
  g_autofree char *dir = graft_test_scratch_dir ("graft-save-pt2-XXXXXX", NULL);
  g_autofree char *target = g_build_filename (dir, "edited.pt2", NULL);
  g_autofree char *onnx_target = g_build_filename (dir, "edited.onnx", NULL);
  g_autofree char *save_action = g_strconcat ("win.save-as-path::", target, NULL);
  g_autofree char *export_action = g_strconcat ("win.save-as-path::", onnx_target, NULL);
  g_auto(Gui) gui = { 0 };
  g_autoptr(GHashTable) state = NULL;
  g_autoptr(GError) error = NULL;

  gui_start (&gui);
  harness_open (gui.window, path);
  harness_activate (gui.window, "win.edit-operation(('bypass-node', 'relu_1', ''))");
  harness_activate (gui.window, save_action);
  state = capture (&gui, "save-pt2-as-pt2");
  g_assert_null (g_hash_table_lookup (state, "dialog-0"));
  g_assert_cmpstr (get (state, "title"), ==, "edited.pt2");
  g_autoptr(GraftModel) saved = graft_model_load (target, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpint (graft_model_get_format (saved), ==, GRAFT_MODEL_FORMAT_EXPORTED_PROGRAM);
  GraftGraph *graph = graft_model_get_graph (saved);
  for (guint i = 0; i < graph->nodes->len; i++)
    g_assert_cmpstr (((GraftNode *) g_ptr_array_index (graph->nodes, i))->name, !=, "relu_1");

  harness_activate (gui.window, export_action);
  g_autoptr(GraftModel) exported = graft_model_load (onnx_target, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpint (graft_model_get_format (exported), ==, GRAFT_MODEL_FORMAT_ONNX);
}

/* Pixels of the canvas close to rgb (the error red of the light style):
 * group outlines and badges. */
static guint
count_canvas_pixels (GHashTable *state, GdkPixbuf *pixbuf, guint rgb)
{
  int channels = gdk_pixbuf_get_n_channels (pixbuf);
  int stride = gdk_pixbuf_get_rowstride (pixbuf);
  const guint8 *pixels = gdk_pixbuf_read_pixels (pixbuf);
  int bounds[4];
  guint n = 0;

  parse_bounds (state, "canvas-bounds", bounds);
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
  g_auto(Gui) gui = { 0 };
  g_autoptr(GHashTable) first = NULL;
  g_autoptr(GHashTable) last = NULL;
  g_autoptr(GdkPixbuf) first_picture = NULL;
  g_autoptr(GdkPixbuf) last_picture = NULL;
  guint red_first, red_last;

  gui_start (&gui);
  harness_open (gui.window, path);
  first = capture (&gui, "marks-1-collapsed-groups");
  harness_activate (gui.window, "win.select-node::/block1/FancyNorm_1");
  last = capture (&gui, "marks-2-group-opened");
  g_assert_cmpstr (get (last, "diagnostics-count"), ==, "5");
  /* First view: no flagged node has a box; block1 hides 3, block2 2. */
  g_assert_cmpstr (get (first, "canvas-marked"), ==, "0");
  g_assert_cmpstr (get (first, "canvas-marked-groups"), ==, "2");
  g_assert_cmpstr (get (first, "canvas-marked-hidden"), ==, "5");
  /* block1 opened: its 3 nodes are marked themselves, block2 still hides 2. */
  g_assert_cmpstr (get (last, "selected-node"), ==, "/block1/FancyNorm_1");
  g_assert_cmpstr (get (last, "canvas-marked"), ==, "3");
  g_assert_cmpstr (get (last, "canvas-marked-groups"), ==, "1");
  g_assert_cmpstr (get (last, "canvas-marked-hidden"), ==, "2");

  /* Drawn: the error red of the outlines and badges is on the canvas. */
  first_picture = load_window_screenshot (first, "marks-1-collapsed-groups");
  red_first = count_canvas_pixels (first, first_picture, 0xe01b24);
  g_test_message ("error-red canvas pixels: first view %u", red_first);
  g_assert_cmpuint (red_first, >, 150);
  last_picture = load_window_screenshot (last, "marks-2-group-opened");
  red_last = count_canvas_pixels (last, last_picture, 0xe01b24);
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
  g_autofree char *save_as_action = g_strconcat ("win.save-as-path::", saved, NULL);
  g_autofree char *before = NULL;
  gsize before_length = 0;
  g_auto(Gui) gui = { 0 };
  g_autoptr(GHashTable) saved_as = NULL;
  g_autoptr(GHashTable) saved_again = NULL;
  g_autoptr(GHashTable) asked = NULL;

  g_assert_true (g_file_get_contents (path, &before, &before_length, NULL));
  gui_start (&gui);
  harness_open (gui.window, path);
  harness_activate (gui.window, "win.edit-operation(('make-dim-dynamic', '', 'input:0=batch'))");
  harness_activate (gui.window, save_as_action);
  saved_as = capture (&gui, "save-as-1-saved");
  /* Saved as: everything names the new file, which holds the edit. */
  g_assert_cmpstr (get (saved_as, "title"), ==, "renamed.onnx");
  g_assert_cmpstr (get (saved_as, "sidebar-file"), ==, saved);
  assert_first_dim_named (saved, "batch");

  /* Undone and saved: written to the new file at once, no question. */
  harness_activate (gui.window, "win.undo");
  harness_activate (gui.window, "win.save");
  saved_again = capture (&gui, "save-as-2-saved-again");
  g_assert_cmpstr (get (saved_again, "dialogs"), ==, "0");
  g_assert_cmpstr (get (saved_again, "title"), ==, "renamed.onnx");
  g_assert_cmpstr (get (saved_again, "sidebar-file"), ==, saved);
  check_with_onnx ((const char *[]) { saved, NULL }, "2");

  /* Save As onto it: the question is about the new file. */
  harness_activate (gui.window, save_as_action);
  asked = capture (&gui, "save-as-3-asks");
  g_assert_cmpstr (get (asked, "dialogs"), ==, "1");
  g_assert_nonnull (strstr (get (asked, "dialog-0"), "Replace the Original “renamed.onnx”?"));
  /* The file first opened was never written. */
  assert_file_unchanged (path, before, before_length);
}

int
main (int argc, char *argv[])
{
  harness_init_environment ();
  gtk_test_init (&argc, &argv, NULL);

  g_test_add_func ("/gui/window/sample-select-node", test_sample_select_node);
  g_test_add_func ("/gui/window/empty-state", test_empty_state);
  g_test_add_func ("/gui/window/check-in-background", test_check_in_background);
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
  g_test_add_func ("/gui/window/run-fused-timings", test_run_fused_timings);
  g_test_add_func ("/gui/window/run-bad-input-file", test_run_bad_input_file);
  g_test_add_func ("/gui/window/unsaved-changes-ask", test_unsaved_changes_ask);
  g_test_add_func ("/gui/window/refused-edit", test_refused_edit);
  g_test_add_func ("/gui/window/edit-verified-in-toast", test_edit_verified_in_toast);
  g_test_add_func ("/gui/window/edit-verify-failed-in-toast", test_edit_verify_failed_in_toast);
  g_test_add_func ("/gui/window/edit-in-background", test_edit_in_background);
  g_test_add_func ("/gui/window/save-refused-for-non-onnx", test_save_refused_for_non_onnx);
  g_test_add_func ("/gui/window/export-torchscript-as-onnx", test_export_torchscript_as_onnx);
  g_test_add_func ("/gui/window/marks-in-collapsed-groups", test_marks_in_collapsed_groups);
  g_test_add_func ("/gui/window/save-as-becomes-the-file", test_save_as_becomes_the_file);
  g_test_add_func ("/gui/window/run-pt2-range", test_run_pt2_range);
  g_test_add_func ("/gui/window/save-pt2-as-pt2", test_save_pt2_as_pt2);
  g_test_add_func ("/gui/window/run-pt2-default-dim", test_run_pt2_default_dim);
  g_test_add_func ("/gui/window/run-nan-source", test_run_nan_source);
  g_test_add_func ("/gui/window/cost-overlay", test_cost_overlay);
  return g_test_run ();
}
