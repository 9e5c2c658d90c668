/* Integer-activation gemm with packed weights, Armv8.2 i8mm, register tile
 * 4x8 (W4A8, W4A4: w4s, w4a; W8A8: w8s; q4_0·q8_0; q8_0·q8_0).
 *
 * SMMLA multiplies a 2x8 int8 block of X (two rows, 8 k) by an 8x2 block of
 * Wᵀ (two weight rows, 8 k) into a 2x2 int32 block: 32 multiply-adds per
 * instruction, twice SDOT's 16.
 *
 * Packed layout (the pack functions below write it), per tile of 8 weight
 * rows (rows past N are zero), per group j of g values, the group's k padded
 * with zero codes to gp = g rounded up to 8:
 *     f32 d[8], f32 m[8]      scale and offset of each row (m: w4a only)
 *     codes, per 8 k ("oct"), for each row pair p = 0..3 the 16 bytes
 *     [row 2p: 8 k][row 2p+1: 8 k]
 *         8 bits: 64 bytes (pairs 0, 1, 2, 3)
 *         4 bits: 32 bytes, unsigned nibbles: byte i = pair0[i] | pair1[i] << 4,
 *                 then byte 16 + i = pair2[i] | pair3[i] << 4
 * Tile bytes = K/g · (64 + gp·8) at 8 bits, K/g · (64 + gp·4) at 4 bits.
 *
 * Per group, exact int32 dots, then y += d·sa·dot (w4s and q4_0 nibbles mean
 * q + 8: dot - 8·Σqa, exactly, from actquant's group sums), or for w4a
 * y += d·sa·dot + m·sa·Σqa. An odd last row of X is paired with itself and
 * its twin result dropped. Dots are exact while |dot| < 2^31. */
#if !defined(__aarch64__) || !defined(__ARM_FEATURE_MATMUL_INT8)
#error "this file needs the neoni8mm tier's flags"
#endif
#include "arm/neon/neon_common.h"

#define QK_AI static inline __attribute__((always_inline))

enum { NR = 8, MR = 4 };
typedef enum { C4_OFF8, C4_AFFINE, C8 } code_kind; /* nibbles meaning q+8 (w4s, q4_0), nibbles + offset (w4a), int8 */

static size_t padded(size_t g) { return (g + 7) / 8 * 8; }
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
                size_t pair = r / 2, half = r % 2;
                for (size_t i0 = 0; i0 < g; i0 += 32) {
                    size_t n = g - i0 < 32 ? g - i0 : 32;
                    qk_arm_row_codes(w, n0 + r, j * g + i0, n, t);
                    for (size_t i = 0; i < n; i++) {
                        size_t k = i0 + i, oct = k / 8, pos = half * 8 + k % 8;
                        if (c == C8) codes[oct * 64 + pair * 16 + pos] = t[i];
                        else codes[oct * 32 + (pair / 2) * 16 + pos] |= (uint8_t)(t[i] << (4 * (pair % 2)));
                    }
                }
            }
            memcpy(p, d, sizeof d);
            memcpy(p + 32, m, sizeof m);
        }
}

QK_AI int8x8_t load8(const int8_t *p, size_t avail) {
    if (avail >= 8) return vld1_s8(p);
    int8_t t[8] = {0};
    memcpy(t, p, avail);
    return vld1_s8(t);
}

QK_AI float32x4_t dup_pair(const float *p) {
    float32x2_t v = vld1_f32(p);
    return vcombine_f32(v, v);
}

/* y[R][nv] = rows m0..m0+R-1 of X against one packed tile. */
QK_AI void tile_rows(const qk_matmul_args *a, const uint8_t *tile, size_t m0, size_t n0, size_t nv, const int R, code_kind c) {
    enum { P = MR / 2 };
    const int np = (R + 1) / 2;
    const qk_qact *xq = a->xq;
    const size_t g = a->group, ng = a->K / g, gp = padded(g), gb = group_bytes(a->w, c);
    size_t rows[MR];
    for (int r = 0; r < 2 * np; r++) rows[r] = m0 + (r < R ? r : R - 1);
    float32x4_t f[P][4];
    for (int q = 0; q < np; q++)
        for (int p = 0; p < 4; p++) f[q][p] = vdupq_n_f32(0.0f);
    for (size_t j = 0; j < ng; j++) {
        const uint8_t *grp = tile + j * gb, *codes = grp + 64;
        int32x4_t acc[P][4];
        for (int q = 0; q < np; q++)
            for (int p = 0; p < 4; p++) acc[q][p] = vdupq_n_s32(0);
        for (size_t kk = 0; kk < gp; kk += 8) {
            int8x16_t xa[P];
            for (int q = 0; q < np; q++) {
                const int8_t *x0 = xq->codes + rows[2 * q] * xq->cols + j * g + kk;
                const int8_t *x1 = xq->codes + rows[2 * q + 1] * xq->cols + j * g + kk;
                xa[q] = vcombine_s8(load8(x0, g - kk), load8(x1, g - kk));
            }
            int8x16_t b[4];
            if (c == C8) {
                for (int p = 0; p < 4; p++) b[p] = vld1q_s8((const int8_t *)codes + kk * 8 + p * 16);
            } else {
                uint8x16_t v0 = vld1q_u8(codes + kk * 4), v1 = vld1q_u8(codes + kk * 4 + 16);
                b[0] = vreinterpretq_s8_u8(vandq_u8(v0, vdupq_n_u8(15)));
                b[1] = vreinterpretq_s8_u8(vshrq_n_u8(v0, 4));
                b[2] = vreinterpretq_s8_u8(vandq_u8(v1, vdupq_n_u8(15)));
                b[3] = vreinterpretq_s8_u8(vshrq_n_u8(v1, 4));
            }
            for (int q = 0; q < np; q++)
                for (int p = 0; p < 4; p++) acc[q][p] = vmmlaq_s32(acc[q][p], xa[q], b[p]);
        }
        const float *d = (const float *)grp, *mw = (const float *)grp + 8;
        for (int q = 0; q < np; q++) {
            size_t i0 = rows[2 * q] * ng + j, i1 = rows[2 * q + 1] * ng + j;
            float sa0 = xq->scales[i0], sa1 = xq->scales[i1];
            int32_t s0 = xq->sums[i0], s1 = xq->sums[i1];
            const float32x4_t sa = vcombine_f32(vdup_n_f32(sa0), vdup_n_f32(sa1));
            const int32x4_t off = vcombine_s32(vdup_n_s32(8 * s0), vdup_n_s32(8 * s1));
            const float32x4_t ms = vcombine_f32(vdup_n_f32(sa0 * (float)s0), vdup_n_f32(sa1 * (float)s1));
            for (int p = 0; p < 4; p++) {
                int32x4_t dot = c == C4_OFF8 ? vsubq_s32(acc[q][p], off) : acc[q][p];
                f[q][p] = vfmaq_f32(f[q][p], vcvtq_f32_s32(dot), vmulq_f32(dup_pair(d + 2 * p), sa));
                if (c == C4_AFFINE) f[q][p] = vfmaq_f32(f[q][p], dup_pair(mw + 2 * p), ms);
            }
        }
    }
    for (int q = 0; q < np; q++)
        for (int h = 0; h < 2 && 2 * q + h < R; h++) {
            float32x4_t lo, hi;
            if (h == 0) {
                lo = vcombine_f32(vget_low_f32(f[q][0]), vget_low_f32(f[q][1]));
                hi = vcombine_f32(vget_low_f32(f[q][2]), vget_low_f32(f[q][3]));
            } else {
                lo = vcombine_f32(vget_high_f32(f[q][0]), vget_high_f32(f[q][1]));
                hi = vcombine_f32(vget_high_f32(f[q][2]), vget_high_f32(f[q][3]));
            }
            float *y = a->y + (m0 + 2 * q + h) * a->ldy + n0;
            if (nv == NR) {
                vst1q_f32(y, lo);
                vst1q_f32(y + 4, hi);
            } else {
                float t[NR];
                vst1q_f32(t, lo);
                vst1q_f32(t + 4, hi);
                memcpy(y, t, nv * sizeof(float));
            }
        }
}

QK_AI void run(const qk_matmul_args *a, code_kind c) {
    const size_t M = a->M, N = a->N, tb = tile_bytes(a->w, c);
    for (size_t n0 = 0; n0 < N; n0 += NR) {
        const uint8_t *tile = (const uint8_t *)a->wp + n0 / NR * tb;
        size_t nv = N - n0 < NR ? N - n0 : NR, m = 0;
        for (; m + 4 <= M; m += 4) tile_rows(a, tile, m, n0, nv, 4, c);
        switch (M - m) {
        case 3: tile_rows(a, tile, m, n0, nv, 3, c); break;
        case 2: tile_rows(a, tile, m, n0, nv, 2, c); break;
        case 1: tile_rows(a, tile, m, n0, nv, 1, c); break;
        default: break;
        }
    }
}

#define QK_INT_GEMM(stem, kind)                                                                            \
    void stem(const qk_matmul_args *a) { run(a, kind); }                                                   \
    size_t stem##_pack_size(const qk_qmat *w) { return pack_size(w, kind); }                               \
    void stem##_pack(const qk_qmat *w, void *packed) { pack(w, packed, kind); }                            \
    size_t stem##_packed_offset(const qk_qmat *w, size_t n0) { return packed_offset(w, kind, n0); }

QK_INT_GEMM(qk_gemm_w8s_a8_4x8__neoni8mm, C8)
QK_INT_GEMM(qk_gemm_w4s_a8_4x8__neoni8mm, C4_OFF8)
QK_INT_GEMM(qk_gemm_w4a_a8_4x8__neoni8mm, C4_AFFINE)
QK_INT_GEMM(qk_gemm_w4s_a4_4x8__neoni8mm, C4_OFF8)
QK_INT_GEMM(qk_gemm_w4a_a4_4x8__neoni8mm, C4_AFFINE)
QK_INT_GEMM(qk_gemm_q4_0_q8_0_4x8__neoni8mm, C4_OFF8)
QK_INT_GEMM(qk_gemm_q8_0_q8_0_4x8__neoni8mm, C8)
