/* A Conv whose output only a SiLU (Sigmoid, then Mul of the Conv's output
 * by it: EfficientNet's, as torch.onnx.export writes torch.nn.SiLU) or a
 * HardSwish (MobileNetV3's) reads: the Conv applies the activation and
 * the activation's nodes forward its output (runtime-fusion.c
 * fuse_conv_activations). Each case against the same nodes run one by one
 * (an observer turns the engine's fusions off) at every SIMD level, at
 * one and two threads: the Conv paths the activation follows (pointwise
 * slivers and side-by-side images, Winograd, the packed GEMM with stride
 * 2, depthwise 3×3 and 5×5, groups, 1×1 maps), the Mul's operands in
 * either order, and cases that must not fuse: the Conv's output also a
 * graph output, the Sigmoid's output read by another node, a Mul by
 * something else, a Conv already given a Relu. */
#include <math.h>
#include <string.h>
#include "runtime/runtime.h"
#include "float-graph.h"
#include "op-timings.h"
#include "simd-levels.h"

typedef enum { SILU, SILU_SIGMOID_FIRST, HARD_SWISH } Activation;

typedef struct {
  const char *what;
  gint64 n, c, m, h, w, k, s, group;
  Activation act;
  gboolean fused;             /* the Conv applies the activation */
  gboolean conv_out;          /* the Conv's output is a graph output too */
  gboolean sigmoid_out;       /* the Sigmoid's output is a graph output too */
  gboolean mul_other;         /* the Mul multiplies the Sigmoid by x, not by the Conv's output */
  gboolean relu_first;        /* Conv → Relu → the activation */
} ActivationCase;

static const ActivationCase cases[] = {
  { "pointwise, 4x4 maps side by side", 2, 32, 40, 4, 4, 1, 1, 1, SILU, TRUE },
  { "pointwise 14x14, slivers and a tail", 2, 24, 20, 14, 14, 1, 1, 1, HARD_SWISH, TRUE },
  { "3x3 Winograd, Sigmoid first in the Mul", 2, 16, 24, 10, 10, 3, 1, 1, SILU_SIGMOID_FIRST, TRUE },
  { "3x3 stride 2, odd map", 1, 8, 12, 13, 13, 3, 2, 1, SILU, TRUE },
  { "depthwise 3x3", 2, 24, 24, 9, 9, 3, 1, 24, HARD_SWISH, TRUE },
  { "depthwise 5x5 stride 2", 2, 16, 16, 11, 11, 5, 2, 16, SILU, TRUE },
  { "two groups", 1, 8, 12, 6, 6, 3, 1, 2, SILU, TRUE },
  { "1x1 maps (squeeze-excite)", 2, 64, 16, 1, 1, 1, 1, 1, SILU, TRUE },
  { "large map over the threads", 1, 8, 16, 96, 100, 3, 1, 1, SILU, TRUE },
  { "Conv output also a graph output", 2, 8, 8, 5, 5, 3, 1, 1, SILU, FALSE, TRUE },
  { "HardSwish, Conv output also a graph output", 2, 8, 8, 5, 5, 3, 1, 1, HARD_SWISH, FALSE, TRUE },
  { "Sigmoid output also a graph output", 2, 8, 8, 5, 5, 3, 1, 1, SILU, FALSE, FALSE, TRUE },
  { "Mul of the Sigmoid by another value", 1, 8, 8, 5, 5, 1, 1, 1, SILU, FALSE, FALSE, FALSE, TRUE },
  { "Relu first: the Conv takes the clamp, the SiLU runs", 1, 6, 8, 7, 7, 3, 1, 1, SILU, FALSE, FALSE, FALSE, FALSE,
    TRUE },
};

static GraftModel *
build_model (const ActivationCase *c, const float *w, const float *b)
{
  GraftModel *model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *g = graft_graph_new ("conv-activation");
  graft_model_set_opset (model, "onnx", 17);
  gint64 xd[4] = { c->n, c->c, c->h, c->w }, pads[4] = { c->k / 2, c->k / 2, c->k / 2, c->k / 2 };
  float_graph_add_input (g, "x", 4, xd);
  float_graph_add_conv (g, "x", "conv", c->m, c->c / c->group, c->k, c->k, w, b, c->s, 1, pads, c->group);
  const char *pre = "conv";
  if (c->relu_first)
    {
      float_graph_add_node (g, "Relu", "conv", NULL, NULL, "relu");
      pre = "relu";
    }
  if (c->act == HARD_SWISH)
    float_graph_add_node (g, "HardSwish", pre, NULL, NULL, "y");
  else
    {
      float_graph_add_node (g, "Sigmoid", pre, NULL, NULL, "sigmoid");
      /* the other operand: x itself only where the map keeps x's shape */
      const char *other = c->mul_other ? "x" : pre;
      if (c->act == SILU_SIGMOID_FIRST)
        float_graph_add_node (g, "Mul", "sigmoid", other, NULL, "y");
      else
        float_graph_add_node (g, "Mul", other, "sigmoid", NULL, "y");
    }
  graft_graph_add_output (g, float_graph_value (g, "y"));
  if (c->conv_out)
    graft_graph_add_output (g, float_graph_value (g, "conv"));
  if (c->sigmoid_out)
    graft_graph_add_output (g, float_graph_value (g, "sigmoid"));
  graft_model_set_graph (model, g);
  return model;
}

static void
check_case (gconstpointer item, GraftSimdLevel level)
{
  const ActivationCase *c = item;
  gint64 oh = (c->h + 2 * (c->k / 2) - c->k) / c->s + 1, ow = (c->w + 2 * (c->k / 2) - c->k) / c->s + 1;
  gint64 nw = c->m * (c->c / c->group) * c->k * c->k, nx = c->n * c->c * c->h * c->w;
  g_autofree float *w = g_new (float, nw);
  g_autofree float *b = g_new (float, c->m);
  for (gint64 i = 0; i < nw; i++)
    w[i] = 2 * float_graph_value_at (i, 1) / (c->c / c->group * c->k * c->k);
  for (gint64 i = 0; i < c->m; i++)
    b[i] = 2 * float_graph_value_at (i, 2);
  g_autoptr(GraftModel) model = build_model (c, w, b);
  g_autoptr(GHashTable) inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                        (GDestroyNotify) graft_rt_tensor_unref);
  gint64 xd[4] = { c->n, c->c, c->h, c->w };
  GraftRtTensor *x = graft_rt_tensor_new (GRAFT_DTYPE_FLOAT32, 4, xd, NULL);
  for (gint64 i = 0; i < nx; i++)
    ((float *) x->data)[i] = 2 * float_graph_value_at (i, 3);
  /* far out on both sides, where the activations saturate */
  ((float *) x->data)[0] = 40;
  ((float *) x->data)[nx - 1] = -40;
  g_hash_table_insert (inputs, (gpointer) "x", x);
  if (c->mul_other && (oh != c->h || ow != c->w || c->m != c->c))
    g_error ("%s: the Mul by x needs the Conv to keep x's shape", c->what);

  const char *act_op = c->act == HARD_SWISH ? "onnx::HardSwish" : "onnx::Mul";
  g_autoptr(GraftRuntime) nodes = NULL;
  g_autoptr(GPtrArray) reference = graft_test_run_profiled (model, inputs, 1, FALSE, &nodes);
  g_assert_cmpuint (graft_test_op_forwarded (nodes, act_op), ==, 0);
  for (guint threads = 1; threads <= 2; threads++)
    {
      g_autoptr(GraftRuntime) rt = NULL;
      g_autoptr(GPtrArray) fast = graft_test_run_profiled (model, inputs, threads, TRUE, &rt);
      guint64 forwarded = graft_test_op_forwarded (rt, act_op);
      g_test_message ("%s at %s, %u threads: the activation forwarded %" G_GUINT64_FORMAT " times", c->what,
                      graft_simd_level_to_string (level), threads, forwarded);
      g_assert_cmpuint (forwarded, ==, c->fused ? 1 : 0);
      g_autofree char *what = g_strdup_printf ("%s at %s, %u threads", c->what, graft_simd_level_to_string (level),
                                               threads);
      float_graph_assert_outputs_close (what, fast, reference, 1e-6);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  graft_test_add_checks_at_levels ("/conv-activation", cases, sizeof cases[0], G_N_ELEMENTS (cases), check_case);
  return g_test_run ();
}
