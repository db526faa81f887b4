/* Einsum: any contraction the ONNX spec allows (explicit or implicit
 * output, '...' broadcasting, repeated labels as diagonals, labels summed
 * away) as a chain of batched matrix products.
 *
 * float32 operands go through the GEMM kernels: each operand first loses
 * its repeated labels (a diagonal) and the labels no one else needs (a
 * sum); then, left to right, two operands become one product
 * C[batch, M, N] = Σ_K A[batch, M, K] · B[batch, K, N], where batch holds
 * the labels both share and something later needs, K those they share and
 * nothing later needs, M and N the rest of each. An operand already laid
 * out in that order is read in place (B also transposed, [batch, N, K]);
 * otherwise one strided copy puts it there, which is memory speed next to
 * the product (SAM's relative-position "bhwc,hkc->bhwk": one copy of A and
 * of the result around 64 products of 64-deep rows). Other dtypes take
 * the element-wise loop at the end, in double. */
#include <string.h>
#include "runtime/kernels/kernel-util.h"
#include "runtime/kernels/gemm-packed.h"
#include "runtime/kernels/kernel-table.h"

/* ---- the equation ---- */

typedef struct {
  char labels[GRAFT_RT_MAX_RANK * 2];
  int n;
} Term;

#define MAX_TERMS 8

typedef struct {
  Term terms[MAX_TERMS];
  guint n_terms;
  Term out;
  gint64 size[128];   /* every label's size (the largest where 1 broadcasts), -1: unused */
  int count[128];     /* occurrences in the inputs */
} Equation;

static int
count_letters (const char *s, const char *end)
{
  int n = 0;
  for (const char *p = s; p < end; p++)
    n += g_ascii_isalpha (*p);
  return n;
}

/* A term's labels; the ellipsis's axes become digits, numbered from the
 * right so that shorter ellipses broadcast against the trailing axes of
 * longer ones ('0' + ellipsis_rank - er + k). */
static gboolean
parse_term (const char *s, const char *end, int er, int ellipsis_rank, Term *t, GError **error)
{
  gboolean seen_ellipsis = FALSE;
  t->n = 0;
  for (const char *p = s; p < end; p++)
    {
      if (*p == ' ')
        continue;
      if (*p == '.')
        {
          if (seen_ellipsis || p + 2 >= end || p[1] != '.' || p[2] != '.')
            return graft_kernel_fail (error, "malformed ellipsis in the equation");
          if (t->n + er > (int) sizeof t->labels)
            return graft_kernel_fail (error, "the equation's term has too many dimensions");
          for (int k = 0; k < er; k++)
            t->labels[t->n++] = (char) ('0' + ellipsis_rank - er + k);
          seen_ellipsis = TRUE;
          p += 2;
          continue;
        }
      if (!g_ascii_isalpha (*p) || t->n >= (int) sizeof t->labels)
        return graft_kernel_fail (error, "unexpected '%c' in the equation", *p);
      t->labels[t->n++] = *p;
    }
  return TRUE;
}

static gboolean
parse_equation (const char *text, GraftRtTensor *const *inputs, guint n_inputs, Equation *eq, GError **error)
{
  const char *arrow = strstr (text, "->");
  const char *lhs_end = arrow ? arrow : text + strlen (text);
  const char *starts[MAX_TERMS], *ends[MAX_TERMS];
  int ers[MAX_TERMS];
  int ellipsis_rank = 0;
  const char *p = text;

  eq->n_terms = 0;
  while (eq->n_terms < MAX_TERMS)
    {
      const char *comma = memchr (p, ',', lhs_end - p);
      const char *end = comma ? comma : lhs_end;
      starts[eq->n_terms] = p;
      ends[eq->n_terms] = end;
      eq->n_terms++;
      if (!comma)
        break;
      p = comma + 1;
    }
  if (eq->n_terms != n_inputs)
    return graft_kernel_fail (error, "the equation has %u terms for %u inputs", eq->n_terms, n_inputs);
  for (guint t = 0; t < eq->n_terms; t++)
    {
      const GraftRtTensor *in = inputs[t];
      if (in == NULL || in->kind != GRAFT_RT_TENSOR)
        return graft_kernel_fail (error, "input %u is not a tensor", t);
      ers[t] = g_strstr_len (starts[t], ends[t] - starts[t], "...") ? in->rank - count_letters (starts[t], ends[t]) : 0;
      if (ers[t] < 0)
        return graft_kernel_fail (error, "term %u names more axes than its input's %d", t, in->rank);
      ellipsis_rank = MAX (ellipsis_rank, ers[t]);
    }
  if (ellipsis_rank > 10)
    return graft_kernel_fail (error, "the ellipsis stands for %d axes (at most 10)", ellipsis_rank);
  for (guint t = 0; t < eq->n_terms; t++)
    {
      if (!parse_term (starts[t], ends[t], ers[t], ellipsis_rank, &eq->terms[t], error))
        return FALSE;
      if (eq->terms[t].n != inputs[t]->rank)
        return graft_kernel_fail (error, "term %u has %d labels for an input of rank %d", t, eq->terms[t].n,
                                  inputs[t]->rank);
    }

  for (int i = 0; i < 128; i++)
    {
      eq->size[i] = -1;
      eq->count[i] = 0;
    }
  for (guint t = 0; t < eq->n_terms; t++)
    for (int k = 0; k < eq->terms[t].n; k++)
      {
        unsigned char l = eq->terms[t].labels[k];
        gint64 d = inputs[t]->dims[k];
        if (eq->size[l] >= 0 && eq->size[l] != d && d != 1 && eq->size[l] != 1)
          return graft_kernel_fail (error, "label '%c' has sizes %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT, l,
                                    eq->size[l], d);
        if (eq->size[l] < 0 || eq->size[l] == 1)
          eq->size[l] = d;
        eq->count[l]++;
      }

  if (arrow)
    {
      const char *o = arrow + 2;
      if (!parse_term (o, o + strlen (o), strstr (o, "...") ? ellipsis_rank : 0, ellipsis_rank, &eq->out, error))
        return FALSE;
      gboolean seen[128] = { 0 };
      for (int k = 0; k < eq->out.n; k++)
        {
          unsigned char l = eq->out.labels[k];
          if (eq->size[l] < 0)
            return graft_kernel_fail (error, "output label '%c' is not in the inputs", l);
          if (seen[l])
            return graft_kernel_fail (error, "output label '%c' appears twice", l);
          seen[l] = TRUE;
        }
    }
  else
    {
      /* implicit: the ellipsis, then every label used once, in order */
      eq->out.n = 0;
      for (int k = 0; k < ellipsis_rank; k++)
        eq->out.labels[eq->out.n++] = (char) ('0' + k);
      for (int l = 'A'; l <= 'z'; l++)
        if (g_ascii_isalpha (l) && eq->count[l] == 1 && eq->out.n < (int) sizeof eq->out.labels)
          eq->out.labels[eq->out.n++] = (char) l;
    }
  if (eq->out.n > GRAFT_RT_MAX_RANK)
    return graft_kernel_fail (error, "einsum's output has too many dimensions");
  return TRUE;
}

/* ---- float32: operands with distinct labels, and their products ---- */

typedef struct {
  int n;
  char labels[GRAFT_RT_MAX_RANK];
  gint64 dims[GRAFT_RT_MAX_RANK];   /* 1 where a broadcast label is not this operand's */
  const float *data;                /* contiguous, row-major */
  GraftRtTensor *owned;             /* the scratch buffer holding data when this operand made it */
  gboolean is_output;               /* data is the node's output 0 */
} Operand;

static void
operand_clear (Operand *op)
{
  g_clear_pointer (&op->owned, graft_rt_tensor_unref);
}

static int
label_index (const char *labels, int n, char l)
{
  for (int k = 0; k < n; k++)
    if (labels[k] == l)
      return k;
  return -1;
}

/* n floats from the runtime's pool: repeated runs allocate (and fault in)
 * nothing new */
static GraftRtTensor *
alloc_floats (GraftKernelContext *ctx, gint64 n, GError **error)
{
  return graft_kernel_scratch (ctx, MAX (n, 1) * sizeof (float), error);
}

/* dst (contiguous over dims) = src read with strides (0: broadcast) */
static void
gather_strided (float *dst, const float *src, int rank, const gint64 *dims, const gint64 *strides)
{
  gint64 total = graft_dims_product (dims, 0, rank);
  if (total == 0)
    return;
  if (rank == 0)
    {
      dst[0] = src[0];
      return;
    }
  gint64 inner = dims[rank - 1], inner_stride = strides[rank - 1];
  gint64 index[GRAFT_RT_MAX_RANK] = { 0 };
  for (gint64 row = 0; row < total / inner; row++)
    {
      gint64 off = 0;
      for (int d = 0; d < rank - 1; d++)
        off += index[d] * strides[d];
      const float *s = src + off;
      if (inner_stride == 1)
        memcpy (dst, s, inner * sizeof (float));
      else
        for (gint64 i = 0; i < inner; i++)
          dst[i] = s[i * inner_stride];
      dst += inner;
      graft_index_next (index, dims, rank - 1);
    }
}

static void
contiguous_strides (const gint64 *dims, int rank, gint64 *strides)
{
  gint64 s = 1;
  for (int d = rank - 1; d >= 0; d--)
    {
      strides[d] = s;
      s *= dims[d];
    }
}

/* dst = op's values in the label order labels[n], each of size sizes[k]
 * (op's 1-sized axes broadcast). */
static void
operand_write (const Operand *op, const char *labels, const gint64 *sizes, int n, float *dst)
{
  gint64 own[GRAFT_RT_MAX_RANK], strides[GRAFT_RT_MAX_RANK];
  contiguous_strides (op->dims, op->n, own);
  for (int k = 0; k < n; k++)
    {
      int i = label_index (op->labels, op->n, labels[k]);
      strides[k] = i < 0 || op->dims[i] != sizes[k] ? 0 : own[i];
    }
  gather_strided (dst, op->data, n, sizes, strides);
}

static GraftRtTensor *
operand_permuted (GraftKernelContext *ctx, const Operand *op, const char *labels, const gint64 *sizes, int n,
                  GError **error)
{
  GraftRtTensor *dst = alloc_floats (ctx, graft_dims_product (sizes, 0, n), error);
  if (dst != NULL)
    operand_write (op, labels, sizes, n, dst->data);
  return dst;
}

/* Input t as an operand: repeated labels taken along their diagonal, the
 * labels nothing else needs (not in the output, not in another input)
 * summed; in place when there are none. */
static gboolean
operand_from_input (GraftKernelContext *ctx, const Equation *eq, guint t, const GraftRtTensor *in, Operand *op,
                    GError **error)
{
  const Term *term = &eq->terms[t];
  gint64 in_strides[GRAFT_RT_MAX_RANK];
  contiguous_strides (in->dims, in->rank, in_strides);
  int n_summed = 0;
  char summed[GRAFT_RT_MAX_RANK * 2];
  gint64 summed_dims[GRAFT_RT_MAX_RANK], summed_strides[GRAFT_RT_MAX_RANK];
  gint64 strides[GRAFT_RT_MAX_RANK];
  gboolean in_place = TRUE;

  memset (op, 0, sizeof *op);
  for (int k = 0; k < term->n; k++)
    {
      char l = term->labels[k];
      if (label_index (term->labels, k, l) >= 0)
        {
          /* a repeat: the same index walks both axes */
          int j = label_index (op->labels, op->n, l);
          gint64 *dims_j = j >= 0 ? &op->dims[j] : &summed_dims[label_index (summed, n_summed, l)];
          gint64 *stride_j = j >= 0 ? &strides[j] : &summed_strides[label_index (summed, n_summed, l)];
          if (*dims_j != in->dims[k])
            return graft_kernel_fail (error, "label '%c' repeats in term %u with sizes %" G_GINT64_FORMAT
                                      " and %" G_GINT64_FORMAT, l, t, *dims_j, in->dims[k]);
          *stride_j += in_strides[k];
          in_place = FALSE;
          continue;
        }
      /* needed by the output or another input (count[] would also count
       * this term's own repeats) */
      gboolean needed = label_index (eq->out.labels, eq->out.n, l) >= 0;
      for (guint u = 0; u < eq->n_terms && !needed; u++)
        needed = u != t && label_index (eq->terms[u].labels, eq->terms[u].n, l) >= 0;
      if (needed)
        {
          op->labels[op->n] = l;
          op->dims[op->n] = in->dims[k];
          strides[op->n] = in_strides[k];
          op->n++;
        }
      else
        {
          summed[n_summed] = l;
          summed_dims[n_summed] = in->dims[k];
          summed_strides[n_summed] = in_strides[k];
          n_summed++;
          in_place = FALSE;
        }
    }
  if (in_place)
    {
      op->data = in->data;
      return TRUE;
    }
  gint64 total = graft_dims_product (op->dims, 0, op->n);
  gint64 inner = graft_dims_product (summed_dims, 0, n_summed);
  op->owned = alloc_floats (ctx, total, error);
  if (op->owned == NULL)
    return FALSE;
  op->data = op->owned->data;
  float *dst = op->owned->data;
  const float *src = in->data;
  gint64 index[GRAFT_RT_MAX_RANK] = { 0 };
  for (gint64 i = 0; i < total; i++)
    {
      gint64 base = 0;
      for (int d = 0; d < op->n; d++)
        base += index[d] * strides[d];
      double acc = 0;
      gint64 sindex[GRAFT_RT_MAX_RANK] = { 0 };
      for (gint64 s = 0; s < inner; s++)
        {
          gint64 off = base;
          for (int d = 0; d < n_summed; d++)
            off += sindex[d] * summed_strides[d];
          acc += src[off];
          graft_index_next (sindex, summed_dims, n_summed);
        }
      dst[i] = (float) acc;
      graft_index_next (index, op->dims, op->n);
    }
  return TRUE;
}

/* The products of one contraction: for every index of the loop labels,
 * C [M, N] (rows ldc apart) = A [M, K] (rows lda apart) · B [K, N] (or
 * [N, K] when tb), each matrix at the loop index's offset. */
typedef struct {
  gint64 M, N, K, lda, ldc;
  int n_loops;
  gint64 loop_dims[GRAFT_RT_MAX_RANK];
  gint64 a_steps[GRAFT_RT_MAX_RANK], b_steps[GRAFT_RT_MAX_RANK], c_steps[GRAFT_RT_MAX_RANK];
  const float *a, *b;
  gboolean tb;
  float *c;
  GraftKernelContext *split;   /* non-NULL: each product split over its pool */
} BatchedGemm;

static void
batched_gemm_item (gint64 i, gpointer data)
{
  const BatchedGemm *job = data;
  gint64 M = job->M, N = job->N, K = job->K;
  gint64 oa = 0, ob = 0, oc = 0;
  for (int d = job->n_loops - 1; d >= 0; d--)
    {
      gint64 x = i % job->loop_dims[d];
      i /= job->loop_dims[d];
      oa += x * job->a_steps[d];
      ob += x * job->b_steps[d];
      oc += x * job->c_steps[d];
    }
  const float *a = job->a + oa, *b = job->b + ob;
  float *c = job->c + oc;
  /* Graft's own micro-kernels from two rows on (see matmul.c's
   * packed_product); B is packed for each product since it changes */
  if (M >= 2 && graft_kernel_table ()->avx2)
    {
      g_autoptr(GraftPackedB) packed = graft_packed_b_new (b, K, N, job->tb ? K : N, job->tb);
      if (packed != NULL && graft_packed_gemm (job->split, M, a, job->lda, packed, c, job->ldc, FALSE, NULL))
        return;
    }
  graft_kernel_sgemm (job->split, FALSE, job->tb, M, N, K, 1.0f, a, job->lda, b, job->tb ? K : N, 0.0f, c,
                      job->ldc);
}

static gboolean
labels_equal (const char *a, const char *b, int n)
{
  return memcmp (a, b, n) == 0;
}

/* op is laid out as labels[n] with every size sizes[k] (no broadcast)? */
static gboolean
operand_is (const Operand *op, const char *labels, const gint64 *sizes, int n)
{
  if (op->n != n || !labels_equal (op->labels, labels, n))
    return FALSE;
  for (int k = 0; k < n; k++)
    if (op->dims[k] != sizes[k])
      return FALSE;
  return TRUE;
}

/* One contraction's labels: batch (in both, kept), K (in both, summed),
 * M (a's own), N (b's own); batch, K and M in a's order, N in b's. */
typedef struct {
  char batch[GRAFT_RT_MAX_RANK], ks[GRAFT_RT_MAX_RANK], ms[GRAFT_RT_MAX_RANK], ns[GRAFT_RT_MAX_RANK];
  int n_batch, n_k, n_m, n_n;
} Split;

static gboolean
operand_broadcasts (const Equation *eq, const Operand *op)
{
  for (int k = 0; k < op->n; k++)
    if (op->dims[k] != eq->size[(unsigned char) op->labels[k]])
      return TRUE;
  return FALSE;
}

/* Plans the products reading a and b where they lie: a ends with the K
 * labels, and a run of its own labels elsewhere (the largest) makes the
 * rows of each product, its other labels are looped over; b ends with its
 * K and N labels ([K, N] or [N, K]). The result is laid out as a's labels
 * but K, then N. SAM's "bhwc,hkc->bhwk" loops over b and h with rows w,
 * "bhwc,wkc->bhwk" over w with rows b·h (64·C floats apart), and both
 * results are already the output. FALSE when the layouts do not allow
 * it, or when the rows would be too few for the products to pay. */
static gboolean
plan_in_place (const Equation *eq, const Operand *a, const Operand *b, const Split *sp, BatchedGemm *job,
               Operand *out)
{
  if (operand_broadcasts (eq, a) || operand_broadcasts (eq, b) || a->n < sp->n_k ||
      !labels_equal (a->labels + a->n - sp->n_k, sp->ks, sp->n_k))
    return FALSE;
  int tail = b->n - sp->n_k - sp->n_n;
  if (tail < 0)
    return FALSE;
  if (labels_equal (b->labels + tail, sp->ks, sp->n_k) && labels_equal (b->labels + tail + sp->n_k, sp->ns, sp->n_n))
    job->tb = FALSE;
  else if (labels_equal (b->labels + tail, sp->ns, sp->n_n) &&
           labels_equal (b->labels + tail + sp->n_n, sp->ks, sp->n_k))
    job->tb = TRUE;
  else
    return FALSE;
  /* the rows: the run of a's own labels with the most rows */
  int kept = a->n - sp->n_k, rows_start = kept, rows_end = kept;
  gint64 rows = 1;
  for (int i = 0; i < kept;)
    {
      if (label_index (b->labels, b->n, a->labels[i]) >= 0)
        {
          i++;
          continue;
        }
      int j = i;
      while (j < kept && label_index (b->labels, b->n, a->labels[j]) < 0)
        j++;
      gint64 run = graft_dims_product (a->dims, i, j);
      if (rows_start == rows_end || run > rows)
        {
          rows_start = i;
          rows_end = j;
          rows = run;
        }
      i = j;
    }
  if (rows < 16 && sp->n_m > rows_end - rows_start)
    return FALSE;   /* loops over a's own labels around products of few rows */

  gint64 a_strides[GRAFT_RT_MAX_RANK], b_strides[GRAFT_RT_MAX_RANK];
  contiguous_strides (a->dims, a->n, a_strides);
  contiguous_strides (b->dims, b->n, b_strides);
  out->n = kept + sp->n_n;
  memcpy (out->labels, a->labels, kept);
  memcpy (out->dims, a->dims, kept * sizeof (gint64));
  memcpy (out->labels + kept, sp->ns, sp->n_n);
  for (int i = 0; i < sp->n_n; i++)
    out->dims[kept + i] = eq->size[(unsigned char) sp->ns[i]];
  gint64 out_strides[GRAFT_RT_MAX_RANK];
  contiguous_strides (out->dims, out->n, out_strides);
  job->M = rows;
  job->K = graft_dims_product (a->dims, kept, a->n);
  job->N = graft_dims_product (out->dims, kept, out->n);
  job->lda = rows_end > rows_start ? a_strides[rows_end - 1] : job->K;
  job->ldc = rows_end > rows_start ? out_strides[rows_end - 1] : job->N;
  job->n_loops = 0;
  for (int i = 0; i < kept; i++)
    {
      if (i >= rows_start && i < rows_end)
        continue;
      int j = label_index (b->labels, b->n, a->labels[i]);
      job->loop_dims[job->n_loops] = a->dims[i];
      job->a_steps[job->n_loops] = a_strides[i];
      job->b_steps[job->n_loops] = j < 0 ? 0 : b_strides[j];
      job->c_steps[job->n_loops] = out_strides[i];
      job->n_loops++;
    }
  job->a = a->data;
  job->b = b->data;
  return TRUE;
}

/* Plans the products over copies of a as [batch, M, K] and of b as
 * [batch, K, N] where they are not laid out so already (b also as
 * [batch, N, K]); the result is [batch, M, N]. */
static gboolean
plan_copies (GraftKernelContext *ctx, const Equation *eq, const Operand *a, const Operand *b, const Split *sp,
             BatchedGemm *job, Operand *out, GraftRtTensor **a_copy, GraftRtTensor **b_copy, GError **error)
{
  char a_order[GRAFT_RT_MAX_RANK], b_order[GRAFT_RT_MAX_RANK], bt_order[GRAFT_RT_MAX_RANK];
  gint64 a_sizes[GRAFT_RT_MAX_RANK], b_sizes[GRAFT_RT_MAX_RANK], bt_sizes[GRAFT_RT_MAX_RANK];
  int na = 0, nb = 0, nbt = 0;
#define PUT(order, sizes, n, list, count) \
  for (int i_ = 0; i_ < (count); i_++) { order[n] = list[i_]; sizes[n] = eq->size[(unsigned char) list[i_]]; n++; }
  PUT (a_order, a_sizes, na, sp->batch, sp->n_batch);
  PUT (a_order, a_sizes, na, sp->ms, sp->n_m);
  PUT (a_order, a_sizes, na, sp->ks, sp->n_k);
  PUT (b_order, b_sizes, nb, sp->batch, sp->n_batch);
  PUT (b_order, b_sizes, nb, sp->ks, sp->n_k);
  PUT (b_order, b_sizes, nb, sp->ns, sp->n_n);
  PUT (bt_order, bt_sizes, nbt, sp->batch, sp->n_batch);
  PUT (bt_order, bt_sizes, nbt, sp->ns, sp->n_n);
  PUT (bt_order, bt_sizes, nbt, sp->ks, sp->n_k);
#undef PUT
  int n_batch = sp->n_batch, n_m = sp->n_m, n_n = sp->n_n;
  gint64 batches = graft_dims_product (a_sizes, 0, n_batch);
  job->M = graft_dims_product (a_sizes, n_batch, n_batch + n_m);
  job->K = graft_dims_product (a_sizes, n_batch + n_m, na);
  job->N = graft_dims_product (b_sizes, n_batch + sp->n_k, nb);
  job->lda = job->K;
  job->ldc = job->N;
  job->n_loops = 1;
  job->loop_dims[0] = batches;
  job->a_steps[0] = job->M * job->K;
  job->b_steps[0] = job->K * job->N;
  job->c_steps[0] = job->M * job->N;

  out->n = n_batch + n_m + n_n;
  memcpy (out->labels, a_order, n_batch + n_m);
  memcpy (out->dims, a_sizes, (n_batch + n_m) * sizeof (gint64));
  memcpy (out->labels + n_batch + n_m, sp->ns, n_n);
  for (int i = 0; i < n_n; i++)
    out->dims[n_batch + n_m + i] = eq->size[(unsigned char) sp->ns[i]];

  job->a = a->data;
  job->b = b->data;
  job->tb = FALSE;
  if (batches * job->M * job->N * job->K == 0)
    return TRUE;   /* nothing to read */
  if (!operand_is (a, a_order, a_sizes, na))
    {
      if ((*a_copy = operand_permuted (ctx, a, a_order, a_sizes, na, error)) == NULL)
        return FALSE;
      job->a = (*a_copy)->data;
    }
  if (operand_is (b, bt_order, bt_sizes, nbt) && !operand_is (b, b_order, b_sizes, nb))
    job->tb = TRUE;
  else if (!operand_is (b, b_order, b_sizes, nb))
    {
      if ((*b_copy = operand_permuted (ctx, b, b_order, b_sizes, nb, error)) == NULL)
        return FALSE;
      job->b = (*b_copy)->data;
    }
  return TRUE;
}

/* The product of a and b over the labels that keep[] does not hold. When
 * it comes out laid out as final (the last product, in the output's
 * order), it is written into output 0 and out->is_output says so. */
static gboolean
contract (GraftKernelContext *ctx, const Equation *eq, const Operand *a, const Operand *b, const gboolean *keep,
          const Term *final, Operand *out, GError **error)
{
  Split sp = { .n_batch = 0 };
  for (int i = 0; i < a->n; i++)
    {
      char l = a->labels[i];
      gboolean shared = label_index (b->labels, b->n, l) >= 0;
      if (shared && keep[(unsigned char) l])
        sp.batch[sp.n_batch++] = l;
      else if (shared)
        sp.ks[sp.n_k++] = l;
      else
        sp.ms[sp.n_m++] = l;
    }
  for (int i = 0; i < b->n; i++)
    if (label_index (a->labels, a->n, b->labels[i]) < 0)
      sp.ns[sp.n_n++] = b->labels[i];
  if (sp.n_batch + sp.n_m + sp.n_n > GRAFT_RT_MAX_RANK)
    return graft_kernel_fail (error, "einsum's intermediate product has more than %d dimensions", GRAFT_RT_MAX_RANK);

  memset (out, 0, sizeof *out);
  BatchedGemm job = { 0 };
  g_autoptr(GraftRtTensor) a_copy = NULL;
  g_autoptr(GraftRtTensor) b_copy = NULL;
  if (!plan_in_place (eq, a, b, &sp, &job, out))
    {
      memset (out, 0, sizeof *out);
      memset (&job, 0, sizeof job);
      if (!plan_copies (ctx, eq, a, b, &sp, &job, out, &a_copy, &b_copy, error))
        return FALSE;
    }
  gint64 total = graft_dims_product (out->dims, 0, out->n);
  if (final != NULL && final->n == out->n && labels_equal (final->labels, out->labels, out->n))
    {
      GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_FLOAT32, out->n, out->dims, error);
      if (y == NULL)
        return FALSE;
      out->data = y->data;
      out->is_output = TRUE;
      job.c = y->data;
    }
  else
    {
      out->owned = alloc_floats (ctx, total, error);
      if (out->owned == NULL)
        return FALSE;
      out->data = job.c = out->owned->data;
    }
  if (total == 0)
    return TRUE;
  if (job.K == 0)
    {
      memset (job.c, 0, total * sizeof (float));
      return TRUE;
    }
  gint64 products = graft_dims_product (job.loop_dims, 0, job.n_loops);
  job.split = graft_kernel_split_batches (ctx, products, job.M * job.N * job.K) ? NULL : ctx;
  if (job.split == NULL)
    graft_kernel_parallel_for (ctx, products, batched_gemm_item, &job);
  else
    for (gint64 i = 0; i < products; i++)
      batched_gemm_item (i, &job);
  return TRUE;
}

static gboolean
einsum_float32 (GraftKernelContext *ctx, const Equation *eq, GraftRtTensor *const *inputs, GError **error)
{
  Operand ops[MAX_TERMS] = { 0 };
  guint made = 0;
  gboolean ok = TRUE;

  for (; made < eq->n_terms && ok; made++)
    ok = operand_from_input (ctx, eq, made, inputs[made], &ops[made], error);
  Operand current = ops[0];
  ops[0].owned = NULL;
  for (guint t = 1; t < eq->n_terms && ok; t++)
    {
      /* what the output or a later operand still needs */
      gboolean keep[128] = { 0 };
      for (int k = 0; k < eq->out.n; k++)
        keep[(unsigned char) eq->out.labels[k]] = TRUE;
      for (guint u = t + 1; u < eq->n_terms; u++)
        for (int k = 0; k < ops[u].n; k++)
          keep[(unsigned char) ops[u].labels[k]] = TRUE;
      Operand product;
      const Term *final = t + 1 == eq->n_terms ? &eq->out : NULL;
      ok = contract (ctx, eq, &current, &ops[t], keep, final, &product, error);
      if (ok)
        {
          operand_clear (&current);
          current = product;
        }
    }
  if (ok && !current.is_output)
    {
      gint64 dims[GRAFT_RT_MAX_RANK];
      for (int k = 0; k < eq->out.n; k++)
        dims[k] = eq->size[(unsigned char) eq->out.labels[k]];
      GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_FLOAT32, eq->out.n, dims, error);
      ok = y != NULL;
      if (ok && y->numel > 0)
        operand_write (&current, eq->out.labels, dims, eq->out.n, y->data);
    }
  operand_clear (&current);
  for (guint t = 0; t < made; t++)
    operand_clear (&ops[t]);
  return ok;
}

/* ---- any dtype: one loop over every label, in double ---- */

static gboolean
einsum_elementwise (GraftKernelContext *ctx, const Equation *eq, GraftRtTensor *const *inputs, GError **error)
{
  const Term *out_term = &eq->out;
  char all[128];
  int n_all = 0;
  gboolean in_out[128] = { 0 };
  for (int k = 0; k < out_term->n; k++)
    {
      all[n_all++] = out_term->labels[k];
      in_out[(unsigned char) out_term->labels[k]] = TRUE;
    }
  for (int l = 0; l < 128; l++)
    if (eq->size[l] >= 0 && !in_out[l])
      all[n_all++] = (char) l;
  gint64 dims[GRAFT_RT_MAX_RANK];
  for (int k = 0; k < out_term->n; k++)
    dims[k] = eq->size[(unsigned char) out_term->labels[k]];
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, inputs[0]->dtype, out_term->n, dims, error);
  if (y == NULL)
    return FALSE;
  gint64 total = 1;
  for (int k = 0; k < n_all; k++)
    total *= MAX (eq->size[(unsigned char) all[k]], 0);
  gint64 idx[128] = { 0 };
  g_autofree double *acc = g_new0 (double, MAX (y->numel, 1));
  for (gint64 it = 0; it < total; it++)
    {
      double prod = 1;
      for (guint t = 0; t < eq->n_terms; t++)
        {
          const GraftRtTensor *in = inputs[t];
          gint64 off = 0;
          for (int k = 0; k < eq->terms[t].n; k++)
            off = off * in->dims[k] + (in->dims[k] == 1 ? 0 : idx[(unsigned char) eq->terms[t].labels[k]]);
          prod *= graft_rt_tensor_get_f64 (in, off);
        }
      gint64 o = 0;
      for (int k = 0; k < out_term->n; k++)
        o = o * dims[k] + idx[(unsigned char) out_term->labels[k]];
      acc[o] += prod;
      for (int k = n_all - 1; k >= 0; k--)
        {
          unsigned char l = all[k];
          if (++idx[l] < eq->size[l])
            break;
          idx[l] = 0;
        }
    }
  for (gint64 i = 0; i < y->numel; i++)
    graft_rt_tensor_set_f64 (y, i, acc[i]);
  return TRUE;
}

gboolean
graft_einsum (GraftKernelContext *ctx, const char *equation, GraftRtTensor *const *inputs, guint n_inputs,
              GError **error)
{
  Equation eq;
  if (n_inputs == 0 || n_inputs > MAX_TERMS)
    return graft_kernel_fail (error, "einsum takes 1 to %d operands, not %u", MAX_TERMS, n_inputs);
  if (!parse_equation (equation, inputs, n_inputs, &eq, error))
    return FALSE;
  gboolean float32 = TRUE;
  for (guint t = 0; t < eq.n_terms; t++)
    float32 &= inputs[t]->dtype == GRAFT_DTYPE_FLOAT32;
  return float32 ? einsum_float32 (ctx, &eq, inputs, error) : einsum_elementwise (ctx, &eq, inputs, error);
}

static gboolean
kernel_einsum (GraftKernelContext *ctx, GError **error)
{
  return graft_einsum (ctx, graft_node_attr_string (ctx->node, "equation", ""), ctx->inputs, ctx->n_inputs, error);
}

#define OP(name, since, infer, kernel, flags, input_names, output_names) { "onnx::" name, since, 0, infer, kernel, flags, input_names, output_names }

const GraftOpSchema graft_ops_einsum[] = {
  OP ("Einsum", 12, NULL, kernel_einsum, GRAFT_OP_HALF_AS_FLOAT, "Inputs...", "Output"),
  { NULL }
};
