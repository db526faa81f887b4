/* Transformer building blocks of opset 23+: Attention (scaled dot-product
 * attention with masks, a key/value cache and grouped-query heads) and
 * RotaryEmbedding. Both accept packed 3-D inputs [batch, seq, heads·size]
 * as well as 4-D [batch, heads, seq, size]. Scores and softmax are
 * accumulated in double. */
#include <math.h>
#include "runtime/kernels/kernel-util.h"

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
                    dot += graft_rt_tensor_get_f64 (q, q_row + d) * graft_rt_tensor_get_f64 (keys, k_row + d);
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
                    acc += scores[j] * graft_rt_tensor_get_f64 (values, ((b * kl.heads + kv_head) * total_seq + j) * v_size + d);
                  graft_rt_tensor_set_f64 (y, y_row + d, acc);
                }
            }
        }
    }
  return TRUE;
}

/* ---- RotaryEmbedding ---- */

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

const GraftOpSchema graft_ops_attention[] = {
  { "onnx::Attention", 23, 0, infer_attention, kernel_attention, GRAFT_OP_HALF_AS_FLOAT },
  { "onnx::RotaryEmbedding", 23, 0, graft_infer_same_as_input, kernel_rotary_embedding, GRAFT_OP_HALF_AS_FLOAT },
  { NULL }
};
