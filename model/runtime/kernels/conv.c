/* Convolutions: Conv (im2col + SGEMM, 1×1 as plain GEMM, depthwise direct),
 * ConvTranspose (GEMM + col2im), ConvInteger, QLinearConv (kernels in qlinear.c), Col2Im,
 * DeformConv, and the shared window geometry that pooling uses too.
 * Computation is in float32 (Col2Im, DeformConv: summed in double). */
#include <cblas.h>
#include <math.h>
#include <string.h>
#include "runtime/kernels/conv-3d.h"
#include "runtime/kernels/conv-depthwise.h"
#include "runtime/kernels/conv-winograd.h"
#include "runtime/kernels/conv-gemm.h"
#include "runtime/kernels/conv-small.h"
#include "runtime/kernels/conv-grouped.h"
#include "runtime/kernels/conv-stem.h"
#include "runtime/kernels/kernel-util.h"
#include "runtime/kernels/qlinear.h"
#include "runtime/kernels/vector-math.h"
#include "runtime/fusion-patterns.h"
#include "runtime/kernels/simd-target.h"
#include "runtime/kernels/window.h"

gboolean
graft_window_geometry (GraftNode *node, int n_spatial, const gint64 *in, const gint64 *kernel, gboolean transpose,
                       gboolean ceil_mode, GraftWindow *w, GError **error)
{
  guint n;
  const gint64 *v;
  const char *auto_pad = graft_node_attr_string (node, "auto_pad", "NOTSET");

  if (n_spatial > GRAFT_WINDOW_MAX_DIMS || n_spatial < 0)
    return graft_kernel_unsupported (error, "%d spatial dimensions are not supported", n_spatial);
  w->n = n_spatial;
  for (int i = 0; i < n_spatial; i++)
    {
      w->kernel[i] = kernel[i];
      w->stride[i] = 1;
      w->dilation[i] = 1;
      w->pad_begin[i] = w->pad_end[i] = 0;
      w->in[i] = in[i];
      w->output_padding[i] = 0;
    }
  if ((v = graft_node_attr_ints (node, "strides", &n)) && (int) n == n_spatial)
    memcpy (w->stride, v, n * sizeof (gint64));
  if ((v = graft_node_attr_ints (node, "dilations", &n)) && (int) n == n_spatial)
    memcpy (w->dilation, v, n * sizeof (gint64));
  if ((v = graft_node_attr_ints (node, "pads", &n)) && (int) n == 2 * n_spatial)
    for (int i = 0; i < n_spatial; i++)
      {
        w->pad_begin[i] = v[i];
        w->pad_end[i] = v[i + n_spatial];
      }
  if ((v = graft_node_attr_ints (node, "output_padding", &n)) && (int) n == n_spatial)
    memcpy (w->output_padding, v, n * sizeof (gint64));
  for (int i = 0; i < n_spatial; i++)
    if (w->stride[i] <= 0 || w->dilation[i] <= 0 || w->kernel[i] < 0 || w->pad_begin[i] < 0 || w->pad_end[i] < 0)
      return graft_kernel_fail (error, "invalid strides, dilations, pads or kernel size");

  gboolean same_upper = strcmp (auto_pad, "SAME_UPPER") == 0, same_lower = strcmp (auto_pad, "SAME_LOWER") == 0;
  gboolean valid = strcmp (auto_pad, "VALID") == 0;

  for (int i = 0; i < n_spatial; i++)
    {
      gint64 span = (w->kernel[i] - 1) * w->dilation[i] + 1;
      if (transpose)
        {
          const gint64 *os = graft_node_attr_ints (node, "output_shape", &n);
          gint64 out;
          if (os && (int) n >= n_spatial)
            {
              out = os[n - n_spatial + i];
              gint64 total = w->stride[i] * (in[i] - 1) + w->output_padding[i] + span - out;
              if (same_upper || same_lower || !graft_node_has_attr (node, "pads"))
                {
                  total = MAX (total, 0);
                  if (same_lower)
                    w->pad_begin[i] = total - total / 2, w->pad_end[i] = total / 2;
                  else
                    w->pad_begin[i] = total / 2, w->pad_end[i] = total - total / 2;
                }
            }
          else if (same_upper || same_lower)
            {
              out = in[i] * w->stride[i];
              gint64 total = MAX (w->stride[i] * (in[i] - 1) + w->output_padding[i] + span - out, 0);
              if (same_upper)
                w->pad_begin[i] = total / 2, w->pad_end[i] = total - total / 2;
              else
                w->pad_begin[i] = total - total / 2, w->pad_end[i] = total / 2;
            }
          else
            out = w->stride[i] * (in[i] - 1) + w->output_padding[i] + span - w->pad_begin[i] - w->pad_end[i];
          w->out[i] = out;
          continue;
        }
      if (same_upper || same_lower)
        {
          gint64 out = (in[i] + w->stride[i] - 1) / w->stride[i];
          gint64 total = MAX ((out - 1) * w->stride[i] + span - in[i], 0);
          w->pad_begin[i] = same_upper ? total / 2 : total - total / 2;
          w->pad_end[i] = total - w->pad_begin[i];
          w->out[i] = out;
        }
      else
        {
          if (valid)
            w->pad_begin[i] = w->pad_end[i] = 0;
          gint64 avail = in[i] + w->pad_begin[i] + w->pad_end[i] - span;
          if (avail < 0)
            return graft_kernel_fail (error, "the kernel (%" G_GINT64_FORMAT ") is larger than the padded input (%" G_GINT64_FORMAT ")",
                                      span, in[i] + w->pad_begin[i] + w->pad_end[i]);
          gint64 out = ceil_mode ? (avail + w->stride[i] - 1) / w->stride[i] + 1 : avail / w->stride[i] + 1;
          /* the last window must start inside the input or the left padding */
          if (ceil_mode && (out - 1) * w->stride[i] >= in[i] + w->pad_begin[i])
            out--;
          w->out[i] = out;
        }
    }
  return TRUE;
}

static gboolean
kernel_dims (GraftNode *node, GraftInferValue *weight, int n_spatial, gint64 *kernel, int weight_offset)
{
  guint n;
  const gint64 *ks = graft_node_attr_ints (node, "kernel_shape", &n);
  if (ks && (int) n == n_spatial)
    {
      memcpy (kernel, ks, n * sizeof (gint64));
      return TRUE;
    }
  if (weight == NULL || weight->shape.rank != n_spatial + weight_offset)
    return FALSE;
  for (int i = 0; i < n_spatial; i++)
    {
      GraftDim d = weight->shape.dims[i + weight_offset];
      if (d.kind != GRAFT_DIM_FIXED)
        return FALSE;
      kernel[i] = d.value;
    }
  return TRUE;
}

/* Conv-like inference: X [N, C, spatial...], W [M, C/g, k...]. */
static gboolean
infer_conv_like (GraftInferContext *ctx, guint x_index, guint w_index, GraftDType dtype, gboolean transpose, GError **error)
{
  GraftInferValue *x = graft_infer_input (ctx, x_index), *wt = graft_infer_input (ctx, w_index);
  if (x->shape.rank < 3)
    {
      if (x->shape.rank >= 0)
        return graft_kernel_fail (error, "input must have rank >= 3, it has rank %d", x->shape.rank);
      graft_infer_set_output_unknown (ctx, 0, dtype, -1);
      return TRUE;
    }
  int ns = x->shape.rank - 2;
  GraftShape out;
  graft_shape_init (&out, x->shape.rank);
  out.dims[0] = x->shape.dims[0];
  gint64 group = graft_node_attr_int (ctx->node, "group", 1);
  if (wt && wt->shape.rank == x->shape.rank)
    {
      GraftDim m = wt->shape.dims[transpose ? 1 : 0];
      if (transpose && m.kind == GRAFT_DIM_FIXED)
        m.value *= group;
      out.dims[1] = m;
      GraftDim wc = wt->shape.dims[transpose ? 0 : 1];
      GraftDim xc = x->shape.dims[1];
      if (!transpose && wc.kind == GRAFT_DIM_FIXED && xc.kind == GRAFT_DIM_FIXED && wc.value * group != xc.value)
        {
          graft_shape_clear (&out);
          return graft_kernel_fail (error, "input has %" G_GINT64_FORMAT " channels, weights expect %" G_GINT64_FORMAT " × group %" G_GINT64_FORMAT,
                                    xc.value, wc.value, group);
        }
    }
  gint64 in[GRAFT_WINDOW_MAX_DIMS], kernel[GRAFT_WINDOW_MAX_DIMS];
  gboolean fixed = ns <= GRAFT_WINDOW_MAX_DIMS && kernel_dims (ctx->node, wt, ns, kernel, 2);
  for (int i = 0; fixed && i < ns; i++)
    {
      if (x->shape.dims[i + 2].kind != GRAFT_DIM_FIXED)
        fixed = FALSE;
      else
        in[i] = x->shape.dims[i + 2].value;
    }
  if (fixed)
    {
      GraftWindow w;
      if (!graft_window_geometry (ctx->node, ns, in, kernel, transpose, FALSE, &w, error))
        {
          graft_shape_clear (&out);
          return FALSE;
        }
      for (int i = 0; i < ns; i++)
        out.dims[i + 2] = graft_dim_fixed (w.out[i]);
    }
  graft_infer_set_output (ctx, 0, dtype, &out);
  graft_shape_clear (&out);
  return TRUE;
}

static gboolean
infer_conv (GraftInferContext *ctx, GError **error)
{
  return infer_conv_like (ctx, 0, 1, graft_infer_input (ctx, 0)->dtype, FALSE, error);
}

static gboolean
infer_conv_transpose (GraftInferContext *ctx, GError **error)
{
  return infer_conv_like (ctx, 0, 1, graft_infer_input (ctx, 0)->dtype, TRUE, error);
}

static gboolean
infer_conv_integer (GraftInferContext *ctx, GError **error)
{
  return infer_conv_like (ctx, 0, 1, GRAFT_DTYPE_INT32, FALSE, error);
}

/* ConvInteger's shape in float32; the kernel declines the addends that
 * would broadcast it to another */
static gboolean
infer_conv_integer_to_float (GraftInferContext *ctx, GError **error)
{
  return infer_conv_like (ctx, 0, 1, GRAFT_DTYPE_FLOAT32, FALSE, error);
}

static gboolean
infer_qlinear_conv (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *zp = graft_infer_input (ctx, 7);
  return infer_conv_like (ctx, 0, 3, zp ? zp->dtype : graft_infer_input (ctx, 0)->dtype, FALSE, error);
}

/* ---- float32 convolution core ---- */

typedef struct {
  const float *x;         /* one image, one group: [C/g, spatial] */
  float *col;             /* [C/g * K, out_spatial] */
  const GraftWindow *w;
  gint64 channels;
  gint64 in_size, out_size, k_size;
  gint64 row_stride;      /* distance between col rows: out_size, or N·out_size when images share a GEMM */
} Im2ColJob;

/* r[0..n) = the input row xr read at o·s + shift for o in [lo, hi), the
 * outputs whose tap reads inside it (graft_window_inside), 0 elsewhere. */
static inline void
im2col_span (float *r, const float *xr, gint64 lo, gint64 hi, gint64 n, gint64 s, gint64 shift)
{
  memset (r, 0, lo * sizeof (float));
  if (s == 1)
    memcpy (r + lo, xr + lo + shift, (hi - lo) * sizeof (float));
  else
    for (gint64 o = lo; o < hi; o++)
      r[o] = xr[o * s + shift];
  memset (r + hi, 0, (n - hi) * sizeof (float));
}

/* The kernel row ki of channel c (2-D windows): col rows (c, ki, 0..KW). */
static void
im2col_row2d (gint64 index, gpointer data)
{
  Im2ColJob *job = data;
  const GraftWindow *w = job->w;
  gint64 KH = w->kernel[0], KW = w->kernel[1], c = index / KH, ki = index % KH;
  gint64 H = w->in[0], W = w->in[1], OH = w->out[0], OW = w->out[1], sw = w->stride[1];
  const float *x = job->x + c * job->in_size;
  float *col = job->col + (c * job->k_size + ki * KW) * job->row_stride;

  for (gint64 kj = 0; kj < KW; kj++)
    {
      float *row = col + kj * job->row_stride;
      gint64 dh = ki * w->dilation[0] - w->pad_begin[0], dw = kj * w->dilation[1] - w->pad_begin[1];
      gint64 lo, hi;
      graft_window_inside (w, 1, kj, &lo, &hi);
      for (gint64 oh = 0; oh < OH; oh++)
        {
          gint64 ih = oh * w->stride[0] + dh;
          float *r = row + oh * OW;
          if (ih < 0 || ih >= H)
            {
              memset (r, 0, OW * sizeof (float));
              continue;
            }
          im2col_span (r, x + ih * W, lo, hi, OW, sw, dw);
        }
    }
}

/* The kernel tap k of channel c (1-D windows: wav2vec2's feature
 * extractor and grouped positional convolution): col row (c, k). */
static void
im2col_row1d (gint64 index, gpointer data)
{
  Im2ColJob *job = data;
  const GraftWindow *w = job->w;
  gint64 K = w->kernel[0], c = index / K, k = index % K, s = w->stride[0];
  gint64 d = k * w->dilation[0] - w->pad_begin[0], lo, hi;
  const float *x = job->x + c * job->in_size;
  float *row = job->col + (c * job->k_size + k) * job->row_stride;

  graft_window_inside (w, 0, k, &lo, &hi);
  im2col_span (row, x, lo, hi, job->out_size, s, d);
}

/* Any number of spatial dims, one channel per index. */
static void
im2col_channel (gint64 c, gpointer data)
{
  Im2ColJob *job = data;
  const GraftWindow *w = job->w;
  const float *x = job->x + c * job->in_size;
  float *col = job->col + c * job->k_size * job->row_stride;

  gint64 kidx[GRAFT_WINDOW_MAX_DIMS] = { 0 };
  for (gint64 k = 0; k < job->k_size; k++)
    {
      gint64 oidx[GRAFT_WINDOW_MAX_DIMS] = { 0 };
      float *row = col + k * job->row_stride;
      for (gint64 o = 0; o < job->out_size; o++)
        {
          gint64 off = 0;
          gboolean inside = TRUE;
          for (int d = 0; d < w->n; d++)
            {
              gint64 i = oidx[d] * w->stride[d] + kidx[d] * w->dilation[d] - w->pad_begin[d];
              if (i < 0 || i >= w->in[d])
                {
                  inside = FALSE;
                  break;
                }
              off = off * w->in[d] + i;
            }
          row[o] = inside ? x[off] : 0;
          graft_index_next (oidx, w->out, w->n);
        }
      graft_index_next (kidx, w->kernel, w->n);
    }
}

static void
im2col (GraftKernelContext *ctx, Im2ColJob *job)
{
  if (job->w->n == 2)
    graft_kernel_parallel_for (ctx, job->channels * job->w->kernel[0], im2col_row2d, job);
  else if (job->w->n == 1)
    graft_kernel_parallel_for (ctx, job->channels * job->w->kernel[0], im2col_row1d, job);
  else
    graft_kernel_parallel_for (ctx, job->channels, im2col_channel, job);
}

/* ---- depthwise: padded phase planes + register-accumulated taps ---- */

typedef float GraftV8f __attribute__ ((vector_size (32)));

/* y[0..n) = b + Σ_t kv[t]·src[t][0..n), 8 outputs per vector with all
 * taps accumulated in registers (one store per output instead of one
 * load/store per tap). src rows may be read up to 7 floats past n. */
typedef gint32 GraftV8i __attribute__ ((vector_size (32)));

/* v = min (max (v, lo), hi) lane-wise, NaN kept (GCC's C has no vector ?:). */
#define DEPTHWISE_CLAMP(v, vlo, vhi) \
  do { \
    GraftV8i below_ = (v) < (vlo), above_; \
    (v) = (GraftV8f) (((GraftV8i) (vlo) & below_) | ((GraftV8i) (v) & ~below_)); \
    above_ = (v) > (vhi); \
    (v) = (GraftV8f) (((GraftV8i) (vhi) & above_) | ((GraftV8i) (v) & ~above_)); \
  } while (0)

/* y[0..n) = clamp (b + Σ_t kv[t]·src[t][0..n)), 8 outputs per vector with
 * all taps accumulated in registers (one store per output instead of a
 * load and a store per tap). src rows may be read up to 7 floats past n. */
static inline __attribute__ ((always_inline)) void
depthwise_row_body (float *y, gint64 n, const float *const *src, const float *kv, int taps, float b,
                    float lo, float hi)
{
  GraftV8f vlo = { lo, lo, lo, lo, lo, lo, lo, lo }, vhi = { hi, hi, hi, hi, hi, hi, hi, hi };
  gint64 ow = 0;
  for (; ow + 16 <= n; ow += 16)
    {
      GraftV8f a0 = { b, b, b, b, b, b, b, b }, a1 = a0;
      for (int t = 0; t < taps; t++)
        {
          GraftV8f v0, v1;
          memcpy (&v0, src[t] + ow, sizeof v0);
          memcpy (&v1, src[t] + ow + 8, sizeof v1);
          a0 += kv[t] * v0;
          a1 += kv[t] * v1;
        }
      DEPTHWISE_CLAMP (a0, vlo, vhi);
      DEPTHWISE_CLAMP (a1, vlo, vhi);
      memcpy (y + ow, &a0, sizeof a0);
      memcpy (y + ow + 8, &a1, sizeof a1);
    }
  for (; ow < n; ow += 8)
    {
      GraftV8f a0 = { b, b, b, b, b, b, b, b };
      for (int t = 0; t < taps; t++)
        {
          GraftV8f v0;
          memcpy (&v0, src[t] + ow, sizeof v0);
          a0 += kv[t] * v0;
        }
      DEPTHWISE_CLAMP (a0, vlo, vhi);
      memcpy (y + ow, &a0, MIN (n - ow, 8) * sizeof (float));
    }
}

static void
depthwise_row_generic (float *y, gint64 n, const float *const *src, const float *kv, int taps, float b,
                       float lo, float hi)
{
  depthwise_row_body (y, n, src, kv, taps, b, lo, hi);
}

#ifdef GRAFT_HAVE_X86_SIMD
static GRAFT_TARGET_AVX2_FMA void
depthwise_row_avx2 (float *y, gint64 n, const float *const *src, const float *kv, int taps, float b,
                    float lo, float hi)
{
  depthwise_row_body (y, n, src, kv, taps, b, lo, hi);
}
#else
#define depthwise_row_avx2 depthwise_row_generic
#endif

typedef void (*DepthwiseRowFunc) (float *, gint64, const float *const *, const float *, int, float, float, float);

static gboolean
depthwise_use_avx2 (void)
{
  return graft_kernel_table ()->avx2;
}

#define DEPTHWISE_MAX_TAPS 64

typedef struct {
  const float *x, *weight, *bias;
  float *y;
  const GraftWindow *w;
  gint64 C;
  float lo, hi;           /* ±INFINITY without a fused clamp */
  DepthwiseRowFunc row;
} DepthwiseJob;

/* One (image, channel) plane. The plane is first copied with its zero
 * padding into sw "phase" planes (phase p holds padded columns p, p+sw,
 * p+2sw, …), so that every tap of a strided kernel reads a contiguous run
 * and the padding needs no tests in the inner loop. */
static void
depthwise_channel (gint64 index, gpointer data)
{
  DepthwiseJob *job = data;
  const GraftWindow *w = job->w;
  gint64 c = index % job->C;
  gint64 H = w->in[0], W = w->in[1], OH = w->out[0], OW = w->out[1];
  gint64 KH = w->kernel[0], KW = w->kernel[1];
  gint64 sh = w->stride[0], sw = w->stride[1], dh = w->dilation[0], dw = w->dilation[1];
  gint64 pt = w->pad_begin[0], pl = w->pad_begin[1];
  gint64 Hp = MAX (H + pt + w->pad_end[0], (OH - 1) * sh + (KH - 1) * dh + 1);
  gint64 Wp = MAX (W + pl + w->pad_end[1], (OW - 1) * sw + (KW - 1) * dw + 1);
  gint64 Wq = (Wp + sw - 1) / sw + 8;   /* phase row stride, with room for a last partial vector */
  const float *x = job->x + index * H * W;
  const float *k = job->weight + c * KH * KW;
  float *y = job->y + index * OH * OW;
  float b = job->bias ? job->bias[c] : 0;
  g_autofree float *phases = g_new (float, sw * Hp * Wq + Wp);
  float *tmp = phases + sw * Hp * Wq;

  for (gint64 r = 0; r < Hp; r++)
    {
      gint64 ih = r - pt;
      if (ih < 0 || ih >= H)
        {
          for (gint64 p = 0; p < sw; p++)
            memset (phases + (p * Hp + r) * Wq, 0, Wq * sizeof (float));
          continue;
        }
      float *dst = sw == 1 ? phases + r * Wq : tmp;
      memset (dst, 0, pl * sizeof (float));
      memcpy (dst + pl, x + ih * W, W * sizeof (float));
      memset (dst + pl + W, 0, ((sw == 1 ? Wq : Wp) - pl - W) * sizeof (float));
      if (sw == 1)
        continue;
      if (sw == 2)
        {
          float *even = phases + r * Wq, *odd = phases + (Hp + r) * Wq;
          gint64 half = Wp / 2;
          graft_conv_split_pairs (tmp, half, even, odd);
          even[half] = Wp % 2 ? tmp[Wp - 1] : 0;
          memset (even + half + 1, 0, (Wq - half - 1) * sizeof (float));
          memset (odd + half, 0, (Wq - half) * sizeof (float));
          continue;
        }
      for (gint64 p = 0; p < sw; p++)
        {
          float *pr = phases + (p * Hp + r) * Wq;
          gint64 j = 0;
          for (gint64 col = p; col < Wp; col += sw)
            pr[j++] = tmp[col];
          memset (pr + j, 0, (Wq - j) * sizeof (float));
        }
    }

  const float *src[DEPTHWISE_MAX_TAPS];
  float kv[DEPTHWISE_MAX_TAPS];
  int taps = 0;
  for (gint64 ki = 0; ki < KH; ki++)
    for (gint64 kj = 0; kj < KW; kj++)
      {
        gint64 col = kj * dw;
        src[taps] = phases + ((col % sw) * Hp + ki * dh) * Wq + col / sw;
        kv[taps++] = k[ki * KW + kj];
      }
  const float *row_src[DEPTHWISE_MAX_TAPS];
  for (gint64 oh = 0; oh < OH; oh++)
    {
      float *yr = y + oh * OW;
      for (int t = 0; t < taps; t++)
        row_src[t] = src[t] + oh * sh * Wq;
      job->row (yr, OW, row_src, kv, taps, b, job->lo, job->hi);
    }
}

/* ---- blocked GEMM with the bias/clamp epilogue on each block ---- */

/* C [M, N] = A [M, K] · B [K, N] in blocks of about 128 KB of C; right after
 * each block's sgemm, while it is in cache, the bias and clamp are applied,
 * either in place or while copying it to y [images, y_M, image] when the
 * columns of C hold several images side by side. Blocks are spread over
 * the worker pool (BLAS itself is single-threaded). */
typedef struct {
  const float *a, *b;
  float *c;
  gint64 M, N, K;
  gint64 col_step, row_step, col_blocks;
  float *y;               /* NULL: in place in c */
  gint64 y_M, image;
  const float *bias;
  gboolean clamp;
  float lo, hi;
} ConvGemmJob;

static inline void
bias_clamp_copy (float *dst, const float *src, gint64 n, float b, gboolean clamp, float lo, float hi)
{
  GraftV4f vb = { b, b, b, b }, vlo = { lo, lo, lo, lo }, vhi = { hi, hi, hi, hi };
  gint64 i = 0;
  for (; i + 4 <= n; i += 4)
    {
      GraftV4f v;
      memcpy (&v, src + i, sizeof v);
      v += vb;
      if (clamp)
        {
          v = graft_v4f_select (v < vlo, vlo, v);
          v = graft_v4f_select (v > vhi, vhi, v);
        }
      memcpy (dst + i, &v, sizeof v);
    }
  for (; i < n; i++)
    {
      float v = src[i] + b;
      if (clamp)
        {
          v = v < lo ? lo : v;
          v = v > hi ? hi : v;
        }
      dst[i] = v;
    }
}

static void
conv_gemm_block (gint64 index, gpointer data)
{
  const ConvGemmJob *job = data;
  gint64 r0 = index / job->col_blocks * job->row_step, c0 = index % job->col_blocks * job->col_step;
  gint64 rows = MIN (job->row_step, job->M - r0), cols = MIN (job->col_step, job->N - c0);
  float *c = job->c + r0 * job->N + c0;
  cblas_sgemm (CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, cols, job->K, 1.0f, job->a + r0 * job->K, job->K,
               job->b + c0, job->N, 0.0f, c, job->N);
  if (job->y == NULL && job->bias == NULL && !job->clamp)
    return;
  for (gint64 m = 0; m < rows; m++)
    {
      float b = job->bias ? job->bias[r0 + m] : 0;
      const float *src = c + m * job->N;
      if (job->y == NULL)
        {
          bias_clamp_copy ((float *) src, src, cols, b, job->clamp, job->lo, job->hi);
          continue;
        }
      /* the block's columns, image by image */
      for (gint64 col = c0; col < c0 + cols;)
        {
          gint64 img = col / job->image, p = col % job->image, len = MIN (job->image - p, c0 + cols - col);
          bias_clamp_copy (job->y + (img * job->y_M + r0 + m) * job->image + p, src + (col - c0), len, b,
                           job->clamp, job->lo, job->hi);
          col += len;
        }
    }
}

static void
conv_gemm (GraftKernelContext *ctx, ConvGemmJob *job)
{
  gint64 threads = graft_kernel_get_n_threads (ctx);
  gint64 M = job->M, N = job->N;
  job->row_step = MAX (M, 1);
  job->col_step = MAX ((32768 / MAX (M, 1) + 15) / 16 * 16, 128);
  job->col_blocks = (N + job->col_step - 1) / job->col_step;
  if (threads > 1 && M * N * job->K >= (1 << 20))
    {
      /* as many column blocks for every thread; row blocks instead when
       * A is the larger operand (every column block packs all of A, every
       * row block all of B) or C is narrow */
      gint64 blocks = (job->col_blocks + threads - 1) / threads * threads;
      job->col_step = ((N + blocks - 1) / blocks + 15) / 16 * 16;
      if ((job->col_step < 32 || M > N) && M >= 16 * threads)
        {
          job->col_step = MAX (N, 1);
          job->row_step = ((M + threads - 1) / threads + 7) / 8 * 8;
        }
      job->col_blocks = (N + job->col_step - 1) / job->col_step;
    }
  gint64 row_blocks = (M + job->row_step - 1) / job->row_step;
  graft_kernel_parallel_for (ctx, row_blocks * job->col_blocks, conv_gemm_block, job);
}

static gboolean
takes_depthwise (gint64 C, gint64 M, gint64 group, const GraftWindow *w)
{
  return group == C && M == C &&
         (graft_conv_depthwise_supports (w) || (w->n == 2 && w->kernel[0] * w->kernel[1] <= DEPTHWISE_MAX_TAPS));
}

/* A 1×1 window of unit stride without padding: its im2col matrix is x
 * itself, read in place. */
static gboolean
reads_input_in_place (const GraftWindow *w)
{
  for (int d = 0; d < w->n; d++)
    if (w->kernel[d] != 1 || w->stride[d] != 1 || w->pad_begin[d] != 0 || w->pad_end[d] != 0)
      return FALSE;
  return TRUE;
}

/* y = clamp (conv (x) + bias [+ residual]); residual only where the packed
 * GEMM takes it (see conv2d_f32). */
static gboolean
conv2d_compute (GraftKernelContext *ctx, const float *x, const float *weight, const float *bias, float *y,
                gint64 N, gint64 C, gint64 M, gint64 group, const GraftWindow *w, const float *residual,
                gboolean clamp, float lo, float hi, GError **error)
{
  gint64 in_size = 1, out_size = 1, k_size = 1;
  for (int d = 0; d < w->n; d++)
    {
      in_size *= w->in[d];
      out_size *= w->out[d];
      k_size *= w->kernel[d];
    }
  gint64 Cg = C / group, Mg = M / group;

  /* the paths other than the Winograd and packed GEMM ones read the
   * weights' values themselves: a folded weight is computed again, a
   * weight the engine gave back read in again from the model file (which
   * fails when the file changed) */
  if ((takes_depthwise (C, M, group, w) ||
       (!graft_conv_winograd_pays (w, N, C, M, group) && !graft_conv_gemm_supports (w))) &&
      !graft_kernel_need_values (ctx, weight, error))
    return FALSE;
  if (group == C && M == C && graft_conv_depthwise_supports (w))
    {
      graft_conv_depthwise (ctx, x, weight, bias, y, N, C, w, lo, hi);
      return TRUE;
    }
  if (group == C && M == C && w->n == 2 && w->kernel[0] * w->kernel[1] <= DEPTHWISE_MAX_TAPS)
    {
      gboolean avx2 = depthwise_use_avx2 ();
      DepthwiseJob job = { x, weight, bias, y, w, C, lo, hi, avx2 ? depthwise_row_avx2 : depthwise_row_generic };
      graft_kernel_parallel_for (ctx, N * C, depthwise_channel, &job);
      return TRUE;
    }

  if (graft_conv_winograd_pays (w, N, C, M, group))
    {
      g_autoptr(GraftWinogradFilter) owned = NULL;
      const GraftWinogradFilter *filter = graft_winograd_filter_for (ctx, weight, M, C, &owned);
      if (filter == NULL)
        return graft_kernel_need_values (ctx, weight, error) &&
               graft_kernel_fail (error, "out of memory for the Winograd filter (%" G_GINT64_FORMAT " × %"
                                  G_GINT64_FORMAT ")", M, C);
      GraftConvGemmArgs args = { x, y, bias, residual, N, C, M, group, w, clamp, lo, hi };
      return graft_conv_winograd (ctx, filter, &args, error);
    }

  if (graft_conv_gemm_supports (w))
    {
      g_autoptr(GraftPackedFilter) owned = NULL;
      const GraftPackedFilter *filter = graft_packed_filter_for (ctx, weight, group, Mg, Cg * k_size, &owned);
      if (filter == NULL)
        return graft_kernel_need_values (ctx, weight, error) &&
               graft_kernel_fail (error, "out of memory for the packed filter (%" G_GINT64_FORMAT " × %"
                                  G_GINT64_FORMAT ")", M, Cg * k_size);
      GraftConvGemmArgs args = { x, y, bias, residual, N, C, M, group, w, clamp, lo, hi };
      return graft_conv_gemm (ctx, filter, &args, error);
    }

  gboolean pointwise = reads_input_in_place (w);

  g_autoptr(GraftRtTensor) scratch = NULL;
  float *col = NULL;

  /* Small feature maps: all images in one GEMM (weights packed once,
   * a wider N for the BLAS kernel), each block scattered back to NCHW. */
  if (N > 1 && out_size <= 1024)
    {
      gint64 wide = N * out_size;
      scratch = graft_kernel_scratch (ctx, (gsize) Cg * k_size * wide * sizeof (float), error);
      g_autoptr(GraftRtTensor) ybuf = scratch ? graft_kernel_scratch (ctx, (gsize) Mg * wide * sizeof (float), error) : NULL;
      if (ybuf == NULL)
        return FALSE;
      col = scratch->data;
      float *yw = ybuf->data;
      for (gint64 g = 0; g < group; g++)
        {
          for (gint64 n = 0; n < N; n++)
            {
              Im2ColJob job = { x + (n * C + g * Cg) * in_size, col + n * out_size, w, Cg, in_size, out_size, k_size, wide };
              im2col (ctx, &job);
            }
          ConvGemmJob job = { weight + g * Mg * Cg * k_size, col, yw, Mg, wide, Cg * k_size, 0, 0, 0,
                              y + g * Mg * out_size, M, out_size, bias ? bias + g * Mg : NULL, clamp, lo, hi };
          conv_gemm (ctx, &job);
        }
      return TRUE;
    }

  if (!pointwise)
    {
      /* from the runtime's pool: a fresh multi-MB malloc per call costs page faults */
      gsize col_elems = (gsize) Cg * k_size * out_size;
      scratch = graft_kernel_scratch (ctx, col_elems * sizeof (float), error);
      if (scratch == NULL)
        return FALSE;
      col = scratch->data;
    }

  for (gint64 n = 0; n < N; n++)
    for (gint64 g = 0; g < group; g++)
      {
        const float *xg = x + (n * C + g * Cg) * in_size;
        const float *b = xg;
        if (!pointwise)
          {
            Im2ColJob job = { xg, col, w, Cg, in_size, out_size, k_size, out_size };
            im2col (ctx, &job);
            b = col;
          }
        ConvGemmJob job = { weight + g * Mg * Cg * k_size, b, y + (n * M + g * Mg) * out_size, Mg, out_size, Cg * k_size,
                            0, 0, 0, NULL, 0, 0, bias ? bias + g * Mg : NULL, clamp, lo, hi };
        conv_gemm (ctx, &job);
      }
  return TRUE;
}

/* x [N, C, in...], weight [M, C/g, k...], y [N, M, out...] (all float32),
 * residual NULL or [N, M, out...], added before the fused clamp. */
static gboolean
conv2d_f32 (GraftKernelContext *ctx, const float *x, const float *weight, const float *bias, float *y, gint64 N,
            gint64 C, gint64 M, gint64 group, const GraftWindow *w, const float *residual, GError **error)
{
  float lo = -INFINITY, hi = INFINITY;
  gboolean clamp = graft_kernel_get_fused_clamp (ctx, &lo, &hi);
  if (residual == NULL || (!takes_depthwise (C, M, group, w) &&
                           (graft_conv_gemm_supports (w) || graft_conv_winograd_pays (w, N, C, M, group))))
    return conv2d_compute (ctx, x, weight, bias, y, N, C, M, group, w, residual, clamp, lo, hi, error);

  /* the other paths add the residual and clamp in a pass of their own */
  if (!conv2d_compute (ctx, x, weight, bias, y, N, C, M, group, w, NULL, FALSE, -INFINITY, INFINITY, error))
    return FALSE;
  gint64 n = N * M;
  for (int d = 0; d < w->n; d++)
    n *= w->out[d];
  for (gint64 i = 0; i < n; i++)
    {
      float v = y[i] + residual[i];
      if (clamp)
        {
          v = v < lo ? lo : v;
          v = v > hi ? hi : v;
        }
      y[i] = v;
    }
  return TRUE;
}


static gboolean
window_from_tensors (GraftKernelContext *ctx, GraftRtTensor *x, GraftRtTensor *wt, gboolean transpose, GraftWindow *w,
                     GError **error)
{
  int ns = x->rank - 2;
  gint64 kernel[GRAFT_WINDOW_MAX_DIMS];
  if (ns < 1 || ns > GRAFT_WINDOW_MAX_DIMS || wt->rank != x->rank)
    return graft_kernel_fail (error, "input rank %d and weight rank %d do not fit", x->rank, wt->rank);
  for (int i = 0; i < ns; i++)
    kernel[i] = wt->dims[i + 2];
  return graft_window_geometry (ctx->node, ns, x->dims + 2, kernel, transpose, FALSE, w, error);
}

static GraftRtTensor *
as_f32 (GraftRtTensor *t, GraftRtTensor **owned, GError **error)
{
  *owned = NULL;
  if (t == NULL || t->dtype == GRAFT_DTYPE_FLOAT32)
    return t;
  *owned = graft_rt_tensor_cast (t, GRAFT_DTYPE_FLOAT32, error);
  return *owned;
}

gboolean
graft_window_taps_read (const GraftWindow *w, int d, gint64 *lo, gint64 *hi)
{
  *lo = -1;
  for (gint64 k = 0; k < w->kernel[d]; k++)
    {
      gint64 c0 = k * w->dilation[d] - w->pad_begin[d];
      gint64 first = c0 >= 0 ? 0 : (-c0 + w->stride[d] - 1) / w->stride[d];
      if (first < w->out[d] && first * w->stride[d] + c0 < w->in[d])
        {
          if (*lo < 0)
            *lo = k;
          *hi = k;
        }
    }
  return *lo >= 0;
}

gboolean
graft_window_trim (const GraftWindow *w, GraftWindow *trimmed, gint64 lo[2])
{
  gint64 hi[2];
  if (w->n != 2 || !graft_window_taps_read (w, 0, &lo[0], &hi[0]) || !graft_window_taps_read (w, 1, &lo[1], &hi[1]) ||
      (lo[0] == 0 && lo[1] == 0 && hi[0] == w->kernel[0] - 1 && hi[1] == w->kernel[1] - 1))
    return FALSE;
  *trimmed = *w;
  for (int d = 0; d < 2; d++)
    {
      trimmed->kernel[d] = hi[d] - lo[d] + 1;
      trimmed->pad_begin[d] = w->pad_begin[d] - lo[d] * w->dilation[d];
      trimmed->pad_end[d] = w->pad_end[d] - (w->kernel[d] - 1 - hi[d]) * w->dilation[d];
      /* the same coordinates for every output: a cut of the map itself is no padding left */
      if (trimmed->pad_begin[d] < 0 || trimmed->pad_end[d] < 0)
        return FALSE;
    }
  return TRUE;
}

static float *
trim_padding_taps (const GraftWindow *w, const float *weight, gint64 M, gint64 Cg, GraftWindow *trimmed)
{
  gint64 lo[2];
  if (!graft_window_trim (w, trimmed, lo))
    return NULL;
  gint64 kh = trimmed->kernel[0], kw = trimmed->kernel[1];
  float *kept = g_new (float, M * Cg * kh * kw);
  for (gint64 mc = 0; mc < M * Cg; mc++)
    for (gint64 i = 0; i < kh; i++)
      memcpy (kept + (mc * kh + i) * kw, weight + (mc * w->kernel[0] + lo[0] + i) * w->kernel[1] + lo[1],
              kw * sizeof (float));
  return kept;
}

/* A window's taps that read the map (trim_padding_taps), their weights
 * and, for the packed GEMM, their packed filter: kept on the step while
 * the weights are constant, so that a run neither copies the weights
 * nor packs them again. */
typedef struct {
  GraftWindow window, trimmed;
  gint64 M, Cg, group;
  float *kept;
  GraftPackedFilter *filter;   /* NULL: conv2d_f32 runs on kept */
  /* a depthwise window the AVX kernels take: their plan for kept (its
   * blocked weights laid out once, which a plan keyed by kept, no input's
   * data, would redo at every run), or NULL */
  GraftDepthwisePlan *depthwise;
} TrimmedConv;

static void
trimmed_conv_free (TrimmedConv *t)
{
  g_free (t->kept);
  g_clear_pointer (&t->filter, graft_packed_filter_free);
  g_clear_pointer (&t->depthwise, graft_conv_depthwise_plan_free);
  g_free (t);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (TrimmedConv, trimmed_conv_free)

typedef struct {
  const GraftWindow *w;
  const float *weight;
  gint64 C, M, group;
} TrimmedConvArgs;

static gboolean
trimmed_conv_fits (gconstpointer derived, gconstpointer args)
{
  const TrimmedConv *t = derived;
  const TrimmedConvArgs *a = args;
  return t->M == a->M && t->Cg == a->C / a->group && t->group == a->group && graft_window_equal (&t->window, a->w) &&
         (t->depthwise == NULL || graft_conv_depthwise_plan_is_current (t->depthwise));
}

static gpointer
trimmed_conv_make (gconstpointer args)
{
  const TrimmedConvArgs *a = args;
  TrimmedConv *t = g_new0 (TrimmedConv, 1);
  t->kept = trim_padding_taps (a->w, a->weight, a->M, a->C / a->group, &t->trimmed);
  if (t->kept == NULL)
    {
      trimmed_conv_free (t);
      return NULL;
    }
  t->window = *a->w;
  t->M = a->M;
  t->Cg = a->C / a->group;
  t->group = a->group;
  if (graft_conv_gemm_supports (&t->trimmed) && !takes_depthwise (a->C, a->M, a->group, &t->trimmed))
    t->filter = graft_packed_filter_new (t->kept, a->group, a->M / a->group,
                                         t->Cg * t->trimmed.kernel[0] * t->trimmed.kernel[1]);
  else if (a->group == a->C && a->M == a->C && graft_conv_depthwise_supports (&t->trimmed))
    t->depthwise = graft_conv_depthwise_plan_new_for_weights (&t->trimmed, t->kept, a->C);
  return t;
}

static const GraftDerivedKind trimmed_conv_kind = {
  "trimmed convolution", (GDestroyNotify) trimmed_conv_free, FALSE, TRUE
};

static const TrimmedConv *
trimmed_conv_for (GraftKernelContext *ctx, const GraftWindow *w, const float *weight, gint64 C, gint64 M,
                  gint64 group, TrimmedConv **owned)
{
  TrimmedConvArgs args = { w, weight, C, M, group };
  GraftWindow trimmed;
  gint64 lo[2];
  /* the window alone says whether taps go: a kernel keeping another
   * kind of data from the weight then does not read its values */
  *owned = NULL;
  if (!graft_window_trim (w, &trimmed, lo))
    return NULL;
  return graft_kernel_derived (ctx, &trimmed_conv_kind, weight, trimmed_conv_fits, trimmed_conv_make, &args,
                               (gpointer *) owned);
}

typedef struct {
  float *y;
  gint64 n, chunk;
  GraftFusedActivation activation;
} ActivationJob;

static void
activation_chunk (gint64 index, gpointer data)
{
  ActivationJob *job = data;
  gint64 start = index * job->chunk, n = MIN (job->chunk, job->n - start);
  float *y = job->y + start;
  graft_f32_fused_activation (job->activation, y, n);
}

void
graft_f32_fused_activation (GraftFusedActivation activation, float *y, gint64 n)
{
  if (activation == GRAFT_FUSED_ACTIVATION_SILU)
    graft_vm_affine (y, y, n, 0, 1, 0, TRUE);
  else if (activation == GRAFT_FUSED_ACTIVATION_HARD_SWISH)
    graft_vm_hard_swish (y, y, n);
  else if (activation == GRAFT_FUSED_ACTIVATION_RELU)
    graft_f32_clamp (y, n, 0, INFINITY);
}

/* The activation that the engine fused into this Conv, over y in place
 * while it is still in cache (the nodes would write a sigmoid tensor and
 * read both back, or make one more pass). */
void
graft_kernel_apply_fused_activation (GraftKernelContext *ctx, GraftRtTensor *y)
{
  ActivationJob job = { y->data, y->numel, 0, graft_kernel_get_fused_activation (ctx) };
  if (job.activation == GRAFT_FUSED_ACTIVATION_NONE || job.n == 0)
    return;
  gint64 chunks = job.n >= 65536 ? graft_kernel_get_n_threads (ctx) * 4 : 1;
  job.chunk = (job.n + chunks - 1) / chunks;
  graft_kernel_parallel_for (ctx, (job.n + job.chunk - 1) / job.chunk, activation_chunk, &job);
}

/* ---- bfloat16 convolution ---- */

/* Winograd's F(4×4, 3×3) keeps a convolution of this many 4×4 output
 * tiles and more (over all images) in bf16 runs; below, the bf16 tiles
 * win: CPU ms f32 Winograd → bf16 on one Zen 4 core, batch 2, 3×3:
 * 128→128 on 8×8 (8 tiles) 0.25 → 0.23, but 64→64 on 16×16 (32 tiles)
 * 0.20 → 0.22 and 64→64 on 32×32 (128 tiles) 0.68 → 0.90. */
#define BF16_OVER_WINOGRAD_TILES 16
/* The small-map kernels keep a filter of fewer floats than this (4 MB,
 * more than a core's L2) in bf16 runs; a larger one comes from memory at
 * each call, and bf16's half the bytes win: ResNet-18's 3×3 512→512 on
 * 2×2 maps, in the model, 0.46 → 0.39 ms (alone, its filter warm in the
 * L3, 0.20 → 0.26) */
#define BF16_OVER_SMALL_FILTER_FLOATS (1 << 20)

gboolean
graft_conv_bf16_pays (const GraftWindow *w, gint64 N, gint64 C, gint64 M, gint64 group)
{
  GraftWindow trimmed;
  gint64 trimmed_lo[2];
  if (group != 1 || w->n != 2 || C < 16 || C * w->kernel[0] * w->kernel[1] < 32 ||
      graft_window_trim (w, &trimmed, trimmed_lo))
    return FALSE;
  gint64 tiles = N * ((w->out[0] + 3) / 4) * ((w->out[1] + 3) / 4);
  if (graft_conv_winograd_pays (w, N, C, M, group) && tiles >= BF16_OVER_WINOGRAD_TILES)
    return FALSE;
  return !graft_conv_small_pays (w, N, C, M, group) ||
         M * C * w->kernel[0] * w->kernel[1] >= BF16_OVER_SMALL_FILTER_FLOATS;
}

/* A convolution at GRAFT_PRECISION_BF16 (graft_kernel_get_precision):
 * the packed GEMM's passes and tiles (conv-gemm.h) with the filter packed
 * once in bfloat16 (kept on the step) and each gathered panel of
 * im2col (x) rounded to bfloat16, float32 sums; bias, residual and
 * clamp as the f32 tiles apply them. *taken FALSE (nothing done) when
 * the run is f32, the CPU has no bf16 tiles, the weights are not a
 * constant input, the convolution is grouped (depthwise stays f32) or
 * not 2-D, or where bf16 does not pay (graft_conv_bf16_pays): Winograd's
 * F(4×4, 3×3) takes it from 16 tiles on (its 4× fewer products in f32
 * beat bf16's 2× faster ones), the input has fewer than 16 channels (a
 * stem: gathering its wide windows costs more than the products save),
 * K = C·KH·KW is under 32 (the f32 pointwise kernels write y straight
 * from x; the tiles' extra pass over the output costs more than the
 * products save: 1×1 16→96 on 2×32×32 0.074 → 0.092 ms), or taps read
 * only padding (the trimmed f32 path keeps only the taps read: a 3×3
 * on 1×1 maps reads a ninth of the filter), or the small-map kernels
 * take it (conv-small.c: each tap reads only the pixels it needs, where
 * the bf16 path gathers every row of im2col (x): 3×3 256→80 on 2×2
 * 0.018 ms f32, 0.038 bf16, half of it the gather). Small maps (up to 48 pixels
 * over all images) pay most: there the filter, read from memory at
 * each call, is the cost, and bf16 halves it. Measured on one Zen 4
 * core, CPU ms f32 → bf16, batch 2: 1×1 256→64 on 16×16 0.147 → 0.104,
 * 1×1 1152→320 on 2×2 0.054 → 0.034, 3×3/2 64→128 on 16×16 0.196 →
 * 0.130. */
static gboolean
conv2d_bf16 (GraftKernelContext *ctx, const float *x, const float *weight, const float *bias, float *y, gint64 N,
             gint64 C, gint64 M, gint64 group, const GraftWindow *w, const float *residual, gboolean *taken,
             GError **error)
{
  *taken = FALSE;
  if (graft_kernel_get_precision (ctx) != GRAFT_PRECISION_BF16 || graft_kernel_table ()->conv_gemm_bf16 == NULL ||
      !graft_conv_gemm_supports (w) || !graft_conv_bf16_pays (w, N, C, M, group) ||
      !graft_kernel_input_data_is_constant (ctx, weight))
    return TRUE;
  gint64 K = C * w->kernel[0] * w->kernel[1];
  g_autoptr(GraftPackedFilter) owned = NULL;
  const GraftPackedFilter *filter = graft_packed_filter_bf16_for (ctx, weight, 1, M, K, &owned);
  if (filter == NULL)
    return graft_kernel_need_values (ctx, weight, error) &&
           graft_kernel_fail (error, "out of memory for the bf16 filter (%" G_GINT64_FORMAT " × %" G_GINT64_FORMAT ")",
                              M, K);
  GraftConvGemmArgs args = { x, y, bias, residual, N, C, M, group, w, FALSE, -INFINITY, INFINITY };
  args.clamp = graft_kernel_get_fused_clamp (ctx, &args.lo, &args.hi);
  *taken = TRUE;
  return graft_conv_gemm (ctx, filter, &args, error);
}

/* conv2d_f32 over the weights without the taps that only ever read
 * padding (a 3×3 on 1×1 and 2×2 maps), through filters packed once for
 * the GEMM where it takes them: both kept on the step for constant
 * weights (trimmed_conv_for). */
static gboolean
conv2d_trimmed_f32 (GraftKernelContext *ctx, const float *x, const float *weight, const float *bias, float *y,
                    gint64 N, gint64 C, gint64 M, gint64 group, const GraftWindow *w, const float *residual,
                    GError **error)
{
  gboolean taken;
  if (graft_conv3d_supports (w))
    return graft_conv3d_f32 (ctx, x, weight, bias, y, N, C, M, group, w, residual, error);
  if (graft_conv_stem_pays (w, C, M, group))
    {
      g_autoptr(GraftPackedFilter) owned_stem = NULL;
      gint64 K = C * w->kernel[0] * w->kernel[1];
      const GraftPackedFilter *stem = graft_packed_filter_for (ctx, weight, 1, M, K, &owned_stem);
      if (stem == NULL)
        return graft_kernel_need_values (ctx, weight, error) &&
               graft_kernel_fail (error, "out of memory for the packed filter (%" G_GINT64_FORMAT " × %"
                                  G_GINT64_FORMAT ")", M, K);
      GraftConvGemmArgs args = { x, y, bias, residual, N, C, M, group, w, FALSE, -INFINITY, INFINITY };
      args.clamp = graft_kernel_get_fused_clamp (ctx, &args.lo, &args.hi);
      return graft_conv_stem (ctx, stem, &args, error);
    }
  if (!conv2d_bf16 (ctx, x, weight, bias, y, N, C, M, group, w, residual, &taken, error))
    return FALSE;
  if (taken)
    return TRUE;
  if (graft_conv_small_pays (w, N, C, M, group))
    {
      /* its taps skip the padding themselves: no trimmed window needed */
      g_autoptr(GraftSmallConvFilter) owned_small = NULL;
      const GraftSmallConvFilter *small = graft_small_conv_filter_for (ctx, weight, M, C, w->kernel[0], w->kernel[1],
                                                                       &owned_small);
      if (small == NULL)
        return graft_kernel_need_values (ctx, weight, error) &&
               graft_kernel_fail (error, "out of memory for the small-map filter (%" G_GINT64_FORMAT " × %"
                                  G_GINT64_FORMAT ")", M, C);
      GraftConvGemmArgs args = { x, y, bias, residual, N, C, M, group, w, FALSE, -INFINITY, INFINITY };
      args.clamp = graft_kernel_get_fused_clamp (ctx, &args.lo, &args.hi);
      return graft_conv_small (ctx, small, &args, error);
    }
  if (graft_conv_grouped_pays (w, N, C, M, group))
    {
      g_autoptr(GraftGroupedConvFilter) owned_grouped = NULL;
      const GraftGroupedConvFilter *grouped = graft_grouped_conv_filter_for (ctx, weight, group, M / group, C / group,
                                                                             w->kernel[0], w->kernel[1], &owned_grouped);
      if (grouped == NULL)
        return graft_kernel_need_values (ctx, weight, error) &&
               graft_kernel_fail (error, "out of memory for the grouped filter (%" G_GINT64_FORMAT " × %"
                                  G_GINT64_FORMAT ")", M, C / group);
      GraftConvGemmArgs args = { x, y, bias, residual, N, C, M, group, w, FALSE, -INFINITY, INFINITY };
      args.clamp = graft_kernel_get_fused_clamp (ctx, &args.lo, &args.hi);
      return graft_conv_grouped (ctx, grouped, &args, error);
    }
  g_autoptr(TrimmedConv) owned = NULL;
  const TrimmedConv *trim = trimmed_conv_for (ctx, w, weight, C, M, group, &owned);
  if (trim && trim->filter)
    {
      GraftConvGemmArgs args = { x, y, bias, residual, N, C, M, group, &trim->trimmed, FALSE, -INFINITY, INFINITY };
      args.clamp = graft_kernel_get_fused_clamp (ctx, &args.lo, &args.hi);
      return graft_conv_gemm (ctx, trim->filter, &args, error);
    }
  if (trim && trim->depthwise && residual == NULL)
    {
      float lo = -INFINITY, hi = INFINITY;
      graft_kernel_get_fused_clamp (ctx, &lo, &hi);
      graft_conv_depthwise_run (ctx, trim->depthwise, x, bias, y, N, C, lo, hi);
      return TRUE;
    }
  return conv2d_f32 (ctx, x, trim ? trim->kept : weight, bias, y, N, C, M, group, trim ? &trim->trimmed : w, residual,
                     error);
}

/* The aten:: convolutions' way in (aten-nn.c): the same paths as Conv. */
gboolean
graft_conv2d_f32 (GraftKernelContext *ctx, const float *x, const float *weight, const float *bias, float *y,
                  gint64 N, gint64 C, gint64 M, gint64 group, const GraftWindow *w, const float *residual,
                  GError **error)
{
  return conv2d_trimmed_f32 (ctx, x, weight, bias, y, N, C, M, group, w, residual, error);
}

const float *
graft_conv_take_residual (GraftKernelContext *ctx, const GraftRtTensor *y)
{
  GraftRtTensor *res = graft_kernel_get_residual (ctx);
  if (res == NULL || res->kind != GRAFT_RT_TENSOR || res->dtype != GRAFT_DTYPE_FLOAT32 || res->rank != y->rank ||
      memcmp (res->dims, y->dims, y->rank * sizeof (gint64)) != 0)
    return NULL;
  graft_kernel_take_residual (ctx);
  return res->data;
}

static gboolean
kernel_conv (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x0 = ctx->inputs[0], *w0 = ctx->inputs[1], *b0 = graft_kernel_input (ctx, 2);
  g_autoptr(GraftRtTensor) xo = NULL, wo = NULL, bo = NULL;
  GraftRtTensor *x = as_f32 (x0, &xo, error), *wt = as_f32 (w0, &wo, error), *b = as_f32 (b0, &bo, error);
  GraftWindow w;
  if (x == NULL || wt == NULL || (b0 && b == NULL))
    return FALSE;
  /* a Mul and Add of constants per channel after it, folded by the engine (runtime-fusion.c) */
  graft_kernel_get_folded_weights (ctx, &wt, &b);
  gint64 group = graft_node_attr_int (ctx->node, "group", 1);
  if (!window_from_tensors (ctx, x, wt, FALSE, &w, error))
    return FALSE;
  gint64 N = x->dims[0], C = x->dims[1], M = wt->dims[0];
  if (group <= 0 || C % group != 0 || M % group != 0 || wt->dims[1] * group != C)
    return graft_kernel_fail (error, "%" G_GINT64_FORMAT " input channels and weights %s do not fit group %" G_GINT64_FORMAT,
                              C, graft_rt_tensor_describe (wt), group);
  gint64 dims[GRAFT_RT_MAX_RANK] = { N, M };
  for (int i = 0; i < w.n; i++)
    dims[i + 2] = w.out[i];
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_FLOAT32, x->rank, dims, error);
  if (y == NULL)
    return FALSE;
  /* a residual Add fused by the engine, taken when it is y's own shape */
  const float *residual = x0->dtype == GRAFT_DTYPE_FLOAT32 ? graft_conv_take_residual (ctx, y) : NULL;
  if (!conv2d_trimmed_f32 (ctx, x->data, wt->data, b ? b->data : NULL, y->data, N, C, M, group, &w, residual, error))
    return FALSE;
  graft_kernel_apply_fused_activation (ctx, y);
  if (x0->dtype != GRAFT_DTYPE_FLOAT32)
    {
      GraftRtTensor *cast = graft_rt_tensor_cast (y, x0->dtype, error);
      if (cast == NULL)
        return FALSE;
      graft_kernel_set_output (ctx, 0, cast);
    }
  return TRUE;
}

/* ---- ConvTranspose: col = Wᵀ·X, then scatter-add (col2im) ---- */

gboolean
graft_conv_transpose_f32 (const float *x, const float *weight, const float *bias, float *yd, gint64 N, gint64 C,
                          gint64 M, gint64 group, const GraftWindow *w, GError **error)
{
  gint64 Mg = M / group, Cg = C / group;
  gint64 in_size = 1, out_size = 1, k_size = 1;
  for (int i = 0; i < w->n; i++)
    {
      in_size *= w->in[i];
      out_size *= w->out[i];
      k_size *= w->kernel[i];
    }
  memset (yd, 0, (gsize) (N * M * out_size) * sizeof (float));
  g_autofree float *col = g_try_malloc ((gsize) Mg * k_size * in_size * sizeof (float) + 1);
  if (col == NULL)
    return graft_kernel_fail (error, "out of memory for the col2im buffer");

  for (gint64 n = 0; n < N; n++)
    for (gint64 g = 0; g < group; g++)
      {
        const float *xg = x + (n * C + g * Cg) * in_size;
        const float *wg = weight + g * Cg * Mg * k_size;
        /* col [Mg*K, in] = wgᵀ [Mg*K, Cg] × xg [Cg, in] */
        cblas_sgemm (CblasRowMajor, CblasTrans, CblasNoTrans, Mg * k_size, in_size, Cg, 1.0f,
                     wg, Mg * k_size, xg, in_size, 0.0f, col, in_size);
        for (gint64 m = 0; m < Mg; m++)
          {
            float *out = yd + (n * M + g * Mg + m) * out_size;
            gint64 kidx[GRAFT_WINDOW_MAX_DIMS] = { 0 };
            for (gint64 k = 0; k < k_size; k++)
              {
                const float *row = col + (m * k_size + k) * in_size;
                gint64 iidx[GRAFT_WINDOW_MAX_DIMS] = { 0 };
                for (gint64 i = 0; i < in_size; i++)
                  {
                    gint64 off = 0;
                    gboolean inside = TRUE;
                    for (int d = 0; d < w->n; d++)
                      {
                        gint64 o = iidx[d] * w->stride[d] + kidx[d] * w->dilation[d] - w->pad_begin[d];
                        if (o < 0 || o >= w->out[d])
                          {
                            inside = FALSE;
                            break;
                          }
                        off = off * w->out[d] + o;
                      }
                    if (inside)
                      out[off] += row[i];
                    graft_index_next (iidx, w->in, w->n);
                  }
                graft_index_next (kidx, w->kernel, w->n);
              }
            if (bias)
              for (gint64 i = 0; i < out_size; i++)
                out[i] += bias[g * Mg + m];
          }
      }
  return TRUE;
}

static gboolean
kernel_conv_transpose (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x0 = ctx->inputs[0], *w0 = ctx->inputs[1], *b0 = graft_kernel_input (ctx, 2);
  g_autoptr(GraftRtTensor) xo = NULL, wo = NULL, bo = NULL;
  GraftRtTensor *x = as_f32 (x0, &xo, error), *wt = as_f32 (w0, &wo, error), *b = as_f32 (b0, &bo, error);
  GraftWindow w;
  if (x == NULL || wt == NULL || (b0 && b == NULL))
    return FALSE;
  /* a Mul and Add of constants per channel after it, folded by the engine (runtime-fusion.c) */
  graft_kernel_get_folded_weights (ctx, &wt, &b);
  gint64 group = graft_node_attr_int (ctx->node, "group", 1);
  if (!window_from_tensors (ctx, x, wt, TRUE, &w, error))
    return FALSE;
  gint64 N = x->dims[0], C = x->dims[1], M = wt->dims[1] * group;
  if (group <= 0 || C % group != 0 || wt->dims[0] != C)
    return graft_kernel_fail (error, "input channels and weights do not fit group %" G_GINT64_FORMAT, group);
  gint64 dims[GRAFT_RT_MAX_RANK] = { N, M };
  for (int i = 0; i < w.n; i++)
    dims[i + 2] = w.out[i];
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_FLOAT32, x->rank, dims, error);
  if (y == NULL)
    return FALSE;
  if (!graft_conv_transpose_f32 (x->data, wt->data, b ? b->data : NULL, y->data, N, C, M, group, &w, error))
    return FALSE;
  if (x0->dtype != GRAFT_DTYPE_FLOAT32)
    {
      GraftRtTensor *cast = graft_rt_tensor_cast (y, x0->dtype, error);
      if (cast == NULL)
        return FALSE;
      graft_kernel_set_output (ctx, 0, cast);
    }
  return TRUE;
}

/* ---- Integer convolutions: int8 GEMM kernels in qlinear.c ---- */

static gboolean
kernel_conv_integer (GraftKernelContext *ctx, GError **error)
{
  return graft_conv_integer_run (ctx, FALSE, error);
}

static gboolean
kernel_conv_integer_to_float (GraftKernelContext *ctx, GError **error)
{
  return graft_conv_integer_to_float_run (ctx, error);
}

static gboolean
kernel_qlinear_conv (GraftKernelContext *ctx, GError **error)
{
  return graft_conv_integer_run (ctx, TRUE, error);
}

/* ---- Col2Im (18): the inverse of im2col, overlapping blocks summed ---- */

typedef struct {
  int rank;                       /* spatial axes */
  gint64 image[GRAFT_RT_MAX_RANK], block[GRAFT_RT_MAX_RANK], blocks[GRAFT_RT_MAX_RANK];
  gint64 strides[GRAFT_RT_MAX_RANK], pads[GRAFT_RT_MAX_RANK], dilations[GRAFT_RT_MAX_RANK];
} Col2ImGeometry;

static gboolean
col2im_geometry (GraftNode *node, const gint64 *image, gint64 n_image, const gint64 *block, gint64 n_block,
                 Col2ImGeometry *g, GError **error)
{
  guint n_strides, n_pads, n_dilations;
  const gint64 *strides = graft_node_attr_ints (node, "strides", &n_strides);
  const gint64 *pads = graft_node_attr_ints (node, "pads", &n_pads);
  const gint64 *dilations = graft_node_attr_ints (node, "dilations", &n_dilations);
  if (n_image != n_block || n_image < 1 || n_image > GRAFT_RT_MAX_RANK - 2)
    return graft_kernel_fail (error, "image_shape and block_shape must name the same 1 to %d axes", GRAFT_RT_MAX_RANK - 2);
  if ((strides && n_strides != n_image) || (pads && n_pads != 2 * n_image) || (dilations && n_dilations != n_image))
    return graft_kernel_fail (error, "strides, pads or dilations do not match the %" G_GINT64_FORMAT " spatial axes", n_image);
  g->rank = n_image;
  for (int d = 0; d < g->rank; d++)
    {
      g->image[d] = image[d];
      g->block[d] = block[d];
      g->strides[d] = strides ? strides[d] : 1;
      g->pads[d] = pads ? pads[d] : 0;
      g->dilations[d] = dilations ? dilations[d] : 1;
      gint64 span = g->dilations[d] * (g->block[d] - 1) + 1;
      gint64 padded = g->image[d] + g->pads[d] + (pads ? pads[d + n_image] : 0);
      if (g->block[d] < 1 || g->strides[d] < 1 || g->dilations[d] < 1 || padded < span)
        return graft_kernel_fail (error, "axis %d: a block of %" G_GINT64_FORMAT " does not fit the padded image of %"
                                  G_GINT64_FORMAT, d, span, padded);
      g->blocks[d] = (padded - span) / g->strides[d] + 1;
    }
  return TRUE;
}

static gboolean
infer_col2im (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *x = graft_infer_input (ctx, 0);
  gint64 n_image, n_block;
  g_autofree gint64 *image = graft_infer_input_ints (ctx, 1, &n_image);
  g_autofree gint64 *block = graft_infer_input_ints (ctx, 2, &n_block);
  if (image == NULL || block == NULL || x->shape.rank != 3)
    {
      graft_infer_set_output_unknown (ctx, 0, x->dtype, image ? 2 + (int) n_image : -1);
      return TRUE;
    }
  Col2ImGeometry g;
  if (!col2im_geometry (ctx->node, image, n_image, block, n_block, &g, error))
    return FALSE;
  GraftShape shape;
  graft_shape_init (&shape, 2 + g.rank);
  gint64 block_size = graft_dims_product (g.block, 0, g.rank);
  shape.dims[0] = x->shape.dims[0];
  shape.dims[1] = x->shape.dims[1].kind == GRAFT_DIM_FIXED ? graft_dim_fixed (x->shape.dims[1].value / block_size)
                                                           : graft_dim_unknown ();
  for (int d = 0; d < g.rank; d++)
    shape.dims[2 + d] = graft_dim_fixed (g.image[d]);
  graft_infer_set_output (ctx, 0, x->dtype, &shape);
  graft_shape_clear (&shape);
  return TRUE;
}

static gboolean
kernel_col2im (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0];
  gint64 image[GRAFT_RT_MAX_RANK], block[GRAFT_RT_MAX_RANK], n_image, n_block;
  if (!graft_rt_tensor_read_ints (ctx->inputs[1], image, GRAFT_RT_MAX_RANK, &n_image) ||
      !graft_rt_tensor_read_ints (ctx->inputs[2], block, GRAFT_RT_MAX_RANK, &n_block))
    return graft_kernel_fail (error, "image_shape and block_shape must be short int tensors");
  Col2ImGeometry g;
  if (!col2im_geometry (ctx->node, image, n_image, block, n_block, &g, error))
    return FALSE;
  gint64 block_size = graft_dims_product (g.block, 0, g.rank), n_blocks = graft_dims_product (g.blocks, 0, g.rank);
  if (x->rank != 3 || x->dims[1] % block_size != 0 || x->dims[2] != n_blocks)
    return graft_kernel_fail (error, "input must be [N, C × %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]", block_size, n_blocks);
  GraftRtTensor *y = graft_kernel_output (ctx, 0, error);
  if (y == NULL)
    return FALSE;
  gint64 channels = x->dims[0] * (x->dims[1] / block_size), image_size = graft_dims_product (g.image, 0, g.rank);
  g_autofree double *sum = g_new0 (double, MAX (y->numel, 1));
  gint64 offset[GRAFT_RT_MAX_RANK] = { 0 };
  for (gint64 k = 0; k < block_size; k++, graft_index_next (offset, g.block, g.rank))
    {
      gint64 position[GRAFT_RT_MAX_RANK] = { 0 };
      for (gint64 l = 0; l < n_blocks; l++, graft_index_next (position, g.blocks, g.rank))
        {
          gint64 pixel = 0;
          gboolean inside = TRUE;
          for (int d = 0; d < g.rank && inside; d++)
            {
              gint64 coordinate = position[d] * g.strides[d] - g.pads[d] + offset[d] * g.dilations[d];
              inside = coordinate >= 0 && coordinate < g.image[d];
              pixel = pixel * g.image[d] + coordinate;
            }
          if (inside)
            for (gint64 c = 0; c < channels; c++)
              sum[c * image_size + pixel] += graft_rt_tensor_get_f64 (x, ((c * block_size) + k) * n_blocks + l);
        }
    }
  for (gint64 i = 0; i < y->numel; i++)
    graft_rt_tensor_set_f64 (y, i, sum[i]);
  return TRUE;
}

/* ---- DeformConv (19), 2-D ---- */

static gboolean
infer_deform_conv (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *x = graft_infer_input (ctx, 0), *w = graft_infer_input (ctx, 1), *offset = graft_infer_input (ctx, 2);
  if (x->shape.rank != 4 || w->shape.rank != 4 || offset->shape.rank != 4)
    {
      graft_infer_set_output_unknown (ctx, 0, x->dtype, x->shape.rank);
      return TRUE;
    }
  /* the offsets are given per output position, so they fix its size */
  GraftShape shape;
  graft_shape_init (&shape, 4);
  shape.dims[0] = x->shape.dims[0];
  shape.dims[1] = w->shape.dims[0];
  shape.dims[2] = offset->shape.dims[2];
  shape.dims[3] = offset->shape.dims[3];
  graft_infer_set_output (ctx, 0, x->dtype, &shape);
  graft_shape_clear (&shape);
  return TRUE;
}

/* Bilinear sample of one plane, each corner outside the image counting 0. */
static double
sample_plane (const GraftRtTensor *x, gint64 plane, gint64 height, gint64 width, double h, double w)
{
  gint64 h0 = (gint64) floor (h), w0 = (gint64) floor (w);
  double dh = h - h0, dw = w - w0, sum = 0;
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++)
      {
        gint64 hh = h0 + i, ww = w0 + j;
        if (hh >= 0 && hh < height && ww >= 0 && ww < width)
          sum += (i ? dh : 1 - dh) * (j ? dw : 1 - dw) * graft_rt_tensor_get_f64 (x, (plane * height + hh) * width + ww);
      }
  return sum;
}

static gboolean
kernel_deform_conv (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *x = ctx->inputs[0], *w = ctx->inputs[1], *offset = ctx->inputs[2];
  GraftRtTensor *bias = graft_kernel_input (ctx, 3), *mask = graft_kernel_input (ctx, 4);
  if (x->rank != 4 || w->rank != 4 || offset->rank != 4)
    return graft_kernel_unsupported (error, "DeformConv on other than 2-D images");
  gint64 group = graft_node_attr_int (ctx->node, "group", 1), offset_group = graft_node_attr_int (ctx->node, "offset_group", 1);
  gint64 batch = x->dims[0], channels = x->dims[1], height = x->dims[2], width = x->dims[3];
  gint64 out_channels = w->dims[0], kh = w->dims[2], kw = w->dims[3], taps = kh * kw;
  gint64 out_h = offset->dims[2], out_w = offset->dims[3];
  if (group < 1 || offset_group < 1 || channels != w->dims[1] * group || out_channels % group != 0 ||
      channels % offset_group != 0)
    return graft_kernel_fail (error, "X's %" G_GINT64_FORMAT " channels do not fit W and group %" G_GINT64_FORMAT
                              " / offset_group %" G_GINT64_FORMAT, channels, group, offset_group);
  if (offset->dims[0] != batch || offset->dims[1] != offset_group * taps * 2 ||
      (mask && (mask->rank != 4 || mask->dims[1] != offset_group * taps || mask->dims[2] != out_h || mask->dims[3] != out_w)))
    return graft_kernel_fail (error, "offset must be [N, offset_group × %" G_GINT64_FORMAT " × 2, out H, out W] (mask the same without the 2)", taps);
  if (bias && bias->numel != out_channels)
    return graft_kernel_fail (error, "B must have one value per output channel");
  guint n_strides, n_pads, n_dilations;
  const gint64 *strides = graft_node_attr_ints (ctx->node, "strides", &n_strides);
  const gint64 *pads = graft_node_attr_ints (ctx->node, "pads", &n_pads);
  const gint64 *dilations = graft_node_attr_ints (ctx->node, "dilations", &n_dilations);
  if ((strides && n_strides != 2) || (pads && n_pads != 4) || (dilations && n_dilations != 2))
    return graft_kernel_fail (error, "strides and dilations need 2 values, pads 4");
  gint64 stride_h = strides ? strides[0] : 1, stride_w = strides ? strides[1] : 1;
  gint64 pad_h = pads ? pads[0] : 0, pad_w = pads ? pads[1] : 0;
  gint64 dilation_h = dilations ? dilations[0] : 1, dilation_w = dilations ? dilations[1] : 1;
  GraftRtTensor *y = graft_kernel_output (ctx, 0, error);
  if (y == NULL)
    return FALSE;
  gint64 in_per_group = channels / group, out_per_group = out_channels / group, in_per_offset = channels / offset_group;
  for (gint64 b = 0; b < batch; b++)
    for (gint64 oc = 0; oc < out_channels; oc++)
      for (gint64 oh = 0; oh < out_h; oh++)
        for (gint64 ow = 0; ow < out_w; ow++)
          {
            double acc = bias ? graft_rt_tensor_get_f64 (bias, oc) : 0;
            for (gint64 k = 0; k < in_per_group; k++)
              {
                gint64 c = oc / out_per_group * in_per_group + k, g = c / in_per_offset;
                for (gint64 t = 0; t < taps; t++)
                  {
                    gint64 at = ((b * offset_group + g) * taps + t) * out_h * out_w + oh * out_w + ow;
                    double dh = graft_rt_tensor_get_f64 (offset, ((b * offset_group + g) * taps + t) * 2 * out_h * out_w + oh * out_w + ow);
                    double dw = graft_rt_tensor_get_f64 (offset, (((b * offset_group + g) * taps + t) * 2 + 1) * out_h * out_w + oh * out_w + ow);
                    double h = oh * stride_h - pad_h + t / kw * dilation_h + dh;
                    double wc = ow * stride_w - pad_w + t % kw * dilation_w + dw;
                    double weight = graft_rt_tensor_get_f64 (w, (oc * in_per_group + k) * taps + t);
                    double m = mask ? graft_rt_tensor_get_f64 (mask, at) : 1;
                    acc += weight * m * sample_plane (x, b * channels + c, height, width, h, wc);
                  }
              }
            graft_rt_tensor_set_f64 (y, ((b * out_channels + oc) * out_h + oh) * out_w + ow, acc);
          }
  return TRUE;
}

const GraftOpSchema graft_ops_conv[] = {
  { "onnx::Conv", 1, 0, infer_conv, kernel_conv, GRAFT_OP_HALF_AS_FLOAT | GRAFT_OP_ASKS_FOR_VALUES, "X W B", "Y" },
  { "onnx::ConvTranspose", 1, 0, infer_conv_transpose, kernel_conv_transpose, GRAFT_OP_HALF_AS_FLOAT, "X W B", "Y" },
  { "onnx::ConvInteger", 10, 0, infer_conv_integer, kernel_conv_integer, 0, "x w x_zero_point w_zero_point", "y" },
  { GRAFT_CONV_INTEGER_FLOAT_FUSION_OP, 1, 0, infer_conv_integer_to_float, kernel_conv_integer_to_float, 0,
    "x w x_zero_point w_zero_point scale A1 A2", "y" },
  { "onnx::QLinearConv", 10, 0, infer_qlinear_conv, kernel_qlinear_conv, 0, "x x_scale x_zero_point w w_scale w_zero_point y_scale y_zero_point B", "y" },
  { "onnx::Col2Im", 18, 0, infer_col2im, kernel_col2im, GRAFT_OP_HALF_AS_FLOAT, "input image_shape block_shape", "output" },
  { "onnx::DeformConv", 19, 0, infer_deform_conv, kernel_deform_conv, GRAFT_OP_HALF_AS_FLOAT, "X W offset B mask", "Y" },
  { NULL }
};
