/* Where the edits read inferred types (see edit-private.h). */
#include "edit/edit-private.h"
#include "analysis/shape-inference.h"

#include <string.h>

void
graft_edit_infer (GraftModel *model)
{
  graft_shape_inference_run (model, NULL);
}

gboolean
graft_edit_value_type (GraftModel *model, GraftValue *value, GraftDType *dtype, const GraftShape **shape)
{
  (void) model;
  *dtype = value->dtype != GRAFT_DTYPE_UNDEFINED ? value->dtype
           : value->has_inferred                 ? value->inferred_dtype
                                                 : GRAFT_DTYPE_UNDEFINED;
  *shape = graft_value_get_best_shape (value);
  if (*shape == NULL && value->has_inferred && value->inferred_shape.rank >= 0)
    *shape = &value->inferred_shape;
  if (*shape == NULL && value->shape.rank >= 0)
    *shape = &value->shape;
  return *dtype != GRAFT_DTYPE_UNDEFINED;
}

/* Declared dims that inference now contradicts (both fixed and
 * different, or another rank), or types a graph output lacks. */
static gboolean
declared_type_is_stale (GraftValue *value)
{
  if (!value->has_inferred)
    return FALSE;
  if (value->is_graph_output && value->dtype == GRAFT_DTYPE_UNDEFINED)
    return value->inferred_dtype != GRAFT_DTYPE_UNDEFINED;
  if (value->dtype != GRAFT_DTYPE_UNDEFINED && value->inferred_dtype != GRAFT_DTYPE_UNDEFINED
      && value->dtype != value->inferred_dtype)
    return TRUE;
  if (value->shape.rank < 0 || value->inferred_shape.rank < 0)
    return FALSE;
  if (value->shape.rank != value->inferred_shape.rank)
    return TRUE;
  for (int i = 0; i < value->shape.rank; i++)
    if (value->shape.dims[i].kind == GRAFT_DIM_FIXED && value->inferred_shape.dims[i].kind == GRAFT_DIM_FIXED
        && value->shape.dims[i].value != value->inferred_shape.dims[i].value)
      return TRUE;
  return FALSE;
}

void
graft_edit_refresh_declared_types (GraftModel *model, GraftGraph *graph, GPtrArray *notes)
{
  for (guint i = 0; i < graph->values->len; i++)
    {
      GraftValue *value = g_ptr_array_index (graph->values, i);
      g_autofree char *before = NULL, *after = NULL;

      if (value->initializer != NULL || value->is_graph_input || !declared_type_is_stale (value))
        continue;
      before = value->dtype != GRAFT_DTYPE_UNDEFINED ? graft_shape_to_string (&value->shape) : g_strdup ("none");
      value->dtype = value->inferred_dtype;
      graft_shape_clear (&value->shape);
      graft_shape_copy (&value->shape, &value->inferred_shape);
      after = graft_shape_to_string (&value->shape);
      if (notes != NULL)
        g_ptr_array_add (notes, g_strdup_printf ("declared type of '%s': %s → %s %s", value->name, before,
                                                 graft_dtype_to_string (value->dtype), after));
    }
}

gboolean
graft_edit_check_node (GraftModel *model, GraftNode *node, GError **error)
{
  GraftShapeInferenceReport report = { 0 };
  g_autofree char *prefix = g_strdup_printf ("node '%s' (%s): ", node->name, node->op);
  gboolean ok = TRUE;

  graft_shape_inference_run (model, &report);
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
  return ok;
}
