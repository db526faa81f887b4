#include "compare-window.h"

#include <adwaita.h>

#include "compare/input-settings.h"
#include "compare/numeric-diff.h"
#include "compare/structural-diff.h"
#include "widgets/graph-canvas.h"
#include "model-open.h"
#include "edit/graph-copy.h"

/* Canvas mark levels: their colours are the legend's. */
enum { MARK_EXPLAINED = 1, MARK_CHANGED = 2, MARK_ONLY_HERE = 3 };

typedef enum {
  FILTER_ALL = 0,
  FILTER_ONLY_A,
  FILTER_ONLY_B,
  FILTER_CHANGED,
  FILTER_EXPLAINED,
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
  GraftAlignment *alignment;
  GraftStructuralDiff *diff;
  GArray *differences;       /* Difference */

  /* Borrowed references (children) */
  GtkWidget *canvases[2];
  GtkWidget *list;
  GtkWidget *filter;
  GtkWidget *summary;
  GtkWidget *shapes_entry;
  GtkWidget *run_button;
  GtkWidget *run_status;

  GCancellable *run_cancellable;
  GraftNumericRun *last_run;

  gboolean syncing;          /* a selection made to follow the other side */
  guint n_shown;
};

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
                      g_strdup_printf ("changed %s: %s %s: %s → %s", graft_change_kind_to_string (c->kind),
                                       c->b ? node_label (c->b) : "input", c->what, c->before, c->after));
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
}

/* Selecting a node on one side selects (and centres) its match on the other. */
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
  graft_graph_canvas_select_node (other, match);
  self->syncing = FALSE;
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
} RunTask;

static void
run_task_free (RunTask *task)
{
  g_free (task->spec);
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

static void
run_thread (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
  RunTask *rt = task_data;
  GError *error = NULL;
  g_autoptr(GraftNumericDiff) nd = graft_numeric_diff_new (rt->alignment, 1e-5, 1e-5, &error);
  g_autoptr(GraftInputSettings) settings = nd ? parse_run_spec (nd, rt->spec, &error) : NULL;
  g_autofree char *label = NULL;
  g_autoptr(GHashTable) inputs = settings ? graft_input_settings_make_inputs (settings, nd, 0, NULL, TRUE, 0, &label,
                                                                               &error) : NULL;
  GraftNumericRun *run = inputs ? graft_numeric_diff_run (nd, inputs, label, &error) : NULL;
  if (run == NULL)
    g_task_return_error (task, error);
  else
    g_task_return_pointer (task, run, (GDestroyNotify) graft_numeric_run_free);
}

static void
mark_numeric (GraftCompareWindow *self, GraftNumericRun *run)
{
  GraftGraphCanvas *ca = GRAFT_GRAPH_CANVAS (self->canvases[0]), *cb = GRAFT_GRAPH_CANVAS (self->canvases[1]);
  const GraftValueError *first = graft_numeric_run_get_first_divergent (run);
  for (guint i = 0; i < run->values->len; i++)
    {
      GraftValueError *e = &g_array_index (run->values, GraftValueError, i);
      if (e->close)
        continue;
      g_autofree char *badge = e->shape_differs ? g_strdup_printf ("%s%s ≠ %s", e == first ? "first: " : "",
                                                                   e->shape_a, e->shape_b)
                                                : g_strdup_printf ("%serror %.2g", e == first ? "first: " : "",
                                                                   e->max_rel);
      if (e->a->producer)
        graft_graph_canvas_mark_node (ca, e->a->producer, MARK_ONLY_HERE, badge);
      if (e->b->producer)
        graft_graph_canvas_mark_node (cb, e->b->producer, MARK_ONLY_HERE, badge);
    }
}

static void
on_run_done (GObject *source, GAsyncResult *result, gpointer user_data)
{
  GraftCompareWindow *self = GRAFT_COMPARE_WINDOW (source);
  g_autoptr(GError) error = NULL;
  GraftNumericRun *run = g_task_propagate_pointer (G_TASK (result), &error);
  if (self->run_cancellable == NULL)
    {
      /* the window was closed while both ran */
      g_clear_pointer (&run, graft_numeric_run_free);
      return;
    }
  gtk_widget_set_sensitive (self->run_button, TRUE);
  if (run == NULL)
    {
      g_autofree char *text = g_strdup_printf ("Run Both failed: %s", error->message);
      gtk_label_set_text (GTK_LABEL (self->run_status), text);
      return;
    }
  g_clear_pointer (&self->last_run, graft_numeric_run_free);
  self->last_run = run;
  g_autofree char *verdict = graft_numeric_run_describe (run, self->alignment);
  g_autofree char *text = g_strdup_printf ("%c%s — %u values compared, %u divergent", g_ascii_toupper (verdict[0]),
                                           verdict + 1, run->n_compared, run->n_divergent);
  gtk_label_set_text (GTK_LABEL (self->run_status), text);
  graft_graph_canvas_clear_marks (GRAFT_GRAPH_CANVAS (self->canvases[0]));
  graft_graph_canvas_clear_marks (GRAFT_GRAPH_CANVAS (self->canvases[1]));
  mark_differences (self);
  mark_numeric (self, run);
}

/* compare.run-both("x=1x3x224x224"): both models on the same random
 * inputs (seed 0) of those shapes (an empty string: the declared ones). */
static void
run_both_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftCompareWindow *self = GRAFT_COMPARE_WINDOW (widget);
  RunTask *rt = g_new0 (RunTask, 1);
  rt->alignment = self->alignment;
  rt->spec = g_strdup (parameter ? g_variant_get_string (parameter, NULL) : "");
  g_autoptr(GTask) task = g_task_new (self, self->run_cancellable, on_run_done, NULL);
  g_task_set_task_data (task, rt, (GDestroyNotify) run_task_free);
  gtk_widget_set_sensitive (self->run_button, FALSE);
  gtk_label_set_text (GTK_LABEL (self->run_status), "Running both models…");
  g_task_run_in_thread (task, run_thread);
}

static void
on_run_clicked (GtkButton *button, GraftCompareWindow *self)
{
  gtk_widget_activate_action (GTK_WIDGET (self), "compare.run-both", "s",
                              gtk_editable_get_text (GTK_EDITABLE (self->shapes_entry)));
}

static GtkWidget *
run_bar (GraftCompareWindow *self)
{
  GtkWidget *bar = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 8);
  gtk_widget_set_margin_start (bar, 12);
  gtk_widget_set_margin_end (bar, 12);
  self->shapes_entry = gtk_entry_new ();
  gtk_entry_set_placeholder_text (GTK_ENTRY (self->shapes_entry), "input shapes: x=1x3x224x224 (or dims: batch=2)");
  gtk_editable_set_width_chars (GTK_EDITABLE (self->shapes_entry), 36);
  /* a TorchScript input declares no shape: start from the other side's */
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
  g_signal_connect_swapped (self->shapes_entry, "activate", G_CALLBACK (on_run_clicked), self);
  gtk_box_append (GTK_BOX (bar), self->shapes_entry);
  self->run_button = gtk_button_new_with_mnemonic ("_Run Both");
  g_signal_connect (self->run_button, "clicked", G_CALLBACK (on_run_clicked), self);
  gtk_box_append (GTK_BOX (bar), self->run_button);
  self->run_status = gtk_label_new ("Run both models on the same random inputs to compare their values");
  gtk_label_set_xalign (GTK_LABEL (self->run_status), 0);
  gtk_label_set_ellipsize (GTK_LABEL (self->run_status), PANGO_ELLIPSIZE_END);
  gtk_widget_set_hexpand (self->run_status, TRUE);
  gtk_box_append (GTK_BOX (bar), self->run_status);
  return bar;
}

static GtkWidget *
legend_item (const char *css_class, const char *text)
{
  GtkWidget *label = gtk_label_new (text);
  gtk_widget_add_css_class (label, css_class);
  return label;
}

static GtkWidget *
side_pane (GraftCompareWindow *self, guint side, GraftModel *model)
{
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 0);
  const char *path = graft_model_get_path (model);
  g_autofree char *base = path ? g_path_get_basename (path) : g_strdup (side == 0 ? "A" : "B");
  g_autofree char *title = g_strdup_printf ("%s: %s", side == 0 ? "A" : "B", base);
  GtkWidget *label = gtk_label_new (title);
  gtk_widget_add_css_class (label, "heading");
  gtk_widget_set_margin_top (label, 4);
  gtk_widget_set_margin_bottom (label, 4);
  gtk_label_set_ellipsize (GTK_LABEL (label), PANGO_ELLIPSIZE_MIDDLE);
  gtk_box_append (GTK_BOX (box), label);
  self->canvases[side] = graft_graph_canvas_new ();
  gtk_widget_set_vexpand (self->canvases[side], TRUE);
  gtk_widget_set_hexpand (self->canvases[side], TRUE);
  gtk_box_append (GTK_BOX (box), self->canvases[side]);
  g_signal_connect (self->canvases[side], "notify::selected-node", G_CALLBACK (on_selected_node), self);
  graft_graph_canvas_set_graph (GRAFT_GRAPH_CANVAS (self->canvases[side]), model, graft_model_get_graph (model));
  return box;
}

static void
build (GraftCompareWindow *self)
{
  GtkWidget *header = gtk_header_bar_new ();
  gtk_window_set_titlebar (GTK_WINDOW (self), header);
  gtk_window_set_title (GTK_WINDOW (self), "Compare Models");
  gtk_window_set_default_size (GTK_WINDOW (self), 1400, 900);

  GtkWidget *outer = gtk_paned_new (GTK_ORIENTATION_VERTICAL);
  GtkWidget *top = gtk_box_new (GTK_ORIENTATION_VERTICAL, 0);
  self->summary = gtk_label_new (self->diff->summary);
  gtk_label_set_wrap (GTK_LABEL (self->summary), TRUE);
  gtk_label_set_xalign (GTK_LABEL (self->summary), 0);
  gtk_widget_set_margin_start (self->summary, 12);
  gtk_widget_set_margin_end (self->summary, 12);
  gtk_widget_set_margin_top (self->summary, 6);
  gtk_box_append (GTK_BOX (top), self->summary);

  GtkWidget *legend = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 18);
  gtk_widget_set_margin_start (legend, 12);
  gtk_widget_set_margin_top (legend, 4);
  gtk_widget_set_margin_bottom (legend, 4);
  gtk_box_append (GTK_BOX (legend), gtk_label_new ("Legend:"));
  gtk_box_append (GTK_BOX (legend), legend_item ("error", "■ only on this side"));
  gtk_box_append (GTK_BOX (legend), legend_item ("warning", "■ matched, changed"));
  gtk_box_append (GTK_BOX (legend), legend_item ("accent", "■ explained difference (flattened, baked, folded)"));
  gtk_box_append (GTK_BOX (legend), legend_item ("error", "(after Run Both: ■ values that differ)"));
  gtk_box_append (GTK_BOX (top), legend);
  gtk_box_append (GTK_BOX (top), run_bar (self));

  GtkWidget *sides = gtk_paned_new (GTK_ORIENTATION_HORIZONTAL);
  gtk_paned_set_start_child (GTK_PANED (sides), side_pane (self, 0, self->alignment->a));
  gtk_paned_set_end_child (GTK_PANED (sides), side_pane (self, 1, self->alignment->b));
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
  const char *filters[] = { "All", "Only in A", "Only in B", "Changed", "Explained", NULL };
  self->filter = gtk_drop_down_new_from_strings (filters);
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
  fill_list (self);
}

GraftCompareWindow *
graft_compare_window_new (GtkApplication *app, GraftModel *a, GraftModel *b, GError **error)
{
  g_autoptr(GraftAlignment) alignment = graft_alignment_new (a, b, error);
  if (alignment == NULL)
    return NULL;
  GraftCompareWindow *self = g_object_new (GRAFT_TYPE_COMPARE_WINDOW, "application", app, NULL);
  self->alignment = g_steal_pointer (&alignment);
  self->diff = graft_structural_diff_new (self->alignment);
  collect_differences (self);
  build (self);
  mark_differences (self);
  return self;
}

typedef struct {
  GtkApplication *app;
  GtkWindow *parent;
  char *paths[2];
  GraftModel *models[2];
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
  g_free (data);
}

static void
show_error (GtkWindow *parent, const char *message)
{
  AdwMessageDialog *dialog = ADW_MESSAGE_DIALOG (adw_message_dialog_new (parent, "Cannot Compare the Models", message));
  adw_message_dialog_add_response (dialog, "close", "_Close");
  gtk_window_present (GTK_WINDOW (dialog));
}

static void load_next (OpenData *data);

/* A, then B: one at a time, so each keeps its side. */
static void
on_loaded (GObject *source, GAsyncResult *result, gpointer user_data)
{
  OpenData *data = user_data;
  g_autoptr(GError) error = NULL;
  guint side = data->models[0] == NULL ? 0 : 1;
  data->models[side] = graft_model_load_finish (result, &error);
  if (data->models[side] == NULL)
    {
      show_error (data->parent, error->message);
      open_data_free (data);
      return;
    }
  if (data->models[1] == NULL)
    {
      load_next (data);
      return;
    }
  GraftCompareWindow *window = graft_compare_window_new (data->app, data->models[0], data->models[1], &error);
  if (window)
    gtk_window_present (GTK_WINDOW (window));
  else
    show_error (data->parent, error->message);
  open_data_free (data);
}

static void
load_next (OpenData *data)
{
  guint side = data->models[0] == NULL ? 0 : 1;
  graft_model_load_async (data->paths[side], NULL, NULL, NULL, on_loaded, data);
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
  load_next (data);
}

void
graft_compare_window_open_with (GtkApplication *app, GtkWindow *parent, GraftModel *model, guint model_side,
                                const char *path)
{
  OpenData *data = open_data_new (app, parent);
  /* a copy: the window may go on editing its model */
  data->models[model_side] = graft_model_copy (model);
  data->paths[1 - model_side] = g_strdup (path);
  load_next (data);
}

GraftAlignment *
graft_compare_window_get_alignment (GraftCompareWindow *self)
{
  return self->alignment;
}

GtkWidget *
graft_compare_window_get_canvas (GraftCompareWindow *self, guint side)
{
  g_return_val_if_fail (side < 2, NULL);
  return self->canvases[side];
}

guint
graft_compare_window_get_n_differences (GraftCompareWindow *self)
{
  return self->n_shown;
}

static void
graft_compare_window_dispose (GObject *object)
{
  GraftCompareWindow *self = GRAFT_COMPARE_WINDOW (object);
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
  g_clear_pointer (&self->alignment, graft_alignment_free);
  G_OBJECT_CLASS (graft_compare_window_parent_class)->finalize (object);
}

static void
graft_compare_window_class_init (GraftCompareWindowClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  object_class->dispose = graft_compare_window_dispose;
  object_class->finalize = graft_compare_window_finalize;
  gtk_widget_class_install_action (GTK_WIDGET_CLASS (klass), "compare.run-both", "s", run_both_action);
}

static void
graft_compare_window_init (GraftCompareWindow *self)
{
  self->run_cancellable = g_cancellable_new ();
  self->differences = g_array_new (FALSE, TRUE, sizeof (Difference));
  g_array_set_clear_func (self->differences, (GDestroyNotify) difference_clear);
}

/* The last Run Both, or NULL. */
GraftNumericRun *
graft_compare_window_get_last_run (GraftCompareWindow *self)
{
  return self->last_run;
}

gboolean
graft_compare_window_is_running (GraftCompareWindow *self)
{
  return !gtk_widget_get_sensitive (self->run_button);
}
