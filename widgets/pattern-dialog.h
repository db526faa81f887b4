/* The Replace Pattern dialog: a pattern in replace-pattern's syntax, what
 * replaces each match (a custom-domain op with its attributes, or a
 * replacement subgraph in the same syntax), and a live preview as the
 * text changes: the number of matches, the parser's error inline, and
 * the candidates that are skipped with the reason. It does not edit the
 * model: "apply" hands the window the replace-pattern operation and its
 * parameters (what a recipe records), "highlight" the matched nodes of
 * the graph being searched, "show-node" a node whose row was activated. */
#pragma once

#include <adwaita.h>
#include "ir/model.h"

G_BEGIN_DECLS

#define GRAFT_TYPE_PATTERN_DIALOG (graft_pattern_dialog_get_type ())
G_DECLARE_FINAL_TYPE (GraftPatternDialog, graft_pattern_dialog, GRAFT, PATTERN_DIALOG, AdwWindow)

/* graph: the graph the edit applies to (the one shown); pattern: the text
 * to start with (may be NULL). */
GraftPatternDialog *graft_pattern_dialog_new (GtkWindow *parent, GraftModel *model, GraftGraph *graph,
                                              const char *pattern);
/* The refusal, shown in the dialog (which stays open). */
void graft_pattern_dialog_show_error (GraftPatternDialog *self, const char *message);
/* After the model's graph was replaced (a refused edit may put back a
 * copy): the preview searches graph from now on. */
void graft_pattern_dialog_set_graph (GraftPatternDialog *self, GraftGraph *graph);
/* Every node of every match of the preview shown now (the "highlight"). */
GPtrArray *graft_pattern_dialog_dup_matched_nodes (GraftPatternDialog *self);

G_END_DECLS
