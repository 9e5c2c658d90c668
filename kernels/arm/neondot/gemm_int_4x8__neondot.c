/* Integer-activation gemm with packed weights, Armv8.2 dotprod, register
 * tile 4x8 (W4A8, W4A4: w4s, w4a; W8A8: w8s; q4_0·q8_0; q8_0·q8_0).
 *
 * Packed layout, pack and driver: arm/neon/gemm_int_4x8_driver.h; code order: code_at.
 *
 * Each SDOT by element multiplies one quad of 4 rows by 4 activation codes
 * of one X row: a 16-byte activation load feeds 4 quads × 2 halves. Per
 * group, exact int32 dots, then y += d·sa·dot (w4s and q4_0 nibbles mean
 * q + 8: dot - 8·Σqa, exactly, from actquant's group sums), or for w4a
 * y += d·sa·dot + m·sa·Σqa. Dots are exact while |dot| < 2^31. */
#if !defined(__aarch64__) || !defined(__ARM_FEATURE_DOTPROD)
#error "this file needs the neondot tier's flags"
#endif
#define QK_I4X8_PAD 16
#define QK_I4X8_TIER neondot

#include <stddef.h>

/* Codes per 4 k ("quad"): the 4 k of rows 0..3, then of rows 4..7; 8 bits: 32 bytes
 * (A = rows 0..3, B = rows 4..7); 4 bits: 16 bytes, byte i = A[i] | B[i] << 4. */
static size_t code_at(size_t r, size_t k, int c8, unsigned *shift) {
    size_t quad = k / 4, pos = (r % 4) * 4 + k % 4;
    if (c8) return quad * 32 + (r / 4) * 16 + pos;
    *shift = 4 * (unsigned)(r / 4);
    return quad * 16 + pos;
}

#include "arm/neon/gemm_int_4x8_driver.h"

#define QUAD(q)                                                                      \
    do {                                                                             \
        int8x16_t w0, w1;                                                            \
        if (c == C8) {                                                               \
            w0 = vld1q_s8((const int8_t *)codes + (kk / 4 + (q)) * 32);              \
            w1 = vld1q_s8((const int8_t *)codes + (kk / 4 + (q)) * 32 + 16);         \
        } else {                                                                     \
            uint8x16_t b = vld1q_u8(codes + (kk / 4 + (q)) * 16);                    \
            w0 = vreinterpretq_s8_u8(vandq_u8(b, vdupq_n_u8(15)));                   \
            w1 = vreinterpretq_s8_u8(vshrq_n_u8(b, 4));                              \
        }                                                                            \
        for (int r = 0; r < R; r++) {                                                \
            i0[r] = vdotq_laneq_s32(i0[r], w0, xv[r], q);                            \
            i1[r] = vdotq_laneq_s32(i1[r], w1, xv[r], q);                            \
        }                                                                            \
    } while (0)

/* y[R][nv] = rows m0..m0+R-1 of X against one packed tile. */
QK_AI void tile_rows(const qk_matmul_args *a, const uint8_t *tile, size_t m0, size_t n0, size_t nv, const int R, code_kind c) {
    const qk_qact *xq = a->xq;
    const size_t g = a->group, ng = a->K / g, gp = padded(g), gb = group_bytes(a->w, c);
    float32x4_t f0[MR], f1[MR];
    for (int r = 0; r < R; r++) f0[r] = f1[r] = vdupq_n_f32(0.0f);
    for (size_t j = 0; j < ng; j++) {
        const uint8_t *grp = tile + j * gb, *codes = grp + 64;
        int32x4_t i0[MR], i1[MR];
        for (int r = 0; r < R; r++) i0[r] = i1[r] = vdupq_n_s32(0);
        for (size_t kk = 0; kk < gp; kk += 16) {
            int8x16_t xv[MR];
            for (int r = 0; r < R; r++) {
                const int8_t *xp = xq->codes + (m0 + r) * xq->cols + j * g + kk;
                xv[r] = kk + 16 <= g ? vld1q_s8(xp) : qk_neon_load_partial_s8(xp, g - kk);
            }
            QUAD(0);
            QUAD(1);
            QUAD(2);
            QUAD(3);
        }
        const float32x4_t d0 = vld1q_f32((const float *)grp), d1 = vld1q_f32((const float *)grp + 4);
        for (int r = 0; r < R; r++) {
            float sa = xq->scales[(m0 + r) * ng + j];
            int32_t sum = xq->sums[(m0 + r) * ng + j];
            if (c == C4_OFF8) {
                i0[r] = vsubq_s32(i0[r], vdupq_n_s32(8 * sum));
                i1[r] = vsubq_s32(i1[r], vdupq_n_s32(8 * sum));
            }
            f0[r] = vfmaq_f32(f0[r], vcvtq_f32_s32(i0[r]), vmulq_n_f32(d0, sa));
            f1[r] = vfmaq_f32(f1[r], vcvtq_f32_s32(i1[r]), vmulq_n_f32(d1, sa));
            if (c == C4_AFFINE) {
                float ms = sa * (float)sum;
                f0[r] = vfmaq_n_f32(f0[r], vld1q_f32((const float *)grp + 8), ms);
                f1[r] = vfmaq_n_f32(f1[r], vld1q_f32((const float *)grp + 12), ms);
            }
        }
    }
    for (int r = 0; r < R; r++) {
        float *y = a->y + (m0 + r) * a->ldy + n0;
        if (nv == NR) {
            vst1q_f32(y, f0[r]);
            vst1q_f32(y + 4, f1[r]);
        } else {
            float t[NR];
            vst1q_f32(t, f0[r]);
            vst1q_f32(t + 4, f1[r]);
            memcpy(y, t, nv * sizeof(float));
        }
    }
}

#undef QUAD

QK_I4X8_ENTRY_POINTS
