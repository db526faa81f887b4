/* The Simplify… dialog in the real window: on a GPT-2 exported by
 * torch.export's exporter (tests/gui/make-simplify-model.py) it lists
 * every pass with what it removes on its own (the tanh GELUs' 14 nodes)
 * or why it does nothing (Attention needs opset 23); Simplify runs the
 * checked passes, proven by running, shows "Equal." with the node counts
 * and the check, and Undo gives the original back in one step. Only the
 * checked passes run. On a model whose stale annotation makes the no-op
 * pass wrong (make-stale-cast-model.py) the verdict is "Diverged.", naming
 * the pass and the output, and the model is unchanged. Screenshots go to
 * BUILD/tests/gui/screenshots. */
#include <string.h>

#include "gui-fixtures.h"
#include "window-harness.h"
#include "edit/simplify-preview.h"
#include "widgets/simplify-dialog.h"
#include "widget-inspect.h"

/* What the dialog says a pass would do: the subtitle of the row of the
 * pass's check button (named by the pass's id). */
static const char *
pass_preview (GraftSimplifyDialog *dialog, const char *id)
{
  GtkWidget *row = gtk_widget_get_ancestor (harness_get_name (GTK_WIDGET (dialog), id), ADW_TYPE_ACTION_ROW);

  g_assert_nonnull (row);
  return adw_action_row_get_subtitle (ADW_ACTION_ROW (row));
}

static gboolean
previewed (gpointer dialog)
{
  return !inspect_boolean (dialog, "previewing");
}

/* The dialog, once its previews are in (they run on a worker). */
static GraftSimplifyDialog *
open_dialog (GraftWindow *window)
{
  GraftSimplifyDialog *dialog;

  g_assert_true (harness_action_enabled (window, "win.simplify-dialog"));
  harness_activate (window, "win.simplify-dialog");
  dialog = (GraftSimplifyDialog *) harness_find_dialog (window, GRAFT_TYPE_SIMPLIFY_DIALOG);
  g_assert_nonnull (dialog);
  /* Simplify waits for the previews */
  g_assert_true (!inspect_boolean (dialog, "previewing")
                 || !gtk_widget_get_sensitive (harness_get_name (GTK_WIDGET (dialog), "simplify-run")));
  harness_wait_for (previewed, dialog);
  harness_settle (window);
  g_assert_true (gtk_widget_get_sensitive (harness_get_name (GTK_WIDGET (dialog), "simplify-run")));
  return dialog;
}

static void
click_simplify (GraftWindow *window, GraftSimplifyDialog *dialog)
{
  g_signal_emit_by_name (harness_get_name (GTK_WIDGET (dialog), "simplify-run"), "clicked");
  harness_settle (window);
  harness_wait_for (previewed, dialog);
  harness_settle (window);
}

/* The verdict's text, or NULL while none is shown. */
static const char *
verdict (GraftSimplifyDialog *dialog)
{
  GtkWidget *label = harness_get_name (GTK_WIDGET (dialog), "simplify-verdict");

  return gtk_widget_is_visible (label) ? gtk_label_get_text (GTK_LABEL (label)) : NULL;
}

static guint
count_op (GraftGraph *graph, const char *op)
{
  guint n = 0;

  for (guint i = 0; i < graph->nodes->len; i++)
    n += g_str_equal (((GraftNode *) g_ptr_array_index (graph->nodes, i))->op, op);
  return n;
}

static void
test_equal_and_undo (void)
{
  g_autofree char *path = generated_fixture ("make-simplify-model.py", "simplify-gpt2.onnx");
  GraftWindow *window = harness_window_new ();
  GraftSimplifyDialog *dialog;
  guint before, after;
  const char *text;

  harness_open (window, path);
  before = harness_shown_graph (window)->nodes->len;
  dialog = open_dialog (window);
  g_assert_cmpstr (pass_preview (dialog, "fuse-gelu"), ==, "removes 14 nodes on its own");
  g_assert_nonnull (strstr (pass_preview (dialog, "fuse-attention"),
                            "opset 20 has no Attention (opset 23 has)"));
  harness_screenshot (window, "simplify-dialog");

  click_simplify (window, dialog);
  text = verdict (dialog);
  g_assert_nonnull (text);
  g_assert_true (g_str_has_prefix (text, "Equal."));
  g_assert_nonnull (strstr (text, "checked: the outputs equal the original's within rtol 1e-05"));
  after = harness_shown_graph (window)->nodes->len;
  g_assert_cmpuint (after, <, before - 14);
  g_assert_cmpuint (count_op (harness_shown_graph (window), "onnx::Gelu"), ==, 2);
  g_assert_cmpuint (count_op (harness_shown_graph (window), "onnx::Tanh"), ==, 0);
  /* the previews follow the simplified model: nothing left for the GELU pass */
  g_assert_cmpstr (pass_preview (dialog, "fuse-gelu"), ==,
                   "nothing on its own (maybe after the others)");
  harness_screenshot (window, "simplify-dialog-equal");

  gtk_window_destroy (GTK_WINDOW (dialog));
  harness_settle (window);
  harness_activate (window, "win.undo");
  g_assert_cmpuint (harness_shown_graph (window)->nodes->len, ==, before);
  g_assert_false (harness_action_enabled (window, "win.undo"));   /* one step */
  g_assert_cmpuint (count_op (harness_shown_graph (window), "onnx::Tanh"), ==, 2);

  /* only the checked passes run, checked at the sizes and tolerances given;
   * a size that is no number runs nothing and says which field */
  dialog = open_dialog (window);
  for (const char *const *id = graft_simplify_pass_ids (); *id != NULL; id++)
    gtk_check_button_set_active (GTK_CHECK_BUTTON (harness_get_name (GTK_WIDGET (dialog), *id)), g_str_equal (*id, "fuse-gelu"));
  gtk_editable_set_text (GTK_EDITABLE (harness_get_name (GTK_WIDGET (dialog), "simplify-sizes")), "4, x");
  click_simplify (window, dialog);
  g_assert_true (g_str_has_prefix (verdict (dialog), "Diverged."));
  g_assert_nonnull (strstr (verdict (dialog), "Sizes: 'x' is not a whole number"));
  g_assert_cmpuint (harness_shown_graph (window)->nodes->len, ==, before);
  gtk_editable_set_text (GTK_EDITABLE (harness_get_name (GTK_WIDGET (dialog), "simplify-sizes")), "4, 6");
  gtk_editable_set_text (GTK_EDITABLE (harness_get_name (GTK_WIDGET (dialog), "simplify-rtol")), "1e-4");
  click_simplify (window, dialog);
  text = verdict (dialog);
  g_assert_true (g_str_has_prefix (text, "Equal."));
  g_assert_nonnull (strstr (text, "within rtol 0.0001"));
  /* this GPT-2 export has fixed shapes: the check says the sizes do not apply */
  g_assert_nonnull (strstr (text, "the sizes given do not apply"));
  harness_screenshot (window, "simplify-dialog-sizes");
  g_assert_cmpuint (harness_shown_graph (window)->nodes->len, ==, before - 14);
  harness_window_close (window);
}

static void
test_diverged (void)
{
  g_autofree char *path = generated_fixture ("make-stale-cast-model.py", "simplify-stale-cast.onnx");
  GraftWindow *window = harness_window_new ();
  GraftSimplifyDialog *dialog;
  guint before;
  const char *text;

  harness_open (window, path);
  before = harness_shown_graph (window)->nodes->len;
  dialog = open_dialog (window);
  click_simplify (window, dialog);
  text = verdict (dialog);
  g_assert_nonnull (text);
  g_assert_true (g_str_has_prefix (text, "Diverged."));
  g_assert_nonnull (strstr (text, "pass 'eliminate-no-ops'"));
  g_assert_nonnull (strstr (text, "output 'z'"));
  g_assert_nonnull (strstr (text, "The model is unchanged."));
  g_assert_cmpuint (harness_shown_graph (window)->nodes->len, ==, before);
  g_assert_false (harness_action_enabled (window, "win.undo"));
  harness_screenshot (window, "simplify-dialog-diverged");
  harness_window_close (window);
}

int
main (int argc, char **argv)
{
  harness_init_environment ();
  gtk_test_init (&argc, &argv, NULL);
  g_test_add_func ("/gui/simplify/equal-and-undo", test_equal_and_undo);
  g_test_add_func ("/gui/simplify/diverged", test_diverged);
  return g_test_run ();
}
