/* Outlier-handling transforms (DESIGN §5), AVX2 + FMA. The drivers are the
 * shared ones of outlier_body.h, on ymm vectors:
 *  - qk_fwht__avx2: strides 1, 2, 4 in registers (a lane permute and one FMA
 *    by a ±1 sign vector, which is exact), 8 ... block/2 as vector loops;
 *  - qk_gemm_f32__avx2: from 64 rows of X a 6x16 register tile (12 ymm
 *    accumulators, one broadcast of X per two FMAs) over W packed per 16-row
 *    panel and 256-wide K slice; fewer rows, a 4x3 dot-product tile;
 *  - qk_gemm_i8__avx2: a 4x3 tile of int8 dots, 16 pairs per step
 *    (vpmovsxbw + vpmaddwd: exact, no u8×s8 asymmetry);
 *  - qk_colscale__avx2, qk_colsplit__avx2: vector copies with masked tails,
 *    an 8-lane gather of the outlier columns. */
#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
#error "this file needs the avx2 tier's flags"
#endif
#include "x86/avx2/avx2_common.h"

/* Mask of the first n (0..8) lanes. */
static inline __m256i lanes_mask(size_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* Butterflies of stride 1, 2 and 4 inside one vector, up to (and including) stride `top`. */
static inline __m256 fwht8(__m256 v, size_t top) {
    v = _mm256_fmadd_ps(v, _mm256_setr_ps(1, -1, 1, -1, 1, -1, 1, -1), _mm256_permute_ps(v, 0xB1));
    if (top >= 2) v = _mm256_fmadd_ps(v, _mm256_setr_ps(1, 1, -1, -1, 1, 1, -1, -1), _mm256_permute_ps(v, 0x4E));
    if (top >= 4) v = _mm256_fmadd_ps(v, _mm256_setr_ps(1, 1, 1, 1, -1, -1, -1, -1), _mm256_permute2f128_ps(v, v, 1));
    return v;
}

/* The outlier columns of one row: an 8-lane gather, then the zeroing stores. */
static inline void gather_row(const float *xr, const uint32_t *idx, size_t nidx, float *orow, float *zr) {
    size_t j = 0;
    for (; j + 8 <= nidx; j += 8) _mm256_storeu_ps(orow + j, _mm256_i32gather_ps(xr, _mm256_loadu_si256((const __m256i *)(idx + j)), 4));
    for (; j < nidx; j++) orow[j] = xr[idx[j]];
    for (j = 0; j < nidx; j++) zr[idx[j]] = 0.0f;
}

/* acc + the 16 int8 products of x and w, widened to int16 pairs summed into int32 lanes (exact). */
static inline __m256i idot16(__m256i acc, const int8_t *x, const int8_t *w) {
    const __m256i xv = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x));
    const __m256i wv = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)w));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(xv, wv));
}

static inline int32_t ihsum8(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

#define OB_TIER avx2
typedef __m256 ob_v;
#define OB_W 8
#define OB_LOAD(p) _mm256_loadu_ps(p)
#define OB_STORE(p, v) _mm256_storeu_ps((p), (v))
#define OB_LOADN(p, n) _mm256_maskload_ps((p), lanes_mask(n))
#define OB_STOREN(p, n, v) _mm256_maskstore_ps((p), lanes_mask(n), (v))
#define OB_SET1(f) _mm256_set1_ps(f)
#define OB_ZERO() _mm256_setzero_ps()
#define OB_ADD _mm256_add_ps
#define OB_SUB _mm256_sub_ps
#define OB_MUL _mm256_mul_ps
#define OB_FMA _mm256_fmadd_ps
#define OB_HSUM qk_avx2_hsum_ps
#define OB_FWHT_INREG fwht8
#define OB_GATHER gather_row
#define OB_DOT_MT 4
#define OB_DOT_NT 3
#define OB_PACK_MR 6
#define OB_PACK_KC 256
#define OB_PACK_MIN_M 64 /* below this many rows of X the W panels cost more than they save */
typedef __m256i ob_iv;
#define OB_KB 16
#define OB_IZERO() _mm256_setzero_si256()
#define OB_IDOT idot16
#define OB_IHSUM ihsum8
#define OB_I_MT 4
#define OB_I_NT 3
#include "outlier_body.h"
