/* Outlier-handling transforms (DESIGN §5), Armv8.0 ASIMD. The drivers are the
 * shared ones of outlier_body.h, on q registers (4 lanes):
 *  - qk_fwht__neon: strides 1 and 2 in registers (a lane permute and one FMA
 *    by a ±1 sign vector, which is exact), 4 ... block/2 as vector loops;
 *  - qk_gemm_f32__neon: from 64 rows of X an 8x8 register tile (16 q
 *    accumulators, one broadcast of X per two FMAs) over W packed per 8-row
 *    panel and 256-wide K slice; fewer rows, a 4x4 dot-product tile;
 *  - qk_gemm_i8__neon: a 4x4 tile of int8 dots, 16 pairs per step (smull,
 *    smull2 into int16, sadalp into int32: exact);
 *  - qk_colscale__neon, qk_colsplit__neon: vector copies; the first n lanes
 *    of a tail go through a zeroed 4-float buffer; scalar gather. */
#if !defined(__aarch64__) || !defined(__ARM_NEON)
#error "this file needs the neon tier's flags"
#endif
#include "arm/neon/neon_common.h"

/* Butterflies of stride 1 and (when top >= 2) 2 inside one vector of 4. */
static inline float32x4_t fwht4(float32x4_t v, size_t top) {
    static const float s1[4] = {1, -1, 1, -1}, s2[4] = {1, 1, -1, -1};
    v = vfmaq_f32(vrev64q_f32(v), v, vld1q_f32(s1));
    if (top >= 2) v = vfmaq_f32(vextq_f32(v, v, 2), v, vld1q_f32(s2));
    return v;
}

static inline float32x4_t loadn(const float *p, size_t n) {
    float b[4] = {0, 0, 0, 0};
    memcpy(b, p, n * sizeof(float));
    return vld1q_f32(b);
}

static inline void storen(float *p, size_t n, float32x4_t v) {
    float b[4];
    vst1q_f32(b, v);
    memcpy(p, b, n * sizeof(float));
}

static inline void gather_row(const float *xr, const uint32_t *idx, size_t nidx, float *orow, float *zr) {
    for (size_t j = 0; j < nidx; j++) {
        orow[j] = xr[idx[j]];
        zr[idx[j]] = 0.0f;
    }
}

/* acc + the 16 int8 products of x and w: int16 products (|p| <= 2^14), pairwise into int32 (exact). */
static inline int32x4_t idot16(int32x4_t acc, const int8_t *x, const int8_t *w) {
    const int8x16_t xv = vld1q_s8(x), wv = vld1q_s8(w);
    acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(xv), vget_low_s8(wv)));
    return vpadalq_s16(acc, vmull_high_s8(xv, wv));
}

#define OB_TIER neon
typedef float32x4_t ob_v;
#define OB_W 4
#define OB_LOAD(p) vld1q_f32(p)
#define OB_STORE(p, v) vst1q_f32((p), (v))
#define OB_LOADN loadn
#define OB_STOREN storen
#define OB_SET1(f) vdupq_n_f32(f)
#define OB_ZERO() vdupq_n_f32(0.0f)
#define OB_ADD vaddq_f32
#define OB_SUB vsubq_f32
#define OB_MUL vmulq_f32
#define OB_FMA(a, b, c) vfmaq_f32((c), (a), (b))
#define OB_HSUM vaddvq_f32
#define OB_FWHT_INREG fwht4
#define OB_GATHER gather_row
#define OB_DOT_MT 4
#define OB_DOT_NT 4
#define OB_PACK_MR 8
#define OB_PACK_KC 256
#define OB_PACK_MIN_M 64 /* below this many rows of X the W panels cost more than they save */
typedef int32x4_t ob_iv;
#define OB_KB 16
#define OB_IZERO() vdupq_n_s32(0)
#define OB_IDOT idot16
#define OB_IHSUM vaddvq_s32
#define OB_I_MT 4
#define OB_I_NT 4
#include "outlier_body.h"
