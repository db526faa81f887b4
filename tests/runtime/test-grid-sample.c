/* GridSample's float32 path (sample.c: each point's taps found once per
 * image, summed for every channel) against its general path, which
 * computes in double: the same model run on a float64 copy of the
 * inputs, at one and two threads. Cases: bilinear and nearest, zeros and
 * border padding, align_corners on and off, grid points past the edges
 * (partly and wholly in the padding), one channel and many images
 * (RAFT's correlation lookups), a 1×1 map, and bicubic and reflection,
 * which the general path keeps. */
#include <math.h>
#include <string.h>
#include "runtime/runtime.h"

typedef struct {
  const char *what;
  gint64 n, c, h, w, oh, ow;
  const char *mode, *padding;
  gboolean align;
} GridCase;

static const GridCase cases[] = {
  { "bilinear, zeros", 2, 3, 7, 9, 5, 6, "linear", "zeros", FALSE },
  { "bilinear, zeros, align_corners (RAFT)", 18, 1, 8, 8, 9, 9, "linear", "zeros", TRUE },
  { "bilinear, border", 1, 4, 5, 11, 7, 3, "linear", "border", FALSE },
  { "bilinear, border, align_corners", 2, 2, 6, 6, 4, 4, "linear", "border", TRUE },
  { "nearest, zeros", 2, 3, 9, 7, 6, 5, "nearest", "zeros", FALSE },
  { "nearest, border, align_corners", 1, 2, 4, 5, 8, 8, "nearest", "border", TRUE },
  { "1x1 map", 2, 2, 1, 1, 3, 3, "linear", "zeros", FALSE },
  { "bicubic (general path)", 1, 2, 6, 7, 4, 5, "cubic", "zeros", FALSE },
  { "reflection (general path)", 1, 2, 6, 7, 4, 5, "linear", "reflection", TRUE },
};

static GraftModel *
build_model (const GridCase *c, GraftDType dtype)
{
  GraftModel *model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *g = graft_graph_new ("grid-sample");
  graft_model_set_opset (model, "onnx", 20);
  gint64 dx[] = { c->n, c->c, c->h, c->w }, dg[] = { c->n, c->oh, c->ow, 2 };
  GraftNode *node = graft_graph_add_node (g, NULL, "GridSample", "GridSample");
  const char *names[] = { "x", "grid" };
  const gint64 *dims[] = { dx, dg };
  for (int i = 0; i < 2; i++)
    {
      GraftValue *v = graft_graph_ensure_value (g, names[i]);
      v->dtype = dtype;
      graft_shape_init_fixed (&v->shape, 4, dims[i]);
      graft_graph_add_input (g, v);
      graft_node_add_input (node, v);
    }
  graft_node_add_output (node, graft_graph_ensure_value (g, "y"));
  graft_node_add_attribute (node, graft_attribute_new_string ("mode", c->mode));
  graft_node_add_attribute (node, graft_attribute_new_string ("padding_mode", c->padding));
  graft_node_add_attribute (node, graft_attribute_new_int ("align_corners", c->align));
  graft_graph_add_output (g, graft_graph_ensure_value (g, "y"));
  graft_model_set_graph (model, g);
  return model;
}

static GraftRtTensor *
run_once (const GridCase *c, GraftDType dtype, const float *x, const float *grid, guint threads)
{
  g_autoptr(GraftModel) model = build_model (c, dtype);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftRuntime) rt = graft_runtime_new (model, &error);
  g_assert_no_error (error);
  graft_runtime_set_n_threads (rt, threads);
  g_autoptr(GHashTable) inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                        (GDestroyNotify) graft_rt_tensor_unref);
  gint64 dx[] = { c->n, c->c, c->h, c->w }, dg[] = { c->n, c->oh, c->ow, 2 };
  GraftRtTensor *xt = graft_rt_tensor_new (dtype, 4, dx, NULL), *gt = graft_rt_tensor_new (dtype, 4, dg, NULL);
  for (gint64 i = 0; i < xt->numel; i++)
    graft_rt_tensor_set_f64 (xt, i, x[i]);
  for (gint64 i = 0; i < gt->numel; i++)
    graft_rt_tensor_set_f64 (gt, i, grid[i]);
  g_hash_table_insert (inputs, (gpointer) "x", xt);
  g_hash_table_insert (inputs, (gpointer) "grid", gt);
  g_autoptr(GPtrArray) out = graft_runtime_run (rt, inputs, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  return graft_rt_tensor_ref (out->pdata[0]);
}

static void
test_case (gconstpointer data)
{
  const GridCase *c = data;
  gint64 nx = c->n * c->c * c->h * c->w, ng = c->n * c->oh * c->ow * 2;
  g_autofree float *x = g_new (float, nx), *grid = g_new (float, ng);
  for (gint64 i = 0; i < nx; i++)
    x[i] = (float) (((i + 1) * 2654435761u) % 1000) / 250.0f - 2.0f;
  /* in [-1.4, 1.4): some points past the edges, a few wholly in the padding */
  for (gint64 i = 0; i < ng; i++)
    grid[i] = (float) (((i + 7) * 2246822519u) % 1000) / 357.0f - 1.4f;
  g_autoptr(GraftRtTensor) want = run_once (c, GRAFT_DTYPE_FLOAT64, x, grid, 1);
  for (guint threads = 1; threads <= 2; threads++)
    {
      g_autoptr(GraftRtTensor) y = run_once (c, GRAFT_DTYPE_FLOAT32, x, grid, threads);
      g_assert_cmpint (y->dtype, ==, GRAFT_DTYPE_FLOAT32);
      g_assert_cmpint (y->numel, ==, want->numel);
      for (gint64 i = 0; i < y->numel; i++)
        {
          double got = ((float *) y->data)[i], expected = ((double *) want->data)[i];
          if (!(fabs (got - expected) <= 1e-5 + 1e-6 * fabs (expected)))
            g_error ("%s, %u threads: y[%" G_GINT64_FORMAT "] = %.9g, expected %.9g", c->what, threads, i, got,
                     expected);
        }
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *path = g_strdup_printf ("/runtime/grid-sample/case-%u", i);
      g_test_add_data_func (path, &cases[i], test_case);
    }
  return g_test_run ();
}
