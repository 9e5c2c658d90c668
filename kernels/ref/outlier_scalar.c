/* Scalar reference: the outlier-handling transforms (DESIGN §5). */
#include "internal.h"

/* Butterflies of stride h = 1, 2, 4, ... within each block, then the 1/sqrt(block) scale. */
void qk_fwht__scalar(float *x, size_t ldx, size_t M, size_t K, size_t block) {
    const float norm = (float)(1.0 / sqrt((double)block));
    for (size_t m = 0; m < M; m++)
        for (size_t b = 0; b < K; b += block) {
            float *v = x + m * ldx + b;
            for (size_t h = 1; h < block; h *= 2)
                for (size_t i = 0; i < block; i += 2 * h)
                    for (size_t j = i; j < i + h; j++) {
                        float a = v[j], c = v[j + h];
                        v[j] = a + c;
                        v[j + h] = a - c;
                    }
            for (size_t i = 0; i < block; i++) v[i] *= norm;
        }
}

void qk_colscale__scalar(const float *x, size_t ldx, size_t M, size_t K, const float *s, float *y, size_t ldy) {
    for (size_t m = 0; m < M; m++)
        for (size_t k = 0; k < K; k++) y[m * ldy + k] = x[m * ldx + k] * s[k];
}

void qk_colsplit__scalar(const float *x, size_t ldx, size_t M, size_t K, const uint32_t *idx, size_t nidx, float *xz,
                         size_t ldxz, float *xo, size_t ldxo) {
    for (size_t m = 0; m < M; m++) {
        memcpy(xz + m * ldxz, x + m * ldx, K * sizeof(float));
        for (size_t j = 0; j < nidx; j++) {
            xo[m * ldxo + j] = x[m * ldx + idx[j]];
            xz[m * ldxz + idx[j]] = 0.0f;
        }
    }
}

void qk_gemm_f32__scalar(size_t M, size_t N, size_t K, const float *x, size_t ldx, const float *w, size_t ldw, float *y,
                         size_t ldy, int accumulate) {
    for (size_t m = 0; m < M; m++)
        for (size_t n = 0; n < N; n++) {
            double acc = accumulate ? (double)y[m * ldy + n] : 0.0;
            for (size_t k = 0; k < K; k++) acc += (double)x[m * ldx + k] * (double)w[n * ldw + k];
            y[m * ldy + n] = (float)acc;
        }
}

void qk_gemm_i8__scalar(size_t M, size_t N, size_t K, const int8_t *x, size_t ldx, const float *sx, const int8_t *w, size_t ldw,
                        const float *sw, float *y, size_t ldy, int accumulate) {
    for (size_t m = 0; m < M; m++)
        for (size_t n = 0; n < N; n++) {
            int32_t acc = 0;
            for (size_t k = 0; k < K; k++) acc += (int32_t)x[m * ldx + k] * (int32_t)w[n * ldw + k];
            const float v = sx[m] * sw[n] * (float)acc;
            float *o = y + m * ldy + n;
            *o = accumulate ? *o + v : v;
        }
}
