/* PyTorch files of small transformers get the fusions their ONNX exports
 * get (runtime-fusion.c, fusion-patterns.h): RMSNorm written as aten::pow
 * → mean → add ε → rsqrt → mul [→ to] → mul runs as one graft::RMSNorm,
 * eager attention (matmul → mul → add mask → softmax [→ to] [→ dropout]
 * → matmul) as one blocked
 * graft::ScaledDotProductAttention, aten::scaled_dot_product_attention on
 * that blocked kernel (the masks aten::where builds float32, as torch
 * does), and the steps that compute masks, position biases
 * and rotary tables from the input's size only are memoised: a run after
 * the second takes their values instead of running them. The models are
 * written by the test venv's torch and transformers
 * (make-aten-transformer.py), traced and exported (.pt2): T5's encoder,
 * Llama with eager attention, and a module whose patterns the fused
 * kernels decline (a softmax over another axis than the last, an RMSNorm
 * over the first axis) or leave to the plain kernel (a bool mask), beside
 * a causal scaled_dot_product_attention. Each file at every SIMD level
 * (the blocked attention declines at the portable one) and 1/2 threads
 * against its nodes run one by one (an observer turns the engine's
 * fusions off), and against torch's own output. */
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
  const char *model;
  const char *file;
  guint rms_norms;        /* graft::RMSNorm steps a run takes */
  guint attentions;       /* graft::ScaledDotProductAttention steps, from AVX2 on */
  const char *memoised;   /* an op whose every step is memoised, or NULL */
} ModelCase;

static const ModelCase cases[] = {
  /* (export's aranges of the sizes it fixed have constant inputs: they
   * run at plan time, runtime-fusion.c fold_constant_steps; the masks
   * built from the input are memoised) */
  { "t5", "traced.pt", 5, 0, "aten::arange" },
  { "t5", "exported.pt2", 5, 0, "aten::where" },
  { "llama", "traced.pt", 5, 2, "aten::arange" },
  { "llama", "exported.pt2", 5, 2, "aten::where" },
  { "declined", "traced.pt", 0, 0, NULL },
  { "declined", "exported.pt2", 0, 0, NULL },
};

static char *scratch;

static const char *
models (void)
{
  if (scratch == NULL)
    {
      g_autoptr(GError) error = NULL;
      scratch = graft_test_scratch_dir ("aten-transformer-XXXXXX", &error);
      g_assert_no_error (error);
      g_autofree char *python = graft_test_python ();
      g_autofree char *script = g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "tests", "runtime",
                                                  "make-aten-transformer.py", NULL);
      const char *argv[] = { python, script, scratch, NULL };
      graft_test_spawn (argv, &error);
      g_assert_no_error (error);
    }
  return scratch;
}

/* Fused calls of the patterns that op's nodes open. */
static guint
fused_calls (GraftRuntime *rt, const char *op)
{
  guint fused = 0;
  graft_test_op_calls (rt, op, &fused, NULL);
  return fused;
}

static guint
attention_calls (GraftRuntime *rt)
{
  return fused_calls (rt, "aten::matmul");
}

/* The float masks that aten::where builds of a float32 0-d tensor and a
 * Python float are float32, as in torch (and in the models' ONNX
 * exports); T5's position buckets are int64. */
static void
count_float32_where (GraftNode *node, GraftValue *value, GraftRtTensor *tensor, gpointer user_data)
{
  guint *counts = user_data;
  if (strcmp (node->op, "aten::where") != 0 || tensor->kind != GRAFT_RT_TENSOR || !graft_dtype_is_float (tensor->dtype))
    return;
  counts[0]++;
  counts[1] += tensor->dtype == GRAFT_DTYPE_FLOAT32;
}

static void
check_case (gconstpointer item, GraftSimdLevel level)
{
  const ModelCase *c = item;
  g_autofree char *dir = g_build_filename (models (), c->model, NULL);
  g_autofree char *path = g_build_filename (dir, c->file, NULL);
  g_autofree char *x_path = g_build_filename (dir, "x.npy", NULL);
  g_autofree char *y_path = g_build_filename (dir, "y.npy", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  GraftGraph *graph = graft_model_get_graph (model);
  g_assert_cmpuint (graph->inputs->len, >=, 1);
  GraftValue *input = graph->inputs->pdata[0];

  g_autoptr(GHashTable) inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                        (GDestroyNotify) graft_rt_tensor_unref);
  g_hash_table_insert (inputs, input->name, graft_npy_read (x_path, &error));
  g_assert_no_error (error);
  g_autoptr(GraftRtTensor) torch_y = graft_npy_read (y_path, &error);
  g_assert_no_error (error);

  g_autoptr(GraftRuntime) nodes = NULL;
  g_autoptr(GPtrArray) reference = graft_test_run_profiled (model, inputs, 1, FALSE, &nodes);
  if (c->memoised)
    {
      guint wheres[2] = { 0, 0 };
      graft_runtime_set_observer (nodes, count_float32_where, wheres);
      g_autoptr(GPtrArray) observed = graft_test_run_again (nodes, inputs);
      g_assert_cmpuint (wheres[0], >=, 1);
      g_assert_cmpuint (wheres[1], ==, wheres[0]);
    }
  g_assert_cmpuint (fused_calls (nodes, "aten::pow"), ==, 0);
  g_assert_cmpuint (attention_calls (nodes), ==, 0);
  guint attentions = level >= GRAFT_SIMD_AVX2 ? c->attentions : 0;
  for (guint threads = 1; threads <= 2; threads++)
    {
      g_autoptr(GraftRuntime) rt = NULL;
      g_autoptr(GPtrArray) first = graft_test_run_profiled (model, inputs, threads, TRUE, &rt);
      g_autofree char *what = g_strdup_printf ("%s/%s at %s, %u threads", c->model, c->file,
                                               graft_simd_level_to_string (level), threads);
      g_test_message ("%s: RMSNorm %u, attention %u", what, fused_calls (rt, "aten::pow"), attention_calls (rt));
      g_assert_cmpuint (fused_calls (rt, "aten::pow"), ==, c->rms_norms);
      g_assert_cmpuint (attention_calls (rt), ==, attentions);
      /* the blocked attention sums in other orders than the nodes */
      float_graph_assert_outputs_close (what, first, reference, 1e-5);

      /* the second run keeps what the memoised steps computed, the third takes it */
      guint ran = c->memoised ? graft_test_op_calls (rt, c->memoised, NULL, NULL) : 0;
      g_autoptr(GPtrArray) second = graft_test_run_again (rt, inputs);
      guint ran_second = c->memoised ? graft_test_op_calls (rt, c->memoised, NULL, NULL) : 0;
      g_autoptr(GPtrArray) third = graft_test_run_again (rt, inputs);
      if (c->memoised)
        {
          g_assert_cmpuint (ran_second, >, ran);
          g_assert_cmpuint (graft_test_op_calls (rt, c->memoised, NULL, NULL), ==, ran_second);
        }
      float_graph_assert_outputs_close (what, third, first, 0);
    }
  /* the sums in another order than torch's */
  g_autoptr(GPtrArray) torch_out = g_ptr_array_new ();
  g_ptr_array_add (torch_out, torch_y);
  float_graph_assert_outputs_close (c->file, reference, torch_out, 1e-4);
}

/* A run with other shapes after memoised ones computes the masks again:
 * the shorter input's outputs are those of a runtime that never ran the
 * longer one. */
static void
check_memo_shapes (gconstpointer item)
{
  const ModelCase *c = item;
  g_autofree char *dir = g_build_filename (models (), c->model, NULL);
  g_autofree char *path = g_build_filename (dir, c->file, NULL);
  g_autofree char *x_path = g_build_filename (dir, "x.npy", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  GraftValue *input = graft_model_get_graph (model)->inputs->pdata[0];
  g_autoptr(GraftRtTensor) x = graft_npy_read (x_path, &error);
  g_assert_no_error (error);
  /* the first 5 tokens of each row */
  gint64 short_dims[2] = { x->dims[0], 5 };
  g_autoptr(GraftRtTensor) shorter = graft_rt_tensor_new (x->dtype, 2, short_dims, NULL);
  for (gint64 b = 0; b < x->dims[0]; b++)
    memcpy ((char *) shorter->data + b * 5 * graft_dtype_get_size (x->dtype),
            (const char *) x->data + b * x->dims[1] * graft_dtype_get_size (x->dtype),
            5 * graft_dtype_get_size (x->dtype));
  g_autoptr(GHashTable) long_inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                             (GDestroyNotify) graft_rt_tensor_unref);
  g_hash_table_insert (long_inputs, input->name, graft_rt_tensor_ref (x));
  g_autoptr(GHashTable) short_inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                              (GDestroyNotify) graft_rt_tensor_unref);
  g_hash_table_insert (short_inputs, input->name, graft_rt_tensor_ref (shorter));

  g_autoptr(GraftRuntime) fresh = graft_runtime_new (model, &error);
  g_assert_no_error (error);
  g_autoptr(GPtrArray) want = graft_test_run_again (fresh, short_inputs);
  g_autoptr(GraftRuntime) rt = graft_runtime_new (model, &error);
  g_assert_no_error (error);
  for (guint k = 0; k < 3; k++)
    {
      g_autoptr(GPtrArray) unused = graft_test_run_again (rt, long_inputs);
    }
  g_autoptr(GPtrArray) got = graft_test_run_again (rt, short_inputs);
  float_graph_assert_outputs_close (c->file, got, want, 0);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  graft_test_require_venv ();
  graft_test_add_checks_at_levels ("/aten-transformer", cases, sizeof cases[0], G_N_ELEMENTS (cases), check_case);
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    if (cases[i].memoised && strcmp (cases[i].file, "traced.pt") == 0)
      {
        g_autofree char *name = g_strdup_printf ("/aten-transformer/memo-other-shapes/%s", cases[i].model);
        g_test_add_data_func (name, &cases[i], check_memo_shapes);
      }
  return g_test_run ();
}
