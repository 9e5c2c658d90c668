/// Internal helpers shared by the kernels of every tier (header-only, no ISA
/// flags needed) and the prototypes of every variant in the family lists.
#ifndef QK_INTERNAL_H
#define QK_INTERNAL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "qk/fp16.h"
#include "qk/kernels.h"
#include "qk_build_config.h"

/* Sizes of f32 data (a quantizer's input, a dequantizer's output) from which
 * the x86 kernels treat it as streaming from memory: non-temporal stores,
 * prefetch distances for DRAM. 8 MiB: larger than a core's L2 and a good
 * share of a shared L3. */
#define QK_STREAM_MIN_BYTES ((size_t)8 << 20)

/* 1 when a packed matrix of `bytes` at dst is written with non-temporal
 * stores: at least QK_STREAM_MIN_BYTES, and dst on a 64-byte line. */
static inline int qk_pack_streams(size_t bytes, const void *dst) {
    return bytes >= QK_STREAM_MIN_BYTES && ((uintptr_t)dst & 63) == 0;
}

/* Rows of X per block for a gemm driver that passes over all of W once per
 * block of rows (column tile by column tile), so that the block's rows stay
 * in cache between column tiles: about `budget` bytes of X (rows of
 * row_bytes) and at most about max_rows rows (0: no limit), a multiple of
 * the register tile's mr rows, blocks of about one size; all of M when X
 * fits. Without blocks, an X larger than the cache is read from memory again
 * for every column tile. */
static inline size_t qk_row_block(size_t M, size_t row_bytes, size_t budget, size_t max_rows, size_t mr) {
    size_t nb = (M * row_bytes + budget - 1) / budget;
    if (max_rows && (M + max_rows - 1) / max_rows > nb) nb = (M + max_rows - 1) / max_rows;
    size_t rows = nb > 1 ? (M + nb - 1) / nb : M;
    return (rows + mr - 1) / mr * mr;
}

/* The x86 gemms with f32 activations (W4A32, W8A32) use blocks of about
 * 8 MiB of X. In-process A/B on the Zen 5 host (the kernel over all 512 rows
 * in one call, against calls on blocks of rows; 7 rounds, 2026-12-06),
 * 512x4096x14336 g = 32 (X 29 MiB): avx512 w4s blocks of 128 rows 0.96-0.97
 * of the time, w8s 0.99, avx2 w4s 0.975; blocks of 256 rows 0.98; blocks of
 * 36 rows (2 MiB) 1.03, and 1.05 on 64x4096x14336, whose 3.7 MiB stay one
 * block at 8 MiB. 512x14336x4096 in blocks of 256 rows: 0.99-1.00. (The
 * integer gemms of the avx2 and avxvnni tiers, in blocks of 2 MiB of codes,
 * took 1.00-1.03 of the time there and keep one block.) */
#define QK_F32_ROW_BLOCK_BYTES ((size_t)8 << 20)

#ifdef __cplusplus
extern "C" {
#endif

/* ---- prototypes of every listed variant ---- */
#define QK_QUANTIZE(fmt, tier) int qk_quantize_##fmt##__##tier(const float *x, size_t ldx, const qk_qmat *out);
#include "list/quantize.inc"
#undef QK_QUANTIZE
#define QK_DEQUANTIZE(fmt, tier) void qk_dequantize_##fmt##__##tier(const qk_qmat *w, float *y, size_t ldy);
#include "list/dequantize.inc"
#undef QK_DEQUANTIZE
#define QK_ACTQUANT(rule, tier) int qk_actquant_##rule##__##tier(const float *x, size_t ldx, const qk_qact *out);
#include "list/actquant.inc"
#undef QK_ACTQUANT
#define QK_MATMUL(stem, tier, op, fmt, mode, mr, nr) void stem(const qk_matmul_args *a);
#define QK_MATMUL_PACKED(stem, tier, op, fmt, mode, mr, nr)                                         \
    void stem(const qk_matmul_args *a);                                                             \
    size_t stem##_pack_size(const qk_qmat *w);                                                      \
    void stem##_pack(const qk_qmat *w, void *packed);                                               \
    size_t stem##_packed_offset(const qk_qmat *w, size_t n0);
#include "list/matmul.inc"
#undef QK_MATMUL
#undef QK_MATMUL_PACKED
#define QK_FWHT(tier) void qk_fwht__##tier(float *x, size_t ldx, size_t M, size_t K, size_t block);
#define QK_COLSCALE(tier) \
    void qk_colscale__##tier(const float *x, size_t ldx, size_t M, size_t K, const float *s, float *y, size_t ldy);
#define QK_COLSPLIT(tier)                                                                                              \
    void qk_colsplit__##tier(const float *x, size_t ldx, size_t M, size_t K, const uint32_t *idx, size_t nidx, float *xz, \
                             size_t ldxz, float *xo, size_t ldxo);
#define QK_GEMM_F32(tier)                                                                                             \
    void qk_gemm_f32__##tier(size_t M, size_t N, size_t K, const float *x, size_t ldx, const float *w, size_t ldw, float *y, \
                             size_t ldy, int accumulate);
#define QK_GEMM_I8(tier)                                                                                                  \
    void qk_gemm_i8__##tier(size_t M, size_t N, size_t K, const int8_t *x, size_t ldx, const float *sx, const int8_t *w, size_t ldw, \
                            const float *sw, float *y, size_t ldy, int accumulate);
#include "list/outlier.inc"
#undef QK_GEMM_I8
#undef QK_FWHT
#undef QK_COLSCALE
#undef QK_COLSPLIT
#undef QK_GEMM_F32

/* ---- scalar helpers (exact; used by the reference and by SIMD tails) ---- */

/// Block sizes of the llama.cpp formats.
enum { QK_QK4_0 = 32, QK_Q4_0_BYTES = 18, QK_Q8_0_BYTES = 34 };

static inline float qk_round_half_away(float v) { return roundf(v); }

/// Min and max of finite values with -0 below +0 (IEEE 754-2019 minimum and
/// maximum): the same on every compiler and CPU, where fminf/fmaxf may return
/// either zero (x86 glibc and GCC builds differ; AArch64's FMINNM orders them
/// as here). Only the sign of a zero w4a min or max depends on it.
static inline float qk_min_z(float a, float b) { return b < a || (b == a && signbit(b)) ? b : a; }
static inline float qk_max_z(float a, float b) { return b > a || (b == a && !signbit(b)) ? b : a; }

/// The zero min (max) of a group whose min (max) is zero, as qk_min_z
/// (qk_max_z) make it: -0 if the group holds a -0 (+0 if it holds a +0),
/// for SIMD paths whose FP min/max keep either zero.
static inline float qk_zero_extreme(const float *x, size_t g, int max) {
    int pos = 0, neg = 0;
    for (size_t i = 0; i < g; i++)
        if (x[i] == 0.0f) {
            if (signbit(x[i])) neg = 1;
            else pos = 1;
        }
    return max ? (pos ? 0.0f : -0.0f) : (neg ? -0.0f : 0.0f);
}

/// The inverse scale every tier multiplies by: 1/s, or 0 when s is 0 or so
/// small (|s| < 1/FLT_MAX, a denormal f32 group) that 1/s overflows; such a
/// group gets all-zero codes, exactly as an all-zero group does.
static inline float qk_inv_scale(float s) {
    float id = 1.0f / s;
    return isinf(id) ? 0.0f : id;
}

static inline float qk_load_scale(const void *p, size_t i, qk_scale_type st) {
    if (st == QK_SCALE_F16) return qk_h2f(((const uint16_t *)p)[i]);
    return ((const float *)p)[i];
}

/// Round a scale to its storage type, store it, and return the stored value.
/// Sets *bad |= QK_ROW_RANGE if an f16 scale overflows.
static inline float qk_store_scale(void *p, size_t i, qk_scale_type st, float v, int *bad) {
    if (st == QK_SCALE_F16) {
        uint16_t h = qk_f2h(v);
        if ((h & 0x7c00u) == 0x7c00u) *bad |= QK_ROW_RANGE;
        ((uint16_t *)p)[i] = h;
        return qk_h2f(h);
    }
    ((float *)p)[i] = v;
    return v;
}

static inline uint16_t qk_rd16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static inline void qk_wr16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }

/// Scale storage size in bytes.
static inline size_t qk_scale_size(qk_scale_type st) { return st == QK_SCALE_F16 ? 2 : 4; }

/// The code of element k of one stored row of format f as it sits in memory:
/// its nibble (w4s and q4_0 keep q+8, w4a q) or its byte (w8s and q8_0: the
/// int8's bits). Every tier's scalar tails and packs read codes through this.
static inline unsigned qk_row_stored(const uint8_t *row, qk_format f, size_t k) {
    switch (f) {
    case QK_W4S:
    case QK_W4A: return (row[k / 2] >> (4 * (k & 1))) & 15u;
    case QK_W8S: return row[k];
    case QK_Q4_0: {
        const uint8_t *qs = row + (k / 32) * QK_Q4_0_BYTES + 2;
        size_t j = k % 32;
        return j < 16 ? qs[j] & 15u : (unsigned)qs[j - 16] >> 4;
    }
    default: return row[(k / 32) * QK_Q8_0_BYTES + 2 + k % 32];
    }
}

/// The signed code q of that element (qk_qmat_code): w4s in [-7,7], w4a in
/// [0,15], w8s in [-127,127], q4_0 in [-8,7], q8_0 in [-127,127].
static inline int qk_row_code(const uint8_t *row, qk_format f, size_t k) {
    unsigned u = qk_row_stored(row, f, k);
    return f == QK_W4S || f == QK_Q4_0 ? (int)u - 8 : f == QK_W4A ? (int)u : (int8_t)u;
}

/// Record an error message for qk_last_error(); returns s.
qk_status qk_fail(qk_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void qk_clear_error(void);

#ifdef __cplusplus
}
#endif
#endif
