#include "runtime/kernels/qgemm-private.h"

/* ---- AMX-INT8: 32 × 32 blocks of 16 × 16 tiles ----
 *
 * tdpbsud multiplies a tile of signed bytes (16 rows of a, 64 k each) by
 * a tile of unsigned bytes laid out as 16 quads of k × 16 columns × 4
 * bytes — the panel layout above, 16 quads of it — and adds the 16 × 16
 * int32 sums into a third tile: 16384 products per instruction. Two
 * tiles of a's rows by two panels make four accumulator tiles, all eight
 * tile registers. a's rows must be padded to AMX_ROWS·2 and K to 64. */
#ifdef GRAFT_HAVE_X86_SIMD
#define GRAFT_TARGET_AMX __attribute__ ((target ("amx-tile,amx-int8,avx512f")))

typedef struct {
  guint8 palette, start_row, reserved[14];
  guint16 bytes_per_row[16];
  guint8 rows[16];
} __attribute__ ((packed)) AmxTileConfig;

/* The tile configuration is per thread: each task sets it, and releases
 * the tile state when done so that the kernel need not save it. */
/* Eight tiles of 16 rows × 64 bytes. A constant: GCC 12 does not see
 * ldtilecfg read its operand and drops stores to a local one. */
static const AmxTileConfig amx_config = {
  .palette = 1,
  .bytes_per_row = { 64, 64, 64, 64, 64, 64, 64, 64 },
  .rows = { 16, 16, 16, 16, 16, 16, 16, 16 },
};

GRAFT_TARGET_AMX void
_graft_qgemm_amx_begin (void)
{
  _tile_loadconfig (&amx_config);
}

GRAFT_TARGET_AMX void
_graft_qgemm_amx_end (void)
{
  _tile_release ();
}

/* c (32 × 32, ldc int32s apart) = rows 0–31 of a (lda bytes apart) ×
 * the two panels. */
GRAFT_TARGET_AMX GRAFT_HOT_LOOP void
_graft_qgemm_amx_block (const guint8 *a, gint64 lda, const guint8 *panel0, const guint8 *panel1, gint64 steps, gint32 *c,
                        gint64 ldc)
{
  _tile_zero (0);
  _tile_zero (1);
  _tile_zero (2);
  _tile_zero (3);
  for (gint64 s = 0; s < steps; s++)
    {
      _tile_loadd (4, a + s * AMX_DEPTH, lda);
      _tile_loadd (5, a + 16 * lda + s * AMX_DEPTH, lda);
      _tile_loadd (6, panel0 + s * AMX_DEPTH * TILE_COLS, TILE_COLS * 4);
      _tile_loadd (7, panel1 + s * AMX_DEPTH * TILE_COLS, TILE_COLS * 4);
      _tile_dpbsud (0, 4, 6);
      _tile_dpbsud (1, 4, 7);
      _tile_dpbsud (2, 5, 6);
      _tile_dpbsud (3, 5, 7);
    }
  gint64 stride = ldc * sizeof (gint32);
  _tile_stored (0, c, stride);
  _tile_stored (1, c + 16, stride);
  _tile_stored (2, c + 16 * ldc, stride);
  _tile_stored (3, c + 16 * ldc + 16, stride);
}
#endif

