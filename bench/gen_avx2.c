/* The SLEEF AVX2 path of the generators (gen.h): the same element layout as
 * the scalar path in gen.c, eight lanes at a time, with SLEEF's vectorized
 * log/expm1/sincos/cos/exp (1-ulp variants). Compiled with the avx2 tier's flags only; gen.c
 * calls it behind qk_tier_allowed(QK_TIER_AVX2). */
#if !defined(__AVX2__) || !defined(__FMA__)
#error "gen_avx2.c needs the avx2 tier's flags"
#endif
#include "gen.h"

#if defined(QK_HAVE_SLEEF) && QK_HAVE_SLEEF
#include <immintrin.h>
#include <math.h>
#include <sleef.h>

/* a · c for 64-bit lanes and a 64-bit constant c (AVX2 has no 64-bit mullo). */
static inline __m256i mul64c(__m256i a, uint64_t c) {
    const __m256i clo = _mm256_set1_epi64x((long long)(c & 0xffffffffu)), chi = _mm256_set1_epi64x((long long)(c >> 32));
    __m256i lo = _mm256_mul_epu32(a, clo);
    __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(a, 32), clo), _mm256_mul_epu32(a, chi));
    return _mm256_add_epi64(lo, _mm256_slli_epi64(cross, 32));
}

static inline __m256i mix64(__m256i z) {
    z = _mm256_xor_si256(z, _mm256_srli_epi64(z, 30));
    z = mul64c(z, 0xbf58476d1ce4e5b9ull);
    z = _mm256_xor_si256(z, _mm256_srli_epi64(z, 27));
    z = mul64c(z, 0x94d049bb133111ebull);
    return _mm256_xor_si256(z, _mm256_srli_epi64(z, 31));
}

/* Hashes j0 .. j0+7 (as qk_gen_hash), split into their low and high 32-bit halves. */
static inline void hash8(uint64_t key, uint64_t j0, __m256i *lo, __m256i *hi) {
    const uint64_t g = 0x9e3779b97f4a7c15ull;
    uint64_t s = key + (j0 + 1) * g;
    __m256i c0 = _mm256_setr_epi64x((long long)s, (long long)(s + g), (long long)(s + 2 * g), (long long)(s + 3 * g));
    __m256i c1 = _mm256_add_epi64(c0, _mm256_set1_epi64x((long long)(4 * g)));
    __m256i h0 = mix64(c0), h1 = mix64(c1);
    const __m256i idx = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
    __m256i a = _mm256_permutevar8x32_epi32(h0, idx), b = _mm256_permutevar8x32_epi32(h1, idx);
    *lo = _mm256_permute2x128_si256(a, b, 0x20);
    *hi = _mm256_permute2x128_si256(a, b, 0x31);
}

/* qk_gen_u01 on eight lanes. */
static inline __m256 u01(__m256i v) {
    __m256i m = _mm256_or_si256(_mm256_srli_epi32(v, 8), _mm256_set1_epi32(1));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(m), _mm256_set1_ps(0x1p-24f));
}

void qk_gen_blocks_avx2(qk_dist d, float nu, uint64_t key, uint64_t b0, size_t nb, float *x) {
    __m256i lo, hi;
    switch (d) {
    case QK_DIST_STUDENT: {
        const __m256 vnu = _mm256_set1_ps(nu), ve = _mm256_set1_ps(-2.0f / nu), two_pi = _mm256_set1_ps(6.28318530717958647692f);
        const __m256 scale = _mm256_set1_ps(nu > 2.0f ? sqrtf((nu - 2.0f) / nu) : 1.0f);
        for (size_t b = 0; b < nb; b++)
            for (int half = 0; half < 2; half++) {
                hash8(key, 16 * (b0 + b) + 8 * (uint64_t)half, &lo, &hi);
                __m256 u1 = u01(lo), u2 = u01(hi);
                __m256 r = _mm256_sqrt_ps(_mm256_mul_ps(vnu, Sleef_expm1f8_u10avx2(_mm256_mul_ps(ve, Sleef_logf8_u10avx2(u1)))));
                __m256 c = Sleef_cosf8_u10avx2(_mm256_mul_ps(two_pi, u2));
                _mm256_storeu_ps(x + 16 * b + 8 * half, _mm256_mul_ps(_mm256_mul_ps(r, c), scale));
            }
        break;
    }
    case QK_DIST_UNIFORM: {
        const __m256 one = _mm256_set1_ps(1.0f), two = _mm256_set1_ps(2.0f), s3 = _mm256_set1_ps(1.7320508075688772f);
        for (size_t b = 0; b < nb; b++) {
            hash8(key, 8 * (b0 + b), &lo, &hi);
            _mm256_storeu_ps(x + 16 * b, _mm256_mul_ps(_mm256_sub_ps(_mm256_mul_ps(two, u01(lo)), one), s3));
            _mm256_storeu_ps(x + 16 * b + 8, _mm256_mul_ps(_mm256_sub_ps(_mm256_mul_ps(two, u01(hi)), one), s3));
        }
        break;
    }
    case QK_DIST_LAPLACE: {
        const __m256 nb_ = _mm256_set1_ps(-0.70710678118654752f);
        const __m256i sign = _mm256_set1_epi32((int)0x80000000u);
        for (size_t b = 0; b < nb; b++) {
            hash8(key, 8 * (b0 + b), &lo, &hi);
            for (int half = 0; half < 2; half++) {
                __m256i v = half ? hi : lo;
                __m256 m = _mm256_mul_ps(Sleef_logf8_u10avx2(u01(_mm256_slli_epi32(v, 1))), nb_);
                m = _mm256_xor_ps(m, _mm256_castsi256_ps(_mm256_and_si256(v, sign)));
                _mm256_storeu_ps(x + 16 * b + 8 * half, m);
            }
        }
        break;
    }
    default: { /* gauss */
        const __m256 m2 = _mm256_set1_ps(-2.0f), two_pi = _mm256_set1_ps(6.28318530717958647692f);
        for (size_t b = 0; b < nb; b++) {
            hash8(key, 8 * (b0 + b), &lo, &hi);
            __m256 r = _mm256_sqrt_ps(_mm256_mul_ps(m2, Sleef_logf8_u10avx2(u01(lo))));
            Sleef___m256_2 sc = Sleef_sincosf8_u10avx2(_mm256_mul_ps(two_pi, u01(hi)));
            _mm256_storeu_ps(x + 16 * b, _mm256_mul_ps(r, sc.y));
            _mm256_storeu_ps(x + 16 * b + 8, _mm256_mul_ps(r, sc.x));
        }
        break;
    }
    }
}

void qk_gen_swiglu_avx2(const float *a, const float *b, float *y, size_t n) {
    const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 va = _mm256_loadu_ps(a + i);
        __m256 e = Sleef_expf8_u10avx2(_mm256_sub_ps(zero, va));
        _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_div_ps(va, _mm256_add_ps(one, e)), _mm256_loadu_ps(b + i)));
    }
    for (; i < n; i++) {
        __m256 va = _mm256_set1_ps(a[i]);
        __m256 e = Sleef_expf8_u10avx2(_mm256_sub_ps(zero, va));
        y[i] = _mm256_cvtss_f32(_mm256_mul_ps(_mm256_div_ps(va, _mm256_add_ps(one, e)), _mm256_set1_ps(b[i])));
    }
}

static inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

void qk_gen_rowdot_avx2(const float *x, const float *w, size_t D, size_t N, float *out) {
    size_t n = 0;
    for (; n + 4 <= N; n += 4) {
        const float *w0 = w + n * D, *w1 = w0 + D, *w2 = w1 + D, *w3 = w2 + D;
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        size_t k = 0;
        for (; k + 8 <= D; k += 8) {
            __m256 vx = _mm256_loadu_ps(x + k);
            a0 = _mm256_fmadd_ps(vx, _mm256_loadu_ps(w0 + k), a0);
            a1 = _mm256_fmadd_ps(vx, _mm256_loadu_ps(w1 + k), a1);
            a2 = _mm256_fmadd_ps(vx, _mm256_loadu_ps(w2 + k), a2);
            a3 = _mm256_fmadd_ps(vx, _mm256_loadu_ps(w3 + k), a3);
        }
        float s0 = hsum(a0), s1 = hsum(a1), s2 = hsum(a2), s3 = hsum(a3);
        for (; k < D; k++) {
            s0 += x[k] * w0[k];
            s1 += x[k] * w1[k];
            s2 += x[k] * w2[k];
            s3 += x[k] * w3[k];
        }
        out[n] = s0, out[n + 1] = s1, out[n + 2] = s2, out[n + 3] = s3;
    }
    for (; n < N; n++) {
        const float *wr = w + n * D;
        __m256 acc = _mm256_setzero_ps();
        size_t k = 0;
        for (; k + 8 <= D; k += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(x + k), _mm256_loadu_ps(wr + k), acc);
        float s = hsum(acc);
        for (; k < D; k++) s += x[k] * wr[k];
        out[n] = s;
    }
}
#else
/* Without SLEEF the generators run the scalar libm path only. */
typedef int qk_gen_avx2_without_sleef;
#endif
