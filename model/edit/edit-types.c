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
