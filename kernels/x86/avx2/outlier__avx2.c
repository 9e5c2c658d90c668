/* Outlier-handling transforms (DESIGN §5), AVX2 + FMA:
 *  - qk_fwht__avx2: blocked fast Walsh–Hadamard transform. The strides 1, 2, 4
 *    are done in registers (a lane permute and one FMA by a ±1 sign vector,
 *    which is exact), the strides 8 ... block/2 as loops over whole vectors;
 *    the 1/sqrt(block) scale is folded into the last stage's stores.
 *  - qk_colscale__avx2, qk_colsplit__avx2: vector copies with masked tails.
 *  - qk_gemm_f32__avx2: Y (+)= X·Wᵀ. From 64 rows of X: a 6x16 register
 *    tile (12 ymm accumulators, one broadcast of X per two FMAs) over W packed
 *    per 16-row panel and 256-wide K slice into a 16 KiB stack buffer
 *    (transposed: k-major, 16 outputs per k), zero-padded at the N tail.
 *    Fewer rows: a 4x3 dot-product tile straight from X and W (12 ymm
 *    accumulators along K, masked K tail, one reduction per output). */
#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
#error "this file needs the avx2 tier's flags"
#endif
#include "x86/avx2/avx2_common.h"

#define QK_INLINE static inline __attribute__((always_inline))

/* Mask of the first n (0..8) lanes. */
QK_INLINE __m256i lanes_mask(size_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* Butterflies of stride 1, 2 and 4 inside one vector, up to (and including) stride `top`. */
QK_INLINE __m256 fwht8(__m256 v, size_t top) {
    v = _mm256_fmadd_ps(v, _mm256_setr_ps(1, -1, 1, -1, 1, -1, 1, -1), _mm256_permute_ps(v, 0xB1));
    if (top >= 2) v = _mm256_fmadd_ps(v, _mm256_setr_ps(1, 1, -1, -1, 1, 1, -1, -1), _mm256_permute_ps(v, 0x4E));
    if (top >= 4) v = _mm256_fmadd_ps(v, _mm256_setr_ps(1, 1, 1, 1, -1, -1, -1, -1), _mm256_permute2f128_ps(v, v, 1));
    return v;
}

void qk_fwht__avx2(float *x, size_t ldx, size_t M, size_t K, size_t block) {
    const float norm = (float)(1.0 / sqrt((double)block));
    const __m256 vn = _mm256_set1_ps(norm);
    for (size_t m = 0; m < M; m++) {
        float *row = x + m * ldx;
        if (block < 8) { /* several blocks per vector; K is a multiple of block */
            size_t k = 0;
            for (; k + 8 <= K; k += 8) _mm256_storeu_ps(row + k, _mm256_mul_ps(fwht8(_mm256_loadu_ps(row + k), block / 2), vn));
            if (k < K) {
                __m256i mk = lanes_mask(K - k);
                _mm256_maskstore_ps(row + k, mk, _mm256_mul_ps(fwht8(_mm256_maskload_ps(row + k, mk), block / 2), vn));
            }
            continue;
        }
        for (size_t b = 0; b < K; b += block) {
            float *v = row + b;
            const __m256 s8 = block == 8 ? vn : _mm256_set1_ps(1.0f);
            for (size_t j = 0; j < block; j += 8) _mm256_storeu_ps(v + j, _mm256_mul_ps(fwht8(_mm256_loadu_ps(v + j), 4), s8));
            for (size_t h = 8; h < block; h *= 2) {
                const __m256 sc = 2 * h == block ? vn : _mm256_set1_ps(1.0f);
                for (size_t i = 0; i < block; i += 2 * h)
                    for (size_t j = i; j < i + h; j += 8) {
                        __m256 a = _mm256_loadu_ps(v + j), c = _mm256_loadu_ps(v + j + h);
                        _mm256_storeu_ps(v + j, _mm256_mul_ps(_mm256_add_ps(a, c), sc));
                        _mm256_storeu_ps(v + j + h, _mm256_mul_ps(_mm256_sub_ps(a, c), sc));
                    }
            }
        }
    }
}

void qk_colscale__avx2(const float *x, size_t ldx, size_t M, size_t K, const float *s, float *y, size_t ldy) {
    for (size_t m = 0; m < M; m++) {
        const float *xr = x + m * ldx;
        float *yr = y + m * ldy;
        size_t k = 0;
        for (; k + 8 <= K; k += 8) _mm256_storeu_ps(yr + k, _mm256_mul_ps(_mm256_loadu_ps(xr + k), _mm256_loadu_ps(s + k)));
        if (k < K) {
            __m256i mk = lanes_mask(K - k);
            _mm256_maskstore_ps(yr + k, mk, _mm256_mul_ps(_mm256_maskload_ps(xr + k, mk), _mm256_maskload_ps(s + k, mk)));
        }
    }
}

void qk_colsplit__avx2(const float *x, size_t ldx, size_t M, size_t K, const uint32_t *idx, size_t nidx, float *xz,
                       size_t ldxz, float *xo, size_t ldxo) {
    for (size_t m = 0; m < M; m++) {
        const float *xr = x + m * ldx;
        float *zr = xz + m * ldxz, *orow = xo + m * ldxo;
        size_t k = 0;
        for (; k + 8 <= K; k += 8) _mm256_storeu_ps(zr + k, _mm256_loadu_ps(xr + k));
        if (k < K) {
            __m256i mk = lanes_mask(K - k);
            _mm256_maskstore_ps(zr + k, mk, _mm256_maskload_ps(xr + k, mk));
        }
        size_t j = 0;
        for (; j + 8 <= nidx; j += 8)
            _mm256_storeu_ps(orow + j, _mm256_i32gather_ps(xr, _mm256_loadu_si256((const __m256i *)(idx + j)), 4));
        for (; j < nidx; j++) orow[j] = xr[idx[j]];
        for (j = 0; j < nidx; j++) zr[idx[j]] = 0.0f;
    }
}

#define GF_MR 6
#define GF_NR 16
#define GF_KC 256

/* acc[i] (+)= X[i][0..kc) · panel, for i < mr; then Y (+)= acc on the first nr columns. */
QK_INLINE void gf_tile(const int mr, size_t nr, size_t kc, const float *x, size_t ldx, const float *panel, float *y, size_t ldy,
                       int add) {
    __m256 acc[GF_MR][2];
    for (int i = 0; i < GF_MR; i++) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    for (size_t k = 0; k < kc; k++) {
        const __m256 w0 = _mm256_load_ps(panel + k * GF_NR), w1 = _mm256_load_ps(panel + k * GF_NR + 8);
        for (int i = 0; i < GF_MR; i++)
            if (i < mr) {
                const __m256 xv = _mm256_broadcast_ss(x + (size_t)i * ldx + k);
                acc[i][0] = _mm256_fmadd_ps(xv, w0, acc[i][0]);
                acc[i][1] = _mm256_fmadd_ps(xv, w1, acc[i][1]);
            }
    }
    if (nr == GF_NR) {
        for (int i = 0; i < GF_MR; i++)
            if (i < mr) {
                float *yr = y + (size_t)i * ldy;
                if (add) {
                    acc[i][0] = _mm256_add_ps(acc[i][0], _mm256_loadu_ps(yr));
                    acc[i][1] = _mm256_add_ps(acc[i][1], _mm256_loadu_ps(yr + 8));
                }
                _mm256_storeu_ps(yr, acc[i][0]);
                _mm256_storeu_ps(yr + 8, acc[i][1]);
            }
    } else {
        const __m256i m0 = lanes_mask(nr < 8 ? nr : 8), m1 = lanes_mask(nr > 8 ? nr - 8 : 0);
        for (int i = 0; i < GF_MR; i++)
            if (i < mr) {
                float *yr = y + (size_t)i * ldy;
                if (add) {
                    acc[i][0] = _mm256_add_ps(acc[i][0], _mm256_maskload_ps(yr, m0));
                    acc[i][1] = _mm256_add_ps(acc[i][1], _mm256_maskload_ps(yr + 8, m1));
                }
                _mm256_maskstore_ps(yr, m0, acc[i][0]);
                _mm256_maskstore_ps(yr + 8, m1, acc[i][1]);
            }
    }
}

/* Dot-product form for few rows of X (no packing): a 4x3 tile of outputs,
 * 12 accumulators along K, reduced at the end. Rows past M or N repeat the
 * last one and are not stored. */
static void gf_dot_slice(size_t M, size_t N, size_t K, const float *x, size_t ldx, const float *w, size_t ldw, float *y, size_t ldy,
                   int accumulate) {
    const __m256i tail = lanes_mask(K % 8);
    const size_t Kv = K - K % 8;
    for (size_t n0 = 0; n0 < N; n0 += 3) {
        const float *wr[3];
        for (size_t j = 0; j < 3; j++) wr[j] = w + (n0 + j < N ? n0 + j : N - 1) * ldw;
        for (size_t m0 = 0; m0 < M; m0 += 4) {
            const float *xr[4];
            for (size_t i = 0; i < 4; i++) xr[i] = x + (m0 + i < M ? m0 + i : M - 1) * ldx;
            __m256 acc[4][3];
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 3; j++) acc[i][j] = _mm256_setzero_ps();
            for (size_t k = 0; k < Kv; k += 8) {
                __m256 wv[3];
                for (int j = 0; j < 3; j++) wv[j] = _mm256_loadu_ps(wr[j] + k);
                for (int i = 0; i < 4; i++) {
                    const __m256 xv = _mm256_loadu_ps(xr[i] + k);
                    for (int j = 0; j < 3; j++) acc[i][j] = _mm256_fmadd_ps(xv, wv[j], acc[i][j]);
                }
            }
            if (K % 8) {
                __m256 wv[3];
                for (int j = 0; j < 3; j++) wv[j] = _mm256_maskload_ps(wr[j] + Kv, tail);
                for (int i = 0; i < 4; i++) {
                    const __m256 xv = _mm256_maskload_ps(xr[i] + Kv, tail);
                    for (int j = 0; j < 3; j++) acc[i][j] = _mm256_fmadd_ps(xv, wv[j], acc[i][j]);
                }
            }
            for (size_t i = 0; i < 4 && m0 + i < M; i++)
                for (size_t j = 0; j < 3 && n0 + j < N; j++) {
                    float v = qk_avx2_hsum_ps(acc[i][j]);
                    float *o = y + (m0 + i) * ldy + n0 + j;
                    *o = accumulate ? *o + v : v;
                }
        }
    }
}

/* Below this many rows of X the packed path's W panels cost more than they save. */
#define GF_PACK_MIN_M 64
#define GF_DOT_KC 1024

void qk_gemm_f32__avx2(size_t M, size_t N, size_t K, const float *x, size_t ldx, const float *w, size_t ldw, float *y, size_t ldy,
                       int accumulate) {
    if (M < GF_PACK_MIN_M) { /* K slices keep the slice of X in L2 while W streams */
        for (size_t k0 = 0; k0 < K; k0 += GF_DOT_KC)
            gf_dot_slice(M, N, K - k0 < GF_DOT_KC ? K - k0 : GF_DOT_KC, x + k0, ldx, w + k0, ldw, y, ldy, accumulate || k0 > 0);
        return;
    }
    _Alignas(32) float panel[GF_KC * GF_NR];
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
