/* Graph surgery in the window: a right-click on a node or an edge of the
 * canvas opens a menu of the edits that fit it (rename, replace the op,
 * bypass, delete, extract, mark as a graph output, cut the graph there),
 * Delete deletes the selected node, and File → Save Edits As… writes the
 * session as a recipe that Apply Recipe… (or graft-cli edit --recipe)
 * replays on another export. Every edit goes through the window's edit
 * history: undoable, and part of the recipe. */
#include <string.h>

#include "window-private.h"
#include "edit/edit-operation.h"
#include "edit/attribute-value.h"
#include "ir/graph-surgery.h"
#include "edit/recipe.h"
#include "widgets/op-picker.h"
#include "layout/labels.h"
#include "layout/shared-values.h"

/* "NODE#ATTRIBUTE…" from the main graph down to graph; NULL for the main graph. */
static char *
graph_path (GraftGraph *graph)
{
  g_autoptr(GString) path = g_string_new (NULL);

  for (; graph != NULL && graph->parent_node != NULL; graph = graph->parent_graph)
    {
      GraftNode *owner = graph->parent_node;
      const char *attribute = NULL;

      for (guint i = 0; i < owner->attributes->len && attribute == NULL; i++)
        {
          GraftAttribute *candidate = g_ptr_array_index (owner->attributes, i);
          if (candidate->type == GRAFT_ATTR_GRAPH && candidate->g == graph)
            attribute = candidate->name;
        }
      if (attribute == NULL)
        return NULL;   /* a GRAPHS list: not addressable by a path */
      g_string_prepend (path, path->len ? "#" : "");
      g_string_prepend (path, attribute);
      g_string_prepend (path, "#");
      g_string_prepend (path, owner->name);
    }
  return path->len ? g_strdup (path->str) : NULL;
}

gboolean
graft_window_try_operation (GraftWindow *self, const char *id, GVariant *params, GError **error)
{
  g_autofree char *path = graph_path (graft_graph_canvas_get_graph (self->canvas));
  g_autoptr(GraftEdit) edit = NULL;

  g_variant_ref_sink (params);
  if (path != NULL)
    {
      GVariant *scoped = graft_edit_params_replace (params, "graph", g_variant_new_string (path));
      g_variant_unref (params);
      params = g_variant_ref_sink (scoped);
    }
  edit = graft_edit_new_operation (id, params, error);
  g_variant_unref (params);
  return edit != NULL && graft_window_try_edit (self, edit, error);
}

static void
apply_operation (GraftWindow *self, const char *id, GVariant *params)
{
  g_autoptr(GError) error = NULL;

  if (!graft_window_try_operation (self, id, params, &error) && error != NULL)
    graft_window_show_edit_error (self, "Could Not Change the Model", error);
}

/* Delete, bypass and extract work on the main graph. */
static gboolean
showing_main_graph (GraftWindow *self)
{
  GraftGraph *shown = graft_graph_canvas_get_graph (self->canvas);

  if (shown == NULL || shown->parent_graph == NULL)
    return TRUE;
  graft_window_show_toast (self, "Bypass, delete and extract work on the main graph (Alt+↑ goes back to it)");
  return FALSE;
}

static void
node_edit_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);
  const char *name = g_variant_get_string (parameter, NULL);
  g_autoptr(GraftEdit) edit = NULL;

  if (!showing_main_graph (self))
    return;
  if (g_str_equal (action_name, "win.bypass-node"))
    edit = graft_edit_new_bypass_node (name);
  else if (g_str_equal (action_name, "win.delete-node"))
    edit = graft_edit_new_delete_node (name);
  else
    {
      /* The node alone: its data inputs to its outputs. */
      GraftNode *node = graft_graph_find_node (graft_model_get_graph (self->model), name);
      g_autoptr(GPtrArray) inputs = g_ptr_array_new ();
      g_autoptr(GPtrArray) outputs = g_ptr_array_new ();

      if (node == NULL)
        {
          g_autofree char *message = g_strdup_printf ("No node is called “%s”", name);
          graft_window_show_toast (self, message);
          return;
        }
      for (guint i = 0; i < node->inputs->len; i++)
        {
          GraftValue *in = g_ptr_array_index (node->inputs, i);
          if (in != NULL && in->initializer == NULL)
            g_ptr_array_add (inputs, in->name);
        }
      for (guint i = 0; i < node->outputs->len; i++)
        if (g_ptr_array_index (node->outputs, i) != NULL)
          g_ptr_array_add (outputs, ((GraftValue *) g_ptr_array_index (node->outputs, i))->name);
      g_ptr_array_add (inputs, NULL);
      g_ptr_array_add (outputs, NULL);
      edit = graft_edit_new_extract ((const char *const *) inputs->pdata, (const char *const *) outputs->pdata);
    }
  graft_window_apply_edit (self, edit);
}

static void
value_edit_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);
  const char *id = g_str_equal (action_name, "win.mark-output")     ? "add-output"
                   : g_str_equal (action_name, "win.unmark-output") ? "remove-output"
                                                                   : "add-input";

  apply_operation (self, id, graft_edit_params_new ("value", g_variant_new_string (g_variant_get_string (parameter, NULL)),
                                                    NULL));
}

static void
delete_selection_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);
  GraftNode *node = graft_graph_canvas_get_selected_node (self->canvas);

  if (node == NULL)
    {
      graft_window_show_toast (self, "Select a node to delete");
      return;
    }
  if (node->graph != graft_graph_canvas_get_graph (self->canvas))
    {
      graft_window_show_toast (self, "Nodes of a body opened in place are edited in the body's own view");
      return;
    }
  gtk_widget_activate_action (widget, "win.delete-node", "s", node->name);
}

/* ---------- dialogs with one entry: rename, replace op, set an attribute, insert a node ---------- */

typedef struct {
  const char *action;      /* "win.rename-node" */
  const char *operation;   /* the edit it applies */
  const char *target_key;  /* the parameter the action's target fills: "node" or "value" */
  const char *text_key;    /* the parameter the entry fills */
  const char *heading;
  const char *body;
  const char *apply_label;
} EntryDialogKind;

static const EntryDialogKind entry_dialogs[] = {
  { "win.rename-node", "rename-node", "node", "to", "Rename Node", NULL, "_Rename" },
  { "win.replace-op", "replace-op", "node", "op", "Replace Op",
    "The node keeps its inputs and outputs. An op of a custom domain (“com.example::MyPlugin”) keeps its "
    "attributes too.", "_Replace" },
  { "win.set-attribute", "set-attribute", "node", "assignment", "Set Attribute",
    "NAME=VALUE, with the attribute's own type, or a type first: “alpha=float:0.2”, “perm=ints:[0, 2, 1]”. "
    "The op's shape function checks the result.", "_Set" },
};

typedef struct {
  GraftWindow *window;
  GtkEntry *entry;
  const EntryDialogKind *kind;
  char *target;
} EntryDialog;

static void
entry_dialog_free (gpointer user_data, GClosure *closure)
{
  EntryDialog *data = user_data;

  g_free (data->target);
  g_free (data);
}

/* "alpha=float:0.2" → name, value and (optional) type parameters. */
static GVariant *
attribute_params (const char *node, const char *text)
{
  g_autofree char *name = NULL, *type = NULL, *value = NULL;

  if (!graft_attribute_assignment_parse (text, &name, &type, &value, NULL))
    return NULL;
  return graft_edit_params_new ("node", g_variant_new_string (node), "name", g_variant_new_string (name),
                                "value", g_variant_new_string (value), "type", type ? g_variant_new_string (type) : NULL,
                                NULL);
}

static void
on_entry_dialog_response (AdwMessageDialog *dialog, const char *response, EntryDialog *data)
{
  const char *text = gtk_editable_get_text (GTK_EDITABLE (data->entry));
  GVariant *params;

  if (!g_str_equal (response, "apply") || *text == '\0')
    return;
  if (g_str_equal (data->kind->operation, "set-attribute"))
    params = attribute_params (data->target, text);
  else
    params = graft_edit_params_new (data->kind->target_key, g_variant_new_string (data->target),
                                    data->kind->text_key, g_variant_new_string (text), NULL);
  if (params == NULL)
    {
      g_autofree char *message = g_strdup_printf ("“%s” is not NAME=VALUE", text);
      graft_window_show_toast (data->window, message);
      return;
    }
  apply_operation (data->window, data->kind->operation, params);
}

/* What the entry starts with. */
static char *
entry_suggestion (const EntryDialogKind *kind, GraftGraph *graph, const char *target)
{
  GraftNode *node = g_str_equal (kind->target_key, "node") ? graft_graph_find_node (graph, target) : NULL;

  if (g_str_equal (kind->operation, "rename-node"))
    return g_strdup (target);
  if (g_str_equal (kind->operation, "replace-op") && node != NULL)
    return g_strdup (strcmp (node->domain, "onnx") == 0 ? node->op_type : node->op);
  if (g_str_equal (kind->operation, "set-attribute") && node != NULL && node->attributes->len > 0)
    {
      GraftAttribute *first = g_ptr_array_index (node->attributes, 0);
      g_autofree char *value = graft_attribute_format_value (first, 64);
      return g_strdup_printf ("%s=%s", first->name, value);
    }
  return g_strdup ("");
}

static void
entry_dialog_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);
  const char *target = g_variant_get_string (parameter, NULL);
  const EntryDialogKind *kind = NULL;
  g_autofree char *suggestion = NULL;
  EntryDialog *data;
  GtkWidget *dialog, *entry;

  for (guint i = 0; i < G_N_ELEMENTS (entry_dialogs); i++)
    if (g_str_equal (action_name, entry_dialogs[i].action))
      kind = &entry_dialogs[i];
  if (kind == NULL || !graft_window_edits_allowed (self))
    return;
  suggestion = entry_suggestion (kind, graft_graph_canvas_get_graph (self->canvas), target);
  dialog = adw_message_dialog_new (GTK_WINDOW (self), kind->heading, kind->body);
  entry = gtk_entry_new ();
  gtk_editable_set_text (GTK_EDITABLE (entry), suggestion);
  gtk_entry_set_activates_default (GTK_ENTRY (entry), TRUE);
  gtk_widget_set_size_request (entry, 360, -1);
  adw_message_dialog_set_extra_child (ADW_MESSAGE_DIALOG (dialog), entry);
  adw_message_dialog_add_responses (ADW_MESSAGE_DIALOG (dialog), "cancel", "_Cancel", "apply", kind->apply_label, NULL);
  adw_message_dialog_set_response_appearance (ADW_MESSAGE_DIALOG (dialog), "apply", ADW_RESPONSE_SUGGESTED);
  adw_message_dialog_set_default_response (ADW_MESSAGE_DIALOG (dialog), "apply");
  adw_message_dialog_set_close_response (ADW_MESSAGE_DIALOG (dialog), "cancel");
  data = g_new0 (EntryDialog, 1);
  data->window = self;
  data->entry = GTK_ENTRY (entry);
  data->kind = kind;
  data->target = g_strdup (target);
  g_signal_connect_data (dialog, "response", G_CALLBACK (on_entry_dialog_response), data, entry_dialog_free, 0);
  gtk_window_present (GTK_WINDOW (dialog));
  gtk_widget_grab_focus (entry);
}

/* ---------- the op picker: Insert Node… and Add Node… ---------- */

static void
on_picker_apply (GraftOpPicker *picker, const char *id, GVariant *params, GraftWindow *self)
{
  g_autoptr(GError) error = NULL;

  if (graft_window_try_operation (self, id, g_variant_ref (params), &error))
    gtk_window_destroy (GTK_WINDOW (picker));
  else if (error != NULL)
    graft_op_picker_show_error (picker, error->message);
}

static void
op_picker_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);
  GraftOpPicker *picker;

  if (!graft_window_edits_allowed (self))
    return;
  picker = graft_op_picker_new (GTK_WINDOW (self), self->model,
                                parameter != NULL ? g_variant_get_string (parameter, NULL) : NULL);
  g_signal_connect_object (picker, "apply", G_CALLBACK (on_picker_apply), self, 0);
  gtk_window_present (GTK_WINDOW (picker));
}

/* ---------- edits asked for in the sidebar ---------- */

/* After an edit from the sidebar, it shows the same node or value again
 * (by its new name after a rename; the graph object is new either way),
 * and a refusal beside the field that asked for it. */
static void
sidebar_edit_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) params = NULL;
  g_autofree char *node_name = NULL, *value_name = NULL;
  const char *id;
  GraftGraph *graph;
  GraftNode *node_before;
  GraftValue *value_before;
  gboolean done;

  g_variant_get (parameter, "(&s@a{sv})", &id, &params);
  node_name = g_strdup (graft_edit_param_string (params, "node"));
  value_name = g_strdup (graft_edit_param_string (params, "value"));
  done = graft_window_try_operation (self, id, g_variant_ref (params), &error);
  if (done && g_str_equal (id, "rename-node"))
    {
      g_free (node_name);
      node_name = g_strdup (graft_edit_param_string (params, "to"));
    }
  if (done && g_str_equal (id, "rename-value"))
    {
      g_free (value_name);
      value_name = g_strdup (graft_edit_param_string (params, "to"));
    }
  if (!done && error == NULL)
    return;   /* edits must wait: nothing changed */
  graph = graft_graph_canvas_get_graph (self->canvas);
  node_before = graft_graph_canvas_get_selected_node (self->canvas);
  value_before = graft_graph_canvas_get_selected_value (self->canvas);
  if (graph != NULL && node_name != NULL && graft_graph_find_node (graph, node_name) != NULL)
    graft_graph_canvas_select_node (self->canvas, graft_graph_find_node (graph, node_name));
  else if (graph != NULL && value_name != NULL && graft_graph_lookup_value (graph, value_name) != NULL)
    graft_graph_canvas_select_value (self->canvas, graft_graph_lookup_value (graph, value_name));
  /* A new selection has filled the sidebar already (the canvas notifies
   * on change); the same one is shown again here. Building the node's
   * details twice doubled what a sidebar edit cost the UI thread. */
  if (graft_graph_canvas_get_selected_node (self->canvas) == node_before
      && graft_graph_canvas_get_selected_value (self->canvas) == value_before)
    graft_window_update_sidebar (self);
  if (error != NULL)
    graft_node_sidebar_show_edit_error (self->sidebar, error->message);
}

/* ---------- the context menu ---------- */

/* A plain popover of flat buttons: GTK 4.8's GtkPopoverMenu gets a height
 * too small for its items under X11 and cuts the last one off. */
static void
on_menu_button_clicked (GtkButton *button, GtkPopover *popover)
{
  gtk_popover_popdown (popover);
}

static void
add_item (GtkWidget *box, GtkPopover *popover, const char *label, const char *action, const char *target)
{
  GtkWidget *button = gtk_button_new_with_mnemonic (label);
  GtkWidget *text = gtk_button_get_child (GTK_BUTTON (button));

  g_autoptr(PangoAttrList) regular = pango_attr_list_new ();

  /* Menu items, not bold button labels. */
  pango_attr_list_insert (regular, pango_attr_weight_new (PANGO_WEIGHT_NORMAL));
  gtk_label_set_attributes (GTK_LABEL (text), regular);
  gtk_label_set_xalign (GTK_LABEL (text), 0);
  gtk_widget_add_css_class (button, "flat");
  gtk_actionable_set_action_name (GTK_ACTIONABLE (button), action);
  if (target != NULL)
    gtk_actionable_set_action_target_value (GTK_ACTIONABLE (button), g_variant_new_string (target));
  g_signal_connect (button, "clicked", G_CALLBACK (on_menu_button_clicked), popover);
  gtk_box_append (GTK_BOX (box), button);
}

static void
on_open_body_clicked (GtkButton *button, GraftWindow *self)
{
  GraftNode *node = g_object_get_data (G_OBJECT (button), "node");

  graft_window_show_graph (self, node->graph);
  graft_graph_canvas_select_node (self->canvas, node);
}

/* A node of an If or Loop body opened in place: the edits address nodes
 * by name in the graph shown, so its own are offered in the body's view. */
static void
add_open_body_item (GraftWindow *self, GtkWidget *box, GtkPopover *popover, GraftNode *node)
{
  GtkWidget *button;

  add_item (box, popover, "_Open Its Body to Edit", NULL, NULL);
  button = gtk_widget_get_last_child (box);
  g_object_set_data (G_OBJECT (button), "node", node);
  g_signal_connect (button, "clicked", G_CALLBACK (on_open_body_clicked), self);
}

static void
add_separator (GtkWidget *box)
{
  GtkWidget *separator = gtk_separator_new (GTK_ORIENTATION_HORIZONTAL);

  gtk_widget_set_margin_top (separator, 3);
  gtk_widget_set_margin_bottom (separator, 3);
  gtk_box_append (GTK_BOX (box), separator);
}

static void
fill_node_menu (GtkWidget *box, GtkPopover *popover, GraftNode *node, gboolean main_graph)
{
  add_item (box, popover, "_Rename…", "win.rename-node", node->name);
  add_item (box, popover, "Replace _Op…", "win.replace-op", node->name);
  add_item (box, popover, "Set _Attribute…", "win.set-attribute", node->name);
  add_item (box, popover, "Replace _Pattern…", "win.replace-pattern-at", node->name);
  if (main_graph)
    {
      add_separator (box);
      add_item (box, popover, "_Bypass", "win.bypass-node", node->name);
      add_item (box, popover, "_Delete", "win.delete-node", node->name);
      add_item (box, popover, "E_xtract This Node", "win.extract-node", node->name);
    }
  for (guint i = 0, n = 0; i < node->outputs->len; i++)
    {
      GraftValue *out = g_ptr_array_index (node->outputs, i);
      g_autofree char *label = NULL;

      if (out == NULL || out->is_graph_output)
        continue;
      if (n++ == 0)
        add_separator (box);
      label = node->outputs->len == 1 ? g_strdup ("Mark as Graph _Output")
                                      : g_strdup_printf ("Mark “%s” as Graph Output", out->name);
      add_item (box, popover, label, "win.mark-output", out->name);
    }
}

/* A constant read far apart is listed in each reader's box, with no edge to
 * follow: the menu walks its readers instead. */
static void
add_shared_reader_items (GraftWindow *self, GtkWidget *box, GtkPopover *popover, GraftNode *node)
{
  g_autoptr (GPtrArray) listed = g_ptr_array_new ();

  for (guint i = 0; i < node->inputs->len; i++)
    {
      GraftValue *value = g_ptr_array_index (node->inputs, i);
      g_autofree char *slot = NULL;
      g_autofree char *label = NULL;
      guint position = 0;

      if (!graft_graph_canvas_is_value_shared (self->canvas, value) || g_ptr_array_find (listed, value, NULL))
        continue;
      if (listed->len == 0)
        add_separator (box);
      g_ptr_array_add (listed, value);
      graft_shared_values_next_reader (value, node, &position);
      slot = graft_label_input_slot (node, i);
      /* Button labels take "_" as a mnemonic mark: "data_0". */
      g_strdelimit (slot, "_", ' ');
      label = g_strdup_printf ("Next Reader of “%s” (%u of %u)", slot, position,
                               graft_shared_values_count_readers (value));
      add_item (box, popover, label, "win.next-reader", value->name);
    }
}

static void
fill_value_menu (GtkWidget *box, GtkPopover *popover, GraftValue *value)
{
  if (value->is_graph_output)
    add_item (box, popover, "Remove Graph _Output", "win.unmark-output", value->name);
  else
    add_item (box, popover, "Mark as Graph _Output", "win.mark-output", value->name);
  add_item (box, popover, "_Insert Node…", "win.insert-node", value->name);
  if (value->producer != NULL && value->initializer == NULL)
    add_item (box, popover, "_Cut Here (Make It an Input)", "win.cut-at-value", value->name);
}

static gboolean
unparent_idle (gpointer data)
{
  gtk_widget_unparent (data);
  g_object_unref (data);
  return G_SOURCE_REMOVE;
}

static void
on_context_menu_closed (GtkPopover *popover)
{
  /* After the clicked item's action has run. */
  g_idle_add (unparent_idle, g_object_ref (popover));
}

static void
on_canvas_secondary_press (GtkGestureClick *gesture, int n_press, double x, double y, GraftWindow *self)
{
  GraftNode *node;
  GraftValue *value;
  GtkWidget *popover, *box;
  GdkRectangle at = { (int) x, (int) y, 1, 1 };
  GraftGraph *shown = graft_graph_canvas_get_graph (self->canvas);

  if (self->model == NULL || shown == NULL)
    return;
  gtk_gesture_set_state (GTK_GESTURE (gesture), GTK_EVENT_SEQUENCE_CLAIMED);
  node = graft_graph_canvas_select_at (self->canvas, x, y) ? graft_graph_canvas_get_selected_node (self->canvas) : NULL;
  value = node == NULL ? graft_graph_canvas_get_selected_value (self->canvas) : NULL;
  popover = gtk_popover_new ();
  box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 0);
  gtk_widget_add_css_class (popover, "menu");
  gtk_popover_set_child (GTK_POPOVER (popover), box);
  if (node != NULL && node->graph != shown)
    add_open_body_item (self, box, GTK_POPOVER (popover), node);
  else if (node != NULL)
    {
      fill_node_menu (box, GTK_POPOVER (popover), node, shown->parent_graph == NULL);
      add_shared_reader_items (self, box, GTK_POPOVER (popover), node);
    }
  else if (value != NULL)
    fill_value_menu (box, GTK_POPOVER (popover), value);
  else
    add_item (box, GTK_POPOVER (popover), "_Add Node…", "win.add-node", NULL);
  gtk_widget_set_parent (popover, GTK_WIDGET (self->canvas));
  gtk_popover_set_pointing_to (GTK_POPOVER (popover), &at);
  gtk_popover_set_has_arrow (GTK_POPOVER (popover), FALSE);
  gtk_popover_set_position (GTK_POPOVER (popover), GTK_POS_BOTTOM);
  gtk_widget_set_halign (popover, GTK_ALIGN_START);
  g_signal_connect (popover, "closed", G_CALLBACK (on_context_menu_closed), NULL);
  gtk_popover_popup (GTK_POPOVER (popover));
}

/* ---------- recipes ---------- */

static void
save_recipe_to (GraftWindow *self, const char *path)
{
  g_autoptr(GError) error = NULL;
  GPtrArray *applied = self->history ? graft_edit_history_get_applied (self->history) : NULL;
  g_autofree char *message = NULL;

  if (applied == NULL || applied->len == 0)
    {
      graft_window_show_toast (self, "No edits to save yet");
      return;
    }
  if (!graft_recipe_save (applied, path, &error))
    {
      graft_window_show_edit_error (self, "Could Not Save the Edits", error);
      return;
    }
  message = g_strdup_printf ("Saved %u edits as a recipe to %s", applied->len, path);
  graft_window_show_toast (self, message);
}

static void
apply_recipe_from (GraftWindow *self, const char *path)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) applied = g_ptr_array_new_with_free_func (g_object_unref);
  gboolean ok;
  g_autofree char *message = NULL;

  if (!graft_window_edits_allowed (self))
    return;
  ok = graft_recipe_replay_file (path, self->history, applied, &error);
  /* The steps before a failing one stay applied (and undoable). */
  if (applied->len > 0)
    graft_window_edits_model_changed (self);
  if (!ok)
    {
      graft_window_show_edit_error (self, "Could Not Apply the Recipe", error);
      return;
    }
  message = g_strdup_printf ("Applied %u edits from the recipe", applied->len);
  graft_window_show_toast (self, message);
}

static void
on_recipe_file_response (GtkNativeDialog *dialog, int response, GraftWindow *self)
{
  g_autoptr(GFile) file = response == GTK_RESPONSE_ACCEPT ? gtk_file_chooser_get_file (GTK_FILE_CHOOSER (dialog)) : NULL;
  g_autofree char *path = file != NULL ? g_file_get_path (file) : NULL;
  gboolean saving = gtk_file_chooser_get_action (GTK_FILE_CHOOSER (dialog)) == GTK_FILE_CHOOSER_ACTION_SAVE;

  if (path != NULL && saving && !g_str_has_suffix (path, ".json"))
    {
      char *with_suffix = g_strconcat (path, ".json", NULL);
      g_free (path);
      path = with_suffix;
    }
  if (path != NULL && saving)
    save_recipe_to (self, path);
  else if (path != NULL)
    apply_recipe_from (self, path);
  g_object_unref (dialog);
}

static void
recipe_file_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);
  gboolean saving = g_str_equal (action_name, "win.save-recipe");
  g_autoptr(GtkFileFilter) filter = gtk_file_filter_new ();
  GtkFileChooserNative *dialog;

  gtk_file_filter_set_name (filter, "Graft Recipes");
  gtk_file_filter_add_pattern (filter, "*.json");
  dialog = gtk_file_chooser_native_new (saving ? "Save Edits As Recipe" : "Apply Recipe", GTK_WINDOW (self),
                                        saving ? GTK_FILE_CHOOSER_ACTION_SAVE : GTK_FILE_CHOOSER_ACTION_OPEN,
                                        saving ? "_Save" : "_Apply", "_Cancel");
  gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (dialog), filter);
  if (saving)
    gtk_file_chooser_set_current_name (GTK_FILE_CHOOSER (dialog), "edits.json");
  gtk_native_dialog_set_modal (GTK_NATIVE_DIALOG (dialog), TRUE);
  g_signal_connect (dialog, "response", G_CALLBACK (on_recipe_file_response), self);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (dialog));
}

/* Scripts and tests name the file. */
static void
recipe_path_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  if (g_str_equal (action_name, "win.save-recipe-path"))
    save_recipe_to (GRAFT_WINDOW (widget), g_variant_get_string (parameter, NULL));
  else
    apply_recipe_from (GRAFT_WINDOW (widget), g_variant_get_string (parameter, NULL));
}

void
graft_window_init_surgery (GraftWindow *self)
{
  GtkGesture *secondary = gtk_gesture_click_new ();

  gtk_gesture_single_set_button (GTK_GESTURE_SINGLE (secondary), GDK_BUTTON_SECONDARY);
  g_signal_connect (secondary, "pressed", G_CALLBACK (on_canvas_secondary_press), self);
  gtk_widget_add_controller (GTK_WIDGET (self->canvas), GTK_EVENT_CONTROLLER (secondary));
}

void
graft_window_class_add_surgery_actions (GtkWidgetClass *widget_class)
{
  gtk_widget_class_install_action (widget_class, "win.bypass-node", "s", node_edit_action);
  gtk_widget_class_install_action (widget_class, "win.delete-node", "s", node_edit_action);
  gtk_widget_class_install_action (widget_class, "win.extract-node", "s", node_edit_action);
  for (guint i = 0; i < G_N_ELEMENTS (entry_dialogs); i++)
    gtk_widget_class_install_action (widget_class, entry_dialogs[i].action, "s", entry_dialog_action);
  gtk_widget_class_install_action (widget_class, "win.insert-node", "s", op_picker_action);
  gtk_widget_class_install_action (widget_class, "win.add-node", NULL, op_picker_action);
  gtk_widget_class_install_action (widget_class, "win.sidebar-edit", "(sa{sv})", sidebar_edit_action);
  gtk_widget_class_install_action (widget_class, "win.mark-output", "s", value_edit_action);
  gtk_widget_class_install_action (widget_class, "win.unmark-output", "s", value_edit_action);
  gtk_widget_class_install_action (widget_class, "win.cut-at-value", "s", value_edit_action);
  gtk_widget_class_install_action (widget_class, "win.delete-selection", NULL, delete_selection_action);
  gtk_widget_class_install_action (widget_class, "win.save-recipe", NULL, recipe_file_action);
  gtk_widget_class_install_action (widget_class, "win.apply-recipe", NULL, recipe_file_action);
  gtk_widget_class_install_action (widget_class, "win.save-recipe-path", "s", recipe_path_action);
  gtk_widget_class_install_action (widget_class, "win.apply-recipe-path", "s", recipe_path_action);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_Delete, 0, "win.delete-selection", NULL);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_KP_Delete, 0, "win.delete-selection", NULL);
}
