/* Integer-activation gemm with packed weights, Armv8.2 dotprod, register
 * tile 4x8 (W4A8, W4A4: w4s, w4a; W8A8: w8s; q4_0·q8_0; q8_0·q8_0).
 *
 * Packed layout (the pack functions below write it), per tile of 8 weight
 * rows (rows past N are zero), per group j of g values, the group's k padded
 * with zero codes to gp = g rounded up to 16:
 *     f32 d[8], f32 m[8]      scale and offset of each row (m: w4a only)
 *     codes, per 4 k ("quad"): the 4 k of rows 0..3, then of rows 4..7
 *         8 bits: 32 bytes (A = rows 0..3 · 4 k, B = rows 4..7 · 4 k)
 *         4 bits: 16 bytes, byte i = A[i] | B[i] << 4, unsigned nibbles
 * Tile bytes = K/g · (64 + gp·8) at 8 bits, K/g · (64 + gp·4) at 4 bits.
 *
 * Each SDOT by element multiplies one quad of 4 rows by 4 activation codes
 * of one X row: a 16-byte activation load feeds 4 quads × 2 halves. Per
 * group, exact int32 dots, then y += d·sa·dot (w4s and q4_0 nibbles mean
 * q + 8: dot - 8·Σqa, exactly, from actquant's group sums), or for w4a
 * y += d·sa·dot + m·sa·Σqa. Dots are exact while |dot| < 2^31. */
#if !defined(__aarch64__) || !defined(__ARM_FEATURE_DOTPROD)
#error "this file needs the neondot tier's flags"
#endif
#include "arm/neon/neon_common.h"

#define QK_AI static inline __attribute__((always_inline))

enum { NR = 8, MR = 4 };
typedef enum { C4_OFF8, C4_AFFINE, C8 } code_kind; /* nibbles meaning q+8 (w4s, q4_0), nibbles + offset (w4a), int8 */

static size_t padded(size_t g) { return (g + 15) / 16 * 16; }
static size_t group_bytes(const qk_qmat *w, code_kind c) { return 64 + padded(w->group) * (c == C8 ? 8 : 4); }
static size_t tile_bytes(const qk_qmat *w, code_kind c) { return w->cols / w->group * group_bytes(w, c); }
static size_t pack_size(const qk_qmat *w, code_kind c) { return (w->rows + NR - 1) / NR * tile_bytes(w, c); }
static size_t packed_offset(const qk_qmat *w, code_kind c, size_t n0) { return n0 / NR * tile_bytes(w, c); }

static void pack(const qk_qmat *w, void *packed, code_kind c) {
    size_t g = w->group, ng = w->cols / g, N = w->rows, gp = padded(g), cb = c == C8 ? 8 : 4;
    uint8_t *p = packed, t[32];
    for (size_t n0 = 0; n0 < N; n0 += NR)
        for (size_t j = 0; j < ng; j++, p += group_bytes(w, c)) {
            float d[NR] = {0}, m[NR] = {0};
            uint8_t *codes = p + 64;
            memset(codes, 0, gp * cb);
            for (size_t r = 0; r < NR && n0 + r < N; r++) {
                d[r] = qk_qmat_scale(w, n0 + r, j);
                m[r] = qk_qmat_min(w, n0 + r, j);
                for (size_t i0 = 0; i0 < g; i0 += 32) {
                    size_t n = g - i0 < 32 ? g - i0 : 32;
                    qk_arm_row_codes(w, n0 + r, j * g + i0, n, t);
                    for (size_t i = 0; i < n; i++) {
                        size_t k = i0 + i, quad = k / 4, pos = (r % 4) * 4 + k % 4;
                        if (c == C8) codes[quad * 32 + (r / 4) * 16 + pos] = t[i];
                        else codes[quad * 16 + pos] |= (uint8_t)(t[i] << (4 * (r / 4)));
                    }
                }
            }
            memcpy(p, d, sizeof d);
            memcpy(p + 32, m, sizeof m);
        }
}

#define QUAD(q)                                                                      \
    do {                                                                             \
        int8x16_t w0, w1;                                                            \
        if (c == C8) {                                                               \
            w0 = vld1q_s8((const int8_t *)codes + (kk / 4 + (q)) * 32);              \
            w1 = vld1q_s8((const int8_t *)codes + (kk / 4 + (q)) * 32 + 16);         \
        } else {                                                                     \
            uint8x16_t b = vld1q_u8(codes + (kk / 4 + (q)) * 16);                    \
            w0 = vreinterpretq_s8_u8(vandq_u8(b, vdupq_n_u8(15)));                   \
            w1 = vreinterpretq_s8_u8(vshrq_n_u8(b, 4));                              \
        }                                                                            \
        for (int r = 0; r < R; r++) {                                                \
            i0[r] = vdotq_laneq_s32(i0[r], w0, xv[r], q);                            \
            i1[r] = vdotq_laneq_s32(i1[r], w1, xv[r], q);                            \
        }                                                                            \
    } while (0)

/* y[R][nv] = rows m0..m0+R-1 of X against one packed tile. */
QK_AI void tile_rows(const qk_matmul_args *a, const uint8_t *tile, size_t m0, size_t n0, size_t nv, const int R, code_kind c) {
    const qk_qact *xq = a->xq;
    const size_t g = a->group, ng = a->K / g, gp = padded(g), gb = group_bytes(a->w, c);
    float32x4_t f0[MR], f1[MR];
    for (int r = 0; r < R; r++) f0[r] = f1[r] = vdupq_n_f32(0.0f);
    for (size_t j = 0; j < ng; j++) {
        const uint8_t *grp = tile + j * gb, *codes = grp + 64;
        int32x4_t i0[MR], i1[MR];
        for (int r = 0; r < R; r++) i0[r] = i1[r] = vdupq_n_s32(0);
        for (size_t kk = 0; kk < gp; kk += 16) {
            int8x16_t xv[MR];
            for (int r = 0; r < R; r++) {
                const int8_t *xp = xq->codes + (m0 + r) * xq->cols + j * g + kk;
                xv[r] = kk + 16 <= g ? vld1q_s8(xp) : qk_neon_load_partial_s8(xp, g - kk);
            }
            QUAD(0);
            QUAD(1);
            QUAD(2);
            QUAD(3);
        }
        const float32x4_t d0 = vld1q_f32((const float *)grp), d1 = vld1q_f32((const float *)grp + 4);
        for (int r = 0; r < R; r++) {
            float sa = xq->scales[(m0 + r) * ng + j];
            int32_t sum = xq->sums[(m0 + r) * ng + j];
            if (c == C4_OFF8) {
                i0[r] = vsubq_s32(i0[r], vdupq_n_s32(8 * sum));
                i1[r] = vsubq_s32(i1[r], vdupq_n_s32(8 * sum));
            }
            f0[r] = vfmaq_f32(f0[r], vcvtq_f32_s32(i0[r]), vmulq_n_f32(d0, sa));
            f1[r] = vfmaq_f32(f1[r], vcvtq_f32_s32(i1[r]), vmulq_n_f32(d1, sa));
            if (c == C4_AFFINE) {
                float ms = sa * (float)sum;
                f0[r] = vfmaq_n_f32(f0[r], vld1q_f32((const float *)grp + 8), ms);
                f1[r] = vfmaq_n_f32(f1[r], vld1q_f32((const float *)grp + 12), ms);
            }
        }
    }
    for (int r = 0; r < R; r++) {
        float *y = a->y + (m0 + r) * a->ldy + n0;
        if (nv == NR) {
            vst1q_f32(y, f0[r]);
            vst1q_f32(y + 4, f1[r]);
        } else {
            float t[NR];
            vst1q_f32(t, f0[r]);
            vst1q_f32(t + 4, f1[r]);
            memcpy(y, t, nv * sizeof(float));
        }
    }
}

#undef QUAD

QK_AI void run(const qk_matmul_args *a, code_kind c) {
    const size_t M = a->M, N = a->N, tb = tile_bytes(a->w, c);
    for (size_t n0 = 0; n0 < N; n0 += NR) {
        const uint8_t *tile = (const uint8_t *)a->wp + n0 / NR * tb;
        size_t nv = N - n0 < NR ? N - n0 : NR, m = 0;
        for (; m + 4 <= M; m += 4) tile_rows(a, tile, m, n0, nv, 4, c);
        if (M - m >= 2) {
            tile_rows(a, tile, m, n0, nv, 2, c);
            m += 2;
        }
        if (M - m >= 1) tile_rows(a, tile, m, n0, nv, 1, c);
    }
}

#define QK_INT_GEMM(stem, kind)                                                                            \
    void stem(const qk_matmul_args *a) { run(a, kind); }                                                   \
    size_t stem##_pack_size(const qk_qmat *w) { return pack_size(w, kind); }                               \
    void stem##_pack(const qk_qmat *w, void *packed) { pack(w, packed, kind); }                            \
    size_t stem##_packed_offset(const qk_qmat *w, size_t n0) { return packed_offset(w, kind, n0); }

QK_INT_GEMM(qk_gemm_w8s_a8_4x8__neondot, C8)
QK_INT_GEMM(qk_gemm_w4s_a8_4x8__neondot, C4_OFF8)
QK_INT_GEMM(qk_gemm_w4a_a8_4x8__neondot, C4_AFFINE)
QK_INT_GEMM(qk_gemm_w4s_a4_4x8__neondot, C4_OFF8)
QK_INT_GEMM(qk_gemm_w4a_a4_4x8__neondot, C4_AFFINE)
QK_INT_GEMM(qk_gemm_q4_0_q8_0_4x8__neondot, C4_OFF8)
QK_INT_GEMM(qk_gemm_q8_0_q8_0_4x8__neondot, C8)
