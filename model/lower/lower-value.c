/* Lowered values, the source node's arguments, and emitting ONNX nodes
 * with their types from the runtime registry's shape logic. */
#include "lower/lower-private.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>
#include "ir/model-error.h"
#include "onnx/type-proto.h"

typedef struct {
  GraftValueKind kind;       /* TENSOR or SEQUENCE (then dtype and shape are its tensors') */
  GraftDType dtype;
  GraftShape shape;
} LowerType;

static void
lower_type_free (gpointer data)
{
  LowerType *type = data;
  graft_shape_clear (&type->shape);
  g_free (type);
}

GHashTable *
_graft_lower_types_new (void)
{
  return g_hash_table_new_full (NULL, NULL, NULL, lower_type_free);
}

/* ---- LowerValue ---- */

LowerValue *
graft_lower_value_tensor (GraftValue *value, gboolean scalar)
{
  LowerValue *v = g_new0 (LowerValue, 1);
  v->kind = LOWER_TENSOR;
  v->value = value;
  v->scalar = scalar;
  return v;
}

LowerValue *
graft_lower_value_sequence (GraftValue *value)
{
  LowerValue *v = g_new0 (LowerValue, 1);
  v->kind = LOWER_SEQUENCE;
  v->value = value;
  return v;
}

static GraftAttribute *
attribute_copy (const GraftAttribute *a)
{
  GraftAttribute *c = graft_attribute_new (a->name, a->type);
  c->f = a->f;
  c->i = a->i;
  if (a->s)
    c->s = g_bytes_ref (a->s);
  if (a->t)
    c->t = graft_tensor_ref (a->t);
  if (a->floats)
    {
      c->floats = g_array_new (FALSE, FALSE, sizeof (double));
      g_array_append_vals (c->floats, a->floats->data, a->floats->len);
    }
  if (a->ints)
    {
      c->ints = g_array_new (FALSE, FALSE, sizeof (gint64));
      g_array_append_vals (c->ints, a->ints->data, a->ints->len);
    }
  if (a->strings)
    {
      c->strings = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
      for (guint i = 0; i < a->strings->len; i++)
        g_ptr_array_add (c->strings, g_bytes_ref (a->strings->pdata[i]));
    }
  return c;
}

LowerValue *
graft_lower_value_const (const GraftAttribute *constant)
{
  LowerValue *v = g_new0 (LowerValue, 1);
  if (constant->type == GRAFT_ATTR_NONE)
    return v;
  v->kind = LOWER_CONST;
  v->constant = attribute_copy (constant);
  return v;
}

LowerValue *
graft_lower_value_list (void)
{
  LowerValue *v = g_new0 (LowerValue, 1);
  v->kind = LOWER_LIST;
  v->items = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_lower_value_free);
  return v;
}

LowerValue *
graft_lower_value_copy (const LowerValue *value)
{
  LowerValue *v = g_new0 (LowerValue, 1);
  *v = *value;
  if (value->constant)
    v->constant = attribute_copy (value->constant);
  if (value->items)
    {
      v->items = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_lower_value_free);
      for (guint i = 0; i < value->items->len; i++)
        g_ptr_array_add (v->items, graft_lower_value_copy (value->items->pdata[i]));
    }
  return v;
}

void
graft_lower_value_free (LowerValue *value)
{
  if (value == NULL)
    return;
  g_clear_pointer (&value->constant, graft_attribute_free);
  g_clear_pointer (&value->items, g_ptr_array_unref);
  g_free (value);
}

gboolean
graft_lower_same_constant (const GraftAttribute *a, const GraftAttribute *b)
{
  if (a->type == GRAFT_ATTR_STRING && b->type == GRAFT_ATTR_STRING)
    return g_bytes_equal (a->s, b->s);
  if ((a->type == GRAFT_ATTR_INT || a->type == GRAFT_ATTR_BOOL) && (b->type == GRAFT_ATTR_INT || b->type == GRAFT_ATTR_BOOL))
    return a->i == b->i;
  if (a->type == GRAFT_ATTR_FLOAT && b->type == GRAFT_ATTR_FLOAT)
    return a->f == b->f;
  return FALSE;
}

/* The position of key among dict's keys, or -1; FALSE when a key is
 * not a constant. */
gboolean
graft_lower_dict_find (LowerValue *dict, LowerValue *key, gint *at)
{
  *at = -1;
  if (key == NULL || key->kind != LOWER_CONST)
    return FALSE;
  for (guint i = 0; i + 1 < dict->items->len; i += 2)
    {
      LowerValue *k = dict->items->pdata[i];
      if (k->kind != LOWER_CONST)
        return FALSE;
      if (graft_lower_same_constant (k->constant, key->constant))
        {
          *at = i;
          return TRUE;
        }
    }
  return TRUE;
}

/* ---- errors ---- */

gboolean
graft_lower_fail (GError **error, GraftNode *node, const char *format, ...)
{
  va_list args;
  va_start (args, format);
  g_autofree char *message = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED, "node '%s' (%s): %s",
               node ? node->name : "", node ? node->op : "", message);
  return FALSE;
}

/* ---- types of target values ---- */

static LowerType *
type_of (GraftLowerContext *ctx, GraftValue *value)
{
  return value ? g_hash_table_lookup (ctx->types, value) : NULL;
}

static void
set_type (GraftLowerContext *ctx, GraftValue *value, GraftDType dtype, const GraftShape *shape)
{
  LowerType *type = g_new0 (LowerType, 1);
  type->dtype = dtype;
  graft_shape_copy (&type->shape, shape);
  g_hash_table_replace (ctx->types, value, type);
}

void
_graft_lower_declare_type (GraftLowerContext *ctx, GraftValue *value, GraftDType dtype, const GraftShape *shape)
{
  set_type (ctx, value, dtype, shape);
}

void
graft_lower_declare_sequence (GraftLowerContext *ctx, GraftValue *value, GraftDType elem_dtype, int elem_rank)
{
  GraftShape shape;
  graft_shape_init (&shape, elem_rank);
  set_type (ctx, value, elem_dtype, &shape);
  graft_shape_clear (&shape);
  type_of (ctx, value)->kind = GRAFT_VALUE_SEQUENCE;
  if (!value->is_graph_input && !value->is_graph_output)
    return;
  /* The file says seq(tensor(dtype)), the tensors' shapes left open (they
   * may differ); an empty list whose tensors nothing typed holds floats. */
  if (elem_dtype == GRAFT_DTYPE_UNDEFINED)
    elem_dtype = GRAFT_DTYPE_FLOAT32;
  value->kind = GRAFT_VALUE_SEQUENCE;
  value->dtype = elem_dtype;
  graft_shape_clear (&value->shape);
  value->shape = GRAFT_SHAPE_UNKNOWN;
  g_free (value->type_string);
  value->type_string = g_strdup_printf ("seq(tensor(%s))", graft_onnx_elem_type_name (elem_dtype));
}

gboolean
graft_lower_is_sequence (GraftLowerContext *ctx, GraftValue *value)
{
  LowerType *type = type_of (ctx, value);
  return type != NULL && type->kind == GRAFT_VALUE_SEQUENCE;
}

const GraftShape *
graft_lower_shape (GraftLowerContext *ctx, GraftValue *value)
{
  static const GraftShape unknown = { -1, NULL };
  LowerType *type = type_of (ctx, value);
  return type ? &type->shape : &unknown;
}

int
graft_lower_rank (GraftLowerContext *ctx, GraftValue *value)
{
  return graft_lower_shape (ctx, value)->rank;
}

GraftDType
graft_lower_dtype (GraftLowerContext *ctx, GraftValue *value)
{
  LowerType *type = type_of (ctx, value);
  return type ? type->dtype : GRAFT_DTYPE_UNDEFINED;
}

gboolean
graft_lower_need_rank (GraftLowerContext *ctx, GraftValue *value, int *rank, GError **error)
{
  *rank = graft_lower_rank (ctx, value);
  if (*rank >= 0)
    return TRUE;
  g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED,
               "the rank of '%s' is unknown here; give the inputs' shapes (--shape NAME=1x3x224x224)",
               value ? value->name : "?");
  return FALSE;
}

/* Constant data of small initializers, for the registry's shape logic
 * (Reshape's target, Slice's starts). */
static GraftRtTensor *
rt_data_for (GraftLowerContext *ctx, GraftValue *value)
{
  GraftRtTensor *data = g_hash_table_lookup (ctx->rt_data, value);
  if (data != NULL || value->initializer == NULL || graft_tensor_get_numel (value->initializer) > 64)
    return data;
  data = graft_rt_tensor_new_from_tensor (value->initializer, NULL);
  if (data != NULL)
    g_hash_table_insert (ctx->rt_data, value, data);
  return data;
}

/* The registry's inference for an emitted node; outputs it cannot type
 * stay unknown (the file is still valid: ONNX infers them again). */
static void
infer_node (GraftLowerContext *ctx, GraftNode *node)
{
  const GraftOpSchema *schema = graft_op_registry_lookup (node->op, ctx->opset);
  GraftInferContext ic = { 0 };

  if (schema == NULL || schema->infer == NULL)
    return;
  ic.node = node;
  ic.opset = ctx->opset;
  ic.n_inputs = node->inputs->len;
  ic.inputs = g_new0 (GraftInferValue, MAX (ic.n_inputs, 1));
  ic.n_outputs = node->outputs->len;
  ic.outputs = g_new0 (GraftInferValue, MAX (ic.n_outputs, 1));
  for (guint i = 0; i < ic.n_outputs; i++)
    ic.outputs[i].shape = GRAFT_SHAPE_UNKNOWN;
  for (guint i = 0; i < ic.n_inputs; i++)
    {
      GraftValue *v = g_ptr_array_index (node->inputs, i);
      LowerType *type = type_of (ctx, v);
      ic.inputs[i].shape = GRAFT_SHAPE_UNKNOWN;
      if (v == NULL)
        continue;
      ic.inputs[i].present = TRUE;
      ic.inputs[i].kind = type != NULL ? type->kind : GRAFT_VALUE_TENSOR;
      if (type != NULL)
        {
          ic.inputs[i].dtype = type->dtype;
          graft_shape_copy (&ic.inputs[i].shape, &type->shape);
        }
      ic.inputs[i].data = rt_data_for (ctx, v);
    }
  if (schema->infer (&ic, NULL))
    for (guint i = 0; i < ic.n_outputs; i++)
      {
        GraftValue *out = g_ptr_array_index (node->outputs, i);
        if (ic.outputs[i].present && out != NULL)
          {
            set_type (ctx, out, ic.outputs[i].dtype, &ic.outputs[i].shape);
            type_of (ctx, out)->kind = ic.outputs[i].kind;
          }
      }
  for (guint i = 0; i < ic.n_inputs; i++)
    graft_shape_clear (&ic.inputs[i].shape);
  for (guint i = 0; i < ic.n_outputs; i++)
    graft_shape_clear (&ic.outputs[i].shape);
  g_free (ic.inputs);
  g_free (ic.outputs);
}

/* Where the registry cannot type an output (its inputs' dims are not all
 * known), the rank of elementwise and matrix ops is still the largest
 * input rank: enough for the lowerings that need ranks. */
static const char *const broadcast_ops[] = {
  "onnx::Add", "onnx::Sub", "onnx::Mul", "onnx::Div", "onnx::Pow", "onnx::Where", "onnx::Max", "onnx::Min",
  "onnx::MatMul", "onnx::Mod", "onnx::Equal", "onnx::Less", "onnx::Greater", "onnx::LessOrEqual",
  "onnx::GreaterOrEqual", "onnx::And", "onnx::Or", "onnx::Softmax", "onnx::LogSoftmax", "onnx::Relu",
  "onnx::Sigmoid", "onnx::Tanh", "onnx::Erf", "onnx::Cast", "onnx::Not", "onnx::Clip", "onnx::Neg", "onnx::Sqrt",
  "onnx::LayerNormalization", "onnx::Identity", "onnx::Exp", "onnx::Abs", "onnx::HardSwish", "onnx::HardSigmoid", NULL,
};

static void
infer_rank_fallback (GraftLowerContext *ctx, GraftNode *node)
{
  GraftValue *out = node->outputs->len > 0 ? g_ptr_array_index (node->outputs, 0) : NULL;
  if (out == NULL || graft_lower_rank (ctx, out) >= 0 || !g_strv_contains (broadcast_ops, node->op))
    return;
  int rank = -1;
  GraftDType dtype = GRAFT_DTYPE_UNDEFINED;
  for (guint i = 0; i < node->inputs->len; i++)
    {
      GraftValue *in = g_ptr_array_index (node->inputs, i);
      if (in == NULL)
        continue;
      if (graft_lower_rank (ctx, in) < 0)
        return;
      rank = MAX (rank, graft_lower_rank (ctx, in));
      if (dtype == GRAFT_DTYPE_UNDEFINED || (strcmp (node->op, "onnx::Where") == 0 && i == 1))
        dtype = graft_lower_dtype (ctx, in);
      if (strcmp (node->op, "onnx::Clip") == 0 || strcmp (node->op, "onnx::LayerNormalization") == 0)
        break;
    }
  if (strcmp (node->op, "onnx::Cast") == 0)
    dtype = graft_node_attr_int (node, "to", dtype);
  else if (strcmp (node->op, "onnx::Equal") == 0 || g_str_has_prefix (node->op, "onnx::Less") ||
           g_str_has_prefix (node->op, "onnx::Greater") || strcmp (node->op, "onnx::Not") == 0 ||
           strcmp (node->op, "onnx::And") == 0 || strcmp (node->op, "onnx::Or") == 0)
    dtype = GRAFT_DTYPE_BOOL;
  GraftShape shape;
  graft_shape_init (&shape, rank);
  set_type (ctx, out, dtype, &shape);
  graft_shape_clear (&shape);
}

/* ---- emitting ---- */

char *
_graft_lower_unique_node_name (GraftLowerContext *ctx, const char *op_type)
{
  g_autofree char *base = g_strdup_printf ("%s/%s", ctx->scope ? ctx->scope : "", op_type);
  char *name = g_strdup (base);
  for (guint n = 1; g_hash_table_contains (ctx->node_names, name); n++)
    {
      g_free (name);
      name = g_strdup_printf ("%s_%u", base, n);
    }
  g_hash_table_add (ctx->node_names, g_strdup (name));
  return name;
}

static GraftNode *
node_new (GraftLowerContext *ctx, const char *domain, const char *op_type, guint n_outputs)
{
  g_autofree char *name = _graft_lower_unique_node_name (ctx, op_type);
  GraftNode *node = graft_graph_add_node (ctx->graph, domain, op_type, name);
  for (guint k = 0; k < n_outputs; k++)
    {
      g_autofree char *value_name = g_strdup_printf ("%s_output_%u", name, k);
      graft_node_add_output (node, graft_graph_ensure_value (ctx->graph, value_name));
    }
  return node;
}

GraftNode *
_graft_lower_custom_node (GraftLowerContext *ctx, const char *domain, const char *op_type, guint n_outputs)
{
  return node_new (ctx, domain, op_type, n_outputs);
}

GraftNode *
graft_lower_node (GraftLowerContext *ctx, const char *op_type, guint n_outputs, guint n_inputs, ...)
{
  GraftNode *node = node_new (ctx, NULL, op_type, n_outputs);
  va_list args;
  va_start (args, n_inputs);
  for (guint i = 0; i < n_inputs; i++)
    graft_node_add_input (node, va_arg (args, GraftValue *));
  va_end (args);
  return node;
}

GraftValue *
graft_lower_finish (GraftLowerContext *ctx, GraftNode *node)
{
  infer_node (ctx, node);
  infer_rank_fallback (ctx, node);
  return node->outputs->len > 0 ? g_ptr_array_index (node->outputs, 0) : NULL;
}

GraftValue *
graft_lower_op (GraftLowerContext *ctx, const char *op_type, guint n_inputs, ...)
{
  GraftNode *node = node_new (ctx, NULL, op_type, 1);
  va_list args;
  va_start (args, n_inputs);
  for (guint i = 0; i < n_inputs; i++)
    graft_node_add_input (node, va_arg (args, GraftValue *));
  va_end (args);
  return graft_lower_finish (ctx, node);
}

/* ---- constants: initializers of the main graph ---- */

GraftValue *
_graft_lower_add_constant (GraftLowerContext *ctx, GraftTensor *tensor /* transfer full */)
{
  g_autofree char *name = NULL;
  do
    {
      g_free (name);
      name = g_strdup_printf ("%s/Constant_%u", ctx->scope ? ctx->scope : "", ctx->n_constants++);
    }
  while (graft_graph_lookup_value (ctx->main_graph, name) != NULL);
  GraftValue *value = graft_graph_ensure_value (ctx->main_graph, name);
  g_free (tensor->name);
  tensor->name = g_strdup (name);
  GraftShape shape;
  graft_shape_init_fixed (&shape, tensor->rank, tensor->dims);
  set_type (ctx, value, tensor->dtype, &shape);
  graft_shape_clear (&shape);
  value->dtype = tensor->dtype;
  graft_graph_add_initializer (ctx->main_graph, value, tensor);
  return value;
}

static GraftValue *
constant_from_data (GraftLowerContext *ctx, GraftDType dtype, int rank, const gint64 *dims, gconstpointer data,
                    gsize nbytes)
{
  GraftTensor *tensor = graft_tensor_new (NULL, dtype, rank, dims);
  g_autoptr(GBytes) bytes = g_bytes_new (data, nbytes);
  graft_tensor_set_data (tensor, bytes, NULL);
  return _graft_lower_add_constant (ctx, tensor);
}

GraftValue *
graft_lower_const_ints (GraftLowerContext *ctx, const gint64 *values, guint n, gboolean scalar)
{
  gint64 dims[1] = { n };
  return constant_from_data (ctx, GRAFT_DTYPE_INT64, scalar ? 0 : 1, dims, values, n * sizeof (gint64));
}

GraftValue *
graft_lower_const_int (GraftLowerContext *ctx, gint64 value)
{
  return graft_lower_const_ints (ctx, &value, 1, FALSE);
}

GraftValue *
graft_lower_const_scalar (GraftLowerContext *ctx, GraftDType dtype, double value)
{
  guint8 buffer[8];
  switch (dtype)
    {
    case GRAFT_DTYPE_FLOAT64: { double v = value; memcpy (buffer, &v, 8); break; }
    case GRAFT_DTYPE_INT64: { gint64 v = (gint64) value; memcpy (buffer, &v, 8); break; }
    case GRAFT_DTYPE_INT32: { gint32 v = (gint32) value; memcpy (buffer, &v, 4); break; }
    case GRAFT_DTYPE_BOOL: buffer[0] = value != 0; break;
    default: dtype = GRAFT_DTYPE_FLOAT32; { float v = (float) value; memcpy (buffer, &v, 4); break; }
    }
  return constant_from_data (ctx, dtype, 0, NULL, buffer, graft_dtype_get_size (dtype));
}

GraftValue *
graft_lower_const_attribute (GraftLowerContext *ctx, const GraftAttribute *constant, GError **error)
{
  switch (constant->type)
    {
    case GRAFT_ATTR_INT:
      /* not through a double: while loops count to INT64_MAX */
      return graft_lower_const_ints (ctx, &constant->i, 1, TRUE);
    case GRAFT_ATTR_BOOL:
      return graft_lower_const_scalar (ctx, GRAFT_DTYPE_BOOL, (double) constant->i);
    case GRAFT_ATTR_FLOAT:
      return graft_lower_const_scalar (ctx, GRAFT_DTYPE_FLOAT32, constant->f);
    case GRAFT_ATTR_INTS:
      return graft_lower_const_ints (ctx, (const gint64 *) constant->ints->data, constant->ints->len, FALSE);
    case GRAFT_ATTR_FLOATS:
      {
        g_autofree float *values = g_new (float, MAX (constant->floats->len, 1));
        gint64 n = constant->floats->len;
        for (guint i = 0; i < constant->floats->len; i++)
          values[i] = (float) g_array_index (constant->floats, double, i);
        return constant_from_data (ctx, GRAFT_DTYPE_FLOAT32, 1, &n, values, n * sizeof (float));
      }
    case GRAFT_ATTR_TENSOR:
      {
        GraftTensor *t = graft_tensor_new (NULL, constant->t->dtype, constant->t->rank, constant->t->dims);
        GBytes *data = graft_tensor_get_data (constant->t, error);
        if (data == NULL || !graft_tensor_set_data (t, data, error))
          {
            graft_tensor_unref (t);
            return NULL;
          }
        return _graft_lower_add_constant (ctx, t);
      }
    default:
      g_set_error (error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_UNSUPPORTED,
                   "a constant of type %s has no ONNX tensor form", graft_attr_type_to_string (constant->type));
      return NULL;
    }
}

GraftValue *
graft_lower_cast (GraftLowerContext *ctx, GraftValue *value, GraftDType dtype)
{
  if (graft_lower_dtype (ctx, value) == dtype)
    return value;
  GraftNode *node = graft_lower_node (ctx, "Cast", 1, 1, value);
  graft_node_add_attribute (node, graft_attribute_new_int ("to", dtype));
  return graft_lower_finish (ctx, node);
}

/* ---- binding source values ---- */

void
graft_lower_bind (GraftLowerContext *ctx, GraftValue *source, LowerValue *value)
{
  if (source == NULL)
    {
      graft_lower_value_free (value);
      return;
    }
  g_hash_table_replace (ctx->map, source, value);
}

LowerValue *
graft_lower_lookup (GraftLowerContext *ctx, GraftValue *source)
{
  LowerValue *v = g_hash_table_lookup (ctx->map, source);
  if (v != NULL || source->initializer == NULL)
    return v;
  /* A parameter or buffer: an initializer sharing the tensor's data. */
  GraftValue *init = graft_graph_ensure_value (ctx->main_graph, source->name);
  GraftTensor *tensor = source->initializer;
  GraftShape shape;
  graft_shape_init_fixed (&shape, tensor->rank, tensor->dims);
  set_type (ctx, init, tensor->dtype, &shape);
  graft_shape_clear (&shape);
  init->dtype = tensor->dtype;
  graft_graph_add_initializer (ctx->main_graph, init, graft_tensor_ref (tensor));
  v = graft_lower_value_tensor (init, tensor->rank == 0);
  g_hash_table_insert (ctx->map, source, v);
  return v;
}

/* A torch.export program records every value's dtype and shape: where the
 * registry's shape logic lost them (after an op it cannot type), the
 * program's own metadata gives the rank and the fixed dims (its symbols
 * stay unknown dims: the file names dims after the inputs). */
static void
adopt_program_type (GraftLowerContext *ctx, GraftValue *source, GraftValue *value)
{
  if (graft_model_get_format (ctx->source) != GRAFT_MODEL_FORMAT_EXPORTED_PROGRAM || source->shape.rank < 0 ||
      source->kind != GRAFT_VALUE_TENSOR || graft_lower_is_sequence (ctx, value))
    return;
  const GraftShape *known = graft_lower_shape (ctx, value);
  if (known->rank >= 0 && known->rank != source->shape.rank)
    return;
  GraftShape shape;
  if (known->rank >= 0)
    graft_shape_copy (&shape, known);
  else
    graft_shape_init (&shape, source->shape.rank);
  gboolean changed = known->rank < 0;
  for (int d = 0; d < shape.rank; d++)
    if (shape.dims[d].kind == GRAFT_DIM_UNKNOWN && source->shape.dims[d].kind == GRAFT_DIM_FIXED)
      {
        shape.dims[d] = source->shape.dims[d];
        changed = TRUE;
      }
  GraftDType dtype = graft_lower_dtype (ctx, value);
  if (dtype == GRAFT_DTYPE_UNDEFINED && source->dtype != GRAFT_DTYPE_UNDEFINED)
    dtype = source->dtype, changed = TRUE;
  if (changed)
    set_type (ctx, value, dtype, &shape);
  graft_shape_clear (&shape);
}

void
graft_lower_set_output (GraftLowerContext *ctx, GraftNode *node, guint k, GraftValue *value)
{
  if (k >= node->outputs->len)
    return;
  adopt_program_type (ctx, g_ptr_array_index (node->outputs, k), value);
  graft_lower_bind (ctx, g_ptr_array_index (node->outputs, k), graft_lower_value_tensor (value, FALSE));
}

void
graft_lower_set_output_scalar (GraftLowerContext *ctx, GraftNode *node, guint k, GraftValue *value)
{
  if (k >= node->outputs->len)
    return;
  adopt_program_type (ctx, g_ptr_array_index (node->outputs, k), value);
  graft_lower_bind (ctx, g_ptr_array_index (node->outputs, k), graft_lower_value_tensor (value, TRUE));
}

/* ---- arguments ---- */

static const char *
keyword_of (const GraftLowering *row, guint k, char *buffer, gsize size)
{
  if (row == NULL || row->arguments == NULL)
    return NULL;
  const char *p = row->arguments;
  for (guint i = 0; i < k && p; i++)
    {
      p = strchr (p, ' ');
      if (p)
        p++;
    }
  if (p == NULL || *p == '\0')
    return NULL;
  gsize n = strcspn (p, " ");
  if (n == 0 || n >= size)
    return NULL;
  memcpy (buffer, p, n);
  buffer[n] = '\0';
  return buffer;
}

/* The attribute at position k, or the index of the input that holds it. */
static GraftAttribute *
locate_arg (GraftLowerContext *ctx, GraftNode *node, guint k, gint *input)
{
  guint next_input = 0;
  *input = -1;
  for (guint i = 0; i <= k; i++)
    {
      char key[16], buffer[64];
      g_snprintf (key, sizeof key, "arg%u", i);
      GraftAttribute *a = graft_node_get_attribute (node, key);
      const char *keyword = keyword_of (ctx->row, i, buffer, sizeof buffer);
      if (a == NULL && keyword != NULL)
        a = graft_node_get_attribute (node, keyword);
      if (i == k)
        {
          if (a == NULL && next_input < node->inputs->len)
            *input = next_input;
          return a;
        }
      if (a == NULL)
        next_input++;
    }
  return NULL;
}

/* Arguments made while lowering (constants as values) are kept here until
 * the node is done. */
LowerValue *
graft_lower_arg (GraftLowerContext *ctx, GraftNode *node, guint k)
{
  gint input;
  GraftAttribute *a = locate_arg (ctx, node, k, &input);
  if (a != NULL)
    {
      LowerValue *v = graft_lower_value_const (a);
      g_ptr_array_add (ctx->scratch, v);
      return v;
    }
  if (input < 0)
    return NULL;
  GraftValue *source = g_ptr_array_index (node->inputs, input);
  return source ? graft_lower_lookup (ctx, source) : NULL;
}

gboolean
graft_lower_arg_is_none (GraftLowerContext *ctx, GraftNode *node, guint k)
{
  LowerValue *v = graft_lower_arg (ctx, node, k);
  return v == NULL || v->kind == LOWER_NONE;
}

static gboolean
not_constant (GraftNode *node, guint k, GError **error)
{
  return graft_lower_fail (error, node, "argument %u must be a constant for the ONNX export", k);
}

gboolean
graft_lower_arg_int (GraftLowerContext *ctx, GraftNode *node, guint k, gint64 fallback, gint64 *out, GError **error)
{
  LowerValue *v = graft_lower_arg (ctx, node, k);
  *out = fallback;
  if (v == NULL || v->kind == LOWER_NONE)
    return TRUE;
  if (v->kind != LOWER_CONST)
    return not_constant (node, k, error);
  switch (v->constant->type)
    {
    case GRAFT_ATTR_INT: case GRAFT_ATTR_BOOL: *out = v->constant->i; return TRUE;
    case GRAFT_ATTR_FLOAT: *out = (gint64) v->constant->f; return TRUE;
    case GRAFT_ATTR_INTS:
      if (v->constant->ints->len == 1)
        {
          *out = g_array_index (v->constant->ints, gint64, 0);
          return TRUE;
        }
      break;
    default: break;
    }
  return graft_lower_fail (error, node, "argument %u is not an int", k);
}

gboolean
graft_lower_arg_double (GraftLowerContext *ctx, GraftNode *node, guint k, double fallback, double *out,
                        GError **error)
{
  LowerValue *v = graft_lower_arg (ctx, node, k);
  *out = fallback;
  if (v == NULL || v->kind == LOWER_NONE)
    return TRUE;
  if (v->kind != LOWER_CONST)
    return not_constant (node, k, error);
  switch (v->constant->type)
    {
    case GRAFT_ATTR_INT: case GRAFT_ATTR_BOOL: *out = (double) v->constant->i; return TRUE;
    case GRAFT_ATTR_FLOAT: *out = v->constant->f; return TRUE;
    default: return graft_lower_fail (error, node, "argument %u is not a number", k);
    }
}

static gboolean
const_list_ints (LowerValue *v, gint64 *values, guint max, guint *n)
{
  if (v->kind == LOWER_CONST && v->constant->type == GRAFT_ATTR_INTS && v->constant->ints->len <= max)
    {
      *n = v->constant->ints->len;
      if (*n > 0) /* an empty GArray's data may be NULL, which memcpy must not get */
        memcpy (values, v->constant->ints->data, *n * sizeof (gint64));
      return TRUE;
    }
  if (v->kind == LOWER_CONST && (v->constant->type == GRAFT_ATTR_INT || v->constant->type == GRAFT_ATTR_BOOL))
    {
      *n = 1;
      values[0] = v->constant->i;
      return TRUE;
    }
  if (v->kind == LOWER_LIST && v->items->len <= max)
    {
      for (guint i = 0; i < v->items->len; i++)
        {
          LowerValue *item = v->items->pdata[i];
          if (item->kind != LOWER_CONST || (item->constant->type != GRAFT_ATTR_INT && item->constant->type != GRAFT_ATTR_BOOL))
            return FALSE;
          values[i] = item->constant->i;
        }
      *n = v->items->len;
      return TRUE;
    }
  return FALSE;
}

gboolean
graft_lower_arg_ints (GraftLowerContext *ctx, GraftNode *node, guint k, gint64 *values, guint max, guint *n,
                      guint repeat, GError **error)
{
  LowerValue *v = graft_lower_arg (ctx, node, k);
  *n = 0;
  if (v == NULL || v->kind == LOWER_NONE)
    return TRUE;
  if (!const_list_ints (v, values, max, n))
    return graft_lower_fail (error, node, "argument %u must be a constant int list for the ONNX export", k);
  if (*n == 1 && repeat > 1 && repeat <= max)
    {
      for (guint i = 1; i < repeat; i++)
        values[i] = values[0];
      *n = repeat;
    }
  return TRUE;
}

static GraftValue *
value_as_tensor (GraftLowerContext *ctx, GraftNode *node, guint k, LowerValue *v, GError **error)
{
  if (v == NULL || v->kind == LOWER_NONE)
    {
      graft_lower_fail (error, node, "argument %u is missing", k);
      return NULL;
    }
  if (v->kind == LOWER_TENSOR)
    return v->value;
  if (v->kind == LOWER_CONST)
    return graft_lower_const_attribute (ctx, v->constant, error);
  graft_lower_fail (error, node, "argument %u is a list%s where a tensor is expected", k,
                    v->kind == LOWER_SEQUENCE ? " grown at run time (an ONNX sequence)" : "");
  return NULL;
}

GraftValue *
graft_lower_arg_tensor (GraftLowerContext *ctx, GraftNode *node, guint k, GError **error)
{
  return value_as_tensor (ctx, node, k, graft_lower_arg (ctx, node, k), error);
}

GraftValue *
graft_lower_arg_like (GraftLowerContext *ctx, GraftNode *node, guint k, GraftValue *like, GError **error)
{
  LowerValue *v = graft_lower_arg (ctx, node, k);
  GraftDType dtype = graft_lower_dtype (ctx, like);
  if (v != NULL && v->kind == LOWER_CONST && dtype != GRAFT_DTYPE_UNDEFINED &&
      (v->constant->type == GRAFT_ATTR_INT || v->constant->type == GRAFT_ATTR_FLOAT ||
       v->constant->type == GRAFT_ATTR_BOOL))
    {
      double number = v->constant->type == GRAFT_ATTR_FLOAT ? v->constant->f : (double) v->constant->i;
      /* torch promotes int tensor × float scalar to float */
      if (!graft_dtype_is_float (dtype) && v->constant->type == GRAFT_ATTR_FLOAT)
        dtype = GRAFT_DTYPE_FLOAT32;
      return graft_lower_const_scalar (ctx, dtype, number);
    }
  GraftValue *t = value_as_tensor (ctx, node, k, v, error);
  if (t == NULL)
    return NULL;
  GraftDType other = graft_lower_dtype (ctx, t);
  /* A TorchScript scalar takes the tensor's dtype (a Python number does
   * not promote a float32 tensor); a 0-d tensor of another kind does not. */
  if (v->scalar && dtype != GRAFT_DTYPE_UNDEFINED && other != dtype &&
      (graft_dtype_is_float (dtype) || !graft_dtype_is_float (other)))
    return graft_lower_cast (ctx, t, dtype);
  return t;
}

GraftValue *
graft_lower_arg_int_vector (GraftLowerContext *ctx, GraftNode *node, guint k, GError **error)
{
  return graft_lower_int_vector (ctx, node, k, graft_lower_arg (ctx, node, k), error);
}

GraftValue *
graft_lower_int_vector (GraftLowerContext *ctx, GraftNode *node, guint k, LowerValue *v, GError **error)
{
  gint64 values[64];
  guint n;
  if (v == NULL || v->kind == LOWER_NONE)
    {
      graft_lower_fail (error, node, "argument %u is missing", k);
      return NULL;
    }
  if (const_list_ints (v, values, G_N_ELEMENTS (values), &n))
    return graft_lower_const_ints (ctx, values, n, FALSE);
  if (v->kind == LOWER_TENSOR)
    {
      int rank = graft_lower_rank (ctx, v->value);
      GraftValue *t = graft_lower_cast (ctx, v->value, GRAFT_DTYPE_INT64);
      if (rank == 0 || v->scalar)
        t = graft_lower_op (ctx, "Unsqueeze", 2, t, graft_lower_const_int (ctx, 0));
      return t;
    }
  if (v->kind != LOWER_LIST)
    {
      graft_lower_fail (error, node, "argument %u is not an int list", k);
      return NULL;
    }
  /* A list with symbolic items: each item as a 1-element vector, concatenated. */
  g_autoptr(GPtrArray) parts = g_ptr_array_new ();
  for (guint i = 0; i < v->items->len; i++)
    {
      LowerValue *item = v->items->pdata[i];
      GraftValue *t;
      if (item->kind == LOWER_CONST && (item->constant->type == GRAFT_ATTR_INT || item->constant->type == GRAFT_ATTR_BOOL))
        t = graft_lower_const_int (ctx, item->constant->i);
      else if (item->kind == LOWER_TENSOR)
        {
          t = graft_lower_cast (ctx, item->value, GRAFT_DTYPE_INT64);
          if (graft_lower_rank (ctx, t) != 1)
            t = graft_lower_op (ctx, "Reshape", 2, t, graft_lower_const_int (ctx, 1));
        }
      else
        {
          graft_lower_fail (error, node, "item %u of argument %u is not an int", i, k);
          return NULL;
        }
      g_ptr_array_add (parts, t);
    }
  return graft_lower_concat (ctx, parts, 0);
}

GraftValue *
graft_lower_concat (GraftLowerContext *ctx, GPtrArray *inputs, gint64 axis)
{
  /* Made after its inputs, so that the nodes stay in topological order. */
  GraftNode *concat = graft_lower_node (ctx, "Concat", 1, 0);
  graft_node_add_attribute (concat, graft_attribute_new_int ("axis", axis));
  for (guint i = 0; i < inputs->len; i++)
    graft_node_add_input (concat, inputs->pdata[i]);
  return graft_lower_finish (ctx, concat);
}

