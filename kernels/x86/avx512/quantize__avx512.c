/* Weight quantization, AVX-512 (F/BW/DQ/VL): bit-exact with
 * kernels/ref/quantize_scalar.c for every format, group size and scale type.
 *
 * Groups are taken 16 at a time in row-major order across rows (the scales
 * and codes of consecutive groups are contiguous): a first pass finds each
 * group's absmax (or min and max) as a vector, a transposed reduction turns
 * the 16 vectors into one vector of 16 group statistics, the scales and
 * inverse scales are computed 16 at a time, and a second pass (data now in
 * L1) writes the codes. g = 32/64/128/256 have unrolled paths; a longer g
 * that is a multiple of 64 (per channel, g = K) goes one group at a time,
 * the codes of a group computed in the loop that reads the next one; any
 * other g takes a general path with masked tails.
 * A group holding NaN or Inf is skipped and reported (QK_ROW_NONFINITE).
 *
 * With f32 scales the clamp of the reference never acts (|x·id| stays within
 * a rounding error of the code range), so it is applied with f16 scales only.
 * The chunk loops are x86/quant_driver.h, shared with the avx2 tier; this
 * file supplies the passes. */
#include "x86/avx512/avx512_common.h"
#include "x86/quant_prefetch.h"

#define QK_INLINE static inline __attribute__((always_inline))

enum { CHUNK = 16 };

/* The second pass over a chunk prefetches the lines qk_quant_pf_floats
 * (x86/quant_prefetch.h) past those it reads; q4_0/q8_0 do the same with
 * their 32-value blocks. */
QK_INLINE void prefetch_lines(const float *p) {
    for (size_t l = 0; l < 64; l += 16) _mm_prefetch((const char *)(p + l), _MM_HINT_T0);
}

QK_INLINE void st32(void *p, __m256i v, int nt) {
    if (nt) _mm256_stream_si256((__m256i *)p, v);
    else _mm256_storeu_si256((__m256i *)p, v);
}

/* ---- code packing ---- */

/* 64 int32 codes (-128..127) in a, b, c, d -> 64 int8 in the packs' lane
 * order: 128-bit lane l holds codes 4l..4l+3 of a, then of b, c and d. */
QK_INLINE __m512i pack64_lanes(__m512i a, __m512i b, __m512i c, __m512i d) {
    return _mm512_packs_epi16(_mm512_packs_epi32(a, b), _mm512_packs_epi32(c, d));
}

/* 64 int32 codes (-128..127) in a, b, c, d -> 64 int8 in order. */
QK_INLINE __m512i pack64_epi8(__m512i a, __m512i b, __m512i c, __m512i d) {
    return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), pack64_lanes(a, b, c, d));
}

/* Two sets of 64 codes 0..15 in pack64_lanes order (q0: values 0..63 of a
 * run of 128, q1: values 64..127) -> the run's 64 bytes of nibbles in order
 * (value 2i low, 2i+1 high). The nibble pairs are made in lane order (one
 * vpmaddubsw each: 2i + 16·(2i+1)), one vpackuswb joins the two sets and one
 * vpermw restores the order (word o of the result is word 8·(o % 4) + o / 4
 * of the packed vector): two shuffles fewer per 128 values than putting
 * each set in order and narrowing it alone (the shuffle pipes are the
 * busiest in the code passes: 16x4096 from L2, w4s 6-7% less time). */
QK_INLINE __m512i nibbles128(__m512i q0, __m512i q1) {
    const __m512i w = _mm512_set1_epi16(0x1001);
    __m512i v = _mm512_packus_epi16(_mm512_maddubs_epi16(w, q0), _mm512_maddubs_epi16(w, q1));
    const __m512i idx = _mm512_set_epi16(31, 23, 15, 7, 30, 22, 14, 6, 29, 21, 13, 5, 28, 20, 12, 4, 27, 19, 11, 3, 26, 18, 10, 2, 25, 17, 9, 1,
                                         24, 16, 8, 0);
    return _mm512_permutexvar_epi16(idx, v);
}

/* 32 int32 codes (0..15 after adding off) -> 16 bytes of nibbles (tails). */
QK_INLINE __m128i pack32_nibbles(__m512i a, __m512i b, int off) {
    __m256i c = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm512_cvtepi32_epi8(a)), _mm512_cvtepi32_epi8(b), 1);
    if (off) c = _mm256_add_epi8(c, _mm256_set1_epi8((char)off));
    return _mm256_cvtepi16_epi8(_mm256_or_si256(c, _mm256_srli_epi16(c, 4)));
}

/* ---- symmetric formats (w4s, w8s) ---- */

QK_INLINE __m512i sym_codes(__m512 x, __m512 id, float qmax, int clamp) {
    __m512 v = _mm512_mul_ps(x, id);
    if (clamp) v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(-qmax)), _mm512_set1_ps(qmax));
    return qk512_cvt_round_away(v);
}

/* Scales of 16 groups from their absmax bits; returns the groups to
 * quantize. ids gets 1/scale, or 2/scale when twice (the fixed-g w4s path,
 * sym_emit: made here, an iteration before the codes read it, not doubled
 * and stored again just before). */
QK_INLINE __mmask16 sym_scales(__m512i amax, size_t n, float qmax, const qk_qmat *out, size_t G0, float *ids, int twice, int *bad) {
    __mmask16 live = qk512_mask16(n);
    __mmask16 nonfinite = _mm512_mask_cmpge_epu32_mask(live, amax, _mm512_set1_epi32(0x7f800000));
    if (nonfinite) *bad |= QK_ROW_NONFINITE;
    live &= (__mmask16)~nonfinite;
    __m512 s = _mm512_div_ps(_mm512_castsi512_ps(amax), _mm512_set1_ps(qmax));
    s = qk512_store_scales(out->scales, G0, out->scale_type, live, s, bad);
    __m512 id = qk512_inv_scale(s);
    _mm512_storeu_ps(ids, twice ? _mm512_add_ps(id, id) : id);
    return live;
}

/* General path: any g, any number n <= 16 of groups. */
static void sym_general(const float *const *p, size_t n, size_t g, int w8, const qk_qmat *out, size_t G0, int *bad) {
    float qmax = w8 ? 127.0f : 7.0f, ids[CHUNK];
    int clamp = out->scale_type == QK_SCALE_F16;
    __m512i am[CHUNK];
    for (size_t i = 0; i < n; i++) am[i] = qk512_absbits_max(p[i], g);
    for (size_t i = n; i < CHUNK; i++) am[i] = _mm512_setzero_si512();
    __mmask16 live = sym_scales(qk512_reduce16_max_epu32(am), n, qmax, out, G0, ids, 0, bad);
    for (size_t i = 0; i < n; i++) {
        if (!((live >> i) & 1)) continue;
        __m512 id = _mm512_set1_ps(ids[i]);
        const float *x = p[i];
        size_t k = 0;
        if (w8) {
            int8_t *dst = (int8_t *)out->codes + (G0 + i) * g;
            for (; k + 16 <= g; k += 16)
                _mm_storeu_si128((__m128i *)(dst + k), _mm512_cvtepi32_epi8(sym_codes(_mm512_loadu_ps(x + k), id, qmax, clamp)));
            if (k < g) {
                __mmask16 m = qk512_mask16(g - k);
                _mm_mask_storeu_epi8(dst + k, m, _mm512_cvtepi32_epi8(sym_codes(_mm512_maskz_loadu_ps(m, x + k), id, qmax, clamp)));
            }
        } else {
            uint8_t *dst = out->codes + (G0 + i) * g / 2;
            for (; k < g; k += 32) { /* g is even */
                size_t t = g - k;
                __m512i a = sym_codes(_mm512_maskz_loadu_ps(qk512_mask16(t), x + k), id, qmax, clamp);
                __m512i b = sym_codes(_mm512_maskz_loadu_ps(qk512_mask16(t > 16 ? t - 16 : 0), x + k + 16), id, qmax, clamp);
                _mm_mask_storeu_epi8(dst + k / 2, qk512_mask16(t / 2), pack32_nibbles(a, b, 8));
            }
        }
    }
}

/* Pass 1 over 16 groups of a fixed g (a multiple of 32, <= 256): absmax,
 * scales stored, inverse scales in ids (2/scale for w4s, qmax 7: sym_emit).
 * Returns the groups to quantize. (vrangeps would take one operation for
 * the and, and, max, but it loses NaNs: test_quant's NaN cases fail with it.) */
QK_INLINE __mmask16 sym_stats(const float *const *p, const float *b, size_t g, float qmax, const qk_qmat *out, size_t G0, float *ids,
                               int *bad) {
    return sym_scales(qk512_absbits_max16(p, b, g), CHUNK, qmax, out, G0, ids, qmax == 7.0f, bad);
}

/* 64 codes (-8..7 each, 0..15 when off = 0) in int8 order -> 32 bytes of
 * nibbles (element 2i low, 2i+1 high), plus 8 to each code when off: one vpmaddubsw makes 2i + 16·(2i+1). */
QK_INLINE __m256i nibbles_of_bytes(__m512i q, int off) {
    __m512i w = _mm512_maddubs_epi16(_mm512_set1_epi16(0x1001), q); /* unsigned (1, 16) · signed codes */
    if (off) w = _mm512_add_epi16(w, _mm512_set1_epi16(0x88));
    return _mm512_cvtepi16_epi8(w);
}

/* Pass 2 of the live groups of a chunk holding NaN/Inf, one by one (their
 * scales are already right, sym_general stores the same again). */
static void sym_partial(const float *const *p, size_t g, int w8, const qk_qmat *out, size_t G0, const float *ids, __mmask16 live,
                        int *bad) {
    (void)ids;
    for (size_t i = 0; i < CHUNK; i++)
        if ((live >> i) & 1) sym_general(p + i, 1, g, w8, out, G0 + i, bad);
}

/* w4s codes from t = trunc(x·2id), 64 at a time as int8 (|t| <= 15): the
 * code round-half-away(v), v = x·id, is ceil(t/2) for t >= 0 and floor(t/2)
 * for t < 0 (t = trunc(2v) exactly: 2·fl(x·id) = fl(x·2id) unless 2id
 * overflows, which sym_emit leaves to sym_partial, or the product is
 * subnormal, where both are 0), so code + 8 = avg(t + 16 - [t < 0], 0):
 * four byte operations per 64 codes instead of two float ones per 16. The
 * clamp (f16 scales) to [-7, 7] is one to [-14, 14] here. */
QK_INLINE __m512i sym4_t(__m512 x, __m512 id2, int clamp) {
    __m512 v = _mm512_mul_ps(x, id2);
    if (clamp) v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(-14.0f)), _mm512_set1_ps(14.0f));
    return _mm512_cvttps_epi32(v);
}
QK_INLINE __m512i sym4_round(__m512i t) { /* 64 bytes t -> code + 8, in any order */
    __m512i u = _mm512_mask_add_epi8(_mm512_add_epi8(t, _mm512_set1_epi8(16)), _mm512_movepi8_mask(t), t, _mm512_set1_epi8(15));
    return _mm512_avg_epu8(u, _mm512_setzero_si512());
}
QK_INLINE __m256i sym4_nibbles(__m512i a, __m512i b, __m512i c, __m512i d) {
    return nibbles_of_bytes(sym4_round(pack64_epi8(a, b, c, d)), 0);
}
/* ---- w4a ---- */

/* A zero min or max (mn, mx of the n groups of p) gets the sign qk_min_z /
 * qk_max_z give it (-0 below +0). The integer order of maxbits16 gives that
 * already; the FP min/max of w4a_stats_fp and w4a_general keep either zero,
 * so they call this before w4a_scales. */
static __attribute__((noinline)) void w4a_zero_signs(const float *const *p, size_t n, size_t g, __m512 *mn, __m512 *mx) {
    __mmask16 zero = _mm512_mask_cmpeq_ps_mask(qk512_mask16(n), *mn, _mm512_setzero_ps()) |
                     _mm512_mask_cmpeq_ps_mask(qk512_mask16(n), *mx, _mm512_setzero_ps());
    if (!zero) return;
    float fmn[CHUNK], fmx[CHUNK];
    _mm512_storeu_ps(fmn, *mn);
    _mm512_storeu_ps(fmx, *mx);
    for (size_t i = 0; i < n; i++)
        if ((zero >> i) & 1) {
            if (fmn[i] == 0.0f) fmn[i] = qk_zero_extreme(p[i], g, 0);
            if (fmx[i] == 0.0f) fmx[i] = qk_zero_extreme(p[i], g, 1);
        }
    *mn = _mm512_loadu_ps(fmn);
    *mx = _mm512_loadu_ps(fmx);
}

QK_INLINE __m512i w4a_codes(__m512 x, __m512 m, __m512 id, int clamp) {
    __m512 v = _mm512_mul_ps(_mm512_sub_ps(x, m), id);
    if (clamp) v = _mm512_min_ps(_mm512_max_ps(v, _mm512_setzero_ps()), _mm512_set1_ps(15.0f));
    /* v >= 0 (or -0): round half away is trunc(v + 0.49999997f) */
    return _mm512_cvttps_epi32(_mm512_add_ps(v, _mm512_set1_ps(0.49999997f)));
}

/* Scales of 16 groups from their min and max vectors; returns the groups to quantize. */
QK_INLINE __mmask16 w4a_scales(__m512 mn, __m512 mx, size_t n, __mmask16 nonfinite, const qk_qmat *out, size_t G0, float *ids, float *ms,
                               int twice, int *bad) {
    if (nonfinite) *bad |= QK_ROW_NONFINITE;
    __mmask16 live = qk512_mask16(n) & (__mmask16)~nonfinite;
    __m512 d = _mm512_div_ps(_mm512_sub_ps(mx, mn), _mm512_set1_ps(15.0f));
    if (_mm512_mask_fpclass_ps_mask(live, d, 0x99)) *bad |= QK_ROW_RANGE; /* max - min overflows f32 */
    mn = qk512_store_scales(out->mins, G0, out->scale_type, live, mn, bad);
    d = qk512_store_scales(out->scales, G0, out->scale_type, live, d, bad);
    __m512 id = qk512_inv_scale(d);
    if (twice) { /* g = 32: 2/stored(d) for w4a_codes2; a chunk where that overflows (a subnormal d) takes w4a_general */
        id = _mm512_add_ps(id, id);
        if (_mm512_mask_fpclass_ps_mask(live, id, 0x18)) live = 0;
    }
    _mm512_storeu_ps(ids, id);
    _mm512_storeu_ps(ms, mn);
    return live;
}

/* w4a_scales of the 16 groups' min and max vectors (kept out of line: with
 * the vectors in memory the fixed-g paths for g >= 64 run faster). */
static __mmask16 w4a_scales_of(const __m512 *vmn, const __m512 *vmx, size_t n, __mmask16 nonfinite, const float *const *p, size_t g,
                               const qk_qmat *out, size_t G0, float *ids, float *ms, int *bad) {
    __m512 mn = qk512_reduce16_min_ps(vmn), mx = qk512_reduce16_max_ps(vmx);
    w4a_zero_signs(p, n, g, &mn, &mx);
    return w4a_scales(mn, mx, n, nonfinite, out, G0, ids, ms, 0, bad);
}

static void w4a_general(const float *const *p, size_t n, size_t g, const qk_qmat *out, size_t G0, int *bad) {
    int clamp = out->scale_type == QK_SCALE_F16;
    __m512 vmn[CHUNK], vmx[CHUNK];
    __mmask16 nonfinite = 0;
    for (size_t i = 0; i < n; i++) {
        __m512 mn = _mm512_set1_ps(INFINITY), mx = _mm512_set1_ps(-INFINITY);
        __mmask16 nf = 0;
        for (size_t k = 0; k < g; k += 16) {
            __mmask16 m = qk512_mask16(g - k);
            __m512 v = _mm512_maskz_loadu_ps(m, p[i] + k);
            nf |= _mm512_mask_fpclass_ps_mask(m, v, 0x99);
            mn = _mm512_mask_min_ps(mn, m, mn, v);
            mx = _mm512_mask_max_ps(mx, m, mx, v);
        }
        vmn[i] = mn;
        vmx[i] = mx;
        if (nf) nonfinite |= (__mmask16)(1u << i);
    }
    for (size_t i = n; i < CHUNK; i++) vmn[i] = vmx[i] = _mm512_setzero_ps();
    float ids[CHUNK], ms[CHUNK];
    __mmask16 live = w4a_scales_of(vmn, vmx, n, nonfinite, p, g, out, G0, ids, ms, bad);
    for (size_t i = 0; i < n; i++) {
        if (!((live >> i) & 1)) continue;
        __m512 id = _mm512_set1_ps(ids[i]), m = _mm512_set1_ps(ms[i]);
        uint8_t *dst = out->codes + (G0 + i) * g / 2;
        for (size_t k = 0; k < g; k += 32) {
            size_t t = g - k;
            __m512i a = w4a_codes(_mm512_maskz_loadu_ps(qk512_mask16(t), p[i] + k), m, id, clamp);
            __m512i b = w4a_codes(_mm512_maskz_loadu_ps(qk512_mask16(t > 16 ? t - 16 : 0), p[i] + k + 16), m, id, clamp);
            _mm_mask_storeu_epi8(dst + k / 2, qk512_mask16(t / 2), pack32_nibbles(a, b, 0));
        }
    }
}

/* Min and max of each of n <= 16 groups of 32 (group b in lane b; groups past
 * n read as zeros), groups 4i..4i+3 reduced as soon as they are made
 * (qk512_reduce16_*_u), not 32 vectors kept (spilled) for two reductions.
 * min/max may drop a NaN: the lanes of unordered compares are returned. */
QK_INLINE __mmask16 minmax32x16(const float *const *p, size_t n, __m512 *mn, __m512 *mx) {
    __m512 umn[4], umx[4];
    __mmask16 nan = 0;
#pragma GCC unroll 4
    for (size_t i = 0; i < 4; i++) {
        __m512 vmn[4], vmx[4];
#pragma GCC unroll 4
        for (size_t c = 0; c < 4; c++) {
            size_t b = 4 * i + c;
            __m512 v0 = b < n ? _mm512_loadu_ps(p[b]) : _mm512_setzero_ps(), v1 = b < n ? _mm512_loadu_ps(p[b] + 16) : _mm512_setzero_ps();
            vmn[c] = _mm512_min_ps(v0, v1);
            vmx[c] = _mm512_max_ps(v0, v1);
            nan |= _mm512_cmp_ps_mask(v0, v1, _CMP_UNORD_Q);
        }
        umn[i] = qk512_reduce16_min_ps_u(vmn[0], vmn[1], vmn[2], vmn[3]);
        umx[i] = qk512_reduce16_max_ps_u(vmx[0], vmx[1], vmx[2], vmx[3]);
    }
    *mn = qk512_reduce16_min_ps_fin(umn[0], umn[1], umn[2], umn[3]);
    *mx = qk512_reduce16_max_ps_fin(umx[0], umx[1], umx[2], umx[3]);
    return nan;
}

/* Largest bit pattern of each of n <= 16 groups of a fixed g (a multiple of
 * 32, <= 256; groups past n read as zeros) as signed (*smax) and as unsigned (*umax) int32: integer max runs
 * on all four vector pipes, FP min/max on two (shared with the codes' sub,
 * add and convert). As signed int32 the positive floats come in order above
 * the negative ones, so smax is the group's largest float when it holds a
 * value with the sign bit clear; as unsigned the negative floats come in
 * order of magnitude above the positive ones, so umax is the smallest float
 * when it holds one with the sign bit set. NaN/Inf make smax >= 0x7f800000
 * or umax >= 0xff800000 (as unsigned). */
QK_INLINE void maxbits16(const float *const *p, const float *b, size_t n, size_t g, __m512i *smax, __m512i *umax) {
    __m512i us[4], uu[4];
#pragma GCC unroll 4
    for (size_t i = 0; i < 4; i++) {
        __m512i vs[4], vu[4];
#pragma GCC unroll 4
        for (size_t c = 0; c < 4; c++) {
            if (4 * i + c >= n) { /* groups past n read as zeros */
                vs[c] = vu[c] = _mm512_setzero_si512();
                continue;
            }
            const float *x = qk512_at(p, b, 4 * i + c, g);
            __m512i v0 = _mm512_castps_si512(_mm512_loadu_ps(x)), v1 = _mm512_castps_si512(_mm512_loadu_ps(x + 16));
            __m512i s = _mm512_max_epi32(v0, v1), u = _mm512_max_epu32(v0, v1);
            for (size_t k = 32; k < g; k += 32) {
                v0 = _mm512_castps_si512(_mm512_loadu_ps(x + k));
                v1 = _mm512_castps_si512(_mm512_loadu_ps(x + k + 16));
                s = _mm512_max_epi32(s, _mm512_max_epi32(v0, v1));
                u = _mm512_max_epu32(u, _mm512_max_epu32(v0, v1));
            }
            vs[c] = s;
            vu[c] = u;
        }
        us[i] = qk512_reduce16_max_epi32_u(vs[0], vs[1], vs[2], vs[3]);
        uu[i] = qk512_reduce16_max_epu32_u(vu[0], vu[1], vu[2], vu[3]);
    }
    *smax = qk512_reduce16_max_epi32_fin(us[0], us[1], us[2], us[3]);
    *umax = qk512_reduce16_max_epu32_fin(uu[0], uu[1], uu[2], uu[3]);
}

/* Pass 1 over 16 groups with FP min/max (any signs): for the chunks where a
 * group has values of one sign only. */
static __mmask16 w4a_stats_fp(const float *const *p, size_t g, const qk_qmat *out, size_t G0, float *ids, float *ms, int *bad) {
    __m512 lo, hi;
    __mmask16 nan = 0;
    if (g == 32) {
        nan = minmax32x16(p, CHUNK, &lo, &hi);
    } else {
        __m512 vmn[CHUNK], vmx[CHUNK];
        for (size_t i = 0; i < CHUNK; i++) {
            __m512 v0 = _mm512_loadu_ps(p[i]), v1 = _mm512_loadu_ps(p[i] + 16);
            __m512 mn = _mm512_min_ps(v0, v1), mx = _mm512_max_ps(v0, v1);
            nan |= _mm512_cmp_ps_mask(v0, v1, _CMP_UNORD_Q);
            for (size_t k = 32; k < g; k += 32) {
                v0 = _mm512_loadu_ps(p[i] + k);
                v1 = _mm512_loadu_ps(p[i] + k + 16);
                mn = _mm512_min_ps(mn, _mm512_min_ps(v0, v1));
                mx = _mm512_max_ps(mx, _mm512_max_ps(v0, v1));
                nan |= _mm512_cmp_ps_mask(v0, v1, _CMP_UNORD_Q);
            }
            vmn[i] = mn;
            vmx[i] = mx;
        }
        lo = qk512_reduce16_min_ps(vmn);
        hi = qk512_reduce16_max_ps(vmx);
    }
    /* NaN seen by the unordered compares; ±Inf ends up in a min or a max */
    if (nan || _mm512_fpclass_ps_mask(lo, 0x18) | _mm512_fpclass_ps_mask(hi, 0x18)) return 0;
    w4a_zero_signs(p, CHUNK, g, &lo, &hi);
    return w4a_scales(lo, hi, CHUNK, 0, out, G0, ids, ms, g == 32, bad);
}

/* g = 32: twice the codes' argument, floored: floor(2·v) with
 * v = (x - m)·id, the reference's product (id2 = 2·id is exact, and
 * fl(d·id2) = 2·fl(d·id) unless id2 overflows, which w4a_scales sends to
 * w4a_general, or the product is subnormal, where both floors are 0); x - m
 * as a plain subtraction (fma(x, 1, -m), the same rounding on the multiply
 * pipes, needs a register copy per vector: ~1.5% slower, 16x4096 g = 32). The
 * code round-half-away(v) = floor(v + 1/2) = (floor(2v) + 1) >> 1 for v >= 0
 * (vpavgb with 0, 64 codes at a time, after the packs): the add of
 * 0.49999997 goes, one FP operation per 16 values fewer. The clamp (f16
 * scales) to [0, 15] is one to [0, 30] here. */
QK_INLINE __m512i w4a_codes2(__m512 x, __m512 m, __m512 id2, int clamp) {
    __m512 v = _mm512_mul_ps(_mm512_sub_ps(x, m), id2);
    if (clamp) v = _mm512_min_ps(_mm512_max_ps(v, _mm512_setzero_ps()), _mm512_set1_ps(30.0f));
    return _mm512_cvt_roundps_epi32(v, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
}

/* w4a_stats in two halves, for the driver's split pipeline (QD_W4A_SPLIT):
 * w4a_part reads the 16 groups and reduces them to the largest bits as
 * signed and unsigned int32 (the loads' latency), w4a_finish checks them and
 * computes and stores the scales (two dependent divisions). The driver
 * issues w4a_finish of a chunk a whole pass 2 after its w4a_part, so its
 * inputs are ready, and a whole pass 2 before the codes that need its
 * scales: the divisions' latency no longer holds up retirement while the
 * window fills. */
typedef struct { __m512i smax, umax; } w4a_part_t;
QK_INLINE w4a_part_t w4a_part(const float *const *p, size_t g) {
    w4a_part_t t;
    maxbits16(p, NULL, CHUNK, g, &t.smax, &t.umax);
    return t;
}
/* w4a_stats_fp of the chunk at base b (QD_W4A_AT: its pointers made here,
 * on this rare path only). */
static __attribute__((noinline)) __mmask16 w4a_stats_fp_at(const float *b, size_t g, const qk_qmat *out, size_t G0, float *ids,
                                                           float *ms, int *bad) {
    const float *p[CHUNK];
    qk512_ptrs_at(b, g, p);
    return w4a_stats_fp(p, g, out, G0, ids, ms, bad);
}
/* p, or with p NULL the chunk's base b (QD_W4A_AT) */
QK_INLINE __mmask16 w4a_finish_(w4a_part_t t, const float *const *p, const float *b, size_t g, const qk_qmat *out, size_t G0, float *ids,
                                float *ms, int *bad) {
    if (_mm512_cmpge_epi32_mask(t.smax, _mm512_set1_epi32(0x7f800000)) |
        _mm512_cmpge_epu32_mask(t.umax, _mm512_set1_epi32((int)0xff800000u)))
        return 0; /* NaN or Inf */
    if (_mm512_movepi32_mask(t.smax) | (__mmask16)~_mm512_movepi32_mask(t.umax))
        return p ? w4a_stats_fp(p, g, out, G0, ids, ms, bad) : w4a_stats_fp_at(b, g, out, G0, ids, ms, bad);
    return w4a_scales(_mm512_castsi512_ps(t.umax), _mm512_castsi512_ps(t.smax), CHUNK, 0, out, G0, ids, ms, g == 32, bad);
}
QK_INLINE __mmask16 w4a_finish(w4a_part_t t, const float *const *p, size_t g, const qk_qmat *out, size_t G0, float *ids, float *ms,
                               int *bad) {
    return w4a_finish_(t, p, NULL, g, out, G0, ids, ms, bad);
}

/* Pass 1 over 16 groups of a fixed g (a multiple of 32, <= 256): min, max,
 * the offsets and scales stored, 1/d in ids and the stored min in ms.
 * Returns 0 when a group holds NaN or Inf (nothing stored: the caller takes
 * the general path), else the groups to quantize. The min and max come from
 * the integer order of the bits (maxbits16) when every group holds values
 * of both signs, else from w4a_stats_fp. It is
 * w4a_part and w4a_finish back to back. */
QK_INLINE __mmask16 w4a_stats(const float *const *p, size_t g, const qk_qmat *out, size_t G0, float *ids, float *ms, int *bad) {
    return w4a_finish(w4a_part(p, g), p, g, out, G0, ids, ms, bad);
}

/* 128 values of one group, or of consecutive groups (g = 32, 64: n values
 * per group, pointers x[j], per-group parameters id[j], m[j]) -> 64 bytes of
 * 4-bit codes. w4s (asym 0): id = 2/scale, sym4_t and sym4_round; w4a: id =
 * 1/d (w4a_codes) or, when twice, 2/d (w4a_codes2, then (floor(2v) + 1) >> 1
 * = round-half-away(v) by vpavgb), offsets m. */
QK_INLINE __m512i run128(const float *const *x, const float *b, const float *id, const float *m, size_t n, int asym, int twice,
                         int clamp) {
    __m512i t[8];
    for (size_t v = 0; v < 8; v++) {
        size_t j = 16 * v / n;
        __m512 xv = _mm512_loadu_ps(b ? b + 16 * v : x[j] + 16 * v % n), iv = _mm512_set1_ps(id[j]);
        if (!asym) t[v] = sym4_t(xv, iv, clamp);
        else if (twice) t[v] = w4a_codes2(xv, _mm512_set1_ps(m[j]), iv, clamp);
        else t[v] = w4a_codes(xv, _mm512_set1_ps(m[j]), iv, clamp);
    }
    __m512i q0 = pack64_lanes(t[0], t[1], t[2], t[3]), q1 = pack64_lanes(t[4], t[5], t[6], t[7]);
    if (!asym) {
        q0 = sym4_round(q0);
        q1 = sym4_round(q1);
    } else if (twice) {
        q0 = _mm512_avg_epu8(q0, _mm512_setzero_si512());
        q1 = _mm512_avg_epu8(q1, _mm512_setzero_si512());
    }
    return nibbles128(q0, q1);
}

/* Pass 2 of the 4-bit formats (w4s: asym 0, w4a: offsets ms) over 16
 * groups of a fixed g, in runs of 128 values: 4 (g = 32) or 2 groups, or a
 * part of one. w4s ids hold 2/scale (sym_stats), w4a's at g = 32 2/stored(d)
 * (w4a_stats). */
QK_INLINE void w4_emit(const float *const *p, const float *b, size_t g, const float *ids, const float *ms, int asym, int clamp,
                       const qk_qmat *out, size_t G0, int nt) {
    const size_t pfd = qk_quant_pf_floats(out, g);
    uint8_t *dst = out->codes + G0 * g / 2;
    const int twice = asym && g == 32;
    if (g <= 64) {
        for (size_t i = 0; i < CHUNK; i += 128 / g) {
            for (size_t j = 0; j < 128 / g; j += 64 / g) prefetch_lines(qk512_at(p, b, i + j, g) + pfd);
            qk512_store_line(dst + i * g / 2, run128(p + i, b ? b + i * g : NULL, ids + i, asym ? ms + i : NULL, g, asym, twice, clamp), nt);
        }
    } else {
        for (size_t i = 0; i < CHUNK; i++)
            for (size_t k = 0; k < g; k += 128) {
                const float *x = qk512_at(p, b, i, g) + k;
                prefetch_lines(x + pfd);
                prefetch_lines(x + 64 + pfd);
                qk512_store_line(dst + (i * g + k) / 2, run128(NULL, x, ids + i, asym ? ms + i : NULL, 128, asym, 0, clamp), nt);
            }
    }
}

/* The split pipeline on chunks addressed from their base b (QD_W4A_AT):
 * loads at fixed offsets from one register, no pointer array. */
QK_INLINE w4a_part_t w4a_part_at(const float *b, size_t g) {
    w4a_part_t t;
    maxbits16(NULL, b, CHUNK, g, &t.smax, &t.umax);
    return t;
}
QK_INLINE __mmask16 w4a_finish_at(w4a_part_t t, const float *b, size_t g, const qk_qmat *out, size_t G0, float *ids, float *ms, int *bad) {
    return w4a_finish_(t, NULL, b, g, out, G0, ids, ms, bad);
}
QK_INLINE void w4a_emit_at(const float *b, size_t g, int clamp, const qk_qmat *out, size_t G0, const float *ids, const float *ms, int nt) {
    w4_emit(NULL, b, g, ids, ms, 1, clamp, out, G0, nt);
}

/* Pass 2 over 16 groups: the codes. */
QK_INLINE void w4a_emit(const float *const *p, size_t g, int clamp, const qk_qmat *out, size_t G0, const float *ids, const float *ms,
                       int nt) {
    w4_emit(p, NULL, g, ids, ms, 1, clamp, out, G0, nt);
}

/* Pass 2 over 16 groups: the codes. */
QK_INLINE void sym_emit(const float *const *p, const float *b, size_t g, int w8, int clamp, const qk_qmat *out, size_t G0,
                        const float *ids, int nt) {
    const float qmax = w8 ? 127.0f : 7.0f;
    const size_t pfd = qk_quant_pf_floats(out, g);
    if (w8) {
        int8_t *dst = (int8_t *)out->codes + G0 * g;
        if (g == 32) {
            for (size_t i = 0; i < CHUNK; i += 2) {
                __m512 id0 = _mm512_set1_ps(ids[i]), id1 = _mm512_set1_ps(ids[i + 1]);
                const float *x0 = qk512_at(p, b, i, 32), *x1 = qk512_at(p, b, i + 1, 32);
                prefetch_lines(x0 + pfd);
                __m512i q0 = sym_codes(_mm512_loadu_ps(x0), id0, qmax, clamp);
                __m512i q1 = sym_codes(_mm512_loadu_ps(x0 + 16), id0, qmax, clamp);
                __m512i q2 = sym_codes(_mm512_loadu_ps(x1), id1, qmax, clamp);
                __m512i q3 = sym_codes(_mm512_loadu_ps(x1 + 16), id1, qmax, clamp);
                qk512_store_line(dst + i * 32, pack64_epi8(q0, q1, q2, q3), nt);
            }
        } else {
            for (size_t i = 0; i < CHUNK; i++) {
                __m512 id = _mm512_set1_ps(ids[i]);
                const float *x = qk512_at(p, b, i, g);
                for (size_t k = 0; k < g; k += 64) {
                    prefetch_lines(x + k + pfd);
                    __m512i q0 = sym_codes(_mm512_loadu_ps(x + k), id, qmax, clamp);
                    __m512i q1 = sym_codes(_mm512_loadu_ps(x + k + 16), id, qmax, clamp);
                    __m512i q2 = sym_codes(_mm512_loadu_ps(x + k + 32), id, qmax, clamp);
                    __m512i q3 = sym_codes(_mm512_loadu_ps(x + k + 48), id, qmax, clamp);
                    qk512_store_line(dst + i * g + k, pack64_epi8(q0, q1, q2, q3), nt);
                }
            }
        }
    } else {
        if (_mm512_fpclass_ps_mask(_mm512_loadu_ps(ids), 0x18)) { /* ids: 2/scale (sym_stats); it overflows (a subnormal scale) */
            int bad = 0;
            const float *q[CHUNK];
            if (b) qk512_ptrs_at(b, g, q); /* p is NULL with a base b */
            sym_partial(b ? q : p, g, 0, out, G0, ids, (__mmask16)0xffff, &bad);
            return;
        }
        w4_emit(p, b, g, ids, NULL, 0, clamp, out, G0, nt);
    }
}

/* ---- q4_0, q8_0: 32-value blocks, fp16 d at the head of each block ---- */

/* The fp16 d of 16 blocks into hs; flags an overflowed d among the live ones.
 * (They are stored with the codes, block by block, so the output is written
 * in order: on DRAM-resident rows that is faster than two passes over it.) */
static void block_heads(__mmask16 live, __m512 d, uint16_t *hs, int *bad) {
    __m256i h = _mm512_cvtps_ph(d, 0);
    if (_mm256_mask_cmpeq_epi16_mask(live, _mm256_and_si256(h, _mm256_set1_epi16(0x7c00)), _mm256_set1_epi16(0x7c00)))
        *bad |= QK_ROW_RANGE;
    _mm256_storeu_si256((__m256i *)hs, h);
}

/* q4_0's d: the first value of largest magnitude in the block, with its sign
 * (+0 when all are zero), from the block's absmax A and two values mx, mn
 * (the largest bits as signed and as unsigned int32) that equal +A exactly
 * when +A is in the block and -A exactly when -A is: +A when only mx = A,
 * -A when only mn = -A. Both signs at A (rare) take the first one by a search. */
QK_INLINE __m512 q4_0_signed_max(__m512i amax, __m512 mx, __m512 mn, __mmask16 live, const float *const *p, const float *b) {
    const __m512i ab = _mm512_set1_epi32(0x7fffffff);
    __m512 a = _mm512_castsi512_ps(amax), na = _mm512_sub_ps(_mm512_setzero_ps(), a);
    __mmask16 pos = _mm512_cmp_ps_mask(mx, a, _CMP_EQ_OQ), neg = _mm512_cmp_ps_mask(mn, na, _CMP_EQ_OQ);
    __mmask16 nz = _mm512_cmp_ps_mask(a, _mm512_setzero_ps(), _CMP_GT_OQ);
    __m512 v = _mm512_maskz_mov_ps(nz, _mm512_mask_blend_ps(pos, na, a));
    __mmask16 both = (__mmask16)(pos & neg & nz & live);
    if (both) {
        float mv[CHUNK];
        uint32_t amb[CHUNK];
        _mm512_storeu_ps(mv, v);
        _mm512_storeu_si512(amb, amax);
        for (size_t i = 0; i < CHUNK; i++)
            if ((both >> i) & 1) {
                __m512i t = _mm512_set1_epi32((int)amb[i]);
                const float *x = qk512_at(p, b, i, 32);
                uint32_t m = _mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_castps_si512(_mm512_loadu_ps(x)), ab), t) |
                             (uint32_t)_mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_castps_si512(_mm512_loadu_ps(x + 16)), ab), t)
                                 << 16;
                mv[i] = x[__builtin_ctz(m)];
            }
        v = _mm512_loadu_ps(mv);
    }
    return v;
}

/* Pass 1 over n <= 16 blocks in two halves (as w4a_part/w4a_finish: the
 * driver finishes a chunk a whole pass 2 after reading it, and a whole pass
 * 2 before its codes). block_part reads the blocks: q4_0 the largest bits
 * as signed and as unsigned int32 (maxbits16: the absmax is the larger
 * magnitude of the two whatever the signs (for a group of one sign both are
 * its extreme), NaN/Inf give >= 0x7f800000; +A is in the block when the
 * signed max is A, -A when the unsigned max is -A; two transposed
 * reductions, on integer pipes), q8_0 the absmax bits. For q8_0 (and w8s,
 * w4s and the activation quantizer, qk512_absbits_max16) one vrangeps per 32
 * values (the larger magnitude, sign cleared) in place of two ands and a max
 * took 0.96-1.01 of the time from L2 (medians of tools/ab.py --rounds 5,
 * 16x4096 (actquant 1x4096), g = 32 and 128, 2026-12-07), and it is not
 * exact: given a quiet NaN and a number it returns the number, so the NaN
 * would go unreported. Nor for q4_0 (2026-12-07, the same A/B, 16x4096 and
 * 1024x4096, warm and cold) in letting the loads do the first level's data
 * movement: each vector holding 8 values of one block in its lower half
 * and 8 of block i + 4 in its upper half (a load, then a merge-masked load
 * of the upper half), so three max per key and pair of blocks take each
 * block to 8 lanes and the whole reduction is 45 ops per key, not 61:
 * 1.12x the time from L2 (0.99-1.03 cold), as the 64 loads per chunk in
 * place of 32, half of them straddling two lines and half merge-masked, cost
 * the load ports more than the 32 ops saved. */
typedef struct { __m512i a, b; } block_part_t;
QK_INLINE block_part_t block_part_of(const float *const *p, const float *b, size_t n, int q4) {
    const __m512i ab = _mm512_set1_epi32(0x7fffffff);
    block_part_t t;
    if (q4) {
        maxbits16(p, b, n, 32, &t.a, &t.b);
    } else {
        __m512i am[CHUNK];
#pragma GCC unroll 16
        for (size_t i = 0; i < CHUNK; i++) {
            const float *x = qk512_at(p, b, i, 32);
            __m512 v0 = i < n ? _mm512_loadu_ps(x) : _mm512_setzero_ps(), v1 = i < n ? _mm512_loadu_ps(x + 16) : _mm512_setzero_ps();
            am[i] = _mm512_max_epu32(_mm512_and_si512(_mm512_castps_si512(v0), ab), _mm512_and_si512(_mm512_castps_si512(v1), ab));
        }
        t.a = qk512_reduce16_max_epu32(am);
        t.b = t.a;
    }
    return t;
}

/* block_finish: fp16 d in hs, 1/d in ids. Returns the blocks to quantize.
 * q4_0's d = v/-8 as v·-0.125: the same exact quotient, rounded once. */
QK_INLINE __mmask16 block_finish_of(block_part_t t, const float *const *p, const float *b, size_t n, int q4, float *ids, uint16_t *hs,
                                    int *bad) {
    const __m512i ab = _mm512_set1_epi32(0x7fffffff);
    __m512i amax = q4 ? _mm512_max_epu32(_mm512_and_si512(t.a, ab), _mm512_and_si512(t.b, ab)) : t.a;
    __mmask16 live = qk512_mask16(n);
    __mmask16 nonfinite = _mm512_mask_cmpge_epu32_mask(live, amax, _mm512_set1_epi32(0x7f800000));
    if (nonfinite) *bad |= QK_ROW_NONFINITE;
    live &= (__mmask16)~nonfinite;
    __m512 d;
    if (q4)
        d = _mm512_mul_ps(q4_0_signed_max(amax, _mm512_castsi512_ps(t.a), _mm512_castsi512_ps(t.b), live, p, b), _mm512_set1_ps(-0.125f));
    else d = _mm512_div_ps(_mm512_castsi512_ps(amax), _mm512_set1_ps(127.0f));
    _mm512_storeu_ps(ids, qk512_inv_scale(d));
    block_heads(live, d, hs, bad);
    return live;
}

/* q4_0 codes of one block: min(15, trunc(x·id + 8.5)), element j low nibble, j+16 high. */
QK_INLINE void q4_0_block(const float *x, __m512 id, uint8_t *dst) {
    const __m512 half8 = _mm512_set1_ps(8.5f);
    const __m512i fifteen = _mm512_set1_epi32(15);
    __m512i a = _mm512_cvttps_epi32(_mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(x), id), half8));
    __m512i b = _mm512_cvttps_epi32(_mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(x + 16), id), half8));
    __m512i c = _mm512_or_si512(_mm512_min_epi32(a, fifteen), _mm512_slli_epi32(_mm512_min_epi32(b, fifteen), 4));
    _mm_storeu_si128((__m128i *)dst, _mm512_cvtepi32_epi8(c));
}

/* q4_0 codes of two blocks (x0, x1) with their heads, at dst: the 64 codes
 * 0..16 packed to bytes in the packs' lane order (128-bit lane k: codes
 * 4k..4k+3 of the four 16-value halves), clamped to 15; a 28-bit right shift
 * of each qword puts code j+16 in the high nibble of code j's byte, and one
 * vpermt2w lays out both blocks' 16 bytes after their heads. */
QK_INLINE void q4_0_pair(const float *x0, const float *x1, __m512 id0, __m512 id1, uint8_t *dst, const uint16_t *hs, int last) {
    const __m512 half8 = _mm512_set1_ps(8.5f);
    __m512i a = _mm512_cvttps_epi32(_mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(x0), id0), half8));
    __m512i b = _mm512_cvttps_epi32(_mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(x0 + 16), id0), half8));
    __m512i c = _mm512_cvttps_epi32(_mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(x1), id1), half8));
    __m512i d = _mm512_cvttps_epi32(_mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(x1 + 16), id1), half8));
    __m512i q = _mm512_min_epu8(_mm512_packus_epi16(_mm512_packs_epi32(a, b), _mm512_packs_epi32(c, d)), _mm512_set1_epi8(15));
    q = _mm512_or_si512(q, _mm512_srli_epi64(q, 28));
    /* one vpermt2w lays out both blocks, 16-bit words: d0, block 0's 16 bytes, d1, block 1's */
    uint32_t h2;
    memcpy(&h2, hs, sizeof h2);
    const __m512i idx = _mm512_set_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 29, 28, 21, 20, 13, 12, 5, 4, 33, 25, 24, 17, 16, 9,
                                         8, 1, 0, 32);
    q = _mm512_permutex2var_epi16(q, idx, _mm512_set1_epi32((int)h2));
    if (last) _mm512_mask_storeu_epi8(dst, (__mmask64)0xfffffffffull, q); /* 2 · 18 bytes */
    else _mm512_storeu_si512(dst, q); /* 2 · 18 bytes and 28 the next pair overwrites */
}

/* Pass 2 over n <= 16 blocks.
 * Where a q4_0 chunk's time goes (16 blocks in L1; a private harness timed
 * blocks_at's passes in loops of their own on the Zen 5 host, 2026-12-06:
 * directions, not qkbench figures): pass 1 about 32 cycles (two exact
 * transposed reductions, 32 + 90 integer ops, which issue on all four
 * vector pipes), the finish about 10, this pass about 45: per pair of blocks
 * 4 mul, 4 add, 4 convert, 3 pack, min, shift, or and the permute. The
 * multiplies go to two pipes, add, convert and shift to the other two, the
 * packs and the permute to two that overlap both, and 32 more ops per chunk
 * of any of those kinds cost it 5-9 cycles, so only fewer ops would help.
 * Tried without gain: the + 8.5 as an FMA on the multiply pipes (slower),
 * prefetching 8 KiB ahead for inputs in cache and one compare per chunk in
 * place of the finish's NaN/Inf and fp16-overflow checks (qkbench A/B
 * 0.97-1.02 of the time), and no prefetch (up to 1.18 once past L2). */
QK_INLINE void block_emit_of(const float *const *p, const float *b, size_t n, int q4, uint8_t *codes, size_t B0, const float *ids,
                             const uint16_t *hs, __mmask16 live) {
    if (q4) {
        size_t i = 0;
        if (live == 0xffff) /* pairs of blocks */
            for (; i < CHUNK; i += 2) {
                prefetch_lines(qk512_at(p, b, i, 32) + QK_QPF_FAR(32));
                q4_0_pair(qk512_at(p, b, i, 32), qk512_at(p, b, i + 1, 32), _mm512_set1_ps(ids[i]), _mm512_set1_ps(ids[i + 1]),
                          codes + (B0 + i) * QK_Q4_0_BYTES, hs + i, i + 2 == CHUNK);
            }
        for (; i < n; i++) {
            if (!(i & 1)) prefetch_lines(qk512_at(p, b, i, 32) + QK_QPF_FAR(32));
            if ((live >> i) & 1) {
                qk_wr16(codes + (B0 + i) * QK_Q4_0_BYTES, hs[i]);
                q4_0_block(qk512_at(p, b, i, 32), _mm512_set1_ps(ids[i]), codes + (B0 + i) * QK_Q4_0_BYTES + 2);
            }
        }
        return;
    }
    size_t i = 0;
    if (live == 0xffff) /* pairs of blocks: 64 codes packed at once */
        for (; i < CHUNK; i += 2) {
            __m512 id0 = _mm512_set1_ps(ids[i]), id1 = _mm512_set1_ps(ids[i + 1]);
            const float *x0 = qk512_at(p, b, i, 32), *x1 = qk512_at(p, b, i + 1, 32);
            prefetch_lines(x0 + QK_QPF_FAR(32));
            __m512i q = pack64_epi8(qk512_cvt_round_away(_mm512_mul_ps(_mm512_loadu_ps(x0), id0)),
                                    qk512_cvt_round_away(_mm512_mul_ps(_mm512_loadu_ps(x0 + 16), id0)),
                                    qk512_cvt_round_away(_mm512_mul_ps(_mm512_loadu_ps(x1), id1)),
                                    qk512_cvt_round_away(_mm512_mul_ps(_mm512_loadu_ps(x1 + 16), id1)));
            uint8_t *dst = codes + (B0 + i) * QK_Q8_0_BYTES + 2;
            qk_wr16(dst - 2, hs[i]);
            _mm256_storeu_si256((__m256i *)dst, _mm512_castsi512_si256(q));
            qk_wr16(dst + QK_Q8_0_BYTES - 2, hs[i + 1]);
            _mm256_storeu_si256((__m256i *)(dst + QK_Q8_0_BYTES), _mm512_extracti64x4_epi64(q, 1));
        }
    for (; i < n; i++) {
        if (!((live >> i) & 1)) continue;
        __m512 id = _mm512_set1_ps(ids[i]);
        uint8_t *dst = codes + (B0 + i) * QK_Q8_0_BYTES + 2;
        qk_wr16(dst - 2, hs[i]);
        const float *x = qk512_at(p, b, i, 32);
        __m512i lo = qk512_cvt_round_away(_mm512_mul_ps(_mm512_loadu_ps(x), id));
        __m512i hi = qk512_cvt_round_away(_mm512_mul_ps(_mm512_loadu_ps(x + 16), id));
        _mm_storeu_si128((__m128i *)dst, _mm512_cvtepi32_epi8(lo));
        _mm_storeu_si128((__m128i *)(dst + 16), _mm512_cvtepi32_epi8(hi));
    }
}

/* The driver's two ways of naming a chunk's blocks: its pointers (p, any n),
 * or the base of 16 contiguous blocks (QD_BLOCK_AT). */
QK_INLINE block_part_t block_part(const float *const *p, size_t n, int q4) { return block_part_of(p, NULL, n, q4); }
QK_INLINE __mmask16 block_finish(block_part_t t, const float *const *p, size_t n, int q4, float *ids, uint16_t *hs, int *bad) {
    return block_finish_of(t, p, NULL, n, q4, ids, hs, bad);
}
QK_INLINE void block_emit(const float *const *p, size_t n, int q4, uint8_t *codes, size_t B0, const float *ids, const uint16_t *hs,
                          __mmask16 live) {
    block_emit_of(p, NULL, n, q4, codes, B0, ids, hs, live);
}
QK_INLINE __mmask16 block_stats_at(const float *b, int q4, float *ids, uint16_t *hs, int *bad) {
    return block_finish_of(block_part_of(NULL, b, CHUNK, q4), NULL, b, CHUNK, q4, ids, hs, bad);
}
QK_INLINE void block_emit_at(const float *b, int q4, uint8_t *dst, const float *ids, const uint16_t *hs, __mmask16 live) {
    block_emit_of(NULL, b, CHUNK, q4, dst, 0, ids, hs, live);
}

/* ---- long groups (g > 256, a multiple of 64): one group at a time ---- */

/* The long-group stream prefetches the 4 lines 8 KiB ahead of those it
 * loads (per channel 1024x4096 from DRAM: none 17-22 GB/s, to L2 19-24, 4-32
 * KiB to L1 30-36, 8 KiB best by a little; the machine was noisy). */
#define LONG_PF 2048
QK_INLINE void long_prefetch(const float *p) {
    for (size_t l = 0; l < 64; l += 16) _mm_prefetch((const char *)(p + l), _MM_HINT_T0);
}

/* Codes of cur (when codes) and the absmax bits of nxt (when stats) in one loop. */
QK_INLINE uint32_t sym_fused(const float *cur, const float *nxt, size_t g, int codes, int stats, int w8, int clamp, float idf,
                             uint8_t *dst, int nt) {
    const __m512i ab = _mm512_set1_epi32(0x7fffffff);
    const float qmax = w8 ? 127.0f : 7.0f;
    const __m512 id = _mm512_set1_ps(idf), id2 = _mm512_set1_ps(idf + idf);
    const int four = !w8 && __builtin_isfinite(idf + idf); /* w4s by sym4_t, as sym_emit */
    __m512i m0 = _mm512_setzero_si512(), m1 = m0;
    for (size_t k = 0; k < g; k += 64) {
        if (stats) {
            long_prefetch(nxt + k + LONG_PF);
            m0 = _mm512_max_epu32(m0, _mm512_and_si512(_mm512_castps_si512(_mm512_loadu_ps(nxt + k)), ab));
            m1 = _mm512_max_epu32(m1, _mm512_and_si512(_mm512_castps_si512(_mm512_loadu_ps(nxt + k + 16)), ab));
            m0 = _mm512_max_epu32(m0, _mm512_and_si512(_mm512_castps_si512(_mm512_loadu_ps(nxt + k + 32)), ab));
            m1 = _mm512_max_epu32(m1, _mm512_and_si512(_mm512_castps_si512(_mm512_loadu_ps(nxt + k + 48)), ab));
        }
        if (codes && four) {
            __m512i a = sym4_t(_mm512_loadu_ps(cur + k), id2, clamp), b = sym4_t(_mm512_loadu_ps(cur + k + 16), id2, clamp);
            __m512i c = sym4_t(_mm512_loadu_ps(cur + k + 32), id2, clamp), d = sym4_t(_mm512_loadu_ps(cur + k + 48), id2, clamp);
            st32(dst + k / 2, sym4_nibbles(a, b, c, d), nt);
        } else if (codes) {
            __m512i a = sym_codes(_mm512_loadu_ps(cur + k), id, qmax, clamp);
            __m512i b = sym_codes(_mm512_loadu_ps(cur + k + 16), id, qmax, clamp);
            __m512i c = sym_codes(_mm512_loadu_ps(cur + k + 32), id, qmax, clamp);
            __m512i d = sym_codes(_mm512_loadu_ps(cur + k + 48), id, qmax, clamp);
            if (w8) qk512_store_line(dst + k, pack64_epi8(a, b, c, d), nt);
            else st32(dst + k / 2, nibbles_of_bytes(pack64_epi8(a, b, c, d), 1), nt);
        }
    }
    return stats ? (uint32_t)_mm512_reduce_max_epu32(_mm512_max_epu32(m0, m1)) : 0;
}

/* Min and max of a long group with FP min/max (the groups of one sign:
 * w4a_fused's integer order needs both). Returns 1 on NaN/Inf. */
static int w4a_minmax_fp(const float *x, size_t g, float *mn_out, float *mx_out) {
    __m512 mn = _mm512_set1_ps(INFINITY), mx = _mm512_set1_ps(-INFINITY);
    __mmask16 nan = 0;
    for (size_t k = 0; k < g; k += 16) {
        __m512 v = _mm512_loadu_ps(x + k);
        mn = _mm512_min_ps(mn, v);
        mx = _mm512_max_ps(mx, v);
        nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    }
    *mn_out = _mm512_reduce_min_ps(mn);
    *mx_out = _mm512_reduce_max_ps(mx);
    return nan || isinf(*mn_out) || isinf(*mx_out);
}

/* Codes of cur (when codes) and the min and max of nxt (when stats) in one
 * loop; returns 1 when nxt holds NaN or Inf. The min and max come from the integer order of the bits (as
 * maxbits16): the largest bits as signed int32 are the largest float when
 * the group holds a value with the sign bit clear, the largest as unsigned
 * the smallest float when it holds one with the sign bit set; integer max
 * runs on all four vector pipes, where FP min/max share two with the codes'
 * sub, add and convert. qkbench A/B against FP min/max (two sets of 3
 * rounds, medians): 16x4096 per channel from L2 0.83 and 0.89 of the time,
 * 1024x4096 from DRAM 1.00 and 0.98. Groups of one sign take
 * w4a_minmax_fp. */
QK_INLINE int w4a_fused(const float *cur, const float *nxt, size_t g, int codes, int stats, int clamp, float mf, float idf, uint8_t *dst,
                        int nt, float *mn_out, float *mx_out) {
    const __m512 id = _mm512_set1_ps(idf), m = _mm512_set1_ps(mf);
    __m512i smax = _mm512_set1_epi32(INT32_MIN), umax = _mm512_setzero_si512();
    for (size_t k = 0; k < g; k += 64) {
        if (stats) {
            long_prefetch(nxt + k + LONG_PF);
            __m512i v0 = _mm512_castps_si512(_mm512_loadu_ps(nxt + k)), v1 = _mm512_castps_si512(_mm512_loadu_ps(nxt + k + 16));
            __m512i v2 = _mm512_castps_si512(_mm512_loadu_ps(nxt + k + 32)), v3 = _mm512_castps_si512(_mm512_loadu_ps(nxt + k + 48));
            smax = _mm512_max_epi32(smax, _mm512_max_epi32(_mm512_max_epi32(v0, v1), _mm512_max_epi32(v2, v3)));
            umax = _mm512_max_epu32(umax, _mm512_max_epu32(_mm512_max_epu32(v0, v1), _mm512_max_epu32(v2, v3)));
        }
        if (codes) {
            __m512i a = w4a_codes(_mm512_loadu_ps(cur + k), m, id, clamp);
            __m512i b = w4a_codes(_mm512_loadu_ps(cur + k + 16), m, id, clamp);
            __m512i c = w4a_codes(_mm512_loadu_ps(cur + k + 32), m, id, clamp);
            __m512i d = w4a_codes(_mm512_loadu_ps(cur + k + 48), m, id, clamp);
            st32(dst + k / 2, nibbles_of_bytes(pack64_epi8(a, b, c, d), 0), nt);
        }
    }
    if (!stats) return 0;
    int32_t hi = _mm512_reduce_max_epi32(smax);
    uint32_t lo = _mm512_reduce_max_epu32(umax);
    if (hi >= 0x7f800000 || lo >= 0xff800000u) return 1; /* NaN or Inf */
    if (hi < 0 || lo < 0x80000000u) return w4a_minmax_fp(nxt, g, mn_out, mx_out);
    memcpy(mx_out, &hi, sizeof *mx_out);
    memcpy(mn_out, &lo, sizeof *mn_out);
    return 0;
}

typedef __mmask16 qd_mask;
#define QD_GROUP_PTRS qk512_group_ptrs
#define QD_W4A_CLAMP 1
/* 16x4096 warm: w8s g32 1.15-1.19x, w4s g32 1.07x (the avx2 tier: g128 3% slower, so 0 there) */
#define QD_SYM_PTRS_AHEAD 1
#define QD_W4A_SPLIT 1
#define QD_W4A_AT 1
#define QD_PTRS_AT qk512_ptrs_at
#define QD_BLOCK_SPLIT 1
#define QD_BLOCK_AT 1
#define QD_AT_BASE 1
#define QD_WEIGHTS
#define QD_TIER avx512
#include "x86/quant_driver.h"

