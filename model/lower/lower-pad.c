/* Padding (constant, reflect, replicate, circular) and running sums: ops that keep
 * the input's layout and change or scan its trailing dims. */
#include "lower/lower-private.h"

#include <string.h>

#define MAX_RANK 8

/* A pad list whose values are computed while running (padding up to a
 * multiple of a size): the same reordering done with nodes on the int64
 * vector, [n/2, 2] → reversed → transposed → zeros for the leading dims. */
static GraftValue *
onnx_pads_computed (GraftLowerContext *ctx, GraftNode *node, guint k, guint n, int rank, GError **error)
{
  GraftValue *torch_pads = graft_lower_arg_int_vector (ctx, node, k, error);
  if (torch_pads == NULL)
    return NULL;
  gint64 pairs = n / 2;
  GraftValue *p = graft_lower_op (ctx, "Reshape", 2, torch_pads, graft_lower_const_ints (ctx, (gint64[]) { pairs, 2 }, 2, FALSE));
  p = graft_lower_op (ctx, "Slice", 5, p, graft_lower_const_int (ctx, -1), graft_lower_const_int (ctx, G_MININT64),
                      graft_lower_const_int (ctx, 0), graft_lower_const_int (ctx, -1));
  GraftNode *t = graft_lower_node (ctx, "Transpose", 1, 1, p);
  graft_node_add_attribute (t, graft_attribute_new_ints ("perm", (gint64[]) { 1, 0 }, 2));
  p = graft_lower_finish (ctx, t);
  if (rank > pairs)
    {
      gint64 zeros[2 * MAX_RANK] = { 0 };
      GraftValue *lead = graft_lower_op (ctx, "Reshape", 2, graft_lower_const_ints (ctx, zeros, 2 * (rank - pairs), FALSE),
                                         graft_lower_const_ints (ctx, (gint64[]) { 2, rank - pairs }, 2, FALSE));
      g_autoptr(GPtrArray) parts = g_ptr_array_new ();
      g_ptr_array_add (parts, lead);
      g_ptr_array_add (parts, p);
      p = graft_lower_concat (ctx, parts, 1);
    }
  return graft_lower_op (ctx, "Reshape", 2, p, graft_lower_const_int (ctx, 2 * rank));
}

/* torch's pad list runs from the last dim backwards, (begin, end) per dim:
 * [last_begin, last_end, prev_begin, prev_end, …]. ONNX's Pad takes all
 * begins then all ends, for every dim. */
static GraftValue *
onnx_pads (GraftLowerContext *ctx, GraftNode *node, guint k, int rank, GError **error)
{
  gint64 torch_pads[2 * MAX_RANK], pads[2 * MAX_RANK] = { 0 };
  guint n;
  LowerValue *list = graft_lower_arg (ctx, node, k);
  gboolean computed = FALSE;
  if (list != NULL && list->kind == LOWER_LIST)
    for (guint i = 0; i < list->items->len; i++)
      computed |= ((LowerValue *) list->items->pdata[i])->kind != LOWER_CONST;
  n = computed ? list->items->len : 0;
  if (!computed && !graft_lower_arg_ints (ctx, node, k, torch_pads, 2 * MAX_RANK, &n, 0, error))
    return NULL;
  if (n % 2 != 0 || (int) n / 2 > rank)
    {
      graft_lower_fail (error, node, "a pad list of %u values for a rank-%d input", n, rank);
      return NULL;
    }
  if (computed)
    return onnx_pads_computed (ctx, node, k, n, rank, error);
  for (guint i = 0; i < n / 2; i++)
    {
      int axis = rank - 1 - (int) i;
      pads[axis] = torch_pads[2 * i];
      pads[rank + axis] = torch_pads[2 * i + 1];
    }
  return graft_lower_const_ints (ctx, pads, 2 * rank, FALSE);
}

static gboolean
emit_pad (GraftLowerContext *ctx, GraftNode *node, GraftValue *x, guint k_pads, const char *mode, double value,
          GError **error)
{
  int rank;
  if (!graft_lower_need_rank (ctx, x, &rank, error))
    return FALSE;
  if (rank > MAX_RANK)
    return graft_lower_fail (error, node, "rank %d", rank);
  GraftValue *pads = onnx_pads (ctx, node, k_pads, rank, error);
  if (pads == NULL)
    return FALSE;
  gboolean constant = strcmp (mode, "constant") == 0;
  GraftNode *pad = constant
    ? graft_lower_node (ctx, "Pad", 1, 3, x, pads, graft_lower_const_scalar (ctx, graft_lower_dtype (ctx, x), value))
    : graft_lower_node (ctx, "Pad", 1, 2, x, pads);
  graft_node_add_attribute (pad, graft_attribute_new_string ("mode", mode));
  graft_lower_set_output (ctx, node, 0, graft_lower_finish (ctx, pad));
  return TRUE;
}

/* Circular padding before ONNX's wrap mode (opset 19): per padded axis,
 * the last `begin` entries, the input, and the first `end` entries,
 * concatenated. Axes one after the other wrap the corners as torch does. */
static gboolean
emit_circular_pad (GraftLowerContext *ctx, GraftNode *node, GraftValue *x, guint k_pads, GError **error)
{
  gint64 torch_pads[2 * MAX_RANK];
  guint n;
  int rank;
  LowerValue *list = graft_lower_arg (ctx, node, k_pads);
  if (list != NULL && list->kind == LOWER_LIST)
    for (guint i = 0; i < list->items->len; i++)
      if (((LowerValue *) list->items->pdata[i])->kind != LOWER_CONST)
        return graft_lower_fail (error, node, "mode 'circular' with pads computed at run time needs ONNX's wrap mode "
                                 "(--opset 19)");
  if (!graft_lower_need_rank (ctx, x, &rank, error))
    return FALSE;
  if (!graft_lower_arg_ints (ctx, node, k_pads, torch_pads, 2 * MAX_RANK, &n, 0, error))
    return FALSE;
  if (n % 2 != 0 || (int) n / 2 > rank)
    return graft_lower_fail (error, node, "a pad list of %u values for a rank-%d input", n, rank);
  for (guint i = 0; i < n / 2; i++)
    {
      gint64 begin = torch_pads[2 * i], end = torch_pads[2 * i + 1];
      GraftValue *axis = graft_lower_const_int (ctx, rank - 1 - (gint64) i);
      if (begin < 0 || end < 0)
        return graft_lower_fail (error, node, "mode 'circular' with negative pads needs ONNX's wrap mode (--opset 19)");
      if (begin == 0 && end == 0)
        continue;
      g_autoptr(GPtrArray) parts = g_ptr_array_new ();
      if (begin > 0)
        g_ptr_array_add (parts, graft_lower_op (ctx, "Slice", 4, x, graft_lower_const_int (ctx, -begin),
                                                graft_lower_const_int (ctx, G_MAXINT64), axis));
      g_ptr_array_add (parts, x);
      if (end > 0)
        g_ptr_array_add (parts, graft_lower_op (ctx, "Slice", 4, x, graft_lower_const_int (ctx, 0),
                                                graft_lower_const_int (ctx, end), axis));
      x = graft_lower_concat (ctx, parts, rank - 1 - (gint64) i);
    }
  graft_lower_set_output (ctx, node, 0, x);
  return TRUE;
}

/* pad(self, pad, mode, value): torch's modes by their ONNX names */
static gboolean
lower_pad (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  double value;
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  if (x == NULL || !graft_lower_arg_double (ctx, node, 3, 0, &value, error))
    return FALSE;
  g_autofree char *mode = NULL;
  LowerValue *m = graft_lower_arg (ctx, node, 2);
  if (m != NULL && m->kind == LOWER_CONST && m->constant->type == GRAFT_ATTR_STRING)
    mode = graft_attribute_dup_string (m->constant);
  else if (m != NULL && m->kind != LOWER_NONE)
    return graft_lower_fail (error, node, "the mode is not a constant string");
  const char *onnx_mode = mode == NULL || strcmp (mode, "constant") == 0 ? "constant"
                          : strcmp (mode, "reflect") == 0 ? "reflect"
                          : strcmp (mode, "replicate") == 0 ? "edge"
                          : strcmp (mode, "circular") == 0 && ctx->opset >= 19 ? "wrap" : NULL;
  if (onnx_mode == NULL && strcmp (mode, "circular") == 0)
    return emit_circular_pad (ctx, node, x, 1, error);
  if (onnx_mode == NULL)
    return graft_lower_fail (error, node, "mode '%s' has no ONNX form", mode);
  return emit_pad (ctx, node, x, 1, onnx_mode, value, error);
}

/* constant_pad_nd(self, pad, value) */
static gboolean
lower_constant_pad (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  double value;
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  if (x == NULL || !graft_lower_arg_double (ctx, node, 2, 0, &value, error))
    return FALSE;
  return emit_pad (ctx, node, x, 1, "constant", value, error);
}

/* reflection_pad2d(self, padding) / replication_pad2d(self, padding) */
static gboolean
lower_mode_pad (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  if (x == NULL)
    return FALSE;
  return emit_pad (ctx, node, x, 1, g_str_has_prefix (node->op_type, "reflection") ? "reflect" : "edge", 0, error);
}

/* cumsum(self, dim, dtype): integers and bools sum in int64, as torch's */
static gboolean
lower_cumsum (GraftLowerContext *ctx, GraftNode *node, GError **error)
{
  gint64 dim, dtype;
  GraftValue *x = graft_lower_arg_tensor (ctx, node, 0, error);
  if (x == NULL || !graft_lower_arg_int (ctx, node, 1, 0, &dim, error) ||
      !graft_lower_arg_int (ctx, node, 2, -1, &dtype, error))
    return FALSE;
  GraftDType in = graft_lower_dtype (ctx, x);
  if (dtype >= 0)
    x = graft_lower_cast (ctx, x, graft_dtype_from_torch_scalar_type (dtype));
  else if (!graft_dtype_is_float (in) && in != GRAFT_DTYPE_INT64)
    x = graft_lower_cast (ctx, x, GRAFT_DTYPE_INT64);
  GraftValue *axis = graft_lower_const_ints (ctx, &dim, 1, TRUE);
  graft_lower_set_output (ctx, node, 0, graft_lower_op (ctx, "CumSum", 2, x, axis));
  return TRUE;
}

const GraftLowering graft_lowerings_pad[] = {
  { "aten::pad", 0, lower_pad, "self pad mode value" },
  { "aten::constant_pad_nd", 0, lower_constant_pad, "self pad value" },
  { "aten::reflection_pad1d", 0, lower_mode_pad, "self padding" },
  { "aten::reflection_pad2d", 0, lower_mode_pad, "self padding" },
  { "aten::reflection_pad3d", 0, lower_mode_pad, "self padding" },
  { "aten::replication_pad1d", 0, lower_mode_pad, "self padding" },
  { "aten::replication_pad2d", 0, lower_mode_pad, "self padding" },
  { "aten::replication_pad3d", 0, lower_mode_pad, "self padding" },
  { "aten::cumsum", 0, lower_cumsum, "self dim dtype" },
  { NULL }
};
