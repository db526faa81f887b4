/* Indexing: Gather, GatherElements, GatherND, Scatter, ScatterElements,
 * ScatterND, OneHot, Compress, NonZero. Negative indices count from the
 * end; out-of-range indices are errors naming the index. */
#include <math.h>
#include <string.h>
#include "runtime/kernels/kernel-util.h"

static gboolean
check_index (gint64 *idx, gint64 dim, GError **error)
{
  if (*idx < 0)
    *idx += dim;
  if (*idx < 0 || *idx >= dim)
    return graft_kernel_fail (error, "index %" G_GINT64_FORMAT " is out of range for a dimension of %" G_GINT64_FORMAT,
                              *idx < 0 ? *idx - dim : *idx, dim);
  return TRUE;
}

/* ---- Gather ---- */

static gboolean
infer_gather (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *data = graft_infer_input (ctx, 0), *ind = graft_infer_input (ctx, 1);
  gint64 axis = graft_node_attr_int (ctx->node, "axis", 0);
  if (data->shape.rank < 0 || ind->shape.rank < 0)
    {
      graft_infer_set_output_unknown (ctx, 0, data->dtype, -1);
      return TRUE;
    }
  if (!graft_normalize_axis (&axis, data->shape.rank, error))
    return FALSE;
  GraftShape out;
  graft_shape_init (&out, data->shape.rank - 1 + ind->shape.rank);
  int p = 0;
  for (int d = 0; d < axis; d++)
    out.dims[p++] = data->shape.dims[d];
  for (int d = 0; d < ind->shape.rank; d++)
    out.dims[p++] = ind->shape.dims[d];
  for (int d = axis + 1; d < data->shape.rank; d++)
    out.dims[p++] = data->shape.dims[d];
  graft_infer_set_output (ctx, 0, data->dtype, &out);
  graft_shape_clear (&out);
  return TRUE;
}

static gboolean
kernel_gather (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *data = ctx->inputs[0], *ind = ctx->inputs[1];
  gint64 axis = graft_node_attr_int (ctx->node, "axis", 0);
  if (!graft_normalize_axis (&axis, data->rank, error))
    return FALSE;
  GraftRtTensor *out = graft_kernel_output (ctx, 0, error);
  if (out == NULL)
    return FALSE;
  gint64 outer = graft_dims_product (data->dims, 0, axis), dim = data->dims[axis];
  gint64 inner = graft_dims_product (data->dims, axis + 1, data->rank);
  gint64 n = ind->numel;
  for (gint64 k = 0; k < n; k++)
    {
      gint64 idx = graft_rt_tensor_get_i64 (ind, k);
      if (!check_index (&idx, dim, error))
        return FALSE;
      for (gint64 o = 0; o < outer; o++)
        graft_copy_block (out, (o * n + k) * inner, data, (o * dim + idx) * inner, inner);
    }
  return TRUE;
}

/* ---- GatherElements / ScatterElements ---- */

static gboolean
infer_gather_elements (GraftInferContext *ctx, GError **error)
{
  graft_infer_set_output (ctx, 0, graft_infer_input (ctx, 0)->dtype, &graft_infer_input (ctx, 1)->shape);
  return TRUE;
}

/* Calls back for every element of indices with the flat offset into data. */
static gboolean
elements_offsets (const GraftRtTensor *data, const GraftRtTensor *ind, gint64 axis, gint64 *offsets, GError **error)
{
  gint64 strides[GRAFT_RT_MAX_RANK], index[GRAFT_RT_MAX_RANK] = { 0 };
  if (ind->rank != data->rank)
    return graft_kernel_fail (error, "indices rank %d differs from data rank %d", ind->rank, data->rank);
  graft_rt_strides (data->rank, data->dims, strides);
  for (gint64 i = 0; i < ind->numel; i++)
    {
      gint64 off = 0;
      for (int d = 0; d < data->rank; d++)
        {
          gint64 v = index[d];
          if (d == axis)
            {
              v = graft_rt_tensor_get_i64 (ind, i);
              if (!check_index (&v, data->dims[d], error))
                return FALSE;
            }
          else if (v >= data->dims[d])
            return graft_kernel_fail (error, "indices are larger than data on axis %d", d);
          off += v * strides[d];
        }
      offsets[i] = off;
      graft_index_next (index, ind->dims, ind->rank);
    }
  return TRUE;
}

static gboolean
kernel_gather_elements (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *data = ctx->inputs[0], *ind = ctx->inputs[1];
  gint64 axis = graft_node_attr_int (ctx->node, "axis", 0);
  if (!graft_normalize_axis (&axis, data->rank, error))
    return FALSE;
  GraftRtTensor *out = graft_kernel_output (ctx, 0, error);
  g_autofree gint64 *offsets = g_new (gint64, MAX (ind->numel, 1));
  if (out == NULL || !elements_offsets (data, ind, axis, offsets, error))
    return FALSE;
  for (gint64 i = 0; i < ind->numel; i++)
    graft_copy_element (out, i, data, offsets[i]);
  return TRUE;
}

typedef enum { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN } Reduction;

static Reduction
reduction_attr (GraftNode *node)
{
  const char *r = graft_node_attr_string (node, "reduction", "none");
  return strcmp (r, "add") == 0 ? RED_ADD : strcmp (r, "mul") == 0 ? RED_MUL :
         strcmp (r, "max") == 0 ? RED_MAX : strcmp (r, "min") == 0 ? RED_MIN : RED_NONE;
}

static void
scatter_one (GraftRtTensor *out, gint64 di, const GraftRtTensor *upd, gint64 si, Reduction red)
{
  if (red == RED_NONE || out->dtype == GRAFT_DTYPE_STRING)
    {
      graft_copy_element (out, di, upd, si);
      return;
    }
  if (graft_dtype_is_integer (out->dtype))
    {
      gint64 a = graft_rt_tensor_get_i64 (out, di), b = graft_rt_tensor_get_i64 (upd, si);
      graft_rt_tensor_set_i64 (out, di, red == RED_ADD ? a + b : red == RED_MUL ? a * b : red == RED_MAX ? MAX (a, b) : MIN (a, b));
      return;
    }
  double a = graft_rt_tensor_get_f64 (out, di), b = graft_rt_tensor_get_f64 (upd, si);
  graft_rt_tensor_set_f64 (out, di, red == RED_ADD ? a + b : red == RED_MUL ? a * b : red == RED_MAX ? MAX (a, b) : MIN (a, b));
}

static gboolean
kernel_scatter_elements (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *data = ctx->inputs[0], *ind = ctx->inputs[1], *upd = ctx->inputs[2];
  gint64 axis = graft_node_attr_int (ctx->node, "axis", 0);
  Reduction red = reduction_attr (ctx->node);
  if (!graft_normalize_axis (&axis, data->rank, error))
    return FALSE;
  GraftRtTensor *out = graft_rt_tensor_copy (data, error);
  if (out == NULL)
    return FALSE;
  graft_kernel_set_output (ctx, 0, out);
  g_autofree gint64 *offsets = g_new (gint64, MAX (ind->numel, 1));
  if (!elements_offsets (data, ind, axis, offsets, error))
    return FALSE;
  for (gint64 i = 0; i < ind->numel; i++)
    scatter_one (out, offsets[i], upd, i, red);
  return TRUE;
}

/* ---- GatherND / ScatterND ---- */

static gboolean
infer_gather_nd (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *data = graft_infer_input (ctx, 0), *ind = graft_infer_input (ctx, 1);
  gint64 b = graft_node_attr_int (ctx->node, "batch_dims", 0);
  if (data->shape.rank < 0 || ind->shape.rank < 1 || ind->shape.dims[ind->shape.rank - 1].kind != GRAFT_DIM_FIXED)
    {
      graft_infer_set_output_unknown (ctx, 0, data->dtype, -1);
      return TRUE;
    }
  gint64 last = ind->shape.dims[ind->shape.rank - 1].value;
  int rank = ind->shape.rank - 1 + data->shape.rank - last - b;
  if (rank < 0 || b + last > data->shape.rank)
    return graft_kernel_fail (error, "indices of depth %" G_GINT64_FORMAT " do not fit data of rank %d", last, data->shape.rank);
  GraftShape out;
  graft_shape_init (&out, rank);
  int p = 0;
  for (int d = 0; d < ind->shape.rank - 1; d++)
    out.dims[p++] = ind->shape.dims[d];
  for (int d = b + last; d < data->shape.rank; d++)
    out.dims[p++] = data->shape.dims[d];
  graft_infer_set_output (ctx, 0, data->dtype, &out);
  graft_shape_clear (&out);
  return TRUE;
}

static gboolean
kernel_gather_nd (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *data = ctx->inputs[0], *ind = ctx->inputs[1];
  gint64 b = graft_node_attr_int (ctx->node, "batch_dims", 0);
  GraftRtTensor *out = graft_kernel_output (ctx, 0, error);
  if (out == NULL)
    return FALSE;
  gint64 last = ind->dims[ind->rank - 1];
  gint64 strides[GRAFT_RT_MAX_RANK];
  graft_rt_strides (data->rank, data->dims, strides);
  gint64 slice = graft_dims_product (data->dims, b + last, data->rank);
  gint64 batch = graft_dims_product (data->dims, 0, b);
  gint64 tuples = ind->numel / MAX (last, 1);
  gint64 per_batch = tuples / MAX (batch, 1);
  for (gint64 t = 0; t < tuples; t++)
    {
      gint64 bi = t / MAX (per_batch, 1);
      gint64 off = bi * (b > 0 ? strides[b - 1] : 0);
      for (gint64 k = 0; k < last; k++)
        {
          gint64 v = graft_rt_tensor_get_i64 (ind, t * last + k);
          if (!check_index (&v, data->dims[b + k], error))
            return FALSE;
          off += v * strides[b + k];
        }
      graft_copy_block (out, t * slice, data, off, slice);
    }
  return TRUE;
}

static gboolean
kernel_scatter_nd (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *data = ctx->inputs[0], *ind = ctx->inputs[1], *upd = ctx->inputs[2];
  Reduction red = reduction_attr (ctx->node);
  GraftRtTensor *out = graft_rt_tensor_copy (data, error);
  if (out == NULL)
    return FALSE;
  graft_kernel_set_output (ctx, 0, out);
  gint64 last = ind->dims[ind->rank - 1];
  gint64 strides[GRAFT_RT_MAX_RANK];
  graft_rt_strides (data->rank, data->dims, strides);
  gint64 slice = graft_dims_product (data->dims, last, data->rank);
  gint64 tuples = ind->numel / MAX (last, 1);
  for (gint64 t = 0; t < tuples; t++)
    {
      gint64 off = 0;
      for (gint64 k = 0; k < last; k++)
        {
          gint64 v = graft_rt_tensor_get_i64 (ind, t * last + k);
          if (!check_index (&v, data->dims[k], error))
            return FALSE;
          off += v * strides[k];
        }
      for (gint64 s = 0; s < slice; s++)
        scatter_one (out, off + s, upd, t * slice + s, red);
    }
  return TRUE;
}

/* ---- OneHot ---- */

static gboolean
infer_one_hot (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *ind = graft_infer_input (ctx, 0), *depth = graft_infer_input (ctx, 1), *values = graft_infer_input (ctx, 2);
  gint64 axis = graft_node_attr_int (ctx->node, "axis", -1);
  if (ind->shape.rank < 0)
    {
      graft_infer_set_output_unknown (ctx, 0, values->dtype, -1);
      return TRUE;
    }
  int rank = ind->shape.rank + 1;
  if (!graft_normalize_axis (&axis, rank, error))
    return FALSE;
  GraftShape out;
  graft_shape_init (&out, rank);
  for (int d = 0, s = 0; d < rank; d++)
    if (d == axis)
      out.dims[d] = depth->data ? graft_dim_fixed ((gint64) graft_rt_tensor_get_f64 (depth->data, 0)) : graft_dim_unknown ();
    else
      out.dims[d] = ind->shape.dims[s++];
  graft_infer_set_output (ctx, 0, values->dtype, &out);
  graft_shape_clear (&out);
  return TRUE;
}

static gboolean
kernel_one_hot (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *ind = ctx->inputs[0], *values = ctx->inputs[2];
  GraftRtTensor *out = graft_kernel_output (ctx, 0, error);
  gint64 axis = graft_node_attr_int (ctx->node, "axis", -1);
  if (out == NULL || !graft_normalize_axis (&axis, out->rank, error))
    return FALSE;
  gint64 depth = out->dims[axis];
  gint64 outer = graft_dims_product (out->dims, 0, axis), inner = graft_dims_product (out->dims, axis + 1, out->rank);
  for (gint64 i = 0; i < out->numel; i++)
    graft_copy_element (out, i, values, 0);
  for (gint64 o = 0; o < outer; o++)
    for (gint64 i = 0; i < inner; i++)
      {
        gint64 v = (gint64) graft_rt_tensor_get_f64 (ind, o * inner + i);
        if (v < 0)
          v += depth;
        if (v >= 0 && v < depth)
          graft_copy_element (out, (o * depth + v) * inner + i, values, 1);
      }
  return TRUE;
}

/* ---- Compress, NonZero (data-dependent shapes) ---- */

static gboolean
kernel_compress (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *in = ctx->inputs[0], *cond = ctx->inputs[1];
  gboolean has_axis = graft_node_has_attr (ctx->node, "axis");
  gint64 axis = graft_node_attr_int (ctx->node, "axis", 0);
  gint64 dims[GRAFT_RT_MAX_RANK];
  int rank;
  gint64 dim;
  if (has_axis)
    {
      if (!graft_normalize_axis (&axis, in->rank, error))
        return FALSE;
      rank = in->rank;
      memcpy (dims, in->dims, sizeof (gint64) * rank);
      dim = in->dims[axis];
    }
  else
    {
      rank = 1;
      axis = 0;
      dim = in->numel;
    }
  gint64 kept = 0;
  for (gint64 i = 0; i < MIN (cond->numel, dim); i++)
    kept += ((guint8 *) cond->data)[i] != 0;
  dims[axis] = kept;
  GraftRtTensor *out = graft_kernel_alloc_output (ctx, 0, in->dtype, rank, dims, error);
  if (out == NULL)
    return FALSE;
  gint64 outer = has_axis ? graft_dims_product (in->dims, 0, axis) : 1;
  gint64 inner = has_axis ? graft_dims_product (in->dims, axis + 1, in->rank) : 1;
  for (gint64 o = 0; o < outer; o++)
    {
      gint64 j = 0;
      for (gint64 k = 0; k < MIN (cond->numel, dim); k++)
        if (((guint8 *) cond->data)[k])
          {
            graft_copy_block (out, (o * kept + j) * inner, in, (o * dim + k) * inner, inner);
            j++;
          }
    }
  return TRUE;
}

static gboolean
infer_nonzero (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *in = graft_infer_input (ctx, 0);
  GraftShape out;
  graft_shape_init (&out, 2);
  out.dims[0] = in->shape.rank >= 0 ? graft_dim_fixed (in->shape.rank) : graft_dim_unknown ();
  graft_infer_set_output (ctx, 0, GRAFT_DTYPE_INT64, &out);
  graft_shape_clear (&out);
  return TRUE;
}

static gboolean
kernel_nonzero (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *in = ctx->inputs[0];
  gint64 count = 0;
  for (gint64 i = 0; i < in->numel; i++)
    count += graft_rt_tensor_get_f64 (in, i) != 0;
  gint64 dims[2] = { in->rank, count };
  GraftRtTensor *out = graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_INT64, 2, dims, error);
  if (out == NULL)
    return FALSE;
  gint64 index[GRAFT_RT_MAX_RANK] = { 0 }, j = 0;
  for (gint64 i = 0; i < in->numel; i++)
    {
      if (graft_rt_tensor_get_f64 (in, i) != 0)
        {
          for (int d = 0; d < in->rank; d++)
            ((gint64 *) out->data)[d * count + j] = index[d];
          j++;
        }
      graft_index_next (index, in->dims, in->rank);
    }
  return TRUE;
}

#define OP(name, since, infer, kernel, input_names, output_names) { "onnx::" name, since, 0, infer, kernel, 0, input_names, output_names }

/* ---- TensorScatter (24): a key/value cache update ---- */

static gboolean
kernel_tensor_scatter (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *past = ctx->inputs[0], *update = ctx->inputs[1], *write_indices = graft_kernel_input (ctx, 2);
  gint64 axis = graft_node_attr_int (ctx->node, "axis", -2);
  gboolean circular = g_str_equal (graft_node_attr_string (ctx->node, "mode", "linear"), "circular");
  if (!graft_normalize_axis (&axis, past->rank, error))
    return FALSE;
  if (axis == 0)
    return graft_kernel_fail (error, "axis must not be the batch axis");
  if (update->rank != past->rank || update->dtype != past->dtype)
    return graft_kernel_fail (error, "update must have the cache's rank and element type");
  for (int d = 0; d < past->rank; d++)
    if (d != axis && update->dims[d] != past->dims[d])
      return graft_kernel_fail (error, "update differs from the cache on axis %d", d);
  if (write_indices && write_indices->numel != past->dims[0])
    return graft_kernel_fail (error, "write_indices must have one index per batch");
  GraftRtTensor *present = graft_kernel_output (ctx, 0, error);
  if (present == NULL)
    return FALSE;
  graft_copy_block (present, 0, past, 0, past->numel);
  gint64 capacity = past->dims[axis], length = update->dims[axis];
  gint64 inner = graft_dims_product (past->dims, axis + 1, past->rank);
  gint64 per_batch = graft_dims_product (past->dims, 1, axis);
  for (gint64 b = 0; b < past->dims[0]; b++)
    {
      gint64 start = write_indices ? graft_rt_tensor_get_i64 (write_indices, b) : 0;
      for (gint64 p = 0; p < per_batch; p++)
        for (gint64 s = 0; s < length; s++)
          {
            gint64 position = circular ? (start + s) % MAX (capacity, 1) : start + s;
            if (position < 0 || position >= capacity)
              return graft_kernel_fail (error, "write index %" G_GINT64_FORMAT " + %" G_GINT64_FORMAT
                                        " is outside the cache's %" G_GINT64_FORMAT " positions", start, s, capacity);
            gint64 outer = b * per_batch + p;
            graft_copy_block (present, (outer * capacity + position) * inner, update, (outer * length + s) * inner, inner);
          }
    }
  return TRUE;
}

const GraftOpSchema graft_ops_gather[] = {
  OP ("Gather", 1, infer_gather, kernel_gather, "data indices", "output"),
  OP ("GatherElements", 11, infer_gather_elements, kernel_gather_elements, "data indices", "output"),
  OP ("GatherND", 11, infer_gather_nd, kernel_gather_nd, "data indices", "output"),
  OP ("Scatter", 9, graft_infer_same_as_input, kernel_scatter_elements, "data indices updates", "output"),
  OP ("ScatterElements", 11, graft_infer_same_as_input, kernel_scatter_elements, "data indices updates", "output"),
  OP ("ScatterND", 11, graft_infer_same_as_input, kernel_scatter_nd, "data indices updates", "output"),
  OP ("TensorScatter", 24, graft_infer_same_as_input, kernel_tensor_scatter, "past_cache update write_indices", "present_cache"),
  OP ("OneHot", 9, infer_one_hot, kernel_one_hot, "indices depth values", "output"),
  OP ("Compress", 9, NULL, kernel_compress, "input condition", "output"),
  OP ("NonZero", 9, infer_nonzero, kernel_nonzero, "X", "Y"),
  { NULL }
};
