/* The written graph checked before a conversion is called done: a
 * lowering that emits a node its schema rejects (an attribute of the
 * wrong type, a missing input, a Transpose whose perm does not fit its
 * input) must fail the conversion, naming the node, rather than write a
 * file that onnx.checker, onnxruntime and Graft's runtime then refuse. */
#include "lower/lower-private.h"

#include <string.h>
#include "analysis/shape-inference.h"
#include "ir/graph-check.h"
#include "ir/model-error.h"
#include "onnx/op-schemas.h"

static gboolean
invalid (GError **error, GraftNode *node, const char *format, ...) G_GNUC_PRINTF (3, 4);

static gboolean
invalid (GError **error, GraftNode *node, const char *format, ...)
{
  va_list args;
  va_start (args, format);
  g_autofree char *message = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED,
               "the conversion wrote an invalid node '%s' (%s): %s", node->name, node->op, message);
  return FALSE;
}

/* How many inputs the schema's input list ("X W B?", "inputs...") allows. */
static void
input_range (const char *inputs, guint *min, guint *max)
{
  g_auto(GStrv) names = g_strsplit (inputs ? inputs : "", " ", -1);
  *min = 0;
  *max = 0;
  for (guint i = 0; names[i] != NULL; i++)
    {
      if (*names[i] == '\0')
        continue;
      if (g_str_has_suffix (names[i], "..."))
        {
          *max = G_MAXUINT;
          *min += 1;
          continue;
        }
      *max += 1;
      if (!g_str_has_suffix (names[i], "?"))
        *min = *max;
    }
}

/* Every ONNX node against its schema at the opset: known op, inputs within
 * its arity, attributes it declares with the declared types, the required
 * ones present. */
static gboolean
check_nodes (GraftGraph *graph, gint64 opset, GError **error)
{
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      g_autoptr(GPtrArray) bodies = graft_node_get_subgraphs (node);
      for (guint j = 0; j < bodies->len; j++)
        if (!check_nodes (bodies->pdata[j], opset, error))
          return FALSE;
      if (!g_str_has_prefix (node->op, "onnx::"))
        continue;  /* --allow-custom's aten nodes */
      const GraftOnnxSchema *schema = graft_onnx_schema_lookup (node->domain, node->op_type, opset);
      if (schema == NULL)
        return invalid (error, node, "ONNX has no %s at opset %" G_GINT64_FORMAT, node->op_type, opset);
      guint min, max, given = node->inputs->len;
      input_range (schema->inputs, &min, &max);
      while (given > 0 && g_ptr_array_index (node->inputs, given - 1) == NULL)
        given--;
      if (given < min || given > max)
        return invalid (error, node, "%u inputs where %s takes %s", given, node->op_type, schema->inputs);
      for (guint a = 0; a < node->attributes->len; a++)
        {
          GraftAttribute *attribute = g_ptr_array_index (node->attributes, a);
          const GraftOnnxAttributeSchema *declared = graft_onnx_schema_find_attribute (schema, attribute->name);
          if (declared == NULL)
            return invalid (error, node, "%s has no attribute '%s'", node->op_type, attribute->name);
          if (declared->type != GRAFT_ATTR_UNDEFINED && declared->type != attribute->type)
            return invalid (error, node, "attribute '%s' is %s where %s takes %s", attribute->name,
                            graft_attr_type_to_string (attribute->type), node->op_type,
                            graft_attr_type_to_string (declared->type));
        }
      for (guint a = 0; a < schema->n_attributes; a++)
        if (schema->attributes[a].required && graft_node_get_attribute (node, schema->attributes[a].name) == NULL)
          return invalid (error, node, "the required attribute '%s' is missing", schema->attributes[a].name);
    }
  return TRUE;
}

gboolean
_graft_lower_check (GraftModel *target, gboolean allow_custom, GError **error)
{
  GraftGraph *graph = graft_model_get_graph (target);
  gint64 opset = graft_model_get_opset (target, "onnx");
  if (!graft_graph_validate_structure (graph, error))
    {
      g_prefix_error (error, "the conversion wrote an invalid graph: ");
      return FALSE;
    }
  if (!check_nodes (graph, opset, error))
    return FALSE;
  /* every node accepts what reaches it: Graft's own shape logic, over the whole file */
  GraftShapeInferenceReport report = { 0 };
  g_autoptr(GraftInference) inference = graft_shape_inference_run (target, &report);
  if (report.problems != NULL && report.problems->len > 0)
    {
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED,
                   "the conversion wrote a graph whose shapes do not infer (%u problem%s): %s", report.problems->len,
                   report.problems->len == 1 ? "" : "s", (const char *) report.problems->pdata[0]);
      graft_shape_inference_report_clear (&report);
      return FALSE;
    }
  graft_shape_inference_report_clear (&report);
  /* ONNX wants every graph output typed with a shape: where the lowering's
   * own types lost one, the whole-file inference (which follows shape
   * vectors as data) gives it */
  for (guint i = 0; i < graph->outputs->len; i++)
    {
      GraftValue *out = g_ptr_array_index (graph->outputs, i);
      GraftDType dtype;
      const GraftShape *shape;
      if (out->kind != GRAFT_VALUE_TENSOR || (out->shape.rank >= 0 && out->dtype != GRAFT_DTYPE_UNDEFINED))
        continue;
      if (!graft_inference_lookup (inference, out, &dtype, &shape) || shape->rank < 0 || dtype == GRAFT_DTYPE_UNDEFINED)
        {
          if (allow_custom)
            continue;  /* computed by a custom-domain node, whose result only Graft's runtime knows */
          g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED,
                       "the conversion cannot tell the %s of output '%s'", out->dtype == GRAFT_DTYPE_UNDEFINED ? "dtype"
                       : "rank", out->name);
          return FALSE;
        }
      out->dtype = dtype;
      graft_shape_clear (&out->shape);
      graft_shape_copy (&out->shape, shape);
    }
  return TRUE;
}
