/// libqk — low-bit group quantization kernels for CPUs.
///
/// Tensors (DESIGN §1): a weight matrix is W[N][K] (N outputs, K inputs, row
/// major); activations are X[M][K]; the product is Y[M][N] = X · Wᵀ. Groups
/// always run along K: each row is cut into K/g groups of g consecutive values,
/// each with its own scale (and offset for `w4a`).
///
/// Every function returns a qk_status; on failure qk_last_error() returns a
/// message a person can act on ("K=4100 is not a multiple of group size 128")
/// and no output has been written.
#ifndef QK_QK_H
#define QK_QK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Result of every libqk call.
typedef enum qk_status {
    QK_OK = 0,
    QK_ERR_ARG,        ///< a size, pointer, stride or enum value is invalid
    QK_ERR_SHAPE,      ///< shapes do not divide or do not match
    QK_ERR_MODE,       ///< the compute mode does not take this weight format
    QK_ERR_NONFINITE,  ///< NaN or Inf in the input (or produced by overflow)
    QK_ERR_RANGE,      ///< a scale does not fit its storage type (f16 overflow)
    QK_ERR_NOMEM,      ///< allocation failed
    QK_ERR_UNSUPPORTED ///< the kernel asked for cannot run on this CPU
} qk_status;

/// The message of the last failed call on this thread ("" if none).
const char *qk_last_error(void);
/// Name of a status ("QK_ERR_SHAPE").
const char *qk_status_name(qk_status s);

/// Storage formats (DESIGN §1).
typedef enum qk_format {
    QK_W4S = 0, ///< int4 in [-7,7], scale s = absmax/7
    QK_W4A,     ///< uint4 in [0,15], scale d = (max-min)/15, offset m = min
    QK_W8S,     ///< int8 in [-127,127], scale s = absmax/127
    QK_Q4_0,    ///< llama.cpp Q4_0 blocks (g = 32, fp16 d, 18 bytes/block)
    QK_Q8_0,    ///< llama.cpp Q8_0 blocks (g = 32, fp16 d, 34 bytes/block)
    QK_FORMAT_COUNT
} qk_format;

/// Storage type of per-group scales and offsets (`q4_0`/`q8_0`: always f16).
typedef enum qk_scale_type { QK_SCALE_F32 = 0, QK_SCALE_F16 = 1 } qk_scale_type;

/// Compute modes of gemv/gemm (DESIGN §2).
typedef enum qk_mode {
    QK_W4A32 = 0,   ///< 4-bit weights (w4s, w4a, q4_0), f32 activations
    QK_W8A32,       ///< 8-bit weights (w8s, q8_0), f32 activations
    QK_W4A8,        ///< 4-bit weights (w4s, w4a), int8 activations per group
    QK_W8A8,        ///< w8s weights, int8 activations per group
    QK_W4A4,        ///< 4-bit weights (w4s, w4a), int4 activations per group
    QK_Q4_0_Q8_0,   ///< llama.cpp q4_0 · q8_0 dot
    QK_Q8_0_Q8_0,   ///< llama.cpp q8_0 · q8_0 dot
    QK_MODE_COUNT
} qk_mode;

/// How a mode quantizes its activations on the fly.
typedef enum qk_act_rule {
    QK_ACT_F32 = 0, ///< not quantized
    QK_ACT_A8,      ///< int8 [-127,127] per group: s = absmax/127, id = 1/s, round half away
    QK_ACT_A4,      ///< int4 [-7,7] per group (one code per byte): s = absmax/7
    QK_ACT_Q8_0,    ///< llama.cpp q8_0 rule: d = absmax/127, id = 1/d, roundf; d kept as fp16
    QK_ACT_RULE_COUNT
} qk_act_rule;

/// ISA tiers, lowest first. A cap at tier T allows every tier <= T.
typedef enum qk_tier {
    QK_TIER_SCALAR = 0,
    QK_TIER_AVX2,       ///< AVX2 + FMA + F16C
    QK_TIER_AVXVNNI,    ///< AVX2 tier + AVX-VNNI (VEX vpdpbusd)
    QK_TIER_AVX512,     ///< AVX-512 F/BW/DQ/VL (+ AVX2 tier)
    QK_TIER_AVX512VNNI, ///< AVX-512 tier + AVX512-VNNI
    QK_TIER_NEON,       ///< Armv8.0 ASIMD
    QK_TIER_NEONDOT,    ///< + dotprod (sdot/udot)
    QK_TIER_NEONI8MM,   ///< + i8mm (smmla)
    QK_TIER_COUNT
} qk_tier;

const char *qk_format_name(qk_format f);
const char *qk_mode_name(qk_mode m);
const char *qk_tier_name(qk_tier t);
const char *qk_act_rule_name(qk_act_rule r);
/// Parse a name ("w4s", "W4A8", "avx512vnni"); returns QK_ERR_ARG if unknown.
qk_status qk_format_parse(const char *s, qk_format *out);
qk_status qk_mode_parse(const char *s, qk_mode *out);
qk_status qk_tier_parse(const char *s, qk_tier *out);

/// 1 if `mode` takes weights of format `f` (e.g. W4A8 takes w4s and w4a).
int qk_mode_accepts(qk_mode mode, qk_format f);
/// The activation rule of a mode.
qk_act_rule qk_mode_act_rule(qk_mode mode);
/// Bits per weight of a format at group size g with scale type st
/// (w4s/f32 at g=32: 5.0; q4_0: 4.5).
double qk_bpw(qk_format f, size_t group, qk_scale_type st);

/// A quantized matrix in the plain layout of DESIGN §1.
///
/// - w4s/w4a: `codes` holds rows × K/2 bytes, element 2i in the low nibble of
///   byte i and 2i+1 in the high nibble (w4s stores q+8, i.e. 1..15, 8 = zero;
///   w4a stores q); `scales` holds rows × K/g values of `scale_type`; `mins`
///   (w4a only) likewise.
/// - w8s: `codes` holds rows × K int8; `scales` as above.
/// - q4_0/q8_0: `codes` holds rows × K/32 llama.cpp blocks (18 or 34 bytes);
///   `scales`/`mins` are NULL; `scale_type` is QK_SCALE_F16.
/// Rows are contiguous: row r starts at codes + r·row_bytes.
typedef struct qk_qmat {
    qk_format format;
    qk_scale_type scale_type;
    size_t rows, cols, group;
    size_t row_bytes; ///< bytes of codes per row
    uint8_t *codes;
    void *scales;
    void *mins;
    void *owned_; ///< allocation owned by this matrix (NULL for views)
} qk_qmat;

/// Bytes of codes per row for format f and K columns (0 if K does not divide).
size_t qk_row_bytes(qk_format f, size_t K);

/// Check a (format, rows, K, g, scale type) combination; the message names the problem.
qk_status qk_check_shape(qk_format f, size_t rows, size_t K, size_t group, qk_scale_type st);

/// Allocate a matrix (64-byte aligned parts). `group` may be K (per channel).
qk_status qk_qmat_alloc(qk_qmat *m, qk_format f, qk_scale_type st, size_t rows, size_t K, size_t group);
void qk_qmat_free(qk_qmat *m);
/// A view of rows [r0, r1) of m (shares storage, owns nothing).
qk_qmat qk_qmat_rows(const qk_qmat *m, size_t r0, size_t r1);
/// Value of the scale (or offset, when `mins` is set) of group j of row r, as f32.
float qk_qmat_scale(const qk_qmat *m, size_t r, size_t j);
float qk_qmat_min(const qk_qmat *m, size_t r, size_t j);
/// Signed code of element (r, k): w4s in [-7,7] (stored q+8), w4a in [0,15],
/// w8s in [-127,127], q4_0 in [-8,7] (stored q+8), q8_0 in [-127,127].
int qk_qmat_code(const qk_qmat *m, size_t r, size_t k);

/// Quantized activations: one int8 code per element (A4 codes are in [-7,7]),
/// f32 scales (for QK_ACT_Q8_0, the fp16-rounded d as f32) and the per-group
/// sum of codes (used to correct offsets exactly).
typedef struct qk_qact {
    qk_act_rule rule;
    size_t rows, cols, group;
    int8_t *codes;   ///< rows × cols
    float *scales;   ///< rows × cols/group
    int32_t *sums;   ///< rows × cols/group
    void *owned_;
} qk_qact;

qk_status qk_qact_alloc(qk_qact *a, qk_act_rule rule, size_t rows, size_t K, size_t group);
void qk_qact_free(qk_qact *a);

/// Quantize rows × K f32 values (row stride ldx floats) into `out`, which
/// was allocated with the format, shape and group wanted. Non-finite input
/// gives QK_ERR_NONFINITE naming the element; an f16 scale that overflows
/// gives QK_ERR_RANGE.
qk_status qk_quantize(const float *x, size_t ldx, qk_qmat *out);
/// Dequantize `w` into rows × K floats (row stride ldy).
qk_status qk_dequantize(const qk_qmat *w, float *y, size_t ldy);
/// Quantize activations X[rows][K] (stride ldx) by `out->rule`.
qk_status qk_actquant(const float *x, size_t ldx, qk_qact *out);

/// Y[M][N] = X[M][K] · Wᵀ in compute mode `mode`. ldx, ldy are row strides in
/// floats (ldx >= K, ldy >= N). M = 1 runs the gemv kernel.
qk_status qk_gemm(qk_mode mode, const qk_qmat *w, size_t M, const float *x, size_t ldx, float *y, size_t ldy);
/// y[N] = W · x.
qk_status qk_gemv(qk_mode mode, const qk_qmat *w, const float *x, float *y);

/// CPU features (DESIGN §3). `os_enabled` is 0 when the CPU has a feature but
/// the OS has not enabled its register state (XCR0); such a feature is absent.
typedef enum qk_feature {
    QK_F_SSE2 = 0, QK_F_AVX, QK_F_AVX2, QK_F_FMA, QK_F_F16C, QK_F_AVXVNNI,
    QK_F_AVX512F, QK_F_AVX512BW, QK_F_AVX512DQ, QK_F_AVX512VL, QK_F_AVX512VNNI, QK_F_AVX512BF16,
    QK_F_NEON, QK_F_DOTPROD, QK_F_I8MM,
    QK_F_COUNT
} qk_feature;

typedef struct qk_cpu_info {
    char vendor[16];
    char brand[64];
    int is_x86, is_arm;
    uint8_t cpu_has[QK_F_COUNT];    ///< the CPU reports the feature (CPUID / HWCAP)
    uint8_t os_enabled[QK_F_COUNT]; ///< and the OS enabled its state (XCR0); 1 on Arm
    int xcr0_known;
    uint64_t xcr0;
    uint32_t tiers; ///< bit t set: tier t is usable (before any cap)
} qk_cpu_info;

/// Detected once (thread-safe); never changes afterwards.
const qk_cpu_info *qk_cpu(void);
const char *qk_feature_name(qk_feature f);
/// 1 if tier t is usable on this CPU and allowed by the cap.
int qk_tier_allowed(qk_tier t);
/// Highest tier allowed (the cap from QK_ISA and qk_set_tier_cap, lowest wins).
qk_tier qk_tier_cap(void);
/// Lower the cap (it can only go down). Returns the cap in force.
qk_tier qk_set_tier_cap(qk_tier t);
/// Non-NULL if QK_ISA held an unknown tier name (then the cap is scalar).
const char *qk_isa_env_error(void);

#ifdef __cplusplus
}
#endif
#endif
