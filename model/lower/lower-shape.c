/* Shape ops: reshaping, transposing, joining, splitting, slicing, and
 * aten::size / dim / len, whose results stay symbolic (Shape → Gather)
 * unless the dim is fixed. */
#include "lower/lower-private.h"

#include <math.h>
#include <string.h>

#define MAX_RANK 8

static void
add_ints (GraftNode *node, const char *name, const gint64 *values, guint n)
{
  graft_node_add_attribute (node, graft_attribute_new_ints (name, values, n));
}

static gboolean
normalize_dim (GraftNode *node, gint64 *dim, int rank, GError **error)
{
  if (*dim < 0)
    *dim += rank;
  if (*dim < 0 || *dim >= rank)
    return graft_lower_fail (error, node, "dim out of range for rank %d", rank);
  return TRUE;
}

static GraftValue *
transpose (GraftLowerContext *ctx, GraftValue *x, const gint64 *perm, int rank)
{
  GraftNode *t = graft_lower_node (ctx, "Transpose", 1, 1, x);
  add_ints (t, "perm", perm, rank);
  return graft_lower_finish (ctx, t);
}

/* Slice(shape, start, end) of a 1-D vector. */
static GraftValue *
slice_vector (GraftLowerContext *ctx, GraftValue *vector, gint64 start, gint64 end)
{
  return graft_lower_op (ctx, "Slice", 3, vector, graft_lower_const_int (ctx, start), graft_lower_const_int (ctx, end));
}

/* flatten(input, start_dim, end_dim) */
static gboolean
lower_flatten (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gint64 start, end;
  int rank;
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  if (x == NULL || !graft_lower_arg_int (ctx, node, 1, 0, &start, error) ||
      !graft_lower_arg_int (ctx, node, 2, -1, &end, error) || !graft_lower_need_rank (ctx, x, &rank, error))
    return FALSE;
  if (rank == 0)
    {
      graft_lower_set_output (ctx, node, 0, graft_lower_op (ctx, "Reshape", 2, x, graft_lower_const_int (ctx, 1)));
      return TRUE;
    }
  if (!normalize_dim (node, &start, rank, error) || !normalize_dim (node, &end, rank, error))
    return FALSE;
  if (start == 1 && end == rank - 1)
    {
      GraftNode *f = graft_lower_node (ctx, "Flatten", 1, 1, x);
      graft_node_add_attribute (f, graft_attribute_new_int ("axis", 1));
      graft_lower_set_output (ctx, node, 0, graft_lower_finish (ctx, f));
      return TRUE;
    }
  if (start >= end)
    {
      graft_lower_bind (ctx, g_ptr_array_index (node->outputs, 0), graft_lower_value_copy (graft_lower_arg (ctx, node, 0)));
      return TRUE;
    }
  GraftValue *shape = graft_lower_op (ctx, "Shape", 1, x);
  g_autoptr(GPtrArray) parts = g_ptr_array_new ();
  if (start > 0)
    g_ptr_array_add (parts, slice_vector (ctx, shape, 0, start));
  g_ptr_array_add (parts, graft_lower_const_int (ctx, -1));
  if (end < rank - 1)
    g_ptr_array_add (parts, slice_vector (ctx, shape, end + 1, rank));
  graft_lower_set_output (ctx, node, 0, graft_lower_op (ctx, "Reshape", 2, x, graft_lower_concat (ctx, parts, 0)));
  return TRUE;
}

/* When the size list holds run-time sizes, the registry's shape logic
 * cannot read the shape vector; its fixed items and its length still
 * give the result's rank and some dims. */
static void
declare_from_size_list (GraftLowerContext *ctx, GraftValue *result, GraftDType dtype, LowerValue *size)
{
  int rank = graft_lower_rank (ctx, result);
  if (size == NULL || size->kind != LOWER_LIST || (rank >= 0 && rank != (int) size->items->len))
    return;
  /* what inference knew (a dim it followed), with the literal sizes it could not see: a
   * reshape to (b, n, 3, heads, d) has a fixed 3 however n is computed */
  GraftShape shape;
  if (rank >= 0)
    graft_shape_copy (&shape, graft_lower_shape (ctx, result));
  else
    graft_shape_init (&shape, size->items->len);
  if (graft_lower_dtype (ctx, result) != GRAFT_DTYPE_UNDEFINED)
    dtype = graft_lower_dtype (ctx, result);
  for (guint i = 0; i < size->items->len; i++)
    {
      LowerValue *item = size->items->pdata[i];
      if (shape.dims[i].kind == GRAFT_DIM_UNKNOWN && item->kind == LOWER_CONST &&
          item->constant->type == GRAFT_ATTR_INT && item->constant->i >= 0)
        shape.dims[i] = graft_dim_fixed (item->constant->i);
    }
  _graft_lower_declare_type (ctx, result, dtype, &shape);
  graft_shape_clear (&shape);
}

/* view / reshape(self, size) */
static gboolean
lower_reshape (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  GraftValue *shape = x ? graft_lower_arg_int_vector (ctx, node, 1, error) : NULL;
  if (shape == NULL)
    return FALSE;
  GraftValue *y = graft_lower_op (ctx, "Reshape", 2, x, shape);
  declare_from_size_list (ctx, y, graft_lower_dtype (ctx, x), graft_lower_arg (ctx, node, 1));
  graft_lower_set_output (ctx, node, 0, y);
  return TRUE;
}

/* A ConstantOfShape of dtype filled with value. */
static GraftValue *
filled (GraftLowerContext *ctx, GraftValue *shape, GraftDType dtype, double value)
{
  GraftNode *fill = graft_lower_node (ctx, "ConstantOfShape", 1, 1, shape);
  GraftValue *scalar = graft_lower_const_scalar (ctx, dtype, value);
  g_autoptr(GraftTensor) t = graft_tensor_new ("value", graft_lower_dtype (ctx, scalar), 1, (gint64[]) { 1 });
  graft_tensor_set_data (t, graft_tensor_get_data (scalar->initializer, NULL), NULL);
  graft_node_add_attribute (fill, graft_attribute_new_tensor ("value", t));
  return graft_lower_finish (ctx, fill);
}

/* zeros / ones(size, dtype, …), full(size, fill_value, dtype, …), and the
 * _like forms (self, dtype, …) */
static gboolean
lower_fill (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  const char *op = node->op_type;
  gboolean like = g_str_has_suffix (op, "_like"), full = g_str_has_prefix (op, "full");
  double value = g_str_has_prefix (op, "ones") ? 1 : 0;
  guint dtype_position = full ? 2 : 1;
  gint64 code;
  if (full && !graft_lower_arg_double (ctx, node, 1, 0, &value, error))
    return FALSE;
  if (!graft_lower_arg_int (ctx, node, dtype_position, -1, &code, error))
    return FALSE;
  GraftValue *shape, *self = NULL;
  if (like)
    {
      if ((self = graft_lower_arg_tensor (ctx, node, 0, error)) == NULL)
        return FALSE;
      shape = graft_lower_op (ctx, "Shape", 1, self);
    }
  else if ((shape = graft_lower_arg_int_vector (ctx, node, 0, error)) == NULL)
    return FALSE;
  GraftDType dtype = code >= 0 ? graft_dtype_from_torch_scalar_type (code) : self ? graft_lower_dtype (ctx, self) : GRAFT_DTYPE_FLOAT32;
  GraftValue *y = filled (ctx, shape, dtype, value);
  if (!like)
    declare_from_size_list (ctx, y, dtype, graft_lower_arg (ctx, node, 0));
  graft_lower_set_output (ctx, node, 0, y);
  return TRUE;
}

/* arange(end, dtype, …) / arange(start, end, step, dtype, …): the bounds
 * are numbers or TorchScript scalars (a traced size) */
static gboolean
lower_arange (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  LowerValue *bounds[3] = { NULL };
  guint n = 0;
  gint64 code = -1;
  gboolean is_float = FALSE;
  for (guint k = 0; k < 3; k++)
    {
      LowerValue *v = graft_lower_arg (ctx, node, k);
      gboolean number = v != NULL && v->kind == LOWER_CONST &&
                        (v->constant->type == GRAFT_ATTR_INT || v->constant->type == GRAFT_ATTR_FLOAT);
      gboolean scalar = v != NULL && v->kind == LOWER_TENSOR && (v->scalar || graft_lower_rank (ctx, v->value) == 0);
      if (!number && !scalar)
        break;
      is_float |= number ? v->constant->type == GRAFT_ATTR_FLOAT : graft_dtype_is_float (graft_lower_dtype (ctx, v->value));
      bounds[n++] = v;
    }
  if (n == 0)
    return graft_lower_fail (error, node, "has no numeric bounds");
  /* arange(end, dtype, layout, device, pin_memory) has 5 arguments; the
   * dtype follows the numbers */
  /* dtype= as a keyword: the runtime device= may then sit at position n
   * (EdgeNeXt's arange(dim, dtype=int64, device=x.device)) */
  GraftAttribute *keyword_dtype = graft_node_get_attribute (node, "dtype");
  if (keyword_dtype != NULL)
    code = keyword_dtype->type == GRAFT_ATTR_INT ? keyword_dtype->i : -1;
  else if (!graft_lower_arg_int (ctx, node, n, -1, &code, error))
    return FALSE;
  GraftDType dtype = code >= 0 ? graft_dtype_from_torch_scalar_type (code) : is_float ? GRAFT_DTYPE_FLOAT32 : GRAFT_DTYPE_INT64;
  GraftValue *values[3];
  for (guint k = 0; k < 3; k++)
    {
      guint source = n == 1 ? (k == 1 ? 0 : G_MAXUINT) : n == 2 ? (k < 2 ? k : G_MAXUINT) : k;
      if (source == G_MAXUINT)
        values[k] = graft_lower_const_scalar (ctx, dtype, k == 2 ? 1 : 0);
      else if (bounds[source]->kind == LOWER_CONST)
        values[k] = graft_lower_const_scalar (ctx, dtype, bounds[source]->constant->type == GRAFT_ATTR_FLOAT
                                                            ? bounds[source]->constant->f : (double) bounds[source]->constant->i);
      else
        values[k] = graft_lower_cast (ctx, bounds[source]->value, dtype);
    }
  graft_lower_set_output (ctx, node, 0, graft_lower_op (ctx, "Range", 3, values[0], values[1], values[2]));
  return TRUE;
}

/* max / min(self) over everything, max(self, dim, keepdim) → (values,
 * indices), max(self, other) elementwise; amax(self, dim, keepdim) */
static gboolean
lower_max_min (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gboolean is_max = strstr (node->op_type, "max") != NULL;
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  if (x == NULL)
    return FALSE;
  LowerValue *second = graft_lower_arg (ctx, node, 1);
  if (second != NULL && second->kind == LOWER_TENSOR && !second->scalar)
    {
      graft_lower_set_output (ctx, node, 0, graft_lower_op (ctx, is_max ? "Max" : "Min", 2, x, second->value));
      return TRUE;
    }
  gint64 axes[MAX_RANK], keepdim;
  guint n;
  if (!graft_lower_arg_ints (ctx, node, 1, axes, MAX_RANK, &n, 0, error) ||
      !graft_lower_arg_int (ctx, node, 2, 0, &keepdim, error))
    return FALSE;
  GraftNode *r;
  if (n == 0)
    r = graft_lower_node (ctx, is_max ? "ReduceMax" : "ReduceMin", 1, 1, x);
  else if (ctx->opset >= 18)
    r = graft_lower_node (ctx, is_max ? "ReduceMax" : "ReduceMin", 1, 2, x, graft_lower_const_ints (ctx, axes, n, FALSE));
  else
    {
      r = graft_lower_node (ctx, is_max ? "ReduceMax" : "ReduceMin", 1, 1, x);
      add_ints (r, "axes", axes, n);
    }
  graft_node_add_attribute (r, graft_attribute_new_int ("keepdims", n == 0 ? 0 : keepdim));
  graft_lower_set_output (ctx, node, 0, graft_lower_finish (ctx, r));
  if (node->outputs->len > 1 && n == 1)
    {
      GraftNode *arg = graft_lower_node (ctx, is_max ? "ArgMax" : "ArgMin", 1, 1, x);
      graft_node_add_attribute (arg, graft_attribute_new_int ("axis", axes[0]));
      graft_node_add_attribute (arg, graft_attribute_new_int ("keepdims", keepdim));
      graft_lower_set_output (ctx, node, 1, graft_lower_finish (ctx, arg));
    }
  return TRUE;
}

static gboolean
lower_permute (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gint64 perm[MAX_RANK];
  guint n;
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  if (x == NULL || !graft_lower_arg_ints (ctx, node, 1, perm, MAX_RANK, &n, 0, error))
    return FALSE;
  /* ONNX reads an empty perm as "reverse the dims": never what torch meant */
  if (n == 0 || (graft_lower_rank (ctx, x) >= 0 && (int) n != graft_lower_rank (ctx, x)))
    return graft_lower_fail (error, node, "the permutation (%u dims) is not known as constants that fit the input", n);
  for (guint i = 0; i < n; i++)
    if (perm[i] < 0)
      perm[i] += n;
  graft_lower_set_output (ctx, node, 0, transpose (ctx, x, perm, n));
  return TRUE;
}

/* transpose(self, dim0, dim1), t(self) */
static gboolean
lower_transpose (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gint64 d0 = 0, d1 = 1, perm[MAX_RANK];
  int rank;
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  if (x == NULL || !graft_lower_need_rank (ctx, x, &rank, error) || rank > MAX_RANK)
    return x != NULL && rank > MAX_RANK ? graft_lower_fail (error, node, "rank %d", rank) : FALSE;
  if (strcmp (node->op_type, "t") != 0 &&
      (!graft_lower_arg_int (ctx, node, 1, 0, &d0, error) || !graft_lower_arg_int (ctx, node, 2, 1, &d1, error)))
    return FALSE;
  if (rank < 2)
    {
      graft_lower_bind (ctx, g_ptr_array_index (node->outputs, 0), graft_lower_value_copy (graft_lower_arg (ctx, node, 0)));
      return TRUE;
    }
  if (!normalize_dim (node, &d0, rank, error) || !normalize_dim (node, &d1, rank, error))
    return FALSE;
  for (int i = 0; i < rank; i++)
    perm[i] = i;
  perm[d0] = d1;
  perm[d1] = d0;
  graft_lower_set_output (ctx, node, 0, transpose (ctx, x, perm, rank));
  return TRUE;
}

static gboolean
lower_unsqueeze (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gint64 dim;
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  if (x == NULL || !graft_lower_arg_int (ctx, node, 1, 0, &dim, error))
    return FALSE;
  graft_lower_set_output (ctx, node, 0, graft_lower_op (ctx, "Unsqueeze", 2, x, graft_lower_const_int (ctx, dim)));
  return TRUE;
}

/* squeeze(self) / squeeze(self, dim): torch leaves a dim that is not 1. */
static gboolean
lower_squeeze (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  gint64 dims[MAX_RANK];
  guint n;
  if (x == NULL || !graft_lower_arg_ints (ctx, node, 1, dims, MAX_RANK, &n, 0, error))
    return FALSE;
  if (n == 0)
    {
      graft_lower_set_output (ctx, node, 0, graft_lower_op (ctx, "Squeeze", 1, x));
      return TRUE;
    }
  const GraftShape *s = graft_lower_shape (ctx, x);
  guint kept = 0;
  for (guint i = 0; i < n; i++)
    {
      gint64 d = dims[i] < 0 && s->rank >= 0 ? dims[i] + s->rank : dims[i];
      if (s->rank >= 0 && d >= 0 && d < s->rank && s->dims[d].kind == GRAFT_DIM_FIXED && s->dims[d].value != 1)
        continue;
      dims[kept++] = dims[i];
    }
  if (kept == 0)
    {
      graft_lower_bind (ctx, g_ptr_array_index (node->outputs, 0), graft_lower_value_copy (graft_lower_arg (ctx, node, 0)));
      return TRUE;
    }
  graft_lower_set_output (ctx, node, 0, graft_lower_op (ctx, "Squeeze", 2, x, graft_lower_const_ints (ctx, dims, kept, FALSE)));
  return TRUE;
}

/* cat(tensors, dim) / stack(tensors, dim) */
static gboolean
lower_cat (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gboolean stack = strcmp (node->op_type, "stack") == 0;
  gint64 dim;
  LowerValue *list = graft_lower_arg (ctx, node, 0);
  if (!graft_lower_arg_int (ctx, node, 1, 0, &dim, error))
    return FALSE;
  if (list != NULL && list->kind == LOWER_SEQUENCE)
    {
      GraftNode *concat = graft_lower_node (ctx, "ConcatFromSequence", 1, 1, list->value);
      graft_node_add_attribute (concat, graft_attribute_new_int ("axis", dim));
      if (stack)
        graft_node_add_attribute (concat, graft_attribute_new_int ("new_axis", 1));
      GraftValue *out = graft_lower_finish (ctx, concat);
      int rank = graft_lower_rank (ctx, list->value);
      GraftShape shape;
      graft_shape_init (&shape, rank < 0 ? -1 : rank + (stack ? 1 : 0));
      _graft_lower_declare_type (ctx, out, graft_lower_dtype (ctx, list->value), &shape);
      graft_shape_clear (&shape);
      graft_lower_set_output (ctx, node, 0, out);
      return TRUE;
    }
  if (list == NULL || list->kind != LOWER_LIST)
    return graft_lower_fail (error, node, "the tensor list is not known while converting");
  g_autoptr(GPtrArray) parts = g_ptr_array_new ();
  for (guint i = 0; i < list->items->len; i++)
    {
      LowerValue *item = list->items->pdata[i];
      if (item->kind != LOWER_TENSOR)
        return graft_lower_fail (error, node, "item %u of the list is not a tensor", i);
      GraftValue *t = item->value;
      if (stack)
        t = graft_lower_op (ctx, "Unsqueeze", 2, t, graft_lower_const_int (ctx, dim));
      g_ptr_array_add (parts, t);
    }
  graft_lower_set_output (ctx, node, 0, graft_lower_concat (ctx, parts, dim));
  return TRUE;
}

/* A list of the tensors Split makes (split: its sizes, an int64 vector). */
static void
bind_split (GraftLowerContext *ctx, GraftNode *node, GraftValue *x, gint64 dim, GraftValue *split_sizes, guint n,
            gboolean drop_dim)
{
  GraftNode *split = graft_lower_node (ctx, "Split", n, 2, x, split_sizes);
  graft_node_add_attribute (split, graft_attribute_new_int ("axis", dim));
  graft_lower_finish (ctx, split);
  g_autoptr(GPtrArray) parts = g_ptr_array_new ();
  for (guint i = 0; i < n; i++)
    {
      GraftValue *part = g_ptr_array_index (split->outputs, i);
      if (drop_dim)
        part = graft_lower_op (ctx, "Squeeze", 2, part, graft_lower_const_int (ctx, dim));
      g_ptr_array_add (parts, part);
    }
  if (node->outputs->len == 1 && (n != 1 || drop_dim))
    {
      LowerValue *list = graft_lower_value_list ();
      for (guint i = 0; i < n; i++)
        g_ptr_array_add (list->items, graft_lower_value_tensor (parts->pdata[i], FALSE));
      graft_lower_bind (ctx, g_ptr_array_index (node->outputs, 0), list);
      return;
    }
  for (guint i = 0; i < node->outputs->len && i < n; i++)
    graft_lower_set_output (ctx, node, i, parts->pdata[i]);
}

/* How many tensors the list a split makes is unpacked into (by
 * prim::ListUnpack, or as the node's own outputs in a .pt2); 0 when
 * nothing says. */
static guint
unpacked_count (GraftNode *node)
{
  if (node->outputs->len > 1)
    return node->outputs->len;
  GraftValue *list = g_ptr_array_index (node->outputs, 0);
  for (guint i = 0; list != NULL && i < list->consumers->len; i++)
    {
      GraftNode *user = g_ptr_array_index (list->consumers, i);
      if (strcmp (user->op, "prim::ListUnpack") == 0)
        return user->outputs->len;
    }
  return 0;
}

/* The sizes of n chunks of a dim known only at run time, as torch.chunk
 * makes them: ⌈d/n⌉ each, the rest last. */
static GraftValue *
chunk_sizes (GraftLowerContext *ctx, GraftValue *x, gint64 dim, gint64 n)
{
  GraftValue *d = graft_lower_op (ctx, "Gather", 2, graft_lower_op (ctx, "Shape", 1, x), graft_lower_const_int (ctx, dim));
  GraftValue *each = graft_lower_op (ctx, "Div", 2, graft_lower_op (ctx, "Add", 2, d, graft_lower_const_int (ctx, n - 1)),
                                     graft_lower_const_int (ctx, n));
  GraftValue *rest = graft_lower_op (ctx, "Sub", 2, d, graft_lower_op (ctx, "Mul", 2, each, graft_lower_const_int (ctx, n - 1)));
  g_autoptr(GPtrArray) parts = g_ptr_array_new ();
  for (gint64 i = 0; i < n - 1; i++)
    g_ptr_array_add (parts, each);
  g_ptr_array_add (parts, rest);
  return graft_lower_concat (ctx, parts, 0);
}

/* chunk(self, chunks, dim), split(self, split_size, dim), split_with_sizes,
 * unbind(self, dim): sizes from the fixed dim, from the list given, or
 * (chunk, and unbind into a known number of values) computed at run time. */
static gboolean
lower_split (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gboolean unbind = strcmp (node->op_type, "unbind") == 0, chunk = strcmp (node->op_type, "chunk") == 0;
  gint64 dim, sizes[256], count[256];
  guint n = 0;
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  if (x == NULL || !graft_lower_arg_int (ctx, node, unbind ? 1 : 2, 0, &dim, error))
    return FALSE;
  const GraftShape *s = graft_lower_shape (ctx, x);
  if (s->rank < 0)
    return graft_lower_fail (error, node, "needs the rank of its input; give the inputs' shapes");
  if (!normalize_dim (node, &dim, s->rank, error))
    return FALSE;
  LowerValue *given = unbind ? NULL : graft_lower_arg (ctx, node, 1);
  gboolean run_time_sizes = FALSE;
  for (guint i = 0; !chunk && given != NULL && given->kind == LOWER_LIST && i < given->items->len; i++)
    run_time_sizes |= ((LowerValue *) given->items->pdata[i])->kind == LOWER_TENSOR;
  if (run_time_sizes)
    {
      /* split_with_sizes by sizes known only at run time (traced RAFT's
       * [96, C − 96]): the list as a vector */
      GraftValue *sizes_vector = graft_lower_arg_int_vector (ctx, node, 1, error);
      if (sizes_vector == NULL)
        return FALSE;
      bind_split (ctx, node, x, dim, sizes_vector, given->items->len, FALSE);
      return TRUE;
    }
  if (!unbind && !graft_lower_arg_ints (ctx, node, 1, count, G_N_ELEMENTS (count), &n, 0, error))
    return FALSE;
  if (!unbind && !chunk && n > 1)
    {
      /* the sizes themselves: the dim's own size does not matter */
      bind_split (ctx, node, x, dim, graft_lower_const_ints (ctx, count, n, FALSE), n, FALSE);
      return TRUE;
    }
  if (s->dims[dim].kind != GRAFT_DIM_FIXED)
    {
      guint parts = unbind ? unpacked_count (node) : chunk && n == 1 ? (guint) MAX (count[0], 0) : 0;
      if (parts == 0 || parts > G_N_ELEMENTS (sizes))
        return graft_lower_fail (error, node, "splits dim %" G_GINT64_FORMAT ", which is not fixed, into a number of "
                                 "parts nothing tells", dim);
      if (chunk)
        {
          bind_split (ctx, node, x, dim, chunk_sizes (ctx, x, dim, parts), parts, FALSE);
          return TRUE;
        }
      for (guint i = 0; i < parts; i++)
        sizes[i] = 1;
      bind_split (ctx, node, x, dim, graft_lower_const_ints (ctx, sizes, parts, FALSE), parts, TRUE);
      return TRUE;
    }
  gint64 total = s->dims[dim].value;
  gint64 each = unbind ? 1 : chunk ? (total + count[0] - 1) / MAX (count[0], 1) : count[0];
  if (each <= 0 || total / each + 1 > (gint64) G_N_ELEMENTS (sizes))
    return graft_lower_fail (error, node, "split size %" G_GINT64_FORMAT, each);
  n = 0;
  for (gint64 at = 0; at < total; at += each)
    sizes[n++] = MIN (each, total - at);
  bind_split (ctx, node, x, dim, graft_lower_const_ints (ctx, sizes, n, FALSE), n, unbind);
  return TRUE;
}

/* A scalar index (constant or 0-d tensor) as a 1-element int64 vector. */
static GraftValue *
index_vector (GraftLowerContext *ctx, GraftNode *node, guint k, gint64 fallback, GError **error)
{
  LowerValue *v = graft_lower_arg (ctx, node, k);
  if (v == NULL || v->kind == LOWER_NONE)
    return graft_lower_const_int (ctx, fallback);
  if (v->kind == LOWER_CONST)
    {
      gint64 i;
      if (!graft_lower_arg_int (ctx, node, k, fallback, &i, error))
        return NULL;
      return graft_lower_const_int (ctx, i);
    }
  GraftValue *t = graft_lower_arg_tensor (ctx, node, k, error);
  if (t == NULL)
    return NULL;
  return graft_lower_op (ctx, "Reshape", 2, graft_lower_cast (ctx, t, GRAFT_DTYPE_INT64), graft_lower_const_int (ctx, 1));
}

/* list[start:end:step] of a list whose items are known: the items it keeps
 * (slice(l, start, end, step) has no dim argument) */
static gboolean
slice_list (GraftLowerContext *ctx, GraftNode *node, LowerValue *list, GError **error)
{
  gint64 n = list->items->len, start, end, step;
  if (!graft_lower_arg_int (ctx, node, 1, 0, &start, error) || !graft_lower_arg_int (ctx, node, 2, G_MAXINT64, &end, error) ||
      !graft_lower_arg_int (ctx, node, 3, 1, &step, error))
    return FALSE;
  if (step <= 0)
    return graft_lower_fail (error, node, "a list slice with step %" G_GINT64_FORMAT, step);
  start = start < 0 ? MAX (start + n, 0) : MIN (start, n);
  end = end < 0 ? MAX (end + n, 0) : MIN (end, n);
  LowerValue *slice = graft_lower_value_list ();
  for (gint64 i = start; i < end; i += step)
    g_ptr_array_add (slice->items, graft_lower_value_copy (list->items->pdata[i]));
  graft_lower_bind (ctx, g_ptr_array_index (node->outputs, 0), slice);
  return TRUE;
}

/* slice(self, dim, start, end, step) */
static gboolean
lower_slice (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gint64 dim;
  LowerValue *self = graft_lower_arg (ctx, node, 0);
  if (!graft_lower_arg_int (ctx, node, 1, 0, &dim, error))
    return FALSE;
  if (self != NULL && self->kind == LOWER_LIST)
    return slice_list (ctx, node, self, error);
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  GraftValue *start = x ? index_vector (ctx, node, 2, 0, error) : NULL;
  GraftValue *end = start ? index_vector (ctx, node, 3, G_MAXINT64, error) : NULL;
  GraftValue *step = end ? index_vector (ctx, node, 4, 1, error) : NULL;
  if (step == NULL)
    return FALSE;
  graft_lower_set_output (ctx, node, 0, graft_lower_op (ctx, "Slice", 5, x, start, end, graft_lower_const_int (ctx, dim), step));
  return TRUE;
}

/* Slice(x, start, end) along axis (1-element int64 vectors) */
static GraftValue *
slice_axis (GraftLowerContext *ctx, GraftValue *x, GraftValue *start, GraftValue *end, gint64 axis)
{
  return graft_lower_op (ctx, "Slice", 4, x, start, end, graft_lower_const_int (ctx, axis));
}

/* roll(self, shifts, dims): along each dim, Concat of the last s elements
 * and the first n − s (Slice takes negative starts, so the dim's size
 * need not be known; a shift as large as a known size is reduced modulo
 * it). Without dims, the roll of the flattened tensor. */
static gboolean
lower_roll (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gint64 shifts[GRAFT_RT_MAX_RANK], dims[GRAFT_RT_MAX_RANK];
  guint n_shifts, n_dims = 0;
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  if (x == NULL || (!graft_lower_arg_is_none (ctx, node, 2) &&
                    !graft_lower_arg_ints (ctx, node, 2, dims, G_N_ELEMENTS (dims), &n_dims, 0, error)))
    return FALSE;
  /* shifts computed at run time (scripted Swin's -shift_size[i]): each cut
   * is the shift's negation as a 1-element vector, which Slice takes for
   * any sign as long as |shift| < the dim's size */
  LowerValue *given = graft_lower_arg (ctx, node, 1);
  GraftValue *run_time_shifts = NULL;
  if (given != NULL && given->kind == LOWER_LIST && n_dims == given->items->len && n_dims > 0)
    for (guint k = 0; k < given->items->len && run_time_shifts == NULL && !(error && *error); k++)
      if (((LowerValue *) given->items->pdata[k])->kind == LOWER_TENSOR)
        run_time_shifts = graft_lower_arg_int_vector (ctx, node, 1, error);
  if (run_time_shifts != NULL)
    {
      for (guint k = 0; k < n_dims; k++)
        {
          GraftValue *cut = graft_lower_op (ctx, "Neg", 1, slice_axis (ctx, run_time_shifts, graft_lower_const_int (ctx, k),
                                                                      graft_lower_const_int (ctx, k + 1), 0));
          GraftValue *tail = slice_axis (ctx, x, cut, graft_lower_const_int (ctx, G_MAXINT64), dims[k]);
          GraftValue *head = slice_axis (ctx, x, graft_lower_const_int (ctx, 0), cut, dims[k]);
          GraftNode *concat = graft_lower_node (ctx, "Concat", 1, 2, tail, head);
          graft_node_add_attribute (concat, graft_attribute_new_int ("axis", dims[k]));
          x = graft_lower_finish (ctx, concat);
        }
      graft_lower_set_output (ctx, node, 0, x);
      return TRUE;
    }
  if (error && *error)
    return FALSE;
  if (!graft_lower_arg_ints (ctx, node, 1, shifts, G_N_ELEMENTS (shifts), &n_shifts, 0, error))
    return FALSE;
  gboolean flat = n_dims == 0;
  if (flat ? n_shifts != 1 : n_shifts != n_dims)
    return graft_lower_fail (error, node, "%u shifts for %u dims", n_shifts, n_dims);
  GraftValue *shape = NULL;
  if (flat)
    {
      shape = graft_lower_op (ctx, "Shape", 1, x);
      x = graft_lower_op (ctx, "Reshape", 2, x, graft_lower_const_int (ctx, -1));
      dims[0] = 0;
      n_dims = 1;
    }
  for (guint k = 0; k < n_dims; k++)
    {
      const GraftShape *s = graft_lower_shape (ctx, x);
      gint64 shift = shifts[k], d = dims[k];
      if (s->rank > 0 && d < 0)
        d += s->rank;
      if (s->rank > 0 && d >= 0 && d < s->rank && s->dims[d].kind == GRAFT_DIM_FIXED && s->dims[d].value > 0)
        {
          gint64 n = s->dims[d].value;
          shift = ((shift % n) + n) % n;
        }
      if (shift == 0)
        continue;
      GraftValue *cut = graft_lower_const_int (ctx, -shift), *zero = graft_lower_const_int (ctx, 0);
      GraftValue *tail = slice_axis (ctx, x, cut, graft_lower_const_int (ctx, G_MAXINT64), d);
      GraftValue *head = slice_axis (ctx, x, zero, cut, d);
      GraftNode *concat = graft_lower_node (ctx, "Concat", 1, 2, tail, head);
      graft_node_add_attribute (concat, graft_attribute_new_int ("axis", d));
      x = graft_lower_finish (ctx, concat);
    }
  if (flat)
    x = graft_lower_op (ctx, "Reshape", 2, x, shape);
  graft_lower_set_output (ctx, node, 0, x);
  return TRUE;
}

/* parent with the elements that view (an aten::slice of step 1 or a
 * select at a constant index) took from it replaced by value: Concat of
 * what lies before, value, and what lies after along the view's dim. */
static GraftValue *
write_into (GraftLowerContext *ctx, GraftNode *view, GraftValue *parent, GraftValue *value, GError **error)
{
  const GraftLowering *saved = ctx->row;
  ctx->row = _graft_lower_row (view->op, ctx->opset);
  gboolean select = strcmp (view->op, "aten::select") == 0;
  gint64 dim, step = 1, index = 0;
  GraftValue *start = NULL, *end = NULL;
  gboolean ok = graft_lower_arg_int (ctx, view, 1, 0, &dim, error);
  if (ok && select)
    {
      ok = graft_lower_arg_int (ctx, view, 2, 0, &index, error);
      start = graft_lower_const_int (ctx, index);
      /* x[-1]: nothing after it */
      end = graft_lower_const_int (ctx, index == -1 ? G_MAXINT64 : index + 1);
      value = ok ? graft_lower_op (ctx, "Unsqueeze", 2, value, graft_lower_const_int (ctx, dim)) : NULL;
    }
  else if (ok)
    {
      ok = graft_lower_arg_int (ctx, view, 4, 1, &step, error) &&
           (start = index_vector (ctx, view, 2, 0, error)) != NULL &&
           (end = index_vector (ctx, view, 3, G_MAXINT64, error)) != NULL;
      if (ok && step != 1)
        ok = graft_lower_fail (error, view, "an in-place write through a slice of step %" G_GINT64_FORMAT, step);
    }
  ctx->row = saved;
  if (!ok)
    return NULL;
  GraftValue *before = slice_axis (ctx, parent, graft_lower_const_int (ctx, 0), start, dim);
  GraftValue *after = slice_axis (ctx, parent, end, graft_lower_const_int (ctx, G_MAXINT64), dim);
  GraftNode *concat = graft_lower_node (ctx, "Concat", 1, 3, before, graft_lower_cast (ctx, value, graft_lower_dtype (ctx, parent)),
                                        after);
  graft_node_add_attribute (concat, graft_attribute_new_int ("axis", dim));
  return graft_lower_finish (ctx, concat);
}

/* What an in-place op (node) computed for its first input, a tensor or a
 * view of one (slices and selects of slices…), becomes that input's value
 * for the nodes after, and is written into every tensor up the view chain,
 * as PyTorch's shared memory makes it. */
static gboolean
lower_in_place_result (GraftLowerContext *ctx, GraftNode *node, GraftValue *value, GError **error)
{
  GraftValue *target = g_ptr_array_index (node->inputs, 0);
  graft_lower_set_output (ctx, node, 0, value);
  graft_lower_bind (ctx, target, graft_lower_value_tensor (value, FALSE));
  while (target->producer != NULL && (strcmp (target->producer->op, "aten::slice") == 0 ||
                                       strcmp (target->producer->op, "aten::select") == 0))
    {
      GraftNode *view = target->producer;
      GraftValue *source = view->inputs->len > 0 ? g_ptr_array_index (view->inputs, 0) : NULL;
      LowerValue *parent = source ? graft_lower_lookup (ctx, source) : NULL;
      if (parent == NULL || parent->kind != LOWER_TENSOR)
        return graft_lower_fail (error, node, "writes through view '%s' of a value that is not a tensor", view->name);
      if (source->graph != node->graph)
        return graft_lower_fail (error, node, "writes through view '%s' into a value of an enclosing graph", view->name);
      value = write_into (ctx, view, parent->value, value, error);
      if (value == NULL)
        return FALSE;
      graft_lower_bind (ctx, source, graft_lower_value_tensor (value, FALSE));
      target = source;
    }
  return TRUE;
}

/* fill_(self, value): value expanded to self's shape, in self's dtype */
static gboolean
lower_fill_in_place (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  GraftValue *value = x ? graft_lower_arg_like (ctx, node, 1, x, error) : NULL;
  if (value == NULL)
    return FALSE;
  value = graft_lower_cast (ctx, value, graft_lower_dtype (ctx, x));
  return lower_in_place_result (ctx, node, graft_lower_op (ctx, "Expand", 2, value, graft_lower_op (ctx, "Shape", 1, x)),
                                error);
}

/* copy_(self, src, non_blocking) / copy(self, src, …): src broadcast to
 * self's shape in self's dtype; copy(list) alone is list.copy() */
static gboolean
lower_copy (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  LowerValue *self = graft_lower_arg (ctx, node, 0);
  if (self != NULL && self->kind != LOWER_TENSOR && graft_lower_arg_is_none (ctx, node, 1))
    {
      graft_lower_bind (ctx, g_ptr_array_index (node->outputs, 0), graft_lower_value_copy (self));
      return TRUE;
    }
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  GraftValue *src = x ? graft_lower_arg_tensor (ctx, node, 1, error) : NULL;
  if (src == NULL)
    return FALSE;
  GraftValue *value = graft_lower_op (ctx, "Expand", 2, graft_lower_cast (ctx, src, graft_lower_dtype (ctx, x)),
                                      graft_lower_op (ctx, "Shape", 1, x));
  if (strcmp (node->op_type, "copy") == 0)
    {
      graft_lower_set_output (ctx, node, 0, value);
      return TRUE;
    }
  return lower_in_place_result (ctx, node, value, error);
}

/* select(self, dim, index) → Gather with a 0-d index (drops the dim) */
static gboolean
lower_select (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gint64 dim;
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  if (x == NULL || !graft_lower_arg_int (ctx, node, 1, 0, &dim, error))
    return FALSE;
  LowerValue *index = graft_lower_arg (ctx, node, 2);
  GraftValue *i;
  if (index != NULL && index->kind == LOWER_CONST)
    {
      gint64 value;
      if (!graft_lower_arg_int (ctx, node, 2, 0, &value, error))
        return FALSE;
      i = graft_lower_const_ints (ctx, &value, 1, TRUE);
    }
  else if ((i = graft_lower_arg_tensor (ctx, node, 2, error)) == NULL)
    return FALSE;
  else
    i = graft_lower_cast (ctx, i, GRAFT_DTYPE_INT64);
  GraftNode *gather = graft_lower_node (ctx, "Gather", 1, 2, x, i);
  graft_node_add_attribute (gather, graft_attribute_new_int ("axis", dim));
  graft_lower_set_output (ctx, node, 0, graft_lower_finish (ctx, gather));
  return TRUE;
}

/* expand(self, size, implicit): -1 keeps the dim, as 1 does under ONNX's
 * two-way broadcasting. */
static gboolean
lower_expand (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gint64 sizes[MAX_RANK];
  guint n;
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  LowerValue *size = x ? graft_lower_arg (ctx, node, 1) : NULL;
  GraftValue *shape;
  if (size == NULL)
    return x != NULL ? graft_lower_fail (error, node, "has no size") : FALSE;
  if (size->kind == LOWER_CONST && graft_lower_arg_ints (ctx, node, 1, sizes, MAX_RANK, &n, 0, NULL))
    {
      for (guint i = 0; i < n; i++)
        if (sizes[i] == -1)
          sizes[i] = 1;
      shape = graft_lower_const_ints (ctx, sizes, n, FALSE);
    }
  else
    {
      shape = graft_lower_arg_int_vector (ctx, node, 1, error);
      if (shape == NULL)
        return FALSE;
      /* Max(size, 1) would be wrong for 0; -1 → 1 through Where */
      GraftValue *minus = graft_lower_op (ctx, "Equal", 2, shape, graft_lower_const_ints (ctx, (gint64[]) { -1 }, 1, TRUE));
      shape = graft_lower_op (ctx, "Where", 3, minus, graft_lower_const_ints (ctx, (gint64[]) { 1 }, 1, TRUE), shape);
    }
  GraftValue *y = graft_lower_op (ctx, "Expand", 2, x, shape);
  declare_from_size_list (ctx, y, graft_lower_dtype (ctx, x), size);
  graft_lower_set_output (ctx, node, 0, y);
  return TRUE;
}

/* mean / sum(self, dim, keepdim, dtype) */
static gboolean
lower_reduce (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gboolean mean = strcmp (node->op_type, "mean") == 0;
  gint64 axes[MAX_RANK], keepdim, dtype = -1;
  guint n;
  LowerValue *first = graft_lower_arg (ctx, node, 0);
  if (!mean && first != NULL && (first->kind == LOWER_LIST || first->kind == LOWER_CONST))
    {
      /* sum(int list): Swin's sum(shift_size) > 0. A constant where
       * every item is, else ReduceSum of the items as a vector. */
      gint64 total = 0;
      gboolean known = first->kind == LOWER_CONST && first->constant->type == GRAFT_ATTR_INTS;
      for (guint i = 0; known && i < first->constant->ints->len; i++)
        total += g_array_index (first->constant->ints, gint64, i);
      if (first->kind == LOWER_LIST)
        {
          known = TRUE;
          for (guint i = 0; known && i < first->items->len; i++)
            {
              LowerValue *item = first->items->pdata[i];
              known = item->kind == LOWER_CONST && item->constant->type == GRAFT_ATTR_INT;
              total += known ? item->constant->i : 0;
            }
        }
      if (known)
        {
          g_autoptr(GraftAttribute) sum = graft_attribute_new_int ("value", total);
          graft_lower_bind (ctx, g_ptr_array_index (node->outputs, 0), graft_lower_value_const (sum));
          return TRUE;
        }
      GraftValue *items = graft_lower_int_vector (ctx, node, 0, first, error);
      if (items == NULL)
        return FALSE;
      GraftNode *reduce = graft_lower_node (ctx, "ReduceSum", 1, 2, items, graft_lower_const_int (ctx, 0));
      graft_node_add_attribute (reduce, graft_attribute_new_int ("keepdims", 0));
      graft_lower_set_output_scalar (ctx, node, 0, graft_lower_finish (ctx, reduce));
      return TRUE;
    }
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  if (x == NULL)
    return FALSE;
  LowerValue *second = graft_lower_arg (ctx, node, 1);
  gboolean all = second == NULL || second->kind == LOWER_NONE ||
                 (second->kind == LOWER_CONST && second->constant->type == GRAFT_ATTR_INT && node->inputs->len +
                  node->attributes->len <= 2);
  if (all)
    {
      /* mean(self, dtype) over everything */
      GraftNode *r = graft_lower_node (ctx, mean ? "ReduceMean" : "ReduceSum", 1, 1, x);
      graft_node_add_attribute (r, graft_attribute_new_int ("keepdims", 0));
      graft_lower_set_output (ctx, node, 0, graft_lower_finish (ctx, r));
      return TRUE;
    }
  if (!graft_lower_arg_ints (ctx, node, 1, axes, MAX_RANK, &n, 0, error) ||
      !graft_lower_arg_int (ctx, node, 2, 0, &keepdim, error) || !graft_lower_arg_int (ctx, node, 3, -1, &dtype, error))
    return FALSE;
  if (dtype >= 0)
    x = graft_lower_cast (ctx, x, graft_dtype_from_torch_scalar_type (dtype));
  GraftNode *r;
  gboolean axes_input = !mean || ctx->opset >= 18;
  if (axes_input)
    r = graft_lower_node (ctx, mean ? "ReduceMean" : "ReduceSum", 1, 2, x, graft_lower_const_ints (ctx, axes, n, FALSE));
  else
    {
      r = graft_lower_node (ctx, "ReduceMean", 1, 1, x);
      add_ints (r, "axes", axes, n);
    }
  graft_node_add_attribute (r, graft_attribute_new_int ("keepdims", keepdim));
  graft_lower_set_output (ctx, node, 0, graft_lower_finish (ctx, r));
  return TRUE;
}

/* linalg_vector_norm(self, ord, dim, keepdim, dtype) and norm(self, p, dim,
 * keepdim): F.normalize. |x|^p summed (ReduceSum takes its axes as an
 * input from opset 13), then the p-th root; ord inf is the largest |x|. */
static gboolean
lower_vector_norm (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gint64 axes[MAX_RANK], keepdim, dtype = -1;
  guint n;
  double p = 2;
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  if (x == NULL || (!graft_lower_arg_is_none (ctx, node, 1) && !graft_lower_arg_double (ctx, node, 1, 2, &p, error)) ||
      !graft_lower_arg_ints (ctx, node, 2, axes, MAX_RANK, &n, 0, error) ||
      !graft_lower_arg_int (ctx, node, 3, 0, &keepdim, error))
    return FALSE;
  if (strcmp (node->op_type, "linalg_vector_norm") == 0 && !graft_lower_arg_is_none (ctx, node, 4) &&
      !graft_lower_arg_int (ctx, node, 4, -1, &dtype, error))
    return FALSE;
  if (ctx->opset < 13)
    return graft_lower_fail (error, node, "needs ONNX opset 13 or later (ReduceSum with axes as an input)");
  if (!(p > 0))
    return graft_lower_fail (error, node, "a norm of order %g has no ONNX lowering yet (orders above 0 and inf do)", p);
  if (dtype >= 0)
    x = graft_lower_cast (ctx, x, graft_dtype_from_torch_scalar_type (dtype));
  GraftDType type = graft_lower_dtype (ctx, x);
  GraftValue *magnitude = graft_lower_op (ctx, "Abs", 1, x);
  GraftNode *r;
  if (isinf (p))
    {
      r = graft_lower_node (ctx, "ReduceMax", 1, ctx->opset >= 18 ? 2 : 1, magnitude,
                            ctx->opset >= 18 ? graft_lower_const_ints (ctx, axes, n, FALSE) : NULL);
      if (ctx->opset < 18)
        add_ints (r, "axes", axes, n);
    }
  else
    {
      GraftValue *powered = p == 1 ? magnitude
                            : p == 2 ? graft_lower_op (ctx, "Mul", 2, x, x)
                            : graft_lower_op (ctx, "Pow", 2, magnitude, graft_lower_const_scalar (ctx, type, p));
      r = graft_lower_node (ctx, "ReduceSum", 1, 2, powered, n > 0 ? graft_lower_const_ints (ctx, axes, n, FALSE) : NULL);
    }
  graft_node_add_attribute (r, graft_attribute_new_int ("keepdims", keepdim));
  GraftValue *y = graft_lower_finish (ctx, r);
  if (p == 2)
    y = graft_lower_op (ctx, "Sqrt", 1, y);
  else if (!isinf (p) && p != 1)
    y = graft_lower_op (ctx, "Pow", 2, y, graft_lower_const_scalar (ctx, type, 1.0 / p));
  graft_lower_set_output (ctx, node, 0, y);
  return TRUE;
}

/* ---- sizes ---- */

static LowerValue *
int_constant (gint64 value)
{
  g_autoptr(GraftAttribute) a = graft_attribute_new_int ("value", value);
  return graft_lower_value_const (a);
}

/* Dim d of x: a constant when fixed, else Shape → Gather (a 0-d int64). */
static LowerValue *
dim_value (GraftLowerContext *ctx, GraftValue *x, gint64 d)
{
  const GraftShape *s = graft_lower_shape (ctx, x);
  if (s->rank > d && s->dims[d].kind == GRAFT_DIM_FIXED)
    return int_constant (s->dims[d].value);
  GraftNode *gather = graft_lower_node (ctx, "Gather", 1, 2, graft_lower_op (ctx, "Shape", 1, x),
                                        graft_lower_const_ints (ctx, &d, 1, TRUE));
  graft_node_add_attribute (gather, graft_attribute_new_int ("axis", 0));
  return graft_lower_value_tensor (graft_lower_finish (ctx, gather), TRUE);
}

/* size(self) → a list of dims; size(self, dim) → one dim */
static gboolean
lower_size (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  if (x == NULL)
    return FALSE;
  int rank = graft_lower_rank (ctx, x);
  if (!graft_lower_arg_is_none (ctx, node, 1))
    {
      gint64 dim;
      if (!graft_lower_arg_int (ctx, node, 1, 0, &dim, error))
        return FALSE;
      if (dim < 0 && (rank < 0 || !normalize_dim (node, &dim, rank, error)))
        return rank < 0 ? graft_lower_fail (error, node, "a negative dim needs the input's rank") : FALSE;
      graft_lower_bind (ctx, g_ptr_array_index (node->outputs, 0), dim_value (ctx, x, dim));
      return TRUE;
    }
  if (rank < 0)
    return graft_lower_fail (error, node, "needs the rank of its input; give the inputs' shapes");
  LowerValue *list = graft_lower_value_list ();
  for (int d = 0; d < rank; d++)
    g_ptr_array_add (list->items, dim_value (ctx, x, d));
  graft_lower_bind (ctx, g_ptr_array_index (node->outputs, 0), list);
  return TRUE;
}

static gboolean
lower_dim (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  int rank;
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  if (x == NULL || !graft_lower_need_rank (ctx, x, &rank, error))
    return FALSE;
  graft_lower_bind (ctx, g_ptr_array_index (node->outputs, 0), int_constant (rank));
  return TRUE;
}

/* The int argument k as a 0-d int64 tensor (constants become initializers). */
static GraftValue *
int_scalar_arg (GraftLowerContext *ctx, GraftNode *node, guint k, GError **error)
{
  GraftValue *v = graft_lower_arg_tensor (ctx, node, k, error);
  return v ? graft_lower_op (ctx, "Reshape", 2, graft_lower_cast (ctx, v, GRAFT_DTYPE_INT64),
                             graft_lower_const_ints (ctx, NULL, 0, FALSE)) : NULL;
}

static gboolean
all_constant (GraftLowerContext *ctx, GraftNode *node, guint n)
{
  for (guint k = 0; k < n; k++)
    {
      LowerValue *v = graft_lower_arg (ctx, node, k);
      if (v == NULL || v->kind != LOWER_CONST)
        return FALSE;
    }
  return TRUE;
}

/* What TorchScript makes of `for i in range(lo, hi, step)` (step a
 * constant): __range_length(lo, hi, step), the trip count, and
 * __derive_index(index, start, step) = start + index·step. Constants
 * fold; otherwise 0-d int64 arithmetic. */
static gboolean
lower_range_length (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gint64 step, lo, hi;
  if (!graft_lower_arg_int (ctx, node, 2, 1, &step, error))
    return FALSE;
  if (step == 0)
    return graft_lower_fail (error, node, "range() step must not be zero");
  if (all_constant (ctx, node, 2))
    {
      if (!graft_lower_arg_int (ctx, node, 0, 0, &lo, error) || !graft_lower_arg_int (ctx, node, 1, 0, &hi, error))
        return FALSE;
      gint64 n = step > 0 ? (lo < hi ? (hi - lo - 1) / step + 1 : 0) : (lo > hi ? (lo - hi - 1) / -step + 1 : 0);
      graft_lower_bind (ctx, g_ptr_array_index (node->outputs, 0), int_constant (n));
      return TRUE;
    }
  GraftValue *a = int_scalar_arg (ctx, node, 0, error), *b = a ? int_scalar_arg (ctx, node, 1, error) : NULL;
  if (b == NULL)
    return FALSE;
  gint64 size = ABS (step);
  GraftValue *span = step > 0 ? graft_lower_op (ctx, "Sub", 2, b, a) : graft_lower_op (ctx, "Sub", 2, a, b);
  GraftValue *count = graft_lower_op (ctx, "Div", 2, graft_lower_op (ctx, "Add", 2, span, graft_lower_const_scalar (ctx, GRAFT_DTYPE_INT64, size - 1)),
                                      graft_lower_const_scalar (ctx, GRAFT_DTYPE_INT64, size));
  graft_lower_set_output_scalar (ctx, node, 0,
                                 graft_lower_op (ctx, "Max", 2, count, graft_lower_const_scalar (ctx, GRAFT_DTYPE_INT64, 0)));
  return TRUE;
}

static gboolean
lower_derive_index (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gint64 index, start, step;
  if (all_constant (ctx, node, 3))
    {
      if (!graft_lower_arg_int (ctx, node, 0, 0, &index, error) || !graft_lower_arg_int (ctx, node, 1, 0, &start, error) ||
          !graft_lower_arg_int (ctx, node, 2, 1, &step, error))
        return FALSE;
      graft_lower_bind (ctx, g_ptr_array_index (node->outputs, 0), int_constant (start + index * step));
      return TRUE;
    }
  GraftValue *i = int_scalar_arg (ctx, node, 0, error), *first = i ? int_scalar_arg (ctx, node, 1, error) : NULL;
  GraftValue *by = first ? int_scalar_arg (ctx, node, 2, error) : NULL;
  if (by == NULL)
    return FALSE;
  graft_lower_set_output_scalar (ctx, node, 0, graft_lower_op (ctx, "Add", 2, first, graft_lower_op (ctx, "Mul", 2, i, by)));
  return TRUE;
}

static gboolean
lower_len (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  LowerValue *v = graft_lower_arg (ctx, node, 0);
  if (v != NULL && v->kind == LOWER_LIST)
    {
      graft_lower_bind (ctx, g_ptr_array_index (node->outputs, 0), int_constant (v->items->len));
      return TRUE;
    }
  if (v != NULL && v->kind == LOWER_CONST && (v->constant->type == GRAFT_ATTR_INTS || v->constant->type == GRAFT_ATTR_FLOATS ||
                                               v->constant->type == GRAFT_ATTR_STRING))
    {
      gsize n = v->constant->type == GRAFT_ATTR_INTS ? v->constant->ints->len
                : v->constant->type == GRAFT_ATTR_FLOATS ? v->constant->floats->len
                : g_utf8_strlen (g_bytes_get_data (v->constant->s, NULL), g_bytes_get_size (v->constant->s));
      graft_lower_bind (ctx, g_ptr_array_index (node->outputs, 0), int_constant (n));
      return TRUE;
    }
  if (v != NULL && v->kind == LOWER_TENSOR)
    {
      graft_lower_bind (ctx, g_ptr_array_index (node->outputs, 0), dim_value (ctx, v->value, 0));
      return TRUE;
    }
  if (v != NULL && v->kind == LOWER_SEQUENCE)
    {
      graft_lower_set_output_scalar (ctx, node, 0, graft_lower_op (ctx, "SequenceLength", 1, v->value));
      return TRUE;
    }
  return graft_lower_fail (error, node, "the length of this value is not known while converting");
}

/* list[index] with a constant index, or a tensor's row */
static gboolean
lower_getitem (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  LowerValue *v = graft_lower_arg (ctx, node, 0);
  LowerValue *index = graft_lower_arg (ctx, node, 1);
  gint64 i;
  if (v == NULL)
    return graft_lower_fail (error, node, "has no operand");
  if (v->kind == LOWER_LIST && v->is_dict)
    {
      gint at;
      if (!graft_lower_dict_find (v, index, &at))
        return graft_lower_fail (error, node, "a dict key is not a constant while converting");
      if (at < 0)
        return graft_lower_fail (error, node, "the dict has no such key (KeyError in PyTorch)");
      graft_lower_bind (ctx, g_ptr_array_index (node->outputs, 0), graft_lower_value_copy (v->items->pdata[at + 1]));
      return TRUE;
    }
  if (v->kind == LOWER_SEQUENCE)
    {
      /* list[i] of a list grown at run time (negative i counts from the end, as in ONNX) */
      GraftValue *at = graft_lower_arg_tensor (ctx, node, 1, error);
      if (at == NULL)
        return FALSE;
      GraftValue *item = graft_lower_op (ctx, "SequenceAt", 2, v->value, graft_lower_cast (ctx, at, GRAFT_DTYPE_INT64));
      GraftShape shape;
      graft_shape_init (&shape, graft_lower_rank (ctx, v->value));
      _graft_lower_declare_type (ctx, item, graft_lower_dtype (ctx, v->value), &shape);
      graft_shape_clear (&shape);
      GraftValue *source_out = g_ptr_array_index (node->outputs, 0);
      gboolean scalar = source_out->type_string != NULL && (strcmp (source_out->type_string, "int") == 0 ||
                                                            strcmp (source_out->type_string, "float") == 0 ||
                                                            strcmp (source_out->type_string, "bool") == 0);
      if (scalar)
        graft_lower_set_output_scalar (ctx, node, 0, item);
      else
        graft_lower_set_output (ctx, node, 0, item);
      return TRUE;
    }
  if (index != NULL && index->kind == LOWER_CONST && (v->kind == LOWER_LIST || v->kind == LOWER_CONST))
    {
      if (!graft_lower_arg_int (ctx, node, 1, 0, &i, error))
        return FALSE;
      guint n = v->kind == LOWER_LIST ? v->items->len
                : v->constant->type == GRAFT_ATTR_INTS ? v->constant->ints->len : 0;
      if (i < 0)
        i += n;
      if (i < 0 || i >= (gint64) n)
        return graft_lower_fail (error, node, "index %" G_GINT64_FORMAT " is out of range for %u items", i, n);
      graft_lower_bind (ctx, g_ptr_array_index (node->outputs, 0),
                        v->kind == LOWER_LIST ? graft_lower_value_copy (v->items->pdata[i])
                        : int_constant (g_array_index (v->constant->ints, gint64, i)));
      return TRUE;
    }
  if (v->kind == LOWER_LIST)
    {
      /* A runtime index into a list of scalars: Gather from their vector. */
      GraftValue *vector = graft_lower_arg_int_vector (ctx, node, 0, error);
      GraftValue *at = vector ? graft_lower_arg_tensor (ctx, node, 1, error) : NULL;
      if (at == NULL)
        return FALSE;
      graft_lower_set_output_scalar (ctx, node, 0, graft_lower_op (ctx, "Gather", 2, vector,
                                                                   graft_lower_cast (ctx, at, GRAFT_DTYPE_INT64)));
      return TRUE;
    }
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  GraftValue *at = x ? graft_lower_arg_tensor (ctx, node, 1, error) : NULL;
  if (at == NULL)
    return FALSE;
  graft_lower_set_output (ctx, node, 0, graft_lower_op (ctx, "Gather", 2, x, graft_lower_cast (ctx, at, GRAFT_DTYPE_INT64)));
  return TRUE;
}

/* gather(self, dim, index, sparse_grad) → GatherElements;
 * index_select(self, dim, index) → Gather */
static gboolean
lower_gather (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gint64 dim;
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  GraftValue *index = x ? graft_lower_arg_tensor (ctx, node, 2, error) : NULL;
  if (index == NULL || !graft_lower_arg_int (ctx, node, 1, 0, &dim, error))
    return FALSE;
  gboolean select = strcmp (node->op_type, "index_select") == 0;
  GraftNode *gather = graft_lower_node (ctx, select ? "Gather" : "GatherElements", 1, 2, x,
                                        graft_lower_cast (ctx, index, GRAFT_DTYPE_INT64));
  graft_node_add_attribute (gather, graft_attribute_new_int ("axis", dim));
  graft_lower_set_output (ctx, node, 0, graft_lower_finish (ctx, gather));
  return TRUE;
}

/* How many items an int list argument has (constant or of symbolic sizes); -1 when not a list. */
static gint64
list_count (LowerValue *v)
{
  if (v != NULL && v->kind == LOWER_LIST)
    return v->items->len;
  if (v != NULL && v->kind == LOWER_CONST && v->constant->type == GRAFT_ATTR_INTS)
    return v->constant->ints->len;
  return -1;
}

/* repeat(self, repeats) → Tile, with leading axes added where repeats is longer than the rank */
static gboolean
lower_repeat (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  int rank;
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  gint64 n = list_count (graft_lower_arg (ctx, node, 1));
  GraftValue *repeats = x ? graft_lower_arg_int_vector (ctx, node, 1, error) : NULL;
  if (repeats == NULL || !graft_lower_need_rank (ctx, x, &rank, error))
    return FALSE;
  if (n < 0)
    return graft_lower_fail (error, node, "the number of repeats is not known while converting");
  if (n > rank)
    {
      gint64 axes[MAX_RANK];
      if (n > MAX_RANK)
        return graft_lower_fail (error, node, "rank %" G_GINT64_FORMAT, n);
      for (gint64 i = 0; i < n - rank; i++)
        axes[i] = i;
      x = graft_lower_op (ctx, "Unsqueeze", 2, x, graft_lower_const_ints (ctx, axes, n - rank, FALSE));
    }
  graft_lower_set_output (ctx, node, 0, graft_lower_op (ctx, "Tile", 2, x, repeats));
  return TRUE;
}

/* triu / tril(self, diagonal) → Trilu */
static gboolean
lower_trilu (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gint64 diagonal;
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  if (x == NULL || !graft_lower_arg_int (ctx, node, 1, 0, &diagonal, error))
    return FALSE;
  GraftNode *t = graft_lower_node (ctx, "Trilu", 1, 2, x, graft_lower_const_ints (ctx, &diagonal, 1, TRUE));
  graft_node_add_attribute (t, graft_attribute_new_int ("upper", g_str_has_prefix (node->op_type, "triu")));
  graft_lower_set_output (ctx, node, 0, graft_lower_finish (ctx, t));
  return TRUE;
}

/* unflatten(self, dim, sizes): the dim becomes sizes (one may be -1) */
static gboolean
lower_unflatten (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gint64 dim;
  int rank;
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  GraftValue *sizes = x ? graft_lower_arg_int_vector (ctx, node, 2, error) : NULL;
  if (sizes == NULL || !graft_lower_arg_int (ctx, node, 1, 0, &dim, error) || !graft_lower_need_rank (ctx, x, &rank, error) ||
      !normalize_dim (node, &dim, rank, error))
    return FALSE;
  GraftValue *shape = graft_lower_op (ctx, "Shape", 1, x);
  g_autoptr(GPtrArray) parts = g_ptr_array_new ();
  if (dim > 0)
    g_ptr_array_add (parts, slice_vector (ctx, shape, 0, dim));
  g_ptr_array_add (parts, sizes);
  if (dim < rank - 1)
    g_ptr_array_add (parts, slice_vector (ctx, shape, dim + 1, rank));
  graft_lower_set_output (ctx, node, 0, graft_lower_op (ctx, "Reshape", 2, x, graft_lower_concat (ctx, parts, 0)));
  return TRUE;
}

/* view_as / reshape_as / expand_as(self, other): other's shape */
static gboolean
lower_as (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  GraftValue *other = x ? graft_lower_arg_tensor (ctx, node, 1, error) : NULL;
  if (other == NULL)
    return FALSE;
  const char *op = g_str_has_prefix (node->op_type, "expand") ? "Expand" : "Reshape";
  GraftValue *y = graft_lower_op (ctx, op, 2, x, graft_lower_op (ctx, "Shape", 1, other));
  /* The shape is other's, though Shape's value is only known at run time:
   * what follows may need the rank (F.normalize's x / norm.expand_as(x)
   * before a transpose, in EdgeNeXt). */
  if (graft_lower_rank (ctx, y) < 0 && graft_lower_rank (ctx, other) >= 0)
    _graft_lower_declare_type (ctx, y, graft_lower_dtype (ctx, x), graft_lower_shape (ctx, other));
  graft_lower_set_output (ctx, node, 0, y);
  return TRUE;
}

/* new_zeros / new_ones / new_empty(self, size, dtype, …), new_full(self,
 * size, fill_value, dtype, …): self's dtype unless one is given */
static gboolean
lower_new_fill (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gboolean full = strcmp (node->op_type, "new_full") == 0;
  double value = strcmp (node->op_type, "new_ones") == 0 ? 1 : 0;
  gint64 code;
  GraftValue *self = graft_lower_arg_tensor (ctx, node, 0, error);
  GraftValue *shape = self ? graft_lower_arg_int_vector (ctx, node, 1, error) : NULL;
  LowerValue *fill = full ? graft_lower_arg (ctx, node, 2) : NULL;
  gboolean run_time = fill != NULL && fill->kind == LOWER_TENSOR;  /* a traced number (YOLO's stride) */
  if (shape == NULL || (full && !run_time && !graft_lower_arg_double (ctx, node, 2, 0, &value, error)) ||
      !graft_lower_arg_int (ctx, node, full ? 3 : 2, -1, &code, error))
    return FALSE;
  GraftDType dtype = code >= 0 ? graft_dtype_from_torch_scalar_type (code) : graft_lower_dtype (ctx, self);
  GraftValue *y = run_time ? graft_lower_op (ctx, "Expand", 2, graft_lower_cast (ctx, fill->value, dtype), shape)
                           : filled (ctx, shape, dtype, value);
  declare_from_size_list (ctx, y, dtype, graft_lower_arg (ctx, node, 1));
  graft_lower_set_output (ctx, node, 0, y);
  return TRUE;
}

/* linspace(start, end, steps, dtype, …): with a constant count, the
 * values PyTorch computes (from start for the first half, back from end
 * for the rest) as a constant; with a count known at run time,
 * start + Range(0, steps)·(end − start)/(steps − 1) */
static gboolean
lower_linspace (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  double start, end;
  gint64 code, steps;
  if (!graft_lower_arg_double (ctx, node, 0, 0, &start, error) || !graft_lower_arg_double (ctx, node, 1, 0, &end, error) ||
      !graft_lower_arg_int (ctx, node, 3, 6, &code, error))
    return FALSE;
  GraftDType dtype = graft_dtype_from_torch_scalar_type (code);
  LowerValue *count = graft_lower_arg (ctx, node, 2);
  if (count != NULL && count->kind == LOWER_TENSOR)
    {
      GraftValue *n = graft_lower_op (ctx, "Reshape", 2, graft_lower_cast (ctx, count->value, GRAFT_DTYPE_INT64),
                                      graft_lower_const_ints (ctx, NULL, 0, FALSE));
      GraftValue *index = graft_lower_op (ctx, "Range", 3, graft_lower_const_scalar (ctx, GRAFT_DTYPE_INT64, 0), n,
                                          graft_lower_const_scalar (ctx, GRAFT_DTYPE_INT64, 1));
      GraftValue *gaps = graft_lower_op (ctx, "Max", 2, graft_lower_op (ctx, "Sub", 2, n, graft_lower_const_scalar (ctx, GRAFT_DTYPE_INT64, 1)),
                                         graft_lower_const_scalar (ctx, GRAFT_DTYPE_INT64, 1));
      GraftValue *step = graft_lower_op (ctx, "Div", 2, graft_lower_const_scalar (ctx, GRAFT_DTYPE_FLOAT32, end - start),
                                         graft_lower_cast (ctx, gaps, GRAFT_DTYPE_FLOAT32));
      GraftValue *y = graft_lower_op (ctx, "Add", 2, graft_lower_const_scalar (ctx, GRAFT_DTYPE_FLOAT32, start),
                                      graft_lower_op (ctx, "Mul", 2, graft_lower_cast (ctx, index, GRAFT_DTYPE_FLOAT32), step));
      graft_lower_set_output (ctx, node, 0, graft_lower_cast (ctx, y, dtype));
      return TRUE;
    }
  if (!graft_lower_arg_int (ctx, node, 2, 0, &steps, error))
    return FALSE;
  if (steps < 0 || steps > (1 << 24))
    return graft_lower_fail (error, node, "linspace of %" G_GINT64_FORMAT " steps", steps);
  g_autofree float *values = g_new0 (float, MAX (steps, 1));
  float a = (float) start, b = (float) end, step = steps > 1 ? (b - a) / (float) (steps - 1) : 0;
  for (gint64 i = 0; i < steps; i++)
    values[i] = i < steps / 2 ? a + step * (float) i : b - step * (float) (steps - i - 1);
  GraftTensor *t = graft_tensor_new (NULL, GRAFT_DTYPE_FLOAT32, 1, &steps);
  g_autoptr(GBytes) bytes = g_bytes_new_take (g_steal_pointer (&values), steps * sizeof (float));
  graft_tensor_set_data (t, bytes, NULL);
  graft_lower_set_output (ctx, node, 0, graft_lower_cast (ctx, _graft_lower_add_constant (ctx, t), dtype));
  return TRUE;
}

/* tensor(data, dtype, device, requires_grad): a number, a 0-d value or a
 * list of them as a tensor (0-d or 1-D) — Swin's mask values, RAFT's
 * channel count. PyTorch's types: int64, float32, bool unless dtype says. */
static gboolean
lower_tensor (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gint64 code;
  LowerValue *data = graft_lower_arg (ctx, node, 0);
  if (data == NULL || !graft_lower_arg_int (ctx, node, 1, -1, &code, error))
    return FALSE;
  GraftValue *y;
  if (data->kind == LOWER_LIST)
    {
      g_autoptr(GPtrArray) parts = g_ptr_array_new ();
      GraftDType common = GRAFT_DTYPE_INT64;
      for (guint k = 0; k < data->items->len; k++)
        {
          LowerValue *item = data->items->pdata[k];
          if (item->kind == LOWER_LIST || item->kind == LOWER_NONE || item->kind == LOWER_SEQUENCE)
            return graft_lower_fail (error, node, "tensor() of nested lists");
          GraftValue *v = item->kind == LOWER_TENSOR ? item->value : graft_lower_const_attribute (ctx, item->constant, error);
          if (v == NULL)
            return FALSE;
          if (graft_dtype_is_float (graft_lower_dtype (ctx, v)))
            common = GRAFT_DTYPE_FLOAT32;
          g_ptr_array_add (parts, graft_lower_op (ctx, "Reshape", 2, v, graft_lower_const_int (ctx, 1)));
        }
      if (parts->len == 0)
        return graft_lower_fail (error, node, "tensor() of an empty list");
      for (guint k = 0; k < parts->len; k++)
        parts->pdata[k] = graft_lower_cast (ctx, parts->pdata[k], common);
      y = graft_lower_concat (ctx, parts, 0);
    }
  else if (data->kind == LOWER_TENSOR || data->kind == LOWER_CONST)
    {
      y = graft_lower_arg_tensor (ctx, node, 0, error);
      if (y == NULL)
        return FALSE;
      if (graft_lower_dtype (ctx, y) == GRAFT_DTYPE_FLOAT64)
        y = graft_lower_cast (ctx, y, GRAFT_DTYPE_FLOAT32);
    }
  else
    return graft_lower_fail (error, node, "tensor() of a value that is neither a number nor a list");
  if (code >= 0)
    y = graft_lower_cast (ctx, y, graft_dtype_from_torch_scalar_type (code));
  graft_lower_set_output (ctx, node, 0, y);
  return TRUE;
}

/* argmax / argmin(self, dim, keepdim); over everything without a dim */
static gboolean
lower_argmax (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gint64 dim, keepdim;
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  if (x == NULL || !graft_lower_arg_int (ctx, node, 2, 0, &keepdim, error))
    return FALSE;
  gboolean all = graft_lower_arg_is_none (ctx, node, 1);
  if (all)
    {
      x = graft_lower_op (ctx, "Reshape", 2, x, graft_lower_const_int (ctx, -1));
      dim = 0;
      keepdim = 0;
    }
  else if (!graft_lower_arg_int (ctx, node, 1, 0, &dim, error))
    return FALSE;
  GraftNode *arg = graft_lower_node (ctx, strcmp (node->op_type, "argmax") == 0 ? "ArgMax" : "ArgMin", 1, 1, x);
  graft_node_add_attribute (arg, graft_attribute_new_int ("axis", dim));
  graft_node_add_attribute (arg, graft_attribute_new_int ("keepdims", keepdim));
  graft_lower_set_output (ctx, node, 0, graft_lower_finish (ctx, arg));
  return TRUE;
}

/* index(self, indices): torch's advanced indexing, for the forms models
 * use: one index tensor at any dim (Gather there), several that start at
 * dim 0 and broadcast together (GatherND of their stacked values), or one
 * boolean mask over the leading dims (GatherND at its true positions). */
static gboolean
lower_index (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  LowerValue *list = x ? graft_lower_arg (ctx, node, 1) : NULL;
  if (x == NULL)
    return FALSE;
  if (list == NULL || list->kind != LOWER_LIST)
    return graft_lower_fail (error, node, "the index list is not known while converting");
  g_autoptr(GPtrArray) indices = g_ptr_array_new ();
  gint64 first = -1;
  for (guint i = 0; i < list->items->len; i++)
    {
      LowerValue *item = list->items->pdata[i];
      if (item->kind == LOWER_NONE)
        {
          if (first >= 0)
            return graft_lower_fail (error, node, "an index tensor after a skipped dim after another index");
          continue;
        }
      if (item->kind != LOWER_TENSOR)
        return graft_lower_fail (error, node, "index %u is not a tensor", i);
      if (first < 0)
        first = i;
      g_ptr_array_add (indices, item->value);
    }
  if (indices->len == 0)
    return graft_lower_fail (error, node, "has no index tensor");
  GraftValue *index = indices->pdata[0];
  if (indices->len == 1 && graft_lower_dtype (ctx, index) == GRAFT_DTYPE_BOOL)
    {
      if (first != 0)
        return graft_lower_fail (error, node, "a boolean mask after a skipped dim");
      GraftNode *t = graft_lower_node (ctx, "Transpose", 1, 1, graft_lower_op (ctx, "NonZero", 1, index));
      graft_node_add_attribute (t, graft_attribute_new_ints ("perm", (gint64[]) { 1, 0 }, 2));
      graft_lower_set_output (ctx, node, 0, graft_lower_op (ctx, "GatherND", 2, x, graft_lower_finish (ctx, t)));
      return TRUE;
    }
  if (indices->len == 1)
    {
      GraftNode *gather = graft_lower_node (ctx, "Gather", 1, 2, x, graft_lower_cast (ctx, index, GRAFT_DTYPE_INT64));
      graft_node_add_attribute (gather, graft_attribute_new_int ("axis", first));
      graft_lower_set_output (ctx, node, 0, graft_lower_finish (ctx, gather));
      return TRUE;
    }
  if (first != 0)
    return graft_lower_fail (error, node, "several index tensors after a skipped dim");
  /* the indices broadcast to one shape (their sum's), then stacked on a new last axis */
  GraftValue *sum = NULL;
  for (guint i = 0; i < indices->len; i++)
    {
      indices->pdata[i] = graft_lower_cast (ctx, indices->pdata[i], GRAFT_DTYPE_INT64);
      sum = sum ? graft_lower_op (ctx, "Add", 2, sum, indices->pdata[i]) : indices->pdata[i];
    }
  GraftValue *shape = graft_lower_op (ctx, "Shape", 1, sum);
  g_autoptr(GPtrArray) parts = g_ptr_array_new ();
  for (guint i = 0; i < indices->len; i++)
    g_ptr_array_add (parts, graft_lower_op (ctx, "Unsqueeze", 2, graft_lower_op (ctx, "Expand", 2, indices->pdata[i], shape),
                                            graft_lower_const_int (ctx, -1)));
  graft_lower_set_output (ctx, node, 0, graft_lower_op (ctx, "GatherND", 2, x, graft_lower_concat (ctx, parts, -1)));
  return TRUE;
}

/* flip(self, dims): a Slice backwards over each dim */
static gboolean
lower_flip (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gint64 dims[MAX_RANK], starts[MAX_RANK], ends[MAX_RANK], steps[MAX_RANK];
  guint n;
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  if (x == NULL || !graft_lower_arg_ints (ctx, node, 1, dims, MAX_RANK, &n, 0, error))
    return FALSE;
  if (n == 0)
    {
      graft_lower_bind (ctx, g_ptr_array_index (node->outputs, 0), graft_lower_value_copy (graft_lower_arg (ctx, node, 0)));
      return TRUE;
    }
  for (guint i = 0; i < n; i++)
    starts[i] = -1, ends[i] = G_MININT64, steps[i] = -1;
  graft_lower_set_output (ctx, node, 0, graft_lower_op (ctx, "Slice", 5, x, graft_lower_const_ints (ctx, starts, n, FALSE),
                                                        graft_lower_const_ints (ctx, ends, n, FALSE),
                                                        graft_lower_const_ints (ctx, dims, n, FALSE),
                                                        graft_lower_const_ints (ctx, steps, n, FALSE)));
  return TRUE;
}

/* meshgrid(tensors, indexing): each 1-D tensor reshaped to its own axis
 * and expanded to the grid of all their lengths ("xy" swaps the first two) */
static gboolean
lower_meshgrid (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  LowerValue *list = graft_lower_arg (ctx, node, 0), *indexing = graft_lower_arg (ctx, node, 1);
  if (list == NULL || list->kind != LOWER_LIST || list->items->len == 0 || list->items->len > MAX_RANK)
    return graft_lower_fail (error, node, "the tensor list is not known while converting");
  g_autofree char *mode = indexing && indexing->kind == LOWER_CONST ? graft_attribute_dup_string (indexing->constant) : NULL;
  gboolean xy = mode != NULL && strcmp (mode, "xy") == 0 && list->items->len >= 2;
  guint n = list->items->len;
  g_autoptr(GPtrArray) lengths = g_ptr_array_new ();
  for (guint i = 0; i < n; i++)
    {
      guint source = xy && i < 2 ? 1 - i : i;
      LowerValue *item = list->items->pdata[source];
      if (item->kind != LOWER_TENSOR)
        return graft_lower_fail (error, node, "item %u is not a tensor", source);
      g_ptr_array_add (lengths, graft_lower_op (ctx, "Shape", 1, item->value));
    }
  GraftValue *grid = graft_lower_concat (ctx, lengths, 0);
  LowerValue *out = graft_lower_value_list ();
  for (guint i = 0; i < n; i++)
    {
      guint axis = xy && i < 2 ? 1 - i : i;
      gint64 shape[MAX_RANK];
      for (guint d = 0; d < n; d++)
        shape[d] = d == axis ? -1 : 1;
      GraftValue *t = ((LowerValue *) list->items->pdata[i])->value;
      t = graft_lower_op (ctx, "Reshape", 2, t, graft_lower_const_ints (ctx, shape, n, FALSE));
      GraftValue *expanded = graft_lower_op (ctx, "Expand", 2, t, grid);
      if (graft_lower_rank (ctx, expanded) < 0)
        {
          /* the grid's lengths are run-time values: its rank is still the number of tensors */
          GraftShape rank_only;
          graft_shape_init (&rank_only, n);
          _graft_lower_declare_type (ctx, expanded, graft_lower_dtype (ctx, t), &rank_only);
          graft_shape_clear (&rank_only);
        }
      g_ptr_array_add (out->items, graft_lower_value_tensor (expanded, FALSE));
    }
  if (node->outputs->len > 1)
    {
      for (guint i = 0; i < node->outputs->len && i < n; i++)
        graft_lower_bind (ctx, g_ptr_array_index (node->outputs, i), graft_lower_value_copy (out->items->pdata[i]));
      graft_lower_value_free (out);
      return TRUE;
    }
  graft_lower_bind (ctx, g_ptr_array_index (node->outputs, 0), out);
  return TRUE;
}

/* diff(self, n, dim, prepend, append): x[1:] - x[:-1] along dim, once */
static gboolean
lower_diff (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gint64 n, dim;
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  if (x == NULL || !graft_lower_arg_int (ctx, node, 1, 1, &n, error) || !graft_lower_arg_int (ctx, node, 2, -1, &dim, error))
    return FALSE;
  if (n != 1)
    return graft_lower_fail (error, node, "a difference of order %" G_GINT64_FORMAT, n);
  g_autoptr(GPtrArray) parts = g_ptr_array_new ();
  for (guint k = 3; k <= 4; k++)
    {
      if (k == 4)
        g_ptr_array_add (parts, x);
      if (graft_lower_arg_is_none (ctx, node, k))
        continue;
      GraftValue *extra = graft_lower_arg_like (ctx, node, k, x, error);
      if (extra == NULL)
        return FALSE;
      g_ptr_array_add (parts, extra);
    }
  if (parts->len > 1)
    x = graft_lower_concat (ctx, parts, dim);
  GraftValue *axis = graft_lower_const_int (ctx, dim);
  GraftValue *later = graft_lower_op (ctx, "Slice", 4, x, graft_lower_const_int (ctx, 1), graft_lower_const_int (ctx, G_MAXINT64), axis);
  GraftValue *earlier = graft_lower_op (ctx, "Slice", 4, x, graft_lower_const_int (ctx, 0), graft_lower_const_int (ctx, -1), axis);
  graft_lower_set_output (ctx, node, 0, graft_lower_op (ctx, "Sub", 2, later, earlier));
  return TRUE;
}

const GraftLowering graft_lowerings_shape[] = {
  { "aten::flatten", 0, lower_flatten, "self start_dim end_dim" },
  { "aten::view", 0, lower_reshape, "self size" },
  { "aten::reshape", 0, lower_reshape, "self shape" },
  { "aten::permute", 0, lower_permute, "self dims" },
  { "aten::transpose", 0, lower_transpose, "self dim0 dim1" },
  { "aten::t", 0, lower_transpose, "self" },
  { "aten::unsqueeze", 0, lower_unsqueeze, "self dim" },
  { "aten::squeeze", 0, lower_squeeze, "self dim" },
  { "aten::cat", 0, lower_cat, "tensors dim" },
  { "aten::concat", 0, lower_cat, "tensors dim" },
  { "aten::stack", 0, lower_cat, "tensors dim" },
  { "aten::chunk", 0, lower_split, "self chunks dim" },
  { "aten::split", 0, lower_split, "self split_size dim" },
  { "aten::split_with_sizes", 0, lower_split, "self split_sizes dim" },
  { "aten::unbind", 0, lower_split, "self dim" },
  { "aten::slice", 0, lower_slice, "self dim start end step" },
  { "aten::select", 0, lower_select, "self dim index" },
  { "aten::roll", 0, lower_roll, "self shifts dims" },
  { "aten::tensor", 0, lower_tensor, "data dtype device requires_grad" },
  { "aten::linspace", 0, lower_linspace, "start end steps dtype layout device pin_memory" },
  { "aten::fill_", 0, lower_fill_in_place, "self value" },
  { "aten::copy_", 0, lower_copy, "self src non_blocking" },
  { "aten::copy", 0, lower_copy, "self src non_blocking" },
  { "aten::expand", 0, lower_expand, "self size implicit" },
  { "aten::expand_as", 0, lower_as, "self other" },
  { "aten::view_as", 0, lower_as, "self other" },
  { "aten::reshape_as", 0, lower_as, "self other" },
  { "aten::unflatten", 0, lower_unflatten, "self dim sizes" },
  { "aten::gather", 0, lower_gather, "self dim index sparse_grad" },
  { "aten::index", 0, lower_index, "self indices" },
  { "aten::diff", 0, lower_diff, "self n dim prepend append" },
  { "aten::meshgrid", 0, lower_meshgrid, "tensors indexing" },
  { "aten::flip", 0, lower_flip, "self dims" },
  { "aten::index_select", 0, lower_gather, "self dim index" },
  { "aten::repeat", 0, lower_repeat, "self repeats" },
  { "aten::triu", 14, lower_trilu, "self diagonal" },
  { "aten::tril", 14, lower_trilu, "self diagonal" },
  { "aten::argmax", 0, lower_argmax, "self dim keepdim" },
  { "aten::argmin", 0, lower_argmax, "self dim keepdim" },
  { "aten::new_zeros", 0, lower_new_fill, "self size dtype layout device pin_memory" },
  { "aten::new_ones", 0, lower_new_fill, "self size dtype layout device pin_memory" },
  { "aten::new_empty", 0, lower_new_fill, "self size dtype layout device pin_memory" },
  { "aten::new_full", 0, lower_new_fill, "self size fill_value dtype layout device pin_memory" },
  { "aten::mean", 0, lower_reduce, "self dim keepdim dtype" },
  { "aten::sum", 0, lower_reduce, "self dim keepdim dtype" },
  { "aten::linalg_vector_norm", 0, lower_vector_norm, "self ord dim keepdim dtype" },
  { "aten::norm", 0, lower_vector_norm, "self p dim keepdim" },
  { "aten::zeros", 0, lower_fill, "size dtype layout device pin_memory" },
  { "aten::ones", 0, lower_fill, "size dtype layout device pin_memory" },
  { "aten::full", 0, lower_fill, "size fill_value dtype layout device pin_memory" },
  { "aten::zeros_like", 0, lower_fill, "self dtype layout device pin_memory memory_format" },
  { "aten::ones_like", 0, lower_fill, "self dtype layout device pin_memory memory_format" },
  { "aten::full_like", 0, lower_fill, "self fill_value dtype layout device pin_memory memory_format" },
  { "aten::arange", 0, lower_arange, NULL },
  { "aten::max", 0, lower_max_min, "self dim keepdim" },
  { "aten::min", 0, lower_max_min, "self dim keepdim" },
  { "aten::amax", 0, lower_max_min, "self dim keepdim" },
  { "aten::amin", 0, lower_max_min, "self dim keepdim" },
  { "aten::size", 0, lower_size, "self dim" },
  /* torch.export's symbolic size: the same Shape → Gather, so that dims stay symbolic */
  { "aten::sym_size", 0, lower_size, "self dim" },
  { "aten::dim", 0, lower_dim, "self" },
  { "aten::len", 0, lower_len, "a" },
  { "aten::__range_length", 0, lower_range_length, "lo hi step" },
  { "aten::__derive_index", 0, lower_derive_index, "index start step" },
  { "aten::__getitem__", 0, lower_getitem, "list idx" },
  { NULL }
};
