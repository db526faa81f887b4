/* Diagnostics (analysis/diagnostics.h) as the JSON object graft-cli lint
 * --json prints and the Python module's Model.lint() returns. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* { "diagnostics": [ { "rule", "severity", "node", "value", "message" } ] },
 * pretty-printed. */
char *graft_diagnostics_to_json (GPtrArray *diagnostics);

G_END_DECLS
