/* Debug → Reduce… in the window: the dialog (widgets/reduce-dialog.c)
 * over the model shown, edits included, fed the Run pane's inputs; "Reduce
 * to Here…" from the Run pane starts it at once for NaN/Inf. The reduced
 * model opens in a window of its own, and the nodes it kept stay marked
 * on the original's graph until the graph changes. */
#include <string.h>

#include "window-debug.h"
#include "window-surgery.h"
#include "debug/reference-values.h"
#include "debug/precision.h"
#include "edit/edit-operation.h"
#include "ir/graph-copy.h"
#include "runtime/inputs.h"
#include "widgets/reduce-dialog.h"

struct _GraftWindowDebug
{
  GObject parent_instance;

  /* Borrowed references */
  GraftWindow *window;              /* a weak pointer: the window owns this part */
  AdwToast *float16_toast;          /* "Searching which nodes must stay float32…" with Cancel: a weak pointer */

  /* Owned references */
  GraftDocument *document;          /* the window's (a search may outlive the window) */
  GHashTable *kept_nodes;           /* names of the nodes Reduce or a float16 search kept, marked until
                                     * the graph changes */
  GCancellable *float16_cancellable;  /* while the float16 search runs */

  /* State */
  const char *kept_badge;           /* "kept", "float32" */
  const char *kept_note;            /* what the tint says in the node's tooltip */
};

G_DEFINE_FINAL_TYPE (GraftWindowDebug, graft_window_debug, G_TYPE_OBJECT)

/* The class's actions reach the window's part through it. */
#define PART_KEY "graft-window-debug"

static GraftWindowDebug *
part_of (GtkWidget *window)
{
  return g_object_get_data (G_OBJECT (window), PART_KEY);
}

static GraftModel *
shown_model (GraftWindowDebug *self)
{
  return graft_document_get_model (self->document);
}

/* A tint for the nodes a reduction or a float16 search kept: teal, apart
 * from the partition and heat colours. */
static const GdkRGBA kept_tint = { 0.0, 0.55, 0.55, 1 };

void
graft_window_debug_mark_kept (GraftWindowDebug *self)
{
  GraftGraph *graph = shown_model (self) ? graft_model_get_graph (shown_model (self)) : NULL;
  GraftGraphCanvas *canvas;

  if (self->kept_nodes == NULL || graph == NULL || self->window == NULL)
    return;
  canvas = graft_window_get_canvas (self->window);
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = graph->nodes->pdata[i];
      if (!g_hash_table_contains (self->kept_nodes, node->name))
        continue;
      graft_graph_canvas_set_node_tint (canvas, node, &kept_tint, self->kept_note);
      graft_graph_canvas_mark_node (canvas, node, 1, self->kept_badge);
    }
}

/* The graph the names were of is gone (an edit, another file). */
static void
forget_kept (GraftWindowDebug *self)
{
  g_clear_pointer (&self->kept_nodes, g_hash_table_unref);
}

/* Marks the nodes names (NULL-terminated) with badge and the kept tint
 * (note says why, in their tooltips) until the graph changes, and shows
 * the first of them; FALSE when the graph shown has none of them. */
static gboolean
keep_marked (GraftWindowDebug *self, const char *const *names, const char *badge, const char *note)
{
  GraftGraph *graph = graft_model_get_graph (shown_model (self));
  GraftGraphCanvas *canvas = graft_window_get_canvas (self->window);
  GraftNode *first = NULL;

  forget_kept (self);
  self->kept_nodes = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  self->kept_badge = badge;
  self->kept_note = note;
  for (guint i = 0; names[i] != NULL; i++)
    g_hash_table_add (self->kept_nodes, g_strdup (names[i]));
  graft_window_refresh_marks (self->window);
  for (guint i = 0; graph != NULL && i < graph->nodes->len && first == NULL; i++)
    if (g_hash_table_contains (self->kept_nodes, ((GraftNode *) graph->nodes->pdata[i])->name))
      first = graph->nodes->pdata[i];
  if (first != NULL)
    {
      graft_graph_canvas_select_node (canvas, first);
      graft_graph_canvas_show_selection_readable (canvas);
    }
  return first != NULL;
}

/* "resnet18-reduced.onnx" beside the model's file, or "-reduced-2" and
 * on: Reduce to Here starts at once, and must not replace an earlier
 * result. */
static char *
default_output_path (GraftWindowDebug *self)
{
  const char *path = graft_model_get_path (shown_model (self));
  g_autofree char *folder = path ? g_path_get_dirname (path) : g_strdup (g_get_home_dir ());
  g_autofree char *base = path ? g_path_get_basename (path) : g_strdup ("model");
  char *dot = strrchr (base, '.');

  if (dot != NULL && dot != base)
    *dot = '\0';
  for (guint n = 1;; n++)
    {
      g_autofree char *suffix = n == 1 ? g_strdup ("") : g_strdup_printf ("-%u", n);
      g_autofree char *file = g_strconcat (base, "-reduced", suffix, ".onnx", NULL);
      char *candidate = g_build_filename (folder, file, NULL);
      if (!g_file_test (candidate, G_FILE_TEST_EXISTS) || n == 1000)
        return candidate;
      g_free (candidate);
    }
}

/* What the dialog reduces: a copy of the ONNX model shown (edits go on
 * meanwhile), or a TorchScript/.pt2 model lowered to ONNX here, where a
 * failure is shown at once. */
static GraftModel *
model_to_reduce (GraftWindowDebug *self, GHashTable *inputs, GError **error)
{
  if (graft_model_get_format (shown_model (self)) == GRAFT_MODEL_FORMAT_ONNX)
    {
      GraftModel *copy = graft_model_copy (shown_model (self));
      /* the copy shares the model's tensors */
      graft_model_keep_alive (copy, g_object_ref (shown_model (self)), g_object_unref);
      return copy;
    }
  g_autoptr(GHashTable) shapes = graft_runtime_input_shapes (inputs);

  return graft_model_as_onnx (shown_model (self), shapes, error);
}

static void
on_reduced (GraftReduceDialog *dialog, const char *path, char **kept, GraftWindowDebug *self)
{
  GtkApplication *app = gtk_window_get_application (GTK_WINDOW (self->window));
  g_autoptr(GFile) file = g_file_new_for_path (path);
  GraftWindow *window = graft_window_new (GRAFT_APPLICATION (app));

  /* a TorchScript model was reduced in its ONNX form, whose nodes it does not show */
  if (!keep_marked (self, (const char *const *) kept, "kept", "In the reduced model"))
    graft_window_show_toast (self->window, "The reduced model's nodes are of this model's ONNX form: none to mark here");
  gtk_window_present (GTK_WINDOW (window));
  graft_window_open_file (window, file);
}

static void
open_reduce_dialog (GraftWindowDebug *self, GraftReduceCondition condition, gboolean start)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *description = NULL;

  if (shown_model (self) == NULL || graft_model_get_graph (shown_model (self)) == NULL)
    return;
  g_autoptr(GHashTable) inputs = graft_run_pane_make_inputs (graft_window_get_run_pane (self->window), &description,
                                                             &error);
  g_autoptr(GraftModel) model = inputs ? model_to_reduce (self, inputs, &error) : NULL;
  if (model == NULL)
    {
      graft_window_show_edit_error (self->window, "Cannot Reduce This Model", error);
      return;
    }
  g_autofree char *output = default_output_path (self);
  g_autofree char *inputs_text = g_strdup_printf ("The Run pane’s: %s", description[0] ? description : "none");
  GraftReduceDialog *dialog = graft_reduce_dialog_new (GTK_WINDOW (self->window), model, inputs, inputs_text, output);
  graft_reduce_dialog_set_condition (dialog, condition);
  g_signal_connect_object (dialog, "reduced", G_CALLBACK (on_reduced), self, 0);
  gtk_window_present (GTK_WINDOW (dialog));
  if (start)
    gtk_widget_activate_action (GTK_WIDGET (dialog), "reduce.start", NULL);
}

static void
reduce_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftRunPane *run_pane = graft_window_get_run_pane (GRAFT_WINDOW (widget));

  /* after a run that made NaN/Inf, that is the likely question */
  open_reduce_dialog (part_of (widget), graft_run_pane_get_nonfinite_node (run_pane) != NULL ? GRAFT_REDUCE_NONFINITE
                                                                                          : GRAFT_REDUCE_FAILS_IN_GRAFT,
                      FALSE);
}

/* The Run pane's "Reduce to Here…": the part that makes the NaN/Inf it
 * traced to node, found at once. */
static void
on_reduce_to_node (GraftRunPane *pane, GraftNode *node, GraftWindowDebug *self)
{
  open_reduce_dialog (self, GRAFT_REDUCE_NONFINITE, TRUE);
}

/* ---------- Convert to Float16 Keeping Accuracy… ---------- */

/* The search (model/debug/precision.h) on a copy of the model, on the Run
 * pane's inputs; the window's graph it started from. */
typedef struct {
  GraftModel *model;
  GHashTable *inputs;
  GraftPrecisionOptions options;
  GraftGraph *graph;           /* compared, never read: did the model change meanwhile? */
  guint n_runs;
  gint64 start_time;
} Float16Search;

static void
float16_search_free (Float16Search *search)
{
  g_object_unref (search->model);
  g_hash_table_unref (search->inputs);
  g_free (search);
}

static void
float16_search_thread (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
  Float16Search *search = task_data;
  GError *error = NULL;
  GPtrArray *kept = graft_precision_find_float32_nodes (search->model, search->inputs, &search->options,
                                                        &search->n_runs, cancellable, &error);

  if (kept == NULL)
    g_task_return_error (task, error);
  else
    g_task_return_pointer (task, kept, (GDestroyNotify) g_ptr_array_unref);
}

static void
dismiss_search_toast (GraftWindowDebug *self)
{
  if (self->float16_toast != NULL)
    adw_toast_dismiss (self->float16_toast);
  g_clear_weak_pointer (&self->float16_toast);
}

static void
on_float16_search_done (GObject *source, GAsyncResult *result, gpointer user_data)
{
  g_autoptr(GraftWindowDebug) self = user_data;
  Float16Search *search = g_task_get_task_data (G_TASK (result));
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) kept = g_task_propagate_pointer (G_TASK (result), &error);

  if (g_task_get_cancellable (G_TASK (result)) != self->float16_cancellable)
    return;   /* cancelled, or the window moved on */
  g_clear_object (&self->float16_cancellable);
  dismiss_search_toast (self);
  graft_window_update_action_states (self->window);
  if (kept == NULL)
    {
      graft_window_show_edit_error (self->window, "No Float16 Model Within the Tolerance", error);
      return;
    }
  if (shown_model (self) == NULL || graft_model_get_graph (shown_model (self)) != search->graph)
    {
      graft_window_show_toast (self->window, "The model changed during the float16 search: start it again");
      return;
    }
  g_ptr_array_add (kept, NULL);
  GVariant *params = graft_edit_params_new ("keep_io_types", g_variant_new_boolean (search->options.keep_io_types),
                                            "keep_nodes", g_variant_new_strv ((const char *const *) kept->pdata, -1),
                                            NULL);
  if (!graft_window_try_operation (self->window, "float16", params, &error))
    {
      if (error != NULL)
        graft_window_show_edit_error (self->window, "Could Not Convert to Float16", error);
      return;
    }
  keep_marked (self, (const char *const *) kept->pdata, "float32", "Kept in float32 by the float16 search");
  g_autofree char *message = g_strdup_printf ("Float16: %u node%s kept in float32 keep the outputs within rtol %g, "
                                              "atol %g (%u conversions run, %.1f s)", kept->len - 1,
                                              kept->len == 2 ? "" : "s", search->options.rtol, search->options.atol,
                                              search->n_runs, (g_get_monotonic_time () - search->start_time) / 1e6);
  graft_window_show_toast (self->window, message);
}

static void
start_float16_search (GraftWindowDebug *self, double rtol, double atol, gboolean keep_io_types)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GTask) task = NULL;

  if (shown_model (self) == NULL || self->float16_cancellable != NULL || !graft_window_edits_allowed (self->window))
    return;
  if (graft_model_get_format (shown_model (self)) != GRAFT_MODEL_FORMAT_ONNX)
    {
      graft_window_show_toast (self->window, "Float16 conversion works on ONNX models: export this one first");
      return;
    }
  g_autoptr(GHashTable) inputs = graft_run_pane_make_inputs (graft_window_get_run_pane (self->window), NULL, &error);
  if (inputs == NULL)
    {
      graft_window_show_edit_error (self->window, "Cannot Search for Float16", error);
      return;
    }
  Float16Search *search = g_new0 (Float16Search, 1);
  search->model = graft_model_copy (shown_model (self));
  graft_model_keep_alive (search->model, g_object_ref (shown_model (self)), g_object_unref);
  search->inputs = g_steal_pointer (&inputs);
  search->options = (GraftPrecisionOptions) { .rtol = rtol, .atol = atol, .keep_io_types = keep_io_types };
  search->graph = graft_model_get_graph (shown_model (self));
  search->start_time = g_get_monotonic_time ();
  self->float16_cancellable = g_cancellable_new ();
  /* user_data holds this part: it is never disposed off the UI thread */
  task = g_task_new (NULL, self->float16_cancellable, on_float16_search_done, g_object_ref (self));
  g_task_set_task_data (task, search, (GDestroyNotify) float16_search_free);
  g_task_run_in_thread (task, float16_search_thread);

  AdwToast *toast = adw_toast_new ("Searching which nodes must stay float32…");
  adw_toast_set_button_label (toast, "Cancel");
  adw_toast_set_action_name (toast, "win.cancel-float16");
  adw_toast_set_timeout (toast, 0);
  adw_toast_set_priority (toast, ADW_TOAST_PRIORITY_HIGH);
  g_set_weak_pointer (&self->float16_toast, toast);
  graft_window_add_toast (self->window, toast);
  graft_window_update_action_states (self->window);
}

static void
cancel_float16 (GraftWindowDebug *self)
{
  if (self->float16_cancellable != NULL)
    g_cancellable_cancel (self->float16_cancellable);
  g_clear_object (&self->float16_cancellable);
  dismiss_search_toast (self);
}

static void
cancel_float16_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  cancel_float16 (part_of (widget));
  graft_window_update_action_states (GRAFT_WINDOW (widget));
}

/* "(rtol, atol, keep_io_types)": the search with these, without asking. */
static void
float16_auto_keep_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  double rtol, atol;
  gboolean keep_io_types;

  g_variant_get (parameter, "(ddb)", &rtol, &atol, &keep_io_types);
  start_float16_search (part_of (widget), rtol, atol, keep_io_types);
}

static void
on_float16_response (AdwMessageDialog *dialog, const char *response, GraftWindowDebug *self)
{
  GtkBuilder *builder = g_object_get_data (G_OBJECT (dialog), "builder");

  if (g_strcmp0 (response, "convert") != 0)
    return;
  start_float16_search (self,
                        gtk_spin_button_get_value (GTK_SPIN_BUTTON (gtk_builder_get_object (builder, "rtol_spin"))),
                        gtk_spin_button_get_value (GTK_SPIN_BUTTON (gtk_builder_get_object (builder, "atol_spin"))),
                        gtk_switch_get_active (GTK_SWITCH (gtk_builder_get_object (builder, "keep_io_switch"))));
}

/* Asks for the tolerance, then searches. */
static void
float16_dialog_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindowDebug *self = part_of (widget);
  GtkBuilder *builder = gtk_builder_new_from_resource ("/org/graft/Graft/ui/float16-dialog.ui");
  AdwMessageDialog *dialog = ADW_MESSAGE_DIALOG (gtk_builder_get_object (builder, "float16_dialog"));

  if (shown_model (self) == NULL || !graft_window_edits_allowed (self->window))
    {
      g_object_unref (builder);
      return;
    }
  gtk_window_set_transient_for (GTK_WINDOW (dialog), GTK_WINDOW (self->window));
  g_object_set_data_full (G_OBJECT (dialog), "builder", builder, g_object_unref);
  g_signal_connect_object (dialog, "response", G_CALLBACK (on_float16_response), self, 0);
  gtk_window_present (GTK_WINDOW (dialog));
}

void
graft_window_class_add_debug_actions (GtkWidgetClass *widget_class)
{
  gtk_widget_class_install_action (widget_class, "win.reduce", NULL, reduce_action);
  gtk_widget_class_install_action (widget_class, "win.float16-auto-keep-dialog", NULL, float16_dialog_action);
  gtk_widget_class_install_action (widget_class, "win.float16-auto-keep", "(ddb)", float16_auto_keep_action);
  gtk_widget_class_install_action (widget_class, "win.cancel-float16", NULL, cancel_float16_action);
}

static void
graft_window_debug_dispose (GObject *object)
{
  GraftWindowDebug *self = GRAFT_WINDOW_DEBUG (object);

  forget_kept (self);
  cancel_float16 (self);
  if (self->document != NULL)
    g_signal_handlers_disconnect_by_data (self->document, self);
  g_clear_object (&self->document);
  if (self->window != NULL)
    g_object_set_data (G_OBJECT (self->window), PART_KEY, NULL);
  g_clear_weak_pointer (&self->window);
  G_OBJECT_CLASS (graft_window_debug_parent_class)->dispose (object);
}

static void
graft_window_debug_class_init (GraftWindowDebugClass *klass)
{
  G_OBJECT_CLASS (klass)->dispose = graft_window_debug_dispose;
}

static void
graft_window_debug_init (GraftWindowDebug *self)
{
}

GraftWindowDebug *
graft_window_debug_new (GraftWindow *window)
{
  GraftWindowDebug *self = g_object_new (GRAFT_TYPE_WINDOW_DEBUG, NULL);

  g_set_weak_pointer (&self->window, window);
  self->document = g_object_ref (graft_window_get_document (window));
  g_object_set_data (G_OBJECT (window), PART_KEY, self);
  /* Connected before the window's own handlers, so the canvas marks the
   * new graph without the old graph's kept nodes. */
  g_signal_connect_swapped (self->document, "changed", G_CALLBACK (forget_kept), self);
  g_signal_connect_swapped (self->document, "loaded", G_CALLBACK (forget_kept), self);
  g_signal_connect_object (graft_window_get_run_pane (window), "reduce-to-node", G_CALLBACK (on_reduce_to_node),
                           self, 0);
  return self;
}
