/* The diagnostics list: the lint results of a model, filtered by rule and
 * severity. Activating a row emits "item-activated" (node, value) like the
 * Find panel; rows of static-input-dim and baked-shape-constant offer
 * "Make Dynamic" through win.edit-operation (make-dim-dynamic). */
#pragma once

#include <gtk/gtk.h>
#include "lint/diagnostics.h"

G_BEGIN_DECLS

#define GRAFT_TYPE_DIAGNOSTICS_PANEL (graft_diagnostics_panel_get_type ())
G_DECLARE_FINAL_TYPE (GraftDiagnosticsPanel, graft_diagnostics_panel, GRAFT, DIAGNOSTICS_PANEL, GtkWidget)

/* GraftDiagnostic* (a reference is taken; NULL clears). Their node and
 * value pointers must stay valid while shown: replace the list whenever
 * the model's graph changes. */
void graft_diagnostics_panel_set_diagnostics (GraftDiagnosticsPanel *self, GPtrArray *diagnostics);

/* rule: a rule id, a prefix ending in '*' ("trace-*"), or NULL/"" for all;
 * min_severity: the least severe level listed. */
void graft_diagnostics_panel_set_filter (GraftDiagnosticsPanel *self, const char *rule, GraftSeverity min_severity);

G_END_DECLS
