/* The int8 GEMM between its driver (qgemm.c), its kernels, one file per
 * instruction set (qgemm-portable.c, qgemm-avx2.c, qgemm-avx512-vnni.c,
 * qgemm-amx.c), and the operators on it (qlinear.c): the tile geometry,
 * the panel layouts, the job a driver runs. Which kernels a job takes is
 * the SIMD level's (kernel-table.h), chosen by _graft_qgemm_kind_*. Not
 * for use outside these files. */
#pragma once

#include <string.h>

#include "runtime/op.h"
#include "runtime/kernels/simd-target.h"

G_BEGIN_DECLS

/* Rows and columns of one register tile: 6 rows × 16 int32 columns keep
 * 12 accumulators, 2 operand rows and a broadcast in 16 ymm registers. */
#define TILE_ROWS 6
#define TILE_COLS 16
/* Panels a wide kernel (AVX-512 VNNI) takes at once, and that a task
 * packs together for the one-panel kernels (AVX2): each tile of a's rows
 * then serves four panels from L2 before the next is read. One panel at
 * a time read all of a once per 16 columns — ResNet-18's layer4 (4.7 MB
 * of int16 weights) from L3 seven times a layer: QOperator ResNet-18 on
 * the AVX2 view 46.7 → 44.9 ms at one thread, 26.6 → 24.9 at two. */
#define QGEMM_MAX_PANELS 4
/* AMX-INT8 blocks (qgemm-amx.c): a's rows padded to AMX_ROWS, K to AMX_DEPTH */
#define AMX_ROWS 32
#define AMX_DEPTH 64

typedef void (*QGemmTile) (const void *a, gint64 lda, const void *panel, gint64 steps, gint32 *c, gint64 ldc);
typedef void (*QGemmPack) (const void *b, gint64 N, gint64 K, gint64 j0, void *panel);

/* Full tiles of n_panels panels (panel_bytes apart) at once. */
typedef void (*QGemmTiles) (const void *a, gint64 lda, const void *panels, gint64 panel_bytes, int n_panels,
                            gint64 steps, gint32 *c, gint64 ldc);

/* Packs n_panels panels of b's columns j0, j0 + TILE_COLS, … (panel_bytes
 * apart) from wherever b's values come from: the implicit GEMM of a
 * convolution reads them from its input rather than from a matrix. */
typedef void (*QGemmSource) (gconstpointer source, gint64 j0, gint64 n_panels, guint8 *panels, gint64 panel_bytes);


typedef struct {
  QGemmTile tile;           /* one panel, NULL with tiles */
  QGemmPack pack;
  gsize size;               /* bytes per operand value */
  gint64 depth;             /* k values per tile step: 2 (int16 pairs) or 4 (byte quads) */
  QGemmTiles tiles;         /* up to max_panels panels at once, or NULL */
  gint64 max_panels;        /* 1 without tiles */
  gint64 rows;              /* rows of a per tile: TILE_ROWS, or AMX_ROWS with AMX */
  gboolean amx;             /* AMX tiles (qgemm_amx_rows) instead of tile/tiles */
} QGemmKind;

/* Takes the sums of rows i0 … i0 + rows − 1 and columns j0 … j0 + cols − 1
 * (tile[i · ld + j]) while they are in the cache: a convolution
 * requantizes them straight into its output. */
typedef void (*QGemmEpilogue) (gconstpointer data, const gint32 *tile, gint64 ld, gint64 i0, gint64 rows, gint64 j0,
                               gint64 cols);

typedef struct {
  const guint8 *a;          /* packed: rows padded to TILE_ROWS, K to `depth` */
  const void *b;            /* K × N, or NULL with a source */
  QGemmSource source;
  gconstpointer source_data;
  QGemmEpilogue epilogue;   /* or NULL: the sums go to c */
  gconstpointer epilogue_data;
  gint32 *c;
  gint64 M, N, K, lda, ldc;
  /* Tasks: column tasks (contiguous runs of whole panel groups, as even
   * as groups go) × row blocks (of rows_per_block rows, a multiple of
   * the kind's tile rows) when there are too few columns to go round. */
  gint64 groups, col_tasks, row_blocks, rows_per_block;
  QGemmKind kind;
} QGemmJob;

/* Runs job (its M, N, a, b or source, c or epilogue set) over the context's threads. */
void _graft_qgemm_run (GraftKernelContext *ctx, QGemmJob *job);
/* The kernels of the SIMD level for int16 pairs and for u8 × s8 quads. */
QGemmKind _graft_qgemm_kind_s16 (void);
QGemmKind _graft_qgemm_kind_u8s8 (void);

/* qgemm-portable.c */
void _graft_qgemm_pack_b_panel_portable (const void *b, gint64 N, gint64 K, gint64 j0, void *panel);
void _graft_qgemm_tile_portable (const void *a, gint64 lda, const void *panel, gint64 pairs, gint32 *c, gint64 ldc);
void _graft_qgemm_pack_b_panel_u8_portable (const void *b, gint64 N, gint64 K, gint64 j0, void *panel);
void _graft_qgemm_u8s8_tile_portable (const void *a, gint64 lda, const void *panel, gint64 quads, gint32 *c,
                                      gint64 ldc);

#ifdef GRAFT_HAVE_X86_SIMD
/* qgemm-avx2.c */
void _graft_qgemm_pack_b_panel_avx2 (const void *b, gint64 N, gint64 K, gint64 j0, void *panel);
void _graft_qgemm_tile_avx2 (const void *a, gint64 lda, const void *panel, gint64 pairs, gint32 *c, gint64 ldc);
void _graft_qgemm_pack_b_panel_u8_avx2 (const void *b, gint64 N, gint64 K, gint64 j0, void *panel);
void _graft_qgemm_u8s8_tile_avx2 (const void *a, gint64 lda, const void *panel, gint64 quads, gint32 *c, gint64 ldc);

/* qgemm-avx512-vnni.c: n_panels full panels (panel_bytes apart) of one tile of a */
void _graft_qgemm_tiles_avx512_vnni (const void *a, gint64 lda, const void *panels, gint64 panel_bytes, int n_panels,
                                     gint64 steps, gint32 *c, gint64 ldc);
void _graft_qgemm_u8s8_tiles_avx512_vnni (const void *a, gint64 lda, const void *panels, gint64 panel_bytes,
                                          int n_panels, gint64 steps, gint32 *c, gint64 ldc);

/* qgemm-amx.c: a task's tile configuration, and one 32 × 32 block */
void _graft_qgemm_amx_begin (void);
void _graft_qgemm_amx_end (void);
void _graft_qgemm_amx_block (const guint8 *a, gint64 lda, const guint8 *panel0, const guint8 *panel1, gint64 steps,
                             gint32 *c, gint64 ldc);

/* One quad of a panel from four rows of its 16 columns: bytes of rows
 * 0/1 and 2/3 paired, then the pairs paired into one 32-bit lane per
 * column. */
static inline __attribute__ ((always_inline)) GRAFT_TARGET_AVX2_FMA void
_graft_qgemm_store_quad_u8 (guint8 *dst, __m128i r0, __m128i r1, __m128i r2, __m128i r3)
{
  __m128i p01lo = _mm_unpacklo_epi8 (r0, r1), p01hi = _mm_unpackhi_epi8 (r0, r1);
  __m128i p23lo = _mm_unpacklo_epi8 (r2, r3), p23hi = _mm_unpackhi_epi8 (r2, r3);
  _mm_storeu_si128 ((__m128i *) dst, _mm_unpacklo_epi16 (p01lo, p23lo));
  _mm_storeu_si128 ((__m128i *) (dst + 16), _mm_unpackhi_epi16 (p01lo, p23lo));
  _mm_storeu_si128 ((__m128i *) (dst + 32), _mm_unpacklo_epi16 (p01hi, p23hi));
  _mm_storeu_si128 ((__m128i *) (dst + 48), _mm_unpackhi_epi16 (p01hi, p23hi));
}
#endif

G_END_DECLS
