/* aten:: shape and data-movement ops: view/reshape/flatten, permute,
 * transpose, (un)squeeze, select, slice, cat/stack, chunk/split/unbind,
 * expand, repeat, and the factories zeros/ones/full/tensor. Runtime
 * tensors are contiguous, so views are copies when the layout changes. */
#include <math.h>
#include <string.h>
#include "runtime/kernels/aten-args.h"

static GraftRtTensor *
arg_tensor (GraftAtenArg *args, guint k, GError **error)
{
  return graft_aten_need_tensor (&args[k], k, error);
}

/* out[i...] = in[offset + sum i_d * strides[d]] */
static void
strided_copy (const GraftRtTensor *in, gint64 offset, const gint64 *strides, GraftRtTensor *out)
{
  if (out->numel == 0)
    return;
  int r = out->rank;
  gint64 index[GRAFT_RT_MAX_RANK] = { 0 };
  gint64 inner = r ? out->dims[r - 1] : 1, inner_stride = r ? strides[r - 1] : 1;
  gsize es = graft_rt_dtype_size (in->dtype);
  gboolean blocks = inner_stride == 1 && in->dtype != GRAFT_DTYPE_STRING;
  for (gint64 o = 0; o < out->numel; o += inner)
    {
      gint64 src = offset;
      for (int d = 0; d < r - 1; d++)
        src += index[d] * strides[d];
      if (blocks)
        memcpy ((char *) out->data + o * es, (const char *) in->data + src * es, inner * es);
      else
        for (gint64 i = 0; i < inner; i++)
          graft_copy_element (out, o + i, in, src + i * inner_stride);
      if (r > 1)
        graft_index_next (index, out->dims, r - 1);
    }
}

static gboolean
set_view (GraftKernelContext *ctx, GraftRtTensor *x, int rank, const gint64 *dims, GError **error)
{
  GraftRtTensor *v = graft_rt_tensor_reshape (x, rank, dims, error);
  if (v == NULL)
    return FALSE;
  graft_kernel_set_output (ctx, 0, v);
  return TRUE;
}

/* The sizes argument of view / reshape / expand, or for their _as forms
 * (reshape_as, view_as, expand_as) the shape of the other tensor. */
static gboolean
sizes_or_other_shape (GraftKernelContext *ctx, GraftAtenArg *args, gint64 *dims, guint *n, GError **error)
{
  if (!g_str_has_suffix (ctx->node->op_type, "_as"))
    return graft_arg_ints (&args[1], dims, GRAFT_RT_MAX_RANK, n, 0, error);
  GraftRtTensor *other = arg_tensor (args, 1, error);
  if (other == NULL)
    return FALSE;
  memcpy (dims, other->dims, sizeof (gint64) * other->rank);
  *n = other->rank;
  return TRUE;
}

static gboolean
kernel_view (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[2];
  graft_aten_args (ctx, NULL, 2, args);
  GraftRtTensor *x = arg_tensor (args, 0, error);
  if (x == NULL)
    return FALSE;
  gint64 dims[GRAFT_RT_MAX_RANK];
  guint n;
  if (!sizes_or_other_shape (ctx, args, dims, &n, error))
    return FALSE;
  gint64 known = 1;
  int infer = -1;
  for (guint i = 0; i < n; i++)
    if (dims[i] == -1)
      {
        if (infer >= 0)
          return graft_kernel_fail (error, "only one dimension can be -1");
        infer = i;
      }
    else
      known *= dims[i];
  if (infer >= 0)
    {
      if (known == 0 || x->numel % known != 0)
        return graft_kernel_fail (error, "shape does not fit %" G_GINT64_FORMAT " elements", x->numel);
      dims[infer] = x->numel / known;
    }
  return set_view (ctx, x, n, dims, error);
}


static gboolean
permute (GraftKernelContext *ctx, GraftRtTensor *x, const int *perm, GError **error)
{
  gint64 dims[GRAFT_RT_MAX_RANK];
  gboolean identity = TRUE;
  for (int d = 0; d < x->rank; d++)
    {
      dims[d] = x->dims[perm[d]];
      identity &= perm[d] == d;
    }
  if (identity)
    {
      graft_kernel_set_output (ctx, 0, graft_rt_tensor_ref (x));
      return TRUE;
    }
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, x->dtype, x->rank, dims, error);
  return y && graft_transpose_into (x, y, perm);
}

static gboolean
kernel_permute (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[2];
  graft_aten_args (ctx, NULL, 2, args);
  GraftRtTensor *x = arg_tensor (args, 0, error);
  if (x == NULL)
    return FALSE;
  gint64 p[GRAFT_RT_MAX_RANK];
  guint n;
  if (!graft_arg_ints (&args[1], p, GRAFT_RT_MAX_RANK, &n, 0, error))
    return FALSE;
  if ((int) n != x->rank)
    return graft_kernel_fail (error, "permute() needs %d dimensions, got %u", x->rank, n);
  int perm[GRAFT_RT_MAX_RANK];
  for (guint i = 0; i < n; i++)
    {
      if (!graft_normalize_axis (&p[i], x->rank, error))
        return FALSE;
      perm[i] = p[i];
    }
  return permute (ctx, x, perm, error);
}

static gboolean
kernel_transpose (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[3];
  graft_aten_args (ctx, NULL, 3, args);
  GraftRtTensor *x = arg_tensor (args, 0, error);
  if (x == NULL)
    return FALSE;
  gint64 a = graft_arg_int (&args[1], 0), b = graft_arg_int (&args[2], 1);
  if (strcmp (ctx->node->op_type, "t") == 0)
    {
      a = 0;
      b = x->rank > 1 ? 1 : 0;
    }
  if (x->rank == 0)
    {
      graft_kernel_set_output (ctx, 0, graft_rt_tensor_ref (x));
      return TRUE;
    }
  if (!graft_normalize_axis (&a, x->rank, error) || !graft_normalize_axis (&b, x->rank, error))
    return FALSE;
  int perm[GRAFT_RT_MAX_RANK];
  for (int d = 0; d < x->rank; d++)
    perm[d] = d;
  perm[a] = b;
  perm[b] = a;
  return permute (ctx, x, perm, error);
}

static gboolean
kernel_unsqueeze (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[2];
  graft_aten_args (ctx, NULL, 2, args);
  GraftRtTensor *x = arg_tensor (args, 0, error);
  if (x == NULL)
    return FALSE;
  gint64 d = graft_arg_int (&args[1], 0);
  if (!graft_normalize_axis (&d, x->rank + 1, error))
    return FALSE;
  gint64 dims[GRAFT_RT_MAX_RANK];
  int n = 0;
  for (int i = 0; i <= x->rank; i++)
    dims[n++] = i == d ? 1 : x->dims[i < d ? i : i - 1];
  return set_view (ctx, x, n, dims, error);
}

static gboolean
kernel_squeeze (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[2];
  graft_aten_args (ctx, NULL, 2, args);
  GraftRtTensor *x = arg_tensor (args, 0, error);
  if (x == NULL)
    return FALSE;
  gint64 only = -1;
  if (!graft_arg_is_none (&args[1]) && x->rank > 0)
    {
      only = graft_arg_int (&args[1], 0);
      if (!graft_normalize_axis (&only, x->rank, error))
        return FALSE;
    }
  gint64 dims[GRAFT_RT_MAX_RANK];
  int n = 0;
  for (int i = 0; i < x->rank; i++)
    if (!(x->dims[i] == 1 && (only < 0 || only == i)))
      dims[n++] = x->dims[i];
  return set_view (ctx, x, n, dims, error);
}

/* The strides that read x broadcast to dims[0..n) (x's dims aligned to
 * the right; a -1 in dims takes x's size). */
static gboolean
broadcast_strides (const GraftRtTensor *x, guint n, gint64 *dims, gint64 *strides, GError **error)
{
  gint64 own[GRAFT_RT_MAX_RANK];
  graft_rt_strides (x->rank, x->dims, own);
  for (guint i = 0; i < n; i++)
    {
      int j = (int) i - ((int) n - x->rank);
      gint64 xd = j >= 0 ? x->dims[j] : 1;
      if (dims[i] == -1)
        dims[i] = xd;
      if (xd != dims[i] && xd != 1)
        return graft_kernel_fail (error, "cannot expand size %" G_GINT64_FORMAT " to %" G_GINT64_FORMAT, xd, dims[i]);
      strides[i] = (j < 0 || xd == 1) ? 0 : own[j];
    }
  return TRUE;
}

/* Where a view of x lies in x: the offset of its first element and its
 * dims and strides (in x's elements). select drops dim d; slice keeps it
 * with the elements start, start+step, … before end (clamped as Python). */
typedef struct {
  int rank;
  gint64 offset;
  gint64 dims[GRAFT_RT_MAX_RANK];
  gint64 strides[GRAFT_RT_MAX_RANK];
} ViewRegion;

static gboolean
select_region (const GraftRtTensor *x, gint64 d, gint64 i, ViewRegion *r, GError **error)
{
  if (!graft_normalize_axis (&d, x->rank, error))
    return FALSE;
  gint64 given = i;
  if (i < 0)
    i += x->dims[d];
  if (i < 0 || i >= x->dims[d])
    return graft_kernel_fail (error, "index %" G_GINT64_FORMAT " is out of range for dimension %" G_GINT64_FORMAT
                              " of size %" G_GINT64_FORMAT, given, d, x->dims[d]);
  gint64 strides[GRAFT_RT_MAX_RANK];
  graft_rt_strides (x->rank, x->dims, strides);
  r->rank = 0;
  r->offset = i * strides[d];
  for (int k = 0; k < x->rank; k++)
    if (k != d)
      {
        r->strides[r->rank] = strides[k];
        r->dims[r->rank++] = x->dims[k];
      }
  return TRUE;
}

static gboolean
slice_region (const GraftRtTensor *x, gint64 d, const GraftAtenArg *start, const GraftAtenArg *end, gint64 step,
              ViewRegion *r, GError **error)
{
  if (!graft_normalize_axis (&d, x->rank, error))
    return FALSE;
  if (step <= 0)
    return graft_kernel_fail (error, "slice step must be positive");
  gint64 size = x->dims[d];
  gint64 s = graft_arg_is_none (start) ? 0 : graft_arg_int (start, 0);
  gint64 e = graft_arg_is_none (end) ? size : graft_arg_int (end, size);
  s = s < 0 ? MAX (s + size, 0) : MIN (s, size);
  e = e < 0 ? MAX (e + size, 0) : MIN (e, size);
  graft_rt_strides (x->rank, x->dims, r->strides);
  memcpy (r->dims, x->dims, sizeof r->dims);
  r->rank = x->rank;
  r->dims[d] = e > s ? (e - s + step - 1) / step : 0;
  r->offset = s * r->strides[d];
  r->strides[d] *= step;
  return TRUE;
}

/* The region that ctx's node, an aten::select or aten::slice of a tensor,
 * takes from its input x. */
static gboolean
view_region (GraftKernelContext *ctx, GraftRtTensor *x, ViewRegion *r, GError **error)
{
  GraftAtenArg args[5];
  graft_aten_args (ctx, NULL, 5, args);
  if (strcmp (ctx->node->op_type, "select") == 0)
    return select_region (x, graft_arg_int (&args[1], 0), graft_arg_int (&args[2], 0), r, error);
  return slice_region (x, graft_arg_int (&args[1], 0), &args[2], &args[3], graft_arg_int (&args[4], 1), r, error);
}

static gboolean
kernel_select (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[1];
  graft_aten_args (ctx, NULL, 1, args);
  GraftRtTensor *x = arg_tensor (args, 0, error);
  ViewRegion r;
  if (x == NULL || !view_region (ctx, x, &r, error))
    return FALSE;
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, x->dtype, r.rank, r.dims, error);
  if (y == NULL)
    return FALSE;
  strided_copy (x, r.offset, r.strides, y);
  return TRUE;
}

static gboolean
kernel_slice (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[5];
  graft_aten_args (ctx, NULL, 5, args);
  GraftRtTensor *x = arg_tensor (args, 0, error);
  if (x == NULL)
    {
      /* list slicing */
      if (args[0].value && args[0].value->kind == GRAFT_RT_SEQUENCE)
        {
          g_clear_error (error);
          GraftRtTensor *list = args[0].value;
          gint64 len = list->items->len;
          gint64 st = graft_arg_is_none (&args[3]) ? 1 : graft_arg_int (&args[3], 1);
          if (st == 0)
            return graft_kernel_fail (error, "slice step cannot be zero");
          /* Python's bounds: a negative step (coords[::-1]) runs from the end */
          gint64 lo = st > 0 ? 0 : -1, hi = st > 0 ? len : len - 1;
          gint64 s = graft_arg_is_none (&args[1]) ? (st > 0 ? 0 : len - 1) : graft_arg_int (&args[1], 0);
          gint64 e = graft_arg_is_none (&args[2]) ? (st > 0 ? len : -1) : graft_arg_int (&args[2], len);
          if (!graft_arg_is_none (&args[1]))
            s = s < 0 ? MAX (s + len, lo) : MIN (s, hi);
          if (!graft_arg_is_none (&args[2]))
            e = e < 0 ? MAX (e + len, lo) : MIN (e, hi);
          GraftRtTensor *out = graft_rt_tensor_new_sequence (list->dtype);
          for (gint64 i = s; st > 0 ? i < e : i > e; i += st)
            g_ptr_array_add (out->items, graft_rt_tensor_ref (list->items->pdata[i]));
          graft_kernel_set_output (ctx, 0, out);
          return TRUE;
        }
      return FALSE;
    }
  ViewRegion r;
  if (!view_region (ctx, x, &r, error))
    return FALSE;
  if (r.offset == 0 && graft_dims_product (r.dims, 0, r.rank) == x->numel)
    {
      graft_kernel_set_output (ctx, 0, graft_rt_tensor_ref (x));
      return TRUE;
    }
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, x->dtype, r.rank, r.dims, error);
  if (y == NULL)
    return FALSE;
  strided_copy (x, r.offset, r.strides, y);
  return TRUE;
}

gboolean
graft_aten_is_view (GraftNode *node)
{
  return node->op == g_intern_static_string ("aten::slice") || node->op == g_intern_static_string ("aten::select");
}

GraftRtTensor *
graft_aten_view_write_back (GraftKernelContext *view, GraftRtTensor *src, GError **error)
{
  GraftAtenArg args[1];
  graft_aten_args (view, NULL, 1, args);
  GraftRtTensor *x = arg_tensor (args, 0, error);
  ViewRegion r;
  if (x == NULL || !view_region (view, x, &r, error))
    return NULL;
  if (src == NULL || src->kind != GRAFT_RT_TENSOR || src->numel != graft_dims_product (r.dims, 0, r.rank))
    {
      graft_kernel_fail (error, "the value written through the view does not have the view's size");
      return NULL;
    }
  g_autoptr(GraftRtTensor) values = graft_aten_as_dtype (src, x->dtype, error);
  GraftRtTensor *y = values ? graft_rt_tensor_copy (x, error) : NULL;
  if (y == NULL)
    return NULL;
  gint64 index[GRAFT_RT_MAX_RANK] = { 0 };
  for (gint64 i = 0; i < values->numel; i++)
    {
      gint64 at = r.offset;
      for (int d = 0; d < r.rank; d++)
        at += index[d] * r.strides[d];
      graft_copy_element (y, at, values, i);
      graft_index_next (index, r.dims, r.rank);
    }
  return y;
}

/* fill_(self, value): self's shape and dtype, every element value. The
 * engine writes the result back through the views self came from. */
static gboolean
kernel_fill_inplace (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[2];
  graft_aten_args (ctx, NULL, 2, args);
  GraftRtTensor *x = arg_tensor (args, 0, error);
  if (x == NULL)
    return FALSE;
  if (args[1].value && (args[1].value->kind != GRAFT_RT_TENSOR || args[1].value->numel != 1))
    return graft_kernel_fail (error, "fill_ needs a number or a one-element tensor");
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, x->dtype, x->rank, x->dims, error);
  if (y == NULL)
    return FALSE;
  double v = graft_arg_double (&args[1], 0);
  for (gint64 i = 0; i < y->numel; i++)
    graft_rt_tensor_set_f64 (y, i, v);
  return TRUE;
}

/* copy_(self, src, non_blocking) and copy(self, src, non_blocking): src
 * broadcast to self's shape in self's dtype. aten::copy of a list alone
 * (list.copy() in TorchScript) is a new list of the same items. */
static gboolean
kernel_copy (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[2];
  graft_aten_args (ctx, NULL, 2, args);
  if (args[0].value && args[0].value->kind == GRAFT_RT_SEQUENCE && graft_arg_is_none (&args[1]))
    {
      GraftRtTensor *list = args[0].value, *out = graft_rt_tensor_new_sequence (list->dtype);
      for (guint i = 0; i < list->items->len; i++)
        g_ptr_array_add (out->items, graft_rt_tensor_ref (list->items->pdata[i]));
      graft_kernel_set_output (ctx, 0, out);
      return TRUE;
    }
  GraftRtTensor *x = arg_tensor (args, 0, error);
  g_autoptr(GraftRtTensor) src = x ? graft_arg_value (&args[1], error) : NULL;
  if (src == NULL)
    return FALSE;
  if (src->kind != GRAFT_RT_TENSOR || src->rank > x->rank)
    return graft_kernel_fail (error, "%s: src does not broadcast to self's shape", ctx->node->op);
  gint64 dims[GRAFT_RT_MAX_RANK], strides[GRAFT_RT_MAX_RANK];
  memcpy (dims, x->dims, sizeof dims);
  if (!broadcast_strides (src, x->rank, dims, strides, error))
    return FALSE;
  g_autoptr(GraftRtTensor) values = graft_aten_as_dtype (src, x->dtype, error);
  if (values == NULL)
    return FALSE;
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, x->dtype, x->rank, x->dims, error);
  if (y == NULL)
    return FALSE;
  strided_copy (values, 0, strides, y);
  return TRUE;
}

/* The roll of a fixed-size dtype row by row of the last axis (Swin rolls
 * its [N, H, W, C] maps along H and W: rows of C values): an output row
 * is one input row, itself rotated by the last axis's shift, so two
 * copies. total[d] is the shift along axis d, in [0, sizes[d]). */
static void
roll_rows (const guint8 *x, guint8 *y, gsize size, int rank, const gint64 *sizes, const gint64 *strides,
           const gint64 *total)
{
  int last = rank - 1;
  gint64 width = sizes[last], shift = total[last], rows = 1;
  for (int d = 0; d < last; d++)
    rows *= sizes[d];
  gint64 index[GRAFT_RT_MAX_RANK] = { 0 };
  for (gint64 r = 0; r < rows; r++, y += width * size)
    {
      gint64 from = 0;
      for (int d = 0; d < last; d++)
        {
          gint64 i = index[d] - total[d];
          from += (i < 0 ? i + sizes[d] : i) * strides[d];
        }
      graft_index_next (index, sizes, last);
      /* out[j] = row[j - shift]: the row's tail first, then its head */
      const guint8 *row = x + from * size;
      memcpy (y, row + (width - shift) * size, shift * size);
      memcpy (y + shift * size, row, (width - shift) * size);
    }
}

/* roll(self, shifts, dims=[]): out[i] = self[i - shift] along each dim
 * (shifts on the same dim add up); without dims, over the flattened
 * tensor. */
static gboolean
kernel_roll (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[3];
  graft_aten_args (ctx, NULL, 3, args);
  GraftRtTensor *x = arg_tensor (args, 0, error);
  if (x == NULL)
    return FALSE;
  gint64 shifts[GRAFT_RT_MAX_RANK], dims[GRAFT_RT_MAX_RANK];
  guint n_shifts, n_dims = 0;
  if (!graft_arg_ints (&args[1], shifts, GRAFT_RT_MAX_RANK, &n_shifts, 0, error) ||
      (!graft_arg_is_none (&args[2]) && !graft_arg_ints (&args[2], dims, GRAFT_RT_MAX_RANK, &n_dims, 0, error)))
    return FALSE;
  gboolean flat = n_dims == 0;
  if (flat ? n_shifts != 1 : n_shifts != n_dims)
    return graft_kernel_fail (error, "roll: %u shifts for %u dims", n_shifts, n_dims);
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, x->dtype, x->rank, x->dims, error);
  if (y == NULL || y->numel == 0)
    return y != NULL;
  /* view the flattened roll as a roll of a rank-1 tensor */
  int rank = flat ? 1 : x->rank;
  gint64 sizes[GRAFT_RT_MAX_RANK], total[GRAFT_RT_MAX_RANK] = { 0 }, strides[GRAFT_RT_MAX_RANK];
  if (flat)
    sizes[0] = x->numel, total[0] = shifts[0];
  else
    {
      memcpy (sizes, x->dims, sizeof sizes);
      for (guint k = 0; k < n_dims; k++)
        {
          gint64 d = dims[k];
          if (!graft_normalize_axis (&d, x->rank, error))
            return FALSE;
          total[d] += shifts[k];
        }
    }
  graft_rt_strides (rank, sizes, strides);
  for (int d = 0; d < rank; d++)
    total[d] = ((total[d] % sizes[d]) + sizes[d]) % sizes[d];
  if (x->dtype != GRAFT_DTYPE_STRING)
    {
      roll_rows (x->data, y->data, graft_rt_dtype_size (x->dtype), rank, sizes, strides, total);
      return TRUE;
    }
  gint64 index[GRAFT_RT_MAX_RANK] = { 0 };
  for (gint64 o = 0; o < y->numel; o++)
    {
      gint64 from = 0;
      for (int d = 0; d < rank; d++)
        {
          gint64 i = index[d] - total[d];
          from += (i < 0 ? i + sizes[d] : i) * strides[d];
        }
      graft_copy_element (y, o, x, from);
      graft_index_next (index, sizes, rank);
    }
  return TRUE;
}

static GraftRtTensor *
tensor_list (GraftAtenArg *arg, GError **error)
{
  GraftRtTensor *list = arg->value;
  if (list == NULL || list->kind != GRAFT_RT_SEQUENCE || list->items->len == 0)
    {
      graft_kernel_fail (error, "expected a non-empty list of tensors");
      return NULL;
    }
  return list;
}

static int
category_rank (GraftDType t)
{
  return t == GRAFT_DTYPE_UNDEFINED ? -1 : t == GRAFT_DTYPE_BOOL ? 0 : graft_dtype_is_float (t) ? 2 : 1;
}

/* cat (stack: along a new axis) */
static gboolean
kernel_cat (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[2];
  graft_aten_args (ctx, NULL, 2, args);
  GraftRtTensor *list = tensor_list (&args[0], error);
  if (list == NULL)
    return FALSE;
  gboolean stack = strcmp (ctx->node->op_type, "stack") == 0;
  GraftRtTensor *first = NULL;
  g_autoptr(GPtrArray) items = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_rt_tensor_unref);
  GraftDType dtype = GRAFT_DTYPE_UNDEFINED;
  for (guint i = 0; i < list->items->len; i++)
    {
      GraftRtTensor *t = list->items->pdata[i];
      /* legacy: cat skips 1-D empty tensors */
      if (!stack && t->rank == 1 && t->numel == 0)
        continue;
      if (first == NULL || category_rank (t->dtype) > category_rank (dtype))
        dtype = t->dtype;
      if (first == NULL)
        first = t;
    }
  if (first == NULL)
    first = list->items->pdata[0];
  if (dtype == GRAFT_DTYPE_UNDEFINED)
    dtype = first->dtype;
  int rank = first->rank + (stack ? 1 : 0);
  gint64 d = graft_arg_int (&args[1], 0);
  if (!graft_normalize_axis (&d, MAX (rank, 1), error))
    return FALSE;
  gint64 dims[GRAFT_RT_MAX_RANK];
  for (int k = 0, j = 0; k < rank; k++)
    dims[k] = stack && k == d ? 1 : first->dims[j++];
  gint64 total = 0;
  for (guint i = 0; i < list->items->len; i++)
    {
      GraftRtTensor *t = list->items->pdata[i];
      if (!stack && t->rank == 1 && t->numel == 0 && first->rank != 1)
        continue;
      if (t->rank != first->rank)
        return graft_kernel_fail (error, "tensor %u has rank %d, expected %d", i, t->rank, first->rank);
      for (int k = 0, j = 0; k < rank; k++)
        {
          if (stack && k == d)
            continue;
          if (k != d && t->dims[j] != first->dims[j])
            return graft_kernel_fail (error, "tensor %u does not match the others outside dimension %" G_GINT64_FORMAT,
                                      i, d);
          j++;
        }
      total += stack ? 1 : t->dims[d];
      GraftRtTensor *c = graft_aten_as_dtype (t, dtype, error);
      if (c == NULL)
        return FALSE;
      g_ptr_array_add (items, c);
    }
  dims[d] = total;
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, dtype, rank, dims, error);
  if (y == NULL)
    return FALSE;
  gint64 outer = graft_dims_product (dims, 0, d), inner = graft_dims_product (dims, d + 1, rank);
  gint64 pos = 0;
  for (guint i = 0; i < items->len; i++)
    {
      GraftRtTensor *t = items->pdata[i];
      gint64 len = stack ? 1 : t->dims[d];
      for (gint64 o = 0; o < outer; o++)
        graft_copy_block (y, (o * total + pos) * inner, t, o * len * inner, len * inner);
      pos += len;
    }
  return TRUE;
}

/* A list result (takes list): as one list output, or item by item when
 * the node has one output per item (split_with_sizes traced to
 * ListUnpack, torch.export's meshgrid). */
static void
set_list_output (GraftKernelContext *ctx, GraftRtTensor *list)
{
  if (ctx->n_outputs == 1)
    {
      graft_kernel_set_output (ctx, 0, list);
      return;
    }
  for (guint i = 0; i < ctx->n_outputs && i < list->items->len; i++)
    graft_kernel_set_output (ctx, i, graft_rt_tensor_ref (list->items->pdata[i]));
  graft_rt_tensor_unref (list);
}

/* Pieces of x along dim with the given sizes, as a list. */
static gboolean
split_output (GraftKernelContext *ctx, GraftRtTensor *x, gint64 d, const gint64 *sizes, guint n, gboolean drop_dim,
              GError **error)
{
  GraftRtTensor *list = graft_rt_tensor_new_sequence (x->dtype);
  gint64 outer = graft_dims_product (x->dims, 0, d), inner = graft_dims_product (x->dims, d + 1, x->rank);
  gint64 pos = 0;
  for (guint i = 0; i < n; i++)
    {
      gint64 dims[GRAFT_RT_MAX_RANK];
      memcpy (dims, x->dims, sizeof dims);
      dims[d] = sizes[i];
      int rank = x->rank;
      if (drop_dim)
        {
          for (int k = d; k + 1 < rank; k++)
            dims[k] = dims[k + 1];
          rank--;
        }
      GraftRtTensor *t = graft_rt_tensor_new (x->dtype, rank, dims, error);
      if (t == NULL)
        {
          graft_rt_tensor_unref (list);
          return FALSE;
        }
      for (gint64 o = 0; o < outer; o++)
        graft_copy_block (t, o * sizes[i] * inner, x, (o * x->dims[d] + pos) * inner, sizes[i] * inner);
      pos += sizes[i];
      g_ptr_array_add (list->items, t);
    }
  set_list_output (ctx, list);
  return TRUE;
}

static gboolean
kernel_split (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[3];
  graft_aten_args (ctx, NULL, 3, args);
  GraftRtTensor *x = arg_tensor (args, 0, error);
  if (x == NULL)
    return FALSE;
  const char *op = ctx->node->op_type;
  gboolean unbind = strcmp (op, "unbind") == 0;
  gint64 d = graft_arg_int (&args[unbind ? 1 : 2], 0);
  if (!graft_normalize_axis (&d, x->rank, error))
    return FALSE;
  gint64 size = x->dims[d];
  g_autofree gint64 *sizes = g_new0 (gint64, MAX (size, 1) + 1);
  guint n = 0;
  if (unbind)
    {
      for (gint64 i = 0; i < size; i++)
        sizes[n++] = 1;
      return split_output (ctx, x, d, sizes, n, TRUE, error);
    }
  if (strcmp (op, "chunk") == 0)
    {
      gint64 chunks = graft_arg_int (&args[1], 1);
      if (chunks <= 0)
        return graft_kernel_fail (error, "chunk() needs a positive number of chunks");
      gint64 each = (size + chunks - 1) / chunks;
      for (gint64 p = 0; p < size || (size == 0 && n == 0); p += MAX (each, 1))
        {
          sizes[n++] = MIN (each, size - p);
          if (size == 0)
            break;
        }
      return split_output (ctx, x, d, sizes, n, FALSE, error);
    }
  GraftRtTensor *sv = graft_arg_tensor (&args[1]);
  gboolean list_arg = (args[1].attr && args[1].attr->type == GRAFT_ATTR_INTS) ||
                      (args[1].value && args[1].value->kind == GRAFT_RT_SEQUENCE) || (sv && sv->rank == 1);
  if (list_arg)
    {
      gint64 tmp[256];
      guint m;
      if (!graft_arg_ints (&args[1], tmp, 256, &m, 0, error))
        return FALSE;
      gint64 sum = 0;
      for (guint i = 0; i < m; i++)
        sum += tmp[i];
      if (sum != size || m > (guint) size + 1)
        return graft_kernel_fail (error, "split sizes add up to %" G_GINT64_FORMAT ", not %" G_GINT64_FORMAT, sum, size);
      memcpy (sizes, tmp, m * sizeof (gint64));
      n = m;
    }
  else
    {
      gint64 each = graft_arg_int (&args[1], 1);
      if (each <= 0)
        return graft_kernel_fail (error, "split size must be positive");
      for (gint64 p = 0; p < size; p += each)
        sizes[n++] = MIN (each, size - p);
    }
  return split_output (ctx, x, d, sizes, n, FALSE, error);
}

static gboolean
kernel_expand (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[2];
  graft_aten_args (ctx, NULL, 2, args);
  GraftRtTensor *x = arg_tensor (args, 0, error);
  if (x == NULL)
    return FALSE;
  gint64 dims[GRAFT_RT_MAX_RANK];
  guint n;
  if (!sizes_or_other_shape (ctx, args, dims, &n, error))
    return FALSE;
  if ((int) n < x->rank)
    return graft_kernel_fail (error, "expand() needs at least %d sizes", x->rank);
  gint64 strides[GRAFT_RT_MAX_RANK];
  if (!broadcast_strides (x, n, dims, strides, error))
    return FALSE;
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, x->dtype, n, dims, error);
  if (y == NULL)
    return FALSE;
  strided_copy (x, 0, strides, y);
  return TRUE;
}

static gboolean
kernel_repeat (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[2];
  graft_aten_args (ctx, NULL, 2, args);
  GraftRtTensor *x = arg_tensor (args, 0, error);
  if (x == NULL)
    return FALSE;
  gint64 reps[GRAFT_RT_MAX_RANK], dims[GRAFT_RT_MAX_RANK], xd[GRAFT_RT_MAX_RANK];
  guint n;
  if (!graft_arg_ints (&args[1], reps, GRAFT_RT_MAX_RANK, &n, 0, error))
    return FALSE;
  if ((int) n < x->rank)
    return graft_kernel_fail (error, "repeat() needs at least %d counts", x->rank);
  for (guint i = 0; i < n; i++)
    {
      int j = (int) i - ((int) n - x->rank);
      xd[i] = j >= 0 ? x->dims[j] : 1;
      dims[i] = xd[i] * reps[i];
    }
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, x->dtype, n, dims, error);
  if (y == NULL)
    return FALSE;
  gint64 xs[GRAFT_RT_MAX_RANK], index[GRAFT_RT_MAX_RANK] = { 0 };
  graft_rt_strides (n, xd, xs);
  for (gint64 o = 0; o < y->numel; o++)
    {
      gint64 src = 0;
      for (guint d = 0; d < n; d++)
        src += (index[d] % xd[d]) * xs[d];
      graft_copy_element (y, o, x, src);
      graft_index_next (index, dims, n);
    }
  return TRUE;
}

/* pad(input, pad, mode="constant", value=None) and constant_pad_nd(input,
 * pad, value=0): pad holds (before, after) pairs from the last dimension
 * backwards; negative entries crop. */
static gboolean
kernel_pad (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[4];
  graft_aten_args (ctx, NULL, 4, args);
  GraftRtTensor *x = arg_tensor (args, 0, error);
  if (x == NULL)
    return FALSE;
  gint64 pad[2 * GRAFT_RT_MAX_RANK];
  guint n;
  if (!graft_arg_ints (&args[1], pad, 2 * GRAFT_RT_MAX_RANK, &n, 0, error))
    return FALSE;
  if (n % 2 != 0 || (int) n / 2 > x->rank)
    return graft_kernel_fail (error, "pad needs (before, after) pairs for at most %d dimensions", x->rank);
  gboolean constant_pad_nd = strcmp (ctx->node->op_type, "constant_pad_nd") == 0;
  GraftAttribute *mode = constant_pad_nd ? NULL : args[2].attr;
  if (mode && mode->type == GRAFT_ATTR_STRING)
    {
      g_autofree char *m = graft_attribute_dup_string (mode);
      if (m && strcmp (m, "constant") != 0)
        return graft_kernel_unsupported (error, "pad mode '%s'", m);
    }
  gint64 before[GRAFT_RT_MAX_RANK] = { 0 }, dims[GRAFT_RT_MAX_RANK];
  for (int d = 0; d < x->rank; d++)
    {
      int k = x->rank - 1 - d;
      gint64 b = 2 * (guint) k < n ? pad[2 * k] : 0, a = 2 * (guint) k + 1 < n ? pad[2 * k + 1] : 0;
      before[d] = b;
      dims[d] = x->dims[d] + b + a;
      if (dims[d] < 0)
        return graft_kernel_fail (error, "padding makes dimension %d negative", d);
    }
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, x->dtype, x->rank, dims, error);
  if (y == NULL)
    return FALSE;
  GraftAtenArg *value_arg = &args[constant_pad_nd ? 2 : 3];
  double value = graft_arg_is_none (value_arg) ? 0 : graft_arg_double (value_arg, 0);
  if (y->numel == 0)
    return TRUE;
  if (x->rank > 0 && x->numel > 0 && x->dtype != GRAFT_DTYPE_STRING)
    {
      /* the constant in y's dtype, as its bytes: rows copied whole */
      guint8 fill[16];
      graft_rt_tensor_set_f64 (y, 0, value);
      memcpy (fill, y->data, graft_rt_dtype_size (y->dtype));
      graft_pad_rows (x, y, before, GRAFT_PAD_CONSTANT, fill);
      return TRUE;
    }
  gint64 strides[GRAFT_RT_MAX_RANK], index[GRAFT_RT_MAX_RANK] = { 0 };
  graft_rt_strides (x->rank, x->dims, strides);
  for (gint64 o = 0; o < y->numel; o++)
    {
      gint64 src = 0;
      gboolean inside = TRUE;
      for (int d = 0; d < x->rank && inside; d++)
        {
          gint64 i = index[d] - before[d];
          inside = i >= 0 && i < x->dims[d];
          src += i * strides[d];
        }
      if (inside)
        graft_copy_element (y, o, x, src);
      else
        graft_rt_tensor_set_f64 (y, o, value);
      graft_index_next (index, dims, x->rank);
    }
  return TRUE;
}

/* ---- factories ---- */

static GraftDType
factory_dtype (GraftKernelContext *ctx, GraftAtenArg *dtype_arg, GraftDType fallback)
{
  GraftAttribute *a = graft_node_get_attribute (ctx->node, "dtype");
  if (a && a->type == GRAFT_ATTR_INT)
    return graft_dtype_from_torch_scalar_type (a->i);
  if (dtype_arg && !graft_arg_is_none (dtype_arg))
    {
      GraftDType t = graft_dtype_from_torch_scalar_type (graft_arg_int (dtype_arg, 6));
      if (t != GRAFT_DTYPE_UNDEFINED)
        return t;
    }
  return fallback;
}

/* zeros/ones/full(size, [value,] dtype, …), their _like(self, …) and
 * new_(self, size, …) forms: the new_ forms take self's dtype by default */
static gboolean
kernel_fill (GraftKernelContext *ctx, GError **error)
{
  const char *op = ctx->node->op_type;
  gboolean new_form = g_str_has_prefix (op, "new_");
  if (new_form)
    op += strlen ("new_");
  gboolean like = g_str_has_suffix (op, "_like"), full = g_str_has_prefix (op, "full");
  GraftAtenArg all_args[5];
  graft_aten_args (ctx, NULL, 5, all_args);
  GraftAtenArg *args = new_form ? all_args + 1 : all_args;
  gint64 dims[GRAFT_RT_MAX_RANK];
  guint n;
  GraftDType dtype = GRAFT_DTYPE_FLOAT32;
  if (new_form)
    {
      GraftRtTensor *self = arg_tensor (all_args, 0, error);
      if (self == NULL)
        return FALSE;
      dtype = self->dtype;
    }
  if (like)
    {
      GraftRtTensor *x = arg_tensor (args, 0, error);
      if (x == NULL)
        return FALSE;
      n = x->rank;
      memcpy (dims, x->dims, sizeof dims);
      dtype = x->dtype;
    }
  else if (!graft_arg_ints (&args[0], dims, GRAFT_RT_MAX_RANK, &n, 0, error))
    return FALSE;
  GraftAtenArg *value = full ? &args[1] : NULL;
  if (full && value->attr && value->attr->type != GRAFT_ATTR_FLOAT && !like && !new_form)
    dtype = GRAFT_DTYPE_INT64;
  dtype = factory_dtype (ctx, &args[full ? 2 : 1], dtype);
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, dtype, n, dims, error);
  if (y == NULL)
    return FALSE;
  double v = full ? graft_arg_double (value, 0) : g_str_has_prefix (op, "ones") ? 1 : 0;
  if (v == 0 && dtype != GRAFT_DTYPE_STRING)
    memset (y->data, 0, y->nbytes);
  else
    for (gint64 i = 0; i < y->numel; i++)
      graft_rt_tensor_set_f64 (y, i, v);
  return TRUE;
}

static void
flatten_values (GraftRtTensor *v, GArray *out, gboolean *is_float, int *rank, gint64 *dims, int depth)
{
  if (v->kind == GRAFT_RT_SEQUENCE)
    {
      if (depth < GRAFT_RT_MAX_RANK)
        dims[depth] = v->items->len;
      *rank = MAX (*rank, depth + 1);
      for (guint i = 0; i < v->items->len; i++)
        flatten_values (v->items->pdata[i], out, is_float, rank, dims, depth + 1);
      return;
    }
  for (gint64 i = 0; i < v->numel; i++)
    {
      double x = graft_rt_tensor_get_f64 (v, i);
      g_array_append_val (out, x);
    }
  *is_float |= graft_dtype_is_float (v->dtype);
}

/* torch.tensor(data, dtype=None, ...) */
static gboolean
kernel_tensor (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[2];
  graft_aten_args (ctx, NULL, 2, args);
  g_autoptr(GraftRtTensor) data = graft_arg_value (&args[0], error);
  if (data == NULL)
    return FALSE;
  g_autoptr(GArray) values = g_array_new (FALSE, FALSE, sizeof (double));
  gboolean is_float = FALSE;
  int rank = 0;
  gint64 dims[GRAFT_RT_MAX_RANK] = { 0 };
  flatten_values (data, values, &is_float, &rank, dims, 0);
  if (data->kind == GRAFT_RT_TENSOR)
    {
      rank = data->rank;
      memcpy (dims, data->dims, sizeof dims);
    }
  GraftDType dtype = factory_dtype (ctx, &args[1], is_float ? GRAFT_DTYPE_FLOAT32 : data->dtype == GRAFT_DTYPE_BOOL
                                                   ? GRAFT_DTYPE_BOOL : GRAFT_DTYPE_INT64);
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, dtype, rank, dims, error);
  if (y == NULL)
    return FALSE;
  if ((guint) y->numel != values->len)
    return graft_kernel_fail (error, "the nested lists are not rectangular");
  for (guint i = 0; i < values->len; i++)
    graft_rt_tensor_set_f64 (y, i, g_array_index (values, double, i));
  return TRUE;
}

/* arange(end, [dtype, layout, device, pin_memory]) or
 * arange(start, end, [step], ...): the dtype options come last. */
static gboolean
kernel_arange (GraftKernelContext *ctx, GError **error)
{
  guint total = ctx->n_inputs;
  for (guint i = 0; i < ctx->node->attributes->len; i++)
    if (g_str_has_prefix (((GraftAttribute *) ctx->node->attributes->pdata[i])->name, "arg"))
      total++;
  gboolean keyword_options = graft_node_has_attr (ctx->node, "dtype");
  /* device=device given at run time is an input, not a bound (EdgeNeXt's
   * positional encoding) */
  static const char *const options[] = { "dtype", "layout", "device", "pin_memory" };
  for (guint i = 0; keyword_options && i < ctx->node->inputs->len && i < ctx->n_inputs; i++)
    {
      const char *name = graft_node_get_input_argument_name (ctx->node, i);
      for (guint k = 0; name != NULL && k < G_N_ELEMENTS (options); k++)
        if (strcmp (name, options[k]) == 0)
          total--;
    }
  guint n_numbers = keyword_options ? total : total >= 4 ? total - 4 : total;
  if (n_numbers < 1 || n_numbers > 3)
    return graft_kernel_fail (error, "arange() takes 1 to 3 numbers, got %u", n_numbers);
  GraftAtenArg args[7];
  graft_aten_args (ctx, NULL, MIN (total, 7), args);
  double v[3] = { 0, 0, 1 };
  gboolean is_float = FALSE;
  for (guint k = 0; k < n_numbers; k++)
    {
      GraftAtenArg *a = &args[k];
      is_float |= (a->attr && a->attr->type == GRAFT_ATTR_FLOAT) ||
                  (a->value && a->value->kind == GRAFT_RT_TENSOR && graft_dtype_is_float (a->value->dtype));
    }
  if (n_numbers == 1)
    v[1] = graft_arg_double (&args[0], 0);
  else
    for (guint k = 0; k < n_numbers; k++)
      v[k] = graft_arg_double (&args[k], v[k]);
  if (v[2] == 0 || !isfinite (v[0]) || !isfinite (v[1]) || !isfinite (v[2]))
    return graft_kernel_fail (error, "arange() needs finite bounds and a non-zero step");
  double count = ceil ((v[1] - v[0]) / v[2]);
  gint64 n = count > 0 ? (gint64) count : 0;
  GraftAtenArg *dtype_arg = !keyword_options && total > n_numbers ? &args[n_numbers] : NULL;
  GraftDType dtype = factory_dtype (ctx, dtype_arg, is_float ? GRAFT_DTYPE_FLOAT32 : GRAFT_DTYPE_INT64);
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, dtype, 1, &n, error);
  if (y == NULL)
    return FALSE;
  for (gint64 i = 0; i < n; i++)
    graft_rt_tensor_set_f64 (y, i, v[0] + i * v[2]);
  return TRUE;
}

/* linspace(start, end, steps, dtype, layout, device, pin_memory): steps
 * values from start to end, computed as PyTorch does (from start for the
 * first half, back from end for the rest) */
static gboolean
kernel_linspace (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[4];
  graft_aten_args (ctx, NULL, 4, args);
  double start = graft_arg_double (&args[0], 0), end = graft_arg_double (&args[1], 0);
  gint64 steps = graft_arg_int (&args[2], -1);
  if (steps < 0 || !isfinite (start) || !isfinite (end))
    return graft_kernel_fail (error, "linspace() needs finite bounds and a number of steps");
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, factory_dtype (ctx, &args[3], GRAFT_DTYPE_FLOAT32), 1, &steps,
                                                error);
  if (y == NULL)
    return FALSE;
  if (y->dtype == GRAFT_DTYPE_FLOAT32)
    {
      /* float32 arithmetic, as PyTorch's CPU kernel */
      float a = (float) start, b = (float) end, step = steps > 1 ? (b - a) / (float) (steps - 1) : 0;
      for (gint64 i = 0; i < steps; i++)
        graft_f32 (y)[i] = i < steps / 2 ? a + step * (float) i : b - step * (float) (steps - i - 1);
      return TRUE;
    }
  double step = steps > 1 ? (end - start) / (double) (steps - 1) : 0;
  for (gint64 i = 0; i < steps; i++)
    graft_rt_tensor_set_f64 (y, i, i < steps / 2 ? start + step * i : end - step * (steps - i - 1));
  return TRUE;
}

/* unflatten(self, dim, sizes): dim split into sizes (one may be -1) */
static gboolean
kernel_unflatten (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[3];
  graft_aten_args (ctx, NULL, 3, args);
  GraftRtTensor *x = arg_tensor (args, 0, error);
  if (x == NULL)
    return FALSE;
  gint64 axis = graft_arg_int (&args[1], 0), sizes[GRAFT_RT_MAX_RANK], dims[GRAFT_RT_MAX_RANK];
  guint n;
  if (!graft_normalize_axis (&axis, x->rank, error) ||
      !graft_arg_ints (&args[2], sizes, GRAFT_RT_MAX_RANK, &n, 0, error))
    return FALSE;
  if (n == 0 || x->rank - 1 + (int) n > GRAFT_RT_MAX_RANK)
    return graft_kernel_fail (error, "unflatten needs 1 to %d sizes", GRAFT_RT_MAX_RANK - x->rank + 1);
  gint64 known = 1;
  int infer = -1;
  for (guint i = 0; i < n; i++)
    if (sizes[i] == -1 && infer < 0)
      infer = (int) i;
    else if (sizes[i] < 0)
      return graft_kernel_fail (error, "unflatten sizes must be positive, or one -1");
    else
      known *= sizes[i];
  if (infer >= 0)
    sizes[infer] = known ? x->dims[axis] / known : 0;
  int rank = 0;
  for (int d = 0; d < x->rank; d++)
    if (d == axis)
      for (guint i = 0; i < n; i++)
        dims[rank++] = sizes[i];
    else
      dims[rank++] = x->dims[d];
  GraftRtTensor *view = graft_rt_tensor_reshape (x, rank, dims, error);
  if (view == NULL)
    return FALSE;
  graft_kernel_set_output (ctx, 0, view);
  return TRUE;
}

/* triu / tril(self, diagonal=0) over the last two dimensions */
static gboolean
kernel_triangle (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[2];
  graft_aten_args (ctx, NULL, 2, args);
  GraftRtTensor *x = arg_tensor (args, 0, error);
  if (x == NULL)
    return FALSE;
  if (x->rank < 2)
    return graft_kernel_fail (error, "%s needs at least 2 dimensions", ctx->node->op);
  gboolean upper = strcmp (ctx->node->op_type, "triu") == 0;
  gint64 diagonal = graft_arg_int (&args[1], 0), rows = x->dims[x->rank - 2], cols = x->dims[x->rank - 1];
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, x->dtype, x->rank, x->dims, error);
  if (y == NULL)
    return FALSE;
  gsize item = graft_dtype_get_size (x->dtype);
  for (gint64 e = 0; e < x->numel; e++)
    {
      gint64 j = e % cols, i = (e / cols) % rows;
      gboolean keep = upper ? j - i >= diagonal : j - i <= diagonal;
      if (keep)
        memcpy ((guint8 *) y->data + e * item, (const guint8 *) x->data + e * item, item);
      else
        memset ((guint8 *) y->data + e * item, 0, item);
    }
  return TRUE;
}

/* Splits a tensor's dimensions around axis: outer × size × inner. */
static void
around_axis (const GraftRtTensor *x, gint64 axis, gint64 *outer, gint64 *inner)
{
  *outer = graft_dims_product (x->dims, 0, (int) axis);
  *inner = graft_dims_product (x->dims, (int) axis + 1, x->rank);
}

/* cumsum(self, dim, dtype=None): integers and bools sum in int64 */
static gboolean
kernel_cumsum (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[3];
  graft_aten_args (ctx, NULL, 3, args);
  GraftRtTensor *x = arg_tensor (args, 0, error);
  if (x == NULL)
    return FALSE;
  gint64 axis = graft_arg_int (&args[1], 0);
  if (!graft_normalize_axis (&axis, MAX (x->rank, 1), error))
    return FALSE;
  GraftDType dtype = graft_dtype_is_float (x->dtype) ? x->dtype : GRAFT_DTYPE_INT64;
  dtype = factory_dtype (ctx, &args[2], dtype);
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, dtype, x->rank, x->dims, error);
  if (y == NULL)
    return FALSE;
  gint64 outer = 1, inner = 1, size = x->rank ? x->dims[axis] : 1;
  if (x->rank)
    around_axis (x, axis, &outer, &inner);
  gboolean is_float = graft_dtype_is_float (dtype);
  for (gint64 o = 0; o < outer; o++)
    for (gint64 in = 0; in < inner; in++)
      {
        double sum_f = 0;
        gint64 sum_i = 0;
        for (gint64 k = 0; k < size; k++)
          {
            gint64 e = (o * size + k) * inner + in;
            if (is_float)
              graft_rt_tensor_set_f64 (y, e, sum_f += graft_rt_tensor_get_f64 (x, e));
            else
              graft_rt_tensor_set_i64 (y, e, sum_i += graft_rt_tensor_get_i64 (x, e));
          }
      }
  return TRUE;
}

/* diff(self, n=1, dim=-1, prepend=None, append=None): first differences
 * along dim of prepend ++ self ++ append, n times */
static gboolean
kernel_diff (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[5];
  graft_aten_args (ctx, NULL, 5, args);
  GraftRtTensor *x = arg_tensor (args, 0, error);
  if (x == NULL)
    return FALSE;
  gint64 times = graft_arg_int (&args[1], 1), axis = graft_arg_int (&args[2], -1);
  if (x->rank == 0 || !graft_normalize_axis (&axis, x->rank, error))
    return graft_kernel_fail (error, "diff needs a tensor with dimension %" G_GINT64_FORMAT, axis);
  if (times < 0)
    return graft_kernel_fail (error, "diff's order must not be negative");
  GraftRtTensor *parts[3] = { graft_arg_tensor (&args[3]), x, graft_arg_tensor (&args[4]) };
  gint64 dims[GRAFT_RT_MAX_RANK];
  memcpy (dims, x->dims, sizeof (gint64) * x->rank);
  dims[axis] = 0;
  for (int p = 0; p < 3; p++)
    {
      if (parts[p] == NULL)
        continue;
      if (parts[p]->rank != x->rank || parts[p]->dtype != x->dtype)
        return graft_kernel_fail (error, "diff's prepend and append must match the input's rank and dtype");
      for (int d = 0; d < x->rank; d++)
        if (d != axis && parts[p]->dims[d] != x->dims[d])
          return graft_kernel_fail (error, "diff's prepend and append must match the input outside dim");
      dims[axis] += parts[p]->dims[axis];
    }
  gint64 outer, inner, length = dims[axis];
  around_axis (x, axis, &outer, &inner);
  g_autofree double *values = g_new (double, MAX (outer * length * inner, 1));
  for (gint64 o = 0; o < outer; o++)
    for (gint64 k = 0, at = 0; k < 3; k++)
      {
        if (parts[k] == NULL)
          continue;
        gint64 n = parts[k]->dims[axis];
        for (gint64 j = 0; j < n; j++, at++)
          for (gint64 in = 0; in < inner; in++)
            values[(o * length + at) * inner + in] = graft_rt_tensor_get_f64 (parts[k], (o * n + j) * inner + in);
      }
  for (gint64 t = 0; t < times && length > 0; t++, length--)
    for (gint64 o = 0; o < outer; o++)
      for (gint64 j = 0; j + 1 < length; j++)
        for (gint64 in = 0; in < inner; in++)
          {
            /* compact in place: row length-1 of every outer block */
            double next = values[(o * length + j + 1) * inner + in], here = values[(o * length + j) * inner + in];
            values[(o * (length - 1) + j) * inner + in] = x->dtype == GRAFT_DTYPE_BOOL ? (next != here) : next - here;
          }
  dims[axis] = length;
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, x->dtype, x->rank, dims, error);
  if (y == NULL)
    return FALSE;
  for (gint64 e = 0; e < y->numel; e++)
    graft_rt_tensor_set_f64 (y, e, values[e]);
  return TRUE;
}

/* gather(self, dim, index, sparse_grad=False) */
static gboolean
kernel_gather (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[3];
  graft_aten_args (ctx, NULL, 3, args);
  GraftRtTensor *x = arg_tensor (args, 0, error);
  GraftRtTensor *index = x ? arg_tensor (args, 2, error) : NULL;
  if (index == NULL)
    return FALSE;
  gint64 axis = graft_arg_int (&args[1], 0);
  if (!graft_normalize_axis (&axis, x->rank, error))
    return FALSE;
  if (index->rank != x->rank || graft_dtype_is_float (index->dtype))
    return graft_kernel_fail (error, "gather's index must be an integer tensor of the input's rank");
  for (int d = 0; d < x->rank; d++)
    if (d != axis && index->dims[d] > x->dims[d])
      return graft_kernel_fail (error, "gather's index is larger than the input in dimension %d", d);
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, x->dtype, index->rank, index->dims, error);
  if (y == NULL)
    return FALSE;
  gsize item = graft_dtype_get_size (x->dtype);
  for (gint64 e = 0; e < index->numel; e++)
    {
      gint64 rest = e, source = 0, stride = 1;
      for (int d = x->rank - 1; d >= 0; d--)
        {
          gint64 at = rest % index->dims[d];
          rest /= index->dims[d];
          if (d == axis)
            {
              at = graft_rt_tensor_get_i64 (index, e);
              if (at < -x->dims[d] || at >= x->dims[d])
                return graft_kernel_fail (error, "gather index %" G_GINT64_FORMAT " is out of range for size %"
                                          G_GINT64_FORMAT, at, x->dims[d]);
              at += at < 0 ? x->dims[d] : 0;
            }
          source += at * stride;
          stride *= x->dims[d];
        }
      memcpy ((guint8 *) y->data + e * item, (const guint8 *) x->data + source * item, item);
    }
  return TRUE;
}

/* index(self, indices: List[Optional[Tensor]]): advanced indexing by
 * integer tensors (broadcast together), None keeping a dimension whole
 * (x[:, idx]), as PyTorch: the broadcast index dims take the place of the
 * indexed dims when those are adjacent, else they come first; the other
 * dims follow in order. */
static gboolean
kernel_index (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[2];
  graft_aten_args (ctx, NULL, 2, args);
  GraftRtTensor *x = arg_tensor (args, 0, error);
  if (x == NULL)
    return FALSE;
  GraftRtTensor *list = args[1].value;
  if (list == NULL || list->kind != GRAFT_RT_SEQUENCE || list->items->len == 0 || (int) list->items->len > x->rank)
    return graft_kernel_fail (error, "index needs 1 to %d indices", x->rank);
  int k = list->items->len, first = -1, last = -1, n_indexed = 0;
  GraftRtTensor *indices[GRAFT_RT_MAX_RANK] = { NULL };
  int rank = 0;
  gint64 dims[GRAFT_RT_MAX_RANK];
  for (int i = 0; i < k; i++)
    {
      GraftRtTensor *t = list->items->pdata[i];
      if (t == NULL || t->kind == GRAFT_RT_NONE)
        continue;
      if (t->kind != GRAFT_RT_TENSOR)
        return graft_kernel_fail (error, "index %d is neither a tensor nor None", i);
      if (graft_dtype_is_float (t->dtype) || t->dtype == GRAFT_DTYPE_BOOL)
        return graft_kernel_unsupported (error, "index by %s tensors", graft_dtype_to_string (t->dtype));
      indices[i] = t;
      first = first < 0 ? i : first;
      last = i;
      n_indexed++;
      /* broadcast the index shapes */
      int r = MAX (rank, t->rank);
      gint64 merged[GRAFT_RT_MAX_RANK];
      for (int d = 0; d < r; d++)
        {
          int a = d - (r - rank), b = d - (r - t->rank);
          gint64 da = a >= 0 ? dims[a] : 1, db = b >= 0 ? t->dims[b] : 1;
          if (da != db && da != 1 && db != 1)
            return graft_kernel_fail (error, "index tensors do not broadcast together");
          merged[d] = da == 1 ? db : da;
        }
      rank = r;
      memcpy (dims, merged, sizeof (gint64) * r);
    }
  if (n_indexed == 0)
    {
      graft_kernel_set_output (ctx, 0, graft_rt_tensor_ref (x));
      return TRUE;
    }
  gboolean adjacent = last - first + 1 == n_indexed;
  /* out = [lead dims] + index dims + [whole dims up to last] + x's dims after last (the inner block) */
  int lead = adjacent ? first : 0;
  int out_rank = 0, whole[GRAFT_RT_MAX_RANK], n_whole = 0;
  gint64 out_dims[GRAFT_RT_MAX_RANK];
  for (int d = 0; d <= last; d++)
    if (indices[d] == NULL && (!adjacent || d > last))
      whole[n_whole++] = d;
  if (lead + rank + n_whole + (x->rank - last - 1) > GRAFT_RT_MAX_RANK)
    return graft_kernel_fail (error, "the indexed result has too many dimensions");
  for (int d = 0; d < lead; d++)
    out_dims[out_rank++] = x->dims[d];
  memcpy (out_dims + out_rank, dims, sizeof (gint64) * rank);
  out_rank += rank;
  for (int w = 0; w < n_whole; w++)
    out_dims[out_rank++] = x->dims[whole[w]];
  int outer_rank = out_rank;
  for (int d = last + 1; d < x->rank; d++)
    out_dims[out_rank++] = x->dims[d];
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, x->dtype, out_rank, out_dims, error);
  if (y == NULL || y->numel == 0)
    return y != NULL;
  gint64 strides[GRAFT_RT_MAX_RANK];
  graft_rt_strides (x->rank, x->dims, strides);
  gint64 inner = graft_dims_product (x->dims, last + 1, x->rank), outer = y->numel / MAX (inner, 1);
  gsize item = graft_rt_dtype_size (x->dtype);
  gint64 at[GRAFT_RT_MAX_RANK] = { 0 };
  for (gint64 o = 0; o < outer; o++)
    {
      gint64 from = 0;
      for (int d = 0; d < lead; d++)
        from += at[d] * strides[d];
      for (int w = 0; w < n_whole; w++)
        from += at[lead + rank + w] * strides[whole[w]];
      for (int i = first; i <= last; i++)
        {
          const GraftRtTensor *t = indices[i];
          if (t == NULL)
            continue;
          /* the element of index i at the broadcast position at[lead..lead+rank) */
          gint64 offset = 0, stride = 1;
          for (int d = rank - 1, td = t->rank - 1; td >= 0; d--, td--)
            {
              offset += (t->dims[td] == 1 ? 0 : at[lead + d]) * stride;
              stride *= t->dims[td];
            }
          gint64 v = graft_rt_tensor_get_i64 (t, offset);
          if (v < -x->dims[i] || v >= x->dims[i])
            return graft_kernel_fail (error, "index %" G_GINT64_FORMAT " is out of range for dimension %d of size %"
                                      G_GINT64_FORMAT, v, i, x->dims[i]);
          from += (v < 0 ? v + x->dims[i] : v) * strides[i];
        }
      if (x->dtype == GRAFT_DTYPE_STRING)
        for (gint64 e = 0; e < inner; e++)
          graft_copy_element (y, o * inner + e, x, from + e);
      else
        memcpy ((guint8 *) y->data + o * inner * item, (const guint8 *) x->data + from * item, inner * item);
      graft_index_next (at, out_dims, outer_rank);
    }
  return TRUE;
}

/* meshgrid(tensors, indexing="ij"): N 1-D (or 0-d) tensors → N tensors of
 * their sizes' grid; "xy" swaps the first two axes of the grid */
static gboolean
kernel_meshgrid (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[2];
  graft_aten_args (ctx, (const char *const[]) { NULL, "indexing" }, 2, args);
  GraftRtTensor *list = tensor_list (&args[0], error);
  if (list == NULL)
    return FALSE;
  gboolean xy = FALSE;
  if (!graft_arg_is_none (&args[1]))
    {
      g_autoptr(GraftRtTensor) mode = graft_arg_value (&args[1], error);
      if (mode == NULL)
        return FALSE;
      const char *text = mode->dtype == GRAFT_DTYPE_STRING ? ((char **) mode->data)[0] : "";
      if (strcmp (text, "xy") != 0 && strcmp (text, "ij") != 0)
        return graft_kernel_fail (error, "meshgrid's indexing must be 'ij' or 'xy', not '%s'", text);
      xy = strcmp (text, "xy") == 0;
    }
  guint n = list->items->len;
  if (n > GRAFT_RT_MAX_RANK)
    return graft_kernel_fail (error, "meshgrid of more than %d tensors", GRAFT_RT_MAX_RANK);
  gint64 dims[GRAFT_RT_MAX_RANK];
  for (guint i = 0; i < n; i++)
    {
      GraftRtTensor *t = list->items->pdata[i];
      if (t->kind != GRAFT_RT_TENSOR || t->rank > 1)
        return graft_kernel_fail (error, "meshgrid needs 0-d or 1-D tensors, item %u is not", i);
      dims[i] = t->numel;
    }
  if (xy && n >= 2)
    {
      gint64 swap = dims[0];
      dims[0] = dims[1];
      dims[1] = swap;
    }
  GraftRtTensor *out = graft_rt_tensor_new_sequence (((GraftRtTensor *) list->items->pdata[0])->dtype);
  for (guint i = 0; i < n; i++)
    {
      GraftRtTensor *t = list->items->pdata[i];
      /* the grid axis that walks item i */
      guint axis = xy && n >= 2 && i < 2 ? 1 - i : i;
      GraftRtTensor *grid = graft_rt_tensor_new (t->dtype, n, dims, error);
      if (grid == NULL)
        {
          graft_rt_tensor_unref (out);
          return FALSE;
        }
      gint64 inner = graft_dims_product (dims, axis + 1, n);
      for (gint64 e = 0; e < grid->numel; e++)
        graft_copy_element (grid, e, t, (e / inner) % dims[axis]);
      g_ptr_array_add (out->items, grid);
    }
  set_list_output (ctx, out);
  return TRUE;
}

/* rand(size, dtype, layout, device, pin_memory): uniform on [0, 1). Only
 * dead code uses it at inference (wav2vec2's layer drop draws one number
 * that only training reads), so its values need not match PyTorch's. */
static gboolean
kernel_rand (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[2];
  graft_aten_args (ctx, NULL, 2, args);
  gint64 dims[GRAFT_RT_MAX_RANK];
  guint n;
  if (!graft_arg_ints (&args[0], dims, GRAFT_RT_MAX_RANK, &n, 0, error))
    return FALSE;
  GraftDType dtype = factory_dtype (ctx, &args[1], GRAFT_DTYPE_FLOAT32);
  if (!graft_dtype_is_float (dtype))
    return graft_kernel_fail (error, "rand needs a floating-point dtype");
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, dtype, n, dims, error);
  if (y == NULL)
    return FALSE;
  g_autoptr(GRand) random = g_rand_new ();
  for (gint64 i = 0; i < y->numel; i++)
    graft_rt_tensor_set_f64 (y, i, g_rand_double (random));
  return TRUE;
}

#define OP(name, kernel) { "aten::" name, 0, 0, NULL, kernel, 0 }

const GraftOpSchema graft_ops_aten_shape[] = {
  OP ("view", kernel_view), OP ("reshape", kernel_view), OP ("_reshape_alias", kernel_view),
  OP ("view_as", kernel_view), OP ("reshape_as", kernel_view), OP ("expand_as", kernel_expand),
  OP ("permute", kernel_permute), OP ("transpose", kernel_transpose),
  OP ("t", kernel_transpose), OP ("unsqueeze", kernel_unsqueeze), OP ("squeeze", kernel_squeeze),
  OP ("select", kernel_select), OP ("slice", kernel_slice), OP ("fill_", kernel_fill_inplace),
  OP ("copy_", kernel_copy), OP ("copy", kernel_copy), OP ("roll", kernel_roll), OP ("concat", kernel_cat),
  OP ("stack", kernel_cat), OP ("chunk", kernel_split), OP ("split", kernel_split),
  OP ("split_with_sizes", kernel_split), OP ("unbind", kernel_split), OP ("expand", kernel_expand),
  OP ("repeat", kernel_repeat), OP ("zeros", kernel_fill), OP ("ones", kernel_fill), OP ("full", kernel_fill),
  OP ("zeros_like", kernel_fill), OP ("ones_like", kernel_fill), OP ("full_like", kernel_fill),
  OP ("tensor", kernel_tensor), OP ("arange", kernel_arange), OP ("linspace", kernel_linspace), OP ("pad", kernel_pad),
  OP ("meshgrid", kernel_meshgrid), OP ("rand", kernel_rand),
  OP ("constant_pad_nd", kernel_pad),
  OP ("new_zeros", kernel_fill), OP ("new_ones", kernel_fill), OP ("new_full", kernel_fill),
  OP ("unflatten", kernel_unflatten), OP ("triu", kernel_triangle), OP ("tril", kernel_triangle),
  OP ("cumsum", kernel_cumsum), OP ("diff", kernel_diff), OP ("gather", kernel_gather), OP ("index", kernel_index),
  { NULL }
};
