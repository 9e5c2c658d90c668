/* Probe loop of the neondot tier: sdot. */
#if !defined(__ARM_FEATURE_DOTPROD)
#error "peak_neondot.c needs the neondot tier's flags"
#endif
#include <arm_neon.h>

#include "peak.h"

#define OPAQUE(v) __asm__ volatile("" : "+w"(v))

/* 12 independent sdot chains (16 int8 multiply-adds each). */
double qkb_peak_i8__neondot(uint64_t iters, volatile double *sink) {
    int8x16_t u = vdupq_n_s8(5), s = vdupq_n_s8(-3);
    int32x4_t c0 = vdupq_n_s32(0), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0;
    int32x4_t c6 = c0, c7 = c0, c8 = c0, c9 = c0, c10 = c0, c11 = c0;
    for (uint64_t it = 0; it < iters; it++) {
        OPAQUE(u);
        c0 = vdotq_s32(c0, u, s), c1 = vdotq_s32(c1, u, s), c2 = vdotq_s32(c2, u, s), c3 = vdotq_s32(c3, u, s);
        c4 = vdotq_s32(c4, u, s), c5 = vdotq_s32(c5, u, s), c6 = vdotq_s32(c6, u, s), c7 = vdotq_s32(c7, u, s);
        c8 = vdotq_s32(c8, u, s), c9 = vdotq_s32(c9, u, s), c10 = vdotq_s32(c10, u, s), c11 = vdotq_s32(c11, u, s);
    }
    int32x4_t t = vaddq_s32(vaddq_s32(vaddq_s32(c0, c1), vaddq_s32(c2, c3)), vaddq_s32(vaddq_s32(c4, c5), vaddq_s32(c6, c7)));
    t = vaddq_s32(t, vaddq_s32(vaddq_s32(c8, c9), vaddq_s32(c10, c11)));
    *sink = (double)vaddvq_s32(t);
    return (double)iters * 12 * 16 * 2;
}

/* The int8 dot with W8A8's per-group rescale at g = 32 (peak_i8g32.h): sdot. */
#define PG_NAME qkb_peak_i8g32__neondot
#define PG_NEON
#define PG_DOT(c, u, s) vdotq_s32(c, vreinterpretq_s8_s32(u), vreinterpretq_s8_s32(s))
#include "peak_i8g32.h"

double qkb_peak_f32__neondot(uint64_t iters, volatile double *sink) { return qkb_peak_f32__neon(iters, sink); }
uint64_t qkb_read__neondot(const void *buf, size_t bytes) { return qkb_read__neon(buf, bytes); }
