/* Debug → Reduce…: Polygraphy's `debug reduce` in the window. The user
 * chooses the failure condition (Graft's runtime fails, NaN/Inf appears,
 * values differ from a reference model or folder of .npy values, a
 * command fails) and where the reduced model goes; the search
 * (model/debug/reduce.h, on a TorchScript or .pt2 model after lowering it
 * to ONNX) runs on a worker thread with its progress shown and Cancel,
 * the reduced model is saved, and "reduced" tells the window what was
 * kept. The dialog never edits the model it was given.
 *
 * Actions (on the dialog): reduce.start, reduce.cancel (stops a search
 * under way, else closes). */
#pragma once

#include <adwaita.h>
#include "debug/reduce.h"

G_BEGIN_DECLS

#define GRAFT_TYPE_REDUCE_DIALOG (graft_reduce_dialog_get_type ())
G_DECLARE_FINAL_TYPE (GraftReduceDialog, graft_reduce_dialog, GRAFT, REDUCE_DIALOG, AdwWindow)

/* model: what to reduce (a reference is kept: give a copy of a model the
 * user may edit meanwhile); inputs: its inputs by name (GraftRtTensor*,
 * references taken), described for the user by inputs_description;
 * output_path: the reduced model's file to start with. */
GraftReduceDialog *graft_reduce_dialog_new (GtkWindow *parent, GraftModel *model, GHashTable *inputs,
                                            const char *inputs_description, const char *output_path);

void graft_reduce_dialog_set_condition (GraftReduceDialog *self, GraftReduceCondition condition);

/* Signal "reduced" (const char *path, GStrv kept): the reduced model was
 * saved at path; kept names the original nodes it holds (of the ONNX
 * form of the model: a TorchScript model's lowered nodes). */

G_END_DECLS
