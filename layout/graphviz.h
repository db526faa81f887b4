/* One Graphviz `dot` run over a graph of fixed-size boxes, through
 * libgvc/libcgraph. Graphviz keeps global state and is not thread-safe:
 * every call in Graft goes through graft_dot_layout(), which holds one
 * process-wide lock. */
#pragma once

#include <glib.h>
#include "layout/scene.h"

G_BEGIN_DECLS

typedef enum {
  GRAFT_LAYOUT_DIRECTION_TB,
  GRAFT_LAYOUT_DIRECTION_LR,
} GraftLayoutDirection;

typedef enum {
  GRAFT_DOT_RANK_ANY,
  GRAFT_DOT_RANK_FIRST,   /* alone on the first rank (inputs, entry ports) */
  GRAFT_DOT_RANK_LAST,    /* alone on the last rank (outputs, exit ports) */
} GraftDotRank;

typedef struct {
  double width, height;   /* points */
  GraftDotRank rank;
  gboolean point;         /* a port: a dot, edges end at its centre */
} GraftDotBox;

typedef struct {
  guint tail, head;       /* box indices */
  gboolean arrow;
} GraftDotEdge;

typedef struct {
  GraftPoint *points;     /* cubic Bézier, 3n+1 points, tail to head */
  guint n_points;
  gboolean has_arrow;
  GraftPoint tip;
} GraftDotSpline;

typedef struct {
  double width, height;   /* bounding box of the drawing */
  GraftPoint *centers;    /* per box; y down, origin at the bounding box's top-left */
  GraftDotSpline *splines;/* per edge */
  guint n_boxes, n_edges;
} GraftDotResult;

gboolean graft_dot_layout (const GraftDotBox *boxes, guint n_boxes,
                           const GraftDotEdge *edges, guint n_edges,
                           GraftLayoutDirection direction,
                           double node_separation, double rank_separation,
                           GraftDotResult *result, GError **error);

void graft_dot_result_clear (GraftDotResult *result);

/* How many times this process has run dot: graft_dot_layout() gives a
 * graph it has laid out before (the same boxes, edges and spacing) the
 * same result again without running it, so alike groups (a model's
 * repeated blocks and layers) cost one run. */
guint graft_dot_get_n_runs (void);

G_END_DECLS
