/* One opened model, as gnome-text-editor's EditorDocument is one opened
 * text: the model, its file (loaded on a worker, saved atomically,
 * watched for changes on disk), the edit history (undo/redo), the unsaved
 * state, and the check (lint, shape inference) of the graph. The window
 * shows a document and listens to it; everything here is GIO only, so it
 * is tested without a display. */
#pragma once

#include <gio/gio.h>

#include "edit/edit-history.h"
#include "formats.h"
#include "lint/target-check.h"

G_BEGIN_DECLS

/* What "changed" reports: the model's graph object was replaced, and the
 * old one freed. */
typedef enum {
  GRAFT_DOCUMENT_CHANGE_EDIT,      /* an edit was applied (description: the edit's) */
  GRAFT_DOCUMENT_CHANGE_UNDO,      /* the last edit was undone (its description) */
  GRAFT_DOCUMENT_CHANGE_REDO,      /* the last undone edit was applied again (its description) */
  GRAFT_DOCUMENT_CHANGE_EDITS,     /* several edits at once: a recipe, a batch (no description) */
  GRAFT_DOCUMENT_CHANGE_RESTORED,  /* an edit failed and put back a copy of the graph (no description) */
} GraftDocumentChange;

#define GRAFT_TYPE_DOCUMENT (graft_document_get_type ())
G_DECLARE_FINAL_TYPE (GraftDocument, graft_document, GRAFT, DOCUMENT, GObject)

GraftDocument *graft_document_new (void);

/* Loads path on a worker thread; the model shown stays meanwhile. Then,
 * on this thread's main context: "load-progress" (fraction) while the
 * reader can tell, and at the end either the new model is shown (as by
 * graft_document_set_model()) and "loaded" (path) emitted, or "load-failed"
 * (path, error). A folder, a pipe or a device fails at once (FALSE). A load
 * under way is dropped; a dropped or cancelled load reports nothing. */
gboolean graft_document_load (GraftDocument *self, const char *path);
void graft_document_cancel_load (GraftDocument *self);
/* TRUE while a load is under way (the "loading" property). */
gboolean graft_document_is_loading (GraftDocument *self);

/* The model shown (NULL before the first one), with a fresh history; path
 * is the file it came from, watched from now on. Notifies "model", "title"
 * and "modified". */
void graft_document_set_model (GraftDocument *self, GraftModel *model, const char *path);
GraftModel *graft_document_get_model (GraftDocument *self);
/* Its edits, for those that replay or list them (a recipe); NULL without
 * a model. Changes made through it directly are not announced: use the
 * functions below, or graft_document_begin_changes(). */
GraftEditHistory *graft_document_get_history (GraftDocument *self);
/* The file name shown in the title; NULL without a model. */
const char *graft_document_get_title (GraftDocument *self);
/* The model's file (where it was opened from or saved to last); NULL for
 * a model without one. */
const char *graft_document_get_path (GraftDocument *self);
/* The folder of the model's file, where a chooser for what is saved
 * beside it starts; NULL without one. */
GFile *graft_document_dup_folder (GraftDocument *self);
/* The file this document wrote last (Save writes it again without
 * asking); NULL until it saved one. */
const char *graft_document_get_saved_path (GraftDocument *self);
/* The file watched for changes on disk: the model's since it was opened
 * or saved; NULL without one, or where files cannot be watched. When it
 * changes, or is deleted, "changed-on-disk" is emitted (deleted: TRUE
 * when it is gone); the document's own save does not count. */
const char *graft_document_get_watched_path (GraftDocument *self);
/* TRUE when edits were made since the model was opened or saved. */
gboolean graft_document_is_modified (GraftDocument *self);

/* Applies edit through the history (undoable) and emits "changed". The
 * copy of the graph the last check made, while the graph has not changed
 * since, serves as the undo snapshot (else one is copied). When the edit
 * changed dims, *to_verify (if not NULL) receives a copy of the
 * edited model, made before "changed" is emitted, for the proof at other
 * sizes; else NULL. A failed edit that put back a copy of the graph emits
 * "changed" (GRAFT_DOCUMENT_CHANGE_RESTORED) before returning FALSE. */
gboolean graft_document_apply_edit (GraftDocument *self, GraftEdit *edit, GraftModel **to_verify, GError **error);
/* Takes edit, applied on a worker to edited (graft_edit_apply_to_copy() of
 * this model), as graft_edit_history_commit() does; "changed" says EDIT,
 * or REDO for the edit a redo would apply. */
gboolean graft_document_commit_edit (GraftDocument *self, GraftEdit *edit, GraftModel *edited, GError **error);
gboolean graft_document_undo (GraftDocument *self, GError **error);
gboolean graft_document_redo (GraftDocument *self, GError **error);
/* Replays a recipe file's edits (graft_recipe_replay_file()), appended to
 * applied; the steps before a failing one stay applied, and one "changed"
 * (EDITS) says so when any was. */
gboolean graft_document_replay_recipe (GraftDocument *self, const char *path, GPtrArray *applied, GError **error);
/* Between these, edits applied with graft_document_apply_edit() are
 * announced once, at the end, as EDITS (as GtkTextBuffer's user actions
 * group its changes). They nest. */
void graft_document_begin_changes (GraftDocument *self);
void graft_document_end_changes (GraftDocument *self);

/* Lints the model and infers its shapes on a worker thread (seconds for a
 * big transformer: the graph stays usable, as analysis only reads it),
 * with input_shapes (name → GraftShape*, copied; NULL or empty: the
 * declared ones) for inputs that declare none, and target's verdicts when
 * one is given. A check under way is dropped. "checked" follows when it
 * lands, for the graph shown then; "checking" is TRUE meanwhile. Edits
 * should wait for it: the copy it makes is the next edit's undo snapshot. */
void graft_document_check (GraftDocument *self, GHashTable *input_shapes, const GraftDeployTarget *target);
void graft_document_cancel_check (GraftDocument *self);
gboolean graft_document_is_checking (GraftDocument *self);
/* The results of the last check that landed (a target report only when a
 * target was given); NULL before one and once the graph changed, as they
 * point into the graph they judged. */
GPtrArray *graft_document_get_diagnostics (GraftDocument *self);
GraftInference *graft_document_get_inference (GraftDocument *self);
GraftTargetReport *graft_document_get_target_report (GraftDocument *self);

/* The format Save writes the model in: its own when Graft writes it (ONNX,
 * a .pt2 program), else NULL. */
const GraftFormat *graft_document_get_save_format (GraftDocument *self);
/* TRUE if path names the model's file (where it was opened from or saved
 * to last). */
gboolean graft_document_is_model_file (GraftDocument *self, const char *path);
/* Writes the model to path in the model's own format, atomically, keeping
 * the mode and owner of a file it replaces (graft_format_save());
 * overwrite_source must be TRUE to replace the model's own file. The
 * written file is the model's file from then on: "path", "title", the
 * unsaved state (cleared) follow, and "saved" is emitted. */
gboolean graft_document_save (GraftDocument *self, const char *path, gboolean overwrite_source, GError **error);

G_END_DECLS
