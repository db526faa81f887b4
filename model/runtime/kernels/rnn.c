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

/* One RNN/GRU/LSTM node's run: its inputs, attributes and outputs, and
 * the per-sequence state (h, c, the gate pre-activations g). */
typedef struct {
  CellKind cell;
  int gates;                         /* 1, 3 or 4 */
  GraftRtTensor *X, *W, *R, *B, *lens, *h0, *c0, *P;
  GraftRtTensor *Y, *Yh, *Yc;        /* NULL where not wanted */
  gint64 S, N, I, H;                 /* sequence, batch, input, hidden sizes */
  int n_dirs;
  gboolean reverse_only, batch_first, has_clip, linear_before_reset, input_forget;
  double clip;
  Activation acts[6];
  double *h, *c, *g, *hr;
} RnnRun;

static double
x_at (const RnnRun *r, gint64 t, gint64 n, gint64 i)
{
  return get (r->X, r->batch_first ? (n * r->S + t) * r->I + i : (t * r->N + n) * r->I + i);
}

static gint64
h_index (const RnnRun *r, int d, gint64 n, gint64 j)
{
  return r->batch_first ? (n * r->n_dirs + d) * r->H + j : (d * r->N + n) * r->H + j;
}

static gint64
y_index (const RnnRun *r, gint64 t, int d, gint64 n, gint64 j)
{
  return r->batch_first ? ((n * r->S + t) * r->n_dirs + d) * r->H + j : ((t * r->n_dirs + d) * r->N + n) * r->H + j;
}

static double
clipped (const RnnRun *r, double x)
{
  return r->has_clip ? CLAMP (x, -r->clip, r->clip) : x;
}

/* Reads the node, checks W and R against the sizes, allocates the wanted
 * outputs. */
static gboolean
rnn_setup (GraftKernelContext *ctx, RnnRun *r, GError **error)
{
  GraftNode *node = ctx->node;
  const char *op = node->op_type;
  const char *direction = graft_node_attr_string (node, "direction", "forward");

  r->cell = strcmp (op, "GRU") == 0 ? CELL_GRU : strcmp (op, "LSTM") == 0 ? CELL_LSTM : CELL_RNN;
  r->gates = r->cell == CELL_RNN ? 1 : r->cell == CELL_GRU ? 3 : 4;
  r->X = ctx->inputs[0], r->W = ctx->inputs[1], r->R = ctx->inputs[2];
  r->B = graft_kernel_input (ctx, 3), r->lens = graft_kernel_input (ctx, 4), r->h0 = graft_kernel_input (ctx, 5);
  r->c0 = r->cell == CELL_LSTM ? graft_kernel_input (ctx, 6) : NULL;
  r->P = r->cell == CELL_LSTM ? graft_kernel_input (ctx, 7) : NULL;
  r->H = graft_node_attr_int (node, "hidden_size", 0);
  r->n_dirs = strcmp (direction, "bidirectional") == 0 ? 2 : 1;
  r->reverse_only = strcmp (direction, "reverse") == 0;
  r->batch_first = graft_node_attr_int (node, "layout", 0) == 1;
  r->has_clip = graft_node_has_attr (node, "clip");
  r->clip = graft_node_attr_float (node, "clip", 0);
  r->linear_before_reset = graft_node_attr_int (node, "linear_before_reset", 0);
  r->input_forget = graft_node_attr_int (node, "input_forget", 0);

  if (r->X->rank != 3 || r->W->rank != 3 || r->R->rank != 3)
    return graft_kernel_fail (error, "X, W and R must be 3-D");
  r->S = r->X->dims[r->batch_first ? 1 : 0], r->N = r->X->dims[r->batch_first ? 0 : 1], r->I = r->X->dims[2];
  if (r->H <= 0)
    r->H = r->R->dims[2];
  gint64 H = r->H, gates = r->gates;
  if (r->W->dims[0] != r->n_dirs || r->W->dims[1] != gates * H || r->W->dims[2] != r->I ||
      r->R->dims[1] != gates * H || r->R->dims[2] != H)
    return graft_kernel_fail (error, "W or R do not match hidden_size %" G_GINT64_FORMAT " and the input size", H);
  if (!read_activations (node, r->cell, r->n_dirs, r->acts, error))
    return FALSE;

  gint64 ydims[4], hdims[3];
  if (r->batch_first)
    {
      ydims[0] = r->N, ydims[1] = r->S, ydims[2] = r->n_dirs, ydims[3] = H;
      hdims[0] = r->N, hdims[1] = r->n_dirs, hdims[2] = H;
    }
  else
    {
      ydims[0] = r->S, ydims[1] = r->n_dirs, ydims[2] = r->N, ydims[3] = H;
      hdims[0] = r->n_dirs, hdims[1] = r->N, hdims[2] = H;
    }
  gboolean want_y = graft_kernel_wants_output (ctx, 0), want_yh = graft_kernel_wants_output (ctx, 1);
  r->Y = want_y ? graft_kernel_alloc_output (ctx, 0, r->X->dtype, 4, ydims, error) : NULL;
  r->Yh = want_yh ? graft_kernel_alloc_output (ctx, 1, r->X->dtype, 3, hdims, error) : NULL;
  r->Yc = r->cell == CELL_LSTM && graft_kernel_wants_output (ctx, 2)
          ? graft_kernel_alloc_output (ctx, 2, r->X->dtype, 3, hdims, error) : NULL;
  return !(want_y && r->Y == NULL) && !(want_yh && r->Yh == NULL);
}

/* g = W x + Wb (+ R h + Rb, except GRU's hidden gate) at step t of
 * sequence n in direction d. */
static void
rnn_gate_inputs (RnnRun *r, int d, gint64 n, gint64 t)
{
  gint64 H = r->H, I = r->I, gates = r->gates;
  gint64 wo = d * gates * H * I, ro = d * gates * H * H, bo = d * 2 * gates * H;

  for (gint64 k = 0; k < gates * H; k++)
    {
      double acc = r->B ? get (r->B, bo + k) : 0;
      for (gint64 i = 0; i < I; i++)
        acc += get (r->W, wo + k * I + i) * x_at (r, t, n, i);
      if (!(r->cell == CELL_GRU && k >= 2 * H))
        {
          acc += r->B ? get (r->B, bo + gates * H + k) : 0;
          for (gint64 i = 0; i < H; i++)
            acc += get (r->R, ro + k * H + i) * r->h[i];
        }
      r->g[k] = acc;
    }
}

/* GRU: gates z, r, h. */
static void
gru_update (RnnRun *r, int d, const Activation *f, const Activation *ga)
{
  gint64 H = r->H, ro = d * r->gates * H * H, bo = d * 2 * r->gates * H;
  double *g = r->g, *h = r->h;

  for (gint64 j = 0; j < 2 * H; j++)
    g[j] = activate (f, clipped (r, g[j]));
  for (gint64 j = 0; j < H; j++)
    {
      double reset = g[H + j];
      double acc = r->B ? get (r->B, bo + r->gates * H + 2 * H + j) : 0;
      /* linear_before_reset: r ⊙ (R h + Rb); otherwise R (r ⊙ h) + Rb */
      for (gint64 i = 0; i < H; i++)
        acc += get (r->R, ro + (2 * H + j) * H + i) * (r->linear_before_reset ? h[i] : reset * h[i]);
      double rh = r->linear_before_reset ? reset * acc : acc;
      r->hr[j] = activate (ga, clipped (r, g[2 * H + j] + rh));
    }
  for (gint64 j = 0; j < H; j++)
    h[j] = (1 - g[j]) * r->hr[j] + g[j] * h[j];
}

/* LSTM: gates i, o, f, c; peepholes P = [i, o, f]. */
static void
lstm_update (RnnRun *r, int d, const Activation *f, const Activation *ga, const Activation *ha)
{
  gint64 H = r->H, po = d * 3 * H;
  double *g = r->g, *h = r->h, *c = r->c;
  GraftRtTensor *P = r->P;

  for (gint64 j = 0; j < H; j++)
    {
      double gi = clipped (r, g[j] + (P ? get (P, po + j) * c[j] : 0));
      double gf = clipped (r, g[2 * H + j] + (P ? get (P, po + 2 * H + j) * c[j] : 0));
      double gc = clipped (r, g[3 * H + j]);
      double it = activate (f, gi);
      double ft = r->input_forget ? 1 - it : activate (f, gf);
      double ct = activate (ga, gc);
      c[j] = ft * c[j] + it * ct;
      double go = clipped (r, g[H + j] + (P ? get (P, po + H + j) * c[j] : 0));
      h[j] = activate (f, go) * activate (ha, c[j]);
    }
}

/* Sequence n in direction d, from its initial state to Y, Y_h, Y_c. */
static void
rnn_sequence (RnnRun *r, int d, gint64 n)
{
  gint64 H = r->H, S = r->S;
  gboolean backward = r->reverse_only || d == 1;
  const Activation *f = &r->acts[d * (r->gates == 1 ? 1 : r->gates == 3 ? 2 : 3)];
  const Activation *ga = r->gates == 1 ? f : f + 1, *ha = r->gates == 4 ? f + 2 : ga;
  gint64 len = r->lens ? graft_rt_tensor_get_i64 (r->lens, n) : S;

  for (gint64 j = 0; j < H; j++)
    {
      r->h[j] = r->h0 ? get (r->h0, h_index (r, d, n, j)) : 0;
      r->c[j] = r->c0 ? get (r->c0, h_index (r, d, n, j)) : 0;
    }
  for (gint64 step = 0; step < S; step++)
    {
      gint64 t = backward ? S - 1 - step : step;
      if (t >= len)
        {
          if (r->Y)
            for (gint64 j = 0; j < H; j++)
              graft_rt_tensor_set_f64 (r->Y, y_index (r, t, d, n, j), 0);
          continue;
        }
      rnn_gate_inputs (r, d, n, t);
      if (r->cell == CELL_RNN)
        for (gint64 j = 0; j < H; j++)
          r->h[j] = activate (f, clipped (r, r->g[j]));
      else if (r->cell == CELL_GRU)
        gru_update (r, d, f, ga);
      else
        lstm_update (r, d, f, ga, ha);
      if (r->Y)
        for (gint64 j = 0; j < H; j++)
          graft_rt_tensor_set_f64 (r->Y, y_index (r, t, d, n, j), r->h[j]);
    }
  for (gint64 j = 0; j < H; j++)
    {
      if (r->Yh)
        graft_rt_tensor_set_f64 (r->Yh, h_index (r, d, n, j), r->h[j]);
      if (r->Yc)
        graft_rt_tensor_set_f64 (r->Yc, h_index (r, d, n, j), r->c[j]);
    }
}

static gboolean
kernel_rnn (GraftKernelContext *ctx, GError **error)
{
  RnnRun r = { 0 };

  if (!rnn_setup (ctx, &r, error))
    return FALSE;
  g_autofree double *h = g_new (double, r.H), *c = g_new (double, r.H), *g = g_new (double, r.gates * r.H);
  g_autofree double *hr = g_new (double, r.H);
  r.h = h, r.c = c, r.g = g, r.hr = hr;
  for (int d = 0; d < r.n_dirs; d++)
    for (gint64 n = 0; n < r.N; n++)
      rnn_sequence (&r, d, n);
  return TRUE;
}

const GraftOpSchema graft_ops_rnn[] = {
  { "onnx::RNN", 1, 0, infer_rnn, kernel_rnn, GRAFT_OP_HALF_AS_FLOAT, "X W R B sequence_lens initial_h", "Y Y_h" },
  { "onnx::GRU", 1, 0, infer_rnn, kernel_rnn, GRAFT_OP_HALF_AS_FLOAT, "X W R B sequence_lens initial_h", "Y Y_h" },
  { "onnx::LSTM", 1, 0, infer_rnn, kernel_rnn, GRAFT_OP_HALF_AS_FLOAT, "X W R B sequence_lens initial_h initial_c P", "Y Y_h Y_c" },
  { NULL }
};
