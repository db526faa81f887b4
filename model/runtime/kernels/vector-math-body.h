/* The algorithms of vector-math.c, written once over a vector type V of
 * VW floats and the V_* operations; vector-math.c includes this file once
 * per variant (portable first: one float per "vector"), each with its own
 * VM_SUFFIX. The SIMD variants finish a row's last VW - 1 values with the
 * portable functions, which run the same steps, so a value does not
 * depend on where it sits in the row. No include guard on purpose. */

#define VM_CAT2(name, suffix) name##_##suffix
#define VM_CAT(name, suffix) VM_CAT2 (name, suffix)
#define VM(name) VM_CAT (name, VM_SUFFIX)

/* n = round (x / ln2), of x clamped by the caller */
static inline V
VM (exp_exponent_v) (V xc)
{
  return V_ROUND (V_MUL (xc, V_SET1 (1.44269504088896341f)));
}

/* e^r for r = x - n·ln2, |r| ≤ ln2/2 (n from exp_exponent_v): Cephes'
 * expf's degree-6 polynomial */
static inline V
VM (exp_reduced_v) (V xc, V n)
{
  V r = V_FMA (n, V_SET1 (-0.693359375f), xc);
  r = V_FMA (n, V_SET1 (2.12194440e-4f), r);
  V p = V_SET1 (1.9875691500e-4f);
  p = V_FMA (p, r, V_SET1 (1.3981999507e-3f));
  p = V_FMA (p, r, V_SET1 (8.3334519073e-3f));
  p = V_FMA (p, r, V_SET1 (4.1665795894e-2f));
  p = V_FMA (p, r, V_SET1 (1.6666665459e-1f));
  p = V_FMA (p, r, V_SET1 (5.0000001201e-1f));
  return V_ADD (V_FMA (p, V_MUL (r, r), r), V_SET1 (1.0f));
}

/* Cephes' expf: e^x = 2^n · e^r with |r| ≤ ln2/2, e^r by a degree-6
 * polynomial. Below the smallest normal float it gives 0, above FLT_MAX
 * +inf, NaN stays NaN. */
static inline V
VM (exp_v) (V x)
{
  V xc = V_MIN (V_MAX (x, V_SET1 (-87.33654f)), V_SET1 (88.72283f)), n = VM (exp_exponent_v) (xc);
  V y = VM (exp_reduced_v) (xc, n);
  /* n reaches 128 near the top, one past the largest float exponent:
   * 2^127 times 2 there */
  V n_low = V_MIN (n, V_SET1 (127.0f));
  y = V_MUL (V_MUL (y, V_POW2I (n_low)), V_ADD (V_SET1 (1.0f), V_SUB (n, n_low)));
  y = V_SELECT_LT (x, V_SET1 (-87.33654f), V_SET1 (0.0f), y);
  y = V_SELECT_LT (V_SET1 (88.72283f), x, V_SET1 (INFINITY), y);
  return V_KEEP_NAN (x, y);
}

/* exp_v for x ≤ 0 or NaN (a softmax's x - max): the same values without
 * the fix-ups for the top of the range, which x never reaches (n ≤ 0):
 * a third fewer operations in the softmax's hottest loop. The exponent
 * n comes from x clamped with x first, which V_MAX replaces by the bound
 * when x is NaN (n stays a number), the reduced argument from x clamped
 * with x second, which keeps NaN (V_MAX's operand order): y is NaN then. */
static inline V
VM (exp_nonpositive_v) (V x)
{
  V lo = V_SET1 (-87.33654f), xc = V_MAX (lo, x), n = VM (exp_exponent_v) (V_MAX (x, lo));
  V y = V_MUL (VM (exp_reduced_v) (xc, n), V_POW2I (n));
  return V_SELECT_LT (x, V_SET1 (-87.33654f), V_SET1 (0.0f), y);
}

/* x·sigmoid (x) = x · (1 / (1 + exp_v (-x))), the sums of a Sigmoid then
 * a Mul, but e^-x with -x clamped to [-87.34, 88], where n ≤ 127 and
 * exp_v's fix-ups for the ends change nothing, and one select for x below
 * -88 (sigmoid 0, as exp_v's +inf gives from -88.7 on; -inf · 0 is NaN):
 * a third fewer operations (EfficientNet's SiLU after every convolution).
 * NaN stays NaN through the product. */
static inline V
VM (silu_v) (V x)
{
  V xc = V_MIN (V_MAX (V_SUB (V_SET1 (0.0f), x), V_SET1 (-87.33654f)), V_SET1 (88.0f)), n = VM (exp_exponent_v) (xc);
  V e = V_MUL (VM (exp_reduced_v) (xc, n), V_POW2I (n));
  V sigmoid = V_DIV (V_SET1 (1.0f), V_ADD (V_SET1 (1.0f), e));
  return V_MUL (x, V_SELECT_LT (x, V_SET1 (-88.0f), V_SET1 (0.0f), sigmoid));
}

/* erf without a division and without exp_v's fix-ups for the ends, split
 * as MLAS's erf is (a faithfully rounded erff's approach), with
 * coefficients fitted here (Lawson's weighted least squares towards
 * minimax, in double): below |x| = 0.921875 erf is odd, x + x·P (x²) with
 * P of degree 5 (relative error 1.6e-8); above, 1 - erf = e^-r with
 * r = a + a·Q (a) for a = |x| clamped to 3.95, Q of degree 6 (error in r
 * 7e-10). From 3.95 on 1 - e^-r rounds to 1 exactly, so GELU's 1 + erf
 * cancels to 0 (and to NaN at -inf, as the sums give). Both branches are
 * computed and one is selected. NaN gives any value: erf_v and GELU keep
 * it themselves. With VM_SHORT_CHAINS the two longest polynomials go by
 * Estrin's scheme (more operations, shorter dependency chains): AVX2,
 * whose 16 registers hold fewer iterations in flight, was bound by the
 * chains (GELU 1.06 → 0.93 ns per float on an EPYC), AVX-512 by the
 * operations (0.58 → 0.61 with Estrin). */
static inline V
VM (erf_unchecked_v) (V x)
{
  V a = V_ABS (x), x2 = V_MUL (x, x);
  V p = V_SET1 (-5.990834907e-04f);
  p = V_FMA (p, x2, V_SET1 (4.993176553e-03f));
  p = V_FMA (p, x2, V_SET1 (-2.676661313e-02f));
  p = V_FMA (p, x2, V_SET1 (1.128181592e-01f));
  p = V_FMA (p, x2, V_SET1 (-3.761249483e-01f));
  p = V_FMA (p, x2, V_SET1 (1.283791512e-01f));
  V small = V_FMA (p, x, x);
  V ac = V_MIN (a, V_SET1 (3.95f));
#if VM_SHORT_CHAINS
  /* Estrin's scheme: a chain of 4 operations instead of Horner's 6 */
  V a2 = V_MUL (ac, ac), a4 = V_MUL (a2, a2);
  V q = V_FMA (a2, V_SET1 (1.159066687e-05f), V_FMA (ac, V_SET1 (-3.263399412e-04f), V_SET1 (3.656570567e-03f)));
  q = V_FMA (a4, q, V_FMA (a2, V_FMA (ac, V_SET1 (-2.379130945e-02f), V_SET1 (1.062700972e-01f)),
                           V_FMA (ac, V_SET1 (6.351317167e-01f), V_SET1 (1.286532134e-01f))));
#else
  V q = V_SET1 (1.159066687e-05f);
  q = V_FMA (q, ac, V_SET1 (-3.263399412e-04f));
  q = V_FMA (q, ac, V_SET1 (3.656570567e-03f));
  q = V_FMA (q, ac, V_SET1 (-2.379130945e-02f));
  q = V_FMA (q, ac, V_SET1 (1.062700972e-01f));
  q = V_FMA (q, ac, V_SET1 (6.351317167e-01f));
  q = V_FMA (q, ac, V_SET1 (1.286532134e-01f));
#endif
  V r = V_FMA (q, ac, ac);
  /* e^-r for r in [0.8, 16.4], so n = round (-r/ln2) in [-24, -1] needs
   * none of exp_v's fix-ups: n + 127 comes out in the low bits of t (the
   * rounding by adding 1.5·2^23, biased), s = r + n·ln2 in two parts, and
   * e^-s = 1 - s + s²·P (-s) (Cephes' P, its odd terms negated) */
  V t = V_FMA (r, V_SET1 (-1.44269504088896341f), V_SET1 (12583039.0f));
  V n = V_SUB (t, V_SET1 (12583039.0f));
  V s = V_FMA (n, V_SET1 (0.693359375f), r);
  s = V_FMA (n, V_SET1 (-2.12194440e-4f), s);
#if VM_SHORT_CHAINS
  V s2 = V_MUL (s, s);
  V e = V_FMA (s2, V_FMA (s, V_SET1 (-1.9875691500e-4f), V_SET1 (1.3981999507e-3f)),
               V_FMA (s, V_SET1 (-8.3334519073e-3f), V_SET1 (4.1665795894e-2f)));
  e = V_FMA (s2, e, V_FMA (s, V_SET1 (-1.6666665459e-1f), V_SET1 (5.0000001201e-1f)));
  e = V_FMA (s2, e, V_FMA (s, V_SET1 (-1.0f), V_SET1 (1.0f)));
#else
  V e = V_SET1 (-1.9875691500e-4f);
  e = V_FMA (e, s, V_SET1 (1.3981999507e-3f));
  e = V_FMA (e, s, V_SET1 (-8.3334519073e-3f));
  e = V_FMA (e, s, V_SET1 (4.1665795894e-2f));
  e = V_FMA (e, s, V_SET1 (-1.6666665459e-1f));
  e = V_FMA (e, s, V_SET1 (5.0000001201e-1f));
  e = V_FMA (e, s, V_SET1 (-1.0f));
  e = V_FMA (e, s, V_SET1 (1.0f));
#endif
  e = V_MUL (e, V_POW2_LOW_BITS (t));
  V big = V_OR_SIGN (V_SUB (V_SET1 (1.0f), e), x);
  return V_SELECT_LT (a, V_SET1 (0.921875f), small, big);
}

/* without the division of Abramowitz and Stegun's rational form beside a
 * Taylor series and without a full exp_v, a third fewer operations
 * (Mixer's GELU) */
static inline V
VM (erf_v) (V x)
{
  return V_KEEP_NAN (x, VM (erf_unchecked_v) (x));
}

/* tanh as a rational function of degree 13/6 (Eigen's), ±1 beyond ±7.9,
 * and x itself below 4e-4. */
static inline V
VM (tanh_v) (V x)
{
  V xc = V_MIN (V_MAX (x, V_SET1 (-7.90531110763549805f)), V_SET1 (7.90531110763549805f));
  V x2 = V_MUL (xc, xc);
  V p = V_SET1 (-2.76076847742355e-16f);
  p = V_FMA (p, x2, V_SET1 (2.00018790482477e-13f));
  p = V_FMA (p, x2, V_SET1 (-8.60467152213735e-11f));
  p = V_FMA (p, x2, V_SET1 (5.12229709037114e-08f));
  p = V_FMA (p, x2, V_SET1 (1.48572235717979e-05f));
  p = V_FMA (p, x2, V_SET1 (6.37261928875436e-04f));
  p = V_FMA (p, x2, V_SET1 (4.89352455891786e-03f));
  p = V_MUL (p, xc);
  V q = V_SET1 (1.19825839466702e-06f);
  q = V_FMA (q, x2, V_SET1 (1.18534705686654e-04f));
  q = V_FMA (q, x2, V_SET1 (2.26843463243900e-03f));
  q = V_FMA (q, x2, V_SET1 (4.89352518554385e-03f));
  V y = V_SELECT_LT (V_ABS (x), V_SET1 (4e-4f), x, V_DIV (p, q));
  /* ±1 exactly, not one ulp short, so that 1 + tanh cancels to 0 in GELU */
  y = V_SELECT_LT (V_SET1 (7.90531110763549805f), V_ABS (x), V_COPYSIGN (V_SET1 (1.0f), x), y);
  return V_KEEP_NAN (x, y);
}

static inline V
VM (gelu_v) (V x, gboolean tanh_form)
{
  V half_x = V_MUL (x, V_SET1 (0.5f));
  V f;
  if (tanh_form)
    f = VM (tanh_v) (V_MUL (V_SET1 (0.7978845608028654f), V_FMA (V_MUL (V_MUL (x, x), x), V_SET1 (0.044715f), x)));
  else
    f = VM (erf_unchecked_v) (V_MUL (x, V_SET1 (0.7071067811865476f))); /* NaN: half_x is NaN */
  return V_FMA (half_x, f, half_x);
}

/* 1 / (1 + e^-x): 0 below -88, 1 above 17, NaN stays NaN. */
static inline V
VM (sigmoid_v) (V x)
{
  return V_DIV (V_SET1 (1.0f), V_ADD (V_SET1 (1.0f), VM (exp_v) (V_SUB (V_SET1 (0.0f), x))));
}

/* One elementwise row function per V function: whole vectors, then the
 * portable function for the tail. */
#define VM_ROW(name, expr, tail)                                               \
  static GRAFT_HOT_LOOP void                                                   \
  VM (name##_row) (const float *x, float *y, gint64 n, gboolean flag)          \
  {                                                                            \
    gint64 i = 0;                                                              \
    (void) flag;                                                               \
    for (; i + VW <= n; i += VW)                                               \
      {                                                                        \
        V v = V_LOAD (x + i);                                                  \
        V_STORE (y + i, expr);                                                 \
      }                                                                        \
    for (; i < n; i++)                                                         \
      y[i] = tail;                                                             \
  }
/* x·clamp (x·α + 1/2, 0, 1), α = 1/6 as onnx::HardSwish defines it (a
 * multiply-add where x/6 would wait on a division): NaN kept (the
 * comparisons leave a NaN ratio as it is) */
static inline V
VM (hard_swish_v) (V x)
{
  V r = V_FMA (x, V_SET1 (1.0f / 6.0f), V_SET1 (0.5f));
  r = V_SELECT_LT (r, V_SET1 (0.0f), V_SET1 (0.0f), r);
  r = V_SELECT_LT (V_SET1 (1.0f), r, V_SET1 (1.0f), r);
  return V_MUL (x, r);
}

VM_ROW (exp, VM (exp_v) (v), exp_v_portable (x[i]))
VM_ROW (erf, VM (erf_v) (v), erf_v_portable (x[i]))
VM_ROW (tanh, VM (tanh_v) (v), tanh_v_portable (x[i]))
VM_ROW (gelu, VM (gelu_v) (v, flag), gelu_v_portable (x[i], flag))
VM_ROW (sigmoid, VM (sigmoid_v) (v), sigmoid_v_portable (x[i]))
VM_ROW (hard_swish, VM (hard_swish_v) (v), hard_swish_v_portable (x[i]))
#undef VM_ROW

/* Sum over a row of v(x[i]), in lanes, then the lanes in double. */
static inline double
VM (lanes_sum) (V acc)
{
  return V_HSUM_DOUBLE (acc);
}

/* FALSE when the row's maximum or its sum of exponentials is not finite.
 * The sum can only fail after y was written when a NaN hid from V_MAX; the
 * caller's double path then gives all NaN from x or from y alike, so x may
 * be y. The last n mod VW values go through one partial vector in each
 * pass (padded with -inf, whose exponential is 0): attention over 79
 * frames spent most of its softmax in scalar tails. */
static GRAFT_HOT_LOOP gboolean
VM (softmax_row) (const float *x, float *y, gint64 n, gboolean log_form, float *inv_sum)
{
  V vmax = V_SET1 (-INFINITY);
  gint64 i = 0, left = n % VW, full = n - left;
  for (; i < full; i += VW)
    vmax = V_MAX (vmax, V_LOAD (x + i));
  if (left > 0)
    vmax = V_MAX (vmax, V_LOAD_PARTIAL (x + full, left, -INFINITY));
  float mx = V_HMAX (vmax);
  if (!isfinite (mx))
    return FALSE;
  /* a NaN that V_MAX passed over makes the sum NaN: checked below */
  V shift = V_SET1 (mx), acc = V_SET1 (0.0f);
  for (i = 0; i < full; i += VW)
    {
      V e = VM (exp_nonpositive_v) (V_SUB (V_LOAD (x + i), shift));
      if (!log_form)
        V_STORE (y + i, e);
      acc = V_ADD (acc, e);
    }
  if (left > 0)
    {
      V e = VM (exp_nonpositive_v) (V_SUB (V_LOAD_PARTIAL (x + full, left, -INFINITY), shift));
      if (!log_form)
        V_STORE_PARTIAL (y + full, e, left);
      acc = V_ADD (acc, e);
    }
  double sum = VM (lanes_sum) (acc);
  if (!isfinite (sum) || sum <= 0)
    return FALSE;
  if (log_form)
    {
      /* (x - max) - log sum: x - (max + log sum) would lose log sum against a huge max */
      float log_sum = log (sum);
      V vlog_sum = V_SET1 (log_sum);
      for (i = 0; i < full; i += VW)
        V_STORE (y + i, V_SUB (V_SUB (V_LOAD (x + i), shift), vlog_sum));
      for (i = full; i < n; i++)
        y[i] = (x[i] - mx) - log_sum;
      return TRUE;
    }
  if (inv_sum != NULL)
    {
      /* the caller scales */
      *inv_sum = (float) (1.0 / sum);
      return TRUE;
    }
  V inv = V_SET1 ((float) (1.0 / sum));
  for (i = 0; i < full; i += VW)
    V_STORE (y + i, V_MUL (V_LOAD (y + i), inv));
  if (left > 0)
    V_STORE_PARTIAL (y + full, V_MUL (V_LOAD_PARTIAL (y + full, left, 0.0f), inv), left);
  return TRUE;
}

/* Softmax along the first axis of x [n, stride] for its columns [0,
 * width), VW columns to a vector: the max down each column, then
 * e^(x - max) and its sum, then the scaling, all within the VW columns
 * while their n values are still in cache. A column whose maximum or sum
 * is not finite goes to softmax_column_double (vector-math.c), which
 * reads x only: x and y must not overlap. */
static GRAFT_HOT_LOOP void
VM (softmax_columns) (const float *x, float *y, gint64 n, gint64 stride, gint64 width, gboolean log_form)
{
  gint64 c = 0;
  for (; c + VW <= width; c += VW)
    {
      const float *xc = x + c;
      float *yc = y + c;
      V vmax = V_SET1 (-INFINITY);
      for (gint64 k = 0; k < n; k++)
        vmax = V_MAX (vmax, V_LOAD (xc + k * stride));
      float lanes[VW];
      gboolean finite = TRUE;
      V_STORE (lanes, vmax);
      for (int j = 0; j < VW; j++)
        finite &= isfinite (lanes[j]);
      /* compensated (Kahan) sums: LogSoftmax's log sum near 0 needs more
       * than a float sum's digits, as softmax_row's sum across lanes in
       * double gives */
      V acc = V_SET1 (0.0f), lost = V_SET1 (0.0f);
      for (gint64 k = 0; finite && k < n; k++)
        {
          V e = VM (exp_nonpositive_v) (V_SUB (V_LOAD (xc + k * stride), vmax));
          if (!log_form)
            V_STORE (yc + k * stride, e);
          V term = V_SUB (e, lost), next = V_ADD (acc, term);
          lost = V_SUB (V_SUB (next, acc), term);
          acc = next;
        }
      /* a NaN that V_MAX passed over makes its sum NaN */
      float lost_lanes[VW];
      V_STORE (lanes, acc);
      V_STORE (lost_lanes, lost);
      for (int j = 0; finite && j < VW; j++)
        finite &= isfinite (lanes[j]) && lanes[j] > 0;
      if (!finite)
        {
          for (int j = 0; j < VW; j++)
            softmax_column_double (xc + j, yc + j, n, stride, log_form);
          continue;
        }
      if (log_form)
        {
          /* (x - max) - log sum, as softmax_row */
          for (int j = 0; j < VW; j++)
            lanes[j] = log ((double) lanes[j] - lost_lanes[j]);
          V log_sum = V_LOAD (lanes);
          for (gint64 k = 0; k < n; k++)
            V_STORE (yc + k * stride, V_SUB (V_SUB (V_LOAD (xc + k * stride), vmax), log_sum));
          continue;
        }
      V inv = V_DIV (V_SET1 (1.0f), acc);
      for (gint64 k = 0; k < n; k++)
        V_STORE (yc + k * stride, V_MUL (V_LOAD (yc + k * stride), inv));
    }
  if (c < width)
    softmax_columns_portable (x + c, y + c, n, stride, width - c, log_form);
}

static GRAFT_HOT_LOOP void
VM (normalize_row) (const float *x, float *y, gint64 n, const float *scale, const float *bias, float eps,
                    gboolean rms, float *mean_out, float *inv_out)
{
  gint64 i;
  float mean = 0;
  if (!rms)
    {
      V acc = V_SET1 (0.0f);
      double sum;
      for (i = 0; i + VW <= n; i += VW)
        acc = V_ADD (acc, V_LOAD (x + i));
      sum = VM (lanes_sum) (acc);
      for (; i < n; i++)
        sum += x[i];
      mean = n > 0 ? sum / n : 0;
    }
  V vmean = V_SET1 (mean), acc = V_SET1 (0.0f);
  double sq;
  for (i = 0; i + VW <= n; i += VW)
    {
      V d = V_SUB (V_LOAD (x + i), vmean);
      acc = V_FMA (d, d, acc);
    }
  sq = VM (lanes_sum) (acc);
  for (; i < n; i++)
    sq += (double) (x[i] - mean) * (x[i] - mean);
  float inv = 1.0 / sqrt ((n > 0 ? sq / n : 0) + eps);
  V vinv = V_SET1 (inv);
  for (i = 0; i + VW <= n; i += VW)
    {
      V v = V_MUL (V_MUL (V_SUB (V_LOAD (x + i), vmean), vinv), V_LOAD (scale + i));
      V_STORE (y + i, bias ? V_ADD (v, V_LOAD (bias + i)) : v);
    }
  for (; i < n; i++)
    y[i] = (x[i] - mean) * inv * scale[i] + (bias ? bias[i] : 0);
  *mean_out = mean;
  *inv_out = inv;
}

/* Sum of x[0..n) - center (squared when squared) in vector lanes of
 * float, the lanes then added in double every MOMENT_BLOCK values (64 per
 * lane) so that a long run (a group of a whole feature map) does not lose
 * digits in float; the center (a value of the run for the mean, then the
 * mean) keeps the float sums at the scale of the spread rather than of
 * the mean. */
#define MOMENT_BLOCK (64 * VW)

static inline double
VM (block_moment) (const float *x, gint64 n, float center, gboolean squared)
{
  V vc = V_SET1 (center);
  double sum = 0;
  for (gint64 start = 0; start < n; start += MOMENT_BLOCK)
    {
      gint64 end = MIN (start + MOMENT_BLOCK, n), i = start;
      V acc = V_SET1 (0.0f);
      for (; i + VW <= end; i += VW)
        {
          V d = V_SUB (V_LOAD (x + i), vc);
          acc = squared ? V_FMA (d, d, acc) : V_ADD (acc, d);
        }
      sum += VM (lanes_sum) (acc);
      for (; i < end; i++)
        sum += squared ? (double) (x[i] - center) * (x[i] - center) : x[i] - center;
    }
  return sum;
}

static GRAFT_HOT_LOOP void
VM (moments) (const float *x, gint64 n, float eps, float *mean_out, float *inv_out)
{
  float mean = n > 0 ? x[0] + VM (block_moment) (x, n, x[0], FALSE) / n : 0;
  double sq = VM (block_moment) (x, n, mean, TRUE);
  *mean_out = mean;
  *inv_out = 1.0 / sqrt ((n > 0 ? sq / n : 0) + eps);
}

/* The mean of each row of n values: the first one plus the mean of their
 * differences from it (as moments); a row within one block (EfficientNet's
 * 7 × 7 and 14 × 14 maps) adds its lanes pairwise, which leaves the lanes'
 * additions less in each other's way than block_moment's one chain. */
static GRAFT_HOT_LOOP void
VM (means) (const float *x, float *y, gint64 rows, gint64 n)
{
  for (gint64 r = 0; r < rows; r++, x += n)
    {
      if (n == 0 || n > MOMENT_BLOCK)
        {
          y[r] = n > 0 ? x[0] + VM (block_moment) (x, n, x[0], FALSE) / n : 0;
          continue;
        }
      gint64 i = 0;
      double sum = 0;
      /* a row shorter than a vector (a squeeze-excitation's pool over a
       * 2×2 map) has only the tail: the lanes would add up to 0 */
      if (n >= VW)
        {
          V vc = V_SET1 (x[0]), acc = V_SET1 (0.0f);
          for (; i + VW <= n; i += VW)
            acc = V_ADD (acc, V_SUB (V_LOAD (x + i), vc));
          float lanes[VW];
          double pairs[VW];
          V_STORE (lanes, acc);
          for (int j = 0; j < VW; j++)
            pairs[j] = lanes[j];
          for (int width = VW / 2; width > 0; width /= 2)
            for (int j = 0; j < width; j++)
              pairs[j] += pairs[j + width];
          sum = pairs[0];
        }
      for (; i < n; i++)
        sum += x[i] - x[0];
      y[r] = x[0] + sum / n;
    }
}

/* clamp (x·alpha + beta, 0, 1): onnx::HardSigmoid (MobileNetV3's
 * squeeze-excitation gate), NaN kept */
static GRAFT_HOT_LOOP void
VM (hard_sigmoid_row) (const float *x, float *y, gint64 n, float alpha, float beta)
{
  V va = V_SET1 (alpha), vb = V_SET1 (beta);
  gint64 i = 0;
  for (; i + VW <= n; i += VW)
    {
      V r = V_FMA (V_LOAD (x + i), va, vb);
      r = V_SELECT_LT (r, V_SET1 (0.0f), V_SET1 (0.0f), r);
      V_STORE (y + i, V_SELECT_LT (V_SET1 (1.0f), r, V_SET1 (1.0f), r));
    }
  if (VW > 1)
    hard_sigmoid_row_portable (x + i, y + i, n - i, alpha, beta);
}

static GRAFT_HOT_LOOP void
VM (affine_row) (const float *x, float *y, gint64 n, float center, float a, float b, gboolean silu)
{
  V vc = V_SET1 (center), va = V_SET1 (a), vb = V_SET1 (b);
  gint64 i = 0;
  if (silu)
    for (; i + VW <= n; i += VW)
      {
        V v = V_FMA (V_SUB (V_LOAD (x + i), vc), va, vb);
        V_STORE (y + i, VM (silu_v) (v));
      }
  else
    for (; i + VW <= n; i += VW)
      V_STORE (y + i, V_FMA (V_SUB (V_LOAD (x + i), vc), va, vb));
  for (; i < n; i++)
    {
      float v = (x[i] - center) * a + b;
      y[i] = silu ? silu_v_portable (v) : v;
    }
}

#undef MOMENT_BLOCK
#undef VM_CAT2
#undef VM_CAT
#undef VM
