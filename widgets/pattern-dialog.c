#include "pattern-dialog.h"

#include <string.h>

#include "edit/edit-operation.h"
#include "edit/pattern-edits.h"

/* Rows listed in the preview; the rest are counted. */
#define MAX_ROWS 50
/* The preview waits for a pause in typing. */
#define PREVIEW_DELAY_MS 150

struct _GraftPatternDialog
{
  AdwWindow parent_instance;

  /* Template widgets */
  AdwWindowTitle *window_title;
  GtkButton *apply_button;
  GtkTextView *pattern_view;
  GtkLabel *pattern_error;
  GtkLabel *match_count;
  GtkListBox *match_list;
  GtkStack *replacement_stack;
  AdwEntryRow *domain_row;
  AdwEntryRow *op_type_row;
  AdwEntryRow *attributes_row;
  GtkLabel *op_hint;
  GtkLabel *apply_hint;
  GtkTextView *replacement_view;
  GtkLabel *replacement_error;
  GtkSwitch *subgraphs_switch;
  GtkLabel *apply_error;

  /* Owned references */
  GraftModel *model;                /* keeps graph alive */
  GraftPatternPreview *preview;     /* NULL while the pattern is not valid */

  /* Borrowed references */
  GraftGraph *graph;

  /* State */
  guint preview_source;
};

G_DEFINE_FINAL_TYPE (GraftPatternDialog, graft_pattern_dialog, ADW_TYPE_WINDOW)

enum {
  SIGNAL_APPLY,
  SIGNAL_HIGHLIGHT,
  SIGNAL_SHOW_NODE,
  N_SIGNALS
};

static guint signals[N_SIGNALS];

enum {
  PROP_0,
  PROP_N_MATCHES,
  PROP_N_SKIPPED,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

static char *
text_view_text (GtkTextView *view)
{
  GtkTextBuffer *buffer = gtk_text_view_get_buffer (view);
  GtkTextIter start, end;

  gtk_text_buffer_get_bounds (buffer, &start, &end);
  return g_strstrip (gtk_text_buffer_get_text (buffer, &start, &end, FALSE));
}

static void
show_label (GtkLabel *label, const char *text)
{
  gtk_label_set_text (label, text ? text : "");
  gtk_widget_set_visible (GTK_WIDGET (label), text != NULL && *text != '\0');
}

static gboolean
replacing_by_op (GraftPatternDialog *self)
{
  return g_strcmp0 (gtk_stack_get_visible_child_name (self->replacement_stack), "op") == 0;
}

static char *
entry_text (AdwEntryRow *row)
{
  return g_strstrip (g_strdup (gtk_editable_get_text (GTK_EDITABLE (row))));
}

/* "domain::Op", or NULL with the reason in why. */
static char *
custom_op (GraftPatternDialog *self, char **why)
{
  g_autofree char *domain = entry_text (self->domain_row);
  g_autofree char *op_type = entry_text (self->op_type_row);

  if (*op_type == '\0')
    *why = g_strdup ("Replace is off until the op has a type: name the op that replaces each match.");
  else if (*domain == '\0' || strcmp (graft_canonical_domain (domain), "onnx") == 0)
    *why = g_strdup ("A custom op needs a domain of its own (“com.example”); ONNX ops replace a pattern as a "
                     "subgraph.");
  else if (strchr (op_type, ':') != NULL || strchr (op_type, '(') != NULL || strchr (op_type, ' ') != NULL)
    *why = g_strdup_printf ("“%s” is not an op type.", op_type);
  else
    return g_strdup_printf ("%s::%s", domain, op_type);
  return NULL;
}

/* Checks the replacement fields against the pattern; TRUE if Replace may apply them. */
static gboolean
check_replacement (GraftPatternDialog *self, const char *pattern)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *why = NULL;
  g_autofree char *op = NULL;
  g_autofree char *hint = NULL;
  g_autofree char *steps = NULL;

  if (replacing_by_op (self))
    {
      show_label (self->replacement_error, NULL);
      op = custom_op (self, &why);
      if (op != NULL && self->preview != NULL)
        hint = g_strdup_printf ("Each match becomes one %s node reading the pattern's %u %s (in the order they "
                                "first appear) and giving the last step's outputs.",
                                op, self->preview->n_variables, self->preview->n_variables == 1 ? "variable" : "variables");
      show_label (self->op_hint, why ? why : hint);
      return op != NULL;
    }
  steps = text_view_text (self->replacement_view);
  if (*steps == '\0')
    {
      show_label (self->replacement_error, NULL);
      return FALSE;
    }
  if (self->preview != NULL && !graft_pattern_check_replacement (pattern, steps, &error))
    {
      show_label (self->replacement_error, error->message);
      return FALSE;
    }
  show_label (self->replacement_error, NULL);
  return TRUE;
}

static void
update_apply (GraftPatternDialog *self)
{
  g_autofree char *pattern = text_view_text (self->pattern_view);
  gboolean replacement_ok = check_replacement (self, pattern);
  gboolean has_matches = self->preview != NULL && self->preview->matches->len > 0;
  const char *hint = NULL;

  gtk_widget_set_sensitive (GTK_WIDGET (self->apply_button), has_matches && replacement_ok);
  /* A disabled Replace says what it waits for (an error label, when
   * shown, already does). */
  if (has_matches && !replacement_ok && !replacing_by_op (self)
      && !gtk_widget_get_visible (GTK_WIDGET (self->replacement_error)))
    hint = "Replace is off until the replacement steps are typed above.";
  else if (!has_matches && replacement_ok)
    hint = "Replace is off: the pattern matches nothing to replace.";
  show_label (self->apply_hint, hint);
  gtk_widget_set_tooltip_text (GTK_WIDGET (self->apply_button), hint);
}

/* "MatMul → Add → Relu", and where a body's match is. */
static char *
describe_match (GraftPatternDialog *self, GraftPatternMatch *match)
{
  g_autoptr(GString) text = g_string_new (NULL);

  for (guint i = 0; i < match->nodes->len; i++)
    g_string_append_printf (text, "%s%s", i ? " → " : "", ((GraftNode *) g_ptr_array_index (match->nodes, i))->op_type);
  if (match->graph != self->graph && match->graph->parent_node != NULL)
    g_string_append_printf (text, " · in a body of “%s”", match->graph->parent_node->name);
  if (match->reason != NULL)
    g_string_append_printf (text, "\nSkipped: %s", match->reason);
  return g_string_free (g_steal_pointer (&text), FALSE);
}

static void
add_match_row (GraftPatternDialog *self, GraftPatternMatch *match)
{
  GtkWidget *row = adw_action_row_new ();
  GraftNode *root = g_ptr_array_index (match->nodes, match->nodes->len - 1);
  g_autofree char *subtitle = describe_match (self, match);

  adw_preferences_row_set_use_markup (ADW_PREFERENCES_ROW (row), FALSE);
  adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row), root->name);
  adw_action_row_set_subtitle (ADW_ACTION_ROW (row), subtitle);
  adw_action_row_set_icon_name (ADW_ACTION_ROW (row), match->reason ? "dialog-warning-symbolic" : "emblem-ok-symbolic");
  gtk_widget_set_name (row, match->reason ? "skipped-row" : "match-row");
  /* Only the main graph's (or the shown body's) nodes can be shown. */
  gtk_list_box_row_set_activatable (GTK_LIST_BOX_ROW (row), match->graph == self->graph);
  g_object_set_data (G_OBJECT (row), "node", root);
  gtk_list_box_append (self->match_list, row);
}

static void
fill_match_list (GraftPatternDialog *self)
{
  GtkWidget *child;
  guint n_rows = 0, n_all;

  while ((child = gtk_widget_get_first_child (GTK_WIDGET (self->match_list))) != NULL)
    gtk_list_box_remove (self->match_list, child);
  if (self->preview == NULL)
    {
      gtk_widget_set_visible (GTK_WIDGET (self->match_list), FALSE);
      return;
    }
  n_all = self->preview->matches->len + self->preview->skipped->len;
  /* Skipped candidates first: they are what the user has to look at. */
  for (guint i = 0; i < self->preview->skipped->len && n_rows < MAX_ROWS; i++, n_rows++)
    add_match_row (self, g_ptr_array_index (self->preview->skipped, i));
  for (guint i = 0; i < self->preview->matches->len && n_rows < MAX_ROWS; i++, n_rows++)
    add_match_row (self, g_ptr_array_index (self->preview->matches, i));
  if (n_all > n_rows)
    {
      GtkWidget *row = adw_action_row_new ();
      g_autofree char *title = g_strdup_printf ("… and %u more", n_all - n_rows);
      adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row), title);
      gtk_list_box_append (self->match_list, row);
    }
  gtk_widget_set_visible (GTK_WIDGET (self->match_list), n_all > 0);
}

static char *
describe_count (GraftPatternPreview *preview)
{
  guint n = preview->matches->len, skipped = preview->skipped->len;
  g_autofree char *matches = n == 0 ? g_strdup ("No matches") : g_strdup_printf ("%u %s", n, n == 1 ? "match" : "matches");

  if (skipped == 0)
    return g_steal_pointer (&matches);
  return g_strdup_printf ("%s · %u skipped", matches, skipped);
}

GPtrArray *
graft_pattern_dialog_dup_matched_nodes (GraftPatternDialog *self)
{
  GPtrArray *nodes = g_ptr_array_new ();

  g_return_val_if_fail (GRAFT_IS_PATTERN_DIALOG (self), nodes);
  for (guint i = 0; self->preview != NULL && i < self->preview->matches->len; i++)
    {
      GraftPatternMatch *match = g_ptr_array_index (self->preview->matches, i);
      g_ptr_array_extend (nodes, match->nodes, NULL, NULL);
    }
  return nodes;
}

static void
emit_highlight (GraftPatternDialog *self)
{
  g_autoptr(GPtrArray) nodes = graft_pattern_dialog_dup_matched_nodes (self);

  g_signal_emit (self, signals[SIGNAL_HIGHLIGHT], 0, nodes);
}

static void
update_preview (GraftPatternDialog *self)
{
  g_autofree char *pattern = text_view_text (self->pattern_view);
  g_autoptr(GError) error = NULL;
  g_autofree char *count = NULL;

  g_clear_pointer (&self->preview, graft_pattern_preview_free);
  if (*pattern == '\0')
    {
      show_label (self->pattern_error, NULL);
      gtk_label_set_text (self->match_count, "Type a pattern to see its matches.");
    }
  else if (self->graph == NULL)
    gtk_label_set_text (self->match_count, "No graph is shown.");
  else if ((self->preview = graft_pattern_preview_new (self->model, self->graph, pattern,
                                                       gtk_switch_get_active (self->subgraphs_switch), &error)) == NULL)
    {
      show_label (self->pattern_error, error->message);
      gtk_label_set_text (self->match_count, "No matches: the pattern is not valid.");
    }
  else
    {
      show_label (self->pattern_error, NULL);
      count = describe_count (self->preview);
      gtk_label_set_text (self->match_count, count);
    }
  fill_match_list (self);
  emit_highlight (self);
  update_apply (self);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_N_MATCHES]);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_N_SKIPPED]);
}

static gboolean
preview_timeout (gpointer data)
{
  GraftPatternDialog *self = data;

  self->preview_source = 0;
  update_preview (self);
  return G_SOURCE_REMOVE;
}

static void
on_pattern_changed (GraftPatternDialog *self)
{
  g_clear_handle_id (&self->preview_source, g_source_remove);
  self->preview_source = g_timeout_add (PREVIEW_DELAY_MS, preview_timeout, self);
  show_label (self->apply_error, NULL);
}

static void
on_replacement_changed (GraftPatternDialog *self)
{
  show_label (self->apply_error, NULL);
  update_apply (self);
}

static void
on_match_activated (GraftPatternDialog *self, GtkListBoxRow *row)
{
  GraftNode *node = g_object_get_data (G_OBJECT (row), "node");

  if (node != NULL)
    g_signal_emit (self, signals[SIGNAL_SHOW_NODE], 0, node);
}

/* "alpha=0.5; mode=fast" → { "alpha=0.5", "mode=fast" } */
static GVariant *
attribute_list (const char *text)
{
  g_auto(GStrv) parts = g_strsplit (text, ";", -1);
  g_autoptr(GPtrArray) attributes = g_ptr_array_new ();

  for (guint i = 0; parts[i] != NULL; i++)
    if (*g_strstrip (parts[i]) != '\0')
      g_ptr_array_add (attributes, parts[i]);
  if (attributes->len == 0)
    return NULL;
  return g_variant_new_strv ((const char *const *) attributes->pdata, attributes->len);
}

static void
on_apply_clicked (GraftPatternDialog *self)
{
  g_autofree char *pattern = text_view_text (self->pattern_view);
  g_autofree char *why = NULL, *op = NULL, *steps = NULL, *attributes = NULL;
  g_autoptr(GVariant) params = NULL;

  /* The preview of the text as it is now, not as it was a moment ago. */
  g_clear_handle_id (&self->preview_source, g_source_remove);
  update_preview (self);
  if (!gtk_widget_get_sensitive (GTK_WIDGET (self->apply_button)))
    return;
  if (replacing_by_op (self))
    {
      op = custom_op (self, &why);
      attributes = entry_text (self->attributes_row);
      params = g_variant_ref_sink (graft_edit_params_new ("pattern", g_variant_new_string (pattern),
                                                          "op", g_variant_new_string (op),
                                                          "attributes", attribute_list (attributes), NULL));
    }
  else
    {
      steps = text_view_text (self->replacement_view);
      params = g_variant_ref_sink (graft_edit_params_new ("pattern", g_variant_new_string (pattern),
                                                          "replacement", g_variant_new_string (steps), NULL));
    }
  /* The default (bodies too) is left out, as graft-cli records it. */
  if (!gtk_switch_get_active (self->subgraphs_switch))
    {
      GVariant *without = g_variant_ref_sink (graft_edit_params_replace (params, "subgraphs",
                                                                         g_variant_new_boolean (FALSE)));
      g_variant_unref (params);
      params = without;
    }
  show_label (self->apply_error, NULL);
  g_signal_emit (self, signals[SIGNAL_APPLY], 0, "replace-pattern", params);
}

void
graft_pattern_dialog_show_error (GraftPatternDialog *self, const char *message)
{
  g_return_if_fail (GRAFT_IS_PATTERN_DIALOG (self));

  show_label (self->apply_error, message);
}

void
graft_pattern_dialog_set_graph (GraftPatternDialog *self, GraftGraph *graph)
{
  g_return_if_fail (GRAFT_IS_PATTERN_DIALOG (self));

  /* The preview points into the graph it searched: dropped before anything reads it. */
  g_clear_pointer (&self->preview, graft_pattern_preview_free);
  self->graph = graph;
  g_clear_handle_id (&self->preview_source, g_source_remove);
  update_preview (self);
}

/* ---------- life cycle ---------- */

static void
graft_pattern_dialog_dispose (GObject *object)
{
  GraftPatternDialog *self = GRAFT_PATTERN_DIALOG (object);

  g_clear_handle_id (&self->preview_source, g_source_remove);
  gtk_widget_dispose_template (GTK_WIDGET (self), GRAFT_TYPE_PATTERN_DIALOG);
  G_OBJECT_CLASS (graft_pattern_dialog_parent_class)->dispose (object);
}

static void
graft_pattern_dialog_finalize (GObject *object)
{
  GraftPatternDialog *self = GRAFT_PATTERN_DIALOG (object);

  g_clear_pointer (&self->preview, graft_pattern_preview_free);
  g_clear_object (&self->model);
  G_OBJECT_CLASS (graft_pattern_dialog_parent_class)->finalize (object);
}

static void
graft_pattern_dialog_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  GraftPatternDialog *self = GRAFT_PATTERN_DIALOG (object);

  switch (prop_id)
    {
    case PROP_N_MATCHES: g_value_set_uint (value, self->preview ? self->preview->matches->len : 0); break;
    case PROP_N_SKIPPED: g_value_set_uint (value, self->preview ? self->preview->skipped->len : 0); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
graft_pattern_dialog_class_init (GraftPatternDialogClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = graft_pattern_dialog_dispose;
  object_class->get_property = graft_pattern_dialog_get_property;
  object_class->finalize = graft_pattern_dialog_finalize;

  /* Matches of the pattern in the graph (0 while it is empty or not valid). */
  properties[PROP_N_MATCHES] =
    g_param_spec_uint ("n-matches", NULL, NULL, 0, G_MAXUINT, 0,
                       G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  /* Matches left out: they overlap an earlier one. */
  properties[PROP_N_SKIPPED] =
    g_param_spec_uint ("n-skipped", NULL, NULL, 0, G_MAXUINT, 0,
                       G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);

  /* (operation id, a{sv} parameters) */
  signals[SIGNAL_APPLY] = g_signal_new ("apply", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                        G_TYPE_NONE, 2, G_TYPE_STRING, G_TYPE_VARIANT);
  /* (GPtrArray of GraftNode*: every node of every match; empty: none) */
  signals[SIGNAL_HIGHLIGHT] = g_signal_new ("highlight", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                                            NULL, G_TYPE_NONE, 1, G_TYPE_PTR_ARRAY);
  /* (GraftNode*: the root of the match whose row was activated) */
  signals[SIGNAL_SHOW_NODE] = g_signal_new ("show-node", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                                            NULL, G_TYPE_NONE, 1, G_TYPE_POINTER);

  gtk_widget_class_set_template_from_resource (widget_class, "/org/graft/Graft/ui/pattern-dialog.ui");
  gtk_widget_class_bind_template_child (widget_class, GraftPatternDialog, window_title);
  gtk_widget_class_bind_template_child (widget_class, GraftPatternDialog, apply_button);
  gtk_widget_class_bind_template_child (widget_class, GraftPatternDialog, pattern_view);
  gtk_widget_class_bind_template_child (widget_class, GraftPatternDialog, pattern_error);
  gtk_widget_class_bind_template_child (widget_class, GraftPatternDialog, match_count);
  gtk_widget_class_bind_template_child (widget_class, GraftPatternDialog, match_list);
  gtk_widget_class_bind_template_child (widget_class, GraftPatternDialog, replacement_stack);
  gtk_widget_class_bind_template_child (widget_class, GraftPatternDialog, domain_row);
  gtk_widget_class_bind_template_child (widget_class, GraftPatternDialog, op_type_row);
  gtk_widget_class_bind_template_child (widget_class, GraftPatternDialog, attributes_row);
  gtk_widget_class_bind_template_child (widget_class, GraftPatternDialog, op_hint);
  gtk_widget_class_bind_template_child (widget_class, GraftPatternDialog, apply_hint);
  gtk_widget_class_bind_template_child (widget_class, GraftPatternDialog, replacement_view);
  gtk_widget_class_bind_template_child (widget_class, GraftPatternDialog, replacement_error);
  gtk_widget_class_bind_template_child (widget_class, GraftPatternDialog, subgraphs_switch);
  gtk_widget_class_bind_template_child (widget_class, GraftPatternDialog, apply_error);
  gtk_widget_class_bind_template_callback (widget_class, on_apply_clicked);
  gtk_widget_class_bind_template_callback (widget_class, on_pattern_changed);
  gtk_widget_class_bind_template_callback (widget_class, on_replacement_changed);
  gtk_widget_class_bind_template_callback (widget_class, on_match_activated);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_Escape, 0, "window.close", NULL);
}

static void
graft_pattern_dialog_init (GraftPatternDialog *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));
  g_signal_connect_swapped (gtk_text_view_get_buffer (self->pattern_view), "changed",
                            G_CALLBACK (on_pattern_changed), self);
  g_signal_connect_swapped (gtk_text_view_get_buffer (self->replacement_view), "changed",
                            G_CALLBACK (on_replacement_changed), self);
}

GraftPatternDialog *
graft_pattern_dialog_new (GtkWindow *parent, GraftModel *model, GraftGraph *graph, const char *pattern)
{
  GraftPatternDialog *self = g_object_new (GRAFT_TYPE_PATTERN_DIALOG, "transient-for", parent, NULL);
  g_autofree char *subtitle = NULL;

  self->model = g_object_ref (model);
  self->graph = graph;
  subtitle = graph->parent_node != NULL ? g_strdup_printf ("in a body of “%s”", graph->parent_node->name)
                                        : g_strdup_printf ("%u nodes", graph->nodes->len);
  adw_window_title_set_subtitle (self->window_title, subtitle);
  gtk_window_set_default_widget (GTK_WINDOW (self), GTK_WIDGET (self->apply_button));
  gtk_text_buffer_set_text (gtk_text_view_get_buffer (self->pattern_view), pattern ? pattern : "", -1);
  /* The first preview without the typing pause, once the caller has
   * connected to "highlight". */
  g_clear_handle_id (&self->preview_source, g_source_remove);
  self->preview_source = g_idle_add (preview_timeout, self);
  gtk_widget_grab_focus (GTK_WIDGET (self->pattern_view));
  return self;
}
