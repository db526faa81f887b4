/* The packed-B GEMM (runtime/kernels/gemm-packed.c) against a direct
 * double-precision product, at each SIMD level (portable, avx2, avx512;
 * a level this CPU lacks is skipped) and with one and two threads:
 * - graft_packed_gemm itself on rows 1, 2, 5, 7, 13 and more than a row
 *   block, widths and depths that are not multiples of the tile, K = 1,
 *   depths split into K blocks (one row tile: the whole depth at once,
 *   across several panels; several row tiles: deeper K blocks; two or
 *   three row tiles, the first asking for the next slice), products
 *   one tile wide (A read unpacked) over several K blocks, B packed from
 *   B and from Bᵀ, row strides
 *   wider than the matrices, accumulation into C, and sums started from
 *   a bias row;
 * - the MatMul and Gemm kernels that use it: MatMul by a constant B
 *   (batch-broadcast over A's batch dim, run twice: the second run reads
 *   the packed B kept on the node), Gemm with transB and a bias, and
 *   MatMul by a B that is a graph input (packed per run);
 * - MatMul by a Transpose of B's last two axes, which the engine skips so
 *   that MatMul reads B transposed: 2-D (packed from Bᵀ) and batched with
 *   batch dims broadcast (sgemm), and the same with the Transpose's
 *   output also a graph output (then it runs).
 * And in bfloat16 (where the CPU has AVX512_BF16): graft_packed_gemm on a
 * B packed in bf16 against the double product of both operands rounded
 * to bf16 (what the tiles multiply: the sums are float32), on the same
 * shapes, one and two threads; the kernels at GRAFT_PRECISION_BF16, where
 * products by a constant round both operands and products of fed values
 * stay float32; and the precision refused at a level without bf16 tiles. */
#include <math.h>
#include <string.h>
#include "runtime/kernels/gemm-packed.h"
#include "runtime/runtime.h"
#include "float-graph.h"
#include "simd-levels.h"
#include "../test-sanitized.h"

typedef struct {
  gint64 M, K, N;
} Shape;

static const Shape shapes[] = {
  { 1, 1, 1 }, { 1, 64, 17 }, { 2, 1, 16 }, { 5, 3, 33 }, { 7, 37, 32 }, { 13, 300, 50 }, { 13, 600, 70 },
  { 6, 16, 48 }, { 12, 257, 31 }, { 1, 768, 80 }, { 100, 40, 17 }, { 250, 20, 40 }, { 37, 513, 129 },
  { 30, 500, 32 }, { 26, 400, 9 }, { 2, 960, 70 }, { 6, 530, 100 },
  /* two and three AVX2 row tiles over several K blocks and panels: the first tile asks for the next slice */
  { 17, 700, 70 }, { 8, 520, 40 },
  /* one row tile over a packed B of 2 MB and more: the whole depth in one pass at AVX-512 */
  { 2, 1100, 500 }, { 11, 1030, 530 }, { 1, 1100, 480 }, { 6, 1030, 520 },
  /* several row tiles over a B of 2 MB and more: K blocks of deep_kc at AVX-512 (two here, odd widths) */
  { 32, 1500, 400 }, { 25, 1030, 530 },
};

/* Products above this many multiplications are left out under
 * AddressSanitizer: the two largest shapes' double references took the
 * test past its time limit there, and the smaller 2 MB shapes still
 * take the same allocations (B in 2 MB pages) under its eye. */
#define SANITIZED_MAX_PRODUCT 8000000

static float
value_at (gint64 i, gint64 salt)
{
  return (float) (((i + salt) * 2654435761u) % 1000) / 500.0f - 1.0f;
}

static gboolean
is_close (const Shape *s, double got, double want)
{
  return fabs (got - want) <= 1e-5 * (1 + sqrt ((double) s->K)) * MAX (1, fabs (want));
}

static void
check_close (const char *what, const Shape *s, gint64 i, gint64 j, double got, double want)
{
  if (!is_close (s, got, want))
    g_error ("%s at %s, M %" G_GINT64_FORMAT " K %" G_GINT64_FORMAT " N %" G_GINT64_FORMAT ": [%" G_GINT64_FORMAT
             ",%" G_GINT64_FORMAT "] = %g, want %g", what, graft_simd_level_to_string (graft_simd_get_level ()),
             s->M, s->K, s->N, i, j, got, want);
}

/* graft_packed_gemm on one thread, B packed either way, C accumulated or
 * not; with zero_rows, two rows of A in three all zero (which the product
 * leaves out when there are enough of them). */
static void
check_direct (const Shape *s, gboolean bf16, gboolean zero_rows)
{
  gint64 lda = s->K + 3, ldb = s->N + 5, ldbt = s->K + 2, ldc = s->N + 4;
  g_autofree float *a = g_new (float, s->M * lda), *b = g_new (float, s->K * ldb);
  g_autofree float *bt = g_new (float, s->N * ldbt), *c = g_new (float, s->M * ldc), *c0 = g_new (float, s->M * ldc);
  for (gint64 i = 0; i < s->M * lda; i++)
    a[i] = zero_rows && (i / lda) % 3 != 0 ? 0.0f : value_at (i, 1);
  for (gint64 i = 0; i < s->K * ldb; i++)
    b[i] = value_at (i, 2);
  for (gint64 k = 0; k < s->K; k++)
    for (gint64 j = 0; j < s->N; j++)
      bt[j * ldbt + k] = b[k * ldb + j];
  for (gint64 i = 0; i < s->M * ldc; i++)
    c0[i] = value_at (i, 3);
  /* the bias is exactly N long: a read past it is ASan's to see */
  g_autofree float *bias = g_new (float, s->N);
  for (gint64 j = 0; j < s->N; j++)
    bias[j] = value_at (j, 4);
  for (int transposed = 0; transposed < 2; transposed++)
    for (int start = 0; start < 3; start++)   /* from zero, C accumulated, the bias */
      {
        gboolean accumulate = start == 1, with_bias = start == 2;
        GraftPackedB *(*pack) (const float *, gint64, gint64, gint64, gboolean) =
          bf16 ? graft_packed_b_new_bf16 : graft_packed_b_new;
        g_autoptr(GraftPackedB) packed = transposed ? pack (bt, s->K, s->N, ldbt, TRUE) : pack (b, s->K, s->N, ldb, FALSE);
        memcpy (c, c0, s->M * ldc * sizeof (float));
        if (!accumulate)
          for (gint64 i = 0; i < s->M; i++)
            for (gint64 j = 0; j < s->N; j++)
              c[i * ldc + j] = NAN;   /* must not be read */
        g_assert_true (graft_packed_gemm (NULL, s->M, a, lda, packed, c, ldc, accumulate, with_bias ? bias : NULL));
        /* Elements too far from the product of the other precision's
         * operands to be it: B was packed in the precision asked for. */
        guint n_apart = 0;
        for (gint64 i = 0; i < s->M; i++)
          {
            for (gint64 j = 0; j < s->N; j++)
              {
                double want = accumulate ? c0[i * ldc + j] : with_bias ? bias[j] : 0;
                double other = want;
                for (gint64 k = 0; k < s->K; k++)
                  {
                    want += float_graph_operand (a[i * lda + k], bf16) * float_graph_operand (b[k * ldb + j], bf16);
                    other += float_graph_operand (a[i * lda + k], !bf16) * float_graph_operand (b[k * ldb + j], !bf16);
                  }
                check_close (transposed ? "packed from Bᵀ" : "packed from B", s, i, j, c[i * ldc + j], want);
                n_apart += !is_close (s, c[i * ldc + j], other);
              }
            for (gint64 j = s->N; j < ldc; j++)   /* the padding past N is untouched */
              g_assert_cmpfloat (c[i * ldc + j], ==, c0[i * ldc + j]);
          }
        g_assert_cmpuint (n_apart, >, 0);
      }
}



static void
add_node (GraftGraph *g, const char *op, const char *const *inputs, const char *output)
{
  GraftNode *node = graft_graph_add_node (g, NULL, op, output);
  for (int i = 0; inputs[i]; i++)
    graft_node_add_input (node, graft_graph_resolve_value (g, inputs[i]));
  graft_node_add_output (node, graft_graph_ensure_value (g, output));
  if (strcmp (op, "Gemm") == 0)
    graft_node_add_attribute (node, graft_attribute_new_int ("transB", 1));
  if (strcmp (op, "Transpose") == 0)
    {
      int rank = graft_graph_resolve_value (g, inputs[0])->shape.rank;
      gint64 perm[GRAFT_RT_MAX_RANK];
      for (int d = 0; d < rank; d++)
        perm[d] = d < rank - 2 ? d : 2 * rank - 3 - d;
      graft_node_add_attribute (node, graft_attribute_new_ints ("perm", perm, rank));
    }
  else
    graft_graph_add_output (g, graft_graph_ensure_value (g, output));
}

/* y1 = MatMul (a [2, M, K], w [K, N]); y2 = Gemm (a2 [M, K], wt [N, K]ᵀ, bias [N]);
 * y3 = MatMul (a2, b [K, N] fed as an input);
 * y4 = MatMul (a, Transpose (bt [N, K])); y5 = MatMul (a4 [3, 1, M, K], Transpose (bt4 [2, N, K]));
 * y6 = MatMul (a, Transpose (bt)) with that Transpose an output (y6t) too;
 * y7 = MatMul (a, Transpose (wt)), a Transpose of a constant that runs
 * when the plan is made (its output is B, not read transposed again). */
static GraftModel *
build_model (const Shape *s, const float *w, const float *wt, const float *bias)
{
  GraftModel *model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *g = graft_graph_new ("gemm");
  graft_model_set_opset (model, "onnx", 17);
  gint64 da[] = { 2, s->M, s->K }, dw[] = { s->K, s->N }, dwt[] = { s->N, s->K }, dbias[] = { s->N };
  float_graph_add_input (g, "a", 3, da);
  float_graph_add_input (g, "a2", 2, da + 1);
  float_graph_add_input (g, "b", 2, dw);
  float_graph_add_initializer (g, "w", 2, dw, w);
  float_graph_add_initializer (g, "wt", 2, dwt, wt);
  float_graph_add_initializer (g, "bias", 1, dbias, bias);
  add_node (g, "MatMul", (const char *[]) { "a", "w", NULL }, "y1");
  add_node (g, "Gemm", (const char *[]) { "a2", "wt", "bias", NULL }, "y2");
  add_node (g, "MatMul", (const char *[]) { "a2", "b", NULL }, "y3");
  gint64 da4[] = { 3, 1, s->M, s->K }, dbt4[] = { 2, s->N, s->K };
  float_graph_add_input (g, "bt", 2, dwt);
  float_graph_add_input (g, "a4", 4, da4);
  float_graph_add_input (g, "bt4", 3, dbt4);
  add_node (g, "Transpose", (const char *[]) { "bt", NULL }, "b4");
  add_node (g, "MatMul", (const char *[]) { "a", "b4", NULL }, "y4");
  add_node (g, "Transpose", (const char *[]) { "bt4", NULL }, "b5");
  add_node (g, "MatMul", (const char *[]) { "a4", "b5", NULL }, "y5");
  add_node (g, "Transpose", (const char *[]) { "bt", NULL }, "y6t");
  graft_graph_add_output (g, graft_graph_ensure_value (g, "y6t"));
  add_node (g, "MatMul", (const char *[]) { "a", "y6t", NULL }, "y6");
  add_node (g, "Transpose", (const char *[]) { "wt", NULL }, "b7");
  add_node (g, "MatMul", (const char *[]) { "a", "b7", NULL }, "y7");
  graft_model_set_graph (model, g);
  return model;
}

static GraftRtTensor *
tensor_of (int rank, const gint64 *dims, const float *values)
{
  GraftRtTensor *t = graft_rt_tensor_new (GRAFT_DTYPE_FLOAT32, rank, dims, NULL);
  memcpy (t->data, values, t->nbytes);
  return t;
}

static void
check_kernels (const Shape *s, gboolean bf16)
{
  gint64 M = s->M, K = s->K, N = s->N;
  if (SANITIZED && M * K * N > SANITIZED_MAX_PRODUCT)
    {
      g_test_skip ("too slow under AddressSanitizer: checked in the plain build");
      return;
    }
  g_autofree float *a = g_new (float, 2 * M * K), *w = g_new (float, K * N), *wt = g_new (float, N * K);
  g_autofree float *bias = g_new (float, N), *b = g_new (float, K * N);
  g_autofree float *a4 = g_new (float, 3 * M * K), *bt4 = g_new (float, 2 * N * K);
  for (gint64 i = 0; i < 3 * M * K; i++)
    a4[i] = value_at (i, 9);
  for (gint64 i = 0; i < 2 * N * K; i++)
    bt4[i] = value_at (i, 10);
  for (gint64 i = 0; i < 2 * M * K; i++)
    a[i] = value_at (i, 4);
  for (gint64 i = 0; i < K * N; i++)
    {
      w[i] = value_at (i, 5);
      b[i] = value_at (i, 6);
      wt[(i % N) * K + i / N] = value_at (i, 7);   /* wt [N, K] holds B [K, N] = value_at (k·N + n) */
    }
  for (gint64 i = 0; i < N; i++)
    bias[i] = value_at (i, 8);
  g_autoptr(GraftModel) model = build_model (s, w, wt, bias);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftRuntime) rt = graft_runtime_new (model, &error);
  g_assert_no_error (error);
  g_assert_true (graft_runtime_set_precision (rt, bf16 ? GRAFT_PRECISION_BF16 : GRAFT_PRECISION_F32, &error));
  g_assert_no_error (error);
  for (guint threads = 1; threads <= 2; threads++)
    for (int again = 0; again < 2; again++)
      {
        graft_runtime_set_n_threads (rt, threads);
        g_autoptr(GHashTable) inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                              (GDestroyNotify) graft_rt_tensor_unref);
        gint64 da[] = { 2, M, K }, db[] = { K, N };
        g_hash_table_insert (inputs, (gpointer) "a", tensor_of (3, da, a));
        g_hash_table_insert (inputs, (gpointer) "a2", tensor_of (2, da + 1, a));
        g_hash_table_insert (inputs, (gpointer) "b", tensor_of (2, db, b));
        gint64 dbt[] = { N, K }, da4[] = { 3, 1, M, K }, dbt4[] = { 2, N, K };
        g_hash_table_insert (inputs, (gpointer) "bt", tensor_of (2, dbt, wt));
        g_hash_table_insert (inputs, (gpointer) "a4", tensor_of (4, da4, a4));
        g_hash_table_insert (inputs, (gpointer) "bt4", tensor_of (3, dbt4, bt4));
        g_autoptr(GPtrArray) out = graft_runtime_run (rt, inputs, NULL, NULL, NULL, &error);
        g_assert_no_error (error);
        const float *y1 = ((GraftRtTensor *) out->pdata[0])->data, *y2 = ((GraftRtTensor *) out->pdata[1])->data;
        const float *y3 = ((GraftRtTensor *) out->pdata[2])->data;
        GraftRtTensor *y4 = out->pdata[3], *y5 = out->pdata[4], *y6 = out->pdata[6], *y7 = out->pdata[7];
        g_assert_cmpint (y4->rank, ==, 3);
        g_assert_cmpint (y4->dims[2], ==, N);
        g_assert_cmpint (y5->rank, ==, 4);
        g_assert_cmpint (y5->dims[0], ==, 3);
        g_assert_cmpint (y5->dims[1], ==, 2);
        g_assert_cmpint (y5->dims[3], ==, N);
        g_assert_cmpint (((GraftRtTensor *) out->pdata[5])->dims[0], ==, K);   /* y6t, transposed */
        for (gint64 i = 0; i < 2 * M; i++)
          for (gint64 j = 0; j < N; j++)
            {
              double want = 0, want7 = 0;
              for (gint64 k = 0; k < K; k++)
                {
                  want += (double) a[i * K + k] * wt[j * K + k];
                  want7 += float_graph_operand (a[i * K + k], bf16) * float_graph_operand (wt[j * K + k], bf16);
                }
              check_close ("MatMul by a skipped Transpose", s, i, j, ((float *) y4->data)[i * N + j], want);
              check_close ("MatMul by a Transpose that runs", s, i, j, ((float *) y6->data)[i * N + j], want);
              check_close ("MatMul by a Transpose of a constant", s, i, j, ((float *) y7->data)[i * N + j], want7);
            }
        for (gint64 p = 0; p < 3; p++)
          for (gint64 q = 0; q < 2; q++)
            for (gint64 i = 0; i < M; i++)
              for (gint64 j = 0; j < N; j++)
                {
                  double want = 0;
                  for (gint64 k = 0; k < K; k++)
                    want += (double) a4[(p * M + i) * K + k] * bt4[(q * N + j) * K + k];
                  check_close ("batched MatMul by a skipped Transpose", s, i, j,
                               ((float *) y5->data)[((p * 2 + q) * M + i) * N + j], want);
                }
        for (gint64 i = 0; i < 2 * M; i++)
          for (gint64 j = 0; j < N; j++)
            {
              double want1 = 0, want2 = bias[j], want3 = 0;
              /* by the constants w and wt in bf16 when the run is; by the fed b in f32 */
              for (gint64 k = 0; k < K; k++)
                {
                  want1 += float_graph_operand (a[i * K + k], bf16) * float_graph_operand (w[k * N + j], bf16);
                  if (i < M)
                    {
                      want2 += float_graph_operand (a[i * K + k], bf16) * float_graph_operand (wt[j * K + k], bf16);
                      want3 += (double) a[i * K + k] * b[k * N + j];
                    }
                }
              check_close ("MatMul by a constant", s, i, j, y1[i * N + j], want1);
              if (i < M)
                {
                  check_close ("Gemm transB with bias", s, i, j, y2[i * N + j], want2);
                  check_close ("MatMul by an input", s, i, j, y3[i * N + j], want3);
                }
            }
      }
}

typedef struct {
  GraftSimdLevel level;
  gboolean direct;
  gboolean zero_rows;             /* direct only: A with zero rows */
} LevelCase;

/* Zero rows of A against a B holding an infinity and a NaN: the products
 * are NaN in those columns, so the zero rows cannot be left out. */
static void
check_zero_rows_non_finite (void)
{
  const gint64 M = 40, K = 20, N = 35;
  g_autofree float *a = g_new0 (float, M * K), *b = g_new (float, K * N), *c = g_new (float, M * N);
  g_autofree float *bias = g_new (float, N);
  for (gint64 k = 0; k < K; k++)
    a[k] = value_at (k, 1);   /* row 0 alone is not zero */
  for (gint64 i = 0; i < K * N; i++)
    b[i] = value_at (i, 2);
  for (gint64 j = 0; j < N; j++)
    bias[j] = value_at (j, 4);
  b[3 * N + 2] = INFINITY;
  b[7 * N + 33] = NAN;
  g_autoptr(GraftPackedB) packed = graft_packed_b_new (b, K, N, N, FALSE);
  g_assert_true (graft_packed_gemm (NULL, M, a, K, packed, c, N, FALSE, bias));
  for (gint64 i = 1; i < M; i++)
    for (gint64 j = 0; j < N; j++)
      if (j == 2 || j == 33)
        g_assert_true (isnan (c[i * N + j]));
      else
        g_assert_cmpfloat (c[i * N + j], ==, bias[j]);
}

static void
test_at_level (gconstpointer data)
{
  const LevelCase *lc = data;
  if (!graft_test_use_simd_level (lc->level))
    return;
  if (lc->zero_rows)
    check_zero_rows_non_finite ();
  for (guint i = 0; i < G_N_ELEMENTS (shapes); i++)
    {
      if (lc->direct)
        check_direct (&shapes[i], FALSE, lc->zero_rows);
      else
        check_kernels (&shapes[i], FALSE);
    }
  graft_simd_set_max_level (GRAFT_SIMD_AVX512);
}

static void
test_bf16 (gconstpointer data)
{
  gboolean direct = GPOINTER_TO_INT (data);
  g_autoptr(GError) error = NULL;
  if (!graft_precision_available (GRAFT_PRECISION_BF16, &error))
    {
      g_test_skip (error->message);
      return;
    }
  for (guint i = 0; i < G_N_ELEMENTS (shapes); i++)
    {
      if (direct)
        {
          check_direct (&shapes[i], TRUE, FALSE);
          check_direct (&shapes[i], TRUE, TRUE);
        }
      else
        check_kernels (&shapes[i], TRUE);
    }
}

/* Capped below AVX-512, a run cannot be asked for bf16: it says so. */
static void
test_bf16_refused_below_avx512 (void)
{
  if (!graft_test_use_simd_level (GRAFT_SIMD_AVX2))
    return;
  Shape s = { 2, 3, 4 };
  g_autofree float *w = g_new0 (float, 12), *wt = g_new0 (float, 12), *bias = g_new0 (float, 4);
  g_autoptr(GraftModel) model = build_model (&s, w, wt, bias);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftRuntime) rt = graft_runtime_new (model, &error);
  g_assert_no_error (error);
  g_assert_false (graft_runtime_set_precision (rt, GRAFT_PRECISION_BF16, &error));
  g_assert_nonnull (error);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "bf16 needs"));
  g_assert_cmpint (graft_runtime_get_precision (rt), ==, GRAFT_PRECISION_F32);
  graft_simd_set_max_level (GRAFT_SIMD_AVX512);
}

int
main (int argc, char **argv)
{
  static LevelCase cases[9];
  static const char *const names[3] = { "matmul-gemm-kernels", "packed-gemm", "packed-gemm-zero-rows" };
  g_test_init (&argc, &argv, NULL);
  for (GraftSimdLevel level = GRAFT_SIMD_PORTABLE; level <= GRAFT_SIMD_AVX512; level++)
    for (int kind = 2; kind >= 0; kind--)
      {
        LevelCase *lc = &cases[level * 3 + kind];
        g_autofree char *path = g_strdup_printf ("/gemm-packed/%s/%s", graft_simd_level_to_string (level), names[kind]);
        *lc = (LevelCase) { level, kind > 0, kind == 2 };
        g_test_add_data_func (path, lc, test_at_level);
      }
  g_test_add_data_func ("/gemm-packed/bf16/packed-gemm", GINT_TO_POINTER (TRUE), test_bf16);
  g_test_add_data_func ("/gemm-packed/bf16/matmul-gemm-kernels", GINT_TO_POINTER (FALSE), test_bf16);
  g_test_add_func ("/gemm-packed/bf16/refused-below-avx512", test_bf16_refused_below_avx512);
  return g_test_run ();
}
