/* Numeric diff: runs both models of an alignment in Graft's runtime on the
 * same inputs and compares every matched value (the graph outputs and the
 * intermediates of matched nodes) as the runs produce them.
 *
 * A value is close when every element satisfies |a − b| ≤ atol + rtol·|a|
 * (numpy's allclose with A as the reference); max_rel is max_abs divided
 * by the largest magnitude in A's value, so it reads as "1e-5 of the
 * value's scale". Values of different shapes are divergent. A run that
 * fails (an input shape the traced model cannot take) is a result: its
 * message is kept, and the values compared up to there stay. */
#pragma once

#include "compare/alignment.h"
#include "runtime/runtime.h"

G_BEGIN_DECLS

typedef struct {
  GraftValue *a;
  GraftValue *b;
  gboolean compared;         /* both models computed it */
  gboolean close;
  gboolean shape_differs;    /* then shape_a / shape_b say how */
  char *shape_a;
  char *shape_b;
  double max_abs;
  double max_rel;
  guint order;               /* position in A's run (topological) */
} GraftValueError;

typedef struct {
  char *label;               /* the input shapes: "x: 2×4" */
  GArray *values;            /* GraftValueError, in A's run order */
  gint first_divergent;      /* index in values, or -1 */
  gboolean outputs_close;    /* every graph output computed on both sides and close */
  guint n_compared;
  guint n_divergent;
  char *error_a;             /* the run of A failed: why; NULL if it ran */
  char *error_b;
  GraftNode *failed_a;       /* the node of A's main graph whose run failed, when the error names one */
  GraftNode *failed_b;
  double seconds_a;          /* time of the observed runs */
  double seconds_b;
} GraftNumericRun;

void graft_numeric_run_free (GraftNumericRun *run);
/* One clause for a run, naming the models by file name: "at x: 2×3 the
 * outputs agree", "at x: 4×3 they differ from aten::view (view_3 ↔ view_6)
 * onwards", "at x: 5×3 b.onnx fails: …". */
char *graft_numeric_run_describe (GraftNumericRun *run, GraftAlignment *alignment);

/* The value pair of the first divergent value, or NULL. */
const GraftValueError *graft_numeric_run_get_first_divergent (GraftNumericRun *run);

typedef struct _GraftNumericDiff GraftNumericDiff;

/* Plans both models for the runtime (the error names the model and the
 * unsupported ops). The alignment is borrowed. */
GraftNumericDiff *graft_numeric_diff_new (GraftAlignment *alignment, double rtol, double atol, GError **error);
void graft_numeric_diff_free (GraftNumericDiff *self);

/* A's inputs to feed (GraftValue*), and the input of B fed with the same
 * tensor (NULL when B has no counterpart, which makes runs fail). */
GPtrArray *graft_numeric_diff_get_inputs (GraftNumericDiff *self);
GraftValue *graft_numeric_diff_get_partner_input (GraftNumericDiff *self, GraftValue *input_a);

/* Runs both on inputs (A's input name → GraftRtTensor*, borrowed). Fails
 * only when an input is missing; a model failing on them is reported in
 * the result. */
GraftNumericRun *graft_numeric_diff_run (GraftNumericDiff *self, GHashTable *inputs, const char *label, GError **error);

/* Compares b with a, the reference (|a − b| ≤ atol + rtol·|a| element by
 * element, NaN only against NaN): sets e's compared, close, shape_differs
 * with shape_a/shape_b (owned by e), max_abs and max_rel. Strings and
 * sequences are not compared. */
void graft_value_error_compare (const GraftRtTensor *a, const GraftRtTensor *b, double rtol, double atol,
                                GraftValueError *e);

/* Runs rt on inputs (borrowed) and compares every value it computes with
 * the reference's tensor of the same name (char* → GraftRtTensor*, such as
 * a folder of .npy values, debug/reference-values.h), the reference in A's
 * place: each GraftValueError has the run's value as both a and b. Values
 * without a reference are not listed; a failing run is kept in error_a. */
GraftNumericRun *graft_numeric_run_against_reference (GraftRuntime *rt, GHashTable *inputs, GHashTable *reference,
                                                      double rtol, double atol, const char *label);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftNumericDiff, graft_numeric_diff_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftNumericRun, graft_numeric_run_free)

G_END_DECLS
