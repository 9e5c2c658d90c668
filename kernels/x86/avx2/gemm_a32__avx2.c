/* gemm (any M) with f32 activations (W4A32: w4s, w4a, q4_0; W8A32: w8s,
 * q8_0), AVX2 + FMA: 4x16 register tiles on packed weights.
 *
 * Packed layout: tiles of 16 weight rows (tile t at t·tile_bytes; the last
 * one padded with zero rows), each holding its codes k by k, then per group
 * two f32 vectors [K/g][2][16] S and B such that ŵ = fma(c, S, B):
 *  - U4K (4-bit): 8 bytes per k; byte i holds the unsigned code c of row i
 *    in its low nibble and of row i+8 in its high nibble. w4s and q4_0:
 *    S = s, B = −8·s (so ŵ = s·(c − 8), rounded once); w4a: S = d, B = m.
 *  - S8K (8-bit): 16 int8 codes per k (rows 0-15); S = s, B = 0.
 * In the loop, sixteen weights of one k become f32 with one scale FMA and are
 * used by four rows of X (eight FMAs). */
#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
#error "this file needs the avx2 tier's flags"
#endif
#include "x86/avx2/gemm_int_impl.h"

#define A32_MR 4
#define A32_NR 16

QK_GINLINE size_t a32_code_bytes(const qk_qmat *w) {
    return w->cols * (w->format == QK_W8S || w->format == QK_Q8_0 ? A32_NR : A32_NR / 2);
}
QK_GINLINE size_t a32_tile_bytes(const qk_qmat *w) { return a32_code_bytes(w) + w->cols / w->group * 2 * A32_NR * sizeof(float); }

static size_t a32_pack_size(const qk_qmat *w) { return (w->rows + A32_NR - 1) / A32_NR * a32_tile_bytes(w); }
static size_t a32_packed_offset(const qk_qmat *w, size_t n0) { return n0 / A32_NR * a32_tile_bytes(w); }

/* S and B of the tile of rows n0..n0+rows-1 as [ng][2][16], zero for the padding
 * rows: S (and, for w4a, its offsets as B) by qk_pk_tile_scales; for the other
 * 4-bit formats B = -8·S (-0 for S = 0 on a real row), for 8-bit codes B = 0. */
static void a32_pack_scales(const qk_qmat *w, size_t n0, size_t rows, float *sb) {
    const size_t ng = w->cols / w->group;
    const int eight = w->format == QK_W8S || w->format == QK_Q8_0, w4a = w->format == QK_W4A;
    qk_pk_tile_scales(w, n0, rows, A32_NR, sb, w4a ? sb + A32_NR : NULL, 2 * A32_NR);
    if (!w4a)
        for (size_t c0 = 0; c0 < A32_NR; c0 += 8) { /* the real rows' lanes of B: -8·S, or 0 (8-bit) */
            const size_t live = c0 < rows ? rows - c0 : 0;
            const __m256 lm = eight ? _mm256_setzero_ps()
                                    : _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32((int)(live < 8 ? live : 8)),
                                                                             _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
            for (size_t j = 0; j < ng; j++)
                _mm256_storeu_ps(sb + (2 * j + 1) * A32_NR + c0,
                                 _mm256_and_ps(_mm256_mul_ps(_mm256_loadu_ps(sb + 2 * j * A32_NR + c0), _mm256_set1_ps(-8.0f)), lm));
        }
}

/* Any K, element by element (the shapes a32_pack's fast path does not take). */
static void a32_pack_generic(const qk_qmat *w, void *packed) {
    const size_t N = w->rows, K = w->cols, tb = a32_tile_bytes(w), cb = a32_code_bytes(w);
    const int eight = w->format == QK_W8S || w->format == QK_Q8_0;
    enum { KC = 256 };
    int8_t c[A32_NR][KC];
    for (size_t t = 0; t * A32_NR < N; t++) {
        uint8_t *tile = (uint8_t *)packed + t * tb;
        const size_t rows = N - t * A32_NR < A32_NR ? N - t * A32_NR : A32_NR;
        for (size_t k0 = 0; k0 < K; k0 += KC) {
            const size_t cnt = K - k0 < KC ? K - k0 : KC;
            for (size_t i = 0; i < A32_NR; i++) {
                memset(c[i], 0, cnt);
                if (i < rows) gemm_row_codes(w, t * A32_NR + i, k0, cnt, c[i]);
            }
            for (size_t e = 0; e < cnt; e++) {
                if (eight) {
                    for (size_t i = 0; i < A32_NR; i++) tile[(k0 + e) * A32_NR + i] = (uint8_t)c[i][e];
                } else {
                    for (size_t i = 0; i < 8; i++) tile[(k0 + e) * 8 + i] = (uint8_t)(c[i][e] | c[i + 8][e] << 4);
                }
            }
        }
        a32_pack_scales(w, t * A32_NR, rows, (float *)(tile + cb));
    }
}

/* K % 32 == 0: 32 k of the 16 rows straight from the plain layout per step,
 * one 16x16 byte transpose per 16 k of 8-bit codes; 4-bit rows i and i+8
 * merged nibble-wise first, then k 0-15 and 16-31 of the 8 merged rows
 * transposed together. */
static void a32_pack(const qk_qmat *w, void *packed) {
    const size_t N = w->rows, K = w->cols, tb = a32_tile_bytes(w), cb = a32_code_bytes(w), rb = w->row_bytes;
    const qk_format f = w->format;
    const int eight = f == QK_W8S || f == QK_Q8_0;
    if (K % 32 != 0) {
        a32_pack_generic(w, packed);
        return;
    }
    const __m128i m4 = _mm_set1_epi8(15), mh = _mm_set1_epi8((char)0xF0);
    for (size_t t = 0; t * A32_NR < N; t++) {
        uint8_t *tile = (uint8_t *)packed + t * tb;
        const size_t rows = N - t * A32_NR < A32_NR ? N - t * A32_NR : A32_NR;
        const uint8_t *base = w->codes + t * A32_NR * rb;
        for (size_t kb = 0; kb < K; kb += 32) {
            __m128i r[16], o[16];
            if (eight) {
                for (size_t h = 0; h < 2; h++) {
                    for (size_t i = 0; i < A32_NR; i++) {
                        const uint8_t *row = base + i * rb;
                        const uint8_t *src = (f == QK_Q8_0 ? row + kb / 32 * QK_Q8_0_BYTES + 2 : row + kb) + 16 * h;
                        r[i] = i < rows ? _mm_loadu_si128((const __m128i *)src) : _mm_setzero_si128();
                    }
                    qk_pk_tr16x16_epi8(r, o);
                    for (size_t k = 0; k < 16; k++) _mm_storeu_si128((__m128i *)(tile + (kb + 16 * h + k) * A32_NR), o[k]);
                }
            } else {
                __m128i p[A32_NR]; /* the 32 codes of each row in the plain nibble order */
                for (size_t i = 0; i < A32_NR; i++) {
                    const uint8_t *row = base + i * rb;
                    if (i >= rows) p[i] = _mm_setzero_si128();
                    else if (f == QK_Q4_0) p[i] = qk_pk_q4_0_plain(row + kb / 32 * QK_Q4_0_BYTES + 2);
                    else p[i] = _mm_loadu_si128((const __m128i *)(row + kb / 2));
                }
                for (size_t i = 0; i < 8; i++) { /* byte k: code k of row i | code k of row i+8 << 4 */
                    const __m128i ev = _mm_or_si128(_mm_and_si128(p[i], m4), _mm_slli_epi16(_mm_and_si128(p[i + 8], m4), 4));
                    const __m128i od = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(p[i], 4), m4), _mm_and_si128(p[i + 8], mh));
                    r[i] = _mm_unpacklo_epi8(ev, od);     /* k 0..15 */
                    r[8 + i] = _mm_unpackhi_epi8(ev, od); /* k 16..31 */
                }
                qk_pk_tr16x16_epi8(r, o); /* o[k]: bytes 0-7 = k, 8-15 = k+16 */
                for (size_t k = 0; k < 16; k += 2) {
                    _mm_storeu_si128((__m128i *)(tile + (kb + k) * 8), _mm_unpacklo_epi64(o[k], o[k + 1]));
                    _mm_storeu_si128((__m128i *)(tile + (kb + 16 + k) * 8), _mm_unpackhi_epi64(o[k], o[k + 1]));
                }
            }
        }
        a32_pack_scales(w, t * A32_NR, rows, (float *)(tile + cb));
    }
}

/* Rows m0..m0+R-1 of Y for one tile. */
QK_GINLINE void a32_tile(const qk_matmul_args *a, const uint8_t *tile, size_t n0, size_t ncols, size_t m0, const int R, const int eight) {
    const size_t K = a->K, g = a->group, ng = K / g;
    const float *sb = (const float *)(tile + a32_code_bytes(a->w));
    const float *x[A32_MR];
    __m256 y0[A32_MR], y1[A32_MR];
    for (int m = 0; m < R; m++) {
        x[m] = a->x + (m0 + m) * a->ldx;
        y0[m] = y1[m] = _mm256_setzero_ps();
    }
    const __m256i m4 = _mm256_set1_epi32(15);
    for (size_t j = 0; j < ng; j++) {
        const __m256 s0 = _mm256_loadu_ps(sb + 2 * j * A32_NR), s1 = _mm256_loadu_ps(sb + 2 * j * A32_NR + 8);
        const __m256 b0 = _mm256_loadu_ps(sb + (2 * j + 1) * A32_NR), b1 = _mm256_loadu_ps(sb + (2 * j + 1) * A32_NR + 8);
        for (size_t k = j * g, end = k + g; k < end; k++) {
            __m256 w0, w1;
            if (eight) {
                const uint8_t *p = tile + k * A32_NR;
                w0 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p))), s0);
                w1 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(p + 8)))), s1);
            } else {
                const __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(tile + k * 8)));
                w0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_and_si256(v, m4)), s0, b0);
                w1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(v, 4)), s1, b1);
            }
            for (int m = 0; m < R; m++) {
                const __m256 xv = _mm256_broadcast_ss(x[m] + k);
                y0[m] = _mm256_fmadd_ps(w0, xv, y0[m]);
                y1[m] = _mm256_fmadd_ps(w1, xv, y1[m]);
            }
        }
    }
    for (int m = 0; m < R; m++) {
        float *yr = a->y + (m0 + m) * a->ldy + n0;
        if (ncols == A32_NR) {
            _mm256_storeu_ps(yr, y0[m]);
            _mm256_storeu_ps(yr + 8, y1[m]);
        } else {
            float t[A32_NR];
            _mm256_storeu_ps(t, y0[m]);
            _mm256_storeu_ps(t + 8, y1[m]);
            memcpy(yr, t, ncols * sizeof(float));
        }
    }
}

/* X in blocks of rows (qk_row_block, QK_F32_ROW_BLOCK_BYTES), each over all
 * of W, column tile by column tile. */
QK_GINLINE void a32_run(const qk_matmul_args *a, const int eight) {
    const size_t tb = a32_tile_bytes(a->w), rows = qk_row_block(a->M, a->K * sizeof(float), QK_F32_ROW_BLOCK_BYTES, 0, A32_MR);
    for (size_t r0 = 0; r0 < a->M; r0 += rows) {
        const size_t r1 = r0 + rows < a->M ? r0 + rows : a->M;
        for (size_t n0 = 0; n0 < a->N; n0 += A32_NR) {
            const uint8_t *tile = (const uint8_t *)a->wp + n0 / A32_NR * tb;
            const size_t ncols = a->N - n0 < A32_NR ? a->N - n0 : A32_NR;
            size_t m0 = r0;
            for (; m0 + A32_MR <= r1; m0 += A32_MR) a32_tile(a, tile, n0, ncols, m0, A32_MR, eight);
            switch (r1 - m0) {
            case 3: a32_tile(a, tile, n0, ncols, m0, 3, eight); break;
            case 2: a32_tile(a, tile, n0, ncols, m0, 2, eight); break;
            case 1: a32_tile(a, tile, n0, ncols, m0, 1, eight); break;
            default: break;
            }
        }
    }
}

#define QK_GEMM_A32_VARIANT(stem, eight)                                                                      \
    size_t stem##_pack_size(const qk_qmat *w) { return a32_pack_size(w); }                                   \
    void stem##_pack(const qk_qmat *w, void *packed) { a32_pack(w, packed); }                                \
    size_t stem##_packed_offset(const qk_qmat *w, size_t n0) { return a32_packed_offset(w, n0); }            \
    void stem(const qk_matmul_args *a) { a32_run(a, eight); }

/// Y = X·Wᵀ with f32 activations a->x (stride a->ldx) for W4A32 and W8A32.
/// a->wp: this kernel's packed weights at _packed_offset(n0). Writes a->y rows
/// 0..M-1, columns 0..N-1. Any M, N, K and group size the format allows.
QK_GEMM_A32_VARIANT(qk_gemm_w4s_a32_4x16__avx2, 0)
QK_GEMM_A32_VARIANT(qk_gemm_w4a_a32_4x16__avx2, 0)
QK_GEMM_A32_VARIANT(qk_gemm_q4_0_a32_4x16__avx2, 0)
QK_GEMM_A32_VARIANT(qk_gemm_w8s_a32_4x16__avx2, 1)
QK_GEMM_A32_VARIANT(qk_gemm_q8_0_a32_4x16__avx2, 1)
