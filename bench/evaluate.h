/// The evaluation shared by `qkbench accuracy` and `qkbench sweep`: for one
/// weight matrix W (N×K) and activations X (M×K), every selected format ×
/// group size × mode × kernel variant, with
///   - quantization error: exact math on the quantized values (weight codes
///     from the scalar reference quantizer, activation codes from the scalar
///     reference actquant) against the FP32 reference;
///   - kernel error: each variant, run through the public API with an
///     explicit kernel (a gemv variant once per row of X when M > 1),
///     against that exact math, with the error-model ratio
///     max |Δ| / (u·Σ|terms|) (tests gate at 2·(K + 16));
///   - the decomposition e_W, e_A, e_WA, κ for the int modes;
///   - output-head metrics and wall-clock timing when asked.
#ifndef QK_EVALUATE_H
#define QK_EVALUATE_H

#include "acc_cli.h"
#include "metrics.h"

#ifdef __cplusplus
extern "C" {
#endif

/// One result row: a kernel variant (or a skipped one) for (format, g, mode).
typedef struct acc_row {
    char layer[160];         ///< tensor name or "generated"
    size_t M, N, K;
    qk_format format;
    size_t group;
    qk_scale_type scales;
    double bpw;
    qk_mode mode;
    const qk_matmul_kernel *kernel;
    char skip[160];          ///< non-empty: the variant cannot run here (why)
    qk_err w_err;            ///< ŵ vs w, elementwise
    double w_model_sqnr;     ///< the analytical weight SQNR (Gaussian data, symmetric RTN), NaN if not applicable
    char codes_check[200];   ///< "same" if every tier's quantizer wrote the reference's bytes, else which differ
    char deq_check[200];     ///< "same" if every tier's dequantizer wrote the reference's floats, else which differ
    char act_check[200];     ///< int modes: "same" if every tier's activation quantizer wrote the reference's codes, else which differ
    qk_err q_err;            ///< quantization error of y (exact math on quantized values vs FP32)
    qk_err k_err;            ///< kernel error (kernel vs exact math)
    double k_ratio;          ///< max |Δ| / (u·Σ|terms|)
    double k_bound;          ///< 2·(K + 16)
    int k_ok;
    int has_decomp;
    qk_decomp decomp;        ///< e_W, e_A, e_WA, κ (NMSE of y against FP32)
    double n_w, n_a;         ///< elementwise NMSE of the weights and of the activations
    int has_head;
    qk_head head;
    double temperature;      ///< logits were divided by this for the KL
    int timed;
    double t_median, t_min;  ///< seconds per Y = X·Wᵀ (activation quantization included; a gemv variant: M calls)
    int reps;
    double gbps, gops;       ///< bytes (codes, scales, activations, output) / t; 2·M·N·K / t
} acc_row;

typedef struct acc_eval_cfg {
    const acc_opts *o;
    int head;            ///< compute output-head metrics (N >= 20)
    double temperature;  ///< > 0: divide logits by this; 0: choose T so that the FP32 logits have std logit_std
    double logit_std;
    int w_gauss;         ///< the weights are generated N(0,1): report the analytical weight SQNR
    int timing;          ///< time every variant (median of repetitions)
    double min_time;     ///< seconds of repetitions per variant, at least
    int min_reps, max_reps;
    int threads;         ///< for the exact math
    int progress;        ///< progress on stderr
    void (*on_row)(void *ctx, const acc_row *r);
    /// --shard: evaluate only the (layer, format, g, mode) cases for which want()
    /// returns 1 (NULL: all); case_done() is called after each one's last row.
    int (*want)(void *ctx, const char *layer, qk_format f, size_t g, qk_mode m);
    void (*case_done)(void *ctx, const char *layer, qk_format f, size_t g, qk_mode m);
    void (*on_note)(void *ctx, const char *line);
    void *ctx;
} acc_eval_cfg;

/// Evaluate W (rows N, cols K) against X (rows M, cols K). Returns 0, or -1
/// with a message (out of memory, a quantization that failed).
int acc_evaluate(const acc_eval_cfg *c, const acc_mat *w, const acc_mat *x, char *err, size_t errlen);

/// The cases acc_evaluate runs for a layer of K columns, in its order: one per
/// (format, group, mode), named "LAYER/FORMAT/gG/MODE" (G the group size in
/// elements). For each, `fn` gets the name, the case and the number of variant
/// rows it makes. Returns the count.
size_t acc_cases(const acc_opts *o, const char *layer, size_t M, size_t K,
                 void (*fn)(void *ctx, const char *name, qk_format f, size_t g, qk_mode m, size_t variants), void *ctx);
/// The name of a case, as acc_cases makes it.
void acc_case_name(char *out, size_t n, const char *layer, qk_format f, size_t g, qk_mode m);

/// Number of variant rows acc_evaluate will produce (for progress).
size_t acc_count_rows(const acc_opts *o, size_t M, size_t K);

/// The analytical NMSE of symmetric round-to-nearest (codes in [-qmax, qmax],
/// s = absmax/qmax) of N(0,1) data in groups of g: exact = numerical
/// integration over the distribution of the group maximum M of the exact
/// conditional error of the other g−1 values; simple = the uniform-noise model
/// (g−1)/g · E[M²]/(12·qmax²).
double acc_rtn_gauss_nmse(int qmax, size_t g, int exact);

#ifdef __cplusplus
}
#endif
#endif
