/* Outlier-handling transforms (DESIGN §5), every variant this CPU can run:
 *  - the FWHT matches a naive O(n²) Hadamard product (in double) within
 *    (log2 b + 2)·u·Σ|x|/√b, for blocks 2 ... 4096, and is its own inverse;
 *  - with nothing quantized every strategy reproduces X·Wᵀ: rotation
 *    (XH)(WH)ᵀ, smoothing (X·diag(1/s))(W·diag(s))ᵀ, and the channel split
 *    XZ·Wᵀ + XO·WOᵀ, within the f32 gemm's error model;
 *  - colscale and colsplit are exact; gemm_f32 is within 2(K+16)u·Σ|x·w|;
 *  - gemm_i8 (the outlier columns in int8) writes exactly the bits of
 *    (sx·sw)·(float)Σ x·w (+ y) on every tier, for K tails, N and M off the
 *    tile, extreme codes and K = 65536 (the int32 bound); rowquant_i8 codes
 *    are within half a step and hit ±127 at the row's absmax; the int8 split
 *    reproduces X·Wᵀ when the outlier columns are exactly representable;
 *  - bad arguments are refused. */
#include "test_util.h"

static const double U = 0x1p-24;

static int popcount(size_t v) {
    int c = 0;
    for (; v; v &= v - 1) c++;
    return c;
}

static void test_fwht(tu_rng *rng) {
    size_t blocks[] = {2, 4, 8, 16, 32, 64, 128, 256, 1024, tu_quick() ? 512 : 4096};
    for (size_t ki = 0; ki < qk_fwht_kernel_count; ki++) {
        const qk_fwht_kernel *k = &qk_fwht_kernels[ki];
        const char *why = qk_tier_unavailable_reason(k->tier);
        if (why) {
            tu_skipf("%s: %s", k->name, why);
            continue;
        }
        int cases = 0, good = 0;
        for (size_t bi = 0; bi < sizeof blocks / sizeof blocks[0]; bi++) {
            size_t b = blocks[bi], K = b * (b <= 256 ? 3 : 1), M = 3, ldx = K + 5;
            float *x = malloc(M * ldx * sizeof(float)), *x0 = malloc(M * ldx * sizeof(float));
            tu_fill(rng, x0, M * ldx, TU_OUTLIER);
            memcpy(x, x0, M * ldx * sizeof(float));
            CHECK(qk_fwht_with(k, x, ldx, M, K, b) == QK_OK, "%s: %s", k->name, qk_last_error());
            int ok = 1;
            double lg = log2((double)b), rs = 1.0 / sqrt((double)b);
            for (size_t m = 0; m < M; m++) {
                for (size_t blk = 0; blk < K; blk += b) {
                    const float *v = x0 + m * ldx + blk;
                    double sabs = 0;
                    for (size_t j = 0; j < b; j++) sabs += fabs(v[j]);
                    for (size_t i = 0; i < b; i++) {
                        double ref = 0;
                        for (size_t j = 0; j < b; j++) ref += (popcount(i & j) & 1 ? -1.0 : 1.0) * v[j];
                        ref *= rs;
                        double err = fabs(x[m * ldx + blk + i] - ref), tol = (lg + 2) * U * sabs * rs * 2 + 1e-37;
                        if (err > tol && ok) {
                            CHECK(err <= tol, "%s b=%zu row %zu elem %zu: %g vs %g (tol %g)", k->name, b, m, blk + i,
                                  (double)x[m * ldx + blk + i], ref, tol);
                            ok = 0;
                        }
                    }
                }
                for (size_t c = K; c < ldx; c++) /* the stride gap is untouched */
                    if (x[m * ldx + c] != x0[m * ldx + c]) ok = 0;
            }
            /* H is orthonormal and symmetric: applying it twice returns x */
            CHECK(qk_fwht_with(k, x, ldx, M, K, b) == QK_OK, "%s", qk_last_error());
            for (size_t m = 0; m < M; m++)
                for (size_t blk = 0; blk < K; blk += b) {
                    double sabs = 0;
                    for (size_t j = 0; j < b; j++) sabs += fabs(x0[m * ldx + blk + j]);
                    for (size_t j = 0; j < b; j++) {
                        size_t i = m * ldx + blk + j;
                        if (fabs(x[i] - x0[i]) > 2 * (2 * lg + 4) * U * sabs + 1e-37 && ok) {
                            CHECK(0, "%s b=%zu: H·H·x != x at %zu (%g vs %g)", k->name, b, i, (double)x[i], (double)x0[i]);
                            ok = 0;
                        }
                    }
                }
            cases++;
            good += ok;
            free(x);
            free(x0);
        }
        CHECK(good == cases, "%s", k->name);
        printf("%-28s %d/%d block sizes match the naive Hadamard product\n", k->name, good, cases);
    }
}

/* y = x·wᵀ in double, and Σ|x·w| */
static void exact_gemm(size_t M, size_t N, size_t K, const float *x, size_t ldx, const float *w, size_t ldw, double *y, double *mag) {
    for (size_t m = 0; m < M; m++)
        for (size_t n = 0; n < N; n++) {
            double a = 0, b = 0;
            for (size_t k = 0; k < K; k++) {
                a += (double)x[m * ldx + k] * w[n * ldw + k];
                b += fabs((double)x[m * ldx + k] * w[n * ldw + k]);
            }
            y[m * N + n] = a;
            mag[m * N + n] = b;
        }
}

static int close_to(const float *y, size_t ldy, const double *ref, const double *mag, size_t M, size_t N, size_t K, double factor,
                    const char *what) {
    for (size_t m = 0; m < M; m++)
        for (size_t n = 0; n < N; n++) {
            double err = fabs(y[m * ldy + n] - ref[m * N + n]), tol = factor * 2.0 * (double)(K + 16) * U * mag[m * N + n] + 1e-30;
            if (!(err <= tol)) {
                CHECK(err <= tol, "%s: y[%zu][%zu] = %.9g, exact %.9g, tol %.3g", what, m, n, (double)y[m * ldy + n], ref[m * N + n], tol);
                return 0;
            }
        }
    return 1;
}

static void test_gemm_f32(tu_rng *rng) {
    for (size_t ki = 0; ki < qk_gemm_f32_kernel_count; ki++) {
        const qk_gemm_f32_kernel *k = &qk_gemm_f32_kernels[ki];
        const char *why = qk_tier_unavailable_reason(k->tier);
        if (why) {
            tu_skipf("%s: %s", k->name, why);
            continue;
        }
        size_t shapes[][3] = {{1, 1, 1}, {1, 7, 5}, {3, 17, 33}, {5, 33, 129}, {17, 19, 256}, {70, 37, 300}, {1, 67, tu_quick() ? 1024 : 4096}};
        int good = 0, n = 0;
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
            for (int acc = 0; acc <= 1; acc++) {
                size_t M = shapes[si][0], N = shapes[si][1], K = shapes[si][2], ldx = K + 3, ldw = K + 1, ldy = N + 2;
                float *x = malloc(M * ldx * 4), *w = malloc(N * ldw * 4), *y = tu_canary_alloc(M * ldy);
                double *ref = malloc(M * N * 8), *mag = malloc(M * N * 8);
                tu_fill(rng, x, M * ldx, TU_GAUSS);
                tu_fill(rng, w, N * ldw, TU_GAUSS);
                exact_gemm(M, N, K, x, ldx, w, ldw, ref, mag);
                for (size_t m = 0; m < M; m++)
                    for (size_t j = 0; j < N; j++) {
                        y[m * ldy + j] = acc ? (float)(m + j) : 1e30f;
                        if (acc) {
                            ref[m * N + j] += (double)(m + j);
                            mag[m * N + j] += (double)(m + j);
                        }
                    }
                CHECK(qk_gemm_f32_with(k, M, N, K, x, ldx, w, ldw, y, ldy, acc) == QK_OK, "%s", qk_last_error());
                char what[96];
                snprintf(what, sizeof what, "%s M=%zu N=%zu K=%zu acc=%d", k->name, M, N, K, acc);
                int ok = close_to(y, ldy, ref, mag, M, N, K, 1.0, what);
                for (size_t m = 0; m < M; m++)
                    for (size_t j = N; j < ldy; j++) ok &= tu_is_canary(y + m * ldy + j);
                ok &= tu_canaries_ok(y, M * ldy);
                CHECK(ok, "%s", what);
                good += ok;
                n++;
                free(x);
                free(w);
                free(ref);
                free(mag);
                tu_canary_free(y);
            }
        printf("%-28s %d/%d shapes within the error model\n", k->name, good, n);
    }
}

static void test_colscale_colsplit(tu_rng *rng) {
    size_t M = 5, K = 333, ldx = K + 3, ldy = K + 1;
    float *x = malloc(M * ldx * 4), *s = malloc(K * 4);
    tu_fill(rng, x, M * ldx, TU_OUTLIER);
    for (size_t j = 0; j < K; j++) s[j] = (float)(0.25 + tu_uniform(rng) * 4);
    for (size_t ki = 0; ki < qk_colscale_kernel_count; ki++) {
        const qk_colscale_kernel *k = &qk_colscale_kernels[ki];
        if (qk_tier_unavailable_reason(k->tier)) {
            tu_skipf("%s: %s", k->name, qk_tier_unavailable_reason(k->tier));
            continue;
        }
        float *y = tu_canary_alloc(M * ldy);
        CHECK(qk_colscale_with(k, x, ldx, M, K, s, y, ldy) == QK_OK, "%s", qk_last_error());
        int ok = tu_canaries_ok(y, M * ldy);
        for (size_t m = 0; m < M; m++)
            for (size_t j = 0; j < K; j++) ok &= y[m * ldy + j] == x[m * ldx + j] * s[j];
        CHECK(ok, "%s: not exactly x·s", k->name);
        tu_canary_free(y);
    }
    uint32_t idx[] = {0, 5, 6, 100, 255, 332};
    size_t nidx = 6, ldo = nidx + 2;
    for (size_t ki = 0; ki < qk_colsplit_kernel_count; ki++) {
        const qk_colsplit_kernel *k = &qk_colsplit_kernels[ki];
        if (qk_tier_unavailable_reason(k->tier)) {
            tu_skipf("%s: %s", k->name, qk_tier_unavailable_reason(k->tier));
            continue;
        }
        float *xz = tu_canary_alloc(M * ldy), *xo = tu_canary_alloc(M * ldo);
        CHECK(qk_colsplit_with(k, x, ldx, M, K, idx, nidx, xz, ldy, xo, ldo) == QK_OK, "%s", qk_last_error());
        int ok = tu_canaries_ok(xz, M * ldy) && tu_canaries_ok(xo, M * ldo);
        for (size_t m = 0; m < M; m++) {
            size_t j = 0;
            for (size_t c = 0; c < K; c++) {
                int out = j < nidx && idx[j] == c;
                ok &= xz[m * ldy + c] == (out ? 0.0f : x[m * ldx + c]);
                if (out) ok &= xo[m * ldo + j++] == x[m * ldx + c];
            }
        }
        CHECK(ok, "%s: split is not exact", k->name);
        uint32_t bad[] = {3, 3};
        CHECK(qk_colsplit_with(k, x, ldx, M, K, bad, 2, xz, ldy, xo, ldo) == QK_ERR_ARG, "repeated index accepted");
        uint32_t far[] = {K};
        CHECK(qk_colsplit_with(k, x, ldx, M, K, far, 1, xz, ldy, xo, ldo) == QK_ERR_ARG, "index K accepted");
        tu_canary_free(xz);
        tu_canary_free(xo);
    }
    free(x);
    free(s);
}

/* gemm_i8: every variant against the expression computed here with int64 sums. */
static void test_gemm_i8(tu_rng *rng) {
    size_t shapes[][3] = {{1, 1, 1}, {1, 3, 5}, {4, 4, 16}, {5, 7, 17}, {9, 5, 31}, {3, 9, 33}, {6, 13, 100}, {2, 2, 65536}, {7, 11, 1000}};
    for (size_t ki = 0; ki < qk_gemm_i8_kernel_count; ki++) {
        const qk_gemm_i8_kernel *k = &qk_gemm_i8_kernels[ki];
        const char *why = qk_tier_unavailable_reason(k->tier);
        if (why) {
            tu_skipf("%s: %s", k->name, why);
            continue;
        }
        int good = 0, n = 0;
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
            for (int mode = 0; mode < 3; mode++) { /* 0: random codes, 1: -128 x -128 (the largest sums), 2: -128 x 127, accumulate */
                size_t M = shapes[si][0], N = shapes[si][1], K = shapes[si][2], ldx = K + 3, ldw = K + 1, ldy = N + 2;
                int8_t *x = malloc(M * ldx), *w = malloc(N * ldw);
                float *sx = malloc(M * 4), *sw = malloc(N * 4), *y = tu_canary_alloc(M * ldy), *want = malloc(M * N * 4);
                for (size_t i = 0; i < M * ldx; i++) x[i] = mode ? -128 : (int8_t)(tu_next(rng) & 0xff);
                for (size_t i = 0; i < N * ldw; i++) w[i] = mode == 1 ? -128 : mode == 2 ? 127 : (int8_t)(tu_next(rng) & 0xff);
                for (size_t m = 0; m < M; m++) sx[m] = (float)(tu_uniform(rng) * 0.1 + 1e-3);
                for (size_t j = 0; j < N; j++) sw[j] = (float)(tu_uniform(rng) * 0.01 + 1e-4);
                const int acc = mode == 2;
                int ok = 1;
                for (size_t m = 0; m < M; m++)
                    for (size_t j = 0; j < N; j++) {
                        int64_t d = 0;
                        for (size_t c = 0; c < K; c++) d += (int64_t)x[m * ldx + c] * w[j * ldw + c];
                        ok &= d == (int32_t)d;
                        y[m * ldy + j] = acc ? (float)(m + 2 * j) - 3.5f : 1e30f;
                        const float v = sx[m] * sw[j] * (float)d;
                        want[m * N + j] = acc ? y[m * ldy + j] + v : v;
                    }
                CHECK(qk_gemm_i8_with(k, M, N, K, x, ldx, sx, w, ldw, sw, y, ldy, acc) == QK_OK, "%s", qk_last_error());
                for (size_t m = 0; m < M; m++) {
                    for (size_t j = 0; j < N; j++)
                        if (memcmp(&y[m * ldy + j], &want[m * N + j], 4) && ok) {
                            CHECK(0, "%s M=%zu N=%zu K=%zu mode %d: y[%zu][%zu] = %.9g, expected %.9g", k->name, M, N, K, mode, m, j,
                                  (double)y[m * ldy + j], (double)want[m * N + j]);
                            ok = 0;
                        }
                    for (size_t j = N; j < ldy; j++) ok &= tu_is_canary(y + m * ldy + j);
                }
                ok &= tu_canaries_ok(y, M * ldy);
                CHECK(ok, "%s M=%zu N=%zu K=%zu mode %d", k->name, M, N, K, mode);
                good += ok, n++;
                free(x), free(w), free(sx), free(sw), free(want);
                tu_canary_free(y);
            }
        printf("%-28s %d/%d cases bit-exact\n", k->name, good, n);
    }
    /* bad arguments */
    int8_t c[4] = {1, 2, 3, 4};
    float s1 = 1, y1 = 0, snan = NAN;
    CHECK(qk_gemm_i8_with(NULL, 1, 1, 65537, c, 65537, &s1, c, 65537, &s1, &y1, 1, 0) == QK_ERR_SHAPE, "K=65537 accepted");
    CHECK(qk_gemm_i8_with(NULL, 1, 1, 4, c, 4, &snan, c, 4, &s1, &y1, 1, 0) == QK_ERR_NONFINITE, "a NaN scale accepted");
    CHECK(qk_gemm_i8_with(NULL, 1, 1, 4, NULL, 4, &s1, c, 4, &s1, &y1, 1, 0) == QK_ERR_ARG, "NULL codes accepted");
    CHECK(qk_gemm_i8_with(NULL, 1, 1, 4, c, 3, &s1, c, 4, &s1, &y1, 1, 0) == QK_ERR_ARG, "stride below K accepted");
}

static void test_rowquant_i8(tu_rng *rng) {
    size_t M = 6, K = 37, ldx = K + 2, ldq = K + 5;
    float *x = malloc(M * ldx * 4), s[6];
    int8_t *q = malloc(M * ldq);
    tu_fill(rng, x, M * ldx, TU_OUTLIER);
    for (size_t k = 0; k < K; k++) x[2 * ldx + k] = 0.0f;    /* an all-zero row */
    x[4 * ldx + 5] = 1e-40f, x[4 * ldx + 6] = -3e-41f;          /* a row of subnormals */
    for (size_t k = 0; k < K; k++) if (k != 5 && k != 6) x[4 * ldx + k] = 0.0f;
    CHECK(qk_rowquant_i8(x, ldx, M, K, q, ldq, s) == QK_OK, "%s", qk_last_error());
    int ok = 1;
    for (size_t m = 0; m < M; m++) {
        float amax = 0;
        int top = 0;
        for (size_t k = 0; k < K; k++) amax = fmaxf(amax, fabsf(x[m * ldx + k]));
        ok &= s[m] == amax / 127.0f;
        for (size_t k = 0; k < K; k++) {
            int v = q[m * ldq + k];
            ok &= v >= -127 && v <= 127;
            top |= v == 127 || v == -127;
            double err = fabs((double)x[m * ldx + k] - (double)amax / 127.0 * v);
            ok &= err <= (double)amax / 254.0 * (1 + 1e-6) + 1e-45;
        }
        ok &= amax > 0 ? top : 1;
        if (amax == 0)
            for (size_t k = 0; k < K; k++) ok &= q[m * ldq + k] == 0;
    }
    CHECK(ok, "rowquant_i8: codes out of range, not within half a step, or the absmax not at ±127");
    x[3 * ldx + 1] = INFINITY;
    CHECK(qk_rowquant_i8(x, ldx, M, K, q, ldq, s) == QK_ERR_NONFINITE, "an infinite value accepted");
    free(x), free(q);
}

/* With nothing quantized, each strategy reproduces X·Wᵀ (dispatcher's kernels). */
static void test_identities(tu_rng *rng) {
    size_t M = 4, N = 9, K = 512, b = 128;
    float *x = malloc(M * K * 4), *w = malloc(N * K * 4), *y = malloc(M * N * 4);
    double *ref = malloc(M * N * 8), *mag = malloc(M * N * 8);
    tu_fill(rng, x, M * K, TU_OUTLIER);
    tu_fill(rng, w, N * K, TU_GAUSS);
    exact_gemm(M, N, K, x, K, w, K, ref, mag);

    /* rotation */
    float *xr = malloc(M * K * 4), *wr = malloc(N * K * 4);
    memcpy(xr, x, M * K * 4);
    memcpy(wr, w, N * K * 4);
    CHECK(qk_fwht_with(NULL, xr, K, M, K, b) == QK_OK && qk_fwht_with(NULL, wr, K, N, K, b) == QK_OK, "%s", qk_last_error());
    CHECK(qk_gemm_f32_with(NULL, M, N, K, xr, K, wr, K, y, N, 0) == QK_OK, "%s", qk_last_error());
    CHECK(close_to(y, N, ref, mag, M, N, K, 4.0, "rotation (XH)(WH)ᵀ"), "rotation");

    /* smoothing: s_j = sqrt(max|X_j| / max|W_j|) (α = 0.5) */
    float *s = malloc(K * 4), *si = malloc(K * 4);
    for (size_t j = 0; j < K; j++) {
        float ax = 1e-6f, aw = 1e-6f;
        for (size_t m = 0; m < M; m++) ax = fmaxf(ax, fabsf(x[m * K + j]));
        for (size_t n = 0; n < N; n++) aw = fmaxf(aw, fabsf(w[n * K + j]));
        s[j] = sqrtf(ax / aw);
        si[j] = 1.0f / s[j];
    }
    CHECK(qk_colscale_with(NULL, x, K, M, K, si, xr, K) == QK_OK && qk_colscale_with(NULL, w, K, N, K, s, wr, K) == QK_OK, "%s",
          qk_last_error());
    CHECK(qk_gemm_f32_with(NULL, M, N, K, xr, K, wr, K, y, N, 0) == QK_OK, "%s", qk_last_error());
    CHECK(close_to(y, N, ref, mag, M, N, K, 4.0, "smoothing (X/s)(W·s)ᵀ"), "smoothing");

    /* channel split: XZ·Wᵀ + XO·WOᵀ, with W's outlier columns gathered */
    uint32_t idx[] = {3, 64, 200, 511};
    size_t no = 4;
    float *xo = malloc(M * no * 4), *wo = malloc(N * no * 4), *wz = malloc(N * K * 4);
    CHECK(qk_colsplit_with(NULL, x, K, M, K, idx, no, xr, K, xo, no) == QK_OK, "%s", qk_last_error());
    CHECK(qk_colsplit_with(NULL, w, K, N, K, idx, no, wz, K, wo, no) == QK_OK, "%s", qk_last_error());
    CHECK(qk_gemm_f32_with(NULL, M, N, K, xr, K, w, K, y, N, 0) == QK_OK, "%s", qk_last_error());
    CHECK(qk_gemm_f32_with(NULL, M, N, no, xo, no, wo, no, y, N, 1) == QK_OK, "%s", qk_last_error());
    CHECK(close_to(y, N, ref, mag, M, N, K, 2.0, "channel split"), "split");

    /* the same split with the outlier columns in int8: exact when they are s·(integer codes), one at ±127 per row */
    float *xi = malloc(M * K * 4), *wi = malloc(N * K * 4), sx[4], sw[9];
    int8_t qx[4 * 4], qw[9 * 4];
    memcpy(xi, x, M * K * 4);
    memcpy(wi, w, N * K * 4);
    for (size_t m = 0; m < M; m++)
        for (size_t j = 0; j < no; j++) xi[m * K + idx[j]] = 0.25f * (float)(j == m % no ? -127 : (int)(tu_next(rng) % 255) - 127);
    for (size_t n = 0; n < N; n++)
        for (size_t j = 0; j < no; j++) wi[n * K + idx[j]] = 0.125f * (float)(j == n % no ? 127 : (int)(tu_next(rng) % 255) - 127);
    exact_gemm(M, N, K, xi, K, wi, K, ref, mag);
    CHECK(qk_colsplit_with(NULL, xi, K, M, K, idx, no, xr, K, xo, no) == QK_OK, "%s", qk_last_error());
    CHECK(qk_colsplit_with(NULL, wi, K, N, K, idx, no, wz, K, wo, no) == QK_OK, "%s", qk_last_error());
    CHECK(qk_rowquant_i8(xo, no, M, no, qx, no, sx) == QK_OK && qk_rowquant_i8(wo, no, N, no, qw, no, sw) == QK_OK, "%s", qk_last_error());
    CHECK(sx[0] == 0.25f && sw[0] == 0.125f, "rowquant_i8 scales %g %g, expected 0.25 and 0.125", (double)sx[0], (double)sw[0]);
    CHECK(qk_gemm_f32_with(NULL, M, N, K, xr, K, wz, K, y, N, 0) == QK_OK, "%s", qk_last_error());
    CHECK(qk_gemm_i8_with(NULL, M, N, no, qx, no, sx, qw, no, sw, y, N, 1) == QK_OK, "%s", qk_last_error());
    CHECK(close_to(y, N, ref, mag, M, N, K, 2.0, "channel split, int8 outlier columns"), "split int8");
    free(xi), free(wi);

    /* bad arguments */
    CHECK(qk_fwht_with(NULL, xr, K, M, K, 96) == QK_ERR_SHAPE, "block 96 accepted");
    CHECK(qk_fwht_with(NULL, xr, K, M, 384, 256) == QK_ERR_SHAPE, "K=384 with block 256 accepted");
    si[7] = INFINITY;
    CHECK(qk_colscale_with(NULL, x, K, M, K, si, xr, K) == QK_ERR_NONFINITE, "an infinite scale accepted");
    free(x); free(w); free(y); free(ref); free(mag); free(xr); free(wr); free(s); free(si); free(xo); free(wo); free(wz);
}

int main(void) {
    tu_rng rng = {tu_seed()};
    test_fwht(&rng);
    test_gemm_f32(&rng);
    test_colscale_colsplit(&rng);
    test_gemm_i8(&rng);
    test_rowquant_i8(&rng);
    test_identities(&rng);
    return tu_finish("test_outlier");
}
