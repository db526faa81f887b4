/* Parallel linear branches of one input summed (MobileOne's, FastViT's
 * and RepVGG's training-time blocks as exported): Convs with "same"
 * padding, BatchNormalizations and x itself under Add, Sub, Mul by a
 * constant per channel and Add of one become the widest Conv with the
 * others' weights added at its centre (runtime-fusion.c
 * fold_conv_branches, fusion-patterns.c graft_conv_branches_fusion_match);
 * the tree's other Convs and BatchNormalizations do not run. Each case
 * against the same nodes run one by one (an observer turns the engine's
 * fusions off) at every SIMD level, at one and two threads and on a
 * second run: FastViT's RepMixer, MobileOne's stride-2 stem with an Add
 * of a constant, a large-kernel grouped pair, a BatchNormalization beside
 * a full 1×1 Conv, a depthwise 1×1 on a full 3×3's diagonal; and trees
 * that must stay: a branch of another input, a Conv padded on one side
 * only; and a sum that is also a graph output, where only that sum folds. */
#include <math.h>
#include <string.h>
#include "runtime/runtime.h"
#include "float-graph.h"
#include "op-timings.h"
#include "simd-levels.h"

typedef enum { REP_MIXER, STEM, LARGE_KERNEL, NORM_AND_POINTWISE, DEPTHWISE_ON_FULL, OTHER_INPUT, VALID_PADDING,
               INNER_OUTPUT } Tree;

typedef struct {
  const char *what;
  Tree tree;
  gint64 n, c, h, w;
  guint convs_left;           /* Conv nodes that run when it folds */
  gboolean folded;
} BranchCase;

static const BranchCase cases[] = {
  { "RepMixer: x + γ·((dw1×1 + BN + dw3×3) − BN')", REP_MIXER, 2, 8, 9, 9, 1, TRUE },
  { "MobileOne stem: 1×1 + constant + 3×3, stride 2", STEM, 2, 3, 11, 10, 1, TRUE },
  { "large kernel: grouped 7×7 + 3×3, stride 2", LARGE_KERNEL, 1, 6, 13, 13, 1, TRUE },
  { "BN + full 1×1", NORM_AND_POINTWISE, 2, 8, 6, 7, 1, TRUE },
  { "depthwise 1×1 on a full 3×3's diagonal", DEPTHWISE_ON_FULL, 1, 8, 7, 7, 1, TRUE },
  { "a branch of another input", OTHER_INPUT, 1, 8, 7, 7, 2, FALSE },
  { "a 3×3 padded after only", VALID_PADDING, 1, 8, 7, 7, 2, FALSE },
  { "an inner sum also a graph output: only that sum folds", INNER_OUTPUT, 1, 8, 7, 7, 2, TRUE },
};

static void
add_values (GraftGraph *g, const char *name, int rank, const gint64 *dims, gint64 salt, float scale, float offset)
{
  gint64 n = 1;
  for (int d = 0; d < rank; d++)
    n *= dims[d];
  g_autofree float *v = g_new (float, n);
  for (gint64 i = 0; i < n; i++)
    v[i] = offset + scale * float_graph_value_at (i, salt);
  float_graph_add_initializer (g, name, rank, dims, v);
}

/* Conv `name` of x into out: m outputs, k × k, pads pad on each side
 * (-1: 2 after, none before), weights name.w and bias name.b */
static void
add_conv (GraftGraph *g, const char *name, const char *x, const char *out, gint64 c, gint64 m, gint64 k,
          gint64 stride, gint64 pad, gint64 group, gint64 salt)
{
  g_autofree char *w = g_strdup_printf ("%s.w", name), *b = g_strdup_printf ("%s.b", name);
  gint64 dw[4] = { m, c / group, k, k }, db[1] = { m }, strides[2] = { stride, stride }, pads[4] = { MAX (pad, 0), MAX (pad, 0), pad < 0 ? 2 : pad, pad < 0 ? 2 : pad };
  add_values (g, w, 4, dw, salt, 1.0f / (c / group * k), 0);
  add_values (g, b, 1, db, salt + 1, 0.5f, 0);
  GraftNode *conv = float_graph_add_node (g, "Conv", x, w, b, out);
  graft_node_add_attribute (conv, graft_attribute_new_ints ("strides", strides, 2));
  graft_node_add_attribute (conv, graft_attribute_new_ints ("pads", pads, 4));
  graft_node_add_attribute (conv, graft_attribute_new_int ("group", group));
}

static void
add_batch_norm (GraftGraph *g, const char *name, const char *x, const char *out, gint64 c, gint64 salt)
{
  static const char *const parts[] = { "scale", "bias", "mean", "var" };
  char *names[4];
  gint64 dims[1] = { c };
  for (guint k = 0; k < 4; k++)
    {
      names[k] = g_strdup_printf ("%s.%s", name, parts[k]);
      /* a variance of 0.5 to 1.5 */
      add_values (g, names[k], 1, dims, salt + k, 0.5f, k == 3 ? 1 : 0);
    }
  GraftNode *bn = float_graph_add_node (g, "BatchNormalization", x, names[0], names[1], out);
  graft_node_add_input (bn, float_graph_value (g, names[2]));
  graft_node_add_input (bn, float_graph_value (g, names[3]));
  for (guint k = 0; k < 4; k++)
    g_free (names[k]);
}

static GraftModel *
build_model (const BranchCase *c)
{
  GraftModel *model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *g = graft_graph_new ("branches");
  graft_model_set_opset (model, "onnx", 17);
  gint64 xd[4] = { c->n, c->c, c->h, c->w }, gd[3] = { c->c, 1, 1 }, none[1] = { 0 };
  float_graph_add_input (g, "x", 4, xd);
  switch (c->tree)
    {
    case REP_MIXER:
      add_conv (g, "scale", "x", "s", c->c, c->c, 1, 1, 0, c->c, 10);
      add_batch_norm (g, "bn", "x", "n", c->c, 20);
      float_graph_add_node (g, "Add", "s", "n", NULL, "sn");
      add_conv (g, "kxk", "x", "k", c->c, c->c, 3, 1, 1, c->c, 30);
      float_graph_add_node (g, "Add", "sn", "k", NULL, "mixer");
      add_batch_norm (g, "norm", "x", "n2", c->c, 40);
      float_graph_add_node (g, "Sub", "mixer", "n2", NULL, "d");
      add_values (g, "gamma", 3, gd, 50, 1, 0);
      float_graph_add_node (g, "Mul", "d", "gamma", NULL, "scaled");
      float_graph_add_node (g, "Add", "x", "scaled", NULL, "y");
      break;
    case STEM:
      add_conv (g, "scale", "x", "s", c->c, 8, 1, 2, 0, 1, 10);
      add_values (g, "zero", 0, none, 60, 0.25f, 0);
      float_graph_add_node (g, "Add", "s", "zero", NULL, "s0");
      add_conv (g, "kxk", "x", "k", c->c, 8, 3, 2, 1, 1, 30);
      float_graph_add_node (g, "Add", "s0", "k", NULL, "y");
      break;
    case LARGE_KERNEL:
      add_conv (g, "large", "x", "l", c->c, 2 * c->c, 7, 2, 3, c->c, 10);
      add_conv (g, "small", "x", "s", c->c, 2 * c->c, 3, 2, 1, c->c, 30);
      float_graph_add_node (g, "Add", "l", "s", NULL, "y");
      break;
    case NORM_AND_POINTWISE:
      add_batch_norm (g, "bn", "x", "n", c->c, 20);
      add_conv (g, "kxk", "x", "k", c->c, c->c, 1, 1, 0, 1, 30);
      float_graph_add_node (g, "Add", "n", "k", NULL, "y");
      break;
    case DEPTHWISE_ON_FULL:
      add_conv (g, "scale", "x", "s", c->c, c->c, 1, 1, 0, c->c, 10);
      add_conv (g, "kxk", "x", "k", c->c, c->c, 3, 1, 1, 1, 30);
      float_graph_add_node (g, "Sub", "k", "s", NULL, "y");
      break;
    case OTHER_INPUT:
      float_graph_add_node (g, "Relu", "x", NULL, NULL, "r");
      add_conv (g, "scale", "r", "s", c->c, c->c, 1, 1, 0, c->c, 10);
      add_conv (g, "kxk", "x", "k", c->c, c->c, 3, 1, 1, c->c, 30);
      float_graph_add_node (g, "Add", "s", "k", NULL, "y");
      break;
    case VALID_PADDING:
      add_conv (g, "scale", "x", "s", c->c, c->c, 1, 1, 0, c->c, 10);
      add_conv (g, "kxk", "x", "k", c->c, c->c, 3, 1, -1, c->c, 30);
      float_graph_add_node (g, "Add", "s", "k", NULL, "y");
      break;
    case INNER_OUTPUT:
      add_conv (g, "scale", "x", "s", c->c, c->c, 1, 1, 0, c->c, 10);
      add_conv (g, "kxk", "x", "k", c->c, c->c, 3, 1, 1, c->c, 30);
      float_graph_add_node (g, "Add", "s", "k", NULL, "sk");
      add_conv (g, "third", "x", "t", c->c, c->c, 3, 1, 1, c->c, 40);
      float_graph_add_node (g, "Add", "sk", "t", NULL, "y");
      graft_graph_add_output (g, float_graph_value (g, "sk"));
      break;
    }
  graft_graph_add_output (g, float_graph_value (g, "y"));
  graft_model_set_graph (model, g);
  return model;
}

static void
check_case (gconstpointer item, GraftSimdLevel level)
{
  const BranchCase *c = item;
  g_autoptr(GraftModel) model = build_model (c);
  g_autoptr(GHashTable) inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                        (GDestroyNotify) graft_rt_tensor_unref);
  gint64 xd[4] = { c->n, c->c, c->h, c->w };
  GraftRtTensor *x = graft_rt_tensor_new (GRAFT_DTYPE_FLOAT32, 4, xd, NULL);
  for (gint64 i = 0; i < x->numel; i++)
    ((float *) x->data)[i] = 2 * float_graph_value_at (i, 3);
  g_hash_table_insert (inputs, (gpointer) "x", x);

  g_autoptr(GraftRuntime) nodes = NULL;
  g_autoptr(GPtrArray) reference = graft_test_run_profiled (model, inputs, 1, FALSE, &nodes);
  guint all_convs = graft_test_op_calls (nodes, "onnx::Conv", NULL, NULL);
  for (guint threads = 1; threads <= 2; threads++)
    {
      g_autoptr(GraftRuntime) rt = NULL;
      g_autoptr(GPtrArray) fast = graft_test_run_profiled (model, inputs, threads, TRUE, &rt);
      guint convs = graft_test_op_calls (rt, "onnx::Conv", NULL, NULL);
      g_autofree char *what = g_strdup_printf ("%s at %s, %u threads", c->what, graft_simd_level_to_string (level),
                                               threads);
      g_test_message ("%s: %u of %u Convs ran", what, convs, all_convs);
      g_assert_cmpuint (convs, ==, c->convs_left);
      g_assert_cmpuint (graft_test_op_calls (rt, "onnx::BatchNormalization", NULL, NULL), ==, 0);
      /* the weights are summed before the products: rounded otherwise than the reference's sums */
      float_graph_assert_outputs_close (what, fast, reference, 1e-5);
      /* and again: the summed weight computed, then packed or kept */
      g_autoptr(GPtrArray) again = graft_test_run_again (rt, inputs);
      float_graph_assert_outputs_close (what, again, reference, 1e-5);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  graft_test_add_checks_at_levels ("/conv-branches", cases, sizeof cases[0], G_N_ELEMENTS (cases), check_case);
  return g_test_run ();
}
