/* Dequantization, AVX-512 (F/BW/DQ/VL): bit-exact with
 * kernels/ref/dequantize_scalar.c.
 *
 * 4-bit formats look their values up in a 16-entry table per group
 * (vpermps reads the low 4 bits of each index, so a nibble never needs
 * masking): T[c] = s·(c-8) (w4s), m + d·c (w4a, a multiply then an add),
 * (c-8)·d (q4_0), the very products the reference computes. 8-bit formats
 * widen (vpmovsxbd), convert and multiply. Any g works (masked tails).
 *
 * Outputs of at least QK_STREAM_MIN_BYTES (whose f32 rows do not stay in the
 * caches anyway) are written with non-temporal stores when they are 64-byte
 * aligned: no read-for-ownership of the destination lines, and on an AMD
 * EPYC (Zen 5) 1024x4096 g32 from DRAM runs 25-35% faster than with plain
 * stores. Smaller outputs keep plain stores, which leave them in cache. */
#include "x86/avx512/avx512_common.h"

#define QK_INLINE static inline __attribute__((always_inline))

/* A full 16-float store: non-temporal when nt (p is then 64-byte aligned). */
QK_INLINE void st16(float *p, __m512 v, int nt) {
    if (nt) _mm512_stream_ps(p, v);
    else _mm512_storeu_ps(p, v);
}

/* Stream when the output is large and every full store is aligned. */
static int use_stream(const qk_qmat *w, const float *y, size_t ldy) {
    return w->rows * w->cols * sizeof(float) >= QK_STREAM_MIN_BYTES && ((uintptr_t)y & 63) == 0 && ldy % 16 == 0;
}

/* Scales (or offsets) of 16 consecutive groups as f32, n <= 16 valid. */
QK_INLINE __m512 load_scales16(const void *p, size_t i, qk_scale_type st, size_t n) {
    if (st == QK_SCALE_F16) return qk512_load16_ph((const uint16_t *)p + i, n);
    return qk512_load16_ps((const float *)p + i, n);
}

/* 32 values from 16 code bytes b (element 2i: low nibble of byte i, 2i+1:
 * high nibble), widened to one byte per dword, through table t. */
QK_INLINE void nibbles32(__m512i b, __m512 t, __m512 *lo, __m512 *hi) {
    const __m512i lo_idx = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i hi_idx = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    __m512 e = _mm512_permutexvar_ps(b, t);                       /* elements 0, 2, 4, ... */
    __m512 o = _mm512_permutexvar_ps(_mm512_srli_epi32(b, 4), t); /* elements 1, 3, 5, ... */
    *lo = _mm512_permutex2var_ps(e, lo_idx, o);
    *hi = _mm512_permutex2var_ps(e, hi_idx, o);
}

/* A group whose g is not a multiple of 32 (g = K, even): masked tail. */
static void group4_tail(const uint8_t *codes, size_t g, __m512 t, float *y) {
    size_t k = 0;
    __m512 lo, hi;
    for (; k + 32 <= g; k += 32) {
        nibbles32(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(codes + k / 2))), t, &lo, &hi);
        _mm512_storeu_ps(y + k, lo);
        _mm512_storeu_ps(y + k + 16, hi);
    }
    if (k < g) {
        size_t n = g - k;
        nibbles32(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(qk512_mask16(n / 2), codes + k / 2)), t, &lo, &hi);
        _mm512_mask_storeu_ps(y + k, qk512_mask16(n), lo);
        if (n > 16) _mm512_mask_storeu_ps(y + k + 16, qk512_mask16(n - 16), hi);
    }
}

QK_INLINE void dequant4(const qk_qmat *w, float *y, size_t ldy, int asym, int nt) {
    size_t K = w->cols, g = w->group, ng = K / g;
    const __m512 c8 = _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
    const __m512 c0 = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (size_t r = 0; r < w->rows; r++) {
        const uint8_t *codes = w->codes + r * w->row_bytes;
        float *yr = y + r * ldy;
        for (size_t j0 = 0; j0 < ng; j0 += 16) {
            size_t n = ng - j0 < 16 ? ng - j0 : 16;
            float s[16], m[16];
            _mm512_storeu_ps(s, load_scales16(w->scales, r * ng + j0, w->scale_type, n));
            if (asym) _mm512_storeu_ps(m, load_scales16(w->mins, r * ng + j0, w->scale_type, n));
            for (size_t j = 0; j < n; j++) {
                __m512 t = asym ? _mm512_add_ps(_mm512_set1_ps(m[j]), _mm512_mul_ps(_mm512_set1_ps(s[j]), c0))
                                : _mm512_mul_ps(_mm512_set1_ps(s[j]), c8);
                size_t k0 = (j0 + j) * g;
                if (g % 32 == 0) {
                    for (size_t k = k0; k < k0 + g; k += 32) {
                        __m512 lo, hi;
                        nibbles32(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(codes + k / 2))), t, &lo, &hi);
                        st16(yr + k, lo, nt);
                        st16(yr + k + 16, hi, nt);
                    }
                } else {
                    group4_tail(codes + k0 / 2, g, t, yr + k0);
                }
            }
        }
    }
}

void qk_dequantize_w4s__avx512(const qk_qmat *w, float *y, size_t ldy) {
    if (use_stream(w, y, ldy)) {
        dequant4(w, y, ldy, 0, 1);
        _mm_sfence();
    } else {
        dequant4(w, y, ldy, 0, 0);
    }
}

void qk_dequantize_w4a__avx512(const qk_qmat *w, float *y, size_t ldy) {
    if (use_stream(w, y, ldy)) {
        dequant4(w, y, ldy, 1, 1);
        _mm_sfence();
    } else {
        dequant4(w, y, ldy, 1, 0);
    }
}

QK_INLINE __m512 widen8(const int8_t *p) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)p))); }

QK_INLINE void dequant_w8s(const qk_qmat *w, float *y, size_t ldy, int nt) {
    size_t K = w->cols, g = w->group, ng = K / g;
    for (size_t r = 0; r < w->rows; r++) {
        const int8_t *codes = (const int8_t *)(w->codes + r * w->row_bytes);
        float *yr = y + r * ldy;
        for (size_t j0 = 0; j0 < ng; j0 += 16) {
            size_t n = ng - j0 < 16 ? ng - j0 : 16;
            float s[16];
            _mm512_storeu_ps(s, load_scales16(w->scales, r * ng + j0, w->scale_type, n));
            for (size_t j = 0; j < n; j++) {
                __m512 sv = _mm512_set1_ps(s[j]);
                size_t k = (j0 + j) * g, e = k + g;
                for (; k + 32 <= e; k += 32) {
                    st16(yr + k, _mm512_mul_ps(sv, widen8(codes + k)), nt);
                    st16(yr + k + 16, _mm512_mul_ps(sv, widen8(codes + k + 16)), nt);
                }
                for (; k < e; k += 16) {
                    __mmask16 m = qk512_mask16(e - k);
                    __m512 a = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, codes + k)));
                    _mm512_mask_storeu_ps(yr + k, m, _mm512_mul_ps(sv, a));
                }
            }
        }
    }
}

void qk_dequantize_w8s__avx512(const qk_qmat *w, float *y, size_t ldy) {
    if (use_stream(w, y, ldy)) {
        dequant_w8s(w, y, ldy, 1);
        _mm_sfence();
    } else {
        dequant_w8s(w, y, ldy, 0);
    }
}

QK_INLINE void dequant_q4_0(const qk_qmat *w, float *y, size_t ldy, int nt) {
    size_t nb = w->cols / 32;
    const __m512 c8 = _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
    for (size_t r = 0; r < w->rows; r++)
        for (size_t b = 0; b < nb; b++) {
            const uint8_t *blk = w->codes + r * w->row_bytes + b * QK_Q4_0_BYTES;
            __m512 t = _mm512_mul_ps(c8, _mm512_set1_ps(_cvtsh_ss(qk_rd16(blk))));
            __m512i q = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(blk + 2)));
            float *yb = y + r * ldy + b * 32;
            st16(yb, _mm512_permutexvar_ps(q, t), nt);
            st16(yb + 16, _mm512_permutexvar_ps(_mm512_srli_epi32(q, 4), t), nt);
        }
}

void qk_dequantize_q4_0__avx512(const qk_qmat *w, float *y, size_t ldy) {
    if (use_stream(w, y, ldy)) {
        dequant_q4_0(w, y, ldy, 1);
        _mm_sfence();
    } else {
        dequant_q4_0(w, y, ldy, 0);
    }
}

QK_INLINE void dequant_q8_0(const qk_qmat *w, float *y, size_t ldy, int nt) {
    size_t nb = w->cols / 32;
    for (size_t r = 0; r < w->rows; r++)
        for (size_t b = 0; b < nb; b++) {
            const uint8_t *blk = w->codes + r * w->row_bytes + b * QK_Q8_0_BYTES;
            __m512 d = _mm512_set1_ps(_cvtsh_ss(qk_rd16(blk)));
            float *yb = y + r * ldy + b * 32;
            st16(yb, _mm512_mul_ps(widen8((const int8_t *)blk + 2), d), nt);
            st16(yb + 16, _mm512_mul_ps(widen8((const int8_t *)blk + 18), d), nt);
        }
}

void qk_dequantize_q8_0__avx512(const qk_qmat *w, float *y, size_t ldy) {
    if (use_stream(w, y, ldy)) {
        dequant_q8_0(w, y, ldy, 1);
        _mm_sfence();
    } else {
        dequant_q8_0(w, y, ldy, 0);
    }
}
