/* Shared by the rule files of model/analysis. */
#pragma once

#include "lint/diagnostics.h"

G_BEGIN_DECLS

GraftDiagnostic *graft_diagnostic_add (GPtrArray *list, const char *rule, GraftSeverity severity,
                                       GraftNode *node, GraftValue *value,
                                       const char *format, ...) G_GNUC_PRINTF (6, 7);

/* static-input-dim: calls report for dim 0 of every tensor input of rank
 * ≥ 2 and dim 1 of token inputs when they are fixed. */
typedef void (*GraftStaticDimFunc) (GPtrArray *list, GraftModel *model, GraftValue *input, guint position, int axis,
                                    const char *what);
void graft_check_input_dims (GraftModel *model, GPtrArray *list, GraftStaticDimFunc report);

/* The TorchScript rules (trace-*, control-flow); nothing for other formats. */
void graft_check_trace_hazards (GraftModel *model, const GraftLintOptions *options, GPtrArray *list);

/* The torch.export rules (static-input-dim for specialized dims,
 * data-dependent-shape, runtime-assertion). */
void graft_check_exported_program (GraftModel *model, GPtrArray *list);

G_END_DECLS
