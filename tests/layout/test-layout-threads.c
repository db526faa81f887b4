/* Layouts from several threads at once, as several windows (and
 * graft-cli's callers) run them: Graphviz keeps global state and is not
 * thread-safe, so every result must equal the one computed alone, and
 * nothing may crash (the suite also runs under AddressSanitizer). */
#include <math.h>
#include "layout/graphviz.h"
#include "layout/layout.h"
#include "test-graphs.h"

#define N_THREADS 4
#define RUNS_PER_THREAD 3

typedef struct {
  GraftRect bounds;
  guint n_nodes, n_edges, n_groups;
  double sum_x, sum_y;  /* of the node boxes: a fingerprint of the positions */
} Fingerprint;

static void
fingerprint_scene (GraftScene *scene, Fingerprint *print)
{
  graft_scene_get_bounds (scene, &print->bounds);
  print->n_nodes = graft_scene_get_n_nodes (scene);
  print->n_edges = graft_scene_get_n_edges (scene);
  print->n_groups = graft_scene_get_n_groups (scene);
  print->sum_x = print->sum_y = 0;
  for (guint i = 0; i < print->n_nodes; i++)
    {
      GraftSceneNode *node = graft_scene_get_node (scene, i);

      print->sum_x += node->rect.x;
      print->sum_y += node->rect.y;
    }
}

/* Each thread lays out its own graph, as each window does. */
static void
lay_out (gboolean expand_all, Fingerprint *print)
{
  g_autoptr(GraftGraph) graph = test_graph_new_blocks (4, 6, 4);
  g_autoptr(GraftLayout) layout = graft_layout_new (graph);
  g_autoptr(GError) error = NULL;
  GraftScene *scene;

  if (expand_all)
    graft_layout_expand_all (layout);
  else
    graft_layout_collapse_all (layout);
  scene = graft_layout_compute (layout, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_nonnull (scene);
  fingerprint_scene (scene, print);
  graft_scene_free (scene);
}

static void
assert_same (const Fingerprint *a, const Fingerprint *b)
{
  g_assert_cmpuint (a->n_nodes, ==, b->n_nodes);
  g_assert_cmpuint (a->n_edges, ==, b->n_edges);
  g_assert_cmpuint (a->n_groups, ==, b->n_groups);
  g_assert_cmpfloat_with_epsilon (a->bounds.width, b->bounds.width, 1e-6);
  g_assert_cmpfloat_with_epsilon (a->bounds.height, b->bounds.height, 1e-6);
  g_assert_cmpfloat_with_epsilon (a->sum_x, b->sum_x, 1e-6);
  g_assert_cmpfloat_with_epsilon (a->sum_y, b->sum_y, 1e-6);
}

static const Fingerprint *expected[2];

static gpointer
layout_thread (gpointer data)
{
  guint index = GPOINTER_TO_UINT (data);

  for (guint run = 0; run < RUNS_PER_THREAD; run++)
    {
      gboolean expand_all = (index + run) % 2;
      Fingerprint print;

      lay_out (expand_all, &print);
      assert_same (&print, expected[expand_all]);
    }
  return NULL;
}

static void
test_concurrent_layouts (void)
{
  Fingerprint alone[2];
  GThread *threads[N_THREADS];

  lay_out (FALSE, &alone[0]);
  lay_out (TRUE, &alone[1]);
  g_assert_cmpuint (alone[1].n_nodes, >, alone[0].n_nodes);
  expected[0] = &alone[0];
  expected[1] = &alone[1];
  for (guint i = 0; i < N_THREADS; i++)
    threads[i] = g_thread_new ("layout", layout_thread, GUINT_TO_POINTER (i));
  for (guint i = 0; i < N_THREADS; i++)
    g_thread_join (threads[i]);
}

/* The lock is inside graft_dot_layout(): raw dot runs from threads. */
typedef struct {
  GraftDotBox boxes[60];
  GraftDotEdge edges[80];
  guint n_edges;
  GraftDotResult reference;
} DotCase;

static void
dot_case_init (DotCase *c)
{
  for (guint i = 0; i < G_N_ELEMENTS (c->boxes); i++)
    c->boxes[i] = (GraftDotBox) { 60 + (i % 7) * 10, 30, GRAFT_DOT_RANK_ANY, FALSE };
  c->n_edges = 0;
  for (guint i = 0; i + 1 < G_N_ELEMENTS (c->boxes); i++)
    {
      c->edges[c->n_edges++] = (GraftDotEdge) { i, i + 1, TRUE };
      if (i % 3 == 0 && i + 4 < G_N_ELEMENTS (c->boxes) && c->n_edges < G_N_ELEMENTS (c->edges))
        c->edges[c->n_edges++] = (GraftDotEdge) { i, i + 4, TRUE };
    }
}

static gpointer
dot_thread (gpointer data)
{
  DotCase *c = data;

  for (guint run = 0; run < RUNS_PER_THREAD; run++)
    {
      g_autoptr(GError) error = NULL;
      GraftDotResult result;

      g_assert_true (graft_dot_layout (c->boxes, G_N_ELEMENTS (c->boxes), c->edges, c->n_edges,
                                       GRAFT_LAYOUT_DIRECTION_TB, 18, 24, &result, &error));
      g_assert_no_error (error);
      g_assert_cmpfloat_with_epsilon (result.width, c->reference.width, 1e-6);
      g_assert_cmpfloat_with_epsilon (result.height, c->reference.height, 1e-6);
      for (guint i = 0; i < result.n_boxes; i++)
        {
          g_assert_cmpfloat_with_epsilon (result.centers[i].x, c->reference.centers[i].x, 1e-6);
          g_assert_cmpfloat_with_epsilon (result.centers[i].y, c->reference.centers[i].y, 1e-6);
        }
      graft_dot_result_clear (&result);
    }
  return NULL;
}

static void
test_concurrent_dot_runs (void)
{
  DotCase c;
  GThread *threads[N_THREADS];
  g_autoptr(GError) error = NULL;

  dot_case_init (&c);
  g_assert_true (graft_dot_layout (c.boxes, G_N_ELEMENTS (c.boxes), c.edges, c.n_edges,
                                   GRAFT_LAYOUT_DIRECTION_TB, 18, 24, &c.reference, &error));
  g_assert_no_error (error);
  for (guint i = 0; i < N_THREADS; i++)
    threads[i] = g_thread_new ("dot", dot_thread, &c);
  for (guint i = 0; i < N_THREADS; i++)
    g_thread_join (threads[i]);
  graft_dot_result_clear (&c.reference);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/layout-threads/concurrent-layouts", test_concurrent_layouts);
  g_test_add_func ("/layout-threads/concurrent-dot-runs", test_concurrent_dot_runs);
  return g_test_run ();
}
