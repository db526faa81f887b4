/* The Add Node / Insert Node op picker and the sidebar's editing fields,
 * driven through their real widgets in the window: the search entry,
 * the op list's rows, the typed attribute entries (activated as Enter
 * does), the apply button. Each edit is undoable; refusals are shown in
 * the dialog or beside the sidebar field; the saved model passes
 * onnx.checker's full check and gives onnxruntime's outputs in Graft's
 * runtime (tests/gui/check-edited-model.py). Screenshots go to
 * BUILD/tests/gui/screenshots. */
#include <string.h>
#include <glib/gstdio.h>

#include "../test-python.h"
#include "window-harness.h"
#include "ir/graph-surgery.h"
#include "widgets/graph-canvas.h"
#include "widgets/node-sidebar.h"
#include "widgets/op-picker.h"
#include "../test-scratch.h"
#include "widget-inspect.h"

static char *
sample_path (void)
{
  return g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "data", "samples", "tiny-cnn.onnx", NULL);
}

static GraftNodeSidebar *
sidebar_of (GraftWindow *window)
{
  return GRAFT_NODE_SIDEBAR (harness_find_type (GTK_WIDGET (window), GRAFT_TYPE_NODE_SIDEBAR));
}

static GraftOpPicker *
the_picker (GraftWindow *window)
{
  return (GraftOpPicker *) harness_find_dialog (window, GRAFT_TYPE_OP_PICKER);
}

/* Types into the search entry (its search-changed waits a moment), then
 * clicks the op's row. */
static void
pick_op (GraftOpPicker *picker, const char *search, const char *op)
{
  GtkWidget *entry = harness_find_type (GTK_WIDGET (picker), GTK_TYPE_SEARCH_ENTRY);
  GtkListBox *list = GTK_LIST_BOX (harness_find_type (GTK_WIDGET (picker), GTK_TYPE_LIST_BOX));
  GtkWidget *row;

  gtk_editable_set_text (GTK_EDITABLE (entry), search);
  harness_wait_ms (400);
  row = harness_get_name (GTK_WIDGET (list), op);
  g_assert_true (gtk_widget_get_child_visible (row));
  /* The search narrowed the list: an op that does not match is hidden. */
  g_assert_false (gtk_widget_get_child_visible (harness_get_name (GTK_WIDGET (list), "Conv")));
  gtk_list_box_select_row (list, GTK_LIST_BOX_ROW (row));
  harness_wait_ms (50);
}

static void
type_into (GtkWidget *root, const char *name, const char *text)
{
  gtk_editable_set_text (GTK_EDITABLE (harness_get_name (root, name)), text);
}

static void
click_apply (GraftWindow *window, GraftOpPicker *picker)
{
  GtkWidget *button = gtk_window_get_default_widget (GTK_WINDOW (picker));

  g_assert_true (gtk_widget_get_sensitive (button));
  g_signal_emit_by_name (button, "clicked");
  harness_settle (window);
}

static const char *
picker_error (GraftOpPicker *picker)
{
  GtkWidget *label = harness_get_name (GTK_WIDGET (picker), "picker-error");

  return gtk_widget_get_visible (label) ? gtk_label_get_text (GTK_LABEL (label)) : NULL;
}

static GraftNode *
node_of_op (GraftGraph *graph, const char *op)
{
  for (guint i = 0; i < graph->nodes->len; i++)
    if (g_str_equal (((GraftNode *) g_ptr_array_index (graph->nodes, i))->op, op))
      return g_ptr_array_index (graph->nodes, i);
  return NULL;
}

/* Saves the window's model and runs tests/gui/check-edited-model.py on
 * it; returns the graph output names it printed. */
static char *
save_and_check (GraftWindow *window, const char *name)
{
  g_autofree char *dir = graft_test_scratch_dir ("graft-picker-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, name, NULL);
  g_autofree char *action = g_strconcat ("win.save-as-path::", path, NULL);
  g_autofree char *python = graft_test_python ();
  g_autofree char *script = g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "tests", "gui", "check-edited-model.py",
                                              NULL);
  g_autofree char *cli = g_build_filename (g_getenv ("GRAFT_BUILD_DIR"), "app", "graft-cli", NULL);
  const char *argv[] = { python, script, path, cli, NULL };
  g_autofree char *what = g_strdup_printf ("the saved model %s", path);
  g_autofree char *out = NULL;

  harness_activate (window, action);
  g_assert_true (g_file_test (path, G_FILE_TEST_EXISTS));
  out = harness_run_check (argv, what);
  g_unlink (path);
  g_rmdir (dir);
  return g_steal_pointer (&out);
}

static void
test_insert_node (void)
{
  GraftWindow *window = harness_window_new ();
  g_autofree char *path = sample_path ();
  g_autofree char *outputs = NULL;
  GraftOpPicker *picker;
  GraftNode *leaky, *gemm;

  harness_open (window, path);
  harness_activate (window, "win.edit-operation(('insert-node', '/Flatten_output_0', ''))");
  picker = the_picker (window);
  g_assert_nonnull (picker);
  pick_op (picker, "leaky", "LeakyRelu");
  /* The op's attribute with its type and default, as an entry. */
  g_assert_nonnull (harness_find_label (GTK_WIDGET (picker), "alpha · float"));
  g_assert_cmpstr (gtk_entry_get_placeholder_text (GTK_ENTRY (harness_get_name (GTK_WIDGET (picker), "attribute-alpha"))),
                   ==, "0.01");

  /* A value that is not a float: refused in the dialog, nothing changed. */
  type_into (GTK_WIDGET (picker), "attribute-alpha", "steep");
  click_apply (window, picker);
  g_assert_true (the_picker (window) == picker);
  g_assert_nonnull (picker_error (picker));
  g_assert_nonnull (strstr (picker_error (picker), "'alpha' is a float; 'steep' is not"));
  g_assert_null (node_of_op (harness_shown_graph (window), "onnx::LeakyRelu"));
  harness_screenshot (window, "op-picker-insert-error");

  type_into (GTK_WIDGET (picker), "attribute-alpha", "0.2");
  type_into (GTK_WIDGET (picker), "node-name", "leaky");
  harness_screenshot (window, "op-picker-insert");
  click_apply (window, picker);
  g_assert_null (the_picker (window));
  leaky = graft_graph_find_node (harness_shown_graph (window), "leaky");
  g_assert_nonnull (leaky);
  g_assert_cmpstr (leaky->op, ==, "onnx::LeakyRelu");
  g_assert_cmpfloat_with_epsilon (graft_node_get_attribute (leaky, "alpha")->f, 0.2, 1e-6);
  gemm = graft_graph_find_node (harness_shown_graph (window), "/fc/Gemm");
  g_assert_true (g_ptr_array_index (gemm->inputs, 0) == g_ptr_array_index (leaky->outputs, 0));

  outputs = save_and_check (window, "inserted.onnx");
  g_assert_cmpstr (outputs, ==, "probabilities");
  harness_activate (window, "win.undo");
  g_assert_null (graft_graph_find_node (harness_shown_graph (window), "leaky"));
  harness_window_close (window);
}

static void
test_add_node (void)
{
  GraftWindow *window = harness_window_new ();
  g_autofree char *path = sample_path ();
  g_autofree char *outputs = NULL;
  GraftOpPicker *picker;
  GraftNode *cast;

  harness_open (window, path);
  /* Right-click on the canvas background: a menu with Add Node…. */
  {
    GtkWidget *canvas = harness_find_type (GTK_WIDGET (window), GRAFT_TYPE_GRAPH_CANVAS);
    g_autoptr(GListModel) controllers = gtk_widget_observe_controllers (canvas);
    GtkGestureClick *secondary = NULL;
    GtkWidget *popover = NULL;
    GtkLabel *item;

    for (guint i = 0; i < g_list_model_get_n_items (controllers); i++)
      {
        g_autoptr(GObject) controller = g_list_model_get_item (controllers, i);
        if (GTK_IS_GESTURE_CLICK (controller)
            && gtk_gesture_single_get_button (GTK_GESTURE_SINGLE (controller)) == GDK_BUTTON_SECONDARY)
          secondary = GTK_GESTURE_CLICK (controller);
      }
    g_assert_nonnull (secondary);
    g_signal_emit_by_name (secondary, "pressed", 1, 4.0, 4.0);
    harness_settle (window);
    for (GtkWidget *child = gtk_widget_get_first_child (canvas); child != NULL; child = gtk_widget_get_next_sibling (child))
      if (GTK_IS_POPOVER (child))
        popover = child;
    g_assert_nonnull (popover);
    item = harness_find_label (popover, "Add Node");
    g_assert_nonnull (item);
    g_signal_emit_by_name (gtk_widget_get_ancestor (GTK_WIDGET (item), GTK_TYPE_BUTTON), "clicked");
    harness_settle (window);
  }
  picker = the_picker (window);
  g_assert_nonnull (picker);
  pick_op (picker, "cast", "Cast");
  g_assert_nonnull (harness_find_label (GTK_WIDGET (picker), "to · int · required"));
  /* A required attribute left empty is named before anything is applied. */
  type_into (GTK_WIDGET (picker), "input-input", "/fc/Gemm_output_0");
  click_apply (window, picker);
  g_assert_nonnull (picker_error (picker));
  g_assert_nonnull (strstr (picker_error (picker), "“to” is required"));
  /* A value the graph does not have: the edit's own refusal. */
  type_into (GTK_WIDGET (picker), "attribute-to", "11");
  type_into (GTK_WIDGET (picker), "input-input", "no_such_value");
  click_apply (window, picker);
  g_assert_nonnull (strstr (picker_error (picker), "no value 'no_such_value'"));

  type_into (GTK_WIDGET (picker), "input-input", "/fc/Gemm_output_0");
  type_into (GTK_WIDGET (picker), "node-name", "logits_as_double");
  g_assert_true (gtk_check_button_get_active (GTK_CHECK_BUTTON (harness_get_name (GTK_WIDGET (picker), "graph-outputs"))));
  harness_screenshot (window, "op-picker-add");
  click_apply (window, picker);
  g_assert_null (the_picker (window));
  cast = graft_graph_find_node (harness_shown_graph (window), "logits_as_double");
  g_assert_nonnull (cast);
  g_assert_cmpint (graft_node_get_attribute (cast, "to")->i, ==, 11);
  g_assert_true (((GraftValue *) g_ptr_array_index (cast->outputs, 0))->is_graph_output);

  outputs = save_and_check (window, "added.onnx");
  g_assert_cmpstr (outputs, ==, "probabilities logits_as_double");
  harness_activate (window, "win.undo");
  g_assert_null (graft_graph_find_node (harness_shown_graph (window), "logits_as_double"));
  harness_window_close (window);
}

static GtkWidget *
sidebar_field (GraftWindow *window, const char *key)
{
  return harness_get_name (GTK_WIDGET (sidebar_of (window)), key);
}

/* The refusal shown under the sidebar field key (the last line of the
 * field's box), or NULL while there is none. */
static const char *
field_error (GraftWindow *window, const char *key)
{
  GtkWidget *box = gtk_widget_get_parent (gtk_widget_get_parent (sidebar_field (window, key)));
  GtkWidget *error = gtk_widget_get_last_child (box);

  g_assert_true (GTK_IS_LABEL (error));
  return gtk_widget_get_visible (error) ? gtk_label_get_text (GTK_LABEL (error)) : NULL;
}

/* Types text into the sidebar field key and presses Enter. */
static void
enter_in_sidebar (GraftWindow *window, const char *key, const char *text)
{
  GtkWidget *entry = sidebar_field (window, key);

  gtk_editable_set_text (GTK_EDITABLE (entry), text);
  g_signal_emit_by_name (entry, "activate");
  harness_settle (window);
}

static void
test_sidebar_editing (void)
{
  GraftWindow *window = harness_window_new ();
  g_autofree char *path = sample_path ();
  g_autofree char *outputs = NULL;
  GraftNodeSidebar *sidebar;
  GraftNode *gemm;
  GraftValue *flat;
  GtkDropDown *names;
  GtkWidget *entry;

  harness_open (window, path);
  sidebar = sidebar_of (window);
  harness_activate (window, "win.select-node::/fc/Gemm");
  g_assert_cmpstr (gtk_editable_get_text (GTK_EDITABLE (sidebar_field (window, "attribute:alpha"))), ==, "1");

  /* An attribute edited in place; the sidebar still shows the node. */
  enter_in_sidebar (window, "attribute:alpha", "0.5");
  gemm = graft_graph_find_node (harness_shown_graph (window), "/fc/Gemm");
  g_assert_cmpfloat (graft_node_get_attribute (gemm, "alpha")->f, ==, 0.5);
  g_assert_cmpstr (inspect_label_text (sidebar, GRAFT_TYPE_NODE_SIDEBAR, "subtitle_label"), ==, "/fc/Gemm");
  g_assert_cmpstr (gtk_editable_get_text (GTK_EDITABLE (sidebar_field (window, "attribute:alpha"))), ==, "0.5");

  /* Wrong input: the reason beside the field, the text kept, nothing changed. */
  enter_in_sidebar (window, "attribute:transB", "yes");
  g_assert_nonnull (field_error (window, "attribute:transB"));
  g_assert_nonnull (strstr (field_error (window, "attribute:transB"), "'yes' is not"));
  g_assert_cmpstr (gtk_editable_get_text (GTK_EDITABLE (sidebar_field (window, "attribute:transB"))), ==, "yes");
  gemm = graft_graph_find_node (harness_shown_graph (window), "/fc/Gemm");
  g_assert_cmpint (graft_node_get_attribute (gemm, "transB")->i, ==, 1);
  harness_screenshot (window, "sidebar-attribute-error");

  /* One of the schema's attributes the node lacks, added. */
  names = GTK_DROP_DOWN (sidebar_field (window, "add-attribute-name"));
  for (guint i = 0; i < g_list_model_get_n_items (gtk_drop_down_get_model (names)); i++)
    if (g_str_has_prefix (gtk_string_list_get_string (GTK_STRING_LIST (gtk_drop_down_get_model (names)), i), "transA"))
      gtk_drop_down_set_selected (names, i);
  enter_in_sidebar (window, "add-attribute", "0");
  gemm = graft_graph_find_node (harness_shown_graph (window), "/fc/Gemm");
  g_assert_nonnull (graft_node_get_attribute (gemm, "transA"));
  g_assert_cmpint (graft_node_get_attribute (gemm, "transA")->i, ==, 0);

  /* Removed with the button beside the field. */
  entry = sidebar_field (window, "attribute:beta");
  g_signal_emit_by_name (gtk_widget_get_next_sibling (entry), "clicked");
  harness_settle (window);
  gemm = graft_graph_find_node (harness_shown_graph (window), "/fc/Gemm");
  g_assert_null (graft_node_get_attribute (gemm, "beta"));

  /* Renamed. */
  enter_in_sidebar (window, "name", "classifier");
  g_assert_nonnull (graft_graph_find_node (harness_shown_graph (window), "classifier"));
  g_assert_cmpstr (inspect_label_text (sidebar, GRAFT_TYPE_NODE_SIDEBAR, "subtitle_label"), ==, "classifier");
  harness_screenshot (window, "sidebar-node-editing");

  /* A value: renamed, then made a graph output. */
  harness_activate (window, "win.select-value::/Flatten_output_0");
  enter_in_sidebar (window, "name", "flat");
  flat = graft_graph_lookup_value (harness_shown_graph (window), "flat");
  g_assert_nonnull (flat);
  g_assert_cmpstr (inspect_label_text (sidebar, GRAFT_TYPE_NODE_SIDEBAR, "title_label"), ==, "flat");
  g_signal_emit_by_name (sidebar_field (window, "graph-output"), "clicked");
  harness_settle (window);
  flat = graft_graph_lookup_value (harness_shown_graph (window), "flat");
  g_assert_true (flat->is_graph_output);
  harness_screenshot (window, "sidebar-value-editing");

  outputs = save_and_check (window, "sidebar.onnx");
  g_assert_cmpstr (outputs, ==, "probabilities flat");

  /* Every one of them undoable, back to the file as loaded. */
  for (guint i = 0; i < 6; i++)
    harness_activate (window, "win.undo");
  gemm = graft_graph_find_node (harness_shown_graph (window), "/fc/Gemm");
  g_assert_nonnull (gemm);
  g_assert_cmpfloat (graft_node_get_attribute (gemm, "alpha")->f, ==, 1.0);
  g_assert_nonnull (graft_node_get_attribute (gemm, "beta"));
  g_assert_null (graft_node_get_attribute (gemm, "transA"));
  g_assert_nonnull (graft_graph_lookup_value (harness_shown_graph (window), "/Flatten_output_0"));
  harness_window_close (window);
}

int
main (int argc, char **argv)
{
  harness_init_environment ();
  gtk_test_init (&argc, &argv, NULL);
  g_test_add_func ("/gui/op-picker/insert-node", test_insert_node);
  g_test_add_func ("/gui/op-picker/add-node", test_add_node);
  g_test_add_func ("/gui/op-picker/sidebar-editing", test_sidebar_editing);
  return g_test_run ();
}
