/// Integer-mode gemm bodies (any M) with packed weights, shared by the avx2
/// tier and the avxvnni tier (which includes this file with QK_GEMM_VNNI).
///
/// Register tile: QK_GEMM_MR rows of X (4 on avx2, 6 on avxvnni) by
/// QK_GEMM_NR = 16 rows of W (two ymm of 8 outputs); int32 sums per group,
/// then one conversion and one scale per group into f32 sums kept in a small
/// stack tile.
///
/// Packed layout (pack() from the plain layout): tiles of 16 weight rows, tile
/// t at byte t·tile_bytes (packed_offset(n0) = n0/16·tile_bytes); the last tile
/// is padded with zero rows. A tile holds its codes in k-quads (4 consecutive
/// k), then f32 scales [K/g][16], then (w4a) f32 offsets [K/g][16]:
///  - U4Q (4-bit, W4A8/W4A4/q4_0·q8_0): 32 bytes per quad; dword i holds the
///    unsigned codes c (w4s and q4_0: q+8) of k..k+3 of row i in its low
///    nibbles and of row i+8 in its high nibbles. Dots take c as the unsigned
///    operand against the signed activations; w4s/q4_0 subtract 8·Σa per group
///    in int32 (Σa from the activation quantizer). vpmaddubsw pairs are at most
///    2·15·127, and eight of them still fit int16 (avx2 sums eight quads in
///    int16 before widening).
///  - S8Q (8-bit, avxvnni): 64 bytes per quad, dword i of the first (second)
///    32 bytes = codes of k..k+3 of row i (i+8) as u8 = q + 128; the dot of a
///    group is Σ (q+128)·a − 128·Σa.
///  - S8T (8-bit, avx2): 64 bytes per quad = four pieces of 16 int8, widened to
///    int16 by vpmovsxbw: (q_k, q_k+2) and (q_k+1, q_k+3) of rows 0-7, then of
///    rows 8-15, each pair against the activation pairs (a_k, a_k+2),
///    (a_k+1, a_k+3) that two shifts make from one broadcast dword (vpmaddwd:
///    int16 products, no saturation).
/// A K that is not a multiple of 4 (g = K) pads the last quad with zero
/// weights (u8 128 in S8Q) and zero activations.
///
/// Groups longer than QK_GEMM_CHUNK values are summed in pieces, each converted
/// with the group's scale; a piece's offset correction then uses its own Σa.
///
/// A tile runs over the whole of K. K slices of 1024 values, every row tile
/// over a slice before the next (the avx512 body's order, which keeps a
/// slice's weights in L1), took 1.0-1.2x the time on avxvnni (tools/ab.py
/// --rounds 3 --pin 0, W8A8 and W4A8, g = 32 and 128, 64x14336x4096 and
/// 64x4096x14336, 2026-12-07): these tiles wait on their dots, not on L2.
/// Nor does X go in blocks of rows (qk_row_block, about 512 KiB of codes, as
/// the avx512 body's 2 MiB blocks keep X in cache between column tiles):
/// 512x4096x14336 at g = 32 took 1.06-1.47x the time on avx2 and avxvnni
/// (W8A8, W4A8 w4s; tools/ab.py --rounds 3 --pin 0, 2026-12-08), as every
/// block of 36 rows reads all of W from memory again; 512x14336x4096 and
/// 64x4096x14336 0.97-1.05.
#ifndef QK_GEMM_INT_IMPL_H
#define QK_GEMM_INT_IMPL_H

#include "x86/avx2/avx2_common.h"
#include "x86/avx2/gemm_pack_impl.h"

#ifdef QK_GEMM_VNNI
#define QK_GEMM_MR 6
#else
#define QK_GEMM_MR 4
#endif
#define QK_GEMM_NR 16
#define QK_GEMM_CHUNK ((size_t)16384)
#define QK_GINLINE static inline __attribute__((always_inline))

typedef enum { GL_U4Q, GL_S8Q, GL_S8T } gemm_layout;

/* ---- geometry ---- */

QK_GINLINE size_t gemm_quads(size_t K) { return (K + 3) / 4; }
QK_GINLINE size_t gemm_code_bytes(gemm_layout L, size_t K) { return gemm_quads(K) * (L == GL_U4Q ? 32 : 64); }
QK_GINLINE size_t gemm_tile_bytes(const qk_qmat *w, gemm_layout L) {
    size_t ng = w->cols / w->group;
    return gemm_code_bytes(L, w->cols) + ng * QK_GEMM_NR * sizeof(float) * (w->format == QK_W4A ? 2 : 1);
}
QK_GINLINE size_t gemm_pack_size(const qk_qmat *w, gemm_layout L) {
    return (w->rows + QK_GEMM_NR - 1) / QK_GEMM_NR * gemm_tile_bytes(w, L);
}
QK_GINLINE size_t gemm_packed_offset(const qk_qmat *w, gemm_layout L, size_t n0) { return n0 / QK_GEMM_NR * gemm_tile_bytes(w, L); }

/* ---- packing ---- */

/* Codes k0..k0+255 (or fewer) of row n as int8: the unsigned 4-bit code c for
 * U4Q, the signed code q otherwise; zero beyond K. */
static inline void gemm_row_codes(const qk_qmat *w, size_t n, size_t k0, size_t cnt, int8_t *out) {
    const uint8_t *row = w->codes + n * w->row_bytes;
    size_t i = 0;
    switch (w->format) {
    case QK_W4S:
    case QK_W4A:
        if (k0 % 2 == 0)
            for (; i + 32 <= cnt; i += 32) /* element 2j low nibble, 2j+1 high */
                _mm256_storeu_si256((__m256i *)(out + i), qk_avx2_unpack_nibbles(_mm_loadu_si128((const __m128i *)(row + (k0 + i) / 2))));
        for (; i < cnt; i++) out[i] = (int8_t)qk_row_stored(row, QK_W4S, k0 + i);
        break;
    case QK_W8S: memcpy(out, row + k0, cnt); break;
    case QK_Q4_0:
        if (k0 % 32 == 0)
            for (; i + 32 <= cnt; i += 32) { /* elements 0..15 low nibbles, 16..31 high */
                const __m128i v = _mm_loadu_si128((const __m128i *)(row + (k0 + i) / 32 * QK_Q4_0_BYTES + 2)), m4 = _mm_set1_epi8(15);
                _mm_storeu_si128((__m128i *)(out + i), _mm_and_si128(v, m4));
                _mm_storeu_si128((__m128i *)(out + i + 16), _mm_and_si128(_mm_srli_epi16(v, 4), m4));
            }
        for (; i < cnt; i++) out[i] = (int8_t)qk_row_stored(row, QK_Q4_0, k0 + i);
        break;
    default:
        if (k0 % 32 == 0)
            for (; i + 32 <= cnt; i += 32) memcpy(out + i, row + (k0 + i) / 32 * QK_Q8_0_BYTES + 2, 32);
        for (; i < cnt; i++) out[i] = (int8_t)qk_row_stored(row, QK_Q8_0, k0 + i);
        break;
    }
}

/* The n transposed quads of r (rows 8h..8h+7 of a 16-row half) at dst, qb
 * bytes apart; GL_S8T first orders each quad's bytes as (k, k+2) pairs of
 * rows 0-7, then (k+1, k+3) pairs. */
static inline void gemm_store_quads(gemm_layout L, const __m256i r[8], size_t n, uint8_t *dst, size_t qb) {
    const __m256i s8t = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15, 0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11,
                                         13, 15);
    for (size_t d = 0; d < n; d++) {
        __m256i v = r[d];
        if (L == GL_S8T) v = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(v, s8t), 0xD8);
        _mm256_storeu_si256((__m256i *)(dst + d * qb), v);
    }
}

/* Tile t's f32 scales (and w4a's mins after them) at sc: rows of W from t·NR. */
static inline void gemm_pack_scales(const qk_qmat *w, size_t t, size_t rows, uint8_t *sc, size_t ng) {
    float *s = (float *)sc;
    qk_pk_tile_scales(w, t * QK_GEMM_NR, rows, QK_GEMM_NR, s, w->format == QK_W4A ? s + ng * QK_GEMM_NR : NULL, QK_GEMM_NR);
}

/* K % 32 == 0: 32 k of the 16 rows straight from the plain layout per step
 * (4-bit rows i and i+8 merged nibble-wise into the U4Q bytes), eight quads
 * per 8x8 dword transpose of 8 rows. */
static inline void gemm_pack_k32(const qk_qmat *w, void *packed, gemm_layout L) {
    const size_t N = w->rows, K = w->cols, ng = K / w->group, rb = w->row_bytes;
    const size_t tb = gemm_tile_bytes(w, L), cb = gemm_code_bytes(L, K), qb = L == GL_U4Q ? 32 : 64;
    const qk_format f = w->format;
    const __m256i x80 = _mm256_set1_epi8((char)0x80);
    const __m128i m4 = _mm_set1_epi8(15), mh = _mm_set1_epi8((char)0xF0);
    for (size_t t = 0; t * QK_GEMM_NR < N; t++) {
        uint8_t *tile = (uint8_t *)packed + t * tb;
        const size_t rows = N - t * QK_GEMM_NR < QK_GEMM_NR ? N - t * QK_GEMM_NR : QK_GEMM_NR;
        const uint8_t *base = w->codes + t * QK_GEMM_NR * rb;
        for (size_t kb = 0; kb < K; kb += 32) {
            uint8_t *dst = tile + kb / 4 * qb;
            if (L == GL_U4Q) {
                __m128i p[QK_GEMM_NR]; /* the 32 codes of each row in the plain nibble order */
                for (size_t i = 0; i < QK_GEMM_NR; i++) {
                    const uint8_t *row = base + i * rb;
                    if (i >= rows) p[i] = _mm_setzero_si128();
                    else if (f == QK_Q4_0) p[i] = qk_pk_q4_0_plain(row + kb / 32 * QK_Q4_0_BYTES + 2);
                    else p[i] = _mm_loadu_si128((const __m128i *)(row + kb / 2));
                }
                __m256i r[8];
                for (size_t i = 0; i < 8; i++) { /* byte k: code k of row i | code k of row i+8 << 4 */
                    const __m128i ev = _mm_or_si128(_mm_and_si128(p[i], m4), _mm_slli_epi16(_mm_and_si128(p[i + 8], m4), 4));
                    const __m128i od = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(p[i], 4), m4), _mm_and_si128(p[i + 8], mh));
                    r[i] = _mm256_set_m128i(_mm_unpackhi_epi8(ev, od), _mm_unpacklo_epi8(ev, od));
                }
                qk_pk_tr8x8_epi32(r);
                for (size_t d = 0; d < 8; d++) _mm256_storeu_si256((__m256i *)(dst + d * qb), r[d]);
            } else {
                for (size_t h = 0; h < 2; h++) {
                    __m256i r[8];
                    for (size_t i = 0; i < 8; i++) {
                        const uint8_t *row = base + (8 * h + i) * rb;
                        const uint8_t *src = f == QK_Q8_0 ? row + kb / 32 * QK_Q8_0_BYTES + 2 : row + kb;
                        r[i] = 8 * h + i < rows ? _mm256_loadu_si256((const __m256i *)src) : _mm256_setzero_si256();
                        if (L == GL_S8Q) r[i] = _mm256_xor_si256(r[i], x80);
                    }
                    qk_pk_tr8x8_epi32(r); /* r[d]: quad kb/4+d, dword i = row 8h+i */
                    gemm_store_quads(L, r, 8, dst + 32 * h, qb);
                }
            }
        }
        gemm_pack_scales(w, t, rows, tile + cb, ng);
    }
}

/* Any K: decodes 16 rows × 256 k into bytes (zero past K and past the last row),
 * then turns them into quads eight at a time with one 8x8 dword transpose
 * per 8 rows. */
static inline void gemm_pack(const qk_qmat *w, void *packed, gemm_layout L) {
    const size_t N = w->rows, K = w->cols, ng = K / w->group, nq = gemm_quads(K);
    const size_t tb = gemm_tile_bytes(w, L), cb = gemm_code_bytes(L, K), qb = L == GL_U4Q ? 32 : 64;
    if (K % 32 == 0) {
        gemm_pack_k32(w, packed, L);
        return;
    }
    enum { KC = 256 };
    _Alignas(32) int8_t c[QK_GEMM_NR][KC];
    const __m256i x80 = _mm256_set1_epi8((char)0x80);
    for (size_t t = 0; t * QK_GEMM_NR < N; t++) {
        uint8_t *tile = (uint8_t *)packed + t * tb;
        const size_t rows = N - t * QK_GEMM_NR < QK_GEMM_NR ? N - t * QK_GEMM_NR : QK_GEMM_NR;
        for (size_t k0 = 0; k0 < nq * 4; k0 += KC) {
            const size_t cnt = nq * 4 - k0 < KC ? nq * 4 - k0 : KC, real = K > k0 ? (K - k0 < cnt ? K - k0 : cnt) : 0;
            const size_t pad = (cnt + 31) & ~(size_t)31;
            for (size_t i = 0; i < QK_GEMM_NR; i++) {
                const size_t have = i < rows ? real : 0;
                if (have) gemm_row_codes(w, t * QK_GEMM_NR + i, k0, have, c[i]);
                if (have < pad) memset(c[i] + have, 0, pad - have);
            }
            for (size_t q0 = 0; q0 < cnt / 4; q0 += 8) {
                const size_t nst = cnt / 4 - q0 < 8 ? cnt / 4 - q0 : 8;
                uint8_t *dst = tile + (k0 / 4 + q0) * qb;
                for (size_t h = 0; h < (L == GL_U4Q ? 1u : 2u); h++) {
                    __m256i r[8];
                    for (size_t i = 0; i < 8; i++) {
                        const __m256i lo = _mm256_load_si256((const __m256i *)(c[8 * h + i] + 4 * q0));
                        if (L == GL_U4Q) /* codes <= 15: the 16-bit shift keeps each byte in place */
                            r[i] = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_load_si256((const __m256i *)(c[i + 8] + 4 * q0)), 4));
                        else if (L == GL_S8Q) r[i] = _mm256_xor_si256(lo, x80);
                        else r[i] = lo;
                    }
                    qk_pk_tr8x8_epi32(r); /* r[d]: quad q0+d, dword i = row 8h+i */
                    gemm_store_quads(L, r, nst, dst + 32 * h, qb);
                }
            }
        }
        gemm_pack_scales(w, t, rows, tile + cb, ng);
    }
}

/* ---- microkernels ---- */

/* Activation codes k..k+3 of one row as a broadcast dword. */
QK_GINLINE __m256i bcast4(const int8_t *p) { return _mm256_broadcastd_epi32(_mm_loadu_si32(p)); }

/* The same for the last quad of a row, zeros beyond K. */
QK_GINLINE __m256i bcast_tail(const int8_t *a, size_t k, size_t K) {
    int32_t v = 0;
    memcpy(&v, a + k, K - k < 4 ? K - k : 4);
    return _mm256_set1_epi32(v);
}

/* Σ of n int8 codes. */
QK_GINLINE int32_t sum_codes(const int8_t *a, size_t n) {
    __m256i s = _mm256_setzero_si256();
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        s = _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), _mm256_loadu_si256((const __m256i *)(a + i))),
                                                  _mm256_set1_epi16(1)));
    int32_t r = qk_avx2_hsum_epi32(s);
    for (; i < n; i++) r += a[i];
    return r;
}

/* One quad (k..k+3) of one tile against the broadcast activations bq[m]:
 * adds into acc (int32) or, for U4Q on avx2, into the int16 sums p. */
QK_GINLINE void quad_step(gemm_layout L, const uint8_t *codes, size_t k, const int R, const __m256i bq[QK_GEMM_MR],
                          __m256i acc[QK_GEMM_MR][2], __m256i p[QK_GEMM_MR][2]) {
    (void)p;
    if (L == GL_U4Q) {
        const __m256i m4 = _mm256_set1_epi8(15);
        const __m256i v = _mm256_loadu_si256((const __m256i *)(codes + k * 8));
        const __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
        for (int m = 0; m < R; m++) {
#ifdef QK_GEMM_VNNI
            acc[m][0] = _mm256_dpbusd_avx_epi32(acc[m][0], lo, bq[m]);
            acc[m][1] = _mm256_dpbusd_avx_epi32(acc[m][1], hi, bq[m]);
#else
            p[m][0] = _mm256_add_epi16(p[m][0], _mm256_maddubs_epi16(lo, bq[m]));
            p[m][1] = _mm256_add_epi16(p[m][1], _mm256_maddubs_epi16(hi, bq[m]));
#endif
        }
    } else if (L == GL_S8Q) {
#ifdef QK_GEMM_VNNI
        const __m256i w0 = _mm256_loadu_si256((const __m256i *)(codes + k * 16));
        const __m256i w1 = _mm256_loadu_si256((const __m256i *)(codes + k * 16 + 32));
        for (int m = 0; m < R; m++) {
            acc[m][0] = _mm256_dpbusd_avx_epi32(acc[m][0], w0, bq[m]);
            acc[m][1] = _mm256_dpbusd_avx_epi32(acc[m][1], w1, bq[m]);
        }
#endif
    } else { /* GL_S8T */
        const uint8_t *c = codes + k * 16;
        const __m256i wa0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)c));
        const __m256i wb0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(c + 16)));
        const __m256i wa1 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(c + 32)));
        const __m256i wb1 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(c + 48)));
        for (int m = 0; m < R; m++) {
            const __m256i pa = _mm256_srai_epi16(_mm256_slli_epi16(bq[m], 8), 8); /* (a_k, a_k+2) */
            const __m256i pb = _mm256_srai_epi16(bq[m], 8);                       /* (a_k+1, a_k+3) */
            acc[m][0] = _mm256_add_epi32(acc[m][0], _mm256_add_epi32(_mm256_madd_epi16(wa0, pa), _mm256_madd_epi16(wb0, pb)));
            acc[m][1] = _mm256_add_epi32(acc[m][1], _mm256_add_epi32(_mm256_madd_epi16(wa1, pa), _mm256_madd_epi16(wb1, pb)));
        }
    }
}

/* Quads of [k, k1): the full ones, then a last partial one (only at K). */
QK_GINLINE void quads(gemm_layout L, const uint8_t *codes, const int8_t *const a[QK_GEMM_MR], size_t K, const int R, size_t k, size_t k1,
                      __m256i acc[QK_GEMM_MR][2], __m256i p[QK_GEMM_MR][2]) {
    __m256i bq[QK_GEMM_MR];
    for (; k + 4 <= k1; k += 4) {
        for (int m = 0; m < R; m++) bq[m] = bcast4(a[m] + k);
        quad_step(L, codes, k, R, bq, acc, p);
    }
    if (k < k1) {
        for (int m = 0; m < R; m++) bq[m] = bcast_tail(a[m], k, K);
        quad_step(L, codes, k, R, bq, acc, p);
    }
}

/* One row of the 4x16 tile after a group: yt += dot·(s·sa), then for w4a
 * yt += m·(sa·Σa), two roundings in the order of micro_tile's general path. */
#define QK_TILE4_ROW(m, lo, hi)                                                                                                     \
    do {                                                                                                                           \
        const float sam = sa[(m) * ng + j];                                                                                       \
        const __m256 vsa = _mm256_set1_ps(sam);                                                                                    \
        __m256 y0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(lo), _mm256_mul_ps(s0, vsa), _mm256_loadu_ps(yt[m]));                       \
        __m256 y1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(hi), _mm256_mul_ps(s1, vsa), _mm256_loadu_ps(yt[m] + 8));                   \
        if (w4a) {                                                                                                                 \
            const __m256 t = _mm256_set1_ps(sam * (float)sums[(m) * ng + j]);                                                     \
            y0 = _mm256_fmadd_ps(mn0, t, y0);                                                                                      \
            y1 = _mm256_fmadd_ps(mn1, t, y1);                                                                                      \
        }                                                                                                                          \
        _mm256_storeu_ps(yt[m], y0);                                                                                               \
        _mm256_storeu_ps(yt[m] + 8, y1);                                                                                           \
    } while (0)

/* The end of group j in a 4x16 tile body: its scales (and w4a mins), then
 * the four rows' sums c00..c31 into yt. */
#define QK_TILE4_GROUP_END()                                                                                                        \
    do {                                                                                                                           \
        const __m256 s0 = _mm256_loadu_ps(sc + j * QK_GEMM_NR), s1 = _mm256_loadu_ps(sc + j * QK_GEMM_NR + 8);                    \
        const __m256 mn0 = w4a ? _mm256_loadu_ps(mn + j * QK_GEMM_NR) : s0;                                                        \
        const __m256 mn1 = w4a ? _mm256_loadu_ps(mn + j * QK_GEMM_NR + 8) : s1;                                                    \
        QK_TILE4_ROW(0, c00, c01);                                                                                                 \
        QK_TILE4_ROW(1, c10, c11);                                                                                                 \
        QK_TILE4_ROW(2, c20, c21);                                                                                                 \
        QK_TILE4_ROW(3, c30, c31);                                                                                                 \
    } while (0)

/* The low and high nibbles of a U4Q quad's 32 bytes at p (m4: 0x0f in every
 * byte), in asm for the tiles whose quads are in asm (vnni_tile6_body,
 * avx2_tile4_body): from intrinsics GCC gave them registers that the asm's
 * sums then needed. */
QK_GINLINE void u4q_nibbles(const uint8_t *p, const __m256i *m4, __m256i *w0, __m256i *w1) {
    __asm__("vmovdqu (%[cp]), %[w1]\n\t"
            "vpand %[m4], %[w1], %[w0]\n\t"
            "vpsrlw $4, %[w1], %[w1]\n\t"
            "vpand %[m4], %[w1], %[w1]\n\t"
            : [w0] "=&x"(*w0), [w1] "=&x"(*w1)
            : [cp] "r"(p), [m4] "m"(*m4)
            : "memory");
}

/* A tile body (vnni_tile4_body, avx2_tile4_body) as a function of its own,
 * U4 a constant: the 4-bit or the 8-bit form. */
#define QK_TILE4_FN(name, body, U4)                                                                                                 \
    static __attribute__((noinline)) void name(const uint8_t *codes, const float *sc, const float *mn, const int8_t *a0, size_t K, \
                                               const float *sa, const int32_t *sums, size_t ng, size_t g, int off, int w4a,        \
                                               float yt[QK_GEMM_MR][QK_GEMM_NR]) {                                                 \
        body(U4, codes, sc, mn, a0, K, sa, sums, ng, g, off, w4a, yt);                                                             \
    }

#ifdef QK_GEMM_VNNI
/* The whole 4x16 tile over every group when g % 4 == 0 and g <= QK_GEMM_CHUNK
 * (every group one piece of full quads): per group the eight int32 dots in
 * registers, started at −off·Σa, then scaled into yt (4 rows × 16 f32) in the
 * order of micro_tile's general path, so both give the same bits. A function
 * of its own so GCC allocates its registers apart from the general path. */
QK_GINLINE void vnni_tile4_body(const int u4, const uint8_t *codes, const float *sc, const float *mn, const int8_t *a0, size_t K,
                                const float *sa, const int32_t *sums, size_t ng, size_t g, int off, int w4a, float yt[QK_GEMM_MR][QK_GEMM_NR]) {
    const int8_t *a1 = a0 + K, *a2 = a1 + K, *a3 = a2 + K;
    const __m256i m4 = _mm256_set1_epi8(15);
    for (size_t j = 0; j < ng; j++) {
        __m256i c00 = _mm256_set1_epi32(-off * sums[j]), c10 = _mm256_set1_epi32(-off * sums[ng + j]);
        __m256i c20 = _mm256_set1_epi32(-off * sums[2 * ng + j]), c30 = _mm256_set1_epi32(-off * sums[3 * ng + j]);
        __m256i c01 = c00, c11 = c10, c21 = c20, c31 = c30;
        for (size_t k = j * g, ke = k + g; k < ke; k += 4) {
            __m256i w0, w1;
            if (u4) {
                const __m256i v = _mm256_loadu_si256((const __m256i *)(codes + k * 8));
                w0 = _mm256_and_si256(v, m4);
                w1 = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
            } else {
                w0 = _mm256_loadu_si256((const __m256i *)(codes + k * 16));
                w1 = _mm256_loadu_si256((const __m256i *)(codes + k * 16 + 32));
            }
            __m256i b = bcast4(a0 + k);
            c00 = _mm256_dpbusd_avx_epi32(c00, w0, b);
            c01 = _mm256_dpbusd_avx_epi32(c01, w1, b);
            b = bcast4(a1 + k);
            c10 = _mm256_dpbusd_avx_epi32(c10, w0, b);
            c11 = _mm256_dpbusd_avx_epi32(c11, w1, b);
            b = bcast4(a2 + k);
            c20 = _mm256_dpbusd_avx_epi32(c20, w0, b);
            c21 = _mm256_dpbusd_avx_epi32(c21, w1, b);
            b = bcast4(a3 + k);
            c30 = _mm256_dpbusd_avx_epi32(c30, w0, b);
            c31 = _mm256_dpbusd_avx_epi32(c31, w1, b);
            /* pins the accumulators to registers: without it GCC copies them around and spills two per quad */
            __asm__("" : "+x"(c00), "+x"(c01), "+x"(c10), "+x"(c11), "+x"(c20), "+x"(c21), "+x"(c30), "+x"(c31));
        }
        QK_TILE4_GROUP_END();
    }
}
QK_TILE4_FN(vnni_tile4_u4, vnni_tile4_body, 1)
QK_TILE4_FN(vnni_tile4_s8, vnni_tile4_body, 0)

/* vnni_tile4's tile with 6 rows: 12 int32 accumulators, so that each one
 * takes a vpdpbusd every 6 cycles at two a cycle instead of every 4 (a chain
 * of dots on one accumulator waits on the dot before it), and two weight
 * loads serve 12 dots instead of 8. The 12 accumulators, two weight vectors
 * and a broadcast take 15 of the 16 ymm registers; from intrinsics GCC kept
 * some of them on the stack in the inner loop (4-bit weights, whose nibble
 * split needs a register more, took 1.04-1.34x the time of the 4x16 tile), so
 * the inner loop is written in asm. A/B against the 4x16 tile (tools/ab.py
 * --rounds 3 --pin 0 --rename _4x16__=_6x16__, -- --isa avxvnni --shape
 * 64x14336x4096 --shape 512x4096x14336 --group 32,128 --threads 1 --cache
 * warm, every integer gemm, 2026-12-07): g = 128 0.87-0.95 of the time; g =
 * 32 4-bit weights 0.92-0.99, 8-bit 0.94-1.02 (at g = 32 the per-group
 * rescale bounds the tile: 79% of the plain dot in the probe's i8g32 loop).
 * Rows left after the 6-row tiles take vnni_tile4 (4) or micro_tile's
 * general loop. */
QK_GINLINE void vnni_tile6_body(const int u4, const uint8_t *codes, const float *sc, const float *mn, const int8_t *a0, size_t K,
                                const float *sa, const int32_t *sums, size_t ng, size_t g, int off, int w4a, float yt[QK_GEMM_MR][QK_GEMM_NR]) {
    const int8_t *a3 = a0 + 3 * K;
    const __m256i m4 = _mm256_set1_epi8(15);
    for (size_t j = 0; j < ng; j++) {
        __m256i c00 = _mm256_set1_epi32(-off * sums[j]), c10 = _mm256_set1_epi32(-off * sums[ng + j]);
        __m256i c20 = _mm256_set1_epi32(-off * sums[2 * ng + j]), c30 = _mm256_set1_epi32(-off * sums[3 * ng + j]);
        __m256i c40 = _mm256_set1_epi32(-off * sums[4 * ng + j]), c50 = _mm256_set1_epi32(-off * sums[5 * ng + j]);
        __m256i c01 = c00, c11 = c10, c21 = c20, c31 = c30, c41 = c40, c51 = c50;
        for (size_t k = j * g, ke = k + g; k < ke; k += 4) {
            __m256i w0, w1, b;
            const int8_t *x0 = a0 + k, *x3 = a3 + k;
            /* rows 0..5 at x0, x0 + K, x0 + 2K, x3, x3 + K, x3 + 2K */
#define QK_T6_DOT(addr, r)                                                                                                   \
    "vpbroadcastd " addr ", %[b]\n\t%{vex%} vpdpbusd %[b], %[w0], %[c" #r "0]\n\t"                                            \
    "%{vex%} vpdpbusd %[b], %[w1], %[c" #r "1]\n\t"
            if (u4) u4q_nibbles(codes + k * 8, &m4, &w0, &w1);
            else
                __asm__("vmovdqu (%[cp]), %[w0]\n\tvmovdqu 32(%[cp]), %[w1]\n\t"
                        : [w0] "=x"(w0), [w1] "=x"(w1)
                        : [cp] "r"(codes + k * 16)
                        : "memory");
            __asm__(QK_T6_DOT("(%[x])", 0) QK_T6_DOT("(%[x],%[s],1)", 1) QK_T6_DOT("(%[x],%[s],2)", 2)
                    : [c00] "+x"(c00), [c01] "+x"(c01), [c10] "+x"(c10), [c11] "+x"(c11), [c20] "+x"(c20), [c21] "+x"(c21), [b] "=&x"(b)
                    : [w0] "x"(w0), [w1] "x"(w1), [x] "r"(x0), [s] "r"(K)
                    : "memory");
            __asm__(QK_T6_DOT("(%[x])", 3) QK_T6_DOT("(%[x],%[s],1)", 4) QK_T6_DOT("(%[x],%[s],2)", 5)
                    : [c30] "+x"(c30), [c31] "+x"(c31), [c40] "+x"(c40), [c41] "+x"(c41), [c50] "+x"(c50), [c51] "+x"(c51), [b] "=&x"(b)
                    : [w0] "x"(w0), [w1] "x"(w1), [x] "r"(x3), [s] "r"(K)
                    : "memory");
#undef QK_T6_DOT
        }
        const __m256 s0 = _mm256_loadu_ps(sc + j * QK_GEMM_NR), s1 = _mm256_loadu_ps(sc + j * QK_GEMM_NR + 8);
        const __m256 mn0 = w4a ? _mm256_loadu_ps(mn + j * QK_GEMM_NR) : s0;
        const __m256 mn1 = w4a ? _mm256_loadu_ps(mn + j * QK_GEMM_NR + 8) : s1;
        QK_TILE4_ROW(0, c00, c01);
        QK_TILE4_ROW(1, c10, c11);
        QK_TILE4_ROW(2, c20, c21);
        QK_TILE4_ROW(3, c30, c31);
        QK_TILE4_ROW(4, c40, c41);
        QK_TILE4_ROW(5, c50, c51);
    }
}
QK_TILE4_FN(vnni_tile6_u4, vnni_tile6_body, 1)
QK_TILE4_FN(vnni_tile6_s8, vnni_tile6_body, 0)
#endif

#ifndef QK_GEMM_VNNI
/* The avx2 counterpart of vnni_tile4 (same conditions, same f32 order): U4Q
 * sums up to eight quads of vpmaddubsw in int16 registers per block, widened
 * into int32 sums kept on the stack; S8T accumulates vpmaddwd in int32
 * registers, pinned like vnni_tile4's. U4Q's quad is written in asm: from
 * intrinsics GCC kept one of the eight int16 sums on the stack in the loop
 * (a load, add and store each quad, a chain through memory) and copied the
 * others between registers; in asm the sums, the two weight vectors, the
 * broadcast and one product take 12 registers. A/B against the intrinsics
 * (tools/ab.py --rounds 5 --pin 1, -- --isa avx2 --shape 64x14336x4096
 * --shape 64x4096x14336 --group 32,128 --threads 1 --cache warm, W4A8 w4s
 * and w4a, 2026-12-07): 0.86-0.94 of the time. */
QK_GINLINE void avx2_tile4_body(const int u4, const uint8_t *codes, const float *sc, const float *mn, const int8_t *a0, size_t K,
                                const float *sa, const int32_t *sums, size_t ng, size_t g, int off, int w4a, float yt[QK_GEMM_MR][QK_GEMM_NR]) {
    const size_t rs = u4 ? K : 2 * K; /* S8T reads the int16 pairs of s8t_pairs, 2K bytes a row */
    const int8_t *a1 = a0 + rs, *a2 = a1 + rs, *a3 = a2 + rs;
    const __m256i m4 = _mm256_set1_epi8(15), ones = _mm256_set1_epi16(1);
    for (size_t j = 0; j < ng; j++) {
        __m256i c00 = _mm256_set1_epi32(-off * sums[j]), c10 = _mm256_set1_epi32(-off * sums[ng + j]);
        __m256i c20 = _mm256_set1_epi32(-off * sums[2 * ng + j]), c30 = _mm256_set1_epi32(-off * sums[3 * ng + j]);
        __m256i c01 = c00, c11 = c10, c21 = c20, c31 = c30;
        if (u4) {
            for (size_t kb = j * g, ke = kb + g; kb < ke; kb += 32) { /* eight quads: 8·2·15·127 < 32768 */
                __m256i p00 = _mm256_setzero_si256(), p01 = p00, p10 = p00, p11 = p00, p20 = p00, p21 = p00, p30 = p00, p31 = p00;
                for (size_t k = kb, kq = ke - kb > 32 ? kb + 32 : ke; k < kq; k += 4) {
                    __m256i w0, w1, b, t;
                    u4q_nibbles(codes + k * 8, &m4, &w0, &w1);
#define QK_A2_DOT(addr, r)                                                                                                   \
    "vpbroadcastd " addr ", %[b]\n\tvpmaddubsw %[b], %[w0], %[t]\n\tvpaddw %[t], %[p" #r "0], %[p" #r "0]\n\t"            \
    "vpmaddubsw %[b], %[w1], %[t]\n\tvpaddw %[t], %[p" #r "1], %[p" #r "1]\n\t"
                    __asm__(QK_A2_DOT("(%[x])", 0) QK_A2_DOT("(%[x],%[s],1)", 1) QK_A2_DOT("(%[x],%[s],2)", 2) QK_A2_DOT("(%[y])", 3)
                            : [p00] "+x"(p00), [p01] "+x"(p01), [p10] "+x"(p10), [p11] "+x"(p11), [p20] "+x"(p20), [p21] "+x"(p21),
                              [p30] "+x"(p30), [p31] "+x"(p31), [b] "=&x"(b), [t] "=&x"(t)
                            : [w0] "x"(w0), [w1] "x"(w1), [x] "r"(a0 + k), [y] "r"(a3 + k), [s] "r"(K)
                            : "memory");
#undef QK_A2_DOT
                }
                c00 = _mm256_add_epi32(c00, _mm256_madd_epi16(p00, ones));
                c01 = _mm256_add_epi32(c01, _mm256_madd_epi16(p01, ones));
                c10 = _mm256_add_epi32(c10, _mm256_madd_epi16(p10, ones));
                c11 = _mm256_add_epi32(c11, _mm256_madd_epi16(p11, ones));
                c20 = _mm256_add_epi32(c20, _mm256_madd_epi16(p20, ones));
                c21 = _mm256_add_epi32(c21, _mm256_madd_epi16(p21, ones));
                c30 = _mm256_add_epi32(c30, _mm256_madd_epi16(p30, ones));
                c31 = _mm256_add_epi32(c31, _mm256_madd_epi16(p31, ones));
            }
        } else {
            for (size_t k = j * g, ke = k + g; k < ke; k += 4) {
                const uint8_t *c = codes + k * 16;
                const __m256i wa0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)c));
                const __m256i wb0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(c + 16)));
                const __m256i wa1 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(c + 32)));
                const __m256i wb1 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(c + 48)));
#define QK_S8T_ROW(ar, lo, hi)                                                                                                      \
    do {                                                                                                                            \
        const __m256i pa = bcast4((ar) + 2 * k), pb = bcast4((ar) + 2 * k + 4);                                                     \
        lo = _mm256_add_epi32(lo, _mm256_add_epi32(_mm256_madd_epi16(wa0, pa), _mm256_madd_epi16(wb0, pb)));                       \
        hi = _mm256_add_epi32(hi, _mm256_add_epi32(_mm256_madd_epi16(wa1, pa), _mm256_madd_epi16(wb1, pb)));                       \
    } while (0)
                QK_S8T_ROW(a0, c00, c01);
                QK_S8T_ROW(a1, c10, c11);
                QK_S8T_ROW(a2, c20, c21);
                QK_S8T_ROW(a3, c30, c31);
#undef QK_S8T_ROW
                __asm__("" : "+x"(c00), "+x"(c01), "+x"(c10), "+x"(c11), "+x"(c20), "+x"(c21), "+x"(c30), "+x"(c31));
            }
        }
        QK_TILE4_GROUP_END();
    }
}
QK_TILE4_FN(avx2_tile4_u4, avx2_tile4_body, 1)
QK_TILE4_FN(avx2_tile4_s8, avx2_tile4_body, 0)
#endif

/* One piece [k0, k1) of group j for rows m0..m0+R-1 and one tile: int32 sums
 * per row and 8-column half, added into acc (which the caller initialized). */
QK_GINLINE void micro_piece(gemm_layout L, const uint8_t *codes, const qk_qact *xq, size_t m0, const int R, size_t k0, size_t k1,
                            __m256i acc[QK_GEMM_MR][2]) {
    const size_t K = xq->cols;
    const int8_t *a[QK_GEMM_MR];
    for (int m = 0; m < R; m++) a[m] = xq->codes + (m0 + m) * K;
#ifndef QK_GEMM_VNNI
    if (L == GL_U4Q) { /* up to eight quads in int16 (8·2·15·127 < 32768) */
        const __m256i ones = _mm256_set1_epi16(1);
        for (size_t k = k0; k < k1; k += 32) {
            __m256i p[QK_GEMM_MR][2];
            for (int m = 0; m < R; m++) p[m][0] = p[m][1] = _mm256_setzero_si256();
            quads(L, codes, a, K, R, k, k1 - k > 32 ? k + 32 : k1, acc, p);
            for (int m = 0; m < R; m++) {
                acc[m][0] = _mm256_add_epi32(acc[m][0], _mm256_madd_epi16(p[m][0], ones));
                acc[m][1] = _mm256_add_epi32(acc[m][1], _mm256_madd_epi16(p[m][1], ones));
            }
        }
        return;
    }
#endif
#ifdef QK_GEMM_VNNI
    if (R == 4) { /* the full tile with named accumulators (GCC keeps them in registers) */
        __m256i c00 = acc[0][0], c01 = acc[0][1], c10 = acc[1][0], c11 = acc[1][1];
        __m256i c20 = acc[2][0], c21 = acc[2][1], c30 = acc[3][0], c31 = acc[3][1];
        const __m256i m4 = _mm256_set1_epi8(15);
        const size_t kf = k1 < (K & ~(size_t)3) ? k1 : (K & ~(size_t)3);
        size_t k = k0;
        for (; k < kf; k += 4) {
            __m256i w0, w1;
            if (L == GL_U4Q) {
                const __m256i v = _mm256_loadu_si256((const __m256i *)(codes + k * 8));
                w0 = _mm256_and_si256(v, m4);
                w1 = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
            } else {
                w0 = _mm256_loadu_si256((const __m256i *)(codes + k * 16));
                w1 = _mm256_loadu_si256((const __m256i *)(codes + k * 16 + 32));
            }
            __m256i b = bcast4(a[0] + k);
            c00 = _mm256_dpbusd_avx_epi32(c00, w0, b);
            c01 = _mm256_dpbusd_avx_epi32(c01, w1, b);
            b = bcast4(a[1] + k);
            c10 = _mm256_dpbusd_avx_epi32(c10, w0, b);
            c11 = _mm256_dpbusd_avx_epi32(c11, w1, b);
            b = bcast4(a[2] + k);
            c20 = _mm256_dpbusd_avx_epi32(c20, w0, b);
            c21 = _mm256_dpbusd_avx_epi32(c21, w1, b);
            b = bcast4(a[3] + k);
            c30 = _mm256_dpbusd_avx_epi32(c30, w0, b);
            c31 = _mm256_dpbusd_avx_epi32(c31, w1, b);
        }
        acc[0][0] = c00, acc[0][1] = c01, acc[1][0] = c10, acc[1][1] = c11;
        acc[2][0] = c20, acc[2][1] = c21, acc[3][0] = c30, acc[3][1] = c31;
        if (k < k1) quads(L, codes, a, K, R, k, k1, acc, NULL);
        return;
    }
#endif
    quads(L, codes, a, K, R, k0, k1, acc, NULL);
}

/* Rows m0..m0+R-1 of Y for one tile (ncols <= 16 valid columns). `off` is the
 * offset the unsigned weight operand carries (8 for w4s/q4_0, 128 for S8Q, 0). */
QK_GINLINE void micro_tile(gemm_layout L, const qk_matmul_args *a, const uint8_t *tile, size_t tile_n0, size_t ncols, size_t m0,
                           const int R, const int off, const int w4a, const int16_t *xe) {
    const qk_qact *xq = a->xq;
    const size_t K = a->K, g = a->group, ng = K / g;
    const float *sc = (const float *)(tile + gemm_code_bytes(L, K)), *mn = sc + ng * QK_GEMM_NR;
    /* f32 sums live in memory: the registers hold the int32 sums and operands */
    float yt[QK_GEMM_MR][QK_GEMM_NR];
    memset(yt, 0, sizeof yt);
    if ((R == QK_GEMM_MR || (QK_GEMM_MR == 6 && R == 4)) && g % 4 == 0 && g <= QK_GEMM_CHUNK && (L != GL_S8T || xe)) {
        const int8_t *a0 = L == GL_S8T ? (const int8_t *)(xe + m0 * K) : xq->codes + m0 * K;
        const float *sa = xq->scales + m0 * ng;
        const int32_t *sums = xq->sums + m0 * ng;
#ifdef QK_GEMM_VNNI
        if (R == 4) {
            if (L == GL_U4Q) vnni_tile4_u4(tile, sc, mn, a0, K, sa, sums, ng, g, off, w4a, yt);
            else vnni_tile4_s8(tile, sc, mn, a0, K, sa, sums, ng, g, off, w4a, yt);
        } else if (L == GL_U4Q) vnni_tile6_u4(tile, sc, mn, a0, K, sa, sums, ng, g, off, w4a, yt);
        else vnni_tile6_s8(tile, sc, mn, a0, K, sa, sums, ng, g, off, w4a, yt);
#else
        if (L == GL_U4Q) avx2_tile4_u4(tile, sc, mn, a0, K, sa, sums, ng, g, off, w4a, yt);
        else avx2_tile4_s8(tile, sc, mn, a0, K, sa, sums, ng, g, off, w4a, yt);
#endif
        for (int m = 0; m < R; m++) memcpy(a->y + (m0 + m) * a->ldy + tile_n0, yt[m], ncols * sizeof(float));
        return;
    }
    for (size_t j = 0; j < ng; j++) {
        const __m256 s0 = _mm256_loadu_ps(sc + j * QK_GEMM_NR), s1 = _mm256_loadu_ps(sc + j * QK_GEMM_NR + 8);
        for (size_t p0 = j * g, end = p0 + g; p0 < end;) {
            const size_t p1 = end - p0 > QK_GEMM_CHUNK ? p0 + QK_GEMM_CHUNK : end;
            __m256i acc[QK_GEMM_MR][2];
            for (int m = 0; m < R; m++) {
                int32_t sa_sum = 0;
                if (off) sa_sum = p1 - p0 == g ? xq->sums[(m0 + m) * ng + j] : sum_codes(xq->codes + (m0 + m) * K + p0, p1 - p0);
                acc[m][0] = acc[m][1] = _mm256_set1_epi32(-off * sa_sum);
            }
            micro_piece(L, tile, xq, m0, R, p0, p1, acc);
            for (int m = 0; m < R; m++) {
                const __m256 vsa = _mm256_set1_ps(xq->scales[(m0 + m) * ng + j]);
                _mm256_storeu_ps(yt[m], _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[m][0]), _mm256_mul_ps(s0, vsa), _mm256_loadu_ps(yt[m])));
                _mm256_storeu_ps(yt[m] + 8, _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[m][1]), _mm256_mul_ps(s1, vsa), _mm256_loadu_ps(yt[m] + 8)));
            }
            p0 = p1;
        }
        if (w4a)
            for (int m = 0; m < R; m++) {
                const __m256 t = _mm256_set1_ps(xq->scales[(m0 + m) * ng + j] * (float)xq->sums[(m0 + m) * ng + j]);
                _mm256_storeu_ps(yt[m], _mm256_fmadd_ps(_mm256_loadu_ps(mn + j * QK_GEMM_NR), t, _mm256_loadu_ps(yt[m])));
                _mm256_storeu_ps(yt[m] + 8, _mm256_fmadd_ps(_mm256_loadu_ps(mn + j * QK_GEMM_NR + 8), t, _mm256_loadu_ps(yt[m] + 8)));
            }
    }
    for (int m = 0; m < R; m++) memcpy(a->y + (m0 + m) * a->ldy + tile_n0, yt[m], ncols * sizeof(float));
}

/* S8T's activations as the int16 pairs its vpmaddwd takes: quad k..k+3 of
 * row m as the words a_k, a_k+2, a_k+1, a_k+3 at xe[m·K + k], made once per
 * call, so that a tile broadcasts each pair from memory (K a multiple of 4).
 * The tile made them from one broadcast dword with three shifts per row and
 * quad: 12 of the quad's ALU ops beside its 16 vpmaddwd, on the pipes the
 * adds and widenings also need. A/B against those shifts (tools/ab.py
 * --rounds 5 --pin 1, -- --isa avx2 --shape 64x14336x4096 --shape
 * 64x4096x14336 --group 32,128 --threads 1 --cache warm, W8A8 and
 * q8_0·q8_0, 2026-12-07): 0.84-0.90 of the time; 512x14336x4096 0.90 and
 * 512x4096x14336 0.98 (3 rounds, g = 32), whose activations every column
 * tile reads from L3, as int16 pairs twice the bytes (14 MiB). NULL when
 * out of memory (the tiles then take micro_tile's general path). */
static int16_t *s8t_pairs(const qk_qact *xq, size_t M, size_t K) {
    int16_t *xe = aligned_alloc(32, (M * K * sizeof(int16_t) + 31) / 32 * 32);
    if (!xe) return NULL;
    const __m128i order = _mm_setr_epi8(0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15); /* each quad a_k, a_k+2, a_k+1, a_k+3 */
    for (size_t m = 0; m < M; m++) {
        const int8_t *x = xq->codes + m * K;
        int16_t *o = xe + m * K;
        size_t k = 0;
        for (; k + 16 <= K; k += 16) {
            const __m128i v = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(x + k)), order);
            _mm256_storeu_si256((__m256i *)(o + k), _mm256_cvtepi8_epi16(v));
        }
        for (; k < K; k += 4) o[k] = x[k], o[k + 1] = x[k + 2], o[k + 2] = x[k + 1], o[k + 3] = x[k + 3];
    }
    return xe;
}

QK_GINLINE void gemm_int_run(gemm_layout L, const qk_matmul_args *a, const int off, const int w4a) {
    const size_t tb = gemm_tile_bytes(a->w, L);
    int16_t *xe = L == GL_S8T && a->M >= QK_GEMM_MR && a->K % 4 == 0 ? s8t_pairs(a->xq, a->M, a->K) : NULL;
    for (size_t n0 = 0; n0 < a->N; n0 += QK_GEMM_NR) {
        const uint8_t *tile = (const uint8_t *)a->wp + n0 / QK_GEMM_NR * tb;
        const size_t ncols = a->N - n0 < QK_GEMM_NR ? a->N - n0 : QK_GEMM_NR;
        size_t m0 = 0;
        for (; m0 + QK_GEMM_MR <= a->M; m0 += QK_GEMM_MR) micro_tile(L, a, tile, n0, ncols, m0, QK_GEMM_MR, off, w4a, xe);
        switch (a->M - m0) {
#if QK_GEMM_MR > 4
        case 5: micro_tile(L, a, tile, n0, ncols, m0, 5, off, w4a, xe); break;
        case 4: micro_tile(L, a, tile, n0, ncols, m0, 4, off, w4a, xe); break;
#endif
        case 3: micro_tile(L, a, tile, n0, ncols, m0, 3, off, w4a, xe); break;
        case 2: micro_tile(L, a, tile, n0, ncols, m0, 2, off, w4a, xe); break;
        case 1: micro_tile(L, a, tile, n0, ncols, m0, 1, off, w4a, xe); break;
        default: break;
        }
    }
    free(xe);
}

/* Defines the four functions of one packed gemm variant. */
#define QK_GEMM_INT_VARIANT(stem, L, off, w4a)                                                                     \
    size_t stem##_pack_size(const qk_qmat *w) { return gemm_pack_size(w, L); }                                    \
    void stem##_pack(const qk_qmat *w, void *packed) { gemm_pack(w, packed, L); }                                 \
    size_t stem##_packed_offset(const qk_qmat *w, size_t n0) { return gemm_packed_offset(w, L, n0); }             \
    void stem(const qk_matmul_args *a) { gemm_int_run(L, a, off, w4a); }

#endif
