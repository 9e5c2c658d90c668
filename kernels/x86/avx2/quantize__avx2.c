/* Weight quantization, AVX2 + FMA + F16C: bit-exact with kernels/ref/quantize_scalar.c.
 *
 * Groups are handled eight at a time: each group's extremes are reduced to one
 * vector, the eight vectors are reduced and transposed at once, and the eight
 * scales, their f16 rounding and their inverses are computed in one vector.
 * Codes are made 32 values at a time; a group whose length is not a multiple
 * of 32 (g = K only) finishes through a zero-padded 32-value buffer. */
#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
#error "this file needs the avx2 tier's flags"
#endif
#include "x86/avx2/avx2_common.h"

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

/* The reference keeps the first element reaching the extreme (fminf/fmaxf
 * return their first argument on ties), which only shows for a zero extreme:
 * its sign is the sign of the first zero of the group. */
static float first_zero(const float *x, size_t g) {
    for (size_t i = 0; i < g; i++)
        if (x[i] == 0.0f) return x[i];
    return 0.0f;
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

/* One row of w4s or w8s. */
static int sym_row(int fmt, const float *x, const qk_qmat *out, size_t r) {
    size_t K = out->cols, g = out->group, ng = K / g, bytes_per_group = fmt == FMT_W8S ? g : g / 2;
    const __m256 qmax = _mm256_set1_ps(fmt == FMT_W8S ? 127.0f : 7.0f);
    uint8_t *codes = out->codes + r * out->row_bytes;
    int bad = 0;
    for (size_t j0 = 0; j0 < ng; j0 += 8) {
        size_t nb = ng - j0 < 8 ? ng - j0 : 8;
        __m256i am[8];
        for (size_t b = 0; b < 8; b++) am[b] = b < nb ? qk_avx2_absmax_bits(x + (j0 + b) * g, g) : _mm256_setzero_si256();
        __m256i amax = qk_avx2_reduce8_max_epi32(am);
        int nonfinite = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(amax, _mm256_set1_epi32(0x7f7fffff))));
        if (nonfinite) bad |= QK_ROW_NONFINITE;
        __m256 s = _mm256_div_ps(_mm256_castsi256_ps(amax), qmax);
        __m256 id = qk_avx2_inv_scale(store_scales8(out->scales, r * ng + j0, out->scale_type, s, nb, &bad));
        for (size_t b = 0; b < nb; b++) {
            if (nonfinite >> b & 1) continue;
            group_codes(fmt, x + (j0 + b) * g, g, _mm256_setzero_ps(), bcast_lane(id, b), codes + (j0 + b) * bytes_per_group);
        }
    }
    return bad;
}

static int w4a_row(const float *x, const qk_qmat *out, size_t r) {
    size_t K = out->cols, g = out->group, ng = K / g;
    uint8_t *codes = out->codes + r * out->row_bytes;
    int bad = 0;
    for (size_t j0 = 0; j0 < ng; j0 += 8) {
        size_t nb = ng - j0 < 8 ? ng - j0 : 8;
        __m256i mn[8], mx[8], am[8];
        for (size_t b = 0; b < 8; b++) {
            if (b < nb) group_minmax(x + (j0 + b) * g, g, &mn[b], &mx[b], &am[b]);
            else mn[b] = mx[b] = am[b] = _mm256_setzero_si256();
        }
        __m256i amax = qk_avx2_reduce8_max_epi32(am);
        int nonfinite = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(amax, _mm256_set1_epi32(0x7f7fffff))));
        if (nonfinite) bad |= QK_ROW_NONFINITE;
        __m256 lo = qk_avx2_reduce8_min_ps(mn), hi = qk_avx2_reduce8_max_ps(mx);
        const __m256 zero = _mm256_setzero_ps();
        int zmask = _mm256_movemask_ps(_mm256_or_ps(_mm256_cmp_ps(lo, zero, _CMP_EQ_OQ), _mm256_cmp_ps(hi, zero, _CMP_EQ_OQ)));
        zmask &= ((1 << nb) - 1) & ~nonfinite;
        if (zmask) {
            float l[8], h[8];
            _mm256_storeu_ps(l, lo);
            _mm256_storeu_ps(h, hi);
            for (size_t b = 0; b < nb; b++) {
                if (!(zmask >> b & 1)) continue;
                if (l[b] == 0.0f) l[b] = first_zero(x + (j0 + b) * g, g);
                if (h[b] == 0.0f) h[b] = first_zero(x + (j0 + b) * g, g);
            }
            lo = _mm256_loadu_ps(l);
            hi = _mm256_loadu_ps(h);
        }
        __m256 d = _mm256_div_ps(_mm256_sub_ps(hi, lo), _mm256_set1_ps(15.0f));
        __m256 dinf = _mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), d), _mm256_set1_ps(INFINITY), _CMP_NLT_UQ);
        if (_mm256_movemask_ps(dinf) & ((1 << nb) - 1) & ~nonfinite) bad |= QK_ROW_RANGE;
        __m256 m = store_scales8(out->mins, r * ng + j0, out->scale_type, lo, nb, &bad);
        __m256 id = qk_avx2_inv_scale(store_scales8(out->scales, r * ng + j0, out->scale_type, d, nb, &bad));
        for (size_t b = 0; b < nb; b++) {
            if (nonfinite >> b & 1) continue;
            group_codes(FMT_W4A, x + (j0 + b) * g, g, bcast_lane(m, b), bcast_lane(id, b), codes + (j0 + b) * (g / 2));
        }
    }
    return bad;
}

int qk_quantize_w4s__avx2(const float *x, size_t ldx, const qk_qmat *out) {
    int bad = 0;
    for (size_t r = 0; r < out->rows; r++) bad |= sym_row(FMT_W4S, x + r * ldx, out, r);
    return bad;
}

int qk_quantize_w8s__avx2(const float *x, size_t ldx, const qk_qmat *out) {
    int bad = 0;
    for (size_t r = 0; r < out->rows; r++) bad |= sym_row(FMT_W8S, x + r * ldx, out, r);
    return bad;
}

int qk_quantize_w4a__avx2(const float *x, size_t ldx, const qk_qmat *out) {
    int bad = 0;
    for (size_t r = 0; r < out->rows; r++) bad |= w4a_row(x + r * ldx, out, r);
    return bad;
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

static inline __m256i q4_0_q(__m256 x, __m256 id) {
    __m256i q = _mm256_cvttps_epi32(_mm256_add_ps(_mm256_mul_ps(x, id), _mm256_set1_ps(8.5f)));
    return _mm256_min_epi32(q, _mm256_set1_epi32(15));
}

static inline void q4_0_codes(const float *x, __m256 id, uint8_t *dst) {
    __m256i r0 = _mm256_or_si256(q4_0_q(_mm256_loadu_ps(x), id), _mm256_slli_epi32(q4_0_q(_mm256_loadu_ps(x + 16), id), 4));
    __m256i r1 = _mm256_or_si256(q4_0_q(_mm256_loadu_ps(x + 8), id), _mm256_slli_epi32(q4_0_q(_mm256_loadu_ps(x + 24), id), 4));
    __m256i p = _mm256_packs_epi32(r0, r1);
    p = _mm256_packus_epi16(p, p);
    p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 0, 4, 1, 5));
    _mm_storeu_si128((__m128i *)dst, _mm256_castsi256_si128(p));
}

static inline void q8_0_codes(const float *x, __m256 id, uint8_t *dst) {
    __m256i q[4];
    for (int v = 0; v < 4; v++) q[v] = qk_avx2_round_away_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * v), id));
    _mm256_storeu_si256((__m256i *)dst, qk_avx2_pack_i32x4_i8(q[0], q[1], q[2], q[3]));
}

static int blocks_row(int q8, const float *x, uint8_t *row, size_t nblk) {
    const size_t bs = q8 ? QK_Q8_0_BYTES : QK_Q4_0_BYTES;
    int bad = 0;
    for (size_t j0 = 0; j0 < nblk; j0 += 8) {
        size_t nb = nblk - j0 < 8 ? nblk - j0 : 8;
        __m256i am[8];
        for (size_t b = 0; b < 8; b++) am[b] = b < nb ? qk_avx2_absmax_bits(x + (j0 + b) * 32, 32) : _mm256_setzero_si256();
        __m256i amax = qk_avx2_reduce8_max_epi32(am);
        int nonfinite = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(amax, _mm256_set1_epi32(0x7f7fffff))));
        if (nonfinite) bad |= QK_ROW_NONFINITE;
        __m256 d;
        if (q8) {
            d = _mm256_div_ps(_mm256_castsi256_ps(amax), _mm256_set1_ps(127.0f));
        } else {
            float ext[8] = {0};
            for (size_t b = 0; b < nb; b++)
                if (!(nonfinite >> b & 1))
                    ext[b] = q4_0_extreme(x + (j0 + b) * 32, _mm256_permutevar8x32_epi32(amax, _mm256_set1_epi32((int)b)));
            d = _mm256_div_ps(_mm256_loadu_ps(ext), _mm256_set1_ps(-8.0f));
        }
        __m256 id = qk_avx2_inv_scale(d);
        uint16_t h[8];
        __m128i hv = _mm256_cvtps_ph(d, _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128((__m128i *)h, hv);
        __m128i inf = _mm_cmpeq_epi16(_mm_and_si128(hv, _mm_set1_epi16(0x7c00)), _mm_set1_epi16(0x7c00));
        if (_mm_movemask_epi8(inf) & ((1 << (2 * nb)) - 1)) bad |= QK_ROW_RANGE;
        for (size_t b = 0; b < nb; b++) {
            if (nonfinite >> b & 1) continue;
            uint8_t *blk = row + (j0 + b) * bs;
            prefetch32_ahead(x + (j0 + b) * 32);
            qk_wr16(blk, h[b]);
            if (q8) q8_0_codes(x + (j0 + b) * 32, bcast_lane(id, b), blk + 2);
            else q4_0_codes(x + (j0 + b) * 32, bcast_lane(id, b), blk + 2);
        }
    }
    return bad;
}

int qk_quantize_q4_0__avx2(const float *x, size_t ldx, const qk_qmat *out) {
    int bad = 0;
    for (size_t r = 0; r < out->rows; r++) bad |= blocks_row(0, x + r * ldx, out->codes + r * out->row_bytes, out->cols / 32);
    return bad;
}

int qk_quantize_q8_0__avx2(const float *x, size_t ldx, const qk_qmat *out) {
    int bad = 0;
    for (size_t r = 0; r < out->rows; r++) bad |= blocks_row(1, x + r * ldx, out->codes + r * out->row_bytes, out->cols / 32);
    return bad;
}
