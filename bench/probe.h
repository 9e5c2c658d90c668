/// The machine's own limits (DESIGN §4), measured by `qkbench probe`: read
/// bandwidth over a sweep of working-set sizes (one thread and all cores),
/// the cache levels found at the knees of that curve, and the f32 FMA and int8
/// dot peaks of every tier. The roofline of every benchmark row comes from here.
#ifndef QKB_PROBE_H
#define QKB_PROBE_H
#include <stddef.h>
#include <stdio.h>

#include "json.h"
#include "peak.h"
#include "pool.h"
#include "qk/qk.h"

#define QKB_PROBE_VERSION 2
/// DRAM means working sets at least this many times the last-level cache: the
/// probe's DRAM bandwidth is measured there, and `--cache cold` rotates at least
/// that much. Just past the knee the curve still falls for a while (a 1.5-2.5x
/// LLC set is partly served by the cache); the plateau starts later.
#define QKB_DRAM_LLC_FACTOR 4
#define QKB_MAX_POINTS 96
#define QKB_MAX_LEVELS 4

/// One memory level as measured. DRAM is always the last level.
typedef struct qkb_level {
    char name[8];       ///< "L1", "L2", "L3", "DRAM"
    double size;        ///< capacity in bytes where the curve falls (0 for DRAM)
    double from;        ///< DRAM: the smallest working set its bandwidth was measured on
    double bw1, bwall;  ///< plateau read bandwidth, bytes/s: one thread, all cores (aggregate)
    double hwloc_size;  ///< what hwloc reports for this level (0 if nothing)
    int contradicted;   ///< 1 if hwloc's size is off by more than 2x from the curve
} qkb_level;

/// Peaks of one tier, ops/s (an FMA lane is 2 flops; an int8 multiply-add is 2 ops).
typedef struct qkb_peak {
    qk_tier tier;
    double f32_1, f32_all;
    double i8_1, i8_all;
    double i8g32_1, i8g32_all; ///< the int8 dot with W8A8's per-group f32 rescale at g = 32 (0: not measured)
    char f32_insn[40], i8_insn[48];
} qkb_peak;

typedef struct qkb_limits {
    int ok;
    int version;
    int ncores;
    char cpu[64];
    char date[40];
    double seconds;     ///< how long the probe took
    int npoints;
    double size[QKB_MAX_POINTS], bw1[QKB_MAX_POINTS], bwall[QKB_MAX_POINTS];
    int nlevels;
    qkb_level level[QKB_MAX_LEVELS];
    int npeaks;
    qkb_peak peak[QK_TIER_COUNT];
    char read_tier[16]; ///< the tier whose read loop measured bandwidth
    int quick;          ///< measured with --quick (fewer points, shorter trials)
    int emulated;       ///< measured on an emulated CPU (emulation.h): the emulator's limits
} qkb_limits;

/// Measure everything (under 30 s). `progress`: print what runs on stderr.
int qkb_probe_measure(qkb_limits *out, int progress);
/// The limits for this machine: the cached machine.json of <results>/<machine>/
/// unless `reprobe` (or the cache is missing, stale or from another CPU), in
/// which case measure and, if `save`, update the cache. `from_cache` says which.
const qkb_limits *qkb_probe_get(int reprobe, int save, int progress, int *from_cache);


/// DRAM read bandwidth now (bytes/s, aggregate over `threads` pinned threads):
/// the probe's read loop, best of short trials, on working sets where the probe
/// measures DRAM (QKB_DRAM_LLC_FACTOR x the LLC of `l`). 0 if it cannot run.
double qkb_probe_dram_now(const qkb_limits *l, int threads);

/// One core's limits now (1 thread, the probe's loops, best of short trials): the
/// int8 dot and f32 FMA peaks of the best tier this CPU runs, and the read
/// bandwidth of a working set inside level "L2" of `l` (0 if `l` has none).
/// A run measures them before and after its warm cases, as it does DRAM for
/// its cold ones: on a shared machine the core can run well below its probe.
typedef struct qkb_core_now {
    char tier[16];
    double i8, f32, l2; ///< ops/s, flops/s, bytes/s (0: not measured)
} qkb_core_now;
int qkb_probe_core_now(const qkb_limits *l, qkb_core_now *out);

/// One burst (about `seconds`) of tier t's int8 dot (int8) or f32 FMA loop on the
/// calling thread: its rate now, ops/s (0 if the tier has no such loop here). The
/// first call per loop calibrates its length.
double qkb_peak_burst(qk_tier t, int int8, double seconds);

/// The probe's read loop: the best one this CPU runs (its tier's name into tier, if given).
qkb_read_fn qkb_read_best(char *tier, size_t tn);

/// A buffer to read.
typedef struct qkb_region {
    const void *p;
    size_t bytes;
} qkb_region;
/// Read bandwidth now (aggregate bytes/s) of the given buffers: one timed pass of the
/// probe's loop, nothing touched before (cold buffers stay cold). Thread t of `pool`
/// (NULL: the calling thread alone) reads the t-th share of every region (8 regions at
/// most). 0 if it cannot run.
double qkb_read_regions_once(qkb_pool *pool, const qkb_region *r, size_t n);
/// The plain stream of a call's own traffic now (aggregate bytes/s, read and
/// written): one timed pass that reads the `in` regions with the probe's loop and
/// writes data (never zero lines) over the `out` regions with the tier's streaming write
/// (non-temporal on x86), in turn: steps of about 16 KiB of writes, each after its share
/// of the reads, as a conversion interleaves them. Thread t takes the t-th share of each
/// region (8 regions at most in all). It overwrites `out`. 0 if it cannot run.
double qkb_stream_regions_once(qkb_pool *pool, const qkb_region *in, size_t nin, const qkb_region *out, size_t nout);

/// Writes back and drops every cache line of the regions from every cache level
/// (x86 clflush, Arm dc civac; nothing elsewhere), so that what a reference pass
/// read beside a cold call cannot be found in cache by the calls after it.
void qkb_evict_regions(const qkb_region *r, size_t n);

/// The last-level cache size the cold rotation and the DRAM figure are based on:
/// the largest measured cache level, or hwloc's size for it when larger and not
/// contradicted by the curve (0 if the curve shows no cache level).
double qkb_limits_llc(const qkb_limits *l);

/// The cached limits of <results>/<machine>/machine.json, or NULL (never measures).
const qkb_limits *qkb_probe_cached(void);

/// The "probe" object of machine.json, and its reader.
void qkb_limits_json(qkw *w, const qkb_limits *l);
int qkb_limits_from_json(const qkj *probe, qkb_limits *out);

/// The level a per-thread working set of `ws` bytes lives in (DRAM when `cold`).
const qkb_level *qkb_level_for(const qkb_limits *l, double ws, int cold);
/// Read bandwidth of level `lv` with `threads` threads (bytes/s).
double qkb_level_bw(const qkb_limits *l, const qkb_level *lv, int threads);
/// Peak ops/s of tier t with `threads` threads; int8 selects the int8-dot peak.
double qkb_peak_ops(const qkb_limits *l, qk_tier t, int int8, int threads);

/// Print the limits as a table.
void qkb_limits_print(const qkb_limits *l, FILE *f);
#endif
