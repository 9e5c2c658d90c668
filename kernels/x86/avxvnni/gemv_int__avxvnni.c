/* gemv (M = 1) in the integer modes, AVX-VNNI: the avx2 bodies of
 * x86/avx2/gemv_int_impl.h with every int8 dot done by the VEX vpdpbusd
 * (ymm), which adds four u8·s8 products into int32 with no int16 step. */
#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__) || !defined(__AVXVNNI__)
#error "this file needs the avxvnni tier's flags"
#endif
#define QK_GEMV_VNNI 1
#include "x86/avx2/gemv_int_impl.h"

/// y = W·x for W4A8, W4A4 (w4s, w4a), W8A8 (w8s), q4_0·q8_0 and q8_0·q8_0.
/// Same contract as the avx2 variants: plain layout, any N, K and group size.
void qk_gemv_w4s_a8__avxvnni(const qk_matmul_args *a) { gemv_w4(a, 1); }
void qk_gemv_w4a_a8__avxvnni(const qk_matmul_args *a) { gemv_w4(a, 0); }
void qk_gemv_w4s_a4__avxvnni(const qk_matmul_args *a) { gemv_w4(a, 1); }
void qk_gemv_w4a_a4__avxvnni(const qk_matmul_args *a) { gemv_w4(a, 0); }
void qk_gemv_w8s_a8__avxvnni(const qk_matmul_args *a) { gemv_w8(a); }
void qk_gemv_q4_0_q8_0__avxvnni(const qk_matmul_args *a) { gemv_q4_0(a); }
void qk_gemv_q8_0_q8_0__avxvnni(const qk_matmul_args *a) { gemv_q8_0(a); }
