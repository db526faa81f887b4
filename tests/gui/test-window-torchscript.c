/* A scripted model in the real window (issue 19): module attributes read
 * through prim::GetAttr are listed in the boxes that read them, and the
 * "Module Attribute Nodes" toggle (a setting) brings their boxes back; an
 * input that declares no shape gets one from the Run pane's "Random…"
 * (typed on the X server by xdotool), and the edges show the shapes it
 * implies. The model is make-conv-model.py's AttributeNet: forward reads
 * self.scale and self.start_dim. */
#include <string.h>

#include "gui-fixtures.h"
#include "window-harness.h"
#include "xdotool-input.h"
#include "widgets/graph-canvas.h"
#include "widgets/run-pane.h"

static GraftGraphCanvas *
find_canvas (GraftWindow *window)
{
  return GRAFT_GRAPH_CANVAS (harness_find_type (GTK_WIDGET (window), GRAFT_TYPE_GRAPH_CANVAS));
}

static gboolean
is_drawn (GraftWindow *window, GraftNode *node)
{
  GraftRect bounds;

  return graft_graph_canvas_get_node_bounds (find_canvas (window), node, &bounds);
}

static void
test_module_attribute_toggle (void)
{
  GraftWindow *window = harness_window_new ();
  g_autofree char *path = generated_fixture ("make-scripted-conv-model.py", "attribute-scripted.pt");
  GSettings *settings = graft_application_get_settings (GRAFT_APPLICATION (gtk_window_get_application (GTK_WINDOW (window))));
  GraftGraph *graph;
  GraftNode *get_attr, *mul;

  harness_open (window, path);
  graph = graft_graph_canvas_get_graph (find_canvas (window));
  get_attr = harness_find_op (graph, "prim::GetAttr");
  mul = harness_find_op (graph, "aten::mul");
  g_assert_nonnull (get_attr);
  g_assert_nonnull (mul);

  /* By default the attribute is a line of aten::mul's box. */
  g_assert_false (is_drawn (window, get_attr));
  g_assert_true (is_drawn (window, mul));
  harness_screenshot (window, "torchscript-attributes-folded");

  harness_activate (window, "win.show-module-attributes");
  g_assert_true (is_drawn (window, get_attr));
  g_assert_true (settings == NULL || g_settings_get_boolean (settings, "show-module-attributes"));
  harness_screenshot (window, "torchscript-attribute-nodes");

  harness_activate (window, "win.show-module-attributes");
  g_assert_false (is_drawn (window, get_attr));
  g_assert_true (settings == NULL || !g_settings_get_boolean (settings, "show-module-attributes"));
  /* The model keeps its nodes: the view only folds them. */
  g_assert_true (harness_find_op (graft_graph_canvas_get_graph (find_canvas (window)), "prim::GetAttr") == get_attr);
  harness_window_close (window);
}

static const char *
get (GHashTable *state, const char *key)
{
  return g_hash_table_lookup (state, key);
}

static void
test_run_pane_asks_for_shape (void)
{
  GraftWindow *window;
  g_autofree char *path = generated_fixture ("make-scripted-conv-model.py", "attribute-scripted.pt");
  GtkWidget *button, *entry;
  GraftGraph *graph;
  GraftNode *conv;
  g_autoptr(GHashTable) state = NULL;

  if (!xdotool_available ())
    return;
  window = harness_window_new ();
  harness_open (window, path);
  harness_activate (window, "win.show-run");
  graph = graft_graph_canvas_get_graph (find_canvas (window));
  conv = harness_find_op (graph, "aten::conv2d");
  g_assert_nonnull (conv);
  button = harness_find_name (GTK_WIDGET (window), "run-input-shape");
  g_assert_nonnull (button);
  g_assert_cmpstr (gtk_menu_button_get_label (GTK_MENU_BUTTON (button)), ==, "Random…");

  /* "Random…" asks for the shape (no file chooser), typed as a user would. */
  xdotool_click_widget (window, button, gtk_widget_get_width (button) / 2.0, gtk_widget_get_height (button) / 2.0);
  entry = harness_find_name (GTK_WIDGET (gtk_menu_button_get_popover (GTK_MENU_BUTTON (button))),
                             "run-input-shape-entry");
  g_assert_nonnull (entry);
  g_assert_true (gtk_widget_get_mapped (entry));
  {
    g_autoptr(GPtrArray) dialogs = harness_list_dialogs (window);
    g_assert_cmpuint (dialogs->len, ==, 0);
  }
  {
    const char *commands[] = { "type", "--delay", "20", "1x3x16x16", NULL };
    xdotool_run (window, commands);
  }
  harness_screenshot (window, "torchscript-run-shape-popover");
  {
    const char *commands[] = { "key", "Return", NULL };
    xdotool_run (window, commands);
  }
  button = harness_find_name (GTK_WIDGET (window), "run-input-shape");
  g_assert_cmpstr (gtk_menu_button_get_label (GTK_MENU_BUTTON (button)), ==, "Random 1×3×16×16");

  /* The edges and the details show what the shape implies. */
  {
    g_autofree char *select = g_strdup_printf ("win.select-node::%s", conv->name);
    harness_activate (window, select);
  }
  g_assert_nonnull (harness_find_label (GTK_WIDGET (window), "1×8×16×16"));
  harness_screenshot (window, "torchscript-given-shape");

  /* Random data of that shape runs. */
  harness_activate (window, "win.run");
  state = harness_window_state (window);
  g_test_message ("run: %s | %s", get (state, "run-status"), get (state, "run-outputs"));
  g_assert_nonnull (strstr (get (state, "run-outputs"), "[1,2048]"));
  harness_window_close (window);
}

/* A shape that cannot be read is refused with a reason, by the action too. */
static void
test_bad_shape_refused (void)
{
  GraftWindow *window = harness_window_new ();
  g_autofree char *path = generated_fixture ("make-scripted-conv-model.py", "attribute-scripted.pt");

  harness_open (window, path);
  harness_activate (window, "win.set-run-input-shape::x=1x0x16");
  g_assert_nonnull (harness_find_label (GTK_WIDGET (window), "is not a whole number from 1"));
  /* (One toast at a time: the pane says the rest.) */
  {
    GraftRunPane *pane = GRAFT_RUN_PANE (harness_find_type (GTK_WIDGET (window), GRAFT_TYPE_RUN_PANE));
    g_autoptr(GError) error = NULL;

    g_assert_false (graft_run_pane_set_input_shape (pane, "image", "1x3", &error));
    g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
    g_assert_cmpstr (error->message, ==, "the model has no input “image”");
    g_clear_error (&error);
    g_assert_false (graft_run_pane_set_input_shape (pane, "x", "2x", &error));
    g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
    g_assert_cmpuint (g_hash_table_size (graft_run_pane_get_input_shapes (pane)), ==, 0);
  }
  harness_window_close (window);
}

int
main (int argc, char *argv[])
{
  harness_init_environment ();
  gtk_test_init (&argc, &argv, NULL);

  g_test_add_func ("/gui/torchscript/module-attribute-toggle", test_module_attribute_toggle);
  g_test_add_func ("/gui/torchscript/run-pane-asks-for-shape", test_run_pane_asks_for_shape);
  g_test_add_func ("/gui/torchscript/bad-shape-refused", test_bad_shape_refused);
  return g_test_run ();
}
