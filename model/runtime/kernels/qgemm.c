/* The int8 GEMM's driver: packs a, splits the product into tasks of panel
 * groups and row blocks over the threads, and runs the SIMD level's
 * kernels (qgemm-private.h) on each tile. */
#include "runtime/kernels/qgemm-private.h"
#include "runtime/kernels/qlinear.h"

/* ---- tiles over the whole product, split by panels over threads ---- */

/* One 6-row tile over n_panels panels into out (ld apart): the
 * multi-panel kernel at once, or the one-panel kernel per panel. a's
 * rows are padded with zeros and a panel's missing columns are packed
 * as zeros, so a tile whose rows or last panel are not whole runs as any
 * other; only the part of its result that exists is used. */
static void
qgemm_tile_row (const QGemmJob *job, const guint8 *a, const guint8 *panels, gint64 panel_bytes, gint64 n_panels,
                gint64 steps, gint32 *out, gint64 ld)
{
  if (job->kind.tiles != NULL)
    job->kind.tiles (a, job->lda, panels, panel_bytes, n_panels, steps, out, ld);
  else
    for (gint64 p = 0; p < n_panels; p++)
      job->kind.tile (a, job->lda, panels + p * panel_bytes, steps, out + p * TILE_COLS, ld);
}

#define QGEMM_BUFFER_LD (QGEMM_MAX_PANELS * TILE_COLS)

/* Rows row_begin … row_end − 1 of a panel group by AMX blocks, each
 * handed to the epilogue (AMX is used with one only). */
static void
qgemm_amx_rows (const QGemmJob *job, const guint8 *panels, gint64 panel_bytes, gint64 n_panels, gint64 row_begin,
                gint64 row_end, gint64 j0, gint64 cols, gint32 *buffer)
{
#ifdef GRAFT_HAVE_X86_SIMD
  gint64 steps = job->lda / AMX_DEPTH;
  for (gint64 i0 = row_begin; i0 < row_end; i0 += AMX_ROWS)
    {
      const guint8 *a = job->a + i0 * job->lda;
      /* A group's odd last panel pairs with itself; its copy is not used. */
      for (gint64 p = 0; p < n_panels; p += 2)
        _graft_qgemm_amx_block (a, job->lda, panels + p * panel_bytes, panels + MIN (p + 1, n_panels - 1) * panel_bytes, steps,
                                buffer + p * TILE_COLS, QGEMM_BUFFER_LD);
      job->epilogue (job->epilogue_data, buffer, QGEMM_BUFFER_LD, i0, MIN (AMX_ROWS, job->M - i0), j0, cols);
    }
#else
  g_return_if_reached ();
#endif
}

static void
qgemm_task (gint64 task, gpointer data)
{
  const QGemmJob *job = data;
  gsize size = job->kind.size;
  gint64 steps = job->lda / job->kind.depth;
  gint64 panel_bytes = job->lda * TILE_COLS * size;
  g_autofree guint8 *panels = g_malloc (job->kind.max_panels * panel_bytes);
  gint32 buffer[AMX_ROWS * QGEMM_BUFFER_LD];
  gint64 col_task = task / job->row_blocks, group_cols = job->kind.max_panels * TILE_COLS;
  gint64 first = col_task * job->groups / job->col_tasks * group_cols;
  gint64 last = MIN (job->N, (col_task + 1) * job->groups / job->col_tasks * group_cols);
  gint64 row_begin = task % job->row_blocks * job->rows_per_block;
  gint64 row_end = MIN (job->M, row_begin + job->rows_per_block);
#ifdef GRAFT_HAVE_X86_SIMD
  if (job->kind.amx)
    _graft_qgemm_amx_begin ();
#endif
  for (gint64 j0 = first; j0 < last; j0 += job->kind.max_panels * TILE_COLS)
    {
      gint64 n_panels = MIN (job->kind.max_panels, (last - j0 + TILE_COLS - 1) / TILE_COLS);
      gint64 n_full = MIN (n_panels, (job->N - j0) / TILE_COLS);
      gint64 cols = MIN (n_panels * TILE_COLS, job->N - j0);
      if (job->source)
        job->source (job->source_data, j0, n_panels, panels, panel_bytes);
      else
        for (gint64 p = 0; p < n_panels; p++)
          job->kind.pack (job->b, job->N, job->K, j0 + p * TILE_COLS, panels + p * panel_bytes);
      if (job->kind.amx)
        {
          qgemm_amx_rows (job, panels, panel_bytes, n_panels, row_begin, row_end, j0, cols, buffer);
          continue;
        }
      for (gint64 i0 = row_begin; i0 < row_end; i0 += TILE_ROWS)
        {
          gint64 rows = MIN (TILE_ROWS, job->M - i0);
          const guint8 *a = job->a + i0 * job->lda * size;
          if (job->epilogue)
            {
              qgemm_tile_row (job, a, panels, panel_bytes, n_panels, steps, buffer, QGEMM_BUFFER_LD);
              job->epilogue (job->epilogue_data, buffer, QGEMM_BUFFER_LD, i0, rows, j0, cols);
              continue;
            }
          gint64 direct = rows == TILE_ROWS ? n_full : 0;
          if (direct > 0)
            qgemm_tile_row (job, a, panels, panel_bytes, direct, steps, job->c + i0 * job->ldc + j0, job->ldc);
          if (direct == n_panels)
            continue;
          qgemm_tile_row (job, a, panels + direct * panel_bytes, panel_bytes, n_panels - direct, steps, buffer,
                          QGEMM_BUFFER_LD);
          for (gint64 i = 0; i < rows; i++)
            memcpy (job->c + (i0 + i) * job->ldc + j0 + direct * TILE_COLS, buffer + i * QGEMM_BUFFER_LD,
                    sizeof (gint32) * (cols - direct * TILE_COLS));
        }
    }
#ifdef GRAFT_HAVE_X86_SIMD
  if (job->kind.amx)
    _graft_qgemm_amx_end ();
#endif
}

/* a with its rows padded to a multiple of TILE_ROWS and K to a multiple
 * of depth (lda) with zeros, as the tiles read it. g_free the result. */
static void *
qgemm_pack_a (gint64 M, gint64 K, const void *a, gsize size, gint64 depth, gint64 *lda)
{
  *lda = (K + depth - 1) / depth * depth;
  gint64 rows = (M + TILE_ROWS - 1) / TILE_ROWS * TILE_ROWS;
  guint8 *packed = g_malloc0 (MAX (rows * *lda * size, 1));
  for (gint64 i = 0; i < M; i++)
    memcpy (packed + i * *lda * size, (const guint8 *) a + i * K * size, size * K);
  return packed;
}

QGemmKind
_graft_qgemm_kind_s16 (void)
{
#ifdef GRAFT_HAVE_X86_SIMD
  if (graft_kernel_table ()->vnni)
    return (QGemmKind) { NULL, _graft_qgemm_pack_b_panel_avx2, sizeof (gint16), 2, _graft_qgemm_tiles_avx512_vnni, QGEMM_MAX_PANELS,
                         TILE_ROWS };
  if (graft_kernel_table ()->avx2)
    return (QGemmKind) { _graft_qgemm_tile_avx2, _graft_qgemm_pack_b_panel_avx2, sizeof (gint16), 2, NULL, QGEMM_MAX_PANELS, TILE_ROWS };
#endif
  return (QGemmKind) { _graft_qgemm_tile_portable, _graft_qgemm_pack_b_panel_portable, sizeof (gint16), 2, NULL, 1, TILE_ROWS };
}

QGemmKind
_graft_qgemm_kind_u8s8 (void)
{
#ifdef GRAFT_HAVE_X86_SIMD
  if (graft_kernel_table ()->vnni)
    return (QGemmKind) { NULL, _graft_qgemm_pack_b_panel_u8_avx2, 1, 4, _graft_qgemm_u8s8_tiles_avx512_vnni, QGEMM_MAX_PANELS,
                         TILE_ROWS };
  if (graft_kernel_table ()->avx2)
    return (QGemmKind) { _graft_qgemm_u8s8_tile_avx2, _graft_qgemm_pack_b_panel_u8_avx2, 1, 4, NULL, QGEMM_MAX_PANELS, TILE_ROWS };
#endif
  return (QGemmKind) { _graft_qgemm_u8s8_tile_portable, _graft_qgemm_pack_b_panel_u8_portable, 1, 4, NULL, 1, TILE_ROWS };
}

/* Runs job (its M, N, a, b or source, c or epilogue set) over the context's threads. */
void
_graft_qgemm_run (GraftKernelContext *ctx, QGemmJob *job)
{
  if (job->M <= 0 || job->N <= 0)
    return;
  /* AMX blocks go to an epilogue, from panels a source packs to 64-deep K. */
  g_return_if_fail (!job->kind.amx || (job->source != NULL && job->epilogue != NULL && job->lda % AMX_DEPTH == 0));
  QGemmKind kind = job->kind;
  gint64 panels = (job->N + TILE_COLS - 1) / TILE_COLS;
  gint64 threads = ctx ? graft_kernel_get_n_threads (ctx) : 1;
  /* A group's panels are packed once and every row of a read once per
   * group, whichever task takes it, so tasks can be as small as one
   * group: several per thread even out uneven groups (the last is often
   * a single panel) and a shared machine. With fewer groups than that,
   * the rows are split too (each block of rows packs the group again,
   * cheap beside a deep late layer's product). */
  job->groups = (panels + kind.max_panels - 1) / kind.max_panels;
  job->col_tasks = MIN (job->groups, threads * 8);
  job->row_blocks = 1;
  gint64 row_tiles = (job->M + kind.rows - 1) / kind.rows;
  if (threads > 1 && job->col_tasks < threads * 2)
    job->row_blocks = MIN ((threads * 2 + job->col_tasks - 1) / job->col_tasks, MAX (row_tiles * kind.rows / 48, 1));
  job->rows_per_block = (row_tiles + job->row_blocks - 1) / job->row_blocks * kind.rows;
  job->row_blocks = (job->M + job->rows_per_block - 1) / job->rows_per_block;
  gint64 tasks = job->col_tasks * job->row_blocks;
  if (ctx && threads > 1 && tasks > 1)
    graft_kernel_parallel_for (ctx, tasks, qgemm_task, job);
  else
    for (gint64 t = 0; t < tasks; t++)
      qgemm_task (t, job);
}

static void
qgemm_packed (GraftKernelContext *ctx, QGemmKind kind, gint64 M, gint64 N, gint64 K, const void *packed, gint64 lda,
              const void *b, gint32 *c, gint64 ldc)
{
  QGemmJob job = { .a = packed, .b = b, .c = c, .M = M, .N = N, .K = K, .lda = lda, .ldc = ldc, .kind = kind };
  _graft_qgemm_run (ctx, &job);
}

void
graft_qgemm_u8s8 (GraftKernelContext *ctx, gint64 M, gint64 N, gint64 K, const gint8 *a, const guint8 *b,
                  gint32 *c, gint64 ldc)
{
  gint64 lda;
  g_autofree void *packed = qgemm_pack_a (M, K, a, 1, 4, &lda);
  qgemm_packed (ctx, _graft_qgemm_kind_u8s8 (), M, N, K, packed, lda, b, c, ldc);
}

void
graft_qgemm_s16 (GraftKernelContext *ctx, gint64 M, gint64 N, gint64 K, const gint16 *a, const gint16 *b,
                 gint32 *c, gint64 ldc)
{
  gint64 lda;
  g_autofree void *packed = qgemm_pack_a (M, K, a, sizeof (gint16), 2, &lda);
  qgemm_packed (ctx, _graft_qgemm_kind_s16 (), M, N, K, packed, lda, b, c, ldc);
}

