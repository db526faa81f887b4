#include "widgets/graph-canvas.h"

#include <math.h>
#include <string.h>
#include <adwaita.h>
#include "layout/export.h"
#include "layout/layout.h"
#include "layout/painter.h"
#include "widgets/canvas-viewport.h"

#define ZOOM_STEP 1.25
#define FIT_MARGIN 24.0
/* The first view of a big graph stays readable instead of fitting it all. */
#define FIRST_VIEW_MIN_ZOOM 0.9
/* Find's match is shown at least this large: node text at its design size. */
#define READABLE_ZOOM 1.0
#define CLICK_TOLERANCE_PIXELS 4.0

struct _GraftGraphCanvas {
  GtkWidget parent_instance;

  GraftCanvasViewport *viewport;
  GraftModel *model;
  GraftGraph *graph;
  GraftLayout *layout;
  GraftInference *inference;  /* owned, may be NULL: shapes the edges are labelled with */
  GraftScene *scene;
  GCancellable *cancellable;
  guint generation;
  /* Layout workers still running, cancelled ones included: they read the
   * graph until they return, so the canvas is busy (and the graph must
   * not be edited) until the last one has. */
  guint n_workers;

  gboolean busy;
  double progress;
  gboolean show_names, show_attributes, show_shapes, dark;
  gboolean show_module_attributes;  /* TorchScript GetAttr/Constant boxes */
  gboolean wheel_zooms;     /* the wheel zooms (the old way), not scrolls */
  gboolean dark_requested;  /* the "dark" property as set; dark also follows the theme */
  gboolean theme_is_dark;   /* the widget's style draws light text */
  GraftLayoutDirection direction;

  GraftNode *selected_node;
  GraftValue *selected_value;

  /* What to do with the view when the running layout lands. */
  gboolean first_view_pending;
  gboolean fit_pending;
  gboolean reveal_selection_pending;
  gboolean readable_reveal_pending;  /* the pending reveal also zooms in to READABLE_ZOOM */
  GraftGroup *anchor_group;
  double anchor_screen_x, anchor_screen_y;

  double drag_origin_x, drag_origin_y;
  double pinch_start_zoom;
  double pointer_x, pointer_y;

  gulong style_handler;

  /* Diagnostics and timing marks, by GraftNode* or GraftValue* (graph
   * input/output boxes), from any graph of the model: re-applied to every
   * scene a layout produces. */
  GHashTable *marks;
  /* GraftNode* / GraftValue* that Find matched, drawn highlighted: a set
   * of pointers only compared, never read, so a replaced graph's stale
   * entries are harmless until the window sets the next matches. */
  GHashTable *found;
  gboolean marks_dirty;
  /* Numeric overlay: GraftNode* → heat (a double, 0..1), applied with the marks. */
  GHashTable *heat;
  /* GraftNode* → CanvasTint*: box tints (a deployment target's partitions). */
  GHashTable *tints;
  char *hidden_marks_noun;

  /* What the current scene shows of the marks, the heat and Find's
   * matches: the read-only count properties and the canvas's accessible
   * description (the boxes themselves are only drawn). */
  guint n_marked, n_marked_groups, n_hidden_marked;
  guint n_heated, n_heated_groups, n_found_shown;
};

typedef struct {
  guint level;
  char *badge;
  gboolean is_value;   /* keyed by a GraftValue*, not a GraftNode* */
} CanvasMark;

static void
canvas_mark_free (gpointer data)
{
  CanvasMark *mark = data;

  g_free (mark->badge);
  g_free (mark);
}

typedef struct {
  GdkRGBA colour;
  char *note;   /* what the colour means, for the node's tooltip */
} CanvasTint;

static void
canvas_tint_free (gpointer data)
{
  CanvasTint *tint = data;

  g_free (tint->note);
  g_free (tint);
}

enum {
  PROP_0,
  PROP_SHOW_NAMES,
  PROP_SHOW_ATTRIBUTES,
  PROP_SHOW_SHAPES,
  PROP_SHOW_MODULE_ATTRIBUTES,
  PROP_DIRECTION,
  PROP_DARK,
  PROP_WHEEL_ZOOMS,
  PROP_SELECTED_NODE,
  PROP_SELECTED_VALUE,
  PROP_BUSY,
  PROP_PROGRESS,
  PROP_N_MARKED,
  PROP_N_MARKED_GROUPS,
  PROP_N_HIDDEN_MARKED,
  PROP_N_HEATED,
  PROP_N_HEATED_GROUPS,
  PROP_N_FOUND_SHOWN,
  N_PROPS
};

enum {
  NODE_ACTIVATED,
  VIEW_CHANGED,
  EXPANSION_CHANGED,
  N_SIGNALS
};

static GParamSpec *properties[N_PROPS];
static guint signals[N_SIGNALS];

G_DEFINE_FINAL_TYPE (GraftGraphCanvas, graft_graph_canvas, GTK_TYPE_WIDGET)

/* Layout runs */

/* Shared (atomic reference count) by the layout worker and the progress
 * updates it posts. Only the UI thread reads the canvas through it: a
 * strong reference taken on the worker could drop the canvas's last one
 * there, disposing a widget off the UI thread. */
typedef struct {
  GWeakRef canvas;
  guint generation;
  GraftModel *model;   /* keeps the graph alive while the worker reads it */
} LayoutRequest;

typedef struct {
  LayoutRequest *request;   /* a reference */
  double fraction;
} ProgressUpdate;

static void
layout_request_clear (gpointer data)
{
  LayoutRequest *request = data;

  g_weak_ref_clear (&request->canvas);
  g_clear_object (&request->model);
}

static void
layout_request_release (LayoutRequest *request)
{
  g_atomic_rc_box_release_full (request, layout_request_clear);
}

static void
set_busy (GraftGraphCanvas *self, gboolean busy)
{
  if (self->busy == busy)
    return;
  self->busy = busy;
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_BUSY]);
}

static void
set_progress (GraftGraphCanvas *self, double progress)
{
  if (self->progress == progress)
    return;
  self->progress = progress;
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_PROGRESS]);
}

static gboolean
apply_progress (gpointer data)
{
  ProgressUpdate *update = data;
  g_autoptr (GraftGraphCanvas) self = g_weak_ref_get (&update->request->canvas);

  if (self != NULL && self->generation == update->request->generation && self->busy)
    set_progress (self, update->fraction);
  layout_request_release (update->request);
  g_free (update);
  return G_SOURCE_REMOVE;
}

/* Called in the layout thread. */
static void
on_layout_progress (double fraction, gpointer user_data)
{
  LayoutRequest *request = user_data;
  ProgressUpdate *update = g_new0 (ProgressUpdate, 1);

  update->request = g_atomic_rc_box_acquire (request);
  update->fraction = fraction;
  g_idle_add (apply_progress, update);
}

/* Fits the whole scene; if that is too small to read and keep_readable
 * (the first view, a new expansion), shows its top at a readable size
 * instead, as Netron opens at 100 %. */
static void
fit_scene (GraftGraphCanvas *self, gboolean keep_readable)
{
  GraftRect bounds;
  double zoom;

  if (self->scene == NULL || graft_canvas_viewport_get_width (self->viewport) <= 0)
    return;
  graft_scene_get_bounds (self->scene, &bounds);
  graft_canvas_viewport_fit (self->viewport, &bounds, FIT_MARGIN, 1.0);
  zoom = graft_canvas_viewport_get_zoom (self->viewport);
  if (keep_readable && zoom < FIRST_VIEW_MIN_ZOOM)
    {
      /* Too small to read: show where the graph starts (its top, or its
       * left end when it runs left to right) at a readable size. */
      double half_width = graft_canvas_viewport_get_width (self->viewport) / 2 / FIRST_VIEW_MIN_ZOOM;
      double half_height = graft_canvas_viewport_get_height (self->viewport) / 2 / FIRST_VIEW_MIN_ZOOM;

      graft_canvas_viewport_set_zoom (self->viewport, FIRST_VIEW_MIN_ZOOM);
      if (self->direction == GRAFT_LAYOUT_DIRECTION_LR)
        graft_canvas_viewport_center_on (self->viewport, bounds.x + half_width, bounds.y + bounds.height / 2);
      else
        graft_canvas_viewport_center_on (self->viewport, bounds.x + bounds.width / 2, bounds.y + half_height);
    }
}

static gboolean
selection_bounds (GraftGraphCanvas *self, GraftRect *rect)
{
  int index;

  if (self->scene == NULL)
    return FALSE;
  if (self->selected_node != NULL)
    {
      index = graft_scene_find_node (self->scene, self->selected_node);
      if (index < 0)
        return FALSE;
      *rect = graft_scene_get_node (self->scene, index)->rect;
      return TRUE;
    }
  if (self->selected_value != NULL)
    {
      index = graft_scene_find_value_node (self->scene, self->selected_value);
      if (index >= 0)
        {
          *rect = graft_scene_get_node (self->scene, index)->rect;
          return TRUE;
        }
      return graft_scene_get_value_bounds (self->scene, self->selected_value, rect);
    }
  return FALSE;
}

/* Centres the selection at READABLE_ZOOM or more (Find's Enter and
 * Ctrl+G: the match must be legible, wherever the view was). */
static void
reveal_selection_readable (GraftGraphCanvas *self)
{
  GraftRect rect;

  self->readable_reveal_pending = FALSE;
  if (!selection_bounds (self, &rect))
    return;
  if (graft_canvas_viewport_get_zoom (self->viewport) < READABLE_ZOOM)
    graft_canvas_viewport_set_zoom (self->viewport, READABLE_ZOOM);
  graft_canvas_viewport_center_on (self->viewport, rect.x + rect.width / 2, rect.y + rect.height / 2);
}

static void
reveal_selection (GraftGraphCanvas *self)
{
  GraftRect rect;

  if (self->readable_reveal_pending)
    {
      reveal_selection_readable (self);
      return;
    }
  if (!selection_bounds (self, &rect) || graft_canvas_viewport_shows (self->viewport, &rect))
    return;
  /* Zoom out only if the selection would not fit at the current zoom. */
  if (rect.width * graft_canvas_viewport_get_zoom (self->viewport) > graft_canvas_viewport_get_width (self->viewport)
      || rect.height * graft_canvas_viewport_get_zoom (self->viewport) > graft_canvas_viewport_get_height (self->viewport))
    graft_canvas_viewport_fit (self->viewport, &rect, FIT_MARGIN, graft_canvas_viewport_get_zoom (self->viewport));
  else
    graft_canvas_viewport_center_on (self->viewport, rect.x + rect.width / 2, rect.y + rect.height / 2);
}

static void
apply_anchor (GraftGraphCanvas *self)
{
  int index = graft_scene_find_group (self->scene, self->anchor_group);
  GraftSceneGroup *group;
  double zoom = graft_canvas_viewport_get_zoom (self->viewport);

  if (index < 0)
    return;
  group = graft_scene_get_group (self->scene, index);
  /* The toggled group keeps its top-left corner where it was on screen. */
  graft_canvas_viewport_set_origin (self->viewport, group->rect.x - self->anchor_screen_x / zoom,
                                    group->rect.y - self->anchor_screen_y / zoom);
}

/* Marked nodes without a box of their own are counted on the collapsed
 * group standing for them. Marked values are not counted: the window marks
 * the node concerned with them (a value's edges inside a collapsed group
 * are hidden with it). */
static void
apply_hidden_marks (GraftGraphCanvas *self)
{
  GHashTableIter iter;
  gpointer key, data;

  graft_scene_clear_hidden_marks (self->scene);
  g_hash_table_iter_init (&iter, self->marks);
  while (g_hash_table_iter_next (&iter, &key, &data))
    {
      CanvasMark *mark = data;

      if (!mark->is_value)
        graft_scene_mark_hidden_node (self->scene, key, mark->level);
    }
}

/* Each node's heat on its box, or (the hottest) on the collapsed group
 * hiding it. */
static void
apply_heat (GraftGraphCanvas *self)
{
  GHashTableIter iter;
  gpointer key, data;

  for (guint i = 0; i < graft_scene_get_n_nodes (self->scene); i++)
    graft_scene_get_node (self->scene, i)->has_heat = FALSE;
  for (guint i = 0; i < graft_scene_get_n_groups (self->scene); i++)
    graft_scene_get_group (self->scene, i)->has_heat = FALSE;
  g_hash_table_iter_init (&iter, self->heat);
  while (g_hash_table_iter_next (&iter, &key, &data))
    {
      double heat = *(double *) data;
      int index = graft_scene_find_node (self->scene, key);

      if (index >= 0)
        {
          GraftSceneNode *node = graft_scene_get_node (self->scene, index);

          node->has_heat = TRUE;
          node->heat = heat;
        }
      else if ((index = graft_scene_find_hiding_group (self->scene, key)) >= 0)
        {
          GraftSceneGroup *group = graft_scene_get_group (self->scene, index);

          group->heat = group->has_heat ? MAX (group->heat, heat) : heat;
          group->has_heat = TRUE;
        }
    }
}

/* Whether item (a GraftNode*, GraftValue* or GraftGroup*) is one of Find's matches. */
static gboolean
is_found (GraftGraphCanvas *self, gconstpointer item)
{
  return item != NULL && g_hash_table_contains (self->found, item);
}

static void
set_count (GraftGraphCanvas *self, guint *field, guint value, guint prop)
{
  if (*field == value)
    return;
  *field = value;
  g_object_notify_by_pspec (G_OBJECT (self), properties[prop]);
}

/* The counts say to a screen reader what the boxes' outlines, stripes
 * and highlights say on screen. */
static void
update_description (GraftGraphCanvas *self)
{
  g_autoptr (GString) text = g_string_new (NULL);

  if (self->n_marked > 0)
    g_string_append_printf (text, g_dngettext (NULL, "%u node marked. ", "%u nodes marked. ", self->n_marked),
                            self->n_marked);
  if (self->n_marked_groups > 0)
    {
      g_string_append_printf (text, g_dngettext (NULL, "%u collapsed group hides ", "%u collapsed groups hide ",
                                                 self->n_marked_groups), self->n_marked_groups);
      g_string_append_printf (text, g_dngettext (NULL, "%u marked node. ", "%u marked nodes. ",
                                                 self->n_hidden_marked), self->n_hidden_marked);
    }
  if (self->n_heated + self->n_heated_groups > 0)
    g_string_append_printf (text, g_dngettext (NULL, "%u box shows an error stripe. ",
                                               "%u boxes show an error stripe. ",
                                               self->n_heated + self->n_heated_groups),
                            self->n_heated + self->n_heated_groups);
  if (self->n_found_shown > 0)
    g_string_append_printf (text, g_dngettext (NULL, "%u match shown. ", "%u matches shown. ", self->n_found_shown),
                            self->n_found_shown);
  if (text->len > 0)
    {
      g_string_truncate (text, text->len - 1);
      gtk_accessible_update_property (GTK_ACCESSIBLE (self), GTK_ACCESSIBLE_PROPERTY_DESCRIPTION, text->str, -1);
    }
  else
    gtk_accessible_reset_property (GTK_ACCESSIBLE (self), GTK_ACCESSIBLE_PROPERTY_DESCRIPTION);
}

/* The tooltip of node's box: its op and name (which a box at a low zoom
 * does not show), then what its marks say (the badge, which a small box
 * cuts short, and the tint's meaning). */
static char *
describe_node (GraftGraphCanvas *self, GraftNode *node)
{
  const CanvasMark *mark = g_hash_table_lookup (self->marks, node);
  const CanvasTint *tint = g_hash_table_lookup (self->tints, node);
  const char *badge = mark != NULL && !mark->is_value ? mark->badge : NULL;
  const char *note = tint != NULL ? tint->note : NULL;
  GString *text = g_string_new (NULL);

  g_string_append_printf (text, "%s %s", node->op, node->name ? node->name : "");
  if (badge != NULL)
    g_string_append_printf (text, "\n%s", badge);
  if (note != NULL)
    g_string_append_printf (text, "\n%s", note);
  return g_string_free (text, FALSE);
}

/* The pointer rests on hit (NULL: on nothing): the tooltip tells about
 * the node there. Setting the widget's tooltip text also sets its
 * accessible description, which says what the whole canvas shows: that
 * is said again after. */
static void
update_tooltip (GraftGraphCanvas *self, const GraftSceneHit *hit)
{
  g_autofree char *text = NULL;

  if (hit != NULL && hit->kind == GRAFT_SCENE_HIT_NODE)
    {
      GraftSceneNode *node = graft_scene_get_node (self->scene, hit->index);

      if (node->kind == GRAFT_SCENE_NODE_OP && node->node != NULL)
        text = describe_node (self, node->node);
    }
  if (g_strcmp0 (text, gtk_widget_get_tooltip_text (GTK_WIDGET (self))) == 0)
    return;
  gtk_widget_set_tooltip_text (GTK_WIDGET (self), text);
  update_description (self);
}

/* Counts what the current scene draws marked, heated and found (a
 * collapsed group standing for the nodes it hides). */
static void
update_shown_counts (GraftGraphCanvas *self)
{
  guint marked = 0, marked_groups = 0, hidden = 0, heated = 0, heated_groups = 0, found = 0;
  gboolean any_found = g_hash_table_size (self->found) > 0;

  for (guint i = 0; self->scene != NULL && i < graft_scene_get_n_nodes (self->scene); i++)
    {
      GraftSceneNode *node = graft_scene_get_node (self->scene, i);

      marked += node->highlight > 0;
      heated += node->has_heat;
      if (any_found)
        found += is_found (self, node->kind == GRAFT_SCENE_NODE_OP ? (gconstpointer) node->node
                                                                   : (gconstpointer) node->value);
    }
  for (guint i = 0; self->scene != NULL && i < graft_scene_get_n_groups (self->scene); i++)
    {
      GraftSceneGroup *group = graft_scene_get_group (self->scene, i);

      if (group->n_marked > 0)
        {
          marked_groups++;
          hidden += group->n_marked;
        }
      heated_groups += group->has_heat;
      if (any_found && !group->expanded)
        found += is_found (self, group->group);
    }
  g_object_freeze_notify (G_OBJECT (self));
  set_count (self, &self->n_marked, marked, PROP_N_MARKED);
  set_count (self, &self->n_marked_groups, marked_groups, PROP_N_MARKED_GROUPS);
  set_count (self, &self->n_hidden_marked, hidden, PROP_N_HIDDEN_MARKED);
  set_count (self, &self->n_heated, heated, PROP_N_HEATED);
  set_count (self, &self->n_heated_groups, heated_groups, PROP_N_HEATED_GROUPS);
  set_count (self, &self->n_found_shown, found, PROP_N_FOUND_SHOWN);
  g_object_thaw_notify (G_OBJECT (self));
  update_description (self);
}

static void
apply_marks (GraftGraphCanvas *self)
{
  self->marks_dirty = FALSE;
  if (self->scene == NULL)
    {
      update_shown_counts (self);
      return;
    }
  for (guint i = 0; i < graft_scene_get_n_nodes (self->scene); i++)
    {
      GraftSceneNode *node = graft_scene_get_node (self->scene, i);
      gpointer key = node->kind == GRAFT_SCENE_NODE_OP ? (gpointer) node->node : (gpointer) node->value;
      CanvasMark *mark = key != NULL ? g_hash_table_lookup (self->marks, key) : NULL;

      node->highlight = mark != NULL ? mark->level : 0;
      g_free (node->badge);
      node->badge = mark != NULL ? g_strdup (mark->badge) : NULL;
    }
  /* A marked value's edges are drawn in its colour too. */
  for (guint i = 0; i < graft_scene_get_n_edges (self->scene); i++)
    {
      GraftSceneEdge *edge = graft_scene_get_edge (self->scene, i);
      CanvasMark *mark = edge->value != NULL ? g_hash_table_lookup (self->marks, edge->value) : NULL;

      edge->highlight = mark != NULL ? mark->level : 0;
    }
  apply_hidden_marks (self);
  apply_heat (self);
  for (guint i = 0; i < graft_scene_get_n_nodes (self->scene); i++)
    {
      GraftSceneNode *node = graft_scene_get_node (self->scene, i);
      const CanvasTint *tint = node->node != NULL ? g_hash_table_lookup (self->tints, node->node) : NULL;

      node->has_tint = tint != NULL;
      if (tint != NULL)
        {
          node->tint[0] = tint->colour.red;
          node->tint[1] = tint->colour.green;
          node->tint[2] = tint->colour.blue;
        }
    }
  update_shown_counts (self);
}

static void
on_layout_done (GObject *source, GAsyncResult *result, gpointer user_data)
{
  LayoutRequest *request = user_data;
  g_autoptr (GraftGraphCanvas) self = g_weak_ref_get (&request->canvas);
  g_autoptr (GError) error = NULL;
  GraftScene *scene = graft_layout_compute_finish (GRAFT_LAYOUT (source), result, &error);

  if (self != NULL)
    self->n_workers--;
  if (self == NULL || self->generation != request->generation)
    {
      /* The last cancelled worker: what waited for the canvas to be idle
       * applies to the scene it shows. */
      if (self != NULL && self->n_workers == 0 && self->busy)
        {
          set_busy (self, FALSE);
          if (self->scene != NULL && self->fit_pending)
            fit_scene (self, FALSE);
          if (self->scene != NULL && self->reveal_selection_pending)
            reveal_selection (self);
          self->fit_pending = self->reveal_selection_pending = FALSE;
        }
      g_clear_pointer (&scene, graft_scene_free);
      layout_request_release (request);
      return;
    }
  layout_request_release (request);
  if (scene == NULL)
    {
      set_busy (self, self->n_workers > 0);
      if (!g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        g_warning ("Cannot lay out graph: %s", error->message);
      return;
    }
  set_progress (self, 1.0);
  g_clear_pointer (&self->scene, graft_scene_free);
  self->scene = scene;
  apply_marks (self);

  if (self->first_view_pending && graft_canvas_viewport_get_width (self->viewport) > 0)
    {
      fit_scene (self, TRUE);
      self->first_view_pending = FALSE;
    }
  else if (self->fit_pending)
    {
      fit_scene (self, TRUE);
      self->fit_pending = FALSE;
    }
  else if (self->anchor_group != NULL)
    apply_anchor (self);
  self->anchor_group = NULL;
  if (self->reveal_selection_pending)
    {
      reveal_selection (self);
      self->reveal_selection_pending = FALSE;
    }
  gtk_widget_queue_draw (GTK_WIDGET (self));
  /* Last: whoever waits for the canvas to be idle (a window putting the
   * view back where it was before an edit) finds the new scene and its
   * first view in place. */
  set_busy (self, self->n_workers > 0);
}

static void
cancel_layout (GraftGraphCanvas *self)
{
  if (self->cancellable != NULL)
    g_cancellable_cancel (self->cancellable);
  g_clear_object (&self->cancellable);
}

static void
request_layout (GraftGraphCanvas *self)
{
  LayoutRequest *request;
  GraftLayoutOptions options;

  if (self->layout == NULL)
    return;
  cancel_layout (self);
  self->cancellable = g_cancellable_new ();
  self->generation++;

  graft_layout_options_init (&options);
  options.direction = self->direction;
  options.show_names = self->show_names;
  options.show_attributes = self->show_attributes;
  options.show_shapes = self->show_shapes;
  options.show_module_attributes = self->show_module_attributes;
  graft_layout_set_options (self->layout, &options);

  request = g_atomic_rc_box_new0 (LayoutRequest);
  g_weak_ref_init (&request->canvas, self);
  request->generation = self->generation;
  request->model = self->model != NULL ? g_object_ref (self->model) : NULL;
  set_progress (self, 0);
  set_busy (self, TRUE);
  self->n_workers++;
  graft_layout_compute_async (self->layout, self->cancellable, on_layout_progress, request, on_layout_done, request);
}

/* Selection */

static void
set_selection (GraftGraphCanvas *self, GraftNode *node, GraftValue *value)
{
  gboolean node_changed = node != self->selected_node, value_changed = value != self->selected_value;

  self->selected_node = node;
  self->selected_value = value;
  self->readable_reveal_pending = FALSE;
  if (node_changed)
    g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_SELECTED_NODE]);
  if (value_changed)
    g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_SELECTED_VALUE]);
  if (node_changed || value_changed)
    gtk_widget_queue_draw (GTK_WIDGET (self));
}

void
graft_graph_canvas_select_node (GraftGraphCanvas *self, GraftNode *node)
{
  g_return_if_fail (GRAFT_IS_GRAPH_CANVAS (self));

  set_selection (self, node, NULL);
  if (node == NULL || self->layout == NULL)
    return;
  if (graft_layout_expand_to_node (self->layout, node))
    {
      self->reveal_selection_pending = TRUE;
      request_layout (self);
    }
  else if (self->busy)
    self->reveal_selection_pending = TRUE;
  else
    {
      GraftRect rect;

      if (selection_bounds (self, &rect))
        graft_canvas_viewport_center_on (self->viewport, rect.x + rect.width / 2, rect.y + rect.height / 2);
    }
}

void
graft_graph_canvas_select_value (GraftGraphCanvas *self, GraftValue *value)
{
  g_return_if_fail (GRAFT_IS_GRAPH_CANVAS (self));

  set_selection (self, NULL, value);
  if (value == NULL || self->layout == NULL)
    return;
  /* Open the producer's groups so the value's edges are on screen. */
  if (value->producer != NULL && value->producer->graph == self->graph
      && graft_layout_expand_to_node (self->layout, value->producer))
    {
      self->reveal_selection_pending = TRUE;
      request_layout (self);
    }
  else if (self->busy)
    self->reveal_selection_pending = TRUE;
  else
    reveal_selection (self);
}

GraftNode *
graft_graph_canvas_get_selected_node (GraftGraphCanvas *self)
{
  g_return_val_if_fail (GRAFT_IS_GRAPH_CANVAS (self), NULL);
  return self->selected_node;
}

GraftValue *
graft_graph_canvas_get_selected_value (GraftGraphCanvas *self)
{
  g_return_val_if_fail (GRAFT_IS_GRAPH_CANVAS (self), NULL);
  return self->selected_value;
}

/* Graph */

void
graft_graph_canvas_set_graph (GraftGraphCanvas *self, GraftModel *model, GraftGraph *graph)
{
  g_return_if_fail (GRAFT_IS_GRAPH_CANVAS (self));

  cancel_layout (self);
  self->generation++;
  set_busy (self, self->n_workers > 0);
  set_selection (self, NULL, NULL);
  g_clear_pointer (&self->scene, graft_scene_free);
  update_shown_counts (self);
  g_clear_object (&self->layout);
  g_set_object (&self->model, model);
  self->graph = graph;
  self->anchor_group = NULL;
  if (graph != NULL)
    {
      self->layout = graft_layout_new (graph);
      graft_layout_set_model (self->layout, self->model);
      graft_layout_set_inference (self->layout, self->inference);
      self->first_view_pending = TRUE;
      request_layout (self);
    }
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

void
graft_graph_canvas_set_inference (GraftGraphCanvas *self, GraftInference *inference)
{
  g_return_if_fail (GRAFT_IS_GRAPH_CANVAS (self));

  if (inference == self->inference)
    return;
  if (inference != NULL)
    graft_inference_ref (inference);
  g_clear_pointer (&self->inference, graft_inference_unref);
  self->inference = inference;
  if (self->layout == NULL)
    return;
  graft_layout_set_inference (self->layout, inference);
  /* Labels change size: lay out again, keeping the view. */
  if (self->show_shapes)
    request_layout (self);
}

GraftGraph *
graft_graph_canvas_get_graph (GraftGraphCanvas *self)
{
  g_return_val_if_fail (GRAFT_IS_GRAPH_CANVAS (self), NULL);
  return self->graph;
}

void
graft_graph_canvas_set_node_heat (GraftGraphCanvas *self, GraftNode *node, double heat)
{
  double *value = g_new (double, 1);

  g_return_if_fail (GRAFT_IS_GRAPH_CANVAS (self));
  g_return_if_fail (node != NULL);
  *value = CLAMP (heat, 0.0, 1.0);
  g_hash_table_replace (self->heat, node, value);
  self->marks_dirty = TRUE;
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

void
graft_graph_canvas_set_node_tint (GraftGraphCanvas *self, GraftNode *node, const GdkRGBA *tint, const char *note)
{
  g_return_if_fail (GRAFT_IS_GRAPH_CANVAS (self));
  g_return_if_fail (node != NULL);
  if (tint != NULL)
    {
      CanvasTint *value = g_new0 (CanvasTint, 1);

      value->colour = *tint;
      value->note = g_strdup (note);
      g_hash_table_replace (self->tints, node, value);
    }
  else
    g_hash_table_remove (self->tints, node);
  self->marks_dirty = TRUE;
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

gboolean
graft_graph_canvas_get_node_heat (GraftGraphCanvas *self, GraftNode *node, double *heat)
{
  double *value;

  g_return_val_if_fail (GRAFT_IS_GRAPH_CANVAS (self), FALSE);
  value = g_hash_table_lookup (self->heat, node);
  if (value != NULL && heat != NULL)
    *heat = *value;
  return value != NULL;
}

void
graft_graph_canvas_set_hidden_marks_noun (GraftGraphCanvas *self, const char *noun)
{
  g_return_if_fail (GRAFT_IS_GRAPH_CANVAS (self));
  g_free (self->hidden_marks_noun);
  self->hidden_marks_noun = g_strdup (noun);
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

void
graft_graph_canvas_clear_marks (GraftGraphCanvas *self)
{
  g_return_if_fail (GRAFT_IS_GRAPH_CANVAS (self));
  g_hash_table_remove_all (self->marks);
  g_hash_table_remove_all (self->heat);
  g_hash_table_remove_all (self->tints);
  apply_marks (self);
  update_tooltip (self, NULL);
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

static void
add_mark (GraftGraphCanvas *self, gpointer key, gboolean is_value, guint level, const char *badge)
{
  CanvasMark *mark = g_new0 (CanvasMark, 1);

  mark->level = MIN (level, 3);
  mark->badge = g_strdup (badge);
  mark->is_value = is_value;
  g_hash_table_replace (self->marks, key, mark);
  /* Applied once before the next paint, not once per mark. */
  self->marks_dirty = TRUE;
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

void
graft_graph_canvas_mark_node (GraftGraphCanvas *self, GraftNode *node, guint level, const char *badge)
{
  g_return_if_fail (GRAFT_IS_GRAPH_CANVAS (self));
  g_return_if_fail (node != NULL);
  add_mark (self, node, FALSE, level, badge);
}

void
graft_graph_canvas_mark_value (GraftGraphCanvas *self, GraftValue *value, guint level, const char *badge)
{
  g_return_if_fail (GRAFT_IS_GRAPH_CANVAS (self));
  g_return_if_fail (value != NULL);
  add_mark (self, value, TRUE, level, badge);
}

static void
fill_paint_options (GraftGraphCanvas *self, GraftPaintOptions *paint)
{
  *paint = (GraftPaintOptions) { 0 };
  paint->dark = self->dark;
  paint->selected_node = self->selected_node;
  paint->selected_value = self->selected_value;
  paint->hidden_marks_noun = self->hidden_marks_noun;
  paint->found = g_hash_table_size (self->found) > 0 ? self->found : NULL;
}

void
graft_graph_canvas_set_found (GraftGraphCanvas *self, GPtrArray *items)
{
  g_return_if_fail (GRAFT_IS_GRAPH_CANVAS (self));

  g_hash_table_remove_all (self->found);
  for (guint i = 0; items != NULL && i < items->len; i++)
    g_hash_table_add (self->found, g_ptr_array_index (items, i));
  /* The groups holding a matched node of the graph shown: a collapsed one
   * shows the match. (The items are compared, never read: they may be
   * values.) */
  for (guint k = 0; self->graph != NULL && items != NULL && items->len > 0 && k < self->graph->nodes->len; k++)
    {
      GraftNode *node = g_ptr_array_index (self->graph->nodes, k);

      if (!g_hash_table_contains (self->found, node))
        continue;
      for (GraftGroup *group = node->group; group != NULL; group = group->parent)
        g_hash_table_add (self->found, group);
    }
  update_shown_counts (self);
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

void
graft_graph_canvas_show_selection_readable (GraftGraphCanvas *self)
{
  g_return_if_fail (GRAFT_IS_GRAPH_CANVAS (self));

  if (self->reveal_selection_pending)
    self->readable_reveal_pending = TRUE;  /* once the layout with its groups open lands */
  else
    reveal_selection_readable (self);
}

static void
collect_expanded (GraftLayout *layout, GraftGroup *group, GPtrArray *paths)
{
  for (guint i = 0; group->children != NULL && i < group->children->len; i++)
    {
      GraftGroup *child = g_ptr_array_index (group->children, i);

      if (!graft_layout_get_group_expanded (layout, child))
        continue;
      g_ptr_array_add (paths, g_strdup (child->path));
      collect_expanded (layout, child, paths);
    }
}

char **
graft_graph_canvas_dup_expanded_groups (GraftGraphCanvas *self)
{
  GPtrArray *paths = g_ptr_array_new ();

  g_return_val_if_fail (GRAFT_IS_GRAPH_CANVAS (self), NULL);
  if (self->layout != NULL && self->graph != NULL && self->graph->root_group != NULL)
    collect_expanded (self->layout, self->graph->root_group, paths);
  if (self->layout != NULL)
    {
      /* If and Loop nodes opened in place. */
      g_auto (GStrv) control = graft_layout_dup_expanded_control (self->layout);

      for (guint i = 0; control[i] != NULL; i++)
        g_ptr_array_add (paths, g_steal_pointer (&control[i]));
    }
  g_ptr_array_add (paths, NULL);
  return (char **) g_ptr_array_free (paths, FALSE);
}

void
graft_graph_canvas_expand_groups (GraftGraphCanvas *self, const char *const *paths)
{
  gboolean changed = FALSE;

  g_return_if_fail (GRAFT_IS_GRAPH_CANVAS (self));
  if (self->layout == NULL || self->graph == NULL || self->graph->root_group == NULL || paths == NULL)
    return;
  for (guint i = 0; paths[i] != NULL; i++)
    {
      GraftGroup *group = graft_group_find_path (self->graph->root_group, paths[i]);

      if (group != NULL && !graft_layout_get_group_expanded (self->layout, group))
        {
          graft_layout_set_group_expanded (self->layout, group, TRUE);
          changed = TRUE;
        }
      else if (group == NULL)
        changed |= graft_layout_expand_control_path (self->layout, paths[i]);
    }
  if (changed)
    request_layout (self);
}

void
graft_graph_canvas_set_expanded_groups (GraftGraphCanvas *self, const char *const *paths)
{
  g_auto (GStrv) before = NULL;
  g_auto (GStrv) after = NULL;

  g_return_if_fail (GRAFT_IS_GRAPH_CANVAS (self));
  if (self->layout == NULL || self->graph == NULL || self->graph->root_group == NULL || paths == NULL)
    return;
  before = graft_graph_canvas_dup_expanded_groups (self);
  graft_layout_collapse_all (self->layout);
  for (guint i = 0; paths[i] != NULL; i++)
    {
      GraftGroup *group = graft_group_find_path (self->graph->root_group, paths[i]);

      if (group != NULL)
        graft_layout_set_group_expanded (self->layout, group, TRUE);
      else
        graft_layout_expand_control_path (self->layout, paths[i]);
    }
  after = graft_graph_canvas_dup_expanded_groups (self);
  if (!g_strv_equal ((const char *const *) before, (const char *const *) after))
    request_layout (self);
}

double
graft_graph_canvas_get_zoom (GraftGraphCanvas *self)
{
  g_return_val_if_fail (GRAFT_IS_GRAPH_CANVAS (self), 1.0);
  return graft_canvas_viewport_get_zoom (self->viewport);
}

gboolean
graft_graph_canvas_get_view (GraftGraphCanvas *self, GraftRect *visible, GraftRect *scene_bounds)
{
  g_return_val_if_fail (GRAFT_IS_GRAPH_CANVAS (self), FALSE);
  if (self->scene == NULL)
    return FALSE;
  graft_canvas_viewport_get_visible (self->viewport, visible);
  graft_scene_get_bounds (self->scene, scene_bounds);
  return TRUE;
}

gboolean
graft_graph_canvas_is_value_shared (GraftGraphCanvas *self, GraftValue *value)
{
  g_return_val_if_fail (GRAFT_IS_GRAPH_CANVAS (self), FALSE);
  return self->layout != NULL && value != NULL && value->graph == self->graph
         && graft_layout_is_value_shared (self->layout, value);
}

gboolean
graft_graph_canvas_get_node_bounds (GraftGraphCanvas *self, GraftNode *node, GraftRect *rect)
{
  int index;

  g_return_val_if_fail (GRAFT_IS_GRAPH_CANVAS (self), FALSE);
  if (self->scene == NULL || node == NULL)
    return FALSE;
  if ((index = graft_scene_find_node (self->scene, node)) >= 0)
    *rect = graft_scene_get_node (self->scene, index)->rect;
  else if ((index = graft_scene_find_hiding_group (self->scene, node)) >= 0)
    *rect = graft_scene_get_group (self->scene, index)->rect;
  else
    return FALSE;
  return TRUE;
}

void
graft_graph_canvas_scene_to_screen (GraftGraphCanvas *self, double x, double y, double *screen_x, double *screen_y)
{
  g_return_if_fail (GRAFT_IS_GRAPH_CANVAS (self));
  graft_canvas_viewport_scene_to_screen (self->viewport, x, y, screen_x, screen_y);
}

void
graft_graph_canvas_set_view (GraftGraphCanvas *self, double zoom, double x, double y, double screen_x,
                             double screen_y)
{
  g_return_if_fail (GRAFT_IS_GRAPH_CANVAS (self));
  zoom = CLAMP (zoom, GRAFT_CANVAS_MIN_ZOOM, GRAFT_CANVAS_MAX_ZOOM);
  g_object_freeze_notify (G_OBJECT (self->viewport));
  graft_canvas_viewport_set_zoom (self->viewport, zoom);
  graft_canvas_viewport_set_origin (self->viewport, x - screen_x / zoom, y - screen_y / zoom);
  g_object_thaw_notify (G_OBJECT (self->viewport));
}

gboolean
graft_graph_canvas_export (GraftGraphCanvas *self, const char *path, GError **error)
{
  GraftPaintOptions paint;

  g_return_val_if_fail (GRAFT_IS_GRAPH_CANVAS (self), FALSE);
  if (self->scene == NULL)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_PENDING,
                   self->graph != NULL ? "cannot export '%s': the graph is still being laid out"
                                       : "cannot export '%s': no graph is shown", path);
      return FALSE;
    }
  fill_paint_options (self, &paint);
  /* The file shows the graph, not the current selection. */
  paint.selected_node = NULL;
  paint.selected_value = NULL;
  if (self->marks_dirty)
    apply_marks (self);
  return graft_scene_export (self->scene, &paint, path, error);
}

/* Drawing */

static void
graft_graph_canvas_snapshot (GtkWidget *widget, GtkSnapshot *snapshot)
{
  GraftGraphCanvas *self = GRAFT_GRAPH_CANVAS (widget);
  double width = gtk_widget_get_width (widget), height = gtk_widget_get_height (widget);
  double background[3];
  GraftPaintOptions paint;
  GraftRect visible;
  cairo_t *cr;
  double zoom;

  graft_painter_get_background (self->dark, background);
  gtk_snapshot_append_color (snapshot, &(GdkRGBA) { background[0], background[1], background[2], 1 },
                             &GRAPHENE_RECT_INIT (0, 0, width, height));
  if (self->scene == NULL || width <= 0 || height <= 0)
    return;
  if (self->marks_dirty)
    apply_marks (self);

  graft_canvas_viewport_set_size (self->viewport, width, height);
  graft_canvas_viewport_get_visible (self->viewport, &visible);
  zoom = graft_canvas_viewport_get_zoom (self->viewport);
  fill_paint_options (self, &paint);

  cr = gtk_snapshot_append_cairo (snapshot, &GRAPHENE_RECT_INIT (0, 0, width, height));
  cairo_scale (cr, zoom, zoom);
  cairo_translate (cr, -visible.x, -visible.y);
  graft_painter_paint (cr, self->scene, &visible, &paint);
  cairo_destroy (cr);
}

static void
graft_graph_canvas_size_allocate (GtkWidget *widget, int width, int height, int baseline)
{
  GraftGraphCanvas *self = GRAFT_GRAPH_CANVAS (widget);

  graft_canvas_viewport_set_size (self->viewport, width, height);
  if (self->scene != NULL && self->first_view_pending && width > 0)
    {
      fit_scene (self, TRUE);
      self->first_view_pending = FALSE;
    }
}

static void
on_viewport_changed (GraftGraphCanvas *self)
{
  gtk_widget_queue_draw (GTK_WIDGET (self));
  g_signal_emit (self, signals[VIEW_CHANGED], 0);
}

/* Input */

static void
zoom_at (GraftGraphCanvas *self, double factor, double x, double y)
{
  graft_canvas_viewport_zoom_at (self->viewport, factor, x, y);
}

static void
on_drag_begin (GtkGestureDrag *gesture, double x, double y, GraftGraphCanvas *self)
{
  self->drag_origin_x = graft_canvas_viewport_get_x (self->viewport);
  self->drag_origin_y = graft_canvas_viewport_get_y (self->viewport);
}

static void
on_drag_update (GtkGestureDrag *gesture, double offset_x, double offset_y, GraftGraphCanvas *self)
{
  double zoom = graft_canvas_viewport_get_zoom (self->viewport);

  graft_canvas_viewport_set_origin (self->viewport, self->drag_origin_x - offset_x / zoom,
                                    self->drag_origin_y - offset_y / zoom);
}

static void
on_motion (GtkEventControllerMotion *controller, double x, double y, GraftGraphCanvas *self)
{
  double scene_x, scene_y;
  GraftSceneHit hit;
  gboolean clickable = FALSE;

  self->pointer_x = x;
  self->pointer_y = y;
  if (self->scene != NULL)
    {
      graft_canvas_viewport_screen_to_scene (self->viewport, x, y, &scene_x, &scene_y);
      clickable = graft_scene_hit_test (self->scene, scene_x, scene_y,
                                        CLICK_TOLERANCE_PIXELS / graft_canvas_viewport_get_zoom (self->viewport),
                                        &hit);
    }
  /* A hand over what a click selects or opens. */
  gtk_widget_set_cursor_from_name (GTK_WIDGET (self), clickable ? "pointer" : NULL);
  update_tooltip (self, clickable ? &hit : NULL);
}

static gboolean
on_scroll (GtkEventControllerScroll *controller, double dx, double dy, GraftGraphCanvas *self)
{
  GdkEvent *event = gtk_event_controller_get_current_event (GTK_EVENT_CONTROLLER (controller));
  GdkModifierType modifiers = gtk_event_controller_get_current_event_state (GTK_EVENT_CONTROLLER (controller));
  double x = self->pointer_x, y = self->pointer_y;

  if (event != NULL)
    {
      double wx, wy;
      graphene_point_t point;
      GtkNative *native = gtk_widget_get_native (GTK_WIDGET (self));

      if (native != NULL && gdk_event_get_position (event, &wx, &wy))
        {
          double nx, ny;

          gtk_native_get_surface_transform (native, &nx, &ny);
          if (gtk_widget_compute_point (GTK_WIDGET (native), GTK_WIDGET (self),
                                        &GRAPHENE_POINT_INIT (wx - nx, wy - ny), &point))
            {
              x = point.x;
              y = point.y;
            }
        }
    }
  /* As in Netron and most viewers: the wheel scrolls, Shift+wheel scrolls
   * sideways, Ctrl+wheel zooms about the pointer; with wheel-zooms, the
   * plain wheel zooms too. */
  if (modifiers & GDK_SHIFT_MASK)
    {
      graft_canvas_viewport_pan (self->viewport, -(dx + dy) * 40, 0);
      return TRUE;
    }
  if ((modifiers & GDK_CONTROL_MASK) || self->wheel_zooms)
    {
      zoom_at (self, pow (1.1, -dy), x, y);
      return TRUE;
    }
  graft_canvas_viewport_pan (self->viewport, -dx * 40, -dy * 40);
  gtk_widget_queue_draw (GTK_WIDGET (self));
  return TRUE;
}

static void
on_pinch_begin (GtkGesture *gesture, GdkEventSequence *sequence, GraftGraphCanvas *self)
{
  self->pinch_start_zoom = graft_canvas_viewport_get_zoom (self->viewport);
}

static void
on_pinch_scale_changed (GtkGestureZoom *gesture, double scale, GraftGraphCanvas *self)
{
  double x, y;

  if (!gtk_gesture_get_bounding_box_center (GTK_GESTURE (gesture), &x, &y))
    {
      x = graft_canvas_viewport_get_width (self->viewport) / 2;
      y = graft_canvas_viewport_get_height (self->viewport) / 2;
    }
  zoom_at (self, self->pinch_start_zoom * scale / graft_canvas_viewport_get_zoom (self->viewport), x, y);
}

static void
toggle_group (GraftGraphCanvas *self, GraftSceneGroup *group)
{
  double sx, sy;

  graft_canvas_viewport_scene_to_screen (self->viewport, group->rect.x, group->rect.y, &sx, &sy);
  self->anchor_group = group->group;
  self->anchor_screen_x = sx;
  self->anchor_screen_y = sy;
  graft_layout_set_group_expanded (self->layout, group->group, !group->expanded);
  request_layout (self);
  g_signal_emit (self, signals[EXPANSION_CHANGED], 0);
}

/* A click on the "+" box of an If or Loop opens its bodies in place. */
static gboolean
toggle_inline_at (GraftGraphCanvas *self, GraftSceneNode *node, double scene_x, double scene_y, double zoom)
{
  GraftRect mark;
  double slack = CLICK_TOLERANCE_PIXELS / zoom;

  if (node->inline_group == NULL || node->inline_expanded)
    return FALSE;
  graft_painter_get_inline_mark (node, &mark);
  mark.x -= slack;
  mark.y -= slack;
  mark.width += 2 * slack;
  mark.height += 2 * slack;
  if (!graft_rect_contains (&mark, scene_x, scene_y))
    return FALSE;
  /* Keep the cluster where the node was. */
  graft_canvas_viewport_scene_to_screen (self->viewport, node->rect.x, node->rect.y, &self->anchor_screen_x,
                                         &self->anchor_screen_y);
  self->anchor_group = node->inline_group;
  graft_layout_set_group_expanded (self->layout, node->inline_group, TRUE);
  request_layout (self);
  g_signal_emit (self, signals[EXPANSION_CHANGED], 0);
  return TRUE;
}

gboolean
graft_graph_canvas_select_at (GraftGraphCanvas *self, double x, double y)
{
  double zoom = graft_canvas_viewport_get_zoom (self->viewport);
  double scene_x, scene_y;
  GraftSceneHit hit;
  GraftSceneNode *node;

  if (self->scene == NULL)
    return FALSE;
  graft_canvas_viewport_screen_to_scene (self->viewport, x, y, &scene_x, &scene_y);
  if (!graft_scene_hit_test (self->scene, scene_x, scene_y, CLICK_TOLERANCE_PIXELS / zoom, &hit))
    return FALSE;
  switch (hit.kind)
    {
    case GRAFT_SCENE_HIT_NODE:
      node = graft_scene_get_node (self->scene, hit.index);
      if (node->kind == GRAFT_SCENE_NODE_OP)
        set_selection (self, node->node, NULL);
      else
        set_selection (self, NULL, node->value);
      return TRUE;
    case GRAFT_SCENE_HIT_EDGE:
      set_selection (self, NULL, graft_scene_get_edge (self->scene, hit.index)->value);
      return TRUE;
    case GRAFT_SCENE_HIT_GROUP:
    case GRAFT_SCENE_HIT_NONE:
    default:
      return FALSE;
    }
}

static void
on_click_released (GtkGestureClick *gesture, int n_press, double x, double y, GraftGraphCanvas *self)
{
  double zoom = graft_canvas_viewport_get_zoom (self->viewport);
  double scene_x, scene_y;
  GraftSceneHit hit;

  if (self->scene == NULL)
    return;
  gtk_widget_grab_focus (GTK_WIDGET (self));
  graft_canvas_viewport_screen_to_scene (self->viewport, x, y, &scene_x, &scene_y);
  if (!graft_scene_hit_test (self->scene, scene_x, scene_y, CLICK_TOLERANCE_PIXELS / zoom, &hit))
    {
      set_selection (self, NULL, NULL);
      return;
    }
  switch (hit.kind)
    {
    case GRAFT_SCENE_HIT_NODE:
      {
        GraftSceneNode *node = graft_scene_get_node (self->scene, hit.index);

        if (node->kind != GRAFT_SCENE_NODE_OP)
          {
            set_selection (self, NULL, node->value);
            break;
          }
        set_selection (self, node->node, NULL);
        if (n_press == 1 && !self->busy && toggle_inline_at (self, node, scene_x, scene_y, zoom))
          break;
        if (n_press == 2)
          {
            g_autoptr (GPtrArray) subgraphs = graft_node_get_subgraphs (node->node);

            if (subgraphs->len > 0)
              g_signal_emit (self, signals[NODE_ACTIVATED], 0, node->node);
          }
        break;
      }
    case GRAFT_SCENE_HIT_EDGE:
      set_selection (self, NULL, graft_scene_get_edge (self->scene, hit.index)->value);
      break;
    case GRAFT_SCENE_HIT_GROUP:
      if (n_press == 1 && !self->busy)
        toggle_group (self, graft_scene_get_group (self->scene, hit.index));
      break;
    case GRAFT_SCENE_HIT_NONE:
    default:
      break;
    }
}

/* Actions */

static void
zoom_about_centre (GraftGraphCanvas *self, double factor)
{
  zoom_at (self, factor, graft_canvas_viewport_get_width (self->viewport) / 2,
           graft_canvas_viewport_get_height (self->viewport) / 2);
}

static void
action_zoom (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftGraphCanvas *self = GRAFT_GRAPH_CANVAS (widget);

  if (strcmp (action_name, "canvas.zoom-in") == 0)
    zoom_about_centre (self, ZOOM_STEP);
  else if (strcmp (action_name, "canvas.zoom-out") == 0)
    zoom_about_centre (self, 1 / ZOOM_STEP);
  else if (strcmp (action_name, "canvas.zoom-reset") == 0)
    graft_canvas_viewport_set_zoom (self->viewport, 1.0);
  else if (strcmp (action_name, "canvas.zoom-fit") == 0)
    fit_scene (self, FALSE);
  else if (strcmp (action_name, "canvas.zoom-selection") == 0)
    {
      GraftRect rect;

      if (selection_bounds (self, &rect))
        graft_canvas_viewport_fit (self->viewport, &rect, 4 * FIT_MARGIN, 1.5);
    }
}

static void
action_pan (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftGraphCanvas *self = GRAFT_GRAPH_CANVAS (widget);
  double dx, dy;

  g_variant_get (parameter, "(dd)", &dx, &dy);
  graft_canvas_viewport_pan (self->viewport, dx, dy);
}

static void
action_expansion (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftGraphCanvas *self = GRAFT_GRAPH_CANVAS (widget);

  if (self->layout == NULL)
    return;
  if (strcmp (action_name, "canvas.expand-all") == 0)
    graft_layout_expand_all (self->layout);
  else
    graft_layout_collapse_all (self->layout);
  self->fit_pending = TRUE;
  self->reveal_selection_pending = self->selected_node != NULL || self->selected_value != NULL;
  request_layout (self);
  g_signal_emit (self, signals[EXPANSION_CHANGED], 0);
}

static void
action_cancel_layout (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftGraphCanvas *self = GRAFT_GRAPH_CANVAS (widget);

  cancel_layout (self);
}

/* Style */

static void
apply_dark (GraftGraphCanvas *self, gboolean dark)
{
  if (self->dark == dark)
    return;
  self->dark = dark;
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_DARK]);
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

/* Dark when asked (the style manager's preference), or when the theme the
 * widget is drawn with is a dark one: GTK_THEME=Adwaita:dark darkens the
 * chrome without telling AdwStyleManager. */
static void
set_dark (GraftGraphCanvas *self, gboolean dark)
{
  self->dark_requested = dark;
  apply_dark (self, self->dark_requested || self->theme_is_dark);
}

static void
graft_graph_canvas_css_changed (GtkWidget *widget, GtkCssStyleChange *change)
{
  GraftGraphCanvas *self = GRAFT_GRAPH_CANVAS (widget);
  GdkRGBA color;

  GTK_WIDGET_CLASS (graft_graph_canvas_parent_class)->css_changed (widget, change);
#if GTK_CHECK_VERSION (4, 10, 0)
  /* Newer than GDK_VERSION_MAX_ALLOWED (4.8), which flags it as
   * unavailable: built against 4.10 or later, it replaces the style
   * context call that 4.10 deprecates. */
  G_GNUC_BEGIN_IGNORE_DEPRECATIONS
  gtk_widget_get_color (widget, &color);
  G_GNUC_END_IGNORE_DEPRECATIONS
#else
  gtk_style_context_get_color (gtk_widget_get_style_context (widget), &color);
#endif
  self->theme_is_dark = 0.2126 * color.red + 0.7152 * color.green + 0.0722 * color.blue > 0.5;
  set_dark (self, self->dark_requested);
}

static void
on_style_dark_changed (AdwStyleManager *manager, GParamSpec *pspec, GraftGraphCanvas *self)
{
  set_dark (self, adw_style_manager_get_dark (manager));
}

/* GObject */

static void
set_option (GraftGraphCanvas *self, gboolean *field, gboolean value, guint prop)
{
  if (*field == value)
    return;
  *field = value;
  g_object_notify_by_pspec (G_OBJECT (self), properties[prop]);
  request_layout (self);
}

static void
graft_graph_canvas_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  GraftGraphCanvas *self = GRAFT_GRAPH_CANVAS (object);

  /* Marks set since the last paint count once applied. */
  if (prop_id >= PROP_N_MARKED && prop_id <= PROP_N_FOUND_SHOWN && self->marks_dirty)
    apply_marks (self);
  switch (prop_id)
    {
    case PROP_N_MARKED:
      g_value_set_uint (value, self->n_marked);
      break;
    case PROP_N_MARKED_GROUPS:
      g_value_set_uint (value, self->n_marked_groups);
      break;
    case PROP_N_HIDDEN_MARKED:
      g_value_set_uint (value, self->n_hidden_marked);
      break;
    case PROP_N_HEATED:
      g_value_set_uint (value, self->n_heated);
      break;
    case PROP_N_HEATED_GROUPS:
      g_value_set_uint (value, self->n_heated_groups);
      break;
    case PROP_N_FOUND_SHOWN:
      g_value_set_uint (value, self->n_found_shown);
      break;
    case PROP_SHOW_NAMES:
      g_value_set_boolean (value, self->show_names);
      break;
    case PROP_SHOW_ATTRIBUTES:
      g_value_set_boolean (value, self->show_attributes);
      break;
    case PROP_SHOW_SHAPES:
      g_value_set_boolean (value, self->show_shapes);
      break;
    case PROP_SHOW_MODULE_ATTRIBUTES:
      g_value_set_boolean (value, self->show_module_attributes);
      break;
    case PROP_DIRECTION:
      g_value_set_string (value, self->direction == GRAFT_LAYOUT_DIRECTION_LR ? "LR" : "TB");
      break;
    case PROP_DARK:
      g_value_set_boolean (value, self->dark);
      break;
    case PROP_WHEEL_ZOOMS:
      g_value_set_boolean (value, self->wheel_zooms);
      break;
    case PROP_SELECTED_NODE:
      g_value_set_pointer (value, self->selected_node);
      break;
    case PROP_SELECTED_VALUE:
      g_value_set_pointer (value, self->selected_value);
      break;
    case PROP_BUSY:
      g_value_set_boolean (value, self->busy);
      break;
    case PROP_PROGRESS:
      g_value_set_double (value, self->progress);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
graft_graph_canvas_set_property (GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec)
{
  GraftGraphCanvas *self = GRAFT_GRAPH_CANVAS (object);

  switch (prop_id)
    {
    case PROP_SHOW_NAMES:
      set_option (self, &self->show_names, g_value_get_boolean (value), prop_id);
      break;
    case PROP_SHOW_ATTRIBUTES:
      set_option (self, &self->show_attributes, g_value_get_boolean (value), prop_id);
      break;
    case PROP_SHOW_SHAPES:
      set_option (self, &self->show_shapes, g_value_get_boolean (value), prop_id);
      break;
    case PROP_SHOW_MODULE_ATTRIBUTES:
      set_option (self, &self->show_module_attributes, g_value_get_boolean (value), prop_id);
      break;
    case PROP_DIRECTION:
      {
        const char *text = g_value_get_string (value);
        GraftLayoutDirection direction = text != NULL && g_ascii_strcasecmp (text, "LR") == 0
                                           ? GRAFT_LAYOUT_DIRECTION_LR : GRAFT_LAYOUT_DIRECTION_TB;

        if (direction != self->direction)
          {
            self->direction = direction;
            g_object_notify_by_pspec (object, pspec);
            self->fit_pending = TRUE;
            request_layout (self);
          }
        break;
      }
    case PROP_DARK:
      set_dark (self, g_value_get_boolean (value));
      break;
    case PROP_WHEEL_ZOOMS:
      if (self->wheel_zooms != g_value_get_boolean (value))
        {
          self->wheel_zooms = g_value_get_boolean (value);
          g_object_notify_by_pspec (object, pspec);
        }
      break;
    case PROP_SELECTED_NODE:
      graft_graph_canvas_select_node (self, g_value_get_pointer (value));
      break;
    case PROP_SELECTED_VALUE:
      graft_graph_canvas_select_value (self, g_value_get_pointer (value));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
graft_graph_canvas_dispose (GObject *object)
{
  GraftGraphCanvas *self = GRAFT_GRAPH_CANVAS (object);

  cancel_layout (self);
  if (self->style_handler != 0)
    {
      g_signal_handler_disconnect (adw_style_manager_get_default (), self->style_handler);
      self->style_handler = 0;
    }
  g_clear_pointer (&self->scene, graft_scene_free);
  g_clear_pointer (&self->marks, g_hash_table_unref);
  g_clear_pointer (&self->heat, g_hash_table_unref);
  g_clear_pointer (&self->tints, g_hash_table_unref);
  g_clear_pointer (&self->hidden_marks_noun, g_free);
  g_clear_pointer (&self->found, g_hash_table_unref);
  g_clear_object (&self->layout);
  g_clear_pointer (&self->inference, graft_inference_unref);
  g_clear_object (&self->model);
  g_clear_object (&self->viewport);
  self->graph = NULL;
  G_OBJECT_CLASS (graft_graph_canvas_parent_class)->dispose (object);
}

static GParamSpec *
count_property (const char *name)
{
  return g_param_spec_uint (name, NULL, NULL, 0, G_MAXUINT, 0,
                            G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
}

static void
graft_graph_canvas_class_init (GraftGraphCanvasClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);
  const GParamFlags flags = G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS;

  object_class->get_property = graft_graph_canvas_get_property;
  object_class->set_property = graft_graph_canvas_set_property;
  object_class->dispose = graft_graph_canvas_dispose;
  widget_class->snapshot = graft_graph_canvas_snapshot;
  widget_class->css_changed = graft_graph_canvas_css_changed;
  widget_class->size_allocate = graft_graph_canvas_size_allocate;

  properties[PROP_SHOW_NAMES] = g_param_spec_boolean ("show-names", NULL, NULL, FALSE, flags);
  properties[PROP_SHOW_ATTRIBUTES] = g_param_spec_boolean ("show-attributes", NULL, NULL, TRUE, flags);
  properties[PROP_SHOW_SHAPES] = g_param_spec_boolean ("show-shapes", NULL, NULL, TRUE, flags);
  properties[PROP_SHOW_MODULE_ATTRIBUTES] = g_param_spec_boolean ("show-module-attributes", NULL, NULL, FALSE, flags);
  properties[PROP_DIRECTION] = g_param_spec_string ("direction", NULL, NULL, "TB", flags);
  properties[PROP_DARK] = g_param_spec_boolean ("dark", NULL, NULL, FALSE, flags);
  properties[PROP_WHEEL_ZOOMS] = g_param_spec_boolean ("wheel-zooms", NULL, NULL, FALSE, flags);
  properties[PROP_SELECTED_NODE] = g_param_spec_pointer ("selected-node", NULL, NULL, flags);
  properties[PROP_SELECTED_VALUE] = g_param_spec_pointer ("selected-value", NULL, NULL, flags);
  properties[PROP_BUSY] = g_param_spec_boolean ("busy", NULL, NULL, FALSE,
                                                G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_PROGRESS] = g_param_spec_double ("progress", NULL, NULL, 0, 1, 0,
                                                   G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  /* What the current scene shows (read-only, notified when it changes;
   * the accessible description says the same): node boxes outlined by a
   * mark; collapsed groups outlined for the marked nodes they hide, and
   * those nodes; node boxes and collapsed groups with a heat stripe; boxes
   * highlighted as Find's matches (a collapsed group holding one counts). */
  properties[PROP_N_MARKED] = count_property ("n-marked");
  properties[PROP_N_MARKED_GROUPS] = count_property ("n-marked-groups");
  properties[PROP_N_HIDDEN_MARKED] = count_property ("n-hidden-marked");
  properties[PROP_N_HEATED] = count_property ("n-heated");
  properties[PROP_N_HEATED_GROUPS] = count_property ("n-heated-groups");
  properties[PROP_N_FOUND_SHOWN] = count_property ("n-found-shown");
  g_object_class_install_properties (object_class, N_PROPS, properties);

  /* Double-click on a node with subgraphs (If, Loop, Scan): show them. */
  signals[NODE_ACTIVATED] = g_signal_new ("node-activated", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0,
                                          NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_POINTER);
  /* The zoom or the part of the scene shown changed (input, fitting,
   * centring on a selection). */
  /* The user opened or closed a group (a click, Expand All, Collapse All). */
  signals[EXPANSION_CHANGED] = g_signal_new ("expansion-changed", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0,
                                             NULL, NULL, NULL, G_TYPE_NONE, 0);
  signals[VIEW_CHANGED] = g_signal_new ("view-changed", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0,
                                        NULL, NULL, NULL, G_TYPE_NONE, 0);

  gtk_widget_class_install_action (widget_class, "canvas.zoom-in", NULL, action_zoom);
  gtk_widget_class_install_action (widget_class, "canvas.zoom-out", NULL, action_zoom);
  gtk_widget_class_install_action (widget_class, "canvas.zoom-fit", NULL, action_zoom);
  gtk_widget_class_install_action (widget_class, "canvas.zoom-reset", NULL, action_zoom);
  gtk_widget_class_install_action (widget_class, "canvas.zoom-selection", NULL, action_zoom);
  gtk_widget_class_install_action (widget_class, "canvas.expand-all", NULL, action_expansion);
  gtk_widget_class_install_action (widget_class, "canvas.collapse-all", NULL, action_expansion);
  gtk_widget_class_install_action (widget_class, "canvas.cancel-layout", NULL, action_cancel_layout);
  /* Content moves by (dx, dy) pixels, as a drag would move it. */
  gtk_widget_class_install_action (widget_class, "canvas.pan", "(dd)", action_pan);

  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_plus, GDK_CONTROL_MASK, "canvas.zoom-in", NULL);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_equal, GDK_CONTROL_MASK, "canvas.zoom-in", NULL);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_KP_Add, GDK_CONTROL_MASK, "canvas.zoom-in", NULL);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_minus, GDK_CONTROL_MASK, "canvas.zoom-out", NULL);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_KP_Subtract, GDK_CONTROL_MASK, "canvas.zoom-out", NULL);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_0, GDK_CONTROL_MASK, "canvas.zoom-fit", NULL);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_1, GDK_CONTROL_MASK, "canvas.zoom-reset", NULL);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_period, 0, "canvas.zoom-selection", NULL);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_Escape, 0, "canvas.cancel-layout", NULL);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_Left, 0, "canvas.pan", "(dd)", 80.0, 0.0);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_Right, 0, "canvas.pan", "(dd)", -80.0, 0.0);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_Up, 0, "canvas.pan", "(dd)", 0.0, 80.0);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_Down, 0, "canvas.pan", "(dd)", 0.0, -80.0);

  gtk_widget_class_set_css_name (widget_class, "graph-canvas");
  gtk_widget_class_set_accessible_role (widget_class, GTK_ACCESSIBLE_ROLE_IMG);
}

static void
graft_graph_canvas_init (GraftGraphCanvas *self)
{
  self->marks = g_hash_table_new_full (NULL, NULL, NULL, canvas_mark_free);
  self->heat = g_hash_table_new_full (NULL, NULL, NULL, g_free);
  self->tints = g_hash_table_new_full (NULL, NULL, NULL, canvas_tint_free);
  self->found = g_hash_table_new (NULL, NULL);
  GtkWidget *widget = GTK_WIDGET (self);
  GtkGesture *drag, *click, *pinch;
  GtkEventController *scroll, *motion;

  self->show_attributes = TRUE;
  self->show_shapes = TRUE;
  self->direction = GRAFT_LAYOUT_DIRECTION_TB;
  self->viewport = graft_canvas_viewport_new ();
  g_signal_connect_swapped (self->viewport, "notify", G_CALLBACK (on_viewport_changed), self);

  gtk_widget_set_focusable (widget, TRUE);
  gtk_widget_set_overflow (widget, GTK_OVERFLOW_HIDDEN);
  gtk_widget_set_hexpand (widget, TRUE);
  gtk_widget_set_vexpand (widget, TRUE);

  drag = gtk_gesture_drag_new ();
  gtk_gesture_single_set_button (GTK_GESTURE_SINGLE (drag), 0);
  g_signal_connect (drag, "drag-begin", G_CALLBACK (on_drag_begin), self);
  g_signal_connect (drag, "drag-update", G_CALLBACK (on_drag_update), self);
  gtk_widget_add_controller (widget, GTK_EVENT_CONTROLLER (drag));

  click = gtk_gesture_click_new ();
  g_signal_connect (click, "released", G_CALLBACK (on_click_released), self);
  gtk_widget_add_controller (widget, GTK_EVENT_CONTROLLER (click));

  scroll = gtk_event_controller_scroll_new (GTK_EVENT_CONTROLLER_SCROLL_BOTH_AXES);
  g_signal_connect (scroll, "scroll", G_CALLBACK (on_scroll), self);
  gtk_widget_add_controller (widget, scroll);

  motion = gtk_event_controller_motion_new ();
  g_signal_connect (motion, "motion", G_CALLBACK (on_motion), self);
  gtk_widget_add_controller (widget, motion);

  pinch = gtk_gesture_zoom_new ();
  g_signal_connect (pinch, "begin", G_CALLBACK (on_pinch_begin), self);
  g_signal_connect (pinch, "scale-changed", G_CALLBACK (on_pinch_scale_changed), self);
  gtk_widget_add_controller (widget, GTK_EVENT_CONTROLLER (pinch));

  /* Follow the desktop's dark preference when libadwaita runs the style. */
  if (adw_is_initialized ())
    {
      AdwStyleManager *manager = adw_style_manager_get_default ();

      self->dark = self->dark_requested = adw_style_manager_get_dark (manager);
      self->style_handler = g_signal_connect (manager, "notify::dark", G_CALLBACK (on_style_dark_changed), self);
    }
  else
    {
      gboolean prefer_dark = FALSE;

      g_object_get (gtk_settings_get_default (), "gtk-application-prefer-dark-theme", &prefer_dark, NULL);
      self->dark = self->dark_requested = prefer_dark;
    }
}

GtkWidget *
graft_graph_canvas_new (void)
{
  return g_object_new (GRAFT_TYPE_GRAPH_CANVAS, NULL);
}
