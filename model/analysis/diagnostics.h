/* Lint: problems that stop a model from being deployed as it is, each with
 * a stable rule id, a severity, the node and/or value it concerns and a
 * message that says what to do.
 *
 * Rules:
 *   unsupported-op          a node in a non-standard domain (error), in a
 *                           domain the model does not import (error), or
 *                           with no kernel in Graft's runtime (warning)
 *   static-input-dim        a graph input with a fixed batch (dim 0 of rank
 *                           >= 2) or sequence length (dim 1 of integer
 *                           token inputs) (warning)
 *                           torch.export: a dim export specialized, with the
 *                           dynamic_shapes / Dim(...) that keeps it dynamic
 *   data-dependent-shape    torch.export: a node that makes an unbacked size
 *                           (u0) from data: nonzero, item (info)
 *   runtime-assertion       torch.export: _assert_scalar, sym_constrain_range…
 *                           with the condition checked at run time (info)
 *   baked-shape-constant    a shape constant holding an input dim's traced
 *                           value (warning)
 *   trace-*                 (below) are warnings when the module may be a
 *                           trace (no prim::If/Loop); in scripted modules
 *                           notes, or warnings with onnx_export_target
 *   trace-python-number     TorchScript: a tensor turned into a Python
 *                           number (aten::item/Int/Float...)
 *   trace-frozen-size       TorchScript: a constant size list with a fixed
 *                           leading dim in view/reshape/expand...
 *   trace-shape-inplace     TorchScript: an in-place op on a value derived
 *                           from a shape
 *   trace-flattened-control-flow  TorchScript: aten::Bool/is_nonzero, a branch
 *                           on data decided once at trace time
 *   control-flow            TorchScript prim::If/prim::Loop (info; warning
 *                           when the target is ONNX export)
 */
#pragma once

#include "ir/model.h"

G_BEGIN_DECLS

typedef enum {
  GRAFT_SEVERITY_INFO = 0,
  GRAFT_SEVERITY_WARNING,
  GRAFT_SEVERITY_ERROR,
} GraftSeverity;

const char *graft_severity_to_string (GraftSeverity severity); /* "info", "warning", "error" */

typedef struct {
  const char *rule;        /* static string */
  GraftSeverity severity;
  GraftNode *node;         /* may be NULL; borrowed from the model */
  GraftValue *value;       /* may be NULL */
  char *node_name;         /* node->name, or "op #index" for unnamed nodes; NULL without node */
  char *message;
  /* static-input-dim and baked-shape-constant: the input dim concerned,
   * so that a GUI can offer the fix (graft_edit_new_make_dim_dynamic). */
  GraftValue *input;
  int axis;
} GraftDiagnostic;

void graft_diagnostic_free (GraftDiagnostic *diagnostic);

typedef struct {
  /* TorchScript control flow is a warning when the model is meant for
   * torch.onnx.export. */
  gboolean onnx_export_target;
} GraftLintOptions;

/* Runs shape inference and every rule. options may be NULL. Returns
 * GraftDiagnostic* ordered errors first, then by graph position. */
GPtrArray *graft_lint_model (GraftModel *model, const GraftLintOptions *options);

/* TRUE if any diagnostic has severity error. */
gboolean graft_diagnostics_have_errors (GPtrArray *diagnostics);

/* Name used for a node in messages and JSON. */
char *graft_node_display_name (GraftNode *node);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftDiagnostic, graft_diagnostic_free)

G_END_DECLS
