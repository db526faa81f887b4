/* Recurrent layers: RNN, GRU, LSTM (forward, reverse, bidirectional;
 * custom activations with alpha/beta; clip; sequence_lens; initial states;
 * LSTM peepholes and input_forget; GRU linear_before_reset; layout 0/1).
 * Computed in double, straight from the equations of the ONNX spec. */
#include <math.h>
#include <string.h>
#include "runtime/kernels/kernel-util.h"

typedef struct {
  int kind;          /* index in activation_names */
  double alpha, beta;
} Activation;

static const char *const activation_names[] = {
  "Relu", "Tanh", "Sigmoid", "Affine", "LeakyRelu", "ThresholdedRelu", "ScaledTanh",
  "HardSigmoid", "Elu", "Softsign", "Softplus",
};

static double
activate (const Activation *a, double x)
{
  switch (a->kind)
    {
    case 0: return MAX (x, 0);
    case 1: return tanh (x);
    case 2: return 1 / (1 + exp (-x));
    case 3: return a->alpha * x + a->beta;
    case 4: return x >= 0 ? x : a->alpha * x;
    case 5: return x > a->alpha ? x : 0;
    case 6: return a->alpha * tanh (a->beta * x);
    case 7: return MAX (0, MIN (1, a->alpha * x + a->beta));
    case 8: return x >= 0 ? x : a->alpha * (exp (x) - 1);
    case 9: return x / (1 + fabs (x));
    default: return log1p (exp (x));
    }
}

static double
default_alpha (int kind)
{
  switch (kind)
    {
    case 3: case 6: return 1;
    case 4: return 0.01;
    case 5: return 1;
    case 7: return 0.2;
    case 8: return 1;
    default: return 0;
    }
}

static double
default_beta (int kind)
{
  return kind == 7 ? 0.5 : kind == 6 ? 1 : 0;
}

typedef enum { CELL_RNN, CELL_GRU, CELL_LSTM } CellKind;

static gboolean
read_activations (GraftNode *node, CellKind cell, int n_dirs, Activation *acts, GError **error)
{
  int per_dir = cell == CELL_RNN ? 1 : cell == CELL_GRU ? 2 : 3;
  static const int defaults[3][3] = { { 1 }, { 2, 1 }, { 2, 1, 1 } };
  GraftAttribute *names = graft_node_get_attribute (node, "activations");
  guint na = 0, nb = 0;
  const double *alphas = graft_node_attr_floats (node, "activation_alpha", &na);
  const double *betas = graft_node_attr_floats (node, "activation_beta", &nb);
  guint ai = 0, bi = 0;
  for (int i = 0; i < per_dir * n_dirs; i++)
    {
      int kind = defaults[cell][i % per_dir];
      gboolean custom = FALSE;
      if (names && names->strings && (guint) i < names->strings->len)
        {
          gsize len;
          const char *s = g_bytes_get_data (names->strings->pdata[i], &len);
          kind = -1;
          for (guint k = 0; k < G_N_ELEMENTS (activation_names); k++)
            if (strlen (activation_names[k]) == len && g_ascii_strncasecmp (activation_names[k], s, len) == 0)
              kind = k;
          if (kind < 0)
            return graft_kernel_unsupported (error, "activation '%.*s' is not supported", (int) len, s);
          custom = TRUE;
        }
      else if (names && names->strings && names->strings->len == (guint) per_dir)
        {
          acts[i] = acts[i % per_dir];
          continue;
        }
      acts[i].kind = kind;
      gboolean takes_alpha = kind == 3 || kind == 4 || kind == 5 || kind == 6 || kind == 7 || kind == 8;
      gboolean takes_beta = kind == 3 || kind == 6 || kind == 7;
      acts[i].alpha = custom && takes_alpha && alphas && ai < na ? alphas[ai++] : default_alpha (kind);
      acts[i].beta = custom && takes_beta && betas && bi < nb ? betas[bi++] : default_beta (kind);
    }
  return TRUE;
}

static gboolean
infer_rnn (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *x = graft_infer_input (ctx, 0);
  gint64 hidden = graft_node_attr_int (ctx->node, "hidden_size", 0);
  const char *dir = graft_node_attr_string (ctx->node, "direction", "forward");
  gint64 dirs = strcmp (dir, "bidirectional") == 0 ? 2 : 1;
  gboolean batch_first = graft_node_attr_int (ctx->node, "layout", 0) == 1;
  if (x->shape.rank != 3)
    {
      for (guint i = 0; i < ctx->n_outputs; i++)
        graft_infer_set_output_unknown (ctx, i, x->dtype, -1);
      return TRUE;
    }
  GraftDim seq = x->shape.dims[batch_first ? 1 : 0], batch = x->shape.dims[batch_first ? 0 : 1];
  GraftShape y, h;
  graft_shape_init (&y, 4);
  graft_shape_init (&h, 3);
  if (batch_first)
    {
      y.dims[0] = batch, y.dims[1] = seq, y.dims[2] = graft_dim_fixed (dirs), y.dims[3] = graft_dim_fixed (hidden);
      h.dims[0] = batch, h.dims[1] = graft_dim_fixed (dirs), h.dims[2] = graft_dim_fixed (hidden);
    }
  else
    {
      y.dims[0] = seq, y.dims[1] = graft_dim_fixed (dirs), y.dims[2] = batch, y.dims[3] = graft_dim_fixed (hidden);
      h.dims[0] = graft_dim_fixed (dirs), h.dims[1] = batch, h.dims[2] = graft_dim_fixed (hidden);
    }
  graft_infer_set_output (ctx, 0, x->dtype, &y);
  for (guint i = 1; i < ctx->n_outputs; i++)
    graft_infer_set_output (ctx, i, x->dtype, &h);
  graft_shape_clear (&y);
  graft_shape_clear (&h);
  return TRUE;
}

static double
get (const GraftRtTensor *t, gint64 i)
{
  return t ? graft_rt_tensor_get_f64 (t, i) : 0;
}

static gboolean
kernel_rnn (GraftKernelContext *ctx, GError **error)
{
  const char *op = ctx->node->op_type;
  CellKind cell = strcmp (op, "GRU") == 0 ? CELL_GRU : strcmp (op, "LSTM") == 0 ? CELL_LSTM : CELL_RNN;
  int gates = cell == CELL_RNN ? 1 : cell == CELL_GRU ? 3 : 4;
  GraftRtTensor *X = ctx->inputs[0], *W = ctx->inputs[1], *R = ctx->inputs[2];
  GraftRtTensor *B = graft_kernel_input (ctx, 3), *lens = graft_kernel_input (ctx, 4), *h0 = graft_kernel_input (ctx, 5);
  GraftRtTensor *c0 = cell == CELL_LSTM ? graft_kernel_input (ctx, 6) : NULL;
  GraftRtTensor *P = cell == CELL_LSTM ? graft_kernel_input (ctx, 7) : NULL;
  gint64 H = graft_node_attr_int (ctx->node, "hidden_size", 0);
  const char *direction = graft_node_attr_string (ctx->node, "direction", "forward");
  int n_dirs = strcmp (direction, "bidirectional") == 0 ? 2 : 1;
  gboolean reverse_only = strcmp (direction, "reverse") == 0;
  gboolean batch_first = graft_node_attr_int (ctx->node, "layout", 0) == 1;
  gboolean has_clip = graft_node_has_attr (ctx->node, "clip");
  double clip = graft_node_attr_float (ctx->node, "clip", 0);
  gboolean linear_before_reset = graft_node_attr_int (ctx->node, "linear_before_reset", 0);
  gboolean input_forget = graft_node_attr_int (ctx->node, "input_forget", 0);
  Activation acts[6];

  if (X->rank != 3 || W->rank != 3 || R->rank != 3)
    return graft_kernel_fail (error, "X, W and R must be 3-D");
  gint64 S = X->dims[batch_first ? 1 : 0], N = X->dims[batch_first ? 0 : 1], I = X->dims[2];
  if (H <= 0)
    H = R->dims[2];
  if (W->dims[0] != n_dirs || W->dims[1] != gates * H || W->dims[2] != I || R->dims[1] != gates * H || R->dims[2] != H)
    return graft_kernel_fail (error, "W or R do not match hidden_size %" G_GINT64_FORMAT " and the input size", H);
  if (!read_activations (ctx->node, cell, n_dirs, acts, error))
    return FALSE;
  gint64 ydims[4], hdims[3];
  if (batch_first)
    {
      ydims[0] = N, ydims[1] = S, ydims[2] = n_dirs, ydims[3] = H;
      hdims[0] = N, hdims[1] = n_dirs, hdims[2] = H;
    }
  else
    {
      ydims[0] = S, ydims[1] = n_dirs, ydims[2] = N, ydims[3] = H;
      hdims[0] = n_dirs, hdims[1] = N, hdims[2] = H;
    }
  GraftRtTensor *Y = graft_kernel_wants_output (ctx, 0) ? graft_kernel_alloc_output (ctx, 0, X->dtype, 4, ydims, error) : NULL;
  GraftRtTensor *Yh = graft_kernel_wants_output (ctx, 1) ? graft_kernel_alloc_output (ctx, 1, X->dtype, 3, hdims, error) : NULL;
  GraftRtTensor *Yc = cell == CELL_LSTM && graft_kernel_wants_output (ctx, 2) ? graft_kernel_alloc_output (ctx, 2, X->dtype, 3, hdims, error) : NULL;
  if ((graft_kernel_wants_output (ctx, 0) && !Y) || (graft_kernel_wants_output (ctx, 1) && !Yh))
    return FALSE;

  g_autofree double *h = g_new (double, H), *c = g_new (double, H), *g = g_new (double, gates * H);
  g_autofree double *hr = g_new (double, H);
#define X_AT(t, n, i) get (X, batch_first ? ((n) * S + (t)) * I + (i) : ((t) * N + (n)) * I + (i))
#define H_INDEX(d, n, j) (batch_first ? ((n) * n_dirs + (d)) * H + (j) : ((d) * N + (n)) * H + (j))
#define Y_INDEX(t, d, n, j) (batch_first ? (((n) * S + (t)) * n_dirs + (d)) * H + (j) : (((t) * n_dirs + (d)) * N + (n)) * H + (j))
  for (int d = 0; d < n_dirs; d++)
    {
      gboolean backward = reverse_only || d == 1;
      const Activation *f = &acts[d * (gates == 1 ? 1 : gates == 3 ? 2 : 3)];
      const Activation *ga = gates == 1 ? f : f + 1, *ha = gates == 4 ? f + 2 : ga;
      gint64 wo = d * gates * H * I, ro = d * gates * H * H, bo = d * 2 * gates * H;
      for (gint64 n = 0; n < N; n++)
        {
          gint64 len = lens ? graft_rt_tensor_get_i64 (lens, n) : S;
          for (gint64 j = 0; j < H; j++)
            {
              h[j] = h0 ? get (h0, H_INDEX (d, n, j)) : 0;
              c[j] = c0 ? get (c0, H_INDEX (d, n, j)) : 0;
            }
          for (gint64 step = 0; step < S; step++)
            {
              gint64 t = backward ? S - 1 - step : step;
              if (t >= len)
                {
                  if (Y)
                    for (gint64 j = 0; j < H; j++)
                      graft_rt_tensor_set_f64 (Y, Y_INDEX (t, d, n, j), 0);
                  continue;
                }
              /* g = W x + Wb (+ R h + Rb, except GRU's hidden gate) */
              for (gint64 k = 0; k < gates * H; k++)
                {
                  double acc = B ? get (B, bo + k) : 0;
                  for (gint64 i = 0; i < I; i++)
                    acc += get (W, wo + k * I + i) * X_AT (t, n, i);
                  gboolean gru_hidden = cell == CELL_GRU && k >= 2 * H;
                  if (!gru_hidden)
                    {
                      acc += B ? get (B, bo + gates * H + k) : 0;
                      for (gint64 i = 0; i < H; i++)
                        acc += get (R, ro + k * H + i) * h[i];
                    }
                  g[k] = acc;
                }
              if (cell == CELL_RNN)
                for (gint64 j = 0; j < H; j++)
                  h[j] = activate (f, has_clip ? CLAMP (g[j], -clip, clip) : g[j]);
              else if (cell == CELL_GRU)
                {
                  /* gates z, r, h */
                  for (gint64 j = 0; j < 2 * H; j++)
                    g[j] = activate (f, has_clip ? CLAMP (g[j], -clip, clip) : g[j]);
                  for (gint64 j = 0; j < H; j++)
                    {
                      double r = g[H + j], rh = 0;
                      if (linear_before_reset)
                        {
                          double acc = B ? get (B, bo + gates * H + 2 * H + j) : 0;
                          for (gint64 i = 0; i < H; i++)
                            acc += get (R, ro + (2 * H + j) * H + i) * h[i];
                          rh = r * acc;
                        }
                      else
                        {
                          double acc = B ? get (B, bo + gates * H + 2 * H + j) : 0;
                          for (gint64 i = 0; i < H; i++)
                            acc += get (R, ro + (2 * H + j) * H + i) * r * h[i];
                          rh = acc;
                        }
                      double pre = g[2 * H + j] + rh;
                      hr[j] = activate (ga, has_clip ? CLAMP (pre, -clip, clip) : pre);
                    }
                  for (gint64 j = 0; j < H; j++)
                    h[j] = (1 - g[j]) * hr[j] + g[j] * h[j];
                }
              else
                {
                  /* gates i, o, f, c; peepholes P = [i, o, f] */
                  gint64 po = d * 3 * H;
                  for (gint64 j = 0; j < H; j++)
                    {
                      double gi = g[j] + (P ? get (P, po + j) * c[j] : 0);
                      double gf = g[2 * H + j] + (P ? get (P, po + 2 * H + j) * c[j] : 0);
                      double gc = g[3 * H + j];
                      if (has_clip)
                        gi = CLAMP (gi, -clip, clip), gf = CLAMP (gf, -clip, clip), gc = CLAMP (gc, -clip, clip);
                      double it = activate (f, gi);
                      double ft = input_forget ? 1 - it : activate (f, gf);
                      double ct = activate (ga, gc);
                      c[j] = ft * c[j] + it * ct;
                      double go = g[H + j] + (P ? get (P, po + H + j) * c[j] : 0);
                      if (has_clip)
                        go = CLAMP (go, -clip, clip);
                      h[j] = activate (f, go) * activate (ha, c[j]);
                    }
                }
              if (Y)
                for (gint64 j = 0; j < H; j++)
                  graft_rt_tensor_set_f64 (Y, Y_INDEX (t, d, n, j), h[j]);
            }
          for (gint64 j = 0; j < H; j++)
            {
              if (Yh)
                graft_rt_tensor_set_f64 (Yh, H_INDEX (d, n, j), h[j]);
              if (Yc)
                graft_rt_tensor_set_f64 (Yc, H_INDEX (d, n, j), c[j]);
            }
        }
    }
#undef X_AT
#undef H_INDEX
#undef Y_INDEX
  return TRUE;
}

const GraftOpSchema graft_ops_rnn[] = {
  { "onnx::RNN", 1, 0, infer_rnn, kernel_rnn, GRAFT_OP_HALF_AS_FLOAT, "X W R B sequence_lens initial_h", "Y Y_h" },
  { "onnx::GRU", 1, 0, infer_rnn, kernel_rnn, GRAFT_OP_HALF_AS_FLOAT, "X W R B sequence_lens initial_h", "Y Y_h" },
  { "onnx::LSTM", 1, 0, infer_rnn, kernel_rnn, GRAFT_OP_HALF_AS_FLOAT, "X W R B sequence_lens initial_h initial_c P", "Y Y_h Y_c" },
  { NULL }
};
