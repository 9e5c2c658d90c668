/* gemv/gemm: every variant in the matmul list that this CPU can run, against
 * an independent double-precision computation on the same quantized values
 * (weights read back through the public accessors, activation codes from the
 * scalar reference quantizer), within an error-model tolerance:
 *     |ŷ - y| <= 2·(K + 16)·u·Σ|terms|,  u = 2^-24,
 * on shapes derived from groups and tiles: K = g, several g, 16384, 65536;
 * per channel also K not a multiple of 32 (the kernels' K tails); N and M not
 * multiples of any tile; M = 1; row strides that are not powers of two; an
 * unaligned activation pointer; canaries around and between outputs. Two
 * cases per kernel besides: "cancel" (every product zero, the tolerance 0: an
 * offset of the codes must come off exactly) and the columns run in slices
 * (qk_matmul_run_cols, as the threads of a multi-threaded run do).
 *
 * QK_TEST_NOMEM=1 runs the same cases with every allocation the kernels make
 * for themselves failing (malloc and aligned_alloc are wrapped at link time:
 * the gemm kernels' sums, corrections and scratch, the gemv kernels'
 * re-laid-out activations): each has a path without it, taken only when
 * memory runs out, which must give results as good. The run counts the
 * failed allocations and fails if there were none where a kernel that makes
 * them ran. */
#include "test_util.h"

void *__real_malloc(size_t n);
void *__real_aligned_alloc(size_t a, size_t n);
static int nomem;            /* 1 while a kernel runs under QK_TEST_NOMEM */
static unsigned long denied; /* allocations refused */
void *__wrap_malloc(size_t n);
void *__wrap_aligned_alloc(size_t a, size_t n);
void *__wrap_malloc(size_t n) { return nomem ? (denied++, NULL) : __real_malloc(n); }
void *__wrap_aligned_alloc(size_t a, size_t n) { return nomem ? (denied++, NULL) : __real_aligned_alloc(a, n); }
static int nomem_mode;

static const double U = 0x1p-24;

enum { D_GAUSS, D_OUTLIER, D_EXTREME, D_KINDS, D_CANCEL = D_KINDS };
static const char *const dnames[D_KINDS + 1] = {"gauss", "outlier", "extreme", "cancel"};

/* "extreme": every value ±1 with random signs, so every code sits at the end
 * of its range (±127, ±7, 0/15): the case that saturates a naive vpmaddubsw. */
static void fill(tu_rng *r, float *x, size_t n, int kind) {
    for (size_t i = 0; i < n; i++) {
        if (kind == D_EXTREME) x[i] = (tu_next(r) & 1) ? 1.0f : -1.0f;
        else if (kind == D_OUTLIER) x[i] = (float)(tu_gauss(r) * ((i % 61) == 3 ? 30.0 : 1.0));
        else x[i] = (float)tu_gauss(r);
    }
}

/* "cancel" (run on its own, not in the rotation of kinds): weights zero at
 * even k, activations zero at odd k and large at even k, so every product
 * q·a is 0 while the activations' sums are not: a kernel must give exactly
 * 0 (the tolerance is 0), which an offset (codes q + 8, q + 128) taken off
 * in f32 after the sum does not (it leaves the rounding of 8·sw·sa·Σa). */
static void cancel_pattern(float *x, size_t rows, size_t K, size_t ld, int weights) {
    for (size_t r = 0; r < rows; r++)
        for (size_t k = 0; k < K; k++) x[r * ld + k] = (k % 2 == 0) == (weights != 0) ? 0.0f : x[r * ld + k] * (weights ? 1.0f : 50.0f);
}

static const qk_actquant_kernel *scalar_actquant(qk_act_rule r) {
    for (size_t i = 0; i < qk_actquant_kernel_count; i++)
        if (qk_actquant_kernels[i].rule == r && qk_actquant_kernels[i].tier == QK_TIER_SCALAR) return &qk_actquant_kernels[i];
    return NULL;
}

/* Exact y and Σ|terms| for one output, from the public accessors. */
static void reference(const qk_qmat *w, const float *x, const qk_qact *xq, size_t m, size_t n, double *y, double *mag) {
    size_t K = w->cols, g = w->group, ng = K / g;
    double acc = 0, ab = 0;
    for (size_t j = 0; j < ng; j++) {
        double s = qk_qmat_scale(w, n, j), mn = qk_qmat_min(w, n, j);
        if (!xq) {
            for (size_t i = 0; i < g; i++) {
                size_t k = j * g + i;
                double wv = mn + s * qk_qmat_code(w, n, k), xv = x[k];
                acc += wv * xv;
                ab += (fabs(mn) + fabs(s * qk_qmat_code(w, n, k))) * fabs(xv);
            }
        } else {
            const int8_t *qa = xq->codes + m * K + j * g;
            double sa = xq->scales[m * ng + j];
            int64_t dot = 0, adot = 0, asum = 0;
            for (size_t i = 0; i < g; i++) {
                int c = qk_qmat_code(w, n, j * g + i);
                dot += (int64_t)c * qa[i];
                adot += (int64_t)abs(c * qa[i]);
                asum += abs(qa[i]);
            }
            acc += sa * (mn * (double)xq->sums[m * ng + j] + s * (double)dot);
            ab += fabs(sa) * (fabs(mn) * (double)asum + fabs(s) * (double)adot);
        }
    }
    *y = acc;
    *mag = ab;
}

/* split: the columns run in three slices at multiples of the kernel's nr
 * (qk_matmul_run_cols, the per-thread slices of a multi-threaded run: the
 * packed offset of a slice, a kernel starting at a row that is not 0). */
typedef struct shape { size_t M, N, K, g; int split; } shape;

static int run_case(const qk_matmul_kernel *k, const shape *sh, int kind, qk_scale_type st, tu_rng *rng) {
    size_t M = sh->M, N = sh->N, K = sh->K, g = sh->g;
    size_t ldx = K + 3, ldy = N + 5;
    char ctx[200];
    snprintf(ctx, sizeof ctx, "%s M=%zu N=%zu K=%zu g=%zu %s %s%s", k->name, M, N, K, g, st ? "f16" : "f32", dnames[kind],
             sh->split ? " split" : "");
    tu_context = ctx;

    float *wf = malloc(N * K * sizeof(float));
    fill(rng, wf, N * K, kind == D_CANCEL ? D_GAUSS : kind);
    if (kind == D_CANCEL) cancel_pattern(wf, N, K, K, 1);
    qk_qmat w;
    if (qk_qmat_alloc(&w, k->format, st, N, K, g) != QK_OK) {
        CHECK(0, "alloc: %s", qk_last_error());
        free(wf);
        return 0;
    }
    qk_status s = qk_quantize(wf, K, &w);
    CHECK(s == QK_OK, "quantize: %s", qk_last_error());

    float *xbuf = malloc((M * ldx + 1) * sizeof(float)), *x = xbuf + 1; /* unaligned */
    fill(rng, x, M * ldx, kind == D_EXTREME ? D_EXTREME : D_GAUSS);
    if (kind == D_CANCEL) cancel_pattern(x, M, K, ldx, 0);
    qk_act_rule rule = qk_mode_act_rule(k->mode);
    qk_qact xq = {0};
    if (rule != QK_ACT_F32) {
        if (qk_qact_alloc(&xq, rule, M, K, g) != QK_OK) abort();
        CHECK(qk_actquant_with(scalar_actquant(rule), x, ldx, &xq) == QK_OK, "actquant: %s", qk_last_error());
    }

    float *y = tu_canary_alloc(M * ldy);
    qk_matmul_plan p;
    s = qk_matmul_prepare(&p, k, k->op, k->mode, &w, M);
    CHECK(s == QK_OK, "prepare: %s", qk_last_error());
    if (s == QK_OK && sh->split) {
        size_t nr = k->nr ? k->nr : 1, cut[4] = {0, nr, 2 * nr, N};
        s = qk_matmul_quantize_acts(&p, M, x, ldx);
        CHECK(s == QK_OK, "quantize_acts: %s", qk_last_error());
        nomem = nomem_mode;
        if (s == QK_OK) /* run_cols returns nothing: the slices are judged by their output below */
            for (int i = 0; i < 3; i++) qk_matmul_run_cols(&p, M, x, ldx, y, ldy, cut[i], cut[i + 1]);
        nomem = 0;
        qk_matmul_release(&p);
    } else if (s == QK_OK) {
        nomem = nomem_mode;
        s = qk_matmul_run(&p, M, x, ldx, y, ldy);
        nomem = 0;
        CHECK(s == QK_OK, "run: %s", qk_last_error());
        qk_matmul_release(&p);
    }
    int ok = 1;
    double worst = 0;
    for (size_t m = 0; m < M && s == QK_OK; m++) {
        for (size_t n = 0; n < N; n++) {
            double ref, mag;
            reference(&w, x + m * ldx, rule != QK_ACT_F32 ? &xq : NULL, m, n, &ref, &mag);
            double err = fabs((double)y[m * ldy + n] - ref), tol = 2.0 * (double)(K + 16) * U * mag + 1e-37;
            if (!(err <= tol)) {
                if (ok) CHECK(err <= tol, "y[%zu][%zu] = %.9g, exact %.9g, |err| %.3g > tol %.3g", m, n, (double)y[m * ldy + n], ref, err, tol);
                ok = 0;
            }
            if (mag > 0 && err / (U * mag) > worst) worst = err / (U * mag);
        }
        for (size_t n = N; n < ldy; n++)
            if (!tu_is_canary(y + m * ldy + n)) {
                if (ok) CHECK(0, "wrote into the stride gap of row %zu at column %zu", m, n);
                ok = 0;
            }
    }
    CHECK(tu_canaries_ok(y, M * ldy), "canaries around the output were overwritten");
    if (ok) tu_pass++;
    tu_canary_free(y);
    if (rule != QK_ACT_F32) qk_qact_free(&xq);
    free(xbuf);
    qk_qmat_free(&w);
    free(wf);
    tu_context = "";
    return ok;
}

/* qk_matmul_repack: after the weights change in place, a packed kernel's
 * plan must follow them: the run gives what a plan prepared afresh on the new
 * weights gives, bit for bit, and not what it gave before. */
static void test_repack(const qk_matmul_kernel *k, tu_rng *rng) {
    size_t M = k->op == QK_OP_GEMV ? 1 : 3, N = 2 * (k->nr ? k->nr : 1) + 1, K = 256, g = 32;
    qk_scale_type st = k->format == QK_Q4_0 || k->format == QK_Q8_0 ? QK_SCALE_F16 : QK_SCALE_F32;
    float *wf = tu_floats(N * K), *x = tu_floats(M * K), *y = tu_floats(3 * M * N);
    fill(rng, x, M * K, D_GAUSS);
    qk_qmat w;
    qk_matmul_plan p, fresh;
    if (qk_qmat_alloc(&w, k->format, st, N, K, g)) abort();
    fill(rng, wf, N * K, D_GAUSS);
    CHECK(qk_quantize(wf, K, &w) == QK_OK && qk_matmul_prepare(&p, k, k->op, k->mode, &w, M) == QK_OK &&
              qk_matmul_run(&p, M, x, K, y, N) == QK_OK,
          "%s: %s", k->name, qk_last_error());
    fill(rng, wf, N * K, D_GAUSS);
    CHECK(qk_quantize(wf, K, &w) == QK_OK && qk_matmul_repack(&p) == QK_OK && qk_matmul_run(&p, M, x, K, y + M * N, N) == QK_OK,
          "%s: %s", k->name, qk_last_error());
    CHECK(qk_matmul_prepare(&fresh, k, k->op, k->mode, &w, M) == QK_OK && qk_matmul_run(&fresh, M, x, K, y + 2 * M * N, N) == QK_OK,
          "%s: %s", k->name, qk_last_error());
    CHECK(memcmp(y + M * N, y + 2 * M * N, M * N * sizeof(float)) == 0, "%s: the repacked plan differs from a fresh one", k->name);
    CHECK(memcmp(y, y + M * N, M * N * sizeof(float)) != 0, "%s: the run after repack gave the old weights' results", k->name);
    qk_matmul_release(&p);
    qk_matmul_release(&fresh);
    qk_qmat_free(&w);
    free(wf);
    free(x);
    free(y);
}

/* Packing W whole gives the bytes of packing it in slices of rows, each at
 * its packed_offset (tiles depend only on their own rows; the last tile is
 * zero-padded at W's end either way). The avx512 integer packs write whole
 * lines with non-temporal stores when the packed weights reach
 * QK_STREAM_MIN_BYTES (8 MiB), plain stores below it: 2048x8192 packs to
 * 8-24 MiB whole, and to under 5 MiB in slices of about 512 rows, so the
 * two take both ways. QK_TEST_QUICK (emulated runs, no AVX-512): 256 rows,
 * slices of about 64. */
static void test_pack_slices(const qk_matmul_kernel *k, tu_rng *rng) {
    size_t N = tu_quick() ? 256 : 2048, K = 8192, g = 32, ng = K / g, nr = k->nr ? k->nr : 1;
    size_t rs = ((tu_quick() ? 64 : 512) + nr - 1) / nr * nr; /* rows a slice, a multiple of nr */
    qk_scale_type st = k->format == QK_Q4_0 || k->format == QK_Q8_0 ? QK_SCALE_F16 : QK_SCALE_F32;
    qk_qmat w;
    if (qk_qmat_alloc(&w, k->format, st, N, K, g)) abort();
    for (size_t i = 0; i < N * w.row_bytes; i++) w.codes[i] = (uint8_t)tu_next(rng);
    for (size_t i = 0; w.scales && st == QK_SCALE_F32 && i < N * ng; i++) {
        ((float *)w.scales)[i] = (float)tu_gauss(rng);
        if (w.mins) ((float *)w.mins)[i] = (float)tu_gauss(rng);
    }
    size_t bytes = k->pack_size(&w), room = (bytes + 63) / 64 * 64;
    uint8_t *a = aligned_alloc(64, room), *b = aligned_alloc(64, room);
    if (!a || !b) abort();
    memset(a, 0xa5, room);
    memset(b, 0x5a, room);
    k->pack(&w, a);
    for (size_t n0 = 0; n0 < N; n0 += rs) {
        qk_qmat v = qk_qmat_rows(&w, n0, n0 + rs < N ? n0 + rs : N);
        k->pack(&v, b + k->packed_offset(&w, n0));
    }
    CHECK(memcmp(a, b, bytes) == 0, "%s: %zux%zu packed whole differs from the same packed in slices of %zu rows", k->name, N, K, rs);
    free(a);
    free(b);
    qk_qmat_free(&w);
}

int main(void) {
    const uint64_t seed = tu_seed();
    const int quick = tu_quick();
    size_t unselected = 0;
    const char *nm = getenv("QK_TEST_NOMEM");
    nomem_mode = nm && *nm == '1';
    int allocating = 0; /* a kernel ran that allocates for itself (x86 avx512 tiers) */
    for (size_t ki = 0; ki < qk_matmul_kernel_count; ki++) {
        const qk_matmul_kernel *k = &qk_matmul_kernels[ki];
        if (!tu_selected(k->name)) {
            unselected++;
            continue;
        }
        tu_rng rng = tu_kernel_rng(seed, k->name);
        const char *why = qk_tier_unavailable_reason(k->tier);
        if (why) {
            tu_skipf("%s: %s", k->name, why);
            continue;
        }
        int blocks = k->format == QK_Q4_0 || k->format == QK_Q8_0;
        allocating |= k->tier == QK_TIER_AVX512 || k->tier == QK_TIER_AVX512VNNI;
        size_t nr = k->nr ? k->nr : 1, mr = k->mr ? k->mr : 1;
        size_t Ns[] = {1, nr + 1, 2 * nr + 3, 67};
        /* every remainder row count after whole row tiles of up to 6 rows: 1, 3, then 4 and 5 (6-row tiles) or 2 and 3 */
        size_t Ms[] = {1, mr + 1, 2 * mr + 3, 3 * mr - 2, 4 * mr - 1};
        size_t nM = k->op == QK_OP_GEMV ? 1 : 5;
        static const size_t gs[] = {32, 64, 128, 256, 0};
        int cases = 0, good = 0;
        for (size_t gi = 0; gi < 5; gi++) {
            if (blocks && gi > 0) break;
            size_t Ks[] = {0, 0, 0, 0, 0};
            size_t g0 = gs[gi];
            Ks[0] = g0 ? g0 : 96;           /* K = g (per-channel: K = 96) */
            Ks[1] = blocks ? 928 : g0 ? 3 * g0 : 1280; /* several groups (q4_0/q8_0: 29 blocks, a 16-block chunk and 13: every word of gemv's partial scale vector) */
            Ks[2] = gi == 2 || blocks ? (quick ? 1024 : 16384) : 0; /* long K once */
            if (gi == 3) Ks[2] = quick ? 4096 : 8192; /* g = 256 over 16 and 32 groups: gemv's 16-group scale vectors */
            if (!g0) { /* per channel, K not a multiple of 32 (odd where the codes are bytes): every kernel's K tail */
                Ks[2] = k->format == QK_W8S ? 1216 : 1152; /* an odd number of the avx512 gemv's blocks (64 values of 8-bit codes, 128 of 4-bit) */
                Ks[3] = tu_tail_k(0, k->format == QK_W8S);
                Ks[4] = tu_tail_k(1, k->format == QK_W8S);
            }
            for (size_t kk = 0; kk < 5; kk++) {
                if (!Ks[kk]) continue;
                size_t K = Ks[kk], g = g0 ? g0 : K;
                for (size_t ni = 0; ni < 4; ni++)
                    for (size_t mi = 0; mi < nM; mi++) {
                        shape sh = {Ms[mi], Ns[ni], K, g, 0};
                        if (K >= 16384 && (sh.N > 2 * nr + 3 || sh.M > mr + 1)) continue;
                        int kind = (int)((ni + mi + kk) % D_KINDS);
                        qk_scale_type st = blocks ? QK_SCALE_F16 : (qk_scale_type)((ni + kk) % 2);
                        cases++;
                        good += run_case(k, &sh, kind, st, &rng);
                    }
            }
        }
        /* int32 accumulation over K = 65536 with extreme codes; the smallest case K = g = 32, N = 1 */
        shape big = {1, nr + 1, quick ? 4096 : 65536, blocks ? 32 : 256, 0};
        cases++;
        good += run_case(k, &big, D_EXTREME, QK_SCALE_F32 + blocks, &rng);
        /* K past the 16384 values that the avx512 integer gemv (its activation tables)
         * and the avx2 W4A32 gemv (x transposed) keep in thread-local storage, g = 32:
         * theirs on the heap (their other paths when QK_TEST_NOMEM refuses it) */
        shape past = {1, nr + 1, quick ? 4096 : 16384 + 3 * 128, 32, 0};
        cases++;
        good += run_case(k, &past, D_GAUSS, blocks ? QK_SCALE_F16 : QK_SCALE_F32, &rng);
        /* gemm over many rows and several slices of K, g = 32, 128 and K (q4_0/q8_0: 32),
         * over more X than the x86 gemms take in one block of rows (qk_row_block).
         * Integer activations, 2.3 MiB (blocks of 2 MiB on avx512): 71 rows = blocks of 36
         * and 35, the last ending in a 3-row tile; per channel the groups are dotted in
         * pieces whose Σa are made per block of rows. f32 activations, 8.7 MiB (blocks of
         * QK_F32_ROW_BLOCK_BYTES): 131 rows = blocks of 66 and 65 (avx512's 6-row tiles: a
         * 5-row tail) or 68 and 63 (avx2's 4-row tiles: a 3-row tail), over 17 slices of K
         * (x86/avx512/gemm_a32__avx512.c walks K 1024 at a time), w4a's Σx per row and
         * group made once per call; per channel the slices are pieces of the one group. */
        if (k->op == QK_OP_GEMM && !quick) {
            const int f32 = qk_mode_act_rule(k->mode) == QK_ACT_F32;
            const size_t M = f32 ? 131 : 71, K = f32 ? 17408 : 32768;
            for (size_t gi = 0; gi < 3; gi++) {
                shape rows = {M, 2, K, blocks || gi == 0 ? 32 : gi == 1 ? 128 : K, 0};
                cases++;
                good += run_case(k, &rows, D_GAUSS, QK_SCALE_F32 + blocks, &rng);
                if (blocks) break;
            }
            /* integer activations, few bytes but more rows than a block holds on avx512
             * (GM_ROW_BLOCK_ROWS): 137 rows = blocks of 72 and 65, the last ending in a
             * 1-row tile */
            if (!f32) {
                shape many = {137, 2, 256, 32, 0};
                cases++;
                good += run_case(k, &many, D_GAUSS, QK_SCALE_F32 + blocks, &rng);
            }
        }
        /* every product zero, the activations' sums not: y must be exactly 0 */
        for (size_t gi = 0; gi < 5; gi++) {
            if (blocks && gi > 0) break;
            shape c = {nM > 1 ? mr + 1 : 1, nr + 1, 512, gs[gi] ? gs[gi] : 512, 0};
            cases++;
            good += run_case(k, &c, D_CANCEL, (qk_scale_type)(gi % 2) + blocks * QK_SCALE_F16, &rng);
        }
        /* the columns in three slices, as threads run them */
        for (size_t gi = 0; gi < 2; gi++) {
            if (blocks && gi > 0) break;
            shape c = {nM > 1 ? 2 * mr + 3 : 1, 3 * nr + 5, 1024, gi ? 128 : 32, 1};
            cases++;
            good += run_case(k, &c, D_GAUSS, (qk_scale_type)(gi % 2) + blocks * QK_SCALE_F16, &rng);
        }
        shape tiny = {1, 1, 32, 32, 0};
        cases++;
        good += run_case(k, &tiny, D_GAUSS, QK_SCALE_F32 + blocks, &rng);
        if (k->pack) {
            test_repack(k, &rng);
            test_pack_slices(k, &rng);
        }
        printf("%-40s %d/%d shapes within the error model\n", k->name, good, cases);
    }
    if (unselected) printf("QK_TEST_KERNELS=%s: %zu kernels not run\n", getenv("QK_TEST_KERNELS"), unselected);
    if (nomem_mode) {
        printf("QK_TEST_NOMEM: %lu allocations refused to the kernels\n", denied);
        if (allocating) CHECK(denied > 0, "no kernel allocation was refused: the out-of-memory paths did not run");
    }
    return tu_finish("test_matmul");
}
