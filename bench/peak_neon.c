/* Probe loops of the neon tier: fmla, the smull/sadalp int8 dot, a streaming
 * read and a streaming write. */
#if !defined(__ARM_NEON)
#error "peak_neon.c needs the neon tier's flags"
#endif
#include <arm_neon.h>

#include "peak.h"

#define OPAQUE(v) __asm__ volatile("" : "+w"(v))

/* 12 independent fmla chains. */
double qkb_peak_f32__neon(uint64_t iters, volatile double *sink) {
    float32x4_t b = vdupq_n_f32(0.999999f), c = vdupq_n_f32(1e-6f);
    float32x4_t a0 = vdupq_n_f32(1.00f), a1 = vdupq_n_f32(1.01f), a2 = vdupq_n_f32(1.02f), a3 = vdupq_n_f32(1.03f);
    float32x4_t a4 = vdupq_n_f32(1.04f), a5 = vdupq_n_f32(1.05f), a6 = vdupq_n_f32(1.06f), a7 = vdupq_n_f32(1.07f);
    float32x4_t a8 = vdupq_n_f32(1.08f), a9 = vdupq_n_f32(1.09f), a10 = vdupq_n_f32(1.10f), a11 = vdupq_n_f32(1.11f);
    for (uint64_t it = 0; it < iters; it++) {
        a0 = vfmaq_f32(c, a0, b), a1 = vfmaq_f32(c, a1, b), a2 = vfmaq_f32(c, a2, b), a3 = vfmaq_f32(c, a3, b);
        a4 = vfmaq_f32(c, a4, b), a5 = vfmaq_f32(c, a5, b), a6 = vfmaq_f32(c, a6, b), a7 = vfmaq_f32(c, a7, b);
        a8 = vfmaq_f32(c, a8, b), a9 = vfmaq_f32(c, a9, b), a10 = vfmaq_f32(c, a10, b), a11 = vfmaq_f32(c, a11, b);
    }
    float32x4_t s = vaddq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)), vaddq_f32(vaddq_f32(a4, a5), vaddq_f32(a6, a7)));
    s = vaddq_f32(s, vaddq_f32(vaddq_f32(a8, a9), vaddq_f32(a10, a11)));
    *sink = (double)vaddvq_f32(s);
    return (double)iters * 12 * 4 * 2;
}

/* 4 chains of smull (8 s8·s8 -> s16) and sadalp (pairwise add into s32), low and high halves. */
double qkb_peak_i8__neon(uint64_t iters, volatile double *sink) {
    int8x16_t s = vdupq_n_s8(-3);
    int8x16_t u0 = vdupq_n_s8(5), u1 = vdupq_n_s8(6), u2 = vdupq_n_s8(7), u3 = vdupq_n_s8(8);
    int32x4_t c0 = vdupq_n_s32(0), c1 = c0, c2 = c0, c3 = c0;
    for (uint64_t it = 0; it < iters; it++) {
        OPAQUE(u0);
        OPAQUE(u1);
        OPAQUE(u2);
        OPAQUE(u3);
        c0 = vpadalq_s16(c0, vmull_s8(vget_low_s8(u0), vget_low_s8(s)));
        c0 = vpadalq_s16(c0, vmull_high_s8(u0, s));
        c1 = vpadalq_s16(c1, vmull_s8(vget_low_s8(u1), vget_low_s8(s)));
        c1 = vpadalq_s16(c1, vmull_high_s8(u1, s));
        c2 = vpadalq_s16(c2, vmull_s8(vget_low_s8(u2), vget_low_s8(s)));
        c2 = vpadalq_s16(c2, vmull_high_s8(u2, s));
        c3 = vpadalq_s16(c3, vmull_s8(vget_low_s8(u3), vget_low_s8(s)));
        c3 = vpadalq_s16(c3, vmull_high_s8(u3, s));
    }
    *sink = (double)vaddvq_s32(vaddq_s32(vaddq_s32(c0, c1), vaddq_s32(c2, c3)));
    return (double)iters * 4 * 16 * 2;
}

/* The int8 dot with W8A8's per-group rescale at g = 32 (peak_i8g32.h): smull/smull2 and sadalp, 8 pairs a group. */
static inline int32x4_t pg_dot_neon(int32x4_t c, int32x4_t u, int32x4_t s) {
    int8x16_t a = vreinterpretq_s8_s32(u), b = vreinterpretq_s8_s32(s);
    c = vpadalq_s16(c, vmull_s8(vget_low_s8(a), vget_low_s8(b)));
    return vpadalq_s16(c, vmull_high_s8(a, b));
}
#define PG_NAME qkb_peak_i8g32__neon
#define PG_NEON
#define PG_DOT(c, u, s) pg_dot_neon(c, u, s)
#include "peak_i8g32.h"

uint64_t qkb_read__neon(const void *buf, size_t bytes) {
    const uint64_t *p = buf;
    uint64x2_t s0 = vdupq_n_u64(0), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = 0; i < bytes / 8; i += 16) {
        s0 = vaddq_u64(s0, vld1q_u64(p + i)), s1 = vaddq_u64(s1, vld1q_u64(p + i + 2));
        s2 = vaddq_u64(s2, vld1q_u64(p + i + 4)), s3 = vaddq_u64(s3, vld1q_u64(p + i + 6));
        s0 = vaddq_u64(s0, vld1q_u64(p + i + 8)), s1 = vaddq_u64(s1, vld1q_u64(p + i + 10));
        s2 = vaddq_u64(s2, vld1q_u64(p + i + 12)), s3 = vaddq_u64(s3, vld1q_u64(p + i + 14));
    }
    return vaddvq_u64(vaddq_u64(vaddq_u64(s0, s1), vaddq_u64(s2, s3)));
}

/* Plain 16-byte stores (the Arm kernels write their outputs so). */
void qkb_write__neon(void *buf, size_t bytes) {
    uint64_t *p = buf;
    uint64x2_t v = vdupq_n_u64(QKB_WRITE_PATTERN), one = vdupq_n_u64(1);
    for (size_t i = 0; i < bytes / 8; i += 8, v = vaddq_u64(v, one)) {
        vst1q_u64(p + i, v), vst1q_u64(p + i + 2, v);
        vst1q_u64(p + i + 4, v), vst1q_u64(p + i + 6, v);
    }
}
