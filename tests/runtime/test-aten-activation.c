/* PyTorch files get the fusions their ONNX exports get: an eval-mode
 * aten::batch_norm after an aten convolution is folded into the
 * convolution's weights once and forwards its output, and an aten
 * convolution or batch_norm whose output only an aten::silu(_),
 * hardswish(_) or relu(_) reads applies that activation (a convolution
 * the clamp of a hardtanh(_), torchvision's ReLU6), whose node
 * forwards its output, and an aten::add(_) of a value ready before the
 * convolution [and a relu(_) after] go into its epilogue as Conv → Add
 * [→ Relu] do, and a scripted batch_norm's training reads and checks
 * are skipped once it is folded (runtime-fusion.c fold_batch_norms,
 * fuse_aten_residuals, fuse_conv_activations, skip_unread_steps). The model is written by the test venv's torch
 * (make-aten-activation.py), traced (aten::_convolution), scripted
 * (aten::conv2d, batch_norm behind its prim::If checks, its training
 * flag out of a prim::If, a missing bias or affine as prim::GetAttr) and
 * exported (.pt2): depthwise and strided convolutions, maps above and
 * below the batch_norm's per-map threshold, a convolution wider than its
 * maps (the trimmed taps Conv takes too), aten::max_pool2d through
 * MaxPool's vector kernel, a SiLU of a value that an Add reads too, which
 * must not fuse, batch norms with and without a convolution bias, an
 * affine or an activation after, and two that must not fold (after an
 * add; after a convolution an add reads too), and aten::linear through
 * Gemm's packed product (from AVX2 on; runtime-gemm-packed checks that
 * product against the portable one). Each file at every SIMD level and
 * 1/2 threads against its nodes run one by one (an observer turns the
 * engine's fusions off), and against torch's own outputs. */
#include <math.h>
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

/* The fused ops of make-aten-activation.py and how many of each forward
 * their input (the same in each file: torch.export keeps in-place ops). */
static const struct {
  const char *op;
  guint64 fused;
} activations[] = {
  { "aten::silu_", 1 }, { "aten::hardswish_", 1 }, { "aten::hardswish", 1 },
  { "aten::silu", 1 },   /* a4's, after a batch_norm; a6's reads a value the Add reads too */
  { "aten::relu_", 3 },  /* a5's after a convolution, a8's after a folded batch_norm, a12's after add_ */
  { "aten::hardtanh_", 1 },    /* a13's ReLU6 after a folded batch_norm: the convolution's clamp */
  { "aten::batch_norm", 6 },   /* b2, b4, b8, b9, b12, b13 folded; b10 and b11 not */
  { "aten::add", 1 },    /* b9's + x, a residual of its convolution; b10's + u reads u twice */
  { "aten::add_", 1 },   /* ResNet's out += identity, then relu_ */
};

static char *scratch;

static const char *
models (void)
{
  if (scratch == NULL)
    {
      g_autoptr(GError) error = NULL;
      scratch = graft_test_scratch_dir ("aten-activation-XXXXXX", &error);
      g_assert_no_error (error);
      g_autofree char *python = graft_test_python ();
      g_autofree char *script = g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "tests", "runtime",
                                                  "make-aten-activation.py", NULL);
      const char *argv[] = { python, script, scratch, NULL };
      graft_test_spawn (argv, &error);
      g_assert_no_error (error);
    }
  return scratch;
}

static void
check_case (gconstpointer item, GraftSimdLevel level)
{
  const FileCase *c = item;
  g_autofree char *path = g_build_filename (models (), c->file, NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);
  g_assert_no_error (error);

  g_autoptr(GHashTable) inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                        (GDestroyNotify) graft_rt_tensor_unref);
  g_autofree char *x_path = g_build_filename (models (), "x.npy", NULL);
  g_autofree char *y_path = g_build_filename (models (), "y.npy", NULL);
  GraftRtTensor *x = graft_npy_read (x_path, &error);
  g_assert_no_error (error);
  g_hash_table_insert (inputs, (gpointer) "x", x);
  g_autofree char *logits_path = g_build_filename (models (), "logits.npy", NULL);
  g_autoptr(GraftRtTensor) torch_y = graft_npy_read (y_path, &error);
  g_assert_no_error (error);
  g_autoptr(GraftRtTensor) torch_logits = graft_npy_read (logits_path, &error);
  g_assert_no_error (error);

  g_autoptr(GraftRuntime) nodes = NULL;
  g_autoptr(GPtrArray) reference = graft_test_run_profiled (model, inputs, 1, FALSE, &nodes);
  for (guint k = 0; k < G_N_ELEMENTS (activations); k++)
    {
      g_assert_cmpuint (graft_test_op_calls (nodes, activations[k].op, NULL, NULL), >=, 1);
      g_assert_cmpuint (graft_test_op_forwarded (nodes, activations[k].op), ==, 0);
    }
  for (guint threads = 1; threads <= 2; threads++)
    {
      g_autoptr(GraftRuntime) rt = NULL;
      g_autoptr(GPtrArray) fast = graft_test_run_profiled (model, inputs, threads, TRUE, &rt);
      g_autofree char *what = g_strdup_printf ("%s at %s, %u threads", c->file, graft_simd_level_to_string (level),
                                               threads);
      for (guint k = 0; k < G_N_ELEMENTS (activations); k++)
        {
          guint64 forwarded = graft_test_op_forwarded (rt, activations[k].op);
          g_test_message ("%s: %s forwarded %" G_GUINT64_FORMAT " times", what, activations[k].op, forwarded);
          g_assert_cmpuint (forwarded, ==, activations[k].fused);
        }
      /* scripted BatchNorm2d's training reads and `if self.training:`
       * blocks around a folded batch_norm are skipped */
      guint ifs = graft_test_op_calls (rt, "prim::If", NULL, NULL);
      guint node_ifs = graft_test_op_calls (nodes, "prim::If", NULL, NULL);
      guint reads = graft_test_op_calls (rt, "prim::GetAttr", NULL, NULL);
      guint node_reads = graft_test_op_calls (nodes, "prim::GetAttr", NULL, NULL);
      g_test_message ("%s: prim::If ran %u times (%u one by one), prim::GetAttr %u (%u)", what, ifs, node_ifs, reads,
                      node_reads);
      if (strcmp (c->file, "scripted.pt") == 0)
        {
          g_assert_cmpuint (ifs, <, node_ifs);
          g_assert_cmpuint (reads, <, node_reads);
        }
      float_graph_assert_outputs_close (what, fast, reference, 1e-6);
    }
  /* the sums in another order than torch's: its tolerance in test-aten.c */
  g_autoptr(GPtrArray) torch_out = g_ptr_array_new ();
  g_ptr_array_add (torch_out, torch_y);
  g_ptr_array_add (torch_out, torch_logits);
  float_graph_assert_outputs_close (c->file, reference, torch_out, 1e-4);
}

static GPtrArray *
run_with (GraftRuntime *rt, GHashTable *inputs)
{
  g_autoptr(GError) error = NULL;
  GPtrArray *outputs = graft_runtime_run (rt, inputs, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  return outputs;
}

static void
assert_outputs_identical (const char *what, GPtrArray *a, GPtrArray *b)
{
  g_assert_cmpuint (a->len, ==, b->len);
  for (guint i = 0; i < a->len; i++)
    {
      GraftRtTensor *x = a->pdata[i], *y = b->pdata[i];
      g_test_message ("%s: output %u", what, i);
      g_assert_true (graft_rt_tensor_same_shape (x, y));
      g_assert_cmpmem (x->data, x->nbytes, y->data, y->nbytes);
    }
}

/* The folded weights cost memory only while a kernel needs their values:
 * none at plan time, none after a run beside the packed filters that
 * serve the next runs in their place (and none in a runtime that keeps
 * nothing derived), and the same outputs when a kernel must compute
 * them again. Only b2's depthwise convolution (8 × 1 × 3 × 3 floats) reads
 * its folded weight itself, run after run. */
static void
check_folded_given_back (gconstpointer item)
{
  const FileCase *c = item;
  g_autofree char *path = g_build_filename (models (), c->file, NULL);
  g_autofree char *x_path = g_build_filename (models (), "x.npy", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_autoptr(GHashTable) inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                        (GDestroyNotify) graft_rt_tensor_unref);
  g_hash_table_insert (inputs, (gpointer) "x", graft_npy_read (x_path, &error));
  g_assert_no_error (error);
  const guint64 depthwise_bytes = 8 * 3 * 3 * sizeof (float);

  g_autoptr(GraftRuntime) rt = graft_runtime_new (model, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (graft_runtime_get_folded_weight_bytes (rt), ==, 0);
  g_autoptr(GPtrArray) first = run_with (rt, inputs);
  g_assert_cmpuint (graft_runtime_get_folded_weight_bytes (rt), ==, depthwise_bytes);
  /* the kept filters serve: nothing is folded again */
  g_autoptr(GPtrArray) second = run_with (rt, inputs);
  g_assert_cmpuint (graft_runtime_get_folded_weight_bytes (rt), ==, depthwise_bytes);
  assert_outputs_identical ("second run", first, second);
  /* without the kept filters each convolution folds its weight again, and gives it back */
  graft_runtime_set_keep_derived_weights (rt, FALSE);
  g_autoptr(GPtrArray) refolded = run_with (rt, inputs);
  g_assert_cmpuint (graft_runtime_get_folded_weight_bytes (rt), ==, 0);
  assert_outputs_identical ("folded again", first, refolded);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  graft_test_require_venv ();
  graft_test_add_checks_at_levels ("/aten-activation", cases, sizeof cases[0], G_N_ELEMENTS (cases), check_case);
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *name = g_strdup_printf ("/aten-activation/folded-weights-given-back/%s", cases[i].file);
      g_test_add_data_func (name, &cases[i], check_folded_given_back);
    }
  return g_test_run ();
}
