/* graft::PointwiseDepthwiseConv (conv-fused.c): a 1×1 Conv → [Relu/Clip]
 * → depthwise Conv → [Relu/Clip], as MobileNet writes its expansion and
 * depthwise layers, run as one banded step. Each case against a direct
 * double-precision loop at every SIMD level (the portable one runs the
 * nodes: the fused kernel declines it), at one and two threads, twice
 * (the second run reuses the packed filter and the band plan kept on the
 * step); the fused step must have run (one Conv timed, not two) wherever
 * the case is one it takes. The cases cover one band and many, bands
 * whose windows overlap (stride 1) or not (stride 2), blocks of channels
 * not a multiple of the filter panel, maps narrower than a vector, odd
 * sizes, maps of 4 KB planes (the expansion reads x's slivers from a
 * copy), asymmetric padding, dilation, 5×5 windows (whose depthwise
 * layer runs on channel blocks, as where maps are small: the plan's
 * blocks from its first or a later one, or the row kernels where a
 * band's block of channels does not start one of them), no biases, no
 * activations, a window whose padding leaves output rows without an
 * input row, and a 1×1 convolution of stride 2 and maps of up to 8
 * pixels (declined: the nodes run); and with the projection and the residual Add that follow in
 * MobileNetV2's blocks: whole bands projected one by one, bands whose
 * shared rows are kept from one to the next, odd maps, stride 2, channel
 * blocks projected afterwards (a 7×7 map at batch 1 and two threads),
 * and a residual that broadcasts (declined); and the same from the
 * depthwise layer on, without an expansion (MobileNetV1's blocks, V2's
 * first), but not a depthwise layer alone. */
#include <math.h>
#include <string.h>
#include "runtime/runtime.h"
#include "float-graph.h"
#include "op-timings.h"
#include "simd-levels.h"

typedef struct {
  const char *what;
  gint64 n, cin, ce, h, w;
  gint64 k, s, d, pt, pl, pb, pr;        /* the depthwise window */
  const char *act1, *act2;               /* NULL, "Relu" or "Clip" (0, 6) */
  gboolean biases;
  gboolean fused;                        /* the fused kernel takes it (at an AVX level) */
  gint64 pointwise_stride;               /* 0: 1 */
  gint64 project;                        /* channels of a 1×1 projection after the depthwise layer, 0: none */
  gboolean residual;                     /* the projection's output + x (broadcast) */
  gboolean no_expansion;                 /* x → depthwise (ce = cin) → …, no 1×1 convolution first */
  const char *act3;                      /* after the projection (and residual): ShuffleNetV2's branches */
} FusedCase;

static const FusedCase cases[] = {
  { "one band, Clip both", 2, 5, 24, 15, 15, 3, 1, 1, 1, 1, 1, 1, "Clip", "Clip", TRUE, TRUE },
  { "MobileNetV2 block 2: stride 2, seven bands", 1, 16, 96, 112, 112, 3, 2, 1, 1, 1, 1, 1, "Clip", "Clip", TRUE, TRUE },
  { "stride 1, overlapping bands, channel blocks", 2, 8, 144, 57, 57, 3, 1, 1, 1, 1, 1, 1, "Relu", NULL, TRUE, TRUE },
  { "5x5 stride 2, asymmetric pads, 20 channels, no biases", 3, 4, 20, 9, 13, 5, 2, 1, 1, 2, 3, 0, NULL, NULL, FALSE,
    TRUE },
  { "5x5 stride 2, 72 channels (MobileNetV3's fourth block)", 2, 24, 72, 16, 16, 5, 2, 1, 2, 2, 2, 2, "Relu", "Relu",
    TRUE, TRUE },
  { "32x32 maps, 4 KB planes (slivers of x copied), stride 2, projection", 2, 16, 64, 32, 32, 3, 2, 1, 1, 1, 1, 1,
    "Relu", "Relu", TRUE, TRUE, 0, 24, FALSE },
  { "16x64 maps, 4 KB planes, stride 1, 44 channels", 1, 12, 44, 16, 64, 3, 1, 1, 1, 1, 1, 1, "Clip", "Clip", TRUE,
    TRUE },
  { "dilation 2, odd map", 1, 6, 40, 21, 11, 3, 1, 2, 2, 2, 2, 2, "Clip", "Relu", TRUE, TRUE },
  { "7x7 map, blocks split for the threads", 1, 32, 200, 7, 7, 3, 1, 1, 1, 1, 1, 1, "Clip", "Clip", TRUE, TRUE },
  { "1x1 map: left to the nodes (up to 8 pixels)", 2, 12, 16, 1, 1, 3, 1, 1, 1, 1, 1, 1, "Relu", "Relu", TRUE, FALSE },
  { "padding beyond the window's reach: rows of bias alone", 1, 3, 8, 2, 6, 3, 1, 1, 3, 1, 3, 1, "Relu", NULL, TRUE,
    TRUE },
  { "1x1 convolution of stride 2: declined", 2, 6, 16, 10, 10, 3, 1, 1, 1, 1, 1, 1, "Clip", "Clip", TRUE, FALSE, 2 },
  /* with the projection (and the residual): whole bands, projected band by band */
  { "projection and residual, 28x28", 2, 16, 96, 28, 28, 3, 1, 1, 1, 1, 1, 1, "Clip", "Clip", TRUE, TRUE, 0, 16, TRUE },
  { "projection, stride 2, odd map", 1, 8, 48, 33, 33, 3, 2, 1, 1, 1, 1, 1, "Clip", "Clip", TRUE, TRUE, 0, 12, FALSE },
  { "projection, eleven bands kept from one to the next", 1, 8, 96, 112, 112, 3, 1, 1, 1, 1, 1, 1, "Relu", "Relu",
    TRUE, TRUE, 0, 24, FALSE },
  { "5x5, projection, four bands of channel blocks", 1, 8, 44, 40, 20, 5, 1, 1, 2, 2, 2, 2, "Relu", "Relu", TRUE, TRUE,
    0, 16, FALSE },
  { "projection and residual, 7x7 at batch 1: channel blocks, then the projection", 1, 24, 144, 7, 7, 3, 1, 1, 1, 1, 1,
    1, "Clip", "Clip", FALSE, TRUE, 0, 24, TRUE },
  { "2x4 map, projection and residual: left to the nodes", 2, 16, 96, 2, 4, 3, 1, 1, 1, 1, 1, 1, "Clip", "Clip", TRUE,
    FALSE, 0, 16, TRUE },
  { "3x3 map, projection: fused", 2, 16, 96, 3, 3, 3, 1, 1, 1, 1, 1, 1, "Relu", "Relu", TRUE, TRUE, 0, 24, FALSE },
  { "residual broadcast from one channel: declined", 2, 1, 16, 9, 9, 3, 1, 1, 1, 1, 1, 1, "Clip", NULL, TRUE, FALSE, 0,
    8, TRUE },
  /* without the expansion: depthwise, then the projection */
  { "no expansion (MobileNetV2's first block)", 2, 32, 32, 56, 56, 3, 1, 1, 1, 1, 1, 1, NULL, "Clip", TRUE, TRUE, 0, 16,
    FALSE, TRUE },
  { "no expansion, stride 2, odd map", 1, 24, 24, 27, 31, 3, 2, 1, 1, 1, 1, 1, NULL, "Relu", FALSE, TRUE, 0, 40, FALSE,
    TRUE },
  { "no expansion, residual, 7x7 at batch 1: channel blocks", 1, 64, 64, 7, 7, 3, 1, 1, 1, 1, 1, 1, NULL, "Clip", TRUE,
    TRUE, 0, 64, TRUE, TRUE },
  { "a depthwise convolution alone: not fused", 2, 8, 8, 12, 12, 3, 1, 1, 1, 1, 1, 1, NULL, "Clip", TRUE, FALSE, 0, 0,
    FALSE, TRUE },
  /* an activation after the projection, outside the pattern: it must still run */
  { "projection, then Relu (ShuffleNetV2's branch)", 2, 24, 24, 8, 8, 3, 1, 1, 1, 1, 1, 1, "Relu", NULL, TRUE, TRUE, 0,
    24, FALSE, FALSE, "Relu" },
  { "no expansion, stride 2, projection, then Relu", 2, 24, 24, 16, 16, 3, 2, 1, 1, 1, 1, 1, NULL, NULL, TRUE, TRUE, 0,
    24, FALSE, TRUE, "Relu" },
  { "projection and residual, then Clip", 1, 16, 64, 14, 14, 3, 1, 1, 1, 1, 1, 1, "Clip", "Clip", TRUE, TRUE, 0, 16,
    TRUE, FALSE, "Clip" },
};

static gint64
out_size (gint64 in, gint64 k, gint64 s, gint64 d, gint64 pb, gint64 pe)
{
  return (in + pb + pe - (k - 1) * d - 1) / s + 1;
}

static void
add_activation (GraftGraph *g, const char *op, const char *input, const char *output)
{
  GraftNode *act = graft_graph_add_node (g, NULL, op, op);
  graft_node_add_input (act, graft_graph_resolve_value (g, input));
  if (strcmp (op, "Clip") == 0)
    {
      graft_node_add_input (act, graft_graph_resolve_value (g, "lo"));
      graft_node_add_input (act, graft_graph_resolve_value (g, "hi"));
    }
  graft_node_add_output (act, graft_graph_ensure_value (g, output));
}

static GraftNode *
add_conv (GraftGraph *g, const char *x, const char *w, const char *b, const char *y, gint64 group)
{
  GraftNode *conv = graft_graph_add_node (g, NULL, "Conv", "Conv");
  graft_node_add_input (conv, graft_graph_resolve_value (g, x));
  graft_node_add_input (conv, graft_graph_resolve_value (g, w));
  if (b)
    graft_node_add_input (conv, graft_graph_resolve_value (g, b));
  graft_node_add_output (conv, graft_graph_ensure_value (g, y));
  graft_node_add_attribute (conv, graft_attribute_new_int ("group", group));
  return conv;
}

static GraftModel *
build_model (const FusedCase *c, const float *w1, const float *b1, const float *w2, const float *b2, const float *w3,
             const float *b3)
{
  GraftModel *model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *g = graft_graph_new ("pointwise-depthwise");
  graft_model_set_opset (model, "onnx", 17);
  gint64 dx[] = { c->n, c->cin, c->h, c->w }, dw1[] = { c->ce, c->cin, 1, 1 }, dw2[] = { c->ce, 1, c->k, c->k };
  gint64 db[] = { c->ce }, none[] = { 0 };
  float lo = 0, hi = 6;
  float_graph_add_input (g, "x", 4, dx);
  float_graph_add_initializer (g, "w1", 4, dw1, w1);
  float_graph_add_initializer (g, "w2", 4, dw2, w2);
  float_graph_add_initializer (g, "lo", 0, none, &lo);
  float_graph_add_initializer (g, "hi", 0, none, &hi);
  if (c->biases)
    {
      float_graph_add_initializer (g, "b1", 1, db, b1);
      float_graph_add_initializer (g, "b2", 1, db, b2);
    }
  GraftNode *pw = c->no_expansion ? NULL : add_conv (g, "x", "w1", c->biases ? "b1" : NULL, c->act1 ? "e0" : "e", 1);
  if (pw && c->pointwise_stride)
    {
      gint64 pw_strides[] = { c->pointwise_stride, c->pointwise_stride };
      graft_node_add_attribute (pw, graft_attribute_new_ints ("strides", pw_strides, 2));
    }
  if (pw && c->act1)
    add_activation (g, c->act1, "e0", "e");
  GraftNode *dw = add_conv (g, pw ? "e" : "x", "w2", c->biases ? "b2" : NULL, c->act2 ? "y0" : c->project ? "d" : "y", c->ce);
  gint64 strides[] = { c->s, c->s }, dil[] = { c->d, c->d }, pads[] = { c->pt, c->pl, c->pb, c->pr };
  graft_node_add_attribute (dw, graft_attribute_new_ints ("strides", strides, 2));
  graft_node_add_attribute (dw, graft_attribute_new_ints ("dilations", dil, 2));
  graft_node_add_attribute (dw, graft_attribute_new_ints ("pads", pads, 4));
  const char *after_depthwise = c->project ? "d" : "y";
  if (c->act2)
    add_activation (g, c->act2, "y0", after_depthwise);
  if (c->project)
    {
      gint64 dw3[] = { c->project, c->ce, 1, 1 }, db3[] = { c->project };
      float_graph_add_initializer (g, "w3", 4, dw3, w3);
      if (c->biases)
        float_graph_add_initializer (g, "b3", 1, db3, b3);
      const char *projected = c->act3 ? "q" : "y";
      add_conv (g, "d", "w3", c->biases ? "b3" : NULL, c->residual ? "p" : projected, 1);
      if (c->residual)
        {
          GraftNode *add = graft_graph_add_node (g, NULL, "Add", "Add");
          graft_node_add_input (add, graft_graph_resolve_value (g, "p"));
          graft_node_add_input (add, graft_graph_resolve_value (g, "x"));
          graft_node_add_output (add, graft_graph_ensure_value (g, projected));
        }
      if (c->act3)
        add_activation (g, c->act3, "q", "y");
    }
  graft_graph_add_output (g, graft_graph_ensure_value (g, "y"));
  graft_model_set_graph (model, g);
  return model;
}

static double
activate (const char *act, double v)
{
  if (act)
    v = MAX (v, 0);
  if (act && strcmp (act, "Clip") == 0)
    v = MIN (v, 6);
  return v;
}

/* y [N, Ce or project, OH, OW] of the case in double precision */
static double *
reference (const FusedCase *c, const float *x, const float *w1, const float *b1, const float *w2, const float *b2,
           const float *w3, const float *b3, gint64 OH, gint64 OW)
{
  gint64 ps = MAX (c->pointwise_stride, 1), H = (c->h - 1) / ps + 1, W = (c->w - 1) / ps + 1;
  g_autofree double *e = g_new (double, c->n * c->ce * H * W);
  for (gint64 n = 0; n < c->n; n++)
    for (gint64 m = 0; m < c->ce; m++)
      for (gint64 i = 0; i < H; i++)
        for (gint64 j = 0; j < W; j++)
          {
            double acc = c->biases ? b1[m] : 0;
            for (gint64 k = 0; k < c->cin; k++)
              acc += (double) w1[m * c->cin + k] * x[((n * c->cin + k) * c->h + i * ps) * c->w + j * ps];
            e[((n * c->ce + m) * H + i) * W + j] =
              c->no_expansion ? x[((n * c->cin + m) * c->h + i) * c->w + j] : activate (c->act1, acc);
          }
  double *y = g_new (double, c->n * c->ce * OH * OW);
  for (gint64 n = 0; n < c->n; n++)
    for (gint64 m = 0; m < c->ce; m++)
      for (gint64 oh = 0; oh < OH; oh++)
        for (gint64 ow = 0; ow < OW; ow++)
          {
            double acc = c->biases ? b2[m] : 0;
            for (gint64 ki = 0; ki < c->k; ki++)
              for (gint64 kj = 0; kj < c->k; kj++)
                {
                  gint64 ih = oh * c->s + ki * c->d - c->pt, iw = ow * c->s + kj * c->d - c->pl;
                  if (ih >= 0 && ih < H && iw >= 0 && iw < W)
                    acc += (double) w2[(m * c->k + ki) * c->k + kj] * e[((n * c->ce + m) * H + ih) * W + iw];
                }
            y[((n * c->ce + m) * OH + oh) * OW + ow] = activate (c->act2, acc);
          }
  if (c->project == 0)
    return y;
  g_autofree double *d = y;
  double *p = g_new (double, c->n * c->project * OH * OW);
  for (gint64 n = 0; n < c->n; n++)
    for (gint64 m = 0; m < c->project; m++)
      for (gint64 i = 0; i < OH * OW; i++)
        {
          double acc = c->biases ? b3[m] : 0;
          for (gint64 k = 0; k < c->ce; k++)
            acc += (double) w3[m * c->ce + k] * d[(n * c->ce + k) * OH * OW + i];
          /* x broadcast over the channels when it has one */
          if (c->residual)
            acc += x[(n * c->cin + (c->cin == 1 ? 0 : m)) * OH * OW + i];
          p[(n * c->project + m) * OH * OW + i] = activate (c->act3, acc);
        }
  return p;
}

/* Conv steps timed so far; *fused: how many of them ran the fused operator */
static guint
conv_calls (GraftRuntime *rt, guint *fused)
{
  const char *fused_op;
  guint calls = graft_test_op_calls (rt, "onnx::Conv", fused, &fused_op);
  if (*fused)
    g_assert_cmpstr (fused_op, ==, "graft::PointwiseDepthwiseConv");
  return calls;
}

static void
check_case (gconstpointer item, GraftSimdLevel level)
{
  const FusedCase *c = item;
  gint64 nx = c->n * c->cin * c->h * c->w;
  g_autofree float *x = g_new (float, nx);
  g_autofree float *w1 = g_new (float, c->ce * c->cin);
  g_autofree float *w2 = g_new (float, c->ce * c->k * c->k);
  g_autofree float *b1 = g_new (float, c->ce);
  g_autofree float *b2 = g_new (float, c->ce);
  gint64 M = c->project ? c->project : c->ce;
  g_autofree float *w3 = g_new (float, M * c->ce);
  g_autofree float *b3 = g_new (float, M);
  for (gint64 i = 0; i < M * c->ce; i++)
    w3[i] = float_graph_value_at (i, 13) / sqrtf ((float) c->ce);
  for (gint64 i = 0; i < M; i++)
    b3[i] = float_graph_value_at (i, 17);
  for (gint64 i = 0; i < nx; i++)
    x[i] = float_graph_value_at (i, 1);
  for (gint64 i = 0; i < c->ce * c->cin; i++)
    w1[i] = float_graph_value_at (i, 7) * 3 / sqrtf ((float) c->cin);
  for (gint64 i = 0; i < c->ce * c->k * c->k; i++)
    w2[i] = float_graph_value_at (i, 11) / c->k;
  for (gint64 i = 0; i < c->ce; i++)
    {
      b1[i] = float_graph_value_at (i, 3);
      b2[i] = float_graph_value_at (i, 5);
    }
  gint64 ps = MAX (c->pointwise_stride, 1);
  gint64 OH = out_size ((c->h - 1) / ps + 1, c->k, c->s, c->d, c->pt, c->pb);
  gint64 OW = out_size ((c->w - 1) / ps + 1, c->k, c->s, c->d, c->pl, c->pr);
  g_autofree double *want = reference (c, x, w1, b1, w2, b2, w3, b3, OH, OW);
  g_autoptr(GraftModel) model = build_model (c, w1, b1, w2, b2, w3, b3);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftRuntime) rt = graft_runtime_new (model, &error);
  g_assert_no_error (error);
  graft_runtime_set_profiling (rt, TRUE);
  guint runs = 0;
  for (guint threads = 1; threads <= 2; threads++)
    for (int again = 0; again < 2; again++, runs++)
      {
        graft_runtime_set_n_threads (rt, threads);
        gint64 dx[] = { c->n, c->cin, c->h, c->w };
        g_autoptr(GHashTable) inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                              (GDestroyNotify) graft_rt_tensor_unref);
        GraftRtTensor *xt = graft_rt_tensor_new (GRAFT_DTYPE_FLOAT32, 4, dx, NULL);
        memcpy (xt->data, x, xt->nbytes);
        g_hash_table_insert (inputs, (gpointer) "x", xt);
        guint fused_before, fused_after;
        guint before = conv_calls (rt, &fused_before);
        g_autoptr(GPtrArray) out = graft_runtime_run (rt, inputs, NULL, NULL, NULL, &error);
        g_assert_no_error (error);
        guint calls = conv_calls (rt, &fused_after) - before;
        g_test_message ("%s at %s, %u threads: %u Conv steps ran", c->what, graft_simd_level_to_string (level), threads,
                        calls);
        gboolean takes = c->fused && level >= GRAFT_SIMD_AVX2;
        guint convs = (c->no_expansion ? 0 : 1) + 1 + (c->project ? 1 : 0);
        g_assert_cmpuint (calls, ==, (takes ? 1 : convs));
        g_assert_cmpuint (fused_after - fused_before, ==, (takes ? 1 : 0));
        GraftRtTensor *y = out->pdata[0];
        g_assert_cmpint (y->rank, ==, 4);
        g_assert_cmpint (y->dims[0], ==, c->n);
        g_assert_cmpint (y->dims[1], ==, M);
        g_assert_cmpint (y->dims[2], ==, OH);
        g_assert_cmpint (y->dims[3], ==, OW);
        const float *got = y->data;
        for (gint64 i = 0; i < y->numel; i++)
          if (fabs (got[i] - want[i]) > 1e-4 * MAX (1, fabs (want[i])))
            g_error ("%s at %s, %u threads: y[%" G_GINT64_FORMAT "] = %g, want %g", c->what,
                     graft_simd_level_to_string (level), threads, i, got[i], want[i]);
        /* the buffer may be the next run's output: NaN in it, so that a
         * value the next run leaves unwritten cannot pass */
        memset (y->data, 0xff, y->nbytes);
      }
  g_assert_cmpuint (runs, ==, 4);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  graft_test_add_checks_at_levels ("/conv-fused", cases, sizeof cases[0], G_N_ELEMENTS (cases), check_case);
  return g_test_run ();
}
