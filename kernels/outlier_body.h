/* The outlier-handling kernels' drivers (DESIGN §5), written once for every
 * SIMD tier: blocked FWHT, dense f32 gemm (packed register tile and
 * dot-product tile) and the int8 gemm of the outlier columns. An ISA file
 * defines the vector primitives below and includes this header once; the
 * functions it defines are qk_fwht__OB_TIER, qk_colscale__OB_TIER,
 * qk_colsplit__OB_TIER, qk_gemm_f32__OB_TIER and qk_gemm_i8__OB_TIER.
 *
 * f32 vectors of OB_W lanes (a power of two, 4 ... 16):
 *   ob_v; OB_LOAD(p) OB_STORE(p, v) OB_SET1(f) OB_ZERO() OB_ADD OB_SUB OB_MUL
 *   OB_FMA(a, b, c) = a·b + c (fused); OB_HSUM(v) the sum of the lanes;
 *   OB_LOADN(p, n) / OB_STOREN(p, n, v): the first n lanes, 0 < n < OB_W
 *   (the other lanes read as 0 / are not written);
 *   OB_FWHT_INREG(v, top): the butterflies of stride 1, 2, ... up to and
 *   including `top` (< OB_W) inside the vector, unscaled;
 *   OB_GATHER(xr, idx, n, out, zr): out[j] = xr[idx[j]] and zr[idx[j]] = 0
 *   for j < n (the outlier columns of one row).
 * f32 gemm: OB_DOT_MT x OB_DOT_NT outputs per dot-product tile (as many
 *   accumulators as the register file holds); with OB_PACK_MR defined, from
 *   OB_PACK_MIN_M rows of X a packed tile of OB_PACK_MR rows x 2·OB_W outputs
 *   over K slices of OB_PACK_KC (the panel is a 16 KiB stack buffer at most).
 * int8 gemm: ob_iv, a vector of int32 sums; OB_IZERO(); OB_IHSUM(v) (int32);
 *   OB_IDOT(acc, x, w): acc + the products of OB_KB int8 pairs from x and w,
 *   summed exactly (widening); OB_I_MT x OB_I_NT outputs per tile. */
#ifndef OB_TIER
#error "define the OB_ primitives, then include outlier_body.h"
#endif

#define OB_CAT2(a, b) a##__##b
#define OB_CAT(a, b) OB_CAT2(a, b)
#define OB_INLINE static inline __attribute__((always_inline))

/* The first n lanes of p (n may be >= OB_W, or 0), zeros above. */
OB_INLINE ob_v ob_ld(const float *p, size_t n) { return n >= OB_W ? OB_LOAD(p) : n ? OB_LOADN(p, n) : OB_ZERO(); }
OB_INLINE void ob_st(float *p, size_t n, ob_v v) {
    if (n >= OB_W) OB_STORE(p, v);
    else if (n) OB_STOREN(p, n, v);
}

/* ---- FWHT: strides below OB_W in registers, the larger ones as loops over
 *      whole vectors; the 1/sqrt(block) scale folded into the last stage ---- */
void OB_CAT(qk_fwht, OB_TIER)(float *x, size_t ldx, size_t M, size_t K, size_t block) {
    const float norm = (float)(1.0 / sqrt((double)block));
    const ob_v vn = OB_SET1(norm), one = OB_SET1(1.0f);
    for (size_t m = 0; m < M; m++) {
        float *row = x + m * ldx;
        if (block < OB_W) { /* several blocks per vector; K is a multiple of block */
            for (size_t k = 0; k < K; k += OB_W) ob_st(row + k, K - k, OB_MUL(OB_FWHT_INREG(ob_ld(row + k, K - k), block / 2), vn));
            continue;
        }
        for (size_t b = 0; b < K; b += block) {
            float *v = row + b;
            const ob_v sw = block == OB_W ? vn : one;
            for (size_t j = 0; j < block; j += OB_W) OB_STORE(v + j, OB_MUL(OB_FWHT_INREG(OB_LOAD(v + j), OB_W / 2), sw));
            for (size_t h = OB_W; h < block; h *= 2) {
                const ob_v sc = 2 * h == block ? vn : one;
                for (size_t i = 0; i < block; i += 2 * h)
                    for (size_t j = i; j < i + h; j += OB_W) {
                        ob_v a = OB_LOAD(v + j), c = OB_LOAD(v + j + h);
                        OB_STORE(v + j, OB_MUL(OB_ADD(a, c), sc));
                        OB_STORE(v + j + h, OB_MUL(OB_SUB(a, c), sc));
                    }
            }
        }
    }
}

/* ---- smoothing and channel split: streaming copies, masked tails ---- */
void OB_CAT(qk_colscale, OB_TIER)(const float *x, size_t ldx, size_t M, size_t K, const float *s, float *y, size_t ldy) {
    for (size_t m = 0; m < M; m++) {
        const float *xr = x + m * ldx;
        float *yr = y + m * ldy;
        size_t k = 0;
        for (; k + OB_W <= K; k += OB_W) OB_STORE(yr + k, OB_MUL(OB_LOAD(xr + k), OB_LOAD(s + k)));
        if (k < K) OB_STOREN(yr + k, K - k, OB_MUL(OB_LOADN(xr + k, K - k), OB_LOADN(s + k, K - k)));
    }
}

void OB_CAT(qk_colsplit, OB_TIER)(const float *x, size_t ldx, size_t M, size_t K, const uint32_t *idx, size_t nidx, float *xz,
                                  size_t ldxz, float *xo, size_t ldxo) {
    for (size_t m = 0; m < M; m++) {
        const float *xr = x + m * ldx;
        float *zr = xz + m * ldxz;
        size_t k = 0;
        for (; k + OB_W <= K; k += OB_W) OB_STORE(zr + k, OB_LOAD(xr + k));
        if (k < K) OB_STOREN(zr + k, K - k, OB_LOADN(xr + k, K - k));
        OB_GATHER(xr, idx, nidx, xo + m * ldxo, zr);
    }
}

/* ---- dense f32 gemm ---- */

/* Dot-product form (no packing): an MT x NT tile of outputs, one accumulator
 * each along K (zero-padded K tail), reduced at the end. Rows past M or N
 * repeat the last one and are not stored. */
static void ob_gf_dot_slice(size_t M, size_t N, size_t K, const float *x, size_t ldx, const float *w, size_t ldw, float *y, size_t ldy,
                            int accumulate) {
    enum { MT = OB_DOT_MT, NT = OB_DOT_NT };
    const size_t Kv = K - K % OB_W;
    for (size_t n0 = 0; n0 < N; n0 += NT) {
        const float *wr[NT];
        for (size_t j = 0; j < NT; j++) wr[j] = w + (n0 + j < N ? n0 + j : N - 1) * ldw;
        for (size_t m0 = 0; m0 < M; m0 += MT) {
            const float *xr[MT];
            for (size_t i = 0; i < MT; i++) xr[i] = x + (m0 + i < M ? m0 + i : M - 1) * ldx;
            ob_v acc[MT][NT];
            for (int i = 0; i < MT; i++)
                for (int j = 0; j < NT; j++) acc[i][j] = OB_ZERO();
            for (size_t k = 0; k < Kv; k += OB_W) {
                ob_v wv[NT];
                for (int j = 0; j < NT; j++) wv[j] = OB_LOAD(wr[j] + k);
                for (int i = 0; i < MT; i++) {
                    const ob_v xv = OB_LOAD(xr[i] + k);
                    for (int j = 0; j < NT; j++) acc[i][j] = OB_FMA(xv, wv[j], acc[i][j]);
                }
            }
            if (K % OB_W) {
                ob_v wv[NT];
                for (int j = 0; j < NT; j++) wv[j] = OB_LOADN(wr[j] + Kv, K % OB_W);
                for (int i = 0; i < MT; i++) {
                    const ob_v xv = OB_LOADN(xr[i] + Kv, K % OB_W);
                    for (int j = 0; j < NT; j++) acc[i][j] = OB_FMA(xv, wv[j], acc[i][j]);
                }
            }
            for (size_t i = 0; i < MT && m0 + i < M; i++)
                for (size_t j = 0; j < NT && n0 + j < N; j++) {
                    float v = OB_HSUM(acc[i][j]);
                    float *o = y + (m0 + i) * ldy + n0 + j;
                    *o = accumulate ? *o + v : v;
                }
        }
    }
}

#define OB_DOT_KC 1024 /* K slices keep the slice of X in L2 while W streams */

#ifdef OB_PACK_MR
#define OB_NR (2 * OB_W)

/* acc[i] = X[i][0..kc) · panel, for i < mr; then Y (+)= acc on the first nr columns. */
OB_INLINE void ob_gf_tile(const int mr, size_t nr, size_t kc, const float *x, size_t ldx, const float *panel, float *y, size_t ldy,
                          int add) {
    ob_v acc[OB_PACK_MR][2];
    for (int i = 0; i < OB_PACK_MR; i++) acc[i][0] = acc[i][1] = OB_ZERO();
    for (size_t k = 0; k < kc; k++) {
        const ob_v w0 = OB_LOAD(panel + k * OB_NR), w1 = OB_LOAD(panel + k * OB_NR + OB_W);
        for (int i = 0; i < OB_PACK_MR; i++)
            if (i < mr) {
                const ob_v xv = OB_SET1(x[(size_t)i * ldx + k]);
                acc[i][0] = OB_FMA(xv, w0, acc[i][0]);
                acc[i][1] = OB_FMA(xv, w1, acc[i][1]);
            }
    }
    const size_t n0 = nr < OB_W ? nr : OB_W, n1 = nr > OB_W ? nr - OB_W : 0;
    for (int i = 0; i < OB_PACK_MR; i++)
        if (i < mr) {
            float *yr = y + (size_t)i * ldy;
            if (add) {
                acc[i][0] = OB_ADD(acc[i][0], ob_ld(yr, n0));
                acc[i][1] = OB_ADD(acc[i][1], ob_ld(yr + OB_W, n1));
            }
            ob_st(yr, n0, acc[i][0]);
            ob_st(yr + OB_W, n1, acc[i][1]);
        }
}
#endif

void OB_CAT(qk_gemm_f32, OB_TIER)(size_t M, size_t N, size_t K, const float *x, size_t ldx, const float *w, size_t ldw, float *y,
                                  size_t ldy, int accumulate) {
#ifdef OB_PACK_MR
    if (M >= OB_PACK_MIN_M) {
        _Alignas(64) float panel[OB_PACK_KC * OB_NR];
        for (size_t n0 = 0; n0 < N; n0 += OB_NR) {
            const size_t nr = N - n0 < OB_NR ? N - n0 : OB_NR;
            for (size_t k0 = 0; k0 < K; k0 += OB_PACK_KC) {
                const size_t kc = K - k0 < OB_PACK_KC ? K - k0 : OB_PACK_KC;
                for (size_t j = 0; j < OB_NR; j++) { /* row by row: W's rows may alias in L1 at power-of-two strides */
                    const float *wr = w + (n0 + j) * ldw + k0;
                    if (j < nr)
                        for (size_t k = 0; k < kc; k++) panel[k * OB_NR + j] = wr[k];
                    else
                        for (size_t k = 0; k < kc; k++) panel[k * OB_NR + j] = 0.0f;
                }
                const int add = accumulate || k0 > 0;
                size_t m0 = 0;
                for (; m0 + OB_PACK_MR <= M; m0 += OB_PACK_MR)
                    ob_gf_tile(OB_PACK_MR, nr, kc, x + m0 * ldx + k0, ldx, panel, y + m0 * ldy + n0, ldy, add);
                const float *xt = x + m0 * ldx + k0;
                float *yt = y + m0 * ldy + n0;
                switch (M - m0) { /* constant row counts: one specialized tile each (M - m0 < OB_PACK_MR <= 8) */
                case 7: ob_gf_tile(7, nr, kc, xt, ldx, panel, yt, ldy, add); break;
                case 6: ob_gf_tile(6, nr, kc, xt, ldx, panel, yt, ldy, add); break;
                case 5: ob_gf_tile(5, nr, kc, xt, ldx, panel, yt, ldy, add); break;
                case 4: ob_gf_tile(4, nr, kc, xt, ldx, panel, yt, ldy, add); break;
                case 3: ob_gf_tile(3, nr, kc, xt, ldx, panel, yt, ldy, add); break;
                case 2: ob_gf_tile(2, nr, kc, xt, ldx, panel, yt, ldy, add); break;
                case 1: ob_gf_tile(1, nr, kc, xt, ldx, panel, yt, ldy, add); break;
                default: break;
                }
            }
        }
        return;
    }
#endif
    for (size_t k0 = 0; k0 < K; k0 += OB_DOT_KC)
        ob_gf_dot_slice(M, N, K - k0 < OB_DOT_KC ? K - k0 : OB_DOT_KC, x + k0, ldx, w + k0, ldw, y, ldy, accumulate || k0 > 0);
}

/* ---- int8 gemm of the outlier columns: exact int32 dots, then per output
 *      the reference's float expression (sx·sw)·(float)dot (+ y), so every
 *      tier writes the reference's bits ---- */

void OB_CAT(qk_gemm_i8, OB_TIER)(size_t M, size_t N, size_t K, const int8_t *x, size_t ldx, const float *sx, const int8_t *w,
                                 size_t ldw, const float *sw, float *y, size_t ldy, int accumulate) {
    enum { MT = OB_I_MT, NT = OB_I_NT };
    const size_t Kv = K - K % OB_KB;
    for (size_t n0 = 0; n0 < N; n0 += NT) {
        const int8_t *wr[NT];
        for (size_t j = 0; j < NT; j++) wr[j] = w + (n0 + j < N ? n0 + j : N - 1) * ldw;
        for (size_t m0 = 0; m0 < M; m0 += MT) {
            const int8_t *xr[MT];
            for (size_t i = 0; i < MT; i++) xr[i] = x + (m0 + i < M ? m0 + i : M - 1) * ldx;
            ob_iv acc[MT][NT];
            for (int i = 0; i < MT; i++)
                for (int j = 0; j < NT; j++) acc[i][j] = OB_IZERO();
            for (size_t k = 0; k < Kv; k += OB_KB)
                for (int i = 0; i < MT; i++)
                    for (int j = 0; j < NT; j++) acc[i][j] = OB_IDOT(acc[i][j], xr[i] + k, wr[j] + k);
            if (K % OB_KB) { /* the K tail through zero-padded copies, one per row of the tile */
                int8_t xb[MT][OB_KB], wb[NT][OB_KB];
                memset(xb, 0, sizeof xb), memset(wb, 0, sizeof wb);
                for (int i = 0; i < MT; i++) memcpy(xb[i], xr[i] + Kv, K % OB_KB);
                for (int j = 0; j < NT; j++) memcpy(wb[j], wr[j] + Kv, K % OB_KB);
                for (int i = 0; i < MT; i++)
                    for (int j = 0; j < NT; j++) acc[i][j] = OB_IDOT(acc[i][j], xb[i], wb[j]);
            }
            for (size_t i = 0; i < MT && m0 + i < M; i++)
                for (size_t j = 0; j < NT && n0 + j < N; j++) {
                    const float v = sx[m0 + i] * sw[n0 + j] * (float)OB_IHSUM(acc[i][j]);
                    float *o = y + (m0 + i) * ldy + n0 + j;
                    *o = accumulate ? *o + v : v;
                }
        }
    }
}
