#include <qk/qk.h>
#include <stdio.h>
int main(void) {
    enum { N = 256, K = 512 };
    static float w[N * K], x[K], y[N];
    for (int i = 0; i < N * K; i++) w[i] = (float)((i * 37) % 101 - 50) / 50.0f;
    for (int k = 0; k < K; k++) x[k] = (float)(k % 7) - 3.0f;
    qk_qmat q; /* int4 symmetric, groups of 128; then int8 activations and integer dots */
    if (qk_qmat_alloc(&q, QK_W4S, QK_SCALE_F32, N, K, 128) || qk_quantize(w, K, &q) || qk_gemv(QK_W4A8, &q, x, y)) {
        fprintf(stderr, "qk: %s\n", qk_last_error());
        return 1;
    }
    printf("y[0] = %f  (%.2f bits per weight)\n", y[0], qk_bpw(QK_W4S, 128, QK_SCALE_F32));
    qk_qmat_free(&q);
    return 0;
}
