/* torch.export rules: what export decided about shapes.
 *
 * torch.export specializes every input dim that dynamic_shapes does not
 * declare, and the program then refuses any other size ("Expected input at
 * *args[0].shape[0] to be equal to 2, but got 4"). Data-dependent sizes
 * (nonzero, item) get unbacked symbols u0, u1… whose bounds the graph
 * checks with runtime assertions. */
#include "lint/diagnostics-private.h"

#include <string.h>

static const char *const assertion_ops[] = {
  "aten::_assert_scalar", "aten::_assert_async", "aten::_assert_tensor_metadata", "aten::sym_constrain_range",
  "aten::sym_constrain_range_for_size", "aten::_functional_sym_constrain_range",
  "aten::_functional_sym_constrain_range_for_size", NULL,
};

static void
add_specialized_dim (GPtrArray *list, GraftModel *model, GraftValue *input, guint position, int axis,
                     const char *what)
{
  g_autofree char *shape = graft_shape_to_string (&input->shape);
  gint64 size = input->shape.dims[axis].value;
  const char *dim_name = axis == 0 ? "batch" : "seq";
  /* torch specializes sizes 0 and 1, so a dynamic dim needs min ≥ 2. */
  GraftDiagnostic *d = graft_diagnostic_add (
    list, "static-input-dim", GRAFT_SEVERITY_WARNING, NULL, input,
    "torch.export specialized %s of input '%s' (%s) to %" G_GINT64_FORMAT ": the program refuses any other size "
    "(\"Expected input at *args[%u].shape[%d] to be equal to %" G_GINT64_FORMAT "\"). Export it again with "
    "dynamic_shapes={\"%s\": {%d: Dim(\"%s\", min=2, max=…)}} to keep it dynamic (min=2: sizes 0 and 1 are "
    "always specialized)",
    what, input->name, shape, size, position, axis, size, input->name, axis, dim_name);
  d->input = input;
  d->axis = axis;
}

/* An unbacked symbol (u0) first appears as a dim or value of this node. */
static const char *
new_unbacked_symbol (GraftNode *node, GHashTable *seen)
{
  for (guint k = 0; k < node->outputs->len; k++)
    {
      GraftValue *value = g_ptr_array_index (node->outputs, k);
      if (value == NULL)
        continue;
      const char *symbol = NULL;
      for (int d = 0; d < value->shape.rank && symbol == NULL; d++)
        if (value->shape.dims[d].kind == GRAFT_DIM_SYMBOLIC && value->shape.dims[d].symbol[0] == 'u')
          symbol = value->shape.dims[d].symbol;
      if (symbol == NULL && value->kind == GRAFT_VALUE_SCALAR && value->type_string &&
          g_str_has_prefix (value->type_string, "SymInt u"))
        symbol = g_intern_string (value->type_string + strlen ("SymInt "));
      if (symbol != NULL && !g_hash_table_contains (seen, symbol))
        {
          g_hash_table_add (seen, (gpointer) symbol);
          return symbol;
        }
    }
  return NULL;
}

static void
check_guards (GraftModel *model, GPtrArray *list)
{
  GraftGraph *graph = graft_model_get_graph (model);
  g_autoptr(GHashTable) seen = g_hash_table_new (NULL, NULL);
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      const char *symbol = new_unbacked_symbol (node, seen);
      if (symbol != NULL)
        {
          g_autofree char *range = graft_model_describe_dim_range (model, symbol);
          graft_diagnostic_add (list, "data-dependent-shape", GRAFT_SEVERITY_INFO, node, NULL,
                                "%s makes the data-dependent size %s (%s): its value is known only when the program "
                                "runs, and the assertions that follow check it", node->op, symbol, range ? range : "no known bounds");
        }
      if (!g_strv_contains (assertion_ops, node->op))
        continue;
      GraftAttribute *message = graft_node_get_attribute (node, "arg1");
      g_autofree char *text = message ? graft_attribute_dup_string (message) : NULL;
      const char *prefix = "Runtime assertion failed for expression ";
      const char *condition = text && g_str_has_prefix (text, prefix) ? text + strlen (prefix) : text;
      graft_diagnostic_add (list, "runtime-assertion", GRAFT_SEVERITY_INFO, node, NULL,
                            "%s checks %s when the program runs; a run whose values break it fails here, as in "
                            "PyTorch", node->op, condition ? condition
                            : node->op == g_intern_static_string ("aten::_assert_tensor_metadata")
                            ? "its input's dtype and device" : "a condition (no message)");
    }
}

void
graft_check_exported_program (GraftModel *model, GPtrArray *list)
{
  graft_check_input_dims (model, list, add_specialized_dim);
  check_guards (model, list);
}
