/* Metrics and generators (issue 6, Tests):
 *  - output-head metrics on a planted case: a known permutation of the top
 *    tokens gives the expected top-1 flip rate and top-5/10/20 retention, and
 *    KL matches a direct computation;
 *  - SQNR, NMSE, max |err| and per-row cosine on hand-made cases;
 *  - the generators: moments of every distribution within sampling error,
 *    the SLEEF AVX2 path equal to the scalar libm path up to a few ulps,
 *    any slice equal to the same elements of the whole stream, seeds that
 *    differ give different data, outlier channels persistent across rows. */
#include "gen.h"
#include "metrics.h"
#include "test_util.h"

static void test_basic(void) {
    tu_context = "basic metrics";
    double y[2][4] = {{1, 2, 3, 4}, {-1, 0, 1, 0}}, yh[2][4];
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 4; i++) yh[r][i] = y[r][i] * 1.1; /* error = 0.1·y: NMSE 0.01, SQNR 20 dB, cosine 1 */
    qk_err e = qk_err_dd(y[0], 4, yh[0], 4, 2, 4);
    CHECK(fabs(e.nmse - 0.01) < 1e-12 && fabs(e.sqnr_db - 20) < 1e-9, "nmse %.17g sqnr %.17g", e.nmse, e.sqnr_db);
    CHECK(fabs(e.max_abs - 0.4) < 1e-12, "max_abs %.17g", e.max_abs);
    CHECK(fabs(e.cos_mean - 1) < 1e-12 && fabs(e.cos_min - 1) < 1e-12, "cos %.17g %.17g", e.cos_mean, e.cos_min);
    yh[1][0] = 1, yh[1][2] = -1; /* row 1 flipped: cosine -1 */
    e = qk_err_dd(y[0], 4, yh[0], 4, 2, 4);
    CHECK(fabs(e.cos_min + 1) < 1e-12 && fabs(e.cos_mean) < 1e-12, "cos mean %.17g min %.17g", e.cos_mean, e.cos_min);
    e = qk_err_dd(y[0], 4, y[0], 4, 2, 4);
    CHECK(isinf(e.sqnr_db) && e.nmse == 0, "exact: sqnr %g", e.sqnr_db);
    float nanv[2] = {1, NAN}, one[2] = {1, 1};
    e = qk_err_ff(one, 2, nanv, 2, 1, 2);
    CHECK(e.nonfinite == 1, "NaN counted: %zu", e.nonfinite);
    qk_decomp d = qk_decompose(0.01, 0.02, 0.03);
    CHECK(fabs(d.kappa - 1) < 1e-12, "kappa %.17g", d.kappa);
}

/* Rows of distinct logits; the planted changes swap values between ranks. */
static void test_head(tu_rng *rng) {
    enum { R = 8, N = 1000 };
    double *y = malloc(R * N * sizeof *y), *yh = malloc(R * N * sizeof *yh);
    size_t order[N];
    for (int r = 0; r < R; r++) {
        for (int i = 0; i < N; i++) order[i] = (size_t)i;
        for (int i = N - 1; i > 0; i--) { /* a random permutation: rank i sits at token order[i] */
            size_t j = tu_next(rng) % (size_t)(i + 1), t = order[i];
            order[i] = order[j], order[j] = t;
        }
        for (int i = 0; i < N; i++) y[r * N + order[i]] = 10.0 - 0.01 * i; /* rank i has logit 10 − 0.01 i */
        memcpy(yh + r * N, y + r * N, N * sizeof *y);
        size_t a, b;
        if (r < 4) a = order[0], b = order[1];  /* top-1 and top-2 swap: a flip, every top-k set intact */
        else a = order[4], b = order[30];       /* rank 5 leaves the top 20: retention 4/5, 9/10, 19/20 */
        double t = yh[r * N + a];
        yh[r * N + a] = yh[r * N + b], yh[r * N + b] = t;
    }
    qk_head h;
    tu_context = "planted head";
    CHECK(qk_head_compare(y, N, yh, N, R, N, 1.0, &h) == 0, "qk_head_compare failed");
    CHECK(fabs(h.flip_rate - 0.5) < 1e-12, "flip rate %.17g, expected 0.5", h.flip_rate);
    CHECK(fabs(h.retention[0] - 0.9) < 1e-12, "top-5 retention %.17g, expected 0.9", h.retention[0]);
    CHECK(fabs(h.retention[1] - 0.95) < 1e-12, "top-10 retention %.17g, expected 0.95", h.retention[1]);
    CHECK(fabs(h.retention[2] - 0.975) < 1e-12, "top-20 retention %.17g, expected 0.975", h.retention[2]);
    /* KL by the textbook formula, row by row */
    double T = 0.7, kl_sum = 0;
    for (int r = 0; r < R; r++) {
        double zp = 0, zq = 0, kl = 0;
        for (int i = 0; i < N; i++) zp += exp(y[r * N + i] / T), zq += exp(yh[r * N + i] / T);
        for (int i = 0; i < N; i++) {
            double p = exp(y[r * N + i] / T) / zp, q = exp(yh[r * N + i] / T) / zq;
            kl += p * log(p / q);
        }
        kl_sum += kl;
    }
    CHECK(qk_head_compare(y, N, yh, N, R, N, T, &h) == 0, "qk_head_compare T failed");
    CHECK(fabs(h.kl_mean - kl_sum / R) < 1e-12 * (1 + kl_sum), "KL %.17g, direct %.17g", h.kl_mean, kl_sum / R);
    CHECK(qk_head_compare(y, N, y, N, R, N, 1.0, &h) == 0 && h.flip_rate == 0 && h.retention[2] == 1 && h.kl_mean == 0,
          "identical logits: flip %g, ret %g, KL %g", h.flip_rate, h.retention[2], h.kl_mean);
    printf("planted head: flip %.3f, retention %.3f %.3f %.3f (expected 0.5, 0.9, 0.95, 0.975)\n", 0.5, 0.9, 0.95, 0.975);
    free(y), free(yh);
}

static void test_generators(uint64_t seed) {
    size_t n = tu_quick() ? (1u << 20) : (1u << 22);
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    printf("generators (%zu values; SLEEF AVX2 path %s):\n", n, qk_gen_simd_available() ? "available" : "not available, scalar only");
    /* excess kurtosis of each distribution with unit variance */
    static const struct { qk_dist d; double nu, kurt; } ds[] = {
        {QK_DIST_GAUSS, 0, 3}, {QK_DIST_LAPLACE, 0, 6}, {QK_DIST_UNIFORM, 0, 1.8}, {QK_DIST_STUDENT, 9, 3 + 6.0 / 5}};
    for (size_t k = 0; k < sizeof ds / sizeof ds[0]; k++) {
        char ctx[64];
        snprintf(ctx, sizeof ctx, "%s", qk_dist_name(ds[k].d));
        tu_context = ctx;
        qk_gen_fill(ds[k].d, ds[k].nu, seed, 5, 0, a, n);
        double m = 0, v = 0, q = 0;
        for (size_t i = 0; i < n; i++) m += a[i];
        m /= (double)n;
        for (size_t i = 0; i < n; i++) {
            double d = a[i] - m;
            v += d * d, q += d * d * d * d;
        }
        v /= (double)n, q /= (double)n;
        double kurt = q / (v * v), se_m = sqrt(1.0 / (double)n), se_v = sqrt((ds[k].kurt - 1) / (double)n);
        printf("  %-8s mean %+.5f var %.5f kurtosis %.3f (expected 0, 1, %.3f)\n", qk_dist_name(ds[k].d), m, v, kurt, ds[k].kurt);
        CHECK(fabs(m) < 5 * se_m, "mean %.6f", m);
        CHECK(fabs(v - 1) < 5 * se_v, "variance %.6f", v);
        CHECK(fabs(kurt / ds[k].kurt - 1) < (ds[k].d == QK_DIST_STUDENT ? 0.15 : 0.02), "kurtosis %.4f, expected %.4f", kurt, ds[k].kurt);
        /* the two paths: same uniform bits, values within a few ulps */
        qk_gen_fill_scalar(ds[k].d, ds[k].nu, seed, 5, 0, b, n);
        if (qk_gen_fill_simd(ds[k].d, ds[k].nu, seed, 5, 0, a, n) == 0) {
            double worst = 0;
            for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)a[i] - b[i]) / fmax(1.0, fabs((double)b[i])));
            CHECK(worst < 1e-5, "SLEEF vs libm: relative difference %.3g", worst);
            if (ds[k].d == QK_DIST_UNIFORM) CHECK(!memcmp(a, b, n * sizeof *a), "uniform: the paths must agree bit for bit");
        } else {
            tu_skipf("SLEEF AVX2 path: not compiled or AVX2 not allowed here");
        }
        /* any slice equals the same elements of the whole stream */
        qk_gen_fill(ds[k].d, ds[k].nu, seed, 5, 0, a, 4096);
        qk_gen_fill(ds[k].d, ds[k].nu, seed, 5, 37, b, 1000);
        int same = 1;
        for (int i = 0; i < 1000; i++) same &= fabsf(a[37 + i] - b[i]) <= 1e-5f * fmaxf(1.0f, fabsf(b[i]));
        CHECK(same, "slice [37, 1037) differs from the whole stream");
        qk_gen_fill(ds[k].d, ds[k].nu, seed + 1, 5, 0, b, 4096);
        CHECK(memcmp(a, b, 4096 * sizeof *a) != 0, "seeds %llu and %llu gave the same data", (unsigned long long)seed,
              (unsigned long long)seed + 1);
    }
    /* outlier channels: the same columns in every row, scaled by alpha */
    qk_gen_spec s;
    qk_gen_spec_default(&s);
    s.dist = QK_DIST_OUTLIER, s.outlier_frac = 0.02, s.outlier_alpha = 50;
    size_t rows = 64, cols = 1000, idx[1000];
    char err[200];
    tu_context = "outlier channels";
    CHECK(qk_gen_matrix(&s, seed, 9, a, rows, cols, cols, err, sizeof err) == 0, "%s", err);
    size_t c = qk_gen_outlier_channels(&s, seed, 9, cols, idx);
    CHECK(c == 20, "%zu outlier channels, expected 20", c);
    double in = 0, out = 0;
    int is_out[1000] = {0};
    for (size_t i = 0; i < c; i++) is_out[idx[i]] = 1;
    for (size_t r = 0; r < rows; r++)
        for (size_t j = 0; j < cols; j++) *(is_out[j] ? &out : &in) += (double)a[r * cols + j] * a[r * cols + j];
    double ratio = sqrt((out / (double)(c * rows)) / (in / (double)((cols - c) * rows)));
    CHECK(fabs(ratio / 50 - 1) < 0.1, "outlier rms ratio %.2f, expected 50", ratio);
    s.dist = QK_DIST_SWIGLU, s.swiglu_dim = 64;
    tu_context = "swiglu";
    CHECK(qk_gen_matrix(&s, seed, 9, a, 16, 512, 512, err, sizeof err) == 0, "%s", err);
    double m2 = 0, m4 = 0;
    for (size_t i = 0; i < 16 * 512; i++) m2 += (double)a[i] * a[i], m4 += (double)a[i] * a[i] * a[i] * a[i];
    m2 /= 16 * 512, m4 /= 16 * 512;
    printf("  swiglu   rms %.4f kurtosis %.2f (heavy tailed: > 3)\n", sqrt(m2), m4 / (m2 * m2));
    CHECK(m4 / (m2 * m2) > 4, "SwiGLU kurtosis %.2f, expected heavy tails", m4 / (m2 * m2));
    s.dist = QK_DIST_STUDENT, s.nu = 0.5;
    CHECK(qk_gen_matrix(&s, seed, 9, a, 1, 8, 8, err, sizeof err) != 0 && strstr(err, "nu"), "nu = 0.5 accepted: %s", err);
    free(a), free(b);
}

int main(void) {
    uint64_t seed = tu_seed();
    tu_rng rng = {seed};
    test_basic();
    test_head(&rng);
    test_generators(seed);
    return tu_finish("test_acc_metrics");
}
