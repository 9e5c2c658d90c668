/* Integer-mode gemm (any M), AVX-512 BW without VNNI: the 4×48 tile of
 * gemm_int_body.h with vpmaddubsw + vpmaddwd as the byte dot product.
 * 4-bit codes (<= 15) times int8 activations never saturate vpmaddubsw's
 * int16 pairs (2·15·127). 8-bit weights (int8 + 128, up to 255) would, so
 * they are split into their two nibbles, each dotted the same way, and the
 * high one weighted by 16 in vpmaddwd: exact. */
#if !defined(__AVX512F__) || !defined(__AVX512BW__)
#error "this file needs the avx512 tier's flags"
#endif
#include <immintrin.h>

#define GM_DOT(acc, w, a) _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(w, a), _mm512_set1_epi16(1)))
#define GM_DOT8(acc, w, a)                                                                                                   \
    _mm512_add_epi32(_mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(_mm512_and_si512(w, _mm512_set1_epi8(0x0f)), a), \
                                                             _mm512_set1_epi16(1))),                                         \
                     _mm512_madd_epi16(_mm512_maddubs_epi16(_mm512_and_si512(_mm512_srli_epi16(w, 4), _mm512_set1_epi8(0x0f)), a), \
                                       _mm512_set1_epi16(16)))

#include "x86/avx512/gemm_int_body.h"

GM_DEFINE(qk_gemm_w8s_a8_4x48__avx512, GM_W8S)
GM_DEFINE(qk_gemm_w4s_a8_4x48__avx512, GM_W4S)
GM_DEFINE(qk_gemm_w4a_a8_4x48__avx512, GM_W4A)
GM_DEFINE(qk_gemm_w4s_a4_4x48__avx512, GM_W4S)
GM_DEFINE(qk_gemm_w4a_a4_4x48__avx512, GM_W4A)
GM_DEFINE(qk_gemm_q4_0_q8_0_4x48__avx512, GM_Q4_0)
GM_DEFINE(qk_gemm_q8_0_q8_0_4x48__avx512, GM_Q8_0)
