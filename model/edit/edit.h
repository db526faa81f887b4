/* Graph rewrites as undoable operations.
 *
 * A GraftEdit names what it changes (inputs, nodes and values by name),
 * so the same object can be applied, undone and applied again (redo).
 * graft_edit_apply() keeps a snapshot of the main graph taken before the
 * change and graft_edit_undo() puts it back. Both replace the graph object
 * the model holds: callers (the canvas) must re-read
 * graft_model_get_graph() and drop node/value pointers afterwards.
 * A failing apply leaves the model as it was.
 */
#pragma once

#include <glib-object.h>
#include "ir/model.h"
#include "analysis/dim-check.h"

G_BEGIN_DECLS

#define GRAFT_EDIT_ERROR (graft_edit_error_quark ())
GQuark graft_edit_error_quark (void);

typedef enum {
  GRAFT_EDIT_ERROR_NOT_FOUND,   /* no input/node/value of that name */
  GRAFT_EDIT_ERROR_INVALID,     /* the request does not make sense for this graph */
  GRAFT_EDIT_ERROR_BLOCKED,     /* a node cannot be rewritten safely: the message names it */
  GRAFT_EDIT_ERROR_STATE,       /* apply twice, undo before apply */
} GraftEditError;

#define GRAFT_TYPE_EDIT (graft_edit_get_type ())
G_DECLARE_FINAL_TYPE (GraftEdit, graft_edit, GRAFT, EDIT, GObject)

/* input:axis becomes the symbol; shape constants that froze the traced
 * value are repaired (Reshape → -1 where that is exactly right, otherwise
 * Shape→Gather→(Mul)→Concat of the input's real dim; Range limits from
 * Shape→Gather); value_info and outputs are re-inferred. Where a merged
 * dim could be split two ways, apply runs the result at other sizes
 * (analysis/dim-check.h) and reads the blamed splits the other way. Apply
 * does not prove the result: call graft_edit_verify(). */
GraftEdit *graft_edit_new_make_dim_dynamic (const char *input, int axis, const char *symbol);

/* Replaces the main graph's calls of local functions whose bodies take
 * shapes by those bodies, named "CALL/BODY_NODE" (inline-functions.c), as
 * make-dynamic does first; notes says which. The number replaced, or
 * G_MAXUINT with error. */
guint graft_edit_inline_shape_functions (GraftModel *model, GPtrArray *notes, GError **error);
/* Keeps only what computes outputs from inputs (value names). */
GraftEdit *graft_edit_new_extract (const char *const *inputs, const char *const *outputs);

/* A name for dim axis of input when the user gives none: "batch" for dim
 * 0; for an image (rank 4 or 5: NCHW, NCDHW) "channels", "depth",
 * "height", "width"; "sequence" for dim 1 of anything else; "dimN" after. */
char *graft_edit_suggest_dim_symbol (const GraftValue *input, int axis);

/* Any operation of the table by its id ("rename-node", "fold-constants",
 * "delete-node"...; the constructors above are shorthands for two) with
 * its parameters (a{sv}, floating references are sunk); NULL with an
 * error for an unknown id or missing parameters. */
GraftEdit *graft_edit_new_operation (const char *id, GVariant *params, GError **error);

/* Whether the edit repairs and re-infers the whole graph (make-dim-dynamic,
 * set-input-shape): slow enough on a big model for a worker thread. */
gboolean graft_edit_runs_long (GraftEdit *self);
/* The table id and the parameters as given (names), for every kind. */
const char *graft_edit_get_operation_id (GraftEdit *self);
GVariant *graft_edit_get_params (GraftEdit *self);
/* The parameters with every node and value replaced by its address
 * (edit/address.h) as it was just before the last apply, and the subgraph
 * path as "graph_path": what a recipe saves. NULL before the first apply. */
GVariant *graft_edit_get_recorded_params (GraftEdit *self);
/* "Make x:0 dynamic (batch)", for the Undo menu item. */
const char *graft_edit_get_description (GraftEdit *self);
gboolean graft_edit_is_applied (GraftEdit *self);

gboolean graft_edit_apply (GraftEdit *self, GraftModel *model, GError **error);
/* graft_edit_apply() with its undo snapshot made beforehand: snapshot is a
 * graft_graph_copy() of the model's main graph exactly as it is now (a
 * worker can make it while the graph is idle, sparing the UI thread the
 * copy). It is taken over in every case; NULL copies here. */
gboolean graft_edit_apply_with_snapshot (GraftEdit *self, GraftModel *model, GraftGraph *snapshot, GError **error);
gboolean graft_edit_undo (GraftEdit *self, GraftModel *model, GError **error);

/* graft_edit_apply() on a copy of model (graft_model_copy()), which is
 * returned: for an edit too slow to hold a UI thread (make-dynamic repairs
 * and re-infers a whole transformer), run on a worker thread while nothing
 * changes model, then handed to graft_edit_history_commit(). The copy
 * shares model's tensors. Only an edit of the main graph can move back
 * into model: one that edits a function body fails here. */
GraftModel *graft_edit_apply_to_copy (GraftEdit *self, GraftModel *model, GError **error);

/* What the last apply did beyond the obvious, one line each
 * ("Reshape '/Reshape': shape [2, 512] → [-1, 512]"). char*, borrowed. */
GPtrArray *graft_edit_get_notes (GraftEdit *self);

/* The input dims the last apply changed (GraftDimCheckDim, borrowed):
 * for make-dynamic its dim, marked as a batch when its name says so; for
 * set-shape each dim whose size changed. Empty for other edits. */
GArray *graft_edit_get_changed_dims (GraftEdit *self);

/* Proves the applied edit at other sizes of the dims it changed
 * (analysis/dim-check.h) on a copy of model: a repair is only trusted
 * once this passes. NULL with error when the edit is not applied. */
GraftDimCheck *graft_edit_verify (GraftEdit *self, GraftModel *model, GError **error);

G_END_DECLS
