/// Integer-activation matmul on the plain weight layout, shared by the neon
/// and neondot tiers: the includer defines QK_ARM_DOT16(acc, a, b), which adds
/// the dot of 16 int8 pairs (a: weights, b: activations) into four int32 lanes
/// (SMULL + SADALP on Armv8.0, SDOT with dotprod), then includes this file.
///
/// One activation row against a block of R <= 4 weight rows: per group, exact
/// int32 dots (activation codes loaded once for the R rows), then one f32
/// update per row, y += sw·sa·dot, or for w4a y += sa·(m·Σqa + d·dot).
/// 4-bit plain codes stay unsigned nibbles: the activation codes are split
/// into even and odd elements once (UZP1/UZP2) to meet the low and high
/// nibbles, and w4s/q4_0's -8 comes back as -8·Σqa, exactly, from the group
/// sums actquant wrote. Dots are exact while a group's |dot| < 2^31 (g up to
/// 133,000 at 8 bits).
#ifndef QK_MATMUL_INT_BODY_H
#define QK_MATMUL_INT_BODY_H

#ifndef QK_ARM_DOT16
#error "define QK_ARM_DOT16(acc, a, b) before including matmul_int_body.h"
#endif

#include "arm/neon/neon_common.h"

#define QK_AI static inline __attribute__((always_inline))

/* Scalar dot of a group tail [i0, g): codes decoded as the kernel reads them
 * (4-bit plain: unsigned nibble). */
QK_AI int32_t int_tail(const uint8_t *row, qk_format f, const int8_t *xg, size_t j, size_t g, size_t i0) {
    int32_t s = 0;
    for (size_t i = i0; i < g; i++) {
        size_t k = j * g + i;
        int c = f == QK_W8S ? (int8_t)row[k] : (row[k / 2] >> (4 * (k & 1))) & 15;
        s += c * xg[i];
    }
    return s;
}

QK_AI void int_rows(const qk_matmul_args *a, size_t m, size_t n, const int R, const qk_format f) {
    const qk_qmat *w = a->w;
    const qk_qact *xq = a->xq;
    const size_t g = a->group, ng = a->K / g;
    const int8_t *xr = xq->codes + m * xq->cols;
    const float *sa = xq->scales + m * ng;
    const int32_t *sx = xq->sums + m * ng;
    const uint8_t *row[4];
    for (int r = 0; r < R; r++) row[r] = w->codes + (n + r) * w->row_bytes;
    const uint8x16_t mask = vdupq_n_u8(15);
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (size_t j = 0; j < ng; j++) {
        const int8_t *xg = xr + j * g;
        int32x4_t vi[4];
        int32_t tail[4] = {0, 0, 0, 0};
        for (int r = 0; r < R; r++) vi[r] = vdupq_n_s32(0);
        if (f == QK_W4S || f == QK_W4A) {
            size_t i = 0;
            for (; i + 32 <= g; i += 32) {
                int8x16_t x0 = vld1q_s8(xg + i), x1 = vld1q_s8(xg + i + 16);
                int8x16_t xe = vuzp1q_s8(x0, x1), xo = vuzp2q_s8(x0, x1);
                for (int r = 0; r < R; r++) {
                    uint8x16_t b = vld1q_u8(row[r] + (j * g + i) / 2);
                    vi[r] = QK_ARM_DOT16(vi[r], vreinterpretq_s8_u8(vandq_u8(b, mask)), xe);
                    vi[r] = QK_ARM_DOT16(vi[r], vreinterpretq_s8_u8(vshrq_n_u8(b, 4)), xo);
                }
            }
            if (i < g)
                for (int r = 0; r < R; r++) tail[r] = int_tail(row[r], f, xg, j, g, i);
        } else if (f == QK_W8S) {
            size_t i = 0;
            for (; i + 16 <= g; i += 16) {
                int8x16_t x0 = vld1q_s8(xg + i);
                for (int r = 0; r < R; r++) vi[r] = QK_ARM_DOT16(vi[r], vld1q_s8((const int8_t *)row[r] + j * g + i), x0);
            }
            if (i < g)
                for (int r = 0; r < R; r++) tail[r] = int_tail(row[r], f, xg, j, g, i);
        } else if (f == QK_Q4_0) {
            int8x16_t x0 = vld1q_s8(xg), x1 = vld1q_s8(xg + 16);
            for (int r = 0; r < R; r++) {
                uint8x16_t b = vld1q_u8(row[r] + j * QK_Q4_0_BYTES + 2);
                vi[r] = QK_ARM_DOT16(vi[r], vreinterpretq_s8_u8(vandq_u8(b, mask)), x0);
                vi[r] = QK_ARM_DOT16(vi[r], vreinterpretq_s8_u8(vshrq_n_u8(b, 4)), x1);
            }
        } else { /* QK_Q8_0 */
            int8x16_t x0 = vld1q_s8(xg), x1 = vld1q_s8(xg + 16);
            for (int r = 0; r < R; r++) {
                const int8_t *c = (const int8_t *)row[r] + j * QK_Q8_0_BYTES + 2;
                vi[r] = QK_ARM_DOT16(vi[r], vld1q_s8(c), x0);
                vi[r] = QK_ARM_DOT16(vi[r], vld1q_s8(c + 16), x1);
            }
        }
        for (int r = 0; r < R; r++) {
            int32_t dot = vaddvq_s32(vi[r]) + tail[r];
            size_t si = (n + r) * ng + j;
            if (f == QK_W4A) {
                float d = qk_load_scale(w->scales, si, w->scale_type), mw = qk_load_scale(w->mins, si, w->scale_type);
                acc[r] += sa[j] * (mw * (float)sx[j] + d * (float)dot);
            } else {
                float sw;
                if (f == QK_Q4_0) sw = qk_h2f(qk_rd16(row[r] + j * QK_Q4_0_BYTES));
                else if (f == QK_Q8_0) sw = qk_h2f(qk_rd16(row[r] + j * QK_Q8_0_BYTES));
                else sw = qk_load_scale(w->scales, si, w->scale_type);
                if (f == QK_W4S || f == QK_Q4_0) dot -= 8 * sx[j];
                acc[r] += (sw * sa[j]) * (float)dot;
            }
        }
    }
    for (int r = 0; r < R; r++) a->y[m * a->ldy + n + r] = acc[r];
}

/// Y = X·Wᵀ for every activation row, weight rows four at a time (tile 1x4).
QK_AI void int_matmul(const qk_matmul_args *a, const qk_format f) {
    for (size_t m = 0; m < a->M; m++) {
        size_t n = 0;
        for (; n + 4 <= a->N; n += 4) int_rows(a, m, n, 4, f);
        switch (a->N - n) {
        case 3: int_rows(a, m, n, 3, f); break;
        case 2: int_rows(a, m, n, 2, f); break;
        case 1: int_rows(a, m, n, 1, f); break;
        default: break;
        }
    }
}

#undef QK_AI
#endif
