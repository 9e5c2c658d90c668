/* Probe loop of the neoni8mm tier: smmla. */
#if !defined(__ARM_FEATURE_MATMUL_INT8)
#error "peak_neoni8mm.c needs the neoni8mm tier's flags"
#endif
#include <arm_neon.h>

#include "peak.h"

#define OPAQUE(v) __asm__ volatile("" : "+w"(v))

/* 12 independent smmla chains (a 2x8 by 8x2 int8 product: 32 multiply-adds each). */
double qkb_peak_i8__neoni8mm(uint64_t iters, volatile double *sink) {
    int8x16_t u = vdupq_n_s8(5), s = vdupq_n_s8(-3);
    int32x4_t c0 = vdupq_n_s32(0), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0;
    int32x4_t c6 = c0, c7 = c0, c8 = c0, c9 = c0, c10 = c0, c11 = c0;
    for (uint64_t it = 0; it < iters; it++) {
        OPAQUE(u);
        c0 = vmmlaq_s32(c0, u, s), c1 = vmmlaq_s32(c1, u, s), c2 = vmmlaq_s32(c2, u, s), c3 = vmmlaq_s32(c3, u, s);
        c4 = vmmlaq_s32(c4, u, s), c5 = vmmlaq_s32(c5, u, s), c6 = vmmlaq_s32(c6, u, s), c7 = vmmlaq_s32(c7, u, s);
        c8 = vmmlaq_s32(c8, u, s), c9 = vmmlaq_s32(c9, u, s), c10 = vmmlaq_s32(c10, u, s), c11 = vmmlaq_s32(c11, u, s);
    }
    int32x4_t t = vaddq_s32(vaddq_s32(vaddq_s32(c0, c1), vaddq_s32(c2, c3)), vaddq_s32(vaddq_s32(c4, c5), vaddq_s32(c6, c7)));
    t = vaddq_s32(t, vaddq_s32(vaddq_s32(c8, c9), vaddq_s32(c10, c11)));
    *sink = (double)vaddvq_s32(t);
    return (double)iters * 12 * 32 * 2;
}

/* The int8 dot as W8A8 runs it at g = 32: a 4x3 tile of int32 accumulators
 * (rows: activation codes, columns: weight codes), each given the dot of one
 * group of 32 values per lane, then converted, multiplied by its scale (a
 * column's weight scale times a row's activation scale: one fmul) and added
 * into f32 (one fmla). Counts only the dot's operations, so the rate
 * compares with the plain dot's. */
double qkb_peak_i8g32__neoni8mm(uint64_t iters, volatile double *sink) {
    int8x16_t u0 = vdupq_n_s8(5), u1 = vdupq_n_s8(6), u2 = vdupq_n_s8(7);
    int8x16_t s[4] = {vdupq_n_s8(-3), vdupq_n_s8(-2), vdupq_n_s8(2), vdupq_n_s8(3)};
    float32x4_t w0 = vdupq_n_f32(1e-3f), w1 = vdupq_n_f32(2e-3f), w2 = vdupq_n_f32(3e-3f);
    float32x4_t a[4] = {vdupq_n_f32(0.5f), vdupq_n_f32(0.25f), vdupq_n_f32(0.125f), vdupq_n_f32(0.0625f)};
    float32x4_t f[4] = {vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0)};
    for (uint64_t it = 0; it < iters; it++) {
        OPAQUE(a[0]); OPAQUE(a[1]); OPAQUE(a[2]); OPAQUE(a[3]);
#pragma GCC unroll 4
        for (int m = 0; m < 4; m++) {
            int32x4_t c0 = vdupq_n_s32(0), c1 = c0, c2 = c0;
#pragma GCC unroll 16
            for (int k = 0; k < 4; k++) {
                OPAQUE(u0); OPAQUE(u1); OPAQUE(u2); /* new weights each step */
                c0 = vmmlaq_s32(c0, u0, s[m]);
                c1 = vmmlaq_s32(c1, u1, s[m]);
                c2 = vmmlaq_s32(c2, u2, s[m]);
            }
            f[m] = vfmaq_f32(f[m], vcvtq_f32_s32(c0), vmulq_f32(w0, a[m]));
            f[m] = vfmaq_f32(f[m], vcvtq_f32_s32(c1), vmulq_f32(w1, a[m]));
            f[m] = vfmaq_f32(f[m], vcvtq_f32_s32(c2), vmulq_f32(w2, a[m]));
        }
    }
    *sink = (double)vaddvq_f32(vaddq_f32(vaddq_f32(f[0], f[1]), vaddq_f32(f[2], f[3])));
    return (double)iters * 12 * 4 * 32 * 2;
}

double qkb_peak_f32__neoni8mm(uint64_t iters, volatile double *sink) { return qkb_peak_f32__neon(iters, sink); }
uint64_t qkb_read__neoni8mm(const void *buf, size_t bytes) { return qkb_read__neon(buf, bytes); }
