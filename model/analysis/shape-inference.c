#include "analysis/shape-inference.h"
#include "analysis/baked-shape.h"
#include "analysis/inference-private.h"
#include "ir/sym-dim.h"
#include "runtime/op.h"
#include "runtime/rt-tensor.h"

#include <string.h>

/* Integer constants larger than this are not followed as data. */
#define MAX_DATA_ELEMENTS 4096

typedef struct {
  GraftDType dtype;
  GraftShape shape;
} InferredType;

struct _GraftInference {
  gatomicrefcount ref_count;
  GHashTable *types;       /* GraftValue* → InferredType*, owned */
  GHashTable *data;        /* GraftValue* → GArray<GraftDim>, owned */
  /* A run over a base (GraftShapeInferenceOptions.base) holds only what
   * differs from it: the values in owned read from types and data (absent
   * there: not inferred), every other value as base has it. */
  GraftInference *base;    /* a reference, or NULL */
  GHashTable *owned;       /* GraftValue* set, with base */
};

typedef struct {
  GraftModel *model;
  GraftInference *result;  /* what the run found; also what it reads back */
  GHashTable *data;        /* result->data */
  GHashTable *rt_data;     /* GraftValue* → GraftRtTensor*, owned */
  GraftShapeInferenceReport *report;
  GHashTable *overrides;   /* GraftNode* → GArray<GraftShapeOverride>, may be NULL */
  GHashTable *input_shapes;/* GraftValue* → GraftShape*, may be NULL */
  GraftDType given_input_dtype;
} Inferer;

typedef struct {
  GraftDType dtype;
  GraftShape shape;
  gboolean present;
  GArray *data;            /* owned, may be NULL */
} Output;

static void
dims_array_free (gpointer array)
{
  g_array_unref (array);
}

static GArray *
dims_new (void)
{
  return g_array_new (FALSE, FALSE, sizeof (GraftDim));
}

static void
inferred_type_free (gpointer data)
{
  InferredType *type = data;

  graft_shape_clear (&type->shape);
  g_free (type);
}

static GraftInference *
inference_new (void)
{
  GraftInference *inference = g_new0 (GraftInference, 1);

  g_atomic_ref_count_init (&inference->ref_count);
  inference->types = g_hash_table_new_full (NULL, NULL, NULL, inferred_type_free);
  inference->data = g_hash_table_new_full (NULL, NULL, NULL, dims_array_free);
  return inference;
}

void
_graft_inference_set_type (GraftInference *inference, const GraftValue *value, GraftDType dtype,
                           const GraftShape *shape)
{
  InferredType *type = g_new0 (InferredType, 1);

  type->dtype = dtype;
  graft_shape_copy (&type->shape, shape);
  g_hash_table_replace (inference->types, (gpointer) value, type);
}

GraftInference *
graft_inference_ref (GraftInference *inference)
{
  g_atomic_ref_count_inc (&inference->ref_count);
  return inference;
}

void
graft_inference_unref (GraftInference *inference)
{
  if (inference == NULL || !g_atomic_ref_count_dec (&inference->ref_count))
    return;
  g_hash_table_unref (inference->types);
  g_hash_table_unref (inference->data);
  g_clear_pointer (&inference->base, graft_inference_unref);
  g_clear_pointer (&inference->owned, g_hash_table_unref);
  g_free (inference);
}

/* The run whose tables hold what inference says of value. */
static GraftInference *
holder_of (GraftInference *inference, const GraftValue *value)
{
  if (inference->base == NULL || g_hash_table_contains (inference->owned, value))
    return inference;
  return inference->base;
}

gboolean
graft_inference_lookup (GraftInference *inference, const GraftValue *value, GraftDType *dtype, const GraftShape **shape)
{
  InferredType *type = inference != NULL && value != NULL
                       ? g_hash_table_lookup (holder_of (inference, value)->types, value) : NULL;

  if (type == NULL)
    return FALSE;
  if (dtype != NULL)
    *dtype = type->dtype;
  if (shape != NULL)
    *shape = &type->shape;
  return TRUE;
}

const GraftShape *
graft_inference_get_shape (GraftInference *inference, const GraftValue *value)
{
  const GraftShape *shape = NULL;

  graft_inference_lookup (inference, value, NULL, &shape);
  return shape;
}

GraftDType
graft_inference_get_dtype (GraftInference *inference, const GraftValue *value)
{
  GraftDType dtype = GRAFT_DTYPE_UNDEFINED;

  graft_inference_lookup (inference, value, &dtype, NULL);
  return dtype;
}

GArray *
graft_inference_get_data (GraftInference *inference, const GraftValue *value)
{
  return inference != NULL && value != NULL ? g_hash_table_lookup (holder_of (inference, value)->data, value) : NULL;
}

static void
set_inferred (Inferer *inferer, GraftValue *value, GraftDType dtype, const GraftShape *shape)
{
  InferredType *type = g_new0 (InferredType, 1);

  type->dtype = dtype;
  graft_shape_copy (&type->shape, shape);
  g_hash_table_insert (inferer->result->types, value, type);
  if (inferer->result->base != NULL)
    g_hash_table_add (inferer->result->owned, value);
}

static void
clear_inferred_value (Inferer *inferer, GraftValue *value)
{
  g_hash_table_remove (inferer->result->types, value);
  g_hash_table_remove (inferer->data, value);
  if (inferer->result->base != NULL)
    g_hash_table_add (inferer->result->owned, value);
}

static const GraftShape *
known_shape (Inferer *inferer, const GraftValue *value)
{
  const GraftShape *shape = graft_inference_get_shape (inferer->result, value);

  return shape != NULL ? shape : &value->shape;
}

static GraftDType
known_dtype (Inferer *inferer, const GraftValue *value)
{
  GraftDType dtype = graft_inference_get_dtype (inferer->result, value);

  return dtype != GRAFT_DTYPE_UNDEFINED ? dtype : value->dtype;
}

const GraftShape *
graft_value_get_best_shape (const GraftValue *value, GraftInference *inference)
{
  const GraftShape *inferred = graft_inference_get_shape (inference, value);

  if (value->shape.rank >= 0)
    {
      gboolean all_known = TRUE;
      for (int i = 0; i < value->shape.rank; i++)
        all_known &= value->shape.dims[i].kind != GRAFT_DIM_UNKNOWN;
      if (all_known || inferred == NULL)
        return &value->shape;
    }
  if (inferred != NULL)
    return inferred;
  return value->shape.rank >= 0 ? &value->shape : NULL;
}

static GArray *
data_from_tensor (GraftTensor *tensor)
{
  gint64 numel = graft_tensor_get_numel (tensor);
  GArray *dims;

  if (!graft_dtype_is_integer (tensor->dtype) || numel < 0 || numel > MAX_DATA_ELEMENTS)
    return NULL;
  if (graft_tensor_get_data (tensor, NULL) == NULL)
    return NULL;
  dims = dims_new ();
  for (gint64 i = 0; i < numel; i++)
    {
      GraftDim d = graft_dim_fixed (graft_tensor_get_int (tensor, i));
      g_array_append_val (dims, d);
    }
  return dims;
}

static GArray *
lookup_data (Inferer *inferer, GraftValue *value)
{
  return graft_inference_get_data (inferer->result, value);
}

/* The data as plain integers, or NULL if any element is not fixed. */
static gint64 *
fixed_data (GArray *data)
{
  gint64 *values;

  if (data == NULL)
    return NULL;
  values = g_new (gint64, MAX (data->len, 1));
  for (guint i = 0; i < data->len; i++)
    {
      GraftDim *d = &g_array_index (data, GraftDim, i);
      if (d->kind != GRAFT_DIM_FIXED)
        {
          g_free (values);
          return NULL;
        }
      values[i] = d->value;
    }
  return values;
}

static void
output_set (Output *out, GraftDType dtype, const GraftShape *shape)
{
  out->present = TRUE;
  out->dtype = dtype;
  graft_shape_clear (&out->shape);
  if (shape != NULL)
    graft_shape_copy (&out->shape, shape);
  else
    out->shape = GRAFT_SHAPE_UNKNOWN;
}

static void
output_set_vector (Output *out, GraftDType dtype, GArray *data /* transfer full */)
{
  gint64 n = data->len;

  out->present = TRUE;
  out->dtype = dtype;
  graft_shape_clear (&out->shape);
  graft_shape_init_fixed (&out->shape, 1, &n);
  out->data = data;
}

static GraftValue *
node_input (GraftNode *node, guint i)
{
  return i < node->inputs->len ? g_ptr_array_index (node->inputs, i) : NULL;
}

/* Axes from the attribute (older opsets) or from input 1. */
static gint64 *
node_axes (Inferer *inferer, GraftNode *node, guint *n)
{
  guint n_attr;
  const gint64 *attr = graft_node_attr_ints (node, "axes", &n_attr);
  GArray *data;

  if (attr != NULL)
    {
      *n = n_attr;
      return g_memdup2 (attr, sizeof (gint64) * MAX (n_attr, 1));
    }
  data = lookup_data (inferer, node_input (node, 1));
  *n = data ? data->len : 0;
  return fixed_data (data);
}

static gboolean
rule_constant (Inferer *inferer, GraftNode *node, Output *out)
{
  GraftAttribute *value = graft_node_get_attribute (node, "value");
  GraftAttribute *ints = graft_node_get_attribute (node, "value_ints");
  GraftAttribute *one = graft_node_get_attribute (node, "value_int");

  if (value != NULL && value->t != NULL)
    {
      GraftShape shape;
      graft_shape_init_fixed (&shape, value->t->rank, value->t->dims);
      output_set (out, value->t->dtype, &shape);
      graft_shape_clear (&shape);
      out->data = data_from_tensor (value->t);
      return TRUE;
    }
  if (ints != NULL && ints->ints != NULL)
    {
      GArray *data = dims_new ();
      for (guint i = 0; i < ints->ints->len; i++)
        {
          GraftDim d = graft_dim_fixed (g_array_index (ints->ints, gint64, i));
          g_array_append_val (data, d);
        }
      output_set_vector (out, GRAFT_DTYPE_INT64, data);
      return TRUE;
    }
  if (one != NULL)
    {
      GraftShape scalar;
      GraftDim d = graft_dim_fixed (one->i);
      graft_shape_init (&scalar, 0);
      output_set (out, GRAFT_DTYPE_INT64, &scalar);
      out->data = dims_new ();
      g_array_append_val (out->data, d);
      return TRUE;
    }
  return FALSE;
}

static gboolean
rule_shape (Inferer *inferer, GraftNode *node, Output *out)
{
  GraftValue *x = node_input (node, 0);
  const GraftShape *shape;
  gint64 start, end;
  GArray *data;

  if (x == NULL || (shape = known_shape (inferer, x))->rank < 0)
    return FALSE;
  start = graft_node_attr_int (node, "start", 0);
  end = graft_node_attr_int (node, "end", shape->rank);
  if (start < 0)
    start += shape->rank;
  if (end < 0)
    end += shape->rank;
  start = CLAMP (start, 0, shape->rank);
  end = CLAMP (end, start, shape->rank);
  data = dims_new ();
  g_array_append_vals (data, shape->dims + start, end - start);
  output_set_vector (out, GRAFT_DTYPE_INT64, data);
  return TRUE;
}

static gboolean
rule_gather (Inferer *inferer, GraftNode *node, Output *out)
{
  GraftValue *x = node_input (node, 0), *indices = node_input (node, 1);
  GArray *data = lookup_data (inferer, x), *index_data = lookup_data (inferer, indices);
  const GraftShape *xs, *is;
  gint64 axis = graft_node_attr_int (node, "axis", 0);
  GraftShape shape;

  if (x == NULL || indices == NULL || (xs = known_shape (inferer, x))->rank < 0 || (is = known_shape (inferer, indices))->rank < 0)
    return FALSE;
  if (axis < 0)
    axis += xs->rank;
  if (axis < 0 || axis >= xs->rank)
    return FALSE;
  graft_shape_init (&shape, xs->rank - 1 + is->rank);
  for (int i = 0, k = 0; i < xs->rank; i++)
    if (i == axis)
      for (int j = 0; j < is->rank; j++)
        shape.dims[k++] = is->dims[j];
    else
      shape.dims[k++] = xs->dims[i];
  output_set (out, known_dtype (inferer, x), &shape);
  graft_shape_clear (&shape);

  if (data != NULL && index_data != NULL && xs->rank == 1)
    {
      g_autofree gint64 *index = fixed_data (index_data);
      if (index != NULL)
        {
          out->data = dims_new ();
          for (guint i = 0; i < index_data->len; i++)
            {
              gint64 k = index[i] < 0 ? index[i] + data->len : index[i];
              GraftDim d = k >= 0 && k < data->len ? g_array_index (data, GraftDim, k) : graft_dim_unknown ();
              g_array_append_val (out->data, d);
            }
        }
    }
  return TRUE;
}

static gboolean
rule_unsqueeze (Inferer *inferer, GraftNode *node, Output *out, gboolean squeeze)
{
  GraftValue *x = node_input (node, 0);
  const GraftShape *xs;
  guint n_axes;
  g_autofree gint64 *axes = node_axes (inferer, node, &n_axes);
  GraftShape shape;
  int rank;

  if (x == NULL || (xs = known_shape (inferer, x))->rank < 0)
    return FALSE;
  if (axes == NULL && !(squeeze && graft_node_get_attribute (node, "axes") == NULL && node_input (node, 1) == NULL))
    return FALSE;
  rank = squeeze ? xs->rank : xs->rank + (int) n_axes;
  if (squeeze && axes == NULL)
    {
      /* No axes: every 1 goes. */
      int k = 0;
      graft_shape_init (&shape, xs->rank);
      for (int i = 0; i < xs->rank; i++)
        {
          if (xs->dims[i].kind != GRAFT_DIM_FIXED)
            {
              graft_shape_clear (&shape);
              return FALSE;
            }
          if (xs->dims[i].value != 1)
            shape.dims[k++] = xs->dims[i];
        }
      shape.rank = k;
    }
  else
    {
      g_autofree gboolean *marked = g_new0 (gboolean, MAX (rank, 1));
      for (guint i = 0; i < n_axes; i++)
        {
          gint64 a = axes[i] < 0 ? axes[i] + rank : axes[i];
          if (a < 0 || a >= rank)
            return FALSE;
          marked[a] = TRUE;
        }
      graft_shape_init (&shape, squeeze ? xs->rank - (int) n_axes : rank);
      for (int i = 0, j = 0, k = 0; i < rank; i++)
        {
          if (squeeze)
            {
              if (!marked[i])
                shape.dims[k++] = xs->dims[i];
            }
          else
            shape.dims[i] = marked[i] ? graft_dim_fixed (1) : xs->dims[j++];
        }
    }
  output_set (out, known_dtype (inferer, x), &shape);
  graft_shape_clear (&shape);
  if (lookup_data (inferer, x))
    out->data = g_array_ref (lookup_data (inferer, x));
  return TRUE;
}

static gboolean
rule_concat (Inferer *inferer, GraftNode *node, Output *out)
{
  GraftValue *first = node_input (node, 0);
  const GraftShape *fs;
  gint64 axis = graft_node_attr_int (node, "axis", 0);
  GraftShape shape;
  gboolean all_data = TRUE;
  GArray *data;

  if (first == NULL || (fs = known_shape (inferer, first))->rank < 1)
    return FALSE;
  if (axis < 0)
    axis += fs->rank;
  if (axis < 0 || axis >= fs->rank)
    return FALSE;
  graft_shape_copy (&shape, fs);
  shape.dims[axis] = graft_dim_fixed (0);
  for (guint i = 0; i < node->inputs->len; i++)
    {
      GraftValue *v = node_input (node, i);
      const GraftShape *vs;
      GraftDim *d = &shape.dims[axis];

      if (v == NULL || (vs = known_shape (inferer, v))->rank != fs->rank)
        {
          graft_shape_clear (&shape);
          return FALSE;
        }
      if (d->kind == GRAFT_DIM_FIXED && vs->dims[axis].kind == GRAFT_DIM_FIXED)
        d->value += vs->dims[axis].value;
      else
        *d = graft_dim_unknown ();
      all_data &= lookup_data (inferer, v) != NULL;
    }
  output_set (out, known_dtype (inferer, first), &shape);
  graft_shape_clear (&shape);
  if (all_data && fs->rank == 1)
    {
      data = dims_new ();
      for (guint i = 0; i < node->inputs->len; i++)
        {
          GArray *part = lookup_data (inferer, node_input (node, i));
          g_array_append_vals (data, part->data, part->len);
        }
      out->data = data;
    }
  return TRUE;
}

static gboolean
rule_pass_through (Inferer *inferer, GraftNode *node, Output *out, GraftDType dtype)
{
  GraftValue *x = node_input (node, 0);
  GArray *data;

  if (x == NULL)
    return FALSE;
  output_set (out, dtype != GRAFT_DTYPE_UNDEFINED ? dtype : known_dtype (inferer, x), known_shape (inferer, x));
  data = lookup_data (inferer, x);
  if (data != NULL && (dtype == GRAFT_DTYPE_UNDEFINED || graft_dtype_is_integer (dtype)))
    out->data = g_array_ref (data);
  return TRUE;
}

/* Reshape's target: 0 copies the input dim, -1 takes what is left. */
static gboolean
rule_reshape (Inferer *inferer, GraftNode *node, Output *out)
{
  GraftValue *x = node_input (node, 0);
  GArray *target = lookup_data (inferer, node_input (node, 1));
  gboolean allow_zero = graft_node_attr_int (node, "allowzero", 0) != 0;
  const GraftShape *xs;
  GraftShape shape;
  GraftDim rest;
  int minus_one = -1;

  if (x == NULL || target == NULL)
    return FALSE;
  xs = known_shape (inferer, x);
  graft_shape_init (&shape, target->len);
  rest = graft_shape_get_dim_product (xs, 0, xs->rank);
  for (guint i = 0; i < target->len; i++)
    {
      GraftDim d = g_array_index (target, GraftDim, i);

      if (d.kind == GRAFT_DIM_FIXED && d.value == -1)
        {
          minus_one = i;
          continue;
        }
      if (d.kind == GRAFT_DIM_FIXED && d.value == 0 && !allow_zero)
        d = (int) i < xs->rank ? xs->dims[i] : graft_dim_unknown ();
      shape.dims[i] = d;
      rest = graft_dim_divide (rest, d);
    }
  if (minus_one >= 0)
    shape.dims[minus_one] = xs->rank >= 0 ? rest : graft_dim_unknown ();
  output_set (out, known_dtype (inferer, x), &shape);
  graft_shape_clear (&shape);
  if (lookup_data (inferer, x))
    out->data = g_array_ref (lookup_data (inferer, x));
  return TRUE;
}

static gboolean
rule_shape_from_data (Inferer *inferer, GraftNode *node, Output *out, guint shape_input, gboolean broadcast)
{
  GArray *target = lookup_data (inferer, node_input (node, shape_input));
  GraftShape shape, merged;
  GraftDType dtype = GRAFT_DTYPE_FLOAT32;
  GraftAttribute *value = graft_node_get_attribute (node, "value");
  GraftValue *x = node_input (node, 0);

  if (target == NULL)
    return FALSE;
  graft_shape_init (&shape, target->len);
  for (guint i = 0; i < target->len; i++)
    shape.dims[i] = g_array_index (target, GraftDim, i);
  if (broadcast)
    {
      if (x == NULL || !graft_shape_broadcast (known_shape (inferer, x), &shape, &merged, NULL))
        {
          graft_shape_clear (&shape);
          return FALSE;
        }
      graft_shape_clear (&shape);
      shape = merged;
      dtype = known_dtype (inferer, x);
    }
  else if (value != NULL && value->t != NULL)
    dtype = value->t->dtype;
  output_set (out, dtype, &shape);
  graft_shape_clear (&shape);
  return TRUE;
}

static gboolean
rule_tile (Inferer *inferer, GraftNode *node, Output *out)
{
  GraftValue *x = node_input (node, 0);
  GArray *repeats = lookup_data (inferer, node_input (node, 1));
  const GraftShape *xs;
  GraftShape shape;

  if (x == NULL || repeats == NULL || (xs = known_shape (inferer, x))->rank != (int) repeats->len)
    return FALSE;
  graft_shape_copy (&shape, xs);
  for (int i = 0; i < shape.rank; i++)
    shape.dims[i] = graft_dim_multiply (shape.dims[i], g_array_index (repeats, GraftDim, i));
  output_set (out, known_dtype (inferer, x), &shape);
  graft_shape_clear (&shape);
  return TRUE;
}

typedef enum { ARITH_ADD, ARITH_SUB, ARITH_MUL, ARITH_DIV, ARITH_MOD } Arith;

static GraftDim
arith_dim (Arith arith, GraftDim a, GraftDim b)
{
  gboolean fixed = a.kind == GRAFT_DIM_FIXED && b.kind == GRAFT_DIM_FIXED;

  switch (arith)
    {
    case ARITH_MUL:
      return graft_dim_multiply (a, b);
    case ARITH_DIV:
      /* Integer division of shape values truncates like ONNX's Div. */
      if (fixed && b.value != 0)
        return graft_dim_fixed (a.value / b.value);
      return graft_dim_divide (a, b);
    case ARITH_MOD:
      /* Exporters compute axis indices this way ((i + rank) % rank). */
      if (fixed && b.value != 0)
        return graft_dim_fixed (((a.value % b.value) + b.value) % b.value);
      return graft_dim_unknown ();
    case ARITH_ADD:
      return fixed ? graft_dim_fixed (a.value + b.value) : graft_dim_unknown ();
    default:
      return fixed ? graft_dim_fixed (a.value - b.value) : graft_dim_unknown ();
    }
}

/* Arithmetic on shape vectors (batch × 2, (768 + 2) / 3): only when both
 * sides are known integer data. */
static gboolean
rule_arith (Inferer *inferer, GraftNode *node, Output *out, Arith arith)
{
  GraftValue *a = node_input (node, 0), *b = node_input (node, 1);
  GArray *da = lookup_data (inferer, a), *db = lookup_data (inferer, b);
  GraftShape shape;

  if (da == NULL || db == NULL || (da->len != db->len && da->len != 1 && db->len != 1)
      || !graft_dtype_is_integer (known_dtype (inferer, a)))
    return FALSE;
  if (!graft_shape_broadcast (known_shape (inferer, a), known_shape (inferer, b), &shape, NULL))
    return FALSE;
  output_set (out, known_dtype (inferer, a), &shape);
  graft_shape_clear (&shape);
  out->data = dims_new ();
  for (guint i = 0; i < MAX (da->len, db->len); i++)
    {
      GraftDim d = arith_dim (arith, g_array_index (da, GraftDim, da->len == 1 ? 0 : i),
                              g_array_index (db, GraftDim, db->len == 1 ? 0 : i));
      g_array_append_val (out->data, d);
    }
  return TRUE;
}

/* One element of Slice's starts/ends/axes/steps: from the attribute
 * (opset < 10) or the input; fallback when absent. FALSE when unknown. */
static gboolean
slice_parameter (Inferer *inferer, GraftNode *node, const char *name, guint input, gint64 fallback, gint64 *value)
{
  guint n_attr;
  const gint64 *attr = graft_node_attr_ints (node, name, &n_attr);
  GraftValue *v = node_input (node, input);
  GArray *data;

  if (attr != NULL)
    {
      if (n_attr != 1)
        return FALSE;
      *value = attr[0];
      return TRUE;
    }
  if (v == NULL)
    {
      *value = fallback;
      return TRUE;
    }
  data = lookup_data (inferer, v);
  if (data == NULL || data->len != 1 || g_array_index (data, GraftDim, 0).kind != GRAFT_DIM_FIXED)
    return FALSE;
  *value = g_array_index (data, GraftDim, 0).value;
  return TRUE;
}

/* Slice of a shape vector (exporters take Shape(x)[:-2] and Shape(x)[-1:]
 * to rebuild a shape): the elements follow, symbols and all. Also one
 * axis of a small matrix of known data with any step: torch's F.pad
 * export reverses its [n, 2] pads with Slice(step -1) (Swin's padding to
 * whole windows), whose output shapes then stay known. */
static gboolean
rule_slice (Inferer *inferer, GraftNode *node, Output *out)
{
  GraftValue *x = node_input (node, 0);
  GArray *data = lookup_data (inferer, x);
  const GraftShape *xs = x != NULL ? known_shape (inferer, x) : NULL;
  gint64 start, end, axis, step, n, inner = 1, outer = 1;
  GArray *sliced;
  GraftShape shape;

  if (data == NULL || xs->rank < 1 || xs->rank > 2 || !graft_shape_is_fully_fixed (xs)
      || !slice_parameter (inferer, node, "starts", 1, 0, &start)
      || !slice_parameter (inferer, node, "ends", 2, G_MAXINT64, &end)
      || !slice_parameter (inferer, node, "axes", 3, 0, &axis)
      || !slice_parameter (inferer, node, "steps", 4, 1, &step) || step == 0)
    return FALSE;
  if (axis < 0)
    axis += xs->rank;
  if (axis < 0 || axis >= xs->rank || (gint64) data->len != graft_shape_get_numel (xs))
    return FALSE;
  n = xs->dims[axis].value;
  for (int d = 0; d < axis; d++)
    outer *= xs->dims[d].value;
  for (int d = axis + 1; d < xs->rank; d++)
    inner *= xs->dims[d].value;
  /* ONNX's clamping: [0, n] going forward, [-1, n - 1] going back */
  if (start < 0)
    start += n;
  if (end < 0 && end > G_MININT64 + n)
    end += n;
  else if (end < 0)
    end = -1;
  if (step > 0)
    {
      start = CLAMP (start, 0, n);
      end = CLAMP (end, 0, n);
    }
  else
    {
      start = CLAMP (start, -1, n - 1);
      end = CLAMP (end, -1, n - 1);
    }
  sliced = dims_new ();
  gint64 taken = 0;
  for (gint64 o = 0; o < outer; o++)
    {
      taken = 0;
      for (gint64 i = start; step > 0 ? i < end : i > end; i += step, taken++)
        g_array_append_vals (sliced, &g_array_index (data, GraftDim, (o * n + i) * inner), inner);
    }
  graft_shape_copy (&shape, xs);
  shape.dims[axis] = graft_dim_fixed (taken);
  output_set (out, known_dtype (inferer, x), &shape);
  graft_shape_clear (&shape);
  out->data = sliced;
  return TRUE;
}

/* Transpose of a matrix of known data (F.pad's export, as above). */
static gboolean
rule_transpose (Inferer *inferer, GraftNode *node, Output *out)
{
  GraftValue *x = node_input (node, 0);
  GArray *data = lookup_data (inferer, x);
  const GraftShape *xs = x != NULL ? known_shape (inferer, x) : NULL;
  guint n_perm;
  const gint64 *perm = graft_node_attr_ints (node, "perm", &n_perm);
  GraftShape shape;
  gint64 rows, cols;

  if (data == NULL || xs->rank != 2 || !graft_shape_is_fully_fixed (xs)
      || (perm != NULL && (n_perm != 2 || perm[0] != 1 || perm[1] != 0)))
    return FALSE;
  rows = xs->dims[0].value;
  cols = xs->dims[1].value;
  if ((gint64) data->len != rows * cols)
    return FALSE;
  out->data = dims_new ();
  for (gint64 c = 0; c < cols; c++)
    for (gint64 r = 0; r < rows; r++)
      g_array_append_val (out->data, g_array_index (data, GraftDim, r * cols + c));
  graft_shape_init (&shape, 2);
  shape.dims[0] = xs->dims[1];
  shape.dims[1] = xs->dims[0];
  output_set (out, known_dtype (inferer, x), &shape);
  graft_shape_clear (&shape);
  return TRUE;
}

/* Constant data: the integer fill of ConstantOfShape, Equal and Where
 * over known vectors. torch writes expand(-1 → keep) as
 * Where(Equal(shape, -1), ones, shape) over constants; following it lets
 * an Expand's target be seen (and folded by the repairs). */
static gboolean
rule_constant_of_shape_data (Inferer *inferer, GraftNode *node, Output *out)
{
  GArray *target = lookup_data (inferer, node_input (node, 0));
  g_autofree gint64 *dims = fixed_data (target);
  GraftAttribute *value = graft_node_get_attribute (node, "value");
  gint64 fill = 0;

  if (dims == NULL || target->len != 1 || dims[0] < 0 || dims[0] > 64)
    return rule_shape_from_data (inferer, node, out, 0, FALSE);
  if (value != NULL && value->t != NULL)
    {
      if (!graft_dtype_is_integer (value->t->dtype) || graft_tensor_get_numel (value->t) != 1)
        return rule_shape_from_data (inferer, node, out, 0, FALSE);
      fill = graft_tensor_get_int (value->t, 0);
    }
  out->data = dims_new ();
  for (gint64 i = 0; i < dims[0]; i++)
    {
      GraftDim d = graft_dim_fixed (fill);
      g_array_append_val (out->data, d);
    }
  output_set_vector (out, value && value->t ? value->t->dtype : GRAFT_DTYPE_FLOAT32, out->data);
  return TRUE;
}

/* Element i of data broadcast to n elements (a vector or one element). */
static GraftDim *
broadcast_element (GArray *data, guint i)
{
  return &g_array_index (data, GraftDim, data->len == 1 ? 0 : i);
}

static gboolean
rule_equal_where (Inferer *inferer, GraftNode *node, Output *out, gboolean where)
{
  GArray *a = lookup_data (inferer, node_input (node, 0));
  GArray *b = lookup_data (inferer, node_input (node, 1));
  GArray *c = where ? lookup_data (inferer, node_input (node, 2)) : NULL;
  guint n;

  if (a == NULL || b == NULL || (where && c == NULL))
    return FALSE;
  n = MAX (MAX (a->len, b->len), c ? c->len : 1);
  if ((a->len != n && a->len != 1) || (b->len != n && b->len != 1) || (c && c->len != n && c->len != 1)
      || known_shape (inferer, node_input (node, 0))->rank > 1)
    return FALSE;
  out->data = dims_new ();
  for (guint i = 0; i < n; i++)
    {
      GraftDim *x = broadcast_element (a, i), *y = broadcast_element (b, i);
      GraftDim d;

      if (x->kind != GRAFT_DIM_FIXED || (!where && y->kind != GRAFT_DIM_FIXED))
        {
          g_clear_pointer (&out->data, g_array_unref);
          return FALSE;
        }
      if (where)
        d = x->value ? *y : *broadcast_element (c, i);
      else
        d = graft_dim_fixed (x->value == y->value);
      g_array_append_val (out->data, d);
    }
  output_set_vector (out, where ? known_dtype (inferer, node_input (node, 1)) : GRAFT_DTYPE_BOOL, out->data);
  return TRUE;
}

/* Range(0, n, 1) has n elements, n possibly symbolic (arange(seq)). */
static gboolean
rule_range (Inferer *inferer, GraftNode *node, Output *out)
{
  GArray *start = lookup_data (inferer, node_input (node, 0));
  GArray *limit = lookup_data (inferer, node_input (node, 1));
  GArray *delta = lookup_data (inferer, node_input (node, 2));
  GraftDim *s, *l, *d;
  GraftShape shape;

  if (start == NULL || limit == NULL || delta == NULL || start->len != 1 || limit->len != 1 || delta->len != 1)
    return FALSE;
  s = &g_array_index (start, GraftDim, 0);
  l = &g_array_index (limit, GraftDim, 0);
  d = &g_array_index (delta, GraftDim, 0);
  if (s->kind != GRAFT_DIM_FIXED || s->value != 0 || d->kind != GRAFT_DIM_FIXED || d->value != 1
      || l->kind != GRAFT_DIM_SYMBOLIC)
    return FALSE;   /* fixed ranges are the registry's */
  graft_shape_init (&shape, 1);
  shape.dims[0] = *l;
  output_set (out, known_dtype (inferer, node_input (node, 0)), &shape);
  graft_shape_clear (&shape);
  return TRUE;
}

/* Resize by constant whole-number scales: h × 2 for a symbolic h too. */
static gboolean
rule_resize_scales (Inferer *inferer, GraftNode *node, Output *out)
{
  GraftValue *x = node_input (node, 0);
  GraftTensor *scales = graft_value_get_constant (node_input (node, 2));
  const GraftShape *in = x != NULL ? known_shape (inferer, x) : NULL;
  GraftShape shape;

  if (scales == NULL || in == NULL || in->rank < 0 || graft_tensor_get_numel (scales) != in->rank)
    return FALSE;
  graft_shape_init (&shape, in->rank);
  for (int i = 0; i < in->rank; i++)
    {
      double scale = graft_tensor_get_element_as_double (scales, i);

      if (scale < 1 || scale != (double) (gint64) scale)
        {
          graft_shape_clear (&shape);
          return FALSE;
        }
      shape.dims[i] = graft_dim_multiply (in->dims[i], graft_dim_fixed ((gint64) scale));
    }
  output_set (out, known_dtype (inferer, x), &shape);
  graft_shape_clear (&shape);
  return TRUE;
}

/* Resize to sizes known as dims (h × 2 after a make-dynamic, which the
 * registry's rule, reading only constant data, cannot see): the output
 * is those sizes. Axes and an aspect-ratio policy are the registry's. */
static gboolean
rule_resize_sizes (Inferer *inferer, GraftNode *node, Output *out)
{
  GArray *sizes = node->inputs->len > 3 ? lookup_data (inferer, node_input (node, 3)) : NULL;
  GraftValue *x = node_input (node, 0);
  GraftAttribute *policy = graft_node_get_attribute (node, "keep_aspect_ratio_policy");

  if (graft_node_get_attribute (node, "axes") != NULL
      || (policy != NULL && (policy->s == NULL || g_bytes_get_size (policy->s) != 7
                             || memcmp (g_bytes_get_data (policy->s, NULL), "stretch", 7) != 0)))
    return FALSE;
  if (sizes == NULL && node->inputs->len == 3)
    return rule_resize_scales (inferer, node, out);
  if (sizes == NULL || x == NULL || known_shape (inferer, x)->rank != (int) sizes->len)
    return FALSE;
  if (!rule_shape_from_data (inferer, node, out, 3, FALSE))
    return FALSE;
  out->dtype = known_dtype (inferer, x);
  return TRUE;
}

static gboolean
apply_data_rule (Inferer *inferer, GraftNode *node, Output *out)
{
  const char *op = node->op;

  if (node->domain != g_intern_static_string ("onnx"))
    return FALSE;
  if (op == g_intern_static_string ("onnx::Constant"))
    return rule_constant (inferer, node, out);
  if (op == g_intern_static_string ("onnx::Shape"))
    return rule_shape (inferer, node, out);
  if (op == g_intern_static_string ("onnx::Gather"))
    return rule_gather (inferer, node, out);
  if (op == g_intern_static_string ("onnx::Unsqueeze"))
    return rule_unsqueeze (inferer, node, out, FALSE);
  if (op == g_intern_static_string ("onnx::Squeeze"))
    return rule_unsqueeze (inferer, node, out, TRUE);
  if (op == g_intern_static_string ("onnx::Concat"))
    return rule_concat (inferer, node, out);
  if (op == g_intern_static_string ("onnx::Identity"))
    return rule_pass_through (inferer, node, out, GRAFT_DTYPE_UNDEFINED);
  if (op == g_intern_static_string ("onnx::Cast"))
    return rule_pass_through (inferer, node, out, (GraftDType) graft_node_attr_int (node, "to", 0));
  if (op == g_intern_static_string ("onnx::Reshape"))
    return rule_reshape (inferer, node, out);
  if (op == g_intern_static_string ("onnx::Expand"))
    return rule_shape_from_data (inferer, node, out, 1, TRUE);
  if (op == g_intern_static_string ("onnx::ConstantOfShape"))
    return rule_constant_of_shape_data (inferer, node, out);
  if (op == g_intern_static_string ("onnx::Equal"))
    return rule_equal_where (inferer, node, out, FALSE);
  if (op == g_intern_static_string ("onnx::Where"))
    return rule_equal_where (inferer, node, out, TRUE);
  if (op == g_intern_static_string ("onnx::Tile"))
    return rule_tile (inferer, node, out);
  if (op == g_intern_static_string ("onnx::Mul"))
    return rule_arith (inferer, node, out, ARITH_MUL);
  if (op == g_intern_static_string ("onnx::Div"))
    return rule_arith (inferer, node, out, ARITH_DIV);
  if (op == g_intern_static_string ("onnx::Add"))
    return rule_arith (inferer, node, out, ARITH_ADD);
  if (op == g_intern_static_string ("onnx::Sub"))
    return rule_arith (inferer, node, out, ARITH_SUB);
  if (op == g_intern_static_string ("onnx::Mod"))
    return rule_arith (inferer, node, out, ARITH_MOD);
  if (op == g_intern_static_string ("onnx::Slice"))
    return rule_slice (inferer, node, out);
  if (op == g_intern_static_string ("onnx::Transpose"))
    return rule_transpose (inferer, node, out);
  if (op == g_intern_static_string ("onnx::Range"))
    return rule_range (inferer, node, out);
  if (op == g_intern_static_string ("onnx::Resize"))
    return rule_resize_sizes (inferer, node, out);
  return FALSE;
}

/* Constant data for the registry's inference functions, built lazily from
 * initializers and from fully fixed data. */
static GraftRtTensor *
rt_data_for (Inferer *inferer, GraftValue *value)
{
  GraftRtTensor *tensor = g_hash_table_lookup (inferer->rt_data, value);
  GArray *data;
  g_autofree gint64 *fixed = NULL;

  if (tensor != NULL)
    return tensor;
  if (value->initializer != NULL && graft_tensor_get_numel (value->initializer) <= MAX_DATA_ELEMENTS)
    tensor = graft_rt_tensor_new_from_tensor (value->initializer, NULL);
  else if ((data = lookup_data (inferer, value)) != NULL && (fixed = fixed_data (data)) != NULL)
    {
      const GraftShape *shape = known_shape (inferer, value);
      gint64 n = data->len;
      gint64 dims[GRAFT_RT_MAX_RANK];
      int rank = shape->rank >= 0 && shape->rank <= 1 ? shape->rank : 1;

      dims[0] = n;
      tensor = graft_rt_tensor_new (GRAFT_DTYPE_INT64, rank, dims, NULL);
      if (tensor != NULL)
        for (gint64 i = 0; i < n; i++)
          graft_rt_tensor_set_i64 (tensor, i, fixed[i]);
    }
  if (tensor != NULL)
    g_hash_table_insert (inferer->rt_data, value, tensor);
  return tensor;
}

static gboolean
lookup_subgraph_value (gpointer lookup_data, const GraftValue *value, GraftDType *dtype, const GraftShape **shape)
{
  return graft_inference_lookup (lookup_data, value, dtype, shape);
}

static gboolean
apply_infer_function (Inferer *inferer, GraftNode *node, GraftInferFunc infer, Output *outs, GError **error)
{
  GraftInferContext ctx = { 0 };
  gboolean ok;

  ctx.node = node;
  ctx.lookup_subgraph_value = lookup_subgraph_value;
  ctx.lookup_data = inferer->result;
  ctx.opset = graft_model_get_opset (inferer->model, node->domain);
  ctx.n_inputs = node->inputs->len;
  ctx.inputs = g_new0 (GraftInferValue, MAX (ctx.n_inputs, 1));
  ctx.n_outputs = node->outputs->len;
  ctx.outputs = g_new0 (GraftInferValue, MAX (ctx.n_outputs, 1));
  for (guint i = 0; i < ctx.n_outputs; i++)
    ctx.outputs[i].shape = GRAFT_SHAPE_UNKNOWN;
  for (guint i = 0; i < ctx.n_inputs; i++)
    {
      GraftValue *v = node_input (node, i);
      GraftInferValue *in = &ctx.inputs[i];

      in->shape = GRAFT_SHAPE_UNKNOWN;
      if (v == NULL)
        continue;
      in->present = TRUE;
      in->kind = v->kind;
      in->dtype = known_dtype (inferer, v);
      graft_shape_copy (&in->shape, known_shape (inferer, v));
      in->data = rt_data_for (inferer, v);
    }

  ok = infer (&ctx, error);
  for (guint i = 0; ok && i < ctx.n_outputs; i++)
    if (ctx.outputs[i].present)
      output_set (&outs[i], ctx.outputs[i].dtype, &ctx.outputs[i].shape);

  for (guint i = 0; i < ctx.n_inputs; i++)
    graft_shape_clear (&ctx.inputs[i].shape);
  for (guint i = 0; i < ctx.n_outputs; i++)
    graft_shape_clear (&ctx.outputs[i].shape);
  g_free (ctx.inputs);
  g_free (ctx.outputs);
  return ok;
}

/* After an override changed a Reshape's output dim, its -1 element (if
 * any) is what is left of the input's element count. */
static void
resolve_minus_one (Inferer *inferer, GraftNode *node, GraftShape *out)
{
  GArray *target = lookup_data (inferer, node_input (node, 1));
  GraftValue *x = node_input (node, 0);
  GraftDim rest;

  if (target == NULL || x == NULL || (int) target->len != out->rank)
    return;
  rest = graft_shape_get_dim_product (known_shape (inferer, x), 0, known_shape (inferer, x)->rank);
  for (guint i = 0; i < target->len; i++)
    {
      GraftDim *t = &g_array_index (target, GraftDim, i);
      if (!(t->kind == GRAFT_DIM_FIXED && t->value == -1))
        rest = graft_dim_divide (rest, out->dims[i]);
    }
  for (guint i = 0; i < target->len; i++)
    {
      GraftDim *t = &g_array_index (target, GraftDim, i);
      if (t->kind == GRAFT_DIM_FIXED && t->value == -1)
        out->dims[i] = rest;
    }
}

static void
infer_node (Inferer *inferer, GraftNode *node)
{
  g_autofree Output *outs = g_new0 (Output, MAX (node->outputs->len, 1));
  g_autoptr(GError) error = NULL;
  gboolean handled;

  for (guint i = 0; i < node->outputs->len; i++)
    outs[i].shape = GRAFT_SHAPE_UNKNOWN;

  handled = node->outputs->len > 0 && apply_data_rule (inferer, node, &outs[0]);
  if (!handled)
    {
      const GraftOpSchema *schema = graft_op_registry_lookup (node->op, graft_model_get_opset (inferer->model, node->domain));
      GraftInferFunc infer = schema != NULL ? schema->infer : NULL;
      const char *missing = graft_op_schema_missing_first_input (schema, node);

      if (missing != NULL)
        {
          if (inferer->report)
            g_ptr_array_add (inferer->report->problems,
                             g_strdup_printf ("node '%s' (%s): input '%s' is missing", node->name, node->op, missing));
        }
      else if (infer != NULL && !apply_infer_function (inferer, node, infer, outs, &error) && inferer->report)
        g_ptr_array_add (inferer->report->problems,
                         g_strdup_printf ("node '%s' (%s): %s", node->name, node->op, error->message));
    }

  if (inferer->overrides != NULL && node->outputs->len > 0 && outs[0].present)
    {
      GArray *elements = g_hash_table_lookup (inferer->overrides, node);
      for (guint k = 0; elements != NULL && k < elements->len; k++)
        {
          GraftShapeOverride *o = &g_array_index (elements, GraftShapeOverride, k);
          if ((int) o->element < outs[0].shape.rank)
            outs[0].shape.dims[o->element] = o->dim;
        }
      if (elements != NULL && node->op == g_intern_static_string ("onnx::Reshape"))
        resolve_minus_one (inferer, node, &outs[0].shape);
    }

  for (guint i = 0; i < node->outputs->len; i++)
    {
      GraftValue *v = g_ptr_array_index (node->outputs, i);

      if (v != NULL && outs[i].present)
        {
          set_inferred (inferer, v, outs[i].dtype, &outs[i].shape);
          if (inferer->report)
            inferer->report->n_inferred++;
          if (outs[i].data != NULL)
            g_hash_table_insert (inferer->data, v, g_steal_pointer (&outs[i].data));
        }
      else if (v != NULL && inferer->report)
        inferer->report->n_unknown++;
      g_clear_pointer (&outs[i].data, g_array_unref);
      graft_shape_clear (&outs[i].shape);
    }
}

static void
clear_inferred (Inferer *inferer, GraftNode *node)
{
  for (guint i = 0; i < node->outputs->len; i++)
    {
      GraftValue *v = g_ptr_array_index (node->outputs, i);
      if (v != NULL)
        clear_inferred_value (inferer, v);
    }
}

/* Kahn's order over the main graph; nodes on a cycle (malformed files)
 * are appended in file order so that every node is visited once. */
typedef struct {
  GraftGraph *graph;
  GHashTable *values;
} CaptureSearch;

static void
collect_capture (GraftNode *node, gpointer user_data)
{
  CaptureSearch *search = user_data;

  for (guint j = 0; j < node->inputs->len; j++)
    {
      GraftValue *v = g_ptr_array_index (node->inputs, j);
      if (v && v->producer && v->producer->graph == search->graph)
        g_hash_table_add (search->values, v);
    }
}

static GPtrArray *
topological_order (GraftGraph *graph)
{
  GPtrArray *order = g_ptr_array_new ();
  g_autofree guint *pending = g_new0 (guint, MAX (graph->nodes->len, 1));
  g_autofree gboolean *done = g_new0 (gboolean, MAX (graph->nodes->len, 1));
  /* Per node with bodies: the values of graph its bodies read from the
   * enclosing scope, which it waits for like its inputs (an If's result
   * read inside a later Loop's body). */
  g_autofree GHashTable **captures = g_new0 (GHashTable *, MAX (graph->nodes->len, 1));
  g_autoptr(GQueue) ready = g_queue_new ();

  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      g_autoptr(GPtrArray) subgraphs = graft_node_get_subgraphs (node);

      for (guint j = 0; j < node->inputs->len; j++)
        {
          GraftValue *v = g_ptr_array_index (node->inputs, j);
          if (v && v->producer && v->producer->graph == graph)
            pending[i]++;
        }
      if (subgraphs->len > 0)
        {
          CaptureSearch search = { graph, captures[i] = g_hash_table_new (NULL, NULL) };
          for (guint k = 0; k < subgraphs->len; k++)
            graft_graph_foreach_node_recursive (g_ptr_array_index (subgraphs, k), collect_capture, &search);
          pending[i] += g_hash_table_size (captures[i]);
        }
      if (pending[i] == 0)
        g_queue_push_tail (ready, node);
    }
  while (!g_queue_is_empty (ready))
    {
      GraftNode *node = g_queue_pop_head (ready);

      g_ptr_array_add (order, node);
      done[node->index] = TRUE;
      for (guint j = 0; j < node->outputs->len; j++)
        {
          GraftValue *v = g_ptr_array_index (node->outputs, j);
          for (guint k = 0; v && k < v->consumers->len; k++)
            {
              GraftNode *consumer = g_ptr_array_index (v->consumers, k);

              /* A body's node: its ancestor in graph waits for v once. */
              while (consumer->graph != graph && consumer->graph->parent_node != NULL)
                consumer = consumer->graph->parent_node;
              if (consumer->graph != graph || done[consumer->index])
                continue;
              if (consumer != g_ptr_array_index (v->consumers, k)
                  && (captures[consumer->index] == NULL || !g_hash_table_remove (captures[consumer->index], v)))
                continue;
              if (--pending[consumer->index] == 0)
                g_queue_push_tail (ready, consumer);
            }
        }
    }
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      if (!done[i])
        g_ptr_array_add (order, g_ptr_array_index (graph->nodes, i));
      g_clear_pointer (&captures[i], g_hash_table_unref);
    }
  return order;
}

static void seed_value (Inferer *inferer, GraftValue *value);

/* Bodies of If/Loop/Scan first: their outer-scope inputs are known by now,
 * and the node's own rule may read their outputs. Subgraph inputs start
 * from their declared types (Loop's iteration count and carried values). */
static void
infer_subgraphs_then_node (Inferer *inferer, GraftNode *node)
{
  g_autoptr(GPtrArray) subgraphs = graft_node_get_subgraphs (node);

  for (guint i = 0; i < subgraphs->len; i++)
    {
      GraftGraph *body = g_ptr_array_index (subgraphs, i);
      g_autoptr(GPtrArray) order = NULL;

      for (guint j = 0; j < body->inputs->len; j++)
        seed_value (inferer, g_ptr_array_index (body->inputs, j));
      for (guint j = 0; j < body->initializers->len; j++)
        seed_value (inferer, g_ptr_array_index (body->initializers, j));
      order = topological_order (body);
      for (guint j = 0; j < order->len; j++)
        infer_subgraphs_then_node (inferer, g_ptr_array_index (order, j));
    }
  infer_node (inferer, node);
}

static void
seed_value (Inferer *inferer, GraftValue *value)
{
  const GraftShape *probe = inferer->input_shapes != NULL ? g_hash_table_lookup (inferer->input_shapes, value) : NULL;
  GraftDType dtype = value->dtype;

  if (probe != NULL && dtype == GRAFT_DTYPE_UNDEFINED)
    dtype = inferer->given_input_dtype;
  set_inferred (inferer, value, dtype, probe != NULL ? probe : &value->shape);
  if (value->initializer != NULL)
    {
      GArray *data = data_from_tensor (value->initializer);
      if (data != NULL)
        g_hash_table_insert (inferer->data, value, data);
    }
}

/* A fresh result, graph inputs and initializers seeded from their
 * declarations (or the probe shapes standing in for them). */
static void
start_inference (Inferer *inferer, GraftGraph *graph, GraftInference *base)
{
  inferer->result = inference_new ();
  if (base != NULL)
    {
      inferer->result->base = graft_inference_ref (base);
      inferer->result->owned = g_hash_table_new (NULL, NULL);
    }
  inferer->data = inferer->result->data;
  inferer->rt_data = g_hash_table_new_full (NULL, NULL, NULL, (GDestroyNotify) graft_rt_tensor_unref);
  for (guint i = 0; i < graph->inputs->len; i++)
    seed_value (inferer, g_ptr_array_index (graph->inputs, i));
  for (guint i = 0; i < graph->initializers->len; i++)
    seed_value (inferer, g_ptr_array_index (graph->initializers, i));
}

static gboolean
same_data (GArray *a, GArray *b)
{
  if (a == NULL || b == NULL)
    return a == b;
  if (a->len != b->len)
    return FALSE;
  for (guint i = 0; i < a->len; i++)
    if (!graft_dim_equal (&g_array_index (a, GraftDim, i), &g_array_index (b, GraftDim, i)))
      return FALSE;
  return TRUE;
}

/* A run over a base: value, just inferred or seeded, goes back to reading
 * as base has it when this run found the same. */
static void
settle (Inferer *inferer, GraftValue *value)
{
  GraftInference *result = inferer->result;
  InferredType *mine = g_hash_table_lookup (result->types, value);
  InferredType *base = g_hash_table_lookup (result->base->types, value);

  if (mine == NULL || base == NULL || mine->dtype != base->dtype || !graft_shape_equal (&mine->shape, &base->shape)
      || !same_data (g_hash_table_lookup (result->data, value), g_hash_table_lookup (result->base->data, value)))
    return;
  g_hash_table_remove (result->types, value);
  g_hash_table_remove (result->data, value);
  g_hash_table_remove (result->owned, value);
}

/* Whether node, in a run over a base, would give what base has: none of
 * its inputs reads differently, no override changes it, and it has no
 * bodies (which read values of the enclosing graph besides its inputs). */
static gboolean
is_settled (Inferer *inferer, GraftNode *node)
{
  g_autoptr(GPtrArray) subgraphs = NULL;

  if (inferer->overrides != NULL && g_hash_table_contains (inferer->overrides, node))
    return FALSE;
  for (guint i = 0; i < node->inputs->len; i++)
    {
      GraftValue *input = g_ptr_array_index (node->inputs, i);

      if (input != NULL && g_hash_table_contains (inferer->result->owned, input))
        return FALSE;
    }
  subgraphs = graft_node_get_subgraphs (node);
  return subgraphs->len == 0;
}

GraftInference *
graft_shape_inference_run_full (GraftModel *model, const GraftShapeInferenceOptions *options)
{
  static const GraftShapeInferenceOptions no_options = { 0 };
  GraftGraph *graph = graft_model_get_graph (model);
  Inferer inferer = { 0 };
  g_autoptr(GPtrArray) order = NULL;
  GraftInference *base;

  if (options == NULL)
    options = &no_options;
  inferer.model = model;
  inferer.report = options->report;
  inferer.overrides = options->overrides;
  inferer.input_shapes = options->input_shapes;
  inferer.given_input_dtype = options->given_input_dtype;
  if (inferer.report != NULL)
    {
      memset (inferer.report, 0, sizeof *inferer.report);
      inferer.report->problems = g_ptr_array_new_with_free_func (g_free);
    }
  if (graph == NULL)
    return inference_new ();

  /* A base that is itself over a base would make lookups a chain; a
   * report counts what each node gave. */
  base = options->base != NULL && options->base->base == NULL && options->report == NULL ? options->base : NULL;
  start_inference (&inferer, graph, base);
  if (base != NULL)
    {
      for (guint i = 0; i < graph->inputs->len; i++)
        settle (&inferer, g_ptr_array_index (graph->inputs, i));
      for (guint i = 0; i < graph->initializers->len; i++)
        settle (&inferer, g_ptr_array_index (graph->initializers, i));
    }
  order = topological_order (graph);
  for (guint i = 0; i < order->len; i++)
    {
      GraftNode *node = g_ptr_array_index (order, i);

      if (options->hook != NULL)
        options->hook (node, inferer.result, options->overrides, options->hook_data);
      if (base == NULL)
        infer_subgraphs_then_node (&inferer, node);
      else if (!is_settled (&inferer, node))
        {
          /* Outputs the node leaves unknown must not read as base has them. */
          clear_inferred (&inferer, node);
          infer_subgraphs_then_node (&inferer, node);
          for (guint j = 0; j < node->outputs->len; j++)
            if (g_ptr_array_index (node->outputs, j) != NULL)
              settle (&inferer, g_ptr_array_index (node->outputs, j));
        }
    }
  if (inferer.report != NULL)
    inferer.report->n_nodes = order->len;

  g_hash_table_unref (inferer.rt_data);
  return inferer.result;
}

GraftInference *
graft_shape_inference_run (GraftModel *model, GraftShapeInferenceReport *report)
{
  GraftShapeInferenceOptions options = { .report = report };

  return graft_shape_inference_run_full (model, &options);
}

struct _GraftShapeInferenceSession {
  Inferer inferer;
  GraftGraph *graph;
  guint next;              /* graph->nodes[0 .. next) are up to date */
};

/* Graph order is a topological order, and no node has a body (whose
 * outer-scope reads the run's own order does not wait for). */
static gboolean
session_applies (GraftGraph *graph)
{
  for (guint i = 0; i < graph->nodes->len; i++)
    {
      GraftNode *node = g_ptr_array_index (graph->nodes, i);
      g_autoptr(GPtrArray) subgraphs = graft_node_get_subgraphs (node);

      if (subgraphs->len > 0)
        return FALSE;
      for (guint j = 0; j < node->inputs->len; j++)
        {
          GraftValue *v = g_ptr_array_index (node->inputs, j);
          if (v != NULL && v->producer != NULL && (v->producer->graph != graph || v->producer->index >= i))
            return FALSE;
        }
    }
  return TRUE;
}

GraftShapeInferenceSession *
graft_shape_inference_session_new (GraftModel *model)
{
  GraftGraph *graph = graft_model_get_graph (model);
  GraftShapeInferenceSession *session;

  if (graph == NULL || !session_applies (graph))
    return NULL;
  session = g_new0 (GraftShapeInferenceSession, 1);
  session->inferer.model = model;
  session->graph = graph;
  start_inference (&session->inferer, graph, NULL);
  return session;
}

/* What a value's entries say may be left from an earlier inference of it,
 * or from a freed value that had the same address. */
static void
forget_value (Inferer *inferer, GraftValue *value)
{
  clear_inferred_value (inferer, value);
  g_hash_table_remove (inferer->data, value);
  g_hash_table_remove (inferer->rt_data, value);
}

static void
session_infer_node (GraftShapeInferenceSession *session, GraftNode *node)
{
  Inferer *inferer = &session->inferer;

  /* Initializers are seeded afresh as a run would have: one may have been
   * added since the session began, at the address of a freed value whose
   * entries are still in the tables. */
  for (guint i = 0; i < node->inputs->len; i++)
    {
      GraftValue *v = g_ptr_array_index (node->inputs, i);
      if (v != NULL && v->producer == NULL && v->initializer != NULL)
        {
          forget_value (inferer, v);
          seed_value (inferer, v);
        }
    }
  /* As if cleared at the start of a run. */
  clear_inferred (inferer, node);
  for (guint i = 0; i < node->outputs->len; i++)
    if (g_ptr_array_index (node->outputs, i) != NULL)
      forget_value (inferer, g_ptr_array_index (node->outputs, i));
  infer_node (inferer, node);
}

void
graft_shape_inference_session_infer_through (GraftShapeInferenceSession *session, GraftNode *node)
{
  g_return_if_fail (node->graph == session->graph && node->index < session->graph->nodes->len);

  for (; session->next <= node->index; session->next++)
    session_infer_node (session, g_ptr_array_index (session->graph->nodes, session->next));
}

void
graft_shape_inference_session_rewind (GraftShapeInferenceSession *session, GraftNode *node)
{
  session->next = MIN (session->next, node->index);
}

void
graft_shape_inference_session_node_removed (GraftShapeInferenceSession *session, guint index)
{
  if (index < session->next)
    session->next--;
}

void
graft_shape_inference_session_free (GraftShapeInferenceSession *session)
{
  if (session == NULL)
    return;
  graft_inference_unref (session->inferer.result);
  g_hash_table_unref (session->inferer.rt_data);
  g_free (session);
}

void
graft_shape_inference_report_clear (GraftShapeInferenceReport *report)
{
  g_clear_pointer (&report->problems, g_ptr_array_unref);
}

GraftInference *
graft_shape_inference_session_get_inference (GraftShapeInferenceSession *session)
{
  return session->inferer.result;
}
