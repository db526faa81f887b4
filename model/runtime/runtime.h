/* Graft's CPU reference runtime: plans and runs a model's main graph.
 *
 * graft_runtime_new() plans once (topological order, value liveness,
 * kernel lookup for every node including subgraphs) and refuses models
 * with unsupported operators, naming them. graft_runtime_run() may then
 * be called many times; buffers are recycled between runs.
 *
 * For a GUI: graft_runtime_run_async() runs on a worker thread, reports
 * progress per node, honours a GCancellable, and the per-node timings of
 * the last run are kept (graft_runtime_get_timings()).
 */
#pragma once

#include <gio/gio.h>
#include "ir/model.h"
#include "runtime/precision.h"
#include "runtime/rt-tensor.h"

G_BEGIN_DECLS

typedef struct _GraftRuntime GraftRuntime;

/* Lists every node (main graph and subgraphs) that the runtime cannot
 * run; *unsupported receives GraftNode* (not owned, empty if all are
 * supported). Returns FALSE only on errors other than unsupported ops. */
gboolean graft_runtime_check_supported (GraftModel *model, GPtrArray **unsupported, GError **error);
/* "onnx::Foo (opset 17) ×2, aten::bar" for an array of unsupported nodes. */
char *graft_runtime_describe_unsupported (GraftModel *model, GPtrArray *unsupported);
/* TRUE if the runtime has a kernel for op at opset (opset -1: any). */
gboolean graft_runtime_supports_op (const char *op, gint64 opset);

GraftRuntime *graft_runtime_new (GraftModel *model, GError **error);
void graft_runtime_free (GraftRuntime *self);

GraftModel *graft_runtime_get_model (GraftRuntime *self);

/* Limits of one run, each 0 for none: wall-clock seconds, and bytes held by
 * runtime tensors (the process's, graft_rt_tensor_get_live_bytes(), string
 * text included). A run past either stops with GRAFT_RUNTIME_ERROR_TOO_LARGE
 * naming the limit and the node. Defaults: GRAFT_RUNTIME_DEFAULT_SECONDS
 * and three quarters of the physical memory. */
#define GRAFT_RUNTIME_DEFAULT_SECONDS 3600.0
void graft_runtime_set_limits (GraftRuntime *self, double seconds, guint64 bytes);
void graft_runtime_get_limits (GraftRuntime *self, double *seconds, guint64 *bytes);

/* Worker threads for kernels and BLAS (default 1). */
void graft_runtime_set_n_threads (GraftRuntime *self, guint n_threads);
guint graft_runtime_get_n_threads (GraftRuntime *self);

/* The precision of products against constant weights (runtime/precision.h;
 * default f32). FALSE, with the precision unchanged, when this CPU cannot
 * compute in it (graft_precision_available). */
gboolean graft_runtime_set_precision (GraftRuntime *self, GraftPrecision precision, GError **error);
GraftPrecision graft_runtime_get_precision (GraftRuntime *self);

/* Whether what kernels derive from constant weights (packed filters and
 * matrices) is kept between runs (the default) or made in each run and
 * freed at once: a runtime that runs a few times (the proof of an edit)
 * then never holds a model's weights twice. Turning it off frees what is
 * kept; like graft_runtime_get_folded_weight_bytes() it waits for a run
 * under way, so neither is for an observer or a progress callback. */
void graft_runtime_set_keep_derived_weights (GraftRuntime *self, gboolean keep);

/* Bytes of weights the runtime computed itself and holds now: batch_norms
 * folded into the aten convolutions before them. Such a weight is
 * computed when a kernel first reads it and given back once what the
 * kernel derived from it (a packed filter) is kept, so that a run does
 * not hold the model's weight, the folded one and the packed one at once. */
guint64 graft_runtime_get_folded_weight_bytes (GraftRuntime *self);

/* Bytes of the model's weights whose pages the runtime gave back, holding
 * them packed for its kernels (a MatMul's or Gemm's constant B) while
 * they can be read again from the model file. Only when the runtime is
 * the model's only holder (graft-cli run drops its own reference): a
 * window showing the model keeps every weight. A kernel at a shape the
 * packed copy does not serve, or graft_tensor_get_data(), reads a weight
 * in again (an error if the file has changed since), and it then stays. */
guint64 graft_runtime_get_given_back_bytes (GraftRuntime *self);

/* Graph inputs that must be fed (those without an initializer), GraftValue*. */
GPtrArray *graft_runtime_get_inputs (GraftRuntime *self);
GPtrArray *graft_runtime_get_outputs (GraftRuntime *self);

/* Checks a tensor against the declared type of input value (dtype, rank,
 * fixed dims); the error names the input and the expected shape. */
gboolean graft_runtime_check_input (GraftRuntime *self, GraftValue *input, GraftRtTensor *tensor, GError **error);

typedef void (*GraftRuntimeProgressFunc) (guint done_nodes, guint total_nodes, gpointer user_data);

typedef struct {
  GraftNode *node;
  double seconds;          /* summed over runs since the last reset */
  /* the CPU time of every runtime thread while the node ran, summed:
   * unlike seconds (wall clock), not inflated by waiting for a core on a
   * busy machine; at several threads it counts workers waiting too */
  double cpu_seconds;
  guint64 calls;
  /* calls in which node ran as the first of a pattern of nodes fused into
   * one operator (fused_op, "graft::…"): seconds include the whole
   * pattern, whose other nodes have no calls of their own then */
  guint64 fused_calls;
  const char *fused_op;
  /* calls in which node only passed its input on: the Conv before it had
   * applied it (a fused Relu/Clip, SiLU, HardSwish or residual Add) */
  guint64 forwarded_calls;
} GraftNodeTiming;

/* Keeps the BLAS library single-threaded for the whole process: the
 * runtime splits products over its own worker pool, and OpenBLAS's
 * pthread build starts server threads as it loads, each spinning in
 * sched_yield for about 0.1 s before it sleeps. Called first thing by
 * graft-cli and the application (and by every run). */
void graft_runtime_quiet_blas (void);

/* Runs the main graph. inputs: char* name → GraftRtTensor* (borrowed).
 * Returns the outputs in graph output order (owned). */
GPtrArray *graft_runtime_run (GraftRuntime *self,
                              GHashTable *inputs,
                              GCancellable *cancellable,
                              GraftRuntimeProgressFunc progress,
                              gpointer progress_data,
                              GError **error);

/* Same on a worker thread; callback runs in the caller's main context.
 * progress is called from the worker thread. */
void graft_runtime_run_async (GraftRuntime *self,
                              GHashTable *inputs,
                              GCancellable *cancellable,
                              GraftRuntimeProgressFunc progress,
                              gpointer progress_data,
                              GAsyncReadyCallback callback,
                              gpointer user_data);
GPtrArray *graft_runtime_run_finish (GraftRuntime *self, GAsyncResult *result, GError **error);

/* Called after each node of the main graph runs, once per output value
 * it computed (for comparing intermediate values). While an observer is
 * set every node runs on its own (no activation or residual Add fused into
 * a Conv), so that each value is what its own node computes. The tensor is
 * borrowed: take a reference to keep it. NULL func removes the observer. */
typedef void (*GraftRuntimeObserveFunc) (GraftNode *node, GraftValue *value, GraftRtTensor *tensor, gpointer user_data);
void graft_runtime_set_observer (GraftRuntime *self, GraftRuntimeObserveFunc func, gpointer user_data);
/* Also observe the nodes of If branches and Loop bodies (a body's values
 * once per iteration), off by default. */
void graft_runtime_set_observe_subgraphs (GraftRuntime *self, gboolean enabled);
/* Also run and observe the branch an If did not take, when its condition
 * was read out of tensor values and the branch changes no list, dict or
 * attribute (writing torch.cond needs both branches' shapes); what that
 * branch computes is dropped and its failure ignored. Off by default. */
void graft_runtime_set_observe_untaken_branches (GraftRuntime *self, gboolean enabled);

/* Per-node timing collection (off by default: it costs a clock read per node). */
void graft_runtime_set_profiling (GraftRuntime *self, gboolean enabled);
/* GraftNodeTiming for every executed node (main graph nodes in run order;
 * subgraph nodes after them), borrowed until the next run or reset. */
GArray *graft_runtime_get_timings (GraftRuntime *self);
void graft_runtime_reset_timings (GraftRuntime *self);
/* t's node ran, and every time as the first node of a fused pattern:
 * its seconds are the pattern's, run as t->fused_op. */
gboolean graft_node_timing_is_fused (const GraftNodeTiming *t);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftRuntime, graft_runtime_free)

G_END_DECLS
