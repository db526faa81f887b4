/* Lint: problems that stop a model from being deployed as it is, each with
 * a stable rule id, a severity, the node and/or value it concerns and a
 * message that says what to do. The rules are the table of
 * lint/lint-rules.h. */
#pragma once

#include "ir/model.h"
#include "analysis/shape-inference.h"
#include "lint/deploy-target.h"
#include "edit/edit.h"

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
   * so that a GUI can offer the fix (the make-dim-dynamic edit). */
  GraftValue *input;
  int axis;
  /* unsupported-op against a deployment target: why, as
   * graft_support_reason_to_string() names it ("op", "dynamic-shape"…);
   * NULL otherwise. */
  const char *reason;
} GraftDiagnostic;

void graft_diagnostic_free (GraftDiagnostic *diagnostic);

typedef struct {
  /* TorchScript control flow is a warning when the model is meant for
   * torch.onnx.export. */
  gboolean onnx_export_target;
  /* > 0: the TorchScript model is to be converted to ONNX at this opset
   * (graft-cli convert): every op without a lowering is an unsupported-op
   * error. */
  gint64 onnx_target_opset;
  /* The model is meant for this deployment target (analysis/deploy-target.h):
   * each node the target cannot run is an unsupported-op diagnostic, a
   * warning where the target falls back to the host, else an error; the
   * checks of Graft's own runtime are left out. */
  const GraftDeployTarget *deploy_target;
  /* A plain shape inference of the model (graft_shape_inference_run()),
   * when the caller has one; rules that probe shapes build on it instead of
   * inferring the whole graph again. Borrowed; may be NULL.
   * graft_lint_model_with_inference() sets it to its own. */
  GraftInference *inference;
} GraftLintOptions;

/* Runs every rule; the model is only read, so lint may run on a worker
 * thread while a layout or a run reads the same model. options may be
 * NULL. Returns GraftDiagnostic* ordered errors first, then by graph
 * position. */
GPtrArray *graft_lint_model (GraftModel *model, const GraftLintOptions *options);
/* As graft_lint_model(), and *inference (transfer full; inference may be
 * NULL) is the model's shape inference, for a viewer that shows the
 * shapes beside the diagnostics. */
GPtrArray *graft_lint_model_with_inference (GraftModel *model, const GraftLintOptions *options,
                                            GraftInference **inference);

/* TRUE if any diagnostic has severity error. */
gboolean graft_diagnostics_have_errors (GPtrArray *diagnostics);

/* Name used for a node in messages and JSON. */
char *graft_node_display_name (GraftNode *node);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftDiagnostic, graft_diagnostic_free)

G_END_DECLS
