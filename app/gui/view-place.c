#include "view-place.h"

#include <math.h>
#include "ir/graph-surgery.h"

/* The selection and this many nodes nearest the middle of the view: one
 * of them survives any single edit (a Bypass removes one node). */
#define N_ANCHORS 8

typedef struct {
  char *name;
  double screen_x, screen_y;   /* where its box's centre was drawn */
  double distance;             /* from the middle of the view, in points */
} Anchor;

struct _GraftViewPlace {
  double zoom;
  char *selected_node;
  char *selected_value;
  GArray *anchors;             /* Anchor, the selection first, then nearest first */
};

static void
anchor_clear (Anchor *anchor)
{
  g_free (anchor->name);
}

static int
by_distance (gconstpointer a, gconstpointer b)
{
  double da = ((const Anchor *) a)->distance, db = ((const Anchor *) b)->distance;

  return da < db ? -1 : da > db;
}

static gboolean
anchor_at (GraftGraphCanvas *canvas, GraftNode *node, const GraftRect *view, Anchor *anchor)
{
  GraftRect box;
  double x, y;

  if (node->name == NULL || node->name[0] == '\0' || !graft_graph_canvas_get_node_bounds (canvas, node, &box))
    return FALSE;
  x = box.x + box.width / 2;
  y = box.y + box.height / 2;
  anchor->name = g_strdup (node->name);
  graft_graph_canvas_scene_to_screen (canvas, x, y, &anchor->screen_x, &anchor->screen_y);
  anchor->distance = hypot (x - (view->x + view->width / 2), y - (view->y + view->height / 2));
  return TRUE;
}

GraftViewPlace *
graft_view_place_new (GraftGraphCanvas *canvas)
{
  GraftGraph *graph = graft_graph_canvas_get_graph (canvas);
  GraftNode *selected = graft_graph_canvas_get_selected_node (canvas);
  GraftValue *value = graft_graph_canvas_get_selected_value (canvas);
  g_autoptr(GArray) nearest = NULL;
  GraftViewPlace *self;
  GraftRect view, bounds;
  Anchor anchor;

  if (graph == NULL || !graft_graph_canvas_get_view (canvas, &view, &bounds))
    return NULL;
  self = g_new0 (GraftViewPlace, 1);
  self->zoom = graft_graph_canvas_get_zoom (canvas);
  self->selected_node = selected ? g_strdup (selected->name) : NULL;
  self->selected_value = value ? g_strdup (value->name) : NULL;
  self->anchors = g_array_new (FALSE, FALSE, sizeof (Anchor));
  g_array_set_clear_func (self->anchors, (GDestroyNotify) anchor_clear);
  if (selected != NULL && anchor_at (canvas, selected, &view, &anchor))
    g_array_append_val (self->anchors, anchor);

  nearest = g_array_new (FALSE, FALSE, sizeof (Anchor));
  g_array_set_clear_func (nearest, (GDestroyNotify) anchor_clear);
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);

      if (node != selected && anchor_at (canvas, node, &view, &anchor))
        g_array_append_val (nearest, anchor);
    }
  g_array_sort (nearest, by_distance);
  for (guint i = 0; i < nearest->len && i < N_ANCHORS; i++)
    {
      Anchor *near = &g_array_index (nearest, Anchor, i);

      g_array_append_val (self->anchors, *near);
      near->name = NULL;   /* moved */
    }
  return self;
}

void
graft_view_place_free (GraftViewPlace *self)
{
  if (self == NULL)
    return;
  g_free (self->selected_node);
  g_free (self->selected_value);
  g_array_unref (self->anchors);
  g_free (self);
}

gboolean
graft_view_place_restore (GraftViewPlace *self, GraftGraphCanvas *canvas)
{
  GraftGraph *graph = graft_graph_canvas_get_graph (canvas);
  GraftNode *selected = graph && self->selected_node ? graft_graph_find_node (graph, self->selected_node) : NULL;
  GraftValue *value = graph && self->selected_value ? graft_graph_lookup_value (graph, self->selected_value) : NULL;

  if (graph == NULL)
    return FALSE;
  if (selected != NULL)
    graft_graph_canvas_select_node (canvas, selected);
  else if (value != NULL)
    graft_graph_canvas_select_value (canvas, value);
  for (guint i = 0; i < self->anchors->len; i++)
    {
      Anchor *anchor = &g_array_index (self->anchors, Anchor, i);
      GraftNode *node = graft_graph_find_node (graph, anchor->name);
      GraftRect box;

      if (node == NULL || !graft_graph_canvas_get_node_bounds (canvas, node, &box))
        continue;
      graft_graph_canvas_set_view (canvas, self->zoom, box.x + box.width / 2, box.y + box.height / 2,
                                   anchor->screen_x, anchor->screen_y);
      return TRUE;
    }
  return FALSE;
}
