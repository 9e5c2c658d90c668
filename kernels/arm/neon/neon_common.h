/// Helpers shared by the Arm kernels (static inline only; the includer must be
/// compiled for AArch64 with at least Armv8.0 ASIMD, i.e. any of the neon,
/// neondot and neoni8mm tiers).
#ifndef QK_NEON_COMMON_H
#define QK_NEON_COMMON_H

#if !defined(__aarch64__) || !defined(__ARM_NEON)
#error "neon_common.h needs the neon tier's flags (AArch64 ASIMD)"
#endif

#include <arm_neon.h>

#include "internal.h"

/// Largest |x| over n values, as FMAX computes it: NaN and Inf propagate, so
/// the result is finite iff every value is (for finite values it equals the
/// reference's fmaxf chain exactly: a maximum has no rounding).
static inline float qk_neon_absmax(const float *x, size_t n) {
    float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = vmaxq_f32(a0, vabsq_f32(vld1q_f32(x + i)));
        a1 = vmaxq_f32(a1, vabsq_f32(vld1q_f32(x + i + 4)));
        a2 = vmaxq_f32(a2, vabsq_f32(vld1q_f32(x + i + 8)));
        a3 = vmaxq_f32(a3, vabsq_f32(vld1q_f32(x + i + 12)));
    }
    for (; i + 4 <= n; i += 4) a0 = vmaxq_f32(a0, vabsq_f32(vld1q_f32(x + i)));
    for (; i < n; i++) a1 = vmaxq_f32(a1, vabsq_f32(vdupq_n_f32(x[i])));
    return vmaxvq_f32(vmaxq_f32(vmaxq_f32(a0, a1), vmaxq_f32(a2, a3)));
}

/// Min and max over n >= 1 values with FMIN/FMAX: NaN propagates, -0 < +0
/// (as the reference's qk_min_z/qk_max_z order them), so for finite values
/// the result equals the reference's.
static inline void qk_neon_minmax(const float *x, size_t n, float *mn, float *mx) {
    float32x4_t lo0 = vdupq_n_f32(x[0]), hi0 = lo0, lo1 = lo0, hi1 = lo0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        float32x4_t v0 = vld1q_f32(x + i), v1 = vld1q_f32(x + i + 4);
        lo0 = vminq_f32(lo0, v0);
        hi0 = vmaxq_f32(hi0, v0);
        lo1 = vminq_f32(lo1, v1);
        hi1 = vmaxq_f32(hi1, v1);
    }
    for (; i < n; i++) {
        float32x4_t v = vdupq_n_f32(x[i]);
        lo0 = vminq_f32(lo0, v);
        hi0 = vmaxq_f32(hi0, v);
    }
    *mn = vminvq_f32(vminq_f32(lo0, lo1));
    *mx = vmaxvq_f32(vmaxq_f32(hi0, hi1));
}

/// round half away from zero of v·id for 16 values, saturated to int8, then
/// clamped to [lo, hi]: the reference's clamp(round(x·id)) (FCVTAS rounds
/// exactly as roundf; saturation keeps the order, so clamping after it agrees).
static inline int8x16_t qk_neon_round16(const float *x, float32x4_t id, int8x16_t lo, int8x16_t hi) {
    int32x4_t q0 = vcvtaq_s32_f32(vmulq_f32(vld1q_f32(x), id));
    int32x4_t q1 = vcvtaq_s32_f32(vmulq_f32(vld1q_f32(x + 4), id));
    int32x4_t q2 = vcvtaq_s32_f32(vmulq_f32(vld1q_f32(x + 8), id));
    int32x4_t q3 = vcvtaq_s32_f32(vmulq_f32(vld1q_f32(x + 12), id));
    int16x8_t h0 = vcombine_s16(vqmovn_s32(q0), vqmovn_s32(q1));
    int16x8_t h1 = vcombine_s16(vqmovn_s32(q2), vqmovn_s32(q3));
    int8x16_t b = vcombine_s8(vqmovn_s16(h0), vqmovn_s16(h1));
    return vminq_s8(vmaxq_s8(b, lo), hi);
}

/// The same as qk_neon_round16 for w4a: round((x - m)·id) (a subtract, then a multiply).
static inline int8x16_t qk_neon_round16_off(const float *x, float32x4_t m, float32x4_t id, int8x16_t lo, int8x16_t hi) {
    int32x4_t q0 = vcvtaq_s32_f32(vmulq_f32(vsubq_f32(vld1q_f32(x), m), id));
    int32x4_t q1 = vcvtaq_s32_f32(vmulq_f32(vsubq_f32(vld1q_f32(x + 4), m), id));
    int32x4_t q2 = vcvtaq_s32_f32(vmulq_f32(vsubq_f32(vld1q_f32(x + 8), m), id));
    int32x4_t q3 = vcvtaq_s32_f32(vmulq_f32(vsubq_f32(vld1q_f32(x + 12), m), id));
    int16x8_t h0 = vcombine_s16(vqmovn_s32(q0), vqmovn_s32(q1));
    int16x8_t h1 = vcombine_s16(vqmovn_s32(q2), vqmovn_s32(q3));
    int8x16_t b = vcombine_s8(vqmovn_s16(h0), vqmovn_s16(h1));
    return vminq_s8(vmaxq_s8(b, lo), hi);
}

/// Sum of 16 int8 values into four int32 lanes.
static inline int32x4_t qk_neon_sum16(int32x4_t acc, int8x16_t v) { return vpadalq_s16(acc, vpaddlq_s8(v)); }

/// Two codes per byte (the plain int4 layout) from 32 codes in element order
/// c0 = elements 0..15, c1 = 16..31: byte i = c[2i] | c[2i+1] << 4.
static inline uint8x16_t qk_neon_pack_nibbles(uint8x16_t c0, uint8x16_t c1) {
    return vsliq_n_u8(vuzp1q_u8(c0, c1), vuzp2q_u8(c0, c1), 4);
}

/// 16 int8 values -> four f32 vectors.
static inline void qk_neon_s8_to_f32(int8x16_t v, float32x4_t f[4]) {
    int16x8_t l = vmovl_s8(vget_low_s8(v)), h = vmovl_high_s8(v);
    f[0] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(l)));
    f[1] = vcvtq_f32_s32(vmovl_high_s16(l));
    f[2] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(h)));
    f[3] = vcvtq_f32_s32(vmovl_high_s16(h));
}

/// 16 uint8 values -> four f32 vectors.
static inline void qk_neon_u8_to_f32(uint8x16_t v, float32x4_t f[4]) {
    uint16x8_t l = vmovl_u8(vget_low_u8(v)), h = vmovl_high_u8(v);
    f[0] = vcvtq_f32_u32(vmovl_u16(vget_low_u16(l)));
    f[1] = vcvtq_f32_u32(vmovl_high_u16(l));
    f[2] = vcvtq_f32_u32(vmovl_u16(vget_low_u16(h)));
    f[3] = vcvtq_f32_u32(vmovl_high_u16(h));
}

/// Integer dot of 16 int8 pairs into four int32 lanes, Armv8.0 (SMULL +
/// SADALP): exact for any int8 inputs (each lane gains at most 4·2^14).
static inline int32x4_t qk_neon_dot16_v80(int32x4_t acc, int8x16_t a, int8x16_t b) {
    acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(a), vget_low_s8(b)));
    return vpadalq_s16(acc, vmull_high_s8(a, b));
}

/// Stored codes of elements [k0, k0 + n) of row r, one per byte, for the pack
/// functions: the raw nibble (0..15) for w4s, w4a and q4_0 (w4s and q4_0
/// mean nibble - 8), the int8 code for w8s and q8_0. A q4_0/q8_0 range must
/// lie inside one 32-block.
static inline void qk_arm_row_codes(const qk_qmat *w, size_t r, size_t k0, size_t n, uint8_t *out) {
    const uint8_t *row = w->codes + r * w->row_bytes;
    switch (w->format) {
    case QK_W4S:
    case QK_W4A:
    case QK_Q4_0:
        for (size_t i = 0; i < n; i++) out[i] = (uint8_t)qk_row_stored(row, w->format, k0 + i);
        break;
    case QK_W8S: memcpy(out, row + k0, n); break;
    default: memcpy(out, row + k0 / 32 * QK_Q8_0_BYTES + 2 + k0 % 32, n); break;
    }
}

/// Copy n < 16 int8 values into a zero-padded 16-byte vector (group tails).
static inline int8x16_t qk_neon_load_partial_s8(const int8_t *p, size_t n) {
    int8_t t[16] = {0};
    memcpy(t, p, n);
    return vld1q_s8(t);
}

#endif
