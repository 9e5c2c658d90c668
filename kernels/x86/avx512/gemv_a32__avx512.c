/* gemv (M = 1) with f32 activations, AVX-512: y[n] = Σ_k ŵ[n][k]·x[k] for
 * W4A32 (w4s, w4a, q4_0) and W8A32 (w8s, q8_0), on the plain layout, and
 * q4_0 and w8s also on packed layouts of 8-row blocks (qk_gemv_q4_0_a32_1x8,
 * qk_gemv_w8s_a32_1x8, below).
 *
 * Four rows per step share each load and shuffle of x. 4-bit weights: one
 * 16-entry table per row and group holds the dequantized values ŵ(c) (s·(c-8),
 * m + d·c, (c-8)·d, exactly as dequantize computes them), and vpermps looks
 * 16 weights up at once from their codes (it reads only the low 4 bits of
 * each index, so a byte holding two codes needs no mask). In the plain w4s/w4a
 * layout byte i holds weights 2i and 2i+1: the low nibbles are the even
 * weights and the high nibbles the odd ones, so x is split into its even and
 * odd elements (two vpermt2ps per 32 values, shared by the four rows).
 * 8-bit weights are widened, converted and multiplied into a per-group sum
 * that is scaled once per group. Accumulation is f32 FMA. Any K and g work:
 * a K that is not a multiple of 32 (g = K) ends with masked loads.
 *
 * w4s/w4a with K a multiple of 128 (the common case) take a faster path that
 * needs no widening shuffle: a 64-byte load holds 128 codes, dword l holding
 * the codes of elements 8l..8l+7 in its 8 nibbles; vpermps reads only the
 * low 4 bits of each dword, so nibble i of every lane is looked up by
 * shifting the whole vector right by 4i (shifts run on other ports than the
 * lookups and the FMAs). x is transposed to match once per call
 * (xt[128b + 16i + l] = x[128b + 8l + i]). The table holds the unscaled code
 * values (c - 8 for w4s, c for w4a); each block's per-lane sum is then scaled
 * lane by lane (lanes 4j..4j+3 are group j at g = 32); for w4a,
 * y += Σ_j m_j·Σx_j afterwards, in a pass over the offsets alone (the group
 * sums of x formed once per call). */
#include <stdlib.h>
#include <string.h>

#include "x86/avx512/avx512_common.h"

#define QK_INLINE static inline __attribute__((always_inline))

#ifndef A32_R
#define A32_R 8
#endif
enum { R = A32_R }; /* rows per step */

/* Bytes of each weight row prefetched ahead (several rows in flight leave
 * DRAM bandwidth unused with the hardware prefetchers alone). */
#ifndef PF
#define PF 1024
#endif
#define PREFETCH(p) _mm_prefetch((const char *)(p) + PF, _MM_HINT_T0)
/* Prefetch PF bytes past byte o of a row of rb bytes; past the row's end, the
 * same place nr rows further down, which the next step of nr rows reads (the
 * rows are contiguous: without this the first PF bytes of every row would be
 * demand misses, a quarter of a 4096-byte row). */
#define PREFETCH_ROW(row, o, rb, nr) \
    _mm_prefetch((const char *)(row) + (o) + PF + ((o) + PF >= (rb) ? ((nr) - 1) * (rb) : 0), _MM_HINT_T0)

static const float c8_tab[16] = {-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7};
static const float c0_tab[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

QK_INLINE float scale_at(const void *p, size_t i, qk_scale_type st) {
    return st == QK_SCALE_F16 ? _cvtsh_ss(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

/* ---- w4s, w4a ---- */

/* nr rows (nr <= R) starting at row n0 of the view; asym: w4a. */
QK_INLINE void w4_rows(const qk_matmul_args *a, size_t n0, size_t nr, int asym) {
    const qk_qmat *w = a->w;
    size_t K = a->K, g = a->group, ng = K / g;
    const float *x = a->x;
    const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i io = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    const __m512 cv = _mm512_loadu_ps(asym ? c0_tab : c8_tab);
    __m512 acc[2 * R], t[R];
    const uint8_t *codes[R];
    for (size_t r = 0; r < nr; r++) {
        acc[2 * r] = acc[2 * r + 1] = _mm512_setzero_ps();
        codes[r] = w->codes + (n0 + r) * w->row_bytes;
    }
    for (size_t j = 0; j < ng; j++) {
        for (size_t r = 0; r < nr; r++) {
            __m512 s = _mm512_set1_ps(scale_at(w->scales, (n0 + r) * ng + j, w->scale_type));
            t[r] = _mm512_mul_ps(s, cv);
            if (asym) t[r] = _mm512_add_ps(_mm512_set1_ps(scale_at(w->mins, (n0 + r) * ng + j, w->scale_type)), t[r]);
        }
        size_t k = j * g, e = k + g;
        for (; k + 32 <= e; k += 32) {
            __m512 x0 = _mm512_loadu_ps(x + k), x1 = _mm512_loadu_ps(x + k + 16);
            __m512 xe = _mm512_permutex2var_ps(x0, ie, x1), xo = _mm512_permutex2var_ps(x0, io, x1);
            for (size_t r = 0; r < nr; r++) {
                if (k % 128 == 0) PREFETCH(codes[r] + k / 2);
                __m512i q = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(codes[r] + k / 2)));
                acc[2 * r] = _mm512_fmadd_ps(_mm512_permutexvar_ps(q, t[r]), xe, acc[2 * r]);
                acc[2 * r + 1] = _mm512_fmadd_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(q, 4), t[r]), xo, acc[2 * r + 1]);
            }
        }
        if (k < e) { /* g = K, not a multiple of 32: the zero x lanes cancel the masked codes */
            size_t n = e - k;
            __m512 x0 = _mm512_maskz_loadu_ps(qk512_mask16(n), x + k);
            __m512 x1 = _mm512_maskz_loadu_ps(qk512_mask16(n > 16 ? n - 16 : 0), x + k + 16);
            __m512 xe = _mm512_permutex2var_ps(x0, ie, x1), xo = _mm512_permutex2var_ps(x0, io, x1);
            for (size_t r = 0; r < nr; r++) {
                __m512i q = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(qk512_mask16(n / 2), codes[r] + k / 2));
                acc[2 * r] = _mm512_fmadd_ps(_mm512_permutexvar_ps(q, t[r]), xe, acc[2 * r]);
                acc[2 * r + 1] = _mm512_fmadd_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(q, 4), t[r]), xo, acc[2 * r + 1]);
            }
        }
    }
    for (size_t r = 0; r < nr; r++) a->y[n0 + r] = _mm512_reduce_add_ps(_mm512_add_ps(acc[2 * r], acc[2 * r + 1]));
}

/* ---- w4s, w4a, K % 128 == 0: 64-byte blocks of codes, x transposed ---- */

#ifndef A32_RT
#define A32_RT 8
#endif
enum { RT = A32_RT };   /* rows per step */
/* Bytes of codes prefetched ahead in each row: w4s/w4a (TPF), q4_0 (QPF).
 * w4s/w4a, 1 thread, cold, A/B in one process against a plain read of the same
 * buffers: 2048 rather than 1024 lifts g = 128 from 80-85% to 86-92% of the
 * read on 14336x4096 and 4096x14336 (g = 32 unchanged, 3072 no better); q4_0
 * showed no difference beyond the noise. Again on 2026-12-07 (tools/ab.py
 * --rounds 5 --pin 0, w4s and w4a, g = 32 and 128, the same shapes, one
 * thread, cold): no prefetch 1.9-2.6x the time; 1024 ahead 0.88-0.93 in one
 * run and 0.90-1.06 in the next; 4096 ahead 0.97-1.07; a second prefetch per
 * line into L2 (prefetcht1) 6 or 8 KiB ahead, 1.30-1.54x in every round. */
#ifndef TPF
#define TPF 2048
#endif
#ifndef QPF
#define QPF 1024
#endif
#define TSPF 256  /* bytes of scales (and offsets) prefetched ahead in each row */

/* The scales (or offsets) of row n, block b (elements 128b..128b+127), lane by lane. */
QK_INLINE __m512 t_lanes(const void *p, size_t n, size_t ng, size_t g, size_t b, qk_scale_type st) {
    size_t j = n * ng + b * 128 / g;
    if (g == 32) {
        const __m512i i4 = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
        __m128 s = st == QK_SCALE_F16 ? _mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)((const uint16_t *)p + j)))
                                      : _mm_loadu_ps((const float *)p + j);
        return _mm512_permutexvar_ps(i4, _mm512_castps128_ps512(s));
    }
    if (g == 64) {
        const __m512i i8 = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
        __m128 s;
        if (st == QK_SCALE_F16) {
            uint32_t h;
            memcpy(&h, (const uint16_t *)p + j, 4);
            s = _mm_cvtph_ps(_mm_cvtsi32_si128((int)h));
        } else {
            s = _mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)((const float *)p + j)));
        }
        return _mm512_permutexvar_ps(i8, _mm512_castps128_ps512(s));
    }
    return _mm512_set1_ps(scale_at(p, j, st));
}

/* Nibbles 1..7 of the dword lanes of v[r] (nibble i of lane j: the code of
 * value 16i + j of a 128-value step), each looked up in the 16-float table t
 * and multiplied by x of that value (xt, 16 per nibble), added to part[r]
 * (which holds nibble 0's products). All rows of the step per nibble, so the
 * x load is shared.
 * This loop holds the w4s/w4a/q4_0 gemv on one thread near DRAM speed: 16
 * weights cost a shift, a lookup and an FMA, which on the Zen 5 host issue
 * on three different pairs of its four vector pipes (shifts with the adds,
 * vpermps on the middle two, FMAs with the multiplies). These three ops
 * alone (8 rows per step, in assembly, 2026-12-07) ran 65.7 G weights a
 * second, 32.9 GB/s of codes: this gemv's ceiling on one core. In place of
 * the lookup, an and and a convert ran 47, an or under 2^23's exponent and
 * a subtraction 46: the four pipes take about 3.4 of these ops a cycle
 * whichever pipes they need, so the fewest ops win. With its weights in
 * L2 the one-thread w4s gemv moved 36.0 GB/s at g = 32 and 32.5 at g = 128,
 * where one thread read DRAM at 29-40 GB/s in the same run, and from DRAM
 * (4096x14336) 25.3 and 19.2 GB/s, 80.7% and 67.7% of the read beside its
 * calls (the run results/oxide-virtual-turin-like-processor-2c/
 * 20261207-052248-4a57d04554, whose summary.md gives its command; the
 * README's "Reading the numbers" too). Tried and slower
 * (tools/ab.py --rounds 3 --pin 0, warm 1x2048x4096 and 1x512x14336, cold
 * 1x4096x14336 and 1x14336x4096): each nibble made a float by a bit-select
 * under the exponent of 2^(23-4i) and one subtraction, exact and with no
 * lookup or shift, 1.14-1.37x the time warm and cold (the bit-select
 * overwrites its input, so each needs a register copy, and the eight rows
 * spill); warm only, two FMA chains per row 1.01-1.15x, and 4 rows per step
 * instead of 8 0.99-1.13x. Also warm, 2026-12-07 (--rounds 5, 1x128x4096 and
 * 1x2048x4096, w4s, w4a and q4_0 at g = 32 and 128): each row's seven
 * nibbles in turn (row by row, not nibble by nibble) 1.06-1.42x (medians), as
 * each row's FMAs then wait on each other. A private loop of this step in L1
 * found no gain in 12 rows per step or in looking nibble 7 up by a convert
 * (v >> 28, with -8·x folded into the first product) in place of a vpermps.
 * Nor in keeping x in L1 on long rows (2026-12-07, tools/ab.py --rounds 3
 * --pin 0, w4s and w4a at g = 32 and 128, 1x4096x14336 and 1x128x14336, warm
 * and cold): every row step over K blocks of at most 8192 values (two of 7168
 * on K = 14336, the 28 KiB of x a block fits L1 beside the codes), each block
 * over all rows before the next, took 0.97-1.10x the time (medians). Nor
 * (2026-12-07) in a float per nibble with no shift and no lookup: masked in
 * place, nibble i <= 5 of a dword read as a float is the subnormal
 * c·2^(4i-149), exactly, so an and and an FMA against x scaled by
 * 2^(149-4i-kc) give c·x·2^-kc rounded as c·x is (w4s subtracting
 * 8·2^(4i-149) first). A harness over the kernels (512x14336, from L3) timed
 * w4a at 1.17x and w4s at 2.9x the time: the FP pipes take extra time on
 * subnormal operands, most on w4s's subtraction, whose results are
 * subnormal; with MXCSR's DAZ set (subnormals read as zero: wrong sums,
 * timing only) w4a ran 0.88x and w4s 1.27x, so even free of that cost it
 * gains a tenth at most. And not in the step's memory order: the 8 rows of a
 * step are one contiguous block, and a prefetch per line of the next step's
 * block in address order (one sequential stream), into L2 beside this loop's
 * own prefetch, or into L2 or L1 in its place, took 1.11-1.61x (L2) and
 * 0.76-1.29x (L1) the time cold (tools/ab.py --rounds 3 --pin 0,
 * 1x4096x14336 and 1x14336x4096, w4s and w4a, g = 32 and 128). Nor in
 * reading the rows one after the other as one sequential stream, as the
 * integer gemv does (in a private read loop, not qkbench, this step's 8
 * interleaved row streams read DRAM slower than one stream): one row at a time with 4
 * blocks of 128 values in flight (4 independent FMA chains), each line
 * prefetched 1, 4 or 8 KiB ahead in the stream, took 1.15x the time warm
 * (1x256x4096) and 2.2x (1 KiB) to 3.2-4.1x cold (2026-12-07, the same
 * A/B and shapes, 2 or 3 rounds). */
QK_INLINE void nib_parts(size_t nr, const __m512i *v, __m512 t, const float *xb, __m512 *part) {
#pragma GCC unroll 8
    for (unsigned i = 1; i < 8; i++) {
        __m512 xi = _mm512_loadu_ps(xb + 16 * i);
        for (size_t r = 0; r < nr; r++) part[r] = _mm512_fmadd_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(v[r], 4 * i), t), xi, part[r]);
    }
}

QK_INLINE void w4t_rows(const qk_matmul_args *a, const float *xt, size_t n0, size_t nr, int asym) {
    const qk_qmat *w = a->w;
    size_t K = a->K, g = a->group, ng = K / g, nb = K / 128;
    qk_scale_type st = w->scale_type;
    size_t ss = st == QK_SCALE_F16 ? 2 : 4, rb = w->row_bytes;
    const __m512 cv = _mm512_loadu_ps(asym ? c0_tab : c8_tab);
    __m512 acc[RT];
    const uint8_t *codes[RT];
    for (size_t r = 0; r < nr; r++) {
        acc[r] = _mm512_setzero_ps();
        codes[r] = w->codes + (n0 + r) * w->row_bytes;
    }
    for (size_t b = 0; b < nb; b++) {
        __m512i v[RT];
        __m512 part[RT];
        const float *xb = xt + 128 * b;
        for (size_t r = 0; r < nr; r++) {
            const uint8_t *p = codes[r] + 64 * b;
            /* TPF bytes ahead; past the row's end, in the row RT rows below
             * (the next step's), so short rows start with their lines in flight. */
            _mm_prefetch((const char *)p + TPF + (64 * b + TPF >= rb ? (RT - 1) * rb : 0), _MM_HINT_T0);
            if (b % 4 == 0) { /* 4 blocks use at most 16 scales: one line */
                size_t so = ((n0 + r) * ng + b * 128 / g) * ss + TSPF;
                if ((b * 128 / g) * ss + TSPF >= ng * ss) so += (RT - 1) * ng * ss;
                _mm_prefetch((const char *)w->scales + so, _MM_HINT_T0);
            }
            v[r] = _mm512_loadu_si512(p);
            part[r] = _mm512_mul_ps(_mm512_permutexvar_ps(v[r], cv), _mm512_loadu_ps(xb));
        }
        nib_parts(nr, v, cv, xb, part);
        for (size_t r = 0; r < nr; r++) acc[r] = _mm512_fmadd_ps(part[r], t_lanes(w->scales, n0 + r, ng, g, b, st), acc[r]);
    }
    for (size_t r = 0; r < nr; r++) a->y[n0 + r] = _mm512_reduce_add_ps(acc[r]);
}

/* w4a: y[n] += Σ_j m[n][j]·(Σ of x over group j), xg holding those sums.
 * Eight rows at a time: one accumulator per row, so the FMAs of a short row
 * (ng = 32 at g = 128 on K = 4096: two) do not wait on each other and the
 * pass runs at the speed of reading the offsets, not at FMA latency per row.
 * Row by row within the eight, so the offsets are read as one linear stream
 * (the eight rows side by side, as eight streams, were 2-3 points slower),
 * prefetched 4 KiB ahead. One
 * thread, cold, A/B against a plain read of the same buffers: w4a g = 32
 * 14336x4096 72% -> 88% of the read (the pass alone had run at ~12-27 GB/s). */
QK_INLINE void w4t_min_rows(const qk_matmul_args *a, const float *xg, size_t n0, size_t nr, qk_scale_type st) {
    const qk_qmat *w = a->w;
    size_t ng = a->K / a->group;
    __m512 acc[8];
    for (size_t r = 0; r < nr; r++) acc[r] = _mm512_setzero_ps();
    for (size_t r = 0; r < nr; r++) {
        for (size_t j = 0; j < ng; j += 16) {
            size_t nj = ng - j, i = (n0 + r) * ng + j;
            __m512 xv = qk512_load16_ps(xg + j, nj);
            _mm_prefetch((const char *)w->mins + i * (st == QK_SCALE_F16 ? 2 : 4) + 4096, _MM_HINT_T0);
            __m512 mv = st == QK_SCALE_F16 ? qk512_load16_ph((const uint16_t *)w->mins + i, nj) : qk512_load16_ps((const float *)w->mins + i, nj);
            acc[r] = _mm512_fmadd_ps(mv, xv, acc[r]);
        }
    }
    for (size_t r = 0; r < nr; r++) a->y[n0 + r] += _mm512_reduce_add_ps(acc[r]);
}

static void w4t_min_term(const qk_matmul_args *a, const float *xg) {
    size_t n = 0;
    if (a->w->scale_type == QK_SCALE_F16) {
        for (; n + 8 <= a->N; n += 8) w4t_min_rows(a, xg, n, 8, QK_SCALE_F16);
        for (; n < a->N; n++) w4t_min_rows(a, xg, n, 1, QK_SCALE_F16);
    } else {
        for (; n + 8 <= a->N; n += 8) w4t_min_rows(a, xg, n, 8, QK_SCALE_F32);
        for (; n < a->N; n++) w4t_min_rows(a, xg, n, 1, QK_SCALE_F32);
    }
}

/* xt (K floats) and, for w4a, xg (the K/g group sums of x): NULL when out of memory. */
static float *w4t_prepare(const qk_matmul_args *a, int asym) {
    size_t K = a->K, nb = K / 128, g = a->group;
    float *xt = malloc((K + (asym ? K / g : 0)) * sizeof(float));
    if (!xt) return NULL;
    for (size_t b = 0; b < nb; b++) {
        const float *x = a->x + 128 * b;
        float *o = xt + 128 * b;
        for (size_t i = 0; i < 8; i++)
            for (size_t l = 0; l < 16; l++) o[16 * i + l] = x[8 * l + i];
    }
    if (asym) {
        float *xg = xt + K;
        for (size_t j = 0; j < K / g; j++) {
            __m512 s = _mm512_setzero_ps();
            for (size_t k = j * g; k < (j + 1) * g; k += 16) s = _mm512_add_ps(s, qk512_load16_ps(a->x + k, (j + 1) * g - k));
            xg[j] = _mm512_reduce_add_ps(s);
        }
    }
    return xt;
}

static void gemv_w4(const qk_matmul_args *a, int asym) {
    size_t n = 0;
    if (a->K % 128 == 0 && (a->group == 32 || a->group == 64 || a->group % 128 == 0)) {
        float *xt = w4t_prepare(a, asym);
        if (xt) {
            for (; n + RT <= a->N; n += RT) w4t_rows(a, xt, n, RT, asym);
            for (; n < a->N; n++) w4t_rows(a, xt, n, 1, asym);
            if (asym) w4t_min_term(a, xt + a->K);
            free(xt);
            return;
        }
    }
    for (; n + R <= a->N; n += R) w4_rows(a, n, R, asym);
    for (; n < a->N; n++) w4_rows(a, n, 1, asym);
}

void qk_gemv_w4s_a32__avx512(const qk_matmul_args *a) { gemv_w4(a, 0); }
void qk_gemv_w4a_a32__avx512(const qk_matmul_args *a) { gemv_w4(a, 1); }

/* ---- q4_0: block = fp16 d + 16 bytes, byte j holds weights j (low) and j+16 (high) ---- */

enum { DB = 4 }; /* blocks whose d are converted together */

/* d of blocks b0..b0+nb-1 (nb <= DB) of nr rows, as f32: d[r * DB + i]. The
 * fp16 values are gathered in general registers (narrow stores followed by a
 * wide load would stall store forwarding). */
QK_INLINE void block_scales(const uint8_t *const *row, size_t nr, size_t b0, size_t nb, size_t bytes, float *d) {
    uint64_t u[R > 4 ? R : 4] = {0};
    for (size_t r = 0; r < nr; r++) {
        uint64_t v = 0;
        for (size_t i = 0; i < nb; i++) v |= (uint64_t)qk_rd16(row[r] + (b0 + i) * bytes) << (16 * i);
        u[r] = v;
    }
    for (size_t r = 0; r < nr; r += 4)
        _mm512_storeu_ps(d + r * DB, _mm512_cvtph_ps(_mm256_setr_epi64x((long long)u[r], (long long)u[r + 1], (long long)u[r + 2], (long long)u[r + 3])));
}

QK_INLINE void q4_0_rows(const qk_matmul_args *a, size_t n0, size_t nr) {
    const qk_qmat *w = a->w;
    size_t nb = a->K / 32;
    const float *x = a->x;
    const __m512 c8 = _mm512_loadu_ps(c8_tab);
    __m512 acc[2 * R];
    const uint8_t *blk[R];
    float d[(R > 4 ? R : 4) * DB];
    for (size_t r = 0; r < nr; r++) {
        acc[2 * r] = acc[2 * r + 1] = _mm512_setzero_ps();
        blk[r] = w->codes + (n0 + r) * w->row_bytes;
    }
    for (size_t b0 = 0; b0 < nb; b0 += DB) {
        size_t n = nb - b0 < DB ? nb - b0 : DB;
        block_scales(blk, nr, b0, n, QK_Q4_0_BYTES, d);
        for (size_t i = 0; i < n; i++) {
            size_t b = b0 + i;
            __m512 x0 = _mm512_loadu_ps(x + 32 * b), x1 = _mm512_loadu_ps(x + 32 * b + 16);
            for (size_t r = 0; r < nr; r++) {
                const uint8_t *p = blk[r] + b * QK_Q4_0_BYTES;
                PREFETCH_ROW(blk[r], b * QK_Q4_0_BYTES, w->row_bytes, nr);
                __m512 t = _mm512_mul_ps(c8, _mm512_set1_ps(d[r * DB + i]));
                __m512i q = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(p + 2)));
                acc[2 * r] = _mm512_fmadd_ps(_mm512_permutexvar_ps(q, t), x0, acc[2 * r]);
                acc[2 * r + 1] = _mm512_fmadd_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(q, 4), t), x1, acc[2 * r + 1]);
            }
        }
    }
    for (size_t r = 0; r < nr; r++) a->y[n0 + r] = _mm512_reduce_add_ps(_mm512_add_ps(acc[2 * r], acc[2 * r + 1]));
}

/* ---- q4_0, K % 128 == 0: four blocks (72 bytes) per step, x transposed ----
 * Two overlapping 64-byte loads (bytes 0..63 and 8..71 of the four blocks)
 * and one vpermt2w put the 4 x 16 code bytes side by side (bytes 16b..16b+15
 * of the vector: block b), dropping the fp16 d words; a vpermw of the first
 * load gathers d_b into words 4b..4b+3, one vcvtph2ps makes them the lane
 * scales. Dword l then holds bytes 4(l%4)..4(l%4)+3 of block l/4, and its
 * nibble i element 4(l%4) + i/2 + 16(i%2) of that block: as in the w4s/w4a
 * path, nibble i of every lane is looked up (vpermps, low 4 bits) after a
 * shift by 4i, against xt[128B + 16i + l] = x[128B + 32(l/4) + 4(l%4) + i/2
 * + 16(i%2)], formed once per call. The table holds c - 8; each block's
 * lanes are scaled by its d once per step. */

#ifndef Q4T_R
#define Q4T_R 8
#endif
enum { RQ = Q4T_R };

/* vpermt2w word indices: output word 8b + m is code word m of block b, at
 * byte 18b + 2 + 2m of the step: word 9b + 1 + m of the first load, or past
 * its end (>= 32) word 9b + 1 + m - 4 of the second (index bit 5). */
static const uint16_t q4t_code_idx[32] = {
    1,  2,  3,  4,  5,  6,  7,  8,  10, 11, 12, 13, 14, 15, 16, 17,
    19, 20, 21, 22, 23, 24, 25, 26, 28, 29, 30, 31, 32 + 28, 32 + 29, 32 + 30, 32 + 31};
/* vpermw word indices: word l (l < 16) is d of block l/4 (word 9(l/4)). */
static const uint16_t q4t_d_idx[32] = {0, 0, 0, 0, 9, 9, 9, 9, 18, 18, 18, 18, 27, 27, 27, 27};

QK_INLINE void q4t_rows(const qk_matmul_args *a, const float *xt, size_t n0, size_t nr) {
    const qk_qmat *w = a->w;
    size_t nb4 = a->K / 128, rb = w->row_bytes;
    const __m512 c8 = _mm512_loadu_ps(c8_tab);
    const __m512i ci = _mm512_loadu_si512(q4t_code_idx), di = _mm512_loadu_si512(q4t_d_idx);
    __m512 acc[RQ];
    const uint8_t *row[RQ];
    for (size_t r = 0; r < nr; r++) {
        acc[r] = _mm512_setzero_ps();
        row[r] = w->codes + (n0 + r) * rb;
    }
    for (size_t b = 0; b < nb4; b++) {
        __m512i v[RQ];
        __m512 part[RQ];
        const float *xb = xt + 128 * b;
        size_t o = 72 * b;
        for (size_t r = 0; r < nr; r++) {
            const uint8_t *p = row[r] + o;
            /* QPF bytes ahead; past the row's end, in the row RQ rows below */
            size_t po = o + QPF + (o + QPF >= rb ? (RQ - 1) * rb : 0);
            _mm_prefetch((const char *)row[r] + po, _MM_HINT_T0);
            _mm_prefetch((const char *)row[r] + po + 64, _MM_HINT_T0);
            v[r] = _mm512_permutex2var_epi16(_mm512_loadu_si512(p), ci, _mm512_loadu_si512(p + 8));
            part[r] = _mm512_mul_ps(_mm512_permutexvar_ps(v[r], c8), _mm512_loadu_ps(xb));
        }
        nib_parts(nr, v, c8, xb, part);
        for (size_t r = 0; r < nr; r++) {
            __m512i dw = _mm512_permutexvar_epi16(di, _mm512_loadu_si512(row[r] + o));
            acc[r] = _mm512_fmadd_ps(part[r], _mm512_cvtph_ps(_mm512_castsi512_si256(dw)), acc[r]);
        }
    }
    for (size_t r = 0; r < nr; r++) a->y[n0 + r] = _mm512_reduce_add_ps(acc[r]);
}

/* xt of the q4_0 path (K floats, K % 128 == 0): NULL when out of memory. */
static float *q4t_prepare(const qk_matmul_args *a) {
    size_t K = a->K;
    float *xt = malloc(K * sizeof(float));
    if (!xt) return NULL;
    for (size_t b = 0; b < K / 128; b++) {
        const float *x = a->x + 128 * b;
        float *o = xt + 128 * b;
        for (size_t i = 0; i < 8; i++)
            for (size_t l = 0; l < 16; l++) o[16 * i + l] = x[32 * (l / 4) + 4 * (l % 4) + i / 2 + 16 * (i % 2)];
    }
    return xt;
}

/* Rows n.. of the plain layout. */
static void q4_0_plain(const qk_matmul_args *a, size_t n) {
    if (n >= a->N) return;
    if (a->K % 128 == 0) {
        float *xt = q4t_prepare(a);
        if (xt) {
            for (; n + RQ <= a->N; n += RQ) q4t_rows(a, xt, n, RQ);
            for (; n < a->N; n++) q4t_rows(a, xt, n, 1);
            free(xt);
            return;
        }
    }
    for (; n + R <= a->N; n += R) q4_0_rows(a, n, R);
    for (; n < a->N; n++) q4_0_rows(a, n, 1);
}

void qk_gemv_q4_0_a32__avx512(const qk_matmul_args *a) { q4_0_plain(a, 0); }

/* ---- q4_0 packed (qk_gemv_q4_0_a32_1x8): blocks of 8 rows, aligned codes ----
 * The plain path's 72-byte steps start off the 64-byte grid, so its code
 * loads mostly straddle two lines, and it shuffles twice per step to drop and
 * gather d. Here a block of RP rows (ns = K/128 steps of four q4_0 blocks,
 * the last zero-padded: codes 0, d 0) holds each row's codes as ns aligned
 * 64-byte chunks, row after row, then each row's d (four fp16 per step, row
 * after row): the w4s layout of the block, with the plain layout's bytes.
 * Code byte 4l + m of a chunk (l < 16, m < 4) holds in its low nibble the
 * code of value 8(l/4) + 2m of q4_0 block l%4 and in its high nibble that of
 * value 8(l/4) + 2m + 1: nibble i of dword l is value 8(l/4) + i of block
 * l%4, looked up (vpermps) after a shift by 4i as in the w4s/w4a path,
 * against xp[128s + 16i + l] = x[128s + 32(l%4) + 8(l/4) + i] formed once
 * per call; lane l belongs to block l%4, so a step's lane scales are the
 * row's four d repeated. Measured (1 thread, cold, rotated copies, both
 * kernels alternated call by call in one process, 4096x14336 and 14336x4096):
 * one interleaved stream (each step's 8 chunks and a line of the 8 rows' d
 * together) no faster than the plain layout; chunks loaded at byte offsets
 * 1..3 instead of shifted (three straddling loads per chunk) read DRAM at
 * half speed; a row at a time with two FMA chains, 8% faster in L2, ~10%
 * slower cold than this order (all rows' chunks loaded, then nibble by
 * nibble); the d as one line per step for the 8 rows ~6% slower cold than
 * per row, prefetched like the w4s scales. Again on 2026-12-07 (tools/ab.py
 * --rounds 3 --pin 0, those two shapes, g = 32, cold): each step's 8 chunks
 * and a line of their d together (576 bytes a step, one stream, every line
 * prefetched 2 or 4 KiB ahead, or none) took 1.40-1.74x the time of this
 * layout. */
enum { RP = 8 };
#ifndef QP_PF
#define QP_PF 2048 /* bytes ahead in each row's codes */
#endif
#define QP_DPF 256 /* and in its d */

QK_INLINE size_t qp_block_bytes(size_t K) { return (K + 127) / 128 * 72 * RP; }
/* Byte offsets in a block of ns steps of the codes and the d of row r, step s. */
QK_INLINE size_t qp_code_at(size_t r, size_t s, size_t ns) { return (r * ns + s) * 64; }
QK_INLINE size_t qp_d_at(size_t r, size_t s, size_t ns) { return RP * ns * 64 + (r * ns + s) * 8; }

size_t qk_gemv_q4_0_a32_1x8__avx512_pack_size(const qk_qmat *w) {
    size_t b = w->rows / RP * qp_block_bytes(w->cols);
    return b ? b : 64;
}

/* The 16 bytes of a chunk that come from q4_0 block q (codes at q + 2): byte
 * t holds values 2t, 2t + 1 (as the chunk's dword t/4 of lane block, byte t%4):
 * t < 8 the low nibbles of q bytes 2t, 2t + 1, t >= 8 the high nibbles of
 * q bytes 2t - 16, 2t - 15; per 16-bit word w of q, (w & 15) | (w >> 4 & 0xf0)
 * and (w >> 4 & 15) | (w >> 8 & 0xf0). */
QK_INLINE __m128i qp_pairs(const uint8_t *q) {
    __m128i w = _mm_loadu_si128((const __m128i *)(q + 2)), m0 = _mm_set1_epi16(0x0f), m1 = _mm_set1_epi16(0xf0);
    __m128i a = _mm_or_si128(_mm_and_si128(w, m0), _mm_and_si128(_mm_srli_epi16(w, 4), m1));
    __m128i b = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(w, 4), m0), _mm_and_si128(_mm_srli_epi16(w, 8), m1));
    return _mm_packus_epi16(a, b);
}

void qk_gemv_q4_0_a32_1x8__avx512_pack(const qk_qmat *w, void *packed) {
    size_t K = w->cols, nb = K / 32, ns = (K + 127) / 128, bb = qp_block_bytes(K);
    for (size_t n0 = 0; n0 + RP <= w->rows; n0 += RP) {
        uint8_t *blk = (uint8_t *)packed + n0 / RP * bb;
        for (size_t r = 0; r < RP; r++) {
            const uint8_t *row = w->codes + (n0 + r) * w->row_bytes;
            for (size_t s = 0; s < ns; s++) {
                /* dword 4c + j of the chunk: dword c of block j's pairs (a 4x4 transpose) */
                __m128 p[4];
                uint16_t d[4] = {0, 0, 0, 0};
                for (size_t j = 0; j < 4; j++) {
                    const uint8_t *q = row + (4 * s + j) * QK_Q4_0_BYTES;
                    p[j] = 4 * s + j < nb ? _mm_castsi128_ps(qp_pairs(q)) : _mm_setzero_ps();
                    if (4 * s + j < nb) d[j] = qk_rd16(q);
                }
                _MM_TRANSPOSE4_PS(p[0], p[1], p[2], p[3]);
                uint8_t *o = blk + qp_code_at(r, s, ns);
                for (size_t c = 0; c < 4; c++) _mm_store_ps((float *)(o + 16 * c), p[c]);
                memcpy(blk + qp_d_at(r, s, ns), d, 8);
            }
        }
    }
}

size_t qk_gemv_q4_0_a32_1x8__avx512_packed_offset(const qk_qmat *w, size_t n0) { return n0 / RP * qp_block_bytes(w->cols); }

/* One block of RP rows (n0..n0+RP-1). */
QK_INLINE void qp_rows(const qk_matmul_args *a, const float *xp, const uint8_t *pk, size_t n0) {
    size_t ns = (a->K + 127) / 128;
    const __m512 c8 = _mm512_loadu_ps(c8_tab);
    __m512 acc[RP];
    for (size_t r = 0; r < RP; r++) acc[r] = _mm512_setzero_ps();
    const __m512i i4 = _mm512_setr_epi32(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3);
    for (size_t s = 0; s < ns; s++) {
        const float *xb = xp + 128 * s;
        /* past a row's end: the same place in the next block (its bytes less a row's codes further) */
        size_t pf = QP_PF + (64 * s + QP_PF >= 64 * ns ? RP * ns * 64 : 0);
        __m512i v[RP];
        __m512 part[RP];
        for (size_t r = 0; r < RP; r++) {
            const uint8_t *p = pk + qp_code_at(r, s, ns);
            _mm_prefetch((const char *)p + pf, _MM_HINT_T0);
            if (s % 4 == 0) { /* a row's d of 4 steps: 32 bytes */
                size_t o = qp_d_at(r, s, ns) + QP_DPF;
                if (8 * s + QP_DPF >= 8 * ns) o += RP * ns * 64 + (RP - 1) * ns * 8; /* the next block's */
                _mm_prefetch((const char *)pk + o, _MM_HINT_T0);
            }
            v[r] = _mm512_load_si512(p);
            part[r] = _mm512_mul_ps(_mm512_permutexvar_ps(v[r], c8), _mm512_load_ps(xb));
        }
        nib_parts(RP, v, c8, xb, part);
        for (size_t r = 0; r < RP; r++) {
            __m128 d = _mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)(pk + qp_d_at(r, s, ns))));
            acc[r] = _mm512_fmadd_ps(part[r], _mm512_permutexvar_ps(i4, _mm512_castps128_ps512(d)), acc[r]);
        }
    }
    for (size_t r = 0; r < RP; r++) a->y[n0 + r] = _mm512_reduce_add_ps(acc[r]);
}

static void qp_gemv(const qk_matmul_args *a) {
    size_t K = a->K, ns = (K + 127) / 128, nblk = a->N / RP, bb = qp_block_bytes(K);
    float *xp = nblk ? aligned_alloc(64, ns * 128 * sizeof(float)) : NULL;
    if (!xp) { /* no whole block, or out of memory: the plain layout */
        q4_0_plain(a, 0);
        return;
    }
    const __m512i gi = _mm512_setr_epi32(0, 32, 64, 96, 8, 40, 72, 104, 16, 48, 80, 112, 24, 56, 88, 120); /* 32(l%4) + 8(l/4) */
    size_t s = 0;
    for (; 128 * (s + 1) <= K; s++)
        for (size_t i = 0; i < 8; i++) _mm512_store_ps(xp + 128 * s + 16 * i, _mm512_i32gather_ps(gi, a->x + 128 * s + i, 4));
    for (; s < ns; s++) /* the padded step */
        for (size_t i = 0; i < 8; i++)
            for (size_t l = 0; l < 16; l++) {
                size_t k = 128 * s + 32 * (l % 4) + 8 * (l / 4) + i;
                xp[128 * s + 16 * i + l] = k < K ? a->x[k] : 0.0f;
            }
    for (size_t b = 0; b < nblk; b++) qp_rows(a, xp, (const uint8_t *)a->wp + b * bb, b * RP);
    free(xp);
    q4_0_plain(a, nblk * RP); /* rows past the last whole block */
}
void qk_gemv_q4_0_a32_1x8__avx512(const qk_matmul_args *a) { qp_gemv(a); }

/* ---- w8s, q8_0 ---- */

QK_INLINE __m512 widen8(const uint8_t *p) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)p))); }

/* w8s: 8 rows per step; bytes prefetched ahead by row length. Measured on
 * 14336x4096 / 4096x14336 cold (A/B in one process): 4-KiB rows run 30-33
 * GB/s 2 KiB ahead (4 rows 2 KiB ahead: 23-26); 14-KiB rows 1 KiB ahead
 * (2 KiB ahead: 16% slower at g = 32). */
enum { R8 = 8 };

/* The packed layout of qk_gemv_w8s_a32_1x8 (w8p): each block of R8 rows is
 * one run of 32-value chunks, chunk c holding the R8 rows' values 32c..32c+31
 * one row after the other (the last chunk zero-padded), so the kernel reads
 * one sequential stream where the plain layout gives it R8 (a plain read of
 * 8 interleaved rows reached 26-30 GB/s here, one stream 36-37). Rows past
 * the last whole block are not packed: the kernel reads them plain. */
#ifndef W8P_PF
#define W8P_PF 24576 /* bytes ahead in the one stream: 2 KiB read 20-24 GB/s, 16-32 KiB 28-35 */
#endif
QK_INLINE size_t w8p_block_bytes(size_t K) { return (K + 31) / 32 * 32 * R8; }

/* Rows n0..n0+nr-1; pk: their packed block (nr = R8), or NULL for the plain layout.
 * The two layouts keep their own addressing (row pointers; constant chunk
 * strides): one base + r·rs + chunk·cs formula with run-time strides ran
 * 10-20% slower warm (512x4096, both layouts, alternated runs). */
QK_INLINE void w8s_rows(const qk_matmul_args *a, size_t n0, size_t nr, size_t pf, const uint8_t *pk) {
    const qk_qmat *w = a->w;
    size_t K = a->K, g = a->group, ng = K / g, ss = w->scale_type == QK_SCALE_F16 ? 2 : 4;
    const float *x = a->x;
    __m512 acc[R8], part[R8];
    const uint8_t *codes[R8];
    for (size_t r = 0; r < nr; r++) {
        acc[r] = _mm512_setzero_ps();
        codes[r] = w->codes + (n0 + r) * w->row_bytes;
    }
    float sc[R8][16]; /* the scales of groups j..j+15 of each row, as f32 */
    for (size_t j = 0; j < ng; j++) {
        size_t k = j * g, e = k + g;
        if (j % 16 == 0)
            for (size_t r = 0; r < nr; r++) {
                size_t i = (n0 + r) * ng + j;
                /* the scales a chunk further ahead than the codes (past the row's end, nr rows
                 * below): without it every chunk of scales is a demand miss from DRAM */
                size_t ahead = (pk ? pf / R8 : pf) / g + 16, jp = j + ahead; /* pf / R8: the rows' share of the packed stream */
                _mm_prefetch((const char *)w->scales + (i + ahead + (jp >= ng ? (nr - 1) * ng : 0)) * ss, _MM_HINT_T0);
                _mm512_storeu_ps(sc[r], w->scale_type == QK_SCALE_F16 ? qk512_load16_ph((const uint16_t *)w->scales + i, ng - j)
                                                                      : qk512_load16_ps((const float *)w->scales + i, ng - j));
            }
        for (size_t r = 0; r < nr; r++) part[r] = _mm512_setzero_ps();
        for (; k + 32 <= e; k += 32) {
            __m512 x0 = _mm512_loadu_ps(x + k), x1 = _mm512_loadu_ps(x + k + 16);
            const uint8_t *c = pk ? pk + k * R8 : NULL; /* chunk k / 32 */
            if (pk)
                for (size_t l = 0; l < 32 * R8; l += 64) _mm_prefetch((const char *)c + pf + l, _MM_HINT_T0);
            for (size_t r = 0; r < nr; r++) {
                const uint8_t *p = pk ? c + 32 * r : codes[r] + k;
                if (!pk && k % 64 == 0) {
                    size_t o = k + pf;
                    _mm_prefetch((const char *)codes[r] + o + (o >= w->row_bytes ? (nr - 1) * w->row_bytes : 0), _MM_HINT_T0);
                }
                part[r] = _mm512_fmadd_ps(widen8(p), x0, part[r]);
                part[r] = _mm512_fmadd_ps(widen8(p + 16), x1, part[r]);
            }
        }
        for (; k < e; k += 16) {
            __mmask16 m = qk512_mask16(e - k);
            __m512 x0 = _mm512_maskz_loadu_ps(m, x + k);
            for (size_t r = 0; r < nr; r++) {
                const uint8_t *p = pk ? pk + (k / 32) * 32 * R8 + 32 * r + k % 32 : codes[r] + k;
                __m512 q = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, p)));
                part[r] = _mm512_fmadd_ps(q, x0, part[r]);
            }
        }
        for (size_t r = 0; r < nr; r++)
            acc[r] = _mm512_fmadd_ps(part[r], _mm512_set1_ps(sc[r][j % 16]), acc[r]);
    }
    for (size_t r = 0; r < nr; r++) a->y[n0 + r] = _mm512_reduce_add_ps(acc[r]);
}

void qk_gemv_w8s_a32__avx512(const qk_matmul_args *a) {
    size_t n = 0;
    size_t pf = a->K <= 8192 ? 2048 : 1024;
    for (; n + R8 <= a->N; n += R8) w8s_rows(a, n, R8, pf, NULL);
    for (; n < a->N; n++) w8s_rows(a, n, 1, 1024, NULL);
}

size_t qk_gemv_w8s_a32_1x8__avx512_pack_size(const qk_qmat *w) {
    size_t b = w->rows / R8 * w8p_block_bytes(w->cols);
    return b ? b : 64;
}

void qk_gemv_w8s_a32_1x8__avx512_pack(const qk_qmat *w, void *packed) {
    size_t K = w->cols, bb = w8p_block_bytes(K);
    for (size_t n0 = 0; n0 + R8 <= w->rows; n0 += R8) {
        uint8_t *blk = (uint8_t *)packed + n0 / R8 * bb;
        memset(blk, 0, bb);
        for (size_t r = 0; r < R8; r++)
            for (size_t k = 0; k < K; k += 32)
                memcpy(blk + k * R8 + 32 * r, w->codes + (n0 + r) * w->row_bytes + k, K - k < 32 ? K - k : 32);
    }
}

size_t qk_gemv_w8s_a32_1x8__avx512_packed_offset(const qk_qmat *w, size_t n0) { return n0 / R8 * w8p_block_bytes(w->cols); }

void qk_gemv_w8s_a32_1x8__avx512(const qk_matmul_args *a) {
    size_t n = 0, bb = w8p_block_bytes(a->K);
    for (; n + R8 <= a->N; n += R8) w8s_rows(a, n, R8, W8P_PF, (const uint8_t *)a->wp + n / R8 * bb);
    for (; n < a->N; n++) w8s_rows(a, n, 1, 1024, NULL);
}

QK_INLINE void q8_0_rows(const qk_matmul_args *a, size_t n0, size_t nr) {
    const qk_qmat *w = a->w;
    size_t nb = a->K / 32;
    const float *x = a->x;
    __m512 acc[R];
    const uint8_t *blk[R];
    float d[(R > 4 ? R : 4) * DB];
    for (size_t r = 0; r < nr; r++) {
        acc[r] = _mm512_setzero_ps();
        blk[r] = w->codes + (n0 + r) * w->row_bytes;
    }
    for (size_t b0 = 0; b0 < nb; b0 += DB) {
        size_t n = nb - b0 < DB ? nb - b0 : DB;
        block_scales(blk, nr, b0, n, QK_Q8_0_BYTES, d);
        for (size_t i = 0; i < n; i++) {
            size_t b = b0 + i;
            __m512 x0 = _mm512_loadu_ps(x + 32 * b), x1 = _mm512_loadu_ps(x + 32 * b + 16);
            for (size_t r = 0; r < nr; r++) {
                const uint8_t *p = blk[r] + b * QK_Q8_0_BYTES;
                PREFETCH_ROW(blk[r], b * QK_Q8_0_BYTES, w->row_bytes, nr);
                __m512 part = _mm512_mul_ps(widen8(p + 2), x0);
                part = _mm512_fmadd_ps(widen8(p + 18), x1, part);
                acc[r] = _mm512_fmadd_ps(part, _mm512_set1_ps(d[r * DB + i]), acc[r]);
            }
        }
    }
    for (size_t r = 0; r < nr; r++) a->y[n0 + r] = _mm512_reduce_add_ps(acc[r]);
}

void qk_gemv_q8_0_a32__avx512(const qk_matmul_args *a) {
    size_t n = 0;
    for (; n + R <= a->N; n += R) q8_0_rows(a, n, R);
    for (; n < a->N; n++) q8_0_rows(a, n, 1);
}
