/* graft_kernel_sgemm (runtime/kernels/kernel-util.h) against a direct
 * triple loop in double on edge shapes: one row (the decoder step, which
 * takes sgemv), few rows and odd widths, every transposition, row strides
 * wider than the matrix, beta 0 over a NaN-filled output and beta 1. */
#include <math.h>
#include <string.h>
#include "runtime/kernels/kernel-util.h"

static void
fill (GRand *rng, float *x, gint64 n)
{
  for (gint64 i = 0; i < n; i++)
    x[i] = g_rand_double_range (rng, -1, 1);
}

static void
check_product (GRand *rng, gboolean ta, gboolean tb, gint64 M, gint64 N, gint64 K, float beta)
{
  /* padded leading dimensions: the routine must honour the strides */
  gint64 lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5, ldc = N + 2;
  gint64 a_rows = ta ? K : M, b_rows = tb ? N : K;
  g_autofree float *a = g_new (float, a_rows * lda), *b = g_new (float, b_rows * ldb);
  g_autofree float *c = g_new (float, M * ldc), *c0 = g_new (float, M * ldc);
  fill (rng, a, a_rows * lda);
  fill (rng, b, b_rows * ldb);
  fill (rng, c0, M * ldc);
  if (beta == 0)
    for (gint64 i = 0; i < M * ldc; i++)
      c0[i] = NAN;   /* beta 0 must not read C */
  memcpy (c, c0, M * ldc * sizeof (float));
  graft_kernel_sgemm (NULL, ta, tb, M, N, K, 0.5f, a, lda, b, ldb, beta, c, ldc);
  for (gint64 i = 0; i < M; i++)
    for (gint64 j = 0; j < N; j++)
      {
        double want = beta == 0 ? 0 : beta * c0[i * ldc + j];
        for (gint64 k = 0; k < K; k++)
          want += 0.5 * a[ta ? k * lda + i : i * lda + k] * b[tb ? j * ldb + k : k * ldb + j];
        if (!(fabs (c[i * ldc + j] - want) <= 1e-5 * (1 + sqrt ((double) K))))
          g_error ("ta %d tb %d %" G_GINT64_FORMAT "×%" G_GINT64_FORMAT "×%" G_GINT64_FORMAT " beta %g: C[%"
                   G_GINT64_FORMAT ",%" G_GINT64_FORMAT "] = %g, expected %g", ta, tb, M, N, K, beta, i, j,
                   c[i * ldc + j], want);
      }
}

static void
test_edge_shapes (void)
{
  static const gint64 rows[] = { 1, 2, 5 }, widths[] = { 1, 7, 16, 33 }, depths[] = { 1, 9, 64 };
  g_autoptr(GRand) rng = g_rand_new_with_seed (5);
  for (int t = 0; t < 4; t++)
    for (guint m = 0; m < G_N_ELEMENTS (rows); m++)
      for (guint n = 0; n < G_N_ELEMENTS (widths); n++)
        for (guint k = 0; k < G_N_ELEMENTS (depths); k++)
          for (int beta = 0; beta < 2; beta++)
            check_product (rng, t & 1, t >> 1, rows[m], widths[n], depths[k], beta);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/sgemm/edge-shapes", test_edge_shapes);
  return g_test_run ();
}
