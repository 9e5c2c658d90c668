/* Outlier-handling transforms (DESIGN §5), AVX-512 F/BW/DQ/VL:
 *  - qk_fwht__avx512: blocked fast Walsh–Hadamard transform. The strides 1, 2,
 *    4, 8 are done in registers (a lane permute and one FMA by a ±1 sign
 *    vector, which is exact), the strides 16 ... block/2 as loops over whole
 *    vectors; the 1/sqrt(block) scale is folded into the last stage's stores.
 *    Blocks below 16 take masked loads/stores at the row tail.
 *  - qk_colscale__avx512, qk_colsplit__avx512: vector copies with masked tails.
 *  - qk_gemm_f32__avx512: Y (+)= X·Wᵀ. From 64 rows of X: an 8x32 register
 *    tile (16 zmm accumulators, one broadcast of X per two FMAs) over W packed
 *    per 32-row panel and 128-wide K slice into a 16 KiB stack buffer
 *    (transposed: k-major, 32 outputs per k), zero-padded at the N tail.
 *    Fewer rows: a 4x4 dot-product tile straight from X and W (16 zmm
 *    accumulators along K, masked K tail, one reduction per output). */
#if !defined(__AVX512F__) || !defined(__AVX512BW__) || !defined(__AVX512DQ__) || !defined(__AVX512VL__)
#error "this file needs the avx512 tier's flags"
#endif
#include "x86/avx512/avx512_common.h"

#define QK_INLINE static inline __attribute__((always_inline))

/* Butterflies of stride 1, 2, 4, 8 inside one vector, up to (and including) stride `top`. */
QK_INLINE __m512 fwht16(__m512 v, size_t top) {
    v = _mm512_fmadd_ps(v, _mm512_setr_ps(1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1), _mm512_permute_ps(v, 0xB1));
    if (top >= 2)
        v = _mm512_fmadd_ps(v, _mm512_setr_ps(1, 1, -1, -1, 1, 1, -1, -1, 1, 1, -1, -1, 1, 1, -1, -1), _mm512_permute_ps(v, 0x4E));
    if (top >= 4)
        v = _mm512_fmadd_ps(v, _mm512_setr_ps(1, 1, 1, 1, -1, -1, -1, -1, 1, 1, 1, 1, -1, -1, -1, -1), _mm512_shuffle_f32x4(v, v, 0xB1));
    if (top >= 8)
        v = _mm512_fmadd_ps(v, _mm512_setr_ps(1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1, -1), _mm512_shuffle_f32x4(v, v, 0x4E));
    return v;
}

void qk_fwht__avx512(float *x, size_t ldx, size_t M, size_t K, size_t block) {
    const float norm = (float)(1.0 / sqrt((double)block));
    const __m512 vn = _mm512_set1_ps(norm), one = _mm512_set1_ps(1.0f);
    for (size_t m = 0; m < M; m++) {
        float *row = x + m * ldx;
        if (block < 16) { /* several blocks per vector; K is a multiple of block */
            for (size_t k = 0; k < K; k += 16) {
                const __mmask16 mk = qk512_mask16(K - k);
                _mm512_mask_storeu_ps(row + k, mk, _mm512_mul_ps(fwht16(_mm512_maskz_loadu_ps(mk, row + k), block / 2), vn));
            }
            continue;
        }
        for (size_t b = 0; b < K; b += block) {
            float *v = row + b;
            const __m512 s16 = block == 16 ? vn : one;
            for (size_t j = 0; j < block; j += 16) _mm512_storeu_ps(v + j, _mm512_mul_ps(fwht16(_mm512_loadu_ps(v + j), 8), s16));
            for (size_t h = 16; h < block; h *= 2) {
                const __m512 sc = 2 * h == block ? vn : one;
                for (size_t i = 0; i < block; i += 2 * h)
                    for (size_t j = i; j < i + h; j += 16) {
                        __m512 a = _mm512_loadu_ps(v + j), c = _mm512_loadu_ps(v + j + h);
                        _mm512_storeu_ps(v + j, _mm512_mul_ps(_mm512_add_ps(a, c), sc));
                        _mm512_storeu_ps(v + j + h, _mm512_mul_ps(_mm512_sub_ps(a, c), sc));
                    }
            }
        }
    }
}

void qk_colscale__avx512(const float *x, size_t ldx, size_t M, size_t K, const float *s, float *y, size_t ldy) {
    for (size_t m = 0; m < M; m++) {
        const float *xr = x + m * ldx;
        float *yr = y + m * ldy;
        size_t k = 0;
        for (; k + 16 <= K; k += 16) _mm512_storeu_ps(yr + k, _mm512_mul_ps(_mm512_loadu_ps(xr + k), _mm512_loadu_ps(s + k)));
        if (k < K) {
            const __mmask16 mk = qk512_mask16(K - k);
            _mm512_mask_storeu_ps(yr + k, mk, _mm512_mul_ps(_mm512_maskz_loadu_ps(mk, xr + k), _mm512_maskz_loadu_ps(mk, s + k)));
        }
    }
}

void qk_colsplit__avx512(const float *x, size_t ldx, size_t M, size_t K, const uint32_t *idx, size_t nidx, float *xz,
                         size_t ldxz, float *xo, size_t ldxo) {
    for (size_t m = 0; m < M; m++) {
        const float *xr = x + m * ldx;
        float *zr = xz + m * ldxz, *orow = xo + m * ldxo;
        size_t k = 0;
        for (; k + 16 <= K; k += 16) _mm512_storeu_ps(zr + k, _mm512_loadu_ps(xr + k));
        if (k < K) {
            const __mmask16 mk = qk512_mask16(K - k);
            _mm512_mask_storeu_ps(zr + k, mk, _mm512_maskz_loadu_ps(mk, xr + k));
        }
        for (size_t j = 0; j < nidx; j += 16) {
            const __mmask16 mk = qk512_mask16(nidx - j);
            const __m512i ix = _mm512_maskz_loadu_epi32(mk, idx + j);
            _mm512_mask_storeu_ps(orow + j, mk, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mk, ix, xr, 4));
            _mm512_mask_i32scatter_ps(zr, mk, ix, _mm512_setzero_ps(), 4);
        }
    }
}

#define GF_MR 8
#define GF_NR 32
#define GF_KC 128

/* acc[i] = X[i][0..kc) · panel, for i < mr; then Y (+)= acc on the first nr columns. */
QK_INLINE void gf_tile(const int mr, size_t nr, size_t kc, const float *x, size_t ldx, const float *panel, float *y, size_t ldy,
                       int add) {
    __m512 acc[GF_MR][2];
    for (int i = 0; i < GF_MR; i++) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    for (size_t k = 0; k < kc; k++) {
        const __m512 w0 = _mm512_load_ps(panel + k * GF_NR), w1 = _mm512_load_ps(panel + k * GF_NR + 16);
        for (int i = 0; i < GF_MR; i++)
            if (i < mr) {
                const __m512 xv = _mm512_set1_ps(x[(size_t)i * ldx + k]);
                acc[i][0] = _mm512_fmadd_ps(xv, w0, acc[i][0]);
                acc[i][1] = _mm512_fmadd_ps(xv, w1, acc[i][1]);
            }
    }
    const __mmask16 m0 = qk512_mask16(nr), m1 = qk512_mask16(nr > 16 ? nr - 16 : 0);
    for (int i = 0; i < GF_MR; i++)
        if (i < mr) {
            float *yr = y + (size_t)i * ldy;
            if (add) {
                acc[i][0] = _mm512_add_ps(acc[i][0], _mm512_maskz_loadu_ps(m0, yr));
                acc[i][1] = _mm512_add_ps(acc[i][1], _mm512_maskz_loadu_ps(m1, yr + 16));
            }
            _mm512_mask_storeu_ps(yr, m0, acc[i][0]);
            _mm512_mask_storeu_ps(yr + 16, m1, acc[i][1]);
        }
}

/* Dot-product form for few rows of X (no packing): a 4x4 tile of outputs,
 * 16 accumulators along K, reduced at the end. Rows past M or N repeat the
 * last one and are not stored. */
static void gf_dot_slice(size_t M, size_t N, size_t K, const float *x, size_t ldx, const float *w, size_t ldw, float *y, size_t ldy,
                   int accumulate) {
    const __mmask16 tail = qk512_mask16(K % 16);
    const size_t Kv = K - K % 16;
    for (size_t n0 = 0; n0 < N; n0 += 4) {
        const float *wr[4];
        for (size_t j = 0; j < 4; j++) wr[j] = w + (n0 + j < N ? n0 + j : N - 1) * ldw;
        for (size_t m0 = 0; m0 < M; m0 += 4) {
            const float *xr[4];
            for (size_t i = 0; i < 4; i++) xr[i] = x + (m0 + i < M ? m0 + i : M - 1) * ldx;
            __m512 acc[4][4];
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++) acc[i][j] = _mm512_setzero_ps();
            for (size_t k = 0; k < Kv; k += 16) {
                __m512 wv[4];
                for (int j = 0; j < 4; j++) wv[j] = _mm512_loadu_ps(wr[j] + k);
                for (int i = 0; i < 4; i++) {
                    const __m512 xv = _mm512_loadu_ps(xr[i] + k);
                    for (int j = 0; j < 4; j++) acc[i][j] = _mm512_fmadd_ps(xv, wv[j], acc[i][j]);
                }
            }
            if (tail) {
                __m512 wv[4];
                for (int j = 0; j < 4; j++) wv[j] = _mm512_maskz_loadu_ps(tail, wr[j] + Kv);
                for (int i = 0; i < 4; i++) {
                    const __m512 xv = _mm512_maskz_loadu_ps(tail, xr[i] + Kv);
                    for (int j = 0; j < 4; j++) acc[i][j] = _mm512_fmadd_ps(xv, wv[j], acc[i][j]);
                }
            }
            for (size_t i = 0; i < 4 && m0 + i < M; i++)
                for (size_t j = 0; j < 4 && n0 + j < N; j++) {
                    float v = _mm512_reduce_add_ps(acc[i][j]);
                    float *o = y + (m0 + i) * ldy + n0 + j;
                    *o = accumulate ? *o + v : v;
                }
        }
    }
}

/* Below this many rows of X the packed path's W panels cost more than they save. */
#define GF_PACK_MIN_M 64
#define GF_DOT_KC 1024

void qk_gemm_f32__avx512(size_t M, size_t N, size_t K, const float *x, size_t ldx, const float *w, size_t ldw, float *y, size_t ldy,
                         int accumulate) {
    if (M < GF_PACK_MIN_M) { /* K slices keep the slice of X in L2 while W streams */
        for (size_t k0 = 0; k0 < K; k0 += GF_DOT_KC)
            gf_dot_slice(M, N, K - k0 < GF_DOT_KC ? K - k0 : GF_DOT_KC, x + k0, ldx, w + k0, ldw, y, ldy, accumulate || k0 > 0);
        return;
    }
    _Alignas(64) float panel[GF_KC * GF_NR];
    for (size_t n0 = 0; n0 < N; n0 += GF_NR) {
        const size_t nr = N - n0 < GF_NR ? N - n0 : GF_NR;
        for (size_t k0 = 0; k0 < K; k0 += GF_KC) {
            const size_t kc = K - k0 < GF_KC ? K - k0 : GF_KC;
            for (size_t j = 0; j < GF_NR; j++) { /* row by row: W's rows may alias in L1 at power-of-two strides */
                const float *wr = w + (n0 + j) * ldw + k0;
                if (j < nr)
                    for (size_t k = 0; k < kc; k++) panel[k * GF_NR + j] = wr[k];
                else
                    for (size_t k = 0; k < kc; k++) panel[k * GF_NR + j] = 0.0f;
            }
            const int add = accumulate || k0 > 0;
            size_t m0 = 0;
            for (; m0 + GF_MR <= M; m0 += GF_MR) gf_tile(GF_MR, nr, kc, x + m0 * ldx + k0, ldx, panel, y + m0 * ldy + n0, ldy, add);
            const float *xt = x + m0 * ldx + k0;
            float *yt = y + m0 * ldy + n0;
            switch (M - m0) {
            case 7: gf_tile(7, nr, kc, xt, ldx, panel, yt, ldy, add); break;
            case 6: gf_tile(6, nr, kc, xt, ldx, panel, yt, ldy, add); break;
            case 5: gf_tile(5, nr, kc, xt, ldx, panel, yt, ldy, add); break;
            case 4: gf_tile(4, nr, kc, xt, ldx, panel, yt, ldy, add); break;
            case 3: gf_tile(3, nr, kc, xt, ldx, panel, yt, ldy, add); break;
            case 2: gf_tile(2, nr, kc, xt, ldx, panel, yt, ldy, add); break;
            case 1: gf_tile(1, nr, kc, xt, ldx, panel, yt, ldy, add); break;
            default: break;
            }
        }
    }
}
