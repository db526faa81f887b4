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
