/* Drivers of the x86 weight and activation quantizers, shared by the avx2 and
 * avx512 tiers: the order in which chunks of CHUNK consecutive groups (row
 * major across rows) are visited, the software pipeline (pass 1 of chunk
 * c+1 issued before pass 2 of chunk c, so the out-of-order core hides the
 * reductions' and divisions' latency behind the code arithmetic), the
 * fixed-g specializations (g = 32/64/128/256) and the general path for the
 * remaining groups. No vector code here: it is compiled with the flags of
 * the tier that includes it, from that tier's primitives.
 *
 * The including file (one tier) defines, before including this header:
 *   CHUNK                     groups per chunk (8 on ymm, 16 on zmm)
 *   qd_mask                   the type of a set of CHUNK groups (int, __mmask16)
 *   QD_GROUP_PTRS             the tier's qk_*_group_ptrs
 * and, with QD_WEIGHTS (weight quantization, qk_qmat):
 *   sym_stats(p, g, qmax, out, G0, ids, bad) -> qd_mask   pass 1, fixed g: scales
 *                             of the CHUNK groups stored, 1/scale in ids; the finite groups
 *   sym_emit(p, g, w8, clamp, out, G0, ids, nt)           pass 2, fixed g, all groups finite
 *   sym_partial(p, g, w8, out, G0, ids, live, bad)        pass 2 of the live groups only
 *   sym_general(p, n, g, w8, out, G0, bad)                any g, n <= CHUNK groups, both passes
 *   w4a_stats(p, g, out, G0, ids, ms, bad) -> qd_mask     pass 1, fixed g; 0 when the chunk
 *                             must take w4a_general (a group holds NaN/Inf), else all groups
 *   w4a_emit(p, g, clamp, out, G0, ids, ms, nt)           pass 2, fixed g
 *   w4a_general(p, n, g, out, G0, bad)                    any g, n <= CHUNK groups
 *   QD_W4A_CLAMP              1 when w4a_emit needs a separate f16-scale (clamping) variant
 *   QD_SYM_PTRS_AHEAD         1: w4s/w8s make a chunk's group pointers an iteration before its
 *                             pass 1, 0: just before
 *   QD_W4A_SPLIT              (defined) w4a with g <= 64 splits pass 1 in two, each run a whole
 *                             pass 2 apart: w4a_part(p, g) -> w4a_part_t (reads the chunk),
 *                             w4a_finish(part, p, g, out, G0, ids, ms, bad) -> qd_mask (checks,
 *                             scales; returns as w4a_stats)
 *   sym_fused(cur, nxt, g, codes, stats, w8, clamp, id, dst, nt) -> uint32_t
 *                             g % 64 == 0: when codes, pass 2 of group cur (codes with 1/scale
 *                             id to dst); when stats, pass 1 of group nxt in the same loop
 *                             (returns its largest |x| bit pattern)
 *   w4a_fused(cur, nxt, g, codes, stats, clamp, m, id, dst, nt, &mn, &mx) -> int
 *                             the same for w4a: min and max of nxt, returns 1 when nxt holds NaN/Inf
 *   QD_PTRS_AT(b, g, p)       with QD_AT_BASE or QD_W4A_AT: the CHUNK group pointers of the chunk
 *                             at base b (for the NaN/Inf paths)
 *   QD_W4A_AT                 (defined) w4a, g = 32/64/128, chunks within rows: addressed from
 *                             their base b (never NULL), with w4a_part_at(b, g),
 *                             w4a_finish_at(part, b, g, out, G0, ids, ms, bad) and
 *                             w4a_emit_at(b, g, clamp, out, G0, ids, ms, nt) (as the above)
 *   block_stats(p, n, q4, ids, hs, bad) -> qd_mask        q4_0/q8_0 pass 1 over n <= CHUNK blocks
 *                             (without QD_BLOCK_SPLIT)
 *   block_emit(p, n, q4, codes, B0, ids, hs, live)        q4_0/q8_0 pass 2
 *   QD_BLOCK_SPLIT            (defined) q4_0/q8_0 split pass 1 as QD_W4A_SPLIT does, with
 *                             block_part(p, n, q4) -> block_part_t and
 *                             block_finish(part, p, n, q4, ids, hs, bad) -> qd_mask (as block_stats)
 *   QD_AT_BASE                1: sym_stats and sym_emit take a chunk base b after p (the groups
 *                             are then read from b + i·g, p may be NULL; or b NULL), and w4s/w8s
 *                             chunks within rows are addressed from their bases; 0 (default):
 *                             they take p alone
 *   QD_BLOCK_AT               (defined) q4_0/q8_0 inputs that fit a cache take blocks_at, with
 *                             block_stats_at(b, q4, ids, hs, bad) -> qd_mask (pass 1 of the CHUNK
 *                             blocks from b on, as block_stats) and
 *                             block_emit_at(b, q4, dst, ids, hs, live) (pass 2, as block_emit, the
 *                             chunk's codes at dst); b is never NULL (qd_nonnull)
 * and, with QD_ACT (activation quantization, qk_qact):
 *   act_stats(p, g, qmax, q8_0, out, G0, ids, bad) -> int pass 1, fixed g; 0 on NaN/Inf
 *   act_emit(p, g, out, G0, ids)                          pass 2, fixed g
 *   act_general(p, n, g, qmax, q8_0, out, G0, bad)        any g, n <= CHUNK groups
 * p holds CHUNK group pointers; w8: w8s (else w4s); clamp: f16 scales (the
 * reference's clamp can act); nt: write the codes with non-temporal stores.
 * QD_TIER (avx2, avx512) names the listed kernels this header then defines:
 * qk_quantize_<format>__<tier> (QD_WEIGHTS), qk_actquant_<rule>__<tier> (QD_ACT). */
#ifndef QK_X86_QUANT_DRIVER_H
#define QK_X86_QUANT_DRIVER_H

#ifndef QK_INLINE
#define QK_INLINE static inline __attribute__((always_inline))
#endif

#define QD_FULL ((qd_mask)((1u << CHUNK) - 1u))
#define QD_CAT_(stem, tier) stem##__##tier
#define QD_CAT(stem, tier) QD_CAT_(stem, tier)
#define QD_KERNEL(stem) QD_CAT(stem, QD_TIER)

/* The general path for groups done.. total - 1 of x (ng groups of g per row,
 * rows ldx floats apart), CHUNK at a time: call sees p (the group pointers),
 * n (how many) and G0 (the first group's index). */
#define QD_GENERAL_TAIL(x, ldx, g, ng, done, total, call)                                                                        \
    do {                                                                                                                          \
        size_t r_ = (done) / (ng), j_ = (done) % (ng);                                                                            \
        for (size_t G0 = (done); G0 < (total); G0 += CHUNK) {                                                                     \
            size_t n = (total) - G0 < CHUNK ? (total) - G0 : CHUNK;                                                               \
            const float *p[CHUNK];                                                                                                \
            QD_GROUP_PTRS(x, ldx, g, ng, &r_, &j_, n, p);                                                                         \
            call;                                                                                                                 \
        }                                                                                                                         \
    } while (0)

/* The pipelines that keep three chunks' pointers in flight cycle through
 * slots 0, 1, 2: the slot after i. */
QK_INLINE size_t qd_next3(size_t i) { return i == 2 ? 0 : i + 1; }

/* The next n groups' pointers (as QD_GROUP_PTRS) from the chunk's first
 * group G0: when every chunk is full and none crosses a row (contig:
 * ng % CHUNK == 0) they are base + i·g, a few vector instructions instead of
 * a walk of (row, column) with a multiply and a branch per group (which
 * quantize_blocks, its n not a constant, does not unroll). */
#define QD_PTRS(x, ldx, g, ng, r, j, n, p, contig, G0)                                                                             \
    do {                                                                                                                          \
        if (contig) {                                                                                                             \
            const float *b_ = (x) + ((G0) / (ng)) * (ldx) + ((G0) % (ng)) * (g);                                                  \
            for (size_t i_ = 0; i_ < CHUNK; i_++) (p)[i_] = b_ + i_ * (g);                                                        \
        } else {                                                                                                                  \
            QD_GROUP_PTRS(x, ldx, g, ng, r, j, n, p);                                                                             \
        }                                                                                                                         \
    } while (0)

#ifdef QD_WEIGHTS

#ifndef QD_AT_BASE
#define QD_AT_BASE 0
#endif
#if QD_AT_BASE
#define QD_B(f, p, b, ...) f(p, b, __VA_ARGS__)
#else
#define QD_B(f, p, b, ...) f(p, __VA_ARGS__)
#endif

/* A chunk base b the compiler then knows is not NULL: the tier's group
 * functions (qk512_at) fold to b + i·g, no test. */
QK_INLINE const float *qd_nonnull(const float *b) {
    if (!b) __builtin_unreachable();
    return b;
}
/* The bases of consecutive chunks that do not cross rows (cpr chunks of
 * step floats a row), walked without a division per chunk: computing each
 * as x + (c / cpr)·ldx + (c % cpr)·step (ldx and ng are not constants) took
 * a tenth more time at g = 32. */
typedef struct {
    const float *next, *row;
    size_t col, cpr, step, ldx;
} qd_bases;
QK_INLINE const float *qd_next_base(qd_bases *w) {
    const float *b = w->next;
    w->next += w->step;
    if (++w->col == w->cpr) {
        w->col = 0;
        w->row += w->ldx;
        w->next = w->row;
    }
    return qd_nonnull(b);
}

/* Inputs of at least QK_STREAM_MIN_BYTES write their codes (w4s, w8s, w4a) with
 * non-temporal stores when the code rows keep whole aligned lines: the code
 * lines are not read for ownership, which leaves the read stream more of the
 * memory bandwidth. */
static inline int use_stream(const qk_qmat *out) {
    return out->rows * out->cols * sizeof(float) >= QK_STREAM_MIN_BYTES && ((uintptr_t)out->codes & 63) == 0 && out->row_bytes % 64 == 0;
}

/* w4s, w8s: the full chunks of a fixed g (at: chunks within rows, addressed
 * from their bases; else by their group pointers). Returns the groups done.
 * From their bases (sym_at), against pointers made base + i·g, qkbench A/B
 * (16x4096 warm): w4s g = 32 0.87, g = 128 0.85; w8s 0.94, 0.90 of the time;
 * and walked without a division (qd_next_base), a harness over qk_quantize
 * (16x4096 from L2): w4s g = 32 96 -> 90 cycles a chunk, w8s 98 -> 94. */
QK_INLINE size_t sym_chunks_(const float *x, size_t ldx, size_t g, size_t ng, size_t total, int w8, int clamp, const qk_qmat *out,
                             int *bad, int at) {
    (void)at; /* read only with QD_AT_BASE */
    const float qmax = w8 ? 127.0f : 7.0f;
    size_t nfull = total / CHUNK, r = 0, j = 0;
    if (!nfull) return 0;
    int nt = use_stream(out);
#if QD_AT_BASE
    if (at) { /* chunks within rows: from their bases (qd_next_base), no pointers but on the NaN/Inf path */
        qd_bases w = {x, x, 0, ng / CHUNK, CHUNK * g, ldx};
        float ids[2][CHUNK];
        qd_mask live[2];
        const float *b0 = qd_next_base(&w), *b1 = b0;
        live[0] = sym_stats(NULL, b0, g, qmax, out, 0, ids[0], bad);
        for (size_t c = 0; c < nfull; c++, b0 = b1) {
            size_t cur = c & 1, nxt = cur ^ 1;
            if (c + 1 < nfull) live[nxt] = sym_stats(NULL, b1 = qd_next_base(&w), g, qmax, out, (c + 1) * CHUNK, ids[nxt], bad);
            if (live[cur] == QD_FULL) {
                sym_emit(NULL, b0, g, w8, clamp, out, c * CHUNK, ids[cur], nt);
            } else { /* NaN/Inf in the chunk */
                const float *p[CHUNK];
                QD_PTRS_AT(b0, g, p);
                sym_partial(p, g, w8, out, c * CHUNK, ids[cur], live[cur], bad);
            }
        }
        if (nt) _mm_sfence();
        return nfull * CHUNK;
    }
#endif
#if QD_SYM_PTRS_AHEAD
    const float *p[3][CHUNK]; /* chunk c's pointers in p[c % 3], made an iteration before its pass 1 */
    float ids[2][CHUNK];
    qd_mask live[2];
    QD_GROUP_PTRS(x, ldx, g, ng, &r, &j, CHUNK, p[0]);
    live[0] = QD_B(sym_stats, p[0], NULL, g, qmax, out, 0, ids[0], bad);
    if (nfull > 1) QD_GROUP_PTRS(x, ldx, g, ng, &r, &j, CHUNK, p[1]);
    for (size_t c = 0, pc = 0; c < nfull; c++, pc = qd_next3(pc)) {
        size_t cur = c & 1, nxt = cur ^ 1, pn = qd_next3(pc), pf = qd_next3(pn);
        if (c + 2 < nfull) QD_GROUP_PTRS(x, ldx, g, ng, &r, &j, CHUNK, p[pf]);
        if (c + 1 < nfull) live[nxt] = QD_B(sym_stats, p[pn], NULL, g, qmax, out, (c + 1) * CHUNK, ids[nxt], bad);
        if (live[cur] == QD_FULL) QD_B(sym_emit, p[pc], NULL, g, w8, clamp, out, c * CHUNK, ids[cur], nt);
        else sym_partial(p[pc], g, w8, out, c * CHUNK, ids[cur], live[cur], bad); /* NaN/Inf in the chunk */
    }
#else
    const float *p[2][CHUNK];
    float ids[2][CHUNK];
    qd_mask live[2];
    QD_GROUP_PTRS(x, ldx, g, ng, &r, &j, CHUNK, p[0]);
    live[0] = QD_B(sym_stats, p[0], NULL, g, qmax, out, 0, ids[0], bad);
    for (size_t c = 0; c < nfull; c++) {
        size_t cur = c & 1, nxt = cur ^ 1;
        if (c + 1 < nfull) {
            QD_GROUP_PTRS(x, ldx, g, ng, &r, &j, CHUNK, p[nxt]);
            live[nxt] = QD_B(sym_stats, p[nxt], NULL, g, qmax, out, (c + 1) * CHUNK, ids[nxt], bad);
        }
        if (live[cur] == QD_FULL) QD_B(sym_emit, p[cur], NULL, g, w8, clamp, out, c * CHUNK, ids[cur], nt);
        else sym_partial(p[cur], g, w8, out, c * CHUNK, ids[cur], live[cur], bad); /* NaN/Inf in the chunk */
    }
#endif
    if (nt) _mm_sfence();
    return nfull * CHUNK;
}

/* Long groups (g > 256, a multiple of 64; per channel, g = K) one at a
 * time, pass 2 of group G fused with pass 1 of group G+1: one continuous
 * stream from memory (group G is re-read from L1/L2), where two passes
 * over CHUNK long groups would leave the memory idle during the second.
 * The scales are the reference's scalar code. */
#define QD_LONG_GROUP(g) ((g) > 256 && (g) % 64 == 0)


QK_INLINE size_t sym_long(const float *x, size_t ldx, size_t g, size_t ng, size_t total, int w8, int clamp, const qk_qmat *out,
                          int *bad) {
    const float qmax = w8 ? 127.0f : 7.0f;
    const size_t bpg = w8 ? g : g / 2;
    size_t r = 0, j = 0;
    int nt = use_stream(out);
    const float *cur, *nxt;
    QD_GROUP_PTRS(x, ldx, g, ng, &r, &j, 1, &nxt);
    uint32_t amax = sym_fused(NULL, nxt, g, 0, 1, w8, clamp, 0.0f, NULL, nt);
    for (size_t G = 0; G < total; G++) {
        cur = nxt;
        int more = G + 1 < total, live = amax < 0x7f800000u;
        if (more) QD_GROUP_PTRS(x, ldx, g, ng, &r, &j, 1, &nxt);
        if (!live) {
            *bad |= QK_ROW_NONFINITE;
            if (more) amax = sym_fused(NULL, nxt, g, 0, 1, w8, clamp, 0.0f, NULL, nt);
            continue;
        }
        float a;
        memcpy(&a, &amax, sizeof a);
        float id = qk_inv_scale(qk_store_scale(out->scales, G, out->scale_type, a / qmax, bad));
        if (more) amax = sym_fused(cur, nxt, g, 1, 1, w8, clamp, id, out->codes + G * bpg, nt);
        else sym_fused(cur, NULL, g, 1, 0, w8, clamp, id, out->codes + G * bpg, nt);
    }
    if (nt) _mm_sfence();
    return total;
}

/* One specialization per g = 32/64/128/256 and for long groups (w8, clamp constant). */
QK_INLINE size_t sym_fast_(const float *x, size_t ldx, size_t g, size_t ng, size_t total, int w8, int clamp, const qk_qmat *out,
                           int *bad, int at) {
    switch (g) {
    case 32: return sym_chunks_(x, ldx, 32, ng, total, w8, clamp, out, bad, at);
    case 64: return sym_chunks_(x, ldx, 64, ng, total, w8, clamp, out, bad, at);
    case 128: return sym_chunks_(x, ldx, 128, ng, total, w8, clamp, out, bad, at);
    case 256: return sym_chunks_(x, ldx, 256, ng, total, w8, clamp, out, bad, at);
    default: return !at && QD_LONG_GROUP(g) ? sym_long(x, ldx, g, ng, total, w8, clamp, out, bad) : 0;
    }
}
QK_INLINE size_t sym_fast(const float *x, size_t ldx, size_t g, size_t ng, size_t total, int w8, int clamp, const qk_qmat *out,
                          int *bad) {
    return sym_fast_(x, ldx, g, ng, total, w8, clamp, out, bad, 0);
}

#if QD_AT_BASE
/* The chunks addressed from their bases, when they do not cross
 * rows, in a function of their own: qkbench A/B (16x4096 warm, 3 rounds),
 * with these chunk loops inlined beside the others instead, per channel
 * (the long groups, code unchanged) took 5% more time. */
static __attribute__((noinline)) size_t sym_at(const float *x, size_t ldx, size_t g, size_t ng, size_t total, int w8, int clamp,
                                               const qk_qmat *out, int *bad) {
    if (w8 && clamp) return sym_fast_(x, ldx, g, ng, total, 1, 1, out, bad, 1);
    if (w8) return sym_fast_(x, ldx, g, ng, total, 1, 0, out, bad, 1);
    if (clamp) return sym_fast_(x, ldx, g, ng, total, 0, 1, out, bad, 1);
    return sym_fast_(x, ldx, g, ng, total, 0, 0, out, bad, 1);
}
#endif

static inline int quantize_sym(const float *x, size_t ldx, const qk_qmat *out, int w8) {
    size_t g = out->group, ng = out->cols / g, total = out->rows * ng, done;
    int bad = 0, clamp = out->scale_type == QK_SCALE_F16;
#if QD_AT_BASE
    if (g <= 256 && ng % CHUNK == 0) done = sym_at(x, ldx, g, ng, total, w8, clamp, out, &bad);
    else
#endif
    if (w8 && clamp) done = sym_fast(x, ldx, g, ng, total, 1, 1, out, &bad);
    else if (w8) done = sym_fast(x, ldx, g, ng, total, 1, 0, out, &bad);
    else if (clamp) done = sym_fast(x, ldx, g, ng, total, 0, 1, out, &bad);
    else done = sym_fast(x, ldx, g, ng, total, 0, 0, out, &bad);
    QD_GENERAL_TAIL(x, ldx, g, ng, done, total, sym_general(p, n, g, w8, out, G0, &bad));
    return bad;
}

/* w4a: the full chunks of a fixed g, each group by its pointer (chunks that
 * cross rows; with QD_W4A_AT, g = 256, whose chunks took 5-10% more time
 * from their bases). Returns the groups done. */
QK_INLINE size_t w4a_chunks(const float *x, size_t ldx, size_t g, size_t ng, size_t total, int clamp, const qk_qmat *out, int *bad) {
    size_t nfull = total / CHUNK, r = 0, j = 0;
    if (!nfull) return 0;
    int nt = use_stream(out);
#ifdef QD_W4A_SPLIT
    /* g <= 64: pass 1 in two halves, iteration c reads chunk c+2 (w4a_part),
     * finishes chunk c+1's scales (w4a_finish) and writes chunk c's codes
     * (16x4096 warm, 1 thread: g32 1.10x, g64 1.04x; g128 0.98x, g256 0.92x) */
    if (g <= 64) {
        const float *p[3][CHUNK];
        float ids[2][CHUNK], ms[2][CHUNK];
        qd_mask live[2];
        w4a_part_t part[2];
        QD_GROUP_PTRS(x, ldx, g, ng, &r, &j, CHUNK, p[0]);
        live[0] = w4a_finish(w4a_part(p[0], g), p[0], g, out, 0, ids[0], ms[0], bad);
        if (nfull > 1) {
            QD_GROUP_PTRS(x, ldx, g, ng, &r, &j, CHUNK, p[1]);
            part[1] = w4a_part(p[1], g);
        }
        for (size_t c = 0, pc = 0; c < nfull; c++, pc = qd_next3(pc)) {
            size_t cur = c & 1, nxt = cur ^ 1, pn = qd_next3(pc), pf = qd_next3(pn);
            if (c + 2 < nfull) {
                QD_GROUP_PTRS(x, ldx, g, ng, &r, &j, CHUNK, p[pf]);
                part[cur] = w4a_part(p[pf], g); /* chunk c+2 */
            }
            if (c + 1 < nfull) live[nxt] = w4a_finish(part[nxt], p[pn], g, out, (c + 1) * CHUNK, ids[nxt], ms[nxt], bad);
            if (live[cur] == QD_FULL) w4a_emit(p[pc], g, clamp, out, c * CHUNK, ids[cur], ms[cur], nt);
            else w4a_general(p[pc], CHUNK, g, out, c * CHUNK, bad); /* NaN/Inf in the chunk */
        }
        if (nt) _mm_sfence();
        return nfull * CHUNK;
    }
#endif
    const float *p[2][CHUNK];
    float ids[2][CHUNK], ms[2][CHUNK];
    qd_mask live[2];
    QD_GROUP_PTRS(x, ldx, g, ng, &r, &j, CHUNK, p[0]);
    live[0] = w4a_stats(p[0], g, out, 0, ids[0], ms[0], bad);
    for (size_t c = 0; c < nfull; c++) {
        size_t cur = c & 1, nxt = cur ^ 1;
        if (c + 1 < nfull) {
            QD_GROUP_PTRS(x, ldx, g, ng, &r, &j, CHUNK, p[nxt]);
            live[nxt] = w4a_stats(p[nxt], g, out, (c + 1) * CHUNK, ids[nxt], ms[nxt], bad);
        }
        if (live[cur] == QD_FULL) w4a_emit(p[cur], g, clamp, out, c * CHUNK, ids[cur], ms[cur], nt);
        else w4a_general(p[cur], CHUNK, g, out, c * CHUNK, bad); /* NaN/Inf in the chunk */
    }
    if (nt) _mm_sfence();
    return nfull * CHUNK;
}

#ifdef QD_W4A_AT
/* w4a, g = 32, 64, 128, when no chunk crosses a row (ng % CHUNK == 0): the
 * pipelines of w4a_chunks (split at g <= 64), each chunk addressed from its
 * base (loads at fixed offsets from one register) instead of by CHUNK group
 * pointers walked, stored and reloaded for every chunk (about a quarter of
 * the instructions of a g = 32 chunk). A harness calling qk_quantize_with
 * on 16x4096 from L2, pinned, best of 9 (cycles at 3.5 GHz a chunk of 16
 * groups, before -> after): g = 32 125 -> 95, g = 64 205 -> 177, g = 128
 * 394 -> 360; g = 256 from bases took 5-10% more time than by pointers. */
QK_INLINE void w4a_at_general(const float *b, size_t g, const qk_qmat *out, size_t G0, int *bad) {
    const float *p[CHUNK];
    QD_PTRS_AT(b, g, p);
    w4a_general(p, CHUNK, g, out, G0, bad); /* NaN/Inf in the chunk */
}
QK_INLINE size_t w4a_at_(const float *x, size_t ldx, size_t g, size_t ng, size_t total, int clamp, int nt, const qk_qmat *out,
                         int *bad) {
    const size_t nfull = total / CHUNK;
    qd_bases w = {x, x, 0, ng / CHUNK, CHUNK * g, ldx};
    float ids[2][CHUNK], ms[2][CHUNK];
    qd_mask live[2];
    if (!nfull) return 0;
    const float *b0 = qd_next_base(&w), *b1 = nfull > 1 ? qd_next_base(&w) : b0, *b2 = b1; /* chunks c, c+1, c+2 */
    live[0] = w4a_finish_at(w4a_part_at(b0, g), b0, g, out, 0, ids[0], ms[0], bad);
    /* iteration c reads chunk c+2, finishes c+1's scales, writes c's codes: at g <= 64, and at
     * g = 128 on inputs that stream from memory (nt), whose codes pass prefetches 4 chunks ahead
     * (QK_QPF_FAR), so chunk c+2 is in flight when pass 1 reads it. tools/ab.py --rounds 7
     * --pin 0, avx512, 1024x4096 from DRAM g = 128: 0.85 of the time (seven rounds 0.79-0.91;
     * 69-77% of the read of its buffers in the fifteenth and sixteenth samples, 91% after).
     * With the split at g = 128 on every input, inputs under QK_STREAM_MIN_BYTES, whose codes
     * pass prefetches only 2 chunks ahead, took 1.06x (16x4096 warm) and 1.6x (16x4096 from
     * DRAM), so they keep pass 1 of chunk c+1 right before chunk c's codes. */
    if (g <= 64 || nt) {
        w4a_part_t part[2];
        if (nfull > 1) part[1] = w4a_part_at(b1, g);
        for (size_t c = 0; c < nfull; c++, b0 = b1, b1 = b2) {
            size_t cur = c & 1, nxt = cur ^ 1;
            if (c + 2 < nfull) part[cur] = w4a_part_at(b2 = qd_next_base(&w), g);
            if (c + 1 < nfull) live[nxt] = w4a_finish_at(part[nxt], b1, g, out, (c + 1) * CHUNK, ids[nxt], ms[nxt], bad);
            if (live[cur] == QD_FULL) w4a_emit_at(b0, g, clamp, out, c * CHUNK, ids[cur], ms[cur], nt);
            else w4a_at_general(b0, g, out, c * CHUNK, bad);
        }
    } else { /* iteration c does chunk c+1's pass 1 and c's codes */
        for (size_t c = 0; c < nfull; c++) {
            size_t cur = c & 1, nxt = cur ^ 1;
            if (c + 1 < nfull) live[nxt] = w4a_finish_at(w4a_part_at(b1, g), b1, g, out, (c + 1) * CHUNK, ids[nxt], ms[nxt], bad);
            if (live[cur] == QD_FULL) w4a_emit_at(b0, g, clamp, out, c * CHUNK, ids[cur], ms[cur], nt);
            else w4a_at_general(b0, g, out, c * CHUNK, bad);
            b0 = b1;
            if (c + 2 < nfull) b1 = qd_next_base(&w);
        }
    }
    if (nt) _mm_sfence();
    return nfull * CHUNK;
}

/* One specialization per g, clamp and nt (non-temporal stores, a constant
 * in the code loop), in one function of their own (as sym_at; a function
 * per specialization ran g = 32 about 5% slower in the harness). */
static __attribute__((noinline)) size_t w4a_at(const float *x, size_t ldx, size_t g, size_t ng, size_t total, int clamp,
                                               const qk_qmat *out, int *bad) {
#define QD_W4A_AT_G(G)                                                                                                            \
    (use_stream(out) ? (clamp ? w4a_at_(x, ldx, G, ng, total, 1, 1, out, bad) : w4a_at_(x, ldx, G, ng, total, 0, 1, out, bad))    \
                     : (clamp ? w4a_at_(x, ldx, G, ng, total, 1, 0, out, bad) : w4a_at_(x, ldx, G, ng, total, 0, 0, out, bad)))
    switch (g) {
    case 32: return QD_W4A_AT_G(32);
    case 64: return QD_W4A_AT_G(64);
    default: return QD_W4A_AT_G(128);
    }
#undef QD_W4A_AT_G
}
#endif

/* w4a: long groups one at a time (as sym_long). */
QK_INLINE size_t w4a_long(const float *x, size_t ldx, size_t g, size_t ng, size_t total, int clamp, const qk_qmat *out, int *bad) {
    size_t r = 0, j = 0;
    int nt = use_stream(out);
    const float *cur, *nxt;
    float mn, mx;
    QD_GROUP_PTRS(x, ldx, g, ng, &r, &j, 1, &nxt);
    int nonfinite = w4a_fused(NULL, nxt, g, 0, 1, clamp, 0.0f, 0.0f, NULL, nt, &mn, &mx);
    for (size_t G = 0; G < total; G++) {
        cur = nxt;
        int more = G + 1 < total;
        if (more) QD_GROUP_PTRS(x, ldx, g, ng, &r, &j, 1, &nxt);
        if (nonfinite) {
            *bad |= QK_ROW_NONFINITE;
            if (more) nonfinite = w4a_fused(NULL, nxt, g, 0, 1, clamp, 0.0f, 0.0f, NULL, nt, &mn, &mx);
            continue;
        }
        /* a zero extreme has the sign qk_min_z / qk_max_z give it (-0 below +0) */
        if (mn == 0.0f) mn = qk_zero_extreme(cur, g, 0);
        if (mx == 0.0f) mx = qk_zero_extreme(cur, g, 1);
        float d = (mx - mn) / 15.0f;
        if (!isfinite(d)) *bad |= QK_ROW_RANGE; /* max - min overflows f32 */
        float m = qk_store_scale(out->mins, G, out->scale_type, mn, bad);
        float id = qk_inv_scale(qk_store_scale(out->scales, G, out->scale_type, d, bad));
        if (more) nonfinite = w4a_fused(cur, nxt, g, 1, 1, clamp, m, id, out->codes + G * (g / 2), nt, &mn, &mx);
        else w4a_fused(cur, NULL, g, 1, 0, clamp, m, id, out->codes + G * (g / 2), nt, &mn, &mx);
    }
    if (nt) _mm_sfence();
    return total;
}

QK_INLINE size_t w4a_fast(const float *x, size_t ldx, size_t g, size_t ng, size_t total, int clamp, const qk_qmat *out, int *bad) {
    switch (g) {
    case 32: return w4a_chunks(x, ldx, 32, ng, total, clamp, out, bad);
    case 64: return w4a_chunks(x, ldx, 64, ng, total, clamp, out, bad);
    case 128: return w4a_chunks(x, ldx, 128, ng, total, clamp, out, bad);
    case 256: return w4a_chunks(x, ldx, 256, ng, total, clamp, out, bad);
    default: return QD_LONG_GROUP(g) ? w4a_long(x, ldx, g, ng, total, clamp, out, bad) : 0;
    }
}

QK_INLINE int quantize_w4a(const float *x, size_t ldx, const qk_qmat *out) {
    size_t g = out->group, ng = out->cols / g, total = out->rows * ng, done;
    int bad = 0;
#ifdef QD_W4A_AT
    if ((g == 32 || g == 64 || g == 128) && ng % CHUNK == 0) done = w4a_at(x, ldx, g, ng, total, out->scale_type == QK_SCALE_F16, out, &bad);
    else
#endif
    if (QD_W4A_CLAMP && out->scale_type == QK_SCALE_F16) done = w4a_fast(x, ldx, g, ng, total, 1, out, &bad);
    else done = w4a_fast(x, ldx, g, ng, total, 0, out, &bad);
    QD_GENERAL_TAIL(x, ldx, g, ng, done, total, w4a_general(p, n, g, out, G0, &bad));
    return bad;
}

#ifdef QD_BLOCK_AT
/* q4_0 / q8_0 inputs of at most QD_BLOCK_AT_MAX_BYTES whose rows hold whole
 * chunks: each chunk addressed from its base (block_stats_at, block_emit_at:
 * loads at fixed offsets, no pointer array), pass 1 of chunk c+1 in one
 * piece before pass 2 of chunk c, in a function of its own (a form inlined
 * into quantize_blocks, which found each chunk's base by a division, gained
 * nothing).
 * Against the loop below, avx512, qkbench A/B (16x4096 warm, 5 rounds,
 * medians): q8_0 0.86, q4_0 0.88 of the time. A harness over qk_quantize
 * showed gains at 2 and 128 rows too, and an earlier form slower at 4 MiB
 * (L3): the loop below, with pass 1 two chunks ahead, suits inputs that come
 * from memory. */
#define QD_BLOCK_AT_MAX_BYTES ((size_t)2 << 20)
QK_INLINE int blocks_at(const float *x, size_t ldx, size_t nb, size_t nch, const qk_qmat *out, int q4) {
    float ids[2][CHUNK];
    uint16_t hs[2][CHUNK];
    qd_mask live[2];
    int bad = 0;
    qd_bases w = {x, x, 0, nb / CHUNK, CHUNK * 32, ldx};
    const size_t chunk_bytes = CHUNK * (q4 ? QK_Q4_0_BYTES : QK_Q8_0_BYTES);
    uint8_t *dst = out->codes;
    const float *cur = qd_next_base(&w), *next = cur;
    live[0] = block_stats_at(cur, q4, ids[0], hs[0], &bad);
    for (size_t c = 0; c < nch; c++) {
        size_t now = c & 1, nxt = now ^ 1;
        if (c + 1 < nch) live[nxt] = block_stats_at(next = qd_next_base(&w), q4, ids[nxt], hs[nxt], &bad);
        if (live[now] == QD_FULL) block_emit_at(qd_nonnull(cur), q4, dst, ids[now], hs[now], QD_FULL);
        else block_emit_at(qd_nonnull(cur), q4, dst, ids[now], hs[now], live[now]); /* NaN/Inf in the chunk */
        cur = next;
        dst += chunk_bytes;
    }
    return bad;
}
static __attribute__((noinline)) int blocks_at_q4(const float *x, size_t ldx, size_t nb, size_t nch, const qk_qmat *out) {
    return blocks_at(x, ldx, nb, nch, out, 1);
}
static __attribute__((noinline)) int blocks_at_q8(const float *x, size_t ldx, size_t nb, size_t nch, const qk_qmat *out) {
    return blocks_at(x, ldx, nb, nch, out, 0);
}
#endif

#ifdef QD_BLOCK_SPLIT
/* q4_0 (q4) / q8_0: chunks of CHUNK 32-value blocks across rows, the last
 * one partial; pass 1 in two halves (block_part, block_finish): iteration c
 * reads chunk c+2, finishes chunk c+1 and writes chunk c. */
QK_INLINE int quantize_blocks(const float *x, size_t ldx, const qk_qmat *out, int q4) {
    size_t nb = out->cols / 32, total = out->rows * nb, r = 0, j = 0;
    int bad = 0;
    if (!total) return 0;
    const size_t nch = (total + CHUNK - 1) / CHUNK;
#define QD_NOF(c) (total - (c) * CHUNK < CHUNK ? total - (c) * CHUNK : CHUNK)
    const float *p[3][CHUNK];
    float ids[2][CHUNK];
    uint16_t hs[2][CHUNK];
    qd_mask live[2];
    block_part_t part[2];
    const int contig = nb % CHUNK == 0; /* then every chunk is full */
#ifdef QD_BLOCK_AT
    if (contig && total * 32 * sizeof(float) <= QD_BLOCK_AT_MAX_BYTES)
        return q4 ? blocks_at_q4(x, ldx, nb, nch, out) : blocks_at_q8(x, ldx, nb, nch, out);
#endif
    QD_PTRS(x, ldx, 32, nb, &r, &j, QD_NOF(0), p[0], contig, 0);
    live[0] = block_finish(block_part(p[0], QD_NOF(0), q4), p[0], QD_NOF(0), q4, ids[0], hs[0], &bad);
    if (nch > 1) {
        QD_PTRS(x, ldx, 32, nb, &r, &j, QD_NOF(1), p[1], contig, CHUNK);
        part[1] = block_part(p[1], QD_NOF(1), q4);
    }
    size_t c = 0, pc = 0;
    if (total * 32 * sizeof(float) < QK_STREAM_MIN_BYTES)
        /* the steady state of inputs under QK_STREAM_MIN_BYTES in a loop of its
         * own, without the end's tests, and chunk c+1 finished before chunk
         * c+2 is read (16x4096 warm, 1 thread, same process: q4_0 1.06x,
         * q8_0 1.05-1.08x; each change alone gains 1-2%). Larger inputs come
         * from memory, where reading chunk c+2 first is better (1024x4096
         * from DRAM: the early finish was 0-5% slower), so they keep the
         * loop below. */
        for (; c + 2 < nch; c++, pc = qd_next3(pc)) {
            size_t cur = c & 1, nxt = cur ^ 1, pn = qd_next3(pc), pf = qd_next3(pn);
            QD_PTRS(x, ldx, 32, nb, &r, &j, QD_NOF(c + 2), p[pf], contig, (c + 2) * CHUNK);
            live[nxt] = block_finish(part[nxt], p[pn], QD_NOF(c + 1), q4, ids[nxt], hs[nxt], &bad);
            part[cur] = block_part(p[pf], QD_NOF(c + 2), q4); /* chunk c+2 */
            block_emit(p[pc], QD_NOF(c), q4, out->codes, c * CHUNK, ids[cur], hs[cur], live[cur]);
        }
    for (; c < nch; c++, pc = qd_next3(pc)) {
        size_t cur = c & 1, nxt = cur ^ 1, pn = qd_next3(pc), pf = qd_next3(pn);
        if (c + 2 < nch) {
            QD_PTRS(x, ldx, 32, nb, &r, &j, QD_NOF(c + 2), p[pf], contig, (c + 2) * CHUNK);
            part[cur] = block_part(p[pf], QD_NOF(c + 2), q4); /* chunk c+2 */
        }
        if (c + 1 < nch) live[nxt] = block_finish(part[nxt], p[pn], QD_NOF(c + 1), q4, ids[nxt], hs[nxt], &bad);
        block_emit(p[pc], QD_NOF(c), q4, out->codes, c * CHUNK, ids[cur], hs[cur], live[cur]);
    }
#undef QD_NOF
    return bad;
}
#else
/* q4_0 (q4) / q8_0: chunks of CHUNK 32-value blocks across rows, the last
 * one partial, pass 1 of the next chunk before pass 2 of this one. */
QK_INLINE int quantize_blocks(const float *x, size_t ldx, const qk_qmat *out, int q4) {
    size_t nb = out->cols / 32, total = out->rows * nb, r = 0, j = 0;
    int bad = 0;
    if (!total) return 0;
    const float *p[2][CHUNK];
    float ids[2][CHUNK];
    uint16_t hs[2][CHUNK];
    qd_mask live[2];
    size_t n0 = total < CHUNK ? total : CHUNK;
    const int contig = nb % CHUNK == 0; /* then every chunk is full */
    QD_PTRS(x, ldx, 32, nb, &r, &j, n0, p[0], contig, 0);
    live[0] = block_stats(p[0], n0, q4, ids[0], hs[0], &bad);
    for (size_t B0 = 0; B0 < total; B0 += CHUNK) {
        size_t cur = (B0 / CHUNK) & 1, nxt = cur ^ 1, n = total - B0 < CHUNK ? total - B0 : CHUNK;
        if (B0 + CHUNK < total) {
            size_t nn = total - B0 - CHUNK < CHUNK ? total - B0 - CHUNK : CHUNK;
            QD_PTRS(x, ldx, 32, nb, &r, &j, nn, p[nxt], contig, B0 + CHUNK);
            live[nxt] = block_stats(p[nxt], nn, q4, ids[nxt], hs[nxt], &bad);
        }
        block_emit(p[cur], n, q4, out->codes, B0, ids[cur], hs[cur], live[cur]);
    }
    return bad;
}
#endif

int QD_KERNEL(qk_quantize_w4s)(const float *x, size_t ldx, const qk_qmat *out) { return quantize_sym(x, ldx, out, 0); }
int QD_KERNEL(qk_quantize_w8s)(const float *x, size_t ldx, const qk_qmat *out) { return quantize_sym(x, ldx, out, 1); }
int QD_KERNEL(qk_quantize_w4a)(const float *x, size_t ldx, const qk_qmat *out) { return quantize_w4a(x, ldx, out); }
int QD_KERNEL(qk_quantize_q4_0)(const float *x, size_t ldx, const qk_qmat *out) { return quantize_blocks(x, ldx, out, 1); }
int QD_KERNEL(qk_quantize_q8_0)(const float *x, size_t ldx, const qk_qmat *out) { return quantize_blocks(x, ldx, out, 0); }

#endif /* QD_WEIGHTS */

#ifdef QD_ACT

/* The full chunks of a fixed g. Returns the groups done. */
QK_INLINE size_t act_chunks(const float *x, size_t ldx, size_t g, size_t ng, size_t total, float qmax, int q8_0, const qk_qact *out,
                            int *bad) {
    size_t nfull = total / CHUNK, r = 0, j = 0;
    if (!nfull) return 0;
    const float *p[2][CHUNK];
    float ids[2][CHUNK];
    int ok[2];
    QD_GROUP_PTRS(x, ldx, g, ng, &r, &j, CHUNK, p[0]);
    ok[0] = act_stats(p[0], g, qmax, q8_0, out, 0, ids[0], bad);
    for (size_t c = 0; c < nfull; c++) {
        size_t cur = c & 1, nxt = cur ^ 1;
        if (c + 1 < nfull) {
            QD_GROUP_PTRS(x, ldx, g, ng, &r, &j, CHUNK, p[nxt]);
            ok[nxt] = act_stats(p[nxt], g, qmax, q8_0, out, (c + 1) * CHUNK, ids[nxt], bad);
        }
        if (ok[cur]) act_emit(p[cur], g, out, c * CHUNK, ids[cur]);
        else act_general(p[cur], CHUNK, g, qmax, q8_0, out, c * CHUNK, bad); /* NaN/Inf in the chunk */
    }
    return nfull * CHUNK;
}

/* Activation rows -> codes, scales, sums: a8/a4 (qmax 127/7), q8_0 (f16-rounded scales). */
static inline int actquant(const float *x, size_t ldx, const qk_qact *out, float qmax, int q8_0) {
    size_t g = out->group, ng = out->cols / g, total = out->rows * ng, done = 0;
    int bad = 0;
    switch (g) {
    case 32: done = act_chunks(x, ldx, 32, ng, total, qmax, q8_0, out, &bad); break;
    case 64: done = act_chunks(x, ldx, 64, ng, total, qmax, q8_0, out, &bad); break;
    case 128: done = act_chunks(x, ldx, 128, ng, total, qmax, q8_0, out, &bad); break;
    case 256: done = act_chunks(x, ldx, 256, ng, total, qmax, q8_0, out, &bad); break;
    default: break;
    }
    QD_GENERAL_TAIL(x, ldx, g, ng, done, total, act_general(p, n, g, qmax, q8_0, out, G0, &bad));
    return bad;
}

int QD_KERNEL(qk_actquant_a8)(const float *x, size_t ldx, const qk_qact *out) { return actquant(x, ldx, out, 127.0f, 0); }
int QD_KERNEL(qk_actquant_a4)(const float *x, size_t ldx, const qk_qact *out) { return actquant(x, ldx, out, 7.0f, 0); }
int QD_KERNEL(qk_actquant_q8_0)(const float *x, size_t ldx, const qk_qact *out) { return actquant(x, ldx, out, 127.0f, 1); }

#endif /* QD_ACT */

#endif /* QK_X86_QUANT_DRIVER_H */
