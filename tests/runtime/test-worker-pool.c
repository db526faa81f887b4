/* The kernels' thread pool (runtime/worker-pool.c): every index of a
 * loop runs exactly once with 1, 2 and 3 threads, and a pool between
 * jobs sleeps: its workers spin for at most 0.5 ms after a job, then wait on
 * a condition variable, so an idle pool costs no CPU time. The CPU time
 * a job cost counts every thread's part (what `graft-cli run --profile`
 * shows per node). */
#include <string.h>
#include <time.h>
#include "runtime/worker-pool.h"

#define ITEMS 100000

static void
count_index (gint64 index, gpointer data)
{
  gint *hits = data;
  g_atomic_int_inc (&hits[index]);
}

static void
test_every_index_once (void)
{
  g_autofree gint *hits = g_new0 (gint, ITEMS);
  for (guint threads = 1; threads <= 3; threads++)
    {
      GraftWorkerPool *pool = graft_worker_pool_new (threads);
      g_assert_cmpuint (graft_worker_pool_get_n_threads (pool), ==, threads);
      for (int job = 0; job < 20; job++)
        graft_worker_pool_run (pool, ITEMS, count_index, hits);
      graft_worker_pool_free (pool);
    }
  for (gint64 i = 0; i < ITEMS; i++)
    g_assert_cmpint (hits[i], ==, 3 * 20);
}

typedef struct {
  gint *hits;
  gint64 n;
} SmallJob;

static void
count_small_job_index (gint64 index, gpointer data)
{
  SmallJob *job = data;
  g_assert_cmpint (index, <, job->n);
  g_atomic_int_inc (&job->hits[index]);
}

/* Many short jobs of different sizes back to back: a worker that woke
 * late for one job must not take an index of it with the next job's size
 * (once it ran an item twice and counted past the job's end, and the
 * caller waited for ever: 2 threads hung within 20,000 such jobs). */
static void
test_short_jobs_back_to_back (void)
{
  static const gint64 sizes[] = { 2, 7, 33 };
  for (guint threads = 2; threads <= 4; threads++)
    {
      GraftWorkerPool *pool = graft_worker_pool_new (threads);
      gint hits[2][33];
      for (int k = 0; k < 100000; k++)
        {
          SmallJob job = { hits[k & 1], sizes[k % 3] };
          memset (job.hits, 0, sizeof hits[0]);
          graft_worker_pool_run (pool, job.n, count_small_job_index, &job);
          for (gint64 i = 0; i < job.n; i++)
            if (job.hits[i] != 1)
              g_error ("%u threads, job %d of %" G_GINT64_FORMAT " items: item %" G_GINT64_FORMAT " ran %d times",
                       threads, k, job.n, i, job.hits[i]);
        }
      graft_worker_pool_free (pool);
    }
}

static double
process_cpu_seconds (void)
{
  struct timespec t;
  g_assert_cmpint (clock_gettime (CLOCK_PROCESS_CPUTIME_ID, &t), ==, 0);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static void
test_idle_pool_sleeps (void)
{
  g_autofree gint *hits = g_new0 (gint, ITEMS);
  GraftWorkerPool *pool = graft_worker_pool_new (2);
  graft_worker_pool_run (pool, ITEMS, count_index, hits);
  /* after the job the worker's spin ends within microseconds */
  g_usleep (20 * 1000);
  double before = process_cpu_seconds ();
  g_usleep (300 * 1000);
  double idle = process_cpu_seconds () - before;
  graft_worker_pool_free (pool);
  /* a spinning worker would use most of the 300 ms, even on a loaded machine */
  g_assert_cmpfloat (idle, <, 0.03);
}

static double
thread_cpu_seconds (void)
{
  struct timespec t;
  g_assert_cmpint (clock_gettime (CLOCK_THREAD_CPUTIME_ID, &t), ==, 0);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

/* 15 ms of the running thread's CPU time */
static void
burn_cpu (gint64 index, gpointer data)
{
  double until = thread_cpu_seconds () + 0.015;
  while (thread_cpu_seconds () < until)
    ;
}

/* Whichever thread runs the items, and however long each waits for a
 * core, the job's CPU time is the items' 4 × 15 ms (and a little for
 * the caller's wait). */
static void
test_counts_every_threads_cpu (void)
{
  for (guint threads = 1; threads <= 3; threads++)
    {
      GraftWorkerPool *pool = threads > 1 ? graft_worker_pool_new (threads) : NULL;
      graft_worker_pool_set_count_cpu (pool, TRUE);
      double before = graft_worker_pool_get_cpu_seconds (pool);
      graft_worker_pool_run (pool, 4, burn_cpu, NULL);
      double spent = graft_worker_pool_get_cpu_seconds (pool) - before;
      graft_worker_pool_free (pool);
      g_assert_cmpfloat (spent, >=, 0.0599);
      g_assert_cmpfloat (spent, <, 0.2);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/worker-pool/every-index-once", test_every_index_once);
  g_test_add_func ("/worker-pool/short-jobs-back-to-back", test_short_jobs_back_to_back);
  g_test_add_func ("/worker-pool/idle-pool-sleeps", test_idle_pool_sleeps);
  g_test_add_func ("/worker-pool/counts-every-threads-cpu", test_counts_every_threads_cpu);
  return g_test_run ();
}
