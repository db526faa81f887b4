/* Issue 19's broken items, in the real window: F8 pressed on the X server
 * (xdotool) after a click on the canvas opens the Problems panel and the
 * shortcuts window lists it; Expand All keeps a readable zoom at the top of
 * the graph; several windows open, expand and close models at once (their
 * layouts run in parallel workers, and Graphviz is not thread-safe). */
#include <gdk/x11/gdkx.h>
#include <string.h>
#include <glib/gstdio.h>

#include "gui-fixtures.h"
#include "xdotool-input.h"
#include "window-harness.h"
#include "widgets/graph-canvas.h"
#include "widgets/node-sidebar.h"
#include "../test-scratch.h"

static const char *
get (GHashTable *state, const char *key)
{
  return g_hash_table_lookup (state, key);
}

static GraftGraphCanvas *
find_canvas (GraftWindow *window)
{
  return GRAFT_GRAPH_CANVAS (harness_find_type (GTK_WIDGET (window), GRAFT_TYPE_GRAPH_CANVAS));
}

/* A new window showing the fixture script makes. */
static GraftWindow *
open_generated (const char *script, const char *file)
{
  GraftWindow *window = harness_window_new ();
  g_autofree char *path = generated_fixture (script, file);

  harness_open (window, path);
  return window;
}

static gboolean
says (GraftWindow *window, const char *text)
{
  return harness_find_label (GTK_WIDGET (window), text) != NULL;
}

/* A click in the middle of the canvas, as the user does before a key. */
static void
click_canvas (GraftWindow *window)
{
  GtkWidget *canvas = GTK_WIDGET (find_canvas (window));

  xdotool_click_widget (window, canvas, gtk_widget_get_width (canvas) / 2.0, gtk_widget_get_height (canvas) - 30.0);
}

static void
press_key (GraftWindow *window, const char *key)
{
  const char *commands[] = { "key", key, NULL };

  xdotool_run (window, commands);
}

static gboolean
canvas_has_focus (GraftWindow *window)
{
  GtkWidget *focus = gtk_window_get_focus (GTK_WINDOW (window));

  return focus != NULL && (focus == GTK_WIDGET (find_canvas (window))
                           || gtk_widget_is_ancestor (focus, GTK_WIDGET (find_canvas (window))));
}

static void
test_f8_opens_problems (void)
{
  GraftWindow *window;
  g_autofree char *path = NULL;
  g_autoptr(GHashTable) before = NULL;
  g_autoptr(GHashTable) opened = NULL;
  g_autoptr(GHashTable) closed = NULL;

  if (!xdotool_available ())
    return;
  window = harness_window_new ();
  path = generated_fixture ("make-grouped-model.py", "grouped.onnx");
  harness_open (window, path);
  before = harness_window_state (window);
  g_assert_cmpstr (get (before, "diagnostics-visible"), ==, "0");
  g_assert_cmpstr (get (before, "diagnostics-count"), !=, "0");

  /* The canvas sits in two GtkPaned, which bind F8 for themselves. */
  click_canvas (window);
  g_assert_true (canvas_has_focus (window));
  press_key (window, "F8");
  harness_screenshot (window, "viewer-f8-problems");
  opened = harness_window_state (window);
  g_assert_cmpstr (get (opened, "diagnostics-visible"), ==, "1");
  g_assert_cmpuint (atoi (get (opened, "diagnostics-shown")), >, 0);

  press_key (window, "F8");
  closed = harness_window_state (window);
  g_assert_cmpstr (get (closed, "diagnostics-visible"), ==, "0");
  harness_window_close (window);
}

/* Ctrl+. in the Find entry zooms to the match (its tooltip's promise)
 * instead of opening the entry's emoji picker. */
static void
test_find_ctrl_period (void)
{
  GraftWindow *window;
  g_autofree char *sample = g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "data", "samples", "tiny-cnn.onnx", NULL);
  GraftGraphCanvas *canvas;
  double zoom_before;

  if (!xdotool_available ())
    return;
  window = harness_window_new ();
  canvas = find_canvas (window);
  harness_open (window, sample);
  harness_activate (window, "win.zoom-fit");
  zoom_before = graft_graph_canvas_get_zoom (canvas);
  harness_activate (window, "win.find");
  {
    const char *commands[] = { "windowfocus", "WINDOW", "key", "--delay", "5", "G", "e", "m", "m", "Return", NULL };
    xdotool_run (window, commands);
  }
  /* Enter, sent right after the typing, acted on what was typed. */
  g_test_message ("find entry: '%s'",
                  gtk_editable_get_text (GTK_EDITABLE (harness_find_type (GTK_WIDGET (window), GTK_TYPE_SEARCH_ENTRY))));
  g_assert_nonnull (graft_graph_canvas_get_selected_node (canvas));
  harness_activate (window, "win.zoom-fit");
  harness_activate (window, "win.find");
  press_key (window, "ctrl+period");
  harness_screenshot (window, "viewer-find-ctrl-period");
  g_assert_null (harness_find_type (GTK_WIDGET (window), GTK_TYPE_EMOJI_CHOOSER));
  g_assert_cmpfloat (graft_graph_canvas_get_zoom (canvas), >, zoom_before * 1.2);
  harness_window_close (window);
}

/* The mouse wheel, sent by the X server over the canvas: it scrolls, Ctrl
 * makes it zoom; the "Mouse Wheel Zooms" preference brings back zooming. */
static void
test_wheel_scrolls (void)
{
  GraftWindow *window;
  GraftGraphCanvas *canvas;
  GraftRect before, after, bounds;
  double zoom;

  if (!xdotool_available ())
    return;
  window = open_generated ("make-grouped-model.py", "grouped.onnx");
  canvas = find_canvas (window);
  harness_activate (window, "win.expand-all");
  click_canvas (window);
  zoom = graft_graph_canvas_get_zoom (canvas);
  g_assert_true (graft_graph_canvas_get_view (canvas, &before, &bounds));
  {
    const char *commands[] = { "click", "--repeat", "3", "5", NULL };
    xdotool_run (window, commands);
  }
  g_assert_true (graft_graph_canvas_get_view (canvas, &after, &bounds));
  g_test_message ("wheel down ×3: view y %.0f → %.0f, zoom %.2f → %.2f", before.y, after.y, zoom,
                  graft_graph_canvas_get_zoom (canvas));
  g_assert_cmpfloat (graft_graph_canvas_get_zoom (canvas), ==, zoom);
  g_assert_cmpfloat (after.y, >, before.y + 50);
  {
    const char *commands[] = { "keydown", "ctrl", "click", "4", "keyup", "ctrl", NULL };
    xdotool_run (window, commands);
  }
  harness_screenshot (window, "viewer-wheel");
  g_assert_cmpfloat (graft_graph_canvas_get_zoom (canvas), >, zoom * 1.05);

  /* The preference: the plain wheel zooms again. */
  zoom = graft_graph_canvas_get_zoom (canvas);
  harness_activate (window, "win.wheel-zooms");
  {
    const char *commands[] = { "click", "5", NULL };
    xdotool_run (window, commands);
  }
  g_assert_cmpfloat (graft_graph_canvas_get_zoom (canvas), <, zoom / 1.05);
  harness_window_close (window);
}

/* The shortcuts window lists every key the tooltips promise. */
static void
test_shortcuts_window_lists_f8 (void)
{
  g_autoptr(GtkBuilder) builder = gtk_builder_new_from_resource ("/org/graft/Graft/gtk/help-overlay.ui");
  GtkWidget *overlay = GTK_WIDGET (gtk_builder_get_object (builder, "help_overlay"));
  g_autoptr(GString) keys = g_string_new (NULL);
  gboolean found = FALSE;
  GSList *objects = gtk_builder_get_objects (builder);

  for (GSList *l = objects; l != NULL; l = l->next)
    if (GTK_IS_SHORTCUTS_SHORTCUT (l->data))
      {
        g_autofree char *accelerator = NULL;
        g_autofree char *title = NULL;

        g_object_get (l->data, "accelerator", &accelerator, "title", &title, NULL);
        g_string_append_printf (keys, "%s=%s; ", title, accelerator != NULL ? accelerator : "");
        if (g_strcmp0 (accelerator, "F8") == 0)
          found = strstr (title, "problems") != NULL;
      }
  g_slist_free (objects);
  g_test_message ("shortcuts: %s", keys->str);
  g_assert_true (found);
  gtk_window_destroy (GTK_WINDOW (overlay));
}

/* ---------- nothing to draw ---------- */

/* Whether a button bound to detailed_action would be sensitive. */
static gboolean
action_is_enabled (GraftWindow *window, const char *detailed_action)
{
  GtkWidget *popover = gtk_popover_new ();
  GtkWidget *probe = gtk_button_new ();
  gboolean enabled;

  gtk_actionable_set_detailed_action_name (GTK_ACTIONABLE (probe), detailed_action);
  gtk_popover_set_child (GTK_POPOVER (popover), probe);
  gtk_widget_set_parent (popover, GTK_WIDGET (window));
  enabled = gtk_widget_get_sensitive (probe);
  gtk_widget_unparent (popover);
  return enabled;
}

/* A state_dict opens as its list of tensors; a picture of it would be
 * blank, so Export is off (graft-cli render refuses it too). */
static void
test_state_dict_has_no_export (void)
{
  GraftWindow *window = harness_window_new ();
  g_autofree char *weights = generated_fixture ("make-state-dict.py", "weights.pt");
  g_autofree char *sample = g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "data", "samples", "tiny-cnn.onnx", NULL);

  harness_open (window, weights);
  g_assert_false (action_is_enabled (window, "win.export"));
  g_assert_false (action_is_enabled (window, "win.export-to::'/tmp/x.png'"));
  harness_open (window, sample);
  g_assert_true (action_is_enabled (window, "win.export"));
  harness_window_close (window);
}

/* ---------- Expand All on a big graph ---------- */

static void
test_expand_all_stays_readable (void)
{
  GraftWindow *window = harness_window_new ();
  g_autofree char *path = generated_fixture ("make-grouped-model.py", "grouped.onnx");
  GraftGraphCanvas *canvas = find_canvas (window);
  GraftRect visible, bounds;

  harness_open (window, path);
  harness_activate (window, "win.expand-all");
  harness_screenshot (window, "viewer-expand-all");
  g_assert_true (graft_graph_canvas_get_view (canvas, &visible, &bounds));
  g_test_message ("zoom %.2f, scene %.0f×%.0f, view at %.0f,%.0f", graft_graph_canvas_get_zoom (canvas),
                  bounds.width, bounds.height, visible.x, visible.y);
  /* 320 nodes in a chain: fitting them all would be a thin strip. */
  g_assert_cmpfloat (bounds.height * graft_graph_canvas_get_zoom (canvas), >, visible.height * 3);
  g_assert_cmpfloat (graft_graph_canvas_get_zoom (canvas), >=, 0.9);
  /* At the top of the graph, which is in view across. */
  g_assert_cmpfloat (visible.y, <=, bounds.y + 1);
  g_assert_cmpfloat (visible.y + visible.height, >, bounds.y);

  /* Ctrl+0 still fits everything when asked. */
  harness_activate (window, "win.zoom-fit");
  g_assert_true (graft_graph_canvas_get_view (canvas, &visible, &bounds));
  g_assert_cmpfloat (graft_graph_canvas_get_zoom (canvas), <, 0.9);
  harness_window_close (window);
}

/* ---------- scripted TorchScript ---------- */


/* Scripted in eval mode: BatchNorm's `if self.training:` branches are dead
 * and not counted; a prim::If left (marked as control flow) still looks
 * selected when selected; labels use the aten argument names. */
static void
test_scripted_if_selected (void)
{
  GraftWindow *window = open_generated ("make-scripted-conv-model.py", "conv-scripted.pt");
  g_autoptr(GHashTable) state = NULL;

  harness_activate (window, "win.expand-all");
  harness_activate (window, "win.select-node::bn/If_5");
  harness_screenshot (window, "viewer-scripted-if-selected");
  state = harness_window_state (window);
  g_test_message ("problems: %s", get (state, "diagnostics"));
  g_assert_cmpstr (get (state, "selected-node"), ==, "bn/If_5");
  g_assert_cmpstr (get (state, "diagnostics-count"), ==, "2");
  /* Where it came from in torch's Python (its debug records), as Netron shows it. */
  g_assert_true (says (window, "Python Source"));
  g_assert_true (says (window, "torch/nn/modules/batchnorm.py:"));
  harness_window_close (window);
}

/* torch.save(model): the module tree and its tensors, and a banner that
 * says there is no graph and how to get one. */
static void
test_pickled_module (void)
{
  GraftWindow *window = open_generated ("make-pickled-module.py", "pickled-module.pt");
  g_autoptr(GHashTable) state = NULL;

  harness_screenshot (window, "viewer-pickled-module");
  state = harness_window_state (window);
  g_assert_cmpstr (get (state, "state"), ==, "model");
  g_assert_cmpstr (get (state, "no-graph"), ==, "1");
  g_assert_true (says (window, "A Pickled Module Has No Graph"));
  g_assert_true (says (window, "torch.jit.trace"));
  g_assert_true (says (window, "make_conv_model.ConvNet"));
  g_assert_true (says (window, "bn.running_var"));
  g_assert_true (says (window, "torch.nn.modules.batchnorm.BatchNorm2d"));
  harness_window_close (window);
}

/* An ExecuTorch program delegated to XNNPACK (a program executorch 1.5.1
 * wrote, one of the fuzz seeds): the window shows it, the title says what
 * it is, and the delegate call is one node whose details name the backend
 * and the payload's size. */
static void
test_executorch_delegate (void)
{
  const char *source = g_getenv ("GRAFT_SOURCE_DIR");
  g_autofree char *path = g_build_filename (source ? source : ".", "tests", "fuzz", "corpus", "torch-archive",
                                            "executorch-mlp_xnnpack.pte", NULL);
  GraftWindow *window = harness_window_new ();
  GraftGraphCanvas *canvas = GRAFT_GRAPH_CANVAS (harness_find_type (GTK_WIDGET (window), GRAFT_TYPE_GRAPH_CANVAS));
  g_autoptr(GHashTable) state = NULL;
  GraftNode *delegate = NULL;

  harness_open (window, path);
  harness_activate (window, "win.zoom-fit");
  harness_settle (window);
  state = harness_window_state (window);
  g_assert_cmpstr (get (state, "state"), ==, "model");
  g_test_message ("subtitle: %s", get (state, "subtitle"));
  g_assert_nonnull (strstr (get (state, "subtitle"), "ExecuTorch program"));
  GraftGraph *graph = graft_graph_canvas_get_graph (canvas);
  for (guint i = 0; i < graph->nodes->len; i++)
    if (g_str_equal (((GraftNode *) graph->nodes->pdata[i])->op, "executorch_delegate::XnnpackBackend"))
      delegate = graph->nodes->pdata[i];
  g_assert_nonnull (delegate);
  graft_graph_canvas_select_node (canvas, delegate);
  harness_settle (window);
  g_assert_true (says (window, "payload_bytes"));
  g_assert_true (says (window, "1664"));
  harness_screenshot (window, "viewer-executorch-delegate");
  harness_window_close (window);
}

/* ---------- edits ---------- */

/* The toasts of Undo and Redo say which one happened. */
static void
test_undo_redo_toasts (void)
{
  GraftWindow *window = open_generated ("make-static-batch-model.py", "static-batch.onnx");

  harness_activate (window, "win.edit-operation(('make-dim-dynamic', '', 'input:0=batch'))");
  harness_activate (window, "win.undo");
  g_assert_true (says (window, "Undone: "));
  harness_activate (window, "win.redo");
  harness_screenshot (window, "viewer-redo-toast");
  g_assert_true (says (window, "Redone: "));
  harness_window_close (window);
}

static gboolean
has_placeholder (GtkWidget *widget, gconstpointer text)
{
  return GTK_IS_ENTRY (widget) && g_strcmp0 (gtk_entry_get_placeholder_text (GTK_ENTRY (widget)), text) == 0;
}

static GtkWidget *
find_entry_with_placeholder (GtkWidget *root, const char *text)
{
  if (has_placeholder (root, text))
    return root;
  for (GtkWidget *child = gtk_widget_get_first_child (root); child != NULL; child = gtk_widget_get_next_sibling (child))
    {
      GtkWidget *found = find_entry_with_placeholder (child, text);

      if (found != NULL)
        return found;
    }
  return NULL;
}

/* Dims of an image input (NCHW) are offered as channels, height and width,
 * not dim 1 as "sequence". */
static void
test_image_dim_names (void)
{
  GraftWindow *window = harness_window_new ();
  g_autofree char *sample = g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "data", "samples", "tiny-cnn.onnx", NULL);

  harness_open (window, sample);
  harness_activate (window, "win.select-value::image");
  harness_screenshot (window, "viewer-image-dim-names");
  g_assert_nonnull (find_entry_with_placeholder (GTK_WIDGET (window), "channels"));
  g_assert_nonnull (find_entry_with_placeholder (GTK_WIDGET (window), "height"));
  g_assert_nonnull (find_entry_with_placeholder (GTK_WIDGET (window), "width"));
  g_assert_null (find_entry_with_placeholder (GTK_WIDGET (window), "sequence"));
  harness_window_close (window);
}

/* Save As and Export start in the model's folder, not the folder Graft
 * was started in. */
static void
test_choosers_start_beside_model (void)
{
  g_autofree char *fixture = generated_fixture ("make-static-batch-model.py", "static-batch.onnx");
  g_autofree char *dir = graft_test_scratch_dir ("graft-save-as-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "model_copy.onnx", NULL);
  g_autofree char *contents = NULL;
  gsize length;
  const char *actions[] = { "win.save-as", "win.export" };
  GraftWindow *window;

  g_autofree char *launch_dir = g_get_current_dir ();

  g_assert_true (g_file_get_contents (fixture, &contents, &length, NULL));
  g_assert_true (g_file_set_contents (path, contents, length, NULL));
  g_assert_cmpstr (launch_dir, !=, dir);
  window = harness_window_new ();
  harness_open (window, path);
  for (guint i = 0; i < G_N_ELEMENTS (actions); i++)
    {
      g_autoptr(GPtrArray) dialogs = NULL;
      g_autoptr(GFile) folder = NULL;
      g_autofree char *folder_path = NULL;
      g_autofree char *shot = g_strdup_printf ("viewer-chooser-%u", i);

      harness_activate (window, actions[i]);
      harness_screenshot (window, shot);
      dialogs = harness_list_dialogs (window);
      g_assert_cmpuint (dialogs->len, ==, 1);
      g_assert_true (GTK_IS_FILE_CHOOSER (g_ptr_array_index (dialogs, 0)));
      folder = gtk_file_chooser_get_current_folder (GTK_FILE_CHOOSER (g_ptr_array_index (dialogs, 0)));
      folder_path = folder != NULL ? g_file_get_path (folder) : NULL;
      g_assert_cmpstr (folder_path, ==, dir);
      gtk_window_destroy (g_ptr_array_index (dialogs, 0));
      harness_settle (window);
    }
  harness_window_close (window);
  g_unlink (path);
  g_rmdir (dir);
}

/* The details of a newly opened model start at the top. */
static void
test_sidebar_scroll_resets (void)
{
  GraftWindow *window = open_generated ("make-grouped-model.py", "grouped.onnx");
  g_autofree char *sample = g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "data", "samples", "tiny-cnn.onnx", NULL);
  GtkWidget *sidebar = harness_find_type (GTK_WIDGET (window), GRAFT_TYPE_NODE_SIDEBAR);
  GtkScrolledWindow *scroller = GTK_SCROLLED_WINDOW (harness_find_type (sidebar, GTK_TYPE_SCROLLED_WINDOW));
  GtkAdjustment *adjustment = gtk_scrolled_window_get_vadjustment (scroller);

  g_assert_cmpfloat (gtk_adjustment_get_upper (adjustment), >, gtk_adjustment_get_page_size (adjustment) + 100);
  gtk_adjustment_set_value (adjustment, gtk_adjustment_get_upper (adjustment));
  harness_settle (window);
  g_assert_cmpfloat (gtk_adjustment_get_value (adjustment), >, 100);
  harness_open (window, sample);
  harness_screenshot (window, "viewer-sidebar-scroll-reset");
  g_assert_cmpfloat (gtk_adjustment_get_value (adjustment), ==, 0);
  harness_window_close (window);
}

/* An edit (and its undo) keeps the groups the user had opened. */
static void
test_edit_keeps_expanded_groups (void)
{
  GraftWindow *window = open_generated ("make-grouped-model.py", "grouped.onnx");
  GraftGraphCanvas *canvas = find_canvas (window);
  g_auto(GStrv) before = NULL;
  g_auto(GStrv) after_edit = NULL;
  g_auto(GStrv) after_undo = NULL;

  /* Selecting a node inside block2 opens it. */
  harness_activate (window, "win.select-node::/block2/Relu_40");
  before = graft_graph_canvas_dup_expanded_groups (canvas);
  g_assert_true (g_strv_contains ((const char *const *) before, "block2"));
  harness_activate (window, "win.edit-operation(('make-dim-dynamic', '', 'x:1=features'))");
  harness_screenshot (window, "viewer-edit-keeps-groups");
  after_edit = graft_graph_canvas_dup_expanded_groups (canvas);
  g_assert_true (g_strv_contains ((const char *const *) after_edit, "block2"));
  harness_activate (window, "win.undo");
  after_undo = graft_graph_canvas_dup_expanded_groups (canvas);
  g_assert_true (g_strv_contains ((const char *const *) after_undo, "block2"));
  harness_window_close (window);
}

/* ---------- Recent Models ---------- */

typedef struct {
  GraftWindow *window;
  const char *expected;
} RecentWait;

static gboolean
recent_menu_reads (gpointer data)
{
  RecentWait *wait = data;
  g_autoptr(GHashTable) state = harness_window_state (wait->window);

  return g_strcmp0 (get (state, "recent"), wait->expected) == 0;
}

/* Names keep their underscores (a menu label takes "_" as a mnemonic mark,
 * written "__" for a plain one), and a file that fails to open leaves the
 * list. */
static void
test_recent_models_papercuts (void)
{
  g_autofree char *sample = g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "data", "samples", "tiny-cnn.onnx", NULL);
  g_autofree char *dir = graft_test_scratch_dir ("graft-recent-XXXXXX", NULL);
  g_autofree char *good = g_build_filename (dir, "resnet18_traced_v2.onnx", NULL);
  g_autofree char *contents = NULL;
  gsize length;
  GraftWindow *window;
  RecentWait wait;

  gtk_recent_manager_purge_items (gtk_recent_manager_get_default (), NULL);
  g_assert_true (g_file_get_contents (sample, &contents, &length, NULL));
  g_assert_true (g_file_set_contents (good, contents, length, NULL));
  window = harness_window_new ();
  harness_open (window, good);
  wait = (RecentWait) { window, "resnet18__traced__v2.onnx" };
  harness_wait_for (recent_menu_reads, &wait);
  {
    /* What the popover shows for that label. */
    g_autoptr(GtkWidget) label = g_object_ref_sink (gtk_label_new_with_mnemonic (wait.expected));
    g_assert_cmpstr (gtk_label_get_text (GTK_LABEL (label)), ==, "resnet18_traced_v2.onnx");
  }
  harness_window_close (window);

  /* The file breaks; opened from the list again, it fails and goes. */
  g_assert_true (g_file_set_contents (good, "not a model at all", -1, NULL));
  window = harness_window_new ();
  {
    g_autoptr(GFile) file = g_file_new_for_path (good);
    g_autofree char *uri = g_file_get_uri (file);
    g_autoptr(GHashTable) state = NULL;

    gtk_widget_activate_action (GTK_WIDGET (window), "win.open-recent", "s", uri);
    harness_settle (window);
    harness_screenshot (window, "viewer-recent-failed");
    state = harness_window_state (window);
    g_assert_cmpstr (get (state, "state"), ==, "error");
  }
  wait = (RecentWait) { window, "No Recent Models" };
  harness_wait_for (recent_menu_reads, &wait);
  harness_window_close (window);
  g_unlink (good);
  g_rmdir (dir);
}

/* ---------- several windows at once ---------- */

static gboolean
window_is_gone (gpointer data)
{
  return *(gpointer *) data == NULL;
}

/* Opens, expands and closes models in several windows without waiting for
 * one to finish before the next starts, so that their layouts (worker
 * threads, Graphviz underneath) overlap: what the crash seen once in
 * Graphviz's dot plugin needed. */
static void
test_concurrent_windows (void)
{
  const char *scripts[][2] = {
    { "make-grouped-model.py", "grouped.onnx" },
    { "make-if-model.py", "if-model.onnx" },
    { "make-static-batch-model.py", "static-batch.onnx" },
  };
  g_autofree char *sample = g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "data", "samples", "tiny-cnn.onnx", NULL);
  g_autoptr(GPtrArray) paths = g_ptr_array_new_with_free_func (g_free);

  for (guint i = 0; i < G_N_ELEMENTS (scripts); i++)
    g_ptr_array_add (paths, generated_fixture (scripts[i][0], scripts[i][1]));
  g_ptr_array_add (paths, g_strdup (sample));

  for (guint round = 0; round < 3; round++)
    {
      GraftWindow *windows[4];
      gpointer weak[4];

      for (guint i = 0; i < G_N_ELEMENTS (windows); i++)
        {
          g_autoptr(GFile) file = g_file_new_for_path (g_ptr_array_index (paths, (i + round) % paths->len));

          windows[i] = harness_window_new ();
          graft_window_open_file (windows[i], file);
        }
      /* Each one's expansion as soon as its model is on screen, while the
       * others still load or lay out. */
      for (guint i = 0; i < G_N_ELEMENTS (windows); i++)
        {
          harness_settle (windows[i]);
          gtk_widget_activate_action (GTK_WIDGET (windows[i]), "win.expand-all", NULL);
        }
      /* Closed in the middle of their layouts, in the order of the round. */
      for (guint i = 0; i < G_N_ELEMENTS (windows); i++)
        {
          guint k = (i + round) % G_N_ELEMENTS (windows);

          weak[k] = windows[k];
          g_object_add_weak_pointer (G_OBJECT (windows[k]), &weak[k]);
          if (i % 2 == 1)
            harness_settle (windows[k]);
          gtk_window_destroy (GTK_WINDOW (windows[k]));
        }
      for (guint i = 0; i < G_N_ELEMENTS (windows); i++)
        harness_wait_for (window_is_gone, &weak[i]);
    }
}

int
main (int argc, char *argv[])
{
  harness_init_environment ();
  gtk_test_init (&argc, &argv, NULL);

  g_test_add_func ("/gui/viewer/f8-opens-problems", test_f8_opens_problems);
  g_test_add_func ("/gui/viewer/executorch-delegate", test_executorch_delegate);
  g_test_add_func ("/gui/viewer/find-ctrl-period", test_find_ctrl_period);
  g_test_add_func ("/gui/viewer/wheel-scrolls", test_wheel_scrolls);
  g_test_add_func ("/gui/viewer/shortcuts-window-lists-f8", test_shortcuts_window_lists_f8);
  g_test_add_func ("/gui/viewer/state-dict-has-no-export", test_state_dict_has_no_export);
  g_test_add_func ("/gui/viewer/expand-all-stays-readable", test_expand_all_stays_readable);
  g_test_add_func ("/gui/viewer/scripted-if-selected", test_scripted_if_selected);
  g_test_add_func ("/gui/viewer/pickled-module", test_pickled_module);
  g_test_add_func ("/gui/viewer/undo-redo-toasts", test_undo_redo_toasts);
  g_test_add_func ("/gui/viewer/image-dim-names", test_image_dim_names);
  g_test_add_func ("/gui/viewer/choosers-start-beside-model", test_choosers_start_beside_model);
  g_test_add_func ("/gui/viewer/sidebar-scroll-resets", test_sidebar_scroll_resets);
  g_test_add_func ("/gui/viewer/edit-keeps-expanded-groups", test_edit_keeps_expanded_groups);
  g_test_add_func ("/gui/viewer/recent-models-papercuts", test_recent_models_papercuts);
  g_test_add_func ("/gui/viewer/concurrent-windows", test_concurrent_windows);
  return g_test_run ();
}
