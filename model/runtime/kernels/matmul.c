/* Matrix products: MatMul (numpy batching), Gemm, MatMulInteger,
 * QLinearMatMul, and the aten:: linear/addmm/matmul/mm/bmm spellings.
 * float32 products by a 2-D B (weights) take the packed-B GEMM of
 * gemm-packed.c on AVX2/AVX-512 machines; the rest of float32/float64 goes
 * through CBLAS. */
#include <cblas.h>
#include <math.h>
#include <string.h>
#include "runtime/kernels/kernel-util.h"
#include "runtime/kernels/qlinear.h"
#include "runtime/kernels/gemm-packed.h"
#include "runtime/kernels/kernel-table.h"

static gboolean
infer_matmul (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *a = graft_infer_input (ctx, 0), *b = graft_infer_input (ctx, 1);
  GraftDType dtype = a->dtype;
  if (strcmp (ctx->node->op_type, "MatMulInteger") == 0)
    dtype = GRAFT_DTYPE_INT32;
  else if (strcmp (ctx->node->op_type, "QLinearMatMul") == 0)
    {
      GraftInferValue *zp = graft_infer_input (ctx, 7);
      dtype = zp ? zp->dtype : GRAFT_DTYPE_UINT8;
      b = graft_infer_input (ctx, 3);
    }
  if (a->shape.rank < 1 || b->shape.rank < 1)
    {
      graft_infer_set_output_unknown (ctx, 0, dtype, -1);
      return TRUE;
    }
  GraftShape sa, sb, batch;
  int ra = a->shape.rank, rb = b->shape.rank;
  GraftDim m = ra >= 2 ? a->shape.dims[ra - 2] : graft_dim_fixed (1);
  GraftDim ka = a->shape.dims[ra - 1];
  GraftDim kb = rb >= 2 ? b->shape.dims[rb - 2] : b->shape.dims[0];
  GraftDim n = rb >= 2 ? b->shape.dims[rb - 1] : graft_dim_fixed (1);
  if (ka.kind == GRAFT_DIM_FIXED && kb.kind == GRAFT_DIM_FIXED && ka.value != kb.value)
    {
      g_autofree char *x = graft_shape_to_string (&a->shape);
      g_autofree char *y = graft_shape_to_string (&b->shape);
      return graft_kernel_fail (error, "inner dimensions do not match: %s × %s", x, y);
    }
  sa = (GraftShape) { MAX (ra - 2, 0), a->shape.dims };
  sb = (GraftShape) { MAX (rb - 2, 0), b->shape.dims };
  if (!graft_shape_broadcast (&sa, &sb, &batch, error))
    return FALSE;
  GraftShape out;
  int rank = batch.rank + (ra >= 2) + (rb >= 2);
  graft_shape_init (&out, rank);
  for (int i = 0; i < batch.rank; i++)
    out.dims[i] = batch.dims[i];
  int pos = batch.rank;
  if (ra >= 2)
    out.dims[pos++] = m;
  if (rb >= 2)
    out.dims[pos++] = n;
  graft_infer_set_output (ctx, 0, dtype, &out);
  graft_shape_clear (&out);
  graft_shape_clear (&batch);
  return TRUE;
}

typedef struct {
  const GraftRtTensor *a, *b;
  GraftRtTensor *out;
  gint64 M, N, K;
  gboolean tb;                 /* b holds Bᵀ: [..., N, K] */
  gint64 batch_dims[GRAFT_RT_MAX_RANK];
  int batch_rank;
  gint64 a_bstrides[GRAFT_RT_MAX_RANK], b_bstrides[GRAFT_RT_MAX_RANK];
  GraftKernelContext *split;   /* non-NULL: one product split over this context's pool */
} MatMulJob;

/* Offsets (in matrices) of batch item idx in a and b. */
static void
batch_offsets (const MatMulJob *job, gint64 idx, gint64 *oa, gint64 *ob)
{
  *oa = *ob = 0;
  for (int d = job->batch_rank - 1; d >= 0; d--)
    {
      gint64 i = idx % job->batch_dims[d];
      idx /= job->batch_dims[d];
      *oa += i * job->a_bstrides[d];
      *ob += i * job->b_bstrides[d];
    }
}

static void
matmul_generic (const GraftRtTensor *a, gint64 oa, const GraftRtTensor *b, gint64 ob, gboolean tb, GraftRtTensor *out,
                gint64 oo, gint64 M, gint64 N, gint64 K, gint64 za, gint64 zb)
{
  gint64 b_row = tb ? 1 : N, b_col = tb ? K : 1;
  gboolean integer = graft_dtype_is_integer (out->dtype);
  for (gint64 i = 0; i < M; i++)
    for (gint64 j = 0; j < N; j++)
      {
        if (integer)
          {
            gint64 acc = 0;
            for (gint64 k = 0; k < K; k++)
              acc += (graft_rt_tensor_get_i64 (a, oa + i * K + k) - za) * (graft_rt_tensor_get_i64 (b, ob + k * b_row + j * b_col) - zb);
            graft_rt_tensor_set_i64 (out, oo + i * N + j, acc);
          }
        else
          {
            double acc = 0;
            for (gint64 k = 0; k < K; k++)
              acc += graft_rt_tensor_get_f64 (a, oa + i * K + k) * graft_rt_tensor_get_f64 (b, ob + k * b_row + j * b_col);
            graft_rt_tensor_set_f64 (out, oo + i * N + j, acc);
          }
      }
}

static gboolean
setup_matmul (MatMulJob *job, const GraftRtTensor *a, const GraftRtTensor *b, gboolean tb, GraftRtTensor *out,
              GError **error)
{
  int ra = a->rank, rb = b->rank;
  job->a = a;
  job->b = b;
  job->tb = tb = tb && rb >= 2;
  job->out = out;
  job->M = ra >= 2 ? a->dims[ra - 2] : 1;
  job->K = a->dims[ra - 1];
  job->N = rb >= 2 ? b->dims[rb - (tb ? 2 : 1)] : 1;
  gint64 kb = rb >= 2 ? b->dims[rb - (tb ? 1 : 2)] : b->dims[0];
  if (kb != job->K)
    return graft_kernel_fail (error, "inner dimensions %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT " differ", job->K, kb);
  int bra = MAX (ra - 2, 0), brb = MAX (rb - 2, 0);
  job->batch_rank = MAX (bra, brb);
  gint64 sa = 1, sb = 1;
  for (int d = job->batch_rank - 1; d >= 0; d--)
    {
      int ia = d - (job->batch_rank - bra), ib = d - (job->batch_rank - brb);
      gint64 da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
      job->batch_dims[d] = MAX (da, db);
      job->a_bstrides[d] = da == 1 ? 0 : sa;
      job->b_bstrides[d] = db == 1 ? 0 : sb;
      sa *= da;
      sb *= db;
    }
  return TRUE;
}

static void
matmul_item (gint64 idx, gpointer data)
{
  MatMulJob *job = data;
  gint64 oa, ob;
  gint64 M = job->M, N = job->N, K = job->K;
  batch_offsets (job, idx, &oa, &ob);
  oa *= M * K;
  ob *= K * N;
  gint64 oo = idx * M * N;
  if (job->out->dtype == GRAFT_DTYPE_FLOAT32)
    graft_kernel_sgemm (job->split, FALSE, job->tb, M, N, K, 1.0f, (const float *) job->a->data + oa, K,
                        (const float *) job->b->data + ob, job->tb ? K : N, 0.0f, (float *) job->out->data + oo, N);
  else if (job->out->dtype == GRAFT_DTYPE_FLOAT64)
    cblas_dgemm (CblasRowMajor, CblasNoTrans, job->tb ? CblasTrans : CblasNoTrans, M, N, K, 1.0,
                 (const double *) job->a->data + oa, K, (const double *) job->b->data + ob, job->tb ? K : N,
                 0.0, (double *) job->out->data + oo, N);
  else
    matmul_generic (job->a, oa, job->b, ob, job->tb, job->out, oo, M, N, K, 0, 0);
}

/* float32 Y [M, N] = A [M, K] · B, with B [K, N] (or Bᵀ [N, K] stored when
 * transposed) packed once when it is a constant input of the node. FALSE
 * (nothing done) for one row at the AVX2 level, which sgemv streams B
 * for faster (0.16 against 0.18 ms for 768 × 2304 on one AMD EPYC core;
 * GPT-2's decoder step 8.3 against 11.3 ms on a Sapphire Rapids core
 * shown as AVX2-only: a one-row ymm tile has two accumulators, one FMA
 * chain each), though not with AVX-512 (its tile reads two panels at
 * once: the decoder step 1 thread 6.4–7.8 against 7.1–7.9 ms, 2 threads
 * 3.3–3.8 against 3.7–4.2); from two rows on the packed product is 2–3
 * times OpenBLAS's; FALSE too at the portable SIMD level, where
 * OpenBLAS's own SSE kernels beat the portable tile, or when out of
 * memory. */
static gboolean
packed_product (GraftKernelContext *ctx, gint64 M, gint64 N, gint64 K, const float *a, const float *b,
                gboolean transposed, float *y, gboolean accumulate, const float *bias)
{
  const GraftKernelTable *kernels = graft_kernel_table ();
  if ((M < 2 && !kernels->avx512) || !kernels->avx2)
    return FALSE;
  g_autoptr(GraftPackedB) owned = NULL;
  const GraftPackedB *packed = graft_packed_b_for (ctx, b, K, N, transposed ? K : N, transposed, &owned);
  if (packed == NULL)
    return FALSE;
  return graft_packed_gemm (ctx, M, a, K, packed, y, N, accumulate, bias);
}

/* bias, float32, broadcasts along out's rows without changing its shape: [N], [1, N], … */
static gboolean
bias_row (const GraftRtTensor *bias, const GraftRtTensor *out)
{
  if (bias->dtype != GRAFT_DTYPE_FLOAT32 || out->rank < 1 || bias->rank < 1 || bias->rank > out->rank ||
      bias->dims[bias->rank - 1] != out->dims[out->rank - 1] || bias->numel != out->dims[out->rank - 1])
    return FALSE;
  return TRUE;
}

/* out = a · b, or a · bᵀ (of b's last two axes) when tb */
static gboolean
matmul_run (GraftKernelContext *ctx, const GraftRtTensor *a, const GraftRtTensor *b, gboolean tb, GraftRtTensor *out,
            GError **error)
{
  MatMulJob job = { 0 };
  if (!setup_matmul (&job, a, b, tb, out, error))
    return FALSE;
  gint64 batches = graft_dims_product (job.batch_dims, 0, job.batch_rank);
  if (out->numel == 0)
    return TRUE;
  if (job.K == 0)
    {
      memset (out->data, 0, out->nbytes);
      return TRUE;
    }
  /* A 2-D B is shared by every row of A, whatever A's batch dims. */
  if (out->dtype == GRAFT_DTYPE_FLOAT32 && b->rank == 2)
    {
      /* the bias the engine offers (the Add reading this MatMul, see
       * graft_kernel_get_residual) goes in first and the product is added
       * to it: one pass less over the output */
      const GraftRtTensor *bias = graft_kernel_get_residual (ctx);
      gboolean with_bias = bias && bias_row (bias, out);
      if (packed_product (ctx, a->numel / job.K, job.N, job.K, a->data, b->data, job.tb, out->data, FALSE,
                          with_bias ? bias->data : NULL))
        {
          if (with_bias)
            graft_kernel_take_residual (ctx);
          return TRUE;
        }
    }
  /* the paths below read B's values (the op asks for them) */
  if (!graft_kernel_need_values (ctx, b->data, error))
    return FALSE;
  /* One big GEMM when b is shared by all batch items and a is contiguous. */
  gboolean b_shared = TRUE;
  for (int d = 0; d < job.batch_rank; d++)
    b_shared &= job.b_bstrides[d] == 0 && job.a_bstrides[d] != 0;
  if (b_shared && batches > 1 && (out->dtype == GRAFT_DTYPE_FLOAT32 || out->dtype == GRAFT_DTYPE_FLOAT64) &&
      a->numel == batches * job.M * job.K)
    {
      job.M *= batches;
      job.batch_rank = 0;
      job.split = ctx;
      matmul_item (0, &job);
      return TRUE;
    }
  if (graft_kernel_split_batches (ctx, batches, job.M * job.N * job.K))
    graft_kernel_parallel_for (ctx, batches, matmul_item, &job);
  else
    {
      job.split = ctx;
      for (gint64 i = 0; i < batches; i++)
        matmul_item (i, &job);
    }
  return TRUE;
}

gboolean
graft_matmul (GraftKernelContext *ctx, const GraftRtTensor *a, const GraftRtTensor *b, GraftRtTensor *out, GError **error)
{
  return matmul_run (ctx, a, b, FALSE, out, error);
}

static gboolean
kernel_matmul (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *out = graft_kernel_output (ctx, 0, error);
  GraftRtTensor *a = graft_kernel_input (ctx, 0), *b = graft_kernel_input (ctx, 1);
  if (out == NULL)
    return FALSE;
  if (a->dtype != b->dtype)
    return graft_kernel_fail (error, "A is %s and B is %s", graft_dtype_to_string (a->dtype), graft_dtype_to_string (b->dtype));
  return matmul_run (ctx, a, b, graft_kernel_input_transposed (ctx, 1), out, error);
}

static gboolean
kernel_matmul_integer (GraftKernelContext *ctx, GError **error)
{
  return graft_matmul_integer_run (ctx, FALSE, error);
}

static gboolean
kernel_qlinear_matmul (GraftKernelContext *ctx, GError **error)
{
  return graft_matmul_integer_run (ctx, TRUE, error);
}

/* ---- Gemm ---- */

static gboolean
infer_gemm (GraftInferContext *ctx, GError **error)
{
  GraftInferValue *a = graft_infer_input (ctx, 0), *b = graft_infer_input (ctx, 1);
  gboolean ta = graft_node_attr_int (ctx->node, "transA", 0), tb = graft_node_attr_int (ctx->node, "transB", 0);
  if (a->shape.rank >= 0 && a->shape.rank != 2)
    return graft_kernel_fail (error, "A must be 2-D");
  /* Each output dim comes from one operand: one of unknown rank leaves
   * the other's dim (batch×512 · ? gives batch×?). */
  gboolean a_known = a->shape.rank == 2, b_known = b->shape.rank == 2;
  GraftShape out;
  graft_shape_init (&out, 2);
  out.dims[0] = a_known ? a->shape.dims[ta ? 1 : 0] : graft_dim_unknown ();
  out.dims[1] = b_known ? b->shape.dims[tb ? 0 : 1] : graft_dim_unknown ();
  GraftDim ka = a_known ? a->shape.dims[ta ? 0 : 1] : graft_dim_unknown ();
  GraftDim kb = b_known ? b->shape.dims[tb ? 1 : 0] : graft_dim_unknown ();
  if (ka.kind == GRAFT_DIM_FIXED && kb.kind == GRAFT_DIM_FIXED && ka.value != kb.value)
    {
      graft_shape_clear (&out);
      return graft_kernel_fail (error, "inner dimensions %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT " differ", ka.value, kb.value);
    }
  graft_infer_set_output (ctx, 0, a->dtype, &out);
  graft_shape_clear (&out);
  return TRUE;
}

/* C (broadcast to M×N) into out, scaled by beta. */
static gboolean
fill_bias (GraftRtTensor *out, GraftRtTensor *c, double beta, GError **error)
{
  const GraftRtTensor *ins[1] = { c };
  GraftBroadcastIter iter;
  GraftShape so, sc, sr;
  graft_rt_tensor_get_shape (out, &so);
  graft_rt_tensor_get_shape (c, &sc);
  gboolean ok = graft_shape_broadcast (&so, &sc, &sr, error) && graft_shape_equal (&so, &sr);
  graft_shape_clear (&so);
  graft_shape_clear (&sc);
  graft_shape_clear (&sr);
  if (!ok)
    {
      if (error && *error == NULL)
        graft_kernel_fail (error, "C does not broadcast to the output");
      return FALSE;
    }
  graft_broadcast_iter_init (&iter, out, ins, 1);
  if (out->dtype == GRAFT_DTYPE_FLOAT32 && c->dtype == GRAFT_DTYPE_FLOAT32)
    for (gint64 i = 0; i < out->numel; i++, graft_broadcast_iter_next (&iter))
      ((float *) out->data)[i] = beta * ((const float *) c->data)[iter.offsets[0]];
  else
    for (gint64 i = 0; i < out->numel; i++, graft_broadcast_iter_next (&iter))
      graft_rt_tensor_set_f64 (out, i, beta * graft_rt_tensor_get_f64 (c, iter.offsets[0]));
  return TRUE;
}

static gboolean
gemm_split (GraftKernelContext *ctx, GraftRtTensor *a, gboolean ta, GraftRtTensor *b, gboolean tb, GraftRtTensor *c,
            double alpha, double beta, GraftRtTensor *out, GError **error)
{
  gint64 M = out->dims[0], N = out->dims[1], K = ta ? a->dims[0] : a->dims[1];
  gboolean has_c = c != NULL && beta != 0;
  /* a bias row (GPT-2's) starts the packed product's sums: no pass
   * writing it into every row of out first */
  gboolean packable = out->dtype == GRAFT_DTYPE_FLOAT32 && !ta && alpha == 1;
  if (packable && has_c && beta == 1 && out->numel > 0 && c->dtype == GRAFT_DTYPE_FLOAT32 && c->numel == N &&
      c->rank >= 1 && c->rank <= 2 && c->dims[c->rank - 1] == N &&
      packed_product (ctx, M, N, K, a->data, b->data, tb, out->data, FALSE, c->data))
    return TRUE;
  if (has_c)
    {
      if (!fill_bias (out, c, beta, error))
        return FALSE;
    }
  else
    memset (out->data, 0, out->nbytes);
  if (out->numel == 0)
    return TRUE;
  if (packable && packed_product (ctx, M, N, K, a->data, b->data, tb, out->data, has_c, NULL))
    return TRUE;
  /* the paths below read B's values (the op asks for them) */
  if (!graft_kernel_need_values (ctx, b->data, error))
    return FALSE;
  if (out->dtype == GRAFT_DTYPE_FLOAT32)
    graft_kernel_sgemm (ctx, ta, tb, M, N, K, alpha, a->data, a->dims[1], b->data, b->dims[1], has_c ? 1.0f : 0.0f,
                        out->data, N);
  else if (out->dtype == GRAFT_DTYPE_FLOAT64)
    cblas_dgemm (CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha,
                 a->data, a->dims[1], b->data, b->dims[1], has_c ? 1.0 : 0.0, out->data, N);
  else
    for (gint64 i = 0; i < M; i++)
      for (gint64 j = 0; j < N; j++)
        {
          double acc = 0;
          for (gint64 k = 0; k < K; k++)
            acc += graft_rt_tensor_get_f64 (a, ta ? k * M + i : i * K + k) * graft_rt_tensor_get_f64 (b, tb ? j * K + k : k * N + j);
          graft_rt_tensor_set_f64 (out, i * N + j, alpha * acc + graft_rt_tensor_get_f64 (out, i * N + j));
        }
  return TRUE;
}

gboolean
graft_gemm (GraftKernelContext *ctx, GraftRtTensor *a, gboolean ta, GraftRtTensor *b, gboolean tb, GraftRtTensor *c,
            double alpha, double beta, GraftRtTensor *out, GError **error)
{
  return gemm_split (ctx, a, ta, b, tb, c, alpha, beta, out, error);
}

void
graft_linear_f32 (GraftKernelContext *ctx, gint64 M, gint64 N, gint64 K, const float *x, const float *w,
                  const float *bias, gint64 bias_size, float *y)
{
  if (M == 0 || N == 0)
    return;
  if (K > 0 && bias_size != 1 && packed_product (ctx, M, N, K, x, w, TRUE, y, FALSE, bias))
    return;
  for (gint64 i = 0; i < M; i++)
    for (gint64 j = 0; j < N; j++)
      y[i * N + j] = bias ? bias[bias_size == N ? j : 0] : 0;
  if (K > 0)
    graft_kernel_sgemm (ctx, FALSE, TRUE, M, N, K, 1.0f, x, K, w, K, 1.0f, y, N);
}

static gboolean
kernel_gemm (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *out = graft_kernel_output (ctx, 0, error);
  if (out == NULL)
    return FALSE;
  return gemm_split (ctx, ctx->inputs[0], graft_node_attr_int (ctx->node, "transA", 0), ctx->inputs[1],
                     graft_node_attr_int (ctx->node, "transB", 0), graft_kernel_input (ctx, 2),
                     graft_node_attr_float (ctx->node, "alpha", 1.0), graft_node_attr_float (ctx->node, "beta", 1.0),
                     out, error);
}

#define OP(name, since, infer, kernel, flags, input_names, output_names) { "onnx::" name, since, 0, infer, kernel, flags, input_names, output_names }

const GraftOpSchema graft_ops_matmul[] = {
  OP ("MatMul", 1, infer_matmul, kernel_matmul, GRAFT_OP_HALF_AS_FLOAT | GRAFT_OP_ASKS_FOR_VALUES, "A B", "Y"),
  OP ("Gemm", 1, infer_gemm, kernel_gemm, GRAFT_OP_HALF_AS_FLOAT | GRAFT_OP_ASKS_FOR_VALUES, "A B C", "Y"),
  OP ("MatMulInteger", 10, infer_matmul, kernel_matmul_integer, 0, "A B a_zero_point b_zero_point", "Y"),
  OP ("QLinearMatMul", 10, infer_matmul, kernel_qlinear_matmul, 0, "a a_scale a_zero_point b b_scale b_zero_point y_scale y_zero_point", "y"),
  { NULL }
};
