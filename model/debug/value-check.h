/* NaN and Inf per value: runs a model once with every intermediate value
 * observed, keeps each value's range and its count of NaN and Inf, and
 * names the nodes that introduced a non-finite value (those whose inputs
 * were all finite), first in run order first: what `graft-cli run
 * --validate` prints and the Run pane marks. */
#pragma once

#include "runtime/runtime.h"

G_BEGIN_DECLS

typedef struct {
  GraftValue *value;         /* borrowed from the model */
  char *shape;               /* "float32[1,64,56,56]" */
  gboolean numeric;          /* FALSE for strings, sequences, empty tensors: no range */
  gint64 count;              /* elements */
  gint64 nan_count;
  gint64 inf_count;          /* +Inf and -Inf */
  double min, max;           /* over the finite elements (0 when none) */
  guint order;               /* 1-based position in the run; 0 for graph inputs and initializers */
} GraftValueRange;

/* The range of tensor, the value of value. range->shape is owned. */
void graft_value_range_compute (GraftValue *value, const GraftRtTensor *tensor, GraftValueRange *range);
void graft_value_range_clear (GraftValueRange *range);
void graft_value_range_free (GraftValueRange *range);
gboolean graft_value_range_is_finite (const GraftValueRange *range);
/* "float32[2,3] in [-1.5, 4]", "float32[2,3] in [0, 1], 12 NaN, 3 Inf". */
char *graft_value_range_describe (const GraftValueRange *range);

typedef struct {
  GArray *values;            /* GraftValueRange of the graph inputs fed, then of every computed value in run order */
  GArray *nonfinite;         /* guint indices into values of those holding NaN or Inf */
  /* indices into values of the non-finite values whose producer's inputs
   * were all finite: where NaN/Inf came from (the first is the first in run
   * order); a graph input holding NaN/Inf is listed as its own source */
  GArray *sources;
  char *run_error;           /* the run failed: why; the values up to there stay */
} GraftValueCheck;

void graft_value_check_free (GraftValueCheck *check);

/* Runs rt once on inputs (name → GraftRtTensor*, borrowed) observing every
 * value; outputs (may be NULL) gets the run's outputs, or NULL when the run
 * failed. Fails only when an input is missing; a failing run is reported
 * in the result. */
GraftValueCheck *graft_value_check_run (GraftRuntime *rt, GHashTable *inputs, GCancellable *cancellable,
                                        GPtrArray **outputs, GError **error);

/* The ranges of node's inputs (GraftValueRange*, owned; NULL entries for
 * omitted inputs): computed values from the check, initializers read from
 * the model. */
GPtrArray *graft_value_check_get_input_ranges (GraftValueCheck *check, GraftNode *node);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftValueCheck, graft_value_check_free)

G_END_DECLS
