/* Issue 35 in the window, under Xvfb: Debug → Reduce… and the Run pane's
 * Reduce to Here on a PyTorch export with a planted Div by zero (the
 * reduced model opens in a window of its own, is checker-clean and holds
 * the Div; the original marks what was kept), Cancel while a search runs. */
#include <glib/gstdio.h>
#include <string.h>

#include "analysis/cost.h"
#include "ir/graph-surgery.h"
#include "widgets/graph-canvas.h"
#include "widgets/reduce-dialog.h"
#include "widgets/run-pane.h"
#include "gui-fixtures.h"
#include "window-harness.h"
#include "../test-python.h"
#include "../test-scratch.h"
#include "widget-inspect.h"
#include "canvas-inspect.h"

static GraftGraphCanvas *
window_canvas (GraftWindow *window)
{
  return GRAFT_GRAPH_CANVAS (harness_find_type (GTK_WIDGET (window), GRAFT_TYPE_GRAPH_CANVAS));
}

static gboolean
search_finished (gpointer data)
{
  GraftReduceDialog *dialog = data;

  return !inspect_boolean (dialog, "running");
}

/* The application's windows other than window: what the reduction opened. */
static GPtrArray *
other_windows (GraftWindow *window)
{
  GPtrArray *others = g_ptr_array_new ();
  GList *windows = gtk_application_get_windows (gtk_window_get_application (GTK_WINDOW (window)));

  for (GList *l = windows; l != NULL; l = l->next)
    if (l->data != window && GRAFT_IS_WINDOW (l->data))
      g_ptr_array_add (others, l->data);
  return others;
}

/* The fixture with the external data file torch.onnx.export wrote beside it. */
static void
copy_model (const char *source, const char *path)
{
  g_autofree char *source_folder = g_path_get_dirname (source);
  g_autofree char *folder = g_path_get_dirname (path);
  g_autoptr(GDir) dir = g_dir_open (source_folder, 0, NULL);
  g_autofree char *stem = g_path_get_basename (source);
  const char *name;

  while ((name = g_dir_read_name (dir)) != NULL)
    if (g_str_has_prefix (name, stem))
      {
        g_autofree char *from = g_build_filename (source_folder, name, NULL);
        g_autofree char *to = g_build_filename (folder, name, NULL);
        g_autofree char *contents = NULL;
        gsize length;
        g_assert_true (g_file_get_contents (from, &contents, &length, NULL));
        g_assert_true (g_file_set_contents (to, contents, length, NULL));
      }
}

static gboolean
is_null (gpointer data)
{
  return *(gpointer *) data == NULL;
}

/* Run the planted-Div model, press Reduce to Here: the search runs off
 * the UI thread, saves a checker-clean model holding the Div (and fewer
 * nodes than the original), opens it in a new window, and the original
 * tints and badges the nodes it kept. */
static void
test_reduce_to_here (void)
{
  g_autofree char *source = generated_fixture ("make-nan-model.py", "nan.onnx");
  g_autofree char *dir = graft_test_scratch_dir ("graft-reduce-gui-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "nan.onnx", NULL);
  g_autofree char *reduced = g_build_filename (dir, "nan-reduced.onnx", NULL);

  /* a copy, so the reduced model's default place is the scratch folder */
  copy_model (source, path);

  GraftWindow *window = harness_window_new ();
  harness_open (window, path);
  harness_activate (window, "win.show-run");
  harness_activate (window, "win.run");
  GraftRunPane *pane = GRAFT_RUN_PANE (harness_find_type (GTK_WIDGET (window), GRAFT_TYPE_RUN_PANE));
  GraftNode *div = graft_run_pane_get_nonfinite_node (pane);
  g_assert_nonnull (div);
  g_assert_cmpstr (div->op, ==, "onnx::Div");
  GtkWidget *button = harness_find_id (GTK_WIDGET (pane), "reduce_button");
  g_assert_true (gtk_widget_get_visible (button));
  harness_screenshot (window, "reduce-run-nan");

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (pane), "run.reduce-to-here", NULL));
  GraftReduceDialog *dialog = GRAFT_REDUCE_DIALOG (harness_find_dialog (window, GRAFT_TYPE_REDUCE_DIALOG));
  g_assert_nonnull (dialog);
  harness_wait_for (search_finished, dialog);
  harness_settle (window);
  const char *status = inspect_label_text (dialog, GRAFT_TYPE_REDUCE_DIALOG, "status_label");
  g_test_message ("reduce: %s", status);
  g_assert_nonnull (strstr (status, "Kept "));
  g_assert_nonnull (strstr (status, "nan-reduced.onnx"));
  g_assert_nonnull (strstr (status, "makes NaN/Inf"));
  harness_screenshot (window, "reduce-to-here");

  /* saved, checker-clean, holding the planted Div and less than the whole */
  g_autofree char *test_python = graft_test_python ();
  g_autofree char *check = g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "tests", "debug", "check-reduced.py", NULL);
  const char *argv[] = { test_python, check, reduced, NULL };
  g_autofree char *names = harness_run_check (argv, "the reduced model");
  g_auto(GStrv) kept = g_strsplit (names, "\n", -1);
  g_assert_true (g_strv_contains ((const char *const *) kept, div->name));
  g_assert_cmpuint (g_strv_length (kept), <, harness_shown_graph (window)->nodes->len);

  /* the original marks what was kept: the Div over it, the rest "kept";
   * all tinted, the tooltips saying why */
  GraftGraphCanvas *canvas = window_canvas (window);
  g_auto(GStrv) div_marks = inspect_canvas_node_marks (canvas, div);
  g_assert_cmpstr (div_marks[0], ==, "NaN/Inf");
  g_assert_nonnull (inspect_find_line (div_marks, "In the reduced model", ""));
  for (guint i = 0; kept[i] != NULL; i++)
    {
      GraftNode *node = graft_graph_find_node (harness_shown_graph (window), kept[i]);
      g_assert_nonnull (node);
      g_auto(GStrv) marks = inspect_canvas_node_marks (canvas, node);
      g_assert_nonnull (inspect_find_line (marks, "In the reduced model", ""));
      if (node != div)
        g_assert_cmpstr (marks[0], ==, "kept");
    }

  /* the reduced model in a window of its own */
  g_autoptr(GPtrArray) others = other_windows (window);
  g_assert_cmpuint (others->len, ==, 1);
  GraftWindow *result = others->pdata[0];
  harness_settle (result);
  harness_wait_ms (1500);   /* GIO's delayed inotify events, if any */
  harness_settle (result);
  harness_screenshot (result, "reduce-result-window");
  /* the file was written before it opened: no offer to reload it */
  g_assert_null (harness_find_label (GTK_WIDGET (result), "changed on disk"));
  g_assert_cmpuint (harness_shown_graph (result)->nodes->len, ==, g_strv_length (kept));
  g_assert_nonnull (graft_graph_find_node (harness_shown_graph (result), div->name));

  gtk_window_destroy (GTK_WINDOW (dialog));
  harness_window_close (result);

  /* again: the first result stays, the second goes beside it */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (pane), "run.reduce-to-here", NULL));
  dialog = GRAFT_REDUCE_DIALOG (harness_find_dialog (window, GRAFT_TYPE_REDUCE_DIALOG));
  harness_wait_for (search_finished, dialog);
  harness_settle (window);
  g_assert_nonnull (strstr (inspect_label_text (dialog, GRAFT_TYPE_REDUCE_DIALOG, "status_label"), "nan-reduced-2.onnx"));
  g_autoptr(GPtrArray) second = other_windows (window);
  g_assert_cmpuint (second->len, ==, 1);
  gtk_window_destroy (GTK_WINDOW (dialog));
  harness_window_close (second->pdata[0]);
  harness_window_close (window);
}

/* Debug → Reduce… set to "a command fails" with command, saving to output. */
static GraftReduceDialog *
open_command_reduce (GraftWindow *window, const char *command, const char *output)
{
  harness_activate (window, "win.reduce");
  GraftReduceDialog *dialog = GRAFT_REDUCE_DIALOG (harness_find_dialog (window, GRAFT_TYPE_REDUCE_DIALOG));
  g_assert_nonnull (dialog);
  graft_reduce_dialog_set_condition (dialog, GRAFT_REDUCE_COMMAND);
  inspect_set_text (dialog, GRAFT_TYPE_REDUCE_DIALOG, "command_row", command);
  inspect_set_text (dialog, GRAFT_TYPE_REDUCE_DIALOG, "output_row", output);
  return dialog;
}

/* Debug → Reduce… with a command that fails slowly: progress shows, and
 * Cancel stops the search between candidates and says so; nothing is
 * saved. */
static void
test_reduce_cancel (void)
{
  g_autofree char *source = generated_fixture ("make-nan-model.py", "nan.onnx");
  g_autofree char *dir = graft_test_scratch_dir ("graft-reduce-gui-XXXXXX", NULL);
  g_autofree char *output = g_build_filename (dir, "never.onnx", NULL);
  GraftWindow *window = harness_window_new ();

  harness_open (window, source);
  GraftReduceDialog *dialog = open_command_reduce (window, "sleep 1; test -s {model} && exit 1", output);
  harness_settle (window);
  harness_screenshot (window, "reduce-dialog-command");
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (dialog), "reduce.start", NULL));
  harness_wait_ms (1500);
  g_assert_true (inspect_boolean (dialog, "running"));
  harness_screenshot (window, "reduce-dialog-running");
  GtkProgressBar *progress = GTK_PROGRESS_BAR (harness_get_name (GTK_WIDGET (dialog), "reduce-progress"));
  g_test_message ("progress: %s", gtk_progress_bar_get_text (progress));
  g_assert_nonnull (strstr (gtk_progress_bar_get_text (progress), "tried"));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (dialog), "reduce.cancel", NULL));
  harness_wait_for (search_finished, dialog);
  g_assert_cmpstr (inspect_label_text (dialog, GRAFT_TYPE_REDUCE_DIALOG, "status_label"), ==, "Cancelled");
  g_assert_false (g_file_test (output, G_FILE_TEST_EXISTS));
  g_assert_true (gtk_widget_get_visible (GTK_WIDGET (dialog)));

  /* a missing reference is said in the dialog, not started */
  graft_reduce_dialog_set_condition (dialog, GRAFT_REDUCE_MISMATCH);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (dialog), "reduce.start", NULL));
  g_assert_false (inspect_boolean (dialog, "running"));
  g_assert_nonnull (strstr (inspect_label_text (dialog, GRAFT_TYPE_REDUCE_DIALOG, "status_label"), "Give the reference"));
  harness_settle (window);
  harness_screenshot (window, "reduce-dialog-mismatch");

  /* closing the dialog while a search runs drops it */
  graft_reduce_dialog_set_condition (dialog, GRAFT_REDUCE_COMMAND);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (dialog), "reduce.start", NULL));
  gpointer weak_dialog = dialog;
  g_object_add_weak_pointer (G_OBJECT (dialog), &weak_dialog);
  gtk_window_close (GTK_WINDOW (dialog));
  harness_wait_for (is_null, &weak_dialog);
  harness_window_close (window);
  g_assert_false (g_file_test (output, G_FILE_TEST_EXISTS));
}

/* Debug → Reduce… against a folder of reference values: logits.npy of a
 * run on other inputs (graft-cli run --seed 1), so the classifier's output
 * differs; the part that differs is the last Gemm, marked on ResNet-18. */
static void
test_reduce_mismatch_folder (void)
{
  g_autofree char *path = generated_fixture ("make-resnet18-model.py", "resnet18.onnx");
  g_autofree char *dir = graft_test_scratch_dir ("graft-reduce-gui-XXXXXX", NULL);
  g_autofree char *reference = g_build_filename (dir, "reference", NULL);
  g_autofree char *output = g_build_filename (dir, "fc-reduced.onnx", NULL);
  g_autofree char *cli = g_build_filename (g_getenv ("GRAFT_BUILD_DIR"), "app", "graft-cli", NULL);
  const char *run_argv[] = { cli, "run", path, "--random", "--seed", "1", "-o", reference, NULL };
  g_free (harness_run_check (run_argv, "graft-cli run --seed 1"));
  GraftWindow *window = harness_window_new ();

  harness_open (window, path);
  harness_activate (window, "win.reduce");
  GraftReduceDialog *dialog = GRAFT_REDUCE_DIALOG (harness_find_dialog (window, GRAFT_TYPE_REDUCE_DIALOG));
  graft_reduce_dialog_set_condition (dialog, GRAFT_REDUCE_MISMATCH);
  inspect_set_text (dialog, GRAFT_TYPE_REDUCE_DIALOG, "reference_row", reference);
  inspect_set_text (dialog, GRAFT_TYPE_REDUCE_DIALOG, "output_row", output);
  harness_settle (window);
  harness_screenshot (window, "reduce-mismatch-folder");
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (dialog), "reduce.start", NULL));
  harness_wait_for (search_finished, dialog);
  harness_settle (window);
  const char *status = inspect_label_text (dialog, GRAFT_TYPE_REDUCE_DIALOG, "status_label");
  g_test_message ("reduce: %s", status);
  g_assert_nonnull (strstr (status, "differs from the reference"));
  GraftGraph *graph = harness_shown_graph (window);
  GraftNode *fc = ((GraftValue *) graph->outputs->pdata[0])->producer;
  g_assert_cmpstr (fc->op, ==, "onnx::Gemm");
  g_auto(GStrv) fc_marks = inspect_canvas_node_marks (window_canvas (window), fc);
  g_assert_cmpstr (fc_marks[0], ==, "kept");
  g_autoptr(GPtrArray) others = other_windows (window);
  g_assert_cmpuint (others->len, ==, 1);
  harness_settle (others->pdata[0]);
  GraftGraph *reduced = harness_shown_graph (others->pdata[0]);
  g_assert_cmpuint (reduced->nodes->len, <=, 2);
  g_assert_nonnull (graft_graph_find_node (reduced, fc->name));
  gtk_window_destroy (GTK_WINDOW (dialog));
  harness_window_close (others->pdata[0]);
  harness_window_close (window);
}

/* A scripted TorchScript CNN is reduced in its ONNX form (lowered at the
 * Run pane's shape): a command that fails while the file holds a Conv
 * keeps that Conv alone; the original, which shows TorchScript nodes,
 * says there is nothing of it to mark. */
static void
test_reduce_torchscript (void)
{
  g_autofree char *path = generated_fixture ("make-small-cnn-script.py", "small-cnn-script.pt");
  g_autofree char *dir = graft_test_scratch_dir ("graft-reduce-gui-XXXXXX", NULL);
  g_autofree char *output = g_build_filename (dir, "cnn-reduced.onnx", NULL);
  GraftWindow *window = harness_window_new ();

  harness_open (window, path);
  GraftGraph *graph = harness_shown_graph (window);
  const char *input = NULL;
  for (guint i = 0; i < graph->inputs->len && input == NULL; i++)
    if (((GraftValue *) graph->inputs->pdata[i])->kind == GRAFT_VALUE_TENSOR)
      input = ((GraftValue *) graph->inputs->pdata[i])->name;
  g_assert_nonnull (input);
  g_autofree char *shape_action = g_strdup_printf ("win.set-run-input-shape::%s=1x3x16x16", input);
  harness_activate (window, shape_action);
  GraftReduceDialog *dialog = open_command_reduce (window, "grep -q Conv {model} && exit 1; exit 0", output);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (dialog), "reduce.start", NULL));
  harness_wait_for (search_finished, dialog);
  harness_settle (window);
  g_test_message ("reduce: %s", inspect_label_text (dialog, GRAFT_TYPE_REDUCE_DIALOG, "status_label"));
  g_assert_true (g_str_has_prefix (inspect_label_text (dialog, GRAFT_TYPE_REDUCE_DIALOG, "status_label"), "Kept 1 of "));
  g_assert_nonnull (harness_find_label (GTK_WIDGET (window), "none to mark here"));

  g_autofree char *test_python = graft_test_python ();
  g_autofree char *check = g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "tests", "debug", "check-reduced.py", NULL);
  const char *argv[] = { test_python, check, output, NULL };
  g_autofree char *names = harness_run_check (argv, "the reduced TorchScript model");
  g_test_message ("kept: %s", names);
  g_autoptr(GPtrArray) others = other_windows (window);
  g_assert_cmpuint (others->len, ==, 1);
  harness_settle (others->pdata[0]);
  GraftGraph *reduced = harness_shown_graph (others->pdata[0]);
  g_assert_cmpuint (reduced->nodes->len, ==, 1);
  g_assert_cmpstr (((GraftNode *) reduced->nodes->pdata[0])->op, ==, "onnx::Conv");
  gtk_window_destroy (GTK_WINDOW (dialog));
  harness_window_close (others->pdata[0]);
  harness_window_close (window);
}

static gboolean
window_says_float16_done (gpointer data)
{
  return harness_find_label (GTK_WIDGET (data), "Float16: ") != NULL;
}

/* Convert to Float16 Keeping Accuracy on a TransformerEncoder whose first
 * LayerNorm overflows in float16: the search runs off the UI thread, the
 * float16 edit keeps the nodes it found (the overflowing Pow among them)
 * in float32, and they are marked "float32" on the converted graph. */
static void
test_float16_auto_keep (void)
{
  g_autofree char *path = generated_fixture ("make-fp16-overflow-model.py", "fp16-overflow.onnx");
  GraftWindow *window = harness_window_new ();

  harness_open (window, path);
  harness_activate (window, "win.float16-auto-keep-dialog");
  GPtrArray *dialogs = harness_list_dialogs (window);
  g_assert_cmpuint (dialogs->len, ==, 1);
  AdwMessageDialog *dialog = dialogs->pdata[0];
  g_ptr_array_unref (dialogs);
  harness_screenshot (window, "float16-dialog");
  adw_message_dialog_response (dialog, "cancel");
  harness_settle (window);

  harness_activate (window, "win.float16-auto-keep((0.01, 0.01, true))");
  harness_wait_for (window_says_float16_done, window);
  harness_settle (window);
  GtkLabel *toast = harness_find_label (GTK_WIDGET (window), "Float16: ");
  g_test_message ("%s", gtk_label_get_text (toast));
  harness_screenshot (window, "float16-auto-keep");

  GraftGraph *graph = harness_shown_graph (window);
  GraftNode *pow = graft_graph_find_node (graph, "/encoder/layers.0/norm1/Pow");
  g_assert_nonnull (pow);
  g_assert_cmpint (((GraftValue *) pow->outputs->pdata[0])->dtype, !=, GRAFT_DTYPE_FLOAT16);
  GraftGraphCanvas *canvas = window_canvas (window);
  g_auto(GStrv) pow_marks = inspect_canvas_node_marks (canvas, pow);
  g_assert_cmpstr (pow_marks[0], ==, "float32");
  g_assert_nonnull (inspect_find_line (pow_marks, "Kept in float32", ""));
  /* every node's box in view, to read each one's tooltip (the nodes the
   * canvas lists at their readers have none) */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (canvas), "canvas.expand-all", NULL));
  harness_settle (window);
  guint n_float32 = 0, n_casts = 0, n_float16_weights = 0;
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = graph->nodes->pdata[i];
      n_casts += g_strcmp0 (node->op, "onnx::Cast") == 0;
      if (!inspect_canvas_draws_node (canvas, node))
        continue;
      g_auto(GStrv) marks = inspect_canvas_node_marks (canvas, node);
      n_float32 += g_strcmp0 (marks[0], "float32") == 0;
    }
  for (guint i = 0; i < graph->values->len; i++)
    {
      GraftValue *value = graph->values->pdata[i];
      n_float16_weights += value->initializer != NULL && value->dtype == GRAFT_DTYPE_FLOAT16;
    }
  g_test_message ("%u nodes marked float32, %u Casts, %u float16 weights", n_float32, n_casts, n_float16_weights);
  g_assert_cmpuint (n_float32, >=, 1);
  g_assert_cmpuint (n_float32, <=, 10);
  g_assert_cmpuint (n_casts, >=, 2);
  g_assert_cmpuint (n_float16_weights, >, 0);

  /* the converted model runs without NaN/Inf in the Run pane */
  harness_activate (window, "win.show-run");
  harness_activate (window, "win.run");
  GraftRunPane *pane = GRAFT_RUN_PANE (harness_find_type (GTK_WIDGET (window), GRAFT_TYPE_RUN_PANE));
  g_test_message ("run: %s", inspect_label_text (pane, GRAFT_TYPE_RUN_PANE, "status_label"));
  g_assert_null (graft_run_pane_get_nonfinite_node (pane));
  g_assert_nonnull (strstr (inspect_label_text (pane, GRAFT_TYPE_RUN_PANE, "status_label"), "Ran in"));

  /* Undo gives float32 back, and the marks go with the converted graph */
  harness_activate (window, "win.undo");
  graph = harness_shown_graph (window);
  pow = graft_graph_find_node (graph, "/encoder/layers.0/norm1/Pow");
  g_auto(GStrv) undone_marks = inspect_canvas_node_marks (window_canvas (window), pow);
  g_assert_null (undone_marks[0]);
  harness_window_close (window);
}

static const char *
cost_summary (GraftWindow *window)
{
  return gtk_label_get_text (GTK_LABEL (harness_get_name (GTK_WIDGET (window), "cost-summary")));
}

/* The badge of ResNet-18's first conv under the cost overlay, as its
 * tooltip says it (freed with the next call). */
static const char *
conv1_badge (GraftWindow *window)
{
  static char **marks;
  GraftNode *conv = harness_find_op (harness_shown_graph (window), "onnx::Conv");

  g_strfreev (marks);
  marks = inspect_canvas_node_marks (window_canvas (window), conv);
  return marks[0];
}

/* The cost overlay's metric chooser and biggest groups on a ResNet-18
 * export: FLOPs by default, then parameter bytes (layer4 holds most),
 * activation bytes, and measured time once the model has run. */
static void
test_cost_metrics (void)
{
  g_autofree char *path = generated_fixture ("make-resnet18-model.py", "resnet18.onnx");
  GraftWindow *window = harness_window_new ();

  harness_open (window, path);
  harness_activate (window, "win.show-cost");
  GtkWidget *bar = harness_find_id (GTK_WIDGET (window), "cost_bar");
  GtkDropDown *dropdown = GTK_DROP_DOWN (harness_find_id (GTK_WIDGET (window), "cost_metric_dropdown"));
  g_assert_true (gtk_widget_get_visible (bar));
  g_test_message ("flops: %s; conv1 %s", cost_summary (window), conv1_badge (window));
  g_assert_true (g_str_has_prefix (cost_summary (window), "Total 297.5 MFLOPs · biggest groups: layer1 "));
  g_assert_true (g_str_has_suffix (conv1_badge (window), "MFLOPs"));
  harness_screenshot (window, "cost-flops");

  harness_activate (window, "win.cost-metric::parameters");
  g_assert_cmpuint (gtk_drop_down_get_selected (dropdown), ==, GRAFT_COST_PARAMETER_BYTES);
  g_test_message ("parameters: %s; conv1 %s", cost_summary (window), conv1_badge (window));
  g_assert_true (g_str_has_prefix (cost_summary (window), "Total 46.72 MB · biggest groups: layer4 "));
  g_assert_true (g_str_has_suffix (conv1_badge (window), "kB"));
  harness_screenshot (window, "cost-parameters");

  /* the dropdown is the same choice */
  gtk_drop_down_set_selected (dropdown, GRAFT_COST_ACTIVATION_BYTES);
  harness_settle (window);
  g_test_message ("activations: %s; conv1 %s", cost_summary (window), conv1_badge (window));
  g_assert_true (g_str_has_prefix (cost_summary (window), "Total 1.93 MB summed, peak 376.8 kB with values freed at last "
                                                         "use, pool 514.0 kB · biggest groups: layer1 "));
  harness_screenshot (window, "cost-activations");

  harness_activate (window, "win.cost-metric::time");
  g_assert_cmpstr (cost_summary (window), ==, "Run the model (F5) to measure its nodes' time");
  harness_activate (window, "win.show-run");
  harness_activate (window, "win.run");
  g_test_message ("time: %s; conv1 %s", cost_summary (window), conv1_badge (window));
  g_assert_true (g_str_has_prefix (cost_summary (window), "Total "));
  g_assert_nonnull (strstr (cost_summary (window), " ms · biggest groups: layer"));
  g_assert_true (g_str_has_suffix (conv1_badge (window), " ms"));
  harness_screenshot (window, "cost-time");

  harness_activate (window, "win.show-cost");
  g_assert_false (gtk_widget_get_visible (bar));
  harness_window_close (window);
}

int
main (int argc, char *argv[])
{
  harness_init_environment ();
  gtk_test_init (&argc, &argv, NULL);

  g_test_add_func ("/gui/debug/reduce-to-here", test_reduce_to_here);
  g_test_add_func ("/gui/debug/reduce-cancel", test_reduce_cancel);
  g_test_add_func ("/gui/debug/reduce-torchscript", test_reduce_torchscript);
  g_test_add_func ("/gui/debug/reduce-mismatch-folder", test_reduce_mismatch_folder);
  g_test_add_func ("/gui/debug/float16-auto-keep", test_float16_auto_keep);
  g_test_add_func ("/gui/debug/cost-metrics", test_cost_metrics);
  return g_test_run ();
}
