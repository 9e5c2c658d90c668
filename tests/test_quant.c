/* Quantization, dequantization and activation quantization, for every
 * variant in the family lists that this CPU can run:
 *  - hand-checked codes for the rules of DESIGN §1 (ties at .5, all-zero
 *    groups, negative extremes, f16 rounding of a scale, llama.cpp's Q4_0/Q8_0),
 *  - every variant bit-exact with the scalar reference on many shapes and data,
 *  - dequantize(quantize(x)) within half a step per group,
 *  - NaN/Inf and f16 overflow reported,
 *  - fp16 conversion identical to F16C. */
#include "test_util.h"

static const size_t groups[] = {32, 64, 128, 256, 0 /* = K */};

static int usable(qk_tier t, const char *name) {
    const char *why = qk_tier_unavailable_reason(t);
    if (why) {
        tu_skipf("%s: %s", name, why);
        return 0;
    }
    return 1;
}

static qk_qmat qalloc(qk_format f, qk_scale_type st, size_t rows, size_t K, size_t g) {
    qk_qmat m;
    if (qk_qmat_alloc(&m, f, st, rows, K, g) != QK_OK) {
        fprintf(stderr, "alloc failed: %s\n", qk_last_error());
        exit(2);
    }
    return m;
}

static size_t scale_bytes(const qk_qmat *m) {
    if (!m->scales) return 0;
    return m->rows * (m->cols / m->group) * (m->scale_type == QK_SCALE_F16 ? 2 : 4);
}

/* Group j of row r (codes, scale and offset) is the same in a and b. */
static int same_group(const qk_qmat *a, const qk_qmat *b, size_t r, size_t j) {
    size_t gb = qk_row_bytes(a->format, a->group), sb = a->scale_type == QK_SCALE_F16 ? 2 : 4, G = r * (a->cols / a->group) + j;
    if (memcmp(a->codes + r * a->row_bytes + j * gb, b->codes + r * b->row_bytes + j * gb, gb)) return 0;
    if (a->scales && memcmp((const uint8_t *)a->scales + G * sb, (const uint8_t *)b->scales + G * sb, sb)) return 0;
    if (a->mins && memcmp((const uint8_t *)a->mins + G * sb, (const uint8_t *)b->mins + G * sb, sb)) return 0;
    return 1;
}

static int same_qmat(const qk_qmat *a, const qk_qmat *b) {
    if (memcmp(a->codes, b->codes, a->rows * a->row_bytes)) return 0;
    if (a->scales && memcmp(a->scales, b->scales, scale_bytes(a))) return 0;
    if (a->mins && memcmp(a->mins, b->mins, scale_bytes(a))) return 0;
    return 1;
}

/* ---- hand-checked cases ---- */

typedef struct hand_case {
    const char *what;
    qk_format f;
    qk_scale_type st;
    float x[32];
    uint8_t codes[34];   /* expected code bytes (q4_0/q8_0: whole block incl. d) */
    size_t ncodes;       /* how many of them to compare */
    uint32_t scale_bits; /* expected stored scale (f32 bits, or f16 bits) for w4s/w4a/w8s */
    uint32_t min_bits;   /* w4a offset */
} hand_case;

static void check_hand_case(const qk_quantize_kernel *k, const hand_case *c) {
    qk_qmat m = qalloc(c->f, c->st, 1, 32, 32);
    tu_context = c->what;
    qk_status s = qk_quantize_with(k, c->x, 32, &m);
    CHECK(s == QK_OK, "%s: %s", k->name, qk_last_error());
    for (size_t i = 0; i < c->ncodes; i++)
        CHECK(m.codes[i] == c->codes[i], "%s byte %zu: got 0x%02x, expected 0x%02x", k->name, i, m.codes[i], c->codes[i]);
    if (m.scales) {
        uint32_t bits = 0;
        memcpy(&bits, m.scales, c->st == QK_SCALE_F16 ? 2 : 4);
        CHECK(bits == c->scale_bits, "%s scale bits 0x%x, expected 0x%x", k->name, bits, c->scale_bits);
    }
    if (m.mins) {
        uint32_t bits = 0;
        memcpy(&bits, m.mins, c->st == QK_SCALE_F16 ? 2 : 4);
        CHECK(bits == c->min_bits, "%s min bits 0x%x, expected 0x%x", k->name, bits, c->min_bits);
    }
    qk_qmat_free(&m);
    tu_context = "";
}

/* nibble pair: low = element 2i (w4s stores q+8), high = element 2i+1 */
#define NB(lo, hi) (uint8_t)(((lo) + 8) | (((hi) + 8) << 4))
#define NBU(lo, hi) (uint8_t)((lo) | ((hi) << 4))
#define F32BITS_1 0x3f800000u
#define F32BITS_2 0x40000000u

static void test_hand_cases(void) {
    static hand_case cases[] = {
        /* s = 7/7 = 1: ties round away from zero; 0.49999997 rounds to 0 */
        {"w4s ties", QK_W4S, QK_SCALE_F32, {7, -7, 3.5f, -3.5f, 2.5f, -2.5f, 0.5f, -0.5f, 0.49999997f, 1.5f},
         {NB(7, -7), NB(4, -4), NB(3, -3), NB(1, -1), NB(0, 2), NB(0, 0)}, 6, F32BITS_1, 0},
        /* all-zero group: scale 0, every code 0 */
        {"w4s zero group", QK_W4S, QK_SCALE_F32, {0}, {NB(0, 0), NB(0, 0), NB(0, 0)}, 3, 0, 0},
        /* extreme is negative: s = 14/7 = 2; 1 -> 0.5 -> 1; 3 -> 1.5 -> 2 */
        {"w4s negative extreme", QK_W4S, QK_SCALE_F32, {-14, 1, -1, 3}, {NB(-7, 1), NB(-1, 2), NB(0, 0)}, 3, F32BITS_2, 0},
        /* f16 scale: 2/7 rounds to 0.28564453 (0x3492), id = 3.5008547: 1 -> 3.50085 -> 4, 0.42855 -> 1.50029 -> 2.
           f32 scale 2/7 = 0x3e924925, id = 1/s = 3.4999998: 1 -> 3.4999998 -> 3, 0.42855 -> 1.49992 -> 1. */
        {"w4s f16 scale rounding", QK_W4S, QK_SCALE_F16, {2, 1, 0.42855f, -2}, {NB(7, 4), NB(2, -7)}, 2, 0x3492u, 0},
        {"w4s f32 scale", QK_W4S, QK_SCALE_F32, {2, 1, 0.42855f, -2}, {NB(7, 3), NB(1, -7)}, 2, 0x3e924925u, 0},
        /* w8s: s = 127/127 = 1 */
        {"w8s ties", QK_W8S, QK_SCALE_F32, {127, 2.5f, -2.5f, 0.5f, -0.5f, 1.5f, -126.5f},
         {127, 3, (uint8_t)-3, 1, (uint8_t)-1, 2, (uint8_t)-127}, 7, F32BITS_1, 0},
        /* f16 scale of 1/127: 0.0078735352 (0x2008), id = 127.00775; 100.497/127 -> 100.5031 -> 101 */
        {"w8s f16 scale rounding", QK_W8S, QK_SCALE_F16, {1.0f, 100.497f / 127.0f}, {127, 101}, 2, 0x2008u, 0},
        {"w8s f32 scale", QK_W8S, QK_SCALE_F32, {1.0f, 100.497f / 127.0f}, {127, 100}, 2, 0x3c010204u, 0},
        /* w4a: m = 0, d = 1 */
        {"w4a ties", QK_W4A, QK_SCALE_F32, {0, 15, 7.5f, 1.5f, 2.5f, 0.5f}, {NBU(0, 15), NBU(8, 2), NBU(3, 1)}, 3, F32BITS_1, 0},
        /* w4a: m = -1, d = 1: 0 -> 1, 6.5 -> 7.5 -> 8, rest (0) -> 1 */
        {"w4a negative min", QK_W4A, QK_SCALE_F32, {-1, 14, 0, 6.5f}, {NBU(0, 15), NBU(1, 8), NBU(1, 1)}, 3, F32BITS_1, 0xbf800000u},
        /* constant group: d = 0, codes 0, dequantizes to m = 3 */
        {"w4a constant group", QK_W4A, QK_SCALE_F32, {3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
                                                      3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3},
         {0, 0, 0}, 3, 0, 0x40400000u},
        /* q4_0: extreme -16 keeps its sign: d = -16/-8 = 2 (0x4000), id = 0.5;
           -16 -> 0.5 -> 0; 8 -> 12.5 -> 12; 4 -> 10.5 -> 10; 0 -> 8. Byte j: element j low, j+16 high. */
        {"q4_0 negative extreme", QK_Q4_0, QK_SCALE_F16, {-16, 8, 4}, {0x00, 0x40, 0x80, 0x8c, 0x8a, 0x88}, 6, 0, 0},
        /* extreme +16: d = -2 (0xc000), id = -0.5: 16 -> 0; -8 -> 12 */
        {"q4_0 positive extreme", QK_Q4_0, QK_SCALE_F16, {16, -8}, {0x00, 0xc0, 0x80, 0x8c, 0x88}, 5, 0, 0},
        /* |-4| == |4|: the first wins, d = 0.5 (0x3800), id = 2: -4 -> 0; 4 -> 16.5 -> 16 -> min 15 */
        {"q4_0 magnitude tie", QK_Q4_0, QK_SCALE_F16, {-4, 4}, {0x00, 0x38, 0x80, 0x8f, 0x88}, 5, 0, 0},
        /* all zero: d = 0/-8 = -0.0, stored as 0x8000 exactly as llama.cpp does; codes 8 */
        {"q4_0 zero block", QK_Q4_0, QK_SCALE_F16, {0}, {0x00, 0x80, 0x88, 0x88, 0x88}, 5, 0, 0},
        /* q8_0: d = 1 (0x3c00): ties away from zero */
        {"q8_0 ties", QK_Q8_0, QK_SCALE_F16, {127, 2.5f, -2.5f, 0.5f, -0.5f, 1.5f},
         {0x00, 0x3c, 127, 3, (uint8_t)-3, 1, (uint8_t)-1, 2, 0}, 9, 0, 0},
        /* q8_0 uses id from the unrounded d (1/127): 100.497/127 -> 100.497 -> 100, unlike w8s/f16 (101) */
        {"q8_0 f16 d, unrounded id", QK_Q8_0, QK_SCALE_F16, {1.0f, 100.497f / 127.0f}, {0x08, 0x20, 127, 100}, 4, 0, 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (size_t i = 0; i < qk_quantize_kernel_count; i++) {
            const qk_quantize_kernel *k = &qk_quantize_kernels[i];
            if (k->format != cases[c].f || qk_tier_unavailable_reason(k->tier)) continue;
            check_hand_case(k, &cases[c]);
        }
    /* the constant w4a group dequantizes to exactly m */
    qk_qmat m = qalloc(QK_W4A, QK_SCALE_F32, 1, 32, 32);
    float x[32], y[32];
    for (int i = 0; i < 32; i++) x[i] = 3.0f;
    CHECK(qk_quantize(x, 32, &m) == QK_OK, "%s", qk_last_error());
    CHECK(qk_dequantize(&m, y, 32) == QK_OK, "%s", qk_last_error());
    for (int i = 0; i < 32; i++) CHECK(y[i] == 3.0f, "constant w4a group dequantized to %g", (double)y[i]);
    qk_qmat_free(&m);
}

/* ---- every variant against the scalar reference ---- */

static const qk_quantize_kernel *scalar_quantize(qk_format f) {
    for (size_t i = 0; i < qk_quantize_kernel_count; i++)
        if (qk_quantize_kernels[i].format == f && qk_quantize_kernels[i].tier == QK_TIER_SCALAR) return &qk_quantize_kernels[i];
    return NULL;
}
static const qk_dequantize_kernel *scalar_dequantize(qk_format f) {
    for (size_t i = 0; i < qk_dequantize_kernel_count; i++)
        if (qk_dequantize_kernels[i].format == f && qk_dequantize_kernels[i].tier == QK_TIER_SCALAR) return &qk_dequantize_kernels[i];
    return NULL;
}
static const qk_actquant_kernel *scalar_actquant(qk_act_rule r) {
    for (size_t i = 0; i < qk_actquant_kernel_count; i++)
        if (qk_actquant_kernels[i].rule == r && qk_actquant_kernels[i].tier == QK_TIER_SCALAR) return &qk_actquant_kernels[i];
    return NULL;
}

/* Half a quantization step of group j of row r (the round-trip bound). */
static double roundtrip_bound(const qk_qmat *m, const float *x, size_t r, size_t j) {
    double s = fabs((double)qk_qmat_scale(m, r, j)), tiny = 1e-44;
    switch (m->format) {
    /* (int8)(v+8.5) and min(15) can cost a full step at +8; codes use the unrounded d, x̂ the f16 one */
    case QK_Q4_0: return s * (1.0 + 8.0 / 2048.0 + 1e-6) + tiny;
    case QK_Q8_0: return s * (0.5 + 127.0 / 2048.0 + 1e-5) + tiny;
    case QK_W4A: {
        size_t g = m->group;
        double mn = INFINITY;
        for (size_t i = 0; i < g; i++) mn = fmin(mn, x[j * g + i]);
        double mst = qk_qmat_min(m, r, j);
        return s * (0.5 + 15.0 / 2048.0 + 1e-6) + fabs(mst - mn) + tiny;
    }
    default: /* |x - fl(s·q)| <= s·(1/2 + 3u·qmax): the rounded id and the rounded product */
        return s * (0.5 + 3.0 * 127.0 * 0x1p-24) + tiny;
    }
}

static void test_quantize_variants(tu_rng *rng) {
    const int quick = tu_quick();
    for (size_t ki = 0; ki < qk_quantize_kernel_count; ki++) {
        const qk_quantize_kernel *k = &qk_quantize_kernels[ki];
        if (!usable(k->tier, k->name)) continue;
        const qk_quantize_kernel *ref = scalar_quantize(k->format);
        const qk_dequantize_kernel *dref = scalar_dequantize(k->format);
        int blocks = k->format == QK_Q4_0 || k->format == QK_Q8_0;
        size_t checked = 0;
        for (size_t gi = 0; gi < sizeof groups / sizeof groups[0]; gi++) {
            if (blocks && gi > 0) break;
            for (int st = 0; st <= 1; st++) {
                if (blocks && st == QK_SCALE_F32) continue;
                const int odd = k->format == QK_W8S;
                size_t Ks[] = {32, 96, 256, 768, 4096, quick ? 512 : 16384, tu_tail_k(0, odd), tu_tail_k(1, odd)};
                for (size_t kk = 0; kk < sizeof Ks / sizeof Ks[0]; kk++) {
                    size_t K = Ks[kk], g = groups[gi] ? groups[gi] : K;
                    if (K % g) continue;
                    size_t rows = K > 4096 ? 2 : 3, ldx = K + 3;
                    for (int kind = 0; kind < TU_KINDS; kind++) {
                        float *x = malloc((rows * ldx + 1) * sizeof(float));
                        float *xu = x + 1; /* not 16-byte aligned */
                        tu_fill(rng, xu, rows * ldx, kind);
                        qk_qmat a = qalloc(k->format, (qk_scale_type)st, rows, K, g);
                        qk_qmat b = qalloc(k->format, (qk_scale_type)st, rows, K, g);
                        /* the kernel's codes go to a buffer with guard bytes on both sides */
                        const size_t ncode = rows * b.row_bytes, guard = 64;
                        uint8_t *gbuf = malloc(ncode + 2 * guard), *bcodes = b.codes;
                        if (!gbuf) exit(2);
                        memset(gbuf, 0xA5, ncode + 2 * guard);
                        b.codes = gbuf + guard;
                        qk_status sa = qk_quantize_with(ref, xu, ldx, &a);
                        qk_status sb = qk_quantize_with(k, xu, ldx, &b);
                        char ctx[160];
                        snprintf(ctx, sizeof ctx, "%s K=%zu g=%zu %s %s", k->name, K, g, st ? "f16" : "f32", tu_kind_names[kind]);
                        tu_context = ctx;
                        size_t spoilt = 0;
                        for (size_t i = 0; i < guard; i++) spoilt += (gbuf[i] != 0xA5) + (gbuf[guard + ncode + i] != 0xA5);
                        CHECK(!spoilt, "%zu bytes written outside the codes", spoilt);
                        memcpy(bcodes, b.codes, ncode);
                        b.codes = bcodes;
                        free(gbuf);
                        CHECK(sa == sb, "status %s vs reference %s", qk_status_name(sb), qk_status_name(sa));
                        if (sa == QK_OK && sb == QK_OK) {
                            CHECK(same_qmat(&a, &b), "codes or scales differ from the reference");
                            checked++;
                            /* round trip through the reference dequantizer */
                            if (kind == TU_GAUSS || kind == TU_UNIFORM || kind == TU_OUTLIER || kind == TU_NEGEXT) {
                                float *y = malloc(rows * K * sizeof(float));
                                CHECK(qk_dequantize_with(dref, &b, y, K) == QK_OK, "%s", qk_last_error());
                                int bad = 0;
                                double bnd = 0;
                                for (size_t r = 0; r < rows && !bad; r++)
                                    for (size_t i = 0; i < K && !bad; i++) {
                                        double e = fabs((double)y[r * K + i] - xu[r * ldx + i]);
                                        if (i % g == 0) bnd = roundtrip_bound(&b, xu + r * ldx, r, i / g);
                                        if (e > bnd) {
                                            bad = 1;
                                            CHECK(e <= bnd, "round trip row %zu col %zu: |%g - %g| = %g > %g", r, i,
                                                  (double)y[r * K + i], (double)xu[r * ldx + i], e, bnd);
                                        }
                                    }
                                CHECK(!bad, "round trip");
                                free(y);
                            }
                        } else if (kind != TU_HUGE) {
                            CHECK(0, "unexpected failure: %s", qk_last_error());
                        }
                        tu_context = "";
                        qk_qmat_free(&a);
                        qk_qmat_free(&b);
                        free(x);
                    }
                }
            }
        }
        printf("%-32s %zu cases bit-exact with the reference\n", k->name, checked);
    }
}

static void test_nonfinite(void) {
    const float bad_vals[] = {NAN, INFINITY, -INFINITY};
    for (size_t ki = 0; ki < qk_quantize_kernel_count; ki++) {
        const qk_quantize_kernel *k = &qk_quantize_kernels[ki];
        if (qk_tier_unavailable_reason(k->tier)) continue;
        for (size_t b = 0; b < 3; b++)
            for (size_t pos = 0; pos < 256; pos += 37) {
                float x[256];
                for (int i = 0; i < 256; i++) x[i] = (float)(i % 13) - 6.0f;
                x[pos] = bad_vals[b];
                qk_qmat m = qalloc(k->format, k->format >= QK_Q4_0 ? QK_SCALE_F16 : QK_SCALE_F32, 2, 128, 32);
                qk_status s = qk_quantize_with(k, x, 128, &m);
                CHECK(s == QK_ERR_NONFINITE, "%s: %g at %zu gave %s", k->name, (double)bad_vals[b], pos, qk_status_name(s));
                char want[64];
                snprintf(want, sizeof want, "row %zu, column %zu", pos / 128, pos % 128);
                CHECK(strstr(qk_last_error(), want) != NULL, "%s: message '%s' does not name %s", k->name, qk_last_error(), want);
                qk_qmat_free(&m);
            }
        /* the same in matrices of many groups (the SIMD variants' chunked fast paths), every group size,
         * and per channel (g = K: the long-group path) */
        for (size_t gi = 0; gi < 5; gi++) {
            size_t rows = 4, K = 1024, g = gi < 4 ? (size_t)32 << gi : K;
            if (k->format >= QK_Q4_0 && g != 32) continue;
            float *xm = tu_floats(rows * K);
            for (size_t b = 0; b < 3; b++)
                for (size_t pos = 5; pos < rows * K; pos += 997) {
                    for (size_t i = 0; i < rows * K; i++) xm[i] = (float)(i % 13) - 6.0f;
                    xm[pos] = bad_vals[b];
                    qk_qmat m = qalloc(k->format, k->format >= QK_Q4_0 ? QK_SCALE_F16 : QK_SCALE_F32, rows, K, g);
                    qk_status s = qk_quantize_with(k, xm, K, &m);
                    CHECK(s == QK_ERR_NONFINITE, "%s g%zu: %g at %zu gave %s", k->name, g, (double)bad_vals[b], pos, qk_status_name(s));
                    char want[64];
                    snprintf(want, sizeof want, "row %zu, column %zu", pos / K, pos % K);
                    CHECK(strstr(qk_last_error(), want) != NULL, "%s g%zu: message '%s' does not name %s", k->name, g, qk_last_error(), want);
                    /* every other group of the chunk and the matrix is still quantized as the reference does */
                    qk_qmat mr = qalloc(k->format, m.scale_type, rows, K, g);
                    qk_quantize_with(scalar_quantize(k->format), xm, K, &mr);
                    size_t bad_g = (pos % K) / g, diff = 0;
                    for (size_t r = 0; r < rows; r++)
                        for (size_t j = 0; j < K / g; j++)
                            if ((r != pos / K || j != bad_g) && !same_group(&m, &mr, r, j)) diff++;
                    CHECK(diff == 0, "%s g%zu: %g at %zu: %zu finite groups differ from the reference", k->name, g, (double)bad_vals[b], pos, diff);
                    qk_qmat_free(&mr);
                    qk_qmat_free(&m);
                }
            free(xm);
        }
        /* an f16 scale that overflows is reported, not stored as Inf */
        float x[64];
        for (int i = 0; i < 64; i++) x[i] = 1e6f * (float)(i + 1);
        qk_qmat m = qalloc(k->format, QK_SCALE_F16, 1, 64, 32);
        qk_status s = qk_quantize_with(k, x, 64, &m);
        CHECK(s == QK_ERR_RANGE, "%s: f16 scale overflow gave %s", k->name, qk_status_name(s));
        qk_qmat_free(&m);
    }
}

/* The fp16 d of q4_0 (A/8) and q8_0 (A/127) right at fp16's limit (a d of
 * 65520 or more rounds to Inf): for absmax values A stepping ulp by ulp
 * across each edge, on either sign and in one block of a 16-block chunk, every
 * quantizer reports a range error exactly when the reference does, and
 * otherwise writes its bytes. The SIMD quantizers check a chunk's fp16
 * scales only when its absmax passes a bound, so a bound set one ulp too
 * high fails here. */
static void test_f16_edge(void) {
    const qk_format fmts[] = {QK_Q4_0, QK_Q8_0};
    const float edge[] = {524160.0f, 65520.0f * 127.0f};
    for (size_t ki = 0; ki < qk_quantize_kernel_count; ki++) {
        const qk_quantize_kernel *k = &qk_quantize_kernels[ki];
        if (qk_tier_unavailable_reason(k->tier)) continue;
        size_t fi = k->format == QK_Q4_0 ? 0 : k->format == QK_Q8_0 ? 1 : 2;
        if (fi > 1) continue;
        size_t K = 16 * 32, checked = 0, ranges = 0;
        float *x = malloc(K * sizeof *x);
        for (int step = -40; step <= 40; step++) {
            float a = edge[fi];
            for (int i = 0; i < (step < 0 ? -step : step) * 3; i++) a = nextafterf(a, step < 0 ? 0.0f : INFINITY);
            for (int sign = 0; sign < 2; sign++) {
                for (size_t i = 0; i < K; i++) x[i] = (float)((int)(i % 7) - 3);
                x[5 * 32 + 17] = sign ? -a : a; /* block 5 of the chunk */
                qk_qmat m = qalloc(fmts[fi], QK_SCALE_F16, 1, K, 32), mr = qalloc(fmts[fi], QK_SCALE_F16, 1, K, 32);
                qk_status s = qk_quantize_with(k, x, K, &m), sr = qk_quantize_with(scalar_quantize(fmts[fi]), x, K, &mr);
                CHECK(s == sr, "%s: absmax %.9g: %s, the reference %s", k->name, (double)(sign ? -a : a), qk_status_name(s),
                      qk_status_name(sr));
                if (s == QK_OK && sr == QK_OK) CHECK(same_qmat(&m, &mr), "%s: absmax %.9g: bytes differ from the reference", k->name, (double)a);
                ranges += sr == QK_ERR_RANGE;
                checked++;
                qk_qmat_free(&m);
                qk_qmat_free(&mr);
            }
        }
        CHECK(ranges > 0 && ranges < checked, "%s: the edge cases were all on one side (%zu of %zu range errors)", k->name, ranges, checked);
        free(x);
    }
}

/* w4a: a group whose max - min overflows f32 (±3e38) is reported as a range
 * error, with f32 and with f16 scales, in the chunked paths (g = 32..256)
 * and per channel, and every other group is quantized as the reference
 * does. */
static void test_w4a_range(void) {
    const size_t rows = 4, K = 1024;
    float *x = tu_floats(rows * K);
    for (size_t ki = 0; ki < qk_quantize_kernel_count; ki++) {
        const qk_quantize_kernel *k = &qk_quantize_kernels[ki];
        if (k->format != QK_W4A || !usable(k->tier, k->name)) continue;
        for (size_t gi = 0; gi < 5; gi++)
            for (int st = 0; st <= 1; st++)
                for (size_t pos = 70; pos < rows * K; pos += 1499) {
                    size_t g = gi < 4 ? (size_t)32 << gi : K;
                    for (size_t i = 0; i < rows * K; i++) x[i] = (float)(i % 13) - 6.0f;
                    size_t g0 = pos / g * g; /* the group's first value, and its last */
                    x[g0] = 3e38f;
                    x[g0 + g - 1] = -3e38f;
                    qk_qmat m = qalloc(QK_W4A, (qk_scale_type)st, rows, K, g), mr = qalloc(QK_W4A, (qk_scale_type)st, rows, K, g);
                    qk_status sr = qk_quantize_with(scalar_quantize(QK_W4A), x, K, &mr), s = qk_quantize_with(k, x, K, &m);
                    const char *want = st == QK_SCALE_F32 ? "overflows f32" : "may overflow f32";
                    CHECK(sr == QK_ERR_RANGE && s == QK_ERR_RANGE, "%s g%zu %s: max - min overflowing gave %s (reference %s)", k->name, g,
                          st ? "f16" : "f32", qk_status_name(s), qk_status_name(sr));
                    CHECK(strstr(qk_last_error(), want) != NULL, "%s g%zu: message '%s' does not say '%s'", k->name, g, qk_last_error(), want);
                    size_t diff = 0;
                    for (size_t r = 0; r < rows; r++)
                        for (size_t j = 0; j < K / g; j++)
                            if ((r != g0 / K || j != (g0 % K) / g) && !same_group(&m, &mr, r, j)) diff++;
                    CHECK(diff == 0, "%s g%zu %s: %zu other groups differ from the reference", k->name, g, st ? "f16" : "f32", diff);
                    qk_qmat_free(&m);
                    qk_qmat_free(&mr);
                }
    }
    free(x);
}

/* The "f16sub" and "offset" data must reach the clamp of the quantizers
 * with f16 scales, else test_quantize_variants would not see a variant
 * that drops it: the codes the reference rounds before clamping, counted
 * below 0 (w4a) or below -qmax, and above 15 or qmax, at g = 32 and 128. */
static void test_clamp_reached(tu_rng *rng) {
    const size_t rows = 2, K = 4096;
    float *x = tu_floats(rows * K);
    const qk_format fs[] = {QK_W4A, QK_W4S, QK_W8S};
    for (size_t fi = 0; fi < 3; fi++)
        for (size_t g = 32; g <= 128; g *= 4) {
            size_t lo = 0, hi = 0;
            for (int kind = TU_F16SUB; kind <= TU_OFFSET; kind++) {
                tu_fill(rng, x, rows * K, kind);
                qk_qmat m = qalloc(fs[fi], QK_SCALE_F16, rows, K, g);
                CHECK(qk_quantize_with(scalar_quantize(fs[fi]), x, K, &m) == QK_OK, "%s", qk_last_error());
                const float qmax = fs[fi] == QK_W8S ? 127.0f : fs[fi] == QK_W4S ? 7.0f : 15.0f;
                const float qmin = fs[fi] == QK_W4A ? 0.0f : -qmax;
                for (size_t r = 0; r < rows; r++)
                    for (size_t i = 0; i < K; i++) {
                        float id = 1.0f / qk_qmat_scale(&m, r, i / g);
                        if (isinf(id)) id = 0.0f; /* as the reference's inverse scale */
                        float v = fs[fi] == QK_W4A ? (x[r * K + i] - qk_qmat_min(&m, r, i / g)) * id : x[r * K + i] * id;
                        float q = roundf(v);
                        lo += q < qmin;
                        hi += q > qmax;
                    }
                qk_qmat_free(&m);
            }
            CHECK(hi > 0 && (fs[fi] != QK_W4A || lo > 0), "%s g%zu: the clamp never acts on f16sub/offset data (%zu low, %zu high)",
                  qk_format_name(fs[fi]), g, lo, hi);
            printf("clamp reached: %s g%zu f16, %zu codes below the range, %zu above\n", qk_format_name(fs[fi]), g, lo, hi);
        }
    free(x);
}

/* Groups whose values all have one sign (the SIMD quantizers find a group's
 * min and max from the integer order of its bits, which needs both signs,
 * and fall back to FP min/max): rows of positive, of negative and of mixed
 * values, with zeros, in the chunked paths (g = 32..256) and per channel,
 * bit-exact with the reference. The zeros are +0 and -0: where a group's
 * min or max is zero, w4a stores -0 for a min if the group holds a -0 and
 * +0 for a max if it holds a +0 (qk_min_z, qk_max_z: -0 below +0, the same
 * on every CPU and compiler; rows 2, 4 and 5: positive values with zeros,
 * negative ones with zeros, only zeros). */
static void test_one_sign(tu_rng *rng) {
    const size_t rows = 6, K = 1024;
    float *x = tu_floats(rows * K);
    for (size_t i = 0; i < rows * K; i++) {
        float u = (float)(0.01 + tu_uniform(rng)); /* [0.01, 1.01) */
        float z = tu_next(rng) & 1 ? -0.0f : 0.0f;
        size_t r = i / K;
        x[i] = r == 0 ? u : r == 1 ? -u : r == 2 ? (i % 7 ? u : z) : r == 3 ? (i % 2 ? u : -u) : r == 4 ? (i % 5 ? -u : z) : z;
    }
    for (size_t ki = 0; ki < qk_quantize_kernel_count; ki++) {
        const qk_quantize_kernel *k = &qk_quantize_kernels[ki];
        if (!usable(k->tier, k->name)) continue;
        const qk_quantize_kernel *ref = scalar_quantize(k->format);
        size_t gs[] = {32, 64, 128, 256, K};
        for (size_t gi = 0; gi < sizeof gs / sizeof gs[0]; gi++) {
            if ((k->format == QK_Q4_0 || k->format == QK_Q8_0) && gs[gi] != 32) continue;
            qk_scale_type st = k->format >= QK_Q4_0 ? QK_SCALE_F16 : QK_SCALE_F32;
            qk_qmat a = qalloc(k->format, st, rows, K, gs[gi]), b = qalloc(k->format, st, rows, K, gs[gi]);
            qk_status sa = qk_quantize_with(ref, x, K, &a), sb = qk_quantize_with(k, x, K, &b);
            CHECK(sa == QK_OK && sb == QK_OK, "%s g%zu: %s / %s", k->name, gs[gi], qk_status_name(sa), qk_status_name(sb));
            CHECK(same_qmat(&a, &b), "%s g%zu: groups of one sign not bit-exact with the reference", k->name, gs[gi]);
            qk_qmat_free(&a);
            qk_qmat_free(&b);
        }
    }
    free(x);
}

/* Dequantization of arbitrary codes (not only ones a quantizer makes). */
static void test_dequantize_variants(tu_rng *rng) {
    for (size_t ki = 0; ki < qk_dequantize_kernel_count; ki++) {
        const qk_dequantize_kernel *k = &qk_dequantize_kernels[ki];
        if (!usable(k->tier, k->name)) continue;
        const qk_dequantize_kernel *ref = scalar_dequantize(k->format);
        int blocks = k->format == QK_Q4_0 || k->format == QK_Q8_0;
        size_t checked = 0;
        for (size_t gi = 0; gi < sizeof groups / sizeof groups[0]; gi++)
            for (int st = 0; st <= 1; st++) {
                if (blocks && (gi > 0 || st == QK_SCALE_F32)) continue;
                const int odd = k->format == QK_W8S;
                size_t Ks[] = {32, 256, 1280, tu_quick() ? 512 : 16384, tu_tail_k(0, odd), tu_tail_k(1, odd)};
                for (size_t kk = 0; kk < sizeof Ks / sizeof Ks[0]; kk++) {
                    size_t K = Ks[kk], g = groups[gi] ? groups[gi] : K, rows = 3, ldy = K + 5;
                    if (K % g) continue;
                    qk_qmat m = qalloc(k->format, (qk_scale_type)st, rows, K, g);
                    for (size_t i = 0; i < rows * m.row_bytes; i++) m.codes[i] = (uint8_t)tu_next(rng);
                    size_t ns = blocks ? 0 : rows * (K / g);
                    for (size_t i = 0; i < ns; i++) {
                        float s = (float)tu_gauss(rng), mn = (float)tu_gauss(rng) * 4;
                        if (st == QK_SCALE_F16) {
                            ((uint16_t *)m.scales)[i] = qk_fp32_to_fp16(s);
                            if (m.mins) ((uint16_t *)m.mins)[i] = qk_fp32_to_fp16(mn);
                        } else if (m.scales) {
                            ((float *)m.scales)[i] = s;
                            if (m.mins) ((float *)m.mins)[i] = mn;
                        }
                    }
                    if (blocks) /* a finite fp16 d in each block */
                        for (size_t r = 0; r < rows; r++)
                            for (size_t b = 0; b < K / 32; b++) {
                                uint8_t *blk = m.codes + r * m.row_bytes + b * (k->format == QK_Q4_0 ? 18 : 34);
                                uint16_t h = qk_fp32_to_fp16((float)tu_gauss(rng));
                                memcpy(blk, &h, 2);
                            }
                    float *ya = tu_canary_alloc(rows * ldy), *yb = tu_canary_alloc(rows * ldy);
                    CHECK(qk_dequantize_with(ref, &m, ya, ldy) == QK_OK, "%s", qk_last_error());
                    CHECK(qk_dequantize_with(k, &m, yb, ldy) == QK_OK, "%s", qk_last_error());
                    int same = 1, gaps = 1;
                    for (size_t r = 0; r < rows; r++) {
                        if (memcmp(ya + r * ldy, yb + r * ldy, K * sizeof(float))) same = 0;
                        for (size_t c = K; c < ldy; c++)
                            if (!tu_is_canary(yb + r * ldy + c)) gaps = 0;
                    }
                    CHECK(same, "%s K=%zu g=%zu %s: not bit-exact with the reference", k->name, K, g, st ? "f16" : "f32");
                    CHECK(gaps && tu_canaries_ok(yb, rows * ldy), "%s K=%zu: wrote outside its rows", k->name, K);
                    checked++;
                    tu_canary_free(ya);
                    tu_canary_free(yb);
                    qk_qmat_free(&m);
                }
            }
        printf("%-32s %zu cases bit-exact with the reference\n", k->name, checked);
    }
}

/* Quantization of inputs large enough for the SIMD variants' streaming
 * (non-temporal) code stores: 512 x 4096, g = 32 and 128, against the
 * reference (codes, scales and offsets). */
static void test_quantize_large(tu_rng *rng) {
    const size_t rows = 512, K = 4096;
    float *x = malloc(rows * K * sizeof *x);
    if (!x) exit(2);
    for (size_t i = 0; i < rows * K; i++) x[i] = (float)tu_gauss(rng);
    for (size_t ki = 0; ki < qk_quantize_kernel_count; ki++) {
        const qk_quantize_kernel *k = &qk_quantize_kernels[ki];
        if (k->tier == QK_TIER_SCALAR || !usable(k->tier, k->name)) continue;
        int blocks = k->format == QK_Q4_0 || k->format == QK_Q8_0;
        for (size_t g = 32; g <= 128; g *= 4) {
            if (blocks && g != 32) continue;
            qk_scale_type st = blocks ? QK_SCALE_F16 : QK_SCALE_F32;
            qk_qmat a = qalloc(k->format, st, rows, K, g), b = qalloc(k->format, st, rows, K, g);
            CHECK(qk_quantize_with(scalar_quantize(k->format), x, K, &a) == QK_OK, "%s", qk_last_error());
            CHECK(qk_quantize_with(k, x, K, &b) == QK_OK, "%s", qk_last_error());
            CHECK(same_qmat(&a, &b), "%s %zux%zu g%zu: not bit-exact with the reference", k->name, rows, K, g);
            /* in two slices of rows (qk_qmat_rows), as the threads of a multi-threaded run quantize; the
             * upper slice first, so a kernel that writes past the end of its codes (a store wider than
             * the last block) spoils codes already written, as it would race with another thread */
            qk_qmat c = qalloc(k->format, st, rows, K, g), lo = qk_qmat_rows(&c, 0, 171), hi = qk_qmat_rows(&c, 171, rows);
            CHECK(qk_quantize_with(k, x + 171 * K, K, &hi) == QK_OK && qk_quantize_with(k, x, K, &lo) == QK_OK, "%s", qk_last_error());
            CHECK(same_qmat(&a, &c), "%s %zux%zu g%zu in row slices 0..170, 171..%zu: not bit-exact with the reference", k->name, rows, K, g,
                  rows - 1);
            qk_qmat_free(&a);
            qk_qmat_free(&b);
            qk_qmat_free(&c);
        }
    }
    free(x);
}

/* Dequantization of outputs large enough for the SIMD variants' streaming
 * (non-temporal) stores: 512 x 4096 into a 64-byte aligned buffer, and the
 * same rows at an odd stride (plain stores), both against the reference. */
static void test_dequantize_large(tu_rng *rng) {
    const size_t rows = 512, K = 4096;
    for (size_t ki = 0; ki < qk_dequantize_kernel_count; ki++) {
        const qk_dequantize_kernel *k = &qk_dequantize_kernels[ki];
        if (k->tier == QK_TIER_SCALAR || !usable(k->tier, k->name)) continue;
        const qk_dequantize_kernel *ref = scalar_dequantize(k->format);
        int blocks = k->format == QK_Q4_0 || k->format == QK_Q8_0;
        qk_qmat m = qalloc(k->format, blocks ? QK_SCALE_F16 : QK_SCALE_F32, rows, K, 32);
        for (size_t i = 0; i < rows * m.row_bytes; i++) m.codes[i] = (uint8_t)tu_next(rng);
        if (blocks)
            for (size_t b = 0; b < rows * K / 32; b++) {
                uint16_t h = qk_fp32_to_fp16((float)tu_gauss(rng));
                memcpy(m.codes + b * (k->format == QK_Q4_0 ? 18 : 34), &h, 2);
            }
        else
            for (size_t i = 0; i < rows * K / 32; i++) {
                ((float *)m.scales)[i] = (float)tu_gauss(rng);
                if (m.mins) ((float *)m.mins)[i] = (float)tu_gauss(rng);
            }
        void *pa = NULL, *pb = NULL;
        size_t ldo = K + 5;
        if (posix_memalign(&pa, 64, rows * ldo * sizeof(float)) || posix_memalign(&pb, 64, rows * ldo * sizeof(float))) exit(2);
        float *ya = pa, *yb = pb;
        for (int odd = 0; odd <= 1; odd++) {
            size_t ldy = odd ? ldo : K;
            CHECK(qk_dequantize_with(ref, &m, ya, ldy) == QK_OK, "%s", qk_last_error());
            CHECK(qk_dequantize_with(k, &m, yb, ldy) == QK_OK, "%s", qk_last_error());
            int same = 1;
            for (size_t r = 0; r < rows; r++)
                if (memcmp(ya + r * ldy, yb + r * ldy, K * sizeof(float))) same = 0;
            CHECK(same, "%s %zux%zu ldy=%zu: not bit-exact with the reference", k->name, rows, K, ldy);
        }
        free(pa);
        free(pb);
        qk_qmat_free(&m);
    }
}

static void test_actquant_variants(tu_rng *rng) {
    for (size_t ki = 0; ki < qk_actquant_kernel_count; ki++) {
        const qk_actquant_kernel *k = &qk_actquant_kernels[ki];
        if (!usable(k->tier, k->name)) continue;
        const qk_actquant_kernel *ref = scalar_actquant(k->rule);
        size_t checked = 0;
        for (size_t gi = 0; gi < sizeof groups / sizeof groups[0]; gi++) {
            if (k->rule == QK_ACT_Q8_0 && gi > 0) break;
            size_t Ks[] = {32, 256, 1280, tu_quick() ? 512 : 16384, tu_tail_k(0, 1), tu_tail_k(1, 1)}; /* the codes are bytes */
            for (size_t kk = 0; kk < sizeof Ks / sizeof Ks[0]; kk++)
                for (int kind = 0; kind < TU_KINDS; kind++) {
                    size_t K = Ks[kk], g = groups[gi] ? groups[gi] : K, rows = 3, ldx = K + 7;
                    if (K % g) continue;
                    float *x = malloc(rows * ldx * sizeof(float));
                    tu_fill(rng, x, rows * ldx, kind);
                    qk_qact a, b;
                    if (qk_qact_alloc(&a, k->rule, rows, K, g) || qk_qact_alloc(&b, k->rule, rows, K, g)) exit(2);
                    qk_status sa = qk_actquant_with(ref, x, ldx, &a), sb = qk_actquant_with(k, x, ldx, &b);
                    CHECK(sa == sb, "%s K=%zu g=%zu %s: status %s vs %s", k->name, K, g, tu_kind_names[kind], qk_status_name(sb),
                          qk_status_name(sa));
                    if (sa == QK_OK && sb == QK_OK) {
                        size_t ng = rows * (K / g);
                        int same = !memcmp(a.codes, b.codes, rows * K) && !memcmp(a.scales, b.scales, ng * 4) &&
                                   !memcmp(a.sums, b.sums, ng * 4);
                        CHECK(same, "%s K=%zu g=%zu %s: codes, scales or sums differ from the reference", k->name, K, g,
                              tu_kind_names[kind]);
                        checked++;
                    }
                    qk_qact_free(&a);
                    qk_qact_free(&b);
                    free(x);
                }
        }
        /* NaN in activations is reported */
        float x[64];
        for (int i = 0; i < 64; i++) x[i] = (float)i;
        x[40] = NAN;
        qk_qact a;
        if (qk_qact_alloc(&a, k->rule, 1, 64, 32)) exit(2);
        CHECK(qk_actquant_with(k, x, 64, &a) == QK_ERR_NONFINITE, "%s: NaN not reported", k->name);
        qk_qact_free(&a);
        /* NaN/Inf among many groups (the chunked fast paths): reported, and the
         * whole output (the bad group zeroed) the same as the reference's */
        const float bad_vals[] = {NAN, INFINITY, -INFINITY};
        for (size_t gi = 0; gi < 4; gi++)
            for (size_t b = 0; b < 3; b++) {
                size_t g = (size_t)32 << gi, rows = 4, K = 1024, pos = 37 + 1009 * b;
                if (k->rule == QK_ACT_Q8_0 && g != 32) continue; /* q8_0 blocks are 32 */
                float *xm = malloc(rows * K * sizeof *xm);
                qk_qact qa, qb;
                if (!xm || qk_qact_alloc(&qa, k->rule, rows, K, g) || qk_qact_alloc(&qb, k->rule, rows, K, g)) exit(2);
                for (size_t i = 0; i < rows * K; i++) xm[i] = (float)(i % 29) - 14.0f;
                xm[pos] = bad_vals[b];
                CHECK(qk_actquant_with(k, xm, K, &qb) == QK_ERR_NONFINITE, "%s g%zu: %g not reported", k->name, g, (double)bad_vals[b]);
                CHECK(qk_actquant_with(ref, xm, K, &qa) == QK_ERR_NONFINITE, "reference: %g not reported", (double)bad_vals[b]);
                size_t ng = rows * (K / g);
                CHECK(!memcmp(qa.codes, qb.codes, rows * K) && !memcmp(qa.scales, qb.scales, ng * sizeof(float)) &&
                          !memcmp(qa.sums, qb.sums, ng * sizeof(int32_t)),
                      "%s g%zu: output with %g differs from the reference", k->name, g, (double)bad_vals[b]);
                qk_qact_free(&qa);
                qk_qact_free(&qb);
                free(xm);
            }
        printf("%-32s %zu cases bit-exact with the reference\n", k->name, checked);
    }
}

/* ---- fp16 conversion against F16C ---- */
#if defined(__x86_64__)
#include <immintrin.h>
__attribute__((target("f16c"))) static uint16_t hw_f2h(float f) { return (uint16_t)_cvtss_sh(f, 0); }
__attribute__((target("f16c"))) static float hw_h2f(uint16_t h) { return _cvtsh_ss(h); }
#endif

static void test_fp16(void) {
    /* hand-checked values */
    CHECK(qk_fp32_to_fp16(1.0f) == 0x3c00, "1.0");
    CHECK(qk_fp32_to_fp16(-2.0f) == 0xc000, "-2.0");
    CHECK(qk_fp32_to_fp16(65504.0f) == 0x7bff, "max half");
    CHECK(qk_fp32_to_fp16(65520.0f) == 0x7c00, "65520 rounds to inf");
    CHECK(qk_fp32_to_fp16(65519.996f) == 0x7bff, "just below 65520");
    CHECK(qk_fp32_to_fp16(0x1p-24f) == 0x0001, "smallest subnormal");
    CHECK(qk_fp32_to_fp16(0x1p-25f) == 0x0000, "half of it ties to even (0)");
    CHECK(qk_fp32_to_fp16(0x1.8p-24f) == 0x0002, "1.5 ulp ties to even (2)");
    CHECK(qk_fp32_to_fp16(1.0f + 0x1p-11f) == 0x3c00, "tie to even at 1");
    CHECK(qk_fp32_to_fp16(1.0f + 0x3p-11f) == 0x3c02, "tie to even up");
    CHECK(qk_fp16_to_fp32(0x0001) == 0x1p-24f, "subnormal back");
    CHECK(qk_fp16_to_fp32(0x7bff) == 65504.0f, "max back");
#if defined(__x86_64__)
    if (!(qk_cpu()->os_enabled[QK_F_F16C] && qk_cpu()->os_enabled[QK_F_AVX])) {
        tu_skipf("fp16 vs F16C: CPU lacks f16c");
        return;
    }
    size_t bad = 0, n = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float a = qk_fp16_to_fp32((uint16_t)h), b = hw_h2f((uint16_t)h);
        if (memcmp(&a, &b, 4)) bad++;
        n++;
        /* every float in a window around this half value, and the midpoints */
        uint32_t fb;
        memcpy(&fb, &b, 4);
        for (int d = -3; d <= 3; d++) {
            uint32_t v = fb + (uint32_t)d;
            float f;
            memcpy(&f, &v, 4);
            if (qk_fp32_to_fp16(f) != hw_f2h(f)) bad++;
            n++;
        }
        if ((h & 0x7c00) != 0x7c00 && (h & 0x7fff) != 0x7bff) { /* midpoint to the next half and its neighbours */
            float nx = qk_fp16_to_fp32((uint16_t)(h + 1));
            double mid = ((double)b + (double)nx) / 2;
            float fm = (float)mid;
            uint32_t mb;
            memcpy(&mb, &fm, 4);
            for (int d = -2; d <= 2; d++) {
                uint32_t v = mb + (uint32_t)d;
                float f;
                memcpy(&f, &v, 4);
                if (qk_fp32_to_fp16(f) != hw_f2h(f)) bad++;
                n++;
            }
        }
    }
    for (uint64_t v = 0; v < (1ull << 32); v += 65521) { /* a stride through every float bit pattern */
        float f;
        uint32_t u = (uint32_t)v;
        memcpy(&f, &u, 4);
        if (qk_fp32_to_fp16(f) != hw_f2h(f)) bad++;
        n++;
    }
    CHECK(bad == 0, "%zu of %zu fp16 conversions differ from F16C", bad, n);
    printf("fp16: %zu conversions identical to F16C\n", n);
#else
    tu_skipf("fp16 vs F16C: not an x86 CPU");
#endif
}

int main(void) {
    tu_rng rng = {tu_seed()};
    test_fp16();
    test_hand_cases();
    test_quantize_variants(&rng);
    test_nonfinite();
    test_one_sign(&rng);
    test_clamp_reached(&rng);
    test_w4a_range();
    test_f16_edge();
    test_dequantize_variants(&rng);
    test_dequantize_large(&rng);
    test_quantize_large(&rng);
    test_actquant_variants(&rng);
    return tu_finish("test_quant");
}
