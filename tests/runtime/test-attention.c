/* The float32 paths of Attention and RotaryEmbedding
 * (runtime/kernels/attention.c) against their double-precision reference
 * loops, which the runtime runs at the portable SIMD level. Attention: random Q, K, V on edge shapes (one query, one
 * key, more queries than a block, odd head sizes, grouped heads, packed
 * 3-D inputs, a past cache, causal and window limits, bool and float
 * masks that broadcast, padding lengths, softcap); RotaryEmbedding: 3-D
 * and 4-D, interleaved or halves, part of odd-sized heads, caches by
 * position id or by token. */
#include <math.h>
#include <string.h>
#include "runtime/runtime.h"
#include "simd-levels.h"

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
assert_outputs_close (const char *what, GPtrArray *fast, GPtrArray *reference)
{
  g_assert_cmpuint (fast->len, ==, reference->len);
  for (guint o = 0; o < fast->len; o++)
    {
      const GraftRtTensor *got = fast->pdata[o], *want = reference->pdata[o];
      g_assert_cmpint (got->numel, ==, want->numel);
      for (gint64 i = 0; i < got->numel; i++)
        {
          float g = ((const float *) got->data)[i], w = ((const float *) want->data)[i];
          if (!(fabs (g - w) <= 2e-5 * (1 + fabs (w))))
            g_error ("%s: output %u [%" G_GINT64_FORMAT "] = %.8g, the reference %.8g", what, o, i, g, w);
        }
    }
}

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
      assert_outputs_close (c->what, fast, reference);
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
      assert_outputs_close (c->what, fast, reference);
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
  return g_test_run ();
}
