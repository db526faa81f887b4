/* The Simplify… dialog: the passes of "simplify" (model/edit/simplify-
 * preview.h), each with a check box and what it removes from the model on
 * its own, or why it does nothing (a fusion the model's opset lacks). It
 * does not edit the model: "simplify" hands the window the checked pass
 * ids; the window runs the edit (checked by running, one undo step) and
 * shows the verdict here: equal, with the node counts and the sizes
 * checked, or diverged, with the pass and the first value that differs. */
#pragma once

#include <adwaita.h>
#include "ir/model.h"

G_BEGIN_DECLS

#define GRAFT_TYPE_SIMPLIFY_DIALOG (graft_simplify_dialog_get_type ())
G_DECLARE_FINAL_TYPE (GraftSimplifyDialog, graft_simplify_dialog, GRAFT, SIMPLIFY_DIALOG, AdwWindow)

GraftSimplifyDialog *graft_simplify_dialog_new (GtkWindow *parent, GraftModel *model);
/* The result of a run: equal (TRUE: the edit was applied) or diverged,
 * in words; the previews are redone on model (the model shown now), on a
 * worker. */
void graft_simplify_dialog_show_verdict (GraftSimplifyDialog *self, gboolean equal, const char *text,
                                         GraftModel *model);
/* What the check is asked to do: the sizes of symbolic dims (NULL: the
 * default), the tolerances; FALSE with an error naming the field when
 * one does not parse. */
gboolean graft_simplify_dialog_get_check (GraftSimplifyDialog *self, GArray **sizes, double *rtol, double *atol,
                                          GError **error);
/* The ids of the checked passes (NULL-terminated; free with g_strfreev). */
char **graft_simplify_dialog_dup_checked (GraftSimplifyDialog *self);

G_END_DECLS
