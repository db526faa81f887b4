/* The window: its life cycle, showing what the document loaded and what
 * an edit changed, selection and navigation, Find, the view's settings.
 * Its parts are objects of their own or sets of actions beside it, each
 * with its header, that see the window through window.h, its properties,
 * its actions and the document's signals: window-files.c, window-edits.c,
 * window-analysis.c, window-debug.c (objects), window-surgery.c,
 * window-patterns.c, window-simplify.c (actions). The struct below is
 * this file's alone. */
#include "window.h"
#include "window-analysis.h"
#include "window-debug.h"
#include "window-edits.h"
#include "window-files.h"
#include "window-patterns.h"
#include "window-simplify.h"
#include "window-surgery.h"
#include "tensor-saver.h"
#include "analysis/cost.h"
#include "widgets/breadcrumbs.h"
#include "widgets/diagnostics-panel.h"

#include <string.h>
#include <sys/stat.h>

#include <glib/gstdio.h>

#include "loader.h"
#include "widgets/value-format.h"
#include "layout/shared-values.h"

struct _GraftWindow
{
  AdwApplicationWindow parent_instance;

  /* Template widgets (owned by the template, disposed with it); the
   * analysis part finds its own by name (window-analysis.c) */
  AdwToastOverlay *toast_overlay;
  AdwSplitButton *open_button;
  AdwWindowTitle *window_title;
  GtkStack *main_stack;
  AdwStatusPage *error_page;
  GtkSpinner *loading_spinner;
  GtkLabel *loading_label;
  GtkProgressBar *loading_progress;
  AdwFlap *flap;                    /* the sidebar beside the graph, or over it when narrow */
  GtkWidget *sidebar_handle;        /* the flap's separator, dragged to resize the sidebar */
  GtkRevealer *find_revealer;
  GraftFindPanel *find_panel;
  GraftBreadcrumbs *breadcrumbs;
  GraftGraphCanvas *canvas;
  GtkWidget *layout_status;
  GtkWidget *no_graph_page;
  GtkProgressBar *layout_progress;
  GraftNodeSidebar *sidebar;
  GraftRunPane *run_pane;

  /* Owned references */
  GSettings *settings;
  GraftDocument *document;          /* the model shown, its file and edit history: the window follows it */
  GraftTensorSaver *tensor_saver;   /* the sidebar's Save as .npy */
  /* The parts: each follows the document and reaches the window through window.h */
  GraftWindowFiles *files;          /* Recent, drops, the reload offer */
  GraftWindowEdits *edits;          /* edits, their proof, saving, closing */
  GraftWindowAnalysis *analysis;    /* the check's marks, the target, the cost, the Run pane */
  GraftWindowDebug *debug;          /* Debug → Reduce…, float16 */
  char *direction;                  /* behind the direction action */

  /* State */
  guint loading_pulse_id;
  int sidebar_drag_width;           /* the sidebar's width when the drag began */
  double sidebar_drag_x;            /* where it began, in window coordinates */
  gboolean sidebar_frozen;          /* while an edit swaps the graph: the new one fills the sidebar once */
  /* Properties behind the stateful actions */
  gboolean show_names;
  gboolean show_attributes;
  gboolean show_shapes;
  gboolean show_module_attributes;
  gboolean find_visible;
  gboolean sidebar_visible;
  gboolean diagnostics_visible;
  gboolean run_visible;
  gboolean show_timings;
  gboolean show_cost;               /* nodes coloured by cost (analysis/cost.h) */
  GraftCostMetric cost_metric;      /* ... by this metric (the cost-metric property) */
  gboolean wheel_zooms;             /* the wheel zooms instead of scrolling; Ctrl+wheel always zooms */
};


G_DEFINE_FINAL_TYPE (GraftWindow, graft_window, ADW_TYPE_APPLICATION_WINDOW)

enum {
  PROP_0,
  PROP_SHOW_NAMES,
  PROP_SHOW_ATTRIBUTES,
  PROP_SHOW_SHAPES,
  PROP_SHOW_MODULE_ATTRIBUTES,
  PROP_DIRECTION,
  PROP_FIND_VISIBLE,
  PROP_SIDEBAR_VISIBLE,
  PROP_DIAGNOSTICS_VISIBLE,
  PROP_RUN_VISIBLE,
  PROP_SHOW_TIMINGS,
  PROP_SHOW_COST,
  PROP_COST_METRIC,
  PROP_CHECKING,
  PROP_WHEEL_ZOOMS,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

/* ---------- small helpers ---------- */

GraftDocument *
graft_window_get_document (GraftWindow *self)
{
  g_return_val_if_fail (GRAFT_IS_WINDOW (self), NULL);
  return self->document;
}

GraftGraphCanvas *
graft_window_get_canvas (GraftWindow *self)
{
  g_return_val_if_fail (GRAFT_IS_WINDOW (self), NULL);
  return self->canvas;
}

GraftNodeSidebar *
graft_window_get_sidebar (GraftWindow *self)
{
  g_return_val_if_fail (GRAFT_IS_WINDOW (self), NULL);
  return self->sidebar;
}

GraftRunPane *
graft_window_get_run_pane (GraftWindow *self)
{
  g_return_val_if_fail (GRAFT_IS_WINDOW (self), NULL);
  return self->run_pane;
}

GraftFindPanel *
graft_window_get_find_panel (GraftWindow *self)
{
  g_return_val_if_fail (GRAFT_IS_WINDOW (self), NULL);
  return self->find_panel;
}

void
graft_window_add_toast (GraftWindow *self, AdwToast *toast)
{
  /* Disposed: the template's overlay is gone, and the toast with it. */
  if (self->toast_overlay == NULL)
    {
      g_object_unref (toast);
      return;
    }
  adw_toast_overlay_add_toast (self->toast_overlay, toast);
}

void
graft_window_show_toast (GraftWindow *self, const char *text)
{
  AdwToast *toast = adw_toast_new (text);

  adw_toast_set_timeout (toast, 5);
  graft_window_add_toast (self, toast);
}

/* An edit applied on a worker (window-edits.c). */
static gboolean
edit_under_way (GraftWindow *self)
{
  return self->edits != NULL && graft_window_edits_is_busy (self->edits);
}

/* The window's functions for its parts' dialogs, through the parts; none
 * once the window is disposed. */
gboolean
graft_window_edits_allowed (GraftWindow *self)
{
  return self->edits != NULL && graft_window_edits_can_start (self->edits);
}

gboolean
graft_window_try_edit (GraftWindow *self, GraftEdit *edit, GError **error)
{
  return self->edits != NULL && graft_window_edits_try (self->edits, edit, error);
}

void
graft_window_apply_edit (GraftWindow *self, GraftEdit *edit)
{
  if (self->edits != NULL)
    graft_window_edits_apply (self->edits, edit);
}

void
graft_window_refresh_marks (GraftWindow *self)
{
  if (self->analysis != NULL)
    graft_window_analysis_refresh_marks (self->analysis);
}

void
graft_window_show_edit_error (GraftWindow *self, const char *heading, const GError *error)
{
  GtkWidget *dialog = adw_message_dialog_new (GTK_WINDOW (self), heading, error->message);

  adw_message_dialog_add_response (ADW_MESSAGE_DIALOG (dialog), "close", "_Close");
  gtk_window_present (GTK_WINDOW (dialog));
}

static gboolean
shows_function_body (GraftWindow *self, GraftGraph *graph)
{
  GPtrArray *functions = graft_model_get_functions (graft_document_get_model (self->document));

  for (guint i = 0; i < functions->len; i++)
    if (((GraftFunction *) g_ptr_array_index (functions, i))->body == graph)
      return TRUE;
  return FALSE;
}

void
graft_window_update_action_states (GraftWindow *self)
{
  GraftModel *model = graft_document_get_model (self->document);
  GraftEditHistory *history = graft_document_get_history (self->document);
  gboolean has_model = model != NULL;
  gboolean running = graft_run_pane_is_running (self->run_pane);
  gboolean idle = has_model && !running;
  /* The check only reads the graph, as a run and saving do; an edit
   * replaces it, so edits wait for the check. */
  gboolean editable = idle && !graft_document_is_checking (self->document) && !edit_under_way (self);
  const char *idle_actions[] = {
    "win.save", "win.save-as", "win.save-as-path", "win.run", "win.run-new-shape",
  };
  const char *edit_actions[] = {
    /* window-surgery.c */
    "win.edit-operation", "win.sidebar-edit", "win.delete-selection", "win.apply-recipe", "win.apply-recipe-path",
    /* window-simplify.c */
    "win.simplify-dialog",
    /* window-debug.c */
    "win.float16-auto-keep-dialog", "win.float16-auto-keep",
  };
  GraftGraph *graph = has_model ? graft_graph_canvas_get_graph (self->canvas) : NULL;
  GraftGraph *main_graph = has_model ? graft_model_get_graph (graft_document_get_model (self->document)) : NULL;
  gboolean has_drawing = main_graph != NULL && main_graph->nodes->len > 0;
  const char *model_actions[] = {
    "win.export", "win.export-to", "win.zoom-in", "win.zoom-out", "win.zoom-fit", "win.zoom-reset",
    "win.zoom-selection", "win.expand-all", "win.collapse-all", "win.find",
    "win.show-find", "win.find-text", "win.select-node", "win.select-value", "win.show-sidebar",
    "win.show-diagnostics", "win.show-run", "win.show-timings", "win.show-cost", "win.cost-metric", "win.set-run-dim", "win.filter-diagnostics",
    "win.save-outputs", "win.save-outputs-to", "win.set-run-input", "win.set-run-input-shape",
    /* window-debug.c */
    "win.reduce",
    /* window-files.c, window-surgery.c */
    "win.compare-with", "win.compare-path", "win.save-recipe-path",
  };

  for (guint i = 0; i < G_N_ELEMENTS (model_actions); i++)
    gtk_widget_action_set_enabled (GTK_WIDGET (self), model_actions[i], has_model);
  /* A weights-only file has nothing to draw: no blank pictures. (The
   * model's graph: while an edit is undone the canvas still names the
   * graph being replaced.) */
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "win.export", has_drawing);
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "win.export-to", has_drawing);
  /* Compared, not read: between an undo (which frees the graph) and the
   * canvas being given the new one, the canvas still names the old one. */
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "win.parent-graph",
                                 graph != NULL && graph != graft_model_get_graph (graft_document_get_model (self->document))
                                 && !shows_function_body (self, graph));
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "win.cancel-load", graft_document_is_loading (self->document));
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "win.cancel-edit", edit_under_way (self));
  for (guint i = 0; i < G_N_ELEMENTS (idle_actions); i++)
    gtk_widget_action_set_enabled (GTK_WIDGET (self), idle_actions[i], idle);
  for (guint i = 0; i < G_N_ELEMENTS (edit_actions); i++)
    gtk_widget_action_set_enabled (GTK_WIDGET (self), edit_actions[i], editable);
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "win.cancel-run", running);
  /* Compare with Saved needs a file (a model shown from Python has none). */
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "win.compare-saved",
                                 has_model && graft_document_get_path (self->document) != NULL);
  /* The menu's Save Edits As Recipe… asks for a name only when there is
   * something to save. */
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "win.save-recipe",
                                 has_model && graft_edit_history_get_applied (history)->len > 0);
  /* Export as ONNX…: the menu shows it for what model/lower converts. */
  {
    GraftModelFormat format = has_model ? graft_model_get_format (graft_document_get_model (self->document)) : GRAFT_MODEL_FORMAT_ONNX;
    gtk_widget_action_set_enabled (GTK_WIDGET (self), "win.export-onnx",
                                   idle && (format == GRAFT_MODEL_FORMAT_TORCHSCRIPT ||
                                            format == GRAFT_MODEL_FORMAT_EXPORTED_PROGRAM));
  }
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "win.undo",
                                 editable && graft_edit_history_can_undo (history));
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "win.redo",
                                 editable && graft_edit_history_can_redo (history));
}

static void
update_action_states (GraftWindow *self)
{
  graft_window_update_action_states (self);
}

static void
set_titles (GraftWindow *self, const char *title, const char *subtitle)
{
  g_autofree char *window_title = g_strdup_printf ("%s — Graft", title);

  adw_window_title_set_title (self->window_title, title);
  adw_window_title_set_subtitle (self->window_title, subtitle != NULL ? subtitle : "");
  gtk_window_set_title (GTK_WINDOW (self), window_title);
}

/* What the canvas says when there is no graph: a state_dict holds weights
 * only; torch.save(model) holds the module tree but not its computation. */
static void
update_no_graph_page (GraftWindow *self)
{
  AdwStatusPage *page = ADW_STATUS_PAGE (self->no_graph_page);
  const char *module_class = NULL;

  for (guint i = 0; graft_document_get_model (self->document) != NULL && i < graft_model_get_n_metadata (graft_document_get_model (self->document)); i++)
    {
      const char *key, *value;

      graft_model_get_metadata (graft_document_get_model (self->document), i, &key, &value);
      if (g_strcmp0 (key, "pickled module") == 0)
        module_class = value;
    }
  if (module_class == NULL)
    {
      adw_status_page_set_title (page, "No Graph");
      adw_status_page_set_description (page, "This file holds weights only; its tensors are listed in the details");
      return;
    }
  {
    g_autofree char *escaped = g_markup_escape_text (module_class, -1);
    g_autofree char *description =
      g_strdup_printf ("torch.save(model) stored the %s object, not its computation: its modules, parameters and "
                       "buffers are listed in the details. For the graph, save the model with "
                       "torch.jit.save(torch.jit.trace(model, example_inputs)), torch.jit.script(model), or "
                       "torch.export.save(torch.export.export(model, example_inputs))", escaped);

    adw_status_page_set_title (page, "A Pickled Module Has No Graph");
    adw_status_page_set_description (page, description);
  }
}

void
graft_window_show_graph (GraftWindow *self, GraftGraph *graph)
{
  graft_graph_canvas_set_graph (self->canvas, graft_document_get_model (self->document), graph);
  graft_breadcrumbs_set_graph (self->breadcrumbs, graph);
  gtk_widget_set_visible (self->no_graph_page, graph == NULL || graph->nodes->len == 0);
  update_no_graph_page (self);
  graft_node_sidebar_show_model (self->sidebar, graft_document_get_model (self->document));
  update_action_states (self);
}

/* ---------- selection and navigation ---------- */

void
graft_window_update_sidebar (GraftWindow *self)
{
  GraftNode *node = graft_graph_canvas_get_selected_node (self->canvas);
  GraftValue *value = graft_graph_canvas_get_selected_value (self->canvas);

  if (graft_document_get_model (self->document) == NULL || self->sidebar_frozen)
    return;
  if (node != NULL)
    graft_node_sidebar_show_node (self->sidebar, graft_document_get_model (self->document), node);
  else if (value != NULL)
    graft_node_sidebar_show_value (self->sidebar, graft_document_get_model (self->document), value);
  else
    graft_node_sidebar_show_model (self->sidebar, graft_document_get_model (self->document));
}

static void
on_selection_changed (GraftWindow *self)
{
  graft_window_update_sidebar (self);
}

static void
select_item (GraftWindow *self, GraftNode *node, GraftValue *value)
{
  GraftGraph *owner = node != NULL ? node->graph : value->graph;

  if (owner != graft_graph_canvas_get_graph (self->canvas))
    graft_window_show_graph (self, owner);
  if (node != NULL)
    graft_graph_canvas_select_node (self->canvas, node);
  else
    graft_graph_canvas_select_value (self->canvas, value);
  /* The canvas notifies only on change; show the details in any case. */
  on_selection_changed (self);
}

static void
on_item_activated (GraftWindow *self, gpointer node, gpointer value, GtkWidget *source)
{
  if (node != NULL || value != NULL)
    select_item (self, node, value);
}

/* Enter, Ctrl+G or a click in Find's list: the match at a size one can
 * read, wherever the view was. */
static void
on_find_item_activated (GraftWindow *self, gpointer node, gpointer value, GtkWidget *source)
{
  if (node == NULL && value == NULL)
    return;
  select_item (self, node, value);
  graft_graph_canvas_show_selection_readable (self->canvas);
}

/* Every match highlighted on the canvas while Find is open. */
void
graft_window_update_found (GraftWindow *self)
{
  g_autoptr(GPtrArray) items = NULL;

  if (self->canvas == NULL || self->find_panel == NULL)
    return;  /* disposing */
  if (self->find_visible)
    items = graft_find_panel_dup_matched_items (self->find_panel);
  graft_graph_canvas_set_found (self->canvas, items);
}

static void
on_find_matches_changed (GraftWindow *self)
{
  graft_window_update_found (self);
}

static void
on_graph_activated (GraftWindow *self, gpointer graph, GraftBreadcrumbs *breadcrumbs)
{
  if (graph != NULL)
    graft_window_show_graph (self, graph);
}

static void
on_node_activated (GraftWindow *self, GraftNode *node, GraftGraphCanvas *canvas)
{
  g_autoptr(GPtrArray) subgraphs = NULL;
  GraftAttribute *then_branch;

  if (node == NULL)
    return;
  /* ONNX files keep attributes sorted, which puts else before then; the
   * breadcrumbs offer the sibling bodies. */
  then_branch = graft_node_get_attribute (node, "then_branch");
  if (then_branch != NULL && then_branch->type == GRAFT_ATTR_GRAPH && then_branch->g != NULL)
    {
      graft_window_show_graph (self, then_branch->g);
      return;
    }
  subgraphs = graft_node_get_subgraphs (node);
  if (subgraphs->len > 0)
    graft_window_show_graph (self, g_ptr_array_index (subgraphs, 0));
}

static void
on_find_stop (GraftWindow *self)
{
  g_object_set (self, "find-visible", FALSE, NULL);
}

typedef struct {
  const char *name;
  GraftNode *found;
} NodeLookup;

static void
match_node_name (GraftNode *node, gpointer user_data)
{
  NodeLookup *lookup = user_data;

  if (lookup->found == NULL && g_strcmp0 (node->name, lookup->name) == 0)
    lookup->found = node;
}

/* The node in the graph shown, else anywhere in the model. */
static GraftNode *
find_node_by_name (GraftWindow *self, const char *name)
{
  GraftGraph *current = graft_graph_canvas_get_graph (self->canvas);
  NodeLookup lookup = { name, NULL };

  if (current != NULL)
    for (guint i = 0; i < current->nodes->len && lookup.found == NULL; i++)
      match_node_name (g_ptr_array_index (current->nodes, i), &lookup);
  if (lookup.found == NULL)
    graft_graph_foreach_node_recursive (graft_model_get_graph (graft_document_get_model (self->document)), match_node_name, &lookup);
  return lookup.found;
}

static void
select_node_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);
  const char *name = g_variant_get_string (parameter, NULL);
  GraftNode *node;

  if (graft_document_get_model (self->document) == NULL)
    return;
  node = find_node_by_name (self, name);
  if (node == NULL)
    {
      g_autofree char *message = g_strdup_printf ("No node named “%s” in this model", name);

      graft_window_show_toast (self, message);
      return;
    }
  select_item (self, node, NULL);
}

/* The value named name in the graph shown (or one enclosing it), or NULL. */
static GraftValue *
find_shown_value (GraftWindow *self, const char *name)
{
  GraftGraph *current = graft_graph_canvas_get_graph (self->canvas);

  return current != NULL ? graft_graph_resolve_value (current, name) : NULL;
}

static void
select_value_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);
  const char *name = g_variant_get_string (parameter, NULL);
  GraftValue *value;

  if (graft_document_get_model (self->document) == NULL)
    return;
  value = find_shown_value (self, name);
  if (value == NULL)
    {
      g_autofree char *message = g_strdup_printf ("No value named “%s” in this graph", name);

      graft_window_show_toast (self, message);
      return;
    }
  select_item (self, NULL, value);
}

/* From a reader of a value listed at each reader (a constant read far
 * apart): on to the next reader, round the list. */
static void
next_reader_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);
  const char *name = g_variant_get_string (parameter, NULL);
  GraftValue *value;
  GraftNode *next;
  guint position = 0;
  g_autofree char *message = NULL;

  if (graft_document_get_model (self->document) == NULL)
    return;
  value = find_shown_value (self, name);
  next = value != NULL ? graft_shared_values_next_reader (value, graft_graph_canvas_get_selected_node (self->canvas),
                                                          &position)
                       : NULL;
  if (next == NULL)
    {
      message = g_strdup_printf ("No value named “%s” with readers in this graph", name);
      graft_window_show_toast (self, message);
      return;
    }
  select_item (self, next, NULL);
  message = g_strdup_printf ("Reader %u of %u of “%s”: %s", position, graft_shared_values_count_readers (value),
                             value->name, next->name);
  graft_window_show_toast (self, message);
}

static void
parent_graph_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);
  GraftGraph *graph = graft_graph_canvas_get_graph (self->canvas);

  if (graph != NULL && graph->parent_graph != NULL)
    graft_window_show_graph (self, graph->parent_graph);
}

static void
find_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);

  g_object_set (self, "find-visible", TRUE, NULL);
  graft_find_panel_focus_entry (self->find_panel);
}

static void
find_text_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);

  g_object_set (self, "find-visible", TRUE, NULL);
  graft_find_panel_set_text (self->find_panel, g_variant_get_string (parameter, NULL));
}

/* "Run with New Shape" after making a dim dynamic: a size other than the
 * traced one, from the edits part's toast to the analysis part's run. */
static void
run_new_shape_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);

  graft_window_edits_dismiss_shape_toast (self->edits);
  graft_window_analysis_run_with_dim (self->analysis, g_variant_get_string (parameter, NULL));
}

/* The canvas owns the view actions; the toolbar and the window shortcuts
 * are outside it, so the window forwards them. */
static void
forward_to_canvas (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);
  g_autofree char *canvas_action = g_strconcat ("canvas.", action_name + strlen ("win."), NULL);

  gtk_widget_activate_action_variant (GTK_WIDGET (self->canvas), canvas_action, NULL);
}

/* ---------- loading ---------- */

/* A file that no longer opens leaves Recent Models (it may have been
 * listed from an earlier, successful open). */
static void
forget_recent (GraftWindow *self, const char *path)
{
  g_autoptr(GFile) file = g_file_new_for_commandline_arg (path);
  g_autofree char *uri = g_file_get_uri (file);

  GtkRecentManager *recent = gtk_recent_manager_get_default ();

  if (gtk_recent_manager_has_item (recent, uri))
    gtk_recent_manager_remove_item (recent, uri, NULL);
}

static void
show_load_error (GraftWindow *self, const char *path, const GError *error)
{
  g_autofree char *basename = g_path_get_basename (path);
  g_autofree char *title = g_strdup_printf ("Could Not Open “%s”", basename);
  g_autofree char *escaped = g_markup_escape_text (error->message, -1);

  if (graft_document_get_model (self->document) != NULL)
    {
      /* Keep the model on screen; the toast names the file, the dialog
       * gives the whole reason. */
      GtkWidget *dialog = adw_message_dialog_new (GTK_WINDOW (self), title, error->message);

      forget_recent (self, path);

      adw_message_dialog_add_response (ADW_MESSAGE_DIALOG (dialog), "close", "_Close");
      gtk_window_present (GTK_WINDOW (dialog));
      gtk_stack_set_visible_child_name (self->main_stack, "model");
      return;
    }
  forget_recent (self, path);
  adw_status_page_set_title (self->error_page, title);
  adw_status_page_set_description (self->error_page, escaped);
  gtk_stack_set_visible_child_name (self->main_stack, "error");
  set_titles (self, basename, "Not opened");
}

static void
add_to_recent (GraftWindow *self, const char *path)
{
  g_autoptr(GFile) file = g_file_new_for_path (path);
  g_autofree char *uri = g_file_get_uri (file);

  gtk_recent_manager_add_item (gtk_recent_manager_get_default (), uri);
}

static void stop_loading_feedback (GraftWindow *self);

static void
update_title (GraftWindow *self)
{
  gboolean modified = graft_document_is_modified (self->document);
  const char *base = graft_document_get_title (self->document);
  g_autofree char *title = NULL;
  g_autofree char *window_title = NULL;

  base = base != NULL ? base : "Graft";
  title = modified ? g_strdup_printf ("• %s", base) : g_strdup (base);
  window_title = g_strdup_printf ("%s — Graft", title);

  adw_window_title_set_title (self->window_title, title);
  gtk_window_set_title (GTK_WINDOW (self), window_title);
}

/* Whatever changed the graph (an edit, an undo, a recipe, a fix for the
 * target), the graph object was replaced and the old one freed: nothing
 * may show it any more. The new one is shown at once and checked on a
 * worker thread (seconds for a big transformer); its marks and inferred
 * shapes appear when the check lands. */
static void
on_document_changed (GraftWindow *self, int change, const char *description, GraftDocument *document)
{
  GraftModel *model = graft_document_get_model (self->document);
  GraftGraph *graph = graft_model_get_graph (model);

  /* First let go of the old graph, so that nothing below lays it out.
   * Clearing the selection would refill the sidebar, which the new graph
   * does again below: each fill of the model overview or a node's details
   * is tens of ms on a big model, on the UI thread. */
  self->sidebar_frozen = TRUE;
  graft_graph_canvas_set_graph (self->canvas, model, NULL);
  graft_breadcrumbs_set_graph (self->breadcrumbs, NULL);
  graft_find_panel_set_graph (self->find_panel, NULL);
  graft_window_analysis_clear (self->analysis);
  graft_run_pane_set_model (self->run_pane, model);
  update_title (self);
  self->sidebar_frozen = FALSE;

  /* A verdict on the previous graph, or a wait for one, would describe the
   * wrong model. */
  graft_window_edits_forget_verdict (self->edits);
  graft_window_show_graph (self, graph);
  /* An edit keeps the groups the user had opened. */
  graft_window_edits_restore_groups (self->edits);
  graft_find_panel_set_graph (self->find_panel, graph);
  graft_window_analysis_check (self->analysis);
  graft_window_update_action_states (self);
  graft_window_edits_restore_place (self->edits);
}

/* The document loaded a model from path: the window shows it. */
static void
on_document_loaded (GraftWindow *self, const char *path, GraftDocument *document)
{
  GraftModel *model = graft_document_get_model (document);
  g_autofree char *description = graft_model_describe (model);
  GraftGraph *graph;

  stop_loading_feedback (self);
  /* Let go of the graph shown before, so that nothing below lays it out. */
  graft_graph_canvas_set_graph (self->canvas, NULL, NULL);
  graft_window_analysis_clear (self->analysis);
  graft_window_edits_reset (self->edits);
  update_title (self);
  adw_window_title_set_subtitle (self->window_title, description);
  graft_run_pane_set_model (self->run_pane, model);
  graph = graft_model_get_graph (model);
  gtk_stack_set_visible_child_name (self->main_stack, "model");
  graft_find_panel_set_graph (self->find_panel, graph);
  /* A weights-only file has no graph: the sidebar lists its tensors. */
  graft_window_show_graph (self, graph);
  gtk_widget_grab_focus (GTK_WIDGET (self->canvas));
  add_to_recent (self, path);
  /* Lint and shape inference only read the model: the graph is usable
   * while they run, and their marks and shapes appear when they land. */
  graft_window_analysis_check (self->analysis);
  update_action_states (self);
}

/* Readers that cannot tell how far they are never report a fraction
 * below 1: the bar pulses until a real one arrives. */
static gboolean
pulse_loading_progress (gpointer user_data)
{
  GraftWindow *self = user_data;

  gtk_progress_bar_pulse (self->loading_progress);
  return G_SOURCE_CONTINUE;
}

static void
on_load_progress (GraftWindow *self, double fraction, GraftDocument *document)
{
  g_clear_handle_id (&self->loading_pulse_id, g_source_remove);
  gtk_progress_bar_set_fraction (self->loading_progress, CLAMP (fraction, 0.0, 1.0));
}

static void
stop_loading_feedback (GraftWindow *self)
{
  g_clear_handle_id (&self->loading_pulse_id, g_source_remove);
  gtk_spinner_stop (self->loading_spinner);
  update_action_states (self);
}

static void
on_load_failed (GraftWindow *self, const char *path, const GError *error, GraftDocument *document)
{
  stop_loading_feedback (self);
  if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED)
           || g_error_matches (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_CANCELLED))
    gtk_stack_set_visible_child_name (self->main_stack, graft_document_get_model (document) != NULL ? "model" : "empty");
  else
    show_load_error (self, path, error);

  update_action_states (self);
}

void
graft_window_open_path (GraftWindow *self, const char *path)
{
  g_autofree char *basename = g_path_get_basename (path);
  g_autofree char *label = g_strdup_printf ("Opening “%s”…", basename);

  if (!graft_window_edits_confirm_open (self->edits, path))
    return;
  /* A check of the model shown goes on: it still applies if this file
   * cannot be opened, and the new model's check replaces it if it can. */
  graft_window_edits_forget_verdict (self->edits);
  graft_document_cancel_load (self->document);
  stop_loading_feedback (self);
  if (!graft_document_load (self->document, path))
    return;   /* on_load_failed() said why */

  gtk_label_set_text (self->loading_label, label);
  gtk_progress_bar_set_fraction (self->loading_progress, 0);
  g_clear_handle_id (&self->loading_pulse_id, g_source_remove);
  self->loading_pulse_id = g_timeout_add (100, pulse_loading_progress, self);
  gtk_spinner_start (self->loading_spinner);
  gtk_stack_set_visible_child_name (self->main_stack, "loading");
  update_action_states (self);
}

void
graft_window_open_file (GraftWindow *self, GFile *file)
{
  g_autofree char *path = NULL;

  g_return_if_fail (GRAFT_IS_WINDOW (self));

  path = g_file_get_path (file);
  if (path == NULL)
    {
      g_autofree char *uri = g_file_get_uri (file);
      g_autoptr(GError) error = g_error_new (G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                                             "%s is not a local file; Graft opens local files only", uri);

      show_load_error (self, uri, error);
      return;
    }
  graft_window_open_path (self, path);
}

gboolean
graft_window_is_empty (GraftWindow *self)
{
  return graft_document_get_model (self->document) == NULL && !graft_document_is_loading (self->document);
}

static void
cancel_load_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);

  if (!graft_document_is_loading (self->document))
    return;
  /* Back at once: the worker's late result is ignored. */
  graft_document_cancel_load (self->document);
  stop_loading_feedback (self);
  gtk_stack_set_visible_child_name (self->main_stack, graft_document_get_model (self->document) != NULL ? "model" : "empty");
}

gboolean
graft_window_canvas_is_busy (GraftWindow *self)
{
  gboolean busy = FALSE;

  g_object_get (self->canvas, "busy", &busy, NULL);
  return busy;
}

void
graft_window_start (GraftWindow *self)
{
  g_return_if_fail (GRAFT_IS_WINDOW (self));

  gtk_stack_set_visible_child_name (self->main_stack, "empty");
}

static void
on_canvas_busy_changed (GraftWindow *self)
{
  gboolean busy = graft_window_canvas_is_busy (self);

  gtk_widget_set_visible (self->layout_status, busy);
  if (!busy && self->edits != NULL)
    graft_window_edits_restore_place (self->edits);
}

static void
on_canvas_progress_changed (GraftWindow *self)
{
  double progress = 0;

  g_object_get (self->canvas, "progress", &progress, NULL);
  gtk_progress_bar_set_fraction (self->layout_progress, CLAMP (progress, 0.0, 1.0));
}

/* ---------- properties ---------- */

static void
set_find_visible (GraftWindow *self, gboolean visible)
{
  if (self->find_visible == visible)
    return;
  self->find_visible = visible;
  gtk_revealer_set_reveal_child (self->find_revealer, visible);
  graft_window_update_found (self);
  if (visible)
    graft_find_panel_focus_entry (self->find_panel);
  else
    gtk_widget_grab_focus (GTK_WIDGET (self->canvas));
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_FIND_VISIBLE]);
}

static void
graft_window_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  GraftWindow *self = GRAFT_WINDOW (object);

  switch (prop_id)
    {
    case PROP_SHOW_NAMES: g_value_set_boolean (value, self->show_names); break;
    case PROP_SHOW_ATTRIBUTES: g_value_set_boolean (value, self->show_attributes); break;
    case PROP_SHOW_SHAPES: g_value_set_boolean (value, self->show_shapes); break;
    case PROP_SHOW_MODULE_ATTRIBUTES: g_value_set_boolean (value, self->show_module_attributes); break;
    case PROP_DIRECTION: g_value_set_string (value, self->direction); break;
    case PROP_FIND_VISIBLE: g_value_set_boolean (value, self->find_visible); break;
    case PROP_SIDEBAR_VISIBLE: g_value_set_boolean (value, self->sidebar_visible); break;
    case PROP_DIAGNOSTICS_VISIBLE: g_value_set_boolean (value, self->diagnostics_visible); break;
    case PROP_RUN_VISIBLE: g_value_set_boolean (value, self->run_visible); break;
    case PROP_SHOW_TIMINGS: g_value_set_boolean (value, self->show_timings); break;
    case PROP_SHOW_COST: g_value_set_boolean (value, self->show_cost); break;
    case PROP_COST_METRIC: g_value_set_string (value, graft_cost_metrics ()[self->cost_metric].name); break;
    /* An edit applied on a worker ends in a check: busy all the same. */
    case PROP_CHECKING:
      g_value_set_boolean (value, graft_document_is_checking (self->document) || edit_under_way (self));
      break;
    case PROP_WHEEL_ZOOMS: g_value_set_boolean (value, self->wheel_zooms); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static gboolean
set_boolean (GraftWindow *self, gboolean *field, const GValue *value, guint prop_id)
{
  gboolean new_value = g_value_get_boolean (value);

  if (*field == new_value)
    return FALSE;
  *field = new_value;
  g_object_notify_by_pspec (G_OBJECT (self), properties[prop_id]);
  return TRUE;
}

static void
graft_window_set_property (GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec)
{
  GraftWindow *self = GRAFT_WINDOW (object);
  const char *direction;

  switch (prop_id)
    {
    case PROP_SHOW_NAMES: set_boolean (self, &self->show_names, value, prop_id); break;
    case PROP_SHOW_ATTRIBUTES: set_boolean (self, &self->show_attributes, value, prop_id); break;
    case PROP_SHOW_SHAPES: set_boolean (self, &self->show_shapes, value, prop_id); break;
    case PROP_SHOW_MODULE_ATTRIBUTES: set_boolean (self, &self->show_module_attributes, value, prop_id); break;
    case PROP_DIRECTION:
      direction = g_value_get_string (value);
      if (g_strcmp0 (direction, "TB") != 0 && g_strcmp0 (direction, "LR") != 0)
        direction = "TB";
      if (g_strcmp0 (self->direction, direction) != 0)
        {
          g_free (self->direction);
          self->direction = g_strdup (direction);
          g_object_notify_by_pspec (object, pspec);
        }
      break;
    case PROP_FIND_VISIBLE: set_find_visible (self, g_value_get_boolean (value)); break;
    case PROP_SIDEBAR_VISIBLE:
      if (set_boolean (self, &self->sidebar_visible, value, prop_id))
        {
          G_GNUC_BEGIN_IGNORE_DEPRECATIONS
          adw_flap_set_reveal_flap (self->flap, self->sidebar_visible);
          G_GNUC_END_IGNORE_DEPRECATIONS
        }
      break;
    case PROP_DIAGNOSTICS_VISIBLE: set_boolean (self, &self->diagnostics_visible, value, prop_id); break;
    case PROP_RUN_VISIBLE:
      /* window-analysis.c shows the pane. */
      set_boolean (self, &self->run_visible, value, prop_id);
      break;
    case PROP_SHOW_TIMINGS: set_boolean (self, &self->show_timings, value, prop_id); break;
    case PROP_SHOW_COST: set_boolean (self, &self->show_cost, value, prop_id); break;
    case PROP_COST_METRIC:
      {
        GraftCostMetric metric = GRAFT_COST_FLOPS;
        graft_cost_metric_from_name (g_value_get_string (value), &metric);
        if (metric != self->cost_metric)
          {
            self->cost_metric = metric;
            g_object_notify_by_pspec (object, pspec);
          }
      }
      break;
    case PROP_WHEEL_ZOOMS: set_boolean (self, &self->wheel_zooms, value, prop_id); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

/* Folding hides the sidebar and unfolding shows it again (AdwFlap does
 * that itself): the Details toggle and F9 follow. */
static void
on_flap_revealed (GraftWindow *self)
{
  gboolean revealed;

  G_GNUC_BEGIN_IGNORE_DEPRECATIONS
  revealed = adw_flap_get_reveal_flap (self->flap);
  G_GNUC_END_IGNORE_DEPRECATIONS
  if (revealed != self->sidebar_visible)
    {
      self->sidebar_visible = revealed;
      g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_SIDEBAR_VISIBLE]);
    }
}

/* The details are as wide as the user drags them: at least their own
 * minimum (the .ui's width-request), at most what the rest leaves. */
#define SIDEBAR_MIN_WIDTH 320
#define GRAPH_MIN_WIDTH 400

/* The pointer's x in the window: the handle moves with the drag, so its
 * own offsets would only count half of it. */
static double
handle_to_window_x (GraftWindow *self, double handle_x)
{
  graphene_point_t point;

  if (!gtk_widget_compute_point (self->sidebar_handle, GTK_WIDGET (self), &GRAPHENE_POINT_INIT (handle_x, 0), &point))
    return handle_x;
  return point.x;
}

static void
on_sidebar_drag_begin (GtkGestureDrag *gesture, double x, double y, GraftWindow *self)
{
  self->sidebar_drag_width = gtk_widget_get_width (GTK_WIDGET (self->sidebar));
  self->sidebar_drag_x = handle_to_window_x (self, x);
}

static void
on_sidebar_drag_update (GtkGestureDrag *gesture, double offset_x, double offset_y, GraftWindow *self)
{
  GtkWidget *content;
  int content_min = GRAPH_MIN_WIDTH, widest;
  double start_x, start_y, moved;
  int width;

  /* Wider than what the graph, Find and Problems leave would fold the
   * details away under the pointer. */
  G_GNUC_BEGIN_IGNORE_DEPRECATIONS
  content = adw_flap_get_content (self->flap);
  G_GNUC_END_IGNORE_DEPRECATIONS
  gtk_widget_measure (content, GTK_ORIENTATION_HORIZONTAL, -1, &content_min, NULL, NULL, NULL);
  widest = MAX (SIDEBAR_MIN_WIDTH, gtk_widget_get_width (GTK_WIDGET (self)) - content_min
                                   - gtk_widget_get_width (self->sidebar_handle));

  gtk_gesture_drag_get_start_point (gesture, &start_x, &start_y);
  moved = handle_to_window_x (self, start_x + offset_x) - self->sidebar_drag_x;
  /* The sidebar is on the right: dragging left widens it. */
  width = CLAMP (self->sidebar_drag_width - (int) moved, SIDEBAR_MIN_WIDTH, widest);
  gtk_widget_set_size_request (GTK_WIDGET (self->sidebar), width, -1);
}

static void
init_sidebar_handle (GraftWindow *self)
{
  GtkGesture *drag = gtk_gesture_drag_new ();

  gtk_widget_set_cursor_from_name (self->sidebar_handle, "col-resize");
  g_signal_connect (drag, "drag-begin", G_CALLBACK (on_sidebar_drag_begin), self);
  g_signal_connect (drag, "drag-update", G_CALLBACK (on_sidebar_drag_update), self);
  gtk_widget_add_controller (self->sidebar_handle, GTK_EVENT_CONTROLLER (drag));
}

/* ---------- life cycle ---------- */

static void
restore_window_size (GraftWindow *self)
{
  int width = 1200, height = 760;

  if (self->settings != NULL)
    {
      g_settings_get (self->settings, "window-size", "(ii)", &width, &height);
      if (g_settings_get_boolean (self->settings, "window-maximized"))
        gtk_window_maximize (GTK_WINDOW (self));
    }
  gtk_window_set_default_size (GTK_WINDOW (self), width, height);
}

static gboolean
graft_window_close_request (GtkWindow *window)
{
  GraftWindow *self = GRAFT_WINDOW (window);

  if (graft_window_edits_close_request (self->edits))
    return TRUE;
  if (self->settings != NULL)
    {
      int width, height;

      gtk_window_get_default_size (window, &width, &height);
      g_settings_set (self->settings, "window-size", "(ii)", width, height);
      g_settings_set_boolean (self->settings, "window-maximized", gtk_window_is_maximized (window));
    }
  return GTK_WINDOW_CLASS (graft_window_parent_class)->close_request (window);
}

static void
bind_view_settings (GraftWindow *self)
{
  const char *keys[] = { "show-names", "show-attributes", "show-shapes", "show-module-attributes", "direction",
                         "wheel-zooms" };

  for (guint i = 0; i < G_N_ELEMENTS (keys); i++)
    {
      if (self->settings != NULL)
        g_settings_bind (self->settings, keys[i], self, keys[i], G_SETTINGS_BIND_DEFAULT);
      g_object_bind_property (self, keys[i], self->canvas, keys[i], G_BINDING_SYNC_CREATE);
    }
  g_object_bind_property (adw_style_manager_get_default (), "dark", self->canvas, "dark",
                          G_BINDING_SYNC_CREATE);
}

static void
graft_window_dispose (GObject *object)
{
  GraftWindow *self = GRAFT_WINDOW (object);

  graft_document_cancel_load (self->document);
  g_clear_handle_id (&self->loading_pulse_id, g_source_remove);
  if (self->files != NULL)
    g_object_run_dispose (G_OBJECT (self->files));
  g_clear_object (&self->files);
  /* The window shows the document until the end, but follows it no more. */
  g_signal_handlers_disconnect_by_data (self->document, self);
  /* A run still going holds the pane past the window: its end must not
   * reach this window's handlers (they read template children). */
  if (self->run_pane != NULL)
    g_signal_handlers_disconnect_by_data (self->run_pane, self);
  if (self->analysis != NULL)
    g_object_run_dispose (G_OBJECT (self->analysis));
  g_clear_object (&self->analysis);
  gtk_widget_dispose_template (GTK_WIDGET (self), GRAFT_TYPE_WINDOW);
  /* Its search must end with the window, whoever still holds it. */
  if (self->debug != NULL)
    g_object_run_dispose (G_OBJECT (self->debug));
  g_clear_object (&self->debug);
  g_clear_object (&self->tensor_saver);
  graft_document_cancel_check (self->document);
  /* Edits under way and their proofs end with the window. */
  if (self->edits != NULL)
    g_object_run_dispose (G_OBJECT (self->edits));
  g_clear_object (&self->edits);
  graft_document_set_model (self->document, NULL, NULL);
  G_OBJECT_CLASS (graft_window_parent_class)->dispose (object);
}

static void
graft_window_finalize (GObject *object)
{
  GraftWindow *self = GRAFT_WINDOW (object);

  g_clear_object (&self->settings);
  g_free (self->direction);
  g_clear_object (&self->document);
  G_OBJECT_CLASS (graft_window_parent_class)->finalize (object);
}

static void
install_properties (GObjectClass *object_class)
{
  properties[PROP_SHOW_NAMES] =
    g_param_spec_boolean ("show-names", NULL, NULL, TRUE, G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_SHOW_ATTRIBUTES] =
    g_param_spec_boolean ("show-attributes", NULL, NULL, TRUE, G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_SHOW_SHAPES] =
    g_param_spec_boolean ("show-shapes", NULL, NULL, TRUE, G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_SHOW_MODULE_ATTRIBUTES] =
    g_param_spec_boolean ("show-module-attributes", NULL, NULL, FALSE,
                          G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  /* "flops", "macs", "parameters", "activations", "time" (analysis/cost.h) */
  properties[PROP_COST_METRIC] =
    g_param_spec_string ("cost-metric", NULL, NULL, "flops", G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_DIRECTION] =
    g_param_spec_string ("direction", NULL, NULL, "TB", G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_FIND_VISIBLE] =
    g_param_spec_boolean ("find-visible", NULL, NULL, FALSE, G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_SIDEBAR_VISIBLE] =
    g_param_spec_boolean ("sidebar-visible", NULL, NULL, TRUE, G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_DIAGNOSTICS_VISIBLE] =
    g_param_spec_boolean ("diagnostics-visible", NULL, NULL, FALSE, G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_RUN_VISIBLE] =
    g_param_spec_boolean ("run-visible", NULL, NULL, FALSE, G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_WHEEL_ZOOMS] =
    g_param_spec_boolean ("wheel-zooms", NULL, NULL, FALSE, G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_SHOW_TIMINGS] =
    g_param_spec_boolean ("show-timings", NULL, NULL, FALSE, G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_SHOW_COST] =
    g_param_spec_boolean ("show-cost", NULL, NULL, FALSE, G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  /* Lint and shape inference of the graph shown are under way. */
  properties[PROP_CHECKING] =
    g_param_spec_boolean ("checking", NULL, NULL, FALSE, G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
install_actions (GtkWidgetClass *widget_class)
{
  const char *canvas_actions[] = {
    "win.zoom-in", "win.zoom-out", "win.zoom-fit", "win.zoom-reset", "win.zoom-selection",
    "win.expand-all", "win.collapse-all", "win.cancel-layout",
  };

  gtk_widget_class_install_action (widget_class, "win.cancel-load", NULL, cancel_load_action);
  gtk_widget_class_install_action (widget_class, "win.find", NULL, find_action);
  gtk_widget_class_install_action (widget_class, "win.find-text", "s", find_text_action);
  gtk_widget_class_install_action (widget_class, "win.parent-graph", NULL, parent_graph_action);
  gtk_widget_class_install_action (widget_class, "win.select-node", "s", select_node_action);
  gtk_widget_class_install_action (widget_class, "win.select-value", "s", select_value_action);
  gtk_widget_class_install_action (widget_class, "win.next-reader", "s", next_reader_action);
  gtk_widget_class_install_action (widget_class, "win.run-new-shape", "s", run_new_shape_action);
  for (guint i = 0; i < G_N_ELEMENTS (canvas_actions); i++)
    gtk_widget_class_install_action (widget_class, canvas_actions[i], NULL, forward_to_canvas);
  graft_window_class_add_file_actions (widget_class);
  graft_window_class_add_edit_actions (widget_class);
  graft_window_class_add_surgery_actions (widget_class);
  graft_window_class_add_simplify_actions (widget_class);
  graft_window_class_add_debug_actions (widget_class);
  graft_window_class_add_analysis_actions (widget_class);

  gtk_widget_class_install_property_action (widget_class, "win.show-names", "show-names");
  gtk_widget_class_install_property_action (widget_class, "win.show-attributes", "show-attributes");
  gtk_widget_class_install_property_action (widget_class, "win.show-shapes", "show-shapes");
  gtk_widget_class_install_property_action (widget_class, "win.show-module-attributes", "show-module-attributes");
  gtk_widget_class_install_property_action (widget_class, "win.direction", "direction");
  gtk_widget_class_install_property_action (widget_class, "win.wheel-zooms", "wheel-zooms");
  gtk_widget_class_install_property_action (widget_class, "win.show-find", "find-visible");
  gtk_widget_class_install_property_action (widget_class, "win.show-sidebar", "sidebar-visible");
}

static void
add_shortcuts (GtkWidgetClass *widget_class)
{
  struct { guint key; GdkModifierType mods; const char *action; } bindings[] = {
    { GDK_KEY_o, GDK_CONTROL_MASK, "win.open" },
    { GDK_KEY_f, GDK_CONTROL_MASK, "win.find" },
    { GDK_KEY_e, GDK_CONTROL_MASK, "win.export" },
    { GDK_KEY_plus, GDK_CONTROL_MASK, "win.zoom-in" },
    { GDK_KEY_equal, GDK_CONTROL_MASK, "win.zoom-in" },
    { GDK_KEY_KP_Add, GDK_CONTROL_MASK, "win.zoom-in" },
    { GDK_KEY_minus, GDK_CONTROL_MASK, "win.zoom-out" },
    { GDK_KEY_KP_Subtract, GDK_CONTROL_MASK, "win.zoom-out" },
    { GDK_KEY_0, GDK_CONTROL_MASK, "win.zoom-fit" },
    { GDK_KEY_1, GDK_CONTROL_MASK, "win.zoom-reset" },
    { GDK_KEY_Up, GDK_ALT_MASK, "win.parent-graph" },
    { GDK_KEY_F9, 0, "win.show-sidebar" },
    { GDK_KEY_w, GDK_CONTROL_MASK, "window.close" },
    { GDK_KEY_z, GDK_CONTROL_MASK, "win.undo" },
    { GDK_KEY_z, GDK_CONTROL_MASK | GDK_SHIFT_MASK, "win.redo" },
    { GDK_KEY_Z, GDK_CONTROL_MASK | GDK_SHIFT_MASK, "win.redo" },
    { GDK_KEY_s, GDK_CONTROL_MASK, "win.save" },
    { GDK_KEY_s, GDK_CONTROL_MASK | GDK_SHIFT_MASK, "win.save-as" },
    { GDK_KEY_S, GDK_CONTROL_MASK | GDK_SHIFT_MASK, "win.save-as" },
    { GDK_KEY_F5, 0, "win.run" },
    { GDK_KEY_r, GDK_CONTROL_MASK, "win.show-run" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (bindings); i++)
    gtk_widget_class_add_binding_action (widget_class, bindings[i].key, bindings[i].mods,
                                         bindings[i].action, NULL);
}

/* Keys a focused child would take for itself before the window's class
 * bindings see them, taken in the capture phase instead: GtkPaned binds F8
 * (the canvas and the sidebar sit in panes), and a text entry binds Ctrl+.
 * to its emoji picker (the Find entry, where Ctrl+. is meant to zoom to
 * the match). */
static void
add_capture_shortcuts (GraftWindow *self)
{
  GtkEventController *controller = gtk_shortcut_controller_new ();
  struct { guint key; GdkModifierType mods; const char *action; } keys[] = {
    { GDK_KEY_F8, 0, "win.show-diagnostics" },
    { GDK_KEY_period, GDK_CONTROL_MASK, "win.zoom-selection" },
  };

  gtk_event_controller_set_propagation_phase (controller, GTK_PHASE_CAPTURE);
  for (guint i = 0; i < G_N_ELEMENTS (keys); i++)
    gtk_shortcut_controller_add_shortcut (GTK_SHORTCUT_CONTROLLER (controller),
                                          gtk_shortcut_new (gtk_keyval_trigger_new (keys[i].key, keys[i].mods),
                                                            gtk_named_action_new (keys[i].action)));
  gtk_widget_add_controller (GTK_WIDGET (self), controller);
}

static void
graft_window_class_init (GraftWindowClass *klass)
{
  const char *analysis_children[] = {
    "diagnostics_revealer", "diagnostics_panel", "diagnostics_count", "diagnostics_button", "run_paned",
    "target_dropdown", "target_bar", "target_summary", "cost_bar", "cost_metric_dropdown", "cost_summary",
    "target_fix_button",
  };
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);
  GtkWindowClass *window_class = GTK_WINDOW_CLASS (klass);

  object_class->dispose = graft_window_dispose;
  object_class->finalize = graft_window_finalize;
  object_class->get_property = graft_window_get_property;
  object_class->set_property = graft_window_set_property;
  window_class->close_request = graft_window_close_request;

  install_properties (object_class);

  g_type_ensure (GRAFT_TYPE_GRAPH_CANVAS);
  g_type_ensure (GRAFT_TYPE_NODE_SIDEBAR);
  g_type_ensure (GRAFT_TYPE_FIND_PANEL);
  g_type_ensure (GRAFT_TYPE_BREADCRUMBS);
  g_type_ensure (GRAFT_TYPE_DIAGNOSTICS_PANEL);
  g_type_ensure (GRAFT_TYPE_RUN_PANE);

  gtk_widget_class_set_template_from_resource (widget_class, "/org/graft/Graft/ui/window.ui");
  gtk_widget_class_bind_template_child (widget_class, GraftWindow, toast_overlay);
  gtk_widget_class_bind_template_child (widget_class, GraftWindow, open_button);
  gtk_widget_class_bind_template_child (widget_class, GraftWindow, window_title);
  gtk_widget_class_bind_template_child (widget_class, GraftWindow, main_stack);
  gtk_widget_class_bind_template_child (widget_class, GraftWindow, error_page);
  gtk_widget_class_bind_template_child (widget_class, GraftWindow, loading_spinner);
  gtk_widget_class_bind_template_child (widget_class, GraftWindow, loading_label);
  gtk_widget_class_bind_template_child (widget_class, GraftWindow, loading_progress);
  gtk_widget_class_bind_template_child (widget_class, GraftWindow, flap);
  gtk_widget_class_bind_template_child (widget_class, GraftWindow, sidebar_handle);
  gtk_widget_class_bind_template_child (widget_class, GraftWindow, find_revealer);
  gtk_widget_class_bind_template_child (widget_class, GraftWindow, find_panel);
  gtk_widget_class_bind_template_child (widget_class, GraftWindow, breadcrumbs);
  gtk_widget_class_bind_template_child (widget_class, GraftWindow, canvas);
  gtk_widget_class_bind_template_child (widget_class, GraftWindow, layout_status);
  gtk_widget_class_bind_template_child (widget_class, GraftWindow, no_graph_page);
  gtk_widget_class_bind_template_child (widget_class, GraftWindow, layout_progress);
  gtk_widget_class_bind_template_child (widget_class, GraftWindow, sidebar);
  gtk_widget_class_bind_template_child (widget_class, GraftWindow, run_pane);
  /* The analysis part's (window-analysis.c), which it finds by name. */
  for (guint i = 0; i < G_N_ELEMENTS (analysis_children); i++)
    gtk_widget_class_bind_template_child_full (widget_class, analysis_children[i], FALSE, 0);
  gtk_widget_class_bind_template_callback (widget_class, on_item_activated);
  gtk_widget_class_bind_template_callback (widget_class, on_graph_activated);
  gtk_widget_class_bind_template_callback (widget_class, on_node_activated);
  gtk_widget_class_bind_template_callback (widget_class, on_find_stop);
  gtk_widget_class_bind_template_callback (widget_class, on_find_item_activated);
  gtk_widget_class_bind_template_callback (widget_class, on_find_matches_changed);
  gtk_widget_class_bind_template_callback (widget_class, on_selection_changed);
  gtk_widget_class_bind_template_callback (widget_class, on_canvas_busy_changed);

  install_actions (widget_class);
  add_shortcuts (widget_class);
}

static void
graft_window_init (GraftWindow *self)
{
  self->show_names = TRUE;
  self->show_attributes = TRUE;
  self->show_shapes = TRUE;
  self->direction = g_strdup ("TB");
  self->sidebar_visible = TRUE;
  /* Before the template: its widgets' callbacks ask for the model. */
  self->document = graft_document_new ();

  gtk_widget_init_template (GTK_WIDGET (self));

  g_signal_connect_swapped (self->canvas, "notify::progress", G_CALLBACK (on_canvas_progress_changed), self);
  g_signal_connect_swapped (self->flap, "notify::reveal-flap", G_CALLBACK (on_flap_revealed), self);
  init_sidebar_handle (self);
  add_capture_shortcuts (self);

  /* The parts that follow the document before the window does. */
  self->debug = graft_window_debug_new (self);
  g_signal_connect_swapped (self->document, "loaded", G_CALLBACK (on_document_loaded), self);
  g_signal_connect_swapped (self->document, "load-progress", G_CALLBACK (on_load_progress), self);
  g_signal_connect_swapped (self->document, "load-failed", G_CALLBACK (on_load_failed), self);
  self->edits = graft_window_edits_new (self);
  g_signal_connect_swapped (self->document, "changed", G_CALLBACK (on_document_changed), self);
  g_signal_connect_swapped (self->document, "notify::modified", G_CALLBACK (update_title), self);
  g_signal_connect_swapped (self->document, "notify::title", G_CALLBACK (update_title), self);
  self->files = graft_window_files_new (self, self->open_button);
  self->analysis = graft_window_analysis_new (self);
  /* What Reduce or a float16 search kept is marked under the rest. */
  g_signal_connect_object (self->analysis, "marks-cleared", G_CALLBACK (graft_window_debug_mark_kept), self->debug,
                           G_CONNECT_SWAPPED);
  graft_window_init_surgery (self);
  self->tensor_saver = graft_tensor_saver_new (GTK_WINDOW (self), self->toast_overlay, self->document, self->sidebar);

  update_action_states (self);
}

GraftWindow *
graft_window_new (GraftApplication *application)
{
  GraftWindow *self = g_object_new (GRAFT_TYPE_WINDOW, "application", application, NULL);
  GSettings *settings = graft_application_get_settings (application);

  /* "application" is not a construct property, so this cannot live in
   * constructed(). */
  if (settings != NULL)
    self->settings = g_object_ref (settings);
  restore_window_size (self);
  bind_view_settings (self);
  return self;
}
