/* Steps whose inputs are all constants run once when the plan is built
 * and their outputs become plan constants (runtime-fusion.c
 * fold_constant_steps), which the folds after read: DETR's
 * FrozenBatchNorm2d computes its scale and bias from its buffers at every
 * call (reshape, add of eps, rsqrt, mul, sub), and with them computed at
 * plan time its x * scale + bias folds into the convolution before it as
 * an ONNX export's Conv → Mul → Add does (fold_conv_affines on aten::mul,
 * add), a relu or a residual add and relu after going into the
 * convolution as well; so does a layer scale computed from a parameter.
 * Gemma's RMSNorm, whose scale 1 + weight comes after the norm, runs as
 * one graft::RMSNorm reading that plan constant. Not folded: a value an
 * in-place add_ changes (computed again, and
 * changed again, so that runs give the same outputs), and a
 * scale computed from the input. The model is written by the test venv's
 * torch (make-aten-constant-fold.py), traced, scripted and exported; each
 * file at every SIMD level and at 1/2 threads against its nodes run one
 * by one (an observer turns the folds off: the steps run again from the
 * same constants) and against torch, three runs alike. */
#include <string.h>
#include "loader.h"
#include "runtime/npy.h"
#include "runtime/runtime.h"
#include "../test-python.h"
#include "../test-scratch.h"
#include "float-graph.h"
#include "op-timings.h"
#include "simd-levels.h"

typedef struct {
  const char *file;
} FileCase;

static const FileCase cases[] = { { "traced.pt" }, { "scripted.pt" }, { "exported.pt2" } };

/* How many nodes of each op forward their input (the same in each file:
 * torch.export keeps the in-place add_). */
static const struct {
  const char *op;
  guint64 forwarded;
} forwards[] = {
  { "aten::mul", 3 },    /* the two norms' x * scale, the layer scale; not c4's * x.mean() */
  { "aten::add", 3 },    /* the two norms' + bias, n2's residual + x; not + shift */
  { "aten::relu", 2 },   /* after n1, after the residual */
};

/* The steps computing the norms' scales and biases from their buffers:
 * none of them runs once folded. */
static const char *const constant_ops[] = { "aten::rsqrt", "aten::sub" };

static char *scratch;

static const char *
models (void)
{
  if (scratch == NULL)
    {
      g_autoptr(GError) error = NULL;
      scratch = graft_test_scratch_dir ("aten-constant-fold-XXXXXX", &error);
      g_assert_no_error (error);
      g_autofree char *python = graft_test_python ();
      g_autofree char *script = g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "tests", "runtime",
                                                  "make-aten-constant-fold.py", NULL);
      const char *argv[] = { python, script, scratch, NULL };
      graft_test_spawn (argv, &error);
      g_assert_no_error (error);
    }
  return scratch;
}

static guint
constant_op_calls (GraftRuntime *rt)
{
  guint calls = 0;
  for (guint k = 0; k < G_N_ELEMENTS (constant_ops); k++)
    calls += graft_test_op_calls (rt, constant_ops[k], NULL, NULL);
  return calls;
}

/* The model of file, and its input x.npy (*inputs). */
static GraftModel *
load (const char *file, GHashTable **inputs)
{
  g_autofree char *path = g_build_filename (models (), file, NULL);
  g_autofree char *x_path = g_build_filename (models (), "x.npy", NULL);
  g_autoptr(GError) error = NULL;
  GraftModel *model = graft_model_load (path, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  *inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, (GDestroyNotify) graft_rt_tensor_unref);
  GraftValue *input = graft_model_get_graph (model)->inputs->pdata[0];
  g_hash_table_insert (*inputs, input->name, graft_npy_read (x_path, &error));
  g_assert_no_error (error);
  return model;
}

static void
check_case (gconstpointer item, GraftSimdLevel level)
{
  const FileCase *c = item;
  g_autofree char *y_path = g_build_filename (models (), "y.npy", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(GHashTable) inputs = NULL;
  g_autoptr(GraftModel) model = load (c->file, &inputs);
  g_autoptr(GraftRtTensor) torch_y = graft_npy_read (y_path, &error);
  g_assert_no_error (error);

  g_autoptr(GraftRuntime) nodes = NULL;
  g_autoptr(GPtrArray) reference = graft_test_run_profiled (model, inputs, 1, FALSE, &nodes);
  /* an observer sees the folded steps run (the norms' rsqrt and the RMSNorm's) */
  g_assert_cmpuint (graft_test_op_calls (nodes, "aten::rsqrt", NULL, NULL), ==, 3);
  for (guint k = 0; k < G_N_ELEMENTS (forwards); k++)
    g_assert_cmpuint (graft_test_op_forwarded (nodes, forwards[k].op), ==, 0);
  g_autoptr(GPtrArray) torch_out = g_ptr_array_new ();
  g_ptr_array_add (torch_out, torch_y);
  float_graph_assert_outputs_close (c->file, reference, torch_out, 1e-4);

  for (guint threads = 1; threads <= 2; threads++)
    {
      g_autoptr(GraftRuntime) rt = NULL;
      g_autoptr(GPtrArray) first = graft_test_run_profiled (model, inputs, threads, TRUE, &rt);
      g_autofree char *what = g_strdup_printf ("%s at %s, %u threads", c->file, graft_simd_level_to_string (level),
                                               threads);
      for (guint k = 0; k < G_N_ELEMENTS (forwards); k++)
        {
          guint64 forwarded = graft_test_op_forwarded (rt, forwards[k].op);
          g_test_message ("%s: %s forwarded %" G_GUINT64_FORMAT " times", what, forwards[k].op, forwarded);
          g_assert_cmpuint (forwarded, ==, forwards[k].forwarded);
        }
      g_assert_cmpuint (constant_op_calls (rt), ==, 0);
      guint rms_norms = 0;
      graft_test_op_calls (rt, "aten::pow", &rms_norms, NULL);
      g_assert_cmpuint (rms_norms, ==, 1);
      /* the in-place add_ of a value computed from a buffer is not
       * folded: it runs (on a value of its own; memoised from the third
       * run on, runtime-fusion.c memoize_shape_steps) */
      g_assert_cmpuint (graft_test_op_calls (rt, "aten::add_", NULL, NULL), ==, 1);
      /* (the fused RMSNorm sums in another order than the nodes) */
      float_graph_assert_outputs_close (what, first, reference, 1e-5);
      for (guint k = 0; k < 2; k++)
        {
          g_autoptr(GPtrArray) again = graft_test_run_again (rt, inputs);
          float_graph_assert_outputs_close (what, again, first, 0);
        }
      g_assert_cmpuint (constant_op_calls (rt), ==, 0);
    }
}

/* An observer set on a runtime that ran folded: every step runs again,
 * from the constants the plan kept, to the same outputs. */
static void
check_observer_after (gconstpointer item)
{
  const FileCase *c = item;
  g_autoptr(GHashTable) inputs = NULL;
  g_autoptr(GraftModel) model = load (c->file, &inputs);
  g_autoptr(GraftRuntime) rt = NULL;
  g_autoptr(GPtrArray) folded = graft_test_run_profiled (model, inputs, 1, TRUE, &rt);
  g_assert_cmpuint (constant_op_calls (rt), ==, 0);
  graft_runtime_set_observer (rt, graft_test_ignore_value, NULL);
  g_autoptr(GPtrArray) observed = graft_test_run_again (rt, inputs);
  g_assert_cmpuint (graft_test_op_calls (rt, "aten::rsqrt", NULL, NULL), ==, 3);
  float_graph_assert_outputs_close (c->file, observed, folded, 1e-5);
  graft_runtime_set_observer (rt, NULL, NULL);
  g_autoptr(GPtrArray) again = graft_test_run_again (rt, inputs);
  float_graph_assert_outputs_close (c->file, again, folded, 0);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  graft_test_require_venv ();
  graft_test_add_checks_at_levels ("/aten-constant-fold", cases, sizeof cases[0], G_N_ELEMENTS (cases), check_case);
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *name = g_strdup_printf ("/aten-constant-fold/observer-after/%s", cases[i].file);
      g_test_add_data_func (name, &cases[i], check_observer_after);
    }
  return g_test_run ();
}
