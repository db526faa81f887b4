/* One model under two deployment targets, or two models (an export and
 * its fixed copy) under one: each side checked against its target
 * (lint/target-check.h) and the aligned nodes (compare/alignment.h)
 * the two verdicts decide differently. graft-cli diff --target and the
 * compare window read it. */
#pragma once

#include "compare/alignment.h"
#include "lint/target-check.h"

G_BEGIN_DECLS

typedef struct {
  GraftNode *a, *b;                   /* a matched pair; one is NULL for a node only on its side */
  const GraftNodeSupport *on_a, *on_b;/* the verdicts (borrowed from the reports), NULL where a or b is */
} GraftTargetDifference;

typedef struct {
  GraftTargetReport *a, *b;           /* side A under its target, side B under its own */
  GArray *differences;                /* GraftTargetDifference, in A's graph order, then B's unmatched nodes */
} GraftTargetDiff;

/* Checks al's models against target_a and target_b (the same target for
 * both sides when comparing two models); NULL with error when a target
 * reads another kind of graph. The models are only read. */
GraftTargetDiff *graft_target_diff_new (GraftAlignment *al, const GraftDeployTarget *target_a,
                                        const GraftDeployTarget *target_b, GError **error);
void graft_target_diff_free (GraftTargetDiff *diff);

/* "runs on ort-nnapi (partition 2)", "falls back: onnx::Erf is not in
 * ort-nnapi's operator list", "no counterpart" (support NULL). */
char *graft_target_difference_describe (const GraftNodeSupport *support, const GraftDeployTarget *target);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftTargetDiff, graft_target_diff_free)

G_END_DECLS
