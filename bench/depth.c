/* qkbench depth: error through a stack of L residual blocks
 *     h ← h + W₂·silu(W₁·rmsnorm(h))
 * run next to an FP32 reference (DESIGN §4). The reference keeps h in double
 * and accumulates every product in double over the f32 weights; the quantized
 * path keeps h in f32 and runs libqk's kernels on quantized weights. Per
 * layer: ‖Δh‖/‖h‖, and the cosine between the error inherited from the layer
 * below (Δh before the block) and the error the block adds (its output on the
 * quantized path minus its output on the reference path): negative means the
 * new error partly cancels the old. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acc_cli.h"
#include "acc_report.h"
#include "commands.h"
#include "json.h"
#include "metrics.h"
#include "refmath.h"

static const unsigned DEPTH_ALLOWED = ACC_O_DATA | ACC_O_SCALES | ACC_O_OUTPUT;

static void help(void) {
    printf("usage: qkbench depth [options]\n"
           "A stack of L residual blocks h <- h + W2·silu(W1·rmsnorm(h)) run in FP32 (double accumulation, h in\n"
           "double) and with quantized weights through libqk's kernels (h in f32). Per layer: the relative hidden\n"
           "error |dh|/|h|, the error the block adds |a|/|h|, and cos(inherited error, added error) (negative:\n"
           "errors cancel), plus the weight SQNR of W1 and W2.\n\n"
           "options:\n"
           "  --layers L           blocks (default 8; with --weights: as many as the file holds, at most L if given)\n"
           "  --dim D              hidden size (default 1024)\n"
           "  --ffn F              inner size (default 4096)\n"
           "  --tokens M           rows of h (default 16)\n"
           "  --config LIST        comma list of FORMAT:G:MODE (G a group size or K), default\n"
           "                       w4s:128:W4A32,w4s:128:W4A8,w4s:32:W4A4,w8s:128:W8A8,q4_0:32:q4_0xq8_0\n"
           "  --isa TIER|all       cap the tier of the kernels (default: the dispatcher's best)\n"
           "  --weights FILE       read W1, W2 of every layer from a .safetensors file (F32/F16/BF16); names\n"
           "  --w1 PATTERN         from the patterns ({} = layer index from 0; default blocks.{}.w1 (F x D) and\n"
           "  --w2 PATTERN         blocks.{}.w2 (D x F)), e.g. model.layers.{}.mlp.gate_proj.weight\n");
    acc_opts_help(DEPTH_ALLOWED);
    printf("Generated weights are scaled by 1/sqrt(fan-in); --dist sets them, --act-dist the initial h.\n");
}

typedef struct cfgq {
    qk_format f;
    size_t g; /* ACC_GROUP_K = per channel */
    qk_mode m;
} cfgq;

static int parse_configs(const char *s, cfgq *out, int max, int *n) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", s);
    int c = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *p1 = strchr(tok, ':'), *p2 = p1 ? strchr(p1 + 1, ':') : NULL;
        if (!p2 || c == max) return -1;
        *p1 = *p2 = 0;
        if (qk_format_parse(tok, &out[c].f) || qk_mode_parse(p2 + 1, &out[c].m)) return -1;
        if (!strcmp(p1 + 1, "K") || !strcmp(p1 + 1, "k")) out[c].g = ACC_GROUP_K;
        else if (acc_parse_size(p1 + 1, &out[c].g) || out[c].g == 0) return -1;
        if (!qk_mode_accepts(out[c].m, out[c].f)) return -2;
        c++;
    }
    *n = c;
    return c ? 0 : -1;
}

/* A block's weights in f32, and (per config) quantized. */
typedef struct layer {
    float *w1, *w2; /* F×D, D×F */
} layer;

static void rmsnorm_d(const double *h, size_t D, double *out) {
    double s = 0;
    for (size_t i = 0; i < D; i++) s += h[i] * h[i];
    double r = 1.0 / sqrt(s / (double)D + 1e-6);
    for (size_t i = 0; i < D; i++) out[i] = h[i] * r;
}

static double silu_d(double a) { return a / (1.0 + exp(-a)); }

static void put_name(char *out, size_t n, const char *pat, size_t l) {
    const char *b = strstr(pat, "{}");
    if (!b) snprintf(out, n, "%s", pat);
    else snprintf(out, n, "%.*s%zu%s", (int)(b - pat), pat, l, b + 2);
}

typedef struct outrow {
    int config;
    size_t layer;
    double h_norm, rel, added, cos_ia, w1_sqnr, w2_sqnr;
} outrow;

static char *csv_of(const outrow *r, size_t n, const cfgq *cf) {
    qkb_buf b = {0};
    qkb_buf_puts(&b, "format,group,mode,layer,h_rms,rel_err,added_rel,cos_inherited_added,w1_sqnr_db,w2_sqnr_db\n");
    for (size_t i = 0; i < n; i++) {
        const cfgq *c = &cf[r[i].config];
        qkb_buf_printf(&b, "%s,%zu,%s,%zu,%.6g,%.6g,%.6g,", qk_format_name(c->f), c->g, qk_mode_name(c->m), r[i].layer + 1, r[i].h_norm,
                       r[i].rel, r[i].added);
        if (isnan(r[i].cos_ia)) qkb_buf_puts(&b, ",");
        else qkb_buf_printf(&b, "%.6g,", r[i].cos_ia);
        qkb_buf_printf(&b, "%.6g,%.6g\n", r[i].w1_sqnr, r[i].w2_sqnr);
    }
    return qkb_buf_take(&b);
}

static char *json_of(const outrow *r, size_t n, const cfgq *cf, size_t L, size_t D, size_t F, size_t M, uint64_t seed,
                     const char *wdesc, const char *hdesc) {
    qkb_buf b = {0};
    qkw w;
    qkw_init(&w, &b);
    qkw_obj(&w);
    qkw_kstr(&w, "command", "depth");
    qkw_kstr(&w, "block", "h <- h + W2*silu(W1*rmsnorm(h))");
    qkw_kint(&w, "layers", (long long)L), qkw_kint(&w, "dim", (long long)D), qkw_kint(&w, "ffn", (long long)F);
    qkw_kint(&w, "tokens", (long long)M), qkw_kint(&w, "seed", (long long)seed);
    qkw_kstr(&w, "weights", wdesc), qkw_kstr(&w, "initial_h", hdesc);
    qkw_key(&w, "rows");
    qkw_arr(&w);
    for (size_t i = 0; i < n; i++) {
        const cfgq *c = &cf[r[i].config];
        qkw_obj(&w);
        qkw_kstr(&w, "format", qk_format_name(c->f)), qkw_kint(&w, "group", (long long)c->g), qkw_kstr(&w, "mode", qk_mode_name(c->m));
        qkw_kint(&w, "layer", (long long)r[i].layer + 1);
        qkw_knum(&w, "h_rms", r[i].h_norm), qkw_knum(&w, "rel_err", r[i].rel), qkw_knum(&w, "added_rel", r[i].added);
        qkw_knum(&w, "cos_inherited_added", r[i].cos_ia);
        qkw_knum(&w, "w1_sqnr_db", r[i].w1_sqnr), qkw_knum(&w, "w2_sqnr_db", r[i].w2_sqnr);
        qkw_end_obj(&w);
    }
    qkw_end_arr(&w);
    qkw_end_obj(&w);
    qkb_buf_puts(&b, "\n");
    return qkb_buf_take(&b);
}

static int save(const char *path, char *text) {
    if (!text) return -1;
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    int bad = !f || fputs(text, f) < 0;
    if (f) bad |= fclose(f) != 0;
    free(text);
    if (bad || rename(tmp, path)) {
        remove(tmp);
        fprintf(stderr, "qkbench depth: cannot write %s\n", path);
        return -1;
    }
    return 0;
}

/* Weight SQNR of one quantized matrix against its f32 source. */
static double wsqnr(const qk_qmat *q, const float *w, size_t rows, size_t K, double *scratch) {
    qk_rows qr = {NULL, 0, q};
    double w2 = 0, e2 = 0;
    for (size_t n = 0; n < rows; n++) {
        qk_rows_get(&qr, n, K, scratch);
        for (size_t k = 0; k < K; k++) {
            double v = w[n * K + k], d = scratch[k] - v;
            w2 += v * v, e2 += d * d;
        }
    }
    return e2 > 0 ? 10 * log10(w2 / e2) : INFINITY;
}

int qk_cmd_depth(int argc, char **argv) {
    acc_opts o;
    acc_opts_init(&o);
    size_t L = 8, D = 1024, F = 4096, M = 16;
    int layers_given = 0;
    const char *w1pat = "blocks.{}.w1", *w2pat = "blocks.{}.w2", *weights = NULL;
    cfgq cf[16];
    int ncf = 0;
    if (parse_configs("w4s:128:W4A32,w4s:128:W4A8,w4s:32:W4A4,w8s:128:W8A8,q4_0:32:q4_0xq8_0", cf, 16, &ncf)) return 2;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int took = acc_opts_take(&o, DEPTH_ALLOWED, "depth", argc, argv, &i);
        if (took < 0) goto usage;
        if (took) continue;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            help();
            acc_opts_free(&o);
            return 0;
        }
        static const char *const valued[] = {"--layers", "--dim", "--ffn", "--tokens", "--config", "--isa", "--weights", "--w1", "--w2"};
        int known = 0;
        for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++) known |= !strcmp(a, valued[k]);
        if (!known) {
            fprintf(stderr, "qkbench depth: unknown option '%s' (see qkbench depth --help)\n", a);
            goto usage;
        }
        if (!v) {
            fprintf(stderr, "qkbench depth: %s needs a value (see qkbench depth --help)\n", a);
            goto usage;
        }
        i++;
        size_t *sz = !strcmp(a, "--layers") ? &L : !strcmp(a, "--dim") ? &D : !strcmp(a, "--ffn") ? &F : !strcmp(a, "--tokens") ? &M : NULL;
        if (sz) {
            if (acc_parse_size(v, sz) || *sz == 0 || *sz > (sz == &L ? 1000 : (size_t)1 << 20)) {
                fprintf(stderr, "qkbench depth: %s '%s': expected a positive integer%s\n", a, v, sz == &L ? " up to 1000" : "");
                goto usage;
            }
            layers_given |= sz == &L;
        } else if (!strcmp(a, "--config")) {
            int rc = parse_configs(v, cf, 16, &ncf);
            if (rc) {
                fprintf(stderr, "qkbench depth: --config '%s': %s\n", v,
                        rc == -2 ? "a mode does not take that format (e.g. W8A8 takes w8s)" : "expected FORMAT:G:MODE[,...], e.g. w4s:128:W4A8");
                goto usage;
            }
        } else if (!strcmp(a, "--isa")) {
            if (strcmp(v, "all") != 0 && qk_cli_apply_isa(v)) goto usage;
        } else if (!strcmp(a, "--weights")) {
            weights = v;
        } else if (!strcmp(a, "--w1")) {
            w1pat = v;
        } else {
            w2pat = v;
        }
    }
    if (acc_opts_check(&o, "depth")) goto usage;

    char err[600], wdesc[400], hdesc[200];
    layer *ly = NULL;
    size_t nl = 0;
    int rc = 2;
    qk_tfile tf = {0};
    /* ---- weights ---- */
    if (weights) {
        if (qk_tfile_open(weights, &tf, err, sizeof err)) {
            fprintf(stderr, "qkbench depth: %s\n", err);
            goto usage;
        }
        size_t cap = layers_given ? L : 100000;
        ly = calloc(cap < 4096 ? cap : 4096, sizeof *ly);
        for (size_t l = 0; ly && l < cap && l < 4096; l++) {
            char n1[512], n2[512];
            put_name(n1, sizeof n1, w1pat, l);
            put_name(n2, sizeof n2, w2pat, l);
            long i1 = qk_tfile_find(&tf, n1), i2 = qk_tfile_find(&tf, n2);
            if (i1 < 0 || i2 < 0) {
                if (l == 0) {
                    fprintf(stderr, "qkbench depth: %s: no tensor '%s'%s%s%s (set the names with --w1/--w2)\n", weights,
                            i1 < 0 ? n1 : n2, tf.count ? "; the file holds e.g. '" : "", tf.count ? tf.t[0].name : "", tf.count ? "'" : "");
                    goto cleanup;
                }
                break;
            }
            acc_mat a, b;
            if (acc_mat_read(&a, &tf, weights, (size_t)i1, err, sizeof err)) {
                fprintf(stderr, "qkbench depth: %s\n", err);
                goto cleanup;
            }
            if (acc_mat_read(&b, &tf, weights, (size_t)i2, err, sizeof err)) {
                acc_mat_free(&a);
                fprintf(stderr, "qkbench depth: %s\n", err);
                goto cleanup;
            }
            if (l == 0) F = a.rows, D = a.cols;
            if (a.rows != F || a.cols != D || b.rows != D || b.cols != F) {
                fprintf(stderr, "qkbench depth: %s: layer %zu has W1 %zu x %zu and W2 %zu x %zu; expected W1 F x D = %zu x %zu and W2 D x F\n",
                        weights, l, a.rows, a.cols, b.rows, b.cols, F, D);
                acc_mat_free(&a), acc_mat_free(&b);
                goto cleanup;
            }
            ly[l].w1 = a.v, ly[l].w2 = b.v;
            nl = l + 1;
        }
        L = nl;
        snprintf(wdesc, sizeof wdesc, "%s (%s, %s)", weights, w1pat, w2pat);
    } else {
        ly = calloc(L, sizeof *ly);
        for (size_t l = 0; ly && l < L; l++) {
            acc_mat a, b;
            if (acc_mat_generate(&a, &o.w.gen, o.seed, 100 + 2 * l, F, D, err, sizeof err) ||
                acc_mat_generate(&b, &o.w.gen, o.seed, 101 + 2 * l, D, F, err, sizeof err)) {
                fprintf(stderr, "qkbench depth: %s\n", err);
                goto cleanup;
            }
            float s1 = (float)(1 / sqrt((double)D)), s2 = (float)(1 / sqrt((double)F));
            for (size_t i = 0; i < F * D; i++) a.v[i] *= s1, b.v[i] *= s2;
            ly[l].w1 = a.v, ly[l].w2 = b.v;
            nl = l + 1;
        }
        char g[96];
        qk_gen_spec_describe(&o.w.gen, g, sizeof g);
        snprintf(wdesc, sizeof wdesc, "generated %s / sqrt(fan-in), seed %llu", g, (unsigned long long)o.seed);
    }
    if (!ly) {
        fprintf(stderr, "qkbench depth: out of memory\n");
        goto cleanup;
    }
    acc_mat h0;
    if (acc_mat_generate(&h0, &o.x.gen, o.seed, 2, M, D, err, sizeof err)) {
        fprintf(stderr, "qkbench depth: %s\n", err);
        goto cleanup;
    }
    {
        char g[96];
        qk_gen_spec_describe(&o.x.gen, g, sizeof g);
        snprintf(hdesc, sizeof hdesc, "generated %s, seed %llu", g, (unsigned long long)o.seed);
    }
    size_t mx = D > F ? D : F;
    double *href = malloc(M * D * sizeof(double)), *u = malloc(M * D * sizeof(double)), *a1 = malloc(M * F * sizeof(double));
    double *o2 = malloc(M * D * sizeof(double)), *scratch = malloc(mx * sizeof(double));
    double *refs = malloc(L * M * D * sizeof(double)); /* h of the reference after each layer */
    float *hq = malloc(M * D * sizeof(float)), *uq = malloc(M * D * sizeof(float)), *aq = malloc(M * F * sizeof(float));
    float *oq = malloc(M * D * sizeof(float));
    double *dprev = malloc(M * D * sizeof(double));
    outrow *rows = malloc((size_t)ncf * L * sizeof *rows);
    size_t nrows = 0;
    if (!href || !u || !a1 || !o2 || !scratch || !refs || !hq || !uq || !aq || !oq || !dprev || !rows) {
        fprintf(stderr, "qkbench depth: out of memory\n");
        goto free_all;
    }
    int threads = qk_acc_threads(), tty = isatty(2) && !o.quiet;
    /* ---- the FP32 reference, once ---- */
    for (size_t i = 0; i < M * D; i++) href[i] = h0.v[i];
    for (size_t l = 0; l < L; l++) {
        if (tty) fprintf(stderr, "\r\033[Kreference: layer %zu/%zu", l + 1, L), fflush(stderr);
        for (size_t m = 0; m < M; m++) rmsnorm_d(href + m * D, D, u + m * D);
        qk_rows r1 = {ly[l].w1, D, NULL}, r2 = {ly[l].w2, F, NULL};
        if (qk_exact_matmul(u, M, D, &r1, F, a1, NULL, threads)) goto oom;
        for (size_t i = 0; i < M * F; i++) a1[i] = silu_d(a1[i]);
        if (qk_exact_matmul(a1, M, F, &r2, D, o2, NULL, threads)) goto oom;
        for (size_t i = 0; i < M * D; i++) href[i] += o2[i];
        memcpy(refs + l * M * D, href, M * D * sizeof(double));
    }
    if (!o.quiet) {
        printf("qkbench depth: %zu blocks h <- h + W2·silu(W1·rmsnorm(h)), D = %zu, F = %zu, %zu tokens; seed %llu\n", L, D, F, M,
               (unsigned long long)o.seed);
        printf("weights: %s; initial h: %s\n", wdesc, hdesc);
        printf("reference: h in double, double accumulation over the f32 weights; quantized path: h in f32, libqk kernels\n"
               "(tiers: %s%s). rel = |dh|/|h|; added = |a|/|h| with a the error this block adds; cos = cos(dh before the\n"
               "block, a): negative means the new error partly cancels the inherited one.\n",
               qk_tier_cap() == QK_TIER_COUNT - 1 ? "the dispatcher's best" : "capped at ",
               qk_tier_cap() == QK_TIER_COUNT - 1 ? "" : qk_tier_name(qk_tier_cap()));
    }
    /* ---- each quantized configuration ---- */
    for (int c = 0; c < ncf; c++) {
        size_t g1 = cf[c].g == ACC_GROUP_K ? D : cf[c].g, g2 = cf[c].g == ACC_GROUP_K ? F : cf[c].g;
        if (D % g1 || F % g2) {
            fprintf(stderr, "qkbench depth: %s g=%zu: D=%zu or F=%zu is not a multiple of the group size\n", qk_format_name(cf[c].f), cf[c].g, D, F);
            goto free_all;
        }
        qk_scale_type st = cf[c].f == QK_Q4_0 || cf[c].f == QK_Q8_0 ? QK_SCALE_F16 : o.scales;
        qk_op op = M == 1 ? QK_OP_GEMV : QK_OP_GEMM;
        for (size_t i = 0; i < M * D; i++) hq[i] = h0.v[i];
        memset(dprev, 0, M * D * sizeof(double));
        const char *k1name = "", *k2name = "";
        size_t first_row = nrows;
        for (size_t l = 0; l < L; l++) {
            if (tty) fprintf(stderr, "\r\033[K%s g=%zu %s: layer %zu/%zu", qk_format_name(cf[c].f), cf[c].g, qk_mode_name(cf[c].m), l + 1, L), fflush(stderr);
            qk_qmat q1, q2;
            if (qk_qmat_alloc(&q1, cf[c].f, st, F, D, g1)) goto qkfail;
            if (qk_qmat_alloc(&q2, cf[c].f, st, D, F, g2)) {
                qk_qmat_free(&q1);
                goto qkfail;
            }
            qk_matmul_plan p1, p2;
            int ok = qk_quantize(ly[l].w1, D, &q1) == QK_OK && qk_quantize(ly[l].w2, F, &q2) == QK_OK &&
                     qk_matmul_prepare(&p1, NULL, op, cf[c].m, &q1, M) == QK_OK;
            if (ok && qk_matmul_prepare(&p2, NULL, op, cf[c].m, &q2, M) != QK_OK) {
                qk_matmul_release(&p1);
                ok = 0;
            }
            if (!ok) {
                qk_qmat_free(&q1), qk_qmat_free(&q2);
                goto qkfail;
            }
            k1name = p1.kernel->name, k2name = p2.kernel->name;
            for (size_t m = 0; m < M; m++) { /* rmsnorm in double, rounded to f32 */
                for (size_t i = 0; i < D; i++) scratch[i] = hq[m * D + i];
                rmsnorm_d(scratch, D, scratch);
                for (size_t i = 0; i < D; i++) uq[m * D + i] = (float)scratch[i];
            }
            ok = qk_matmul_run(&p1, M, uq, D, aq, F) == QK_OK;
            for (size_t i = 0; ok && i < M * F; i++) aq[i] = (float)silu_d(aq[i]);
            ok = ok && qk_matmul_run(&p2, M, aq, F, oq, D) == QK_OK;
            outrow r = {c, l, 0, 0, 0, NAN, wsqnr(&q1, ly[l].w1, F, D, scratch), wsqnr(&q2, ly[l].w2, D, F, scratch)};
            qk_matmul_release(&p1), qk_matmul_release(&p2);
            qk_qmat_free(&q1), qk_qmat_free(&q2);
            if (!ok) goto qkfail;
            /* errors: dh after = dprev + added, with added = o_q − o_ref */
            const double *hr = refs + l * M * D, *hr_prev = l ? refs + (l - 1) * M * D : NULL;
            double hh = 0, dd = 0, aa = 0, da = 0, pp = 0;
            for (size_t i = 0; i < M * D; i++) {
                double oref = hr[i] - (hr_prev ? hr_prev[i] : (double)h0.v[i]);
                double a = (double)oq[i] - oref;
                hq[i] += oq[i];
                double d = (double)hq[i] - hr[i];
                hh += hr[i] * hr[i], dd += d * d, aa += a * a, da += dprev[i] * a, pp += dprev[i] * dprev[i];
                dprev[i] = d;
            }
            r.h_norm = sqrt(hh / (double)(M * D));
            r.rel = sqrt(dd / hh);
            r.added = sqrt(aa / hh);
            r.cos_ia = pp > 0 && aa > 0 ? da / sqrt(pp * aa) : NAN;
            rows[nrows++] = r;
            if (o.csv && save(o.csv, csv_of(rows, nrows, cf))) goto free_all;
            if (o.json && save(o.json, json_of(rows, nrows, cf, L, D, F, M, o.seed, wdesc, hdesc))) goto free_all;
        }
        if (tty) fprintf(stderr, "\r\033[K");
        if (!o.quiet) {
            char gs[24];
            if (cf[c].g == ACC_GROUP_K) snprintf(gs, sizeof gs, "K");
            else snprintf(gs, sizeof gs, "%zu", cf[c].g);
            printf("\n%s g=%s %s  (kernels %s, %s)\n", qk_format_name(cf[c].f), gs, qk_mode_name(cf[c].m), k1name, k2name);
            printf("  %5s %9s %11s %11s %12s %9s %9s\n", "layer", "h rms", "rel |dh|/|h|", "added", "cos(inh,add)", "W1 SQNR", "W2 SQNR");
            for (size_t i = first_row; i < nrows; i++) {
                char cb[32];
                if (isnan(rows[i].cos_ia)) snprintf(cb, sizeof cb, "%12s", "-");
                else snprintf(cb, sizeof cb, "%12.4f", rows[i].cos_ia);
                printf("  %5zu %9.4g %11.4e %11.4e %s %9.2f %9.2f\n", rows[i].layer + 1, rows[i].h_norm, rows[i].rel, rows[i].added, cb,
                       rows[i].w1_sqnr, rows[i].w2_sqnr);
            }
        }
    }
    if (!o.quiet) {
        printf("\nafter %zu layers:\n", L);
        for (int c = 0; c < ncf; c++) {
            const outrow *r = &rows[(size_t)c * L + L - 1];
            double mc = 0;
            int nc = 0;
            for (size_t l = 1; l < L; l++) mc += rows[(size_t)c * L + l].cos_ia, nc++;
            printf("  %-5s g=%-4zu %-9s rel %.4e (%.2f dB)   mean cos(inherited, added) %+.4f\n", qk_format_name(cf[c].f),
                   cf[c].g == ACC_GROUP_K ? D : cf[c].g, qk_mode_name(cf[c].m), r->rel, -20 * log10(r->rel), nc ? mc / nc : NAN);
        }
    }
    if (o.out) {
        char p[1100];
        if (acc_mkdirs(o.out, err, sizeof err)) {
            fprintf(stderr, "qkbench depth: %s\n", err);
            goto free_all;
        }
        snprintf(p, sizeof p, "%s/depth.csv", o.out);
        if (save(p, csv_of(rows, nrows, cf))) goto free_all;
        snprintf(p, sizeof p, "%s/depth.json", o.out);
        if (save(p, json_of(rows, nrows, cf, L, D, F, M, o.seed, wdesc, hdesc))) goto free_all;
        if (!o.quiet) printf("wrote %s/depth.csv, depth.json\n", o.out);
    }
    rc = 0;
    goto free_all;
oom:
    fprintf(stderr, "qkbench depth: out of memory\n");
    goto free_all;
qkfail:
    fprintf(stderr, "qkbench depth: %s\n", qk_last_error());
free_all:
    if (isatty(2)) fprintf(stderr, "\r\033[K");
    free(href), free(u), free(a1), free(o2), free(scratch), free(refs), free(hq), free(uq), free(aq), free(oq), free(dprev);
    free(rows);
    acc_mat_free(&h0);
cleanup:
    for (size_t l = 0; ly && l < nl; l++) free(ly[l].w1), free(ly[l].w2);
    free(ly);
    qk_tfile_close(&tf);
    acc_opts_free(&o);
    return rc;
usage:
    acc_opts_free(&o);
    return 2;
}
