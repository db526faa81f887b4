#include "node-sidebar.h"

#include <math.h>

#include "tensor-values.h"
#include "value-format.h"
#include "edit/edit.h"
#include "edit/edit-operation.h"
#include "onnx/op-schemas.h"

#include <string.h>

/* Tensors up to this many elements are summarised at once; bigger ones in
 * a worker thread so that clicking a 100 MB embedding never stalls. */
#define STATS_SYNC_LIMIT 65536
#define ATTRIBUTE_MAX_ITEMS 16
#define MAX_LISTED_TENSORS 500
/* Inputs, outputs and users listed before "… N more". */
#define MAX_LISTED_ROWS 200

struct _GraftNodeSidebar
{
  GtkWidget parent_instance;

  GtkWidget *scroller;
  GtkLabel *title_label;
  GtkLabel *subtitle_label;
  GtkBox *sections;

  GCancellable *stats_cancellable;
  guint pending_stats;
  GraftInference *inference;   /* owned, may be NULL: types the file does not declare */
  GraftModel *shown_model;  /* weak: the model of the details shown */

  /* Editing: each field of the details shown by its key ("name",
   * "attribute:alpha", "add-attribute") → EditField; the last edit asked
   * for, so that a refusal lands beside its field once the window has
   * shown the details again. */
  GHashTable *edit_fields;
  char *pending_key;
  char *pending_text;
  char *pending_error;    /* the refusal, shown again while the same details are */
  char *pending_target;   /* the node or value name the details show */
};

typedef struct {
  GtkEditable *entry;
  GtkLabel *error_label;
} EditField;

G_DEFINE_FINAL_TYPE (GraftNodeSidebar, graft_node_sidebar, GTK_TYPE_WIDGET)

enum {
  SIGNAL_ITEM_ACTIVATED,
  SIGNAL_SAVE_TENSOR,
  N_SIGNALS
};

static guint signals[N_SIGNALS];

enum {
  PROP_0,
  PROP_PENDING_STATS,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

typedef struct {
  GraftNodeSidebar *self;   /* weak: checked through the cancellable */
  GraftModel *model;        /* keeps the tensor's mapped data alive */
  GraftTensor *tensor;
  GtkLabel *label;
  GtkLabel *values_label;
  GraftTensorStats stats;
  char *values;             /* the first values, as the worker read them */
} StatsJob;

static void
stats_job_free (StatsJob *job)
{
  g_clear_object (&job->model);
  g_clear_pointer (&job->tensor, graft_tensor_unref);
  g_clear_object (&job->label);
  g_clear_object (&job->values_label);
  g_free (job->values);
  g_free (job);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (StatsJob, stats_job_free)

static void
clear_sections (GraftNodeSidebar *self)
{
  GtkWidget *child;

  g_hash_table_remove_all (self->edit_fields);
  while ((child = gtk_widget_get_first_child (GTK_WIDGET (self->sections))) != NULL)
    gtk_box_remove (self->sections, child);

  g_cancellable_cancel (self->stats_cancellable);
  g_clear_object (&self->stats_cancellable);
  self->stats_cancellable = g_cancellable_new ();
  self->pending_stats = 0;
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_PENDING_STATS]);
}

static void
set_header (GraftNodeSidebar *self, const char *title, const char *subtitle)
{
  gtk_label_set_text (self->title_label, title);
  gtk_label_set_text (self->subtitle_label, subtitle != NULL ? subtitle : "");
  gtk_widget_set_visible (GTK_WIDGET (self->subtitle_label), subtitle != NULL && subtitle[0] != '\0');
}

static void
on_row_activated (GtkListBox *list, GtkListBoxRow *row, GraftNodeSidebar *self)
{
  gpointer node = g_object_get_data (G_OBJECT (row), "graft-node");
  gpointer value = g_object_get_data (G_OBJECT (row), "graft-value");
  GraftTensor *tensor = g_object_get_data (G_OBJECT (row), "graft-tensor");

  /* A model's own tensors (a state_dict has nothing else) open here. */
  if (tensor != NULL && self->shown_model != NULL)
    graft_node_sidebar_show_tensor (self, self->shown_model, tensor);
  else if (g_object_get_data (G_OBJECT (row), "graft-model-details") != NULL && self->shown_model != NULL)
    graft_node_sidebar_show_model (self, self->shown_model);
  else if (node != NULL || value != NULL)
    g_signal_emit (self, signals[SIGNAL_ITEM_ACTIVATED], 0, node, value);
}

static GtkListBox *
add_section (GraftNodeSidebar *self, const char *heading)
{
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 6);
  GtkWidget *label = gtk_label_new (heading);
  GtkWidget *list = gtk_list_box_new ();

  gtk_label_set_xalign (GTK_LABEL (label), 0);
  gtk_widget_add_css_class (label, "heading");
  gtk_list_box_set_selection_mode (GTK_LIST_BOX (list), GTK_SELECTION_NONE);
  gtk_widget_add_css_class (list, "boxed-list");
  g_signal_connect (list, "row-activated", G_CALLBACK (on_row_activated), self);

  gtk_box_append (GTK_BOX (box), label);
  gtk_box_append (GTK_BOX (box), list);
  gtk_box_append (self->sections, box);
  return GTK_LIST_BOX (list);
}

static GtkWidget *
make_label (const char *text, const char *css_class, gboolean selectable)
{
  GtkWidget *label = gtk_label_new (text);

  gtk_label_set_xalign (GTK_LABEL (label), 0);
  gtk_label_set_wrap (GTK_LABEL (label), TRUE);
  gtk_label_set_wrap_mode (GTK_LABEL (label), PANGO_WRAP_WORD_CHAR);
  gtk_label_set_selectable (GTK_LABEL (label), selectable);
  /* Selectable by the pointer; Tab goes on to the controls. */
  gtk_widget_set_focusable (label, FALSE);
  if (css_class != NULL)
    gtk_widget_add_css_class (label, css_class);
  return label;
}

/* A row with a heading above any widget. */
static void
add_widget_row (GtkListBox *list, const char *name, GtkWidget *widget)
{
  GtkWidget *row = gtk_list_box_row_new ();
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 2);

  gtk_widget_add_css_class (box, "property-row");
  gtk_box_append (GTK_BOX (box), make_label (name, "property-name", FALSE));
  gtk_box_append (GTK_BOX (box), widget);
  gtk_list_box_row_set_child (GTK_LIST_BOX_ROW (row), box);
  gtk_list_box_row_set_activatable (GTK_LIST_BOX_ROW (row), FALSE);
  gtk_list_box_append (list, row);
}

/* A row shows the name above the value: a narrow pane never has to cut
 * either of them. Returns the value label. */
static GtkLabel *
add_row (GtkListBox *list, const char *name, const char *value)
{
  GtkWidget *value_label = make_label (value != NULL && value[0] != '\0' ? value : "—",
                                       "property-value", TRUE);

  add_widget_row (list, name, value_label);
  return GTK_LABEL (value_label);
}

/* A row that jumps to a node or a value when activated. */
static void
add_link_row (GtkListBox *list, const char *title, const char *subtitle,
              GraftNode *node, GraftValue *value)
{
  GtkWidget *row = gtk_list_box_row_new ();
  GtkWidget *hbox = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 6);
  GtkWidget *vbox = gtk_box_new (GTK_ORIENTATION_VERTICAL, 2);
  GtkWidget *arrow = gtk_image_new_from_icon_name ("go-next-symbolic");

  gtk_widget_add_css_class (hbox, "property-row");
  gtk_widget_set_hexpand (vbox, TRUE);
  gtk_box_append (GTK_BOX (vbox), make_label (title, "property-link", FALSE));
  if (subtitle != NULL)
    gtk_box_append (GTK_BOX (vbox), make_label (subtitle, "property-name", FALSE));
  gtk_box_append (GTK_BOX (hbox), vbox);
  gtk_box_append (GTK_BOX (hbox), arrow);
  gtk_list_box_row_set_child (GTK_LIST_BOX_ROW (row), hbox);
  g_object_set_data (G_OBJECT (row), "graft-node", node);
  g_object_set_data (G_OBJECT (row), "graft-value", value);
  gtk_list_box_append (list, row);
}

static void
add_row_printf (GtkListBox *list, const char *name, const char *format, ...) G_GNUC_PRINTF (3, 4);

static void
add_row_printf (GtkListBox *list, const char *name, const char *format, ...)
{
  g_autofree char *text = NULL;
  va_list args;

  va_start (args, format);
  text = g_strdup_vprintf (format, args);
  va_end (args);
  add_row (list, name, text);
}

static void
stats_thread (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
  StatsJob *job = task_data;
  GError *error = NULL;

  /* Loading external data is part of the wait too. */
  if (graft_tensor_get_data (job->tensor, &error) != NULL)
    job->values = graft_tensor_values_preview (job->tensor);
  if (error == NULL && graft_tensor_compute_stats_cancellable (job->tensor, &job->stats, cancellable, &error))
    g_task_return_boolean (task, TRUE);
  else
    g_task_return_error (task, error);
}

/* On the UI thread, cancelled or not: the job (and its labels and model)
 * is freed here, never with the task, which GIO may finalize on its
 * worker after this ran — the labels' last reference could then go on
 * that thread (a window closed, or the sidebar cleared, meanwhile). */
static void
stats_done (GObject *source, GAsyncResult *result, gpointer user_data)
{
  g_autoptr(StatsJob) job = user_data;
  GCancellable *cancellable = g_task_get_cancellable (G_TASK (result));
  g_autoptr(GError) error = NULL;
  g_autofree char *text = NULL;

  if (g_cancellable_is_cancelled (cancellable))
    return;  /* the sidebar shows something else now */

  if (g_task_propagate_boolean (G_TASK (result), &error))
    text = graft_tensor_stats_format (&job->stats, job->tensor);
  else
    text = g_strdup (error->message);
  gtk_label_set_text (job->label, text);
  gtk_label_set_text (job->values_label, job->values != NULL ? job->values : text);
  job->self->pending_stats--;
  g_object_notify_by_pspec (G_OBJECT (job->self), properties[PROP_PENDING_STATS]);
}

/* Values and statistics at once for small tensors already in memory;
 * from a worker (showing "computing…") for big ones and external data,
 * so that clicking a 100 MB embedding never stalls the window. */
static void
add_values_rows (GraftNodeSidebar *self, GtkListBox *list, GraftModel *model, GraftTensor *tensor)
{
  gint64 numel = graft_tensor_get_numel (tensor);

  if (numel <= STATS_SYNC_LIMIT && !(graft_tensor_is_external (tensor) && tensor->data == NULL))
    {
      GraftTensorStats stats;
      g_autoptr(GError) error = NULL;
      g_autofree char *text = NULL;

      if (graft_tensor_get_data (tensor, &error) == NULL)
        {
          add_row (list, "Values", error->message);
          return;
        }
      if (numel <= GRAFT_TENSOR_TABLE_MAX_ELEMENTS)
        add_widget_row (list, "Values", graft_tensor_values_table_new (tensor));
      else
        {
          g_autofree char *preview = graft_tensor_values_preview (tensor);

          gtk_widget_add_css_class (GTK_WIDGET (add_row (list, "Values", preview)), "monospace");
        }
      if (graft_tensor_compute_stats (tensor, &stats, &error))
        text = graft_tensor_stats_format (&stats, tensor);
      else
        text = g_strdup (error->message);
      add_row (list, "Statistics", text);
    }
  else
    {
      g_autoptr(GTask) task = NULL;
      StatsJob *job = g_new0 (StatsJob, 1);

      job->values_label = g_object_ref (add_row (list, "Values", "computing…"));
      gtk_widget_add_css_class (GTK_WIDGET (job->values_label), "monospace");
      job->label = g_object_ref (add_row (list, "Statistics", "computing…"));
      job->self = self;
      job->model = model != NULL ? g_object_ref (model) : NULL;
      job->tensor = graft_tensor_ref (tensor);
      task = g_task_new (NULL, self->stats_cancellable, stats_done, job);
      g_task_set_task_data (task, job, NULL);
      self->pending_stats++;
      g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_PENDING_STATS]);
      g_task_run_in_thread (task, stats_thread);
    }
}

static void
on_save_tensor_clicked (GtkButton *button, GraftNodeSidebar *self)
{
  GraftTensor *tensor = g_object_get_data (G_OBJECT (button), "graft-tensor");

  g_signal_emit (self, signals[SIGNAL_SAVE_TENSOR], 0, tensor);
}

static void
add_save_row (GraftNodeSidebar *self, GtkListBox *list, GraftTensor *tensor)
{
  GtkWidget *row = gtk_list_box_row_new ();
  GtkWidget *button = gtk_button_new_with_mnemonic ("_Save as .npy…");

  gtk_widget_set_halign (button, GTK_ALIGN_START);
  gtk_widget_set_margin_top (button, 6);
  gtk_widget_set_margin_bottom (button, 6);
  gtk_widget_set_margin_start (button, 6);
  gtk_widget_set_tooltip_text (button, "Write this tensor to a NumPy file");
  gtk_widget_set_name (button, "save-tensor-button");
  /* The row (and so the button) lives no longer than the tensor shown. */
  g_object_set_data_full (G_OBJECT (button), "graft-tensor", graft_tensor_ref (tensor),
                          (GDestroyNotify) graft_tensor_unref);
  g_signal_connect (button, "clicked", G_CALLBACK (on_save_tensor_clicked), self);
  gtk_list_box_row_set_child (GTK_LIST_BOX_ROW (row), button);
  gtk_list_box_row_set_activatable (GTK_LIST_BOX_ROW (row), FALSE);
  gtk_list_box_append (list, row);
}

static void
add_tensor_rows (GraftNodeSidebar *self, GtkListBox *list, GraftModel *model, GraftTensor *tensor)
{
  g_autofree char *description = graft_tensor_describe (tensor);
  g_autofree char *size = g_format_size (graft_tensor_get_nbytes (tensor));

  add_row (list, "Tensor", description);
  add_row (list, "Size", size);
  if (graft_tensor_is_external (tensor))
    add_row_printf (list, "External data", "%s at byte %" G_GUINT64_FORMAT,
                    graft_external_file_get_path (tensor->external_file), tensor->external_offset);
  if (tensor->dtype != GRAFT_DTYPE_STRING)
    add_values_rows (self, list, model, tensor);
  add_save_row (self, list, tensor);
}

/* Rows that jump to each value. Graph inputs that are initializers (old
 * ONNX files list every weight as an input) are counted, not listed.
 * @node, when the values are its inputs, names each one's argument. */
static void
add_value_links (GraftNodeSidebar *self, const char *heading, GPtrArray *values, gboolean skip_initializers,
                 GraftNode *node)
{
  GtkListBox *list = NULL;
  guint n_skipped = 0, n_listed = 0;

  if (values == NULL || values->len == 0)
    return;
  for (guint i = 0; i < values->len; i++)
    {
      GraftValue *value = g_ptr_array_index (values, i);
      g_autofree char *type_text = NULL;
      g_autofree char *subtitle = NULL;
      const char *argument;

      if (value != NULL && value->initializer != NULL && skip_initializers)
        {
          n_skipped++;
          continue;
        }
      if (list == NULL)
        list = add_section (self, heading);
      if (n_listed++ == MAX_LISTED_ROWS)
        {
          add_row_printf (list, "…", "%u more", values->len - i - n_skipped);
          break;
        }
      if (value == NULL)
        {
          add_row (list, "(omitted optional)", NULL);
          continue;
        }
      type_text = graft_value_format_type (value, self->inference);
      argument = node != NULL ? graft_node_get_input_argument_name (node, i) : NULL;
      if (value->initializer != NULL)
        subtitle = g_strdup_printf ("%s%sinitializer · %s", argument ? argument : "", argument ? " · " : "", type_text);
      else if (argument != NULL)
        subtitle = g_strdup_printf ("%s · %s", argument, type_text);
      else
        subtitle = g_steal_pointer (&type_text);
      add_link_row (list, value->name, subtitle, NULL, value);
    }
  if (n_skipped > 0)
    {
      if (list == NULL)
        list = add_section (self, heading);
      add_row_printf (list, "Initializers", "%u more inputs are initializers (weights)", n_skipped);
    }
}

static char *
format_producer (GraftModel *model)
{
  const char *name = graft_model_get_producer_name (model);
  const char *version = graft_model_get_producer_version (model);

  if (name == NULL || name[0] == '\0')
    return NULL;
  if (version == NULL || version[0] == '\0')
    return g_strdup (name);
  return g_strdup_printf ("%s %s", name, version);
}

static void
add_model_section (GraftNodeSidebar *self, GraftModel *model)
{
  GtkListBox *list = add_section (self, "Model");
  g_autofree char *producer = format_producer (model);
  const char *text;

  add_row (list, "Format", graft_model_format_to_string (graft_model_get_format (model)));
  if (producer != NULL)
    add_row (list, "Producer", producer);
  if (graft_model_get_format (model) == GRAFT_MODEL_FORMAT_ONNX)
    add_row_printf (list, "IR version", "%" G_GINT64_FORMAT, graft_model_get_ir_version (model));
  if ((text = graft_model_get_domain (model)) != NULL && text[0] != '\0')
    add_row (list, "Domain", text);
  if (graft_model_get_model_version (model) > 0)
    add_row_printf (list, "Model version", "%" G_GINT64_FORMAT, graft_model_get_model_version (model));
  if ((text = graft_model_get_path (model)) != NULL)
    add_row (list, "File", text);
  if ((text = graft_model_get_doc_string (model)) != NULL && text[0] != '\0')
    add_row (list, "Description", text);
}

static void
add_opsets_section (GraftNodeSidebar *self, GraftModel *model)
{
  GPtrArray *domains = graft_model_get_opset_domains (model);
  GtkListBox *list;

  /* A TorchScript archive's only "opset" is its format version, which the
   * subtitle already gives. */
  if (domains == NULL || domains->len == 0 || graft_model_get_format (model) == GRAFT_MODEL_FORMAT_TORCHSCRIPT)
    return;
  list = add_section (self, "Opset Imports");
  for (guint i = 0; i < domains->len; i++)
    {
      const char *domain = g_ptr_array_index (domains, i);

      add_row_printf (list, domain, "%" G_GINT64_FORMAT, graft_model_get_opset (model, domain));
    }
}

static void
add_metadata_section (GraftNodeSidebar *self, GraftModel *model)
{
  guint n = graft_model_get_n_metadata (model);
  GtkListBox *list;

  if (n == 0)
    return;
  list = add_section (self, "Metadata");
  for (guint i = 0; i < n; i++)
    {
      const char *key, *value;

      graft_model_get_metadata (model, i, &key, &value);
      add_row (list, key, value);
    }
}

/* torch.export's range_constraints: every symbolic dim with its range. */
static void
add_dim_ranges_section (GraftNodeSidebar *self, GraftModel *model)
{
  g_autoptr(GPtrArray) symbols = graft_model_list_dim_ranges (model);
  GtkListBox *list;

  if (symbols->len == 0)
    return;
  list = add_section (self, "Dynamic Dims");
  for (guint i = 0; i < symbols->len; i++)
    {
      g_autofree char *range = graft_model_describe_dim_range (model, g_ptr_array_index (symbols, i));

      add_row (list, g_ptr_array_index (symbols, i), range);
    }
}

static void
add_graph_section (GraftNodeSidebar *self, GraftGraph *graph)
{
  GtkListBox *list = add_section (self, "Graph");
  g_autofree char *name = graft_graph_format_name (graph);

  add_row (list, "Name", name);
  guint n_all = graft_graph_count_nodes_recursive (graph);

  /* "with subgraphs" only when there are some (If/Loop bodies, functions). */
  if (n_all > graph->nodes->len)
    add_row_printf (list, "Nodes", "%u (%u with subgraphs)", graph->nodes->len, n_all);
  else
    add_row_printf (list, "Nodes", "%u", graph->nodes->len);
  add_row_printf (list, "Initializers", "%u", graph->initializers->len);
  if (graph->doc_string != NULL && graph->doc_string[0] != '\0')
    add_row (list, "Description", graph->doc_string);
}

static void
add_weights_section (GraftNodeSidebar *self, GraftModel *model)
{
  GPtrArray *tensors = graft_model_get_tensors (model);
  GtkListBox *list;

  if (tensors == NULL || tensors->len == 0)
    return;
  list = add_section (self, "Tensors");
  for (guint i = 0; i < tensors->len && i < MAX_LISTED_TENSORS; i++)
    {
      GraftTensor *tensor = g_ptr_array_index (tensors, i);
      g_autofree char *description = graft_tensor_describe (tensor);

      add_link_row (list, tensor->name != NULL ? tensor->name : "(unnamed)", description, NULL, NULL);
      g_object_set_data_full (G_OBJECT (gtk_widget_get_last_child (GTK_WIDGET (list))), "graft-tensor",
                              graft_tensor_ref (tensor), (GDestroyNotify) graft_tensor_unref);
    }
  if (tensors->len > MAX_LISTED_TENSORS)
    add_row_printf (list, "…", "%u more tensors", tensors->len - MAX_LISTED_TENSORS);
}

/* Details of another model start at the top, not where the last model's
 * were scrolled to. */
static void
note_shown_model (GraftNodeSidebar *self, GraftModel *model)
{
  if (self->shown_model == model)
    return;
  g_set_weak_pointer (&self->shown_model, model);
  gtk_adjustment_set_value (gtk_scrolled_window_get_vadjustment (GTK_SCROLLED_WINDOW (self->scroller)), 0);
}

void
graft_node_sidebar_show_model (GraftNodeSidebar *self, GraftModel *model)
{
  GraftGraph *graph;
  const char *path;
  g_autofree char *basename = NULL;
  g_autofree char *description = NULL;

  g_return_if_fail (GRAFT_IS_NODE_SIDEBAR (self));
  g_return_if_fail (GRAFT_IS_MODEL (model));

  clear_sections (self);
  note_shown_model (self, model);
  path = graft_model_get_path (model);
  basename = path != NULL ? g_path_get_basename (path) : g_strdup ("Model");
  description = graft_model_describe (model);
  set_header (self, basename, description);

  add_model_section (self, model);
  add_opsets_section (self, model);
  add_metadata_section (self, model);
  add_dim_ranges_section (self, model);
  graph = graft_model_get_graph (model);
  if (graph != NULL)
    {
      add_value_links (self, "Inputs", graph->inputs, TRUE, NULL);
      add_value_links (self, "Outputs", graph->outputs, FALSE, NULL);
      add_graph_section (self, graph);
    }
  add_weights_section (self, model);
}

/* "torch/nn/modules/conv.py:560" rather than the whole path of the
 * site-packages it was traced from, as Netron shows it. */
static const char *
short_python_path (const char *path)
{
  const char *folders[] = { "site-packages/", "dist-packages/" };

  for (guint i = 0; i < G_N_ELEMENTS (folders); i++)
    {
      const char *found = g_strrstr (path, folders[i]);

      if (found != NULL && found[strlen (folders[i])] != '\0')
        return found + strlen (folders[i]);
    }
  return path;
}

/* ---------- editing the node or value shown ---------- */

/* Asks the window for edit id (win.sidebar-edit): the window applies it
 * through the edit history, as the context menu does. */
static void
request_edit (GraftNodeSidebar *self, GtkWidget *source, const char *key, const char *text, const char *id,
              GVariant *params)
{
  g_free (self->pending_key);
  g_free (self->pending_text);
  g_clear_pointer (&self->pending_error, g_free);
  self->pending_key = g_strdup (key);
  self->pending_text = g_strdup (text);
  gtk_widget_activate_action (source, "win.sidebar-edit", "(s@a{sv})", id, params);
}

/* The details now show target: a refusal for other details is dropped,
 * one for these (shown again when the check lands, say) stays. */
static void
note_shown_target (GraftNodeSidebar *self, const char *target)
{
  if (g_strcmp0 (self->pending_target, target) == 0)
    return;
  g_free (self->pending_target);
  self->pending_target = g_strdup (target);
  g_clear_pointer (&self->pending_error, g_free);
}

static void
show_pending_error (GraftNodeSidebar *self)
{
  EditField *field = self->pending_key && self->pending_error
                     ? g_hash_table_lookup (self->edit_fields, self->pending_key) : NULL;

  if (field == NULL)
    return;
  /* What the user typed stays there to be corrected. */
  if (self->pending_text != NULL && field->entry != NULL)
    gtk_editable_set_text (field->entry, self->pending_text);
  if (field->entry != NULL)
    {
      gtk_widget_add_css_class (GTK_WIDGET (field->entry), "error");
      gtk_widget_grab_focus (GTK_WIDGET (field->entry));
    }
  gtk_label_set_text (field->error_label, self->pending_error);
  gtk_widget_set_visible (GTK_WIDGET (field->error_label), TRUE);
}

void
graft_node_sidebar_show_edit_error (GraftNodeSidebar *self, const char *message)
{
  g_return_if_fail (GRAFT_IS_NODE_SIDEBAR (self));

  g_free (self->pending_error);
  self->pending_error = g_strdup (message);
  show_pending_error (self);
}

/* A row with a caption, an entry (widget name key, for scripts and tests),
 * optional buttons after it and a hidden error label below. */
static GtkWidget *
add_edit_field (GraftNodeSidebar *self, GtkListBox *list, const char *key, const char *caption, const char *text,
                GtkWidget **entry_out)
{
  GtkWidget *row = gtk_list_box_row_new ();
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 4);
  GtkWidget *controls = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 6);
  GtkWidget *entry = gtk_entry_new ();
  GtkWidget *error_label = make_label ("", "error", TRUE);
  EditField *field = g_new0 (EditField, 1);

  gtk_widget_add_css_class (box, "property-row");
  gtk_box_append (GTK_BOX (box), make_label (caption, "property-name", FALSE));
  gtk_widget_set_name (entry, key);
  gtk_widget_set_hexpand (entry, TRUE);
  gtk_editable_set_width_chars (GTK_EDITABLE (entry), 6);
  gtk_editable_set_text (GTK_EDITABLE (entry), text ? text : "");
  gtk_box_append (GTK_BOX (controls), entry);
  gtk_box_append (GTK_BOX (box), controls);
  gtk_widget_set_visible (error_label, FALSE);
  gtk_box_append (GTK_BOX (box), error_label);
  gtk_list_box_row_set_child (GTK_LIST_BOX_ROW (row), box);
  gtk_list_box_row_set_activatable (GTK_LIST_BOX_ROW (row), FALSE);
  gtk_list_box_append (list, row);
  field->entry = GTK_EDITABLE (entry);
  field->error_label = GTK_LABEL (error_label);
  g_hash_table_insert (self->edit_fields, g_strdup (key), field);
  *entry_out = entry;
  return controls;
}

static GtkWidget *
add_icon_button (GtkWidget *controls, const char *icon, const char *tooltip)
{
  GtkWidget *button = gtk_button_new_from_icon_name (icon);

  gtk_widget_set_tooltip_text (button, tooltip);
  gtk_widget_add_css_class (button, "flat");
  gtk_widget_set_valign (button, GTK_ALIGN_CENTER);
  gtk_box_append (GTK_BOX (controls), button);
  return button;
}

static const char *
edited_name (GtkWidget *widget)
{
  return g_object_get_data (G_OBJECT (widget), "graft-edited");
}

/* Enter in a name entry: rename-node or rename-value. */
static void
on_rename_activate (GtkEntry *entry, GraftNodeSidebar *self)
{
  const char *id = g_object_get_data (G_OBJECT (entry), "graft-operation");
  const char *key = g_str_equal (id, "rename-node") ? "node" : "value";
  g_autofree char *to = g_strstrip (g_strdup (gtk_editable_get_text (GTK_EDITABLE (entry))));

  if (*to == '\0' || g_str_equal (to, edited_name (GTK_WIDGET (entry))))
    return;
  request_edit (self, GTK_WIDGET (entry), gtk_widget_get_name (GTK_WIDGET (entry)), to, id,
                graft_edit_params_new (key, g_variant_new_string (edited_name (GTK_WIDGET (entry))),
                                       "to", g_variant_new_string (to), NULL));
}

static GtkWidget *
add_rename_field (GraftNodeSidebar *self, GtkListBox *list, const char *operation, const char *name)
{
  GtkWidget *entry;

  add_edit_field (self, list, "name", "Name · Enter renames", name, &entry);
  g_object_set_data_full (G_OBJECT (entry), "graft-edited", g_strdup (name), g_free);
  g_object_set_data (G_OBJECT (entry), "graft-operation", (gpointer) operation);
  g_signal_connect (entry, "activate", G_CALLBACK (on_rename_activate), self);
  return entry;
}

/* The text an attribute is edited as: exact values, whole lists. NULL
 * for types that cannot be typed in (tensors, graphs) or very long lists. */
static char *
attribute_edit_text (const GraftAttribute *attribute)
{
  GString *text;

  switch (attribute->type)
    {
    case GRAFT_ATTR_INT:
      return g_strdup_printf ("%" G_GINT64_FORMAT, attribute->i);
    case GRAFT_ATTR_FLOAT:
      return g_strdup_printf ("%.9g", attribute->f);
    case GRAFT_ATTR_STRING:
      return graft_attribute_dup_string (attribute);
    case GRAFT_ATTR_INTS:
    case GRAFT_ATTR_FLOATS:
      {
        guint n = attribute->type == GRAFT_ATTR_INTS ? attribute->ints->len : attribute->floats->len;

        if (n > 4096)
          return NULL;
        text = g_string_new ("[");
        for (guint i = 0; i < n; i++)
          {
            if (attribute->type == GRAFT_ATTR_INTS)
              g_string_append_printf (text, "%s%" G_GINT64_FORMAT, i ? ", " : "",
                                      g_array_index (attribute->ints, gint64, i));
            else
              g_string_append_printf (text, "%s%.9g", i ? ", " : "", g_array_index (attribute->floats, double, i));
          }
        g_string_append_c (text, ']');
        return g_string_free (text, FALSE);
      }
    default:
      return NULL;
    }
}

static void
on_attribute_activate (GtkEntry *entry, GraftNodeSidebar *self)
{
  const char *node = edited_name (GTK_WIDGET (entry));
  const char *name = g_object_get_data (G_OBJECT (entry), "graft-attribute");
  const char *text = gtk_editable_get_text (GTK_EDITABLE (entry));

  request_edit (self, GTK_WIDGET (entry), gtk_widget_get_name (GTK_WIDGET (entry)), text, "set-attribute",
                graft_edit_params_new ("node", g_variant_new_string (node), "name", g_variant_new_string (name),
                                       "value", g_variant_new_string (text), NULL));
}

static void
on_remove_attribute_clicked (GtkButton *button, GraftNodeSidebar *self)
{
  const char *key = g_object_get_data (G_OBJECT (button), "graft-key");

  request_edit (self, GTK_WIDGET (button), key, NULL, "remove-attribute",
                graft_edit_params_new ("node", g_variant_new_string (edited_name (GTK_WIDGET (button))),
                                       "name", g_variant_new_string (g_object_get_data (G_OBJECT (button),
                                                                                        "graft-attribute")),
                                       NULL));
}

/* Adding one: the schema's attributes the node does not have yet, or any
 * name (NAME=VALUE) for ops without an ONNX schema. */
static void
on_add_attribute_activate (GtkEntry *entry, GraftNodeSidebar *self)
{
  GtkDropDown *names = g_object_get_data (G_OBJECT (entry), "graft-names");
  g_autofree char *text = g_strdup (gtk_editable_get_text (GTK_EDITABLE (entry)));
  const char *value = text;
  g_autofree char *name = NULL;

  if (names != NULL && gtk_drop_down_get_selected_item (names) != NULL)
    name = g_strdup (gtk_string_object_get_string (gtk_drop_down_get_selected_item (names)));
  else if (strchr (text, '=') != NULL)
    {
      name = g_strstrip (g_strndup (text, strchr (text, '=') - text));
      value = strchr (text, '=') + 1;
    }
  if (name == NULL || *name == '\0' || *value == '\0')
    return;
  /* "alpha (float)" in the list → "alpha" */
  if (strchr (name, ' ') != NULL)
    *strchr (name, ' ') = '\0';
  request_edit (self, GTK_WIDGET (entry), "add-attribute", text, "set-attribute",
                graft_edit_params_new ("node", g_variant_new_string (edited_name (GTK_WIDGET (entry))),
                                       "name", g_variant_new_string (name), "value", g_variant_new_string (value),
                                       NULL));
}

/* The attributes node's schema has and it does not set, "name (type)";
 * *schema gets the schema (NULL for an op without one: any name may be
 * added). */
static GStrv
attributes_to_add (GraftNodeSidebar *self, GraftNode *node, const GraftOnnxSchema **schema_out)
{
  const GraftOnnxSchema *schema = self->shown_model
    ? graft_onnx_schema_lookup (node->domain, node->op_type, graft_model_get_opset (self->shown_model, node->domain))
    : NULL;
  g_autoptr(GStrvBuilder) missing = g_strv_builder_new ();

  for (guint i = 0; schema != NULL && i < schema->n_attributes; i++)
    {
      const GraftOnnxAttributeSchema *attribute = &schema->attributes[i];
      if (graft_node_get_attribute (node, attribute->name) == NULL && attribute->type != GRAFT_ATTR_UNDEFINED
          && attribute->type != GRAFT_ATTR_TENSOR && attribute->type != GRAFT_ATTR_GRAPH)
        {
          g_autofree char *choice = g_strdup_printf ("%s (%s)", attribute->name,
                                                     graft_attr_type_to_string (attribute->type));
          g_strv_builder_add (missing, choice);
        }
    }
  *schema_out = schema;
  return g_strv_builder_end (missing);
}

static void
add_new_attribute_field (GraftNodeSidebar *self, GtkListBox *list, GraftNode *node)
{
  const GraftOnnxSchema *schema = NULL;
  g_auto(GStrv) choices = attributes_to_add (self, node, &schema);
  GtkWidget *entry, *controls, *button;
  GtkWidget *names = NULL;

  if (schema != NULL && choices[0] == NULL)
    return;   /* every attribute the op has is set */
  controls = add_edit_field (self, list, "add-attribute",
                             schema ? "Add attribute · pick one, type its value, Enter"
                                    : "Add attribute · NAME=[TYPE:]VALUE, Enter", NULL, &entry);
  if (schema != NULL)
    {
      names = gtk_drop_down_new_from_strings ((const char *const *) choices);
      gtk_widget_set_name (names, "add-attribute-name");
      gtk_box_prepend (GTK_BOX (controls), names);
      gtk_entry_set_placeholder_text (GTK_ENTRY (entry), "value");
      g_object_set_data (G_OBJECT (entry), "graft-names", names);
    }
  g_object_set_data_full (G_OBJECT (entry), "graft-edited", g_strdup (node->name), g_free);
  g_signal_connect (entry, "activate", G_CALLBACK (on_add_attribute_activate), self);
  button = add_icon_button (controls, "list-add-symbolic", "Add the attribute");
  g_signal_connect_swapped (button, "clicked", G_CALLBACK (gtk_widget_activate), entry);
}

static void
add_node_section (GraftNodeSidebar *self, GraftNode *node)
{
  GtkListBox *list = add_section (self, "Node");
  g_autofree char *where = graft_graph_format_location (node->graph);

  add_row (list, "Operator", node->op);
  if (node->name != NULL && node->name[0] != '\0')
    add_rename_field (self, list, "rename-node", node->name);
  else
    add_row (list, "Name", node->name != NULL && node->name[0] != '\0' ? node->name : "(unnamed)");
  if (node->group != NULL && node->group->path != NULL && node->group->path[0] != '\0')
    {
      if (node->group->class_name != NULL)
        add_row_printf (list, "Group", "%s (%s)", node->group->path, node->group->class_name);
      else
        add_row (list, "Group", node->group->path);
    }
  add_row (list, "Graph", where);
  if (node->python_source != NULL)
    add_row (list, "Python Source", short_python_path (node->python_source));
  if (node->source_range != NULL)
    add_row (list, node->python_source != NULL ? "Serialised Code" : "Source", node->source_range);
  if (node->doc_string != NULL && node->doc_string[0] != '\0')
    add_row (list, "Description", node->doc_string);
}

static void
add_attributes_section (GraftNodeSidebar *self, GraftNode *node)
{
  GtkListBox *list;
  /* Edits name nodes of the main graph (the window scopes them to the
   * graph shown); TorchScript argument names are not ONNX attributes. */
  gboolean editable = node->name != NULL && node->name[0] != '\0' && self->shown_model != NULL
                      && graft_model_get_opset (self->shown_model, node->domain) >= 0;

  if (node->attributes->len == 0 && !editable)
    return;
  /* No heading over nothing: an op without attributes (Div, Relu). */
  if (node->attributes->len == 0)
    {
      const GraftOnnxSchema *schema = NULL;
      g_auto(GStrv) choices = attributes_to_add (self, node, &schema);

      if (schema != NULL && choices[0] == NULL)
        return;
    }
  list = add_section (self, "Attributes");
  for (guint i = 0; i < node->attributes->len; i++)
    {
      GraftAttribute *attribute = g_ptr_array_index (node->attributes, i);
      g_autofree char *value = graft_attribute_format_value (attribute, ATTRIBUTE_MAX_ITEMS);
      g_autofree char *text = editable ? attribute_edit_text (attribute) : NULL;
      const char *argument = graft_node_get_attribute_argument_name (node, attribute->name);
      g_autofree char *key = NULL, *caption = NULL;
      GtkWidget *entry, *controls, *button;

      /* Argument names (stride, padding) are TorchScript's and torch.export's, not ONNX attributes. */
      if (text == NULL || argument != NULL)
        {
          add_row (list, argument ? argument : attribute->name, value);
          continue;
        }
      key = g_strdup_printf ("attribute:%s", attribute->name);
      caption = g_strdup_printf ("%s · %s", attribute->name, graft_attr_type_to_string (attribute->type));
      controls = add_edit_field (self, list, key, caption, text, &entry);
      g_object_set_data_full (G_OBJECT (entry), "graft-edited", g_strdup (node->name), g_free);
      g_object_set_data_full (G_OBJECT (entry), "graft-attribute", g_strdup (attribute->name), g_free);
      g_signal_connect (entry, "activate", G_CALLBACK (on_attribute_activate), self);
      button = add_icon_button (controls, "user-trash-symbolic", "Remove this attribute");
      g_object_set_data_full (G_OBJECT (button), "graft-edited", g_strdup (node->name), g_free);
      g_object_set_data_full (G_OBJECT (button), "graft-attribute", g_strdup (attribute->name), g_free);
      g_object_set_data_full (G_OBJECT (button), "graft-key", g_strdup (key), g_free);
      g_signal_connect (button, "clicked", G_CALLBACK (on_remove_attribute_clicked), self);
    }
  if (editable)
    add_new_attribute_field (self, list, node);
}

/* The node's metadata_props: torch's dynamo exporter records the module
 * path, classes and Python stack trace there. */
static void
add_node_metadata_section (GraftNodeSidebar *self, GraftNode *node)
{
  GtkListBox *list;

  if (graft_node_get_n_metadata (node) == 0)
    return;
  list = add_section (self, "Metadata");
  for (guint i = 0; i < graft_node_get_n_metadata (node); i++)
    add_row (list, g_ptr_array_index (node->metadata_keys, i), g_ptr_array_index (node->metadata_values, i));
}

static void
add_initializers_section (GraftNodeSidebar *self, GraftModel *model, GraftNode *node)
{
  for (guint i = 0; i < node->inputs->len; i++)
    {
      GraftValue *value = g_ptr_array_index (node->inputs, i);
      g_autofree char *heading = NULL;

      if (value == NULL || value->initializer == NULL)
        continue;
      heading = g_strdup_printf ("Initializer “%s”", value->name);
      add_tensor_rows (self, add_section (self, heading), model, value->initializer);
    }
}

static void
add_subgraphs_section (GraftNodeSidebar *self, GraftNode *node)
{
  g_autoptr(GPtrArray) subgraphs = graft_node_get_subgraphs (node);
  GtkListBox *list;

  if (subgraphs == NULL || subgraphs->len == 0)
    return;
  list = add_section (self, "Subgraphs");
  for (guint i = 0; i < subgraphs->len; i++)
    {
      GraftGraph *graph = g_ptr_array_index (subgraphs, i);
      g_autofree char *name = graft_graph_format_name (graph);

      add_row_printf (list, name, "%u nodes · double-click the node to open", graph->nodes->len);
    }
}

void
graft_node_sidebar_show_node (GraftNodeSidebar *self, GraftModel *model, GraftNode *node)
{
  g_return_if_fail (GRAFT_IS_NODE_SIDEBAR (self));
  g_return_if_fail (node != NULL);

  clear_sections (self);
  note_shown_model (self, model);
  set_header (self, node->op_type,
              node->name != NULL && node->name[0] != '\0' ? node->name : "Unnamed node");
  note_shown_target (self, node->name);
  add_node_section (self, node);
  add_attributes_section (self, node);
  add_node_metadata_section (self, node);
  add_value_links (self, "Inputs", node->inputs, FALSE, node);
  add_value_links (self, "Outputs", node->outputs, FALSE, NULL);
  add_initializers_section (self, model, node);
  add_subgraphs_section (self, node);
  show_pending_error (self);
}

static const char *
describe_value_role (const GraftValue *value)
{
  if (value->initializer != NULL)
    return "Initializer";
  if (value->is_graph_input)
    return "Graph input";
  if (value->is_graph_output)
    return "Graph output";
  return "Value";
}

static void
add_value_type_section (GraftNodeSidebar *self, GraftModel *model, GraftValue *value)
{
  GtkListBox *list = add_section (self, "Value");
  g_autofree char *type_text = graft_value_format_type (value, self->inference);
  GraftDType inferred_dtype;
  const GraftShape *inferred_shape;

  if (value->initializer == NULL && !value->is_graph_input)
    add_rename_field (self, list, "rename-value", value->name);
  add_row (list, "Type", type_text);
  /* torch.export's range_constraints for the symbolic dims */
  for (int i = 0; model != NULL && i < value->shape.rank; i++)
    if (value->shape.dims[i].kind == GRAFT_DIM_SYMBOLIC)
      {
        g_autofree char *range = graft_model_describe_dim_range (model, value->shape.dims[i].symbol);
        g_autofree char *key = g_strdup_printf ("Dim %d", i);

        if (range != NULL)
          add_row_printf (list, key, "%s %s", value->shape.dims[i].symbol, range);
      }
  if (graft_inference_lookup (self->inference, value, &inferred_dtype, &inferred_shape))
    {
      g_autofree char *inferred = graft_shape_to_string (inferred_shape);

      add_row_printf (list, "Inferred", "%s · %s", graft_dtype_to_string (inferred_dtype), inferred);
    }
  if (value->type_string != NULL && value->kind == GRAFT_VALUE_TENSOR)
    add_row (list, "Declared type", value->type_string);
  if (value->doc_string != NULL && value->doc_string[0] != '\0')
    add_row (list, "Description", value->doc_string);
}

static void
add_value_nodes_section (GraftNodeSidebar *self, GraftValue *value)
{
  GtkListBox *list;

  if (value->producer != NULL)
    {
      g_autofree char *label = graft_node_format_label (value->producer);
      g_autofree char *slot = g_strdup_printf ("output %u", value->producer_index);

      list = add_section (self, "Produced By");
      add_link_row (list, label, slot, value->producer, NULL);
    }
  if (value->consumers != NULL && value->consumers->len > 0)
    {
      list = add_section (self, "Used By");
      for (guint i = 0; i < value->consumers->len; i++)
        {
          GraftNode *consumer = g_ptr_array_index (value->consumers, i);
          g_autofree char *label = graft_node_format_label (consumer);

          if (i == MAX_LISTED_ROWS)
            {
              add_row_printf (list, "…", "%u more", value->consumers->len - i);
              break;
            }
          add_link_row (list, label, consumer->op, consumer, NULL);
        }
    }
}

/* ---------- editing a graph input's shape ---------- */

static void
on_make_dynamic_clicked (GtkButton *button, GtkEditable *entry)
{
  const char *input = g_object_get_data (G_OBJECT (button), "graft-input");
  int axis = GPOINTER_TO_INT (g_object_get_data (G_OBJECT (button), "graft-axis"));
  g_autofree char *symbol = g_strstrip (g_strdup (gtk_editable_get_text (entry)));
  /* Left empty, the name the entry suggests. */
  const char *fallback = gtk_entry_get_placeholder_text (GTK_ENTRY (entry));
  g_autofree char *target = g_strdup_printf ("%s:%d=%s", input, axis, symbol[0] != '\0' ? symbol : fallback);

  gtk_widget_activate_action (GTK_WIDGET (button), "win.edit-operation", "(sss)", "make-dim-dynamic", "", target);
}

static void
on_set_shape_clicked (GtkButton *button, GtkEditable *entry)
{
  const char *input = g_object_get_data (G_OBJECT (button), "graft-input");
  g_autofree char *shape = g_strstrip (g_strdup (gtk_editable_get_text (entry)));
  g_autofree char *target = NULL;

  g_strdelimit (shape, "×*, ", 'x');
  target = g_strdup_printf ("%s=%s", input, shape);
  gtk_widget_activate_action (GTK_WIDGET (button), "win.edit-operation", "(sss)", "set-input-shape", "", target);
}

static GtkWidget *
edit_row (const char *title, GtkWidget *entry, const char *button_label, const char *tooltip,
          GCallback clicked, const char *input, int axis)
{
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 4);
  GtkWidget *controls = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 6);
  GtkWidget *button = gtk_button_new_with_mnemonic (button_label);

  gtk_widget_add_css_class (box, "property-row");
  gtk_box_append (GTK_BOX (box), make_label (title, "property-name", FALSE));
  gtk_widget_set_hexpand (entry, TRUE);
  gtk_editable_set_width_chars (GTK_EDITABLE (entry), 6);
  gtk_widget_set_tooltip_text (button, tooltip);
  g_object_set_data_full (G_OBJECT (button), "graft-input", g_strdup (input), g_free);
  g_object_set_data (G_OBJECT (button), "graft-axis", GINT_TO_POINTER (axis));
  g_signal_connect (button, "clicked", clicked, entry);
  g_signal_connect_swapped (entry, "activate", G_CALLBACK (gtk_widget_activate), button);
  gtk_box_append (GTK_BOX (controls), entry);
  gtk_box_append (GTK_BOX (controls), button);
  gtk_box_append (GTK_BOX (box), controls);
  return box;
}

/* A main-graph input's fixed dims can be made dynamic, and the whole
 * shape fixed; the window applies them as undoable edits. */
static void
add_input_edit_section (GraftNodeSidebar *self, GraftValue *value)
{
  GtkListBox *list;
  GString *fixed = g_string_new (NULL);
  GtkWidget *entry;

  if (!value->is_graph_input || value->initializer != NULL || value->graph->parent_graph != NULL
      || value->kind != GRAFT_VALUE_TENSOR || value->shape.rank <= 0)
    {
      g_string_free (fixed, TRUE);
      return;
    }
  list = add_section (self, "Edit Shape");
  for (int d = 0; d < value->shape.rank; d++)
    {
      GraftDim dim = value->shape.dims[d];

      g_string_append_printf (fixed, "%s%" G_GINT64_FORMAT, d > 0 ? "x" : "",
                              dim.kind == GRAFT_DIM_FIXED ? dim.value : 1);
      if (dim.kind == GRAFT_DIM_FIXED)
        {
          g_autofree char *title = g_strdup_printf ("Dim %d, fixed at %" G_GINT64_FORMAT, d, dim.value);

          g_autofree char *placeholder = graft_edit_suggest_dim_symbol (value, d);

          entry = gtk_entry_new ();
          gtk_entry_set_placeholder_text (GTK_ENTRY (entry), placeholder);
          gtk_list_box_append (list, edit_row (title, entry, "Make _Dynamic",
                                               "Make this dim a named dynamic dimension",
                                               G_CALLBACK (on_make_dynamic_clicked), value->name, d));
        }
    }
  entry = gtk_entry_new ();
  gtk_editable_set_text (GTK_EDITABLE (entry), fixed->str);
  gtk_list_box_append (list, edit_row ("Fixed shape", entry, "_Set Shape", "Fix every dim of this input",
                                       G_CALLBACK (on_set_shape_clicked), value->name, -1));
  g_string_free (fixed, TRUE);
}

static void
on_graph_output_clicked (GtkButton *button, GraftNodeSidebar *self)
{
  const char *value = edited_name (GTK_WIDGET (button));
  gboolean is_output = GPOINTER_TO_INT (g_object_get_data (G_OBJECT (button), "graft-is-output"));

  request_edit (self, GTK_WIDGET (button), "graph-output", NULL, is_output ? "remove-output" : "add-output",
                graft_edit_params_new ("value", g_variant_new_string (value), NULL));
}

/* A computed value can be made a graph output, and an output given up. */
static void
add_graph_output_section (GraftNodeSidebar *self, GraftValue *value)
{
  GtkListBox *list;
  GtkWidget *row, *box, *button, *error_label;
  EditField *field;

  if (value->initializer != NULL || value->is_graph_input || value->producer == NULL)
    return;
  list = add_section (self, "Graph Output");
  row = gtk_list_box_row_new ();
  box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 4);
  gtk_widget_add_css_class (box, "property-row");
  gtk_box_append (GTK_BOX (box), make_label (value->is_graph_output ? "The model returns this value"
                                                                     : "Computed inside the graph", "property-name", FALSE));
  button = gtk_button_new_with_mnemonic (value->is_graph_output ? "_Remove Graph Output" : "Mark as Graph _Output");
  gtk_widget_set_name (button, "graph-output");
  gtk_widget_set_halign (button, GTK_ALIGN_START);
  g_object_set_data_full (G_OBJECT (button), "graft-edited", g_strdup (value->name), g_free);
  g_object_set_data (G_OBJECT (button), "graft-is-output", GINT_TO_POINTER (value->is_graph_output));
  g_signal_connect (button, "clicked", G_CALLBACK (on_graph_output_clicked), self);
  gtk_box_append (GTK_BOX (box), button);
  error_label = make_label ("", "error", TRUE);
  gtk_widget_set_visible (error_label, FALSE);
  gtk_box_append (GTK_BOX (box), error_label);
  gtk_list_box_row_set_child (GTK_LIST_BOX_ROW (row), box);
  gtk_list_box_row_set_activatable (GTK_LIST_BOX_ROW (row), FALSE);
  gtk_list_box_append (list, row);
  field = g_new0 (EditField, 1);
  field->error_label = GTK_LABEL (error_label);
  g_hash_table_insert (self->edit_fields, g_strdup ("graph-output"), field);
}

void
graft_node_sidebar_show_value (GraftNodeSidebar *self, GraftModel *model, GraftValue *value)
{
  g_return_if_fail (GRAFT_IS_NODE_SIDEBAR (self));
  g_return_if_fail (value != NULL);

  clear_sections (self);
  note_shown_model (self, model);
  set_header (self, value->name, describe_value_role (value));
  note_shown_target (self, value->name);
  add_value_type_section (self, model, value);
  add_graph_output_section (self, value);
  add_input_edit_section (self, value);
  if (value->initializer != NULL)
    add_tensor_rows (self, add_section (self, "Initializer"), model, value->initializer);
  add_value_nodes_section (self, value);
  show_pending_error (self);
}

void
graft_node_sidebar_show_tensor (GraftNodeSidebar *self, GraftModel *model, GraftTensor *tensor)
{
  GtkListBox *back;
  GtkWidget *row;
  g_autofree char *description = NULL;

  g_return_if_fail (GRAFT_IS_NODE_SIDEBAR (self));
  g_return_if_fail (tensor != NULL);

  /* The rows being cleared may hold the last other reference. */
  graft_tensor_ref (tensor);
  clear_sections (self);
  note_shown_model (self, model);
  description = graft_tensor_describe (tensor);
  set_header (self, tensor->name != NULL ? tensor->name : "(unnamed)", description);
  add_tensor_rows (self, add_section (self, "Data"), model, tensor);
  back = add_section (self, "Model");
  add_link_row (back, "All Tensors", "the model's details", NULL, NULL);
  row = gtk_widget_get_last_child (GTK_WIDGET (back));
  g_object_set_data (G_OBJECT (row), "graft-model-details", GINT_TO_POINTER (TRUE));
  graft_tensor_unref (tensor);
}

void
graft_node_sidebar_set_inference (GraftNodeSidebar *self, GraftInference *inference)
{
  g_return_if_fail (GRAFT_IS_NODE_SIDEBAR (self));

  if (inference != NULL)
    graft_inference_ref (inference);
  g_clear_pointer (&self->inference, graft_inference_unref);
  self->inference = inference;
}

static void
graft_node_sidebar_dispose (GObject *object)
{
  GraftNodeSidebar *self = GRAFT_NODE_SIDEBAR (object);
  GtkWidget *child;

  if (self->stats_cancellable != NULL)
    g_cancellable_cancel (self->stats_cancellable);
  g_clear_object (&self->stats_cancellable);
  g_clear_pointer (&self->inference, graft_inference_unref);
  g_clear_weak_pointer (&self->shown_model);
  g_clear_pointer (&self->edit_fields, g_hash_table_unref);
  g_clear_pointer (&self->pending_key, g_free);
  g_clear_pointer (&self->pending_text, g_free);
  g_clear_pointer (&self->pending_error, g_free);
  g_clear_pointer (&self->pending_target, g_free);
  gtk_widget_dispose_template (GTK_WIDGET (self), GRAFT_TYPE_NODE_SIDEBAR);
  /* The template's root box is not a bound child: unparent it ourselves. */
  while ((child = gtk_widget_get_first_child (GTK_WIDGET (self))) != NULL)
    gtk_widget_unparent (child);
  G_OBJECT_CLASS (graft_node_sidebar_parent_class)->dispose (object);
}

static void
graft_node_sidebar_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  GraftNodeSidebar *self = GRAFT_NODE_SIDEBAR (object);

  switch (prop_id)
    {
    case PROP_PENDING_STATS: g_value_set_uint (value, self->pending_stats); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
graft_node_sidebar_class_init (GraftNodeSidebarClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = graft_node_sidebar_dispose;
  object_class->get_property = graft_node_sidebar_get_property;

  /* Initializer statistics still computed on workers ("computing…" shown meanwhile). */
  properties[PROP_PENDING_STATS] =
    g_param_spec_uint ("pending-stats", NULL, NULL, 0, G_MAXUINT, 0,
                       G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);

  /* (node, value): one of them is set; the window selects it in the canvas. */
  signals[SIGNAL_ITEM_ACTIVATED] =
    g_signal_new ("item-activated", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL, G_TYPE_NONE, 2, G_TYPE_POINTER, G_TYPE_POINTER);
  /* (GraftTensor *): Save as .npy was clicked; the window asks where. */
  signals[SIGNAL_SAVE_TENSOR] =
    g_signal_new ("save-tensor", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_POINTER);

  gtk_widget_class_set_template_from_resource (widget_class, "/org/graft/Graft/ui/node-sidebar.ui");
  gtk_widget_class_bind_template_child (widget_class, GraftNodeSidebar, scroller);
  gtk_widget_class_bind_template_child (widget_class, GraftNodeSidebar, title_label);
  gtk_widget_class_bind_template_child (widget_class, GraftNodeSidebar, subtitle_label);
  gtk_widget_class_bind_template_child (widget_class, GraftNodeSidebar, sections);
  gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BIN_LAYOUT);
  gtk_widget_class_set_css_name (widget_class, "nodesidebar");
}

static void
graft_node_sidebar_init (GraftNodeSidebar *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));
  self->edit_fields = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  self->stats_cancellable = g_cancellable_new ();
}
