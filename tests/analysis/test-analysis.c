/* Shape inference with symbolic dims, and each lint rule, on small
 * hand-built models (ONNX and TorchScript IR). */
#include <string.h>
#include "analysis/baked-shape.h"
#include "lint/diagnostics.h"
#include "lint/lint-rules.h"
#include "analysis/dim-check.h"
#include "analysis/shape-inference.h"
#include "ir/graph-surgery.h"
#include "ir/sym-dim.h"

static void
set_shape (GraftValue *value, GraftDType dtype, int rank, const char *const *dims)
{
  value->dtype = dtype;
  graft_shape_clear (&value->shape);
  graft_shape_init (&value->shape, rank);
  for (int i = 0; i < rank; i++)
    {
      char *end = NULL;
      gint64 n = g_ascii_strtoll (dims[i], &end, 10);
      value->shape.dims[i] = *end == '\0' ? graft_dim_fixed (n) : graft_dim_symbolic (dims[i]);
    }
}

static GraftValue *
add_node (GraftGraph *graph, const char *domain, const char *op, const char *name, GraftValue *a, GraftValue *b)
{
  GraftNode *node = graft_graph_add_node (graph, domain, op, name);
  GraftValue *out = graft_graph_new_anonymous_value (graph, op);

  if (a != NULL)
    graft_node_add_input (node, a);
  if (b != NULL)
    graft_node_add_input (node, b);
  graft_node_add_output (node, out);
  return out;
}

static GraftValue *
int_constant (GraftGraph *graph, const char *name, const gint64 *values, guint n)
{
  GraftValue *value = graft_graph_ensure_value (graph, name);
  gint64 dims[1] = { n };
  GraftTensor *tensor = graft_tensor_new (name, GRAFT_DTYPE_INT64, 1, dims);
  g_autoptr(GBytes) bytes = g_bytes_new (values, 8 * n);

  g_assert_true (graft_tensor_set_data (tensor, bytes, NULL));
  graft_graph_add_initializer (graph, value, tensor);
  return value;
}

static void
assert_inferred (GraftInference *inference, GraftValue *value, const char *expected)
{
  const GraftShape *shape = graft_inference_get_shape (inference, value);
  g_autofree char *text = NULL;

  g_assert_nonnull (shape);
  text = graft_shape_to_string (shape);
  g_assert_cmpstr (text, ==, expected);
}

static void
test_sym_dim (void)
{
  GraftDim batch = graft_dim_symbolic ("batch");
  GraftDim two = graft_dim_fixed (2);
  GraftDim doubled = graft_dim_multiply (batch, two);
  GraftDim back = graft_dim_divide (doubled, two);
  GraftDim seq = graft_dim_symbolic ("seq");
  GraftDim area = graft_dim_multiply (graft_dim_multiply (seq, batch), graft_dim_fixed (8));

  g_assert_cmpint (doubled.kind, ==, GRAFT_DIM_SYMBOLIC);
  g_assert_cmpstr (doubled.symbol, ==, "batch*2");
  g_assert_true (graft_dim_equal (&back, &batch));
  g_assert_cmpstr (area.symbol, ==, "batch*seq*8");
  g_assert_cmpstr (graft_dim_divide (area, graft_dim_symbolic ("seq*4")).symbol, ==, "batch*2");
  g_assert_cmpint (graft_dim_divide (batch, two).kind, ==, GRAFT_DIM_UNKNOWN);
  g_assert_cmpint (graft_dim_divide (graft_dim_fixed (6), graft_dim_fixed (4)).kind, ==, GRAFT_DIM_UNKNOWN);
  g_assert_cmpint (graft_dim_multiply (batch, graft_dim_unknown ()).kind, ==, GRAFT_DIM_UNKNOWN);
  g_assert_true (graft_dim_mentions (&area, "seq"));
  g_assert_false (graft_dim_mentions (&area, "se"));
  /* sums of like terms only: Concat of two inputs sharing a batch */
  g_assert_cmpstr (graft_dim_add (batch, batch).symbol, ==, "batch*2");
  g_assert_cmpstr (graft_dim_add (doubled, batch).symbol, ==, "batch*3");
  g_assert_cmpint (graft_dim_add (batch, seq).kind, ==, GRAFT_DIM_UNKNOWN);
  g_assert_cmpint (graft_dim_add (batch, two).kind, ==, GRAFT_DIM_UNKNOWN);
  g_assert_cmpint (graft_dim_add (two, graft_dim_fixed (3)).value, ==, 5);
  {
    g_autoptr(GHashTable) sizes = g_hash_table_new (g_str_hash, g_str_equal);
    gint64 three = 3, five = 5, size = 0;

    g_hash_table_insert (sizes, "batch", &three);
    g_hash_table_insert (sizes, "seq", &five);
    g_assert_true (graft_dim_evaluate (area, sizes, &size));
    g_assert_cmpint (size, ==, 120);
    g_assert_true (graft_dim_evaluate (two, sizes, &size));
    g_assert_cmpint (size, ==, 2);
    g_assert_false (graft_dim_evaluate (graft_dim_symbolic ("heads"), sizes, &size));
    g_assert_false (graft_dim_evaluate (graft_dim_unknown (), sizes, &size));
  }
}

/* torch 2.x attention rebuilds a shape as Shape(x)[:(2 % 3)] ++ [3, 4]:
 * the symbols must survive Mod and Slice of the shape vector. */
static void
test_shape_vector_slice (void)
{
  g_autoptr(GraftModel) model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *graph = graft_graph_new ("g");
  GraftValue *x = graft_graph_ensure_value (graph, "x");
  GraftValue *shape, *end, *head, *target, *reshaped;
  g_autoptr(GraftInference) inference = NULL;
  gint64 two = 2, three = 3, zero = 0, tail[] = { 3, 4 };
  GraftShapeInferenceReport report;

  graft_model_set_opset (model, "", 14);
  set_shape (x, GRAFT_DTYPE_FLOAT32, 3, (const char *[]) { "seq", "batch", "12" });
  graft_graph_add_input (graph, x);
  shape = add_node (graph, "", "Shape", "shape", x, NULL);
  end = add_node (graph, "", "Mod", "mod", int_constant (graph, "two", &two, 1), int_constant (graph, "three", &three, 1));
  head = add_node (graph, "", "Slice", "slice", shape, int_constant (graph, "zero", &zero, 1));
  graft_node_add_input (head->producer, end);
  target = add_node (graph, "", "Concat", "concat", head, int_constant (graph, "tail", tail, 2));
  graft_node_add_attribute (target->producer, graft_attribute_new_int ("axis", 0));
  reshaped = add_node (graph, "", "Reshape", "reshape", x, target);
  graft_graph_add_output (graph, reshaped);
  graft_model_set_graph (model, graph);

  inference = graft_shape_inference_run (model, &report);
  g_assert_cmpuint (report.problems->len, ==, 0);
  assert_inferred (inference, head, "2");
  assert_inferred (inference, reshaped, "seq×batch×3×4");
  graft_shape_inference_report_clear (&report);
}

/* x[batch, 12] → Reshape(target) → Relu → y, for the dim check. */
static GraftModel *
reshape_model (const gint64 *target, guint n)
{
  GraftModel *model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *graph = graft_graph_new ("g");
  GraftValue *x = graft_graph_ensure_value (graph, "x");
  GraftValue *r, *y;

  graft_model_set_opset (model, "", 14);
  set_shape (x, GRAFT_DTYPE_FLOAT32, 2, (const char *[]) { "batch", "12" });
  graft_graph_add_input (graph, x);
  r = add_node (graph, "", "Reshape", "/reshape", x, int_constant (graph, "target", target, n));
  y = add_node (graph, "", "Relu", "/relu", r, NULL);
  graft_graph_add_output (graph, y);
  graft_model_set_graph (model, graph);
  return model;
}

static gboolean
lines_mention (GraftDimCheck *check, const char *text)
{
  for (guint i = 0; i < check->lines->len; i++)
    if (strstr (g_ptr_array_index (check->lines, i), text) != NULL)
      return TRUE;
  return FALSE;
}

/* A right repair passes at 1 and a prime, samples kept apart; the check
 * only reads the model (no inferred shapes left on it). */
static void
test_dim_check_passes (void)
{
  gint64 target[] = { -1, 3, 4 };
  g_autoptr(GraftModel) model = reshape_model (target, 3);
  GraftDimCheckDim dim = { "x", 0, 2, TRUE };
  g_autoptr(GraftDimCheck) check = graft_dim_check_run (model, &dim, 1, NULL);
  GraftGraph *graph = graft_model_get_graph (model);

  g_assert_nonnull (check);
  g_assert_true (check->passed);
  g_assert_true (check->complete);
  g_assert_null (check->failure);
  g_assert_cmpuint (check->n_runs, >=, 2 + 5);
  g_assert_true (lines_mention (check, "runtime at batch=1"));
  g_assert_true (lines_mention (check, "runtime at batch=5"));
  g_assert_true (lines_mention (check, "y batch×3×4") || lines_mention (check, "5×3×4"));
  g_assert_true (lines_mention (check, "batch invariance at batch=5"));
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      g_assert_cmpint (((GraftValue *) g_ptr_array_index (node->outputs, 0))->shape.rank, <, 0);
    }
  g_assert_cmpstr (((GraftValue *) g_ptr_array_index (graph->inputs, 0))->shape.dims[0].symbol, ==, "batch");
}

/* A constant still holding the traced batch of 2: the check fails at
 * batch 1 and names the node and the constant. */
static void
test_dim_check_names_stale_constant (void)
{
  gint64 target[] = { 2, 3, 4 };
  g_autoptr(GraftModel) model = reshape_model (target, 3);
  GraftDimCheckDim dim = { "x", 0, 2, TRUE };
  g_autoptr(GraftDimCheck) check = graft_dim_check_run (model, &dim, 1, NULL);
  g_autoptr(GError) error = NULL;
  GraftDimCheckDim missing = { "nope", 0, 2, FALSE };

  g_assert_nonnull (check);
  g_assert_false (check->passed);
  g_assert_nonnull (strstr (check->failure, "batch=1"));
  g_assert_nonnull (strstr (check->failure, "'/reshape'"));
  g_assert_nonnull (strstr (check->failure, "'target' = [2, 3, 4]"));
  g_assert_nonnull (strstr (check->failure, "batch's traced size 2"));
  g_assert_cmpstr (check->failed_node, ==, "/reshape");
  g_assert_true (lines_mention (check, "FAILED: "));

  g_assert_null (graft_dim_check_run (model, &missing, 1, &error));
  g_assert_nonnull (strstr (error->message, "'nope'"));
}

/* x[batch, 12] → ReduceMean over the batch → [12]: every run works, and
 * no output follows the batch, which for a batch is a failure. */
static void
test_dim_check_batch_reaches_no_output (void)
{
  g_autoptr(GraftModel) model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *graph = graft_graph_new ("g");
  GraftValue *x = graft_graph_ensure_value (graph, "x");
  GraftValue *mean;
  gint64 axes[] = { 0 };
  GraftDimCheckDim batch = { "x", 0, 2, TRUE }, rows = { "x", 0, 2, FALSE };
  g_autoptr(GraftDimCheck) as_batch = NULL, as_rows = NULL;

  graft_model_set_opset (model, "", 14);
  set_shape (x, GRAFT_DTYPE_FLOAT32, 2, (const char *[]) { "batch", "12" });
  graft_graph_add_input (graph, x);
  mean = add_node (graph, "", "ReduceMean", "/mean", x, NULL);
  graft_node_add_attribute (mean->producer, graft_attribute_new_ints ("axes", axes, 1));
  graft_node_add_attribute (mean->producer, graft_attribute_new_int ("keepdims", 0));
  graft_graph_add_output (graph, mean);
  graft_model_set_graph (model, graph);

  as_batch = graft_dim_check_run (model, &batch, 1, NULL);
  g_assert_false (as_batch->passed);
  g_assert_nonnull (strstr (as_batch->failure, "batch reaches no output"));
  /* Not called a batch, a dim may be reduced away: said, not failed. */
  as_rows = graft_dim_check_run (model, &rows, 1, NULL);
  g_assert_true (as_rows->passed);
  g_assert_true (lines_mention (as_rows, "reaches no output shape"));
}

/* x[batch, 4] → Reshape [4, -1] → Softmax over that -1 → Reshape [-1, 4]:
 * every shape is right at any batch, but samples mix. Only the batch
 * invariance check sees it. */
static void
test_dim_check_catches_mixed_samples (void)
{
  g_autoptr(GraftModel) model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *graph = graft_graph_new ("g");
  GraftValue *x = graft_graph_ensure_value (graph, "x");
  GraftValue *across, *soft, *back;
  gint64 wrong[] = { 4, -1 }, right[] = { -1, 4 };
  GraftDimCheckDim dim = { "x", 0, 2, TRUE };
  g_autoptr(GraftDimCheck) check = NULL;

  graft_model_set_opset (model, "", 14);
  set_shape (x, GRAFT_DTYPE_FLOAT32, 2, (const char *[]) { "batch", "4" });
  graft_graph_add_input (graph, x);
  across = add_node (graph, "", "Reshape", "/across", x, int_constant (graph, "wrong", wrong, 2));
  soft = add_node (graph, "", "Softmax", "/softmax", across, NULL);
  graft_node_add_attribute (soft->producer, graft_attribute_new_int ("axis", 1));
  back = add_node (graph, "", "Reshape", "/back", soft, int_constant (graph, "right", right, 2));
  graft_graph_add_output (graph, back);
  graft_model_set_graph (model, graph);

  check = graft_dim_check_run (model, &dim, 1, NULL);
  g_assert_nonnull (check);
  g_assert_false (check->passed);
  g_assert_true (lines_mention (check, "runtime at batch=5 on random inputs: runs"));
  g_assert_nonnull (strstr (check->failure, "mixes samples"));
}

/* x[batch,3,8,8] → Conv(8,3x3,pad 1) → Flatten → Shape/Gather/Concat →
 * Reshape: symbols follow through ops and through shape vectors. */
static void
test_symbolic_inference (void)
{
  g_autoptr(GraftModel) model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *graph = graft_graph_new ("g");
  GraftValue *x = graft_graph_ensure_value (graph, "x");
  GraftValue *w = graft_graph_ensure_value (graph, "w");
  GraftValue *conv, *flat, *shape, *dim0, *concat, *reshaped, *doubled;
  g_autoptr(GraftInference) inference = NULL;
  GraftNode *node;
  gint64 w_dims[] = { 8, 3, 3, 3 };
  GraftTensor *weights = graft_tensor_new ("w", GRAFT_DTYPE_FLOAT32, 4, w_dims);
  g_autoptr(GBytes) zeros = g_bytes_new_take (g_malloc0 (8 * 27 * 4), 8 * 27 * 4);
  GraftShapeInferenceReport report;
  gint64 pads[] = { 1, 1, 1, 1 };
  gint64 zero = 0, minus_one = -1, two = 2;

  graft_model_set_opset (model, "", 13);
  set_shape (x, GRAFT_DTYPE_FLOAT32, 4, (const char *[]) { "batch", "3", "8", "8" });
  graft_graph_add_input (graph, x);
  g_assert_true (graft_tensor_set_data (weights, zeros, NULL));
  graft_graph_add_initializer (graph, w, weights);

  conv = add_node (graph, "", "Conv", "conv", x, w);
  node = conv->producer;
  graft_node_add_attribute (node, graft_attribute_new_ints ("pads", pads, 4));
  flat = add_node (graph, "", "Flatten", "flatten", conv, NULL);
  shape = add_node (graph, "", "Shape", "shape", x, NULL);
  dim0 = add_node (graph, "", "Gather", "gather", shape, int_constant (graph, "zero", &zero, 1));
  concat = add_node (graph, "", "Concat", "concat", dim0, int_constant (graph, "minus_one", &minus_one, 1));
  graft_node_add_attribute (concat->producer, graft_attribute_new_int ("axis", 0));
  reshaped = add_node (graph, "", "Reshape", "reshape", conv, concat);
  doubled = add_node (graph, "", "Mul", "mul", dim0, int_constant (graph, "two", &two, 1));
  graft_graph_add_output (graph, reshaped);
  graft_model_set_graph (model, graph);

  inference = graft_shape_inference_run (model, &report);
  g_assert_cmpuint (report.n_nodes, ==, 7);
  g_assert_cmpuint (report.problems->len, ==, 0);
  assert_inferred (inference, conv, "batch×8×8×8");
  assert_inferred (inference, flat, "batch×512");
  assert_inferred (inference, shape, "4");
  assert_inferred (inference, reshaped, "batch×512");
  g_assert_cmpstr (g_array_index (graft_inference_get_data (inference, doubled), GraftDim, 0).symbol, ==, "batch*2");
  /* Declared shapes are never touched. */
  g_assert_cmpint (conv->shape.rank, ==, -1);
  graft_shape_inference_report_clear (&report);
}

/* An If whose branch reads an outer value: the branch is inferred too. */
static void
test_subgraph_inference (void)
{
  g_autoptr(GraftModel) model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *graph = graft_graph_new ("g");
  GraftGraph *branch = graft_graph_new ("then");
  GraftValue *x = graft_graph_ensure_value (graph, "x");
  GraftValue *cond = graft_graph_ensure_value (graph, "cond");
  GraftValue *relu, *inner;
  GraftNode *iff;
  g_autoptr(GraftInference) inference = NULL;

  graft_model_set_opset (model, "", 13);
  set_shape (x, GRAFT_DTYPE_FLOAT32, 2, (const char *[]) { "batch", "4" });
  set_shape (cond, GRAFT_DTYPE_BOOL, 0, NULL);
  graft_graph_add_input (graph, x);
  graft_graph_add_input (graph, cond);
  relu = add_node (graph, "", "Relu", "relu", x, NULL);
  iff = graft_graph_add_node (graph, "", "If", "if");
  graft_node_add_input (iff, cond);
  inner = add_node (branch, "", "Neg", "neg", relu, NULL);
  graft_graph_add_output (branch, inner);
  graft_node_add_attribute (iff, graft_attribute_new_graph ("then_branch", branch));
  graft_node_adopt_subgraph (iff, branch);
  graft_node_add_output (iff, graft_graph_ensure_value (graph, "out"));
  graft_graph_add_output (graph, graft_graph_lookup_value (graph, "out"));
  graft_model_set_graph (model, graph);

  inference = graft_shape_inference_run (model, NULL);
  assert_inferred (inference, inner, "batch×4");
}

static GraftDiagnostic *
find (GPtrArray *diagnostics, const char *rule, GraftSeverity severity)
{
  for (guint i = 0; i < diagnostics->len; i++)
    {
      GraftDiagnostic *d = g_ptr_array_index (diagnostics, i);
      if (strcmp (d->rule, rule) == 0 && d->severity == severity)
        return d;
    }
  return NULL;
}

static void
test_onnx_rules (void)
{
  g_autoptr(GraftModel) model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *graph = graft_graph_new ("g");
  GraftValue *x = graft_graph_ensure_value (graph, "x");
  GraftValue *tokens = graft_graph_ensure_value (graph, "tokens");
  GraftValue *r, *y;
  gint64 target[] = { 3, -1 };
  g_autoptr(GPtrArray) diagnostics = NULL;
  g_autoptr(GraftInference) inference = NULL;
  GraftDiagnostic *d;

  graft_model_set_opset (model, "", 13);
  set_shape (x, GRAFT_DTYPE_FLOAT32, 2, (const char *[]) { "3", "16" });
  set_shape (tokens, GRAFT_DTYPE_INT64, 2, (const char *[]) { "batch", "128" });
  graft_graph_add_input (graph, x);
  graft_graph_add_input (graph, tokens);
  r = add_node (graph, "", "Reshape", "/reshape", x, int_constant (graph, "target", target, 2));
  y = add_node (graph, "com.example", "Fancy", "/fancy", r, NULL);
  add_node (graph, "ai.other", "Thing", "/thing", tokens, NULL);
  graft_graph_add_output (graph, y);
  graft_model_set_graph (model, graph);

  diagnostics = graft_lint_model_with_inference (model, NULL, &inference);
  g_assert_true (graft_diagnostics_have_errors (diagnostics));
  /* Errors come first. */
  g_assert_cmpint (((GraftDiagnostic *) g_ptr_array_index (diagnostics, 0))->severity, ==, GRAFT_SEVERITY_ERROR);

  d = find (diagnostics, "unsupported-op", GRAFT_SEVERITY_ERROR);
  g_assert_nonnull (d);
  g_assert_cmpstr (d->node_name, ==, "/fancy");
  g_assert_nonnull (strstr (d->message, "com.example"));

  d = find (diagnostics, "static-input-dim", GRAFT_SEVERITY_WARNING);
  g_assert_nonnull (d);
  g_assert_true (d->value == x);
  g_assert_cmpint (d->axis, ==, 0);
  g_assert_nonnull (strstr (d->message, "--dynamic x:0=batch"));

  d = find (diagnostics, "baked-shape-constant", GRAFT_SEVERITY_WARNING);
  g_assert_nonnull (d);
  g_assert_cmpstr (d->node_name, ==, "/reshape");
  g_assert_cmpstr (d->value->name, ==, "target");
  g_assert_nonnull (strstr (d->message, "[3, -1]"));

  /* The token input's sequence length, not its (dynamic) batch. */
  {
    gboolean seen_sequence = FALSE;
    for (guint i = 0; i < diagnostics->len; i++)
      {
        GraftDiagnostic *e = g_ptr_array_index (diagnostics, i);
        if (strcmp (e->rule, "static-input-dim") == 0 && e->value == tokens)
          {
            g_assert_cmpint (e->axis, ==, 1);
            seen_sequence = TRUE;
          }
      }
    g_assert_true (seen_sequence);
  }
  /* The inference lint returns has the real shapes, not the probe's, and
   * the declared ones were not touched. */
  assert_inferred (inference, r, "3×16");
  g_assert_cmpint (x->shape.dims[0].kind, ==, GRAFT_DIM_FIXED);
  g_assert_cmpint (x->shape.dims[0].value, ==, 3);
  g_assert_cmpint (r->shape.rank, <, 0);
}

/* x[2, 16] traced with batch 2: MatMul, Reshape to [2, 4, 4] and back to
 * [2, 16] (two baked constants, the second seen only once the first is
 * taken as repaired), a Reshape whose target is built from Shape(x), and an
 * If whose body reads the result. */
static GraftModel *
baked_chain_model (GraftValue **input)
{
  GraftModel *model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *graph = graft_graph_new ("g");
  GraftGraph *branch = graft_graph_new ("then");
  GraftValue *x = graft_graph_ensure_value (graph, "x");
  GraftValue *cond = graft_graph_ensure_value (graph, "cond");
  GraftValue *weight = graft_graph_ensure_value (graph, "weight");
  GraftValue *m, *r1, *r2, *batch, *target, *r3;
  GraftNode *iff, *gather, *concat;

  graft_model_set_opset (model, "", 13);
  set_shape (x, GRAFT_DTYPE_FLOAT32, 2, (const char *[]) { "2", "16" });
  set_shape (weight, GRAFT_DTYPE_FLOAT32, 2, (const char *[]) { "16", "16" });
  set_shape (cond, GRAFT_DTYPE_BOOL, 0, NULL);
  graft_graph_add_input (graph, x);
  graft_graph_add_input (graph, weight);
  graft_graph_add_input (graph, cond);
  m = add_node (graph, "", "MatMul", "/matmul", x, weight);
  r1 = add_node (graph, "", "Reshape", "/reshape1", m, int_constant (graph, "target1", (gint64[]) { 2, 4, 4 }, 3));
  r2 = add_node (graph, "", "Reshape", "/reshape2", add_node (graph, "", "Relu", "/relu", r1, NULL),
                 int_constant (graph, "target2", (gint64[]) { 2, 16 }, 2));
  batch = add_node (graph, "", "Gather", "/gather", add_node (graph, "", "Shape", "/shape", x, NULL),
                    int_constant (graph, "zero", (gint64[]) { 0 }, 1));
  gather = batch->producer;
  graft_node_add_attribute (gather, graft_attribute_new_int ("axis", 0));
  target = add_node (graph, "", "Concat", "/concat", batch, int_constant (graph, "sixteen", (gint64[]) { 16 }, 1));
  concat = target->producer;
  graft_node_add_attribute (concat, graft_attribute_new_int ("axis", 0));
  r3 = add_node (graph, "", "Reshape", "/reshape3", r2, target);
  iff = graft_graph_add_node (graph, "", "If", "/if");
  graft_node_add_input (iff, cond);
  graft_graph_add_output (branch, add_node (branch, "", "Neg", "/if/neg", r3, NULL));
  graft_node_add_attribute (iff, graft_attribute_new_graph ("then_branch", branch));
  graft_node_adopt_subgraph (iff, branch);
  graft_node_add_output (iff, graft_graph_ensure_value (graph, "out"));
  graft_graph_add_output (graph, graft_graph_lookup_value (graph, "out"));
  graft_model_set_graph (model, graph);
  *input = x;
  return model;
}

typedef struct {
  GraftInference *expected, *actual;
  guint n_values;
} SameInference;

static void
assert_same_value (SameInference *same, GraftValue *value)
{
  GraftDType expected_dtype = GRAFT_DTYPE_UNDEFINED, actual_dtype = GRAFT_DTYPE_UNDEFINED;
  const GraftShape *expected_shape = NULL, *actual_shape = NULL;
  GArray *expected_data, *actual_data;

  if (value == NULL)
    return;
  g_assert_cmpint (graft_inference_lookup (same->expected, value, &expected_dtype, &expected_shape), ==,
                   graft_inference_lookup (same->actual, value, &actual_dtype, &actual_shape));
  g_assert_cmpint (expected_dtype, ==, actual_dtype);
  if (expected_shape != NULL)
    g_assert_true (graft_shape_equal (expected_shape, actual_shape));
  expected_data = graft_inference_get_data (same->expected, value);
  actual_data = graft_inference_get_data (same->actual, value);
  g_assert_cmpint (expected_data == NULL, ==, actual_data == NULL);
  for (guint i = 0; expected_data != NULL && i < expected_data->len; i++)
    g_assert_true (graft_dim_equal (&g_array_index (expected_data, GraftDim, i),
                                    &g_array_index (actual_data, GraftDim, i)));
  same->n_values++;
}

static void
assert_same_node (GraftNode *node, gpointer user_data)
{
  for (guint i = 0; i < node->inputs->len; i++)
    assert_same_value (user_data, g_ptr_array_index (node->inputs, i));
  for (guint i = 0; i < node->outputs->len; i++)
    assert_same_value (user_data, g_ptr_array_index (node->outputs, i));
}

/* A probe's run over the plain inference (only what the probe changes is
 * inferred again) says of every value what a whole run says. */
static void
test_inference_over_base (void)
{
  GraftValue *x;
  g_autoptr(GraftModel) model = baked_chain_model (&x);
  g_autoptr(GraftInference) plain = graft_shape_inference_run (model, NULL);
  g_autoptr(GHashTable) probe = g_hash_table_new_full (NULL, NULL, NULL, (GDestroyNotify) graft_shape_free);
  g_autoptr(GraftInference) whole = NULL;
  g_autoptr(GraftInference) over = NULL;
  GraftShape *probed = g_new0 (GraftShape, 1);
  GraftShapeInferenceOptions options = { .input_shapes = probe };
  SameInference same;

  graft_shape_copy (probed, &x->shape);
  probed->dims[0] = graft_dim_symbolic ("probe");
  g_hash_table_insert (probe, x, probed);
  whole = graft_shape_inference_run_full (model, &options);
  options.base = plain;
  over = graft_shape_inference_run_full (model, &options);
  same = (SameInference) { whole, over, 0 };
  /* Every value an inference can type (graph inputs, node inputs and
   * outputs, in the bodies too) reads the same from both, typed or not. */
  for (guint i = 0; i < graft_model_get_graph (model)->inputs->len; i++)
    assert_same_value (&same, g_ptr_array_index (graft_model_get_graph (model)->inputs, i));
  graft_graph_foreach_node_recursive (graft_model_get_graph (model), assert_same_node, &same);
  g_assert_cmpuint (same.n_values, >, 20);
  /* The probe reached the MatMul's output, and stopped at the baked Reshape. */
  assert_inferred (over, g_ptr_array_index (graft_graph_find_node (graft_model_get_graph (model), "/matmul")->outputs, 0),
                   "probe×16");
  assert_inferred (over, g_ptr_array_index (graft_graph_find_node (graft_model_get_graph (model), "/relu")->outputs, 0),
                   "2×4×4");
}

/* Lint over the inference it returns finds what lint alone finds. */
static void
test_lint_over_inference (void)
{
  GraftValue *x;
  g_autoptr(GraftModel) model = baked_chain_model (&x);
  g_autoptr(GPtrArray) alone = graft_lint_model (model, NULL);
  g_autoptr(GraftInference) inference = NULL;
  g_autoptr(GPtrArray) over = graft_lint_model_with_inference (model, NULL, &inference);
  guint n_baked = 0;

  g_assert_cmpuint (alone->len, ==, over->len);
  for (guint i = 0; i < alone->len; i++)
    {
      GraftDiagnostic *a = g_ptr_array_index (alone, i), *b = g_ptr_array_index (over, i);

      g_assert_cmpstr (a->rule, ==, b->rule);
      g_assert_cmpstr (a->node_name, ==, b->node_name);
      g_assert_cmpstr (a->message, ==, b->message);
      n_baked += strstr (a->message, "takes the shape constant") != NULL;
      g_test_message ("%s", a->message);
    }
  /* Both Reshape targets, the second behind the first. */
  g_assert_cmpuint (n_baked, ==, 2);
}

static void
test_undeclared_domain (void)
{
  g_autoptr(GraftModel) model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *graph = graft_graph_new ("g");
  GraftValue *x = graft_graph_ensure_value (graph, "x");
  g_autoptr(GPtrArray) diagnostics = NULL;
  GraftDiagnostic *d;

  /* No opset import at all, not even the default domain. */
  set_shape (x, GRAFT_DTYPE_FLOAT32, 1, (const char *[]) { "n" });
  graft_graph_add_input (graph, x);
  graft_graph_add_output (graph, add_node (graph, "", "Relu", "relu", x, NULL));
  graft_model_set_graph (model, graph);
  diagnostics = graft_lint_model (model, NULL);
  d = find (diagnostics, "unsupported-op", GRAFT_SEVERITY_ERROR);
  g_assert_nonnull (d);
  g_assert_nonnull (strstr (d->message, "opset_import"));
  g_assert_null (find (diagnostics, "static-input-dim", GRAFT_SEVERITY_WARNING));
}

static void
test_torchscript_rules (void)
{
  g_autoptr(GraftModel) model = graft_model_new (GRAFT_MODEL_FORMAT_TORCHSCRIPT);
  GraftGraph *graph = graft_graph_new ("forward");
  GraftValue *x = graft_graph_ensure_value (graph, "x");
  GraftValue *size, *item, *flag, *view;
  GraftNode *iff;
  gint64 sizes[] = { 2, -1 };
  g_autoptr(GPtrArray) diagnostics = NULL;
  g_autoptr(GPtrArray) export_diagnostics = NULL;
  g_autoptr(GPtrArray) scripted = NULL;
  GraftLintOptions export_target = { TRUE };

  x->kind = GRAFT_VALUE_TENSOR;
  graft_graph_add_input (graph, x);
  size = add_node (graph, "aten", "size", "size", x, NULL);
  add_node (graph, "aten", "add_", "bump", size, NULL);
  item = add_node (graph, "aten", "item", "item", x, NULL);
  flag = add_node (graph, "aten", "Bool", "branch", x, NULL);
  view = add_node (graph, "aten", "view", "flatten", x, NULL);
  graft_node_add_attribute (view->producer, graft_attribute_new_ints ("size", sizes, 2));
  graft_graph_add_output (graph, view);
  graft_model_set_graph (model, graph);
  (void) item;

  /* No control flow: this may be a trace, so the trace rules warn. */
  diagnostics = graft_lint_model (model, NULL);
  g_assert_cmpstr (find (diagnostics, "trace-python-number", GRAFT_SEVERITY_WARNING)->node_name, ==, "item");
  g_assert_cmpstr (find (diagnostics, "trace-shape-inplace", GRAFT_SEVERITY_WARNING)->node_name, ==, "bump");
  g_assert_cmpstr (find (diagnostics, "trace-flattened-control-flow", GRAFT_SEVERITY_WARNING)->node_name, ==, "branch");
  g_assert_cmpstr (find (diagnostics, "trace-frozen-size", GRAFT_SEVERITY_WARNING)->node_name, ==, "flatten");
  g_assert_false (graft_diagnostics_have_errors (diagnostics));

  /* prim::If: the module was scripted; the same patterns are notes, and
   * warnings again when it is meant for ONNX export. */
  iff = graft_graph_add_node (graph, "prim", "If", "if");
  graft_node_add_input (iff, flag);
  scripted = graft_lint_model (model, NULL);
  g_assert_nonnull (find (scripted, "control-flow", GRAFT_SEVERITY_INFO));
  g_assert_nonnull (find (scripted, "trace-python-number", GRAFT_SEVERITY_INFO));
  g_assert_null (find (scripted, "trace-python-number", GRAFT_SEVERITY_WARNING));
  g_assert_nonnull (strstr (find (scripted, "trace-python-number", GRAFT_SEVERITY_INFO)->message, "if this module is traced"));

  export_diagnostics = graft_lint_model (model, &export_target);
  g_assert_nonnull (find (export_diagnostics, "control-flow", GRAFT_SEVERITY_WARNING));
  g_assert_null (find (export_diagnostics, "control-flow", GRAFT_SEVERITY_INFO));
  g_assert_nonnull (find (export_diagnostics, "trace-python-number", GRAFT_SEVERITY_WARNING));
}

/* The rule table: ids unique and found by lookup, every row described,
 * every family run by exactly one check, fixes only where the diagnostic
 * can name an input axis. */
static void
test_rule_table (void)
{
  guint n_rules, n_checks = 0;
  const GraftLintRule *rules = graft_lint_rules (&n_rules);

  g_assert_cmpuint (n_rules, >=, 8);
  for (guint i = 0; i < n_rules; i++)
    {
      g_assert_true (graft_lint_rule_lookup (rules[i].id) == &rules[i]);
      g_assert_true (rules[i].title != NULL && rules[i].title[0] != '\0');
      g_assert_true (rules[i].badge != NULL && rules[i].badge[0] != '\0');
      g_assert_true (rules[i].description != NULL && rules[i].description[0] != '\0');
      n_checks += rules[i].check != NULL;
      if (rules[i].fix == GRAFT_LINT_FIX_MAKE_DIM_DYNAMIC)
        g_assert_true (g_str_equal (rules[i].id, "static-input-dim") || g_str_equal (rules[i].id, "baked-shape-constant"));
    }
  /* invalid-graph, unsupported-op, executorch-non-portable, static-input-dim, baked-shape-constant, trace-* */
  g_assert_cmpuint (n_checks, ==, 6);
  g_assert_true (rules[0].check != NULL);
  g_assert_null (graft_lint_rule_lookup ("no-such-rule"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/analysis/sym-dim", test_sym_dim);
  g_test_add_func ("/analysis/symbolic-inference", test_symbolic_inference);
  g_test_add_func ("/analysis/subgraph-inference", test_subgraph_inference);
  g_test_add_func ("/analysis/shape-vector-slice", test_shape_vector_slice);
  g_test_add_func ("/analysis/dim-check/passes", test_dim_check_passes);
  g_test_add_func ("/analysis/dim-check/names-stale-constant", test_dim_check_names_stale_constant);
  g_test_add_func ("/analysis/dim-check/catches-mixed-samples", test_dim_check_catches_mixed_samples);
  g_test_add_func ("/analysis/dim-check/batch-reaches-no-output", test_dim_check_batch_reaches_no_output);
  g_test_add_func ("/analysis/inference/over-base", test_inference_over_base);
  g_test_add_func ("/analysis/lint/onnx-rules", test_onnx_rules);
  g_test_add_func ("/analysis/lint/over-inference", test_lint_over_inference);
  g_test_add_func ("/analysis/lint/undeclared-domain", test_undeclared_domain);
  g_test_add_func ("/analysis/lint/torchscript-rules", test_torchscript_rules);
  g_test_add_func ("/analysis/lint/rule-table", test_rule_table);
  return g_test_run ();
}
