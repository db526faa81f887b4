/* The window's parts in a real GTK (under Xvfb): the sidebar's rows and its
 * threaded statistics, Find's result list, and the breadcrumbs. */
#include <gtk/gtk.h>
#include <string.h>

#include "lint/diagnostics.h"
#include "widgets/breadcrumbs.h"
#include "widgets/diagnostics-panel.h"
#include "runtime/precision.h"
#include "widgets/run-pane.h"
#include "widgets/find-panel.h"
#include "widgets/node-sidebar.h"
#include "widget-inspect.h"
#include "diagnostics-inspect.h"

#define WEIGHT_ROWS 300  /* 300 × 300 elements: above the sidebar's synchronous limit */

typedef struct {
  GraftModel *model;
  GraftGraph *graph;   /* owned by model */
  GraftNode *conv;
  GraftNode *branch;
  GraftGraph *else_graph;
} Fixture;

static GraftTensor *
make_weight (void)
{
  gint64 dims[] = { WEIGHT_ROWS, WEIGHT_ROWS };
  GraftTensor *tensor = graft_tensor_new ("weight", GRAFT_DTYPE_FLOAT32, 2, dims);
  gint64 n = WEIGHT_ROWS * WEIGHT_ROWS;
  float *values = g_new (float, n);
  g_autoptr(GBytes) bytes = NULL;
  g_autoptr(GError) error = NULL;

  for (gint64 i = 0; i < n; i++)
    values[i] = i * 0.001f;
  bytes = g_bytes_new_take (values, n * sizeof (float));
  g_assert_true (graft_tensor_set_data (tensor, bytes, &error));
  g_assert_no_error (error);
  return tensor;
}

static void
fixture_set_up (Fixture *fixture, gconstpointer data)
{
  GraftGraph *graph = graft_graph_new ("main");
  GraftGraph *then_graph = graft_graph_new ("then_branch");
  GraftValue *input = graft_graph_ensure_value (graph, "input");
  GraftValue *weight = graft_graph_ensure_value (graph, "weight");
  GraftValue *output = graft_graph_ensure_value (graph, "conv_out");
  const gint64 dims[] = { 1, 300 };

  input->dtype = GRAFT_DTYPE_FLOAT32;
  graft_shape_init_fixed (&input->shape, 2, dims);
  graft_graph_add_input (graph, input);
  graft_graph_add_initializer (graph, weight, make_weight ());

  fixture->conv = graft_graph_add_node (graph, NULL, "MatMul", "/layer/MatMul");
  graft_node_add_input (fixture->conv, input);
  graft_node_add_input (fixture->conv, weight);
  graft_node_add_output (fixture->conv, output);
  graft_node_add_attribute (fixture->conv, graft_attribute_new_int ("transB", 1));
  graft_node_add_metadata (fixture->conv, "pkg.torch.onnx.class_hierarchy", "['Net', 'torch.nn.Linear']");

  fixture->branch = graft_graph_add_node (graph, NULL, "If", "branch");
  graft_node_add_input (fixture->branch, output);
  fixture->else_graph = graft_graph_new ("else_branch");
  graft_graph_add_node (then_graph, NULL, "Identity", "inner_identity");
  graft_graph_add_node (fixture->else_graph, NULL, "Neg", "inner_neg");
  graft_node_add_attribute (fixture->branch, graft_attribute_new_graph ("then_branch", then_graph));
  graft_node_adopt_subgraph (fixture->branch, then_graph);
  graft_node_add_attribute (fixture->branch, graft_attribute_new_graph ("else_branch", fixture->else_graph));
  graft_node_adopt_subgraph (fixture->branch, fixture->else_graph);
  graft_graph_build_groups_from_names (graph);

  fixture->model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  graft_model_set_opset (fixture->model, "", 17);
  graft_model_set_graph (fixture->model, graph);
  fixture->graph = graph;
}

static void
fixture_tear_down (Fixture *fixture, gconstpointer data)
{
  g_clear_object (&fixture->model);
}

/* Texts of all labels under widget, depth first, joined by "\n". */
static void
collect_labels (GtkWidget *widget, GString *out)
{
  if (GTK_IS_LABEL (widget) && gtk_widget_get_visible (widget))
    g_string_append_printf (out, "%s\n", gtk_label_get_text (GTK_LABEL (widget)));
  for (GtkWidget *child = gtk_widget_get_first_child (widget); child != NULL;
       child = gtk_widget_get_next_sibling (child))
    collect_labels (child, out);
}

static char *
dup_labels (GtkWidget *widget)
{
  GString *out = g_string_new (NULL);

  collect_labels (widget, out);
  return g_string_free (out, FALSE);
}

static GtkWidget *
find_named (GtkWidget *root, const char *name)
{
  if (g_strcmp0 (gtk_widget_get_name (root), name) == 0)
    return root;
  for (GtkWidget *child = gtk_widget_get_first_child (root); child != NULL; child = gtk_widget_get_next_sibling (child))
    {
      GtkWidget *found = find_named (child, name);
      if (found != NULL)
        return found;
    }
  return NULL;
}

static void
wait_for_stats (GraftNodeSidebar *sidebar)
{
  gint64 deadline = g_get_monotonic_time () + 20 * G_USEC_PER_SEC;

  while (inspect_uint (sidebar, "pending-stats") > 0 && g_get_monotonic_time () < deadline)
    g_main_context_iteration (NULL, TRUE);
  g_assert_cmpuint (inspect_uint (sidebar, "pending-stats"), ==, 0);
}

static void
test_sidebar_node (Fixture *fixture, gconstpointer data)
{
  GtkWidget *sidebar = g_object_ref_sink (g_object_new (GRAFT_TYPE_NODE_SIDEBAR, NULL));
  g_autofree char *before = NULL;
  g_autofree char *after = NULL;

  graft_node_sidebar_show_node (GRAFT_NODE_SIDEBAR (sidebar), fixture->model, fixture->conv);
  g_assert_cmpstr (inspect_label_text (GRAFT_NODE_SIDEBAR (sidebar), GRAFT_TYPE_NODE_SIDEBAR, "title_label"), ==, "MatMul");
  g_assert_cmpstr (inspect_label_text (GRAFT_NODE_SIDEBAR (sidebar), GRAFT_TYPE_NODE_SIDEBAR, "subtitle_label"), ==, "/layer/MatMul");

  /* The big weight is summarised in a worker thread. */
  g_assert_cmpuint (inspect_uint (GRAFT_NODE_SIDEBAR (sidebar), "pending-stats"), ==, 1);
  before = dup_labels (sidebar);
  g_assert_nonnull (strstr (before, "computing…"));
  wait_for_stats (GRAFT_NODE_SIDEBAR (sidebar));
  after = dup_labels (sidebar);
  g_test_message ("sidebar labels:\n%s", after);
  g_assert_nonnull (strstr (after, "Operator\nonnx::MatMul\n"));
  /* An ONNX attribute is an entry to edit in place, under its name and type. */
  g_assert_nonnull (strstr (after, "transB · int\n"));
  g_assert_cmpstr (gtk_editable_get_text (GTK_EDITABLE (find_named (sidebar, "attribute:transB"))), ==, "1");
  g_assert_nonnull (strstr (after, "Metadata\npkg.torch.onnx.class_hierarchy\n['Net', 'torch.nn.Linear']\n"));
  g_assert_nonnull (strstr (after, "input\nfloat32 · 1×300\n"));
  g_assert_nonnull (strstr (after, "Tensor\nfloat32[300,300]\n"));
  g_assert_nonnull (strstr (after, "Size\n360.0\u00a0kB\n" /* g_format_size() uses a no-break space */));
  g_assert_nonnull (strstr (after, "min 0 · max 89.999 · mean 44.9995"));
  g_assert_null (strstr (after, "computing…"));
  g_object_unref (sidebar);
}

static void
test_sidebar_cancels_stats (Fixture *fixture, gconstpointer data)
{
  GtkWidget *sidebar = g_object_ref_sink (g_object_new (GRAFT_TYPE_NODE_SIDEBAR, NULL));
  g_autofree char *labels = NULL;

  /* Moving on before the statistics arrive: they must not land in the
   * model view. */
  graft_node_sidebar_show_node (GRAFT_NODE_SIDEBAR (sidebar), fixture->model, fixture->conv);
  graft_node_sidebar_show_model (GRAFT_NODE_SIDEBAR (sidebar), fixture->model);
  g_assert_cmpuint (inspect_uint (GRAFT_NODE_SIDEBAR (sidebar), "pending-stats"), ==, 0);
  for (int i = 0; i < 200; i++)
    g_main_context_iteration (NULL, FALSE);
  g_usleep (200000);
  while (g_main_context_iteration (NULL, FALSE))
    ;
  labels = dup_labels (sidebar);
  g_assert_null (strstr (labels, "min 0"));
  g_assert_nonnull (strstr (labels, "Opset Imports\n"));
  g_assert_nonnull (strstr (labels, "Nodes\n2 (4 with subgraphs)\n"));
  g_object_unref (sidebar);
}

static void
test_sidebar_value (Fixture *fixture, gconstpointer data)
{
  GtkWidget *sidebar = g_object_ref_sink (g_object_new (GRAFT_TYPE_NODE_SIDEBAR, NULL));
  GraftValue *output = graft_graph_lookup_value (fixture->graph, "conv_out");
  g_autofree char *labels = NULL;

  graft_node_sidebar_show_value (GRAFT_NODE_SIDEBAR (sidebar), fixture->model, output);
  labels = dup_labels (sidebar);
  g_assert_cmpstr (inspect_label_text (GRAFT_NODE_SIDEBAR (sidebar), GRAFT_TYPE_NODE_SIDEBAR, "title_label"), ==, "conv_out");
  g_assert_cmpstr (inspect_label_text (GRAFT_NODE_SIDEBAR (sidebar), GRAFT_TYPE_NODE_SIDEBAR, "subtitle_label"), ==, "Value");
  g_assert_nonnull (strstr (labels, "Produced By\nMatMul “/layer/MatMul”\noutput 0\n"));
  g_assert_nonnull (strstr (labels, "Used By\nIf “branch”\nonnx::If\n"));
  g_object_unref (sidebar);
}

/* Old ONNX files list every weight as a graph input too. */
static void
test_sidebar_model_inputs (Fixture *fixture, gconstpointer data)
{
  GtkWidget *sidebar = g_object_ref_sink (g_object_new (GRAFT_TYPE_NODE_SIDEBAR, NULL));
  g_autofree char *labels = NULL;

  graft_graph_add_input (fixture->graph, graft_graph_lookup_value (fixture->graph, "weight"));
  graft_node_sidebar_show_model (GRAFT_NODE_SIDEBAR (sidebar), fixture->model);
  labels = dup_labels (sidebar);
  g_assert_nonnull (strstr (labels, "Inputs\ninput\nfloat32 · 1×300\nInitializers\n1 more inputs are initializers (weights)\n"));
  g_assert_null (strstr (labels, "weight\ninitializer"));
  g_object_unref (sidebar);
}

static void
test_find_panel (Fixture *fixture, gconstpointer data)
{
  GtkWidget *panel = g_object_ref_sink (g_object_new (GRAFT_TYPE_FIND_PANEL, NULL));
  g_autofree char *labels = NULL;

  graft_find_panel_set_graph (GRAFT_FIND_PANEL (panel), fixture->graph);
  graft_find_panel_set_text (GRAFT_FIND_PANEL (panel), "inner");
  g_assert_cmpuint (inspect_uint (GRAFT_FIND_PANEL (panel), "n-matches"), ==, 2);
  labels = dup_labels (panel);
  g_assert_nonnull (strstr (labels, "2 matches\n"));
  g_assert_nonnull (strstr (labels, "inner_identity\nonnx::Identity · main › If “branch” › then_branch\n"));
  g_assert_nonnull (strstr (labels, "inner_neg\n"));
  g_clear_pointer (&labels, g_free);

  graft_find_panel_set_text (GRAFT_FIND_PANEL (panel), "softmax");
  g_assert_cmpuint (inspect_uint (GRAFT_FIND_PANEL (panel), "n-matches"), ==, 0);
  labels = dup_labels (panel);
  g_assert_nonnull (strstr (labels, "No matches\n"));
  g_object_unref (panel);
}

static void
test_breadcrumbs (Fixture *fixture, gconstpointer data)
{
  GtkWidget *crumbs = g_object_ref_sink (g_object_new (GRAFT_TYPE_BREADCRUMBS, NULL));
  g_autofree char *main_text = NULL;
  g_autofree char *else_text = NULL;

  graft_breadcrumbs_set_graph (GRAFT_BREADCRUMBS (crumbs), fixture->graph);
  main_text = inspect_dup_breadcrumbs (GRAFT_BREADCRUMBS (crumbs));
  g_assert_cmpstr (main_text, ==, "main");

  graft_breadcrumbs_set_graph (GRAFT_BREADCRUMBS (crumbs), fixture->else_graph);
  else_text = inspect_dup_breadcrumbs (GRAFT_BREADCRUMBS (crumbs));
  g_assert_cmpstr (else_text, ==, "main › If “branch” › else_branch");
  /* If has two bodies: the last crumb switches between them. */
  g_assert_true (GTK_IS_DROP_DOWN (gtk_widget_get_last_child (crumbs)));
  g_assert_cmpuint (gtk_drop_down_get_selected (GTK_DROP_DOWN (gtk_widget_get_last_child (crumbs))), ==, 1);
  g_object_unref (crumbs);
}

static GtkWidget *
find_button (GtkWidget *widget, const char *label)
{
  if (GTK_IS_BUTTON (widget) && g_strcmp0 (gtk_button_get_label (GTK_BUTTON (widget)), label) == 0)
    return widget;
  for (GtkWidget *child = gtk_widget_get_first_child (widget); child != NULL; child = gtk_widget_get_next_sibling (child))
    {
      GtkWidget *found = find_button (child, label);

      if (found != NULL)
        return found;
    }
  return NULL;
}

static void
record_target (GSimpleAction *action, GVariant *parameter, gpointer user_data)
{
  char **target = user_data;
  const char *id, *on, *argument;

  /* win.edit-operation's (id, target, argument): "id argument" (these
   * name no target). */
  g_variant_get (parameter, "(&s&s&s)", &id, &on, &argument);
  g_free (*target);
  *target = g_strdup_printf ("%s %s%s", id, on, argument);
}

/* A graph input's dims are edited from the sidebar through the window's
 * win.edit-operation action (make-dim-dynamic, set-input-shape). */
static void
test_sidebar_input_edit (Fixture *fixture, gconstpointer data)
{
  GtkWidget *sidebar = g_object_ref_sink (g_object_new (GRAFT_TYPE_NODE_SIDEBAR, NULL));
  GtkWidget *window = gtk_window_new ();
  g_autoptr(GSimpleActionGroup) group = g_simple_action_group_new ();
  g_autofree char *target = NULL;
  g_autofree char *labels = NULL;
  const GActionEntry entries[] = {
    { "edit-operation", record_target, "(sss)" },
  };

  g_action_map_add_action_entries (G_ACTION_MAP (group), entries, G_N_ELEMENTS (entries), &target);
  gtk_widget_insert_action_group (window, "win", G_ACTION_GROUP (group));
  gtk_window_set_child (GTK_WINDOW (window), sidebar);
  graft_node_sidebar_show_value (GRAFT_NODE_SIDEBAR (sidebar), fixture->model,
                                 graft_graph_lookup_value (fixture->graph, "input"));
  labels = dup_labels (sidebar);
  g_assert_nonnull (strstr (labels, "Edit Shape\nDim 0, fixed at 1\n"));
  g_assert_nonnull (strstr (labels, "Dim 1, fixed at 300\n"));
  g_signal_emit_by_name (find_button (sidebar, "Make _Dynamic"), "clicked");
  g_assert_cmpstr (target, ==, "make-dim-dynamic input:0=batch");
  g_signal_emit_by_name (find_button (sidebar, "_Set Shape"), "clicked");
  g_assert_cmpstr (target, ==, "set-input-shape input=1x300");
  /* Values other than graph inputs have nothing to edit. */
  graft_node_sidebar_show_value (GRAFT_NODE_SIDEBAR (sidebar), fixture->model,
                                 graft_graph_lookup_value (fixture->graph, "conv_out"));
  g_clear_pointer (&labels, g_free);
  labels = dup_labels (sidebar);
  g_assert_null (strstr (labels, "Edit Shape"));
  gtk_window_destroy (GTK_WINDOW (window));
  g_object_unref (sidebar);
}

/* input float32[batch or 2, 4] → Relu → out */
static GraftModel *
relu_model (gboolean dynamic)
{
  GraftGraph *graph = graft_graph_new ("relu");
  GraftValue *input = graft_graph_ensure_value (graph, "x");
  GraftValue *output = graft_graph_ensure_value (graph, "out");
  GraftNode *relu = graft_graph_add_node (graph, NULL, "Relu", "relu");
  const gint64 dims[] = { 2, 4 };
  GraftModel *model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);

  input->dtype = output->dtype = GRAFT_DTYPE_FLOAT32;
  graft_shape_init_fixed (&input->shape, 2, dims);
  if (dynamic)
    input->shape.dims[0] = graft_dim_symbolic ("batch");
  graft_graph_add_input (graph, input);
  graft_node_add_input (relu, input);
  graft_node_add_output (relu, output);
  graft_graph_add_output (graph, output);
  graft_model_set_opset (model, "", 17);
  graft_model_set_graph (model, graph);
  return model;
}

static void
on_run_finished (GraftRunPane *pane, gboolean *finished)
{
  *finished = TRUE;
}

/* Random inputs of the chosen size, run on a worker thread, summarised. */
static void
test_run_pane (void)
{
  GtkWidget *pane = g_object_ref_sink (g_object_new (GRAFT_TYPE_RUN_PANE, NULL));
  g_autoptr(GraftModel) model = relu_model (TRUE);
  g_autofree char *summary = NULL;
  gboolean finished = FALSE;

  g_signal_connect (pane, "run-finished", G_CALLBACK (on_run_finished), &finished);
  graft_run_pane_set_model (GRAFT_RUN_PANE (pane), model);
  graft_run_pane_set_dim (GRAFT_RUN_PANE (pane), "batch", 3);
  gtk_spin_button_set_value (inspect_template_child (pane, GRAFT_TYPE_RUN_PANE, "seed_spin"), 7);
  graft_run_pane_start (GRAFT_RUN_PANE (pane));
  g_assert_true (graft_run_pane_is_running (GRAFT_RUN_PANE (pane)));
  while (!finished)
    g_main_context_iteration (NULL, TRUE);
  g_assert_false (graft_run_pane_is_running (GRAFT_RUN_PANE (pane)));
  summary = inspect_dup_rows (inspect_template_child (GRAFT_RUN_PANE (pane), GRAFT_TYPE_RUN_PANE, "outputs_list"));
  g_assert_true (g_str_has_prefix (summary, "out float32[3,4] min=0 max=0."));
  g_assert_nonnull (graft_run_pane_get_timings (GRAFT_RUN_PANE (pane)));
  g_assert_cmpuint (g_hash_table_size (graft_run_pane_get_timings (GRAFT_RUN_PANE (pane))), ==, 1);
  g_object_unref (pane);
}

/* x float32[2, 8] → MatMul by a constant w [8, 4] of thirds → out: what
 * bf16 weights change. */
static GraftModel *
matmul_model (void)
{
  GraftGraph *graph = graft_graph_new ("matmul");
  GraftValue *input = graft_graph_ensure_value (graph, "x");
  GraftValue *weight = graft_graph_ensure_value (graph, "w");
  GraftValue *output = graft_graph_ensure_value (graph, "out");
  GraftNode *matmul = graft_graph_add_node (graph, NULL, "MatMul", "matmul");
  const gint64 input_dims[] = { 2, 8 }, weight_dims[] = { 8, 4 };
  float w[32];
  for (guint i = 0; i < G_N_ELEMENTS (w); i++)
    w[i] = (float) (i + 1) / 3.0f;
  GraftTensor *t = graft_tensor_new ("w", GRAFT_DTYPE_FLOAT32, 2, weight_dims);
  g_autoptr(GBytes) bytes = g_bytes_new (w, sizeof w);
  g_assert_true (graft_tensor_set_data (t, bytes, NULL));
  weight->dtype = input->dtype = output->dtype = GRAFT_DTYPE_FLOAT32;
  graft_shape_init_fixed (&weight->shape, 2, weight_dims);
  graft_shape_init_fixed (&input->shape, 2, input_dims);
  graft_graph_add_initializer (graph, weight, t);
  graft_graph_add_input (graph, input);
  graft_node_add_input (matmul, input);
  graft_node_add_input (matmul, weight);
  graft_node_add_output (matmul, output);
  graft_graph_add_output (graph, output);
  GraftModel *model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  graft_model_set_opset (model, "", 17);
  graft_model_set_graph (model, graph);
  return model;
}

static char *
run_to_end (GraftRunPane *pane)
{
  gboolean finished = FALSE;
  gulong id = g_signal_connect (pane, "run-finished", G_CALLBACK (on_run_finished), &finished);
  graft_run_pane_start (pane);
  while (!finished)
    g_main_context_iteration (NULL, TRUE);
  g_signal_handler_disconnect (pane, id);
  return inspect_dup_rows (inspect_template_child (pane, GRAFT_TYPE_RUN_PANE, "outputs_list"));
}

/* The Precision choice: bf16 runs the products by weights in bfloat16 and
 * says so, where the CPU has it; elsewhere the choice is off and says why. */
static void
test_run_pane_precision (void)
{
  GtkWidget *pane = g_object_ref_sink (g_object_new (GRAFT_TYPE_RUN_PANE, NULL));
  g_autoptr(GraftModel) model = matmul_model ();
  GtkDropDown *precision = inspect_template_child (pane, GRAFT_TYPE_RUN_PANE, "precision_dropdown");
  g_autoptr(GError) error = NULL;
  if (!graft_precision_available (GRAFT_PRECISION_BF16, &error))
    {
      g_assert_false (gtk_widget_get_sensitive (GTK_WIDGET (precision)));
      g_assert_nonnull (strstr (gtk_widget_get_tooltip_text (GTK_WIDGET (precision)), "bf16 needs"));
      g_object_unref (pane);
      g_test_skip (error->message);
      return;
    }
  g_assert_true (gtk_widget_get_sensitive (GTK_WIDGET (precision)));
  graft_run_pane_set_model (GRAFT_RUN_PANE (pane), model);
  gtk_spin_button_set_value (inspect_template_child (pane, GRAFT_TYPE_RUN_PANE, "seed_spin"), 3);
  g_autofree char *f32 = run_to_end (GRAFT_RUN_PANE (pane));
  const char *status = inspect_label_text (pane, GRAFT_TYPE_RUN_PANE, "status_label");
  g_assert_nonnull (strstr (status, "Ran in"));
  g_assert_null (strstr (status, "bf16"));
  gtk_drop_down_set_selected (precision, 1);
  g_autofree char *bf16 = run_to_end (GRAFT_RUN_PANE (pane));
  status = inspect_label_text (pane, GRAFT_TYPE_RUN_PANE, "status_label");
  g_test_message ("f32: %s\nbf16: %s\n%s", f32, bf16, status);
  g_assert_nonnull (strstr (status, "weights in bf16"));
  g_assert_true (g_str_has_prefix (bf16, "out float32[2,4]"));
  g_assert_cmpstr (f32, !=, bf16);   /* thirds are not bfloat16 numbers */
  g_object_unref (pane);
}

/* The panel's own list (the drop-downs' popovers hold list views too,
 * over a single selection). */
static GtkWidget *
find_diagnostics_list (GtkWidget *widget)
{
  if (GTK_IS_LIST_VIEW (widget) && GTK_IS_NO_SELECTION (gtk_list_view_get_model (GTK_LIST_VIEW (widget))))
    return widget;
  for (GtkWidget *child = gtk_widget_get_first_child (widget); child != NULL; child = gtk_widget_get_next_sibling (child))
    {
      GtkWidget *found = find_diagnostics_list (child);

      if (found != NULL)
        return found;
    }
  return NULL;
}

static gboolean
wake_up (gpointer user_data)
{
  return G_SOURCE_CONTINUE;
}

static void
on_diagnostic_activated (GtkWidget *panel, gpointer node, gpointer value, gpointer user_data)
{
  *(gpointer *) user_data = node != NULL ? node : value;
}

/* Lint results listed, filtered by rule and severity; a listed row
 * offers Make Dynamic and jumps to its value when activated. */
static void
test_diagnostics_panel (void)
{
  GtkWidget *panel = g_object_ref_sink (g_object_new (GRAFT_TYPE_DIAGNOSTICS_PANEL, NULL));
  GtkWidget *window = gtk_window_new ();
  g_autoptr(GSimpleActionGroup) group = g_simple_action_group_new ();
  g_autoptr(GraftModel) model = relu_model (FALSE);
  g_autoptr(GPtrArray) diagnostics = graft_lint_model (model, NULL);
  GraftDiagnosticsPanel *self = GRAFT_DIAGNOSTICS_PANEL (panel);
  g_autofree char *summary = NULL;
  g_autofree char *labels = NULL;
  g_autofree char *target = NULL;
  const GActionEntry entries[] = { { "edit-operation", record_target, "(sss)" } };
  gint64 deadline = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
  guint wake = g_timeout_add (20, wake_up, NULL);
  gpointer activated = NULL;
  const GraftDiagnostic *diagnostic;
  GtkWidget *button;

  g_action_map_add_action_entries (G_ACTION_MAP (group), entries, G_N_ELEMENTS (entries), &target);
  gtk_widget_insert_action_group (window, "win", G_ACTION_GROUP (group));
  gtk_window_set_default_size (GTK_WINDOW (window), 300, 400);
  gtk_window_set_child (GTK_WINDOW (window), panel);
  g_signal_connect (panel, "item-activated", G_CALLBACK (on_diagnostic_activated), &activated);
  graft_diagnostics_panel_set_diagnostics (self, diagnostics);
  summary = inspect_dup_diagnostics (self);
  g_assert_cmpstr (summary, ==, "warning static-input-dim x");
  labels = dup_labels (panel);
  g_assert_nonnull (strstr (labels, "1 problem\n"));
  /* Hidden (never mapped), the panel builds no rows: a revealer measures
   * its child even while hidden, and rows for every diagnostic stalled
   * the UI thread after each edit of a big model. */
  g_assert_null (find_diagnostics_list (panel));
  /* The list view builds its rows when it is laid out. */
  gtk_window_present (GTK_WINDOW (window));
  while ((button = find_button (panel, "Make _Dynamic")) == NULL && g_get_monotonic_time () < deadline)
    g_main_context_iteration (NULL, TRUE);
  g_source_remove (wake);
  g_assert_nonnull (button);
  g_assert_true (gtk_widget_get_visible (button));
  g_signal_emit_by_name (button, "clicked");
  g_assert_cmpstr (target, ==, "make-dim-dynamic x:0=batch");
  g_signal_emit_by_name (find_diagnostics_list (panel), "activate", 0);
  diagnostic = g_ptr_array_index (diagnostics, 0);
  g_assert_nonnull (activated);
  g_assert_true (activated == (diagnostic->node != NULL ? (gpointer) diagnostic->node : (gpointer) diagnostic->value));
  graft_diagnostics_panel_set_filter (self, "unsupported-op", GRAFT_SEVERITY_INFO);
  g_assert_cmpuint (inspect_uint (self, "n-shown"), ==, 0);
  graft_diagnostics_panel_set_filter (self, NULL, GRAFT_SEVERITY_ERROR);
  g_assert_cmpuint (inspect_uint (self, "n-shown"), ==, 0);
  graft_diagnostics_panel_set_filter (self, "static-input-dim", GRAFT_SEVERITY_WARNING);
  g_assert_cmpuint (inspect_uint (self, "n-shown"), ==, 1);
  graft_diagnostics_panel_set_diagnostics (self, NULL);
  g_assert_cmpuint (inspect_uint (self, "n-shown"), ==, 0);
  gtk_window_destroy (GTK_WINDOW (window));
  g_object_unref (panel);
}

int
main (int argc, char *argv[])
{
  gtk_test_init (&argc, &argv, NULL);

  g_test_add ("/gui/widgets/sidebar-node", Fixture, NULL, fixture_set_up, test_sidebar_node, fixture_tear_down);
  g_test_add ("/gui/widgets/sidebar-cancels-stats", Fixture, NULL, fixture_set_up, test_sidebar_cancels_stats, fixture_tear_down);
  g_test_add ("/gui/widgets/sidebar-value", Fixture, NULL, fixture_set_up, test_sidebar_value, fixture_tear_down);
  g_test_add ("/gui/widgets/sidebar-input-edit", Fixture, NULL, fixture_set_up, test_sidebar_input_edit, fixture_tear_down);
  g_test_add_func ("/gui/widgets/run-pane", test_run_pane);
  g_test_add_func ("/gui/widgets/run-pane-precision", test_run_pane_precision);
  g_test_add_func ("/gui/widgets/diagnostics-panel", test_diagnostics_panel);
  g_test_add ("/gui/widgets/sidebar-model-inputs", Fixture, NULL, fixture_set_up, test_sidebar_model_inputs, fixture_tear_down);
  g_test_add ("/gui/widgets/find-panel", Fixture, NULL, fixture_set_up, test_find_panel, fixture_tear_down);
  g_test_add ("/gui/widgets/breadcrumbs", Fixture, NULL, fixture_set_up, test_breadcrumbs, fixture_tear_down);
  return g_test_run ();
}
