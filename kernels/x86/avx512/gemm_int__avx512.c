/* Integer-mode gemm (any M), AVX-512 BW without VNNI: the 4×48 tile of
 * gemm_int_body.h with vpmaddubsw + vpmaddwd as the byte dot product.
 * 4-bit codes (<= 15) times int8 activations never saturate vpmaddubsw's
 * int16 pairs (2·15·127), nor do four steps of them summed in int16
 * before one vpmaddwd (GM_I16: 8·2·15·127 = 30480). 8-bit weights as stored (int8 + 128, up to 255)
 * would, so the 8-bit dot takes the int8 code q = w ^ 0x80 itself: |q| is
 * the unsigned side and the activation takes q's sign (a where q >= 0, -a
 * where q < 0), so every product is q·a and a pair is at most 2·128·127 =
 * 32512: exact for any code, the activations being within ±127 (actquant's
 * a8 and q8_0 are). The lanes then start at 0 (GM_W8_OFF). |q| and the sign
 * mask are per weight vector, shared by the tile's 4 rows; -a per broadcast,
 * shared by its 3 vectors: per 64 products one blend, vpmaddubsw, vpmaddwd and
 * vpaddd, against two of each and three nibble operations when the two
 * nibbles of w were dotted apart. */
#if !defined(__AVX512F__) || !defined(__AVX512BW__)
#error "this file needs the avx512 tier's flags"
#endif
#include <immintrin.h>

#define GM_DOT(acc, w, a) _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(w, a), _mm512_set1_epi16(1)))
static inline __attribute__((always_inline)) __m512i gm_dot8(__m512i acc, __m512i w, __m512i a) {
    __mmask64 nonneg = _mm512_movepi8_mask(w); /* w = q + 128 >= 128: q >= 0 */
    __m512i mag = _mm512_abs_epi8(_mm512_xor_si512(w, _mm512_set1_epi8((char)0x80)));
    __m512i sa = _mm512_mask_blend_epi8(nonneg, _mm512_sub_epi8(_mm512_setzero_si512(), a), a);
    return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(mag, sa), _mm512_set1_epi16(1)));
}
#define GM_DOT8(acc, w, a) gm_dot8(acc, w, a)
#define GM_W8_OFF 0
#define GM_I16 1
#define GM_DOT16(p, w, a) _mm512_add_epi16(p, _mm512_maddubs_epi16(w, a))
#define GM_WIDEN(acc, p) _mm512_add_epi32(acc, _mm512_madd_epi16(p, _mm512_set1_epi16(1)))
#define GM_TILEG 0 /* the unrolled loop needs registers this dot uses (GM_WHOLE_G) */

#include "x86/avx512/gemm_int_body.h"

GM_DEFINE(qk_gemm_w8s_a8_4x48__avx512, GM_W8S)
GM_DEFINE(qk_gemm_w4s_a8_4x48__avx512, GM_W4S)
GM_DEFINE(qk_gemm_w4a_a8_4x48__avx512, GM_W4A)
GM_DEFINE(qk_gemm_w4s_a4_4x48__avx512, GM_W4S)
GM_DEFINE(qk_gemm_w4a_a4_4x48__avx512, GM_W4A)
GM_DEFINE(qk_gemm_q4_0_q8_0_4x48__avx512, GM_Q4_0)
GM_DEFINE(qk_gemm_q8_0_q8_0_4x48__avx512, GM_Q8_0)
