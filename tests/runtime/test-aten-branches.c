/* A scripted module's prim::If whose condition its attributes fix (`if
 * self.use_res_connect:`, stochastic depth's eval-mode early return and
 * its checks of its p and mode) runs
 * the branch it takes as steps of the graph holding it, where the fusions
 * see them: MobileNet's and EfficientNet's `result += input` under such
 * an If is a residual of the convolution before it (runtime-plan.c
 * register_graph, runtime-fusion.c plan_sole_reader). Declined: an If on
 * the input's values keeps its branch as a subgraph, and an aten::add_
 * whose mutated input a later node reads by its old name is no residual.
 * The model is written by the test venv's torch (make-aten-branches.py);
 * the fused run is checked against its nodes run one by one (an observer
 * turns the fusions and the inlining's skips off) and against torch. */
#include <string.h>
#include "loader.h"
#include "runtime/npy.h"
#include "ir/fixed-branch.h"
#include "runtime/runtime.h"
#include "../test-python.h"
#include "../test-scratch.h"
#include "float-graph.h"
#include "op-timings.h"

static char *scratch;

static const char *
models (void)
{
  if (scratch == NULL)
    {
      g_autoptr(GError) error = NULL;
      scratch = graft_test_scratch_dir ("aten-branches-XXXXXX", &error);
      g_assert_no_error (error);
      g_autofree char *python = graft_test_python ();
      g_autofree char *script = g_build_filename (g_getenv ("GRAFT_SOURCE_DIR"), "tests", "runtime",
                                                  "make-aten-branches.py", NULL);
      const char *argv[] = { python, script, scratch, NULL };
      graft_test_spawn (argv, &error);
      g_assert_no_error (error);
    }
  return scratch;
}

/* The timing of the one node of op whose name starts with prefix and
 * whose graph is the main graph (main) or a subgraph (!main). */
static GraftNodeTiming *
timing_of (GraftRuntime *rt, const char *prefix, const char *op, gboolean main)
{
  GArray *timings = graft_runtime_get_timings (rt);
  GraftNodeTiming *found = NULL;
  for (guint i = 0; i < timings->len; i++)
    {
      GraftNodeTiming *t = &g_array_index (timings, GraftNodeTiming, i);
      if (strcmp (t->node->op, op) != 0 || !g_str_has_prefix (t->node->name, prefix) ||
          (t->node->graph->parent_node == NULL) != main)
        continue;
      g_assert_null (found);
      found = t;
    }
  g_assert_nonnull (found);
  return found;
}

/* The calls of op's nodes whose names start with prefix, in the main
 * graph and the branches inlined into it (main_only) or anywhere. */
static guint
calls_of (GraftRuntime *rt, const char *op, const char *prefix, gboolean main_only)
{
  GArray *timings = graft_runtime_get_timings (rt);
  guint calls = 0;
  for (guint i = 0; i < timings->len; i++)
    {
      GraftNodeTiming *t = &g_array_index (timings, GraftNodeTiming, i);
      gboolean in_main = TRUE;
      for (GraftGraph *g = t->node->graph; g->parent_node; g = g->parent_graph)
        in_main &= graft_if_get_fixed_branch (g->parent_node) == g;
      if (strcmp (t->node->op, op) == 0 && g_str_has_prefix (t->node->name, prefix) && (in_main || !main_only))
        calls += t->calls;
    }
  return calls;
}

static guint
ifs_run (GraftRuntime *rt, const char *prefix)
{
  return calls_of (rt, "prim::If", prefix, FALSE);
}

static void
test_branches (void)
{
  g_autofree char *path = g_build_filename (models (), "scripted.pt", NULL);
  g_autofree char *x_path = g_build_filename (models (), "x.npy", NULL);
  g_autofree char *y_path = g_build_filename (models (), "y.npy", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftModel) model = graft_model_load (path, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_autoptr(GHashTable) inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                        (GDestroyNotify) graft_rt_tensor_unref);
  g_hash_table_insert (inputs, (gpointer) "x", graft_npy_read (x_path, &error));
  g_assert_no_error (error);
  g_autoptr(GraftRtTensor) torch_y = graft_npy_read (y_path, &error);
  g_assert_no_error (error);

  g_autoptr(GraftRuntime) nodes = NULL;
  g_autoptr(GPtrArray) reference = graft_test_run_profiled (model, inputs, 1, FALSE, &nodes);
  /* one by one, every If runs and no add forwards */
  g_assert_cmpuint (timing_of (nodes, "r1/", "prim::If", TRUE)->calls, ==, 1);
  g_assert_cmpuint (graft_test_op_forwarded (nodes, "aten::add_"), ==, 0);
  for (guint threads = 1; threads <= 2; threads++)
    {
      g_autoptr(GraftRuntime) rt = NULL;
      g_autoptr(GPtrArray) fast = graft_test_run_profiled (model, inputs, threads, TRUE, &rt);
      g_autofree char *what = g_strdup_printf ("scripted.pt, %u threads", threads);
      /* `if self.use_res_connect:` inlined: no If step, and the add_ in
       * its branch (r1's behind stochastic depth's fixed If too) is the
       * residual of the convolution before */
      g_assert_cmpuint (timing_of (rt, "r1/", "prim::If", TRUE)->calls, ==, 0);
      g_assert_cmpuint (timing_of (rt, "r2/", "prim::If", TRUE)->calls, ==, 0);
      g_assert_cmpuint (timing_of (rt, "r1/add_", "aten::add_", FALSE)->forwarded_calls, ==, 1);
      g_assert_cmpuint (timing_of (rt, "r2/add_", "aten::add_", FALSE)->forwarded_calls, ==, 1);
      /* stochastic depth's checks compare its fixed p and mode with
       * constants (`p < 0.0 or p > 1.0`, `mode not in ["batch", "row"]`):
       * fixed conditions too, whose raising branches never run */
      g_assert_cmpuint (ifs_run (rt, "r1.stochastic_depth/"), ==, 0);
      g_assert_cmpuint (ifs_run (nodes, "r1.stochastic_depth/"), >=, 5);
      /* module attributes and constants (a Conv2d's bias, None; a
       * BatchNorm2d's training flag) are plan constants, not steps */
      g_assert_cmpuint (calls_of (rt, "prim::GetAttr", "", TRUE), ==, 0);
      g_assert_cmpuint (calls_of (rt, "prim::Constant", "", TRUE), ==, 0);
      g_assert_cmpuint (calls_of (nodes, "prim::GetAttr", "", TRUE), >, 10);
      /* r3's If takes its empty branch; the subgraph below reads its output */
      g_assert_cmpuint (timing_of (rt, "r3/", "prim::If", TRUE)->calls, ==, 1);
      /* declined: the If on the input's values runs its branch as a subgraph */
      g_assert_cmpuint (timing_of (rt, "If_", "prim::If", TRUE)->calls, ==, 1);
      g_assert_cmpuint (timing_of (rt, "c4/", "aten::conv2d", FALSE)->calls, ==, 1);
      /* declined: y.add_(x) then y read: the add runs */
      GraftNodeTiming *mutated = timing_of (rt, "add_", "aten::add_", TRUE);
      g_assert_cmpuint (mutated->calls, ==, 1);
      g_assert_cmpuint (mutated->forwarded_calls, ==, 0);
      float_graph_assert_outputs_close (what, fast, reference, 1e-6);
    }
  g_autoptr(GPtrArray) torch_out = g_ptr_array_new ();
  g_ptr_array_add (torch_out, torch_y);
  float_graph_assert_outputs_close ("scripted.pt against torch", reference, torch_out, 1e-4);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  graft_test_require_venv ();
  g_test_add_func ("/aten-branches/inlined-and-declined", test_branches);
  return g_test_run ();
}
