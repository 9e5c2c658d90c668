/// Integer-mode gemv bodies (W4A8, W4A4, W8A8, q4_0·q8_0, q8_0·q8_0) on the
/// plain layout, shared by the avx2 tier (vpmaddubsw + vpmaddwd) and the
/// avxvnni tier (vpdpbusd), which includes this file with QK_GEMV_VNNI defined.
///
/// y[n] = Σ_groups sw·sa·Σ qw·qa (w4a: Σ_groups sa·(m·Σqa + d·Σ qw·qa)).
///
/// Exactness of the integer dots:
///  - 4-bit weights enter as unsigned codes c in [0,15] against signed
///    activations; a vpmaddubsw pair is at most 2·15·127 and two of them add
///    in int16 without overflow. w4s and q4_0 store q+8: each int32 lane starts
///    from −8·Σa over its own elements (computed once for all rows), so every
///    lane holds the exact Σ q·a of its elements and the f32 rounding of a lane
///    stays relative to its own terms.
///  - int8 × int8 (w8s, q8_0): vpmaddubsw(|a|, sign(w, a)); a pair is at most
///    2·127·127 = 32258 < 32767, since codes are never −128.
///  - int32 lanes: a group is accumulated over at most 2^16 values before it is
///    converted (|lane| <= 2^16/8·127·127 < 2^31).
///
/// Rows are processed QK_GEMV_R at a time (the activation work is shared by
/// them and their dependency chains overlap); the last N % QK_GEMV_R rows one
/// at a time. Any K that the format allows: groups of 32 take the paired-group
/// path, longer groups accumulate in int32 and convert once per group, and a
/// group that is not a multiple of 32 (g = K) finishes with scalar code.
#ifndef QK_GEMV_INT_IMPL_H
#define QK_GEMV_INT_IMPL_H

#include "x86/avx2/avx2_common.h"

#define QK_GEMV_R 4
#define QK_GEMV_CHUNK ((size_t)1 << 16)
#ifndef QK_GEMV_PF
#define QK_GEMV_PF 768 /* bytes of each weight row prefetched ahead */
#endif
#define QK_PREFETCH(p) _mm_prefetch((const char *)(p) + QK_GEMV_PF, _MM_HINT_T0)
#define QK_INLINE static inline __attribute__((always_inline))

/* acc + Σ of each 4 u8·s8 products. */
QK_INLINE __m256i dot1(__m256i acc, __m256i u, __m256i s) {
#ifdef QK_GEMV_VNNI
    return _mm256_dpbusd_avx_epi32(acc, u, s);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
#endif
}

/* acc + both dots; only for 4-bit u (the two int16 pair sums add without overflow). */
QK_INLINE __m256i dot2_u4(__m256i acc, __m256i u1, __m256i s1, __m256i u2, __m256i s2) {
#ifdef QK_GEMV_VNNI
    return _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(acc, u1, s1), u2, s2);
#else
    __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(u1, s1), _mm256_maddubs_epi16(u2, s2));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_set1_epi16(1)));
#endif
}

/* Per lane, −8·Σ of the activations that dot2_u4(., ., s1, ., s2) pairs with that lane. */
QK_INLINE __m256i neg8_lanesums(__m256i s1, __m256i s2) {
    const __m256i eight = _mm256_set1_epi8(8);
#ifdef QK_GEMV_VNNI
    __m256i t = _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), eight, s1), eight, s2);
    return _mm256_sub_epi32(_mm256_setzero_si256(), t);
#else
    __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(eight, s1), _mm256_maddubs_epi16(eight, s2));
    return _mm256_madd_epi16(p, _mm256_set1_epi16(-1));
#endif
}

/* Two 16-byte pieces as one vector. */
QK_INLINE __m256i load2x128(const void *lo, const void *hi) {
    return _mm256_loadu2_m128i((const __m128i *)hi, (const __m128i *)lo);
}

/* 64 activation codes a[0..63] split into the even and the odd elements, in
 * the order the low and high nibbles of 32 bytes of w4 codes hold them:
 * *ev = [a0 a2 .. a30 | a32 .. a62], *od = [a1 .. a31 | a33 .. a63]. */
QK_INLINE void deinterleave64(const int8_t *a, __m256i *ev, __m256i *od) {
    const __m256i sh = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,
                                        0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    __m256i s0 = _mm256_shuffle_epi8(load2x128(a, a + 32), sh);
    __m256i s1 = _mm256_shuffle_epi8(load2x128(a + 16, a + 48), sh);
    *ev = _mm256_unpacklo_epi64(s0, s1);
    *od = _mm256_unpackhi_epi64(s0, s1);
}

/* The same for 32 codes, in the low half (the high half is zero). */
QK_INLINE void deinterleave32(const int8_t *a, __m256i *ev, __m256i *od) {
    const __m128i sh = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    __m128i s0 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)a), sh);
    __m128i s1 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(a + 16)), sh);
    *ev = _mm256_inserti128_si256(_mm256_setzero_si256(), _mm_unpacklo_epi64(s0, s1), 0);
    *od = _mm256_inserti128_si256(_mm256_setzero_si256(), _mm_unpackhi_epi64(s0, s1), 0);
}

/* [v0 ×4, v1 ×4] */
QK_INLINE __m256 halves_ps(float v0, float v1) { return _mm256_set_m128(_mm_set1_ps(v1), _mm_set1_ps(v0)); }

/* Scales i, i+1 of a row as [s_i ×4, s_i+1 ×4]. */
QK_INLINE __m256 scale_halves(const void *p, size_t i, qk_scale_type st) {
    if (st == QK_SCALE_F16) {
        uint32_t h;
        memcpy(&h, (const uint16_t *)p + i, 4);
        __m256 s = _mm256_castps128_ps256(_mm_cvtph_ps(_mm_cvtsi32_si128((int)h)));
        return _mm256_permutevar8x32_ps(s, _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1));
    }
    const float *f = (const float *)p + i;
    return halves_ps(f[0], f[1]);
}

/* Two fp16 values 2 bytes each at p0 and p1 as [d0 ×4, d1 ×4]. */
QK_INLINE __m256 fp16_halves(const uint8_t *p0, const uint8_t *p1) {
    uint32_t h = (uint32_t)qk_rd16(p0) | (uint32_t)qk_rd16(p1) << 16;
    __m256 s = _mm256_castps128_ps256(_mm_cvtph_ps(_mm_cvtsi32_si128((int)h)));
    return _mm256_permutevar8x32_ps(s, _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1));
}

/* [v, 0, 0, 0, 0, 0, 0, 0] */
QK_INLINE __m256i lane0(int32_t v) { return _mm256_zextsi128_si256(_mm_cvtsi32_si128(v)); }


/* Code of element k of a w4 row (unsigned, as stored). */
QK_INLINE int w4code(const uint8_t *row, size_t k) { return (row[k / 2] >> (4 * (k & 1))) & 15; }

/* Σ_groups m·sa·Σqa of one w4a row (the offset term, exact per group in f32). */
QK_INLINE float w4a_offset_term(const void *mins, size_t i0, qk_scale_type st, const float *sa, const int32_t *su, size_t ng) {
    __m256 acc = _mm256_setzero_ps();
    size_t j = 0;
    for (; j + 8 <= ng; j += 8) {
        __m256 t = _mm256_mul_ps(_mm256_loadu_ps(sa + j), _mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)(su + j))));
        acc = _mm256_fmadd_ps(qk_avx2_load8_scales(mins, i0 + j, st), t, acc);
    }
    float r = qk_avx2_hsum_ps(acc);
    for (; j < ng; j++) r += qk_avx2_load_scale(mins, i0 + j, st) * (sa[j] * (float)su[j]);
    return r;
}

/* ---- w4s / w4a, plain layout ---- */

/* Rows n0..n0+R-1, g = 32: every 64 values carry two groups (lanes 0-3, 4-7). */
QK_INLINE void w4_g32(const qk_matmul_args *a, size_t n0, const int R, const int w4s, const qk_scale_type st) {
    const qk_qmat *w = a->w;
    const int8_t *qa = a->xq->codes;
    const float *sa = a->xq->scales;
    const int32_t *su = a->xq->sums;
    const size_t K = a->K, ng = K / 32;
    const __m256i m4 = _mm256_set1_epi8(15);
    const uint8_t *wr[QK_GEMV_R];
    __m256 acc[QK_GEMV_R];
    for (int r = 0; r < R; r++) {
        wr[r] = w->codes + (n0 + r) * w->row_bytes;
        acc[r] = _mm256_setzero_ps();
    }
    size_t k = 0;
    for (; k + 64 <= K; k += 64) {
        const size_t j = k / 32;
        __m256i ev, od;
        deinterleave64(qa + k, &ev, &od);
        const __m256 sa2 = halves_ps(sa[j], sa[j + 1]);
        const __m256i corr = w4s ? neg8_lanesums(ev, od) : _mm256_setzero_si256();
        for (int r = 0; r < R; r++) {
            QK_PREFETCH(wr[r] + k / 2);
            __m256i v = _mm256_loadu_si256((const __m256i *)(wr[r] + k / 2));
            __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
            __m256i d = dot2_u4(corr, lo, ev, hi, od);
            __m256 s = _mm256_mul_ps(scale_halves(w->scales, (n0 + r) * ng + j, st), sa2);
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), s, acc[r]);
        }
    }
    if (k < K) { /* one group of 32 left */
        const size_t j = k / 32;
        __m256i ev, od;
        deinterleave32(qa + k, &ev, &od);
        const __m256i corr = w4s ? neg8_lanesums(ev, od) : _mm256_setzero_si256();
        for (int r = 0; r < R; r++) {
            __m256i v = _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(wr[r] + k / 2)));
            __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
            __m256i d = dot2_u4(corr, lo, ev, hi, od);
            float s = qk_avx2_load_scale(w->scales, (n0 + r) * ng + j, st) * sa[j];
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), _mm256_set1_ps(s), acc[r]);
        }
    }
    for (int r = 0; r < R; r++) {
        float y = qk_avx2_hsum_ps(acc[r]);
        if (!w4s) y += w4a_offset_term(w->mins, (n0 + r) * ng, st, sa, su, ng);
        a->y[n0 + r] = y;
    }
}

/* Rows n0..n0+R-1, any group size: int32 dots per group, one conversion each. */
QK_INLINE void w4_groups(const qk_matmul_args *a, size_t n0, const int R, const int w4s, const qk_scale_type st) {
    const qk_qmat *w = a->w;
    const int8_t *qa = a->xq->codes;
    const float *sa = a->xq->scales;
    const int32_t *su = a->xq->sums;
    const size_t K = a->K, g = a->group, ng = K / g;
    const __m256i m4 = _mm256_set1_epi8(15);
    const uint8_t *wr[QK_GEMV_R];
    __m256 acc[QK_GEMV_R];
    for (int r = 0; r < R; r++) {
        wr[r] = w->codes + (n0 + r) * w->row_bytes;
        acc[r] = _mm256_setzero_ps();
    }
    for (size_t j = 0; j < ng; j++) {
        float sw[QK_GEMV_R];
        for (int r = 0; r < R; r++) sw[r] = qk_avx2_load_scale(w->scales, (n0 + r) * ng + j, st) * sa[j];
        for (size_t c0 = j * g, end = c0 + g; c0 < end;) {
            const size_t c1 = end - c0 > QK_GEMV_CHUNK ? c0 + QK_GEMV_CHUNK : end;
            __m256i d[QK_GEMV_R], corr = _mm256_setzero_si256();
            for (int r = 0; r < R; r++) d[r] = _mm256_setzero_si256();
            size_t k = c0;
            for (; k + 64 <= c1; k += 64) {
                __m256i ev, od;
                deinterleave64(qa + k, &ev, &od);
                if (w4s) corr = _mm256_add_epi32(corr, neg8_lanesums(ev, od));
                for (int r = 0; r < R; r++) {
                    QK_PREFETCH(wr[r] + k / 2);
                    __m256i v = _mm256_loadu_si256((const __m256i *)(wr[r] + k / 2));
                    d[r] = dot2_u4(d[r], _mm256_and_si256(v, m4), ev, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4), od);
                }
            }
            if (k + 32 <= c1) {
                __m256i ev, od;
                deinterleave32(qa + k, &ev, &od);
                if (w4s) corr = _mm256_add_epi32(corr, neg8_lanesums(ev, od));
                for (int r = 0; r < R; r++) {
                    __m256i v = _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(wr[r] + k / 2)));
                    d[r] = dot2_u4(d[r], _mm256_and_si256(v, m4), ev, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4), od);
                }
                k += 32;
            }
            if (k < c1) /* g = K only */
                for (int r = 0; r < R; r++) {
                    int32_t t = 0;
                    for (size_t i = k; i < c1; i++) t += (w4code(wr[r], i) - (w4s ? 8 : 0)) * qa[i];
                    d[r] = _mm256_add_epi32(d[r], lane0(t));
                }
            for (int r = 0; r < R; r++)
                acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(d[r], corr)), _mm256_set1_ps(sw[r]), acc[r]);
            c0 = c1;
        }
    }
    for (int r = 0; r < R; r++) {
        float y = qk_avx2_hsum_ps(acc[r]);
        if (!w4s) y += w4a_offset_term(w->mins, (n0 + r) * ng, st, sa, su, ng);
        a->y[n0 + r] = y;
    }
}

QK_INLINE void w4_rows(const qk_matmul_args *a, size_t n0, const int R, const int w4s) {
    if (a->group == 32) {
        if (a->w->scale_type == QK_SCALE_F16) w4_g32(a, n0, R, w4s, QK_SCALE_F16);
        else w4_g32(a, n0, R, w4s, QK_SCALE_F32);
    } else {
        if (a->w->scale_type == QK_SCALE_F16) w4_groups(a, n0, R, w4s, QK_SCALE_F16);
        else w4_groups(a, n0, R, w4s, QK_SCALE_F32);
    }
}

QK_INLINE void gemv_w4(const qk_matmul_args *a, const int w4s) {
    size_t n = 0;
    for (; n + QK_GEMV_R <= a->N; n += QK_GEMV_R) w4_rows(a, n, QK_GEMV_R, w4s);
    for (; n < a->N; n++) w4_rows(a, n, 1, w4s);
}

/* ---- w8s, plain layout ---- */

/* Σ of each 4 products of the int8 codes w and a, given |a|. */
QK_INLINE __m256i dot_s8(__m256i acc, __m256i w, __m256i a, __m256i absa) { return dot1(acc, absa, _mm256_sign_epi8(w, a)); }

/* Two groups' int32 dots as [j, j+1, j, j+1 | j, j+1, j, j+1] (each group's 8 lanes folded to 4). */
QK_INLINE __m256i fold_pair(__m256i d0, __m256i d1) {
    return _mm256_add_epi32(_mm256_unpacklo_epi32(d0, d1), _mm256_unpackhi_epi32(d0, d1));
}

/* [v0, v1] repeated. */
QK_INLINE __m256 pair_ps(const float *p) { return _mm256_castpd_ps(_mm256_broadcast_sd((const double *)p)); }

QK_INLINE __m256 scale_pair(const void *p, size_t i, qk_scale_type st) {
    if (st == QK_SCALE_F16) {
        uint32_t h;
        memcpy(&h, (const uint16_t *)p + i, 4);
        __m128 s = _mm_cvtph_ps(_mm_cvtsi32_si128((int)h));
        return _mm256_castpd_ps(_mm256_broadcastsd_pd(_mm_castps_pd(s)));
    }
    return pair_ps((const float *)p + i);
}

QK_INLINE void w8_g32(const qk_matmul_args *a, size_t n0, const int R, const qk_scale_type st) {
    const qk_qmat *w = a->w;
    const int8_t *qa = a->xq->codes;
    const float *sa = a->xq->scales;
    const size_t K = a->K, ng = K / 32;
    const uint8_t *wr[QK_GEMV_R];
    __m256 acc[QK_GEMV_R];
    for (int r = 0; r < R; r++) {
        wr[r] = w->codes + (n0 + r) * w->row_bytes;
        acc[r] = _mm256_setzero_ps();
    }
    size_t k = 0;
    for (; k + 64 <= K; k += 64) {
        const size_t j = k / 32;
        const __m256i a0 = _mm256_loadu_si256((const __m256i *)(qa + k)), a1 = _mm256_loadu_si256((const __m256i *)(qa + k + 32));
        const __m256i b0 = _mm256_abs_epi8(a0), b1 = _mm256_abs_epi8(a1);
        const __m256 sa2 = pair_ps(sa + j);
        for (int r = 0; r < R; r++) {
            QK_PREFETCH(wr[r] + k);
            __m256i d0 = dot_s8(_mm256_setzero_si256(), _mm256_loadu_si256((const __m256i *)(wr[r] + k)), a0, b0);
            __m256i d1 = dot_s8(_mm256_setzero_si256(), _mm256_loadu_si256((const __m256i *)(wr[r] + k + 32)), a1, b1);
            __m256 s = _mm256_mul_ps(scale_pair(w->scales, (n0 + r) * ng + j, st), sa2);
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(fold_pair(d0, d1)), s, acc[r]);
        }
    }
    if (k < K) {
        const size_t j = k / 32;
        const __m256i a0 = _mm256_loadu_si256((const __m256i *)(qa + k)), b0 = _mm256_abs_epi8(a0);
        for (int r = 0; r < R; r++) {
            __m256i d0 = dot_s8(_mm256_setzero_si256(), _mm256_loadu_si256((const __m256i *)(wr[r] + k)), a0, b0);
            float s = qk_avx2_load_scale(w->scales, (n0 + r) * ng + j, st) * sa[j];
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d0), _mm256_set1_ps(s), acc[r]);
        }
    }
    for (int r = 0; r < R; r++) a->y[n0 + r] = qk_avx2_hsum_ps(acc[r]);
}

QK_INLINE void w8_groups(const qk_matmul_args *a, size_t n0, const int R, const qk_scale_type st) {
    const qk_qmat *w = a->w;
    const int8_t *qa = a->xq->codes;
    const float *sa = a->xq->scales;
    const size_t K = a->K, g = a->group, ng = K / g;
    const int8_t *wr[QK_GEMV_R];
    __m256 acc[QK_GEMV_R];
    for (int r = 0; r < R; r++) {
        wr[r] = (const int8_t *)(w->codes + (n0 + r) * w->row_bytes);
        acc[r] = _mm256_setzero_ps();
    }
    for (size_t j = 0; j < ng; j++) {
        float sw[QK_GEMV_R];
        for (int r = 0; r < R; r++) sw[r] = qk_avx2_load_scale(w->scales, (n0 + r) * ng + j, st) * sa[j];
        for (size_t c0 = j * g, end = c0 + g; c0 < end;) {
            const size_t c1 = end - c0 > QK_GEMV_CHUNK ? c0 + QK_GEMV_CHUNK : end;
            __m256i d[QK_GEMV_R];
            for (int r = 0; r < R; r++) d[r] = _mm256_setzero_si256();
            size_t k = c0;
            for (; k + 64 <= c1; k += 64) {
                const __m256i a0 = _mm256_loadu_si256((const __m256i *)(qa + k)), a1 = _mm256_loadu_si256((const __m256i *)(qa + k + 32));
                const __m256i b0 = _mm256_abs_epi8(a0), b1 = _mm256_abs_epi8(a1);
                for (int r = 0; r < R; r++) {
                    QK_PREFETCH(wr[r] + k);
                    d[r] = dot_s8(d[r], _mm256_loadu_si256((const __m256i *)(wr[r] + k)), a0, b0);
                    d[r] = dot_s8(d[r], _mm256_loadu_si256((const __m256i *)(wr[r] + k + 32)), a1, b1);
                }
            }
            if (k + 32 <= c1) {
                const __m256i a0 = _mm256_loadu_si256((const __m256i *)(qa + k)), b0 = _mm256_abs_epi8(a0);
                for (int r = 0; r < R; r++) d[r] = dot_s8(d[r], _mm256_loadu_si256((const __m256i *)(wr[r] + k)), a0, b0);
                k += 32;
            }
            if (k < c1) /* g = K only */
                for (int r = 0; r < R; r++) {
                    int32_t t = 0;
                    for (size_t i = k; i < c1; i++) t += wr[r][i] * qa[i];
                    d[r] = _mm256_add_epi32(d[r], lane0(t));
                }
            for (int r = 0; r < R; r++) acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d[r]), _mm256_set1_ps(sw[r]), acc[r]);
            c0 = c1;
        }
    }
    for (int r = 0; r < R; r++) a->y[n0 + r] = qk_avx2_hsum_ps(acc[r]);
}

QK_INLINE void w8_rows(const qk_matmul_args *a, size_t n0, const int R) {
    if (a->group == 32) {
        if (a->w->scale_type == QK_SCALE_F16) w8_g32(a, n0, R, QK_SCALE_F16);
        else w8_g32(a, n0, R, QK_SCALE_F32);
    } else {
        if (a->w->scale_type == QK_SCALE_F16) w8_groups(a, n0, R, QK_SCALE_F16);
        else w8_groups(a, n0, R, QK_SCALE_F32);
    }
}

QK_INLINE void gemv_w8(const qk_matmul_args *a) {
    size_t n = 0;
    for (; n + QK_GEMV_R <= a->N; n += QK_GEMV_R) w8_rows(a, n, QK_GEMV_R);
    for (; n < a->N; n++) w8_rows(a, n, 1);
}

/* ---- llama.cpp blocks ---- */

/* q4_0 · q8_0: two blocks per step; the low nibbles hold elements 0-15 of a
 * block and the high nibbles 16-31, so the activations need no shuffle. */
QK_INLINE void q4_0_rows(const qk_matmul_args *a, size_t n0, const int R) {
    const qk_qmat *w = a->w;
    const int8_t *qa = a->xq->codes;
    const float *sa = a->xq->scales;
    const size_t nb = a->K / 32;
    const __m256i m4 = _mm256_set1_epi8(15);
    const uint8_t *wr[QK_GEMV_R];
    __m256 acc[QK_GEMV_R];
    for (int r = 0; r < R; r++) {
        wr[r] = w->codes + (n0 + r) * w->row_bytes;
        acc[r] = _mm256_setzero_ps();
    }
    size_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        const int8_t *x = qa + 32 * b;
        const __m256i alo = load2x128(x, x + 32), ahi = load2x128(x + 16, x + 48);
        const __m256 sa2 = halves_ps(sa[b], sa[b + 1]);
        const __m256i corr = neg8_lanesums(alo, ahi);
        for (int r = 0; r < R; r++) {
            const uint8_t *blk = wr[r] + b * QK_Q4_0_BYTES;
            QK_PREFETCH(blk);
            __m256i v = load2x128(blk + 2, blk + 2 + QK_Q4_0_BYTES);
            __m256i d = dot2_u4(corr, _mm256_and_si256(v, m4), alo, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4), ahi);
            __m256 s = _mm256_mul_ps(fp16_halves(blk, blk + QK_Q4_0_BYTES), sa2);
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), s, acc[r]);
        }
    }
    if (b < nb) {
        const int8_t *x = qa + 32 * b;
        const __m256i alo = _mm256_inserti128_si256(_mm256_setzero_si256(), _mm_loadu_si128((const __m128i *)x), 0);
        const __m256i ahi = _mm256_inserti128_si256(_mm256_setzero_si256(), _mm_loadu_si128((const __m128i *)(x + 16)), 0);
        const __m256i corr = neg8_lanesums(alo, ahi);
        for (int r = 0; r < R; r++) {
            const uint8_t *blk = wr[r] + b * QK_Q4_0_BYTES;
            __m256i v = _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(blk + 2)));
            __m256i d = dot2_u4(corr, _mm256_and_si256(v, m4), alo, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4), ahi);
            float s = _cvtsh_ss(qk_rd16(blk)) * sa[b];
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), _mm256_set1_ps(s), acc[r]);
        }
    }
    for (int r = 0; r < R; r++) a->y[n0 + r] = qk_avx2_hsum_ps(acc[r]);
}

QK_INLINE void q8_0_rows(const qk_matmul_args *a, size_t n0, const int R) {
    const qk_qmat *w = a->w;
    const int8_t *qa = a->xq->codes;
    const float *sa = a->xq->scales;
    const size_t nb = a->K / 32;
    const uint8_t *wr[QK_GEMV_R];
    __m256 acc[QK_GEMV_R];
    for (int r = 0; r < R; r++) {
        wr[r] = w->codes + (n0 + r) * w->row_bytes;
        acc[r] = _mm256_setzero_ps();
    }
    size_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        const __m256i a0 = _mm256_loadu_si256((const __m256i *)(qa + 32 * b)), a1 = _mm256_loadu_si256((const __m256i *)(qa + 32 * b + 32));
        const __m256i b0 = _mm256_abs_epi8(a0), b1 = _mm256_abs_epi8(a1);
        const __m256 sa2 = pair_ps(sa + b);
        for (int r = 0; r < R; r++) {
            const uint8_t *blk = wr[r] + b * QK_Q8_0_BYTES;
            QK_PREFETCH(blk);
            QK_PREFETCH(blk + 64);
            __m256i d0 = dot_s8(_mm256_setzero_si256(), _mm256_loadu_si256((const __m256i *)(blk + 2)), a0, b0);
            __m256i d1 = dot_s8(_mm256_setzero_si256(), _mm256_loadu_si256((const __m256i *)(blk + 2 + QK_Q8_0_BYTES)), a1, b1);
            uint32_t h = (uint32_t)qk_rd16(blk) | (uint32_t)qk_rd16(blk + QK_Q8_0_BYTES) << 16;
            __m256 sw = _mm256_castpd_ps(_mm256_broadcastsd_pd(_mm_castps_pd(_mm_cvtph_ps(_mm_cvtsi32_si128((int)h)))));
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(fold_pair(d0, d1)), _mm256_mul_ps(sw, sa2), acc[r]);
        }
    }
    if (b < nb) {
        const __m256i a0 = _mm256_loadu_si256((const __m256i *)(qa + 32 * b)), b0 = _mm256_abs_epi8(a0);
        for (int r = 0; r < R; r++) {
            const uint8_t *blk = wr[r] + b * QK_Q8_0_BYTES;
            QK_PREFETCH(blk);
            QK_PREFETCH(blk + 64);
            __m256i d0 = dot_s8(_mm256_setzero_si256(), _mm256_loadu_si256((const __m256i *)(blk + 2)), a0, b0);
            float s = _cvtsh_ss(qk_rd16(blk)) * sa[b];
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d0), _mm256_set1_ps(s), acc[r]);
        }
    }
    for (int r = 0; r < R; r++) a->y[n0 + r] = qk_avx2_hsum_ps(acc[r]);
}

QK_INLINE void gemv_q4_0(const qk_matmul_args *a) {
    size_t n = 0;
    for (; n + QK_GEMV_R <= a->N; n += QK_GEMV_R) q4_0_rows(a, n, QK_GEMV_R);
    for (; n < a->N; n++) q4_0_rows(a, n, 1);
}

QK_INLINE void gemv_q8_0(const qk_matmul_args *a) {
    size_t n = 0;
    for (; n + QK_GEMV_R <= a->N; n += QK_GEMV_R) q8_0_rows(a, n, QK_GEMV_R);
    for (; n < a->N; n++) q8_0_rows(a, n, 1);
}

#endif
