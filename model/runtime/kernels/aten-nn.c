/* aten:: network layers: convolution (through conv.c's im2col/GEMM),
 * batch_norm, layer_norm, linear/addmm/matmul/bmm (CBLAS and matmul.c),
 * max/avg/adaptive-avg pooling, lstm and gru. Inference only: batch_norm uses
 * the running statistics, dropout between recurrent layers is ignored. */
#include <cblas.h>
#include <math.h>
#include <string.h>
#include "runtime/kernels/aten-args.h"
#include "runtime/kernels/attention.h"
#include "runtime/kernels/norm.h"
#include "runtime/kernels/pool-separable.h"
#include "runtime/kernels/window.h"

static GraftRtTensor *
f32_arg (GraftAtenArg *args, guint k, GraftRtTensor **owned, gboolean optional, GError **error)
{
  if (optional && graft_arg_is_none (&args[k]))
    return NULL;
  GraftRtTensor *t = graft_aten_need_tensor (&args[k], k, error);
  if (t == NULL)
    return NULL;
  if (t->dtype == GRAFT_DTYPE_FLOAT32)
    return t;
  *owned = graft_rt_tensor_cast (t, GRAFT_DTYPE_FLOAT32, error);
  return *owned;
}

#define NEED(t, k, optional) \
  g_autoptr(GraftRtTensor) t##_owned = NULL; \
  GraftRtTensor *t = f32_arg (args, k, &t##_owned, optional, error); \
  if (t == NULL && (!(optional) || (error && *error))) \
    return FALSE;

/* ---- convolution ---- */

/* Transposed convolution: weight [C, M/groups, kernel...]; each output
 * size is (in - 1)·stride - 2·padding + dilation·(kernel - 1) + output_padding + 1. */
static gboolean
run_conv_transpose (GraftKernelContext *ctx, GraftRtTensor *x, GraftRtTensor *w, GraftRtTensor *b,
                    GraftAtenArg *stride_arg, GraftAtenArg *padding_arg, GraftAtenArg *output_padding_arg,
                    GraftAtenArg *dilation_arg, gint64 groups, GError **error)
{
  int ns = x->rank - 2;
  if (ns < 1 || ns > GRAFT_WINDOW_MAX_DIMS || w->rank != x->rank)
    return graft_kernel_fail (error, "input and weight must have the same rank (3 to %d)", GRAFT_WINDOW_MAX_DIMS + 2);
  gint64 stride[GRAFT_WINDOW_MAX_DIMS], pad[GRAFT_WINDOW_MAX_DIMS], out_pad[GRAFT_WINDOW_MAX_DIMS],
         dil[GRAFT_WINDOW_MAX_DIMS];
  guint n;
  for (int d = 0; d < ns; d++)
    stride[d] = 1, pad[d] = 0, out_pad[d] = 0, dil[d] = 1;
  if ((!graft_arg_is_none (stride_arg) && !graft_arg_ints (stride_arg, stride, ns, &n, ns, error)) ||
      (!graft_arg_is_none (padding_arg) && !graft_arg_ints (padding_arg, pad, ns, &n, ns, error)) ||
      (!graft_arg_is_none (output_padding_arg) && !graft_arg_ints (output_padding_arg, out_pad, ns, &n, ns, error)) ||
      (!graft_arg_is_none (dilation_arg) && !graft_arg_ints (dilation_arg, dil, ns, &n, ns, error)))
    return FALSE;
  gint64 N = x->dims[0], C = x->dims[1];
  if (groups <= 0 || C != w->dims[0] || C % groups != 0)
    return graft_kernel_fail (error, "input has %" G_GINT64_FORMAT " channels, the transposed weight %" G_GINT64_FORMAT
                              " in %" G_GINT64_FORMAT " groups", C, w->dims[0], groups);
  gint64 M = w->dims[1] * groups;
  if (b && b->numel != M)
    return graft_kernel_fail (error, "bias has %" G_GINT64_FORMAT " values, expected %" G_GINT64_FORMAT, b->numel, M);
  GraftWindow win = { .n = ns };
  gint64 dims[GRAFT_RT_MAX_RANK] = { N, M };
  for (int d = 0; d < ns; d++)
    {
      if (stride[d] <= 0 || dil[d] <= 0 || pad[d] < 0 || out_pad[d] < 0)
        return graft_kernel_fail (error, "stride and dilation must be positive, paddings not negative");
      win.in[d] = x->dims[d + 2];
      win.kernel[d] = w->dims[d + 2];
      win.stride[d] = stride[d];
      win.dilation[d] = dil[d];
      win.pad_begin[d] = win.pad_end[d] = pad[d];
      gint64 out = (win.in[d] - 1) * stride[d] - 2 * pad[d] + dil[d] * (win.kernel[d] - 1) + out_pad[d] + 1;
      if (out <= 0)
        return graft_kernel_fail (error, "the transposed convolution's output would have size %" G_GINT64_FORMAT, out);
      win.out[d] = dims[d + 2] = out;
    }
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_FLOAT32, x->rank, dims, error);
  if (y == NULL)
    return FALSE;
  return graft_conv_transpose_f32 (x->data, w->data, b ? b->data : NULL, y->data, N, C, M, groups, &win, error);
}

static gboolean
kernel_conv_transpose (GraftKernelContext *ctx, GError **error)
{
  /* conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation) */
  GraftAtenArg args[8];
  graft_aten_args (ctx, NULL, 8, args);
  NEED (x, 0, FALSE);
  NEED (w, 1, FALSE);
  NEED (b, 2, TRUE);
  return run_conv_transpose (ctx, x, w, b, &args[3], &args[4], &args[5], &args[7], graft_arg_int (&args[6], 1), error);
}

static gboolean
kernel_conv (GraftKernelContext *ctx, GError **error)
{
  /* conv2d(input, weight, bias, stride, padding, dilation, groups);
   * _convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, ...) */
  gboolean underscore = strcmp (ctx->node->op_type, "_convolution") == 0;
  GraftAtenArg args[13];
  graft_aten_args (ctx, NULL, 13, args);
  NEED (x, 0, FALSE);
  NEED (w, 1, FALSE);
  NEED (b, 2, TRUE);
  /* the batch_norm after it, folded by the engine (runtime-fusion.c) */
  graft_kernel_get_folded_weights (ctx, &w, &b);
  if (underscore && graft_arg_int (&args[6], 0))
    {
      if (!run_conv_transpose (ctx, x, w, b, &args[3], &args[4], &args[7], &args[5], graft_arg_int (&args[8], 1),
                               error))
        return FALSE;
      graft_kernel_apply_fused_activation (ctx, ctx->outputs[0]);
      return TRUE;
    }
  int ns = x->rank - 2;
  if (ns < 1 || ns > GRAFT_WINDOW_MAX_DIMS || w->rank != x->rank)
    return graft_kernel_fail (error, "input and weight must have the same rank (3 to %d)", GRAFT_WINDOW_MAX_DIMS + 2);
  /* padding='valid' (conv2d.padding / _convolution_mode: SigLIP's patch
   * embedding) is no padding; 'same' is not run yet */
  gboolean valid = FALSE;
  if (args[4].attr && args[4].attr->type == GRAFT_ATTR_STRING)
    {
      g_autofree char *mode = graft_attribute_dup_string (args[4].attr);
      if (strcmp (mode, "valid") != 0)
        return graft_kernel_unsupported (error, "padding='%s'", mode);
      valid = TRUE;
    }
  gint64 stride[GRAFT_WINDOW_MAX_DIMS], pad[GRAFT_WINDOW_MAX_DIMS], dil[GRAFT_WINDOW_MAX_DIMS];
  guint n;
  for (int d = 0; d < ns; d++)
    stride[d] = 1, pad[d] = 0, dil[d] = 1;
  if ((!graft_arg_is_none (&args[3]) && !graft_arg_ints (&args[3], stride, ns, &n, ns, error)) ||
      (!valid && !graft_arg_is_none (&args[4]) && !graft_arg_ints (&args[4], pad, ns, &n, ns, error)) ||
      (!graft_arg_is_none (&args[5]) && !graft_arg_ints (&args[5], dil, ns, &n, ns, error)))
    return FALSE;
  gint64 groups = graft_arg_int (&args[underscore ? 8 : 6], 1);
  gint64 N = x->dims[0], C = x->dims[1], M = w->dims[0];
  if (groups <= 0 || C != w->dims[1] * groups || M % groups != 0)
    return graft_kernel_fail (error, "input has %" G_GINT64_FORMAT " channels, weight expects %" G_GINT64_FORMAT
                              " × %" G_GINT64_FORMAT " groups", C, w->dims[1], groups);
  if (b && b->numel != M)
    return graft_kernel_fail (error, "bias has %" G_GINT64_FORMAT " values, expected %" G_GINT64_FORMAT, b->numel, M);
  GraftWindow win = { .n = ns };
  gint64 dims[GRAFT_RT_MAX_RANK] = { N, M };
  for (int d = 0; d < ns; d++)
    {
      win.in[d] = x->dims[d + 2];
      win.kernel[d] = w->dims[d + 2];
      win.stride[d] = stride[d];
      win.dilation[d] = dil[d];
      win.pad_begin[d] = win.pad_end[d] = pad[d];
      if (stride[d] <= 0 || dil[d] <= 0 || pad[d] < 0)
        return graft_kernel_fail (error, "stride and dilation must be positive, padding not negative");
      gint64 span = dil[d] * (win.kernel[d] - 1) + 1;
      gint64 out = (win.in[d] + 2 * pad[d] - span) / stride[d] + 1;
      if (win.in[d] + 2 * pad[d] < span)
        return graft_kernel_fail (error, "the kernel (%" G_GINT64_FORMAT ") is larger than the padded input (%"
                                  G_GINT64_FORMAT ")", span, win.in[d] + 2 * pad[d]);
      win.out[d] = dims[d + 2] = out;
    }
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_FLOAT32, x->rank, dims, error);
  if (y == NULL)
    return FALSE;
  /* a residual add [and relu] after it, fused by the engine (runtime-fusion.c) */
  const float *residual = graft_conv_take_residual (ctx, y);
  if (!graft_conv2d_f32 (ctx, x->data, w->data, b ? b->data : NULL, y->data, N, C, M, groups, &win, residual, error))
    return FALSE;
  /* a SiLU/HardSwish/Relu after it, fused by the engine (runtime-fusion.c) */
  graft_kernel_apply_fused_activation (ctx, y);
  return TRUE;
}

/* ---- normalisation ---- */


static gboolean
kernel_layer_norm (GraftKernelContext *ctx, GError **error)
{
  /* layer_norm(input, normalized_shape, weight, bias, eps, cudnn_enable) */
  GraftAtenArg args[6];
  graft_aten_args (ctx, NULL, 6, args);
  NEED (x, 0, FALSE);
  NEED (w, 2, TRUE);
  NEED (b, 3, TRUE);
  gint64 shape[GRAFT_RT_MAX_RANK];
  guint n;
  if (!graft_arg_ints (&args[1], shape, GRAFT_RT_MAX_RANK, &n, 0, error))
    return FALSE;
  if ((int) n > x->rank)
    return graft_kernel_fail (error, "normalized_shape has more dimensions than the input");
  for (guint i = 0; i < n; i++)
    if (shape[i] != x->dims[x->rank - n + i])
      return graft_kernel_fail (error, "normalized_shape does not match the input's trailing dimensions");
  gint64 inner = graft_dims_product (shape, 0, n), outer = inner ? x->numel / inner : 0;
  if ((w && w->numel != inner) || (b && b->numel != inner))
    return graft_kernel_fail (error, "weight and bias must have %" G_GINT64_FORMAT " values", inner);
  double eps = graft_arg_double (&args[4], 1e-5);
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_FLOAT32, x->rank, x->dims, error);
  if (y == NULL)
    return FALSE;
  graft_layer_norm_rows_f32 (ctx, graft_cf32 (x), w ? graft_cf32 (w) : NULL, b ? graft_cf32 (b) : NULL, graft_f32 (y),
                             outer, inner, eps);
  return TRUE;
}

/* ---- linear algebra ---- */

/* y[M, N] = beta * bias + alpha * x[M, K] · w[N, K]ᵀ (w_t) or x · w[K, N] */




/* ---- pooling ---- */

typedef struct {
  gboolean is_max, count_pad, adaptive;
  gint64 divisor;
  gint64 k[2], s[2], p[2], d[2], in[2], out[2];
} Pool2d;

static void
pool_plane (const Pool2d *P, const float *x, float *y)
{
  for (gint64 oh = 0; oh < P->out[0]; oh++)
    for (gint64 ow = 0; ow < P->out[1]; ow++)
      {
        gint64 h0, h1, w0, w1;
        if (P->adaptive)
          {
            h0 = oh * P->in[0] / P->out[0];
            h1 = ((oh + 1) * P->in[0] + P->out[0] - 1) / P->out[0];
            w0 = ow * P->in[1] / P->out[1];
            w1 = ((ow + 1) * P->in[1] + P->out[1] - 1) / P->out[1];
          }
        else
          {
            h0 = oh * P->s[0] - P->p[0];
            w0 = ow * P->s[1] - P->p[1];
            h1 = h0 + P->d[0] * (P->k[0] - 1) + 1;
            w1 = w0 + P->d[1] * (P->k[1] - 1) + 1;
          }
        double acc = P->is_max ? -INFINITY : 0;
        gint64 count = 0;
        if (!P->adaptive && !P->is_max && P->count_pad)
          count = (MIN (h1, P->in[0] + P->p[0]) - h0) * (MIN (w1, P->in[1] + P->p[1]) - w0);
        gint64 step_h = P->adaptive ? 1 : P->d[0], step_w = P->adaptive ? 1 : P->d[1];
        for (gint64 h = h0; h < h1; h += step_h)
          {
            if (h < 0 || h >= P->in[0])
              continue;
            for (gint64 w = w0; w < w1; w += step_w)
              {
                if (w < 0 || w >= P->in[1])
                  continue;
                float v = x[h * P->in[1] + w];
                if (P->is_max)
                  acc = (v > acc || isnan (v)) ? v : acc;
                else
                  acc += v;
                if (P->adaptive || !P->count_pad)
                  count++;
              }
          }
        if (!P->is_max)
          acc = P->divisor > 0 ? acc / P->divisor : count ? acc / count : 0;
        y[oh * P->out[1] + ow] = (float) acc;
      }
}

static gint64
pool_out (gint64 in, gint64 k, gint64 s, gint64 p, gint64 d, gboolean ceil_mode)
{
  gint64 span = d * (k - 1) + 1, num = in + 2 * p - span;
  gint64 out = (ceil_mode ? (num + s - 1) / s : num / s) + 1;
  /* the last window must start inside the input or left padding */
  if (ceil_mode && (out - 1) * s >= in + p)
    out--;
  return out;
}

static gboolean
kernel_pool (GraftKernelContext *ctx, GError **error)
{
  const char *op = ctx->node->op_type;
  Pool2d P = { 0 };
  P.is_max = g_str_has_prefix (op, "max");
  P.adaptive = g_str_has_prefix (op, "adaptive");
  GraftAtenArg args[7];
  graft_aten_args (ctx, NULL, 7, args);
  NEED (x, 0, FALSE);
  if (x->rank != 4 && x->rank != 3)
    return graft_kernel_fail (error, "2-D pooling needs a 3-D or 4-D input");
  P.in[0] = x->dims[x->rank - 2];
  P.in[1] = x->dims[x->rank - 1];
  guint n;
  gboolean ceil_mode = FALSE;
  if (P.adaptive)
    {
      if (!graft_arg_ints (&args[1], P.out, 2, &n, 2, error))
        return FALSE;
      for (int i = 0; i < 2; i++)
        if (P.out[i] <= 0)
          return graft_kernel_fail (error, "output size must be positive");
    }
  else
    {
      /* max_pool2d(x, kernel, stride, padding, dilation, ceil_mode)
       * avg_pool2d(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override) */
      P.s[0] = P.s[1] = 0;
      P.p[0] = P.p[1] = 0;
      P.d[0] = P.d[1] = 1;
      if (!graft_arg_ints (&args[1], P.k, 2, &n, 2, error))
        return FALSE;
      if (!graft_arg_is_none (&args[2]) && !graft_arg_ints (&args[2], P.s, 2, &n, 2, error))
        return FALSE;
      if (n == 0 || P.s[0] == 0)
        P.s[0] = P.k[0], P.s[1] = P.k[1];
      if (!graft_arg_is_none (&args[3]) && !graft_arg_ints (&args[3], P.p, 2, &n, 2, error))
        return FALSE;
      if (P.is_max)
        {
          if (!graft_arg_is_none (&args[4]) && !graft_arg_ints (&args[4], P.d, 2, &n, 2, error))
            return FALSE;
          ceil_mode = graft_arg_int (&args[5], 0) != 0;
        }
      else
        {
          ceil_mode = graft_arg_int (&args[4], 0) != 0;
          P.count_pad = graft_arg_int (&args[5], 1) != 0;
          P.divisor = graft_arg_is_none (&args[6]) ? 0 : graft_arg_int (&args[6], 0);
        }
      for (int i = 0; i < 2; i++)
        {
          if (P.k[i] <= 0 || P.s[i] <= 0 || P.d[i] <= 0 || P.p[i] < 0 || 2 * P.p[i] > P.k[i])
            return graft_kernel_fail (error, "invalid kernel, stride, padding or dilation");
          P.out[i] = pool_out (P.in[i], P.k[i], P.s[i], P.p[i], P.d[i], ceil_mode);
          if (P.out[i] <= 0)
            return graft_kernel_fail (error, "the output would be empty");
        }
    }
  gint64 dims[GRAFT_RT_MAX_RANK];
  memcpy (dims, x->dims, sizeof dims);
  dims[x->rank - 2] = P.out[0];
  dims[x->rank - 1] = P.out[1];
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_FLOAT32, x->rank, dims, error);
  if (y == NULL)
    return FALSE;
  gint64 planes = graft_dims_product (x->dims, 0, x->rank - 2);
  if (!P.is_max && !P.adaptive && P.divisor == 0)
    {
      /* PyTorch counts a window as ONNX does with pads on both sides:
       * the separable kernel of onnx::AveragePool (PoolFormer's token mixer) */
      GraftWindow w = { .n = 2 };
      for (int i = 0; i < 2; i++)
        {
          w.in[i] = P.in[i];
          w.out[i] = P.out[i];
          w.kernel[i] = P.k[i];
          w.stride[i] = P.s[i];
          w.dilation[i] = 1;
          w.pad_begin[i] = w.pad_end[i] = P.p[i];
        }
      if (graft_pool2d_separable_supports (&w))
        {
          graft_avg_pool2d (ctx, graft_cf32 (x), graft_f32 (y), planes, &w, P.count_pad);
          return TRUE;
        }
    }
  for (gint64 p = 0; p < planes; p++)
    pool_plane (&P, graft_cf32 (x) + p * P.in[0] * P.in[1], graft_f32 (y) + p * P.out[0] * P.out[1]);
  return TRUE;
}

/* y[M, N] = x[M, K] · w[N, K]ᵀ + bias[N] */
static void
gemm_bias_rows (const float *x, const float *w, const float *bias, float *y, gint64 M, gint64 N, gint64 K)
{
  for (gint64 i = 0; i < M; i++)
    for (gint64 j = 0; j < N; j++)
      y[i * N + j] = bias ? bias[j] : 0.0f;
  if (M * N > 0 && K > 0)
    cblas_sgemm (CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, x, K, w, K, 1.0f, y, N);
}

/* ---- lstm, gru ---- */

static inline float
sigmoidf (float v)
{
  return 1.0f / (1.0f + expf (-v));
}

/* One direction of one layer over x [T, B, n_in] (time major) into out
 * [T, B, out_stride] at column offset; h [B, H] in/out, and for an LSTM
 * c [B, H] (GRU: c NULL). PyTorch's gate orders: LSTM i f g o, GRU r z n,
 * whose n gate adds r·(W_hn h + b_hn), so the two products stay apart. */
static void
rnn_direction (const float *x, gint64 T, gint64 B, gint64 n_in, gint64 H, const float *w_ih, const float *w_hh,
               const float *b_ih, const float *b_hh, gboolean reverse, float *h, float *c, float *out,
               gint64 out_stride, gint64 offset)
{
  gint64 G = c ? 4 * H : 3 * H;
  g_autofree float *gates = g_new (float, MAX (B * G, 1));
  g_autofree float *hidden = g_new (float, MAX (B * G, 1));
  for (gint64 step = 0; step < T; step++)
    {
      gint64 t = reverse ? T - 1 - step : step;
      for (gint64 b = 0; b < B; b++)
        for (gint64 g = 0; g < G; g++)
          {
            gates[b * G + g] = b_ih ? b_ih[g] : 0;
            hidden[b * G + g] = b_hh ? b_hh[g] : 0;
          }
      cblas_sgemm (CblasRowMajor, CblasNoTrans, CblasTrans, B, G, n_in, 1.0f, x + t * B * n_in, n_in, w_ih, n_in, 1.0f,
                   gates, G);
      cblas_sgemm (CblasRowMajor, CblasNoTrans, CblasTrans, B, G, H, 1.0f, h, H, w_hh, H, 1.0f, hidden, G);
      for (gint64 b = 0; b < B; b++)
        {
          float *gb = gates + b * G, *hb = hidden + b * G;
          for (gint64 j = 0; j < H; j++)
            {
              float hv;
              if (c)
                {
                  float ig = sigmoidf (gb[j] + hb[j]), fg = sigmoidf (gb[H + j] + hb[H + j]);
                  float gg = tanhf (gb[2 * H + j] + hb[2 * H + j]), og = sigmoidf (gb[3 * H + j] + hb[3 * H + j]);
                  float cv = fg * c[b * H + j] + ig * gg;
                  c[b * H + j] = cv;
                  hv = og * tanhf (cv);
                }
              else
                {
                  float r = sigmoidf (gb[j] + hb[j]), z = sigmoidf (gb[H + j] + hb[H + j]);
                  float n = tanhf (gb[2 * H + j] + r * hb[2 * H + j]);
                  hv = (1.0f - z) * n + z * h[b * H + j];
                }
              out[(t * B + b) * out_stride + offset + j] = hv;
            }
          /* h is read by every j of the row above: write it back after */
          for (gint64 j = 0; j < H; j++)
            h[b * H + j] = out[(t * B + b) * out_stride + offset + j];
        }
    }
}

/* lstm(input, hx[2], params, has_biases, num_layers, dropout, train, bidirectional, batch_first)
 *   → (output, h_n, c_n)
 * gru(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)
 *   → (output, h_n) */
static gboolean
kernel_rnn (GraftKernelContext *ctx, GError **error)
{
  gboolean lstm = strcmp (ctx->node->op_type, "lstm") == 0;
  const char *op = ctx->node->op;
  GraftAtenArg args[9];
  graft_aten_args (ctx, NULL, 9, args);
  NEED (input, 0, FALSE);
  GraftRtTensor *hx = args[1].value, *params = args[2].value;
  if (hx == NULL || params == NULL || params->kind != GRAFT_RT_SEQUENCE ||
      (lstm ? hx->kind != GRAFT_RT_SEQUENCE || hx->items->len != 2 : hx->kind != GRAFT_RT_TENSOR))
    return graft_kernel_fail (error, lstm ? "lstm needs (h0, c0) and a list of weights" : "gru needs h0 and a list of weights");
  gboolean has_biases = graft_arg_int (&args[3], 1) != 0;
  gint64 layers = graft_arg_int (&args[4], 1);
  gboolean bidir = graft_arg_int (&args[7], 0) != 0, batch_first = graft_arg_int (&args[8], 0) != 0;
  gint64 dirs = bidir ? 2 : 1, per = has_biases ? 4 : 2, n_gates = lstm ? 4 : 3;
  if (input->rank != 3 && input->rank != 2)
    return graft_kernel_fail (error, "%s input must be 2-D or 3-D", op);
  if (input->dtype != GRAFT_DTYPE_FLOAT32)
    return graft_kernel_unsupported (error, "%s on a %s input", op, graft_dtype_to_string (input->dtype));
  if (layers < 1 || (gint64) params->items->len != layers * dirs * per)
    return graft_kernel_fail (error, "%s expects %" G_GINT64_FORMAT " weight tensors, got %u", op, layers * dirs * per,
                              params->items->len);
  gboolean unbatched = input->rank == 2;
  gint64 T = unbatched ? input->dims[0] : batch_first ? input->dims[1] : input->dims[0];
  gint64 B = unbatched ? 1 : batch_first ? input->dims[0] : input->dims[1];
  gint64 n_in = input->dims[input->rank - 1];
  GraftRtTensor *h0 = lstm ? hx->items->pdata[0] : hx, *c0 = lstm ? hx->items->pdata[1] : NULL;
  GraftRtTensor *w0 = params->items->pdata[1];
  if (w0->kind != GRAFT_RT_TENSOR || w0->rank != 2)
    return graft_kernel_fail (error, "%s weights must be matrices", op);
  gint64 H = w0->dims[1];
  if (h0->numel != layers * dirs * B * H || (c0 && c0->numel != h0->numel))
    return graft_kernel_fail (error, "%s's initial state must have %" G_GINT64_FORMAT " values", op, layers * dirs * B * H);
  g_autoptr(GraftRtTensor) h0f = graft_rt_tensor_cast (h0, GRAFT_DTYPE_FLOAT32, error);
  g_autoptr(GraftRtTensor) c0f = h0f && c0 ? graft_rt_tensor_cast (c0, GRAFT_DTYPE_FLOAT32, error) : NULL;
  if (h0f == NULL || (c0 && c0f == NULL))
    return FALSE;

  /* time-major copy of the input */
  g_autofree float *seq = g_new (float, MAX (T * B * n_in, 1));
  for (gint64 t = 0; t < T; t++)
    for (gint64 b = 0; b < B; b++)
      memcpy (seq + (t * B + b) * n_in, graft_cf32 (input) + (batch_first && !unbatched ? b * T + t : t * B + b) * n_in,
              n_in * sizeof (float));
  gint64 hn_dims[3] = { layers * dirs, B, H };
  GraftRtTensor *hn = graft_kernel_alloc_output (ctx, 1, GRAFT_DTYPE_FLOAT32, unbatched ? 2 : 3,
                                                 unbatched ? (gint64[]) { layers * dirs, H } : hn_dims, error);
  GraftRtTensor *cn = hn && lstm ? graft_kernel_alloc_output (ctx, 2, GRAFT_DTYPE_FLOAT32, hn->rank, hn->dims, error) : NULL;
  if (hn == NULL || (lstm && cn == NULL))
    return FALSE;
  memcpy (hn->data, h0f->data, hn->nbytes);
  if (cn)
    memcpy (cn->data, c0f->data, cn->nbytes);
  gint64 in_size = n_in;
  g_autofree float *layer_out = NULL;
  for (gint64 l = 0; l < layers; l++)
    {
      layer_out = g_new0 (float, MAX (T * B * dirs * H, 1));
      for (gint64 d = 0; d < dirs; d++)
        {
          gint64 base = (l * dirs + d) * per;
          GraftRtTensor *w[4] = { NULL };
          for (gint64 k = 0; k < per; k++)
            {
              w[k] = params->items->pdata[base + k];
              if (w[k]->kind != GRAFT_RT_TENSOR || w[k]->dtype != GRAFT_DTYPE_FLOAT32)
                return graft_kernel_unsupported (error, "%s weights of type %s", op, graft_dtype_to_string (w[k]->dtype));
            }
          if (w[0]->numel != n_gates * H * in_size || w[1]->numel != n_gates * H * H ||
              (has_biases && (w[2]->numel != n_gates * H || w[3]->numel != n_gates * H)))
            return graft_kernel_fail (error, "%s layer %" G_GINT64_FORMAT " weights have unexpected sizes", op, l);
          float *h = graft_f32 (hn) + (l * dirs + d) * B * H, *c = cn ? graft_f32 (cn) + (l * dirs + d) * B * H : NULL;
          rnn_direction (seq, T, B, in_size, H, w[0]->data, w[1]->data, has_biases ? w[2]->data : NULL,
                         has_biases ? w[3]->data : NULL, d == 1, h, c, layer_out, dirs * H, d * H);
        }
      g_free (seq);
      seq = g_steal_pointer (&layer_out);
      in_size = dirs * H;
    }
  gint64 odims[3];
  if (unbatched)
    odims[0] = T, odims[1] = dirs * H;
  else if (batch_first)
    odims[0] = B, odims[1] = T, odims[2] = dirs * H;
  else
    odims[0] = T, odims[1] = B, odims[2] = dirs * H;
  GraftRtTensor *out = graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_FLOAT32, input->rank, odims, error);
  if (out == NULL)
    return FALSE;
  for (gint64 t = 0; t < T; t++)
    for (gint64 b = 0; b < B; b++)
      memcpy (graft_f32 (out) + (batch_first && !unbatched ? b * T + t : t * B + b) * dirs * H,
              seq + (t * B + b) * dirs * H, dirs * H * sizeof (float));
  return TRUE;
}

/* ---- attention ---- */

/* One sequence of multi-head attention with packed in-projection
 * w_qkv [3E, E] and out-projection w_proj [E, E]: xq [Lq, E], xk/xv
 * [Lk, E] → out [Lq, E]; head-averaged (or summed) weights into avg [Lq, Lk]
 * if given. */
static void
attention_one (const float *xq, gint64 Lq, const float *xk, const float *xv, gint64 Lk, gint64 E, gint64 H,
               const float *w_qkv, const float *b_qkv, const float *w_proj, const float *b_proj, float *out,
               float *avg, gboolean average)
{
  gint64 D = E / H;
  g_autofree float *q = g_new (float, MAX (Lq * E, 1));
  g_autofree float *k = g_new (float, MAX (Lk * E, 1));
  g_autofree float *v = g_new (float, MAX (Lk * E, 1));
  const float *ins[3] = { xq, xk, xv };
  float *proj[3] = { q, k, v };
  gint64 rows[3] = { Lq, Lk, Lk };
  for (int p = 0; p < 3; p++)
    gemm_bias_rows (ins[p], w_qkv + p * E * E, b_qkv ? b_qkv + p * E : NULL, proj[p], rows[p], E, E);
  g_autofree float *ctxv = g_new0 (float, MAX (Lq * E, 1));
  g_autofree float *scores = g_new (float, MAX (Lq * Lk, 1));
  float scale = 1.0f / sqrtf ((float) D);
  if (avg)
    memset (avg, 0, Lq * Lk * sizeof (float));
  for (gint64 h = 0; h < H; h++)
    {
      if (Lq * Lk > 0)
        cblas_sgemm (CblasRowMajor, CblasNoTrans, CblasTrans, Lq, Lk, D, scale, q + h * D, E, k + h * D, E, 0.0f,
                     scores, Lk);
      for (gint64 i = 0; i < Lq; i++)
        {
          float *row = scores + i * Lk, m = -INFINITY, sum = 0;
          for (gint64 j = 0; j < Lk; j++)
            m = MAX (m, row[j]);
          for (gint64 j = 0; j < Lk; j++)
            sum += row[j] = expf (row[j] - m);
          for (gint64 j = 0; j < Lk; j++)
            row[j] /= sum;
          if (avg)
            for (gint64 j = 0; j < Lk; j++)
              avg[i * Lk + j] += row[j] / (average ? H : 1);
        }
      if (Lq * D > 0 && Lk > 0)
        cblas_sgemm (CblasRowMajor, CblasNoTrans, CblasNoTrans, Lq, D, Lk, 1.0f, scores, Lk, v + h * D, E, 0.0f,
                     ctxv + h * D, E);
    }
  gemm_bias_rows (ctxv, w_proj, b_proj, out, Lq, E, E);
}

/* _native_multi_head_attention(query, key, value, embed_dim, num_heads,
 * qkv_weight, qkv_bias, proj_weight, proj_bias, mask=None,
 * need_weights=True, average_attn_weights=True, mask_type=None):
 * batch-first [B, L, E] inputs, as nn.MultiheadAttention's fast path. */
static gboolean
kernel_native_mha (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[13];
  graft_aten_args (ctx, NULL, 13, args);
  NEED (q_in, 0, FALSE);
  NEED (k_in, 1, FALSE);
  NEED (v_in, 2, FALSE);
  NEED (w_qkv, 5, FALSE);
  NEED (b_qkv, 6, TRUE);
  NEED (w_proj, 7, FALSE);
  NEED (b_proj, 8, TRUE);
  if (!graft_arg_is_none (&args[9]))
    return graft_kernel_unsupported (error, "attention masks");
  gint64 E = graft_arg_int (&args[3], 0), H = graft_arg_int (&args[4], 1);
  gboolean need_weights = graft_arg_int (&args[10], 1) != 0, average = graft_arg_int (&args[11], 1) != 0;
  if (q_in->rank != 3 || k_in->rank != 3 || v_in->rank != 3 || q_in->dims[2] != E || k_in->dims[2] != E ||
      v_in->dims[2] != E || k_in->dims[1] != v_in->dims[1] || q_in->dims[0] != k_in->dims[0] ||
      k_in->dims[0] != v_in->dims[0])
    return graft_kernel_fail (error, "query, key and value must be [batch, length, %" G_GINT64_FORMAT "]", E);
  if (H <= 0 || E % H != 0 || w_qkv->numel != 3 * E * E || w_proj->numel != E * E ||
      (b_qkv && b_qkv->numel != 3 * E) || (b_proj && b_proj->numel != E))
    return graft_kernel_fail (error, "projection weights do not fit embed_dim %" G_GINT64_FORMAT " with %"
                              G_GINT64_FORMAT " heads", E, H);
  gint64 B = q_in->dims[0], Lq = q_in->dims[1], Lk = k_in->dims[1];
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_FLOAT32, 3, (gint64[]) { B, Lq, E }, error);
  if (y == NULL)
    return FALSE;
  GraftRtTensor *w = NULL;
  if (ctx->n_outputs > 1)
    {
      w = need_weights ? graft_kernel_alloc_output (ctx, 1, GRAFT_DTYPE_FLOAT32, 3, (gint64[]) { B, Lq, Lk }, error)
                       : graft_kernel_alloc_output (ctx, 1, GRAFT_DTYPE_FLOAT32, 1, (gint64[]) { 0 }, error);
      if (w == NULL)
        return FALSE;
    }
  for (gint64 b = 0; b < B; b++)
    attention_one (graft_cf32 (q_in) + b * Lq * E, Lq, graft_cf32 (k_in) + b * Lk * E, graft_cf32 (v_in) + b * Lk * E,
                   Lk, E, H, w_qkv->data, b_qkv ? b_qkv->data : NULL, w_proj->data, b_proj ? b_proj->data : NULL,
                   graft_f32 (y) + b * Lq * E, w && need_weights ? graft_f32 (w) + b * Lq * Lk : NULL, average);
  return TRUE;
}

static void
layer_norm_rows (float *x, gint64 rows, gint64 n, const float *w, const float *b, double eps)
{
  graft_layer_norm_rows_f32 (NULL, x, w, b, x, rows, n, eps);
}

typedef struct {
  gint64 E, H, F;
  gboolean gelu, norm_first;
  double eps;
  const float *w_qkv, *b_qkv, *w_proj, *b_proj, *n1w, *n1b, *n2w, *n2b, *w1, *b1, *w2, *b2;
} EncoderLayer;

/* x [L, E] → y [L, E] */
static void
encoder_layer_one (const EncoderLayer *P, const float *x, gint64 L, float *y)
{
  gint64 E = P->E, F = P->F;
  g_autofree float *t = g_new (float, MAX (L * E, 1));
  g_autofree float *attn = g_new (float, MAX (L * E, 1));
  g_autofree float *hidden = g_new (float, MAX (L * F, 1));
  memcpy (y, x, L * E * sizeof (float));
  /* attention block */
  memcpy (t, y, L * E * sizeof (float));
  if (P->norm_first)
    layer_norm_rows (t, L, E, P->n1w, P->n1b, P->eps);
  attention_one (t, L, t, t, L, E, P->H, P->w_qkv, P->b_qkv, P->w_proj, P->b_proj, attn, NULL, TRUE);
  for (gint64 i = 0; i < L * E; i++)
    y[i] += attn[i];
  if (!P->norm_first)
    layer_norm_rows (y, L, E, P->n1w, P->n1b, P->eps);
  /* feed-forward block */
  memcpy (t, y, L * E * sizeof (float));
  if (P->norm_first)
    layer_norm_rows (t, L, E, P->n2w, P->n2b, P->eps);
  gemm_bias_rows (t, P->w1, P->b1, hidden, L, F, E);
  for (gint64 i = 0; i < L * F; i++)
    hidden[i] = P->gelu ? (float) (0.5 * hidden[i] * (1.0 + erf (hidden[i] / G_SQRT2))) : MAX (hidden[i], 0.0f);
  gemm_bias_rows (hidden, P->w2, P->b2, attn, L, E, F);
  for (gint64 i = 0; i < L * E; i++)
    y[i] += attn[i];
  if (!P->norm_first)
    layer_norm_rows (y, L, E, P->n2w, P->n2b, P->eps);
}

/* _transformer_encoder_layer_fwd(src, embed_dim, num_heads, qkv_weight,
 * qkv_bias, proj_weight, proj_bias, use_gelu, norm_first, eps, norm_weight_1,
 * norm_bias_1, norm_weight_2, norm_bias_2, ffn_weight_1, ffn_bias_1,
 * ffn_weight_2, ffn_bias_2, mask=None, mask_type=None): nn.TransformerEncoderLayer's
 * inference path on [B, L, E], or on a nested tensor (a list of [L_i, E]). */
static gboolean
kernel_encoder_layer (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[20];
  graft_aten_args (ctx, NULL, 20, args);
  if (!graft_arg_is_none (&args[18]))
    return graft_kernel_unsupported (error, "attention masks");
  EncoderLayer P = { 0 };
  P.E = graft_arg_int (&args[1], 0);
  P.H = graft_arg_int (&args[2], 1);
  P.gelu = graft_arg_int (&args[7], 0) != 0;
  P.norm_first = graft_arg_int (&args[8], 0) != 0;
  P.eps = graft_arg_double (&args[9], 1e-5);
  const float **slots[] = { &P.w_qkv, &P.b_qkv, &P.w_proj, &P.b_proj, NULL, NULL, NULL, &P.n1w, &P.n1b, &P.n2w,
                            &P.n2b, &P.w1, &P.b1, &P.w2, &P.b2 };
  GraftRtTensor *owned[G_N_ELEMENTS (slots)] = { NULL };
  GraftRtTensor *w1 = NULL;
  gboolean ok = TRUE;
  for (guint k = 0; k < G_N_ELEMENTS (slots) && ok; k++)
    if (slots[k])
      {
        GraftRtTensor *t = f32_arg (args, 3 + k, &owned[k], TRUE, error);
        if (t == NULL && error && *error)
          ok = FALSE;
        *slots[k] = t ? t->data : NULL;
        if (k == 11)
          w1 = t;
      }
  if (ok && (P.H <= 0 || P.E <= 0 || P.E % P.H != 0 || !P.w_qkv || !P.w_proj || w1 == NULL || w1->rank != 2 ||
             w1->dims[1] != P.E || !P.w2))
    ok = graft_kernel_fail (error, "the layer's weights do not fit embed_dim %" G_GINT64_FORMAT " with %" G_GINT64_FORMAT
                            " heads", P.E, P.H);
  if (ok)
    {
      P.F = w1->dims[0];
      GraftRtTensor *src = args[0].value;
      if (src && src->kind == GRAFT_RT_SEQUENCE)
        {
          GraftRtTensor *list = graft_rt_tensor_new_sequence (GRAFT_DTYPE_FLOAT32);
          for (guint i = 0; ok && i < src->items->len; i++)
            {
              GraftRtTensor *x = src->items->pdata[i];
              GraftRtTensor *y = x->rank == 2 && x->dims[1] == P.E && x->dtype == GRAFT_DTYPE_FLOAT32
                                 ? graft_rt_tensor_new (GRAFT_DTYPE_FLOAT32, 2, x->dims, error) : NULL;
              if (y == NULL)
                ok = error && *error ? FALSE : graft_kernel_fail (error, "nested item %u is not [length, %"
                                                                  G_GINT64_FORMAT "] float32", i, P.E);
              else
                {
                  encoder_layer_one (&P, x->data, x->dims[0], y->data);
                  g_ptr_array_add (list->items, y);
                }
            }
          if (ok)
            graft_kernel_set_output (ctx, 0, list);
          else
            graft_rt_tensor_unref (list);
        }
      else
        {
          g_autoptr(GraftRtTensor) x_owned = NULL;
          GraftRtTensor *x = f32_arg (args, 0, &x_owned, FALSE, error);
          if (x == NULL || x->rank != 3 || x->dims[2] != P.E)
            ok = x == NULL ? FALSE : graft_kernel_fail (error, "src must be [batch, length, %" G_GINT64_FORMAT "]", P.E);
          GraftRtTensor *y = ok ? graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_FLOAT32, 3, x->dims, error) : NULL;
          ok = y != NULL;
          for (gint64 b = 0; ok && b < x->dims[0]; b++)
            encoder_layer_one (&P, graft_cf32 (x) + b * x->dims[1] * P.E, x->dims[1], graft_f32 (y) + b * x->dims[1] * P.E);
        }
    }
  for (guint k = 0; k < G_N_ELEMENTS (owned); k++)
    g_clear_pointer (&owned[k], graft_rt_tensor_unref);
  return ok;
}

/* ---- nested tensors, as lists of per-sequence tensors ---- */

/* _nested_tensor_from_mask(src [B, L, E], mask [B, L] (True: keep), mask_check):
 * sequence b keeps its first sum(mask[b]) rows (the mask must be left-aligned). */
static gboolean
mask_lengths (GraftRtTensor *src, GraftRtTensor *mask, gint64 *lengths, gboolean *aligned, GError **error)
{
  if (src->rank != 3 || mask->rank != 2 || mask->dims[0] != src->dims[0] || mask->dims[1] != src->dims[1])
    return graft_kernel_fail (error, "the mask must be [batch, length] of src [batch, length, features]");
  *aligned = TRUE;
  for (gint64 b = 0; b < mask->dims[0]; b++)
    {
      lengths[b] = 0;
      gboolean ended = FALSE;
      for (gint64 l = 0; l < mask->dims[1]; l++)
        {
          gboolean keep = graft_rt_tensor_get_f64 (mask, b * mask->dims[1] + l) != 0;
          if (keep && ended)
            *aligned = FALSE;
          if (keep)
            lengths[b]++;
          else
            ended = TRUE;
        }
    }
  return TRUE;
}

static gboolean
kernel_nested_from_mask (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[3];
  graft_aten_args (ctx, NULL, 3, args);
  GraftRtTensor *src = graft_aten_need_tensor (&args[0], 0, error);
  GraftRtTensor *mask = src ? graft_aten_need_tensor (&args[1], 1, error) : NULL;
  if (mask == NULL)
    return FALSE;
  g_autofree gint64 *lengths = g_new0 (gint64, MAX (src->rank ? src->dims[0] : 0, 1));
  gboolean aligned = TRUE;
  if (!mask_lengths (src, mask, lengths, &aligned, error))
    return FALSE;
  if (strcmp (ctx->node->op_type, "_nested_tensor_from_mask_left_aligned") == 0)
    {
      graft_kernel_set_output (ctx, 0, graft_aten_new_bool (aligned));
      return TRUE;
    }
  if (!aligned && graft_arg_int (&args[2], 1))
    return graft_kernel_fail (error, "the padding mask is not left-aligned");
  GraftRtTensor *list = graft_rt_tensor_new_sequence (src->dtype);
  gint64 L = src->dims[1], E = src->dims[2];
  for (gint64 b = 0; b < src->dims[0]; b++)
    {
      GraftRtTensor *t = graft_rt_tensor_new (src->dtype, 2, (gint64[]) { lengths[b], E }, error);
      if (t == NULL)
        {
          graft_rt_tensor_unref (list);
          return FALSE;
        }
      graft_copy_block (t, 0, src, b * L * E, lengths[b] * E);
      g_ptr_array_add (list->items, t);
    }
  graft_kernel_set_output (ctx, 0, list);
  return TRUE;
}

/* to_padded_tensor(nested, padding, output_size=None) */
static gboolean
kernel_to_padded (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[3];
  graft_aten_args (ctx, NULL, 3, args);
  GraftRtTensor *list = args[0].value;
  if (list == NULL || list->kind != GRAFT_RT_SEQUENCE || list->items->len == 0)
    return graft_kernel_fail (error, "to_padded_tensor() needs a nested tensor");
  GraftRtTensor *first = list->items->pdata[0];
  gint64 L = 0, E = first->rank == 2 ? first->dims[1] : -1;
  for (guint i = 0; i < list->items->len; i++)
    {
      GraftRtTensor *t = list->items->pdata[i];
      if (t->rank != 2 || t->dims[1] != E || t->dtype != first->dtype)
        return graft_kernel_fail (error, "nested items must all be [length, %" G_GINT64_FORMAT "]", E);
      L = MAX (L, t->dims[0]);
    }
  gint64 size[GRAFT_RT_MAX_RANK];
  guint n;
  if (!graft_arg_is_none (&args[2]))
    {
      if (!graft_arg_ints (&args[2], size, GRAFT_RT_MAX_RANK, &n, 0, error))
        return FALSE;
      if (n != 3 || size[0] != list->items->len || size[1] < L || size[2] != E)
        return graft_kernel_fail (error, "output_size does not fit the nested tensor");
      L = size[1];
    }
  gint64 B = list->items->len;
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, first->dtype, 3, (gint64[]) { B, L, E }, error);
  if (y == NULL)
    return FALSE;
  double pad = graft_arg_double (&args[1], 0);
  for (gint64 i = 0; i < y->numel; i++)
    graft_rt_tensor_set_f64 (y, i, pad);
  for (gint64 b = 0; b < B; b++)
    {
      GraftRtTensor *t = list->items->pdata[b];
      graft_copy_block (y, b * L * E, t, 0, t->numel);
    }
  return TRUE;
}

/* scaled_dot_product_attention(query, key, value, attn_mask=None,
 * dropout_p=0., is_causal=False, scale=None, enable_gqa=False):
 * q [..., L, E], k [..., S, E], v [..., S, Ev] → [..., L, Ev]. A bool mask
 * keeps where true, a float mask is added; both broadcast to [..., L, S].
 * A row with every key masked out gives zeros. */
static gboolean
kernel_sdpa (GraftKernelContext *ctx, GError **error)
{
  static const char *const names[] = { "query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale",
                                       "enable_gqa" };
  GraftAtenArg args[8];
  graft_aten_args (ctx, names, 8, args);
  NEED (q, 0, FALSE);
  NEED (k, 1, FALSE);
  NEED (v, 2, FALSE);
  GraftRtTensor *mask = graft_arg_is_none (&args[3]) ? NULL : graft_aten_need_tensor (&args[3], 3, error);
  if (!graft_arg_is_none (&args[3]) && mask == NULL)
    return FALSE;
  gboolean causal = graft_arg_int (&args[5], 0) != 0;
  int r = q->rank;
  if (r < 2 || k->rank != r || v->rank != r)
    return graft_kernel_fail (error, "query, key and value must have the same rank (at least 2)");
  gint64 L = q->dims[r - 2], E = q->dims[r - 1], S = k->dims[r - 2], Ev = v->dims[r - 1];
  if (k->dims[r - 1] != E || v->dims[r - 2] != S)
    return graft_kernel_fail (error, "key must be [..., S, %" G_GINT64_FORMAT "] and value [..., S, Ev]", E);
  for (int d = 0; d < r - 2; d++)
    if (k->dims[d] != q->dims[d] || v->dims[d] != q->dims[d])
      return graft_kernel_unsupported (error, "attention with key/value batch dimensions other than the query's");
  if (mask && mask->rank > r)
    return graft_kernel_fail (error, "the attention mask has more dimensions than the query");
  double scale = graft_arg_is_none (&args[6]) ? 1.0 / sqrt ((double) E) : graft_arg_double (&args[6], 1.0);
  /* the blocked kernel of the ONNX export's fused attention when it takes these */
  gboolean declined;
  if (!graft_attention_sdpa_blocked (ctx, q, k, v, mask, (float) scale, causal, &declined, error))
    return FALSE;
  if (!declined)
    return TRUE;
  gint64 dims[GRAFT_RT_MAX_RANK];
  memcpy (dims, q->dims, sizeof (gint64) * r);
  dims[r - 1] = Ev;
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_FLOAT32, r, dims, error);
  if (y == NULL)
    return FALSE;
  /* the mask's strides for the [..., L, S] score index (0 where it broadcasts) */
  gint64 mask_strides[GRAFT_RT_MAX_RANK] = { 0 }, score_dims[GRAFT_RT_MAX_RANK];
  memcpy (score_dims, q->dims, sizeof (gint64) * r);
  score_dims[r - 1] = S;
  if (mask)
    {
      gint64 stride = 1;
      for (int d = r - 1, md = mask->rank - 1; md >= 0; d--, md--)
        {
          if (mask->dims[md] != 1 && mask->dims[md] != score_dims[d])
            return graft_kernel_fail (error, "the attention mask does not broadcast to the scores");
          mask_strides[d] = mask->dims[md] == 1 ? 0 : stride;
          stride *= mask->dims[md];
        }
    }
  gint64 batches = graft_dims_product (q->dims, 0, r - 2);
  g_autofree float *scores = g_new (float, MAX (L * S, 1));
  for (gint64 b = 0; b < batches; b++)
    {
      const float *qb = graft_cf32 (q) + b * L * E, *kb = graft_cf32 (k) + b * S * E, *vb = graft_cf32 (v) + b * S * Ev;
      float *yb = graft_f32 (y) + b * L * Ev;
      if (L * S > 0 && E > 0)
        cblas_sgemm (CblasRowMajor, CblasNoTrans, CblasTrans, L, S, E, (float) scale, qb, E, kb, E, 0.0f, scores, S);
      else
        memset (scores, 0, sizeof (float) * MAX (L * S, 1));
      gint64 mask_base = 0, rest = b;
      for (int d = r - 3; d >= 0; rest /= q->dims[d], d--)
        mask_base += (rest % q->dims[d]) * mask_strides[d];
      for (gint64 i = 0; i < L; i++)
        {
          float *row = scores + i * S, m = -INFINITY, sum = 0;
          for (gint64 j = 0; j < S; j++)
            {
              if (causal && j > i)
                row[j] = -INFINITY;
              else if (mask)
                {
                  gint64 at = mask_base + i * mask_strides[r - 2] + j * mask_strides[r - 1];
                  if (mask->dtype == GRAFT_DTYPE_BOOL)
                    row[j] = ((const guint8 *) mask->data)[at] ? row[j] : -INFINITY;
                  else
                    row[j] += (float) graft_rt_tensor_get_f64 (mask, at);
                }
              m = MAX (m, row[j]);
            }
          for (gint64 j = 0; j < S; j++)
            sum += row[j] = m == -INFINITY ? 0 : expf (row[j] - m);
          for (gint64 j = 0; j < S; j++)
            row[j] = sum > 0 ? row[j] / sum : 0;
        }
      if (L * Ev > 0)
        cblas_sgemm (CblasRowMajor, CblasNoTrans, CblasNoTrans, L, Ev, S, 1.0f, scores, S, vb, Ev, 0.0f, yb, Ev);
    }
  return TRUE;
}

/* embedding(weight, indices, padding_idx=-1, scale_grad_by_freq, sparse):
 * rows of weight; the training-only arguments change nothing here */
static gboolean
kernel_embedding (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[2];
  graft_aten_args (ctx, NULL, 2, args);
  GraftRtTensor *weight = graft_aten_need_tensor (&args[0], 0, error);
  GraftRtTensor *indices = weight ? graft_aten_need_tensor (&args[1], 1, error) : NULL;
  if (indices == NULL)
    return FALSE;
  if (weight->rank != 2 || graft_dtype_is_float (indices->dtype) || indices->rank + 1 > GRAFT_RT_MAX_RANK)
    return graft_kernel_fail (error, "embedding needs a [rows, dim] weight and integer indices");
  gint64 rows = weight->dims[0], width = weight->dims[1], dims[GRAFT_RT_MAX_RANK];
  memcpy (dims, indices->dims, sizeof (gint64) * indices->rank);
  dims[indices->rank] = width;
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, weight->dtype, indices->rank + 1, dims, error);
  if (y == NULL)
    return FALSE;
  gsize row_bytes = width * graft_dtype_get_size (weight->dtype);
  for (gint64 e = 0; e < indices->numel; e++)
    {
      gint64 at = graft_rt_tensor_get_i64 (indices, e);
      if (at < 0 || at >= rows)
        return graft_kernel_fail (error, "embedding index %" G_GINT64_FORMAT " is out of range for %" G_GINT64_FORMAT
                                  " rows", at, rows);
      memcpy ((guint8 *) y->data + e * row_bytes, (const guint8 *) weight->data + at * row_bytes, row_bytes);
    }
  return TRUE;
}

/* baddbmm(self, batch1, batch2, beta=1, alpha=1) */
static gboolean
kernel_baddbmm (GraftKernelContext *ctx, GError **error)
{
  static const char *const names[] = { "self", "batch1", "batch2", "beta", "alpha" };
  GraftAtenArg args[5];
  graft_aten_args (ctx, names, 5, args);
  NEED (c, 0, FALSE);
  NEED (a, 1, FALSE);
  NEED (b, 2, FALSE);
  if (a->rank != 3 || b->rank != 3 || a->dims[0] != b->dims[0] || a->dims[2] != b->dims[1])
    return graft_kernel_fail (error, "baddbmm needs [B, M, K] and [B, K, N]");
  gint64 B = a->dims[0], M = a->dims[1], K = a->dims[2], N = b->dims[2];
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_FLOAT32, 3, (gint64[]) { B, M, N }, error);
  if (y == NULL)
    return FALSE;
  GraftRtTensor *ins[2] = { y, c };
  GraftBroadcastIter it;
  for (int d = 0; d < c->rank; d++)
    if (c->rank > 3 || (c->dims[d] != 1 && c->dims[d] != y->dims[d + 3 - c->rank]))
      return graft_kernel_fail (error, "self does not broadcast to [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %"
                                G_GINT64_FORMAT "]", B, M, N);
  graft_broadcast_iter_init (&it, y, (const GraftRtTensor *const *) ins, 2);
  float beta = graft_arg_double (&args[3], 1.0), alpha = graft_arg_double (&args[4], 1.0);
  for (gint64 i = 0; i < y->numel; i++, graft_broadcast_iter_next (&it))
    graft_f32 (y)[i] = beta == 0 ? 0 : beta * graft_cf32 (c)[it.offsets[1]];
  for (gint64 i = 0; i < B && M * N > 0; i++)
    if (K > 0)
      cblas_sgemm (CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, alpha, graft_cf32 (a) + i * M * K, K,
                   graft_cf32 (b) + i * K * N, N, 1.0f, graft_f32 (y) + i * M * N, N);
  return TRUE;
}

/* ---- upsampling ---- */

/* Where output pixel i of an axis reads from, as PyTorch computes it:
 * scale is in/out, or 1/scale_factor when the caller gave factors. */
static double
source_position (gint64 i, gint64 in, gint64 out, double factor, gboolean align_corners, gboolean nearest)
{
  if (nearest)
    return MIN (floor (i * (factor > 0 ? 1.0 / factor : (double) in / out)), in - 1);
  if (align_corners)
    return out > 1 ? i * (double) (in - 1) / (out - 1) : 0;
  double src = (i + 0.5) * (factor > 0 ? 1.0 / factor : (double) in / out) - 0.5;
  return src < 0 ? 0 : src;
}

/* upsample_nearest2d(input, output_size, scale_factors) (.vec) or
 *   (self, output_size, scales_h, scales_w);
 * upsample_bilinear2d(input, output_size, align_corners, scale_factors) (.vec) or
 *   (self, output_size, align_corners, scales_h, scales_w);
 * the 1-D forms (nearest1d, linear1d: HF SAM's relative positions) as a
 * 2-D image one row high. */
static gboolean
kernel_upsample (GraftKernelContext *ctx, GError **error)
{
  gboolean nearest = g_str_has_prefix (ctx->node->op_type, "upsample_nearest");
  int spatial = g_str_has_suffix (ctx->node->op_type, "1d") ? 1 : 2;
  GraftAtenArg args[5];
  graft_aten_args (ctx, NULL, 5, args);
  NEED (x, 0, FALSE);
  if (x->rank != spatial + 2)
    return graft_kernel_fail (error, "%s needs a %d-D input, got rank %d", ctx->node->op, spatial + 2, x->rank);
  gboolean align_corners = nearest ? FALSE : graft_arg_int (&args[2], 0) != 0;
  guint first_scale = nearest ? 2 : 3;
  /* index 0 is the height (1 for the 1-D forms), 1 the width */
  double factors[2] = { spatial == 1 ? 1 : 0, 0 };
  double *given = factors + (2 - spatial);
  gint64 sizes[2] = { 1, 0 };
  guint n = 0;
  if (!graft_arg_is_none (&args[first_scale]))
    {
      /* a list of factors (.vec) or scales_h, scales_w */
      GraftAtenArg *a = &args[first_scale];
      if (a->attr && a->attr->type == GRAFT_ATTR_FLOATS && a->attr->floats->len == (guint) spatial)
        for (int k = 0; k < spatial; k++)
          given[k] = g_array_index (a->attr->floats, double, k);
      else if (a->value && a->value->kind == GRAFT_RT_SEQUENCE && a->value->items->len == (guint) spatial)
        for (int k = 0; k < spatial; k++)
          given[k] = graft_rt_tensor_get_f64 (a->value->items->pdata[k], 0);
      else if (a->attr && a->attr->type == GRAFT_ATTR_INTS && a->attr->ints->len == (guint) spatial)
        for (int k = 0; k < spatial; k++)
          given[k] = g_array_index (a->attr->ints, gint64, k);
      else
        {
          given[0] = graft_arg_double (a, 0);
          if (spatial == 2)
            given[1] = graft_arg_double (&args[first_scale + 1], given[0]);
        }
    }
  if (!graft_arg_is_none (&args[1]))
    {
      if (!graft_arg_ints (&args[1], sizes + (2 - spatial), spatial, &n, spatial, error))
        return FALSE;
      if (n != (guint) spatial)
        return graft_kernel_fail (error, "%s needs %d output sizes", ctx->node->op, spatial);
    }
  else if (factors[0] > 0 && factors[1] > 0)
    for (int k = 2 - spatial; k < 2; k++)
      sizes[k] = (gint64) floor (x->dims[2 + k - (2 - spatial)] * factors[k]);
  else
    return graft_kernel_fail (error, "%s needs output_size or scale_factors", ctx->node->op);
  if (sizes[0] <= 0 || sizes[1] <= 0)
    return graft_kernel_fail (error, "%s: the output size must be positive", ctx->node->op);
  gint64 dims[4] = { x->dims[0], x->dims[1], sizes[0], sizes[1] };
  if (spatial == 1)
    dims[2] = sizes[1];
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_FLOAT32, spatial + 2, dims, error);
  if (y == NULL)
    return FALSE;
  gint64 H = spatial == 1 ? 1 : x->dims[2], W = x->dims[x->rank - 1], planes = x->dims[0] * x->dims[1];
  g_autofree gint64 *x0 = g_new (gint64, sizes[1]);
  g_autofree gint64 *x1 = g_new (gint64, sizes[1]);
  g_autofree float *xw = g_new (float, sizes[1]);
  for (gint64 j = 0; j < sizes[1]; j++)
    {
      double src = source_position (j, W, sizes[1], factors[1], align_corners, nearest);
      x0[j] = MIN ((gint64) src, W - 1);
      x1[j] = MIN (x0[j] + 1, W - 1);
      xw[j] = nearest ? 0 : (float) (src - x0[j]);
    }
  for (gint64 i = 0; i < sizes[0]; i++)
    {
      double src = source_position (i, H, sizes[0], factors[0], align_corners, nearest);
      gint64 y0 = MIN ((gint64) src, H - 1), y1 = MIN (y0 + 1, H - 1);
      float yw = nearest ? 0 : (float) (src - y0);
      for (gint64 p = 0; p < planes; p++)
        {
          const float *plane = graft_cf32 (x) + p * H * W;
          float *row = graft_f32 (y) + (p * sizes[0] + i) * sizes[1];
          for (gint64 j = 0; j < sizes[1]; j++)
            {
              float top = plane[y0 * W + x0[j]] * (1 - xw[j]) + plane[y0 * W + x1[j]] * xw[j];
              float bottom = plane[y1 * W + x0[j]] * (1 - xw[j]) + plane[y1 * W + x1[j]] * xw[j];
              row[j] = top * (1 - yw) + bottom * yw;
            }
        }
    }
  return TRUE;
}

/* ---- group_norm, weight_norm ---- */

/* group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled) */
static gboolean
kernel_group_norm (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[5];
  graft_aten_args (ctx, NULL, 5, args);
  NEED (x, 0, FALSE);
  NEED (scale, 2, TRUE);
  NEED (bias, 3, TRUE);
  gint64 groups = graft_arg_int (&args[1], 1);
  double eps = graft_arg_double (&args[4], 1e-5);
  if (x->rank < 2 || groups <= 0 || x->dims[1] % groups != 0)
    return graft_kernel_fail (error, "group_norm: %" G_GINT64_FORMAT " groups do not divide the input's channels",
                              groups);
  gint64 N = x->dims[0], C = x->dims[1], spatial = graft_dims_product (x->dims, 2, x->rank), per = C / groups;
  if ((scale && scale->numel != C) || (bias && bias->numel != C))
    return graft_kernel_fail (error, "group_norm: weight and bias need %" G_GINT64_FORMAT " values", C);
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_FLOAT32, x->rank, x->dims, error);
  if (y == NULL)
    return FALSE;
  if (x_owned == NULL)
    {
      /* float32 input: the vector passes of ONNX's GroupNormalization */
      GraftGroupNormJob job = { graft_cf32 (x), graft_f32 (y), NULL, NULL, scale ? graft_cf32 (scale) : NULL,
                                bias ? graft_cf32 (bias) : NULL, C, groups, spatial, eps, FALSE };
      graft_group_norm_f32 (ctx, &job, N);
      return TRUE;
    }
  for (gint64 n = 0; n < N; n++)
    for (gint64 g = 0; g < groups; g++)
      {
        const float *in = graft_cf32 (x) + (n * C + g * per) * spatial;
        float *out = graft_f32 (y) + (n * C + g * per) * spatial;
        gint64 count = per * spatial;
        double sum = 0, squares = 0;
        for (gint64 i = 0; i < count; i++)
          sum += in[i];
        double mean = count ? sum / count : 0;
        for (gint64 i = 0; i < count; i++)
          squares += (in[i] - mean) * (in[i] - mean);
        double inv = 1.0 / sqrt ((count ? squares / count : 0) + eps);
        for (gint64 c = 0; c < per; c++)
          {
            gint64 channel = g * per + c;
            float a = (float) (inv * (scale ? graft_cf32 (scale)[channel] : 1.0f));
            float b = (float) ((bias ? graft_cf32 (bias)[channel] : 0.0f) - mean * a);
            for (gint64 i = 0; i < spatial; i++)
              out[c * spatial + i] = in[c * spatial + i] * a + b;
          }
      }
  return TRUE;
}

/* instance_norm(input, weight, bias, running_mean, running_var,
 * use_input_stats, momentum, eps, cudnn_enabled): each (sample, channel)
 * plane normalised by its own statistics (or by the running ones when
 * use_input_stats is false), then scaled per channel */
static gboolean
kernel_instance_norm (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[8];
  graft_aten_args (ctx, NULL, 8, args);
  NEED (x, 0, FALSE);
  NEED (scale, 1, TRUE);
  NEED (bias, 2, TRUE);
  NEED (running_mean, 3, TRUE);
  NEED (running_var, 4, TRUE);
  gboolean own_stats = graft_arg_int (&args[5], 1) != 0;
  double eps = graft_arg_double (&args[7], 1e-5);
  if (x->rank < 2)
    return graft_kernel_fail (error, "instance_norm needs an input of rank 2 or more");
  gint64 N = x->dims[0], C = x->dims[1], spatial = graft_dims_product (x->dims, 2, x->rank);
  if ((scale && scale->numel != C) || (bias && bias->numel != C))
    return graft_kernel_fail (error, "instance_norm: weight and bias need %" G_GINT64_FORMAT " values", C);
  if (!own_stats && (running_mean == NULL || running_var == NULL || running_mean->numel != C ||
                     running_var->numel != C))
    return graft_kernel_fail (error, "instance_norm without input statistics needs %" G_GINT64_FORMAT
                              " running means and variances", C);
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_FLOAT32, x->rank, x->dims, error);
  if (y == NULL)
    return FALSE;
  if (own_stats && x_owned == NULL)
    {
      /* float32 input: the vector passes of ONNX's InstanceNormalization
       * (RAFT's encoders: a scalar pass per plane took six times as long) */
      GraftGroupNormJob job = { graft_cf32 (x), graft_f32 (y), NULL, NULL, scale ? graft_cf32 (scale) : NULL,
                                bias ? graft_cf32 (bias) : NULL, C, MAX (C, 1), spatial, eps, FALSE };
      graft_group_norm_f32 (ctx, &job, C > 0 ? N : 0);
      return TRUE;
    }
  for (gint64 n = 0; n < N; n++)
    for (gint64 c = 0; c < C; c++)
      {
        const float *in = graft_cf32 (x) + (n * C + c) * spatial;
        float *out = graft_f32 (y) + (n * C + c) * spatial;
        double mean, var;
        if (own_stats)
          {
            double sum = 0, squares = 0;
            for (gint64 i = 0; i < spatial; i++)
              sum += in[i];
            mean = spatial ? sum / spatial : 0;
            for (gint64 i = 0; i < spatial; i++)
              squares += (in[i] - mean) * (in[i] - mean);
            var = spatial ? squares / spatial : 0;
          }
        else
          mean = graft_cf32 (running_mean)[c], var = graft_cf32 (running_var)[c];
        float a = (float) ((scale ? graft_cf32 (scale)[c] : 1.0f) / sqrt (var + eps));
        float b = (float) ((bias ? graft_cf32 (bias)[c] : 0.0f) - mean * a);
        for (gint64 i = 0; i < spatial; i++)
          out[i] = in[i] * a + b;
      }
  return TRUE;
}

/* ---- grid_sampler ---- */

/* Where normalised grid coordinate g (-1 … 1) lands on an axis of size
 * n, with PyTorch's padding of the coordinate (border: clipped,
 * reflection: mirrored) */
static double
grid_source (double g, gint64 n, gboolean align_corners, gint64 padding)
{
  double x = align_corners ? (g + 1) / 2 * (n - 1) : ((g + 1) * n - 1) / 2;
  if (padding == 2)
    {
      /* reflect about the corner pixels' centres, or their outer edges */
      double lo = align_corners ? 0 : -0.5, span = align_corners ? n - 1 : n;
      if (span <= 0)
        x = 0;
      else
        {
          double d = fabs (x - lo);
          double flips = floor (d / span), extra = fmod (d, span);
          x = ((gint64) flips % 2 == 0) ? lo + extra : lo + span - extra;
        }
    }
  if (padding >= 1)
    x = CLAMP (x, 0, n - 1);
  return x;
}

/* grid_sampler(input [N, C, H, W], grid [N, Ho, Wo, 2] of (x, y),
 * interpolation_mode 0 bilinear / 1 nearest, padding_mode 0 zeros /
 * 1 border / 2 reflection, align_corners) → [N, C, Ho, Wo] */
static gboolean
kernel_grid_sampler (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[5];
  graft_aten_args (ctx, NULL, 5, args);
  NEED (x, 0, FALSE);
  NEED (grid, 1, FALSE);
  gint64 mode = graft_arg_int (&args[2], 0), padding = graft_arg_int (&args[3], 0);
  gboolean align_corners = graft_arg_int (&args[4], 0) != 0;
  if (x->rank != 4)
    return graft_kernel_unsupported (error, "grid_sampler on a %d-D input (only 2-D images, 4-D inputs)", x->rank);
  if (mode != 0 && mode != 1)
    return graft_kernel_unsupported (error, "grid_sampler with interpolation mode %" G_GINT64_FORMAT
                                     " (bilinear and nearest are)", mode);
  if (padding < 0 || padding > 2)
    return graft_kernel_fail (error, "grid_sampler: unknown padding mode %" G_GINT64_FORMAT, padding);
  gint64 N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
  if (grid->rank != 4 || grid->dims[0] != N || grid->dims[3] != 2)
    return graft_kernel_fail (error, "grid_sampler: the grid must be [%" G_GINT64_FORMAT ", H, W, 2]", N);
  gint64 Ho = grid->dims[1], Wo = grid->dims[2];
  gint64 dims[4] = { N, C, Ho, Wo };
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_FLOAT32, 4, dims, error);
  if (y == NULL)
    return FALSE;
  for (gint64 n = 0; n < N; n++)
    for (gint64 p = 0; p < Ho * Wo; p++)
      {
        const float *g = graft_cf32 (grid) + (n * Ho * Wo + p) * 2;
        double sx = grid_source (g[0], W, align_corners, padding), sy = grid_source (g[1], H, align_corners, padding);
        gint64 at[4];
        float weight[4];
        int taps;
        if (mode == 1)
          {
            at[0] = (gint64) nearbyint (sy) * W + (gint64) nearbyint (sx);
            gboolean inside = nearbyint (sx) >= 0 && nearbyint (sx) < W && nearbyint (sy) >= 0 && nearbyint (sy) < H;
            weight[0] = inside ? 1 : 0;
            at[0] = inside ? at[0] : 0;
            taps = 1;
          }
        else
          {
            double x0 = floor (sx), y0 = floor (sy);
            double fx = sx - x0, fy = sy - y0;
            taps = 4;
            for (int t = 0; t < 4; t++)
              {
                gint64 xi = (gint64) x0 + (t & 1), yi = (gint64) y0 + (t >> 1);
                gboolean inside = xi >= 0 && xi < W && yi >= 0 && yi < H;
                weight[t] = inside ? (float) (((t & 1) ? fx : 1 - fx) * ((t >> 1) ? fy : 1 - fy)) : 0;
                at[t] = inside ? yi * W + xi : 0;
              }
          }
        for (gint64 c = 0; c < C; c++)
          {
            const float *plane = graft_cf32 (x) + (n * C + c) * H * W;
            float v = 0;
            for (int t = 0; t < taps; t++)
              v += weight[t] ? plane[at[t]] * weight[t] : 0;
            graft_f32 (y)[(n * C + c) * Ho * Wo + p] = v;
          }
      }
  return TRUE;
}

/* _weight_norm(v, g, dim=0): g · v / ‖v‖, the norm over every dim but dim
 * (over all of v when dim is -1) */
static gboolean
kernel_weight_norm (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[3];
  graft_aten_args (ctx, NULL, 3, args);
  NEED (v, 0, FALSE);
  NEED (g, 1, FALSE);
  gint64 dim = graft_arg_int (&args[2], 0);
  gboolean whole = dim == -1 || v->rank == 0;
  if (!whole && !graft_normalize_axis (&dim, v->rank, error))
    return FALSE;
  gint64 outer = whole ? 1 : graft_dims_product (v->dims, 0, dim), size = whole ? 1 : v->dims[dim];
  gint64 inner = whole ? v->numel : graft_dims_product (v->dims, dim + 1, v->rank);
  if (g->numel != size)
    return graft_kernel_fail (error, "_weight_norm: g has %" G_GINT64_FORMAT " values, dim %" G_GINT64_FORMAT
                              " of v %" G_GINT64_FORMAT, g->numel, dim, size);
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_FLOAT32, v->rank, v->dims, error);
  if (y == NULL)
    return FALSE;
  const float *vd = graft_cf32 (v);
  for (gint64 k = 0; k < size; k++)
    {
      double squares = 0;
      for (gint64 o = 0; o < outer; o++)
        for (gint64 i = 0; i < inner; i++)
          squares += (double) vd[(o * size + k) * inner + i] * vd[(o * size + k) * inner + i];
      float factor = (float) (graft_cf32 (g)[k] / sqrt (squares));
      for (gint64 o = 0; o < outer; o++)
        for (gint64 i = 0; i < inner; i++)
          graft_f32 (y)[(o * size + k) * inner + i] = vd[(o * size + k) * inner + i] * factor;
    }
  return TRUE;
}

/* ---- einsum ---- */

/* einsum(equation, tensors, path=None): ONNX's Einsum (einsum.c) over
 * the operands as float32, whose '...' broadcasts as torch's does. */
static gboolean
kernel_einsum (GraftKernelContext *ctx, GError **error)
{
  GraftAtenArg args[2];
  graft_aten_args (ctx, NULL, 2, args);
  g_autoptr(GraftRtTensor) equation = graft_arg_value (&args[0], error);
  if (equation == NULL)
    return FALSE;
  GraftRtTensor *list = args[1].value;
  if (equation->dtype != GRAFT_DTYPE_STRING || equation->numel != 1 || list == NULL ||
      list->kind != GRAFT_RT_SEQUENCE || list->items->len == 0)
    return graft_kernel_fail (error, "einsum needs an equation and a list of tensors");
  g_autoptr(GPtrArray) operands = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_rt_tensor_unref);
  for (guint k = 0; k < list->items->len; k++)
    {
      GraftRtTensor *t = list->items->pdata[k];
      if (t->kind != GRAFT_RT_TENSOR)
        return graft_kernel_fail (error, "einsum operand %u is not a tensor", k);
      GraftRtTensor *f = graft_aten_as_dtype (t, GRAFT_DTYPE_FLOAT32, error);
      if (f == NULL)
        return FALSE;
      g_ptr_array_add (operands, f);
    }
  return graft_einsum (ctx, ((char **) equation->data)[0], (GraftRtTensor *const *) operands->pdata, operands->len,
                       error);
}

#define OP(name, kernel) { "aten::" name, 0, 0, NULL, kernel, GRAFT_OP_HALF_AS_FLOAT }

const GraftOpSchema graft_ops_aten_nn[] = {
  OP ("_convolution", kernel_conv), OP ("conv1d", kernel_conv), OP ("conv2d", kernel_conv),
  OP ("_convolution_mode", kernel_conv),
  OP ("conv_transpose1d", kernel_conv_transpose), OP ("conv_transpose2d", kernel_conv_transpose),
  OP ("conv_transpose3d", kernel_conv_transpose),
  OP ("conv3d", kernel_conv),
  OP ("layer_norm", kernel_layer_norm),
  OP ("avg_pool2d", kernel_pool),
  OP ("lstm", kernel_rnn), OP ("gru", kernel_rnn),
  OP ("_native_multi_head_attention", kernel_native_mha),
  OP ("_transformer_encoder_layer_fwd", kernel_encoder_layer),
  OP ("_nested_tensor_from_mask", kernel_nested_from_mask),
  OP ("_nested_tensor_from_mask_left_aligned", kernel_nested_from_mask),
  OP ("to_padded_tensor", kernel_to_padded),
  OP ("baddbmm", kernel_baddbmm),
  OP ("scaled_dot_product_attention", kernel_sdpa),
  OP ("embedding", kernel_embedding),
  OP ("upsample_nearest2d", kernel_upsample), OP ("upsample_bilinear2d", kernel_upsample),
  OP ("upsample_nearest1d", kernel_upsample), OP ("upsample_linear1d", kernel_upsample),
  OP ("group_norm", kernel_group_norm), OP ("_weight_norm", kernel_weight_norm),
  OP ("instance_norm", kernel_instance_norm), OP ("grid_sampler", kernel_grid_sampler),
  OP ("einsum", kernel_einsum),
  { NULL }
};
