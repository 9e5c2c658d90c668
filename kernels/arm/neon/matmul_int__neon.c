/* Integer-activation gemv and gemm (W4A8, W8A8, W4A4, q4_0·q8_0, q8_0·q8_0)
 * on the plain weight layout, Armv8.0 ASIMD: int8 dots by SMULL + SADALP.
 * The body is kernels/arm/neon/matmul_int_body.h (shared with neondot). */
#if !defined(__aarch64__) || !defined(__ARM_NEON)
#error "this file needs the neon tier's flags"
#endif
#define QK_ARM_DOT16(acc, a, b) qk_neon_dot16_v80(acc, a, b)
#include "arm/neon/matmul_int_body.h"

void qk_gemv_w4s_a8__neon(const qk_matmul_args *a) { int_matmul(a, QK_W4S); }
void qk_gemv_w4a_a8__neon(const qk_matmul_args *a) { int_matmul(a, QK_W4A); }
void qk_gemv_w8s_a8__neon(const qk_matmul_args *a) { int_matmul(a, QK_W8S); }
void qk_gemv_w4s_a4__neon(const qk_matmul_args *a) { int_matmul(a, QK_W4S); }
void qk_gemv_w4a_a4__neon(const qk_matmul_args *a) { int_matmul(a, QK_W4A); }
void qk_gemv_q4_0_q8_0__neon(const qk_matmul_args *a) { int_matmul(a, QK_Q4_0); }
void qk_gemv_q8_0_q8_0__neon(const qk_matmul_args *a) { int_matmul(a, QK_Q8_0); }

void qk_gemm_w4s_a8_1x4__neon(const qk_matmul_args *a) { int_matmul(a, QK_W4S); }
void qk_gemm_w4a_a8_1x4__neon(const qk_matmul_args *a) { int_matmul(a, QK_W4A); }
void qk_gemm_w8s_a8_1x4__neon(const qk_matmul_args *a) { int_matmul(a, QK_W8S); }
void qk_gemm_w4s_a4_1x4__neon(const qk_matmul_args *a) { int_matmul(a, QK_W4S); }
void qk_gemm_w4a_a4_1x4__neon(const qk_matmul_args *a) { int_matmul(a, QK_W4A); }
void qk_gemm_q4_0_q8_0_1x4__neon(const qk_matmul_args *a) { int_matmul(a, QK_Q4_0); }
void qk_gemm_q8_0_q8_0_1x4__neon(const qk_matmul_args *a) { int_matmul(a, QK_Q8_0); }
