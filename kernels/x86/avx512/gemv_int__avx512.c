/* Integer-mode gemv (M = 1), AVX-512 BW without VNNI: vpmaddubsw + vpmaddwd
 * on zmm for W4A8, W8A8, W4A4 (w4s, w4a), q4_0·q8_0 and q8_0·q8_0.
 * 4-bit codes (unsigned, <= 15) times int8 activations never saturate
 * vpmaddubsw's int16 pairs (2·15·127). Int8 weights take the activation's
 * sign and the activation its magnitude (|a|·(±w), both <= 127 in magnitude,
 * pairs <= 2·127·127 < 32767), so no pair saturates and no offset is needed. */
#if !defined(__AVX512F__) || !defined(__AVX512BW__)
#error "this file needs the avx512 tier's flags"
#endif
#include <immintrin.h>

#define QK_W8_OFF 0
typedef struct qk8_act {
    __m512i mag;
    __mmask64 neg;
} qk8_act;
static inline qk8_act qk8_act_prep(__m512i a) {
    qk8_act r = {_mm512_abs_epi8(a), _mm512_movepi8_mask(a)};
    return r;
}
static inline __m512i qk8_weights(__m512i w) { return w; }
static inline __m512i qk8_dot(__m512i acc, __m512i w, qk8_act a) {
    __m512i ws = _mm512_mask_sub_epi8(w, a.neg, _mm512_setzero_si512(), w);
    return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(a.mag, ws), _mm512_set1_epi16(1)));
}
static inline __m512i qk8_sdot(__m512i acc, __m512i u, __m512i s) {
    return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), _mm512_set1_epi16(1)));
}
static inline __m512i qk4_dot(__m512i acc, __m512i w, __m512i a) {
    return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(w, a), _mm512_set1_epi16(1)));
}
static inline __m512i qk_offset_dot(__m512i acc, int off, __m512i a) { return qk4_dot(acc, _mm512_set1_epi8((char)off), a); }

#include "x86/avx512/gemv_int_body.h"

void qk_gemv_w4s_a8__avx512(const qk_matmul_args *a) { gi_gemv(GI_W4S, a); }
void qk_gemv_w4a_a8__avx512(const qk_matmul_args *a) { gi_gemv(GI_W4A, a); }
void qk_gemv_w8s_a8__avx512(const qk_matmul_args *a) { gi_gemv(GI_W8S, a); }
void qk_gemv_w4s_a4__avx512(const qk_matmul_args *a) { gi_gemv(GI_W4S, a); }
void qk_gemv_w4a_a4__avx512(const qk_matmul_args *a) { gi_gemv(GI_W4A, a); }
void qk_gemv_q4_0_q8_0__avx512(const qk_matmul_args *a) { gi_gemv(GI_Q4_0, a); }
void qk_gemv_q8_0_q8_0__avx512(const qk_matmul_args *a) { gi_gemv(GI_Q8_0, a); }
