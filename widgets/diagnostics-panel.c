#include "diagnostics-panel.h"
#include "lint/lint-rules.h"
#include "edit/edit.h"

#include <string.h>

struct _GraftDiagnosticsPanel
{
  GtkWidget parent_instance;

  GtkDropDown *rule_dropdown;
  GtkDropDown *severity_dropdown;
  GtkLabel *status_label;
  GtkListView *rows;

  GPtrArray *diagnostics;   /* GraftDiagnostic*, a reference on the caller's array */
  GtkStringList *rules;     /* "All Rules", then the rules present */
  GListStore *listed;       /* GraftDiagnosticItem of the rows, in order */
  GtkSelectionModel *selection; /* over listed; the list view's model only while the panel is mapped */
  char *rule_filter;        /* NULL: all; "trace-*": a prefix */
  GraftSeverity min_severity;
  gboolean updating;
};

G_DEFINE_FINAL_TYPE (GraftDiagnosticsPanel, graft_diagnostics_panel, GTK_TYPE_WIDGET)

enum {
  SIGNAL_ITEM_ACTIVATED,
  N_SIGNALS
};

static guint signals[N_SIGNALS];

enum {
  PROP_0,
  PROP_N_SHOWN,
  PROP_MODEL,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

/* One listed diagnostic: the list view recycles a few row widgets over
 * these, so only the visible rows are built and measured (a GtkListBox
 * row per diagnostic made big models slow to open). The item holds a
 * reference on the array its diagnostic lives in. */
#define GRAFT_TYPE_DIAGNOSTIC_ITEM (graft_diagnostic_item_get_type ())
G_DECLARE_FINAL_TYPE (GraftDiagnosticItem, graft_diagnostic_item, GRAFT, DIAGNOSTIC_ITEM, GObject)

struct _GraftDiagnosticItem
{
  GObject parent_instance;

  GPtrArray *diagnostics;
  guint index;
};

G_DEFINE_FINAL_TYPE (GraftDiagnosticItem, graft_diagnostic_item, G_TYPE_OBJECT)

enum {
  ITEM_PROP_0,
  ITEM_PROP_DIAGNOSTIC,
};

static GraftDiagnostic *graft_diagnostic_item_get (GraftDiagnosticItem *self);

static void
graft_diagnostic_item_finalize (GObject *object)
{
  g_ptr_array_unref (GRAFT_DIAGNOSTIC_ITEM (object)->diagnostics);
  G_OBJECT_CLASS (graft_diagnostic_item_parent_class)->finalize (object);
}

static void
graft_diagnostic_item_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  if (prop_id == ITEM_PROP_DIAGNOSTIC)
    g_value_set_pointer (value, graft_diagnostic_item_get (GRAFT_DIAGNOSTIC_ITEM (object)));
  else
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
}

static void
graft_diagnostic_item_class_init (GraftDiagnosticItemClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->finalize = graft_diagnostic_item_finalize;
  object_class->get_property = graft_diagnostic_item_get_property;
  /* The GraftDiagnostic the row shows (borrowed from the panel's list):
   * what a reader of the panel's "model" gets of each row. */
  g_object_class_install_property (object_class, ITEM_PROP_DIAGNOSTIC,
                                   g_param_spec_pointer ("diagnostic", NULL, NULL,
                                                         G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
}

static void
graft_diagnostic_item_init (GraftDiagnosticItem *self)
{
}

static GraftDiagnosticItem *
graft_diagnostic_item_new (GPtrArray *diagnostics, guint index)
{
  GraftDiagnosticItem *self = g_object_new (GRAFT_TYPE_DIAGNOSTIC_ITEM, NULL);

  self->diagnostics = g_ptr_array_ref (diagnostics);
  self->index = index;
  return self;
}

static GraftDiagnostic *
graft_diagnostic_item_get (GraftDiagnosticItem *self)
{
  return g_ptr_array_index (self->diagnostics, self->index);
}

static GraftDiagnostic *
listed_diagnostic (GraftDiagnosticsPanel *self, guint position)
{
  g_autoptr(GraftDiagnosticItem) item = g_list_model_get_item (G_LIST_MODEL (self->listed), position);

  return item != NULL ? graft_diagnostic_item_get (item) : NULL;
}

static gboolean
rule_matches (const char *filter, const char *rule)
{
  gsize len;

  if (filter == NULL || filter[0] == '\0')
    return TRUE;
  len = strlen (filter);
  if (filter[len - 1] == '*')
    return strncmp (filter, rule, len - 1) == 0;
  return strcmp (filter, rule) == 0;
}

static const char *
severity_icon (GraftSeverity severity)
{
  switch (severity)
    {
    case GRAFT_SEVERITY_ERROR: return "dialog-error-symbolic";
    case GRAFT_SEVERITY_WARNING: return "dialog-warning-symbolic";
    default: return "dialog-information-symbolic";
    }
}

/* A row: severity icon, "rule · node" heading, wrapped message and a Make
 * Dynamic button shown when the rule's fix is that and the diagnostic
 * names an input axis. */
static void
setup_row (GtkSignalListItemFactory *factory, GtkListItem *list_item)
{
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 8);
  GtkWidget *icon = gtk_image_new ();
  GtkWidget *text = gtk_box_new (GTK_ORIENTATION_VERTICAL, 2);
  GtkWidget *title = gtk_label_new (NULL);
  GtkWidget *message = gtk_label_new (NULL);
  GtkWidget *button = gtk_button_new_with_mnemonic ("Make _Dynamic");

  gtk_widget_add_css_class (box, "diagnostic-row");
  gtk_widget_set_valign (icon, GTK_ALIGN_START);
  gtk_box_append (GTK_BOX (box), icon);

  gtk_label_set_xalign (GTK_LABEL (title), 0);
  gtk_label_set_ellipsize (GTK_LABEL (title), PANGO_ELLIPSIZE_MIDDLE);
  gtk_widget_add_css_class (title, "heading");
  gtk_label_set_xalign (GTK_LABEL (message), 0);
  gtk_label_set_wrap (GTK_LABEL (message), TRUE);
  gtk_label_set_wrap_mode (GTK_LABEL (message), PANGO_WRAP_WORD_CHAR);
  /* Wrapped labels ask for their natural (unwrapped) width otherwise. */
  gtk_label_set_max_width_chars (GTK_LABEL (message), 30);
  gtk_widget_add_css_class (message, "caption");
  gtk_widget_set_hexpand (text, TRUE);
  gtk_box_append (GTK_BOX (text), title);
  gtk_box_append (GTK_BOX (text), message);

  gtk_widget_set_halign (button, GTK_ALIGN_START);
  gtk_widget_set_margin_top (button, 4);
  gtk_widget_add_css_class (button, "pill");
  gtk_widget_add_css_class (button, "small");
  gtk_box_append (GTK_BOX (text), button);
  gtk_box_append (GTK_BOX (box), text);
  gtk_list_item_set_child (list_item, box);
}

static gboolean
rule_offers_make_dynamic (const GraftDiagnostic *diagnostic)
{
  const GraftLintRule *rule = graft_lint_rule_lookup (diagnostic->rule);

  return rule != NULL && rule->fix == GRAFT_LINT_FIX_MAKE_DIM_DYNAMIC;
}

static void
bind_row (GtkSignalListItemFactory *factory, GtkListItem *list_item)
{
  const GraftDiagnostic *diagnostic = graft_diagnostic_item_get (gtk_list_item_get_item (list_item));
  GtkWidget *box = gtk_list_item_get_child (list_item);
  GtkWidget *icon = gtk_widget_get_first_child (box);
  GtkWidget *text = gtk_widget_get_next_sibling (icon);
  GtkWidget *title = gtk_widget_get_first_child (text);
  GtkWidget *message = gtk_widget_get_next_sibling (title);
  GtkWidget *button = gtk_widget_get_next_sibling (message);
  const char *severity = graft_severity_to_string (diagnostic->severity);
  g_autofree char *heading = NULL;
  const char *classes[] = { "diagnostic-icon", severity, NULL };

  gtk_image_set_from_icon_name (GTK_IMAGE (icon), severity_icon (diagnostic->severity));
  gtk_widget_set_css_classes (icon, classes);

  if (diagnostic->node_name != NULL)
    heading = g_strdup_printf ("%s · %s", diagnostic->rule, diagnostic->node_name);
  else if (diagnostic->value != NULL)
    heading = g_strdup_printf ("%s · %s", diagnostic->rule, diagnostic->value->name);
  else
    heading = g_strdup (diagnostic->rule);
  gtk_label_set_text (GTK_LABEL (title), heading);
  {
    const GraftLintRule *rule = graft_lint_rule_lookup (diagnostic->rule);
    g_autofree char *tooltip = rule != NULL ? g_strdup_printf ("%s — %s: %s", heading, rule->title, rule->description)
                                            : g_strdup (heading);

    gtk_widget_set_tooltip_text (title, tooltip);
  }
  gtk_label_set_text (GTK_LABEL (message), diagnostic->message);

  if (rule_offers_make_dynamic (diagnostic) && diagnostic->input != NULL && diagnostic->axis >= 0)
    {
      g_autofree char *symbol = graft_edit_suggest_dim_symbol (diagnostic->input, diagnostic->axis);
      g_autofree char *target = g_strdup_printf ("%s:%d=%s", diagnostic->input->name, diagnostic->axis, symbol);
      g_autofree char *tooltip = g_strdup_printf ("Make %s:%d the dynamic dimension “%s”",
                                                  diagnostic->input->name, diagnostic->axis, symbol);

      gtk_widget_set_tooltip_text (button, tooltip);
      gtk_actionable_set_action_target (GTK_ACTIONABLE (button), "(sss)", "make-dim-dynamic", "", target);
      gtk_actionable_set_action_name (GTK_ACTIONABLE (button), "win.edit-operation");
      gtk_widget_set_visible (button, TRUE);
    }
  else
    {
      /* An action without its target would warn. */
      gtk_widget_set_visible (button, FALSE);
      gtk_actionable_set_action_name (GTK_ACTIONABLE (button), NULL);
      gtk_actionable_set_action_target_value (GTK_ACTIONABLE (button), NULL);
    }
}

static void
refresh_rows (GraftDiagnosticsPanel *self)
{
  guint total = self->diagnostics != NULL ? self->diagnostics->len : 0;
  g_autoptr(GPtrArray) items = g_ptr_array_new_with_free_func (g_object_unref);
  g_autofree char *status = NULL;
  guint shown;

  for (guint i = 0; i < total; i++)
    {
      GraftDiagnostic *diagnostic = g_ptr_array_index (self->diagnostics, i);

      if (diagnostic->severity < self->min_severity || !rule_matches (self->rule_filter, diagnostic->rule))
        continue;
      g_ptr_array_add (items, graft_diagnostic_item_new (self->diagnostics, i));
    }
  /* One change for the whole list. */
  g_list_store_splice (self->listed, 0, g_list_model_get_n_items (G_LIST_MODEL (self->listed)),
                       items->pdata, items->len);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_N_SHOWN]);
  shown = items->len;
  if (self->diagnostics == NULL)
    status = g_strdup ("No model checked");
  else if (total == 0)
    status = g_strdup ("No problems found");
  else if (shown == total)
    status = g_strdup_printf (g_dngettext (NULL, "%u problem", "%u problems", total), total);
  else
    status = g_strdup_printf ("%u of %u problems shown", shown, total);
  gtk_label_set_text (self->status_label, status);
}

static void
rebuild_rule_list (GraftDiagnosticsPanel *self)
{
  g_autoptr(GPtrArray) rules = g_ptr_array_new ();
  guint n = g_list_model_get_n_items (G_LIST_MODEL (self->rules));

  for (guint i = 0; self->diagnostics != NULL && i < self->diagnostics->len; i++)
    {
      const char *rule = ((GraftDiagnostic *) g_ptr_array_index (self->diagnostics, i))->rule;

      if (!g_ptr_array_find_with_equal_func (rules, rule, g_str_equal, NULL))
        g_ptr_array_add (rules, (gpointer) rule);
    }
  g_ptr_array_add (rules, NULL);
  self->updating = TRUE;
  gtk_string_list_splice (self->rules, 1, n - 1, (const char *const *) rules->pdata);
  gtk_drop_down_set_selected (self->rule_dropdown, 0);
  self->updating = FALSE;
}

static void
on_filter_changed (GraftDiagnosticsPanel *self)
{
  guint rule = gtk_drop_down_get_selected (self->rule_dropdown);
  guint severity = gtk_drop_down_get_selected (self->severity_dropdown);

  if (self->updating)
    return;
  g_clear_pointer (&self->rule_filter, g_free);
  if (rule != GTK_INVALID_LIST_POSITION && rule > 0)
    self->rule_filter = g_strdup (gtk_string_list_get_string (self->rules, rule));
  self->min_severity = severity == 2 ? GRAFT_SEVERITY_ERROR
                     : severity == 1 ? GRAFT_SEVERITY_WARNING : GRAFT_SEVERITY_INFO;
  refresh_rows (self);
}

static void
on_row_activated (GtkListView *list, guint position, GraftDiagnosticsPanel *self)
{
  GraftDiagnostic *diagnostic = listed_diagnostic (self, position);

  if (diagnostic == NULL)
    return;
  g_signal_emit (self, signals[SIGNAL_ITEM_ACTIVATED], 0, diagnostic->node,
                 diagnostic->node == NULL ? diagnostic->value : NULL);
}

void
graft_diagnostics_panel_set_diagnostics (GraftDiagnosticsPanel *self, GPtrArray *diagnostics)
{
  g_return_if_fail (GRAFT_IS_DIAGNOSTICS_PANEL (self));

  if (diagnostics != NULL)
    g_ptr_array_ref (diagnostics);
  /* Nothing may show the old diagnostics: their nodes may be gone. */
  g_list_store_remove_all (self->listed);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_N_SHOWN]);
  g_clear_pointer (&self->diagnostics, g_ptr_array_unref);
  self->diagnostics = diagnostics;
  rebuild_rule_list (self);
  on_filter_changed (self);
}

void
graft_diagnostics_panel_set_filter (GraftDiagnosticsPanel *self, const char *rule, GraftSeverity min_severity)
{
  guint n = g_list_model_get_n_items (G_LIST_MODEL (self->rules));
  guint position = 0;

  g_return_if_fail (GRAFT_IS_DIAGNOSTICS_PANEL (self));
  for (guint i = 1; rule != NULL && rule[0] != '\0' && i < n; i++)
    if (g_strcmp0 (gtk_string_list_get_string (self->rules, i), rule) == 0)
      position = i;
  self->updating = TRUE;
  gtk_drop_down_set_selected (self->rule_dropdown, position);
  gtk_drop_down_set_selected (self->severity_dropdown, min_severity == GRAFT_SEVERITY_ERROR ? 2
                                                       : min_severity == GRAFT_SEVERITY_WARNING ? 1 : 0);
  self->updating = FALSE;
  on_filter_changed (self);
  /* A prefix ("trace-*") or a rule not present is not in the list. */
  if (position == 0 && rule != NULL && rule[0] != '\0')
    {
      g_free (self->rule_filter);
      self->rule_filter = g_strdup (rule);
      refresh_rows (self);
    }
}

static void
graft_diagnostics_panel_dispose (GObject *object)
{
  GraftDiagnosticsPanel *self = GRAFT_DIAGNOSTICS_PANEL (object);
  GtkWidget *child;

  gtk_widget_dispose_template (GTK_WIDGET (self), GRAFT_TYPE_DIAGNOSTICS_PANEL);
  /* The template's root box is not a bound child: unparent it ourselves. */
  while ((child = gtk_widget_get_first_child (GTK_WIDGET (self))) != NULL)
    gtk_widget_unparent (child);
  g_clear_object (&self->selection);
  g_clear_object (&self->listed);
  g_clear_pointer (&self->diagnostics, g_ptr_array_unref);
  g_clear_object (&self->rules);
  G_OBJECT_CLASS (graft_diagnostics_panel_parent_class)->dispose (object);
}

static void
graft_diagnostics_panel_finalize (GObject *object)
{
  g_free (GRAFT_DIAGNOSTICS_PANEL (object)->rule_filter);
  G_OBJECT_CLASS (graft_diagnostics_panel_parent_class)->finalize (object);
}

/* A hidden panel keeps no rows: its revealer still measures it, and the
 * list view would build and measure a wrapped row per diagnostic (up to
 * its item limit) after every check, which held the UI thread for
 * seconds after each edit of a big model. The rows are made when the
 * panel is shown. */
static void
graft_diagnostics_panel_map (GtkWidget *widget)
{
  GraftDiagnosticsPanel *self = GRAFT_DIAGNOSTICS_PANEL (widget);

  GTK_WIDGET_CLASS (graft_diagnostics_panel_parent_class)->map (widget);
  gtk_list_view_set_model (self->rows, self->selection);
}

static void
graft_diagnostics_panel_unmap (GtkWidget *widget)
{
  GraftDiagnosticsPanel *self = GRAFT_DIAGNOSTICS_PANEL (widget);

  gtk_list_view_set_model (self->rows, NULL);
  GTK_WIDGET_CLASS (graft_diagnostics_panel_parent_class)->unmap (widget);
}

static void
graft_diagnostics_panel_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  GraftDiagnosticsPanel *self = GRAFT_DIAGNOSTICS_PANEL (object);

  switch (prop_id)
    {
    case PROP_N_SHOWN: g_value_set_uint (value, g_list_model_get_n_items (G_LIST_MODEL (self->listed))); break;
    case PROP_MODEL: g_value_set_object (value, self->listed); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
graft_diagnostics_panel_class_init (GraftDiagnosticsPanelClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = graft_diagnostics_panel_dispose;
  object_class->get_property = graft_diagnostics_panel_get_property;
  object_class->finalize = graft_diagnostics_panel_finalize;
  widget_class->map = graft_diagnostics_panel_map;
  widget_class->unmap = graft_diagnostics_panel_unmap;

  /* The problems listed under the filter. */
  properties[PROP_N_SHOWN] =
    g_param_spec_uint ("n-shown", NULL, NULL, 0, G_MAXUINT, 0,
                       G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  /* The rows listed, in order, whether built or not (the list view builds
   * only the visible ones): a GListModel of objects whose "diagnostic"
   * property is the GraftDiagnostic shown. The same model for the panel's
   * life; its items-changed says the list changed. */
  properties[PROP_MODEL] =
    g_param_spec_object ("model", NULL, NULL, G_TYPE_LIST_MODEL, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);

  signals[SIGNAL_ITEM_ACTIVATED] =
    g_signal_new ("item-activated", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL, G_TYPE_NONE, 2, G_TYPE_POINTER, G_TYPE_POINTER);

  gtk_widget_class_set_template_from_resource (widget_class, "/org/graft/Graft/ui/diagnostics-panel.ui");
  gtk_widget_class_bind_template_child (widget_class, GraftDiagnosticsPanel, rule_dropdown);
  gtk_widget_class_bind_template_child (widget_class, GraftDiagnosticsPanel, severity_dropdown);
  gtk_widget_class_bind_template_child (widget_class, GraftDiagnosticsPanel, status_label);
  gtk_widget_class_bind_template_child (widget_class, GraftDiagnosticsPanel, rows);
  gtk_widget_class_bind_template_callback (widget_class, on_filter_changed);
  gtk_widget_class_bind_template_callback (widget_class, on_row_activated);
  gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BIN_LAYOUT);
  gtk_widget_class_set_css_name (widget_class, "diagnosticspanel");
}

static void
setup_choice (GtkSignalListItemFactory *factory, GtkListItem *item)
{
  GtkWidget *label = gtk_label_new (NULL);

  /* Long rule ids would widen the panel and squeeze the canvas. */
  gtk_label_set_xalign (GTK_LABEL (label), 0);
  gtk_label_set_ellipsize (GTK_LABEL (label), PANGO_ELLIPSIZE_END);
  gtk_label_set_max_width_chars (GTK_LABEL (label), 12);
  gtk_label_set_width_chars (GTK_LABEL (label), 8);
  gtk_list_item_set_child (item, label);
}

static void
bind_choice (GtkSignalListItemFactory *factory, GtkListItem *item)
{
  GtkStringObject *choice = gtk_list_item_get_item (item);
  GtkWidget *label = gtk_list_item_get_child (item);

  gtk_label_set_text (GTK_LABEL (label), gtk_string_object_get_string (choice));
  gtk_widget_set_tooltip_text (label, gtk_string_object_get_string (choice));
}

static GtkListItemFactory *
choice_factory (void)
{
  GtkListItemFactory *factory = gtk_signal_list_item_factory_new ();

  g_signal_connect (factory, "setup", G_CALLBACK (setup_choice), NULL);
  g_signal_connect (factory, "bind", G_CALLBACK (bind_choice), NULL);
  return factory;
}

static void
graft_diagnostics_panel_init (GraftDiagnosticsPanel *self)
{
  g_autoptr(GtkListItemFactory) rule_factory = choice_factory ();
  g_autoptr(GtkListItemFactory) severity_factory = choice_factory ();
  g_autoptr(GtkListItemFactory) row_factory = gtk_signal_list_item_factory_new ();
  const char *first[] = { "All Rules", NULL };

  self->listed = g_list_store_new (GRAFT_TYPE_DIAGNOSTIC_ITEM);
  self->rules = gtk_string_list_new (first);
  gtk_widget_init_template (GTK_WIDGET (self));
  /* Rows are activated by a click (as a list box's were), not selected. */
  self->selection = GTK_SELECTION_MODEL (gtk_no_selection_new (g_object_ref (G_LIST_MODEL (self->listed))));
  g_signal_connect (row_factory, "setup", G_CALLBACK (setup_row), NULL);
  g_signal_connect (row_factory, "bind", G_CALLBACK (bind_row), NULL);
  gtk_list_view_set_factory (self->rows, row_factory);
  gtk_drop_down_set_model (self->rule_dropdown, G_LIST_MODEL (self->rules));
  gtk_drop_down_set_factory (self->rule_dropdown, rule_factory);
  gtk_drop_down_set_factory (self->severity_dropdown, severity_factory);
  refresh_rows (self);
}
