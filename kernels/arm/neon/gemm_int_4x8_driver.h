/* The parts the packed integer gemms of the neondot (SDOT) and neoni8mm (SMMLA)
 * tiers share: a 4x8 register tile (MR x NR), the packed layout's sizes, the
 * pack loop, the driver over tiles and rows, and the exported entry points.
 * What differs per ISA is supplied by the including file, before the include:
 *
 *   QK_I4X8_PAD        k of a group is padded with zero codes to a multiple of this
 *   QK_I4X8_TIER       the tier suffix of the entry points (neondot, neoni8mm)
 *   size_t code_at(size_t r, size_t k, int c8, unsigned *shift)
 *                      byte index of row r's (0..7) code k within a group's codes;
 *                      for 4-bit codes (c8 = 0) *shift is 0 or 4, the nibble
 *
 * and, after the include, the inner step:
 *
 *   QK_AI void tile_rows(const qk_matmul_args *a, const uint8_t *tile, size_t m0, size_t n0,
 *                        size_t nv, const int R, code_kind c)   // R = 1..4 rows of X
 *
 * then QK_I4X8_ENTRY_POINTS. Packed layout, per tile of 8 weight rows (rows past
 * N are zero), per group j: f32 d[8], f32 m[8] (scale and offset of each row; m:
 * w4a only), then the group's codes, gp·8 bytes at 8 bits or gp·4 at 4 bits
 * (gp = g rounded up to QK_I4X8_PAD) in the order code_at gives. */
#ifndef QK_ARM_GEMM_INT_4X8_DRIVER_H
#define QK_ARM_GEMM_INT_4X8_DRIVER_H
#include "arm/neon/neon_common.h"

#define QK_AI static inline __attribute__((always_inline))

enum { NR = 8, MR = 4 };
typedef enum { C4_OFF8, C4_AFFINE, C8 } code_kind; /* nibbles meaning q+8 (w4s, q4_0), nibbles + offset (w4a), int8 */

static size_t padded(size_t g) { return (g + QK_I4X8_PAD - 1) / QK_I4X8_PAD * QK_I4X8_PAD; }
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
                        unsigned shift = 0;
                        size_t at = code_at(r, i0 + i, c == C8, &shift);
                        if (c == C8) codes[at] = t[i];
                        else codes[at] |= (uint8_t)(t[i] << shift);
                    }
                }
            }
            memcpy(p, d, sizeof d);
            memcpy(p + 32, m, sizeof m);
        }
}

/* After tile_rows: the driver over tiles of 8 weight rows and blocks of up to 4 X rows,
 * and the entry points of the family list (kernels/list/matmul.inc). */
#define QK_I4X8_CAT_(a, b) a##b
#define QK_I4X8_CAT(a, b) QK_I4X8_CAT_(a, b)
#define QK_I4X8_ENTRY(stem, kind)                                                                                 \
    void QK_I4X8_CAT(stem, QK_I4X8_TIER)(const qk_matmul_args *a) { run(a, kind); }                               \
    size_t QK_I4X8_CAT(QK_I4X8_CAT(stem, QK_I4X8_TIER), _pack_size)(const qk_qmat *w) { return pack_size(w, kind); } \
    void QK_I4X8_CAT(QK_I4X8_CAT(stem, QK_I4X8_TIER), _pack)(const qk_qmat *w, void *packed) { pack(w, packed, kind); } \
    size_t QK_I4X8_CAT(QK_I4X8_CAT(stem, QK_I4X8_TIER), _packed_offset)(const qk_qmat *w, size_t n0) {            \
        return packed_offset(w, kind, n0);                                                                         \
    }
#define QK_I4X8_ENTRY_POINTS                                                                       \
    QK_AI void run(const qk_matmul_args *a, code_kind c) {                                         \
        const size_t M = a->M, N = a->N, tb = tile_bytes(a->w, c);                                 \
        for (size_t n0 = 0; n0 < N; n0 += NR) {                                                    \
            const uint8_t *tile = (const uint8_t *)a->wp + n0 / NR * tb;                           \
            size_t nv = N - n0 < NR ? N - n0 : NR, m = 0;                                          \
            for (; m + 4 <= M; m += 4) tile_rows(a, tile, m, n0, nv, 4, c);                        \
            switch (M - m) {                                                                       \
            case 3: tile_rows(a, tile, m, n0, nv, 3, c); break;                                    \
            case 2: tile_rows(a, tile, m, n0, nv, 2, c); break;                                    \
            case 1: tile_rows(a, tile, m, n0, nv, 1, c); break;                                    \
            default: break;                                                                        \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    QK_I4X8_ENTRY(qk_gemm_w8s_a8_4x8__, C8)                                                        \
    QK_I4X8_ENTRY(qk_gemm_w4s_a8_4x8__, C4_OFF8)                                                   \
    QK_I4X8_ENTRY(qk_gemm_w4a_a8_4x8__, C4_AFFINE)                                                 \
    QK_I4X8_ENTRY(qk_gemm_w4s_a4_4x8__, C4_OFF8)                                                   \
    QK_I4X8_ENTRY(qk_gemm_w4a_a4_4x8__, C4_AFFINE)                                                 \
    QK_I4X8_ENTRY(qk_gemm_q4_0_q8_0_4x8__, C4_OFF8)                                                \
    QK_I4X8_ENTRY(qk_gemm_q8_0_q8_0_4x8__, C8)
#endif
