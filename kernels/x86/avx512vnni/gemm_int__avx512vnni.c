/* Integer-mode gemm (any M), AVX-512 VNNI: vpdpbusd on zmm with a 4×48
 * register tile over packed weights (layout and exactness: gemm_int_body.h),
 * for W8A8, W4A8 and W4A4 (w4s, w4a), q4_0·q8_0 and q8_0·q8_0. A4
 * activations are int8 bytes in [-7, 7], so W4A4 runs the W4A8 code. */
#if !defined(__AVX512F__) || !defined(__AVX512BW__) || !defined(__AVX512VNNI__)
#error "this file needs the avx512vnni tier's flags"
#endif
#include <immintrin.h>

#define GM_DOT(acc, w, a) _mm512_dpbusd_epi32(acc, w, a)
#define GM_PF_L1 1

#include "x86/avx512/gemm_int_body.h"

GM_DEFINE(qk_gemm_w8s_a8_4x48__avx512vnni, GM_W8S)
GM_DEFINE(qk_gemm_w4s_a8_4x48__avx512vnni, GM_W4S)
GM_DEFINE(qk_gemm_w4a_a8_4x48__avx512vnni, GM_W4A)
GM_DEFINE(qk_gemm_w4s_a4_4x48__avx512vnni, GM_W4S)
GM_DEFINE(qk_gemm_w4a_a4_4x48__avx512vnni, GM_W4A)
GM_DEFINE(qk_gemm_q4_0_q8_0_4x48__avx512vnni, GM_Q4_0)
GM_DEFINE(qk_gemm_q8_0_q8_0_4x48__avx512vnni, GM_Q8_0)
