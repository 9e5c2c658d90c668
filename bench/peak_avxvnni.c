/* Probe loop of the avxvnni tier: the VEX-encoded ymm vpdpbusd. */
#if !defined(__AVX2__) || !defined(__AVXVNNI__)
#error "peak_avxvnni.c needs the avxvnni tier's flags"
#endif
#include <immintrin.h>

#include "peak.h"

#define OPAQUE(v) __asm__ volatile("" : "+x"(v))

static double hsum_ps(__m256 v) {
    float f[8];
    _mm256_storeu_ps(f, v);
    return (double)f[0] + f[1] + f[2] + f[3] + f[4] + f[5] + f[6] + f[7];
}

/* 12 independent vpdpbusd chains. */
double qkb_peak_i8__avxvnni(uint64_t iters, volatile double *sink) {
    __m256i u = _mm256_set1_epi8(5), s = _mm256_set1_epi8(-3);
    __m256i c[12];
    for (int i = 0; i < 12; i++) c[i] = _mm256_set1_epi32(i);
    __m256i c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3], c4 = c[4], c5 = c[5];
    __m256i c6 = c[6], c7 = c[7], c8 = c[8], c9 = c[9], c10 = c[10], c11 = c[11];
    for (uint64_t it = 0; it < iters; it++) {
        OPAQUE(u);
        c0 = _mm256_dpbusd_avx_epi32(c0, u, s), c1 = _mm256_dpbusd_avx_epi32(c1, u, s), c2 = _mm256_dpbusd_avx_epi32(c2, u, s);
        c3 = _mm256_dpbusd_avx_epi32(c3, u, s), c4 = _mm256_dpbusd_avx_epi32(c4, u, s), c5 = _mm256_dpbusd_avx_epi32(c5, u, s);
        c6 = _mm256_dpbusd_avx_epi32(c6, u, s), c7 = _mm256_dpbusd_avx_epi32(c7, u, s), c8 = _mm256_dpbusd_avx_epi32(c8, u, s);
        c9 = _mm256_dpbusd_avx_epi32(c9, u, s), c10 = _mm256_dpbusd_avx_epi32(c10, u, s), c11 = _mm256_dpbusd_avx_epi32(c11, u, s);
    }
    __m256i t = _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(c0, c1), _mm256_add_epi32(c2, c3)),
                                 _mm256_add_epi32(_mm256_add_epi32(c4, c5), _mm256_add_epi32(c6, c7)));
    t = _mm256_add_epi32(t, _mm256_add_epi32(_mm256_add_epi32(c8, c9), _mm256_add_epi32(c10, c11)));
    int32_t r[8];
    _mm256_storeu_si256((__m256i *)r, t);
    *sink = (double)r[0] + r[1] + r[2] + r[3] + r[4] + r[5] + r[6] + r[7];
    return (double)iters * 12 * 32 * 2;
}

/* The int8 dot as W8A8 runs it at g = 32: a 2x3 tile of int32 accumulators
 * (rows: activation codes, columns: weight codes), each given the dot of one
 * group of 32 values per lane, then converted, multiplied by its scale (a
 * column's weight scale times a row's activation scale: one vmulps) and
 * added into f32 (one FMA). Counts only the dot's operations, so the rate
 * compares with the plain dot's. */
double qkb_peak_i8g32__avxvnni(uint64_t iters, volatile double *sink) {
    const __m256i one = _mm256_set1_epi16(1);
    __m256i u0 = _mm256_set1_epi8(5), u1 = _mm256_set1_epi8(6), u2 = _mm256_set1_epi8(7);
    __m256i s[2] = {_mm256_set1_epi8(-3), _mm256_set1_epi8(2)};
    __m256 w0 = _mm256_set1_ps(1e-3f), w1 = _mm256_set1_ps(2e-3f), w2 = _mm256_set1_ps(3e-3f);
    __m256 a[2] = {_mm256_set1_ps(0.5f), _mm256_set1_ps(0.25f)}, f[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    (void)one;
    for (uint64_t it = 0; it < iters; it++) {
        OPAQUE(a[0]); OPAQUE(a[1]);
#pragma GCC unroll 2
        for (int m = 0; m < 2; m++) {
            __m256i c0 = _mm256_setzero_si256(), c1 = c0, c2 = c0;
#pragma GCC unroll 8
            for (int k = 0; k < 8; k++) {
                OPAQUE(u0); OPAQUE(u1); OPAQUE(u2); /* new weights each step */
                c0 = _mm256_dpbusd_avx_epi32(c0, u0, s[m]);
                c1 = _mm256_dpbusd_avx_epi32(c1, u1, s[m]);
                c2 = _mm256_dpbusd_avx_epi32(c2, u2, s[m]);
            }
            f[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(c0), _mm256_mul_ps(w0, a[m]), f[m]);
            f[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(c1), _mm256_mul_ps(w1, a[m]), f[m]);
            f[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(c2), _mm256_mul_ps(w2, a[m]), f[m]);
        }
    }
    *sink = hsum_ps(_mm256_add_ps(f[0], f[1]));
    return (double)iters * 6 * 8 * 32 * 2;
}

double qkb_peak_f32__avxvnni(uint64_t iters, volatile double *sink) { return qkb_peak_f32__avx2(iters, sink); }
uint64_t qkb_read__avxvnni(const void *buf, size_t bytes) { return qkb_read__avx2(buf, bytes); }
