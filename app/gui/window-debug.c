/* Debug → Reduce… in the window: the dialog (widgets/reduce-dialog.c)
 * over the model shown, edits included, fed the Run pane's inputs; "Reduce
 * to Here…" from the Run pane starts it at once for NaN/Inf. The reduced
 * model opens in a window of its own, and the nodes it kept stay marked
 * on the original's graph until the graph changes. */
#include <string.h>

#include "window-private.h"
#include "debug/reference-values.h"
#include "edit/graph-copy.h"
#include "runtime/inputs.h"
#include "widgets/reduce-dialog.h"

/* A tint for the nodes a reduction kept: teal, apart from the partition
 * and heat colours. */
static const GdkRGBA kept_tint = { 0.0, 0.55, 0.55, 1 };

void
graft_window_mark_reduced (GraftWindow *self)
{
  GraftGraph *graph = self->model ? graft_model_get_graph (self->model) : NULL;

  if (self->reduced_nodes == NULL || graph == NULL)
    return;
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = graph->nodes->pdata[i];
      if (!g_hash_table_contains (self->reduced_nodes, node->name))
        continue;
      graft_graph_canvas_set_node_tint (self->canvas, node, &kept_tint);
      graft_graph_canvas_mark_node (self->canvas, node, 1, "kept");
    }
}

void
graft_window_forget_reduced (GraftWindow *self)
{
  g_clear_pointer (&self->reduced_nodes, g_hash_table_unref);
}

/* "resnet18-reduced.onnx" beside the model's file. */
static char *
default_output_path (GraftWindow *self)
{
  const char *path = graft_model_get_path (self->model);
  g_autofree char *folder = path ? g_path_get_dirname (path) : g_strdup (g_get_home_dir ());
  g_autofree char *base = path ? g_path_get_basename (path) : g_strdup ("model");
  char *dot = strrchr (base, '.');

  if (dot != NULL && dot != base)
    *dot = '\0';
  g_autofree char *file = g_strconcat (base, "-reduced.onnx", NULL);
  return g_build_filename (folder, file, NULL);
}

/* What the dialog reduces: a copy of the ONNX model shown (edits go on
 * meanwhile), or a TorchScript/.pt2 model lowered to ONNX here, where a
 * failure is shown at once. */
static GraftModel *
model_to_reduce (GraftWindow *self, GHashTable *inputs, GError **error)
{
  if (graft_model_get_format (self->model) == GRAFT_MODEL_FORMAT_ONNX)
    {
      GraftModel *copy = graft_model_copy (self->model);
      /* the copy shares the model's tensors */
      graft_model_keep_alive (copy, g_object_ref (self->model), g_object_unref);
      return copy;
    }
  g_autoptr(GHashTable) shapes = graft_runtime_input_shapes (inputs);

  return graft_model_as_onnx (self->model, shapes, error);
}

static void
on_reduced (GraftReduceDialog *dialog, const char *path, char **kept, GraftWindow *self)
{
  GtkApplication *app = gtk_window_get_application (GTK_WINDOW (self));
  g_autoptr(GFile) file = g_file_new_for_path (path);
  GraftWindow *window = graft_window_new (GRAFT_APPLICATION (app));
  GraftNode *first = NULL;
  GraftGraph *graph = graft_model_get_graph (self->model);

  graft_window_forget_reduced (self);
  self->reduced_nodes = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  for (guint i = 0; kept[i] != NULL; i++)
    g_hash_table_add (self->reduced_nodes, g_strdup (kept[i]));
  graft_window_refresh_marks (self);
  /* the kept nodes in view: the first of them selected */
  for (guint i = 0; graph != NULL && i < graph->nodes->len && first == NULL; i++)
    if (g_hash_table_contains (self->reduced_nodes, ((GraftNode *) graph->nodes->pdata[i])->name))
      first = graph->nodes->pdata[i];
  if (first != NULL)
    {
      graft_graph_canvas_select_node (self->canvas, first);
      graft_graph_canvas_show_selection_readable (self->canvas);
    }
  gtk_window_present (GTK_WINDOW (window));
  graft_window_open_file (window, file);
}

static void
open_reduce_dialog (GraftWindow *self, GraftReduceCondition condition, gboolean start)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *description = NULL;

  if (self->model == NULL || graft_model_get_graph (self->model) == NULL)
    return;
  g_autoptr(GHashTable) inputs = graft_run_pane_make_inputs (self->run_pane, &description, &error);
  g_autoptr(GraftModel) model = inputs ? model_to_reduce (self, inputs, &error) : NULL;
  if (model == NULL)
    {
      graft_window_show_edit_error (self, "Cannot Reduce This Model", error);
      return;
    }
  g_autofree char *output = default_output_path (self);
  g_autofree char *inputs_text = g_strdup_printf ("The Run pane’s: %s", description[0] ? description : "none");
  GraftReduceDialog *dialog = graft_reduce_dialog_new (GTK_WINDOW (self), model, inputs, inputs_text, output);
  graft_reduce_dialog_set_condition (dialog, condition);
  g_signal_connect_object (dialog, "reduced", G_CALLBACK (on_reduced), self, 0);
  gtk_window_present (GTK_WINDOW (dialog));
  if (start)
    gtk_widget_activate_action (GTK_WIDGET (dialog), "reduce.start", NULL);
}

static void
reduce_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);

  /* after a run that made NaN/Inf, that is the likely question */
  open_reduce_dialog (self, graft_run_pane_get_nonfinite_node (self->run_pane) != NULL ? GRAFT_REDUCE_NONFINITE
                                                                                       : GRAFT_REDUCE_FAILS_IN_GRAFT,
                      FALSE);
}

/* The Run pane's "Reduce to Here…": the part that makes the NaN/Inf it
 * traced to node, found at once. */
static void
on_reduce_to_node (GraftRunPane *pane, GraftNode *node, GraftWindow *self)
{
  open_reduce_dialog (self, GRAFT_REDUCE_NONFINITE, TRUE);
}

void
graft_window_class_add_debug_actions (GtkWidgetClass *widget_class)
{
  gtk_widget_class_install_action (widget_class, "win.reduce", NULL, reduce_action);
}

void
graft_window_init_debug (GraftWindow *self)
{
  g_signal_connect_object (self->run_pane, "reduce-to-node", G_CALLBACK (on_reduce_to_node), self, 0);
}
