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

/* The int8 dot with W8A8's per-group rescale at g = 32 (peak_i8g32.h): vpdpbusd. */
#define PG_NAME qkb_peak_i8g32__avx512vnni
#define PG_ZMM
#define PG_DOT(c, u, s) _mm512_dpbusd_epi32(c, u, s)
#include "peak_i8g32.h"

double qkb_peak_f32__avx512vnni(uint64_t iters, volatile double *sink) { return qkb_peak_f32__avx512(iters, sink); }
uint64_t qkb_read__avx512vnni(const void *buf, size_t bytes) { return qkb_read__avx512(buf, bytes); }
