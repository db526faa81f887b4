/* Kernel and engine unit tests on small in-memory graphs: broadcasting,
 * negative axes, empty tensors, convolution geometry, integer wrap-around
 * and division by zero, subgraph captures, liveness, unsupported-op
 * reporting, input checks, .npy and .pb file handling, the narrow element
 * types, and the checks of the opset 23+ transformer operators. */
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>
#include "ir/narrow-dtype.h"
#include "onnx/op-schemas.h"
#include "runtime/npy.h"
#include "runtime/op.h"
#include "runtime/runtime.h"
#include "runtime/tensor-file.h"
#include "simd-levels.h"
#include "op-timings.h"

/* ---- tiny graph builder ---- */

typedef struct {
  GraftModel *model;
  GraftGraph *graph;
  GraftNode *node;
} Builder;

static void
builder_init (Builder *b, gint64 opset)
{
  b->model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  b->graph = graft_graph_new ("test");
  graft_model_set_opset (b->model, "onnx", opset);
}

static GraftValue *
add_input (GraftGraph *g, const char *name, GraftDType dtype, int rank, const gint64 *dims)
{
  GraftValue *v = graft_graph_ensure_value (g, name);
  v->dtype = dtype;
  graft_shape_init_fixed (&v->shape, rank, dims);
  graft_graph_add_input (g, v);
  return v;
}

static GraftNode *
add_node (GraftGraph *g, const char *op, const char *const *inputs, const char *const *outputs)
{
  GraftNode *node = graft_graph_add_node (g, NULL, op, op);
  for (guint i = 0; inputs && inputs[i]; i++)
    graft_node_add_input (node, *inputs[i] ? graft_graph_resolve_value (g, inputs[i]) ?
                                 graft_graph_resolve_value (g, inputs[i]) : graft_graph_ensure_value (g, inputs[i]) : NULL);
  for (guint i = 0; outputs && outputs[i]; i++)
    graft_node_add_output (node, graft_graph_ensure_value (g, outputs[i]));
  return node;
}

static void
add_output (GraftGraph *g, const char *name)
{
  GraftValue *v = graft_graph_ensure_value (g, name);
  graft_graph_add_output (g, v);
}

static GraftRtTensor *
tensor_f32 (int rank, const gint64 *dims, const float *values)
{
  GraftRtTensor *t = graft_rt_tensor_new (GRAFT_DTYPE_FLOAT32, rank, dims, NULL);
  if (values)
    memcpy (t->data, values, t->nbytes);
  return t;
}

static GraftRtTensor *
tensor_typed (GraftDType dtype, int rank, const gint64 *dims, const gint64 *values)
{
  GraftRtTensor *t = graft_rt_tensor_new (dtype, rank, dims, NULL);
  for (gint64 i = 0; values && i < t->numel; i++)
    graft_rt_tensor_set_i64 (t, i, values[i]);
  return t;
}

/* Runs the builder's model with inputs (name, tensor) pairs, NULL-terminated. */
static GPtrArray *
run (Builder *b, GError **error, ...)
{
  va_list args;
  g_autoptr(GHashTable) inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, (GDestroyNotify) graft_rt_tensor_unref);
  graft_model_set_graph (b->model, b->graph);
  va_start (args, error);
  const char *name;
  while ((name = va_arg (args, const char *)))
    g_hash_table_insert (inputs, (gpointer) name, va_arg (args, GraftRtTensor *));
  va_end (args);
  g_autoptr(GraftRuntime) rt = graft_runtime_new (b->model, error);
  if (rt == NULL)
    return NULL;
  return graft_runtime_run (rt, inputs, NULL, NULL, NULL, error);
}

static void
builder_clear (Builder *b)
{
  g_object_unref (b->model);
}

#define IN(...) ((const char *const[]) { __VA_ARGS__, NULL })

/* ---- tests ---- */

static void
test_broadcast_add (void)
{
  Builder b;
  builder_init (&b, 17);
  gint64 da[] = { 2, 3 }, db[] = { 3 };
  add_input (b.graph, "a", GRAFT_DTYPE_FLOAT32, 2, da);
  add_input (b.graph, "b", GRAFT_DTYPE_FLOAT32, 1, db);
  add_node (b.graph, "Add", IN ("a", "b"), IN ("y"));
  add_output (b.graph, "y");
  float av[] = { 1, 2, 3, 4, 5, 6 }, bv[] = { 10, 20, 30 };
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, &error, "a", tensor_f32 (2, da, av), "b", tensor_f32 (1, db, bv), NULL);
  g_assert_no_error (error);
  GraftRtTensor *y = out->pdata[0];
  g_assert_cmpint (y->rank, ==, 2);
  float want[] = { 11, 22, 33, 14, 25, 36 };
  for (int i = 0; i < 6; i++)
    g_assert_cmpfloat (((float *) y->data)[i], ==, want[i]);
  builder_clear (&b);
}

/* The element of t (numpy-broadcast to y's shape) at y's flat index i. */
static gint64
broadcast_offset (const GraftRtTensor *y, gint64 i, const GraftRtTensor *t)
{
  gint64 offset = 0, stride = 1;
  for (int d = 1; d <= y->rank; d++)
    {
      gint64 coordinate = i % y->dims[y->rank - d];
      i /= y->dims[y->rank - d];
      if (d <= t->rank)
        {
          gint64 size = t->dims[t->rank - d];
          offset += (size == 1 ? 0 : coordinate) * stride;
          stride *= size;
        }
    }
  return offset;
}

/* float32 Add, Sub, Mul and Div (vectorised per SIMD level) on operands
 * made inside the graph, so that the kernel may write into one of them:
 * same shapes of odd length, a scalar on either side, squeeze-and-
 * excitation's [N, C, 1, 1] over [N, C, H, W] from both sides, a layer
 * scale [C, 1, 1], and an outer product's strided walk; the bits must be
 * those of the scalar float operation. */
static void
test_binary_float (void)
{
  static const struct {
    int rank_a, rank_b;
    gint64 a[4], b[4];
  } shapes[] = {
    { 2, 2, { 3, 37 }, { 3, 37 } }, { 2, 0, { 5, 19 }, { 0 } }, { 0, 3, { 0 }, { 2, 3, 17 } },
    { 4, 4, { 2, 5, 7, 9 }, { 2, 5, 1, 1 } }, { 4, 4, { 2, 5, 1, 1 }, { 2, 5, 7, 9 } },
    { 4, 3, { 2, 5, 3, 33 }, { 5, 1, 1 } }, { 2, 2, { 4, 1 }, { 1, 5 } }, { 1, 1, { 1 }, { 1 } },
  };
  static const char *const ops[] = { "Add", "Sub", "Mul", "Div" };
  for (guint o = 0; o < G_N_ELEMENTS (ops); o++)
    for (guint t = 0; t < G_N_ELEMENTS (shapes); t++)
      {
        Builder b;
        builder_init (&b, 17);
        add_input (b.graph, "a0", GRAFT_DTYPE_FLOAT32, shapes[t].rank_a, shapes[t].a);
        add_input (b.graph, "b0", GRAFT_DTYPE_FLOAT32, shapes[t].rank_b, shapes[t].b);
        add_node (b.graph, "Neg", IN ("a0"), IN ("a"));
        add_node (b.graph, "Neg", IN ("b0"), IN ("b"));
        add_node (b.graph, ops[o], IN ("a", "b"), IN ("y"));
        add_output (b.graph, "y");
        g_autoptr(GraftRtTensor) ta = tensor_f32 (shapes[t].rank_a, shapes[t].a, NULL);
        g_autoptr(GraftRtTensor) tb = tensor_f32 (shapes[t].rank_b, shapes[t].b, NULL);
        float *av = ta->data, *bv = tb->data;
        for (gint64 i = 0; i < ta->numel; i++)
          av[i] = (float) ((i * 37) % 23) / 7 - 1.5f;
        for (gint64 i = 0; i < tb->numel; i++)
          bv[i] = i % 5 == 3 ? 0.0f : (float) ((i * 11) % 13) / 3 - 2.25f;
        g_autoptr(GError) error = NULL;
        g_autoptr(GPtrArray) out = run (&b, &error, "a0", graft_rt_tensor_ref (ta), "b0", graft_rt_tensor_ref (tb), NULL);
        g_assert_no_error (error);
        GraftRtTensor *y = out->pdata[0];
        for (gint64 i = 0; i < y->numel; i++)
          {
            float x = -av[broadcast_offset (y, i, ta)], z = -bv[broadcast_offset (y, i, tb)];
            float want = o == 0 ? x + z : o == 1 ? x - z : o == 2 ? x * z : x / z;
            float got = ((float *) y->data)[i];
            if (memcmp (&got, &want, sizeof got) != 0)
              g_error ("%s, shapes %u: y[%" G_GINT64_FORMAT "] = %.9g, want %.9g", ops[o], t, i, got, want);
          }
        builder_clear (&b);
      }
}

/* Expand and Where row by row of the last axis, against numpy's
 * broadcasting: rows copied and rows of one repeated value, a condition,
 * X and Y each broadcast on different axes, elements of 1, 2, 4 and 8
 * bytes, a last axis of 1. */
static void
test_expand_where_rows (void)
{
  static const struct {
    int rank_c, rank_x, rank_y;
    gint64 c[4], x[4], y[4];
  } shapes[] = {
    { 4, 4, 0, { 2, 1, 1, 7 }, { 2, 3, 5, 7 }, { 0 } },       /* wav2vec2's mask */
    { 3, 2, 1, { 2, 1, 5 }, { 3, 1 }, { 5 } },
    { 2, 2, 2, { 4, 1 }, { 1, 6 }, { 4, 6 } },
    { 3, 3, 3, { 2, 3, 1 }, { 2, 1, 1 }, { 1, 3, 1 } },
  };
  static const GraftDType dtypes[] = { GRAFT_DTYPE_UINT8, GRAFT_DTYPE_INT16, GRAFT_DTYPE_FLOAT32, GRAFT_DTYPE_INT64 };
  for (guint d = 0; d < G_N_ELEMENTS (dtypes); d++)
    for (guint t = 0; t < G_N_ELEMENTS (shapes); t++)
      {
        Builder b;
        builder_init (&b, 17);
        add_input (b.graph, "c", GRAFT_DTYPE_BOOL, shapes[t].rank_c, shapes[t].c);
        add_input (b.graph, "x", dtypes[d], shapes[t].rank_x, shapes[t].x);
        add_input (b.graph, "y", dtypes[d], shapes[t].rank_y, shapes[t].y);
        gint64 rank_shape = shapes[t].rank_c;
        add_input (b.graph, "shape", GRAFT_DTYPE_INT64, 1, &rank_shape);
        add_node (b.graph, "Where", IN ("c", "x", "y"), IN ("w"));
        add_node (b.graph, "Expand", IN ("x", "shape"), IN ("e"));
        add_output (b.graph, "w");
        add_output (b.graph, "e");
        g_autoptr(GraftRtTensor) tc = tensor_typed (GRAFT_DTYPE_BOOL, shapes[t].rank_c, shapes[t].c, NULL);
        g_autoptr(GraftRtTensor) tx = tensor_typed (dtypes[d], shapes[t].rank_x, shapes[t].x, NULL);
        g_autoptr(GraftRtTensor) ty = tensor_typed (dtypes[d], shapes[t].rank_y, shapes[t].y, NULL);
        for (gint64 i = 0; i < tc->numel; i++)
          graft_rt_tensor_set_i64 (tc, i, (i * 7) % 3 != 0);
        for (gint64 i = 0; i < tx->numel; i++)
          graft_rt_tensor_set_i64 (tx, i, 10 + i);
        for (gint64 i = 0; i < ty->numel; i++)
          graft_rt_tensor_set_i64 (ty, i, 100 + i);
        g_autoptr(GraftRtTensor) shape = tensor_typed (GRAFT_DTYPE_INT64, 1, &rank_shape, shapes[t].c);
        g_autoptr(GError) error = NULL;
        g_autoptr(GPtrArray) out = run (&b, &error, "c", graft_rt_tensor_ref (tc), "x", graft_rt_tensor_ref (tx),
                                        "y", graft_rt_tensor_ref (ty), "shape", graft_rt_tensor_ref (shape), NULL);
        g_assert_no_error (error);
        GraftRtTensor *w = out->pdata[0], *e = out->pdata[1];
        for (gint64 i = 0; i < w->numel; i++)
          {
            gboolean take_x = graft_rt_tensor_get_i64 (tc, broadcast_offset (w, i, tc));
            gint64 want = take_x ? graft_rt_tensor_get_i64 (tx, broadcast_offset (w, i, tx))
                                 : graft_rt_tensor_get_i64 (ty, broadcast_offset (w, i, ty));
            g_assert_cmpint (graft_rt_tensor_get_i64 (w, i), ==, want);
          }
        for (gint64 i = 0; i < e->numel; i++)
          g_assert_cmpint (graft_rt_tensor_get_i64 (e, i), ==, graft_rt_tensor_get_i64 (tx, broadcast_offset (e, i, tx)));
        builder_clear (&b);
      }
}

/* Pow by one float exponent (its own loop): 2 is x·x and 0.5 sqrtf, both
 * correctly rounded, with pow's answers at −0 and −∞; 3 is x·x·x, as
 * PyTorch and onnxruntime compute a cube; others powf. */
static void
test_pow_by_one_exponent (void)
{
  const float x[] = { 0.0f, -0.0f, 1.5f, -2.5f, INFINITY, -INFINITY, NAN, 3e-20f, 1e20f, -60.581284f, 93.1202f, 7.0f };
  const float exponents[] = { 2.0f, 0.5f, 3.0f, 1.0f, 2.5f };
  gint64 d[] = { G_N_ELEMENTS (x) };
  for (guint k = 0; k < G_N_ELEMENTS (exponents); k++)
    {
      Builder b;
      builder_init (&b, 17);
      add_input (b.graph, "x", GRAFT_DTYPE_FLOAT32, 1, d);
      add_input (b.graph, "e", GRAFT_DTYPE_FLOAT32, 0, NULL);
      add_node (b.graph, "Pow", IN ("x", "e"), IN ("y"));
      add_output (b.graph, "y");
      g_autoptr(GError) error = NULL;
      g_autoptr(GPtrArray) out = run (&b, &error, "x", tensor_f32 (1, d, x), "e", tensor_f32 (0, NULL, &exponents[k]),
                                      NULL);
      g_assert_no_error (error);
      const float *y = ((GraftRtTensor *) out->pdata[0])->data;
      for (guint i = 0; i < G_N_ELEMENTS (x); i++)
        {
          float e = exponents[k];
          float want = e == 2.0f ? x[i] * x[i]
                       : e == 0.5f ? (x[i] == 0.0f ? 0.0f : x[i] == -INFINITY ? INFINITY : sqrtf (x[i]))
                       : e == 3.0f ? x[i] * x[i] * x[i]
                       : powf (x[i], e);
          if (isnan (want))
            g_assert_true (isnan (y[i]));
          else
            g_assert_true (memcmp (&y[i], &want, sizeof want) == 0);   /* bit for bit, signs of zero too */
        }
      builder_clear (&b);
    }
}

/* Constant nodes are given at plan time: a run reads them as it reads
 * initializers, again in a second run; one that is a graph output is
 * the run's own tensor each time. */
static void
test_constant_nodes_planned (void)
{
  Builder b;
  builder_init (&b, 17);
  gint64 d[] = { 3 };
  add_input (b.graph, "a", GRAFT_DTYPE_FLOAT32, 1, d);
  float cv[] = { 2, 3, 4 };
  for (guint k = 0; k < 2; k++)
    {
      GraftNode *c = graft_graph_add_node (b.graph, NULL, "Constant", k ? "Constant_z" : "Constant_c");
      graft_node_add_output (c, graft_graph_ensure_value (b.graph, k ? "z" : "c"));
      g_autoptr(GraftTensor) t = graft_tensor_new ("value", GRAFT_DTYPE_FLOAT32, 1, d);
      g_autoptr(GBytes) bytes = g_bytes_new (cv, sizeof cv);
      g_assert_true (graft_tensor_set_data (t, bytes, NULL));
      graft_node_add_attribute (c, graft_attribute_new_tensor ("value", t));
    }
  add_node (b.graph, "Mul", IN ("a", "c"), IN ("y"));
  add_output (b.graph, "y");
  add_output (b.graph, "z");
  graft_model_set_graph (b.model, b.graph);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftRuntime) rt = graft_runtime_new (b.model, &error);
  g_assert_no_error (error);
  float av[] = { 1, -1, 0.5f };
  for (int round = 0; round < 2; round++)
    {
      g_autoptr(GHashTable) inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                            (GDestroyNotify) graft_rt_tensor_unref);
      g_hash_table_insert (inputs, (gpointer) "a", tensor_f32 (1, d, av));
      g_autoptr(GPtrArray) out = graft_runtime_run (rt, inputs, NULL, NULL, NULL, &error);
      g_assert_no_error (error);
      float *y = ((GraftRtTensor *) out->pdata[0])->data, *z = ((GraftRtTensor *) out->pdata[1])->data;
      for (int i = 0; i < 3; i++)
        {
          g_assert_cmpfloat (y[i], ==, av[i] * cv[i]);
          g_assert_cmpfloat (z[i], ==, cv[i]);
        }
      /* the caller may write its outputs: the next run gives the constant again */
      if (graft_rt_tensor_is_writable (out->pdata[1]))
        z[0] = 99;
    }
  builder_clear (&b);
}

static void
add_initializer (GraftGraph *g, const char *name, GraftDType dtype, int rank, const gint64 *dims, gconstpointer data,
                 gsize size)
{
  GraftTensor *t = graft_tensor_new (name, dtype, rank, dims);
  g_autoptr(GBytes) bytes = g_bytes_new (data, size);
  g_assert_true (graft_tensor_set_data (t, bytes, NULL));
  graft_graph_add_initializer (g, graft_graph_ensure_value (g, name), t);
}

/* The engine reuses a step's inferred output shapes while its inputs keep
 * their shapes and the values of small inputs (runtime-run.c
 * infer_outputs): a Reshape and a ConstantOfShape whose target shape and
 * a Range whose float limit are graph inputs, fed other values and shapes
 * run after run, give each run's own shapes and values (ConstantOfShape
 * and Range allocate what inference said). */
static void
test_inference_reused_only_for_same_inputs (void)
{
  Builder b;
  builder_init (&b, 17);
  float zero = 0, step = 1;
  const char *names[] = { "x", "shape", "limit" };
  const GraftDType types[] = { GRAFT_DTYPE_FLOAT32, GRAFT_DTYPE_INT64, GRAFT_DTYPE_FLOAT32 };
  const int ranks[] = { 2, 1, 0 };
  for (int i = 0; i < 3; i++)
    {
      GraftValue *v = graft_graph_ensure_value (b.graph, names[i]);
      v->dtype = types[i];
      graft_shape_init (&v->shape, ranks[i]);
      graft_graph_add_input (b.graph, v);
    }
  add_initializer (b.graph, "zero", GRAFT_DTYPE_FLOAT32, 0, NULL, &zero, sizeof zero);
  add_initializer (b.graph, "step", GRAFT_DTYPE_FLOAT32, 0, NULL, &step, sizeof step);
  add_node (b.graph, "Reshape", IN ("x", "shape"), IN ("y"));
  add_node (b.graph, "Range", IN ("zero", "limit", "step"), IN ("r"));
  add_node (b.graph, "ConstantOfShape", IN ("shape"), IN ("c"));
  add_output (b.graph, "y");
  add_output (b.graph, "r");
  add_output (b.graph, "c");
  graft_model_set_graph (b.model, b.graph);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftRuntime) rt = graft_runtime_new (b.model, &error);
  g_assert_no_error (error);
  const struct { gint64 x[2], shape[2]; float limit; gint64 range_length; } rounds[] = {
    { { 2, 6 }, { 3, 4 }, 3.0f, 3 }, { { 2, 6 }, { 3, 4 }, 3.0f, 3 }, { { 2, 6 }, { 4, 3 }, 3.5f, 4 },
    { { 1, 6 }, { 2, 3 }, 3.5f, 4 }, { { 2, 6 }, { 3, 4 }, 1.0f, 1 }, { { 2, 6 }, { 12, 1 }, 1.0f, 1 },
  };
  for (guint k = 0; k < G_N_ELEMENTS (rounds); k++)
    {
      g_autoptr(GHashTable) inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                            (GDestroyNotify) graft_rt_tensor_unref);
      GraftRtTensor *xt = tensor_f32 (2, rounds[k].x, NULL);
      for (gint64 i = 0; i < xt->numel; i++)
        ((float *) xt->data)[i] = (float) (i + k);
      gint64 two = 2;
      GraftRtTensor *shape = tensor_typed (GRAFT_DTYPE_INT64, 1, &two, rounds[k].shape);
      GraftRtTensor *limit = tensor_f32 (0, NULL, &rounds[k].limit);
      g_hash_table_insert (inputs, (gpointer) "x", xt);
      g_hash_table_insert (inputs, (gpointer) "shape", shape);
      g_hash_table_insert (inputs, (gpointer) "limit", limit);
      g_autoptr(GPtrArray) out = graft_runtime_run (rt, inputs, NULL, NULL, NULL, &error);
      g_assert_no_error (error);
      GraftRtTensor *y = out->pdata[0], *r = out->pdata[1], *c = out->pdata[2];
      g_assert_cmpint (c->rank, ==, 2);
      g_assert_cmpint (c->dims[0], ==, rounds[k].shape[0]);
      g_assert_cmpint (c->dims[1], ==, rounds[k].shape[1]);
      g_assert_cmpint (y->rank, ==, 2);
      g_assert_cmpint (y->dims[0], ==, rounds[k].shape[0]);
      g_assert_cmpint (y->dims[1], ==, rounds[k].shape[1]);
      for (gint64 i = 0; i < y->numel; i++)
        g_assert_cmpfloat (((float *) y->data)[i], ==, (float) (i + k));
      g_assert_cmpint (r->rank, ==, 1);
      g_assert_cmpint (r->dims[0], ==, rounds[k].range_length);
      for (gint64 i = 0; i < r->numel; i++)
        g_assert_cmpfloat (((float *) r->data)[i], ==, (float) i);
    }
  builder_clear (&b);
}

/* Steps that only compute from constants and shapes (a mask built from
 * Shape → Gather → Range → Cast → Unsqueeze → Mul, and a Neg of a
 * constant) keep their values between runs: a run of the same shape
 * takes them without running them (the profile counts no call), and a
 * run of another shape computes them again; values are right each time,
 * whatever the caller did to the previous run's outputs. */
static void
test_shape_steps_memoised (void)
{
  Builder b;
  builder_init (&b, 17);
  gint64 one = 1, zero = 0, axes = 0;
  float two = 2;
  GraftValue *x = graft_graph_ensure_value (b.graph, "x");
  x->dtype = GRAFT_DTYPE_FLOAT32;
  graft_shape_init (&x->shape, 2);
  graft_graph_add_input (b.graph, x);
  add_initializer (b.graph, "one", GRAFT_DTYPE_INT64, 0, NULL, &one, sizeof one);
  add_initializer (b.graph, "zero", GRAFT_DTYPE_INT64, 0, NULL, &zero, sizeof zero);
  add_initializer (b.graph, "axes", GRAFT_DTYPE_INT64, 1, &one, &axes, sizeof axes);
  add_initializer (b.graph, "two", GRAFT_DTYPE_FLOAT32, 0, NULL, &two, sizeof two);
  add_node (b.graph, "Shape", IN ("x"), IN ("shape"));
  add_node (b.graph, "Gather", IN ("shape", "one"), IN ("columns"));
  add_node (b.graph, "Range", IN ("zero", "columns", "one"), IN ("index"));
  GraftNode *cast = add_node (b.graph, "Cast", IN ("index"), IN ("index_f"));
  graft_node_add_attribute (cast, graft_attribute_new_int ("to", GRAFT_DTYPE_FLOAT32));
  add_node (b.graph, "Unsqueeze", IN ("index_f", "axes"), IN ("row"));
  add_node (b.graph, "Mul", IN ("row", "two"), IN ("bias"));
  add_node (b.graph, "Neg", IN ("two"), IN ("minus_two"));
  add_node (b.graph, "Add", IN ("x", "bias"), IN ("biased"));
  add_node (b.graph, "Add", IN ("biased", "minus_two"), IN ("y"));
  add_output (b.graph, "y");
  graft_model_set_graph (b.model, b.graph);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftRuntime) rt = graft_runtime_new (b.model, &error);
  g_assert_no_error (error);
  graft_runtime_set_profiling (rt, TRUE);
  const gint64 shapes[][2] = { { 2, 3 }, { 2, 3 }, { 2, 5 }, { 2, 3 }, { 3, 3 }, { 3, 3 } };
  /* the first run keeps nothing (a model run once holds what its plan
   * says); {3, 3}: another Shape, the same column count */
  const guint64 range_calls[] = { 1, 1, 1, 1, 0, 0 };
  for (guint round = 0; round < G_N_ELEMENTS (shapes); round++)
    {
      g_autoptr(GHashTable) inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                            (GDestroyNotify) graft_rt_tensor_unref);
      GraftRtTensor *xt = tensor_f32 (2, shapes[round], NULL);
      for (gint64 i = 0; i < xt->numel; i++)
        ((float *) xt->data)[i] = (float) (i * 10 + round);
      g_hash_table_insert (inputs, (gpointer) "x", xt);
      graft_runtime_reset_timings (rt);
      g_autoptr(GPtrArray) out = graft_runtime_run (rt, inputs, NULL, NULL, NULL, &error);
      g_assert_no_error (error);
      GraftRtTensor *y = out->pdata[0];
      g_assert_cmpint (y->dims[0], ==, shapes[round][0]);
      g_assert_cmpint (y->dims[1], ==, shapes[round][1]);
      for (gint64 i = 0; i < y->numel; i++)
        g_assert_cmpfloat (((float *) y->data)[i], ==, (float) (i * 10 + round) + 2 * (i % shapes[round][1]) - 2);
      g_assert_cmpuint (graft_test_op_calls (rt, "onnx::Range", NULL, NULL), ==, range_calls[round]);
      memset (y->data, 0xff, y->nbytes);   /* the next run must not read it */
    }
  builder_clear (&b);
}

/* A Resize of values that depend only on constants runs at plan time
 * like the other pure steps (runtime-fusion.c fold_constant_steps), and
 * would be memoised as they are on values from shapes: DETR's position embedding
 * starts from its pixel mask resized to the feature map, and every Sin,
 * Cos and CumSum after it ran each time while Resize was not counted
 * pure. */
static void
test_resize_of_constants_memoised (void)
{
  Builder b;
  builder_init (&b, 13);
  gint64 dx[] = { 1, 1, 4, 4 }, dm[] = { 1, 1, 2, 2 }, four = 4;
  float mask[] = { 1, 2, 3, 4 }, scales[] = { 1, 1, 2, 2 };
  add_input (b.graph, "x", GRAFT_DTYPE_FLOAT32, 4, dx);
  add_initializer (b.graph, "mask", GRAFT_DTYPE_FLOAT32, 4, dm, mask, sizeof mask);
  add_initializer (b.graph, "scales", GRAFT_DTYPE_FLOAT32, 1, &four, scales, sizeof scales);
  GraftNode *resize = add_node (b.graph, "Resize", IN ("mask", "", "scales"), IN ("big"));
  graft_node_add_attribute (resize, graft_attribute_new_string ("mode", "nearest"));
  add_node (b.graph, "Add", IN ("x", "big"), IN ("y"));
  add_output (b.graph, "y");
  graft_model_set_graph (b.model, b.graph);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftRuntime) rt = graft_runtime_new (b.model, &error);
  g_assert_no_error (error);
  graft_runtime_set_profiling (rt, TRUE);
  /* computed when the plan was built */
  const guint64 resize_calls[] = { 0, 0, 0, 0 };
  for (guint round = 0; round < G_N_ELEMENTS (resize_calls); round++)
    {
      g_autoptr(GHashTable) inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                            (GDestroyNotify) graft_rt_tensor_unref);
      GraftRtTensor *xt = tensor_f32 (4, dx, NULL);
      for (gint64 i = 0; i < xt->numel; i++)
        ((float *) xt->data)[i] = (float) (i * 10 + round);
      g_hash_table_insert (inputs, (gpointer) "x", xt);
      graft_runtime_reset_timings (rt);
      g_autoptr(GPtrArray) out = graft_runtime_run (rt, inputs, NULL, NULL, NULL, &error);
      g_assert_no_error (error);
      GraftRtTensor *y = out->pdata[0];
      for (gint64 i = 0; i < 16; i++)
        g_assert_cmpfloat (((float *) y->data)[i], ==, (float) (i * 10 + round) + mask[(i / 8) * 2 + (i % 4) / 2]);
      g_assert_cmpuint (graft_test_op_calls (rt, "onnx::Resize", NULL, NULL), ==, resize_calls[round]);
      memset (y->data, 0xff, y->nbytes);
    }
  builder_clear (&b);
}

/* Expand copies blocks (the innermost axes the input has in full, the
 * broadcast axes outside them repeating each): every element against an
 * index-by-index reference, for 1-, 2-, 4- and 8-byte types, with a
 * scalar, leading axes added, broadcasts inside, outside and between
 * full axes, a shape that needs no broadcast, and an empty output. */
static void
test_expand_blocks (void)
{
  static const struct {
    int in_rank;
    gint64 in[4];
    int out_rank;
    gint64 out[4];
  } cases[] = {
    { 0, { 0 }, 3, { 2, 3, 5 } },                    /* a scalar filled */
    { 2, { 1, 4 }, 2, { 3, 4 } },                    /* a row repeated */
    { 2, { 3, 1 }, 2, { 3, 7 } },                    /* a column spread */
    { 4, { 2, 1, 5, 3 }, 4, { 2, 4, 5, 3 } },        /* Llama's key/value heads */
    { 4, { 1, 1, 6, 1 }, 4, { 2, 3, 6, 6 } },        /* a mask */
    { 3, { 2, 1, 3 }, 4, { 2, 2, 4, 3 } },           /* a leading axis added, broadcasts between full axes */
    { 2, { 1, 3 }, 4, { 2, 1, 2, 3 } },              /* two leading axes added */
    { 3, { 2, 3, 4 }, 3, { 2, 3, 4 } },              /* nothing to broadcast */
    { 3, { 1, 3, 1 }, 3, { 2, 3, 1 } },              /* broadcast outside, a unit axis inside */
    { 2, { 1, 3 }, 3, { 0, 2, 3 } },                 /* empty */
  };
  static const GraftDType dtypes[] = { GRAFT_DTYPE_BOOL, GRAFT_DTYPE_FLOAT16, GRAFT_DTYPE_FLOAT32, GRAFT_DTYPE_INT64 };
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    for (guint k = 0; k < G_N_ELEMENTS (dtypes); k++)
      {
        Builder b;
        builder_init (&b, 17);
        gint64 shape_dims[] = { cases[c].out_rank };
        add_input (b.graph, "x", dtypes[k], cases[c].in_rank, cases[c].in);
        add_input (b.graph, "shape", GRAFT_DTYPE_INT64, 1, shape_dims);
        add_node (b.graph, "Expand", IN ("x", "shape"), IN ("y"));
        add_output (b.graph, "y");
        GraftRtTensor *x = graft_rt_tensor_new (dtypes[k], cases[c].in_rank, cases[c].in, NULL);
        gsize e = x->numel ? x->nbytes / x->numel : 1;
        for (gsize i = 0; i < x->nbytes; i++)
          ((guint8 *) x->data)[i] = e == 1 ? (i % 3 == 1) : (guint8) (i * 7 + 1);
        g_autoptr(GraftRtTensor) x_ref = graft_rt_tensor_ref (x);
        g_autoptr(GError) error = NULL;
        g_autoptr(GPtrArray) out = run (&b, &error, "x", x, "shape",
                                        tensor_typed (GRAFT_DTYPE_INT64, 1, shape_dims, cases[c].out), NULL);
        g_assert_no_error (error);
        GraftRtTensor *y = out->pdata[0];
        g_assert_cmpint (y->rank, ==, cases[c].out_rank);
        gint64 index[4] = { 0 };
        int shift = cases[c].out_rank - cases[c].in_rank;
        for (gint64 i = 0; i < y->numel; i++)
          {
            gint64 off = 0;
            for (int d = 0; d < cases[c].in_rank; d++)
              off = off * cases[c].in[d] + (cases[c].in[d] == 1 ? 0 : index[d + shift]);
            if (memcmp ((guint8 *) y->data + i * e, (guint8 *) x_ref->data + off * e, e) != 0)
              g_error ("case %u, %s: y[%" G_GINT64_FORMAT "] is not x[%" G_GINT64_FORMAT "]", c,
                       graft_dtype_to_string (dtypes[k]), i, off);
            for (int d = cases[c].out_rank - 1; d >= 0; d--)
              {
                if (++index[d] < cases[c].out[d])
                  break;
                index[d] = 0;
              }
          }
        builder_clear (&b);
      }
}

/* A Cast to the type its input has gives that tensor itself (T5's
 * hidden_states.to(torch.float32)): a step after it that may overwrite
 * its input in place must leave the Cast's input, still read later and
 * a graph output, as it was. */
static void
test_cast_to_own_type (void)
{
  Builder b;
  builder_init (&b, 17);
  gint64 d[] = { 4 };
  add_input (b.graph, "a", GRAFT_DTYPE_FLOAT32, 1, d);
  add_node (b.graph, "Neg", IN ("a"), IN ("x"));
  GraftNode *cast = add_node (b.graph, "Cast", IN ("x"), IN ("same"));
  graft_node_add_attribute (cast, graft_attribute_new_int ("to", GRAFT_DTYPE_FLOAT32));
  add_node (b.graph, "Relu", IN ("same"), IN ("y"));
  add_node (b.graph, "Abs", IN ("x"), IN ("z"));
  add_output (b.graph, "y");
  add_output (b.graph, "z");
  add_output (b.graph, "x");
  float av[] = { 1, -2, 3, -4 };
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, &error, "a", tensor_f32 (1, d, av), NULL);
  g_assert_no_error (error);
  const float *y = ((GraftRtTensor *) out->pdata[0])->data, *z = ((GraftRtTensor *) out->pdata[1])->data;
  const float *x = ((GraftRtTensor *) out->pdata[2])->data;
  for (int i = 0; i < 4; i++)
    {
      g_assert_cmpfloat (x[i], ==, -av[i]);
      g_assert_cmpfloat (y[i], ==, MAX (-av[i], 0));
      g_assert_cmpfloat (z[i], ==, fabsf (av[i]));
    }
  builder_clear (&b);
}

static void
test_broadcast_incompatible (void)
{
  Builder b;
  builder_init (&b, 17);
  gint64 da[] = { 2, 3 }, db[] = { 4 };
  add_input (b.graph, "a", GRAFT_DTYPE_FLOAT32, 2, da);
  add_input (b.graph, "b", GRAFT_DTYPE_FLOAT32, 1, db);
  add_node (b.graph, "Mul", IN ("a", "b"), IN ("y"));
  add_output (b.graph, "y");
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, &error, "a", tensor_f32 (2, da, NULL), "b", tensor_f32 (1, db, NULL), NULL);
  g_assert_null (out);
  g_assert_nonnull (strstr (error->message, "do not broadcast"));
  g_assert_nonnull (strstr (error->message, "node 'Mul'"));
  builder_clear (&b);
}

static void
test_int_wrap_and_div_zero (void)
{
  Builder b;
  builder_init (&b, 17);
  gint64 d[] = { 3 };
  add_input (b.graph, "a", GRAFT_DTYPE_INT8, 1, d);
  add_input (b.graph, "b", GRAFT_DTYPE_INT8, 1, d);
  add_node (b.graph, "Add", IN ("a", "b"), IN ("sum"));
  add_node (b.graph, "Div", IN ("a", "b"), IN ("quot"));
  add_output (b.graph, "sum");
  add_output (b.graph, "quot");
  gint64 av[] = { 127, -128, 7 }, bv[] = { 1, -1, 0 };
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, &error, "a", tensor_typed (GRAFT_DTYPE_INT8, 1, d, av),
                                  "b", tensor_typed (GRAFT_DTYPE_INT8, 1, d, bv), NULL);
  g_assert_no_error (error);
  gint8 *sum = ((GraftRtTensor *) out->pdata[0])->data, *quot = ((GraftRtTensor *) out->pdata[1])->data;
  g_assert_cmpint (sum[0], ==, -128);   /* wraps like numpy */
  g_assert_cmpint (sum[1], ==, 127);
  g_assert_cmpint (quot[1], ==, -128);  /* -128 / -1 wraps instead of trapping */
  g_assert_cmpint (quot[2], ==, 0);     /* division by zero gives 0, not SIGFPE */
  builder_clear (&b);
}

static void
test_negative_axis_and_empty (void)
{
  Builder b;
  builder_init (&b, 17);
  gint64 d[] = { 2, 0, 3 };
  add_input (b.graph, "x", GRAFT_DTYPE_FLOAT32, 3, d);
  GraftNode *n = add_node (b.graph, "Concat", IN ("x", "x"), IN ("y"));
  graft_node_add_attribute (n, graft_attribute_new_int ("axis", -1));
  GraftNode *s = add_node (b.graph, "Softmax", IN ("y"), IN ("z"));
  graft_node_add_attribute (s, graft_attribute_new_int ("axis", -2));
  add_output (b.graph, "z");
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, &error, "x", tensor_f32 (3, d, NULL), NULL);
  g_assert_no_error (error);
  GraftRtTensor *z = out->pdata[0];
  g_assert_cmpint (z->dims[0], ==, 2);
  g_assert_cmpint (z->dims[1], ==, 0);
  g_assert_cmpint (z->dims[2], ==, 6);
  g_assert_cmpint (z->numel, ==, 0);
  builder_clear (&b);
}

static void
test_conv_geometry (void)
{
  Builder b;
  builder_init (&b, 17);
  gint64 dx[] = { 1, 1, 5, 5 }, dw[] = { 1, 1, 3, 3 };
  add_input (b.graph, "x", GRAFT_DTYPE_FLOAT32, 4, dx);
  add_input (b.graph, "w", GRAFT_DTYPE_FLOAT32, 4, dw);
  GraftNode *n = add_node (b.graph, "Conv", IN ("x", "w"), IN ("y"));
  gint64 strides[] = { 2, 2 }, dil[] = { 2, 2 }, pads[] = { 1, 1, 1, 1 };
  graft_node_add_attribute (n, graft_attribute_new_ints ("strides", strides, 2));
  graft_node_add_attribute (n, graft_attribute_new_ints ("dilations", dil, 2));
  graft_node_add_attribute (n, graft_attribute_new_ints ("pads", pads, 4));
  add_output (b.graph, "y");
  float xv[25], wv[9];
  for (int i = 0; i < 25; i++)
    xv[i] = i;
  for (int i = 0; i < 9; i++)
    wv[i] = 1;
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, &error, "x", tensor_f32 (4, dx, xv), "w", tensor_f32 (4, dw, wv), NULL);
  g_assert_no_error (error);
  GraftRtTensor *y = out->pdata[0];
  /* (5 + 2 - 5) / 2 + 1 = 2 */
  g_assert_cmpint (y->dims[2], ==, 2);
  g_assert_cmpint (y->dims[3], ==, 2);
  /* output (0,0) samples rows/cols -1, 1, 3: valid rows 1,3 × cols 1,3 = 6+8+16+18 */
  g_assert_cmpfloat (((float *) y->data)[0], ==, 48);
  builder_clear (&b);
}

/* Depthwise convolution (group = channels) against a direct loop, over
 * geometries the fast path must handle: odd widths, strides 1–3,
 * dilation, asymmetric padding, rows shorter and longer than a vector. */
/* A square window over x [2, channels (0: 3), h, w]. */
typedef struct {
  gint64 h, w, k, s, d, pt, pl, pb, pr;
  gboolean ceil;
  gint64 channels;
} WindowCase;

static gint64
window_channels (const WindowCase *c)
{
  return c->channels ? c->channels : 3;
}

/* Graph input x [2, channels, h, w], the node op over inputs with the
 * case's strides, dilations and pads, and its output y. */
static GraftNode *
add_window_node (Builder *b, const char *op, const char *const *inputs, const WindowCase *c)
{
  gint64 dx[] = { 2, window_channels (c), c->h, c->w };
  add_input (b->graph, "x", GRAFT_DTYPE_FLOAT32, 4, dx);
  GraftNode *n = add_node (b->graph, op, inputs, IN ("y"));
  gint64 strides[] = { c->s, c->s }, dil[] = { c->d, c->d }, pads[] = { c->pt, c->pl, c->pb, c->pr };
  graft_node_add_attribute (n, graft_attribute_new_ints ("strides", strides, 2));
  graft_node_add_attribute (n, graft_attribute_new_ints ("dilations", dil, 2));
  graft_node_add_attribute (n, graft_attribute_new_ints ("pads", pads, 4));
  add_output (b->graph, "y");
  return n;
}

static gint64
window_out (gint64 in, gint64 pad, const WindowCase *c)
{
  gint64 span = in + pad - (c->k - 1) * c->d - 1;
  return (c->ceil ? (span + c->s - 1) / c->s : span / c->s) + 1;
}

/* Asserts that y has the case's output size; gives it as *OH × *OW. */
static void
assert_window_out (const GraftRtTensor *y, const WindowCase *c, gint64 *OH, gint64 *OW)
{
  *OH = window_out (c->h, c->pt + c->pb, c);
  *OW = window_out (c->w, c->pl + c->pr, c);
  g_assert_cmpint (y->rank, ==, 4);
  g_assert_cmpint (y->dims[2], ==, *OH);
  g_assert_cmpint (y->dims[3], ==, *OW);
}

static void
test_depthwise_against_direct (void)
{
  /* small maps and narrow strided rows (the channel-blocked kernel), with
   * channel counts that leave a partial block (of 16 and 8 lanes) in each
   * image, and maps larger than the blocks take (the row kernels) */
  static const WindowCase cases[] = {
    { 7, 7, 3, 1, 1, 1, 1, 1, 1 }, { 9, 21, 3, 2, 1, 1, 1, 1, 1 }, { 8, 37, 3, 2, 1, 0, 1, 1, 0 },
    { 6, 40, 5, 1, 2, 2, 3, 3, 4 }, { 11, 13, 3, 3, 1, 1, 1, 1, 1 }, { 3, 2, 3, 1, 1, 1, 1, 1, 1 },
    { 24, 24, 3, 1, 1, 1, 1, 1, 1 }, { 66, 70, 3, 2, 1, 1, 1, 1, 1 }, { 60, 77, 3, 2, 1, 0, 1, 1, 0 },
    { 30, 40, 5, 1, 2, 2, 3, 3, 4 },
    { 1, 1, 3, 1, 1, 1, 1, 1, 1, FALSE, 17 }, { 2, 2, 5, 1, 1, 2, 2, 2, 2, FALSE, 40 },
    { 3, 5, 3, 1, 1, 1, 1, 1, 1, FALSE, 17 }, { 4, 4, 5, 1, 1, 2, 2, 2, 2, FALSE, 40 },
    { 4, 4, 3, 1, 1, 1, 1, 1, 1, FALSE, 3 }, { 4, 4, 7, 1, 1, 3, 3, 3, 3, FALSE, 24 },
    { 16, 16, 5, 2, 1, 1, 2, 2, 1, FALSE, 17 }, { 8, 8, 3, 2, 1, 0, 0, 1, 1, FALSE, 40 },
    { 7, 9, 7, 2, 1, 3, 3, 3, 3, FALSE, 17 }, { 4, 4, 3, 1, 2, 2, 1, 2, 3, FALSE, 17 },
    { 3, 3, 3, 1, 1, 0, 0, 0, 0, FALSE, 33 }, { 6, 6, 3, 2, 2, 2, 2, 2, 2, FALSE, 9 },
    { 9, 10, 5, 3, 1, 2, 2, 2, 2, FALSE, 17 },
  };
  for (guint t = 0; t < G_N_ELEMENTS (cases); t++)
    {
      Builder b;
      builder_init (&b, 17);
      gint64 N = 2, C = window_channels (&cases[t]), H = cases[t].h, W = cases[t].w, K = cases[t].k, S = cases[t].s, D = cases[t].d;
      gint64 dx[] = { N, C, H, W }, dw[] = { C, 1, K, K }, db[] = { C };
      GraftNode *n = add_window_node (&b, "Conv", IN ("x", "w", "b"), &cases[t]);
      add_input (b.graph, "w", GRAFT_DTYPE_FLOAT32, 4, dw);
      add_input (b.graph, "b", GRAFT_DTYPE_FLOAT32, 1, db);
      graft_node_add_attribute (n, graft_attribute_new_int ("group", C));
      g_autofree float *xv = g_new (float, N * C * H * W);
      g_autofree float *wv = g_new (float, C * K * K);
      g_autofree float *bv = g_new (float, C);
      for (gint64 c = 0; c < C; c++)
        bv[c] = (float) ((c * 5) % 7) / 2 - 1;
      for (gint64 i = 0; i < N * C * H * W; i++)
        xv[i] = (float) ((i * 37) % 23) / 7 - 1.5f;
      for (gint64 i = 0; i < C * K * K; i++)
        wv[i] = (float) ((i * 11) % 13) / 5 - 1;
      g_autoptr(GError) error = NULL;
      g_autoptr(GPtrArray) out = run (&b, &error, "x", tensor_f32 (4, dx, xv), "w", tensor_f32 (4, dw, wv),
                                      "b", tensor_f32 (1, db, bv), NULL);
      g_assert_no_error (error);
      GraftRtTensor *y = out->pdata[0];
      gint64 OH, OW;
      assert_window_out (y, &cases[t], &OH, &OW);
      const float *yv = y->data;
      for (gint64 i = 0; i < N * C; i++)
        for (gint64 oh = 0; oh < OH; oh++)
          for (gint64 ow = 0; ow < OW; ow++)
            {
              double acc = bv[i % C];
              for (gint64 ki = 0; ki < K; ki++)
                for (gint64 kj = 0; kj < K; kj++)
                  {
                    gint64 ih = oh * S + ki * D - cases[t].pt, iw = ow * S + kj * D - cases[t].pl;
                    if (ih >= 0 && ih < H && iw >= 0 && iw < W)
                      acc += (double) xv[(i * H + ih) * W + iw] * wv[(i % C) * K * K + ki * K + kj];
                  }
              if (fabs (yv[(i * OH + oh) * OW + ow] - acc) > 1e-4)
                g_error ("case %u: y[%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT "] = %g, want %g",
                         t, i, oh, ow, yv[(i * OH + oh) * OW + ow], acc);
            }
      builder_clear (&b);
    }
}

static void
test_maxpool_same_upper_ceil (void)
{
  Builder b;
  builder_init (&b, 17);
  gint64 dx[] = { 1, 1, 4, 4 };
  add_input (b.graph, "x", GRAFT_DTYPE_FLOAT32, 4, dx);
  GraftNode *n = add_node (b.graph, "MaxPool", IN ("x"), IN ("y"));
  gint64 k[] = { 3, 3 }, s[] = { 2, 2 };
  graft_node_add_attribute (n, graft_attribute_new_ints ("kernel_shape", k, 2));
  graft_node_add_attribute (n, graft_attribute_new_ints ("strides", s, 2));
  graft_node_add_attribute (n, graft_attribute_new_int ("ceil_mode", 1));
  add_output (b.graph, "y");
  float xv[16];
  for (int i = 0; i < 16; i++)
    xv[i] = i;
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, &error, "x", tensor_f32 (4, dx, xv), NULL);
  g_assert_no_error (error);
  GraftRtTensor *y = out->pdata[0];
  g_assert_cmpint (y->dims[2], ==, 2);   /* ceil((4-3)/2)+1 */
  g_assert_cmpfloat (((float *) y->data)[3], ==, 15);
  builder_clear (&b);
}

/* Rows wider than one vector, strides 1 and 2 (the separable AVX-512 and
 * AVX2 kernels) and 3 (the portable loop), padding, ceil mode, windows
 * that hang over the edge; planes of up to 64 pixels (one plane per
 * lane, in tasks of 64 planes: YOLO's SPPF, 5×5 over 2×2 maps, with 67
 * channels for a part-filled last task and vector of planes; SqueezeNet's
 * 3×3/2 over 7×7 in ceil mode, 74 planes; an 8×8 with pads on some sides);
 * larger planes of rows of one vector at stride 1 (windows read straight
 * from x, the lanes outside the row -inf); NaN inputs never win and -inf
 * stays -inf. */
static void
test_maxpool_against_direct (void)
{
  static const WindowCase cases[] = {
    { 12, 40, 3, 2, 1, 1, 1, 1, 1 }, { 9, 37, 3, 1, 1, 1, 1, 1, 1 }, { 7, 20, 2, 2, 1, 0, 0, 0, 0, TRUE },
    { 5, 33, 5, 2, 1, 2, 2, 2, 2, TRUE }, { 8, 18, 3, 3, 1, 1, 0, 0, 1 }, { 2, 3, 3, 1, 1, 1, 1, 1, 1 },
    { 2, 2, 5, 1, 1, 2, 2, 2, 2, FALSE, 67 }, { 3, 5, 3, 2, 1, 1, 1, 1, 1, TRUE }, { 8, 8, 2, 2, 1, 0, 1, 1, 0 },
    { 4, 4, 5, 1, 1, 2, 2, 2, 2, FALSE, 9 }, { 12, 8, 3, 1, 1, 1, 1, 1, 1 }, { 10, 13, 5, 1, 1, 2, 1, 2, 3 },
    { 7, 7, 3, 2, 1, 0, 0, 0, 0, TRUE, 37 }, { 8, 8, 3, 2, 1, 1, 0, 1, 1, TRUE, 5 },
  };
  /* twice: values of both signs with NaN and -inf, then all negative
   * (where a lane outside the row taken as 0 would win) */
  for (guint round = 0; round < 2 * G_N_ELEMENTS (cases); round++)
    {
      guint t = round % G_N_ELEMENTS (cases);
      gboolean negative = round >= G_N_ELEMENTS (cases);
      Builder b;
      builder_init (&b, 17);
      gint64 N = 2, C = window_channels (&cases[t]), H = cases[t].h, W = cases[t].w, K = cases[t].k;
      gint64 S = cases[t].s, dx[] = { N, C, H, W }, kernel[] = { K, K };
      GraftNode *n = add_window_node (&b, "MaxPool", IN ("x"), &cases[t]);
      graft_node_add_attribute (n, graft_attribute_new_ints ("kernel_shape", kernel, 2));
      graft_node_add_attribute (n, graft_attribute_new_int ("ceil_mode", cases[t].ceil));
      g_autofree float *xv = g_new (float, N * C * H * W);
      for (gint64 i = 0; i < N * C * H * W; i++)
        xv[i] = negative ? -1 - (float) ((i * 37) % 23) / 7
                : i % 29 == 5 ? NAN : i % 31 == 7 ? -INFINITY : (float) ((i * 37) % 23) / 7 - 1.5f;
      g_autoptr(GError) error = NULL;
      g_autoptr(GPtrArray) out = run (&b, &error, "x", tensor_f32 (4, dx, xv), NULL);
      g_assert_no_error (error);
      GraftRtTensor *y = out->pdata[0];
      gint64 OH, OW;
      assert_window_out (y, &cases[t], &OH, &OW);
      const float *yv = y->data;
      for (gint64 i = 0; i < N * C; i++)
        for (gint64 oh = 0; oh < OH; oh++)
          for (gint64 ow = 0; ow < OW; ow++)
            {
              float want = -INFINITY;
              for (gint64 ki = 0; ki < K; ki++)
                for (gint64 kj = 0; kj < K; kj++)
                  {
                    gint64 ih = oh * S + ki - cases[t].pt, iw = ow * S + kj - cases[t].pl;
                    if (ih >= 0 && ih < H && iw >= 0 && iw < W && xv[(i * H + ih) * W + iw] > want)
                      want = xv[(i * H + ih) * W + iw];
                  }
              float got = yv[(i * OH + oh) * OW + ow];
              if (got != want)
                g_error ("case %u%s: y[%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT "] = %g, want %g",
                         t, negative ? " (negative)" : "", i, oh, ow, got, want);
            }
      builder_clear (&b);
    }
}

/* AveragePool against the ONNX definition with count_include_pad 0 and 1:
 * PoolFormer's 3×3 at 56×56, strides 1 and 2 (the separable AVX-512 and
 * AVX2 kernels) and 3 (the portable loop), width 1, odd widths, padding,
 * ceil mode with a last window reaching past the end pad (which counts
 * neither way), a 7-wide window over a row of several vectors; rows of
 * one vector at stride 1, read straight from x (PoolFormer's 4×4 and
 * 2×2 maps, 16×16 with AVX-512, a 5×5 window with asymmetric pads). */
static void
test_averagepool_against_direct (void)
{
  static const WindowCase cases[] = {
    { 56, 56, 3, 1, 1, 1, 1, 1, 1 }, { 9, 37, 3, 2, 1, 1, 1, 1, 1 }, { 7, 20, 2, 2, 1, 0, 0, 0, 0, TRUE },
    { 5, 33, 5, 2, 1, 2, 2, 2, 2, TRUE }, { 8, 18, 3, 3, 1, 1, 0, 0, 1 }, { 2, 3, 3, 1, 1, 1, 1, 1, 1 },
    { 6, 1, 3, 1, 1, 1, 1, 1, 1 }, { 6, 10, 3, 2, 1, 0, 0, 0, 0, TRUE }, { 11, 17, 3, 2, 1, 1, 1, 0, 0, TRUE },
    { 5, 1, 1, 2, 1, 0, 0, 0, 0 }, { 4, 45, 7, 1, 1, 3, 3, 3, 3 }, { 3, 19, 2, 1, 1, 1, 0, 0, 1 },
    { 4, 4, 3, 1, 1, 1, 1, 1, 1 }, { 2, 2, 3, 1, 1, 1, 1, 1, 1 }, { 16, 16, 3, 1, 1, 1, 1, 1, 1 },
    { 7, 13, 5, 1, 1, 2, 1, 2, 3 }, { 5, 9, 3, 1, 1, 0, 0, 0, 0, TRUE },
  };
  for (guint t = 0; t < G_N_ELEMENTS (cases); t++)
    for (int include_pad = 0; include_pad < 2; include_pad++)
      {
        const WindowCase *c = &cases[t];
        Builder b;
        builder_init (&b, 19);
        gint64 N = 2, C = 3, H = c->h, W = c->w, K = c->k, S = c->s;
        gint64 dx[] = { N, C, H, W }, kernel[] = { K, K };
        GraftNode *n = add_window_node (&b, "AveragePool", IN ("x"), c);
        graft_node_add_attribute (n, graft_attribute_new_ints ("kernel_shape", kernel, 2));
        graft_node_add_attribute (n, graft_attribute_new_int ("ceil_mode", c->ceil));
        graft_node_add_attribute (n, graft_attribute_new_int ("count_include_pad", include_pad));
        g_autofree float *xv = g_new (float, N * C * H * W);
        for (gint64 i = 0; i < N * C * H * W; i++)
          xv[i] = (float) ((i * 37) % 23) / 7 - 1.5f;
        g_autoptr(GError) error = NULL;
        g_autoptr(GPtrArray) out = run (&b, &error, "x", tensor_f32 (4, dx, xv), NULL);
        g_assert_no_error (error);
        GraftRtTensor *y = out->pdata[0];
        gint64 OH, OW;
        assert_window_out (y, c, &OH, &OW);
        const float *yv = y->data;
        for (gint64 i = 0; i < N * C; i++)
          for (gint64 oh = 0; oh < OH; oh++)
            for (gint64 ow = 0; ow < OW; ow++)
              {
                double sum = 0;
                gint64 count = 0;
                for (gint64 ki = 0; ki < K; ki++)
                  for (gint64 kj = 0; kj < K; kj++)
                    {
                      gint64 ih = oh * S + ki - c->pt, iw = ow * S + kj - c->pl;
                      if (ih >= 0 && ih < H && iw >= 0 && iw < W)
                        {
                          sum += xv[(i * H + ih) * W + iw];
                          count++;
                        }
                      else if (include_pad && ih >= -c->pt && ih < H + c->pb && iw >= -c->pl && iw < W + c->pr)
                        count++;
                    }
                double want = count ? sum / count : 0;
                float got = yv[(i * OH + oh) * OW + ow];
                if (fabs (got - want) > 1e-5)
                  g_error ("case %u, count_include_pad %d: y[%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT
                           ",%" G_GINT64_FORMAT "] = %.9g, want %.9g", t, include_pad, i, oh, ow, got, want);
              }
        builder_clear (&b);
      }
}

/* Conv → Add → Relu with the Add's other operand ready before the Conv:
 * the engine lets the Conv add it (and clamp after it) in its epilogue.
 * The result must not depend on whether the kernel takes it: a residual
 * that broadcasts ([1, M, 1, 1]) is left to the Add, and then the Relu
 * must not be applied before it. Packed GEMM and depthwise paths, both
 * operand orders, with and without the Relu. */
static void
test_conv_residual_fusion (void)
{
  for (int variant = 0; variant < 16; variant++)
    {
      gboolean broadcast = variant & 1, depthwise = variant & 2, residual_first = variant & 4, relu = variant & 8;
      Builder b;
      builder_init (&b, 17);
      gint64 N = 2, C = 4, H = 9, W = 11, group = depthwise ? C : 1;
      gint64 dx[] = { N, C, H, W }, dw[] = { C, C / group, 3, 3 }, db[] = { C };
      gint64 dr_full[] = { N, C, H, W }, dr_bcast[] = { 1, C, 1, 1 };
      const gint64 *dr = broadcast ? dr_bcast : dr_full;
      add_input (b.graph, "x", GRAFT_DTYPE_FLOAT32, 4, dx);
      add_input (b.graph, "w", GRAFT_DTYPE_FLOAT32, 4, dw);
      add_input (b.graph, "b", GRAFT_DTYPE_FLOAT32, 1, db);
      add_input (b.graph, "r", GRAFT_DTYPE_FLOAT32, 4, dr);
      GraftNode *conv = add_node (b.graph, "Conv", IN ("x", "w", "b"), IN ("c"));
      gint64 pads[] = { 1, 1, 1, 1 };
      graft_node_add_attribute (conv, graft_attribute_new_ints ("pads", pads, 4));
      graft_node_add_attribute (conv, graft_attribute_new_int ("group", group));
      add_node (b.graph, "Add", residual_first ? IN ("r", "c") : IN ("c", "r"), IN (relu ? "s" : "y"));
      if (relu)
        add_node (b.graph, "Relu", IN ("s"), IN ("y"));
      add_output (b.graph, "y");

      gint64 nx = N * C * H * W, nw = C * (C / group) * 9, nr = broadcast ? C : nx;
      g_autofree float *xv = g_new (float, nx);
      g_autofree float *wv = g_new (float, nw);
      g_autofree float *rv = g_new (float, nr);
      float bv[] = { 0.25f, -0.5f, 1, -1 };
      for (gint64 i = 0; i < nx; i++)
        xv[i] = (float) ((i * 37) % 23) / 7 - 1.5f;
      for (gint64 i = 0; i < nw; i++)
        wv[i] = (float) ((i * 11) % 13) / 13 - 0.5f;
      for (gint64 i = 0; i < nr; i++)
        rv[i] = (float) ((i * 7) % 19) / 4 - 2.5f;
      g_autoptr(GError) error = NULL;
      g_autoptr(GPtrArray) out = run (&b, &error, "x", tensor_f32 (4, dx, xv), "w", tensor_f32 (4, dw, wv),
                                      "b", tensor_f32 (1, db, bv), "r", tensor_f32 (4, dr, rv), NULL);
      g_assert_no_error (error);
      const float *yv = ((GraftRtTensor *) out->pdata[0])->data;
      for (gint64 n = 0; n < N; n++)
        for (gint64 m = 0; m < C; m++)
          for (gint64 oh = 0; oh < H; oh++)
            for (gint64 ow = 0; ow < W; ow++)
              {
                gint64 at = ((n * C + m) * H + oh) * W + ow;
                double want = bv[m] + rv[broadcast ? m : at];
                for (gint64 ci = 0; ci < C / group; ci++)
                  for (gint64 ki = 0; ki < 3; ki++)
                    for (gint64 kj = 0; kj < 3; kj++)
                      {
                        gint64 ih = oh + ki - 1, iw = ow + kj - 1, c = depthwise ? m : ci;
                        if (ih >= 0 && ih < H && iw >= 0 && iw < W)
                          want += (double) xv[((n * C + c) * H + ih) * W + iw] * wv[((m * (C / group) + ci) * 3 + ki) * 3 + kj];
                      }
                if (relu)
                  want = MAX (want, 0);
                if (fabs (yv[at] - want) > 1e-4)
                  g_error ("variant %d: y[%" G_GINT64_FORMAT "] = %g, want %g", variant, at, yv[at], want);
              }
      builder_clear (&b);
    }
}

static void
test_if_captures_outer_value (void)
{
  Builder b;
  builder_init (&b, 17);
  gint64 d[] = { 2 };
  add_input (b.graph, "cond", GRAFT_DTYPE_BOOL, 0, NULL);
  add_input (b.graph, "x", GRAFT_DTYPE_FLOAT32, 1, d);
  GraftNode *n = add_node (b.graph, "If", IN ("cond"), IN ("y"));
  GraftGraph *then_g = graft_graph_new ("then");
  GraftGraph *else_g = graft_graph_new ("else");
  graft_node_add_attribute (n, graft_attribute_new_graph ("then_branch", then_g));
  graft_node_add_attribute (n, graft_attribute_new_graph ("else_branch", else_g));
  graft_node_adopt_subgraph (n, then_g);
  graft_node_adopt_subgraph (n, else_g);
  add_node (then_g, "Neg", IN ("x"), IN ("t"));
  add_output (then_g, "t");
  add_node (else_g, "Abs", IN ("x"), IN ("e"));
  add_output (else_g, "e");
  add_output (b.graph, "y");
  float xv[] = { -1, 2 };
  g_autoptr(GraftRtTensor) cond = graft_rt_tensor_new (GRAFT_DTYPE_BOOL, 0, NULL, NULL);
  ((guint8 *) cond->data)[0] = 1;
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, &error, "cond", graft_rt_tensor_ref (cond), "x", tensor_f32 (1, d, xv), NULL);
  g_assert_no_error (error);
  float *y = ((GraftRtTensor *) out->pdata[0])->data;
  g_assert_cmpfloat (y[0], ==, 1);
  g_assert_cmpfloat (y[1], ==, -2);
  builder_clear (&b);
}

static void
test_unsupported_listed_before_running (void)
{
  Builder b;
  builder_init (&b, 17);
  gint64 d[] = { 2 };
  add_input (b.graph, "x", GRAFT_DTYPE_FLOAT32, 1, d);
  add_node (b.graph, "Relu", IN ("x"), IN ("r"));
  GraftNode *odd = graft_graph_add_node (b.graph, "com.example", "Frobnicate", "frob");
  graft_node_add_input (odd, graft_graph_lookup_value (b.graph, "r"));
  graft_node_add_output (odd, graft_graph_ensure_value (b.graph, "y"));
  add_output (b.graph, "y");
  graft_model_set_graph (b.model, b.graph);
  g_autoptr(GPtrArray) unsupported = NULL;
  g_assert_true (graft_runtime_check_supported (b.model, &unsupported, NULL));
  g_assert_cmpuint (unsupported->len, ==, 1);
  g_assert_true (unsupported->pdata[0] == odd);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftRuntime) rt = graft_runtime_new (b.model, &error);
  g_assert_null (rt);
  g_assert_nonnull (strstr (error->message, "com.example::Frobnicate"));
  builder_clear (&b);
}

static void
test_input_checks (void)
{
  Builder b;
  builder_init (&b, 17);
  gint64 d[] = { 1, 3 };
  add_input (b.graph, "x", GRAFT_DTYPE_FLOAT32, 2, d);
  add_node (b.graph, "Relu", IN ("x"), IN ("y"));
  add_output (b.graph, "y");
  g_autoptr(GError) error = NULL;
  gint64 wrong[] = { 1, 4 };
  g_autoptr(GPtrArray) out = run (&b, &error, "x", tensor_f32 (2, wrong, NULL), NULL);
  g_assert_null (out);
  g_assert_nonnull (strstr (error->message, "input 'x' expects shape 1×3"));
  g_clear_error (&error);
  builder_clear (&b);

  builder_init (&b, 17);
  add_input (b.graph, "x", GRAFT_DTYPE_FLOAT32, 2, d);
  add_node (b.graph, "Relu", IN ("x"), IN ("y"));
  add_output (b.graph, "y");
  out = run (&b, &error, "x", tensor_typed (GRAFT_DTYPE_INT32, 2, d, NULL), NULL);
  g_assert_null (out);
  g_assert_nonnull (strstr (error->message, "expects element type float32"));
  builder_clear (&b);
}

static void
test_liveness_keeps_outputs (void)
{
  /* a value that is both consumed and a graph output must survive */
  Builder b;
  builder_init (&b, 17);
  gint64 d[] = { 4 };
  add_input (b.graph, "x", GRAFT_DTYPE_FLOAT32, 1, d);
  add_node (b.graph, "Relu", IN ("x"), IN ("r"));
  add_node (b.graph, "Neg", IN ("r"), IN ("n"));
  add_output (b.graph, "r");
  add_output (b.graph, "n");
  float xv[] = { -1, 2, -3, 4 };
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, &error, "x", tensor_f32 (1, d, xv), NULL);
  g_assert_no_error (error);
  float *r = ((GraftRtTensor *) out->pdata[0])->data, *n = ((GraftRtTensor *) out->pdata[1])->data;
  g_assert_cmpfloat (r[1], ==, 2);
  g_assert_cmpfloat (n[1], ==, -2);
  g_assert_cmpfloat (r[0], ==, 0);
  builder_clear (&b);
}

static void
test_half_precision (void)
{
  float values[] = { 0, 1, -2.5f, 65504, 1e-7f, INFINITY };
  for (guint i = 0; i < G_N_ELEMENTS (values); i++)
    {
      float back = graft_half_to_float (graft_float_to_half (values[i]));
      if (values[i] == 1e-7f)
        g_assert_cmpfloat (fabsf (back - values[i]), <, 1e-7f);
      else
        g_assert_cmpfloat (back, ==, values[i]);
    }
  g_assert_true (isnan (graft_half_to_float (graft_float_to_half (NAN))));
}

static void
test_npy_roundtrip_and_truncation (void)
{
  gint64 d[] = { 2, 3 };
  float v[] = { 1, 2, 3, 4, 5, 6 };
  g_autoptr(GraftRtTensor) t = tensor_f32 (2, d, v);
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) bytes = graft_npy_serialize (t, &error);
  g_assert_no_error (error);
  gsize len;
  const guint8 *data = g_bytes_get_data (bytes, &len);
  g_assert_cmpint ((len - t->nbytes) % 64, ==, 0);   /* header padded to 64 bytes */
  g_autoptr(GraftRtTensor) back = graft_npy_parse (data, len, "t.npy", &error);
  g_assert_no_error (error);
  g_assert_true (graft_rt_tensor_same_shape (back, t));
  g_assert_cmpmem (back->data, back->nbytes, t->data, t->nbytes);

  for (gsize cut = 0; cut < len; cut += 7)
    {
      g_autoptr(GError) e = NULL;
      g_autoptr(GraftRtTensor) bad = graft_npy_parse (data, cut, "cut.npy", &e);
      g_assert_null (bad);
      g_assert_nonnull (e);
      g_assert_true (strstr (e->message, "cut.npy") != NULL);
    }
  g_autoptr(GError) e = NULL;
  g_autoptr(GraftRtTensor) bad = graft_npy_parse (data, len - 1, "short.npy", &e);
  g_assert_null (bad);
  g_assert_nonnull (strstr (e->message, "truncated .npy data"));
}

static void
test_npy_versions_and_strings (void)
{
  /* a version 2.0 header and a big-endian int16 array written by hand */
  const char header[] = "{'descr': '>i2', 'fortran_order': False, 'shape': (2,), }";
  GByteArray *buf = g_byte_array_new ();
  g_byte_array_append (buf, (const guint8 *) "\x93NUMPY\x02\x00", 8);
  guint32 hl = sizeof header - 1;
  guint8 lenb[4] = { hl & 0xff, hl >> 8, 0, 0 };
  g_byte_array_append (buf, lenb, 4);
  g_byte_array_append (buf, (const guint8 *) header, hl);
  guint8 payload[] = { 0x01, 0x02, 0xff, 0xfe };
  g_byte_array_append (buf, payload, 4);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftRtTensor) t = graft_npy_parse (buf->data, buf->len, "v2.npy", &error);
  g_byte_array_unref (buf);
  g_assert_no_error (error);
  g_assert_cmpint (t->dtype, ==, GRAFT_DTYPE_INT16);
  g_assert_cmpint (((gint16 *) t->data)[0], ==, 0x0102);
  g_assert_cmpint (((gint16 *) t->data)[1], ==, -2);

  gint64 d[] = { 2 };
  g_autoptr(GraftRtTensor) s = graft_rt_tensor_new (GRAFT_DTYPE_STRING, 1, d, NULL);
  g_free (((char **) s->data)[0]);
  ((char **) s->data)[0] = g_strdup ("héllo");
  g_autoptr(GBytes) bytes = graft_npy_serialize (s, &error);
  g_assert_no_error (error);
  gsize len;
  const guint8 *data = g_bytes_get_data (bytes, &len);
  g_autoptr(GraftRtTensor) back = graft_npy_parse (data, len, "s.npy", &error);
  g_assert_no_error (error);
  g_assert_cmpstr (((char **) back->data)[0], ==, "héllo");
  g_assert_cmpstr (((char **) back->data)[1], ==, "");
}

static void
test_pb_malformed (void)
{
  const guint8 junk[] = { 0x0a, 0xff, 0xff, 0xff, 0x0f, 0x01 };
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftRtTensor) t = graft_tensor_file_parse_pb (junk, sizeof junk, GRAFT_VALUE_TENSOR, NULL, "junk.pb", &error);
  g_assert_null (t);
  g_assert_nonnull (strstr (error->message, "junk.pb"));
  g_clear_error (&error);
  g_autoptr(GraftRtTensor) s = graft_tensor_file_parse_pb (junk, sizeof junk, GRAFT_VALUE_SEQUENCE, NULL, "seq.pb", &error);
  g_assert_null (s);
  g_assert_nonnull (strstr (error->message, "SequenceProto"));
}

static void
test_registry_entries (void)
{
  g_autoptr(GPtrArray) all = graft_op_registry_list ();
  g_autoptr(GHashTable) seen = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_assert_cmpuint (all->len, >, 150);
  for (guint i = 0; i < all->len; i++)
    {
      const GraftOpSchema *s = all->pdata[i];
      g_assert_nonnull (s->kernel);
      g_assert_nonnull (strstr (s->name, "::"));
      /* one entry per op (per opset range) */
      g_autofree char *key = g_strdup_printf ("%s@%d", s->name, s->since);
      g_assert_false (g_hash_table_contains (seen, key));
      g_hash_table_add (seen, g_steal_pointer (&key));
    }
  g_assert_nonnull (graft_op_registry_lookup ("onnx::Conv", 17));
  g_assert_null (graft_op_registry_lookup ("onnx::Upsample", 13));
}

/* Every entry of an ONNX domain carries its schema's parameter names,
 * which the labels show ("W: 64×3×7×7"). */
static void
test_registry_parameter_names (void)
{
  g_autoptr(GPtrArray) all = graft_op_registry_list ();

  for (guint i = 0; i < all->len; i++)
    {
      const GraftOpSchema *s = all->pdata[i];

      if (g_str_has_prefix (s->name, "aten::") || g_str_has_prefix (s->name, "prim::"))
        continue;
      if (s->input_names == NULL || s->output_names == NULL)
        g_error ("%s (since %d) has no parameter names", s->name, s->since);
    }
  g_assert_cmpstr (graft_op_registry_input_name ("onnx::Conv", 17, 1), ==, "W");
  g_assert_cmpstr (graft_op_registry_input_name ("onnx::BatchNormalization", 15, 4), ==, "var");
  g_assert_cmpstr (graft_op_registry_input_name ("onnx::Concat", 13, 5), ==, "inputs");
  g_assert_null (graft_op_registry_input_name ("onnx::Relu", 14, 1));
  g_assert_cmpstr (graft_op_registry_lookup ("onnx::MaxPool", 12)->output_names, ==, "Y Indices");
  g_assert_null (graft_op_registry_input_name ("aten::conv2d", 0, 0));
}

/* Where the registry names a parameter otherwise than ONNX on purpose:
 * the node labels' shorter names for weights. */
static const struct {
  const char *op, *onnx_name, *registry_name;
} registry_label_names[] = {
  { "onnx::BatchNormalization", "input_mean", "mean" },   /* opset 14 on */
  { "onnx::BatchNormalization", "input_var", "var" },
  { "onnx::LayerNormalization", "Scale", "scale" },
};

/* ONNX versions whose names one registry row, named as a later version,
 * cannot follow: checked only from `from` on. */
static const struct {
  const char *op;
  int from;
  const char *why;
} registry_names_from[] = {
  { "onnx::BatchNormalization", 14, "before 14 the optional training outputs were mean, var, saved_mean, saved_var" },
  { "onnx::Resize", 11, "opset 10 had no roi input before scales" },
};

/* An ONNX schema's names as the registry writes them: optional marks
 * dropped ("B?" is "B"), a variadic mark once ("outputs......" in opset
 * 1's Split is "outputs..."), the label names put in. */
static char *
schema_names_as_registry (const char *op, const char *names)
{
  g_auto(GStrv) split = g_strsplit (names, " ", -1);
  for (guint i = 0; split[i] != NULL; i++)
    {
      if (g_str_has_suffix (split[i], "?"))
        split[i][strlen (split[i]) - 1] = '\0';
      if (g_str_has_suffix (split[i], "......"))
        split[i][strlen (split[i]) - 3] = '\0';
      for (guint k = 0; k < G_N_ELEMENTS (registry_label_names); k++)
        if (strcmp (op, registry_label_names[k].op) == 0 && strcmp (split[i], registry_label_names[k].onnx_name) == 0)
          {
            g_free (split[i]);
            split[i] = g_strdup (registry_label_names[k].registry_name);
          }
    }
  return g_strjoinv (" ", split);
}

/* names are the registry's, or (older) their first ones. */
static gboolean
names_match (const char *onnx, const char *registry, gboolean older)
{
  if (g_strcmp0 (onnx, registry) == 0)
    return TRUE;
  return older && registry != NULL && g_str_has_prefix (registry, onnx) &&
         (onnx[0] == '\0' || registry[strlen (onnx)] == ' ');
}

static int
registry_names_checked_from (const char *op)
{
  for (guint k = 0; k < G_N_ELEMENTS (registry_names_from); k++)
    if (strcmp (op, registry_names_from[k].op) == 0)
      return registry_names_from[k].from;
  return 0;
}

/* Every registry row of an ONNX domain names its inputs and outputs as
 * the newest ONNX schema (data/onnx-schemas.tsv) of the opsets it covers
 * does, and each older one (which took the later inputs as attributes,
 * or gave fewer outputs) names the first of them alike. */
static void
test_registry_names_match_onnx_schemas (void)
{
  g_autoptr(GPtrArray) all = graft_op_registry_list ();
  guint checked = 0;

  for (guint i = 0; i < all->len; i++)
    {
      const GraftOpSchema *s = all->pdata[i];
      const char *sep = strstr (s->name, "::");
      g_autofree char *domain = sep ? g_strndup (s->name, sep - s->name) : NULL;
      /* the ONNX domains: aten, prim, higher_order and Graft's own
       * operators have no ONNX schema, nor has com.microsoft in onnx */
      if (domain == NULL || (strcmp (domain, "onnx") != 0 && !g_str_has_prefix (domain, "ai.onnx")))
        continue;
      g_autoptr(GPtrArray) versions = g_ptr_array_new ();
      for (int opset = MAX (s->since, 1); opset <= (s->until ? s->until : 64); opset++)
        {
          const GraftOnnxSchema *o = graft_onnx_schema_lookup (domain, sep + 2, opset);
          if (o != NULL && (versions->len == 0 || g_ptr_array_index (versions, versions->len - 1) != o))
            g_ptr_array_add (versions, (gpointer) o);
        }
      if (versions->len == 0)
        g_error ("%s (opsets %d to %d): the pinned onnx has no schema for it", s->name, s->since, s->until);
      int from = registry_names_checked_from (s->name);
      for (guint v = 0; v < versions->len; v++)
        {
          const GraftOnnxSchema *o = versions->pdata[v];
          gboolean older = v + 1 < versions->len;
          if (older && o->since < from)
            continue;
          g_autofree char *inputs = schema_names_as_registry (s->name, o->inputs);
          g_autofree char *outputs = schema_names_as_registry (s->name, o->outputs);
          if (!names_match (inputs, s->input_names, older) || !names_match (outputs, s->output_names, older))
            g_error ("%s: the registry names '%s' -> '%s', ONNX opset %d '%s' -> '%s' (data/onnx-schemas.tsv)",
                     s->name, s->input_names, s->output_names, o->since, inputs, outputs);
          checked++;
        }
    }
  g_test_message ("%u ONNX schema versions checked against the registry", checked);
  g_assert_cmpuint (checked, >, 500);
}

/* Output 0 of op_type's registry inference over inputs, as a string. */
static char *
infer_output_string (const char *op_type, GraftInferValue *in, guint n_in)
{
  g_autofree char *op = g_strconcat ("onnx::", op_type, NULL);
  const GraftOpSchema *s = graft_op_registry_lookup (op, 17);
  GraftInferValue out[1] = { 0 };
  g_autoptr(GError) error = NULL;
  Builder b;
  char *shape;

  builder_init (&b, 17);
  GraftNode *node = graft_graph_add_node (b.graph, NULL, op_type, "node");
  GraftInferContext ctx = { node, 17, n_in, in, 1, out };
  out[0].shape = GRAFT_SHAPE_UNKNOWN;
  g_assert_true (s->infer (&ctx, &error));
  shape = graft_shape_to_string (&out[0].shape);
  graft_shape_clear (&out[0].shape);
  graft_model_set_graph (b.model, b.graph);
  builder_clear (&b);
  return shape;
}

static GraftInferValue
symbolic_input (const char *dims)
{
  g_auto(GStrv) parts = g_strsplit (dims, "x", -1);
  GraftInferValue v = { TRUE, GRAFT_VALUE_TENSOR, GRAFT_DTYPE_FLOAT32, GRAFT_SHAPE_UNKNOWN, NULL };

  if (strcmp (dims, "?") == 0)
    return v;
  graft_shape_init (&v.shape, g_strv_length (parts));
  for (int i = 0; i < v.shape.rank; i++)
    v.shape.dims[i] = g_ascii_isdigit (parts[i][0]) ? graft_dim_fixed (g_ascii_strtoll (parts[i], NULL, 10))
                                                     : graft_dim_symbolic (parts[i]);
  return v;
}

/* Static inference keeps symbolic dims where the op only moves them
 * (what analysis/fallback-infer.c used to add on top of the registry). */
static void
test_static_inference_keeps_symbols (void)
{
  GraftInferValue flatten[1] = { symbolic_input ("batchx512x1x1") };
  GraftInferValue gemm[2] = { symbolic_input ("batchx512"), symbolic_input ("?") };
  /* starts and ends known only at run time: the default axes cut dim 0 */
  GraftInferValue slice[3] = { symbolic_input ("4xseqx64"), symbolic_input ("1"), symbolic_input ("1") };
  g_autofree char *flat = infer_output_string ("Flatten", flatten, 1);
  g_autofree char *product = infer_output_string ("Gemm", gemm, 2);
  g_autofree char *sliced = infer_output_string ("Slice", slice, 3);

  g_assert_cmpstr (flat, ==, "batch×512");
  g_assert_cmpstr (product, ==, "batch×?");
  g_assert_cmpstr (sliced, ==, "?×seq×64");
  for (guint i = 0; i < 3; i++)
    {
      graft_shape_clear (&slice[i].shape);
      if (i < 2)
        graft_shape_clear (&gemm[i].shape);
    }
  graft_shape_clear (&flatten[0].shape);
}

static void
test_static_inference_symbolic (void)
{
  /* the same schema infers with symbolic dims and no data */
  const GraftOpSchema *s = graft_op_registry_lookup ("onnx::MatMul", 17);
  GraftInferValue in[2] = { 0 }, out[1] = { 0 };
  in[0].present = in[1].present = TRUE;
  in[0].dtype = in[1].dtype = GRAFT_DTYPE_FLOAT32;
  graft_shape_init (&in[0].shape, 3);
  in[0].shape.dims[0] = graft_dim_symbolic ("batch");
  in[0].shape.dims[1] = graft_dim_fixed (4);
  in[0].shape.dims[2] = graft_dim_fixed (8);
  gint64 wd[] = { 8, 16 };
  graft_shape_init_fixed (&in[1].shape, 2, wd);
  out[0].shape = GRAFT_SHAPE_UNKNOWN;
  Builder b;
  builder_init (&b, 17);
  GraftNode *node = graft_graph_add_node (b.graph, NULL, "MatMul", "mm");
  GraftInferContext ctx = { node, 17, 2, in, 1, out };
  g_autoptr(GError) error = NULL;
  g_assert_true (s->infer (&ctx, &error));
  g_autofree char *shape = graft_shape_to_string (&out[0].shape);
  g_assert_cmpstr (shape, ==, "batch×4×16");
  graft_shape_clear (&in[0].shape);
  graft_shape_clear (&in[1].shape);
  graft_shape_clear (&out[0].shape);
  graft_model_set_graph (b.model, b.graph);
  builder_clear (&b);
}

typedef struct {
  GTestFunc test;
  GraftSimdLevel level;
} LevelTest;

/* A kernel test at one SIMD level (the AVX-512 kernels, the AVX2 paths,
 * the portable ones), all against the same direct reference. A level this
 * CPU lacks is a skip, never a pass. */
static void
run_at_level (gconstpointer data)
{
  const LevelTest *lt = data;

  if (!graft_test_use_simd_level (lt->level))
    return;
  lt->test ();
  graft_simd_set_max_level (GRAFT_SIMD_AVX512);
}

static void
add_at_each_level (const char *path, GTestFunc test)
{
  for (GraftSimdLevel level = GRAFT_SIMD_PORTABLE; level <= GRAFT_SIMD_AVX512; level++)
    {
      LevelTest *lt = g_new (LevelTest, 1);   /* lives as long as the test program */
      g_autofree char *level_path = g_strdup_printf ("%s/%s", path, graft_simd_level_to_string (level));

      *lt = (LevelTest) { test, level };
      g_test_add_data_func (level_path, lt, run_at_level);
    }
}

static void
test_narrow_dtypes (void)
{
  /* float8 E4M3FN: 448 is the largest finite value; beyond it saturate or NaN */
  g_assert_cmphex (graft_narrow_dtype_encode (GRAFT_DTYPE_FLOAT8E4M3FN, 448, TRUE), ==, 0x7e);
  g_assert_cmphex (graft_narrow_dtype_encode (GRAFT_DTYPE_FLOAT8E4M3FN, 1e6, TRUE), ==, 0x7e);
  g_assert_true (isnan (graft_narrow_dtype_decode (GRAFT_DTYPE_FLOAT8E4M3FN,
                                                   graft_narrow_dtype_encode (GRAFT_DTYPE_FLOAT8E4M3FN, 1e6, FALSE))));
  g_assert_cmpfloat (graft_narrow_dtype_decode (GRAFT_DTYPE_FLOAT8E4M3FN,
                                                graft_narrow_dtype_encode (GRAFT_DTYPE_FLOAT8E4M3FN, 0.47892547, TRUE)), ==, 0.46875);
  /* E5M2 keeps infinity without saturation; FNUZ types have no -0 */
  g_assert_true (isinf (graft_narrow_dtype_decode (GRAFT_DTYPE_FLOAT8E5M2,
                                                   graft_narrow_dtype_encode (GRAFT_DTYPE_FLOAT8E5M2, INFINITY, FALSE))));
  g_assert_cmphex (graft_narrow_dtype_encode (GRAFT_DTYPE_FLOAT8E4M3FNUZ, -1e-7, TRUE), ==, 0);
  g_assert_true (isnan (graft_narrow_dtype_decode (GRAFT_DTYPE_FLOAT8E4M3FNUZ, 0x80)));
  /* float4 E2M1 saturates at 6, ties to even */
  g_assert_cmpfloat (graft_narrow_dtype_decode (GRAFT_DTYPE_FLOAT4E2M1,
                                                graft_narrow_dtype_encode (GRAFT_DTYPE_FLOAT4E2M1, 9, TRUE)), ==, 6);
  g_assert_cmpfloat (graft_narrow_dtype_decode (GRAFT_DTYPE_FLOAT4E2M1,
                                                graft_narrow_dtype_encode (GRAFT_DTYPE_FLOAT4E2M1, -3.5, TRUE)), ==, -4);
  /* int4 out of range gives 0, as ONNX's reference does */
  g_assert_cmpfloat (graft_narrow_dtype_decode (GRAFT_DTYPE_INT4, graft_narrow_dtype_encode (GRAFT_DTYPE_INT4, -8, TRUE)), ==, -8);
  g_assert_cmpfloat (graft_narrow_dtype_decode (GRAFT_DTYPE_INT4, graft_narrow_dtype_encode (GRAFT_DTYPE_INT4, 8, TRUE)), ==, 0);

  /* ONNX packs two int4 per byte, low nibble first; Graft sign-extends one per byte */
  static const guint8 packed_bytes[] = { 0x8f, 0x07 };
  g_autoptr(GBytes) packed = g_bytes_new_static (packed_bytes, sizeof packed_bytes);
  g_autoptr(GBytes) unpacked = graft_dtype_unpack (GRAFT_DTYPE_INT4, packed, 3);
  const gint8 *values = g_bytes_get_data (unpacked, NULL);
  g_assert_cmpint (values[0], ==, -1);
  g_assert_cmpint (values[1], ==, -8);
  g_assert_cmpint (values[2], ==, 7);
  g_autoptr(GBytes) repacked = graft_dtype_pack (GRAFT_DTYPE_INT4, unpacked);
  g_assert_true (g_bytes_equal (packed, repacked));
  /* a packed buffer of the wrong size is refused */
  g_assert_null (graft_dtype_unpack (GRAFT_DTYPE_INT4, packed, 5));
}

static void
test_attention_checks (void)
{
  Builder b;
  builder_init (&b, 23);
  gint64 dq[] = { 1, 3, 2, 4 }, dkv[] = { 1, 2, 2, 4 };
  add_input (b.graph, "q", GRAFT_DTYPE_FLOAT32, 4, dq);
  add_input (b.graph, "k", GRAFT_DTYPE_FLOAT32, 4, dkv);
  add_input (b.graph, "v", GRAFT_DTYPE_FLOAT32, 4, dkv);
  add_node (b.graph, "Attention", IN ("q", "k", "v"), IN ("y"));
  add_output (b.graph, "y");
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, &error, "q", tensor_f32 (4, dq, NULL), "k", tensor_f32 (4, dkv, NULL),
                                  "v", tensor_f32 (4, dkv, NULL), NULL);
  g_assert_null (out);
  g_assert_nonnull (strstr (error->message, "3 query heads do not group over 2"));
  builder_clear (&b);
}

static void
test_rms_normalization (void)
{
  Builder b;
  builder_init (&b, 23);
  gint64 dx[] = { 2, 2 }, ds[] = { 2 };
  add_input (b.graph, "x", GRAFT_DTYPE_FLOAT32, 2, dx);
  add_input (b.graph, "scale", GRAFT_DTYPE_FLOAT32, 1, ds);
  GraftNode *n = add_node (b.graph, "RMSNormalization", IN ("x", "scale"), IN ("y"));
  graft_node_add_attribute (n, graft_attribute_new_float ("epsilon", 0));
  add_output (b.graph, "y");
  float xv[] = { 3, 4, -1, 1 }, sv[] = { 1, 2 };
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = run (&b, &error, "x", tensor_f32 (2, dx, xv), "scale", tensor_f32 (1, ds, sv), NULL);
  g_assert_no_error (error);
  const float *y = ((GraftRtTensor *) out->pdata[0])->data;
  /* rows divided by their root mean square (sqrt(12.5) and 1), times scale */
  g_assert_cmpfloat_with_epsilon (y[0], 3 / sqrt (12.5), 1e-6);
  g_assert_cmpfloat_with_epsilon (y[1], 8 / sqrt (12.5), 1e-6);
  g_assert_cmpfloat_with_epsilon (y[2], -1, 1e-6);
  g_assert_cmpfloat_with_epsilon (y[3], 2, 1e-6);
  builder_clear (&b);
}

/* Transpose merges input dims that stay adjacent and drops dims of size 1
 * before it copies. Every permutation of rank-4 and rank-5 shapes with unit
 * dims and adjacent runs (ShuffleNet's channel shuffle among them), in three
 * element sizes, against direct indexing. */
static void
next_permutation (int *p, int n, gboolean *done)
{
  int i = n - 2;
  while (i >= 0 && p[i] > p[i + 1])
    i--;
  if (i < 0)
    {
      *done = TRUE;
      return;
    }
  int j = n - 1;
  while (p[j] < p[i])
    j--;
  int t = p[i];
  p[i] = p[j];
  p[j] = t;
  for (int a = i + 1, z = n - 1; a < z; a++, z--)
    t = p[a], p[a] = p[z], p[z] = t;
}

/* Every permutation of a shape of dtype, against direct indexing. */
static void
check_transpose_permutations (int rank, const gint64 *dims, GraftDType dtype)
{
  int perm[GRAFT_RT_MAX_RANK];
  gint64 numel = 1, strides[GRAFT_RT_MAX_RANK];
  for (int d = rank - 1; d >= 0; d--)
    perm[d] = d, strides[d] = numel, numel *= dims[d];
  g_autofree gint64 *values = g_new (gint64, numel);
  for (gint64 i = 0; i < numel; i++)
    values[i] = (i * 37 + 11) % (dtype == GRAFT_DTYPE_UINT8 ? 251 : 65521);
  for (gboolean done = FALSE; !done; next_permutation (perm, rank, &done))
    {
      Builder b;
      builder_init (&b, 13);
      add_input (b.graph, "x", dtype, rank, dims);
      GraftNode *n = add_node (b.graph, "Transpose", IN ("x"), IN ("y"));
      gint64 perm64[GRAFT_RT_MAX_RANK];
      for (int d = 0; d < rank; d++)
        perm64[d] = perm[d];
      graft_node_add_attribute (n, graft_attribute_new_ints ("perm", perm64, rank));
      add_output (b.graph, "y");
      g_autoptr(GError) error = NULL;
      g_autoptr(GPtrArray) out = run (&b, &error, "x", tensor_typed (dtype, rank, dims, values), NULL);
      g_assert_no_error (error);
      GraftRtTensor *y = out->pdata[0];
      g_assert_cmpint (y->numel, ==, numel);
      gint64 index[GRAFT_RT_MAX_RANK] = { 0 };
      for (gint64 o = 0; o < numel; o++)
        {
          gint64 at = 0;
          for (int d = 0; d < rank; d++)
            at += index[d] * strides[perm[d]];
          g_assert_cmpint (graft_rt_tensor_get_i64 (y, o), ==, values[at]);
          for (int d = rank - 1; d >= 0 && ++index[d] == dims[perm[d]]; d--)
            index[d] = 0;
        }
      builder_clear (&b);
    }
}

static void
test_transpose_runs (void)
{
  static const struct {
    int rank;
    gint64 dims[5];
  } shapes[] = {
    { 4, { 2, 1, 3, 4 } },
    { 4, { 1, 3, 1, 5 } },
    { 5, { 2, 2, 3, 2, 2 } },   /* the channel shuffle's [N, 2, C/2, H, W] */
    { 5, { 1, 2, 1, 3, 2 } },
  };
  static const GraftDType dtypes[] = { GRAFT_DTYPE_FLOAT32, GRAFT_DTYPE_INT64, GRAFT_DTYPE_UINT8 };
  for (guint k = 0; k < G_N_ELEMENTS (shapes); k++)
    for (guint t = 0; t < G_N_ELEMENTS (dtypes); t++)
      check_transpose_permutations (shapes[k].rank, shapes[k].dims, dtypes[t]);
}

/* A transpose of 4-byte values that moves the input's last dim away from
 * the output's last goes by tiles (8 × 8 registers from AVX2 on): every
 * permutation of rank-3 and rank-4 shapes whose dims are not multiples
 * of 8 and span several tiles, float32 and int32, against direct
 * indexing. */
static void
test_transpose_tiles (void)
{
  static const struct {
    int rank;
    gint64 dims[4];
  } shapes[] = {
    { 3, { 2, 37, 45 } },
    { 3, { 1, 70, 8 } },
    { 4, { 2, 11, 3, 19 } },
    { 4, { 9, 1, 33, 10 } },
  };
  static const GraftDType dtypes[] = { GRAFT_DTYPE_FLOAT32, GRAFT_DTYPE_INT32 };
  for (guint k = 0; k < G_N_ELEMENTS (shapes); k++)
    for (guint t = 0; t < G_N_ELEMENTS (dtypes); t++)
      check_transpose_permutations (shapes[k].rank, shapes[k].dims, dtypes[t]);
}

/* BatchNormalization of [N, C] (LeViT's BatchNorm1d over its flattened
 * tokens) goes by blocks of rows, of [N, C, S] by planes: both against
 * the per-channel affine computed here, over more rows than one block. */
static void
test_batch_norm_rows (void)
{
  static const gint64 shapes[][3] = { { 300, 70, 1 }, { 2, 70, 3 } };
  for (guint k = 0; k < G_N_ELEMENTS (shapes); k++)
    {
      gint64 N = shapes[k][0], C = shapes[k][1], S = shapes[k][2];
      gint64 dx[3] = { N, C, S }, dc[1] = { C };
      int rank = S == 1 ? 2 : 3;
      g_autofree float *x = g_new (float, N * C * S);
      g_autofree float *p = g_new (float, 4 * C);
      for (gint64 i = 0; i < N * C * S; i++)
        x[i] = (float) ((i * 37 % 101) - 50) / 25.0f;
      for (gint64 i = 0; i < 4 * C; i++)
        p[i] = (float) (i * 13 % 17) / 8.0f + (i >= 3 * C ? 0.1f : 0);   /* scale, B, mean, var > 0 */
      Builder b;
      builder_init (&b, 15);
      add_input (b.graph, "x", GRAFT_DTYPE_FLOAT32, rank, dx);
      static const char *const names[] = { "scale", "B", "mean", "var" };
      for (guint j = 0; j < 4; j++)
        add_input (b.graph, names[j], GRAFT_DTYPE_FLOAT32, 1, dc);
      add_node (b.graph, "BatchNormalization", IN ("x", "scale", "B", "mean", "var"), IN ("y"));
      add_output (b.graph, "y");
      g_autoptr(GError) error = NULL;
      g_autoptr(GPtrArray) out = run (&b, &error, "x", tensor_f32 (rank, dx, x), "scale", tensor_f32 (1, dc, p),
                                      "B", tensor_f32 (1, dc, p + C), "mean", tensor_f32 (1, dc, p + 2 * C), "var",
                                      tensor_f32 (1, dc, p + 3 * C), NULL);
      g_assert_no_error (error);
      const float *y = ((GraftRtTensor *) out->pdata[0])->data;
      for (gint64 i = 0; i < N * C * S; i++)
        {
          gint64 c = i / S % C;
          double s = p[c] / sqrt ((double) p[3 * C + c] + 1e-5);
          float want = x[i] * (float) s + (float) (p[C + c] - p[2 * C + c] * s);
          g_assert_cmpfloat_with_epsilon (y[i], want, 1e-6 * (1 + fabsf (want)));
        }
      builder_clear (&b);
    }
}

/* Slice copies runs of consecutive values where the trailing axes are
 * kept whole (a channel slice copies planes), value by value elsewhere:
 * both against direct indexing, on steps of 1, 2 and -1 along the
 * channels, a cut of the last axis, two axes at once and an int64 tensor. */
static void
test_slice_runs (void)
{
  static const struct {
    gint64 n_axes, starts[2], ends[2], axes[2], steps[2];
  } slices[] = {
    { 1, { 0 }, { 3 }, { 1 }, { 1 } },                /* GhostNet's x[:, :3] */
    { 1, { 1 }, { 6 }, { 1 }, { 2 } },                /* every other channel: runs of one plane */
    { 1, { 4 }, { -100 }, { 1 }, { -1 } },            /* reversed channels */
    { 1, { 1 }, { 3 }, { -1 }, { 1 } },               /* a cut of the last axis */
    { 2, { 2, 1 }, { 5, 3 }, { 1, 2 }, { 1, 1 } },    /* channels and rows: runs of whole rows */
    { 2, { 0, 1 }, { 1, 1000 }, { 0, 3 }, { 1, 1 } }, /* one image, a cut of the columns */
  };
  gint64 dims[] = { 2, 6, 3, 4 }, strides[] = { 72, 12, 4, 1 };
  for (int as_int64 = 0; as_int64 < 2; as_int64++)
    for (guint k = 0; k < G_N_ELEMENTS (slices); k++)
      {
        Builder b;
        builder_init (&b, 13);
        GraftDType dtype = as_int64 ? GRAFT_DTYPE_INT64 : GRAFT_DTYPE_FLOAT32;
        gint64 n = slices[k].n_axes;
        add_input (b.graph, "x", dtype, 4, dims);
        const char *names[] = { "starts", "ends", "axes", "steps" };
        for (int i = 0; i < 4; i++)
          add_input (b.graph, names[i], GRAFT_DTYPE_INT64, 1, &n);
        add_node (b.graph, "Slice", IN ("x", "starts", "ends", "axes", "steps"), IN ("y"));
        add_output (b.graph, "y");
        gint64 values[144];
        for (int i = 0; i < 144; i++)
          values[i] = i * 7 - 50;
        g_autoptr(GError) error = NULL;
        g_autoptr(GPtrArray) out = run (&b, &error, "x", tensor_typed (dtype, 4, dims, values),
                                        "starts", tensor_typed (GRAFT_DTYPE_INT64, 1, &n, slices[k].starts),
                                        "ends", tensor_typed (GRAFT_DTYPE_INT64, 1, &n, slices[k].ends),
                                        "axes", tensor_typed (GRAFT_DTYPE_INT64, 1, &n, slices[k].axes),
                                        "steps", tensor_typed (GRAFT_DTYPE_INT64, 1, &n, slices[k].steps), NULL);
        g_assert_no_error (error);
        /* each axis's start, step and length, by the ONNX rules for these slices */
        gint64 start[4] = { 0 }, step[4] = { 1, 1, 1, 1 }, len[4] = { 2, 6, 3, 4 };
        for (gint64 i = 0; i < n; i++)
          {
            int a = (slices[k].axes[i] + 4) % 4;
            gint64 st = slices[k].steps[i], d = dims[a];
            gint64 s0 = slices[k].starts[i] < 0 ? slices[k].starts[i] + d : slices[k].starts[i];
            gint64 e0 = slices[k].ends[i] < 0 ? slices[k].ends[i] + d : slices[k].ends[i];
            s0 = st > 0 ? CLAMP (s0, 0, d) : CLAMP (s0, 0, d - 1);
            e0 = st > 0 ? CLAMP (e0, 0, d) : CLAMP (e0, -1, d - 1);
            start[a] = s0;
            step[a] = st;
            len[a] = st > 0 ? MAX (0, (e0 - s0 + st - 1) / st) : MAX (0, (s0 - e0 - st - 1) / -st);
          }
        GraftRtTensor *y = out->pdata[0];
        g_assert_cmpint (y->dtype, ==, dtype);
        g_assert_cmpint (y->numel, ==, len[0] * len[1] * len[2] * len[3]);
        gint64 o = 0;
        for (gint64 i0 = 0; i0 < len[0]; i0++)
          for (gint64 i1 = 0; i1 < len[1]; i1++)
            for (gint64 i2 = 0; i2 < len[2]; i2++)
              for (gint64 i3 = 0; i3 < len[3]; i3++, o++)
                {
                  gint64 at = (start[0] + i0 * step[0]) * strides[0] + (start[1] + i1 * step[1]) * strides[1] +
                              (start[2] + i2 * step[2]) * strides[2] + (start[3] + i3 * step[3]) * strides[3];
                  g_assert_cmpint (graft_rt_tensor_get_i64 (y, o), ==, values[at]);
                }
        builder_clear (&b);
      }
}

/* The index numpy.pad reads along an axis of dim elements for output i
 * (begin pad taken off), or -1 for the constant. */
static gint64
pad_reference_index (gint64 i, gint64 dim, const char *mode)
{
  if (i >= 0 && i < dim)
    return i;
  if (strcmp (mode, "constant") == 0)
    return -1;
  if (strcmp (mode, "edge") == 0)
    return i < 0 ? 0 : dim - 1;
  if (strcmp (mode, "wrap") == 0)
    return ((i % dim) + dim) % dim;
  /* reflect: bounce between the ends without repeating them */
  while (i < 0 || i >= dim)
    i = i < 0 ? -i : 2 * (dim - 1) - i;
  return i;
}

/* Pad row by row (Swin's window padding of [N, H, W, C]) against the
 * numpy rule element by element: every mode, pads on the last axis and
 * on the outer ones, negative pads that crop, pads wider than the axis,
 * an axes input, float32, int64 and uint8. */
static void
test_pad_rows (void)
{
  static const struct {
    const char *mode;
    gint64 n_axes, axes[4], pads[8];
  } pads[] = {
    { "constant", 4, { 0, 1, 2, 3 }, { 0, 0, 1, 2, 0, 0, 4, 3 } },    /* Swin: [N, H, W, C] to whole windows */
    { "constant", 4, { 0, 1, 2, 3 }, { 0, 1, 0, 0, 0, 0, 0, 0 } },    /* only outer rows of fill */
    { "constant", 2, { -1, 1 }, { -2, 1, 1, -1 } },                   /* crops and pads, axes input */
    { "constant", 1, { 3 }, { -5, 0 } },                              /* crops every column */
    { "reflect", 4, { 0, 1, 2, 3 }, { 0, 2, 1, 3, 1, 1, 2, 4 } },
    { "edge", 4, { 0, 1, 2, 3 }, { 1, 0, 3, 6, 0, 2, 1, 2 } },
    { "wrap", 4, { 0, 1, 2, 3 }, { 0, 4, 2, 7, 1, 3, 0, 6 } },       /* wider than the axes */
    { "wrap", 2, { 2, 3 }, { -1, 2, 1, -3 } },
  };
  static const GraftDType dtypes[] = { GRAFT_DTYPE_FLOAT32, GRAFT_DTYPE_INT64, GRAFT_DTYPE_UINT8 };
  gint64 dims[] = { 2, 3, 4, 5 }, strides[] = { 60, 20, 5, 1 };
  gint64 values[120];
  for (int i = 0; i < 120; i++)
    values[i] = (i * 37) % 101 + 1;
  for (guint t = 0; t < G_N_ELEMENTS (dtypes); t++)
    for (guint k = 0; k < G_N_ELEMENTS (pads); k++)
      {
        Builder b;
        builder_init (&b, 19);
        gint64 n_pads = 2 * pads[k].n_axes, n_axes = pads[k].n_axes;
        add_input (b.graph, "x", dtypes[t], 4, dims);
        add_input (b.graph, "pads", GRAFT_DTYPE_INT64, 1, &n_pads);
        add_input (b.graph, "value", dtypes[t], 0, NULL);
        add_input (b.graph, "axes", GRAFT_DTYPE_INT64, 1, &n_axes);
        GraftNode *node = add_node (b.graph, "Pad", IN ("x", "pads", "value", "axes"), IN ("y"));
        graft_node_add_attribute (node, graft_attribute_new_string ("mode", pads[k].mode));
        add_output (b.graph, "y");
        gint64 fill = 9;
        g_autoptr(GError) error = NULL;
        g_autoptr(GPtrArray) out = run (&b, &error, "x", tensor_typed (dtypes[t], 4, dims, values),
                                        "pads", tensor_typed (GRAFT_DTYPE_INT64, 1, &n_pads, pads[k].pads),
                                        "value", tensor_typed (dtypes[t], 0, NULL, &fill),
                                        "axes", tensor_typed (GRAFT_DTYPE_INT64, 1, &n_axes, pads[k].axes), NULL);
        g_assert_no_error (error);
        gint64 begin[4] = { 0 }, end[4] = { 0 };
        for (gint64 i = 0; i < n_axes; i++)
          {
            gint64 a = (pads[k].axes[i] + 4) % 4;
            begin[a] = pads[k].pads[i];
            end[a] = pads[k].pads[i + n_axes];
          }
        GraftRtTensor *y = out->pdata[0];
        g_assert_cmpint (y->dtype, ==, dtypes[t]);
        for (int d = 0; d < 4; d++)
          g_assert_cmpint (y->dims[d], ==, MAX (dims[d] + begin[d] + end[d], 0));
        gint64 index[4] = { 0 };
        for (gint64 o = 0; o < y->numel; o++)
          {
            gint64 at = 0;
            for (int d = 0; d < 4 && at >= 0; d++)
              {
                gint64 i = pad_reference_index (index[d] - begin[d], dims[d], pads[k].mode);
                at = i < 0 ? -1 : at + i * strides[d];
              }
            g_assert_cmpint (graft_rt_tensor_get_i64 (y, o), ==, at < 0 ? fill : values[at]);
            for (int d = 3; d >= 0 && ++index[d] == y->dims[d]; d--)
              index[d] = 0;
          }
        builder_clear (&b);
      }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/runtime/broadcast-add", test_broadcast_add);
  add_at_each_level ("/runtime/binary-float", test_binary_float);
  g_test_add_func ("/runtime/expand-where-rows", test_expand_where_rows);
  g_test_add_func ("/runtime/pow-by-one-exponent", test_pow_by_one_exponent);
  g_test_add_func ("/runtime/constant-nodes-planned", test_constant_nodes_planned);
  g_test_add_func ("/runtime/shape-steps-memoised", test_shape_steps_memoised);
  g_test_add_func ("/runtime/resize-of-constants-memoised", test_resize_of_constants_memoised);
  g_test_add_func ("/runtime/inference-reused-only-for-same-inputs", test_inference_reused_only_for_same_inputs);
  g_test_add_func ("/runtime/expand-blocks", test_expand_blocks);
  g_test_add_func ("/runtime/cast-to-own-type", test_cast_to_own_type);
  g_test_add_func ("/runtime/slice-runs", test_slice_runs);
  g_test_add_func ("/runtime/transpose-runs", test_transpose_runs);
  add_at_each_level ("/runtime/transpose-tiles", test_transpose_tiles);
  g_test_add_func ("/runtime/batch-norm-rows", test_batch_norm_rows);
  g_test_add_func ("/runtime/pad-rows", test_pad_rows);
  g_test_add_func ("/runtime/registry-parameter-names", test_registry_parameter_names);
  g_test_add_func ("/runtime/static-inference-keeps-symbols", test_static_inference_keeps_symbols);
  g_test_add_func ("/runtime/narrow-dtypes", test_narrow_dtypes);
  g_test_add_func ("/runtime/attention-checks", test_attention_checks);
  g_test_add_func ("/runtime/rms-normalization", test_rms_normalization);
  g_test_add_func ("/runtime/broadcast-incompatible", test_broadcast_incompatible);
  g_test_add_func ("/runtime/int-wrap-div-zero", test_int_wrap_and_div_zero);
  g_test_add_func ("/runtime/negative-axis-empty", test_negative_axis_and_empty);
  g_test_add_func ("/runtime/conv-geometry", test_conv_geometry);
  add_at_each_level ("/runtime/depthwise-against-direct", test_depthwise_against_direct);
  g_test_add_func ("/runtime/maxpool-ceil", test_maxpool_same_upper_ceil);
  add_at_each_level ("/runtime/maxpool-against-direct", test_maxpool_against_direct);
  add_at_each_level ("/runtime/averagepool-against-direct", test_averagepool_against_direct);
  add_at_each_level ("/runtime/conv-residual-fusion", test_conv_residual_fusion);
  g_test_add_func ("/runtime/if-captures-outer", test_if_captures_outer_value);
  g_test_add_func ("/runtime/unsupported-before-run", test_unsupported_listed_before_running);
  g_test_add_func ("/runtime/input-checks", test_input_checks);
  g_test_add_func ("/runtime/liveness-outputs", test_liveness_keeps_outputs);
  g_test_add_func ("/runtime/half-precision", test_half_precision);
  g_test_add_func ("/runtime/npy-roundtrip-truncation", test_npy_roundtrip_and_truncation);
  g_test_add_func ("/runtime/npy-v2-big-endian-strings", test_npy_versions_and_strings);
  g_test_add_func ("/runtime/pb-malformed", test_pb_malformed);
  g_test_add_func ("/runtime/registry", test_registry_entries);
  g_test_add_func ("/runtime/registry-names-match-onnx-schemas", test_registry_names_match_onnx_schemas);
  g_test_add_func ("/runtime/static-inference-symbolic", test_static_inference_symbolic);
  return g_test_run ();
}
