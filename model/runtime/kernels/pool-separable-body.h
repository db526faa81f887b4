/* The plane kernels of pool-separable.c, written once and included once
 * per instruction set with:
 *   PS_V                  the vector type (__m512 or __m256)
 *   PS_LANES              floats per vector
 *   PS_MASK_T             a lane mask; PS_FIRST_LANES (n) the first n lanes (n clamped to 0..PS_LANES)
 *   PS_MASKED_LOAD (p, m) the masked lanes of p (never reading the others), zero elsewhere
 *   PS_MASKED_STORE (p, m, v)
 *   PS_BLEND (m, a, b)    a in the lanes of m, b in the others
 *   PS_MASK_ANDNOT (a, b) the lanes of b not in a
 *   PS_LOAD (p)           an unaligned load; PS_STORE (p, v) an unaligned store
 *   PS_EVEN (p)           lanes 0, 2, 4 … of p [0, 2·PS_LANES)
 *   PS_MAX (v, m)         vmaxps: m when either is NaN
 *   PS_ADD (v, m), PS_MUL (a, b), PS_SET1 (f)
 *   PS_TARGET             the function attribute enabling the ISA (may be empty)
 *   PS_SUFFIX             appended to the functions' names
 * It defines {max,avg}_pool_plane_<PS_SUFFIX>_stride{1,2}
 * (GraftParallelFunc on the ranges of a SeparablePoolJob's planes).
 *
 * One plane, separably: per output row, the max (sum) over the window's
 * rows into a row padded with -inf (zeros) on both sides (unit-stride
 * loads), then the max (sum) over each window's columns of it, every
 * stride-th (stride 2: the even lanes of two loads); an average then
 * scales by its row's and its columns' 1/count. Each input element is
 * loaded once per output row it serves instead of once per window it
 * falls in, and no load needs a mask worked out per window (ResNet-18's
 * MaxPool at batch 2: 1.30 → 0.58 ms with AVX-512, 1.86 → 0.96 ms with
 * AVX2; PoolFormer-S12's twelve 3×3 AveragePools at batch 2, 8.3 →
 * 0.53 ms with AVX-512, from the portable loop). Every max takes the running value as its second
 * operand, which vmaxps returns when either is NaN: a NaN never wins, as
 * in the portable loop; a window of NaN alone gives -inf. */

#define PS_DIRECT_KW 16          /* the widest window read straight from x … */
#define PS_DIRECT_VECTORS 1       /* … on rows of at most this many vectors */

#define PS_PASTE2(a, b) a##_##b
#define PS_PASTE(a, b) PS_PASTE2 (a, b)

static inline __attribute__ ((always_inline)) PS_TARGET void
PS_PASTE (pool_plane, PS_SUFFIX) (const SeparablePoolJob *job, gint64 plane, float *padded, gint64 length,
                                  const int sw, const gboolean average, const int chunk_rows)
{
  const GraftWindow *w = job->w;
  gint64 H = w->in[0], W = w->in[1], OH = w->out[0], OW = w->out[1];
  gint64 KH = w->kernel[0], KW = w->kernel[1], sh = w->stride[0];
  gint64 pt = w->pad_begin[0], pl = w->pad_begin[1];
  const float *x = job->x + plane * H * W;
  float *y = job->y + plane * OH * OW;
  const float fill = average ? 0.0f : -INFINITY;
  const PS_V fill_v = PS_SET1 (fill);

  /* Rows of one vector: every window straight from x, a masked load per
   * tap. Through the padded row, each window's loads would read the
   * vector just stored there at an offset, which no store forwards: each
   * waited for the store to retire (most of the time of PoolFormer's
   * pools on 4×4 and 2×2 maps). Rows of two vectors (16×16 maps with
   * AVX2) were slower this way: the separable sums load less. */
  if (sw == 1 && OW <= PS_DIRECT_VECTORS * PS_LANES && KW <= PS_DIRECT_KW)
    {
      PS_MASK_T cols[PS_DIRECT_VECTORS][PS_DIRECT_KW], out[PS_DIRECT_VECTORS];
      PS_V column_scale[PS_DIRECT_VECTORS];
      gint64 vectors = (OW + PS_LANES - 1) / PS_LANES;
      for (gint64 v = 0; v < vectors; v++)
        {
          gint64 ow = v * PS_LANES;
          /* tap kj of lane l reads column ow + l + kj - pl: inside [0, W), ow + l < OW */
          for (gint64 kj = 0; kj < KW; kj++)
            cols[v][kj] = PS_MASK_ANDNOT (PS_FIRST_LANES (pl - kj - ow), PS_FIRST_LANES (MIN (W + pl - kj, OW) - ow));
          out[v] = PS_FIRST_LANES (OW - ow);
          column_scale[v] = average ? PS_LOAD (job->column_scale + ow) : fill_v;
        }
      for (gint64 oh = 0; oh < OH; oh++, y += OW)
        {
          gint64 h0 = MAX (oh * sh - pt, 0), h1 = MIN (oh * sh - pt + KH, H);
          for (gint64 v = 0; v < vectors; v++)
            {
              PS_V m = fill_v;
              for (gint64 h = h0; h < h1; h++)
                for (gint64 kj = 0; kj < KW; kj++)
                  {
                    PS_V l = PS_MASKED_LOAD (x + h * W + v * PS_LANES + kj - pl, cols[v][kj]);
                    m = average ? PS_ADD (l, m) : PS_MAX (PS_BLEND (cols[v][kj], l, fill_v), m);
                  }
              if (average)
                m = PS_MUL (PS_MUL (m, column_scale[v]), PS_SET1 (job->row_scale[oh]));
              PS_MASKED_STORE (y + v * PS_LANES, out[v], m);
            }
        }
      return;
    }
  gint64 inside = CLAMP (length - pl, 0, W);   /* input columns some window reads */

  /* Rows of up to four vectors: the vertical pass for CHUNK_ROWS output
   * rows, then their horizontal one. Right after the vertical stores to
   * a short row, the horizontal loads overlap them at an offset, which no
   * store forwards, and waited for them to retire: 3×3/2 MaxPool at batch
   * 2, one thread, CPU ms, AVX-512 (AVX2): SqueezeNet's 64×31×31 0.033 →
   * 0.022 (0.035 → 0.032), 128×15×15 0.030 → 0.018 (0.028 → 0.022);
   * ResNet's 64×112×112 (56 outputs a row) 0.206 → 0.210 at AVX-512.
   * Longer rows keep one row at a time: there the next row's input, from
   * memory, arrives while this row's horizontal pass runs (the same at
   * AVX2, seven vectors: chunked 0.277 → 0.295; one row at a time 0.262).
   * chunk_rows: CHUNK_ROWS or 1, a constant in each copy of this function. */
  for (gint64 oh0 = 0; oh0 < OH; oh0 += chunk_rows)
    {
      gint64 chunk = MIN (chunk_rows, OH - oh0);
      for (gint64 r = 0; r < chunk; r++)
        {
          gint64 oh = oh0 + r;
          float *row = padded + r * length + pl;
          gint64 h0 = MAX (oh * sh - pt, 0), h1 = MIN (oh * sh - pt + KH, H);
          /* the rows the next output row adds, asked for while this one runs:
           * the input often comes from memory (after ResNet's stem, 6.4 MB),
           * and the row-by-row reads left the prefetchers behind (ResNet-18's
           * MaxPool 0.61 → 0.52 ms with AVX-512, 0.89 → 0.71 with AVX2) */
          for (gint64 h = h1; h < MIN (h1 + sh, H); h++)
            for (gint64 i = 0; i < inside; i += 16)
              __builtin_prefetch (x + h * W + i, 0, 3);
          /* whole vectors without masks (AVX2's masked stores cost AMD cores
           * a dozen cycles each); the last one's masked lanes get the fill,
           * and the padded row has room for a whole vector there */
          gint64 i = 0;
          for (; i + PS_LANES <= inside; i += PS_LANES)
            {
              PS_V m = fill_v;
              for (gint64 h = h0; h < h1; h++)
                m = average ? PS_ADD (PS_LOAD (x + h * W + i), m) : PS_MAX (PS_LOAD (x + h * W + i), m);
              PS_STORE (row + i, m);
            }
          if (i < inside)
            {
              PS_MASK_T lanes = PS_FIRST_LANES (inside - i);
              PS_V m = fill_v;
              for (gint64 h = h0; h < h1; h++)
                {
                  PS_V v = PS_MASKED_LOAD (x + h * W + i, lanes);
                  m = average ? PS_ADD (v, m) : PS_MAX (v, m);
                }
              /* (a sum's masked lanes are already 0, its fill) */
              PS_STORE (row + i, average ? m : PS_BLEND (lanes, m, fill_v));
            }
        }
      for (gint64 r = 0; r < chunk; r++)
        {
          gint64 oh = oh0 + r;
          const float *row = padded + r * length;
          float *yr = y + oh * OW;
          const PS_V row_scale = PS_SET1 (average ? job->row_scale[oh] : 0);
          for (gint64 ow = 0; ow < OW; ow += PS_LANES)
            {
              PS_V m = fill_v;
              for (gint64 kj = 0; kj < KW; kj++)
                {
                  const float *p = row + ow * sw + kj;
                  PS_V v = sw == 1 ? PS_LOAD (p) : PS_EVEN (p);
                  m = average ? PS_ADD (v, m) : PS_MAX (v, m);
                }
              if (average)
                m = PS_MUL (PS_MUL (m, PS_LOAD (job->column_scale + ow)), row_scale);
              if (ow + PS_LANES <= OW)
                PS_STORE (yr + ow, m);
              else
                PS_MASKED_STORE (yr + ow, PS_FIRST_LANES (OW - ow), m);
            }
        }
    }
}

/* Planes [TINY_PLANES_PER_TASK·index, +TINY_PLANES_PER_TASK) of up to
 * TINY_PLANE pixels, PS_LANES planes at a time with one plane in each
 * lane: the planes are copied into t [pixel][lane], each output is the
 * max of its window's vectors of t, and its lanes go to the planes' y.
 * A plane alone would leave most lanes of a row empty (SqueezeNet's 3×3
 * at stride 2 over 7×7 maps: rows of 7, 3 outputs each) and its windows
 * to scalar comparisons. Same NaN rule as the plane kernels (the running
 * value is vmaxps's second operand). */
static PS_TARGET GRAFT_HOT_LOOP void
PS_PASTE (max_pool_tiny, PS_SUFFIX) (gint64 index, gpointer data)
{
  const SeparablePoolJob *job = data;
  const GraftWindow *w = job->w;
  gint64 H = w->in[0], W = w->in[1], OH = w->out[0], OW = w->out[1], in = H * W, out = OH * OW;
  gint64 p0 = index * TINY_PLANES_PER_TASK, p1 = MIN (p0 + TINY_PLANES_PER_TASK, job->planes);
  float t[TINY_PLANE * PS_LANES] __attribute__ ((aligned (64)));
  float m_lanes[PS_LANES] __attribute__ ((aligned (64)));
  const PS_V lowest = PS_SET1 (-INFINITY);
  for (gint64 p = p0; p < p1; p += PS_LANES)
    {
      gint64 n = MIN (PS_LANES, p1 - p);
      for (gint64 l = 0; l < PS_LANES; l++)
        {
          /* lanes past the last plane: the last one again, never read past x */
          const float *x = job->x + (p + MIN (l, n - 1)) * in;
          for (gint64 i = 0; i < in; i++)
            t[i * PS_LANES + l] = x[i];
        }
      for (gint64 oh = 0; oh < OH; oh++)
        {
          gint64 h0 = MAX (oh * w->stride[0] - w->pad_begin[0], 0);
          gint64 h1 = MIN (oh * w->stride[0] - w->pad_begin[0] + w->kernel[0], H);
          for (gint64 ow = 0; ow < OW; ow++)
            {
              gint64 c0 = MAX (ow * w->stride[1] - w->pad_begin[1], 0);
              gint64 c1 = MIN (ow * w->stride[1] - w->pad_begin[1] + w->kernel[1], W);
              PS_V m = lowest;
              for (gint64 h = h0; h < h1; h++)
                for (gint64 c = c0; c < c1; c++)
                  m = PS_MAX (PS_LOAD (t + (h * W + c) * PS_LANES), m);
              PS_STORE (m_lanes, m);
              float *y = job->y + p * out + oh * OW + ow;
              for (gint64 l = 0; l < n; l++)
                y[l * out] = m_lanes[l];
            }
        }
    }
}

/* The GraftParallelFunc of one kind (max_pool_plane, avg_pool_plane)
 * at one horizontal stride, sw and average constants within it, over the
 * planes of range r: one padded row for all of them (allocated per plane,
 * it had cost the 2×2 maps of PoolFormer's last stage more than their
 * sums). */
#define PS_PLANE(kind, sw, average)                                                             \
  static PS_TARGET GRAFT_HOT_LOOP void                                                          \
  PS_PASTE (PS_PASTE (kind, PS_SUFFIX), stride##sw) (gint64 r, gpointer data)                   \
  {                                                                                             \
    const SeparablePoolJob *job = data;                                                         \
    gint64 length;                                                                              \
    g_autofree float *padded = padded_rows_new (job->w, PS_LANES, average ? 0.0f : -INFINITY, &length); \
    gboolean short_rows = job->w->out[1] <= 4 * PS_LANES;                                      \
    for (gint64 p = r * job->planes / job->ranges; p < (r + 1) * job->planes / job->ranges; p++) \
      if (short_rows)                                                                           \
        PS_PASTE (pool_plane, PS_SUFFIX) (job, p, padded, length, sw, average, CHUNK_ROWS);     \
      else                                                                                      \
        PS_PASTE (pool_plane, PS_SUFFIX) (job, p, padded, length, sw, average, 1);              \
  }

PS_PLANE (max_pool_plane, 1, FALSE)
PS_PLANE (max_pool_plane, 2, FALSE)
PS_PLANE (avg_pool_plane, 1, TRUE)
PS_PLANE (avg_pool_plane, 2, TRUE)

#undef PS_PLANE

#undef PS_V
#undef PS_LANES
#undef PS_MASK_T
#undef PS_FIRST_LANES
#undef PS_MASKED_LOAD
#undef PS_MASKED_STORE
#undef PS_LOAD
#undef PS_STORE
#undef PS_BLEND
#undef PS_MASK_ANDNOT
#undef PS_DIRECT_KW
#undef PS_DIRECT_VECTORS
#undef PS_EVEN
#undef PS_MAX
#undef PS_ADD
#undef PS_MUL
#undef PS_SET1
#undef PS_TARGET
#undef PS_SUFFIX
