/* Body of the integer-mode gemv kernels (M = 1) on zmm, shared by the avx512
 * tier (vpmaddubsw + vpmaddwd) and the avx512vnni tier (vpdpbusd). The file
 * that includes it defines, for its own ISA:
 *   QK_TIER_NAME            the tier suffix of the kernel names
 *   QK_W8_OFF               the offset (0 or 128) that qk8_weights adds to int8 weights
 *   qk8_act  qk8_act_prep(__m512i a)                 per-chunk activation form
 *   __m512i  qk8_dot(__m512i acc, __m512i w, qk8_act a)
 *            acc + Σ4 w·a per dword, w = 8-bit weights as qk8_weights made them
 *   __m512i  qk8_weights(__m512i w)                 raw int8 weights -> the dot's form
 *   __m512i  qk8_sdot(__m512i acc, __m512i u, __m512i s)
 *            acc + Σ4 u·s per dword, u unsigned (<= 127), s signed (|s| <= 127)
 *   __m512i  qk4_dot(__m512i acc, __m512i w, __m512i a)
 *            acc + Σ4 w·a per dword, w unsigned codes 0..15, a signed
 *   __m512i  qk_offset_dot(__m512i acc, int off, __m512i a)
 *            acc + Σ4 off·a per dword (off = 8 or 128)
 *
 * Every variant computes, per row n and group j, the exact integer Σ q·a.
 * Every int32 lane ends at the exact Σ q·a of the values it met (a true
 * partial dot, so that the f32 sum over the lanes is as accurate as the
 * error model asks: an offset left in the lanes and taken off their sum in
 * f32 would cost up to u·off·|Σa|, far beyond u·Σ|q·a| when the products are
 * small beside the activations, as with int4 activations and an outlier).
 * The table path (below) gives the 8-bit q the activation's sign and
 * multiplies it by |a|; it multiplies the unsigned 4-bit codes c (w4s, q4_0:
 * q + 8) by a, each lane starting at -8·(the sum of the activations it will
 * meet), a table per call. The generic path multiplies the stored unsigned
 * code c = q + off (the int8 code plus QK_W8_OFF) by a and starts each lane
 * the same way. Then y += sw·sa·dot in f32, and for w4a
 * y += Σ_j m_j·sa_j·Σa_j (the activation group sums from actquant).
 *
 * Rows are taken one after the other, so the codes are one sequential stream
 * (and the scales a second one), prefetched GI_PF bytes ahead: on the Zen 5
 * VM this was tuned on, several interleaved row streams read DRAM a quarter
 * slower than one, and 1 KiB ahead left a sixth of the bandwidth unused.
 * The common shapes (whole 64- or 128-value blocks, g dividing the block or
 * a multiple of it) take the table path below; any other shape (odd K, g = K
 * not a multiple of the block) the generic one-row code. */
#ifndef QK_GEMV_INT_BODY_H
#define QK_GEMV_INT_BODY_H

#include "x86/avx512/avx512_common.h"

#define QK_INLINE static inline __attribute__((always_inline))

enum { GI_FLUSH = 32768 };

/* Bytes of the weight stream prefetched ahead of the one being read (the
 * hardware prefetchers alone leave DRAM bandwidth unused: without software
 * prefetch one thread read 18 GB/s of w4s codes, at 4 KiB ahead 33, at 8 KiB
 * 37 of the 43 a plain read gets; 16 KiB evicted the activation tables from
 * L1 on 14336-long rows). Into L2 (prefetcht1) instead, W8A8 w8s from DRAM
 * on one thread took 1.08-1.52x the time (tools/ab.py --rounds 7, 1x4096x14336
 * and 1x14336x4096, g = 32 and 128, 2026-12-07); 16 KiB ahead, 0.96-1.04.
 * Every line needs its own prefetch: with one per 128 bytes (the adjacent-line
 * prefetcher left to fetch the other) W8A8 w8s g = 32 took 1.2-2.4x the time
 * (tools/ab.py --rounds 5, the same shapes at g = 32). Held by the fraction of
 * the read beside its calls that qkbench gives each cold row (builds alternated
 * run by run, five or six runs each, the same shapes at g = 32), 4 KiB ahead
 * fell (0.59-0.91, this build 0.87-1.05 in the same runs), and 12 KiB ahead,
 * or the scales 2 or 4 KiB ahead (GI_SPF), moved within the spread of the runs.
 * Non-temporal prefetches (prefetchnta) in place of these: 0.96-1.05 of the
 * time (tools/ab.py --rounds 5 --pin 0, W8A8 and W4A8 w4s/w4a, 1x4096x14336
 * and 1x14336x4096, g = 32 and 128, cold, 2026-12-07). */
#ifndef GI_PF
#define GI_PF 8192
#endif
#ifndef GI_SPF
#define GI_SPF 1024
#endif
#ifndef GI_PREFETCH
#define GI_PREFETCH(p) _mm_prefetch((const char *)(p), _MM_HINT_T0)
#endif

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

/* Byte offset of chunk k (64 values) in a row. */
QK_INLINE size_t gi_off_bytes(gi_fmt f, size_t k) {
    return f == GI_W4S || f == GI_W4A ? k / 2 : f == GI_W8S ? k : f == GI_Q4_0 ? (k / 32) * QK_Q4_0_BYTES : (k / 32) * QK_Q8_0_BYTES;
}

/* Prefetch GI_PF bytes past the weights of the 128 values at element k of a
 * row. Rows are contiguous and read one after the other, so past a row's end
 * this is the next row: one sequential stream over the whole matrix (on this
 * class of machine several interleaved row streams read DRAM up to a
 * quarter slower than one). A prefetch past the matrix does not fault. */
QK_INLINE void gi_prefetch(gi_fmt f, const uint8_t *row, size_t k) {
    const char *p = (const char *)row + gi_off_bytes(f, k) + GI_PF;
    unsigned lines = f == GI_W4S || f == GI_W4A ? 1 : f == GI_Q4_0 || f == GI_W8S ? 2 : 3; /* 64, 72, 128, 136 bytes */
    GI_PREFETCH(p);
    if (lines > 1) GI_PREFETCH(p + 64);
    if (lines > 2) GI_PREFETCH(p + 128);
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
    if (f == GI_Q4_0 && n == 16) { /* d of block i is word 9i of the 288 bytes: two word permutes */
        const uint8_t *p = row + j * QK_Q4_0_BYTES;
        static const uint16_t w9[32] = {0, 9, 18, 27, 36, 45, 54, 63, 0, 9, 18, 27, 36, 45, 54, 63};
        const __m512i ia = _mm512_loadu_si512(w9), ib = ia;
        __m512i r0 = _mm512_permutex2var_epi16(_mm512_loadu_si512(p), ia, _mm512_loadu_si512(p + 64));
        __m512i r1 = _mm512_permutex2var_epi16(_mm512_loadu_si512(p + 144), ib, _mm512_loadu_si512(p + 208));
        return _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_mask_blend_epi16(0xff00, r0, r1)));
    }
    if (f == GI_Q8_0 && n == 16) { /* d of block i is word 17i of the 544 bytes: four word permutes */
        const uint8_t *p = row + j * QK_Q8_0_BYTES;
        static const uint16_t w17[32] = {0, 17, 34, 51, 0, 17, 34, 51, 0, 17, 34, 51, 0, 17, 34, 51};
        const __m512i iq = _mm512_loadu_si512(w17);
        __m512i r = _mm512_setzero_si512();
        for (int q = 0; q < 4; q++) {
            __m512i v = _mm512_permutex2var_epi16(_mm512_loadu_si512(p + 136 * q), iq, _mm512_loadu_si512(p + 136 * q + 64));
            r = _mm512_mask_blend_epi16((__mmask32)(0xfu << (4 * q)), r, v);
        }
        return _mm512_cvtph_ps(_mm512_castsi512_si256(r));
    }
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

/* The activations of chunk k (nv valid values) and their lane correction. */
QK_INLINE __m512i gi_act(const qk_qact *xq, size_t k, size_t nv) {
    return nv >= 64 ? _mm512_loadu_si512(xq->codes + k) : _mm512_maskz_loadu_epi8(qk512_mask64(nv), xq->codes + k);
}

/* One chunk: the exact per-lane dot Σ q·a of chunk k (lane correction included). */
QK_INLINE __m512i gi_chunk(gi_fmt f, const uint8_t *row, __m512i av, size_t k, size_t nv, int off) {
    return gi_dot(f, gi_lane_corr(off, av), gi_weights(f, row, k, nv), av, qk8_act_prep(av));
}

/* g = 32, row n: two groups per 64-value chunk; the scales of 16 groups
 * (sw·sa) are formed once and spread to lanes 0-7 / 8-15 by one vpermps.
 * Two accumulators (even and odd chunks) keep the FMA chain off the
 * critical path. */
QK_INLINE float gi_row_pair(gi_fmt f, const qk_matmul_args *a, size_t n) {
    const qk_qmat *w = a->w;
    const qk_qact *xq = a->xq;
    size_t K = a->K, ng = K / 32;
    int off = gi_off(f);
    const uint8_t *row = w->codes + n * w->row_bytes;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    const __m512i idx0 = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1), two = _mm512_set1_epi32(2);
    for (size_t j0 = 0; j0 < ng; j0 += 16) {
        size_t nj = ng - j0 < 16 ? ng - j0 : 16;
        __m512 s16 = _mm512_mul_ps(gi_wscales16(f, w, row, n, ng, j0, nj), qk512_load16_ps(xq->scales + j0, nj));
        __m512i idx = idx0;
        size_t k = j0 * 32, kend = (j0 + nj) * 32;
        for (; k + 128 <= kend; k += 128) {
            gi_prefetch(f, row, k);
            __m512i av0 = _mm512_loadu_si512(xq->codes + k), av1 = _mm512_loadu_si512(xq->codes + k + 64);
            __m512i d0 = gi_chunk(f, row, av0, k, 64, off), d1 = gi_chunk(f, row, av1, k + 64, 64, off);
            acc0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d0), _mm512_permutexvar_ps(idx, s16), acc0);
            idx = _mm512_add_epi32(idx, two);
            acc1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d1), _mm512_permutexvar_ps(idx, s16), acc1);
            idx = _mm512_add_epi32(idx, two);
        }
        for (; k < kend; k += 64) {
            size_t nv = kend - k < 64 ? kend - k : 64;
            gi_prefetch(f, row, k);
            __m512i d = gi_chunk(f, row, gi_act(xq, k, nv), k, nv, off);
            acc0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_permutexvar_ps(idx, s16), acc0);
            idx = _mm512_add_epi32(idx, two);
        }
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}

/* Any other g, row n: int32 over the group (flushed every GI_FLUSH values),
 * even and odd chunks in two accumulators, the offset correction summed
 * alongside and removed lane by lane at the group's end. */
QK_INLINE float gi_row_group(gi_fmt f, const qk_matmul_args *a, size_t n) {
    const qk_qmat *w = a->w;
    const qk_qact *xq = a->xq;
    size_t K = a->K, g = a->group, ng = K / g;
    int off = gi_off(f);
    const uint8_t *row = w->codes + n * w->row_bytes;
    __m512 acc = _mm512_setzero_ps();
    for (size_t j = 0; j < ng; j++) {
        __m512 s = _mm512_set1_ps(gi_wscale(f, w, row, n, ng, j) * xq->scales[j]);
        size_t e = (j + 1) * g;
        for (size_t k0 = j * g; k0 < e; k0 += GI_FLUSH) {
            size_t stop = k0 + GI_FLUSH < e ? k0 + GI_FLUSH : e, k = k0;
            __m512i d0 = _mm512_setzero_si512(), d1 = d0;
            for (; k + 128 <= stop; k += 128) {
                gi_prefetch(f, row, k);
                __m512i av0 = _mm512_loadu_si512(xq->codes + k), av1 = _mm512_loadu_si512(xq->codes + k + 64);
                d0 = gi_dot(f, d0, gi_weights(f, row, k, 64), av0, qk8_act_prep(av0));
                d1 = gi_dot(f, d1, gi_weights(f, row, k + 64, 64), av1, qk8_act_prep(av1));
                if (off) d0 = _mm512_sub_epi32(d0, qk_offset_dot(qk_offset_dot(_mm512_setzero_si512(), off, av0), off, av1));
            }
            for (; k < stop; k += 64) {
                size_t nv = stop - k < 64 ? stop - k : 64;
                gi_prefetch(f, row, k);
                __m512i av = gi_act(xq, k, nv);
                d0 = gi_dot(f, d0, gi_weights(f, row, k, nv), av, qk8_act_prep(av));
                if (off) d0 = _mm512_sub_epi32(d0, qk_offset_dot(_mm512_setzero_si512(), off, av));
            }
            acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(d0, d1)), s, acc);
        }
    }
    return _mm512_reduce_add_ps(acc);
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

/* ---- fast path: per-call tables, one row after the other ----
 * Formed once per call over the whole of K and shared by every row: the
 * activations as the dot products meet them, in thread-local storage for K
 * up to GI_TLS values and on the heap beyond (out of memory: the generic
 * path), so the rows stay one sequential stream however long they are. For
 * w4s/w4a they are split into their even and odd elements: a 64-byte load of
 * plain 4-bit codes then holds 128 values whose low nibbles are the even
 * elements and high nibbles the odd ones, and dword lane l gets elements
 * 8l..8l+7 from two dot products with no widening shuffle (lanes 4j..4j+3
 * are group j at g = 32).
 *
 * The int8 formats do not multiply codes: q takes the activation's sign and
 * meets |a| (both at most 127 in magnitude), an exact u8·s8 product with no
 * offset to remove. Their tables are |a| and a 64-bit sign mask per 64
 * values, about as large as the activations (a per-lane correction table
 * beside them did not fit in L1 with the weight stream on 14336-long rows).
 * The 4-bit formats multiply their unsigned codes by a, two dot products per
 * 128 values; for w4s and q4_0 (c = q + 8) each lane starts at -8·Σ of the
 * 8 activations it meets (the table corr, 16 int32 per 128 values, formed
 * with the planes). Against giving q the sign of a (two subtractions and two
 * masked negations more per 128 values) multiplying c ran w4s 1.25x (g = 32)
 * to 1.55x (g = 128) faster from L3.
 *
 * Tables of at most 16384 values, the rows taken again for each further
 * segment of K, had read the weights as one strided stream per segment: at
 * K = 28672 W8A8 and W4A8 took 1.5-1.9x the time of one pass with whole-K
 * tables (tools/ab.py --rounds 3 --pin 0, 1x2048x28672 cold, g = 32 and 128,
 * 2026-12-07); q4_0·q8_0 0.82-0.91 cold, but 1.2-1.4x warm, where its 42 KiB
 * of tables crowd the weights out of L1. (Segments of 8192 values had taken
 * 2.1-2.5x the time at K = 14336.) The 4-bit tables, 1.5 bytes a value,
 * outgrow L1 beside the weight stream on such rows: in one cold run (qkbench
 * bench, one thread, 1x4096x14336, 1x2048x28672 and 1x1024x57344, g = 32 and
 * 128) W4A8 and W4A4 moved 17-24 GB/s at K = 28672 and 57344 against 19-35
 * at 14336, W8A8 the same at every K; the packed 4x48 gemm kernels, run as a
 * gemv, held 23-35 GB/s (75-103% of the read) at every K. */
enum { GI_TLS = 16384 };

/* The tables: 8-bit formats, |a| (aa) and the sign bits (neg) of each
 * 64-value block; 4-bit formats, per 128-value block, the two activation
 * planes (ae, ao) and, for w4s/q4_0, each lane's start, -8·(the activations
 * it meets) (corr), but for K past GI_TLS, where corr is NULL and each row
 * makes the starts block by block (two dot products against 8): with corr,
 * 1.5 bytes a value, the tables of long rows crowd the weight stream out of
 * L1. Without it, w4s took 0.81-0.93 of the time at K = 28672 and 57344,
 * q4_0·q8_0 0.93-0.98 (tools/ab.py --rounds 5 --pin 0, W4A8, W4A4 and
 * q4_0·q8_0, 1x2048x28672 and 1x1024x57344, g = 32 and 128, cold), and from
 * cache 0.83-0.94 (1x64x28672, warm); at K <= GI_TLS, where the tables fit,
 * the starts made in the loop cost 3-10% (1x256x4096 and 1x64x14336, warm). */
typedef struct gi_ws {
    __m512i *aa, *ae, *ao, *corr;
    __mmask64 *neg;
} gi_ws;

QK_INLINE int gi_signed(gi_fmt f) { return f == GI_W8S || f == GI_Q8_0; }
/* The offset of the 4-bit codes that the table path's lanes start without (corr). */
QK_INLINE int gi_goff(gi_fmt f) { return f == GI_W4S || f == GI_Q4_0 ? 8 : 0; }

QK_INLINE int gi_w4(gi_fmt f) { return f == GI_W4S || f == GI_W4A; }
QK_INLINE int gi_w8(gi_fmt f) { return f == GI_W8S || f == GI_Q8_0; }
/* Formats whose 128-value block is two nibble planes against the even/odd
 * (w4) or low/high (q4_0) activation tables ae/ao. */
QK_INLINE int gi_nib(gi_fmt f) { return gi_w4(f) || f == GI_Q4_0; }
QK_INLINE size_t gi_blk(gi_fmt f) { return gi_nib(f) ? 128 : 64; }

/* off·(the activations each lane meets in one 128-value block): its two
 * planes e and o, as the 4-bit dot pairs them. */
QK_INLINE __m512i gi_planes_off(gi_fmt f, __m512i e, __m512i o) {
    return qk_offset_dot(qk_offset_dot(_mm512_setzero_si512(), gi_goff(f), e), gi_goff(f), o);
}

/* Bytes of the tables of K values (K a multiple of the block), and the
 * tables laid out in such a buffer (64-byte aligned). */
QK_INLINE size_t gi_ws_bytes(gi_fmt f, size_t K, int corr) {
    size_t n = gi_nib(f) ? K / 128 * (corr ? 3 : 2) * 64 : K / 64 * (64 + sizeof(__mmask64));
    return (n + 63) / 64 * 64; /* aligned_alloc takes whole multiples of the alignment */
}
QK_INLINE gi_ws gi_ws_in(gi_fmt f, void *buf, size_t K, int corr) {
    __m512i *v = buf;
    gi_ws t = {0};
    if (gi_nib(f)) t.ae = v, t.ao = v + K / 128, t.corr = corr && gi_goff(f) ? v + 2 * (K / 128) : NULL;
    else t.aa = v, t.neg = (__mmask64 *)(v + K / 64);
    return t;
}

/* The tables of x's K values (K a multiple of the block). */
static void gi_prep(gi_fmt f, const qk_qact *xq, size_t K, gi_ws *ws) {
    const size_t B = gi_blk(f), nb = K / B;
    const __m512i even = _mm512_set1_epi16(0xff), perm = _mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7);
    for (size_t b = 0; b < nb; b++) {
        const int8_t *x = xq->codes + b * B;
        if (gi_w8(f)) {
            __m512i v = _mm512_loadu_si512(x);
            ws->aa[b] = _mm512_abs_epi8(v);
            ws->neg[b] = _mm512_movepi8_mask(v);
            continue;
        }
        __m512i x0 = _mm512_loadu_si512(x), x1 = _mm512_loadu_si512(x + 64), e, o;
        if (f == GI_Q4_0) { /* lane i: elements 0-15 (ae) and 16-31 (ao) of q4_0 block i */
            e = _mm512_permutex2var_epi64(x0, _mm512_setr_epi64(0, 1, 4, 5, 8, 9, 12, 13), x1);
            o = _mm512_permutex2var_epi64(x0, _mm512_setr_epi64(2, 3, 6, 7, 10, 11, 14, 15), x1);
        } else {
            e = _mm512_permutexvar_epi64(perm, _mm512_packus_epi16(_mm512_and_si512(x0, even), _mm512_and_si512(x1, even)));
            o = _mm512_permutexvar_epi64(perm, _mm512_packus_epi16(_mm512_srli_epi16(x0, 8), _mm512_srli_epi16(x1, 8)));
        }
        ws->ae[b] = e, ws->ao[b] = o;
        if (ws->corr) {
            const __m512i z = _mm512_setzero_si512();
            ws->corr[b] = _mm512_sub_epi32(z, gi_planes_off(f, e, o));
        }
    }
}

/* acc + Σ4 q·a per dword from |a| and a's sign bits: q (|q| <= 127) takes the sign. */
QK_INLINE __m512i gi_sign_dot(__m512i acc, __m512i abs_a, __mmask64 neg, __m512i q) {
    return qk8_sdot(acc, abs_a, _mm512_mask_sub_epi8(q, neg, _mm512_setzero_si512(), q));
}

/* acc + the dot of 128 4-bit codes (v: low nibbles one plane, high nibbles the
 * other) with the activation planes of block b. */
QK_INLINE __m512i gi_nib_dot(__m512i acc, __m512i v, const gi_ws *ws, size_t b) {
    const __m512i m = _mm512_set1_epi8(0x0f);
    __m512i lo = _mm512_and_si512(v, m), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m);
    return qk4_dot(qk4_dot(acc, lo, ws->ae[b]), hi, ws->ao[b]);
}

/* Σ q·a of block b of the row (plus `acc`), row codes at `p` (the block's
 * first byte). */
QK_INLINE __m512i gi_blk_dot(gi_fmt f, __m512i acc, const uint8_t *p, const gi_ws *ws, size_t b) {
    if (gi_w4(f)) return gi_nib_dot(acc, _mm512_loadu_si512(p), ws, b);
    if (gi_w8(f)) {
        __m512i w = f == GI_W8S ? _mm512_loadu_si512(p) : gi_q8_0_codes(p, 1);
        return gi_sign_dot(acc, ws->aa[b], ws->neg[b], w);
    }
    /* q4_0, four blocks (72 bytes): block i's 16 code bytes in 128-bit lane
     * i, low nibbles elements 0-15. (One word permute of the 64-byte loads
     * at p and p + 8 does the same in fewer instructions but ran a quarter
     * slower from DRAM on 8 KiB rows.) */
    __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(p + 2)));
    v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(p + 20)), 1);
    v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(p + 38)), 2);
    v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(p + 56)), 3);
    return gi_nib_dot(acc, v, ws, b);
}

QK_INLINE size_t gi_blk_bytes(gi_fmt f) { return gi_w4(f) ? 64 : f == GI_W8S ? 64 : f == GI_Q4_0 ? 4 * QK_Q4_0_BYTES : 2 * QK_Q8_0_BYTES; }

/* Prefetch the scales (and offsets) GI_SPF bytes past those of group i (of
 * the whole matrix): they are a second sequential stream. */
QK_INLINE void gi_prefetch_scales(gi_fmt f, const qk_qmat *w, size_t i) {
    if (f == GI_Q4_0 || f == GI_Q8_0) return;
    size_t o = i * (w->scale_type == QK_SCALE_F16 ? 2 : 4) + GI_SPF;
    _mm_prefetch((const char *)w->scales + o, _MM_HINT_T0);
    if (f == GI_W4A) _mm_prefetch((const char *)w->mins + o, _MM_HINT_T0);
}

/* w4a: acc + m·sa·Σa over the nj (<= 16) groups from group i of the matrix
 * (offsets m) and of the activations (sa, sums). */
QK_INLINE __m512 gi_min_fma(const qk_qmat *w, size_t i, size_t nj, __m512 sa, const int32_t *sums, __m512 acc) {
    __m512 mv = w->scale_type == QK_SCALE_F16 ? qk512_load16_ph((const uint16_t *)w->mins + i, nj) : qk512_load16_ps((const float *)w->mins + i, nj);
    return _mm512_fmadd_ps(mv, _mm512_mul_ps(sa, _mm512_cvtepi32_ps(qk512_load16_epi32(sums, nj))), acc);
}

/* acc plus the start of block b's lanes: -8·(the activations each meets) for w4s and q4_0, nothing else. */
QK_INLINE __m512i gi_start(gi_fmt f, const gi_ws *ws, size_t b, __m512i acc, const int lc) {
    if (!gi_goff(f)) return acc;
    if (!lc) return _mm512_add_epi32(acc, ws->corr[b]);
    return _mm512_sub_epi32(acc, gi_planes_off(f, ws->ae[b], ws->ao[b]));
}

/* Bytes prefetched ahead in the table path: the block formats ran faster
 * cold further ahead (q4_0 twice GI_PF, q8_0 1.5 times), the others not. */
QK_INLINE size_t gi_pf(gi_fmt f) { return f == GI_Q4_0 ? 2 * GI_PF : f == GI_Q8_0 ? GI_PF * 3 / 2 : GI_PF; }

/* Row n, g dividing the block (gpb groups per block): the scales of 16
 * groups (sw·sa) are formed once and spread to the lanes of each block by
 * one vpermps (lane l of a block is group l·gpb/16 of it). */
QK_INLINE float gi_tab_pair(gi_fmt f, const qk_matmul_args *a, const gi_ws *ws, size_t n, size_t g, const int lc) {
    const qk_qmat *w = a->w;
    const qk_qact *xq = a->xq;
    const size_t ng = a->K / g, B = gi_blk(f), bb = gi_blk_bytes(f), gpb = B / g;
    const uint8_t *row = w->codes + n * w->row_bytes, *p = row;
    const size_t pf = gi_pf(f);
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i idx0 = _mm512_srli_epi32(_mm512_mullo_epi32(lane, _mm512_set1_epi32((int)gpb)), 4);
    const __m512i step = _mm512_set1_epi32((int)gpb);
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    size_t nb = a->K / B, b = 0;
    for (size_t j0 = 0; b < nb; j0 += 16) {
        size_t nj = ng - j0 < 16 ? ng - j0 : 16, be = b + nj / gpb;
        gi_prefetch_scales(f, w, n * ng + j0);
        __m512 sa16 = qk512_load16_ps(xq->scales + j0, nj), s16 = _mm512_mul_ps(gi_wscales16(f, w, row, n, ng, j0, nj), sa16);
        if (f == GI_W4A) acc1 = gi_min_fma(w, n * ng + j0, nj, sa16, xq->sums + j0, acc1);
        __m512i idx = idx0;
        for (; b + 2 <= be; b += 2, p += 2 * bb) {
            GI_PREFETCH((const char *)p + pf);
            GI_PREFETCH((const char *)p + pf + 64);
            if (bb > 64) GI_PREFETCH((const char *)p + pf + 128);
            __m512i d0 = gi_blk_dot(f, gi_start(f, ws, b, _mm512_setzero_si512(), lc), p, ws, b);
            __m512i d1 = gi_blk_dot(f, gi_start(f, ws, b + 1, _mm512_setzero_si512(), lc), p + bb, ws, b + 1);
            acc0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d0), _mm512_permutexvar_ps(idx, s16), acc0);
            idx = _mm512_add_epi32(idx, step);
            acc1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d1), _mm512_permutexvar_ps(idx, s16), acc1);
            idx = _mm512_add_epi32(idx, step);
        }
        if (b < be) {
            GI_PREFETCH((const char *)p + pf);
            if (bb > 64) GI_PREFETCH((const char *)p + pf + 64);
            __m512i d0 = gi_blk_dot(f, gi_start(f, ws, b, _mm512_setzero_si512(), lc), p, ws, b);
            acc0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d0), _mm512_permutexvar_ps(idx, s16), acc0);
            b++, p += bb;
        }
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}

/* Row n, g two blocks (W4A8 g = 256, W8A8 g = 128): gi_tab_group without
 * its loop over a group's blocks (the two are dotted in one step) and with
 * the offset terms 16 groups at a time. In gi_tab_group these g had been
 * the slowest of the row (W4A8 g = 256 on 1x2048x4096 warm: 1.2x the time of
 * g = 128 and of g = K); this takes 22% less time there, W8A8 g = 128 8-21%
 * less, and the same from DRAM. (Each group's scale taken by a vpermps from
 * 16 formed at once, as gi_tab_pair does, was 6-16% faster still warm, but from DRAM W8A8 g = 128 on
 * 1x4096x14336 then took 1.4-1.9x the time in some runs; a scheme with a
 * loop over each group's blocks was no faster at four blocks and 5-12%
 * slower at g = K, so longer groups keep gi_tab_group.) */
QK_INLINE float gi_tab_two(gi_fmt f, const qk_matmul_args *a, const gi_ws *ws, size_t n, const int lc) {
    const qk_qmat *w = a->w;
    const qk_qact *xq = a->xq;
    const size_t g = a->group, ng = a->K / g, bb = gi_blk_bytes(f), pf = gi_pf(f);
    const uint8_t *row = w->codes + n * w->row_bytes, *p = row;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    for (size_t j = 0, b = 0; j < ng; j++, b += 2, p += 2 * bb) {
        if (j % 16 == 0) {
            size_t nj = ng - j < 16 ? ng - j : 16;
            gi_prefetch_scales(f, w, n * ng + j);
            __m512 sa16 = qk512_load16_ps(xq->scales + j, nj);
            if (f == GI_W4A) acc1 = gi_min_fma(w, n * ng + j, nj, sa16, xq->sums + j, acc1);
        }
        GI_PREFETCH((const char *)p + pf);
        GI_PREFETCH((const char *)p + pf + 64);
        const __m512i z = _mm512_setzero_si512();
        __m512i d = _mm512_add_epi32(gi_blk_dot(f, gi_start(f, ws, b, z, lc), p, ws, b),
                                     gi_blk_dot(f, gi_start(f, ws, b + 1, z, lc), p + bb, ws, b + 1));
        __m512 s = _mm512_set1_ps(gi_wscale(f, w, row, n, ng, j) * xq->scales[j]);
        acc0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), s, acc0);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}

/* Row n, g a multiple of the block. */
QK_INLINE float gi_tab_group(gi_fmt f, const qk_matmul_args *a, const gi_ws *ws, size_t n, const int lc) {
    const qk_qmat *w = a->w;
    const qk_qact *xq = a->xq;
    const size_t g = a->group, ng = a->K / g, B = gi_blk(f), bb = gi_blk_bytes(f), bpg = g / B;
    const uint8_t *row = w->codes + n * w->row_bytes, *p = row;
    const size_t pf = gi_pf(f);
    __m512 acc = _mm512_setzero_ps();
    for (size_t j = 0; j < ng; j++) {
        size_t b = j * bpg, be = b + bpg;
        if (j % 16 == 0) {
            gi_prefetch_scales(f, w, n * ng + j);
            if (f == GI_W4A) {
                size_t nj = ng - j < 16 ? ng - j : 16;
                acc = gi_min_fma(w, n * ng + j, nj, qk512_load16_ps(xq->scales + j, nj), xq->sums + j, acc);
            }
        }
        __m512i d0 = _mm512_setzero_si512(), d1 = d0;
        for (; b + 2 <= be; b += 2, p += 2 * bb) {
            GI_PREFETCH((const char *)p + pf);
            GI_PREFETCH((const char *)p + pf + 64);
            if (bb > 64) GI_PREFETCH((const char *)p + pf + 128);
            d0 = gi_blk_dot(f, gi_start(f, ws, b, d0, lc), p, ws, b);
            d1 = gi_blk_dot(f, gi_start(f, ws, b + 1, d1, lc), p + bb, ws, b + 1);
        }
        if (b < be) {
            GI_PREFETCH((const char *)p + pf);
            if (bb > 64) GI_PREFETCH((const char *)p + pf + 64);
            d0 = gi_blk_dot(f, gi_start(f, ws, b, d0, lc), p, ws, b);
            b++, p += bb;
        }
        __m512 s = _mm512_set1_ps(gi_wscale(f, w, row, n, ng, j) * xq->scales[j]);
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(d0, d1)), s, acc);
    }
    return _mm512_reduce_add_ps(acc);
}

/* 1 if the fast path takes this call: whole blocks, g dividing the block or
 * a multiple of it no longer than GI_TLS. (Longer groups, as g = K on long
 * rows, run faster on the generic path: at g = K = 28672 the tables of the
 * whole row, 32-42 KiB, took W8A8 and W4A8 w4s 1.2-1.5x its time; w4a the
 * same; tools/ab.py --rounds 5 --pin 0, 1x2048x28672, warm and cold.) */
QK_INLINE int gi_fast(gi_fmt f, const qk_matmul_args *a) {
    size_t B = gi_blk(f), g = a->group;
    return a->K % B == 0 && (B % g == 0 || (g % B == 0 && g <= GI_TLS));
}

/* The tables of K <= GI_TLS live in thread-local storage, one per
 * translation unit, not on the stack (up to 24 KiB would be a large share of
 * a small thread stack in a library user's program) nor on the heap (a
 * malloc per call). */
static _Thread_local __m512i gi_tls_buf[GI_TLS / 128 * 3]; /* gi_ws_bytes of the 4-bit tables with corr, the larger layout */
_Static_assert(GI_TLS / 64 * (64 + sizeof(__mmask64)) <= sizeof gi_tls_buf, "the 8-bit tables fit the thread-local buffer");

/* Every row by the table path; lc: the lanes' starts (w4s, q4_0) made block
 * by block, as the tables hold no corr. */
QK_INLINE void gi_rows(gi_fmt f, const qk_matmul_args *a, const gi_ws *ws, const int lc) {
    if (gi_blk(f) % a->group == 0 && a->group == 32) /* a constant g: no divisions in the loops */
        for (size_t n = 0; n < a->N; n++) a->y[n] = gi_tab_pair(f, a, ws, n, 32, lc);
    else if (gi_blk(f) % a->group == 0)
        for (size_t n = 0; n < a->N; n++) a->y[n] = gi_tab_pair(f, a, ws, n, a->group, lc);
    else if (a->group == 2 * gi_blk(f))
        for (size_t n = 0; n < a->N; n++) a->y[n] = gi_tab_two(f, a, ws, n, lc);
    else
        for (size_t n = 0; n < a->N; n++) a->y[n] = gi_tab_group(f, a, ws, n, lc);
}

QK_INLINE void gi_gemv(gi_fmt f, const qk_matmul_args *a) {
    if (gi_fast(f, a)) {
        void *heap = NULL, *buf = gi_tls_buf;
        /* Opaque from here on: in position-independent code the compiler
         * would otherwise recompute the address (a __tls_get_addr call, with
         * every live zmm spilled around it) inside the row loops. */
        __asm__("" : "+r"(buf));
        if (a->K > GI_TLS) buf = heap = aligned_alloc(64, gi_ws_bytes(f, a->K, 0));
        if (buf) {
            gi_ws t = gi_ws_in(f, buf, a->K, a->K <= GI_TLS), *ws = &t;
            gi_prep(f, a->xq, a->K, ws);
            if (ws->corr || !gi_goff(f)) gi_rows(f, a, ws, 0);
            else gi_rows(f, a, ws, 1);
            free(heap);
            return;
        }
    }
    if (a->group == 32)
        for (size_t n = 0; n < a->N; n++) a->y[n] = gi_row_pair(f, a, n);
    else
        for (size_t n = 0; n < a->N; n++) a->y[n] = gi_row_group(f, a, n);
    if (f == GI_W4A)
        for (size_t i = 0; i < a->N; i++) a->y[i] += gi_w4a_min_term(a, i);
}

#endif
