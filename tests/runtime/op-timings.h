/* Reading a runtime's profile in the kernel tests: how often nodes of an
 * op ran, and how often as the first of a fused pattern. */
#pragma once

#include <string.h>
#include "runtime/runtime.h"

/* Calls of nodes of op in rt's timings (graft_runtime_set_profiling);
 * *fused, when not NULL: how many of them ran the fused operator of a
 * pattern they open, whose name *fused_op gets (NULL if none did). */
static inline guint
graft_test_op_calls (GraftRuntime *rt, const char *op, guint *fused, const char **fused_op)
{
  GArray *timings = graft_runtime_get_timings (rt);
  guint calls = 0, fused_calls = 0;
  const char *fused_name = NULL;
  for (guint i = 0; i < timings->len; i++)
    {
      GraftNodeTiming *t = &g_array_index (timings, GraftNodeTiming, i);
      if (strcmp (t->node->op, op) != 0)
        continue;
      calls += t->calls;
      fused_calls += t->fused_calls;
      if (t->fused_calls)
        fused_name = t->fused_op;
    }
  if (fused)
    *fused = fused_calls;
  if (fused_op)
    *fused_op = fused_name;
  return calls;
}

/* Calls of nodes of op in rt's timings that only forwarded their input
 * (the Conv before them applied them: a fused activation). */
static inline guint64
graft_test_op_forwarded (GraftRuntime *rt, const char *op)
{
  GArray *timings = graft_runtime_get_timings (rt);
  guint64 forwarded = 0;
  for (guint i = 0; i < timings->len; i++)
    {
      GraftNodeTiming *t = &g_array_index (timings, GraftNodeTiming, i);
      if (strcmp (t->node->op, op) == 0)
        forwarded += t->forwarded_calls;
    }
  return forwarded;
}

/* A run of rt on its input "x" (a copy of x's numel floats, of rank and
 * dims): the outputs, and how many of op's nodes ran the fused operator
 * of a pattern they open during it (*fused_op: its name, or NULL). */
static inline GPtrArray *
graft_test_run_x_counting (GraftRuntime *rt, const char *op, const float *x, int rank, const gint64 *dims,
                           guint *fused, const char **fused_op)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GHashTable) inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                        (GDestroyNotify) graft_rt_tensor_unref);
  GraftRtTensor *xt = graft_rt_tensor_new (GRAFT_DTYPE_FLOAT32, rank, dims, NULL);
  memcpy (xt->data, x, xt->nbytes);
  g_hash_table_insert (inputs, (gpointer) "x", xt);
  guint before, after;
  graft_test_op_calls (rt, op, &before, NULL);
  GPtrArray *out = graft_runtime_run (rt, inputs, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  graft_test_op_calls (rt, op, &after, fused_op);
  *fused = after - before;
  return out;
}

static inline void
graft_test_ignore_value (GraftNode *node, GraftValue *value, GraftRtTensor *tensor, gpointer user_data)
{
}

/* A profiled run of model at threads, with the engine's fusions or (an
 * observer makes every node run on its own, as `graft-cli run --validate`
 * does) without; *rt_out gets the runtime for its timings. */
static inline GPtrArray *
graft_test_run_profiled (GraftModel *model, GHashTable *inputs, guint threads, gboolean fusion, GraftRuntime **rt_out)
{
  g_autoptr(GError) error = NULL;
  GraftRuntime *rt = graft_runtime_new (model, &error);
  g_assert_no_error (error);
  if (!fusion)
    graft_runtime_set_observer (rt, graft_test_ignore_value, NULL);
  graft_runtime_set_n_threads (rt, threads);
  graft_runtime_set_profiling (rt, TRUE);
  GPtrArray *result = graft_runtime_run (rt, inputs, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  *rt_out = rt;
  return result;
}

/* Another run of rt (its profile counting on). */
static inline GPtrArray *
graft_test_run_again (GraftRuntime *rt, GHashTable *inputs)
{
  g_autoptr(GError) error = NULL;
  GPtrArray *outputs = graft_runtime_run (rt, inputs, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  return outputs;
}
