/* The window's reactions to events that Xvfb cannot produce from outside:
 * a file list dropped on it, and a double-click on a node with bodies
 * (the canvas's "node-activated"). Runs the real application in-process. */
#include <string.h>

#include "gui-fixtures.h"
#include "window-harness.h"
#include "widgets/breadcrumbs.h"
#include "widgets/graph-canvas.h"
#include "widget-inspect.h"

static gboolean
canvas_has_graph (gpointer data)
{
  return graft_graph_canvas_get_graph (data) != NULL;
}

static void
test_drop_file_list (void)
{
  GraftWindow *window = harness_window_new ();
  g_autofree char *path = g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "data", "samples", "tiny-cnn.onnx", NULL);
  GtkDropTarget *target = harness_find_drop_target (GTK_WIDGET (window));
  GtkWidget *canvas = harness_find_type (GTK_WIDGET (window), GRAFT_TYPE_GRAPH_CANVAS);

  g_assert_nonnull (target);
  g_assert_nonnull (canvas);
  g_assert_true (graft_window_is_empty (window));
  g_assert_true (harness_drop_file (target, path, 10.0, 10.0));

  harness_wait_for (canvas_has_graph, canvas);
  g_assert_false (graft_window_is_empty (window));
  g_assert_cmpstr (gtk_window_get_title (GTK_WINDOW (window)), ==, "tiny-cnn.onnx — Graft");
  harness_window_close (window);
}

typedef struct {
  GraftGraphCanvas *canvas;
  const char *graph_name;
} GraphWait;

static gboolean
canvas_shows_graph_named (gpointer data)
{
  GraphWait *wait = data;
  GraftGraph *graph = graft_graph_canvas_get_graph (wait->canvas);

  return graph != NULL && g_strcmp0 (graph->name, wait->graph_name) == 0;
}

static void
test_node_activated_enters_body (void)
{
  GraftWindow *window = harness_window_new ();
  g_autofree char *path = generated_fixture ("make-if-model.py", "if-model.onnx");
  g_autoptr(GFile) file = g_file_new_for_path (path);
  GraftGraphCanvas *canvas = GRAFT_GRAPH_CANVAS (harness_find_type (GTK_WIDGET (window), GRAFT_TYPE_GRAPH_CANVAS));
  GraftBreadcrumbs *crumbs = GRAFT_BREADCRUMBS (harness_find_type (GTK_WIDGET (window), GRAFT_TYPE_BREADCRUMBS));
  GraphWait main_wait = { canvas, "if_model" };
  GraphWait body_wait = { canvas, NULL };
  GraftNode *branch = NULL;
  g_autoptr(GPtrArray) subgraphs = NULL;
  g_autofree char *text = NULL;
  g_autofree char *expected = NULL;

  graft_window_open_file (window, file);
  harness_wait_for (canvas_shows_graph_named, &main_wait);

  for (guint i = 0; i < graft_graph_canvas_get_graph (canvas)->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graft_graph_canvas_get_graph (canvas)->nodes, i);

      if (g_str_equal (node->op_type, "If"))
        branch = node;
    }
  g_assert_nonnull (branch);
  /* If opens on then_branch, though the file lists else_branch first. */
  subgraphs = graft_node_get_subgraphs (branch);
  g_assert_cmpuint (subgraphs->len, ==, 2);
  g_assert_cmpstr (((GraftGraph *) g_ptr_array_index (subgraphs, 0))->name, ==, "else_branch");
  body_wait.graph_name = "then_branch";
  g_signal_emit_by_name (canvas, "node-activated", branch);
  harness_wait_for (canvas_shows_graph_named, &body_wait);
  text = inspect_dup_breadcrumbs (crumbs);
  expected = g_strconcat ("if_model › If “branch_if” › ", body_wait.graph_name, NULL);
  g_assert_cmpstr (text, ==, expected);

  /* Alt+Up's action goes back out. */
  gtk_widget_activate_action (GTK_WIDGET (window), "win.parent-graph", NULL);
  harness_wait_for (canvas_shows_graph_named, &main_wait);
  harness_window_close (window);
}

int
main (int argc, char *argv[])
{
  harness_init_environment ();
  gtk_test_init (&argc, &argv, NULL);

  g_test_add_func ("/gui/window-events/drop-file-list", test_drop_file_list);
  g_test_add_func ("/gui/window-events/node-activated-enters-body", test_node_activated_enters_body);
  return g_test_run ();
}
