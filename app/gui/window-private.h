/* The window's parts share its instance struct: window.c (life cycle,
 * showing what the document loaded, selection), window-files.c (open,
 * recent, drop, export, the reload offer), window-analysis.c (the check's
 * marks, the Run pane) and window-edits.c (edits, saving). The model, its
 * file, its history and its check are the document's (document.h): the
 * parts ask it and follow its signals. */
#pragma once

#include "window.h"
#include "window-simplify.h"
#include "view-place.h"
#include "document.h"
#include "tensor-saver.h"

#include "edit/edit-history.h"
#include "widgets/breadcrumbs.h"
#include "widgets/diagnostics-panel.h"
#include "widgets/run-pane.h"
#include "widgets/find-panel.h"
#include "widgets/graph-canvas.h"
#include "widgets/node-sidebar.h"
#include "analysis/cost.h"
#include "lint/target-check.h"

G_BEGIN_DECLS

struct _GraftWindow
{
  AdwApplicationWindow parent_instance;

  /* Template widgets (owned by the template, disposed with it) */
  AdwToastOverlay *toast_overlay;
  AdwSplitButton *open_button;
  AdwWindowTitle *window_title;
  GtkStack *main_stack;
  AdwStatusPage *error_page;
  GtkSpinner *loading_spinner;
  GtkLabel *loading_label;
  GtkProgressBar *loading_progress;
  AdwFlap *flap;                    /* the sidebar beside the graph, or over it when narrow */
  GtkWidget *sidebar_handle;        /* the flap's separator, dragged to resize the sidebar */
  int sidebar_drag_width;           /* the sidebar's width when the drag began */
  double sidebar_drag_x;            /* where it began, in window coordinates */
  GtkRevealer *find_revealer;
  GraftFindPanel *find_panel;
  GraftBreadcrumbs *breadcrumbs;
  GraftGraphCanvas *canvas;
  GtkWidget *layout_status;
  GtkWidget *no_graph_page;
  GtkProgressBar *layout_progress;
  GraftNodeSidebar *sidebar;
  GtkRevealer *diagnostics_revealer;
  GraftDiagnosticsPanel *diagnostics_panel;
  GtkLabel *diagnostics_count;
  GtkWidget *diagnostics_button;
  GtkPaned *run_paned;
  GraftRunPane *run_pane;
  GtkDropDown *target_dropdown;     /* "No Target", then graft_deploy_targets() in order */
  GtkWidget *target_bar;            /* the target's summary under the header, while one is chosen */
  GtkLabel *target_summary;
  GtkWidget *cost_bar;              /* the cost overlay's metric and biggest groups, while it is on */
  GtkDropDown *cost_metric_dropdown;  /* graft_cost_metrics() in order */
  GtkLabel *cost_summary;
  GtkWidget *target_fix_button;     /* win.fix-for-target, while the target rejects nodes */

  /* Owned references */
  GSettings *settings;
  GMenu *recent_menu;
  GraftDocument *document;          /* the model shown, its file and edit history: the window follows it */
  GraftTensorSaver *tensor_saver;   /* the sidebar's Save as .npy */
  GPtrArray *diagnostics;           /* of the graph shown now (window-analysis.c) */
  GraftInference *inference;        /* its inferred shapes, from the same check; NULL until it lands */
  GCancellable *verify_cancellable; /* while an edit is proved at other sizes */
  GCancellable *edit_cancellable;   /* while a slow edit is applied on a worker (window-edits.c) */
  char *direction;                  /* behind the direction action */
  char **expanded_before_edit;      /* group paths to expand again once the edited graph shows */
  GraftViewPlace *place_before_edit; /* the spot shown again once the edited graph is laid out */
  gboolean sidebar_frozen;   /* while an edit swaps the graph: the new one fills the sidebar once */
  GHashTable *kept_nodes;           /* names of the nodes Debug → Reduce or a float16 search kept, marked
                                     * until the graph changes (window-debug.c) */
  const char *kept_badge;           /* "kept", "float32" */
  GCancellable *float16_cancellable;  /* while the float16 search runs (window-debug.c) */

  /* Borrowed references */
  GtkRecentManager *recent_manager; /* the default manager */
  GraftTargetReport *target_report; /* the deployment target's verdicts shown, the document's last check's, or NULL */
  AdwToast *shape_toast;            /* "Run with New Shape": a weak pointer */
  AdwToast *reload_toast;           /* "changed on disk — Reload": a weak pointer */
  AdwToast *history_toast;          /* "Undone: …" / "Redone: …": a weak pointer */
  AdwToast *edit_toast;             /* "… — applying…" with Cancel: a weak pointer */
  AdwToast *cancelled_toast;        /* "Edit cancelled…": a weak pointer, dismissed by the next edit */
  GtkWidget *drop_zones;            /* over the canvas while a file is dragged over a shown model */
  GtkWidget *compare_zone;          /* its "Compare with" half */
  GtkWidget *compare_zone_label;
  AdwToast *float16_toast;          /* "Searching which nodes must stay float32…" with Cancel: a weak pointer */

  /* State */
  guint loading_pulse_id;
  const GraftDeployTarget *deploy_target;  /* chosen in the header (win.deploy-target); NULL: none */
  /* Properties behind the stateful actions */
  gboolean show_names;
  gboolean show_attributes;
  gboolean show_shapes;
  gboolean show_module_attributes;
  gboolean find_visible;
  gboolean sidebar_visible;
  gboolean diagnostics_visible;
  gboolean run_visible;
  gboolean show_timings;
  gboolean show_cost;                /* nodes coloured by cost (analysis/cost.h) */
  GraftCostMetric cost_metric;      /* ... by this metric (the cost-metric property) */
  gboolean wheel_zooms;             /* the wheel zooms instead of scrolling; Ctrl+wheel always zooms */
  gboolean close_confirmed;
  gboolean close_after_save;
  gboolean discard_confirmed;       /* the user agreed to open over unsaved changes */
};

/* window.c */
void graft_window_open_path (GraftWindow *self, const char *path);
gboolean graft_window_canvas_is_busy (GraftWindow *self);
/* Every Find match highlighted on the canvas while Find is open (none
 * while it is closed). */
void graft_window_update_found (GraftWindow *self);
/* The sidebar shows the selected node or value, or the model. */
void graft_window_update_sidebar (GraftWindow *self);

/* window-files.c */
/* Starts a Save/Export chooser in the folder of the model shown (not the
 * folder Graft was launched from). */
void graft_window_chooser_start_beside_model (GraftWindow *self, GtkFileChooser *chooser);
void graft_window_class_add_file_actions (GtkWidgetClass *widget_class);
void graft_window_init_files (GraftWindow *self);

void graft_window_show_graph (GraftWindow *self, GraftGraph *graph);
void graft_window_update_action_states (GraftWindow *self);

/* window-analysis.c: the check (lint and shape inference, on a worker
 * thread while the graph is shown and usable) after loading and after
 * edits, canvas marks, the Run pane. */
void graft_window_class_add_analysis_actions (GtkWidgetClass *widget_class);
/* Cancels a check under way and has the document check its graph, with
 * the Run pane's input shapes and the deployment target; the results are
 * shown when they land. */
void graft_window_check_model (GraftWindow *self);
void graft_window_set_diagnostics (GraftWindow *self, GPtrArray *diagnostics);
/* The shapes the canvas, the sidebar and Find show beside the declared
 * ones (NULL: none yet). */
void graft_window_set_inference (GraftWindow *self, GraftInference *inference);
void graft_window_refresh_marks (GraftWindow *self);
void graft_window_init_analysis (GraftWindow *self);
/* Shows or hides the Run pane (the run-visible property's setter). */
void graft_window_set_run_visible (GraftWindow *self, gboolean visible);

/* window-edits.c: undoable edits, the unsaved-changes title, Save, Save
 * As and the question on closing. */
void graft_window_class_add_edit_actions (GtkWidgetClass *widget_class);
/* Follows the document's changes: the new graph shown, the title. */
void graft_window_init_edits (GraftWindow *self);
/* The document shows another model: nothing of the last one's edits goes on. */
void graft_window_edits_reset (GraftWindow *self);
void graft_window_update_title (GraftWindow *self);
/* FALSE if opening path must wait for the user's answer (unsaved changes). */
gboolean graft_window_edits_confirm_open (GraftWindow *self, const char *path);
/* TRUE if closing must wait for the user's answer. */
gboolean graft_window_edits_close_request (GraftWindow *self);
/* Applies edit through the history (undoable), then shows and checks the
 * changed model; a failure is shown in a dialog. An edit that repairs and
 * re-infers the whole graph (graft_edit_runs_long()) runs on a worker; one
 * naming a "symbol" offers Run with New Shape once proven. */
void graft_window_apply_edit (GraftWindow *self, GraftEdit *edit);
/* Shows the place remembered before an edit, undo or redo once the edited
 * graph is laid out (window-edits.c). */
void graft_window_edits_restore_place (GraftWindow *self);
/* Drops an edit still being applied on a worker: the window closes. */
void graft_window_edits_dispose (GraftWindow *self);
void graft_window_show_edit_error (GraftWindow *self, const char *heading, const GError *error);

/* window-surgery.c: win.edit-operation (every edit of the operation
 * table by its id, target and argument), the canvas's context menus built
 * from the table, Delete, the entry dialogs, recipes (Save Edits As…,
 * Apply Recipe…). */
void graft_window_class_add_surgery_actions (GtkWidgetClass *widget_class);
void graft_window_init_surgery (GraftWindow *self);
/* Applies operation id (params: floating or owned, consumed) to the graph
 * the canvas shows; FALSE with the refusal (or without error when edits
 * must wait). */
gboolean graft_window_try_operation (GraftWindow *self, const char *id, GVariant *params, GError **error);

/* window-patterns.c: the Replace Pattern dialog, which replace-pattern's
 * row names (win.edit-operation: Edit → Replace Pattern…, and a node's
 * context menu). Opens it over the graph shown, the pattern starting from
 * node (NULL: empty). */
void graft_window_open_pattern_dialog (GraftWindow *self, const char *node);
/* window-simplify.c (window-simplify.h): Simplify… (win.simplify-dialog). */

/* window-debug.c: Debug → Reduce…, the Run pane's Reduce to Here, and
 * Convert to Float16 Keeping Accuracy…. */
void graft_window_class_add_debug_actions (GtkWidgetClass *widget_class);
void graft_window_init_debug (GraftWindow *self);
/* Marks the nodes the last reduction or float16 search kept (called by
 * refresh_marks); forgotten when the graph changes. */
void graft_window_mark_kept (GraftWindow *self);
void graft_window_forget_kept (GraftWindow *self);
/* Stops a float16 search under way (the window closes). */
void graft_window_cancel_float16 (GraftWindow *self);

G_END_DECLS
