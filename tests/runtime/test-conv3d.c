/* 3-D convolutions (conv-3d.c: the depth taps as channels of one 2-D
 * convolution of N·OD images) against a direct double-precision loop, at
 * every SIMD level (the 2-D kernels each level picks: Winograd, the
 * packed GEMM, the small-map and pointwise kernels, depthwise; the
 * portable im2col + BLAS), with one and two threads, and each run twice
 * (the second on the filters kept on the step): odd depths, strides 2 on
 * every axis or some, padding wider than the depth, asymmetric pads,
 * dilation, groups and depthwise, 1×1×1 windows read in place or
 * strided, k_d = 1 and temporal-only (k×1×1) windows, depths whose taps
 * read only padding (maps of depth 1: trimmed to a 2-D convolution, and
 * deeper ones where some taps stay and others read zeros), an axis that
 * no tap ever reads (the output is the bias), a fused residual Add before
 * a fused Relu or Clip, deep filters split into K blocks. */
#include <math.h>
#include <string.h>
#include "runtime/runtime.h"
#include "float-graph.h"
#include "simd-levels.h"

typedef struct {
  gint64 n, c, m, group;
  gint64 in[3], k[3], s[3], dil[3], pb[3], pe[3];
  const char *activation;   /* NULL, "Relu" or "Clip" (0, 6) */
  gboolean residual;        /* y = activation (conv + r), r a second input: fused into the convolution */
} Conv3dCase;

#define ONES { 1, 1, 1 }
#define ZEROS { 0, 0, 0 }

static const Conv3dCase cases[] = {
  /* r3d_18's layers at small sizes */
  { 2, 16, 24, 1, { 4, 10, 10 }, { 3, 3, 3 }, ONES, ONES, ONES, ONES, "Relu", TRUE },    /* 3×3 planes: Winograd at the AVX levels */
  { 2, 3, 16, 1, { 4, 20, 20 }, { 3, 7, 7 }, { 1, 2, 2 }, ONES, { 1, 3, 3 }, { 1, 3, 3 }, "Relu" },  /* stem */
  { 2, 8, 12, 1, { 5, 9, 9 }, { 3, 3, 3 }, { 2, 2, 2 }, ONES, ONES, ONES, NULL },        /* stride 2, odd depth */
  { 2, 8, 16, 1, { 4, 6, 6 }, ONES, { 2, 2, 2 }, ONES, ZEROS, ZEROS, NULL, TRUE },      /* 1×1×1 downsample */
  { 2, 16, 16, 1, { 1, 4, 4 }, { 3, 3, 3 }, ONES, ONES, ONES, ONES, "Relu", TRUE },      /* depth 1: the centre taps, small maps */
  { 2, 32, 40, 1, { 1, 2, 2 }, { 3, 3, 3 }, ONES, ONES, ONES, ONES, "Clip" },            /* depth 1, 2×2 maps */
  { 2, 16, 16, 1, { 1, 8, 8 }, { 3, 3, 3 }, ONES, ONES, ONES, ONES, "Relu", TRUE },      /* depth 1, 8×8 maps: Winograd of the centre taps */
  { 2, 20, 24, 1, { 1, 1, 1 }, { 3, 3, 3 }, ONES, ONES, ONES, ONES, "Relu", TRUE },      /* 1×1×1 maps: one tap, pointwise */
  /* taps that read only padding on some axis */
  { 2, 8, 10, 1, { 2, 6, 6 }, { 3, 3, 3 }, ONES, { 3, 1, 1 }, { 3, 1, 1 }, { 3, 1, 1 }, "Clip", TRUE },  /* one depth tap reads */
  { 1, 6, 9, 1, { 2, 5, 7 }, { 5, 3, 3 }, ONES, ONES, { 2, 1, 1 }, { 2, 1, 1 }, NULL },  /* three depth taps kept, zeros among them */
  { 2, 5, 6, 1, { 1, 4, 5 }, { 1, 3, 3 }, { 2, 1, 1 }, ONES, { 1, 1, 1 }, { 1, 1, 1 }, "Relu" }, /* no depth tap ever reads: the bias */
  /* 1×1×1 windows */
  { 2, 12, 20, 1, { 3, 5, 6 }, ONES, ONES, ONES, ZEROS, ZEROS, "Relu", TRUE },          /* read in place as [C, D·H, W] */
  { 1, 7, 9, 1, { 5, 7, 3 }, ONES, { 2, 3, 1 }, ONES, ZEROS, ZEROS, NULL },              /* strides 2 and 3 */
  { 1, 5, 6, 1, { 3, 3, 4 }, ONES, ONES, ONES, { 1, 0, 1 }, { 0, 1, 1 }, NULL },         /* padded: gathered */
  /* one axis of taps */
  { 2, 8, 8, 1, { 3, 9, 9 }, { 1, 3, 3 }, ONES, ONES, { 0, 1, 1 }, { 0, 1, 1 }, "Relu", TRUE },  /* k_d = 1, (2+1)D's spatial */
  { 2, 8, 8, 1, { 5, 6, 6 }, { 3, 1, 1 }, ONES, ONES, { 1, 0, 0 }, { 1, 0, 0 }, NULL },  /* temporal only */
  /* edge shapes */
  { 1, 5, 7, 1, { 6, 8, 7 }, { 2, 3, 2 }, { 2, 1, 2 }, { 2, 1, 1 }, { 1, 0, 1 }, { 0, 2, 0 }, "Clip" }, /* asymmetric pads, dilation */
  { 3, 4, 5, 1, { 7, 5, 11 }, { 3, 2, 3 }, { 1, 2, 1 }, { 1, 2, 1 }, { 2, 1, 0 }, { 2, 0, 3 }, NULL }, /* batch 3, odd sizes */
  { 2, 8, 12, 2, { 3, 5, 5 }, { 3, 3, 3 }, ONES, ONES, ONES, ONES, NULL, TRUE },         /* groups */
  { 2, 6, 6, 6, { 4, 7, 7 }, { 3, 3, 3 }, ONES, ONES, ONES, ONES, "Relu" },              /* depthwise */
  { 1, 6, 6, 6, { 1, 7, 9 }, { 3, 3, 3 }, ONES, ONES, ONES, ONES, "Clip", TRUE },        /* depthwise, depth 1: trimmed to 3×3 */
  { 1, 64, 16, 1, { 3, 17, 17 }, { 3, 3, 3 }, { 1, 2, 2 }, ONES, ONES, ONES, "Relu" },   /* K = 1728: two K blocks */
  { 2, 32, 20, 1, { 3, 8, 8 }, { 3, 3, 3 }, ONES, ONES, ONES, ONES, NULL, TRUE },        /* Winograd over 6 slices, residual */
  { 1, 3, 4, 1, { 2, 2, 3 }, { 3, 3, 3 }, ONES, ONES, { 2, 2, 2 }, { 2, 2, 2 }, NULL },  /* padding wider than the input */
  /* planes of more than 16 MB: the 2-D convolution in calls of fewer images */
  { 2, 64, 8, 1, { 5, 48, 48 }, { 3, 3, 3 }, ONES, ONES, ONES, ONES, "Relu", TRUE },     /* two calls of 5 slices */
  { 3, 256, 4, 1, { 3, 48, 48 }, { 3, 3, 3 }, ONES, ONES, { 0, 1, 1 }, { 0, 1, 1 }, NULL, TRUE }, /* OD = 1: image by image */
};

static gint64
out_size (const Conv3dCase *c, int d)
{
  return (c->in[d] + c->pb[d] + c->pe[d] - (c->k[d] - 1) * c->dil[d] - 1) / c->s[d] + 1;
}

static GraftModel *
build_model (const Conv3dCase *c, const float *wv, const float *bv)
{
  GraftModel *model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *g = graft_graph_new ("conv3d");
  graft_model_set_opset (model, "onnx", 17);
  gint64 dx[] = { c->n, c->c, c->in[0], c->in[1], c->in[2] };
  gint64 dw[] = { c->m, c->c / c->group, c->k[0], c->k[1], c->k[2] }, db[] = { c->m };
  gint64 pads[] = { c->pb[0], c->pb[1], c->pb[2], c->pe[0], c->pe[1], c->pe[2] };
  const char *conv_out = float_graph_conv_output (c->residual, c->activation);
  float_graph_add_input (g, "x", 5, dx);
  if (c->residual)
    {
      gint64 dr[] = { c->n, c->m, out_size (c, 0), out_size (c, 1), out_size (c, 2) };
      float_graph_add_input (g, "r", 5, dr);
    }
  float_graph_add_initializer (g, "w", 5, dw, wv);
  float_graph_add_initializer (g, "b", 1, db, bv);
  GraftNode *conv = float_graph_add_node (g, "Conv", "x", "w", "b", conv_out);
  graft_node_add_attribute (conv, graft_attribute_new_ints ("strides", c->s, 3));
  graft_node_add_attribute (conv, graft_attribute_new_ints ("dilations", c->dil, 3));
  graft_node_add_attribute (conv, graft_attribute_new_ints ("pads", pads, 6));
  graft_node_add_attribute (conv, graft_attribute_new_int ("group", c->group));
  float_graph_add_conv_epilogue (g, c->residual, c->activation);
  graft_model_set_graph (model, g);
  return model;
}

/* y [n, m, o[0], o[1], o[2]] in double precision. */
static double
reference (const Conv3dCase *c, const float *xv, const float *wv, const float *bv, double residual, gint64 n,
           gint64 m, const gint64 *o)
{
  gint64 Cg = c->c / c->group, g = m / (c->m / c->group);
  double acc = bv[m];
  for (gint64 ci = 0; ci < Cg; ci++)
    for (gint64 a = 0; a < c->k[0]; a++)
      for (gint64 b = 0; b < c->k[1]; b++)
        for (gint64 e = 0; e < c->k[2]; e++)
          {
            gint64 i0 = o[0] * c->s[0] + a * c->dil[0] - c->pb[0];
            gint64 i1 = o[1] * c->s[1] + b * c->dil[1] - c->pb[1];
            gint64 i2 = o[2] * c->s[2] + e * c->dil[2] - c->pb[2];
            if (i0 < 0 || i0 >= c->in[0] || i1 < 0 || i1 >= c->in[1] || i2 < 0 || i2 >= c->in[2])
              continue;
            acc += (double) xv[(((n * c->c + g * Cg + ci) * c->in[0] + i0) * c->in[1] + i1) * c->in[2] + i2] *
                   wv[(((m * Cg + ci) * c->k[0] + a) * c->k[1] + b) * c->k[2] + e];
          }
  return float_graph_activate (acc + residual, c->activation);
}

static void
check_case (gconstpointer item, GraftSimdLevel level)
{
  const Conv3dCase *c = item;
  gint64 Cg = c->c / c->group, nx = c->n * c->c * c->in[0] * c->in[1] * c->in[2];
  gint64 nw = c->m * Cg * c->k[0] * c->k[1] * c->k[2];
  gint64 out[3] = { out_size (c, 0), out_size (c, 1), out_size (c, 2) }, ny = c->n * c->m * out[0] * out[1] * out[2];
  g_autofree float *xv = g_new (float, nx);
  g_autofree float *wv = g_new (float, nw);
  g_autofree float *bv = g_new (float, c->m);
  for (gint64 i = 0; i < nx; i++)
    xv[i] = float_graph_value_at (i, 1);
  for (gint64 i = 0; i < nw; i++)
    wv[i] = float_graph_value_at (i, 7) / sqrtf ((float) (Cg * c->k[0] * c->k[1] * c->k[2]));
  for (gint64 i = 0; i < c->m; i++)
    bv[i] = float_graph_value_at (i, 3);
  g_autofree double *want = g_new (double, ny);
  gint64 at = 0, o[3];
  for (gint64 n = 0; n < c->n; n++)
    for (gint64 m = 0; m < c->m; m++)
      for (o[0] = 0; o[0] < out[0]; o[0]++)
        for (o[1] = 0; o[1] < out[1]; o[1]++)
          for (o[2] = 0; o[2] < out[2]; o[2]++, at++)
            want[at] = reference (c, xv, wv, bv, c->residual ? float_graph_value_at (at, 5) : 0, n, m, o);
  g_autoptr(GraftModel) model = build_model (c, wv, bv);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftRuntime) rt = graft_runtime_new (model, &error);
  g_assert_no_error (error);

  for (guint threads = 1; threads <= 2; threads++)
    for (int again = 0; again < 2; again++)   /* the second run on the filters kept on the step */
      {
        graft_runtime_set_n_threads (rt, threads);
        g_autoptr(GHashTable) inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                              (GDestroyNotify) graft_rt_tensor_unref);
        gint64 dx[] = { c->n, c->c, c->in[0], c->in[1], c->in[2] };
        GraftRtTensor *x = graft_rt_tensor_new (GRAFT_DTYPE_FLOAT32, 5, dx, NULL);
        memcpy (x->data, xv, x->nbytes);
        g_hash_table_insert (inputs, (gpointer) "x", x);
        if (c->residual)
          {
            gint64 dr[] = { c->n, c->m, out[0], out[1], out[2] };
            GraftRtTensor *r = graft_rt_tensor_new (GRAFT_DTYPE_FLOAT32, 5, dr, NULL);
            for (gint64 i = 0; i < ny; i++)
              ((float *) r->data)[i] = float_graph_value_at (i, 5);
            g_hash_table_insert (inputs, (gpointer) "r", r);
          }
        g_autoptr(GPtrArray) outputs = graft_runtime_run (rt, inputs, NULL, NULL, NULL, &error);
        g_assert_no_error (error);
        GraftRtTensor *y = outputs->pdata[0];
        g_assert_cmpint (y->rank, ==, 5);
        g_assert_cmpint (y->dims[1], ==, c->m);
        for (int d = 0; d < 3; d++)
          g_assert_cmpint (y->dims[d + 2], ==, out[d]);
        const float *yv = y->data;
        for (gint64 i = 0; i < ny; i++)
          if (fabs (yv[i] - want[i]) > 1e-4 * MAX (1, fabs (want[i])))
            g_error ("%s, %u threads, run %d: y[%" G_GINT64_FORMAT "] (flat) = %g, want %g",
                     graft_simd_level_to_string (level), threads, again, i, yv[i], want[i]);
        /* NaN in y's buffer, which the runtime's pool may hand to the
         * next run: a value it leaves unwritten cannot pass */
        memset (y->data, 0xff, y->nbytes);
      }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  graft_test_add_checks_at_levels ("/conv3d", cases, sizeof cases[0], G_N_ELEMENTS (cases), check_case);
  return g_test_run ();
}
