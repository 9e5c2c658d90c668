/* gemv (M = 1) in the integer modes, AVX2: int8 dots through vpmaddubsw and
 * vpmaddwd on the plain layout (see gemv_int_impl.h for the exactness rules). */
#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
#error "this file needs the avx2 tier's flags"
#endif
#include "x86/avx2/gemv_int_impl.h"

/// y = W·x for W4A8, W4A4 (w4s, w4a), W8A8 (w8s), q4_0·q8_0 and q8_0·q8_0.
/// Reads a->w (plain layout) and a->xq (the quantized activation row, with its
/// per-group scales and code sums); writes a->y[0..N). Any N, any K and group
/// size the format allows; pointers need no alignment.
void qk_gemv_w4s_a8__avx2(const qk_matmul_args *a) { gemv_w4(a, 1); }
void qk_gemv_w4a_a8__avx2(const qk_matmul_args *a) { gemv_w4(a, 0); }
void qk_gemv_w4s_a4__avx2(const qk_matmul_args *a) { gemv_w4(a, 1); }
void qk_gemv_w4a_a4__avx2(const qk_matmul_args *a) { gemv_w4(a, 0); }
void qk_gemv_w8s_a8__avx2(const qk_matmul_args *a) { gemv_w8(a); }
void qk_gemv_q4_0_q8_0__avx2(const qk_matmul_args *a) { gemv_q4_0(a); }
void qk_gemv_q8_0_q8_0__avx2(const qk_matmul_args *a) { gemv_q8_0(a); }
