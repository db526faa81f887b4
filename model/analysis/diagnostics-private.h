/* Shared by the rule files of model/analysis. */
#pragma once

#include "analysis/diagnostics.h"

G_BEGIN_DECLS

GraftDiagnostic *graft_diagnostic_add (GPtrArray *list, const char *rule, GraftSeverity severity,
                                       GraftNode *node, GraftValue *value,
                                       const char *format, ...) G_GNUC_PRINTF (6, 7);

/* The TorchScript rules (trace-*, control-flow); nothing for other formats. */
void graft_check_trace_hazards (GraftModel *model, const GraftLintOptions *options, GPtrArray *list);

G_END_DECLS
