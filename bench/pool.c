/* Pinned fork-join pool. A job is published by bumping `gen`; workers spin on
 * it for a while, then sleep on the condition variable. */
#include "pool.h"

#include <hwloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static hwloc_topology_t topo;
static int topo_ok;
static pthread_once_t topo_once = PTHREAD_ONCE_INIT;

static void load(void) {
    if (hwloc_topology_init(&topo) == 0 && hwloc_topology_load(topo) == 0) topo_ok = 1;
}

static hwloc_topology_t get_topo(void) {
    pthread_once(&topo_once, load);
    return topo_ok ? topo : NULL;
}

int qkb_ncores(void) {
    hwloc_topology_t t = get_topo();
    int n = t ? hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE) : 0;
    return n > 0 ? n : 1;
}

static hwloc_obj_t core_obj(int core) {
    hwloc_topology_t t = get_topo();
    if (!t) return NULL;
    int n = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
    if (n <= 0) return NULL;
    return hwloc_get_obj_by_type(t, HWLOC_OBJ_CORE, (unsigned)(core % n));
}

static hwloc_cpuset_t original;

int qkb_pin_self(int core) {
    hwloc_obj_t c = core_obj(core);
    if (!c || !c->cpuset) return -1;
    if (!original) {
        original = hwloc_bitmap_alloc();
        if (original && hwloc_get_cpubind(get_topo(), original, HWLOC_CPUBIND_THREAD) != 0) {
            hwloc_bitmap_free(original);
            original = NULL;
        }
    }
    hwloc_cpuset_t set = hwloc_bitmap_dup(c->cpuset);
    hwloc_bitmap_singlify(set);
    int r = hwloc_set_cpubind(get_topo(), set, HWLOC_CPUBIND_THREAD);
    hwloc_bitmap_free(set);
    return r;
}

void qkb_unpin_self(void) {
    if (original && get_topo()) hwloc_set_cpubind(get_topo(), original, HWLOC_CPUBIND_THREAD);
}

void qkb_bind_local(void *p, size_t bytes, int core) {
    hwloc_topology_t t = get_topo();
    hwloc_obj_t c = core_obj(core);
    if (!t || !c || !p || !bytes || hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE) <= 1) return;
    hwloc_set_area_membind(t, p, bytes, c->nodeset, HWLOC_MEMBIND_BIND, HWLOC_MEMBIND_MIGRATE | HWLOC_MEMBIND_BYNODESET);
}

typedef struct worker {
    struct qkb_pool *pool;
    int tid;
    pthread_t th;
} worker;

struct qkb_pool {
    int n;
    worker *w;
    _Atomic unsigned gen;
    _Atomic int done;
    _Atomic int quit;
    _Atomic int sleepers;
    qkb_task_fn fn;
    void *ctx;
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __asm__ volatile("pause");
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

static void *worker_main(void *arg) {
    worker *w = arg;
    qkb_pool *p = w->pool;
    qkb_pin_self(w->tid);
    unsigned seen = 0;
    for (;;) {
        unsigned g;
        int spins = 0;
        while ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen) {
            if (++spins < 200000) {
                cpu_relax();
                continue;
            }
            pthread_mutex_lock(&p->mu);
            atomic_fetch_add(&p->sleepers, 1);
            while (atomic_load(&p->gen) == seen) pthread_cond_wait(&p->cv, &p->mu);
            atomic_fetch_sub(&p->sleepers, 1);
            pthread_mutex_unlock(&p->mu);
        }
        seen = g;
        if (atomic_load(&p->quit)) return NULL;
        p->fn(p->ctx, w->tid, p->n);
        atomic_fetch_add_explicit(&p->done, 1, memory_order_acq_rel);
    }
}

qkb_pool *qkb_pool_create(int nthreads, char *err, size_t errlen) {
    int cores = qkb_ncores();
    if (nthreads < 1 || nthreads > cores) {
        snprintf(err, errlen, "%d threads asked, but this machine has %d core%s (threads are pinned one per core)", nthreads,
                 cores, cores == 1 ? "" : "s");
        return NULL;
    }
    qkb_pool *p = calloc(1, sizeof *p);
    if (!p) return snprintf(err, errlen, "out of memory"), NULL;
    p->n = nthreads;
    p->w = calloc((size_t)nthreads, sizeof *p->w);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    qkb_pin_self(0);
    for (int i = 1; i < nthreads; i++) {
        p->w[i].pool = p;
        p->w[i].tid = i;
        if (pthread_create(&p->w[i].th, NULL, worker_main, &p->w[i]) != 0) {
            snprintf(err, errlen, "cannot start thread %d", i);
            p->n = i;
            qkb_pool_destroy(p);
            return NULL;
        }
    }
    return p;
}

int qkb_pool_size(const qkb_pool *p) { return p->n; }

static void publish(qkb_pool *p) {
    atomic_fetch_add_explicit(&p->gen, 1, memory_order_acq_rel);
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
}

void qkb_pool_run(qkb_pool *p, qkb_task_fn fn, void *ctx) {
    if (p->n == 1) {
        fn(ctx, 0, 1);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    atomic_store(&p->done, 0);
    publish(p);
    fn(ctx, 0, p->n);
    while (atomic_load_explicit(&p->done, memory_order_acquire) < p->n - 1) cpu_relax();
}

void qkb_pool_destroy(qkb_pool *p) {
    if (!p) return;
    atomic_store(&p->quit, 1);
    publish(p);
    for (int i = 1; i < p->n; i++) pthread_join(p->w[i].th, NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p->w);
    free(p);
}

void qkb_split(size_t n, size_t step, int tid, int nthreads, size_t *lo, size_t *hi) {
    if (step == 0) step = 1;
    size_t units = (n + step - 1) / step;
    size_t per = units / (size_t)nthreads, extra = units % (size_t)nthreads;
    size_t u0 = (size_t)tid * per + ((size_t)tid < extra ? (size_t)tid : extra);
    size_t u1 = u0 + per + ((size_t)tid < extra ? 1 : 0);
    *lo = u0 * step < n ? u0 * step : n;
    *hi = u1 * step < n ? u1 * step : n;
}
