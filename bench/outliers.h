/// Outlier handling (DESIGN §5, issue 7): detection of outlier channels from
/// calibration activations, and the comparison of the strategies that keep a
/// low-bit matmul accurate on them (channel split, whole-tensor 8-bit
/// activations, smoothing, Hadamard rotation) for error, bpw and throughput.
#ifndef QK_OUTLIERS_H
#define QK_OUTLIERS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gen.h"
#include "qk/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/// How a channel is declared an outlier (exactly one rule applies):
/// topk > 0: the topk channels of largest absmax; else rel > 0: absmax above
/// rel × the median channel absmax (crest factor > rel); else absmax above
/// abs_thr (default 6.0, LLM.int8's threshold for unit-scale activations).
typedef struct qk_outlier_rule {
    double abs_thr;
    double rel;
    size_t topk;
} qk_outlier_rule;

void qk_outlier_rule_default(qk_outlier_rule *r);
/// "absmax > 6", "absmax > 20 x median", "top-8 absmax" into buf.
void qk_outlier_rule_describe(const qk_outlier_rule *r, char *buf, size_t len);

/// Per-channel statistics of calibration activations X[M][K] (row stride ldx)
/// over its M rows: absmax, kurtosis E[(x−μ)⁴]/σ⁴ (3 for a Gaussian; 0 for a
/// constant channel) and crest = absmax / median channel absmax. Any of the
/// arrays may be NULL. Returns the median channel absmax.
double qk_channel_stats(const float *x, size_t ldx, size_t M, size_t K, double *absmax, double *kurt, double *crest);

/// The outlier channels of X under rule r: their indices, increasing, into idx
/// (room for K). Returns the count, or (size_t)-1 if out of memory.
size_t qk_outlier_detect(const float *x, size_t ldx, size_t M, size_t K, const qk_outlier_rule *r, uint32_t *idx);

/// The strategies of the comparison, in table order.
typedef enum qk_ostrat {
    QK_OS_FP32 = 0, ///< dense f32 gemm (gemm_f32): the baseline, no quantization
    QK_OS_W4A4,     ///< plain W4A4
    QK_OS_W4A8,     ///< whole-tensor 8-bit activations
    QK_OS_SPLIT,    ///< outlier columns in f32 (gemm_f32), the rest W4A4 with those columns zeroed (colsplit)
    QK_OS_SPLIT8,   ///< the same with the outlier columns in int8, per-row scales (rowquant_i8, gemm_i8)
    QK_OS_SMOOTH,   ///< X·diag(1/s), W·diag(s) before quantization (colscale), then W4A4
    QK_OS_ROTATE,   ///< XH online, WH offline (fwht), then W4A4
    QK_OS_COUNT
} qk_ostrat;
const char *qk_ostrat_name(qk_ostrat s);

typedef struct qk_outlier_cfg {
    size_t group;          ///< group size of the w4s weights and of the activations
    qk_outlier_rule rule;  ///< detection for the split
    double smooth_alpha;   ///< smoothing migration strength α (0.5)
    size_t hblock;         ///< Hadamard block (power of two dividing K)
    int timing;            ///< time each strategy's whole path
    double min_time;       ///< seconds of repetitions per strategy, at least
    int threads;           ///< for the exact math
    int at_tier;           ///< 0: the dispatcher's kernels; 1: each family's best variant at or below `tier`
    qk_tier tier;
    /// Non-NULL: rows[QK_OS_COUNT] of an earlier run on the same data and
    /// configuration; their e_A, e_WA, bpw and recovery are taken as they are
    /// (they do not depend on the kernels), only the kernels' own output and
    /// the timing are measured again.
    const struct qk_outlier_row *reuse;
} qk_outlier_cfg;

/// One row of the comparison: a strategy on one data set.
typedef struct qk_outlier_row {
    char data[64];
    char tier[16];          ///< the tier the kernels were picked at (cfg.tier, or the dispatcher's best)
    qk_ostrat strategy;
    size_t M, N, K, n_out;  ///< n_out: outlier channels kept in f32 (split) or detected (others)
    double e_a, e_wa;       ///< NMSE against the FP32 product: quantized activations only / both quantized
    double sqnr_db;         ///< of the strategy's own kernel output against the FP32 product
    double bpw;             ///< weight bits per weight (split: + 32·n_out/K; split8: + (8·n_out + 32)/K; smoothing: + 32/N for s)
    double t_median;        ///< seconds per Y, the whole path (transforms included); 0 if not timed
    double gops;            ///< 2·M·N·K / t_median
    double recovery;        ///< (e_WA(W4A4) − e_WA) / (e_WA(W4A4) − e_WA(W4A8))
    double recovery_a;      ///< the same on e_A
} qk_outlier_row;

/// Run every strategy on W[N][K] and activations X[M][K], with calibration
/// activations XC[Mc][K] (detection and smoothing scales come from XC only).
/// Fills rows[QK_OS_COUNT]. Returns 0, or -1 with a message.
int qk_outlier_compare(const qk_outlier_cfg *c, const char *data, const float *w, size_t N, const float *xc, size_t Mc,
                       const float *x, size_t M, size_t K, qk_outlier_row rows[QK_OS_COUNT], char *err, size_t errlen);

/// The comparison table, CSV and JSON of rows (`command` names the qkbench
/// command in the JSON), and an SVG plot of the output SQNR per data set (and
/// tier, where rows of several tiers are given) and strategy.
void qk_outlier_print(FILE *f, const qk_outlier_row *rows, size_t n);
int qk_outlier_write_csv(const char *path, const qk_outlier_row *rows, size_t n);
int qk_outlier_write_json(const char *path, const qk_outlier_row *rows, size_t n, const char *command, const char *meta);
int qk_outlier_write_svg(const char *path, const qk_outlier_row *rows, size_t n);

/// `qkbench accuracy --outliers` and `qkbench sweep --outliers`
/// (acc_outliers.c; the sweep times every tier): exit status 0, or 2 on an error.
int qk_acc_outliers(int argc, char **argv);
int qk_sweep_outliers(int argc, char **argv);

#ifdef __cplusplus
}
#endif
#endif
