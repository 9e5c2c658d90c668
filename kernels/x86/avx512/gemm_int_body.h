/* Body of the integer-mode gemm kernels on zmm with packed weights, shared
 * by the avx512vnni tier (vpdpbusd) and the avx512 tier (vpmaddubsw +
 * vpmaddwd). The including file defines
 *   GM_DOT(acc, w_u8, a_s8)   acc + Σ4 w·a per dword (w unsigned <= 15, a signed)
 *   GM_DOT8(acc, w_u8, a_s8)  the same for any unsigned w (0..255); defaults to GM_DOT
 *   GM_DOT16(p, w_u8, a_s8), GM_WIDEN(acc, p)
 *                             optional (GM_I16 1): p + the int16 pair sums of w·a (w <= 15,
 *                             |a| <= 127), and acc + p widened to Σ4 per dword. 4-bit steps
 *                             then sum 4 steps (8 products of at most 2·15·127 per int16
 *                             lane: 30480) before one widening, instead of widening each
 *   GM_W8_OFF                 what GM_DOT8 leaves to the lane start: 128 (the default) when
 *                             it dots the stored u8 = int8 + 128, 0 when it dots the int8
 *                             code itself (w_u8 ^ 0x80)
 *   GM_PF_L1                  1: the next slice's weights are prefetched into L1
 *                             (gm_pf_group_l1), 0 (the default): into L2 (gm_pf_group)
 *   GM_TILEG                  1 (the default): every g that fits a slice (32, 64, 128, 256)
 *                             takes the unrolled loop of gm_tileg (g a constant); 0: every g
 *                             takes gm_tile's loop, for a dot that needs more registers
 *                             (see GM_WHOLE_G)
 *
 * Register tile: GM_MR rows of X × GM_NR = 16·GM_NB columns of W. Lanes are
 * output columns; each vpdpbusd adds 4 consecutive k of one row of X
 * (broadcast) times 4 k of 16 columns (one zmm of packed weights).
 *
 * Packed layout (gm_pack), tile t = columns t·GM_NR .. t·GM_NR+GM_NR-1
 * (zero codes and scales past N), group after group:
 *   codes, ns steps × GM_NB zmm:
 *     8-bit: step s covers k = 4s..4s+3 of the group; byte 4c+i of zmm b is
 *            the code of column 16b+c at k = 4s+i, as u8 (int8 code + 128);
 *     4-bit: step s covers k = 8s..8s+7: the low nibble of byte 4c+i is the
 *            code (0..15) at k = 8s+i, the high nibble the code at 8s+4+i;
 *     k past the end of the group (g = K, not a multiple of 4 or 8) is 0;
 *   then GM_NR f32 scales (q4_0/q8_0: the fp16 d, widened), then, for w4a,
 *   GM_NR f32 offsets.
 * The weights are the unsigned side of vpdpbusd, activations stay signed:
 * every int32 lane of a group starts at -off·Σa (off = 128 for int8 codes,
 * 8 for w4s/q4_0 codes q+8, 0 for w4a), so it ends at the exact Σ q·a of its
 * (row, column, group); then y += sw·sa·dot in f32 (and, for w4a,
 * y += m·sa·Σa). A group longer than a K slice (gm_slice) is cut into pieces,
 * each corrected by its own Σa (so no int32 sum can overflow either). */
#ifndef QK_GEMM_INT_BODY_H
#define QK_GEMM_INT_BODY_H

#include <stdlib.h>

#include "x86/avx2/gemm_pack_impl.h"
#include "x86/avx512/avx512_common.h"

#define QK_INLINE static inline __attribute__((always_inline))
#ifndef GM_DOT8
#define GM_DOT8 GM_DOT
#endif
#ifndef GM_W8_OFF
#define GM_W8_OFF 128
#endif
#ifndef GM_I16
#define GM_I16 0
#define GM_DOT16 GM_DOT /* never taken: gm_step's i16 is 0 without GM_I16 */
#endif
#ifndef GM_PF_L1
#define GM_PF_L1 0
#endif
#ifndef GM_TILEG
#define GM_TILEG 1
#endif
#define GM_UNROLL _Pragma("GCC unroll 16")

enum { GM_MR = 4, GM_NB = 3, GM_NR = 16 * GM_NB };

typedef enum { GM_W4S, GM_W4A, GM_W8S, GM_Q4_0, GM_Q8_0 } gm_fmt;

QK_INLINE int gm_bits(gm_fmt f) { return f == GM_W8S || f == GM_Q8_0 ? 8 : 4; }
QK_INLINE int gm_off(gm_fmt f) { return gm_bits(f) == 8 ? GM_W8_OFF : f == GM_W4A ? 0 : 8; }
/* Values of K per slice: the tile's weights for one slice (32 KiB) stay in L1. */
QK_INLINE size_t gm_slice(gm_fmt f) { return gm_bits(f) == 8 ? 512 : 1024; }

/* Values per step and steps per group (g rounded up). */
QK_INLINE size_t gm_kstep(gm_fmt f) { return gm_bits(f) == 8 ? 4 : 8; }
static size_t gm_steps(gm_fmt f, size_t g) { return (g + gm_kstep(f) - 1) / gm_kstep(f); }
static size_t gm_group_bytes(gm_fmt f, size_t g) {
    return gm_steps(f, g) * GM_NB * 64 + GM_NR * sizeof(float) * (f == GM_W4A ? 2u : 1u);
}
static size_t gm_tile_bytes(gm_fmt f, const qk_qmat *w) { return (w->cols / w->group) * gm_group_bytes(f, w->group); }

static size_t gm_pack_size(gm_fmt f, const qk_qmat *w) { return (w->rows + GM_NR - 1) / GM_NR * gm_tile_bytes(f, w); }
static size_t gm_packed_offset(gm_fmt f, const qk_qmat *w, size_t n0) { return n0 / GM_NR * gm_tile_bytes(f, w); }

/* Unsigned code of element k of row n, as the kernel multiplies it. */
static inline unsigned gm_code(gm_fmt f, const qk_qmat *w, size_t n, size_t k) {
    unsigned c = qk_row_stored(w->codes + n * w->row_bytes, w->format, k);
    return gm_bits(f) == 8 ? c ^ 0x80u : c;
}

/* Bytes k..k+3 of a plain 4-bit row, spread to the packed nibble order: byte
 * i = code k+i (low nibble) | code k+4+i (high nibble). */
static inline uint32_t gm_spread4(uint32_t p) {
    uint32_t lo = p & 0xffffu, hi = p >> 16;
    lo = (lo | lo << 8) & 0x00ff00ffu;
    lo = (lo | lo << 4) & 0x0f0f0f0fu;
    hi = (hi | hi << 8) & 0x00ff00ffu;
    hi = (hi | hi << 4) & 0x0f0f0f0fu;
    return lo | hi << 4;
}

/* The 4 bytes of step s (k = kg + s·ks, all inside the row's group [kg, ke))
 * of row n, in the packed form. */
static inline uint32_t gm_step_bytes(gm_fmt f, const qk_qmat *w, size_t n, size_t k, size_t ke) {
    const uint8_t *row = w->codes + n * w->row_bytes;
    uint32_t v = 0;
    size_t ks = gm_kstep(f);
    if (k + ks <= ke) {
        switch (f) {
        case GM_W8S: memcpy(&v, row + k, 4); return v ^ 0x80808080u;
        case GM_Q8_0: memcpy(&v, row + (k / 32) * QK_Q8_0_BYTES + 2 + k % 32, 4); return v ^ 0x80808080u;
        case GM_W4S:
        case GM_W4A: memcpy(&v, row + k / 2, 4); return gm_spread4(v);
        default: break;
        }
    }
    for (size_t i = 0; i < 4; i++) {
        if (ks == 4) {
            if (k + i < ke) v |= gm_code(f, w, n, k + i) << (8 * i);
        } else {
            unsigned lo = k + i < ke ? gm_code(f, w, n, k + i) : 0, hi = k + 4 + i < ke ? gm_code(f, w, n, k + 4 + i) : 0;
            v |= (lo | hi << 4) << (8 * i);
        }
    }
    return v;
}

/* gm_spread4 on 16 dwords. */
static inline __m512i gm_spread4_v(__m512i p) {
    const __m512i m8 = _mm512_set1_epi32(0x00ff00ff), m4 = _mm512_set1_epi32(0x0f0f0f0f);
    __m512i lo = _mm512_and_si512(p, _mm512_set1_epi32(0xffff)), hi = _mm512_srli_epi32(p, 16);
    lo = _mm512_and_si512(_mm512_or_si512(lo, _mm512_slli_epi32(lo, 8)), m8);
    lo = _mm512_and_si512(_mm512_or_si512(lo, _mm512_slli_epi32(lo, 4)), m4);
    hi = _mm512_and_si512(_mm512_or_si512(hi, _mm512_slli_epi32(hi, 8)), m8);
    hi = _mm512_and_si512(_mm512_or_si512(hi, _mm512_slli_epi32(hi, 4)), m4);
    return _mm512_or_si512(lo, _mm512_slli_epi32(hi, 4));
}

/* Steps 4u..4u+3 of group j for the 16 rows n..n+15 (all < N, every step of
 * the group whole), in the packed form of gm_step_bytes. */
static inline void gm_pack_steps4(gm_fmt f, const qk_qmat *w, size_t n, size_t j, size_t u, __m512i o[4]) {
    const uint8_t *base = w->codes + n * w->row_bytes;
    size_t rb = w->row_bytes, g = w->group, k = j * g + 4 * u * gm_kstep(f);
    const __m512i m4 = _mm512_set1_epi8(0x0f), x80 = _mm512_set1_epi8((char)0x80);
    __m512i t[4];
    switch (f) {
    case GM_W8S:
    case GM_Q8_0:
        qk512_load_t4(base, rb, f == GM_W8S ? k : (k / 32) * QK_Q8_0_BYTES + 2 + k % 32, 16, 0, t);
        for (size_t q = 0; q < 4; q++) o[q] = _mm512_xor_si512(t[q], x80);
        return;
    case GM_W4S:
    case GM_W4A:
        qk512_load_t4(base, rb, k / 2, 16, 0, t);
        for (size_t q = 0; q < 4; q++) o[q] = gm_spread4_v(t[q]);
        return;
    default: /* q4_0 (u = 0): qs[0..15]; step s: low (s < 2) or high nibbles of qs[8(s&1) .. +7] */
        qk512_load_t4(base, rb, j * QK_Q4_0_BYTES + 2, 16, 0, t);
        o[0] = _mm512_or_si512(_mm512_and_si512(t[0], m4), _mm512_slli_epi32(_mm512_and_si512(t[1], m4), 4));
        o[1] = _mm512_or_si512(_mm512_and_si512(t[2], m4), _mm512_slli_epi32(_mm512_and_si512(t[3], m4), 4));
        o[2] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(t[0], 4), m4), _mm512_andnot_si512(m4, t[1]));
        o[3] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(t[2], 4), m4), _mm512_andnot_si512(m4, t[3]));
        return;
    }
}

/* Whole 16-row blocks of whole steps (a multiple of 4 per group) go through
 * gm_pack_steps4; the rest (rows past N, other groups) byte by byte. One
 * block of 16 rows at a time over all groups: the rows are often a multiple
 * of 4 KiB apart, and 48 of them in flight at once (group by group over the
 * tile) fell into the same two L1 sets, so that each 16-byte load missed
 * (4096x4096 g = 32: the pack took 1.1-1.5x the time). Each block's scales
 * follow its codes (qk_pk_tile_scales: 8 columns × 8 groups per register
 * transpose), while its rows are still in L2: q4_0 and q8_0 keep their d at
 * the head of each block, and the tile's scales made after all three blocks
 * (48 rows, 731 KiB of q8_0 at K = 14336) read the rows again from memory
 * (4096x14336: 0.78-0.82 of the time with the scales block by block, the
 * other formats 0.9-1.07). Packed weights of at least QK_STREAM_MIN_BYTES go
 * out with non-temporal stores (whole aligned lines, not read for
 * ownership, as the quantizers' codes; 1024x4096, under that size, took
 * 0.78-1.23 of the time with them). Both against the pack before them
 * (tools/ab.py --rounds 5 or 7 --pin 0, warm, avx512vnni, 2026-12-07):
 * 4096x14336 q8_0 0.68, q4_0 0.89, w8s 0.77-0.82, w4s 0.92-1.01 (g = 32
 * and 128); 2048x4096 (8.7 MiB packed) w8s 0.69, q4_0 0.79, q8_0 0.71;
 * 1024x4096 0.85-1.0, q8_0 1.05-1.09. */
QK_INLINE void gm_pack_nt(gm_fmt f, const qk_qmat *w, void *packed, const int nt) {
    size_t N = w->rows, K = w->cols, g = w->group, ng = K / g, ns = gm_steps(f, g), ks = gm_kstep(f);
    size_t gb = gm_group_bytes(f, g), scoff = ns * GM_NB * 64;
    int fast = g % ks == 0 && ns % 4 == 0;
    uint8_t *out = (uint8_t *)packed;
    for (size_t n0 = 0; n0 < N; n0 += GM_NR) {
        for (size_t b = 0; b < GM_NB; b++) {
            for (size_t j = 0; j < ng; j++) {
                uint8_t *codes = out + j * gb;
                if (fast && n0 + 16 * b + 16 <= N) {
                    for (size_t u = 0; u < ns / 4; u++) {
                        __m512i o[4];
                        gm_pack_steps4(f, w, n0 + 16 * b, j, u, o);
                        for (size_t q = 0; q < 4; q++) qk512_store_line(codes + ((4 * u + q) * GM_NB + b) * 64, o[q], nt);
                    }
                    continue;
                }
                for (size_t s = 0; s < ns; s++) memset(codes + (s * GM_NB + b) * 64, 0, 64);
                for (size_t l = 0; l < 16 && n0 + 16 * b + l < N; l++)
                    for (size_t s = 0; s < ns; s++) {
                        uint32_t v = gm_step_bytes(f, w, n0 + 16 * b + l, j * g + s * ks, (j + 1) * g);
                        memcpy(codes + (s * GM_NB + b) * 64 + 4 * l, &v, 4);
                    }
            }
            float *sc = (float *)(out + scoff) + 16 * b; /* gb and scoff are multiples of 64 plus floats */
            qk_pk_tile_scales(w, n0 + 16 * b, qk_pk_live(N, n0 + 16 * b, 16), 16, sc, f == GM_W4A ? sc + GM_NR : NULL, gb / sizeof(float));
        }
        out += ng * gb;
    }
    if (nt) _mm_sfence(); /* the streamed lines are visible before the packed weights are used */
}

/* nt a constant in each: with it a variable, the stores' test cost the pack
 * of 1024x4096 (under the size) a tenth more time. Inlined into each listed
 * kernel's pack, so that f is a constant there too (as a static function the
 * compiler cloned it for two formats and left the others a general copy,
 * 1.1x the time). gb is a multiple of 64. */
QK_INLINE void gm_pack(gm_fmt f, const qk_qmat *w, void *packed) {
    if (qk_pack_streams(gm_pack_size(f, w), packed)) gm_pack_nt(f, w, packed, 1);
    else gm_pack_nt(f, w, packed, 0);
}

/* Broadcast the 4 activation codes at k. */
QK_INLINE __m512i gm_act4(const int8_t *p) { return _mm512_broadcastd_epi32(_mm_loadu_si32(p)); }

/* The same near the end of a row: only the codes before K, zeros after. */
QK_INLINE __m512i gm_act4_tail(const int8_t *row, size_t k, size_t K) {
    return _mm512_broadcastd_epi32(_mm_maskz_loadu_epi8(k < K ? qk512_mask16(K - k) : 0, row + (k < K ? k : 0)));
}

static int32_t gm_act_sum(const int8_t *row, size_t k0, size_t k1) {
    __m512i s = _mm512_setzero_si512();
    for (size_t k = k0; k < k1; k += 64) {
        __m512i a = _mm512_maskz_loadu_epi8(qk512_mask64(k1 - k), row + k);
        s = GM_DOT(s, _mm512_set1_epi8(1), a);
    }
    return _mm512_reduce_add_epi32(s);
}

/* acc[m][b] += the dot of one step (4 or 8 values from column k), codes at cp. */
/* i16 (4-bit codes, GM_I16 only): acc holds int16 pair sums, added by GM_DOT16. */
QK_INLINE void gm_step(gm_fmt f, size_t mr, __m512i acc[GM_MR][GM_NB], const uint8_t *cp, const int8_t *const *xr, size_t k, int i16) {
    if (gm_bits(f) == 8) {
        __m512i wv[GM_NB];
        GM_UNROLL for (size_t b = 0; b < GM_NB; b++) wv[b] = _mm512_loadu_si512(cp + 64 * b);
        GM_UNROLL for (size_t m = 0; m < mr; m++) {
            __m512i av = gm_act4(xr[m] + k);
            GM_UNROLL for (size_t b = 0; b < GM_NB; b++) acc[m][b] = GM_DOT8(acc[m][b], wv[b], av);
        }
    } else {
        __m512i lo[GM_NB], hi[GM_NB];
        const __m512i m4 = _mm512_set1_epi8(0x0f);
        GM_UNROLL for (size_t b = 0; b < GM_NB; b++) {
            __m512i v = _mm512_loadu_si512(cp + 64 * b);
            lo[b] = _mm512_and_si512(v, m4);
            hi[b] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
        }
        GM_UNROLL for (size_t m = 0; m < mr; m++) {
            __m512i a0 = gm_act4(xr[m] + k), a1 = gm_act4(xr[m] + k + 4);
            GM_UNROLL for (size_t b = 0; b < GM_NB; b++) acc[m][b] = i16 ? GM_DOT16(acc[m][b], lo[b], a0) : GM_DOT(acc[m][b], lo[b], a0);
            GM_UNROLL for (size_t b = 0; b < GM_NB; b++) acc[m][b] = i16 ? GM_DOT16(acc[m][b], hi[b], a1) : GM_DOT(acc[m][b], hi[b], a1);
        }
    }
}

#if GM_I16
/* 4-bit codes, ns <= 4 steps from column k summed in int16 (GM_DOT16), then
 * widened into acc. */
QK_INLINE void gm_steps16(gm_fmt f, size_t mr, __m512i acc[GM_MR][GM_NB], const uint8_t *cp, const int8_t *const *xr, size_t k, size_t ns) {
    __m512i p[GM_MR][GM_NB];
    GM_UNROLL for (size_t m = 0; m < mr; m++) GM_UNROLL for (size_t b = 0; b < GM_NB; b++) p[m][b] = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (size_t s = 0; s < ns; s++) gm_step(f, mr, p, cp + s * GM_NB * 64, xr, k + 8 * s, 1);
    GM_UNROLL for (size_t m = 0; m < mr; m++) GM_UNROLL for (size_t b = 0; b < GM_NB; b++) acc[m][b] = GM_WIDEN(acc[m][b], p[m][b]);
}
#endif

/* nsteps whole steps from column k, codes at cp. */
QK_INLINE void gm_steps_full(gm_fmt f, size_t mr, __m512i acc[GM_MR][GM_NB], const uint8_t *cp, const int8_t *const *xr, size_t k, size_t nsteps) {
    const size_t ks = gm_kstep(f);
#if GM_I16
    if (gm_bits(f) == 4) {
        for (size_t s = 0; s < nsteps; s += 4)
            gm_steps16(f, mr, acc, cp + s * GM_NB * 64, xr, k + s * ks, nsteps - s < 4 ? nsteps - s : 4);
        return;
    }
#endif
#pragma GCC unroll 8
    for (size_t s = 0; s < nsteps; s++) gm_step(f, mr, acc, cp + s * GM_NB * 64, xr, k + s * ks, 0);
}

/* The last step of a row whose K is not a multiple of the step. */
QK_INLINE void gm_step_tail(gm_fmt f, size_t mr, __m512i acc[GM_MR][GM_NB], const uint8_t *cp, const int8_t *const *xr, size_t k, size_t K) {
    __m512i lo[GM_NB], hi[GM_NB];
    GM_UNROLL for (size_t b = 0; b < GM_NB; b++) {
        __m512i v = _mm512_loadu_si512(cp + 64 * b);
        lo[b] = gm_bits(f) == 8 ? v : _mm512_and_si512(v, _mm512_set1_epi8(0x0f));
        hi[b] = _mm512_and_si512(_mm512_srli_epi16(v, 4), _mm512_set1_epi8(0x0f));
    }
    GM_UNROLL for (size_t m = 0; m < mr; m++) {
        __m512i a0 = gm_act4_tail(xr[m], k, K);
        GM_UNROLL for (size_t b = 0; b < GM_NB; b++) acc[m][b] = gm_bits(f) == 8 ? GM_DOT8(acc[m][b], lo[b], a0) : GM_DOT(acc[m][b], lo[b], a0);
        if (gm_bits(f) == 4) {
            __m512i a1 = gm_act4_tail(xr[m], k + 4, K);
            GM_UNROLL for (size_t b = 0; b < GM_NB; b++) acc[m][b] = GM_DOT(acc[m][b], hi[b], a1);
        }
    }
}

/* Software prefetch of the next K slice's packed weights (into L2) while
 * the row tiles of this slice run from L1: n lines per group, from p up to e.
 * The packed weights are read in memory order (tile by tile, slice by
 * slice), so the next slice is the bytes right after this one. */
typedef struct {
    const uint8_t *p, *e;
    size_t n;
} gm_pf;

QK_INLINE void gm_pf_group(gm_pf *pf) {
    for (size_t i = 0; i < pf->n && pf->p < pf->e; i++, pf->p += 64) _mm_prefetch((const char *)pf->p, _MM_HINT_T1);
}

/* The same into L1: the next slice of the tile's weights (24-27 KiB) is
 * otherwise pulled from L2 by that slice's first row tile, which costs most
 * where few row tiles share a slice (M = 64: 16). A/B in one process, 1
 * thread, best of 9: W8A8 g128 M = 64 14336x4096 795 -> 864 GOP/s,
 * 4096x14336 +4..9% (median, three runs); W4A8 g128/g256/g = K and W8A8
 * g256/g = K within ±2%; M = 512 unchanged. At g = 32 it is as fast as the
 * L2 prefetch for 4-bit codes and as an L1 prefetch of the next row tile's
 * activations (tried for 8-bit codes, dropped: within ±5% over five A/B
 * runs of 64x4096x14336, 64x14336x4096 and 256x4096x4096 on the Oxide
 * host), so every path takes it. Also tried on W8A8 and W4A8 at g = 32
 * (in-process A/B of copies of this body, 2026-12-06; none kept): no
 * prefetch (slower by up to a tenth from DRAM), the slice after next into L1
 * or into L2, an extra L2 prefetch one slice further, non-temporal hints,
 * and slices of 256, 1024 or 2048 values for 8-bit codes; none was faster.
 * From cache the g = 32 tile runs about a tenth faster than on the prefill
 * shapes, whose weights come from DRAM; that gap is still open. Tried on it
 * (2026-12-07, tools/ab.py --rounds 3 --pin 0, warm, W8A8 w8s and W4A8,
 * g = 32 and 128, each on three to five of 64x4096x512, 64x512x4096,
 * 64x192x14336, 64x4096x4096, 64x4096x14336 and 512x14336x4096; none
 * kept): K blocks that keep 256 KiB of activations in L2 while every column
 * tile passes over them, 0.97-1.05 of the time (one case 0.87, from rounds of
 * 0.64-1.07); the activations copied slice by slice, so that a row tile's
 * values of a slice lie together whatever K, 1.00-1.07; the -off·Σa
 * correction added in f32 after the conversion instead of as the int32
 * lanes' start (no register copies at each group), 0.96-1.05 and once 1.22;
 * the weights, packed weights and quantized activations on transparent huge
 * pages, 0.97-1.04. Later that day, in a private loop that calls the
 * W8A8 g = 32 kernel alone (no activation quantization, best of 6 calls, a
 * vpdpbusd loop beside it on a quiet core): 64x48x4096 ran at 75% of that loop,
 * 64x48x14336 and 64x480x14336 at 71-72%, 64x4096x14336 at 67%; the K blocks,
 * the next slice prefetched only during the second half of the row tiles,
 * slices of 256 values and the packed weights on huge pages (madvise) each
 * left 64x4096x14336 within the spread of five runs (61-72%). Nor, on
 * 2026-12-07, a prefetch into L1 of the next row tile's activations and
 * per-group data (sa, -off·Σa, sa·Σa) for the slice, spread over the
 * tile's groups: 1.0-1.13x the time (W8A8 and W4A8, g = 32 and 128,
 * 64x4096x14336, 512x4096x14336 and 64x14336x4096; tools/ab.py --rounds 3
 * --pin 0, the two rounds of a quiet machine).
 * At g = 32 each accumulator and group also needs a multiply (sw·sa) and an
 * FMA on the two pipes that run vpdpbusd, so 8 dots in 10 is its bound (the
 * probe's i8g32 loop). Which ops share those pipes (2026-12-07, a loop of 12
 * independent vpdpbusd zmm and 3 other ops on registers of their own, in
 * assembly): with vmulps, vfmadd231ps, vpermps, vpshufb, vpmulld, vpmaddwd,
 * vpmuludq, vpmadd52luq, vdpbf16ps or vgf2p8mulb the dots ran at 0.80-0.81
 * of their rate alone; with vaddps, vcvtdq2ps, vpaddd, vpandd, vpsrlw,
 * vpsllvd, vscalefps, register copies, broadcasts or loads at 0.99-1.01.
 * The rescale multiplies three values that all vary per group (the dot, sw
 * by column, sa by row), two products of the first kind in any order. A
 * copy of this tile's group loop over 16 groups in L1 ran at 71-74% of the
 * plain dot (5x64, 6x64 and 8x48 tiles, their f32 sums spilled to memory,
 * at 0.90-0.99 of the 4x48), and with 85 column tiles' weights streaming
 * from memory under the same prefetch as here (64x4080x14336) at 64-70%,
 * where this kernel ran 59-64%. */
QK_INLINE void gm_pf_group_l1(gm_pf *pf) {
    for (size_t i = 0; i < pf->n && pf->p < pf->e; i++, pf->p += 64) _mm_prefetch((const char *)pf->p, _MM_HINT_T0);
}

/* Where a tile's f32 sums are kept from one K slice to the next: in Y, or,
 * when the run has one, in a scratch block of the row block's rows × GM_NR
 * floats (scr, row r at (r - r0)·GM_NR), which only the last slice leaves
 * for Y. Y's rows are N floats apart, often a multiple of 4 KiB, so a tile's
 * 12 lines of Y share a few L1 sets with each other and with the weights;
 * the scratch rows are contiguous. The int8 kernels fell off with K at the
 * same N (W8A8 g = 128 64x480xK, qkbench: K = 512 80%, 2048 75%, 14336 70%
 * of the probe) while keeping weights and activations in L1 changed nothing,
 * and Y written only at the end (wrong sums, timing only) took 64x480x14336
 * from 715 to 760 GOP/s. With the scratch, qk_matmul_run_cols alone (best of
 * 4, alternated): W8A8 64x4096x14336 g = 128 667 -> 698, g = 32 525 -> 588,
 * 512x4096x14336 g = 128 661 -> 708 GOP/s; W4A8 (slices twice as long) +1..4%;
 * qkbench A/B of the prefill shapes (3 rounds): W8A8 new/old time 0.94-0.99,
 * W4A8 0.96-1.03. */
typedef struct {
    int first, last; /* the slice starts at k = 0 / ends at k = K */
    float *scr;
    size_t r0;
    const float *ca;   /* w4a: sa·Σa of row r, group j at (r - r0)·ng + j (gm_act_aux), or NULL */
    const int32_t *cs; /* the others: -off·Σa, the same way, or NULL */
} gm_io;

/* A tile's f32 accumulators (mr rows from m0, nc <= GM_NR columns from n0),
 * zero when first; and back. */
QK_INLINE void gm_y_load(size_t mr, const qk_matmul_args *a, gm_io io, size_t m0, size_t n0, size_t nc, __m512 accf[GM_MR][GM_NB]) {
    const float *p = io.scr ? io.scr + (m0 - io.r0) * GM_NR : a->y + m0 * a->ldy + n0;
    size_t ld = io.scr ? GM_NR : a->ldy;
    GM_UNROLL for (size_t m = 0; m < mr; m++) GM_UNROLL for (size_t b = 0; b < GM_NB; b++) {
        size_t c = 16 * b;
        accf[m][b] = _mm512_setzero_ps();
        if (!io.first && c < nc) accf[m][b] = qk512_load16_ps(p + m * ld + c, nc - c);
    }
}
QK_INLINE void gm_y_store(size_t mr, const qk_matmul_args *a, gm_io io, size_t m0, size_t n0, size_t nc, __m512 accf[GM_MR][GM_NB]) {
    int y = io.last || !io.scr;
    float *p = y ? a->y + m0 * a->ldy + n0 : io.scr + (m0 - io.r0) * GM_NR;
    size_t ld = y ? a->ldy : GM_NR;
    GM_UNROLL for (size_t m = 0; m < mr; m++) GM_UNROLL for (size_t b = 0; b < GM_NB; b++) {
        size_t c = 16 * b;
        if (c < nc) qk512_store16_ps(p + m * ld + c, nc - c, accf[m][b]);
    }
}

/* One register tile over columns [k0, k1) of K: mr (<= GM_MR) rows of X
 * from m0, nc (<= GM_NR) columns of Y from n0, added to the sums of the
 * slices before (gm_io).
 * [k0, k1) is whole groups, or (g > gm_slice(f)) one piece of one group, whose
 * Σa per row is ps[m·pst] (gm_piece_sums) or, when ps is NULL, made here. The
 * f32 accumulators live in memory (updated once per group), so the int32
 * ones, the weights and the broadcast fit the 32 registers. */
QK_INLINE void gm_tile(gm_fmt f, size_t mr, const qk_matmul_args *a, const uint8_t *tp, size_t m0, size_t n0, size_t nc,
                       size_t k0, size_t k1, gm_io io, gm_pf *pf, const int32_t *ps, size_t pst) {
    const qk_qact *xq = a->xq;
    size_t K = a->K, g = a->group, ng = K / g, ns = gm_steps(f, g), ks = gm_kstep(f);
    size_t gb = gm_group_bytes(f, g);
    int off = gm_off(f);
    const int8_t *xr[GM_MR];
    __m512 accf[GM_MR][GM_NB];
    GM_UNROLL for (size_t m = 0; m < mr; m++) xr[m] = xq->codes + (m0 + m) * K;
    gm_y_load(mr, a, io, m0, n0, nc, accf);
    for (size_t kg = k0; kg < k1;) {
        size_t j = kg / g, ke = (j + 1) * g < k1 ? (j + 1) * g : k1; /* this group's part of the slice */
        const uint8_t *gp = tp + j * gb;
        const float *sw = (const float *)(gp + ns * GM_NB * 64);
        __m512i acc[GM_MR][GM_NB];
        GM_UNROLL for (size_t m = 0; m < mr; m++) {
            int32_t sum = 0;
            int whole = kg == j * g && ke == (j + 1) * g;
            if (off)
                sum = whole && io.cs ? io.cs[(m0 + m - io.r0) * ng + j]
                                     : -off * (whole ? xq->sums[(m0 + m) * ng + j] : ps ? ps[m * pst] : gm_act_sum(xr[m], kg, ke));
            __m512i c = _mm512_set1_epi32(sum);
            GM_UNROLL for (size_t b = 0; b < GM_NB; b++) acc[m][b] = c;
        }
        size_t s0 = (kg - j * g) / ks, nfull = (ke - kg) / ks;
        gm_steps_full(f, mr, acc, gp + s0 * GM_NB * 64, xr, kg, nfull);
        if (kg + nfull * ks < ke) gm_step_tail(f, mr, acc, gp + (s0 + nfull) * GM_NB * 64, xr, kg + nfull * ks, ke);
        GM_UNROLL for (size_t b = 0; b < GM_NB; b++) {
            __m512 s = _mm512_loadu_ps(sw + 16 * b);
            GM_UNROLL for (size_t m = 0; m < mr; m++) {
                __m512 sc = _mm512_mul_ps(s, _mm512_set1_ps(xq->scales[(m0 + m) * ng + j]));
                accf[m][b] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[m][b]), sc, accf[m][b]);
            }
        }
        if (f == GM_W4A && kg == j * g) {
            const float *mn = sw + GM_NR;
            GM_UNROLL for (size_t m = 0; m < mr; m++) {
                size_t i = (m0 + m) * ng + j;
                __m512 ca = _mm512_set1_ps(io.ca ? io.ca[i - io.r0 * ng] : xq->scales[i] * (float)xq->sums[i]);
                GM_UNROLL for (size_t b = 0; b < GM_NB; b++) accf[m][b] = _mm512_fmadd_ps(_mm512_loadu_ps(mn + 16 * b), ca, accf[m][b]);
            }
        }
        if (GM_PF_L1) gm_pf_group_l1(pf);
        else gm_pf_group(pf);
        kg = ke;
    }
    gm_y_store(mr, a, io, m0, n0, nc, accf);
}

/* Whole groups [j0, j0 + nj) of a g that fits a slice (32, 64, 128, 256, a
 * constant at each call): the common case, written with plain pointer walks
 * so the group loop stays small. */
QK_INLINE void gm_tileg(gm_fmt f, size_t mr, const size_t g, const qk_matmul_args *a, const uint8_t *tp, size_t m0, size_t n0,
                        size_t nc, size_t j0, size_t nj, gm_io io, gm_pf *pf) {
    const qk_qact *xq = a->xq;
    size_t K = a->K, ng = K / g;
    const size_t gb = gm_group_bytes(f, g), steps = g / gm_kstep(f);
    const int off = gm_off(f);
    const int8_t *xr[GM_MR];
    const int32_t *sr[GM_MR];
    const float *sar[GM_MR], *car[GM_MR];
    const int32_t *csr[GM_MR];
    __m512 accf[GM_MR][GM_NB];
    GM_UNROLL for (size_t m = 0; m < mr; m++) {
        xr[m] = xq->codes + (m0 + m) * K + j0 * g;
        sr[m] = xq->sums + (m0 + m) * ng + j0;
        sar[m] = xq->scales + (m0 + m) * ng + j0;
        car[m] = io.ca ? io.ca + (m0 + m - io.r0) * ng + j0 : NULL;
        csr[m] = io.cs ? io.cs + (m0 + m - io.r0) * ng + j0 : NULL;
    }
    gm_y_load(mr, a, io, m0, n0, nc, accf);
    const uint8_t *gp = tp + j0 * gb;
    for (size_t j = 0; j < nj; j++, gp += gb) {
        __m512i acc[GM_MR][GM_NB];
        GM_UNROLL for (size_t m = 0; m < mr; m++) {
            __m512i c = _mm512_set1_epi32(io.cs ? csr[m][j] : -off * sr[m][j]);
            GM_UNROLL for (size_t b = 0; b < GM_NB; b++) acc[m][b] = c;
        }
        const int8_t *xk[GM_MR];
        GM_UNROLL for (size_t m = 0; m < mr; m++) xk[m] = xr[m] + g * j;
        gm_steps_full(f, mr, acc, gp, xk, 0, steps);
        const float *sw = (const float *)(gp + steps * GM_NB * 64);
        GM_UNROLL for (size_t b = 0; b < GM_NB; b++) {
            __m512 s = _mm512_loadu_ps(sw + 16 * b);
            GM_UNROLL for (size_t m = 0; m < mr; m++)
                accf[m][b] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[m][b]), _mm512_mul_ps(s, _mm512_set1_ps(sar[m][j])), accf[m][b]);
        }
        if (f == GM_W4A) {
            const float *mn = sw + GM_NR;
            GM_UNROLL for (size_t m = 0; m < mr; m++) {
                __m512 ca = _mm512_set1_ps(io.ca ? car[m][j] : sar[m][j] * (float)sr[m][j]);
                GM_UNROLL for (size_t b = 0; b < GM_NB; b++) accf[m][b] = _mm512_fmadd_ps(_mm512_loadu_ps(mn + 16 * b), ca, accf[m][b]);
            }
        }
        if (GM_PF_L1) gm_pf_group_l1(pf);
        else gm_pf_group(pf);
    }
    gm_y_store(mr, a, io, m0, n0, nc, accf);
}

/* The group sizes that take gm_tileg (else gm_tile): with GM_TILEG, 32, 64,
 * 128 and 256. The avx512 tier sets it to 0: its dot needs more registers
 * (the int16 partial sums, or gm_dot8's magnitudes and signs), and with g a
 * constant and the group's steps unrolled, its tile ran slower than with
 * gm_tile's loop. g = 64..256: 4-bit weights 1.85-2.06x, 8-bit 1.02-1.09x
 * (W4A8 and W8A8, 512x14336x4096 and 64x4096x14336; qkbench A/B of the
 * builds before and after, 3 rounds). g = 32, which took gm_tileg on every
 * tier until 2026-12-06: with gm_tile's loop the avx512 tier's 4-bit gemms
 * (W4A8, W4A4, q4_0·q8_0) take 0.52-0.70 of the time and its 8-bit ones
 * (W8A8, q8_0·q8_0) 0.67-0.85 (medians of two runs of tools/ab.py --rounds
 * 3 --pin 0 OLD NEW -- --shape 64x4096x14336 --shape 512x14336x4096
 * --group 32 --threads 1 --cache warm). Written as it is (32 apart from
 * the other three), the test gives the same avx512vnni code as before
 * GM_TILEG; one flat chain of four compares compiled that tile differently
 * (objdump), so a rewrite of it wants that check, or an A/B. */
#define GM_WHOLE_G(g) (GM_TILEG && ((g) == 32 || ((g) == 64 || (g) == 128 || (g) == 256)))

/* gm_tileg with g as a constant: each of the four group sizes gets its own
 * loop, fully unrolled over the group's steps. The loop of gm_tile, with g
 * a variable, took 1.15x (g = 128) and 1.2x (g = 64) the time of these for
 * one 4x48 tile over a 512-value slice in L1, called over and over (W8A8
 * avx512vnni: 667 -> 762 and 585 -> 700 GOP/s). */
QK_INLINE void gm_tile_whole(gm_fmt f, size_t mr, size_t g, const qk_matmul_args *a, const uint8_t *tp, size_t m0, size_t n0,
                             size_t nc, size_t j0, size_t nj, gm_io io, gm_pf *pf) {
    switch (g) { /* one of GM_WHOLE_G's four */
    case 32: gm_tileg(f, mr, 32, a, tp, m0, n0, nc, j0, nj, io, pf); break;
    case 64: gm_tileg(f, mr, 64, a, tp, m0, n0, nc, j0, nj, io, pf); break;
    case 128: gm_tileg(f, mr, 128, a, tp, m0, n0, nc, j0, nj, io, pf); break;
    default: gm_tileg(f, mr, 256, a, tp, m0, n0, nc, j0, nj, io, pf); break;
    }
}

/* Byte offset of column k of K (a step boundary) in a packed tile. */
QK_INLINE size_t gm_koff(gm_fmt f, size_t g, size_t k) { return k / g * gm_group_bytes(f, g) + (k % g) / gm_kstep(f) * GM_NB * 64; }

/* End of the K slice that starts at k0: whole groups, about gm_slice(f)
 * values, or (g > gm_slice(f)) one piece of a group. */
QK_INLINE size_t gm_slice_end(gm_fmt f, size_t g, size_t K, size_t k0) {
    size_t e = k0 + (g <= gm_slice(f) ? gm_slice(f) / g * g : gm_slice(f)), ge = g <= gm_slice(f) ? K : (k0 / g + 1) * g;
    return e < ge ? e : ge;
}

/* Groups longer than a slice (g > gm_slice(f), e.g. per channel) are dotted
 * in pieces, each corrected by the Σa of its own values. Those sums, for
 * rows [r0, r1) and every piece p of K (row r at [(r - r0)·npc + p]), are made
 * once per block of rows rather than by every column tile's row tiles (which
 * made 8-bit W8A8 at g = K slower than at g = 256). NULL (and *npc 0) when
 * the codes need no correction (w4a) or g fits a slice; NULL too when out of
 * memory: gm_tile then makes each sum itself. */
static int32_t *gm_piece_sums(gm_fmt f, const qk_matmul_args *a, size_t r0, size_t r1, size_t *npc) {
    size_t K = a->K, g = a->group, n = 0;
    *npc = 0;
    if (g <= gm_slice(f) || !gm_off(f)) return NULL;
    for (size_t k0 = 0; k0 < K; k0 = gm_slice_end(f, g, K, k0)) n++;
    int32_t *ps = malloc((r1 - r0) * n * sizeof *ps);
    if (!ps) return NULL;
    for (size_t r = r0; r < r1; r++) {
        const int8_t *row = a->xq->codes + r * K;
        size_t p = 0;
        for (size_t k0 = 0, k1; k0 < K; k0 = k1, p++) {
            k1 = gm_slice_end(f, g, K, k0);
            ps[(r - r0) * n + p] = gm_act_sum(row, k0, k1);
        }
    }
    *npc = n;
    return ps;
}

/* Each group's correction for rows [r0, r1) (row r, group j at (r - r0)·ng
 * + j), made once per block of rows so that the tiles load and broadcast it:
 * for w4a the factor of its min term, sa·Σa (into *ca); for codes stored with
 * an offset, the value their int32 sums start at, -off·Σa (into *cs). Without them a
 * tile made these from the sums in a general register each group and moved
 * them to a vector (4 int-to-float conversions and multiplies for w4a; for
 * the others 4 broadcasts from a general register, which a tile of W8A8 at
 * g = 32 in L1 (a copy of the loop, best of 7) ran 8% slower with than with
 * broadcasts from memory). Both NULL when there is nothing to correct, or
 * out of memory (the tiles then make them themselves). */
static void gm_act_aux(gm_fmt f, const qk_matmul_args *a, size_t r0, size_t r1, float **ca, int32_t **cs) {
    size_t ng = a->K / a->group, n = (r1 - r0) * ng;
    const float *sa = a->xq->scales + r0 * ng;
    const int32_t *su = a->xq->sums + r0 * ng;
    *ca = NULL, *cs = NULL;
    if (f == GM_W4A && (*ca = malloc(n * sizeof **ca)))
        for (size_t i = 0; i < n; i++) (*ca)[i] = sa[i] * (float)su[i];
    if (gm_off(f) && (*cs = malloc(n * sizeof **cs)))
        for (size_t i = 0; i < n; i++) (*cs)[i] = -gm_off(f) * su[i];
}

/* Rows [r0, r1) of X: column tile by column tile; within one, K slices of
 * about gm_slice(f) values (the tile's weights for a slice stay in L1) and,
 * for each slice, every row tile of the rows, the row tiles together
 * prefetching the next slice. */
QK_INLINE void gm_run_rows(gm_fmt f, const qk_matmul_args *a, size_t r0, size_t r1) {
    const uint8_t *wp = (const uint8_t *)a->wp;
    size_t K = a->K, g = a->group, tb = gm_tile_bytes(f, a->w), ntiles = (a->N + GM_NR - 1) / GM_NR;
    size_t nmt = (r1 - r0 + GM_MR - 1) / GM_MR; /* row tiles per slice */
    const uint8_t *wend = wp + ntiles * tb;
    size_t npc;
    int32_t *ps = gm_piece_sums(f, a, r0, r1, &npc);
    /* NULL (the sums then stay in Y) when K is one slice, or out of memory */
    float *scr = gm_slice_end(f, g, K, 0) < K ? aligned_alloc(64, (r1 - r0) * GM_NR * sizeof(float)) : NULL;
    float *ca;
    int32_t *cs;
    gm_act_aux(f, a, r0, r1, &ca, &cs);
    for (size_t n0 = 0; n0 < a->N; n0 += GM_NR) {
        const uint8_t *tp = wp + n0 / GM_NR * tb;
        size_t nc = a->N - n0 < GM_NR ? a->N - n0 : GM_NR;
        for (size_t k0 = 0, k1, p = 0; k0 < K; k0 = k1, p++) {
            k1 = gm_slice_end(f, g, K, k0);
            gm_io io = {k0 == 0, k1 == K, scr, r0, ca, cs};
            /* the next slice: as many bytes as this one, right after it */
            size_t sb = (k1 == K ? tb : gm_koff(f, g, k1)) - gm_koff(f, g, k0), lines = (sb + 63) / 64;
            size_t ngr = g <= gm_slice(f) ? (k1 - k0) / g : 1, per = (lines + nmt * ngr - 1) / (nmt * ngr);
            const uint8_t *nx = k1 == K ? tp + tb : tp + gm_koff(f, g, k1);
            gm_pf pf = {nx, (size_t)(wend - nx) < sb ? wend : nx + sb, per};
            size_t m0 = r0;
            if (GM_WHOLE_G(g)) { /* whole groups, each within the slice */
                size_t j0 = k0 / g, nj = (k1 - k0) / g;
                for (; m0 + GM_MR <= r1; m0 += GM_MR) gm_tile_whole(f, GM_MR, g, a, tp, m0, n0, nc, j0, nj, io, &pf);
                switch (r1 - m0) {
                case 3: gm_tile_whole(f, 3, g, a, tp, m0, n0, nc, j0, nj, io, &pf); break;
                case 2: gm_tile_whole(f, 2, g, a, tp, m0, n0, nc, j0, nj, io, &pf); break;
                case 1: gm_tile_whole(f, 1, g, a, tp, m0, n0, nc, j0, nj, io, &pf); break;
                default: break;
                }
                continue;
            }
#define GM_PS(m0) (ps ? ps + ((m0) - r0) * npc + p : NULL), npc
            for (; m0 + GM_MR <= r1; m0 += GM_MR) gm_tile(f, GM_MR, a, tp, m0, n0, nc, k0, k1, io, &pf, GM_PS(m0));
            switch (r1 - m0) {
            case 3: gm_tile(f, 3, a, tp, m0, n0, nc, k0, k1, io, &pf, GM_PS(m0)); break;
            case 2: gm_tile(f, 2, a, tp, m0, n0, nc, k0, k1, io, &pf, GM_PS(m0)); break;
            case 1: gm_tile(f, 1, a, tp, m0, n0, nc, k0, k1, io, &pf, GM_PS(m0)); break;
            default: break;
            }
#undef GM_PS
        }
    }
    free(ps);
    free(scr);
    free(ca);
    free(cs);
}

/* X in blocks of rows of about GM_ROW_BLOCK_BYTES of int8 codes and at most
 * GM_ROW_BLOCK_ROWS rows, each block over all of W (read once per block).
 * 512x4096x14336 (X 7 MiB) ran 20-25% slower per operation than its first 64
 * or 128 rows alone (qkbench bench --shape {64,128,256,512}x4096x14336
 * --group 32 --cache warm, W4A8 and W8A8); in blocks of 128 rows it takes
 * 5-14% less time at g = 32 and the same at g = 128 (A/B in both orders).
 * Blocks of 128 rows on shorter rows too (in-process A/B on the Zen 5 host,
 * avx512vnni g = 32, the kernel on all rows in one call against calls on
 * blocks, 7 rounds, 2026-12-06): 512x14336x4096 (X 2 MiB, one block before)
 * W8A8 and W4A8 w4a 0.965 of the time, 512x4096x4096 0.961, 256x4096x4096
 * 0.979, 256x14336x4096 1.000; smaller blocks were slower (64 rows of
 * 512x4096x14336 1.02-1.05, 32 rows of 64x14336x4096 1.08). */
#define GM_ROW_BLOCK_BYTES ((size_t)2 << 20)
#define GM_ROW_BLOCK_ROWS 128
QK_INLINE void gm_run(gm_fmt f, const qk_matmul_args *a) {
    size_t rows = qk_row_block(a->M, a->K, GM_ROW_BLOCK_BYTES, GM_ROW_BLOCK_ROWS, GM_MR);
    for (size_t r0 = 0; r0 < a->M; r0 += rows) gm_run_rows(f, a, r0, r0 + rows < a->M ? r0 + rows : a->M);
}

/* The four functions of one listed kernel. */
#define GM_DEFINE(stem, fmt)                                                                                 \
    void stem(const qk_matmul_args *a) { gm_run(fmt, a); }                                                   \
    size_t stem##_pack_size(const qk_qmat *w) { return gm_pack_size(fmt, w); }                                \
    void stem##_pack(const qk_qmat *w, void *packed) { gm_pack(fmt, w, packed); }                             \
    size_t stem##_packed_offset(const qk_qmat *w, size_t n0) { return gm_packed_offset(fmt, w, n0); }

#endif
