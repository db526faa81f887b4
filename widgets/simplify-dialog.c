#include "simplify-dialog.h"

#include <math.h>

#include "edit/edit-operation.h"
#include "edit/simplify-preview.h"
#include "ir/graph-copy.h"

struct _GraftSimplifyDialog
{
  AdwWindow parent_instance;

  /* Template widgets */
  AdwWindowTitle *window_title;
  GtkButton *close_button;
  GtkButton *simplify_button;
  GtkListBox *pass_list;
  GtkWidget *verdict_group;
  GtkLabel *verdict_label;
  AdwEntryRow *sizes_row;
  AdwEntryRow *rtol_row;
  AdwEntryRow *atol_row;

  /* Owned references */
  GHashTable *checks;     /* pass id (static) → GtkCheckButton* (borrowed from the list) */
  GHashTable *rows;       /* pass id → AdwActionRow* */
  GCancellable *preview_cancellable;  /* while a preview runs */
};

G_DEFINE_FINAL_TYPE (GraftSimplifyDialog, graft_simplify_dialog, ADW_TYPE_WINDOW)

enum { SIGNAL_SIMPLIFY, N_SIGNALS };
static guint signals[N_SIGNALS];

enum {
  PROP_0,
  PROP_PREVIEWING,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

static char *
preview_text (const GraftSimplifyPass *pass)
{
  if (pass->reason != NULL)
    return g_strdup_printf ("nothing to do: %s", pass->reason);
  if (pass->removed > 0)
    return g_strdup_printf ("removes %d node%s on its own", pass->removed, pass->removed == 1 ? "" : "s");
  if (pass->removed < 0)
    return g_strdup_printf ("adds %d node%s on its own (what it makes, other passes remove)", -pass->removed,
                            pass->removed == -1 ? "" : "s");
  if (pass->initializers_removed > 0)
    return g_strdup_printf ("no nodes; %d initializer%s fewer", pass->initializers_removed,
                            pass->initializers_removed == 1 ? "" : "s");
  return g_strdup ("nothing on its own (maybe after the others)");
}

/* The rows' subtitles and the node count from passes, a preview of model. */
static void
show_previews (GraftSimplifyDialog *self, GPtrArray *passes, GraftModel *model)
{
  guint nodes = graft_model_get_graph (model)->nodes->len;
  g_autofree char *subtitle = g_strdup_printf ("%u node%s now", nodes, nodes == 1 ? "" : "s");

  adw_window_title_set_subtitle (self->window_title, subtitle);
  for (guint i = 0; i < passes->len; i++)
    {
      GraftSimplifyPass *pass = g_ptr_array_index (passes, i);
      AdwActionRow *row = g_hash_table_lookup (self->rows, pass->id);
      g_autofree char *text = preview_text (pass);

      if (row != NULL)
        adw_action_row_set_subtitle (row, text);
    }
}

/* A row per pass: its check box, its title. */
static void
build_rows (GraftSimplifyDialog *self)
{
  g_autoptr(GVariant) params = g_variant_ref_sink (graft_edit_params_new (NULL, NULL));

  for (const char *const *id = graft_simplify_pass_ids (); *id != NULL; id++)
    {
      const GraftEditOperation *operation = graft_edit_operation_lookup (*id);
      g_autofree char *title = operation->describe (params);
      GtkWidget *row = adw_action_row_new ();
      GtkWidget *check = gtk_check_button_new ();

      gtk_check_button_set_active (GTK_CHECK_BUTTON (check), TRUE);
      gtk_widget_set_valign (check, GTK_ALIGN_CENTER);
      gtk_widget_set_name (check, *id);
      adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row), title);
      adw_action_row_set_subtitle (ADW_ACTION_ROW (row), "looking…");
      adw_action_row_add_prefix (ADW_ACTION_ROW (row), check);
      adw_action_row_set_activatable_widget (ADW_ACTION_ROW (row), check);
      gtk_list_box_append (self->pass_list, row);
      g_hash_table_insert (self->checks, (gpointer) *id, check);
      g_hash_table_insert (self->rows, (gpointer) *id, row);
    }
}

/* The preview runs on a worker, on a copy of the model (which shares its
 * tensors): trying every pass on a transformer of thousands of nodes takes
 * seconds. */
static void
preview_thread (GTask *task, gpointer source, gpointer model, GCancellable *cancellable)
{
  g_task_return_pointer (task, graft_simplify_preview (model), (GDestroyNotify) g_ptr_array_unref);
}

static void
on_preview_done (GObject *source, GAsyncResult *result, gpointer user_data)
{
  g_autoptr(GraftSimplifyDialog) self = user_data;
  g_autoptr(GPtrArray) passes = g_task_propagate_pointer (G_TASK (result), NULL);

  if (g_task_get_cancellable (G_TASK (result)) != self->preview_cancellable || passes == NULL)
    return;   /* a newer preview replaced it, or the dialog went */
  g_clear_object (&self->preview_cancellable);
  show_previews (self, passes, g_task_get_task_data (G_TASK (result)));
  gtk_widget_set_sensitive (GTK_WIDGET (self->simplify_button), TRUE);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_PREVIEWING]);
}

static void
start_preview (GraftSimplifyDialog *self, GraftModel *model)
{
  g_autoptr(GTask) task = NULL;

  if (self->preview_cancellable != NULL)
    g_cancellable_cancel (self->preview_cancellable);
  g_clear_object (&self->preview_cancellable);
  self->preview_cancellable = g_cancellable_new ();
  gtk_widget_set_sensitive (GTK_WIDGET (self->simplify_button), FALSE);
  task = g_task_new (NULL, self->preview_cancellable, on_preview_done, g_object_ref (self));
  {
    GraftModel *copy = graft_model_copy (model);
    /* the copy shares the model's tensors (an mmapped file's, say) */
    graft_model_keep_alive (copy, g_object_ref (model), g_object_unref);
    g_task_set_task_data (task, copy, g_object_unref);
  }
  g_task_run_in_thread (task, preview_thread);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_PREVIEWING]);
}

char **
graft_simplify_dialog_dup_checked (GraftSimplifyDialog *self)
{
  g_autoptr(GStrvBuilder) builder = g_strv_builder_new ();

  for (const char *const *id = graft_simplify_pass_ids (); *id != NULL; id++)
    {
      GtkCheckButton *check = g_hash_table_lookup (self->checks, *id);
      if (check != NULL && gtk_check_button_get_active (check))
        g_strv_builder_add (builder, *id);
    }
  return g_strv_builder_end (builder);
}

void
graft_simplify_dialog_show_verdict (GraftSimplifyDialog *self, gboolean equal, const char *text, GraftModel *model)
{
  g_autofree char *markup = g_markup_printf_escaped ("<b>%s</b>  %s", equal ? "Equal." : "Diverged.", text);

  gtk_label_set_markup (self->verdict_label, markup);
  gtk_widget_set_visible (self->verdict_group, TRUE);
  gtk_widget_remove_css_class (GTK_WIDGET (self->verdict_label), equal ? "error" : "success");
  gtk_widget_add_css_class (GTK_WIDGET (self->verdict_label), equal ? "success" : "error");
  gtk_button_set_label (self->close_button, "_Close");
  if (model != NULL)
    start_preview (self, model);
}

static gboolean
parse_tolerance (AdwEntryRow *row, const char *what, double *value, GError **error)
{
  const char *text = gtk_editable_get_text (GTK_EDITABLE (row));
  char *end = NULL;

  *value = g_ascii_strtod (text, &end);
  if (end == text || *g_strstrip (end) != '\0' || !(*value >= 0) || !isfinite (*value))
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "%s: '%s' is not a number of 0 or more", what,
                   text);
      return FALSE;
    }
  return TRUE;
}

gboolean
graft_simplify_dialog_get_check (GraftSimplifyDialog *self, GArray **sizes, double *rtol, double *atol,
                                 GError **error)
{
  g_auto(GStrv) parts = g_strsplit_set (gtk_editable_get_text (GTK_EDITABLE (self->sizes_row)), ", ", -1);
  g_autoptr(GArray) found = g_array_new (FALSE, FALSE, sizeof (gint64));

  for (guint i = 0; parts[i] != NULL; i++)
    {
      guint64 size;
      if (*parts[i] == '\0')
        continue;
      if (!g_ascii_string_to_unsigned (parts[i], 10, 1, G_MAXINT32, &size, NULL))
        {
          g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                       "Sizes: '%s' is not a whole number of 1 or more", parts[i]);
          return FALSE;
        }
      g_array_append_val (found, (gint64) { (gint64) size });
    }
  if (!parse_tolerance (self->rtol_row, "Relative tolerance", rtol, error)
      || !parse_tolerance (self->atol_row, "Absolute tolerance", atol, error))
    return FALSE;
  *sizes = found->len > 0 ? g_steal_pointer (&found) : NULL;
  return TRUE;
}

static void
on_simplify_clicked (GraftSimplifyDialog *self)
{
  g_auto(GStrv) checked = graft_simplify_dialog_dup_checked (self);
  g_autoptr(GArray) sizes = NULL;
  g_autoptr(GError) error = NULL;
  double rtol, atol;

  if (checked[0] == NULL)
    {
      graft_simplify_dialog_show_verdict (self, FALSE, "No pass is checked: nothing ran.", NULL);
      return;
    }
  if (!graft_simplify_dialog_get_check (self, &sizes, &rtol, &atol, &error))
    {
      g_autofree char *text = g_strdup_printf ("%s. Nothing ran.", error->message);
      graft_simplify_dialog_show_verdict (self, FALSE, text, NULL);
      return;
    }
  g_signal_emit (self, signals[SIGNAL_SIMPLIFY], 0, checked);
}

static void
graft_simplify_dialog_dispose (GObject *object)
{
  GraftSimplifyDialog *self = GRAFT_SIMPLIFY_DIALOG (object);

  /* a preview still running finds no dialog to fill in */
  if (self->preview_cancellable != NULL)
    g_cancellable_cancel (self->preview_cancellable);
  g_clear_object (&self->preview_cancellable);
  G_OBJECT_CLASS (graft_simplify_dialog_parent_class)->dispose (object);
}

static void
graft_simplify_dialog_finalize (GObject *object)
{
  GraftSimplifyDialog *self = GRAFT_SIMPLIFY_DIALOG (object);

  g_clear_pointer (&self->checks, g_hash_table_unref);
  g_clear_pointer (&self->rows, g_hash_table_unref);
  G_OBJECT_CLASS (graft_simplify_dialog_parent_class)->finalize (object);
}

static void
graft_simplify_dialog_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  GraftSimplifyDialog *self = GRAFT_SIMPLIFY_DIALOG (object);

  switch (prop_id)
    {
    case PROP_PREVIEWING: g_value_set_boolean (value, self->preview_cancellable != NULL); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
graft_simplify_dialog_class_init (GraftSimplifyDialogClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = graft_simplify_dialog_dispose;
  object_class->get_property = graft_simplify_dialog_get_property;
  object_class->finalize = graft_simplify_dialog_finalize;

  /* TRUE while the passes' previews are computed (Simplify waits). */
  properties[PROP_PREVIEWING] =
    g_param_spec_boolean ("previewing", NULL, NULL, FALSE,
                          G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);

  /* (GStrv: the checked pass ids, in a round's order) */
  signals[SIGNAL_SIMPLIFY] = g_signal_new ("simplify", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                                           NULL, G_TYPE_NONE, 1, G_TYPE_STRV);

  gtk_widget_class_set_template_from_resource (widget_class, "/org/graft/Graft/ui/simplify-dialog.ui");
  gtk_widget_class_bind_template_child (widget_class, GraftSimplifyDialog, window_title);
  gtk_widget_class_bind_template_child (widget_class, GraftSimplifyDialog, close_button);
  gtk_widget_class_bind_template_child (widget_class, GraftSimplifyDialog, simplify_button);
  gtk_widget_class_bind_template_child (widget_class, GraftSimplifyDialog, pass_list);
  gtk_widget_class_bind_template_child (widget_class, GraftSimplifyDialog, verdict_group);
  gtk_widget_class_bind_template_child (widget_class, GraftSimplifyDialog, verdict_label);
  gtk_widget_class_bind_template_child (widget_class, GraftSimplifyDialog, sizes_row);
  gtk_widget_class_bind_template_child (widget_class, GraftSimplifyDialog, rtol_row);
  gtk_widget_class_bind_template_child (widget_class, GraftSimplifyDialog, atol_row);
  gtk_widget_class_bind_template_callback (widget_class, on_simplify_clicked);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_Escape, 0, "window.close", NULL);
}

static void
graft_simplify_dialog_init (GraftSimplifyDialog *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));
  self->checks = g_hash_table_new (g_str_hash, g_str_equal);
  self->rows = g_hash_table_new (g_str_hash, g_str_equal);
}

GraftSimplifyDialog *
graft_simplify_dialog_new (GtkWindow *parent, GraftModel *model)
{
  GraftSimplifyDialog *self = g_object_new (GRAFT_TYPE_SIMPLIFY_DIALOG, "transient-for", parent, NULL);

  build_rows (self);
  start_preview (self, model);
  return self;
}
