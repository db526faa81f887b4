/* A small fixed pool of threads for data-parallel loops inside kernels.
 * The calling thread takes part, so a pool of 1 runs everything inline. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct _GraftWorkerPool GraftWorkerPool;
typedef void (*GraftWorkerFunc) (gint64 index, gpointer data);

GraftWorkerPool *graft_worker_pool_new (guint n_threads);
void graft_worker_pool_free (GraftWorkerPool *pool);
/* pool may be NULL: the caller alone, one thread. */
guint graft_worker_pool_get_n_threads (GraftWorkerPool *pool);

/* Calls func for every index in [0, n) and returns when all are done.
 * Not reentrant: a func must not call run on the same pool. */
void graft_worker_pool_run (GraftWorkerPool *pool, gint64 n, GraftWorkerFunc func, gpointer data);

/* Whether workers count the CPU time of the items they run (off by
 * default: two system calls per job and worker). */
void graft_worker_pool_set_count_cpu (GraftWorkerPool *pool, gboolean enabled);
/* The CPU time, in seconds, of the calling thread, plus what the workers
 * counted (pool may be NULL): read before and after a piece of work, the
 * difference is what it cost on every thread, however long each waited
 * for a core on a busy machine; workers waiting for items count nothing. */
double graft_worker_pool_get_cpu_seconds (GraftWorkerPool *pool);

G_END_DECLS
