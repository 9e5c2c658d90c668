/// Register transposes shared by the pack functions of the x86 gemm kernels
/// (avx2, avxvnni and avx512 tiers; AVX2 + F16C only). Packing turns rows of
/// the plain layout into tile-interleaved columns: whole-register transposes
/// instead of byte-by-byte stores.
#ifndef QK_GEMM_PACK_IMPL_H
#define QK_GEMM_PACK_IMPL_H

#if !defined(__AVX2__) || !defined(__F16C__)
#error "gemm_pack_impl.h needs AVX2 and F16C"
#endif

#include <immintrin.h>

#include "internal.h"

#define QK_PK_INLINE static inline __attribute__((always_inline))

/// Transpose 16 rows of 16 bytes: out[k] byte i = in[i] byte k.
QK_PK_INLINE void qk_pk_tr16x16_epi8(const __m128i in[16], __m128i out[16]) {
    __m128i b[16], c[16], d[16];
    for (int p = 0; p < 8; p++) { /* b[2p+h]: rows 2p, 2p+1 at columns 8h..8h+7, a word each */
        b[2 * p] = _mm_unpacklo_epi8(in[2 * p], in[2 * p + 1]);
        b[2 * p + 1] = _mm_unpackhi_epi8(in[2 * p], in[2 * p + 1]);
    }
    for (int q = 0; q < 4; q++) /* c[4q+u]: rows 4q..4q+3 at columns 4u..4u+3, a dword each */
        for (int h = 0; h < 2; h++) {
            c[4 * q + 2 * h] = _mm_unpacklo_epi16(b[4 * q + h], b[4 * q + 2 + h]);
            c[4 * q + 2 * h + 1] = _mm_unpackhi_epi16(b[4 * q + h], b[4 * q + 2 + h]);
        }
    for (int o = 0; o < 2; o++) /* d[8o+v]: rows 8o..8o+7 at columns 2v, 2v+1, a qword each */
        for (int u = 0; u < 4; u++) {
            d[8 * o + 2 * u] = _mm_unpacklo_epi32(c[8 * o + u], c[8 * o + 4 + u]);
            d[8 * o + 2 * u + 1] = _mm_unpackhi_epi32(c[8 * o + u], c[8 * o + 4 + u]);
        }
    for (int v = 0; v < 8; v++) {
        out[2 * v] = _mm_unpacklo_epi64(d[v], d[8 + v]);
        out[2 * v + 1] = _mm_unpackhi_epi64(d[v], d[8 + v]);
    }
}

/// Transpose 8 rows of 8 dwords in place: r[d] dword i = old r[i] dword d.
QK_PK_INLINE void qk_pk_tr8x8_epi32(__m256i r[8]) {
    __m256i t[8], u[8];
    for (int h = 0; h < 2; h++) { /* rows 4h..4h+3 */
        t[4 * h] = _mm256_unpacklo_epi32(r[4 * h], r[4 * h + 1]);
        t[4 * h + 1] = _mm256_unpackhi_epi32(r[4 * h], r[4 * h + 1]);
        t[4 * h + 2] = _mm256_unpacklo_epi32(r[4 * h + 2], r[4 * h + 3]);
        t[4 * h + 3] = _mm256_unpackhi_epi32(r[4 * h + 2], r[4 * h + 3]);
        u[4 * h] = _mm256_unpacklo_epi64(t[4 * h], t[4 * h + 2]);     /* dwords 0 | 4 of the 4 rows */
        u[4 * h + 1] = _mm256_unpackhi_epi64(t[4 * h], t[4 * h + 2]); /* 1 | 5 */
        u[4 * h + 2] = _mm256_unpacklo_epi64(t[4 * h + 1], t[4 * h + 3]); /* 2 | 6 */
        u[4 * h + 3] = _mm256_unpackhi_epi64(t[4 * h + 1], t[4 * h + 3]); /* 3 | 7 */
    }
    for (int d = 0; d < 4; d++) {
        r[d] = _mm256_permute2x128_si256(u[d], u[4 + d], 0x20);
        r[d + 4] = _mm256_permute2x128_si256(u[d], u[4 + d], 0x31);
    }
}

/// Scales (f32 or f16 storage, row-major [rows][ng]) of rows n0..n0+7 and
/// groups j0..j0+7 as f32: out[jj] lane i = value (n0+i, j0+jj), 0 for
/// i >= nrows. The f16 conversion is F16C's, which qk_h2f matches bit for bit.
QK_PK_INLINE void qk_pk_scales8x8(const void *p, qk_scale_type st, size_t ng, size_t n0, size_t nrows, size_t j0, __m256 out[8]) {
    __m256i r[8];
    for (size_t i = 0; i < 8; i++) {
        const size_t at = (n0 + i) * ng + j0;
        if (i >= nrows) r[i] = _mm256_setzero_si256();
        else if (st == QK_SCALE_F16) r[i] = _mm256_castps_si256(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + at))));
        else r[i] = _mm256_loadu_si256((const __m256i *)((const float *)p + at));
    }
    qk_pk_tr8x8_epi32(r);
    for (int d = 0; d < 8; d++) out[d] = _mm256_castsi256_ps(r[d]);
}

/// The same for q4_0/q8_0 (blocks of bs bytes, each headed by its fp16 d):
/// the d of blocks j0..j0+7 of each row gathered in a register.
QK_PK_INLINE void qk_pk_d8x8(const qk_qmat *w, size_t bs, size_t n0, size_t nrows, size_t j0, __m256 out[8]) {
    __m256i r[8];
    for (size_t i = 0; i < 8; i++) {
        const uint8_t *b = w->codes + (n0 + i) * w->row_bytes + j0 * bs;
        r[i] = i >= nrows ? _mm256_setzero_si256()
                          : _mm256_castps_si256(_mm256_cvtph_ps(_mm_setr_epi16(
                                (short)qk_rd16(b), (short)qk_rd16(b + bs), (short)qk_rd16(b + 2 * bs), (short)qk_rd16(b + 3 * bs),
                                (short)qk_rd16(b + 4 * bs), (short)qk_rd16(b + 5 * bs), (short)qk_rd16(b + 6 * bs), (short)qk_rd16(b + 7 * bs))));
    }
    qk_pk_tr8x8_epi32(r);
    for (int d = 0; d < 8; d++) out[d] = _mm256_castsi256_ps(r[d]);
}

/// The scale of row n, group j, as f32 (q4_0/q8_0: the block's fp16 d, by F16C's
/// conversion, bit for bit qk_h2f's, NaNs made quiet alike).
QK_PK_INLINE float qk_pk_scale_of(const qk_qmat *w, size_t n, size_t j) {
    if (w->format == QK_Q4_0) return _cvtsh_ss(qk_rd16(w->codes + n * w->row_bytes + j * QK_Q4_0_BYTES));
    if (w->format == QK_Q8_0) return _cvtsh_ss(qk_rd16(w->codes + n * w->row_bytes + j * QK_Q8_0_BYTES));
    return qk_load_scale(w->scales, n * (w->cols / w->group) + j, w->scale_type);
}

/// How many of the nr rows from n0 lie below N.
QK_PK_INLINE size_t qk_pk_live(size_t N, size_t n0, size_t nr) { return n0 >= N ? 0 : N - n0 < nr ? N - n0 : nr; }

/// The scales of rows n0..n0+rows-1 (and, with mn, the w4a offsets) for a packed
/// tile of nr columns (a multiple of 8), 0 on columns past `rows`: group j's of
/// column c at sc[j·stride + c] and mn[j·stride + c]. 8 columns × 8 groups per
/// register transpose (q4_0/q8_0 too, whose d are in their blocks: one by one,
/// they took half the time of the avx512 W4A32 pack of q4_0 1024x4096 from
/// cache); the last ng % 8 groups one by one.
QK_PK_INLINE void qk_pk_tile_scales_bs(const qk_qmat *w, size_t n0, size_t rows, size_t nr, float *sc, float *mn, size_t stride,
                                        const size_t bs) {
    const size_t ng = w->cols / w->group;
    size_t j0 = 0;
    for (; j0 + 8 <= ng; j0 += 8)
        for (size_t c0 = 0; c0 < nr; c0 += 8) {
            const size_t live = c0 < rows ? rows - c0 : 0;
            __m256 v[8];
            if (bs) qk_pk_d8x8(w, bs, n0 + c0, live, j0, v);
            else qk_pk_scales8x8(w->scales, w->scale_type, ng, n0 + c0, live, j0, v);
            for (size_t jj = 0; jj < 8; jj++) _mm256_storeu_ps(sc + (j0 + jj) * stride + c0, v[jj]);
            if (mn) {
                qk_pk_scales8x8(w->mins, w->scale_type, ng, n0 + c0, live, j0, v);
                for (size_t jj = 0; jj < 8; jj++) _mm256_storeu_ps(mn + (j0 + jj) * stride + c0, v[jj]);
            }
        }
    for (size_t j = j0; j < ng; j++)
        for (size_t c = 0; c < nr; c++) {
            sc[j * stride + c] = c < rows ? qk_pk_scale_of(w, n0 + c, j) : 0.0f;
            if (mn) mn[j * stride + c] = c < rows ? qk_load_scale(w->mins, (n0 + c) * ng + j, w->scale_type) : 0.0f;
        }
}
/* bs a constant in each loop of qk_pk_tile_scales_bs: with it a variable, its
 * test in the loop cost the w4s packs of 1024x4096 up to a tenth more time. */
QK_PK_INLINE void qk_pk_tile_scales(const qk_qmat *w, size_t n0, size_t rows, size_t nr, float *sc, float *mn, size_t stride) {
    if (w->format == QK_Q4_0) qk_pk_tile_scales_bs(w, n0, rows, nr, sc, mn, stride, QK_Q4_0_BYTES);
    else if (w->format == QK_Q8_0) qk_pk_tile_scales_bs(w, n0, rows, nr, sc, mn, stride, QK_Q8_0_BYTES);
    else qk_pk_tile_scales_bs(w, n0, rows, nr, sc, mn, stride, 0);
}

/// 16 bytes of a q4_0 block's nibbles (element j low, j+16 high) in the plain
/// order (element 2i low, 2i+1 high of byte i).
QK_PK_INLINE __m128i qk_pk_q4_0_plain(const uint8_t *qs) {
    const __m128i v = _mm_loadu_si128((const __m128i *)qs), m4 = _mm_set1_epi8(15), w = _mm_set1_epi16(0x1001);
    return _mm_packus_epi16(_mm_maddubs_epi16(_mm_and_si128(v, m4), w), _mm_maddubs_epi16(_mm_and_si128(_mm_srli_epi16(v, 4), m4), w));
}

#endif
