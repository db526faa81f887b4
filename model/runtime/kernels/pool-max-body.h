/* The plane kernel of pool-max.c, written once and included once per
 * instruction set with:
 *   PM_V                  the vector type (__m512 or __m256)
 *   PM_LANES              floats per vector
 *   PM_MASK_T             a lane mask; PM_FIRST_LANES (n) the first n lanes (n clamped to 0..PM_LANES)
 *   PM_MASKED_LOAD (p, m) the masked lanes of p (never reading the others), zero elsewhere
 *   PM_MASKED_STORE (p, m, v)
 *   PM_LOAD (p)           an unaligned load
 *   PM_EVEN (p)           lanes 0, 2, 4 … of p [0, 2·PM_LANES)
 *   PM_MAX (v, m)         vmaxps: m when either is NaN
 *   PM_SET1 (f)
 *   PM_TARGET             the function attribute enabling the ISA (may be empty)
 *   PM_SUFFIX             appended to the functions' names
 * It defines max_pool_plane_<PM_SUFFIX>_stride{1,2} (GraftParallelFunc on
 * a MaxPoolJob).
 *
 * One plane, separably: per output row, the max over the window's rows
 * into a row padded with -inf on both sides (unit-stride loads), then the
 * max over each window's columns of it, every stride-th (stride 2: the
 * even lanes of two loads). Each input element is loaded once per output
 * row it serves instead of once per window it falls in, and no load needs
 * a mask worked out per window (ResNet-18's MaxPool at batch 2: 1.30 →
 * 0.58 ms with AVX-512, 1.86 → 0.96 ms with AVX2). Every max takes the
 * running value as its second operand, which vmaxps returns when either
 * is NaN: a NaN never wins, as in the portable loop; a window of NaN alone
 * gives -inf. */

#define PM_PASTE2(a, b) a##_##b
#define PM_PASTE(a, b) PM_PASTE2 (a, b)

static inline __attribute__ ((always_inline)) PM_TARGET void
PM_PASTE (max_pool_plane, PM_SUFFIX) (const MaxPoolJob *job, gint64 plane, const int sw)
{
  const GraftWindow *w = job->w;
  gint64 H = w->in[0], W = w->in[1], OH = w->out[0], OW = w->out[1];
  gint64 KH = w->kernel[0], KW = w->kernel[1], sh = w->stride[0];
  gint64 pt = w->pad_begin[0], pl = w->pad_begin[1];
  const float *x = job->x + plane * H * W;
  float *y = job->y + plane * OH * OW;
  const PM_V minus_inf = PM_SET1 (-INFINITY);
  gint64 length;
  g_autofree float *padded = padded_row_new (w, PM_LANES, &length);
  float *row = padded + pl;
  gint64 inside = CLAMP (length - pl, 0, W);   /* input columns some window reads */

  for (gint64 oh = 0; oh < OH; oh++, y += OW)
    {
      gint64 h0 = MAX (oh * sh - pt, 0), h1 = MIN (oh * sh - pt + KH, H);
      /* the rows the next output row adds, asked for while this one runs:
       * the input often comes from memory (after ResNet's stem, 6.4 MB),
       * and the row-by-row reads left the prefetchers behind (ResNet-18's
       * MaxPool 0.61 → 0.52 ms with AVX-512, 0.89 → 0.71 with AVX2) */
      for (gint64 h = h1; h < MIN (h1 + sh, H); h++)
        for (gint64 i = 0; i < inside; i += 16)
          __builtin_prefetch (x + h * W + i, 0, 3);
      for (gint64 i = 0; i < inside; i += PM_LANES)
        {
          PM_MASK_T lanes = PM_FIRST_LANES (inside - i);
          PM_V m = minus_inf;
          for (gint64 h = h0; h < h1; h++)
            m = PM_MAX (PM_MASKED_LOAD (x + h * W + i, lanes), m);
          PM_MASKED_STORE (row + i, lanes, m);
        }
      for (gint64 ow = 0; ow < OW; ow += PM_LANES)
        {
          PM_V m = minus_inf;
          for (gint64 kj = 0; kj < KW; kj++)
            {
              const float *p = padded + ow * sw + kj;
              m = PM_MAX (sw == 1 ? PM_LOAD (p) : PM_EVEN (p), m);
            }
          PM_MASKED_STORE (y + ow, PM_FIRST_LANES (OW - ow), m);
        }
    }
}

static PM_TARGET GRAFT_HOT_LOOP void
PM_PASTE (PM_PASTE (max_pool_plane, PM_SUFFIX), stride1) (gint64 plane, gpointer data)
{
  PM_PASTE (max_pool_plane, PM_SUFFIX) (data, plane, 1);
}

static PM_TARGET GRAFT_HOT_LOOP void
PM_PASTE (PM_PASTE (max_pool_plane, PM_SUFFIX), stride2) (gint64 plane, gpointer data)
{
  PM_PASTE (max_pool_plane, PM_SUFFIX) (data, plane, 2);
}

#undef PM_V
#undef PM_LANES
#undef PM_MASK_T
#undef PM_FIRST_LANES
#undef PM_MASKED_LOAD
#undef PM_MASKED_STORE
#undef PM_LOAD
#undef PM_EVEN
#undef PM_MAX
#undef PM_SET1
#undef PM_TARGET
#undef PM_SUFFIX
