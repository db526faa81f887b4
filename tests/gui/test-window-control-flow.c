/* Issue 19's inline control flow, in the real window under Xvfb: a click
 * (sent by the X server) on the "+" box of a scripted prim::If opens its
 * then and else bodies in place and selects it; Expand All opens the
 * bodies of every If and Loop, BatchNorm's dead `if self.training:`
 * branches greyed among them. Screenshots in BUILD/tests/gui/screenshots. */
#include <string.h>

#include "gui-fixtures.h"
#include "xdotool-input.h"
#include "window-harness.h"
#include "ir/fixed-branch.h"
#include "layout/painter.h"
#include "widgets/graph-canvas.h"

static GraftGraphCanvas *
find_canvas (GraftWindow *window)
{
  return GRAFT_GRAPH_CANVAS (harness_find_type (GTK_WIDGET (window), GRAFT_TYPE_GRAPH_CANVAS));
}

static GraftGraph *
branch (GraftNode *node, const char *name)
{
  GraftAttribute *attribute = graft_node_get_attribute (node, name);

  g_assert_nonnull (attribute);
  g_assert_cmpint (attribute->type, ==, GRAFT_ATTR_GRAPH);
  return attribute->g;
}

/* The first prim::If of graph with nodes in both branches whose branch
 * depends on the input (fixed: FALSE: the model's own `if`), or on the
 * module's attributes (fixed: TRUE: BatchNorm's `if self.training:`). */
static GraftNode *
find_if (GraftGraph *graph, gboolean fixed)
{
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);

      if (node->op == g_intern_static_string ("prim::If") && (graft_if_get_fixed_branch (node) != NULL) == fixed
          && branch (node, "then_branch")->nodes->len > 0 && branch (node, "else_branch")->nodes->len > 0)
        return node;
    }
  g_assert_not_reached ();
}

static gboolean
rect_inside (const GraftRect *inner, const GraftRect *outer)
{
  return inner->x >= outer->x && inner->y >= outer->y && inner->x + inner->width <= outer->x + outer->width
         && inner->y + inner->height <= outer->y + outer->height;
}

/* Click the "+" box of node, sent by the X server, with node in view. */
static void
click_inline_mark (GraftWindow *window, GraftGraphCanvas *canvas, GraftNode *node, const char *screenshot)
{
  GraftSceneNode box = { 0 };
  GraftRect mark, visible, bounds;
  double x, y;

  graft_graph_canvas_select_node (canvas, node);
  graft_graph_canvas_show_selection_readable (canvas);
  harness_settle (window);
  /* Selecting the If leaves its bodies closed. */
  graft_graph_canvas_select_node (canvas, NULL);
  harness_settle (window);
  g_assert_true (graft_graph_canvas_get_node_bounds (canvas, node, &box.rect));
  graft_painter_get_inline_mark (&box, &mark);
  graft_graph_canvas_scene_to_screen (canvas, mark.x + mark.width / 2, mark.y + mark.height / 2, &x, &y);
  g_assert_true (graft_graph_canvas_get_view (canvas, &visible, &bounds));
  g_assert_true (rect_inside (&mark, &visible));
  if (screenshot != NULL)
    harness_screenshot (window, screenshot);
  xdotool_click_widget (window, GTK_WIDGET (canvas), x, y);
  harness_settle (window);
}

static GtkWidget *
find_popover (GtkWidget *canvas)
{
  for (GtkWidget *child = gtk_widget_get_first_child (canvas); child != NULL; child = gtk_widget_get_next_sibling (child))
    if (GTK_IS_POPOVER (child) && gtk_widget_get_visible (child))
      return child;
  return NULL;
}

/* A right-click sent by the X server at the centre of node's box. */
static void
right_click_node (GraftWindow *window, GraftGraphCanvas *canvas, GraftNode *node)
{
  GraftRect rect;
  graphene_point_t point;
  double x, y, offset_x, offset_y;
  g_autofree char *x_text = NULL;
  g_autofree char *y_text = NULL;

  g_assert_true (graft_graph_canvas_get_node_bounds (canvas, node, &rect));
  graft_graph_canvas_scene_to_screen (canvas, rect.x + rect.width / 2, rect.y + rect.height / 2, &x, &y);
  gtk_native_get_surface_transform (GTK_NATIVE (window), &offset_x, &offset_y);
  g_assert_true (gtk_widget_compute_point (GTK_WIDGET (canvas), GTK_WIDGET (window), &GRAPHENE_POINT_INIT (x, y),
                                           &point));
  x_text = g_strdup_printf ("%d", (int) (point.x + offset_x));
  y_text = g_strdup_printf ("%d", (int) (point.y + offset_y));
  {
    const char *commands[] = { "windowfocus", "WINDOW", "mousemove", "--window", "WINDOW", x_text, y_text,
                               "click", "3", NULL };

    xdotool_run (window, commands);
  }
}

static void
test_control_flow_inline (void)
{
  GraftWindow *window;
  g_autofree char *path = NULL;
  GraftGraphCanvas *canvas;
  GraftNode *if_node, *dead_if;
  GraftNode *then_node, *else_node, *dead_node;
  GraftRect then_rect, else_rect, if_rect;
  g_autoptr (GHashTable) state = NULL;

  if (!xdotool_available ())
    return;
  window = harness_window_new ();
  canvas = find_canvas (window);
  path = generated_fixture ("make-control-flow-model.py", "control-flow.pt");
  harness_open (window, path);

  if_node = find_if (graft_graph_canvas_get_graph (canvas), FALSE);
  then_node = g_ptr_array_index (branch (if_node, "then_branch")->nodes, 0);
  else_node = g_ptr_array_index (branch (if_node, "else_branch")->nodes, 0);
  g_test_message ("the if: %s; then: %s (%s); else: %s (%s)", if_node->name, then_node->name, then_node->op,
                  else_node->name, else_node->op);
  /* Closed by default: one box, no body node shown. */
  g_assert_false (graft_graph_canvas_get_node_bounds (canvas, then_node, &then_rect));

  /* Bring the If into view at a readable zoom, then click its "+" box. */
  click_inline_mark (window, canvas, if_node, "control-flow-if-closed");

  /* Both branches open beside each other below the If, which is selected. */
  g_assert_true (graft_graph_canvas_get_node_bounds (canvas, then_node, &then_rect));
  g_assert_true (graft_graph_canvas_get_node_bounds (canvas, else_node, &else_rect));
  g_assert_true (graft_graph_canvas_get_node_bounds (canvas, if_node, &if_rect));
  g_assert_false (graft_rect_intersects (&then_rect, &else_rect));
  g_assert_cmpfloat (then_rect.y, >, if_rect.y + if_rect.height);
  g_assert_true (graft_graph_canvas_get_selected_node (canvas) == if_node);
  state = harness_window_state (window);
  g_assert_cmpstr (g_hash_table_lookup (state, "selected-node"), ==, if_node->name);
  harness_screenshot (window, "control-flow-if-open-selected");

  /* A node of a body opened in place is selectable; edits address nodes
   * of the graph shown, so its menu offers the body's own view instead. */
  right_click_node (window, canvas, then_node);
  g_assert_true (graft_graph_canvas_get_selected_node (canvas) == then_node);
  {
    GtkWidget *popover = find_popover (GTK_WIDGET (canvas));
    GtkLabel *item;

    g_assert_nonnull (popover);
    g_assert_null (harness_find_label (popover, "Rename"));
    item = harness_find_label (popover, "Open Its Body to Edit");
    g_assert_nonnull (item);
    harness_activate (window, "win.delete-selection");
    g_assert_true (graft_graph_canvas_get_selected_node (canvas) == then_node);
    g_assert_nonnull (harness_find_label (GTK_WIDGET (window), "edited in the body's own view"));
    g_signal_emit_by_name (gtk_widget_get_ancestor (GTK_WIDGET (item), GTK_TYPE_BUTTON), "clicked");
    harness_settle (window);
  }
  g_assert_true (graft_graph_canvas_get_graph (canvas) == then_node->graph);
  g_assert_true (graft_graph_canvas_get_selected_node (canvas) == then_node);
  harness_activate (window, "win.parent-graph");
  g_assert_true (graft_graph_canvas_get_graph (canvas) == if_node->graph);

  /* Expand All: the Loop's body too, and BatchNorm's Ifs with their dead
   * branches (greyed; the If says which never runs). */
  harness_activate (window, "win.expand-all");
  dead_if = find_if (graft_graph_canvas_get_graph (canvas), TRUE);
  dead_node = g_ptr_array_index (branch (dead_if, "then_branch")->nodes, 0);
  g_assert_true (graft_graph_canvas_get_node_bounds (canvas, dead_node, &then_rect));
  graft_graph_canvas_select_node (canvas, dead_if);
  graft_graph_canvas_show_selection_readable (canvas);
  harness_settle (window);
  harness_screenshot (window, "control-flow-dead-branch");
  g_clear_pointer (&state, g_hash_table_unref);
  state = harness_window_state (window);
  /* Lint counts no control flow in them. */
  g_test_message ("problems: %s", (const char *) g_hash_table_lookup (state, "diagnostics"));
  harness_window_close (window);
}

static GraftNode *
find_node (GraftGraph *graph, const char *name)
{
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);

      if (g_strcmp0 (node->name, name) == 0)
        return node;
    }
  g_assert_not_reached ();
}

/* An ONNX If opened in place stays open across an edit and its undo (the
 * edit shows a new copy of the graph). */
static void
test_control_flow_survives_edit (void)
{
  GraftWindow *window;
  g_autofree char *path = NULL;
  GraftGraphCanvas *canvas;
  GraftNode *then_node;
  GraftRect rect;

  if (!xdotool_available ())
    return;
  window = harness_window_new ();
  canvas = find_canvas (window);
  path = generated_fixture ("make-if-model.py", "if-model.onnx");
  harness_open (window, path);
  click_inline_mark (window, canvas, find_node (graft_graph_canvas_get_graph (canvas), "branch_if"), NULL);
  then_node = g_ptr_array_index (branch (find_node (graft_graph_canvas_get_graph (canvas), "branch_if"),
                                         "then_branch")->nodes, 0);
  g_assert_true (graft_graph_canvas_get_node_bounds (canvas, then_node, &rect));

  harness_activate (window, "win.edit-operation(('make-dim-dynamic', '', 'x:0=batch'))");
  then_node = g_ptr_array_index (branch (find_node (graft_graph_canvas_get_graph (canvas), "branch_if"),
                                         "then_branch")->nodes, 0);
  harness_screenshot (window, "control-flow-onnx-if-after-edit");
  g_assert_true (graft_graph_canvas_get_node_bounds (canvas, then_node, &rect));
  harness_activate (window, "win.undo");
  then_node = g_ptr_array_index (branch (find_node (graft_graph_canvas_get_graph (canvas), "branch_if"),
                                         "then_branch")->nodes, 0);
  g_assert_true (graft_graph_canvas_get_node_bounds (canvas, then_node, &rect));
  harness_window_close (window);
}

int
main (int argc, char *argv[])
{
  harness_init_environment ();
  gtk_test_init (&argc, &argv, NULL);

  g_test_add_func ("/gui/control-flow/inline", test_control_flow_inline);
  g_test_add_func ("/gui/control-flow/survives-edit", test_control_flow_survives_edit);
  return g_test_run ();
}
