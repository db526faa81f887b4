/* Where the edits read inferred types (see edit-private.h). */
#include "edit/edit-private.h"
#include "analysis/shape-inference.h"

#include <string.h>

GraftInference *
graft_edit_infer (GraftModel *model)
{
  return graft_shape_inference_run (model, NULL);
}

gboolean
graft_edit_value_type (GraftInference *inference, GraftValue *value, GraftDType *dtype, const GraftShape **shape)
{
  GraftDType inferred_dtype = graft_inference_get_dtype (inference, value);
  const GraftShape *inferred_shape = graft_inference_get_shape (inference, value);

  *dtype = value->dtype != GRAFT_DTYPE_UNDEFINED ? value->dtype : inferred_dtype;
  *shape = graft_value_get_best_shape (value, inference);
  if (*shape == NULL && inferred_shape != NULL && inferred_shape->rank >= 0)
    *shape = inferred_shape;
  if (*shape == NULL && value->shape.rank >= 0)
    *shape = &value->shape;
  return *dtype != GRAFT_DTYPE_UNDEFINED;
}

/* Declared dims that inference now contradicts (both fixed and
 * different, or another rank), or types a graph output lacks; in a
 * torch.export program every tensor has its TensorMeta, so a value an
 * edit made lacks its type too. */
static gboolean
declared_type_is_stale (GraftValue *value, gboolean every_value_typed, GraftDType inferred_dtype,
                        const GraftShape *inferred_shape)
{
  if ((value->is_graph_output || (every_value_typed && value->kind == GRAFT_VALUE_TENSOR))
      && value->dtype == GRAFT_DTYPE_UNDEFINED)
    return inferred_dtype != GRAFT_DTYPE_UNDEFINED;
  if (value->dtype != GRAFT_DTYPE_UNDEFINED && inferred_dtype != GRAFT_DTYPE_UNDEFINED
      && value->dtype != inferred_dtype)
    return TRUE;
  if (value->shape.rank < 0 || inferred_shape == NULL || inferred_shape->rank < 0)
    return FALSE;
  if (value->shape.rank != inferred_shape->rank)
    return TRUE;
  for (int i = 0; i < value->shape.rank; i++)
    if (value->shape.dims[i].kind == GRAFT_DIM_FIXED && inferred_shape->dims[i].kind == GRAFT_DIM_FIXED
        && value->shape.dims[i].value != inferred_shape->dims[i].value)
      return TRUE;
  return FALSE;
}

void
graft_edit_refresh_declared_types (GraftInference *inference, GraftModel *model, GraftGraph *graph, GPtrArray *notes)
{
  gboolean every_value_typed = graft_model_get_format (model) == GRAFT_MODEL_FORMAT_EXPORTED_PROGRAM;

  for (guint i = 0; i < graph->values->len; i++)
    {
      GraftValue *value = g_ptr_array_index (graph->values, i);
      g_autofree char *before = NULL, *after = NULL;
      GraftDType inferred_dtype = GRAFT_DTYPE_UNDEFINED;
      const GraftShape *inferred_shape = NULL;

      if (value->initializer != NULL || value->is_graph_input
          || !graft_inference_lookup (inference, value, &inferred_dtype, &inferred_shape)
          || !declared_type_is_stale (value, every_value_typed, inferred_dtype, inferred_shape))
        continue;
      before = value->dtype != GRAFT_DTYPE_UNDEFINED ? graft_shape_to_string (&value->shape) : g_strdup ("none");
      value->dtype = inferred_dtype;
      graft_shape_clear (&value->shape);
      if (inferred_shape != NULL)
        graft_shape_copy (&value->shape, inferred_shape);
      else
        value->shape = GRAFT_SHAPE_UNKNOWN;
      after = graft_shape_to_string (&value->shape);
      if (notes != NULL)
        g_ptr_array_add (notes, g_strdup_printf ("declared type of '%s': %s → %s %s", value->name, before,
                                                 graft_dtype_to_string (value->dtype), after));
    }
}

GraftInference *
graft_edit_check_node (GraftModel *model, GraftNode *node, GError **error)
{
  GraftShapeInferenceReport report = { 0 };
  g_autofree char *prefix = g_strdup_printf ("node '%s' (%s): ", node->name, node->op);
  g_autoptr(GraftInference) inference = graft_shape_inference_run (model, &report);
  gboolean ok = TRUE;

  for (guint i = 0; ok && report.problems != NULL && i < report.problems->len; i++)
    {
      const char *problem = g_ptr_array_index (report.problems, i);
      if (g_str_has_prefix (problem, prefix))
        {
          g_set_error (error, GRAFT_EDIT_ERROR, GRAFT_EDIT_ERROR_INVALID, "%s (%s) does not fit its schema: %s",
                       node->name, node->op, problem + strlen (prefix));
          ok = FALSE;
        }
    }
  graft_shape_inference_report_clear (&report);
  return ok ? g_steal_pointer (&inference) : NULL;
}
