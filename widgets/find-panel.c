#include "find-panel.h"

#include "graph-search.h"

/* Listing more rows than this only slows typing down; the count says how
 * many there are in all. */
#define MAX_LISTED_HITS 300

struct _GraftFindPanel
{
  GtkWidget parent_instance;

  GtkSearchEntry *search_entry;
  GtkLabel *status_label;
  GtkListBox *results;

  GraftGraph *graph;
  GraftInference *inference;   /* owned, may be NULL */
  GPtrArray *hits;
  guint n_matches;
  char *searched;   /* the text hits are for */
};

G_DEFINE_FINAL_TYPE (GraftFindPanel, graft_find_panel, GTK_TYPE_WIDGET)

enum {
  SIGNAL_ITEM_ACTIVATED,
  SIGNAL_STOP_SEARCH,
  SIGNAL_MATCHES_CHANGED,
  N_SIGNALS
};

static guint signals[N_SIGNALS];

enum {
  PROP_0,
  PROP_N_MATCHES,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

static GtkWidget *
make_hit_row (const GraftSearchHit *hit)
{
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 2);
  GtkWidget *title = gtk_label_new (hit->title);
  GtkWidget *detail = gtk_label_new (hit->detail);

  gtk_widget_add_css_class (box, "find-hit");
  gtk_label_set_xalign (GTK_LABEL (title), 0);
  gtk_label_set_xalign (GTK_LABEL (detail), 0);
  /* Names in exported models can be very long paths: end-ellipsize them
   * and keep the whole text in the tooltip. */
  gtk_label_set_ellipsize (GTK_LABEL (title), PANGO_ELLIPSIZE_MIDDLE);
  gtk_label_set_ellipsize (GTK_LABEL (detail), PANGO_ELLIPSIZE_END);
  gtk_widget_set_tooltip_text (box, hit->title);
  gtk_widget_add_css_class (detail, "dim-label");
  gtk_widget_add_css_class (detail, "caption");
  gtk_box_append (GTK_BOX (box), title);
  gtk_box_append (GTK_BOX (box), detail);
  return box;
}

/* gtk_list_box_remove_all() is GTK 4.12; Graft targets 4.8. */
static void
remove_all_rows (GtkListBox *list)
{
  GtkWidget *child;

  while ((child = gtk_widget_get_first_child (GTK_WIDGET (list))) != NULL)
    gtk_list_box_remove (list, child);
}

static void
set_status (GraftFindPanel *self, const char *text)
{
  gtk_label_set_text (self->status_label, text);
  gtk_widget_set_visible (GTK_WIDGET (self->status_label), text != NULL && text[0] != '\0');
}

static void
refresh_results (GraftFindPanel *self)
{
  const char *text = gtk_editable_get_text (GTK_EDITABLE (self->search_entry));
  g_autofree char *status = NULL;

  remove_all_rows (self->results);
  g_clear_pointer (&self->hits, g_ptr_array_unref);
  self->n_matches = 0;
  g_free (self->searched);
  self->searched = g_strdup (text);

  if (self->graph == NULL || text[0] == '\0')
    {
      set_status (self, "Search by node name, operator, value name or shape (e.g. 1x64x56x56).");
      g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_N_MATCHES]);
      g_signal_emit (self, signals[SIGNAL_MATCHES_CHANGED], 0);
      return;
    }

  self->hits = graft_graph_search (self->graph, self->inference, text, MAX_LISTED_HITS, &self->n_matches);
  for (guint i = 0; i < self->hits->len; i++)
    gtk_list_box_append (self->results, make_hit_row (g_ptr_array_index (self->hits, i)));

  if (self->n_matches == 0)
    status = g_strdup ("No matches");
  else if (self->n_matches > self->hits->len)
    status = g_strdup_printf ("%u matches, first %u listed", self->n_matches, self->hits->len);
  else
    status = g_strdup_printf (g_dngettext (NULL, "%u match", "%u matches", self->n_matches), self->n_matches);
  set_status (self, status);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_N_MATCHES]);
  g_signal_emit (self, signals[SIGNAL_MATCHES_CHANGED], 0);
}

static void
activate_hit (GraftFindPanel *self, int index)
{
  GraftSearchHit *hit;

  if (self->hits == NULL || index < 0 || (guint) index >= self->hits->len)
    return;
  hit = g_ptr_array_index (self->hits, index);
  g_signal_emit (self, signals[SIGNAL_ITEM_ACTIVATED], 0, hit->node, hit->value);
}

static void
on_row_activated (GtkListBox *list, GtkListBoxRow *row, GraftFindPanel *self)
{
  activate_hit (self, gtk_list_box_row_get_index (row));
}

static void
on_search_changed (GtkSearchEntry *entry, GraftFindPanel *self)
{
  /* graft_find_panel_set_text() searched at once; the delayed signal
   * that follows must not search a big graph again. */
  if (g_strcmp0 (self->searched, gtk_editable_get_text (GTK_EDITABLE (self->search_entry))) == 0)
    return;
  refresh_results (self);
}

static void
on_entry_activate (GtkSearchEntry *entry, GraftFindPanel *self)
{
  GtkListBoxRow *row;

  /* search-changed waits for typing to pause: Enter typed right after the
   * text must not act on the hits of the text before. */
  if (g_strcmp0 (self->searched, gtk_editable_get_text (GTK_EDITABLE (self->search_entry))) != 0)
    refresh_results (self);
  row = gtk_list_box_get_selected_row (self->results);
  /* The match shown is the selected row: Ctrl+G goes on from it. */
  if (row == NULL && (row = gtk_list_box_get_row_at_index (self->results, 0)) != NULL)
    gtk_list_box_select_row (self->results, row);
  activate_hit (self, row != NULL ? gtk_list_box_row_get_index (row) : 0);
}

static void
move_selection (GraftFindPanel *self, int delta)
{
  GtkListBoxRow *row = gtk_list_box_get_selected_row (self->results);
  int n = self->hits != NULL ? (int) self->hits->len : 0;
  int index;

  if (n == 0)
    return;
  index = row != NULL ? gtk_list_box_row_get_index (row) + delta : 0;
  index = (index % n + n) % n;
  row = gtk_list_box_get_row_at_index (self->results, index);
  gtk_list_box_select_row (self->results, row);
  activate_hit (self, index);
}

static void
on_next_match (GtkSearchEntry *entry, GraftFindPanel *self)
{
  move_selection (self, 1);
}

static void
on_previous_match (GtkSearchEntry *entry, GraftFindPanel *self)
{
  move_selection (self, -1);
}

static void
on_stop_search (GtkSearchEntry *entry, GraftFindPanel *self)
{
  g_signal_emit (self, signals[SIGNAL_STOP_SEARCH], 0);
}

void
graft_find_panel_set_graph (GraftFindPanel *self, GraftGraph *graph)
{
  g_return_if_fail (GRAFT_IS_FIND_PANEL (self));

  self->graph = graph;
  refresh_results (self);
}

void
graft_find_panel_set_inference (GraftFindPanel *self, GraftInference *inference)
{
  g_return_if_fail (GRAFT_IS_FIND_PANEL (self));

  if (inference != NULL)
    graft_inference_ref (inference);
  g_clear_pointer (&self->inference, graft_inference_unref);
  self->inference = inference;
  refresh_results (self);
}

void
graft_find_panel_set_text (GraftFindPanel *self, const char *text)
{
  g_return_if_fail (GRAFT_IS_FIND_PANEL (self));

  gtk_editable_set_text (GTK_EDITABLE (self->search_entry), text != NULL ? text : "");
  /* search-changed is delayed; callers (tests, actions) want the list now. */
  refresh_results (self);
}

void
graft_find_panel_focus_entry (GraftFindPanel *self)
{
  g_return_if_fail (GRAFT_IS_FIND_PANEL (self));

  gtk_widget_grab_focus (GTK_WIDGET (self->search_entry));
  gtk_editable_select_region (GTK_EDITABLE (self->search_entry), 0, -1);
}

GPtrArray *
graft_find_panel_dup_matched_items (GraftFindPanel *self)
{
  GPtrArray *items = g_ptr_array_new ();

  g_return_val_if_fail (GRAFT_IS_FIND_PANEL (self), items);
  for (guint i = 0; self->hits != NULL && i < self->hits->len; i++)
    {
      GraftSearchHit *hit = g_ptr_array_index (self->hits, i);

      g_ptr_array_add (items, hit->node != NULL ? (gpointer) hit->node : (gpointer) hit->value);
    }
  return items;
}

static void
graft_find_panel_dispose (GObject *object)
{
  GraftFindPanel *self = GRAFT_FIND_PANEL (object);
  GtkWidget *child;

  g_clear_pointer (&self->hits, g_ptr_array_unref);
  g_clear_pointer (&self->searched, g_free);
  self->graph = NULL;
  g_clear_pointer (&self->inference, graft_inference_unref);
  gtk_widget_dispose_template (GTK_WIDGET (self), GRAFT_TYPE_FIND_PANEL);
  /* The template's root box is not a bound child: unparent it ourselves. */
  while ((child = gtk_widget_get_first_child (GTK_WIDGET (self))) != NULL)
    gtk_widget_unparent (child);
  G_OBJECT_CLASS (graft_find_panel_parent_class)->dispose (object);
}

static void
graft_find_panel_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  GraftFindPanel *self = GRAFT_FIND_PANEL (object);

  switch (prop_id)
    {
    case PROP_N_MATCHES: g_value_set_uint (value, self->n_matches); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
graft_find_panel_class_init (GraftFindPanelClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = graft_find_panel_dispose;
  object_class->get_property = graft_find_panel_get_property;

  /* Matches of the text searched, all of them (not only those listed). */
  properties[PROP_N_MATCHES] =
    g_param_spec_uint ("n-matches", NULL, NULL, 0, G_MAXUINT, 0,
                       G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);

  signals[SIGNAL_ITEM_ACTIVATED] =
    g_signal_new ("item-activated", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL, G_TYPE_NONE, 2, G_TYPE_POINTER, G_TYPE_POINTER);
  /* The hits changed (graft_find_panel_dup_matched_items): the window
   * highlights them on the canvas. */
  signals[SIGNAL_MATCHES_CHANGED] =
    g_signal_new ("matches-changed", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL, G_TYPE_NONE, 0);
  signals[SIGNAL_STOP_SEARCH] =
    g_signal_new ("stop-search", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL, G_TYPE_NONE, 0);

  gtk_widget_class_set_template_from_resource (widget_class, "/org/graft/Graft/ui/find-panel.ui");
  gtk_widget_class_bind_template_child (widget_class, GraftFindPanel, search_entry);
  gtk_widget_class_bind_template_child (widget_class, GraftFindPanel, status_label);
  gtk_widget_class_bind_template_child (widget_class, GraftFindPanel, results);
  gtk_widget_class_bind_template_callback (widget_class, on_search_changed);
  gtk_widget_class_bind_template_callback (widget_class, on_entry_activate);
  gtk_widget_class_bind_template_callback (widget_class, on_next_match);
  gtk_widget_class_bind_template_callback (widget_class, on_previous_match);
  gtk_widget_class_bind_template_callback (widget_class, on_stop_search);
  gtk_widget_class_bind_template_callback (widget_class, on_row_activated);
  gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BIN_LAYOUT);
  gtk_widget_class_set_css_name (widget_class, "findpanel");
}

static void
graft_find_panel_init (GraftFindPanel *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));
  refresh_results (self);
}
