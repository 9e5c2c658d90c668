/// Error metrics of DESIGN §4, computed in double.
///
/// - SQNR_dB = 10·log10(Σ y² / Σ (ŷ − y)²), pooled over every element;
///   NMSE = Σ (ŷ − y)² / Σ y²; max |ŷ − y|; per-row cosine (mean and minimum).
/// - Output heads: top-1 flip rate, top-k retention (k = 5, 10, 20) and
///   KL(softmax(y) ‖ softmax(ŷ)).
/// - The weight/activation decomposition e_W, e_A, e_WA and κ = e_WA/(e_W + e_A).
///
/// y is always the reference and ŷ the value under test.
#ifndef QK_METRICS_H
#define QK_METRICS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/// qsort's order of doubles, ascending.
int qk_cmp_double(const void *a, const void *b);
/// The median of v[0..n) (0 if n <= 0); sorts v.
double qk_median(double *v, int n);

/// A running accumulator: feed it row by row, then qk_err_finish.
typedef struct qk_err_acc {
    double ref2, err2, max_abs;
    double cos_sum, cos_min;
    size_t n, rows, nonfinite;
} qk_err_acc;

/// The finished metrics. sqnr_db is +inf when ŷ equals y exactly and nmse is
/// NaN when y is all zeros; nonfinite counts NaN/Inf in ŷ (then the other
/// numbers cover only the finite elements).
typedef struct qk_err {
    double sqnr_db, nmse, max_abs, cos_mean, cos_min;
    double ref2, err2;
    size_t n, rows, nonfinite;
} qk_err;

void qk_err_init(qk_err_acc *a);
/// One row of n elements: reference y, test ŷ, in any mix of double and float.
void qk_err_row_dd(qk_err_acc *a, const double *y, const double *yh, size_t n);
void qk_err_row_df(qk_err_acc *a, const double *y, const float *yh, size_t n);
void qk_err_row_ff(qk_err_acc *a, const float *y, const float *yh, size_t n);
qk_err qk_err_finish(const qk_err_acc *a);
/// Whole rows × cols matrices with row strides.
qk_err qk_err_dd(const double *y, size_t ldy, const double *yh, size_t ldh, size_t rows, size_t cols);
qk_err qk_err_df(const double *y, size_t ldy, const float *yh, size_t ldh, size_t rows, size_t cols);
qk_err qk_err_ff(const float *y, size_t ldy, const float *yh, size_t ldh, size_t rows, size_t cols);
/// SQNR in dB of an NMSE (+inf for 0).
double qk_sqnr_db(double nmse);

/// Output-head metrics, averaged over rows.
enum { QK_HEAD_NK = 3 };
extern const int qk_head_k[QK_HEAD_NK]; ///< 5, 10, 20
typedef struct qk_head {
    double flip_rate;              ///< fraction of rows whose argmax changed
    double retention[QK_HEAD_NK];  ///< mean |topk(y) ∩ topk(ŷ)| / k
    double kl_mean, kl_max;        ///< KL(softmax(y/T) ‖ softmax(ŷ/T)) in nats
    size_t rows;
} qk_head;

/// Compare logits y (reference) and ŷ, rows × N (N >= 20) with row strides,
/// after dividing both by the temperature T > 0. Ties in the rankings break
/// toward the lower index. Returns 0, or -1 if N < 20 or T <= 0.
int qk_head_compare(const double *y, size_t ldy, const double *yh, size_t ldh, size_t rows, size_t N, double T,
                    qk_head *out);

/// The decomposition from three NMSEs against the FP32 output: e_W (quantized
/// W, f32 X), e_A (f32 W, quantized X), e_WA (both).
typedef struct qk_decomp {
    double e_w, e_a, e_wa, kappa;
} qk_decomp;
qk_decomp qk_decompose(double e_w, double e_a, double e_wa);

#ifdef __cplusplus
}
#endif
#endif
