/* The window's parts share its instance struct: window.c (life cycle,
 * loading, selection), window-files.c (open, recent, drop, export) and
 * window-test-plan.c (screenshots, test hooks). */
#pragma once

#include "window.h"

#include "widgets/breadcrumbs.h"
#include "widgets/find-panel.h"
#include "widgets/graph-canvas.h"
#include "widgets/node-sidebar.h"

G_BEGIN_DECLS

struct _GraftWindow
{
  AdwApplicationWindow parent_instance;

  /* template */
  AdwToastOverlay *toast_overlay;
  AdwSplitButton *open_button;
  AdwWindowTitle *window_title;
  GtkStack *main_stack;
  AdwStatusPage *error_page;
  GtkSpinner *loading_spinner;
  GtkLabel *loading_label;
  GtkProgressBar *loading_progress;
  GtkPaned *paned;
  GtkRevealer *find_revealer;
  GraftFindPanel *find_panel;
  GraftBreadcrumbs *breadcrumbs;
  GraftGraphCanvas *canvas;
  GtkWidget *layout_status;
  GtkWidget *no_graph_page;
  GtkProgressBar *layout_progress;
  GraftNodeSidebar *sidebar;

  GSettings *settings;
  GtkRecentManager *recent_manager;
  GMenu *recent_menu;

  GraftModel *model;
  GCancellable *load_cancellable;
  guint loading_pulse_id;
  char *loading_path;

  /* Properties behind the stateful actions */
  gboolean show_names;
  gboolean show_attributes;
  gboolean show_shapes;
  char *direction;
  gboolean find_visible;
  gboolean sidebar_visible;

  /* Test plan (--find, --select-node, --action, --screenshot) */
  GStrv test_actions;
  char *test_screenshot_path;
  gboolean test_plan_active;
  guint test_settle_frames;
  guint test_timeout_id;
  guint test_tick_id;
};

/* window.c */
void graft_window_show_toast (GraftWindow *self, const char *text);
void graft_window_open_path (GraftWindow *self, const char *path);
gboolean graft_window_canvas_is_busy (GraftWindow *self);

/* window-files.c */
void graft_window_class_add_file_actions (GtkWidgetClass *widget_class);
void graft_window_init_files (GraftWindow *self);

/* window-test-plan.c */
void graft_window_class_add_test_actions (GtkWidgetClass *widget_class);
void graft_window_test_plan_continue (GraftWindow *self);

G_END_DECLS
