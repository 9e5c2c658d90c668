/* Outlier-handling transforms (DESIGN §5), Armv8.0 ASIMD:
 *  - qk_fwht__neon: blocked fast Walsh–Hadamard transform. The strides 1 and 2
 *    are done in registers (a lane permute and one FMA by a ±1 sign vector,
 *    which is exact), the strides 4 ... block/2 as loops over whole vectors;
 *    the 1/sqrt(block) scale is folded into the last stage's stores. Block 2
 *    works on pairs of values.
 *  - qk_colscale__neon, qk_colsplit__neon: vector copies with scalar tails.
 *  - qk_gemm_f32__neon: Y (+)= X·Wᵀ as a 4x4 dot-product tile (16 q-register
 *    accumulators along K, scalar K tail, one reduction per output), over K
 *    slices of 1024 so the slice of X stays in cache while W streams. */
#if !defined(__aarch64__) || !defined(__ARM_NEON)
#error "this file needs the neon tier's flags"
#endif
#include "arm/neon/neon_common.h"

#define QK_INLINE static inline __attribute__((always_inline))

/* Butterflies of stride 1 and (when top >= 2) 2 inside one vector of 4. */
QK_INLINE float32x4_t fwht4(float32x4_t v, size_t top) {
    static const float s1[4] = {1, -1, 1, -1}, s2[4] = {1, 1, -1, -1};
    v = vfmaq_f32(vrev64q_f32(v), v, vld1q_f32(s1));
    if (top >= 2) v = vfmaq_f32(vextq_f32(v, v, 2), v, vld1q_f32(s2));
    return v;
}

void qk_fwht__neon(float *x, size_t ldx, size_t M, size_t K, size_t block) {
    const float norm = (float)(1.0 / sqrt((double)block));
    const float32x4_t vn = vdupq_n_f32(norm), one = vdupq_n_f32(1.0f);
    for (size_t m = 0; m < M; m++) {
        float *row = x + m * ldx;
        if (block < 4) { /* block 2: K is even */
            size_t k = 0;
            for (; k + 4 <= K; k += 4) vst1q_f32(row + k, vmulq_f32(fwht4(vld1q_f32(row + k), 1), vn));
            for (; k < K; k += 2) {
                float a = row[k], c = row[k + 1];
                row[k] = (a + c) * norm;
                row[k + 1] = (a - c) * norm;
            }
            continue;
        }
        for (size_t b = 0; b < K; b += block) {
            float *v = row + b;
            const float32x4_t s4 = block == 4 ? vn : one;
            for (size_t j = 0; j < block; j += 4) vst1q_f32(v + j, vmulq_f32(fwht4(vld1q_f32(v + j), 2), s4));
            for (size_t h = 4; h < block; h *= 2) {
                const float32x4_t sc = 2 * h == block ? vn : one;
                for (size_t i = 0; i < block; i += 2 * h)
                    for (size_t j = i; j < i + h; j += 4) {
                        float32x4_t a = vld1q_f32(v + j), c = vld1q_f32(v + j + h);
                        vst1q_f32(v + j, vmulq_f32(vaddq_f32(a, c), sc));
                        vst1q_f32(v + j + h, vmulq_f32(vsubq_f32(a, c), sc));
                    }
            }
        }
    }
}

void qk_colscale__neon(const float *x, size_t ldx, size_t M, size_t K, const float *s, float *y, size_t ldy) {
    for (size_t m = 0; m < M; m++) {
        const float *xr = x + m * ldx;
        float *yr = y + m * ldy;
        size_t k = 0;
        for (; k + 4 <= K; k += 4) vst1q_f32(yr + k, vmulq_f32(vld1q_f32(xr + k), vld1q_f32(s + k)));
        for (; k < K; k++) yr[k] = xr[k] * s[k];
    }
}

void qk_colsplit__neon(const float *x, size_t ldx, size_t M, size_t K, const uint32_t *idx, size_t nidx, float *xz,
                       size_t ldxz, float *xo, size_t ldxo) {
    for (size_t m = 0; m < M; m++) {
        const float *xr = x + m * ldx;
        float *zr = xz + m * ldxz, *orow = xo + m * ldxo;
        size_t k = 0;
        for (; k + 4 <= K; k += 4) vst1q_f32(zr + k, vld1q_f32(xr + k));
        for (; k < K; k++) zr[k] = xr[k];
        for (size_t j = 0; j < nidx; j++) {
            orow[j] = xr[idx[j]];
            zr[idx[j]] = 0.0f;
        }
    }
}

#define GF_DOT_KC 1024

/* Rows past M or N repeat the last one and are not stored. */
static void gf_dot_slice(size_t M, size_t N, size_t K, const float *x, size_t ldx, const float *w, size_t ldw, float *y, size_t ldy,
                         int accumulate) {
    const size_t Kv = K - K % 4;
    for (size_t n0 = 0; n0 < N; n0 += 4) {
        const float *wr[4];
        for (size_t j = 0; j < 4; j++) wr[j] = w + (n0 + j < N ? n0 + j : N - 1) * ldw;
        for (size_t m0 = 0; m0 < M; m0 += 4) {
            const float *xr[4];
            for (size_t i = 0; i < 4; i++) xr[i] = x + (m0 + i < M ? m0 + i : M - 1) * ldx;
            float32x4_t acc[4][4];
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++) acc[i][j] = vdupq_n_f32(0.0f);
            for (size_t k = 0; k < Kv; k += 4) {
                float32x4_t wv[4];
                for (int j = 0; j < 4; j++) wv[j] = vld1q_f32(wr[j] + k);
                for (int i = 0; i < 4; i++) {
                    const float32x4_t xv = vld1q_f32(xr[i] + k);
                    for (int j = 0; j < 4; j++) acc[i][j] = vfmaq_f32(acc[i][j], xv, wv[j]);
                }
            }
            for (size_t i = 0; i < 4 && m0 + i < M; i++)
                for (size_t j = 0; j < 4 && n0 + j < N; j++) {
                    float v = vaddvq_f32(acc[i][j]);
                    for (size_t k = Kv; k < K; k++) v += xr[i][k] * wr[j][k];
                    float *o = y + (m0 + i) * ldy + n0 + j;
                    *o = accumulate ? *o + v : v;
                }
        }
    }
}

void qk_gemm_f32__neon(size_t M, size_t N, size_t K, const float *x, size_t ldx, const float *w, size_t ldw, float *y, size_t ldy,
                       int accumulate) {
    for (size_t k0 = 0; k0 < K; k0 += GF_DOT_KC)
        gf_dot_slice(M, N, K - k0 < GF_DOT_KC ? K - k0 : GF_DOT_KC, x + k0, ldx, w + k0, ldw, y, ldy, accumulate || k0 > 0);
}
