/* Proving an edited model at sizes it was not traced with.
 *
 * After a dim was made dynamic (or an input's shape was changed), a repair
 * that looks right can still be wrong: a constant left holding the traced
 * size, a product (8 = batch × heads = 2 × 4) read the wrong way round. The
 * check runs the model at other sizes of each changed dim, at 1 (2 for a
 * dim traced at 1) and at a prime above the traced size (distinct per dim,
 * so that products cannot coincide; above, so that what only works up to
 * the traced size shows), and at the input's current size when fixed:
 *  - symbolic: shape inference with the sizes filled in must accept every
 *    node and give each output its expected shape (the edited model's
 *    symbolic output shape, evaluated);
 *  - concrete: Graft's runtime runs the model on random inputs and the
 *    outputs have those shapes;
 *  - batch invariance, for a dim the user calls a batch: N different
 *    samples in one batch give, per sample, what N runs at batch 1 give
 *    (within 1e-5 × the largest output magnitude).
 * A failure names the size, the node, and the nearest constant upstream
 * that still holds the traced size. Everything runs on copies: the model
 * is only read.
 */
#pragma once

#include "ir/model.h"

G_BEGIN_DECLS

typedef struct {
  const char *input;    /* graph input name */
  int axis;
  gint64 traced;        /* the dim's size before the edit; 0 when unknown */
  gboolean batch;       /* samples along it must not mix */
} GraftDimCheckDim;

typedef struct {
  gboolean passed;
  gboolean complete;    /* FALSE when a part could not be checked (the lines say which) */
  GPtrArray *lines;     /* char*: each check and its outcome, for the CLI and the GUI */
  char *failure;        /* the first failure in one sentence; NULL when passed */
  char *failed_node;    /* the node to look at: the one whose constant still holds a
                         * traced size, else the one that failed; may be NULL */
  guint n_runs;         /* concrete runs done (0: the runtime could not run the model) */
  GPtrArray *sizes;     /* char*: each size the model passed at ("batch=1, seq=1"), in order */
  gboolean batch_invariant; /* the batch invariance check ran and passed */
} GraftDimCheck;

/* NULL with error only when the dims themselves are wrong (no such input
 * or axis); a model that fails is a GraftDimCheck with passed FALSE. */
GraftDimCheck *graft_dim_check_run (GraftModel *model, const GraftDimCheckDim *dims, guint n_dims, GError **error);
void graft_dim_check_free (GraftDimCheck *check);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftDimCheck, graft_dim_check_free)

G_END_DECLS
