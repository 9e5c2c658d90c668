/// Benchmark rows and the files they are written to (DESIGN §6):
/// results.json, results.csv and summary.md in a run folder. The fields of a
/// row (results.json "rows"[i], one CSV column each, documented in
/// bench/README.md):
///
///   name        op/what/format/g/shape/threads/cache/kernel (unique; what --filter matches)
///   op          quantize | dequantize | actquant | pack | gemv (M = 1) | gemm
///   what        the compute mode (W4A8, ...) for pack/gemv/gemm; the format or activation rule otherwise
///   kernel, tier  the variant from the family list and its ISA tier
///   format, group, scales   weight format, group size (K = per channel), scale type (f32/f16)
///   M, N, K     shape (quantize/dequantize/pack: N rows of K; actquant: M rows of K)
///   threads, cache   pinned threads; "cold" (rotated buffers larger than the LLC) or "warm"
///   reps, iterations   repetitions (Google Benchmark) and iterations in each
///   median_s, mean_s, min_s, max_s, stddev_s, cv   time per call over the repetitions
///   spread      (max - min) / median over the repetitions
///   times_s     every repetition's time per call (results.json only)
///   ops, bytes  per call: 2·M·N·K for matmuls (elements otherwise); bytes read and written
///   gops, gbps  ops/median and bytes/median, in 1e9 per second
///   bpw         bits per weight (actquant: bits per activation)
///   ai          arithmetic intensity, ops per byte
///   level       memory level the working set lives in (L1, L2, L3, DRAM; cold: DRAM)
///   bw_gbps, peak_gops  the probe's bandwidth of that level and the tier's peak (matmuls)
///   roofline_s  min time the limits allow: max(ops/peak, bytes/bandwidth)
///   roofline    fraction of roofline = roofline_s / median_s
///   bound       which limit sets the roofline: compute or memory
///   speedup_vs_scalar   median of the scalar variant of the same row / this median (0 if none)
///   read_pairs_gbps  cold rows, and warm quantize/dequantize rows on 1 thread (results.json only):
///               after the repetitions, [kernel, read] GB/s of alternating single calls and single
///               plain-read passes (the probe's loop, its threads) over the row's own buffers (cold:
///               rotated, each pair a few milliseconds apart; warm: its one cached copy)
///   read_gbps   the median read of those pairs (0: not measured)
///   of_read     the median over the pairs of kernel / read: the fraction of what a plain read got from
///               DRAM (cold) or from the cache level of the buffers (warm) at the same moment (on a
///               shared machine DRAM moves within tens of milliseconds, a core slows for minutes)
///   stream_pairs_gbps  cold quantize and dequantize rows (results.json only): the same calls, each
///               also beside one plain stream of the traffic of the copy after: a read of what the call
///               reads and the tier's streaming write (x86: non-temporal) of data over what it writes, in turn, in GB/s
///               read and written. A dequantize writes 8 bytes of f32 for each byte or two it reads, and
///               DRAM does not take writes at the rate of reads (here the stream ran 77-93% of the read beside the same calls)
///   stream_gbps  the median stream of those pairs (0: not measured)
///   of_stream   the median over the pairs of kernel / stream: the fraction of what DRAM gave the
///               call's own mix of reads and writes at that moment (the cold conversions' target, §7)
///   peak_pairs_gops  warm compute-bound matmul rows on 1 thread (results.json only): after the
///               repetitions, [kernel, peak] GOP/s of alternating single calls and bursts of the
///               probe's peak loop of the row's tier and kind (int8 dot or f32 FMA), each about a call long
///   peak_now_gops  the median peak of those pairs (0: not measured)
///   of_peak_now the median over the pairs of kernel / peak: the fraction of what the core's dot (or
///               FMA) loop got at the same moment (on a shared machine a core slows for minutes)
///   headline    1 if the row is in the compact table
///   emulated    true if the CPU was emulated (qemu-user, ...): the timings are the emulator's
#ifndef QKB_ROWS_H
#define QKB_ROWS_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cases.h"
#include "json.h"

#define QKB_ROW_MAX_TIMES 64
#define QKB_ROW_MAX_PAIRS 32

typedef struct qkb_row {
    char name[200], op[12], what[24], kernel[96], tier[16], format[8], scales[4], cache[8];
    char level[8], bound[8];
    size_t M, N, K, group;
    int threads, headline, emulated;
    int reps;
    int64_t iterations;
    double median_s, mean_s, min_s, max_s, stddev_s, cv, spread;
    double ops, bytes, gops, gbps, bpw, ai;
    double bw_gbps, peak_gops, roofline_s, roofline, speedup;
    double read_gbps, of_read, stream_gbps, of_stream;
    int ntimes;
    double times[QKB_ROW_MAX_TIMES];
    int npairs;
    double pairs[QKB_ROW_MAX_PAIRS][2]; /* read_pairs_gbps: [kernel, read] */
    int nsp;
    double sp[QKB_ROW_MAX_PAIRS][2]; /* stream_pairs_gbps: [kernel, stream] */
    double peak_now_gops, of_peak;
    int npk;
    double pk[QKB_ROW_MAX_PAIRS][2]; /* peak_pairs_gops: [kernel, peak] */
} qkb_row;

/// Fill a row from a case and its per-repetition times (seconds per call).
void qkb_row_from_case(qkb_row *r, const qkb_case *c, const double *times, int n, int64_t iterations);
/// Set speedup_vs_scalar on every row that has a scalar counterpart.
void qkb_rows_speedups(qkb_row *rows, size_t n);

/// What a results file says about its run.
typedef struct qkb_run_meta {
    char machine[96], commit[64], date[40], command[1024], suite[16];
    int complete, interrupted;
    /* DRAM read bandwidth measured by the run itself, GB/s (0: not measured): before and after
     * its cases, with 1 thread and with dram_threads (runs with cold cases) */
    int dram_threads;
    double dram_gbps[2][2]; /* [before, after][1 thread, dram_threads] */
    /* One core's limits measured by the run itself before and after its cases (runs with warm
     * cases; core_tier "" when not measured): [before, after][int8 dot GOP/s, f32 FMA GFLOP/s,
     * L2 read GB/s] of the best tier (0: not measured) */
    char core_tier[16];
    double core_now[2][3];
} qkb_run_meta;

/// A skipped case: its name and why.
typedef struct qkb_skip {
    char name[200], reason[320];
} qkb_skip;

/// Write results.json and results.csv into dir, atomically. 0 or -1 (err says why).
int qkb_rows_write(const char *dir, const qkb_run_meta *m, const qkb_row *rows, size_t n, const qkb_skip *skips, size_t nskip,
                   char *err, size_t errlen);
/// Read the rows of a results.json (path to the file or to its folder).
int qkb_rows_load(const char *path, qkb_run_meta *m, qkb_row **rows, size_t *n, char *err, size_t errlen);

/// The compact table: best tier per op/mode/format among headline rows, or per
/// configuration among all rows when none is a headline row (time, GB/s or
/// GOP/s, % of roofline, speed-up over scalar).
void qkb_rows_table(FILE *f, const qkb_row *rows, size_t n, int markdown);
/// summary.md into dir (limits, compact table, all rows, skipped cases).
int qkb_summary_write(const char *dir, const qkb_run_meta *m, const qkb_limits *l, const qkb_row *rows, size_t n,
                      const qkb_skip *skips, size_t nskip, const char *extra_md, char *err, size_t errlen);
#endif
