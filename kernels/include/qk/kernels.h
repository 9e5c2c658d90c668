/// libqk kernel families: one descriptor type and one hand-edited list per
/// family (kernels/list/<family>.inc). The dispatcher, the tests and the
/// benchmarks all walk these lists, so a new variant is one file plus one line.
///
/// Kernels are pure: no allocation, no threads, no printing, no validation.
/// The qk_* API functions in qk.h validate shapes and pointers first; the
/// *_with functions below validate too, then run one given variant.
#ifndef QK_KERNELS_H
#define QK_KERNELS_H

#include "qk/qk.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Bits a quantize/actquant kernel returns.
enum { QK_ROW_NONFINITE = 1, QK_ROW_RANGE = 2 };

/// Quantize out->rows rows of x (stride ldx floats) into the plain layout of
/// `out`. Returns 0, or QK_ROW_* bits (the output is then unspecified).
typedef int (*qk_quantize_fn)(const float *x, size_t ldx, const qk_qmat *out);
/// Dequantize all rows of w into y (stride ldy floats).
typedef void (*qk_dequantize_fn)(const qk_qmat *w, float *y, size_t ldy);
/// Quantize out->rows rows of activations by the descriptor's rule.
/// Returns 0 or QK_ROW_* bits.
typedef int (*qk_actquant_fn)(const float *x, size_t ldx, const qk_qact *out);

/// Arguments of a matmul kernel: Y[M][N] = X[M][K] · Wᵀ.
/// `w` is the plain-layout weight view (rows = N); `wp` the packed weights
/// when the kernel has a pack function (NULL otherwise). A32 modes read x/ldx,
/// the others read xq (quantized by the mode's activation rule).
typedef struct qk_matmul_args {
    size_t M, N, K, group;
    const qk_qmat *w;
    const void *wp;
    const float *x;
    size_t ldx;
    const qk_qact *xq;
    float *y;
    size_t ldy;
} qk_matmul_args;

typedef void (*qk_matmul_fn)(const qk_matmul_args *a);
/// Bytes of the packed layout for an N×K matrix (tile-rounded).
typedef size_t (*qk_pack_size_fn)(const qk_qmat *w);
/// Pack the plain layout into the kernel's own layout at `packed`, 64-byte aligned
/// (qk_matmul_prepare allocates it so; some kernels load it with aligned loads).
typedef void (*qk_pack_fn)(const qk_qmat *w, void *packed);
/// Byte offset of row n0 (a multiple of nr) in the packed layout.
typedef size_t (*qk_packed_offset_fn)(const qk_qmat *w, size_t n0);

typedef enum qk_op { QK_OP_GEMV = 0, QK_OP_GEMM = 1 } qk_op;

typedef struct qk_quantize_kernel {
    const char *name;
    qk_tier tier;
    qk_format format;
    qk_quantize_fn run;
} qk_quantize_kernel;

typedef struct qk_dequantize_kernel {
    const char *name;
    qk_tier tier;
    qk_format format;
    qk_dequantize_fn run;
} qk_dequantize_kernel;

typedef struct qk_actquant_kernel {
    const char *name;
    qk_tier tier;
    qk_act_rule rule;
    qk_actquant_fn run;
} qk_actquant_kernel;

typedef struct qk_matmul_kernel {
    const char *name;
    qk_tier tier;
    qk_op op;            ///< gemv (M = 1 only) or gemm (any M)
    qk_format format;
    qk_mode mode;
    unsigned mr, nr;     ///< register tile; threads split N in multiples of nr
    qk_pack_size_fn pack_size; ///< NULL: reads the plain layout
    qk_pack_fn pack;
    qk_packed_offset_fn packed_offset;
    qk_matmul_fn run;
} qk_matmul_kernel;

/* ---- outlier handling (DESIGN §5): transforms around the low-bit matmul ---- */

/// In-place orthonormal fast Walsh–Hadamard transform of each row of X[M][K]
/// in consecutive blocks of `block` elements (a power of two dividing K),
/// scaled by 1/sqrt(block), so (X·H)(W·H)ᵀ = X·Wᵀ.
typedef void (*qk_fwht_fn)(float *x, size_t ldx, size_t M, size_t K, size_t block);
/// Y[m][k] = X[m][k] · s[k] (smoothing: s = 1/scales on activations, scales on weights).
typedef void (*qk_colscale_fn)(const float *x, size_t ldx, size_t M, size_t K, const float *s, float *y, size_t ldy);
/// Channel split: XZ = X with the columns idx[0..nidx) set to 0, XO[m][j] = X[m][idx[j]].
/// idx is strictly increasing.
typedef void (*qk_colsplit_fn)(const float *x, size_t ldx, size_t M, size_t K, const uint32_t *idx, size_t nidx, float *xz,
                               size_t ldxz, float *xo, size_t ldxo);
/// Dense f32 Y[M][N] (+)= X[M][K] · W[N][K]ᵀ; accumulate = 1 adds to Y.
typedef void (*qk_gemm_f32_fn)(size_t M, size_t N, size_t K, const float *x, size_t ldx, const float *w, size_t ldw, float *y,
                               size_t ldy, int accumulate);
/// The outlier columns in int8: Y[m][n] (+)= (sx[m]·sw[n])·(float)Σ_k X[m][k]·W[n][k]
/// over int8 codes (exact int32 sums, K <= 65536), the float expression
/// evaluated in that order, so every tier writes the same bits.
typedef void (*qk_gemm_i8_fn)(size_t M, size_t N, size_t K, const int8_t *x, size_t ldx, const float *sx, const int8_t *w,
                              size_t ldw, const float *sw, float *y, size_t ldy, int accumulate);

typedef struct qk_fwht_kernel { const char *name; qk_tier tier; qk_fwht_fn run; } qk_fwht_kernel;
typedef struct qk_colscale_kernel { const char *name; qk_tier tier; qk_colscale_fn run; } qk_colscale_kernel;
typedef struct qk_colsplit_kernel { const char *name; qk_tier tier; qk_colsplit_fn run; } qk_colsplit_kernel;
typedef struct qk_gemm_f32_kernel { const char *name; qk_tier tier; qk_gemm_f32_fn run; } qk_gemm_f32_kernel;
typedef struct qk_gemm_i8_kernel { const char *name; qk_tier tier; qk_gemm_i8_fn run; } qk_gemm_i8_kernel;

extern const qk_fwht_kernel qk_fwht_kernels[];
extern const size_t qk_fwht_kernel_count;
extern const qk_colscale_kernel qk_colscale_kernels[];
extern const size_t qk_colscale_kernel_count;
extern const qk_colsplit_kernel qk_colsplit_kernels[];
extern const size_t qk_colsplit_kernel_count;
extern const qk_gemm_f32_kernel qk_gemm_f32_kernels[];
extern const size_t qk_gemm_f32_kernel_count;
extern const qk_gemm_i8_kernel qk_gemm_i8_kernels[];
extern const size_t qk_gemm_i8_kernel_count;

const qk_fwht_kernel *qk_pick_fwht(void);
const qk_colscale_kernel *qk_pick_colscale(void);
const qk_colsplit_kernel *qk_pick_colsplit(void);
const qk_gemm_f32_kernel *qk_pick_gemm_f32(void);
const qk_gemm_i8_kernel *qk_pick_gemm_i8(void);

/// Validated entry points (k = NULL: the dispatcher's choice).
qk_status qk_fwht_with(const qk_fwht_kernel *k, float *x, size_t ldx, size_t M, size_t K, size_t block);
qk_status qk_colscale_with(const qk_colscale_kernel *k, const float *x, size_t ldx, size_t M, size_t K, const float *s, float *y,
                           size_t ldy);
qk_status qk_colsplit_with(const qk_colsplit_kernel *k, const float *x, size_t ldx, size_t M, size_t K, const uint32_t *idx,
                           size_t nidx, float *xz, size_t ldxz, float *xo, size_t ldxo);
qk_status qk_gemm_f32_with(const qk_gemm_f32_kernel *k, size_t M, size_t N, size_t K, const float *x, size_t ldx, const float *w,
                           size_t ldw, float *y, size_t ldy, int accumulate);
qk_status qk_gemm_i8_with(const qk_gemm_i8_kernel *k, size_t M, size_t N, size_t K, const int8_t *x, size_t ldx, const float *sx,
                          const int8_t *w, size_t ldw, const float *sw, float *y, size_t ldy, int accumulate);
/// Symmetric int8 quantization of each row of X[M][K] (K <= 65536, the outlier
/// columns of activations or weights): s[m] = absmax/127, q = round-half-away
/// of x·(127/absmax), in [-127, 127]; an all-zero row gets s = 0 and zero
/// codes. Non-finite values are refused (QK_ERR_NONFINITE). Scalar: the rows
/// are few outlier columns wide.
qk_status qk_rowquant_i8(const float *x, size_t ldx, size_t M, size_t K, int8_t *q, size_t ldq, float *s);

/// The family lists, in dispatch priority order (best first, scalar last),
/// holding only the variants this build compiled.
extern const qk_quantize_kernel qk_quantize_kernels[];
extern const size_t qk_quantize_kernel_count;
extern const qk_dequantize_kernel qk_dequantize_kernels[];
extern const size_t qk_dequantize_kernel_count;
extern const qk_actquant_kernel qk_actquant_kernels[];
extern const size_t qk_actquant_kernel_count;
extern const qk_matmul_kernel qk_matmul_kernels[];
extern const size_t qk_matmul_kernel_count;

/// The variant the dispatcher chooses under the current cap (never NULL for
/// a valid combination: scalar always exists).
const qk_quantize_kernel *qk_pick_quantize(qk_format f);
const qk_dequantize_kernel *qk_pick_dequantize(qk_format f);
/// Best actquant for `rule` at a tier no higher than `max_tier`.
const qk_actquant_kernel *qk_pick_actquant(qk_act_rule rule, qk_tier max_tier);
/// NULL if the mode does not take the format.
const qk_matmul_kernel *qk_pick_matmul(qk_op op, qk_format f, qk_mode mode);

/// 1 if tier t was compiled into this build.
int qk_tier_compiled(qk_tier t);

/// Why tier t cannot run here (NULL if it can): "CPU lacks AVX512VNNI",
/// "capped by QK_ISA=avx2", "not compiled in this build".
const char *qk_tier_unavailable_reason(qk_tier t);

/// Run one given variant, after the same validation as the qk_* calls.
/// QK_ERR_UNSUPPORTED if its tier is not usable here.
qk_status qk_quantize_with(const qk_quantize_kernel *k, const float *x, size_t ldx, qk_qmat *out);
qk_status qk_dequantize_with(const qk_dequantize_kernel *k, const qk_qmat *w, float *y, size_t ldy);
qk_status qk_actquant_with(const qk_actquant_kernel *k, const float *x, size_t ldx, qk_qact *out);

/// Workspace for a matmul: packed weights (if the kernel packs) and quantized
/// activations for up to max_m rows. Packing happens in qk_matmul_prepare;
/// qk_matmul_run then runs (activation quantization included) with no allocation.
typedef struct qk_matmul_plan {
    const qk_matmul_kernel *kernel;
    const qk_actquant_kernel *actq; ///< NULL for A32 modes
    const qk_qmat *w;
    void *packed;
    qk_qact act;
    size_t max_m;
} qk_matmul_plan;

/// Prepare `k` (or the dispatcher's choice when k is NULL) for weights w and
/// up to max_m activation rows.
qk_status qk_matmul_prepare(qk_matmul_plan *p, const qk_matmul_kernel *k, qk_op op, qk_mode mode, const qk_qmat *w, size_t max_m);
/// Re-pack after the weights changed (same shape).
qk_status qk_matmul_repack(qk_matmul_plan *p);
qk_status qk_matmul_run(qk_matmul_plan *p, size_t M, const float *x, size_t ldx, float *y, size_t ldy);
/// Run only columns [n0, n1) of Y (n0 a multiple of the kernel's nr): the
/// per-thread slice. The activations must already be in p->act (qk_matmul_quantize_acts).
qk_status qk_matmul_quantize_acts(qk_matmul_plan *p, size_t M, const float *x, size_t ldx);
void qk_matmul_run_cols(const qk_matmul_plan *p, size_t M, const float *x, size_t ldx, float *y, size_t ldy, size_t n0, size_t n1);
void qk_matmul_release(qk_matmul_plan *p);

/// fp16 <-> f32, round to nearest even, as F16C does (exact for all inputs).
uint16_t qk_fp32_to_fp16(float f);
float qk_fp16_to_fp32(uint16_t h);

#ifdef __cplusplus
}
#endif
#endif
