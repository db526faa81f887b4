/* A comparison of two models (compare/) as the JSON object graft-cli diff
 * --json prints and the Python module's graft.diff() returns. */
#pragma once

#include "compare/alignment.h"
#include "compare/numeric-diff.h"
#include "compare/structural-diff.h"
#include "compare/target-diff.h"

G_BEGIN_DECLS

/* runs: GraftNumericRun* (NULL: no numeric comparison, "numeric": null);
 * equivalent: the verdict (structure and every run's outputs);
 * align_seconds: how long the alignment took; targets: each side under
 * its deployment target (NULL: no "targets" member). Pretty-printed. */
char *graft_diff_to_json (GraftAlignment *al, GraftStructuralDiff *sd, GPtrArray *runs, double rtol, double atol,
                          gboolean equivalent, double align_seconds, const GraftTargetDiff *targets);

/* graft-cli diff MODEL --reference DIR --json: a run compared value by
 * value with a folder's n_reference .npy values
 * (graft_numeric_run_against_reference()). */
char *graft_reference_diff_to_json (const char *model_path, const char *reference, guint n_reference,
                                    GraftNumericRun *run);

G_END_DECLS
