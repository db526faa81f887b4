/* Drives the real GraftWindow in-process for the GUI tests: a window of a
 * fresh application with the schema's default settings, its actions
 * activated as menus and shortcuts do, each step waited out until the
 * window has settled, what it displays read back from its widget tree,
 * and screenshots written to BUILD/tests/gui/screenshots. */
#pragma once

#include "application.h"
#include "window.h"
#include "ir/graph.h"

G_BEGIN_DECLS

/* Scratch HOME and XDG folders (recent files, caches), and no session bus
 * autolaunched when none is set. Call before gtk_test_init(). */
void harness_init_environment (void);

/* A shown, empty window of the test program's application (registered
 * non-unique), with the settings reset to the schema's defaults (the
 * memory backend keeps them between tests). */
GraftWindow *harness_window_new (void);
/* Destroys the window's dialogs and the window, and checks that the
 * window is finalized (no leaked references). */
void harness_window_close (GraftWindow *window);

/* Iterates the main loop until done (data) holds, failing after 60 s. */
void harness_wait_for (gboolean (*done) (gpointer), gpointer data);
/* Sets how long harness_wait_for() and harness_settle() wait before they
 * fail (0: the default, 60 s). */
void harness_set_wait_seconds (guint seconds);
/* Until the window has drawn a few frames with nothing left to do:
 * loading and checking, layouts, statistics, runs, transitions, dialogs. */
void harness_settle (GraftWindow *window);
/* Opens path as the Open dialog would, then settles. */
void harness_open (GraftWindow *window, const char *path);
/* "win.select-node::conv1": the action with its target, then settles;
 * fails if the window has no such action. */
void harness_activate (GraftWindow *window, const char *detailed_action);

GtkWidget *harness_find_type (GtkWidget *root, GType type);
/* The widget its .ui template calls id. */
GtkWidget *harness_find_id (GtkWidget *root, const char *id);
/* The widget named name (gtk_widget_set_name) under root, or NULL. */
GtkWidget *harness_find_name (GtkWidget *root, const char *name);
/* The widget named name under root; fails the test when there is none. */
GtkWidget *harness_get_name (GtkWidget *root, const char *name);
/* The graph the window's canvas shows. */
GraftGraph *harness_shown_graph (GraftWindow *window);
/* The first node of graph whose op is op ("onnx::Conv"), or NULL. */
GraftNode *harness_find_op (GraftGraph *graph, const char *op);
/* The first open dialog of window that is a `type`, or NULL. */
GtkWindow *harness_find_dialog (GraftWindow *window, GType type);
/* Iterates the main loop for ms milliseconds (a widget's typing pause). */
void harness_wait_ms (guint ms);
/* Runs argv (a checker script), failing the test with `what` and its
 * stderr when it exits non-zero; returns its stdout, stripped. */
char *harness_run_check (const char *const *argv, const char *what);
/* A label whose text contains text (toasts are labels too), or NULL. */
GtkLabel *harness_find_label (GtkWidget *root, const char *text);

/* The visible windows transient for window, in the order GTK lists them. */
GPtrArray *harness_list_dialogs (GraftWindow *window);
/* "heading — body" of an AdwMessageDialog. */
char *harness_describe_dialog (GtkWindow *dialog);

/* The first GtkDropTarget on widget, or NULL. */
GtkDropTarget *harness_find_drop_target (GtkWidget *widget);
/* Emits target's "drop" with the file at path at (x, y), as GTK does when a
 * file manager's drag ends there (GTK cannot synthesize such a drag);
 * returns whether the drop was accepted. */
gboolean harness_drop_file (GtkDropTarget *target, const char *path, double x, double y);

/* TRUE if xdotool is installed; else the test is marked skipped. */
gboolean harness_have_xdotool (void);
/* Runs xdotool (real key and pointer events through the X server) with
 * window's X id in place of "WINDOW", the main loop running meanwhile so
 * the window receives what it sends; fails if xdotool does. */
void harness_xdotool (GtkWindow *window, const char *const *commands);

/* BUILD/tests/gui/screenshots/name.png */
char *harness_screenshot_path (const char *name);
/* Writes the window to name.png and each dialog to name-dialog-N.png,
 * right after a paint. */
void harness_screenshot (GraftWindow *window, const char *name);

/* Whether action_name (detailed: "win.x(target)" for one with a parameter) is
 * enabled for the window's widgets, as a menu item sees it. */
gboolean harness_action_enabled (GraftWindow *window, const char *action_name);

/* What the window displays, as "key" → "value" strings: state, title,
 * subtitle, default-size, window-size, sidebar-title, sidebar-subtitle,
 * sidebar-file, sidebar-bounds and canvas-bounds ("x,y,w,h" or "hidden"),
 * breadcrumbs, selected-node, no-graph, canvas-options, settings-options,
 * recent, find-visible, find-matches, window-title, can-undo, can-redo,
 * diagnostics-count, diagnostics-shown, diagnostics, diagnostics-visible,
 * canvas-marked, canvas-marked-groups, canvas-marked-hidden, run-visible,
 * run-status, run-outputs, error-page, dialogs and dialog-N. */
GHashTable *harness_window_state (GraftWindow *window);

G_END_DECLS
