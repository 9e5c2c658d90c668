/* Dequantization, Armv8.0 ASIMD: bit-exact with kernels/ref/dequantize_scalar.c
 * (s·q; w4a as m + d·q, a multiply then an add, never FMLA). 32 values per
 * step; a group whose length is not a multiple of 32 (g = K only) finishes
 * with the reference's scalar expressions. */
#if !defined(__aarch64__) || !defined(__ARM_NEON)
#error "this file needs the neon tier's flags"
#endif
#include "arm/neon/neon_common.h"

static inline void store_scaled16(float *y, int8x16_t q, float32x4_t s) {
    float32x4_t f[4];
    qk_neon_s8_to_f32(q, f);
    vst1q_f32(y, vmulq_f32(s, f[0]));
    vst1q_f32(y + 4, vmulq_f32(s, f[1]));
    vst1q_f32(y + 8, vmulq_f32(s, f[2]));
    vst1q_f32(y + 12, vmulq_f32(s, f[3]));
}

static inline void store_affine16(float *y, uint8x16_t q, float32x4_t d, float32x4_t m) {
    float32x4_t f[4];
    qk_neon_u8_to_f32(q, f);
    vst1q_f32(y, vaddq_f32(m, vmulq_f32(d, f[0])));
    vst1q_f32(y + 4, vaddq_f32(m, vmulq_f32(d, f[1])));
    vst1q_f32(y + 8, vaddq_f32(m, vmulq_f32(d, f[2])));
    vst1q_f32(y + 12, vaddq_f32(m, vmulq_f32(d, f[3])));
}

void qk_dequantize_w4s__neon(const qk_qmat *w, float *y, size_t ldy) {
    size_t K = w->cols, g = w->group, ng = K / g;
    const uint8x16_t mask = vdupq_n_u8(15);
    const int8x16_t eight = vdupq_n_s8(8);
    for (size_t r = 0; r < w->rows; r++) {
        const uint8_t *codes = w->codes + r * w->row_bytes;
        float *yr = y + r * ldy;
        for (size_t j = 0; j < ng; j++) {
            float s = qk_load_scale(w->scales, r * ng + j, w->scale_type);
            float32x4_t vs = vdupq_n_f32(s);
            const uint8_t *cg = codes + j * g / 2;
            float *yg = yr + j * g;
            size_t i = 0;
            for (; i + 32 <= g; i += 32) {
                uint8x16_t b = vld1q_u8(cg + i / 2);
                uint8x16_t l = vandq_u8(b, mask), h = vshrq_n_u8(b, 4);
                store_scaled16(yg + i, vsubq_s8(vreinterpretq_s8_u8(vzip1q_u8(l, h)), eight), vs);
                store_scaled16(yg + i + 16, vsubq_s8(vreinterpretq_s8_u8(vzip2q_u8(l, h)), eight), vs);
            }
            for (; i < g; i++) yg[i] = s * (float)(((cg[i / 2] >> (4 * (i & 1))) & 15) - 8);
        }
    }
}

void qk_dequantize_w4a__neon(const qk_qmat *w, float *y, size_t ldy) {
    size_t K = w->cols, g = w->group, ng = K / g;
    const uint8x16_t mask = vdupq_n_u8(15);
    for (size_t r = 0; r < w->rows; r++) {
        const uint8_t *codes = w->codes + r * w->row_bytes;
        float *yr = y + r * ldy;
        for (size_t j = 0; j < ng; j++) {
            float d = qk_load_scale(w->scales, r * ng + j, w->scale_type);
            float m = qk_load_scale(w->mins, r * ng + j, w->scale_type);
            float32x4_t vd = vdupq_n_f32(d), vm = vdupq_n_f32(m);
            const uint8_t *cg = codes + j * g / 2;
            float *yg = yr + j * g;
            size_t i = 0;
            for (; i + 32 <= g; i += 32) {
                uint8x16_t b = vld1q_u8(cg + i / 2);
                uint8x16_t l = vandq_u8(b, mask), h = vshrq_n_u8(b, 4);
                store_affine16(yg + i, vzip1q_u8(l, h), vd, vm);
                store_affine16(yg + i + 16, vzip2q_u8(l, h), vd, vm);
            }
            for (; i < g; i++) {
                float dq = d * (float)((cg[i / 2] >> (4 * (i & 1))) & 15);
                yg[i] = m + dq;
            }
        }
    }
}

void qk_dequantize_w8s__neon(const qk_qmat *w, float *y, size_t ldy) {
    size_t K = w->cols, g = w->group, ng = K / g;
    for (size_t r = 0; r < w->rows; r++) {
        const int8_t *codes = (const int8_t *)(w->codes + r * w->row_bytes);
        float *yr = y + r * ldy;
        for (size_t j = 0; j < ng; j++) {
            float s = qk_load_scale(w->scales, r * ng + j, w->scale_type);
            float32x4_t vs = vdupq_n_f32(s);
            const int8_t *cg = codes + j * g;
            float *yg = yr + j * g;
            size_t i = 0;
            for (; i + 16 <= g; i += 16) store_scaled16(yg + i, vld1q_s8(cg + i), vs);
            for (; i < g; i++) yg[i] = s * (float)cg[i];
        }
    }
}

void qk_dequantize_q4_0__neon(const qk_qmat *w, float *y, size_t ldy) {
    size_t nb = w->cols / 32;
    const uint8x16_t mask = vdupq_n_u8(15);
    const int8x16_t eight = vdupq_n_s8(8);
    for (size_t r = 0; r < w->rows; r++)
        for (size_t b = 0; b < nb; b++) {
            const uint8_t *blk = w->codes + r * w->row_bytes + b * QK_Q4_0_BYTES;
            /* (q-8)·d: the reference multiplies code by scale; the product commutes exactly */
            float32x4_t vd = vdupq_n_f32(qk_h2f(qk_rd16(blk)));
            uint8x16_t q = vld1q_u8(blk + 2);
            float *yb = y + r * ldy + b * 32;
            store_scaled16(yb, vsubq_s8(vreinterpretq_s8_u8(vandq_u8(q, mask)), eight), vd);
            store_scaled16(yb + 16, vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(q, 4)), eight), vd);
        }
}

void qk_dequantize_q8_0__neon(const qk_qmat *w, float *y, size_t ldy) {
    size_t nb = w->cols / 32;
    for (size_t r = 0; r < w->rows; r++)
        for (size_t b = 0; b < nb; b++) {
            const uint8_t *blk = w->codes + r * w->row_bytes + b * QK_Q8_0_BYTES;
            float32x4_t vd = vdupq_n_f32(qk_h2f(qk_rd16(blk)));
            float *yb = y + r * ldy + b * 32;
            store_scaled16(yb, vld1q_s8((const int8_t *)blk + 2), vd);
            store_scaled16(yb + 16, vld1q_s8((const int8_t *)blk + 18), vd);
        }
}
