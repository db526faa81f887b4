/* The channel-blocked depthwise kernel of conv-depthwise.c (see
 * GraftDepthwisePlan), written once over a GCC vector type and included
 * once per instruction set with:
 *   DB_V                  the vector type (vector_size of DB_LANES floats)
 *   DB_LANES              floats per vector: channels per block
 *   DB_TARGET             the function attribute enabling the ISA (may be empty)
 *   DB_MASK_T             a lane mask; DB_FIRST_LANES (n) the first n lanes (n clamped to 0..DB_LANES)
 *   DB_MASKED_LOAD (p, m) the masked lanes of p, zero elsewhere, as DB_V
 *   DB_MASKED_STORE (p, m, v)
 *   DB_CLAMP (v, lo, hi)  v clamped to [lo, hi] (DB_V bounds), NaN kept
 *   DB_TRANSPOSE (v)      the DB_LANES × DB_LANES floats of DB_V v[DB_LANES] transposed in place
 *   DB_SUFFIX             appended to the function's name
 * It defines depthwise_blocked_range_<DB_SUFFIX> (a GraftParallelFunc over
 * the ranges of a BlockedJob).
 *
 * A block is DB_LANES channels of one image, lane l channel c0 + l: its
 * planes are transposed into a zero-padded map of [Hp][Wp][DB_LANES]
 * floats, so that every tap of every output is one whole vector read and
 * one multiply-add whatever the stride, dilation and padding, and the
 * [n_out][DB_LANES] outputs are transposed back into y's planes. */

#define DB_PASTE2(a, b) a##_##b
#define DB_PASTE(a, b) DB_PASTE2 (a, b)

/* Output pixels j0 … j0 + T - 1 of the block into out: T accumulators,
 * two sets (even and odd taps) when T is too few to keep the
 * multiply-adds from waiting on each other. */
static inline __attribute__ ((always_inline)) DB_TARGET void
DB_PASTE (blocked_tile, DB_SUFFIX) (const GraftDepthwisePlan *plan, const float *map, const float *weight, DB_V bias,
                                    DB_V lo, DB_V hi, gint64 j0, float *out, const int T)
{
  const int split = T <= 4;
  const float *q[8];
  DB_V a[8], b[8];
  for (int i = 0; i < T; i++)
    {
      q[i] = map + plan->out_off[j0 + i] * DB_LANES;
      a[i] = bias;
      b[i] = (DB_V) { 0 };
    }
  gint64 taps = plan->w.kernel[0] * plan->w.kernel[1], t = 0;
  const gint64 *tap_off = plan->tap_off;
  if (split)
    for (; t + 2 <= taps; t += 2)
      {
        DB_V w0, w1;
        memcpy (&w0, weight + t * DB_LANES, sizeof (DB_V));
        memcpy (&w1, weight + (t + 1) * DB_LANES, sizeof (DB_V));
        gint64 o0 = tap_off[t], o1 = tap_off[t + 1];
        for (int i = 0; i < T; i++)
          {
            DB_V v0, v1;
            memcpy (&v0, q[i] + o0, sizeof (DB_V));
            memcpy (&v1, q[i] + o1, sizeof (DB_V));
            a[i] += w0 * v0;
            b[i] += w1 * v1;
          }
      }
  for (; t < taps; t++)
    {
      DB_V w0;
      memcpy (&w0, weight + t * DB_LANES, sizeof (DB_V));
      gint64 o0 = tap_off[t];
      for (int i = 0; i < T; i++)
        {
          DB_V v0;
          memcpy (&v0, q[i] + o0, sizeof (DB_V));
          a[i] += w0 * v0;
        }
    }
  for (int i = 0; i < T; i++)
    {
      DB_V v = DB_CLAMP (split ? a[i] + b[i] : a[i], lo, hi);
      memcpy (out + (j0 + i) * DB_LANES, &v, sizeof (DB_V));
    }
}

#define DB_TILE(T)                                                                                                     \
  static DB_TARGET GRAFT_HOT_LOOP __attribute__ ((noinline)) void DB_PASTE (blocked_tile##T, DB_SUFFIX) (             \
    const GraftDepthwisePlan *plan, const float *map, const float *weight, DB_V bias, DB_V lo, DB_V hi, gint64 j0,   \
    float *out)                                                                                                        \
  {                                                                                                                    \
    DB_PASTE (blocked_tile, DB_SUFFIX) (plan, map, weight, bias, lo, hi, j0, out, T);                                 \
  }

DB_TILE (8)
DB_TILE (4)
DB_TILE (2)
DB_TILE (1)

#undef DB_TILE

/* Block b (image b / blocks per image, channels from DB_LANES · the rest)
 * with map, a zero-padded [Hp][Wp][DB_LANES] buffer whose padding is zero
 * (only the positions of input pixels are written), and out
 * [n_out][DB_LANES]. */
static DB_TARGET GRAFT_HOT_LOOP void
DB_PASTE (blocked_block, DB_SUFFIX) (const BlockedJob *job, gint64 b, float *map, float *out)
{
  const GraftDepthwisePlan *plan = job->plan;
  gint64 C = job->C, per_image = (C + DB_LANES - 1) / DB_LANES;
  gint64 cb = b % per_image, c0 = cb * DB_LANES, count = MIN (DB_LANES, C - c0);
  gint64 p0 = b / per_image * C + c0;
  gint64 n_in = plan->w.in[0] * plan->w.in[1], n_out = plan->w.out[0] * plan->w.out[1];
  const float *x = job->x + p0 * job->x_plane;
  float *y = job->y + p0 * job->y_plane;
  DB_V v[DB_LANES];

  for (gint64 j0 = 0; j0 < n_in; j0 += DB_LANES)
    {
      gint64 n = MIN (DB_LANES, n_in - j0);
      DB_MASK_T pixels = DB_FIRST_LANES (n);
      for (int l = 0; l < DB_LANES; l++)
        v[l] = l < count ? DB_MASKED_LOAD (x + l * job->x_plane + j0, pixels) : (DB_V) { 0 };
      DB_TRANSPOSE (v);
      for (gint64 i = 0; i < n; i++)
        memcpy (map + plan->in_pos[j0 + i] * DB_LANES, &v[i], sizeof (DB_V));
    }

  const float *weight = plan->block_weight + (job->first_block + cb) * plan->w.kernel[0] * plan->w.kernel[1] * DB_LANES;
  DB_V bias = job->bias ? DB_MASKED_LOAD (job->bias + c0, DB_FIRST_LANES (count)) : (DB_V) { 0 };
  DB_V lo = (DB_V) { 0 } + job->lo, hi = (DB_V) { 0 } + job->hi;
  gint64 j = 0;
  for (; j + 8 <= n_out; j += 8)
    DB_PASTE (blocked_tile8, DB_SUFFIX) (plan, map, weight, bias, lo, hi, j, out);
  if (j + 4 <= n_out)
    DB_PASTE (blocked_tile4, DB_SUFFIX) (plan, map, weight, bias, lo, hi, j, out), j += 4;
  if (j + 2 <= n_out)
    DB_PASTE (blocked_tile2, DB_SUFFIX) (plan, map, weight, bias, lo, hi, j, out), j += 2;
  if (j < n_out)
    DB_PASTE (blocked_tile1, DB_SUFFIX) (plan, map, weight, bias, lo, hi, j, out);

  for (gint64 j0 = 0; j0 < n_out; j0 += DB_LANES)
    {
      gint64 n = MIN (DB_LANES, n_out - j0);
      for (int i = 0; i < DB_LANES; i++)
        if (i < n)
          memcpy (&v[i], out + (j0 + i) * DB_LANES, sizeof (DB_V));
        else
          v[i] = (DB_V) { 0 };
      DB_TRANSPOSE (v);
      DB_MASK_T pixels = DB_FIRST_LANES (n);
      for (gint64 l = 0; l < count; l++)
        DB_MASKED_STORE (y + l * job->y_plane + j0, pixels, v[l]);
    }
}

static DB_TARGET void
DB_PASTE (depthwise_blocked_range, DB_SUFFIX) (gint64 r, gpointer data)
{
  const BlockedJob *job = data;
  const GraftDepthwisePlan *plan = job->plan;
  g_autofree float *map = g_new0 (float, plan->map_pixels * DB_LANES);
  g_autofree float *out = g_new (float, plan->w.out[0] * plan->w.out[1] * DB_LANES);
  for (gint64 b = r * job->blocks / job->ranges; b < (r + 1) * job->blocks / job->ranges; b++)
    DB_PASTE (blocked_block, DB_SUFFIX) (job, b, map, out);
}

#undef DB_PASTE
#undef DB_PASTE2
#undef DB_V
#undef DB_LANES
#undef DB_TARGET
#undef DB_MASK_T
#undef DB_FIRST_LANES
#undef DB_MASKED_LOAD
#undef DB_MASKED_STORE
#undef DB_CLAMP
#undef DB_TRANSPOSE
#undef DB_SUFFIX
