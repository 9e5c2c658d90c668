/* The error metrics against analysis (issue 6, Tests):
 *  1. the measured SQNR of symmetric round-to-nearest (w4s: int4, w8s: int8)
 *     on N(0,1) data matches the analytical value within the sampling error,
 *     at g = 32 and 128. The model: in a group of g values the largest |x|,
 *     M, is coded exactly; each other value is uniform within its bin of
 *     width Δ = M/qmax, so NMSE = (g−1)/g · E[e² ] with e the rounding error.
 *     "exact": E[e²|M] integrated bin by bin over the truncated normal, then
 *     over the density of M (g·2φ(m)·(2Φ(m)−1)^(g−1)); "uniform": E[e²|M] =
 *     Δ²/12 (Sheppard). The tolerance is 4 standard errors of the pooled
 *     ratio Σe²/Σx², estimated from the per-group sums (delta method).
 *  2. the matmul identity NMSE_out ≈ n_W + n_A + n_W·n_A on independent
 *     operands, and κ = e_WA/(e_W + e_A) ≈ 1. */
#include "evaluate.h"
#include "gen.h"
#include "metrics.h"
#include "refmath.h"
#include "test_util.h"

/* NMSE of the codes written by the scalar reference, with its standard error. */
static void measure(qk_format f, size_t g, const float *x, size_t rows, size_t K, double *nmse, double *se) {
    qk_qmat q;
    if (qk_qmat_alloc(&q, f, QK_SCALE_F32, rows, K, g) || qk_quantize_with(qk_reference_quantize(f), x, K, &q)) abort();
    qk_rows qr = {NULL, 0, &q};
    double *w = malloc(K * sizeof *w);
    size_t ng = K / g, n = 0;
    double sn = 0, ss = 0, snn = 0, sss = 0, sns = 0;
    for (size_t r = 0; r < rows; r++) {
        qk_rows_get(&qr, r, K, w);
        for (size_t j = 0; j < ng; j++) {
            double e2 = 0, x2 = 0;
            for (size_t i = j * g; i < (j + 1) * g; i++) {
                double d = w[i] - x[r * K + i];
                e2 += d * d;
                x2 += (double)x[r * K + i] * x[r * K + i];
            }
            sn += e2, ss += x2, snn += e2 * e2, sss += x2 * x2, sns += e2 * x2;
            n++;
        }
    }
    double mn = sn / n, ms = ss / n, R = mn / ms;
    double vn = snn / n - mn * mn, vs = sss / n - ms * ms, cv = sns / n - mn * ms;
    *nmse = R;
    *se = sqrt((vn - 2 * R * cv + R * R * vs) / (double)n) / ms;
    free(w);
    qk_qmat_free(&q);
}

static void test_rtn_model(uint64_t seed) {
    size_t K = 4096, rows = tu_quick() ? 256 : 1024; /* 4M values: the standard error is ~0.2% of the NMSE */
    float *x = malloc(rows * K * sizeof *x);
    qk_gen_fill(QK_DIST_GAUSS, 0, seed, 11, 0, x, rows * K);
    static const struct { qk_format f; int qmax; } fm[] = {{QK_W4S, 7}, {QK_W8S, 127}};
    static const size_t gs[] = {32, 128};
    printf("symmetric RTN on N(0,1), %zu values: measured vs analytical SQNR (dB)\n", rows * K);
    printf("  %-4s %4s %9s %7s %9s %9s %8s\n", "fmt", "g", "measured", "±1se", "exact", "uniform", "z");
    for (size_t a = 0; a < 2; a++)
        for (size_t b = 0; b < 2; b++) {
            double nm, se;
            measure(fm[a].f, gs[b], x, rows, K, &nm, &se);
            double ex = acc_rtn_gauss_nmse(fm[a].qmax, gs[b], 1), un = acc_rtn_gauss_nmse(fm[a].qmax, gs[b], 0);
            double z = (nm - ex) / se;
            printf("  %-4s %4zu %9.4f %7.4f %9.4f %9.4f %+8.2f\n", qk_format_name(fm[a].f), gs[b], qk_sqnr_db(nm),
                   10 / log(10.0) * se / nm, qk_sqnr_db(ex), qk_sqnr_db(un), z);
            char ctx[64];
            snprintf(ctx, sizeof ctx, "%s g=%zu", qk_format_name(fm[a].f), gs[b]);
            tu_context = ctx;
            CHECK(fabs(z) <= 4.0, "measured NMSE %.6e vs exact model %.6e: %.2f standard errors", nm, ex, z);
            /* the uniform-noise model is the same to well under 1% at these step sizes */
            CHECK(fabs(un / ex - 1) < 0.01, "uniform-noise model %.6e vs exact %.6e", un, ex);
        }
    free(x);
}

/* NMSE of y = X·Wᵀ from given W, X (double) against the FP32 reference. */
static double out_nmse(const double *yref, const double *xd, const qk_rows *w, size_t M, size_t N, size_t K) {
    double *y = malloc(M * N * sizeof *y);
    qk_exact_matmul(xd, M, K, w, N, y, NULL, 2);
    double a = 0, b = 0;
    for (size_t i = 0; i < M * N; i++) a += (y[i] - yref[i]) * (y[i] - yref[i]), b += yref[i] * yref[i];
    free(y);
    return a / b;
}

static void test_identity(uint64_t seed) {
    size_t M = 64, N = tu_quick() ? 512 : 1024, K = 2048;
    float *w = malloc(N * K * sizeof *w), *x = malloc(M * K * sizeof *x);
    qk_gen_fill(QK_DIST_GAUSS, 0, seed, 21, 0, w, N * K);
    qk_gen_fill(QK_DIST_GAUSS, 0, seed, 22, 0, x, M * K);
    double *xd = malloc(M * K * sizeof *xd), *xq = malloc(M * K * sizeof *xq), *yref = malloc(M * N * sizeof *yref);
    qk_x_from_f32(x, K, M, K, xd);
    qk_rows wf = {w, K, NULL};
    qk_exact_matmul(xd, M, K, &wf, N, yref, NULL, 2);
    static const struct { qk_format f; qk_act_rule a; size_t g; } cs[] = {
        {QK_W4S, QK_ACT_A4, 32}, {QK_W4S, QK_ACT_A8, 128}, {QK_W8S, QK_ACT_A8, 32}, {QK_W4A, QK_ACT_A4, 64}};
    printf("\nNMSE_out against n_W + n_A + n_W·n_A, M=%zu N=%zu K=%zu, independent N(0,1) operands:\n", M, N, K);
    printf("  %-4s %-3s %4s %10s %10s %10s %10s %8s\n", "W", "X", "g", "n_W", "n_A", "predicted", "measured", "kappa");
    for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++) {
        qk_qmat q;
        qk_qact a;
        if (qk_qmat_alloc(&q, cs[c].f, QK_SCALE_F32, N, K, cs[c].g) || qk_quantize_with(qk_reference_quantize(cs[c].f), w, K, &q) ||
            qk_actquant_reference(cs[c].a, x, K, M, K, cs[c].g, &a))
            abort();
        qk_x_from_qact(&a, M, xq);
        qk_rows wq = {NULL, 0, &q};
        double nw = 0, ew = 0, na = 0, ea = 0;
        double *row = malloc(K * sizeof *row);
        for (size_t n = 0; n < N; n++) {
            qk_rows_get(&wq, n, K, row);
            for (size_t k = 0; k < K; k++) nw += (row[k] - w[n * K + k]) * (row[k] - w[n * K + k]), ew += (double)w[n * K + k] * w[n * K + k];
        }
        for (size_t i = 0; i < M * K; i++) na += (xq[i] - xd[i]) * (xq[i] - xd[i]), ea += xd[i] * xd[i];
        free(row);
        nw /= ew, na /= ea;
        double e_w = out_nmse(yref, xd, &wq, M, N, K), e_a = out_nmse(yref, xq, &wf, M, N, K), e_wa = out_nmse(yref, xq, &wq, M, N, K);
        double pred = nw + na + nw * na, kappa = e_wa / (e_w + e_a);
        printf("  %-4s %-3s %4zu %10.4e %10.4e %10.4e %10.4e %8.4f\n", qk_format_name(cs[c].f), qk_act_rule_name(cs[c].a), cs[c].g, nw, na,
               pred, e_wa, kappa);
        char ctx[64];
        snprintf(ctx, sizeof ctx, "%s x %s g=%zu", qk_format_name(cs[c].f), qk_act_rule_name(cs[c].a), cs[c].g);
        tu_context = ctx;
        /* M·N = 64K outputs: the pooled NMSE has a relative standard error of about sqrt(2/(M·N))·(correlation
         * within a row) < 2%; the identity itself neglects E[w·δw] and E[x·δx], which RTN keeps near 0. */
        CHECK(fabs(e_wa / pred - 1) < 0.05, "NMSE_out %.4e vs n_W + n_A + n_W·n_A = %.4e", e_wa, pred);
        CHECK(fabs(e_w / nw - 1) < 0.05, "e_W %.4e vs n_W %.4e", e_w, nw);
        CHECK(fabs(e_a / na - 1) < 0.05, "e_A %.4e vs n_A %.4e", e_a, na);
        CHECK(fabs(kappa - 1) < 0.05, "kappa %.4f", kappa);
        qk_qmat_free(&q);
        qk_qact_free(&a);
    }
    free(w), free(x), free(xd), free(xq), free(yref);
}

int main(void) {
    uint64_t seed = tu_seed();
    test_rtn_model(seed);
    test_identity(seed);
    return tu_finish("test_acc_model");
}
