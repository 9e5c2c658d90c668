/* f32-activation gemm with packed weights, Armv8.0 ASIMD, register tile 8x8
 * (W4A32: w4s, w4a, q4_0; W8A32: w8s, q8_0).
 *
 * Packed layout (the pack functions below write it), per tile of 8 weight
 * rows (rows past N are zero), per group j of g values:
 *     f32 d[8], f32 m[8]            scale and offset of each row (m = 0 except w4a)
 *     codes, k-major: for each k the 8 rows' codes, at 4 bits (4 bytes: row
 *     2b in the low nibble of byte b, row 2b+1 in the high) or 8 bits (8 bytes)
 * w4s and q4_0 store q-8 as a signed nibble (two's complement), w4a its
 * unsigned code. Tile bytes = K/g · (64 + g·4) at 4 bits, K/g · (64 + g·8) at 8.
 *
 * The run decodes a panel of 8 rows × KC values of k into f32 on the stack,
 * ŵ = m + d·q in one FMLA (a single rounding: for m = 0 exactly the
 * reference's d·q), then runs an 8x8 FMLA-by-element tile over every
 * activation row against it, so the decoding is paid once per weight, not
 * once per row of X. Y holds the partial sums between panels of k. */
#if !defined(__aarch64__) || !defined(__ARM_NEON)
#error "this file needs the neon tier's flags"
#endif
#include "arm/neon/neon_common.h"

#define QK_AI static inline __attribute__((always_inline))

enum { NR = 8, MR = 8, KC = 256 };
typedef enum { K4S, K4U, K8S } code_kind; /* signed nibbles, unsigned nibbles, int8 */

static size_t group_bytes(const qk_qmat *w, code_kind c) { return 64 + w->group * (c == K8S ? 8 : 4); }
static size_t tile_bytes(const qk_qmat *w, code_kind c) { return w->cols / w->group * group_bytes(w, c); }
static size_t pack_size(const qk_qmat *w, code_kind c) { return (w->rows + NR - 1) / NR * tile_bytes(w, c); }
static size_t packed_offset(const qk_qmat *w, code_kind c, size_t n0) { return n0 / NR * tile_bytes(w, c); }

static void pack(const qk_qmat *w, void *packed, code_kind c) {
    size_t g = w->group, ng = w->cols / g, N = w->rows;
    int signed4 = w->format == QK_W4S || w->format == QK_Q4_0; /* stored nibble q+8 -> q as a signed nibble */
    uint8_t *p = packed, t[32];
    for (size_t n0 = 0; n0 < N; n0 += NR)
        for (size_t j = 0; j < ng; j++, p += group_bytes(w, c)) {
            float d[NR] = {0}, m[NR] = {0};
            memset(p + 64, 0, g * (c == K8S ? 8 : 4));
            for (size_t r = 0; r < NR && n0 + r < N; r++) {
                d[r] = qk_qmat_scale(w, n0 + r, j);
                m[r] = qk_qmat_min(w, n0 + r, j);
                for (size_t i0 = 0; i0 < g; i0 += 32) {
                    size_t n = g - i0 < 32 ? g - i0 : 32;
                    qk_arm_row_codes(w, n0 + r, j * g + i0, n, t);
                    for (size_t i = 0; i < n; i++) {
                        size_t k = i0 + i;
                        if (c == K8S) p[64 + k * 8 + r] = t[i];
                        else p[64 + k * 4 + r / 2] |= (uint8_t)((signed4 ? t[i] ^ 8 : t[i]) << (4 * (r & 1)));
                    }
                }
            }
            memcpy(p, d, sizeof d);
            memcpy(p + 32, m, sizeof m);
        }
}

/* 16 codes of two consecutive k (8 rows each) -> 16 f32 in k-major order. */
QK_AI void decode_pair(const uint8_t *codes, code_kind c, float32x4_t f[4]) {
    if (c == K8S) {
        qk_neon_s8_to_f32(vld1q_s8((const int8_t *)codes), f);
    } else if (c == K4U) {
        uint8x8_t v = vld1_u8(codes);
        uint8x8_t lo = vand_u8(v, vdup_n_u8(15)), hi = vshr_n_u8(v, 4);
        qk_neon_u8_to_f32(vcombine_u8(vzip1_u8(lo, hi), vzip2_u8(lo, hi)), f);
    } else {
        int8x8_t v = vld1_s8((const int8_t *)codes);
        int8x8_t lo = vshr_n_s8(vshl_n_s8(v, 4), 4), hi = vshr_n_s8(v, 4);
        qk_neon_s8_to_f32(vcombine_s8(vzip1_s8(lo, hi), vzip2_s8(lo, hi)), f);
    }
}

/* One k (8 codes; only for int8 codes with an odd group length). */
QK_AI void decode_one(const uint8_t *codes, float32x4_t f[2]) {
    int16x8_t v = vmovl_s8(vld1_s8((const int8_t *)codes));
    f[0] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(v)));
    f[1] = vcvtq_f32_s32(vmovl_high_s16(v));
}

/* panel[k - k0][8] = ŵ of the tile's 8 rows for k in [k0, k0 + kc). */
QK_AI void decode_panel(const uint8_t *tile, const qk_qmat *w, code_kind c, size_t k0, size_t kc, float *panel) {
    const size_t g = w->group, gb = group_bytes(w, c), cb = c == K8S ? 8 : 4;
    for (size_t k = k0; k < k0 + kc;) {
        size_t j = k / g, end = (j + 1) * g < k0 + kc ? (j + 1) * g : k0 + kc;
        const uint8_t *grp = tile + j * gb;
        const float32x4_t d0 = vld1q_f32((const float *)grp), d1 = vld1q_f32((const float *)grp + 4);
        const float32x4_t m0 = vld1q_f32((const float *)grp + 8), m1 = vld1q_f32((const float *)grp + 12);
        const uint8_t *codes = grp + 64;
        for (; k + 2 <= end; k += 2) {
            float32x4_t f[4];
            decode_pair(codes + (k - j * g) * cb, c, f);
            float *pp = panel + (k - k0) * NR;
            vst1q_f32(pp, vfmaq_f32(m0, d0, f[0]));
            vst1q_f32(pp + 4, vfmaq_f32(m1, d1, f[1]));
            vst1q_f32(pp + 8, vfmaq_f32(m0, d0, f[2]));
            vst1q_f32(pp + 12, vfmaq_f32(m1, d1, f[3]));
        }
        if (k < end) { /* int8 codes, odd g (4-bit groups and KC are even) */
            float32x4_t f[2];
            decode_one(codes + (k - j * g) * cb, f);
            float *pp = panel + (k - k0) * NR;
            vst1q_f32(pp, vfmaq_f32(m0, d0, f[0]));
            vst1q_f32(pp + 4, vfmaq_f32(m1, d1, f[1]));
            k++;
        }
    }
}

#define LANE_STEP(q)                                                   \
    do {                                                               \
        const float32x4_t w0 = vld1q_f32(pk + (q) * NR), w1 = vld1q_f32(pk + (q) * NR + 4); \
        for (int r = 0; r < R; r++) {                                  \
            c0[r] = vfmaq_laneq_f32(c0[r], w0, xv[r], q);              \
            c1[r] = vfmaq_laneq_f32(c1[r], w1, xv[r], q);              \
        }                                                              \
    } while (0)

/* y[R][nv] (+)= x[R][kc] · panelᵀ; `first`: y holds nothing yet. */
QK_AI void tile_rows(const float *panel, size_t kc, const float *x, size_t ldx, float *y, size_t ldy, const int R,
                     size_t nv, int first) {
    float32x4_t c0[MR], c1[MR];
    for (int r = 0; r < R; r++) {
        if (first) {
            c0[r] = c1[r] = vdupq_n_f32(0.0f);
        } else if (nv == NR) {
            c0[r] = vld1q_f32(y + r * ldy);
            c1[r] = vld1q_f32(y + r * ldy + 4);
        } else {
            float t[NR] = {0};
            memcpy(t, y + r * ldy, nv * sizeof(float));
            c0[r] = vld1q_f32(t);
            c1[r] = vld1q_f32(t + 4);
        }
    }
    size_t k = 0;
    for (; k + 4 <= kc; k += 4) {
        float32x4_t xv[MR];
        for (int r = 0; r < R; r++) xv[r] = vld1q_f32(x + r * ldx + k);
        const float *pk = panel + k * NR;
        LANE_STEP(0);
        LANE_STEP(1);
        LANE_STEP(2);
        LANE_STEP(3);
    }
    for (; k < kc; k++) {
        const float32x4_t w0 = vld1q_f32(panel + k * NR), w1 = vld1q_f32(panel + k * NR + 4);
        for (int r = 0; r < R; r++) {
            c0[r] = vfmaq_n_f32(c0[r], w0, x[r * ldx + k]);
            c1[r] = vfmaq_n_f32(c1[r], w1, x[r * ldx + k]);
        }
    }
    for (int r = 0; r < R; r++) {
        if (nv == NR) {
            vst1q_f32(y + r * ldy, c0[r]);
            vst1q_f32(y + r * ldy + 4, c1[r]);
        } else {
            float t[NR];
            vst1q_f32(t, c0[r]);
            vst1q_f32(t + 4, c1[r]);
            memcpy(y + r * ldy, t, nv * sizeof(float));
        }
    }
}

#undef LANE_STEP

QK_AI void run(const qk_matmul_args *a, code_kind c) {
    const size_t M = a->M, N = a->N, K = a->K, tb = tile_bytes(a->w, c);
    float panel[KC * NR] __attribute__((aligned(16)));
    for (size_t n0 = 0; n0 < N; n0 += NR) {
        const uint8_t *tile = (const uint8_t *)a->wp + n0 / NR * tb;
        size_t nv = N - n0 < NR ? N - n0 : NR;
        for (size_t k0 = 0; k0 < K; k0 += KC) {
            size_t kc = K - k0 < KC ? K - k0 : KC;
            decode_panel(tile, a->w, c, k0, kc, panel);
            const float *x = a->x + k0;
            float *y = a->y + n0;
            int first = k0 == 0;
            size_t m = 0;
            for (; m + 8 <= M; m += 8) tile_rows(panel, kc, x + m * a->ldx, a->ldx, y + m * a->ldy, a->ldy, 8, nv, first);
            if (M - m >= 4) {
                tile_rows(panel, kc, x + m * a->ldx, a->ldx, y + m * a->ldy, a->ldy, 4, nv, first);
                m += 4;
            }
            if (M - m >= 2) {
                tile_rows(panel, kc, x + m * a->ldx, a->ldx, y + m * a->ldy, a->ldy, 2, nv, first);
                m += 2;
            }
            if (M - m >= 1) tile_rows(panel, kc, x + m * a->ldx, a->ldx, y + m * a->ldy, a->ldy, 1, nv, first);
        }
    }
}

#define QK_A32_GEMM(fmt, kind)                                                                                   \
    void qk_gemm_##fmt##_a32_8x8__neon(const qk_matmul_args *a) { run(a, kind); }                               \
    size_t qk_gemm_##fmt##_a32_8x8__neon_pack_size(const qk_qmat *w) { return pack_size(w, kind); }             \
    void qk_gemm_##fmt##_a32_8x8__neon_pack(const qk_qmat *w, void *packed) { pack(w, packed, kind); }          \
    size_t qk_gemm_##fmt##_a32_8x8__neon_packed_offset(const qk_qmat *w, size_t n0) { return packed_offset(w, kind, n0); }

QK_A32_GEMM(w4s, K4S)
QK_A32_GEMM(w4a, K4U)
QK_A32_GEMM(q4_0, K4S)
QK_A32_GEMM(w8s, K8S)
QK_A32_GEMM(q8_0, K8S)
