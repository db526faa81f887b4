/* Graph surgery in the real window: the canvas's right-click menu on a
 * node, the rename dialog, Delete on the selection, marking an output,
 * undo, and a recipe saved from the window (File → Save Edits As Recipe)
 * replayed in a fresh window on the same model. Screenshots of the menu
 * and the dialog go to BUILD/tests/gui/screenshots. */
#include <string.h>
#include <glib/gstdio.h>

#include "widget-screenshot.h"
#include "window-harness.h"
#include "ir/graph-surgery.h"
#include "widgets/graph-canvas.h"

static char *
sample_path (void)
{
  return g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "data", "samples", "tiny-cnn.onnx", NULL);
}

static GraftGraphCanvas *
canvas_of (GraftWindow *window)
{
  return GRAFT_GRAPH_CANVAS (harness_find_type (GTK_WIDGET (window), GRAFT_TYPE_GRAPH_CANVAS));
}

/* The canvas shows the main graph after every edit. */
static GraftGraph *
main_graph (GraftWindow *window)
{
  return graft_graph_canvas_get_graph (canvas_of (window));
}

static gboolean
can_undo (GraftWindow *window)
{
  g_autoptr(GHashTable) state = harness_window_state (window);

  return g_strcmp0 (g_hash_table_lookup (state, "can-undo"), "1") == 0;
}

static GtkGestureClick *
find_secondary_click (GtkWidget *widget)
{
  g_autoptr(GListModel) controllers = gtk_widget_observe_controllers (widget);

  for (guint i = 0; i < g_list_model_get_n_items (controllers); i++)
    {
      g_autoptr(GObject) controller = g_list_model_get_item (controllers, i);
      if (GTK_IS_GESTURE_CLICK (controller)
          && gtk_gesture_single_get_button (GTK_GESTURE_SINGLE (controller)) == GDK_BUTTON_SECONDARY)
        return GTK_GESTURE_CLICK (controller);
    }
  return NULL;
}

static GtkWidget *
find_popover (GtkWidget *canvas)
{
  for (GtkWidget *child = gtk_widget_get_first_child (canvas); child != NULL; child = gtk_widget_get_next_sibling (child))
    if (GTK_IS_POPOVER (child))
      return child;
  return NULL;
}

static void
test_context_menu_and_dialog (void)
{
  GraftWindow *window = harness_window_new ();
  g_autofree char *path = sample_path ();
  GtkGestureClick *secondary;
  GtkWidget *canvas, *popover;
  g_autoptr(GPtrArray) dialogs = NULL;
  GtkWidget *entry;
  GraftNode *node;

  harness_open (window, path);
  canvas = GTK_WIDGET (canvas_of (window));
  harness_activate (window, "win.select-node::/layer1/layer1.0/conv2/Conv");
  /* The selected node is centred: a right-click there opens its menu. */
  graft_graph_canvas_select_node (canvas_of (window), NULL);
  harness_activate (window, "win.select-node::/layer1/layer1.0/conv2/Conv");
  secondary = find_secondary_click (canvas);
  g_assert_nonnull (secondary);
  graft_graph_canvas_select_node (canvas_of (window), NULL);
  g_signal_emit_by_name (secondary, "pressed", 1, gtk_widget_get_width (canvas) / 2.0,
                         gtk_widget_get_height (canvas) / 2.0);
  harness_settle (window);
  node = graft_graph_canvas_get_selected_node (canvas_of (window));
  g_assert_nonnull (node);
  g_assert_cmpstr (node->name, ==, "/layer1/layer1.0/conv2/Conv");
  popover = find_popover (canvas);
  g_assert_nonnull (popover);
  g_assert_true (gtk_widget_get_visible (popover));
  g_assert_nonnull (harness_find_label (popover, "Bypass"));
  g_assert_nonnull (harness_find_label (popover, "Rename"));
  g_assert_nonnull (harness_find_label (popover, "Replace Pattern"));
  g_assert_nonnull (harness_find_label (popover, "Mark as Graph Output"));
  harness_screenshot (window, "surgery-context-menu");
  harness_settle (window);
  {
    g_autofree char *menu_png = harness_screenshot_path ("surgery-context-menu-popover");
    g_autoptr(GError) error = NULL;

    /* The popover is its own surface: pictured on its own. */
    int natural = 0;

    /* All of it fits: nothing is scrolled away or cut off. */
    gtk_widget_measure (popover, GTK_ORIENTATION_VERTICAL, gtk_widget_get_width (popover), NULL, &natural, NULL, NULL);
    g_assert_cmpint (gtk_widget_get_height (popover), >=, natural);
    g_assert_true (graft_widget_save_png (popover, menu_png, &error));
    g_assert_no_error (error);
  }
  gtk_popover_popdown (GTK_POPOVER (popover));
  harness_settle (window);

  /* Rename… from the menu: a dialog with the name to edit. */
  harness_activate (window, "win.edit-operation(('rename-node', '/layer1/layer1.0/conv2/Conv', ''))");
  dialogs = harness_list_dialogs (window);
  g_assert_cmpuint (dialogs->len, ==, 1);
  entry = harness_find_type (g_ptr_array_index (dialogs, 0), GTK_TYPE_ENTRY);
  g_assert_nonnull (entry);
  g_assert_cmpstr (gtk_editable_get_text (GTK_EDITABLE (entry)), ==, "/layer1/layer1.0/conv2/Conv");
  gtk_editable_set_text (GTK_EDITABLE (entry), "block1_conv2");
  harness_screenshot (window, "surgery-rename-dialog");
  adw_message_dialog_response (g_ptr_array_index (dialogs, 0), "apply");
  harness_settle (window);
  g_assert_nonnull (graft_graph_find_node (main_graph (window), "block1_conv2"));
  g_assert_true (can_undo (window));
  harness_window_close (window);
}

static void
test_delete_mark_undo_and_recipe (void)
{
  GraftWindow *window = harness_window_new ();
  GraftWindow *replay;
  g_autofree char *path = sample_path ();
  g_autofree char *recipe = g_build_filename (g_get_tmp_dir (), "graft-gui-recipe.json", NULL);
  g_autofree char *save_action = g_strconcat ("win.save-recipe-path::", recipe, NULL);
  g_autofree char *apply_action = g_strconcat ("win.apply-recipe-path::", recipe, NULL);
  g_autofree char *text = NULL;
  guint nodes;

  harness_open (window, path);
  nodes = main_graph (window)->nodes->len;

  /* Delete on the selection: the node and what only it fed. */
  harness_activate (window, "win.select-node::/layer2/layer2.1/relu_1/Relu");
  harness_activate (window, "win.select-node::/Softmax");
  harness_activate (window, "win.delete-selection");
  /* Deleting what computes the only output is refused. */
  g_assert_nonnull (graft_graph_find_node (main_graph (window), "/Softmax"));
  {
    g_autoptr(GPtrArray) dialogs = harness_list_dialogs (window);
    g_assert_cmpuint (dialogs->len, ==, 1);
    gtk_window_destroy (g_ptr_array_index (dialogs, 0));
  }
  harness_activate (window, "win.edit-operation(('add-output', '/layer1/layer1.1/relu_1/Relu_output_0', ''))");
  g_assert_cmpuint (main_graph (window)->outputs->len, ==, 2);
  harness_activate (window, "win.edit-operation(('bypass-node', '/layer2/layer2.0/relu/Relu', ''))");
  g_assert_cmpuint (main_graph (window)->nodes->len, ==, nodes - 1);
  /* With a second output, what only fed the first can go. */
  harness_activate (window, "win.select-node::/layer2/layer2.1/relu_1/Relu");
  harness_activate (window, "win.delete-selection");
  g_assert_null (graft_graph_find_node (main_graph (window), "/layer2/layer2.1/relu_1/Relu"));
  g_assert_null (graft_graph_find_node (main_graph (window), "/Softmax"));
  harness_activate (window, "win.undo");
  g_assert_nonnull (graft_graph_find_node (main_graph (window), "/Softmax"));

  /* Save Edits As Recipe: the two edits left; a fresh window replays them. */
  harness_activate (window, save_action);
  g_assert_true (g_file_get_contents (recipe, &text, NULL, NULL));
  g_assert_nonnull (strstr (text, "\"edit\" : \"add-output\""));
  g_assert_nonnull (strstr (text, "\"edit\" : \"bypass-node\""));
  g_assert_null (strstr (text, "delete-node"));
  harness_window_close (window);

  replay = harness_window_new ();
  harness_open (replay, path);
  harness_activate (replay, apply_action);
  g_assert_cmpuint (main_graph (replay)->outputs->len, ==, 2);
  g_assert_null (graft_graph_find_node (main_graph (replay), "/layer2/layer2.0/relu/Relu"));
  g_assert_true (can_undo (replay));
  harness_activate (replay, "win.undo");
  g_assert_nonnull (graft_graph_find_node (main_graph (replay), "/layer2/layer2.0/relu/Relu"));
  g_remove (recipe);
  harness_window_close (replay);
}

/* Fills the one dialog's entry with text and presses its apply button. */
static void
answer_entry_dialog (GraftWindow *window, const char *expected_start, const char *text, const char *screenshot)
{
  g_autoptr(GPtrArray) dialogs = harness_list_dialogs (window);
  GtkWidget *entry;

  for (guint i = 0; dialogs->len != 1 && i < dialogs->len; i++)
    {
      g_autofree char *description = harness_describe_dialog (g_ptr_array_index (dialogs, i));
      g_message ("dialog %u: %s", i, description);
    }
  g_assert_cmpuint (dialogs->len, ==, 1);
  entry = harness_find_type (g_ptr_array_index (dialogs, 0), GTK_TYPE_ENTRY);
  g_assert_true (g_str_has_prefix (gtk_editable_get_text (GTK_EDITABLE (entry)), expected_start));
  gtk_editable_set_text (GTK_EDITABLE (entry), text);
  if (screenshot != NULL)
    harness_screenshot (window, screenshot);
  /* The apply button's response; the button would close the dialog too. */
  adw_message_dialog_response (g_ptr_array_index (dialogs, 0), "apply");
  gtk_window_destroy (g_ptr_array_index (dialogs, 0));
  harness_settle (window);
}

static void
test_attribute_and_insert_dialogs (void)
{
  GraftWindow *window = harness_window_new ();
  g_autofree char *path = sample_path ();
  GraftNode *gemm, *inserted = NULL;
  GraftGraph *graph;

  harness_open (window, path);
  harness_activate (window, "win.edit-operation(('set-attribute', '/fc/Gemm', ''))");
  answer_entry_dialog (window, "alpha=", "alpha=0.5", "surgery-attribute-dialog");
  gemm = graft_graph_find_node (main_graph (window), "/fc/Gemm");
  g_assert_nonnull (gemm);
  g_assert_nonnull (graft_node_get_attribute (gemm, "alpha"));
  g_assert_cmpfloat (graft_node_get_attribute (gemm, "alpha")->f, ==, 0.5);

  /* Insert Node… opens the op picker (tests/gui/test-op-picker.c drives
   * it in depth): pick Relu, Insert. */
  harness_activate (window, "win.edit-operation(('insert-node', '/Flatten_output_0', ''))");
  {
    g_autoptr(GPtrArray) dialogs = harness_list_dialogs (window);
    GtkWidget *picker, *row;

    g_assert_cmpuint (dialogs->len, ==, 1);
    picker = g_ptr_array_index (dialogs, 0);
    row = harness_find_name (picker, "Relu");
    g_assert_nonnull (row);
    gtk_list_box_select_row (GTK_LIST_BOX (gtk_widget_get_parent (row)), GTK_LIST_BOX_ROW (row));
    g_signal_emit_by_name (gtk_window_get_default_widget (GTK_WINDOW (picker)), "clicked");
    harness_settle (window);
  }
  graph = main_graph (window);
  for (guint i = 0; i < graph->nodes->len; i++)
    if (g_str_equal (((GraftNode *) g_ptr_array_index (graph->nodes, i))->op, "onnx::Relu")
        && g_ptr_array_index (((GraftNode *) g_ptr_array_index (graph->nodes, i))->inputs, 0)
             == graft_graph_lookup_value (graph, "/Flatten_output_0"))
      inserted = g_ptr_array_index (graph->nodes, i);
  g_assert_nonnull (inserted);
  /* Named in /Flatten's scope, as the exporter names nodes (issue 37). */
  g_assert_cmpstr (inserted->name, ==, "/Relu");
  gemm = graft_graph_find_node (graph, "/fc/Gemm");
  g_assert_nonnull (gemm);
  g_assert_true (g_ptr_array_index (gemm->inputs, 0) == g_ptr_array_index (inserted->outputs, 0));

  /* A value that is not NAME=VALUE changes nothing (a toast says why). */
  {
    guint n_attributes = gemm->attributes->len;

    harness_activate (window, "win.edit-operation(('set-attribute', '/fc/Gemm', ''))");
    answer_entry_dialog (window, "", "nonsense", NULL);
    gemm = graft_graph_find_node (main_graph (window), "/fc/Gemm");
    g_assert_cmpuint (gemm->attributes->len, ==, n_attributes);
  }
  harness_window_close (window);
}

/* The menu's items in order, "|" for a separator. */
static char *
describe_menu (GtkWidget *popover)
{
  GtkWidget *box = gtk_popover_get_child (GTK_POPOVER (popover));
  g_autoptr(GString) items = g_string_new (NULL);

  for (GtkWidget *child = gtk_widget_get_first_child (box); child != NULL; child = gtk_widget_get_next_sibling (child))
    {
      const char *text = GTK_IS_SEPARATOR (child) ? "|"
                         : gtk_label_get_text (GTK_LABEL (gtk_button_get_child (GTK_BUTTON (child))));
      g_string_append_printf (items, "%s%s", items->len ? "; " : "", text);
    }
  return g_string_free (g_steal_pointer (&items), FALSE);
}

/* Right-clicks the canvas at x, y and returns the menu's items; the
 * popover is pictured as screenshot, then closed. */
static char *
menu_at (GraftWindow *window, double x, double y, const char *screenshot)
{
  GtkWidget *canvas = GTK_WIDGET (canvas_of (window));
  GtkWidget *popover;
  g_autofree char *png = harness_screenshot_path (screenshot);
  g_autoptr(GError) error = NULL;
  char *items;

  g_signal_emit_by_name (find_secondary_click (canvas), "pressed", 1, x, y);
  harness_settle (window);
  popover = find_popover (canvas);
  g_assert_nonnull (popover);
  items = describe_menu (popover);
  g_assert_true (graft_widget_save_png (popover, png, &error));
  g_assert_no_error (error);
  gtk_popover_popdown (GTK_POPOVER (popover));
  harness_settle (window);
  return items;
}

/* A point of the canvas where a click selects value (found by trying a
 * grid), or FALSE. */
static gboolean
find_value_point (GraftWindow *window, const char *value, double *x, double *y)
{
  GraftGraphCanvas *canvas = canvas_of (window);
  int width = gtk_widget_get_width (GTK_WIDGET (canvas)), height = gtk_widget_get_height (GTK_WIDGET (canvas));

  for (*y = 2; *y < height; *y += 2)
    for (*x = 2; *x < width; *x += 2)
      if (graft_graph_canvas_select_at (canvas, *x, *y) && graft_graph_canvas_get_selected_value (canvas) != NULL
          && g_str_equal (graft_graph_canvas_get_selected_value (canvas)->name, value))
        return TRUE;
  return FALSE;
}

/* The menus come from the edit table: a node's (its own rows by rank,
 * the main-graph-only ones after a separator, its outputs' after
 * another), an edge's, the background's. */
static void
test_menus_from_table (void)
{
  GraftWindow *window = harness_window_new ();
  g_autofree char *path = sample_path ();
  GtkWidget *canvas;
  g_autofree char *node_menu = NULL, *value_menu = NULL, *output_menu = NULL, *graph_menu = NULL;
  double x, y;

  harness_open (window, path);
  canvas = GTK_WIDGET (canvas_of (window));
  harness_activate (window, "win.select-node::/Softmax");
  node_menu = menu_at (window, gtk_widget_get_width (canvas) / 2.0, gtk_widget_get_height (canvas) / 2.0,
                       "surgery-node-menu-popover");
  g_assert_cmpstr (graft_graph_canvas_get_selected_node (canvas_of (window))->name, ==, "/Softmax");
  /* /Softmax gives the graph output: nothing to mark. */
  g_assert_cmpstr (node_menu, ==, "Rename…; Replace Op…; Set Attribute…; Replace Pattern…; |; Bypass; Delete; "
                                  "Extract This Node");

  g_assert_true (find_value_point (window, "/Flatten_output_0", &x, &y));
  value_menu = menu_at (window, x, y, "surgery-value-menu-popover");
  g_assert_cmpstr (value_menu, ==, "Mark as Graph Output; Insert Node…; Cut Here (Make It an Input)");

  graft_graph_canvas_select_node (canvas_of (window), NULL);
  for (x = 2; graft_graph_canvas_select_at (canvas_of (window), x, 2); x += 8)
    ;
  graph_menu = menu_at (window, x, 2, "surgery-graph-menu-popover");
  g_assert_cmpstr (graph_menu, ==, "Add Node…");

  /* Marked, the same edge offers to remove the output instead. */
  harness_activate (window, "win.edit-operation(('add-output', '/Flatten_output_0', ''))");
  g_assert_true (graft_graph_lookup_value (main_graph (window), "/Flatten_output_0")->is_graph_output);
  g_assert_true (find_value_point (window, "/Flatten_output_0", &x, &y));
  output_menu = menu_at (window, x, y, "surgery-output-menu-popover");
  g_assert_cmpstr (output_menu, ==, "Remove Graph Output; Insert Node…; Cut Here (Make It an Input)");
  harness_window_close (window);
}

int
main (int argc, char **argv)
{
  harness_init_environment ();
  gtk_test_init (&argc, &argv, NULL);
  g_test_add_func ("/gui/surgery/context-menu-and-dialog", test_context_menu_and_dialog);
  g_test_add_func ("/gui/surgery/delete-mark-undo-recipe", test_delete_mark_undo_and_recipe);
  g_test_add_func ("/gui/surgery/attribute-and-insert-dialogs", test_attribute_and_insert_dialogs);
  g_test_add_func ("/gui/surgery/menus-from-table", test_menus_from_table);
  return g_test_run ();
}
