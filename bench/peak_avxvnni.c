/* Probe loop of the avxvnni tier: the VEX-encoded ymm vpdpbusd. */
#if !defined(__AVX2__) || !defined(__AVXVNNI__)
#error "peak_avxvnni.c needs the avxvnni tier's flags"
#endif
#include <immintrin.h>

#include "peak.h"

#define OPAQUE(v) __asm__ volatile("" : "+x"(v))

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

/* The int8 dot with W8A8's per-group rescale at g = 32 (peak_i8g32.h): the VEX vpdpbusd. */
#define PG_NAME qkb_peak_i8g32__avxvnni
#define PG_YMM
#define PG_DOT(c, u, s) _mm256_dpbusd_avx_epi32(c, u, s)
#include "peak_i8g32.h"

double qkb_peak_f32__avxvnni(uint64_t iters, volatile double *sink) { return qkb_peak_f32__avx2(iters, sink); }
uint64_t qkb_read__avxvnni(const void *buf, size_t bytes) { return qkb_read__avx2(buf, bytes); }
