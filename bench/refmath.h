/// Exact math for the accuracy commands (DESIGN §4).
///
/// - The FP32 reference: Y = X·Wᵀ accumulated in double over the unquantized
///   f32 inputs.
/// - Exact math on quantized values: the same sum over ŵ (and, for the int
///   modes, x̂), each rebuilt exactly in double from its codes and scales
///   (ŵ = s·q, m + d·q, (q−8)·d; x̂ = s_a·q_a). Quantization error = this vs
///   the FP32 reference; kernel error = a kernel's output vs this.
#ifndef QK_REFMATH_H
#define QK_REFMATH_H

#include <stddef.h>

#include "qk/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The rows of a K-wide matrix: f32 values (qm NULL), or a quantized matrix
/// dequantized exactly in double.
typedef struct qk_rows {
    const float *f32;
    size_t ld; ///< row stride of f32, in floats
    const qk_qmat *qm;
} qk_rows;

/// Row n into out[0..K), exactly.
void qk_rows_get(const qk_rows *w, size_t n, size_t K, double *out);

/// Y[m][n] = Σ_k X[m][k]·W[n][k] in double: X is M×K doubles (row stride K),
/// W's N rows come from `w`, y is M×N (row stride N). abs_terms, if not NULL,
/// receives Σ_k |X[m][k]·W[n][k]| (the scale of the kernel error model).
/// Splits N over `threads` threads (1 or more). Returns 0, or -1 if out of memory.
int qk_exact_matmul(const double *x, size_t M, size_t K, const qk_rows *w, size_t N, double *y, double *abs_terms,
                    int threads);

/// X rows to double: f32 as is, quantized activations as s·q exactly.
void qk_x_from_f32(const float *x, size_t ldx, size_t M, size_t K, double *out);
void qk_x_from_qact(const qk_qact *a, size_t M, double *out);

/// The activation codes a mode's integer dot uses, from the scalar reference
/// actquant kernel: allocates `out` (free with qk_qact_free).
qk_status qk_actquant_reference(qk_act_rule rule, const float *x, size_t ldx, size_t M, size_t K, size_t group,
                                qk_qact *out);

/// The scalar reference variant of a family (for the "exact codes").
const qk_quantize_kernel *qk_reference_quantize(qk_format f);

/// Threads to use for exact math: QK_ACC_THREADS, else the online CPUs (at most 8).
int qk_acc_threads(void);

#ifdef __cplusplus
}
#endif
#endif
