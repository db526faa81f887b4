/* A comparison of two models (compare/) as the JSON object graft-cli diff
 * --json prints and the Python module's graft.diff() returns. */
#pragma once

#include "compare/alignment.h"
#include "compare/numeric-diff.h"
#include "compare/structural-diff.h"

G_BEGIN_DECLS

/* runs: GraftNumericRun* (NULL: no numeric comparison, "numeric": null);
 * equivalent: the verdict (structure and every run's outputs);
 * align_seconds: how long the alignment took. Pretty-printed. */
char *graft_diff_to_json (GraftAlignment *al, GraftStructuralDiff *sd, GPtrArray *runs, double rtol, double atol,
                          gboolean equivalent, double align_seconds);

G_END_DECLS
