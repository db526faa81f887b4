/* The Add Node / Insert Node dialog: the ops Graft's runtime has at the
 * model's opset, searchable, each with its inputs, outputs and typed
 * attribute fields (from the ONNX schemas). It does not edit the model:
 * "apply" hands the window an edit operation (insert-node or add-node)
 * and its parameters; the window applies it through the edit history and
 * calls graft_op_picker_show_error() when the edit is refused. */
#pragma once

#include <adwaita.h>
#include "ir/model.h"

G_BEGIN_DECLS

#define GRAFT_TYPE_OP_PICKER (graft_op_picker_get_type ())
G_DECLARE_FINAL_TYPE (GraftOpPicker, graft_op_picker, GRAFT, OP_PICKER, AdwWindow)

/* edge: the value the new node is inserted on (insert-node), or NULL for
 * a free node (add-node). */
GraftOpPicker *graft_op_picker_new (GtkWindow *parent, GraftModel *model, const char *edge);
/* The refusal, shown in the dialog (which stays open). */
void graft_op_picker_show_error (GraftOpPicker *self, const char *message);

G_END_DECLS
