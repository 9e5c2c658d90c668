/* On-the-fly activation quantization, AVX2 + FMA + F16C: bit-exact with
 * kernels/ref/actquant_scalar.c (codes, scales and per-group code sums).
 *
 * Groups are taken eight at a time in row-major order across rows (codes,
 * scales and sums of consecutive groups are contiguous): a first pass finds
 * each group's absmax as a vector, a transposed reduction turns the eight
 * vectors into one vector of group statistics, the scales and inverse
 * scales are computed eight at a time, and a second pass (data now in L1)
 * writes the codes and the per-group sums, reduced the same way. For
 * g = 32/64/128/256 the first pass of the next eight groups is issued before
 * the second pass of the current ones, so the out-of-order core hides the
 * reduction's and the divisions' latency behind the code arithmetic.
 * The reference's clamp to ±qmax never acts: id comes from the unrounded f32
 * scale, so |x·id| <= qmax·(1 + 2^-21) rounds to at most qmax (as avx512).
 * The chunk loops are x86/quant_driver.h, shared with the avx512 tier. */
#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
#error "this file needs the avx2 tier's flags"
#endif
#include "x86/avx2/avx2_common.h"

#define QK_INLINE static inline __attribute__((always_inline))

enum { CHUNK = 8 };

/* Scales of 8 groups from their absmax bits: the n live ones stored (0 for a
 * group holding NaN/Inf), inverse scales in ids. Returns the NaN/Inf groups. */
QK_INLINE int act_scales(__m256i amax, size_t n, float qmaxf, int q8_0, const qk_qact *out, size_t G0, float *ids, int *bad) {
    __m256 finite = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(0x7f800000), amax));
    int nonfinite = ~_mm256_movemask_ps(finite) & ((1 << n) - 1);
    if (nonfinite) *bad |= QK_ROW_NONFINITE;
    __m256 s = _mm256_div_ps(_mm256_castsi256_ps(amax), _mm256_set1_ps(qmaxf));
    _mm256_storeu_ps(ids, qk_avx2_inv_scale(s));
    if (q8_0) {
        __m128i h = _mm256_cvtps_ph(s, _MM_FROUND_TO_NEAREST_INT);
        __m128i inf = _mm_cmpeq_epi16(_mm_and_si128(h, _mm_set1_epi16(0x7c00)), _mm_set1_epi16(0x7c00));
        int m = _mm_movemask_epi8(inf);
        for (size_t b = 0; b < n; b++)
            if ((m >> (2 * b) & 1) && !(nonfinite >> b & 1)) *bad |= QK_ROW_RANGE;
        s = _mm256_cvtph_ps(h);
    }
    s = _mm256_and_ps(s, finite);
    if (n == CHUNK) _mm256_storeu_ps(out->scales + G0, s);
    else {
        float st[CHUNK];
        _mm256_storeu_ps(st, s);
        memcpy(out->scales + G0, st, n * sizeof(float));
    }
    return nonfinite;
}

/* 32 codes of x·id as int32 in q[0..3]. */
QK_INLINE void codes32(const float *x, __m256 id, __m256i q[4]) {
    for (int v = 0; v < 4; v++) q[v] = qk_avx2_round_away_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * v), id));
}

/* Any g, n <= 8 groups (also the chunks holding NaN/Inf). */
static void act_general(const float *const *p, size_t n, size_t g, float qmaxf, int q8_0, const qk_qact *out, size_t G0, int *bad) {
    __m256i v[CHUNK];
    float ids[CHUNK];
    for (size_t i = 0; i < CHUNK; i++) v[i] = i < n ? qk_avx2_absmax_bits(p[i], g) : _mm256_setzero_si256();
    int nonfinite = act_scales(qk_avx2_reduce8_max_epi32(v), n, qmaxf, q8_0, out, G0, ids, bad);
    for (size_t i = 0; i < CHUNK; i++) {
        __m256i sum = _mm256_setzero_si256();
        if (i < n) {
            int8_t *dst = out->codes + (G0 + i) * g;
            if (nonfinite >> i & 1) memset(dst, 0, g);
            else {
                __m256 id = _mm256_set1_ps(ids[i]);
                size_t k = 0;
                __m256i q[4];
                for (; k + 32 <= g; k += 32) {
                    codes32(p[i] + k, id, q);
                    _mm256_storeu_si256((__m256i *)(dst + k), qk_avx2_pack_i32x4_i8(q[0], q[1], q[2], q[3]));
                    sum = _mm256_add_epi32(sum, _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
                }
                if (k < g) { /* g = K only: a zero-padded last piece (zeros add nothing to the sum) */
                    float buf[32] = {0};
                    int8_t tmp[32];
                    memcpy(buf, p[i] + k, (g - k) * sizeof(float));
                    codes32(buf, id, q);
                    _mm256_storeu_si256((__m256i *)tmp, qk_avx2_pack_i32x4_i8(q[0], q[1], q[2], q[3]));
                    memcpy(dst + k, tmp, g - k);
                    sum = _mm256_add_epi32(sum, _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
                }
            }
        }
        v[i] = sum;
    }
    __m256i s = qk_avx2_reduce8_add_epi32(v);
    if (n == CHUNK) _mm256_storeu_si256((__m256i *)(out->sums + G0), s);
    else {
        int32_t su[CHUNK];
        _mm256_storeu_si256((__m256i *)su, s);
        memcpy(out->sums + G0, su, n * sizeof(int32_t));
    }
}

/* Pass 1 over 8 groups of a fixed g (a multiple of 32, <= 256): absmax,
 * scales stored, inverse scales in ids. Returns 0 when a group holds NaN or
 * Inf (nothing stored: the caller takes the general path), else 1. */
QK_INLINE int act_stats(const float *const *p, size_t g, float qmaxf, int q8_0, const qk_qact *out, size_t G0, float *ids, int *bad) {
    __m256i v[CHUNK];
    qk_avx2_absmax_bits8(p, g, v);
    __m256i amax = qk_avx2_reduce8_max_epi32(v);
    if (_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(amax, _mm256_set1_epi32(0x7f7fffff))))) return 0;
    act_scales(amax, CHUNK, qmaxf, q8_0, out, G0, ids, bad);
    return 1;
}

/* Pass 2 over 8 groups: codes (32 per store) and the per-group code sums. */
QK_INLINE void act_emit(const float *const *p, size_t g, const qk_qact *out, size_t G0, const float *ids) {
    const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
    __m256i v[CHUNK];
    int8_t *dst = out->codes + G0 * g;
#pragma GCC unroll 8
    for (size_t i = 0; i < CHUNK; i++) {
        __m256 id = _mm256_broadcast_ss(ids + i);
        __m256i s16 = _mm256_setzero_si256(); /* pair sums (|.| <= 254) of at most 8 pieces: within int16 */
        for (size_t k = 0; k < g; k += 32) {
            __m256i q[4];
            codes32(p[i] + k, id, q);
            __m256i c = qk_avx2_pack_i32x4_i8(q[0], q[1], q[2], q[3]);
            _mm256_storeu_si256((__m256i *)(dst + i * g + k), c);
            s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(ones8, c));
        }
        v[i] = _mm256_madd_epi16(s16, ones16);
    }
    _mm256_storeu_si256((__m256i *)(out->sums + G0), qk_avx2_reduce8_add_epi32(v));
}

typedef int qd_mask;
#define QD_GROUP_PTRS qk_avx2_group_ptrs
#define QD_ACT
#define QD_TIER avx2
#include "x86/quant_driver.h"

