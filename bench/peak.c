/* The scalar tier's loops (baseline ISA, not vectorized) and the table of
 * every compiled tier's loops. */
#include "peak.h"

#include "qk_build_config.h"

#if defined(__GNUC__) && !defined(__clang__)
#define NO_VECTORIZE __attribute__((optimize("no-tree-vectorize", "no-tree-slp-vectorize")))
#else
#define NO_VECTORIZE
#endif
/* Hide a value from the optimizer: it may have changed (it has not). */
#define OPAQUE(v) __asm__ volatile("" : "+r"(v))
#if defined(__x86_64__) || defined(__i386__)
#define OPAQUE_F(v) __asm__ volatile("" : "+x"(v))
#elif defined(__aarch64__)
#define OPAQUE_F(v) __asm__ volatile("" : "+w"(v))
#else
#define OPAQUE_F(v) __asm__ volatile("" : "+g"(v))
#endif

/* 12 independent chains of a multiply and an add (the baseline ISA has no FMA). */
NO_VECTORIZE double qkb_peak_f32__scalar(uint64_t iters, volatile double *sink) {
    float a[12], b = 0.999999f, c = 1e-6f;
    for (int i = 0; i < 12; i++) a[i] = 1.0f + (float)i * 0.01f;
    float a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3], a4 = a[4], a5 = a[5];
    float a6 = a[6], a7 = a[7], a8 = a[8], a9 = a[9], a10 = a[10], a11 = a[11];
    for (uint64_t it = 0; it < iters; it++) {
        OPAQUE_F(b);
        OPAQUE_F(c);
        a0 = a0 * b + c, a1 = a1 * b + c, a2 = a2 * b + c, a3 = a3 * b + c;
        a4 = a4 * b + c, a5 = a5 * b + c, a6 = a6 * b + c, a7 = a7 * b + c;
        a8 = a8 * b + c, a9 = a9 * b + c, a10 = a10 * b + c, a11 = a11 * b + c;
    }
    *sink = (double)(a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11);
    return (double)iters * 12 * 2;
}

/* 8 chains of acc += x·y on int32 (what the reference's integer dot does per element). */
NO_VECTORIZE double qkb_peak_i8__scalar(uint64_t iters, volatile double *sink) {
    uint32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0; /* wrap, as int32 SIMD lanes do */
    int32_t x = 93, y = -71;
    for (uint64_t it = 0; it < iters; it++) {
        OPAQUE(x);
        OPAQUE(y);
        s0 += (uint32_t)(x * y), s1 += (uint32_t)((x + 1) * y), s2 += (uint32_t)(x * (y + 1)), s3 += (uint32_t)((x - 1) * y);
        s4 += (uint32_t)(x * (y - 1)), s5 += (uint32_t)((x + 2) * y), s6 += (uint32_t)(x * (y + 2)), s7 += (uint32_t)((x - 2) * y);
    }
    *sink = (double)(s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7);
    return (double)iters * 8 * 2;
}

uint64_t qkb_read__scalar(const void *buf, size_t bytes) {
    const uint64_t *p = buf;
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (size_t i = 0; i < bytes / 8; i += 4) s0 += p[i], s1 += p[i + 1], s2 += p[i + 2], s3 += p[i + 3];
    return s0 + s1 + s2 + s3;
}

/* Plain stores; the barrier on the pointer keeps the loop from becoming a call
 * to memset (whose large-size path may stream, or not, by libc version). */
void qkb_write__scalar(void *buf, size_t bytes) {
    uint64_t *p = buf, v = QKB_WRITE_PATTERN;
    for (size_t i = 0; i < bytes / 8; i += 8, v++) {
        OPAQUE(p);
        p[i] = v, p[i + 1] = v, p[i + 2] = v, p[i + 3] = v, p[i + 4] = v, p[i + 5] = v, p[i + 6] = v, p[i + 7] = v;
    }
}

const qkb_peak_tier qkb_peak_tiers[] = {
    {QK_TIER_SCALAR, qkb_peak_f32__scalar, qkb_peak_i8__scalar, NULL, "mulss+addss", "imul+add", qkb_read__scalar, qkb_write__scalar},
#if QK_HAVE_AVX2
    {QK_TIER_AVX2, qkb_peak_f32__avx2, qkb_peak_i8__avx2, qkb_peak_i8g32__avx2, "vfmadd231ps ymm", "vpmaddubsw+vpaddw ymm, vpmaddwd per 8", qkb_read__avx2, qkb_write__avx2},
#endif
#if QK_HAVE_AVXVNNI
    {QK_TIER_AVXVNNI, qkb_peak_f32__avx2, qkb_peak_i8__avxvnni, qkb_peak_i8g32__avxvnni, "vfmadd231ps ymm", "vpdpbusd ymm (VEX)", NULL, NULL},
#endif
#if QK_HAVE_AVX512
    {QK_TIER_AVX512, qkb_peak_f32__avx512, qkb_peak_i8__avx512, qkb_peak_i8g32__avx512, "vfmadd231ps zmm", "vpmaddubsw+vpaddw zmm, vpmaddwd per 8", qkb_read__avx512, qkb_write__avx512},
#endif
#if QK_HAVE_AVX512VNNI
    {QK_TIER_AVX512VNNI, qkb_peak_f32__avx512, qkb_peak_i8__avx512vnni, qkb_peak_i8g32__avx512vnni, "vfmadd231ps zmm", "vpdpbusd zmm", NULL, NULL},
#endif
#if QK_HAVE_NEON
    {QK_TIER_NEON, qkb_peak_f32__neon, qkb_peak_i8__neon, qkb_peak_i8g32__neon, "fmla v.4s", "smull+sadalp", qkb_read__neon, qkb_write__neon},
#endif
#if QK_HAVE_NEONDOT
    {QK_TIER_NEONDOT, qkb_peak_f32__neon, qkb_peak_i8__neondot, qkb_peak_i8g32__neondot, "fmla v.4s", "sdot v.4s", NULL, NULL},
#endif
#if QK_HAVE_NEONI8MM
    {QK_TIER_NEONI8MM, qkb_peak_f32__neon, qkb_peak_i8__neoni8mm, qkb_peak_i8g32__neoni8mm, "fmla v.4s", "smmla", NULL, NULL},
#endif
};
const size_t qkb_peak_tier_count = sizeof qkb_peak_tiers / sizeof qkb_peak_tiers[0];
