/* Control flow and containers: If, Loop, Scan (and Scan-8), the Sequence* ops,
 * SplitToSequence, ConcatFromSequence, SequenceMap and the Optional ops.
 * Subgraphs run through graft_kernel_run_subgraph, so outer-scope values
 * resolve through the enclosing frames. */
#include <string.h>
#include "runtime/kernels/kernel-util.h"

/* ---- If ---- */

/* Runs body on ins and makes its results the node's outputs, one for one
 * (what names the body in the error: "branch", "body"). */
static gboolean
run_body_into_outputs (GraftKernelContext *ctx, GraftGraph *body, GraftRtTensor **ins, guint n_ins, const char *what,
                       GError **error)
{
  g_autoptr(GPtrArray) outs = graft_kernel_run_subgraph (ctx, body, ins, n_ins, error);
  if (outs == NULL)
    return FALSE;
  if (outs->len != ctx->n_outputs)
    return graft_kernel_fail (error, "the %s has %u outputs, the node %u", what, outs->len, ctx->n_outputs);
  for (guint i = 0; i < outs->len; i++)
    graft_kernel_set_output (ctx, i, graft_rt_tensor_ref (outs->pdata[i]));
  return TRUE;
}

static gboolean
kernel_if (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *cond = ctx->inputs[0];
  if (cond->numel < 1)
    return graft_kernel_fail (error, "the condition is empty");
  gboolean take = graft_rt_tensor_get_f64 (cond, 0) != 0;
  GraftGraph *branch = graft_node_attr_graph (ctx->node, take ? "then_branch" : "else_branch");
  if (branch == NULL)
    return graft_kernel_fail (error, "the %s attribute is missing", take ? "then_branch" : "else_branch");
  return run_body_into_outputs (ctx, branch, NULL, 0, "branch", error);
}

/* Stacks tensors of the same shape along a new axis 0. */
static GraftRtTensor *
stack (GPtrArray *items, GraftDType dtype, GError **error)
{
  if (items->len == 0)
    {
      gint64 zero = 0;
      return graft_rt_tensor_new (dtype != GRAFT_DTYPE_UNDEFINED ? dtype : GRAFT_DTYPE_FLOAT32, 1, &zero, error);
    }
  GraftRtTensor *first = items->pdata[0];
  gint64 dims[GRAFT_RT_MAX_RANK];
  if (first->rank + 1 > GRAFT_RT_MAX_RANK)
    return graft_kernel_fail (error, "rank too large"), NULL;
  dims[0] = items->len;
  memcpy (dims + 1, first->dims, sizeof (gint64) * first->rank);
  GraftRtTensor *out = graft_rt_tensor_new (first->dtype, first->rank + 1, dims, error);
  if (out == NULL)
    return NULL;
  for (guint i = 0; i < items->len; i++)
    {
      GraftRtTensor *t = items->pdata[i];
      if (!graft_rt_tensor_same_shape (t, first))
        {
          graft_rt_tensor_unref (out);
          return graft_kernel_fail (error, "scan output %u has a different shape from the first", i), NULL;
        }
      graft_copy_block (out, i * first->numel, t, 0, first->numel);
    }
  return out;
}

/* ---- Loop ---- */

static gboolean
kernel_loop (GraftKernelContext *ctx, GError **error)
{
  GraftGraph *body = graft_node_attr_graph (ctx->node, "body");
  GraftRtTensor *max_t = graft_kernel_input (ctx, 0), *cond_t = graft_kernel_input (ctx, 1);
  if (body == NULL)
    return graft_kernel_fail (error, "the body attribute is missing");
  gint64 max_trips = max_t && max_t->numel ? graft_rt_tensor_get_i64 (max_t, 0) : G_MAXINT64;
  gboolean cond = cond_t && cond_t->numel ? graft_rt_tensor_get_f64 (cond_t, 0) != 0 : TRUE;
  guint n_carried = ctx->n_inputs - 2;
  guint n_scan = body->outputs->len - 1 - n_carried;
  if (body->outputs->len < 1 + n_carried)
    return graft_kernel_fail (error, "the body has %u outputs for %u loop-carried values", body->outputs->len, n_carried);

  g_autoptr(GPtrArray) carried = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_rt_tensor_unref);
  for (guint i = 0; i < n_carried; i++)
    g_ptr_array_add (carried, graft_rt_tensor_ref (ctx->inputs[2 + i]));
  g_autoptr(GPtrArray) scans = g_ptr_array_new_with_free_func ((GDestroyNotify) g_ptr_array_unref);
  for (guint i = 0; i < n_scan; i++)
    g_ptr_array_add (scans, g_ptr_array_new_with_free_func ((GDestroyNotify) graft_rt_tensor_unref));

  for (gint64 iter = 0; iter < max_trips && cond; iter++)
    {
      g_autofree GraftRtTensor **ins = g_new0 (GraftRtTensor *, 2 + n_carried);
      g_autoptr(GraftRtTensor) it = graft_rt_tensor_new_scalar_i64 (iter);
      g_autoptr(GraftRtTensor) c = graft_rt_tensor_new (GRAFT_DTYPE_BOOL, 0, NULL, NULL);
      ((guint8 *) c->data)[0] = cond;
      ins[0] = it;
      ins[1] = c;
      for (guint i = 0; i < n_carried; i++)
        ins[2 + i] = carried->pdata[i];
      g_autoptr(GPtrArray) outs = graft_kernel_run_subgraph (ctx, body, ins, 2 + n_carried, error);
      if (outs == NULL)
        return FALSE;
      GraftRtTensor *co = outs->pdata[0];
      cond = co->kind == GRAFT_RT_TENSOR && co->numel ? graft_rt_tensor_get_f64 (co, 0) != 0 : FALSE;
      for (guint i = 0; i < n_carried; i++)
        {
          graft_rt_tensor_unref (carried->pdata[i]);
          carried->pdata[i] = graft_rt_tensor_ref (outs->pdata[1 + i]);
        }
      for (guint i = 0; i < n_scan; i++)
        g_ptr_array_add (scans->pdata[i], graft_rt_tensor_ref (outs->pdata[1 + n_carried + i]));
      if (iter > (1 << 24))
        return graft_kernel_fail (error, "more than 16 million iterations: stopping");
    }
  for (guint i = 0; i < n_carried; i++)
    graft_kernel_set_output (ctx, i, graft_rt_tensor_ref (carried->pdata[i]));
  for (guint i = 0; i < n_scan; i++)
    {
      GraftValue *v = body->outputs->pdata[1 + n_carried + i];
      GraftRtTensor *s = stack (scans->pdata[i], v->dtype, error);
      if (s == NULL)
        return FALSE;
      graft_kernel_set_output (ctx, n_carried + i, s);
    }
  return TRUE;
}

/* ---- Scan (opset 9+) ---- */

static GraftRtTensor *
take_slice (GraftRtTensor *t, gint64 axis, gint64 index, GError **error)
{
  gint64 dims[GRAFT_RT_MAX_RANK];
  int rank = 0;
  for (int d = 0; d < t->rank; d++)
    if (d != axis)
      dims[rank++] = t->dims[d];
  GraftRtTensor *out = graft_rt_tensor_new (t->dtype, rank, dims, error);
  if (out == NULL)
    return NULL;
  gint64 outer = graft_dims_product (t->dims, 0, axis), n = t->dims[axis];
  gint64 inner = graft_dims_product (t->dims, axis + 1, t->rank);
  for (gint64 o = 0; o < outer; o++)
    graft_copy_block (out, o * inner, t, (o * n + index) * inner, inner);
  return out;
}

/* One iteration: the body on the state and the it-th slices of the scan
 * inputs (along their axes, from the end where their direction is 1);
 * the state becomes the body's first outputs, the rest are appended to
 * scans (one GPtrArray per scan output). */
static gboolean
scan_step (GraftKernelContext *ctx, GraftGraph *body, GPtrArray *state, GraftRtTensor **seqs, gint64 n_seqs,
           const gint64 *axes, guint n_axes, const gint64 *dirs, guint n_dirs, gint64 it, gint64 length,
           GPtrArray *scans, GError **error)
{
  g_autoptr(GPtrArray) ins = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_rt_tensor_unref);
  for (guint i = 0; i < state->len; i++)
    g_ptr_array_add (ins, graft_rt_tensor_ref (state->pdata[i]));
  for (gint64 i = 0; i < n_seqs; i++)
    {
      gint64 axis = axes && i < n_axes ? axes[i] : 0;
      graft_normalize_axis (&axis, seqs[i]->rank, NULL);
      gboolean reverse = dirs && i < n_dirs && dirs[i];
      GraftRtTensor *sl = take_slice (seqs[i], axis, reverse ? length - 1 - it : it, error);
      if (sl == NULL)
        return FALSE;
      g_ptr_array_add (ins, sl);
    }
  g_autoptr(GPtrArray) outs = graft_kernel_run_subgraph (ctx, body, (GraftRtTensor **) ins->pdata, ins->len, error);
  if (outs == NULL)
    return FALSE;
  for (guint i = 0; i < state->len; i++)
    {
      graft_rt_tensor_unref (state->pdata[i]);
      state->pdata[i] = graft_rt_tensor_ref (outs->pdata[i]);
    }
  for (guint i = 0; i < scans->len; i++)
    g_ptr_array_add (scans->pdata[i], graft_rt_tensor_ref (outs->pdata[state->len + i]));
  return TRUE;
}

static gboolean
kernel_scan (GraftKernelContext *ctx, GError **error)
{
  GraftGraph *body = graft_node_attr_graph (ctx->node, "body");
  gint64 n_scan_in = graft_node_attr_int (ctx->node, "num_scan_inputs", 0);
  guint n_in_axes, n_in_dirs, n_out_axes, n_out_dirs;
  const gint64 *in_axes = graft_node_attr_ints (ctx->node, "scan_input_axes", &n_in_axes);
  const gint64 *in_dirs = graft_node_attr_ints (ctx->node, "scan_input_directions", &n_in_dirs);
  const gint64 *out_axes = graft_node_attr_ints (ctx->node, "scan_output_axes", &n_out_axes);
  const gint64 *out_dirs = graft_node_attr_ints (ctx->node, "scan_output_directions", &n_out_dirs);
  if (body == NULL)
    return graft_kernel_fail (error, "the body attribute is missing");
  guint n_state = ctx->n_inputs - n_scan_in;
  guint n_scan_out = body->outputs->len - n_state;
  gint64 length = -1;
  for (gint64 i = 0; i < n_scan_in; i++)
    {
      GraftRtTensor *t = ctx->inputs[n_state + i];
      gint64 axis = in_axes && i < n_in_axes ? in_axes[i] : 0;
      if (!graft_normalize_axis (&axis, t->rank, error))
        return FALSE;
      if (length >= 0 && t->dims[axis] != length)
        return graft_kernel_fail (error, "scan inputs have different lengths");
      length = t->dims[axis];
    }
  if (length < 0)
    length = 0;
  g_autoptr(GPtrArray) state = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_rt_tensor_unref);
  for (guint i = 0; i < n_state; i++)
    g_ptr_array_add (state, graft_rt_tensor_ref (ctx->inputs[i]));
  g_autoptr(GPtrArray) scans = g_ptr_array_new_with_free_func ((GDestroyNotify) g_ptr_array_unref);
  for (guint i = 0; i < n_scan_out; i++)
    g_ptr_array_add (scans, g_ptr_array_new_with_free_func ((GDestroyNotify) graft_rt_tensor_unref));

  for (gint64 it = 0; it < length; it++)
    if (!scan_step (ctx, body, state, ctx->inputs + n_state, n_scan_in, in_axes, n_in_axes, in_dirs, n_in_dirs,
                    it, length, scans, error))
      return FALSE;
  for (guint i = 0; i < n_state; i++)
    graft_kernel_set_output (ctx, i, graft_rt_tensor_ref (state->pdata[i]));
  for (guint i = 0; i < n_scan_out; i++)
    {
      GPtrArray *items = scans->pdata[i];
      if (out_dirs && i < n_out_dirs && out_dirs[i])
        for (guint a = 0, b = items->len ? items->len - 1 : 0; a < b; a++, b--)
          {
            gpointer t = items->pdata[a];
            items->pdata[a] = items->pdata[b];
            items->pdata[b] = t;
          }
      GraftValue *v = body->outputs->pdata[n_state + i];
      g_autoptr(GraftRtTensor) s = stack (items, v->dtype, error);
      if (s == NULL)
        return FALSE;
      gint64 axis = out_axes && i < n_out_axes ? out_axes[i] : 0;
      if (!graft_normalize_axis (&axis, s->rank, error))
        return FALSE;
      if (axis == 0)
        graft_kernel_set_output (ctx, n_state + i, graft_rt_tensor_ref (s));
      else
        {
          int perm[GRAFT_RT_MAX_RANK];
          gint64 dims[GRAFT_RT_MAX_RANK];
          for (int d = 0, k = 1; d < s->rank; d++)
            perm[d] = d == axis ? 0 : k++;
          for (int d = 0; d < s->rank; d++)
            dims[d] = s->dims[perm[d]];
          GraftRtTensor *t = graft_rt_tensor_new (s->dtype, s->rank, dims, error);
          if (t == NULL)
            return FALSE;
          graft_transpose_into (s, t, perm);
          graft_kernel_set_output (ctx, n_state + i, t);
        }
    }
  return TRUE;
}

/* ---- Sequences ---- */

static gboolean
infer_sequence (GraftInferContext *ctx, GError **error)
{
  GraftDType dtype = GRAFT_DTYPE_UNDEFINED;
  GraftInferValue *in = graft_infer_input (ctx, 0);
  if (in)
    dtype = in->dtype;
  if (strcmp (ctx->node->op_type, "SequenceEmpty") == 0)
    dtype = graft_node_attr_int (ctx->node, "dtype", GRAFT_DTYPE_FLOAT32);
  graft_infer_set_output_kind (ctx, 0, GRAFT_VALUE_SEQUENCE, dtype);
  return TRUE;
}

static gboolean
need_sequence (GraftRtTensor *t, GError **error)
{
  if (t == NULL || t->kind != GRAFT_RT_SEQUENCE)
    return graft_kernel_fail (error, "input is not a sequence");
  return TRUE;
}

static gboolean
sequence_position (GraftRtTensor *pos, gint64 len, gboolean insert, gint64 *out, GError **error)
{
  gint64 p = graft_rt_tensor_get_i64 (pos, 0);
  if (p < 0)
    p += len;
  if (p < 0 || p > len || (!insert && p == len))
    return graft_kernel_fail (error, "position %" G_GINT64_FORMAT " is outside a sequence of %" G_GINT64_FORMAT,
                              graft_rt_tensor_get_i64 (pos, 0), len);
  *out = p;
  return TRUE;
}

static gboolean
kernel_sequence (GraftKernelContext *ctx, GError **error)
{
  const char *op = ctx->node->op_type;
  GraftRtTensor *seq;

  if (strcmp (op, "SequenceConstruct") == 0)
    {
      seq = graft_rt_tensor_new_sequence (ctx->n_inputs ? ctx->inputs[0]->dtype : GRAFT_DTYPE_UNDEFINED);
      for (guint i = 0; i < ctx->n_inputs; i++)
        g_ptr_array_add (seq->items, graft_rt_tensor_ref (ctx->inputs[i]));
      graft_kernel_set_output (ctx, 0, seq);
      return TRUE;
    }
  if (strcmp (op, "SequenceEmpty") == 0)
    {
      graft_kernel_set_output (ctx, 0, graft_rt_tensor_new_sequence (graft_node_attr_int (ctx->node, "dtype", GRAFT_DTYPE_FLOAT32)));
      return TRUE;
    }
  GraftRtTensor *in = ctx->inputs[0];
  if (!need_sequence (in, error))
    return FALSE;
  gint64 len = in->items->len, p;
  if (strcmp (op, "SequenceLength") == 0)
    {
      graft_kernel_set_output (ctx, 0, graft_rt_tensor_new_scalar_i64 (len));
      return TRUE;
    }
  if (strcmp (op, "SequenceAt") == 0)
    {
      if (!sequence_position (ctx->inputs[1], len, FALSE, &p, error))
        return FALSE;
      graft_kernel_set_output (ctx, 0, graft_rt_tensor_ref (in->items->pdata[p]));
      return TRUE;
    }
  seq = graft_rt_tensor_copy (in, error);
  graft_kernel_set_output (ctx, 0, seq);
  if (strcmp (op, "SequenceInsert") == 0)
    {
      p = len;
      if (graft_kernel_input (ctx, 2) && !sequence_position (ctx->inputs[2], len, TRUE, &p, error))
        return FALSE;
      g_ptr_array_insert (seq->items, p, graft_rt_tensor_ref (ctx->inputs[1]));
      seq->dtype = ctx->inputs[1]->dtype;
      return TRUE;
    }
  if (strcmp (op, "SequenceErase") == 0)
    {
      p = len - 1;
      if (graft_kernel_input (ctx, 1) && !sequence_position (ctx->inputs[1], len, FALSE, &p, error))
        return FALSE;
      if (len == 0)
        return graft_kernel_fail (error, "cannot erase from an empty sequence");
      g_ptr_array_remove_index (seq->items, p);
      return TRUE;
    }
  return graft_kernel_unsupported (error, "%s is not implemented", op);
}

static gboolean
infer_length (GraftInferContext *ctx, GError **error)
{
  if (strcmp (ctx->node->op_type, "SequenceAt") == 0)
    {
      GraftInferValue *in = graft_infer_input (ctx, 0);
      graft_infer_set_output_unknown (ctx, 0, in ? in->dtype : GRAFT_DTYPE_UNDEFINED, -1);
    }
  else
    graft_infer_set_output_fixed (ctx, 0, GRAFT_DTYPE_INT64, 0, NULL);
  return TRUE;
}

static gboolean
kernel_split_to_sequence (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *in = ctx->inputs[0], *split = graft_kernel_input (ctx, 1);
  gint64 axis = graft_node_attr_int (ctx->node, "axis", 0);
  gboolean keepdims = graft_node_attr_int (ctx->node, "keepdims", 1);
  if (!graft_normalize_axis (&axis, in->rank, error))
    return FALSE;
  gint64 dim = in->dims[axis];
  g_autoptr(GArray) sizes = g_array_new (FALSE, FALSE, sizeof (gint64));
  gboolean squeeze = FALSE;
  if (split == NULL)
    {
      gint64 one = 1;
      for (gint64 i = 0; i < dim; i++)
        g_array_append_val (sizes, one);
      squeeze = !keepdims;
    }
  else if (split->rank == 0)
    {
      gint64 chunk = graft_rt_tensor_get_i64 (split, 0);
      if (chunk <= 0)
        return graft_kernel_fail (error, "split must be positive");
      for (gint64 start = 0; start < dim; start += chunk)
        {
          gint64 n = MIN (chunk, dim - start);
          g_array_append_val (sizes, n);
        }
    }
  else
    for (gint64 i = 0; i < split->numel; i++)
      {
        gint64 n = graft_rt_tensor_get_i64 (split, i);
        g_array_append_val (sizes, n);
      }
  GraftRtTensor *seq = graft_rt_tensor_new_sequence (in->dtype);
  graft_kernel_set_output (ctx, 0, seq);
  gint64 outer = graft_dims_product (in->dims, 0, axis), inner = graft_dims_product (in->dims, axis + 1, in->rank);
  gint64 offset = 0;
  for (guint i = 0; i < sizes->len; i++)
    {
      gint64 n = g_array_index (sizes, gint64, i);
      gint64 dims[GRAFT_RT_MAX_RANK];
      int rank = 0;
      for (int d = 0; d < in->rank; d++)
        if (d != axis)
          dims[rank++] = in->dims[d];
        else if (!squeeze)
          dims[rank++] = n;
      GraftRtTensor *t = graft_rt_tensor_new (in->dtype, rank, dims, error);
      if (t == NULL)
        return FALSE;
      for (gint64 o = 0; o < outer; o++)
        graft_copy_block (t, o * n * inner, in, (o * dim + offset) * inner, n * inner);
      offset += n;
      g_ptr_array_add (seq->items, t);
    }
  if (offset != dim)
    return graft_kernel_fail (error, "split sizes add up to %" G_GINT64_FORMAT ", the axis has %" G_GINT64_FORMAT, offset, dim);
  return TRUE;
}

static gboolean
kernel_concat_from_sequence (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *in = ctx->inputs[0];
  gint64 axis = graft_node_attr_int (ctx->node, "axis", 0);
  gboolean new_axis = graft_node_attr_int (ctx->node, "new_axis", 0);
  if (!need_sequence (in, error))
    return FALSE;
  if (in->items->len == 0)
    return graft_kernel_fail (error, "the sequence is empty");
  GraftRtTensor *first = in->items->pdata[0];
  int rank = first->rank + (new_axis ? 1 : 0);
  if (!graft_normalize_axis (&axis, rank, error))
    return FALSE;
  gint64 dims[GRAFT_RT_MAX_RANK];
  gint64 total = 0;
  for (guint i = 0; i < in->items->len; i++)
    {
      GraftRtTensor *t = in->items->pdata[i];
      total += new_axis ? 1 : t->dims[axis];
    }
  if (new_axis)
    for (int d = 0, s = 0; d < rank; d++)
      dims[d] = d == axis ? total : first->dims[s++];
  else
    {
      memcpy (dims, first->dims, sizeof (gint64) * rank);
      dims[axis] = total;
    }
  GraftRtTensor *out = graft_kernel_alloc_output (ctx, 0, first->dtype, rank, dims, error);
  if (out == NULL)
    return FALSE;
  gint64 outer = graft_dims_product (dims, 0, axis), out_block = graft_dims_product (dims, axis, rank);
  gint64 offset = 0;
  for (guint i = 0; i < in->items->len; i++)
    {
      GraftRtTensor *t = in->items->pdata[i];
      gint64 block = new_axis ? t->numel / MAX (outer, 1) : graft_dims_product (t->dims, axis, t->rank);
      for (gint64 o = 0; o < outer; o++)
        graft_copy_block (out, o * out_block + offset, t, o * block, block);
      offset += block;
    }
  return TRUE;
}

static gboolean
kernel_sequence_map (GraftKernelContext *ctx, GError **error)
{
  GraftGraph *body = graft_node_attr_graph (ctx->node, "body");
  GraftRtTensor *in = ctx->inputs[0];
  if (body == NULL || !need_sequence (in, error))
    return body ? FALSE : graft_kernel_fail (error, "the body attribute is missing");
  guint n = in->items->len;
  g_autoptr(GPtrArray) results = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_rt_tensor_unref);
  for (guint o = 0; o < ctx->n_outputs; o++)
    g_ptr_array_add (results, graft_rt_tensor_new_sequence (GRAFT_DTYPE_UNDEFINED));
  for (guint i = 0; i < n; i++)
    {
      g_autofree GraftRtTensor **ins = g_new0 (GraftRtTensor *, ctx->n_inputs);
      for (guint k = 0; k < ctx->n_inputs; k++)
        {
          GraftRtTensor *t = ctx->inputs[k];
          ins[k] = t && t->kind == GRAFT_RT_SEQUENCE ? (i < t->items->len ? t->items->pdata[i] : NULL) : t;
        }
      g_autoptr(GPtrArray) outs = graft_kernel_run_subgraph (ctx, body, ins, ctx->n_inputs, error);
      if (outs == NULL)
        return FALSE;
      for (guint o = 0; o < ctx->n_outputs && o < outs->len; o++)
        {
          GraftRtTensor *seq = results->pdata[o];
          GraftRtTensor *t = outs->pdata[o];
          seq->dtype = t->dtype;
          g_ptr_array_add (seq->items, graft_rt_tensor_ref (t));
        }
    }
  for (guint o = 0; o < ctx->n_outputs; o++)
    graft_kernel_set_output (ctx, o, graft_rt_tensor_ref (results->pdata[o]));
  return TRUE;
}

/* ---- Optional ---- */

static gboolean
kernel_optional (GraftKernelContext *ctx, GError **error)
{
  const char *op = ctx->node->op_type;
  GraftRtTensor *in = graft_kernel_input (ctx, 0);
  if (strcmp (op, "Optional") == 0)
    {
      graft_kernel_set_output (ctx, 0, in ? graft_rt_tensor_ref (in) : graft_rt_tensor_new_none (GRAFT_DTYPE_UNDEFINED));
      return TRUE;
    }
  if (strcmp (op, "OptionalHasElement") == 0)
    {
      GraftRtTensor *t = graft_rt_tensor_new (GRAFT_DTYPE_BOOL, 0, NULL, error);
      ((guint8 *) t->data)[0] = in != NULL && in->kind != GRAFT_RT_NONE;
      graft_kernel_set_output (ctx, 0, t);
      return TRUE;
    }
  if (in == NULL || in->kind == GRAFT_RT_NONE)
    return graft_kernel_fail (error, "the optional has no value");
  graft_kernel_set_output (ctx, 0, graft_rt_tensor_ref (in));
  return TRUE;
}

/* ---- Scan-8: a batch axis 0 on every input and output, the scan axis 1,
 * optional per-batch sequence lengths as the first input ---- */

static gboolean
kernel_scan8 (GraftKernelContext *ctx, GError **error)
{
  GraftGraph *body = graft_node_attr_graph (ctx->node, "body");
  gint64 n_scan_in = graft_node_attr_int (ctx->node, "num_scan_inputs", 0);
  guint n_dirs;
  const gint64 *dirs = graft_node_attr_ints (ctx->node, "directions", &n_dirs);
  if (body == NULL)
    return graft_kernel_fail (error, "the body attribute is missing");
  GraftRtTensor *lens = ctx->n_inputs > 0 ? ctx->inputs[0] : NULL;
  if (n_scan_in < 1 || (guint) n_scan_in + 1 > ctx->n_inputs)
    return graft_kernel_fail (error, "num_scan_inputs %" G_GINT64_FORMAT " does not fit %u inputs", n_scan_in, ctx->n_inputs);
  guint n_state = ctx->n_inputs - 1 - n_scan_in;
  guint n_scan_out = body->outputs->len - n_state;
  GraftRtTensor **state_in = ctx->inputs + 1, **scan_in = ctx->inputs + 1 + n_state;
  for (guint i = 0; i < n_state + n_scan_in; i++)
    if (state_in[i] == NULL || state_in[i]->rank < (i < n_state ? 1 : 2))
      return graft_kernel_fail (error, "input %u needs a batch axis%s", i + 1, i < n_state ? "" : " and a sequence axis");
  gint64 batch = scan_in[0]->dims[0], length = scan_in[0]->dims[1];
  for (gint64 b = 0; lens && b < lens->numel; b++)
    if (graft_rt_tensor_get_i64 (lens, b) != length)
      return graft_kernel_fail (error, "sequence_lens other than the full length %" G_GINT64_FORMAT " are not supported", length);

  g_autoptr(GPtrArray) states = g_ptr_array_new_with_free_func ((GDestroyNotify) g_ptr_array_unref);
  g_autoptr(GPtrArray) scans = g_ptr_array_new_with_free_func ((GDestroyNotify) g_ptr_array_unref);
  for (guint i = 0; i < n_state; i++)
    g_ptr_array_add (states, g_ptr_array_new_with_free_func ((GDestroyNotify) graft_rt_tensor_unref));
  for (guint i = 0; i < n_scan_out; i++)
    g_ptr_array_add (scans, g_ptr_array_new_with_free_func ((GDestroyNotify) graft_rt_tensor_unref));

  for (gint64 b = 0; b < batch; b++)
    {
      g_autoptr(GPtrArray) state = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_rt_tensor_unref);
      g_autoptr(GPtrArray) seqs = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_rt_tensor_unref);
      g_autoptr(GPtrArray) items = g_ptr_array_new_with_free_func ((GDestroyNotify) g_ptr_array_unref);
      for (guint i = 0; i < n_state + n_scan_in; i++)
        {
          if (state_in[i]->dims[0] != batch)
            return graft_kernel_fail (error, "input %u has batch %" G_GINT64_FORMAT ", the first scan input %" G_GINT64_FORMAT,
                                      i + 1, state_in[i]->dims[0], batch);
          GraftRtTensor *t = take_slice (state_in[i], 0, b, error);
          if (t == NULL)
            return FALSE;
          g_ptr_array_add (i < n_state ? state : seqs, t);
        }
      for (guint i = 0; i < n_scan_out; i++)
        g_ptr_array_add (items, g_ptr_array_new_with_free_func ((GDestroyNotify) graft_rt_tensor_unref));
      for (gint64 it = 0; it < length; it++)
        if (!scan_step (ctx, body, state, (GraftRtTensor **) seqs->pdata, n_scan_in, NULL, 0, dirs, n_dirs,
                        it, length, items, error))
          return FALSE;
      for (guint i = 0; i < n_state; i++)
        g_ptr_array_add (states->pdata[i], graft_rt_tensor_ref (state->pdata[i]));
      for (guint i = 0; i < n_scan_out; i++)
        {
          GraftValue *v = body->outputs->pdata[n_state + i];
          GraftRtTensor *t = stack (items->pdata[i], v->dtype, error);
          if (t == NULL)
            return FALSE;
          g_ptr_array_add (scans->pdata[i], t);
        }
    }
  for (guint i = 0; i < n_state + n_scan_out; i++)
    {
      GPtrArray *per_batch = i < n_state ? states->pdata[i] : scans->pdata[i - n_state];
      GraftValue *v = body->outputs->pdata[i];
      GraftRtTensor *t = stack (per_batch, v->dtype, error);
      if (t == NULL)
        return FALSE;
      graft_kernel_set_output (ctx, i, t);
    }
  return TRUE;
}

static const GraftShape *
branch_output_shape (GraftInferContext *ctx, const char *branch, guint i, GraftDType *dtype)
{
  GraftAttribute *attribute = graft_node_get_attribute (ctx->node, branch);
  const GraftShape *inferred = NULL;
  GraftValue *out;

  if (attribute == NULL || attribute->g == NULL || i >= attribute->g->outputs->len)
    return NULL;
  out = g_ptr_array_index (attribute->g->outputs, i);
  if (ctx->lookup_subgraph_value != NULL && ctx->lookup_subgraph_value (ctx->lookup_data, out, dtype, &inferred)
      && inferred != NULL)
    return inferred;
  *dtype = out->dtype;
  return &out->shape;
}

/* Output i is what both branches give (their bodies are inferred before
 * the node): a dim they disagree on is unknown, and so is the rank. */
static gboolean
infer_if (GraftInferContext *ctx, GError **error)
{
  for (guint i = 0; i < ctx->n_outputs; i++)
    {
      GraftDType then_dtype = GRAFT_DTYPE_UNDEFINED, else_dtype = GRAFT_DTYPE_UNDEFINED;
      const GraftShape *a = branch_output_shape (ctx, "then_branch", i, &then_dtype);
      const GraftShape *b = branch_output_shape (ctx, "else_branch", i, &else_dtype);
      GraftShape merged;

      if (a == NULL || b == NULL || a->rank < 0 || a->rank != b->rank)
        {
          graft_infer_set_output_unknown (ctx, i, then_dtype == else_dtype ? then_dtype : GRAFT_DTYPE_UNDEFINED, -1);
          continue;
        }
      graft_shape_init (&merged, a->rank);
      for (int d = 0; d < a->rank; d++)
        merged.dims[d] = graft_dim_equal (&a->dims[d], &b->dims[d]) ? a->dims[d] : graft_dim_unknown ();
      graft_infer_set_output (ctx, i, then_dtype == else_dtype ? then_dtype : GRAFT_DTYPE_UNDEFINED, &merged);
      graft_shape_clear (&merged);
    }
  return TRUE;
}

/* ---- torch.export's context wrappers ---- */

/* wrap_with_autocast(device_type, dtype, enabled, cache_enabled, body, *operands)
 * and wrap_with_set_grad_enabled(enabled, body, *operands) run their body
 * on the operands; for inference only an autocast that is on for the CPU
 * changes the arithmetic, and that one is refused rather than run in f32. */
static gboolean
kernel_context_wrapper (GraftKernelContext *ctx, GError **error)
{
  g_autoptr(GPtrArray) subgraphs = graft_node_get_subgraphs (ctx->node);
  GraftGraph *body = subgraphs->len > 0 ? g_ptr_array_index (subgraphs, 0) : NULL;
  if (body == NULL)
    return graft_kernel_fail (error, "the body graph is missing");
  if (strcmp (ctx->node->op_type, "wrap_with_autocast") == 0)
    {
      const char *device = graft_node_attr_string (ctx->node, "arg0", "cpu");
      if (graft_node_attr_int (ctx->node, "arg2", 1) && strcmp (device, "cpu") == 0)
        return graft_kernel_unsupported (error, "autocast enabled on the CPU (its body computes in a narrower type)");
    }
  if (body->inputs->len != ctx->n_inputs)
    return graft_kernel_fail (error, "the body takes %u inputs, the node passes %u", body->inputs->len, ctx->n_inputs);
  return run_body_into_outputs (ctx, body, ctx->inputs, ctx->n_inputs, "body", error);
}

/* torch.cond: cond(pred, true_graph, false_graph, operands) runs one of
 * its graphs on the operands (the .pt2 reader passes them as one list,
 * the graphs as arg1_body and arg2_body). */
static gboolean
kernel_torch_cond (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *pred = ctx->n_inputs == 2 ? ctx->inputs[0] : NULL;
  GraftRtTensor *operands = ctx->n_inputs == 2 ? ctx->inputs[1] : NULL;
  if (pred == NULL || pred->kind != GRAFT_RT_TENSOR || pred->numel != 1)
    return graft_kernel_fail (error, "the predicate is no one-element tensor");
  if (operands == NULL || operands->kind != GRAFT_RT_SEQUENCE)
    return graft_kernel_fail (error, "the operands are no list");
  gboolean take = graft_rt_tensor_get_f64 (pred, 0) != 0;
  GraftGraph *branch = graft_node_attr_graph (ctx->node, take ? "arg1_body" : "arg2_body");
  if (branch == NULL)
    return graft_kernel_fail (error, "the %s graph is missing", take ? "true" : "false");
  guint n = operands->items ? operands->items->len : 0;
  if (branch->inputs->len != n)
    return graft_kernel_fail (error, "the %s graph takes %u inputs, the node passes %u", take ? "true" : "false",
                              branch->inputs->len, n);
  return run_body_into_outputs (ctx, branch, n ? (GraftRtTensor **) operands->items->pdata : NULL, n,
                                take ? "true graph" : "false graph", error);
}

#define MAX_WHILE_ITERATIONS (1 << 24)

/* torch's while_loop(cond_graph, body_graph, carried, additional): while
 * cond_graph(carried…, additional…) is true, carried = body_graph(…)
 * (the .pt2 reader passes carried and additional as two lists, the graphs
 * as arg0_body and arg1_body). */
static gboolean
kernel_torch_while_loop (GraftKernelContext *ctx, GError **error)
{
  GraftGraph *cond_graph = graft_node_attr_graph (ctx->node, "arg0_body");
  GraftGraph *body = graft_node_attr_graph (ctx->node, "arg1_body");
  GraftRtTensor *carried_list = ctx->n_inputs == 2 ? ctx->inputs[0] : NULL;
  GraftRtTensor *additional = ctx->n_inputs == 2 ? ctx->inputs[1] : NULL;
  if (cond_graph == NULL || body == NULL)
    return graft_kernel_fail (error, "the cond or body graph is missing");
  if (carried_list == NULL || carried_list->kind != GRAFT_RT_SEQUENCE || additional == NULL ||
      additional->kind != GRAFT_RT_SEQUENCE)
    return graft_kernel_fail (error, "the carried or additional inputs are no list");
  guint n_carried = carried_list->items ? carried_list->items->len : 0;
  guint n_additional = additional->items ? additional->items->len : 0;
  if (cond_graph->inputs->len != n_carried + n_additional || body->inputs->len != n_carried + n_additional ||
      body->outputs->len != n_carried || ctx->n_outputs > n_carried)
    return graft_kernel_fail (error, "the graphs take %u and %u inputs for %u carried and %u additional",
                              cond_graph->inputs->len, body->inputs->len, n_carried, n_additional);
  g_autofree GraftRtTensor **ins = g_new0 (GraftRtTensor *, n_carried + n_additional + 1);
  g_autoptr(GPtrArray) carried = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_rt_tensor_unref);
  for (guint i = 0; i < n_carried; i++)
    g_ptr_array_add (carried, graft_rt_tensor_ref (carried_list->items->pdata[i]));
  for (guint i = 0; i < n_additional; i++)
    ins[n_carried + i] = additional->items->pdata[i];
  for (gint64 trip = 0;; trip++)
    {
      for (guint i = 0; i < n_carried; i++)
        ins[i] = carried->pdata[i];
      g_autoptr(GPtrArray) go_on = graft_kernel_run_subgraph (ctx, cond_graph, ins, n_carried + n_additional, error);
      if (go_on == NULL)
        return FALSE;
      GraftRtTensor *flag = go_on->len == 1 ? go_on->pdata[0] : NULL;
      if (flag == NULL || flag->kind != GRAFT_RT_TENSOR || flag->numel != 1)
        return graft_kernel_fail (error, "the cond graph returns no one-element tensor");
      if (graft_rt_tensor_get_f64 (flag, 0) == 0)
        break;
      if (trip >= MAX_WHILE_ITERATIONS)
        return graft_kernel_fail (error, "more than %d iterations: stopping", MAX_WHILE_ITERATIONS);
      g_autoptr(GPtrArray) next = graft_kernel_run_subgraph (ctx, body, ins, n_carried + n_additional, error);
      if (next == NULL)
        return FALSE;
      for (guint i = 0; i < n_carried; i++)
        {
          graft_rt_tensor_unref (carried->pdata[i]);
          carried->pdata[i] = graft_rt_tensor_ref (next->pdata[i]);
        }
    }
  for (guint i = 0; i < ctx->n_outputs; i++)
    graft_kernel_set_output (ctx, i, graft_rt_tensor_ref (carried->pdata[i]));
  return TRUE;
}

#define OP(name, since, infer, kernel, input_names, output_names) { "onnx::" name, since, 0, infer, kernel, 0, input_names, output_names }

const GraftOpSchema graft_ops_control[] = {
  OP ("If", 1, infer_if, kernel_if, "cond", "outputs..."),
  OP ("Loop", 1, NULL, kernel_loop, "M cond v_initial...", "v_final_and_scan_outputs..."),
  { "onnx::Scan", 8, 8, NULL, kernel_scan8, 0, "sequence_lens initial_state_and_scan_inputs...", "final_state_and_scan_outputs..." },
  OP ("Scan", 9, NULL, kernel_scan, "initial_state_and_scan_inputs...", "final_state_and_scan_outputs..."),
  OP ("SequenceConstruct", 11, infer_sequence, kernel_sequence, "inputs...", "output_sequence"),
  OP ("SequenceEmpty", 11, infer_sequence, kernel_sequence, "", "output"),
  OP ("SequenceInsert", 11, infer_sequence, kernel_sequence, "input_sequence tensor position", "output_sequence"),
  OP ("SequenceErase", 11, infer_sequence, kernel_sequence, "input_sequence position", "output_sequence"),
  OP ("SequenceAt", 11, infer_length, kernel_sequence, "input_sequence position", "tensor"),
  OP ("SequenceLength", 11, infer_length, kernel_sequence, "input_sequence", "length"),
  OP ("SplitToSequence", 11, infer_sequence, kernel_split_to_sequence, "input split", "output_sequence"),
  OP ("ConcatFromSequence", 11, NULL, kernel_concat_from_sequence, "input_sequence", "concat_result"),
  OP ("SequenceMap", 17, NULL, kernel_sequence_map, "input_sequence additional_inputs...", "out_sequence..."),
  OP ("Optional", 15, NULL, kernel_optional, "input", "output"),
  OP ("OptionalHasElement", 15, NULL, kernel_optional, "input", "output"),
  OP ("OptionalGetElement", 15, NULL, kernel_optional, "input", "output"),
  { "higher_order::wrap_with_autocast", 0, 0, NULL, kernel_context_wrapper, 0, "operands...", "outputs..." },
  { "higher_order::wrap_with_set_grad_enabled", 0, 0, NULL, kernel_context_wrapper, 0, "operands...", "outputs..." },
  { "higher_order::cond", 0, 0, NULL, kernel_torch_cond, 0, "pred operands", "outputs..." },
  { "higher_order::while_loop", 0, 0, NULL, kernel_torch_while_loop, 0, "carried additional", "outputs..." },
  { NULL }
};
