/* The Winograd F(4×4, 3×3) convolution (conv-winograd.c) against a
 * direct double-precision loop, called on its own (one thread) on edge
 * shapes it supports whether or not it pays there: 1×1, 2×2 and odd
 * maps, maps whose tiles wrap across rows and images inside a vector of
 * eight, rows of eight tiles (the shuffled stores, with the last tile
 * cut off) and ones that end inside a tile, tile counts that leave half
 * a vector at AVX-512, blocks whose bands of input rows start inside an
 * image, padding 0, 1, 2 and asymmetric, channel
 * counts 1, 3, odd and large, output channels not a multiple of the
 * filter panel, batch 1 and 3, with and without bias, residual and
 * clamp; at every SIMD level. The tolerance is the conversions' one,
 * 1e-4 of the largest output. */
#include <math.h>
#include <string.h>
#include "runtime/kernels/conv-winograd.h"
#include "simd-levels.h"

typedef struct {
  gint64 n, c, m, h, w, pt, pl, pb, pr;
  gboolean residual, clamp;
} WinoCase;

static const WinoCase cases[] = {
  { 1, 1, 1, 1, 1, 1, 1, 1, 1, FALSE, FALSE },      /* 1×1 map, one channel */
  { 3, 3, 5, 2, 2, 1, 1, 1, 1, TRUE, TRUE },        /* 2×2 maps, batch 3 */
  { 1, 16, 16, 2, 2, 0, 0, 0, 0, FALSE, FALSE },    /* no padding: a 2×2 map gives nothing */
  { 1, 3, 7, 5, 7, 0, 0, 0, 0, FALSE, TRUE },       /* no padding, odd sizes */
  { 3, 17, 9, 7, 7, 1, 1, 1, 1, TRUE, FALSE },      /* ResNet's last maps, odd channels; tiles wrap images */
  { 2, 8, 24, 13, 37, 1, 1, 1, 1, FALSE, TRUE },    /* odd width: a tile row of 10 */
  { 1, 5, 13, 6, 70, 1, 1, 1, 1, TRUE, TRUE },      /* 18 tiles per row: eight whole ones side by side */
  { 2, 4, 8, 9, 66, 0, 0, 0, 0, TRUE, FALSE },      /* 16 tiles per row, no padding: the last ones end early */
  { 2, 6, 9, 11, 30, 1, 1, 1, 1, TRUE, TRUE },      /* rows of exactly eight tiles, the last cut at 30 and 11 */
  { 1, 6, 10, 11, 40, 2, 1, 0, 2, FALSE, TRUE },    /* asymmetric padding, OH ≠ H */
  { 1, 2, 3, 4, 3, 2, 2, 2, 2, TRUE, FALSE },       /* padding wider than the taps reach */
  { 1, 300, 20, 5, 9, 1, 1, 1, 1, FALSE, FALSE },   /* deep: 300 channels */
  { 2, 64, 64, 14, 14, 1, 1, 1, 1, TRUE, TRUE },    /* ResNet-like, residual and Relu */
  { 1, 40, 130, 8, 36, 1, 1, 1, 1, FALSE, FALSE },  /* M = 130: a partial panel, 18 tiles */
  { 2, 32, 32, 8, 8, 1, 1, 1, 1, TRUE, TRUE },      /* a vae decoder's 8×8 maps: eight tiles, half a vector at AVX-512 */
  { 1, 16, 24, 16, 24, 1, 1, 1, 1, FALSE, TRUE },   /* 24 tiles: a vector and a half */
  { 2, 16, 16, 20, 16, 1, 1, 1, 1, TRUE, FALSE },   /* 40 tiles: two vectors and a half, eight wrap images */
  { 2, 64, 64, 30, 30, 1, 1, 1, 1, TRUE, TRUE },    /* 128 tiles in two blocks, the second starting inside image 1 */
};

static float
value_at (gint64 i, gint64 salt)
{
  return (float) (((i + salt) * 2654435761u) % 1000) / 500.0f - 1.0f;
}

static void
check_case (const WinoCase *c, gboolean with_bias)
{
  gint64 OH = c->h + c->pt + c->pb - 2, OW = c->w + c->pl + c->pr - 2;
  gint64 nx = c->n * c->c * c->h * c->w, nw = c->m * c->c * 9, ny = c->n * c->m * OH * OW;
  g_autofree float *x = g_new (float, nx);
  g_autofree float *w = g_new (float, nw);
  g_autofree float *b = g_new (float, c->m);
  g_autofree float *res = g_new (float, MAX (ny, 1));
  g_autofree float *y = g_new (float, MAX (ny, 1));
  g_autofree double *want = g_new (double, MAX (ny, 1));
  for (gint64 i = 0; i < nx; i++)
    x[i] = value_at (i, 1);
  for (gint64 i = 0; i < nw; i++)
    w[i] = value_at (i, 7) / sqrtf ((float) (c->c * 9));
  for (gint64 i = 0; i < c->m; i++)
    b[i] = value_at (i, 3);
  for (gint64 i = 0; i < ny; i++)
    res[i] = value_at (i, 5);

  double largest = 0;
  for (gint64 n = 0; n < c->n; n++)
    for (gint64 m = 0; m < c->m; m++)
      for (gint64 oh = 0; oh < OH; oh++)
        for (gint64 ow = 0; ow < OW; ow++)
          {
            gint64 at = ((n * c->m + m) * OH + oh) * OW + ow;
            double acc = with_bias ? b[m] : 0;
            for (gint64 ci = 0; ci < c->c; ci++)
              for (gint64 ki = 0; ki < 3; ki++)
                for (gint64 kj = 0; kj < 3; kj++)
                  {
                    gint64 ih = oh + ki - c->pt, iw = ow + kj - c->pl;
                    if (ih >= 0 && ih < c->h && iw >= 0 && iw < c->w)
                      acc += (double) x[((n * c->c + ci) * c->h + ih) * c->w + iw] * w[(m * c->c + ci) * 9 + ki * 3 + kj];
                  }
            if (c->residual)
              acc += res[at];
            if (c->clamp)
              acc = CLAMP (acc, 0, 6);
            want[at] = acc;
            largest = MAX (largest, fabs (acc));
          }

  GraftWindow win = { 2, { c->h, c->w }, { OH, OW }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { c->pt, c->pl }, { c->pb, c->pr } };
  g_assert_true (graft_conv_winograd_supports (&win, 1));
  g_autoptr(GraftWinogradFilter) filter = graft_winograd_filter_new (w, c->m, c->c);
  g_assert_nonnull (filter);
  GraftConvGemmArgs args = { x, y, with_bias ? b : NULL, c->residual ? res : NULL, c->n, c->c, c->m, 1, &win,
                             c->clamp, 0, 6 };
  memset (y, 0xff, MAX (ny, 1) * sizeof (float));   /* NaN: every output must be written */
  g_autoptr(GError) error = NULL;
  g_assert_true (graft_conv_winograd (NULL, filter, &args, &error));
  g_assert_no_error (error);

  double worst = 0;
  for (gint64 i = 0; i < ny; i++)
    {
      double err = fabs (y[i] - want[i]);
      if (!(err <= 1e-4 * MAX (largest, 1e-6)))
        g_error ("%s: y[%" G_GINT64_FORMAT "] = %g, want %g (largest %g)",
                 graft_simd_level_to_string (graft_simd_get_level ()), i, y[i], want[i], largest);
      worst = MAX (worst, err / MAX (largest, 1e-6));
    }
  g_test_message ("worst error %.2e of the largest output", worst);
}

static void
test_case_at_level (gconstpointer data)
{
  const GraftTestLevelCase *lc = data;
  if (!graft_test_use_simd_level (lc->level))
    return;
  check_case (lc->item, TRUE);
  check_case (lc->item, FALSE);
  graft_simd_set_max_level (GRAFT_SIMD_AVX512);
}

/* Bad shapes are refused, never computed. */
static void
test_unsupported (void)
{
  GraftWindow strided = { 2, { 8, 8 }, { 4, 4 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 } };
  GraftWindow five = { 2, { 8, 8 }, { 8, 8 }, { 5, 5 }, { 1, 1 }, { 1, 1 }, { 2, 2 }, { 2, 2 } };
  GraftWindow plain = { 2, { 8, 8 }, { 8, 8 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 } };
  g_assert_false (graft_conv_winograd_supports (&strided, 1));
  g_assert_false (graft_conv_winograd_supports (&five, 1));
  g_assert_false (graft_conv_winograd_supports (&plain, 2));
  g_assert_true (graft_conv_winograd_supports (&plain, 1));
  /* it pays with enough channels and tiles (four per 8×8 image) */
  g_assert_true (graft_conv_winograd_pays (&plain, 2, 64, 64, 1));
  g_assert_false (graft_conv_winograd_pays (&plain, 1, 64, 64, 1));
  g_assert_false (graft_conv_winograd_pays (&plain, 2, 3, 64, 1));
  /* but not where its 4× filter would be large for the tiles it serves:
   * ResNet-18's layer4 (512 channels, 7×7) at batch 2 stays on
   * conv-gemm, layer3 (256 channels, 14×14) does not */
  GraftWindow seven = { 2, { 7, 7 }, { 7, 7 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 } };
  GraftWindow fourteen = { 2, { 14, 14 }, { 14, 14 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 } };
  g_assert_false (graft_conv_winograd_pays (&seven, 2, 512, 512, 1));
  g_assert_true (graft_conv_winograd_pays (&seven, 32, 512, 512, 1));
  g_assert_true (graft_conv_winograd_pays (&fourteen, 2, 256, 256, 1));
  g_assert_false (graft_conv_winograd_pays (&fourteen, 1, 256, 256, 1));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/conv-winograd/unsupported", test_unsupported);
  graft_test_add_cases_at_levels ("/conv-winograd", cases, sizeof cases[0], G_N_ELEMENTS (cases), test_case_at_level);
  return g_test_run ();
}
