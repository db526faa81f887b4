#include "ir-compare.h"

#include <string.h>

#define DIFFER(...) (g_string_append_printf (why, __VA_ARGS__), FALSE)

/* The ONNX fields a kept as bytes (onnx/kept-fields.h) are in b too. A
 * model built in memory has none; read back, its ONNX types are kept. */
static gboolean
kept_equal (GBytes *a, GBytes *b)
{
  return a == NULL || (b != NULL && g_bytes_equal (a, b));
}

static gboolean
tensors_equal (GraftTensor *a, GraftTensor *b, const char *where, GString *why)
{
  GBytes *da, *db;

  if (a == NULL || b == NULL)
    return a == b ? TRUE : DIFFER ("%s: tensor missing on one side", where);
  if (a->dtype != b->dtype || a->rank != b->rank)
    return DIFFER ("%s: tensor %s vs %s", where, graft_tensor_describe (a), graft_tensor_describe (b));
  if (a->rank > 0 && memcmp (a->dims, b->dims, sizeof (gint64) * a->rank) != 0)
    return DIFFER ("%s: tensor dims differ", where);
  if (!kept_equal (a->onnx_kept_fields, b->onnx_kept_fields) || !kept_equal (a->onnx_sparse, b->onnx_sparse))
    return DIFFER ("%s: kept ONNX tensor fields or sparse form differ", where);
  if (a->dtype == GRAFT_DTYPE_STRING)
    {
      if (a->strings->len != b->strings->len)
        return DIFFER ("%s: string count differs", where);
      for (guint i = 0; i < a->strings->len; i++)
        if (!g_bytes_equal (g_ptr_array_index (a->strings, i), g_ptr_array_index (b->strings, i)))
          return DIFFER ("%s: string %u differs", where, i);
      return TRUE;
    }
  da = graft_tensor_get_data (a, NULL);
  db = graft_tensor_get_data (b, NULL);
  if (da == NULL || db == NULL || !g_bytes_equal (da, db))
    return DIFFER ("%s: tensor data differs", where);
  return TRUE;
}

static gboolean
attributes_equal (GraftAttribute *a, GraftAttribute *b, const char *where, GString *why)
{
  if (strcmp (a->name, b->name) != 0 || a->type != b->type)
    return DIFFER ("%s: attribute %s:%s vs %s:%s", where, a->name, graft_attr_type_to_string (a->type),
                   b->name, graft_attr_type_to_string (b->type));
  if (g_strcmp0 (a->ref_attr_name, b->ref_attr_name) != 0)
    return DIFFER ("%s.%s: ref_attr_name differs", where, a->name);
  switch (a->type)
    {
    case GRAFT_ATTR_FLOAT:
      if ((float) a->f != (float) b->f && !(a->f != a->f && b->f != b->f))
        return DIFFER ("%s.%s: %g vs %g", where, a->name, a->f, b->f);
      break;
    case GRAFT_ATTR_INT:
    case GRAFT_ATTR_BOOL:
      if (a->i != b->i)
        return DIFFER ("%s.%s: %" G_GINT64_FORMAT " vs %" G_GINT64_FORMAT, where, a->name, a->i, b->i);
      break;
    case GRAFT_ATTR_STRING:
    case GRAFT_ATTR_TYPE:
      if ((a->s == NULL) != (b->s == NULL) || (a->s && !g_bytes_equal (a->s, b->s)))
        return DIFFER ("%s.%s: strings differ", where, a->name);
      break;
    case GRAFT_ATTR_TENSOR:
    case GRAFT_ATTR_SPARSE_TENSOR:
      return tensors_equal (a->t, b->t, where, why);
    case GRAFT_ATTR_GRAPH:
      if (a->g == NULL || b->g == NULL)
        return a->g == b->g ? TRUE : DIFFER ("%s.%s: graph missing", where, a->name);
      return graft_test_graphs_equal (a->g, b->g, a->name, why);
    case GRAFT_ATTR_FLOATS:
      if (a->floats->len != b->floats->len)
        return DIFFER ("%s.%s: float count differs", where, a->name);
      for (guint i = 0; i < a->floats->len; i++)
        {
          double x = g_array_index (a->floats, double, i), y = g_array_index (b->floats, double, i);
          if ((float) x != (float) y && !(x != x && y != y))
            return DIFFER ("%s.%s[%u]: %g vs %g", where, a->name, i, x, y);
        }
      break;
    case GRAFT_ATTR_INTS:
      if (a->ints->len != b->ints->len
          || memcmp (a->ints->data, b->ints->data, sizeof (gint64) * a->ints->len) != 0)
        return DIFFER ("%s.%s: ints differ", where, a->name);
      break;
    case GRAFT_ATTR_STRINGS:
    case GRAFT_ATTR_TYPES:
      if (a->strings->len != b->strings->len)
        return DIFFER ("%s.%s: string count differs", where, a->name);
      for (guint i = 0; i < a->strings->len; i++)
        if (!g_bytes_equal (g_ptr_array_index (a->strings, i), g_ptr_array_index (b->strings, i)))
          return DIFFER ("%s.%s[%u] differs", where, a->name, i);
      break;
    case GRAFT_ATTR_TENSORS:
      if (a->tensors->len != b->tensors->len)
        return DIFFER ("%s.%s: tensor count differs", where, a->name);
      for (guint i = 0; i < a->tensors->len; i++)
        if (!tensors_equal (g_ptr_array_index (a->tensors, i), g_ptr_array_index (b->tensors, i), where, why))
          return FALSE;
      break;
    case GRAFT_ATTR_GRAPHS:
      if (a->graphs->len != b->graphs->len)
        return DIFFER ("%s.%s: graph count differs", where, a->name);
      for (guint i = 0; i < a->graphs->len; i++)
        if (!graft_test_graphs_equal (g_ptr_array_index (a->graphs, i), g_ptr_array_index (b->graphs, i), a->name, why))
          return FALSE;
      break;
    default:
      break;
    }
  return TRUE;
}

static gboolean
values_equal (GraftValue *a, GraftValue *b, const char *where, GString *why)
{
  if (a == NULL || b == NULL)
    return a == b ? TRUE : DIFFER ("%s: value present on one side only", where);
  if (strcmp (a->name, b->name) != 0)
    return DIFFER ("%s: value '%s' vs '%s'", where, a->name, b->name);
  if (a->kind != b->kind || a->dtype != b->dtype || !graft_shape_equal (&a->shape, &b->shape)
      || g_strcmp0 (a->type_string, b->type_string) != 0)
    {
      g_autofree char *sa = graft_shape_to_string (&a->shape);
      g_autofree char *sb = graft_shape_to_string (&b->shape);
      return DIFFER ("%s: value '%s' type %s %s vs %s %s", where, a->name, graft_dtype_to_string (a->dtype), sa,
                     graft_dtype_to_string (b->dtype), sb);
    }
  if ((a->initializer == NULL) != (b->initializer == NULL))
    return DIFFER ("%s: value '%s' initializer on one side only", where, a->name);
  if (a->initializer && !tensors_equal (a->initializer, b->initializer, a->name, why))
    return FALSE;
  if (g_strcmp0 (a->doc_string, b->doc_string) != 0)
    return DIFFER ("%s: value '%s' doc_string differs", where, a->name);
  if (!kept_equal (a->onnx_type, b->onnx_type) || !kept_equal (a->onnx_kept_fields, b->onnx_kept_fields))
    return DIFFER ("%s: value '%s' kept ONNX type or fields differ", where, a->name);
  return TRUE;
}

static gboolean
value_lists_equal (GPtrArray *a, GPtrArray *b, const char *where, GString *why)
{
  if (a->len != b->len)
    return DIFFER ("%s: %u vs %u entries", where, a->len, b->len);
  for (guint i = 0; i < a->len; i++)
    if (!values_equal (g_ptr_array_index (a, i), g_ptr_array_index (b, i), where, why))
      return FALSE;
  return TRUE;
}

static gboolean
nodes_equal (GraftNode *a, GraftNode *b, const char *where, GString *why)
{
  g_autofree char *here = g_strdup_printf ("%s node %u '%s'", where, a->index, a->name);

  if (strcmp (a->name, b->name) != 0 || a->op != b->op || g_strcmp0 (a->doc_string, b->doc_string) != 0)
    return DIFFER ("%s: %s '%s' vs %s '%s'", here, a->op, a->name, b->op, b->name);
  if (!kept_equal (a->onnx_kept_fields, b->onnx_kept_fields))
    return DIFFER ("%s: kept ONNX fields differ", here);
  if (!value_lists_equal (a->inputs, b->inputs, here, why) || !value_lists_equal (a->outputs, b->outputs, here, why))
    return FALSE;
  if (a->attributes->len != b->attributes->len)
    return DIFFER ("%s: %u vs %u attributes", here, a->attributes->len, b->attributes->len);
  for (guint i = 0; i < a->attributes->len; i++)
    if (!attributes_equal (g_ptr_array_index (a->attributes, i), g_ptr_array_index (b->attributes, i), here, why))
      return FALSE;
  return TRUE;
}

gboolean
graft_test_graphs_equal (GraftGraph *a, GraftGraph *b, const char *where, GString *why)
{
  if (g_strcmp0 (a->name, b->name) != 0 || g_strcmp0 (a->doc_string, b->doc_string) != 0)
    return DIFFER ("%s: graph name/doc '%s' vs '%s'", where, a->name, b->name);
  if (!kept_equal (a->onnx_kept_fields, b->onnx_kept_fields))
    return DIFFER ("%s: kept ONNX graph fields differ", where);
  if (a->nodes->len != b->nodes->len)
    return DIFFER ("%s: %u vs %u nodes", where, a->nodes->len, b->nodes->len);
  if (!value_lists_equal (a->inputs, b->inputs, "inputs", why)
      || !value_lists_equal (a->outputs, b->outputs, "outputs", why)
      || !value_lists_equal (a->initializers, b->initializers, "initializers", why))
    return FALSE;
  for (guint i = 0; i < a->nodes->len; i++)
    if (!nodes_equal (g_ptr_array_index (a->nodes, i), g_ptr_array_index (b->nodes, i), where, why))
      return FALSE;
  /* Declared types of every named value (value_info), by name. */
  for (guint i = 0; i < a->values->len; i++)
    {
      GraftValue *va = g_ptr_array_index (a->values, i);
      GraftValue *vb = graft_graph_lookup_value (b, va->name);

      if (vb == NULL)
        {
          if (va->producer == NULL && va->consumers->len == 0 && !va->is_graph_input && !va->is_graph_output)
            continue;
          return DIFFER ("%s: value '%s' missing", where, va->name);
        }
      if (!values_equal (va, vb, where, why))
        return FALSE;
    }
  return TRUE;
}

gboolean
graft_test_models_equal (GraftModel *a, GraftModel *b, GString *why)
{
  GPtrArray *da = graft_model_get_opset_domains (a), *db = graft_model_get_opset_domains (b);
  GPtrArray *fa = graft_model_get_functions (a), *fb = graft_model_get_functions (b);

  if (graft_model_get_ir_version (a) != graft_model_get_ir_version (b)
      || graft_model_get_model_version (a) != graft_model_get_model_version (b)
      || g_strcmp0 (graft_model_get_producer_name (a), graft_model_get_producer_name (b)) != 0
      || g_strcmp0 (graft_model_get_producer_version (a), graft_model_get_producer_version (b)) != 0
      || g_strcmp0 (graft_model_get_domain (a), graft_model_get_domain (b)) != 0
      || g_strcmp0 (graft_model_get_doc_string (a), graft_model_get_doc_string (b)) != 0)
    return DIFFER ("model header differs");
  if (!kept_equal (graft_model_get_onnx_kept_fields (a), graft_model_get_onnx_kept_fields (b)))
    return DIFFER ("kept ONNX model fields (training_info...) differ");
  if (da->len != db->len)
    return DIFFER ("opset domain count differs");
  for (guint i = 0; i < da->len; i++)
    if (strcmp (g_ptr_array_index (da, i), g_ptr_array_index (db, i)) != 0
        || graft_model_get_opset (a, g_ptr_array_index (da, i)) != graft_model_get_opset (b, g_ptr_array_index (da, i)))
      return DIFFER ("opset '%s' differs", (char *) g_ptr_array_index (da, i));
  if (graft_model_get_n_metadata (a) != graft_model_get_n_metadata (b))
    return DIFFER ("metadata count differs");
  for (guint i = 0; i < graft_model_get_n_metadata (a); i++)
    {
      const char *ka, *va, *kb, *vb;
      graft_model_get_metadata (a, i, &ka, &va);
      graft_model_get_metadata (b, i, &kb, &vb);
      if (g_strcmp0 (ka, kb) != 0 || g_strcmp0 (va, vb) != 0)
        return DIFFER ("metadata %u differs", i);
    }
  if (fa->len != fb->len)
    return DIFFER ("function count differs");
  for (guint i = 0; i < fa->len; i++)
    {
      GraftFunction *x = g_ptr_array_index (fa, i), *y = g_ptr_array_index (fb, i);
      if (g_strcmp0 (x->name, y->name) != 0 || g_strcmp0 (x->domain, y->domain) != 0
          || !kept_equal (x->onnx_kept_fields, y->onnx_kept_fields))
        return DIFFER ("function %u differs", i);
      if (!graft_test_graphs_equal (x->body, y->body, x->name, why))
        return FALSE;
    }
  return graft_test_graphs_equal (graft_model_get_graph (a), graft_model_get_graph (b), "graph", why);
}
