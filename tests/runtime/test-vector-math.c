/* The float32 row routines of runtime/kernels/vector-math.h at every SIMD
 * level this CPU has (a level it lacks is skipped, not passed): against
 * the C library in double, and the vector variants against the portable
 * one, on random rows of edge lengths (0, 1, around the 8- and 16-float
 * vector widths, odd lengths) with infinities, NaN, signed zeros, tiny and
 * huge values mixed in; softmax down the middle axis of [outer, n, inner]
 * and the means of rows too. */
#include <math.h>
#include <string.h>
#include "runtime/kernels/vector-math.h"
#include "simd-levels.h"

static const gint64 lengths[] = { 0, 1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 63, 128, 255, 769 };

/* Uniform in [-range, range), one value in eight special when specials. */
static float *
random_row (GRand *rng, gint64 n, double range, gboolean specials)
{
  static const float special[] = { 0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-30f, -1e-30f, 3e-5f, -3e-5f,
                                   87.5f, -87.5f, 88.8f, -104.0f, 9.0f, -9.0f, 0.4999f, 0.5f, -0.5001f };
  float *x = g_new (float, MAX (n, 1));
  for (gint64 i = 0; i < n; i++)
    x[i] = specials && g_rand_int_range (rng, 0, 8) == 0
           ? special[g_rand_int_range (rng, 0, G_N_ELEMENTS (special))]
           : g_rand_double_range (rng, -range, range);
  return x;
}

/* |got - want| ≤ atol + rtol·|want|, NaN where want is NaN, infinity where
 * want is beyond the float range. */
static void
assert_close (const char *what, gint64 i, float input, float got, double want, double atol, double rtol)
{
  if (isnan (want))
    {
      if (!isnan (got))
        g_error ("%s(%.9g) [%" G_GINT64_FORMAT "]: %.9g, expected NaN", what, input, i, got);
      return;
    }
  if (isinf ((float) want) ? got != (float) want : !(fabs (got - want) <= atol + rtol * fabs (want)))
    g_error ("%s(%.9g) [%" G_GINT64_FORMAT "]: %.9g, expected %.9g", what, input, i, got, want);
}

typedef void (*RowFunc) (const float *x, float *y, gint64 n);

static void gelu_erf (const float *x, float *y, gint64 n) { graft_vm_gelu (x, y, n, FALSE); }
static void gelu_tanh (const float *x, float *y, gint64 n) { graft_vm_gelu (x, y, n, TRUE); }

static double ref_sigmoid (double x) { return 1 / (1 + exp (-x)); }
static void silu_row (const float *x, float *y, gint64 n) { graft_vm_affine (x, y, n, 0, 1, 0, TRUE); }
static double ref_silu (double x) { return x / (1 + exp (-x)); }
static double ref_hard_swish (double x) { return x * CLAMP (x / 6 + 0.5, 0, 1); }
static void hard_sigmoid_row (const float *x, float *y, gint64 n) { graft_vm_hard_sigmoid (x, y, n, 0.2f, 0.5f); }
static double ref_hard_sigmoid (double x) { return CLAMP (x * 0.2f + 0.5, 0, 1); }
static double ref_gelu_erf (double x) { return 0.5 * x * (1 + erf (x / G_SQRT2)); }
static double ref_gelu_tanh (double x) { return 0.5 * x * (1 + tanh (sqrt (2 / G_PI) * (x + 0.044715 * x * x * x))); }

typedef struct {
  const char *name;
  RowFunc row;
  double (*reference) (double);
  double range, atol, rtol;
} ElementwiseCase;

static const ElementwiseCase elementwise_cases[] = {
  { "exp", graft_vm_exp, exp, 90, 1e-37, 3e-7 },
  { "erf", graft_vm_erf, erf, 4, 2e-7, 3e-7 },
  { "tanh", graft_vm_tanh, tanh, 10, 1e-7, 3e-7 },
  /* for x ≪ 0 GELU is x times 1 + erf (tanh) ≈ 0, where the float sum cancels */
  { "gelu-erf", gelu_erf, ref_gelu_erf, 8, 1e-6, 1e-6 },
  { "gelu-tanh", gelu_tanh, ref_gelu_tanh, 8, 1e-6, 1e-6 },
  { "sigmoid", graft_vm_sigmoid, ref_sigmoid, 100, 1e-37, 4e-7 },
  /* x·sigmoid(x) for x ≪ 0 is x·e^x, a float product of two roundings, 0 where e^x is below the normal floats */
  { "silu", silu_row, ref_silu, 100, 1e-35, 6e-7 },
  /* x·α with α = 1/6 rounded to float, as onnx::HardSwish defines it */
  { "hard-swish", graft_vm_hard_swish, ref_hard_swish, 8, 1e-7, 3e-7 },
  { "hard-sigmoid", hard_sigmoid_row, ref_hard_sigmoid, 8, 1e-7, 3e-7 },
};

/* The level under test, then the portable variant on the same row: the
 * two differ by FMA rounding only (within the case's tolerance). */
static void
test_elementwise (gconstpointer data)
{
  GraftSimdLevel level = GPOINTER_TO_INT (data);
  g_autoptr(GRand) rng = g_rand_new_with_seed (7);
  if (!graft_test_use_simd_level (level))
    return;
  for (guint c = 0; c < G_N_ELEMENTS (elementwise_cases); c++)
    {
      const ElementwiseCase *ec = &elementwise_cases[c];
      for (guint l = 0; l < G_N_ELEMENTS (lengths); l++)
        for (int round = 0; round < 4; round++)
          {
            gint64 n = lengths[l];
            g_autofree float *x = random_row (rng, n, round == 0 ? 0.01 : ec->range, round >= 2);
            g_autofree float *y = g_new (float, MAX (n, 1)), *portable = g_new (float, MAX (n, 1));
            graft_simd_set_max_level (level);
            ec->row (x, y, n);
            graft_simd_set_max_level (GRAFT_SIMD_PORTABLE);
            ec->row (x, portable, n);
            for (gint64 i = 0; i < n; i++)
              {
                assert_close (ec->name, i, x[i], y[i], ec->reference (x[i]), ec->atol, ec->rtol);
                assert_close (ec->name, i, x[i], y[i], portable[i], ec->atol, 4e-7);
              }
            /* in place gives the same */
            graft_simd_set_max_level (level);
            ec->row (x, x, n);
            g_assert_cmpmem (x, n * sizeof (float), y, n * sizeof (float));
          }
    }
  graft_simd_set_max_level (GRAFT_SIMD_AVX512);
}

/* Every float step of 2^-12 over [-6, 6] (all of erf's range before it
 * rounds to ±1, and both sides of its split at 0.921875), then ±inf and
 * NaN, in one row at the level under test against the double reference:
 * random rows can miss a narrow bump of a fitted polynomial. The largest
 * error relative to the case's tolerance goes to the test log. */
static void
test_elementwise_sweep (gconstpointer data)
{
  GraftSimdLevel level = GPOINTER_TO_INT (data);
  gint64 steps = 12 * 4096, n = steps + 1 + 3;
  g_autofree float *x = g_new (float, n), *y = g_new (float, n);
  if (!graft_test_use_simd_level (level))
    return;
  for (gint64 i = 0; i <= steps; i++)
    x[i] = -6.0f + (float) i / 4096.0f;
  x[steps + 1] = INFINITY;
  x[steps + 2] = -INFINITY;
  x[steps + 3] = NAN;
  for (guint c = 0; c < G_N_ELEMENTS (elementwise_cases); c++)
    {
      const ElementwiseCase *ec = &elementwise_cases[c];
      double worst = 0, worst_x = 0, worst_ulps = 0;
      ec->row (x, y, n);
      for (gint64 i = 0; i < n; i++)
        {
          double want = ec->reference (x[i]);
          assert_close (ec->name, i, x[i], y[i], want, ec->atol, ec->rtol);
          if (isfinite (want) && fabs (y[i] - want) / (ec->atol + ec->rtol * fabs (want)) > worst)
            {
              worst = fabs (y[i] - want) / (ec->atol + ec->rtol * fabs (want));
              worst_x = x[i];
            }
          if (isfinite (want) && fabs (want) >= 0.01)
            worst_ulps = MAX (worst_ulps, fabs (y[i] - want) / (nextafterf (fabsf ((float) want), INFINITY) - fabsf ((float) want)));
        }
      g_test_message ("%s: largest error %.3g of the tolerance, at %.9g; %.2f ulp at most where |f| >= 0.01", ec->name, worst, worst_x,
                      worst_ulps);
    }
  graft_simd_set_max_level (GRAFT_SIMD_AVX512);
}

static void
reference_softmax (const float *x, double *y, gint64 n, gboolean log_form)
{
  double mx = -INFINITY, sum = 0;
  for (gint64 k = 0; k < n; k++)
    mx = x[k] > mx ? x[k] : mx;
  for (gint64 k = 0; k < n; k++)
    sum += exp (x[k] - mx);
  for (gint64 k = 0; k < n; k++)
    y[k] = log_form ? x[k] - mx - log (sum) : exp (x[k] - mx) / sum;
}

/* Rows of scores, some with masked (-inf) keys, one all masked, one with a
 * NaN: the masked and NaN rows must give what the double reference gives;
 * the same for the numerators and 1/sum that attention scales itself. */
static void
test_softmax (gconstpointer data)
{
  GraftSimdLevel level = GPOINTER_TO_INT (data);
  g_autoptr(GRand) rng = g_rand_new_with_seed (11);
  if (!graft_test_use_simd_level (level))
    return;
  for (guint l = 0; l < G_N_ELEMENTS (lengths); l++)
    for (int log_form = 0; log_form < 2; log_form++)
      {
        gint64 n = lengths[l], rows = 5;
        g_autofree float *x = random_row (rng, rows * n, 30, FALSE);
        g_autofree float *y = g_new (float, MAX (rows * n, 1));
        g_autofree double *want = g_new (double, MAX (n, 1));
        for (gint64 k = 0; k < n; k++)
          {
            if (g_rand_int_range (rng, 0, 4) == 0)
              x[n + k] = -INFINITY;          /* row 1: padding */
            x[2 * n + k] = -INFINITY;        /* row 2: all masked */
            if (k == n / 2)
              x[3 * n + k] = NAN;            /* row 3 */
            x[4 * n + k] = -3.4e38f + k;     /* row 4: a finfo.min mask */
          }
        graft_vm_softmax_rows (x, y, rows, n, log_form);
        for (gint64 r = 0; r < rows; r++)
          {
            reference_softmax (x + r * n, want, n, log_form);
            for (gint64 k = 0; k < n; k++)
              assert_close (log_form ? "log-softmax" : "softmax", r * n + k, x[r * n + k], y[r * n + k], want[k],
                            1e-7, log_form ? 1e-6 : 2e-6);
          }
        if (log_form)
          continue;
        /* the numerators and 1/sum, scaled here */
        float inv_sums[5];
        graft_vm_softmax_rows_unscaled (x, y, rows, n, inv_sums);
        for (gint64 r = 0; r < rows; r++)
          {
            reference_softmax (x + r * n, want, n, FALSE);
            for (gint64 k = 0; k < n; k++)
              assert_close ("unscaled softmax", r * n + k, x[r * n + k], y[r * n + k] * inv_sums[r], want[k], 1e-7,
                            2e-6);
          }
      }
  graft_simd_set_max_level (GRAFT_SIMD_AVX512);
}

/* Softmax along the middle axis of [2, n, inner] against the double
 * reference down each column and against the portable variant: trailing
 * sizes 1, odd, around the vector widths and beyond (YOLO's DFL runs 16
 * bins over 4 × 8400 columns); columns all masked (-inf), with a NaN,
 * with +inf and with one masked value. */
static void
test_softmax_inner (gconstpointer data)
{
  GraftSimdLevel level = GPOINTER_TO_INT (data);
  g_autoptr(GRand) rng = g_rand_new_with_seed (19);
  static const gint64 sizes[] = { 1, 2, 3, 16, 17 }, inners[] = { 1, 2, 7, 8, 9, 15, 16, 17, 33, 100 };
  if (!graft_test_use_simd_level (level))
    return;
  for (guint a = 0; a < G_N_ELEMENTS (sizes); a++)
    for (guint b = 0; b < G_N_ELEMENTS (inners); b++)
      for (int log_form = 0; log_form < 2; log_form++)
        {
          gint64 outer = 2, n = sizes[a], inner = inners[b], total = outer * n * inner;
          g_autofree float *x = random_row (rng, total, 30, FALSE);
          g_autofree float *y = g_new (float, total), *portable = g_new (float, total);
          g_autofree float *column = g_new (float, n);
          g_autofree double *want = g_new (double, n);
          for (gint64 k = 0; k < n; k++)
            {
              x[k * inner + inner / 2] = -INFINITY;            /* a column all masked */
              if (inner > 3)
                x[k * inner + 3] = k == n / 2 ? NAN : x[k * inner + 3];
              if (inner > 5 && k == n - 1)
                x[k * inner + 5] = INFINITY;
              if (inner > 6 && k == 0)
                x[k * inner + 6] = -INFINITY;                  /* one masked value */
            }
          graft_simd_set_max_level (level);
          graft_vm_softmax_inner (x, y, outer, n, inner, log_form);
          graft_simd_set_max_level (GRAFT_SIMD_PORTABLE);
          graft_vm_softmax_inner (x, portable, outer, n, inner, log_form);
          for (gint64 o = 0; o < outer; o++)
            for (gint64 i = 0; i < inner; i++)
              {
                gint64 base = o * n * inner + i;
                for (gint64 k = 0; k < n; k++)
                  column[k] = x[base + k * inner];
                reference_softmax (column, want, n, log_form);
                for (gint64 k = 0; k < n; k++)
                  {
                    const char *what = log_form ? "log-softmax-inner" : "softmax-inner";
                    assert_close (what, base + k * inner, column[k], y[base + k * inner], want[k], 1e-7,
                                  log_form ? 1e-6 : 2e-6);
                    assert_close (what, base + k * inner, column[k], y[base + k * inner],
                                  portable[base + k * inner], 1e-7, log_form ? 1e-6 : 2e-6);
                  }
              }
        }
  graft_simd_set_max_level (GRAFT_SIMD_AVX512);
}

/* graft_vm_means (GlobalAveragePool) over rows of EfficientNet's map
 * sizes (7², 14², 112²) and edge lengths, offset from 0 so that a float
 * sum would lose digits, against double sums and the portable variant. */
static void
test_means (gconstpointer data)
{
  GraftSimdLevel level = GPOINTER_TO_INT (data);
  g_autoptr(GRand) rng = g_rand_new_with_seed (23);
  /* 4 and 8: shorter than a vector (the 2×2 maps of the last stages) */
  static const gint64 row_lengths[] = { 0, 1, 4, 7, 8, 16, 17, 49, 196, 1025, 12544 };
  if (!graft_test_use_simd_level (level))
    return;
  for (guint l = 0; l < G_N_ELEMENTS (row_lengths); l++)
    {
      gint64 rows = 3, n = row_lengths[l];
      g_autofree float *x = random_row (rng, rows * n, 3, FALSE);
      float y[3], portable[3];
      for (gint64 k = 0; k < rows * n; k++)
        x[k] += 40;
      graft_simd_set_max_level (level);
      graft_vm_means (x, y, rows, n);
      graft_simd_set_max_level (GRAFT_SIMD_PORTABLE);
      graft_vm_means (x, portable, rows, n);
      for (gint64 r = 0; r < rows; r++)
        {
          double sum = 0;
          for (gint64 k = 0; k < n; k++)
            sum += x[r * n + k];
          assert_close ("mean", r, 0, y[r], n ? sum / n : 0, 1e-6, 1e-6);
          assert_close ("mean against portable", r, 0, y[r], portable[r], 0, 1e-6);
        }
    }
  graft_simd_set_max_level (GRAFT_SIMD_AVX512);
}

static void
test_normalize (gconstpointer data)
{
  GraftSimdLevel level = GPOINTER_TO_INT (data);
  g_autoptr(GRand) rng = g_rand_new_with_seed (13);
  if (!graft_test_use_simd_level (level))
    return;
  for (guint l = 0; l < G_N_ELEMENTS (lengths); l++)
    for (int variant = 0; variant < 3; variant++)
      {
        gboolean rms = variant == 2, with_bias = variant == 0;
        gint64 n = lengths[l];
        g_autofree float *x = random_row (rng, n, 3, FALSE);
        g_autofree float *scale = random_row (rng, n, 2, FALSE), *bias = random_row (rng, n, 2, FALSE);
        g_autofree float *y = g_new (float, MAX (n, 1));
        float mean, inv_std;
        for (gint64 k = 0; k < n; k++)
          x[k] += 5;   /* an offset mean: a one-pass variance would lose digits */
        graft_vm_normalize_row (x, y, n, scale, with_bias ? bias : NULL, 1e-5f, rms, &mean, &inv_std);
        double sum = 0, sq = 0;
        for (gint64 k = 0; k < n; k++)
          sum += x[k];
        double want_mean = rms || n == 0 ? 0 : sum / n;
        for (gint64 k = 0; k < n; k++)
          sq += (x[k] - want_mean) * (x[k] - want_mean);
        double want_inv = 1 / sqrt ((n ? sq / n : 0) + 1e-5);
        assert_close ("mean", 0, 0, mean, want_mean, 1e-6, 1e-6);
        assert_close ("inv_std", 0, 0, inv_std, want_inv, 0, 2e-6);
        for (gint64 k = 0; k < n; k++)
          assert_close (rms ? "rms-norm" : "layer-norm", k, x[k], y[k],
                        (x[k] - want_mean) * want_inv * scale[k] + (with_bias ? bias[k] : 0), 2e-6, 2e-6);
      }
  graft_simd_set_max_level (GRAFT_SIMD_AVX512);
}

/* graft_vm_moments over rows longer than its blocks (64 values a lane) too, and
 * graft_vm_affine normalising with them, against double sums; the level
 * under test against the portable variant. */
static void
test_moments (gconstpointer data)
{
  GraftSimdLevel level = GPOINTER_TO_INT (data);
  g_autoptr(GRand) rng = g_rand_new_with_seed (17);
  static const gint64 long_lengths[] = { 0, 1, 7, 9, 17, 63, 64, 65, 511, 512, 1025, 2047, 6151 };
  if (!graft_test_use_simd_level (level))
    return;
  for (guint l = 0; l < G_N_ELEMENTS (long_lengths); l++)
    for (int silu = 0; silu < 2; silu++)
      {
        gint64 n = long_lengths[l];
        g_autofree float *x = random_row (rng, n, 3, FALSE);
        g_autofree float *y = g_new (float, MAX (n, 1)), *portable = g_new (float, MAX (n, 1));
        for (gint64 k = 0; k < n; k++)
          x[k] += 40;   /* an offset mean: a one-pass variance would lose digits */
        float mean, inv_std, portable_mean, portable_inv;
        graft_simd_set_max_level (level);
        graft_vm_moments (x, n, 1e-5f, &mean, &inv_std);
        graft_vm_affine (x, y, n, mean, inv_std * 1.5f, 0.25f, silu);
        graft_simd_set_max_level (GRAFT_SIMD_PORTABLE);
        graft_vm_moments (x, n, 1e-5f, &portable_mean, &portable_inv);
        graft_vm_affine (x, portable, n, portable_mean, portable_inv * 1.5f, 0.25f, silu);
        double sum = 0, sq = 0;
        for (gint64 k = 0; k < n; k++)
          sum += x[k];
        double want_mean = n ? sum / n : 0;
        for (gint64 k = 0; k < n; k++)
          sq += (x[k] - want_mean) * (x[k] - want_mean);
        double want_inv = 1 / sqrt ((n ? sq / n : 0) + 1e-5);
        assert_close ("mean", 0, 0, mean, want_mean, 1e-6, 1e-6);
        assert_close ("inv_std", 0, 0, inv_std, want_inv, 0, 2e-6);
        assert_close ("portable mean", 0, 0, mean, portable_mean, 0, 1e-6);
        /* the float mean is within half an ulp of 40: that times the scale */
        double atol = 2e-6 * want_inv * 1.5 + 1e-6;
        for (gint64 k = 0; k < n; k++)
          {
            double v = (x[k] - want_mean) * want_inv * 1.5 + 0.25;
            assert_close (silu ? "normalised silu" : "normalised", k, x[k], y[k], silu ? v / (1 + exp (-v)) : v,
                          atol, 1e-5);
            assert_close ("against portable", k, x[k], y[k], portable[k], atol, 1e-5);
          }
      }
  graft_simd_set_max_level (GRAFT_SIMD_AVX512);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  for (GraftSimdLevel level = GRAFT_SIMD_PORTABLE; level <= GRAFT_SIMD_AVX512; level++)
    {
      const char *name = graft_simd_level_to_string (level);
      g_autofree char *elementwise = g_strdup_printf ("/vector-math/elementwise/%s", name);
      g_autofree char *softmax = g_strdup_printf ("/vector-math/softmax/%s", name);
      g_autofree char *normalize = g_strdup_printf ("/vector-math/normalize/%s", name);
      g_test_add_data_func (elementwise, GINT_TO_POINTER (level), test_elementwise);
      g_autofree char *sweep = g_strdup_printf ("/vector-math/elementwise-sweep/%s", name);
      g_test_add_data_func (sweep, GINT_TO_POINTER (level), test_elementwise_sweep);
      g_test_add_data_func (softmax, GINT_TO_POINTER (level), test_softmax);
      g_test_add_data_func (normalize, GINT_TO_POINTER (level), test_normalize);
      g_autofree char *moments = g_strdup_printf ("/vector-math/moments/%s", name);
      g_test_add_data_func (moments, GINT_TO_POINTER (level), test_moments);
      g_autofree char *softmax_inner = g_strdup_printf ("/vector-math/softmax-inner/%s", name);
      g_test_add_data_func (softmax_inner, GINT_TO_POINTER (level), test_softmax_inner);
      g_autofree char *means = g_strdup_printf ("/vector-math/means/%s", name);
      g_test_add_data_func (means, GINT_TO_POINTER (level), test_means);
    }
  return g_test_run ();
}
