/* Edit → Simplify… in the window: the dialog (widgets/simplify-dialog.c)
 * lists the passes with a preview of each; its "simplify" runs the
 * "simplify" operation with the checked passes through the window's edit
 * history (one undo step, recorded in the session's recipe), proven by
 * running the original and the result, and the dialog shows the verdict. */
#include "window-simplify.h"

#include "edit/edit-operation.h"
#include "widgets/simplify-dialog.h"

#include <string.h>

/* The notes worth showing: the node counts, what the opset left out, the check. */
static char *
verdict_from_notes (GPtrArray *notes)
{
  g_autoptr(GString) text = g_string_new (NULL);

  for (guint i = 0; i < notes->len; i++)
    {
      const char *note = g_ptr_array_index (notes, i);
      if (g_str_has_prefix (note, "nodes by pass: "))
        continue;
      g_string_append_printf (text, "%s%s", text->len ? "\n" : "", note);
    }
  return g_string_free (g_steal_pointer (&text), FALSE);
}

static void
on_simplify (GraftSimplifyDialog *dialog, char **passes, GraftWindow *self)
{
  GraftModel *model = graft_document_get_model (graft_window_get_document (self));
  g_autoptr(GError) error = NULL;
  g_autoptr(GArray) sizes = NULL;
  double rtol = 1e-5, atol = 1e-5;

  graft_simplify_dialog_get_check (dialog, &sizes, &rtol, &atol, NULL);   /* checked before "simplify" */
  GVariant *params = graft_edit_params_new (
    "passes", g_variant_new_strv ((const char *const *) passes, -1), "verify", g_variant_new_boolean (TRUE),
    "rtol", g_variant_new_double (rtol), "atol", g_variant_new_double (atol),
    "sizes", sizes ? g_variant_new_fixed_array (G_VARIANT_TYPE_INT64, sizes->data, sizes->len, sizeof (gint64)) : NULL,
    NULL);
  g_autoptr(GraftEdit) edit = graft_edit_new_operation ("simplify", g_variant_ref_sink (params), &error);

  g_variant_unref (params);
  if (edit != NULL && graft_window_try_edit (self, edit, &error))
    {
      g_autofree char *text = verdict_from_notes (graft_edit_get_notes (edit));
      g_autofree char *undoable = g_strdup_printf ("%s\nUndo (Ctrl+Z) gives the original back.", text);
      graft_simplify_dialog_show_verdict (dialog, TRUE, undoable, model);
      return;
    }
  {
    g_autofree char *text = g_strdup_printf ("%s\nThe model is unchanged.",
                                             error ? error->message : "the model cannot be edited now");
    graft_simplify_dialog_show_verdict (dialog, FALSE, text, model);
  }
}

static void
simplify_dialog_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindow *self = GRAFT_WINDOW (widget);
  GraftModel *model = graft_document_get_model (graft_window_get_document (self));
  GraftSimplifyDialog *dialog;

  if (model == NULL || !graft_window_edits_allowed (self))
    return;
  if (graft_model_get_format (model) != GRAFT_MODEL_FORMAT_ONNX)
    {
      graft_window_show_toast (self, "Simplify works on ONNX models: export this one first");
      return;
    }
  dialog = graft_simplify_dialog_new (GTK_WINDOW (self), model);
  g_signal_connect_object (dialog, "simplify", G_CALLBACK (on_simplify), self, 0);
  gtk_window_present (GTK_WINDOW (dialog));
}

void
graft_window_class_add_simplify_actions (GtkWidgetClass *widget_class)
{
  gtk_widget_class_install_action (widget_class, "win.simplify-dialog", NULL, simplify_dialog_action);
}
