/* aten:: / prim:: kernel edge cases on small hand-built TorchScript-style
 * graphs (constants as "arg<N>" attributes, runtime arguments as inputs, as
 * the TorchScript builder makes them): negative indices and axes, uneven
 * chunks, type promotion, Python's floor division and modulo, empty
 * slices, pooling padding rules, list values and error messages. */
#include <math.h>
#include <string.h>
#include "runtime/op.h"
#include "runtime/runtime.h"
#include "../simd-levels.h"

typedef struct {
  GraftModel *model;
  GraftGraph *graph;
} Builder;

static void
builder_init (Builder *b)
{
  b->model = graft_model_new (GRAFT_MODEL_FORMAT_TORCHSCRIPT);
  b->graph = graft_graph_new ("forward");
}

static void
builder_clear (Builder *b)
{
  g_object_unref (b->model);
}

static void
add_input (Builder *b, const char *name)
{
  GraftValue *v = graft_graph_ensure_value (b->graph, name);
  v->kind = GRAFT_VALUE_TENSOR;
  graft_graph_add_input (b->graph, v);
}

/* op(inputs...) -> outputs..., attributes added by the caller */
static GraftNode *
add_node (Builder *b, const char *op, const char *const *inputs, const char *const *outputs)
{
  g_auto(GStrv) parts = g_strsplit (op, "::", 2);
  GraftNode *node = graft_graph_add_node (b->graph, parts[0], parts[1], op);
  for (guint i = 0; inputs && inputs[i]; i++)
    graft_node_add_input (node, graft_graph_ensure_value (b->graph, inputs[i]));
  for (guint i = 0; outputs && outputs[i]; i++)
    graft_node_add_output (node, graft_graph_ensure_value (b->graph, outputs[i]));
  return node;
}

static void
arg_int (GraftNode *node, guint position, gint64 value)
{
  g_autofree char *name = g_strdup_printf ("arg%u", position);
  graft_node_add_attribute (node, graft_attribute_new_int (name, value));
}

static void
arg_float (GraftNode *node, guint position, double value)
{
  g_autofree char *name = g_strdup_printf ("arg%u", position);
  graft_node_add_attribute (node, graft_attribute_new_float (name, value));
}

static void
arg_ints (GraftNode *node, guint position, const gint64 *values, guint n)
{
  g_autofree char *name = g_strdup_printf ("arg%u", position);
  graft_node_add_attribute (node, graft_attribute_new_ints (name, values, n));
}

static void
arg_none (GraftNode *node, guint position)
{
  g_autofree char *name = g_strdup_printf ("arg%u", position);
  graft_node_add_attribute (node, graft_attribute_new (name, GRAFT_ATTR_NONE));
}

static void
arg_bool (GraftNode *node, guint position, gboolean value)
{
  g_autofree char *name = g_strdup_printf ("arg%u", position);
  GraftAttribute *a = graft_attribute_new (name, GRAFT_ATTR_BOOL);
  a->i = value;
  graft_node_add_attribute (node, a);
}

static void
add_output (Builder *b, const char *name)
{
  graft_graph_add_output (b->graph, graft_graph_ensure_value (b->graph, name));
}

/* Runs with one input "x" (borrowed). */
static GPtrArray *
run (Builder *b, GraftRtTensor *x, GError **error)
{
  graft_model_set_graph (b->model, b->graph);
  g_autoptr(GHashTable) inputs = g_hash_table_new (g_str_hash, g_str_equal);
  if (x)
    g_hash_table_insert (inputs, (gpointer) "x", x);
  g_autoptr(GraftRuntime) rt = graft_runtime_new (b->model, error);
  if (rt == NULL)
    return NULL;
  return graft_runtime_run (rt, inputs, NULL, NULL, NULL, error);
}

static GraftRtTensor *
arange_f32 (int rank, const gint64 *dims)
{
  GraftRtTensor *t = graft_rt_tensor_new (GRAFT_DTYPE_FLOAT32, rank, dims, NULL);
  for (gint64 i = 0; i < t->numel; i++)
    ((float *) t->data)[i] = (float) i;
  return t;
}

static void
assert_values (GraftRtTensor *t, int rank, const gint64 *dims, const double *values)
{
  g_assert_cmpint (t->kind, ==, GRAFT_RT_TENSOR);
  g_assert_cmpint (t->rank, ==, rank);
  for (int d = 0; d < rank; d++)
    g_assert_cmpint (t->dims[d], ==, dims[d]);
  for (gint64 i = 0; i < t->numel; i++)
    g_assert_cmpfloat_with_epsilon (graft_rt_tensor_get_f64 (t, i), values[i], 1e-6);
}

#define IN(...) ((const char *const[]) { __VA_ARGS__, NULL })

/* x[:, -1] and x[:, -3::2] (negative start, step), and an empty slice */
static void
test_select_slice (void)
{
  Builder b;
  builder_init (&b);
  add_input (&b, "x");
  GraftNode *n = add_node (&b, "aten::select", IN ("x"), IN ("sel"));
  arg_int (n, 1, 1);
  arg_int (n, 2, -1);
  n = add_node (&b, "aten::slice", IN ("x"), IN ("sl"));
  arg_int (n, 1, 1);
  arg_int (n, 2, -3);
  arg_none (n, 3);
  arg_int (n, 4, 2);
  n = add_node (&b, "aten::slice", IN ("x"), IN ("empty"));
  arg_int (n, 1, 0);
  arg_int (n, 2, 5);
  arg_int (n, 3, 9);
  arg_int (n, 4, 1);
  add_output (&b, "sel");
  add_output (&b, "sl");
  add_output (&b, "empty");
  gint64 dims[] = { 2, 4 };
  g_autoptr(GraftRtTensor) x = arange_f32 (2, dims);
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, x, &error);
  g_assert_no_error (error);
  assert_values (out->pdata[0], 1, (gint64[]) { 2 }, (double[]) { 3, 7 });
  assert_values (out->pdata[1], 2, (gint64[]) { 2, 2 }, (double[]) { 1, 3, 5, 7 });
  assert_values (out->pdata[2], 2, (gint64[]) { 0, 4 }, NULL);
  builder_clear (&b);
}

static void
test_select_out_of_range (void)
{
  Builder b;
  builder_init (&b);
  add_input (&b, "x");
  GraftNode *n = add_node (&b, "aten::select", IN ("x"), IN ("y"));
  arg_int (n, 1, 0);
  arg_int (n, 2, -3);
  add_output (&b, "y");
  g_autoptr(GraftRtTensor) x = arange_f32 (2, (gint64[]) { 2, 4 });
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, x, &error);
  g_assert_null (out);
  g_assert_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INVALID);
  g_assert_nonnull (strstr (error->message, "index -3 is out of range for dimension 0 of size 2"));
  builder_clear (&b);
}

/* chunk(5 rows, 3) gives 2, 2, 1 rows; ListUnpack splits the list */
static void
test_chunk_uneven (void)
{
  Builder b;
  builder_init (&b);
  add_input (&b, "x");
  GraftNode *n = add_node (&b, "aten::chunk", IN ("x"), IN ("list"));
  arg_int (n, 1, 3);
  arg_int (n, 2, -2);
  add_node (&b, "prim::ListUnpack", IN ("list"), IN ("a", "b", "c"));
  add_output (&b, "a");
  add_output (&b, "c");
  g_autoptr(GraftRtTensor) x = arange_f32 (2, (gint64[]) { 5, 2 });
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, x, &error);
  g_assert_no_error (error);
  assert_values (out->pdata[0], 2, (gint64[]) { 2, 2 }, (double[]) { 0, 1, 2, 3 });
  assert_values (out->pdata[1], 2, (gint64[]) { 1, 2 }, (double[]) { 8, 9 });
  builder_clear (&b);
}

static void
test_split_sizes_mismatch (void)
{
  Builder b;
  builder_init (&b);
  add_input (&b, "x");
  GraftNode *n = add_node (&b, "aten::split", IN ("x"), IN ("list"));
  arg_ints (n, 1, (gint64[]) { 1, 1 }, 2);
  arg_int (n, 2, 0);
  add_output (&b, "list");
  g_autoptr(GraftRtTensor) x = arange_f32 (1, (gint64[]) { 3 });
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, x, &error);
  g_assert_null (out);
  g_assert_nonnull (strstr (error->message, "split sizes add up to 2, not 3"));
  builder_clear (&b);
}

/* Python semantics: -7 // 2 == -4, -7 % 3 == 2, 7 % -3 == -2 */
static void
test_floor_division_and_modulo (void)
{
  Builder b;
  builder_init (&b);
  add_input (&b, "x");
  GraftNode *n = add_node (&b, "aten::floor_divide", IN ("x"), IN ("q"));
  arg_int (n, 1, 2);
  n = add_node (&b, "aten::remainder", IN ("x"), IN ("r"));
  arg_int (n, 1, 3);
  n = add_node (&b, "aten::remainder", IN ("x"), IN ("rn"));
  arg_int (n, 1, -3);
  add_output (&b, "q");
  add_output (&b, "r");
  add_output (&b, "rn");
  g_autoptr(GraftRtTensor) x = graft_rt_tensor_new (GRAFT_DTYPE_INT64, 1, (gint64[]) { 3 }, NULL);
  gint64 xv[] = { -7, 7, 0 };
  memcpy (x->data, xv, sizeof xv);
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, x, &error);
  g_assert_no_error (error);
  for (int k = 0; k < 3; k++)
    g_assert_cmpint (((GraftRtTensor *) out->pdata[k])->dtype, ==, GRAFT_DTYPE_INT64);
  assert_values (out->pdata[0], 1, (gint64[]) { 3 }, (double[]) { -4, 3, 0 });
  assert_values (out->pdata[1], 1, (gint64[]) { 3 }, (double[]) { 2, 1, 0 });
  assert_values (out->pdata[2], 1, (gint64[]) { 3 }, (double[]) { -1, -2, 0 });
  builder_clear (&b);
}

static void
test_int_division_by_zero (void)
{
  Builder b;
  builder_init (&b);
  add_input (&b, "x");
  GraftNode *n = add_node (&b, "aten::floor_divide", IN ("x"), IN ("q"));
  arg_int (n, 1, 0);
  add_output (&b, "q");
  g_autoptr(GraftRtTensor) x = graft_rt_tensor_new_scalar_i64 (5);
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, x, &error);
  g_assert_null (out);
  g_assert_nonnull (strstr (error->message, "integer division by zero"));
  builder_clear (&b);
}

/* An int64 tensor with a float constant is float32; rsub(x, 1, alpha=2) = 1 - 2x */
static void
test_promotion_and_alpha (void)
{
  Builder b;
  builder_init (&b);
  add_input (&b, "x");
  GraftNode *n = add_node (&b, "aten::rsub", IN ("x"), IN ("r"));
  arg_float (n, 1, 1.5);
  arg_int (n, 2, 2);
  n = add_node (&b, "aten::ne", IN ("x"), IN ("ne"));
  arg_int (n, 1, 1);
  add_output (&b, "r");
  add_output (&b, "ne");
  g_autoptr(GraftRtTensor) x = graft_rt_tensor_new (GRAFT_DTYPE_INT64, 1, (gint64[]) { 2 }, NULL);
  ((gint64 *) x->data)[0] = 1;
  ((gint64 *) x->data)[1] = 3;
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, x, &error);
  g_assert_no_error (error);
  GraftRtTensor *r = out->pdata[0], *ne = out->pdata[1];
  g_assert_cmpint (r->dtype, ==, GRAFT_DTYPE_FLOAT32);
  assert_values (r, 1, (gint64[]) { 2 }, (double[]) { -0.5, -4.5 });
  g_assert_cmpint (ne->dtype, ==, GRAFT_DTYPE_BOOL);
  assert_values (ne, 1, (gint64[]) { 2 }, (double[]) { 0, 1 });
  builder_clear (&b);
}

/* expand with -1 and a new leading axis; repeat tiles */
static void
test_expand_repeat (void)
{
  Builder b;
  builder_init (&b);
  add_input (&b, "x");
  GraftNode *n = add_node (&b, "aten::expand", IN ("x"), IN ("e"));
  arg_ints (n, 1, (gint64[]) { 2, -1, 3 }, 3);
  n = add_node (&b, "aten::repeat", IN ("x"), IN ("r"));
  arg_ints (n, 1, (gint64[]) { 1, 2 }, 2);
  add_output (&b, "e");
  add_output (&b, "r");
  g_autoptr(GraftRtTensor) x = arange_f32 (2, (gint64[]) { 2, 1 });
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, x, &error);
  g_assert_no_error (error);
  assert_values (out->pdata[0], 3, (gint64[]) { 2, 2, 3 }, (double[]) { 0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1 });
  assert_values (out->pdata[1], 2, (gint64[]) { 2, 2 }, (double[]) { 0, 0, 1, 1 });
  builder_clear (&b);
}

/* avg_pool2d 2x2 stride 2 pad 1: the corner window holds one value; with
 * count_include_pad it is divided by 4, without by 1. ceil_mode adds a column. */
static void
test_avg_pool_padding (void)
{
  Builder b;
  builder_init (&b);
  add_input (&b, "x");
  for (int include = 0; include < 2; include++)
    {
      GraftNode *n = add_node (&b, "aten::avg_pool2d", IN ("x"), IN (include ? "with" : "without"));
      arg_ints (n, 1, (gint64[]) { 2, 2 }, 2);
      arg_ints (n, 2, (gint64[]) { 2, 2 }, 2);
      arg_ints (n, 3, (gint64[]) { 1, 1 }, 2);
      arg_bool (n, 4, FALSE);
      arg_bool (n, 5, include);
      arg_none (n, 6);
      add_output (&b, include ? "with" : "without");
    }
  GraftNode *n = add_node (&b, "aten::avg_pool2d", IN ("x"), IN ("ceil"));
  arg_ints (n, 1, (gint64[]) { 2, 2 }, 2);
  arg_ints (n, 2, (gint64[]) { 2, 2 }, 2);
  arg_ints (n, 3, (gint64[]) { 0, 0 }, 2);
  arg_bool (n, 4, TRUE);
  add_output (&b, "ceil");
  g_autoptr(GraftRtTensor) x = arange_f32 (4, (gint64[]) { 1, 1, 3, 3 });
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, x, &error);
  g_assert_no_error (error);
  /* x = [[0 1 2] [3 4 5] [6 7 8]]; windows rows {-1,0},{1,2} cols {-1,0},{1,2} */
  assert_values (out->pdata[0], 4, (gint64[]) { 1, 1, 2, 2 }, (double[]) { 0, 1.5, 4.5, 6 });
  assert_values (out->pdata[1], 4, (gint64[]) { 1, 1, 2, 2 }, (double[]) { 0, 0.75, 2.25, 6 });
  assert_values (out->pdata[2], 4, (gint64[]) { 1, 1, 2, 2 }, (double[]) { 2, 3.5, 6.5, 8 });
  builder_clear (&b);
}

/* The same at one SIMD level: from AVX2 on, the separable kernel of
 * onnx::AveragePool. */
static void
test_avg_pool_padding_at_level (gconstpointer data)
{
  if (!graft_test_use_simd_level (GPOINTER_TO_INT (data)))
    return;
  test_avg_pool_padding ();
  graft_simd_set_max_level (GRAFT_SIMD_AVX512);
}

/* max_pool2d(x, 3, 2, 1) as ResNet's stem: a NaN in a window wins, as in
 * torch (the vector kernel it takes without NaN lets none win), and
 * ceil_mode adds a window that starts in the input. */
static void
test_max_pool_nan (void)
{
  Builder b;
  builder_init (&b);
  add_input (&b, "x");
  for (int ceil = 0; ceil < 2; ceil++)
    {
      GraftNode *n = add_node (&b, "aten::max_pool2d", IN ("x"), IN (ceil ? "ceil" : "floor"));
      arg_ints (n, 1, (gint64[]) { 3, 3 }, 2);
      arg_ints (n, 2, (gint64[]) { 2, 2 }, 2);
      arg_ints (n, 3, (gint64[]) { ceil ? 0 : 1, ceil ? 0 : 1 }, 2);
      arg_ints (n, 4, (gint64[]) { 1, 1 }, 2);
      arg_bool (n, 5, ceil);
      add_output (&b, ceil ? "ceil" : "floor");
    }
  g_autoptr(GraftRtTensor) x = arange_f32 (4, (gint64[]) { 1, 1, 4, 4 });
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, x, &error);
  g_assert_no_error (error);
  /* x = 0..15 in rows of 4: windows rows/cols {-1..1}, {1..3} */
  assert_values (out->pdata[0], 4, (gint64[]) { 1, 1, 2, 2 }, (double[]) { 5, 7, 13, 15 });
  assert_values (out->pdata[1], 4, (gint64[]) { 1, 1, 2, 2 }, (double[]) { 10, 11, 14, 15 });
  g_ptr_array_unref (g_steal_pointer (&out));

  ((float *) x->data)[6] = NAN;   /* row 1, column 2: in the windows of columns 1..3 */
  g_autoptr(GraftRuntime) rt = graft_runtime_new (b.model, &error);
  g_assert_no_error (error);
  g_autoptr(GHashTable) inputs = g_hash_table_new (g_str_hash, g_str_equal);
  g_hash_table_insert (inputs, (gpointer) "x", x);
  out = graft_runtime_run (rt, inputs, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  const float *floor_y = ((GraftRtTensor *) out->pdata[0])->data;
  g_assert_cmpfloat (floor_y[0], ==, 5);
  g_assert_true (isnan (floor_y[1]));
  g_assert_cmpfloat (floor_y[2], ==, 13);
  g_assert_true (isnan (floor_y[3]));
  builder_clear (&b);
}

/* len / __getitem__ on a list from size(); a negative index counts from the end */
static void
test_size_list (void)
{
  Builder b;
  builder_init (&b);
  add_input (&b, "x");
  add_node (&b, "aten::size", IN ("x"), IN ("size"));
  add_node (&b, "aten::len", IN ("size"), IN ("len"));
  GraftNode *n = add_node (&b, "aten::__getitem__", IN ("size"), IN ("last"));
  arg_int (n, 1, -1);
  add_node (&b, "aten::dim", IN ("x"), IN ("dim"));
  add_output (&b, "len");
  add_output (&b, "last");
  add_output (&b, "dim");
  g_autoptr(GraftRtTensor) x = arange_f32 (3, (gint64[]) { 2, 3, 5 });
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, x, &error);
  g_assert_no_error (error);
  for (int k = 0; k < 3; k++)
    g_assert_cmpint (((GraftRtTensor *) out->pdata[k])->rank, ==, 0);
  g_assert_cmpint (graft_rt_tensor_get_i64 (out->pdata[0], 0), ==, 3);
  g_assert_cmpint (graft_rt_tensor_get_i64 (out->pdata[1], 0), ==, 5);
  g_assert_cmpint (graft_rt_tensor_get_i64 (out->pdata[2], 0), ==, 3);
  builder_clear (&b);
}

static void
test_getitem_out_of_range (void)
{
  Builder b;
  builder_init (&b);
  add_input (&b, "x");
  add_node (&b, "aten::size", IN ("x"), IN ("size"));
  GraftNode *n = add_node (&b, "aten::__getitem__", IN ("size"), IN ("y"));
  arg_int (n, 1, 2);
  add_output (&b, "y");
  g_autoptr(GraftRtTensor) x = arange_f32 (1, (gint64[]) { 4 });
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, x, &error);
  g_assert_null (out);
  g_assert_nonnull (strstr (error->message, "list index 2 out of range (length 1)"));
  builder_clear (&b);
}

/* prim::RaiseException reaches the caller with the exception's class and message */
static void
test_raise (void)
{
  Builder b;
  builder_init (&b);
  add_input (&b, "x");
  GraftNode *n = add_node (&b, "prim::RaiseException", NULL, IN ("r"));
  graft_node_add_attribute (n, graft_attribute_new_string ("arg0", "bad n"));
  graft_node_add_attribute (n, graft_attribute_new_string ("arg1", "builtins.RuntimeError"));
  add_node (&b, "aten::dim", IN ("x"), IN ("y"));
  add_output (&b, "y");
  add_output (&b, "r");
  g_autoptr(GraftRtTensor) x = arange_f32 (1, (gint64[]) { 1 });
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, x, &error);
  g_assert_null (out);
  g_assert_nonnull (strstr (error->message, "the model raised builtins.RuntimeError: bad n"));
  builder_clear (&b);
}

/* layer_norm over the last axis, no affine parameters */
static void
test_layer_norm (void)
{
  Builder b;
  builder_init (&b);
  add_input (&b, "x");
  GraftNode *n = add_node (&b, "aten::layer_norm", IN ("x"), IN ("y"));
  arg_ints (n, 1, (gint64[]) { 2 }, 1);
  arg_none (n, 2);
  arg_none (n, 3);
  arg_float (n, 4, 0.0);
  add_output (&b, "y");
  g_autoptr(GraftRtTensor) x = arange_f32 (2, (gint64[]) { 2, 2 });
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, x, &error);
  g_assert_no_error (error);
  assert_values (out->pdata[0], 2, (gint64[]) { 2, 2 }, (double[]) { -1, 1, -1, 1 });
  builder_clear (&b);
}

/* torch.zeros([2], dtype=4) is int64; torch.tensor of a float list is float32 */
static void
test_factories (void)
{
  Builder b;
  builder_init (&b);
  add_input (&b, "x");
  GraftNode *n = add_node (&b, "aten::zeros", NULL, IN ("z"));
  arg_ints (n, 0, (gint64[]) { 2 }, 1);
  graft_node_add_attribute (n, graft_attribute_new_int ("dtype", 4));
  n = add_node (&b, "prim::ListConstruct", IN ("x"), IN ("list"));
  arg_float (n, 1, 2.5);
  add_node (&b, "aten::tensor", IN ("list"), IN ("t"));
  add_output (&b, "z");
  add_output (&b, "t");
  g_autoptr(GraftRtTensor) x = graft_rt_tensor_new_scalar_f32 (1.25f);
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, x, &error);
  g_assert_no_error (error);
  g_assert_cmpint (((GraftRtTensor *) out->pdata[0])->dtype, ==, GRAFT_DTYPE_INT64);
  assert_values (out->pdata[0], 1, (gint64[]) { 2 }, (double[]) { 0, 0 });
  g_assert_cmpint (((GraftRtTensor *) out->pdata[1])->dtype, ==, GRAFT_DTYPE_FLOAT32);
  assert_values (out->pdata[1], 1, (gint64[]) { 2 }, (double[]) { 1.25, 2.5 });
  builder_clear (&b);
}

/* pad([1, -1]) on the last axis: one column of the value before, one cropped after */
static void
test_pad_crop (void)
{
  Builder b;
  builder_init (&b);
  add_input (&b, "x");
  GraftNode *n = add_node (&b, "aten::pad", IN ("x"), IN ("y"));
  arg_ints (n, 1, (gint64[]) { 1, -1 }, 2);
  graft_node_add_attribute (n, graft_attribute_new_string ("arg2", "constant"));
  arg_float (n, 3, 9);
  add_output (&b, "y");
  g_autoptr(GraftRtTensor) x = arange_f32 (2, (gint64[]) { 2, 3 });
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, x, &error);
  g_assert_no_error (error);
  assert_values (out->pdata[0], 2, (gint64[]) { 2, 3 }, (double[]) { 9, 0, 1, 9, 3, 4 });
  builder_clear (&b);
}

/* pad([0, 0, 1, 2]) of [2, 2, 3] with 7: rows of 7 above and below each
 * map, the rows themselves copied whole */
static void
test_pad_rows (void)
{
  Builder b;
  builder_init (&b);
  add_input (&b, "x");
  GraftNode *n = add_node (&b, "aten::constant_pad_nd", IN ("x"), IN ("y"));
  arg_ints (n, 1, (gint64[]) { 0, 0, 1, 2 }, 4);
  arg_float (n, 2, 7);
  add_output (&b, "y");
  g_autoptr(GraftRtTensor) x = arange_f32 (3, (gint64[]) { 2, 2, 3 });
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, x, &error);
  g_assert_no_error (error);
  assert_values (out->pdata[0], 3, (gint64[]) { 2, 5, 3 },
                 (double[]) { 7, 7, 7, 0, 1, 2, 3, 4, 5, 7, 7, 7, 7, 7, 7,
                              7, 7, 7, 6, 7, 8, 9, 10, 11, 7, 7, 7, 7, 7, 7 });
  builder_clear (&b);
}

/* roll(x, [1, -2], [1, 2]) of [2, 2, 3] (Swin's shifted windows: whole
 * rows moved, each rotated), and roll(x, 4) of the flattened tensor */
static void
test_roll (void)
{
  Builder b;
  builder_init (&b);
  add_input (&b, "x");
  GraftNode *n = add_node (&b, "aten::roll", IN ("x"), IN ("y"));
  arg_ints (n, 1, (gint64[]) { 1, -2 }, 2);
  arg_ints (n, 2, (gint64[]) { 1, 2 }, 2);
  n = add_node (&b, "aten::roll", IN ("x"), IN ("flat"));
  arg_ints (n, 1, (gint64[]) { 4 }, 1);
  arg_none (n, 2);
  add_output (&b, "y");
  add_output (&b, "flat");
  g_autoptr(GraftRtTensor) x = arange_f32 (3, (gint64[]) { 2, 2, 3 });
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, x, &error);
  g_assert_no_error (error);
  /* torch.arange(12.).view(2, 2, 3).roll([1, -2], [1, 2]) */
  assert_values (out->pdata[0], 3, (gint64[]) { 2, 2, 3 }, (double[]) { 5, 3, 4, 2, 0, 1, 11, 9, 10, 8, 6, 7 });
  assert_values (out->pdata[1], 3, (gint64[]) { 2, 2, 3 }, (double[]) { 8, 9, 10, 11, 0, 1, 2, 3, 4, 5, 6, 7 });
  builder_clear (&b);
}

/* RMSNorm's statistics: x.pow(2).mean(-1, keepdim=True) (rows of the
 * innermost axis), x.sum([0]) (an outer axis: the indexed loop) and
 * x.pow(0.5) */
static void
test_pow_mean (void)
{
  Builder b;
  builder_init (&b);
  add_input (&b, "x");
  GraftNode *n = add_node (&b, "aten::pow", IN ("x"), IN ("sq"));
  arg_float (n, 1, 2);
  n = add_node (&b, "aten::mean", IN ("sq"), IN ("ms"));
  arg_ints (n, 1, (gint64[]) { -1 }, 1);
  arg_int (n, 2, 1);
  arg_none (n, 3);
  n = add_node (&b, "aten::sum", IN ("x"), IN ("cols"));
  arg_ints (n, 1, (gint64[]) { 0 }, 1);
  arg_int (n, 2, 0);
  arg_none (n, 3);
  n = add_node (&b, "aten::pow", IN ("x"), IN ("root"));
  arg_float (n, 1, 0.5);
  add_output (&b, "ms");
  add_output (&b, "cols");
  add_output (&b, "root");
  g_autoptr(GraftRtTensor) x = arange_f32 (2, (gint64[]) { 2, 3 });
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, x, &error);
  g_assert_no_error (error);
  assert_values (out->pdata[0], 2, (gint64[]) { 2, 1 }, (double[]) { 5.0 / 3, 50.0 / 3 });
  assert_values (out->pdata[1], 1, (gint64[]) { 3 }, (double[]) { 3, 5, 7 });
  assert_values (out->pdata[2], 2, (gint64[]) { 2, 3 },
                 (double[]) { 0, 1, sqrtf (2), sqrtf (3), 2, sqrtf (5) });
  builder_clear (&b);
}

/* masked_fill with a broadcast mask from x > 2 (logical_not of x <= 2) */
static void
test_masked_fill (void)
{
  Builder b;
  builder_init (&b);
  add_input (&b, "x");
  GraftNode *n = add_node (&b, "aten::le", IN ("x"), IN ("le"));
  arg_int (n, 1, 2);
  add_node (&b, "aten::logical_not", IN ("le"), IN ("mask"));
  n = add_node (&b, "aten::masked_fill", IN ("x", "mask"), IN ("y"));
  arg_float (n, 2, -INFINITY);
  add_output (&b, "y");
  g_autoptr(GraftRtTensor) x = arange_f32 (2, (gint64[]) { 2, 3 });
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, x, &error);
  g_assert_no_error (error);
  GraftRtTensor *y = out->pdata[0];
  for (int i = 0; i < 3; i++)
    g_assert_cmpfloat (((float *) y->data)[i], ==, i);
  for (int i = 3; i < 6; i++)
    g_assert_true (isinf (((float *) y->data)[i]) && ((float *) y->data)[i] < 0);
  builder_clear (&b);
}

/* masked_fill with masks broadcast along rows and along columns (the
 * float32 kernel's rows: a mask of one value per row steps by 0) */
static void
test_masked_fill_broadcast (void)
{
  Builder b;
  builder_init (&b);
  add_input (&b, "x");
  GraftNode *n = add_node (&b, "aten::select", IN ("x"), IN ("row"));   /* x[1]: 3 4 5 */
  arg_int (n, 1, 0);
  arg_int (n, 2, 1);
  n = add_node (&b, "aten::gt", IN ("row"), IN ("columns"));   /* F T T, for every row */
  arg_int (n, 1, 3);
  n = add_node (&b, "aten::masked_fill", IN ("x", "columns"), IN ("by_column"));
  arg_float (n, 2, -1.5);
  n = add_node (&b, "aten::select", IN ("x"), IN ("column"));   /* x[:, 0]: 0 3 */
  arg_int (n, 1, 1);
  arg_int (n, 2, 0);
  n = add_node (&b, "aten::unsqueeze", IN ("column"), IN ("column2"));
  arg_int (n, 1, 1);
  n = add_node (&b, "aten::gt", IN ("column2"), IN ("rows"));   /* [[F], [T]] */
  arg_int (n, 1, 2);
  n = add_node (&b, "aten::masked_fill", IN ("x", "rows"), IN ("by_row"));
  arg_float (n, 2, 7);
  add_output (&b, "by_column");
  add_output (&b, "by_row");
  g_autoptr(GraftRtTensor) x = arange_f32 (2, (gint64[]) { 2, 3 });
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, x, &error);
  g_assert_no_error (error);
  assert_values (out->pdata[0], 2, (gint64[]) { 2, 3 }, (double[]) { 0, -1.5, -1.5, 3, -1.5, -1.5 });
  assert_values (out->pdata[1], 2, (gint64[]) { 2, 3 }, (double[]) { 0, 1, 2, 7, 7, 7 });
  builder_clear (&b);
}

/* hardtanh_(x, 0., 6.) (ReLU6) and clamp(x, None, 2.) take their
 * constant bounds */
static void
test_clamp_bounds (void)
{
  Builder b;
  builder_init (&b);
  add_input (&b, "x");
  GraftNode *n = add_node (&b, "aten::sub", IN ("x"), IN ("shifted"));
  arg_int (n, 1, 3);
  /* clamp first: hardtanh_ mutates shifted, and nodes after it read the
   * mutated tensor, as in PyTorch */
  n = add_node (&b, "aten::clamp", IN ("shifted"), IN ("below"));
  arg_none (n, 1);
  arg_float (n, 2, 2.);
  n = add_node (&b, "aten::hardtanh_", IN ("shifted"), IN ("relu6"));
  arg_float (n, 1, 0.);
  arg_float (n, 2, 6.);
  add_output (&b, "relu6");
  add_output (&b, "below");
  g_autoptr(GraftRtTensor) x = arange_f32 (1, (gint64[]) { 12 });
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, x, &error);
  g_assert_no_error (error);
  assert_values (out->pdata[0], 1, (gint64[]) { 12 }, (double[]) { 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 6, 6 });
  assert_values (out->pdata[1], 1, (gint64[]) { 12 }, (double[]) { -3, -2, -1, 0, 1, 2, 2, 2, 2, 2, 2, 2 });
  builder_clear (&b);
}

/* scaled_dot_product_attention: causal, and a bool mask that hides every
 * key of the second query (a zero row, not NaN) */
static void
test_attention_masks (void)
{
  Builder b;
  builder_init (&b);
  add_input (&b, "x");
  GraftNode *n = add_node (&b, "aten::scaled_dot_product_attention", IN ("x", "x", "x"), IN ("causal"));
  arg_none (n, 3);
  arg_float (n, 4, 0.);
  arg_bool (n, 5, TRUE);
  n = add_node (&b, "aten::select", IN ("x"), IN ("row"));
  arg_int (n, 1, 3);
  arg_int (n, 2, 0);
  n = add_node (&b, "aten::lt", IN ("row"), IN ("keep"));   /* [[T, F]]: query 0 sees key 0 only */
  arg_float (n, 1, 0.5);
  n = add_node (&b, "aten::transpose", IN ("keep"), IN ("keep_t"));   /* [[T], [F]] broadcast over keys */
  arg_int (n, 1, -1);
  arg_int (n, 2, -2);
  n = add_node (&b, "aten::scaled_dot_product_attention", IN ("x", "x", "x", "keep_t"), IN ("masked"));
  arg_float (n, 4, 0.);
  arg_bool (n, 5, FALSE);
  add_output (&b, "causal");
  add_output (&b, "masked");
  g_autoptr(GraftRtTensor) x = arange_f32 (4, (gint64[]) { 1, 1, 2, 2 });
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, x, &error);
  g_assert_no_error (error);
  gint64 dims[] = { 1, 1, 2, 2 };
  assert_values (out->pdata[0], 4, dims, (double[]) { 0, 1, 1.99830279, 2.99830279 });
  /* query 0 sees both keys (softmax of 1/√2·[1, 3]), query 1 none */
  double w1 = 1 / (1 + exp (-2 / sqrt (2.)));
  assert_values (out->pdata[1], 4, dims, (double[]) { 2 * w1, 1 + 2 * w1, 0, 0 });
  builder_clear (&b);
}

/* index / gather / embedding name the bad index instead of reading past
 * the tensor */
static void
test_indexing_out_of_range (void)
{
  static const char *const ops[] = { "aten::embedding", "aten::gather", "aten::index" };
  for (guint k = 0; k < G_N_ELEMENTS (ops); k++)
    {
      Builder b;
      builder_init (&b);
      add_input (&b, "x");
      GraftNode *n = add_node (&b, "aten::full", NULL, IN ("at"));
      arg_ints (n, 0, (gint64[]) { 2, 1 }, 2);
      arg_int (n, 1, 7);
      if (k == 0)
        add_node (&b, ops[k], IN ("x", "at"), IN ("y"));
      else if (k == 1)
        {
          n = add_node (&b, ops[k], IN ("x", "at"), IN ("y"));   /* gather(x, 1, at) */
          arg_int (n, 1, 1);
        }
      else
        {
          add_node (&b, "prim::ListConstruct", IN ("at"), IN ("indices"));
          add_node (&b, ops[k], IN ("x", "indices"), IN ("y"));
        }
      add_output (&b, "y");
      g_autoptr(GraftRtTensor) x = arange_f32 (2, (gint64[]) { 2, 3 });
      g_autoptr(GError) error = NULL;
      g_autoptr(GPtrArray) out = run (&b, x, &error);
      g_assert_null (out);
      g_assert_nonnull (error);
      g_test_message ("%s: %s", ops[k], error->message);
      g_assert_nonnull (strstr (error->message, "7"));
      g_assert_nonnull (strstr (error->message, "out of range"));
      builder_clear (&b);
    }
}

/* d = {}; d["a"] = x; d["a"] = x + 1; d["a"], and 6 & 3 on Python ints */
static void
test_dict_set_item_and_bitwise (void)
{
  Builder b;
  builder_init (&b);
  add_input (&b, "x");
  add_node (&b, "prim::DictConstruct", NULL, IN ("d"));
  GraftNode *n = add_node (&b, "aten::_set_item", IN ("d", "x"), IN ("none1"));
  graft_node_add_attribute (n, graft_attribute_new_string ("arg1", "a"));
  n = add_node (&b, "aten::add", IN ("x"), IN ("x1"));
  arg_int (n, 1, 1);
  n = add_node (&b, "aten::_set_item", IN ("d", "x1"), IN ("none2"));
  graft_node_add_attribute (n, graft_attribute_new_string ("arg1", "a"));
  add_node (&b, "aten::len", IN ("d"), IN ("entries"));
  n = add_node (&b, "aten::__getitem__", IN ("d"), IN ("a"));
  graft_node_add_attribute (n, graft_attribute_new_string ("arg1", "a"));
  n = add_node (&b, "aten::__and__", NULL, IN ("bits"));
  arg_int (n, 0, 6);
  arg_int (n, 1, 3);
  add_output (&b, "entries");
  add_output (&b, "a");
  add_output (&b, "bits");
  g_autoptr(GraftRtTensor) x = arange_f32 (1, (gint64[]) { 2 });
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, x, &error);
  g_assert_no_error (error);
  g_assert_cmpint (graft_rt_tensor_get_i64 (out->pdata[0], 0), ==, 2);   /* one key, one value */
  assert_values (out->pdata[1], 1, (gint64[]) { 2 }, (double[]) { 1, 2 });
  g_assert_cmpint (graft_rt_tensor_get_i64 (out->pdata[2], 0), ==, 2);
  builder_clear (&b);
}

/* a nested tensor from a left-aligned mask, padded back with -1 */
static void
test_nested_round_trip (void)
{
  Builder b;
  builder_init (&b);
  add_input (&b, "x");
  add_node (&b, "aten::size", IN ("x"), IN ("size"));
  GraftNode *n = add_node (&b, "aten::ones", NULL, IN ("ones"));
  arg_ints (n, 0, (gint64[]) { 2, 3 }, 2);
  n = add_node (&b, "aten::slice", IN ("ones"), IN ("keep"));
  arg_int (n, 1, 1);
  arg_int (n, 2, 0);
  arg_int (n, 3, 2);
  arg_int (n, 4, 1);
  n = add_node (&b, "aten::pad", IN ("keep"), IN ("mask"));
  arg_ints (n, 1, (gint64[]) { 0, 1 }, 2);
  add_node (&b, "aten::_nested_tensor_from_mask_left_aligned", IN ("x", "mask"), IN ("aligned"));
  n = add_node (&b, "aten::_nested_tensor_from_mask", IN ("x", "mask"), IN ("nested"));
  arg_bool (n, 2, TRUE);
  n = add_node (&b, "aten::to_padded_tensor", IN ("nested"), IN ("y"));
  arg_float (n, 1, -1);
  add_output (&b, "aligned");
  add_output (&b, "y");
  g_autoptr(GraftRtTensor) x = arange_f32 (3, (gint64[]) { 2, 3, 1 });
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, x, &error);
  g_assert_no_error (error);
  g_assert_cmpint (graft_rt_tensor_get_i64 (out->pdata[0], 0), ==, 1);
  /* both sequences keep 2 of 3 positions: the padded result has length 2 */
  assert_values (out->pdata[1], 3, (gint64[]) { 2, 2, 1 }, (double[]) { 0, 1, 3, 4 });
  builder_clear (&b);
}

/* Each TorchScript op has one schema (several kernel families add aten:: ops). */
static void
test_no_duplicate_schemas (void)
{
  g_autoptr(GPtrArray) all = graft_op_registry_list ();
  g_autoptr(GHashTable) seen = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr(GString) dups = g_string_new (NULL);
  for (guint i = 0; i < all->len; i++)
    {
      const GraftOpSchema *s = all->pdata[i];
      if (!g_str_has_prefix (s->name, "aten::") && !g_str_has_prefix (s->name, "prim::"))
        continue;
      if (!g_hash_table_add (seen, (gpointer) s->name))
        g_string_append_printf (dups, " %s", s->name);
    }
  if (dups->len)
    g_test_fail_printf ("registered twice:%s", dups->str);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/runtime/aten/no-duplicate-schemas", test_no_duplicate_schemas);
  g_test_add_func ("/runtime/aten/select-slice", test_select_slice);
  g_test_add_func ("/runtime/aten/select-out-of-range", test_select_out_of_range);
  g_test_add_func ("/runtime/aten/chunk-uneven", test_chunk_uneven);
  g_test_add_func ("/runtime/aten/max-pool-nan", test_max_pool_nan);
  g_test_add_func ("/runtime/aten/split-sizes-mismatch", test_split_sizes_mismatch);
  g_test_add_func ("/runtime/aten/floor-division-modulo", test_floor_division_and_modulo);
  g_test_add_func ("/runtime/aten/int-division-by-zero", test_int_division_by_zero);
  g_test_add_func ("/runtime/aten/promotion-alpha", test_promotion_and_alpha);
  g_test_add_func ("/runtime/aten/expand-repeat", test_expand_repeat);
  for (GraftSimdLevel level = GRAFT_SIMD_PORTABLE; level <= GRAFT_SIMD_AVX512; level++)
    {
      g_autofree char *path = g_strdup_printf ("/runtime/aten/avg-pool-padding/%s", graft_simd_level_to_string (level));
      g_test_add_data_func (path, GINT_TO_POINTER (level), test_avg_pool_padding_at_level);
    }
  g_test_add_func ("/runtime/aten/size-list", test_size_list);
  g_test_add_func ("/runtime/aten/getitem-out-of-range", test_getitem_out_of_range);
  g_test_add_func ("/runtime/aten/raise", test_raise);
  g_test_add_func ("/runtime/aten/layer-norm", test_layer_norm);
  g_test_add_func ("/runtime/aten/factories", test_factories);
  g_test_add_func ("/runtime/aten/pad-crop", test_pad_crop);
  g_test_add_func ("/runtime/aten/pad-rows", test_pad_rows);
  g_test_add_func ("/runtime/aten/roll", test_roll);
  g_test_add_func ("/runtime/aten/pow-mean", test_pow_mean);
  g_test_add_func ("/runtime/aten/masked-fill", test_masked_fill);
  g_test_add_func ("/runtime/aten/masked-fill-broadcast", test_masked_fill_broadcast);
  g_test_add_func ("/runtime/aten/clamp-bounds", test_clamp_bounds);
  g_test_add_func ("/runtime/aten/attention-masks", test_attention_masks);
  g_test_add_func ("/runtime/aten/indexing-out-of-range", test_indexing_out_of_range);
  g_test_add_func ("/runtime/aten/dict-set-item-bitwise", test_dict_set_item_and_bitwise);
  g_test_add_func ("/runtime/aten/nested-round-trip", test_nested_round_trip);
  return g_test_run ();
}
