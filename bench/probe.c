/* qkbench probe: read bandwidth over working-set sizes (one thread, all
 * cores), the cache levels at the knees of that curve, and per-tier f32 FMA
 * and int8 dot peaks (DESIGN §4). Cached in <results>/<machine>/machine.json. */
#include "probe.h"
#include "metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h>
#endif

#include "commands.h"
#include "emulation.h"
#include "machine.h"
#include "peak.h"
#include "pool.h"
#include "qk/kernels.h"
#include "results.h"
#include "topology.h"

#define KiB 1024.0
#define MiB (1024.0 * 1024.0)
#define SWEEP_MIN (4 * 1024)
#define SWEEP_MAX ((size_t)256 << 20)

/* --quick (for tests): half the points, shorter trials. */
static int quick;

static void say(int on, const char *fmt, const char *what) {
    if (on) {
        fprintf(stderr, fmt, what);
        fflush(stderr);
    }
}

/* ---- bandwidth sweep ---- */

typedef struct read_job {
    qkb_read_fn read;
    unsigned char **buf;
    size_t bytes, passes;
    volatile uint64_t sink[64];
} read_job;

static void read_task(void *ctx, int tid, int n) {
    (void)n;
    read_job *j = ctx;
    uint64_t s = 0;
    for (size_t p = 0; p < j->passes; p++) s += j->read(j->buf[tid], j->bytes);
    j->sink[tid] = s;
}

static void touch_task(void *ctx, int tid, int n) {
    (void)n;
    read_job *j = ctx;
    memset(j->buf[tid], 1 + tid, j->bytes);
}

static double median(const double *v, int n) {
    double t[QKB_MAX_POINTS];
    if (n <= 0) return 0;
    memcpy(t, v, (size_t)n * sizeof *t);
    return qk_median(t, n);
}

/* Up to 2 x QKB_DRAM_LLC_FACTOR x hwloc's largest cache, 256 MiB .. 1 GiB (a
 * fake hwloc size, as some VMs report, is held to 1 GiB per thread). */
static size_t sweep_max(void) {
    const qk_topology *t = qk_topology_get();
    double llc = 0, m = SWEEP_MAX;
    for (int i = 0; t->ok && i < t->ncache; i++)
        if ((double)t->cache[i].size > llc) llc = (double)t->cache[i].size;
    if (2.0 * QKB_DRAM_LLC_FACTOR * llc > m) m = 2.0 * QKB_DRAM_LLC_FACTOR * llc;
    if (m > 1024 * MiB) m = 1024 * MiB;
    return (size_t)m;
}

/* Sweep sizes: 4 per octave from 4 KiB, plus points around each size hwloc reports. */
static int sweep_sizes(double *s, size_t max) {
    int n = 0;
    for (double x = SWEEP_MIN; x <= (double)max * 1.0001 && n < QKB_MAX_POINTS - 16; x *= quick ? 1.41421356 : 1.189207115) s[n++] = x;
    const qk_topology *t = qk_topology_get();
    for (int i = 0; t->ok && i < t->ncache && n < QKB_MAX_POINTS - 4; i++) {
        double c = (double)t->cache[i].size;
        double hint[3] = {0.5 * c, 0.8 * c, 1.6 * c};
        for (int k = 0; k < 3; k++)
            if (hint[k] >= SWEEP_MIN && hint[k] <= (double)max) s[n++] = hint[k];
    }
    qsort(s, (size_t)n, sizeof *s, qk_cmp_double);
    int m = 0;
    for (int i = 0; i < n; i++) {
        double r = floor(s[i] / 512) * 512;
        if (m == 0 || r > s[m - 1] * 1.04) s[m++] = r;
    }
    return m;
}

/* Short timed trials of fn on every thread of pool (NULL: the calling thread
 * alone), each moving `bytes`, after one untimed call: the fastest, bytes/s, a
 * limit (many short trials, so that one without preemption is likely even on a
 * busy machine; it stops early once the two best agree within 2%, or after
 * `seconds` and 3 trials). */
static double trials(qkb_pool *pool, qkb_task_fn fn, void *ctx, double bytes, double seconds) {
    double top = 0, second = 0, t_end = qkb_seconds() + seconds;
    for (int t = -1; t < 40; t++) {
        double t0 = qkb_seconds();
        if (pool) qkb_pool_run(pool, fn, ctx);
        else fn(ctx, 0, 1);
        double t1 = qkb_seconds();
        if (t < 0) continue;
        double bw = bytes / (t1 - t0);
        if (bw > top) second = top, top = bw;
        else if (bw > second) second = bw;
        if (t >= 4 && second > 0.98 * top) break;
        if (t >= 2 && t1 > t_end) break;
    }
    return top;
}

/* Read bandwidth (aggregate bytes/s) of `bytes` per thread: the first call brings
 * the set into its level. */
static double measure_bw(qkb_pool *pool, read_job *j, size_t bytes) {
    const double target = (quick ? 4 : 8) * MiB;
    j->bytes = bytes;
    j->passes = (size_t)ceil(target / (double)bytes);
    return trials(pool, read_task, j, (double)bytes * (double)j->passes * qkb_pool_size(pool), quick ? 0.03 : 0.12);
}

qkb_read_fn qkb_read_best(char *tier, size_t tn) {
    for (size_t i = qkb_peak_tier_count; i-- > 0;)
        if (qkb_peak_tiers[i].read && (qk_cpu()->tiers >> qkb_peak_tiers[i].tier & 1u)) {
            if (tier) snprintf(tier, tn, "%s", qk_tier_name(qkb_peak_tiers[i].tier));
            return qkb_peak_tiers[i].read;
        }
    return NULL;
}

/* The best streaming write this CPU runs. */
static qkb_write_fn write_best(void) {
    for (size_t i = qkb_peak_tier_count; i-- > 0;)
        if (qkb_peak_tiers[i].write && (qk_cpu()->tiers >> qkb_peak_tiers[i].tier & 1u)) return qkb_peak_tiers[i].write;
    return NULL;
}

/* Each thread's 512-byte-aligned share of every region: it reads its shares of
 * r[0, n), then writes its shares of w[0, nw) (n + nw <= QKB_REGIONS_MAX). */
enum { QKB_REGIONS_MAX = 8 };
typedef struct regions_job {
    qkb_read_fn read;
    qkb_write_fn write;
    const qkb_region *r, *w;
    size_t n, nw;
    volatile uint64_t sink[64];
} regions_job;

static size_t region_share(const qkb_region *r, int tid, int n, const unsigned char **p) {
    size_t per = r->bytes / 512 / (size_t)n * 512, lo = per * (size_t)tid;
    size_t addr = (size_t)r->p + lo, mis = (64 - addr % 64) % 64;
    *p = (const unsigned char *)r->p + lo + mis;
    return per > mis + 512 ? (per - mis) / 512 * 512 : 0;
}

/* Bytes [0, b) of a share (a multiple of 512) cut in `steps`: where step st starts. */
static size_t step_at(size_t b, size_t st, size_t steps) { return b / 512 * st / steps * 512; }

static void regions_task(void *ctx, int tid, int n) {
    regions_job *j = ctx;
    uint64_t s = 0;
    /* this thread's shares, found before the passes: reads r[0, n), then writes */
    const unsigned char *p[QKB_REGIONS_MAX];
    size_t b[QKB_REGIONS_MAX], nr = j->n + j->nw, wb = 0, steps = 1;
    for (size_t i = 0; i < nr; i++) {
        b[i] = region_share(i < j->n ? &j->r[i] : &j->w[i - j->n], tid, n, &p[i]);
        if (i >= j->n) wb += b[i];
    }
    /* with writes, in steps of about 16 KiB of them, each first reading its slice of the
     * reads: in turn, as a conversion reads and writes (reading everything first and
     * then writing ran slower than the dequantize kernels, in a quiet hour) */
    if (wb >= 2 * 16384) steps = wb / 16384;
    for (size_t st = 0; st < steps; st++)
        for (size_t i = 0; i < nr; i++) {
            size_t lo = step_at(b[i], st, steps), hi = step_at(b[i], st + 1, steps);
            if (hi <= lo) continue;
            if (i < j->n) s += j->read(p[i] + lo, hi - lo);
            else j->write((void *)(uintptr_t)(p[i] + lo), hi - lo);
        }
#if defined(__x86_64__) || defined(__i386__)
    if (j->nw) _mm_sfence(); /* the streaming stores are done */
#endif
    j->sink[tid & 63] = s;
}

/* Bytes the threads of pool read of the regions (their shares). */
static double regions_bytes(qkb_pool *pool, const qkb_region *r, size_t n) {
    int threads = pool ? qkb_pool_size(pool) : 1;
    double bytes = 0;
    for (int t = 0; t < threads; t++)
        for (size_t i = 0; i < n; i++) {
            const unsigned char *p;
            bytes += (double)region_share(&r[i], t, threads, &p);
        }
    return bytes;
}

static double regions_once(qkb_pool *pool, regions_job *j) {
    double bytes = regions_bytes(pool, j->r, j->n) + regions_bytes(pool, j->w, j->nw);
    if (!j->read || (j->nw && !j->write) || j->n + j->nw > QKB_REGIONS_MAX || bytes <= 0) return 0;
    double t0 = qkb_seconds();
    if (pool) qkb_pool_run(pool, regions_task, j);
    else regions_task(j, 0, 1);
    double t1 = qkb_seconds();
    return t1 > t0 ? bytes / (t1 - t0) : 0;
}

double qkb_read_regions_once(qkb_pool *pool, const qkb_region *r, size_t n) {
    return regions_once(pool, &(regions_job){.read = qkb_read_best(NULL, 0), .r = r, .n = n});
}

double qkb_stream_regions_once(qkb_pool *pool, const qkb_region *in, size_t nin, const qkb_region *out, size_t nout) {
    return regions_once(pool, &(regions_job){.read = qkb_read_best(NULL, 0), .write = write_best(), .r = in, .n = nin, .w = out, .nw = nout});
}

void qkb_evict_regions(const qkb_region *r, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const char *p = (const char *)((uintptr_t)r[i].p & ~(uintptr_t)63), *e = (const char *)r[i].p + r[i].bytes;
        for (; p < e; p += 64) {
#if defined(__x86_64__) || defined(__i386__)
            _mm_clflush(p);
#elif defined(__aarch64__)
            __asm__ volatile("dc civac, %0" : : "r"(p) : "memory");
#else
            (void)p;
#endif
        }
    }
#if defined(__x86_64__) || defined(__i386__)
    _mm_mfence();
#elif defined(__aarch64__)
    __asm__ volatile("dsb ish" : : : "memory");
#endif
}

/* The best read loop this CPU runs (its tier's name in tier) and one buffer of
 * `bytes` per pool thread, first touched by its pinned owner (local pages).
 * 0, or -1 (nothing to free but read_free). */
static int read_setup(read_job *j, qkb_pool *pool, int threads, size_t bytes, char *tier, size_t tn) {
    j->read = qkb_read_best(tier, tn);
    j->buf = calloc((size_t)threads, sizeof *j->buf);
    int rc = j->read && j->buf ? 0 : -1;
    for (int t = 0; rc == 0 && t < threads; t++)
        if (posix_memalign((void **)&j->buf[t], 4096, bytes)) j->buf[t] = NULL, rc = -1;
    if (rc == 0) {
        j->bytes = bytes;
        qkb_pool_run(pool, touch_task, j);
    }
    return rc;
}

static void read_free(read_job *j, int threads) {
    for (int t = 0; j->buf && t < threads; t++) free(j->buf[t]);
    free(j->buf);
    j->buf = NULL;
}

static int sweep(qkb_limits *l, int threads, double *out, int progress) {
    char err[200];
    qkb_pool *pool = qkb_pool_create(threads, err, sizeof err);
    if (!pool) {
        fprintf(stderr, "qkbench probe: %s\n", err);
        return -1;
    }
    read_job j = {0};
    size_t max = (size_t)l->size[l->npoints - 1];
    int rc = read_setup(&j, pool, threads, max, l->read_tier, sizeof l->read_tier);
    if (rc == 0) {
        for (int i = 0; i < l->npoints; i++) {
            if (progress && i % 8 == 0)
                fprintf(stderr, "\r  read bandwidth, %d thread%s: %3.0f%%", threads, threads > 1 ? "s" : "", 100.0 * i / l->npoints);
            out[i] = measure_bw(pool, &j, (size_t)l->size[i]);
        }
        if (progress) fprintf(stderr, "\r%60s\r", "");
    } else {
        fprintf(stderr, "qkbench probe: out of memory for %zu-byte buffers\n", max);
    }
    read_free(&j, threads);
    qkb_pool_destroy(pool);
    return rc;
}

double qkb_probe_dram_now(const qkb_limits *l, int threads) {
    char err[200];
    double llc = qkb_limits_llc(l), bytes = QKB_DRAM_LLC_FACTOR * (llc > 0 ? llc : 64 * MiB);
    if (bytes > 1024 * MiB) bytes = 1024 * MiB;
    qkb_pool *pool = qkb_pool_create(threads, err, sizeof err);
    if (!pool) return 0;
    read_job j = {0};
    char tier[16];
    double bw = read_setup(&j, pool, threads, (size_t)bytes, tier, sizeof tier) ? 0 : measure_bw(pool, &j, (size_t)bytes);
    read_free(&j, threads);
    qkb_pool_destroy(pool);
    return bw;
}

/* Levels are the steps of a least-squares step function fitted to log(bandwidth)
 * over log(size) with up to 4 steps (dynamic programming), adjacent steps less
 * than 1.25x apart merged; the last step is DRAM. A level's bandwidth is the
 * median of its interior points; its capacity is where the curve crosses the
 * geometric mean of its bandwidth and the next level's. */
static double seg_cost(const double *pre, const double *pre2, int a, int b) {
    double n = b - a, s = pre[b] - pre[a], s2 = pre2[b] - pre2[a];
    return s2 - s * s / n;
}

double qkb_limits_llc(const qkb_limits *l) {
    double llc = 0;
    for (int i = 0; i + 1 < l->nlevels; i++) {
        const qkb_level *v = &l->level[i];
        if (v->size > llc) llc = v->size;
        if (!v->contradicted && v->hwloc_size > llc) llc = v->hwloc_size;
    }
    return llc;
}

/* DRAM's bandwidth is the median over working sets of QKB_DRAM_LLC_FACTOR x the
 * LLC and more, where no part of the set survives in the cache between passes.
 * (The segment fit's DRAM step starts at the knee, where a 1.5-2.5x LLC set is
 * still partly served by the LLC: on a 32 MiB L3 that read 54 GB/s against 44
 * from 128 MiB on.) Too short a sweep: its last three points. */
static void dram_plateau(qkb_limits *l) {
    qkb_level *d = &l->level[l->nlevels - 1];
    double llc = qkb_limits_llc(l), v1[QKB_MAX_POINTS], va[QKB_MAX_POINTS];
    if (l->nlevels < 2 || llc <= 0) return;
    int n = 0, first = l->npoints;
    for (int i = 0; i < l->npoints; i++)
        if (l->size[i] >= QKB_DRAM_LLC_FACTOR * llc) {
            if (i < first) first = i;
            v1[n] = l->bw1[i], va[n] = l->bwall[i], n++;
        }
    if (n < 2) {
        first = l->npoints >= 3 ? l->npoints - 3 : 0;
        for (n = 0; first + n < l->npoints; n++) v1[n] = l->bw1[first + n], va[n] = l->bwall[first + n];
    }
    d->from = l->size[first];
    d->bw1 = median(v1, n);
    d->bwall = median(va, n);
    if (d->bwall < d->bw1) d->bwall = d->bw1;
    if (d->bwall > d->bw1 * l->ncores) d->bwall = d->bw1 * l->ncores;
}

static void find_levels(qkb_limits *l) {
    int n = l->npoints;
    double y[QKB_MAX_POINTS], sm[QKB_MAX_POINTS], pre[QKB_MAX_POINTS + 1] = {0}, pre2[QKB_MAX_POINTS + 1] = {0};
    for (int i = 0; i < n; i++) {
        double w[3] = {l->bw1[i > 0 ? i - 1 : i], l->bw1[i], l->bw1[i < n - 1 ? i + 1 : i]};
        sm[i] = median(w, 3);
        y[i] = log(sm[i] > 0 ? sm[i] : 1);
        pre[i + 1] = pre[i] + y[i];
        pre2[i + 1] = pre2[i] + y[i] * y[i];
    }
    enum { K = QKB_MAX_LEVELS, MINLEN = 2 };
    static double D[K + 1][QKB_MAX_POINTS + 1];
    static int from[K + 1][QKB_MAX_POINTS + 1];
    for (int k = 0; k <= K; k++)
        for (int j = 0; j <= n; j++) D[k][j] = 1e300, from[k][j] = -1;
    D[0][0] = 0;
    for (int k = 1; k <= K; k++)
        for (int j = MINLEN; j <= n; j++)
            for (int i = 0; i + MINLEN <= j; i++)
                if (D[k - 1][i] < 1e299) {
                    double c = D[k - 1][i] + seg_cost(pre, pre2, i, j);
                    if (c < D[k][j]) D[k][j] = c, from[k][j] = i;
                }
    int k = K;
    while (k > 1 && D[k][n] >= 1e299) k--;
    int lo[K], hi[K], nseg = k;
    for (int j = n; k > 0; k--) {
        lo[k - 1] = from[k][j];
        hi[k - 1] = j;
        j = from[k][j];
    }
    for (int merged = 1; merged && nseg > 1;) {
        merged = 0;
        for (int s = 0; s + 1 < nseg; s++) {
            double a = exp((pre[hi[s]] - pre[lo[s]]) / (hi[s] - lo[s]));
            double b = exp((pre[hi[s + 1]] - pre[lo[s + 1]]) / (hi[s + 1] - lo[s + 1]));
            if (a / b < 1.25 && b / a < 1.25) {
                hi[s] = hi[s + 1];
                for (int t = s + 1; t + 1 < nseg; t++) lo[t] = lo[t + 1], hi[t] = hi[t + 1];
                nseg--;
                merged = 1;
                break;
            }
        }
    }
    const qk_topology *t = qk_topology_get();
    l->nlevels = nseg;
    for (int s = 0; s < nseg; s++) {
        qkb_level *lv = &l->level[s];
        memset(lv, 0, sizeof *lv);
        int last = s == nseg - 1;
        if (last) snprintf(lv->name, sizeof lv->name, "DRAM");
        else snprintf(lv->name, sizeof lv->name, "L%c", (char)('1' + s));
        int a = lo[s], len = hi[s] - lo[s];
        if (len >= 5) a++, len -= 2; /* interior: leave out the transitions */
        lv->bw1 = median(l->bw1 + a, len);
        /* all cores: the first two thirds (a shared level fills twice as fast) */
        lv->bwall = median(l->bwall + a, len >= 3 ? (2 * len + 2) / 3 : len);
        /* all cores move at least what one does, at most ncores times it (noise on a busy machine) */
        if (lv->bwall < lv->bw1) lv->bwall = lv->bw1;
        if (lv->bwall > lv->bw1 * l->ncores) lv->bwall = lv->bw1 * l->ncores;
        if (!last) {
            double thr = sqrt(lv->bw1 * median(l->bw1 + lo[s + 1], hi[s + 1] - lo[s + 1]));
            lv->size = l->size[hi[s] - 1];
            for (int i = lo[s] + 1; i < hi[s + 1]; i++)
                if (sm[i] < thr) {
                    double f = (log(sm[i - 1]) - log(thr)) / (log(sm[i - 1]) - log(sm[i]));
                    if (!(f >= 0 && f <= 1)) f = 0.5;
                    lv->size = exp(log(l->size[i - 1]) + f * (log(l->size[i]) - log(l->size[i - 1])));
                    break;
                }
            for (int c = 0; t->ok && c < t->ncache; c++)
                if (t->cache[c].level == s + 1 && t->cache[c].size) {
                    lv->hwloc_size = (double)t->cache[c].size;
                    double r = lv->hwloc_size / lv->size;
                    lv->contradicted = r > 2 || r < 0.5;
                }
        }
    }
    dram_plateau(l);
}

/* ---- peaks ---- */

typedef struct peak_job {
    qkb_peak_fn fn;
    uint64_t iters;
    qkb_pool *pool;
    double ops[64];
    volatile double sink[64];
} peak_job;

static void peak_task(void *ctx, int tid, int n) {
    (void)n;
    peak_job *j = ctx;
    j->ops[tid] = j->fn(j->iters, &j->sink[tid]);
}

/* Seconds per iteration of a peak loop: `run` times `iters` of them (on a pool or on
 * the calling thread), from 1000 up by 4x until one run takes over 0.5 ms. */
static double per_iter(double (*run)(void *ctx, uint64_t iters), void *ctx) {
    for (uint64_t it = 1000;; it *= 4) {
        double dt = run(ctx, it);
        if (dt > 5e-4 || it > (1ull << 40)) return dt > 0 ? dt / (double)it : 1e-9;
    }
}

static double pool_run_iters(void *ctx, uint64_t iters) {
    peak_job *j = ctx;
    j->iters = iters;
    double t0 = qkb_seconds();
    qkb_pool_run(j->pool, peak_task, j);
    return qkb_seconds() - t0;
}

/* Best of many ~2 ms trials (see measure_bw) of each of n (<= 2) loops, taken in
 * turn, trial by trial: a slow spell of a shared core then falls on all of them
 * alike, so that their ratio (the grouped dot over the plain one, in the peaks
 * table) holds, where loops measured one after the other could meet different
 * spells (the plain dot once read 525 GOP/s beside a grouped dot of 662). */
static void measure_peaks_in_turn(qkb_pool *pool, const qkb_peak_fn *fn, int n, double *best) {
    peak_job j[2];
    double second[2] = {0, 0}, t_end = qkb_seconds() + n * (quick ? 0.03 : 0.15);
    for (int k = 0; k < n; k++) {
        memset(&j[k], 0, sizeof j[k]);
        j[k].fn = fn[k];
        j[k].pool = pool;
        j[k].iters = (uint64_t)((quick ? 1e-3 : 2e-3) / per_iter(pool_run_iters, &j[k])) + 1;
        best[k] = 0;
    }
    for (int t = 0; t < 60; t++) {
        int steady = 1;
        double t1 = 0;
        for (int k = 0; k < n; k++) {
            double t0 = qkb_seconds(), ops = 0;
            qkb_pool_run(pool, peak_task, &j[k]);
            t1 = qkb_seconds();
            for (int i = 0; i < qkb_pool_size(pool); i++) ops += j[k].ops[i];
            double r = ops / (t1 - t0);
            if (r > best[k]) second[k] = best[k], best[k] = r;
            else if (r > second[k]) second[k] = r;
            if (!(t >= 5 && second[k] > 0.99 * best[k])) steady = 0;
        }
        if (steady) break;
        if (t >= 3 && t1 > t_end) break;
    }
}

static double measure_peak(qkb_pool *pool, qkb_peak_fn fn) {
    double best;
    measure_peaks_in_turn(pool, &fn, 1, &best);
    return best;
}

static int measure_peaks(qkb_limits *l, int progress) {
    char err[200];
    int n = qkb_ncores();
    qkb_pool *one = qkb_pool_create(1, err, sizeof err), *all = n > 1 ? qkb_pool_create(n, err, sizeof err) : NULL;
    if (!one || (n > 1 && !all)) {
        fprintf(stderr, "qkbench probe: %s\n", err);
        qkb_pool_destroy(one);
        return -1;
    }
    l->npeaks = 0;
    for (size_t i = 0; i < qkb_peak_tier_count; i++) {
        const qkb_peak_tier *pt = &qkb_peak_tiers[i];
        if (!(qk_cpu()->tiers >> pt->tier & 1u)) continue;
        say(progress, "\r  peaks: %-12s", qk_tier_name(pt->tier));
        qkb_peak *p = &l->peak[l->npeaks++];
        memset(p, 0, sizeof *p);
        p->tier = pt->tier;
        snprintf(p->f32_insn, sizeof p->f32_insn, "%s", pt->f32_insn);
        snprintf(p->i8_insn, sizeof p->i8_insn, "%s", pt->i8_insn);
        /* the int8 dot, and its grouped form beside it (in turn: their ratio is reported) */
        const qkb_peak_fn i8[2] = {pt->i8, pt->i8g32};
        double b1[2] = {0, 0}, ba[2] = {0, 0};
        int ni8 = pt->i8g32 ? 2 : 1;
        p->f32_1 = measure_peak(one, pt->f32);
        measure_peaks_in_turn(one, i8, ni8, b1);
        p->f32_all = all ? measure_peak(all, pt->f32) : p->f32_1;
        if (all) measure_peaks_in_turn(all, i8, ni8, ba);
        else memcpy(ba, b1, sizeof ba);
        p->i8_1 = b1[0], p->i8_all = ba[0];
        p->i8g32_1 = b1[1], p->i8g32_all = ba[1];
        if (p->f32_all < p->f32_1) p->f32_all = p->f32_1;
        if (p->i8_all < p->i8_1) p->i8_all = p->i8_1;
        if (p->i8g32_all < p->i8g32_1) p->i8g32_all = p->i8g32_1;
    }
    if (progress) fprintf(stderr, "\r%40s\r", "");
    qkb_pool_destroy(one);
    qkb_pool_destroy(all);
    return 0;
}

static double self_run_iters(void *ctx, uint64_t iters) {
    volatile double sink;
    double t0 = qkb_seconds();
    (*(const qkb_peak_fn *)ctx)(iters, &sink);
    return qkb_seconds() - t0;
}

double qkb_peak_burst(qk_tier t, int int8, double seconds) {
    static double spi[QK_TIER_COUNT][2]; /* seconds per iteration, from the first call */
    const qkb_peak_tier *pt = NULL;
    for (size_t i = 0; i < qkb_peak_tier_count; i++)
        if (qkb_peak_tiers[i].tier == t) pt = &qkb_peak_tiers[i];
    if (!pt || (unsigned)t >= QK_TIER_COUNT || !(qk_cpu()->tiers >> t & 1u)) return 0;
    qkb_peak_fn fn = int8 ? pt->i8 : pt->f32;
    volatile double sink;
    double *pi = &spi[t][int8 != 0];
    if (*pi <= 0) *pi = per_iter(self_run_iters, &fn);
    uint64_t iters = (uint64_t)(seconds / *pi) + 1;
    double t0 = qkb_seconds(), ops = fn(iters, &sink), dt = qkb_seconds() - t0;
    return dt > 0 ? ops / dt : 0;
}

int qkb_probe_core_now(const qkb_limits *l, qkb_core_now *out) {
    memset(out, 0, sizeof *out);
    char err[200];
    qkb_pool *one = qkb_pool_create(1, err, sizeof err);
    if (!one) return -1;
    for (size_t i = qkb_peak_tier_count; i-- > 0;) {
        const qkb_peak_tier *pt = &qkb_peak_tiers[i];
        if (!(qk_cpu()->tiers >> pt->tier & 1u)) continue;
        snprintf(out->tier, sizeof out->tier, "%s", qk_tier_name(pt->tier));
        out->i8 = measure_peak(one, pt->i8);
        out->f32 = measure_peak(one, pt->f32);
        break;
    }
    for (int i = 0; l && i < l->nlevels; i++) {
        const qkb_level *v = &l->level[i];
        if (strcmp(v->name, "L2") || v->size <= 0) continue;
        /* inside the level: between the level below's capacity and its own */
        double lo = i > 0 && l->level[i - 1].size > 0 ? l->level[i - 1].size : v->size / 8;
        size_t ws = (size_t)sqrt(lo * v->size) / 512 * 512;
        read_job j = {0};
        if (read_setup(&j, one, 1, ws, NULL, 0) == 0) out->l2 = measure_bw(one, &j, ws);
        read_free(&j, 1);
    }
    qkb_pool_destroy(one);
    return 0;
}

int qkb_probe_measure(qkb_limits *l, int progress) {
    memset(l, 0, sizeof *l);
    l->quick = quick;
    l->emulated = qkb_emulation_get()->emulated;
    double t0 = qkb_seconds();
    l->version = QKB_PROBE_VERSION;
    l->ncores = qkb_ncores();
    snprintf(l->cpu, sizeof l->cpu, "%s", qkb_cpu_brand());
    qkb_now(NULL, 0, l->date, sizeof l->date);
    l->npoints = sweep_sizes(l->size, sweep_max());
    if (sweep(l, 1, l->bw1, progress)) return qkb_unpin_self(), -1;
    if (l->ncores > 1) {
        if (sweep(l, l->ncores, l->bwall, progress)) return qkb_unpin_self(), -1;
    } else {
        memcpy(l->bwall, l->bw1, sizeof l->bw1);
    }
    find_levels(l);
    int rc = measure_peaks(l, progress);
    qkb_unpin_self();
    if (rc) return -1;
    l->seconds = qkb_seconds() - t0;
    l->ok = 1;
    return 0;
}

/* ---- machine.json's "probe" object ---- */

void qkb_limits_json(qkw *w, const qkb_limits *l) {
    qkw_obj(w);
    qkw_kint(w, "version", l->version);
    qkw_kstr(w, "cpu", l->cpu);
    qkw_kint(w, "cores", l->ncores);
    qkw_kstr(w, "date", l->date);
    qkw_knum(w, "seconds", l->seconds);
    qkw_kstr(w, "read_loop_tier", l->read_tier);
    qkw_kbool(w, "quick", l->quick);
    qkw_kbool(w, "emulated", l->emulated);
    qkw_key(w, "levels");
    qkw_arr(w);
    for (int i = 0; i < l->nlevels; i++) {
        const qkb_level *v = &l->level[i];
        qkw_obj(w);
        qkw_kstr(w, "name", v->name);
        qkw_knum(w, "size_bytes", v->size);
        if (v->from > 0) qkw_knum(w, "measured_from_bytes", v->from);
        qkw_knum(w, "read_gbps_1t", v->bw1 * 1e-9);
        qkw_knum(w, "read_gbps_all", v->bwall * 1e-9);
        qkw_knum(w, "hwloc_size_bytes", v->hwloc_size);
        qkw_kbool(w, "hwloc_contradicted", v->contradicted);
        qkw_end_obj(w);
    }
    qkw_end_arr(w);
    qkw_key(w, "peaks");
    qkw_arr(w);
    for (int i = 0; i < l->npeaks; i++) {
        const qkb_peak *p = &l->peak[i];
        qkw_obj(w);
        qkw_kstr(w, "tier", qk_tier_name(p->tier));
        qkw_knum(w, "f32_gflops_1t", p->f32_1 * 1e-9);
        qkw_knum(w, "f32_gflops_all", p->f32_all * 1e-9);
        qkw_knum(w, "i8_gops_1t", p->i8_1 * 1e-9);
        qkw_knum(w, "i8_gops_all", p->i8_all * 1e-9);
        if (p->i8g32_1 > 0) {
            qkw_knum(w, "i8_g32_gops_1t", p->i8g32_1 * 1e-9);
            qkw_knum(w, "i8_g32_gops_all", p->i8g32_all * 1e-9);
        }
        qkw_kstr(w, "f32_instructions", p->f32_insn);
        qkw_kstr(w, "i8_instructions", p->i8_insn);
        qkw_end_obj(w);
    }
    qkw_end_arr(w);
    qkw_key(w, "curve");
    qkw_obj(w);
    qkw_key(w, "bytes");
    qkw_arr(w);
    for (int i = 0; i < l->npoints; i++) qkw_num(w, l->size[i]);
    qkw_end_arr(w);
    qkw_key(w, "read_gbps_1t");
    qkw_arr(w);
    for (int i = 0; i < l->npoints; i++) qkw_num(w, round(l->bw1[i] * 1e-7) / 100);
    qkw_end_arr(w);
    qkw_key(w, "read_gbps_all");
    qkw_arr(w);
    for (int i = 0; i < l->npoints; i++) qkw_num(w, round(l->bwall[i] * 1e-7) / 100);
    qkw_end_arr(w);
    qkw_end_obj(w);
    qkw_end_obj(w);
}

int qkb_limits_from_json(const qkj *p, qkb_limits *l) {
    memset(l, 0, sizeof *l);
    if (!p || p->type != QKJ_OBJ) return -1;
    l->version = (int)qkj_num(qkj_get(p, "version"), 0);
    l->ncores = (int)qkj_num(qkj_get(p, "cores"), 0);
    snprintf(l->cpu, sizeof l->cpu, "%s", qkj_str(qkj_get(p, "cpu"), ""));
    snprintf(l->date, sizeof l->date, "%s", qkj_str(qkj_get(p, "date"), ""));
    snprintf(l->read_tier, sizeof l->read_tier, "%s", qkj_str(qkj_get(p, "read_loop_tier"), ""));
    l->seconds = qkj_num(qkj_get(p, "seconds"), 0);
    l->quick = (int)qkj_num(qkj_get(p, "quick"), 0);
    l->emulated = (int)qkj_num(qkj_get(p, "emulated"), 0);
    const qkj *lv = qkj_get(p, "levels"), *pk = qkj_get(p, "peaks"), *cv = qkj_get(p, "curve");
    if (!lv || lv->type != QKJ_ARR || !pk || pk->type != QKJ_ARR || lv->n == 0) return -1;
    for (size_t i = 0; i < lv->n && i < QKB_MAX_LEVELS; i++) {
        qkb_level *v = &l->level[l->nlevels++];
        const qkj *o = lv->items[i];
        snprintf(v->name, sizeof v->name, "%s", qkj_str(qkj_get(o, "name"), "?"));
        v->size = qkj_num(qkj_get(o, "size_bytes"), 0);
        v->from = qkj_num(qkj_get(o, "measured_from_bytes"), 0);
        v->bw1 = qkj_num(qkj_get(o, "read_gbps_1t"), 0) * 1e9;
        v->bwall = qkj_num(qkj_get(o, "read_gbps_all"), 0) * 1e9;
        v->hwloc_size = qkj_num(qkj_get(o, "hwloc_size_bytes"), 0);
        v->contradicted = (int)qkj_num(qkj_get(o, "hwloc_contradicted"), 0);
        if (v->bw1 <= 0) return -1;
    }
    for (size_t i = 0; i < pk->n && i < QK_TIER_COUNT; i++) {
        const qkj *o = pk->items[i];
        qk_tier t;
        if (qk_tier_parse(qkj_str(qkj_get(o, "tier"), ""), &t)) return -1;
        qkb_peak *q = &l->peak[l->npeaks++];
        q->tier = t;
        q->f32_1 = qkj_num(qkj_get(o, "f32_gflops_1t"), 0) * 1e9;
        q->f32_all = qkj_num(qkj_get(o, "f32_gflops_all"), 0) * 1e9;
        q->i8_1 = qkj_num(qkj_get(o, "i8_gops_1t"), 0) * 1e9;
        q->i8_all = qkj_num(qkj_get(o, "i8_gops_all"), 0) * 1e9;
        q->i8g32_1 = qkj_num(qkj_get(o, "i8_g32_gops_1t"), 0) * 1e9;
        q->i8g32_all = qkj_num(qkj_get(o, "i8_g32_gops_all"), 0) * 1e9;
        snprintf(q->f32_insn, sizeof q->f32_insn, "%s", qkj_str(qkj_get(o, "f32_instructions"), ""));
        snprintf(q->i8_insn, sizeof q->i8_insn, "%s", qkj_str(qkj_get(o, "i8_instructions"), ""));
    }
    const qkj *b = qkj_get(cv, "bytes"), *b1 = qkj_get(cv, "read_gbps_1t"), *ba = qkj_get(cv, "read_gbps_all");
    if (b && b1 && ba && b->type == QKJ_ARR && b1->n == b->n && ba->n == b->n)
        for (size_t i = 0; i < b->n && i < QKB_MAX_POINTS; i++) {
            l->size[i] = qkj_num(b->items[i], 0);
            l->bw1[i] = qkj_num(b1->items[i], 0) * 1e9;
            l->bwall[i] = qkj_num(ba->items[i], 0) * 1e9;
            l->npoints++;
        }
    l->ok = 1;
    return 0;
}

/* ---- cache ---- */

static qkb_limits cached;

static void cache_path(char *out, size_t n) {
    snprintf(out, n, "%s/%s/machine.json", qkb_results_root(), qkb_machine_name());
}

const qkb_limits *qkb_probe_cached(void) {
    char path[1200], err[300];
    cache_path(path, sizeof path);
    qkj *root = qkj_parse_file(path, err, sizeof err);
    qkb_limits l;
    int ok = root && qkb_limits_from_json(qkj_get(root, "probe"), &l) == 0 && l.version == QKB_PROBE_VERSION &&
             !strcmp(l.cpu, qkb_cpu_brand()) && l.ncores == qkb_ncores();
    qkj_free(root);
    if (!ok) return NULL;
    cached = l;
    return &cached;
}

const qkb_limits *qkb_probe_get(int reprobe, int save, int progress, int *from_cache) {
    char path[1200], err[300];
    cache_path(path, sizeof path);
    if (from_cache) *from_cache = 0;
    if (!reprobe) {
        qkj *root = qkj_parse_file(path, err, sizeof err);
        qkb_limits l;
        if (root && qkb_limits_from_json(qkj_get(root, "probe"), &l) == 0 && l.version == QKB_PROBE_VERSION &&
            !strcmp(l.cpu, qkb_cpu_brand()) && l.ncores == qkb_ncores()) {
            qkj_free(root);
            cached = l;
            if (from_cache) *from_cache = 1;
            return &cached;
        }
        qkj_free(root);
    }
    if (progress) fprintf(stderr, save ? "probing this machine's limits (cached afterwards in %s)\n" : "probing this machine's limits (not cached: --no-save)\n", path);
    if (qkb_probe_measure(&cached, progress)) return NULL;
    if (!save) return &cached;
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/%s", qkb_results_root(), qkb_machine_name());
    if (qkb_mkdirs(dir, err, sizeof err) || qkb_machine_write(path, &cached, err, sizeof err))
        fprintf(stderr, "qkbench: warning: could not cache the probe: %s\n", err);
    return &cached;
}

/* ---- roofline inputs ---- */

const qkb_level *qkb_level_for(const qkb_limits *l, double ws, int cold) {
    if (l->nlevels == 0) return NULL;
    if (!cold)
        for (int i = 0; i + 1 < l->nlevels; i++)
            if (ws <= l->level[i].size) return &l->level[i];
    return &l->level[l->nlevels - 1];
}

/* Between one thread and all cores: linear in the thread count. */
static double interp(double one, double all, int threads, int ncores) {
    if (threads <= 1 || ncores <= 1) return one;
    if (threads >= ncores) return all;
    return one + (all - one) * (threads - 1) / (ncores - 1);
}

double qkb_level_bw(const qkb_limits *l, const qkb_level *lv, int threads) {
    return lv ? interp(lv->bw1, lv->bwall, threads, l->ncores) : 0;
}

double qkb_peak_ops(const qkb_limits *l, qk_tier t, int int8, int threads) {
    for (int i = 0; i < l->npeaks; i++)
        if (l->peak[i].tier == t)
            return int8 ? interp(l->peak[i].i8_1, l->peak[i].i8_all, threads, l->ncores)
                        : interp(l->peak[i].f32_1, l->peak[i].f32_all, threads, l->ncores);
    return 0;
}

/* ---- printing and the command ---- */

static void fmt_bytes(char *out, size_t n, double b) {
    if (b <= 0) snprintf(out, n, "-");
    else if (b >= 1024 * MiB) snprintf(out, n, "%.1f GiB", b / (1024 * MiB));
    else if (b >= MiB) snprintf(out, n, "%.1f MiB", b / MiB);
    else snprintf(out, n, "%.0f KiB", b / KiB);
}

void qkb_limits_print(const qkb_limits *l, FILE *f) {
    if (l->emulated || qkb_emulation_get()->emulated)
        fprintf(f, "%s (%s)\n", QKB_EMULATED_LINE,
                l->emulated ? "these limits were measured on an emulated CPU" : qkb_emulation_get()->how);
    char top[32];
    fmt_bytes(top, sizeof top, l->npoints ? l->size[l->npoints - 1] : 0);
    fprintf(f, "read bandwidth (read loop: %s; %d-point sweep 4 KiB .. %s)\n", l->read_tier, l->npoints, top);
    fprintf(f, "  %-5s %10s %12s %12s   %s\n", "level", "size", "1 thread", l->ncores > 1 ? "all cores" : "", "hwloc reports");
    for (int i = 0; i < l->nlevels; i++) {
        const qkb_level *v = &l->level[i];
        char s[32], h[64];
        fmt_bytes(s, sizeof s, v->size);
        fmt_bytes(h, sizeof h, v->hwloc_size);
        if (v->from > 0) {
            char fr[32];
            fmt_bytes(fr, sizeof fr, v->from);
            snprintf(h, sizeof h, "working sets >= %s", fr);
        }
        fprintf(f, "  %-5s %10s %8.1f GB/s %7.1f GB/s   %s%s\n", v->name, s, v->bw1 * 1e-9, v->bwall * 1e-9,
                v->hwloc_size || v->from > 0 ? h : "", v->contradicted ? "  <- contradicted by the bandwidth curve" : "");
    }
    fprintf(f, "peaks (1 thread / %d cores)\n", l->ncores);
    fprintf(f, "  %-11s %22s  %-18s %22s  %-31s %s\n", "tier", "f32 FMA GFLOP/s", "", "int8 dot GOP/s", "",
            "at g = 32 with W8A8's rescale");
    for (int i = 0; i < l->npeaks; i++) {
        const qkb_peak *p = &l->peak[i];
        char g[48] = "-";
        if (p->i8g32_1 > 0)
            snprintf(g, sizeof g, "%.1f / %.1f (%.0f%%)", p->i8g32_1 * 1e-9, p->i8g32_all * 1e-9, 100 * p->i8g32_1 / p->i8_1);
        fprintf(f, "  %-11s %10.1f / %9.1f  %-18s %10.1f / %9.1f  %-31s %s\n", qk_tier_name(p->tier), p->f32_1 * 1e-9,
                p->f32_all * 1e-9, p->f32_insn, p->i8_1 * 1e-9, p->i8_all * 1e-9, p->i8_insn, g);
    }
}

int qk_cmd_probe(int argc, char **argv) {
    int reprobe = 0, json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: qkbench probe [--reprobe] [--quick] [--json] [--results DIR]\n"
                   "Measures this machine's limits: read bandwidth for working sets from 4 KiB to 256 MiB or\n"
                   "8x hwloc's LLC (at most 1 GiB; one thread and all cores, threads pinned), the cache levels\n"
                   "at the knees of that curve (hwloc's sizes are only a hint and are flagged when the curve\n"
                   "contradicts them; DRAM is the median over working sets >= 4x the LLC), and the\n"
                   "f32 FMA and int8 dot peaks of every tier. Takes under 30 s; the result is cached in\n"
                   "<results>/<machine>/machine.json and reused until --reprobe.\n"
                   "  --reprobe      measure again even if a cached result exists\n"
                   "  --json         print the probe as JSON instead of a table\n"
                   "  --quick        half the sweep points and shorter trials (a few seconds; for tests)\n"
                   "  --results DIR  results root (default: $QK_RESULTS or ./results)\n");
            return 0;
        } else if (!strcmp(argv[i], "--reprobe")) {
            reprobe = 1;
        } else if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (!strcmp(argv[i], "--quick")) {
            quick = 1;
        } else if (!strcmp(argv[i], "--results")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "qkbench probe: --results needs a folder\n");
                return 2;
            }
            qkb_set_results_root(argv[++i]);
        } else {
            fprintf(stderr, "qkbench probe: unknown option '%s' (see qkbench probe --help)\n", argv[i]);
            return 2;
        }
    }
    int from_cache = 0;
    const qkb_limits *l = qkb_probe_get(reprobe, 1, qkb_tty(), &from_cache);
    if (!l) return 1;
    if (json) {
        qkb_buf b = {0};
        qkw w;
        qkw_init(&w, &b);
        qkb_limits_json(&w, l);
        fputs(b.p, stdout);
        qkb_buf_free(&b);
        return 0;
    }
    char path[1200];
    cache_path(path, sizeof path);
    printf("probe of %s (%d cores): %s %s, took %.1f s\n", l->cpu, l->ncores, from_cache ? "cached in" : "measured now, saved to",
           path, l->seconds);
    if (from_cache) printf("  (from %s%s; qkbench probe --reprobe measures again)\n", l->date, l->quick ? ", a --quick probe" : "");
    qkb_limits_print(l, stdout);
    return 0;
}
