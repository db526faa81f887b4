/* A window comparing two models side by side: both graphs on canvases
 * whose selections follow each other through the alignment
 * (model/compare), the differences marked on both (only on this side:
 * red, changed: amber, explained difference such as a flattened If or a
 * baked constant: blue) with a legend, and a Differences list that
 * selects both sides of the difference clicked. */
#pragma once

#include <gtk/gtk.h>
#include "compare/alignment.h"
#include "compare/numeric-diff.h"
#include "compare/structural-diff.h"
#include "compare/target-diff.h"

G_BEGIN_DECLS

#define GRAFT_TYPE_COMPARE_WINDOW (graft_compare_window_get_type ())
G_DECLARE_FINAL_TYPE (GraftCompareWindow, graft_compare_window, GRAFT, COMPARE_WINDOW, GtkApplicationWindow)

/* Aligns a with b (fails only for a model without a graph). */
GraftCompareWindow *graft_compare_window_new (GtkApplication *app, GraftModel *a, GraftModel *b, GError **error);

/* Loads both files (in a worker thread) and presents their comparison;
 * a load that fails is shown in a message dialog on parent (may be NULL). */
void graft_compare_window_open_paths (GtkApplication *app, GtkWindow *parent, const char *path_a, const char *path_b);
/* The same with a model already open (the window's, edits included; a
 * copy is compared) as side model_side (0: A, 1: B) and the file at path
 * as the other. */
void graft_compare_window_open_with (GtkApplication *app, GtkWindow *parent, GraftModel *model, guint model_side,
                                     const char *path);

/* The window shows the structural comparison's summary in the label named
 * "summary" (graft_structural_diff_new()'s, as graft-cli diff prints it). */

/* compare.set-targets(("ort-nnapi", "openvino")) checks A against the
 * first deployment target and B against the second ("": none; one alone
 * serves both sides), as the pickers beside the titles do: each side's
 * summary under its title (labels "target-summary-a", "-b", shown while
 * a target is chosen), its partitions tinted, the nodes decided
 * differently in the list (filter "Targets Differ"). */

/* compare.run-both("x=1x3x224x224 batch=2") runs both models on the same
 * inputs (files set by compare.set-input-file(("x", PATH)), else random
 * data of those shapes), compares them with the rtol/atol fields'
 * tolerances, shows each compared value's max rel error as heat on both
 * canvases and marks the values that differ; the label "run-status" says
 * the verdict ("At x: 2×4 the outputs agree — 5 values compared, 0
 * divergent"), and the property "running" whether one is running (or a
 * side loading).
 * compare.link-views (a boolean property, Ctrl+L) links pan and zoom;
 * compare.replace-side((SIDE, PATH)) is what dropping a file on a side does. */

G_END_DECLS
