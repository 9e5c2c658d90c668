/* Probe loops of the avx512 tier: zmm FMA, the vpmaddubsw int8 dot (int16 sums),
 * a streaming read and a streaming write. */
#if !defined(__AVX512F__) || !defined(__AVX512BW__)
#error "peak_avx512.c needs the avx512 tier's flags"
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

/* 12 independent FMA chains. */
double qkb_peak_f32__avx512(uint64_t iters, volatile double *sink) {
    __m512 b = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-6f);
    __m512 a0 = _mm512_set1_ps(1.00f), a1 = _mm512_set1_ps(1.01f), a2 = _mm512_set1_ps(1.02f), a3 = _mm512_set1_ps(1.03f);
    __m512 a4 = _mm512_set1_ps(1.04f), a5 = _mm512_set1_ps(1.05f), a6 = _mm512_set1_ps(1.06f), a7 = _mm512_set1_ps(1.07f);
    __m512 a8 = _mm512_set1_ps(1.08f), a9 = _mm512_set1_ps(1.09f), a10 = _mm512_set1_ps(1.10f), a11 = _mm512_set1_ps(1.11f);
    for (uint64_t it = 0; it < iters; it++) {
        a0 = _mm512_fmadd_ps(a0, b, c), a1 = _mm512_fmadd_ps(a1, b, c), a2 = _mm512_fmadd_ps(a2, b, c);
        a3 = _mm512_fmadd_ps(a3, b, c), a4 = _mm512_fmadd_ps(a4, b, c), a5 = _mm512_fmadd_ps(a5, b, c);
        a6 = _mm512_fmadd_ps(a6, b, c), a7 = _mm512_fmadd_ps(a7, b, c), a8 = _mm512_fmadd_ps(a8, b, c);
        a9 = _mm512_fmadd_ps(a9, b, c), a10 = _mm512_fmadd_ps(a10, b, c), a11 = _mm512_fmadd_ps(a11, b, c);
    }
    __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                             _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
    s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
    *sink = (double)_mm512_reduce_add_ps(s);
    return (double)iters * 12 * 16 * 2;
}

/* The fastest exact u8·s8 products without VNNI: 6 chains of vpmaddubsw
 * summed in int16 (vpaddw), widened (vpmaddwd by 1, vpaddd) once per 8, as
 * kernels may when the operands are small enough (4-bit codes times int8:
 * 8·2·15·127 < 2^15); a vpmaddwd and a vpaddd after every vpmaddubsw would
 * undercount the tier by a third. */
double qkb_peak_i8__avx512(uint64_t iters, volatile double *sink) {
    __m512i s = _mm512_set1_epi8(-3), one = _mm512_set1_epi16(1);
    __m512i u0 = _mm512_set1_epi8(5), u1 = _mm512_set1_epi8(6), u2 = _mm512_set1_epi8(7);
    __m512i u3 = _mm512_set1_epi8(8), u4 = _mm512_set1_epi8(9), u5 = _mm512_set1_epi8(10);
    __m512i c0 = _mm512_setzero_si512(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0;
    for (uint64_t it = 0; it < iters; it++) {
        __m512i p0 = _mm512_setzero_si512(), p1 = p0, p2 = p0, p3 = p0, p4 = p0, p5 = p0;
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            OPAQUE(u0); OPAQUE(u1); OPAQUE(u2); OPAQUE(u3); OPAQUE(u4); OPAQUE(u5); /* nothing repeats that could be folded */
            p0 = _mm512_add_epi16(p0, _mm512_maddubs_epi16(u0, s)), p1 = _mm512_add_epi16(p1, _mm512_maddubs_epi16(u1, s));
            p2 = _mm512_add_epi16(p2, _mm512_maddubs_epi16(u2, s)), p3 = _mm512_add_epi16(p3, _mm512_maddubs_epi16(u3, s));
            p4 = _mm512_add_epi16(p4, _mm512_maddubs_epi16(u4, s)), p5 = _mm512_add_epi16(p5, _mm512_maddubs_epi16(u5, s));
        }
        c0 = _mm512_add_epi32(c0, _mm512_madd_epi16(p0, one)), c1 = _mm512_add_epi32(c1, _mm512_madd_epi16(p1, one));
        c2 = _mm512_add_epi32(c2, _mm512_madd_epi16(p2, one)), c3 = _mm512_add_epi32(c3, _mm512_madd_epi16(p3, one));
        c4 = _mm512_add_epi32(c4, _mm512_madd_epi16(p4, one)), c5 = _mm512_add_epi32(c5, _mm512_madd_epi16(p5, one));
    }
    __m512i t = _mm512_add_epi32(_mm512_add_epi32(_mm512_add_epi32(c0, c1), _mm512_add_epi32(c2, c3)), _mm512_add_epi32(c4, c5));
    *sink = hsum_epi32(t);
    return (double)iters * 8 * 6 * 64 * 2;
}

/* The int8 dot with W8A8's per-group rescale at g = 32 (peak_i8g32.h): vpmaddubsw, vpmaddwd by 1, vpaddd. */
#define PG_NAME qkb_peak_i8g32__avx512
#define PG_ZMM
#define PG_DOT(c, u, s) _mm512_add_epi32(c, _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), _mm512_set1_epi16(1)))
#include "peak_i8g32.h"

uint64_t qkb_read__avx512(const void *buf, size_t bytes) {
    const __m512i *p = buf;
    __m512i s0 = _mm512_setzero_si512(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = 0; i < bytes / 64; i += 8) {
        s0 = _mm512_add_epi64(s0, _mm512_load_si512(p + i)), s1 = _mm512_add_epi64(s1, _mm512_load_si512(p + i + 1));
        s2 = _mm512_add_epi64(s2, _mm512_load_si512(p + i + 2)), s3 = _mm512_add_epi64(s3, _mm512_load_si512(p + i + 3));
        s0 = _mm512_add_epi64(s0, _mm512_load_si512(p + i + 4)), s1 = _mm512_add_epi64(s1, _mm512_load_si512(p + i + 5));
        s2 = _mm512_add_epi64(s2, _mm512_load_si512(p + i + 6)), s3 = _mm512_add_epi64(s3, _mm512_load_si512(p + i + 7));
    }
    uint64_t r[8], t = 0;
    _mm512_storeu_si512(r, _mm512_add_epi64(_mm512_add_epi64(s0, s1), _mm512_add_epi64(s2, s3)));
    for (int i = 0; i < 8; i++) t += r[i];
    return t;
}

/* Non-temporal 64-byte stores (as the kernels' streaming outputs); the caller fences. */
void qkb_write__avx512(void *buf, size_t bytes) {
    __m512i *p = buf, v = _mm512_set1_epi32(QKB_WRITE_PATTERN), one = _mm512_set1_epi32(1);
    for (size_t i = 0; i < bytes / 64; i += 4, v = _mm512_add_epi32(v, one)) {
        _mm512_stream_si512(p + i, v), _mm512_stream_si512(p + i + 1, v);
        _mm512_stream_si512(p + i + 2, v), _mm512_stream_si512(p + i + 3, v);
    }
}
