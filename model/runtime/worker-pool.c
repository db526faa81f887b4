#include "runtime/worker-pool.h"

struct _GraftWorkerPool {
  guint n_threads;
  GThread **threads;
  GMutex mutex;
  GCond wake;
  GCond done;
  guint generation;
  gboolean quit;
  gboolean busy;

  /* the current job */
  GraftWorkerFunc func;
  gpointer data;
  gint64 n;
  gint64 next;         /* guarded by mutex */
  guint active;        /* helpers still working on this generation */
};

static gboolean
take_index (GraftWorkerPool *pool, gint64 *index)
{
  gboolean ok = FALSE;
  g_mutex_lock (&pool->mutex);
  if (pool->next < pool->n)
    {
      *index = pool->next++;
      ok = TRUE;
    }
  g_mutex_unlock (&pool->mutex);
  return ok;
}

static gpointer
worker_main (gpointer user_data)
{
  GraftWorkerPool *pool = user_data;
  guint seen = 0;

  for (;;)
    {
      g_mutex_lock (&pool->mutex);
      while (!pool->quit && pool->generation == seen)
        g_cond_wait (&pool->wake, &pool->mutex);
      if (pool->quit)
        {
          g_mutex_unlock (&pool->mutex);
          return NULL;
        }
      seen = pool->generation;
      g_mutex_unlock (&pool->mutex);

      gint64 index;
      while (take_index (pool, &index))
        pool->func (index, pool->data);

      g_mutex_lock (&pool->mutex);
      if (--pool->active == 0)
        g_cond_signal (&pool->done);
      g_mutex_unlock (&pool->mutex);
    }
}

GraftWorkerPool *
graft_worker_pool_new (guint n_threads)
{
  GraftWorkerPool *pool = g_new0 (GraftWorkerPool, 1);
  pool->n_threads = MAX (n_threads, 1);
  g_mutex_init (&pool->mutex);
  g_cond_init (&pool->wake);
  g_cond_init (&pool->done);
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
  pool->quit = TRUE;
  g_cond_broadcast (&pool->wake);
  g_mutex_unlock (&pool->mutex);
  for (guint i = 1; i < pool->n_threads; i++)
    g_thread_join (pool->threads[i]);
  g_free (pool->threads);
  g_mutex_clear (&pool->mutex);
  g_cond_clear (&pool->wake);
  g_cond_clear (&pool->done);
  g_free (pool);
}

guint
graft_worker_pool_get_n_threads (GraftWorkerPool *pool)
{
  return pool ? pool->n_threads : 1;
}

void
graft_worker_pool_run (GraftWorkerPool *pool, gint64 n, GraftWorkerFunc func, gpointer data)
{
  if (pool == NULL || pool->n_threads == 1 || n <= 1 || pool->busy)
    {
      for (gint64 i = 0; i < n; i++)
        func (i, data);
      return;
    }

  g_mutex_lock (&pool->mutex);
  pool->busy = TRUE;
  pool->func = func;
  pool->data = data;
  pool->n = n;
  pool->next = 0;
  pool->active = pool->n_threads - 1;
  pool->generation++;
  g_cond_broadcast (&pool->wake);
  g_mutex_unlock (&pool->mutex);

  gint64 index;
  while (take_index (pool, &index))
    func (index, data);

  g_mutex_lock (&pool->mutex);
  while (pool->active > 0)
    g_cond_wait (&pool->done, &pool->mutex);
  pool->busy = FALSE;
  g_mutex_unlock (&pool->mutex);
}
