/* Issue 37's first-time walk through the real window, in-process: what
 * the window said wrongly or misleadingly (a reload offered for its own
 * Save As, actions active with no model), edits that keep the place, and
 * the papercuts. Screenshots go to BUILD/tests/gui/screenshots. */
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>

#include "fixtures.h"
#include "gui-fixtures.h"
#include "../test-labels.h"
#include "ir/graph-surgery.h"
#include "widgets/graph-canvas.h"
#include "window-harness.h"
#include "xdotool-input.h"
#include "../test-scratch.h"

static char *
sample_path (const char *name)
{
  return g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "data", "samples", name, NULL);
}

/* Opens a copy of the sample tiny-cnn.onnx made in a new scratch folder
 * (*dir); returns the copy's path. */
static char *
open_scratch_copy (GraftWindow *window, char **dir)
{
  g_autofree char *sample = sample_path ("tiny-cnn.onnx");
  g_autofree char *contents = NULL;
  gsize length;
  char *opened;

  *dir = graft_test_scratch_dir ("graft-walk-XXXXXX", NULL);
  opened = g_build_filename (*dir, "tiny-cnn.onnx", NULL);
  g_assert_true (g_file_get_contents (sample, &contents, &length, NULL));
  g_assert_true (g_file_set_contents (opened, contents, (gssize) length, NULL));
  harness_open (window, opened);
  return opened;
}

/* Save As writes a new file and the window watches it from then on: the
 * write's own (delayed) inotify events are no change on disk. */
static void
test_save_as_is_no_change_on_disk (void)
{
  GraftWindow *window = harness_window_new ();
  g_autofree char *dir = NULL;
  /* Saved beside the file it was opened from: one folder watch for both. */
  g_autofree char *opened = open_scratch_copy (window, &dir);
  g_autofree char *saved = g_build_filename (dir, "copy.onnx", NULL);
  g_autofree char *save_action = g_strconcat ("win.save-as-path::", saved, NULL);

  for (int round = 0; round < 2; round++)
    {
      /* Once to a new file, once over the file it now shows (Save). */
      harness_activate (window, round == 0 ? save_action : "win.save");
      harness_wait_ms (4000);   /* GIO's delayed inotify events, if any */
      harness_settle (window);
      harness_screenshot (window, round == 0 ? "walk-save-as" : "walk-save-again");
      g_assert_nonnull (harness_find_label (GTK_WIDGET (window), "Saved “copy.onnx”"));
      g_assert_null (harness_find_label (GTK_WIDGET (window), "changed on disk"));
    }
  harness_window_close (window);
  g_unlink (saved);
  g_unlink (opened);
  g_rmdir (dir);
}

/* The same through the Save As dialog, as a user types it. */
static void
test_save_as_typed (void)
{
  GraftWindow *window;
  g_autofree char *dir = NULL, *opened = NULL, *saved = NULL;
  /* xdotool's type takes every argument after it: three runs. */
  const char *open_dialog[] = { "windowfocus", "WINDOW", "key", "ctrl+shift+s", "sleep", "2", "key", "ctrl+a", NULL };
  const char *type_name[] = { "type", "--delay", "10", "typed.onnx", NULL };
  const char *save[] = { "sleep", "0.3", "key", "Return", "sleep", "4", NULL };

  if (!xdotool_available ())
    return;
  window = harness_window_new ();
  opened = open_scratch_copy (window, &dir);
  saved = g_build_filename (dir, "typed.onnx", NULL);
  xdotool_run (window, open_dialog);
  xdotool_run (window, type_name);
  xdotool_run (window, save);
  harness_settle (window);
  harness_screenshot (window, "walk-save-as-typed");
  g_assert_true (g_file_test (saved, G_FILE_TEST_EXISTS));
  g_assert_nonnull (harness_find_label (GTK_WIDGET (window), "Saved “typed.onnx”"));
  g_assert_null (harness_find_label (GTK_WIDGET (window), "changed on disk"));
  harness_window_close (window);
  g_unlink (saved);
  g_unlink (opened);
  g_rmdir (dir);
}

static char *
compare_fixture (const char *name)
{
  const char *small[] = { "--small", NULL };
  g_autofree char *dir = graft_test_generate_fixtures ("tests/compare/make-compare-fixtures.py",
                                                       "tests/fixtures-generated/compare-gui", small);

  return g_build_filename (dir, name, NULL);
}

/* The lines of node's box as the canvas draws them (default options). */
static char *
label_text (GraftNode *node)
{
  GraftLabelOptions options = { .show_names = TRUE, .show_attributes = TRUE, .show_shapes = TRUE };

  return graft_test_label_text (node, &options);
}

/* A traced .item() baked into a constant (aten::div's other: float64[])
 * shows its value on the label, as scripted constants do. */
static void
test_baked_constant_values (void)
{
  GraftWindow *window = harness_window_new ();
  g_autofree char *path = compare_fixture ("item_traced.pt");
  g_autofree char *div_label = NULL, *add_label = NULL, *expected = NULL;
  GraftNode *div, *add;
  GraftValue *other;

  harness_open (window, path);
  div = harness_find_op (harness_shown_graph (window), "aten::div");
  add = harness_find_op (harness_shown_graph (window), "aten::add");
  g_assert_nonnull (div);
  other = g_ptr_array_index (div->inputs, 1);
  g_assert_nonnull (other->initializer);
  expected = g_strdup_printf ("other = %g", graft_tensor_get_element_as_double (other->initializer, 0));
  div_label = label_text (div);
  add_label = label_text (add);
  g_test_message ("%s\n%s", div_label, add_label);
  g_assert_nonnull (strstr (div_label, expected));
  g_assert_null (strstr (div_label, "float64"));
  g_assert_nonnull (strstr (add_label, "other = 1"));
  harness_activate (window, "win.zoom-fit");
  harness_screenshot (window, "walk-baked-constant");
  harness_window_close (window);
}

/* Does any label under root show text? */
static gboolean
shows_text (GtkWidget *root, const char *text)
{
  return harness_find_label (root, text) != NULL;
}

/* torch.onnx.export's open slice ends are int64 INT64_MAX constants: the
 * label, the sidebar's attribute and its statistics print the integer. */
static void
test_integers_print_as_integers (void)
{
  GraftWindow *window = harness_window_new ();
  g_autofree char *path = generated_fixture ("make-slice-model.py", "slice.onnx");
  g_autofree char *label = NULL;
  GraftNode *end;

  harness_open (window, path);
  end = graft_graph_find_node (harness_shown_graph (window), "/Constant_2");
  g_assert_nonnull (end);
  label = label_text (end);
  g_test_message ("%s", label);
  g_assert_nonnull (strstr (label, "9223372036854775807"));
  harness_activate (window, "win.select-node::/Constant_2");
  harness_wait_ms (300);   /* the statistics worker */
  harness_settle (window);
  harness_screenshot (window, "walk-int64-max");
  g_assert_true (shows_text (GTK_WIDGET (window), "9223372036854775807"));
  g_assert_false (shows_text (GTK_WIDGET (window), "e+18"));
  harness_window_close (window);
}

/* With no model, Compare with Saved and Save Edits As Recipe… are off
 * (one did nothing, the other asked for a file name first); the empty
 * window names the formats it opens, .pt2 included. */
static void
test_actions_without_model (void)
{
  GraftWindow *window = harness_window_new ();
  g_autofree char *sample = sample_path ("tiny-cnn.onnx");

  harness_settle (window);
  harness_screenshot (window, "walk-empty");
  g_assert_true (shows_text (GTK_WIDGET (window), "torch.export .pt2 program"));
  g_assert_false (harness_action_enabled (window, "win.compare-saved"));
  g_assert_false (harness_action_enabled (window, "win.compare-with"));
  g_assert_false (harness_action_enabled (window, "win.save-recipe"));
  harness_open (window, sample);
  g_assert_true (harness_action_enabled (window, "win.compare-saved"));
  g_assert_true (harness_action_enabled (window, "win.compare-with"));
  /* Nothing edited yet: no recipe to save. */
  g_assert_false (harness_action_enabled (window, "win.save-recipe"));
  harness_activate (window, "win.edit-operation(('bypass-node', '/stem/stem.2/Relu', ''))");
  g_assert_true (harness_action_enabled (window, "win.save-recipe"));
  harness_activate (window, "win.undo");
  g_assert_false (harness_action_enabled (window, "win.save-recipe"));
  harness_window_close (window);
}

typedef struct {
  double zoom, x, y;     /* the node's box centre on the widget */
  GraftRect view;
} Spot;

/* Where node name is drawn now. */
static Spot
spot_of (GraftWindow *window, const char *name)
{
  GraftGraphCanvas *canvas = GRAFT_GRAPH_CANVAS (harness_find_type (GTK_WIDGET (window), GRAFT_TYPE_GRAPH_CANVAS));
  GraftNode *node = graft_graph_find_node (harness_shown_graph (window), name);
  GraftRect box, bounds;
  Spot spot;

  g_assert_nonnull (node);
  g_assert_true (graft_graph_canvas_get_node_bounds (canvas, node, &box));
  g_assert_true (graft_graph_canvas_get_view (canvas, &spot.view, &bounds));
  spot.zoom = graft_graph_canvas_get_zoom (canvas);
  graft_graph_canvas_scene_to_screen (canvas, box.x + box.width / 2, box.y + box.height / 2, &spot.x, &spot.y);
  return spot;
}

static void
assert_same_spot (GraftWindow *window, const char *name, const Spot *before, const char *what)
{
  GraftGraphCanvas *canvas = GRAFT_GRAPH_CANVAS (harness_find_type (GTK_WIDGET (window), GRAFT_TYPE_GRAPH_CANVAS));
  GraftNode *selected = graft_graph_canvas_get_selected_node (canvas);
  Spot after = spot_of (window, name);

  g_test_message ("%s: %s at (%.1f, %.1f) zoom %.3f, view y %.0f (before: (%.1f, %.1f) zoom %.3f, view y %.0f)", what,
                  name, after.x, after.y, after.zoom, after.view.y, before->x, before->y, before->zoom,
                  before->view.y);
  g_assert_nonnull (selected);
  g_assert_cmpstr (selected->name, ==, name);
  g_assert_cmpfloat (fabs (after.zoom - before->zoom), <, 1e-6);
  g_assert_cmpfloat (fabs (after.x - before->x), <, 2.0);
  g_assert_cmpfloat (fabs (after.y - before->y), <, 2.0);
}

/* Edits keep the place: on transformer24 (2.5k nodes, 24 layers), a
 * Bypass in layer 12, its undo and its redo leave the view on layer 12 at
 * the same zoom with the selection kept (it jumped to the top and dropped
 * the selection), and "Laying out…" does not sit on the edit's toast. */
static void
test_edits_keep_the_place (void)
{
  GraftWindow *window = harness_window_new ();
  g_autofree char *path = transformer_fixture ("GRAFT_WALK_TRANSFORMER");
  const char *kept = "/layers.12/norm2/Div";
  const char *steps[] = { "win.edit-operation(('bypass-node', '/layers.12/Relu', ''))", "win.undo", "win.redo" };
  Spot before;

  harness_open (window, path);
  harness_activate (window, "win.select-node::/layers.12/norm2/Div");
  harness_settle (window);
  before = spot_of (window, kept);
  g_assert_cmpfloat (before.view.y, >, 1000);   /* far from the top */
  for (guint i = 0; i < G_N_ELEMENTS (steps); i++)
    {
      GtkWidget *layout_status = harness_find_id (GTK_WIDGET (window), "layout_status");

      harness_activate (window, steps[i]);
      assert_same_spot (window, kept, &before, steps[i]);
      /* The layout status sits at the top, the toasts at the bottom. */
      g_assert_cmpint (gtk_widget_get_valign (layout_status), ==, GTK_ALIGN_START);
    }
  harness_screenshot (window, "walk-edit-keeps-place");
  harness_window_close (window);
}

/* The sidebar's texts: no "(N with subgraphs)" when there are none, no
 * empty Attributes heading over an op without attributes; Delete refused
 * mid-graph suggests Bypass. */
static void
test_sidebar_texts (void)
{
  GraftWindow *window = harness_window_new ();
  g_autofree char *sample = sample_path ("tiny-cnn.onnx");
  g_autoptr(GPtrArray) dialogs = NULL;
  g_autofree char *refusal = NULL;
  GtkWidget *sidebar;

  harness_open (window, sample);
  sidebar = harness_find_id (GTK_WIDGET (window), "sidebar");
  g_assert_nonnull (sidebar);
  g_assert_false (shows_text (sidebar, "with subgraphs"));
  harness_activate (window, "win.select-node::/layer2/layer2.0/relu/Relu");
  harness_screenshot (window, "walk-sidebar-relu");
  g_assert_true (shows_text (sidebar, "onnx::Relu"));
  g_assert_false (shows_text (sidebar, "Attributes"));
  harness_activate (window, "win.select-node::/layer2/layer2.0/conv1/Conv");
  g_assert_true (shows_text (sidebar, "Attributes"));

  harness_activate (window, "win.edit-operation(('delete-node', '/layer2/layer2.0/relu/Relu', ''))");
  dialogs = harness_list_dialogs (window);
  g_assert_cmpuint (dialogs->len, ==, 1);
  refusal = harness_describe_dialog (g_ptr_array_index (dialogs, 0));
  g_test_message ("%s", refusal);
  g_assert_nonnull (strstr (refusal, "Bypass it"));
  harness_screenshot (window, "walk-delete-refused");
  gtk_window_destroy (g_ptr_array_index (dialogs, 0));
  harness_window_close (window);
}

/* The first widget under root (root included) that matches, or NULL. */
static GtkWidget *
find_widget (GtkWidget *root, gboolean (*matches) (GtkWidget *widget, gconstpointer data), gconstpointer data)
{
  if (matches (root, data))
    return root;
  for (GtkWidget *child = gtk_widget_get_first_child (root); child; child = gtk_widget_get_next_sibling (child))
    {
      GtkWidget *found = find_widget (child, matches, data);

      if (found != NULL)
        return found;
    }
  return NULL;
}

/* The spin button of a symbolic dim's size (it carries the dim's symbol). */
static gboolean
is_size_field (GtkWidget *widget, gconstpointer data)
{
  return GTK_IS_SPIN_BUTTON (widget) && g_object_get_data (G_OBJECT (widget), "graft-symbol") != NULL;
}

/* Tab from the Run pane's size field (a symbolic dim's spin button) goes
 * to a control, not into the sidebar's title (a selectable label, whose
 * text it selected). Real key presses through xdotool. */
static void
test_tab_from_run_size (void)
{
  GraftWindow *window;
  g_autofree char *sample = sample_path ("tiny-cnn.onnx");
  const char *tab[] = { "key", "Tab", NULL };
  GtkWidget *spin, *focus;

  if (!xdotool_available ())
    return;
  window = harness_window_new ();
  harness_open (window, sample);
  harness_activate (window, "win.show-run");
  spin = find_widget (harness_find_id (GTK_WIDGET (window), "run_pane"), is_size_field, NULL);
  g_assert_nonnull (spin);
  gtk_window_present (GTK_WINDOW (window));
  gtk_widget_grab_focus (spin);
  harness_settle (window);
  xdotool_run (window, tab);
  focus = gtk_window_get_focus (GTK_WINDOW (window));
  g_assert_nonnull (focus);
  g_test_message ("Tab from the size field: %s \"%s\"", G_OBJECT_TYPE_NAME (focus),
                  GTK_IS_LABEL (focus) ? gtk_label_get_text (GTK_LABEL (focus)) : "");
  harness_screenshot (window, "walk-tab-from-run-size");
  g_assert_false (focus == spin || gtk_widget_is_ancestor (focus, spin));   /* Tab moved on */
  g_assert_false (GTK_IS_LABEL (focus));
  harness_window_close (window);
}

/* A button whose label says text (data). */
static gboolean
is_button_labelled (GtkWidget *widget, gconstpointer text)
{
  GtkWidget *child = GTK_IS_BUTTON (widget) ? gtk_button_get_child (GTK_BUTTON (widget)) : NULL;

  return GTK_IS_LABEL (child) && strcmp (gtk_label_get_text (GTK_LABEL (child)), text) == 0;
}

/* Shared constants at their readers: on transformer24 the Gather indices
 * of layers.0 that all 24 layers read are listed by each Gather (the
 * layout test checks there is no box and no edge), and its context menu (a real right-click) goes on to
 * the next layer's reader, which is selected and in view. */
static void
test_shared_constant_readers (void)
{
  GraftWindow *window;
  g_autofree char *path = transformer_fixture ("GRAFT_WALK_TRANSFORMER");
  GraftGraphCanvas *canvas;
  GraftGraph *graph;
  GraftValue *indices;
  GraftNode *reader, *next;
  GtkWidget *item;
  GraftRect box, view, bounds;

  if (!xdotool_available ())
    return;
  window = harness_window_new ();
  canvas = GRAFT_GRAPH_CANVAS (harness_find_type (GTK_WIDGET (window), GRAFT_TYPE_GRAPH_CANVAS));
  harness_open (window, path);
  harness_screenshot (window, "walk-shared-constant-opened");
  graph = harness_shown_graph (window);
  indices = graft_graph_resolve_value (graph, "/layers.0/self_attn/Constant_output_0");
  g_assert_nonnull (indices);
  g_assert_true (graft_graph_canvas_is_value_shared (canvas, indices));
  reader = graft_graph_find_node (graph, "/layers.7/self_attn/Gather");
  next = graft_graph_find_node (graph, "/layers.8/self_attn/Gather");
  g_assert_nonnull (reader);
  g_assert_nonnull (next);

  harness_activate (window, "win.select-node::/layers.7/self_attn/Gather");
  g_assert_true (graft_graph_canvas_get_node_bounds (canvas, reader, &box));
  graft_graph_canvas_show_selection_readable (canvas);
  harness_settle (window);
  {
    double x, y;

    g_assert_true (graft_graph_canvas_get_node_bounds (canvas, reader, &box));
    graft_graph_canvas_scene_to_screen (canvas, box.x + box.width / 2, box.y + 8, &x, &y);
    xdotool_move_to_widget (window, GTK_WIDGET (canvas), x, y);
    {
      const char *commands[] = { "click", "3", NULL };

      xdotool_run (window, commands);
    }
  }
  item = find_widget (GTK_WIDGET (canvas), is_button_labelled, "Next Reader of “indices” (9 of 24)");
  g_assert_nonnull (item);
  g_assert_true (gtk_widget_get_mapped (item));
  harness_screenshot (window, "walk-shared-constant-menu");
  /* The popover is a surface of its own, which xdotool's coordinates
   * relative to the window do not reach: clicked as the control-flow test
   * clicks its menu items. */
  g_signal_emit_by_name (item, "clicked");
  harness_settle (window);

  g_assert_true (graft_graph_canvas_get_selected_node (canvas) == next);
  g_assert_true (graft_graph_canvas_get_node_bounds (canvas, next, &box));
  g_assert_true (graft_graph_canvas_get_view (canvas, &view, &bounds));
  g_assert_true (graft_rect_contains (&view, box.x + box.width / 2, box.y + box.height / 2));
  g_assert_nonnull (harness_find_label (GTK_WIDGET (window), "Reader 9 of 24"));
  harness_screenshot (window, "walk-shared-constant-next-reader");

  /* Collapsed and expanded, the whole graph: a stack of alike layers. */
  harness_activate (window, "win.collapse-all");
  harness_activate (window, "win.zoom-fit");
  harness_screenshot (window, "walk-shared-constant-collapsed");
  harness_activate (window, "win.expand-all");
  harness_activate (window, "win.zoom-fit");
  harness_screenshot (window, "walk-shared-constant-expanded");
  harness_window_close (window);
}

int
main (int argc, char **argv)
{
  harness_init_environment ();
  gtk_test_init (&argc, &argv, NULL);
  g_test_add_func ("/gui/walk/save-as-is-no-change-on-disk", test_save_as_is_no_change_on_disk);
  g_test_add_func ("/gui/walk/save-as-typed", test_save_as_typed);
  g_test_add_func ("/gui/walk/baked-constant-values", test_baked_constant_values);
  g_test_add_func ("/gui/walk/integers-print-as-integers", test_integers_print_as_integers);
  g_test_add_func ("/gui/walk/actions-without-model", test_actions_without_model);
  g_test_add_func ("/gui/walk/edits-keep-the-place", test_edits_keep_the_place);
  g_test_add_func ("/gui/walk/sidebar-texts", test_sidebar_texts);
  g_test_add_func ("/gui/walk/tab-from-run-size", test_tab_from_run_size);
  g_test_add_func ("/gui/walk/shared-constant-readers", test_shared_constant_readers);
  return g_test_run ();
}
