/* Integer-mode gemv (M = 1), AVX-512 VNNI: vpdpbusd on zmm for W4A8, W8A8,
 * W4A4 (w4s, w4a), q4_0·q8_0 and q8_0·q8_0, on the plain layout.
 * vpdpbusd multiplies unsigned by signed bytes: 4-bit codes are unsigned
 * already (w4s stores q+8, q4_0 q+8, w4a q), int8 weights get +128 (xor
 * 0x80) or, in the table path, take the activation's sign; the offset
 * times the activations comes off in int32 lane by lane, or per group from
 * actquant's group sums (gemv_int_body.h). A4 activations are int8 bytes in
 * [-7, 7], so W4A4 runs the W4A8 code. */
#if !defined(__AVX512F__) || !defined(__AVX512BW__) || !defined(__AVX512VNNI__)
#error "this file needs the avx512vnni tier's flags"
#endif
#include <immintrin.h>

#define QK_W8_OFF 128
typedef __m512i qk8_act;
static inline qk8_act qk8_act_prep(__m512i a) { return a; }
static inline __m512i qk8_weights(__m512i w) { return _mm512_xor_si512(w, _mm512_set1_epi8((char)0x80)); }
static inline __m512i qk8_dot(__m512i acc, __m512i w, qk8_act a) { return _mm512_dpbusd_epi32(acc, w, a); }
static inline __m512i qk8_sdot(__m512i acc, __m512i u, __m512i s) { return _mm512_dpbusd_epi32(acc, u, s); }
static inline __m512i qk4_dot(__m512i acc, __m512i w, __m512i a) { return _mm512_dpbusd_epi32(acc, w, a); }
static inline __m512i qk_offset_dot(__m512i acc, int off, __m512i a) { return _mm512_dpbusd_epi32(acc, _mm512_set1_epi8((char)off), a); }

#include "x86/avx512/gemv_int_body.h"

void qk_gemv_w4s_a8__avx512vnni(const qk_matmul_args *a) { gi_gemv(GI_W4S, a); }
void qk_gemv_w4a_a8__avx512vnni(const qk_matmul_args *a) { gi_gemv(GI_W4A, a); }
void qk_gemv_w8s_a8__avx512vnni(const qk_matmul_args *a) { gi_gemv(GI_W8S, a); }
void qk_gemv_w4s_a4__avx512vnni(const qk_matmul_args *a) { gi_gemv(GI_W4S, a); }
void qk_gemv_w4a_a4__avx512vnni(const qk_matmul_args *a) { gi_gemv(GI_W4A, a); }
void qk_gemv_q4_0_q8_0__avx512vnni(const qk_matmul_args *a) { gi_gemv(GI_Q4_0, a); }
void qk_gemv_q8_0_q8_0__avx512vnni(const qk_matmul_args *a) { gi_gemv(GI_Q8_0, a); }
