/* The float32 paths of InstanceNormalization and GroupNormalization and
 * graft::GroupNorm (norm.c; the pattern in fusion-patterns.h): the
 * Reshape → InstanceNormalization → Reshape → Mul → Add [→ Sigmoid →
 * Mul] that torch.onnx.export writes for torch.nn.GroupNorm (diffusers'
 * VAE and UNet). Each case against a direct double-precision loop at
 * every SIMD level, at one and two threads: a group of one value (zero
 * variance), groups longer than the blocks the sums are
 * flushed in, an offset mean (a one-pass variance would lose digits),
 * odd sizes around the vector widths, rank 3 and rank 5 inputs; the
 * pattern with the Reshape back reading Shape (x) (the TorchScript-based
 * exporter) or a constant (the dynamo exporter), with and without the
 * SiLU; the fused step must have run where it takes the case, and the
 * nodes give the same where it declines (a scale that is not one value
 * per channel). */
#include <math.h>
#include <string.h>
#include "runtime/runtime.h"
#include "float-graph.h"
#include "op-timings.h"
#include "simd-levels.h"

typedef enum { INSTANCE_NORM, GROUP_NORM_18, GROUP_NORM_21, EXPORTED, EXPORTED_SHAPE_OF_X } Form;

typedef struct {
  const char *what;
  Form form;
  int rank;
  gint64 dims[5];
  gint64 groups;
  gboolean silu;          /* EXPORTED*: the SiLU after the Add */
  gboolean spatial_scale; /* EXPORTED*: the Mul's scale varies along the last axis (declined) */
} NormCase;

static const NormCase cases[] = {
  { "instance norm, odd map", INSTANCE_NORM, 4, { 2, 3, 5, 7 }, 3 },
  { "instance norm, one value per channel", INSTANCE_NORM, 4, { 2, 5, 1, 1 }, 5 },
  { "instance norm, rank 3, long rows", INSTANCE_NORM, 3, { 1, 2, 4099 }, 2 },
  { "instance norm, rank 5", INSTANCE_NORM, 5, { 1, 2, 3, 4, 5 }, 2 },
  { "group norm opset 18, per-group scale", GROUP_NORM_18, 4, { 2, 6, 3, 5 }, 3 },
  { "group norm opset 21, per-channel scale", GROUP_NORM_21, 4, { 2, 8, 9, 17 }, 2 },
  { "group norm opset 21, one group of everything", GROUP_NORM_21, 4, { 1, 4, 33, 33 }, 1 },
  { "exported group norm, constant shape", EXPORTED, 4, { 2, 8, 5, 6 }, 4 },
  { "exported group norm + SiLU, constant shape", EXPORTED, 4, { 2, 8, 7, 9 }, 4, TRUE },
  { "exported group norm + SiLU, Shape (x)", EXPORTED_SHAPE_OF_X, 4, { 2, 32, 16, 16 }, 8, TRUE },
  { "exported group norm, rank 3 (attention's [N, C, HW])", EXPORTED, 3, { 2, 6, 17 }, 3 },
  { "exported group norm, groups of 2100 values", EXPORTED_SHAPE_OF_X, 4, { 1, 12, 30, 35 }, 6, TRUE },
  { "exported group norm, scale along W: declined", EXPORTED, 4, { 2, 4, 3, 5 }, 2, FALSE, TRUE },
};

static float
value_at (gint64 i, gint64 salt)
{
  return (float) (((i + salt) * 2654435761u) % 1000) / 500.0f - 1.0f;
}

static void
add_int64_initializer (GraftGraph *g, const char *name, gint64 n, const gint64 *values)
{
  GraftValue *v = graft_graph_ensure_value (g, name);
  GraftTensor *t = graft_tensor_new (name, GRAFT_DTYPE_INT64, 1, &n);
  g_autoptr(GBytes) bytes = g_bytes_new (values, n * sizeof (gint64));
  v->dtype = GRAFT_DTYPE_INT64;
  graft_shape_init_fixed (&v->shape, 1, &n);
  g_assert_true (graft_tensor_set_data (t, bytes, NULL));
  graft_graph_add_initializer (g, v, t);
}

static GraftNode *
add_node (GraftGraph *g, const char *op, const char *const *inputs, const char *output)
{
  GraftNode *node = graft_graph_add_node (g, NULL, op, op);
  for (guint i = 0; inputs[i]; i++)
    graft_node_add_input (node, graft_graph_resolve_value (g, inputs[i]));
  graft_node_add_output (node, graft_graph_ensure_value (g, output));
  return node;
}

/* The per-group values (InstanceNormalization's scale and B in the
 * exported form, GroupNormalization's at opset 18), the per-channel ones
 * (the Mul's and the Add's, GroupNormalization's at 21) */
typedef struct {
  float *group_scale, *group_bias, *scale, *bias;
  gint64 scale_dims[5], scale_rank;
} Params;

static GraftModel *
build_model (const NormCase *c, const Params *p)
{
  GraftModel *model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *g = graft_graph_new ("group-norm");
  graft_model_set_opset (model, "onnx", c->form == GROUP_NORM_18 ? 18 : 21);
  gint64 C = c->dims[1], groups_dim[] = { c->groups }, channels_dim[] = { C };
  float_graph_add_input (g, "x", c->rank, c->dims);
  const float eps = 1e-5f;
  if (c->form == INSTANCE_NORM)
    {
      float_graph_add_initializer (g, "scale", 1, channels_dim, p->scale);
      float_graph_add_initializer (g, "bias", 1, channels_dim, p->bias);
      GraftNode *n = add_node (g, "InstanceNormalization", (const char *[]) { "x", "scale", "bias", NULL }, "y");
      graft_node_add_attribute (n, graft_attribute_new_float ("epsilon", eps));
    }
  else if (c->form == GROUP_NORM_18 || c->form == GROUP_NORM_21)
    {
      gboolean per_group = c->form == GROUP_NORM_18;
      float_graph_add_initializer (g, "scale", 1, per_group ? groups_dim : channels_dim,
                                   per_group ? p->group_scale : p->scale);
      float_graph_add_initializer (g, "bias", 1, per_group ? groups_dim : channels_dim,
                                   per_group ? p->group_bias : p->bias);
      GraftNode *n = add_node (g, "GroupNormalization", (const char *[]) { "x", "scale", "bias", NULL }, "y");
      graft_node_add_attribute (n, graft_attribute_new_int ("num_groups", c->groups));
      graft_node_add_attribute (n, graft_attribute_new_float ("epsilon", eps));
    }
  else
    {
      gint64 grouped[] = { 0, c->groups, -1 };
      add_int64_initializer (g, "grouped_shape", 3, grouped);
      float_graph_add_initializer (g, "group_scale", 1, groups_dim, p->group_scale);
      float_graph_add_initializer (g, "group_bias", 1, groups_dim, p->group_bias);
      float_graph_add_initializer (g, "scale", p->scale_rank, p->scale_dims, p->scale);
      float_graph_add_initializer (g, "bias", p->scale_rank, p->scale_dims, p->bias);
      add_node (g, "Reshape", (const char *[]) { "x", "grouped_shape", NULL }, "grouped");
      GraftNode *n = add_node (g, "InstanceNormalization", (const char *[]) { "grouped", "group_scale", "group_bias", NULL },
                               "normalized");
      graft_node_add_attribute (n, graft_attribute_new_float ("epsilon", eps));
      if (c->form == EXPORTED_SHAPE_OF_X)
        add_node (g, "Shape", (const char *[]) { "x", NULL }, "shape");
      else
        add_int64_initializer (g, "shape", c->rank, c->dims);
      add_node (g, "Reshape", (const char *[]) { "normalized", "shape", NULL }, "back");
      add_node (g, "Mul", (const char *[]) { "back", "scale", NULL }, "scaled");
      add_node (g, "Add", (const char *[]) { "scaled", "bias", NULL }, c->silu ? "shifted" : "y");
      if (c->silu)
        {
          add_node (g, "Sigmoid", (const char *[]) { "shifted", NULL }, "gate");
          add_node (g, "Mul", (const char *[]) { "gate", "shifted", NULL }, "y");
        }
    }
  graft_graph_add_output (g, graft_graph_ensure_value (g, "y"));
  graft_model_set_graph (model, g);
  return model;
}

/* y of the case in double precision */
static double *
reference (const NormCase *c, const float *x, const Params *p)
{
  gint64 N = c->dims[0], C = c->dims[1], spatial = 1;
  for (int d = 2; d < c->rank; d++)
    spatial *= c->dims[d];
  gint64 groups = c->form == INSTANCE_NORM ? C : c->groups, per_group = C / groups;
  double *y = g_new (double, N * C * spatial);
  for (gint64 n = 0; n < N; n++)
    for (gint64 g = 0; g < groups; g++)
      {
        const float *xg = x + (n * C + g * per_group) * spatial;
        double sum = 0, sq = 0;
        for (gint64 i = 0; i < per_group * spatial; i++)
          sum += xg[i];
        double mean = sum / (per_group * spatial);
        for (gint64 i = 0; i < per_group * spatial; i++)
          sq += (xg[i] - mean) * (xg[i] - mean);
        double inv = 1 / sqrt (sq / (per_group * spatial) + 1e-5);
        for (gint64 k = 0; k < per_group; k++)
          for (gint64 i = 0; i < spatial; i++)
            {
              gint64 c_ = g * per_group + k, at = (n * C + c_) * spatial + i;
              double v = (x[at] - mean) * inv;
              if (c->form == INSTANCE_NORM || c->form == GROUP_NORM_21)
                v = v * p->scale[c_] + p->bias[c_];
              else if (c->form == GROUP_NORM_18)
                v = v * p->group_scale[g] + p->group_bias[g];
              else
                {
                  gint64 s = c->spatial_scale ? i % c->dims[c->rank - 1] : c_;
                  v = (v * p->group_scale[g] + p->group_bias[g]) * p->scale[s] + p->bias[s];
                  if (c->silu)
                    v = v / (1 + exp (-v));
                }
              y[at] = v;
            }
      }
  return y;
}

static void
check_case (gconstpointer item, GraftSimdLevel level)
{
  const NormCase *c = item;
  gint64 numel = 1, C = c->dims[1];
  for (int d = 0; d < c->rank; d++)
    numel *= c->dims[d];
  g_autofree float *x = g_new (float, numel);
  for (gint64 i = 0; i < numel; i++)
    x[i] = value_at (i, 1) * 3 + 5;   /* an offset mean */
  gint64 scale_len = c->spatial_scale ? c->dims[c->rank - 1] : C;
  Params p = { g_new (float, c->groups), g_new (float, c->groups), g_new (float, MAX (C, scale_len)),
               g_new (float, MAX (C, scale_len)) };
  for (gint64 i = 0; i < c->groups; i++)
    {
      p.group_scale[i] = value_at (i, 3) + 1.5f;
      p.group_bias[i] = value_at (i, 5);
    }
  for (gint64 i = 0; i < MAX (C, scale_len); i++)
    {
      p.scale[i] = value_at (i, 7) + 1.5f;
      p.bias[i] = value_at (i, 11);
    }
  /* [C, 1, 1] for NCHW, as the exporters write it; [1, 1, W] declined */
  p.scale_rank = c->rank - 1;
  for (int d = 0; d < p.scale_rank; d++)
    p.scale_dims[d] = 1;
  p.scale_dims[c->spatial_scale ? p.scale_rank - 1 : 0] = scale_len;

  g_autofree double *want = reference (c, x, &p);
  g_autoptr(GraftModel) model = build_model (c, &p);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftRuntime) rt = graft_runtime_new (model, &error);
  g_assert_no_error (error);
  graft_runtime_set_profiling (rt, TRUE);
  for (guint threads = 1; threads <= 2; threads++)
    {
      graft_runtime_set_n_threads (rt, threads);
      guint fused;
      const char *fused_op = NULL;
      g_autoptr(GPtrArray) out = graft_test_run_x_counting (rt, "onnx::Reshape", x, c->rank, c->dims, &fused, &fused_op);
      gboolean takes = (c->form == EXPORTED || c->form == EXPORTED_SHAPE_OF_X) && !c->spatial_scale;
      g_assert_cmpuint (fused, ==, takes ? 1 : 0);
      if (takes)
        g_assert_cmpstr (fused_op, ==, "graft::GroupNorm");
      GraftRtTensor *y = out->pdata[0];
      g_assert_cmpint (y->dtype, ==, GRAFT_DTYPE_FLOAT32);
      g_assert_cmpint (y->numel, ==, numel);
      for (gint64 i = 0; i < numel; i++)
        {
          float got = ((float *) y->data)[i];
          if (!(fabs (got - want[i]) <= 2e-5 + 2e-5 * fabs (want[i])))
            g_error ("%s at %s, %u threads: y[%" G_GINT64_FORMAT "] = %.9g, expected %.9g", c->what,
                     graft_simd_level_to_string (level), threads, i, got, want[i]);
        }
    }
  g_free (p.group_scale);
  g_free (p.group_bias);
  g_free (p.scale);
  g_free (p.bias);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  graft_test_add_checks_at_levels ("/runtime/group-norm", cases, sizeof cases[0], G_N_ELEMENTS (cases), check_case);
  return g_test_run ();
}
