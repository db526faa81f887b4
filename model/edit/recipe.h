/* Recipes: an edit session as a small JSON file that replays on another
 * export of the same network.
 *
 *   { "graft-recipe": 1,
 *     "steps": [ { "edit": "bypass-node", "node": { "name": "/relu/Relu", "op": "onnx::Relu",
 *                  "group": "relu", "index": 0, "op_index": 3, "op_count": 17 } }, … ] }
 *
 * Each step names an operation of edit/edit-operation.h ("edit") and has
 * its parameters beside;
 * nodes and values are saved as addresses (edit/address.h) so that a
 * replay finds them when names changed. A hand-written step may name them
 * with plain strings. A step whose target cannot be found fails, naming
 * the step and the target: a replay never makes a silently different
 * model. */
#pragma once

#include "edit/edit-history.h"

G_BEGIN_DECLS

/* The applied edits (GraftEdit*, in order) as a recipe; NULL with an error
 * if one was never applied. */
char *graft_recipe_to_json (GPtrArray *edits, GError **error);
gboolean graft_recipe_save (GPtrArray *edits, const char *path, GError **error);

/* Replays the steps of a recipe (JSON text) on history's model, each
 * through history (undoable one by one). applied (may be NULL) receives
 * the edits applied. On failure the steps before the failing one stay
 * applied and the error names the step. */
gboolean graft_recipe_replay (const char *json, gsize length, GraftEditHistory *history, GPtrArray *applied,
                              GError **error);
gboolean graft_recipe_replay_file (const char *path, GraftEditHistory *history, GPtrArray *applied, GError **error);

G_END_DECLS
