/* On-the-fly activation quantization, AVX2 + FMA + F16C: bit-exact with
 * kernels/ref/actquant_scalar.c (codes, scales and per-group code sums).
 *
 * Eight groups at a time, as in quantize__avx2.c: the group extremes, scales
 * and inverses, and the code sums are each reduced and transposed in one go. */
#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
#error "this file needs the avx2 tier's flags"
#endif
#include "x86/avx2/avx2_common.h"

/* Codes of one group; returns the per-lane partial sums of the codes. */
static inline __m256i group_codes(const float *x, size_t g, __m256 id, __m256i lo, __m256i hi, int8_t *q) {
    const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
    __m256i sum = _mm256_setzero_si256();
    size_t i = 0;
    for (; i + 32 <= g; i += 32) {
        __m256i c = _mm256_min_epi8(_mm256_max_epi8(qk_avx2_round_codes32(x + i, id), lo), hi);
        _mm256_storeu_si256((__m256i *)(q + i), c);
        sum = _mm256_add_epi32(sum, _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, c), ones16));
    }
    if (i < g) { /* g = K only: a zero-padded last piece (zeros add nothing to the sum) */
        float buf[32] = {0};
        int8_t out[32];
        memcpy(buf, x + i, (g - i) * sizeof(float));
        __m256i c = _mm256_min_epi8(_mm256_max_epi8(qk_avx2_round_codes32(buf, id), lo), hi);
        _mm256_storeu_si256((__m256i *)out, c);
        memcpy(q + i, out, g - i);
        sum = _mm256_add_epi32(sum, _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, c), ones16));
    }
    return sum;
}

static int actquant(const float *x, size_t ldx, const qk_qact *out, float qmaxf, int q8_0) {
    size_t K = out->cols, g = out->group, ng = K / g;
    const __m256 qmax = _mm256_set1_ps(qmaxf);
    const __m256i hi = _mm256_set1_epi8((char)(int)qmaxf), lo = _mm256_set1_epi8((char)-(int)qmaxf);
    int bad = 0;
    for (size_t r = 0; r < out->rows; r++) {
        const float *xr = x + r * ldx;
        int8_t *qr = out->codes + r * K;
        for (size_t j0 = 0; j0 < ng; j0 += 8) {
            size_t nb = ng - j0 < 8 ? ng - j0 : 8;
            __m256i am[8], sums[8];
            for (size_t b = 0; b < 8; b++) am[b] = b < nb ? qk_avx2_absmax_bits(xr + (j0 + b) * g, g) : _mm256_setzero_si256();
            __m256i amax = qk_avx2_reduce8_max_epi32(am);
            __m256 finite = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(0x7f800000), amax));
            int nonfinite = ~_mm256_movemask_ps(finite) & 0xff;
            if (nonfinite) bad |= QK_ROW_NONFINITE;
            __m256 s = _mm256_div_ps(_mm256_castsi256_ps(amax), qmax);
            __m256 id = qk_avx2_inv_scale(s);
            if (q8_0) {
                __m128i h = _mm256_cvtps_ph(s, _MM_FROUND_TO_NEAREST_INT);
                __m128i inf = _mm_cmpeq_epi16(_mm_and_si128(h, _mm_set1_epi16(0x7c00)), _mm_set1_epi16(0x7c00));
                int m = _mm_movemask_epi8(inf);
                for (size_t b = 0; b < nb; b++)
                    if ((m >> (2 * b) & 1) && !(nonfinite >> b & 1)) bad |= QK_ROW_RANGE;
                s = _mm256_cvtph_ps(h);
            }
            s = _mm256_and_ps(s, finite);
            for (size_t b = 0; b < 8; b++) {
                if (b >= nb || (nonfinite >> b & 1)) {
                    if (b < nb) memset(qr + (j0 + b) * g, 0, g);
                    sums[b] = _mm256_setzero_si256();
                    continue;
                }
                __m256 idb = _mm256_permutevar8x32_ps(id, _mm256_set1_epi32((int)b));
                sums[b] = group_codes(xr + (j0 + b) * g, g, idb, lo, hi, qr + (j0 + b) * g);
            }
            __m256i sum = qk_avx2_reduce8_add_epi32(sums);
            size_t si = r * ng + j0;
            if (nb == 8) {
                _mm256_storeu_ps(out->scales + si, s);
                _mm256_storeu_si256((__m256i *)(out->sums + si), sum);
            } else {
                float st[8];
                int32_t su[8];
                _mm256_storeu_ps(st, s);
                _mm256_storeu_si256((__m256i *)su, sum);
                memcpy(out->scales + si, st, nb * sizeof(float));
                memcpy(out->sums + si, su, nb * sizeof(int32_t));
            }
        }
    }
    return bad;
}

int qk_actquant_a8__avx2(const float *x, size_t ldx, const qk_qact *out) { return actquant(x, ldx, out, 127.0f, 0); }
int qk_actquant_a4__avx2(const float *x, size_t ldx, const qk_qact *out) { return actquant(x, ldx, out, 7.0f, 0); }
int qk_actquant_q8_0__avx2(const float *x, size_t ldx, const qk_qact *out) { return actquant(x, ldx, out, 127.0f, 1); }
