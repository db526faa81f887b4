/* Padding (constant, reflect, replicate) and running sums: ops that keep
 * the input's layout and change or scan its trailing dims. */
#include "lower/lower-private.h"

#include <string.h>

#define MAX_RANK 8

/* torch's pad list runs from the last dim backwards, (begin, end) per dim:
 * [last_begin, last_end, prev_begin, prev_end, …]. ONNX's Pad takes all
 * begins then all ends, for every dim. A non-constant pad list (from sizes
 * read at run time) is refused by the argument reader with its name. */
static GraftValue *
onnx_pads (GraftLowerContext *ctx, GraftNode *node, guint k, int rank, GError **error)
{
  gint64 torch_pads[2 * MAX_RANK], pads[2 * MAX_RANK] = { 0 };
  guint n;
  if (!graft_lower_arg_ints (ctx, node, k, torch_pads, 2 * MAX_RANK, &n, 0, error))
    return NULL;
  if (n % 2 != 0 || (int) n / 2 > rank)
    {
      graft_lower_fail (error, node, "a pad list of %u values for a rank-%d input", n, rank);
      return NULL;
    }
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
  if (onnx_mode == NULL)
    return graft_lower_fail (error, node, "mode '%s'%s", mode,
                             strcmp (mode, "circular") == 0 ? " needs ONNX's wrap mode (--opset 19)" : " has no ONNX form");
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
    x = graft_lower_cast (ctx, x, graft_lower_scalar_type (dtype));
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
