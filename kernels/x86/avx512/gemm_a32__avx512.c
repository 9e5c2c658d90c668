/* gemm (any M) with f32 activations, AVX-512: W4A32 (w4s, w4a, q4_0) and
 * W8A32 (w8s, q8_0) over packed weights, f32 FMA on a 6×32 register tile.
 *
 * Lanes are output columns. 4-bit weights: one zmm of packed codes holds,
 * for 16 columns, 8 consecutive k as the 8 nibbles of each dword; the codes
 * of one k are `v >> 4i`, and vpermps (which reads only the low 4 bits of an
 * index) turns them into floats through a constant table (c - 8, or c for
 * w4a), so a weight costs a shift and a shuffle shared by the six rows.
 * 8-bit weights are widened and converted (vpmovsxbd, vcvtdq2ps). Each row
 * and group accumulates Σ q·x, then adds s·(that) (and, for w4a, m·Σx), so
 * y = Σ_groups s·Σ q·x + m·Σx: the reference's Σ (m + s·q)·x reassociated.
 *
 * Packed layout (ga_pack), tile t = columns t·GA_NR .. t·GA_NR+GA_NR-1 (zero
 * past N), group after group:
 *   4-bit: ceil(g/8) chunks × GA_NB zmm: dword c of zmm b, nibble i = code
 *          (0..15) of column 16b+c at k = 8·chunk + i of the group (0 past it);
 *   8-bit: GA_NB × g × 16 bytes: byte c of block (b, k) = int8 code of column
 *          16b+c at k (each zmm's columns apart, so the pack writes whole lines);
 *   then GA_NR f32 scales (q4_0/q8_0: d widened), and for w4a GA_NR f32 offsets.
 * K is walked in slices (whole groups, or pieces of one long group) whose
 * tile weights stay in L1 while every row tile of X passes over them.
 * w4a's Σx of each row and group is formed once per call (ga_xsums), not
 * once per column tile: at g = 32 the per-tile sums were a horizontal add
 * per row and group beside 64 FMAs (A/B in one process on 64x4096x14336,
 * 64x14336x4096 and 512x14336x4096: 1.18-1.19x as fast at g = 32, 1.09-1.11x
 * at g = 128, the same y bit for bit). */
#include "x86/avx512/avx512_common.h"
#include "x86/avx2/gemm_pack_impl.h"

#define QK_INLINE static inline __attribute__((always_inline))
#define GA_UNROLL _Pragma("GCC unroll 16")

enum { GA_MR = 6, GA_NB = 2, GA_NR = 16 * GA_NB, GA_SLICE = 1024 };

typedef enum { GA_W4S, GA_W4A, GA_W8S, GA_Q4_0, GA_Q8_0 } ga_fmt;

QK_INLINE int ga_bits(ga_fmt f) { return f == GA_W8S || f == GA_Q8_0 ? 8 : 4; }

static size_t ga_code_bytes(ga_fmt f, size_t g) { return ga_bits(f) == 8 ? g * GA_NB * 16 : (g + 7) / 8 * GA_NB * 64; }
static size_t ga_group_bytes(ga_fmt f, size_t g) { return ga_code_bytes(f, g) + GA_NR * sizeof(float) * (f == GA_W4A ? 2u : 1u); }
static size_t ga_tile_bytes(ga_fmt f, const qk_qmat *w) { return (w->cols / w->group) * ga_group_bytes(f, w->group); }
static size_t ga_pack_size(ga_fmt f, const qk_qmat *w) { return (w->rows + GA_NR - 1) / GA_NR * ga_tile_bytes(f, w); }
static size_t ga_packed_offset(ga_fmt f, const qk_qmat *w, size_t n0) { return n0 / GA_NR * ga_tile_bytes(f, w); }

/* Any group size, element by element: the shapes the fast path below does not
 * take (4-bit g % 32 != 0, 8-bit g % 16 != 0, i.e. g = K with K off those). */
static void ga_pack_generic(ga_fmt f, const qk_qmat *w, void *packed) {
    size_t N = w->rows, K = w->cols, g = w->group, ng = K / g, gb = ga_group_bytes(f, g), cb = ga_code_bytes(f, g);
    uint8_t *out = (uint8_t *)packed;
    for (size_t n0 = 0; n0 < N; n0 += GA_NR) {
        for (size_t j = 0; j < ng; j++) {
            uint8_t *codes = out + j * gb;
            float *sc = (float *)(codes + cb), *mn = sc + GA_NR;
            memset(codes, 0, gb);
            for (size_t c = 0; c < GA_NR && n0 + c < N; c++) {
                size_t n = n0 + c, b = c / 16, l = c % 16;
                const uint8_t *row = w->codes + n * w->row_bytes;
                if (ga_bits(f) == 8) { /* w8s, q8_0: the stored int8 bytes */
                    for (size_t i = 0; i < g; i++) codes[(b * g + i) * 16 + l] = (uint8_t)qk_row_stored(row, w->format, j * g + i);
                } else if (f != GA_Q4_0) { /* the plain bytes of 8 codes are the packed dword: nibble i = code i */
                    for (size_t i = 0; i < g; i += 8) {
                        uint8_t *d = codes + ((i / 8) * GA_NB + b) * 64 + 4 * l;
                        size_t nb = g - i >= 8 ? 4 : (g - i) / 2;
                        memcpy(d, row + (j * g + i) / 2, nb);
                    }
                } else {
                    for (size_t i = 0; i < g; i++) {
                        uint8_t *d = codes + ((i / 8) * GA_NB + b) * 64 + 4 * l + (i % 8) / 2;
                        *d |= (uint8_t)(qk_row_stored(row, w->format, j * g + i) << (4 * (i % 2)));
                    }
                }
                sc[c] = qk_qmat_scale(w, n, j);
                if (f == GA_W4A) mn[c] = qk_qmat_min(w, n, j);
            }
        }
        out += ng * gb;
    }
}

/* qk512_load_t4 of a block of fewer than 16 rows (the last tile's), out of
 * line: inlined beside the whole blocks' copy, its row tests went into that
 * copy too (q4_0 1024x4096 took 1.29x the time). */
static __attribute__((noinline)) void ga_load_t4_part(const uint8_t *bb, size_t rb, size_t off, size_t live, int q4, __m512i t[4]) {
    qk512_load_t4(bb, rb, off, live, q4, t);
}

/* The layout above as whole-register transposes, one zmm of the tile (16
 * columns) at a time: each block of 16 rows over all its groups, then its
 * scales (and offsets) while its rows are in cache; rows past N read as zero.
 * 4-bit codes (g % 32 == 0): 4 chunks of the 16 rows per qk512_load_t4 (a
 * q4_0 block first put in the plain nibble order); 8-bit codes (g % 16 ==
 * 0): 16 k per 16x16 byte transpose. Both write whole lines, non-temporal
 * when the packed weights are at least QK_STREAM_MIN_BYTES (as the int gemm's
 * pack). Against the pack before it, which took 8 columns (4-bit) or each
 * block's 16 k (8-bit, the two blocks' codes side by side in every line) at
 * a time, and so wrote each line in pieces over several passes of the tile,
 * with the scales one by one for q4_0 (tools/ab.py --rounds 3 --pin 0, warm,
 * 1024x4096 and 4096x14336 (8-bit also 14336x4096), g = 32 and 128,
 * 2026-12-07): q4_0 0.43-0.45 of the time, w4s 0.46-0.68, w4a 0.54-0.74, w8s
 * 0.61-0.92, q8_0 0.81-0.94 (the 8-bit gemm on the new layout 0.94-1.0 of its
 * time on 64x4096x14336, 64x14336x4096 and 512x14336x4096); non-temporal
 * stores alone took 0.55-0.71 of the time at 4096x14336 w4s and w4a g = 128
 * and w4s g = 32. Tried for 8-bit codes in the old layout and not kept: both
 * blocks' 16x16 transposes at once, so that their lines go out whole, 1.1-2.3x
 * the time (w8s, q8_0; 1024x4096, 4096x14336, 14336x4096): 32 rows 4 KiB or
 * 14 KiB apart crowd one or two L1 sets; the two blocks in turn over pieces
 * of 512 k into a 16 KiB buffer laid out as the lines, 1.0-1.5x. */
QK_INLINE void ga_pack_nt(ga_fmt f, const qk_qmat *w, void *packed, const int nt) {
    const size_t N = w->rows, K = w->cols, g = w->group, ng = K / g, gb = ga_group_bytes(f, g), cb = ga_code_bytes(f, g);
    const size_t rb = w->row_bytes;
    const int q = f == GA_Q4_0 || f == GA_Q8_0;
    uint8_t *out = (uint8_t *)packed;
    for (size_t n0 = 0; n0 < N; n0 += GA_NR, out += ng * gb)
        for (size_t b = 0; b < GA_NB; b++) {
            const size_t live = qk_pk_live(N, n0 + 16 * b, 16);
            const uint8_t *bb = live ? w->codes + (n0 + 16 * b) * rb : w->codes; /* no row of the block read when none is live */
            if (ga_bits(f) == 4) {
                for (size_t j = 0; j < ng; j++)
                    for (size_t ch = 0; ch < g / 8; ch += 4) {
                        const size_t off = f == GA_Q4_0 ? j * QK_Q4_0_BYTES + 2 : (j * g + 8 * ch) / 2;
                        __m512i t[4];
                        if (live == 16) qk512_load_t4(bb, rb, off, 16, f == GA_Q4_0, t);
                        else ga_load_t4_part(bb, rb, off, live, f == GA_Q4_0, t);
                        for (size_t c = 0; c < 4; c++) {
                            uint8_t *d = out + j * gb + ((ch + c) * GA_NB + b) * 64;
                            qk512_store_line(d, t[c], nt);
                        }
                    }
            } else {
                for (size_t j = 0; j < ng; j++)
                    for (size_t i0 = 0; i0 < g; i0 += 16) {
                        __m128i r[16], t[16];
                        for (size_t l = 0; l < 16; l++) {
                            const uint8_t *row = bb + l * rb;
                            const uint8_t *src = q ? row + j * QK_Q8_0_BYTES + 2 + i0 : row + j * g + i0;
                            r[l] = l < live ? _mm_loadu_si128((const __m128i *)src) : _mm_setzero_si128();
                        }
                        qk_pk_tr16x16_epi8(r, t);
                        uint8_t *d = out + j * gb + (b * g + i0) * 16; /* 4 whole lines */
                        for (size_t k = 0; k < 16; k += 4) {
                            __m512i v = _mm512_inserti32x4(_mm512_castsi128_si512(t[k]), t[k + 1], 1);
                            v = _mm512_inserti32x4(_mm512_inserti32x4(v, t[k + 2], 2), t[k + 3], 3);
                            qk512_store_line(d + k * 16, v, nt);
                        }
                    }
            }
            /* the block's scales (and offsets) while its rows are in cache; gb is a multiple of 4 */
            float *sc = (float *)(out + cb) + 16 * b;
            qk_pk_tile_scales(w, n0 + 16 * b, live, 16, sc, f == GA_W4A ? sc + GA_NR : NULL, gb / sizeof(float));
        }
    if (nt) _mm_sfence(); /* the streamed lines are visible before the packed weights are used */
}

QK_INLINE void ga_pack(ga_fmt f, const qk_qmat *w, void *packed) {
    const size_t g = w->group;
    if (ga_bits(f) == 4 ? g % 32 != 0 : g % 16 != 0) ga_pack_generic(f, w, packed);
    else if (qk_pack_streams(ga_pack_size(f, w), packed)) ga_pack_nt(f, w, packed, 1);
    else ga_pack_nt(f, w, packed, 0);
}

/* Σ x[k0..k1) of one row. */
static float ga_sum(const float *x, size_t k0, size_t k1) {
    __m512 s = _mm512_setzero_ps();
    for (size_t k = k0; k < k1; k += 16) s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(qk512_mask16(k1 - k), x + k));
    return _mm512_reduce_add_ps(s);
}

/* accp[m][b] += w[b]·x[m][k] for one k. */
QK_INLINE void ga_fma(size_t mr, __m512 accp[GA_MR][GA_NB], const __m512 *wv, const float *const *xr, size_t k) {
    GA_UNROLL for (size_t m = 0; m < mr; m++) {
        __m512 xv = _mm512_set1_ps(xr[m][k]);
        GA_UNROLL for (size_t b = 0; b < GA_NB; b++) accp[m][b] = _mm512_fmadd_ps(wv[b], xv, accp[m][b]);
    }
}

/* w4a: Σx of every row and group, in row tiles: tile t (rows 6t..6t+5) holds
 * [K/g][6], so a tile's sums come as one forward stream beside its rows of X
 * (rows side by side, [M][K/g], were 14% slower at 512x4096x14336, g = 32).
 * ga_xs_at is where row m's sum over group j (of ng) sits; a tile's row m0 + m
 * (m0 a multiple of GA_MR) at ga_xs_at(ng, m0, j) + m. NULL when out of
 * memory: the tiles then sum their own rows. */
QK_INLINE size_t ga_xs_at(size_t ng, size_t m, size_t j) { return (m / GA_MR * ng + j) * GA_MR + m % GA_MR; }

static float *ga_xsums(const qk_matmul_args *a) {
    size_t g = a->group, ng = a->K / g;
    float *xs = malloc((a->M + GA_MR - 1) / GA_MR * GA_MR * ng * sizeof(float));
    if (xs)
        for (size_t m = 0; m < a->M; m++)
            for (size_t j = 0; j < ng; j++) xs[ga_xs_at(ng, m, j)] = ga_sum(a->x + m * a->ldx, j * g, (j + 1) * g);
    return xs;
}

/* One register tile over [k0, k1): mr rows from m0, nc columns from n0, added
 * to Y (set when first); xs: ga_xsums, or NULL. */
QK_INLINE void ga_tile(ga_fmt f, size_t mr, const qk_matmul_args *a, const uint8_t *tp, const float *xs, size_t m0, size_t n0,
                       size_t nc, size_t k0, size_t k1, int first) {
    size_t g = a->group, gb = ga_group_bytes(f, g), cb = ga_code_bytes(f, g), ng = a->K / g;
    const __m512 tab = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512 t8 = f == GA_W4A ? tab : _mm512_sub_ps(tab, _mm512_set1_ps(8.0f));
    const float *xr[GA_MR];
    __m512 acc[GA_MR][GA_NB];
    GA_UNROLL for (size_t m = 0; m < mr; m++) {
        xr[m] = a->x + (m0 + m) * a->ldx;
        const float *y = a->y + (m0 + m) * a->ldy + n0;
        GA_UNROLL for (size_t b = 0; b < GA_NB; b++) {
            size_t c = 16 * b;
            acc[m][b] = _mm512_setzero_ps();
            if (!first && c < nc) acc[m][b] = qk512_load16_ps(y + c, nc - c);
        }
    }
    for (size_t kg = k0; kg < k1;) {
        size_t j = kg / g, ke = (j + 1) * g < k1 ? (j + 1) * g : k1;
        const uint8_t *gp = tp + j * gb;
        const float *sw = (const float *)(gp + cb);
        __m512 accp[GA_MR][GA_NB];
        GA_UNROLL for (size_t m = 0; m < mr; m++) GA_UNROLL for (size_t b = 0; b < GA_NB; b++) accp[m][b] = _mm512_setzero_ps();
        size_t k = kg;
        if (ga_bits(f) == 4) {
            const uint8_t *cp = gp + (kg - j * g) / 8 * GA_NB * 64;
            for (; k + 8 <= ke; k += 8, cp += GA_NB * 64) {
                __m512i v[GA_NB];
                GA_UNROLL for (size_t b = 0; b < GA_NB; b++) v[b] = _mm512_loadu_si512(cp + 64 * b);
                GA_UNROLL for (size_t i = 0; i < 8; i++) {
                    __m512 wv[GA_NB];
                    GA_UNROLL for (size_t b = 0; b < GA_NB; b++) wv[b] = _mm512_permutexvar_ps(i ? _mm512_srli_epi32(v[b], (unsigned)(4 * i)) : v[b], t8);
                    ga_fma(mr, accp, wv, xr, k + i);
                }
            }
            if (k < ke) { /* g = K, not a multiple of 8 */
                __m512i v[GA_NB];
                GA_UNROLL for (size_t b = 0; b < GA_NB; b++) v[b] = _mm512_loadu_si512(cp + 64 * b);
                for (size_t i = 0; k + i < ke; i++) {
                    __m512 wv[GA_NB];
                    GA_UNROLL for (size_t b = 0; b < GA_NB; b++) wv[b] = _mm512_permutexvar_ps(_mm512_srli_epi32(v[b], (unsigned)(4 * i)), t8);
                    ga_fma(mr, accp, wv, xr, k + i);
                }
            }
        } else {
            const uint8_t *cp = gp + (kg - j * g) * 16;
            for (; k < ke; k++, cp += 16) {
                __m512 wv[GA_NB];
                GA_UNROLL for (size_t b = 0; b < GA_NB; b++)
                    wv[b] = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(cp + b * g * 16))));
                ga_fma(mr, accp, wv, xr, k);
            }
        }
        GA_UNROLL for (size_t b = 0; b < GA_NB; b++) {
            __m512 s = _mm512_loadu_ps(sw + 16 * b);
            GA_UNROLL for (size_t m = 0; m < mr; m++) acc[m][b] = _mm512_fmadd_ps(accp[m][b], s, acc[m][b]);
        }
        if (f == GA_W4A && kg == j * g) {
            const float *mn = sw + GA_NR;
            GA_UNROLL for (size_t m = 0; m < mr; m++) {
                __m512 sx = _mm512_set1_ps(xs ? xs[ga_xs_at(ng, m0, j) + m] : ga_sum(xr[m], j * g, (j + 1) * g));
                GA_UNROLL for (size_t b = 0; b < GA_NB; b++) acc[m][b] = _mm512_fmadd_ps(_mm512_loadu_ps(mn + 16 * b), sx, acc[m][b]);
            }
        }
        kg = ke;
    }
    GA_UNROLL for (size_t m = 0; m < mr; m++) {
        float *y = a->y + (m0 + m) * a->ldy + n0;
        GA_UNROLL for (size_t b = 0; b < GA_NB; b++) {
            size_t c = 16 * b;
            if (c < nc) qk512_store16_ps(y + c, nc - c, acc[m][b]);
        }
    }
}

/* Rows [r0, r1) of X (r0 a multiple of GA_MR): column tile by column tile,
 * K slice by slice, every row tile. */
QK_INLINE void ga_run_rows(ga_fmt f, const qk_matmul_args *a, const float *xs, size_t r0, size_t r1) {
    const uint8_t *wp = (const uint8_t *)a->wp;
    size_t K = a->K, g = a->group, tb = ga_tile_bytes(f, a->w);
    for (size_t n0 = 0; n0 < a->N; n0 += GA_NR) {
        const uint8_t *tp = wp + n0 / GA_NR * tb;
        size_t nc = a->N - n0 < GA_NR ? a->N - n0 : GA_NR;
        for (size_t k0 = 0, k1; k0 < K; k0 = k1) {
            if (g <= GA_SLICE) k1 = k0 + (GA_SLICE / g) * g < K ? k0 + (GA_SLICE / g) * g : K;
            else k1 = k0 + GA_SLICE < (k0 / g + 1) * g ? k0 + GA_SLICE : (k0 / g + 1) * g;
            int first = k0 == 0;
            size_t m0 = r0;
            for (; m0 + GA_MR <= r1; m0 += GA_MR) ga_tile(f, GA_MR, a, tp, xs, m0, n0, nc, k0, k1, first);
            switch (r1 - m0) {
            case 5: ga_tile(f, 5, a, tp, xs, m0, n0, nc, k0, k1, first); break;
            case 4: ga_tile(f, 4, a, tp, xs, m0, n0, nc, k0, k1, first); break;
            case 3: ga_tile(f, 3, a, tp, xs, m0, n0, nc, k0, k1, first); break;
            case 2: ga_tile(f, 2, a, tp, xs, m0, n0, nc, k0, k1, first); break;
            case 1: ga_tile(f, 1, a, tp, xs, m0, n0, nc, k0, k1, first); break;
            default: break;
            }
        }
    }
}

/* X in blocks of rows (qk_row_block, QK_F32_ROW_BLOCK_BYTES), each block over
 * all of W. */
QK_INLINE void ga_run(ga_fmt f, const qk_matmul_args *a) {
    float *xs = f == GA_W4A ? ga_xsums(a) : NULL;
    size_t rows = qk_row_block(a->M, a->K * sizeof(float), QK_F32_ROW_BLOCK_BYTES, 0, GA_MR);
    for (size_t r0 = 0; r0 < a->M; r0 += rows) ga_run_rows(f, a, xs, r0, r0 + rows < a->M ? r0 + rows : a->M);
    free(xs);
}

#define GA_DEFINE(stem, fmt)                                                                                 \
    void stem(const qk_matmul_args *a) { ga_run(fmt, a); }                                                   \
    size_t stem##_pack_size(const qk_qmat *w) { return ga_pack_size(fmt, w); }                                \
    void stem##_pack(const qk_qmat *w, void *packed) { ga_pack(fmt, w, packed); }                             \
    size_t stem##_packed_offset(const qk_qmat *w, size_t n0) { return ga_packed_offset(fmt, w, n0); }

GA_DEFINE(qk_gemm_w4s_a32_6x32__avx512, GA_W4S)
GA_DEFINE(qk_gemm_w4a_a32_6x32__avx512, GA_W4A)
GA_DEFINE(qk_gemm_q4_0_a32_6x32__avx512, GA_Q4_0)
GA_DEFINE(qk_gemm_w8s_a32_6x32__avx512, GA_W8S)
GA_DEFINE(qk_gemm_q8_0_a32_6x32__avx512, GA_Q8_0)
