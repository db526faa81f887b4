/* Convolutions of few input channels, pixels in the lanes (see
 * conv-stem.h).
 *
 * x is first laid out per image and channel in `stride` column phases of
 * its zero-padded plane: phase p row r column j holds the padded input at
 * row r, column j·s + p (s the column stride). Output pixel (oh, ow) then
 * reads tap (c, ki, kj) at phase (kj·dw) mod s, row oh·sh + ki·dh,
 * column ow + ⌊kj·dw / s⌋: for a vector of the outputs of a row, one
 * contiguous load at an offset that depends on the tap alone. Each call
 * of a micro-kernel takes up to three such vectors (along a row, and on
 * into the next rows and images) times the rows of a filter panel, over
 * all C·KH·KW taps, and writes its sums to y. */
#include "runtime/kernels/conv-stem.h"
#include "runtime/kernels/simd-target.h"
#include "runtime/kernels/avx2-lanes.h"

#include <string.h>

#define MAX_CALL_VECTORS 3

/* The vectors of a call: each one's first tap in the phase planes, its
 * place in y (the first filter row's) and in the residual (NULL: none),
 * and its pixels (the last of a row may be partial). */
typedef struct {
  const float *in[MAX_CALL_VECTORS];
  float *out[MAX_CALL_VECTORS];
  const float *res[MAX_CALL_VECTORS];
  gint64 n[MAX_CALL_VECTORS];
} StemVectors;

typedef void (*StemKernel) (gint64 K, const gint64 *tap_off, const float *a, const StemVectors *v, gint64 m0,
                            gint64 ldy, const float *bias, int rows, gboolean clamp, float lo, float hi);

typedef struct {
  gint64 lanes;
  gint64 rows;                    /* filter rows per kernel call */
  const StemKernel *kernels;      /* [vectors - 1] */
} StemIsa;

#ifdef GRAFT_HAVE_X86_SIMD

typedef float GraftV16f __attribute__ ((vector_size (64)));
typedef float GraftV8f __attribute__ ((vector_size (32)));

/* 8 filter rows × 3 vectors in 24 zmm accumulators */
GRAFT_TARGET_AVX512_BEGIN
#include "runtime/kernels/avx512-row.h"
#define ST_V GraftV16f
#define ST_LANES 16
#define ST_ROWS GRAFT_CONV_GEMM_ROWS
#define ST_TARGET
#define ST_MASK_T __mmask16
#define ST_FIRST_LANES(n) graft_lane_mask16 (0, (n))
#define ST_MASKED_LOAD(p, m) ((GraftV16f) _mm512_maskz_loadu_ps ((m), (p)))
#define ST_STORE_FIRST(p, n, v) _mm512_mask_storeu_ps ((p), graft_lane_mask16 (0, (n)), (__m512) (v))
#define ST_CLAMP(v, lo, hi) \
  ((GraftV16f) _mm512_min_ps (_mm512_set1_ps (hi), _mm512_max_ps (_mm512_set1_ps (lo), (__m512) (v))))
#define ST_SUFFIX avx512
#include "runtime/kernels/conv-stem-body.h"
GRAFT_TARGET_AVX512_END

/* the first n < 8 lanes of v to p, in stores of 4, 2 and 1 floats:
 * AVX2's masked stores cost AMD cores a dozen cycles each, and a loop
 * over the lanes became a call to memcpy */
static inline GRAFT_TARGET_AVX2_FMA void
store_first8 (float *p, gint64 n, GraftV8f v)
{
  __m128 part = _mm256_castps256_ps128 ((__m256) v);
  if (n >= 4)
    {
      _mm_storeu_ps (p, part);
      part = _mm256_extractf128_ps ((__m256) v, 1);
      p += 4;
      n -= 4;
    }
  if (n >= 2)
    {
      _mm_storel_pi ((__m64 *) p, part);
      part = _mm_movehl_ps (part, part);
      p += 2;
      n -= 2;
    }
  if (n >= 1)
    _mm_store_ss (p, part);
}

/* half a filter panel (4 rows) × 3 vectors in 12 ymm accumulators */
#define ST_V GraftV8f
#define ST_LANES 8
#define ST_ROWS (GRAFT_CONV_GEMM_ROWS / 2)
#define ST_TARGET GRAFT_TARGET_AVX2_FMA
#define ST_MASK_T __m256i
#define ST_FIRST_LANES(n) graft_first_lanes8 (n)
#define ST_MASKED_LOAD(p, m) ((GraftV8f) _mm256_maskload_ps ((p), (m)))
#define ST_STORE_FIRST(p, n, v) store_first8 ((p), (n), (v))
#define ST_CLAMP(v, lo, hi) \
  ((GraftV8f) _mm256_min_ps (_mm256_set1_ps (hi), _mm256_max_ps (_mm256_set1_ps (lo), (__m256) (v))))
#define ST_SUFFIX avx2
#include "runtime/kernels/conv-stem-body.h"

static const StemIsa isa_avx512 = { 16, GRAFT_CONV_GEMM_ROWS, stem_kernels_avx512 };
static const StemIsa isa_avx2 = { 8, GRAFT_CONV_GEMM_ROWS / 2, stem_kernels_avx2 };

static const StemIsa *
stem_isa (void)
{
  const GraftKernelTable *t = graft_kernel_table ();
  return t->avx512 ? &isa_avx512 : t->avx2 ? &isa_avx2 : NULL;
}

#else

static const StemIsa *
stem_isa (void)
{
  return NULL;
}

#endif

typedef float GraftPairV8f __attribute__ ((vector_size (32)));

static inline __attribute__ ((always_inline)) void
split_pairs_body (const float *row, gint64 n, float *even, float *odd)
{
  gint64 j = 0;
  for (; j + 8 <= n; j += 8)
    {
      GraftPairV8f a, b;
      memcpy (&a, row + 2 * j, sizeof a);
      memcpy (&b, row + 2 * j + 8, sizeof b);
      /* __builtin_shufflevector: GCC (12 and later) and clang both have it */
      GraftPairV8f e = __builtin_shufflevector (a, b, 0, 2, 4, 6, 8, 10, 12, 14);
      GraftPairV8f o = __builtin_shufflevector (a, b, 1, 3, 5, 7, 9, 11, 13, 15);
      memcpy (even + j, &e, sizeof e);
      memcpy (odd + j, &o, sizeof o);
    }
  for (; j < n; j++)
    {
      even[j] = row[2 * j];
      odd[j] = row[2 * j + 1];
    }
}

#ifdef GRAFT_HAVE_X86_SIMD
static GRAFT_TARGET_AVX2_FMA void
split_pairs_avx2 (const float *row, gint64 n, float *even, float *odd)
{
  split_pairs_body (row, n, even, odd);
}
#endif

void
graft_conv_split_pairs (const float *row, gint64 n, float *even, float *odd)
{
#ifdef GRAFT_HAVE_X86_SIMD
  if (graft_kernel_table ()->avx2)
    {
      split_pairs_avx2 (row, n, even, odd);
      return;
    }
#endif
  split_pairs_body (row, n, even, odd);
}

gboolean
graft_conv_stem_pays (const GraftWindow *w, gint64 C, gint64 M, gint64 group)
{
  return stem_isa () != NULL && graft_conv_gemm_available () && group == 1 && w->n == 2 && C >= 1 &&
         C <= GRAFT_CONV_STEM_MAX_CHANNELS && C * w->kernel[0] * w->kernel[1] <= GRAFT_CONV_STEM_MAX_TAPS &&
         w->stride[1] <= 4 && M >= 1;
}

typedef struct {
  const StemIsa *isa;
  const float *panels;
  const GraftConvGemmArgs *args;
  gint64 K;
  gint64 Hp, Wq;                  /* rows and columns of a phase plane */
  gint64 row_vectors;             /* vectors per output row */
  gint64 calls, tasks;
  float *phases;                  /* [N][C][stride][Hp][Wq] */
  gint64 tap_off[GRAFT_CONV_STEM_MAX_TAPS];
} StemJob;

/* Plane `index` (image, channel) of x into its column phases: each row
 * copied into a zero-padded row (its padding written once), then every
 * s-th float of it into each phase, with vectors for a stride of 2. */
static void
stem_phases (gint64 index, gpointer data)
{
  const StemJob *job = data;
  const GraftWindow *w = job->args->w;
  gint64 H = w->in[0], W = w->in[1], s = w->stride[1], pt = w->pad_begin[0], pl = w->pad_begin[1];
  gint64 Wq = job->Wq, plane = job->Hp * Wq, inside = MIN (W, s * Wq - pl);
  const float *x = job->args->x + index * H * W;
  float *phases = job->phases + index * s * plane;
  g_autofree float *padded = g_new0 (float, s * Wq + 16);
  for (gint64 r = 0; r < job->Hp; r++)
    {
      gint64 ih = r - pt;
      if (ih < 0 || ih >= H)
        {
          for (gint64 p = 0; p < s; p++)
            memset (phases + p * plane + r * Wq, 0, Wq * sizeof (float));
          continue;
        }
      if (inside > 0)
        memcpy (padded + pl, x + ih * W, inside * sizeof (float));
      if (s == 1)
        memcpy (phases + r * Wq, padded, Wq * sizeof (float));
      else if (s == 2)
        graft_conv_split_pairs (padded, Wq, phases + r * Wq, phases + plane + r * Wq);
      else
        for (gint64 p = 0; p < s; p++)
          for (gint64 j = 0; j < Wq; j++)
            phases[p * plane + r * Wq + j] = padded[j * s + p];
    }
}

/* Calls [t·calls/tasks, (t+1)·calls/tasks): each up to MAX_CALL_VECTORS
 * vectors of output pixels, in order over (image, row, vector of the
 * row), times every filter panel. */
static void
stem_task (gint64 t, gpointer data)
{
  const StemJob *job = data;
  const GraftConvGemmArgs *a = job->args;
  const GraftWindow *w = a->w;
  const StemIsa *isa = job->isa;
  gint64 OH = w->out[0], OW = w->out[1], out_size = OH * OW, plane = job->Hp * job->Wq;
  gint64 positions = a->N * OH * job->row_vectors;
  gint64 c0 = t * job->calls / job->tasks, c1 = (t + 1) * job->calls / job->tasks;
  for (gint64 call = c0; call < c1; call++)
    {
      StemVectors v = { { NULL } };
      gint64 first = call * MAX_CALL_VECTORS, count = MIN (MAX_CALL_VECTORS, positions - first);
      for (gint64 i = 0; i < count; i++)
        {
          gint64 pos = first + i, vi = pos % job->row_vectors, row = pos / job->row_vectors;
          gint64 n = row / OH, oh = row % OH, ow = vi * isa->lanes;
          gint64 at = n * a->M * out_size + oh * OW + ow;
          v.in[i] = job->phases + n * a->C * w->stride[1] * plane + oh * w->stride[0] * job->Wq + ow;
          v.out[i] = a->y + at;
          v.res[i] = a->residual ? a->residual + at : NULL;
          v.n[i] = MIN (isa->lanes, OW - ow);
        }
      for (gint64 m0 = 0; m0 < a->M; m0 += isa->rows)
        {
          const float *panel = job->panels + m0 / GRAFT_CONV_GEMM_ROWS * job->K * GRAFT_CONV_GEMM_ROWS +
                               m0 % GRAFT_CONV_GEMM_ROWS;
          isa->kernels[count - 1] (job->K, job->tap_off, panel, &v, m0, out_size, a->bias ? a->bias + m0 : NULL,
                                   (int) MIN (isa->rows, a->M - m0), a->clamp, a->lo, a->hi);
        }
    }
}

gboolean
graft_conv_stem (GraftKernelContext *ctx, const GraftPackedFilter *filter, const GraftConvGemmArgs *args,
                 GError **error)
{
  const GraftWindow *w = args->w;
  const StemIsa *isa = stem_isa ();
  gint64 KH = w->kernel[0], KW = w->kernel[1], K = args->C * KH * KW;
  const float *panels = graft_packed_filter_panels (filter);
  if (isa == NULL || panels == NULL || !graft_conv_stem_pays (w, args->C, args->M, args->group) ||
      !graft_packed_filter_matches (filter, 1, args->M, K))
    return graft_kernel_unsupported (error, "the stem convolution does not take this window or filter");
  gint64 OH = w->out[0], OW = w->out[1], s = w->stride[1];
  if (args->N * OH * OW == 0 || args->M == 0)
    return TRUE;
  StemJob job = { isa, panels, args, K };
  job.row_vectors = (OW + isa->lanes - 1) / isa->lanes;
  job.Hp = (OH - 1) * w->stride[0] + (KH - 1) * w->dilation[0] + 1;
  job.Wq = job.row_vectors * isa->lanes + (KW - 1) * w->dilation[1] / s;
  for (gint64 c = 0; c < args->C; c++)
    for (gint64 ki = 0; ki < KH; ki++)
      for (gint64 kj = 0; kj < KW; kj++)
        {
          gint64 col = kj * w->dilation[1];
          job.tap_off[(c * KH + ki) * KW + kj] = ((c * s + col % s) * job.Hp + ki * w->dilation[0]) * job.Wq + col / s;
        }
  g_autoptr(GraftRtTensor) phases =
    graft_kernel_scratch (ctx, (gsize) args->N * args->C * s * job.Hp * job.Wq * sizeof (float), error);
  if (phases == NULL)
    return FALSE;
  job.phases = phases->data;
  graft_kernel_parallel_for (ctx, args->N * args->C, stem_phases, &job);
  gint64 threads = MAX (graft_kernel_get_n_threads (ctx), 1);
  job.calls = (args->N * OH * job.row_vectors + MAX_CALL_VECTORS - 1) / MAX_CALL_VECTORS;
  job.tasks = MIN (job.calls, 4 * threads);
  graft_kernel_parallel_for (ctx, job.tasks, stem_task, &job);
  return TRUE;
}
