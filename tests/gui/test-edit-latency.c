/* How long single GUI edits hold the UI thread on a big transformer:
 * rename, set an attribute, insert a node, bypass it, add a free node,
 * delete it, undo, mark an input dim dynamic. Each edit is asked for as
 * the sidebar, the context menu, the op picker and the Problems panel ask
 * (win.sidebar-edit, win.edit-operation's bypass-node, delete-node and
 * make-dim-dynamic, win.undo), then the window settles (relayout, redraw, the
 * check). The figure per edit is the longest stretch the main loop spent
 * without returning to poll: the longest the window could not react to
 * input or draw. The target is 100 ms.
 *
 * Each stretch is measured twice: in wall time and in the UI thread's CPU
 * time. The budget (100 ms, the target; GRAFT_EDIT_LATENCY_BUDGET_MS
 * sets another) holds the CPU figure: on the 2-core machine shared with
 * builds and other tests the wall figure of the same build doubled between
 * runs while waiting for a core, which says nothing about the program. The
 * wall figure is reported beside it. The CPU budget still catches the
 * stalls of 0.75-2.4 s this test was written to expose (a hidden
 * diagnostics panel measuring a row per problem after every check: work,
 * not waiting) and a make-dynamic repair run on the UI thread again.
 *
 * The model is GRAFT_EDIT_LATENCY_MODEL (tests/bench/bench-gui-edits
 * sets it to transformer96), else transformer24, exported here by
 * tests/fixtures/make-onnx-models.py. Figures go to the TAP output as
 * comments. The test fails when an edit is refused or over the budget. */
#include <string.h>
#include <time.h>

#include "../test-python.h"
#include "gui-fixtures.h"
#include "window-harness.h"
#include "edit/edit-operation.h"
#include "ir/graph-surgery.h"
#include "widgets/graph-canvas.h"

/* Between two polls of the main context: work the UI thread did, in wall
 * time and in the UI thread's CPU time (on a loaded machine the wall time
 * includes waits for a core; the CPU time does not). */
static gint64 last_poll_return;
static gint64 last_poll_return_cpu;
static gint64 longest_busy;
static gint64 longest_busy_cpu;
static double last_sync_ms;   /* of it, the action itself (the edit, the new graph handed to the canvas) */
static double last_sync_cpu_ms; /* the UI thread's CPU time in the action: on a loaded machine the wall
                                 * time includes waits for a core, this does not */

static gint64
thread_cpu_us (void)
{
  struct timespec now;

  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &now);
  return (gint64) now.tv_sec * G_USEC_PER_SEC + now.tv_nsec / 1000;
}

static int
timed_poll (GPollFD *fds, guint n_fds, int timeout)
{
  gint64 now = g_get_monotonic_time ();
  gint64 now_cpu = thread_cpu_us ();
  int result;

  if (last_poll_return > 0)
    {
      longest_busy = MAX (longest_busy, now - last_poll_return);
      longest_busy_cpu = MAX (longest_busy_cpu, now_cpu - last_poll_return_cpu);
    }
  result = g_poll (fds, n_fds, timeout);
  last_poll_return = g_get_monotonic_time ();
  last_poll_return_cpu = thread_cpu_us ();
  return result;
}

static GraftGraph *
shown_graph (GraftWindow *window)
{
  return graft_graph_canvas_get_graph (
    GRAFT_GRAPH_CANVAS (harness_find_type (GTK_WIDGET (window), GRAFT_TYPE_GRAPH_CANVAS)));
}

static GraftNode *
find_op (GraftGraph *graph, const char *op, guint skip)
{
  for (guint i = 0; i < graph->nodes->len; i++)
    if (g_str_equal (((GraftNode *) g_ptr_array_index (graph->nodes, i))->op, op) && skip-- == 0)
      return g_ptr_array_index (graph->nodes, i);
  return NULL;
}

/* Runs the action (as a menu item would) and lets the window settle;
 * returns the longest UI-thread stretch in wall ms and sets
 * last_longest_cpu_ms. */
static double last_longest_cpu_ms;

static double
timed_activate (GraftWindow *window, const char *action, GVariant *target)
{
  g_autoptr(GVariant) owned = target ? g_variant_ref_sink (target) : NULL;
  gint64 start = g_get_monotonic_time ();
  gint64 cpu_start = thread_cpu_us ();
  gint64 sync;

  longest_busy = 0;
  last_poll_return = start;
  last_poll_return_cpu = cpu_start;
  gtk_widget_activate_action_variant (GTK_WIDGET (window), action, owned);
  sync = g_get_monotonic_time () - start;
  last_sync_cpu_ms = (thread_cpu_us () - cpu_start) / 1000.0;
  longest_busy = 0;
  longest_busy_cpu = 0;
  harness_settle (window);
  last_sync_ms = sync / 1000.0;
  last_longest_cpu_ms = MAX (longest_busy_cpu / 1000.0, last_sync_cpu_ms);
  return MAX (longest_busy, sync) / 1000.0;
}

static double
timed_edit (GraftWindow *window, const char *id, GVariant *params)
{
  return timed_activate (window, "win.sidebar-edit", g_variant_new ("(s@a{sv})", id, params));
}

#define DEFAULT_BUDGET_MS 100.0

static double
budget_ms (void)
{
  const char *given = g_getenv ("GRAFT_EDIT_LATENCY_BUDGET_MS");

  return given != NULL && *given != '\0' ? g_ascii_strtod (given, NULL) : DEFAULT_BUDGET_MS;
}

static GString *over_budget;   /* the edits that held the UI thread too long */

/* ms: the wall figure of timed_activate(); the budget holds the CPU one. */
static void
report (const char *what, double ms, GString *summary)
{
  g_test_message ("%-34s longest UI-thread stretch %7.1f ms wall, %6.1f ms CPU (the action itself %.1f ms, "
                  "%.1f ms of CPU)%s",
                  what, ms, last_longest_cpu_ms, last_sync_ms, last_sync_cpu_ms,
                  last_longest_cpu_ms > 100 ? "  (over 100 ms of CPU)" : "");
  g_string_append_printf (summary, "%s%s %.0f ms CPU (%.0f wall)", summary->len ? ", " : "", what,
                          last_longest_cpu_ms, ms);
  if (last_longest_cpu_ms > budget_ms ())
    g_string_append_printf (over_budget, "%s%s %.0f ms", over_budget->len ? ", " : "", what, last_longest_cpu_ms);
}

static void
test_edit_latency (void)
{
  GraftWindow *window = harness_window_new ();
  g_autofree char *path = transformer_fixture ("GRAFT_EDIT_LATENCY_MODEL");
  g_autoptr(GString) summary = g_string_new (NULL);
  g_autoptr(GString) over = g_string_new (NULL);
  GraftNode *softmax, *matmul;
  g_autofree char *softmax_name = NULL, *edge = NULL, *renamed = NULL, *input = NULL, *dynamic = NULL;
  gint64 start;
  GraftGraph *graph;

  /* Opening transformer96 and proving mark dynamic at other sizes take
   * minutes on a loaded machine; the default 60 s wait would fail the
   * bench before it measures anything. A hang still fails, later. */
  harness_set_wait_seconds (600);
  start = g_get_monotonic_time ();
  harness_open (window, path);
  graph = shown_graph (window);
  g_test_message ("%s: %u nodes, opened and laid out in %.1f s", path, graph->nodes->len,
                  (g_get_monotonic_time () - start) / 1e6);
  over_budget = over;
  g_main_context_set_poll_func (NULL, timed_poll);

  softmax = find_op (graph, "onnx::Softmax", 0);
  matmul = find_op (graph, "onnx::MatMul", 3);
  g_assert_nonnull (softmax);
  g_assert_nonnull (matmul);
  softmax_name = g_strdup (softmax->name);
  edge = g_strdup (((GraftValue *) g_ptr_array_index (matmul->outputs, 0))->name);
  renamed = g_strconcat (softmax_name, "_renamed", NULL);

  report ("rename node", timed_edit (window, "rename-node", graft_edit_params_new (
    "node", g_variant_new_string (softmax_name), "to", g_variant_new_string (renamed), NULL)), summary);
  g_assert_nonnull (graft_graph_find_node (shown_graph (window), renamed));

  report ("set attribute (Softmax axis)", timed_edit (window, "set-attribute", graft_edit_params_new (
    "node", g_variant_new_string (renamed), "name", g_variant_new_string ("axis"),
    "value", g_variant_new_string ("-1"), NULL)), summary);
  g_assert_cmpint (graft_node_get_attribute (graft_graph_find_node (shown_graph (window), renamed), "axis")->i, ==, -1);

  report ("insert node (Relu on a MatMul)", timed_edit (window, "insert-node", graft_edit_params_new (
    "value", g_variant_new_string (edge), "op", g_variant_new_string ("Relu"),
    "name", g_variant_new_string ("latency_relu"), NULL)), summary);
  g_assert_nonnull (graft_graph_find_node (shown_graph (window), "latency_relu"));
  /* Not timed: the edited graph as drawn, the new node selected and in
   * view, for a person to look at (overlapping or cut-off text). */
  harness_activate (window, "win.select-node::latency_relu");
  harness_screenshot (window, "edit-latency-inserted");

  report ("bypass node (the Relu)", timed_activate (window, "win.edit-operation",
                                                     g_variant_new ("(sss)", "bypass-node", "latency_relu", "")),
          summary);
  g_assert_null (graft_graph_find_node (shown_graph (window), "latency_relu"));

  report ("add node (free, graph output)", timed_edit (window, "add-node", graft_edit_params_new (
    "op", g_variant_new_string ("Relu"), "name", g_variant_new_string ("latency_free"),
    "inputs", g_variant_new_strv ((const char *[]) { edge }, 1), NULL)), summary);
  g_assert_nonnull (graft_graph_find_node (shown_graph (window), "latency_free"));

  report ("delete node (the free one)", timed_activate (window, "win.edit-operation",
                                                         g_variant_new ("(sss)", "delete-node", "latency_free", "")),
          summary);
  g_assert_null (graft_graph_find_node (shown_graph (window), "latency_free"));

  report ("undo", timed_activate (window, "win.undo", NULL), summary);
  g_assert_nonnull (graft_graph_find_node (shown_graph (window), "latency_free"));

  /* The repair (baked shape constants, then inference: a third of a
   * second of CPU on transformer96) runs on a worker, and so does the proof
   * at other sizes; the settle waits for both (minutes on transformer96 on
   * a loaded machine). Only the UI thread's stretches count, as for the
   * other edits: the action, and taking in the edited graph. */
  input = g_strdup (((GraftValue *) g_ptr_array_index (shown_graph (window)->inputs, 0))->name);
  dynamic = g_strdup_printf ("%s:0=seq", input);
  report ("mark dynamic (input axis 0)", timed_activate (window, "win.edit-operation",
                                                          g_variant_new ("(sss)", "make-dim-dynamic", "", dynamic)),
          summary);
  g_assert_cmpint (((GraftValue *) g_ptr_array_index (shown_graph (window)->inputs, 0))->shape.dims[0].kind, ==,
                   GRAFT_DIM_SYMBOLIC);

  g_main_context_set_poll_func (NULL, g_poll);
  harness_set_wait_seconds (0);
  g_test_message ("summary: %s", summary->str);
  harness_window_close (window);
  over_budget = NULL;
  if (over->len > 0)
    g_error ("over the %.0f ms budget: %s", budget_ms (), over->str);
}

int
main (int argc, char **argv)
{
  harness_init_environment ();
  gtk_test_init (&argc, &argv, NULL);
  g_test_add_func ("/gui/edit-latency", test_edit_latency);
  return g_test_run ();
}
