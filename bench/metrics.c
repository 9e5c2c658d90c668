/* Error metrics (metrics.h), in double. */
#include "metrics.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const int qk_head_k[QK_HEAD_NK] = {5, 10, 20};

void qk_err_init(qk_err_acc *a) {
    memset(a, 0, sizeof *a);
    a->cos_min = INFINITY;
}

/* One row, given the reference and test values as doubles through a getter. */
#define ERR_ROW(a, y, yh, n)                                                                                           \
    do {                                                                                                               \
        double dot = 0, yy = 0, hh = 0;                                                                                \
        for (size_t i = 0; i < (n); i++) {                                                                             \
            double r = (double)(y)[i], t = (double)(yh)[i];                                                            \
            if (!isfinite(t) || !isfinite(r)) {                                                                        \
                (a)->nonfinite++;                                                                                      \
                continue;                                                                                              \
            }                                                                                                          \
            double e = t - r;                                                                                          \
            (a)->err2 += e * e;                                                                                        \
            if (fabs(e) > (a)->max_abs) (a)->max_abs = fabs(e);                                                        \
            dot += r * t, yy += r * r, hh += t * t;                                                                    \
        }                                                                                                              \
        (a)->ref2 += yy;                                                                                               \
        (a)->n += (n);                                                                                                 \
        double c = (yy == 0 && hh == 0) ? 1.0 : (yy == 0 || hh == 0) ? 0.0 : dot / (sqrt(yy) * sqrt(hh));            \
        (a)->cos_sum += c;                                                                                             \
        if (c < (a)->cos_min) (a)->cos_min = c;                                                                        \
        (a)->rows++;                                                                                                   \
    } while (0)

void qk_err_row_dd(qk_err_acc *a, const double *y, const double *yh, size_t n) { ERR_ROW(a, y, yh, n); }
void qk_err_row_df(qk_err_acc *a, const double *y, const float *yh, size_t n) { ERR_ROW(a, y, yh, n); }
void qk_err_row_ff(qk_err_acc *a, const float *y, const float *yh, size_t n) { ERR_ROW(a, y, yh, n); }

double qk_sqnr_db(double nmse) {
    if (nmse == 0.0) return INFINITY;
    return -10.0 * log10(nmse);
}

qk_err qk_err_finish(const qk_err_acc *a) {
    qk_err e;
    e.ref2 = a->ref2;
    e.err2 = a->err2;
    e.n = a->n;
    e.rows = a->rows;
    e.nonfinite = a->nonfinite;
    e.max_abs = a->max_abs;
    e.nmse = a->ref2 > 0 ? a->err2 / a->ref2 : (a->err2 == 0 ? 0.0 : NAN);
    e.sqnr_db = a->ref2 > 0 ? qk_sqnr_db(e.nmse) : NAN;
    e.cos_mean = a->rows ? a->cos_sum / (double)a->rows : NAN;
    e.cos_min = a->rows ? a->cos_min : NAN;
    return e;
}

qk_err qk_err_dd(const double *y, size_t ldy, const double *yh, size_t ldh, size_t rows, size_t cols) {
    qk_err_acc a;
    qk_err_init(&a);
    for (size_t r = 0; r < rows; r++) qk_err_row_dd(&a, y + r * ldy, yh + r * ldh, cols);
    return qk_err_finish(&a);
}

qk_err qk_err_df(const double *y, size_t ldy, const float *yh, size_t ldh, size_t rows, size_t cols) {
    qk_err_acc a;
    qk_err_init(&a);
    for (size_t r = 0; r < rows; r++) qk_err_row_df(&a, y + r * ldy, yh + r * ldh, cols);
    return qk_err_finish(&a);
}

qk_err qk_err_ff(const float *y, size_t ldy, const float *yh, size_t ldh, size_t rows, size_t cols) {
    qk_err_acc a;
    qk_err_init(&a);
    for (size_t r = 0; r < rows; r++) qk_err_row_ff(&a, y + r * ldy, yh + r * ldh, cols);
    return qk_err_finish(&a);
}

/* ---- output heads ---- */

enum { TOPK_MAX = 20 };

/* Indices of the TOPK_MAX largest values of v[0..n), best first; a tie goes
 * to the lower index. */
static void topk(const double *v, size_t n, size_t *idx) {
    size_t have = 0;
    for (size_t i = 0; i < n; i++) {
        if (have == TOPK_MAX && !(v[i] > v[idx[TOPK_MAX - 1]])) continue;
        size_t p = have < TOPK_MAX ? have++ : TOPK_MAX - 1;
        while (p > 0 && v[i] > v[idx[p - 1]]) {
            idx[p] = idx[p - 1];
            p--;
        }
        idx[p] = i;
    }
}

/* log Σ exp(v_i / T). */
static double logsumexp(const double *v, size_t n, double T) {
    double m = -INFINITY, s = 0;
    for (size_t i = 0; i < n; i++) m = fmax(m, v[i] / T);
    for (size_t i = 0; i < n; i++) s += exp(v[i] / T - m);
    return m + log(s);
}

int qk_head_compare(const double *y, size_t ldy, const double *yh, size_t ldh, size_t rows, size_t N, double T,
                    qk_head *out) {
    memset(out, 0, sizeof *out);
    if (N < TOPK_MAX || !(T > 0)) return -1;
    size_t a[TOPK_MAX], b[TOPK_MAX];
    double flips = 0, ret[QK_HEAD_NK] = {0}, kl_sum = 0, kl_max = 0;
    for (size_t r = 0; r < rows; r++) {
        const double *p = y + r * ldy, *q = yh + r * ldh;
        topk(p, N, a);
        topk(q, N, b);
        flips += a[0] != b[0];
        for (int j = 0; j < QK_HEAD_NK; j++) {
            int k = qk_head_k[j], common = 0;
            for (int u = 0; u < k; u++)
                for (int v = 0; v < k; v++) common += a[u] == b[v];
            ret[j] += (double)common / k;
        }
        /* KL(p‖q) = Σ p_i (log p_i − log q_i), log p_i = y_i/T − lse(y/T). */
        double lp = logsumexp(p, N, T), lq = logsumexp(q, N, T), kl = 0;
        for (size_t i = 0; i < N; i++) {
            double lpi = p[i] / T - lp;
            kl += exp(lpi) * (lpi - (q[i] / T - lq));
        }
        kl = fmax(kl, 0.0);
        kl_sum += kl;
        kl_max = fmax(kl_max, kl);
    }
    out->rows = rows;
    if (rows) {
        out->flip_rate = flips / (double)rows;
        for (int j = 0; j < QK_HEAD_NK; j++) out->retention[j] = ret[j] / (double)rows;
        out->kl_mean = kl_sum / (double)rows;
    }
    out->kl_max = kl_max;
    return 0;
}

qk_decomp qk_decompose(double e_w, double e_a, double e_wa) {
    qk_decomp d = {e_w, e_a, e_wa, (e_w + e_a) > 0 ? e_wa / (e_w + e_a) : NAN};
    return d;
}

int qk_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double qk_median(double *v, int n) {
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof *v, qk_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
