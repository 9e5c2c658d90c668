/* On-the-fly activation quantization, AVX-512 (F/BW/DQ/VL): bit-exact with
 * kernels/ref/actquant_scalar.c (codes, scales and per-group code sums).
 *
 * Same scheme as the weight quantizers: 16 groups at a time, absmax vectors
 * reduced by a transposed reduction, 16 scales and inverse scales at once,
 * then the codes (data in L1) with the per-group sums reduced the same way.
 * The reference's clamp to ±qmax never acts here: id comes from the unrounded
 * f32 scale, so |x·id| <= qmax·(1 + 2^-21) (1/s overflows to id = 0 before s
 * is subnormal enough to lose more precision) and rounds to at most qmax.
 * The chunk loops are x86/quant_driver.h, shared with the avx2 tier. */
#include "x86/avx512/avx512_common.h"

#define QK_INLINE static inline __attribute__((always_inline))

enum { CHUNK = 16 };

/* Scales of 16 groups from their absmax bits; the inverse scales go to ids.
 * Returns the groups holding NaN/Inf. */
QK_INLINE __mmask16 act_scales(__m512i amax, size_t n, float qmax, int q8_0, const qk_qact *out, size_t G0, float *ids, int *bad) {
    __mmask16 live = qk512_mask16(n);
    __mmask16 nonfinite = _mm512_mask_cmpge_epu32_mask(live, amax, _mm512_set1_epi32(0x7f800000));
    if (nonfinite) *bad |= QK_ROW_NONFINITE;
    __m512 s = _mm512_div_ps(_mm512_castsi512_ps(amax), _mm512_set1_ps(qmax));
    _mm512_storeu_ps(ids, qk512_inv_scale(s));
    if (q8_0) {
        __m256i h = _mm512_cvtps_ph(s, 0);
        if (_mm256_mask_cmpeq_epi16_mask(live & (__mmask16)~nonfinite, _mm256_and_si256(h, _mm256_set1_epi16(0x7c00)),
                                         _mm256_set1_epi16(0x7c00)))
            *bad |= QK_ROW_RANGE;
        s = _mm512_cvtph_ps(h);
    }
    _mm512_mask_storeu_ps(out->scales + G0, live, _mm512_maskz_mov_ps((__mmask16)~nonfinite, s));
    return nonfinite;
}

/* 16 codes of x·id, rounded half away from zero, as int32. */
QK_INLINE __m512i act_codes(__m512 x, __m512 id) { return qk512_cvt_round_away(_mm512_mul_ps(x, id)); }

/* Any g, n <= 16 groups. */
static void act_general(const float *const *p, size_t n, size_t g, float qmax, int q8_0, const qk_qact *out, size_t G0, int *bad) {
    __m512i v[CHUNK];
    float ids[CHUNK];
    for (size_t i = 0; i < n; i++) v[i] = qk512_absbits_max(p[i], g);
    for (size_t i = n; i < CHUNK; i++) v[i] = _mm512_setzero_si512();
    __mmask16 nonfinite = act_scales(qk512_reduce16_max_epu32(v), n, qmax, q8_0, out, G0, ids, bad);
    for (size_t i = 0; i < n; i++) {
        int8_t *dst = out->codes + (G0 + i) * g;
        __m512i sum = _mm512_setzero_si512();
        if ((nonfinite >> i) & 1) {
            for (size_t k = 0; k < g; k += 16) _mm_mask_storeu_epi8(dst + k, qk512_mask16(g - k), _mm_setzero_si128());
        } else {
            __m512 id = _mm512_set1_ps(ids[i]);
            for (size_t k = 0; k < g; k += 16) {
                __mmask16 m = qk512_mask16(g - k);
                __m512i q = act_codes(_mm512_maskz_loadu_ps(m, p[i] + k), id);
                sum = _mm512_add_epi32(sum, q);
                _mm_mask_storeu_epi8(dst + k, m, _mm512_cvtepi32_epi8(q));
            }
        }
        v[i] = sum;
    }
    _mm512_mask_storeu_epi32(out->sums + G0, qk512_mask16(n), qk512_reduce16_add_epi32(v));
}

/* 64 int32 codes in a, b, c, d (within int8) -> 64 int8 in order. */
QK_INLINE __m512i pack64_epi8(__m512i a, __m512i b, __m512i c, __m512i d) {
    __m512i q = _mm512_packs_epi16(_mm512_packs_epi32(a, b), _mm512_packs_epi32(c, d));
    return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), q);
}

/* Pass 1 over 16 groups of a fixed g (a multiple of 32, <= 256): absmax,
 * scales stored, inverse scales in ids. Returns 0 when a group holds NaN
 * or Inf (nothing stored: the caller takes the general path), else 1. */
QK_INLINE int act_stats(const float *const *p, size_t g, float qmax, int q8_0, const qk_qact *out, size_t G0, float *ids, int *bad) {
    __m512i amax = qk512_absbits_max16(p, NULL, g);
    if (_mm512_cmpge_epu32_mask(amax, _mm512_set1_epi32(0x7f800000))) return 0;
    act_scales(amax, CHUNK, qmax, q8_0, out, G0, ids, bad);
    return 1;
}

/* Pass 2 over 16 groups: codes (64 per store) and the per-group code sums. */
QK_INLINE void act_emit(const float *const *p, size_t g, const qk_qact *out, size_t G0, const float *ids) {
    __m512i v[CHUNK];
    int8_t *dst = out->codes + G0 * g;
    if (g == 32) {
#pragma GCC unroll 8
        for (size_t i = 0; i < CHUNK; i += 2) {
            __m512 id0 = _mm512_set1_ps(ids[i]), id1 = _mm512_set1_ps(ids[i + 1]);
            __m512i a = act_codes(_mm512_loadu_ps(p[i]), id0), b = act_codes(_mm512_loadu_ps(p[i] + 16), id0);
            __m512i c = act_codes(_mm512_loadu_ps(p[i + 1]), id1), d = act_codes(_mm512_loadu_ps(p[i + 1] + 16), id1);
            _mm512_storeu_si512(dst + i * 32, pack64_epi8(a, b, c, d));
            v[i] = _mm512_add_epi32(a, b);
            v[i + 1] = _mm512_add_epi32(c, d);
        }
    } else {
#pragma GCC unroll 16
        for (size_t i = 0; i < CHUNK; i++) {
            __m512 id = _mm512_set1_ps(ids[i]);
            __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
            for (size_t k = 0; k < g; k += 64) {
                __m512i a = act_codes(_mm512_loadu_ps(p[i] + k), id), b = act_codes(_mm512_loadu_ps(p[i] + k + 16), id);
                __m512i c = act_codes(_mm512_loadu_ps(p[i] + k + 32), id), d = act_codes(_mm512_loadu_ps(p[i] + k + 48), id);
                _mm512_storeu_si512(dst + i * g + k, pack64_epi8(a, b, c, d));
                s0 = _mm512_add_epi32(s0, _mm512_add_epi32(a, b));
                s1 = _mm512_add_epi32(s1, _mm512_add_epi32(c, d));
            }
            v[i] = _mm512_add_epi32(s0, s1);
        }
    }
    _mm512_storeu_si512(out->sums + G0, qk512_reduce16_add_epi32(v));
}

typedef __mmask16 qd_mask;
#define QD_GROUP_PTRS qk512_group_ptrs
#define QD_ACT
#define QD_TIER avx512
#include "x86/quant_driver.h"

