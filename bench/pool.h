/// A fork-join pool of threads pinned to distinct cores with hwloc
/// (hwloc_set_cpubind), for the probe and the benchmarks (DESIGN §4).
/// The calling thread is worker 0 (pinned to the first core); workers spin
/// briefly between jobs and then sleep.
#ifndef QKB_POOL_H
#define QKB_POOL_H
#include <stddef.h>

typedef void (*qkb_task_fn)(void *ctx, int tid, int nthreads);
typedef struct qkb_pool qkb_pool;

/// Cores hwloc reports (1 if it reports none).
int qkb_ncores(void);
/// Pin the calling thread to core `core` (mod the core count). 0 on success.
/// The first call remembers the thread's binding before it.
int qkb_pin_self(int core);
/// Give the calling thread back the binding it had before qkb_pin_self (threads
/// it creates afterwards inherit that, not one core).
void qkb_unpin_self(void);
/// Bind [p, p+bytes) to the NUMA node of `core` (no-op on one node).
void qkb_bind_local(void *p, size_t bytes, int core);

/// Start nthreads-1 workers, each pinned to its own core, and pin the caller
/// to core 0. NULL (with a message in err) if nthreads exceeds the cores or a
/// thread cannot start.
qkb_pool *qkb_pool_create(int nthreads, char *err, size_t errlen);
int qkb_pool_size(const qkb_pool *p);
/// Run fn(ctx, tid, n) on every thread (the caller is tid 0); returns when all finished.
void qkb_pool_run(qkb_pool *p, qkb_task_fn fn, void *ctx);
void qkb_pool_destroy(qkb_pool *p);

/// [lo, hi) of `tid`'s share of n items split in multiples of `step`.
void qkb_split(size_t n, size_t step, int tid, int nthreads, size_t *lo, size_t *hi);
#endif
