/* fp32 <-> fp16 conversions, header-only and without other dependencies:
 * the library (kernels/internal.h, the exported qk_fp32_to_fp16 and
 * qk_fp16_to_fp32) and the tensor reader/writer of bench/tensor_io.c,
 * which the fuzz targets build on its own, share this one copy. Not part
 * of the installed API. */
#ifndef QK_FP16_H
#define QK_FP16_H

#include <stdint.h>
#include <string.h>

/// fp32 -> fp16, round to nearest even, identical to F16C's vcvtps2ph (imm 0)
/// for every input, subnormals and NaN payloads included. Needs the default
/// rounding mode and no flush-to-zero (the library is built without fast-math).
static inline uint16_t qk_f2h(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) /* Inf, or NaN made quiet with its payload's top bits */
        return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u | ((ax >> 13) & 0x3ffu) : 0u));
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 rounds to Inf */
    if (ax >= 0x38800000u) {                                  /* normal half */
        ax += 0xc8000fffu + ((ax >> 13) & 1u);                /* rebias exponent, round to even */
        return (uint16_t)(sign | (ax >> 13));
    }
    /* subnormal half: let the FPU round by adding 0.5f (its ulp is 2^-24) */
    float a, magic = 0.5f;
    memcpy(&a, &ax, 4);
    a += magic;
    uint32_t r, m;
    memcpy(&r, &a, 4);
    memcpy(&m, &magic, 4);
    return (uint16_t)(sign | (r - m));
}

static inline float qk_h2f(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, em = h & 0x7fffu, x;
    if (em > 0x7c00u) x = sign | 0x7fc00000u | ((em & 0x3ffu) << 13); /* NaN, made quiet as F16C does */
    else if (em == 0x7c00u) x = sign | 0x7f800000u;
    else if (em >= 0x0400u) x = sign | ((em << 13) + 0x38000000u);
    else {
        float v = (float)em * 0x1p-24f;
        memcpy(&x, &v, 4);
        x |= sign;
    }
    float f;
    memcpy(&f, &x, 4);
    return f;
}

#endif
