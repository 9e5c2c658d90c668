/* Seeded generators: the scalar libm path, the dispatch to the SLEEF AVX2
 * path (gen_avx2.c), and the matrix-level generators (outlier channels,
 * SwiGLU products). Element layout, shared with gen_avx2.c: elements come in
 * blocks of 16; block b of
 *   gauss:            hashes 8b+t (t < 8): u1 = low 32 bits, u2 = high 32 bits,
 *                     r = √(−2 ln u1); element t = r·cos 2πu2, element 8+t = r·sin 2πu2
 *   uniform, laplace: element t = f(low 32 bits of hash 8b+t), element 8+t = f(its high 32 bits)
 *   student:          hash 16b+t: u1 = low, u2 = high; element t = √(ν(u1^(−2/ν) − 1))·cos 2πu2
 * (Bailey's polar formula, one output per hash: its sin partner is dependent). */
#include "gen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qk/qk.h"
#include "qk_build_config.h"

/* The SLEEF AVX2 path exists when the avx2 tier and SLEEF were both found. */
#if QK_HAVE_AVX2 && defined(QK_HAVE_SLEEF) && QK_HAVE_SLEEF
#define QK_GEN_SLEEF_AVX2 1
#else
#define QK_GEN_SLEEF_AVX2 0
#endif

static const char *const dist_names[QK_DIST_COUNT] = {"gauss", "laplace", "t", "uniform", "outlier", "swiglu"};

void qk_gen_spec_default(qk_gen_spec *s) {
    s->dist = QK_DIST_GAUSS;
    s->nu = 4.0;
    s->outlier_frac = 0.01;
    s->outlier_alpha = 20.0;
    s->swiglu_dim = 256;
}

const char *qk_dist_name(qk_dist d) { return (unsigned)d < QK_DIST_COUNT ? dist_names[d] : "?"; }

int qk_dist_parse(const char *s, qk_dist *out) {
    static const struct { const char *name; qk_dist d; } alias[] = {
        {"gauss", QK_DIST_GAUSS},   {"gaussian", QK_DIST_GAUSS},   {"normal", QK_DIST_GAUSS},
        {"laplace", QK_DIST_LAPLACE}, {"t", QK_DIST_STUDENT},      {"student", QK_DIST_STUDENT},
        {"uniform", QK_DIST_UNIFORM}, {"outlier", QK_DIST_OUTLIER}, {"swiglu", QK_DIST_SWIGLU},
    };
    for (size_t i = 0; s && i < sizeof alias / sizeof alias[0]; i++)
        if (!strcmp(s, alias[i].name)) {
            *out = alias[i].d;
            return 0;
        }
    return -1;
}

const char *qk_gen_spec_check(const qk_gen_spec *s) {
    if ((unsigned)s->dist >= QK_DIST_COUNT) return "unknown distribution";
    if (s->dist == QK_DIST_STUDENT && !(s->nu >= 1.0 && s->nu <= 1e6))
        return "Student-t needs 1 <= nu <= 1e6 (below 1 the f32 samples overflow)";
    if (s->dist == QK_DIST_OUTLIER && !(s->outlier_frac >= 0.0 && s->outlier_frac <= 1.0))
        return "the outlier fraction p must lie in [0, 1]";
    if (s->dist == QK_DIST_OUTLIER && !(isfinite(s->outlier_alpha) && s->outlier_alpha > 0.0 && s->outlier_alpha <= 1e6))
        return "the outlier scale alpha must lie in (0, 1e6]";
    if (s->dist == QK_DIST_SWIGLU && (s->swiglu_dim < 1 || s->swiglu_dim > 65536))
        return "the SwiGLU inner dimension must lie in [1, 65536]";
    return NULL;
}

void qk_gen_spec_describe(const qk_gen_spec *s, char *buf, size_t len) {
    switch (s->dist) {
    case QK_DIST_STUDENT: snprintf(buf, len, "t(nu=%g)", s->nu); break;
    case QK_DIST_OUTLIER: snprintf(buf, len, "outlier(p=%g, alpha=%g)", s->outlier_frac, s->outlier_alpha); break;
    case QK_DIST_SWIGLU: snprintf(buf, len, "swiglu(D=%zu)", s->swiglu_dim); break;
    default: snprintf(buf, len, "%s", qk_dist_name(s->dist)); break;
    }
}

/* ---- scalar libm path ---- */

static const float two_pi_f = 6.28318530717958647692f;

/* The 16 elements of block b. */
static void block_scalar(qk_dist d, float nu, uint64_t key, uint64_t b, float *out) {
    switch (d) {
    case QK_DIST_STUDENT: {
        float scale = nu > 2.0f ? sqrtf((nu - 2.0f) / nu) : 1.0f, e = -2.0f / nu;
        for (int t = 0; t < 16; t++) {
            uint64_t h = qk_gen_hash(key, 16 * b + (uint64_t)t);
            float u1 = qk_gen_u01((uint32_t)h), u2 = qk_gen_u01((uint32_t)(h >> 32));
            float r = sqrtf(nu * expm1f(e * logf(u1)));
            out[t] = r * cosf(two_pi_f * u2) * scale;
        }
        break;
    }
    case QK_DIST_UNIFORM:
        for (int t = 0; t < 8; t++) {
            uint64_t h = qk_gen_hash(key, 8 * b + (uint64_t)t);
            out[t] = (2.0f * qk_gen_u01((uint32_t)h) - 1.0f) * 1.7320508075688772f;
            out[t + 8] = (2.0f * qk_gen_u01((uint32_t)(h >> 32)) - 1.0f) * 1.7320508075688772f;
        }
        break;
    case QK_DIST_LAPLACE:
        for (int t = 0; t < 16; t++) {
            uint64_t h = qk_gen_hash(key, 8 * b + (uint64_t)(t & 7));
            uint32_t v = t < 8 ? (uint32_t)h : (uint32_t)(h >> 32);
            float m = -logf(qk_gen_u01(v << 1)) * 0.70710678118654752f;
            out[t] = (v >> 31) ? -m : m;
        }
        break;
    default: /* gauss */
        for (int t = 0; t < 8; t++) {
            uint64_t h = qk_gen_hash(key, 8 * b + (uint64_t)t);
            float u1 = qk_gen_u01((uint32_t)h), u2 = qk_gen_u01((uint32_t)(h >> 32));
            float r = sqrtf(-2.0f * logf(u1)), a = two_pi_f * u2;
            out[t] = r * cosf(a);
            out[t + 8] = r * sinf(a);
        }
        break;
    }
}

/* Elements [offset, offset + n) through the scalar path. */
static void fill_scalar_range(qk_dist d, float nu, uint64_t key, uint64_t offset, float *x, size_t n) {
    float tmp[16];
    while (n) {
        uint64_t b = offset / 16;
        size_t i0 = (size_t)(offset % 16), take = 16 - i0 < n ? 16 - i0 : n;
        block_scalar(d, nu, key, b, tmp);
        memcpy(x, tmp + i0, take * sizeof(float));
        x += take;
        offset += take;
        n -= take;
    }
}

static qk_dist elementwise(qk_dist d) { return d == QK_DIST_OUTLIER || d == QK_DIST_SWIGLU ? QK_DIST_GAUSS : d; }

void qk_gen_fill_scalar(qk_dist d, double nu, uint64_t seed, uint64_t stream, uint64_t offset, float *x, size_t n) {
    fill_scalar_range(elementwise(d), (float)nu, qk_gen_key(seed, stream), offset, x, n);
}

int qk_gen_simd_available(void) {
#if QK_GEN_SLEEF_AVX2
    return qk_tier_allowed(QK_TIER_AVX2);
#else
    return 0;
#endif
}

int qk_gen_fill_simd(qk_dist d, double nu, uint64_t seed, uint64_t stream, uint64_t offset, float *x, size_t n) {
#if QK_GEN_SLEEF_AVX2
    if (!qk_tier_allowed(QK_TIER_AVX2)) return -1;
    d = elementwise(d);
    uint64_t key = qk_gen_key(seed, stream);
    size_t head = (size_t)((16 - offset % 16) % 16);
    if (head > n) head = n;
    fill_scalar_range(d, (float)nu, key, offset, x, head);
    x += head;
    offset += head;
    n -= head;
    size_t nb = n / 16;
    if (nb) qk_gen_blocks_avx2(d, (float)nu, key, offset / 16, nb, x);
    fill_scalar_range(d, (float)nu, key, offset + 16 * nb, x + 16 * nb, n - 16 * nb);
    return 0;
#else
    (void)d, (void)nu, (void)seed, (void)stream, (void)offset, (void)x, (void)n;
    return -1;
#endif
}

void qk_gen_fill(qk_dist d, double nu, uint64_t seed, uint64_t stream, uint64_t offset, float *x, size_t n) {
    if (qk_gen_fill_simd(d, nu, seed, stream, offset, x, n) != 0) qk_gen_fill_scalar(d, nu, seed, stream, offset, x, n);
}

/* ---- matrix generators ---- */

static int cmp_size(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

size_t qk_gen_outlier_channels(const qk_gen_spec *s, uint64_t seed, uint64_t stream, size_t cols, size_t *idx) {
    if (cols == 0) return 0;
    size_t count = (size_t)llround(s->outlier_frac * (double)cols);
    if (count < 1) count = 1;
    if (count > cols) count = cols;
    uint64_t key = qk_gen_key(seed, stream ^ 0x6f75746c69657273ull); /* "outliers" */
    for (size_t i = 0; i < cols; i++) idx[i] = i;
    for (size_t j = 0; j < count; j++) { /* partial Fisher–Yates */
        size_t k = j + (size_t)(qk_gen_hash(key, j) % (cols - j)), t = idx[j];
        idx[j] = idx[k];
        idx[k] = t;
    }
    qsort(idx, count, sizeof *idx, cmp_size);
    return count;
}

static void rowdot(const float *x, const float *w, size_t D, size_t N, float *out) {
#if QK_GEN_SLEEF_AVX2
    if (qk_tier_allowed(QK_TIER_AVX2)) {
        qk_gen_rowdot_avx2(x, w, D, N, out);
        return;
    }
#endif
    for (size_t n = 0; n < N; n++) {
        float acc = 0.0f;
        for (size_t k = 0; k < D; k++) acc += x[k] * w[n * D + k];
        out[n] = acc;
    }
}

static void swiglu(const float *a, const float *b, float *y, size_t n) {
#if QK_GEN_SLEEF_AVX2
    if (qk_tier_allowed(QK_TIER_AVX2)) {
        qk_gen_swiglu_avx2(a, b, y, n);
        return;
    }
#endif
    for (size_t i = 0; i < n; i++) y[i] = a[i] / (1.0f + expf(-a[i])) * b[i];
}

static int gen_swiglu(const qk_gen_spec *s, uint64_t seed, uint64_t stream, float *x, size_t rows, size_t cols, size_t ld,
                      char *err, size_t errlen) {
    size_t D = s->swiglu_dim;
    float *xr = malloc(D * sizeof(float)), *wg = malloc(cols * D * sizeof(float)), *wu = malloc(cols * D * sizeof(float));
    float *a = malloc(cols * sizeof(float)), *b = malloc(cols * sizeof(float));
    int rc = 0;
    if (!xr || !wg || !wu || !a || !b) {
        snprintf(err, errlen, "out of memory for the SwiGLU generator (%zu x %zu weights)", cols, D);
        rc = -1;
        goto done;
    }
    uint64_t sx = qk_gen_mix64(stream ^ 0x78ull), sg = qk_gen_mix64(stream ^ 0x6767ull), su = qk_gen_mix64(stream ^ 0x7575ull);
    qk_gen_fill(QK_DIST_GAUSS, 0, seed, sg, 0, wg, cols * D);
    qk_gen_fill(QK_DIST_GAUSS, 0, seed, su, 0, wu, cols * D);
    float ws = (float)(1.0 / sqrt((double)D));
    for (size_t i = 0; i < cols * D; i++) {
        wg[i] *= ws;
        wu[i] *= ws;
    }
    for (size_t r = 0; r < rows; r++) {
        qk_gen_fill(QK_DIST_GAUSS, 0, seed, sx, (uint64_t)r * D, xr, D);
        rowdot(xr, wg, D, cols, a);
        rowdot(xr, wu, D, cols, b);
        swiglu(a, b, x + r * ld, cols);
    }
done:
    free(xr), free(wg), free(wu), free(a), free(b);
    return rc;
}

int qk_gen_matrix(const qk_gen_spec *s, uint64_t seed, uint64_t stream, float *x, size_t rows, size_t cols, size_t ld,
                  char *err, size_t errlen) {
    const char *bad = qk_gen_spec_check(s);
    if (bad) {
        snprintf(err, errlen, "%s", bad);
        return -1;
    }
    if (s->dist == QK_DIST_SWIGLU) return gen_swiglu(s, seed, stream, x, rows, cols, ld, err, errlen);
    for (size_t r = 0; r < rows; r++) qk_gen_fill(s->dist, s->nu, seed, stream, (uint64_t)r * cols, x + r * ld, cols);
    if (s->dist == QK_DIST_OUTLIER) {
        size_t *idx = malloc((cols ? cols : 1) * sizeof *idx);
        if (!idx) {
            snprintf(err, errlen, "out of memory choosing outlier channels");
            return -1;
        }
        size_t c = qk_gen_outlier_channels(s, seed, stream, cols, idx);
        float alpha = (float)s->outlier_alpha;
        for (size_t r = 0; r < rows; r++)
            for (size_t i = 0; i < c; i++) x[r * ld + idx[i]] *= alpha;
        free(idx);
    }
    return 0;
}
