/* Many dot runs in one process, as a long GUI session makes them.
 * Graphviz 2.42 corrupts a layout once its per-process component counter
 * wraps (see the decompose() guard in layout/graphviz.c); before the guard,
 * this crashed within the first few hundred runs. Each run must also give
 * the same picture as the first run of the same graph. */
#include <glib.h>

#include "layout/graphviz.h"

#define RUNS 1500

typedef struct {
  GraftDotBox boxes[10];
  guint n_boxes;
  GraftDotEdge edges[12];
  guint n_edges;
  GraftDotResult reference;
} DotGraph;

/* A group's graph as the layout hands it to dot: an entry port on the first
 * rank, an exit port on the last, boxes of operator sizes between. */
static void
ported_graph_init (DotGraph *graph)
{
  static const guint ends[][2] = {
    { 8, 2 }, { 8, 3 }, { 1, 3 }, { 3, 4 }, { 4, 5 }, { 0, 5 },
    { 5, 6 }, { 2, 6 }, { 6, 7 }, { 7, 9 },
  };

  graph->n_boxes = 10;
  for (guint i = 0; i < 8; i++)
    graph->boxes[i] = (GraftDotBox) { 56 + 9 * (i % 4), 34 + 11 * (i % 3), GRAFT_DOT_RANK_ANY, FALSE };
  graph->boxes[8] = (GraftDotBox) { 1, 1, GRAFT_DOT_RANK_FIRST, TRUE };
  graph->boxes[9] = (GraftDotBox) { 1, 1, GRAFT_DOT_RANK_LAST, TRUE };
  graph->n_edges = G_N_ELEMENTS (ends);
  for (guint i = 0; i < graph->n_edges; i++)
    graph->edges[i] = (GraftDotEdge) { ends[i][0], ends[i][1], ends[i][1] != 9 };
}

/* No rank constraints: dot runs one decompose() less on it. */
static void
plain_graph_init (DotGraph *graph)
{
  graph->n_boxes = 6;
  for (guint i = 0; i < graph->n_boxes; i++)
    graph->boxes[i] = (GraftDotBox) { 70, 40, GRAFT_DOT_RANK_ANY, FALSE };
  graph->n_edges = 0;
  for (guint i = 0; i + 1 < graph->n_boxes; i++)
    graph->edges[graph->n_edges++] = (GraftDotEdge) { i, i + 1, TRUE };
  graph->edges[graph->n_edges++] = (GraftDotEdge) { 0, 3, TRUE };
}

/* run: a node separation a billionth of a point wider per run, which dot
 * never sees (it is given inches to four places), so that graft_dot_layout()
 * does not answer from what it laid out before: every run is a dot run. */
static void
lay_out (DotGraph *graph, guint run, GraftDotResult *result)
{
  g_autoptr(GError) error = NULL;
  guint runs_before = graft_dot_get_n_runs ();

  g_assert_true (graft_dot_layout (graph->boxes, graph->n_boxes, graph->edges, graph->n_edges,
                                   GRAFT_LAYOUT_DIRECTION_TB, 14 + run * 1e-9, 30, result, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (graft_dot_get_n_runs (), ==, runs_before + 1);
}

static void
assert_same_layout (const GraftDotResult *a, const GraftDotResult *b)
{
  g_assert_cmpfloat_with_epsilon (a->width, b->width, 1e-6);
  g_assert_cmpfloat_with_epsilon (a->height, b->height, 1e-6);
  g_assert_cmpuint (a->n_boxes, ==, b->n_boxes);
  for (guint i = 0; i < a->n_boxes; i++)
    {
      g_assert_cmpfloat_with_epsilon (a->centers[i].x, b->centers[i].x, 1e-6);
      g_assert_cmpfloat_with_epsilon (a->centers[i].y, b->centers[i].y, 1e-6);
    }
}

static void
test_many_runs (void)
{
  DotGraph graphs[2];

  ported_graph_init (&graphs[0]);
  plain_graph_init (&graphs[1]);
  for (guint g = 0; g < G_N_ELEMENTS (graphs); g++)
    lay_out (&graphs[g], RUNS + g, &graphs[g].reference);

  /* Two ported runs to one plain run, so the counter meets every graph at
   * every phase of its wrap. */
  for (guint run = 0; run < RUNS; run++)
    {
      DotGraph *graph = &graphs[run % 3 == 2];
      GraftDotResult result;

      lay_out (graph, run, &result);
      assert_same_layout (&result, &graph->reference);
      graft_dot_result_clear (&result);
    }
  for (guint g = 0; g < G_N_ELEMENTS (graphs); g++)
    graft_dot_result_clear (&graphs[g].reference);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/layout/dot-long-session", test_many_runs);
  return g_test_run ();
}
