/* The float32 paths of Attention and RotaryEmbedding
 * (runtime/kernels/attention.c) against their double-precision reference
 * loops, which the runtime runs at the portable SIMD level. Attention: random Q, K, V on edge shapes (one query, one
 * key, more queries than a block, odd head sizes, grouped heads, packed
 * 3-D inputs, a past cache, causal and window limits, bool and float
 * masks that broadcast, padding lengths, softcap); RotaryEmbedding: 3-D
 * and 4-D, interleaved or halves, part of odd-sized heads, caches by
 * position id or by token. The exported pattern MatMul → Mul/Div →
 * Add → Softmax → MatMul, fused into graft::ScaledDotProductAttention,
 * against its nodes run one by one, at 1 and 2 threads; and GELU written
 * as Div → Erf → Add → Mul → Mul, run as onnx::Gelu, against its nodes,
 * and its tanh approximation written out (GPT-2's), likewise;
 * and MatMul → Add of a bias, the bias taken into the packed product. */
#include <math.h>
#include <string.h>
#include "runtime/runtime.h"
#include "op-timings.h"
#include "simd-levels.h"
#include "float-graph.h"

typedef struct {
  const char *what;
  gint64 batch, q_heads, kv_heads, q_seq, kv_seq, past, size, v_size;
  gboolean packed, causal;
  int mask;              /* 0 none, 1 bool [q_seq, total], 2 float [batch, 1, q_seq, total] */
  gboolean nonpad;
  double softcap;
  gint64 left_window;    /* -1: none */
} AttentionCase;

static const AttentionCase cases[] = {
  { "one query over a cache", 1, 4, 4, 1, 1, 37, 16, 16, FALSE, TRUE, 0, FALSE, 0, -1 },
  { "one key", 2, 2, 1, 3, 1, 0, 8, 5, FALSE, FALSE, 0, FALSE, 0, -1 },
  { "blocks and a ragged tail", 1, 3, 3, 70, 70, 0, 13, 7, FALSE, TRUE, 0, FALSE, 0, -1 },
  { "packed grouped heads", 2, 6, 2, 9, 11, 0, 4, 6, TRUE, FALSE, 1, FALSE, 0, -1 },
  { "float mask broadcast", 2, 2, 2, 33, 40, 5, 8, 8, FALSE, FALSE, 2, FALSE, 0, -1 },
  { "padding lengths", 2, 2, 2, 4, 12, 0, 8, 8, FALSE, FALSE, 0, TRUE, 0, -1 },
  { "softcap and window", 1, 2, 2, 17, 17, 0, 16, 16, FALSE, TRUE, 0, FALSE, 2.5, 3 },
  { "fully masked rows", 1, 1, 1, 5, 5, 0, 4, 4, FALSE, FALSE, 1, FALSE, 0, -1 },
};

static GraftRtTensor *
random_tensor (GRand *rng, GraftDType dtype, int rank, const gint64 *dims)
{
  GraftRtTensor *t = graft_rt_tensor_new (dtype, rank, dims, NULL);
  for (gint64 i = 0; i < t->numel; i++)
    graft_rt_tensor_set_f64 (t, i, dtype == GRAFT_DTYPE_BOOL ? g_rand_int_range (rng, 0, 3) != 0
                                                             : g_rand_double_range (rng, -2, 2));
  return t;
}

static void
add_graph_input (GraftGraph *graph, GraftNode *node, const char *name, const GraftRtTensor *t)
{
  GraftValue *value = graft_graph_ensure_value (graph, name);
  value->dtype = t->dtype;
  graft_shape_init_fixed (&value->shape, t->rank, t->dims);
  graft_graph_add_input (graph, value);
  graft_node_add_input (node, value);
}

typedef void (*SetAttributes) (GraftNode *node, gconstpointer data);

/* Runs one op node over inputs (by its schema's input_names, absent ones
 * left out) at the given SIMD level; returns its outputs. */
static GPtrArray *
run_node (const char *op, const char *const *input_names, const char *const *output_names, GHashTable *inputs,
          SetAttributes set_attributes, gconstpointer data, GraftSimdLevel level)
{
  g_autoptr(GraftModel) model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *graph = graft_graph_new (op);
  GraftNode *node = graft_graph_add_node (graph, NULL, op, op);
  guint n_inputs = 0;
  graft_model_set_opset (model, "onnx", 24);
  for (guint i = 0; input_names[i]; i++)
    if (g_hash_table_contains (inputs, input_names[i]))
      n_inputs = i + 1;
  for (guint i = 0; i < n_inputs; i++)
    {
      GraftRtTensor *t = g_hash_table_lookup (inputs, input_names[i]);
      if (t)
        add_graph_input (graph, node, input_names[i], t);
      else
        graft_node_add_input (node, NULL);
    }
  for (guint i = 0; output_names[i]; i++)
    {
      GraftValue *value = graft_graph_ensure_value (graph, output_names[i]);
      graft_node_add_output (node, value);
      graft_graph_add_output (graph, value);
    }
  set_attributes (node, data);
  graft_model_set_graph (model, graph);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftRuntime) rt = graft_runtime_new (model, &error);
  g_assert_no_error (error);
  graft_simd_set_max_level (level);
  GPtrArray *result = graft_runtime_run (rt, inputs, NULL, NULL, NULL, &error);
  graft_simd_set_max_level (GRAFT_SIMD_AVX512);
  g_assert_no_error (error);
  return result;
}

/* The outputs of the fast path against the reference's, float32. */
static void
set_attention_attributes (GraftNode *node, gconstpointer data)
{
  const AttentionCase *c = data;
  if (c->packed)
    {
      graft_node_add_attribute (node, graft_attribute_new_int ("q_num_heads", c->q_heads));
      graft_node_add_attribute (node, graft_attribute_new_int ("kv_num_heads", c->kv_heads));
    }
  graft_node_add_attribute (node, graft_attribute_new_int ("is_causal", c->causal));
  if (c->softcap > 0)
    graft_node_add_attribute (node, graft_attribute_new_float ("softcap", c->softcap));
  if (c->left_window >= 0)
    graft_node_add_attribute (node, graft_attribute_new_int ("left_window_size", c->left_window));
}

static void
test_blocked_against_reference (gconstpointer data)
{
  GraftSimdLevel level = GPOINTER_TO_INT (data);
  g_autoptr(GRand) rng = g_rand_new_with_seed (3);
  if (!graft_test_use_simd_level (level))
    return;
  for (guint n = 0; n < G_N_ELEMENTS (cases); n++)
    {
      const AttentionCase *c = &cases[n];
      g_autoptr(GHashTable) inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                            (GDestroyNotify) graft_rt_tensor_unref);
      gint64 total = c->past + c->kv_seq;
      gint64 q4[] = { c->batch, c->q_heads, c->q_seq, c->size }, k4[] = { c->batch, c->kv_heads, c->kv_seq, c->size };
      gint64 v4[] = { c->batch, c->kv_heads, c->kv_seq, c->v_size };
      gint64 q3[] = { c->batch, c->q_seq, c->q_heads * c->size }, k3[] = { c->batch, c->kv_seq, c->kv_heads * c->size };
      gint64 v3[] = { c->batch, c->kv_seq, c->kv_heads * c->v_size };
      int rank = c->packed ? 3 : 4;
      g_hash_table_insert (inputs, "Q", random_tensor (rng, GRAFT_DTYPE_FLOAT32, rank, c->packed ? q3 : q4));
      g_hash_table_insert (inputs, "K", random_tensor (rng, GRAFT_DTYPE_FLOAT32, rank, c->packed ? k3 : k4));
      g_hash_table_insert (inputs, "V", random_tensor (rng, GRAFT_DTYPE_FLOAT32, rank, c->packed ? v3 : v4));
      if (c->mask == 1)
        {
          gint64 dims[] = { c->q_seq, total };
          GraftRtTensor *mask = random_tensor (rng, GRAFT_DTYPE_BOOL, 2, dims);
          if (n == G_N_ELEMENTS (cases) - 1)
            memset (mask->data, 0, mask->nbytes);   /* no query may attend any key */
          g_hash_table_insert (inputs, "attn_mask", mask);
        }
      else if (c->mask == 2)
        {
          gint64 dims[] = { c->batch, 1, c->q_seq, total };
          g_hash_table_insert (inputs, "attn_mask", random_tensor (rng, GRAFT_DTYPE_FLOAT32, 4, dims));
        }
      if (c->past > 0)
        {
          gint64 pk[] = { c->batch, c->kv_heads, c->past, c->size }, pv[] = { c->batch, c->kv_heads, c->past, c->v_size };
          g_hash_table_insert (inputs, "past_key", random_tensor (rng, GRAFT_DTYPE_FLOAT32, 4, pk));
          g_hash_table_insert (inputs, "past_value", random_tensor (rng, GRAFT_DTYPE_FLOAT32, 4, pv));
        }
      if (c->nonpad)
        {
          gint64 dims[] = { c->batch };
          GraftRtTensor *lengths = graft_rt_tensor_new (GRAFT_DTYPE_INT64, 1, dims, NULL);
          for (gint64 b = 0; b < c->batch; b++)
            ((gint64 *) lengths->data)[b] = c->kv_seq - 3 * b;
          g_hash_table_insert (inputs, "nonpad_kv_seqlen", lengths);
        }
      static const char *const names[] = { "Q", "K", "V", "attn_mask", "past_key", "past_value",
                                           "nonpad_kv_seqlen", NULL };
      static const char *const outputs[] = { "Y", "present_key", "present_value", NULL };
      g_autoptr(GPtrArray) fast = run_node ("Attention", names, outputs, inputs, set_attention_attributes, c, level);
      g_autoptr(GPtrArray) reference = run_node ("Attention", names, outputs, inputs, set_attention_attributes, c,
                                                 GRAFT_SIMD_PORTABLE);
      float_graph_assert_outputs_close (c->what, fast, reference, 2e-5);
    }
}

typedef struct {
  const char *what;
  gint64 batch, heads, seq, size, rotated;   /* rotated 0: the whole head */
  gboolean packed, interleaved, position_ids;
} RotaryCase;

static const RotaryCase rotary_cases[] = {
  { "4-D, whole heads", 2, 3, 5, 8, 0, FALSE, FALSE, FALSE },
  { "4-D interleaved, position ids", 1, 2, 7, 6, 0, FALSE, TRUE, TRUE },
  { "packed, part of odd-sized heads", 2, 4, 3, 10, 6, TRUE, FALSE, TRUE },
  { "packed interleaved, one position", 1, 1, 1, 2, 0, TRUE, TRUE, FALSE },
};

static void
set_rotary_attributes (GraftNode *node, gconstpointer data)
{
  const RotaryCase *c = data;
  graft_node_add_attribute (node, graft_attribute_new_int ("interleaved", c->interleaved));
  if (c->rotated)
    graft_node_add_attribute (node, graft_attribute_new_int ("rotary_embedding_dim", c->rotated));
  if (c->packed)
    graft_node_add_attribute (node, graft_attribute_new_int ("num_heads", c->heads));
}

static void
test_rotary_against_reference (gconstpointer data)
{
  GraftSimdLevel level = GPOINTER_TO_INT (data);
  g_autoptr(GRand) rng = g_rand_new_with_seed (17);
  if (!graft_test_use_simd_level (level))
    return;
  for (guint n = 0; n < G_N_ELEMENTS (rotary_cases); n++)
    {
      const RotaryCase *c = &rotary_cases[n];
      g_autoptr(GHashTable) inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                            (GDestroyNotify) graft_rt_tensor_unref);
      gint64 x4[] = { c->batch, c->heads, c->seq, c->size }, x3[] = { c->batch, c->seq, c->heads * c->size };
      gint64 half = (c->rotated ? c->rotated : c->size) / 2, positions = 11;
      gint64 by_position[] = { positions, half }, by_token[] = { c->batch, c->seq, half }, ids[] = { c->batch, c->seq };
      g_hash_table_insert (inputs, "X", random_tensor (rng, GRAFT_DTYPE_FLOAT32, c->packed ? 3 : 4, c->packed ? x3 : x4));
      for (int k = 0; k < 2; k++)
        g_hash_table_insert (inputs, k ? "sin_cache" : "cos_cache",
                             random_tensor (rng, GRAFT_DTYPE_FLOAT32, c->position_ids ? 2 : 3,
                                            c->position_ids ? by_position : by_token));
      if (c->position_ids)
        {
          GraftRtTensor *t = graft_rt_tensor_new (GRAFT_DTYPE_INT64, 2, ids, NULL);
          for (gint64 i = 0; i < t->numel; i++)
            ((gint64 *) t->data)[i] = g_rand_int_range (rng, 0, positions);
          g_hash_table_insert (inputs, "position_ids", t);
        }
      static const char *const names[] = { "X", "cos_cache", "sin_cache", "position_ids", NULL };
      static const char *const outputs[] = { "Y", NULL };
      g_autoptr(GPtrArray) fast = run_node ("RotaryEmbedding", names, outputs, inputs, set_rotary_attributes, c, level);
      g_autoptr(GPtrArray) reference = run_node ("RotaryEmbedding", names, outputs, inputs, set_rotary_attributes, c,
                                                 GRAFT_SIMD_PORTABLE);
      float_graph_assert_outputs_close (c->what, fast, reference, 2e-5);
    }
}

/* ---- The exported attention pattern, fused (graft::ScaledDotProductAttention) ---- */

typedef struct {
  const char *what;
  int rank;              /* 3: [batch, seq, size], 4: [batch, heads, seq, size] */
  gint64 batch, heads, q_seq, kv_seq, size, v_size;
  int scale;             /* 0 none, 1 Mul by a Constant node after the MatMul, 2 Div by an initializer */
  int mask;              /* 0 none, 1 padding [batch, 1, 1, kv] (finfo.min), 2 causal [q, kv] (-inf), 3 [2·batch, ..] */
  gboolean k_transposed; /* K fed as [.., kv, size] through a Transpose of the last two axes */
  gboolean fused;        /* the fused kernel takes it (mask 3 broadcasts the scores up: declined) */
  gboolean cast;         /* a Cast to float between the Softmax and the MatMul (GPT-2) */
} PatternCase;

static const PatternCase pattern_cases[] = {
  { "BERT-like: scale, padding mask, K transposed", 4, 2, 3, 37, 37, 16, 16, 1, 1, TRUE, TRUE },
  { "one query, one key, one head", 4, 1, 1, 1, 1, 8, 8, 2, 0, FALSE, TRUE },
  { "one query over many keys, causal, Cast", 4, 1, 2, 1, 45, 8, 5, 1, 2, TRUE, TRUE, TRUE },
  { "blocks and a ragged tail, causal", 4, 1, 2, 70, 70, 13, 7, 2, 2, FALSE, TRUE },
  { "3-D, no scale, no mask", 3, 3, 1, 33, 9, 4, 6, 0, 0, FALSE, TRUE },
  { "a mask that broadcasts the scores up", 4, 1, 2, 5, 6, 4, 4, 1, 3, FALSE, FALSE },
};

/* MatMul (q, kt) → [Mul/Div] → [Add mask] → Softmax → MatMul (·, v), in
 * the order torch.onnx.export writes it (the scale's Constant between the
 * MatMul and the Mul). */
static GraftModel *
pattern_model (const PatternCase *c, GHashTable *inputs)
{
  GraftModel *model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *graph = graft_graph_new ("attention");
  graft_model_set_opset (model, "onnx", 17);
  static const char *const names[] = { "q", "k", "v", "mask" };
  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    if (g_hash_table_contains (inputs, names[i]))
      {
        const GraftRtTensor *t = g_hash_table_lookup (inputs, names[i]);
        GraftValue *v = float_graph_value (graph, names[i]);
        graft_shape_init_fixed (&v->shape, t->rank, t->dims);
        graft_graph_add_input (graph, v);
      }
  const char *kt = "k";
  if (c->k_transposed)
    {
      GraftNode *t = float_graph_add_node (graph, "Transpose", "k", NULL, NULL, "kt");
      gint64 perm[4] = { 0, 1, 2, 3 };
      perm[c->rank - 2] = c->rank - 1;
      perm[c->rank - 1] = c->rank - 2;
      graft_node_add_attribute (t, graft_attribute_new_ints ("perm", perm, c->rank));
      kt = "kt";
    }
  const char *scores = "scores";
  float_graph_add_node (graph, "MatMul", "q", kt, NULL, scores);
  float scale = 1 / sqrtf (c->size);
  if (c->scale == 1)
    {
      GraftNode *constant = graft_graph_add_node (graph, NULL, "Constant", "scale");
      g_autoptr(GraftTensor) t = graft_tensor_new ("scale", GRAFT_DTYPE_FLOAT32, 0, NULL);
      g_autoptr(GBytes) bytes = g_bytes_new (&scale, sizeof scale);
      g_assert_true (graft_tensor_set_data (t, bytes, NULL));
      graft_node_add_attribute (constant, graft_attribute_new_tensor ("value", t));
      graft_node_add_output (constant, float_graph_value (graph, "scale"));
      float_graph_add_node (graph, "Mul", "scale", scores, NULL, "scaled");
      scores = "scaled";
    }
  else if (c->scale == 2)
    {
      float divisor = sqrtf (c->size);
      float_graph_add_initializer (graph, "divisor", 0, NULL, &divisor);
      float_graph_add_node (graph, "Div", scores, "divisor", NULL, "scaled");
      scores = "scaled";
    }
  if (c->mask)
    {
      float_graph_add_node (graph, "Add", scores, "mask", NULL, "masked");
      scores = "masked";
    }
  GraftNode *softmax = float_graph_add_node (graph, "Softmax", scores, NULL, NULL, "weights");
  graft_node_add_attribute (softmax, graft_attribute_new_int ("axis", -1));
  if (c->cast)
    graft_node_add_attribute (float_graph_add_node (graph, "Cast", "weights", NULL, NULL, "cast"),
                              graft_attribute_new_int ("to", 1));
  float_graph_add_node (graph, "MatMul", c->cast ? "cast" : "weights", "v", NULL, "y");
  graft_graph_add_output (graph, float_graph_value (graph, "y"));
  graft_model_set_graph (model, graph);
  return model;
}

static void
pattern_inputs (GRand *rng, const PatternCase *c, GHashTable *inputs)
{
  gint64 q[4], k[4], v[4], m[4];
  int r = c->rank, lead = r - 2;
  q[0] = k[0] = v[0] = c->batch;
  if (r == 4)
    q[1] = k[1] = v[1] = c->heads;
  q[lead] = c->q_seq;
  q[lead + 1] = c->size;
  k[lead] = c->k_transposed ? c->kv_seq : c->size;
  k[lead + 1] = c->k_transposed ? c->size : c->kv_seq;
  v[lead] = c->kv_seq;
  v[lead + 1] = c->v_size;
  g_hash_table_insert (inputs, (gpointer) "q", random_tensor (rng, GRAFT_DTYPE_FLOAT32, r, q));
  g_hash_table_insert (inputs, (gpointer) "k", random_tensor (rng, GRAFT_DTYPE_FLOAT32, r, k));
  g_hash_table_insert (inputs, (gpointer) "v", random_tensor (rng, GRAFT_DTYPE_FLOAT32, r, v));
  if (c->mask == 0)
    return;
  GraftRtTensor *mask;
  if (c->mask == 1)
    {
      gint64 dims[4] = { c->batch, 1, 1, c->kv_seq };
      mask = graft_rt_tensor_new (GRAFT_DTYPE_FLOAT32, 4, dims, NULL);
      for (gint64 b = 0; b < c->batch; b++)
        for (gint64 j = 0; j < c->kv_seq; j++)
          ((float *) mask->data)[b * c->kv_seq + j] = j >= c->kv_seq - 3 * b ? -G_MAXFLOAT : 0;
    }
  else if (c->mask == 2)
    {
      gint64 dims[2] = { c->q_seq, c->kv_seq };
      mask = graft_rt_tensor_new (GRAFT_DTYPE_FLOAT32, 2, dims, NULL);
      for (gint64 i = 0; i < c->q_seq; i++)
        for (gint64 j = 0; j < c->kv_seq; j++)
          ((float *) mask->data)[i * c->kv_seq + j] = j > i + c->kv_seq - c->q_seq ? -INFINITY : 0;
    }
  else
    {
      m[0] = 2 * c->batch, m[1] = c->heads, m[2] = c->q_seq, m[3] = c->kv_seq;
      mask = random_tensor (rng, GRAFT_DTYPE_FLOAT32, 4, m);
    }
  g_hash_table_insert (inputs, (gpointer) "mask", mask);
}

/* A run at the SIMD level, with or without the engine's fusions;
 * *calls: how many times a node of op ran. */
static GPtrArray *
run_model (GraftModel *model, GHashTable *inputs, guint threads, GraftSimdLevel level, gboolean fusion,
           const char *op, guint *calls)
{
  g_autoptr(GraftRuntime) rt = NULL;
  graft_simd_set_max_level (level);
  GPtrArray *result = graft_test_run_profiled (model, inputs, threads, fusion, &rt);
  graft_simd_set_max_level (GRAFT_SIMD_AVX512);
  *calls = graft_test_op_calls (rt, op, NULL, NULL);
  return result;
}

/* The fused kernel at 1 and 2 threads against the nodes run one by one at
 * the portable level (where the fused kernel declines); and it must have
 * run (no Softmax node ran) unless the case is one it declines. */
static void
test_pattern_against_nodes (gconstpointer data)
{
  GraftSimdLevel level = GPOINTER_TO_INT (data);
  if (!graft_test_use_simd_level (level))
    return;
  graft_simd_set_max_level (GRAFT_SIMD_AVX512);
  g_autoptr(GRand) rng = g_rand_new_with_seed (5);
  for (guint n = 0; n < G_N_ELEMENTS (pattern_cases); n++)
    {
      const PatternCase *c = &pattern_cases[n];
      g_autoptr(GHashTable) inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                            (GDestroyNotify) graft_rt_tensor_unref);
      pattern_inputs (rng, c, inputs);
      g_autoptr(GraftModel) model = pattern_model (c, inputs);
      guint softmax_calls;
      g_autoptr(GPtrArray) reference = run_model (model, inputs, 1, GRAFT_SIMD_PORTABLE, TRUE, "onnx::Softmax",
                                                  &softmax_calls);
      g_assert_cmpuint (softmax_calls, ==, 1);
      for (guint threads = 1; threads <= 2; threads++)
        {
          g_autoptr(GPtrArray) fast = run_model (model, inputs, threads, level, TRUE, "onnx::Softmax", &softmax_calls);
          g_test_message ("%s, %u threads: Softmax ran %u times", c->what, threads, softmax_calls);
          g_assert_cmpuint (softmax_calls, ==, c->fused ? 0 : 1);
          const GraftRtTensor *got = fast->pdata[0], *want = reference->pdata[0];
          g_assert_cmpint (got->rank, ==, want->rank);
          for (int d = 0; d < got->rank; d++)
            g_assert_cmpint (got->dims[d], ==, want->dims[d]);
          float_graph_assert_outputs_close (c->what, fast, reference, 2e-5);
        }
    }
}

/* ---- GELU written as Div → Erf → Add → Mul → Mul, fused (onnx::Gelu) ---- */

static GraftModel *
gelu_model (gint64 n, float divisor)
{
  GraftModel *model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *graph = graft_graph_new ("gelu");
  graft_model_set_opset (model, "onnx", 17);
  gint64 dims[2] = { 1, n };
  float one = 1, half = 0.5f;
  float_graph_add_input (graph, "x", 2, dims);
  float_graph_add_initializer (graph, "divisor", 0, NULL, &divisor);
  float_graph_add_initializer (graph, "one", 0, NULL, &one);
  float_graph_add_initializer (graph, "half", 0, NULL, &half);
  float_graph_add_node (graph, "Div", "x", "divisor", NULL, "scaled");
  float_graph_add_node (graph, "Erf", "scaled", NULL, NULL, "erf");
  float_graph_add_node (graph, "Add", "erf", "one", NULL, "plus");
  float_graph_add_node (graph, "Mul", "x", "plus", NULL, "product");
  float_graph_add_node (graph, "Mul", "product", "half", NULL, "y");
  graft_graph_add_output (graph, float_graph_value (graph, "y"));
  graft_model_set_graph (model, graph);
  return model;
}

/* A row of n inputs "x" in [-4, 4), every fifth ±9.5 (past erf's and
 * tanh's saturation). */
static GHashTable *
gelu_inputs (GRand *rng, gint64 n)
{
  gint64 dims[2] = { 1, n };
  GHashTable *inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, (GDestroyNotify) graft_rt_tensor_unref);
  GraftRtTensor *x = graft_rt_tensor_new (GRAFT_DTYPE_FLOAT32, 2, dims, NULL);
  for (gint64 i = 0; i < x->numel; i++)
    ((float *) x->data)[i] = i % 5 == 4 ? (i % 2 ? 9.5f : -9.5f) : g_rand_double_range (rng, -4, 4);
  g_hash_table_insert (inputs, (gpointer) "x", x);
  return inputs;
}

/* The model run with its fusions at 1 and 2 threads against its nodes
 * run one by one, op (the pattern's telltale node) running once there
 * and fused_calls times with the fusions. */
static void
check_fused_against_nodes (const char *what, GraftModel *model, GHashTable *inputs, GraftSimdLevel level,
                           const char *op, guint fused_calls)
{
  guint calls;
  g_autoptr(GPtrArray) reference = run_model (model, inputs, 1, level, FALSE, op, &calls);
  g_assert_cmpuint (calls, ==, 1);
  for (guint threads = 1; threads <= 2; threads++)
    {
      g_autoptr(GPtrArray) fast = run_model (model, inputs, threads, level, TRUE, op, &calls);
      g_assert_cmpuint (calls, ==, fused_calls);
      float_graph_assert_outputs_close (what, fast, reference, 2e-5);
    }
}

/* The fused GELU against its five nodes, at 1 and 2 threads, on rows
 * that end in SIMD tails, with values past erf's saturation; a Div by
 * another constant than √2 is left alone. */
static void
test_gelu_pattern_against_nodes (gconstpointer data)
{
  GraftSimdLevel level = GPOINTER_TO_INT (data);
  if (!graft_test_use_simd_level (level))
    return;
  graft_simd_set_max_level (GRAFT_SIMD_AVX512);
  g_autoptr(GRand) rng = g_rand_new_with_seed (7);
  static const gint64 lengths[] = { 1, 7, 33, 1000 };
  for (guint n = 0; n < G_N_ELEMENTS (lengths); n++)
    for (int other = 0; other < 2; other++)
      {
        g_autoptr(GHashTable) inputs = gelu_inputs (rng, lengths[n]);
        g_autoptr(GraftModel) model = gelu_model (lengths[n], other ? 1.5f : (float) G_SQRT2);
        check_fused_against_nodes (other ? "not GELU" : "GELU", model, inputs, level, "onnx::Erf", other ? 1 : 0);
      }
}

/* ---- GELU's tanh approximation written out, fused (onnx::Gelu, tanh) ---- */

/* form 0: GPT-2's (0.5·x)·(1 + tanh (k·(x + c·Pow (x, 3))));
 * form 1: torch.onnx.export's x·(x·x), constants first, x·(1 + tanh) · 0.5;
 * form 2: (1 + tanh)·0.5 then ·x. cubic is c (0.044715 makes the GELU). */
static GraftModel *
gelu_tanh_model (gint64 n, int form, float cubic)
{
  GraftModel *model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *graph = graft_graph_new ("gelu-tanh");
  graft_model_set_opset (model, "onnx", 17);
  gint64 dims[2] = { 1, n };
  float one = 1, half = 0.5f, three = 3, k = (float) sqrt (2 / G_PI);
  float_graph_add_input (graph, "x", 2, dims);
  float_graph_add_initializer (graph, "cubic", 0, NULL, &cubic);
  float_graph_add_initializer (graph, "k", 0, NULL, &k);
  float_graph_add_initializer (graph, "one", 0, NULL, &one);
  float_graph_add_initializer (graph, "half", 0, NULL, &half);
  float_graph_add_initializer (graph, "three", 0, NULL, &three);
  if (form == 0)
    {
      float_graph_add_node (graph, "Mul", "x", "half", NULL, "halved");
      float_graph_add_node (graph, "Pow", "x", "three", NULL, "cube");
      float_graph_add_node (graph, "Mul", "cube", "cubic", NULL, "term");
    }
  else
    {
      float_graph_add_node (graph, "Mul", "x", "x", NULL, "square");
      float_graph_add_node (graph, "Mul", "x", "square", NULL, "cube");
      float_graph_add_node (graph, "Mul", "cubic", "cube", NULL, "term");
    }
  float_graph_add_node (graph, "Add", "x", "term", NULL, "inner");
  float_graph_add_node (graph, "Mul", "k", "inner", NULL, "scaled");
  float_graph_add_node (graph, "Tanh", "scaled", NULL, NULL, "tanh");
  float_graph_add_node (graph, "Add", "one", "tanh", NULL, "plus");
  if (form == 0)
    float_graph_add_node (graph, "Mul", "halved", "plus", NULL, "y");
  else if (form == 1)
    {
      float_graph_add_node (graph, "Mul", "x", "plus", NULL, "product");
      float_graph_add_node (graph, "Mul", "half", "product", NULL, "y");
    }
  else
    {
      float_graph_add_node (graph, "Mul", "plus", "half", NULL, "product");
      float_graph_add_node (graph, "Mul", "product", "x", NULL, "y");
    }
  graft_graph_add_output (graph, float_graph_value (graph, "y"));
  graft_model_set_graph (model, graph);
  return model;
}

/* The fused tanh GELU against its eight or nine nodes, at 1 and 2
 * threads, on rows that end in SIMD tails, with values past tanh's
 * saturation; another cubic coefficient than 0.044715 is left alone. */
static void
test_gelu_tanh_pattern_against_nodes (gconstpointer data)
{
  GraftSimdLevel level = GPOINTER_TO_INT (data);
  if (!graft_test_use_simd_level (level))
    return;
  graft_simd_set_max_level (GRAFT_SIMD_AVX512);
  g_autoptr(GRand) rng = g_rand_new_with_seed (11);
  static const gint64 lengths[] = { 1, 7, 33, 1000 };
  for (guint n = 0; n < G_N_ELEMENTS (lengths); n++)
    for (int form = 0; form < 3; form++)
      for (int other = 0; other < 2; other++)
        {
          g_autoptr(GHashTable) inputs = gelu_inputs (rng, lengths[n]);
          g_autoptr(GraftModel) model = gelu_tanh_model (lengths[n], form, other ? 0.05f : 0.044715f);
          check_fused_against_nodes (other ? "not GELU" : "tanh GELU", model, inputs, level, "onnx::Tanh",
                                     other ? 1 : 0);
        }
}

/* ---- MatMul → Add of a constant bias, the bias added in the product ---- */

static GraftModel *
bias_model (gint64 batch, gint64 M, gint64 K, gint64 N, const float *w, const float *bias, int bias_rank,
            gboolean bias_first)
{
  GraftModel *model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *graph = graft_graph_new ("bias");
  graft_model_set_opset (model, "onnx", 17);
  gint64 da[3] = { batch, M, K }, dw[2] = { K, N }, db[2] = { 1, N };
  float_graph_add_input (graph, "a", 3, da);
  float_graph_add_initializer (graph, "w", 2, dw, w);
  float_graph_add_initializer (graph, "bias", bias_rank, db + 2 - bias_rank, bias);
  float_graph_add_node (graph, "MatMul", "a", "w", NULL, "product");
  if (bias_first)
    float_graph_add_node (graph, "Add", "bias", "product", NULL, "y");
  else
    float_graph_add_node (graph, "Add", "product", "bias", NULL, "y");
  graft_graph_add_output (graph, float_graph_value (graph, "y"));
  graft_model_set_graph (model, graph);
  return model;
}

/* MatMul + bias Add with the bias taken into the packed product (AVX2)
 * against the same nodes without fusion, at 1 and 2 threads, on one and
 * several rows and ragged widths; at the portable level the Add runs. */
static void
test_matmul_bias_against_nodes (gconstpointer data)
{
  GraftSimdLevel level = GPOINTER_TO_INT (data);
  if (!graft_test_use_simd_level (level))
    return;
  graft_simd_set_max_level (GRAFT_SIMD_AVX512);
  g_autoptr(GRand) rng = g_rand_new_with_seed (11);
  /* batch, M, K, N */
  static const gint64 shapes[][4] = { { 1, 1, 5, 3 }, { 2, 1, 8, 17 }, { 1, 5, 33, 16 }, { 2, 37, 20, 64 },
                                      { 1, 7, 300, 40 } };
  for (guint n = 0; n < G_N_ELEMENTS (shapes); n++)
    for (int variant = 0; variant < 2; variant++)
      {
        gint64 batch = shapes[n][0], M = shapes[n][1], K = shapes[n][2], N = shapes[n][3];
        g_autofree float *w = g_new (float, K * N);
        g_autofree float *bias = g_new (float, N);
        for (gint64 i = 0; i < K * N; i++)
          w[i] = g_rand_double_range (rng, -1, 1);
        for (gint64 i = 0; i < N; i++)
          bias[i] = g_rand_double_range (rng, -3, 3);
        g_autoptr(GraftModel) model = bias_model (batch, M, K, N, w, bias, 1 + variant, variant);
        g_autoptr(GHashTable) inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                              (GDestroyNotify) graft_rt_tensor_unref);
        gint64 da[3] = { batch, M, K };
        g_hash_table_insert (inputs, (gpointer) "a", random_tensor (rng, GRAFT_DTYPE_FLOAT32, 3, da));
        guint unused;
        g_autoptr(GPtrArray) reference = run_model (model, inputs, 1, level, FALSE, "onnx::Add", &unused);
        for (guint threads = 1; threads <= 2; threads++)
          for (int again = 0; again < 2; again++)
            {
              g_autoptr(GPtrArray) fast = run_model (model, inputs, threads, level, TRUE, "onnx::Add", &unused);
              const GraftRtTensor *y = fast->pdata[0];
              g_assert_cmpint (y->rank, ==, 3);
              g_assert_cmpint (y->dims[2], ==, N);
              float_graph_assert_outputs_close ("MatMul + bias", fast, reference, 2e-5);
            }
      }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_data_func ("/attention/blocked-against-reference/avx2", GINT_TO_POINTER (GRAFT_SIMD_AVX2),
                        test_blocked_against_reference);
  g_test_add_data_func ("/attention/blocked-against-reference/avx512", GINT_TO_POINTER (GRAFT_SIMD_AVX512),
                        test_blocked_against_reference);
  g_test_add_data_func ("/attention/rotary-against-reference/avx2", GINT_TO_POINTER (GRAFT_SIMD_AVX2),
                        test_rotary_against_reference);
  g_test_add_data_func ("/attention/rotary-against-reference/avx512", GINT_TO_POINTER (GRAFT_SIMD_AVX512),
                        test_rotary_against_reference);
  g_test_add_data_func ("/attention/fused-pattern-against-nodes/avx2", GINT_TO_POINTER (GRAFT_SIMD_AVX2),
                        test_pattern_against_nodes);
  g_test_add_data_func ("/attention/fused-pattern-against-nodes/avx512", GINT_TO_POINTER (GRAFT_SIMD_AVX512),
                        test_pattern_against_nodes);
  g_test_add_data_func ("/fusion/gelu-pattern-against-nodes/portable", GINT_TO_POINTER (GRAFT_SIMD_PORTABLE),
                        test_gelu_pattern_against_nodes);
  g_test_add_data_func ("/fusion/gelu-pattern-against-nodes/avx2", GINT_TO_POINTER (GRAFT_SIMD_AVX2),
                        test_gelu_pattern_against_nodes);
  g_test_add_data_func ("/fusion/gelu-pattern-against-nodes/avx512", GINT_TO_POINTER (GRAFT_SIMD_AVX512),
                        test_gelu_pattern_against_nodes);
  g_test_add_data_func ("/fusion/gelu-tanh-pattern-against-nodes/portable", GINT_TO_POINTER (GRAFT_SIMD_PORTABLE),
                        test_gelu_tanh_pattern_against_nodes);
  g_test_add_data_func ("/fusion/gelu-tanh-pattern-against-nodes/avx2", GINT_TO_POINTER (GRAFT_SIMD_AVX2),
                        test_gelu_tanh_pattern_against_nodes);
  g_test_add_data_func ("/fusion/gelu-tanh-pattern-against-nodes/avx512", GINT_TO_POINTER (GRAFT_SIMD_AVX512),
                        test_gelu_tanh_pattern_against_nodes);
  g_test_add_data_func ("/fusion/matmul-bias-against-nodes/portable", GINT_TO_POINTER (GRAFT_SIMD_PORTABLE),
                        test_matmul_bias_against_nodes);
  g_test_add_data_func ("/fusion/matmul-bias-against-nodes/avx2", GINT_TO_POINTER (GRAFT_SIMD_AVX2),
                        test_matmul_bias_against_nodes);
  g_test_add_data_func ("/fusion/matmul-bias-against-nodes/avx512", GINT_TO_POINTER (GRAFT_SIMD_AVX512),
                        test_matmul_bias_against_nodes);
  return g_test_run ();
}
