#define _GNU_SOURCE
#include "layout/graphviz.h"

#include <dlfcn.h>
#include <math.h>
#include <string.h>
#include <gio/gio.h>
#include <graphviz/gvc.h>

static GMutex graphviz_lock;
static GVC_t *graphviz_context;

/* A guard around dot's decompose() for Graphviz 2.42 (Debian 12 and 13).
 *
 * decompose() finds a graph's connected components and marks each node it
 * visits with a process-wide counter, `static char Cmark`, bumped once per
 * call and wrapped from 255 to 1. acyclic() marks every node TRUE (1) before
 * the later decompose() calls of the same layout (rank constraints, mincross).
 * So once in about 255 calls, after about a hundred layouts in one process,
 * the counter is 1 when the nodes already carry 1: decompose() takes them
 * for visited, leaves them out of every component, and mincross then reads
 * freed or unset edge lists (SIGSEGV in decompose, double free in
 * dot_cleanup). The window test suite hit it every other run.
 *
 * The plugin calls decompose() through its PLT, so a definition exported by
 * the executable (see graphviz.list) is the one it binds to. This
 * one runs the plugin's own decompose() and, when that run used mark 1 — the
 * components' nodes then carry it — or found no component in a graph with
 * nodes, runs it once more: the counter has moved on to 2, which nothing but
 * decompose() writes, and the second run recomputes every list the first one
 * set. On a Graphviz without the bug the extra run is only redundant work. */

typedef void (*DecomposeFunc) (graph_t *graph, int pass);

/* Called by the dot plugin only, under the lock of graft_dot_layout(). */
void decompose (graph_t *graph, int pass);

static DecomposeFunc
find_plugin_decompose (void)
{
  static DecomposeFunc plugin_decompose;
  void *plugin;

  if (plugin_decompose != NULL)
    return plugin_decompose;
  /* Already loaded: its code is what called us. The handle's own
   * definition comes first in a lookup through it, not ours. */
  plugin = dlopen ("libgvplugin_dot_layout.so.6", RTLD_LAZY | RTLD_NOLOAD);
  if (plugin != NULL)
    plugin_decompose = (DecomposeFunc) dlsym (plugin, "decompose");
  if (plugin_decompose == NULL || plugin_decompose == decompose)
    g_error ("Graphviz: cannot find the dot plugin's decompose(): %s", dlerror ());
  /* The plugin stays loaded for the process's life; keep the reference. */
  return plugin_decompose;
}

static gboolean
decompose_used_mark_one (graph_t *graph)
{
  if (GD_comp (graph).size == 0)
    return agfstnode (graph) != NULL;
  return GD_comp (graph).list[0] != NULL && ND_mark (GD_comp (graph).list[0]) == 1;
}

void
decompose (graph_t *graph, int pass)
{
  DecomposeFunc plugin_decompose = find_plugin_decompose ();

  plugin_decompose (graph, pass);
  if (decompose_used_mark_one (graph))
    plugin_decompose (graph, pass);
}

static void
format_inches (char *buffer, gsize size, double points)
{
  g_ascii_formatd (buffer, size, "%.4f", MAX (points, 0.01) / POINTS_PER_INCH);
}

static double
distance2 (GraftPoint a, GraftPoint b)
{
  return (a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y);
}

/* Squared distance from p to a box given by centre and size (0 inside). */
static double
box_distance2 (GraftPoint p, GraftPoint centre, const GraftDotBox *box)
{
  double dx = MAX (fabs (p.x - centre.x) - box->width / 2, 0);
  double dy = MAX (fabs (p.y - centre.y) - box->height / 2, 0);

  return dx * dx + dy * dy;
}

/* Reads one edge's spline, turned into our frame and oriented tail to head. */
static void
read_spline (Agedge_t *edge, const boxf *bb, GraftPoint tail, const GraftDotBox *tail_box,
             GraftPoint head, const GraftDotBox *head_box, gboolean arrow, GraftDotSpline *spline)
{
  splines *spl = ED_spl (edge);
  bezier *bz;
  GraftPoint tip = { 0 };
  gboolean has_tip = FALSE;

  if (spl == NULL || spl->size == 0 || spl->list[0].size < 4)
    {
      /* dot could not route it: a straight cubic between the centres. */
      spline->n_points = 4;
      spline->points = g_new (GraftPoint, 4);
      spline->points[0] = tail;
      spline->points[1] = (GraftPoint) { (2 * tail.x + head.x) / 3, (2 * tail.y + head.y) / 3 };
      spline->points[2] = (GraftPoint) { (tail.x + 2 * head.x) / 3, (tail.y + 2 * head.y) / 3 };
      spline->points[3] = head;
      spline->has_arrow = FALSE;
      return;
    }

  bz = &spl->list[0];
  spline->n_points = bz->size;
  spline->points = g_new (GraftPoint, bz->size);
  for (int i = 0; i < bz->size; i++)
    spline->points[i] = (GraftPoint) { bz->list[i].x - bb->LL.x, bb->UR.y - bz->list[i].y };
  if (bz->eflag)
    {
      tip = (GraftPoint) { bz->ep.x - bb->LL.x, bb->UR.y - bz->ep.y };
      has_tip = TRUE;
    }
  else if (bz->sflag)
    {
      tip = (GraftPoint) { bz->sp.x - bb->LL.x, bb->UR.y - bz->sp.y };
      has_tip = TRUE;
    }

  /* Edges dot reversed to break cycles may come head first. Boxes can be
   * tall group boxes, so compare distances to the boxes, not the centres. */
  if (box_distance2 (spline->points[0], head, head_box) + box_distance2 (spline->points[bz->size - 1], tail, tail_box)
      < box_distance2 (spline->points[0], tail, tail_box) + box_distance2 (spline->points[bz->size - 1], head, head_box))
    for (guint i = 0; i < spline->n_points / 2; i++)
      {
        GraftPoint swap = spline->points[i];
        spline->points[i] = spline->points[spline->n_points - 1 - i];
        spline->points[spline->n_points - 1 - i] = swap;
      }

  spline->has_arrow = arrow && has_tip
                      && distance2 (tip, spline->points[spline->n_points - 1])
                           < distance2 (tip, spline->points[0]);
  spline->tip = tip;
}

/* Graphviz prints its warnings on stderr; graft-cli promises one line there
 * on failure and nothing on success, so they go to the debug log. */
static int
log_graphviz_message (char *message)
{
  g_debug ("Graphviz: %s", message);
  return 0;
}

/* Results by their input, so that alike groups (a model's 25,000 blocks of
 * MatMul → Add → Relu → Tanh, a transformer's layers) run dot once: its
 * output depends on nothing else. Bounded in entries and in bytes (a long
 * session lays out many graphs): emptied when full. */
#define MEMO_LIMIT 4096
#define MEMO_BYTE_LIMIT (64 * 1024 * 1024)
static GHashTable *memo; /* GBytes (the input) → GraftDotResult* */
static gsize memo_bytes;
static guint n_dot_runs;

static gsize
result_bytes (const GraftDotResult *result)
{
  gsize bytes = sizeof *result + result->n_boxes * sizeof (GraftPoint) + result->n_edges * sizeof (GraftDotSpline);

  for (guint i = 0; i < result->n_edges; i++)
    bytes += result->splines[i].n_points * sizeof (GraftPoint);
  return bytes;
}

guint
graft_dot_get_n_runs (void)
{
  G_GNUC_UNUSED g_autoptr (GMutexLocker) locker = g_mutex_locker_new (&graphviz_lock);

  return n_dot_runs;
}

static void
put_double (GByteArray *key, double value)
{
  g_byte_array_append (key, (const guint8 *) &value, sizeof value);
}

static void
put_uint (GByteArray *key, guint value)
{
  g_byte_array_append (key, (const guint8 *) &value, sizeof value);
}

static GBytes *
memo_key (const GraftDotBox *boxes, guint n_boxes, const GraftDotEdge *edges, guint n_edges,
          GraftLayoutDirection direction, double node_separation, double rank_separation)
{
  GByteArray *key = g_byte_array_sized_new (16 + 24 * n_boxes + 12 * n_edges);

  put_uint (key, direction);
  put_double (key, node_separation);
  put_double (key, rank_separation);
  put_uint (key, n_boxes);
  for (guint i = 0; i < n_boxes; i++)
    {
      put_double (key, boxes[i].width);
      put_double (key, boxes[i].height);
      put_uint (key, boxes[i].rank | (boxes[i].point ? 0x100 : 0));
    }
  for (guint i = 0; i < n_edges; i++)
    {
      put_uint (key, edges[i].tail);
      put_uint (key, edges[i].head);
      put_uint (key, edges[i].arrow);
    }
  return g_byte_array_free_to_bytes (key);
}

static void
copy_result (GraftDotResult *dest, const GraftDotResult *source)
{
  *dest = *source;
  dest->centers = g_memdup2 (source->centers, sizeof (GraftPoint) * MAX (source->n_boxes, 1));
  dest->splines = g_memdup2 (source->splines, sizeof (GraftDotSpline) * MAX (source->n_edges, 1));
  for (guint i = 0; i < source->n_edges; i++)
    dest->splines[i].points = g_memdup2 (source->splines[i].points, sizeof (GraftPoint) * source->splines[i].n_points);
}

static void
free_memo_result (gpointer data)
{
  graft_dot_result_clear (data);
  g_free (data);
}

static gboolean dot_layout (const GraftDotBox *boxes, guint n_boxes, const GraftDotEdge *edges, guint n_edges,
                            GraftLayoutDirection direction, double node_separation, double rank_separation,
                            GraftDotResult *result, GError **error);

gboolean
graft_dot_layout (const GraftDotBox *boxes, guint n_boxes,
                  const GraftDotEdge *edges, guint n_edges,
                  GraftLayoutDirection direction,
                  double node_separation, double rank_separation,
                  GraftDotResult *result, GError **error)
{
  G_GNUC_UNUSED g_autoptr (GMutexLocker) locker = g_mutex_locker_new (&graphviz_lock);
  g_autoptr (GBytes) key = memo_key (boxes, n_boxes, edges, n_edges, direction, node_separation, rank_separation);
  GraftDotResult *known;

  if (memo == NULL)
    memo = g_hash_table_new_full (g_bytes_hash, g_bytes_equal, (GDestroyNotify) g_bytes_unref, free_memo_result);
  known = g_hash_table_lookup (memo, key);
  if (known != NULL)
    {
      copy_result (result, known);
      return TRUE;
    }
  n_dot_runs++;
  if (!dot_layout (boxes, n_boxes, edges, n_edges, direction, node_separation, rank_separation, result, error))
    return FALSE;
  if (g_hash_table_size (memo) >= MEMO_LIMIT || memo_bytes + result_bytes (result) > MEMO_BYTE_LIMIT)
    {
      g_hash_table_remove_all (memo);
      memo_bytes = 0;
    }
  known = g_new (GraftDotResult, 1);
  copy_result (known, result);
  memo_bytes += result_bytes (known) + g_bytes_get_size (key);
  g_hash_table_insert (memo, g_steal_pointer (&key), known);
  return TRUE;
}

/* Under graphviz_lock. */
static gboolean
dot_layout (const GraftDotBox *boxes, guint n_boxes, const GraftDotEdge *edges, guint n_edges,
            GraftLayoutDirection direction, double node_separation, double rank_separation,
            GraftDotResult *result, GError **error)
{
  g_autofree Agnode_t **nodes = g_new0 (Agnode_t *, MAX (n_boxes, 1));
  g_autofree Agedge_t **dot_edges = g_new0 (Agedge_t *, MAX (n_edges, 1));
  Agraph_t *graph, *first_rank = NULL, *last_rank = NULL;
  Agsym_t *width_sym, *height_sym, *shape_sym, *arrow_sym;
  char buffer[G_ASCII_DTOSTR_BUF_SIZE];
  char name[32];
  boxf bb;

  memset (result, 0, sizeof *result);
  if (graphviz_context == NULL)
    {
      agseterrf (log_graphviz_message);
      graphviz_context = gvContext ();
    }

  graph = agopen ((char *) "g", Agdirected, NULL);
  agattr (graph, AGRAPH, (char *) "rankdir", direction == GRAFT_LAYOUT_DIRECTION_LR ? (char *) "LR" : (char *) "TB");
  format_inches (buffer, sizeof buffer, node_separation);
  agattr (graph, AGRAPH, (char *) "nodesep", buffer);
  format_inches (buffer, sizeof buffer, rank_separation);
  agattr (graph, AGRAPH, (char *) "ranksep", buffer);
  agattr (graph, AGRAPH, (char *) "rank", (char *) "");
  /* Network simplex for the x coordinates stops after 20 × its nodes'
   * iterations. A value read by every layer of a deep model (a 96-layer
   * transformer's attention mask: 96 edges from the top, thousands of
   * virtual nodes) took it 6.5 s on 98 boxes, and 0.9 s with the cap; the
   * models of the tests converge well before it (the same pictures). */
  agattr (graph, AGRAPH, (char *) "nslimit", (char *) "20");
  shape_sym = agattr (graph, AGNODE, (char *) "shape", (char *) "box");
  agattr (graph, AGNODE, (char *) "fixedsize", (char *) "true");
  /* No text: sizes are ours, so dot never needs to measure anything. */
  agattr (graph, AGNODE, (char *) "label", (char *) "");
  width_sym = agattr (graph, AGNODE, (char *) "width", (char *) "0.75");
  height_sym = agattr (graph, AGNODE, (char *) "height", (char *) "0.5");
  arrow_sym = agattr (graph, AGEDGE, (char *) "arrowhead", (char *) "normal");
  agattr (graph, AGEDGE, (char *) "arrowsize", (char *) "0.7");

  for (guint i = 0; i < n_boxes; i++)
    {
      g_snprintf (name, sizeof name, "n%u", i);
      nodes[i] = agnode (graph, name, 1);
      format_inches (buffer, sizeof buffer, boxes[i].width);
      agxset (nodes[i], width_sym, buffer);
      format_inches (buffer, sizeof buffer, boxes[i].height);
      agxset (nodes[i], height_sym, buffer);
      if (boxes[i].point)
        agxset (nodes[i], shape_sym, (char *) "point");
      if (boxes[i].rank == GRAFT_DOT_RANK_FIRST)
        {
          if (first_rank == NULL)
            {
              first_rank = agsubg (graph, (char *) "first", 1);
              agset (first_rank, (char *) "rank", (char *) "source");
            }
          agsubnode (first_rank, nodes[i], 1);
        }
      else if (boxes[i].rank == GRAFT_DOT_RANK_LAST)
        {
          if (last_rank == NULL)
            {
              last_rank = agsubg (graph, (char *) "last", 1);
              agset (last_rank, (char *) "rank", (char *) "sink");
            }
          agsubnode (last_rank, nodes[i], 1);
        }
    }
  for (guint i = 0; i < n_edges; i++)
    {
      g_snprintf (name, sizeof name, "e%u", i);
      dot_edges[i] = agedge (graph, nodes[edges[i].tail], nodes[edges[i].head], name, 1);
      if (!edges[i].arrow)
        agxset (dot_edges[i], arrow_sym, (char *) "none");
    }

  if (gvLayout (graphviz_context, graph, "dot") != 0)
    {
      agclose (graph);
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED,
                   "Graphviz dot could not lay out a graph of %u boxes and %u edges", n_boxes, n_edges);
      return FALSE;
    }

  bb = GD_bb (graph);
  result->width = bb.UR.x - bb.LL.x;
  result->height = bb.UR.y - bb.LL.y;
  result->n_boxes = n_boxes;
  result->n_edges = n_edges;
  result->centers = g_new (GraftPoint, MAX (n_boxes, 1));
  result->splines = g_new0 (GraftDotSpline, MAX (n_edges, 1));
  for (guint i = 0; i < n_boxes; i++)
    result->centers[i] = (GraftPoint) { ND_coord (nodes[i]).x - bb.LL.x, bb.UR.y - ND_coord (nodes[i]).y };
  for (guint i = 0; i < n_edges; i++)
    read_spline (dot_edges[i], &bb, result->centers[edges[i].tail], &boxes[edges[i].tail],
                 result->centers[edges[i].head], &boxes[edges[i].head], edges[i].arrow, &result->splines[i]);

  gvFreeLayout (graphviz_context, graph);
  agclose (graph);
  return TRUE;
}

void
graft_dot_result_clear (GraftDotResult *result)
{
  for (guint i = 0; i < result->n_edges; i++)
    g_free (result->splines[i].points);
  g_clear_pointer (&result->centers, g_free);
  g_clear_pointer (&result->splines, g_free);
  result->n_boxes = result->n_edges = 0;
}
