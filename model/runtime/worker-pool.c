#include "runtime/worker-pool.h"

#include <time.h>

/* A job is published by bumping `ticket`, a 64-bit word holding the
 * generation (high half) and the next index to take (low half). A worker
 * takes an index with a compare-and-swap that also checks the generation,
 * so a worker that wakes late can never take an index of a later job, and
 * the caller only waits for the items to be done, never for a sleeping
 * worker to be scheduled just to find nothing left.
 *
 * Workers spin for the next job for a while (a network issues a job every
 * few hundred microseconds), then sleep on a condition variable. The hot
 * path takes no lock: the job's fields are written before the ticket is
 * published (release) and read after it is seen (acquire), and the mutex
 * and the condition variables are touched only when a thread is asleep
 * (`sleepers`, `caller_sleeps`). Taking the mutex on every job made the
 * worker block on it while the caller held it to publish — MobileNetV2
 * at 2 threads put the worker to sleep ~20 times a run that way, each
 * time losing it for the tens of microseconds a wake-up takes in a VM.
 * The spin is timed, not counted: PAUSE takes 10 to 140 cycles depending
 * on the CPU. A pool of more threads than the machine has processors does
 * not spin at all: a spinning worker would hold a core the others need
 * (MobileNetV2 with 70 threads on 2 cores: 26 ms a run with a 35 µs spin,
 * 100 ms with 0.5 ms). */

#define SPIN_MICROSECONDS 500
#define CHUNK_MAX ((gint64) G_MAXINT32)
/* the index half of a ticket whose job is being set up: above any n, so
 * nothing is taken until the job is published with index 0 */
#define JOB_CLOSED G_MAXUINT32

struct _GraftWorkerPool {
  guint n_threads;
  GThread **threads;
  GMutex mutex;
  GCond wake;
  GCond done_cond;
  gboolean quit;          /* atomic */
  gboolean busy;
  gint sleepers;          /* atomic: workers waiting (or about to) on `wake` */
  gboolean caller_sleeps; /* atomic: the caller waits (or is about to) on `done_cond` */
  gint64 spin_microseconds;   /* how long a waiting thread spins before it sleeps */

  /* the current job: written (atomically, relaxed) before ticket is published */
  GraftWorkerFunc func;
  gpointer data;
  gint64 base, n;
  guint64 ticket;       /* atomic: generation << 32 | next index */
  gint64 done;          /* atomic: items finished in this generation */

  /* graft_worker_pool_set_count_cpu: workers add the CPU time of the
   * items they ran to workers_cpu_ns (atomic) before they count them done */
  gboolean count_cpu;
  gint64 workers_cpu_ns;
};

static inline void
cpu_relax (void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause ();
#endif
}

static guint32
generation (GraftWorkerPool *pool)
{
  return (guint32) (__atomic_load_n (&pool->ticket, __ATOMIC_SEQ_CST) >> 32);
}

/* Spins until ready (data) or quit, for up to pool->spin_microseconds;
 * TRUE if it did. */
static gboolean
spin_until (gboolean (*ready) (GraftWorkerPool *pool, gconstpointer arg), GraftWorkerPool *pool, gconstpointer arg)
{
  gint64 deadline = 0;
  for (guint i = 1;; i++)
    {
      if (ready (pool, arg) || __atomic_load_n (&pool->quit, __ATOMIC_RELAXED))
        return TRUE;
      if (pool->spin_microseconds == 0)
        return FALSE;
      cpu_relax ();
      if (i % 64 == 0)
        {
          gint64 now = g_get_monotonic_time ();
          if (deadline == 0)
            deadline = now + pool->spin_microseconds;
          else if (now >= deadline)
            return FALSE;
        }
    }
}

/* a job of a generation other than *(guint32 *) seen is published (its
 * setup done) */
static gboolean
new_generation (GraftWorkerPool *pool, gconstpointer seen)
{
  guint64 t = __atomic_load_n (&pool->ticket, __ATOMIC_SEQ_CST);
  return (guint32) (t >> 32) != *(const guint32 *) seen && (guint32) t != JOB_CLOSED;
}

/* all *(gint64 *) n items of the job are done */
static gboolean
all_done (GraftWorkerPool *pool, gconstpointer n)
{
  return __atomic_load_n (&pool->done, __ATOMIC_SEQ_CST) == *(const gint64 *) n;
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

static gint64
thread_cpu_ns (void)
{
  struct timespec ts;
  return clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts) == 0 ? ts.tv_sec * G_GINT64_CONSTANT (1000000000) + ts.tv_nsec : 0;
}

static void
finish_items (GraftWorkerPool *pool, gint64 count, gint64 n)
{
  if (count == 0)
    return;
  /* the caller sets caller_sleeps before its last look at done, this
   * thread adds to done before it looks at caller_sleeps (both
   * sequentially consistent): one of the two sees the other's write */
  if (__atomic_add_fetch (&pool->done, count, __ATOMIC_SEQ_CST) == n &&
      __atomic_load_n (&pool->caller_sleeps, __ATOMIC_SEQ_CST))
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
      if (!spin_until (new_generation, pool, &seen))
        {
          g_mutex_lock (&pool->mutex);
          __atomic_add_fetch (&pool->sleepers, 1, __ATOMIC_SEQ_CST);
          while (!__atomic_load_n (&pool->quit, __ATOMIC_SEQ_CST) && !new_generation (pool, &seen))
            g_cond_wait (&pool->wake, &pool->mutex);
          __atomic_sub_fetch (&pool->sleepers, 1, __ATOMIC_SEQ_CST);
          g_mutex_unlock (&pool->mutex);
        }
      if (__atomic_load_n (&pool->quit, __ATOMIC_SEQ_CST))
        return NULL;
      /* the job of generation gen. If the caller has moved on meanwhile,
       * the fields read below may be a later job's; but the caller closes
       * the ticket (a later generation, JOB_CLOSED) before it writes them,
       * and a worker that read a field so written (acquire) then sees that
       * ticket, so take_index fails for gen and nothing runs. Without the
       * closing, a worker late from gen could take index n of gen's
       * exhausted ticket with the next job's larger n: an item run twice,
       * and `done` past n, so that the caller waited for ever (2 threads,
       * 20,000 jobs of 2, 7 and 33 items hung in seconds). */
      guint64 t = __atomic_load_n (&pool->ticket, __ATOMIC_ACQUIRE);
      if ((guint32) t == JOB_CLOSED)
        continue;   /* the next job's setup: wait for it again */
      guint32 gen = seen = (guint32) (t >> 32);
      GraftWorkerFunc func = __atomic_load_n (&pool->func, __ATOMIC_ACQUIRE);
      gpointer data = __atomic_load_n (&pool->data, __ATOMIC_ACQUIRE);
      gint64 base = __atomic_load_n (&pool->base, __ATOMIC_ACQUIRE), n = __atomic_load_n (&pool->n, __ATOMIC_ACQUIRE);
      gboolean count_cpu = __atomic_load_n (&pool->count_cpu, __ATOMIC_RELAXED);
      gint64 index, count = 0, cpu_start = 0;
      while (take_index (pool, gen, n, &index))
        {
          if (count == 0 && count_cpu)
            cpu_start = thread_cpu_ns ();
          func (base + index, data);
          count++;
        }
      if (count > 0 && count_cpu)
        __atomic_add_fetch (&pool->workers_cpu_ns, thread_cpu_ns () - cpu_start, __ATOMIC_RELAXED);
      finish_items (pool, count, n);
    }
}

GraftWorkerPool *
graft_worker_pool_new (guint n_threads)
{
  GraftWorkerPool *pool = g_new0 (GraftWorkerPool, 1);
  pool->n_threads = MAX (n_threads, 1);
  pool->spin_microseconds = pool->n_threads <= g_get_num_processors () ? SPIN_MICROSECONDS : 0;
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
  __atomic_store_n (&pool->quit, TRUE, __ATOMIC_SEQ_CST);
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
  /* closed first (see worker_main), then the fields, then published */
  guint32 gen = generation (pool) + 1;
  __atomic_store_n (&pool->ticket, (guint64) gen << 32 | JOB_CLOSED, __ATOMIC_SEQ_CST);
  __atomic_store_n (&pool->func, func, __ATOMIC_RELEASE);
  __atomic_store_n (&pool->data, data, __ATOMIC_RELEASE);
  __atomic_store_n (&pool->base, base, __ATOMIC_RELEASE);
  __atomic_store_n (&pool->n, n, __ATOMIC_RELEASE);
  __atomic_store_n (&pool->done, 0, __ATOMIC_RELEASE);
  __atomic_store_n (&pool->ticket, (guint64) gen << 32, __ATOMIC_SEQ_CST);
  /* a worker going to sleep counts itself before its last look at the
   * ticket; this thread publishes the ticket before it looks at the count */
  if (__atomic_load_n (&pool->sleepers, __ATOMIC_SEQ_CST) > 0)
    {
      g_mutex_lock (&pool->mutex);
      g_cond_broadcast (&pool->wake);
      g_mutex_unlock (&pool->mutex);
    }

  gint64 index, count = 0;
  while (take_index (pool, gen, n, &index))
    {
      func (base + index, data);
      count++;
    }
  if (__atomic_add_fetch (&pool->done, count, __ATOMIC_SEQ_CST) == n)
    return;
  /* the last items are running on other threads: spin, then sleep */
  if (spin_until (all_done, pool, &n))
    return;
  g_mutex_lock (&pool->mutex);
  __atomic_store_n (&pool->caller_sleeps, TRUE, __ATOMIC_SEQ_CST);
  while (!all_done (pool, &n))
    g_cond_wait (&pool->done_cond, &pool->mutex);
  __atomic_store_n (&pool->caller_sleeps, FALSE, __ATOMIC_SEQ_CST);
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

void
graft_worker_pool_set_count_cpu (GraftWorkerPool *pool, gboolean enabled)
{
  if (pool)
    __atomic_store_n (&pool->count_cpu, enabled, __ATOMIC_RELAXED);
}

double
graft_worker_pool_get_cpu_seconds (GraftWorkerPool *pool)
{
  /* the workers' sums were added before their items counted done, which
   * the last run saw (sequentially consistent) before it returned */
  gint64 workers = pool ? __atomic_load_n (&pool->workers_cpu_ns, __ATOMIC_SEQ_CST) : 0;
  return (thread_cpu_ns () + workers) / 1e9;
}
