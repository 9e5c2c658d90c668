/* Helpers shared by the avx512 and avx512vnni kernels (static inline only). */
#ifndef QK_X86_AVX512_COMMON_H
#define QK_X86_AVX512_COMMON_H

#if !defined(__AVX512F__) || !defined(__AVX512BW__) || !defined(__AVX512DQ__) || !defined(__AVX512VL__)
#error "avx512_common.h needs the avx512 tier's flags"
#endif

#include <immintrin.h>

#include "internal.h"

/// Mask of the first n (<= 16) lanes.
static inline __mmask16 qk512_mask16(size_t n) { return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1u); }
/// Mask of the first n (<= 32) lanes.
static inline __mmask32 qk512_mask32(size_t n) { return n >= 32 ? (__mmask32)0xffffffffu : (__mmask32)((1u << n) - 1u); }
/// Mask of the first n (<= 64) lanes.
static inline __mmask64 qk512_mask64(size_t n) { return n >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << n) - 1u); }

/// n (<= 16) floats / int32 / fp16 values from p, zero-filled. A masked load
/// is used only for a partial vector: on this core family a masked load that
/// misses the cache stalls far longer than a plain one.
static inline __m512 qk512_load16_ps(const float *p, size_t n) { return n >= 16 ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(qk512_mask16(n), p); }
static inline __m512i qk512_load16_epi32(const int32_t *p, size_t n) {
    return n >= 16 ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi32(qk512_mask16(n), p);
}
static inline __m512 qk512_load16_ph(const uint16_t *p, size_t n) {
    return _mm512_cvtph_ps(n >= 16 ? _mm256_loadu_si256((const __m256i *)p) : _mm256_maskz_loadu_epi16(qk512_mask16(n), p));
}

/// round-half-away-from-zero(v) as int32, exactly roundf for |v| < 2^31:
/// trunc(v + copysign(0.5 - 2^-25, v)) (checked on every float).
static inline __m512i qk512_cvt_round_away(__m512 v) {
    __m512i c = _mm512_ternarylogic_epi32(_mm512_castps_si512(v), _mm512_set1_epi32(0x3effffff),
                                          _mm512_set1_epi32((int)0x80000000u), 0xEC); /* (v & sign) | 0.49999997f */
    return _mm512_cvttps_epi32(_mm512_add_ps(v, _mm512_castsi512_ps(c)));
}

/// The inverse scale of every lane (qk_inv_scale): 1/s, 0 where that is ±Inf.
static inline __m512 qk512_inv_scale(__m512 s) {
    __m512 id = _mm512_div_ps(_mm512_set1_ps(1.0f), s);
    return _mm512_maskz_mov_ps((__mmask16)~_mm512_fpclass_ps_mask(id, 0x18), id);
}

/// Round 16 scales to f16 (round to nearest even, as vcvtps2ph imm 0),
/// store those of `live` at dst, set *range when one of them overflows,
/// and return the stored values as f32.
static inline __m512 qk512_store_f16(uint16_t *dst, __mmask16 live, __m512 s, int *range) {
    __m256i h = _mm512_cvtps_ph(s, 0);
    _mm256_mask_storeu_epi16(dst, live, h);
    if (_mm256_mask_cmpeq_epi16_mask(live, _mm256_and_si256(h, _mm256_set1_epi16(0x7c00)), _mm256_set1_epi16(0x7c00)))
        *range |= QK_ROW_RANGE;
    return _mm512_cvtph_ps(h);
}

/// Store 16 scales of `live` lanes at index i of `p` in storage type st and
/// return the stored values as f32.
static inline __m512 qk512_store_scales(void *p, size_t i, qk_scale_type st, __mmask16 live, __m512 s, int *bad) {
    if (st == QK_SCALE_F16) return qk512_store_f16((uint16_t *)p + i, live, s, bad);
    _mm512_mask_storeu_ps((float *)p + i, live, s);
    return s;
}

/* Transposed reduction: lane i of the result is the reduction of v[i]
 * (16 vectors -> one vector of 16 horizontal results, 45 instructions). */
#define QK512_DEFINE_REDUCE16(name, T, OP, SH, UL32, UH32, UL64, UH64)                                       \
    static inline __attribute__((always_inline)) T name(const T *v) {                                       \
        /* w_a: 128-bit chunks 0,1 hold group a, chunks 2,3 group a+4 */                                    \
        T w0 = OP(SH(v[0], v[4], 0x44), SH(v[0], v[4], 0xEE)), w1 = OP(SH(v[1], v[5], 0x44), SH(v[1], v[5], 0xEE)); \
        T w2 = OP(SH(v[2], v[6], 0x44), SH(v[2], v[6], 0xEE)), w3 = OP(SH(v[3], v[7], 0x44), SH(v[3], v[7], 0xEE)); \
        T w8 = OP(SH(v[8], v[12], 0x44), SH(v[8], v[12], 0xEE)), w9 = OP(SH(v[9], v[13], 0x44), SH(v[9], v[13], 0xEE)); \
        T wa = OP(SH(v[10], v[14], 0x44), SH(v[10], v[14], 0xEE));                                          \
        T wb = OP(SH(v[11], v[15], 0x44), SH(v[11], v[15], 0xEE));                                          \
        /* u_i: chunk c holds group i + 4c */                                                               \
        T u0 = OP(SH(w0, w8, 0x88), SH(w0, w8, 0xDD)), u1 = OP(SH(w1, w9, 0x88), SH(w1, w9, 0xDD));         \
        T u2 = OP(SH(w2, wa, 0x88), SH(w2, wa, 0xDD)), u3 = OP(SH(w3, wb, 0x88), SH(w3, wb, 0xDD));         \
        T ab = OP(UL32(u0, u1), UH32(u0, u1));                                                              \
        T cd = OP(UL32(u2, u3), UH32(u2, u3));                                                              \
        return OP(UL64(ab, cd), UH64(ab, cd));                                                              \
    }

#define QK512_SHI(a, b, imm) _mm512_shuffle_i32x4(a, b, imm)
#define QK512_SHF(a, b, imm) _mm512_shuffle_f32x4(a, b, imm)
#define QK512_UL64PS(a, b) _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(a), _mm512_castps_pd(b)))
#define QK512_UH64PS(a, b) _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(a), _mm512_castps_pd(b)))
QK512_DEFINE_REDUCE16(qk512_reduce16_max_epu32, __m512i, _mm512_max_epu32, QK512_SHI, _mm512_unpacklo_epi32,
                      _mm512_unpackhi_epi32, _mm512_unpacklo_epi64, _mm512_unpackhi_epi64)
QK512_DEFINE_REDUCE16(qk512_reduce16_add_epi32, __m512i, _mm512_add_epi32, QK512_SHI, _mm512_unpacklo_epi32,
                      _mm512_unpackhi_epi32, _mm512_unpacklo_epi64, _mm512_unpackhi_epi64)
QK512_DEFINE_REDUCE16(qk512_reduce16_min_ps, __m512, _mm512_min_ps, QK512_SHF, _mm512_unpacklo_ps, _mm512_unpackhi_ps,
                      QK512_UL64PS, QK512_UH64PS)
QK512_DEFINE_REDUCE16(qk512_reduce16_max_ps, __m512, _mm512_max_ps, QK512_SHF, _mm512_unpacklo_ps, _mm512_unpackhi_ps,
                      QK512_UL64PS, QK512_UH64PS)
QK512_DEFINE_REDUCE16(qk512_reduce16_add_ps, __m512, _mm512_add_ps, QK512_SHF, _mm512_unpacklo_ps, _mm512_unpackhi_ps,
                      QK512_UL64PS, QK512_UH64PS)

/* The same reduction in two steps, so that a caller can reduce groups as it
 * makes them (few live registers instead of 16 vectors spilled):
 * name(v) == name##_fin(name##_u(v0, v4, v8, v12), name##_u(v1, v5, v9, v13),
 *                       name##_u(v2, v6, v10, v14), name##_u(v3, v7, v11, v15)). */
#define QK512_DEFINE_REDUCE16_STEPS(name, T, OP, SH, UL32, UH32, UL64, UH64)                                \
    static inline __attribute__((always_inline)) T name##_u(T a, T b, T c, T d) {                           \
        T w = OP(SH(a, b, 0x44), SH(a, b, 0xEE)), x = OP(SH(c, d, 0x44), SH(c, d, 0xEE));                   \
        return OP(SH(w, x, 0x88), SH(w, x, 0xDD));                                                          \
    }                                                                                                       \
    static inline __attribute__((always_inline)) T name##_fin(T u0, T u1, T u2, T u3) {                     \
        T ab = OP(UL32(u0, u1), UH32(u0, u1)), cd = OP(UL32(u2, u3), UH32(u2, u3));                         \
        return OP(UL64(ab, cd), UH64(ab, cd));                                                              \
    }
QK512_DEFINE_REDUCE16_STEPS(qk512_reduce16_max_epu32, __m512i, _mm512_max_epu32, QK512_SHI, _mm512_unpacklo_epi32,
                            _mm512_unpackhi_epi32, _mm512_unpacklo_epi64, _mm512_unpackhi_epi64)
QK512_DEFINE_REDUCE16_STEPS(qk512_reduce16_min_ps, __m512, _mm512_min_ps, QK512_SHF, _mm512_unpacklo_ps, _mm512_unpackhi_ps,
                            QK512_UL64PS, QK512_UH64PS)
QK512_DEFINE_REDUCE16_STEPS(qk512_reduce16_max_ps, __m512, _mm512_max_ps, QK512_SHF, _mm512_unpacklo_ps, _mm512_unpackhi_ps,
                            QK512_UL64PS, QK512_UH64PS)

/// Max over g floats of (bits & 0x7fffffff), lane-wise: as floats, |x|'s
/// maximum (fmaxf order); >= 0x7f800000 iff the group holds NaN or Inf.
static inline __m512i qk512_absbits_max(const float *p, size_t g) {
    const __m512i ab = _mm512_set1_epi32(0x7fffffff);
    __m512i m0 = _mm512_setzero_si512(), m1 = _mm512_setzero_si512();
    size_t k = 0;
    for (; k + 32 <= g; k += 32) {
        m0 = _mm512_max_epu32(m0, _mm512_and_si512(_mm512_castps_si512(_mm512_loadu_ps(p + k)), ab));
        m1 = _mm512_max_epu32(m1, _mm512_and_si512(_mm512_castps_si512(_mm512_loadu_ps(p + k + 16)), ab));
    }
    for (; k < g; k += 16) {
        __mmask16 m = qk512_mask16(g - k);
        m0 = _mm512_max_epu32(m0, _mm512_and_si512(_mm512_castps_si512(_mm512_maskz_loadu_ps(m, p + k)), ab));
    }
    return _mm512_max_epu32(m0, m1);
}

/// Walk the groups of rows × ng groups (g floats each, row stride ldx) in
/// order: the pointer to the next n groups' data; (*r, *j) is the position.
static inline void qk512_group_ptrs(const float *x, size_t ldx, size_t g, size_t ng, size_t *r, size_t *j, size_t n,
                                    const float **p) {
    for (size_t i = 0; i < n; i++) {
        p[i] = x + *r * ldx + *j * g;
        if (++*j == ng) {
            *j = 0;
            ++*r;
        }
    }
}

#endif
