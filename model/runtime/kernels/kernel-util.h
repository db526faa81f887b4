/* Helpers shared by kernel families: broadcasting iteration and common
 * inference shapes. */
#pragma once

#include <string.h>
#include "runtime/op.h"

G_BEGIN_DECLS

/* One contiguous run of a broadcast binary op: out[i] = f(a[i*sa], b[i*sb]). */
typedef void (*GraftBinaryRun) (const void *a, gint64 sa, const void *b, gint64 sb,
                                void *out, gint64 n, gconstpointer user_data);

/* Applies run over out (whose shape is the broadcast of a and b). */
void graft_broadcast_binary (const GraftRtTensor *a, const GraftRtTensor *b, GraftRtTensor *out,
                             GraftBinaryRun run, gconstpointer user_data);

/* For n-ary broadcasting: offsets[k] of input k for every output element,
 * computed incrementally. */
typedef struct {
  int rank;
  guint n;
  gint64 dims[GRAFT_RT_MAX_RANK];
  gint64 strides[8][GRAFT_RT_MAX_RANK];
  gint64 index[GRAFT_RT_MAX_RANK];
  gint64 offsets[8];
} GraftBroadcastIter;

void graft_broadcast_iter_init (GraftBroadcastIter *iter, const GraftRtTensor *out,
                                const GraftRtTensor *const *inputs, guint n);
/* Steps to the start of the next row of the last axis (the offsets of
 * its elements then step by strides[k][rank - 1]): for kernels that
 * copy a row at a time (Expand, Where). rank must be at least 1. */
void graft_broadcast_iter_next_row (GraftBroadcastIter *iter);
void graft_broadcast_iter_next (GraftBroadcastIter *iter);

/* Broadcast of the shapes of all present inputs. */
gboolean graft_infer_broadcast_inputs (GraftInferContext *ctx, guint first, guint n, GraftShape *out, GError **error);

/* dims of a tensor input as a fixed GraftShape out (for infer from data). */
gboolean graft_rt_tensor_read_ints (const GraftRtTensor *t, gint64 *values, gint64 max, gint64 *n);

/* float32 view helpers */
static inline float *graft_f32 (GraftRtTensor *t) { return (float *) t->data; }
static inline const float *graft_cf32 (const GraftRtTensor *t) { return (const float *) t->data; }

/* Element copies that also handle strings (defined in shape.c). */
void graft_copy_element (GraftRtTensor *dst, gint64 di, const GraftRtTensor *src, gint64 si);
void graft_copy_block (GraftRtTensor *dst, gint64 di, const GraftRtTensor *src, gint64 si, gint64 n);
/* out[perm-ordered] = in; out must have the permuted shape. */
gboolean graft_transpose_into (const GraftRtTensor *in, GraftRtTensor *out, const int *perm);

/* y = x raised to the one exponent e, float32, n values (ONNX Pow and
 * aten::pow by a scalar; x·x for 2 and sqrtf for ½, as PyTorch computes
 * them; defined in binary.c). */
void graft_f32_pow_scalar (const float *x, float e, float *y, gint64 n);

/* acc[i] += the sum of row i of rows × count floats, added in order in
 * double: the reductions' (ReduceSum/ReduceMean, aten sum/mean) sums over
 * innermost axes, as their indexed loops take them (defined in reduce.c). */
void graft_f32_add_row_sums (const float *x, gint64 rows, gint64 count, double *acc);

/* How a pad fills the positions off the input: the constant, the input
 * mirrored without repeating the edge, the edge repeated, or wrapped. */
typedef enum { GRAFT_PAD_CONSTANT, GRAFT_PAD_REFLECT, GRAFT_PAD_EDGE, GRAFT_PAD_WRAP } GraftPadMode;

/* out = in padded by begin[d] elements before each axis d (negative:
 * cropped) and whatever out's dims leave after it, row by row of the
 * last axis; a fixed-size dtype, rank ≥ 1; fill is the constant's bytes
 * in out's dtype (defined in shape.c, ONNX Pad's kernel). */
void graft_pad_rows (const GraftRtTensor *in, GraftRtTensor *out, const gint64 *begin, GraftPadMode m,
                     const guint8 *fill);

/* Advances a row-major multi-index over dims (wrapping to all zeros at the end). */
static inline void
graft_index_next (gint64 *index, const gint64 *dims, int rank)
{
  for (int d = rank - 1; d >= 0; d--)
    {
      if (++index[d] < dims[d])
        break;
      index[d] = 0;
    }
}

/* Clamps p[0..n) to [lo, hi] in place. Written with GCC vector types
 * because -O2's cheap vectoriser leaves such loops scalar and branchy,
 * which mispredicts on real activations. */
typedef float GraftV4f __attribute__ ((vector_size (16)));
typedef gint32 GraftV4i __attribute__ ((vector_size (16)));

static inline GraftV4f
graft_v4f_select (GraftV4i mask, GraftV4f a, GraftV4f b)
{
  return (GraftV4f) (((GraftV4i) a & mask) | ((GraftV4i) b & ~mask));
}

static inline void
graft_f32_clamp (float *p, gint64 n, float lo, float hi)
{
  GraftV4f vlo = { lo, lo, lo, lo }, vhi = { hi, hi, hi, hi };
  gint64 i = 0;
  for (; i + 4 <= n; i += 4)
    {
      GraftV4f v;
      memcpy (&v, p + i, sizeof v);
      v = graft_v4f_select (v < vlo, vlo, v);
      v = graft_v4f_select (v > vhi, vhi, v);
      memcpy (p + i, &v, sizeof v);
    }
  for (; i < n; i++)
    {
      float v = p[i];
      v = v < lo ? lo : v;
      p[i] = v > hi ? hi : v;
    }
}

/* The activation the engine fused into a Conv or an aten::batch_norm
 * (graft_kernel_get_fused_activation), over y[0..n) in place; the second
 * over a whole output, in parallel chunks (conv.c). */
void graft_f32_fused_activation (GraftFusedActivation activation, float *y, gint64 n);
void graft_kernel_apply_fused_activation (GraftKernelContext *ctx, GraftRtTensor *y);

/* Matrix products shared with the aten:: kernels (matmul.c). */
gboolean graft_matmul (GraftKernelContext *ctx, const GraftRtTensor *a, const GraftRtTensor *b, GraftRtTensor *out,
                       GError **error);
gboolean graft_gemm (GraftKernelContext *ctx, GraftRtTensor *a, gboolean ta, GraftRtTensor *b, gboolean tb,
                     GraftRtTensor *c, double alpha, double beta, GraftRtTensor *out, GError **error);
/* y [M, N] = x [M, K] · w [N, K]ᵀ + bias (bias_size values: N, or 1 for
 * every column; NULL: none), float32, as aten::linear: through the
 * packed product Gemm takes (w packed once when it is a constant input of
 * the node) where it applies, else the sgemm. */
void graft_linear_f32 (GraftKernelContext *ctx, gint64 M, gint64 N, gint64 K, const float *x, const float *w,
                       const float *bias, gint64 bias_size, float *y);
/* Output 0 of ctx = einsum (equation, inputs) as ONNX's Einsum defines it
 * (einsum.c): float32 through the GEMM kernels, other dtypes element-wise. */
gboolean graft_einsum (GraftKernelContext *ctx, const char *equation, GraftRtTensor *const *inputs, guint n_inputs,
                       GError **error);

/* Row-major C[M×N] = alpha·op(A)·op(B) + beta·C in float32. OpenBLAS runs
 * single-threaded (its own threads would spin against the worker pool), so
 * a large product is split here into per-thread sgemm calls over column
 * blocks of C (or row blocks when C is narrow). ctx may be NULL. */
void graft_kernel_sgemm (GraftKernelContext *ctx, gboolean ta, gboolean tb, gint64 M, gint64 N, gint64 K,
                         float alpha, const float *a, gint64 lda, const float *b, gint64 ldb,
                         float beta, float *c, gint64 ldc);

/* Whether batches products of work multiply-adds each are better run in
 * parallel over the batch, each on one thread (many small ones), than one
 * after another, each split over the pool. */
static inline gboolean
graft_kernel_split_batches (GraftKernelContext *ctx, gint64 batches, gint64 work)
{
  return batches > 1 && graft_kernel_get_n_threads (ctx) > 1 && work < 1 << 18;
}

/* y[i] += a * x[i] (axpy) and y[i] += b, vectorised the same way. */
static inline void
graft_f32_axpy (float *y, const float *x, gint64 n, float a)
{
  GraftV4f va = { a, a, a, a };
  gint64 i = 0;
  for (; i + 4 <= n; i += 4)
    {
      GraftV4f vx, vy;
      memcpy (&vx, x + i, sizeof vx);
      memcpy (&vy, y + i, sizeof vy);
      vy += va * vx;
      memcpy (y + i, &vy, sizeof vy);
    }
  for (; i < n; i++)
    y[i] += a * x[i];
}

static inline void
graft_f32_add_scalar (float *y, gint64 n, float b)
{
  GraftV4f vb = { b, b, b, b };
  gint64 i = 0;
  for (; i + 4 <= n; i += 4)
    {
      GraftV4f vy;
      memcpy (&vy, y + i, sizeof vy);
      vy += vb;
      memcpy (y + i, &vy, sizeof vy);
    }
  for (; i < n; i++)
    y[i] += b;
}

/* Product of dims[from..to) */
gint64 graft_dims_product (const gint64 *dims, int from, int to);

G_END_DECLS
