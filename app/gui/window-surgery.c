/* Graph surgery in the window: win.edit-operation runs any row of the
 * edit operation table (edit/edit-operation.h) by its id, its target (the
 * node or value a menu was opened on) and its argument (graft-cli edit's
 * syntax, or what a dialog asked for). A right-click on a node, an edge or
 * the background of the canvas opens a menu of the rows offered on that
 * target, labelled and ordered as the rows say; Delete deletes the
 * selected node; File → Save Edits As… writes the session as a recipe that
 * Apply Recipe… (or graft-cli edit --recipe) replays on another export.
 * Every edit goes through the window's edit history: undoable, and part
 * of the recipe. */
#include <string.h>

#include "window-surgery.h"
#include "window-patterns.h"
#include "edit/edit-operation.h"
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

/* Operation id on the graph the canvas shows (params: floating or owned,
 * consumed). */
static GraftEdit *
scoped_edit (GraftWindow *self, const char *id, GVariant *params, GError **error)
{
  g_autofree char *path = graph_path (graft_graph_canvas_get_graph (graft_window_get_canvas (self)));
  GraftEdit *edit;

  g_variant_ref_sink (params);
  if (path != NULL)
    {
      GVariant *scoped = graft_edit_params_replace (params, "graph", g_variant_new_string (path));
      g_variant_unref (params);
      params = g_variant_ref_sink (scoped);
    }
  edit = graft_edit_new_operation (id, params, error);
  g_variant_unref (params);
  return edit;
}

gboolean
graft_window_try_operation (GraftWindow *self, const char *id, GVariant *params, GError **error)
{
  g_autoptr(GraftEdit) edit = scoped_edit (self, id, params, error);

  return edit != NULL && graft_window_try_edit (self, edit, error);
}

/* The rows offered only on the main graph (bypass, delete, extract). */
static gboolean
showing_main_graph (GraftWindow *self)
{
  GraftGraph *shown = graft_graph_canvas_get_graph (graft_window_get_canvas (self));

  if (shown == NULL || shown->parent_graph == NULL)
    return TRUE;
  graft_window_show_toast (self, "Bypass, delete and extract work on the main graph (Alt+↑ goes back to it)");
  return FALSE;
}

static void
delete_selection_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);
  GraftNode *node = graft_graph_canvas_get_selected_node (graft_window_get_canvas (self));

  if (node == NULL)
    {
      graft_window_show_toast (self, "Select a node to delete");
      return;
    }
  if (node->graph != graft_graph_canvas_get_graph (graft_window_get_canvas (self)))
    {
      graft_window_show_toast (self, "Nodes of a body opened in place are edited in the body's own view");
      return;
    }
  gtk_widget_activate_action (widget, "win.edit-operation", "(sss)", "delete-node", node->name, "");
}

/* ---------- the entry dialog of a row with a heading (rename, replace op, set an attribute) ---------- */

typedef struct {
  GtkEntry *entry;
  const GraftEditOperation *operation;
  char *target;
} EntryDialog;

static void
entry_dialog_free (gpointer user_data, GClosure *closure)
{
  EntryDialog *data = user_data;

  g_free (data->target);
  g_free (data);
}

/* The entry's text completes the argument: the same action runs it. */
static void
on_entry_dialog_response (AdwMessageDialog *dialog, const char *response, EntryDialog *data)
{
  const char *text = gtk_editable_get_text (GTK_EDITABLE (data->entry));
  GtkWindow *window = gtk_window_get_transient_for (GTK_WINDOW (dialog));

  if (!g_str_equal (response, "apply") || *text == '\0' || window == NULL)
    return;
  gtk_widget_activate_action (GTK_WIDGET (window), "win.edit-operation", "(sss)", data->operation->id, data->target,
                              text);
}

static void
open_entry_dialog (GraftWindow *self, const GraftEditOperation *operation, const char *target)
{
  g_autofree char *suggestion = NULL;
  EntryDialog *data;
  GtkWidget *dialog, *entry;

  if (!graft_window_edits_allowed (self))
    return;
  suggestion = operation->suggest ? operation->suggest (graft_graph_canvas_get_graph (graft_window_get_canvas (self)), target)
                                  : g_strdup ("");
  dialog = adw_message_dialog_new (GTK_WINDOW (self), operation->heading, operation->body);
  entry = gtk_entry_new ();
  gtk_editable_set_text (GTK_EDITABLE (entry), suggestion);
  gtk_entry_set_activates_default (GTK_ENTRY (entry), TRUE);
  gtk_widget_set_size_request (entry, 360, -1);
  adw_message_dialog_set_extra_child (ADW_MESSAGE_DIALOG (dialog), entry);
  adw_message_dialog_add_responses (ADW_MESSAGE_DIALOG (dialog), "cancel", "_Cancel", "apply", operation->apply_label,
                                    NULL);
  adw_message_dialog_set_response_appearance (ADW_MESSAGE_DIALOG (dialog), "apply", ADW_RESPONSE_SUGGESTED);
  adw_message_dialog_set_default_response (ADW_MESSAGE_DIALOG (dialog), "apply");
  adw_message_dialog_set_close_response (ADW_MESSAGE_DIALOG (dialog), "cancel");
  data = g_new0 (EntryDialog, 1);
  data->entry = GTK_ENTRY (entry);
  data->operation = operation;
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

/* Insert Node… on an edge (target: the value) or Add Node… (NULL). */
static void
open_op_picker (GraftWindow *self, const char *target)
{
  GraftOpPicker *picker;

  if (!graft_window_edits_allowed (self))
    return;
  picker = graft_op_picker_new (GTK_WINDOW (self), graft_document_get_model (graft_window_get_document (self)), target);
  g_signal_connect_object (picker, "apply", G_CALLBACK (on_picker_apply), self, 0);
  gtk_window_present (GTK_WINDOW (picker));
}

/* ---------- win.edit-operation ---------- */

/* The dialogs of the window's own that rows name: they collect the
 * parameters and end in graft_window_try_operation(). */
static const struct {
  const char *name;
  void (*open) (GraftWindow *self, const char *target);
} operation_dialogs[] = {
  { "op-picker", open_op_picker },
  { "pattern", graft_window_open_pattern_dialog },
};

/* (id, target, argument): the row's dialog when the argument is empty and
 * the row has one, else the edit the row's parser reads from target and
 * argument ("" for none), applied to the graph shown. */
static void
edit_operation_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);
  const char *id, *target, *argument;
  const GraftEditOperation *operation;
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftEdit) edit = NULL;
  GVariant *params;

  g_variant_get (parameter, "(&s&s&s)", &id, &target, &argument);
  if ((operation = graft_edit_operation_lookup (id)) == NULL)
    {
      g_autofree char *message = g_strdup_printf ("No edit is called “%s”", id);
      graft_window_show_toast (self, message);
      return;
    }
  if (*argument == '\0' && operation->dialog != NULL)
    {
      for (guint i = 0; i < G_N_ELEMENTS (operation_dialogs); i++)
        if (g_str_equal (operation->dialog, operation_dialogs[i].name))
          operation_dialogs[i].open (self, *target ? target : NULL);
      return;
    }
  if (*argument == '\0' && operation->heading != NULL)
    {
      open_entry_dialog (self, operation, target);
      return;
    }
  if ((operation->when & GRAFT_EDIT_WHEN_MAIN_GRAPH) && !showing_main_graph (self))
    return;
  params = graft_edit_operation_parse (operation, graft_graph_canvas_get_graph (graft_window_get_canvas (self)), *target ? target : NULL,
                                       *argument ? argument : NULL, &error);
  if (params == NULL)
    {
      graft_window_show_toast (self, error->message);
      return;
    }
  if ((edit = scoped_edit (self, id, params, &error)) == NULL)
    graft_window_show_edit_error (self, "Could Not Change the Model", error);
  else
    graft_window_apply_edit (self, edit);
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
  graph = graft_graph_canvas_get_graph (graft_window_get_canvas (self));
  node_before = graft_graph_canvas_get_selected_node (graft_window_get_canvas (self));
  value_before = graft_graph_canvas_get_selected_value (graft_window_get_canvas (self));
  if (graph != NULL && node_name != NULL && graft_graph_find_node (graph, node_name) != NULL)
    graft_graph_canvas_select_node (graft_window_get_canvas (self), graft_graph_find_node (graph, node_name));
  else if (graph != NULL && value_name != NULL && graft_graph_lookup_value (graph, value_name) != NULL)
    graft_graph_canvas_select_value (graft_window_get_canvas (self), graft_graph_lookup_value (graph, value_name));
  /* A new selection has filled the sidebar already (the canvas notifies
   * on change); the same one is shown again here. Building the node's
   * details twice doubled what a sidebar edit cost the UI thread. */
  if (graft_graph_canvas_get_selected_node (graft_window_get_canvas (self)) == node_before
      && graft_graph_canvas_get_selected_value (graft_window_get_canvas (self)) == value_before)
    graft_window_update_sidebar (self);
  if (error != NULL)
    graft_node_sidebar_show_edit_error (graft_window_get_sidebar (self), error->message);
}

/* ---------- the context menu ---------- */

/* A plain popover of flat buttons: GTK 4.8's GtkPopoverMenu gets a height
 * too small for its items under X11 and cuts the last one off. */
static void
on_menu_button_clicked (GtkButton *button, GtkPopover *popover)
{
  gtk_popover_popdown (popover);
}

/* target: NULL or a floating GVariant for the action. */
static void
add_item (GtkWidget *box, GtkPopover *popover, const char *label, const char *action, GVariant *target)
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
    gtk_actionable_set_action_target_value (GTK_ACTIONABLE (button), target);
  g_signal_connect (button, "clicked", G_CALLBACK (on_menu_button_clicked), popover);
  gtk_box_append (GTK_BOX (box), button);
}

static void
on_open_body_clicked (GtkButton *button, GraftWindow *self)
{
  GraftNode *node = g_object_get_data (G_OBJECT (button), "node");

  graft_window_show_graph (self, node->graph);
  graft_graph_canvas_select_node (graft_window_get_canvas (self), node);
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

static int
compare_rank (gconstpointer a, gconstpointer b)
{
  return (int) (*(GraftEditOperation *const *) a)->rank - (int) (*(GraftEditOperation *const *) b)->rank;
}

/* The rows offered on target, by rank. */
static GPtrArray *
rows_for (GraftEditTarget target)
{
  guint n;
  const GraftEditOperation *operations = graft_edit_operation_list (&n);
  GPtrArray *rows = g_ptr_array_new ();

  for (guint i = 0; i < n; i++)
    if (operations[i].target == target && operations[i].label != NULL)
      g_ptr_array_add (rows, (gpointer) &operations[i]);
  g_ptr_array_sort (rows, compare_rank);
  return rows;
}

static gboolean
offered_on_value (const GraftEditOperation *operation, GraftValue *value)
{
  GraftEditWhen when = operation->when;

  return !((when & GRAFT_EDIT_WHEN_OUTPUT) && !value->is_graph_output)
         && !((when & GRAFT_EDIT_WHEN_NOT_OUTPUT) && value->is_graph_output)
         && !((when & GRAFT_EDIT_WHEN_COMPUTED) && (value->producer == NULL || value->initializer != NULL));
}

static GVariant *
operation_target (const GraftEditOperation *operation, const char *name)
{
  return g_variant_new ("(sss)", operation->id, name ? name : "", "");
}

/* A separator between rows of other tens of rank. */
static void
add_row_item (GtkWidget *box, GtkPopover *popover, const GraftEditOperation *operation, const char *label,
              const char *name, guint *last_rank)
{
  if (*last_rank != 0 && operation->rank / 10 != *last_rank / 10)
    add_separator (box);
  *last_rank = operation->rank;
  add_item (box, popover, label, "win.edit-operation", operation_target (operation, name));
}

static void
fill_node_menu (GtkWidget *box, GtkPopover *popover, GraftNode *node, gboolean main_graph)
{
  g_autoptr(GPtrArray) node_rows = rows_for (GRAFT_EDIT_TARGET_NODE);
  g_autoptr(GPtrArray) value_rows = rows_for (GRAFT_EDIT_TARGET_VALUE);
  guint last_rank = 0;

  for (guint i = 0; i < node_rows->len; i++)
    {
      const GraftEditOperation *operation = g_ptr_array_index (node_rows, i);
      if (main_graph || !(operation->when & GRAFT_EDIT_WHEN_MAIN_GRAPH))
        add_row_item (box, popover, operation, operation->label, node->name, &last_rank);
    }
  /* The edits of its outputs offered on the node, after a separator. */
  last_rank = 1;
  for (guint r = 0; r < value_rows->len; r++)
    {
      const GraftEditOperation *operation = g_ptr_array_index (value_rows, r);

      if (!(operation->when & GRAFT_EDIT_WHEN_ON_PRODUCER))
        continue;
      for (guint i = 0; i < node->outputs->len; i++)
        {
          GraftValue *out = g_ptr_array_index (node->outputs, i);
          g_autofree char *label = NULL;

          if (out == NULL || !offered_on_value (operation, out))
            continue;
          if (node->outputs->len == 1)
            label = g_strdup (operation->label);
          else
            {
              /* the row's "%s" is the output's name (not a format: the table is data) */
              g_auto(GStrv) parts = g_strsplit (operation->label_each, "%s", 2);
              label = g_strconcat (parts[0], out->name, parts[1] ? parts[1] : "", NULL);
            }
          add_row_item (box, popover, operation, label, out->name, &last_rank);
        }
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

      if (!graft_graph_canvas_is_value_shared (graft_window_get_canvas (self), value) || g_ptr_array_find (listed, value, NULL))
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
      add_item (box, popover, label, "win.next-reader", g_variant_new_string (value->name));
    }
}

static void
fill_value_menu (GtkWidget *box, GtkPopover *popover, GraftValue *value)
{
  g_autoptr(GPtrArray) rows = rows_for (GRAFT_EDIT_TARGET_VALUE);
  guint last_rank = 0;

  for (guint i = 0; i < rows->len; i++)
    {
      const GraftEditOperation *operation = g_ptr_array_index (rows, i);
      if (offered_on_value (operation, value))
        add_row_item (box, popover, operation, operation->label, value->name, &last_rank);
    }
}

static void
fill_graph_menu (GtkWidget *box, GtkPopover *popover)
{
  g_autoptr(GPtrArray) rows = rows_for (GRAFT_EDIT_TARGET_GRAPH);
  guint last_rank = 0;

  for (guint i = 0; i < rows->len; i++)
    {
      const GraftEditOperation *operation = g_ptr_array_index (rows, i);
      add_row_item (box, popover, operation, operation->label, NULL, &last_rank);
    }
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
  GraftGraph *shown = graft_graph_canvas_get_graph (graft_window_get_canvas (self));

  if (graft_document_get_model (graft_window_get_document (self)) == NULL || shown == NULL)
    return;
  gtk_gesture_set_state (GTK_GESTURE (gesture), GTK_EVENT_SEQUENCE_CLAIMED);
  node = graft_graph_canvas_select_at (graft_window_get_canvas (self), x, y) ? graft_graph_canvas_get_selected_node (graft_window_get_canvas (self)) : NULL;
  value = node == NULL ? graft_graph_canvas_get_selected_value (graft_window_get_canvas (self)) : NULL;
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
    fill_graph_menu (box, GTK_POPOVER (popover));
  gtk_widget_set_parent (popover, GTK_WIDGET (graft_window_get_canvas (self)));
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
  GraftEditHistory *history = graft_document_get_history (graft_window_get_document (self));
  GPtrArray *applied = history != NULL ? graft_edit_history_get_applied (history) : NULL;
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
  /* The steps before a failing one stay applied (and undoable), and shown. */
  ok = graft_document_replay_recipe (graft_window_get_document (self), path, applied, &error);
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
  gtk_widget_add_controller (GTK_WIDGET (graft_window_get_canvas (self)), GTK_EVENT_CONTROLLER (secondary));
}

void
graft_window_class_add_surgery_actions (GtkWidgetClass *widget_class)
{
  gtk_widget_class_install_action (widget_class, "win.edit-operation", "(sss)", edit_operation_action);
  gtk_widget_class_install_action (widget_class, "win.sidebar-edit", "(sa{sv})", sidebar_edit_action);
  gtk_widget_class_install_action (widget_class, "win.delete-selection", NULL, delete_selection_action);
  gtk_widget_class_install_action (widget_class, "win.save-recipe", NULL, recipe_file_action);
  gtk_widget_class_install_action (widget_class, "win.apply-recipe", NULL, recipe_file_action);
  gtk_widget_class_install_action (widget_class, "win.save-recipe-path", "s", recipe_path_action);
  gtk_widget_class_install_action (widget_class, "win.apply-recipe-path", "s", recipe_path_action);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_Delete, 0, "win.delete-selection", NULL);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_KP_Delete, 0, "win.delete-selection", NULL);
}
