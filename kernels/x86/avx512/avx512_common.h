/* Helpers shared by the avx512 and avx512vnni kernels (static inline only). */
#ifndef QK_X86_AVX512_COMMON_H
#define QK_X86_AVX512_COMMON_H

#if !defined(__AVX512F__) || !defined(__AVX512BW__) || !defined(__AVX512DQ__) || !defined(__AVX512VL__)
#error "avx512_common.h needs the avx512 tier's flags"
#endif

#include <immintrin.h>

#include "internal.h"

/// One 64-byte store, non-temporal when nt (p then on a line).
static inline __attribute__((always_inline)) void qk512_store_line(void *p, __m512i v, int nt) {
    if (nt) _mm512_stream_si512(p, v);
    else _mm512_storeu_si512(p, v);
}

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
/// The first n (<= 16; all when n >= 16) lanes of v to p: a tile's last
/// columns. The counterpart of qk512_load16_ps.
static inline void qk512_store16_ps(float *p, size_t n, __m512 v) {
    if (n >= 16) _mm512_storeu_ps(p, v);
    else _mm512_mask_storeu_ps(p, qk512_mask16(n), v);
}
static inline __m512 qk512_load16_ph(const uint16_t *p, size_t n) {
    return _mm512_cvtph_ps(n >= 16 ? _mm256_loadu_si256((const __m256i *)p) : _mm256_maskz_loadu_epi16(qk512_mask16(n), p));
}

/// Rows of a packed tile, 16 at a time: t[q] lane r = the dword at byte
/// off + 4q of row r (base + r·rb), for r < live (rows past it read as zero).
/// Loaded as z[q] lane L = the 16 bytes of row 4L + q, then one in-lane 4x4
/// transpose of dwords (8 unpacks), and each t[q] is a whole line of the
/// packed tile. (Written load by load into the inserts: with a z's four loads
/// first, GCC allocated the int gemm pack's registers otherwise and it took
/// 1.2x the time; as masked broadcast loads, 2-3x from DRAM.)
/// With q4, each row's 16 bytes are a q4_0 block's nibbles (element j
/// low, j + 16 high), put in the plain order first
/// (element 2i low, 2i + 1 high of byte i; in-lane, as qk_pk_q4_0_plain).
/// Called with live a literal 16 for whole blocks (always inlined, the tests
/// fold away).
static inline __attribute__((always_inline)) void qk512_load_t4(const uint8_t *base, size_t rb, size_t off, size_t live, int q4,
                                                                __m512i t[4]) {
    __m512i z[4];
    for (size_t q = 0; q < 4; q++) {
        const uint8_t *p = base + q * rb + off;
#define QK512_T4_ROW(L) (4 * (L) + q < live ? _mm_loadu_si128((const __m128i *)(p + (L) * 4 * rb)) : _mm_setzero_si128())
        __m512i v = _mm512_castsi128_si512(QK512_T4_ROW(0));
        v = _mm512_inserti32x4(v, QK512_T4_ROW(1), 1);
        v = _mm512_inserti32x4(v, QK512_T4_ROW(2), 2);
        v = _mm512_inserti32x4(v, QK512_T4_ROW(3), 3);
#undef QK512_T4_ROW
        if (q4) {
            const __m512i m4 = _mm512_set1_epi8(15), w = _mm512_set1_epi16(0x1001);
            v = _mm512_packus_epi16(_mm512_maddubs_epi16(_mm512_and_si512(v, m4), w),
                                    _mm512_maddubs_epi16(_mm512_and_si512(_mm512_srli_epi16(v, 4), m4), w));
        }
        z[q] = v;
    }
    __m512i a = _mm512_unpacklo_epi32(z[0], z[1]), b = _mm512_unpackhi_epi32(z[0], z[1]);
    __m512i c = _mm512_unpacklo_epi32(z[2], z[3]), d = _mm512_unpackhi_epi32(z[2], z[3]);
    t[0] = _mm512_unpacklo_epi64(a, c);
    t[1] = _mm512_unpackhi_epi64(a, c);
    t[2] = _mm512_unpacklo_epi64(b, d);
    t[3] = _mm512_unpackhi_epi64(b, d);
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
 * (16 vectors -> one vector of 16 horizontal results, 15 ops and 30
 * shuffles). The two levels within 128-bit lanes (unpacks, which run on
 * every vector pipe of Zen 4/5) come first, when there are 8 and 4 pairs to
 * combine; the two cross-lane levels (vshuff32x4, two pipes shared with the
 * FP min/max/compares) come last, with 2 and 1 pairs: 24 in-lane and 6
 * cross-lane shuffles instead of 6 and 24.
 * Step by step: u(a,b,c,d) combines 4 vectors so that 32-bit slot q of every
 * 128-bit lane holds a partial of input q; fin(u0..u3) finishes, lane
 * 4j + q from input q of u_j:
 * name(v) == name##_fin(name##_u(v0, v1, v2, v3), name##_u(v4, .., v7),
 *                       name##_u(v8, .., v11), name##_u(v12, .., v15)). */
#define QK512_DEFINE_REDUCE16(name, T, OP, SH, UL32, UH32, UL64, UH64)                                       \
    static inline __attribute__((always_inline)) T name##_u(T a, T b, T c, T d) {                           \
        T ab = OP(UL32(a, b), UH32(a, b)), cd = OP(UL32(c, d), UH32(c, d)); /* slots a b a b | c d c d */   \
        return OP(UL64(ab, cd), UH64(ab, cd));                              /* slots a b c d */             \
    }                                                                                                       \
    static inline __attribute__((always_inline)) T name##_fin(T u0, T u1, T u2, T u3) {                     \
        T w0 = OP(SH(u0, u1, 0x88), SH(u0, u1, 0xDD)), w1 = OP(SH(u2, u3, 0x88), SH(u2, u3, 0xDD));         \
        return OP(SH(w0, w1, 0x88), SH(w0, w1, 0xDD));                                                      \
    }                                                                                                       \
    static inline __attribute__((always_inline)) T name(const T *v) {                                       \
        return name##_fin(name##_u(v[0], v[1], v[2], v[3]), name##_u(v[4], v[5], v[6], v[7]),                \
                          name##_u(v[8], v[9], v[10], v[11]), name##_u(v[12], v[13], v[14], v[15]));         \
    }

#define QK512_SHI(a, b, imm) _mm512_shuffle_i32x4(a, b, imm)
#define QK512_SHF(a, b, imm) _mm512_shuffle_f32x4(a, b, imm)
#define QK512_UL64PS(a, b) _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(a), _mm512_castps_pd(b)))
#define QK512_UH64PS(a, b) _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(a), _mm512_castps_pd(b)))
QK512_DEFINE_REDUCE16(qk512_reduce16_max_epu32, __m512i, _mm512_max_epu32, QK512_SHI, _mm512_unpacklo_epi32,
                      _mm512_unpackhi_epi32, _mm512_unpacklo_epi64, _mm512_unpackhi_epi64)
QK512_DEFINE_REDUCE16(qk512_reduce16_max_epi32, __m512i, _mm512_max_epi32, QK512_SHI, _mm512_unpacklo_epi32,
                      _mm512_unpackhi_epi32, _mm512_unpacklo_epi64, _mm512_unpackhi_epi64)
QK512_DEFINE_REDUCE16(qk512_reduce16_add_epi32, __m512i, _mm512_add_epi32, QK512_SHI, _mm512_unpacklo_epi32,
                      _mm512_unpackhi_epi32, _mm512_unpacklo_epi64, _mm512_unpackhi_epi64)
QK512_DEFINE_REDUCE16(qk512_reduce16_min_ps, __m512, _mm512_min_ps, QK512_SHF, _mm512_unpacklo_ps, _mm512_unpackhi_ps,
                      QK512_UL64PS, QK512_UH64PS)
QK512_DEFINE_REDUCE16(qk512_reduce16_max_ps, __m512, _mm512_max_ps, QK512_SHF, _mm512_unpacklo_ps, _mm512_unpackhi_ps,
                      QK512_UL64PS, QK512_UH64PS)
QK512_DEFINE_REDUCE16(qk512_reduce16_add_ps, __m512, _mm512_add_ps, QK512_SHF, _mm512_unpacklo_ps, _mm512_unpackhi_ps,
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

/// qk512_absbits_max of 16 groups of a fixed g (a multiple of 32, <= 256),
/// reduced: lane i is that of the group at p[i]. Pass 1 of the symmetric
/// weight and activation quantizers.
/// Group i of a chunk: p[i] from a pointer array, or b + i·g when the chunk
/// is contiguous and the caller passes its base b. Callers pass a literal
/// NULL b, or a b the compiler knows is not NULL (qd_base in
/// x86/quant_driver.h), so after inlining each address is a load of p[i] or
/// an offset from b, never a test.
static inline __attribute__((always_inline)) const float *qk512_at(const float *const *p, const float *b, size_t i, size_t g) {
    return b ? b + i * g : p[i];
}

/// The 16 group pointers of a chunk of contiguous groups from its base b
/// (the rare paths of the base-addressed quantizers that take pointers).
static inline void qk512_ptrs_at(const float *b, size_t g, const float **p) {
    for (size_t i = 0; i < 16; i++) p[i] = b + i * g;
}

static inline __attribute__((always_inline)) __m512i qk512_absbits_max16(const float *const *p, const float *b, size_t g) {
    const __m512i ab = _mm512_set1_epi32(0x7fffffff);
    __m512i am[16];
#pragma GCC unroll 16
    for (size_t i = 0; i < 16; i++) {
        const float *x = qk512_at(p, b, i, g);
        __m512i m0 = _mm512_and_si512(_mm512_castps_si512(_mm512_loadu_ps(x)), ab);
        __m512i m1 = _mm512_and_si512(_mm512_castps_si512(_mm512_loadu_ps(x + 16)), ab);
        for (size_t k = 32; k < g; k += 32) {
            m0 = _mm512_max_epu32(m0, _mm512_and_si512(_mm512_castps_si512(_mm512_loadu_ps(x + k)), ab));
            m1 = _mm512_max_epu32(m1, _mm512_and_si512(_mm512_castps_si512(_mm512_loadu_ps(x + k + 16)), ab));
        }
        am[i] = _mm512_max_epu32(m0, m1);
    }
    return qk512_reduce16_max_epu32(am);
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
