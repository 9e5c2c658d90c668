/* Outlier-handling transforms (DESIGN §5), AVX-512 F/BW/DQ/VL. The drivers
 * are the shared ones of outlier_body.h, on zmm vectors:
 *  - qk_fwht__avx512: strides 1, 2, 4, 8 in registers (a lane permute and one
 *    FMA by a ±1 sign vector, which is exact), 16 ... block/2 as vector loops;
 *  - qk_gemm_f32__avx512: from 64 rows of X an 8x32 register tile (16 zmm
 *    accumulators, one broadcast of X per two FMAs) over W packed per 32-row
 *    panel and 128-wide K slice; fewer rows, a 4x4 dot-product tile;
 *  - qk_gemm_i8__avx512: a 4x4 tile of int8 dots, 32 pairs per step
 *    (vpmovsxbw + vpmaddwd: exact, no u8×s8 asymmetry);
 *  - qk_colscale__avx512, qk_colsplit__avx512: vector copies with masked
 *    tails; the outlier columns by masked gather and scatter. */
#if !defined(__AVX512F__) || !defined(__AVX512BW__) || !defined(__AVX512DQ__) || !defined(__AVX512VL__)
#error "this file needs the avx512 tier's flags"
#endif
#include "x86/avx512/avx512_common.h"

/* Butterflies of stride 1, 2, 4, 8 inside one vector, up to (and including) stride `top`. */
static inline __m512 fwht16(__m512 v, size_t top) {
    v = _mm512_fmadd_ps(v, _mm512_setr_ps(1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1), _mm512_permute_ps(v, 0xB1));
    if (top >= 2)
        v = _mm512_fmadd_ps(v, _mm512_setr_ps(1, 1, -1, -1, 1, 1, -1, -1, 1, 1, -1, -1, 1, 1, -1, -1), _mm512_permute_ps(v, 0x4E));
    if (top >= 4)
        v = _mm512_fmadd_ps(v, _mm512_setr_ps(1, 1, 1, 1, -1, -1, -1, -1, 1, 1, 1, 1, -1, -1, -1, -1), _mm512_shuffle_f32x4(v, v, 0xB1));
    if (top >= 8)
        v = _mm512_fmadd_ps(v, _mm512_setr_ps(1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1, -1), _mm512_shuffle_f32x4(v, v, 0x4E));
    return v;
}

/* The outlier columns of one row: masked 16-lane gathers, and scatters of zeros. */
static inline void gather_row(const float *xr, const uint32_t *idx, size_t nidx, float *orow, float *zr) {
    for (size_t j = 0; j < nidx; j += 16) {
        const __mmask16 mk = qk512_mask16(nidx - j);
        const __m512i ix = _mm512_maskz_loadu_epi32(mk, idx + j);
        _mm512_mask_storeu_ps(orow + j, mk, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mk, ix, xr, 4));
        _mm512_mask_i32scatter_ps(zr, mk, ix, _mm512_setzero_ps(), 4);
    }
}

/* acc + the 32 int8 products of x and w, widened to int16 pairs summed into int32 lanes (exact). */
static inline __m512i idot32(__m512i acc, const int8_t *x, const int8_t *w) {
    const __m512i xv = _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)x));
    const __m512i wv = _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)w));
    return _mm512_add_epi32(acc, _mm512_madd_epi16(xv, wv));
}

#define OB_TIER avx512
typedef __m512 ob_v;
#define OB_W 16
#define OB_LOAD(p) _mm512_loadu_ps(p)
#define OB_STORE(p, v) _mm512_storeu_ps((p), (v))
#define OB_LOADN(p, n) _mm512_maskz_loadu_ps(qk512_mask16(n), (p))
#define OB_STOREN(p, n, v) _mm512_mask_storeu_ps((p), qk512_mask16(n), (v))
#define OB_SET1(f) _mm512_set1_ps(f)
#define OB_ZERO() _mm512_setzero_ps()
#define OB_ADD _mm512_add_ps
#define OB_SUB _mm512_sub_ps
#define OB_MUL _mm512_mul_ps
#define OB_FMA _mm512_fmadd_ps
#define OB_HSUM _mm512_reduce_add_ps
#define OB_FWHT_INREG fwht16
#define OB_GATHER gather_row
#define OB_DOT_MT 4
#define OB_DOT_NT 4
#define OB_PACK_MR 8
#define OB_PACK_KC 128
#define OB_PACK_MIN_M 64 /* below this many rows of X the W panels cost more than they save */
typedef __m512i ob_iv;
#define OB_KB 32
#define OB_IZERO() _mm512_setzero_si512()
#define OB_IDOT idot32
#define OB_IHSUM _mm512_reduce_add_epi32
#define OB_I_MT 4
#define OB_I_NT 4
#include "outlier_body.h"
