/* Classic ML operators of the ai.onnx.ml domain: LabelEncoder, Binarizer,
 * ArrayFeatureExtractor. */
#include <math.h>
#include <string.h>
#include "runtime/kernels/kernel-util.h"

/* ---- LabelEncoder ---- */

/* The keys_* or values_* attribute as a 1-D tensor (its own tensor for
 * *_tensor); NULL with error when none is set. */
static GraftRtTensor *
mapping_attribute (GraftNode *node, const char *prefix, GError **error)
{
  static const char *const suffixes[] = { "tensor", "strings", "int64s", "floats" };
  for (guint k = 0; k < G_N_ELEMENTS (suffixes); k++)
    {
      g_autofree char *name = g_strdup_printf ("%s_%s", prefix, suffixes[k]);
      GraftAttribute *a = graft_node_get_attribute (node, name);
      if (a == NULL)
        continue;
      if (a->type == GRAFT_ATTR_TENSOR && a->t)
        return graft_rt_tensor_new_from_tensor (a->t, error);
      gint64 n = a->type == GRAFT_ATTR_STRINGS ? (gint64) a->strings->len : a->type == GRAFT_ATTR_INTS ? (gint64) a->ints->len
               : a->type == GRAFT_ATTR_FLOATS ? (gint64) a->floats->len : -1;
      if (n < 0)
        break;
      GraftDType dtype = a->type == GRAFT_ATTR_STRINGS ? GRAFT_DTYPE_STRING
                       : a->type == GRAFT_ATTR_INTS ? GRAFT_DTYPE_INT64 : GRAFT_DTYPE_FLOAT32;
      GraftRtTensor *t = graft_rt_tensor_new (dtype, 1, &n, error);
      if (t == NULL)
        return NULL;
      for (gint64 i = 0; i < n; i++)
        if (dtype == GRAFT_DTYPE_STRING)
          {
            gsize length;
            const char *s = g_bytes_get_data (a->strings->pdata[i], &length);
            g_free (((char **) t->data)[i]);
            ((char **) t->data)[i] = g_strndup (s ? s : "", length);
          }
        else if (dtype == GRAFT_DTYPE_INT64)
          graft_rt_tensor_set_i64 (t, i, g_array_index (a->ints, gint64, i));
        else
          graft_rt_tensor_set_f64 (t, i, g_array_index (a->floats, double, i));
      return t;
    }
  return graft_kernel_fail (error, "no %s_* attribute (tensor, strings, int64s or floats)", prefix), NULL;
}

static GraftDType
mapped_dtype (GraftNode *node)
{
  GraftAttribute *t = graft_node_get_attribute (node, "values_tensor");
  if (t && t->t)
    return t->t->dtype;
  if (graft_node_has_attr (node, "values_strings"))
    return GRAFT_DTYPE_STRING;
  return graft_node_has_attr (node, "values_int64s") ? GRAFT_DTYPE_INT64 : GRAFT_DTYPE_FLOAT32;
}

static gboolean
infer_label_encoder (GraftInferContext *ctx, GError **error)
{
  graft_infer_set_output (ctx, 0, mapped_dtype (ctx->node), &graft_infer_input (ctx, 0)->shape);
  return TRUE;
}

static gboolean
same_key (const GraftRtTensor *keys, gint64 k, const GraftRtTensor *x, gint64 i)
{
  if (keys->dtype == GRAFT_DTYPE_STRING || x->dtype == GRAFT_DTYPE_STRING)
    return keys->dtype == x->dtype && g_strcmp0 (((char **) keys->data)[k], ((char **) x->data)[i]) == 0;
  double a = graft_rt_tensor_get_f64 (keys, k), b = graft_rt_tensor_get_f64 (x, i);
  return a == b || (isnan (a) && isnan (b));   /* a NaN key matches any NaN */
}

static gboolean
kernel_label_encoder (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0];
  g_autoptr(GraftRtTensor) keys = mapping_attribute (ctx->node, "keys", error);
  if (keys == NULL)
    return FALSE;
  g_autoptr(GraftRtTensor) values = mapping_attribute (ctx->node, "values", error);
  if (values == NULL)
    return FALSE;
  if (keys->numel != values->numel)
    return graft_kernel_fail (error, "%" G_GINT64_FORMAT " keys but %" G_GINT64_FORMAT " values", keys->numel, values->numel);
  GraftAttribute *default_tensor = graft_node_get_attribute (ctx->node, "default_tensor");
  g_autoptr(GraftRtTensor) fallback = default_tensor && default_tensor->t
                                      ? graft_rt_tensor_new_from_tensor (default_tensor->t, error)
                                      : graft_rt_tensor_new (values->dtype, 0, NULL, error);
  if (fallback == NULL)
    return FALSE;
  if (fallback->numel != 1 || fallback->dtype != values->dtype)
    return graft_kernel_fail (error, "default_tensor must be one %s value", graft_dtype_to_string (values->dtype));
  if (!(default_tensor && default_tensor->t))
    {
      if (values->dtype == GRAFT_DTYPE_STRING)
        {
          g_free (((char **) fallback->data)[0]);
          ((char **) fallback->data)[0] = g_strdup (graft_node_attr_string (ctx->node, "default_string", "_Unused"));
        }
      else if (values->dtype == GRAFT_DTYPE_INT64)
        graft_rt_tensor_set_i64 (fallback, 0, graft_node_attr_int (ctx->node, "default_int64", -1));
      else
        graft_rt_tensor_set_f64 (fallback, 0, graft_node_attr_float (ctx->node, "default_float", -0.0));
    }
  GraftRtTensor *y = graft_kernel_output (ctx, 0, error);
  if (y == NULL)
    return FALSE;
  for (gint64 i = 0; i < x->numel; i++)
    {
      gint64 k = keys->numel - 1;   /* a repeated key: the last one counts */
      while (k >= 0 && !same_key (keys, k, x, i))
        k--;
      graft_copy_element (y, i, k >= 0 ? values : fallback, k >= 0 ? k : 0);
    }
  return TRUE;
}

/* ---- Binarizer ---- */

static gboolean
kernel_binarizer (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0];
  double threshold = graft_node_attr_float (ctx->node, "threshold", 0);
  GraftRtTensor *y = graft_kernel_output (ctx, 0, error);
  if (y == NULL)
    return FALSE;
  for (gint64 i = 0; i < x->numel; i++)
    graft_rt_tensor_set_f64 (y, i, graft_rt_tensor_get_f64 (x, i) > threshold ? 1 : 0);
  return TRUE;
}

/* ---- ArrayFeatureExtractor: X[..., indices] ---- */

static gboolean
infer_array_feature_extractor (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *x = graft_infer_input (ctx, 0), *indices = graft_infer_input (ctx, 1);
  gint64 n = graft_shape_get_numel (&indices->shape);
  if (x->shape.rank < 1 || n < 0)
    {
      graft_infer_set_output_unknown (ctx, 0, x->dtype, x->shape.rank < 1 ? -1 : MAX (x->shape.rank, 2));
      return TRUE;
    }
  GraftShape shape;
  /* a vector becomes one row */
  graft_shape_init (&shape, MAX (x->shape.rank, 2));
  for (int d = 0; d < x->shape.rank - 1; d++)
    shape.dims[d] = x->shape.dims[d];
  if (x->shape.rank == 1)
    shape.dims[0] = graft_dim_fixed (1);
  shape.dims[shape.rank - 1] = graft_dim_fixed (n);
  graft_infer_set_output (ctx, 0, x->dtype, &shape);
  graft_shape_clear (&shape);
  return TRUE;
}

static gboolean
kernel_array_feature_extractor (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0], *indices = ctx->inputs[1];
  if (x->rank < 1)
    return graft_kernel_fail (error, "X must have at least one axis");
  gint64 last = x->dims[x->rank - 1], rows = x->numel / MAX (last, 1);
  GraftRtTensor *z = graft_kernel_output (ctx, 0, error);
  if (z == NULL)
    return FALSE;
  for (gint64 k = 0; k < indices->numel; k++)
    {
      gint64 index = graft_rt_tensor_get_i64 (indices, k);
      if (index < 0 || index >= last)
        return graft_kernel_fail (error, "index %" G_GINT64_FORMAT " is outside X's last axis of %" G_GINT64_FORMAT,
                                  index, last);
      for (gint64 r = 0; r < rows; r++)
        graft_copy_element (z, r * indices->numel + k, x, r * last + index);
    }
  return TRUE;
}

#define ML(name, since, infer, kernel) { "ai.onnx.ml::" name, since, 0, infer, kernel, 0 }

const GraftOpSchema graft_ops_ml[] = {
  ML ("LabelEncoder", 1, infer_label_encoder, kernel_label_encoder),
  ML ("Binarizer", 1, graft_infer_same_as_input, kernel_binarizer),
  ML ("ArrayFeatureExtractor", 1, infer_array_feature_extractor, kernel_array_feature_extractor),
  { NULL }
};
