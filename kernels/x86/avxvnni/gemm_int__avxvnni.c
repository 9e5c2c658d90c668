/* gemm (any M) in the integer modes, AVX-VNNI: the 6x16 tiles of
 * x86/avx2/gemm_int_impl.h with every dot a VEX vpdpbusd; 8-bit weights are
 * packed as u8 = q + 128 and corrected by 128·Σa per group. */
#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__) || !defined(__AVXVNNI__)
#error "this file needs the avxvnni tier's flags"
#endif
#define QK_GEMM_VNNI 1
#include "x86/avx2/gemm_int_impl.h"

/// Same contract as the avx2 variants (their own packed layout for 8-bit weights).
QK_GEMM_INT_VARIANT(qk_gemm_w4s_a8_6x16__avxvnni, GL_U4Q, 8, 0)
QK_GEMM_INT_VARIANT(qk_gemm_w4a_a8_6x16__avxvnni, GL_U4Q, 0, 1)
QK_GEMM_INT_VARIANT(qk_gemm_w4s_a4_6x16__avxvnni, GL_U4Q, 8, 0)
QK_GEMM_INT_VARIANT(qk_gemm_w4a_a4_6x16__avxvnni, GL_U4Q, 0, 1)
QK_GEMM_INT_VARIANT(qk_gemm_w8s_a8_6x16__avxvnni, GL_S8Q, 128, 0)
QK_GEMM_INT_VARIANT(qk_gemm_q4_0_q8_0_6x16__avxvnni, GL_U4Q, 8, 0)
QK_GEMM_INT_VARIANT(qk_gemm_q8_0_q8_0_6x16__avxvnni, GL_S8Q, 128, 0)
