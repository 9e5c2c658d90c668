/* qkbench bench: every case of a suite (from the family lists) timed by
 * Google Benchmark through the C shim; rows with % of roofline written to a
 * results folder after every completed case; progress on a terminal; Ctrl-C
 * keeps every completed row. Also the default run. */
#include "bench.h"
#include "metrics.h"

#include <errno.h>
#include <math.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accuracy.h"
#include "cases.h"
#include "commands.h"
#include "emulation.h"
#include "gbench_shim.h"
#include "machine.h"
#include "pool.h"
#include "probe.h"
#include "results.h"
#include "rows.h"
#include "shard.h"
#include "topology.h"

static volatile sig_atomic_t interrupted;

static void on_signal(int sig) {
    if (interrupted) { /* a second Ctrl-C: stop now */
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    interrupted = 1;
}

/* ---- options ---- */

typedef struct opts {
    qkb_plan_opts plan;
    const char *filter;
    const char *out;
    int reps;
    double min_time;
    int no_save, list, reprobe, quiet;
    char *gb_flags[64];
    int ngb;
    char command[1024];
    qkb_shard_opts shard;
    int argc;
    char **argv;
} opts;

static const struct {
    const char *name;
    size_t N, K;
} shape_presets[] = {
    {"7b", 4096, 4096}, {"7b-up", 11008, 4096}, {"7b-down", 4096, 11008}, {"8b-up", 14336, 4096}, {"8b-down", 4096, 14336}, {"head", 32000, 4096},
};

static void usage(void) {
    printf("usage: qkbench bench [options] [--benchmark_FLAG=VALUE ...]\n"
           "Times every kernel variant in the family lists (every tier this CPU runs, side by side) through\n"
           "Google Benchmark: median over repetitions and its spread, GOP/s, GB/s, bpw, and the fraction of\n"
           "roofline = rate / min(peak ops of the tier, bandwidth of the level the working set lives in x\n"
           "arithmetic intensity), with the limits from `qkbench probe` (measured once, then cached).\n\n"
           "  --suite quick|full    quick (default, under 3 minutes): quantize/dequantize 16x4096 warm and\n"
           "                        1024x4096 cold; actquant 1x4096, 64x4096; packing 4096x4096; decode gemv\n"
           "                        1x4096x4096 cold (g = 32 on 1 and all cores, g = 128 on 1); prefill gemm\n"
           "                        64x256x4096; outlier families: fwht 64x4096, the split's gemm_f32 and gemm_i8\n"
           "                        64x4096x41.\n"
           "                        full: every group size, the LLM presets for decode (cold and warm) and\n"
           "                        packing, prefill M = 16..512 on 4096x4096, 1 and all cores; every outlier\n"
           "                        family (fwht, colscale, colsplit, gemm_f32, gemm_i8) at M = 1, 64, 512\n"
           "  --filter RE           only cases whose name matches the extended regex RE; names are\n"
           "                        op/what/format/g/shape/tN/cache/kernel, e.g. 'gemv/W4A8/.*avx512'\n"
           "  --isa TIER|all        cap the tiers (default all: every usable tier side by side)\n"
           "  --threads LIST        e.g. 1,2: threads pinned one per core (hwloc); work split on the kernel's nr\n"
           "  --cache cold|warm|both  cold rotates buffer copies larger than the last-level cache; warm reuses one\n"
           "  --shape S             (repeatable) MxNxK, NxK (M = 1), or a preset: 7b (4096x4096), 7b-up\n"
           "                        (11008x4096), 7b-down (4096x11008), 8b-up (14336x4096), 8b-down (4096x14336),\n"
           "                        head (32000x4096); PRESET@M sets M (7b-up@64). Replaces the suite's shapes.\n"
           "  --group LIST          group sizes, e.g. 32,128 or K (per channel); K must be a multiple\n"
           "  --reps N              repetitions (default 5); --benchmark_repetitions=N does the same\n"
           "  --min-time S          minimum seconds per repetition (default 0.01 quick, 0.05 full)\n"
           "  --out DIR             write the results here (default <results>/<machine>/<date>-<commit>/)\n"
           "  --results DIR         results root (default $QK_RESULTS or ./results)\n"
           "  --no-save             write no files\n"
           "  --reprobe             measure the machine's limits again first\n"
           "  --list                print the case names (and why some are skipped) and exit\n"
           "  --quiet               no progress and no table (the results folder is still named)\n"
           "  --benchmark_*=VALUE   Google Benchmark's own flags (--benchmark_filter, _repetitions, _out, ...)\n"
           "%s"
           "Exit status: 0, 1 if a case failed, 2 on a usage error, 130 if interrupted (completed rows are kept).\n",
           qkb_shard_help);
}

static int parse_list_int(const char *s, int *out, int max, int lo, int hi) {
    int n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < lo || v > hi || n == max) return -1;
        out[n++] = (int)v;
        p = end;
        if (*p == ',') p++;
        else if (*p) return -1;
    }
    return n;
}

static int parse_size(const char **p, size_t *v) {
    char *end;
    errno = 0;
    if (**p < '0' || **p > '9') return -1;
    unsigned long long x = strtoull(*p, &end, 10);
    if (end == *p || errno || x == 0 || x > (1ull << 31)) return -1;
    *v = (size_t)x;
    *p = end;
    return 0;
}

static int parse_shape(const char *s, qkb_shape *sh) {
    for (size_t i = 0; i < sizeof shape_presets / sizeof shape_presets[0]; i++) {
        size_t n = strlen(shape_presets[i].name);
        if (!strncmp(s, shape_presets[i].name, n) && (s[n] == 0 || s[n] == '@')) {
            sh->M = 1, sh->N = shape_presets[i].N, sh->K = shape_presets[i].K;
            if (s[n] == '@') {
                const char *p = s + n + 1;
                if (parse_size(&p, &sh->M) || *p) return -1;
            }
            return 0;
        }
    }
    size_t v[3];
    int n = 0;
    const char *p = s;
    while (n < 3) {
        if (parse_size(&p, &v[n])) return -1;
        n++;
        if (*p == 'x' || *p == 'X') p++;
        else break;
    }
    if (*p || n < 2) return -1;
    if (n == 2) sh->M = 1, sh->N = v[0], sh->K = v[1];
    else sh->M = v[0], sh->N = v[1], sh->K = v[2];
    return 0;
}

static int parse_groups(const char *s, size_t *out, int max) {
    int n = 0;
    const char *p = s;
    while (*p) {
        if (n == max - 1) return -1;
        if (*p == 'K' || *p == 'k') {
            out[n++] = QKB_GROUP_K;
            p++;
        } else if (parse_size(&p, &out[n++])) {
            return -1;
        }
        if (*p == ',') p++;
        else if (*p) return -1;
    }
    out[n] = 0;
    return n;
}

#define BAD(...)                                              \
    do {                                                      \
        fprintf(stderr, "qkbench bench: " __VA_ARGS__);       \
        fprintf(stderr, " (see qkbench bench --help)\n");     \
        return 2;                                             \
    } while (0)

static int parse(int argc, char **argv, opts *o) {
    memset(o, 0, sizeof *o);
    o->plan.max_tier = QK_TIER_COUNT;
    o->reps = 5;
    o->min_time = 0; /* the suite's: 0.01 s quick, 0.05 s full */
    o->argc = argc, o->argv = argv;
    size_t cl = 0;
    cl += (size_t)snprintf(o->command, sizeof o->command, "qkbench");
    for (int i = 0; i < argc && cl < sizeof o->command; i++)
        cl += (size_t)snprintf(o->command + cl, sizeof o->command - cl, " %s", argv[i]);
    int nshape = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (qkb_gb_is_flag(a)) {
            if (o->ngb == 64) BAD("too many Google Benchmark flags");
            o->gb_flags[o->ngb++] = argv[i];
            continue;
        }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage();
            return 1;
        }
        if (!strcmp(a, "--no-save")) { o->no_save = 1; continue; }
        if (!strcmp(a, "--list")) { o->list = 1; continue; }
        if (!strcmp(a, "--reprobe")) { o->reprobe = 1; continue; }
        if (!strcmp(a, "--quiet")) { o->quiet = 1; continue; }
        int took = qkb_shard_take(&o->shard, "bench", argc, argv, &i);
        if (took < 0) return 2;
        if (took) continue;
        static const char *valued[] = {"--suite", "--filter", "--isa", "--threads", "--cache", "--shape", "--group",
                                       "--reps", "--min-time", "--out", "--results", NULL};
        int known = 0;
        for (int k = 0; valued[k]; k++) known |= !strcmp(a, valued[k]);
        if (!known) BAD("unknown option '%s'", a);
        if (!v) BAD("%s needs a value", a);
        i++;
        if (!strcmp(a, "--suite")) {
            if (!strcmp(v, "quick")) o->plan.full = 0;
            else if (!strcmp(v, "full")) o->plan.full = 1;
            else BAD("--suite '%s': expected quick or full", v);
        } else if (!strcmp(a, "--filter")) {
            o->filter = v;
        } else if (!strcmp(a, "--isa")) {
            if (strcmp(v, "all") != 0) {
                qk_tier t;
                if (qk_tier_parse(v, &t) != QK_OK) BAD("--isa '%s': %s", v, qk_last_error());
                o->plan.max_tier = t;
                qk_set_tier_cap(t);
            }
        } else if (!strcmp(a, "--threads")) {
            int n = parse_list_int(v, o->plan.threads, 7, 1, 1 << 20);
            if (n <= 0) BAD("--threads '%s': expected a list of thread counts like 1,2", v);
            for (int k = 0; k < n; k++)
                if (o->plan.threads[k] > qkb_ncores())
                    BAD("--threads %d: this machine has %d cores (threads are pinned one per core)", o->plan.threads[k], qkb_ncores());
        } else if (!strcmp(a, "--cache")) {
            if (!strcmp(v, "warm")) o->plan.cache = 1;
            else if (!strcmp(v, "cold")) o->plan.cache = 2;
            else if (!strcmp(v, "both")) o->plan.cache = 3;
            else BAD("--cache '%s': expected cold, warm or both", v);
        } else if (!strcmp(a, "--shape")) {
            if (nshape == 15) BAD("too many --shape");
            if (parse_shape(v, &o->plan.shapes[nshape])) BAD("--shape '%s': expected MxNxK, NxK or a preset (7b, 7b-up, ...)", v);
            nshape++;
        } else if (!strcmp(a, "--group")) {
            if (parse_groups(v, o->plan.groups, 8) <= 0) BAD("--group '%s': expected group sizes like 32,128 or K", v);
        } else if (!strcmp(a, "--reps")) {
            int r;
            if (parse_list_int(v, &r, 1, 1, 1000) != 1) BAD("--reps '%s': expected a count from 1 to 1000", v);
            o->reps = r;
        } else if (!strcmp(a, "--min-time")) {
            char *end;
            o->min_time = strtod(v, &end);
            if (*end || !(o->min_time > 0 && o->min_time <= 60)) BAD("--min-time '%s': expected seconds in (0, 60]", v);
        } else if (!strcmp(a, "--out")) {
            o->out = v;
        } else if (!strcmp(a, "--results")) {
            qkb_set_results_root(v);
        }
    }
    qkb_shard_opts_finish(&o->shard);
    return 0;
}

/* ---- the run ---- */

typedef struct crun {
    double times[256];
    int ntimes;
    int64_t iterations;
    int done, failed;
    double est_s, t_start;
} crun;

typedef struct bench_run {
    opts *o;
    qkb_cases cases;
    crun *cr;
    const qkb_limits *lim;
    double llc;
    char dir[1200];
    int save;
    qkb_row *rows;
    size_t nrows;
    qkb_skip *skips;
    size_t nskip;
    size_t nfailed;
    qkb_run_meta meta;
    size_t next_hint;
    qkb_case *current;
    int progress;
    double t0, est_total, est_done;
    size_t cases_done, cases_total;
    double ratio[4096]; /* actual / estimated seconds of completed cases */
    size_t nratio;
    qkb_shard_run shard; /* --shard: shard.json */
} bench_run;

static bench_run *g_run;

static void add_skip(bench_run *b, const char *name, const char *reason) {
    qkb_skip *s = realloc(b->skips, (b->nskip + 1) * sizeof *s);
    if (!s) return;
    b->skips = s;
    snprintf(s[b->nskip].name, sizeof s[b->nskip].name, "%s", name);
    snprintf(s[b->nskip].reason, sizeof s[b->nskip].reason, "%s", reason);
    b->nskip++;
}

static void save(bench_run *b) {
    qkb_rows_speedups(b->rows, b->nrows);
    if (!b->save) return;
    char err[400];
    if (qkb_rows_write(b->dir, &b->meta, b->rows, b->nrows, b->skips, b->nskip, err, sizeof err))
        fprintf(stderr, "qkbench bench: %s\n", err);
}

static void fmt_dur(char *out, size_t n, double s) {
    if (s < 0) s = 0;
    snprintf(out, n, "%d:%02d", (int)(s / 60), (int)fmod(s, 60));
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Time left: the estimates of the cases still to run, scaled by the median
 * actual/estimated ratio of the cases done so far. */
static void progress(bench_run *b, const qkb_case *c) {
    if (!b->progress) return;
    double el = qkb_seconds() - b->t0, scale = 1;
    if (b->nratio >= 3) {
        double t[4096];
        memcpy(t, b->ratio, b->nratio * sizeof *t);
        qsort(t, b->nratio, sizeof *t, cmp_d);
        scale = t[b->nratio / 2];
    }
    double left = (b->est_total - b->est_done) * scale;
    char e[16], l[16];
    fmt_dur(e, sizeof e, el);
    fmt_dur(l, sizeof l, left);
    fprintf(stderr, "\r\033[K[%zu/%zu] %s elapsed, ~%s left  %.70s", b->cases_done + 1, b->cases_total, e, l, c ? c->name : "");
    fflush(stderr);
}

/* Estimated seconds of a case: repetitions × max(min time, a guess of one call). */
static double estimate(const opts *o, const qkb_case *c) {
    double guess = c->roof_s > 0 ? c->roof_s / (c->tier == QK_TIER_SCALAR ? 0.05 : 0.3) : 1e-3;
    double per = guess > o->min_time ? guess : o->min_time;
    return (o->reps + 1.5) * per + 0.02 + c->ws * 2e-10;
}

/* The probe's limits; on an emulated CPU only a cached probe (or --reprobe): a
 * probe there takes many minutes and measures the emulator, not the CPU. */
static const qkb_limits *run_limits(int reprobe, int save, int progress, int *cached) {
    if (!qkb_emulation_get()->emulated || reprobe) return qkb_probe_get(reprobe, save, progress, cached);
    *cached = 1;
    const qkb_limits *l = qkb_probe_cached();
    if (!l)
        fprintf(stderr, "qkbench: %s: no probe is run (it would take minutes and measure the emulator; --reprobe runs it), "
                        "so roofline fractions are left at 0\n", QKB_EMULATED_LINE);
    return l;
}

/* A run with cold cases measures DRAM read bandwidth itself, before (when = 0) and
 * after (1) its cases, with 1 thread and with the most threads of its cold cases:
 * on a shared machine the cached probe can be minutes and tens of GB/s away. */
static void dram_now(bench_run *b, int when) {
    int maxt = 0;
    for (size_t i = 0; i < b->cases.n; i++)
        if (b->cases.v[i].cold && !b->cases.v[i].skip[0] && b->cases.v[i].threads > maxt) maxt = b->cases.v[i].threads;
    if (!maxt || !b->lim || qkb_emulation_get()->emulated || qkb_gb_list_only()) return;
    if (b->progress) fprintf(stderr, "\r\033[Kmeasuring DRAM read bandwidth %s the cases", when ? "after" : "before");
    b->meta.dram_threads = maxt;
    b->meta.dram_gbps[when][0] = qkb_probe_dram_now(b->lim, 1) * 1e-9;
    b->meta.dram_gbps[when][1] = maxt > 1 ? qkb_probe_dram_now(b->lim, maxt) * 1e-9 : b->meta.dram_gbps[when][0];
    if (b->progress) fprintf(stderr, "\r\033[K");
}

/* A run with warm cases measures one core's int8 dot and f32 FMA peaks and L2 read
 * itself, before (when = 0) and after (1) its cases: on a shared machine the core
 * can run a third below the cached probe for minutes, which the warm rows' roofline
 * fractions (against the probe) would otherwise blame on the kernels. */
static void core_now(bench_run *b, int when) {
    int warm = 0;
    for (size_t i = 0; i < b->cases.n; i++) warm |= !b->cases.v[i].cold && !b->cases.v[i].skip[0];
    if (!warm || !b->lim || qkb_emulation_get()->emulated || qkb_gb_list_only()) return;
    if (b->progress) fprintf(stderr, "\r\033[Kmeasuring one core's peaks and L2 read %s the cases", when ? "after" : "before");
    qkb_core_now c;
    if (qkb_probe_core_now(b->lim, &c) == 0 && c.tier[0]) {
        snprintf(b->meta.core_tier, sizeof b->meta.core_tier, "%s", c.tier);
        b->meta.core_now[when][0] = c.i8 * 1e-9, b->meta.core_now[when][1] = c.f32 * 1e-9, b->meta.core_now[when][2] = c.l2 * 1e-9;
    }
    if (b->progress) fprintf(stderr, "\r\033[K");
}

/* Multi-thread rows on a busy machine: the threads are pinned one per core, and a call
 * ends when its last slice does, so another process on any core stretches the whole
 * call (2-thread gemv repetitions of 0.2 ms and of 10-30 ms in one run at load 8 on 2 cores). */
static void warn_busy(const qkb_cases *cs, int quiet) {
    int maxt = 1;
    for (size_t i = 0; i < cs->n; i++) maxt = cs->v[i].threads > maxt ? cs->v[i].threads : maxt;
    double load = 0;
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f) return;
    int ok = fscanf(f, "%lf", &load) == 1;
    fclose(f);
    if (ok && !quiet && maxt > 1 && load > 0.5 * qkb_ncores())
        fprintf(stderr, "qkbench bench: warning: load average %.1f on %d cores; the %d-thread rows time the other "
                        "processes too (each call waits for its slowest pinned thread)\n", load, qkb_ncores(), maxt);
}

static void bench_fn(qkb_gb_state *st, void *arg) {
    qkb_case *c = arg;
    bench_run *b = g_run;
    char err[300];
    if (interrupted) {
        qkb_gb_skip(st, "interrupted");
        return;
    }
    if (c->skip[0]) {
        qkb_gb_skip(st, c->skip);
        return;
    }
    if (b->current != c) {
        if (b->current) qkb_case_teardown(b->current);
        b->current = c;
        b->cr[c - b->cases.v].t_start = qkb_seconds();
        progress(b, c);
    }
    if (qkb_case_setup(c, b->llc, err, sizeof err) || qkb_case_call(c, err, sizeof err)) {
        qkb_gb_skip(st, err);
        return;
    }
    if (c->batch == 0) {
        /* One Google Benchmark iteration is a batch of calls lasting about min_time/2:
         * its estimate of the iteration count (made once, on the first repetition)
         * then cannot collapse to a single call when that call is preempted. */
        double best = 1e30;
        for (int i = 0; i < 3; i++) {
            double t0 = qkb_seconds();
            if (qkb_case_call(c, err, sizeof err)) {
                qkb_gb_skip(st, err);
                return;
            }
            double dt = qkb_seconds() - t0;
            best = dt < best ? dt : best;
        }
        double k = floor(b->o->min_time / 2 / (best > 1e-9 ? best : 1e-9));
        c->batch = k < 1 ? 1 : k > 100000 ? 100000 : (int)k;
    }
    while (qkb_gb_keep_running(st)) {
        for (int j = 0; j < c->batch; j++)
            if (qkb_case_call(c, err, sizeof err)) {
                qkb_gb_skip(st, err);
                break;
            }
        if (interrupted) {
            qkb_gb_skip(st, "interrupted");
            break;
        }
    }
    char label[200];
    snprintf(label, sizeof label, "kernel=%s tier=%s level=%s%s", c->kernel_name, qk_tier_name(c->tier), c->level,
             qkb_emulation_get()->emulated ? " EMULATED" : "");
    qkb_gb_label(st, label);
    qkb_gb_counter(st, "GOPS", c->ops * c->batch * 1e-9, QKB_GB_ITER_RATE);
    qkb_gb_counter(st, "GBps", c->bytes * c->batch * 1e-9, QKB_GB_ITER_RATE);
    qkb_gb_counter(st, "roofline", c->roof_s * c->batch, QKB_GB_ITER_RATE);
    qkb_gb_counter(st, "bpw", c->bpw, QKB_GB_PLAIN);
    qkb_gb_counter(st, "threads", c->threads, QKB_GB_PLAIN);
    qkb_gb_counter(st, "calls_per_iteration", c->batch, QKB_GB_PLAIN);
}

static size_t find_case(bench_run *b, const char *name) {
    for (size_t k = 0; k < b->cases.n; k++) {
        size_t i = (b->next_hint + k) % b->cases.n;
        if (!strcmp(b->cases.v[i].name, name)) {
            b->next_hint = i;
            return i;
        }
    }
    return (size_t)-1;
}

/* n pairs of a call's rate and a reference rate beside it into a row's pairs (units
 * of 1e9), its median reference and its median ratio. */
static void pairs_into(const double *kb, double *ref, int n, double (*out)[2], int *nout, double *of, double *ref_med) {
    double ratio[QKB_ROW_MAX_PAIRS];
    n = n < QKB_ROW_MAX_PAIRS ? n : QKB_ROW_MAX_PAIRS;
    *nout = n;
    for (int i = 0; i < n; i++) {
        out[i][0] = kb[i] * 1e-9, out[i][1] = ref[i] * 1e-9;
        ratio[i] = kb[i] / ref[i];
    }
    *of = qk_median(ratio, n);
    *ref_med = qk_median(ref, n) * 1e-9;
}

/* Cold rows: the kernel against a plain read of its buffers, pair by pair
 * (qkb_case_read_pairs), into read_pairs_gbps, read_gbps (the median read)
 * and of_read (the median ratio). DRAM on a shared machine moves by half its
 * rate within tens of milliseconds, so only reads taken right beside each
 * call say what that call could have had. Warm quantize and dequantize rows on
 * one thread: the same against a read of their own cached buffers (the core
 * that runs the conversion runs that read too, so a slow spell of either shows).
 * Cold conversions also: against a plain stream of their own reads and writes
 * (stream_pairs_gbps, stream_gbps, of_stream).
 * Warm compute-bound matmul rows on one thread: the kernel against bursts of the
 * probe's peak loop of its tier (qkb_case_peak_pairs), into peak_pairs_gops,
 * peak_now_gops and of_peak: a core of a shared machine runs a third slow for
 * minutes at a time, which the roofline (against the probe) cannot tell from a
 * slow kernel. */
enum { READ_PAIRS = 21, PEAK_PAIRS = 11 };
static void row_pairs(qkb_case *c, qkb_row *row) {
    double kb[READ_PAIRS], rb[READ_PAIRS], sb[READ_PAIRS];
    char err[300];
    int n = qkb_case_read_pairs(c, READ_PAIRS, 0.5, kb, rb, sb, err, sizeof err);
    if (n > 0) {
        pairs_into(kb, rb, n, row->pairs, &row->npairs, &row->of_read, &row->read_gbps);
        if (sb[0] > 0) pairs_into(kb, sb, n, row->sp, &row->nsp, &row->of_stream, &row->stream_gbps);
    } else if (!c->cold && (n = qkb_case_peak_pairs(c, PEAK_PAIRS, 0.2, kb, rb, err, sizeof err)) > 0)
        pairs_into(kb, rb, n, row->pk, &row->npk, &row->of_peak, &row->peak_now_gops);
}

static void on_run(const qkb_gb_run *run, void *ctx) {
    bench_run *b = ctx;
    if (run->aggregate[0]) return; /* medians and spreads are computed from the repetitions */
    size_t i = find_case(b, run->name);
    if (i == (size_t)-1) return;
    qkb_case *c = &b->cases.v[i];
    crun *r = &b->cr[i];
    if (r->done) return;
    if (run->error) {
        r->done = 1;
        b->cases_done++;
        b->est_done += r->est_s;
        if (c->skip[0]) add_skip(b, c->name, c->skip);
        else if (!strcmp(run->error_message, "interrupted")) add_skip(b, c->name, "not run: interrupted");
        else {
            r->failed = 1;
            b->nfailed++;
            char why[300];
            snprintf(why, sizeof why, "failed: %s", run->error_message);
            add_skip(b, c->name, why);
            if (b->progress) fprintf(stderr, "\r\033[K");
            fprintf(stderr, "qkbench bench: %s %s\n", c->name, why);
        }
        save(b);
        if (c->skip[0] || r->failed) qkb_shard_case(&b->shard, c->name, !r->failed);
        return;
    }
    int batch = c->batch > 0 ? c->batch : 1;
    if (r->ntimes < 256) r->times[r->ntimes++] = run->real_s / batch;
    r->iterations = run->iterations * batch;
    if (r->ntimes < run->repetitions) return;
    r->done = 1;
    b->cases_done++;
    b->est_done += r->est_s;
    if (r->t_start > 0 && r->est_s > 0 && b->nratio < 4096) b->ratio[b->nratio++] = (qkb_seconds() - r->t_start) / r->est_s;
    qkb_row *rows = realloc(b->rows, (b->nrows + 1) * sizeof *rows);
    if (!rows) return;
    b->rows = rows;
    qkb_row *row = &b->rows[b->nrows++];
    qkb_row_from_case(row, c, r->times, r->ntimes, r->iterations);
    if (!qkb_emulation_get()->emulated) row_pairs(c, row); /* the case is still set up */
    save(b);
    qkb_shard_case(&b->shard, c->name, 1);
}

static void free_names(char **v, size_t n) {
    for (size_t i = 0; v && i < n; i++) free(v[i]);
    free(v);
}

/* Expected seconds of a case for --shard: like estimate(), but from fixed
 * nominal limits (20 GB/s, 100 GOP/s per thread; the scalar tier 1 GOP/s)
 * instead of the probe's, so that every node of a machine type (with its own,
 * slightly different probe) assigns the same cases to the same shards. */
static double shard_cost(const opts *o, const qkb_case *c) {
    double t = c->threads > 0 ? c->threads : 1;
    double mem = c->bytes / (20e9 * t), ops = c->ops / ((c->tier == QK_TIER_SCALAR ? 1e9 : 100e9) * t);
    double call = mem > ops ? mem : ops;
    if (c->skip[0]) return 1e-3;
    double per = call > o->min_time ? call : o->min_time;
    return (o->reps + 1.5) * per + 0.02 + c->ws * 2e-10;
}

/* Run a suite; quiet_table: leave the compact table to the caller (the default
 * run prints it after the accuracy summary); the run folder goes to run_dir_out. */
static int bench_main(opts *o, const char *suite_name, int quiet_table, char *run_dir_out, size_t run_dir_n) {
    bench_run b;
    memset(&b, 0, sizeof b);
    b.o = o;
    char err[400];
    /* Google Benchmark: our defaults first, the user's flags after them (the later wins) */
    char f_reps[64], f_min[64];
    snprintf(f_reps, sizeof f_reps, "--benchmark_repetitions=%d", o->reps);
    snprintf(f_min, sizeof f_min, "--benchmark_min_time=%g", o->min_time);
    if (o->min_time <= 0) o->min_time = o->plan.full ? 0.05 : 0.01;
    char *flags[70];
    int nf = 0;
    flags[nf++] = f_reps;
    flags[nf++] = f_min;
    for (int i = 0; i < o->ngb; i++) flags[nf++] = o->gb_flags[i];
    if (qkb_gb_init(nf, flags)) return 2;
    if (qkb_cases_build(&b.cases, &o->plan, err, sizeof err)) {
        fprintf(stderr, "qkbench bench: %s\n", err);
        return 2;
    }
    if (o->filter) {
        regex_t re;
        int rc = regcomp(&re, o->filter, REG_EXTENDED | REG_NOSUB);
        if (rc) {
            regerror(rc, &re, err, sizeof err);
            fprintf(stderr, "qkbench bench: --filter '%s': %s\n", o->filter, err);
            qkb_cases_free(&b.cases);
            return 2;
        }
        size_t k = 0;
        for (size_t i = 0; i < b.cases.n; i++)
            if (regexec(&re, b.cases.v[i].name, 0, NULL, 0) == 0) b.cases.v[k++] = b.cases.v[i];
        b.cases.n = k;
        regfree(&re);
    }
    /* --shard I/N: the full list's names (for shard.json) and this shard's cases */
    char **all_names = NULL;
    int *assign = NULL;
    size_t nall = b.cases.n;
    if (o->shard.of) {
        all_names = calloc(nall + 1, sizeof *all_names);
        assign = calloc(nall + 1, sizeof *assign);
        double *cost = calloc(nall + 1, sizeof *cost);
        int oom = !all_names || !assign || !cost;
        for (size_t i = 0; i < nall && !oom; i++) {
            oom = !(all_names[i] = strdup(b.cases.v[i].name));
            cost[i] = shard_cost(o, &b.cases.v[i]);
        }
        if (oom) {
            fprintf(stderr, "qkbench bench: out of memory\n");
            free(cost);
            free_names(all_names, nall), free(assign);
            qkb_cases_free(&b.cases);
            return 2;
        }
        qkb_shard_assign((const char *const *)all_names, cost, nall, o->shard.of, assign);
        free(cost);
        size_t k = 0;
        for (size_t i = 0; i < nall; i++)
            if (assign[i] == o->shard.index) b.cases.v[k++] = b.cases.v[i];
        b.cases.n = k;
    }
    if (o->list) {
        free_names(all_names, nall), free(assign);
        for (size_t i = 0; i < b.cases.n; i++)
            printf("%s%s%s\n", b.cases.v[i].name, b.cases.v[i].skip[0] ? "  [skip: " : "", b.cases.v[i].skip[0] ? b.cases.v[i].skip : "");
        qkb_cases_free(&b.cases);
        return 0;
    }
    if (nall == 0) {
        fprintf(stderr, "qkbench bench: no case matches%s%s\n", o->filter ? " --filter " : "", o->filter ? o->filter : "");
        qkb_cases_free(&b.cases);
        return 2;
    }
    b.progress = qkb_tty() && !o->quiet;
    int cached = 0;
    b.lim = run_limits(o->reprobe, !o->no_save, b.progress, &cached);
    if (!b.lim && !qkb_emulation_get()->emulated) fprintf(stderr, "qkbench bench: warning: no probe limits; roofline fractions are left at 0\n");
    b.llc = b.lim ? qkb_limits_llc(b.lim) : 0;
    b.cr = calloc(b.cases.n, sizeof *b.cr);
    for (size_t i = 0; i < b.cases.n; i++) {
        qkb_case_roofline(&b.cases.v[i], b.lim);
        b.cr[i].est_s = b.cases.v[i].skip[0] ? 0 : estimate(o, &b.cases.v[i]);
        b.est_total += b.cr[i].est_s;
    }
    b.cases_total = b.cases.n;
    warn_busy(&b.cases, o->quiet);

    b.save = !o->no_save && !qkb_gb_list_only();
    if (b.save) {
        if (o->out) {
            snprintf(b.dir, sizeof b.dir, "%s", o->out);
            if (qkb_mkdirs(b.dir, err, sizeof err)) {
                fprintf(stderr, "qkbench bench: %s\n", err);
                return 2;
            }
        } else if (o->shard.of ? qkb_shard_make_dir(&o->shard, b.dir, sizeof b.dir, err, sizeof err)
                               : qkb_make_run_dir(b.dir, sizeof b.dir, err, sizeof err)) {
            fprintf(stderr, "qkbench bench: %s\n", err);
            return 2;
        }
        char path[1300];
        qkb_path(path, sizeof path, b.dir, "machine.json");
        if (qkb_machine_write(path, b.lim, err, sizeof err)) fprintf(stderr, "qkbench bench: %s\n", err);
        if (o->shard.of && qkb_shard_begin(&b.shard, b.dir, "bench", o->argc, o->argv, &o->shard, (const char *const *)all_names,
                                           assign, nall, err, sizeof err)) {
            fprintf(stderr, "qkbench bench: %s\n", err);
            free_names(all_names, nall), free(assign);
            return 2;
        }
    }
    free_names(all_names, nall), free(assign);
    if (run_dir_out) snprintf(run_dir_out, run_dir_n, "%s", b.save ? b.dir : "");
    snprintf(b.meta.machine, sizeof b.meta.machine, "%s", qkb_machine_name());
    snprintf(b.meta.commit, sizeof b.meta.commit, "%s", qkb_commit());
    qkb_now(NULL, 0, b.meta.date, sizeof b.meta.date);
    snprintf(b.meta.command, sizeof b.meta.command, "%s", o->command);
    snprintf(b.meta.suite, sizeof b.meta.suite, "%s", suite_name);

    qkb_gb_context("qkbench_machine", qkb_machine_name());
    qkb_gb_context("qkbench_commit", qkb_commit());
    qkb_gb_context("qkbench_suite", suite_name);
    qkb_gb_context("qkbench_emulated", qkb_emulation_get()->emulated ? "true" : "false");
    for (size_t i = 0; i < b.cases.n; i++) qkb_gb_register(b.cases.v[i].name, bench_fn, &b.cases.v[i]);

    if (b.progress) {
        char l[16];
        fmt_dur(l, sizeof l, b.est_total);
        fprintf(stderr, "%s suite: %zu cases, about %s%s%s\n", suite_name, b.cases.n, l, b.save ? "; results in " : "", b.save ? b.dir : "");
    }
    g_run = &b;
    interrupted = 0;
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    dram_now(&b, 0);
    core_now(&b, 0);
    b.t0 = qkb_seconds();
    char gbtmp[1400], gbpath[1300];
    qkb_path(gbpath, sizeof gbpath, b.dir, "gbench.json");
    snprintf(gbtmp, sizeof gbtmp, "%s.tmp.%ld", gbpath, (long)getpid());
    if (b.cases.n) qkb_gb_run_all(b.save ? gbtmp : NULL, on_run, &b); /* an empty shard runs nothing */
    if (b.current) qkb_case_teardown(b.current);
    qkb_cases_release_cache();
    qkb_unpin_self();
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (b.progress) fprintf(stderr, "\r\033[K");
    if (b.save && access(gbtmp, F_OK) == 0 && rename(gbtmp, gbpath) != 0) fprintf(stderr, "qkbench bench: cannot write %s\n", gbpath);
    /* cases Google Benchmark never reported (filtered out by --benchmark_filter, or interrupted before) */
    for (size_t i = 0; i < b.cases.n; i++)
        if (!b.cr[i].done && b.cases.v[i].skip[0]) {
            add_skip(&b, b.cases.v[i].name, b.cases.v[i].skip);
            if (b.shard.path[0])
                for (size_t k = 0; k < b.shard.ncases; k++)
                    if (!strcmp(b.shard.cases[k], b.cases.v[i].name)) b.shard.state[k] = 1;
        }
    b.meta.interrupted = interrupted != 0;
    b.meta.complete = !interrupted;
    if (!interrupted) dram_now(&b, 1), core_now(&b, 1);
    save(&b);
    if (b.save) {
        if (qkb_summary_write(b.dir, &b.meta, b.lim, b.rows, b.nrows, b.skips, b.nskip, NULL, err, sizeof err))
            fprintf(stderr, "qkbench bench: %s\n", err);
    }
    qkb_shard_end(&b.shard, !interrupted && b.nfailed == 0);
    if (!o->quiet && !quiet_table && !qkb_gb_list_only()) {
        printf("\n");
        qkb_rows_table(stdout, b.rows, b.nrows, 0);
        size_t nskip_tier = 0;
        for (size_t i = 0; i < b.nskip; i++) nskip_tier += strncmp(b.skips[i].reason, "failed", 6) != 0;
        printf("\n%zu rows%s", b.nrows, nskip_tier ? "" : "\n");
        if (nskip_tier) printf(", %zu cases skipped (the reasons are in summary.md)\n", nskip_tier);
    }
    /* also under --quiet: scripts (tools/speed_targets.sh) read the folder from it */
    if (b.save && !quiet_table && !qkb_gb_list_only()) printf("results: %s\n", b.dir);
    if (interrupted) fprintf(stderr, "qkbench bench: interrupted; the %zu completed rows are in %s\n", b.nrows, b.save ? b.dir : "(not saved)");
    free(b.rows);
    free(b.skips);
    free(b.cr);
    qkb_cases_free(&b.cases);
    g_run = NULL;
    return interrupted ? 130 : b.nfailed ? 1 : 0;
}

int qk_cmd_bench(int argc, char **argv) {
    opts o;
    int rc = parse(argc, argv, &o);
    if (rc) return rc == 1 ? 0 : rc;
    return bench_main(&o, o.plan.full ? "full" : "quick", 0, NULL, 0);
}

/* ---- the default run ---- */

int qkb_run_default(int argc, char **argv) {
    opts o;
    int rc = parse(argc, argv, &o);
    if (rc) return rc == 1 ? 0 : rc;
    size_t cl = (size_t)snprintf(o.command, sizeof o.command, "qkbench"); /* argv[0] is the program, not a command */
    for (int i = 1; i < argc && cl < sizeof o.command; i++) cl += (size_t)snprintf(o.command + cl, sizeof o.command - cl, " %s", argv[i]);
    if (o.shard.of) {
        fprintf(stderr, "qkbench: --shard and --run-id are for qkbench bench, sweep and accuracy, not the default run\n");
        return 2;
    }
    const qk_cpu_info *c = qk_cpu();
    const qk_topology *t = qk_topology_get();
    (void)c;
    printf("qkbench: %s, %d cores; tiers:", qkb_cpu_brand(), qkb_ncores());
    for (int i = 0; i < QK_TIER_COUNT; i++)
        if (qk_tier_allowed((qk_tier)i)) printf(" %s", qk_tier_name((qk_tier)i));
    printf("\n");
    if (qkb_emulation_get()->emulated) printf("%s (%s)\n", QKB_EMULATED_LINE, qkb_emulation_get()->how);
    if (t->ok) printf("hwloc: %d package(s), %d cores, %d NUMA node(s); `qkbench info` has the details\n", t->packages, t->cores, t->numa_nodes);
    int cached = 0;
    const qkb_limits *l = run_limits(o.reprobe, !o.no_save, qkb_tty(), &cached);
    if (l) {
        printf("\nmachine limits (%s):\n", cached ? "cached probe; qkbench probe --reprobe measures again" : "just measured");
        qkb_limits_print(l, stdout);
    }
    fflush(stdout);
    char dir[1200] = "";
    int brc = bench_main(&o, "quick", 1, dir, sizeof dir);
    if (brc == 2) return 2;
    char *md = NULL;
    size_t mdlen = 0;
    int arc = 0;
    if (dir[0]) {
        FILE *f = open_memstream(&md, &mdlen);
        if (!interrupted) {
            if (qkb_tty()) fprintf(stderr, "accuracy summary...\n");
            arc = qk_accuracy_summary(dir, f);
            if (qkb_tty()) fprintf(stderr, "plots...\n");
            if (qkb_report(dir, 1) == 0)
                fprintf(f, "\n## Plots\n\n![roofline](plots/roofline.png)\n\n![speed-up per tier](plots/speedup.png)\n\n"
                           "![%% of roofline per tier](plots/roofline_fraction.png)\n\n![memory-bound ops](plots/bandwidth.png)\n\n"
                           "![thread scaling](plots/threads.png)\n");
            else
                fprintf(stderr, "qkbench: no plots (qkbench report %s needs python3-matplotlib)\n", dir);
        }
        fclose(f);
        /* summary.md again, now with the accuracy and plot sections */
        qkb_run_meta m;
        qkb_row *rows = NULL;
        size_t n = 0;
        char err[400], path[1300];
        if (qkb_rows_load(dir, &m, &rows, &n, err, sizeof err) == 0) {
            qkb_skip *sk = NULL;
            size_t nsk = 0;
            qkb_path(path, sizeof path, dir, "results.json");
            qkj *root = qkj_parse_file(path, err, sizeof err);
            const qkj *s = qkj_get(root, "skipped");
            if (s && s->type == QKJ_ARR && s->n && (sk = calloc(s->n, sizeof *sk)) != NULL) {
                for (size_t i = 0; i < s->n; i++) {
                    snprintf(sk[i].name, sizeof sk[i].name, "%s", qkj_str(qkj_get(s->items[i], "name"), ""));
                    snprintf(sk[i].reason, sizeof sk[i].reason, "%s", qkj_str(qkj_get(s->items[i], "reason"), ""));
                }
                nsk = s->n;
            }
            qkj_free(root);
            if (qkb_summary_write(dir, &m, l, rows, n, sk, nsk, md, err, sizeof err)) fprintf(stderr, "qkbench: %s\n", err);
            printf("\n");
            qkb_rows_table(stdout, rows, n, 0);
            free(sk);
            free(rows);
        }
    }
    if (md && mdlen) { /* the accuracy section, without the plot links */
        char *cut = strstr(md, "\n## Plots");
        if (cut) *cut = 0;
        printf("\n%s", md);
    }
    free(md);
    if (dir[0]) printf("\nresults: %s (summary.md, results.json/.csv, gbench.json, machine.json; plots: qkbench report %s)\n", dir, dir);
    return brc ? brc : arc;
}
