/* Probe loops of the avx2 tier: ymm FMA, the vpmaddubsw/vpmaddwd int8 dot,
 * a streaming read and a streaming write. */
#if !defined(__AVX2__) || !defined(__FMA__)
#error "peak_avx2.c needs the avx2 tier's flags"
#endif
#include <immintrin.h>

#include "peak.h"

#define OPAQUE(v) __asm__ volatile("" : "+x"(v))

static double hsum_ps(__m256 v) {
    float f[8];
    _mm256_storeu_ps(f, v);
    return (double)f[0] + f[1] + f[2] + f[3] + f[4] + f[5] + f[6] + f[7];
}

static double hsum_epi32(__m256i v) {
    int32_t s[8];
    _mm256_storeu_si256((__m256i *)s, v);
    return (double)s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

/* 12 independent FMA chains: enough to cover the latency of two pipes. */
double qkb_peak_f32__avx2(uint64_t iters, volatile double *sink) {
    __m256 b = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-6f);
    __m256 a0 = _mm256_set1_ps(1.00f), a1 = _mm256_set1_ps(1.01f), a2 = _mm256_set1_ps(1.02f), a3 = _mm256_set1_ps(1.03f);
    __m256 a4 = _mm256_set1_ps(1.04f), a5 = _mm256_set1_ps(1.05f), a6 = _mm256_set1_ps(1.06f), a7 = _mm256_set1_ps(1.07f);
    __m256 a8 = _mm256_set1_ps(1.08f), a9 = _mm256_set1_ps(1.09f), a10 = _mm256_set1_ps(1.10f), a11 = _mm256_set1_ps(1.11f);
    for (uint64_t it = 0; it < iters; it++) {
        a0 = _mm256_fmadd_ps(a0, b, c), a1 = _mm256_fmadd_ps(a1, b, c), a2 = _mm256_fmadd_ps(a2, b, c);
        a3 = _mm256_fmadd_ps(a3, b, c), a4 = _mm256_fmadd_ps(a4, b, c), a5 = _mm256_fmadd_ps(a5, b, c);
        a6 = _mm256_fmadd_ps(a6, b, c), a7 = _mm256_fmadd_ps(a7, b, c), a8 = _mm256_fmadd_ps(a8, b, c);
        a9 = _mm256_fmadd_ps(a9, b, c), a10 = _mm256_fmadd_ps(a10, b, c), a11 = _mm256_fmadd_ps(a11, b, c);
    }
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                             _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
    s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
    *sink = hsum_ps(s);
    return (double)iters * 12 * 8 * 2;
}

/* 4 chains of u8·s8 -> s16 pairs (vpmaddubsw) summed in int16 (vpaddw),
 * widened (vpmaddwd by 1, vpaddd) once per 8: the fastest exact int8 products
 * here (as in peak_avx512.c). */
double qkb_peak_i8__avx2(uint64_t iters, volatile double *sink) {
    __m256i s = _mm256_set1_epi8(-3), one = _mm256_set1_epi16(1);
    __m256i u0 = _mm256_set1_epi8(5), u1 = _mm256_set1_epi8(6), u2 = _mm256_set1_epi8(7), u3 = _mm256_set1_epi8(8);
    __m256i c0 = _mm256_setzero_si256(), c1 = c0, c2 = c0, c3 = c0;
    for (uint64_t it = 0; it < iters; it++) {
        __m256i p0 = _mm256_setzero_si256(), p1 = p0, p2 = p0, p3 = p0;
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            OPAQUE(u0); OPAQUE(u1); OPAQUE(u2); OPAQUE(u3); /* nothing repeats that could be folded */
            p0 = _mm256_add_epi16(p0, _mm256_maddubs_epi16(u0, s)), p1 = _mm256_add_epi16(p1, _mm256_maddubs_epi16(u1, s));
            p2 = _mm256_add_epi16(p2, _mm256_maddubs_epi16(u2, s)), p3 = _mm256_add_epi16(p3, _mm256_maddubs_epi16(u3, s));
        }
        c0 = _mm256_add_epi32(c0, _mm256_madd_epi16(p0, one)), c1 = _mm256_add_epi32(c1, _mm256_madd_epi16(p1, one));
        c2 = _mm256_add_epi32(c2, _mm256_madd_epi16(p2, one)), c3 = _mm256_add_epi32(c3, _mm256_madd_epi16(p3, one));
    }
    *sink = hsum_epi32(_mm256_add_epi32(_mm256_add_epi32(c0, c1), _mm256_add_epi32(c2, c3)));
    return (double)iters * 8 * 4 * 32 * 2;
}

/* The int8 dot with W8A8's per-group rescale at g = 32 (peak_i8g32.h): vpmaddubsw, vpmaddwd by 1, vpaddd. */
#define PG_NAME qkb_peak_i8g32__avx2
#define PG_YMM
#define PG_DOT(c, u, s) _mm256_add_epi32(c, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)))
#include "peak_i8g32.h"

uint64_t qkb_read__avx2(const void *buf, size_t bytes) {
    const __m256i *p = buf;
    __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = 0; i < bytes / 32; i += 8) {
        s0 = _mm256_add_epi64(s0, _mm256_load_si256(p + i)), s1 = _mm256_add_epi64(s1, _mm256_load_si256(p + i + 1));
        s2 = _mm256_add_epi64(s2, _mm256_load_si256(p + i + 2)), s3 = _mm256_add_epi64(s3, _mm256_load_si256(p + i + 3));
        s0 = _mm256_add_epi64(s0, _mm256_load_si256(p + i + 4)), s1 = _mm256_add_epi64(s1, _mm256_load_si256(p + i + 5));
        s2 = _mm256_add_epi64(s2, _mm256_load_si256(p + i + 6)), s3 = _mm256_add_epi64(s3, _mm256_load_si256(p + i + 7));
    }
    __m256i s = _mm256_add_epi64(_mm256_add_epi64(s0, s1), _mm256_add_epi64(s2, s3));
    uint64_t r[4];
    _mm256_storeu_si256((__m256i *)r, s);
    return r[0] + r[1] + r[2] + r[3];
}

/* Non-temporal 32-byte stores (as the kernels' streaming outputs); the caller fences. */
void qkb_write__avx2(void *buf, size_t bytes) {
    __m256i *p = buf, v = _mm256_set1_epi32(QKB_WRITE_PATTERN), one = _mm256_set1_epi32(1);
    for (size_t i = 0; i < bytes / 32; i += 4, v = _mm256_add_epi32(v, one)) {
        _mm256_stream_si256(p + i, v), _mm256_stream_si256(p + i + 1, v);
        _mm256_stream_si256(p + i + 2, v), _mm256_stream_si256(p + i + 3, v);
    }
}
