/* Outlier handling (issue 7, Tests):
 *  - detection (default rule: absmax > 6) finds the planted outlier channels
 *    exactly, for p in {0.1%, 0.5%, 1%} x alpha in {10, 30, 100} and several
 *    seeds, and reports none on Gaussian data; top-k and the relative rule
 *    find them too; Gaussian channels have kurtosis near 3;
 *  - on planted outliers (p = 0.5% and 1%, alpha = 10 and 30, fixed seed 42)
 *    the channel split and the rotation recover more than half of the
 *    W4A4 -> W4A8 gap in e_WA, and the int8 split does too, with fewer bits
 *    than the f32 split and within 10% of its e_WA. Measured at this shape
 *    (16x256x1024, g = 128): split 0.91-1.19, split8 0.91-1.19, rotation
 *    0.80-0.86 (see the printed table); 0.5 leaves
 *    room for seeds and tiers, while a strategy that did nothing would give 0.
 *    (Rotation does not help at alpha = 100, where plain W4A4's NMSE is already
 *    dominated by the exactly-quantized outlier itself: not asserted.) */
#include "gen.h"
#include "metrics.h"
#include "outliers.h"
#include "refmath.h"
#include "test_util.h"

static float *gen(const qk_gen_spec *s, uint64_t seed, size_t rows, size_t K) {
    float *x = malloc(rows * K * sizeof *x);
    char err[200];
    if (!x || qk_gen_matrix(s, seed, 2, x, rows, K, K, err, sizeof err)) {
        CHECK(0, "generate: %s", x ? err : "out of memory");
        free(x);
        return NULL;
    }
    return x;
}

static void test_detection(void) {
    const size_t M = 64, K = tu_quick() ? 1024 : 4096;
    static const double ps[] = {0.001, 0.005, 0.01}, as[] = {10, 30, 100};
    uint32_t *idx = malloc(K * sizeof *idx);
    size_t *planted = malloc(K * sizeof *planted);
    int cases = 0, exact = 0;
    for (uint64_t seed = 42; seed < (tu_quick() ? 43u : 45u); seed++)
        for (int pi = 0; pi < 3; pi++)
            for (int ai = 0; ai < 3; ai++) {
                qk_gen_spec s;
                qk_gen_spec_default(&s);
                s.dist = QK_DIST_OUTLIER, s.outlier_frac = ps[pi], s.outlier_alpha = as[ai];
                float *x = gen(&s, seed, M, K);
                if (!x) continue;
                size_t np = qk_gen_outlier_channels(&s, seed, 2, K, planted);
                qk_outlier_rule r;
                qk_outlier_rule_default(&r);
                int ok = 1;
                for (int rule = 0; rule < 3; rule++) {
                    if (rule == 1) r.topk = np;
                    if (rule == 2) r.topk = 0, r.rel = 4.0;
                    size_t n = qk_outlier_detect(x, K, M, K, &r, idx);
                    int same = n == np;
                    for (size_t j = 0; j < n && same; j++) same = idx[j] == planted[j];
                    CHECK(same, "seed %llu p=%g alpha=%g rule %d: %zu found, %zu planted", (unsigned long long)seed, ps[pi], as[ai], rule, n,
                          np);
                    ok &= same;
                }
                cases++, exact += ok;
                free(x);
            }
    printf("detection: planted channels found exactly in %d/%d cases (absolute, top-k and relative rules)\n", exact, cases);

    qk_gen_spec g;
    qk_gen_spec_default(&g);
    for (uint64_t seed = 1; seed <= (tu_quick() ? 2u : 5u); seed++) {
        float *x = gen(&g, seed, M, K);
        if (!x) continue;
        qk_outlier_rule r;
        qk_outlier_rule_default(&r);
        size_t n = qk_outlier_detect(x, K, M, K, &r, idx);
        CHECK(n == 0, "seed %llu: %zu outlier channels reported on Gaussian data", (unsigned long long)seed, n);
        double *ku = malloc(K * sizeof *ku), mean = 0;
        qk_channel_stats(x, K, M, K, NULL, ku, NULL);
        for (size_t k = 0; k < K; k++) mean += ku[k] / (double)K;
        CHECK(fabs(mean - 3.0) < 0.3, "mean kurtosis of Gaussian channels %.3f, expected near 3 (minus O(1/M))", mean);
        free(ku);
        free(x);
    }
    free(idx);
    free(planted);
}

static void test_recovery(void) {
    const size_t M = tu_quick() ? 8 : 16, N = tu_quick() ? 128 : 256, K = tu_quick() ? 512 : 1024, Mc = 64;
    qk_outlier_cfg c = {.group = 128, .rule = {6.0, 0, 0}, .smooth_alpha = 0.5, .hblock = K, .threads = qk_acc_threads()};
    qk_gen_spec gw;
    qk_gen_spec_default(&gw);
    float *w = malloc(N * K * sizeof *w);
    char err[300];
    if (!w || qk_gen_matrix(&gw, 42, 1, w, N, K, K, err, sizeof err)) {
        CHECK(0, "weights");
        free(w);
        return;
    }
    static const double ps[] = {0.01, 0.005}, as[] = {30, 10};
    qk_outlier_row all[4 * QK_OS_COUNT];
    size_t n = 0;
    const int np = tu_quick() ? 1 : 2; /* quick (emulated) runs: p = 1%, alpha = 30 only */
    for (int pi = 0; pi < np; pi++)
        for (int ai = 0; ai < np; ai++) {
            qk_gen_spec s;
            qk_gen_spec_default(&s);
            s.dist = QK_DIST_OUTLIER, s.outlier_frac = ps[pi], s.outlier_alpha = as[ai];
            float *x = gen(&s, 42, Mc + M, K);
            if (!x) continue;
            char name[64];
            snprintf(name, sizeof name, "p=%g%% a=%g", ps[pi] * 100, as[ai]);
            qk_outlier_row *r = all + n;
            int rc = qk_outlier_compare(&c, name, w, N, x, Mc, x + Mc * K, M, K, r, err, sizeof err);
            CHECK(rc == 0, "%s: %s", name, err);
            free(x);
            if (rc) continue;
            n += QK_OS_COUNT;
            CHECK(r[QK_OS_FP32].sqnr_db > 100, "%s: the f32 path is at %.1f dB", name, r[QK_OS_FP32].sqnr_db);
            CHECK(r[QK_OS_W4A4].e_wa > 2 * r[QK_OS_W4A8].e_wa, "%s: no W4A4 -> W4A8 gap to recover", name);
            CHECK(r[QK_OS_SPLIT].recovery > 0.5, "%s: split recovers %.3f of the gap", name, r[QK_OS_SPLIT].recovery);
            CHECK(r[QK_OS_SPLIT8].recovery > 0.5, "%s: split8 recovers %.3f of the gap", name, r[QK_OS_SPLIT8].recovery);
            /* int8 outlier columns cost a fraction of the f32 ones' bits and lose little against them */
            CHECK(r[QK_OS_SPLIT8].bpw < r[QK_OS_SPLIT].bpw, "%s: split8 bpw %.3f not below split's %.3f", name, r[QK_OS_SPLIT8].bpw,
                  r[QK_OS_SPLIT].bpw);
            CHECK(r[QK_OS_SPLIT8].e_wa < 1.1 * r[QK_OS_SPLIT].e_wa, "%s: split8 e_WA %.3e vs split %.3e", name, r[QK_OS_SPLIT8].e_wa,
                  r[QK_OS_SPLIT].e_wa);
            CHECK(r[QK_OS_ROTATE].recovery > 0.5, "%s: rotation recovers %.3f of the gap", name, r[QK_OS_ROTATE].recovery);
            /* the kernels' own output agrees with the exact math on the same quantized values */
            for (int st = QK_OS_W4A4; st < QK_OS_COUNT; st++)
                CHECK(fabs(r[st].sqnr_db - qk_sqnr_db(r[st].e_wa)) < 0.5, "%s %s: kernel SQNR %.2f dB vs exact %.2f dB", name,
                      qk_ostrat_name((qk_ostrat)st), r[st].sqnr_db, qk_sqnr_db(r[st].e_wa));
        }
    qk_outlier_print(stdout, all, n);
    free(w);
}

int main(void) {
    test_detection();
    test_recovery();
    return tu_finish("test_acc_outliers");
}
