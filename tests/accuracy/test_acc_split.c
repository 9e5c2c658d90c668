/* The two errors, never confused (issue 6, Tests): for every (format, g,
 * mode), the evaluation engine of qkbench accuracy/sweep runs every variant
 * of every tier this CPU has; each variant's kernel error must lie inside
 * the error model (ratio <= 2·(K+16)), and the quantization error must be
 * identical, bit for bit, across the tiers: it is computed from the codes,
 * and every tier's quantizer must write the reference's codes. Variants this
 * CPU cannot run are reported as SKIP. */
#include "evaluate.h"
#include "refmath.h"
#include "test_util.h"

typedef struct seen {
    acc_row first;
    int have;
    size_t rows, ran;
} seen;

static seen table[QK_FORMAT_COUNT][QK_MODE_COUNT][8];
static size_t group_slot(size_t g, size_t K) { return g == K ? 7 : g == 32 ? 0 : g == 64 ? 1 : g == 128 ? 2 : g == 256 ? 3 : 6; }

static void on_row(void *ctx, const acc_row *r) {
    (void)ctx;
    char c[200];
    snprintf(c, sizeof c, "%s g=%zu %s %s M=%zu", qk_format_name(r->format), r->group, qk_mode_name(r->mode), r->kernel->name, r->M);
    tu_context = c;
    seen *s = &table[r->format][r->mode][group_slot(r->group, r->K)];
    s->rows++;
    if (r->skip[0]) {
        tu_skipf("%s: %s", r->kernel->name, r->skip);
        return;
    }
    s->ran++;
    CHECK(r->k_ok && r->k_ratio <= r->k_bound, "kernel error ratio %.3g outside the bound %.0f", r->k_ratio, r->k_bound);
    CHECK(!strcmp(r->codes_check, "same"), "quantizers of other tiers: %s", r->codes_check);
    CHECK(!strcmp(r->deq_check, "same"), "dequantizers of other tiers: %s", r->deq_check);
    if (r->has_decomp) CHECK(!strcmp(r->act_check, "same"), "activation quantizers of other tiers: %s", r->act_check);
    CHECK(r->k_err.nonfinite == 0, "%zu non-finite outputs", r->k_err.nonfinite);
    if (!s->have) {
        s->first = *r;
        s->have = 1;
        return;
    }
    /* quantization error: bit-identical across variants and tiers */
    CHECK(memcmp(&s->first.q_err, &r->q_err, sizeof r->q_err) == 0, "quantization error differs from %s's: SQNR %.17g vs %.17g",
          s->first.kernel->name, s->first.q_err.sqnr_db, r->q_err.sqnr_db);
    CHECK(memcmp(&s->first.w_err, &r->w_err, sizeof r->w_err) == 0, "weight error differs from %s's", s->first.kernel->name);
    if (r->has_decomp)
        CHECK(memcmp(&s->first.decomp, &r->decomp, sizeof r->decomp) == 0, "decomposition differs from %s's", s->first.kernel->name);
}

static void run(size_t M, size_t N, size_t K, qk_dist wd, qk_dist xd, uint64_t seed) {
    acc_opts o;
    acc_opts_init(&o);
    o.M = M, o.N = N, o.K = K;
    o.groups[0] = 32, o.groups[1] = 128, o.groups[2] = ACC_GROUP_K, o.ngroups = 3;
    o.w.gen.dist = wd, o.x.gen.dist = xd;
    memset(table, 0, sizeof table);
    acc_mat w, x;
    char err[512];
    if (acc_mat_generate(&w, &o.w.gen, seed, 1, N, K, err, sizeof err) || acc_mat_generate(&x, &o.x.gen, seed, 2, M, K, err, sizeof err)) {
        CHECK(0, "generate: %s", err);
        return;
    }
    acc_eval_cfg c = {0};
    c.o = &o;
    c.threads = 2;
    c.on_row = on_row;
    printf("M=%zu N=%zu K=%zu, weights %s, activations %s\n", M, N, K, qk_dist_name(wd), qk_dist_name(xd));
    int rc = acc_evaluate(&c, &w, &x, err, sizeof err);
    tu_context = "evaluate";
    CHECK(rc == 0, "acc_evaluate: %s", err);
    /* every (format, g, mode) produced rows, and at least the scalar variant ran */
    size_t combos = 0, variants = 0;
    for (int f = 0; f < QK_FORMAT_COUNT; f++)
        for (int m = 0; m < QK_MODE_COUNT; m++)
            for (int g = 0; g < 8; g++) {
                seen *s = &table[f][m][g];
                if (!s->rows) continue;
                combos++;
                variants += s->ran;
                CHECK(s->ran >= 1, "%s %s: no variant ran", qk_format_name((qk_format)f), qk_mode_name((qk_mode)m));
            }
    size_t want = 0;
    for (int f = 0; f < QK_FORMAT_COUNT; f++)
        for (int m = 0; m < QK_MODE_COUNT; m++)
            if (qk_mode_accepts((qk_mode)m, (qk_format)f)) want += (f == QK_Q4_0 || f == QK_Q8_0) ? 1 : 3;
    CHECK(combos == want, "%zu (format, g, mode) combinations evaluated, expected %zu", combos, want);
    printf("  %zu combinations, %zu variant runs\n", combos, variants);
    acc_mat_free(&w), acc_mat_free(&x);
}

/* Independently of the engine: each tier's own quantizer, then exact math on
 * its codes: the weight and output errors must equal the reference's bit for bit. */
static void per_tier_quantizers(uint64_t seed) {
    size_t M = 3, N = 45, K = 512;
    float *w = malloc(N * K * sizeof *w), *x = malloc(M * K * sizeof *x);
    qk_gen_fill(QK_DIST_GAUSS, 0, seed, 31, 0, w, N * K);
    qk_gen_fill(QK_DIST_GAUSS, 0, seed, 32, 0, x, M * K);
    double *xd = malloc(M * K * sizeof *xd), *yref = malloc(M * N * sizeof *yref), *y = malloc(M * N * sizeof *y);
    qk_x_from_f32(x, K, M, K, xd);
    qk_rows wf = {w, K, NULL};
    qk_exact_matmul(xd, M, K, &wf, N, yref, NULL, 1);
    static const size_t gs[] = {32, 128, 512};
    for (int f = 0; f < QK_FORMAT_COUNT; f++)
        for (size_t gi = 0; gi < 3; gi++) {
            size_t g = gs[gi];
            if ((f == QK_Q4_0 || f == QK_Q8_0) && g != 32) continue;
            qk_scale_type st = (f == QK_Q4_0 || f == QK_Q8_0) ? QK_SCALE_F16 : QK_SCALE_F32;
            qk_err ref_err = {0};
            int have = 0;
            for (size_t i = qk_quantize_kernel_count; i-- > 0;) { /* scalar (last) first */
                const qk_quantize_kernel *k = &qk_quantize_kernels[i];
                if (k->format != (qk_format)f) continue;
                char c[160];
                snprintf(c, sizeof c, "%s g=%zu", k->name, g);
                tu_context = c;
                if (!qk_tier_allowed(k->tier)) {
                    tu_skipf("%s: %s", k->name, qk_tier_unavailable_reason(k->tier));
                    continue;
                }
                qk_qmat q;
                if (qk_qmat_alloc(&q, (qk_format)f, st, N, K, g)) abort();
                CHECK(qk_quantize_with(k, w, K, &q) == QK_OK, "quantize: %s", qk_last_error());
                qk_rows wq = {NULL, 0, &q};
                qk_exact_matmul(xd, M, K, &wq, N, y, NULL, 1);
                qk_err e = qk_err_dd(yref, N, y, N, M, N);
                if (!have) ref_err = e, have = 1;
                else CHECK(memcmp(&e, &ref_err, sizeof e) == 0, "output quantization error %.17g dB, the reference's %.17g dB", e.sqnr_db,
                           ref_err.sqnr_db);
                qk_qmat_free(&q);
            }
        }
    free(w), free(x), free(xd), free(yref), free(y);
}

int main(void) {
    uint64_t seed = tu_seed();
    per_tier_quantizers(seed);
    run(1, 67, 512, QK_DIST_GAUSS, QK_DIST_GAUSS, seed);        /* gemv, N not a multiple of any tile */
    run(5, 37, 256, QK_DIST_STUDENT, QK_DIST_OUTLIER, seed + 1); /* heavy tails, outlier channels */
    if (!tu_quick()) run(3, 130, 4096, QK_DIST_LAPLACE, QK_DIST_SWIGLU, seed + 2);
    return tu_finish("test_acc_split");
}
