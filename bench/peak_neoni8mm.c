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

/* The int8 dot with W8A8's per-group rescale at g = 32 (peak_i8g32.h): smmla (a 2x2 block of outputs a vector: 4 per group). */
#define PG_NAME qkb_peak_i8g32__neoni8mm
#define PG_NEON
#define PG_STEPS 4
#define PG_DOT(c, u, s) vmmlaq_s32(c, vreinterpretq_s8_s32(u), vreinterpretq_s8_s32(s))
#include "peak_i8g32.h"

double qkb_peak_f32__neoni8mm(uint64_t iters, volatile double *sink) { return qkb_peak_f32__neon(iters, sink); }
uint64_t qkb_read__neoni8mm(const void *buf, size_t bytes) { return qkb_read__neon(buf, bytes); }
