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

G_END_DECLS
