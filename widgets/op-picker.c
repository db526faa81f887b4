#include "op-picker.h"

#include <string.h>

#include "onnx/op-schemas.h"
#include "runtime/op.h"

/* An op the picker lists. */
typedef struct {
  char *key;           /* "Conv", "com.microsoft::Gelu": what the edit's "op" takes */
  const char *domain;  /* canonical */
  const char *op_type;
  const char *inputs;  /* "X W B?" (ONNX schema), else the registry's names, else "" */
  const char *outputs;
  const GraftOnnxSchema *schema;  /* NULL when ONNX has no schema for it */
} OpEntry;

/* The entry of one input or attribute of the selected op. */
typedef struct {
  char *name;
  gboolean required;
  gboolean variadic;
  GtkEditable *entry;
} Field;

struct _GraftOpPicker
{
  AdwWindow parent_instance;

  /* Template widgets */
  AdwWindowTitle *window_title;
  GtkButton *apply_button;
  GtkSearchEntry *search_entry;
  GtkListBox *op_list;
  GtkBox *details;

  /* Owned references */
  GraftModel *model;
  char *edge;                 /* NULL: a free node */
  GArray *ops;                /* OpEntry, sorted by key */
  GPtrArray *input_fields;    /* Field*, of the selected op */
  GPtrArray *attribute_fields;

  /* Borrowed references */
  GtkListBoxRow *custom_row;  /* "domain::Op" typed in the search entry */
  GtkLabel *custom_label;
  GtkEditable *name_entry;
  GtkCheckButton *graph_outputs_check;
  GtkLabel *error_label;
  const OpEntry *selected;    /* NULL: the custom op, or nothing */
  char *custom_op;
};

G_DEFINE_FINAL_TYPE (GraftOpPicker, graft_op_picker, ADW_TYPE_WINDOW)

enum {
  SIGNAL_APPLY,
  N_SIGNALS
};

static guint signals[N_SIGNALS];

static void
field_free (gpointer data)
{
  Field *field = data;

  g_free (field->name);
  g_free (field);
}

static void
op_entry_clear (gpointer data)
{
  g_free (((OpEntry *) data)->key);
}

static int
compare_entries (gconstpointer a, gconstpointer b)
{
  return g_ascii_strcasecmp (((const OpEntry *) a)->key, ((const OpEntry *) b)->key);
}

/* The registry's ops that run at the model's opsets (aten and prim ops
 * belong to TorchScript graphs, not to ONNX files). */
static void
collect_ops (GraftOpPicker *self)
{
  g_autoptr(GPtrArray) schemas = graft_op_registry_list ();
  g_autoptr(GHashTable) seen = g_hash_table_new (g_str_hash, g_str_equal);

  for (guint i = 0; i < schemas->len; i++)
    {
      const GraftOpSchema *schema = g_ptr_array_index (schemas, i);
      const char *separator = strstr (schema->name, "::");
      g_autofree char *domain = separator ? g_strndup (schema->name, separator - schema->name) : NULL;
      gint64 opset = domain ? graft_model_get_opset (self->model, domain) : -1;
      OpEntry entry = { 0 };

      if (opset < 0 || schema->since > opset || (schema->until != 0 && schema->until < opset)
          || !g_hash_table_add (seen, (gpointer) schema->name))
        continue;
      entry.domain = graft_canonical_domain (domain);
      entry.op_type = g_intern_string (separator + 2);
      entry.key = strcmp (entry.domain, "onnx") == 0 ? g_strdup (entry.op_type) : g_strdup (schema->name);
      entry.schema = graft_onnx_schema_lookup (entry.domain, entry.op_type, opset);
      entry.inputs = entry.schema ? entry.schema->inputs : schema->input_names ? schema->input_names : "";
      entry.outputs = entry.schema ? entry.schema->outputs : schema->output_names ? schema->output_names : "";
      g_array_append_val (self->ops, entry);
    }
  g_array_sort (self->ops, compare_entries);
}

/* "X W B?" → "X, W, B (optional)" */
static char *
describe_parameters (const char *names)
{
  g_auto(GStrv) split = g_strsplit (names, " ", -1);
  g_autoptr(GString) text = g_string_new (NULL);

  for (guint i = 0; split[i] != NULL; i++)
    {
      gsize n = strlen (split[i]);
      if (n == 0)
        continue;
      if (text->len > 0)
        g_string_append (text, ", ");
      if (g_str_has_suffix (split[i], "?"))
        g_string_append_printf (text, "%.*s (optional)", (int) n - 1, split[i]);
      else if (g_str_has_suffix (split[i], "..."))
        g_string_append_printf (text, "%.*s…", (int) n - 3, split[i]);
      else
        g_string_append (text, split[i]);
    }
  return g_string_free (g_steal_pointer (&text), FALSE);
}

static GtkWidget *
make_label (const char *text, const char *css_class)
{
  GtkWidget *label = gtk_label_new (text);

  gtk_label_set_xalign (GTK_LABEL (label), 0);
  gtk_label_set_wrap (GTK_LABEL (label), TRUE);
  gtk_label_set_wrap_mode (GTK_LABEL (label), PANGO_WRAP_WORD_CHAR);
  if (css_class != NULL)
    gtk_widget_add_css_class (label, css_class);
  return label;
}

static GtkWidget *
make_op_row (const OpEntry *entry)
{
  GtkWidget *row = gtk_list_box_row_new ();
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 2);
  g_autofree char *inputs = describe_parameters (entry->inputs);
  g_autofree char *outputs = describe_parameters (entry->outputs);
  g_autofree char *signature = g_strdup_printf ("%s → %s", *inputs ? inputs : "no inputs", outputs);
  GtkWidget *title = make_label (entry->key, NULL);
  GtkWidget *detail = make_label (signature, "dim-label");

  gtk_label_set_wrap (GTK_LABEL (detail), FALSE);
  gtk_label_set_ellipsize (GTK_LABEL (detail), PANGO_ELLIPSIZE_END);
  gtk_widget_add_css_class (detail, "caption");
  gtk_widget_set_tooltip_text (row, signature);
  gtk_widget_set_margin_top (box, 3);
  gtk_widget_set_margin_bottom (box, 3);
  gtk_box_append (GTK_BOX (box), title);
  gtk_box_append (GTK_BOX (box), detail);
  gtk_list_box_row_set_child (GTK_LIST_BOX_ROW (row), box);
  gtk_widget_set_name (row, entry->key);
  g_object_set_data (G_OBJECT (row), "graft-op-entry", (gpointer) entry);
  return row;
}

static gboolean
filter_row (GtkListBoxRow *row, gpointer user_data)
{
  GraftOpPicker *self = user_data;
  const char *text = gtk_editable_get_text (GTK_EDITABLE (self->search_entry));
  const OpEntry *entry = g_object_get_data (G_OBJECT (row), "graft-op-entry");
  g_autofree char *needle = g_ascii_strdown (text, -1);
  g_autofree char *haystack = NULL;

  if (row == self->custom_row)
    return self->custom_op != NULL;
  if (*text == '\0')
    return TRUE;
  haystack = g_ascii_strdown (entry->key, -1);
  return strstr (haystack, needle) != NULL;
}

/* ---------- the selected op's fields ---------- */

static void
clear_details (GraftOpPicker *self)
{
  GtkWidget *child;

  while ((child = gtk_widget_get_first_child (GTK_WIDGET (self->details))) != NULL)
    gtk_box_remove (self->details, child);
  g_ptr_array_set_size (self->input_fields, 0);
  g_ptr_array_set_size (self->attribute_fields, 0);
  self->name_entry = NULL;
  self->graph_outputs_check = NULL;
  self->error_label = NULL;
}

static GtkWidget *
add_heading (GraftOpPicker *self, const char *text)
{
  GtkWidget *label = make_label (text, "heading");

  gtk_box_append (self->details, label);
  return label;
}

static void
hide_error (GraftOpPicker *self)
{
  if (self->error_label != NULL)
    gtk_widget_set_visible (GTK_WIDGET (self->error_label), FALSE);
}

/* A caption above an entry; the entry is named for scripts and tests. */
static GtkEditable *
add_field (GraftOpPicker *self, GPtrArray *fields, const char *widget_name, const char *name, const char *caption,
           const char *placeholder, gboolean required, gboolean variadic)
{
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 3);
  GtkWidget *entry = gtk_entry_new ();
  Field *field = g_new0 (Field, 1);

  gtk_box_append (GTK_BOX (box), make_label (caption, "caption"));
  gtk_widget_set_name (entry, widget_name);
  if (placeholder != NULL)
    gtk_entry_set_placeholder_text (GTK_ENTRY (entry), placeholder);
  gtk_entry_set_activates_default (GTK_ENTRY (entry), TRUE);
  /* A refusal is about what was there before the field changed. */
  g_signal_connect_swapped (entry, "changed", G_CALLBACK (hide_error), self);
  gtk_box_append (GTK_BOX (box), entry);
  gtk_box_append (self->details, box);
  field->name = g_strdup (name);
  field->required = required;
  field->variadic = variadic;
  field->entry = GTK_EDITABLE (entry);
  g_ptr_array_add (fields, field);
  return GTK_EDITABLE (entry);
}

static void
add_input_fields (GraftOpPicker *self, const char *inputs)
{
  g_auto(GStrv) names = g_strsplit (inputs, " ", -1);
  guint first = 0;

  add_heading (self, "Inputs");
  if (self->edge != NULL)
    {
      g_autofree char *text = NULL;

      if (names[0] != NULL && *names[0] != '\0')
        first = 1;
      text = g_strdup_printf ("%s reads “%s”; everything that read it reads the new node's output.",
                              names[0] && *names[0] ? names[0] : "The first input", self->edge);
      gtk_box_append (self->details, make_label (text, "dim-label"));
    }
  for (guint i = first; names[i] != NULL; i++)
    {
      gsize n = strlen (names[i]);
      gboolean optional = g_str_has_suffix (names[i], "?");
      gboolean variadic = g_str_has_suffix (names[i], "...");
      g_autofree char *name = g_strndup (names[i], n - (optional ? 1 : variadic ? 3 : 0));
      g_autofree char *widget_name = g_strdup_printf ("input-%s", name);
      g_autofree char *caption = g_strdup_printf ("%s%s", name, optional ? " · optional" : variadic ? " · one or more, "
                                                  "comma-separated" : " · required");

      if (n == 0)
        continue;
      add_field (self, self->input_fields, widget_name, name, caption, "value name", !optional, variadic);
    }
  if (self->input_fields->len == 0 && self->edge == NULL)
    gtk_box_append (self->details, make_label ("No inputs.", "dim-label"));
}

static void
add_attribute_fields (GraftOpPicker *self, const GraftOnnxSchema *schema)
{
  add_heading (self, "Attributes");
  if (schema == NULL)
    {
      gtk_box_append (self->details, make_label ("ONNX has no schema for this op: set attributes after adding it "
                                                 "(node sidebar).", "dim-label"));
      return;
    }
  for (guint i = 0; i < schema->n_attributes; i++)
    {
      const GraftOnnxAttributeSchema *attribute = &schema->attributes[i];
      const char *type = graft_attr_type_to_string (attribute->type);
      g_autofree char *widget_name = g_strdup_printf ("attribute-%s", attribute->name);
      g_autofree char *caption = NULL;

      /* Tensors and graphs cannot be typed in. */
      if (attribute->type == GRAFT_ATTR_UNDEFINED || attribute->type == GRAFT_ATTR_TENSOR
          || attribute->type == GRAFT_ATTR_GRAPH || attribute->type == GRAFT_ATTR_TENSORS
          || attribute->type == GRAFT_ATTR_GRAPHS || attribute->type == GRAFT_ATTR_SPARSE_TENSOR)
        {
          g_autofree char *text = g_strdup_printf ("%s · %s%s: not settable here", attribute->name,
                                                   attribute->type ? type : "other type",
                                                   attribute->required ? " · required" : "");
          gtk_box_append (self->details, make_label (text, "dim-label"));
          continue;
        }
      caption = attribute->required ? g_strdup_printf ("%s · %s · required", attribute->name, type)
                : attribute->default_text ? g_strdup_printf ("%s · %s · default %s", attribute->name, type,
                                                             *attribute->default_text ? attribute->default_text : "\"\"")
                : g_strdup_printf ("%s · %s · optional", attribute->name, type);
      add_field (self, self->attribute_fields, widget_name, attribute->name, caption,
                 attribute->default_text ? attribute->default_text
                 : g_str_has_suffix (type, "s") ? "[…] (unset)" : "(unset)",
                 attribute->required, FALSE);
    }
  if (schema->n_attributes == 0)
    gtk_box_append (self->details, make_label ("None.", "dim-label"));
}

static void
show_details (GraftOpPicker *self, const OpEntry *entry, const char *custom_op)
{
  g_autofree char *outputs = NULL;
  g_autofree char *about = NULL;
  gint64 opset;
  GtkWidget *title;

  clear_details (self);
  self->selected = entry;
  g_clear_pointer (&self->custom_op, g_free);
  if (entry == NULL && custom_op == NULL)
    {
      gtk_widget_set_sensitive (GTK_WIDGET (self->apply_button), FALSE);
      gtk_box_append (self->details, make_label ("Pick an op on the left.", "dim-label"));
      return;
    }
  self->custom_op = g_strdup (custom_op);
  title = make_label (entry ? entry->key : custom_op, "title-2");
  gtk_box_append (self->details, title);
  if (entry != NULL)
    {
      opset = graft_model_get_opset (self->model, entry->domain);
      outputs = describe_parameters (entry->outputs);
      about = g_strdup_printf ("%s opset %" G_GINT64_FORMAT " (schema version %d) · outputs: %s",
                               strcmp (entry->domain, "onnx") == 0 ? "ONNX" : entry->domain, opset,
                               entry->schema ? entry->schema->since : 0, *outputs ? outputs : "—");
      if (entry->schema == NULL)
        {
          g_free (about);
          about = g_strdup_printf ("%s opset %" G_GINT64_FORMAT " · outputs: %s", entry->domain, opset,
                                   *outputs ? outputs : "—");
        }
    }
  else
    about = g_strdup ("A custom-domain op (a plugin): Graft cannot check or run it. It reads the inputs you "
                      "name and gives one output.");
  gtk_box_append (self->details, make_label (about, "dim-label"));

  add_heading (self, "Node");
  self->name_entry = add_field (self, self->attribute_fields, "node-name", NULL, "Name", "chosen from the op", FALSE,
                                FALSE);
  g_ptr_array_set_size (self->attribute_fields, 0);   /* the name is not an attribute */
  add_input_fields (self, entry ? entry->inputs : (self->edge ? "input" : "inputs..."));
  if (self->edge == NULL)
    {
      self->graph_outputs_check = GTK_CHECK_BUTTON (gtk_check_button_new_with_mnemonic ("Make its outputs _graph outputs"));
      gtk_widget_set_name (GTK_WIDGET (self->graph_outputs_check), "graph-outputs");
      gtk_check_button_set_active (self->graph_outputs_check, TRUE);
      gtk_box_append (self->details, GTK_WIDGET (self->graph_outputs_check));
    }
  if (entry != NULL)
    add_attribute_fields (self, entry->schema);
  self->error_label = GTK_LABEL (make_label ("", "error"));
  gtk_widget_set_name (GTK_WIDGET (self->error_label), "picker-error");
  gtk_label_set_selectable (self->error_label, TRUE);
  gtk_widget_set_visible (GTK_WIDGET (self->error_label), FALSE);
  gtk_box_append (self->details, GTK_WIDGET (self->error_label));
  gtk_widget_set_sensitive (GTK_WIDGET (self->apply_button), TRUE);
}

static void
on_row_selected (GraftOpPicker *self, GtkListBoxRow *row)
{
  if (row == NULL)
    return;
  if (row == self->custom_row)
    {
      g_autofree char *op = g_strdup (self->custom_op);
      show_details (self, NULL, op);
    }
  else
    show_details (self, g_object_get_data (G_OBJECT (row), "graft-op-entry"), NULL);
}

static void
on_search_changed (GraftOpPicker *self)
{
  const char *text = gtk_editable_get_text (GTK_EDITABLE (self->search_entry));
  const char *separator = strstr (text, "::");
  g_autofree char *domain = separator ? g_strndup (text, separator - text) : NULL;

  g_clear_pointer (&self->custom_op, g_free);
  if (separator != NULL && separator != text && separator[2] != '\0'
      && strcmp (graft_canonical_domain (domain), "onnx") != 0)
    {
      g_autofree char *label = g_strdup_printf ("Custom op “%s”", text);
      self->custom_op = g_strdup (text);
      gtk_label_set_text (self->custom_label, label);
    }
  gtk_list_box_invalidate_filter (self->op_list);
}

/* Enter picks the first op listed. */
static void
on_search_activate (GraftOpPicker *self)
{
  for (GtkWidget *row = gtk_widget_get_first_child (GTK_WIDGET (self->op_list)); row != NULL;
       row = gtk_widget_get_next_sibling (row))
    if (GTK_IS_LIST_BOX_ROW (row) && gtk_widget_get_child_visible (row) && filter_row (GTK_LIST_BOX_ROW (row), self))
      {
        gtk_list_box_select_row (self->op_list, GTK_LIST_BOX_ROW (row));
        if (self->name_entry != NULL)
          gtk_widget_grab_focus (GTK_WIDGET (self->name_entry));
        return;
      }
}

/* ---------- applying ---------- */

void
graft_op_picker_show_error (GraftOpPicker *self, const char *message)
{
  g_return_if_fail (GRAFT_IS_OP_PICKER (self));

  if (self->error_label == NULL)
    return;
  gtk_label_set_text (self->error_label, message);
  gtk_widget_set_visible (GTK_WIDGET (self->error_label), TRUE);
}

static char *
field_text (Field *field)
{
  return g_strstrip (g_strdup (gtk_editable_get_text (field->entry)));
}

/* Inputs: the value names in order, "" for an omitted optional one,
 * trailing omitted ones dropped. Attributes: "name=text" for each filled
 * field. FALSE with message when a required field is empty. */
static gboolean
collect_fields (GPtrArray *fields, gboolean attributes, GPtrArray *out, char **message)
{
  for (guint i = 0; i < fields->len; i++)
    {
      Field *field = g_ptr_array_index (fields, i);
      g_autofree char *text = field_text (field);

      if (*text == '\0' && field->required)
        {
          *message = attributes ? g_strdup_printf ("Attribute “%s” is required", field->name)
                                : g_strdup_printf ("Input “%s” is required: name a value of the graph", field->name);
          return FALSE;
        }
      if (attributes)
        {
          if (*text != '\0')
            g_ptr_array_add (out, g_strdup_printf ("%s=%s", field->name, text));
        }
      else if (field->variadic)
        {
          g_auto(GStrv) items = g_strsplit (text, ",", -1);
          for (guint k = 0; items[k] != NULL; k++)
            if (*g_strstrip (items[k]) != '\0')
              g_ptr_array_add (out, g_strdup (items[k]));
        }
      else
        g_ptr_array_add (out, g_steal_pointer (&text));
    }
  while (!attributes && out->len > 0 && *(char *) g_ptr_array_index (out, out->len - 1) == '\0')
    g_ptr_array_remove_index (out, out->len - 1);
  return TRUE;
}

static void
on_apply_clicked (GraftOpPicker *self)
{
  g_autoptr(GPtrArray) inputs = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GPtrArray) attributes = g_ptr_array_new_with_free_func (g_free);
  g_autofree char *message = NULL;
  g_autofree char *name = NULL;
  g_autoptr(GVariant) params = NULL;
  GVariantDict dict;

  if (self->selected == NULL && self->custom_op == NULL)
    return;
  if (!collect_fields (self->input_fields, FALSE, inputs, &message)
      || !collect_fields (self->attribute_fields, TRUE, attributes, &message))
    {
      graft_op_picker_show_error (self, message);
      return;
    }
  name = g_strstrip (g_strdup (gtk_editable_get_text (self->name_entry)));
  g_variant_dict_init (&dict, NULL);
  g_variant_dict_insert (&dict, "op", "s", self->selected ? self->selected->key : self->custom_op);
  if (*name != '\0')
    g_variant_dict_insert (&dict, "name", "s", name);
  if (self->edge != NULL)
    g_variant_dict_insert (&dict, "value", "s", self->edge);
  if (inputs->len > 0 || self->edge == NULL)
    g_variant_dict_insert_value (&dict, "inputs", g_variant_new_strv ((const char *const *) inputs->pdata, inputs->len));
  if (attributes->len > 0)
    g_variant_dict_insert_value (&dict, "attributes",
                                 g_variant_new_strv ((const char *const *) attributes->pdata, attributes->len));
  if (self->graph_outputs_check != NULL)
    g_variant_dict_insert (&dict, "graph_outputs", "b", gtk_check_button_get_active (self->graph_outputs_check));
  params = g_variant_ref_sink (g_variant_dict_end (&dict));
  gtk_widget_set_visible (GTK_WIDGET (self->error_label), FALSE);
  g_signal_emit (self, signals[SIGNAL_APPLY], 0, self->edge ? "insert-node" : "add-node", params);
}

/* ---------- life cycle ---------- */

static void
graft_op_picker_dispose (GObject *object)
{
  GraftOpPicker *self = GRAFT_OP_PICKER (object);

  gtk_widget_dispose_template (GTK_WIDGET (self), GRAFT_TYPE_OP_PICKER);
  G_OBJECT_CLASS (graft_op_picker_parent_class)->dispose (object);
}

static void
graft_op_picker_finalize (GObject *object)
{
  GraftOpPicker *self = GRAFT_OP_PICKER (object);

  g_clear_object (&self->model);
  g_clear_pointer (&self->edge, g_free);
  g_clear_pointer (&self->custom_op, g_free);
  g_clear_pointer (&self->ops, g_array_unref);
  g_clear_pointer (&self->input_fields, g_ptr_array_unref);
  g_clear_pointer (&self->attribute_fields, g_ptr_array_unref);
  G_OBJECT_CLASS (graft_op_picker_parent_class)->finalize (object);
}

static void
graft_op_picker_class_init (GraftOpPickerClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = graft_op_picker_dispose;
  object_class->finalize = graft_op_picker_finalize;

  /* (operation id, a{sv} parameters) */
  signals[SIGNAL_APPLY] = g_signal_new ("apply", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                        G_TYPE_NONE, 2, G_TYPE_STRING, G_TYPE_VARIANT);

  gtk_widget_class_set_template_from_resource (widget_class, "/org/graft/Graft/ui/op-picker.ui");
  gtk_widget_class_bind_template_child (widget_class, GraftOpPicker, window_title);
  gtk_widget_class_bind_template_child (widget_class, GraftOpPicker, apply_button);
  gtk_widget_class_bind_template_child (widget_class, GraftOpPicker, search_entry);
  gtk_widget_class_bind_template_child (widget_class, GraftOpPicker, op_list);
  gtk_widget_class_bind_template_child (widget_class, GraftOpPicker, details);
  gtk_widget_class_bind_template_callback (widget_class, on_apply_clicked);
  gtk_widget_class_bind_template_callback (widget_class, on_search_changed);
  gtk_widget_class_bind_template_callback (widget_class, on_search_activate);
  gtk_widget_class_bind_template_callback (widget_class, on_row_selected);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_Escape, 0, "window.close", NULL);
}

static void
graft_op_picker_init (GraftOpPicker *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));
  self->ops = g_array_new (FALSE, TRUE, sizeof (OpEntry));
  g_array_set_clear_func (self->ops, op_entry_clear);
  self->input_fields = g_ptr_array_new_with_free_func (field_free);
  self->attribute_fields = g_ptr_array_new_with_free_func (field_free);
}

GraftOpPicker *
graft_op_picker_new (GtkWindow *parent, GraftModel *model, const char *edge)
{
  GraftOpPicker *self = g_object_new (GRAFT_TYPE_OP_PICKER, "transient-for", parent, NULL);
  g_autofree char *subtitle = NULL;
  GtkWidget *box;

  self->model = g_object_ref (model);
  self->edge = g_strdup (edge);
  collect_ops (self);
  subtitle = edge ? g_strdup_printf ("on “%s” · %u ops", edge, self->ops->len)
                  : g_strdup_printf ("%u ops at the model's opset", self->ops->len);
  adw_window_title_set_title (self->window_title, edge ? "Insert Node" : "Add Node");
  adw_window_title_set_subtitle (self->window_title, subtitle);
  gtk_button_set_label (self->apply_button, edge ? "_Insert" : "_Add");
  gtk_window_set_default_widget (GTK_WINDOW (self), GTK_WIDGET (self->apply_button));

  self->custom_row = GTK_LIST_BOX_ROW (gtk_list_box_row_new ());
  box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 2);
  self->custom_label = GTK_LABEL (make_label ("", NULL));
  gtk_box_append (GTK_BOX (box), GTK_WIDGET (self->custom_label));
  gtk_box_append (GTK_BOX (box), make_label ("plugin op: not checked", "dim-label"));
  gtk_list_box_row_set_child (self->custom_row, box);
  gtk_widget_set_name (GTK_WIDGET (self->custom_row), "custom-op");
  gtk_list_box_append (self->op_list, GTK_WIDGET (self->custom_row));
  for (guint i = 0; i < self->ops->len; i++)
    gtk_list_box_append (self->op_list, make_op_row (&g_array_index (self->ops, OpEntry, i)));
  gtk_list_box_set_filter_func (self->op_list, filter_row, self, NULL);
  show_details (self, NULL, NULL);
  gtk_widget_grab_focus (GTK_WIDGET (self->search_entry));
  return self;
}
