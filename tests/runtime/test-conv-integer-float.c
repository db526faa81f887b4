/* graft::ConvIntegerToFloat (qlinear.c): onnxruntime's quantize_dynamic
 * writes each convolution as ConvInteger → Cast to float → Mul by the
 * scales → Add of the bias → [Add of another branch] → [Relu]; the
 * runtime runs that as one step whose GEMM tiles go through the float
 * operations. The result must be the nodes' own, bit for bit: each case
 * against the same float operations done one by one in C on exact
 * integer sums, at every SIMD level, at one and two threads, twice (the
 * second run reuses the packed filter). Cases: the whole pattern,
 * without the second Add, without any Add or Relu, scales and biases per
 * channel, signed activations with a weight zero point (the int16 form),
 * weights past ±64 (byte forms that need VNNI, else int16), a map of odd
 * size at batch 2 (tiles cut where images meet), channels not a multiple
 * of the tile rows; a second addend computed after the convolution (the
 * plan fuses up to the bias, the Add and Relu run as nodes); and an
 * addend that would broadcast the output to another shape (declined:
 * every node runs). */
#include <math.h>
#include <string.h>
#include "runtime/runtime.h"
#include "op-timings.h"
#include "simd-levels.h"

typedef struct {
  const char *what;
  gint64 n, c, m, h, w, k;
  gboolean signed_x;                /* int8 activations (else uint8) */
  int w_range;                      /* weights in [-w_range, w_range] */
  gint64 w_zero;                    /* the weight zero point, 0: none given */
  gboolean per_channel;             /* scale and bias [M, 1, 1] (else a scalar scale, bias [1, M, 1, 1]) */
  int adds;                         /* 0, 1 (bias) or 2 (bias, then the residual input r) */
  gboolean late_residual;           /* r is a node's output placed after the convolution */
  gboolean relu;
  gboolean broadcast_bias;          /* bias [2, M, 1, 1] against N = 1: declined */
  guint fused_nodes;                /* nodes the fused step stands for; 0: declined */
} Case;

static const Case cases[] = {
  { "whole pattern", 1, 8, 16, 12, 12, 3, FALSE, 60, 0, FALSE, 2, FALSE, TRUE, FALSE, 6 },
  { "bias and relu", 1, 8, 16, 12, 12, 3, FALSE, 60, 0, FALSE, 1, FALSE, TRUE, FALSE, 5 },
  { "no adds, no relu", 1, 8, 16, 12, 12, 3, FALSE, 60, 0, FALSE, 0, FALSE, FALSE, FALSE, 3 },
  { "per channel", 1, 8, 16, 12, 12, 3, FALSE, 60, 0, TRUE, 2, FALSE, TRUE, FALSE, 6 },
  { "signed x, weight zero point", 1, 8, 16, 12, 12, 3, TRUE, 100, 3, FALSE, 2, FALSE, TRUE, FALSE, 6 },
  { "wide weights", 1, 8, 16, 12, 12, 3, FALSE, 127, 0, FALSE, 2, FALSE, TRUE, FALSE, 6 },
  { "odd map, batch 2, 10 channels", 2, 5, 10, 7, 7, 3, FALSE, 60, 0, TRUE, 2, FALSE, TRUE, FALSE, 6 },
  { "1x1, stem-like 3 channels", 2, 3, 24, 9, 11, 1, FALSE, 60, 0, FALSE, 1, FALSE, TRUE, FALSE, 5 },
  { "late residual", 1, 8, 16, 12, 12, 3, FALSE, 60, 0, FALSE, 2, TRUE, TRUE, FALSE, 4 },
  { "bias broadcasts the output", 1, 8, 16, 6, 6, 3, FALSE, 60, 0, FALSE, 1, FALSE, TRUE, TRUE, 0 },
};

static GraftValue *
add_value (GraftGraph *g, const char *name, GraftDType dtype, int rank, const gint64 *dims)
{
  GraftValue *v = graft_graph_ensure_value (g, name);
  v->dtype = dtype;
  graft_shape_init_fixed (&v->shape, rank, dims);
  return v;
}

static void
add_initializer (GraftGraph *g, const char *name, GraftDType dtype, int rank, const gint64 *dims, gconstpointer data,
                 gsize bytes)
{
  GraftValue *v = add_value (g, name, dtype, rank, dims);
  GraftTensor *t = graft_tensor_new (name, dtype, rank, dims);
  g_autoptr(GBytes) b = g_bytes_new (data, bytes);
  g_assert_true (graft_tensor_set_data (t, b, NULL));
  graft_graph_add_initializer (g, v, t);
}

static GraftNode *
add_node (GraftGraph *g, const char *op, const char *name, const char *a, const char *b, const char *out)
{
  GraftNode *node = graft_graph_add_node (g, NULL, op, name);
  graft_node_add_input (node, graft_graph_resolve_value (g, a));
  if (b)
    graft_node_add_input (node, graft_graph_resolve_value (g, b));
  graft_node_add_output (node, graft_graph_ensure_value (g, out));
  return node;
}

typedef struct {
  gint64 oh, ow;
  guint8 *x;                        /* raw bytes, int8 or uint8 */
  gint8 *w;
  float *scale, *bias, *r;
  gint64 n_scale, n_bias;
} Data;

static GraftModel *
build_model (const Case *c, const Data *d)
{
  GraftModel *model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *g = graft_graph_new ("conv-integer-float");
  graft_model_set_opset (model, "onnx", 17);
  GraftDType xt = c->signed_x ? GRAFT_DTYPE_INT8 : GRAFT_DTYPE_UINT8;
  gint64 dx[] = { c->n, c->c, c->h, c->w }, dw[] = { c->m, c->c, c->k, c->k }, none[] = { 0 };
  gint64 dy[] = { c->n, c->m, d->oh, d->ow };
  graft_graph_add_input (g, add_value (g, "x", xt, 4, dx));
  add_initializer (g, "w", GRAFT_DTYPE_INT8, 4, dw, d->w, c->m * c->c * c->k * c->k);
  guint8 x_zero = c->signed_x ? 0xfd /* -3 */ : 131;
  gint8 w_zero = (gint8) c->w_zero;
  add_initializer (g, "x_zero", xt, 0, none, &x_zero, 1);
  if (c->w_zero)
    add_initializer (g, "w_zero", GRAFT_DTYPE_INT8, 0, none, &w_zero, 1);
  GraftNode *conv = graft_graph_add_node (g, NULL, "ConvInteger", "conv");
  graft_node_add_input (conv, graft_graph_resolve_value (g, "x"));
  graft_node_add_input (conv, graft_graph_resolve_value (g, "w"));
  graft_node_add_input (conv, graft_graph_resolve_value (g, "x_zero"));
  if (c->w_zero)
    graft_node_add_input (conv, graft_graph_resolve_value (g, "w_zero"));
  graft_node_add_output (conv, graft_graph_ensure_value (g, "sums"));
  gint64 pad = c->k / 2, pads[] = { pad, pad, pad, pad };
  graft_node_add_attribute (conv, graft_attribute_new_ints ("pads", pads, 4));
  GraftNode *cast = add_node (g, "Cast", "cast", "sums", NULL, "sums_float");
  graft_node_add_attribute (cast, graft_attribute_new_int ("to", 1));
  gint64 channel_dims[] = { c->m, 1, 1 }, bias_dims[] = { c->broadcast_bias ? 2 : 1, c->m, 1, 1 };
  add_initializer (g, "scale", GRAFT_DTYPE_FLOAT32, c->per_channel ? 3 : 0, channel_dims, d->scale,
                   d->n_scale * sizeof (float));
  if (c->per_channel)
    add_initializer (g, "bias", GRAFT_DTYPE_FLOAT32, 3, channel_dims, d->bias, d->n_bias * sizeof (float));
  else
    add_initializer (g, "bias", GRAFT_DTYPE_FLOAT32, 4, bias_dims, d->bias, d->n_bias * sizeof (float));
  const char *last = "scaled";
  add_node (g, "Mul", "mul", "sums_float", "scale", last);
  if (c->adds >= 1)
    {
      add_node (g, "Add", "add_bias", "bias", last, "biased");   /* the chain second: either order fuses */
      last = "biased";
    }
  if (c->adds >= 2)
    {
      graft_graph_add_input (g, add_value (g, "r_in", GRAFT_DTYPE_FLOAT32, 4, dy));
      /* after the convolution in the nodes' order: the plan cannot
       * have it ready when the fused step runs */
      if (c->late_residual)
        add_node (g, "Neg", "late", "r_in", NULL, "r");
      add_node (g, "Add", "add_residual", last, c->late_residual ? "r" : "r_in", "summed");
      last = "summed";
    }
  if (c->relu)
    {
      add_node (g, "Relu", "relu", last, NULL, "y");
      last = "y";
    }
  graft_graph_add_output (g, graft_graph_ensure_value (g, last));
  graft_model_set_graph (model, g);
  return model;
}

/* The nodes' float operations on the exact sums, one at a time. */
static float *
reference (const Case *c, const Data *d)
{
  gint64 pad = c->k / 2, x_zero = c->signed_x ? -3 : 131, total = c->n * c->m * d->oh * d->ow;
  float *y = g_new (float, total);
  for (gint64 i = 0; i < total; i++)
    {
      gint64 ow = i % d->ow, oh = i / d->ow % d->oh, m = i / (d->ow * d->oh) % c->m, n = i / (d->ow * d->oh * c->m);
      gint64 sum = 0;
      for (gint64 ch = 0; ch < c->c; ch++)
        for (gint64 ki = 0; ki < c->k; ki++)
          for (gint64 kj = 0; kj < c->k; kj++)
            {
              gint64 ih = oh + ki - pad, iw = ow + kj - pad;
              if (ih < 0 || ih >= c->h || iw < 0 || iw >= c->w)
                continue;   /* padding is the zero point: contributes 0 */
              guint8 raw = d->x[((n * c->c + ch) * c->h + ih) * c->w + iw];
              gint64 xv = c->signed_x ? (gint8) raw : raw;
              sum += (xv - x_zero) * (d->w[((m * c->c + ch) * c->k + ki) * c->k + kj] - c->w_zero);
            }
      float v = (float) (gint32) sum * d->scale[c->per_channel ? m : 0];
      if (c->adds >= 1)
        v = v + d->bias[m];
      if (c->adds >= 2)
        v = v + (c->late_residual ? -d->r[i] : d->r[i]);
      if (c->relu)
        v = v > 0 ? v : 0;
      y[i] = v;
    }
  return y;
}

static void
check_case (gconstpointer item, GraftSimdLevel level)
{
  const Case *c = item;
  Data d = { c->h, c->w };   /* pads k / 2, stride 1 */
  gint64 nx = c->n * c->c * c->h * c->w, nw = c->m * c->c * c->k * c->k, ny = c->n * c->m * d.oh * d.ow;
  GRand *rand = g_rand_new_with_seed (17);
  d.x = g_new (guint8, nx);
  d.w = g_new (gint8, nw);
  d.n_scale = c->per_channel ? c->m : 1;
  d.n_bias = c->broadcast_bias ? 2 * c->m : c->m;
  d.scale = g_new (float, d.n_scale);
  d.bias = g_new (float, d.n_bias);
  d.r = g_new (float, ny);
  for (gint64 i = 0; i < nx; i++)
    d.x[i] = (guint8) g_rand_int_range (rand, 0, 256);
  for (gint64 i = 0; i < nw; i++)
    d.w[i] = (gint8) g_rand_int_range (rand, -c->w_range, c->w_range + 1);
  for (gint64 i = 0; i < d.n_scale; i++)
    d.scale[i] = (float) g_rand_double_range (rand, 1e-5, 1e-3);
  for (gint64 i = 0; i < d.n_bias; i++)
    d.bias[i] = (float) g_rand_double_range (rand, -1, 1);
  for (gint64 i = 0; i < ny; i++)
    d.r[i] = (float) g_rand_double_range (rand, -2, 2);
  g_rand_free (rand);
  g_autofree float *want = c->broadcast_bias ? NULL : reference (c, &d);

  g_autoptr(GraftModel) model = build_model (c, &d);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftRuntime) rt = graft_runtime_new (model, &error);
  g_assert_no_error (error);
  graft_runtime_set_profiling (rt, TRUE);
  for (guint threads = 1; threads <= 2; threads++)
    for (int again = 0; again < 2; again++)
      {
        graft_runtime_set_n_threads (rt, threads);
        g_autoptr(GHashTable) inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                              (GDestroyNotify) graft_rt_tensor_unref);
        gint64 dx[] = { c->n, c->c, c->h, c->w }, dy[] = { c->n, c->m, d.oh, d.ow };
        GraftRtTensor *xt = graft_rt_tensor_new (c->signed_x ? GRAFT_DTYPE_INT8 : GRAFT_DTYPE_UINT8, 4, dx, NULL);
        memcpy (xt->data, d.x, nx);
        g_hash_table_insert (inputs, (gpointer) "x", xt);
        if (c->adds >= 2)
          {
            GraftRtTensor *rt_r = graft_rt_tensor_new (GRAFT_DTYPE_FLOAT32, 4, dy, NULL);
            memcpy (rt_r->data, d.r, ny * sizeof (float));
            g_hash_table_insert (inputs, (gpointer) "r_in", rt_r);
          }
        guint fused_before, relu_before = graft_test_op_calls (rt, "onnx::Relu", NULL, NULL);
        const char *fused_op;
        guint before = graft_test_op_calls (rt, "onnx::ConvInteger", &fused_before, NULL);
        g_autoptr(GPtrArray) out = graft_runtime_run (rt, inputs, NULL, NULL, NULL, &error);
        g_assert_no_error (error);
        guint fused_after, calls = graft_test_op_calls (rt, "onnx::ConvInteger", &fused_after, &fused_op) - before;
        guint relu_calls = graft_test_op_calls (rt, "onnx::Relu", NULL, NULL) - relu_before;
        g_assert_cmpuint (calls, ==, 1);
        g_assert_cmpuint (fused_after - fused_before, ==, (c->fused_nodes ? 1 : 0));
        if (c->fused_nodes)
          g_assert_cmpstr (fused_op, ==, "graft::ConvIntegerToFloat");
        /* the Relu runs as its own node where the pattern stops short of it */
        g_assert_cmpuint (relu_calls, ==, (c->relu && (c->fused_nodes == 0 || c->late_residual) ? 1 : 0));
        GraftRtTensor *y = out->pdata[0];
        if (c->broadcast_bias)
          {
            g_assert_cmpint (y->dims[0], ==, 2);   /* the nodes' broadcast */
            continue;
          }
        g_assert_cmpint (y->dtype, ==, GRAFT_DTYPE_FLOAT32);
        g_assert_cmpint (y->numel, ==, ny);
        const float *got = y->data;
        for (gint64 i = 0; i < ny; i++)
          if (memcmp (&got[i], &want[i], sizeof (float)) != 0)
            g_error ("%s at %s, %u threads: y[%" G_GINT64_FORMAT "] = %.9g, want %.9g", c->what,
                     graft_simd_level_to_string (level), threads, i, got[i], want[i]);
        memset (y->data, 0xff, y->nbytes);
      }
  g_free (d.x);
  g_free (d.w);
  g_free (d.scale);
  g_free (d.bias);
  g_free (d.r);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  graft_test_add_checks_at_levels ("/conv-integer-float", cases, sizeof cases[0], G_N_ELEMENTS (cases), check_case);
  return g_test_run ();
}
