/* Weight quantization, Armv8.0 ASIMD: bit-exact with kernels/ref/quantize_scalar.c.
 *
 * One group at a time: its absmax (or min/max) with FMAX/FMIN, the scale
 * rounded to its storage type and inverted by the scalar helpers (one per
 * group), then codes 32 values at a time with FCVTAS (round half away) and a
 * saturating narrow. A group whose length is not a multiple of 32 (g = K only)
 * finishes with the reference's scalar expressions. */
#if !defined(__aarch64__) || !defined(__ARM_NEON)
#error "this file needs the neon tier's flags"
#endif
#include "arm/neon/neon_common.h"

static inline int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

int qk_quantize_w4s__neon(const float *x, size_t ldx, const qk_qmat *out) {
    size_t K = out->cols, g = out->group, ng = K / g;
    const int8x16_t lo = vdupq_n_s8(-7), hi = vdupq_n_s8(7), eight = vdupq_n_s8(8);
    int bad = 0;
    for (size_t r = 0; r < out->rows; r++) {
        uint8_t *codes = out->codes + r * out->row_bytes;
        for (size_t j = 0; j < ng; j++) {
            const float *xg = x + r * ldx + j * g;
            float amax = qk_neon_absmax(xg, g);
            if (!isfinite(amax)) {
                bad |= QK_ROW_NONFINITE;
                continue;
            }
            float id = qk_inv_scale(qk_store_scale(out->scales, r * ng + j, out->scale_type, amax / 7.0f, &bad));
            float32x4_t vid = vdupq_n_f32(id);
            uint8_t *cg = codes + j * g / 2;
            size_t i = 0;
            for (; i + 32 <= g; i += 32) {
                int8x16_t c0 = vaddq_s8(qk_neon_round16(xg + i, vid, lo, hi), eight);
                int8x16_t c1 = vaddq_s8(qk_neon_round16(xg + i + 16, vid, lo, hi), eight);
                vst1q_u8(cg + i / 2, qk_neon_pack_nibbles(vreinterpretq_u8_s8(c0), vreinterpretq_u8_s8(c1)));
            }
            for (; i < g; i += 2) {
                int q0 = clampi((int)qk_round_half_away(xg[i] * id), -7, 7);
                int q1 = clampi((int)qk_round_half_away(xg[i + 1] * id), -7, 7);
                cg[i / 2] = (uint8_t)((q0 + 8) | ((q1 + 8) << 4));
            }
        }
    }
    return bad;
}

int qk_quantize_w8s__neon(const float *x, size_t ldx, const qk_qmat *out) {
    size_t K = out->cols, g = out->group, ng = K / g;
    const int8x16_t lo = vdupq_n_s8(-127), hi = vdupq_n_s8(127);
    int bad = 0;
    for (size_t r = 0; r < out->rows; r++) {
        int8_t *codes = (int8_t *)(out->codes + r * out->row_bytes);
        for (size_t j = 0; j < ng; j++) {
            const float *xg = x + r * ldx + j * g;
            float amax = qk_neon_absmax(xg, g);
            if (!isfinite(amax)) {
                bad |= QK_ROW_NONFINITE;
                continue;
            }
            float id = qk_inv_scale(qk_store_scale(out->scales, r * ng + j, out->scale_type, amax / 127.0f, &bad));
            float32x4_t vid = vdupq_n_f32(id);
            int8_t *cg = codes + j * g;
            size_t i = 0;
            for (; i + 16 <= g; i += 16) vst1q_s8(cg + i, qk_neon_round16(xg + i, vid, lo, hi));
            for (; i < g; i++) cg[i] = (int8_t)clampi((int)qk_round_half_away(xg[i] * id), -127, 127);
        }
    }
    return bad;
}

int qk_quantize_w4a__neon(const float *x, size_t ldx, const qk_qmat *out) {
    size_t K = out->cols, g = out->group, ng = K / g;
    const int8x16_t lo = vdupq_n_s8(0), hi = vdupq_n_s8(15);
    int bad = 0;
    for (size_t r = 0; r < out->rows; r++) {
        uint8_t *codes = out->codes + r * out->row_bytes;
        for (size_t j = 0; j < ng; j++) {
            const float *xg = x + r * ldx + j * g;
            float mn, mx;
            qk_neon_minmax(xg, g, &mn, &mx);
            if (!isfinite(mn) || !isfinite(mx)) {
                bad |= QK_ROW_NONFINITE;
                continue;
            }
            float d = (mx - mn) / 15.0f;
            if (!isfinite(d)) bad |= QK_ROW_RANGE;
            float m = qk_store_scale(out->mins, r * ng + j, out->scale_type, mn, &bad);
            d = qk_store_scale(out->scales, r * ng + j, out->scale_type, d, &bad);
            float id = qk_inv_scale(d);
            float32x4_t vid = vdupq_n_f32(id), vm = vdupq_n_f32(m);
            uint8_t *cg = codes + j * g / 2;
            size_t i = 0;
            for (; i + 32 <= g; i += 32) {
                int8x16_t c0 = qk_neon_round16_off(xg + i, vm, vid, lo, hi);
                int8x16_t c1 = qk_neon_round16_off(xg + i + 16, vm, vid, lo, hi);
                vst1q_u8(cg + i / 2, qk_neon_pack_nibbles(vreinterpretq_u8_s8(c0), vreinterpretq_u8_s8(c1)));
            }
            for (; i < g; i += 2) {
                int q0 = clampi((int)qk_round_half_away((xg[i] - m) * id), 0, 15);
                int q1 = clampi((int)qk_round_half_away((xg[i + 1] - m) * id), 0, 15);
                cg[i / 2] = (uint8_t)(q0 | (q1 << 4));
            }
        }
    }
    return bad;
}

/* llama.cpp's q4_0: d = (the first value of largest magnitude, with its sign)
 * / -8; q = min(15, (int8_t)(x·id + 8.5f)), truncation toward zero (FCVTZS). */
int qk_quantize_q4_0__neon(const float *x, size_t ldx, const qk_qmat *out) {
    size_t nb = out->cols / 32;
    const uint8x16_t iota = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    const float32x4_t half8 = vdupq_n_f32(8.5f);
    const uint8x16_t fifteen = vdupq_n_u8(15);
    int bad = 0;
    for (size_t r = 0; r < out->rows; r++) {
        for (size_t b = 0; b < nb; b++) {
            const float *xb = x + r * ldx + b * 32;
            uint8_t *blk = out->codes + r * out->row_bytes + b * QK_Q4_0_BYTES;
            float32x4_t v[8], a[8];
            for (int i = 0; i < 8; i++) {
                v[i] = vld1q_f32(xb + 4 * i);
                a[i] = vabsq_f32(v[i]);
            }
            float amax = vmaxvq_f32(vmaxq_f32(vmaxq_f32(vmaxq_f32(a[0], a[1]), vmaxq_f32(a[2], a[3])),
                                              vmaxq_f32(vmaxq_f32(a[4], a[5]), vmaxq_f32(a[6], a[7]))));
            if (!isfinite(amax)) {
                bad |= QK_ROW_NONFINITE;
                continue;
            }
            float max = 0.0f; /* an all-zero block keeps +0, as the reference's strict < does */
            if (amax > 0.0f) {
                /* index of the first lane with |x| == amax: lane index where equal, else 255; min */
                float32x4_t va = vdupq_n_f32(amax);
                uint16x8_t e0 = vcombine_u16(vmovn_u32(vceqq_f32(a[0], va)), vmovn_u32(vceqq_f32(a[1], va)));
                uint16x8_t e1 = vcombine_u16(vmovn_u32(vceqq_f32(a[2], va)), vmovn_u32(vceqq_f32(a[3], va)));
                uint16x8_t e2 = vcombine_u16(vmovn_u32(vceqq_f32(a[4], va)), vmovn_u32(vceqq_f32(a[5], va)));
                uint16x8_t e3 = vcombine_u16(vmovn_u32(vceqq_f32(a[6], va)), vmovn_u32(vceqq_f32(a[7], va)));
                uint8x16_t m0 = vcombine_u8(vmovn_u16(e0), vmovn_u16(e1)), m1 = vcombine_u8(vmovn_u16(e2), vmovn_u16(e3));
                uint8x16_t i0 = vbslq_u8(m0, iota, vdupq_n_u8(255));
                uint8x16_t i1 = vbslq_u8(m1, vaddq_u8(iota, vdupq_n_u8(16)), vdupq_n_u8(255));
                max = xb[vminvq_u8(vminq_u8(i0, i1))];
            }
            float d = max / -8.0f;
            float id = qk_inv_scale(d);
            uint16_t h = qk_f2h(d);
            if ((h & 0x7c00u) == 0x7c00u) bad |= QK_ROW_RANGE;
            qk_wr16(blk, h);
            float32x4_t vid = vdupq_n_f32(id);
            int32x4_t q[8];
            for (int i = 0; i < 8; i++) q[i] = vcvtq_s32_f32(vaddq_f32(vmulq_f32(v[i], vid), half8));
            /* (int8_t) keeps the low byte, as the reference's conversion does for values in range */
            int16x8_t h0 = vcombine_s16(vmovn_s32(q[0]), vmovn_s32(q[1])), h1 = vcombine_s16(vmovn_s32(q[2]), vmovn_s32(q[3]));
            int16x8_t h2 = vcombine_s16(vmovn_s32(q[4]), vmovn_s32(q[5])), h3 = vcombine_s16(vmovn_s32(q[6]), vmovn_s32(q[7]));
            int8x16_t lo = vcombine_s8(vmovn_s16(h0), vmovn_s16(h1)), hi8 = vcombine_s8(vmovn_s16(h2), vmovn_s16(h3));
            /* min(15, q) on int8 values, then the low nibble (elements 0..15) and high nibble (16..31) */
            uint8x16_t qlo = vreinterpretq_u8_s8(vminq_s8(lo, vreinterpretq_s8_u8(fifteen)));
            uint8x16_t qhi = vreinterpretq_u8_s8(vminq_s8(hi8, vreinterpretq_s8_u8(fifteen)));
            vst1q_u8(blk + 2, vsliq_n_u8(vandq_u8(qlo, fifteen), qhi, 4));
        }
    }
    return bad;
}

/* llama.cpp's q8_0: d = absmax/127, id = 1/d (unrounded d), q = roundf(x·id). */
int qk_quantize_q8_0__neon(const float *x, size_t ldx, const qk_qmat *out) {
    size_t nb = out->cols / 32;
    const int8x16_t lo = vdupq_n_s8(-128), hi = vdupq_n_s8(127);
    int bad = 0;
    for (size_t r = 0; r < out->rows; r++) {
        for (size_t b = 0; b < nb; b++) {
            const float *xb = x + r * ldx + b * 32;
            uint8_t *blk = out->codes + r * out->row_bytes + b * QK_Q8_0_BYTES;
            float amax = qk_neon_absmax(xb, 32);
            if (!isfinite(amax)) {
                bad |= QK_ROW_NONFINITE;
                continue;
            }
            float d = amax / 127.0f;
            float id = qk_inv_scale(d);
            uint16_t h = qk_f2h(d);
            if ((h & 0x7c00u) == 0x7c00u) bad |= QK_ROW_RANGE;
            qk_wr16(blk, h);
            float32x4_t vid = vdupq_n_f32(id);
            vst1q_s8((int8_t *)blk + 2, qk_neon_round16(xb, vid, lo, hi));
            vst1q_s8((int8_t *)blk + 18, qk_neon_round16(xb + 16, vid, lo, hi));
        }
    }
    return bad;
}
