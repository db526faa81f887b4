/* 2-D convolution as a packed GEMM with AVX-512 and AVX2+FMA
 * micro-kernels (see conv-gemm.h). Per block of up to PANEL_COLS output
 * pixels, B [K, cols] is gathered from x into a panel that stays in L2,
 * then every panel of ROWS packed filter rows is multiplied into a ROWS ×
 * cols tile held in registers over the whole K (24 zmm accumulators, or
 * two halves of 12 ymm ones), and the tile gets bias and clamp on its way
 * to y. OpenBLAS repacks both operands and makes us write the im2col
 * matrix to memory first; this does neither. With AVX-512 it runs the
 * multiply-adds at close to the core's peak; the AVX2 kernel ran at 75–80
 * GFLOPS on one core of an AMD EPYC (operands in L1), which makes
 * ResNet-18 about as fast as with OpenBLAS and MobileNetV2's thin
 * pointwise layers faster. */
#include "runtime/kernels/conv-gemm.h"
#include "runtime/kernels/simd-target.h"
#include "runtime/kernels/avx2-lanes.h"

#include <string.h>
#include <unistd.h>

#define ROWS GRAFT_CONV_GEMM_ROWS
#define LANES 16                  /* floats per zmm */
#define MAX_VECS 3
#define PANEL_COLS (LANES * MAX_VECS)
#define SLIVER_COLS 24            /* pointwise columns per AVX2 micro-kernel call: three ymm */
#define SLIVER_COPY_FLOATS 4096   /* a sliver of x copied for graft_conv_pointwise_block's calls: 16 KB */

struct _GraftPackedFilter {
  gint64 group, Mg, K;
  gint64 panels;                  /* per group: ceil (Mg / ROWS) */
  gint64 lines;                   /* per panel: K, or in bf16 ⌈K / 2⌉ pairs of k */
  gboolean bf16;
  /* [group][panels][lines][ROWS] floats, rows past Mg zero; in bf16 each
   * a 32-bit pair (k = 2·line, 2·line + 1) of bfloat16, the even k in the
   * low half as vdpbf16ps multiplies them, zero past K */
  float *data;
};

gboolean
graft_conv_gemm_available (void)
{
  return graft_kernel_table ()->conv_gemm != NULL;
}

GraftPackedFilter *
graft_packed_filter_new (const float *weight, gint64 group, gint64 Mg, gint64 K)
{
  gint64 panels = (Mg + ROWS - 1) / ROWS;
  float *data = g_try_malloc0 ((gsize) MAX (group * panels * K * ROWS, 1) * sizeof (float));
  if (data == NULL)
    return NULL;
  for (gint64 g = 0; g < group; g++)
    for (gint64 m = 0; m < Mg; m++)
      {
        const float *src = weight + (g * Mg + m) * K;
        float *dst = data + ((g * panels + m / ROWS) * K) * ROWS + m % ROWS;
        for (gint64 k = 0; k < K; k++)
          dst[k * ROWS] = src[k];
      }
  GraftPackedFilter *filter = g_new (GraftPackedFilter, 1);
  *filter = (GraftPackedFilter) { group, Mg, K, panels, K, FALSE, data };
  return filter;
}

/* float → bfloat16, rounded to nearest even as vcvtneps2bf16 does (a NaN
 * stays a quiet NaN) */
static guint32
bf16_bits (float f)
{
  guint32 u;
  memcpy (&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return (u >> 16) | 0x40;
  u += 0x7fffu + ((u >> 16) & 1);
  return u >> 16;
}

GraftPackedFilter *
graft_packed_filter_new_bf16 (const float *weight, gint64 group, gint64 Mg, gint64 K)
{
  gint64 panels = (Mg + ROWS - 1) / ROWS, lines = (K + 1) / 2;
  guint32 *data = g_try_malloc0 ((gsize) MAX (group * panels * lines * ROWS, 1) * sizeof (guint32));
  if (data == NULL)
    return NULL;
  for (gint64 g = 0; g < group; g++)
    for (gint64 m = 0; m < Mg; m++)
      {
        const float *src = weight + (g * Mg + m) * K;
        guint32 *dst = data + ((g * panels + m / ROWS) * lines) * ROWS + m % ROWS;
        for (gint64 k = 0; k < K; k++)
          dst[k / 2 * ROWS] |= bf16_bits (src[k]) << (k % 2 * 16);
      }
  GraftPackedFilter *filter = g_new (GraftPackedFilter, 1);
  *filter = (GraftPackedFilter) { group, Mg, K, panels, lines, TRUE, (float *) data };
  return filter;
}

gboolean
graft_packed_filter_matches (const GraftPackedFilter *filter, gint64 group, gint64 Mg, gint64 K)
{
  return filter && filter->group == group && filter->Mg == Mg && filter->K == K;
}

const float *
graft_packed_filter_panels (const GraftPackedFilter *filter)
{
  return filter->bf16 ? NULL : filter->data;
}

void
graft_packed_filter_free (GraftPackedFilter *filter)
{
  if (filter == NULL)
    return;
  g_free (filter->data);
  g_free (filter);
}

typedef struct {
  const float *weight;
  gint64 group, Mg, K;
  gboolean bf16;
} PackedFilterArgs;

static gboolean
packed_filter_fits (gconstpointer derived, gconstpointer args)
{
  const PackedFilterArgs *a = args;
  return graft_packed_filter_matches (derived, a->group, a->Mg, a->K) &&
         ((const GraftPackedFilter *) derived)->bf16 == a->bf16;
}

static gpointer
packed_filter_make (gconstpointer args)
{
  const PackedFilterArgs *a = args;
  return (a->bf16 ? graft_packed_filter_new_bf16 : graft_packed_filter_new) (a->weight, a->group, a->Mg, a->K);
}

static const GraftDerivedKind packed_filter_kind = {
  "packed filter", (GDestroyNotify) graft_packed_filter_free, FALSE, TRUE
};
static const GraftDerivedKind packed_filter_bf16_kind = {
  "bf16 packed filter", (GDestroyNotify) graft_packed_filter_free, FALSE, TRUE
};

static const GraftPackedFilter *
packed_filter_for (GraftKernelContext *ctx, const float *weight, gint64 group, gint64 Mg, gint64 K, gboolean bf16,
                   GraftPackedFilter **owned)
{
  PackedFilterArgs args = { weight, group, Mg, K, bf16 };
  return graft_kernel_derived (ctx, bf16 ? &packed_filter_bf16_kind : &packed_filter_kind, weight, packed_filter_fits,
                               packed_filter_make, &args, (gpointer *) owned);
}

const GraftPackedFilter *
graft_packed_filter_for (GraftKernelContext *ctx, const float *weight, gint64 group, gint64 Mg, gint64 K,
                         GraftPackedFilter **owned)
{
  return packed_filter_for (ctx, weight, group, Mg, K, FALSE, owned);
}

const GraftPackedFilter *
graft_packed_filter_bf16_for (GraftKernelContext *ctx, const float *weight, gint64 group, gint64 Mg, gint64 K,
                              GraftPackedFilter **owned)
{
  return packed_filter_for (ctx, weight, group, Mg, K, TRUE, owned);
}

#define MAX_KERNEL_COLS 64
#define MAX_FLAT_TAPS 64           /* taps of a window the flat gather takes */
#define FEW_RUNS 8                /* panels of up to this many runs … */
#define FEW_KERNEL_COLS 8         /* … and windows this wide gather with precomputed masks */

gboolean
graft_conv_gemm_supports (const GraftWindow *w)
{
  return w->n == 2 && w->kernel[1] <= MAX_KERNEL_COLS && graft_conv_gemm_available ();
}

/* ---- the job ---- */

/* Output pixels col .. col+len of one image that share an output row. */
typedef struct {
  gint64 col;                     /* first column within the panel */
  gint64 image, oh, ow, len;
} PixelRun;

#define MAX_GROUP_PANELS 8        /* column panels sharing one pass over a block of the filter */
#define MAX_OUTPUT_SPANS 4        /* images a pass's pixels may span for its output to be prefetched */
#define LINE_FLOATS 16            /* floats per 64-byte cache line */

typedef struct _ConvGemmJob ConvGemmJob;

/* The lines of y that a task's next pass will write, asked into L2 while
 * this pass multiplies: the pass stores its tiles after its last
 * multiply-add, and rows of y out of cache (ResNet's stem writes 6.4 MB)
 * made that store wait on memory as long as the multiply-adds took —
 * 40 of 139 M TSC ticks of the stem over 11 runs, 19 after (AVX-512).
 * Each micro-kernel call takes up to `quota` lines of one row's run and
 * spreads them over its k steps; asked for all at once, the lines held
 * the fill buffers its loads of B needed. */
typedef struct {
  float *y;
  gint64 M, out_size;
  gint64 m0, m1;                  /* the task's output channels */
  int n_spans;
  PixelRun spans[MAX_OUTPUT_SPANS]; /* image, first pixel (ow), len: the next pass's pixels as they lie in y */
  gint64 quota;                   /* lines per micro-kernel call */
  int span;                       /* where the calls have got to: span, channel m, floats of its run */
  gint64 m, done;
} OutputPrefetch;

/* The next lines to ask for (*n_lines of them, contiguous), NULL when all
 * are asked for; p may be NULL (no next pass). */
static const float *
output_prefetch_next (OutputPrefetch *p, gint64 *n_lines)
{
  *n_lines = 0;
  if (p == NULL || p->span >= p->n_spans)
    return NULL;
  const PixelRun *s = &p->spans[p->span];
  const float *run = p->y + (s->image * p->M + p->m) * p->out_size + s->ow + p->done;
  gint64 n = MIN (s->len - p->done, p->quota * LINE_FLOATS);
  *n_lines = (n + LINE_FLOATS - 1) / LINE_FLOATS;
  p->done += n;
  if (p->done >= s->len)
    {
      p->done = 0;
      if (++p->m == p->m1)
        {
          p->m = p->m0;
          p->span++;
        }
    }
  return run;
}

/* One K block of a pass: every filter panel of the task times every
 * column panel of the pass. */
typedef struct {
  gint64 K;                       /* depth of the block */
  const float *a;                 /* the first filter panel at the block's first k; the next a_stride on */
  gint64 a_stride, panels;
  const float *const *b;          /* per column panel: B [K][n_cols], rows ldb apart */
  const gint64 *ldb, *n_cols;
  gint64 n_group;
  float *tiles;                   /* filter panel p, column panel c: tiles + (p·G + c)·ROWS·PANEL_COLS */
  gint64 G;
  gboolean accumulate;            /* add to the tiles (a K block after the first) */
  OutputPrefetch *out_prefetch;   /* the next pass's output, or NULL */
  const float *next_a;            /* the first filter panel of the next K block, or NULL */
} TileBlock;

/* Columns of a tile as narrow as this are computed the other way round
 * (narrow_tile) rather than in a vector of pixels mostly empty */
#define NARROW_COLS 4

#ifdef GRAFT_HAVE_X86_SIMD
static void narrow_tile (gint64 K, const float *a, const float *b, gint64 ldb, float *tile, gint64 ldt,
                         gboolean accumulate, gint64 n, const float *prefetch, gint64 prefetch_lines,
                         const float *next_a, gint64 a_lines);
#endif

/* The parts of a task written for one instruction set; the task itself
 * (conv_gemm_task) is the same for all of them. */
typedef struct _GraftConvGemmIsa {
  /* rows [k0, k1) of im2col (x) for a panel's pixels (see gather_panel) */
  void (*gather) (const ConvGemmJob *job, const PixelRun *runs, int n_runs, gint64 n_cols, gint64 width, gint64 k0,
                  gint64 k1, float *panel);
  /* the same for a full panel inside one image, at fixed offsets (see gather_panel_flat) */
  void (*gather_flat) (const ConvGemmJob *job, const PixelRun *run, gint64 k0, gint64 k1, float *panel);
  /* each tile [ROWS][n_cols rounded up to LANES] (+)= its filter panel a [K][ROWS] · b [K][n_cols] */
  void (*multiply) (const TileBlock *block);
  void (*store_row) (float *dst, const float *src, const float *res, gint64 n, float bias, gboolean clamp, float lo,
                     float hi);
  /* plane p of a PhaseJob into its parity planes (see split_phases_plane) */
  void (*split_phases) (gint64 p, gpointer data);
  /* task t of a PointwiseJob (see pointwise_task); NULL: pointwise
   * convolutions take the tiles like any other */
  void (*pointwise) (gint64 t, gpointer data);
  gint64 pointwise_cols;          /* columns per sliver of a PointwiseJob */
  /* filters up to max_kc deep are multiplied whole, deeper ones in blocks of about block_kc */
  gint64 max_kc, block_kc;
  /* filter rows and columns of a micro-kernel call in multiply */
  gint64 call_rows, call_cols;
  /* the bf16 tiles: a gathered panel [rows][width] into lines of
   * bfloat16 pairs in place, which multiply then reads with a filter
   * packed in bf16 (NULL: float32 throughout) */
  void (*to_pairs) (float *panel, gint64 rows, gint64 width);
  /* for the bf16 tiles: rows [k0, k1) of a direct job's B (x itself) for
   * a panel's pixels straight into lines of pairs [⌈(k1 - k0) / 2⌉][width] */
  void (*gather_pairs_direct) (const ConvGemmJob *job, const PixelRun *runs, int n_runs, gint64 width, gint64 k0,
                               gint64 k1, float *panel);
  /* the bf16 tiles' way for a B of at most PANEL_COLS columns (see
   * narrow_bf16); NULL: those take the tiles too */
  gboolean (*narrow) (GraftKernelContext *ctx, ConvGemmJob *job, GError **error);
} ConvGemmIsa;

struct _ConvGemmJob {
  const ConvGemmIsa *isa;
  const GraftPackedFilter *filter;
  const GraftConvGemmArgs *args;
  gint64 g;                       /* the convolution group being computed */
  gint64 in_size, out_size;
  gint64 columns, col_panels;     /* output pixels of all images, in panels of PANEL_COLS */
  gint64 kc, k_blocks;            /* K in blocks whose filter rows stay in L1 */
  gint64 group_panels;            /* column panels per pass over the filter */
  gint64 col_tasks, row_splits, tasks;
  gint64 ow_lo[MAX_KERNEL_COLS], ow_hi[MAX_KERNEL_COLS];  /* per kj: outputs ow reading inside the row */
  /* a patch convolution (SAM's and ViT's patch embedding): column stride
   * = kernel width, unit dilation, every tap's column inside the row for
   * every output (see gather_patch_rows) */
  gboolean patches;
  gboolean direct;                /* im2col (x) is x: 1×1 window, unit stride, no padding */
  /* flat gathers (see gather_panel_flat): input channel c of image n is
   * plane flat_x + (n·C + c)·flat_plane, rows of OW floats; tap (ki, kj)
   * reads it at output index + tap_off, valid where the output row plus
   * row_shift[ki] is in [0, row_limit[ki]) and the column plus
   * col_shift[kj] in [0, col_limit[kj]) */
  gboolean flat;
  const float *flat_x;
  gint64 flat_plane;
  gint64 row_shift[MAX_FLAT_TAPS], row_limit[MAX_FLAT_TAPS], col_shift[MAX_FLAT_TAPS], col_limit[MAX_FLAT_TAPS];
  gint64 tap_off[MAX_FLAT_TAPS];
  gsize task_floats;
  float *scratch;                 /* per task: the gathered panels, then the result tiles */
};

static int
pixel_runs (const GraftWindow *w, gint64 first, gint64 n, PixelRun *runs)
{
  gint64 OW = w->out[1], out_size = w->out[0] * OW;
  int count = 0;
  for (gint64 col = 0; col < n;)
    {
      gint64 j = first + col, p = j % out_size;
      gint64 len = MIN (OW - p % OW, n - col);
      runs[count++] = (PixelRun) { col, j / out_size, p / OW, p % OW, len };
      col += len;
    }
  return count;
}

/* The same pixels as they lie in y, where an image's outputs are
 * contiguous across rows: runs break only between images. */
static int
image_runs (gint64 out_size, gint64 first, gint64 n, PixelRun *runs)
{
  int count = 0;
  for (gint64 col = 0; col < n;)
    {
      gint64 j = first + col, p = j % out_size;
      gint64 len = MIN (out_size - p, n - col);
      runs[count++] = (PixelRun) { col, j / out_size, 0, p, len };
      col += len;
    }
  return count;
}

typedef struct {
  const float *x;
  float *phases;
  gint64 H, W, Hq, Wq;
} PhaseJob;

/* A 1×1 window with unit stride and no padding: per image and group,
 * y [Mg, HW] = W [Mg, Cg] · x [Cg, HW], a plain GEMM read from x in place
 * and written to y in place, with no tiles in between. Its columns are
 * cut, image by image, into slivers of up to the ISA's pointwise_cols. */
typedef struct {
  const GraftPackedFilter *filter;
  const GraftConvGemmArgs *args;
  gint64 g;                       /* the convolution group */
  gint64 hw;                      /* pixels per image */
  gint64 sliver_cols;
  gint64 slivers_per_image, slivers;
  gint64 col_tasks, row_splits;
} PointwiseJob;

/* Rows for taps (c, ki, 0..KW) of a patch convolution's panel (see
 * ConvGemmJob.patches): each run's input row segment read once and
 * spread over the KW rows, instead of KW strided gathers of a few
 * columns each (a tenth of a small SAM encoder's run). */
static inline void
gather_patch_rows (const ConvGemmJob *job, const PixelRun *runs, int n_runs, gint64 c, gint64 ki, gint64 width,
                   float *panel)
{
  const GraftConvGemmArgs *a = job->args;
  const GraftWindow *w = a->w;
  gint64 KW = w->kernel[1], H = w->in[0], W = w->in[1];
  const float *x = a->x + job->g * (a->C / a->group) * job->in_size;
  for (int r = 0; r < n_runs; r++)
    {
      const PixelRun *run = &runs[r];
      gint64 ih = run->oh * w->stride[0] + ki * w->dilation[0] - w->pad_begin[0];
      float *dst = panel + run->col;
      if (ih < 0 || ih >= H)
        {
          for (gint64 j = 0; j < KW; j++)
            memset (dst + j * width, 0, run->len * sizeof (float));
          continue;
        }
      const float *src = x + (run->image * a->C + c) * job->in_size + ih * W + run->ow * KW;
      for (gint64 o = 0; o < run->len; o++, src += KW)
        for (gint64 j = 0; j < KW; j++)
          dst[j * width + o] = src[j];
    }
}

/* gather_patch_rows for the panel's rows k .. k + KW (kj = 0), then k,
 * kj and panel on the last of them, whose tail and step the caller's
 * loop finishes as any row's. */
static inline void
patch_rows_begin (const ConvGemmJob *job, const PixelRun *runs, int n_runs, gint64 n_cols, gint64 width, gint64 c,
                  gint64 ki, gint64 *k, gint64 *kj, float **panel)
{
  gint64 KW = job->args->w->kernel[1];
  gather_patch_rows (job, runs, n_runs, c, ki, width, *panel);
  for (gint64 j = 0; j < KW - 1; j++, (*k)++, *panel += width)
    if (n_cols < width)
      memset (*panel + n_cols, 0, (width - n_cols) * sizeof (float));
  *kj = KW - 1;
}

#ifdef GRAFT_HAVE_X86_SIMD

/* Column j of the narrow kernels' output (pointwise_narrow_body,
 * pointwise_pair_body): rows [0, rows) of y = clamp (sum + bias [+ res]),
 * y and res rows ldd apart. */
static inline void
column_out (const float *sum, int rows, float *dst, const float *res, gint64 ldd, gint64 j, const float *bias,
            gboolean clamp, float lo, float hi)
{
  for (int r = 0; r < rows; r++)
    {
      float v = sum[r] + (bias ? bias[r] : 0);
      if (res)
        v += res[r * ldd + j];
      if (clamp)
        {
          v = lo > v ? lo : v;   /* NaN stays NaN */
          v = hi < v ? hi : v;
        }
      dst[r * ldd + j] = v;
    }
}

GRAFT_TARGET_AVX512_BEGIN
#include "runtime/kernels/avx512-row.h"

typedef float GraftV16f __attribute__ ((vector_size (64)));

/* dst[i] = src[(ow + i)·sw + shift] for i < len, 0 where that falls outside
 * [0, W). Strides 1 and 2 use masked loads (lanes outside the row are
 * never read); others a scalar loop over [from, to), the outputs inside. */
static inline void
gather_run (float *dst, const float *src, gint64 ow, gint64 len, gint64 sw, gint64 shift, gint64 W, gint64 from,
            gint64 to)
{
  if (sw == 1 || sw == 2)
    {
      for (gint64 i = 0; i < len; i += LANES)
        {
          gint64 q = (ow + i) * sw + shift;   /* input column of lane 0 */
          _mm512_mask_storeu_ps (dst + i, graft_lane_mask16 (0, len - i), graft_load_row16 (src, q, W, sw));
        }
      return;
    }
  gint64 end = ow + len;
  from = CLAMP (from, ow, end);
  to = CLAMP (to, from, end);
  for (gint64 o = ow; o < end; o++)
    dst[o - ow] = o >= from && o < to ? src[o * sw + shift] : 0;
}

/* Rows [k0, k1) of the im2col matrix for one panel's columns into
 * panel [k1 - k0][width]; columns past n_cols are zero. */
static void
gather_panel (const ConvGemmJob *job, const PixelRun *runs, int n_runs, gint64 n_cols, gint64 width, gint64 k0,
              gint64 k1, float *panel)
{
  const GraftConvGemmArgs *a = job->args;
  const GraftWindow *w = a->w;
  gint64 Cg = a->C / a->group, KH = w->kernel[0], KW = w->kernel[1];
  gint64 H = w->in[0], W = w->in[1], sh = w->stride[0], sw = w->stride[1];
  gint64 dh = w->dilation[0], dw = w->dilation[1], pt = w->pad_begin[0], pl = w->pad_begin[1];
  gint64 c = k0 / (KH * KW), ki = k0 / KW % KH, kj = k0 % KW;
  const float *x = a->x + job->g * Cg * job->in_size;

  /* With few runs and kernel columns the load masks, which depend on the
   * run, the vector and kj only, are worked out once for the panel
   * rather than for every row. */
  gboolean few = (sw == 1 || sw == 2) && n_runs <= FEW_RUNS && KW <= FEW_KERNEL_COLS;
  __mmask16 load[FEW_RUNS][FEW_KERNEL_COLS][MAX_VECS][2], store[FEW_RUNS][MAX_VECS];
  for (int r = 0; few && r < n_runs; r++)
    for (gint64 v = 0; v * LANES < runs[r].len; v++)
      {
        store[r][v] = graft_lane_mask16 (0, runs[r].len - v * LANES);
        for (gint64 j = 0; j < KW; j++)
          {
            gint64 q = (runs[r].ow + v * LANES) * sw + j * dw - pl;
            load[r][j][v][0] = graft_lane_mask16 (-q, W - q);
            load[r][j][v][1] = graft_lane_mask16 (-q - LANES, W - q - LANES);
          }
      }

  for (gint64 k = k0; k < k1; k++, panel += width)
    {
      gint64 shift = kj * dw - pl;
      gboolean patch = job->patches && kj == 0 && k + KW <= k1;
      if (patch)
        patch_rows_begin (job, runs, n_runs, n_cols, width, c, ki, &k, &kj, &panel);
      for (int r = 0; !patch && r < n_runs; r++)
        {
          const PixelRun *run = &runs[r];
          float *dst = panel + run->col;
          gint64 ih = run->oh * sh + ki * dh - pt;
          gint64 row = (run->image * a->C + c) * job->in_size + ih * W;
          if (ih < 0 || ih >= H)
            memset (dst, 0, run->len * sizeof (float));
          else if (few)
            {
              const float *src = x + (row + run->ow * sw + shift);
              for (gint64 v = 0; v * LANES < run->len; v++, src += LANES * sw)
                {
                  __m512 e = graft_load_strided16 (src, load[r][kj][v][0], load[r][kj][v][1], sw, _mm512_setzero_ps ());
                  _mm512_mask_storeu_ps (dst + v * LANES, store[r][v], e);
                }
            }
          else
            gather_run (dst, x + row, run->ow, run->len, sw, shift, W, job->ow_lo[kj], job->ow_hi[kj]);
        }
      if (n_cols < width)
        memset (panel + n_cols, 0, (width - n_cols) * sizeof (float));
      if (++kj == KW)
        {
          kj = 0;
          if (++ki == KH)
            ki = 0, c++;
        }
    }
}

/* gather_panel for a full panel inside one image when output j of the
 * flattened image reads input plane element j + tap_off for every tap:
 * windows with unit strides and OW == W read x itself; stride-2 windows
 * with OW == ceil (W / 2) read x split into its four (row, column)
 * parity planes (split_phases). Every row of the panel is then three
 * masked loads at a fixed offset; the masks (the lanes whose tap falls
 * inside the row and the plane) depend only on the tap and are worked
 * out once per panel. */
static void
gather_panel_flat (const ConvGemmJob *job, const PixelRun *run, gint64 k0, gint64 k1, float *panel)
{
  const GraftConvGemmArgs *a = job->args;
  const GraftWindow *w = a->w;
  gint64 Cg = a->C / a->group, KH = w->kernel[0], KW = w->kernel[1], taps = KH * KW, OW = w->out[1];
  /* worked out a vector of lanes at a time: done lane by lane, with a
   * division per lane, this took half as long as the gather itself in
   * ResNet's stem (7 × 7 taps) */
  __mmask16 col_mask[MAX_FLAT_TAPS][MAX_VECS], row_mask[MAX_FLAT_TAPS][MAX_VECS];
  const __m512i lane = _mm512_set_epi32 (15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  for (int v = 0; v < MAX_VECS; v++)
    {
      /* each lane's output row and column */
      gint64 j = run->ow + v * LANES;
      __m512i ow = _mm512_add_epi32 (_mm512_set1_epi32 ((int) (j % OW)), lane);
      __m512i oh = _mm512_set1_epi32 ((int) (j / OW));
      for (__mmask16 wrap; (wrap = _mm512_cmpge_epi32_mask (ow, _mm512_set1_epi32 ((int) OW))) != 0;)
        {
          ow = _mm512_mask_sub_epi32 (ow, wrap, ow, _mm512_set1_epi32 ((int) OW));
          oh = _mm512_mask_add_epi32 (oh, wrap, oh, _mm512_set1_epi32 (1));
        }
      for (gint64 kj = 0; kj < KW; kj++)
        col_mask[kj][v] = _mm512_cmpge_epi32_mask (ow, _mm512_set1_epi32 ((int) -job->col_shift[kj])) &
                          _mm512_cmplt_epi32_mask (ow, _mm512_set1_epi32 ((int) (job->col_limit[kj] - job->col_shift[kj])));
      for (gint64 ki = 0; ki < KH; ki++)
        row_mask[ki][v] = _mm512_cmpge_epi32_mask (oh, _mm512_set1_epi32 ((int) -job->row_shift[ki])) &
                          _mm512_cmplt_epi32_mask (oh, _mm512_set1_epi32 ((int) (job->row_limit[ki] - job->row_shift[ki])));
    }
  const float *x = job->flat_x + (run->image * a->C + job->g * Cg) * job->flat_plane + run->ow;
  gint64 c = k0 / taps, ki = k0 % taps / KW, kj = k0 % KW;
  for (gint64 k = k0; k < k1; k++, panel += PANEL_COLS)
    {
      const float *src = x + (c * job->flat_plane + job->tap_off[ki * KW + kj]);
      for (int v = 0; v < MAX_VECS; v++)
        _mm512_storeu_ps (panel + v * LANES,
                          _mm512_maskz_loadu_ps (col_mask[kj][v] & row_mask[ki][v], src + v * LANES));
      if (++kj == KW)
        {
          kj = 0;
          if (++ki == KH)
            ki = 0, c++;
        }
    }
}

/* Plane p of x into its four parity planes [p][row parity][column
 * parity][Hq][Wq]; elements past the input's edge are zero. */
static void
split_phases_plane (gint64 p, gpointer data)
{
  const PhaseJob *job = data;
  const float *x = job->x + p * job->H * job->W;
  float *out = job->phases + p * 4 * job->Hq * job->Wq;
  for (gint64 r = 0; r < 2 * job->Hq; r++)
    {
      float *even = out + ((r % 2) * 2 * job->Hq + r / 2) * job->Wq, *odd = even + job->Hq * job->Wq;
      if (r >= job->H)
        {
          memset (even, 0, job->Wq * sizeof (float));
          memset (odd, 0, job->Wq * sizeof (float));
          continue;
        }
      const float *row = x + r * job->W;
      for (gint64 q = 0; q < job->Wq; q += LANES)
        {
          __mmask16 lanes = graft_lane_mask16 (0, job->Wq - q);
          __m512 lo = _mm512_maskz_loadu_ps (graft_lane_mask16 (0, job->W - 2 * q), row + 2 * q);
          __m512 hi = _mm512_maskz_loadu_ps (graft_lane_mask16 (0, job->W - 2 * q - LANES), row + 2 * q + LANES);
          _mm512_mask_storeu_ps (even + q, lanes, graft_even_lanes16 (lo, hi));
          _mm512_mask_storeu_ps (odd + q, lanes, graft_odd_lanes16 (lo, hi));
        }
    }
}

/* tile [ROWS][vecs·LANES] (+)= a [K][ROWS] · b [K][vecs·LANES] in up to
 * 24 zmm accumulators (see conv-tile-body.h); the tile's rows are
 * vecs·LANES floats apart. */
#define TB_V GraftV16f
#define TB_LANES LANES
#define TB_ROWS ROWS
#define TB_SUFFIX avx512
#include "runtime/kernels/conv-tile-body.h"

#define MICRO_KERNEL_AVX512(vecs)                                                                                     \
  static GRAFT_HOT_LOOP __attribute__ ((noinline)) void micro_kernel_##vecs (                                         \
    gint64 K, const float *a, const float *b, gint64 ldb, float *tile, gboolean accumulate, const float *prefetch,   \
    gint64 prefetch_lines, const float *next_a, gint64 a_lines)                                                        \
  {                                                                                                                    \
    tile_body_avx512 (K, a, b, ldb, tile, vecs * LANES, accumulate, prefetch, prefetch_lines, next_a, a_lines, vecs); \
  }
MICRO_KERNEL_AVX512 (1)
MICRO_KERNEL_AVX512 (2)
MICRO_KERNEL_AVX512 (3)

/* dst[0..n) = clamp (src[0..n) + bias [+ res[0..n)]) */
static void
store_row (float *dst, const float *src, const float *res, gint64 n, float bias, gboolean clamp, float lo, float hi)
{
  __m512 vb = _mm512_set1_ps (bias), vlo = _mm512_set1_ps (lo), vhi = _mm512_set1_ps (hi);
  for (gint64 i = 0; i < n; i += LANES)
    {
      __mmask16 lanes = graft_lane_mask16 (0, n - i);
      __m512 v = _mm512_add_ps (_mm512_maskz_loadu_ps (lanes, src + i), vb);
      if (res)
        v = _mm512_add_ps (v, _mm512_maskz_loadu_ps (lanes, res + i));
      if (clamp)
        {
          /* the second operand is returned for NaN: NaN stays NaN */
          v = _mm512_max_ps (vlo, v);
          v = _mm512_min_ps (vhi, v);
        }
      _mm512_mask_storeu_ps (dst + i, lanes, v);
    }
}

typedef void (*MicroKernel) (gint64 K, const float *a, const float *b, gint64 ldb, float *tile, gboolean accumulate,
                             const float *prefetch, gint64 prefetch_lines, const float *next_a, gint64 a_lines);

/* Panel by panel, each filter panel (up to 40 KB) kept in L1 across the
 * column panels; kernels[v - 1] for tiles of v vectors, and narrow_tile
 * for columns as narrow as NARROW_COLS where narrow. */
static inline void
multiply_panels (const TileBlock *t, const MicroKernel kernels[MAX_VECS], gboolean narrow)
{
  gint64 a_lines = t->K * ROWS / LINE_FLOATS;
  for (gint64 p = 0; p < t->panels; p++)
    {
      const float *a = t->a + p * t->a_stride;
      const float *next_a = p + 1 < t->panels ? a + t->a_stride : t->next_a;
      for (gint64 c = 0; c < t->n_group; c++)
        {
          float *tile = t->tiles + (p * t->G + c) * ROWS * PANEL_COLS;
          gint64 pl;
          const float *pf = output_prefetch_next (t->out_prefetch, &pl);
          /* the next filter panel's share for this call */
          gint64 a0 = next_a ? c * a_lines / t->n_group : 0, a1 = next_a ? (c + 1) * a_lines / t->n_group : 0;
          const float *na = next_a ? next_a + a0 * LINE_FLOATS : NULL;
          if (narrow && t->n_cols[c] <= NARROW_COLS)
            narrow_tile (t->K, a, t->b[c], t->ldb[c], tile, LANES, t->accumulate, t->n_cols[c], pf, pl, na, a1 - a0);
          else
            kernels[(t->n_cols[c] + LANES - 1) / LANES - 1] (t->K, a, t->b[c], t->ldb[c], tile, t->accumulate, pf, pl,
                                                             na, a1 - a0);
        }
    }
}

static void
multiply_avx512 (const TileBlock *t)
{
  static const MicroKernel kernels[MAX_VECS] = { micro_kernel_1, micro_kernel_2, micro_kernel_3 };
  multiply_panels (t, kernels, TRUE);
}

/* The pointwise micro-kernel, 8 filter rows × up to 48 columns in 24 zmm
 * accumulators (see conv-pointwise-body.h). */
#define PW_V GraftV16f
#define PW_LANES LANES
#define PW_ROWS ROWS
#define PW_TARGET
#define PW_MASK_T __mmask16
#define PW_FIRST_LANES(n) graft_lane_mask16 (0, (n))
#define PW_MASKED_LOAD(p, m) ((GraftV16f) _mm512_maskz_loadu_ps ((m), (p)))
#define PW_MASKED_STORE(p, m, v) _mm512_mask_storeu_ps ((p), (m), (__m512) (v))
#define PW_CLAMP(v, lo, hi) \
  ((GraftV16f) _mm512_min_ps (_mm512_set1_ps (hi), _mm512_max_ps (_mm512_set1_ps (lo), (__m512) (v))))
#define PW_SUFFIX avx512
#include "runtime/kernels/conv-pointwise-body.h"

/* The pointwise product of two filter panels (16 output channels, a0's
 * rows then a1's; a1 may be a0 when only rows < 8 are wanted) times n ≤ 8
 * columns of maps of at most 8 pixels (EfficientNet's and MobileNet's
 * last stages, 2×2 at batch 2, and their squeeze-excitation 1×1): the 16
 * channels in one vector times each column's broadcast value, where a
 * sliver kernel would fill half its lanes or less (pointwise_narrow: a
 * ymm of one panel). Chains over k when there are too few columns to
 * hide the multiply-adds' latency. Column j of x is b[k·ldb + b_at[j]]
 * and of y (and res) dst[r·ldd + d_at[j]]: the columns of several images
 * go through one pass over the filter, which at these sizes is read from
 * memory and costs more than the products. rows ≤ 16 rows written. */
enum { PAIR_AHEAD = 64 };

static inline __attribute__ ((always_inline)) void
pointwise_pair_body (gint64 K, const float *a0, const float *a1, const float *b, gint64 ldb, const gint64 *b_at,
                     float *dst, const float *res, gint64 ldd, const gint64 *d_at, const float *bias, int rows,
                     gboolean clamp, float lo, float hi, const int n)
{
  enum { CHAINS_MAX = 4 };
  const int chains = n <= 2 ? 4 : n <= 4 ? 2 : 1;
  __m512 acc[8][CHAINS_MAX];
  gint64 at[8];
  for (int j = 0; j < n; j++)
    {
      at[j] = b_at[j];
      for (int c = 0; c < chains; c++)
        acc[j][c] = _mm512_setzero_ps ();
    }
  gint64 k = 0;
  for (; k + chains <= K; k += chains)
    for (int c = 0; c < chains; c++)
      {
        __m512 av = _mm512_castpd_ps (_mm512_insertf64x4 (
          _mm512_castps_pd (_mm512_castps256_ps512 (_mm256_loadu_ps (a0 + (k + c) * ROWS))),
          _mm256_castps_pd (_mm256_loadu_ps (a1 + (k + c) * ROWS)), 1));
        const float *bk = b + (k + c) * ldb;
        for (int j = 0; j < n; j++)
          acc[j][c] = _mm512_fmadd_ps (av, _mm512_set1_ps (bk[at[j]]), acc[j][c]);
        if ((k + c) % 2 == 0)
          {
            __builtin_prefetch (a0 + (k + c + PAIR_AHEAD) * ROWS, 0, 3);
            __builtin_prefetch (a1 + (k + c + PAIR_AHEAD) * ROWS, 0, 3);
          }
      }
  for (; k < K; k++)
    {
      __m512 av = _mm512_castpd_ps (_mm512_insertf64x4 (
        _mm512_castps_pd (_mm512_castps256_ps512 (_mm256_loadu_ps (a0 + k * ROWS))),
        _mm256_castps_pd (_mm256_loadu_ps (a1 + k * ROWS)), 1));
      const float *bk = b + k * ldb;
      for (int j = 0; j < n; j++)
        acc[j][0] = _mm512_fmadd_ps (av, _mm512_set1_ps (bk[at[j]]), acc[j][0]);
    }
  for (int j = 0; j < n; j++)
    {
      float sum[2 * ROWS];
      __m512 total = acc[j][0];
      for (int c = 1; c < chains; c++)
        total = _mm512_add_ps (total, acc[j][c]);
      _mm512_storeu_ps (sum, total);
      column_out (sum, rows, dst, res, ldd, d_at[j], bias, clamp, lo, hi);
    }
}

#define POINTWISE_PAIR(n)                                                                                              \
  static GRAFT_HOT_LOOP __attribute__ ((noinline)) void pointwise_pair_##n (                                          \
    gint64 K, const float *a0, const float *a1, const float *b, gint64 ldb, const gint64 *b_at, float *dst,          \
    const float *res, gint64 ldd, const gint64 *d_at, const float *bias, int rows, gboolean clamp, float lo,         \
    float hi)                                                                                                          \
  {                                                                                                                    \
    pointwise_pair_body (K, a0, a1, b, ldb, b_at, dst, res, ldd, d_at, bias, rows, clamp, lo, hi, n);                \
  }
POINTWISE_PAIR (1)
POINTWISE_PAIR (2)
POINTWISE_PAIR (3)
POINTWISE_PAIR (4)
POINTWISE_PAIR (5)
POINTWISE_PAIR (6)
POINTWISE_PAIR (7)
POINTWISE_PAIR (8)

typedef void (*PointwisePair) (gint64 K, const float *a0, const float *a1, const float *b, gint64 ldb,
                               const gint64 *b_at, float *dst, const float *res, gint64 ldd, const gint64 *d_at,
                               const float *bias, int rows, gboolean clamp, float lo, float hi);

static const PointwisePair pointwise_pair_avx512[] = { pointwise_pair_1, pointwise_pair_2, pointwise_pair_3,
                                                       pointwise_pair_4, pointwise_pair_5, pointwise_pair_6,
                                                       pointwise_pair_7, pointwise_pair_8 };

static void pointwise_task_avx512 (gint64 t, gpointer data);

/* up to 1280 the whole depth fits with its panel in L2; deeper filters in
 * blocks of about 768, each block's filter rows read once per pass */
static const ConvGemmIsa isa_avx512 = { gather_panel, gather_panel_flat, multiply_avx512, store_row,
                                        split_phases_plane, pointwise_task_avx512, PANEL_COLS, 1280, 768, ROWS,
                                        PANEL_COLS };

GRAFT_TARGET_AVX512_END

/* ---- AVX512_BF16: the AVX-512 GEMM over bfloat16 pairs ----
 *
 * The same passes, panels and 8 × 48 tiles as the AVX-512 kernels, with
 * the filter packed once in bf16 and each gathered panel of B rounded to
 * bf16 in place (two rows of k into one line of pairs) before its
 * products: every vdpbf16ps adds two k steps to 16 float32 sums, half
 * the instructions of the float32 multiply-adds for the same tile. This
 * is how oneDNN's bf16 convolutions lay out their operands too (pairs of
 * input channels interleaved, "VNNI" order), there in a blocked layout
 * made once per tensor. Written with intrinsics: GCC's generic vectors
 * have no bfloat16 dot product. */
GRAFT_TARGET_AVX512_BF16_BEGIN

static inline __attribute__ ((always_inline)) void
tile_body_bf16 (gint64 lines, const float *a_pairs, const float *b_pairs, gint64 ldb, float *tile,
                gboolean accumulate, const float *prefetch, gint64 prefetch_lines, const float *next_a, gint64 a_lines,
                const int vecs)
{
  const int *a = (const int *) a_pairs;
  const int *b = (const int *) b_pairs;
  gint64 ldt = vecs * LANES;
  __m512 acc[ROWS][MAX_VECS];
  for (int r = 0; r < ROWS; r++)
    for (int v = 0; v < vecs; v++)
      acc[r][v] = accumulate ? _mm512_loadu_ps (tile + r * ldt + v * LANES) : _mm512_setzero_ps ();
#define BF16_STEP() \
  do \
    { \
      __m512bh bv[MAX_VECS]; \
      for (int v = 0; v < vecs; v++) \
        bv[v] = (__m512bh) _mm512_loadu_si512 (b + v * LANES); \
      for (int r = 0; r < ROWS; r++) \
        { \
          __m512bh av = (__m512bh) _mm512_set1_epi32 (a[r]); \
          for (int v = 0; v < vecs; v++) \
            acc[r][v] = _mm512_dpbf16_ps (acc[r][v], av, bv[v]); \
        } \
      a += ROWS; \
      b += ldb; \
    } \
  while (0)
  /* the prefetches as tile_body_avx512 spreads them (conv-tile-body.h) */
  gint64 k = 0, groups = lines / 4;
  gint64 per_group = groups > 0 ? (prefetch_lines + groups - 1) / groups : 0;
  gint64 a_per_group = groups > 0 ? (a_lines + groups - 1) / groups : 0;
  for (; k + 4 <= lines && (prefetch_lines > 0 || a_lines > 0); k += 4)
    {
      for (gint64 j = 0; j < per_group && prefetch_lines > 0; j++, prefetch_lines--, prefetch += LINE_FLOATS)
        __builtin_prefetch (prefetch, 0, 2);
      for (gint64 j = 0; j < a_per_group && a_lines > 0; j++, a_lines--, next_a += LINE_FLOATS)
        __builtin_prefetch (next_a, 0, 2);
      BF16_STEP ();
      BF16_STEP ();
      BF16_STEP ();
      BF16_STEP ();
    }
#pragma GCC unroll 4
  for (; k < lines; k++)
    BF16_STEP ();
#undef BF16_STEP
  for (; prefetch_lines > 0; prefetch_lines--, prefetch += LINE_FLOATS)
    __builtin_prefetch (prefetch, 0, 2);
  for (; a_lines > 0; a_lines--, next_a += LINE_FLOATS)
    __builtin_prefetch (next_a, 0, 2);
  for (int r = 0; r < ROWS; r++)
    for (int v = 0; v < vecs; v++)
      _mm512_storeu_ps (tile + r * ldt + v * LANES, acc[r][v]);
}

#define MICRO_KERNEL_BF16(vecs)                                                                                       \
  static GRAFT_HOT_LOOP __attribute__ ((noinline)) void micro_kernel_bf16_##vecs (                                    \
    gint64 lines, const float *a, const float *b, gint64 ldb, float *tile, gboolean accumulate,                      \
    const float *prefetch, gint64 prefetch_lines, const float *next_a, gint64 a_lines)                                 \
  {                                                                                                                    \
    tile_body_bf16 (lines, a, b, ldb, tile, accumulate, prefetch, prefetch_lines, next_a, a_lines, vecs);             \
  }
MICRO_KERNEL_BF16 (1)
MICRO_KERNEL_BF16 (2)
MICRO_KERNEL_BF16 (3)

/* multiply_avx512 over lines of pairs (TileBlock's K counts lines);
 * narrow panels take a tile of one vector (no bf16 narrow kernel) */
static void
multiply_bf16 (const TileBlock *t)
{
  static const MicroKernel kernels[MAX_VECS] = { micro_kernel_bf16_1, micro_kernel_bf16_2, micro_kernel_bf16_3 };
  multiply_panels (t, kernels, FALSE);
}

/* Rows 2·line and 2·line + 1 of panel [rows][width] (width a multiple
 * of LANES) into line `line` of bf16 pairs, in place (line ≤ 2·line:
 * each row is read before a line overwrites it); an odd last row pairs
 * with zero. vcvtne2ps2bf16 rounds to nearest even (NaN stays NaN) into
 * words 0–15 (low row) and 16–31 (high row); vpermw interleaves them. */
static void
to_pairs_bf16 (float *panel, gint64 rows, gint64 width)
{
  static const short interleave[32] = { 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23,
                                        8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31 };
  __m512i order = _mm512_loadu_si512 (interleave);
  for (gint64 line = 0; 2 * line < rows; line++)
    {
      const float *low = panel + 2 * line * width, *high = low + width;
      gboolean pair = 2 * line + 1 < rows;
      float *dst = panel + line * width;
      for (gint64 j = 0; j < width; j += LANES)
        {
          __m512 lo = _mm512_loadu_ps (low + j), hi = pair ? _mm512_loadu_ps (high + j) : _mm512_setzero_ps ();
          __m512i words = (__m512i) _mm512_cvtne2ps_pbh (hi, lo);
          _mm512_storeu_si512 (dst + j, _mm512_permutexvar_epi16 (order, words));
        }
    }
}

/* x's rows k0, k0 + 1 … of the panel's runs (image, ow = first pixel
 * of its plane, len, col = first column in the panel) side by side, two
 * rows into one line of pairs of the panel's width (zero past the runs) */
static void
gather_pairs_direct (const ConvGemmJob *job, const PixelRun *runs, int n_runs, gint64 width, gint64 k0, gint64 k1,
                     float *panel)
{
  static const short interleave[32] = { 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23,
                                        8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31 };
  const GraftConvGemmArgs *a = job->args;
  __m512i order = _mm512_loadu_si512 (interleave);
  gint64 in_size = job->in_size, channel0 = job->g * (a->C / a->group);
  const float *x = a->x + channel0 * in_size;
  for (gint64 k = k0; k < k1; k += 2, panel += width)
    {
      gboolean pair = k + 1 < k1;
      for (gint64 j = 0; j < width; j += LANES)
        {
          /* each run's lanes of this vector loaded in place (the lanes
           * outside a run's mask are not read) */
          __m512 lo = _mm512_setzero_ps (), hi = _mm512_setzero_ps ();
          for (int r = 0; r < n_runs; r++)
            {
              __mmask16 lanes = graft_lane_mask16 (runs[r].col - j, runs[r].col + runs[r].len - j);
              if (lanes == 0)
                continue;
              const float *src = x + (runs[r].image * a->C + k) * in_size + runs[r].ow + (j - runs[r].col);
              lo = _mm512_mask_loadu_ps (lo, lanes, src);
              if (pair)
                hi = _mm512_mask_loadu_ps (hi, lanes, src + in_size);
            }
          __m512i words = (__m512i) _mm512_cvtne2ps_pbh (hi, lo);
          _mm512_storeu_si512 (panel + j, _mm512_permutexvar_epi16 (order, words));
        }
    }
}

/* sums[j][0..16) = rows of two filter panels (a0's 8, then a1's) times
 * column j < n ≤ NARROW_BF16_COLS of B's lines of pairs (rows ldb apart): the 16 rows in
 * one vector times the column's broadcast pair, as pointwise_pair_body
 * does in float32; chains over the lines when there are too few columns
 * to hide the dot products' latency. */
enum { NARROW_AHEAD = 64, NARROW_BF16_COLS = 16 };

static inline __attribute__ ((always_inline)) void
narrow_body_bf16 (gint64 lines, const float *a0_pairs, const float *a1_pairs, const float *b_pairs, gint64 ldb,
                  float (*sums)[2 * ROWS], const int n)
{
  enum { CHAINS_MAX = 4 };
  const int chains = n <= 2 ? 4 : n <= 4 ? 2 : 1;
  const int *a0 = (const int *) a0_pairs, *a1 = (const int *) a1_pairs, *b = (const int *) b_pairs;
  __m512 acc[NARROW_BF16_COLS][CHAINS_MAX];
  for (int j = 0; j < n; j++)
    for (int c = 0; c < chains; c++)
      acc[j][c] = _mm512_setzero_ps ();
#define NARROW_STEP(line, c) \
  do \
    { \
      __m512i av = _mm512_inserti64x4 (_mm512_castsi256_si512 (_mm256_loadu_si256 ((const void *) (a0 + (line) * ROWS))), \
                                       _mm256_loadu_si256 ((const void *) (a1 + (line) * ROWS)), 1); \
      const int *bl = b + (line) * ldb; \
      for (int j = 0; j < n; j++) \
        acc[j][c] = _mm512_dpbf16_ps (acc[j][c], (__m512bh) av, (__m512bh) _mm512_set1_epi32 (bl[j])); \
    } \
  while (0)
  gint64 l = 0;
  for (; l + chains <= lines; l += chains)
    for (int c = 0; c < chains; c++)
      {
        NARROW_STEP (l + c, c);
        /* the filter comes from memory (read once per call): ask for it
         * ahead, a line of 64 bytes per two lines of pairs */
        if ((l + c) % 2 == 0)
          {
            __builtin_prefetch (a0 + (l + c + NARROW_AHEAD) * ROWS, 0, 3);
            __builtin_prefetch (a1 + (l + c + NARROW_AHEAD) * ROWS, 0, 3);
          }
      }
  for (; l < lines; l++)
    NARROW_STEP (l, 0);
#undef NARROW_STEP
  for (int j = 0; j < n; j++)
    {
      __m512 total = acc[j][0];
      for (int c = 1; c < chains; c++)
        total = _mm512_add_ps (total, acc[j][c]);
      _mm512_storeu_ps (sums[j], total);
    }
}

#define NARROW_BF16(n)                                                                                                 \
  static GRAFT_HOT_LOOP __attribute__ ((noinline)) void narrow_bf16_##n (                                              \
    gint64 lines, const float *a0, const float *a1, const float *b, gint64 ldb, float (*sums)[2 * ROWS])              \
  {                                                                                                                    \
    narrow_body_bf16 (lines, a0, a1, b, ldb, sums, n);                                                                 \
  }
NARROW_BF16 (1)
NARROW_BF16 (2)
NARROW_BF16 (3)
NARROW_BF16 (4)
NARROW_BF16 (5)
NARROW_BF16 (6)
NARROW_BF16 (7)
NARROW_BF16 (8)
NARROW_BF16 (9)
NARROW_BF16 (10)
NARROW_BF16 (11)
NARROW_BF16 (12)
NARROW_BF16 (13)
NARROW_BF16 (14)
NARROW_BF16 (15)
NARROW_BF16 (16)

typedef void (*NarrowBf16) (gint64 lines, const float *a0, const float *a1, const float *b, gint64 ldb,
                            float (*sums)[2 * ROWS]);
static const NarrowBf16 narrow_bf16_kernels[] = { narrow_bf16_1, narrow_bf16_2, narrow_bf16_3, narrow_bf16_4,
                                                  narrow_bf16_5, narrow_bf16_6, narrow_bf16_7, narrow_bf16_8,
                                                  narrow_bf16_9, narrow_bf16_10, narrow_bf16_11, narrow_bf16_12,
                                                  narrow_bf16_13, narrow_bf16_14, narrow_bf16_15, narrow_bf16_16 };

typedef struct {
  const ConvGemmJob *job;
  const float *pairs;             /* B [lines][width] in pairs */
  gint64 width;
  gint64 image[PANEL_COLS], pixel[PANEL_COLS];   /* where column j lies in y */
} NarrowJob;

/* Output channels [16·t, +16) of the group, every column, NARROW_BF16_COLS at a time. */
static void
narrow_task (gint64 t, gpointer data)
{
  const NarrowJob *nj = data;
  const ConvGemmJob *job = nj->job;
  const GraftConvGemmArgs *a = job->args;
  const GraftPackedFilter *f = job->filter;
  gint64 p = 2 * t, m0 = job->g * f->Mg + p * ROWS;
  const float *a0 = f->data + (job->g * f->panels + p) * f->lines * ROWS;
  const float *a1 = p + 1 < f->panels ? a0 + f->lines * ROWS : a0;
  int rows = (int) MIN (2 * ROWS, f->Mg - p * ROWS);
  float sums[NARROW_BF16_COLS][2 * ROWS];
  for (gint64 j0 = 0; j0 < job->columns; j0 += NARROW_BF16_COLS)
    {
      int n = (int) MIN (NARROW_BF16_COLS, job->columns - j0);
      narrow_bf16_kernels[n - 1] (f->lines, a0, a1, nj->pairs + j0, nj->width, sums);
      for (int j = 0; j < n; j++)
        {
          gint64 at = (nj->image[j0 + j] * a->M + m0) * job->out_size + nj->pixel[j0 + j];
          column_out (sums[j], rows, a->y + at, a->residual ? a->residual + at : NULL, job->out_size, 0,
                      a->bias ? a->bias + m0 : NULL, a->clamp, a->lo, a->hi);
        }
    }
}

/* A B of at most PANEL_COLS columns (small maps: EfficientNet's and
 * MobileNet's last stages, 2×2 and 4×4 at batch 2), where the filter,
 * read from memory at each call, costs more than the products: B
 * gathered once whole and rounded to pairs, then each pair of filter
 * panels (16 output channels, half the bytes of the float32 filter) in
 * one pass over all the columns. */
static gboolean
narrow_bf16 (GraftKernelContext *ctx, ConvGemmJob *job, GError **error)
{
  const GraftPackedFilter *f = job->filter;
  NarrowJob nj = { job };
  nj.width = (job->columns + LANES - 1) / LANES * LANES;
  g_autoptr(GraftRtTensor) scratch = graft_kernel_scratch (ctx, (gsize) MAX (2 * f->lines * nj.width, 1) * sizeof (float),
                                                           error);
  if (scratch == NULL)
    return FALSE;
  nj.pairs = scratch->data;
  PixelRun runs[PANEL_COLS], out_runs[PANEL_COLS];
  int n_runs = pixel_runs (job->args->w, 0, job->columns, runs);
  int n_out_runs = image_runs (job->out_size, 0, job->columns, out_runs);
  for (int r = 0; r < n_out_runs; r++)
    for (gint64 i = 0; i < out_runs[r].len; i++)
      {
        nj.image[out_runs[r].col + i] = out_runs[r].image;
        nj.pixel[out_runs[r].col + i] = out_runs[r].ow + i;
      }
  for (job->g = 0; job->g < job->args->group; job->g++)
    {
      if (job->direct)
        gather_pairs_direct (job, out_runs, n_out_runs, nj.width, 0, f->K, scratch->data);
      else
        {
          gather_panel (job, runs, n_runs, job->columns, nj.width, 0, f->K, scratch->data);
          to_pairs_bf16 (scratch->data, f->K, nj.width);
        }
      graft_kernel_parallel_for (ctx, (f->panels + 1) / 2, narrow_task, &nj);
    }
  return TRUE;
}

GRAFT_TARGET_AVX512_BF16_END

/* pointwise convolutions take the tiles too (their B is rounded as it
 * is gathered) */
static const ConvGemmIsa isa_avx512_bf16 = { gather_panel, gather_panel_flat, multiply_bf16, store_row,
                                             split_phases_plane, NULL, PANEL_COLS, 1280, 768, ROWS,
                                             PANEL_COLS, to_pairs_bf16, gather_pairs_direct, narrow_bf16 };

/* ---- AVX2 + FMA: the same GEMM in ymm registers ----
 *
 * Sixteen ymm registers hold a 4 × 24 tile (12 accumulators, three B
 * vectors and one broadcast filter value), so the 8-row filter panels are
 * multiplied as two halves of four rows; per k that is three loads of B and
 * four broadcasts for twelve multiply-adds. The packing and the planning
 * are those of the AVX-512 path. */

typedef float GraftV8f __attribute__ ((vector_size (32)));

#define YMM_LANES 8
#define HALF_ROWS (ROWS / 2)
#define YMM_MAX_VECS 3

/* gather_run without masked loads: the outputs inside [from, to) are
 * copied (stride 1: as one block), the rest zeroed. */
static GRAFT_TARGET_AVX2_FMA GRAFT_HOT_LOOP void
gather_run_avx2 (float *dst, const float *src, gint64 ow, gint64 len, gint64 sw, gint64 shift, gint64 from, gint64 to)
{
  gint64 end = ow + len;
  from = CLAMP (from, ow, end);
  to = CLAMP (to, from, end);
  memset (dst, 0, (from - ow) * sizeof (float));
  if (sw == 1)
    memcpy (dst + (from - ow), src + from + shift, (to - from) * sizeof (float));
  else
    for (gint64 o = from; o < to; o++)
      dst[o - ow] = src[o * sw + shift];
  memset (dst + (to - ow), 0, (end - to) * sizeof (float));
}

static GRAFT_TARGET_AVX2_FMA void
gather_panel_avx2 (const ConvGemmJob *job, const PixelRun *runs, int n_runs, gint64 n_cols, gint64 width, gint64 k0,
                   gint64 k1, float *panel)
{
  const GraftConvGemmArgs *a = job->args;
  const GraftWindow *w = a->w;
  gint64 Cg = a->C / a->group, KH = w->kernel[0], KW = w->kernel[1];
  gint64 H = w->in[0], W = w->in[1], sh = w->stride[0], sw = w->stride[1];
  gint64 dh = w->dilation[0], dw = w->dilation[1], pt = w->pad_begin[0], pl = w->pad_begin[1];
  gint64 c = k0 / (KH * KW), ki = k0 / KW % KH, kj = k0 % KW;
  const float *x = a->x + job->g * Cg * job->in_size;

  for (gint64 k = k0; k < k1; k++, panel += width)
    {
      gboolean patch = job->patches && kj == 0 && k + KW <= k1;
      if (patch)
        patch_rows_begin (job, runs, n_runs, n_cols, width, c, ki, &k, &kj, &panel);
      for (int r = 0; !patch && r < n_runs; r++)
        {
          const PixelRun *run = &runs[r];
          gint64 ih = run->oh * sh + ki * dh - pt;
          if (ih < 0 || ih >= H)
            memset (panel + run->col, 0, run->len * sizeof (float));
          else
            gather_run_avx2 (panel + run->col, x + (run->image * a->C + c) * job->in_size + ih * W, run->ow, run->len,
                             sw, kj * dw - pl, job->ow_lo[kj], job->ow_hi[kj]);
        }
      if (n_cols < width)
        memset (panel + n_cols, 0, (width - n_cols) * sizeof (float));
      if (++kj == KW)
        {
          kj = 0;
          if (++ki == KH)
            ki = 0, c++;
        }
    }
}

/* gather_panel_flat with AVX2's masked loads (a lane is loaded where its
 * mask has the sign bit set, and never read otherwise). */
static GRAFT_TARGET_AVX2_FMA void
gather_panel_flat_avx2 (const ConvGemmJob *job, const PixelRun *run, gint64 k0, gint64 k1, float *panel)
{
  const GraftConvGemmArgs *a = job->args;
  const GraftWindow *w = a->w;
  gint64 Cg = a->C / a->group, KH = w->kernel[0], KW = w->kernel[1], OW = w->out[1], taps = KH * KW;
  /* a vector of lanes at a time, as in gather_panel_flat */
  gint32 col_mask[MAX_FLAT_TAPS][PANEL_COLS], row_mask[MAX_FLAT_TAPS][PANEL_COLS];
  const __m256i lane = _mm256_set_epi32 (7, 6, 5, 4, 3, 2, 1, 0);
  for (int v = 0; v < PANEL_COLS; v += YMM_LANES)
    {
      gint64 j = run->ow + v;
      __m256i ow = _mm256_add_epi32 (_mm256_set1_epi32 ((int) (j % OW)), lane);
      __m256i oh = _mm256_set1_epi32 ((int) (j / OW));
      for (__m256i wrap; (wrap = _mm256_cmpgt_epi32 (ow, _mm256_set1_epi32 ((int) OW - 1))),
                         !_mm256_testz_si256 (wrap, wrap);)
        {
          ow = _mm256_sub_epi32 (ow, _mm256_and_si256 (wrap, _mm256_set1_epi32 ((int) OW)));
          oh = _mm256_sub_epi32 (oh, wrap);   /* wrap is -1 where the lane moved to the next row */
        }
      /* lo <= x < hi as x > lo - 1 and hi > x */
      for (gint64 kj = 0; kj < KW; kj++)
        _mm256_storeu_si256 ((__m256i *) &col_mask[kj][v],
                             _mm256_and_si256 (_mm256_cmpgt_epi32 (ow, _mm256_set1_epi32 ((int) (-job->col_shift[kj] - 1))),
                                               _mm256_cmpgt_epi32 (_mm256_set1_epi32 ((int) (job->col_limit[kj] - job->col_shift[kj])), ow)));
      for (gint64 ki = 0; ki < KH; ki++)
        _mm256_storeu_si256 ((__m256i *) &row_mask[ki][v],
                             _mm256_and_si256 (_mm256_cmpgt_epi32 (oh, _mm256_set1_epi32 ((int) (-job->row_shift[ki] - 1))),
                                               _mm256_cmpgt_epi32 (_mm256_set1_epi32 ((int) (job->row_limit[ki] - job->row_shift[ki])), oh)));
    }
  const float *x = job->flat_x + (run->image * a->C + job->g * Cg) * job->flat_plane + run->ow;
  gint64 c = k0 / taps, ki = k0 % taps / KW, kj = k0 % KW;
  for (gint64 k = k0; k < k1; k++, panel += PANEL_COLS)
    {
      const float *src = x + (c * job->flat_plane + job->tap_off[ki * KW + kj]);
      for (int v = 0; v < PANEL_COLS; v += YMM_LANES)
        {
          __m256i mask = _mm256_and_si256 (_mm256_loadu_si256 ((const __m256i *) &col_mask[kj][v]),
                                           _mm256_loadu_si256 ((const __m256i *) &row_mask[ki][v]));
          _mm256_storeu_ps (panel + v, _mm256_maskload_ps (src + v, mask));
        }
      if (++kj == KW)
        {
          kj = 0;
          if (++ki == KH)
            ki = 0, c++;
        }
    }
}

static GRAFT_TARGET_AVX2_FMA GRAFT_HOT_LOOP void
split_phases_plane_avx2 (gint64 p, gpointer data)
{
  const PhaseJob *job = data;
  const float *x = job->x + p * job->H * job->W;
  float *out = job->phases + p * 4 * job->Hq * job->Wq;
  for (gint64 r = 0; r < 2 * job->Hq; r++)
    {
      float *even = out + ((r % 2) * 2 * job->Hq + r / 2) * job->Wq, *odd = even + job->Hq * job->Wq;
      const float *row = x + r * job->W;
      for (gint64 q = 0; q < job->Wq; q++)
        {
          even[q] = r < job->H && 2 * q < job->W ? row[2 * q] : 0;
          odd[q] = r < job->H && 2 * q + 1 < job->W ? row[2 * q + 1] : 0;
        }
    }
}

/* tile [HALF_ROWS][vecs·8] (+)= a [K][ROWS] (its first HALF_ROWS rows) ·
 * b [K][vecs·8] in up to 12 ymm accumulators (see conv-tile-body.h); the
 * tile's rows ldt apart. */
#define TB_V GraftV8f
#define TB_LANES YMM_LANES
#define TB_ROWS HALF_ROWS
#define TB_SUFFIX avx2
#include "runtime/kernels/conv-tile-body.h"

#define MICRO_KERNEL_AVX2(vecs)                                                                                       \
  static GRAFT_TARGET_AVX2_FMA GRAFT_HOT_LOOP __attribute__ ((noinline)) void micro_kernel_avx2_##vecs (             \
    gint64 K, const float *a, const float *b, gint64 ldb, float *tile, gint64 ldt, gboolean accumulate,              \
    const float *prefetch, gint64 prefetch_lines, const float *next_a, gint64 a_lines)                                 \
  {                                                                                                                    \
    tile_body_avx2 (K, a, b, ldb, tile, ldt, accumulate, prefetch, prefetch_lines, next_a, a_lines, vecs);           \
  }
MICRO_KERNEL_AVX2 (2)
MICRO_KERNEL_AVX2 (3)

/* tile [ROWS][8] (+)= a [K][ROWS] · b [K][8]: a sliver of one vector
 * takes the whole panel, eight accumulators where four would leave the
 * multiply-adds waiting on each other's latency (small maps: ResNet-50's
 * 2×2 maps at 64×64 inputs give panels of 8 columns). */
#define TB_V GraftV8f
#define TB_LANES YMM_LANES
#define TB_ROWS ROWS
#define TB_SUFFIX avx2_panel
#include "runtime/kernels/conv-tile-body.h"

static GRAFT_TARGET_AVX2_FMA GRAFT_HOT_LOOP __attribute__ ((noinline)) void
micro_kernel_avx2_1_panel (gint64 K, const float *a, const float *b, gint64 ldb, float *tile, gint64 ldt,
                           gboolean accumulate, const float *prefetch, gint64 prefetch_lines, const float *next_a,
                           gint64 a_lines)
{
  tile_body_avx2_panel (K, a, b, ldb, tile, ldt, accumulate, prefetch, prefetch_lines, next_a, a_lines, 1);
}

/* The pointwise micro-kernel, the first four rows of a filter panel × up
 * to 24 columns in 12 ymm accumulators (see conv-pointwise-body.h). */
static inline GRAFT_TARGET_AVX2_FMA GraftV8f
masked_load8 (const float *p, __m256i lanes)
{
  return (GraftV8f) _mm256_maskload_ps (p, lanes);
}

static inline GRAFT_TARGET_AVX2_FMA void
masked_store8 (float *p, __m256i lanes, GraftV8f v)
{
  _mm256_maskstore_ps (p, lanes, (__m256) v);
}

static inline GRAFT_TARGET_AVX2_FMA GraftV8f
clamp8 (GraftV8f v, float lo, float hi)
{
  return (GraftV8f) _mm256_min_ps (_mm256_set1_ps (hi), _mm256_max_ps (_mm256_set1_ps (lo), (__m256) v));
}

#define PW_V GraftV8f
#define PW_LANES YMM_LANES
#define PW_ROWS HALF_ROWS
#define PW_TARGET GRAFT_TARGET_AVX2_FMA
#define PW_MASK_T __m256i
#define PW_FIRST_LANES(n) graft_first_lanes8 (n)
#define PW_MASKED_LOAD(p, m) masked_load8 ((p), (m))
#define PW_MASKED_STORE(p, m, v) masked_store8 ((p), (m), (v))
#define PW_CLAMP(v, lo, hi) clamp8 ((v), (lo), (hi))
#define PW_SUFFIX avx2
#include "runtime/kernels/conv-pointwise-body.h"

typedef void (*PointwiseKernel) (gint64 K, const float *a, const float *b, gint64 ldb, float *dst, const float *res,
                                 gint64 ldd, const float *bias, int rows, gint64 n, gboolean clamp, float lo, float hi);


/* The pointwise product for the last n ≤ 4 columns of an image (7×7 maps
 * leave one, 14×14 four): a narrow sliver wastes most of a 4 × 24 tile's
 * lanes, so it is computed the other way round, the 8 rows of a filter
 * panel in one vector, times each column's broadcast value, four chains
 * of multiply-adds per column where one would wait on the last. b [K]
 * rows ldb apart; y and res rows ldd apart; rows ≤ 8 rows of the panel
 * are written. */
static inline __attribute__ ((always_inline)) GRAFT_TARGET_AVX2_FMA void
pointwise_narrow_body (gint64 K, const float *a, const float *b, gint64 ldb, float *dst, const float *res,
                       gint64 ldd, const float *bias, int rows, gboolean clamp, float lo, float hi, const int n)
{
  enum { CHAINS = 4 };
  GraftV8f acc[4][CHAINS];
  for (int j = 0; j < n; j++)
    for (int c = 0; c < CHAINS; c++)
      acc[j][c] = (GraftV8f) { 0 };
  gint64 k = 0;
  for (; k + CHAINS <= K; k += CHAINS)
    for (int c = 0; c < CHAINS; c++)
      {
        GraftV8f av;
        memcpy (&av, a + (k + c) * ROWS, sizeof av);
        for (int j = 0; j < n; j++)
          acc[j][c] += av * b[(k + c) * ldb + j];
      }
  for (; k < K; k++)
    {
      GraftV8f av;
      memcpy (&av, a + k * ROWS, sizeof av);
      for (int j = 0; j < n; j++)
        acc[j][0] += av * b[k * ldb + j];
    }
  for (int j = 0; j < n; j++)
    {
      float sum[ROWS];
      GraftV8f total = (acc[j][0] + acc[j][1]) + (acc[j][2] + acc[j][3]);
      memcpy (sum, &total, sizeof sum);
      column_out (sum, rows, dst, res, ldd, j, bias, clamp, lo, hi);
    }
}

typedef void (*PointwiseNarrow) (gint64 K, const float *a, const float *b, gint64 ldb, float *dst, const float *res,
                                 gint64 ldd, const float *bias, int rows, gboolean clamp, float lo, float hi);

#define POINTWISE_NARROW(n)                                                                                            \
  static GRAFT_TARGET_AVX2_FMA GRAFT_HOT_LOOP __attribute__ ((noinline)) void pointwise_narrow_##n (                 \
    gint64 K, const float *a, const float *b, gint64 ldb, float *dst, const float *res, gint64 ldd,                  \
    const float *bias, int rows, gboolean clamp, float lo, float hi)                                                  \
  {                                                                                                                    \
    pointwise_narrow_body (K, a, b, ldb, dst, res, ldd, bias, rows, clamp, lo, hi, n);                              \
  }
POINTWISE_NARROW (1)
POINTWISE_NARROW (2)
POINTWISE_NARROW (3)
POINTWISE_NARROW (4)

static const PointwiseNarrow pointwise_narrow[] = { pointwise_narrow_1, pointwise_narrow_2, pointwise_narrow_3,
                                                    pointwise_narrow_4 };

/* lines cache lines from `from` on asked into L2 at once */
static inline void
ask_lines (const float *from, gint64 lines)
{
  for (gint64 i = 0; i < lines; i++)
    __builtin_prefetch (from + i * LINE_FLOATS, 0, 2);
}

/* tile [ROWS][n ≤ NARROW_COLS] (+)= a [K][ROWS] · b [K][n] (rows of the
 * tile ldt apart) with pointwise_narrow; the lines a micro-kernel call
 * would have asked for on the way are asked for at once. */
static void
narrow_tile (gint64 K, const float *a, const float *b, gint64 ldb, float *tile, gint64 ldt, gboolean accumulate,
             gint64 n, const float *prefetch, gint64 prefetch_lines, const float *next_a, gint64 a_lines)
{
  ask_lines (prefetch, prefetch_lines);
  ask_lines (next_a, a_lines);
  pointwise_narrow[n - 1] (K, a, b, ldb, tile, accumulate ? tile : NULL, ldt, NULL, ROWS, FALSE, 0, 0);
}

/* The pointwise micro-kernels of one ISA: each computes `rows` filter
 * rows of a panel per call, over a sliver of up to three vectors; that
 * of one vector (masked1) a whole panel. */
typedef struct _GraftPointwiseIsa {
  gint64 rows;                    /* HALF_ROWS (ymm) or ROWS (zmm) */
  gint64 lanes;                   /* floats per vector */
  PointwiseKernel full, masked3, masked2, full1, masked1;
  const PointwisePair *pairs;     /* [n - 1] for n ≤ 8 columns (pointwise_pair_body), or NULL */
} PointwiseIsa;

static const PointwiseIsa pointwise_avx2 = { HALF_ROWS, YMM_LANES, pointwise_kernel_avx2_3,
                                             pointwise_kernel_avx2_3_masked, pointwise_kernel_avx2_2_masked,
                                             pointwise_kernel_avx2_1, pointwise_kernel_avx2_1_masked };
static const PointwiseIsa pointwise_avx512 = { ROWS, LANES, pointwise_kernel_avx512_3,
                                               pointwise_kernel_avx512_3_masked, pointwise_kernel_avx512_2_masked,
                                               pointwise_kernel_avx512_1, pointwise_kernel_avx512_1_masked,
                                               pointwise_pair_avx512 };

const GraftPointwiseIsa *const graft_pointwise_isas[GRAFT_SIMD_N_LEVELS] = { NULL, &pointwise_avx2, &pointwise_avx512 };

/* Columns [0, n ≤ 3 vectors) of `rows` output rows from part `part` of a
 * filter panel (a: that part's first row; bias NULL or from its first
 * row); panel_rows: the panel's rows in all. One vector of columns or
 * fewer take the whole panel at once, in its first part's turn. */
static inline void
pointwise_sliver (const PointwiseIsa *pi, gint64 K, const float *a, gint64 part, const float *x, gint64 ldx, float *y,
                  const float *res, gint64 ldy, const float *bias, gint64 rows, gint64 panel_rows, gint64 n,
                  gboolean clamp, float lo, float hi)
{
  if (n <= 4)
    {
      if (part == 0)
        pointwise_narrow[n - 1] (K, a, x, ldx, y, res, ldy, bias, (int) panel_rows, clamp, lo, hi);
      return;
    }
  if (n <= pi->lanes)
    {
      /* one vector: the kernel takes the whole panel */
      if (part == 0)
        (n == pi->lanes ? pi->full1 : pi->masked1) (K, a, x, ldx, y, res, ldy, bias, (int) panel_rows, n, clamp, lo,
                                                     hi);
      return;
    }
  PointwiseKernel kernel = n == 3 * pi->lanes ? pi->full : n > 2 * pi->lanes ? pi->masked3 : pi->masked2;
  kernel (K, a, x, ldx, y, res, ldy, bias, (int) rows, n, clamp, lo, hi);
}

void
graft_conv_pointwise_block (const GraftPackedFilter *filter, gint64 m0, gint64 m1, const float *x, gint64 ldx,
                            gint64 n, float *y, const float *res, gint64 ldy, const float *bias, gboolean clamp, float lo,
                            float hi)
{
  g_return_if_fail (filter->group == 1 && m0 % ROWS == 0 && m1 <= filter->Mg && graft_conv_gemm_available ());
  const PointwiseIsa *pi = graft_kernel_table ()->pointwise;
  gint64 K = filter->K, sliver = 3 * pi->lanes;
  float copy[SLIVER_COPY_FLOATS] __attribute__ ((aligned (64)));
  /* x's rows a multiple of 4 KB apart fall into the same few sets of
   * L1, which then holds few of a sliver's K rows: each kernel call of
   * the filter's panels would read the sliver from L2 again. Copied
   * together, it stays in L1 for all of them. MobileNetV3's 16 → 64
   * expansion of 32×32 maps (4 KB planes), one block at batch 2, AVX2:
   * 0.165 → 0.118 ms; at AVX-512 0.107 → 0.103. */
  gboolean gather = K * sliver <= SLIVER_COPY_FLOATS && m1 - m0 > pi->rows && ldx * sizeof (float) % 4096 == 0;
  for (gint64 col = 0; col < n; col += sliver)
    {
      gint64 cols = MIN (sliver, n - col), ldb = ldx;
      const float *b = x + col;
      if (gather)
        {
          for (gint64 k = 0; k < K; k++)
            memcpy (copy + k * sliver, x + k * ldx + col, cols * sizeof (float));
          b = copy;
          ldb = sliver;
        }
      for (gint64 p = m0 / ROWS; p * ROWS < m1; p++)
        for (gint64 part = 0; part < ROWS / pi->rows; part++)
          {
            gint64 m = p * ROWS + part * pi->rows, rows = MIN (pi->rows, m1 - m);
            if (rows <= 0)
              break;
            pointwise_sliver (pi, K, filter->data + p * K * ROWS + part * pi->rows, part, b, ldb,
                              y + (m - m0) * ldy + col, res ? res + (m - m0) * ldy + col : NULL, ldy,
                              bias ? bias + (m - m0) : NULL, rows, MIN (ROWS, m1 - p * ROWS), cols, clamp, lo, hi);
          }
    }
}

/* Task t of a PointwiseJob: slivers [s0, s1) of the columns of all images
 * (global order: image by image) times filter panels [p0, p1), over the
 * whole K. Deep or large filters take the slivers in blocks whose columns
 * of x (K × a sliver's floats each) fit in about 256 KB of L2; within a
 * block every filter panel (or half panel with ymm; K × 8 or 4 floats, in
 * L1) meets each sliver in turn, so a filter larger than x (small maps,
 * many channels) is read once per block rather than once per sliver. */
static void
pointwise_task (gint64 t, const PointwiseJob *job, const PointwiseIsa *pi)
{
  const GraftConvGemmArgs *args = job->args;
  const GraftPackedFilter *f = job->filter;
  gint64 K = f->K, Cg = args->C / args->group;
  gint64 ct = t / job->row_splits, rs = t % job->row_splits;
  gint64 s0 = ct * job->slivers / job->col_tasks, s1 = (ct + 1) * job->slivers / job->col_tasks;
  gint64 p0 = rs * f->panels / job->row_splits, p1 = (rs + 1) * f->panels / job->row_splits;
  gint64 sliver_bytes = MAX (K, 1) * job->sliver_cols * (gint64) sizeof (float);
  gint64 block = MAX (256 * 1024 / sliver_bytes, 1);
  /* A sliver that fits in L1 with a filter that fits in L2 goes on its
   * own: the filter panels then stream past it from L2 at 32 bytes per k,
   * where a block of slivers streaming from L2 past each panel would take
   * 96 to 192 bytes per k, about all that L2 delivers (measured with AVX2:
   * some 10 % of MobileNetV2's time). */
  if (sliver_bytes <= 24 * 1024 && f->Mg * K * (gint64) sizeof (float) <= 384 * 1024)
    block = 1;
  /* maps of up to 8 pixels: filter panels two at a time, 16 channels to a
   * vector (pointwise_pair_body), and the pixels of as many images as
   * make 8 columns in each pass over the filter */
  if (pi->pairs && job->hw <= 8)
    {
      gint64 hw = job->hw, per_call = 8 / hw;
      for (gint64 first = s0; first < s1; first += per_call)
        {
          gint64 images = MIN (per_call, s1 - first), b_at[8], d_at[8];
          for (gint64 j = 0; j < images * hw; j++)
            {
              b_at[j] = j / hw * args->C * hw + j % hw;
              d_at[j] = j / hw * args->M * hw + j % hw;
            }
          for (gint64 p = p0; p < p1; p += 2)
            {
              gint64 m0 = p * ROWS, m = job->g * f->Mg + m0, at = (first * args->M + m) * hw;
              const float *a0 = f->data + (job->g * f->panels + p) * K * ROWS, *a1 = p + 1 < p1 ? a0 + K * ROWS : a0;
              int rows = (int) MIN (p + 1 < p1 ? 2 * ROWS : ROWS, f->Mg - m0);
              pi->pairs[images * hw - 1] (K, a0, a1, args->x + (first * args->C + job->g * Cg) * hw, hw, b_at,
                                          args->y + at, args->residual ? args->residual + at : NULL, hw, d_at,
                                          args->bias ? args->bias + m : NULL, rows, args->clamp, args->lo, args->hi);
            }
        }
      return;
    }
  /* one sliver at a time whose rows alias in L1 (see
   * graft_conv_pointwise_block): copied first. EfficientNet-B0's 16 → 96
   * expansion of 32×32 maps (4 KB planes) with Relu, batch 2, one thread:
   * AVX2 0.164 → 0.095 ms, AVX-512 0.079 → 0.073 ms. */
  float copy[SLIVER_COPY_FLOATS] __attribute__ ((aligned (64)));
  gboolean gather = block == 1 && K * job->sliver_cols <= SLIVER_COPY_FLOATS &&
                    (p1 - p0) * ROWS > pi->rows && job->hw * sizeof (float) % 4096 == 0;
  for (gint64 first = s0; first < s1; first += block)
    {
      gint64 last = MIN (s1, first + block);
      const float *gathered = NULL;
      if (gather)
        {
          gint64 image = first / job->slivers_per_image, col = first % job->slivers_per_image * job->sliver_cols;
          gint64 n = MIN (job->sliver_cols, job->hw - col);
          const float *x = args->x + (image * args->C + job->g * Cg) * job->hw + col;
          for (gint64 k = 0; k < K; k++)
            memcpy (copy + k * job->sliver_cols, x + k * job->hw, n * sizeof (float));
          gathered = copy;
        }
      for (gint64 p = p0; p < p1; p++)
        for (gint64 part = 0; part < ROWS / pi->rows; part++)
          {
            gint64 m0 = p * ROWS + part * pi->rows, rows = MIN (pi->rows, f->Mg - m0);
            if (rows <= 0)
              break;
            gint64 m = job->g * f->Mg + m0;
            const float *a = f->data + (job->g * f->panels + p) * K * ROWS + part * pi->rows;
            const float *bias = args->bias ? args->bias + m : NULL;
            for (gint64 s = first; s < last; s++)
              {
                gint64 image = s / job->slivers_per_image, col = s % job->slivers_per_image * job->sliver_cols;
                gint64 n = MIN (job->sliver_cols, job->hw - col), at = (image * args->M + m) * job->hw + col;
                const float *x = gathered ? gathered : args->x + (image * args->C + job->g * Cg) * job->hw + col;
                pointwise_sliver (pi, K, a, part, x, gathered ? job->sliver_cols : job->hw, args->y + at,
                                  args->residual ? args->residual + at : NULL, job->hw, bias, rows,
                                  MIN (ROWS, f->Mg - p * ROWS), n, args->clamp, args->lo, args->hi);
              }
          }
    }
}

static void
pointwise_task_avx2 (gint64 t, gpointer data)
{
  pointwise_task (t, data, &pointwise_avx2);
}

static void
pointwise_task_avx512 (gint64 t, gpointer data)
{
  pointwise_task (t, data, &pointwise_avx512);
}

/* Sliver by sliver: 24 columns of B over the block's depth (24 KB at
 * most) stay in L1 while every half filter panel streams past them. */
static void
multiply_avx2 (const TileBlock *t)
{
  gint64 a_lines = t->K * ROWS / LINE_FLOATS;
  for (gint64 c = 0; c < t->n_group; c++)
    {
      gint64 n_cols = t->n_cols[c], ldt = (n_cols + LANES - 1) / LANES * LANES;
      for (gint64 col = 0; col < n_cols; col += YMM_MAX_VECS * YMM_LANES)
        {
          gint64 left = n_cols - col;
          const float *b = t->b[c] + col;
          /* the first sliver reads the filter panels from memory, the
           * next ones from L2: it asks for the next panel as it goes */
          gboolean first = c == 0 && col == 0;
          for (gint64 p = 0; p < t->panels; p++)
            for (int half = 0; half < 2; half++)
              {
                const float *a = t->a + p * t->a_stride + half * HALF_ROWS;
                float *tile = t->tiles + (p * t->G + c) * ROWS * PANEL_COLS + half * HALF_ROWS * ldt + col;
                gint64 pl;
                const float *pf = output_prefetch_next (t->out_prefetch, &pl);
                /* the next panel's lines: its first half during this
                 * panel's first half, the rest during the second */
                const float *na = NULL;
                gint64 nl = 0;
                if (first && p + 1 < t->panels)
                  {
                    na = t->a + (p + 1) * t->a_stride + half * (a_lines / 2) * LINE_FLOATS;
                    nl = half ? a_lines - a_lines / 2 : a_lines / 2;
                  }
                if (left <= NARROW_COLS && half == 0)
                  narrow_tile (t->K, a, b, t->ldb[c], tile, ldt, t->accumulate, left, pf, pl, na, nl);
                else if (left <= YMM_LANES && half == 0)
                  micro_kernel_avx2_1_panel (t->K, a, b, t->ldb[c], tile, ldt, t->accumulate, pf, pl, na, nl);
                else if (left <= YMM_LANES)
                  {
                    /* the first half's call took both halves' rows */
                    ask_lines (pf, pl);
                    ask_lines (na, nl);
                  }
                else if (left > 2 * YMM_LANES)
                  micro_kernel_avx2_3 (t->K, a, b, t->ldb[c], tile, ldt, t->accumulate, pf, pl, na, nl);
                else
                  micro_kernel_avx2_2 (t->K, a, b, t->ldb[c], tile, ldt, t->accumulate, pf, pl, na, nl);
              }
        }
    }
}

static GRAFT_TARGET_AVX2_FMA void
store_row_avx2 (float *dst, const float *src, const float *res, gint64 n, float bias, gboolean clamp, float lo,
                float hi)
{
  __m256 vb = _mm256_set1_ps (bias), vlo = _mm256_set1_ps (lo), vhi = _mm256_set1_ps (hi);
  gint64 i = 0;
  for (; i + YMM_LANES <= n; i += YMM_LANES)
    {
      __m256 v = _mm256_add_ps (_mm256_loadu_ps (src + i), vb);
      if (res)
        v = _mm256_add_ps (v, _mm256_loadu_ps (res + i));
      if (clamp)
        v = _mm256_min_ps (vhi, _mm256_max_ps (vlo, v));   /* the second operand for NaN: NaN stays NaN */
      _mm256_storeu_ps (dst + i, v);
    }
  for (; i < n; i++)
    {
      float v = src[i] + bias;
      if (res)
        v += res[i];
      if (clamp)
        {
          v = lo > v ? lo : v;
          v = hi < v ? hi : v;
        }
      dst[i] = v;
    }
}

/* K blocks of up to 256: a sliver of B in L1 (see multiply_avx2) */
static const ConvGemmIsa isa_avx2 = { gather_panel_avx2, gather_panel_flat_avx2, multiply_avx2, store_row_avx2,
                                      split_phases_plane_avx2, pointwise_task_avx2, SLIVER_COLS, 320, 256, HALF_ROWS,
                                      YMM_MAX_VECS * YMM_LANES };

#else

const GraftPointwiseIsa *const graft_pointwise_isas[GRAFT_SIMD_N_LEVELS] = { NULL };

void
graft_conv_pointwise_block (const GraftPackedFilter *filter, gint64 m0, gint64 m1, const float *x, gint64 ldx,
                            gint64 n, float *y, const float *res, gint64 ldy, const float *bias, gboolean clamp, float lo,
                            float hi)
{
  g_return_if_reached ();
}

#endif

/* The OutputPrefetch of the pass of n_next column panels from column
 * panel next, filter panels [p0, p1), to run while this pass of n_group
 * column panels multiplies: FALSE when its pixels span too many images
 * (small maps: the output is in cache anyway). */
static gboolean
output_prefetch_plan (const ConvGemmJob *job, gint64 next, gint64 n_next, gint64 n_group, gint64 p0, gint64 p1,
                      OutputPrefetch *p)
{
  const GraftConvGemmArgs *a = job->args;
  gint64 Mg = job->filter->Mg, col0 = next * PANEL_COLS;
  gint64 n = MIN (n_next * PANEL_COLS, job->columns - col0);
  gint64 m0 = job->g * Mg + p0 * ROWS, m1 = job->g * Mg + MIN (p1 * ROWS, Mg);
  PixelRun spans[PANEL_COLS * MAX_GROUP_PANELS];
  int n_spans = image_runs (job->out_size, col0, n, spans);
  if (n_spans > MAX_OUTPUT_SPANS || m1 <= m0)
    return FALSE;
  gint64 lines = 0;
  for (int i = 0; i < n_spans; i++)
    lines += (spans[i].len + LINE_FLOATS - 1) / LINE_FLOATS;
  /* spread evenly over this pass's micro-kernel calls */
  gint64 calls = job->k_blocks * ((m1 - m0 + job->isa->call_rows - 1) / job->isa->call_rows) *
                 ((n_group * PANEL_COLS + job->isa->call_cols - 1) / job->isa->call_cols);
  *p = (OutputPrefetch) { a->y, a->M, job->out_size, m0, m1, n_spans };
  memcpy (p->spans, spans, n_spans * sizeof (PixelRun));
  p->quota = MAX (1, (lines * (m1 - m0) + calls - 1) / calls);
  p->m = m0;
  return TRUE;
}

static void
conv_gemm_task (gint64 task, gpointer data)
{
  const ConvGemmJob *job = data;
  const GraftConvGemmArgs *a = job->args;
  const GraftPackedFilter *f = job->filter;
  gint64 K = f->K, Mg = f->Mg, G = job->group_panels, L = f->lines;
  int per_line = f->bf16 ? 2 : 1;   /* k steps per line of the filter and of B */
  gint64 ct = task / job->row_splits, rs = task % job->row_splits;
  gint64 cp0 = ct * job->col_panels / job->col_tasks, cp1 = (ct + 1) * job->col_panels / job->col_tasks;
  gint64 p0 = rs * f->panels / job->row_splits, p1 = (rs + 1) * f->panels / job->row_splits;
  float *panels = job->scratch + task * job->task_floats;
  float *tiles = panels + G * job->kc * PANEL_COLS;
  PixelRun runs[MAX_GROUP_PANELS][PANEL_COLS], out_runs[MAX_GROUP_PANELS][PANEL_COLS];
  int n_runs[MAX_GROUP_PANELS], n_out_runs[MAX_GROUP_PANELS];

  for (gint64 first = cp0; first < cp1; first += G)
    {
      gint64 n_group = MIN (G, cp1 - first);
      for (gint64 c = 0; c < n_group; c++)
        {
          gint64 col0 = (first + c) * PANEL_COLS;
          n_runs[c] = pixel_runs (a->w, col0, MIN (PANEL_COLS, job->columns - col0), runs[c]);
          n_out_runs[c] = image_runs (job->out_size, col0, MIN (PANEL_COLS, job->columns - col0), out_runs[c]);
        }
      OutputPrefetch next_out;
      gboolean prefetching = first + G < cp1 &&
                             output_prefetch_plan (job, first + G, MIN (G, cp1 - first - G), n_group, p0, p1, &next_out);
      for (gint64 k0 = 0; k0 < K; k0 += job->kc)
        {
          gint64 k1 = MIN (K, k0 + job->kc);
          const float *b[MAX_GROUP_PANELS];
          gint64 ldb[MAX_GROUP_PANELS], n_cols[MAX_GROUP_PANELS];
          for (gint64 c = 0; c < n_group; c++)
            {
              n_cols[c] = MIN (PANEL_COLS, job->columns - (first + c) * PANEL_COLS);
              gint64 width = (n_cols[c] + LANES - 1) / LANES * LANES;
              if (job->direct && !f->bf16 && n_cols[c] == PANEL_COLS && n_out_runs[c] == 1)
                {
                  /* a whole panel of one image's plane: the multiply reads x where it is */
                  const PixelRun *run = &out_runs[c][0];
                  b[c] = a->x + (run->image * a->C + job->g * (a->C / a->group) + k0) * job->in_size + run->ow;
                  ldb[c] = job->in_size;
                  continue;
                }
              b[c] = panels + c * job->kc * PANEL_COLS;
              ldb[c] = width;
              if (f->bf16 && job->direct)
                job->isa->gather_pairs_direct (job, out_runs[c], n_out_runs[c], width, k0, k1, (float *) b[c]);
              else if (job->flat && n_cols[c] == PANEL_COLS && n_out_runs[c] == 1)
                job->isa->gather_flat (job, &out_runs[c][0], k0, k1, (float *) b[c]);
              else
                job->isa->gather (job, runs[c], n_runs[c], n_cols[c], width, k0, k1, (float *) b[c]);
              if (f->bf16 && !job->direct)
                job->isa->to_pairs ((float *) b[c], k1 - k0, width);
            }
          /* (a bf16 block starts at an even k: kc is even) */
          gint64 l0 = k0 / per_line, l1 = (k1 + per_line - 1) / per_line;
          TileBlock block = { l1 - l0, f->data + ((job->g * f->panels + p0) * L + l0) * ROWS, L * ROWS, p1 - p0,
                              b, ldb, n_cols, n_group, tiles, G, k0 > 0, prefetching ? &next_out : NULL,
                              k1 < K ? f->data + ((job->g * f->panels + p0) * L + l1) * ROWS : NULL };
          job->isa->multiply (&block);
        }
      /* row by row, so that each row of y gets the pass's panels in one run */
      for (gint64 p = p0; p < p1; p++)
        for (gint64 r = 0; r < ROWS && p * ROWS + r < Mg; r++)
          {
            gint64 m = job->g * Mg + p * ROWS + r;
            float bias = a->bias ? a->bias[m] : 0;
            for (gint64 c = 0; c < n_group; c++)
              {
                gint64 n_cols = MIN (PANEL_COLS, job->columns - (first + c) * PANEL_COLS);
                gint64 width = (n_cols + LANES - 1) / LANES * LANES;
                const float *tile = tiles + ((p - p0) * G + c) * ROWS * PANEL_COLS;
                for (int i = 0; i < n_out_runs[c]; i++)
                  {
                    const PixelRun *run = &out_runs[c][i];
                    gint64 at = (run->image * a->M + m) * job->out_size + run->ow;
                    job->isa->store_row (a->y + at, tile + r * width + run->col, a->residual ? a->residual + at : NULL,
                               run->len, bias, a->clamp, a->lo, a->hi);
                  }
              }
          }
    }
}

/* What the panels of a pass, and apart from them its tiles, may take:
 * 384 KB suits a 512 KB L2 (AMD EPYC). Cores with a larger L2 (2 MB on
 * Sapphire Rapids) take more column panels per pass, and a filter larger
 * than the L2 (ResNet-18's layer4, 9 MB) is read from memory fewer times:
 * 7 % of ResNet-18's time there, measured at 384 against 768 KB. */
static gsize
pass_budget_bytes (void)
{
  static gsize budget;

  if (budget == 0)
    {
      long l2 = sysconf (_SC_LEVEL2_CACHE_SIZE);
      budget = CLAMP (l2 > 0 ? (gsize) l2 * 3 / 8 : 0, 384 * 1024, 768 * 1024);
    }
  return budget;
}

/* Splits the work: K into blocks, column panels into passes, and the
 * panels (or, when there are few, the output channels) over the threads. */
static void
plan_job (ConvGemmJob *job, gint64 threads)
{
  const GraftPackedFilter *f = job->filter;
  gint64 K = MAX (f->K, 1);
  job->k_blocks = K <= job->isa->max_kc ? 1 : (K + job->isa->block_kc - 1) / job->isa->block_kc;
  job->kc = (K + job->k_blocks - 1) / job->k_blocks;
  if (f->bf16)
    job->kc += job->kc % 2;       /* blocks of whole pairs */
  job->col_panels = (job->columns + PANEL_COLS - 1) / PANEL_COLS;
  job->col_tasks = 1;
  job->row_splits = 1;
  if (threads > 1 && job->col_panels >= 2 * threads)
    job->col_tasks = threads;
  else if (threads > 1)
    job->row_splits = MAX (MIN (threads, f->panels), 1);
  job->tasks = job->col_tasks * job->row_splits;

  gint64 rows = (f->panels + job->row_splits - 1) / job->row_splits * ROWS;
  /* The panels of a pass (kc × cols) and their tiles (rows × cols) within
   * about 384 KB each: deep filters are read once per pass rather than
   * once per panel, and every output row is written in runs of several
   * panels (a few hundred short runs into as many rows of y make the
   * cores' store path, not the multiply-adds, the limit). */
  gint64 budget = pass_budget_bytes () / sizeof (float) / PANEL_COLS;
  gint64 G = MIN (budget / job->kc, budget / MAX (rows, 1));
  job->group_panels = CLAMP (G, 1, MAX_GROUP_PANELS);
  job->task_floats = (gsize) G * job->kc * PANEL_COLS + (gsize) rows * G * PANEL_COLS;
}

/* Sets up the flat gather (see ConvGemmJob) when the window allows it;
 * for a stride of 2, *phases holds x split by split_phases. */
static gboolean
plan_flat (GraftKernelContext *ctx, ConvGemmJob *job, GraftRtTensor **phases, GError **error)
{
  const GraftConvGemmArgs *a = job->args;
  const GraftWindow *w = a->w;
  gint64 KH = w->kernel[0], KW = w->kernel[1], H = w->in[0], W = w->in[1];
  gint64 s = w->stride[0];
  if (KH * KW > MAX_FLAT_TAPS || s != w->stride[1] || (s != 1 && s != 2) || w->out[1] != (W + s - 1) / s ||
      !graft_conv_gemm_available ())
    return TRUE;
  gint64 Hq = (H + s - 1) / s, Wq = w->out[1];
  if (s == 1)
    {
      job->flat_x = a->x;
      job->flat_plane = job->in_size;
    }
  else
    {
      *phases = graft_kernel_scratch (ctx, (gsize) a->N * a->C * 4 * Hq * Wq * sizeof (float), error);
      if (*phases == NULL)
        return FALSE;
      PhaseJob split = { a->x, (*phases)->data, H, W, Hq, Wq };
      graft_kernel_parallel_for (ctx, a->N * a->C, job->isa->split_phases, &split);
      job->flat_x = (*phases)->data;
      job->flat_plane = 4 * Hq * Wq;
    }
  /* tap offset t = k·d - pad splits into parity t mod s and shift floor (t / s) */
  gint64 row_parity[MAX_FLAT_TAPS], col_parity[MAX_FLAT_TAPS];
  for (gint64 ki = 0; ki < KH; ki++)
    {
      gint64 t = ki * w->dilation[0] - w->pad_begin[0];
      row_parity[ki] = ((t % s) + s) % s;
      job->row_shift[ki] = (t - row_parity[ki]) / s;
      job->row_limit[ki] = (H - row_parity[ki] + s - 1) / s;
    }
  for (gint64 kj = 0; kj < KW; kj++)
    {
      gint64 t = kj * w->dilation[1] - w->pad_begin[1];
      col_parity[kj] = ((t % s) + s) % s;
      job->col_shift[kj] = (t - col_parity[kj]) / s;
      job->col_limit[kj] = (W - col_parity[kj] + s - 1) / s;
    }
  for (gint64 ki = 0; ki < KH; ki++)
    for (gint64 kj = 0; kj < KW; kj++)
      job->tap_off[ki * KW + kj] = (s == 1 ? 0 : (row_parity[ki] * 2 + col_parity[kj]) * Hq * Wq) +
                                   job->row_shift[ki] * Wq + job->col_shift[kj];
  job->flat = TRUE;
  return TRUE;
}

/* A 1×1 window with unit stride and no padding (see PointwiseJob). The
 * larger side is spread over up to four tasks per thread (the pool hands
 * them out as threads come free, which evens out slivers of different
 * widths and a thread slowed by another process): the pixels, or the
 * filter panels when there are more output channels than pixels (small
 * maps: then each thread reads only its part of the filter). */
static gboolean pointwise (GraftKernelContext *ctx, const ConvGemmIsa *isa, const GraftPackedFilter *filter,
                           const GraftConvGemmArgs *args, GError **error);
static gboolean tiles (GraftKernelContext *ctx, const ConvGemmIsa *isa, const GraftPackedFilter *filter,
                       const GraftConvGemmArgs *args, gboolean direct, GError **error);

/* n floats from src to dst: planes of a few pixels (4×4 maps: 64 bytes;
 * 1×1, a squeeze-excitation's, with AVX2) inline, four floats at a time,
 * where a call to memcpy would cost more than the copy (some 1.5 % of
 * MobileNetV3's time at batch 2) */
static inline void
copy_plane (float *dst, const float *src, gint64 n)
{
  if (n == 1)
    {
      *dst = *src;
      return;
    }
  if (n % 4 != 0 || n > 32)
    {
      memcpy (dst, src, n * sizeof (float));
      return;
    }
  for (gint64 i = 0; i < n; i += 4)
    memcpy (dst + i, src + i, 4 * sizeof (float));
}

/* planes [N, C, hw] ⇄ rows [C, N·hw]: each channel's images side by side */
static void
images_side_by_side (const float *planes, float *rows, gint64 N, gint64 C, gint64 hw, gboolean back)
{
  for (gint64 n = 0; n < N; n++)
    for (gint64 c = 0; c < C; c++)
      {
        float *plane = (float *) planes + (n * C + c) * hw, *row = rows + (c * N + n) * hw;
        if (back)
          copy_plane (plane, row, hw);
        else
          copy_plane (row, plane, hw);
      }
}

/* Maps narrower than a sliver (RegNet's and MobileNet's last stages: 2×2
 * to 4×4 at batch 2) as one image of N·hw pixels: x [N, C, hw] copied to
 * [C, N·hw] (and the residual the same way), y computed as [M, N·hw] and
 * copied back, so that every pass over the filter serves all the images
 * in full-width slivers instead of one narrow sliver per image
 * (tv_regnet_y_400mf at batch 2, one thread, AVX2: 8.9-9.4 → 8.5 ms CPU
 * time per run). */
static gboolean
pointwise_side_by_side (GraftKernelContext *ctx, const ConvGemmIsa *isa, const GraftPackedFilter *filter,
                        const GraftConvGemmArgs *args, gint64 hw, GError **error)
{
  gint64 N = args->N, C = args->C, M = args->M, wide = N * hw;
  g_autoptr(GraftRtTensor) scratch =
    graft_kernel_scratch (ctx, (gsize) (C + M * (args->residual ? 2 : 1)) * wide * sizeof (float), error);
  if (scratch == NULL)
    return FALSE;
  float *x = scratch->data, *y = x + C * wide, *residual = args->residual ? y + M * wide : NULL;
  images_side_by_side (args->x, x, N, C, hw, FALSE);
  if (residual)
    images_side_by_side (args->residual, residual, N, M, hw, FALSE);
  GraftWindow one = { 2, { 1, wide }, { 1, wide }, { 1, 1 }, { 1, 1 }, { 1, 1 } };
  GraftConvGemmArgs wide_args = *args;
  wide_args.x = x;
  wide_args.y = y;
  wide_args.residual = residual;
  wide_args.N = 1;
  wide_args.w = &one;
  if (!pointwise (ctx, isa, filter, &wide_args, error))
    return FALSE;
  images_side_by_side (args->y, y, N, M, hw, TRUE);
  return TRUE;
}

static gboolean
pointwise (GraftKernelContext *ctx, const ConvGemmIsa *isa, const GraftPackedFilter *filter,
           const GraftConvGemmArgs *args, GError **error)
{
  if (isa->pointwise == NULL)
    return tiles (ctx, isa, filter, args, TRUE, error);
  gint64 hw = args->w->in[0] * args->w->in[1], threads = MAX (graft_kernel_get_n_threads (ctx), 1);
  /* (maps the pair kernels take are read in place, image by image) */
  if (args->N > 1 && hw < isa->pointwise_cols && !(graft_kernel_table ()->pointwise->pairs && hw <= 8))
    return pointwise_side_by_side (ctx, isa, filter, args, hw, error);
  PointwiseJob job = { filter, args };
  job.hw = hw;
  job.sliver_cols = isa->pointwise_cols;
  job.slivers_per_image = (hw + job.sliver_cols - 1) / job.sliver_cols;
  job.slivers = args->N * job.slivers_per_image;
  if (job.slivers == 0 || filter->Mg == 0)
    return TRUE;
  job.col_tasks = job.row_splits = 1;
  if (threads > 1 && filter->Mg > args->N * hw)
    job.row_splits = MAX (MIN (filter->panels, 4 * threads), 1);
  else if (threads > 1)
    job.col_tasks = MIN (job.slivers, 4 * threads);
  gint64 tasks = job.col_tasks * job.row_splits;
  for (job.g = 0; job.g < args->group; job.g++)
    graft_kernel_parallel_for (ctx, tasks, isa->pointwise, &job);
  return TRUE;
}

/* A 1×1 window without padding: each output pixel reads one input pixel. */
static gboolean
window_is_pointwise (const GraftWindow *w)
{
  return w->kernel[0] == 1 && w->kernel[1] == 1 && w->pad_begin[0] == 0 && w->pad_begin[1] == 0 &&
         w->pad_end[0] == 0 && w->pad_end[1] == 0;
}

/* w's output plane as one long row with unit strides: the window of a
 * pointwise product over input planes of exactly the output's pixels. */
static GraftWindow
flat_window (const GraftWindow *w)
{
  GraftWindow flat = *w;
  flat.in[0] = flat.out[0] = 1;
  flat.in[1] = flat.out[1] = w->out[0] * w->out[1];
  flat.stride[0] = flat.stride[1] = 1;
  return flat;
}

typedef struct {
  const float *x;
  float *sub;
  const GraftWindow *w;
} SubsampleJob;

/* Plane p of x, every stride-th row and column, into sub [OH, OW]. */
static void
subsample_plane (gint64 p, gpointer data)
{
  const SubsampleJob *job = data;
  const GraftWindow *w = job->w;
  gint64 OH = w->out[0], OW = w->out[1], sh = w->stride[0], sw = w->stride[1];
  const float *x = job->x + p * w->in[0] * w->in[1];
  float *sub = job->sub + p * OH * OW;
  for (gint64 oh = 0; oh < OH; oh++, sub += OW)
    {
      const float *row = x + oh * sh * w->in[1];
      for (gint64 ow = 0; ow < OW; ow++)
        sub[ow] = row[ow * sw];
    }
}

/* A 1×1 window with strides and no padding (ResNet's downsample layers):
 * the pixels it reads copied out, then the pointwise product of those
 * (see PointwiseJob) instead of the parity planes of the whole input and
 * a gather per panel: ResNet-18's three 0.53/0.44/0.37 → 0.45/0.36/0.27
 * ms (AVX-512, batch 2, one thread). */
static gboolean
strided_pointwise (GraftKernelContext *ctx, const ConvGemmIsa *isa, const GraftPackedFilter *filter,
                   const GraftConvGemmArgs *args, GError **error)
{
  const GraftWindow *w = args->w;
  gint64 pixels = w->out[0] * w->out[1];
  g_autoptr(GraftRtTensor) sub = graft_kernel_scratch (ctx, (gsize) MAX (args->N * args->C * pixels, 1) * sizeof (float),
                                                       error);
  if (sub == NULL)
    return FALSE;
  SubsampleJob job = { args->x, sub->data, w };
  graft_kernel_parallel_for (ctx, args->N * args->C, subsample_plane, &job);
  GraftWindow flat = flat_window (w);
  GraftConvGemmArgs flat_args = *args;
  flat_args.x = sub->data;
  flat_args.w = &flat;
  return pointwise (ctx, isa, filter, &flat_args, error);
}

/* The micro-kernels by SIMD level (kernel-table.h); NULL where
 * graft_conv_gemm_available () is FALSE. */
const GraftConvGemmIsa *const graft_conv_gemm_isas[GRAFT_SIMD_N_LEVELS] = {
  NULL,
#ifdef GRAFT_HAVE_X86_SIMD
  &isa_avx2, &isa_avx512,
#endif
};

#ifdef GRAFT_HAVE_X86_SIMD
const GraftConvGemmIsa *const graft_conv_gemm_bf16_isa = &isa_avx512_bf16;
#else
const GraftConvGemmIsa *const graft_conv_gemm_bf16_isa = NULL;
#endif

gboolean
graft_conv_gemm (GraftKernelContext *ctx, const GraftPackedFilter *filter, const GraftConvGemmArgs *args,
                 GError **error)
{
  const GraftWindow *w = args->w;
  if (!graft_conv_gemm_supports (w))
    return graft_kernel_unsupported (error, "the packed convolution handles 2-D windows up to %d columns wide",
                                     MAX_KERNEL_COLS);
  const ConvGemmIsa *isa = filter->bf16 ? graft_kernel_table ()->conv_gemm_bf16 : graft_kernel_table ()->conv_gemm;
  if (isa == NULL)
    return graft_kernel_unsupported (error, "the filter is packed in bf16 and this CPU or SIMD level has no bf16 tiles");
  /* A 1×1 window with unit stride and no padding reads each input plane
   * as one long row: one run per image in every panel row instead of one
   * per output row. */
  if (window_is_pointwise (w) && w->stride[0] == 1 && w->stride[1] == 1 && w->out[0] == w->in[0] &&
      w->out[1] == w->in[1])
    {
      GraftWindow flat = flat_window (w);
      GraftConvGemmArgs flat_args = *args;
      flat_args.w = &flat;
      return pointwise (ctx, isa, filter, &flat_args, error);
    }
  if (window_is_pointwise (w))
    return strided_pointwise (ctx, isa, filter, args, error);
  return tiles (ctx, isa, filter, args, FALSE, error);
}

/* The passes of tiles (conv_gemm_task) over every group; direct: the
 * window is a flat pointwise one (im2col (x) is x). */
static gboolean
tiles (GraftKernelContext *ctx, const ConvGemmIsa *isa, const GraftPackedFilter *filter,
       const GraftConvGemmArgs *args, gboolean direct, GError **error)
{
  const GraftWindow *w = args->w;
  ConvGemmJob job = { isa, filter, args };
  job.direct = direct;
  job.in_size = w->in[0] * w->in[1];
  job.out_size = w->out[0] * w->out[1];
  job.columns = args->N * job.out_size;
  if (job.columns == 0 || filter->Mg == 0)
    return TRUE;
  job.patches = w->stride[1] == w->kernel[1] && w->dilation[1] == 1;
  for (gint64 kj = 0; kj < w->kernel[1]; kj++)
    {
      graft_window_inside (w, 1, kj, &job.ow_lo[kj], &job.ow_hi[kj]);
      job.patches &= job.ow_lo[kj] == 0 && job.ow_hi[kj] == w->out[1];
    }
  if (isa->narrow && job.columns <= PANEL_COLS)
    return isa->narrow (ctx, &job, error);
  g_autoptr(GraftRtTensor) phases = NULL;
  if (!job.direct && !plan_flat (ctx, &job, &phases, error))
    return FALSE;
  plan_job (&job, MAX (graft_kernel_get_n_threads (ctx), 1));

  g_autoptr(GraftRtTensor) scratch = graft_kernel_scratch (ctx, job.tasks * job.task_floats * sizeof (float), error);
  if (scratch == NULL)
    return FALSE;
  job.scratch = scratch->data;
  for (job.g = 0; job.g < args->group; job.g++)
    graft_kernel_parallel_for (ctx, job.tasks, conv_gemm_task, &job);
  return TRUE;
}
