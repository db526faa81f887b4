/* What the model does and what is wrong with it: the check (lint and shape
 * inference) after loading and after every edit, on a worker thread while
 * the graph is shown (analysis only reads the model, so the canvas, a
 * layout and a run go on meanwhile), its marks on the canvas and its list,
 * the inferred shapes, and the Run pane with its timing overlay. */
#include "window-analysis.h"
#include "lint/target-fixes.h"
#include "target-marks.h"
#include "analysis/cost.h"
#include "lint/lint-rules.h"

#include <stdlib.h>
#include <string.h>

#include "widgets/diagnostics-panel.h"

struct _GraftWindowAnalysis
{
  GObject parent_instance;

  /* Owned references */
  GraftDocument *document;          /* the window's */
  GPtrArray *diagnostics;           /* of the graph shown now */
  GraftInference *inference;        /* its inferred shapes, from the same check; NULL until it lands */

  /* Borrowed references: the window's */
  GraftWindow *window;              /* a weak pointer: the window owns this part */
  GraftGraphCanvas *canvas;
  GraftRunPane *run_pane;
  GraftNodeSidebar *sidebar;
  GraftFindPanel *find_panel;
  /* ... and its template's children, by name */
  GtkRevealer *diagnostics_revealer;
  GraftDiagnosticsPanel *diagnostics_panel;
  GtkLabel *diagnostics_count;
  GtkWidget *diagnostics_button;
  GtkPaned *run_paned;
  GtkDropDown *target_dropdown;     /* "No Target", then graft_deploy_targets() in order */
  GtkWidget *target_bar;            /* the target's summary under the header, while one is chosen */
  GtkLabel *target_summary;
  GtkWidget *cost_bar;              /* the cost overlay's metric and biggest groups, while it is on */
  GtkDropDown *cost_metric_dropdown;  /* graft_cost_metrics() in order */
  GtkLabel *cost_summary;
  GtkWidget *target_fix_button;     /* win.fix-for-target, while the target rejects nodes */
  GraftTargetReport *target_report; /* the deployment target's verdicts shown, the document's last check's, or NULL */

  /* State */
  const GraftDeployTarget *deploy_target;  /* chosen in the header (win.deploy-target); NULL: none */
};

G_DEFINE_FINAL_TYPE (GraftWindowAnalysis, graft_window_analysis, G_TYPE_OBJECT)

enum {
  MARKS_CLEARED,
  N_SIGNALS
};

static guint signals[N_SIGNALS];

/* The class's actions reach the window's part through it. */
#define PART_KEY "graft-window-analysis"

static GraftWindowAnalysis *
part_of (gpointer window)
{
  return g_object_get_data (G_OBJECT (window), PART_KEY);
}

/* The window's properties behind its toggles (win.show-cost…). */
static gboolean
window_flag (GraftWindowAnalysis *self, const char *property)
{
  gboolean value = FALSE;

  g_object_get (self->window, property, &value, NULL);
  return value;
}

static GraftCostMetric
cost_metric (GraftWindowAnalysis *self)
{
  g_autofree char *name = NULL;
  GraftCostMetric metric = GRAFT_COST_FLOPS;

  g_object_get (self->window, "cost-metric", &name, NULL);
  graft_cost_metric_from_name (name, &metric);
  return metric;
}

static void set_diagnostics (GraftWindowAnalysis *self, GPtrArray *diagnostics);
static void set_inference (GraftWindowAnalysis *self, GraftInference *inference);
static void refresh_marks (GraftWindowAnalysis *self);

/* The document's check landed: its marks, inferred shapes and the
 * target's verdicts are shown. */
static void
on_document_checked (GraftWindowAnalysis *self, GraftDocument *document)
{
  set_inference (self, graft_document_get_inference (document));
  self->target_report = graft_document_get_target_report (document);
  set_diagnostics (self, graft_document_get_diagnostics (document));
  graft_window_update_action_states (self->window);
}

/* The window's "checking" says so too. */
static void
on_document_checking (GraftWindowAnalysis *self)
{
  g_object_notify (G_OBJECT (self->window), "checking");
}

void
graft_window_analysis_check (GraftWindowAnalysis *self)
{
  if (graft_document_get_model (self->document) == NULL)
    {
      graft_document_cancel_check (self->document);
      return;
    }
  graft_document_check (self->document, graft_run_pane_get_input_shapes (self->run_pane), self->deploy_target);
  /* The Problems button says a check is under way until its count lands. */
  gtk_label_set_text (self->diagnostics_count, "…");
  gtk_widget_set_tooltip_text (self->diagnostics_button, "Checking the model…");
  gtk_widget_set_visible (self->diagnostics_button, TRUE);
  graft_window_update_action_states (self->window);
}

static void
set_inference (GraftWindowAnalysis *self, GraftInference *inference)
{
  if (inference != NULL)
    graft_inference_ref (inference);
  g_clear_pointer (&self->inference, graft_inference_unref);
  self->inference = inference;
  graft_graph_canvas_set_inference (self->canvas, inference);
  graft_node_sidebar_set_inference (self->sidebar, inference);
  graft_find_panel_set_inference (self->find_panel, inference);
  /* The sidebar shows what it shows now, with the inferred types. Without
   * an inference the model has just changed, and the caller shows the new
   * graph, which fills the sidebar: building it here too would only add
   * to the time the edit holds the UI thread. */
  if (inference != NULL)
    graft_window_update_sidebar (self->window);
}

static const char *
badge_text (const char *rule)
{
  const GraftLintRule *row = graft_lint_rule_lookup (rule);

  return row != NULL ? row->badge : rule;
}

/* The timing overlay: the slowest nodes in error red, then warning, then
 * info colours, each with its time; a node whose time covers a fused
 * pattern (it and the nodes after it, run as one operator) says so. */
static void
mark_timings (GraftWindowAnalysis *self, GHashTable *timings, GHashTable *fused)
{
  GHashTableIter iter;
  gpointer node, seconds;
  double slowest = 0;

  g_hash_table_iter_init (&iter, timings);
  while (g_hash_table_iter_next (&iter, &node, &seconds))
    slowest = MAX (slowest, *(double *) seconds);
  g_hash_table_iter_init (&iter, timings);
  while (g_hash_table_iter_next (&iter, &node, &seconds))
    {
      double share = slowest > 0 ? *(double *) seconds / slowest : 0;
      gboolean fused_pattern = fused != NULL && g_hash_table_contains (fused, node);
      g_autofree char *badge = g_strdup_printf ("%.2f ms%s", *(double *) seconds * 1000,
                                                fused_pattern ? " fused" : "");

      graft_graph_canvas_mark_node (self->canvas, node, share > 0.5 ? 3 : share > 0.1 ? 2 : 1, badge);
    }
}

/* The cost bar: the total by the chosen metric and the groups that hold
 * most of it ("Total 1.82 GFLOPs · biggest groups: layer4 31 %, …"). */
static void
show_cost_summary (GraftWindowAnalysis *self, GraftCostReport *report, const char *note)
{
  g_autoptr(GString) text = g_string_new (note);
  GraftCostMetric metric = cost_metric (self);

  if (report != NULL)
    {
      double total = graft_cost_report_get_total (report, metric);
      g_autofree char *amount = graft_cost_format (metric, total);
      g_autoptr(GPtrArray) biggest = graft_cost_report_biggest_groups (report, metric, 5);
      g_string_append_printf (text, "Total %s", amount);
      /* what a run holds of them: the runtime frees values after their last reader */
      if (metric == GRAFT_COST_ACTIVATION_BYTES)
        {
          g_autofree char *peak = graft_cost_format (metric, report->peak_bytes);
          g_autofree char *pool = graft_cost_format (metric, report->arena_bytes);
          g_string_append_printf (text, " summed, peak %s with values freed at last use, pool %s", peak, pool);
        }
      if (report->n_unknown > 0)
        g_string_append_printf (text, " (%u node%s without inferred shapes not counted fully)", report->n_unknown,
                                report->n_unknown == 1 ? "" : "s");
      for (guint i = 0; total > 0 && i < biggest->len; i++)
        {
          const GraftGroupCost *group = biggest->pdata[i];
          double percent = 100 * graft_group_cost_get (group, metric) / total;
          g_string_append_printf (text, "%s%s %s%.0f %%", i == 0 ? " · biggest groups: " : ", ", group->group->path,
                                  percent < 0.5 ? "<" : "", MAX (percent, 1));
        }
    }
  gtk_label_set_text (self->cost_summary, text->str);
}

/* The cost overlay: every node's cost by the chosen metric
 * (analysis/cost.h) as heat, the costliest in error red, then warning,
 * then info colours with their amount, at the shapes the Run pane would
 * use (symbolic dims at its values, else 1); measured time is the last
 * run's. */
static void
mark_cost (GraftWindowAnalysis *self)
{
  GraftCostMetric metric = cost_metric (self);
  GraftGraph *graph = graft_model_get_graph (graft_document_get_model (self->document));
  g_autoptr(GHashTable) shapes = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, (GDestroyNotify) graft_shape_free);
  GHashTable *given = graft_run_pane_get_input_shapes (self->run_pane);
  GHashTable *timings = graft_run_pane_get_timings (self->run_pane);

  for (guint i = 0; graph != NULL && i < graph->inputs->len; i++)
    {
      GraftValue *input = graph->inputs->pdata[i];
      const GraftShape *declared = given ? g_hash_table_lookup (given, input->name) : NULL;
      if (input->initializer != NULL || input->kind != GRAFT_VALUE_TENSOR)
        continue;
      declared = declared ? declared : &input->shape;
      if (declared->rank < 0)
        continue;
      GraftShape *shape = g_new0 (GraftShape, 1);
      graft_shape_copy (shape, declared);
      for (int d = 0; d < shape->rank; d++)
        if (shape->dims[d].kind != GRAFT_DIM_FIXED)
          shape->dims[d] = graft_dim_fixed (1);
      g_hash_table_insert (shapes, input->name, shape);
    }
  g_autoptr(GraftInference) inference = graph ? graft_shape_inference_run_given (graft_document_get_model (self->document), shapes, NULL) : NULL;
  if (inference == NULL)
    {
      show_cost_summary (self, NULL, "The shapes could not be inferred: no cost to show");
      return;
    }
  g_autoptr(GraftCostReport) report = graft_cost_analyze (graft_document_get_model (self->document), inference);
  if (timings != NULL)
    graft_cost_report_set_timings (report, timings);
  if (metric == GRAFT_COST_SECONDS && timings == NULL)
    {
      show_cost_summary (self, NULL, "Run the model (F5) to measure its nodes' time");
      return;
    }
  double most = 0;
  for (guint i = 0; i < report->nodes->len; i++)
    most = MAX (most, graft_node_cost_get (&g_array_index (report->nodes, GraftNodeCost, i), metric));
  for (guint i = 0; most > 0 && i < report->nodes->len; i++)
    {
      GraftNodeCost *cost = &g_array_index (report->nodes, GraftNodeCost, i);
      double amount = graft_node_cost_get (cost, metric);
      double share = amount / most;
      if (amount <= 0)
        continue;
      graft_graph_canvas_set_node_heat (self->canvas, cost->node, share);
      g_autofree char *badge = graft_cost_format (metric, amount);
      graft_graph_canvas_mark_node (self->canvas, cost->node, share > 0.5 ? 3 : share > 0.1 ? 2 : 1, badge);
    }
  show_cost_summary (self, report, "");
}

static void
update_cost_bar (GraftWindowAnalysis *self)
{
  GraftCostMetric metric = cost_metric (self);

  gtk_widget_set_visible (self->cost_bar, window_flag (self, "show-cost") && graft_document_get_model (self->document) != NULL);
  if (gtk_drop_down_get_selected (self->cost_metric_dropdown) != metric)
    gtk_drop_down_set_selected (self->cost_metric_dropdown, metric);
}

void
graft_window_analysis_refresh_marks (GraftWindowAnalysis *self)
{
  refresh_marks (self);
}

void
graft_window_analysis_clear (GraftWindowAnalysis *self)
{
  set_diagnostics (self, NULL);
  set_inference (self, NULL);
}

static void
refresh_marks (GraftWindowAnalysis *self)
{
  GHashTable *timings = graft_run_pane_get_timings (self->run_pane);
  g_autoptr(GHashTable) levels = g_hash_table_new (NULL, NULL);

  graft_graph_canvas_clear_marks (self->canvas);
  update_cost_bar (self);
  /* under every other mark: what a reduction kept (window-debug.c) */
  g_signal_emit (self, signals[MARKS_CLEARED], 0);
  /* where the last run's NaN/Inf came from, over any other mark */
  GraftNode *nonfinite = graft_run_pane_get_nonfinite_node (self->run_pane);
  if (window_flag (self, "show-timings") && timings != NULL)
    {
      mark_timings (self, timings, graft_run_pane_get_fused (self->run_pane));
      if (nonfinite != NULL)
        graft_graph_canvas_mark_node (self->canvas, nonfinite, 3, "NaN/Inf");
      return;
    }
  if (window_flag (self, "show-cost") && graft_document_get_model (self->document) != NULL)
    {
      mark_cost (self);
      if (nonfinite != NULL)
        graft_graph_canvas_mark_node (self->canvas, nonfinite, 3, "NaN/Inf");
      return;
    }
  if (nonfinite != NULL)
    graft_graph_canvas_mark_node (self->canvas, nonfinite, 3, "NaN/Inf");
  for (guint i = 0; self->diagnostics != NULL && i < self->diagnostics->len; i++)
    {
      GraftDiagnostic *diagnostic = g_ptr_array_index (self->diagnostics, i);
      guint level = diagnostic->severity + 1;
      GraftNode *node = diagnostic->node;
      gpointer key;

      if (node == NULL && diagnostic->value != NULL && !diagnostic->value->is_graph_input)
        node = diagnostic->value->producer;
      key = node != NULL ? (gpointer) node : (gpointer) diagnostic->value;
      /* The most severe problem of an item gives its colour and badge. */
      if (key == NULL || GPOINTER_TO_UINT (g_hash_table_lookup (levels, key)) >= level)
        continue;
      g_hash_table_insert (levels, key, GUINT_TO_POINTER (level));
      if (node != NULL)
        graft_graph_canvas_mark_node (self->canvas, node, level,
                                      diagnostic->reason != NULL ? graft_target_marks_badge (diagnostic->reason)
                                                                 : badge_text (diagnostic->rule));
      /* The value concerned: a graph input's box, or the edges of a shape
       * constant. */
      if (diagnostic->value != NULL)
        graft_graph_canvas_mark_value (self->canvas, diagnostic->value, level,
                                       node == NULL ? badge_text (diagnostic->rule) : NULL);
    }
  if (self->target_report != NULL)
    graft_target_marks_tint_partitions (self->canvas, self->target_report);
}

/* The summary under the header: "2 partitions, 121/122 nodes on ort-nnapi;
 * Flatten falls back". */
static void
update_target_bar (GraftWindowAnalysis *self)
{
  g_autofree char *summary = NULL;
  g_autofree char *tooltip = NULL;

  gtk_widget_set_visible (self->target_bar, self->deploy_target != NULL && graft_document_get_model (self->document) != NULL);
  gtk_widget_set_visible (self->target_fix_button, FALSE);
  if (self->deploy_target == NULL)
    return;
  if (self->target_report == NULL)
    {
      gtk_label_set_text (self->target_summary, graft_document_is_checking (self->document) ? "Checking…"
                          : "This target does not read this kind of model (see Problems)");
      return;
    }
  summary = graft_target_report_summary (self->target_report);
  gtk_label_set_text (self->target_summary, summary);
  gtk_widget_set_visible (self->target_fix_button, self->target_report->n_supported < self->target_report->n_nodes);
  tooltip = g_strdup_printf ("%s — %s\nSource: %s", self->deploy_target->title, self->deploy_target->version,
                             self->deploy_target->sources[0]);
  gtk_widget_set_tooltip_text (self->target_bar, tooltip);
}

static void
set_diagnostics (GraftWindowAnalysis *self, GPtrArray *diagnostics)
{
  guint n = diagnostics != NULL ? diagnostics->len : 0;
  guint n_errors = 0;
  g_autofree char *count = NULL;

  if (diagnostics != NULL)
    g_ptr_array_ref (diagnostics);
  else
    {
      /* The graph it judged is gone (an edit, another file); the Debug
       * part forgets the nodes a reduction or a float16 search kept. */
      self->target_report = NULL;
    }
  graft_diagnostics_panel_set_diagnostics (self->diagnostics_panel, diagnostics);
  g_clear_pointer (&self->diagnostics, g_ptr_array_unref);
  self->diagnostics = diagnostics;
  for (guint i = 0; i < n; i++)
    if (((GraftDiagnostic *) g_ptr_array_index (diagnostics, i))->severity == GRAFT_SEVERITY_ERROR)
      n_errors++;
  count = g_strdup_printf ("%u", n);
  gtk_label_set_text (self->diagnostics_count, count);
  gtk_widget_set_tooltip_text (self->diagnostics_button, "Problems (F8)");
  gtk_widget_set_visible (self->diagnostics_button, diagnostics != NULL);
  if (n_errors > 0)
    gtk_widget_add_css_class (self->diagnostics_button, "error");
  else
    gtk_widget_remove_css_class (self->diagnostics_button, "error");
  refresh_marks (self);
  update_target_bar (self);
}

/* ---------- Deployment target ---------- */

static void
deploy_target_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindowAnalysis *self = part_of (widget);
  const char *name = g_variant_get_string (parameter, NULL);
  const GraftDeployTarget *target = name[0] != '\0' ? graft_deploy_target_lookup (name) : NULL;
  guint n_targets, position = 0;
  const GraftDeployTarget *const *targets = graft_deploy_targets (&n_targets);

  if (name[0] != '\0' && target == NULL)
    {
      g_autofree char *message = g_strdup_printf ("No deployment target “%s”", name);
      graft_window_show_toast (self->window, message);
      return;
    }
  for (guint i = 0; i < n_targets; i++)
    if (targets[i] == target)
      position = i + 1;
  if (gtk_drop_down_get_selected (self->target_dropdown) != position)
    gtk_drop_down_set_selected (self->target_dropdown, position);   /* comes back here, same target */
  if (self->deploy_target == target)
    return;
  self->deploy_target = target;
  self->target_report = NULL;
  update_target_bar (self);
  refresh_marks (self);
  graft_window_analysis_check (self);
}

/* The target's fixes (lint/target-fixes.h), each edit applied through the
 * history so that Undo takes them back one by one; the check that follows
 * shows the new partitions. */
static void
fix_for_target_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindowAnalysis *self = part_of (widget);
  g_autoptr(GraftTargetFixPlan) plan = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *summary = NULL;

  if (self->deploy_target == NULL || !graft_window_edits_allowed (self->window))
    return;
  plan = graft_target_fix_plan_new (graft_document_get_model (self->document), self->deploy_target, NULL, &error);
  if (plan == NULL)
    {
      graft_window_show_edit_error (self->window, "Could Not Fix the Model", error);
      return;
    }
  summary = graft_target_fix_plan_summary (plan);
  /* One new graph shown for them all. */
  graft_document_begin_changes (self->document);
  for (guint i = 0; i < plan->fixes->len && error == NULL; i++)
    {
      g_autoptr(GPtrArray) edits = graft_target_fix_new_edits (g_ptr_array_index (plan->fixes, i), &error);
      for (guint j = 0; edits != NULL && j < edits->len; j++)
        {
          if (!graft_document_apply_edit (self->document, g_ptr_array_index (edits, j), NULL, &error))
            break;
        }
    }
  graft_document_end_changes (self->document);
  if (error != NULL)
    graft_window_show_edit_error (self->window, "Could Not Fix the Model", error);
  else
    graft_window_show_toast (self->window, summary);
}

static void
on_target_selected (GraftWindowAnalysis *self)
{
  guint n_targets, position = gtk_drop_down_get_selected (self->target_dropdown);
  const GraftDeployTarget *const *targets = graft_deploy_targets (&n_targets);
  const char *name = position >= 1 && position <= n_targets ? targets[position - 1]->name : "";

  gtk_widget_activate_action (GTK_WIDGET (self->window), "win.deploy-target", "s", name);
}

static void
on_cost_metric_selected (GraftWindowAnalysis *self)
{
  guint position = gtk_drop_down_get_selected (self->cost_metric_dropdown);

  if (position < GRAFT_COST_N_METRICS)
    gtk_widget_activate_action (GTK_WIDGET (self->window), "win.cost-metric", "s", graft_cost_metrics ()[position].name);
}

static void
init_cost_dropdown (GraftWindowAnalysis *self)
{
  g_autoptr(GtkStringList) titles = gtk_string_list_new (NULL);

  for (guint i = 0; i < GRAFT_COST_N_METRICS; i++)
    gtk_string_list_append (titles, graft_cost_metrics ()[i].title);
  gtk_drop_down_set_model (self->cost_metric_dropdown, G_LIST_MODEL (titles));
  g_signal_connect_swapped (self->cost_metric_dropdown, "notify::selected", G_CALLBACK (on_cost_metric_selected), self);
}

static void
init_target_dropdown (GraftWindowAnalysis *self)
{
  guint n_targets;
  const GraftDeployTarget *const *targets = graft_deploy_targets (&n_targets);
  g_autoptr(GtkStringList) titles = gtk_string_list_new (NULL);

  gtk_string_list_append (titles, "No Target");
  for (guint i = 0; i < n_targets; i++)
    gtk_string_list_append (titles, targets[i]->title);
  gtk_drop_down_set_model (self->target_dropdown, G_LIST_MODEL (titles));
  g_signal_connect_swapped (self->target_dropdown, "notify::selected", G_CALLBACK (on_target_selected), self);
}

/* ---------- Run pane ---------- */

/* Shows or hides the Run pane with the window's run-visible. */
static void
on_run_visible (GraftWindowAnalysis *self)
{
  int height = gtk_widget_get_height (GTK_WIDGET (self->run_paned));
  gboolean visible = window_flag (self, "run-visible");

  gtk_widget_set_visible (GTK_WIDGET (self->run_pane), visible);
  if (visible && height > 0)
    gtk_paned_set_position (self->run_paned, MAX (height - 300, height / 2));
}

static void
run_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindowAnalysis *self = part_of (widget);

  if (graft_document_get_model (self->document) == NULL)
    return;
  g_object_set (self->window, "run-visible", TRUE, NULL);
  graft_run_pane_start (self->run_pane);
}

static void
cancel_run_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  gtk_widget_activate_action (GTK_WIDGET (graft_window_get_run_pane (GRAFT_WINDOW (widget))), "run.cancel", NULL);
}

/* "batch=4": sets the dim for random inputs. */
static gboolean
apply_dim_setting (GraftWindowAnalysis *self, const char *setting)
{
  const char *eq = strchr (setting, '=');
  g_autofree char *symbol = eq != NULL ? g_strndup (setting, eq - setting) : NULL;
  char *end = NULL;
  gint64 value = eq != NULL ? g_ascii_strtoll (eq + 1, &end, 10) : -1;

  if (symbol == NULL || symbol[0] == '\0' || end == eq + 1 || *end != '\0' || value < 0)
    {
      g_autofree char *message = g_strdup_printf ("“%s” is not NAME=VALUE", setting);

      graft_window_show_toast (self->window, message);
      return FALSE;
    }
  graft_run_pane_set_dim (self->run_pane, symbol, value);
  return TRUE;
}

/* "input=VALUE" → "input", *value pointing at VALUE; NULL (with a toast
 * saying what was expected, "INPUT=PATH") if there is no "=". */
static char *
split_input_setting (GraftWindowAnalysis *self, GVariant *parameter, const char *expected, const char **value)
{
  const char *setting = g_variant_get_string (parameter, NULL);
  const char *eq = strchr (setting, '=');

  if (eq == NULL)
    {
      g_autofree char *message = g_strdup_printf ("“%s” is not %s", setting, expected);

      graft_window_show_toast (self->window, message);
      return NULL;
    }
  *value = eq + 1;
  return g_strndup (setting, eq - setting);
}

/* "input=PATH": feeds a .npy or .pb file; "input=" goes back to random data. */
static void
set_run_input_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindowAnalysis *self = part_of (widget);
  const char *path = NULL;
  g_autofree char *input = split_input_setting (self, parameter, "INPUT=PATH", &path);

  if (input != NULL)
    graft_run_pane_set_input_file (self->run_pane, input, path[0] != '\0' ? path : NULL);
}

/* "input=1x3x224x224": the shape of random data for an input that
 * declares none; "input=" forgets it. */
static void
set_run_input_shape_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindowAnalysis *self = part_of (widget);
  const char *shape = NULL;
  g_autofree char *input = split_input_setting (self, parameter, "INPUT=SHAPE", &shape);
  g_autoptr(GError) error = NULL;

  if (input != NULL && !graft_run_pane_set_input_shape (self->run_pane, input, shape, &error))
    {
      g_autofree char *message = g_strdup_printf ("Input “%s”: %s", input, error->message);

      graft_window_show_toast (self->window, message);
    }
}

static void
set_run_dim_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  apply_dim_setting (part_of (widget), g_variant_get_string (parameter, NULL));
}

/* After making a dim dynamic: run with a size other than the traced one. */
void
graft_window_analysis_run_with_dim (GraftWindowAnalysis *self, const char *setting)
{
  if (graft_document_get_model (self->document) != NULL && apply_dim_setting (self, setting))
    run_action (GTK_WIDGET (self->window), "win.run", NULL);
}

static void
save_outputs_to_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  gtk_widget_activate_action_variant (GTK_WIDGET (graft_window_get_run_pane (GRAFT_WINDOW (widget))),
                                      "run.save-outputs-to", parameter);
}

static void
save_outputs_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindowAnalysis *self = part_of (widget);

  g_object_set (self->window, "run-visible", TRUE, NULL);
  gtk_widget_activate_action (GTK_WIDGET (self->run_pane), "run.save-outputs", NULL);
}

static void
on_run_finished (GraftWindowAnalysis *self)
{
  GraftNode *nonfinite = graft_run_pane_get_nonfinite_node (self->run_pane);

  graft_window_update_action_states (self->window);
  if (window_flag (self, "show-timings") || window_flag (self, "show-cost") || nonfinite != NULL)
    refresh_marks (self);
  /* take the user to where NaN/Inf began */
  if (nonfinite != NULL)
    graft_graph_canvas_select_node (self->canvas, nonfinite);
}

static void
on_run_running (GraftWindowAnalysis *self)
{
  graft_window_update_action_states (self->window);
}

/* "static-input-dim" or "static-input-dim:warning", ":error" alone... */
static void
filter_diagnostics_action (GtkWidget *widget, const char *action_name, GVariant *parameter)
{
  GraftWindowAnalysis *self = part_of (widget);
  g_auto(GStrv) parts = g_strsplit (g_variant_get_string (parameter, NULL), ":", 2);
  GraftSeverity severity = GRAFT_SEVERITY_INFO;

  if (parts[0] != NULL && parts[1] != NULL)
    severity = g_str_equal (parts[1], "error") ? GRAFT_SEVERITY_ERROR
             : g_str_equal (parts[1], "warning") ? GRAFT_SEVERITY_WARNING : GRAFT_SEVERITY_INFO;
  g_object_set (self->window, "diagnostics-visible", TRUE, NULL);
  graft_diagnostics_panel_set_filter (self->diagnostics_panel, parts[0], severity);
}

static void
on_diagnostics_visible (GraftWindowAnalysis *self)
{
  gtk_revealer_set_reveal_child (self->diagnostics_revealer, window_flag (self, "diagnostics-visible"));
}

void
graft_window_class_add_analysis_actions (GtkWidgetClass *widget_class)
{
  gtk_widget_class_install_action (widget_class, "win.run", NULL, run_action);
  gtk_widget_class_install_action (widget_class, "win.cancel-run", NULL, cancel_run_action);
  gtk_widget_class_install_action (widget_class, "win.set-run-dim", "s", set_run_dim_action);
  gtk_widget_class_install_action (widget_class, "win.set-run-input", "s", set_run_input_action);
  gtk_widget_class_install_action (widget_class, "win.set-run-input-shape", "s", set_run_input_shape_action);
  gtk_widget_class_install_action (widget_class, "win.save-outputs", NULL, save_outputs_action);
  gtk_widget_class_install_action (widget_class, "win.save-outputs-to", "s", save_outputs_to_action);
  gtk_widget_class_install_action (widget_class, "win.filter-diagnostics", "s", filter_diagnostics_action);
  gtk_widget_class_install_action (widget_class, "win.deploy-target", "s", deploy_target_action);
  gtk_widget_class_install_action (widget_class, "win.fix-for-target", NULL, fix_for_target_action);
  gtk_widget_class_install_property_action (widget_class, "win.show-diagnostics", "diagnostics-visible");
  gtk_widget_class_install_property_action (widget_class, "win.show-run", "run-visible");
  gtk_widget_class_install_property_action (widget_class, "win.show-timings", "show-timings");
  gtk_widget_class_install_property_action (widget_class, "win.show-cost", "show-cost");
  gtk_widget_class_install_property_action (widget_class, "win.cost-metric", "cost-metric");
}

static void
graft_window_analysis_dispose (GObject *object)
{
  GraftWindowAnalysis *self = GRAFT_WINDOW_ANALYSIS (object);

  /* A run still going holds the pane past the window: its end must not
   * reach this part. */
  if (self->run_pane != NULL)
    g_signal_handlers_disconnect_by_data (self->run_pane, self);
  if (self->window != NULL)
    g_signal_handlers_disconnect_by_data (self->window, self);
  if (self->document != NULL)
    g_signal_handlers_disconnect_by_data (self->document, self);
  self->target_report = NULL;
  g_clear_pointer (&self->diagnostics, g_ptr_array_unref);
  g_clear_pointer (&self->inference, graft_inference_unref);
  g_clear_object (&self->document);
  if (self->window != NULL)
    g_object_set_data (G_OBJECT (self->window), PART_KEY, NULL);
  g_clear_weak_pointer (&self->window);
  G_OBJECT_CLASS (graft_window_analysis_parent_class)->dispose (object);
}

static void
graft_window_analysis_class_init (GraftWindowAnalysisClass *klass)
{
  G_OBJECT_CLASS (klass)->dispose = graft_window_analysis_dispose;

  /* The canvas's marks were cleared for new ones: what is marked under
   * all of them goes first. */
  signals[MARKS_CLEARED] = g_signal_new ("marks-cleared", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL,
                                         NULL, NULL, G_TYPE_NONE, 0);
}

static void
graft_window_analysis_init (GraftWindowAnalysis *self)
{
}

static gpointer
template_child (GraftWindow *window, const char *name)
{
  GObject *child = gtk_widget_get_template_child (GTK_WIDGET (window), GRAFT_TYPE_WINDOW, name);

  g_assert (child != NULL);
  return child;
}

GraftWindowAnalysis *
graft_window_analysis_new (GraftWindow *window)
{
  GraftWindowAnalysis *self = g_object_new (GRAFT_TYPE_WINDOW_ANALYSIS, NULL);

  g_set_weak_pointer (&self->window, window);
  self->document = g_object_ref (graft_window_get_document (window));
  self->canvas = graft_window_get_canvas (window);
  self->run_pane = graft_window_get_run_pane (window);
  self->sidebar = graft_window_get_sidebar (window);
  self->find_panel = graft_window_get_find_panel (window);
  self->diagnostics_revealer = template_child (window, "diagnostics_revealer");
  self->diagnostics_panel = template_child (window, "diagnostics_panel");
  self->diagnostics_count = template_child (window, "diagnostics_count");
  self->diagnostics_button = template_child (window, "diagnostics_button");
  self->run_paned = template_child (window, "run_paned");
  self->target_dropdown = template_child (window, "target_dropdown");
  self->target_bar = template_child (window, "target_bar");
  self->target_summary = template_child (window, "target_summary");
  self->cost_bar = template_child (window, "cost_bar");
  self->cost_metric_dropdown = template_child (window, "cost_metric_dropdown");
  self->cost_summary = template_child (window, "cost_summary");
  self->target_fix_button = template_child (window, "target_fix_button");
  g_object_set_data (G_OBJECT (window), PART_KEY, self);

  g_signal_connect_swapped (self->run_pane, "run-finished", G_CALLBACK (on_run_finished), self);
  /* Shapes given for inputs that declare none: the edges show what they imply. */
  g_signal_connect_swapped (self->run_pane, "input-shapes-changed", G_CALLBACK (graft_window_analysis_check), self);
  g_signal_connect_swapped (self->run_pane, "notify::running", G_CALLBACK (on_run_running), self);
  g_signal_connect_swapped (window, "notify::diagnostics-visible", G_CALLBACK (on_diagnostics_visible), self);
  g_signal_connect_swapped (window, "notify::run-visible", G_CALLBACK (on_run_visible), self);
  g_signal_connect_swapped (window, "notify::show-timings", G_CALLBACK (refresh_marks), self);
  g_signal_connect_swapped (window, "notify::show-cost", G_CALLBACK (refresh_marks), self);
  g_signal_connect_swapped (window, "notify::cost-metric", G_CALLBACK (refresh_marks), self);
  g_signal_connect_swapped (self->document, "checked", G_CALLBACK (on_document_checked), self);
  g_signal_connect_swapped (self->document, "notify::checking", G_CALLBACK (on_document_checking), self);
  init_target_dropdown (self);
  init_cost_dropdown (self);
  return self;
}
