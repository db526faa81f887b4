/* graft::RMSNorm (norm.c; the pattern in fusion-patterns.h): the Pow →
 * ReduceMean → Add ε → Sqrt → Reciprocal or Div of 1 → Mul by x → Mul by
 * a scale that exporters write for T5's and Llama's RMSNorm. Each case
 * against a direct double-precision loop at every SIMD level, at one and
 * two threads: the dynamo exporter's form (ReduceMean's axes an input,
 * Reciprocal, the scale first in the last Mul) and the TorchScript-based
 * one's (axes an attribute, Div of 1, the scale second, ε and 1 from
 * Constant nodes); rows of one value, of fewer and more values than a
 * vector, with a vector tail; the fused step must have run where it
 * takes the case, and the nodes give the same where it declines (a mean
 * over the first axis, a scale of one value). */
#include <math.h>
#include <string.h>
#include "runtime/runtime.h"
#include "float-graph.h"
#include "op-timings.h"
#include "simd-levels.h"

typedef struct {
  const char *what;
  gboolean dynamo;        /* else the TorchScript-based exporter's form */
  int rank;
  gint64 dims[3];
  gint64 axis;            /* ReduceMean's */
  gint64 scale_len;       /* the scale's values: the last dim, or 1 (declined) */
} RmsCase;

static const RmsCase cases[] = {
  { "dynamo, T5's rows of 64", TRUE, 3, { 2, 16, 64 }, -1, 64 },
  { "TorchScript, T5's rows of 64", FALSE, 3, { 2, 8, 64 }, -1, 64 },
  { "dynamo, rows of 33 (a vector tail)", TRUE, 2, { 5, 33 }, 1, 33 },
  { "TorchScript, rows of 7", FALSE, 3, { 1, 3, 7 }, 2, 7 },
  { "dynamo, rows of one value", TRUE, 2, { 4, 1 }, -1, 1 },
  { "TorchScript, long rows", FALSE, 2, { 3, 1000 }, -1, 1000 },
  { "dynamo, mean over the first axis: declined", TRUE, 2, { 6, 5 }, 0, 5 },
  { "TorchScript, a scale of one value: declined", FALSE, 2, { 3, 16 }, -1, 1 },
};

static float
value_at (gint64 i, gint64 salt)
{
  return (float) (((i + salt) * 2654435761u) % 1000) / 500.0f - 1.0f;
}

static void
add_scalar (GraftGraph *g, const char *name, float value, gboolean as_constant_node)
{
  if (!as_constant_node)
    {
      float_graph_add_initializer (g, name, 0, NULL, &value);
      return;
    }
  GraftNode *c = graft_graph_add_node (g, NULL, "Constant", name);
  g_autoptr(GraftTensor) t = graft_tensor_new ("value", GRAFT_DTYPE_FLOAT32, 0, NULL);
  g_autoptr(GBytes) bytes = g_bytes_new (&value, sizeof value);
  g_assert_true (graft_tensor_set_data (t, bytes, NULL));
  graft_node_add_attribute (c, graft_attribute_new_tensor ("value", t));
  graft_node_add_output (c, graft_graph_ensure_value (g, name));
}

static GraftModel *
build_model (const RmsCase *c, const float *scale)
{
  GraftModel *model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *g = graft_graph_new ("rms-norm");
  graft_model_set_opset (model, "onnx", c->dynamo ? 18 : 17);
  gint64 scale_dims[] = { c->scale_len };
  float_graph_add_input (g, "x", c->rank, c->dims);
  float_graph_add_initializer (g, "scale", 1, scale_dims, scale);
  add_scalar (g, "two", 2, !c->dynamo);
  add_scalar (g, "eps", 1e-6f, !c->dynamo);
  float_graph_add_node (g, "Pow", "x", "two", NULL, "squares");
  GraftNode *mean;
  if (c->dynamo)
    {
      gint64 one = 1;
      GraftTensor *t = graft_tensor_new ("axes", GRAFT_DTYPE_INT64, 1, &one);
      g_autoptr(GBytes) bytes = g_bytes_new (&c->axis, sizeof c->axis);
      g_assert_true (graft_tensor_set_data (t, bytes, NULL));
      graft_graph_add_initializer (g, graft_graph_ensure_value (g, "axes"), t);
      mean = float_graph_add_node (g, "ReduceMean", "squares", "axes", NULL, "mean");
    }
  else
    {
      mean = float_graph_add_node (g, "ReduceMean", "squares", NULL, NULL, "mean");
      graft_node_add_attribute (mean, graft_attribute_new_ints ("axes", &c->axis, 1));
    }
  graft_node_add_attribute (mean, graft_attribute_new_int ("keepdims", 1));
  float_graph_add_node (g, "Add", "mean", "eps", NULL, "shifted");
  float_graph_add_node (g, "Sqrt", "shifted", NULL, NULL, "root");
  if (c->dynamo)
    float_graph_add_node (g, "Reciprocal", "root", NULL, NULL, "inverse");
  else
    {
      add_scalar (g, "one", 1, TRUE);
      float_graph_add_node (g, "Div", "one", "root", NULL, "inverse");
    }
  float_graph_add_node (g, "Mul", c->dynamo ? "x" : "inverse", c->dynamo ? "inverse" : "x", NULL, "normed");
  float_graph_add_node (g, "Mul", c->dynamo ? "scale" : "normed", c->dynamo ? "normed" : "scale", NULL, "y");
  graft_graph_add_output (g, graft_graph_ensure_value (g, "y"));
  graft_model_set_graph (model, g);
  return model;
}

static void
check_case (gconstpointer item, GraftSimdLevel level)
{
  const RmsCase *c = item;
  gint64 numel = 1;
  for (int d = 0; d < c->rank; d++)
    numel *= c->dims[d];
  gint64 axis = c->axis < 0 ? c->axis + c->rank : c->axis;
  gint64 inner = 1, n = c->dims[axis];
  for (int d = axis + 1; d < c->rank; d++)
    inner *= c->dims[d];
  g_autofree float *x = g_new (float, numel), *scale = g_new (float, c->scale_len);
  for (gint64 i = 0; i < numel; i++)
    x[i] = value_at (i, 1) * 3 + 0.5f;
  for (gint64 i = 0; i < c->scale_len; i++)
    scale[i] = value_at (i, 7) + 1.5f;
  g_autofree double *want = g_new (double, numel);
  for (gint64 i = 0; i < numel; i++)
    {
      /* the mean square over axis of the line through i */
      gint64 outer = i / (n * inner), in = i % inner;
      double sq = 0;
      for (gint64 k = 0; k < n; k++)
        {
          double v = x[(outer * n + k) * inner + in];
          sq += v * v;
        }
      want[i] = x[i] / sqrt (sq / n + 1e-6f) * scale[c->scale_len == 1 ? 0 : i % c->scale_len];
    }
  g_autoptr(GraftModel) model = build_model (c, scale);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftRuntime) rt = graft_runtime_new (model, &error);
  g_assert_no_error (error);
  graft_runtime_set_profiling (rt, TRUE);
  gboolean takes = axis == c->rank - 1 && c->scale_len == c->dims[c->rank - 1];
  for (guint threads = 1; threads <= 2; threads++)
    {
      graft_runtime_set_n_threads (rt, threads);
      guint fused;
      const char *fused_op = NULL;
      g_autoptr(GPtrArray) out = graft_test_run_x_counting (rt, "onnx::Pow", x, c->rank, c->dims, &fused, &fused_op);
      g_assert_cmpuint (fused, ==, takes ? 1 : 0);
      if (takes)
        g_assert_cmpstr (fused_op, ==, "graft::RMSNorm");
      GraftRtTensor *y = out->pdata[0];
      g_assert_cmpint (y->dtype, ==, GRAFT_DTYPE_FLOAT32);
      g_assert_cmpint (y->numel, ==, numel);
      for (gint64 i = 0; i < numel; i++)
        {
          float got = ((float *) y->data)[i];
          if (!(fabs (got - want[i]) <= 2e-6 + 2e-6 * fabs (want[i])))
            g_error ("%s at %s, %u threads: y[%" G_GINT64_FORMAT "] = %.9g, expected %.9g", c->what,
                     graft_simd_level_to_string (level), threads, i, got, want[i]);
        }
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  graft_test_add_checks_at_levels ("/runtime/rms-norm", cases, sizeof cases[0], G_N_ELEMENTS (cases), check_case);
  return g_test_run ();
}
