#include "layout/graphviz.h"

#include <math.h>
#include <string.h>
#include <gio/gio.h>
#include <graphviz/gvc.h>

static GMutex graphviz_lock;
static GVC_t *graphviz_context;


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

gboolean
graft_dot_layout (const GraftDotBox *boxes, guint n_boxes,
                  const GraftDotEdge *edges, guint n_edges,
                  GraftLayoutDirection direction,
                  double node_separation, double rank_separation,
                  GraftDotResult *result, GError **error)
{
  g_autoptr (GMutexLocker) locker = g_mutex_locker_new (&graphviz_lock);
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
