#include "runtime/worker-pool.h"

/* A job is published by bumping `ticket`, a 64-bit word holding the
 * generation (high half) and the next index to take (low half). A worker
 * takes an index with a compare-and-swap that also checks the generation,
 * so a worker that wakes late can never take an index of a later job, and
 * the caller only waits for the items to be done, never for a sleeping
 * worker to be scheduled just to find nothing left. Workers spin briefly
 * for the next job (kernels issue several loops per node), then sleep. */

#define SPIN_ROUNDS 1000   /* ~35 µs of pause */
#define CHUNK_MAX ((gint64) G_MAXINT32)

struct _GraftWorkerPool {
  guint n_threads;
  GThread **threads;
  GMutex mutex;
  GCond wake;
  GCond done_cond;
  gboolean quit;
  gboolean busy;

  /* the current job: written under mutex before ticket is published */
  GraftWorkerFunc func;
  gpointer data;
  gint64 base, n;
  guint64 ticket;       /* atomic: generation << 32 | next index */
  gint64 done;          /* atomic: items finished in this generation */
};

static inline void
cpu_relax (void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause ();
#endif
}

/* Takes the next index of generation gen (below n). */
static gboolean
take_index (GraftWorkerPool *pool, guint32 gen, gint64 n, gint64 *index)
{
  guint64 t = __atomic_load_n (&pool->ticket, __ATOMIC_ACQUIRE);
  for (;;)
    {
      if ((guint32) (t >> 32) != gen || (gint64) (t & 0xffffffffu) >= n)
        return FALSE;
      if (__atomic_compare_exchange_n (&pool->ticket, &t, t + 1, TRUE, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        {
          *index = (gint64) (t & 0xffffffffu);
          return TRUE;
        }
    }
}

static void
finish_items (GraftWorkerPool *pool, gint64 count, gint64 n)
{
  if (count == 0)
    return;
  if (__atomic_add_fetch (&pool->done, count, __ATOMIC_ACQ_REL) == n)
    {
      g_mutex_lock (&pool->mutex);
      g_cond_signal (&pool->done_cond);
      g_mutex_unlock (&pool->mutex);
    }
}

static gpointer
worker_main (gpointer user_data)
{
  GraftWorkerPool *pool = user_data;
  guint32 seen = 0;

  for (;;)
    {
      /* a new generation, or quit */
      guint32 gen = seen;
      for (int i = 0; i < SPIN_ROUNDS; i++)
        {
          gen = (guint32) (__atomic_load_n (&pool->ticket, __ATOMIC_ACQUIRE) >> 32);
          if (gen != seen || __atomic_load_n (&pool->quit, __ATOMIC_RELAXED))
            break;
          cpu_relax ();
        }
      g_mutex_lock (&pool->mutex);
      while (!pool->quit && (gen = (guint32) (__atomic_load_n (&pool->ticket, __ATOMIC_ACQUIRE) >> 32)) == seen)
        g_cond_wait (&pool->wake, &pool->mutex);
      if (pool->quit)
        {
          g_mutex_unlock (&pool->mutex);
          return NULL;
        }
      /* the job of generation gen; if the caller has moved on already, the
       * ticket check in take_index fails and nothing runs */
      GraftWorkerFunc func = pool->func;
      gpointer data = pool->data;
      gint64 base = pool->base, n = pool->n;
      gen = (guint32) (__atomic_load_n (&pool->ticket, __ATOMIC_ACQUIRE) >> 32);
      g_mutex_unlock (&pool->mutex);
      seen = gen;

      gint64 index, count = 0;
      while (take_index (pool, gen, n, &index))
        {
          func (base + index, data);
          count++;
        }
      finish_items (pool, count, n);
    }
}

GraftWorkerPool *
graft_worker_pool_new (guint n_threads)
{
  GraftWorkerPool *pool = g_new0 (GraftWorkerPool, 1);
  pool->n_threads = MAX (n_threads, 1);
  g_mutex_init (&pool->mutex);
  g_cond_init (&pool->wake);
  g_cond_init (&pool->done_cond);
  pool->threads = g_new0 (GThread *, pool->n_threads);
  for (guint i = 1; i < pool->n_threads; i++)
    pool->threads[i] = g_thread_new ("graft-worker", worker_main, pool);
  return pool;
}

void
graft_worker_pool_free (GraftWorkerPool *pool)
{
  if (pool == NULL)
    return;
  g_mutex_lock (&pool->mutex);
  __atomic_store_n (&pool->quit, TRUE, __ATOMIC_RELAXED);
  g_cond_broadcast (&pool->wake);
  g_mutex_unlock (&pool->mutex);
  for (guint i = 1; i < pool->n_threads; i++)
    g_thread_join (pool->threads[i]);
  g_free (pool->threads);
  g_mutex_clear (&pool->mutex);
  g_cond_clear (&pool->wake);
  g_cond_clear (&pool->done_cond);
  g_free (pool);
}

guint
graft_worker_pool_get_n_threads (GraftWorkerPool *pool)
{
  return pool ? pool->n_threads : 1;
}

static void
run_chunk (GraftWorkerPool *pool, gint64 base, gint64 n, GraftWorkerFunc func, gpointer data)
{
  g_mutex_lock (&pool->mutex);
  pool->func = func;
  pool->data = data;
  pool->base = base;
  pool->n = n;
  __atomic_store_n (&pool->done, 0, __ATOMIC_RELAXED);
  guint32 gen = (guint32) (__atomic_load_n (&pool->ticket, __ATOMIC_RELAXED) >> 32) + 1;
  __atomic_store_n (&pool->ticket, (guint64) gen << 32, __ATOMIC_RELEASE);
  g_cond_broadcast (&pool->wake);
  g_mutex_unlock (&pool->mutex);

  gint64 index, count = 0;
  while (take_index (pool, gen, n, &index))
    {
      func (base + index, data);
      count++;
    }
  if (__atomic_add_fetch (&pool->done, count, __ATOMIC_ACQ_REL) == n)
    return;
  /* the last items are running on other threads: short spin, then sleep */
  for (int i = 0; i < SPIN_ROUNDS; i++)
    {
      if (__atomic_load_n (&pool->done, __ATOMIC_ACQUIRE) == n)
        return;
      cpu_relax ();
    }
  g_mutex_lock (&pool->mutex);
  while (__atomic_load_n (&pool->done, __ATOMIC_ACQUIRE) < n)
    g_cond_wait (&pool->done_cond, &pool->mutex);
  g_mutex_unlock (&pool->mutex);
}

void
graft_worker_pool_run (GraftWorkerPool *pool, gint64 n, GraftWorkerFunc func, gpointer data)
{
  if (pool == NULL || pool->n_threads == 1 || n <= 1 || __atomic_load_n (&pool->busy, __ATOMIC_RELAXED))
    {
      for (gint64 i = 0; i < n; i++)
        func (i, data);
      return;
    }
  __atomic_store_n (&pool->busy, TRUE, __ATOMIC_RELAXED);
  for (gint64 base = 0; base < n; base += CHUNK_MAX)
    run_chunk (pool, base, MIN (n - base, CHUNK_MAX), func, data);
  __atomic_store_n (&pool->busy, FALSE, __ATOMIC_RELAXED);
}
