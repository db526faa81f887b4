/* "Will it run there?" in the window (issue 42): the deployment target
 * picker in the header, the summary under it, the partitions tinted on the
 * canvas and the nodes that fall back badged, on the ResNet-18 export that
 * onnxruntime's usability checker judges (make-target-models.py). */
#include <string.h>

#include "window-harness.h"
#include "canvas-inspect.h"
#include "widget-screenshot.h"
#include "xdotool-input.h"
#include "../onnx/fixtures.h"
#include "edit/edit-history.h"

/* The window's template child called name (its .ui's id), as a user
 * finds it: the summary bar, the picker. */
static gpointer
child (GraftWindow *window, const char *name)
{
  GObject *object = gtk_widget_get_template_child (GTK_WIDGET (window), GRAFT_TYPE_WINDOW, name);

  g_assert_nonnull (object);
  return object;
}

/* What node's tooltip says its tint means ("Runs on …"), or NULL when
 * its box is not tinted (freed with the next call). */
static const char *
runs_on (GraftWindow *window, GraftNode *node)
{
  static char **marks;

  g_strfreev (marks);
  marks = inspect_canvas_node_marks (graft_window_get_canvas (window), node);
  return inspect_find_line (marks, "Runs on ", "");
}

static gboolean
tooltip_shown (gpointer data)
{
  GtkWidget *tooltip = harness_find_type (data, g_type_from_name ("GtkTooltipWindow"));

  return tooltip != NULL && gtk_widget_get_mapped (tooltip);
}

/* The pointer rests on node's box (real events, xdotool) until its
 * tooltip shows: the window and the tooltip pictured as name.png and
 * name-tooltip.png. Nothing without xdotool. */
static void
screenshot_tooltip (GraftWindow *window, GraftNode *node, const char *name)
{
  GraftGraphCanvas *canvas = graft_window_get_canvas (window);
  g_autofree char *xdotool = g_find_program_in_path ("xdotool");
  g_autofree char *tooltip_name = g_strdup_printf ("%s-tooltip", name);
  g_autofree char *path = harness_screenshot_path (tooltip_name);
  g_autoptr(GError) error = NULL;
  GraftRect box;
  double x, y;

  if (xdotool == NULL)
    return;
  g_assert_true (graft_graph_canvas_get_node_bounds (canvas, node, &box));
  graft_graph_canvas_scene_to_screen (canvas, box.x + box.width / 2, box.y + box.height / 2, &x, &y);
  xdotool_move_to_widget (window, GTK_WIDGET (canvas), x, y);
  harness_wait_for (tooltip_shown, window);
  harness_screenshot (window, name);
  g_assert_true (graft_widget_save_png (harness_find_type (GTK_WIDGET (window), g_type_from_name ("GtkTooltipWindow")),
                                        path, &error));
  g_assert_no_error (error);
}

/* A window showing file of the export name (make-target-models.py). */
static GraftWindow *
open_target_model (const char *name, const char *file)
{
  const char *const names[] = { name, NULL };
  g_autofree char *dir = graft_test_generate_fixtures ("tests/analysis/make-target-models.py",
                                                       "tests/fixtures-generated/targets", names);
  g_autofree char *path = g_build_filename (dir, name, file, NULL);
  GraftWindow *window = harness_window_new ();

  harness_open (window, path);
  return window;
}

static void
test_target_picker (void)
{
  GraftWindow *window = open_target_model ("resnet18", "optimized.onnx");
  GraftGraph *graph;
  GraftNode *flatten, *conv;

  g_assert_false (gtk_widget_get_visible (GTK_WIDGET (child (window, "target_bar"))));
  g_assert_cmpuint (gtk_drop_down_get_selected (GTK_DROP_DOWN (child (window, "target_dropdown"))), ==, 0);

  /* onnxruntime's checker: "2 partitions with a total of 48/49 nodes can be
   * handled by the CoreML MLProgram EP ... Unsupported ops: ai.onnx:Flatten". */
  harness_activate (window, "win.deploy-target::ort-coreml-mlprogram");
  g_assert_true (gtk_widget_get_visible (GTK_WIDGET (child (window, "target_bar"))));
  g_assert_cmpstr (gtk_label_get_text (GTK_LABEL (child (window, "target_summary"))), ==,
                   "2 partitions, 48/49 nodes on ort-coreml-mlprogram; Flatten falls back");
  g_assert_cmpstr (gtk_string_object_get_string (GTK_STRING_OBJECT (
                     gtk_drop_down_get_selected_item (GTK_DROP_DOWN (child (window, "target_dropdown"))))), ==,
                   "onnxruntime CoreML, ML Program (Apple)");
  graph = harness_shown_graph (window);
  flatten = harness_find_op (graph, "onnx::Flatten");
  conv = harness_find_op (graph, "onnx::Conv");
  g_assert_nonnull (flatten);
  g_assert_nonnull (conv);
  /* Tinted by partition, each tooltip saying which: the Gemm after
   * Flatten is in the second partition (another colour). */
  g_assert_cmpstr (runs_on (window, conv), ==, "Runs on ort-coreml-mlprogram (partition 1 of 2)");
  g_assert_null (runs_on (window, flatten));
  g_assert_cmpstr (runs_on (window, harness_find_op (graph, "onnx::Gemm")), ==,
                   "Runs on ort-coreml-mlprogram (partition 2 of 2)");
  harness_activate (window, "win.select-node::/Flatten");
  harness_screenshot (window, "deploy-target-mlprogram");
  screenshot_tooltip (window, harness_find_op (graph, "onnx::Gemm"), "deploy-target-gemm");

  /* The picker drives the same action. */
  gtk_drop_down_set_selected (GTK_DROP_DOWN (child (window, "target_dropdown")), 6);   /* No Target, executorch-xnnpack, openvino, ort-coreml, ort-coreml-mlprogram, ort-cuda, ort-nnapi */
  harness_settle (window);
  g_assert_cmpstr (gtk_label_get_text (GTK_LABEL (child (window, "target_summary"))), ==, "1 partition, 49/49 nodes on ort-nnapi");
  g_assert_cmpstr (runs_on (window, flatten), ==, "Runs on ort-nnapi (partition 1 of 1)");

  /* A target for torch.export programs says it cannot read ONNX. */
  harness_activate (window, "win.deploy-target::executorch-xnnpack");
  g_assert_nonnull (strstr (gtk_label_get_text (GTK_LABEL (child (window, "target_summary"))), "does not read this kind of model"));

  harness_activate (window, "win.deploy-target::");
  g_assert_false (gtk_widget_get_visible (GTK_WIDGET (child (window, "target_bar"))));
  g_assert_null (runs_on (window, conv));
  harness_window_close (window);
}

/* Fix for Target on BERT exported with a dynamic batch (TorchScript-based
 * exporter): the fixes go through the edit history, the summary shows the
 * partitions after them, and Undo takes every edit back. */
static void
test_target_fix (void)
{
  GraftWindow *window = open_target_model ("bert_dynamic", "model.onnx");
  g_autofree char *before = NULL;
  guint n_edits;

  harness_activate (window, "win.deploy-target::ort-nnapi");
  before = g_strdup (gtk_label_get_text (GTK_LABEL (child (window, "target_summary"))));
  g_assert_true (g_str_has_prefix (before, "6 partitions, 72/208 nodes on ort-nnapi;"));
  g_assert_true (gtk_widget_get_visible (GTK_WIDGET (child (window, "target_fix_button"))));

  harness_activate (window, "win.fix-for-target");
  harness_settle (window);
  /* fixed input dims, folded shape math, an int32 Cast for the embedding's
   * indices, LayerNormalization and Erf decomposed: only the IsNaN → Where
   * guards after each attention's Softmax fall back. */
  g_assert_cmpstr (gtk_label_get_text (GTK_LABEL (child (window, "target_summary"))), ==,
                   "3 partitions, 141/145 nodes on ort-nnapi; IsNaN, Where fall back");
  n_edits = graft_edit_history_get_applied (graft_document_get_history (graft_window_get_document (window)))->len;
  g_assert_cmpuint (n_edits, ==, 6);
  harness_screenshot (window, "deploy-target-fixed");

  for (guint i = 0; i < n_edits; i++)
    harness_activate (window, "win.undo");
  harness_settle (window);
  g_assert_false (graft_edit_history_can_undo (graft_document_get_history (graft_window_get_document (window))));
  g_assert_cmpstr (gtk_label_get_text (GTK_LABEL (child (window, "target_summary"))), ==, before);
  harness_window_close (window);
}

int
main (int argc, char **argv)
{
  harness_init_environment ();
  gtk_test_init (&argc, &argv, NULL);
  g_test_add_func ("/window/deploy-target", test_target_picker);
  g_test_add_func ("/window/deploy-target-fix", test_target_fix);
  return g_test_run ();
}
