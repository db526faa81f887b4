#include "compare-window.h"

#include <adwaita.h>

#include <math.h>

#include "compare/input-settings.h"
#include "compare/numeric-diff.h"
#include "compare/structural-diff.h"
#include "compare/target-diff.h"
#include "target-marks.h"
#include "widgets/graph-canvas.h"
#include "document.h"
#include "ir/graph-copy.h"
#include "layout/painter.h"
#include "runtime/rt-tensor.h"

/* Canvas mark levels: their colours are the legend's. */
enum { MARK_EXPLAINED = 1, MARK_CHANGED = 2, MARK_ONLY_HERE = 3 };

/* The heat scale of Run Both's overlay: max rel error, log scale, from
 * HEAT_LOW (green: agrees to float32 rounding) to HEAT_HIGH (red); the
 * legend's labels say these numbers. */
#define HEAT_LOW 1e-7
#define HEAT_HIGH 1e-1

typedef enum {
  FILTER_ALL = 0,
  FILTER_ONLY_A,
  FILTER_ONLY_B,
  FILTER_CHANGED,
  FILTER_EXPLAINED,
  FILTER_VALUES,             /* after Run Both: values that differ */
  FILTER_TARGETS,            /* with deployment targets: nodes the two sides' targets decide differently */
} DifferenceFilter;

typedef struct {
  DifferenceFilter kind;
  GraftNode *a;      /* may be NULL */
  GraftNode *b;      /* may be NULL */
  char *text;
} Difference;

struct _GraftCompareWindow {
  GtkApplicationWindow parent_instance;

  /* Owned references */
  GraftDocument *side_document;   /* loads a file dropped on a side (document.c, as the main window loads) */
  GraftAlignment *alignment;
  GraftStructuralDiff *diff;
  GArray *differences;       /* Difference */

  /* Borrowed references (children) */
  GtkWidget *canvases[2];
  GtkWidget *titles[2];
  GtkWidget *heat_legend;
  GtkWidget *inputs_button;
  GtkWidget *inputs_grid;
  GtkWidget *rtol_entry;
  GtkWidget *atol_entry;
  GtkWidget *list;
  GtkWidget *filter;
  GtkWidget *summary;
  GtkWidget *shapes_entry;
  GtkWidget *run_button;
  GtkWidget *run_status;

  GCancellable *run_cancellable;
  GraftNumericRun *last_run;

  GHashTable *input_files;   /* input name → .npy/.pb path for Run Both */

  /* Deployment targets (compare.set-targets): each side under its own,
   * or both under the one chosen */
  const GraftDeployTarget *targets[2];
  GraftTargetDiff *target_diff;
  GtkWidget *target_pickers[2];
  GtkWidget *target_summaries[2];
  gboolean picking;          /* a picker set to show the action's choice */

  gboolean syncing;          /* a selection made to follow the other side */
  gboolean link_views;       /* pan/zoom of one side moves the other */
  gboolean view_syncing;     /* a view moved to follow the other side */
  guint leader;              /* the side last moved by the user, which the other follows */
  guint realign_id;          /* idle placing the follower after a layout */
  guint n_shown;
};

enum {
  PROP_0,
  PROP_LINK_VIEWS,
  PROP_RUNNING,
  PROP_N_DIFFERENCES,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

G_DEFINE_FINAL_TYPE (GraftCompareWindow, graft_compare_window, GTK_TYPE_APPLICATION_WINDOW)

static void
difference_clear (Difference *d)
{
  g_free (d->text);
}

static void
add_difference (GraftCompareWindow *self, DifferenceFilter kind, GraftNode *a, GraftNode *b, char *text)
{
  Difference d = { kind, a, b, text };
  g_array_append_val (self->differences, d);
}

static const char *
node_label (GraftNode *node)
{
  return node->name && *node->name ? node->name : node->op;
}

static void
collect_differences (GraftCompareWindow *self)
{
  GraftAlignment *al = self->alignment;
  for (guint i = 0; i < al->notes->len; i++)
    {
      GraftAlignmentNote *note = al->notes->pdata[i];
      GraftNode *a = note->in_a ? note->node : note->other, *b = note->in_a ? note->other : note->node;
      add_difference (self, FILTER_EXPLAINED, a, b,
                      g_strdup_printf ("%s: %s", graft_note_kind_to_string (note->kind), note->description));
    }
  for (guint i = 0; i < self->diff->changes->len; i++)
    {
      GraftChange *c = self->diff->changes->pdata[i];
      add_difference (self, FILTER_CHANGED, c->a, c->b,
                      g_strdup_printf ("changed %s%s: %s %s: %s → %s", c->inferred ? "inferred " : "",
                                       graft_change_kind_to_string (c->kind), c->b ? node_label (c->b) : "input",
                                       c->what, c->before, c->after));
    }
  for (guint i = 0; i < al->only_a->len; i++)
    add_difference (self, FILTER_ONLY_A, al->only_a->pdata[i], NULL,
                    g_strdup_printf ("only in A: %s (%s)", node_label (al->only_a->pdata[i]),
                                     ((GraftNode *) al->only_a->pdata[i])->op));
  for (guint i = 0; i < al->only_b->len; i++)
    add_difference (self, FILTER_ONLY_B, NULL, al->only_b->pdata[i],
                    g_strdup_printf ("only in B: %s (%s)", node_label (al->only_b->pdata[i]),
                                     ((GraftNode *) al->only_b->pdata[i])->op));
}

static void
mark_differences (GraftCompareWindow *self)
{
  GraftGraphCanvas *ca = GRAFT_GRAPH_CANVAS (self->canvases[0]), *cb = GRAFT_GRAPH_CANVAS (self->canvases[1]);
  GraftAlignment *al = self->alignment;
  for (guint i = 0; i < al->notes->len; i++)
    {
      GraftAlignmentNote *note = al->notes->pdata[i];
      GraftGraphCanvas *mine = note->in_a ? ca : cb, *theirs = note->in_a ? cb : ca;
      graft_graph_canvas_mark_node (mine, note->node, MARK_EXPLAINED, graft_note_kind_to_string (note->kind));
      for (guint k = 0; k < note->absorbed->len; k++)
        if (note->absorbed->pdata[k] != note->node)
          graft_graph_canvas_mark_node (mine, note->absorbed->pdata[k], MARK_EXPLAINED, NULL);
      if (note->other)
        graft_graph_canvas_mark_node (theirs, note->other, MARK_EXPLAINED, graft_note_kind_to_string (note->kind));
      for (guint k = 0; k < note->absorbed_other->len; k++)
        graft_graph_canvas_mark_node (theirs, note->absorbed_other->pdata[k], MARK_EXPLAINED, NULL);
    }
  /* the other side's copies of a flattened or unrolled block */
  for (guint i = 0; i < al->node_pairs->len; i++)
    {
      GraftNodePair *pair = &g_array_index (al->node_pairs, GraftNodePair, i);
      if (pair->a->graph->parent_node != NULL && pair->b->graph->parent_node == NULL)
        graft_graph_canvas_mark_node (cb, pair->b, MARK_EXPLAINED, NULL);
      else if (pair->b->graph->parent_node != NULL && pair->a->graph->parent_node == NULL)
        graft_graph_canvas_mark_node (ca, pair->a, MARK_EXPLAINED, NULL);
    }
  for (guint i = 0; i < self->diff->changes->len; i++)
    {
      GraftChange *c = self->diff->changes->pdata[i];
      if (c->a)
        graft_graph_canvas_mark_node (ca, c->a, MARK_CHANGED, "changed");
      if (c->b)
        graft_graph_canvas_mark_node (cb, c->b, MARK_CHANGED, "changed");
    }
  for (guint i = 0; i < al->only_a->len; i++)
    graft_graph_canvas_mark_node (ca, al->only_a->pdata[i], MARK_ONLY_HERE, "only in A");
  for (guint i = 0; i < al->only_b->len; i++)
    graft_graph_canvas_mark_node (cb, al->only_b->pdata[i], MARK_ONLY_HERE, "only in B");
  if (self->target_diff != NULL)
    {
      graft_target_marks_tint_partitions (ca, self->target_diff->a);
      graft_target_marks_tint_partitions (cb, self->target_diff->b);
    }
}

/* ---- Linked views: matched nodes stay side by side ---- */

/* The node the other side (1 - side) draws for node's match: the match,
 * or the If/Loop holding it when that side shows the block only. */
static GraftNode *
shown_partner (GraftCompareWindow *self, GraftNode *node, guint side)
{
  const GraftNodePair *pair = graft_alignment_lookup (self->alignment, node, side == 0);
  GraftGraph *shown = graft_graph_canvas_get_graph (GRAFT_GRAPH_CANVAS (self->canvases[1 - side]));
  GraftNode *match = pair ? (side == 0 ? pair->b : pair->a) : NULL;
  while (match && match->graph != shown)
    match = match->graph->parent_node;
  return match;
}

typedef struct {
  GraftNode *node;
  GraftRect box, partner_box;
} Anchor;

static gboolean
rects_meet (const GraftRect *a, const GraftRect *b)
{
  return a->x < b->x + b->width && b->x < a->x + a->width && a->y < b->y + b->height && b->y < a->y + a->height;
}

/* The matched node nearest the centre of side's view whose box (its own,
 * or the collapsed group's hiding it) is on screen, and its match's box on
 * the other side. */
static gboolean
find_anchor (GraftCompareWindow *self, guint side, const GraftRect *visible, Anchor *anchor)
{
  GraftGraphCanvas *from = GRAFT_GRAPH_CANVAS (self->canvases[side]), *to = GRAFT_GRAPH_CANVAS (self->canvases[1 - side]);
  GraftGraph *graph = graft_graph_canvas_get_graph (from);
  double centre_x = visible->x + visible->width / 2, centre_y = visible->y + visible->height / 2, best = G_MAXDOUBLE;
  anchor->node = NULL;
  for (guint i = 0; graph && i < graph->nodes->len; i++)
    {
      GraftNode *node = graph->nodes->pdata[i], *partner;
      GraftRect box, partner_box;
      if (!graft_graph_canvas_get_node_bounds (from, node, &box) || !rects_meet (&box, visible))
        continue;
      double dx = box.x + box.width / 2 - centre_x, dy = box.y + box.height / 2 - centre_y;
      if (dx * dx + dy * dy >= best || (partner = shown_partner (self, node, side)) == NULL
          || !graft_graph_canvas_get_node_bounds (to, partner, &partner_box))
        continue;
      best = dx * dx + dy * dy;
      *anchor = (Anchor) { node, box, partner_box };
    }
  return anchor->node != NULL;
}

/* Moves the other side's view to side's zoom with the match of node (NULL:
 * the matched node nearest the centre of side's view) at the same place
 * on screen. */
static void
align_views (GraftCompareWindow *self, guint side, GraftNode *node)
{
  GraftGraphCanvas *from = GRAFT_GRAPH_CANVAS (self->canvases[side]), *to = GRAFT_GRAPH_CANVAS (self->canvases[1 - side]);
  GraftRect visible, bounds, to_visible;
  if (!graft_graph_canvas_get_view (from, &visible, &bounds) || !graft_graph_canvas_get_view (to, &to_visible, &bounds))
    return;
  Anchor anchor = { NULL };
  GraftNode *partner = node ? shown_partner (self, node, side) : NULL;
  gboolean anchored = partner && graft_graph_canvas_get_node_bounds (from, node, &anchor.box)
                      && graft_graph_canvas_get_node_bounds (to, partner, &anchor.partner_box);
  if (!anchored)
    anchored = find_anchor (self, side, &visible, &anchor);
  double zoom = graft_graph_canvas_get_zoom (from);
  self->view_syncing = TRUE;
  if (anchored)
    {
      double sx, sy;
      graft_graph_canvas_scene_to_screen (from, anchor.box.x + anchor.box.width / 2, anchor.box.y + anchor.box.height / 2,
                                          &sx, &sy);
      graft_graph_canvas_set_view (to, zoom, anchor.partner_box.x + anchor.partner_box.width / 2,
                                   anchor.partner_box.y + anchor.partner_box.height / 2, sx, sy);
    }
  else
    {
      /* nothing matched in sight: the zoom only, about the centre */
      double to_zoom = graft_graph_canvas_get_zoom (to);
      graft_graph_canvas_set_view (to, zoom, to_visible.x + to_visible.width / 2, to_visible.y + to_visible.height / 2,
                                   to_visible.width * to_zoom / 2, to_visible.height * to_zoom / 2);
    }
  self->view_syncing = FALSE;
}

static void
on_view_changed (GraftGraphCanvas *canvas, GraftCompareWindow *self)
{
  if (!self->link_views || self->view_syncing || self->alignment == NULL)
    return;
  self->leader = GTK_WIDGET (canvas) == self->canvases[0] ? 0 : 1;
  align_views (self, self->leader, NULL);
}

static gboolean
realign (gpointer data)
{
  GraftCompareWindow *self = data;
  self->realign_id = 0;
  if (self->link_views && self->alignment != NULL)
    align_views (self, self->leader, NULL);
  return G_SOURCE_REMOVE;
}

/* A new layout (a group opened or closed) moves nodes, not the view: the
 * side that follows is placed again, once the canvas has taken the new
 * scene (it stops being busy just before). */
static void
on_canvas_busy (GraftGraphCanvas *canvas, GParamSpec *pspec, GraftCompareWindow *self)
{
  gboolean busy = TRUE;
  g_object_get (canvas, "busy", &busy, NULL);
  /* (not once disposed: the idle would outlive the window) */
  if (!busy && self->realign_id == 0 && self->run_cancellable != NULL)
    self->realign_id = g_idle_add (realign, self);
}

/* Groups opened or closed on one side: the same module groups on the other. */
static void
on_expansion_changed (GraftGraphCanvas *canvas, GraftCompareWindow *self)
{
  if (!self->link_views)
    return;
  self->leader = GTK_WIDGET (canvas) == self->canvases[0] ? 0 : 1;
  g_auto(GStrv) paths = graft_graph_canvas_dup_expanded_groups (canvas);
  graft_graph_canvas_set_expanded_groups (GRAFT_GRAPH_CANVAS (self->canvases[1 - self->leader]),
                                          (const char *const *) paths);
}

static void
set_link_views (GraftCompareWindow *self, gboolean link)
{
  if (self->link_views == link)
    return;
  self->link_views = link;
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_LINK_VIEWS]);
  if (link)
    align_views (self, 0, graft_graph_canvas_get_selected_node (GRAFT_GRAPH_CANVAS (self->canvases[0])));
}

/* Selecting a node on one side selects its match on the other: next to
 * it with linked views, else centred. */
static void
on_selected_node (GraftGraphCanvas *canvas, GParamSpec *pspec, GraftCompareWindow *self)
{
  if (self->syncing)
    return;
  guint side = GTK_WIDGET (canvas) == self->canvases[0] ? 0 : 1;
  GraftNode *node = graft_graph_canvas_get_selected_node (canvas);
  const GraftNodePair *pair = node ? graft_alignment_lookup (self->alignment, node, side == 0) : NULL;
  GraftGraphCanvas *other = GRAFT_GRAPH_CANVAS (self->canvases[1 - side]);
  GraftNode *match = pair ? (side == 0 ? pair->b : pair->a) : NULL;
  if (match && match->graph != graft_graph_canvas_get_graph (other))
    match = NULL;   /* inside a block the other canvas does not show */
  self->syncing = TRUE;
  self->view_syncing = self->link_views;
  graft_graph_canvas_select_node (other, match);
  self->view_syncing = FALSE;
  self->syncing = FALSE;
  if (match && self->link_views)
    {
      self->leader = side;
      align_views (self, side, node);
    }
}

static void
select_both (GraftCompareWindow *self, GraftNode *a, GraftNode *b)
{
  self->syncing = TRUE;
  for (guint s = 0; s < 2; s++)
    {
      GraftGraphCanvas *canvas = GRAFT_GRAPH_CANVAS (self->canvases[s]);
      GraftNode *node = s == 0 ? a : b;
      if (node && node->graph == graft_graph_canvas_get_graph (canvas))
        graft_graph_canvas_select_node (canvas, node);
      else if (node && node->graph->parent_node)
        {
          /* a node inside an If/Loop block: select the block's node */
          GraftNode *outer = node->graph->parent_node;
          while (outer->graph != graft_graph_canvas_get_graph (canvas) && outer->graph->parent_node)
            outer = outer->graph->parent_node;
          graft_graph_canvas_select_node (canvas, outer);
        }
    }
  self->syncing = FALSE;
}

static void
on_row_activated (GtkListBox *list, GtkListBoxRow *row, GraftCompareWindow *self)
{
  guint index = GPOINTER_TO_UINT (g_object_get_data (G_OBJECT (row), "difference"));
  Difference *d = &g_array_index (self->differences, Difference, index);
  select_both (self, d->a, d->b);
}

static void
fill_list (GraftCompareWindow *self)
{
  DifferenceFilter filter = gtk_drop_down_get_selected (GTK_DROP_DOWN (self->filter));
  GtkWidget *child;
  while ((child = gtk_widget_get_first_child (self->list)) != NULL)
    gtk_list_box_remove (GTK_LIST_BOX (self->list), child);
  self->n_shown = 0;
  for (guint i = 0; i < self->differences->len; i++)
    {
      Difference *d = &g_array_index (self->differences, Difference, i);
      if (filter != FILTER_ALL && d->kind != filter)
        continue;
      GtkWidget *label = gtk_label_new (d->text);
      gtk_label_set_xalign (GTK_LABEL (label), 0);
      gtk_label_set_wrap (GTK_LABEL (label), TRUE);
      gtk_label_set_wrap_mode (GTK_LABEL (label), PANGO_WRAP_WORD_CHAR);
      gtk_widget_set_margin_start (label, 12);
      gtk_widget_set_margin_end (label, 12);
      gtk_widget_set_margin_top (label, 3);
      gtk_widget_set_margin_bottom (label, 3);
      GtkWidget *row = gtk_list_box_row_new ();
      gtk_list_box_row_set_child (GTK_LIST_BOX_ROW (row), label);
      g_object_set_data (G_OBJECT (row), "difference", GUINT_TO_POINTER (i));
      gtk_list_box_append (GTK_LIST_BOX (self->list), row);
      self->n_shown++;
    }
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_N_DIFFERENCES]);
}

static void
on_filter_changed (GtkDropDown *dropdown, GParamSpec *pspec, GraftCompareWindow *self)
{
  fill_list (self);
}

/* ---- Run Both: the numeric diff as an overlay ---- */

typedef struct {
  GraftAlignment *alignment;   /* borrowed: the window outlives the task (it holds a reference) */
  char *spec;
  GHashTable *files;           /* input name → path */
  double rtol, atol;
} RunTask;

static void
run_task_free (RunTask *task)
{
  g_free (task->spec);
  g_hash_table_unref (task->files);
  g_free (task);
}

/* "x=1x3x224x224 batch=2": an input's shape where NAME is an input of
 * either model, else a symbolic dim's value. */
static GraftInputSettings *
parse_run_spec (GraftNumericDiff *nd, const char *spec, GError **error)
{
  g_autoptr(GraftInputSettings) settings = graft_input_settings_new ();
  g_auto(GStrv) tokens = g_strsplit_set (spec, " \t,;", -1);
  GPtrArray *inputs = graft_numeric_diff_get_inputs (nd);
  for (guint i = 0; tokens[i]; i++)
    {
      if (*tokens[i] == '\0')
        continue;
      const char *eq = strchr (tokens[i], '=');
      g_autofree char *name = eq ? g_strndup (tokens[i], eq - tokens[i]) : NULL;
      gboolean is_input = FALSE;
      for (guint k = 0; name && k < inputs->len; k++)
        {
          GraftValue *v = inputs->pdata[k], *p = graft_numeric_diff_get_partner_input (nd, v);
          is_input |= g_strcmp0 (v->name, name) == 0 || (p && g_strcmp0 (p->name, name) == 0);
        }
      if (!(is_input ? graft_input_settings_add_shapes (settings, tokens[i], error)
                     : graft_input_settings_add_dims (settings, tokens[i], error)))
        return NULL;
    }
  return g_steal_pointer (&settings);
}

static GHashTable *
read_input_files (GraftNumericDiff *nd, GHashTable *files, GError **error)
{
  g_autoptr(GHashTable) given = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                       (GDestroyNotify) graft_rt_tensor_unref);
  GHashTableIter iter;
  gpointer name, path;
  g_hash_table_iter_init (&iter, files);
  while (g_hash_table_iter_next (&iter, &name, &path))
    if (!graft_input_settings_read_input (nd, name, path, given, error))
      return g_prefix_error (error, "input %s: ", (char *) name), NULL;
  return g_steal_pointer (&given);
}

static void
run_thread (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
  RunTask *rt = task_data;
  GError *error = NULL;
  g_autoptr(GraftNumericDiff) nd = graft_numeric_diff_new (rt->alignment, rt->rtol, rt->atol, &error);
  g_autoptr(GraftInputSettings) settings = nd ? parse_run_spec (nd, rt->spec, &error) : NULL;
  g_autoptr(GHashTable) given = settings ? read_input_files (nd, rt->files, &error) : NULL;
  g_autofree char *label = NULL;
  g_autoptr(GHashTable) inputs = given ? graft_input_settings_make_inputs (settings, nd, 0, given, TRUE, 0, &label,
                                                                           &error) : NULL;
  GraftNumericRun *run = inputs ? graft_numeric_diff_run (nd, inputs, label, &error) : NULL;
  if (run == NULL)
    g_task_return_error (task, error);
  else
    g_task_return_pointer (task, run, (GDestroyNotify) graft_numeric_run_free);
}

/* Where max_rel falls on the heat scale: 0 at HEAT_LOW or less, 1 at
 * HEAT_HIGH or more (and for values whose shapes differ). */
static double
error_heat (const GraftValueError *e)
{
  if (e->shape_differs || isnan (e->max_rel))
    return 1.0;
  if (e->max_rel <= HEAT_LOW)
    return 0.0;
  return CLAMP (log10 (e->max_rel / HEAT_LOW) / log10 (HEAT_HIGH / HEAT_LOW), 0.0, 1.0);
}

/* The values that differ as rows of the Differences list (replacing the
 * last run's), in A's run order, the first one said so. */
static void
list_numeric (GraftCompareWindow *self, GraftNumericRun *run)
{
  const GraftValueError *first = graft_numeric_run_get_first_divergent (run);
  for (guint i = self->differences->len; i > 0; i--)
    if (g_array_index (self->differences, Difference, i - 1).kind == FILTER_VALUES)
      g_array_remove_index (self->differences, i - 1);
  for (guint i = 0; i < run->values->len; i++)
    {
      GraftValueError *e = &g_array_index (run->values, GraftValueError, i);
      if (!e->compared || e->close)
        continue;
      g_autofree char *how = e->shape_differs ? g_strdup_printf ("shapes %s ≠ %s", e->shape_a, e->shape_b)
                                              : g_strdup_printf ("max rel. error %.3g, max abs %.3g", e->max_rel,
                                                                 e->max_abs);
      add_difference (self, FILTER_VALUES, e->a->producer, e->b->producer,
                      g_strdup_printf ("%svalues differ: %s ↔ %s: %s", e == first ? "first " : "", e->a->name,
                                       e->b->name, how));
    }
  fill_list (self);
}

/* Each compared value's error as heat on its producers (a node producing
 * several values takes the worst), the divergent ones marked and badged
 * with their error, the first divergent one "first: …". */
static void
mark_numeric (GraftCompareWindow *self, GraftNumericRun *run)
{
  const GraftValueError *first = graft_numeric_run_get_first_divergent (run);
  for (guint i = 0; i < run->values->len; i++)
    {
      GraftValueError *e = &g_array_index (run->values, GraftValueError, i);
      if (!e->compared)
        continue;
      double heat = error_heat (e);
      for (guint s = 0; s < 2; s++)
        {
          GraftGraphCanvas *canvas = GRAFT_GRAPH_CANVAS (self->canvases[s]);
          GraftNode *producer = s == 0 ? e->a->producer : e->b->producer;
          double before;
          if (producer && !(graft_graph_canvas_get_node_heat (canvas, producer, &before) && before >= heat))
            graft_graph_canvas_set_node_heat (canvas, producer, heat);
        }
      if (e->close)
        continue;
      g_autofree char *badge = e->shape_differs ? g_strdup_printf ("%s%s ≠ %s", e == first ? "first: " : "",
                                                                   e->shape_a, e->shape_b)
                                                : g_strdup_printf ("%serror %.2g", e == first ? "first: " : "",
                                                                   e->max_rel);
      if (e->a->producer)
        graft_graph_canvas_mark_node (GRAFT_GRAPH_CANVAS (self->canvases[0]), e->a->producer, MARK_ONLY_HERE, badge);
      if (e->b->producer)
        graft_graph_canvas_mark_node (GRAFT_GRAPH_CANVAS (self->canvases[1]), e->b->producer, MARK_ONLY_HERE, badge);
    }
}

/* The node whose run failed, marked and badged on its side, and listed. */
static void
mark_failures (GraftCompareWindow *self, GraftNumericRun *run)
{
  for (guint s = 0; s < 2; s++)
    {
      GraftNode *node = s == 0 ? run->failed_a : run->failed_b;
      const char *message = s == 0 ? run->error_a : run->error_b;

      if (node == NULL)
        continue;
      graft_graph_canvas_mark_node (GRAFT_GRAPH_CANVAS (self->canvases[s]), node, MARK_ONLY_HERE, "run fails here");
      add_difference (self, FILTER_VALUES, s == 0 ? node : NULL, s == 1 ? node : NULL,
                      g_strdup_printf ("%c's run fails: %s", 'A' + s, message));
    }
  fill_list (self);
}

/* Run Both waits while it runs, or while a side is loaded (a run reads
 * both models): its button says so. */
static void
set_running (GraftCompareWindow *self, gboolean running)
{
  gtk_widget_set_sensitive (self->run_button, !running);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_RUNNING]);
}

static void
on_run_done (GObject *source, GAsyncResult *result, gpointer user_data)
{
  g_autoptr(GraftCompareWindow) self = user_data;
  g_autoptr(GError) error = NULL;
  GraftNumericRun *run = g_task_propagate_pointer (G_TASK (result), &error);
  if (self->run_cancellable == NULL)
    {
      /* the window was closed while both ran */
      g_clear_pointer (&run, graft_numeric_run_free);
      return;
    }
  set_running (self, FALSE);
  if (run == NULL)
    {
      g_autofree char *text = g_strdup_printf ("Run Both failed: %s", error->message);
      gtk_label_set_text (GTK_LABEL (self->run_status), text);
      return;
    }
  g_clear_pointer (&self->last_run, graft_numeric_run_free);
  self->last_run = run;
  g_autofree char *verdict = graft_numeric_run_describe (run, self->alignment);
  /* A failed side computed no outputs: the count is of what ran before. */
  g_autofree char *text = g_strdup_printf ("%c%s — %s%u values compared%s, %u divergent", g_ascii_toupper (verdict[0]),
                                           verdict + 1,
                                           run->error_a || run->error_b ? "outputs not compared; " : "",
                                           run->n_compared, run->error_a || run->error_b ? " before it" : "",
                                           run->n_divergent);
  gtk_label_set_text (GTK_LABEL (self->run_status), text);
  gtk_widget_set_tooltip_text (self->run_status, text);
  graft_graph_canvas_clear_marks (GRAFT_GRAPH_CANVAS (self->canvases[0]));
  graft_graph_canvas_clear_marks (GRAFT_GRAPH_CANVAS (self->canvases[1]));
  mark_differences (self);
  mark_numeric (self, run);
  list_numeric (self, run);
  mark_failures (self, run);
  gtk_widget_set_visible (self->heat_legend, TRUE);
}

static gboolean
parse_tolerance (GtkWidget *entry, const char *what, double *value, GError **error)
{
  const char *text = gtk_editable_get_text (GTK_EDITABLE (entry));
  char *end = NULL;
  *value = g_ascii_strtod (text, &end);
  while (end && g_ascii_isspace (*end))
    end++;
  if (end == text || *end != '\0' || !isfinite (*value) || *value < 0)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "%s '%s' is not a number ≥ 0", what, text);
      return FALSE;
    }
  return TRUE;
}

/* compare.run-both("x=1x3x224x224"): both models on the same inputs —
 * the files set for inputs (compare.set-input-file), random data (seed 0)
 * of the shapes given (an empty string: the declared ones) for the others
 * — compared with the rtol and atol fields' tolerances. */
static void
run_both_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftCompareWindow *self = GRAFT_COMPARE_WINDOW (widget);
  g_autoptr(GError) error = NULL;
  double rtol, atol;
  if (!gtk_widget_get_sensitive (self->run_button))
    return;   /* one run at a time */
  if (!parse_tolerance (self->rtol_entry, "rtol", &rtol, &error)
      || !parse_tolerance (self->atol_entry, "atol", &atol, &error))
    {
      g_autofree char *text = g_strdup_printf ("Run Both failed: %s", error->message);
      gtk_label_set_text (GTK_LABEL (self->run_status), text);
      return;
    }
  RunTask *rt = g_new0 (RunTask, 1);
  rt->alignment = self->alignment;
  rt->spec = g_strdup (parameter ? g_variant_get_string (parameter, NULL) : "");
  rt->rtol = rtol;
  rt->atol = atol;
  rt->files = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  GHashTableIter iter;
  gpointer name, path;
  g_hash_table_iter_init (&iter, self->input_files);
  while (g_hash_table_iter_next (&iter, &name, &path))
    g_hash_table_insert (rt->files, g_strdup (name), g_strdup (path));
  /* The window rides in user_data, not as the source object: GIO's worker
   * may drop the task's last reference, and a window must not be disposed
   * off the UI thread. */
  g_autoptr(GTask) task = g_task_new (NULL, self->run_cancellable, on_run_done, g_object_ref (self));
  g_task_set_task_data (task, rt, (GDestroyNotify) run_task_free);
  set_running (self, TRUE);
  gtk_label_set_text (GTK_LABEL (self->run_status), "Running both models…");
  g_task_run_in_thread (task, run_thread);
}

static void
on_run_clicked (GtkButton *button, GraftCompareWindow *self)
{
  gtk_widget_activate_action (GTK_WIDGET (self), "compare.run-both", "s",
                              gtk_editable_get_text (GTK_EDITABLE (self->shapes_entry)));
}

/* ---- Inputs from files ---- */

static void fill_inputs_grid (GraftCompareWindow *self);

/* compare.set-input-file(("x", "/path/x.npy")): Run Both feeds x from the
 * file (an empty path: random data again). */
static void
set_input_file_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftCompareWindow *self = GRAFT_COMPARE_WINDOW (widget);
  const char *name, *path;
  g_variant_get (parameter, "(&s&s)", &name, &path);
  if (*path)
    g_hash_table_insert (self->input_files, g_strdup (name), g_strdup (path));
  else
    g_hash_table_remove (self->input_files, name);
  fill_inputs_grid (self);
}

static void
on_input_file_chosen (GtkNativeDialog *dialog, int response, GraftCompareWindow *self)
{
  g_autoptr(GFile) file = response == GTK_RESPONSE_ACCEPT ? gtk_file_chooser_get_file (GTK_FILE_CHOOSER (dialog)) : NULL;
  g_autofree char *path = file ? g_file_get_path (file) : NULL;
  if (path)
    gtk_widget_activate_action (GTK_WIDGET (self), "compare.set-input-file", "(ss)",
                                g_object_get_data (G_OBJECT (dialog), "input"), path);
  g_object_unref (dialog);
}

static void
on_choose_input_file (GtkButton *button, GraftCompareWindow *self)
{
  const char *name = g_object_get_data (G_OBJECT (button), "input");
  g_autofree char *title = g_strdup_printf ("Input “%s”", name);
  GtkFileChooserNative *dialog = gtk_file_chooser_native_new (title, GTK_WINDOW (self), GTK_FILE_CHOOSER_ACTION_OPEN,
                                                              "_Use", "_Cancel");
  g_autoptr(GtkFileFilter) filter = gtk_file_filter_new ();
  gtk_file_filter_set_name (filter, "Tensors (.npy, .pb)");
  gtk_file_filter_add_suffix (filter, "npy");
  gtk_file_filter_add_suffix (filter, "pb");
  gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (dialog), filter);
  g_object_set_data_full (G_OBJECT (dialog), "input", g_strdup (name), g_free);
  gtk_native_dialog_set_modal (GTK_NATIVE_DIALOG (dialog), TRUE);
  g_signal_connect (dialog, "response", G_CALLBACK (on_input_file_chosen), self);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (dialog));
}

static void
on_clear_input_file (GtkButton *button, GraftCompareWindow *self)
{
  gtk_widget_activate_action (GTK_WIDGET (self), "compare.set-input-file", "(ss)",
                              g_object_get_data (G_OBJECT (button), "input"), "");
}

/* One row per graph input of A: its name, the file feeding it (or
 * "random"), a button to choose one and one to go back to random data. */
static void
fill_inputs_grid (GraftCompareWindow *self)
{
  GtkWidget *child;
  while ((child = gtk_widget_get_first_child (self->inputs_grid)) != NULL)
    gtk_grid_remove (GTK_GRID (self->inputs_grid), child);
  GPtrArray *inputs = graft_model_get_graph (self->alignment->a)->inputs;
  int row = 0;
  for (guint i = 0; i < self->alignment->value_pairs->len; i++)
    {
      GraftValue *input = g_array_index (self->alignment->value_pairs, GraftValuePair, i).a;
      if (!input->is_graph_input || input->initializer || !g_ptr_array_find (inputs, input, NULL))
        continue;
      const char *path = g_hash_table_lookup (self->input_files, input->name);
      g_autofree char *base = path ? g_path_get_basename (path) : NULL;
      GtkWidget *name = gtk_label_new (input->name);
      gtk_label_set_xalign (GTK_LABEL (name), 0);
      GtkWidget *source = gtk_label_new (base ? base : "random data");
      gtk_label_set_xalign (GTK_LABEL (source), 0);
      gtk_label_set_ellipsize (GTK_LABEL (source), PANGO_ELLIPSIZE_MIDDLE);
      gtk_label_set_width_chars (GTK_LABEL (source), 24);
      if (path)
        gtk_widget_set_tooltip_text (source, path);
      else
        gtk_widget_add_css_class (source, "dim-label");
      GtkWidget *choose = gtk_button_new_with_label ("Choose .npy…");
      g_object_set_data_full (G_OBJECT (choose), "input", g_strdup (input->name), g_free);
      g_signal_connect (choose, "clicked", G_CALLBACK (on_choose_input_file), self);
      GtkWidget *clear = gtk_button_new_from_icon_name ("edit-clear-symbolic");
      gtk_widget_set_tooltip_text (clear, "Random data");
      gtk_widget_set_sensitive (clear, path != NULL);
      g_object_set_data_full (G_OBJECT (clear), "input", g_strdup (input->name), g_free);
      g_signal_connect (clear, "clicked", G_CALLBACK (on_clear_input_file), self);
      gtk_grid_attach (GTK_GRID (self->inputs_grid), name, 0, row, 1, 1);
      gtk_grid_attach (GTK_GRID (self->inputs_grid), source, 1, row, 1, 1);
      gtk_grid_attach (GTK_GRID (self->inputs_grid), choose, 2, row, 1, 1);
      gtk_grid_attach (GTK_GRID (self->inputs_grid), clear, 3, row, 1, 1);
      row++;
    }
  guint n_files = g_hash_table_size (self->input_files);
  g_autofree char *label = n_files ? g_strdup_printf ("Inputs: %u file%s", n_files, n_files == 1 ? "" : "s")
                                   : g_strdup ("Inputs: random");
  gtk_menu_button_set_label (GTK_MENU_BUTTON (self->inputs_button), label);
}

/* A TorchScript input declares no shape: start from the other side's. */
static void
guess_shapes (GraftCompareWindow *self)
{
  GPtrArray *inputs = graft_model_get_graph (self->alignment->a)->inputs;
  GString *guess = g_string_new (NULL);
  for (guint i = 0; i < self->alignment->value_pairs->len; i++)
    {
      GraftValuePair *vp = &g_array_index (self->alignment->value_pairs, GraftValuePair, i);
      const GraftShape *shape = vp->a->shape.rank >= 0 ? &vp->a->shape : &vp->b->shape;
      if (!vp->a->is_graph_input || !graft_shape_is_fully_fixed (shape) || !g_ptr_array_find (inputs, vp->a, NULL))
        continue;
      g_string_append_printf (guess, "%s%s=", guess->len ? " " : "", vp->a->name);
      for (int d = 0; d < shape->rank; d++)
        g_string_append_printf (guess, "%s%" G_GINT64_FORMAT, d ? "x" : "", shape->dims[d].value);
    }
  gtk_editable_set_text (GTK_EDITABLE (self->shapes_entry), guess->str);
  g_string_free (guess, TRUE);
}

static GtkWidget *
tolerance_entry (GtkWidget *bar, const char *label, const char *tooltip)
{
  GtkWidget *title = gtk_label_new (label);
  gtk_box_append (GTK_BOX (bar), title);
  GtkWidget *entry = gtk_entry_new ();
  gtk_widget_set_name (entry, label);
  gtk_editable_set_text (GTK_EDITABLE (entry), "1e-5");
  gtk_editable_set_width_chars (GTK_EDITABLE (entry), 6);
  gtk_editable_set_max_width_chars (GTK_EDITABLE (entry), 8);
  gtk_widget_set_tooltip_text (entry, tooltip);
  gtk_accessible_update_property (GTK_ACCESSIBLE (entry), GTK_ACCESSIBLE_PROPERTY_LABEL, label, -1);
  gtk_box_append (GTK_BOX (bar), entry);
  return entry;
}

static GtkWidget *
run_bar (GraftCompareWindow *self)
{
  GtkWidget *bar = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 8);
  gtk_widget_set_margin_start (bar, 12);
  gtk_widget_set_margin_end (bar, 12);
  self->shapes_entry = gtk_entry_new ();
  gtk_widget_set_name (self->shapes_entry, "run-shapes");
  gtk_entry_set_placeholder_text (GTK_ENTRY (self->shapes_entry), "input shapes: x=1x3x224x224 (or dims: batch=2)");
  gtk_editable_set_width_chars (GTK_EDITABLE (self->shapes_entry), 30);
  gtk_widget_set_hexpand (self->shapes_entry, TRUE);
  gtk_widget_set_tooltip_text (self->shapes_entry, "Shapes of the random inputs (NAME=DIMS), or values of symbolic "
                                                   "dims (NAME=VALUE)");
  g_signal_connect_swapped (self->shapes_entry, "activate", G_CALLBACK (on_run_clicked), self);
  gtk_box_append (GTK_BOX (bar), self->shapes_entry);

  self->inputs_button = gtk_menu_button_new ();
  gtk_widget_set_name (self->inputs_button, "run-inputs");
  self->inputs_grid = gtk_grid_new ();
  gtk_grid_set_row_spacing (GTK_GRID (self->inputs_grid), 6);
  gtk_grid_set_column_spacing (GTK_GRID (self->inputs_grid), 8);
  GtkWidget *popover = gtk_popover_new ();
  gtk_popover_set_child (GTK_POPOVER (popover), self->inputs_grid);
  gtk_menu_button_set_popover (GTK_MENU_BUTTON (self->inputs_button), popover);
  gtk_widget_set_tooltip_text (self->inputs_button, "Feed inputs from .npy or .pb files instead of random data");
  gtk_box_append (GTK_BOX (bar), self->inputs_button);

  self->rtol_entry = tolerance_entry (bar, "rtol", "Relative tolerance: close when |a − b| ≤ atol + rtol·|a|");
  self->atol_entry = tolerance_entry (bar, "atol", "Absolute tolerance: close when |a − b| ≤ atol + rtol·|a|");
  g_signal_connect_swapped (self->rtol_entry, "activate", G_CALLBACK (on_run_clicked), self);
  g_signal_connect_swapped (self->atol_entry, "activate", G_CALLBACK (on_run_clicked), self);

  self->run_button = gtk_button_new_with_mnemonic ("_Run Both");
  gtk_widget_add_css_class (self->run_button, "suggested-action");
  gtk_widget_set_name (self->run_button, "run-both");
  g_signal_connect (self->run_button, "clicked", G_CALLBACK (on_run_clicked), self);
  gtk_box_append (GTK_BOX (bar), self->run_button);
  return bar;
}

static GtkWidget *
legend_item (const char *css_class, const char *text)
{
  GtkWidget *label = gtk_label_new (text);
  gtk_widget_add_css_class (label, css_class);
  return label;
}

static void
draw_heat_scale (GtkDrawingArea *area, cairo_t *cr, int width, int height, gpointer data)
{
  for (int x = 0; x < width; x++)
    {
      double rgb[3];
      graft_painter_get_heat_colour ((double) x / MAX (width - 1, 1), rgb);
      cairo_set_source_rgb (cr, rgb[0], rgb[1], rgb[2]);
      cairo_rectangle (cr, x, 0, 1, height);
      cairo_fill (cr);
    }
}

/* "max rel. error ≤1e-7 [green … red] ≥0.1": the heat stripes' scale,
 * shown once Run Both has drawn them. */
static GtkWidget *
heat_legend (void)
{
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 6);
  gtk_box_append (GTK_BOX (box), gtk_label_new ("heat: max rel. error"));
  gtk_box_append (GTK_BOX (box), gtk_label_new ("≤1e-7"));
  GtkWidget *scale = gtk_drawing_area_new ();
  gtk_drawing_area_set_content_width (GTK_DRAWING_AREA (scale), 120);
  gtk_drawing_area_set_content_height (GTK_DRAWING_AREA (scale), 10);
  gtk_widget_set_valign (scale, GTK_ALIGN_CENTER);
  gtk_drawing_area_set_draw_func (GTK_DRAWING_AREA (scale), draw_heat_scale, NULL, NULL);
  gtk_box_append (GTK_BOX (box), scale);
  gtk_box_append (GTK_BOX (box), gtk_label_new ("≥0.1"));
  gtk_widget_set_visible (box, FALSE);
  return box;
}

/* ---- Comparing, and replacing a side ---- */

static void load_side (GraftCompareWindow *self, guint side, GFile *file);

static gboolean
on_side_drop (GtkDropTarget *target, const GValue *value, double x, double y, GraftCompareWindow *self)
{
  guint side = GPOINTER_TO_UINT (g_object_get_data (G_OBJECT (target), "side"));
  if (!G_VALUE_HOLDS (value, GDK_TYPE_FILE_LIST))
    return FALSE;
  GSList *files = gdk_file_list_get_files (g_value_get_boxed (value));
  if (files == NULL)
    return FALSE;
  load_side (self, side, files->data);
  g_slist_free (files);
  return TRUE;
}

/* ---- Deployment targets: each side's partitions and the nodes decided differently ---- */

static void
remove_differences (GraftCompareWindow *self, DifferenceFilter kind)
{
  for (guint i = self->differences->len; i > 0; i--)
    if (g_array_index (self->differences, Difference, i - 1).kind == kind)
      g_array_remove_index (self->differences, i - 1);
}

static void
list_target_differences (GraftCompareWindow *self)
{
  GraftTargetDiff *diff = self->target_diff;

  for (guint i = 0; i < diff->differences->len; i++)
    {
      const GraftTargetDifference *d = &g_array_index (diff->differences, GraftTargetDifference, i);
      GraftNode *node = d->a ? d->a : d->b;
      g_autofree char *on_a = graft_target_difference_describe (d->on_a, diff->a->target);
      g_autofree char *on_b = graft_target_difference_describe (d->on_b, diff->b->target);

      add_difference (self, FILTER_TARGETS, d->a, d->b,
                      g_strdup_printf ("%s %s — A %s; B %s", node->op, node_label (node), on_a, on_b));
    }
}

/* Checks both sides against the chosen targets (a side without one takes
 * the other's), then shows the summaries, the tints and the list. */
static void
update_targets (GraftCompareWindow *self)
{
  g_autoptr(GError) error = NULL;
  const GraftDeployTarget *a = self->targets[0] ? self->targets[0] : self->targets[1];
  const GraftDeployTarget *b = self->targets[1] ? self->targets[1] : self->targets[0];

  g_clear_pointer (&self->target_diff, graft_target_diff_free);
  remove_differences (self, FILTER_TARGETS);
  if (a != NULL && self->alignment != NULL)
    self->target_diff = graft_target_diff_new (self->alignment, a, b, &error);
  for (guint s = 0; s < 2; s++)
    {
      g_autofree char *summary = NULL;
      if (self->target_diff != NULL)
        summary = graft_target_report_summary (s == 0 ? self->target_diff->a : self->target_diff->b);
      gtk_label_set_text (GTK_LABEL (self->target_summaries[s]), summary ? summary : error ? error->message : "");
      gtk_widget_set_visible (self->target_summaries[s], a != NULL);
    }
  if (self->target_diff != NULL)
    list_target_differences (self);
  for (guint s = 0; s < 2; s++)
    graft_graph_canvas_clear_marks (GRAFT_GRAPH_CANVAS (self->canvases[s]));
  if (self->alignment != NULL)
    mark_differences (self);
  if (self->last_run != NULL)
    mark_numeric (self, self->last_run);
  fill_list (self);
}

static const GraftDeployTarget *
picked_target (GraftCompareWindow *self, guint side)
{
  guint n_targets, position = gtk_drop_down_get_selected (GTK_DROP_DOWN (self->target_pickers[side]));
  const GraftDeployTarget *const *targets = graft_deploy_targets (&n_targets);

  return position >= 1 && position <= n_targets ? targets[position - 1] : NULL;
}

static void
on_target_picked (GtkDropDown *dropdown, GParamSpec *pspec, GraftCompareWindow *self)
{
  const GraftDeployTarget *a = picked_target (self, 0), *b = picked_target (self, 1);

  if (self->picking)
    return;
  gtk_widget_activate_action (GTK_WIDGET (self), "compare.set-targets", "(ss)", a ? a->name : "", b ? b->name : "");
}

/* compare.set-targets(("ort-nnapi", "openvino")): A under the first, B
 * under the second ("": none; with one given, both sides take it). */
static void
set_targets_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftCompareWindow *self = GRAFT_COMPARE_WINDOW (widget);
  const char *names[2];
  const GraftDeployTarget *chosen[2];
  guint n_targets;
  const GraftDeployTarget *const *targets = graft_deploy_targets (&n_targets);

  g_variant_get (parameter, "(&s&s)", &names[0], &names[1]);
  for (guint s = 0; s < 2; s++)
    {
      chosen[s] = *names[s] ? graft_deploy_target_lookup (names[s]) : NULL;
      if (*names[s] && chosen[s] == NULL)
        {
          g_autofree char *text = g_strdup_printf ("No deployment target “%s”", names[s]);
          gtk_label_set_text (GTK_LABEL (self->run_status), text);
          return;
        }
    }
  self->picking = TRUE;
  for (guint s = 0; s < 2; s++)
    {
      guint position = 0;
      self->targets[s] = chosen[s];
      for (guint i = 0; i < n_targets; i++)
        if (targets[i] == chosen[s])
          position = i + 1;
      gtk_drop_down_set_selected (GTK_DROP_DOWN (self->target_pickers[s]), position);
    }
  self->picking = FALSE;
  update_targets (self);
}

static GtkWidget *
target_picker (GraftCompareWindow *self, guint side)
{
  guint n_targets;
  const GraftDeployTarget *const *targets = graft_deploy_targets (&n_targets);
  g_autoptr(GtkStringList) titles = gtk_string_list_new (NULL);
  GtkWidget *picker;

  gtk_string_list_append (titles, "No Target");
  for (guint i = 0; i < n_targets; i++)
    gtk_string_list_append (titles, targets[i]->title);
  picker = gtk_drop_down_new (G_LIST_MODEL (g_steal_pointer (&titles)), NULL);
  gtk_widget_set_tooltip_text (picker, side == 0 ? "Deployment target of A: its partitions tinted, the nodes the "
                                                   "two targets decide differently listed (Targets Differ)"
                                                 : "Deployment target of B (No Target: A's)");
  g_signal_connect (picker, "notify::selected", G_CALLBACK (on_target_picked), self);
  return picker;
}

static GtkWidget *
side_pane (GraftCompareWindow *self, guint side)
{
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 0);
  self->titles[side] = gtk_label_new (NULL);
  gtk_widget_add_css_class (self->titles[side], "heading");
  gtk_widget_set_margin_top (self->titles[side], 4);
  gtk_widget_set_margin_bottom (self->titles[side], 4);
  gtk_label_set_ellipsize (GTK_LABEL (self->titles[side]), PANGO_ELLIPSIZE_MIDDLE);
  gtk_widget_set_hexpand (self->titles[side], TRUE);
  GtkWidget *title_row = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 6);
  gtk_widget_set_margin_end (title_row, 6);
  gtk_box_append (GTK_BOX (title_row), self->titles[side]);
  self->target_pickers[side] = target_picker (self, side);
  gtk_box_append (GTK_BOX (title_row), self->target_pickers[side]);
  gtk_box_append (GTK_BOX (box), title_row);
  self->target_summaries[side] = gtk_label_new (NULL);
  gtk_widget_set_name (self->target_summaries[side], side == 0 ? "target-summary-a" : "target-summary-b");
  gtk_label_set_xalign (GTK_LABEL (self->target_summaries[side]), 0);
  gtk_label_set_wrap (GTK_LABEL (self->target_summaries[side]), TRUE);
  gtk_widget_set_margin_start (self->target_summaries[side], 8);
  gtk_widget_set_margin_bottom (self->target_summaries[side], 4);
  gtk_widget_set_visible (self->target_summaries[side], FALSE);
  gtk_box_append (GTK_BOX (box), self->target_summaries[side]);
  self->canvases[side] = graft_graph_canvas_new ();
  /* Named for the inspector, CSS and the tests: "canvas-a", "canvas-b". */
  gtk_widget_set_name (self->canvases[side], side == 0 ? "canvas-a" : "canvas-b");
  graft_graph_canvas_set_hidden_marks_noun (GRAFT_GRAPH_CANVAS (self->canvases[side]), "differ");
  gtk_widget_set_vexpand (self->canvases[side], TRUE);
  gtk_widget_set_hexpand (self->canvases[side], TRUE);
  gtk_box_append (GTK_BOX (box), self->canvases[side]);
  g_signal_connect (self->canvases[side], "notify::selected-node", G_CALLBACK (on_selected_node), self);
  g_signal_connect (self->canvases[side], "view-changed", G_CALLBACK (on_view_changed), self);
  g_signal_connect (self->canvases[side], "notify::busy", G_CALLBACK (on_canvas_busy), self);
  g_signal_connect (self->canvases[side], "expansion-changed", G_CALLBACK (on_expansion_changed), self);
  /* a model dropped on a side replaces it */
  GtkDropTarget *target = gtk_drop_target_new (GDK_TYPE_FILE_LIST, GDK_ACTION_COPY);
  g_object_set_data (G_OBJECT (target), "side", GUINT_TO_POINTER (side));
  g_signal_connect (target, "drop", G_CALLBACK (on_side_drop), self);
  gtk_widget_add_controller (box, GTK_EVENT_CONTROLLER (target));
  return box;
}

/* Shows the comparison alignment makes (taken): titles, summary, both
 * graphs with their marks, the differences, the run bar's defaults. */
static void
show_comparison (GraftCompareWindow *self, GraftAlignment *alignment)
{
  g_clear_pointer (&self->last_run, graft_numeric_run_free);
  g_clear_pointer (&self->diff, graft_structural_diff_free);
  g_clear_pointer (&self->target_diff, graft_target_diff_free);
  g_array_set_size (self->differences, 0);
  for (guint s = 0; s < 2; s++)
    graft_graph_canvas_set_graph (GRAFT_GRAPH_CANVAS (self->canvases[s]), NULL, NULL);
  g_clear_pointer (&self->alignment, graft_alignment_free);
  self->alignment = alignment;
  self->diff = graft_structural_diff_new (alignment);
  for (guint s = 0; s < 2; s++)
    {
      GraftModel *model = s == 0 ? alignment->a : alignment->b;
      const char *path = graft_model_get_path (model);
      g_autofree char *base = path ? g_path_get_basename (path) : g_strdup (s == 0 ? "A" : "B");
      g_autofree char *title = g_strdup_printf ("%s: %s", s == 0 ? "A" : "B", base);
      gtk_label_set_text (GTK_LABEL (self->titles[s]), title);
      gtk_widget_set_tooltip_text (self->titles[s], path);
      graft_graph_canvas_clear_marks (GRAFT_GRAPH_CANVAS (self->canvases[s]));
      graft_graph_canvas_set_graph (GRAFT_GRAPH_CANVAS (self->canvases[s]), model, graft_model_get_graph (model));
    }
  gtk_label_set_text (GTK_LABEL (self->summary), self->diff->summary);
  collect_differences (self);
  fill_list (self);
  mark_differences (self);
  g_hash_table_remove_all (self->input_files);
  fill_inputs_grid (self);
  guess_shapes (self);
  gtk_widget_set_visible (self->heat_legend, FALSE);
  gtk_label_set_text (GTK_LABEL (self->run_status), "Run both models on the same inputs to compare their values");
  gtk_widget_set_tooltip_text (self->run_status, NULL);
  update_targets (self);
}

/* The side being replaced (load_side()). */
#define SIDE_KEY "graft-compare-side"

static void
on_side_loaded (GraftCompareWindow *self, const char *path, GraftDocument *document)
{
  guint side = GPOINTER_TO_UINT (g_object_get_data (G_OBJECT (document), SIDE_KEY));
  GraftModel *model = graft_document_get_model (document);
  g_autoptr(GError) error = NULL;

  set_running (self, FALSE);
  g_autoptr(GraftAlignment) alignment = graft_alignment_new (side == 0 ? model : self->alignment->a,
                                                             side == 0 ? self->alignment->b : model, &error);
  if (alignment == NULL)
    {
      g_autofree char *text = g_strdup_printf ("Cannot compare with the file dropped: %s", error->message);
      gtk_label_set_text (GTK_LABEL (self->run_status), text);
      gtk_widget_set_tooltip_text (self->run_status, text);
      return;
    }
  show_comparison (self, g_steal_pointer (&alignment));
}

static void
on_side_load_failed (GraftCompareWindow *self, const char *path, const GError *error, GraftDocument *document)
{
  g_autofree char *text = g_strdup_printf ("Cannot compare with the file dropped: %s", error->message);

  set_running (self, FALSE);
  gtk_label_set_text (GTK_LABEL (self->run_status), text);
  gtk_widget_set_tooltip_text (self->run_status, text);
}

/* Loads file in a worker and compares it in place of side; Run Both waits
 * (a run reads both models). The window's side document loads it, as the
 * main window's document loads its model; closing the window drops it. */
static void
load_side (GraftCompareWindow *self, guint side, GFile *file)
{
  g_autofree char *path = g_file_get_path (file);
  if (!gtk_widget_get_sensitive (self->run_button) || path == NULL)
    {
      gtk_label_set_text (GTK_LABEL (self->run_status), path ? "Wait for Run Both to finish before replacing a model"
                                                             : "Only local files can be compared");
      return;
    }
  if (self->side_document == NULL)
    {
      self->side_document = graft_document_new ();
      g_signal_connect_swapped (self->side_document, "loaded", G_CALLBACK (on_side_loaded), self);
      g_signal_connect_swapped (self->side_document, "load-failed", G_CALLBACK (on_side_load_failed), self);
    }
  g_object_set_data (G_OBJECT (self->side_document), SIDE_KEY, GUINT_TO_POINTER (side));
  set_running (self, TRUE);
  g_autofree char *base = g_path_get_basename (path);
  g_autofree char *text = g_strdup_printf ("Loading %s as %s…", base, side == 0 ? "A" : "B");
  gtk_label_set_text (GTK_LABEL (self->run_status), text);
  /* A folder or a pipe fails at once, through "load-failed" too. */
  graft_document_load (self->side_document, path);
}

/* compare.replace-side((0, "/path/model.onnx")): what dropping a file on a
 * side does. */
static void
replace_side_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  guint side;
  const char *path;
  g_variant_get (parameter, "(u&s)", &side, &path);
  g_autoptr(GFile) file = g_file_new_for_path (path);
  load_side (GRAFT_COMPARE_WINDOW (widget), MIN (side, 1), file);
}

static void
build (GraftCompareWindow *self)
{
  GtkWidget *header = gtk_header_bar_new ();
  GtkWidget *link = gtk_toggle_button_new ();
  GtkWidget *content = adw_button_content_new ();
  adw_button_content_set_icon_name (ADW_BUTTON_CONTENT (content), "insert-link-symbolic");
  adw_button_content_set_label (ADW_BUTTON_CONTENT (content), "Link Views");
  gtk_button_set_child (GTK_BUTTON (link), content);
  gtk_widget_set_name (link, "link-views");
  gtk_actionable_set_action_name (GTK_ACTIONABLE (link), "compare.link-views");
  gtk_widget_set_tooltip_text (link, "Link the views: panning or zooming one side moves the other, matched nodes "
                                     "side by side");
  gtk_header_bar_pack_start (GTK_HEADER_BAR (header), link);
  gtk_window_set_titlebar (GTK_WINDOW (self), header);
  gtk_window_set_title (GTK_WINDOW (self), "Compare Models");
  gtk_window_set_default_size (GTK_WINDOW (self), 1400, 900);

  GtkWidget *outer = gtk_paned_new (GTK_ORIENTATION_VERTICAL);
  GtkWidget *top = gtk_box_new (GTK_ORIENTATION_VERTICAL, 0);
  self->summary = gtk_label_new (NULL);
  gtk_widget_set_name (self->summary, "summary");
  gtk_label_set_wrap (GTK_LABEL (self->summary), TRUE);
  gtk_label_set_xalign (GTK_LABEL (self->summary), 0);
  gtk_widget_set_margin_start (self->summary, 12);
  gtk_widget_set_margin_end (self->summary, 12);
  gtk_widget_set_margin_top (self->summary, 6);
  gtk_box_append (GTK_BOX (top), self->summary);

  GtkWidget *legend = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 18);
  gtk_widget_set_margin_start (legend, 12);
  gtk_widget_set_margin_end (legend, 12);
  gtk_widget_set_margin_top (legend, 4);
  gtk_widget_set_margin_bottom (legend, 4);
  gtk_box_append (GTK_BOX (legend), gtk_label_new ("Legend:"));
  gtk_box_append (GTK_BOX (legend), legend_item ("error", "■ only on this side / values differ"));
  gtk_box_append (GTK_BOX (legend), legend_item ("warning", "■ matched, changed"));
  gtk_box_append (GTK_BOX (legend), legend_item ("accent", "■ explained (flattened, baked, folded)"));
  self->heat_legend = heat_legend ();
  gtk_box_append (GTK_BOX (legend), self->heat_legend);
  gtk_box_append (GTK_BOX (top), legend);
  gtk_box_append (GTK_BOX (top), run_bar (self));
  /* the verdict names values and files: a line of its own, wrapped */
  self->run_status = gtk_label_new (NULL);
  gtk_widget_set_name (self->run_status, "run-status");
  gtk_label_set_xalign (GTK_LABEL (self->run_status), 0);
  gtk_label_set_wrap (GTK_LABEL (self->run_status), TRUE);
  gtk_label_set_wrap_mode (GTK_LABEL (self->run_status), PANGO_WRAP_WORD_CHAR);
  gtk_widget_set_margin_start (self->run_status, 12);
  gtk_widget_set_margin_end (self->run_status, 12);
  gtk_widget_set_margin_top (self->run_status, 4);
  gtk_box_append (GTK_BOX (top), self->run_status);

  GtkWidget *sides = gtk_paned_new (GTK_ORIENTATION_HORIZONTAL);
  gtk_paned_set_start_child (GTK_PANED (sides), side_pane (self, 0));
  gtk_paned_set_end_child (GTK_PANED (sides), side_pane (self, 1));
  gtk_paned_set_position (GTK_PANED (sides), 700);
  gtk_widget_set_vexpand (sides, TRUE);
  gtk_box_append (GTK_BOX (top), sides);
  gtk_paned_set_start_child (GTK_PANED (outer), top);

  GtkWidget *panel = gtk_box_new (GTK_ORIENTATION_VERTICAL, 4);
  GtkWidget *bar = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 8);
  gtk_widget_set_margin_start (bar, 12);
  gtk_widget_set_margin_top (bar, 4);
  GtkWidget *title = gtk_label_new ("Differences");
  gtk_widget_add_css_class (title, "heading");
  gtk_box_append (GTK_BOX (bar), title);
  const char *filters[] = { "All", "Only in A", "Only in B", "Changed", "Explained", "Values Differ", "Targets Differ", NULL };
  self->filter = gtk_drop_down_new_from_strings (filters);
  gtk_widget_set_name (self->filter, "differences-filter");
  g_signal_connect (self->filter, "notify::selected", G_CALLBACK (on_filter_changed), self);
  gtk_box_append (GTK_BOX (bar), self->filter);
  gtk_box_append (GTK_BOX (panel), bar);
  self->list = gtk_list_box_new ();
  g_signal_connect (self->list, "row-activated", G_CALLBACK (on_row_activated), self);
  GtkWidget *scrolled = gtk_scrolled_window_new ();
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (scrolled), self->list);
  gtk_widget_set_vexpand (scrolled, TRUE);
  gtk_box_append (GTK_BOX (panel), scrolled);
  gtk_paned_set_end_child (GTK_PANED (outer), panel);
  gtk_paned_set_position (GTK_PANED (outer), 640);
  gtk_window_set_child (GTK_WINDOW (self), outer);
}

GraftCompareWindow *
graft_compare_window_new (GtkApplication *app, GraftModel *a, GraftModel *b, GError **error)
{
  g_autoptr(GraftAlignment) alignment = graft_alignment_new (a, b, error);
  if (alignment == NULL)
    return NULL;
  GraftCompareWindow *self = g_object_new (GRAFT_TYPE_COMPARE_WINDOW, "application", app, NULL);
  build (self);
  show_comparison (self, g_steal_pointer (&alignment));
  return self;
}

typedef struct {
  GtkApplication *app;
  GtkWindow *parent;
  char *paths[2];
  GraftModel *models[2];
  GraftDocument *document;   /* loading the next side, as the main window's document loads */
  char *failure;             /* why a load failed */
} OpenData;

static void
open_data_free (OpenData *data)
{
  g_application_release (G_APPLICATION (data->app));
  g_object_unref (data->app);
  g_clear_object (&data->parent);
  for (guint s = 0; s < 2; s++)
    {
      g_free (data->paths[s]);
      g_clear_object (&data->models[s]);
    }
  g_free (data->failure);
  g_free (data);
}

static void
show_error (GtkWindow *parent, const char *message)
{
  AdwMessageDialog *dialog = ADW_MESSAGE_DIALOG (adw_message_dialog_new (parent, "Cannot Compare the Models", message));
  adw_message_dialog_add_response (dialog, "close", "_Close");
  gtk_window_present (GTK_WINDOW (dialog));
}

static void open_step (gpointer user_data);

/* The document says so from inside its load: the next step comes after. */
static void
on_document_loaded (GraftDocument *document, const char *path, OpenData *data)
{
  guint side = data->models[0] == NULL ? 0 : 1;

  data->models[side] = g_object_ref (graft_document_get_model (document));
  g_idle_add_once (open_step, data);
}

static void
on_document_load_failed (GraftDocument *document, const char *path, const GError *error, OpenData *data)
{
  data->failure = g_strdup (error->message);
  g_idle_add_once (open_step, data);
}

/* A, then B: one at a time, so each keeps its side; then the window. */
static void
open_step (gpointer user_data)
{
  OpenData *data = user_data;
  g_autoptr(GError) error = NULL;

  if (data->document != NULL)
    g_signal_handlers_disconnect_by_data (data->document, data);
  g_clear_object (&data->document);
  if (data->failure != NULL)
    {
      show_error (data->parent, data->failure);
      open_data_free (data);
      return;
    }
  if (data->models[0] == NULL || data->models[1] == NULL)
    {
      data->document = graft_document_new ();
      g_signal_connect (data->document, "loaded", G_CALLBACK (on_document_loaded), data);
      g_signal_connect (data->document, "load-failed", G_CALLBACK (on_document_load_failed), data);
      /* A folder or a pipe fails at once, through "load-failed" too. */
      graft_document_load (data->document, data->paths[data->models[0] == NULL ? 0 : 1]);
      return;
    }
  GraftCompareWindow *window = graft_compare_window_new (data->app, data->models[0], data->models[1], &error);
  if (window)
    gtk_window_present (GTK_WINDOW (window));
  else
    show_error (data->parent, error->message);
  open_data_free (data);
}

static OpenData *
open_data_new (GtkApplication *app, GtkWindow *parent)
{
  OpenData *data = g_new0 (OpenData, 1);
  data->app = g_object_ref (app);
  data->parent = parent ? g_object_ref (parent) : NULL;
  /* no window may be open while the models load (graft --compare A B) */
  g_application_hold (G_APPLICATION (app));
  return data;
}

void
graft_compare_window_open_paths (GtkApplication *app, GtkWindow *parent, const char *path_a, const char *path_b)
{
  OpenData *data = open_data_new (app, parent);
  data->paths[0] = g_strdup (path_a);
  data->paths[1] = g_strdup (path_b);
  open_step (data);
}

void
graft_compare_window_open_with (GtkApplication *app, GtkWindow *parent, GraftModel *model, guint model_side,
                                const char *path)
{
  OpenData *data = open_data_new (app, parent);
  /* a copy: the window may go on editing its model */
  data->models[model_side] = graft_model_copy (model);
  data->paths[1 - model_side] = g_strdup (path);
  open_step (data);
}

static void
graft_compare_window_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  GraftCompareWindow *self = GRAFT_COMPARE_WINDOW (object);
  switch (prop_id)
    {
    case PROP_LINK_VIEWS:
      g_value_set_boolean (value, self->link_views);
      break;
    case PROP_RUNNING:
      g_value_set_boolean (value, !gtk_widget_get_sensitive (self->run_button));
      break;
    case PROP_N_DIFFERENCES:
      g_value_set_uint (value, self->n_shown);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
graft_compare_window_set_property (GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec)
{
  GraftCompareWindow *self = GRAFT_COMPARE_WINDOW (object);
  switch (prop_id)
    {
    case PROP_LINK_VIEWS:
      set_link_views (self, g_value_get_boolean (value));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
graft_compare_window_dispose (GObject *object)
{
  GraftCompareWindow *self = GRAFT_COMPARE_WINDOW (object);
  g_clear_handle_id (&self->realign_id, g_source_remove);
  /* A side still loading reports nothing once dropped. */
  if (self->side_document != NULL)
    {
      g_signal_handlers_disconnect_by_data (self->side_document, self);
      graft_document_cancel_load (self->side_document);
    }
  g_clear_object (&self->side_document);
  g_cancellable_cancel (self->run_cancellable);
  g_clear_object (&self->run_cancellable);
  g_clear_pointer (&self->last_run, graft_numeric_run_free);
  g_clear_pointer (&self->diff, graft_structural_diff_free);
  G_OBJECT_CLASS (graft_compare_window_parent_class)->dispose (object);
}

static void
graft_compare_window_finalize (GObject *object)
{
  GraftCompareWindow *self = GRAFT_COMPARE_WINDOW (object);
  g_clear_pointer (&self->differences, g_array_unref);
  g_clear_pointer (&self->input_files, g_hash_table_unref);
  g_clear_pointer (&self->target_diff, graft_target_diff_free);   /* reads the alignment's models */
  g_clear_pointer (&self->alignment, graft_alignment_free);
  G_OBJECT_CLASS (graft_compare_window_parent_class)->finalize (object);
}

static void
graft_compare_window_class_init (GraftCompareWindowClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);
  object_class->get_property = graft_compare_window_get_property;
  object_class->set_property = graft_compare_window_set_property;
  object_class->dispose = graft_compare_window_dispose;
  object_class->finalize = graft_compare_window_finalize;
  /* Panning or zooming one side moves the other (on by default). */
  properties[PROP_LINK_VIEWS] = g_param_spec_boolean ("link-views", NULL, NULL, TRUE,
                                                      G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY
                                                      | G_PARAM_STATIC_STRINGS);
  /* TRUE while Run Both runs, or a side is being replaced (Run Both waits). */
  properties[PROP_RUNNING] = g_param_spec_boolean ("running", NULL, NULL, FALSE,
                                                   G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  /* The differences listed under the current filter. */
  properties[PROP_N_DIFFERENCES] = g_param_spec_uint ("n-differences", NULL, NULL, 0, G_MAXUINT, 0,
                                                      G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY
                                                      | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);
  gtk_widget_class_install_property_action (widget_class, "compare.link-views", "link-views");
  gtk_widget_class_install_action (widget_class, "compare.run-both", "s", run_both_action);
  gtk_widget_class_install_action (widget_class, "compare.set-input-file", "(ss)", set_input_file_action);
  gtk_widget_class_install_action (widget_class, "compare.replace-side", "(us)", replace_side_action);
  gtk_widget_class_install_action (widget_class, "compare.set-targets", "(ss)", set_targets_action);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_l, GDK_CONTROL_MASK, "compare.link-views", NULL);
}

static void
graft_compare_window_init (GraftCompareWindow *self)
{
  self->run_cancellable = g_cancellable_new ();
  self->link_views = TRUE;
  self->differences = g_array_new (FALSE, TRUE, sizeof (Difference));
  g_array_set_clear_func (self->differences, (GDestroyNotify) difference_clear);
  self->input_files = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
}
