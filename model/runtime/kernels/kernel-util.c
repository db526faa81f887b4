#include "runtime/kernels/kernel-util.h"

#include <cblas.h>
#include <string.h>

gint64
graft_dims_product (const gint64 *dims, int from, int to)
{
  gint64 p = 1;
  for (int i = from; i < to; i++)
    p *= dims[i];
  return p;
}

/* Strides of t aligned to the output rank, 0 along broadcast axes. */
static void
aligned_strides (const GraftRtTensor *t, const GraftRtTensor *out, gint64 *strides)
{
  gint64 own[GRAFT_RT_MAX_RANK];
  graft_rt_strides (t->rank, t->dims, own);
  int shift = out->rank - t->rank;
  for (int i = 0; i < out->rank; i++)
    {
      int j = i - shift;
      strides[i] = (j < 0 || t->dims[j] == 1) ? 0 : own[j];
    }
}

void
graft_broadcast_binary (const GraftRtTensor *a, const GraftRtTensor *b, GraftRtTensor *out,
                        GraftBinaryRun run, gconstpointer user_data)
{
  gsize ea = graft_rt_dtype_size (a->dtype), eb = graft_rt_dtype_size (b->dtype);
  gsize eo = graft_rt_dtype_size (out->dtype);
  const char *pa = a->data, *pb = b->data;
  char *po = out->data;

  if (out->numel == 0)
    return;
  if (a->numel == out->numel && b->numel == out->numel)
    {
      run (pa, 1, pb, 1, po, out->numel, user_data);
      return;
    }
  if (a->numel == out->numel && b->numel == 1)
    {
      run (pa, 1, pb, 0, po, out->numel, user_data);
      return;
    }
  if (a->numel == 1 && b->numel == out->numel)
    {
      run (pa, 0, pb, 1, po, out->numel, user_data);
      return;
    }

  int rank = out->rank;
  gint64 sa[GRAFT_RT_MAX_RANK], sb[GRAFT_RT_MAX_RANK];
  aligned_strides (a, out, sa);
  aligned_strides (b, out, sb);

  /* Merge trailing axes where both inputs are contiguous or both fixed, so
   * that the inner run is as long as possible. */
  gint64 inner = out->dims[rank - 1];
  gint64 ia = sa[rank - 1], ib = sb[rank - 1];
  int outer_rank = rank - 1;
  while (outer_rank > 0)
    {
      int d = outer_rank - 1;
      gboolean a_ok = (ia == 0 && sa[d] == 0) || (ia == 1 && sa[d] == inner);
      gboolean b_ok = (ib == 0 && sb[d] == 0) || (ib == 1 && sb[d] == inner);
      if (!a_ok || !b_ok)
        break;
      inner *= out->dims[d];
      outer_rank--;
    }

  gint64 index[GRAFT_RT_MAX_RANK] = { 0 };
  gint64 outer = graft_dims_product (out->dims, 0, outer_rank);
  gint64 off_a = 0, off_b = 0;
  for (gint64 o = 0; o < outer; o++)
    {
      run (pa + off_a * ea, ia, pb + off_b * eb, ib, po + o * inner * eo, inner, user_data);
      for (int d = outer_rank - 1; d >= 0; d--)
        {
          index[d]++;
          off_a += sa[d];
          off_b += sb[d];
          if (index[d] < out->dims[d])
            break;
          off_a -= sa[d] * index[d];
          off_b -= sb[d] * index[d];
          index[d] = 0;
        }
    }
}

void
graft_broadcast_iter_init (GraftBroadcastIter *iter, const GraftRtTensor *out,
                           const GraftRtTensor *const *inputs, guint n)
{
  memset (iter, 0, sizeof *iter);
  iter->rank = out->rank;
  iter->n = MIN (n, 8);
  memcpy (iter->dims, out->dims, sizeof (gint64) * out->rank);
  for (guint k = 0; k < iter->n; k++)
    aligned_strides (inputs[k], out, iter->strides[k]);
}

static inline void
broadcast_iter_step (GraftBroadcastIter *iter, int from)
{
  for (int d = from; d >= 0; d--)
    {
      iter->index[d]++;
      for (guint k = 0; k < iter->n; k++)
        iter->offsets[k] += iter->strides[k][d];
      if (iter->index[d] < iter->dims[d])
        return;
      for (guint k = 0; k < iter->n; k++)
        iter->offsets[k] -= iter->strides[k][d] * iter->index[d];
      iter->index[d] = 0;
    }
}

void
graft_broadcast_iter_next_row (GraftBroadcastIter *iter)
{
  broadcast_iter_step (iter, iter->rank - 2);
}

void
graft_broadcast_iter_next (GraftBroadcastIter *iter)
{
  broadcast_iter_step (iter, iter->rank - 1);
}

gboolean
graft_infer_broadcast_inputs (GraftInferContext *ctx, guint first, guint n, GraftShape *out, GError **error)
{
  GraftShape acc;
  graft_shape_init (&acc, 0);
  for (guint i = first; i < first + n && i < ctx->n_inputs; i++)
    {
      GraftInferValue *in = graft_infer_input (ctx, i);
      GraftShape next;
      if (in == NULL)
        continue;
      if (!graft_shape_broadcast (&acc, &in->shape, &next, error))
        {
          graft_shape_clear (&acc);
          return FALSE;
        }
      graft_shape_clear (&acc);
      acc = next;
    }
  *out = acc;
  return TRUE;
}

gboolean
graft_rt_tensor_read_ints (const GraftRtTensor *t, gint64 *values, gint64 max, gint64 *n)
{
  if (t == NULL || t->kind != GRAFT_RT_TENSOR || t->numel > max)
    return FALSE;
  for (gint64 i = 0; i < t->numel; i++)
    values[i] = graft_rt_tensor_get_i64 (t, i);
  *n = t->numel;
  return TRUE;
}

typedef struct {
  gboolean ta, tb, by_rows;
  gint64 M, N, K, lda, ldb, ldc, step;
  float alpha, beta;
  const float *a, *b;
  float *c;
} SgemmJob;

static void
sgemm_block (gint64 index, gpointer data)
{
  const SgemmJob *job = data;
  gint64 total = job->by_rows ? job->M : job->N;
  gint64 lo = index * job->step, n = MIN (job->step, total - lo);
  const float *a = job->a, *b = job->b;
  float *c = job->c;
  gint64 M = job->M, N = job->N;
  if (job->by_rows)
    {
      a += job->ta ? lo : lo * job->lda;
      c += lo * job->ldc;
      M = n;
    }
  else
    {
      b += job->tb ? lo * job->ldb : lo;
      c += lo;
      N = n;
    }
  if (M == 1)
    {
      /* One row (a decoder's step): OpenBLAS 0.3.21's sgemm would pack all
       * of B for it; sgemv streams B once. Its output is zeroed first, as
       * BLAS lets gemv read y even when beta is 0. */
      if (job->beta == 0)
        memset (c, 0, N * sizeof (float));
      if (job->tb)
        cblas_sgemv (CblasRowMajor, CblasNoTrans, N, job->K, job->alpha, b, job->ldb, a, job->ta ? job->lda : 1,
                     job->beta, c, 1);
      else
        cblas_sgemv (CblasRowMajor, CblasTrans, job->K, N, job->alpha, b, job->ldb, a, job->ta ? job->lda : 1,
                     job->beta, c, 1);
      return;
    }
  cblas_sgemm (CblasRowMajor, job->ta ? CblasTrans : CblasNoTrans, job->tb ? CblasTrans : CblasNoTrans,
               M, N, job->K, job->alpha, a, job->lda, b, job->ldb, job->beta, c, job->ldc);
}

void
graft_kernel_sgemm (GraftKernelContext *ctx, gboolean ta, gboolean tb, gint64 M, gint64 N, gint64 K,
                    float alpha, const float *a, gint64 lda, const float *b, gint64 ldb,
                    float beta, float *c, gint64 ldc)
{
  SgemmJob job = { ta, tb, FALSE, M, N, K, lda, ldb, ldc, 0, alpha, beta, a, b, c };
  gint64 threads = graft_kernel_get_n_threads (ctx);
  /* below ~1 M multiply-adds a pool wake-up costs more than it saves */
  if (threads > 1 && M * N * K >= (1 << 20))
    {
      /* column blocks in multiples of 16 (the width of the AVX-512 kernel),
       * row blocks (multiples of 4) when A is the larger operand or C is
       * narrow: a column block packs all of A, a row block all of B */
      gint64 cols = (N + threads - 1) / threads, rows = (M + threads - 1) / threads;
      if (cols >= 64 && (N >= M || rows < 16))
        job.step = (cols + 15) / 16 * 16;
      else if (rows >= 16)
        {
          job.by_rows = TRUE;
          job.step = (rows + 3) / 4 * 4;
        }
    }
  if (job.step == 0)
    {
      job.step = N;
      sgemm_block (0, &job);
      return;
    }
  gint64 total = job.by_rows ? M : N;
  graft_kernel_parallel_for (ctx, (total + job.step - 1) / job.step, sgemm_block, &job);
}
