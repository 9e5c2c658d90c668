/* Scalar reference: dequantization (DESIGN §1). x̂ = s·q (w4s, w8s),
 * m + d·q (w4a, a multiply then an add: no FMA, so every tier agrees bit for
 * bit), (q-8)·d (q4_0), q·d (q8_0). */
#include "internal.h"

void qk_dequantize_w4s__scalar(const qk_qmat *w, float *y, size_t ldy) {
    size_t K = w->cols, g = w->group, ng = K / g;
    for (size_t r = 0; r < w->rows; r++) {
        const uint8_t *codes = w->codes + r * w->row_bytes;
        for (size_t k = 0; k < K; k++) {
            float s = qk_load_scale(w->scales, r * ng + k / g, w->scale_type);
            int q = ((codes[k / 2] >> (4 * (k & 1))) & 15) - 8;
            y[r * ldy + k] = s * (float)q;
        }
    }
}

void qk_dequantize_w4a__scalar(const qk_qmat *w, float *y, size_t ldy) {
    size_t K = w->cols, g = w->group, ng = K / g;
    for (size_t r = 0; r < w->rows; r++) {
        const uint8_t *codes = w->codes + r * w->row_bytes;
        for (size_t k = 0; k < K; k++) {
            float d = qk_load_scale(w->scales, r * ng + k / g, w->scale_type);
            float m = qk_load_scale(w->mins, r * ng + k / g, w->scale_type);
            int q = (codes[k / 2] >> (4 * (k & 1))) & 15;
            float dq = d * (float)q;
            y[r * ldy + k] = m + dq;
        }
    }
}

void qk_dequantize_w8s__scalar(const qk_qmat *w, float *y, size_t ldy) {
    size_t K = w->cols, g = w->group, ng = K / g;
    for (size_t r = 0; r < w->rows; r++) {
        const int8_t *codes = (const int8_t *)(w->codes + r * w->row_bytes);
        for (size_t k = 0; k < K; k++) y[r * ldy + k] = qk_load_scale(w->scales, r * ng + k / g, w->scale_type) * (float)codes[k];
    }
}

void qk_dequantize_q4_0__scalar(const qk_qmat *w, float *y, size_t ldy) {
    size_t nb = w->cols / 32;
    for (size_t r = 0; r < w->rows; r++)
        for (size_t b = 0; b < nb; b++) {
            const uint8_t *blk = w->codes + r * w->row_bytes + b * QK_Q4_0_BYTES;
            float d = qk_h2f(qk_rd16(blk));
            float *yb = y + r * ldy + b * 32;
            for (int j = 0; j < 16; j++) {
                yb[j] = (float)((blk[2 + j] & 15) - 8) * d;
                yb[j + 16] = (float)((blk[2 + j] >> 4) - 8) * d;
            }
        }
}

void qk_dequantize_q8_0__scalar(const qk_qmat *w, float *y, size_t ldy) {
    size_t nb = w->cols / 32;
    for (size_t r = 0; r < w->rows; r++)
        for (size_t b = 0; b < nb; b++) {
            const uint8_t *blk = w->codes + r * w->row_bytes + b * QK_Q8_0_BYTES;
            float d = qk_h2f(qk_rd16(blk));
            for (int j = 0; j < 32; j++) y[r * ldy + b * 32 + j] = (float)(int8_t)blk[2 + j] * d;
        }
}
