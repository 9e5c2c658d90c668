/* gemv (M = 1) with f32 activations, AVX-512: y[n] = Σ_k ŵ[n][k]·x[k] for
 * W4A32 (w4s, w4a, q4_0) and W8A32 (w8s, q8_0), on the plain layout.
 *
 * Four rows per step share each load and shuffle of x. 4-bit weights: one
 * 16-entry table per row and group holds the dequantized values ŵ(c) (s·(c-8),
 * m + d·c, (c-8)·d, exactly as dequantize computes them), and vpermps looks
 * 16 weights up at once from their codes (it reads only the low 4 bits of
 * each index, so a byte holding two codes needs no mask). In the plain w4s/w4a
 * layout byte i holds weights 2i and 2i+1: the low nibbles are the even
 * weights and the high nibbles the odd ones, so x is split into its even and
 * odd elements (two vpermt2ps per 32 values, shared by the four rows).
 * 8-bit weights are widened, converted and multiplied into a per-group sum
 * that is scaled once per group. Accumulation is f32 FMA. Any K and g work:
 * a K that is not a multiple of 32 (g = K) ends with masked loads. */
#include "x86/avx512/avx512_common.h"

#define QK_INLINE static inline __attribute__((always_inline))

enum { R = 8 }; /* rows per step */

/* Bytes of each weight row prefetched ahead (several rows in flight leave
 * DRAM bandwidth unused with the hardware prefetchers alone). */
#define PF 1024
#define PREFETCH(p) _mm_prefetch((const char *)(p) + PF, _MM_HINT_T0)

static const float c8_tab[16] = {-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7};
static const float c0_tab[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

QK_INLINE float scale_at(const void *p, size_t i, qk_scale_type st) {
    return st == QK_SCALE_F16 ? _cvtsh_ss(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

/* ---- w4s, w4a ---- */

/* nr rows (nr <= R) starting at row n0 of the view; asym: w4a. */
QK_INLINE void w4_rows(const qk_matmul_args *a, size_t n0, size_t nr, int asym) {
    const qk_qmat *w = a->w;
    size_t K = a->K, g = a->group, ng = K / g;
    const float *x = a->x;
    const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i io = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    const __m512 cv = _mm512_loadu_ps(asym ? c0_tab : c8_tab);
    __m512 acc[2 * R], t[R];
    const uint8_t *codes[R];
    for (size_t r = 0; r < nr; r++) {
        acc[2 * r] = acc[2 * r + 1] = _mm512_setzero_ps();
        codes[r] = w->codes + (n0 + r) * w->row_bytes;
    }
    for (size_t j = 0; j < ng; j++) {
        for (size_t r = 0; r < nr; r++) {
            __m512 s = _mm512_set1_ps(scale_at(w->scales, (n0 + r) * ng + j, w->scale_type));
            t[r] = _mm512_mul_ps(s, cv);
            if (asym) t[r] = _mm512_add_ps(_mm512_set1_ps(scale_at(w->mins, (n0 + r) * ng + j, w->scale_type)), t[r]);
        }
        size_t k = j * g, e = k + g;
        for (; k + 32 <= e; k += 32) {
            __m512 x0 = _mm512_loadu_ps(x + k), x1 = _mm512_loadu_ps(x + k + 16);
            __m512 xe = _mm512_permutex2var_ps(x0, ie, x1), xo = _mm512_permutex2var_ps(x0, io, x1);
            for (size_t r = 0; r < nr; r++) {
                if (k % 128 == 0) PREFETCH(codes[r] + k / 2);
                __m512i q = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(codes[r] + k / 2)));
                acc[2 * r] = _mm512_fmadd_ps(_mm512_permutexvar_ps(q, t[r]), xe, acc[2 * r]);
                acc[2 * r + 1] = _mm512_fmadd_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(q, 4), t[r]), xo, acc[2 * r + 1]);
            }
        }
        if (k < e) { /* g = K, not a multiple of 32: the zero x lanes cancel the masked codes */
            size_t n = e - k;
            __m512 x0 = _mm512_maskz_loadu_ps(qk512_mask16(n), x + k);
            __m512 x1 = _mm512_maskz_loadu_ps(qk512_mask16(n > 16 ? n - 16 : 0), x + k + 16);
            __m512 xe = _mm512_permutex2var_ps(x0, ie, x1), xo = _mm512_permutex2var_ps(x0, io, x1);
            for (size_t r = 0; r < nr; r++) {
                __m512i q = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(qk512_mask16(n / 2), codes[r] + k / 2));
                acc[2 * r] = _mm512_fmadd_ps(_mm512_permutexvar_ps(q, t[r]), xe, acc[2 * r]);
                acc[2 * r + 1] = _mm512_fmadd_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(q, 4), t[r]), xo, acc[2 * r + 1]);
            }
        }
    }
    for (size_t r = 0; r < nr; r++) a->y[n0 + r] = _mm512_reduce_add_ps(_mm512_add_ps(acc[2 * r], acc[2 * r + 1]));
}

static void gemv_w4(const qk_matmul_args *a, int asym) {
    size_t n = 0;
    for (; n + R <= a->N; n += R) w4_rows(a, n, R, asym);
    for (; n < a->N; n++) w4_rows(a, n, 1, asym);
}

void qk_gemv_w4s_a32__avx512(const qk_matmul_args *a) { gemv_w4(a, 0); }
void qk_gemv_w4a_a32__avx512(const qk_matmul_args *a) { gemv_w4(a, 1); }

/* ---- q4_0: block = fp16 d + 16 bytes, byte j holds weights j (low) and j+16 (high) ---- */

enum { DB = 4 }; /* blocks whose d are converted together */

/* d of blocks b0..b0+nb-1 (nb <= DB) of nr rows, as f32: d[r * DB + i]. The
 * fp16 values are gathered in general registers (narrow stores followed by a
 * wide load would stall store forwarding). */
QK_INLINE void block_scales(const uint8_t *const *row, size_t nr, size_t b0, size_t nb, size_t bytes, float *d) {
    uint64_t u[R > 4 ? R : 4] = {0};
    for (size_t r = 0; r < nr; r++) {
        uint64_t v = 0;
        for (size_t i = 0; i < nb; i++) v |= (uint64_t)qk_rd16(row[r] + (b0 + i) * bytes) << (16 * i);
        u[r] = v;
    }
    for (size_t r = 0; r < nr; r += 4)
        _mm512_storeu_ps(d + r * DB, _mm512_cvtph_ps(_mm256_setr_epi64x((long long)u[r], (long long)u[r + 1], (long long)u[r + 2], (long long)u[r + 3])));
}

QK_INLINE void q4_0_rows(const qk_matmul_args *a, size_t n0, size_t nr) {
    const qk_qmat *w = a->w;
    size_t nb = a->K / 32;
    const float *x = a->x;
    const __m512 c8 = _mm512_loadu_ps(c8_tab);
    __m512 acc[2 * R];
    const uint8_t *blk[R];
    float d[(R > 4 ? R : 4) * DB];
    for (size_t r = 0; r < nr; r++) {
        acc[2 * r] = acc[2 * r + 1] = _mm512_setzero_ps();
        blk[r] = w->codes + (n0 + r) * w->row_bytes;
    }
    for (size_t b0 = 0; b0 < nb; b0 += DB) {
        size_t n = nb - b0 < DB ? nb - b0 : DB;
        block_scales(blk, nr, b0, n, QK_Q4_0_BYTES, d);
        for (size_t i = 0; i < n; i++) {
            size_t b = b0 + i;
            __m512 x0 = _mm512_loadu_ps(x + 32 * b), x1 = _mm512_loadu_ps(x + 32 * b + 16);
            for (size_t r = 0; r < nr; r++) {
                const uint8_t *p = blk[r] + b * QK_Q4_0_BYTES;
                PREFETCH(p);
                __m512 t = _mm512_mul_ps(c8, _mm512_set1_ps(d[r * DB + i]));
                __m512i q = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(p + 2)));
                acc[2 * r] = _mm512_fmadd_ps(_mm512_permutexvar_ps(q, t), x0, acc[2 * r]);
                acc[2 * r + 1] = _mm512_fmadd_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(q, 4), t), x1, acc[2 * r + 1]);
            }
        }
    }
    for (size_t r = 0; r < nr; r++) a->y[n0 + r] = _mm512_reduce_add_ps(_mm512_add_ps(acc[2 * r], acc[2 * r + 1]));
}

void qk_gemv_q4_0_a32__avx512(const qk_matmul_args *a) {
    size_t n = 0;
    for (; n + R <= a->N; n += R) q4_0_rows(a, n, R);
    for (; n < a->N; n++) q4_0_rows(a, n, 1);
}

/* ---- w8s, q8_0 ---- */

QK_INLINE __m512 widen8(const uint8_t *p) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)p))); }

QK_INLINE void w8s_rows(const qk_matmul_args *a, size_t n0, size_t nr) {
    const qk_qmat *w = a->w;
    size_t K = a->K, g = a->group, ng = K / g;
    const float *x = a->x;
    __m512 acc[R], part[R];
    const uint8_t *codes[R];
    for (size_t r = 0; r < nr; r++) {
        acc[r] = _mm512_setzero_ps();
        codes[r] = w->codes + (n0 + r) * w->row_bytes;
    }
    for (size_t j = 0; j < ng; j++) {
        size_t k = j * g, e = k + g;
        for (size_t r = 0; r < nr; r++) part[r] = _mm512_setzero_ps();
        for (; k + 32 <= e; k += 32) {
            __m512 x0 = _mm512_loadu_ps(x + k), x1 = _mm512_loadu_ps(x + k + 16);
            for (size_t r = 0; r < nr; r++) {
                if (k % 64 == 0) PREFETCH(codes[r] + k);
                part[r] = _mm512_fmadd_ps(widen8(codes[r] + k), x0, part[r]);
                part[r] = _mm512_fmadd_ps(widen8(codes[r] + k + 16), x1, part[r]);
            }
        }
        for (; k < e; k += 16) {
            __mmask16 m = qk512_mask16(e - k);
            __m512 x0 = _mm512_maskz_loadu_ps(m, x + k);
            for (size_t r = 0; r < nr; r++) {
                __m512 q = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, codes[r] + k)));
                part[r] = _mm512_fmadd_ps(q, x0, part[r]);
            }
        }
        for (size_t r = 0; r < nr; r++)
            acc[r] = _mm512_fmadd_ps(part[r], _mm512_set1_ps(scale_at(w->scales, (n0 + r) * ng + j, w->scale_type)), acc[r]);
    }
    for (size_t r = 0; r < nr; r++) a->y[n0 + r] = _mm512_reduce_add_ps(acc[r]);
}

void qk_gemv_w8s_a32__avx512(const qk_matmul_args *a) {
    size_t n = 0;
    for (; n + R <= a->N; n += R) w8s_rows(a, n, R);
    for (; n < a->N; n++) w8s_rows(a, n, 1);
}

QK_INLINE void q8_0_rows(const qk_matmul_args *a, size_t n0, size_t nr) {
    const qk_qmat *w = a->w;
    size_t nb = a->K / 32;
    const float *x = a->x;
    __m512 acc[R];
    const uint8_t *blk[R];
    float d[(R > 4 ? R : 4) * DB];
    for (size_t r = 0; r < nr; r++) {
        acc[r] = _mm512_setzero_ps();
        blk[r] = w->codes + (n0 + r) * w->row_bytes;
    }
    for (size_t b0 = 0; b0 < nb; b0 += DB) {
        size_t n = nb - b0 < DB ? nb - b0 : DB;
        block_scales(blk, nr, b0, n, QK_Q8_0_BYTES, d);
        for (size_t i = 0; i < n; i++) {
            size_t b = b0 + i;
            __m512 x0 = _mm512_loadu_ps(x + 32 * b), x1 = _mm512_loadu_ps(x + 32 * b + 16);
            for (size_t r = 0; r < nr; r++) {
                const uint8_t *p = blk[r] + b * QK_Q8_0_BYTES;
                PREFETCH(p);
                __m512 part = _mm512_mul_ps(widen8(p + 2), x0);
                part = _mm512_fmadd_ps(widen8(p + 18), x1, part);
                acc[r] = _mm512_fmadd_ps(part, _mm512_set1_ps(d[r * DB + i]), acc[r]);
            }
        }
    }
    for (size_t r = 0; r < nr; r++) a->y[n0 + r] = _mm512_reduce_add_ps(acc[r]);
}

void qk_gemv_q8_0_a32__avx512(const qk_matmul_args *a) {
    size_t n = 0;
    for (; n + R <= a->N; n += R) q8_0_rows(a, n, R);
    for (; n < a->N; n++) q8_0_rows(a, n, 1);
}
