/* Analysis is pure: lint and shape inference only read the model, so that
 * lint, a model run and a layout with its rendering can work on one loaded
 * model at the same time (the GUI checks a model while its graph is shown
 * and a run may be going on). Checked here on real models: what each
 * produces on threads running at once equals what it produces alone, and
 * the model is byte for byte what it was. Registered in the sanitize suite;
 * under ThreadSanitizer (meson setup -Db_sanitize=thread) it reports any
 * data race between them. */
#include "loader.h"
#include "lint/diagnostics.h"
#include "analysis/shape-inference.h"
#include "layout/layout.h"
#include "layout/painter.h"
#include "onnx/writer.h"
#include "runtime/runtime.h"
#include "runtime/rt-tensor.h"
#include "fixtures.h"

#include <string.h>

/* Threads per kind of work, and rounds each of them does. */
#define N_LINT_THREADS 2
#define N_RUN_THREADS 2
#define N_ROUNDS 3

/* ---------- what each piece of work produces, as comparable text ---------- */

static void
append_values_of_graph (GString *out, GraftGraph *graph, GraftInference *inference);

static void
append_subgraphs (GraftNode *node, gpointer user_data)
{
  gpointer *args = user_data;
  g_autoptr(GPtrArray) subgraphs = graft_node_get_subgraphs (node);

  for (guint i = 0; i < subgraphs->len; i++)
    append_values_of_graph (args[0], g_ptr_array_index (subgraphs, i), args[1]);
}

/* Every value's declared type, and its inferred one when inference is
 * given: the whole of what shape inference used to write into a model. */
static void
append_values_of_graph (GString *out, GraftGraph *graph, GraftInference *inference)
{
  g_string_append_printf (out, "graph %s: %u nodes\n", graph->name ? graph->name : "", graph->nodes->len);
  for (guint i = 0; i < graph->values->len; i++)
    {
      GraftValue *value = g_ptr_array_index (graph->values, i);
      g_autofree char *declared = graft_shape_to_string (&value->shape);
      GraftDType dtype;
      const GraftShape *shape;

      g_string_append_printf (out, "%s %d %s %s in=%d out=%d", value->name, value->kind,
                              graft_dtype_to_string (value->dtype), declared, value->is_graph_input,
                              value->is_graph_output);
      if (inference != NULL && graft_inference_lookup (inference, value, &dtype, &shape))
        {
          g_autofree char *inferred = graft_shape_to_string (shape);
          g_string_append_printf (out, " inferred %s %s", graft_dtype_to_string (dtype), inferred);
        }
      g_string_append_c (out, '\n');
    }
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      gpointer args[2] = { out, inference };
      append_subgraphs (g_ptr_array_index (graph->nodes, i), args);
    }
}

static char *
describe_values (GraftModel *model, GraftInference *inference)
{
  GString *out = g_string_new (NULL);

  append_values_of_graph (out, graft_model_get_graph (model), inference);
  return g_string_free (out, FALSE);
}

static char *
lint_fingerprint (GraftModel *model)
{
  g_autoptr(GraftInference) inference = NULL;
  g_autoptr(GPtrArray) diagnostics = graft_lint_model_with_inference (model, NULL, &inference);
  GString *out = g_string_new (NULL);
  g_autofree char *values = describe_values (model, inference);

  for (guint i = 0; i < diagnostics->len; i++)
    {
      GraftDiagnostic *d = g_ptr_array_index (diagnostics, i);
      g_string_append_printf (out, "%s %s %s %s: %s\n", d->rule, graft_severity_to_string (d->severity),
                              d->node_name ? d->node_name : "-", d->value ? d->value->name : "-", d->message);
    }
  g_string_append (out, values);
  return g_string_free (out, FALSE);
}

/* Inputs with a fixed pattern (symbolic dims at 2), so that every run
 * computes the same thing. */
static GHashTable *
make_inputs (GraftRuntime *runtime)
{
  GPtrArray *inputs = graft_runtime_get_inputs (runtime);
  GHashTable *tensors = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                               (GDestroyNotify) graft_rt_tensor_unref);

  for (guint i = 0; i < inputs->len; i++)
    {
      GraftValue *input = g_ptr_array_index (inputs, i);
      gint64 dims[GRAFT_RT_MAX_RANK];
      GraftRtTensor *tensor;

      g_assert_cmpint (input->shape.rank, <=, GRAFT_RT_MAX_RANK);
      for (int d = 0; d < input->shape.rank; d++)
        dims[d] = input->shape.dims[d].kind == GRAFT_DIM_FIXED ? input->shape.dims[d].value : 2;
      tensor = graft_rt_tensor_new (input->dtype, input->shape.rank, dims, NULL);
      g_assert_nonnull (tensor);
      for (gint64 k = 0; k < tensor->numel; k++)
        graft_rt_tensor_set_f64 (tensor, k, graft_dtype_is_integer (input->dtype) ? k % 7 : (double) (k % 13) / 13 - 0.5);
      g_hash_table_insert (tensors, input->name, tensor);
    }
  return tensors;
}

static char *
run_fingerprint (GraftModel *model)
{
  g_autoptr(GError) error = NULL;
  GraftRuntime *runtime = graft_runtime_new (model, &error);
  g_autoptr(GHashTable) inputs = NULL;
  g_autoptr(GPtrArray) outputs = NULL;
  GString *out = g_string_new (NULL);

  g_assert_no_error (error);
  inputs = make_inputs (runtime);
  outputs = graft_runtime_run (runtime, inputs, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  for (guint i = 0; i < outputs->len; i++)
    {
      GraftRtTensor *tensor = g_ptr_array_index (outputs, i);
      g_autofree char *type = graft_rt_tensor_describe (tensor);
      g_autofree char *sum = g_compute_checksum_for_data (G_CHECKSUM_SHA256, tensor->data, tensor->nbytes);

      g_string_append_printf (out, "%s %s\n", type, sum);
    }
  g_clear_pointer (&outputs, g_ptr_array_unref);
  graft_runtime_free (runtime);
  return g_string_free (out, FALSE);
}

/* Lays the graph out fully expanded, edges labelled with inference's
 * shapes, and paints it: the scene's geometry and labels, and the pixels. */
static char *
render_fingerprint (GraftModel *model, GraftInference *inference)
{
  g_autoptr(GraftLayout) layout = graft_layout_new (graft_model_get_graph (model));
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftScene) scene = NULL;
  GraftPaintOptions paint = { .paint_background = TRUE };
  GraftRect bounds;
  GString *out = g_string_new (NULL);
  cairo_surface_t *surface;
  cairo_t *cr;
  g_autofree char *pixels = NULL;

  graft_layout_set_model (layout, model);
  graft_layout_set_inference (layout, inference);
  graft_layout_expand_all (layout);
  scene = graft_layout_compute (layout, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  graft_scene_get_bounds (scene, &bounds);
  g_string_append_printf (out, "%u nodes %u edges %.2f×%.2f\n", graft_scene_get_n_nodes (scene),
                          graft_scene_get_n_edges (scene), bounds.width, bounds.height);
  for (guint i = 0; i < graft_scene_get_n_edges (scene); i++)
    {
      GraftSceneEdge *edge = graft_scene_get_edge (scene, i);
      g_string_append_printf (out, "%s%s ", edge->label ? edge->label : "-", edge->label_inferred ? "*" : "");
    }

  /* A fixed window of the scene at a fixed scale: the work of a canvas. */
  surface = cairo_image_surface_create (CAIRO_FORMAT_ARGB32, 600, 800);
  cr = cairo_create (surface);
  graft_painter_paint (cr, scene, &bounds, &paint);
  cairo_surface_flush (surface);
  pixels = g_compute_checksum_for_data (G_CHECKSUM_SHA256, cairo_image_surface_get_data (surface),
                                        (gsize) cairo_image_surface_get_stride (surface) * 800);
  g_string_append_printf (out, "\npixels %s\n", pixels);
  cairo_destroy (cr);
  cairo_surface_destroy (surface);
  return g_string_free (out, FALSE);
}

/* ---------- the model, before and after ---------- */

typedef struct {
  GBytes *serialised;   /* the ONNX writer's bytes */
  char *values;         /* every value's declared type */
} Snapshot;

static void
snapshot_take (Snapshot *snapshot, GraftModel *model)
{
  g_autoptr(GError) error = NULL;

  snapshot->serialised = graft_onnx_model_to_bytes (model, &error);
  g_assert_no_error (error);
  snapshot->values = describe_values (model, NULL);
}

static void
snapshot_assert_unchanged (Snapshot *before, GraftModel *model)
{
  Snapshot after;

  snapshot_take (&after, model);
  g_assert_cmpstr (after.values, ==, before->values);
  g_assert_true (g_bytes_equal (after.serialised, before->serialised));
  g_bytes_unref (after.serialised);
  g_free (after.values);
}

static void
snapshot_clear (Snapshot *snapshot)
{
  g_clear_pointer (&snapshot->serialised, g_bytes_unref);
  g_clear_pointer (&snapshot->values, g_free);
}

/* ---------- the threads ---------- */

typedef enum { WORK_LINT, WORK_RUN, WORK_RENDER } WorkKind;

typedef struct {
  WorkKind kind;
  GraftModel *model;
  GraftInference *inference;    /* shared by the render threads: read only */
  const char *expected;
  guint n_mismatches;
  char *first_mismatch;
} Work;

static gpointer
work_thread (gpointer data)
{
  Work *work = data;

  for (guint round = 0; round < N_ROUNDS; round++)
    {
      g_autofree char *result = work->kind == WORK_LINT ? lint_fingerprint (work->model)
                              : work->kind == WORK_RUN ? run_fingerprint (work->model)
                              : render_fingerprint (work->model, work->inference);

      if (strcmp (result, work->expected) != 0 && work->n_mismatches++ == 0)
        work->first_mismatch = g_steal_pointer (&result);
    }
  return NULL;
}

/* Whether inference typed a node output of the main graph. */
static gboolean
inferred_any_output (GraftModel *model, GraftInference *inference)
{
  GraftGraph *graph = graft_model_get_graph (model);

  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);

      for (guint k = 0; k < node->outputs->len; k++)
        if (g_ptr_array_index (node->outputs, k) != NULL
            && graft_inference_lookup (inference, g_ptr_array_index (node->outputs, k), NULL, NULL))
          return TRUE;
    }
  return FALSE;
}

static GraftModel *
load (const char *path)
{
  g_autoptr(GError) error = NULL;
  GraftModel *model = graft_model_load (path, NULL, NULL, NULL, &error);

  g_assert_no_error (error);
  g_assert_nonnull (graft_model_get_graph (model));
  return model;
}

/* expected_rule: a lint rule the model must trip (so that its search ran),
 * or NULL. */
static void
check_concurrent (const char *path, const char *expected_rule)
{
  g_autoptr(GraftModel) model = load (path);
  g_autoptr(GraftInference) inference = graft_shape_inference_run (model, NULL);
  g_autofree char *lint_alone = NULL, *run_alone = NULL, *render_alone = NULL;
  Work works[N_LINT_THREADS + N_RUN_THREADS + 1];
  GThread *threads[G_N_ELEMENTS (works)];
  Snapshot before;

  snapshot_take (&before, model);
  lint_alone = lint_fingerprint (model);
  run_alone = run_fingerprint (model);
  render_alone = render_fingerprint (model, inference);
  snapshot_assert_unchanged (&before, model);
  /* Lint found something to probe for, and inference something to add. */
  g_assert_true (inferred_any_output (model, inference));
  g_assert_nonnull (strstr (render_alone, "*"));
  if (expected_rule != NULL)
    g_assert_nonnull (strstr (lint_alone, expected_rule));

  for (guint i = 0; i < G_N_ELEMENTS (works); i++)
    {
      works[i] = (Work) { i < N_LINT_THREADS ? WORK_LINT : i < N_LINT_THREADS + N_RUN_THREADS ? WORK_RUN
                                                                                            : WORK_RENDER,
                          model, inference };
      works[i].expected = works[i].kind == WORK_LINT ? lint_alone : works[i].kind == WORK_RUN ? run_alone
                                                                                             : render_alone;
    }
  for (guint i = 0; i < G_N_ELEMENTS (works); i++)
    threads[i] = g_thread_new ("work", work_thread, &works[i]);
  for (guint i = 0; i < G_N_ELEMENTS (works); i++)
    g_thread_join (threads[i]);

  for (guint i = 0; i < G_N_ELEMENTS (works); i++)
    {
      if (works[i].n_mismatches > 0)
        g_test_message ("work %u (kind %d) differed %u times; first:\n%s", i, works[i].kind,
                        works[i].n_mismatches, works[i].first_mismatch);
      g_assert_cmpuint (works[i].n_mismatches, ==, 0);
    }
  snapshot_assert_unchanged (&before, model);
  snapshot_clear (&before);
}

static char *
rewrite_fixture (const char *name)
{
  static char *dir;

  if (dir == NULL)
    dir = graft_test_generate_fixtures ("tests/fixtures/make-rewrite-fixtures.py",
                                        "tests/fixtures-generated/rewrite", NULL);
  return g_build_filename (dir, name, NULL);
}

/* A 2-layer batch_first TransformerEncoder exported with batch 2: lint
 * probes its baked batch through every attention Reshape. */
static void
test_concurrent_transformer (void)
{
  g_autofree char *path = rewrite_fixture ("encoder-bf-b2.onnx");

  check_concurrent (path, "baked-shape-constant");
}

/* The committed residual CNN sample (dynamic batch). */
static void
test_concurrent_cnn (void)
{
  g_autofree char *path = graft_test_source_path ("data/samples/tiny-cnn.onnx");

  check_concurrent (path, NULL);
}

/* Lint, inference and the baked-shape search alone leave the model as it
 * was, for a model where the search has many probes to make. */
static void
test_analysis_leaves_model_unchanged (void)
{
  g_autofree char *path = rewrite_fixture ("gpt2-b2.onnx");
  g_autoptr(GraftModel) model = load (path);
  g_autoptr(GPtrArray) diagnostics = NULL;
  g_autoptr(GraftInference) inference = NULL;
  guint n_baked = 0;
  Snapshot before;

  snapshot_take (&before, model);
  diagnostics = graft_lint_model_with_inference (model, NULL, &inference);
  for (guint i = 0; i < diagnostics->len; i++)
    n_baked += g_str_equal (((GraftDiagnostic *) g_ptr_array_index (diagnostics, i))->rule, "baked-shape-constant");
  g_assert_cmpuint (n_baked, >, 0);
  g_assert_true (inferred_any_output (model, inference));
  snapshot_assert_unchanged (&before, model);
  snapshot_clear (&before);
}

int
main (int argc, char *argv[])
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/concurrent/cnn", test_concurrent_cnn);
  g_test_add_func ("/concurrent/transformer", test_concurrent_transformer);
  g_test_add_func ("/concurrent/analysis-leaves-model-unchanged", test_analysis_leaves_model_unchanged);
  return g_test_run ();
}
