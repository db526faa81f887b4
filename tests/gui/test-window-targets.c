/* "Will it run there?" in the window (issue 42): the deployment target
 * picker in the header, the summary under it, the partitions tinted on the
 * canvas and the nodes that fall back badged, on the ResNet-18 export that
 * onnxruntime's usability checker judges (make-target-models.py). */
#include <string.h>

#include "window-harness.h"
#include "../onnx/fixtures.h"
#include "window-private.h"

static void
test_target_picker (void)
{
  const char *const names[] = { "resnet18", NULL };
  g_autofree char *dir = graft_test_generate_fixtures ("tests/analysis/make-target-models.py",
                                                       "tests/fixtures-generated/targets", names);
  g_autofree char *path = g_build_filename (dir, "resnet18", "optimized.onnx", NULL);
  GraftWindow *window = harness_window_new ();
  GraftGraph *graph;
  GraftNode *flatten, *conv;
  GdkRGBA tint;

  harness_open (window, path);
  g_assert_false (gtk_widget_get_visible (window->target_bar));
  g_assert_cmpuint (gtk_drop_down_get_selected (window->target_dropdown), ==, 0);

  /* onnxruntime's checker: "2 partitions with a total of 48/49 nodes can be
   * handled by the CoreML MLProgram EP ... Unsupported ops: ai.onnx:Flatten". */
  harness_activate (window, "win.deploy-target::ort-coreml-mlprogram");
  g_assert_true (gtk_widget_get_visible (window->target_bar));
  g_assert_cmpstr (gtk_label_get_text (window->target_summary), ==,
                   "2 partitions, 48/49 nodes on ort-coreml-mlprogram; Flatten falls back");
  g_assert_cmpstr (gtk_string_object_get_string (GTK_STRING_OBJECT (
                     gtk_drop_down_get_selected_item (window->target_dropdown))), ==,
                   "onnxruntime CoreML, ML Program (Apple)");
  graph = harness_shown_graph (window);
  flatten = harness_find_op (graph, "onnx::Flatten");
  conv = harness_find_op (graph, "onnx::Conv");
  g_assert_nonnull (flatten);
  g_assert_nonnull (conv);
  g_assert_true (graft_graph_canvas_get_node_tint (window->canvas, conv, &tint));
  g_assert_false (graft_graph_canvas_get_node_tint (window->canvas, flatten, NULL));
  /* The Gemm after Flatten is in the second partition: another colour. */
  {
    GdkRGBA gemm_tint;
    g_assert_true (graft_graph_canvas_get_node_tint (window->canvas, harness_find_op (graph, "onnx::Gemm"), &gemm_tint));
    g_assert_false (gdk_rgba_equal (&tint, &gemm_tint));
  }
  harness_activate (window, "win.select-node::/Flatten");
  harness_screenshot (window, "deploy-target-mlprogram");

  /* The picker drives the same action. */
  gtk_drop_down_set_selected (window->target_dropdown, 6);   /* No Target, executorch-xnnpack, openvino, ort-coreml, ort-coreml-mlprogram, ort-cuda, ort-nnapi */
  harness_settle (window);
  g_assert_cmpstr (gtk_label_get_text (window->target_summary), ==, "1 partition, 49/49 nodes on ort-nnapi");
  g_assert_true (graft_graph_canvas_get_node_tint (window->canvas, flatten, NULL));

  /* A target for torch.export programs says it cannot read ONNX. */
  harness_activate (window, "win.deploy-target::executorch-xnnpack");
  g_assert_nonnull (strstr (gtk_label_get_text (window->target_summary), "does not read this kind of model"));

  harness_activate (window, "win.deploy-target::");
  g_assert_false (gtk_widget_get_visible (window->target_bar));
  g_assert_false (graft_graph_canvas_get_node_tint (window->canvas, conv, NULL));
  harness_window_close (window);
}

int
main (int argc, char **argv)
{
  harness_init_environment ();
  gtk_test_init (&argc, &argv, NULL);
  g_test_add_func ("/window/deploy-target", test_target_picker);
  return g_test_run ();
}
