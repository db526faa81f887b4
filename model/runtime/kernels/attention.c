/* Building blocks of transformer and recurrent decoders (opsets 23-27):
 * Attention (scaled dot-product attention with masks, a key/value cache and
 * grouped-query heads), FlexAttention (attention whose scores and
 * probabilities pass through subgraphs), RotaryEmbedding, LinearAttention (the linear,
 * gated and delta-rule recurrences) and CausalConvWithState. Attention and
 * RotaryEmbedding accept packed 3-D inputs [batch, seq, heads·size] as well
 * as 4-D [batch, heads, seq, size]. Sums are accumulated in double.
 * Also graft::ScaledDotProductAttention, the runtime's fused form of the
 * attention exporters write as separate nodes (runtime/fusion-patterns.h). */
#include <math.h>
#include <string.h>
#include "runtime/kernels/kernel-util.h"
#include "runtime/kernels/vector-math.h"
#include "runtime/kernels/simd-target.h"

/* Element i as double; float32 (the common case, and what float16 and
 * bfloat16 inputs arrive as) read directly in the inner loops. */
static inline double
value_at (const GraftRtTensor *t, gint64 i)
{
  return t->dtype == GRAFT_DTYPE_FLOAT32 ? ((const float *) t->data)[i] : graft_rt_tensor_get_f64 (t, i);
}

/* Where one head's rows live in a 3-D (packed) or 4-D tensor. */
typedef struct {
  gboolean packed;
  gint64 batch, heads, seq, head_size;
} HeadLayout;

static gboolean
head_layout_init (HeadLayout *layout, const GraftRtTensor *t, gint64 packed_heads, const char *what,
                  GError **error)
{
  if (t->rank == 4)
    {
      *layout = (HeadLayout) { FALSE, t->dims[0], t->dims[1], t->dims[2], t->dims[3] };
      return TRUE;
    }
  if (t->rank != 3)
    return graft_kernel_fail (error, "%s must have rank 3 or 4, not %d", what, t->rank);
  if (packed_heads <= 0 || t->dims[2] % packed_heads != 0)
    return graft_kernel_fail (error, "%s: hidden size %" G_GINT64_FORMAT " does not split into %" G_GINT64_FORMAT
                              " heads (set the heads attribute for 3-D inputs)", what, t->dims[2], packed_heads);
  *layout = (HeadLayout) { TRUE, t->dims[0], packed_heads, t->dims[1], t->dims[2] / packed_heads };
  return TRUE;
}

/* Index of element 0 of the row (batch b, head h, position s). */
static gint64
head_layout_row (const HeadLayout *layout, gint64 b, gint64 h, gint64 s)
{
  if (layout->packed)
    return ((b * layout->seq + s) * layout->heads + h) * layout->head_size;
  return ((b * layout->heads + h) * layout->seq + s) * layout->head_size;
}

static GraftDim
dim_divided (const GraftDim *dim, gint64 divisor)
{
  if (dim->kind == GRAFT_DIM_FIXED && divisor > 0)
    return graft_dim_fixed (dim->value / divisor);
  return graft_dim_unknown ();
}

static GraftDim
dim_sum (const GraftDim *a, const GraftDim *b)
{
  if (a->kind == GRAFT_DIM_FIXED && b->kind == GRAFT_DIM_FIXED)
    return graft_dim_fixed (a->value + b->value);
  return graft_dim_unknown ();
}

static void
set_output_dims (GraftInferContext *ctx, guint i, GraftDType dtype, int rank, const GraftDim *dims)
{
  GraftShape shape;
  graft_shape_init (&shape, rank);
  for (int d = 0; d < rank; d++)
    shape.dims[d] = dims[d];
  graft_infer_set_output (ctx, i, dtype, &shape);
  graft_shape_clear (&shape);
}

/* ---- Attention ---- */

enum { ATTENTION_Q, ATTENTION_K, ATTENTION_V, ATTENTION_MASK, ATTENTION_PAST_KEY, ATTENTION_PAST_VALUE,
       ATTENTION_NONPAD_KV_SEQLEN };
enum { ATTENTION_Y, ATTENTION_PRESENT_KEY, ATTENTION_PRESENT_VALUE, ATTENTION_QK_OUTPUT };

static gboolean
infer_attention (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *q = graft_infer_input (ctx, ATTENTION_Q), *k = graft_infer_input (ctx, ATTENTION_K);
  GraftInferValue *v = graft_infer_input (ctx, ATTENTION_V), *past = graft_infer_input (ctx, ATTENTION_PAST_KEY);
  int rank = q->shape.rank;
  if (rank < 0 || k->shape.rank != rank || v->shape.rank != rank)
    {
      for (guint i = 0; i < ctx->n_outputs; i++)
        graft_infer_set_output_unknown (ctx, i, i == ATTENTION_PRESENT_VALUE ? v->dtype : q->dtype, -1);
      return TRUE;
    }
  if (rank != 3 && rank != 4)
    return graft_kernel_fail (error, "Q, K and V must have rank 3 or 4, not %d", rank);
  GraftDim batch = q->shape.dims[0], q_heads, q_seq, kv_heads, kv_seq, k_size, v_size, y_last;
  if (rank == 4)
    {
      q_heads = q->shape.dims[1];
      q_seq = q->shape.dims[2];
      kv_heads = k->shape.dims[1];
      kv_seq = k->shape.dims[2];
      k_size = k->shape.dims[3];
      v_size = v->shape.dims[3];
    }
  else
    {
      gint64 n_q = graft_node_attr_int (ctx->node, "q_num_heads", 0);
      gint64 n_kv = graft_node_attr_int (ctx->node, "kv_num_heads", 0);
      q_heads = graft_dim_fixed (n_q);
      q_seq = q->shape.dims[1];
      kv_heads = graft_dim_fixed (n_kv);
      kv_seq = k->shape.dims[1];
      k_size = dim_divided (&k->shape.dims[2], n_kv);
      v_size = dim_divided (&v->shape.dims[2], n_kv);
    }
  GraftDim total_seq = past && past->shape.rank == 4 ? dim_sum (&past->shape.dims[2], &kv_seq) : kv_seq;
  y_last = v_size.kind == GRAFT_DIM_FIXED && q_heads.kind == GRAFT_DIM_FIXED
           ? graft_dim_fixed (v_size.value * q_heads.value) : graft_dim_unknown ();

  GraftDim y4[4] = { batch, q_heads, q_seq, v_size }, y3[3] = { batch, q_seq, y_last };
  set_output_dims (ctx, ATTENTION_Y, q->dtype, rank, rank == 4 ? y4 : y3);
  GraftDim present_key[4] = { batch, kv_heads, total_seq, k_size };
  GraftDim present_value[4] = { batch, kv_heads, total_seq, v_size };
  GraftDim qk[4] = { batch, q_heads, q_seq, total_seq };
  if (ctx->n_outputs > ATTENTION_PRESENT_KEY)
    set_output_dims (ctx, ATTENTION_PRESENT_KEY, k->dtype, 4, present_key);
  if (ctx->n_outputs > ATTENTION_PRESENT_VALUE)
    set_output_dims (ctx, ATTENTION_PRESENT_VALUE, v->dtype, 4, present_value);
  if (ctx->n_outputs > ATTENTION_QK_OUTPUT)
    set_output_dims (ctx, ATTENTION_QK_OUTPUT, q->dtype, 4, qk);
  return TRUE;
}

/* The cache after this step, [batch, kv_heads, past + new, size]: the
 * present_key/present_value output when asked for, else a work tensor. */
static GraftRtTensor *
concat_cache (GraftKernelContext *ctx, guint output, const GraftRtTensor *past, const GraftRtTensor *fresh,
              const HeadLayout *layout, GError **error)
{
  gint64 past_seq = past ? past->dims[2] : 0;
  gint64 dims[4] = { layout->batch, layout->heads, past_seq + layout->seq, layout->head_size };
  if (past && (past->rank != 4 || past->dims[0] != dims[0] || past->dims[1] != dims[1] || past->dims[3] != dims[3]))
    return graft_kernel_fail (error, "the past cache must be [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                              ", seq, %" G_GINT64_FORMAT "]", dims[0], dims[1], dims[3]), NULL;
  GraftRtTensor *cache;
  if (ctx->n_outputs > output && graft_kernel_wants_output (ctx, output))
    {
      cache = graft_kernel_output (ctx, output, error);
      if (cache)
        graft_rt_tensor_ref (cache);
    }
  else
    cache = graft_rt_tensor_new (fresh->dtype, 4, dims, error);
  if (cache == NULL)
    return NULL;
  if (cache->numel != dims[0] * dims[1] * dims[2] * dims[3])
    {
      graft_rt_tensor_unref (cache);
      return graft_kernel_fail (error, "present cache has an unexpected shape"), NULL;
    }
  for (gint64 b = 0; b < dims[0]; b++)
    for (gint64 h = 0; h < dims[1]; h++)
      {
        gint64 row = (b * dims[1] + h) * dims[2] * dims[3];
        if (past)
          graft_copy_block (cache, row, past, (b * dims[1] + h) * past_seq * dims[3], past_seq * dims[3]);
        for (gint64 s = 0; s < layout->seq; s++)
          graft_copy_block (cache, row + (past_seq + s) * dims[3], fresh, head_layout_row (layout, b, h, s), dims[3]);
      }
  return cache;
}

/* attn_mask broadcast right-aligned to [batch, q_heads, q_seq, total_seq];
 * keys past its last axis are masked (the suite pads short masks). */
typedef struct {
  const GraftRtTensor *mask;
  gint64 strides[4];
  gint64 last;
} MaskView;

static gboolean
mask_view_init (MaskView *view, const GraftRtTensor *mask, const gint64 *target, GError **error)
{
  *view = (MaskView) { mask };
  if (mask == NULL)
    return TRUE;
  if (mask->rank < 1 || mask->rank > 4)
    return graft_kernel_fail (error, "attn_mask must have rank 1 to 4, not %d", mask->rank);
  gint64 stride = 1;
  for (int d = 3; d >= 0; d--)
    {
      int md = mask->rank - 4 + d;
      gint64 size = md >= 0 ? mask->dims[md] : 1;
      if (d < 3 && size != 1 && size != target[d])
        return graft_kernel_fail (error, "attn_mask axis %d (%" G_GINT64_FORMAT ") does not broadcast to %"
                                  G_GINT64_FORMAT, md, size, target[d]);
      view->strides[d] = size == 1 && d < 3 ? 0 : stride;
      stride *= size;
    }
  view->last = mask->dims[mask->rank - 1];
  return TRUE;
}

/* Additive bias of the mask at (b, h, i, j): 0 or -inf for a bool mask. */
static double
mask_view_bias (const MaskView *view, gint64 b, gint64 h, gint64 i, gint64 j)
{
  if (view->mask == NULL)
    return 0;
  if (j >= view->last)
    return -INFINITY;
  gint64 index = b * view->strides[0] + h * view->strides[1] + i * view->strides[2] + j * view->strides[3];
  double value = graft_rt_tensor_get_f64 (view->mask, index);
  if (view->mask->dtype == GRAFT_DTYPE_BOOL)
    return value != 0 ? 0 : -INFINITY;
  return value;
}

typedef struct {
  gboolean causal;
  gint64 left_window, right_window;   /* -1: unbounded */
  double scale, softcap;
  gint64 qk_mode;
} AttentionParams;

/* ---- Attention in float32, by blocks of queries ---- */

/* Queries scored at once: a block's scores (ATTENTION_BLOCK × keys floats,
 * 32 KiB for 256 keys) stay in cache from the QKᵀ product through the
 * softmax to the product with V. */
#define ATTENTION_BLOCK 32

typedef struct {
  const AttentionParams *params;
  const MaskView *mask;
  const HeadLayout *ql, *yl;
  const float *q, *keys, *values;
  float *y;
  const GraftRtTensor *nonpad;
  gint64 kv_heads, total_seq, past_seq, v_size, group;
} BlockedAttention;

/* The mask's additive bias for the keys of query row (b, h, i). */
static void
mask_row_bias (const MaskView *view, gint64 b, gint64 h, gint64 i, gint64 total, float *bias)
{
  if (view->mask == NULL)
    {
      memset (bias, 0, total * sizeof (float));
      return;
    }
  gint64 base = b * view->strides[0] + h * view->strides[1] + i * view->strides[2], last = MIN (view->last, total);
  if (view->mask->dtype == GRAFT_DTYPE_FLOAT32)
    memcpy (bias, (const float *) view->mask->data + base, last * sizeof (float));
  else if (view->mask->dtype == GRAFT_DTYPE_BOOL)
    for (gint64 j = 0; j < last; j++)
      bias[j] = ((const guint8 *) view->mask->data)[base + j] ? 0 : -INFINITY;
  else
    for (gint64 j = 0; j < last; j++)
      bias[j] = mask_view_bias (view, b, h, i, j);
  for (gint64 j = last; j < total; j++)
    bias[j] = -INFINITY;
}

/* Softcap, masks, causal and window limits, then softmax, on one row of
 * scores (QKᵀ·scale) for query i; a row that may attend no key gets zero
 * weights, as in the reference. */
static void
attention_row_weights (const BlockedAttention *job, gint64 b, gint64 h, gint64 i, gint64 offset, gint64 valid,
                       float *row, float *bias)
{
  const AttentionParams *params = job->params;
  gint64 total = job->total_seq;
  gboolean any = FALSE;
  if (params->softcap > 0)
    {
      for (gint64 j = 0; j < total; j++)
        row[j] /= params->softcap;
      graft_vm_tanh (row, row, total);
      for (gint64 j = 0; j < total; j++)
        row[j] *= params->softcap;
    }
  mask_row_bias (job->mask, b, h, i, total, bias);
  for (gint64 j = 0; j < total; j++)
    {
      gint64 position = i + offset - j;
      if ((params->causal && position < 0) || (params->left_window >= 0 && position > params->left_window) ||
          (params->right_window >= 0 && -position > params->right_window) || j >= valid)
        bias[j] = -INFINITY;
      row[j] += bias[j];
      any = any || !(isinf (bias[j]) && bias[j] < 0);
    }
  if (any)
    graft_vm_softmax_rows (row, row, 1, total, FALSE);
  else
    memset (row, 0, total * sizeof (float));
}

static void
attention_head (gint64 index, gpointer data)
{
  const BlockedAttention *job = data;
  const HeadLayout *ql = job->ql;
  gint64 b = index / ql->heads, h = index % ql->heads, kv_head = h / job->group;
  gint64 total = job->total_seq, size = ql->head_size, v_size = job->v_size;
  /* causal and window masks align bottom-right: query i sits at key position i + offset */
  gint64 valid = job->nonpad ? graft_rt_tensor_get_f64 (job->nonpad, b) : total;
  gint64 offset = job->nonpad ? valid - ql->seq : job->past_seq;
  const float *k = job->keys + (b * job->kv_heads + kv_head) * total * size;
  const float *v = job->values + (b * job->kv_heads + kv_head) * total * v_size;
  gint64 q_stride = ql->packed ? ql->heads * size : size, y_stride = job->yl->packed ? job->yl->heads * v_size : v_size;
  g_autofree float *scores = g_new (float, ATTENTION_BLOCK * MAX (total, 1));
  g_autofree float *bias = g_new (float, MAX (total, 1));
  for (gint64 i0 = 0; i0 < ql->seq; i0 += ATTENTION_BLOCK)
    {
      gint64 rows = MIN (ATTENTION_BLOCK, ql->seq - i0);
      graft_kernel_sgemm (NULL, FALSE, TRUE, rows, total, size, job->params->scale, job->q + head_layout_row (ql, b, h, i0),
                          q_stride, k, size, 0.0f, scores, total);
      for (gint64 r = 0; r < rows; r++)
        attention_row_weights (job, b, h, i0 + r, offset, valid, scores + r * total, bias);
      graft_kernel_sgemm (NULL, FALSE, FALSE, rows, v_size, total, 1.0f, scores, total, v, v_size, 0.0f,
                          job->y + head_layout_row (job->yl, b, h, i0), y_stride);
    }
}

/* The blocked path takes float32 when no qk_matmul_output is asked for;
 * at the portable SIMD level the double loop below stays the reference
 * the tests hold it to. */
static gboolean
attention_blocked_applies (const GraftRtTensor *q, const GraftRtTensor *keys, const GraftRtTensor *values,
                           const GraftRtTensor *y, const GraftRtTensor *qk_output)
{
  return graft_kernel_table ()->avx2 && qk_output == NULL && q->dtype == GRAFT_DTYPE_FLOAT32 &&
         keys->dtype == GRAFT_DTYPE_FLOAT32 && values->dtype == GRAFT_DTYPE_FLOAT32 && y->dtype == GRAFT_DTYPE_FLOAT32;
}

static gboolean
kernel_attention (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *q = ctx->inputs[ATTENTION_Q], *k = ctx->inputs[ATTENTION_K], *v = ctx->inputs[ATTENTION_V];
  GraftRtTensor *mask = graft_kernel_input (ctx, ATTENTION_MASK);
  GraftRtTensor *past_key = graft_kernel_input (ctx, ATTENTION_PAST_KEY);
  GraftRtTensor *past_value = graft_kernel_input (ctx, ATTENTION_PAST_VALUE);
  GraftRtTensor *nonpad = graft_kernel_input (ctx, ATTENTION_NONPAD_KV_SEQLEN);
  if ((past_key == NULL) != (past_value == NULL))
    return graft_kernel_fail (error, "past_key and past_value must be given together");
  if (nonpad && past_key)
    return graft_kernel_fail (error, "nonpad_kv_seqlen cannot be combined with a past cache");
  if (q->rank != k->rank || q->rank != v->rank)
    return graft_kernel_fail (error, "Q, K and V must have the same rank");

  HeadLayout ql, kl, vl;
  gint64 kv_heads_attr = graft_node_attr_int (ctx->node, "kv_num_heads", 0);
  if (!head_layout_init (&ql, q, graft_node_attr_int (ctx->node, "q_num_heads", 0), "Q", error) ||
      !head_layout_init (&kl, k, kv_heads_attr, "K", error) ||
      !head_layout_init (&vl, v, kv_heads_attr, "V", error))
    return FALSE;
  if (kl.batch != ql.batch || vl.batch != ql.batch || kl.heads != vl.heads || kl.seq != vl.seq)
    return graft_kernel_fail (error, "K and V must agree with Q on batch and with each other on heads and length");
  if (kl.head_size != ql.head_size)
    return graft_kernel_fail (error, "Q and K head sizes differ (%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ")",
                              ql.head_size, kl.head_size);
  if (kl.heads <= 0 || ql.heads % kl.heads != 0)
    return graft_kernel_fail (error, "%" G_GINT64_FORMAT " query heads do not group over %" G_GINT64_FORMAT
                              " key/value heads", ql.heads, kl.heads);
  if (nonpad && nonpad->numel != ql.batch)
    return graft_kernel_fail (error, "nonpad_kv_seqlen must have one length per batch");

  AttentionParams params = {
    .causal = graft_node_attr_int (ctx->node, "is_causal", 0) != 0,
    .left_window = graft_node_attr_int (ctx->node, "left_window_size", -1),
    .right_window = graft_node_attr_int (ctx->node, "right_window_size", -1),
    .scale = graft_node_attr_float (ctx->node, "scale", 1.0 / sqrt ((double) MAX (ql.head_size, 1))),
    .softcap = graft_node_attr_float (ctx->node, "softcap", 0),
    .qk_mode = graft_node_attr_int (ctx->node, "qk_matmul_output_mode", 0),
  };
  g_autoptr (GraftRtTensor) keys = concat_cache (ctx, ATTENTION_PRESENT_KEY, past_key, k, &kl, error);
  if (keys == NULL)
    return FALSE;
  g_autoptr (GraftRtTensor) values = concat_cache (ctx, ATTENTION_PRESENT_VALUE, past_value, v, &vl, error);
  if (values == NULL)
    return FALSE;
  gint64 past_seq = past_key ? past_key->dims[2] : 0, total_seq = keys->dims[2], v_size = vl.head_size;
  gint64 target[4] = { ql.batch, ql.heads, ql.seq, total_seq };
  MaskView mask_view;
  if (!mask_view_init (&mask_view, mask, target, error))
    return FALSE;

  GraftRtTensor *y = graft_kernel_output (ctx, ATTENTION_Y, error);
  if (y == NULL)
    return FALSE;
  GraftRtTensor *qk_output = NULL;
  if (ctx->n_outputs > ATTENTION_QK_OUTPUT && graft_kernel_wants_output (ctx, ATTENTION_QK_OUTPUT))
    if ((qk_output = graft_kernel_output (ctx, ATTENTION_QK_OUTPUT, error)) == NULL)
      return FALSE;
  HeadLayout yl = { ql.packed, ql.batch, ql.heads, ql.seq, v_size };
  gint64 group = ql.heads / kl.heads;
  if (attention_blocked_applies (q, keys, values, y, qk_output))
    {
      BlockedAttention job = { &params, &mask_view, &ql, &yl, q->data, keys->data, values->data, y->data, nonpad,
                               kl.heads, total_seq, past_seq, v_size, group };
      if (y->numel > 0)
        graft_kernel_parallel_for (ctx, ql.batch * ql.heads, attention_head, &job);
      return TRUE;
    }
  g_autofree double *scores = g_new (double, MAX (total_seq, 1));
  g_autofree double *bias = g_new (double, MAX (total_seq, 1));

  for (gint64 b = 0; b < ql.batch; b++)
    {
      /* Causal and window masks align bottom-right: query i sits at key position i + offset. */
      gint64 offset = nonpad ? graft_rt_tensor_get_f64 (nonpad, b) - ql.seq : past_seq;
      for (gint64 h = 0; h < ql.heads; h++)
        {
          gint64 kv_head = h / group;
          for (gint64 i = 0; i < ql.seq; i++)
            {
              gint64 q_row = head_layout_row (&ql, b, h, i);
              gboolean all_masked = TRUE;
              double max_logit = -INFINITY;
              gint64 qk_row = ((b * ql.heads + h) * ql.seq + i) * total_seq;
              for (gint64 j = 0; j < total_seq; j++)
                {
                  gint64 k_row = ((b * kl.heads + kv_head) * total_seq + j) * ql.head_size;
                  double dot = 0;
                  for (gint64 d = 0; d < ql.head_size; d++)
                    dot += value_at (q, q_row + d) * value_at (keys, k_row + d);
                  double score = dot * params.scale;
                  if (params.softcap > 0)
                    score = params.softcap * tanh (score / params.softcap);
                  double position = i + offset - j;
                  bias[j] = mask_view_bias (&mask_view, b, h, i, j);
                  if (params.causal && position < 0)
                    bias[j] = -INFINITY;
                  if ((params.left_window >= 0 && position > params.left_window) ||
                      (params.right_window >= 0 && -position > params.right_window))
                    bias[j] = -INFINITY;
                  if (nonpad && j >= graft_rt_tensor_get_f64 (nonpad, b))
                    bias[j] = -INFINITY;
                  if (qk_output && params.qk_mode < 2)
                    graft_rt_tensor_set_f64 (qk_output, qk_row + j, score);
                  scores[j] = score + bias[j];
                  if (qk_output && params.qk_mode == 2)
                    graft_rt_tensor_set_f64 (qk_output, qk_row + j, scores[j]);
                  all_masked = all_masked && isinf (bias[j]) && bias[j] < 0;
                  max_logit = MAX (max_logit, scores[j]);
                }
              /* A query that may attend no key gets zero weights (and Y = 0), not NaN. */
              double sum = 0;
              for (gint64 j = 0; j < total_seq; j++)
                {
                  scores[j] = all_masked ? 0 : exp (scores[j] - max_logit);
                  sum += scores[j];
                }
              for (gint64 j = 0; j < total_seq; j++)
                {
                  scores[j] = sum > 0 ? scores[j] / sum : 0;
                  if (qk_output && params.qk_mode == 3)
                    graft_rt_tensor_set_f64 (qk_output, qk_row + j, scores[j]);
                }
              gint64 y_row = head_layout_row (&yl, b, h, i);
              for (gint64 d = 0; d < v_size; d++)
                {
                  double acc = 0;
                  for (gint64 j = 0; j < total_seq; j++)
                    acc += scores[j] * value_at (values, ((b * kl.heads + kv_head) * total_seq + j) * v_size + d);
                  graft_rt_tensor_set_f64 (y, y_row + d, acc);
                }
            }
        }
    }
  return TRUE;
}

/* ---- FlexAttention (ai.onnx.preview) ---- */

static gboolean
infer_flex_attention (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *q = graft_infer_input (ctx, 0), *v = graft_infer_input (ctx, 2);
  if (q->shape.rank != 4 || v->shape.rank != 4)
    {
      graft_infer_set_output_unknown (ctx, 0, q->dtype, 4);
      return TRUE;
    }
  GraftDim y[4] = { q->shape.dims[0], q->shape.dims[1], q->shape.dims[2], v->shape.dims[3] };
  set_output_dims (ctx, 0, q->dtype, 4, y);
  return TRUE;
}

/* Runs a score_mod / prob_mod subgraph over the whole [B, H, L, S] tensor
 * and replaces it with the result, which must keep its shape. */
static gboolean
apply_modifier (GraftKernelContext *ctx, const char *attribute, GraftRtTensor **values, GError **error)
{
  GraftGraph *graph = graft_node_attr_graph (ctx->node, attribute);
  if (graph == NULL)
    return TRUE;
  g_autoptr(GPtrArray) outputs = graft_kernel_run_subgraph (ctx, graph, values, 1, error);
  if (outputs == NULL)
    return FALSE;
  GraftRtTensor *result = outputs->len == 1 ? outputs->pdata[0] : NULL;
  if (result == NULL || result->numel != (*values)->numel)
    return graft_kernel_fail (error, "%s must give one tensor of its input's shape", attribute);
  GraftRtTensor *converted = graft_rt_tensor_cast (result, (*values)->dtype, error);
  if (converted == NULL)
    return FALSE;
  graft_rt_tensor_unref (*values);
  *values = converted;
  return TRUE;
}

static gboolean
kernel_flex_attention (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *q = ctx->inputs[0], *k = ctx->inputs[1], *v = ctx->inputs[2];
  if (q->rank != 4 || k->rank != 4 || v->rank != 4)
    return graft_kernel_fail (error, "Q, K and V must have rank 4");
  gint64 batch = q->dims[0], q_heads = q->dims[1], q_seq = q->dims[2], size = q->dims[3];
  gint64 kv_heads = k->dims[1], kv_seq = k->dims[2], v_size = v->dims[3];
  if (k->dims[0] != batch || v->dims[0] != batch || v->dims[1] != kv_heads || v->dims[2] != kv_seq || k->dims[3] != size)
    return graft_kernel_fail (error, "K and V must match Q's batch and head size, and each other's heads and length");
  if (kv_heads <= 0 || q_heads % kv_heads != 0)
    return graft_kernel_fail (error, "%" G_GINT64_FORMAT " query heads do not group over %" G_GINT64_FORMAT
                              " key/value heads", q_heads, kv_heads);
  /* Scores are float32 unless the inputs or softmax_precision are double
   * (float16/bfloat16 inputs arrive here as float32). */
  GraftDType precision = graft_node_attr_int (ctx->node, "softmax_precision",
                                              q->dtype == GRAFT_DTYPE_FLOAT64 ? GRAFT_DTYPE_FLOAT64 : GRAFT_DTYPE_FLOAT32);
  if (precision != GRAFT_DTYPE_FLOAT32 && precision != GRAFT_DTYPE_FLOAT64)
    return graft_kernel_unsupported (error, "softmax_precision %s (float and double are)", graft_dtype_to_string (precision));
  double scale = graft_node_attr_float (ctx->node, "scale", 1.0 / sqrt ((double) MAX (size, 1)));
  gint64 dims[4] = { batch, q_heads, q_seq, kv_seq }, group = q_heads / kv_heads;
  GraftRtTensor *scores = graft_rt_tensor_new (precision, 4, dims, error);
  if (scores == NULL)
    return FALSE;
  g_autoptr(GraftRtTensor) owned_scores = scores;
  for (gint64 row = 0; row < batch * q_heads * q_seq; row++)
    {
      gint64 b = row / (q_heads * q_seq), h = row / q_seq % q_heads;
      for (gint64 j = 0; j < kv_seq; j++)
        {
          double dot = 0;
          gint64 k_row = ((b * kv_heads + h / group) * kv_seq + j) * size;
          for (gint64 d = 0; d < size; d++)
            dot += value_at (q, row * size + d) * value_at (k, k_row + d);
          graft_rt_tensor_set_f64 (scores, row * kv_seq + j, dot * scale);
        }
    }
  if (!apply_modifier (ctx, "score_mod", &owned_scores, error))
    return FALSE;
  scores = owned_scores;
  for (gint64 row = 0; row < batch * q_heads * q_seq; row++)
    {
      double max_score = -INFINITY, sum = 0;
      for (gint64 j = 0; j < kv_seq; j++)
        max_score = MAX (max_score, graft_rt_tensor_get_f64 (scores, row * kv_seq + j));
      for (gint64 j = 0; j < kv_seq; j++)
        sum += exp (graft_rt_tensor_get_f64 (scores, row * kv_seq + j) - max_score);
      for (gint64 j = 0; j < kv_seq; j++)
        graft_rt_tensor_set_f64 (scores, row * kv_seq + j, exp (graft_rt_tensor_get_f64 (scores, row * kv_seq + j) - max_score) / sum);
    }
  if (!apply_modifier (ctx, "prob_mod", &owned_scores, error))
    return FALSE;
  scores = owned_scores;
  GraftRtTensor *y = graft_kernel_output (ctx, 0, error);
  if (y == NULL)
    return FALSE;
  for (gint64 row = 0; row < batch * q_heads * q_seq; row++)
    {
      gint64 b = row / (q_heads * q_seq), h = row / q_seq % q_heads;
      for (gint64 d = 0; d < v_size; d++)
        {
          double acc = 0;
          for (gint64 j = 0; j < kv_seq; j++)
            acc += value_at (scores, row * kv_seq + j) * value_at (v, ((b * kv_heads + h / group) * kv_seq + j) * v_size + d);
          graft_rt_tensor_set_f64 (y, row * v_size + d, acc);
        }
    }
  return TRUE;
}

/* ---- RotaryEmbedding ---- */

/* One head's first 2·half values rotated by the position's angles: pairs
 * (i, i + half), or (2i, 2i + 1) when interleaved. */
static void
rotate_float_row (const float *x, float *y, const float *cos_row, const float *sin_row, gint64 half,
                  gboolean interleaved)
{
  if (interleaved)
    for (gint64 i = 0; i < half; i++)
      {
        float x1 = x[2 * i], x2 = x[2 * i + 1];
        y[2 * i] = cos_row[i] * x1 - sin_row[i] * x2;
        y[2 * i + 1] = sin_row[i] * x1 + cos_row[i] * x2;
      }
  else
    for (gint64 i = 0; i < half; i++)
      {
        float x1 = x[i], x2 = x[i + half];
        y[i] = cos_row[i] * x1 - sin_row[i] * x2;
        y[i + half] = sin_row[i] * x1 + cos_row[i] * x2;
      }
}

static gboolean
kernel_rotary_embedding (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0], *cos_cache = ctx->inputs[1], *sin_cache = ctx->inputs[2];
  GraftRtTensor *position_ids = graft_kernel_input (ctx, 3);
  gboolean interleaved = graft_node_attr_int (ctx->node, "interleaved", 0) != 0;
  HeadLayout xl;
  if (!head_layout_init (&xl, x, graft_node_attr_int (ctx->node, "num_heads", 0), "X", error))
    return FALSE;
  gint64 rotated = graft_node_attr_int (ctx->node, "rotary_embedding_dim", 0);
  if (rotated == 0)
    rotated = xl.head_size;
  if (rotated < 0 || rotated > xl.head_size || rotated % 2 != 0)
    return graft_kernel_fail (error, "rotary_embedding_dim %" G_GINT64_FORMAT " must be even and at most the head size %"
                              G_GINT64_FORMAT, rotated, xl.head_size);
  gint64 half = rotated / 2;
  if (cos_cache->rank < 1 || cos_cache->dims[cos_cache->rank - 1] != half || sin_cache->numel != cos_cache->numel)
    return graft_kernel_fail (error, "cos_cache and sin_cache must end in rotary_embedding_dim / 2 = %" G_GINT64_FORMAT, half);
  gint64 n_positions = cos_cache->numel / MAX (half, 1);
  if (position_ids ? position_ids->numel != xl.batch * xl.seq : n_positions != xl.batch * xl.seq)
    return graft_kernel_fail (error, "%s must cover batch × sequence = %" G_GINT64_FORMAT " positions",
                              position_ids ? "position_ids" : "the caches", xl.batch * xl.seq);
  GraftRtTensor *y = graft_kernel_output (ctx, 0, error);
  if (y == NULL)
    return FALSE;
  /* float32 rows directly; the double loop is the reference (portable level) */
  gboolean fast = graft_kernel_table ()->avx2 && x->dtype == GRAFT_DTYPE_FLOAT32 &&
                  y->dtype == GRAFT_DTYPE_FLOAT32 && cos_cache->dtype == GRAFT_DTYPE_FLOAT32 &&
                  sin_cache->dtype == GRAFT_DTYPE_FLOAT32;

  for (gint64 b = 0; b < xl.batch; b++)
    for (gint64 s = 0; s < xl.seq; s++)
      {
        gint64 position = b * xl.seq + s;
        if (position_ids)
          {
            position = graft_rt_tensor_get_f64 (position_ids, b * xl.seq + s);
            if (position < 0 || position >= n_positions)
              return graft_kernel_fail (error, "position id %" G_GINT64_FORMAT " is outside the caches' %"
                                        G_GINT64_FORMAT " positions", position, n_positions);
          }
        for (gint64 h = 0; h < xl.heads; h++)
          {
            gint64 row = head_layout_row (&xl, b, h, s);
            if (fast)
              rotate_float_row ((const float *) x->data + row, (float *) y->data + row,
                                (const float *) cos_cache->data + position * half,
                                (const float *) sin_cache->data + position * half, half, interleaved);
            else
              for (gint64 i = 0; i < half; i++)
                {
                  double c = graft_rt_tensor_get_f64 (cos_cache, position * half + i);
                  double sn = graft_rt_tensor_get_f64 (sin_cache, position * half + i);
                  gint64 first = interleaved ? 2 * i : i, second = interleaved ? 2 * i + 1 : i + half;
                  double x1 = graft_rt_tensor_get_f64 (x, row + first), x2 = graft_rt_tensor_get_f64 (x, row + second);
                  graft_rt_tensor_set_f64 (y, row + first, c * x1 - sn * x2);
                  graft_rt_tensor_set_f64 (y, row + second, sn * x1 + c * x2);
                }
            graft_copy_block (y, row + rotated, x, row + rotated, xl.head_size - rotated);
          }
      }
  return TRUE;
}

/* Output 0, and output 1 (the carried state) when asked for, else NULL. */
static gboolean
output_and_state (GraftKernelContext *ctx, GraftRtTensor **output, GraftRtTensor **state, GError **error)
{
  *state = NULL;
  if ((*output = graft_kernel_output (ctx, 0, error)) == NULL)
    return FALSE;
  if (ctx->n_outputs > 1 && graft_kernel_wants_output (ctx, 1) && (*state = graft_kernel_output (ctx, 1, error)) == NULL)
    return FALSE;
  return TRUE;
}

/* ---- LinearAttention ---- */

enum { LINEAR_QUERY, LINEAR_KEY, LINEAR_VALUE, LINEAR_PAST_STATE, LINEAR_DECAY, LINEAR_BETA };

static gboolean
infer_linear_attention (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *q = graft_infer_input (ctx, LINEAR_QUERY), *v = graft_infer_input (ctx, LINEAR_VALUE);
  GraftInferValue *past = graft_infer_input (ctx, LINEAR_PAST_STATE);
  gint64 q_heads = graft_node_attr_int (ctx->node, "q_num_heads", 0);
  gint64 kv_heads = graft_node_attr_int (ctx->node, "kv_num_heads", 0);
  if (q->shape.rank != 3 || v->shape.rank != 3)
    {
      graft_infer_set_output_unknown (ctx, 0, q->dtype, q->shape.rank);
      graft_infer_set_output_unknown (ctx, 1, past ? past->dtype : q->dtype, 4);
      return TRUE;
    }
  GraftDim k_size = dim_divided (&q->shape.dims[2], q_heads), v_size = dim_divided (&v->shape.dims[2], kv_heads);
  GraftDim y_last = v_size.kind == GRAFT_DIM_FIXED ? graft_dim_fixed (v_size.value * q_heads) : graft_dim_unknown ();
  GraftDim output[3] = { q->shape.dims[0], q->shape.dims[1], y_last };
  GraftDim state[4] = { q->shape.dims[0], graft_dim_fixed (kv_heads), k_size, v_size };
  set_output_dims (ctx, 0, q->dtype, 3, output);
  if (ctx->n_outputs > 1)
    set_output_dims (ctx, 1, past ? past->dtype : q->dtype, 4, state);
  return TRUE;
}

/* Per-token rate of decay or β for (batch, kv head, step, key index):
 * the input's last axis holds one value per head, one per head and key
 * index (decay), or a single value (β). */
static double
rate_at (const GraftRtTensor *rate, gint64 b, gint64 head, gint64 t, gint64 k, gint64 kv_heads, gint64 k_size)
{
  gint64 last = rate->dims[2];
  gint64 row = (b * rate->dims[1] + t) * last;
  if (last == kv_heads)
    return graft_rt_tensor_get_f64 (rate, row + head);
  if (last == kv_heads * k_size)
    return graft_rt_tensor_get_f64 (rate, row + head * k_size + k);
  return graft_rt_tensor_get_f64 (rate, row);
}

static gboolean
kernel_linear_attention (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *q = ctx->inputs[LINEAR_QUERY], *k = ctx->inputs[LINEAR_KEY], *v = ctx->inputs[LINEAR_VALUE];
  GraftRtTensor *past = graft_kernel_input (ctx, LINEAR_PAST_STATE);
  GraftRtTensor *decay = graft_kernel_input (ctx, LINEAR_DECAY), *beta = graft_kernel_input (ctx, LINEAR_BETA);
  const char *rule = graft_node_attr_string (ctx->node, "update_rule", "gated_delta");
  gboolean gated = g_str_has_prefix (rule, "gated"), delta = g_str_has_suffix (rule, "delta");
  if (!g_str_equal (rule, "linear") && !g_str_equal (rule, "gated") && !g_str_equal (rule, "delta") &&
      !g_str_equal (rule, "gated_delta"))
    return graft_kernel_fail (error, "unknown update_rule '%s'", rule);
  if (gated != (decay != NULL) || delta != (beta != NULL))
    return graft_kernel_fail (error, "update_rule '%s' %s decay and %s beta", rule,
                              gated ? "needs" : "forbids", delta ? "needs" : "forbids");
  HeadLayout ql, kl, vl;
  gint64 q_heads = graft_node_attr_int (ctx->node, "q_num_heads", 0);
  gint64 kv_heads = graft_node_attr_int (ctx->node, "kv_num_heads", 0);
  if (q->rank != 3 || k->rank != 3 || v->rank != 3)
    return graft_kernel_fail (error, "query, key and value must be [batch, length, heads × size]");
  if (!head_layout_init (&ql, q, q_heads, "query", error) || !head_layout_init (&kl, k, kv_heads, "key", error) ||
      !head_layout_init (&vl, v, kv_heads, "value", error))
    return FALSE;
  if (q_heads % kv_heads != 0 || kl.head_size != ql.head_size || kl.seq != ql.seq || vl.seq != ql.seq)
    return graft_kernel_fail (error, "query, key and value disagree on length, key size or head grouping");
  gint64 k_size = ql.head_size, v_size = vl.head_size, group = q_heads / kv_heads;
  if (decay && (decay->rank != 3 || decay->dims[0] != ql.batch || decay->dims[1] != ql.seq ||
                (decay->dims[2] != kv_heads && decay->dims[2] != kv_heads * k_size)))
    return graft_kernel_fail (error, "decay must be [batch, length, kv heads] or [batch, length, kv heads × key size]");
  if (beta && (beta->rank != 3 || beta->dims[0] != ql.batch || beta->dims[1] != ql.seq ||
               (beta->dims[2] != kv_heads && beta->dims[2] != 1)))
    return graft_kernel_fail (error, "beta must be [batch, length, kv heads] or [batch, length, 1]");
  gint64 state_dims[4] = { ql.batch, kv_heads, k_size, v_size };
  if (past && (past->rank != 4 || memcmp (past->dims, state_dims, sizeof state_dims) != 0))
    return graft_kernel_fail (error, "past_state must be [batch, kv heads, key size, value size]");
  double scale = graft_node_attr_float (ctx->node, "scale", 0);
  if (scale == 0)
    scale = 1.0 / sqrt ((double) k_size);
  GraftRtTensor *y, *present;
  if (!output_and_state (ctx, &y, &present, error))
    return FALSE;

  gint64 state_size = kv_heads * k_size * v_size;
  g_autofree double *state = g_new0 (double, MAX (state_size, 1));
  g_autofree double *update = g_new (double, MAX (v_size, 1));
  HeadLayout yl = { TRUE, ql.batch, q_heads, ql.seq, v_size };
  for (gint64 b = 0; b < ql.batch; b++)
    {
      for (gint64 i = 0; i < state_size; i++)
        state[i] = past ? graft_rt_tensor_get_f64 (past, b * state_size + i) : 0;
      for (gint64 t = 0; t < ql.seq; t++)
        {
          for (gint64 h = 0; h < kv_heads; h++)
            {
              double *s = state + h * k_size * v_size;
              gint64 k_row = head_layout_row (&kl, b, h, t), v_row = head_layout_row (&vl, b, h, t);
              if (gated)
                for (gint64 i = 0; i < k_size; i++)
                  {
                    double factor = exp (rate_at (decay, b, h, t, i, kv_heads, k_size));
                    for (gint64 j = 0; j < v_size; j++)
                      s[i * v_size + j] *= factor;
                  }
              for (gint64 j = 0; j < v_size; j++)
                {
                  update[j] = graft_rt_tensor_get_f64 (v, v_row + j);
                  if (delta)
                    {
                      /* The delta rule writes only what the state does not already recall for k. */
                      double recalled = 0;
                      for (gint64 i = 0; i < k_size; i++)
                        recalled += s[i * v_size + j] * graft_rt_tensor_get_f64 (k, k_row + i);
                      update[j] = rate_at (beta, b, h, t, 0, kv_heads, k_size) * (update[j] - recalled);
                    }
                }
              for (gint64 i = 0; i < k_size; i++)
                {
                  double key = graft_rt_tensor_get_f64 (k, k_row + i);
                  for (gint64 j = 0; j < v_size; j++)
                    s[i * v_size + j] += key * update[j];
                }
            }
          for (gint64 h = 0; h < q_heads; h++)
            {
              const double *s = state + (h / group) * k_size * v_size;
              gint64 q_row = head_layout_row (&ql, b, h, t), y_row = head_layout_row (&yl, b, h, t);
              for (gint64 j = 0; j < v_size; j++)
                {
                  double acc = 0;
                  for (gint64 i = 0; i < k_size; i++)
                    acc += graft_rt_tensor_get_f64 (q, q_row + i) * s[i * v_size + j];
                  graft_rt_tensor_set_f64 (y, y_row + j, scale * acc);
                }
            }
        }
      for (gint64 i = 0; present && i < state_size; i++)
        graft_rt_tensor_set_f64 (present, b * state_size + i, state[i]);
    }
  return TRUE;
}

/* ---- CausalConvWithState ---- */

static gboolean
infer_causal_conv (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *x = graft_infer_input (ctx, 0), *w = graft_infer_input (ctx, 1);
  graft_infer_set_output (ctx, 0, x->dtype, &x->shape);
  if (ctx->n_outputs > 1)
    {
      if (x->shape.rank != 3 || w->shape.rank != 3 || w->shape.dims[2].kind != GRAFT_DIM_FIXED)
        graft_infer_set_output_unknown (ctx, 1, x->dtype, 3);
      else
        {
          GraftDim state[3] = { x->shape.dims[0], x->shape.dims[1], graft_dim_fixed (w->shape.dims[2].value - 1) };
          set_output_dims (ctx, 1, x->dtype, 3, state);
        }
    }
  return TRUE;
}

/* Depthwise causal 1-D convolution over [past_state ++ input]: output t
 * sees positions t - (k-1) … t; present_state keeps the last k-1. */
static gboolean
kernel_causal_conv (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0], *w = ctx->inputs[1];
  GraftRtTensor *bias = graft_kernel_input (ctx, 2), *past = graft_kernel_input (ctx, 3);
  const char *activation = graft_node_attr_string (ctx->node, "activation", "none");
  gboolean silu = g_str_equal (activation, "silu") || g_str_equal (activation, "swish");
  if (!silu && !g_str_equal (activation, "none"))
    return graft_kernel_fail (error, "unknown activation '%s' (none, silu, swish)", activation);
  if (x->rank != 3 || w->rank != 3 || w->dims[0] != x->dims[1] || w->dims[1] != 1 || w->dims[2] < 1)
    return graft_kernel_fail (error, "input must be [batch, channels, length] and weight [channels, 1, k]");
  gint64 batch = x->dims[0], channels = x->dims[1], length = x->dims[2], width = w->dims[2], carry = width - 1;
  if (bias && bias->numel != channels)
    return graft_kernel_fail (error, "bias must have one value per channel");
  if (past && (past->rank != 3 || past->dims[0] != batch || past->dims[1] != channels || past->dims[2] != carry))
    return graft_kernel_fail (error, "past_state must be [batch, channels, k - 1 = %" G_GINT64_FORMAT "]", carry);
  GraftRtTensor *y, *present;
  if (!output_and_state (ctx, &y, &present, error))
    return FALSE;
  g_autofree double *padded = g_new (double, carry + length);
  for (gint64 b = 0; b < batch; b++)
    for (gint64 c = 0; c < channels; c++)
      {
        gint64 plane = b * channels + c;
        for (gint64 i = 0; i < carry; i++)
          padded[i] = past ? graft_rt_tensor_get_f64 (past, plane * carry + i) : 0;
        for (gint64 t = 0; t < length; t++)
          padded[carry + t] = graft_rt_tensor_get_f64 (x, plane * length + t);
        for (gint64 t = 0; t < length; t++)
          {
            double acc = bias ? graft_rt_tensor_get_f64 (bias, c) : 0;
            for (gint64 j = 0; j < width; j++)
              acc += graft_rt_tensor_get_f64 (w, c * width + j) * padded[t + j];
            if (silu)
              acc = acc / (1 + exp (-acc));
            graft_rt_tensor_set_f64 (y, plane * length + t, acc);
          }
        for (gint64 i = 0; present && i < carry; i++)
          graft_rt_tensor_set_f64 (present, plane * carry + i, padded[length + i]);
      }
  return TRUE;
}

/* ---- graft::ScaledDotProductAttention: the exported attention pattern fused ---- */

/* The runtime's fused form of MatMul (Q, Kᵀ) → [Mul by scale or Div by
 * divisor] → [Add mask] → Softmax (last axis) → MatMul (·, V), see
 * runtime/fusion-patterns.h: Y [.., M, E] from Q [.., M, D], Kᵀ [.., D, N]
 * (K [.., N, D] when the engine skips its Transpose) and V [.., N, E],
 * with the same float operations in the same order as the nodes, a block
 * of queries at a time. It declines (no output: the nodes run) anything
 * but float32 with equal batch dims, a mask broadcasting to the scores and
 * scalar scales, and at the portable SIMD level, where the nodes are the
 * reference the tests hold it to. */

#include "runtime/fusion-patterns.h"
#include "runtime/kernels/attention.h"

typedef struct {
  const float *q, *k, *v, *mask, *scale, *divisor;
  float scale_value, divisor_value;   /* what scale and divisor point to */
  float *mask_copy;                   /* a float64 mask in float32 (owned), or NULL */
  float *y;
  gboolean k_transposed;         /* k holds K [.., N, D] */
  gboolean causal;               /* keys after the query masked out (scaled_dot_product_attention's is_causal) */
  gint64 M, N, D, E, blocks;
  int batch_rank;
  gint64 batch_dims[GRAFT_RT_MAX_RANK], mask_strides[GRAFT_RT_MAX_RANK + 2];
} FusedAttention;

static GRAFT_HOT_LOOP void
fused_attention_block (gint64 index, gpointer data)
{
  const FusedAttention *job = data;
  gint64 item = index / job->blocks, i0 = index % job->blocks * ATTENTION_BLOCK;
  gint64 M = job->M, N = job->N, D = job->D, E = job->E, rows = MIN (ATTENTION_BLOCK, M - i0);
  const float *k = job->k + item * N * D, *v = job->v + item * N * E;
  g_autofree float *scores = g_new (float, rows * N);
  graft_kernel_sgemm (NULL, FALSE, job->k_transposed, rows, N, D, 1.0f, job->q + (item * M + i0) * D, D, k,
                      job->k_transposed ? D : N, 0.0f, scores, N);
  gint64 mask_item = 0, rest = item;
  for (int d = job->batch_rank - 1; d >= 0; rest /= job->batch_dims[d], d--)
    mask_item += rest % job->batch_dims[d] * job->mask_strides[d];
  gint64 mask_row = job->mask_strides[job->batch_rank], mask_col = job->mask_strides[job->batch_rank + 1];
  /* the scale and divisor in locals, the mask's columns contiguous or
   * one value, and the function built at -O3 (GRAFT_HOT_LOOP): loops that
   * are vectorized. They were not at the build's -O2 (GCC 12 vectorizes
   * only loops that need no remainder there): the scale and mask took
   * 0.32 / 0.42 M TSC ticks a layer of the BERT-like encoder with AVX2 /
   * AVX-512, 0.13 / 0.16 now (seq 128, 12 heads, one thread). */
  float scale = job->scale ? *job->scale : 1, divisor = job->divisor ? *job->divisor : 1;
  for (gint64 r = 0; r < rows; r++)
    {
      float *restrict row = scores + r * N;
      if (job->scale)
        for (gint64 j = 0; j < N; j++)
          row[j] *= scale;
      if (job->divisor)
        for (gint64 j = 0; j < N; j++)
          row[j] /= divisor;
      if (job->causal)
        for (gint64 j = i0 + r + 1; j < N; j++)
          row[j] = -INFINITY;
      if (job->mask)
        {
          const float *restrict m = job->mask + mask_item + (i0 + r) * mask_row;
          if (mask_col == 1)
            for (gint64 j = 0; j < N; j++)
              row[j] += m[j];
          else if (mask_col == 0)
            for (gint64 j = 0; j < N; j++)
              row[j] += m[0];
          else
            for (gint64 j = 0; j < N; j++)
              row[j] += m[j * mask_col];
        }
    }
  /* the weights' sums divide the E values of the product with V, not the N scores */
  float inv_sums[ATTENTION_BLOCK];
  graft_vm_softmax_rows_unscaled (scores, scores, rows, N, inv_sums);
  float *y = job->y + (item * M + i0) * E;
  graft_kernel_sgemm (NULL, FALSE, FALSE, rows, E, N, 1.0f, scores, N, v, E, 0.0f, y, E);
  for (gint64 r = 0; r < rows; r++)
    for (gint64 e = 0; e < E; e++)
      y[r * E + e] *= inv_sums[r];
}

static gboolean
infer_fused_attention (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *q = graft_infer_input (ctx, GRAFT_ATTENTION_FUSION_Q);
  GraftInferValue *v = graft_infer_input (ctx, GRAFT_ATTENTION_FUSION_V);
  int rank = q->shape.rank;
  if (rank < 2 || v->shape.rank != rank)
    {
      /* the kernel declines these: the nodes compute (or reject) them */
      graft_infer_set_output_unknown (ctx, 0, q->dtype, -1);
      return TRUE;
    }
  GraftShape out;
  graft_shape_init (&out, rank);
  for (int d = 0; d < rank - 1; d++)
    out.dims[d] = q->shape.dims[d];
  out.dims[rank - 1] = v->shape.dims[rank - 1];
  graft_infer_set_output (ctx, 0, q->dtype, &out);
  graft_shape_clear (&out);
  return TRUE;
}

/* A float32 scalar that does not broadcast the scores to a higher rank;
 * in a PyTorch file's pattern a float64 one too (a Python float, which
 * multiplies float32 scores in float32). */
static gboolean
fused_scalar (const GraftRtTensor *t, int rank, gboolean aten)
{
  return t == NULL || ((t->dtype == GRAFT_DTYPE_FLOAT32 || (aten && t->dtype == GRAFT_DTYPE_FLOAT64)) &&
                       t->numel == 1 && t->rank <= rank);
}

/* Fills job's shapes, mask and data pointers from q, k (K [.., N, D] when
 * job->k_transposed, else Kᵀ [.., D, N]), v and mask; FALSE when the fused
 * kernel declines them. A float64 mask (aten) is copied to float32. */
static gboolean
fused_attention_prepare (FusedAttention *job, const GraftRtTensor *q, const GraftRtTensor *k,
                         const GraftRtTensor *v, const GraftRtTensor *mask, gboolean aten)
{
  int rank = q->rank, batch_rank = rank - 2;
  /* a PyTorch file's mask may be float64 where torch has float32: Python
   * floats are float64 scalars in the runtime, and torch.where (mask, a
   * float32 0-d tensor, float min) gives float64 there */
  if (rank < 2 || k->rank != rank || v->rank != rank || q->dtype != GRAFT_DTYPE_FLOAT32 ||
      k->dtype != GRAFT_DTYPE_FLOAT32 || v->dtype != GRAFT_DTYPE_FLOAT32 ||
      (mask && ((mask->dtype != GRAFT_DTYPE_FLOAT32 && !(aten && mask->dtype == GRAFT_DTYPE_FLOAT64)) ||
                mask->rank > rank)))
    return FALSE;
  job->M = q->dims[rank - 2];
  job->D = q->dims[rank - 1];
  job->N = k->dims[rank - (job->k_transposed ? 2 : 1)];
  job->E = v->dims[rank - 1];
  if (k->dims[rank - (job->k_transposed ? 1 : 2)] != job->D || v->dims[rank - 2] != job->N ||
      job->M == 0 || job->N == 0 || job->D == 0 || job->E == 0)
    return FALSE;
  for (int d = 0; d < batch_rank; d++)
    if (k->dims[d] != q->dims[d] || v->dims[d] != q->dims[d])
      return FALSE;
  /* the mask right-aligned to the scores [batch.., M, N]: each axis 1 or the scores' */
  gint64 stride = 1;
  for (int d = rank - 1; d >= 0; d--)
    {
      int md = d - (rank - (mask ? mask->rank : 0));
      gint64 size = md >= 0 ? mask->dims[md] : 1;
      gint64 target = d == rank - 1 ? job->N : q->dims[d];
      if (size != 1 && size != target)
        return FALSE;
      job->mask_strides[d] = size == 1 ? 0 : stride;
      stride *= size;
    }
  job->batch_rank = batch_rank;
  memcpy (job->batch_dims, q->dims, batch_rank * sizeof (gint64));
  job->q = q->data;
  job->k = k->data;
  job->v = v->data;
  job->mask = mask ? mask->data : NULL;
  if (mask && mask->dtype == GRAFT_DTYPE_FLOAT64)
    {
      job->mask_copy = g_new (float, MAX (mask->numel, 1));
      for (gint64 i = 0; i < mask->numel; i++)
        job->mask_copy[i] = (float) ((const double *) mask->data)[i];
      job->mask = job->mask_copy;
    }
  job->blocks = (job->M + ATTENTION_BLOCK - 1) / ATTENTION_BLOCK;
  return TRUE;
}

/* Fills job from the inputs; FALSE when the fused kernel declines them. */
static gboolean
fused_attention_setup (GraftKernelContext *ctx, FusedAttention *job)
{
  const GraftRtTensor *q = ctx->inputs[GRAFT_ATTENTION_FUSION_Q], *k = ctx->inputs[GRAFT_ATTENTION_FUSION_KT];
  const GraftRtTensor *v = ctx->inputs[GRAFT_ATTENTION_FUSION_V];
  const GraftRtTensor *mask = graft_kernel_input (ctx, GRAFT_ATTENTION_FUSION_MASK);
  const GraftRtTensor *scale = graft_kernel_input (ctx, GRAFT_ATTENTION_FUSION_SCALE);
  const GraftRtTensor *divisor = graft_kernel_input (ctx, GRAFT_ATTENTION_FUSION_DIVISOR);
  if (!graft_kernel_table ()->avx2 || q == NULL || k == NULL || v == NULL)
    return FALSE;
  int rank = q->rank;
  const GraftAttentionFusion *f = graft_kernel_get_pattern (ctx);
  gboolean aten = f && f->aten;
  if (!fused_scalar (scale, rank, aten) || !fused_scalar (divisor, rank, aten))
    return FALSE;
  job->k_transposed = graft_kernel_input_transposed (ctx, GRAFT_ATTENTION_FUSION_KT);
  if (aten)
    {
      /* a PyTorch file's pattern: its constant scale and its softmax's axis */
      if (f->softmax_dim != -1 && f->softmax_dim != rank - 1)
        return FALSE;
      if (f->has_scale_constant)
        {
          job->scale_value = f->scale_constant;
          job->scale = &job->scale_value;
        }
      if (f->has_divisor_constant)
        {
          job->divisor_value = f->divisor_constant;
          job->divisor = &job->divisor_value;
        }
    }
  if (scale)
    {
      job->scale_value = (float) graft_rt_tensor_get_f64 (scale, 0);
      job->scale = &job->scale_value;
    }
  if (divisor)
    {
      job->divisor_value = (float) graft_rt_tensor_get_f64 (divisor, 0);
      job->divisor = &job->divisor_value;
    }
  return fused_attention_prepare (job, q, k, v, mask, aten);
}

/* Runs job into a new output `output` of ctx shaped as q with E last. */
static gboolean
fused_attention_run (GraftKernelContext *ctx, FusedAttention *job, const GraftRtTensor *q, GError **error)
{
  gint64 dims[GRAFT_RT_MAX_RANK];
  memcpy (dims, q->dims, sizeof (gint64) * q->rank);
  dims[q->rank - 1] = job->E;
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_FLOAT32, q->rank, dims, error);
  if (y == NULL)
    return FALSE;
  job->y = y->data;
  gint64 items = y->numel / (job->M * job->E);
  graft_kernel_parallel_for (ctx, items * job->blocks, fused_attention_block, job);
  return TRUE;
}

static gboolean
kernel_fused_attention (GraftKernelContext *ctx, GError **error)
{
  FusedAttention job = { 0 };
  gboolean prepared = fused_attention_setup (ctx, &job);
  g_autofree float *mask_copy = job.mask_copy;
  if (!prepared)
    return TRUE;   /* declined: no output */
  return fused_attention_run (ctx, &job, ctx->inputs[GRAFT_ATTENTION_FUSION_Q], error);
}

gboolean
graft_attention_sdpa_blocked (GraftKernelContext *ctx, const GraftRtTensor *q, const GraftRtTensor *k,
                              const GraftRtTensor *v, const GraftRtTensor *mask, float scale, gboolean causal,
                              gboolean *declined, GError **error)
{
  FusedAttention job = { 0 };
  *declined = TRUE;
  if (!graft_kernel_table ()->avx2 || (mask && mask->dtype != GRAFT_DTYPE_FLOAT32))
    return TRUE;
  /* a row whose every key a -inf masks out gives zeros in the plain
   * kernel (aten-nn.c) and NaN in a softmax: masks with -inf stay there */
  for (gint64 i = 0; mask && i < mask->numel; i++)
    if (isinf (((const float *) mask->data)[i]))
      return TRUE;
  job.scale_value = scale;
  job.scale = &job.scale_value;
  job.causal = causal;
  job.k_transposed = TRUE;
  if (!fused_attention_prepare (&job, q, k, v, mask, FALSE))
    return TRUE;
  *declined = FALSE;
  return fused_attention_run (ctx, &job, q, error);
}

const GraftOpSchema graft_ops_attention[] = {
  { "onnx::Attention", 23, 0, infer_attention, kernel_attention, GRAFT_OP_HALF_AS_FLOAT, "Q K V attn_mask past_key past_value nonpad_kv_seqlen", "Y present_key present_value qk_matmul_output" },
  { "ai.onnx.preview::FlexAttention", 1, 0, infer_flex_attention, kernel_flex_attention, GRAFT_OP_HALF_AS_FLOAT, "Q K V", "Y" },
  { "onnx::RotaryEmbedding", 23, 0, graft_infer_same_as_input, kernel_rotary_embedding, GRAFT_OP_HALF_AS_FLOAT, "X cos_cache sin_cache position_ids", "Y" },
  { "onnx::LinearAttention", 27, 0, infer_linear_attention, kernel_linear_attention, GRAFT_OP_HALF_AS_FLOAT, "query key value past_state decay beta", "output present_state" },
  { GRAFT_ATTENTION_FUSION_OP, 1, 0, infer_fused_attention, kernel_fused_attention, 0, "Q Kt V mask scale divisor", "Y" },
  { "onnx::CausalConvWithState", 27, 0, infer_causal_conv, kernel_causal_conv, GRAFT_OP_HALF_AS_FLOAT, "input weight bias past_state", "output present_state" },
  { NULL }
};
