/* The int8 dot as W8A8 runs it at g = 32, one loop for every SIMD tier (the
 * including peak_<tier>.c has its tier's flags and defines the vector ops):
 * a PG_ROWS x 3 tile of int32 accumulators (rows: activation codes, columns:
 * weight codes), each given the dot of one group of 32 values per lane
 * (PG_STEPS dots), then converted, multiplied by its scale (a column's weight
 * scale times a row's activation scale: one multiply) and added into f32
 * (one FMA), as the gemm kernels do. Counts only the dot's operations, so
 * its rate compares with the plain dot's.
 *
 *   PG_NAME                    the function
 *   PG_ZMM, PG_YMM or PG_NEON  the vectors (zmm: 4 rows on 32 registers; ymm: 2 rows on 16;
 *                              neon: 4 rows, int32x4_t for the codes too)
 *   PG_DOT(c, u, s)            c + the dot of unsigned-side u and signed-side s
 *   PG_STEPS                   dots per group of 32 (default 8: 4 values per lane each)
 *   OPAQUE(v)                  hides v from the optimizer */
#if defined(PG_ZMM)
#define PG_ROWS 4
#define PG_LANES 16
#define PG_I __m512i
#define PG_F __m512
#define PG_ZERO_I _mm512_setzero_si512()
#define PG_ZERO_F _mm512_setzero_ps()
#define PG_SET_I8(v) _mm512_set1_epi8((char)(v))
#define PG_SET_F(v) _mm512_set1_ps(v)
#define PG_CVT(c) _mm512_cvtepi32_ps(c)
#define PG_MUL(a, b) _mm512_mul_ps(a, b)
#define PG_FMA(f, x, y) _mm512_fmadd_ps(x, y, f)
#define PG_SUM(f) (double)_mm512_reduce_add_ps(f)
#elif defined(PG_YMM)
#define PG_ROWS 2
#define PG_LANES 8
#define PG_I __m256i
#define PG_F __m256
#define PG_ZERO_I _mm256_setzero_si256()
#define PG_ZERO_F _mm256_setzero_ps()
#define PG_SET_I8(v) _mm256_set1_epi8((char)(v))
#define PG_SET_F(v) _mm256_set1_ps(v)
#define PG_CVT(c) _mm256_cvtepi32_ps(c)
#define PG_MUL(a, b) _mm256_mul_ps(a, b)
#define PG_FMA(f, x, y) _mm256_fmadd_ps(x, y, f)
static double pg_sum_ymm(__m256 v) {
    float f[8];
    _mm256_storeu_ps(f, v);
    return (double)f[0] + f[1] + f[2] + f[3] + f[4] + f[5] + f[6] + f[7];
}
#define PG_SUM(f) pg_sum_ymm(f)
#elif defined(PG_NEON)
#define PG_ROWS 4
#define PG_LANES 4
#define PG_I int32x4_t
#define PG_F float32x4_t
#define PG_ZERO_I vdupq_n_s32(0)
#define PG_ZERO_F vdupq_n_f32(0)
#define PG_SET_I8(v) vreinterpretq_s32_s8(vdupq_n_s8((int8_t)(v)))
#define PG_SET_F(v) vdupq_n_f32(v)
#define PG_CVT(c) vcvtq_f32_s32(c)
#define PG_MUL(a, b) vmulq_f32(a, b)
#define PG_FMA(f, x, y) vfmaq_f32(f, x, y)
#define PG_SUM(f) (double)vaddvq_f32(f)
#else
#error "define PG_ZMM, PG_YMM or PG_NEON before including peak_i8g32.h"
#endif
#ifndef PG_STEPS
#define PG_STEPS 8
#endif

double PG_NAME(uint64_t iters, volatile double *sink) {
    PG_I u0 = PG_SET_I8(5), u1 = PG_SET_I8(6), u2 = PG_SET_I8(7), s[PG_ROWS];
    PG_F w0 = PG_SET_F(1e-3f), w1 = PG_SET_F(2e-3f), w2 = PG_SET_F(3e-3f), a[PG_ROWS], f[PG_ROWS];
#pragma GCC unroll 4
    for (int m = 0; m < PG_ROWS; m++) s[m] = PG_SET_I8((m & 1 ? 2 : -3) + m), a[m] = PG_SET_F(0.5f / (float)(m + 1)), f[m] = PG_ZERO_F;
    for (uint64_t it = 0; it < iters; it++) {
#pragma GCC unroll 4
        for (int m = 0; m < PG_ROWS; m++) OPAQUE(a[m]);
#pragma GCC unroll 4
        for (int m = 0; m < PG_ROWS; m++) {
            PG_I c0 = PG_ZERO_I, c1 = c0, c2 = c0;
#pragma GCC unroll 8
            for (int k = 0; k < PG_STEPS; k++) {
                OPAQUE(u0); /* new weights each step: nothing repeats that could be folded */
                OPAQUE(u1);
                OPAQUE(u2);
                c0 = PG_DOT(c0, u0, s[m]);
                c1 = PG_DOT(c1, u1, s[m]);
                c2 = PG_DOT(c2, u2, s[m]);
            }
            f[m] = PG_FMA(f[m], PG_CVT(c0), PG_MUL(w0, a[m]));
            f[m] = PG_FMA(f[m], PG_CVT(c1), PG_MUL(w1, a[m]));
            f[m] = PG_FMA(f[m], PG_CVT(c2), PG_MUL(w2, a[m]));
        }
    }
    double t = 0;
    for (int m = 0; m < PG_ROWS; m++) t += PG_SUM(f[m]);
    *sink = t;
    return (double)iters * PG_ROWS * 3 * PG_LANES * 32 * 2;
}
