/* Scalar reference: Y[M][N] = X[M][K] · Wᵀ for every format and mode
 * (DESIGN §2), written for clarity, accumulated in double and rounded to f32
 * once per output. These are gemm kernels (any M) and also serve M = 1.
 *
 *   A32 modes:  y = Σ_k ŵ_k · x_k, with ŵ the exact dequantized weight
 *               (s·q, m + d·q, (q-8)·d, q·d; in double).
 *   int modes:  y = Σ_groups sw·sa·Σ qw·qa (integer dot, exact), and for w4a
 *               y = Σ_groups sa·(m·Σqa + d·Σ qw·qa). q4_0·q8_0 and q8_0·q8_0
 *               are llama.cpp's dots: Σ_blocks d_w·d_x·Σ qw·qx. */
#include "internal.h"

/* Scale (d) and offset (m) of group j of row n. */
static inline double wscale(const qk_qmat *w, const uint8_t *row, size_t n, size_t j) {
    if (w->format == QK_Q4_0) return qk_h2f(qk_rd16(row + j * QK_Q4_0_BYTES));
    if (w->format == QK_Q8_0) return qk_h2f(qk_rd16(row + j * QK_Q8_0_BYTES));
    return qk_load_scale(w->scales, n * (w->cols / w->group) + j, w->scale_type);
}

static inline double wmin(const qk_qmat *w, size_t n, size_t j) {
    return w->format == QK_W4A ? qk_load_scale(w->mins, n * (w->cols / w->group) + j, w->scale_type) : 0.0;
}

static void matmul_a32(const qk_matmul_args *a) {
    const qk_qmat *w = a->w;
    size_t g = a->group, ng = a->K / g;
    for (size_t m = 0; m < a->M; m++)
        for (size_t n = 0; n < a->N; n++) {
            const uint8_t *row = w->codes + n * w->row_bytes;
            const float *x = a->x + m * a->ldx;
            double acc = 0.0;
            for (size_t j = 0; j < ng; j++) {
                double s = wscale(w, row, n, j), mn = wmin(w, n, j);
                for (size_t i = 0; i < g; i++) {
                    size_t k = j * g + i;
                    acc += (mn + s * qk_row_code(row, w->format, k)) * (double)x[k];
                }
            }
            a->y[m * a->ldy + n] = (float)acc;
        }
}

static void matmul_int(const qk_matmul_args *a) {
    const qk_qmat *w = a->w;
    const qk_qact *xq = a->xq;
    size_t g = a->group, ng = a->K / g;
    for (size_t m = 0; m < a->M; m++)
        for (size_t n = 0; n < a->N; n++) {
            const uint8_t *row = w->codes + n * w->row_bytes;
            const int8_t *qa = xq->codes + m * xq->cols;
            double acc = 0.0;
            for (size_t j = 0; j < ng; j++) {
                int64_t dot = 0;
                for (size_t i = 0; i < g; i++) dot += (int64_t)qk_row_code(row, w->format, j * g + i) * qa[j * g + i];
                double sa = xq->scales[m * ng + j], sw = wscale(w, row, n, j);
                if (w->format == QK_W4A)
                    acc += sa * (wmin(w, n, j) * (double)xq->sums[m * ng + j] + sw * (double)dot);
                else
                    acc += sw * sa * (double)dot;
            }
            a->y[m * a->ldy + n] = (float)acc;
        }
}

void qk_gemm_w4s_a32__scalar(const qk_matmul_args *a) { matmul_a32(a); }
void qk_gemm_w4a_a32__scalar(const qk_matmul_args *a) { matmul_a32(a); }
void qk_gemm_q4_0_a32__scalar(const qk_matmul_args *a) { matmul_a32(a); }
void qk_gemm_w8s_a32__scalar(const qk_matmul_args *a) { matmul_a32(a); }
void qk_gemm_q8_0_a32__scalar(const qk_matmul_args *a) { matmul_a32(a); }
void qk_gemm_w4s_a8__scalar(const qk_matmul_args *a) { matmul_int(a); }
void qk_gemm_w4a_a8__scalar(const qk_matmul_args *a) { matmul_int(a); }
void qk_gemm_w8s_a8__scalar(const qk_matmul_args *a) { matmul_int(a); }
void qk_gemm_w4s_a4__scalar(const qk_matmul_args *a) { matmul_int(a); }
void qk_gemm_w4a_a4__scalar(const qk_matmul_args *a) { matmul_int(a); }
void qk_gemm_q4_0_q8_0__scalar(const qk_matmul_args *a) { matmul_int(a); }
void qk_gemm_q8_0_q8_0__scalar(const qk_matmul_args *a) { matmul_int(a); }
