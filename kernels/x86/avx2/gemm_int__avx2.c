/* gemm (any M) in the integer modes, AVX2: 4x16 register tiles on packed
 * weights (layouts and exactness rules in gemm_int_impl.h). 4-bit weights dot
 * through vpmaddubsw (eight quads summed in int16), 8-bit weights through
 * vpmaddwd on int16 pairs (vpmaddubsw would saturate on int8 × int8). */
#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
#error "this file needs the avx2 tier's flags"
#endif
#include "x86/avx2/gemm_int_impl.h"

/// Y = X·Wᵀ for W4A8, W4A4 (w4s, w4a), W8A8 (w8s), q4_0·q8_0 and q8_0·q8_0.
/// a->wp: this kernel's packed weights (from _pack) at _packed_offset(n0);
/// a->xq: the M quantized activation rows. Writes a->y rows 0..M-1, columns
/// 0..N-1 (stride a->ldy). Any M, N, K and group size the format allows.
QK_GEMM_INT_VARIANT(qk_gemm_w4s_a8_4x16__avx2, GL_U4Q, 8, 0)
QK_GEMM_INT_VARIANT(qk_gemm_w4a_a8_4x16__avx2, GL_U4Q, 0, 1)
QK_GEMM_INT_VARIANT(qk_gemm_w4s_a4_4x16__avx2, GL_U4Q, 8, 0)
QK_GEMM_INT_VARIANT(qk_gemm_w4a_a4_4x16__avx2, GL_U4Q, 0, 1)
QK_GEMM_INT_VARIANT(qk_gemm_w8s_a8_4x16__avx2, GL_S8T, 0, 0)
QK_GEMM_INT_VARIANT(qk_gemm_q4_0_q8_0_4x16__avx2, GL_U4Q, 8, 0)
QK_GEMM_INT_VARIANT(qk_gemm_q8_0_q8_0_4x16__avx2, GL_S8T, 0, 0)
