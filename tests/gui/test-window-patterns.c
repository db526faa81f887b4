/* The Replace Pattern dialog in the real window, on an MLP exported by
 * PyTorch (tests/gui/make-pattern-model.py): opened through its actions
 * (the window's menu and a node's context menu), the pattern typed into
 * its text view, the live preview read back (match count, the parser's
 * error inline, skipped candidates with the reason, the matches
 * highlighted on the canvas), applied as one edit, undone and redone,
 * and the session saved as a recipe that `graft-cli edit --recipe`
 * replays to the model the window saved; that model passes onnx.checker's
 * full check and runs in onnxruntime (tests/gui/check-pattern-replay.py).
 * Screenshots of the dialog go to BUILD/tests/gui/screenshots. */
#include <string.h>
#include <glib/gstdio.h>

#include "../test-python.h"
#include "gui-fixtures.h"
#include "window-harness.h"
#include "ir/graph-surgery.h"
#include "widgets/graph-canvas.h"
#include "widgets/pattern-dialog.h"
#include "../test-scratch.h"
#include "widget-inspect.h"

#define LINEAR_RELU "m=MatMul(x,w) a=Add(m,b) Relu(a)"

static char *
fixture_path (void)
{
  return generated_fixture ("make-pattern-model.py", "pattern-mlp.onnx");
}

static GraftGraphCanvas *
canvas_of (GraftWindow *window)
{
  return GRAFT_GRAPH_CANVAS (harness_find_type (GTK_WIDGET (window), GRAFT_TYPE_GRAPH_CANVAS));
}

static GraftPatternDialog *
the_dialog (GraftWindow *window)
{
  return (GraftPatternDialog *) harness_find_dialog (window, GRAFT_TYPE_PATTERN_DIALOG);
}

/* Types text into a text view as a paste does, then waits out the
 * preview's pause after typing. */
static void
type_text (GraftWindow *window, GraftPatternDialog *dialog, const char *name, const char *text)
{
  GtkTextView *view = GTK_TEXT_VIEW (harness_get_name (GTK_WIDGET (dialog), name));

  gtk_text_buffer_set_text (gtk_text_view_get_buffer (view), text, -1);
  harness_wait_ms (400);
  harness_settle (window);
}

static char *
text_of (GraftPatternDialog *dialog, const char *name)
{
  GtkTextBuffer *buffer = gtk_text_view_get_buffer (GTK_TEXT_VIEW (harness_get_name (GTK_WIDGET (dialog), name)));
  GtkTextIter start, end;

  gtk_text_buffer_get_bounds (buffer, &start, &end);
  return gtk_text_buffer_get_text (buffer, &start, &end, FALSE);
}

/* The text of an error label, or NULL when it is hidden. */
static const char *
shown_error (GraftPatternDialog *dialog, const char *name)
{
  GtkWidget *label = harness_get_name (GTK_WIDGET (dialog), name);

  return gtk_widget_get_visible (label) ? gtk_label_get_text (GTK_LABEL (label)) : NULL;
}

static gboolean
can_apply (GraftPatternDialog *dialog)
{
  return gtk_widget_get_sensitive (harness_get_name (GTK_WIDGET (dialog), "apply-button"));
}

static void
click_apply (GraftWindow *window, GraftPatternDialog *dialog)
{
  g_assert_true (can_apply (dialog));
  g_signal_emit_by_name (harness_get_name (GTK_WIDGET (dialog), "apply-button"), "clicked");
  harness_settle (window);
}

static guint
count_op (GraftGraph *graph, const char *op)
{
  guint n = 0;

  for (guint i = 0; i < graph->nodes->len; i++)
    n += g_str_equal (((GraftNode *) g_ptr_array_index (graph->nodes, i))->op, op);
  return n;
}

/* The subtitle of the first row named name in the dialog's match list. */
static const char *
row_subtitle (GraftPatternDialog *dialog, const char *name)
{
  GtkWidget *row = harness_get_name (harness_get_name (GTK_WIDGET (dialog), "match-list"), name);

  return adw_action_row_get_subtitle (ADW_ACTION_ROW (row));
}

/* Saves the model and the recipe from the window, then has
 * check-pattern-replay.py replay the recipe on original with graft-cli
 * and compare; returns the op types it printed. */
static char *
save_and_replay (GraftWindow *window, const char *original, gboolean run)
{
  g_autofree char *dir = graft_test_scratch_dir ("graft-patterns-XXXXXX", NULL);
  g_autofree char *saved = g_build_filename (dir, "saved.onnx", NULL);
  g_autofree char *recipe = g_build_filename (dir, "edits.json", NULL);
  g_autofree char *save_action = g_strconcat ("win.save-as-path::", saved, NULL);
  g_autofree char *recipe_action = g_strconcat ("win.save-recipe-path::", recipe, NULL);
  g_autofree char *python = graft_test_python ();
  g_autofree char *script = g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "tests", "gui", "check-pattern-replay.py",
                                              NULL);
  g_autofree char *cli = g_build_filename (g_getenv ("GRAFT_BUILD_DIR"), "app", "graft-cli", NULL);
  const char *argv[] = { python, script, original, saved, recipe, cli, run ? "--run" : NULL, NULL };
  g_autofree char *what = g_strdup_printf ("the saved model or the recipe (%s kept)", dir);
  g_autofree char *out = NULL;

  harness_activate (window, save_action);
  harness_activate (window, recipe_action);
  g_assert_true (g_file_test (saved, G_FILE_TEST_EXISTS));
  g_assert_true (g_file_test (recipe, G_FILE_TEST_EXISTS));
  out = harness_run_check (argv, what);
  g_unlink (saved);
  g_unlink (recipe);
  g_rmdir (dir);
  return g_steal_pointer (&out);
}

/* compare-onnx-fields.py's verdict on saved against original (every
 * protobuf field, opset imports included); pairs is its list file. */
static char *
compare_fields (const char *original, const char *saved, const char *pairs)
{
  g_autofree char *python = graft_test_python ();
  g_autofree char *script = g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "tests", "edit", "compare-onnx-fields.py",
                                              NULL);
  const char *argv[] = { python, script, pairs, NULL };
  g_autofree char *pair = g_strdup_printf ("%s\t%s\n", original, saved);

  g_assert_true (g_file_set_contents (pairs, pair, -1, NULL));
  return harness_run_check (argv, "the model saved after undoing every edit against the original");
}

/* Saves the window's model and checks it equals original. */
static void
assert_saves_original (GraftWindow *window, const char *original)
{
  g_autofree char *dir = graft_test_scratch_dir ("graft-patterns-XXXXXX", NULL);
  g_autofree char *saved = g_build_filename (dir, "undone.onnx", NULL);
  g_autofree char *pairs = g_build_filename (dir, "pairs.txt", NULL);
  g_autofree char *save_action = g_strconcat ("win.save-as-path::", saved, NULL);
  g_autofree char *verdict = NULL;

  harness_activate (window, save_action);
  verdict = compare_fields (original, saved, pairs);
  g_assert_nonnull (strstr (verdict, "1 of 1 saved models identical"));
  g_unlink (saved);
  g_unlink (pairs);
  g_rmdir (dir);
}

static void
test_replace_by_subgraph (void)
{
  GraftWindow *window = harness_window_new ();
  g_autofree char *path = fixture_path ();
  g_autofree char *ops = NULL;
  GraftPatternDialog *dialog;
  GtkStack *stack;
  const char *error;

  harness_open (window, path);
  g_assert_cmpuint (count_op (harness_shown_graph (window), "onnx::Relu"), ==, 3);
  harness_activate (window, "win.edit-operation(('replace-pattern', '', ''))");
  dialog = the_dialog (window);
  g_assert_nonnull (dialog);
  g_assert_false (can_apply (dialog));

  /* A step cut short: the parser's message under the text, no matches. */
  type_text (window, dialog, "pattern-text", "m=MatMul(x,w a=Add(m,b) Relu(a)");
  error = shown_error (dialog, "pattern-error");
  g_assert_nonnull (error);
  g_assert_nonnull (strstr (error, "is not [NAME=]OP(ARG,...)[;ATTR=VALUE...]: a ')' is missing"));
  g_assert_cmpuint (inspect_uint (dialog, "n-matches"), ==, 0);
  g_assert_false (can_apply (dialog));
  harness_screenshot (window, "pattern-dialog-error");
  /* A step that feeds nothing. */
  type_text (window, dialog, "pattern-text", "m=MatMul(x,w) Relu(x)");
  g_assert_nonnull (strstr (shown_error (dialog, "pattern-error"), "feeds no later step"));

  /* Two MatMul → Add → Relu replace; the third's Add is read by /Add too. */
  type_text (window, dialog, "pattern-text", LINEAR_RELU);
  g_assert_null (shown_error (dialog, "pattern-error"));
  g_assert_cmpuint (inspect_uint (dialog, "n-matches"), ==, 2);
  g_assert_cmpuint (inspect_uint (dialog, "n-skipped"), ==, 1);
  g_assert_cmpstr (gtk_label_get_text (GTK_LABEL (harness_get_name (GTK_WIDGET (dialog), "match-count"))), ==,
                   "2 matches · 1 skipped");
  g_assert_nonnull (strstr (row_subtitle (dialog, "skipped-row"),
                            "Skipped: '/fc3/Add_output_0' (of node '/fc3/Add') is also read by node '/Add'"));
  g_assert_cmpstr (row_subtitle (dialog, "match-row"), ==, "MatMul → Add → Relu");
  /* The matches are highlighted on the canvas. */
  g_assert_cmpuint (inspect_uint (canvas_of (window), "n-found-shown"), >=, 2);

  /* Replaced by Max(a, 0): the same function in other ops. */
  stack = GTK_STACK (harness_find_type (GTK_WIDGET (dialog), GTK_TYPE_STACK));
  gtk_stack_set_visible_child_name (stack, "subgraph");
  g_assert_false (can_apply (dialog));
  type_text (window, dialog, "replacement-text", "Max(a,q)");
  g_assert_nonnull (strstr (shown_error (dialog, "replacement-error"),
                            "'a' in 'Max(a,q)' is neither an earlier step nor a variable of the pattern"));
  g_assert_false (can_apply (dialog));
  /* Valid syntax the op's schema refuses: the refusal stays in the dialog. */
  type_text (window, dialog, "replacement-text", "Relu(x,w)");
  g_assert_null (shown_error (dialog, "replacement-error"));
  click_apply (window, dialog);
  g_assert_true (the_dialog (window) == dialog);
  g_assert_nonnull (strstr (shown_error (dialog, "apply-error"), "gives Relu 2 inputs; it takes 1 (X)"));
  g_assert_cmpuint (count_op (harness_shown_graph (window), "onnx::Relu"), ==, 3);
  /* The preview follows the graph the refusal put back, highlight included. */
  g_assert_cmpuint (inspect_uint (dialog, "n-matches"), ==, 2);
  g_assert_cmpuint (inspect_uint (canvas_of (window), "n-found-shown"), >=, 2);

  type_text (window, dialog, "replacement-text", "z=Constant();value_float=0.0 m=MatMul(x,w) a=Add(m,b) Max(a,z)");
  g_assert_null (shown_error (dialog, "replacement-error"));
  g_assert_null (shown_error (dialog, "apply-error"));
  harness_screenshot (window, "pattern-dialog-subgraph");
  click_apply (window, dialog);
  g_assert_null (the_dialog (window));
  /* The highlight went with the dialog. */
  g_assert_cmpuint (inspect_uint (canvas_of (window), "n-found-shown"), ==, 0);
  g_assert_cmpuint (count_op (harness_shown_graph (window), "onnx::Relu"), ==, 1);
  g_assert_cmpuint (count_op (harness_shown_graph (window), "onnx::Max"), ==, 2);
  /* The root keeps its name, so its readers still find it. */
  g_assert_cmpstr (graft_graph_find_node (harness_shown_graph (window), "/Relu")->op, ==, "onnx::Max");

  /* One edit: one undo puts every match back, one redo replaces them again. */
  harness_activate (window, "win.undo");
  g_assert_cmpuint (count_op (harness_shown_graph (window), "onnx::Relu"), ==, 3);
  g_assert_cmpuint (count_op (harness_shown_graph (window), "onnx::Max"), ==, 0);
  harness_activate (window, "win.redo");
  g_assert_cmpuint (count_op (harness_shown_graph (window), "onnx::Max"), ==, 2);

  ops = save_and_replay (window, path, TRUE);
  g_assert_nonnull (strstr (ops, "Max"));
  harness_window_close (window);
}

static void
test_custom_op_from_node (void)
{
  GraftWindow *window = harness_window_new ();
  g_autofree char *path = fixture_path ();
  g_autofree char *pattern = NULL, *ops = NULL;
  GraftPatternDialog *dialog;
  GraftGraph *graph;
  GtkEditable *domain;
  guint n_fused = 0;

  harness_open (window, path);
  /* From the node's context menu: the node and the producers only it reads. */
  harness_activate (window, "win.edit-operation(('replace-pattern', '/Relu_1', ''))");
  dialog = the_dialog (window);
  g_assert_nonnull (dialog);
  pattern = text_of (dialog, "pattern-text");
  g_assert_cmpstr (pattern, ==, "m=MatMul(x,w) a=Add(w2,m) Relu(a)");
  g_assert_cmpuint (inspect_uint (dialog, "n-matches"), ==, 2);
  g_assert_cmpuint (inspect_uint (dialog, "n-skipped"), ==, 1);

  /* The custom op page is the first: a domain of its own is required. */
  g_assert_false (can_apply (dialog));
  gtk_editable_set_text (GTK_EDITABLE (harness_get_name (GTK_WIDGET (dialog), "op-type")), "FusedLinearRelu");
  gtk_editable_set_text (GTK_EDITABLE (harness_get_name (GTK_WIDGET (dialog), "op-attributes")), "activation=relu; alpha=0.5");
  g_assert_true (can_apply (dialog));
  g_assert_nonnull (strstr (gtk_label_get_text (GTK_LABEL (harness_get_name (GTK_WIDGET (dialog), "op-hint"))),
                            "com.example::FusedLinearRelu node reading the pattern's 3 variables"));
  domain = GTK_EDITABLE (harness_get_name (GTK_WIDGET (dialog), "op-domain"));
  gtk_editable_set_text (domain, "ai.onnx");
  g_assert_false (can_apply (dialog));
  g_assert_nonnull (strstr (gtk_label_get_text (GTK_LABEL (harness_get_name (GTK_WIDGET (dialog), "op-hint"))),
                            "needs a domain of its own"));
  gtk_editable_set_text (domain, "com.example");
  harness_settle (window);
  harness_screenshot (window, "pattern-dialog-custom-op");
  click_apply (window, dialog);
  g_assert_null (the_dialog (window));

  graph = harness_shown_graph (window);
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      g_autofree char *activation = NULL;

      if (!g_str_equal (node->op, "com.example::FusedLinearRelu"))
        continue;
      n_fused++;
      g_assert_cmpuint (node->inputs->len, ==, 3);
      activation = graft_attribute_dup_string (graft_node_get_attribute (node, "activation"));
      g_assert_cmpstr (activation, ==, "relu");
    }
  g_assert_cmpuint (n_fused, ==, 2);
  g_assert_cmpuint (count_op (graph, "onnx::MatMul"), ==, 2);
  harness_activate (window, "win.undo");
  g_assert_cmpuint (count_op (harness_shown_graph (window), "com.example::FusedLinearRelu"), ==, 0);
  g_assert_cmpuint (count_op (harness_shown_graph (window), "onnx::MatMul"), ==, 4);
  harness_activate (window, "win.redo");
  g_assert_cmpuint (count_op (harness_shown_graph (window), "com.example::FusedLinearRelu"), ==, 2);

  /* onnxruntime has no kernel for the plugin: checked and replayed, not run. */
  ops = save_and_replay (window, path, FALSE);
  g_assert_nonnull (strstr (ops, "FusedLinearRelu"));

  /* Undone, the com.example import goes too: Save As writes the original. */
  harness_activate (window, "win.undo");
  assert_saves_original (window, path);
  harness_window_close (window);
}

/* Cancel leaves the model as it was, and the highlight goes. */
static void
test_cancel (void)
{
  GraftWindow *window = harness_window_new ();
  g_autofree char *path = fixture_path ();
  GraftPatternDialog *dialog;

  harness_open (window, path);
  harness_activate (window, "win.edit-operation(('replace-pattern', '', ''))");
  dialog = the_dialog (window);
  type_text (window, dialog, "pattern-text", "s=Sigmoid(x) Mul(x,s)");
  g_assert_cmpuint (inspect_uint (dialog, "n-matches"), ==, 1);
  g_assert_cmpuint (inspect_uint (canvas_of (window), "n-found-shown"), >=, 1);
  gtk_widget_activate_action (GTK_WIDGET (dialog), "window.close", NULL);
  harness_settle (window);
  g_assert_null (the_dialog (window));
  g_assert_cmpuint (inspect_uint (canvas_of (window), "n-found-shown"), ==, 0);
  g_assert_cmpuint (count_op (harness_shown_graph (window), "onnx::Sigmoid"), ==, 1);
  harness_window_close (window);
}

/* Many matches listed (every Add of transformer24) leave Replace With in
 * view, and a disabled Replace says what it waits for. */
static void
test_many_matches_layout (void)
{
  GraftWindow *window = harness_window_new ();
  g_autofree char *path = transformer_fixture ("GRAFT_PATTERNS_TRANSFORMER");
  GraftPatternDialog *dialog;
  GtkWidget *op_type, *hint;
  graphene_rect_t bounds;

  harness_open (window, path);
  harness_activate (window, "win.edit-operation(('replace-pattern', '', ''))");
  dialog = the_dialog (window);
  type_text (window, dialog, "pattern-text", "Add(*,*)");
  harness_screenshot (window, "pattern-dialog-many-matches");
  g_assert_cmpuint (inspect_uint (dialog, "n-matches"), >, 50);
  g_assert_false (can_apply (dialog));
  hint = harness_get_name (GTK_WIDGET (dialog), "op-hint");
  g_assert_true (gtk_widget_get_visible (hint));
  g_test_message ("%s", gtk_label_get_text (GTK_LABEL (hint)));
  g_assert_nonnull (strstr (gtk_label_get_text (GTK_LABEL (hint)), "Replace is off until the op has a type"));
  /* The op type field lies inside the dialog's height, unscrolled. */
  op_type = harness_get_name (GTK_WIDGET (dialog), "op-type");
  g_assert_true (gtk_widget_compute_bounds (op_type, GTK_WIDGET (dialog), &bounds));
  g_test_message ("op type field at y %.0f of %d", bounds.origin.y, gtk_widget_get_height (GTK_WIDGET (dialog)));
  g_assert_cmpfloat (bounds.origin.y + bounds.size.height, <, gtk_widget_get_height (GTK_WIDGET (dialog)));
  gtk_editable_set_text (GTK_EDITABLE (op_type), "FusedAdd");
  harness_settle (window);
  g_assert_true (can_apply (dialog));
  g_assert_null (strstr (gtk_label_get_text (GTK_LABEL (hint)), "Replace is off"));
  /* The Subgraph page with no steps yet says so too. */
  gtk_stack_set_visible_child_name (GTK_STACK (harness_find_type (GTK_WIDGET (dialog), GTK_TYPE_STACK)), "subgraph");
  harness_settle (window);
  g_assert_false (can_apply (dialog));
  g_assert_nonnull (strstr (gtk_label_get_text (GTK_LABEL (harness_get_name (GTK_WIDGET (dialog), "apply-hint"))),
                            "replacement steps"));
  harness_screenshot (window, "pattern-dialog-subgraph-hint");
  gtk_window_destroy (GTK_WINDOW (dialog));
  harness_window_close (window);
}

int
main (int argc, char **argv)
{
  harness_init_environment ();
  gtk_test_init (&argc, &argv, NULL);
  g_test_add_func ("/gui/patterns/replace-by-subgraph", test_replace_by_subgraph);
  g_test_add_func ("/gui/patterns/custom-op-from-node", test_custom_op_from_node);
  g_test_add_func ("/gui/patterns/cancel", test_cancel);
  g_test_add_func ("/gui/patterns/many-matches-layout", test_many_matches_layout);
  return g_test_run ();
}
