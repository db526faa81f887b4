/* Resize's float32 plane path (resize.c: the last two axes resized
 * separably through a cache of interpolated rows) against its general
 * path, which computes in double: the same model run on a float64 copy
 * of the input, at every SIMD level and at one and two threads. Cases:
 * nearest upsampling by 2 (torch's F.interpolate), by a scale that is
 * not a whole number, and a nearest downscale rounding up; bilinear
 * upsampling by 8 (LRASPP's and DeepLabV3's heads), to sizes, with
 * align_corners, pytorch_half_pixel and asymmetric coordinates; bicubic
 * with exclude_outside; a 1×1 map; maps narrower than a vector; rank 3
 * and rank 5 inputs; and cases the plane path leaves to the general one
 * (a resized batch axis, tf_crop_and_resize's extrapolation, an
 * antialiased downscale), which must give the same. */
#include <math.h>
#include <string.h>
#include "runtime/runtime.h"
#include "float-graph.h"
#include "simd-levels.h"

typedef struct {
  const char *what;
  int rank;
  gint64 dims[5];
  double scales[5];       /* used when sizes[0] is 0 */
  gint64 sizes[5];
  const char *mode, *ctm, *nearest_mode;
  gboolean exclude_outside, antialias;
} ResizeCase;

static const ResizeCase cases[] = {
  { "nearest x2 (torch)", 4, { 2, 3, 5, 7 }, { 1, 1, 2, 2 }, { 0 }, "nearest", "asymmetric", "floor" },
  { "nearest x1.5, round_prefer_floor, half_pixel", 4, { 1, 2, 6, 9 }, { 1, 1, 1.5, 1.5 }, { 0 }, "nearest",
    "half_pixel", "round_prefer_floor" },
  { "nearest downscale, round_prefer_ceil", 4, { 1, 3, 17, 19 }, { 1, 1, 0.5, 0.34 }, { 0 }, "nearest", "half_pixel",
    "round_prefer_ceil" },
  { "bilinear x8, pytorch_half_pixel (LRASPP)", 4, { 2, 5, 4, 4 }, { 1, 1, 8, 8 }, { 0 }, "linear",
    "pytorch_half_pixel" },
  { "bilinear to sizes, half_pixel", 4, { 2, 3, 7, 5 }, { 0 }, { 2, 3, 16, 11 }, "linear", "half_pixel" },
  { "bilinear, align_corners", 4, { 1, 2, 9, 13 }, { 0 }, { 1, 2, 33, 20 }, "linear", "align_corners" },
  { "bilinear downscale, asymmetric", 4, { 1, 2, 31, 29 }, { 1, 1, 0.4, 0.7 }, { 0 }, "linear", "asymmetric" },
  { "bicubic x2, exclude_outside", 4, { 1, 2, 6, 10 }, { 1, 1, 2, 2 }, { 0 }, "cubic", "half_pixel", NULL, TRUE },
  { "bicubic to sizes", 4, { 2, 1, 5, 9 }, { 0 }, { 2, 1, 13, 7 }, "cubic", "half_pixel" },
  { "1x1 map", 4, { 2, 3, 1, 1 }, { 1, 1, 4, 3 }, { 0 }, "linear", "half_pixel" },
  { "rank 3, the last axis only", 3, { 2, 4, 9 }, { 1, 1, 2.5 }, { 0 }, "linear", "half_pixel" },
  { "rank 5, the last two axes", 5, { 1, 2, 3, 4, 5 }, { 1, 1, 1, 2, 3 }, { 0 }, "linear", "half_pixel" },
  { "a resized batch axis (general path)", 4, { 2, 2, 3, 3 }, { 2, 1, 2, 2 }, { 0 }, "linear", "half_pixel" },
  { "tf_crop_and_resize (general path)", 4, { 1, 1, 6, 6 }, { 1, 1, 2, 2 }, { 0 }, "linear", "tf_crop_and_resize" },
  { "antialiased downscale (general path)", 4, { 1, 2, 16, 16 }, { 1, 1, 0.25, 0.25 }, { 0 }, "linear",
    "half_pixel", NULL, FALSE, TRUE },
};

static GraftModel *
build_model (const ResizeCase *c, GraftDType dtype)
{
  GraftModel *model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *g = graft_graph_new ("resize");
  graft_model_set_opset (model, "onnx", 19);
  GraftValue *x = graft_graph_ensure_value (g, "x");
  x->dtype = dtype;
  graft_shape_init_fixed (&x->shape, c->rank, c->dims);
  graft_graph_add_input (g, x);
  GraftNode *node = graft_graph_add_node (g, NULL, "Resize", "Resize");
  graft_node_add_input (node, x);
  gint64 n = c->rank, roi_n = 2 * c->rank;
  /* tf_crop_and_resize crops to a box reaching past the map (extrapolated) */
  float roi[10];
  for (int d = 0; d < c->rank; d++)
    {
      roi[d] = d < 2 ? 0 : -0.2f;
      roi[d + c->rank] = d < 2 ? 1 : 1.1f;
    }
  if (strcmp (c->ctm, "tf_crop_and_resize") == 0)
    {
      float_graph_add_initializer (g, "roi", 1, &roi_n, roi);
      graft_node_add_input (node, graft_graph_resolve_value (g, "roi"));
      graft_node_add_attribute (node, graft_attribute_new_float ("extrapolation_value", -3.5));
    }
  else
    graft_node_add_input (node, NULL);
  if (c->sizes[0] == 0)
    {
      float scales[5];
      for (int d = 0; d < c->rank; d++)
        scales[d] = c->scales[d];
      float_graph_add_initializer (g, "scales", 1, &n, scales);
      graft_node_add_input (node, graft_graph_resolve_value (g, "scales"));
    }
  else
    {
      GraftValue *v = graft_graph_ensure_value (g, "sizes");
      GraftTensor *t = graft_tensor_new ("sizes", GRAFT_DTYPE_INT64, 1, &n);
      g_autoptr(GBytes) bytes = g_bytes_new (c->sizes, n * sizeof (gint64));
      v->dtype = GRAFT_DTYPE_INT64;
      graft_shape_init_fixed (&v->shape, 1, &n);
      g_assert_true (graft_tensor_set_data (t, bytes, NULL));
      graft_graph_add_initializer (g, v, t);
      graft_node_add_input (node, NULL);
      graft_node_add_input (node, v);
    }
  graft_node_add_output (node, graft_graph_ensure_value (g, "y"));
  graft_node_add_attribute (node, graft_attribute_new_string ("mode", c->mode));
  graft_node_add_attribute (node, graft_attribute_new_string ("coordinate_transformation_mode", c->ctm));
  if (c->nearest_mode)
    graft_node_add_attribute (node, graft_attribute_new_string ("nearest_mode", c->nearest_mode));
  graft_node_add_attribute (node, graft_attribute_new_int ("exclude_outside", c->exclude_outside));
  graft_node_add_attribute (node, graft_attribute_new_int ("antialias", c->antialias));
  graft_graph_add_output (g, graft_graph_ensure_value (g, "y"));
  graft_model_set_graph (model, g);
  return model;
}

static GraftRtTensor *
run_once (const ResizeCase *c, GraftDType dtype, const float *x, guint threads)
{
  g_autoptr(GraftModel) model = build_model (c, dtype);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftRuntime) rt = graft_runtime_new (model, &error);
  g_assert_no_error (error);
  graft_runtime_set_n_threads (rt, threads);
  g_autoptr(GHashTable) inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                        (GDestroyNotify) graft_rt_tensor_unref);
  GraftRtTensor *xt = graft_rt_tensor_new (dtype, c->rank, c->dims, NULL);
  for (gint64 i = 0; i < xt->numel; i++)
    graft_rt_tensor_set_f64 (xt, i, x[i]);
  g_hash_table_insert (inputs, (gpointer) "x", xt);
  g_autoptr(GPtrArray) out = graft_runtime_run (rt, inputs, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  return graft_rt_tensor_ref (out->pdata[0]);
}

static void
check_case (gconstpointer item, GraftSimdLevel level)
{
  const ResizeCase *c = item;
  gint64 numel = 1;
  for (int d = 0; d < c->rank; d++)
    numel *= c->dims[d];
  g_autofree float *x = g_new (float, numel);
  for (gint64 i = 0; i < numel; i++)
    x[i] = (float) (((i + 1) * 2654435761u) % 1000) / 250.0f - 2.0f;
  g_autoptr(GraftRtTensor) want = run_once (c, GRAFT_DTYPE_FLOAT64, x, 1);
  for (guint threads = 1; threads <= 2; threads++)
    {
      g_autoptr(GraftRtTensor) y = run_once (c, GRAFT_DTYPE_FLOAT32, x, threads);
      g_assert_cmpint (y->dtype, ==, GRAFT_DTYPE_FLOAT32);
      g_assert_cmpint (y->rank, ==, want->rank);
      g_assert_cmpmem (y->dims, y->rank * sizeof (gint64), want->dims, want->rank * sizeof (gint64));
      for (gint64 i = 0; i < y->numel; i++)
        {
          double got = ((float *) y->data)[i], expected = ((double *) want->data)[i];
          if (!(fabs (got - expected) <= 1e-5 + 1e-6 * fabs (expected)))
            g_error ("%s at %s, %u threads: y[%" G_GINT64_FORMAT "] = %.9g, expected %.9g", c->what,
                     graft_simd_level_to_string (level), threads, i, got, expected);
        }
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  graft_test_add_checks_at_levels ("/runtime/resize", cases, sizeof cases[0], G_N_ELEMENTS (cases), check_case);
  return g_test_run ();
}
