/* Reduce a failing model to a small subgraph that still fails the same
 * way, as Polygraphy's `debug reduce` does, in Graft's runtime.
 *
 * The model (ONNX, or TorchScript/.pt2 lowered to ONNX first) runs once on
 * the given inputs and every value is recorded. A candidate is a set of
 * the main graph's nodes: its inputs are the values it reads from outside
 * (fed from the recording, or from the reference when comparing, so that
 * a candidate fails only by what its own nodes compute), its outputs the
 * values it computes that the rest of the graph reads; nodes computing
 * constants (Constant, and nodes reading initializers only) come along
 * with their consumers. The search:
 *   1. bisection over the topological order for the shortest failing
 *      prefix [0, end), then the latest start with [start, end) failing
 *      (O(log N) runs each);
 *   2. node-by-node shrinking: drop each node in turn while the rest
 *      still fails, until nothing more can go.
 * The result is a model extracted from the original (node names, groups
 * and attributes kept; inputs and outputs typed), which fails the same way
 * on the inputs graft_reduce_get_result_inputs() gives. */
#pragma once

#include "runtime/runtime.h"

G_BEGIN_DECLS

typedef enum {
  GRAFT_REDUCE_FAILS_IN_GRAFT,  /* Graft's runtime reports an error (of the same kind as the whole model's) */
  GRAFT_REDUCE_NONFINITE,       /* a value computed from finite inputs holds NaN or Inf */
  GRAFT_REDUCE_MISMATCH,        /* a computed value differs from the reference's value of that name */
  GRAFT_REDUCE_COMMAND,         /* a command run on the candidate's file exits with a non-zero status */
} GraftReduceCondition;

typedef struct _GraftReduce GraftReduce;

/* model: an ONNX model (borrowed, must outlive the reducer); inputs: its
 * graph inputs by name (GraftRtTensor*, references are taken). */
GraftReduce *graft_reduce_new (GraftModel *model, GraftReduceCondition condition, GHashTable *inputs);
void graft_reduce_free (GraftReduce *self);

/* For GRAFT_REDUCE_MISMATCH: reference values by value name (see
 * debug/reference-values.h; references are taken) and the tolerance. */
void graft_reduce_set_reference (GraftReduce *self, GHashTable *values, double rtol, double atol);
/* For GRAFT_REDUCE_COMMAND: run through /bin/sh -c, "{model}" replaced by
 * the candidate's file (quoted for the shell). */
void graft_reduce_set_command (GraftReduce *self, const char *command);

/* Called after each candidate run: runs so far and the nodes of the
 * smallest failing candidate yet. From the thread running the search. */
typedef void (*GraftReduceProgressFunc) (guint runs, guint kept_nodes, gpointer user_data);

/* Runs the search. Fails when the whole model does not fail (there is
 * nothing to reduce), when cancelled, or when a candidate cannot be built.
 * Returns the reduced model (owned; it shares the model's tensors, so it
 * must not outlive it). */
GraftModel *graft_reduce_run (GraftReduce *self, GraftReduceProgressFunc progress, gpointer progress_data,
                              GCancellable *cancellable, GError **error);

/* After a run: candidates evaluated, nodes of the model's main graph, the
 * reduced model's nodes (names of the original nodes it kept, borrowed),
 * what the reduced model's failure is ("planted_div_output holds 51702
 * NaN, 48650 Inf"), and its inputs by name (GraftRtTensor*, borrowed). */
guint graft_reduce_get_n_runs (GraftReduce *self);
guint graft_reduce_get_n_original_nodes (GraftReduce *self);
GPtrArray *graft_reduce_get_kept_nodes (GraftReduce *self);
const char *graft_reduce_get_failure (GraftReduce *self);
GHashTable *graft_reduce_get_result_inputs (GraftReduce *self);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftReduce, graft_reduce_free)

G_END_DECLS
