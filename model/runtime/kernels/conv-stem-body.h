/* The micro-kernels of conv-stem.c, written once over a GCC vector type
 * and included once per instruction set with:
 *   ST_V                    the vector type (vector_size of ST_LANES floats)
 *   ST_LANES                floats per vector
 *   ST_ROWS                 filter rows per call, of a panel's GRAFT_CONV_GEMM_ROWS
 *   ST_TARGET               the function attribute enabling the ISA (may be empty)
 *   ST_MASK_T               a lane mask; ST_FIRST_LANES (n) the first n lanes
 *   ST_MASKED_LOAD (p, m)   the masked lanes of p, zero elsewhere
 *   ST_STORE_FIRST (p, n, v) the first n lanes of v to p
 *   ST_CLAMP (v, lo, hi)    v clamped to [lo, hi], NaN kept
 *   ST_SUFFIX               appended to the names
 * It defines stem_kernels_<ST_SUFFIX>[V - 1], the kernel of V = 1 to 3
 * vectors (StemKernel): rows r < rows of y, each vector's pixels at
 * v->out[i] + (m0 + r)·ldy, = clamp (Σ_k a[k][r] · v->in[i][tap_off[k]]
 * + bias[r] [+ the residual at the same place]). */

#define ST_PASTE2(a, b) a##_##b
#define ST_PASTE(a, b) ST_PASTE2 (a, b)

static inline __attribute__ ((always_inline)) ST_TARGET void
ST_PASTE (stem_body, ST_SUFFIX) (gint64 K, const gint64 *tap_off, const float *a, const StemVectors *v, gint64 m0,
                                 gint64 ldy, const float *bias, int rows, gboolean clamp, float lo, float hi,
                                 const int V)
{
  ST_V acc[ST_ROWS][3];
#pragma GCC unroll 8
  for (int r = 0; r < ST_ROWS; r++)
    for (int i = 0; i < V; i++)
      acc[r][i] = (ST_V) { 0 };
  const float *in0 = v->in[0], *in1 = v->in[V > 1 ? 1 : 0], *in2 = v->in[V > 2 ? 2 : 0];
#pragma GCC unroll 4
  for (gint64 k = 0; k < K; k++, a += GRAFT_CONV_GEMM_ROWS)
    {
      gint64 off = tap_off[k];
      ST_V x[3];
      memcpy (&x[0], in0 + off, sizeof (ST_V));
      if (V > 1)
        memcpy (&x[1], in1 + off, sizeof (ST_V));
      if (V > 2)
        memcpy (&x[2], in2 + off, sizeof (ST_V));
#pragma GCC unroll 8
      for (int r = 0; r < ST_ROWS; r++)
        {
          float s = a[r];
          for (int i = 0; i < V; i++)
            acc[r][i] += s * x[i];
        }
    }
#pragma GCC unroll 8
  for (int r = 0; r < ST_ROWS; r++)
#pragma GCC unroll 3
    for (int i = 0; i < V && r < rows; i++)
      {
        gint64 at = (m0 + r) * ldy;
        ST_V out = acc[r][i] + (bias ? bias[r] : 0);
        gboolean partial = v->n[i] < ST_LANES;
        if (v->res[i])
          {
            ST_V more;
            if (partial)
              more = ST_MASKED_LOAD (v->res[i] + at, ST_FIRST_LANES (v->n[i]));
            else
              memcpy (&more, v->res[i] + at, sizeof (ST_V));
            out += more;
          }
        if (clamp)
          out = ST_CLAMP (out, lo, hi);
        if (partial)
          ST_STORE_FIRST (v->out[i] + at, v->n[i], out);
        else
          memcpy (v->out[i] + at, &out, sizeof (ST_V));
      }
}

#define ST_KERNEL(V)                                                                                                    \
  static ST_TARGET GRAFT_HOT_LOOP __attribute__ ((noinline)) void ST_PASTE (stem_kernel_##V, ST_SUFFIX) (            \
    gint64 K, const gint64 *tap_off, const float *a, const StemVectors *v, gint64 m0, gint64 ldy, const float *bias, \
    int rows, gboolean clamp, float lo, float hi)                                                                      \
  {                                                                                                                    \
    ST_PASTE (stem_body, ST_SUFFIX) (K, tap_off, a, v, m0, ldy, bias, rows, clamp, lo, hi, V);                        \
  }
ST_KERNEL (1)
ST_KERNEL (2)
ST_KERNEL (3)
#undef ST_KERNEL

static const StemKernel ST_PASTE (stem_kernels, ST_SUFFIX)[3] = {
  ST_PASTE (stem_kernel_1, ST_SUFFIX), ST_PASTE (stem_kernel_2, ST_SUFFIX), ST_PASTE (stem_kernel_3, ST_SUFFIX)
};

#undef ST_PASTE
#undef ST_PASTE2
#undef ST_V
#undef ST_LANES
#undef ST_ROWS
#undef ST_TARGET
#undef ST_MASK_T
#undef ST_FIRST_LANES
#undef ST_MASKED_LOAD
#undef ST_STORE_FIRST
#undef ST_CLAMP
#undef ST_SUFFIX
