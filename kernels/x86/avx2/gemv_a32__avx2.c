/* gemv (M = 1) with f32 activations (W4A32: w4s, w4a, q4_0; W8A32: w8s,
 * q8_0), AVX2 + FMA on the plain layout.
 *
 * y = Σ_groups s·Σ q·x (w4a: Σ_groups (d·Σ c·x + m·Σ x)). Codes become f32
 * exactly (4-bit: a broadcast and a per-lane shift; 8-bit: a sign extension),
 * one FMA per eight weights accumulates Σ q·x of a group, and one more FMA per
 * group applies its scale. Rows are processed QK_A32_R at a time; each row
 * consumes 256 values (128 or 256 contiguous bytes) per step, with a software
 * prefetch ahead of it. Any K and group size the format allows; a group that
 * is not a multiple of 8 (g = K) finishes with scalar code. */
#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
#error "this file needs the avx2 tier's flags"
#endif
#include "x86/avx2/avx2_common.h"

#ifndef QK_A32_R
#define QK_A32_R 4
#endif
#define QK_A32_STEP 256
#ifndef QK_A32_PF
#define QK_A32_PF 1024
#endif
#ifndef QK_A32_TPF
#define QK_A32_TPF 4096 /* bytes of the weight stream prefetched ahead (one row at a time) */
#endif
#define QK_INLINE static inline __attribute__((always_inline))

enum { F_W4S, F_W4A, F_W8S };

/* Codes k..k+7 of a plain row as f32 (w4s: q = c − 8; w4a: c; w8s: q). */
QK_INLINE __m256 codes8(const uint8_t *row, size_t k, const int f) {
    if (f == F_W8S) return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(row + k))));
    int32_t w;
    memcpy(&w, row + k / 2, 4);
    __m256i c = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(w), _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)), _mm256_set1_epi32(15));
    if (f == F_W4S) c = _mm256_sub_epi32(c, _mm256_set1_epi32(8));
    return _mm256_cvtepi32_ps(c);
}

QK_INLINE float code1(const uint8_t *row, size_t k, const int f) {
    if (f == F_W8S) return (float)(int8_t)row[k];
    int c = (row[k / 2] >> (4 * (k & 1))) & 15;
    return (float)(f == F_W4S ? c - 8 : c);
}

QK_INLINE void rows_plain(const qk_matmul_args *a, size_t n0, const int R, const int f, const qk_scale_type st) {
    const qk_qmat *w = a->w;
    const float *x = a->x;
    /* a piece is a group (g = 32..256), or for g = K a step of QK_A32_STEP */
    const size_t K = a->K, g = a->group, ng = K / g, piece = g == K ? QK_A32_STEP : g;
    const uint8_t *wr[QK_A32_R];
    __m256 acc[QK_A32_R];
    float tail[QK_A32_R];
    for (int r = 0; r < R; r++) {
        wr[r] = w->codes + (n0 + r) * w->row_bytes;
        acc[r] = _mm256_setzero_ps();
        tail[r] = 0.0f;
    }
    for (size_t p0 = 0, j = 0; p0 < K; p0 += piece, j += g == K ? 0 : 1) {
        const size_t p1 = K - p0 < piece ? K : p0 + piece, p8 = p0 + (p1 - p0) / 8 * 8;
        __m256 d[QK_A32_R];
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) d[r] = _mm256_setzero_ps();
        size_t k = p0;
        for (; k + 32 <= p8; k += 32) {
            const __m256 x0 = _mm256_loadu_ps(x + k), x1 = _mm256_loadu_ps(x + k + 8);
            const __m256 x2 = _mm256_loadu_ps(x + k + 16), x3 = _mm256_loadu_ps(x + k + 24);
#pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
                if ((k & (f == F_W8S ? 63 : 127)) == 0) _mm_prefetch((const char *)wr[r] + (f == F_W8S ? k : k / 2) + QK_A32_PF, _MM_HINT_T0);
                __m256 e = _mm256_mul_ps(codes8(wr[r], k, f), x0);
                e = _mm256_fmadd_ps(codes8(wr[r], k + 8, f), x1, e);
                __m256 o = _mm256_mul_ps(codes8(wr[r], k + 16, f), x2);
                o = _mm256_fmadd_ps(codes8(wr[r], k + 24, f), x3, o);
                d[r] = _mm256_add_ps(d[r], _mm256_add_ps(e, o));
            }
        }
        for (; k < p8; k += 8) {
            const __m256 x0 = _mm256_loadu_ps(x + k);
#pragma GCC unroll 4
            for (int r = 0; r < R; r++) d[r] = _mm256_fmadd_ps(codes8(wr[r], k, f), x0, d[r]);
        }
        __m256 sx = _mm256_setzero_ps();
        if (f == F_W4A)
            for (size_t i = p0; i < p8; i += 8) sx = _mm256_add_ps(sx, _mm256_loadu_ps(x + i));
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            const float s = qk_avx2_load_scale(w->scales, (n0 + r) * ng + j, st);
            const float m = f == F_W4A ? qk_avx2_load_scale(w->mins, (n0 + r) * ng + j, st) : 0.0f;
            acc[r] = _mm256_fmadd_ps(d[r], _mm256_set1_ps(s), acc[r]);
            if (f == F_W4A) acc[r] = _mm256_fmadd_ps(sx, _mm256_set1_ps(m), acc[r]);
            for (size_t i = p8; i < p1; i++) tail[r] += (m + s * code1(wr[r], i, f)) * x[i]; /* g = K only */
        }
    }
    for (int r = 0; r < R; r++) a->y[n0 + r] = qk_avx2_hsum_ps(acc[r]) + tail[r];
}

/* ---- w4s, w4a with K % 64 == 0 and g % 32 == 0: x transposed ----
 * A 32-byte load holds 64 codes, dword lane l holding those of elements
 * 8l..8l+7 in its nibbles; x is transposed to match once per call
 * (xt[64b + 8i + l] = x[64b + 8l + i]), so nibble i of every lane is one
 * shift (and mask) away from eight f32 codes, with no broadcast per eight
 * weights. w4s codes are xor-ed with 8 first, so each nibble's signed value
 * is q = c - 8 (shift it to the top, then arithmetic shift down). Lanes 0-3
 * of a block are its first group of 32 and lanes 4-7 the second. Rows are
 * taken one after the other (one sequential stream, prefetched ahead). */
#define QK_A32_TK 16384

QK_INLINE uint32_t rd32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

QK_INLINE __m256 w4t_nib(__m256i v, const int i, const int f) {
    if (f == F_W4S) return _mm256_cvtepi32_ps(_mm256_srai_epi32(i == 7 ? v : _mm256_slli_epi32(v, 28 - 4 * i), 28));
    if (i == 7) return _mm256_cvtepi32_ps(_mm256_srli_epi32(v, 28));
    return _mm256_cvtepi32_ps(_mm256_and_si256(i ? _mm256_srli_epi32(v, 4 * i) : v, _mm256_set1_epi32(15)));
}

/* Σ over the 64 values of one block of (code value)·x, lane by lane. */
QK_INLINE __m256 w4t_block(const uint8_t *p, const float *xb, const int f) {
    __m256i v = _mm256_loadu_si256((const __m256i *)p);
    if (f == F_W4S) v = _mm256_xor_si256(v, _mm256_set1_epi32((int)0x88888888u));
    __m256 e = _mm256_mul_ps(w4t_nib(v, 0, f), _mm256_loadu_ps(xb));
    __m256 o = _mm256_mul_ps(w4t_nib(v, 1, f), _mm256_loadu_ps(xb + 8));
    e = _mm256_fmadd_ps(w4t_nib(v, 2, f), _mm256_loadu_ps(xb + 16), e);
    o = _mm256_fmadd_ps(w4t_nib(v, 3, f), _mm256_loadu_ps(xb + 24), o);
    e = _mm256_fmadd_ps(w4t_nib(v, 4, f), _mm256_loadu_ps(xb + 32), e);
    o = _mm256_fmadd_ps(w4t_nib(v, 5, f), _mm256_loadu_ps(xb + 40), o);
    e = _mm256_fmadd_ps(w4t_nib(v, 6, f), _mm256_loadu_ps(xb + 48), e);
    o = _mm256_fmadd_ps(w4t_nib(v, 7, f), _mm256_loadu_ps(xb + 56), o);
    return _mm256_add_ps(e, o);
}

QK_INLINE float w4t_row(const qk_matmul_args *a, const float *xt, const float *xg, size_t n, const int f, const qk_scale_type st) {
    const qk_qmat *w = a->w;
    const size_t K = a->K, g = a->group, ng = K / g, nb = K / 64, bpg = g / 64;
    const uint8_t *row = w->codes + n * w->row_bytes;
    const size_t s0 = n * ng, ss = st == QK_SCALE_F16 ? 2 : 4;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    if (g == 32) {
        const __m256i lo4 = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
        for (size_t b = 0; b < nb; b++) {
            const uint8_t *p = row + 32 * b;
            if (b % 2 == 0) _mm_prefetch((const char *)p + QK_A32_TPF, _MM_HINT_T0);
            if (b % 8 == 0) _mm_prefetch((const char *)w->scales + (s0 + 2 * b) * ss + QK_A32_TPF / 4, _MM_HINT_T0);
            __m128 two = st == QK_SCALE_F16 ? _mm_cvtph_ps(_mm_cvtsi32_si128((int)rd32((const uint8_t *)w->scales + (s0 + 2 * b) * 2)))
                                            : _mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)((const float *)w->scales + s0 + 2 * b)));
            __m256 sv = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(two), lo4);
            __m256 part = w4t_block(p, xt + 64 * b, f);
            if (b % 2) acc1 = _mm256_fmadd_ps(part, sv, acc1);
            else acc0 = _mm256_fmadd_ps(part, sv, acc0);
        }
    } else {
        for (size_t j = 0; j < ng; j++) {
            const size_t b0 = j * bpg;
            if (j % 16 == 0) _mm_prefetch((const char *)w->scales + (s0 + j) * ss + QK_A32_TPF / 4, _MM_HINT_T0);
            __m256 e = _mm256_setzero_ps(), o = _mm256_setzero_ps();
            size_t b = b0;
            for (; b + 2 <= b0 + bpg; b += 2) {
                const uint8_t *p = row + 32 * b;
                _mm_prefetch((const char *)p + QK_A32_TPF, _MM_HINT_T0);
                e = _mm256_add_ps(e, w4t_block(p, xt + 64 * b, f));
                o = _mm256_add_ps(o, w4t_block(p + 32, xt + 64 * (b + 1), f));
            }
            if (b < b0 + bpg) {
                _mm_prefetch((const char *)row + 32 * b + QK_A32_TPF, _MM_HINT_T0);
                e = _mm256_add_ps(e, w4t_block(row + 32 * b, xt + 64 * b, f));
            }
            acc0 = _mm256_fmadd_ps(_mm256_add_ps(e, o), _mm256_set1_ps(qk_avx2_load_scale(w->scales, s0 + j, st)), acc0);
        }
    }
    if (f == F_W4A) { /* + Σ_j m_j·(Σ of x over group j) */
        size_t j = 0;
        for (; j + 8 <= ng; j += 8) {
            __m256 mv = st == QK_SCALE_F16 ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)w->mins + s0 + j)))
                                           : _mm256_loadu_ps((const float *)w->mins + s0 + j);
            acc1 = _mm256_fmadd_ps(mv, _mm256_loadu_ps(xg + j), acc1);
        }
        float t = 0.0f;
        for (; j < ng; j++) t += qk_avx2_load_scale(w->mins, s0 + j, st) * xg[j];
        return qk_avx2_hsum_ps(_mm256_add_ps(acc0, acc1)) + t;
    }
    return qk_avx2_hsum_ps(_mm256_add_ps(acc0, acc1));
}

/* x transposed and its group sums, for K <= QK_A32_TK in thread-local
 * storage rather than on the stack (66 KiB would be a large share of a small
 * thread stack in a library user's program), beyond on the heap. (The
 * broadcast path, which longer rows had taken, ran 1x2048x28672 cold at half
 * the speed of 1x4096x14336 here: w4s 5.0 against 9.4 GB/s.) */
static _Thread_local float qk_a32_xt[QK_A32_TK] __attribute__((aligned(32)));
static _Thread_local float qk_a32_xg[QK_A32_TK / 32];

/* 0 when out of memory (the caller takes the broadcast path). */
QK_INLINE int gemv_w4t(const qk_matmul_args *a, const int f) {
    const size_t K = a->K, g = a->group;
    float *heap = K > QK_A32_TK ? malloc((K + K / 32) * sizeof(float)) : NULL;
    if (K > QK_A32_TK && !heap) return 0;
    float *const xt = heap ? heap : qk_a32_xt, *const xg = heap ? heap + K : qk_a32_xg;
    for (size_t b = 0; b < K / 64; b++)
        for (size_t i = 0; i < 8; i++)
            for (size_t l = 0; l < 8; l++) xt[64 * b + 8 * i + l] = a->x[64 * b + 8 * l + i];
    if (f == F_W4A)
        for (size_t j = 0; j < K / g; j++) {
            __m256 s = _mm256_setzero_ps();
            for (size_t k = j * g; k < (j + 1) * g; k += 8) s = _mm256_add_ps(s, _mm256_loadu_ps(a->x + k));
            xg[j] = qk_avx2_hsum_ps(s);
        }
    if (a->w->scale_type == QK_SCALE_F16)
        for (size_t n = 0; n < a->N; n++) a->y[n] = w4t_row(a, xt, xg, n, f, QK_SCALE_F16);
    else
        for (size_t n = 0; n < a->N; n++) a->y[n] = w4t_row(a, xt, xg, n, f, QK_SCALE_F32);
    free(heap);
    return 1;
}

QK_INLINE void gemv_plain(const qk_matmul_args *a, const int f) {
    if (f != F_W8S && a->K % 64 == 0 && (a->group == 32 || a->group % 64 == 0) && gemv_w4t(a, f)) return;
    const qk_scale_type st = a->w->scale_type;
    size_t n = 0;
    for (; n + QK_A32_R <= a->N; n += QK_A32_R) {
        if (st == QK_SCALE_F16) rows_plain(a, n, QK_A32_R, f, QK_SCALE_F16);
        else rows_plain(a, n, QK_A32_R, f, QK_SCALE_F32);
    }
    for (; n < a->N; n++) {
        if (st == QK_SCALE_F16) rows_plain(a, n, 1, f, QK_SCALE_F16);
        else rows_plain(a, n, 1, f, QK_SCALE_F32);
    }
}

/* ---- llama.cpp blocks ---- */

QK_INLINE __m256 sx8_ps(const uint8_t *p) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p))); }

/* Row n of q4_0 (q4) or q8_0: each block's 32 codes times x, scaled by the
 * block's fp16 d; the row's bytes prefetched QK_A32_TPF ahead, one line per
 * 64 bytes of blocks. */
QK_INLINE void row_blocks(const qk_matmul_args *a, size_t n, const int q4) {
    const float *x = a->x;
    const size_t nb = a->K / 32, bytes = q4 ? QK_Q4_0_BYTES : QK_Q8_0_BYTES;
    const __m256i c15 = _mm256_set1_epi32(15), c8 = _mm256_set1_epi32(8);
    const uint8_t *wr = a->w->codes + n * a->w->row_bytes;
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; b++) {
        const float *xb = x + 32 * b;
        const __m256 x0 = _mm256_loadu_ps(xb), x1 = _mm256_loadu_ps(xb + 8), x2 = _mm256_loadu_ps(xb + 16), x3 = _mm256_loadu_ps(xb + 24);
        const uint8_t *blk = wr + b * bytes;
        if ((b & (q4 ? 3 : 1)) == 0) _mm_prefetch((const char *)blk + QK_A32_TPF, _MM_HINT_T0);
        __m256 e, o;
        if (q4) { /* elements 0..15 the low nibbles of the 16 code bytes, 16..31 the high ones */
            __m256i v0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(blk + 2)));
            __m256i v1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(blk + 10)));
            e = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_and_si256(v0, c15), c8)), x0);
            e = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_and_si256(v1, c15), c8)), x1, e);
            o = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(v0, 4), c8)), x2);
            o = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(v1, 4), c8)), x3, o);
        } else {
            e = _mm256_fmadd_ps(sx8_ps(blk + 10), x1, _mm256_mul_ps(sx8_ps(blk + 2), x0));
            o = _mm256_fmadd_ps(sx8_ps(blk + 26), x3, _mm256_mul_ps(sx8_ps(blk + 18), x2));
        }
        acc = _mm256_fmadd_ps(_mm256_add_ps(e, o), _mm256_set1_ps(_cvtsh_ss(qk_rd16(blk))), acc);
    }
    a->y[n] = qk_avx2_hsum_ps(acc);
}

/// y = W·x with f32 activations a->x (W4A32, W8A32), plain layout; writes
/// a->y[0..N). Any N, any K and group size the format allows; no alignment.
void qk_gemv_w4s_a32__avx2(const qk_matmul_args *a) { gemv_plain(a, F_W4S); }
void qk_gemv_w4a_a32__avx2(const qk_matmul_args *a) { gemv_plain(a, F_W4A); }
void qk_gemv_w8s_a32__avx2(const qk_matmul_args *a) { gemv_plain(a, F_W8S); }

/* q4_0, q8_0: one row after the other (one sequential stream, prefetched
 * QK_A32_TPF bytes ahead), which reads DRAM faster here than QK_A32_R
 * interleaved rows. */
void qk_gemv_q4_0_a32__avx2(const qk_matmul_args *a) {
    for (size_t n = 0; n < a->N; n++) row_blocks(a, n, 1);
}

void qk_gemv_q8_0_a32__avx2(const qk_matmul_args *a) {
    for (size_t n = 0; n < a->N; n++) row_blocks(a, n, 0);
}
