/* Integer-activation gemv (W4A8, W8A8, W4A4, q4_0·q8_0, q8_0·q8_0) on the
 * plain weight layout, Armv8.2 dotprod: int8 dots by SDOT. The body is
 * kernels/arm/neon/matmul_int_body.h (shared with the neon tier). */
#if !defined(__aarch64__) || !defined(__ARM_FEATURE_DOTPROD)
#error "this file needs the neondot tier's flags"
#endif
#define QK_ARM_DOT16(acc, a, b) vdotq_s32(acc, a, b)
#include "arm/neon/matmul_int_body.h"

void qk_gemv_w4s_a8__neondot(const qk_matmul_args *a) { int_matmul(a, QK_W4S); }
void qk_gemv_w4a_a8__neondot(const qk_matmul_args *a) { int_matmul(a, QK_W4A); }
void qk_gemv_w8s_a8__neondot(const qk_matmul_args *a) { int_matmul(a, QK_W8S); }
void qk_gemv_w4s_a4__neondot(const qk_matmul_args *a) { int_matmul(a, QK_W4S); }
void qk_gemv_w4a_a4__neondot(const qk_matmul_args *a) { int_matmul(a, QK_W4A); }
void qk_gemv_q4_0_q8_0__neondot(const qk_matmul_args *a) { int_matmul(a, QK_Q4_0); }
void qk_gemv_q8_0_q8_0__neondot(const qk_matmul_args *a) { int_matmul(a, QK_Q8_0); }
