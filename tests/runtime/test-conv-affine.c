/* An ONNX Conv whose output only a Mul (or Div) by a constant per output
 * channel reads, then an Add of one (DETR's FrozenBatchNorm2d; the layer
 * scales of PoolFormer, FastViT and EfficientFormer as torch.export
 * writes them): the constants go into the Conv's weight and bias, and the
 * Mul and Add forward its output (runtime-fusion.c fold_conv_affines);
 * a Relu after them still goes into the Conv, and a residual Add still
 * into its epilogue. Each case against the same nodes run one by one (an
 * observer turns the engine's fusions off) at every SIMD level, at one
 * and two threads, on the Conv paths the fold meets (3×3, pointwise,
 * depthwise, groups, without a bias, a pointwise Conv that the
 * pointwise → depthwise pattern would take, constants through Identity
 * nodes, constants that Reciprocal and Neg nodes compute from
 * initializers, which run when the plan is built, fold_constant_steps),
 * and cases that must not
 * fold: a map of values per position, a constant divided by the Conv's
 * output, the Conv's output also a graph output, a Mul by a graph
 * input. */
#include <math.h>
#include <string.h>
#include "runtime/runtime.h"
#include "float-graph.h"
#include "op-timings.h"
#include "simd-levels.h"

typedef enum { NONE, CHANNELS, CHANNELS_RANK3, SCALAR, POSITIONS, GRAPH_INPUT } ConstantShape;

typedef struct {
  const char *what;
  gint64 n, c, m, h, w, k, group;
  const char *scale_op;       /* "Mul", "Div" or NULL */
  ConstantShape scale;
  gboolean constant_first;    /* scale_op (constant, conv) */
  ConstantShape shift;        /* the Add's constant */
  gboolean relu;              /* a Relu after them */
  gboolean residual;          /* then an Add of x (a layer scale's residual) */
  gboolean depthwise_after;   /* then a depthwise 3×3 Conv */
  gboolean no_bias;
  gboolean conv_out;          /* the Conv's output is a graph output too */
  gboolean via_identity;      /* the constants reach the Mul and Add through Identity nodes */
  gboolean computed;          /* the constants are Reciprocal and Neg of initializers */
  gboolean folded;
} AffineCase;

static const AffineCase cases[] = {
  { "FrozenBatchNorm2d: Mul, Add, Relu", 2, 8, 16, 9, 9, 3, 1, "Mul", CHANNELS, FALSE, CHANNELS, TRUE, .folded = TRUE },
  { "Mul by [M,1,1], constant first, pointwise", 2, 24, 20, 7, 7, 1, 1, "Mul", CHANNELS_RANK3, TRUE, NONE,
    .folded = TRUE },
  { "Div by a scalar, Add of a scalar, depthwise", 2, 16, 16, 8, 8, 3, 16, "Div", SCALAR, FALSE, SCALAR,
    .folded = TRUE },
  { "layer scale without bias, residual Add of x", 1, 12, 12, 6, 6, 1, 1, "Mul", CHANNELS, FALSE, NONE,
    .residual = TRUE, .no_bias = TRUE, .folded = TRUE },
  { "Add alone, two groups", 1, 8, 12, 5, 5, 3, 2, NULL, NONE, FALSE, CHANNELS, TRUE, .folded = TRUE },
  { "pointwise, Mul, Relu, then depthwise", 2, 8, 16, 10, 10, 1, 1, "Mul", CHANNELS, FALSE, NONE, TRUE,
    .depthwise_after = TRUE, .folded = TRUE },
  { "constants through Identity nodes (torch.onnx.export's shared initializers)", 2, 8, 8, 6, 6, 3, 1, "Mul",
    CHANNELS, FALSE, CHANNELS, TRUE, .via_identity = TRUE, .folded = TRUE },
  { "constants computed from initializers", 2, 8, 12, 6, 6, 3, 1, "Mul", CHANNELS, FALSE, CHANNELS, TRUE,
    .computed = TRUE, .folded = TRUE },
  { "Mul by a map of positions", 1, 4, 6, 5, 5, 3, 1, "Mul", POSITIONS, FALSE, CHANNELS },
  { "constant divided by the Conv", 1, 4, 6, 5, 5, 3, 1, "Div", CHANNELS, TRUE, NONE },
  { "Conv output also a graph output", 1, 4, 6, 5, 5, 3, 1, "Mul", CHANNELS, FALSE, CHANNELS, .conv_out = TRUE },
  { "Mul by a graph input", 1, 4, 6, 5, 5, 3, 1, "Mul", GRAPH_INPUT, FALSE, NONE },
};

/* The constant (or input) name of shape for m channels of an h×w map. */
static void
add_constant (GraftGraph *g, const char *name, ConstantShape shape, gint64 m, gint64 h, gint64 w, gint64 salt)
{
  gint64 dims[4] = { 1, m, 1, 1 }, n = m;
  int rank = 4;
  const gint64 *at = dims;
  if (shape == CHANNELS_RANK3)
    rank = 3, at = dims + 1;
  else if (shape == SCALAR)
    rank = 0, n = 1;
  else if (shape == POSITIONS)
    dims[1] = 1, dims[2] = h, dims[3] = w, n = h * w;
  if (shape == GRAPH_INPUT)
    {
      float_graph_add_input (g, name, 4, dims);
      return;
    }
  g_autofree float *values = g_new (float, n);
  for (gint64 i = 0; i < n; i++)
    values[i] = 0.5f + float_graph_value_at (i, salt);   /* in [-0.5, 1.5): signs change, none is 0 */
  for (gint64 i = 0; i < n; i++)
    if (values[i] == 0)
      values[i] = 0.25f;
  float_graph_add_initializer (g, name, rank, at, values);
}

static GraftModel *
build_model (const AffineCase *c, const float *w, const float *b, const float *dw)
{
  GraftModel *model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *g = graft_graph_new ("conv-affine");
  graft_model_set_opset (model, "onnx", 17);
  gint64 xd[4] = { c->n, c->c, c->h, c->w }, pads[4] = { c->k / 2, c->k / 2, c->k / 2, c->k / 2 };
  float_graph_add_input (g, "x", 4, xd);
  GraftNode *conv = float_graph_add_conv (g, "x", "conv", c->m, c->c / c->group, c->k, c->k, w, b, 1, 1, pads,
                                          c->group);
  if (c->no_bias)
    g_ptr_array_set_size (conv->inputs, 2);
  const char *last = "conv";
  if (c->scale_op)
    {
      add_constant (g, "scale", c->scale, c->m, c->h, c->w, 5);
      const char *scale = "scale";
      if (c->via_identity)
        float_graph_add_node (g, "Identity", "scale", NULL, NULL, scale = "scale_again");
      if (c->computed)
        float_graph_add_node (g, "Reciprocal", "scale", NULL, NULL, scale = "scale_computed");
      float_graph_add_node (g, c->scale_op, c->constant_first ? scale : "conv", c->constant_first ? "conv" : scale,
                            NULL, "scaled");
      last = "scaled";
    }
  if (c->shift != NONE)
    {
      add_constant (g, "shift", c->shift, c->m, c->h, c->w, 6);
      const char *shift = "shift";
      if (c->via_identity)
        float_graph_add_node (g, "Identity", "shift", NULL, NULL, shift = "shift_again");
      if (c->computed)
        float_graph_add_node (g, "Neg", "shift", NULL, NULL, shift = "shift_computed");
      float_graph_add_node (g, "Add", last, shift, NULL, "shifted");
      last = "shifted";
    }
  if (c->relu)
    {
      float_graph_add_node (g, "Relu", last, NULL, NULL, "relu");
      last = "relu";
    }
  if (c->residual)
    {
      float_graph_add_node (g, "Add", "x", last, NULL, "residual");
      last = "residual";
    }
  if (c->depthwise_after)
    {
      gint64 dwd[] = { c->m, 1, 3, 3 }, one[] = { 1, 1 }, dpads[] = { 1, 1, 1, 1 };
      float_graph_add_initializer (g, "dw", 4, dwd, dw);
      GraftNode *d = float_graph_add_node (g, "Conv", last, "dw", NULL, "depthwise");
      graft_node_add_attribute (d, graft_attribute_new_ints ("strides", one, 2));
      graft_node_add_attribute (d, graft_attribute_new_ints ("pads", dpads, 4));
      graft_node_add_attribute (d, graft_attribute_new_int ("group", c->m));
      last = "depthwise";
    }
  graft_graph_add_output (g, float_graph_value (g, last));
  if (c->conv_out)
    graft_graph_add_output (g, float_graph_value (g, "conv"));
  graft_model_set_graph (model, g);
  return model;
}

static void
check_case (gconstpointer item, GraftSimdLevel level)
{
  const AffineCase *c = item;
  gint64 nw = c->m * (c->c / c->group) * c->k * c->k, nx = c->n * c->c * c->h * c->w;
  g_autofree float *w = g_new (float, nw);
  g_autofree float *b = g_new (float, c->m);
  g_autofree float *dw = g_new (float, c->m * 9);
  for (gint64 i = 0; i < nw; i++)
    w[i] = 2 * float_graph_value_at (i, 1) / (c->c / c->group * c->k * c->k);
  for (gint64 i = 0; i < c->m; i++)
    b[i] = float_graph_value_at (i, 2);
  for (gint64 i = 0; i < c->m * 9; i++)
    dw[i] = float_graph_value_at (i, 7) / 3;
  g_autoptr(GraftModel) model = build_model (c, w, b, dw);
  g_autoptr(GHashTable) inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                        (GDestroyNotify) graft_rt_tensor_unref);
  gint64 xd[4] = { c->n, c->c, c->h, c->w };
  GraftRtTensor *x = graft_rt_tensor_new (GRAFT_DTYPE_FLOAT32, 4, xd, NULL);
  for (gint64 i = 0; i < nx; i++)
    ((float *) x->data)[i] = 2 * float_graph_value_at (i, 3);
  g_hash_table_insert (inputs, (gpointer) "x", x);
  if (c->scale == GRAPH_INPUT)
    {
      gint64 sd[4] = { 1, c->m, 1, 1 };
      GraftRtTensor *s = graft_rt_tensor_new (GRAFT_DTYPE_FLOAT32, 4, sd, NULL);
      for (gint64 i = 0; i < c->m; i++)
        ((float *) s->data)[i] = 0.5f + float_graph_value_at (i, 5);
      g_hash_table_insert (inputs, (gpointer) "scale", s);
    }
  if (c->residual && (c->m != c->c || c->k != 1))
    g_error ("%s: the residual Add needs the Conv to keep x's shape", c->what);

  /* the first node folded in: it forwards the Conv's output when the fold is made */
  const char *first = c->scale_op ? (strcmp (c->scale_op, "Mul") == 0 ? "onnx::Mul" : "onnx::Div") : "onnx::Add";
  g_autoptr(GraftRuntime) nodes = NULL;
  g_autoptr(GPtrArray) reference = graft_test_run_profiled (model, inputs, 1, FALSE, &nodes);
  g_assert_cmpuint (graft_test_op_forwarded (nodes, first), ==, 0);
  for (guint threads = 1; threads <= 2; threads++)
    {
      g_autoptr(GraftRuntime) rt = NULL;
      g_autoptr(GPtrArray) fast = graft_test_run_profiled (model, inputs, threads, TRUE, &rt);
      guint64 forwarded = graft_test_op_forwarded (rt, first);
      g_test_message ("%s at %s, %u threads: %s forwarded %" G_GUINT64_FORMAT " times", c->what,
                      graft_simd_level_to_string (level), threads, first, forwarded);
      g_assert_cmpuint (forwarded, ==, c->folded ? 1 : 0);
      if (c->folded && c->relu)
        g_assert_cmpuint (graft_test_op_forwarded (rt, "onnx::Relu"), ==, 1);
      /* computed when the plan was built */
      g_assert_cmpuint (graft_test_op_calls (rt, "onnx::Reciprocal", NULL, NULL), ==, 0);
      g_assert_cmpuint (graft_test_op_calls (rt, "onnx::Neg", NULL, NULL), ==, 0);
      g_autofree char *what = g_strdup_printf ("%s at %s, %u threads", c->what, graft_simd_level_to_string (level),
                                               threads);
      /* the weights are scaled before the sum: rounded once more than the reference's */
      float_graph_assert_outputs_close (what, fast, reference, 1e-5);
      /* and again: the folded weight computed, then packed or kept */
      g_autoptr(GPtrArray) again = graft_test_run_again (rt, inputs);
      float_graph_assert_outputs_close (what, again, reference, 1e-5);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  graft_test_add_checks_at_levels ("/conv-affine", cases, sizeof cases[0], G_N_ELEMENTS (cases), check_case);
  return g_test_run ();
}
