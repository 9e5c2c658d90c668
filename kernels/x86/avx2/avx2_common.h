/// Helpers shared by the avx2 and avxvnni kernels (static inline only; the
/// includer must be compiled with AVX2 + FMA + F16C).
#ifndef QK_AVX2_COMMON_H
#define QK_AVX2_COMMON_H

#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
#error "avx2_common.h needs the avx2 tier's flags"
#endif

#include <immintrin.h>

#include "internal.h"

/// round(v) half away from zero, identical to roundf for every finite f32:
/// trunc(v + copysign(0.49999997f, v)) (the add rounds to nearest even, so
/// v = k + 0.5 reaches k + 1 and v = k + 0.49999997 stays below it).
static inline __m256 qk_avx2_round_away(__m256 v) {
    const __m256 h = _mm256_or_ps(_mm256_and_ps(v, _mm256_set1_ps(-0.0f)), _mm256_set1_ps(0.49999997f));
    return _mm256_round_ps(_mm256_add_ps(v, h), _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
}

/// The same rounding straight to int32 (the truncating conversion does the
/// trunc); |v| must stay below 2^31.
static inline __m256i qk_avx2_round_away_epi32(__m256 v) {
    const __m256 h = _mm256_or_ps(_mm256_and_ps(v, _mm256_set1_ps(-0.0f)), _mm256_set1_ps(0.49999997f));
    return _mm256_cvttps_epi32(_mm256_add_ps(v, h));
}

/// Bits of |v|: for finite values their integer order is the float order, and
/// NaN/Inf are exactly the values >= 0x7f800000.
static inline __m256i qk_avx2_abs_bits(__m256 v) {
    return _mm256_and_si256(_mm256_castps_si256(v), _mm256_set1_epi32(0x7fffffff));
}

static inline float qk_avx2_hsum_ps(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline int32_t qk_avx2_hsum_epi32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

/// Lane j of the result = OP over the 8 lanes of v[j], j = 0..7 (eight
/// vectors reduced and transposed at once). OP(a, b) works on __m256i.
#define QK_AVX2_REDUCE8(OP, v, out)                                                                             \
    do {                                                                                                        \
        __m256i t0_ = OP(_mm256_unpacklo_epi32(v[0], v[1]), _mm256_unpackhi_epi32(v[0], v[1]));                \
        __m256i t1_ = OP(_mm256_unpacklo_epi32(v[2], v[3]), _mm256_unpackhi_epi32(v[2], v[3]));                \
        __m256i t2_ = OP(_mm256_unpacklo_epi32(v[4], v[5]), _mm256_unpackhi_epi32(v[4], v[5]));                \
        __m256i t3_ = OP(_mm256_unpacklo_epi32(v[6], v[7]), _mm256_unpackhi_epi32(v[6], v[7]));                \
        __m256i u0_ = OP(_mm256_unpacklo_epi64(t0_, t1_), _mm256_unpackhi_epi64(t0_, t1_));                    \
        __m256i u1_ = OP(_mm256_unpacklo_epi64(t2_, t3_), _mm256_unpackhi_epi64(t2_, t3_));                    \
        (out) = OP(_mm256_permute2x128_si256(u0_, u1_, 0x20), _mm256_permute2x128_si256(u0_, u1_, 0x31));      \
    } while (0)

static inline __m256i qk_avx2_min_ps_i(__m256i a, __m256i b) {
    return _mm256_castps_si256(_mm256_min_ps(_mm256_castsi256_ps(a), _mm256_castsi256_ps(b)));
}
static inline __m256i qk_avx2_max_ps_i(__m256i a, __m256i b) {
    return _mm256_castps_si256(_mm256_max_ps(_mm256_castsi256_ps(a), _mm256_castsi256_ps(b)));
}

/// out[j] = max (or sum) over the 8 int32 lanes of v[j], j = 0..7.
static inline __m256i qk_avx2_reduce8_max_epi32(const __m256i v[8]) {
    __m256i r;
    QK_AVX2_REDUCE8(_mm256_max_epi32, v, r);
    return r;
}
static inline __m256i qk_avx2_reduce8_add_epi32(const __m256i v[8]) {
    __m256i r;
    QK_AVX2_REDUCE8(_mm256_add_epi32, v, r);
    return r;
}
/// out[j] = min (max) over the 8 f32 lanes of v[j] (finite values), as bits.
static inline __m256 qk_avx2_reduce8_min_ps(const __m256i v[8]) {
    __m256i r;
    QK_AVX2_REDUCE8(qk_avx2_min_ps_i, v, r);
    return _mm256_castsi256_ps(r);
}
static inline __m256 qk_avx2_reduce8_max_ps(const __m256i v[8]) {
    __m256i r;
    QK_AVX2_REDUCE8(qk_avx2_max_ps_i, v, r);
    return _mm256_castsi256_ps(r);
}

/// The four int32 vectors (elements 0-7, 8-15, 16-23, 24-31) as 32 int8 in
/// element order (saturating; callers keep values in int8 range).
static inline __m256i qk_avx2_pack_i32x4_i8(__m256i q0, __m256i q1, __m256i q2, __m256i q3) {
    __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(q0, q1), _mm256_packs_epi32(q2, q3));
    return _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/// 32 bytes of 4-bit codes (0..15) in element order -> 16 bytes, element 2i in
/// the low nibble of byte i and 2i+1 in the high nibble.
static inline __m128i qk_avx2_pack_nibbles(__m256i b) {
    __m256i n = _mm256_maddubs_epi16(b, _mm256_set1_epi16(0x1001));
    n = _mm256_packus_epi16(n, n);
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(n, 0x08));
}

/// 16 bytes of nibbles -> 32 bytes of 4-bit codes in element order (element
/// 2i from the low nibble of byte i, 2i+1 from the high nibble).
static inline __m256i qk_avx2_unpack_nibbles(__m128i v) {
    const __m128i m = _mm_set1_epi8(0x0f);
    __m128i lo = _mm_and_si128(v, m), hi = _mm_and_si128(_mm_srli_epi16(v, 4), m);
    return _mm256_set_m128i(_mm_unpackhi_epi8(lo, hi), _mm_unpacklo_epi8(lo, hi));
}

/// 8 f32 scales from `p` (f32 or f16 storage), elements i..i+7.
static inline __m256 qk_avx2_load8_scales(const void *p, size_t i, qk_scale_type st) {
    if (st == QK_SCALE_F16) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + i)));
    return _mm256_loadu_ps((const float *)p + i);
}

static inline float qk_avx2_load_scale(const void *p, size_t i, qk_scale_type st) {
    if (st == QK_SCALE_F16) return _cvtsh_ss(((const uint16_t *)p)[i]);
    return ((const float *)p)[i];
}

/// Vector form of qk_inv_scale: 1/s, 0 where that overflows (s = 0 or a denormal).
static inline __m256 qk_avx2_inv_scale(__m256 s) {
    __m256 id = _mm256_div_ps(_mm256_set1_ps(1.0f), s);
    __m256 inf = _mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), id), _mm256_set1_ps(INFINITY), _CMP_EQ_OQ);
    return _mm256_andnot_ps(inf, id);
}

/// Load n < 8 floats into the low lanes; the other lanes take `fill`.
static inline __m256 qk_avx2_load_partial(const float *x, size_t n, __m256 fill) {
    __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), lane);
    return _mm256_blendv_ps(fill, _mm256_maskload_ps(x, m), _mm256_castsi256_ps(m));
}

/// Max of the |x| bits over x[0..g) in each lane (>= 0x7f800000 iff a value is NaN/Inf).
static inline __m256i qk_avx2_absmax_bits(const float *x, size_t g) {
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 32 <= g; i += 32) {
        a0 = _mm256_max_epi32(a0, qk_avx2_abs_bits(_mm256_loadu_ps(x + i)));
        a1 = _mm256_max_epi32(a1, qk_avx2_abs_bits(_mm256_loadu_ps(x + i + 8)));
        a2 = _mm256_max_epi32(a2, qk_avx2_abs_bits(_mm256_loadu_ps(x + i + 16)));
        a3 = _mm256_max_epi32(a3, qk_avx2_abs_bits(_mm256_loadu_ps(x + i + 24)));
    }
    for (; i + 8 <= g; i += 8) a0 = _mm256_max_epi32(a0, qk_avx2_abs_bits(_mm256_loadu_ps(x + i)));
    if (i < g) a1 = _mm256_max_epi32(a1, qk_avx2_abs_bits(qk_avx2_load_partial(x + i, g - i, _mm256_setzero_ps())));
    return _mm256_max_epi32(_mm256_max_epi32(a0, a1), _mm256_max_epi32(a2, a3));
}

/// round(x·id) of 32 values as int8 in element order (saturated; |x·id| < 2^31).
static inline __m256i qk_avx2_round_codes32(const float *x, __m256 id) {
    return qk_avx2_pack_i32x4_i8(qk_avx2_round_away_epi32(_mm256_mul_ps(_mm256_loadu_ps(x), id)),
                                 qk_avx2_round_away_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8), id)),
                                 qk_avx2_round_away_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 16), id)),
                                 qk_avx2_round_away_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 24), id)));
}

/// Pointers to the next n groups of g floats, row-major across rows of ng
/// groups (row stride ldx); (*r, *j) is the next group's row and index.
/* Per lane, the largest |x| bit pattern (sign cleared, so integer max orders
 * it like the float, NaN above Inf) of each of 8 groups of g values (g a
 * multiple of 32) at p[0..7]: pass 1 of the chunked quantizers. */
static inline __attribute__((always_inline)) void qk_avx2_absmax_bits8(const float *const *p, size_t g, __m256i am[8]) {
    const __m256i ab = _mm256_set1_epi32(0x7fffffff);
#pragma GCC unroll 8
    for (size_t i = 0; i < 8; i++) {
        __m256i m0 = _mm256_and_si256(_mm256_castps_si256(_mm256_loadu_ps(p[i])), ab);
        __m256i m1 = _mm256_and_si256(_mm256_castps_si256(_mm256_loadu_ps(p[i] + 8)), ab);
        m0 = _mm256_max_epi32(m0, _mm256_and_si256(_mm256_castps_si256(_mm256_loadu_ps(p[i] + 16)), ab));
        m1 = _mm256_max_epi32(m1, _mm256_and_si256(_mm256_castps_si256(_mm256_loadu_ps(p[i] + 24)), ab));
        for (size_t k = 32; k < g; k += 32) {
            m0 = _mm256_max_epi32(m0, _mm256_and_si256(_mm256_castps_si256(_mm256_loadu_ps(p[i] + k)), ab));
            m1 = _mm256_max_epi32(m1, _mm256_and_si256(_mm256_castps_si256(_mm256_loadu_ps(p[i] + k + 8)), ab));
            m0 = _mm256_max_epi32(m0, _mm256_and_si256(_mm256_castps_si256(_mm256_loadu_ps(p[i] + k + 16)), ab));
            m1 = _mm256_max_epi32(m1, _mm256_and_si256(_mm256_castps_si256(_mm256_loadu_ps(p[i] + k + 24)), ab));
        }
        am[i] = _mm256_max_epi32(m0, m1);
    }
}

static inline void qk_avx2_group_ptrs(const float *x, size_t ldx, size_t g, size_t ng, size_t *r, size_t *j, size_t n,
                                      const float **p) {
    for (size_t i = 0; i < n; i++) {
        p[i] = x + *r * ldx + *j * g;
        if (++*j == ng) {
            *j = 0;
            ++*r;
        }
    }
}

/// round(v) half away from zero to int32 for v >= 0 or -0 (|v| < 2^31).
static inline __m256i qk_avx2_round_pos_epi32(__m256 v) {
    return _mm256_cvttps_epi32(_mm256_add_ps(v, _mm256_set1_ps(0.49999997f)));
}

#endif
