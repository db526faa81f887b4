/* float32 GEMM against a packed B (see gemm-packed.h).
 *
 * B is packed into panels of GP_PANEL columns, each [K][GP_PANEL] with the
 * columns past N zero, so any K-slice of a panel is contiguous. A is
 * packed at each call into groups of a tile's rows, [K][rows], so that a
 * tile's broadcasts come from one line (but read where it is when C is one
 * tile wide: each row of A is then read once). A tile of C (6 × 16 in ymm
 * registers, 12 × 32 in zmm, 4 × 16 portable) is multiplied over a K
 * block of B that stays in L1 while the tile's rows of A stream from L2;
 * the rows of A (up to ROW_BLOCK of them) are reused from L2 for every
 * panel. Threads take blocks of panels (or of rows when
 * there are few panels) from the worker pool.
 * Measured on one AMD EPYC core (AVX2, thread CPU time): 76–85 GFLOPS at
 * 128 rows (768 × 768 to 768 × 3072), about what OpenBLAS 0.3.21's sgemm
 * gets there (78–85), and twice its rate from 2 to 12 rows, where OpenBLAS spends
 * most of its time packing B. Packing A once per call gained up to 10 %
 * at 128 rows; packing it per block of columns had lost more than that. */
#include "runtime/kernels/gemm-packed.h"
#include "runtime/kernels/simd-target.h"
#include "ir/file-bytes.h"

#include <string.h>
#include <stdlib.h>

#define GP_PANEL 16               /* columns per packed panel */
#define MAX_TILE_ROWS 12
#define MAX_TILE_COLS 32
#define ROW_BLOCK 240             /* rows of A per pass over B: 240 × 256 floats stay in L2 */
#define COL_BLOCK 128             /* columns of C per pass over A */

/* Packed B of at least this size, read once per product from memory,
 * is streamed in one pass by a single row tile (run_packed) */
#define WHOLE_DEPTH_MIN_BYTES ((gint64) 2 << 20)

struct _GraftPackedB {
  gint64 K, N, panels;
  gint64 lines;                   /* per panel: K, or for bf16 ⌈K / 2⌉ pairs of k */
  gboolean transposed;            /* packed from Bᵀ (the cache's key with the data pointer) */
  gboolean bf16;
  gboolean huge;                  /* data is panels_alloc's posix_memalign (free it with free) */
  gint finite;                    /* 0 not yet known, 1 every value finite, 2 not (see b_is_finite) */
  /* [panels][lines][GP_PANEL] floats, or for bf16 32-bit pairs: line p
   * holds each column's (B[2p], B[2p + 1]) as bfloat16, low half first,
   * as vdpbf16ps multiplies them (zero past K) */
  float *data;
};

/* float → bfloat16, rounded to nearest even, as vcvtneps2bf16 does (a NaN
 * stays a quiet NaN). */
static inline guint16
bf16_from_float (float f)
{
  guint32 u;
  memcpy (&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return (guint16) ((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1);
  return (guint16) (u >> 16);
}

static inline guint32
bf16_pair (float low, float high)
{
  return (guint32) bf16_from_float (low) | (guint32) bf16_from_float (high) << 16;
}

/* Packed B of this size and more is streamed from memory at each product
 * (a model's weights together are larger than L3), a TLB miss per 4 KB
 * page, each a nested page walk under a hypervisor: in 2 MB pages where
 * the kernel gives them (graft_pages_advise_huge), MLP-Mixer's channel
 * products (32 rows by 512 × 2048 and 2048 × 512) went from 0.83 to
 * 0.70 ms at AVX-512 and from 0.95 to 0.84 ms at AVX2 (one Zen 4 core). */
#define HUGE_PAGE_BYTES ((gsize) 2 << 20)

/* bytes of zeros for packed panels: posix_memalign's (*huge TRUE) from
 * HUGE_PAGE_BYTES on, else g_try_malloc0's; NULL when out of memory */
static gpointer
panels_alloc (gsize bytes, gboolean *huge)
{
  *huge = bytes >= HUGE_PAGE_BYTES;
  if (!*huge)
    return g_try_malloc0 (bytes);
  gpointer data = NULL;
  if (posix_memalign (&data, HUGE_PAGE_BYTES, bytes) != 0)
    return NULL;
  graft_pages_advise_huge (data, bytes);
  memset (data, 0, bytes);
  return data;
}

GraftPackedB *
graft_packed_b_new (const float *b, gint64 K, gint64 N, gint64 ldb, gboolean transposed)
{
  gint64 panels = (N + GP_PANEL - 1) / GP_PANEL;
  gboolean huge;
  float *data = panels_alloc ((gsize) MAX (panels * K * GP_PANEL, 1) * sizeof (float), &huge);
  if (data == NULL)
    return NULL;
  for (gint64 p = 0; p < panels; p++)
    {
      float *panel = data + p * K * GP_PANEL;
      gint64 n0 = p * GP_PANEL, cols = MIN (GP_PANEL, N - n0);
      if (transposed)
        for (gint64 j = 0; j < cols; j++)
          {
            const float *src = b + (n0 + j) * ldb;
            for (gint64 k = 0; k < K; k++)
              panel[k * GP_PANEL + j] = src[k];
          }
      else
        for (gint64 k = 0; k < K; k++)
          memcpy (panel + k * GP_PANEL, b + k * ldb + n0, cols * sizeof (float));
    }
  GraftPackedB *packed = g_new (GraftPackedB, 1);
  *packed = (GraftPackedB) { K, N, panels, K, transposed, FALSE, huge, 0, data };
  return packed;
}

#ifdef GRAFT_HAVE_X86_SIMD
/* dst[j] = the bf16 pair (low[j], high[j]) for j < 16 (high NULL: zeros),
 * with AVX512_BF16 and AVX512BW. */
static void pairs_16_bf16 (const float *low, const float *high, guint32 *dst);
#endif

/* B in bf16 pairs into data (room for ⌈K / 2⌉ · panels · GP_PANEL words). */
static void
pack_b_bf16 (const float *b, gint64 K, gint64 N, gint64 ldb, gboolean transposed, guint32 *data)
{
  gint64 panels = (N + GP_PANEL - 1) / GP_PANEL, lines = (K + 1) / 2;
  gboolean vector = graft_simd_cpu_has_avx512_bf16 ();
  for (gint64 p = 0; p < panels; p++)
    {
      guint32 *panel = data + p * lines * GP_PANEL;
      gint64 n0 = p * GP_PANEL, cols = MIN (GP_PANEL, N - n0);
      if (transposed)
        for (gint64 j = 0; j < cols; j++)
          {
            const float *src = b + (n0 + j) * ldb;
            for (gint64 line = 0; line < lines; line++)
              panel[line * GP_PANEL + j] = bf16_pair (src[2 * line], 2 * line + 1 < K ? src[2 * line + 1] : 0.0f);
          }
      else
        /* two rows of B at a time, read along */
        for (gint64 line = 0; line < lines; line++)
          {
            const float *low = b + 2 * line * ldb + n0, *high = 2 * line + 1 < K ? low + ldb : NULL;
            guint32 *dst = panel + line * GP_PANEL;
#ifdef GRAFT_HAVE_X86_SIMD
            if (vector && cols == GP_PANEL)
              {
                pairs_16_bf16 (low, high, dst);
                continue;
              }
#endif
            for (gint64 j = 0; j < cols; j++)
              dst[j] = bf16_pair (low[j], high ? high[j] : 0.0f);
            for (gint64 j = cols; j < GP_PANEL; j++)
              dst[j] = 0;
          }
    }
}

gsize
graft_packed_b_bf16_bytes (gint64 K, gint64 N)
{
  return (gsize) MAX ((N + GP_PANEL - 1) / GP_PANEL * ((K + 1) / 2) * GP_PANEL, 1) * sizeof (guint32);
}

GraftPackedB *
graft_packed_b_new_bf16 (const float *b, gint64 K, gint64 N, gint64 ldb, gboolean transposed)
{
  gboolean huge;
  guint32 *data = panels_alloc (graft_packed_b_bf16_bytes (K, N), &huge);
  if (data == NULL)
    return NULL;
  pack_b_bf16 (b, K, N, ldb, transposed, data);
  GraftPackedB *packed = g_new (GraftPackedB, 1);
  *packed = (GraftPackedB) { K, N, (N + GP_PANEL - 1) / GP_PANEL, (K + 1) / 2, transposed, TRUE, huge, 0,
                             (float *) data };
  return packed;
}

void
graft_packed_b_free (GraftPackedB *packed)
{
  if (packed == NULL)
    return;
  if (packed->huge)
    free (packed->data);
  else
    g_free (packed->data);
  g_free (packed);
}

typedef struct {
  const float *b;
  gint64 K, N, ldb;
  gboolean transposed, bf16;
} PackedBArgs;

/* the same constant read the other way round would be another matrix */
static gboolean
packed_b_fits (gconstpointer derived, gconstpointer args)
{
  const GraftPackedB *packed = derived;
  const PackedBArgs *a = args;
  return packed->K == a->K && packed->N == a->N && packed->transposed == a->transposed && packed->bf16 == a->bf16;
}

static gpointer
packed_b_make (gconstpointer args)
{
  const PackedBArgs *a = args;
  return (a->bf16 ? graft_packed_b_new_bf16 : graft_packed_b_new) (a->b, a->K, a->N, a->ldb, a->transposed);
}

/* graft_packed_gemm reads only the packed copy */
static const GraftDerivedKind packed_b_kind = { "packed matrix", (GDestroyNotify) graft_packed_b_free, FALSE, TRUE };

const GraftPackedB *
graft_packed_b_for (GraftKernelContext *ctx, const float *b, gint64 K, gint64 N, gint64 ldb, gboolean transposed,
                    GraftPackedB **owned)
{
  /* weights (a constant input) in bf16 when the run asks for it; what
   * the run computes (attention's operands) stays f32 */
  gboolean bf16 = graft_kernel_get_precision (ctx) == GRAFT_PRECISION_BF16 &&
                  graft_kernel_table ()->packed_gemm_bf16 != NULL && graft_kernel_input_data_is_constant (ctx, b);
  PackedBArgs args = { b, K, N, ldb, transposed, bf16 };
  return graft_kernel_derived (ctx, &packed_b_kind, b, packed_b_fits, packed_b_make, &args, (gpointer *) owned);
}

/* ---- micro-kernels ---- */

/* c [rows][cols] (+)= a [K][the ISA's rows] · b [K][cols], b packed
 * (panels pstride floats apart); prefetch_lines lines of GP_PANEL floats
 * from prefetch on are asked into L2 on the way (see prefetch_share) */
typedef void (*TileFunc) (gint64 K, const float *a, gint64 lda, const float *b, gint64 pstride, float *c,
                          gint64 ldc, gboolean accumulate, const float *bias, const float *prefetch,
                          gint64 prefetch_lines);

typedef struct _GraftPackedGemmIsa {
  int rows;                       /* of a full tile */
  int panels;                     /* per full tile: its width is panels · GP_PANEL */
  gint64 kc;                      /* depth of a K block: panels · GP_PANEL × kc floats of B stay in L1 */
  gint64 deep_kc;                 /* the depth instead for a B read from memory (see run_packed), or 0 */
  gint64 prefetch_row_tiles;      /* fewest row tiles that prefetch the next slice (see prefetch_share) */
  TileFunc full[MAX_TILE_ROWS];   /* [rows - 1] */
  TileFunc one_panel[MAX_TILE_ROWS]; /* [rows - 1]: the last panel alone when panels is 2 */
  /* the same reading A where it is, rows lda apart (not bf16: NULL) */
  TileFunc direct_full[MAX_TILE_ROWS];
  TileFunc direct_one_panel[MAX_TILE_ROWS];
  /* full's and direct_full's for a lone row tile, asking for the next
   * slice spread over their k steps (see prefetch_share), or NULL */
  TileFunc lone[MAX_TILE_ROWS];
  TileFunc direct_lone[MAX_TILE_ROWS];
} GemmIsa;

#define TILE_FUNC_AS(name, suffix, target, rows, vecs, direct) \
  static target GRAFT_HOT_LOOP __attribute__ ((noinline)) void \
  name (gint64 K, const float *a, gint64 lda, const float *b, gint64 pstride, float *c, gint64 ldc, \
        gboolean accumulate, const float *bias, const float *prefetch, gint64 prefetch_lines) \
  { \
    tile_body_##suffix (K, a, b, pstride, c, ldc, accumulate, bias, prefetch, prefetch_lines, rows, vecs, direct, \
                        lda); \
  }
#define TILE_FUNC(suffix, target, rows, vecs) \
  TILE_FUNC_AS (tile_##suffix##_##rows##_##vecs, suffix, target, rows, vecs, 0)
/* the same reading A unpacked */
#define TILE_FUNC_DIRECT(suffix, target, rows, vecs) \
  TILE_FUNC_AS (tile_##suffix##_d##rows##_##vecs, suffix, target, rows, vecs, 1)

/* portable: GCC's generic vectors of 4 (SSE2 on x86-64, NEON on arm64) */
typedef float GemmV4 __attribute__ ((vector_size (16)));
#define GP_V GemmV4
#define GP_LANES 4
#define GP_MAX_ROWS 4
#define GP_MAX_VECS 4
#define GP_SUFFIX portable
#include "runtime/kernels/gemm-packed-body.h"
#define NO_TARGET
#define TILE_FUNCS_PORTABLE(rows) TILE_FUNC (portable, NO_TARGET, rows, 4) \
  TILE_FUNC_DIRECT (portable, NO_TARGET, rows, 4)
TILE_FUNCS_PORTABLE (1)
TILE_FUNCS_PORTABLE (2)
TILE_FUNCS_PORTABLE (3)
TILE_FUNCS_PORTABLE (4)

static const GemmIsa isa_portable = {
  4, 1, 256, 0, 4,
  { tile_portable_1_4, tile_portable_2_4, tile_portable_3_4, tile_portable_4_4 },
  { NULL },
  { tile_portable_d1_4, tile_portable_d2_4, tile_portable_d3_4, tile_portable_d4_4 },
  { NULL },
};

#ifdef GRAFT_HAVE_X86_SIMD

/* AVX2 + FMA: a 6 × 16 tile is 12 ymm accumulators, two B vectors and a
 * broadcast; per k two loads and six broadcasts for twelve FMAs. */
typedef float GemmV8 __attribute__ ((vector_size (32)));
#define GP_V GemmV8
#define GP_LANES 8
#define GP_MAX_ROWS 6
#define GP_MAX_VECS 2
#define GP_SUFFIX avx2
#include "runtime/kernels/gemm-packed-body.h"
#define TILE_FUNCS_AVX2(rows) TILE_FUNC (avx2, GRAFT_TARGET_AVX2_FMA, rows, 2) \
  TILE_FUNC_DIRECT (avx2, GRAFT_TARGET_AVX2_FMA, rows, 2)
TILE_FUNCS_AVX2 (1)
TILE_FUNCS_AVX2 (2)
TILE_FUNCS_AVX2 (3)
TILE_FUNCS_AVX2 (4)
TILE_FUNCS_AVX2 (5)
TILE_FUNCS_AVX2 (6)

/* The same spreading its prefetches, for a lone row tile (M ≤ 6) */
#define GP_V GemmV8
#define GP_LANES 8
#define GP_MAX_ROWS 6
#define GP_MAX_VECS 2
#define GP_SUFFIX avx2_lone
#define GP_SPREAD_PREFETCH
#include "runtime/kernels/gemm-packed-body.h"
#define TILE_FUNCS_AVX2_LONE(rows) TILE_FUNC (avx2_lone, GRAFT_TARGET_AVX2_FMA, rows, 2) \
  TILE_FUNC_DIRECT (avx2_lone, GRAFT_TARGET_AVX2_FMA, rows, 2)
TILE_FUNCS_AVX2_LONE (1)
TILE_FUNCS_AVX2_LONE (2)
TILE_FUNCS_AVX2_LONE (3)
TILE_FUNCS_AVX2_LONE (4)
TILE_FUNCS_AVX2_LONE (5)
TILE_FUNCS_AVX2_LONE (6)

static const GemmIsa isa_avx2 = {
  6, 1, 256, 0, 4,
  { tile_avx2_1_2, tile_avx2_2_2, tile_avx2_3_2, tile_avx2_4_2, tile_avx2_5_2, tile_avx2_6_2 },
  { NULL },
  { tile_avx2_d1_2, tile_avx2_d2_2, tile_avx2_d3_2, tile_avx2_d4_2, tile_avx2_d5_2, tile_avx2_d6_2 },
  { NULL },
  { tile_avx2_lone_1_2, tile_avx2_lone_2_2, tile_avx2_lone_3_2, tile_avx2_lone_4_2, tile_avx2_lone_5_2,
    tile_avx2_lone_6_2 },
  { tile_avx2_lone_d1_2, tile_avx2_lone_d2_2, tile_avx2_lone_d3_2, tile_avx2_lone_d4_2, tile_avx2_lone_d5_2,
    tile_avx2_lone_d6_2 },
};

/* AVX-512F: a 12 × 32 tile (two panels) is 24 zmm accumulators; K blocks
 * of 192 keep the two panels' slice (24 KB) in L1. */
GRAFT_TARGET_AVX512_BEGIN
typedef float GemmV16 __attribute__ ((vector_size (64)));
#define GP_V GemmV16
#define GP_LANES 16
#define GP_MAX_ROWS 12
#define GP_MAX_VECS 2
#define GP_SUFFIX avx512
#define GP_SPREAD_PREFETCH
#include "runtime/kernels/gemm-packed-body.h"
#define TILE_FUNCS_AVX512(rows) TILE_FUNC (avx512, NO_TARGET, rows, 2) TILE_FUNC (avx512, NO_TARGET, rows, 1) \
  TILE_FUNC_DIRECT (avx512, NO_TARGET, rows, 2) TILE_FUNC_DIRECT (avx512, NO_TARGET, rows, 1)
TILE_FUNCS_AVX512 (1)
TILE_FUNCS_AVX512 (2)
TILE_FUNCS_AVX512 (3)
TILE_FUNCS_AVX512 (4)
TILE_FUNCS_AVX512 (5)
TILE_FUNCS_AVX512 (6)
TILE_FUNCS_AVX512 (7)
TILE_FUNCS_AVX512 (8)
TILE_FUNCS_AVX512 (9)
TILE_FUNCS_AVX512 (10)
TILE_FUNCS_AVX512 (11)
TILE_FUNCS_AVX512 (12)
GRAFT_TARGET_AVX512_END

static const GemmIsa isa_avx512 = {
  12, 2, 192, 1024, 1,
  { tile_avx512_1_2, tile_avx512_2_2, tile_avx512_3_2, tile_avx512_4_2, tile_avx512_5_2, tile_avx512_6_2,
    tile_avx512_7_2, tile_avx512_8_2, tile_avx512_9_2, tile_avx512_10_2, tile_avx512_11_2, tile_avx512_12_2 },
  { tile_avx512_1_1, tile_avx512_2_1, tile_avx512_3_1, tile_avx512_4_1, tile_avx512_5_1, tile_avx512_6_1,
    tile_avx512_7_1, tile_avx512_8_1, tile_avx512_9_1, tile_avx512_10_1, tile_avx512_11_1, tile_avx512_12_1 },
  { tile_avx512_d1_2, tile_avx512_d2_2, tile_avx512_d3_2, tile_avx512_d4_2, tile_avx512_d5_2, tile_avx512_d6_2,
    tile_avx512_d7_2, tile_avx512_d8_2, tile_avx512_d9_2, tile_avx512_d10_2, tile_avx512_d11_2, tile_avx512_d12_2 },
  { tile_avx512_d1_1, tile_avx512_d2_1, tile_avx512_d3_1, tile_avx512_d4_1, tile_avx512_d5_1, tile_avx512_d6_1,
    tile_avx512_d7_1, tile_avx512_d8_1, tile_avx512_d9_1, tile_avx512_d10_1, tile_avx512_d11_1, tile_avx512_d12_1 },
};

/* AVX512_BF16: the AVX-512 tile (12 × 32, 24 zmm accumulators) over lines
 * of bfloat16 pairs: each vdpbf16ps adds two k steps' products to 16
 * float sums, so a K block of 192 lines is 384 k deep in the same 24 KB
 * of L1. Written with intrinsics: GCC's generic vectors have no bfloat16
 * dot product. */
GRAFT_TARGET_AVX512_BF16_BEGIN
static inline __attribute__ ((always_inline)) void
tile_body_bf16 (gint64 lines, const float *a_pairs, const float *b_pairs, gint64 pstride, float *c, gint64 ldc,
                gboolean accumulate, const float *bias, const float *prefetch, gint64 prefetch_lines, const int rows,
                const int vecs, const int direct, gint64 lda)
{
  (void) direct;
  (void) lda;
  const int *a = (const int *) a_pairs;
  const int *b = (const int *) b_pairs;
  __m512 acc[12][2];
  for (int r = 0; r < rows; r++)
    for (int v = 0; v < vecs; v++)
      acc[r][v] = accumulate ? _mm512_loadu_ps (c + r * ldc + v * 16)
                  : bias ? _mm512_loadu_ps (bias + v * 16) : _mm512_setzero_ps ();
  gint64 groups = lines / 4;
  gint64 per_group = groups > 0 ? (prefetch_lines + groups - 1) / groups : 0;
  for (gint64 k = 0; k < lines; k++)
    {
      if (k % 4 == 0)
        for (gint64 j = 0; j < per_group && prefetch_lines > 0; j++, prefetch_lines--, prefetch += GP_PANEL)
          __builtin_prefetch (prefetch, 0, 2);
      __m512bh bv[2];
      for (int v = 0; v < vecs; v++)
        bv[v] = (__m512bh) _mm512_loadu_si512 (b + v * pstride);
      for (int r = 0; r < rows; r++)
        {
          __m512bh av = (__m512bh) _mm512_set1_epi32 (a[r]);
          for (int v = 0; v < vecs; v++)
            acc[r][v] = _mm512_dpbf16_ps (acc[r][v], av, bv[v]);
        }
      b += GP_PANEL;
      a += 12;
    }
  for (; prefetch_lines > 0; prefetch_lines--, prefetch += GP_PANEL)
    __builtin_prefetch (prefetch, 0, 2);
  for (int r = 0; r < rows; r++)
    for (int v = 0; v < vecs; v++)
      _mm512_storeu_ps (c + r * ldc + v * 16, acc[r][v]);
}
/* vcvtne2ps2bf16 rounds both rows to nearest even (NaN stays NaN) into
 * words 0–15 (low) and 16–31 (high); vpermw interleaves them into pairs */
static void
pairs_16_bf16 (const float *low, const float *high, guint32 *dst)
{
  static const short interleave[32] = { 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23,
                                        8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31 };
  __m512 lo = _mm512_loadu_ps (low), hi = high ? _mm512_loadu_ps (high) : _mm512_setzero_ps ();
  __m512i words = (__m512i) _mm512_cvtne2ps_pbh (hi, lo);
  _mm512_storeu_si512 (dst, _mm512_permutexvar_epi16 (_mm512_loadu_si512 (interleave), words));
}

#define TILE_FUNCS_BF16(rows) TILE_FUNC (bf16, NO_TARGET, rows, 2) TILE_FUNC (bf16, NO_TARGET, rows, 1)
TILE_FUNCS_BF16 (1)
TILE_FUNCS_BF16 (2)
TILE_FUNCS_BF16 (3)
TILE_FUNCS_BF16 (4)
TILE_FUNCS_BF16 (5)
TILE_FUNCS_BF16 (6)
TILE_FUNCS_BF16 (7)
TILE_FUNCS_BF16 (8)
TILE_FUNCS_BF16 (9)
TILE_FUNCS_BF16 (10)
TILE_FUNCS_BF16 (11)
TILE_FUNCS_BF16 (12)
GRAFT_TARGET_AVX512_BF16_END

static const GemmIsa isa_bf16 = {
  12, 2, 192, 0, 1,
  { tile_bf16_1_2, tile_bf16_2_2, tile_bf16_3_2, tile_bf16_4_2, tile_bf16_5_2, tile_bf16_6_2,
    tile_bf16_7_2, tile_bf16_8_2, tile_bf16_9_2, tile_bf16_10_2, tile_bf16_11_2, tile_bf16_12_2 },
  { tile_bf16_1_1, tile_bf16_2_1, tile_bf16_3_1, tile_bf16_4_1, tile_bf16_5_1, tile_bf16_6_1,
    tile_bf16_7_1, tile_bf16_8_1, tile_bf16_9_1, tile_bf16_10_1, tile_bf16_11_1, tile_bf16_12_1 },
};

const GraftPackedGemmIsa *const graft_packed_gemm_bf16_isa = &isa_bf16;

#else

const GraftPackedGemmIsa *const graft_packed_gemm_bf16_isa = NULL;

#endif

const GraftPackedGemmIsa *const graft_packed_gemm_isas[GRAFT_SIMD_N_LEVELS] = {
  &isa_portable,
#ifdef GRAFT_HAVE_X86_SIMD
  &isa_avx2, &isa_avx512,
#endif
};

/* ---- the driver ---- */

typedef struct {
  const GemmIsa *isa;
  const GraftPackedB *b;
  const float *a;                 /* packed: groups of the ISA's rows, each [K][rows]; or A itself */
  gint64 lda;                     /* 0: a is packed; else A's rows are lda apart (the direct tiles) */
  float *c;
  gint64 M, ldc, kc;
  gboolean accumulate;
  const float *bias;              /* [N] or NULL: where C's sums start when not accumulating */
  gint64 tiles, tiles_per_task, rows_per_task, col_tasks;
  gboolean streamed;              /* one row tile reads B's whole depth in one stream: no prefetches (see run_packed) */
} GemmJob;

/* One tile whose columns end before the panels do: through a full-width
 * buffer (and bias through another), so the kernel never touches C or
 * bias past N. */
static void
partial_tile (TileFunc func, gint64 K, const float *a, gint64 lda, const float *b, gint64 pstride, float *c,
              gint64 ldc, gboolean accumulate, const float *bias, const float *prefetch, gint64 prefetch_lines,
              gint64 rows, gint64 cols)
{
  float tile[MAX_TILE_ROWS * MAX_TILE_COLS] __attribute__ ((aligned (64)));
  float bias_cols[MAX_TILE_COLS] = { 0 };
  if (accumulate)
    for (gint64 r = 0; r < rows; r++)
      memcpy (tile + r * MAX_TILE_COLS, c + r * ldc, cols * sizeof (float));
  if (bias)
    memcpy (bias_cols, bias, cols * sizeof (float));
  func (K, a, lda, b, pstride, tile, MAX_TILE_COLS, accumulate, bias ? bias_cols : NULL, prefetch, prefetch_lines);
  for (gint64 r = 0; r < rows; r++)
    memcpy (c + r * ldc, tile + r * MAX_TILE_COLS, cols * sizeof (float));
}

/* A K-slice of packed B: lines [k0, k0 + depth) of `panels` panels
 * pstride floats apart, a line of GP_PANEL floats per k. */
typedef struct {
  const float *first;             /* the first panel's line k0 */
  gint64 pstride, panels, depth;
} BSlice;

static BSlice
b_slice (const GemmJob *job, gint64 tile, gint64 k0)
{
  const GraftPackedB *pb = job->b;
  gint64 p = tile * job->isa->panels, pstride = pb->lines * GP_PANEL;
  return (BSlice) { pb->data + p * pstride + k0 * GP_PANEL, pstride, MIN (job->isa->panels, pb->panels - p),
                    MIN (job->kc, pb->lines - k0) };
}

/* Weights are read from L3 or memory, each K-slice by its first row tile
 * at a line per few cycles: faster than the hardware prefetchers bring
 * lines in, and that tile stalls. So while the row tiles of one slice run,
 * each asks L2 for its share of the next slice's lines (L2, not L1: two
 * slices together would fill a 32 KB L1). Measured with the AVX2 kernels
 * on a Sapphire Rapids core, 128 rows, B out of L2: 768 × 3072 6.3–6.7 →
 * 5.7–5.8 ms; the BERT-like encoder at one thread 1.01–1.11 → 0.93–1.00 ×
 * onnxruntime's time (AVX2 for both). The AVX-512 tile's share is about
 * 35 lines (two panels × 192 k over 11 row tiles): asked for at once,
 * they held the line fill buffers that the tile's own loads of A then
 * waited for, so its micro-kernels spread them over their k steps, a
 * line per four (GP_SPREAD_PREFETCH): the encoder at one thread 71–79 →
 * 67–69 ms, 0.97–1.01 → 0.87–0.97 × onnxruntime's (same machine, AVX-512
 * for both). The AVX2 share, 12 lines, goes at once: spread, it was no
 * faster. With few row tiles a slice is read at once and the AVX2
 * prefetches would only queue up behind it; the AVX-512 ones, spread,
 * still bring the next slice in while the one tile works (isa's
 * prefetch_row_tiles): 32 × 512 by 512 × 2048 with B out of memory 0.88 →
 * 0.81 ms, 24 × 768 by 768 × 3072 1.48–1.53 → 1.33–1.39 ms on one Zen 4
 * core (an MLP-Mixer's channel products, a Swin's last stage). */

static inline const float *
prefetch_share (const BSlice *next, gint64 share, gint64 *line, gint64 *n_lines)
{
  gint64 end = MIN (next->panels * next->depth, *line + share);
  if (*line >= end)
    {
      *n_lines = 0;
      return NULL;
    }
  /* a panel's lines are contiguous: the run up to the panel's end goes to
   * the micro-kernel, to spread over its k steps; the rest, if the share
   * crosses into the next panel, is asked for at once */
  gint64 panel = *line / next->depth, run_end = MIN (end, (panel + 1) * next->depth);
  const float *run = next->first + panel * next->pstride + (*line % next->depth) * GP_PANEL;
  *n_lines = run_end - *line;
  /* panel by panel: a division per line took 40 % of a lone AVX-512
   * tile's time (2 rows by 440 × 1000, its next slice's second panel
   * asked for here, 192 lines) */
  for (*line = run_end; *line < end;)
    {
      gint64 p = *line / next->depth, stop = MIN (end, (p + 1) * next->depth);
      const float *at = next->first + p * next->pstride + (*line % next->depth) * GP_PANEL;
      for (; *line < stop; (*line)++, at += GP_PANEL)
        __builtin_prefetch (at, 0, 2);
    }
  return run;
}

/* Rows [m0, m1) × tiles [t0, t1) of C, by blocks of COL_BLOCK columns
 * whose rows of C (ROW_BLOCK × COL_BLOCK) stay in L2 across the K blocks. */
static void
gemm_rectangle (const GemmJob *job, gint64 m0, gint64 m1, gint64 t0, gint64 t1)
{
  const GemmIsa *isa = job->isa;
  const GraftPackedB *pb = job->b;
  /* K here counts lines of packed B (pairs of k for bf16) */
  gint64 K = pb->lines, block_tiles = MAX (1, COL_BLOCK / (isa->panels * GP_PANEL));
  for (gint64 mb = m0; mb < m1; mb += ROW_BLOCK)
    for (gint64 tb = t0; tb < t1; tb += block_tiles)
      {
        gint64 mb_end = MIN (m1, mb + ROW_BLOCK), tb_end = MIN (t1, tb + block_tiles);
        gint64 row_tiles = (mb_end - mb + isa->rows - 1) / isa->rows;
        /* a lone row tile reads each slice of B once, from memory: with
         * AVX2 too it asks for the next slice as it goes, spread over its
         * k steps (its whole share at once would hold up its own loads);
         * the lone tiles have one panel, as the ISA's full ones */
        gboolean lone = row_tiles == 1 && isa->lone[0] != NULL;
        /* two or three row tiles (AVX2: 7 to 18 rows) asked for no next
         * slice (their share would queue up behind the slice read at
         * once), and B then came from memory at the hardware
         * prefetchers' pace: the first row tile of each slice, which
         * reads it from memory, takes the lone tile's way and asks for
         * the whole next slice spread over its k steps; the others
         * read the slice from L1. One thread, AVX2, CPU ms: 12 rows by
         * 768 × 3072 0.82 → 0.55, 8 by 4096 × 4096 6.4 → 3.6 (1 MB B
         * kept in L2 between calls, 8 by 1024 × 256: 0.053 → 0.056);
         * timm_pvt_v2_b0's last-stage fc2 (8 by 1024 × 256, in the
         * model) 0.14 → 0.10. */
        gboolean lead = !lone && row_tiles < isa->prefetch_row_tiles && isa->lone[0] != NULL;
        for (gint64 k0 = 0; k0 < K; k0 += job->kc)
          {
            gboolean accumulate = job->accumulate || k0 > 0;
            const float *bias = accumulate ? NULL : job->bias;
            for (gint64 t = tb; t < tb_end; t++)
              {
                BSlice slice = b_slice (job, t, k0), next = { NULL };
                /* the slice multiplied next: the next tile's, the next K block's, the next block of tiles' */
                if (t + 1 < tb_end)
                  next = b_slice (job, t + 1, k0);
                else if (k0 + job->kc < K)
                  next = b_slice (job, tb, k0 + job->kc);
                else if (tb_end < t1)
                  next = b_slice (job, tb_end, 0);
                gint64 share = 0, line = 0;
                if (next.first != NULL && !job->streamed && (row_tiles >= isa->prefetch_row_tiles || lone))
                  share = (next.panels * next.depth + row_tiles - 1) / row_tiles;
                else if (next.first != NULL && !job->streamed && lead)
                  share = next.panels * next.depth;
                gint64 n0 = t * isa->panels * GP_PANEL;
                gboolean whole = slice.panels == isa->panels;
                gint64 width = slice.panels * GP_PANEL, cols = MIN (width, pb->N - n0);
                for (gint64 i = mb; i < mb_end; i += isa->rows)
                  {
                    gint64 rows = MIN (isa->rows, mb_end - i);
                    TileFunc func;
                    const float *a;
                    gboolean streams = lone || (lead && i == mb);
                    if (job->lda)
                      {
                        func = (streams ? isa->direct_lone : whole ? isa->direct_full : isa->direct_one_panel)[rows - 1];
                        a = job->a + i * job->lda + k0;
                      }
                    else
                      {
                        func = (streams ? isa->lone : whole ? isa->full : isa->one_panel)[rows - 1];
                        a = job->a + i * K + k0 * isa->rows;
                      }
                    float *c = job->c + i * job->ldc + n0;
                    gint64 prefetch_lines = 0;
                    const float *prefetch = prefetch_share (&next, share, &line, &prefetch_lines);
                    if (cols == width)
                      func (slice.depth, a, job->lda, slice.first, slice.pstride, c, job->ldc, accumulate,
                            bias ? bias + n0 : NULL, prefetch, prefetch_lines);
                    else
                      partial_tile (func, slice.depth, a, job->lda, slice.first, slice.pstride, c, job->ldc,
                                    accumulate, bias ? bias + n0 : NULL, prefetch, prefetch_lines, rows, cols);
                  }
              }
          }
      }
}

static void
gemm_task (gint64 index, gpointer data)
{
  const GemmJob *job = data;
  gint64 row_task = index / job->col_tasks, col_task = index % job->col_tasks;
  gint64 m0 = row_task * job->rows_per_task, t0 = col_task * job->tiles_per_task;
  gemm_rectangle (job, m0, MIN (job->M, m0 + job->rows_per_task), t0, MIN (job->tiles, t0 + job->tiles_per_task));
}

/* Products smaller than this run on one thread: waking the pool costs more. */
#define MIN_PARALLEL_FLOPS (1 << 17)

/* a [M, K] (rows lda apart) into groups of rows rows, each [K][rows], in
 * packed (room for pack_a_floats). */
static gsize
pack_a_floats (gint64 M, gint64 K, int rows)
{
  return (gsize) MAX ((M + rows - 1) / rows * rows * K, 1);
}

/* n ≤ rows rows of a into one group: each k's line written in one go
 * (the writes stride rows floats apart otherwise, a cache line every
 * other store: a tenth of a small T5's run went there). */
static inline __attribute__ ((always_inline)) void
pack_a_group (const float *a, gint64 n, gint64 K, gint64 lda, int rows, float *dst)
{
  for (gint64 k = 0; k < K; k++, dst += rows)
    for (gint64 r = 0; r < n; r++)
      dst[r] = a[r * lda + k];
}

static void
pack_a (const float *a, gint64 M, gint64 K, gint64 lda, int rows, float *packed)
{
  for (gint64 i = 0; i < M; i += rows)
    {
      gint64 n = MIN (rows, M - i);
      /* whole groups of the AVX-512 and AVX2 tiles with a constant row count */
      if (n == 12 && rows == 12)
        pack_a_group (a + i * lda, 12, K, lda, 12, packed + i * K);
      else if (n == 6 && rows == 6)
        pack_a_group (a + i * lda, 6, K, lda, 6, packed + i * K);
      else
        pack_a_group (a + i * lda, n, K, lda, rows, packed + i * K);
    }
}

/* The same for the bf16 tiles: line p of a group holds each row's
 * (a[2p], a[2p + 1]) as a pair of bfloat16 (packed_a_floats of ⌈K / 2⌉). */
static void
pack_a_bf16 (const float *a, gint64 M, gint64 K, gint64 lda, int rows, guint32 *packed)
{
  gint64 lines = (K + 1) / 2;
  for (gint64 i = 0; i < M; i++)
    {
      guint32 *dst = packed + (i / rows) * rows * lines + i % rows;
      const float *src = a + i * lda;
      for (gint64 p = 0; p < K / 2; p++)
        dst[p * rows] = bf16_pair (src[2 * p], src[2 * p + 1]);
      if (K % 2)
        dst[(lines - 1) * rows] = bf16_pair (src[K - 1], 0.0f);
    }
}

/* Rows of A that are all zero give C rows of just the bias (or leave C's
 * rows as they were): Swin pads its feature map with zero rows up to whole
 * windows, and projects them all to q, k and v — in torchvision's swin_t
 * at 64 × 64, 256 of 441 rows in the first stage, 47 of 49 in the last,
 * where that product took a fifth of the run. So when enough of A's rows
 * are zero, only the others are multiplied (gathered into a block of
 * their own) and the result scattered. Not when B has an infinity or a
 * NaN, which a zero times it would have made NaN. */
#define MIN_ZERO_ROWS_K 16        /* shallower products: the gather and scatter cost as much */
#define ZERO_ROWS_SHARE 8         /* at least one row in this many */

static inline gboolean
row_is_zero (const float *row, gint64 K)
{
  for (gint64 k = 0; k < K; k++)
    if (row[k] != 0.0f)
      return FALSE;
  return TRUE;
}

/* Every value of b is finite (worked out on the first call that asks, the
 * answer kept: b is immutable once packed, and two threads asking at once
 * store the same answer). */
static gboolean
b_is_finite (const GraftPackedB *b)
{
  gint known = g_atomic_int_get (&b->finite);
  if (known != 0)
    return known == 1;
  gsize words = (gsize) b->panels * b->lines * GP_PANEL;
  const guint32 *bits = (const guint32 *) b->data;
  /* f32: exponent all ones is an infinity or a NaN; a bf16 pair: either half's */
  guint32 mask = b->bf16 ? 0x7f807f80u : 0x7f800000u;
  gboolean finite = TRUE;
  for (gsize i = 0; i < words && finite; i += 1024)
    {
      guint32 any = 0;
      for (gsize j = i; j < MIN (words, i + 1024); j++)
        {
          guint32 e = bits[j] & mask;
          /* per half: set when that half's exponent is all ones */
          any |= b->bf16 ? (((e & 0x7f80u) == 0x7f80u) | ((e >> 16) == 0x7f80u)) : e == mask;
        }
      finite = any == 0;
    }
  g_atomic_int_set ((gint *) &b->finite, finite ? 1 : 2);
  return finite;
}

/* C = A · B (+ bias, or C +) with A's `zero` all-zero rows left out. */
static gboolean
gemm_without_zero_rows (GraftKernelContext *ctx, gint64 M, const float *a, gint64 lda, gint64 zero,
                        const GraftPackedB *b, float *c, gint64 ldc, gboolean accumulate, const float *bias)
{
  gint64 K = b->K, N = b->N, rows = M - zero;
  g_autoptr(GraftRtTensor) scratch = graft_kernel_scratch (ctx, (gsize) MAX (rows, 1) * (K + N) * sizeof (float)
                                                           + (gsize) M * sizeof (gint64), NULL);
  if (scratch == NULL)
    return FALSE;
  /* the row numbers first: after an odd count of floats they would be misaligned */
  gint64 *row_of = scratch->data;
  float *dense = (float *) (row_of + M), *cd = dense + rows * K;
  gint64 r = 0;
  for (gint64 i = 0; i < M; i++)
    if (!row_is_zero (a + i * lda, K))
      {
        row_of[r] = i;
        memcpy (dense + r * K, a + i * lda, K * sizeof (float));
        if (accumulate)
          memcpy (cd + r * N, c + i * ldc, N * sizeof (float));
        r++;
      }
  if (rows > 0 && !graft_packed_gemm (ctx, rows, dense, K, b, cd, N, accumulate, bias))
    return FALSE;
  r = 0;
  for (gint64 i = 0; i < M; i++)
    {
      float *row = c + i * ldc;
      if (r < rows && row_of[r] == i)
        memcpy (row, cd + r++ * N, N * sizeof (float));
      else if (accumulate)
        continue;
      else if (bias)
        memcpy (row, bias, N * sizeof (float));
      else
        memset (row, 0, N * sizeof (float));
    }
  return TRUE;
}

static void run_packed (GraftKernelContext *ctx, const GemmIsa *isa, const float *apack, gint64 lda, gint64 M,
                        const GraftPackedB *b, float *c, gint64 ldc, gboolean accumulate, const float *bias);

gboolean
graft_packed_gemm (GraftKernelContext *ctx, gint64 M, const float *a, gint64 lda, const GraftPackedB *b, float *c,
                   gint64 ldc, gboolean accumulate, const float *bias)
{
  g_return_val_if_fail (!(accumulate && bias), FALSE);
  if (M <= 0 || b->N <= 0)
    return TRUE;
  if (b->K == 0)
    {
      if (!accumulate)
        for (gint64 i = 0; i < M; i++)
          {
            if (bias)
              memcpy (c + i * ldc, bias, b->N * sizeof (float));
            else
              memset (c + i * ldc, 0, b->N * sizeof (float));
          }
      return TRUE;
    }
  const GemmIsa *isa = b->bf16 ? graft_kernel_table ()->packed_gemm_bf16 : graft_kernel_table ()->packed_gemm;
  if (isa == NULL)
    return FALSE;   /* packed in bf16 at a level that has no bf16 tiles (the cap changed) */
  if (M >= 2 * isa->rows && b->K >= MIN_ZERO_ROWS_K)
    {
      gint64 zero = 0;
      for (gint64 i = 0; i < M; i++)
        zero += row_is_zero (a + i * lda, b->K);
      if (zero * ZERO_ROWS_SHARE >= M && b_is_finite (b))
        return gemm_without_zero_rows (ctx, M, a, lda, zero, b, c, ldc, accumulate, bias);
    }
  /* one tile wide, a row of A is read once: packing it would be a second
   * pass over A (half the time of the token-mixing product of an MLP-Mixer,
   * 1024 × 256 by 256 × 16: 0.17 → 0.08 ms on one Zen 4 core) */
  if (!b->bf16 && b->panels <= isa->panels)
    {
      run_packed (ctx, isa, a, lda, M, b, c, ldc, accumulate, bias);
      return TRUE;
    }
  /* from the runtime's pool (ctx's; without one, a fresh buffer): one the
   * steps just used, so pack_a's writes find its lines in cache (a fresh
   * 1.5 MB of malloc's, for BERT's 3072 → 768 product, costs its first
   * call in a run 0.2–0.4 ms of read-for-ownership misses) */
  g_autoptr(GraftRtTensor) scratch = graft_kernel_scratch (ctx, pack_a_floats (M, b->lines, isa->rows) * sizeof (float),
                                                           NULL);
  if (scratch == NULL)
    return FALSE;
  float *apack = scratch->data;
  if (b->bf16)
    pack_a_bf16 (a, M, b->K, lda, isa->rows, (guint32 *) apack);
  else
    pack_a (a, M, b->K, lda, isa->rows, apack);
  run_packed (ctx, isa, apack, 0, M, b, c, ldc, accumulate, bias);
  return TRUE;
}

/* C = packed A · packed B over the worker pool. */
static void
run_packed (GraftKernelContext *ctx, const GemmIsa *isa, const float *apack, gint64 lda, gint64 M,
            const GraftPackedB *b, float *c, gint64 ldc, gboolean accumulate, const float *bias)
{
  GemmJob job = { isa, b, apack, lda, c, M, ldc, 0, accumulate, bias };
  /* K blocks of equal depth (in lines of packed B), none deeper than the
   * ISA's. For a B read from memory, the AVX-512 blocks are deeper
   * (deep_kc): B's slice is then read from L2, not L1, by the row tiles
   * after the first, which costs the double-pumped zmm FMAs of a Zen 4
   * core nothing, and a tile's sums go on for longer before C is stored
   * and loaded again. Measured on one Zen 4 core with B in 2 MB pages:
   * MLP-Mixer's channel products (32 rows by 512 × 2048, 2048 × 512)
   * 0.69–0.70 → 0.65–0.68 ms; 32 and 128 rows by 768 × 3072 and
   * 3072 × 768 5 % faster, 128 rows by 768 × 768 5 % (swin_t ts.onnx
   * 3 %). Not for a B that stays in L2 between runs: the small
   * transformers (hf_t5, hf_bert) lost 3–4 % with deep blocks. */
  gint64 kc = isa->kc;
  gboolean from_memory = b->panels * b->lines * GP_PANEL * (gint64) sizeof (float) >= WHOLE_DEPTH_MIN_BYTES;
  if (from_memory && isa->deep_kc > kc)
    kc = isa->deep_kc;
  gint64 k_blocks = (b->lines + kc - 1) / kc;
  /* One row tile reuses no slice of B: K blocks would only cut the
   * stream of B (panels contiguous one after another) into short runs
   * that the hardware prefetchers start over for. A classifier's weights
   * at batch 2 (MobileNetV3's 960 → 1280 → 1000, 10 MB) read in one
   * stream: the model 2.79 → 2.56 ms at AVX2, 2.25 → 2.15 ms at AVX-512
   * (one Zen 4 core). Only for a B that comes from memory: one that stays
   * in L2 between runs gained nothing and lost its K blocks' locality
   * (hf_t5 ts.onnx, its products a few hundred KB, 0.196 → 0.205 ms).
   * An ISA with lone tiles (AVX2) keeps the blocks: those ask for the
   * next slice spread over a block's k steps, and stream faster so
   * (MobileNetV3's classifier Gemms 0.235 against 0.25 ms each).
   * Streamed so, B in 2 MB pages, the hardware prefetchers keep up on
   * their own: the tile's prefetches of the next panels only held up its
   * loads. Without them, 2 rows by 960 × 1280 and 1280 × 960 at AVX-512
   * went 0.142 → 0.081 ms with B in L3, 0.25 → 0.22 ms from memory (AVX2's
   * lone tiles 0.092 and 0.235); 1 to 12 rows 10 to 50 % faster. */
  if (M <= isa->rows && isa->lone[0] == NULL && from_memory)
    {
      k_blocks = 1;
      job.streamed = TRUE;
    }
  job.kc = (b->lines + k_blocks - 1) / k_blocks;
  job.tiles = (b->panels + isa->panels - 1) / isa->panels;
  guint threads = graft_kernel_get_n_threads (ctx);
  if (threads <= 1 || M * b->N * b->K < MIN_PARALLEL_FLOPS)
    {
      gemm_rectangle (&job, 0, M, 0, job.tiles);
      return;
    }
  /* Blocks of panels when there are enough (each thread then reads only its
   * part of B), a few per thread so that a thread slowed by another process
   * leaves its share to the others; else blocks of rows. */
  gint64 col_tasks = MIN (job.tiles, 3 * (gint64) threads);
  gint64 row_tasks = 1;
  if (job.tiles < 2 * (gint64) threads)
    {
      gint64 row_tiles = (M + isa->rows - 1) / isa->rows;
      row_tasks = MAX (1, MIN (row_tiles, (3 * (gint64) threads + col_tasks - 1) / col_tasks));
    }
  job.tiles_per_task = (job.tiles + col_tasks - 1) / col_tasks;
  job.col_tasks = (job.tiles + job.tiles_per_task - 1) / job.tiles_per_task;
  gint64 row_tiles = (M + isa->rows - 1) / isa->rows;
  job.rows_per_task = (row_tiles + row_tasks - 1) / row_tasks * isa->rows;
  row_tasks = (M + job.rows_per_task - 1) / job.rows_per_task;
  graft_kernel_parallel_for (ctx, row_tasks * job.col_tasks, gemm_task, &job);
}
