/* Diagnostics (lint/diagnostics.h) as the JSON object graft-cli lint
 * --json prints and the Python module's Model.lint() returns. */
#pragma once

#include <glib.h>

#include "lint/target-check.h"

G_BEGIN_DECLS

/* { "diagnostics": [ { "rule", "severity", "node", "op", "reason", "value", "message" } ] },
 * pretty-printed; with a deployment target's report (or NULL), also "target"
 * (every node's verdict) and "partitions" (their sizes and borders). */
char *graft_diagnostics_to_json (GPtrArray *diagnostics, const GraftTargetReport *report);

G_END_DECLS
