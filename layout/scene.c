#include "layout/scene.h"

#include <math.h>
#include <string.h>

/* Where the boxes of one kind are: the scene's bounds cut into square
 * cells, each listing the items whose box meets it, in index (drawing)
 * order, one list after the other. A view of a million-node graph looks
 * at a few dozen cells instead of every box. */
typedef struct {
  double x0, y0, cell;
  guint columns, rows;
  guint *starts;           /* columns × rows + 1 offsets into entries, row by row */
  guint *entries;
  GArray *everywhere;      /* guint: items too big to list in cells (a group around most of the graph) */
  guint n_items;
} Grid;

struct _GraftScene {
  GraftGraph *graph;
  GArray *nodes;   /* GraftSceneNode */
  GArray *groups;  /* GraftSceneGroup */
  GArray *edges;   /* GraftSceneEdge */
  GHashTable *node_index;   /* GraftNode* or GraftValue* (io nodes) → index + 1 */
  GHashTable *group_index;  /* GraftGroup* → index + 1 */
  GraftRect bounds;
  Grid grids[GRAFT_SCENE_HIT_GROUP + 1]; /* by GraftSceneHitKind, built by graft_scene_finish() */

  /* A borrowing scene (graft_scene_new_borrowing()) copies no strings, and
   * its edges' points come from blocks it hands out. */
  gboolean borrows;
  gpointer owner;
  GDestroyNotify owner_release;
  GPtrArray *point_blocks;   /* GraftPoint[POINT_BLOCK_SIZE] (or a bigger one for a long edge), owned */
  gsize block_used;          /* points used in the last block */
};

/* Points per block: an edge's few cubics take a few dozen. */
#define POINT_BLOCK_SIZE 65536

#define SCENE_MARGIN 16.0

gboolean
graft_rect_intersects (const GraftRect *a, const GraftRect *b)
{
  return a->x <= b->x + b->width && b->x <= a->x + a->width
         && a->y <= b->y + b->height && b->y <= a->y + a->height;
}

gboolean
graft_rect_contains (const GraftRect *rect, double x, double y)
{
  return x >= rect->x && x <= rect->x + rect->width && y >= rect->y && y <= rect->y + rect->height;
}

void
graft_rect_union (GraftRect *dest, const GraftRect *other)
{
  double x0 = MIN (dest->x, other->x);
  double y0 = MIN (dest->y, other->y);
  double x1 = MAX (dest->x + dest->width, other->x + other->width);
  double y1 = MAX (dest->y + dest->height, other->y + other->height);

  *dest = (GraftRect) { x0, y0, x1 - x0, y1 - y0 };
}

static void
clear_node (gpointer data)
{
  GraftSceneNode *node = data;

  g_strfreev (node->lines);
  g_free (node->badge);
}

static void
clear_group (gpointer data)
{
  GraftSceneGroup *group = data;

  g_free (group->title);
  g_free (group->class_name);
  g_strfreev (group->lines);
}

static void
clear_edge (gpointer data)
{
  GraftSceneEdge *edge = data;

  g_free (edge->points);
  g_free (edge->label);
}

static void
clear_borrowing_node (gpointer data)
{
  g_free (((GraftSceneNode *) data)->badge);
}

GraftScene *
graft_scene_new_borrowing (GraftGraph *graph, gpointer owner, GDestroyNotify owner_release)
{
  GraftScene *scene = graft_scene_new (graph);

  scene->borrows = TRUE;
  scene->owner = owner;
  scene->owner_release = owner_release;
  scene->point_blocks = g_ptr_array_new_with_free_func (g_free);
  scene->block_used = POINT_BLOCK_SIZE;
  g_array_set_clear_func (scene->nodes, clear_borrowing_node);
  g_array_set_clear_func (scene->groups, NULL);
  g_array_set_clear_func (scene->edges, NULL);
  return scene;
}

static GArray *
sized_like (GArray *array, guint size)
{
  GArray *sized = g_array_sized_new (FALSE, TRUE, g_array_get_element_size (array), size);

  g_return_val_if_fail (array->len == 0, array);
  g_array_unref (array);
  return sized;
}

void
graft_scene_reserve (GraftScene *scene, guint n_nodes, guint n_groups, guint n_edges)
{
  scene->nodes = sized_like (scene->nodes, n_nodes);
  scene->groups = sized_like (scene->groups, n_groups);
  scene->edges = sized_like (scene->edges, n_edges);
  g_array_set_clear_func (scene->nodes, scene->borrows ? clear_borrowing_node : clear_node);
  g_array_set_clear_func (scene->groups, scene->borrows ? NULL : clear_group);
  g_array_set_clear_func (scene->edges, scene->borrows ? NULL : clear_edge);
}

GraftPoint *
graft_scene_alloc_points (GraftScene *scene, guint n_points)
{
  GraftPoint *block;

  g_return_val_if_fail (scene->borrows, NULL);
  if (n_points > POINT_BLOCK_SIZE)
    {
      /* Its own block, before the current one so that filling goes on. */
      block = g_new (GraftPoint, n_points);
      g_ptr_array_insert (scene->point_blocks, MAX ((int) scene->point_blocks->len - 1, 0), block);
      return block;
    }
  if (scene->block_used + n_points > POINT_BLOCK_SIZE)
    {
      g_ptr_array_add (scene->point_blocks, g_new (GraftPoint, POINT_BLOCK_SIZE));
      scene->block_used = 0;
    }
  block = g_ptr_array_index (scene->point_blocks, scene->point_blocks->len - 1);
  scene->block_used += n_points;
  return block + scene->block_used - n_points;
}

GraftScene *
graft_scene_new (GraftGraph *graph)
{
  GraftScene *scene = g_new0 (GraftScene, 1);

  scene->graph = graph;
  scene->nodes = g_array_new (FALSE, TRUE, sizeof (GraftSceneNode));
  scene->groups = g_array_new (FALSE, TRUE, sizeof (GraftSceneGroup));
  scene->edges = g_array_new (FALSE, TRUE, sizeof (GraftSceneEdge));
  g_array_set_clear_func (scene->nodes, clear_node);
  g_array_set_clear_func (scene->groups, clear_group);
  g_array_set_clear_func (scene->edges, clear_edge);
  scene->node_index = g_hash_table_new (NULL, NULL);
  scene->group_index = g_hash_table_new (NULL, NULL);
  return scene;
}

static void
grid_clear (Grid *grid)
{
  g_clear_pointer (&grid->starts, g_free);
  g_clear_pointer (&grid->entries, g_free);
  g_clear_pointer (&grid->everywhere, g_array_unref);
}

void
graft_scene_free (GraftScene *scene)
{
  if (scene == NULL)
    return;
  g_array_unref (scene->nodes);
  g_array_unref (scene->groups);
  g_array_unref (scene->edges);
  g_hash_table_unref (scene->node_index);
  g_hash_table_unref (scene->group_index);
  for (guint kind = 0; kind < G_N_ELEMENTS (scene->grids); kind++)
    grid_clear (&scene->grids[kind]);
  g_clear_pointer (&scene->point_blocks, g_ptr_array_unref);
  if (scene->owner_release != NULL)
    scene->owner_release (scene->owner);
  g_free (scene);
}

guint
graft_scene_add_node (GraftScene *scene, const GraftSceneNode *node)
{
  GraftSceneNode copy = *node;

  if (!scene->borrows)
    copy.lines = g_strdupv (node->lines);
  copy.badge = g_strdup (node->badge);
  g_array_append_val (scene->nodes, copy);
  return scene->nodes->len - 1;
}

guint
graft_scene_add_group (GraftScene *scene, const GraftSceneGroup *group)
{
  GraftSceneGroup copy = *group;

  if (!scene->borrows)
    {
      copy.title = g_strdup (group->title);
      copy.class_name = g_strdup (group->class_name);
      copy.lines = g_strdupv (group->lines);
    }
  g_array_append_val (scene->groups, copy);
  return scene->groups->len - 1;
}

void
graft_bezier_point (const GraftPoint *p, double t, GraftPoint *out)
{
  double u = 1 - t;
  double a = u * u * u, b = 3 * u * u * t, c = 3 * u * t * t, d = t * t * t;

  out->x = a * p[0].x + b * p[1].x + c * p[2].x + d * p[3].x;
  out->y = a * p[0].y + b * p[1].y + c * p[2].y + d * p[3].y;
}

guint
graft_scene_add_edge (GraftScene *scene, GraftValue *value, GraftPoint *points, guint n_points,
                      gboolean has_arrow, GraftPoint arrow_tip, char *label, GraftPoint label_pos)
{
  GraftSceneEdge edge = { .value = value, .points = points, .n_points = n_points, .has_arrow = has_arrow,
                          .arrow_tip = arrow_tip, .label = label, .label_pos = label_pos };
  double x0 = G_MAXDOUBLE, y0 = G_MAXDOUBLE, x1 = -G_MAXDOUBLE, y1 = -G_MAXDOUBLE;

  /* The control polygon contains the curve. */
  for (guint i = 0; i < n_points; i++)
    {
      x0 = MIN (x0, points[i].x);
      y0 = MIN (y0, points[i].y);
      x1 = MAX (x1, points[i].x);
      y1 = MAX (y1, points[i].y);
    }
  if (has_arrow)
    {
      x0 = MIN (x0, arrow_tip.x);
      y0 = MIN (y0, arrow_tip.y);
      x1 = MAX (x1, arrow_tip.x);
      y1 = MAX (y1, arrow_tip.y);
    }
  if (n_points == 0)
    x0 = y0 = x1 = y1 = 0;
  /* Room for the arrow head's width and the label. */
  edge.bounds = (GraftRect) { x0 - 5, y0 - 5, x1 - x0 + 10, y1 - y0 + 10 };
  if (label != NULL)
    {
      GraftRect label_box = { label_pos.x, label_pos.y - 10, 6.0 * strlen (label), 14 };
      graft_rect_union (&edge.bounds, &label_box);
    }
  g_array_append_val (scene->edges, edge);
  return scene->edges->len - 1;
}

/* Below this many items a scan of them all is as quick as the grid. */
#define GRID_MIN_ITEMS 512
/* About this many items per cell, and at most this many cells. */
#define GRID_ITEMS_PER_CELL 2
#define GRID_MAX_CELLS (4u << 20)
/* An item meeting more cells than this fraction of them is listed apart. */
#define GRID_EVERYWHERE_FRACTION 16

static const GraftRect *
item_rect (GraftScene *scene, GraftSceneHitKind kind, guint index)
{
  switch (kind)
    {
    case GRAFT_SCENE_HIT_NODE:
      return &g_array_index (scene->nodes, GraftSceneNode, index).rect;
    case GRAFT_SCENE_HIT_EDGE:
      return &g_array_index (scene->edges, GraftSceneEdge, index).bounds;
    case GRAFT_SCENE_HIT_GROUP:
    case GRAFT_SCENE_HIT_NONE:
    default:
      return &g_array_index (scene->groups, GraftSceneGroup, index).rect;
    }
}

static guint
n_items_of (GraftScene *scene, GraftSceneHitKind kind)
{
  return kind == GRAFT_SCENE_HIT_NODE ? scene->nodes->len
         : kind == GRAFT_SCENE_HIT_EDGE ? scene->edges->len
         : kind == GRAFT_SCENE_HIT_GROUP ? scene->groups->len : 0;
}

/* The cells rect meets, clamped to the grid; FALSE if none. */
static gboolean
grid_span (const Grid *grid, const GraftRect *rect, guint *c0, guint *c1, guint *r0, guint *r1)
{
  double left = floor ((rect->x - grid->x0) / grid->cell), right = floor ((rect->x + rect->width - grid->x0) / grid->cell);
  double top = floor ((rect->y - grid->y0) / grid->cell), bottom = floor ((rect->y + rect->height - grid->y0) / grid->cell);

  if (!(right >= 0 && bottom >= 0 && left < grid->columns && top < grid->rows))
    return FALSE;
  *c0 = left > 0 ? (guint) left : 0;
  *r0 = top > 0 ? (guint) top : 0;
  *c1 = MIN (right, grid->columns - 1);
  *r1 = MIN (bottom, grid->rows - 1);
  return TRUE;
}

static void
grid_build (GraftScene *scene, GraftSceneHitKind kind, Grid *grid)
{
  guint n = n_items_of (scene, kind);
  double width = MAX (scene->bounds.width, 1), height = MAX (scene->bounds.height, 1);
  guint64 n_cells;
  guint *fill = NULL;

  grid_clear (grid);
  grid->n_items = n;
  if (n < GRID_MIN_ITEMS)
    return;
  grid->x0 = scene->bounds.x;
  grid->y0 = scene->bounds.y;
  grid->cell = MAX (sqrt (width * height * GRID_ITEMS_PER_CELL / n), 32.0);
  for (;;)
    {
      grid->columns = (guint) ceil (width / grid->cell);
      grid->rows = (guint) ceil (height / grid->cell);
      n_cells = (guint64) grid->columns * grid->rows;
      if (n_cells <= GRID_MAX_CELLS)
        break;
      grid->cell *= 1.5;
    }
  grid->everywhere = g_array_new (FALSE, FALSE, sizeof (guint));
  grid->starts = g_new0 (guint, n_cells + 1);

  /* Count per cell, then fill: each cell's items end up in index order. */
  for (guint pass = 0; pass < 2; pass++)
    {
      for (guint i = 0; i < n; i++)
        {
          guint c0, c1, r0, r1;

          if (!grid_span (grid, item_rect (scene, kind, i), &c0, &c1, &r0, &r1))
            continue;
          if ((guint64) (c1 - c0 + 1) * (r1 - r0 + 1) > MAX (n_cells / GRID_EVERYWHERE_FRACTION, 64))
            {
              if (pass == 0)
                g_array_append_val (grid->everywhere, i);
              continue;
            }
          for (guint r = r0; r <= r1; r++)
            for (guint c = c0; c <= c1; c++)
              {
                guint cell = r * grid->columns + c;

                if (pass == 0)
                  grid->starts[cell + 1]++;
                else
                  grid->entries[fill[cell]++] = i;
              }
        }
      if (pass == 0)
        {
          for (guint64 cell = 0; cell < n_cells; cell++)
            grid->starts[cell + 1] += grid->starts[cell];
          grid->entries = g_new (guint, MAX (grid->starts[n_cells], 1));
          fill = g_memdup2 (grid->starts, n_cells * sizeof (guint));
        }
    }
  g_free (fill);
}

static int
compare_indices (gconstpointer a, gconstpointer b)
{
  guint x = *(const guint *) a, y = *(const guint *) b;

  return (x > y) - (x < y);
}

/* The items of kind that may meet rect, ascending, without repeats; FALSE
 * when looking at them all is as quick (a small scene, most of a big one). */
static gboolean
grid_candidates (GraftScene *scene, GraftSceneHitKind kind, const GraftRect *rect, GArray *candidates)
{
  const Grid *grid = &scene->grids[kind];
  guint c0 = 0, c1 = 0, r0 = 0, r1 = 0;
  gsize n = 0;
  guint kept = 0;

  if (grid->starts == NULL || grid->n_items != n_items_of (scene, kind))
    return FALSE;
  n = grid->everywhere->len;
  if (grid_span (grid, rect, &c0, &c1, &r0, &r1))
    for (guint r = r0; r <= r1 && n <= grid->n_items / 4; r++)
      n += grid->starts[r * grid->columns + c1 + 1] - grid->starts[r * grid->columns + c0];
  else
    r0 = 1, r1 = 0;
  if (n > grid->n_items / 4)
    return FALSE;
  g_array_set_size (candidates, 0);
  g_array_append_vals (candidates, grid->everywhere->data, grid->everywhere->len);
  for (guint r = r0; r <= r1; r++)
    {
      guint first = grid->starts[r * grid->columns + c0], end = grid->starts[r * grid->columns + c1 + 1];

      g_array_append_vals (candidates, grid->entries + first, end - first);
    }
  g_array_sort (candidates, compare_indices);
  for (guint i = 0; i < candidates->len; i++)
    if (kept == 0 || g_array_index (candidates, guint, i) != g_array_index (candidates, guint, kept - 1))
      g_array_index (candidates, guint, kept++) = g_array_index (candidates, guint, i);
  g_array_set_size (candidates, kept);
  return TRUE;
}

void
graft_scene_finish (GraftScene *scene)
{
  gboolean any = FALSE;
  GraftRect bounds = { 0 };

  /* Backwards, so that a node drawn twice is found at its first box. */
  for (guint i = scene->nodes->len; i-- > 0;)
    {
      GraftSceneNode *node = &g_array_index (scene->nodes, GraftSceneNode, i);
      gpointer key = node->kind == GRAFT_SCENE_NODE_OP ? (gpointer) node->node : (gpointer) node->value;

      g_hash_table_insert (scene->node_index, key, GUINT_TO_POINTER (i + 1));
      if (any)
        graft_rect_union (&bounds, &node->rect);
      else
        bounds = node->rect;
      any = TRUE;
    }
  for (guint i = 0; i < scene->groups->len; i++)
    {
      GraftSceneGroup *group = &g_array_index (scene->groups, GraftSceneGroup, i);

      g_hash_table_insert (scene->group_index, group->group, GUINT_TO_POINTER (i + 1));
      if (any)
        graft_rect_union (&bounds, &group->rect);
      else
        bounds = group->rect;
      any = TRUE;
    }
  for (guint i = 0; i < scene->edges->len; i++)
    {
      GraftSceneEdge *edge = &g_array_index (scene->edges, GraftSceneEdge, i);

      if (any)
        graft_rect_union (&bounds, &edge->bounds);
      else
        bounds = edge->bounds;
      any = TRUE;
    }
  scene->bounds = (GraftRect) { bounds.x - SCENE_MARGIN, bounds.y - SCENE_MARGIN,
                                bounds.width + 2 * SCENE_MARGIN, bounds.height + 2 * SCENE_MARGIN };
  grid_build (scene, GRAFT_SCENE_HIT_NODE, &scene->grids[GRAFT_SCENE_HIT_NODE]);
  grid_build (scene, GRAFT_SCENE_HIT_EDGE, &scene->grids[GRAFT_SCENE_HIT_EDGE]);
  grid_build (scene, GRAFT_SCENE_HIT_GROUP, &scene->grids[GRAFT_SCENE_HIT_GROUP]);
}

guint
graft_scene_get_n_nodes (GraftScene *scene)
{
  return scene->nodes->len;
}

guint
graft_scene_get_n_groups (GraftScene *scene)
{
  return scene->groups->len;
}

guint
graft_scene_get_n_edges (GraftScene *scene)
{
  return scene->edges->len;
}

GraftSceneNode *
graft_scene_get_node (GraftScene *scene, guint index)
{
  g_return_val_if_fail (index < scene->nodes->len, NULL);
  return &g_array_index (scene->nodes, GraftSceneNode, index);
}

GraftSceneGroup *
graft_scene_get_group (GraftScene *scene, guint index)
{
  g_return_val_if_fail (index < scene->groups->len, NULL);
  return &g_array_index (scene->groups, GraftSceneGroup, index);
}

GraftSceneEdge *
graft_scene_get_edge (GraftScene *scene, guint index)
{
  g_return_val_if_fail (index < scene->edges->len, NULL);
  return &g_array_index (scene->edges, GraftSceneEdge, index);
}

void
graft_scene_get_bounds (GraftScene *scene, GraftRect *bounds)
{
  *bounds = scene->bounds;
}

static double
segment_distance (const GraftPoint *a, const GraftPoint *b, double x, double y)
{
  double dx = b->x - a->x, dy = b->y - a->y;
  double len2 = dx * dx + dy * dy;
  double t = len2 > 0 ? ((x - a->x) * dx + (y - a->y) * dy) / len2 : 0;
  double px, py;

  t = CLAMP (t, 0, 1);
  px = a->x + t * dx - x;
  py = a->y + t * dy - y;
  return sqrt (px * px + py * py);
}

static double
edge_distance (const GraftSceneEdge *edge, double x, double y)
{
  double best = G_MAXDOUBLE;

  for (guint i = 0; i + 3 < edge->n_points; i += 3)
    {
      GraftPoint previous = edge->points[i];

      /* Eight chords per cubic are well within a few points of the curve
       * at the sizes dot produces. */
      for (int step = 1; step <= 8; step++)
        {
          GraftPoint p;

          graft_bezier_point (&edge->points[i], step / 8.0, &p);
          best = MIN (best, segment_distance (&previous, &p, x, y));
          previous = p;
        }
    }
  if (edge->has_arrow && edge->n_points > 0)
    best = MIN (best, segment_distance (&edge->points[edge->n_points - 1], &edge->arrow_tip, x, y));
  return best;
}

/* The items of kind near rect, ascending: from the grid, or all of them. */
static GArray *
items_near (GraftScene *scene, GraftSceneHitKind kind, const GraftRect *rect)
{
  GArray *candidates = g_array_new (FALSE, FALSE, sizeof (guint));

  if (!grid_candidates (scene, kind, rect, candidates))
    {
      guint n = n_items_of (scene, kind);

      g_array_set_size (candidates, n);
      for (guint i = 0; i < n; i++)
        g_array_index (candidates, guint, i) = i;
    }
  return candidates;
}

gboolean
graft_scene_hit_test (GraftScene *scene, double x, double y, double tolerance, GraftSceneHit *hit)
{
  GraftRect near = { x - tolerance, y - tolerance, 2 * tolerance, 2 * tolerance };
  double best_distance = tolerance;
  int best_edge = -1;
  int best_group = -1;
  g_autoptr (GArray) nodes = items_near (scene, GRAFT_SCENE_HIT_NODE, &near);
  g_autoptr (GArray) edges = NULL;
  g_autoptr (GArray) groups = NULL;

  /* Later nodes are drawn on top: search backwards. */
  for (guint k = nodes->len; k-- > 0;)
    {
      guint i = g_array_index (nodes, guint, k);

      if (graft_rect_contains (&g_array_index (scene->nodes, GraftSceneNode, i).rect, x, y))
        {
          *hit = (GraftSceneHit) { GRAFT_SCENE_HIT_NODE, i };
          return TRUE;
        }
    }

  edges = items_near (scene, GRAFT_SCENE_HIT_EDGE, &near);
  for (guint k = 0; k < edges->len; k++)
    {
      guint i = g_array_index (edges, guint, k);
      GraftSceneEdge *edge = &g_array_index (scene->edges, GraftSceneEdge, i);
      double distance;

      if (!graft_rect_intersects (&edge->bounds, &near))
        continue;
      distance = edge_distance (edge, x, y);
      if (distance <= best_distance)
        {
          best_distance = distance;
          best_edge = i;
        }
    }
  if (best_edge >= 0)
    {
      *hit = (GraftSceneHit) { GRAFT_SCENE_HIT_EDGE, best_edge };
      return TRUE;
    }

  /* Groups nest: the deepest one containing the point wins. */
  groups = items_near (scene, GRAFT_SCENE_HIT_GROUP, &near);
  for (guint k = 0; k < groups->len; k++)
    {
      guint i = g_array_index (groups, guint, k);
      GraftSceneGroup *group = &g_array_index (scene->groups, GraftSceneGroup, i);
      GraftRect target = group->rect;

      if (group->expanded)
        target.height = group->header_height;
      if (graft_rect_contains (&target, x, y)
          && (best_group < 0 || group->depth >= g_array_index (scene->groups, GraftSceneGroup, best_group).depth))
        best_group = i;
    }
  if (best_group >= 0)
    {
      *hit = (GraftSceneHit) { GRAFT_SCENE_HIT_GROUP, best_group };
      return TRUE;
    }
  *hit = (GraftSceneHit) { GRAFT_SCENE_HIT_NONE, 0 };
  return FALSE;
}

void
graft_scene_foreach_in_rect (GraftScene *scene, GraftSceneHitKind kind, const GraftRect *rect,
                             GraftSceneItemFunc func, gpointer user_data)
{
  g_autoptr (GArray) candidates = NULL;

  if (kind == GRAFT_SCENE_HIT_NONE)
    return;
  candidates = g_array_new (FALSE, FALSE, sizeof (guint));
  if (grid_candidates (scene, kind, rect, candidates))
    {
      for (guint i = 0; i < candidates->len; i++)
        {
          guint index = g_array_index (candidates, guint, i);

          if (graft_rect_intersects (item_rect (scene, kind, index), rect))
            func (scene, index, user_data);
        }
      return;
    }
  /* A linear scan of the boxes costs tens of microseconds for 10k items,
   * far below the cost of drawing what it finds. */
  switch (kind)
    {
    case GRAFT_SCENE_HIT_NODE:
      for (guint i = 0; i < scene->nodes->len; i++)
        if (graft_rect_intersects (&g_array_index (scene->nodes, GraftSceneNode, i).rect, rect))
          func (scene, i, user_data);
      break;
    case GRAFT_SCENE_HIT_EDGE:
      for (guint i = 0; i < scene->edges->len; i++)
        if (graft_rect_intersects (&g_array_index (scene->edges, GraftSceneEdge, i).bounds, rect))
          func (scene, i, user_data);
      break;
    case GRAFT_SCENE_HIT_GROUP:
      for (guint i = 0; i < scene->groups->len; i++)
        if (graft_rect_intersects (&g_array_index (scene->groups, GraftSceneGroup, i).rect, rect))
          func (scene, i, user_data);
      break;
    case GRAFT_SCENE_HIT_NONE:
    default:
      break;
    }
}

int
graft_scene_find_node (GraftScene *scene, GraftNode *node)
{
  return GPOINTER_TO_UINT (g_hash_table_lookup (scene->node_index, node)) - 1;
}

int
graft_scene_find_value_node (GraftScene *scene, GraftValue *value)
{
  return GPOINTER_TO_UINT (g_hash_table_lookup (scene->node_index, value)) - 1;
}

int
graft_scene_find_group (GraftScene *scene, GraftGroup *group)
{
  return GPOINTER_TO_UINT (g_hash_table_lookup (scene->group_index, group)) - 1;
}

gboolean
graft_scene_get_value_bounds (GraftScene *scene, GraftValue *value, GraftRect *bounds)
{
  gboolean found = FALSE;

  for (guint i = 0; i < scene->edges->len; i++)
    {
      GraftSceneEdge *edge = &g_array_index (scene->edges, GraftSceneEdge, i);

      if (edge->value != value)
        continue;
      if (found)
        graft_rect_union (bounds, &edge->bounds);
      else
        *bounds = edge->bounds;
      found = TRUE;
    }
  return found;
}

int
graft_scene_find_hiding_group (GraftScene *scene, GraftNode *node)
{
  if (node == NULL || node->graph != scene->graph || graft_scene_find_node (scene, node) >= 0)
    return -1;
  /* The innermost group with a box: collapsed, it hides the node; the
   * groups inside a collapsed one have no box. A flattened chain's box is
   * keyed by its deepest group, which is on the way up too. */
  for (GraftGroup *group = node->group; group != NULL; group = group->parent)
    {
      int index = graft_scene_find_group (scene, group);

      if (index >= 0)
        return g_array_index (scene->groups, GraftSceneGroup, index).expanded ? -1 : index;
    }
  return -1;
}

void
graft_scene_clear_hidden_marks (GraftScene *scene)
{
  for (guint i = 0; i < scene->groups->len; i++)
    {
      GraftSceneGroup *group = &g_array_index (scene->groups, GraftSceneGroup, i);

      group->n_marked = 0;
      group->highlight = 0;
    }
}

int
graft_scene_mark_hidden_node (GraftScene *scene, GraftNode *node, guint highlight)
{
  int index = graft_scene_find_hiding_group (scene, node);
  GraftSceneGroup *group;

  if (index < 0 || highlight == 0)
    return -1;
  group = &g_array_index (scene->groups, GraftSceneGroup, index);
  group->n_marked++;
  group->highlight = MAX (group->highlight, highlight);
  return index;
}
