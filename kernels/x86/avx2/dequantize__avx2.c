/* Dequantization, AVX2 + FMA + F16C: bit-exact with kernels/ref/dequantize_scalar.c
 * (s·q; m + d·q as a multiply then an add; (q-8)·d; q·d).
 *
 * Eight values per step: 4-bit codes are spread over int32 lanes by a
 * broadcast and a per-lane shift, 8-bit codes by a sign extension. Outputs
 * of at least QK_STREAM_MIN_BYTES are written with non-temporal stores when
 * 32-byte aligned (no read-for-ownership of the f32 rows; see the avx512
 * variant). */
#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
#error "this file needs the avx2 tier's flags"
#endif
#include "x86/avx2/avx2_common.h"

/* A full 8-float store: non-temporal when nt (p is then 32-byte aligned). */
static inline void store8(float *p, __m256 v, int nt) {
    if (nt) _mm256_stream_ps(p, v);
    else _mm256_storeu_ps(p, v);
}

/* Stream when the output is large and every full store is aligned. */
static int use_stream(const qk_qmat *w, const float *y, size_t ldy) {
    return w->rows * w->cols * sizeof(float) >= QK_STREAM_MIN_BYTES && ((uintptr_t)y & 31) == 0 && ldy % 8 == 0;
}

/* Codes 8i..8i+7 of a 4-bit row as int32 lanes (element 2i low nibble, 2i+1 high). */
static inline __m256i nib8(const uint8_t *codes, size_t k) {
    int32_t w;
    memcpy(&w, codes + k / 2, 4);
    __m256i v = _mm256_srlv_epi32(_mm256_set1_epi32(w), _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28));
    return _mm256_and_si256(v, _mm256_set1_epi32(15));
}

static inline __m256i sx8(const uint8_t *p) { return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p)); }

enum { FMT_W4S, FMT_W4A, FMT_W8S };

static inline void groups_row(int fmt, const qk_qmat *w, size_t r, float *y, int nt) {
    size_t K = w->cols, g = w->group, ng = K / g;
    const uint8_t *codes = w->codes + r * w->row_bytes;
    for (size_t j = 0; j < ng; j++) {
        float sf = qk_avx2_load_scale(w->scales, r * ng + j, w->scale_type);
        float mf = fmt == FMT_W4A ? qk_avx2_load_scale(w->mins, r * ng + j, w->scale_type) : 0.0f;
        __m256 s = _mm256_set1_ps(sf), m = _mm256_set1_ps(mf);
        size_t k = j * g, end = k + g;
        for (; k + 8 <= end; k += 8) {
            __m256 v;
            if (fmt == FMT_W8S) v = _mm256_mul_ps(s, _mm256_cvtepi32_ps(sx8(codes + k)));
            else if (fmt == FMT_W4S) v = _mm256_mul_ps(s, _mm256_cvtepi32_ps(_mm256_sub_epi32(nib8(codes, k), _mm256_set1_epi32(8))));
            else v = _mm256_add_ps(m, _mm256_mul_ps(s, _mm256_cvtepi32_ps(nib8(codes, k))));
            store8(y + k, v, nt);
        }
        for (; k < end; k++) { /* g = K only, K % 8 != 0 */
            if (fmt == FMT_W8S) y[k] = sf * (float)(int8_t)codes[k];
            else {
                int c = (codes[k / 2] >> (4 * (k & 1))) & 15;
                if (fmt == FMT_W4S) y[k] = sf * (float)(c - 8);
                else {
                    float dq = sf * (float)c;
                    y[k] = mf + dq;
                }
            }
        }
    }
}

static inline void groups(int fmt, const qk_qmat *w, float *y, size_t ldy) {
    if (use_stream(w, y, ldy)) {
        for (size_t r = 0; r < w->rows; r++) groups_row(fmt, w, r, y + r * ldy, 1);
        _mm_sfence();
    } else {
        for (size_t r = 0; r < w->rows; r++) groups_row(fmt, w, r, y + r * ldy, 0);
    }
}

void qk_dequantize_w4s__avx2(const qk_qmat *w, float *y, size_t ldy) { groups(FMT_W4S, w, y, ldy); }
void qk_dequantize_w4a__avx2(const qk_qmat *w, float *y, size_t ldy) { groups(FMT_W4A, w, y, ldy); }
void qk_dequantize_w8s__avx2(const qk_qmat *w, float *y, size_t ldy) { groups(FMT_W8S, w, y, ldy); }

static inline void dequant_q4_0(const qk_qmat *w, float *y, size_t ldy, int nt) {
    size_t nb = w->cols / 32;
    const __m256i c15 = _mm256_set1_epi32(15), c8 = _mm256_set1_epi32(8);
    for (size_t r = 0; r < w->rows; r++)
        for (size_t b = 0; b < nb; b++) {
            const uint8_t *blk = w->codes + r * w->row_bytes + b * QK_Q4_0_BYTES;
            __m256 d = _mm256_set1_ps(_cvtsh_ss(qk_rd16(blk)));
            float *yb = y + r * ldy + b * 32;
            for (int h = 0; h < 16; h += 8) {
                __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(blk + 2 + h)));
                __m256i lo = _mm256_sub_epi32(_mm256_and_si256(v, c15), c8), hi = _mm256_sub_epi32(_mm256_srli_epi32(v, 4), c8);
                store8(yb + h, _mm256_mul_ps(_mm256_cvtepi32_ps(lo), d), nt);
                store8(yb + 16 + h, _mm256_mul_ps(_mm256_cvtepi32_ps(hi), d), nt);
            }
        }
}

static inline void dequant_q8_0(const qk_qmat *w, float *y, size_t ldy, int nt) {
    size_t nb = w->cols / 32;
    for (size_t r = 0; r < w->rows; r++)
        for (size_t b = 0; b < nb; b++) {
            const uint8_t *blk = w->codes + r * w->row_bytes + b * QK_Q8_0_BYTES;
            __m256 d = _mm256_set1_ps(_cvtsh_ss(qk_rd16(blk)));
            float *yb = y + r * ldy + b * 32;
            for (int h = 0; h < 32; h += 8) store8(yb + h, _mm256_mul_ps(_mm256_cvtepi32_ps(sx8(blk + 2 + h)), d), nt);
        }
}

void qk_dequantize_q4_0__avx2(const qk_qmat *w, float *y, size_t ldy) {
    if (use_stream(w, y, ldy)) {
        dequant_q4_0(w, y, ldy, 1);
        _mm_sfence();
    } else {
        dequant_q4_0(w, y, ldy, 0);
    }
}

void qk_dequantize_q8_0__avx2(const qk_qmat *w, float *y, size_t ldy) {
    if (use_stream(w, y, ldy)) {
        dequant_q8_0(w, y, ldy, 1);
        _mm_sfence();
    } else {
        dequant_q8_0(w, y, ldy, 0);
    }
}
