/* Fixes for a deployment target: where a known rewrite makes nodes that a
 * target (analysis/deploy-target.h) rejects supported — fix the dynamic
 * input dims, fold the shape math that then became constant, give index
 * inputs as int32, decompose LayerNormalization or Erf into ops the target
 * has — the rows of the edit operation table (edit/edit-operation.h) that
 * do it. Each fix is tried on a copy of the model, after the fixes before
 * it, and kept only when the target check then rejects fewer nodes; the
 * model itself is only read. The edits are ordinary table operations, so
 * the CLI and the window apply them through their edit history (undoable)
 * and a recipe saves and replays them. */
#pragma once

#include "edit/edit.h"
#include "lint/target-check.h"

G_BEGIN_DECLS

typedef struct {
  const char *id;             /* the rule: "static-shapes", "fold-constants", "int32-indices",
                               * "decompose-layer-normalization", "decompose-erf" */
  char *title;                /* "Fix the dynamic dims (batch=1)" */
  GPtrArray *operations;      /* GVariant* (sa{sv}): table id and parameters, applied in order */
  guint unsupported_before, unsupported_after;   /* nodes the target rejects, verified on the copy */
  guint partitions_before, partitions_after;
} GraftTargetFix;

typedef struct {
  const GraftDeployTarget *target;
  GPtrArray *fixes;           /* GraftTargetFix*, in the order they apply */
  /* The target check before and after every fix (on the copy). */
  guint nodes_before, supported_before, partitions_before;
  guint nodes_after, supported_after, partitions_after;
} GraftTargetFixPlan;

/* The fixes for model on target. dim_sizes (symbol → gint64*, may be NULL)
 * sizes the symbolic input dims that static-shapes fixes; a symbol it
 * does not name becomes 1. NULL with error when the target reads another
 * kind of graph. A plan without fixes is no error. */
GraftTargetFixPlan *graft_target_fix_plan_new (GraftModel *model, const GraftDeployTarget *target,
                                               GHashTable *dim_sizes, GError **error);
void graft_target_fix_plan_free (GraftTargetFixPlan *plan);

/* The fix's edits, new and not applied (GraftEdit*), to apply in order. */
GPtrArray *graft_target_fix_new_edits (const GraftTargetFix *fix, GError **error);

/* "2 fixes: 10 → 5 partitions, 95/127 → 98/104 nodes on ort-nnapi" */
char *graft_target_fix_plan_summary (const GraftTargetFixPlan *plan);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftTargetFixPlan, graft_target_fix_plan_free)

G_END_DECLS
