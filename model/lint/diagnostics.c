#include "lint/diagnostics.h"
#include "ir/fixed-branch.h"
#include "ir/graph-check.h"
#include "lint/diagnostics-private.h"
#include "pte/executorch-ops.h"
#include "pte/executorch-program.h"
#include "lower/lower.h"
#include "lint/lint-rules.h"
#include "analysis/baked-shape.h"
#include "analysis/dim-check.h"
#include "analysis/shape-inference.h"
#include "lint/target-check.h"
#include "edit/edit.h"
#include "ir/graph-copy.h"
#include "ir/graph-surgery.h"
#include "runtime/op.h"
#include "runtime/runtime.h"

#include <string.h>

const char *
graft_severity_to_string (GraftSeverity severity)
{
  switch (severity)
    {
    case GRAFT_SEVERITY_ERROR: return "error";
    case GRAFT_SEVERITY_WARNING: return "warning";
    default: return "info";
    }
}

void
graft_diagnostic_free (GraftDiagnostic *diagnostic)
{
  if (diagnostic == NULL)
    return;
  g_free (diagnostic->node_name);
  g_free (diagnostic->message);
  g_free (diagnostic);
}

char *
graft_node_display_name (GraftNode *node)
{
  if (node->name != NULL && node->name[0] != '\0')
    return g_strdup (node->name);
  return g_strdup_printf ("%s #%u", node->op, node->index);
}

GraftDiagnostic *
graft_diagnostic_add (GPtrArray *list, const char *rule, GraftSeverity severity, GraftNode *node,
                      GraftValue *value, const char *format, ...)
{
  GraftDiagnostic *diagnostic;
  va_list args;

  g_return_val_if_fail (graft_lint_rule_lookup (rule) != NULL, NULL);
  diagnostic = g_new0 (GraftDiagnostic, 1);
  diagnostic->rule = rule;
  diagnostic->severity = severity;
  diagnostic->node = node;
  diagnostic->value = value;
  diagnostic->node_name = node ? graft_node_display_name (node) : NULL;
  diagnostic->axis = -1;
  va_start (args, format);
  diagnostic->message = g_strdup_vprintf (format, args);
  va_end (args);
  g_ptr_array_add (list, diagnostic);
  return diagnostic;
}

/* Domains whose operators any ONNX runtime knows. */
static gboolean
is_standard_domain (const char *domain)
{
  return domain == g_intern_static_string ("onnx") || strcmp (domain, "ai.onnx.ml") == 0
         || strcmp (domain, "ai.onnx.preview.training") == 0;
}

typedef struct {
  GraftModel *model;
  GPtrArray *list;
  GHashTable *reported;   /* op → TRUE: one "no kernel" warning per op is enough */
} OpCheck;

static void
check_op (GraftNode *node, gpointer user_data)
{
  OpCheck *check = user_data;
  GraftModel *model = check->model;
  gboolean onnx = graft_model_get_format (model) == GRAFT_MODEL_FORMAT_ONNX;
  gint64 opset = graft_model_get_opset (model, node->domain);

  if (onnx && graft_model_lookup_function (model, node->domain, node->op_type) != NULL)
    return;   /* a local function: its body is checked on its own */
  if (onnx && !is_standard_domain (node->domain))
    {
      graft_diagnostic_add (check->list, "unsupported-op", GRAFT_SEVERITY_ERROR, node, NULL,
                            "%s is in the non-standard domain '%s': only runtimes with that vendor's extension "
                            "can run it, and Graft's runtime cannot; replace it with standard ONNX operators "
                            "(or export it as a local function)", node->op, node->domain);
      return;
    }
  if (onnx && opset < 0)
    {
      graft_diagnostic_add (check->list, "unsupported-op", GRAFT_SEVERITY_ERROR, node, NULL,
                            "%s uses domain '%s', which the model does not import (no opset_import entry); "
                            "add the opset import or re-export the model", node->op, node->domain);
      return;
    }
  if (!onnx && (node->domain == g_intern_static_string ("prim")))
    return;   /* structural TorchScript nodes have no kernels of their own */
  if (!graft_runtime_supports_op (node->op, opset))
    {
      const char *range = graft_runtime_supports_op (node->op, -1) ? " at this opset" : "";
      g_autofree char *at = opset >= 0 ? g_strdup_printf (" (opset %" G_GINT64_FORMAT ")", opset) : g_strdup ("");

      if (g_hash_table_contains (check->reported, node->op))
        return;
      g_hash_table_add (check->reported, (gpointer) node->op);
      graft_diagnostic_add (check->list, "unsupported-op", GRAFT_SEVERITY_WARNING, node, NULL,
                            "Graft's runtime has no kernel for %s%s%s: the model can be inspected, edited and "
                            "exported, but 'graft-cli run' will refuse it; run it in onnxruntime (or PyTorch), or "
                            "replace the op", node->op, range, at);
    }
}

/* Ops the conversion to ONNX (model/lower) cannot write at the target opset. */
static void
check_lowering (GraftModel *model, gint64 opset, GPtrArray *list)
{
  g_autoptr(GPtrArray) problems = graft_lower_find_unsupported (model, opset, NULL);
  for (guint i = 0; i < problems->len; i++)
    {
      GraftLowerProblem *p = g_ptr_array_index (problems, i);
      graft_diagnostic_add (list, "unsupported-op", GRAFT_SEVERITY_ERROR, p->node, NULL,
                            "%s has no ONNX lowering at opset %" G_GINT64_FORMAT " (schema %s): %s", p->node->op,
                            opset, p->schema, p->help);
    }
}

/* Every node the deployment target cannot run, with the reason. */
static void
check_deploy_target (GraftModel *model, const GraftDeployTarget *target, GPtrArray *list)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftTargetReport) report = graft_target_check (model, target, NULL, &error);
  GraftSeverity severity = target->host_fallback ? GRAFT_SEVERITY_WARNING : GRAFT_SEVERITY_ERROR;

  if (report == NULL)
    {
      graft_diagnostic_add (list, "unsupported-op", GRAFT_SEVERITY_ERROR, NULL, NULL, "%s", error->message);
      return;
    }
  for (guint i = 0; i < report->nodes->len; i++)
    {
      const GraftNodeSupport *support = g_ptr_array_index (report->nodes, i);
      GraftDiagnostic *d;

      if (support->reason == GRAFT_SUPPORT_OK)
        continue;
      d = graft_diagnostic_add (list, "unsupported-op", severity, support->node, NULL, "%s%s", support->message,
                                target->host_fallback ? "; it runs on the host instead" : "");
      d->reason = graft_support_reason_to_string (support->reason);
    }
}

static void
check_ops (GraftModel *model, const GraftLintOptions *options, GPtrArray *list)
{
  OpCheck check = { model, list, g_hash_table_new (NULL, NULL) };
  GraftModelFormat format = graft_model_get_format (model);

  if (options->deploy_target != NULL)
    {
      g_hash_table_unref (check.reported);
      check_deploy_target (model, options->deploy_target, list);
      return;
    }

  if (options->onnx_target_opset > 0 &&
      (format == GRAFT_MODEL_FORMAT_TORCHSCRIPT || format == GRAFT_MODEL_FORMAT_EXPORTED_PROGRAM))
    check_lowering (model, options->onnx_target_opset, list);

  /* the runtime skips a fixed If's dead branch, so its ops are no obstacle */
  graft_graph_foreach_live_node_recursive (graft_model_get_graph (model), check_op, &check);
  for (guint i = 0; i < graft_model_get_functions (model)->len; i++)
    {
      GraftFunction *function = g_ptr_array_index (graft_model_get_functions (model), i);
      graft_graph_foreach_live_node_recursive (function->body, check_op, &check);
    }
  g_hash_table_unref (check.reported);
}

static gboolean
is_token_input (const GraftValue *value)
{
  return (value->dtype == GRAFT_DTYPE_INT64 || value->dtype == GRAFT_DTYPE_INT32) && value->shape.rank == 2;
}

static GraftDiagnostic *
add_static_dim (GPtrArray *list, GraftValue *input, int axis, const char *what)
{
  g_autofree char *shape = graft_shape_to_string (&input->shape);
  g_autofree char *symbol = graft_edit_suggest_dim_symbol (input, axis);
  GraftDiagnostic *d;

  d = graft_diagnostic_add (list, "static-input-dim", GRAFT_SEVERITY_WARNING, NULL, input,
                            "input '%s' (%s) has %s fixed at %" G_GINT64_FORMAT ", so the model only accepts "
                            "exactly that size; make it dynamic: graft-cli edit --dynamic %s:%d=%s",
                            input->name, shape, what, input->shape.dims[axis].value, input->name, axis, symbol);
  d->input = input;
  d->axis = axis;
  return d;
}

/* The symbol a trial gives a dim: not a batch by name, since lint cannot
 * know what the dim means (dim 0 of a seq-first encoder is the sequence). */
#define TRIAL_SYMBOL "lint_trial"

/* When making input:axis dynamic fails its proof (on a copy), the baked
 * size is one no rewrite repairs: say where and why, and what to change
 * in the exporter. No fix is offered (input stays NULL): it would fail. */
static gboolean
check_repairable (GraftModel *model, GraftValue *input, int axis, GPtrArray *list)
{
  g_autoptr(GraftModel) trial = graft_model_copy (model);
  g_autoptr(GraftEdit) edit = graft_edit_new_make_dim_dynamic (input->name, axis, TRIAL_SYMBOL);
  g_autoptr(GraftDimCheck) check = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *symbol = graft_edit_suggest_dim_symbol (input, axis);
  GraftNode *node = NULL;

  if (graft_edit_apply (edit, trial, &error))
    check = graft_edit_verify (edit, trial, &error);
  if (check != NULL && check->passed)
    return TRUE;
  if (check != NULL && check->failed_node != NULL)
    node = graft_graph_find_node (graft_model_get_graph (model), check->failed_node);
  graft_diagnostic_add (list, "baked-shape-constant", GRAFT_SEVERITY_WARNING, node, input,
                        "input '%s' dim %d cannot be made dynamic by a rewrite: %s. Fix it where the model is "
                        "exported: torch.onnx.export(..., dynamic_axes={'%s': {%d: '%s'}}) or torch.export "
                        "dynamic_shapes, and sizes written as x.size(%d) (not int(...) or a Python number) so that "
                        "the trace keeps them symbolic", input->name, axis,
                        check != NULL ? check->failure : error->message, input->name, axis, symbol, axis);
  return FALSE;
}

/* static-input-dim outside torch.export: the fix is offered where it
 * would succeed. */
static void
report_static_dim (GPtrArray *list, GraftModel *model, GraftValue *input, guint position, int axis, const char *what)
{
  GraftDiagnostic *d = add_static_dim (list, input, axis, what);

  if (graft_model_get_format (model) == GRAFT_MODEL_FORMAT_ONNX && !check_repairable (model, input, axis, list))
    {
      /* The edit it suggests would fail: offer none. */
      char *cut = strstr (d->message, "; make it dynamic:");
      char *message;

      if (cut != NULL)
        *cut = '\0';
      message = g_strconcat (d->message, "; graft-cli edit cannot make it dynamic (see baked-shape-constant)", NULL);
      g_free (d->message);
      d->message = message;
      d->input = NULL;
    }
}

void
graft_check_input_dims (GraftModel *model, GPtrArray *list, GraftStaticDimFunc report)
{
  GraftGraph *graph = graft_model_get_graph (model);

  for (guint i = 0; i < graph->inputs->len; i++)
    {
      GraftValue *input = g_ptr_array_index (graph->inputs, i);

      if (input->initializer != NULL || input->kind != GRAFT_VALUE_TENSOR || input->shape.rank < 2)
        continue;
      if (input->shape.dims[0].kind == GRAFT_DIM_FIXED)
        report (list, model, input, i, 0, "dim 0 (usually the batch)");
      if (is_token_input (input) && input->shape.dims[1].kind == GRAFT_DIM_FIXED)
        report (list, model, input, i, 1, "dim 1 (the sequence length of a token input)");
    }
}

/* The node of graph whose call was replaced by the body holding the node
 * named name ("CALL/BODY_NODE"), or NULL. */
static GraftNode *
call_holding (GraftGraph *graph, const char *name)
{
  GraftNode *best = NULL;

  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      gsize length = strlen (node->name);

      if (length > 0 && g_str_has_prefix (name, node->name) && name[length] == '/'
          && (best == NULL || length > strlen (best->name)))
        best = node;
    }
  return best;
}

static char *
format_int_list (const gint64 *values, guint n)
{
  GString *out = g_string_new ("[");

  for (guint i = 0; i < n; i++)
    g_string_append_printf (out, "%s%" G_GINT64_FORMAT, i ? ", " : "", values[i]);
  return g_string_free (g_string_append_c (out, ']'), FALSE);
}

static void
check_baked_shapes (GraftModel *model, const GraftLintOptions *options, GPtrArray *list)
{
  GraftGraph *graph = graft_model_get_graph (model);
  g_autoptr(GraftModel) inlined = NULL;
  GraftModel *searched = model;

  if (graft_model_get_format (model) != GRAFT_MODEL_FORMAT_ONNX)
    return;
  /* Layers exported as local functions hold their traced sizes in the
   * bodies: search a copy whose calls are replaced by their bodies, as the
   * edit does, and report a body's constant on its call. */
  if (graft_model_get_functions (model)->len > 0)
    {
      g_autoptr(GPtrArray) ignored = g_ptr_array_new_with_free_func (g_free);
      guint n;

      inlined = graft_model_copy (model);
      n = graft_edit_inline_shape_functions (inlined, ignored, NULL);
      if (n > 0 && n != G_MAXUINT)
        searched = inlined;
    }
  for (guint i = 0; i < graph->inputs->len; i++)
    {
      GraftValue *input = g_ptr_array_index (graph->inputs, i);
      GraftValue *searched_input = graft_graph_lookup_value (graft_model_get_graph (searched), input->name);

      if (input->initializer != NULL || input->kind != GRAFT_VALUE_TENSOR || searched_input == NULL)
        continue;
      for (int axis = 0; axis < input->shape.rank; axis++)
        {
          g_autoptr(GPtrArray) found = NULL;

          /* A traced 1 is indistinguishable from the many 1s of shapes. */
          if (input->shape.dims[axis].kind != GRAFT_DIM_FIXED || input->shape.dims[axis].value < 2)
            continue;
          found = searched == model && options->inference != NULL
                  ? graft_find_baked_shapes_over (model, options->inference, searched_input, axis)
                  : graft_find_baked_shapes (searched, searched_input, axis);
          for (guint k = 0; k < found->len; k++)
            {
              GraftBakedShape *baked = g_ptr_array_index (found, k);
              GraftTensor *constant = graft_value_get_constant (baked->constant);
              /* A Split before opset 13 holds its sizes in an attribute. */
              guint n_split = 0;
              const gint64 *split = constant == NULL ? graft_node_attr_ints (baked->node, "split", &n_split) : NULL;
              g_autofree char *values = constant != NULL ? graft_tensor_format_ints (constant)
                                        : format_int_list (split, n_split);
              GraftDiagnostic *d;

              g_autofree char *what = baked->node->op == g_intern_static_string ("onnx::Split")
                ? g_strdup_printf ("a part of the traced value %" G_GINT64_FORMAT " (the sizes add up to it)",
                                   baked->traced)
                : baked->multiplier == 1
                ? g_strdup_printf ("the traced value %" G_GINT64_FORMAT, baked->traced)
                : g_strdup_printf ("%" G_GINT64_FORMAT " × the traced value %" G_GINT64_FORMAT, baked->multiplier,
                                   baked->traced);

              /* Found in the copy: the same node of the model by name, else the call holding it. */
              GraftNode *node = searched == model ? baked->node : graft_graph_find_node (graph, baked->node->name);
              GraftNode *call = node == NULL ? call_holding (graph, baked->node->name) : NULL;
              GraftValue *constant_value = searched == model ? baked->constant
                                           : node != NULL && baked->shape_input < node->inputs->len
                                           ? g_ptr_array_index (node->inputs, baked->shape_input) : NULL;
              g_autofree char *where = call != NULL
                ? g_strdup_printf ("in the body of %s called by '%s', ", call->op, call->name) : g_strdup ("");

              d = graft_diagnostic_add (list, "baked-shape-constant", GRAFT_SEVERITY_WARNING,
                                        node != NULL ? node : call, constant_value,
                                        "%s%s%s%s takes the shape constant '%s' = %s, whose element %u is %s of "
                                        "input '%s' dim %d: the graph breaks when that dim changes; graft-cli edit "
                                        "--dynamic %s:%d=NAME rewrites it", where, baked->node->op,
                                        call != NULL ? " " : "",
                                        call != NULL ? baked->node->name + strlen (call->name) + 1 : "",
                                        baked->constant != NULL ? baked->constant->name : "split (attribute)",
                                        values, baked->element, what,
                                        input->name, axis, input->name, axis);
              d->input = input;
              d->axis = axis;
            }
        }
    }
}

/* static-input-dim, and in a torch.export program the rules of its own
 * (export-checks.c): specialized dims, data-dependent shapes, runtime
 * assertions. */
static void
check_input_dims (GraftModel *model, const GraftLintOptions *options, GPtrArray *list)
{
  if (graft_model_get_format (model) == GRAFT_MODEL_FORMAT_EXPORTED_PROGRAM)
    graft_check_exported_program (model, list);
  else
    graft_check_input_dims (model, list, report_static_dim);
}

static void
report_structure_problem (GraftNode *node, GraftValue *value, const char *message, gpointer user_data)
{
  graft_diagnostic_add (user_data, "invalid-graph", GRAFT_SEVERITY_ERROR, node, value, "%s", message);
}

typedef struct {
  GraftModel *model;
  GPtrArray *list;
} StructureCheck;

static void
check_node_inputs (GraftNode *node, gpointer user_data)
{
  StructureCheck *c = user_data;
  const GraftOpSchema *schema = graft_op_registry_lookup (node->op, graft_model_get_opset (c->model, node->domain));
  const char *missing = graft_op_schema_missing_first_input (schema, node);

  if (missing != NULL)
    graft_diagnostic_add (c->list, "invalid-graph", GRAFT_SEVERITY_ERROR, node, NULL,
                          "node '%s' (%s) has no input '%s', which the operator requires", node->name, node->op,
                          missing);
}

static void
check_structure (GraftModel *model, const GraftLintOptions *options, GPtrArray *list)
{
  GraftGraph *graph = graft_model_get_graph (model);
  StructureCheck c = { model, list };

  if (graph == NULL)
    return;
  graft_graph_check_structure (graph, report_structure_problem, list);
  graft_graph_foreach_node_recursive (graph, check_node_inputs, &c);
}

static void
check_portable_op (GraftNode *node, gpointer user_data)
{
  const char *op = graft_node_get_metadata (node, GRAFT_EXECUTORCH_OPERATOR_KEY);
  if (op != NULL && !graft_executorch_op_is_portable (op))
    graft_diagnostic_add (user_data, "executorch-non-portable", GRAFT_SEVERITY_WARNING, node, NULL,
                          "%s is not in ExecuTorch's portable kernel library: the runtime this program ships with "
                          "must link a kernel library that registers it", op);
}

static void
check_executorch_portable (GraftModel *model, const GraftLintOptions *options, GPtrArray *list)
{
  if (graft_model_get_format (model) == GRAFT_MODEL_FORMAT_EXECUTORCH)
    graft_graph_foreach_node_recursive (graft_model_get_graph (model), check_portable_op, list);
}

static const GraftLintRule lint_rules[] = {
  { "invalid-graph", GRAFT_SEVERITY_ERROR, "Invalid graph", "invalid",
    "a value with two producers, a cycle, an input nothing defines, or an attribute out of the range its operator "
    "needs (kernel_shape, strides, dilations > 0; pads >= 0): onnx.checker refuses the model and Graft will not run it",
    check_structure, GRAFT_LINT_FIX_NONE },
  { "unsupported-op", GRAFT_SEVERITY_ERROR, "Unsupported operator", "unsupported",
    "a node in a non-standard domain or one the model does not import (error), with no ONNX lowering at the "
    "target opset (error, --target onnx), with no kernel in Graft's runtime (warning), or that a deployment target "
    "cannot run (--target NAME: a warning where it falls back to the host, else an error)", check_ops,
    GRAFT_LINT_FIX_NONE },
  { "executorch-non-portable", GRAFT_SEVERITY_WARNING, "Outside ExecuTorch's portable kernels", "non-portable",
    "ExecuTorch .pte: an operator ExecuTorch's portable kernel library (and its prim ops) lacks, which the "
    "deployed runtime must get from another kernel library (optimized, quantized, custom)",
    check_executorch_portable, GRAFT_LINT_FIX_NONE },
  { "static-input-dim", GRAFT_SEVERITY_WARNING, "Static input dimension", "static dim",
    "a graph input with a fixed batch (dim 0 of rank >= 2) or sequence length (dim 1 of integer token inputs); "
    "torch.export: a dim export specialized, with the dynamic_shapes / Dim(...) that keeps it dynamic",
    check_input_dims, GRAFT_LINT_FIX_MAKE_DIM_DYNAMIC },
  /* The torch.export rules, found by static-input-dim's check. */
  { "data-dependent-shape", GRAFT_SEVERITY_INFO, "Data-dependent shape", "data-dependent",
    "torch.export: a node that makes an unbacked size (u0) from data: nonzero, item", NULL, GRAFT_LINT_FIX_NONE },
  { "runtime-assertion", GRAFT_SEVERITY_INFO, "Runtime assertion", "assertion",
    "torch.export: _assert_scalar, sym_constrain_range… with the condition checked at run time", NULL,
    GRAFT_LINT_FIX_NONE },
  { "baked-shape-constant", GRAFT_SEVERITY_WARNING, "Baked shape constant", "baked shape",
    "a shape constant holding an input dim's traced value", check_baked_shapes, GRAFT_LINT_FIX_MAKE_DIM_DYNAMIC },
  /* The TorchScript rules: warnings when the module may be a trace (no
   * prim::If/Loop), notes in scripted modules unless meant for ONNX export. */
  { "trace-python-number", GRAFT_SEVERITY_WARNING, "Tensor turned into a Python number", "trace",
    "TorchScript: aten::item/Int/Float... whose Python arithmetic a trace freezes", graft_check_trace_hazards,
    GRAFT_LINT_FIX_NONE },
  { "trace-frozen-size", GRAFT_SEVERITY_WARNING, "Frozen size list", "trace",
    "TorchScript: a constant size list with a fixed leading dim in view/reshape/expand...", NULL,
    GRAFT_LINT_FIX_NONE },
  { "trace-shape-inplace", GRAFT_SEVERITY_WARNING, "In-place op on a shape value", "trace",
    "TorchScript: an in-place op on a value derived from a shape", NULL, GRAFT_LINT_FIX_NONE },
  { "trace-flattened-control-flow", GRAFT_SEVERITY_WARNING, "Branch on tensor data", "trace",
    "TorchScript: aten::Bool/is_nonzero, a branch on data decided once at trace time", NULL, GRAFT_LINT_FIX_NONE },
  { "control-flow", GRAFT_SEVERITY_INFO, "Scripted control flow", "control flow",
    "TorchScript prim::If/prim::Loop (a warning when the target is ONNX export)", NULL, GRAFT_LINT_FIX_NONE },
};

const GraftLintRule *
graft_lint_rules (guint *n_rules)
{
  *n_rules = G_N_ELEMENTS (lint_rules);
  return lint_rules;
}

const GraftLintRule *
graft_lint_rule_lookup (const char *id)
{
  for (guint i = 0; i < G_N_ELEMENTS (lint_rules); i++)
    if (strcmp (lint_rules[i].id, id) == 0)
      return &lint_rules[i];
  return NULL;
}

GPtrArray *
graft_lint_model (GraftModel *model, const GraftLintOptions *options)
{
  return graft_lint_model_with_inference (model, options, NULL);
}

GPtrArray *
graft_lint_model_with_inference (GraftModel *model, const GraftLintOptions *options, GraftInference **inference)
{
  GPtrArray *list = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_diagnostic_free);
  GraftLintOptions defaults = { FALSE };
  GraftLintOptions with_inference;

  if (options == NULL)
    options = &defaults;
  if (inference != NULL)
    {
      *inference = graft_shape_inference_run (model, NULL);
      with_inference = *options;
      with_inference.inference = *inference;
      options = &with_inference;
    }
  if (graft_model_get_graph (model) == NULL)
    return list;
  {
    guint n_rules;
    const GraftLintRule *rules = graft_lint_rules (&n_rules);

    for (guint i = 0; i < n_rules; i++)
      if (rules[i].check != NULL)
        rules[i].check (model, options, list);
  }
  /* Stable: equal severities keep their graph order. */
  {
    g_autoptr(GPtrArray) sorted = g_ptr_array_new ();
    for (int s = GRAFT_SEVERITY_ERROR; s >= GRAFT_SEVERITY_INFO; s--)
      for (guint i = 0; i < list->len; i++)
        if (((GraftDiagnostic *) g_ptr_array_index (list, i))->severity == (GraftSeverity) s)
          g_ptr_array_add (sorted, g_ptr_array_index (list, i));
    for (guint i = 0; i < sorted->len; i++)
      list->pdata[i] = sorted->pdata[i];
  }
  return list;
}

gboolean
graft_diagnostics_have_errors (GPtrArray *diagnostics)
{
  for (guint i = 0; i < diagnostics->len; i++)
    if (((GraftDiagnostic *) g_ptr_array_index (diagnostics, i))->severity == GRAFT_SEVERITY_ERROR)
      return TRUE;
  return FALSE;
}
