/* Integer-activation gemm with packed weights, Armv8.2 i8mm, register tile
 * 4x8 (W4A8, W4A4: w4s, w4a; W8A8: w8s; q4_0·q8_0; q8_0·q8_0).
 *
 * SMMLA multiplies a 2x8 int8 block of X (two rows, 8 k) by an 8x2 block of
 * Wᵀ (two weight rows, 8 k) into a 2x2 int32 block: 32 multiply-adds per
 * instruction, twice SDOT's 16.
 *
 * Packed layout, pack and driver: arm/neon/gemm_int_4x8_driver.h; code order: code_at.
 *
 * Per group, exact int32 dots, then y += d·sa·dot (w4s and q4_0 nibbles mean
 * q + 8: dot - 8·Σqa, exactly, from actquant's group sums), or for w4a
 * y += d·sa·dot + m·sa·Σqa. An odd last row of X is paired with itself and
 * its twin result dropped. Dots are exact while |dot| < 2^31. */
#if !defined(__aarch64__) || !defined(__ARM_FEATURE_MATMUL_INT8)
#error "this file needs the neoni8mm tier's flags"
#endif
#define QK_I4X8_PAD 8
#define QK_I4X8_TIER neoni8mm

#include <stddef.h>

/* Codes per 8 k ("oct"), for each row pair p = 0..3 the 16 bytes [row 2p: 8 k][row 2p+1: 8 k];
 * 8 bits: 64 bytes (pairs 0..3); 4 bits: 32 bytes, byte i = pair0[i] | pair1[i] << 4, then
 * byte 16 + i = pair2[i] | pair3[i] << 4. */
static size_t code_at(size_t r, size_t k, int c8, unsigned *shift) {
    size_t pair = r / 2, oct = k / 8, pos = (r % 2) * 8 + k % 8;
    if (c8) return oct * 64 + pair * 16 + pos;
    *shift = 4 * (unsigned)(pair % 2);
    return oct * 32 + (pair / 2) * 16 + pos;
}

#include "arm/neon/gemm_int_4x8_driver.h"

QK_AI int8x8_t load8(const int8_t *p, size_t avail) {
    if (avail >= 8) return vld1_s8(p);
    int8_t t[8] = {0};
    memcpy(t, p, avail);
    return vld1_s8(t);
}

QK_AI float32x4_t dup_pair(const float *p) {
    float32x2_t v = vld1_f32(p);
    return vcombine_f32(v, v);
}

/* y[R][nv] = rows m0..m0+R-1 of X against one packed tile. */
QK_AI void tile_rows(const qk_matmul_args *a, const uint8_t *tile, size_t m0, size_t n0, size_t nv, const int R, code_kind c) {
    enum { P = MR / 2 };
    const int np = (R + 1) / 2;
    const qk_qact *xq = a->xq;
    const size_t g = a->group, ng = a->K / g, gp = padded(g), gb = group_bytes(a->w, c);
    size_t rows[MR];
    for (int r = 0; r < 2 * np; r++) rows[r] = m0 + (r < R ? r : R - 1);
    float32x4_t f[P][4];
    for (int q = 0; q < np; q++)
        for (int p = 0; p < 4; p++) f[q][p] = vdupq_n_f32(0.0f);
    for (size_t j = 0; j < ng; j++) {
        const uint8_t *grp = tile + j * gb, *codes = grp + 64;
        int32x4_t acc[P][4];
        for (int q = 0; q < np; q++)
            for (int p = 0; p < 4; p++) acc[q][p] = vdupq_n_s32(0);
        for (size_t kk = 0; kk < gp; kk += 8) {
            int8x16_t xa[P];
            for (int q = 0; q < np; q++) {
                const int8_t *x0 = xq->codes + rows[2 * q] * xq->cols + j * g + kk;
                const int8_t *x1 = xq->codes + rows[2 * q + 1] * xq->cols + j * g + kk;
                xa[q] = vcombine_s8(load8(x0, g - kk), load8(x1, g - kk));
            }
            int8x16_t b[4];
            if (c == C8) {
                for (int p = 0; p < 4; p++) b[p] = vld1q_s8((const int8_t *)codes + kk * 8 + p * 16);
            } else {
                uint8x16_t v0 = vld1q_u8(codes + kk * 4), v1 = vld1q_u8(codes + kk * 4 + 16);
                b[0] = vreinterpretq_s8_u8(vandq_u8(v0, vdupq_n_u8(15)));
                b[1] = vreinterpretq_s8_u8(vshrq_n_u8(v0, 4));
                b[2] = vreinterpretq_s8_u8(vandq_u8(v1, vdupq_n_u8(15)));
                b[3] = vreinterpretq_s8_u8(vshrq_n_u8(v1, 4));
            }
            for (int q = 0; q < np; q++)
                for (int p = 0; p < 4; p++) acc[q][p] = vmmlaq_s32(acc[q][p], xa[q], b[p]);
        }
        const float *d = (const float *)grp, *mw = (const float *)grp + 8;
        for (int q = 0; q < np; q++) {
            size_t i0 = rows[2 * q] * ng + j, i1 = rows[2 * q + 1] * ng + j;
            float sa0 = xq->scales[i0], sa1 = xq->scales[i1];
            int32_t s0 = xq->sums[i0], s1 = xq->sums[i1];
            const float32x4_t sa = vcombine_f32(vdup_n_f32(sa0), vdup_n_f32(sa1));
            const int32x4_t off = vcombine_s32(vdup_n_s32(8 * s0), vdup_n_s32(8 * s1));
            const float32x4_t ms = vcombine_f32(vdup_n_f32(sa0 * (float)s0), vdup_n_f32(sa1 * (float)s1));
            for (int p = 0; p < 4; p++) {
                int32x4_t dot = c == C4_OFF8 ? vsubq_s32(acc[q][p], off) : acc[q][p];
                f[q][p] = vfmaq_f32(f[q][p], vcvtq_f32_s32(dot), vmulq_f32(dup_pair(d + 2 * p), sa));
                if (c == C4_AFFINE) f[q][p] = vfmaq_f32(f[q][p], dup_pair(mw + 2 * p), ms);
            }
        }
    }
    for (int q = 0; q < np; q++)
        for (int h = 0; h < 2 && 2 * q + h < R; h++) {
            float32x4_t lo, hi;
            if (h == 0) {
                lo = vcombine_f32(vget_low_f32(f[q][0]), vget_low_f32(f[q][1]));
                hi = vcombine_f32(vget_low_f32(f[q][2]), vget_low_f32(f[q][3]));
            } else {
                lo = vcombine_f32(vget_high_f32(f[q][0]), vget_high_f32(f[q][1]));
                hi = vcombine_f32(vget_high_f32(f[q][2]), vget_high_f32(f[q][3]));
            }
            float *y = a->y + (m0 + 2 * q + h) * a->ldy + n0;
            if (nv == NR) {
                vst1q_f32(y, lo);
                vst1q_f32(y + 4, hi);
            } else {
                float t[NR];
                vst1q_f32(t, lo);
                vst1q_f32(t + 4, hi);
                memcpy(y, t, nv * sizeof(float));
            }
        }
}

QK_I4X8_ENTRY_POINTS
