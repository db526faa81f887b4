/* The window's analysis (window-analysis.c): the document's check (lint
 * and shape inference, on a worker while the graph is shown and usable)
 * after loading and after edits, its marks on the canvas and its list
 * (Problems), the inferred shapes, the deployment target's verdicts and
 * fixes, the cost overlay, and the Run pane with its timing overlay. Its
 * actions are on the window's class (win.run, win.deploy-target…); its
 * state is a part of its own beside the window, which it reaches through
 * window.h, the window's properties (show-cost, run-visible…) and the
 * document's signals. */
#pragma once

#include "window.h"

G_BEGIN_DECLS

#define GRAFT_TYPE_WINDOW_ANALYSIS (graft_window_analysis_get_type ())
G_DECLARE_FINAL_TYPE (GraftWindowAnalysis, graft_window_analysis, GRAFT, WINDOW_ANALYSIS, GObject)

void graft_window_class_add_analysis_actions (GtkWidgetClass *widget_class);
/* The part for window (which keeps the reference), over the children of
 * its template named diagnostics_*, run_paned, target_*, cost_*. */
GraftWindowAnalysis *graft_window_analysis_new (GraftWindow *window);
/* Cancels a check under way and has the document check its graph, with
 * the Run pane's input shapes and the deployment target; the results are
 * shown when they land. */
void graft_window_analysis_check (GraftWindowAnalysis *self);
/* The graph the check judged is gone (an edit, another file): its
 * problems, inferred shapes and verdicts are no longer shown. */
void graft_window_analysis_clear (GraftWindowAnalysis *self);
/* The canvas's marks again (graft_window_refresh_marks()). */
void graft_window_analysis_refresh_marks (GraftWindowAnalysis *self);
/* "batch=4" (Run with New Shape): the dim set, then a run. */
void graft_window_analysis_run_with_dim (GraftWindowAnalysis *self, const char *setting);

G_END_DECLS
