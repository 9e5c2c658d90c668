/* Probe loop of the avx512vnni tier: zmm vpdpbusd. */
#if !defined(__AVX512F__) || !defined(__AVX512VNNI__)
#error "peak_avx512vnni.c needs the avx512vnni tier's flags"
#endif
#include <immintrin.h>

#include "peak.h"

#define OPAQUE(v) __asm__ volatile("" : "+v"(v))

/* Lane sums without the reduce intrinsics' signed (overflowing) scalar adds. */
static double hsum_epi32(__m512i v) {
    int32_t s[16];
    _mm512_storeu_si512(s, v);
    double t = 0;
    for (int i = 0; i < 16; i++) t += s[i];
    return t;
}

/* 12 independent vpdpbusd chains. */
double qkb_peak_i8__avx512vnni(uint64_t iters, volatile double *sink) {
    __m512i u = _mm512_set1_epi8(5), s = _mm512_set1_epi8(-3);
    __m512i c0 = _mm512_set1_epi32(0), c1 = _mm512_set1_epi32(1), c2 = _mm512_set1_epi32(2), c3 = _mm512_set1_epi32(3);
    __m512i c4 = _mm512_set1_epi32(4), c5 = _mm512_set1_epi32(5), c6 = _mm512_set1_epi32(6), c7 = _mm512_set1_epi32(7);
    __m512i c8 = _mm512_set1_epi32(8), c9 = _mm512_set1_epi32(9), c10 = _mm512_set1_epi32(10), c11 = _mm512_set1_epi32(11);
    for (uint64_t it = 0; it < iters; it++) {
        OPAQUE(u);
        c0 = _mm512_dpbusd_epi32(c0, u, s), c1 = _mm512_dpbusd_epi32(c1, u, s), c2 = _mm512_dpbusd_epi32(c2, u, s);
        c3 = _mm512_dpbusd_epi32(c3, u, s), c4 = _mm512_dpbusd_epi32(c4, u, s), c5 = _mm512_dpbusd_epi32(c5, u, s);
        c6 = _mm512_dpbusd_epi32(c6, u, s), c7 = _mm512_dpbusd_epi32(c7, u, s), c8 = _mm512_dpbusd_epi32(c8, u, s);
        c9 = _mm512_dpbusd_epi32(c9, u, s), c10 = _mm512_dpbusd_epi32(c10, u, s), c11 = _mm512_dpbusd_epi32(c11, u, s);
    }
    __m512i t = _mm512_add_epi32(_mm512_add_epi32(_mm512_add_epi32(c0, c1), _mm512_add_epi32(c2, c3)),
                                 _mm512_add_epi32(_mm512_add_epi32(c4, c5), _mm512_add_epi32(c6, c7)));
    t = _mm512_add_epi32(t, _mm512_add_epi32(_mm512_add_epi32(c8, c9), _mm512_add_epi32(c10, c11)));
    *sink = hsum_epi32(t);
    return (double)iters * 12 * 64 * 2;
}

/* The int8 dot as W8A8 runs it at g = 32: a 4x3 tile of int32 accumulators
 * (rows: activation codes, columns: weight codes), each given the dot of one
 * group of 32 values per lane, then converted, multiplied by its scale (a
 * column's weight scale times a row's activation scale: one vmulps) and
 * added into f32 (one FMA). Counts only the dot's operations, so the rate
 * compares with the plain dot's. */
double qkb_peak_i8g32__avx512vnni(uint64_t iters, volatile double *sink) {
    __m512i u0 = _mm512_set1_epi8(5), u1 = _mm512_set1_epi8(6), u2 = _mm512_set1_epi8(7);
    __m512i s[4] = {_mm512_set1_epi8(-3), _mm512_set1_epi8(-2), _mm512_set1_epi8(2), _mm512_set1_epi8(3)};
    __m512 w0 = _mm512_set1_ps(1e-3f), w1 = _mm512_set1_ps(2e-3f), w2 = _mm512_set1_ps(3e-3f);
    __m512 a[4] = {_mm512_set1_ps(0.5f), _mm512_set1_ps(0.25f), _mm512_set1_ps(0.125f), _mm512_set1_ps(0.0625f)};
    __m512 f[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    for (uint64_t it = 0; it < iters; it++) {
        OPAQUE(a[0]); OPAQUE(a[1]); OPAQUE(a[2]); OPAQUE(a[3]);
#pragma GCC unroll 4
        for (int m = 0; m < 4; m++) {
            __m512i c0 = _mm512_setzero_si512(), c1 = c0, c2 = c0;
#pragma GCC unroll 8
            for (int k = 0; k < 8; k++) {
                OPAQUE(u0); OPAQUE(u1); OPAQUE(u2); /* new weights each step */
                c0 = _mm512_dpbusd_epi32(c0, u0, s[m]);
                c1 = _mm512_dpbusd_epi32(c1, u1, s[m]);
                c2 = _mm512_dpbusd_epi32(c2, u2, s[m]);
            }
            f[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(c0), _mm512_mul_ps(w0, a[m]), f[m]);
            f[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(c1), _mm512_mul_ps(w1, a[m]), f[m]);
            f[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(c2), _mm512_mul_ps(w2, a[m]), f[m]);
        }
    }
    *sink = (double)_mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(f[0], f[1]), _mm512_add_ps(f[2], f[3])));
    return (double)iters * 12 * 16 * 32 * 2;
}

double qkb_peak_f32__avx512vnni(uint64_t iters, volatile double *sink) { return qkb_peak_f32__avx512(iters, sink); }
uint64_t qkb_read__avx512vnni(const void *buf, size_t bytes) { return qkb_read__avx512(buf, bytes); }
