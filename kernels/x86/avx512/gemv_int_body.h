/* Body of the integer-mode gemv kernels (M = 1) on zmm, shared by the avx512
 * tier (vpmaddubsw + vpmaddwd) and the avx512vnni tier (vpdpbusd). The file
 * that includes it defines, for its own ISA:
 *   QK_TIER_NAME            the tier suffix of the kernel names
 *   QK_W8_OFF               the offset (0 or 128) that qk8_weights adds to int8 weights
 *   qk8_act  qk8_act_prep(__m512i a)                 per-chunk activation form
 *   __m512i  qk8_dot(__m512i acc, __m512i w, qk8_act a)
 *            acc + Σ4 w·a per dword, w = 8-bit weights as qk8_weights made them
 *   __m512i  qk8_weights(__m512i w)                 raw int8 weights -> the dot's form
 *   __m512i  qk4_dot(__m512i acc, __m512i w, __m512i a)
 *            acc + Σ4 w·a per dword, w unsigned codes 0..15, a signed
 *   __m512i  qk_offset_dot(__m512i acc, int off, __m512i a)
 *            acc + Σ4 off·a per dword (off = 8 or 128)
 *
 * Every variant computes, per row n and group j, the exact integer
 * Σ c·a (c = the stored unsigned code, or the int8 code plus QK_W8_OFF) and
 * removes the offset exactly and lane by lane: each int32 lane of a group's
 * accumulator starts at -off·(the sum of the activations it will meet),
 * computed once per chunk for all rows, so every lane holds a true partial
 * dot Σ q·a (no large biased lanes whose f32 sum would cancel). Then
 * y += sw·sa·dot in f32, and for w4a y += Σ_j m_j·sa_j·Σa_j (the activation
 * group sums from actquant). Four rows per step share the activation loads.
 * g = 32: a 64-byte chunk holds two groups (lanes 0-7 and 8-15); any other
 * g accumulates the whole group in int32 (flushed to f32 every 32768 values,
 * far below int32 overflow) and scales it once. Tails are masked. */
#ifndef QK_GEMV_INT_BODY_H
#define QK_GEMV_INT_BODY_H

#include "x86/avx512/avx512_common.h"

#define QK_INLINE static inline __attribute__((always_inline))

enum { GI_R = 4, GI_FLUSH = 32768 };

/* Bytes of each weight row prefetched ahead: with several rows in flight the
 * hardware prefetchers alone leave DRAM bandwidth unused. */
#define GI_PF 1024

typedef enum { GI_W4S, GI_W4A, GI_W8S, GI_Q4_0, GI_Q8_0 } gi_fmt;

QK_INLINE int gi_off(gi_fmt f) { return f == GI_W8S || f == GI_Q8_0 ? QK_W8_OFF : f == GI_W4A ? 0 : 8; }

/* 64 codes of a plain 4-bit row from 32 bytes, in element order (masked: nbytes). */
QK_INLINE __m512i gi_w4_codes(const uint8_t *p, size_t nbytes) {
    __m256i b = nbytes >= 32 ? _mm256_loadu_si256((const __m256i *)p) : _mm256_maskz_loadu_epi8(qk512_mask32(nbytes), p);
    __m512i v = _mm512_cvtepu8_epi16(b);
    return _mm512_ternarylogic_epi32(v, _mm512_slli_epi16(v, 4), _mm512_set1_epi16(0x0f0f), 0xA8); /* (v | v<<4) & 0x0f0f */
}

/* 64 codes of two q4_0 blocks (the second may be absent). */
QK_INLINE __m512i gi_q4_0_codes(const uint8_t *blk, int two) {
    __m256i a = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(blk + 2)));
    __m256i b = two ? _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(blk + QK_Q4_0_BYTES + 2))) : _mm256_setzero_si256();
    __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
    v = _mm512_mask_srli_epi16(v, 0xff00ff00u, v, 4); /* 128-bit lanes 1 and 3: the high nibbles */
    return _mm512_and_si512(v, _mm512_set1_epi8(0x0f));
}

/* 64 int8 codes of two q8_0 blocks. */
QK_INLINE __m512i gi_q8_0_codes(const uint8_t *blk, int two) {
    __m256i a = _mm256_loadu_si256((const __m256i *)(blk + 2));
    __m256i b = two ? _mm256_loadu_si256((const __m256i *)(blk + QK_Q8_0_BYTES + 2)) : _mm256_setzero_si256();
    return _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
}

/* -off·(the activations of each lane), lane by lane. */
QK_INLINE __m512i gi_lane_corr(int off, __m512i a) {
    if (!off) return _mm512_setzero_si512();
    return _mm512_sub_epi32(_mm512_setzero_si512(), qk_offset_dot(_mm512_setzero_si512(), off, a));
}

QK_INLINE float gi_scale(const void *p, size_t i, qk_scale_type st) {
    return st == QK_SCALE_F16 ? _cvtsh_ss(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

/* Weights of chunk k (64 values at element k, nvals of them valid) of one row. */
QK_INLINE __m512i gi_weights(gi_fmt f, const uint8_t *row, size_t k, size_t nvals) {
    switch (f) {
    case GI_W4S:
    case GI_W4A: return gi_w4_codes(row + k / 2, nvals / 2);
    case GI_W8S:
        return qk8_weights(nvals >= 64 ? _mm512_loadu_si512(row + k) : _mm512_maskz_loadu_epi8(qk512_mask64(nvals), row + k));
    case GI_Q4_0: return gi_q4_0_codes(row + (k / 32) * QK_Q4_0_BYTES, nvals > 32);
    default: return qk8_weights(gi_q8_0_codes(row + (k / 32) * QK_Q8_0_BYTES, nvals > 32));
    }
}

/* Prefetch the weights of row `row` GI_PF bytes past those of chunk k (a
 * 64-value chunk spans at most 68 bytes, so two lines cover it). Past the end
 * of the row (rb bytes), the same place in the row GI_R rows below, which the
 * next step reads: rows are contiguous, and without this the first GI_PF
 * bytes of every row would be demand misses (a quarter to a half of a
 * 4096-wide row). */
QK_INLINE void gi_prefetch(gi_fmt f, const uint8_t *row, size_t k, size_t rb) {
    size_t o = f == GI_W4S || f == GI_W4A ? k / 2
               : f == GI_W8S              ? k
               : f == GI_Q4_0             ? (k / 32) * QK_Q4_0_BYTES
                                          : (k / 32) * QK_Q8_0_BYTES;
    o += GI_PF;
    if (o >= rb) o += (GI_R - 1) * rb;
    _mm_prefetch((const char *)row + o, _MM_HINT_T0);
    if (f == GI_W8S || f == GI_Q8_0) _mm_prefetch((const char *)row + o + 64, _MM_HINT_T0);
}

QK_INLINE __m512i gi_dot(gi_fmt f, __m512i acc, __m512i w, __m512i a, qk8_act ap) {
    if (f == GI_W8S || f == GI_Q8_0) return qk8_dot(acc, w, ap);
    return qk4_dot(acc, w, a);
}

/* Scale of group j of row n (q4_0/q8_0: the block's fp16 d). */
QK_INLINE float gi_wscale(gi_fmt f, const qk_qmat *w, const uint8_t *row, size_t n, size_t ng, size_t j) {
    if (f == GI_Q4_0) return _cvtsh_ss(qk_rd16(row + j * QK_Q4_0_BYTES));
    if (f == GI_Q8_0) return _cvtsh_ss(qk_rd16(row + j * QK_Q8_0_BYTES));
    return gi_scale(w->scales, n * ng + j, w->scale_type);
}

/* Scales of groups j..j+n-1 (n <= 16) of one row as f32 (q4_0/q8_0: the
 * blocks' fp16 d, assembled in general registers: a vpgatherdd costs more). */
QK_INLINE __m512 gi_wscales16(gi_fmt f, const qk_qmat *w, const uint8_t *row, size_t n_row, size_t ng, size_t j, size_t n) {
    if (f == GI_Q4_0 || f == GI_Q8_0) {
        const size_t bytes = f == GI_Q4_0 ? QK_Q4_0_BYTES : QK_Q8_0_BYTES;
        const uint8_t *p = row + j * bytes;
        uint64_t u0 = 0, u1 = 0, u2 = 0, u3 = 0;
        if (n == 16) {
#define QK_D4(i) ((uint64_t)qk_rd16(p + (i) * bytes) | (uint64_t)qk_rd16(p + ((i) + 1) * bytes) << 16 | \
                  (uint64_t)qk_rd16(p + ((i) + 2) * bytes) << 32 | (uint64_t)qk_rd16(p + ((i) + 3) * bytes) << 48)
            u0 = QK_D4(0);
            u1 = QK_D4(4);
            u2 = QK_D4(8);
            u3 = QK_D4(12);
#undef QK_D4
        } else {
            for (size_t i = 0; i < n; i++) {
                uint64_t h = (uint64_t)qk_rd16(p + i * bytes) << (16 * (i % 4));
                if (i < 4) u0 |= h;
                else if (i < 8) u1 |= h;
                else if (i < 12) u2 |= h;
                else u3 |= h;
            }
        }
        return _mm512_cvtph_ps(_mm256_setr_epi64x((long long)u0, (long long)u1, (long long)u2, (long long)u3));
    }
    if (w->scale_type == QK_SCALE_F16) return qk512_load16_ph((const uint16_t *)w->scales + n_row * ng + j, n);
    return qk512_load16_ps((const float *)w->scales + n_row * ng + j, n);
}

/* g = 32: two groups per 64-value chunk; the scales of 16 groups (sw·sa) are
 * formed once per row and spread to lanes 0-7 / 8-15 by one vpermps. */
QK_INLINE void gi_rows_pair(gi_fmt f, const qk_matmul_args *a, size_t n0, size_t nr) {
    const qk_qmat *w = a->w;
    const qk_qact *xq = a->xq;
    size_t K = a->K, ng = K / 32;
    int off = gi_off(f);
    const size_t rb = w->row_bytes;
    const uint8_t *row[GI_R];
    __m512 acc[GI_R], s16[GI_R];
    for (size_t r = 0; r < nr; r++) {
        row[r] = w->codes + (n0 + r) * w->row_bytes;
        acc[r] = _mm512_setzero_ps();
    }
    const __m512i idx0 = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    for (size_t j0 = 0; j0 < ng; j0 += 16) {
        size_t nj = ng - j0 < 16 ? ng - j0 : 16;
        __m512 sa16 = qk512_load16_ps(xq->scales + j0, nj);
        for (size_t r = 0; r < nr; r++) s16[r] = _mm512_mul_ps(gi_wscales16(f, w, row[r], n0 + r, ng, j0, nj), sa16);
        __m512i idx = idx0;
        size_t kend = (j0 + nj) * 32;
        for (size_t k = j0 * 32; k < kend; k += 64) {
            size_t nv = kend - k < 64 ? kend - k : 64;
            __m512i av = nv == 64 ? _mm512_loadu_si512(xq->codes + k) : _mm512_maskz_loadu_epi8(qk512_mask64(nv), xq->codes + k);
            qk8_act ap = qk8_act_prep(av);
            __m512i corr = gi_lane_corr(off, av);
            for (size_t r = 0; r < nr; r++) {
                gi_prefetch(f, row[r], k, rb);
                __m512i d = gi_dot(f, corr, gi_weights(f, row[r], k, nv), av, ap);
                acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_permutexvar_ps(idx, s16[r]), acc[r]);
            }
            idx = _mm512_add_epi32(idx, _mm512_set1_epi32(2));
        }
    }
    for (size_t r = 0; r < nr; r++) a->y[n0 + r] = _mm512_reduce_add_ps(acc[r]);
}

/* Any other g: int32 over the group (flushed every GI_FLUSH values). */
QK_INLINE void gi_rows_group(gi_fmt f, const qk_matmul_args *a, size_t n0, size_t nr) {
    const qk_qmat *w = a->w;
    const qk_qact *xq = a->xq;
    size_t K = a->K, g = a->group, ng = K / g;
    int off = gi_off(f);
    const size_t rb = w->row_bytes;
    const uint8_t *row[GI_R];
    __m512 acc[GI_R];
    __m512i d[GI_R];
    for (size_t r = 0; r < nr; r++) {
        row[r] = w->codes + (n0 + r) * w->row_bytes;
        acc[r] = _mm512_setzero_ps();
    }
    for (size_t j = 0; j < ng; j++) {
        __m512 sa = _mm512_set1_ps(xq->scales[j]);
        size_t e = (j + 1) * g;
        for (size_t k0 = j * g; k0 < e; k0 += GI_FLUSH) {
            size_t stop = k0 + GI_FLUSH < e ? k0 + GI_FLUSH : e;
            __m512i corr = _mm512_setzero_si512();
            if (off)
                for (size_t k = k0; k < stop; k += 64) {
                    size_t nv = stop - k < 64 ? stop - k : 64;
                    corr = qk_offset_dot(corr, off, _mm512_maskz_loadu_epi8(qk512_mask64(nv), xq->codes + k));
                }
            corr = _mm512_sub_epi32(_mm512_setzero_si512(), corr);
            for (size_t r = 0; r < nr; r++) d[r] = corr;
            for (size_t k = k0; k < stop; k += 64) {
                size_t nv = stop - k < 64 ? stop - k : 64;
                __m512i av = nv == 64 ? _mm512_loadu_si512(xq->codes + k) : _mm512_maskz_loadu_epi8(qk512_mask64(nv), xq->codes + k);
                qk8_act ap = qk8_act_prep(av);
                for (size_t r = 0; r < nr; r++) {
                    gi_prefetch(f, row[r], k, rb);
                    d[r] = gi_dot(f, d[r], gi_weights(f, row[r], k, nv), av, ap);
                }
            }
            for (size_t r = 0; r < nr; r++) {
                __m512 s = _mm512_mul_ps(_mm512_set1_ps(gi_wscale(f, w, row[r], n0 + r, ng, j)), sa);
                acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d[r]), s, acc[r]);
            }
        }
    }
    for (size_t r = 0; r < nr; r++) a->y[n0 + r] = _mm512_reduce_add_ps(acc[r]);
}

/* w4a: y += Σ_j m_j·sa_j·Σa_j. */
static float gi_w4a_min_term(const qk_matmul_args *a, size_t n) {
    const qk_qmat *w = a->w;
    const qk_qact *xq = a->xq;
    size_t ng = a->K / a->group;
    __m512 acc = _mm512_setzero_ps();
    for (size_t j = 0; j < ng; j += 16) {
        size_t nj = ng - j;
        __m512 mv = w->scale_type == QK_SCALE_F16 ? qk512_load16_ph((const uint16_t *)w->mins + n * ng + j, nj)
                                                  : qk512_load16_ps((const float *)w->mins + n * ng + j, nj);
        __m512 ca = _mm512_mul_ps(qk512_load16_ps(xq->scales + j, nj), _mm512_cvtepi32_ps(qk512_load16_epi32(xq->sums + j, nj)));
        acc = _mm512_fmadd_ps(mv, ca, acc);
    }
    return _mm512_reduce_add_ps(acc);
}

/* Prefetch the scales (and offsets) of rows [n0, n1): read 16 groups at a
 * time, row after row, they are a pattern the hardware prefetcher misses. */
static void gi_prefetch_scales(gi_fmt f, const qk_matmul_args *a, size_t n0, size_t n1) {
    const qk_qmat *w = a->w;
    if (f == GI_Q4_0 || f == GI_Q8_0 || n0 >= n1) return;
    size_t ss = w->scale_type == QK_SCALE_F16 ? 2 : 4, ng = a->K / a->group, bytes = (n1 - n0) * ng * ss;
    const char *s = (const char *)w->scales + n0 * ng * ss, *m = f == GI_W4A ? (const char *)w->mins + n0 * ng * ss : NULL;
    for (size_t i = 0; i < bytes; i += 64) {
        _mm_prefetch(s + i, _MM_HINT_T0);
        if (m) _mm_prefetch(m + i, _MM_HINT_T0);
    }
}

QK_INLINE void gi_gemv(gi_fmt f, const qk_matmul_args *a) {
    int pair = a->group == 32;
    size_t n = 0;
    gi_prefetch_scales(f, a, 0, GI_R < a->N ? GI_R : a->N);
    for (; n + GI_R <= a->N; n += GI_R) {
        gi_prefetch_scales(f, a, n + GI_R, n + 2 * GI_R < a->N ? n + 2 * GI_R : a->N);
        if (pair) gi_rows_pair(f, a, n, GI_R);
        else gi_rows_group(f, a, n, GI_R);
    }
    for (; n < a->N; n++) {
        if (pair) gi_rows_pair(f, a, n, 1);
        else gi_rows_group(f, a, n, 1);
    }
    if (f == GI_W4A)
        for (size_t i = 0; i < a->N; i++) a->y[i] += gi_w4a_min_term(a, i);
}

#endif
