/* Issue 19, through real key events (xdotool) where GTK allows: Find's
 * Enter and Ctrl+G show the match at a readable zoom with every match
 * highlighted on the canvas; the window keeps its size with every pane
 * open and folds the details away when narrow. */
#include <stdlib.h>
#include <string.h>

#include "gui-fixtures.h"
#include "window-harness.h"
#include "widget-inspect.h"
#include "xdotool-input.h"
#include "widgets/graph-canvas.h"

#define find_canvas(window) GRAFT_GRAPH_CANVAS (harness_find_type (GTK_WIDGET (window), GRAFT_TYPE_GRAPH_CANVAS))
#define get(state, key) ((const char *) g_hash_table_lookup ((state), (key)))

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
  g_assert_cmpuint (inspect_uint (canvas, "n-found-shown"), ==, 12);
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
  g_assert_cmpuint (inspect_uint (canvas, "n-found-shown"), ==, 12);
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
  g_assert_cmpuint (inspect_uint (canvas, "n-found-shown"), ==, 0);
  harness_window_close (window);
}

static gboolean
grouped_search_has_run (gpointer data)
{
  g_autoptr(GHashTable) state = harness_window_state (data);

  return g_str_equal (get (state, "find-matches"), "4");
}

/* Matches hidden in collapsed groups: the group's box is highlighted. */
static void
test_find_highlights_collapsed_groups (void)
{
  g_autofree char *path = generated_fixture ("make-grouped-model.py", "grouped.onnx");
  GraftWindow *window = harness_window_new ();
  GraftGraphCanvas *canvas = find_canvas (window);
  guint before;

  harness_open (window, path);
  harness_activate (window, "win.zoom-fit");
  before = inspect_uint (canvas, "n-found-shown");
  g_assert_cmpuint (before, ==, 0);
  /* "/blockN/Relu_50": one in each of the four collapsed blocks. */
  harness_activate (window, "win.find-text::Relu_50");
  harness_wait_for (grouped_search_has_run, window);
  harness_settle (window);
  harness_screenshot (window, "find-collapsed-groups");
  g_assert_cmpuint (inspect_uint (canvas, "n-found-shown"), ==, 4);
  harness_window_close (window);
}

/* Minimum widths of the widgets along the way, for the log. */
static void
log_min_widths (GtkWidget *widget, int depth)
{
  int minimum = 0, natural = 0;

  if (depth > 14 || !gtk_widget_get_visible (widget))
    return;
  gtk_widget_measure (widget, GTK_ORIENTATION_HORIZONTAL, -1, &minimum, &natural, NULL, NULL);
  if (minimum >= 150)
    g_test_message ("%*s%s#%s min %d nat %d", depth, "", G_OBJECT_TYPE_NAME (widget),
                    gtk_buildable_get_buildable_id (GTK_BUILDABLE (widget)) ?: "", minimum, natural);
  for (GtkWidget *child = gtk_widget_get_first_child (widget); child != NULL; child = gtk_widget_get_next_sibling (child))
    log_min_widths (child, depth + 1);
}

static const char *
window_width (GraftWindow *window, GHashTable **state)
{
  g_clear_pointer (state, g_hash_table_unref);
  *state = harness_window_state (window);
  return get (*state, "window-size");
}

static int
bounds_field (GHashTable *state, const char *key, guint field)
{
  g_auto(GStrv) parts = g_strsplit (get (state, key), ",", -1);

  g_assert_cmpuint (g_strv_length (parts), ==, 4);
  return atoi (parts[field]);
}

static void
press (GraftWindow *window, const char *key)
{
  const char *commands[] = { "windowfocus", "WINDOW", "key", key, NULL };

  keys (window, commands);
}

/* Find, Problems, the Run pane and the details all open in the default
 * window: it keeps its size (it grew from 1200 to 1452 pixels); the
 * details fold away and F9 brings them over the graph. */
static void
test_all_panes_fit (void)
{
  g_autofree char *path = generated_fixture ("make-find-model.py", "find-chain.onnx");
  GraftWindow *window;
  g_autoptr(GHashTable) state = NULL;
  g_autofree char *before = NULL;
  int canvas_width;

  if (!xdotool_available ())
    return;
  window = harness_window_new ();
  harness_open (window, path);
  before = g_strdup (window_width (window, &state));
  g_test_message ("window before: %s, canvas %s, sidebar %s", before, get (state, "canvas-bounds"),
                  get (state, "sidebar-bounds"));
  g_assert_cmpstr (get (state, "sidebar-bounds"), !=, "hidden");
  harness_activate (window, "win.find");
  harness_activate (window, "win.show-diagnostics");
  harness_activate (window, "win.show-run");
  window_width (window, &state);
  log_min_widths (GTK_WIDGET (window), 0);
  harness_screenshot (window, "fit-all-panes");
  g_test_message ("window with Find, Problems and Run: %s, canvas %s, sidebar %s", get (state, "window-size"),
                  get (state, "canvas-bounds"), get (state, "sidebar-bounds"));
  g_assert_cmpstr (get (state, "find-visible"), ==, "1");
  g_assert_cmpstr (get (state, "diagnostics-visible"), ==, "1");
  g_assert_cmpstr (get (state, "run-visible"), ==, "1");
  g_assert_cmpstr (get (state, "window-size"), ==, before);
  /* Folded away rather than squeezing the graph. */
  g_assert_cmpstr (get (state, "sidebar-bounds"), ==, "hidden");
  canvas_width = bounds_field (state, "canvas-bounds", 2);
  g_assert_cmpint (canvas_width, >=, 400);

  /* F9 (a real key press) shows the details over the graph. */
  press (window, "F9");
  window_width (window, &state);
  harness_screenshot (window, "fit-all-panes-details");
  g_test_message ("with the details: %s, canvas %s, sidebar %s", get (state, "window-size"),
                  get (state, "canvas-bounds"), get (state, "sidebar-bounds"));
  g_assert_cmpstr (get (state, "window-size"), ==, before);
  g_assert_cmpstr (get (state, "sidebar-bounds"), !=, "hidden");
  g_assert_cmpint (bounds_field (state, "sidebar-bounds", 2), >=, 320);
  g_assert_cmpint (bounds_field (state, "canvas-bounds", 2), ==, canvas_width);
  g_assert_cmpint (bounds_field (state, "sidebar-bounds", 0) + bounds_field (state, "sidebar-bounds", 2), <=,
                   atoi (before));

  /* With the panes closed again the details are back beside the graph. */
  harness_activate (window, "win.show-run");
  harness_activate (window, "win.show-diagnostics");
  harness_activate (window, "win.show-find");
  window_width (window, &state);
  g_test_message ("panes closed: %s, canvas %s, sidebar %s, find %s", get (state, "window-size"),
                  get (state, "canvas-bounds"), get (state, "sidebar-bounds"), get (state, "find-visible"));
  g_assert_cmpstr (get (state, "find-visible"), ==, "0");
  g_assert_cmpstr (get (state, "sidebar-bounds"), !=, "hidden");
  g_assert_cmpint (bounds_field (state, "canvas-bounds", 0) + bounds_field (state, "canvas-bounds", 2), <=,
                   bounds_field (state, "sidebar-bounds", 0));
  harness_window_close (window);
}

static gboolean
window_is_narrow (gpointer data)
{
  return gtk_widget_get_width (GTK_WIDGET (data)) < 800;
}

/* A narrow window (700 pixels, resized on the X server) folds the details
 * away and gives the graph the whole width; F9 shows them over it. */
static void
test_narrow_window_folds_details (void)
{
  g_autofree char *path = generated_fixture ("make-find-model.py", "find-chain.onnx");
  GraftWindow *window;
  g_autoptr(GHashTable) state = NULL;

  if (!xdotool_available ())
    return;
  window = harness_window_new ();
  harness_open (window, path);
  {
    const char *commands[] = { "windowsize", "WINDOW", "700", "700", NULL };

    keys (window, commands);
  }
  harness_wait_for (window_is_narrow, window);
  harness_settle (window);
  window_width (window, &state);
  g_test_message ("narrow: %s, canvas %s, sidebar %s", get (state, "window-size"), get (state, "canvas-bounds"),
                  get (state, "sidebar-bounds"));
  harness_screenshot (window, "fit-narrow-folded");
  g_assert_cmpstr (get (state, "sidebar-bounds"), ==, "hidden");
  g_assert_cmpint (bounds_field (state, "canvas-bounds", 2), >=, gtk_widget_get_width (GTK_WIDGET (window)) - 20);

  press (window, "F9");
  window_width (window, &state);
  harness_screenshot (window, "fit-narrow-details");
  g_test_message ("narrow with details: %s, canvas %s, sidebar %s", get (state, "window-size"),
                  get (state, "canvas-bounds"), get (state, "sidebar-bounds"));
  g_assert_cmpstr (get (state, "sidebar-bounds"), !=, "hidden");
  g_assert_cmpint (bounds_field (state, "canvas-bounds", 2), >=, gtk_widget_get_width (GTK_WIDGET (window)) - 20);
  g_assert_true (window_is_narrow (window));
  harness_window_close (window);
}

/* The details keep a handle: dragged 150 pixels left (real pointer events)
 * they are 150 pixels wider, and never leave the graph under 400. */
static void
test_sidebar_resizes (void)
{
  g_autofree char *path = generated_fixture ("make-find-model.py", "find-chain.onnx");
  GraftWindow *window;
  g_autoptr(GHashTable) state = NULL;
  GtkWidget *handle;
  graphene_point_t at;
  double offset_x, offset_y;
  int before;

  if (!xdotool_available ())
    return;
  window = harness_window_new ();
  harness_open (window, path);
  window_width (window, &state);
  before = bounds_field (state, "sidebar-bounds", 2);
  handle = harness_find_id (GTK_WIDGET (window), "sidebar_handle");
  g_assert_nonnull (handle);
  gtk_native_get_surface_transform (GTK_NATIVE (window), &offset_x, &offset_y);
  g_assert_true (gtk_widget_compute_point (handle, GTK_WIDGET (window),
                                           &GRAPHENE_POINT_INIT (gtk_widget_get_width (handle) / 2.0, 300), &at));
  for (guint i = 0; i < 2; i++)
    {
      /* Then to the window's left edge: past the graph's 400 pixels. */
      int distance = i == 0 ? 150 : (int) at.x - 20;
      g_autofree char *x = g_strdup_printf ("%d", (int) (at.x + offset_x));
      g_autofree char *y = g_strdup_printf ("%d", (int) (at.y + offset_y));
      g_autofree char *mid = g_strdup_printf ("%d", (int) (at.x + offset_x) - distance / 2);
      g_autofree char *to = g_strdup_printf ("%d", (int) (at.x + offset_x) - distance);
      const char *commands[] = { "mousemove", "--window", "WINDOW", x, y, "mousedown", "1",
                                 "mousemove", "--window", "WINDOW", mid, y, "sleep", "0.1",
                                 "mousemove", "--window", "WINDOW", to, y, "sleep", "0.1", "mouseup", "1", NULL };

      keys (window, commands);
      window_width (window, &state);
      g_test_message ("dragged %d: canvas %s, sidebar %s", distance, get (state, "canvas-bounds"),
                      get (state, "sidebar-bounds"));
      if (i == 0)
        {
          /* Within a pixel: the pointer lands on whole pixels. */
          g_assert_cmpint (ABS (bounds_field (state, "sidebar-bounds", 2) - (before + 150)), <=, 2);
          harness_screenshot (window, "fit-sidebar-wider");
          g_assert_true (gtk_widget_compute_point (handle, GTK_WIDGET (window),
                                                   &GRAPHENE_POINT_INIT (gtk_widget_get_width (handle) / 2.0, 300),
                                                   &at));
        }
      else
        {
          /* As wide as the graph's 400 pixels allow, still beside it. */
          g_assert_cmpstr (get (state, "sidebar-bounds"), !=, "hidden");
          g_assert_cmpint (bounds_field (state, "canvas-bounds", 2), >=, 400);
          g_assert_cmpint (bounds_field (state, "canvas-bounds", 2), <=, 410);
        }
      g_assert_cmpstr (get (state, "window-size"), ==, "1190x750");
    }
  harness_window_close (window);
}

int
main (int argc, char *argv[])
{
  harness_init_environment ();
  gtk_test_init (&argc, &argv, NULL);

  g_test_add_func ("/gui/find-fit/find-readable-and-highlighted", test_find_readable_and_highlighted);
  g_test_add_func ("/gui/find-fit/collapsed-groups-highlighted", test_find_highlights_collapsed_groups);
  g_test_add_func ("/gui/find-fit/all-panes-fit", test_all_panes_fit);
  g_test_add_func ("/gui/find-fit/narrow-window-folds-details", test_narrow_window_folds_details);
  g_test_add_func ("/gui/find-fit/sidebar-resizes", test_sidebar_resizes);
  return g_test_run ();
}
