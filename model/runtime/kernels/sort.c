/* Ordering and selection: TopK, Unique, ReverseSequence,
 * NonMaxSuppression, plus Det (a small generic implementation). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/kernels/kernel-util.h"

/* ---- TopK ---- */

typedef struct {
  double value;
  gint64 index;
} Item;

static int
cmp_largest (const void *a, const void *b)
{
  const Item *x = a, *y = b;
  if (x->value != y->value)
    return x->value > y->value ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

static int
cmp_smallest (const void *a, const void *b)
{
  const Item *x = a, *y = b;
  if (x->value != y->value)
    return x->value < y->value ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

static gboolean
infer_topk (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *x = graft_infer_input (ctx, 0);
  gint64 axis = graft_node_attr_int (ctx->node, "axis", -1);
  if (x->shape.rank < 0)
    {
      graft_infer_set_output_unknown (ctx, 0, x->dtype, -1);
      graft_infer_set_output_unknown (ctx, 1, GRAFT_DTYPE_INT64, -1);
      return TRUE;
    }
  if (!graft_normalize_axis (&axis, x->shape.rank, error))
    return FALSE;
  GraftShape out;
  graft_shape_copy (&out, &x->shape);
  gint64 n;
  g_autofree gint64 *k = ctx->opset >= 10 ? graft_infer_input_ints (ctx, 1, &n) : NULL;
  if (ctx->opset < 10)
    out.dims[axis] = graft_dim_fixed (graft_node_attr_int (ctx->node, "k", 1));
  else
    out.dims[axis] = k && n == 1 ? graft_dim_fixed (k[0]) : graft_dim_unknown ();
  graft_infer_set_output (ctx, 0, x->dtype, &out);
  graft_infer_set_output (ctx, 1, GRAFT_DTYPE_INT64, &out);
  graft_shape_clear (&out);
  return TRUE;
}

static gboolean
kernel_topk (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0];
  gint64 axis = graft_node_attr_int (ctx->node, "axis", -1);
  gboolean largest = graft_node_attr_int (ctx->node, "largest", 1);
  gboolean sorted = graft_node_attr_int (ctx->node, "sorted", 1);
  gint64 k = ctx->opset >= 10 ? graft_rt_tensor_get_i64 (ctx->inputs[1], 0) : graft_node_attr_int (ctx->node, "k", 1);
  if (!graft_normalize_axis (&axis, x->rank, error))
    return FALSE;
  gint64 n = x->dims[axis];
  if (k < 0 || k > n)
    return graft_kernel_fail (error, "k = %" G_GINT64_FORMAT " is outside 0..%" G_GINT64_FORMAT, k, n);
  (void) sorted;
  GraftRtTensor *values = graft_kernel_output (ctx, 0, error);
  GraftRtTensor *indices = values ? graft_kernel_output (ctx, 1, error) : NULL;
  if (indices == NULL)
    return FALSE;
  gint64 outer = graft_dims_product (x->dims, 0, axis), inner = graft_dims_product (x->dims, axis + 1, x->rank);
  g_autofree Item *items = g_new (Item, MAX (n, 1));
  for (gint64 o = 0; o < outer; o++)
    for (gint64 i = 0; i < inner; i++)
      {
        for (gint64 j = 0; j < n; j++)
          items[j] = (Item) { graft_rt_tensor_get_f64 (x, (o * n + j) * inner + i), j };
        qsort (items, n, sizeof (Item), largest ? cmp_largest : cmp_smallest);
        for (gint64 j = 0; j < k; j++)
          {
            gint64 dst = (o * k + j) * inner + i;
            graft_copy_element (values, dst, x, (o * n + items[j].index) * inner + i);
            ((gint64 *) indices->data)[dst] = items[j].index;
          }
      }
  return TRUE;
}

/* ---- Unique ---- */

typedef struct {
  const GraftRtTensor *x;
  gint64 block, stride_outer, n;   /* slices along axis: compare block elements */
  gint64 inner;
} SliceCmp;

static SliceCmp *slice_cmp_ctx;

static int
compare_slices (gint64 a, gint64 b, const SliceCmp *c)
{
  gint64 outer = c->block / MAX (c->inner, 1);
  for (gint64 o = 0; o < outer; o++)
    for (gint64 i = 0; i < c->inner; i++)
      {
        double va = graft_rt_tensor_get_f64 (c->x, (o * c->n + a) * c->inner + i);
        double vb = graft_rt_tensor_get_f64 (c->x, (o * c->n + b) * c->inner + i);
        if (va != vb)
          return va < vb ? -1 : 1;
      }
  return 0;
}

static int
qsort_slices (const void *pa, const void *pb)
{
  gint64 a = *(const gint64 *) pa, b = *(const gint64 *) pb;
  int r = compare_slices (a, b, slice_cmp_ctx);
  return r ? r : (a < b ? -1 : a > b);
}

static gboolean
kernel_unique (GraftKernelContext *ctx, GError **error)
{
  static GMutex lock;
  GraftRtTensor *x = ctx->inputs[0];
  gboolean has_axis = graft_node_has_attr (ctx->node, "axis");
  gboolean sorted = graft_node_attr_int (ctx->node, "sorted", 1);
  gint64 axis = graft_node_attr_int (ctx->node, "axis", 0);
  SliceCmp c = { x };
  if (has_axis)
    {
      if (!graft_normalize_axis (&axis, x->rank, error))
        return FALSE;
      c.n = x->dims[axis];
      c.inner = graft_dims_product (x->dims, axis + 1, x->rank);
      c.block = graft_dims_product (x->dims, 0, axis) * c.inner;
    }
  else
    {
      c.n = x->numel;
      c.inner = 1;
      c.block = 1;
    }
  g_autofree gint64 *order = g_new (gint64, MAX (c.n, 1));
  for (gint64 i = 0; i < c.n; i++)
    order[i] = i;
  g_mutex_lock (&lock);
  slice_cmp_ctx = &c;
  qsort (order, c.n, sizeof (gint64), qsort_slices);
  g_mutex_unlock (&lock);

  /* groups of equal slices: first occurrence, count; inverse mapping */
  g_autofree gint64 *first = g_new (gint64, MAX (c.n, 1)), *counts = g_new0 (gint64, MAX (c.n, 1));
  g_autofree gint64 *group_of = g_new (gint64, MAX (c.n, 1));
  gint64 n_groups = 0;
  for (gint64 i = 0; i < c.n; i++)
    {
      if (i == 0 || compare_slices (order[i - 1], order[i], &c) != 0)
        {
          first[n_groups] = order[i];
          n_groups++;
        }
      group_of[order[i]] = n_groups - 1;
      counts[n_groups - 1]++;
    }
  /* output order: sorted groups, or by first occurrence */
  g_autofree gint64 *out_order = g_new (gint64, MAX (n_groups, 1)), *rank_of = g_new (gint64, MAX (n_groups, 1));
  if (sorted)
    for (gint64 g = 0; g < n_groups; g++)
      out_order[g] = g;
  else
    {
      gint64 k = 0;
      g_autofree gboolean *seen = g_new0 (gboolean, MAX (n_groups, 1));
      for (gint64 i = 0; i < c.n; i++)
        if (!seen[group_of[i]])
          {
            seen[group_of[i]] = TRUE;
            out_order[k++] = group_of[i];
          }
    }
  for (gint64 g = 0; g < n_groups; g++)
    rank_of[out_order[g]] = g;

  gint64 dims[GRAFT_RT_MAX_RANK];
  int rank = has_axis ? x->rank : 1;
  if (has_axis)
    memcpy (dims, x->dims, sizeof (gint64) * x->rank);
  dims[has_axis ? axis : 0] = n_groups;
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, x->dtype, rank, dims, error);
  if (y == NULL)
    return FALSE;
  gint64 outer = c.block / MAX (c.inner, 1);
  for (gint64 g = 0; g < n_groups; g++)
    for (gint64 o = 0; o < outer; o++)
      graft_copy_block (y, (o * n_groups + g) * c.inner, x, (o * c.n + first[out_order[g]]) * c.inner, c.inner);
  GraftRtTensor *outs[3];
  gint64 lens[3] = { n_groups, c.n, n_groups };
  for (guint o = 1; o < 4; o++)
    {
      if (!graft_kernel_wants_output (ctx, o))
        continue;
      outs[o - 1] = graft_kernel_alloc_output (ctx, o, GRAFT_DTYPE_INT64, 1, &lens[o - 1], error);
      if (outs[o - 1] == NULL)
        return FALSE;
      gint64 *d = outs[o - 1]->data;
      for (gint64 i = 0; i < lens[o - 1]; i++)
        d[i] = o == 1 ? first[out_order[i]] : o == 2 ? rank_of[group_of[i]] : counts[out_order[i]];
    }
  return TRUE;
}

/* ---- ReverseSequence ---- */

static gboolean
kernel_reverse_sequence (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0], *lens = ctx->inputs[1];
  gint64 batch_axis = graft_node_attr_int (ctx->node, "batch_axis", 1);
  gint64 time_axis = graft_node_attr_int (ctx->node, "time_axis", 0);
  if (x->rank < 2 || batch_axis < 0 || batch_axis > 1 || time_axis < 0 || time_axis > 1 || batch_axis == time_axis)
    return graft_kernel_fail (error, "batch_axis and time_axis must be 0 and 1 in some order");
  /* one length per batch row, each within the time axis: the lengths come
   * from the file (or from a batch traced at another size) */
  if (lens == NULL || lens->numel != x->dims[batch_axis])
    return graft_kernel_fail (error, "sequence_lens has %" G_GINT64_FORMAT " lengths for a batch of %" G_GINT64_FORMAT,
                              lens ? lens->numel : 0, x->dims[batch_axis]);
  for (gint64 b = 0; b < lens->numel; b++)
    if (graft_rt_tensor_get_i64 (lens, b) < 0 || graft_rt_tensor_get_i64 (lens, b) > x->dims[time_axis])
      return graft_kernel_fail (error, "sequence length %" G_GINT64_FORMAT " is outside 0..%" G_GINT64_FORMAT,
                                graft_rt_tensor_get_i64 (lens, b), x->dims[time_axis]);
  GraftRtTensor *y = graft_kernel_output (ctx, 0, error);
  if (y == NULL)
    return FALSE;
  gint64 strides[GRAFT_RT_MAX_RANK], index[GRAFT_RT_MAX_RANK] = { 0 };
  graft_rt_strides (x->rank, x->dims, strides);
  for (gint64 i = 0; i < x->numel; i++)
    {
      gint64 b = index[batch_axis], t = index[time_axis];
      gint64 len = graft_rt_tensor_get_i64 (lens, b);
      gint64 src = i;
      if (t < len)
        src = i + (len - 1 - 2 * t) * strides[time_axis];
      graft_copy_element (y, i, x, src);
      graft_index_next (index, x->dims, x->rank);
    }
  return TRUE;
}

/* ---- NonMaxSuppression ---- */

static double
iou (const float *a, const float *b, gboolean center)
{
  double ax1, ay1, ax2, ay2, bx1, by1, bx2, by2;
  if (center)
    {
      ax1 = a[0] - a[2] / 2; ax2 = a[0] + a[2] / 2; ay1 = a[1] - a[3] / 2; ay2 = a[1] + a[3] / 2;
      bx1 = b[0] - b[2] / 2; bx2 = b[0] + b[2] / 2; by1 = b[1] - b[3] / 2; by2 = b[1] + b[3] / 2;
    }
  else
    {
      ay1 = MIN (a[0], a[2]); ay2 = MAX (a[0], a[2]); ax1 = MIN (a[1], a[3]); ax2 = MAX (a[1], a[3]);
      by1 = MIN (b[0], b[2]); by2 = MAX (b[0], b[2]); bx1 = MIN (b[1], b[3]); bx2 = MAX (b[1], b[3]);
    }
  double iw = MIN (ax2, bx2) - MAX (ax1, bx1), ih = MIN (ay2, by2) - MAX (ay1, by1);
  if (iw <= 0 || ih <= 0)
    return 0;
  double inter = iw * ih;
  double uni = (ax2 - ax1) * (ay2 - ay1) + (bx2 - bx1) * (by2 - by1) - inter;
  return uni > 0 ? inter / uni : 0;
}

static gboolean
kernel_nms (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *boxes = ctx->inputs[0], *scores = ctx->inputs[1];
  GraftRtTensor *max_t = graft_kernel_input (ctx, 2), *iou_t = graft_kernel_input (ctx, 3), *score_t = graft_kernel_input (ctx, 4);
  gint64 max_out = max_t && max_t->numel ? graft_rt_tensor_get_i64 (max_t, 0) : 0;
  double iou_th = iou_t && iou_t->numel ? graft_rt_tensor_get_f64 (iou_t, 0) : 0;
  gboolean has_score = score_t && score_t->numel;
  double score_th = has_score ? graft_rt_tensor_get_f64 (score_t, 0) : 0;
  gboolean center = graft_node_attr_int (ctx->node, "center_point_box", 0);
  if (boxes->dtype != GRAFT_DTYPE_FLOAT32 || boxes->rank != 3 || scores->rank != 3)
    return graft_kernel_fail (error, "boxes must be float32 [batch, boxes, 4] and scores [batch, classes, boxes]");
  gint64 B = scores->dims[0], C = scores->dims[1], N = scores->dims[2];
  g_autoptr(GArray) sel = g_array_new (FALSE, FALSE, sizeof (gint64));
  g_autofree Item *items = g_new (Item, MAX (N, 1));
  g_autofree gint64 *kept = g_new (gint64, MAX (N, 1));
  for (gint64 b = 0; b < B; b++)
    for (gint64 c = 0; c < C; c++)
      {
        gint64 n = 0, n_kept = 0;
        for (gint64 i = 0; i < N; i++)
          {
            double s = ((const float *) scores->data)[(b * C + c) * N + i];
            if (!has_score || s > score_th)
              items[n++] = (Item) { s, i };
          }
        qsort (items, n, sizeof (Item), cmp_largest);
        for (gint64 i = 0; i < n && n_kept < max_out; i++)
          {
            const float *bi = (const float *) boxes->data + (b * N + items[i].index) * 4;
            gboolean keep = TRUE;
            for (gint64 j = 0; j < n_kept && keep; j++)
              keep = iou (bi, (const float *) boxes->data + (b * N + kept[j]) * 4, center) <= iou_th;
            if (keep)
              {
                kept[n_kept++] = items[i].index;
                gint64 triple[3] = { b, c, items[i].index };
                g_array_append_vals (sel, triple, 3);
              }
          }
      }
  gint64 dims[2] = { sel->len / 3, 3 };
  GraftRtTensor *out = graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_INT64, 2, dims, error);
  if (out == NULL)
    return FALSE;
  memcpy (out->data, sel->data, sel->len * sizeof (gint64));
  return TRUE;
}

/* ---- Det ---- */

static gboolean
infer_det (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *x = graft_infer_input (ctx, 0);
  if (x->shape.rank < 2)
    {
      graft_infer_set_output_unknown (ctx, 0, x->dtype, -1);
      return TRUE;
    }
  GraftShape out = { x->shape.rank - 2, x->shape.dims };
  graft_infer_set_output (ctx, 0, x->dtype, &out);
  return TRUE;
}

static gboolean
kernel_det (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0];
  GraftRtTensor *y = graft_kernel_output (ctx, 0, error);
  if (y == NULL)
    return FALSE;
  gint64 n = x->dims[x->rank - 1];
  g_autofree double *m = g_new (double, MAX (n * n, 1));
  for (gint64 b = 0; b < y->numel; b++)
    {
      for (gint64 i = 0; i < n * n; i++)
        m[i] = graft_rt_tensor_get_f64 (x, b * n * n + i);
      double det = 1;
      for (gint64 c = 0; c < n; c++)
        {
          gint64 p = c;
          for (gint64 r = c + 1; r < n; r++)
            if (fabs (m[r * n + c]) > fabs (m[p * n + c]))
              p = r;
          if (m[p * n + c] == 0)
            {
              det = 0;
              break;
            }
          if (p != c)
            {
              for (gint64 k = 0; k < n; k++)
                {
                  double t = m[c * n + k];
                  m[c * n + k] = m[p * n + k];
                  m[p * n + k] = t;
                }
              det = -det;
            }
          det *= m[c * n + c];
          for (gint64 r = c + 1; r < n; r++)
            {
              double f = m[r * n + c] / m[c * n + c];
              for (gint64 k = c; k < n; k++)
                m[r * n + k] -= f * m[c * n + k];
            }
        }
      graft_rt_tensor_set_f64 (y, b, det);
    }
  return TRUE;
}

#define OP(name, since, infer, kernel, flags, input_names, output_names) { "onnx::" name, since, 0, infer, kernel, flags, input_names, output_names }

const GraftOpSchema graft_ops_sort[] = {
  OP ("TopK", 1, infer_topk, kernel_topk, 0, "X K", "Values Indices"),
  OP ("Unique", 11, NULL, kernel_unique, 0, "X", "Y indices inverse_indices counts"),
  OP ("ReverseSequence", 10, graft_infer_same_as_input, kernel_reverse_sequence, 0, "input sequence_lens", "Y"),
  OP ("NonMaxSuppression", 10, NULL, kernel_nms, 0, "boxes scores max_output_boxes_per_class iou_threshold score_threshold", "selected_indices"),
  OP ("Det", 11, infer_det, kernel_det, GRAFT_OP_HALF_AS_FLOAT, "X", "Y"),
  { NULL }
};
