/* Graph edits on small hand-built ONNX models: dynamic dims with constant
 * repair, fixed shapes, delete, bypass, extract, undo/redo. */
#include <string.h>
#include "ir-compare.h"
#include "analysis/baked-shape.h"
#include "analysis/shape-inference.h"
#include "edit/edit.h"
#include "edit/edit-operation.h"
#include "lint/diagnostics.h"
#include "lint/lint-rules.h"
#include "edit/edit-history.h"
#include "ir/graph-copy.h"
#include "ir/graph-surgery.h"
#include "runtime/op.h"

/* An edit as graft-cli edit makes it: the operation table's row reads
 * the option's argument ("x=5x8" for set-input-shape, a node name). */
static GraftEdit *
table_edit (const char *id, const char *argument)
{
  g_autoptr(GError) error = NULL;
  GVariant *params = graft_edit_operation_parse (graft_edit_operation_lookup (id), NULL, NULL, argument, &error);
  GraftEdit *edit;

  g_assert_no_error (error);
  g_assert_nonnull (params);
  edit = graft_edit_new_operation (id, params, &error);
  g_assert_no_error (error);
  return edit;
}

static void
set_fixed_shape (GraftValue *value, int rank, const gint64 *dims)
{
  value->dtype = GRAFT_DTYPE_FLOAT32;
  graft_shape_clear (&value->shape);
  graft_shape_init_fixed (&value->shape, rank, dims);
}

static GraftValue *
add_op (GraftGraph *graph, const char *op, const char *name, GraftValue *a, GraftValue *b)
{
  GraftNode *node = graft_graph_add_node (graph, "", op, name);
  g_autofree char *out = g_strconcat (name + 1, "_out", NULL);
  GraftValue *value = graft_graph_ensure_value (graph, out);

  graft_node_add_input (node, a);
  if (b != NULL)
    graft_node_add_input (node, b);
  graft_node_add_output (node, value);
  return value;
}

/* An ONNX model (opset 13) whose graph has the input x[2,8]. */
static GraftModel *
x_model_new (GraftGraph **graph, GraftValue **x)
{
  GraftModel *model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);

  *graph = graft_graph_new ("g");
  *x = graft_graph_ensure_value (*graph, "x");
  graft_model_set_ir_version (model, 8);
  graft_model_set_opset (model, "", 13);
  set_fixed_shape (*x, 2, (gint64[]) { 2, 8 });
  graft_graph_add_input (*graph, *x);
  return model;
}

/* x[2,8] → op(x, shape constant) → Relu → y; the op's output and y carry
 * the declared (traced) shape out_dims. */
static GraftModel *
shape_op_model_full (const char *pre_op, const char *op, const gint64 *shape, guint n, const gint64 *out_dims,
                     int out_rank)
{
  GraftGraph *graph;
  GraftValue *x, *shape_value, *mid, *y;
  GraftModel *model = x_model_new (&graph, &x);

  shape_value = graft_graph_add_int64_constant (graph, "shape", shape, n, FALSE);
  if (pre_op != NULL)
    {
      GraftNode *pre = graft_graph_add_node (graph, "com.example", pre_op, "/Pre");
      GraftValue *pre_out = graft_graph_ensure_value (graph, "Pre_out");
      graft_model_set_opset (model, "com.example", 1);
      graft_node_add_input (pre, x);
      graft_node_add_output (pre, pre_out);
      x = pre_out;
    }
  mid = add_op (graph, op, "/Op", x, shape_value);
  set_fixed_shape (mid, out_rank, out_dims);
  y = add_op (graph, "Relu", "/Relu", mid, NULL);
  set_fixed_shape (y, out_rank, out_dims);
  graft_graph_add_output (graph, y);
  graft_model_set_graph (model, graph);
  return model;
}

static GraftModel *
shape_op_model (const char *op, const gint64 *shape, guint n, const gint64 *out_dims, int out_rank)
{
  return shape_op_model_full (NULL, op, shape, n, out_dims, out_rank);
}

static GraftTensor *
shape_constant_of (GraftModel *model, const char *node_name, guint input)
{
  GraftNode *node = graft_graph_find_node (graft_model_get_graph (model), node_name);

  g_assert_nonnull (node);
  return graft_value_get_constant (g_ptr_array_index (node->inputs, input));
}

static void
assert_tensor_ints (GraftTensor *tensor, const gint64 *expected, guint n)
{
  g_assert_nonnull (tensor);
  g_assert_cmpint (graft_tensor_get_numel (tensor), ==, n);
  g_assert_cmpint (tensor->dtype, ==, GRAFT_DTYPE_INT64);
  for (guint i = 0; i < n; i++)
    {
      gint64 v;
      memcpy (&v, (const guint8 *) g_bytes_get_data (tensor->data, NULL) + 8 * i, 8);
      g_assert_cmpint (GINT64_FROM_LE (v), ==, expected[i]);
    }
}

static void
assert_shape (GraftValue *value, const char *expected)
{
  g_autofree char *text = graft_shape_to_string (&value->shape);
  g_assert_cmpstr (text, ==, expected);
}

static GraftValue *
value (GraftModel *model, const char *name)
{
  GraftValue *v = graft_graph_lookup_value (graft_model_get_graph (model), name);
  g_assert_nonnull (v);
  return v;
}

/* The applied edit changed one dim (traced at traced) and passes its
 * check at other sizes. */
static void
assert_verified (GraftEdit *edit, GraftModel *model, gint64 traced)
{
  GArray *dims = graft_edit_get_changed_dims (edit);
  g_autoptr(GraftDimCheck) check = NULL;
  g_autoptr(GError) error = NULL;

  g_assert_cmpuint (dims->len, ==, 1);
  g_assert_cmpint (g_array_index (dims, GraftDimCheckDim, 0).traced, ==, traced);
  check = graft_edit_verify (edit, model, &error);
  g_assert_no_error (error);
  if (!check->passed)
    g_error ("verification failed: %s", check->failure);
  g_assert_true (check->complete);
  g_assert_cmpuint (check->n_runs, >=, 2);
}

static void
test_reshape_becomes_minus_one (void)
{
  g_autoptr(GraftModel) model = shape_op_model ("Reshape", (gint64[]) { 2, 4, 2 }, 3, (gint64[]) { 2, 4, 2 }, 3);
  g_autoptr(GraftGraph) before = graft_graph_copy (graft_model_get_graph (model), NULL);
  g_autoptr(GraftEdit) edit = graft_edit_new_make_dim_dynamic ("x", 0, "batch");
  g_autoptr(GError) error = NULL;
  g_autoptr(GString) why = g_string_new (NULL);
  GPtrArray *notes;

  g_assert_true (graft_edit_apply (edit, model, &error));
  g_assert_no_error (error);
  assert_shape (value (model, "x"), "batch×8");
  assert_tensor_ints (shape_constant_of (model, "/Op", 1), (gint64[]) { -1, 4, 2 }, 3);
  assert_shape (value (model, "Op_out"), "batch×4×2");
  assert_shape (value (model, "Relu_out"), "batch×4×2");
  notes = graft_edit_get_notes (edit);
  g_assert_cmpuint (notes->len, ==, 1);
  g_assert_nonnull (strstr (g_ptr_array_index (notes, 0), "[2, 4, 2] → [-1, 4, 2]"));
  /* The old constant, now unused, is gone. */
  g_assert_cmpuint (graft_model_get_graph (model)->initializers->len, ==, 1);
  assert_verified (edit, model, 2);

  g_assert_true (graft_edit_undo (edit, model, &error));
  if (!graft_test_graphs_equal (before, graft_model_get_graph (model), "undo", why))
    g_error ("undo did not restore the graph: %s", why->str);
}

static void
test_reshape_with_existing_minus_one (void)
{
  /* [2, -1] from x.view(x.size(0), -1): the -1 was 8 at trace time. */
  g_autoptr(GraftModel) model = shape_op_model ("Reshape", (gint64[]) { 2, -1 }, 2, (gint64[]) { 2, 8 }, 2);
  g_autoptr(GraftEdit) edit = graft_edit_new_make_dim_dynamic ("x", 0, "N");
  g_autoptr(GError) error = NULL;

  g_assert_true (graft_edit_apply (edit, model, &error));
  g_assert_no_error (error);
  assert_tensor_ints (shape_constant_of (model, "/Op", 1), (gint64[]) { -1, 8 }, 2);
  assert_shape (value (model, "Relu_out"), "N×8");
}

/* Reshape's 0 copies the input's dim (x.view(0, 4, 2) as torch exports
 * x.view(x.size(0), 4, 2) with dynamic axes): it already follows the
 * batch, so nothing is rewritten and the edit verifies. */
static void
test_reshape_zero_copies_dim (void)
{
  g_autoptr(GraftModel) model = shape_op_model ("Reshape", (gint64[]) { 0, 4, 2 }, 3, (gint64[]) { 2, 4, 2 }, 3);
  g_autoptr(GraftEdit) edit = graft_edit_new_make_dim_dynamic ("x", 0, "batch");
  g_autoptr(GError) error = NULL;

  g_assert_true (graft_edit_apply (edit, model, &error));
  g_assert_no_error (error);
  assert_tensor_ints (shape_constant_of (model, "/Op", 1), (gint64[]) { 0, 4, 2 }, 3);
  g_assert_cmpuint (graft_edit_get_notes (edit)->len, ==, 0);
  assert_shape (value (model, "Relu_out"), "batch×4×2");
  assert_verified (edit, model, 2);
}

/* With allowzero=1 a 0 would be a literal zero-sized dim: the repair
 * writes -1 (never 0) for the batch, and the Reshape keeps allowzero. */
static void
test_reshape_allowzero (void)
{
  g_autoptr(GraftModel) model = shape_op_model ("Reshape", (gint64[]) { 2, 4, 2 }, 3, (gint64[]) { 2, 4, 2 }, 3);
  GraftNode *reshape = graft_graph_find_node (graft_model_get_graph (model), "/Op");
  g_autoptr(GraftEdit) edit = graft_edit_new_make_dim_dynamic ("x", 0, "batch");
  g_autoptr(GError) error = NULL;

  graft_node_add_attribute (reshape, graft_attribute_new_int ("allowzero", 1));
  graft_model_set_opset (model, "", 14);
  g_assert_true (graft_edit_apply (edit, model, &error));
  g_assert_no_error (error);
  reshape = graft_graph_find_node (graft_model_get_graph (model), "/Op");
  g_assert_cmpint (graft_node_attr_int (reshape, "allowzero", 0), ==, 1);
  assert_tensor_ints (shape_constant_of (model, "/Op", 1), (gint64[]) { -1, 4, 2 }, 3);
  assert_shape (value (model, "Relu_out"), "batch×4×2");
  assert_verified (edit, model, 2);
}

/* x[2,8] → Unsqueeze(1) + Unsqueeze(0) → [2,2,8] (batch × batch × 8) →
 * Reshape(shape): neither -1 nor Shape(x)[0] fixes [2, 16]. */
static void
test_reshape_blocked (void)
{
  g_autoptr(GraftModel) model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  g_autoptr(GraftEdit) edit = graft_edit_new_make_dim_dynamic ("x", 0, "batch");
  g_autoptr(GError) error = NULL;
  GraftGraph *graph = graft_graph_new ("outer");
  GraftValue *x = graft_graph_ensure_value (graph, "x");
  GraftValue *u1, *u2, *sum, *y;

  graft_model_set_opset (model, "", 13);
  set_fixed_shape (x, 2, (gint64[]) { 2, 8 });
  graft_graph_add_input (graph, x);
  u1 = add_op (graph, "Unsqueeze", "/U1", x, graft_graph_add_int64_constant (graph, "a1", (gint64[]) { 1 }, 1, FALSE));
  u2 = add_op (graph, "Unsqueeze", "/U2", x, graft_graph_add_int64_constant (graph, "a0", (gint64[]) { 0 }, 1, FALSE));
  sum = add_op (graph, "Add", "/Add", u1, u2);
  y = add_op (graph, "Reshape", "/Reshape", sum,
              graft_graph_add_int64_constant (graph, "shape", (gint64[]) { 2, 16 }, 2, FALSE));
  graft_graph_add_output (graph, y);
  graft_model_set_graph (model, graph);

  g_assert_false (graft_edit_apply (edit, model, &error));
  g_assert_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_BLOCKED);
  g_assert_nonnull (strstr (error->message, "'/Reshape'"));
  g_assert_cmpuint (graft_model_get_graph (model)->nodes->len, ==, 4);
}

/* x[4 seq, 2 batch, 8] → Reshape [4, 4, 4] (batch × 2 heads, head size 4):
 * seq becomes -1, then batch × 2 must come from Shape(x)[1] × 2. */
static void
test_reshape_merged_heads (void)
{
  g_autoptr(GraftModel) model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  g_autoptr(GraftEdit) seq = graft_edit_new_make_dim_dynamic ("x", 0, "seq");
  g_autoptr(GraftEdit) batch = graft_edit_new_make_dim_dynamic ("x", 1, "batch");
  g_autoptr(GError) error = NULL;
  GraftGraph *graph = graft_graph_new ("heads");
  GraftValue *x = graft_graph_ensure_value (graph, "x");
  GraftValue *y, *shape;
  GraftNode *reshape, *mul = NULL;

  graft_model_set_opset (model, "", 13);
  set_fixed_shape (x, 3, (gint64[]) { 4, 2, 8 });
  graft_graph_add_input (graph, x);
  y = add_op (graph, "Reshape", "/Reshape", x, graft_graph_add_int64_constant (graph, "shape", (gint64[]) { 4, 4, 4 }, 3, FALSE));
  set_fixed_shape (y, 3, (gint64[]) { 4, 4, 4 });
  graft_graph_add_output (graph, y);
  graft_model_set_graph (model, graph);

  g_assert_true (graft_edit_apply (seq, model, &error));
  g_assert_no_error (error);
  assert_tensor_ints (shape_constant_of (model, "/Reshape", 1), (gint64[]) { -1, 4, 4 }, 3);
  g_assert_true (graft_edit_apply (batch, model, &error));
  g_assert_no_error (error);
  graph = graft_model_get_graph (model);
  reshape = graft_graph_find_node (graph, "/Reshape");
  shape = g_ptr_array_index (reshape->inputs, 1);
  g_assert_cmpstr (shape->producer->op, ==, "onnx::Concat");
  for (guint i = 0; i < graph->nodes->len; i++)
    if (((GraftNode *) g_ptr_array_index (graph->nodes, i))->op == g_intern_static_string ("onnx::Mul"))
      mul = g_ptr_array_index (graph->nodes, i);
  g_assert_nonnull (mul);
  /* Topologically sorted: Shape, Gather, Mul, Concat, then the Reshape. */
  g_assert_cmpuint (mul->index, <, shape->producer->index);
  g_assert_cmpuint (shape->producer->index, <, reshape->index);
  assert_shape (value (model, "Reshape_out"), "seq×batch*2×4");
  g_assert_nonnull (strstr (g_ptr_array_index (graft_edit_get_notes (batch), 0), "Shape(x)[1] × 2"));

  /* Both dims at once, at 1 and at 5 × 7: the product batch × 2 is 14 only
   * if the repair read it right. */
  {
    GraftDimCheckDim dims[] = { g_array_index (graft_edit_get_changed_dims (seq), GraftDimCheckDim, 0),
                                g_array_index (graft_edit_get_changed_dims (batch), GraftDimCheckDim, 0) };
    g_autoptr(GraftDimCheck) check = graft_dim_check_run (model, dims, 2, &error);

    g_assert_no_error (error);
    g_assert_cmpint (dims[0].traced, ==, 4);
    g_assert_false (dims[0].batch);
    g_assert_true (dims[1].batch);
    if (!check->passed)
      g_error ("verification failed: %s", check->failure);
    /* The output has batch × 2, not batch, as a dim: which rows are a
     * sample is not known, and the check says it did not look. */
    g_assert_false (check->complete);
    g_assert_cmpstr (g_ptr_array_index (check->lines, check->lines->len - 1), ==,
                     "batch invariance over batch: not checked, no float output has a dim that is exactly batch");
  }
}

/* x[2 batch, 6] → Transpose → [6, batch] → Reshape [12] → Reshape [6, 2]
 * → + the transpose: the last Reshape splits 6 × batch, and both 6 and 2
 * are multiples of the traced 2. Read the usual way (batch outermost,
 * [batch × 3, 2]) the Add fails at batch 1; the probes pick [6, -1]. */
static void
test_ambiguous_split_resolved_by_probes (void)
{
  g_autoptr(GraftModel) model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  g_autoptr(GraftEdit) edit = graft_edit_new_make_dim_dynamic ("x", 0, "batch");
  g_autoptr(GraftDimCheck) check = NULL;
  g_autoptr(GError) error = NULL;
  GraftGraph *graph = graft_graph_new ("split");
  GraftValue *x = graft_graph_ensure_value (graph, "x");
  GraftValue *t, *flat, *split, *y;
  GPtrArray *notes;
  gint64 perm[] = { 1, 0 };

  graft_model_set_opset (model, "", 13);
  set_fixed_shape (x, 2, (gint64[]) { 2, 6 });
  graft_graph_add_input (graph, x);
  t = add_op (graph, "Transpose", "/Transpose", x, NULL);
  graft_node_add_attribute (t->producer, graft_attribute_new_ints ("perm", perm, 2));
  flat = add_op (graph, "Reshape", "/Flat", t, graft_graph_add_int64_constant (graph, "flat", (gint64[]) { 12 }, 1, FALSE));
  split = add_op (graph, "Reshape", "/Split", flat,
                  graft_graph_add_int64_constant (graph, "split", (gint64[]) { 6, 2 }, 2, FALSE));
  y = add_op (graph, "Add", "/Add", split, t);
  graft_graph_add_output (graph, y);
  graft_model_set_graph (model, graph);

  g_assert_true (graft_edit_apply (edit, model, &error));
  g_assert_no_error (error);
  notes = graft_edit_get_notes (edit);
  g_assert_nonnull (strstr (g_ptr_array_index (notes, notes->len - 1), "innermost"));
  g_assert_nonnull (strstr (g_ptr_array_index (notes, notes->len - 2), "'/Split': shape [6, 2] → [6, -1]"));
  check = graft_edit_verify (edit, model, &error);
  g_assert_no_error (error);
  g_assert_true (check->passed);
  g_assert_true (check->complete);
}

/* x[2, 6 seq] + Unsqueeze(Cast(Range(0, 6, 1)), 0): positions counted to
 * the traced sequence length. The limit must follow Shape(x)[1]. */
static void
test_range_limit (void)
{
  g_autoptr(GraftModel) model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  g_autoptr(GraftEdit) edit = graft_edit_new_make_dim_dynamic ("x", 1, "seq");
  g_autoptr(GError) error = NULL;
  GraftGraph *graph = graft_graph_new ("range");
  GraftValue *x = graft_graph_ensure_value (graph, "x");
  GraftValue *counted, *as_float, *row, *y;
  GraftNode *range;

  graft_model_set_opset (model, "", 13);
  set_fixed_shape (x, 2, (gint64[]) { 2, 6 });
  graft_graph_add_input (graph, x);
  range = graft_graph_add_node (graph, "", "Range", "/Range");
  graft_node_add_input (range, graft_graph_add_int64_constant (graph, "start", (gint64[]) { 0 }, 1, TRUE));
  graft_node_add_input (range, graft_graph_add_int64_constant (graph, "limit", (gint64[]) { 6 }, 1, TRUE));
  graft_node_add_input (range, graft_graph_add_int64_constant (graph, "delta", (gint64[]) { 1 }, 1, TRUE));
  counted = graft_graph_ensure_value (graph, "Range_out");
  graft_node_add_output (range, counted);
  as_float = add_op (graph, "Cast", "/Cast", counted, NULL);
  graft_node_add_attribute (as_float->producer, graft_attribute_new_int ("to", GRAFT_DTYPE_FLOAT32));
  row = add_op (graph, "Unsqueeze", "/Unsqueeze", as_float,
                graft_graph_add_int64_constant (graph, "axes", (gint64[]) { 0 }, 1, FALSE));
  y = add_op (graph, "Add", "/Add", x, row);
  graft_graph_add_output (graph, y);
  graft_model_set_graph (model, graph);

  g_assert_true (graft_edit_apply (edit, model, &error));
  g_assert_no_error (error);
  g_assert_nonnull (strstr (g_ptr_array_index (graft_edit_get_notes (edit), 0),
                            "Range '/Range': limit 6 now comes from Shape(x)[1]"));
  assert_verified (edit, model, 6);
}

/* x[1, 6 seq, 4] + Gather(table[10, 4], [[0, 1, 2, 3, 4, 5]]): position
 * ids folded into a constant at export. They must count to Shape(x)[1]. */
static void
test_positions_follow_sequence (void)
{
  g_autoptr(GraftModel) model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  g_autoptr(GraftEdit) edit = graft_edit_new_make_dim_dynamic ("x", 1, "seq");
  g_autoptr(GError) error = NULL;
  GraftGraph *graph = graft_graph_new ("positions");
  GraftValue *x = graft_graph_ensure_value (graph, "x");
  GraftValue *table = graft_graph_ensure_value (graph, "table");
  GraftValue *positions = graft_graph_ensure_value (graph, "positions");
  GraftValue *embedded, *y;
  g_autofree float *rows = g_new0 (float, 40);
  gint64 ids[] = { 0, 1, 2, 3, 4, 5 };
  GraftTensor *table_tensor = graft_tensor_new ("table", GRAFT_DTYPE_FLOAT32, 2, (gint64[]) { 10, 4 });
  GraftTensor *ids_tensor = graft_tensor_new ("positions", GRAFT_DTYPE_INT64, 2, (gint64[]) { 1, 6 });
  g_autoptr(GBytes) table_bytes = NULL;
  g_autoptr(GBytes) ids_bytes = g_bytes_new (ids, sizeof ids);

  for (int i = 0; i < 40; i++)
    rows[i] = i;
  table_bytes = g_bytes_new (rows, 40 * sizeof (float));
  graft_model_set_opset (model, "", 13);
  set_fixed_shape (x, 3, (gint64[]) { 1, 6, 4 });
  graft_graph_add_input (graph, x);
  g_assert_true (graft_tensor_set_data (table_tensor, table_bytes, NULL));
  g_assert_true (graft_tensor_set_data (ids_tensor, ids_bytes, NULL));
  graft_graph_add_initializer (graph, table, table_tensor);
  graft_graph_add_initializer (graph, positions, ids_tensor);
  embedded = add_op (graph, "Gather", "/Gather", table, positions);
  y = add_op (graph, "Add", "/Add", x, embedded);
  graft_graph_add_output (graph, y);
  graft_model_set_graph (model, graph);

  g_assert_true (graft_edit_apply (edit, model, &error));
  g_assert_no_error (error);
  g_assert_nonnull (strstr (g_ptr_array_index (graft_edit_get_notes (edit), 0),
                            "Gather '/Gather': the range 0..5 it reads now counts to Shape(x)[1]"));
  assert_verified (edit, model, 6);
}

/* x[2, 4] × Expand(mask[1, 4], Where(Equal(C, -1), ones, C)) with C =
 * [2, 4]: torch's expand target, computed from constants. The repair folds
 * it, then makes its batch follow x; the Where/Equal chain goes. */
static void
test_expand_target_from_constants (void)
{
  g_autoptr(GraftModel) model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  g_autoptr(GraftEdit) edit = graft_edit_new_make_dim_dynamic ("x", 0, "batch");
  g_autoptr(GError) error = NULL;
  GraftGraph *graph = graft_graph_new ("expand");
  GraftValue *x = graft_graph_ensure_value (graph, "x");
  GraftValue *target = graft_graph_add_int64_constant (graph, "target", (gint64[]) { 2, 4 }, 2, FALSE);
  GraftValue *is_free, *chosen, *mask, *y;
  GraftNode *where;
  float ones[] = { 1, 1, 1, 1 };
  GraftTensor *tensor = graft_tensor_new ("mask", GRAFT_DTYPE_FLOAT32, 2, (gint64[]) { 1, 4 });
  g_autoptr(GBytes) bytes = g_bytes_new (ones, sizeof ones);
  GraftValue *mask_value = graft_graph_ensure_value (graph, "mask");
  GPtrArray *notes;

  graft_model_set_opset (model, "", 13);
  set_fixed_shape (x, 2, (gint64[]) { 2, 4 });
  graft_graph_add_input (graph, x);
  g_assert_true (graft_tensor_set_data (tensor, bytes, NULL));
  graft_graph_add_initializer (graph, mask_value, tensor);
  is_free = add_op (graph, "Equal", "/Equal", target,
                    graft_graph_add_int64_constant (graph, "minus_one", (gint64[]) { -1 }, 1, FALSE));
  where = graft_graph_add_node (graph, "", "Where", "/Where");
  graft_node_add_input (where, is_free);
  graft_node_add_input (where, graft_graph_add_int64_constant (graph, "ones", (gint64[]) { 1, 1 }, 2, FALSE));
  graft_node_add_input (where, target);
  chosen = graft_graph_ensure_value (graph, "Where_out");
  graft_node_add_output (where, chosen);
  mask = add_op (graph, "Expand", "/Expand", mask_value, chosen);
  y = add_op (graph, "Mul", "/Mul", x, mask);
  graft_graph_add_output (graph, y);
  graft_model_set_graph (model, graph);

  g_assert_true (graft_edit_apply (edit, model, &error));
  g_assert_no_error (error);
  notes = graft_edit_get_notes (edit);
  g_assert_nonnull (strstr (g_ptr_array_index (notes, 0), "Expand '/Expand': its size input, computed from constants, "
                                                          "folded to [2, 4]"));
  g_assert_nonnull (strstr (g_ptr_array_index (notes, 1), "element 0 of [2, 4] now comes from Shape(x)[0]"));
  g_assert_null (graft_graph_find_node (graft_model_get_graph (model), "/Where"));
  g_assert_null (graft_graph_find_node (graft_model_get_graph (model), "/Equal"));
  assert_verified (edit, model, 2);
}

/* x[2, 8] → Reshape(x, Cast([2., 8.])): the size is baked behind a Cast of
 * a float constant, which the repair cannot see. The edit applies, and its
 * verification fails, naming the Reshape. */
static void
test_verify_fails_on_untraceable_size (void)
{
  g_autoptr(GraftModel) model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  g_autoptr(GraftEdit) edit = graft_edit_new_make_dim_dynamic ("x", 0, "batch");
  g_autoptr(GraftDimCheck) check = NULL;
  g_autoptr(GError) error = NULL;
  GraftGraph *graph = graft_graph_new ("opaque");
  GraftValue *x = graft_graph_ensure_value (graph, "x");
  GraftValue *size_float = graft_graph_ensure_value (graph, "size_float");
  GraftValue *size, *y;
  gint64 n = 2;
  float values[] = { 2, 8 };
  GraftTensor *tensor = graft_tensor_new ("size_float", GRAFT_DTYPE_FLOAT32, 1, &n);
  g_autoptr(GBytes) bytes = g_bytes_new (values, sizeof values);

  graft_model_set_opset (model, "", 13);
  set_fixed_shape (x, 2, (gint64[]) { 2, 8 });
  graft_graph_add_input (graph, x);
  g_assert_true (graft_tensor_set_data (tensor, bytes, NULL));
  graft_graph_add_initializer (graph, size_float, tensor);
  size = add_op (graph, "Cast", "/Cast", size_float, NULL);
  graft_node_add_attribute (size->producer, graft_attribute_new_int ("to", GRAFT_DTYPE_INT64));
  y = add_op (graph, "Reshape", "/Reshape", x, size);
  graft_graph_add_output (graph, y);
  graft_model_set_graph (model, graph);

  check = graft_edit_verify (edit, model, &error);
  g_assert_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_STATE);
  g_clear_error (&error);
  g_assert_true (graft_edit_apply (edit, model, &error));
  check = graft_edit_verify (edit, model, &error);
  g_assert_no_error (error);
  g_assert_false (check->passed);
  g_assert_nonnull (strstr (check->failure, "node '/Reshape'"));
  g_assert_nonnull (strstr (check->failure, "cannot trace back"));
  g_assert_cmpstr (check->failed_node, ==, "/Reshape");
}

/* x[2,8] + ConstantOfShape([2, 8]), or + Tile(ConstantOfShape([1, 8]),
 * [2, 1]): a batch baked into a shape to fill and into repeats. */
static GraftModel *
filled_model (gboolean tile)
{
  GraftGraph *graph;
  GraftValue *x, *fill, *sum, *y;
  GraftModel *model = x_model_new (&graph, &x);
  gint64 x_dims[] = { 2, 8 };

  if (tile)
    {
      GraftValue *row = add_op (graph, "ConstantOfShape", "/Fill",
                                graft_graph_add_int64_constant (graph, "row_shape", (gint64[]) { 1, 8 }, 2, FALSE),
                                NULL);
      set_fixed_shape (row, 2, (gint64[]) { 1, 8 });
      fill = add_op (graph, "Tile", "/Tile", row,
                     graft_graph_add_int64_constant (graph, "repeats", (gint64[]) { 2, 1 }, 2, FALSE));
    }
  else
    fill = add_op (graph, "ConstantOfShape", "/Fill",
                   graft_graph_add_int64_constant (graph, "fill_shape", (gint64[]) { 2, 8 }, 2, FALSE), NULL);
  set_fixed_shape (fill, 2, x_dims);
  sum = add_op (graph, "Add", "/Add", x, fill);
  set_fixed_shape (sum, 2, x_dims);
  y = add_op (graph, "Relu", "/Relu", sum, NULL);
  set_fixed_shape (y, 2, x_dims);
  graft_graph_add_output (graph, y);
  graft_model_set_graph (model, graph);
  return model;
}

static void
test_constant_of_shape_and_tile (void)
{
  g_autoptr(GraftModel) filled = filled_model (FALSE);
  g_autoptr(GraftModel) tiled = filled_model (TRUE);
  g_autoptr(GraftEdit) edit = graft_edit_new_make_dim_dynamic ("x", 0, "batch");
  g_autoptr(GraftEdit) edit2 = graft_edit_new_make_dim_dynamic ("x", 0, "batch");
  g_autoptr(GError) error = NULL;

  /* The shape to fill follows the batch, and the edit holds at 1 and 5. */
  g_assert_true (graft_edit_apply (edit, filled, &error));
  g_assert_no_error (error);
  g_assert_null (shape_constant_of (filled, "/Fill", 0));
  assert_shape (value (filled, "Relu_out"), "batch×8");
  assert_verified (edit, filled, 2);

  /* A row tiled to the batch: the repeat follows it, the row stays
   * [1, 8], and the edit holds at 1 and 5. */
  g_assert_true (graft_edit_apply (edit2, tiled, &error));
  g_assert_no_error (error);
  g_assert_null (shape_constant_of (tiled, "/Tile", 1));
  assert_tensor_ints (shape_constant_of (tiled, "/Fill", 0), (gint64[]) { 1, 8 }, 2);
  assert_shape (value (tiled, "Relu_out"), "batch×8");
  assert_verified (edit2, tiled, 2);
}

static void
test_expand_and_slice (void)
{
  g_autoptr(GraftModel) expand = shape_op_model ("Expand", (gint64[]) { 3, 2, 8 }, 3, (gint64[]) { 3, 2, 8 }, 3);
  g_autoptr(GraftModel) slice = NULL;
  g_autoptr(GraftEdit) edit = graft_edit_new_make_dim_dynamic ("x", 0, "batch");
  g_autoptr(GraftEdit) edit2 = graft_edit_new_make_dim_dynamic ("x", 0, "batch");
  g_autoptr(GError) error = NULL;
  GraftGraph *graph;
  GraftNode *node;

  g_assert_true (graft_edit_apply (edit, expand, &error));
  g_assert_no_error (error);
  /* x[batch, 8] already carries the batch where the target said 2: a 1
   * there lets Expand keep it. */
  assert_tensor_ints (shape_constant_of (expand, "/Op", 1), (gint64[]) { 3, 1, 8 }, 3);
  assert_shape (value (expand, "Relu_out"), "3×batch×8");
  assert_verified (edit, expand, 2);

  /* Slice(x, starts [0], ends [2], axes [0]): up to the traced batch. */
  slice = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  graft_model_set_opset (slice, "", 13);
  graph = graft_graph_new ("g");
  {
    GraftValue *x = graft_graph_ensure_value (graph, "x");
    GraftValue *y;
    node = graft_graph_add_node (graph, "", "Slice", "/Slice");
    set_fixed_shape (x, 2, (gint64[]) { 2, 8 });
    graft_graph_add_input (graph, x);
    graft_node_add_input (node, x);
    graft_node_add_input (node, graft_graph_add_int64_constant (graph, "starts", (gint64[]) { 0 }, 1, FALSE));
    graft_node_add_input (node, graft_graph_add_int64_constant (graph, "ends", (gint64[]) { 2 }, 1, FALSE));
    graft_node_add_input (node, graft_graph_add_int64_constant (graph, "axes", (gint64[]) { 0 }, 1, FALSE));
    y = graft_graph_ensure_value (graph, "y");
    graft_node_add_output (node, y);
    graft_graph_add_output (graph, y);
  }
  graft_model_set_graph (slice, graph);
  g_assert_true (graft_edit_apply (edit2, slice, &error));
  g_assert_no_error (error);
  assert_tensor_ints (shape_constant_of (slice, "/Slice", 2), (gint64[]) { G_MAXINT64 }, 1);
}

static void
test_blocked_node_is_named (void)
{
  /* A 2-D shape "constant" cannot be rewritten: the error names the node. */
  g_autoptr(GraftModel) model = shape_op_model ("Tile", (gint64[]) { 2, 1 }, 2, (gint64[]) { 4, 8 }, 2);
  g_autoptr(GraftEdit) edit = graft_edit_new_make_dim_dynamic ("x", 0, "batch");
  g_autoptr(GError) error = NULL;
  GraftNode *tile = graft_graph_find_node (graft_model_get_graph (model), "/Op");
  GraftValue *repeats = g_ptr_array_index (tile->inputs, 1);

  /* Make the repeats a 2×1 matrix. */
  repeats->initializer->rank = 2;
  repeats->initializer->dims = g_renew (gint64, repeats->initializer->dims, 2);
  repeats->initializer->dims[0] = 2;
  repeats->initializer->dims[1] = 1;
  g_assert_false (graft_edit_apply (edit, model, &error));
  g_assert_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_BLOCKED);
  g_assert_nonnull (strstr (error->message, "'/Op'"));
  /* A failed edit leaves the model as it was. */
  assert_shape (value (model, "x"), "2×8");
}

static void
test_set_shape (void)
{
  g_autoptr(GraftModel) model = shape_op_model ("Reshape", (gint64[]) { 2, 4, 2 }, 3, (gint64[]) { 2, 4, 2 }, 3);
  g_autoptr(GraftEdit) edit = table_edit ("set-input-shape", "x=5x8");
  g_autoptr(GraftEdit) bad = table_edit ("set-input-shape", "x=1x2x3");
  g_autoptr(GError) error = NULL;

  graft_edit_apply (edit, model, &error);
  g_assert_no_error (error);
  assert_shape (value (model, "x"), "5×8");
  assert_tensor_ints (shape_constant_of (model, "/Op", 1), (gint64[]) { -1, 4, 2 }, 3);
  assert_shape (value (model, "Relu_out"), "5×4×2");
  {
    /* Checked at the size set, and at 1 and a prime as the repair allows. */
    g_autoptr(GraftDimCheck) check = graft_edit_verify (edit, model, &error);
    gboolean at_five = FALSE;

    g_assert_no_error (error);
    g_assert_true (check->passed);
    for (guint i = 0; i < check->lines->len; i++)
      at_five |= strstr (g_ptr_array_index (check->lines, i), "runtime at x:0=5 ") != NULL;
    g_assert_true (at_five);
  }
  g_assert_false (graft_edit_apply (bad, model, &error));
  g_assert_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID);
}

static gpointer
apply_to_copy_thread (gpointer data)
{
  GraftEdit *edit = ((gpointer *) data)[0];
  GraftModel *model = ((gpointer *) data)[1];

  return graft_edit_apply_to_copy (edit, model, ((gpointer *) data)[2]);
}

/* The GUI applies make-dynamic on a worker: applied to a copy there, the
 * copy's graph taken into the history's model, then undone and redone
 * (the redo again through a copy) like any edit. The model is untouched
 * until the commit. */
static void
test_apply_to_copy_and_commit (void)
{
  g_autoptr(GraftModel) model = shape_op_model ("Reshape", (gint64[]) { 2, 4, 2 }, 3, (gint64[]) { 2, 4, 2 }, 3);
  g_autoptr(GraftGraph) before = graft_graph_copy (graft_model_get_graph (model), NULL);
  g_autoptr(GraftEditHistory) history = graft_edit_history_new (model);
  g_autoptr(GraftEdit) edit = graft_edit_new_make_dim_dynamic ("x", 0, "batch");
  g_autoptr(GraftEdit) bad = graft_edit_new_make_dim_dynamic ("nosuch", 0, "batch");
  g_autoptr(GraftModel) edited = NULL;
  g_autoptr(GraftModel) redone = NULL;
  g_autoptr(GraftModel) failed = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GString) why = g_string_new (NULL);
  GraftGraph *original = graft_model_get_graph (model);
  gpointer args[] = { edit, model, &error };

  edited = g_thread_join (g_thread_new ("apply-to-copy", apply_to_copy_thread, args));
  g_assert_no_error (error);
  g_assert_nonnull (edited);
  g_assert_true (graft_model_get_graph (model) == original);
  assert_shape (value (model, "x"), "2×8");
  assert_shape (value (edited, "x"), "batch×8");
  g_assert_cmpuint (graft_edit_get_changed_dims (edit)->len, ==, 1);

  g_assert_true (graft_edit_history_commit (history, edit, edited, &error));
  g_assert_no_error (error);
  g_assert_null (graft_model_get_graph (edited));
  assert_shape (value (model, "x"), "batch×8");
  assert_tensor_ints (shape_constant_of (model, "/Op", 1), (gint64[]) { -1, 4, 2 }, 3);
  assert_verified (edit, model, 2);
  g_assert_cmpstr (graft_edit_history_get_undo_description (history), ==, graft_edit_get_description (edit));
  /* Committed once: a second commit of the same copy is refused. */
  g_assert_false (graft_edit_history_commit (history, edit, edited, &error));
  g_assert_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_STATE);
  g_clear_error (&error);

  g_assert_true (graft_edit_history_undo (history, &error));
  if (!graft_test_graphs_equal (before, graft_model_get_graph (model), "undo", why))
    g_error ("undo did not restore the graph: %s", why->str);
  g_assert_true (graft_edit_history_get_redo_edit (history) == edit);

  /* A redo through a copy takes the edit off the redo stack. */
  redone = graft_edit_apply_to_copy (edit, model, &error);
  g_assert_no_error (error);
  g_assert_true (graft_edit_history_commit (history, edit, redone, &error));
  assert_shape (value (model, "x"), "batch×8");
  g_assert_false (graft_edit_history_can_redo (history));
  g_assert_true (graft_edit_history_can_undo (history));

  /* A failing edit: an error, no copy, the model as it was. */
  failed = graft_edit_apply_to_copy (bad, model, &error);
  g_assert_null (failed);
  g_assert_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_NOT_FOUND);
  assert_shape (value (model, "x"), "batch×8");
}

static GraftModel *chain_model (void);

static gpointer
copy_graph_thread (gpointer data)
{
  return graft_graph_copy (data, NULL);
}

/* The undo snapshot made beforehand on another thread (as the GUI's check
 * worker does): undo and redo restore exactly the graphs a plain apply
 * gives, and a refused edit leaves the model as it was. */
static void
test_apply_with_prepared_snapshot (void)
{
  g_autoptr(GraftModel) model = chain_model ();
  g_autoptr(GraftModel) plain_model = chain_model ();
  g_autoptr(GraftEditHistory) history = graft_edit_history_new (model);
  g_autoptr(GraftEditHistory) plain = graft_edit_history_new (plain_model);
  g_autoptr(GraftGraph) original = graft_graph_copy (graft_model_get_graph (model), NULL);
  g_autoptr(GraftEdit) bypass = table_edit ("bypass-node", "/B");
  g_autoptr(GraftEdit) plain_bypass = table_edit ("bypass-node", "/B");
  g_autoptr(GraftEdit) missing = table_edit ("delete-node", "/nosuch");
  g_autoptr(GError) error = NULL;
  g_autoptr(GString) why = g_string_new (NULL);
  GraftGraph *prepared = g_thread_join (g_thread_new ("copy", copy_graph_thread, graft_model_get_graph (model)));

  g_assert_true (graft_edit_history_apply_with_snapshot (history, bypass, prepared, &error));
  g_assert_no_error (error);
  g_assert_true (graft_edit_history_apply (plain, plain_bypass, &error));
  if (!graft_test_graphs_equal (graft_model_get_graph (plain_model), graft_model_get_graph (model), "apply", why))
    g_error ("the edit with a prepared snapshot differs from a plain one: %s", why->str);
  g_assert_null (graft_graph_find_node (graft_model_get_graph (model), "/B"));

  g_assert_true (graft_edit_history_undo (history, &error));
  if (!graft_test_graphs_equal (original, graft_model_get_graph (model), "undo", why))
    g_error ("undo did not restore the graph: %s", why->str);
  g_assert_true (graft_model_get_graph (model) == prepared);

  /* Redo copies the graph itself; undo again gives the original. */
  g_assert_true (graft_edit_history_redo (history, &error));
  g_assert_null (graft_graph_find_node (graft_model_get_graph (model), "/B"));
  g_assert_true (graft_edit_history_undo (history, &error));
  if (!graft_test_graphs_equal (original, graft_model_get_graph (model), "second undo", why))
    g_error ("the second undo did not restore the graph: %s", why->str);

  /* A refused edit frees the snapshot it was given; the model is kept. */
  prepared = graft_graph_copy (graft_model_get_graph (model), NULL);
  g_assert_false (graft_edit_history_apply_with_snapshot (history, missing, prepared, &error));
  g_assert_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_NOT_FOUND);
  if (!graft_test_graphs_equal (original, graft_model_get_graph (model), "refused", why))
    g_error ("a refused edit changed the graph: %s", why->str);
  g_assert_false (graft_edit_history_can_undo (history));
}

static void
test_errors (void)
{
  g_autoptr(GraftModel) model = shape_op_model ("Reshape", (gint64[]) { 2, 4, 2 }, 3, (gint64[]) { 2, 4, 2 }, 3);
  g_autoptr(GError) error = NULL;
  struct { GraftEdit *edit; int code; const char *text; } cases[] = {
    { graft_edit_new_make_dim_dynamic ("y", 0, "batch"), GRAFT_EDIT_ERROR_NOT_FOUND, "inputs: 'x'" },
    { graft_edit_new_make_dim_dynamic ("x", 5, "batch"), GRAFT_EDIT_ERROR_INVALID, "axis 5" },
    { graft_edit_new_make_dim_dynamic ("x", 0, "2*b"), GRAFT_EDIT_ERROR_INVALID, "dimension name" },
    { table_edit ("delete-node", "nope"), GRAFT_EDIT_ERROR_NOT_FOUND, "'nope'" },
    { table_edit ("delete-node", "/Op"), GRAFT_EDIT_ERROR_INVALID, "every graph output" },
    { graft_edit_new_extract ((const char *[]) { "Op_out", NULL }, (const char *[]) { "zz", NULL }),
      GRAFT_EDIT_ERROR_NOT_FOUND, "'zz'" },
    { graft_edit_new_extract ((const char *[]) { "Op_out", NULL }, (const char *[]) { "Op_out", NULL }),
      GRAFT_EDIT_ERROR_INVALID, NULL },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      gboolean ok = graft_edit_apply (cases[i].edit, model, &error);
      if (cases[i].text == NULL)
        {
          /* Extracting a value to itself is allowed but leaves no nodes. */
          g_assert_true (ok || error != NULL);
          g_clear_error (&error);
          g_object_unref (cases[i].edit);
          continue;
        }
      g_assert_false (ok);
      g_assert_error (error, GRAFT_EDIT_ERROR, cases[i].code);
      if (strstr (error->message, cases[i].text) == NULL)
        g_error ("case %u: '%s' lacks '%s'", i, error->message, cases[i].text);
      g_clear_error (&error);
      g_object_unref (cases[i].edit);
    }
}

/* x → A(Relu) → B(Neg) → C(Abs) → y, plus D(Sigmoid) on A's output → z. */
static GraftModel *
chain_model (void)
{
  GraftModel *model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *graph = graft_graph_new ("chain");
  GraftValue *x = graft_graph_ensure_value (graph, "x");
  GraftValue *a, *b, *c, *d;

  graft_model_set_opset (model, "", 13);
  set_fixed_shape (x, 2, (gint64[]) { 1, 4 });
  graft_graph_add_input (graph, x);
  a = add_op (graph, "Relu", "/A", x, NULL);
  b = add_op (graph, "Neg", "/B", a, NULL);
  c = add_op (graph, "Abs", "/C", b, NULL);
  d = add_op (graph, "Sigmoid", "/D", a, NULL);
  graft_graph_add_output (graph, c);
  graft_graph_add_output (graph, d);
  graft_model_set_graph (model, graph);
  return model;
}

static void
test_bypass_delete_extract (void)
{
  g_autoptr(GraftModel) model = chain_model ();
  g_autoptr(GraftEditHistory) history = graft_edit_history_new (model);
  g_autoptr(GraftGraph) original = graft_graph_copy (graft_model_get_graph (model), NULL);
  g_autoptr(GraftEdit) bypass = table_edit ("bypass-node", "/B");
  g_autoptr(GraftEdit) bypass_last = table_edit ("bypass-node", "/C");
  g_autoptr(GraftEdit) delete = table_edit ("delete-node", "/D");
  g_autoptr(GraftEdit) extract = graft_edit_new_extract ((const char *[]) { "A_out", NULL },
                                                         (const char *[]) { "C_out", NULL });
  g_autoptr(GError) error = NULL;
  g_autoptr(GString) why = g_string_new (NULL);
  GraftGraph *graph;
  GraftNode *c;

  g_assert_false (graft_edit_history_is_modified (history));
  g_assert_true (graft_edit_history_apply (history, bypass, &error));
  g_assert_no_error (error);
  graph = graft_model_get_graph (model);
  g_assert_cmpuint (graph->nodes->len, ==, 3);
  c = graft_graph_find_node (graph, "/C");
  g_assert_cmpstr (((GraftValue *) g_ptr_array_index (c->inputs, 0))->name, ==, "A_out");
  g_assert_null (graft_graph_lookup_value (graph, "B_out"));
  g_assert_true (graft_edit_history_is_modified (history));

  /* Bypassing the producer of a graph output keeps the output's name. */
  g_assert_true (graft_edit_history_apply (history, bypass_last, &error));
  graph = graft_model_get_graph (model);
  g_assert_cmpstr (((GraftValue *) g_ptr_array_index (graph->outputs, 0))->name, ==, "C_out");
  g_assert_cmpstr (((GraftValue *) g_ptr_array_index (graph->outputs, 0))->producer->name, ==, "/A");
  g_assert_true (graft_edit_history_undo (history, &error));

  g_assert_true (graft_edit_history_apply (history, delete, &error));
  g_assert_no_error (error);
  graph = graft_model_get_graph (model);
  g_assert_cmpuint (graph->outputs->len, ==, 1);
  g_assert_null (graft_graph_find_node (graph, "/D"));

  g_assert_true (graft_edit_history_apply (history, extract, &error));
  g_assert_no_error (error);
  graph = graft_model_get_graph (model);
  g_assert_cmpuint (graph->nodes->len, ==, 1);
  g_assert_cmpstr (((GraftValue *) g_ptr_array_index (graph->inputs, 0))->name, ==, "A_out");
  g_assert_true (((GraftValue *) g_ptr_array_index (graph->inputs, 0))->is_graph_input);
  g_assert_null (graft_graph_lookup_value (graph, "x"));

  g_assert_cmpstr (graft_edit_history_get_undo_description (history), ==, "Extract A_out → C_out");
  g_assert_true (graft_edit_history_undo (history, &error));
  g_assert_true (graft_edit_history_undo (history, &error));
  g_assert_true (graft_edit_history_undo (history, &error));
  g_assert_false (graft_edit_history_can_undo (history));
  g_assert_false (graft_edit_history_is_modified (history));
  if (!graft_test_graphs_equal (original, graft_model_get_graph (model), "undo all", why))
    g_error ("%s", why->str);

  /* Redo replays the same edits by name. */
  g_assert_true (graft_edit_history_redo (history, &error));
  g_assert_true (graft_edit_history_redo (history, &error));
  g_assert_cmpuint (graft_model_get_graph (model)->nodes->len, ==, 2);
  graft_edit_history_mark_saved (history);
  g_assert_false (graft_edit_history_is_modified (history));
  g_assert_true (graft_edit_history_undo (history, &error));
  g_assert_true (graft_edit_history_is_modified (history));
}

static void
test_copy_keeps_subgraphs_and_groups (void)
{
  g_autoptr(GraftGraph) graph = graft_graph_new ("main");
  g_autoptr(GraftGraph) copy = NULL;
  GraftGraph *branch = graft_graph_new ("then");
  GraftValue *x = graft_graph_ensure_value (graph, "x");
  GraftValue *inner = graft_graph_ensure_value (branch, "inner");
  GraftNode *iff = graft_graph_add_node (graph, "", "If", "/block/If");
  GraftNode *use = graft_graph_add_node (branch, "", "Identity", "id");
  g_autoptr(GString) why = g_string_new (NULL);
  GraftNode *copied_use;

  graft_graph_add_input (graph, x);
  graft_node_add_input (iff, x);
  graft_node_add_input (use, x);
  graft_node_add_output (use, inner);
  graft_graph_add_output (branch, inner);
  graft_node_add_attribute (iff, graft_attribute_new_graph ("then_branch", branch));
  graft_node_adopt_subgraph (iff, branch);
  graft_node_add_output (iff, graft_graph_ensure_value (graph, "y"));
  graft_graph_add_output (graph, graft_graph_lookup_value (graph, "y"));
  graft_graph_build_groups_from_names (graph);

  copy = graft_graph_copy (graph, NULL);
  g_assert_true (graft_test_graphs_equal (graph, copy, "copy", why));
  copied_use = g_ptr_array_index (graft_node_get_attribute (g_ptr_array_index (copy->nodes, 0), "then_branch")->g->nodes, 0);
  /* The outer-scope reference points into the copy, not the original. */
  g_assert_true (g_ptr_array_index (copied_use->inputs, 0) == graft_graph_lookup_value (copy, "x"));
  g_assert_nonnull (graft_group_find_path (copy->root_group, "block"));
}

static void
test_fix_from_diagnostic (void)
{
  g_autoptr(GraftModel) model = shape_op_model ("Reshape", (gint64[]) { 2, 4, 2 }, 3, (gint64[]) { 2, 4, 2 }, 3);
  g_autoptr(GPtrArray) diagnostics = graft_lint_model (model, NULL);
  g_autoptr(GraftEdit) edit = NULL;
  g_autoptr(GPtrArray) after = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *symbol = NULL;
  g_autofree char *argument = NULL;
  GraftDiagnostic *baked = NULL;

  for (guint i = 0; i < diagnostics->len; i++)
    if (strcmp (((GraftDiagnostic *) g_ptr_array_index (diagnostics, i))->rule, "baked-shape-constant") == 0)
      baked = g_ptr_array_index (diagnostics, i);
  g_assert_nonnull (baked);
  /* The fix the Problems panel offers: the rule's row says make-dim-dynamic,
   * with the suggested name for the diagnostic's input dim. */
  g_assert_cmpint (graft_lint_rule_lookup (baked->rule)->fix, ==, GRAFT_LINT_FIX_MAKE_DIM_DYNAMIC);
  symbol = graft_edit_suggest_dim_symbol (baked->input, baked->axis);
  argument = g_strdup_printf ("%s:%d=%s", baked->input->name, baked->axis, symbol);
  edit = table_edit ("make-dim-dynamic", argument);
  g_assert_cmpstr (graft_edit_get_description (edit), ==, "Make x:0 dynamic (batch)");
  g_assert_true (graft_edit_apply (edit, model, &error));
  g_assert_no_error (error);
  after = graft_lint_model (model, NULL);
  g_assert_cmpuint (after->len, ==, 0);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/edit/dynamic/reshape-minus-one", test_reshape_becomes_minus_one);
  g_test_add_func ("/edit/dynamic/reshape-existing-minus-one", test_reshape_with_existing_minus_one);
  g_test_add_func ("/edit/dynamic/reshape-blocked", test_reshape_blocked);
  g_test_add_func ("/edit/dynamic/reshape-zero-copies-dim", test_reshape_zero_copies_dim);
  g_test_add_func ("/edit/dynamic/reshape-allowzero", test_reshape_allowzero);
  g_test_add_func ("/edit/dynamic/expand-slice", test_expand_and_slice);
  g_test_add_func ("/edit/dynamic/constant-of-shape-tile", test_constant_of_shape_and_tile);
  g_test_add_func ("/edit/dynamic/merged-heads", test_reshape_merged_heads);
  g_test_add_func ("/edit/dynamic/blocked", test_blocked_node_is_named);
  g_test_add_func ("/edit/dynamic/verify-fails-untraceable", test_verify_fails_on_untraceable_size);
  g_test_add_func ("/edit/dynamic/ambiguous-split", test_ambiguous_split_resolved_by_probes);
  g_test_add_func ("/edit/dynamic/range-limit", test_range_limit);
  g_test_add_func ("/edit/dynamic/expand-target-from-constants", test_expand_target_from_constants);
  g_test_add_func ("/edit/dynamic/positions", test_positions_follow_sequence);
  g_test_add_func ("/edit/set-shape", test_set_shape);
  g_test_add_func ("/edit/apply-to-copy-and-commit", test_apply_to_copy_and_commit);
  g_test_add_func ("/edit/apply-with-prepared-snapshot", test_apply_with_prepared_snapshot);
  g_test_add_func ("/edit/errors", test_errors);
  g_test_add_func ("/edit/bypass-delete-extract-undo", test_bypass_delete_extract);
  g_test_add_func ("/edit/copy", test_copy_keeps_subgraphs_and_groups);
  g_test_add_func ("/edit/fix-from-diagnostic", test_fix_from_diagnostic);
  return g_test_run ();
}
