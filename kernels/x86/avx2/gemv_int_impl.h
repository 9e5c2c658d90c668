/// Integer-mode gemv bodies (W4A8, W4A4, W8A8, q4_0·q8_0, q8_0·q8_0) on the
/// plain layout, shared by the avx2 tier (vpmaddubsw + vpmaddwd) and the
/// avxvnni tier (vpdpbusd), which includes this file with QK_GEMV_VNNI defined.
///
/// y[n] = Σ_groups sw·sa·Σ qw·qa (w4a: Σ_groups sa·(m·Σqa + d·Σ qw·qa)).
///
/// Exactness of the integer dots:
///  - 4-bit weights enter as unsigned codes c in [0,15] against signed
///    activations; a vpmaddubsw pair is at most 2·15·127 and two of them add
///    in int16 without overflow. w4s and q4_0 store q+8, so a group's dot is
///    Σ c·a − 8·Σa, with Σa from the activation quantizer; the correction is
///    applied in int32 to the group's complete sum, before any rounding.
///  - int8 × int8 (w8s, q8_0): vpmaddubsw(|a|, sign(w, a)); a pair is at most
///    2·127·127 = 32258 < 32767, since codes are never −128.
///  - int32 lanes never hold more than 2^16 values' products; longer groups
///    (g = K) are summed in int64 per chunk of 2^16.
///
/// Streaming: rows are processed QK_GEMV_R at a time (1: one row after the
/// other), and each row consumes at least 128 contiguous bytes per step, with
/// a software prefetch QK_GEMV_PF bytes ahead of it. With one row at a time
/// the codes are one sequential stream (past a row's end the prefetch runs
/// into the next row): on the Zen 5 VM this was tuned on, that read DRAM a
/// third faster (4096x14336 cold, W8A8 23 -> 30-36 GB/s, q4_0·q8_0 16 -> 25)
/// than four interleaved rows sharing the activation work with 1 KiB ahead,
/// whose streams the memory system served worse than one. The integer sums of
/// a step are folded to one vector (group sums, or partial sums that each hold
/// only one group's products) and converted once.
///
/// Any K the format allows: groups of 32 and 64 take the step paths, groups
/// that are a multiple of 128 (at most 2^16 values) four at a time, the rest
/// (other groups, the last groups of K) the per-group path, whose last piece
/// of a group that is not a multiple of 32 (g = K) is scalar. One thread,
/// cold (tools/ab.py --rounds 3 --pin 0, 1x4096x14336 and 1x14336x4096,
/// 2026-12-07), against the per-group path and activations split per row:
/// W4A8 avx2 and avxvnni at g = 128 0.52-0.60 of the time, at g = 32 (the
/// split activations only) 0.49-0.95; W8A8 at g = 128 0.83-1.02.
#ifndef QK_GEMV_INT_IMPL_H
#define QK_GEMV_INT_IMPL_H

#include "x86/avx2/avx2_common.h"

/* Two floats at any alignment: low half (upper zero), or broadcast to both halves. */
static inline __m128 gi_load2f(const float *p) {
    double d;
    memcpy(&d, p, 8);
    return _mm_castpd_ps(_mm_set_sd(d));
}
static inline __m128 gi_load2f_dup(const float *p) {
    double d;
    memcpy(&d, p, 8);
    return _mm_castpd_ps(_mm_set1_pd(d));
}

#ifndef QK_GEMV_R
#define QK_GEMV_R 1
#endif
#define QK_GEMV_CHUNK ((size_t)1 << 16)
#ifndef QK_GEMV_PF
#define QK_GEMV_PF 8192 /* bytes of the weight stream prefetched ahead */
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

/* Dot of 32 bytes of w4 codes v (64 values) with the activations split by deinterleave64. */
QK_INLINE __m256i dot_w4(__m256i acc, __m256i v, __m256i ev, __m256i od) {
    const __m256i m4 = _mm256_set1_epi8(15);
    return dot2_u4(acc, _mm256_and_si256(v, m4), ev, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4), od);
}

/* Dot of 32 int8 codes w with 32 int8 codes a, given |a|. */
QK_INLINE __m256i dot_s8(__m256i acc, __m256i w, __m256i a, __m256i absa) { return dot1(acc, absa, _mm256_sign_epi8(w, a)); }

QK_INLINE __m256i loadu256(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

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
    *ev = _mm256_zextsi128_si256(_mm_unpacklo_epi64(s0, s1));
    *od = _mm256_zextsi128_si256(_mm_unpackhi_epi64(s0, s1));
}

/* Four int32 vectors d0..d3 -> one: lanes [d0 lo, d1 lo, d2 lo, d3 lo | d0 hi, d1 hi, d2 hi, d3 hi],
 * each the sum of the four lanes of that 128-bit half. */
QK_INLINE __m256i fold4(const __m256i d[4]) {
    return _mm256_hadd_epi32(_mm256_hadd_epi32(d[0], d[1]), _mm256_hadd_epi32(d[2], d[3]));
}

/* Four dots of 32 bytes of w4 codes, folded like fold4 of dot_w4 (groups of
 * the 128-bit halves summed); avx2 sums in int16 first: a lane of the two
 * horizontal adds holds 16 products of at most 15·127 (30480 < 32768). */
QK_INLINE __m256i dot_w4_fold4(const __m256i w[4], const __m256i ev[4], const __m256i od[4]) {
#ifdef QK_GEMV_VNNI
    __m256i d[4];
    for (int b = 0; b < 4; b++) d[b] = dot_w4(_mm256_setzero_si256(), w[b], ev[b], od[b]);
    return fold4(d);
#else
    const __m256i m4 = _mm256_set1_epi8(15);
    __m256i q[4];
    for (int b = 0; b < 4; b++) {
        const __m256i v = w[b];
        q[b] = _mm256_add_epi16(_mm256_maddubs_epi16(_mm256_and_si256(v, m4), ev[b]),
                                _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4), od[b]));
    }
    __m256i h = _mm256_hadd_epi16(_mm256_hadd_epi16(q[0], q[1]), _mm256_hadd_epi16(q[2], q[3]));
    return _mm256_madd_epi16(h, _mm256_set1_epi16(1));
#endif
}

/* Four f32 values as both halves of a vector. */
QK_INLINE __m256 dup128(__m128 v) { return _mm256_set_m128(v, v); }

/* Four consecutive scales (f32 or f16) as an xmm. */
QK_INLINE __m128 load4_scales(const void *p, size_t i, qk_scale_type st) {
    if (st == QK_SCALE_F16) return _mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)((const uint16_t *)p + i)));
    return _mm_loadu_ps((const float *)p + i);
}

/* The fp16 values at p, p+stride, p+2·stride, p+3·stride (llama.cpp block headers). */
QK_INLINE __m128i gather4_fp16(const uint8_t *p, size_t stride) {
    uint64_t h = (uint64_t)qk_rd16(p) | (uint64_t)qk_rd16(p + stride) << 16 | (uint64_t)qk_rd16(p + 2 * stride) << 32 |
                 (uint64_t)qk_rd16(p + 3 * stride) << 48;
    return _mm_cvtsi64_si128((long long)h);
}

/* Σ_groups m·sa·Σqa of one w4a row from group j0 on (the offset term). */
QK_INLINE float w4a_offset_term(const void *mins, size_t i0, qk_scale_type st, const float *sa, const int32_t *su, size_t ng) {
    __m256 acc = _mm256_setzero_ps();
    size_t j = 0;
    for (; j + 8 <= ng; j += 8) {
        __m256 t = _mm256_mul_ps(_mm256_loadu_ps(sa + j), _mm256_cvtepi32_ps(loadu256(su + j)));
        acc = _mm256_fmadd_ps(qk_avx2_load8_scales(mins, i0 + j, st), t, acc);
    }
    float r = qk_avx2_hsum_ps(acc);
    for (; j < ng; j++) r += qk_avx2_load_scale(mins, i0 + j, st) * (sa[j] * (float)su[j]);
    return r;
}

/* The rows of one call to a *_rows function. */
typedef struct gemv_rows {
    const uint8_t *w[QK_GEMV_R]; /* row starts */
    float y[QK_GEMV_R];          /* running sums */
    const int8_t *eo;            /* 4-bit codes: the activations as act_eo_table made them, or NULL */
} gemv_rows;

QK_INLINE void rows_init(gemv_rows *t, const qk_matmul_args *a, size_t n0, const int R, const int8_t *eo) {
    for (int r = 0; r < R; r++) {
        t->w[r] = a->w->codes + (n0 + r) * a->w->row_bytes;
        t->y[r] = 0.0f;
    }
    t->eo = eo;
}

/* The activations of each whole block of 64 (k = 64b) as deinterleave64
 * splits them, even elements then odd (64 bytes a block), made once per call
 * for the 4-bit rows: each row otherwise split them again, 8 of a step's
 * instructions per 64 values on top of the dot's 8 (one row at a time, so
 * nothing shares them). NULL when out of memory. */
static int8_t *act_eo_table(const qk_matmul_args *a) {
    size_t nb = a->K / 64;
    int8_t *eo = malloc(nb ? nb * 64 : 1);
    if (!eo) return NULL;
    for (size_t b = 0; b < nb; b++) {
        __m256i ev, od;
        deinterleave64(a->xq->codes + 64 * b, &ev, &od);
        _mm256_storeu_si256((__m256i *)(eo + 64 * b), ev);
        _mm256_storeu_si256((__m256i *)(eo + 64 * b + 32), od);
    }
    return eo;
}

/* deinterleave64 of the activations at k, from the table when there is one and k starts a block. */
QK_INLINE void act64(const gemv_rows *t, const int8_t *qa, size_t k, __m256i *ev, __m256i *od) {
    if (t->eo && !(k & 63)) {
        *ev = loadu256(t->eo + k);
        *od = loadu256(t->eo + k + 32);
    } else {
        deinterleave64(qa + k, ev, od);
    }
}

/* acc + the dot of 128 int8 codes at p with the activations at a, the stream
 * prefetched ahead of p (|a| is made per call: the rows go one at a time). */
QK_INLINE __m256i dot128_s8(__m256i acc, const uint8_t *p, const int8_t *a) {
    QK_PREFETCH(p);
    QK_PREFETCH(p + 64);
    for (int b = 0; b < 4; b++) {
        const __m256i av = loadu256(a + 32 * b);
        acc = dot_s8(acc, loadu256(p + 32 * b), av, _mm256_abs_epi8(av));
    }
    return acc;
}

/* The vector part of the dots of codes [c0, c1) (one chunk of a group) of
 * the R rows with the activations, into d[r]: 4-bit codes (w8 0) in steps of
 * 256, 64 and 32 values, 8-bit codes in steps of 128 and 32. Returns where it
 * stopped: the scalar tail of a group that is not a multiple of 32 (g = K)
 * starts there. */
QK_INLINE size_t chunk_dots(const int8_t *qa, size_t c0, size_t c1, const int R, const int w8, const gemv_rows *t, __m256i *d) {
    size_t k = c0;
    if (w8) {
        for (; k + 128 <= c1; k += 128)
            for (int r = 0; r < R; r++) d[r] = dot128_s8(d[r], t->w[r] + k, qa + k);
        for (; k + 32 <= c1; k += 32) {
            const __m256i av = loadu256(qa + k), ab = _mm256_abs_epi8(av);
            for (int r = 0; r < R; r++) d[r] = dot_s8(d[r], loadu256(t->w[r] + k), av, ab);
        }
        return k;
    }
    for (; k + 256 <= c1; k += 256) {
        __m256i ev[4], od[4];
        for (int b = 0; b < 4; b++) act64(t, qa, k + 64 * b, &ev[b], &od[b]);
        for (int r = 0; r < R; r++) {
            const uint8_t *p = t->w[r] + k / 2;
            QK_PREFETCH(p);
            QK_PREFETCH(p + 64);
            for (int b = 0; b < 4; b++) d[r] = dot_w4(d[r], loadu256(p + 32 * b), ev[b], od[b]);
        }
    }
    for (; k + 64 <= c1; k += 64) {
        __m256i ev, od;
        act64(t, qa, k, &ev, &od);
        for (int r = 0; r < R; r++) d[r] = dot_w4(d[r], loadu256(t->w[r] + k / 2), ev, od);
    }
    if (k + 32 <= c1) {
        __m256i ev, od;
        deinterleave32(qa + k, &ev, &od);
        for (int r = 0; r < R; r++)
            d[r] = dot_w4(d[r], _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(t->w[r] + k / 2))), ev, od);
        k += 32;
    }
    return k;
}

/* Groups j0.. of any size (w8: 8-bit codes, else 4-bit; w4s: the codes are
 * q + 8): int32 sums per group (int64 across chunks of 2^16), then
 * y += sw·sa·dot, w4s's dot less 8·Σa. */
QK_INLINE void int_groups(const qk_matmul_args *a, size_t n0, const int R, const int w8, const int w4s, const qk_scale_type st, size_t j0,
                          gemv_rows *t) {
    const int8_t *qa = a->xq->codes;
    const float *sa = a->xq->scales;
    const int32_t *su = a->xq->sums;
    const size_t K = a->K, g = a->group, ng = K / g;
    for (size_t j = j0; j < ng; j++) {
        int64_t tot[QK_GEMV_R] = {0};
        for (size_t c0 = j * g, end = c0 + g; c0 < end;) {
            const size_t c1 = end - c0 > QK_GEMV_CHUNK ? c0 + QK_GEMV_CHUNK : end;
            __m256i d[QK_GEMV_R];
            for (int r = 0; r < R; r++) d[r] = _mm256_setzero_si256();
            const size_t k = chunk_dots(qa, c0, c1, R, w8, t, d);
            for (int r = 0; r < R; r++) {
                tot[r] += qk_avx2_hsum_epi32(d[r]);
                for (size_t i = k; i < c1; i++) { /* g = K only */
                    const unsigned c = qk_row_stored(t->w[r], w8 ? QK_W8S : QK_W4S, i);
                    tot[r] += (w8 ? (int8_t)c : (int)c) * qa[i];
                }
            }
            c0 = c1;
        }
        for (int r = 0; r < R; r++) {
            int64_t dot = tot[r] - (w4s ? 8 * (int64_t)su[j] : 0);
            t->y[r] += (float)dot * (qk_avx2_load_scale(a->w->scales, (n0 + r) * ng + j, st) * sa[j]);
        }
    }
}

/* The int32 partial dots of one row's group of g values (a multiple of 128)
 * from k0: 8-bit codes (w8) or 4-bit, 128 values a step. */
QK_INLINE __m256i group_dot(const uint8_t *row, const int8_t *qa, size_t k0, size_t g, const int w8, const gemv_rows *t) {
    __m256i d = _mm256_setzero_si256();
    for (size_t k = k0; k < k0 + g; k += 128) {
        if (w8) {
            d = dot128_s8(d, row + k, qa + k);
        } else {
            const uint8_t *p = row + k / 2;
            QK_PREFETCH(p);
            for (int b = 0; b < 2; b++) {
                __m256i ev, od;
                act64(t, qa, k + 64 * b, &ev, &od);
                d = dot_w4(d, loadu256(p + 32 * b), ev, od);
            }
        }
    }
    return d;
}

/* g a multiple of 128 (at most QK_GEMV_CHUNK): four groups at a time, each
 * an int32 vector of exact partial dots (group_dot), folded to the four
 * exact group sums by fold4 and converted once, instead of a horizontal sum
 * and scalar arithmetic per group (int_groups, which held 4-bit g = 128 to
 * half the speed of g = 32). w8: 8-bit codes, else 4-bit (w4s: q + 8).
 * Returns where it stopped. */
QK_INLINE size_t big_steps(const qk_matmul_args *a, size_t n0, const int R, const int w8, const int w4s, const qk_scale_type st,
                           gemv_rows *t) {
    const int8_t *qa = a->xq->codes;
    const float *sa = a->xq->scales;
    const int32_t *su = a->xq->sums;
    const size_t g = a->group, ng = a->K / g;
    __m128 acc[QK_GEMV_R];
    for (int r = 0; r < R; r++) acc[r] = _mm_setzero_ps();
    size_t j = 0;
    for (; j + 4 <= ng; j += 4) {
        const __m128i su4 = _mm_loadu_si128((const __m128i *)(su + j));
        const __m128i corr = w4s ? _mm_slli_epi32(_mm_sub_epi32(_mm_setzero_si128(), su4), 3) : _mm_setzero_si128();
        const __m128 sa4 = _mm_loadu_ps(sa + j);
        for (int r = 0; r < R; r++) {
            __m256i d[4];
            for (int q = 0; q < 4; q++) d[q] = group_dot(t->w[r], qa, (j + q) * g, g, w8, t);
            const __m256i f = fold4(d); /* lanes [groups 0..3 of the low halves | of the high halves] */
            const __m128i gs = _mm_add_epi32(_mm_add_epi32(_mm256_castsi256_si128(f), _mm256_extracti128_si256(f, 1)), corr);
            const __m128 sw = _mm_mul_ps(load4_scales(a->w->scales, (n0 + r) * ng + j, st), sa4);
            acc[r] = _mm_fmadd_ps(_mm_cvtepi32_ps(gs), sw, acc[r]);
        }
    }
    for (int r = 0; r < R; r++) t->y[r] += qk_avx2_hsum_ps(_mm256_zextps128_ps256(acc[r]));
    return j * g;
}

/* ---- w4s / w4a, plain layout ---- */

/* g = 32 or 64, steps of 256 values: eight or four groups, one conversion.
 * Returns where it stopped. */
QK_INLINE size_t w4_small_steps(const qk_matmul_args *a, size_t n0, const int R, const int w4s, const qk_scale_type st, const size_t g,
                                gemv_rows *t) {
    const int8_t *qa = a->xq->codes;
    const float *sa = a->xq->scales;
    const int32_t *su = a->xq->sums;
    const size_t K = a->K, ng = K / g;
    __m256 acc[QK_GEMV_R];
    for (int r = 0; r < R; r++) acc[r] = _mm256_setzero_ps();
    size_t k = 0;
    for (; k + 256 <= K; k += 256) {
        const size_t j = k / g;
        __m256i ev[4], od[4];
        for (int b = 0; b < 4; b++) act64(t, qa, k + 64 * b, &ev[b], &od[b]);
        /* the groups' -8·Σa (w4s) and sa: eight of each at g = 32, four at g = 64 */
        const __m256i su8 = g == 32 ? loadu256(su + j) : _mm256_zextsi128_si256(_mm_loadu_si128((const __m128i *)(su + j)));
        const __m256i corr = w4s ? _mm256_slli_epi32(_mm256_sub_epi32(_mm256_setzero_si256(), su8), 3) : _mm256_setzero_si256();
        const __m256 sa8 = g == 32 ? _mm256_loadu_ps(sa + j) : _mm256_zextps128_ps256(_mm_loadu_ps(sa + j));
        for (int r = 0; r < R; r++) {
            const uint8_t *p = t->w[r] + k / 2;
            QK_PREFETCH(p);
            QK_PREFETCH(p + 64);
            const __m256i w[4] = {loadu256(p), loadu256(p + 32), loadu256(p + 64), loadu256(p + 96)};
            __m256i f = dot_w4_fold4(w, ev, od); /* lane i: group j+i/2 (g = 32) or j+i%4 (g = 64) */
            __m256 sw;
            if (g == 32) {
                f = _mm256_add_epi32(_mm256_permutevar8x32_epi32(f, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)), corr);
                sw = _mm256_mul_ps(qk_avx2_load8_scales(a->w->scales, (n0 + r) * ng + j, st), sa8);
            } else {
                __m128i gs = _mm_add_epi32(_mm256_castsi256_si128(f), _mm256_extracti128_si256(f, 1));
                if (w4s) gs = _mm_add_epi32(gs, _mm256_castsi256_si128(corr));
                f = _mm256_zextsi128_si256(gs);
                sw = _mm256_zextps128_ps256(_mm_mul_ps(load4_scales(a->w->scales, (n0 + r) * ng + j, st), _mm256_castps256_ps128(sa8)));
            }
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(f), sw, acc[r]);
        }
    }
    for (int r = 0; r < R; r++) t->y[r] += qk_avx2_hsum_ps(acc[r]);
    return k;
}

QK_INLINE void w4_rows_st(const qk_matmul_args *a, size_t n0, const int R, const int w4s, const qk_scale_type st, const int8_t *eo) {
    gemv_rows t;
    rows_init(&t, a, n0, R, eo);
    size_t k = 0;
    if (a->group == 32) k = w4_small_steps(a, n0, R, w4s, st, 32, &t);
    else if (a->group == 64) k = w4_small_steps(a, n0, R, w4s, st, 64, &t);
    else if (a->group % 128 == 0 && a->group <= QK_GEMV_CHUNK) k = big_steps(a, n0, R, 0, w4s, st, &t);
    int_groups(a, n0, R, 0, w4s, st, k / a->group, &t);
    const size_t ng = a->K / a->group;
    for (int r = 0; r < R; r++) {
        float y = t.y[r];
        if (!w4s) y += w4a_offset_term(a->w->mins, (n0 + r) * ng, st, a->xq->scales, a->xq->sums, ng);
        a->y[n0 + r] = y;
    }
}

QK_INLINE void w4_rows(const qk_matmul_args *a, size_t n0, const int R, const int w4s, const int8_t *eo) {
    if (a->w->scale_type == QK_SCALE_F16) w4_rows_st(a, n0, R, w4s, QK_SCALE_F16, eo);
    else w4_rows_st(a, n0, R, w4s, QK_SCALE_F32, eo);
}

QK_INLINE void gemv_w4(const qk_matmul_args *a, const int w4s) {
    int8_t *eo = act_eo_table(a);
    size_t n = 0;
    for (; n + QK_GEMV_R <= a->N; n += QK_GEMV_R) w4_rows(a, n, QK_GEMV_R, w4s, eo);
    for (; n < a->N; n++) w4_rows(a, n, 1, w4s, eo);
    free(eo);
}

/* ---- w8s, plain layout ---- */

/* g = 32 or 64, steps of 128 values: partial sums that each hold one group, one conversion. */
QK_INLINE size_t w8_steps(const qk_matmul_args *a, size_t n0, const int R, const qk_scale_type st, const int g64, gemv_rows *t) {
    const int8_t *qa = a->xq->codes;
    const float *sa = a->xq->scales;
    const size_t K = a->K, g = g64 ? 64 : 32, ng = K / g;
    __m256 acc[QK_GEMV_R];
    for (int r = 0; r < R; r++) acc[r] = _mm256_setzero_ps();
    size_t k = 0;
    for (; k + 128 <= K; k += 128) {
        const size_t j = k / g;
        __m256i av[4], ab[4];
        for (int b = 0; b < 4; b++) {
            av[b] = loadu256(qa + k + 32 * b);
            ab[b] = _mm256_abs_epi8(av[b]);
        }
        /* fold4 lane i (and i+4) holds piece i of 32 values: group j+i (g = 32) or j+i/2 (g = 64) */
        __m128 sa4 = g64 ? gi_load2f_dup(sa + j) : _mm_loadu_ps(sa + j);
        if (g64) sa4 = _mm_unpacklo_ps(sa4, sa4);
        const __m256 sa8 = dup128(sa4);
        for (int r = 0; r < R; r++) {
            const uint8_t *p = t->w[r] + k;
            QK_PREFETCH(p);
            QK_PREFETCH(p + 64);
            __m256i d[4];
            for (int b = 0; b < 4; b++) d[b] = dot_s8(_mm256_setzero_si256(), loadu256(p + 32 * b), av[b], ab[b]);
            __m128 sw;
            if (g64) {
                __m128 s2;
                if (st == QK_SCALE_F16) {
                    int32_t h;
                    memcpy(&h, (const uint16_t *)a->w->scales + (n0 + r) * ng + j, 4);
                    s2 = _mm_cvtph_ps(_mm_cvtsi32_si128(h));
                } else {
                    s2 = gi_load2f((const float *)a->w->scales + (n0 + r) * ng + j);
                }
                sw = _mm_unpacklo_ps(s2, s2);
            } else {
                sw = load4_scales(a->w->scales, (n0 + r) * ng + j, st);
            }
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(fold4(d)), _mm256_mul_ps(dup128(sw), sa8), acc[r]);
        }
    }
    for (int r = 0; r < R; r++) t->y[r] += qk_avx2_hsum_ps(acc[r]);
    return k;
}

QK_INLINE void w8_rows_st(const qk_matmul_args *a, size_t n0, const int R, const qk_scale_type st) {
    gemv_rows t;
    rows_init(&t, a, n0, R, NULL);
    size_t k = 0;
    if (a->group == 32 || a->group == 64) k = w8_steps(a, n0, R, st, a->group == 64, &t);
    else if (a->group % 128 == 0 && a->group <= QK_GEMV_CHUNK) k = big_steps(a, n0, R, 1, 0, st, &t);
    int_groups(a, n0, R, 1, 0, st, k / a->group, &t);
    for (int r = 0; r < R; r++) a->y[n0 + r] = t.y[r];
}

QK_INLINE void w8_rows(const qk_matmul_args *a, size_t n0, const int R) {
    if (a->w->scale_type == QK_SCALE_F16) w8_rows_st(a, n0, R, QK_SCALE_F16);
    else w8_rows_st(a, n0, R, QK_SCALE_F32);
}

QK_INLINE void gemv_w8(const qk_matmul_args *a) {
    size_t n = 0;
    for (; n + QK_GEMV_R <= a->N; n += QK_GEMV_R) w8_rows(a, n, QK_GEMV_R);
    for (; n < a->N; n++) w8_rows(a, n, 1);
}

/* ---- llama.cpp blocks ---- */

/* q4_0 · q8_0, steps of eight blocks. In a block the low nibbles hold elements
 * 0-15 and the high nibbles 16-31, so two blocks side by side meet the
 * activations unshuffled: lanes 0-3 hold block b, 4-7 block b+1. */
QK_INLINE void q4_0_rows(const qk_matmul_args *a, size_t n0, const int R) {
    const int8_t *qa = a->xq->codes;
    const float *sa = a->xq->scales;
    const int32_t *su = a->xq->sums;
    const size_t nb = a->K / 32, B = QK_Q4_0_BYTES;
    gemv_rows t;
    rows_init(&t, a, n0, R, NULL);
    __m256 acc[QK_GEMV_R];
    for (int r = 0; r < R; r++) acc[r] = _mm256_setzero_ps();
    size_t b = 0;
    for (; b + 8 <= nb; b += 8) {
        __m256i alo[4], ahi[4];
        for (int q = 0; q < 4; q++) {
            const int8_t *x = qa + 32 * (b + 2 * q);
            alo[q] = load2x128(x, x + 32);
            ahi[q] = load2x128(x + 16, x + 48);
        }
        const __m256 sa8 = _mm256_loadu_ps(sa + b);
        const __m256i corr = _mm256_slli_epi32(_mm256_sub_epi32(_mm256_setzero_si256(), loadu256(su + b)), 3);
        for (int r = 0; r < R; r++) {
            const uint8_t *p = t.w[r] + b * B;
            QK_PREFETCH(p);
            QK_PREFETCH(p + 64);
            QK_PREFETCH(p + 128);
            __m256i w[4];
            for (int q = 0; q < 4; q++) w[q] = load2x128(p + 2 * q * B + 2, p + (2 * q + 1) * B + 2);
            const __m256i f = _mm256_permutevar8x32_epi32(dot_w4_fold4(w, alo, ahi), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
            __m256i s = _mm256_add_epi32(f, corr);
            __m256 dw = _mm256_cvtph_ps(_mm_unpacklo_epi64(gather4_fp16(p, B), gather4_fp16(p + 4 * B, B)));
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(dw, sa8), acc[r]);
        }
    }
    for (; b < nb; b++) {
        const int8_t *x = qa + 32 * b;
        const __m256i alo = _mm256_zextsi128_si256(_mm_loadu_si128((const __m128i *)x));
        const __m256i ahi = _mm256_zextsi128_si256(_mm_loadu_si128((const __m128i *)(x + 16)));
        for (int r = 0; r < R; r++) {
            const uint8_t *blk = t.w[r] + b * B;
            __m256i d = dot_w4(_mm256_setzero_si256(), _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(blk + 2))), alo, ahi);
            t.y[r] += (float)(qk_avx2_hsum_epi32(d) - 8 * su[b]) * (_cvtsh_ss(qk_rd16(blk)) * sa[b]);
        }
    }
    for (int r = 0; r < R; r++) a->y[n0 + r] = t.y[r] + qk_avx2_hsum_ps(acc[r]);
}

/* q8_0 · q8_0, steps of four blocks. */
QK_INLINE void q8_0_rows(const qk_matmul_args *a, size_t n0, const int R) {
    const int8_t *qa = a->xq->codes;
    const float *sa = a->xq->scales;
    const size_t nb = a->K / 32, B = QK_Q8_0_BYTES;
    gemv_rows t;
    rows_init(&t, a, n0, R, NULL);
    __m256 acc[QK_GEMV_R];
    for (int r = 0; r < R; r++) acc[r] = _mm256_setzero_ps();
    size_t b = 0;
    for (; b + 4 <= nb; b += 4) {
        __m256i av[4], ab[4];
        for (int q = 0; q < 4; q++) {
            av[q] = loadu256(qa + 32 * (b + q));
            ab[q] = _mm256_abs_epi8(av[q]);
        }
        const __m256 sa8 = dup128(_mm_loadu_ps(sa + b));
        for (int r = 0; r < R; r++) {
            const uint8_t *p = t.w[r] + b * B;
            QK_PREFETCH(p);
            QK_PREFETCH(p + 64);
            QK_PREFETCH(p + 128);
            __m256i d[4];
            for (int q = 0; q < 4; q++) d[q] = dot_s8(_mm256_setzero_si256(), loadu256(p + q * B + 2), av[q], ab[q]);
            __m256 dw = dup128(_mm_cvtph_ps(gather4_fp16(p, B)));
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(fold4(d)), _mm256_mul_ps(dw, sa8), acc[r]);
        }
    }
    for (; b < nb; b++) {
        const __m256i av = loadu256(qa + 32 * b), ab = _mm256_abs_epi8(av);
        for (int r = 0; r < R; r++) {
            const uint8_t *blk = t.w[r] + b * B;
            __m256i d = dot_s8(_mm256_setzero_si256(), loadu256(blk + 2), av, ab);
            t.y[r] += (float)qk_avx2_hsum_epi32(d) * (_cvtsh_ss(qk_rd16(blk)) * sa[b]);
        }
    }
    for (int r = 0; r < R; r++) a->y[n0 + r] = t.y[r] + qk_avx2_hsum_ps(acc[r]);
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
