/* TorchScript rules: what torch.jit.trace silently freezes. */
#include "lint/diagnostics-private.h"
#include "ir/fixed-branch.h"

#include <string.h>

/* Ops whose size argument fixes an output shape. */
static const char *const size_taking_ops[] = {
  "aten::view", "aten::reshape", "aten::expand", "aten::repeat", "aten::zeros", "aten::ones",
  "aten::full", "aten::empty", "aten::rand", "aten::randn", "aten::new_zeros", "aten::new_ones",
  "aten::new_full", "aten::new_empty", "aten::broadcast_to", NULL,
};

static const char *const python_number_ops[] = {
  "aten::item", "aten::Int", "aten::Float", "aten::ScalarImplicit", "aten::tolist", "prim::tolist", NULL,
};

static const char *const shape_ops[] = {
  "aten::size", "aten::numel", "aten::dim", "prim::NumToTensor", "aten::Int", "prim::shape", NULL,
};

static gboolean
op_in (GraftNode *node, const char *const *ops)
{
  return g_strv_contains (ops, node->op);
}

/* A value computed from a shape, within a few producers. */
static gboolean
derived_from_shape (GraftValue *value, guint depth)
{
  GraftNode *producer;

  if (value == NULL || (producer = value->producer) == NULL || depth > 6)
    return FALSE;
  if (op_in (producer, shape_ops))
    return TRUE;
  for (guint i = 0; i < producer->inputs->len; i++)
    if (derived_from_shape (g_ptr_array_index (producer->inputs, i), depth + 1))
      return TRUE;
  return FALSE;
}

static const GArray *
size_list (GraftNode *node)
{
  for (guint i = 0; i < node->attributes->len; i++)
    {
      GraftAttribute *a = g_ptr_array_index (node->attributes, i);
      if (a->type == GRAFT_ATTR_INTS && a->ints->len >= 2)
        return a->ints;
    }
  return NULL;
}

typedef struct {
  const GraftLintOptions *options;
  GPtrArray *list;
  /* Severity of the trace-* rules: a module with prim::If/Loop was
   * scripted, and these patterns only bite if it is traced or exported. */
  GraftSeverity hazard;
  const char *context;
} HazardCheck;

static void
check_size_list (HazardCheck *check, GraftNode *node)
{
  const GArray *sizes = size_list (node);
  gint64 first;

  if (sizes == NULL)
    return;
  first = g_array_index (sizes, gint64, 0);
  /* -1 or 1 up front is the usual dynamic spelling; a larger constant is
   * what a traced x.size(0) leaves behind. */
  if (first < 2)
    return;
  graft_diagnostic_add (check->list, "trace-frozen-size", check->hazard, node, NULL,
                        "%s%s has the constant size list with leading dim %" G_GINT64_FORMAT ": if that came from "
                        "x.size(0), .item() or numpy at trace time, the traced graph only works for that size; "
                        "use -1 there, or script the module", check->context, node->op, first);
}

static void
check_node (GraftNode *node, gpointer user_data)
{
  HazardCheck *check = user_data;
  gsize len = strlen (node->op_type);

  if (node->op == g_intern_static_string ("prim::If") || node->op == g_intern_static_string ("prim::Loop"))
    {
      gboolean warn = check->options->onnx_export_target;
      graft_diagnostic_add (check->list, "control-flow", warn ? GRAFT_SEVERITY_WARNING : GRAFT_SEVERITY_INFO, node,
                            NULL, "%s: scripted control flow runs fine in TorchScript%s", node->op,
                            warn ? ", but torch.onnx.export turns it into ONNX If/Loop, which many runtimes and "
                                   "optimisers handle poorly; check the exported graph, or keep the loop outside "
                                   "the exported module"
                                 : "; it matters only when exporting to ONNX");
      return;
    }
  if (op_in (node, python_number_ops) && !(node->inputs->len > 0 && derived_from_shape (g_ptr_array_index (node->inputs, 0), 0)))
    {
      graft_diagnostic_add (check->list, "trace-python-number", check->hazard, node, NULL,
                            "%s%s turns a tensor into a Python number: in a trace, any Python arithmetic on it was "
                            "done once and frozen as a constant; keep the computation in tensors, or script it",
                            check->context, node->op);
      return;
    }
  if (node->op == g_intern_static_string ("aten::Bool") || node->op == g_intern_static_string ("aten::is_nonzero"))
    {
      graft_diagnostic_add (check->list, "trace-flattened-control-flow", check->hazard, node, NULL,
                            "%s%s decides a branch on tensor data: a trace records only the branch taken for the "
                            "example input; use torch.where, or script the module", check->context, node->op);
      return;
    }
  if (node->domain == g_intern_static_string ("aten") && len > 1 && node->op_type[len - 1] == '_'
      && node->op_type[len - 2] != '_' && node->inputs->len > 0
      && derived_from_shape (g_ptr_array_index (node->inputs, 0), 0))
    {
      graft_diagnostic_add (check->list, "trace-shape-inplace", check->hazard, node, NULL,
                            "%s%s modifies in place a value computed from a shape: the trace may record the size as "
                            "a constant and the update may be lost; use the out-of-place op", check->context, node->op);
      return;
    }
  if (op_in (node, size_taking_ops))
    check_size_list (check, node);
}

/* Every node that can run: a branch the module's own attributes rule out
 * is dead code, and its If is no control flow worth a note. */
static void
check_live_nodes (GraftGraph *graph, HazardCheck *check)
{
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      GraftGraph *taken = graft_if_get_fixed_branch (node);
      g_autoptr(GPtrArray) subgraphs = NULL;

      if (taken != NULL)
        {
          check_live_nodes (taken, check);
          continue;
        }
      check_node (node, check);
      subgraphs = graft_node_get_subgraphs (node);
      for (guint j = 0; j < subgraphs->len; j++)
        check_live_nodes (g_ptr_array_index (subgraphs, j), check);
    }
}

static void
find_control_flow (GraftNode *node, gpointer user_data)
{
  if (node->op == g_intern_static_string ("prim::If") || node->op == g_intern_static_string ("prim::Loop"))
    *(gboolean *) user_data = TRUE;
}

void
graft_check_trace_hazards (GraftModel *model, const GraftLintOptions *options, GPtrArray *list)
{
  HazardCheck check = { options, list, GRAFT_SEVERITY_WARNING, "" };
  gboolean scripted = FALSE;

  if (graft_model_get_format (model) != GRAFT_MODEL_FORMAT_TORCHSCRIPT)
    return;
  graft_graph_foreach_node_recursive (graft_model_get_graph (model), find_control_flow, &scripted);
  if (scripted)
    {
      check.hazard = options->onnx_export_target ? GRAFT_SEVERITY_WARNING : GRAFT_SEVERITY_INFO;
      check.context = "if this module is traced or exported to ONNX: ";
    }

  check_live_nodes (graft_model_get_graph (model), &check);
}
