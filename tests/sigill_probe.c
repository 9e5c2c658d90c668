/* Negative test of dispatch safety: call an AVX-512 kernel directly, without
 * asking the dispatcher. Run under `qemu-x86_64 -cpu max` (AVX2, no AVX-512)
 * this must die with SIGILL: it is detection, not luck, that keeps users of
 * the qk_* API away from instructions their CPU lacks.
 * Exit status: 0 never expected under emulation; 3 if this build has no
 * AVX-512 kernel to call (the test then reports a skip). */
#include <stdio.h>
#include <stdlib.h>

#include "qk/kernels.h"

int main(void) {
    static float x[256], y[256];
    for (int i = 0; i < 256; i++) x[i] = (float)(i % 17) - 8.0f;
    for (size_t i = 0; i < qk_dequantize_kernel_count; i++) {
        const qk_dequantize_kernel *k = &qk_dequantize_kernels[i];
        if (k->tier != QK_TIER_AVX512 && k->tier != QK_TIER_AVX512VNNI) continue;
        qk_qmat w;
        if (qk_qmat_alloc(&w, k->format, k->format >= QK_Q4_0 ? QK_SCALE_F16 : QK_SCALE_F32, 1, 256, 32)) return 2;
        fprintf(stderr, "calling %s directly\n", k->name);
        k->run(&w, y, 256); /* no qk_dequantize_with: no tier check */
        printf("%s ran: this CPU executes AVX-512\n", k->name);
        return 0;
    }
    for (size_t i = 0; i < qk_quantize_kernel_count; i++) {
        const qk_quantize_kernel *k = &qk_quantize_kernels[i];
        if (k->tier != QK_TIER_AVX512 && k->tier != QK_TIER_AVX512VNNI) continue;
        qk_qmat w;
        if (qk_qmat_alloc(&w, k->format, k->format >= QK_Q4_0 ? QK_SCALE_F16 : QK_SCALE_F32, 1, 256, 32)) return 2;
        fprintf(stderr, "calling %s directly\n", k->name);
        k->run(x, 256, &w);
        printf("%s ran: this CPU executes AVX-512\n", k->name);
        return 0;
    }
    printf("SKIP: this build lists no AVX-512 kernel\n");
    return 3;
}
