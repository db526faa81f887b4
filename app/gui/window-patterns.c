/* Replace Pattern… in the window: the dialog (widgets/pattern-dialog.c)
 * over the graph shown, its matches highlighted on the canvas while it is
 * open, and its edit applied through the window's edit history like every
 * other edit (undoable, recorded in the session's recipe). From a node's
 * context menu the pattern starts as that node and the producers only it
 * reads. */
#include "window-patterns.h"
#include "window-surgery.h"
#include "ir/graph-surgery.h"
#include "edit/pattern-edits.h"
#include "widgets/pattern-dialog.h"

/* Steps a suggested pattern takes at most: enough for MatMul → Add →
 * Relu or a SiLU, few enough to match elsewhere too. */
#define SUGGESTED_STEPS 3

static void
on_pattern_highlight (GraftPatternDialog *dialog, GPtrArray *nodes, GraftWindow *self)
{
  graft_graph_canvas_set_found (graft_window_get_canvas (self), nodes);
}

/* Find clears the canvas's highlight when its graph changes (a refused
 * edit may put back a copy): the dialog's comes back on top. */
static void
on_find_matches_changed (GraftPatternDialog *dialog)
{
  GtkWindow *window = gtk_window_get_transient_for (GTK_WINDOW (dialog));
  g_autoptr(GPtrArray) nodes = graft_pattern_dialog_dup_matched_nodes (dialog);

  if (window != NULL && gtk_widget_get_visible (GTK_WIDGET (dialog)))
    graft_graph_canvas_set_found (graft_window_get_canvas (GRAFT_WINDOW (window)), nodes);
}

static void
on_pattern_show_node (GraftPatternDialog *dialog, GraftNode *node, GraftWindow *self)
{
  GraftGraphCanvas *canvas = graft_window_get_canvas (self);

  graft_graph_canvas_select_node (canvas, node);
  graft_graph_canvas_show_selection_readable (canvas);
}

static void
on_pattern_apply (GraftPatternDialog *dialog, const char *id, GVariant *params, GraftWindow *self)
{
  GraftGraphCanvas *canvas = graft_window_get_canvas (self);
  g_autoptr(GError) error = NULL;

  /* The highlighted nodes belong to the graph the edit replaces. */
  graft_graph_canvas_set_found (canvas, NULL);
  if (graft_window_try_operation (self, id, g_variant_ref (params), &error))
    gtk_window_destroy (GTK_WINDOW (dialog));
  else
    {
      /* A refused edit may have put back a copy of the graph. */
      graft_pattern_dialog_set_graph (dialog, graft_graph_canvas_get_graph (canvas));
      if (error != NULL)
        graft_pattern_dialog_show_error (dialog, error->message);
    }
}

static void
on_pattern_dialog_destroy (GraftPatternDialog *dialog, GraftWindow *self)
{
  /* Find's matches again (or none) once the dialog's highlight is gone. */
  graft_window_update_found (self);
}

void
graft_window_open_pattern_dialog (GraftWindow *self, const char *node_name)
{
  GraftModel *model = graft_document_get_model (graft_window_get_document (self));
  GraftGraph *graph = model != NULL ? graft_graph_canvas_get_graph (graft_window_get_canvas (self)) : NULL;
  g_autofree char *pattern = NULL;
  GraftPatternDialog *dialog;

  if (graph == NULL || !graft_window_edits_allowed (self))
    return;
  if (node_name != NULL)
    {
      GraftNode *node = graft_graph_find_node (graph, node_name);
      if (node != NULL)
        pattern = graft_pattern_suggest (node, SUGGESTED_STEPS);
    }
  dialog = graft_pattern_dialog_new (GTK_WINDOW (self), model, graph, pattern);
  g_signal_connect_object (dialog, "highlight", G_CALLBACK (on_pattern_highlight), self, 0);
  g_signal_connect_object (dialog, "show-node", G_CALLBACK (on_pattern_show_node), self, 0);
  g_signal_connect_object (dialog, "apply", G_CALLBACK (on_pattern_apply), self, 0);
  g_signal_connect_object (dialog, "destroy", G_CALLBACK (on_pattern_dialog_destroy), self, 0);
  g_signal_connect_object (graft_window_get_find_panel (self), "matches-changed", G_CALLBACK (on_find_matches_changed), dialog,
                           G_CONNECT_SWAPPED | G_CONNECT_AFTER);
  gtk_window_present (GTK_WINDOW (dialog));
}

