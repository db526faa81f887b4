#include "runtime/op.h"

#include <string.h>

/* Each kernel family file exports graft_ops_<family>[]; the list of
 * families is generated from kernels/meson.build. */
#define GRAFT_KERNEL_FAMILY(family) extern const GraftOpSchema graft_ops_##family[];
#include "runtime/kernels/kernel-families.h"
#undef GRAFT_KERNEL_FAMILY

static const GraftOpSchema *const families[] = {
#define GRAFT_KERNEL_FAMILY(family) graft_ops_##family,
#include "runtime/kernels/kernel-families.h"
#undef GRAFT_KERNEL_FAMILY
};

static GHashTable *
get_index (void)
{
  static gsize once = 0;
  static GHashTable *index = NULL; /* interned op name → GPtrArray of schemas */

  if (g_once_init_enter (&once))
    {
      index = g_hash_table_new (g_str_hash, g_str_equal);
      for (gsize f = 0; f < G_N_ELEMENTS (families); f++)
        for (const GraftOpSchema *s = families[f]; s->name != NULL; s++)
          {
            GPtrArray *list = g_hash_table_lookup (index, s->name);
            if (list == NULL)
              {
                list = g_ptr_array_new ();
                g_hash_table_insert (index, (gpointer) s->name, list);
              }
            g_ptr_array_add (list, (gpointer) s);
          }
      g_once_init_leave (&once, 1);
    }
  return index;
}

const GraftOpSchema *
graft_op_registry_lookup (const char *op, gint64 opset)
{
  GPtrArray *list = g_hash_table_lookup (get_index (), op);

  if (list == NULL)
    return NULL;
  for (guint i = 0; i < list->len; i++)
    {
      const GraftOpSchema *s = list->pdata[i];
      if (s->since == 0 && s->until == 0)
        return s;
      if (opset < 0)
        {
          /* Unknown opset: take the newest. */
          if (s->until == 0)
            return s;
          continue;
        }
      if (opset >= s->since && (s->until == 0 || opset <= s->until))
        return s;
    }
  return NULL;
}

GPtrArray *
graft_op_registry_list (void)
{
  GPtrArray *all = g_ptr_array_new ();
  for (gsize f = 0; f < G_N_ELEMENTS (families); f++)
    for (const GraftOpSchema *s = families[f]; s->name != NULL; s++)
      g_ptr_array_add (all, (gpointer) s);
  return all;
}

/* The index-th name of a space-separated list; a last name ending in
 * "..." stands for every index from its own on. */
static const char *
parameter_name (const char *names, guint index)
{
  g_auto(GStrv) split = NULL;
  guint n;

  if (names == NULL || names[0] == '\0')
    return NULL;
  split = g_strsplit (names, " ", -1);
  n = g_strv_length (split);
  if (g_str_has_suffix (split[n - 1], "..."))
    {
      split[n - 1][strlen (split[n - 1]) - 3] = '\0';
      index = MIN (index, n - 1);
    }
  return index < n ? g_intern_string (split[index]) : NULL;
}

const char *
graft_op_registry_input_name (const char *op, gint64 opset, guint index)
{
  const GraftOpSchema *schema = graft_op_registry_lookup (op, opset);

  return schema != NULL ? parameter_name (schema->input_names, index) : NULL;
}

const char *
graft_op_schema_missing_first_input (const GraftOpSchema *schema, GraftNode *node)
{
  static const char *const optional_first[] = { "Loop", "Scan", "Optional", "OptionalHasElement" };

  if (schema == NULL || (node->inputs->len > 0 && node->inputs->pdata[0] != NULL))
    return NULL;
  const char *name = parameter_name (schema->input_names, 0);
  if (name == NULL)
    return NULL;
  for (guint i = 0; i < G_N_ELEMENTS (optional_first); i++)
    if (strcmp (node->op_type, optional_first[i]) == 0)
      return NULL;
  return name;
}

gboolean
graft_kernel_fail (GError **error, const char *format, ...)
{
  va_list args;
  va_start (args, format);
  g_autofree char *message = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error_literal (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INVALID, message);
  return FALSE;
}

gboolean
graft_kernel_unsupported (GError **error, const char *format, ...)
{
  va_list args;
  va_start (args, format);
  g_autofree char *message = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error_literal (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_UNSUPPORTED, message);
  return FALSE;
}

/* Attributes */

gboolean
graft_node_has_attr (GraftNode *node, const char *name)
{
  return graft_node_get_attribute (node, name) != NULL;
}

gint64
graft_node_attr_int (GraftNode *node, const char *name, gint64 fallback)
{
  GraftAttribute *a = graft_node_get_attribute (node, name);
  if (a == NULL)
    return fallback;
  if (a->type == GRAFT_ATTR_INT || a->type == GRAFT_ATTR_BOOL)
    return a->i;
  /* A float where an int belongs: only in range is it a number (the cast
   * of NaN or 1e34 is undefined); otherwise the attribute is ignored. */
  if (a->type == GRAFT_ATTR_FLOAT && a->f > -9.2e18 && a->f < 9.2e18)
    return (gint64) a->f;
  return fallback;
}

double
graft_node_attr_float (GraftNode *node, const char *name, double fallback)
{
  GraftAttribute *a = graft_node_get_attribute (node, name);
  if (a == NULL)
    return fallback;
  if (a->type == GRAFT_ATTR_FLOAT)
    return a->f;
  if (a->type == GRAFT_ATTR_INT || a->type == GRAFT_ATTR_BOOL)
    return (double) a->i;
  return fallback;
}

const char *
graft_node_attr_string (GraftNode *node, const char *name, const char *fallback)
{
  GraftAttribute *a = graft_node_get_attribute (node, name);
  if (a == NULL || a->type != GRAFT_ATTR_STRING || a->s == NULL)
    return fallback;
  /* Attribute strings are few and short: interning gives a stable pointer
   * without a cache to invalidate. */
  g_autofree char *copy = graft_attribute_dup_string (a);
  return g_intern_string (copy ? copy : "");
}

const gint64 *
graft_node_attr_ints (GraftNode *node, const char *name, guint *n)
{
  GraftAttribute *a = graft_node_get_attribute (node, name);
  *n = 0;
  if (a == NULL || a->type != GRAFT_ATTR_INTS || a->ints == NULL)
    return NULL;
  *n = a->ints->len;
  return (const gint64 *) a->ints->data;
}

const double *
graft_node_attr_floats (GraftNode *node, const char *name, guint *n)
{
  GraftAttribute *a = graft_node_get_attribute (node, name);
  *n = 0;
  if (a == NULL || a->type != GRAFT_ATTR_FLOATS || a->floats == NULL)
    return NULL;
  *n = a->floats->len;
  return (const double *) a->floats->data;
}

GraftGraph *
graft_node_attr_graph (GraftNode *node, const char *name)
{
  GraftAttribute *a = graft_node_get_attribute (node, name);
  if (a == NULL || a->type != GRAFT_ATTR_GRAPH)
    return NULL;
  return a->g;
}

/* Inference helpers */

GraftInferValue *
graft_infer_input (GraftInferContext *ctx, guint i)
{
  if (i >= ctx->n_inputs || !ctx->inputs[i].present)
    return NULL;
  return &ctx->inputs[i];
}

void
graft_infer_set_output (GraftInferContext *ctx, guint i, GraftDType dtype, const GraftShape *shape)
{
  if (i >= ctx->n_outputs)
    return;
  GraftInferValue *out = &ctx->outputs[i];
  graft_shape_clear (&out->shape);
  out->present = TRUE;
  out->kind = GRAFT_VALUE_TENSOR;
  out->dtype = dtype;
  if (shape)
    graft_shape_copy (&out->shape, shape);
  else
    out->shape = GRAFT_SHAPE_UNKNOWN;
}

void
graft_infer_set_output_fixed (GraftInferContext *ctx, guint i, GraftDType dtype, int rank, const gint64 *dims)
{
  GraftShape shape;
  graft_shape_init_fixed (&shape, rank, dims);
  graft_infer_set_output (ctx, i, dtype, &shape);
  graft_shape_clear (&shape);
}

void
graft_infer_set_output_unknown (GraftInferContext *ctx, guint i, GraftDType dtype, int rank)
{
  GraftShape shape = GRAFT_SHAPE_UNKNOWN;
  if (rank >= 0)
    graft_shape_init (&shape, rank);
  graft_infer_set_output (ctx, i, dtype, &shape);
  graft_shape_clear (&shape);
}

void
graft_infer_set_output_kind (GraftInferContext *ctx, guint i, GraftValueKind kind, GraftDType dtype)
{
  graft_infer_set_output (ctx, i, dtype, NULL);
  if (i < ctx->n_outputs)
    ctx->outputs[i].kind = kind;
}

gboolean
graft_infer_same_as_input (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *in = graft_infer_input (ctx, 0);
  if (in == NULL)
    return graft_kernel_fail (error, "input 0 is missing");
  graft_infer_set_output (ctx, 0, in->dtype, &in->shape);
  return TRUE;
}

gboolean
graft_shape_broadcast (const GraftShape *a, const GraftShape *b, GraftShape *out, GError **error)
{
  if (a->rank < 0 || b->rank < 0)
    {
      *out = GRAFT_SHAPE_UNKNOWN;
      return TRUE;
    }
  int rank = MAX (a->rank, b->rank);
  graft_shape_init (out, rank);
  for (int i = 0; i < rank; i++)
    {
      int ia = i - (rank - a->rank), ib = i - (rank - b->rank);
      GraftDim da = ia >= 0 ? a->dims[ia] : graft_dim_fixed (1);
      GraftDim db = ib >= 0 ? b->dims[ib] : graft_dim_fixed (1);
      GraftDim r;
      if (da.kind == GRAFT_DIM_FIXED && da.value == 1)
        r = db;
      else if (db.kind == GRAFT_DIM_FIXED && db.value == 1)
        r = da;
      else if (da.kind == GRAFT_DIM_FIXED && db.kind == GRAFT_DIM_FIXED)
        {
          if (da.value != db.value)
            {
              g_autofree char *sa = graft_shape_to_string (a);
              g_autofree char *sb = graft_shape_to_string (b);
              graft_shape_clear (out);
              return graft_kernel_fail (error, "shapes %s and %s do not broadcast", sa, sb);
            }
          r = da;
        }
      else if (graft_dim_equal (&da, &db))
        r = da;
      else if (da.kind == GRAFT_DIM_FIXED)
        r = da;   /* the symbol must be 1 or equal to it */
      else if (db.kind == GRAFT_DIM_FIXED)
        r = db;
      else
        r = graft_dim_unknown ();
      out->dims[i] = r;
    }
  return TRUE;
}

gint64 *
graft_infer_input_ints (GraftInferContext *ctx, guint i, gint64 *n)
{
  GraftInferValue *in = graft_infer_input (ctx, i);
  *n = 0;
  if (in == NULL || in->data == NULL || in->data->kind != GRAFT_RT_TENSOR)
    return NULL;
  GraftRtTensor *t = in->data;
  if (!graft_dtype_is_integer (t->dtype) && t->dtype != GRAFT_DTYPE_BOOL)
    return NULL;
  gint64 *values = g_new (gint64, MAX (t->numel, 1));
  for (gint64 k = 0; k < t->numel; k++)
    values[k] = graft_rt_tensor_get_i64 (t, k);
  *n = t->numel;
  return values;
}

gboolean
graft_normalize_axis (gint64 *axis, int rank, GError **error)
{
  gint64 a = *axis;
  if (a < -rank || a >= MAX (rank, 1))
    {
      if (!(rank == 0 && (a == 0 || a == -1)))
        return graft_kernel_fail (error, "axis %" G_GINT64_FORMAT " is out of range for rank %d", a, rank);
    }
  if (a < 0)
    a += rank;
  *axis = MAX (a, 0);
  return TRUE;
}

void
graft_rt_strides (int rank, const gint64 *dims, gint64 *strides)
{
  gint64 s = 1;
  for (int i = rank - 1; i >= 0; i--)
    {
      strides[i] = s;
      s *= dims[i];
    }
}
