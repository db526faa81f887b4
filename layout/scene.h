/* A laid-out graph, ready to paint: node boxes, group boxes, edges.
 *
 * Coordinates are in points with y growing downwards. A scene is built by
 * GraftLayout and is immutable afterwards except for the per-node
 * diagnostics fields (highlight, badge). It references the GraftGraph it was
 * built from, which must outlive it. The diagnostics fields of collapsed
 * groups summarise the marked nodes they hide. */
#pragma once

#include <glib.h>
#include "ir/graph.h"

G_BEGIN_DECLS

typedef struct {
  double x, y;
} GraftPoint;

typedef struct {
  double x, y, width, height;
} GraftRect;

gboolean graft_rect_intersects (const GraftRect *a, const GraftRect *b);
gboolean graft_rect_contains (const GraftRect *rect, double x, double y);
void graft_rect_union (GraftRect *dest, const GraftRect *other);
/* Point at t in [0, 1] of the cubic p[0..3]. */
void graft_bezier_point (const GraftPoint *p, double t, GraftPoint *out);

typedef enum {
  GRAFT_OP_CATEGORY_OTHER = 0,
  GRAFT_OP_CATEGORY_LAYER,          /* conv, linear, matmul, gemm, rnn */
  GRAFT_OP_CATEGORY_ACTIVATION,
  GRAFT_OP_CATEGORY_NORMALIZATION,
  GRAFT_OP_CATEGORY_POOLING,
  GRAFT_OP_CATEGORY_MATH,           /* elementwise arithmetic, reductions */
  GRAFT_OP_CATEGORY_SHAPE,          /* reshape, transpose, concat, slice, gather... */
  GRAFT_OP_CATEGORY_CONTROL,        /* If, Loop, Scan, prim::If */
  GRAFT_OP_CATEGORY_CONSTANT,
  GRAFT_OP_CATEGORY_PRIM,           /* other TorchScript prim:: ops */
  GRAFT_OP_CATEGORY_IO,             /* graph inputs and outputs */
  GRAFT_OP_CATEGORY_N
} GraftOpCategory;

typedef enum {
  GRAFT_SCENE_NODE_OP,
  GRAFT_SCENE_NODE_INPUT,
  GRAFT_SCENE_NODE_OUTPUT,
} GraftSceneNodeKind;

typedef struct {
  GraftSceneNodeKind kind;
  GraftNode *node;           /* GRAFT_SCENE_NODE_OP */
  GraftValue *value;         /* INPUT / OUTPUT */
  GraftRect rect;
  GraftOpCategory category;
  char **lines;              /* first line is the title; already fitted to the box */
  int group;                 /* index of the enclosing scene group, -1 at top level */

  /* For diagnostics: 0 none, 1 info, 2 warning, 3 error; badge text or NULL. */
  guint highlight;
  char *badge;
  /* A numeric overlay (the compare window's error per node): heat from 0
   * (agrees) to 1 (far off), drawn as a stripe in graft_painter_get_heat_colour(). */
  gboolean has_heat;
  double heat;
  /* A tint over the whole box (the partition a deployment target runs it
   * in), RGB 0..1, drawn translucent so the label stays readable. */
  gboolean has_tint;
  double tint[3];

  /* A node with subgraphs (If, Loop): the group that opens its bodies in
   * place (graft_layout_set_group_expanded()), and whether they are open. */
  GraftGroup *inline_group;
  gboolean inline_expanded;
  /* In a branch that never runs (graft_if_get_fixed_branch()): greyed. */
  gboolean dead;
} GraftSceneNode;

typedef struct {
  GraftGroup *group;         /* the deepest group of a flattened chain */
  char *title;               /* "layer1.0" for a flattened chain */
  char *class_name;          /* may be NULL */
  guint total_nodes;
  gboolean expanded;
  GraftRect rect;
  double header_height;      /* expanded: title band at the top */
  char **lines;              /* collapsed: name, class, "N nodes" */
  int parent;                /* enclosing scene group, -1 at top level */
  guint depth;

  /* For diagnostics, on collapsed groups: how many marked nodes are hidden
   * inside, and the worst of their levels (as GraftSceneNode.highlight).
   * The painter outlines the box and draws the count as a badge. */
  guint n_marked;
  guint highlight;
  /* The hottest heat of the nodes a collapsed group hides. */
  gboolean has_heat;
  double heat;
  /* Control flow opened in place: the node's cluster or one of its bodies
   * ("then", "else", "body"); dead: a branch that never runs. */
  gboolean control;
  gboolean dead;
} GraftSceneGroup;

typedef struct {
  GraftValue *value;         /* what the edge carries */
  GraftPoint *points;        /* cubic Bézier: 3n+1 points */
  guint n_points;
  gboolean has_arrow;
  GraftPoint arrow_tip;      /* arrow from the last point to here */
  GraftRect bounds;
  char *label;               /* tensor shape, or NULL */
  gboolean label_inferred;   /* the label is an inferred shape (set apart in another font) */
  GraftPoint label_pos;      /* left end of the label's baseline */
  /* For diagnostics, as GraftSceneNode.highlight (set by the canvas). */
  guint highlight;
} GraftSceneEdge;

typedef enum {
  GRAFT_SCENE_HIT_NONE,
  GRAFT_SCENE_HIT_NODE,
  GRAFT_SCENE_HIT_EDGE,
  GRAFT_SCENE_HIT_GROUP,     /* a collapsed group, or an expanded group's header */
} GraftSceneHitKind;

typedef struct {
  GraftSceneHitKind kind;
  guint index;
} GraftSceneHit;

typedef struct _GraftScene GraftScene;

GraftScene *graft_scene_new (GraftGraph *graph);
void graft_scene_free (GraftScene *scene);

/* A scene that copies none of the strings it is given (node and group
 * lines, group titles and class names, edge labels) nor owns the points
 * of its edges, which come from graft_scene_alloc_points(): owner keeps
 * the strings alive, and the scene holds it until it is freed
 * (owner_release, may be NULL). GraftLayout builds its scenes so, sharing
 * the labels of its boxes (layout/label-pool.h) with every scene. */
GraftScene *graft_scene_new_borrowing (GraftGraph *graph, gpointer owner, GDestroyNotify owner_release);
/* Room for this many of each, before the first is added. */
void graft_scene_reserve (GraftScene *scene, guint n_nodes, guint n_groups, guint n_edges);
/* Room for an edge's n_points, owned by a borrowing scene, valid as long
 * as it lives. */
GraftPoint *graft_scene_alloc_points (GraftScene *scene, guint n_points);

/* Building (used by GraftLayout). Strings are copied, unless the scene
 * borrows them. */
guint graft_scene_add_node (GraftScene *scene, const GraftSceneNode *node);
guint graft_scene_add_group (GraftScene *scene, const GraftSceneGroup *group);
/* Takes ownership of points (g_free) and label, unless the scene borrows them. */
guint graft_scene_add_edge (GraftScene *scene, GraftValue *value, GraftPoint *points, guint n_points,
                            gboolean has_arrow, GraftPoint arrow_tip, char *label, GraftPoint label_pos);
/* Computes bounds and the spatial index; call once when done adding. */
void graft_scene_finish (GraftScene *scene);

guint graft_scene_get_n_nodes (GraftScene *scene);
guint graft_scene_get_n_groups (GraftScene *scene);
guint graft_scene_get_n_edges (GraftScene *scene);
GraftSceneNode *graft_scene_get_node (GraftScene *scene, guint index);
GraftSceneGroup *graft_scene_get_group (GraftScene *scene, guint index);
GraftSceneEdge *graft_scene_get_edge (GraftScene *scene, guint index);

/* Bounding box of everything, with a margin. */
void graft_scene_get_bounds (GraftScene *scene, GraftRect *bounds);

/* Topmost item at (x, y): nodes first, then edges within tolerance, then
 * groups (collapsed boxes, expanded headers). Returns FALSE if nothing. */
gboolean graft_scene_hit_test (GraftScene *scene, double x, double y, double tolerance, GraftSceneHit *hit);

/* Calls func for every node / edge / group whose box intersects rect, in
 * drawing order. Uses the spatial index. */
typedef void (*GraftSceneItemFunc) (GraftScene *scene, guint index, gpointer user_data);
void graft_scene_foreach_in_rect (GraftScene *scene, GraftSceneHitKind kind, const GraftRect *rect,
                                  GraftSceneItemFunc func, gpointer user_data);

/* Index of the scene node of an IR node, or -1. */
int graft_scene_find_node (GraftScene *scene, GraftNode *node);
/* Index of the graph input or output box showing value, or -1. */
int graft_scene_find_value_node (GraftScene *scene, GraftValue *value);
/* Index of the scene group showing group (collapsed or expanded), or -1. */
int graft_scene_find_group (GraftScene *scene, GraftGroup *group);
/* Union of the boxes of the edges carrying value; FALSE if none. */
gboolean graft_scene_get_value_bounds (GraftScene *scene, GraftValue *value, GraftRect *bounds);

/* Index of the collapsed scene group whose box stands for node (a node of
 * the scene's graph that has no box of its own), or -1. */
int graft_scene_find_hiding_group (GraftScene *scene, GraftNode *node);
/* Diagnostics on collapsed groups: clear_hidden_marks resets every group's
 * count; mark_hidden_node counts node, with level highlight, in the
 * collapsed group hiding it and returns that group's index, or -1 if node
 * is shown or not in this graph (nothing is changed then). Call it once
 * per marked node. */
void graft_scene_clear_hidden_marks (GraftScene *scene);
int graft_scene_mark_hidden_node (GraftScene *scene, GraftNode *node, guint highlight);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftScene, graft_scene_free)

G_END_DECLS
