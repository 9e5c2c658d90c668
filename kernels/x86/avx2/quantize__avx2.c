/* Weight quantization, AVX2 + FMA + F16C: bit-exact with kernels/ref/quantize_scalar.c.
 *
 * Groups are taken eight at a time in row-major order across rows (scales
 * and codes of consecutive groups are contiguous): a first pass reduces each
 * group's extremes to one vector, the eight vectors are reduced and
 * transposed at once, and the eight scales, their f16 rounding and their
 * inverses are computed in one vector; a second pass (data now in L1) writes
 * the codes. For g = 32/64/128/256 (and the 32-value blocks of q4_0/q8_0) the
 * first pass of the next eight groups is issued before the second pass of the
 * current ones, so the out-of-order core hides the reductions' and the
 * divisions' latency behind the code arithmetic (as the avx512 tier). A
 * longer g that is a multiple of 64 (per channel, g = K) goes one group at
 * a time, the codes of a group computed in the loop that reads the next
 * one. Any other g, and a chunk holding NaN/Inf, takes the general path: codes 32
 * values at a time, a group whose length is not a multiple of 32 (g = K only)
 * finishing through a zero-padded 32-value buffer. The chunk loops are
 * x86/quant_driver.h, shared with the avx512 tier; this file supplies the passes. */
#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
#error "this file needs the avx2 tier's flags"
#endif
#include "x86/avx2/avx2_common.h"
#include "x86/quant_prefetch.h"

/* Prefetch the two lines 16 KiB past x (32 floats): the rows stream from
 * DRAM when they are larger than the caches, and the hardware prefetcher
 * alone falls behind a loop that computes between its loads. Issued by the
 * code pass, so the prefetches are spread over the arithmetic. */
static inline void prefetch32_ahead(const float *x) {
    _mm_prefetch((const char *)(x + 4096), _MM_HINT_T0);
    _mm_prefetch((const char *)(x + 4096 + 16), _MM_HINT_T0);
}

/* Min and max of one group of finite values, and the |x| bits max. */
static inline void group_minmax(const float *x, size_t g, __m256i *mn, __m256i *mx, __m256i *ab) {
    __m256 lo = _mm256_set1_ps(x[0]), hi = lo;
    __m256i a = _mm256_setzero_si256();
    size_t i = 0;
    for (; i + 8 <= g; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        lo = _mm256_min_ps(lo, v);
        hi = _mm256_max_ps(hi, v);
        a = _mm256_max_epi32(a, qk_avx2_abs_bits(v));
    }
    if (i < g) {
        __m256 v = qk_avx2_load_partial(x + i, g - i, _mm256_set1_ps(x[0]));
        lo = _mm256_min_ps(lo, v);
        hi = _mm256_max_ps(hi, v);
        a = _mm256_max_epi32(a, qk_avx2_abs_bits(v));
    }
    *mn = _mm256_castps_si256(lo);
    *mx = _mm256_castps_si256(hi);
    *ab = a;
}

/* Eight scales -> storage; returns the stored values and flags f16 overflow
 * among the first n. */
static inline __m256 store_scales8(void *p, size_t i, qk_scale_type st, __m256 s, size_t n, int *bad) {
    if (st == QK_SCALE_F16) {
        __m128i h = _mm256_cvtps_ph(s, _MM_FROUND_TO_NEAREST_INT);
        __m128i inf = _mm_cmpeq_epi16(_mm_and_si128(h, _mm_set1_epi16(0x7c00)), _mm_set1_epi16(0x7c00));
        if (_mm_movemask_epi8(inf) & ((1 << (2 * n)) - 1)) *bad |= QK_ROW_RANGE;
        if (n == 8) _mm_storeu_si128((__m128i *)((uint16_t *)p + i), h);
        else {
            uint16_t t[8];
            _mm_storeu_si128((__m128i *)t, h);
            memcpy((uint16_t *)p + i, t, n * 2);
        }
        return _mm256_cvtph_ps(h);
    }
    if (n == 8) _mm256_storeu_ps((float *)p + i, s);
    else {
        float t[8];
        _mm256_storeu_ps(t, s);
        memcpy((float *)p + i, t, n * 4);
    }
    return s;
}

static inline __m256 bcast_lane(__m256 v, size_t b) { return _mm256_permutevar8x32_ps(v, _mm256_set1_epi32((int)b)); }

/* ---- 32 values -> codes ----
 * x·id stays inside int32 (|x·id| <= 1.5·qmax even for a subnormal f16 scale;
 * w4a's f16-rounded offset adds at most 16·2^24), so the clamp is done on the
 * packed int8 codes: the reference's clamp(round(v)), since the saturating
 * packs keep out-of-range values on the right side. */

static inline void w8s_chunk(const float *x, __m256 id, uint8_t *dst) {
    __m256i b = _mm256_max_epi8(qk_avx2_round_codes32(x, id), _mm256_set1_epi8(-127));
    _mm256_storeu_si256((__m256i *)dst, b);
}

static inline void w4s_chunk(const float *x, __m256 id, uint8_t *dst) {
    __m256i b = _mm256_min_epi8(_mm256_max_epi8(qk_avx2_round_codes32(x, id), _mm256_set1_epi8(-7)), _mm256_set1_epi8(7));
    _mm_storeu_si128((__m128i *)dst, qk_avx2_pack_nibbles(_mm256_add_epi8(b, _mm256_set1_epi8(8))));
}

static inline __m256i w4a_q(const float *x, __m256 m, __m256 id) {
    return qk_avx2_round_away_epi32(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x), m), id));
}

static inline void w4a_chunk(const float *x, __m256 m, __m256 id, uint8_t *dst) {
    __m256i b = qk_avx2_pack_i32x4_i8(w4a_q(x, m, id), w4a_q(x + 8, m, id), w4a_q(x + 16, m, id), w4a_q(x + 24, m, id));
    b = _mm256_min_epi8(_mm256_max_epi8(b, _mm256_setzero_si256()), _mm256_set1_epi8(15));
    _mm_storeu_si128((__m128i *)dst, qk_avx2_pack_nibbles(b));
}

enum { FMT_W4S, FMT_W8S, FMT_W4A };

/* Codes of one group: 32 values at a time, the rest through a padded buffer. */
static inline void group_codes(int fmt, const float *x, size_t g, __m256 m, __m256 id, uint8_t *dst) {
    size_t i = 0;
    for (; i + 32 <= g; i += 32) {
        prefetch32_ahead(x + i);
        if (fmt == FMT_W8S) w8s_chunk(x + i, id, dst + i);
        else if (fmt == FMT_W4S) w4s_chunk(x + i, id, dst + i / 2);
        else w4a_chunk(x + i, m, id, dst + i / 2);
    }
    if (i < g) {
        float buf[32] = {0};
        uint8_t out[32];
        memcpy(buf, x + i, (g - i) * sizeof(float));
        if (fmt == FMT_W8S) {
            w8s_chunk(buf, id, out);
            memcpy(dst + i, out, g - i);
        } else {
            if (fmt == FMT_W4S) w4s_chunk(buf, id, out);
            else w4a_chunk(buf, m, id, out);
            memcpy(dst + i / 2, out, (g - i) / 2);
        }
    }
}

#define QK_INLINE static inline __attribute__((always_inline))

enum { CHUNK = 8 };

/* The second passes of the fixed-g paths prefetch pfd floats past the lines
 * they read (QK_QPF_FAR, x86/quant_prefetch.h). */
QK_INLINE void prefetch_ahead(const float *p, size_t pfd, size_t nfloats) {
    for (size_t l = 0; l < nfloats; l += 16) _mm_prefetch((const char *)(p + l + pfd), _MM_HINT_T0);
}

QK_INLINE void st32(void *p, __m256i v, int nt) {
    if (nt) _mm256_stream_si256((__m256i *)p, v);
    else _mm256_storeu_si256((__m256i *)p, v);
}

/* 64 signed codes (elements 0-31 in a, 32-63 in b, int8 in order) -> 32
 * bytes of nibbles (element 2i low, 2i+1 high), plus off (0 or 8) to each:
 * one vpmaddubsw per 32 codes makes q[2i] + 16·q[2i+1]. */
QK_INLINE __m256i nibbles64(__m256i a, __m256i b, int off) {
    const __m256i w = _mm256_set1_epi16(0x1001);
    __m256i na = _mm256_maddubs_epi16(w, a), nb = _mm256_maddubs_epi16(w, b);
    if (off) {
        na = _mm256_add_epi16(na, _mm256_set1_epi16(0x88));
        nb = _mm256_add_epi16(nb, _mm256_set1_epi16(0x88));
    }
    return _mm256_permute4x64_epi64(_mm256_packus_epi16(na, nb), 0xd8);
}

/* ---- w4s, w8s ---- */

/* Codes of the live groups among CHUNK (their scales already stored) one by one. */
static void sym_partial(const float *const *p, size_t g, int w8, const qk_qmat *out, size_t G0, const float *ids, int live, int *bad) {
    (void)bad;
    size_t bpg = w8 ? g : g / 2;
    for (size_t i = 0; i < CHUNK; i++)
        if (live >> i & 1)
            group_codes(w8 ? FMT_W8S : FMT_W4S, p[i], g, _mm256_setzero_ps(), _mm256_set1_ps(ids[i]), out->codes + (G0 + i) * bpg);
}

/* Scales of n <= 8 groups from their absmax bits; inverse scales in ids.
 * Returns the groups to quantize (finite ones). */
QK_INLINE int sym_scales(__m256i amax, size_t n, float qmaxf, const qk_qmat *out, size_t G0, float *ids, int *bad) {
    int nonfinite = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(amax, _mm256_set1_epi32(0x7f7fffff)))) & ((1 << n) - 1);
    if (nonfinite) *bad |= QK_ROW_NONFINITE;
    __m256 s = _mm256_div_ps(_mm256_castsi256_ps(amax), _mm256_set1_ps(qmaxf));
    _mm256_storeu_ps(ids, qk_avx2_inv_scale(store_scales8(out->scales, G0, out->scale_type, s, n, bad)));
    return ((1 << n) - 1) & ~nonfinite;
}

/* Any g, n <= 8 groups. */
static void sym_general(const float *const *p, size_t n, size_t g, int w8, const qk_qmat *out, size_t G0, int *bad) {
    __m256i am[CHUNK];
    float ids[CHUNK];
    for (size_t i = 0; i < CHUNK; i++) am[i] = i < n ? qk_avx2_absmax_bits(p[i], g) : _mm256_setzero_si256();
    int live = sym_scales(qk_avx2_reduce8_max_epi32(am), n, w8 ? 127.0f : 7.0f, out, G0, ids, bad);
    sym_partial(p, g, w8, out, G0, ids, live, bad); /* live < 1 << n */
}

/* Pass 1 over 8 groups of a fixed g (a multiple of 32, <= 256). */
QK_INLINE int sym_stats(const float *const *p, size_t g, float qmaxf, const qk_qmat *out, size_t G0, float *ids, int *bad) {
    __m256i am[CHUNK];
    qk_avx2_absmax_bits8(p, g, am);
    return sym_scales(qk_avx2_reduce8_max_epi32(am), CHUNK, qmaxf, out, G0, ids, bad);
}

/* 32 codes of x·id as int8, clamped to ±qmax when clamp (f16 scales: with
 * f32 scales |x·id| stays within a rounding error of qmax, so the clamp of
 * the reference never acts and the saturating packs cover -128 nowhere). */
QK_INLINE __m256i sym32(const float *x, __m256 id, int w8, int clamp) {
    __m256i b = qk_avx2_round_codes32(x, id);
    if (clamp) {
        if (w8) b = _mm256_max_epi8(b, _mm256_set1_epi8(-127));
        else b = _mm256_min_epi8(_mm256_max_epi8(b, _mm256_set1_epi8(-7)), _mm256_set1_epi8(7));
    }
    return b;
}

/* w4s: code + 8 of 32 values, from t = trunc(x·2id) as int8 (the avx512
 * tier's sym4_t and sym4_nibbles give the reasoning): code + 8 =
 * avg(t + 16 - [t < 0], 0). The clamp (f16 scales) to [-7, 7] is one of t
 * to [-14, 14]. */
QK_INLINE __m256i sym4_32(const float *x, __m256 id2, int clamp) {
    const __m256i z = _mm256_setzero_si256();
    __m256i t = qk_avx2_pack_i32x4_i8(_mm256_cvttps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x), id2)),
                                      _mm256_cvttps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8), id2)),
                                      _mm256_cvttps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 16), id2)),
                                      _mm256_cvttps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 24), id2)));
    if (clamp) t = _mm256_min_epi8(_mm256_max_epi8(t, _mm256_set1_epi8(-14)), _mm256_set1_epi8(14));
    __m256i u = _mm256_add_epi8(_mm256_add_epi8(t, _mm256_set1_epi8(16)), _mm256_cmpgt_epi8(z, t));
    return _mm256_avg_epu8(u, z);
}

/* Pass 2 over 8 groups: the codes. */
QK_INLINE void sym_emit(const float *const *p, size_t g, int w8, int clamp, const qk_qmat *out, size_t G0, const float *ids, int nt) {
    const size_t pfd = QK_QPF_FAR(g); /* not qk_quant_pf_floats: the near distance is measured on avx512 only */
    if (w8) {
        int8_t *dst = (int8_t *)out->codes + G0 * g;
#pragma GCC unroll 8
        for (size_t i = 0; i < CHUNK; i++) {
            __m256 id = _mm256_broadcast_ss(ids + i);
            for (size_t k = 0; k < g; k += 32) {
                prefetch_ahead(p[i] + k, pfd, 32);
                st32(dst + i * g + k, sym32(p[i] + k, id, 1, clamp), nt);
            }
        }
    } else {
        uint8_t *dst = out->codes + G0 * g / 2;
        float id2s[CHUNK];
        __m256 v2 = _mm256_loadu_ps(ids);
        v2 = _mm256_add_ps(v2, v2);
        if (_mm256_movemask_ps(_mm256_cmp_ps(v2, _mm256_set1_ps(INFINITY), _CMP_EQ_OQ))) { /* 2/scale overflows (a subnormal scale) */
            sym_partial(p, g, 0, out, G0, ids, (1 << CHUNK) - 1, NULL);
            return;
        }
        _mm256_storeu_ps(id2s, v2);
        if (g == 32) {
#pragma GCC unroll 4
            for (size_t i = 0; i < CHUNK; i += 2) {
                prefetch_ahead(p[i], pfd, 64); /* the two groups are adjacent unless a row ends between them */
                __m256i a = sym4_32(p[i], _mm256_broadcast_ss(id2s + i), clamp);
                __m256i b = sym4_32(p[i + 1], _mm256_broadcast_ss(id2s + i + 1), clamp);
                st32(dst + i * 16, nibbles64(a, b, 0), nt);
            }
        } else {
#pragma GCC unroll 8
            for (size_t i = 0; i < CHUNK; i++) {
                __m256 id = _mm256_broadcast_ss(id2s + i);
                for (size_t k = 0; k < g; k += 64) {
                    prefetch_ahead(p[i] + k, pfd, 64);
                    st32(dst + (i * g + k) / 2, nibbles64(sym4_32(p[i] + k, id, clamp), sym4_32(p[i] + k + 32, id, clamp), 0), nt);
                }
            }
        }
    }
}

/* ---- w4a ---- */

/* Offsets and scales of n <= 8 groups from their reduced min and max (the
 * groups in nonfinite skipped); 1/d in ids, the stored offsets in ms.
 * Returns the groups to quantize. */
static int w4a_scales(__m256 lo, __m256 hi, size_t n, int nonfinite, const float *const *p, size_t g, const qk_qmat *out, size_t G0,
                      float *ids, float *ms, int *bad) {
    const __m256 zero = _mm256_setzero_ps();
    int live = ((1 << n) - 1) & ~nonfinite;
    int zmask = _mm256_movemask_ps(_mm256_or_ps(_mm256_cmp_ps(lo, zero, _CMP_EQ_OQ), _mm256_cmp_ps(hi, zero, _CMP_EQ_OQ))) & live;
    if (zmask) {
        float l[8], h[8];
        _mm256_storeu_ps(l, lo);
        _mm256_storeu_ps(h, hi);
        for (size_t b = 0; b < n; b++) {
            if (!(zmask >> b & 1)) continue;
            if (l[b] == 0.0f) l[b] = qk_zero_extreme(p[b], g, 0); /* the sign qk_min_z / qk_max_z give a zero extreme */
            if (h[b] == 0.0f) h[b] = qk_zero_extreme(p[b], g, 1);
        }
        lo = _mm256_loadu_ps(l);
        hi = _mm256_loadu_ps(h);
    }
    __m256 d = _mm256_div_ps(_mm256_sub_ps(hi, lo), _mm256_set1_ps(15.0f));
    __m256 dinf = _mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), d), _mm256_set1_ps(INFINITY), _CMP_NLT_UQ);
    if (_mm256_movemask_ps(dinf) & live) *bad |= QK_ROW_RANGE;
    _mm256_storeu_ps(ms, store_scales8(out->mins, G0, out->scale_type, lo, n, bad));
    _mm256_storeu_ps(ids, qk_avx2_inv_scale(store_scales8(out->scales, G0, out->scale_type, d, n, bad)));
    return live;
}

static void w4a_codes_general(const float *const *p, size_t n, size_t g, const qk_qmat *out, size_t G0, const float *ids,
                              const float *ms, int live) {
    for (size_t i = 0; i < n; i++)
        if (live >> i & 1) group_codes(FMT_W4A, p[i], g, _mm256_set1_ps(ms[i]), _mm256_set1_ps(ids[i]), out->codes + (G0 + i) * (g / 2));
}

/* Any g, n <= 8 groups. */
static void w4a_general(const float *const *p, size_t n, size_t g, const qk_qmat *out, size_t G0, int *bad) {
    __m256i mn[CHUNK], mx[CHUNK], am[CHUNK];
    for (size_t i = 0; i < CHUNK; i++) {
        if (i < n) group_minmax(p[i], g, &mn[i], &mx[i], &am[i]);
        else mn[i] = mx[i] = am[i] = _mm256_setzero_si256();
    }
    __m256i amax = qk_avx2_reduce8_max_epi32(am);
    int nonfinite = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(amax, _mm256_set1_epi32(0x7f7fffff)))) & ((1 << n) - 1);
    if (nonfinite) *bad |= QK_ROW_NONFINITE;
    float ids[CHUNK], ms[CHUNK];
    int live = w4a_scales(qk_avx2_reduce8_min_ps(mn), qk_avx2_reduce8_max_ps(mx), n, nonfinite, p, g, out, G0, ids, ms, bad);
    w4a_codes_general(p, n, g, out, G0, ids, ms, live);
}

/* Pass 1 over 8 groups of a fixed g (a multiple of 32, <= 256). Returns 0
 * when a group holds NaN or Inf (nothing stored: the caller takes the
 * general path), else the groups to quantize. */
QK_INLINE int w4a_stats(const float *const *p, size_t g, const qk_qmat *out, size_t G0, float *ids, float *ms, int *bad) {
    __m256i vmn[CHUNK], vmx[CHUNK];
    __m256 nan = _mm256_setzero_ps();
#pragma GCC unroll 8
    for (size_t i = 0; i < CHUNK; i++) {
        __m256 mn = _mm256_setzero_ps(), mx = mn;
        for (size_t k = 0; k < g; k += 16) {
            __m256 v0 = _mm256_loadu_ps(p[i] + k), v1 = _mm256_loadu_ps(p[i] + k + 8);
            if (k == 0) {
                mn = _mm256_min_ps(v0, v1);
                mx = _mm256_max_ps(v0, v1);
            } else {
                mn = _mm256_min_ps(mn, _mm256_min_ps(v0, v1));
                mx = _mm256_max_ps(mx, _mm256_max_ps(v0, v1));
            }
            nan = _mm256_or_ps(nan, _mm256_cmp_ps(v0, v1, _CMP_UNORD_Q));
        }
        vmn[i] = _mm256_castps_si256(mn);
        vmx[i] = _mm256_castps_si256(mx);
    }
    __m256 lo = qk_avx2_reduce8_min_ps(vmn), hi = qk_avx2_reduce8_max_ps(vmx);
    /* NaN seen by the unordered compares; ±Inf ends up in a min or a max */
    const __m256 inf = _mm256_set1_ps(INFINITY), ninf = _mm256_set1_ps(-INFINITY);
    __m256 bad_v = _mm256_or_ps(nan, _mm256_or_ps(_mm256_cmp_ps(lo, ninf, _CMP_EQ_OQ), _mm256_cmp_ps(hi, inf, _CMP_EQ_OQ)));
    if (_mm256_movemask_ps(bad_v)) return 0;
    return w4a_scales(lo, hi, CHUNK, 0, p, g, out, G0, ids, ms, bad);
}

/* 32 w4a codes (0..15) as int8 in element order. (x - m)·id >= 0 but for an
 * f16-rounded offset: trunc(v + 0.49999997) is round half away from zero
 * for v >= 0 and gives <= 0 for v < 0, which the clamp turns into 0 as it
 * does the reference's round. */
QK_INLINE __m256i w4a32(const float *x, __m256 m, __m256 id) {
    __m256i q[4];
    for (int v = 0; v < 4; v++) q[v] = qk_avx2_round_pos_epi32(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + 8 * v), m), id));
    __m256i b = qk_avx2_pack_i32x4_i8(q[0], q[1], q[2], q[3]);
    return _mm256_min_epi8(_mm256_max_epi8(b, _mm256_setzero_si256()), _mm256_set1_epi8(15));
}

QK_INLINE void w4a_emit(const float *const *p, size_t g, int clamp, const qk_qmat *out, size_t G0, const float *ids, const float *ms,
                       int nt) {
    (void)clamp; /* w4a32 clamps on the packed bytes */
    const size_t pfd = QK_QPF_FAR(g); /* as sym_emit */
    uint8_t *dst = out->codes + G0 * g / 2;
    if (g == 32) {
#pragma GCC unroll 4
        for (size_t i = 0; i < CHUNK; i += 2) {
            prefetch_ahead(p[i], pfd, 64);
            __m256i a = w4a32(p[i], _mm256_broadcast_ss(ms + i), _mm256_broadcast_ss(ids + i));
            __m256i b = w4a32(p[i + 1], _mm256_broadcast_ss(ms + i + 1), _mm256_broadcast_ss(ids + i + 1));
            st32(dst + i * 16, nibbles64(a, b, 0), nt);
        }
    } else {
#pragma GCC unroll 8
        for (size_t i = 0; i < CHUNK; i++) {
            __m256 id = _mm256_broadcast_ss(ids + i), m = _mm256_broadcast_ss(ms + i);
            for (size_t k = 0; k < g; k += 64) {
                prefetch_ahead(p[i] + k, pfd, 64);
                st32(dst + (i * g + k) / 2, nibbles64(w4a32(p[i] + k, m, id), w4a32(p[i] + k + 32, m, id), 0), nt);
            }
        }
    }
}

/* ---- llama.cpp blocks (g = 32) ---- */

/* The signed value of the first element of largest magnitude (+0 for a zero block). */
static inline float q4_0_extreme(const float *x, __m256i amax_b) {
    uint32_t m = 0;
    for (int v = 0; v < 4; v++) {
        __m256i e = _mm256_cmpeq_epi32(qk_avx2_abs_bits(_mm256_loadu_ps(x + 8 * v)), amax_b);
        m |= (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(e)) << (8 * v);
    }
    if (_mm256_extract_epi32(amax_b, 0) == 0) return 0.0f;
    return x[__builtin_ctz(m)];
}

static inline __m256i q4_0_q(__m256 x, __m256 id) { return _mm256_cvttps_epi32(_mm256_add_ps(_mm256_mul_ps(x, id), _mm256_set1_ps(8.5f))); }

/* min(15, trunc(x·id + 8.5)) of 32 values (0..16 before the min, taken on the
 * packed bytes), element j in the low nibble of byte j, j+16 in the high one. */
static inline void q4_0_codes(const float *x, __m256 id, uint8_t *dst) {
    __m256i b = qk_avx2_pack_i32x4_i8(q4_0_q(_mm256_loadu_ps(x), id), q4_0_q(_mm256_loadu_ps(x + 8), id),
                                      q4_0_q(_mm256_loadu_ps(x + 16), id), q4_0_q(_mm256_loadu_ps(x + 24), id));
    b = _mm256_min_epu8(b, _mm256_set1_epi8(15));
    __m128i lo = _mm256_castsi256_si128(b), hi = _mm256_extracti128_si256(b, 1);
    _mm_storeu_si128((__m128i *)dst, _mm_or_si128(lo, _mm_slli_epi16(hi, 4)));
}

static inline void q8_0_codes(const float *x, __m256 id, uint8_t *dst) {
    __m256i q[4];
    for (int v = 0; v < 4; v++) q[v] = qk_avx2_round_away_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * v), id));
    _mm256_storeu_si256((__m256i *)dst, qk_avx2_pack_i32x4_i8(q[0], q[1], q[2], q[3]));
}

/* q4_0's d numerator of 8 blocks: the first value of largest magnitude with
 * its sign (+0 when all are zero; 0 for the blocks not live), from the
 * blocks' absmax A, max and min: +A when max = A and min > -A, -A when
 * min = -A and max < A; both signs at A (rare) take the first by a search. */
static __m256 q4_0_signed_max(__m256i amax, __m256 mx, __m256 mn, int live, const float *const *p) {
    __m256 a = _mm256_castsi256_ps(amax), na = _mm256_sub_ps(_mm256_setzero_ps(), a);
    __m256 pos = _mm256_cmp_ps(mx, a, _CMP_EQ_OQ), neg = _mm256_cmp_ps(mn, na, _CMP_EQ_OQ);
    __m256 nz = _mm256_cmp_ps(a, _mm256_setzero_ps(), _CMP_GT_OQ);
    __m256i lm = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(live), _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128)),
                                    _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128));
    __m256 keep = _mm256_and_ps(nz, _mm256_castsi256_ps(lm));
    __m256 v = _mm256_and_ps(keep, _mm256_blendv_ps(na, a, pos));
    int both = _mm256_movemask_ps(_mm256_and_ps(_mm256_and_ps(pos, neg), keep));
    if (both) {
        float mv[CHUNK];
        _mm256_storeu_ps(mv, v);
        for (size_t i = 0; i < CHUNK; i++)
            if (both >> i & 1) mv[i] = q4_0_extreme(p[i], _mm256_permutevar8x32_epi32(amax, _mm256_set1_epi32((int)i)));
        v = _mm256_loadu_ps(mv);
    }
    return v;
}

/* Pass 1 over n <= 8 blocks: fp16 d in hs, 1/d in ids. Returns the blocks to quantize. */
QK_INLINE int block_stats(const float *const *p, size_t n, int q4, float *ids, uint16_t *hs, int *bad) {
    __m256i am[CHUNK], vmx[CHUNK], vmn[CHUNK];
#pragma GCC unroll 8
    for (size_t i = 0; i < CHUNK; i++) {
        if (i >= n) {
            am[i] = vmx[i] = vmn[i] = _mm256_setzero_si256();
            continue;
        }
        __m256 v0 = _mm256_loadu_ps(p[i]), v1 = _mm256_loadu_ps(p[i] + 8), v2 = _mm256_loadu_ps(p[i] + 16), v3 = _mm256_loadu_ps(p[i] + 24);
        am[i] = _mm256_max_epi32(_mm256_max_epi32(qk_avx2_abs_bits(v0), qk_avx2_abs_bits(v1)),
                                 _mm256_max_epi32(qk_avx2_abs_bits(v2), qk_avx2_abs_bits(v3)));
        if (q4) {
            vmx[i] = _mm256_castps_si256(_mm256_max_ps(_mm256_max_ps(v0, v1), _mm256_max_ps(v2, v3)));
            vmn[i] = _mm256_castps_si256(_mm256_min_ps(_mm256_min_ps(v0, v1), _mm256_min_ps(v2, v3)));
        }
    }
    __m256i amax = qk_avx2_reduce8_max_epi32(am);
    int nonfinite = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(amax, _mm256_set1_epi32(0x7f7fffff)))) & ((1 << n) - 1);
    if (nonfinite) *bad |= QK_ROW_NONFINITE;
    int live = ((1 << n) - 1) & ~nonfinite;
    __m256 d;
    if (q4) d = _mm256_div_ps(q4_0_signed_max(amax, qk_avx2_reduce8_max_ps(vmx), qk_avx2_reduce8_min_ps(vmn), live, p), _mm256_set1_ps(-8.0f));
    else d = _mm256_div_ps(_mm256_castsi256_ps(amax), _mm256_set1_ps(127.0f));
    _mm256_storeu_ps(ids, qk_avx2_inv_scale(d));
    __m128i hv = _mm256_cvtps_ph(d, _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128((__m128i *)hs, hv);
    __m128i inf = _mm_cmpeq_epi16(_mm_and_si128(hv, _mm_set1_epi16(0x7c00)), _mm_set1_epi16(0x7c00));
    if (_mm_movemask_epi8(inf) & ((1 << (2 * n)) - 1)) *bad |= QK_ROW_RANGE;
    return live;
}

/* Pass 2 over n <= 8 blocks, written in order (fp16 d, then the codes). */
QK_INLINE void block_emit(const float *const *p, size_t n, int q4, uint8_t *codes, size_t B0, const float *ids, const uint16_t *hs,
                          int live) {
    const size_t bs = q4 ? QK_Q4_0_BYTES : QK_Q8_0_BYTES;
#pragma GCC unroll 8
    for (size_t i = 0; i < CHUNK; i++) {
        if (i >= n) break;
        prefetch_ahead(p[i], QK_QPF_FAR(32), 32);
        if (!(live >> i & 1)) continue;
        uint8_t *blk = codes + (B0 + i) * bs;
        qk_wr16(blk, hs[i]);
        if (q4) q4_0_codes(p[i], _mm256_broadcast_ss(ids + i), blk + 2);
        else q8_0_codes(p[i], _mm256_broadcast_ss(ids + i), blk + 2);
    }
}

/* ---- long groups (g > 256, a multiple of 64): one group at a time ---- */

/* The long-group stream prefetches the 4 lines 8 KiB ahead of those it
 * loads (per channel 1024x4096 from DRAM: none 17-22 GB/s, to L2 19-24, 4-32
 * KiB to L1 30-36, 8 KiB best by a little; the machine was noisy). */
#define LONG_PF 2048
QK_INLINE void long_prefetch(const float *p) {
    for (size_t l = 0; l < 64; l += 16) _mm_prefetch((const char *)(p + l), _MM_HINT_T0);
}

static inline uint32_t hmax_epu32(__m256i v) {
    __m128i m = _mm_max_epu32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    m = _mm_max_epu32(m, _mm_shuffle_epi32(m, 0x4e));
    m = _mm_max_epu32(m, _mm_shuffle_epi32(m, 0xb1));
    return (uint32_t)_mm_cvtsi128_si32(m);
}

/* Codes of cur (when codes) and the absmax bits of nxt (when stats) in one loop. */
QK_INLINE uint32_t sym_fused(const float *cur, const float *nxt, size_t g, int codes, int stats, int w8, int clamp, float idf,
                             uint8_t *dst, int nt) {
    const __m256i ab = _mm256_set1_epi32(0x7fffffff);
    const __m256 id = _mm256_set1_ps(idf), id2 = _mm256_set1_ps(idf + idf);
    const int four = !w8 && __builtin_isfinite(idf + idf); /* w4s by sym4_32, as sym_emit */
    __m256i m0 = _mm256_setzero_si256(), m1 = m0;
    for (size_t k = 0; k < g; k += 64) {
        if (stats) {
            long_prefetch(nxt + k + LONG_PF);
#pragma GCC unroll 8
            for (size_t v = 0; v < 64; v += 16) {
                m0 = _mm256_max_epi32(m0, _mm256_and_si256(_mm256_castps_si256(_mm256_loadu_ps(nxt + k + v)), ab));
                m1 = _mm256_max_epi32(m1, _mm256_and_si256(_mm256_castps_si256(_mm256_loadu_ps(nxt + k + v + 8)), ab));
            }
        }
        if (codes && four) {
            st32(dst + k / 2, nibbles64(sym4_32(cur + k, id2, clamp), sym4_32(cur + k + 32, id2, clamp), 0), nt);
        } else if (codes) {
            __m256i a = sym32(cur + k, id, w8, clamp), b = sym32(cur + k + 32, id, w8, clamp);
            if (w8) {
                st32(dst + k, a, nt);
                st32(dst + k + 32, b, nt);
            } else st32(dst + k / 2, nibbles64(a, b, 8), nt);
        }
    }
    return stats ? hmax_epu32(_mm256_max_epi32(m0, m1)) : 0;
}

/* Codes of cur (when codes) and the min and max of nxt (when stats) in one
 * loop; returns 1 when nxt holds NaN or Inf. */
QK_INLINE int w4a_fused(const float *cur, const float *nxt, size_t g, int codes, int stats, int clamp, float mf, float idf, uint8_t *dst,
                        int nt, float *mn_out, float *mx_out) {
    (void)clamp; /* w4a32 clamps on the packed bytes */
    const __m256 id = _mm256_set1_ps(idf), m = _mm256_set1_ps(mf);
    __m256 mn = _mm256_set1_ps(INFINITY), mx = _mm256_set1_ps(-INFINITY), nan = _mm256_setzero_ps();
    for (size_t k = 0; k < g; k += 64) {
        if (stats) {
            long_prefetch(nxt + k + LONG_PF);
#pragma GCC unroll 8
            for (size_t v = 0; v < 64; v += 16) {
                __m256 v0 = _mm256_loadu_ps(nxt + k + v), v1 = _mm256_loadu_ps(nxt + k + v + 8);
                mn = _mm256_min_ps(mn, _mm256_min_ps(v0, v1));
                mx = _mm256_max_ps(mx, _mm256_max_ps(v0, v1));
                nan = _mm256_or_ps(nan, _mm256_cmp_ps(v0, v1, _CMP_UNORD_Q));
            }
        }
        if (codes) st32(dst + k / 2, nibbles64(w4a32(cur + k, m, id), w4a32(cur + k + 32, m, id), 0), nt);
    }
    if (!stats) return 0;
    __m128 l = _mm_min_ps(_mm256_castps256_ps128(mn), _mm256_extractf128_ps(mn, 1));
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
    l = _mm_min_ps(l, _mm_movehl_ps(l, l));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    *mn_out = _mm_cvtss_f32(_mm_min_ss(l, _mm_movehdup_ps(l)));
    *mx_out = _mm_cvtss_f32(_mm_max_ss(h, _mm_movehdup_ps(h)));
    /* NaN seen by the unordered compares; ±Inf ends up in the min or the max */
    return _mm256_movemask_ps(nan) || isinf(*mn_out) || isinf(*mx_out);
}

typedef int qd_mask;
#define QD_GROUP_PTRS qk_avx2_group_ptrs
#define QD_W4A_CLAMP 0
#define QD_SYM_PTRS_AHEAD 0
#define QD_WEIGHTS
#define QD_TIER avx2
#include "x86/quant_driver.h"

