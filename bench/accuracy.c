/* qkbench accuracy: error against the FP32 reference, split into its sources
 * (DESIGN §4): quantization error and kernel error for every variant, the
 * weight/activation decomposition, output-head metrics, on generated or real
 * tensors; and the generators' rate (SLEEF AVX2 against scalar libm). */
#include "accuracy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "acc_report.h"
#include "acc_shard.h"
#include "commands.h"
#include "evaluate.h"
#include "outliers.h"
#include "refmath.h"
#include "results.h"

static const unsigned ACC_ALLOWED = ACC_O_SHAPE | ACC_O_FORMAT | ACC_O_GROUP | ACC_O_MODE | ACC_O_SCALES | ACC_O_DATA | ACC_O_FILES | ACC_O_OUTPUT;

static void help(void) {
    printf("usage: qkbench accuracy [options]\n"
           "Error of every kernel variant against the FP32 reference (double accumulation over the f32 inputs),\n"
           "split into its sources:\n"
           "  quantization error  exact math on the quantized values (scalar reference codes) vs FP32: what\n"
           "                      the format costs; the same for every tier;\n"
           "  kernel error        each variant (every tier this CPU runs) vs that exact math, as the ratio\n"
           "                      max |diff| / (u·Σ|terms|) against the bound 2·(K+16) the tests gate on;\n"
           "and for the int modes the decomposition e_W, e_A, e_WA, κ = e_WA/(e_W + e_A).\n\n"
           "options:\n");
    acc_opts_help(ACC_ALLOWED);
    printf("  --head               output-head metrics too: top-1 flip rate, top-5/10/20 retention, KL(softmax(y/T) ‖\n"
           "                       softmax(ŷ/T)); default shape becomes 16x32000x4096\n"
           "  --temperature T      divide the logits by T for the KL (default: 1 when weights and activations are\n"
           "                       both read from files; otherwise T such that the FP32 logits have std --logit-std)\n"
           "  --logit-std S        (default 3)\n"
           "  --isa TIER|all       cap the tiers (default all: every tier this CPU supports)\n"
           "  --gen-rate           measure the generators instead: SLEEF AVX2 against scalar libm, MB/s per\n"
           "                       distribution (--gen-mb N MB each, default 64)\n"
           "  --outliers           outlier channels: detection and the strategy comparison (split, W4A8,\n"
           "                       smoothing, rotation); see qkbench accuracy --outliers --help\n"
           "  --summary            the short Markdown summary of the default run (4x1024x4096, g = 32 and 128)\n"
           "  --list               print the cases (LAYER/FORMAT/gG/MODE, each with all its variants) and exit\n"
           "  --results DIR        results root for --shard folders (default $QK_RESULTS or ./results)\n"
           "%s"
           "default shape 8x2048x4096 (M x N x K), every format, group size and mode; exit status 1 if a kernel\n"
           "is outside its error model.\n",
           qkb_shard_help);
}



/* --shard, --list: the case list of every layer, without evaluating anything
 * (a weights file's tensors are read once for their names and shapes). */
static int plan_layers(const acc_opts *o, acc_shard *sh) {
    char err[600];
    size_t M = o->M, K = o->K;
    if (o->x.path) {
        qk_tfile xf;
        size_t *idx;
        acc_mat xm;
        if (qk_tfile_open(o->x.path, &xf, err, sizeof err)) goto fail;
        long n = acc_select_tensors(&xf, o->x.path, o->x.tensor, &idx, err, sizeof err);
        int bad = n < 0 || acc_mat_read(&xm, &xf, o->x.path, idx[0], err, sizeof err);
        if (n >= 0) free(idx);
        qk_tfile_close(&xf);
        if (bad) goto fail;
        M = xm.rows, K = xm.cols;
        acc_mat_free(&xm);
    }
    if (!o->w.path) {
        acc_shard_add_layer(sh, o, "generated", M, o->N, K);
        return 0;
    }
    qk_tfile wf;
    size_t *idx;
    if (qk_tfile_open(o->w.path, &wf, err, sizeof err)) goto fail;
    long n = acc_select_tensors(&wf, o->w.path, o->w.tensor, &idx, err, sizeof err);
    if (n < 0) {
        qk_tfile_close(&wf);
        goto fail;
    }
    for (long i = 0; i < n; i++) {
        acc_mat w;
        if (acc_mat_read(&w, &wf, o->w.path, idx[i], err, sizeof err)) {
            free(idx);
            qk_tfile_close(&wf);
            goto fail;
        }
        acc_shard_add_layer(sh, o, w.name, M, w.rows, w.cols);
        acc_mat_free(&w);
    }
    free(idx);
    qk_tfile_close(&wf);
    return 0;
fail:
    fprintf(stderr, "qkbench accuracy: %s\n", err);
    return 2;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Generation rate: each elementwise distribution through both paths. */
static int gen_rate(uint64_t seed, size_t mb) {
    size_t n = mb * (1u << 20) / sizeof(float);
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    if (!a || !b) {
        fprintf(stderr, "qkbench accuracy: out of memory for %zu MB\n", mb);
        free(a), free(b);
        return 2;
    }
    memset(a, 0x55, n * sizeof *a); /* fault the pages in before timing (not 0: malloc+memset 0 becomes calloc) */
    memset(b, 0x55, n * sizeof *b);
    printf("generation rate, %zu MB of f32 per distribution, seed %llu, one thread:\n", mb, (unsigned long long)seed);
    printf("  %-8s %14s %16s %8s %22s\n", "dist", "scalar libm", "SLEEF avx2", "speedup", "max |diff| / max |x|");
    for (int d = QK_DIST_GAUSS; d <= QK_DIST_UNIFORM; d++) {
        double t0 = now_s();
        qk_gen_fill_scalar((qk_dist)d, 4.0, seed, 1, 0, a, n);
        double t1 = now_s();
        int rc = qk_gen_fill_simd((qk_dist)d, 4.0, seed, 1, 0, b, n);
        double t2 = now_s();
        double rs = (double)(n * sizeof(float)) / (t1 - t0) / 1e6, rv = (double)(n * sizeof(float)) / (t2 - t1) / 1e6;
        if (rc) {
            printf("  %-8s %9.0f MB/s %16s\n", qk_dist_name((qk_dist)d), rs, "(not available)");
            continue;
        }
        double md = 0, mx = 0;
        for (size_t i = 0; i < n; i++) md = fmax(md, fabs((double)a[i] - b[i])), mx = fmax(mx, fabs((double)a[i]));
        printf("  %-8s %9.0f MB/s %11.0f MB/s %7.1fx %22.2e\n", qk_dist_name((qk_dist)d), rs, rv, rv / rs, mx > 0 ? md / mx : 0);
    }
    printf("(both paths consume the same uniform bits; values differ only by the last ulps of exp/log/sin/cos)\n");
    free(a), free(b);
    return 0;
}

/* One weight matrix against its activations. */
static int eval_layer(acc_run *u, const acc_eval_cfg *cfg, const acc_mat *w, acc_mat *xfile, size_t M) {
    char err[600];
    acc_mat xg, *x = xfile;
    if (!x) {
        if (acc_mat_generate(&xg, &u->o->x.gen, u->o->seed, 2, M, w->cols, err, sizeof err)) {
            fprintf(stderr, "qkbench accuracy: %s\n", err);
            return 2;
        }
        x = &xg;
    }
    if (!u->o->quiet)
        printf("\n== %s: W %zu x %zu (%s), X %zu x %zu (%s)\n", w->name, w->rows, w->cols, w->desc, x->rows, x->cols, x->desc);
    size_t from = u->t.n;
    int rc = acc_evaluate(cfg, w, x, err, sizeof err);
    if (x == &xg) acc_mat_free(&xg);
    if (rc) {
        fprintf(stderr, "qkbench accuracy: %s: %s\n", w->name, err);
        return 2;
    }
    if (!u->o->quiet) acc_print_accuracy(stdout, &u->t, from);
    return 0;
}

/* Run everything the options ask for; rows end up in u->t. */
static int run_all(acc_run *u, acc_eval_cfg *cfg) {
    acc_opts *o = u->o;
    char err[600];
    int rc = 0;
    acc_mat xfile = {0};
    int have_x = 0;
    qk_tfile xf = {0};
    if (o->x.path) {
        size_t *idx;
        if (qk_tfile_open(o->x.path, &xf, err, sizeof err)) {
            fprintf(stderr, "qkbench accuracy: %s\n", err);
            return 2;
        }
        long n = acc_select_tensors(&xf, o->x.path, o->x.tensor, &idx, err, sizeof err);
        if (n < 0 || acc_mat_read(&xfile, &xf, o->x.path, idx[0], err, sizeof err)) {
            if (n >= 0) free(idx);
            fprintf(stderr, "qkbench accuracy: %s\n", err);
            qk_tfile_close(&xf);
            return 2;
        }
        if (n > 1) printf("note: %s holds %ld 2-D tensors; the activations are the first, '%s' (name one with FILE:TENSOR)\n", o->x.path, n, xfile.name);
        free(idx);
        qk_tfile_close(&xf);
        have_x = 1;
    }
    if (o->w.path) {
        qk_tfile wf;
        size_t *idx;
        if (qk_tfile_open(o->w.path, &wf, err, sizeof err)) {
            fprintf(stderr, "qkbench accuracy: %s\n", err);
            rc = 2;
            goto out;
        }
        long n = acc_select_tensors(&wf, o->w.path, o->w.tensor, &idx, err, sizeof err);
        if (n < 0) {
            fprintf(stderr, "qkbench accuracy: %s\n", err);
            qk_tfile_close(&wf);
            rc = 2;
            goto out;
        }
        for (long i = 0; i < n && rc == 0; i++) {
            acc_mat w;
            if (acc_mat_read(&w, &wf, o->w.path, idx[i], err, sizeof err)) {
                fprintf(stderr, "qkbench accuracy: %s\n", err);
                rc = 2;
                break;
            }
            if (have_x && xfile.cols != w.cols) {
                fprintf(stderr, "qkbench accuracy: the activations '%s' have K=%zu columns but the weights '%s' have K=%zu\n", xfile.name,
                        xfile.cols, w.name, w.cols);
                rc = 2;
            } else {
                rc = eval_layer(u, cfg, &w, have_x ? &xfile : NULL, o->M);
            }
            acc_mat_free(&w);
        }
        free(idx);
        qk_tfile_close(&wf);
    } else {
        acc_mat w;
        size_t K = have_x ? xfile.cols : o->K;
        if (acc_mat_generate(&w, &o->w.gen, o->seed, 1, o->N, K, err, sizeof err)) {
            fprintf(stderr, "qkbench accuracy: %s\n", err);
            rc = 2;
            goto out;
        }
        rc = eval_layer(u, cfg, &w, have_x ? &xfile : NULL, o->M);
        acc_mat_free(&w);
    }
out:
    acc_mat_free(&xfile);
    return rc;
}

static int worst_exit(const acc_table *t) {
    for (size_t i = 0; i < t->n; i++)
        if (!t->r[i].skip[0] && !t->r[i].k_ok) return 1;
    return 0;
}

static void describe_sources(const acc_opts *o, char *wd, size_t wl, char *xd, size_t xl) {
    char g[96];
    if (o->w.path) snprintf(wd, wl, "%s%s%s", o->w.path, o->w.tensor ? ":" : "", o->w.tensor ? o->w.tensor : "");
    else qk_gen_spec_describe(&o->w.gen, g, sizeof g), snprintf(wd, wl, "generated %s", g);
    if (o->x.path) snprintf(xd, xl, "%s%s%s", o->x.path, o->x.tensor ? ":" : "", o->x.tensor ? o->x.tensor : "");
    else qk_gen_spec_describe(&o->x.gen, g, sizeof g), snprintf(xd, xl, "generated %s", g);
}

int qk_cmd_accuracy(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--outliers")) return qk_acc_outliers(argc, argv);
    acc_opts o;
    acc_opts_init(&o);
    int head = 0, want_rate = 0, summary = 0, shape_given = 0, rc = 0;
    double temperature = 0, logit_std = 3.0;
    size_t gen_mb = 64;
    acc_shard sh;
    memset(&sh, 0, sizeof sh);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--shape")) shape_given = 1;
        int took = acc_opts_take(&o, ACC_ALLOWED, "accuracy", argc, argv, &i);
        if (took == 0) took = qkb_shard_take(&sh.opt, "accuracy", argc, argv, &i);
        if (took < 0) {
            acc_opts_free(&o);
            return 2;
        }
        if (took) continue;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            help();
            acc_opts_free(&o);
            return 0;
        } else if (!strcmp(a, "--list")) {
            sh.list = 1;
        } else if (!strcmp(a, "--results")) {
            if (!v) {
                fprintf(stderr, "qkbench accuracy: --results needs a folder (see qkbench accuracy --help)\n");
                acc_opts_free(&o);
                return 2;
            }
            qkb_set_results_root(argv[++i]);
        } else if (!strcmp(a, "--head")) {
            head = 1;
        } else if (!strcmp(a, "--gen-rate")) {
            want_rate = 1;
        } else if (!strcmp(a, "--summary")) {
            summary = 1;
        } else if (!strcmp(a, "--gen-mb") || !strcmp(a, "--temperature") || !strcmp(a, "--logit-std") || !strcmp(a, "--isa")) {
            if (!v) {
                fprintf(stderr, "qkbench accuracy: %s needs a value (see qkbench accuracy --help)\n", a);
                acc_opts_free(&o);
                return 2;
            }
            i++;
            int bad = 0;
            if (!strcmp(a, "--gen-mb")) bad = acc_parse_size(v, &gen_mb) || gen_mb == 0 || gen_mb > 4096;
            else if (!strcmp(a, "--temperature")) bad = acc_parse_double(v, &temperature) || !(temperature > 0);
            else if (!strcmp(a, "--logit-std")) bad = acc_parse_double(v, &logit_std) || !(logit_std > 0);
            else if (strcmp(v, "all") != 0 && qk_cli_apply_isa(v)) {
                acc_opts_free(&o);
                return 2;
            }
            if (bad) {
                fprintf(stderr, "qkbench accuracy: %s '%s': expected a positive number%s\n", a, v, !strcmp(a, "--gen-mb") ? " of MB up to 4096" : "");
                acc_opts_free(&o);
                return 2;
            }
        } else {
            fprintf(stderr, "qkbench accuracy: unknown option '%s' (see qkbench accuracy --help)\n", a);
            acc_opts_free(&o);
            return 2;
        }
    }
    if (acc_opts_check(&o, "accuracy")) {
        acc_opts_free(&o);
        return 2;
    }
    qkb_shard_opts_finish(&sh.opt);
    if ((sh.opt.of || sh.list) && (want_rate || summary)) {
        fprintf(stderr, "qkbench accuracy: --shard, --run-id and --list do not apply to --gen-rate or --summary\n");
        acc_opts_free(&o);
        return 2;
    }
    if (want_rate) {
        rc = gen_rate(o.seed, gen_mb);
        acc_opts_free(&o);
        return rc;
    }
    if (summary) {
        acc_opts_free(&o);
        return qk_accuracy_summary(NULL, stdout);
    }
    if (head && !shape_given) o.M = 16, o.N = 32000, o.K = 4096;
    if (sh.opt.of || sh.list) {
        rc = plan_layers(&o, &sh);
        if (!rc) rc = acc_shard_start(&sh, &o, "accuracy", argc, argv);
        if (rc) {
            acc_shard_end(&sh, 0);
            acc_opts_free(&o);
            return rc == 1 ? 0 : rc;
        }
    }

    acc_run u;
    memset(&u, 0, sizeof u);
    u.o = &o;
    u.cmd = "accuracy";
    u.sh = &sh;
    char wd[400], xd[400];
    describe_sources(&o, wd, sizeof wd, xd, sizeof xd);
    u.meta = (acc_meta){"accuracy", o.seed, wd, xd, NULL, NULL};
    u.files = o.csv || o.json || o.svg || o.out;
    acc_eval_cfg cfg = {0};
    cfg.o = &o;
    cfg.head = head;
    cfg.temperature = temperature > 0 ? temperature : (o.w.path && o.x.path ? 1.0 : 0.0);
    cfg.logit_std = logit_std;
    cfg.w_gauss = !o.w.path && o.w.gen.dist == QK_DIST_GAUSS;
    cfg.threads = qk_acc_threads();
    cfg.progress = isatty(2) && !o.quiet;
    acc_run_hook(&u, &cfg, o.quiet);
    if (!o.quiet) {
        printf("qkbench accuracy: seed %llu (set with --seed); weights: %s; activations: %s\n", (unsigned long long)o.seed, wd, xd);
        if (!o.w.path && !o.x.path) printf("shape %zu x %zu x %zu (M x N x K)\n", o.M, o.N, o.K);
        else if (!o.x.path) printf("generated activations: M = %zu rows\n", o.M);
        else if (!o.w.path) printf("generated weights: N = %zu rows\n", o.N);
        printf("FP32 reference: double accumulation over the f32 inputs; tiers: %s%s; %d threads for the exact math\n",
               qk_tier_cap() == QK_TIER_COUNT - 1 ? "every tier this CPU supports" : "capped at ",
               qk_tier_cap() == QK_TIER_COUNT - 1 ? "" : qk_tier_name(qk_tier_cap()), cfg.threads);
    }
    rc = run_all(&u, &cfg);
    if (sh.opt.of && !rc && !u.failed_write) { /* an empty shard writes its (empty) files too */
        char err[600];
        if (acc_write_outputs(&u.t, &u.meta, &o, "accuracy", 0, err, sizeof err)) {
            fprintf(stderr, "qkbench accuracy: %s\n", err);
            u.failed_write = 1;
        }
    }
    if (!rc && u.t.oom) {
        fprintf(stderr, "qkbench accuracy: out of memory collecting rows\n");
        rc = 2;
    }
    if (!rc) rc = u.failed_write ? 2 : worst_exit(&u.t);
    if (rc == 1) fprintf(stderr, "qkbench accuracy: a kernel is outside its error model (see OUTSIDE THE ERROR MODEL above)\n");
    int sig_rc = acc_shard_end(&sh, rc != 2);
    if (sig_rc) rc = sig_rc;
    if (sh.dir[0] && !o.quiet) printf("results: %s\n", sh.dir);
    acc_table_free(&u.t);
    acc_opts_free(&o);
    return rc;
}

int qk_accuracy_summary(const char *dir, FILE *md) {
    acc_opts o;
    acc_opts_init(&o);
    o.M = 4, o.N = 1024, o.K = 4096;
    o.groups[0] = 32, o.groups[1] = 128, o.ngroups = 2;
    o.out = dir;
    acc_run u;
    memset(&u, 0, sizeof u);
    u.o = &o;
    u.cmd = "accuracy";
    u.meta = (acc_meta){"accuracy", o.seed, "generated gauss", "generated gauss", NULL, NULL};
    u.files = dir != NULL;
    acc_eval_cfg cfg = {0};
    cfg.o = &o;
    cfg.w_gauss = 1;
    cfg.threads = qk_acc_threads();
    cfg.progress = isatty(2);
    acc_run_hook(&u, &cfg, 1);
    acc_mat w, x;
    char err[600];
    if (acc_mat_generate(&w, &o.w.gen, o.seed, 1, o.N, o.K, err, sizeof err) ||
        acc_mat_generate(&x, &o.x.gen, o.seed, 2, o.M, o.K, err, sizeof err)) {
        fprintf(stderr, "qkbench accuracy: %s\n", err);
        return 2;
    }
    int rc = acc_evaluate(&cfg, &w, &x, err, sizeof err) ? 2 : 0;
    acc_mat_free(&w), acc_mat_free(&x);
    if (rc) {
        fprintf(stderr, "qkbench accuracy: %s\n", err);
        acc_table_free(&u.t);
        return rc;
    }
    rc = u.failed_write ? 2 : worst_exit(&u.t);
    if (md) {
        fprintf(md, "## Accuracy\n\nGenerated N(0,1) data, %zu x %zu x %zu (M x N x K), seed %llu. Quantization error: exact math on the "
                    "quantized values against the FP32 reference (the same for every tier). Kernel error: each variant against that "
                    "exact math, as max |diff| / (u·Σ|terms|); the tests' bound is 2·(K+16) = %zu.\n\n",
                o.M, o.N, o.K, (unsigned long long)o.seed, 2 * (o.K + 16));
        fprintf(md, "| format | g | bpw | mode | weight SQNR (dB) | output SQNR (dB) | κ | variants | worst kernel ratio |\n");
        fprintf(md, "|---|---|---|---|---|---|---|---|---|\n");
        for (size_t i = 0; i < u.t.n;) {
            const acc_row *r = &u.t.r[i];
            size_t j = i, nv = 0;
            double worst = 0;
            const char *who = "";
            for (; j < u.t.n && u.t.r[j].format == r->format && u.t.r[j].group == r->group && u.t.r[j].mode == r->mode; j++) {
                if (u.t.r[j].skip[0]) continue;
                nv++;
                if (u.t.r[j].k_ratio >= worst) worst = u.t.r[j].k_ratio, who = qk_tier_name(u.t.r[j].kernel->tier);
            }
            char kap[32] = "-";
            if (r->has_decomp) snprintf(kap, sizeof kap, "%.3f", r->decomp.kappa);
            fprintf(md, "| %s | %zu | %.3g | %s | %.2f | %.2f | %s | %zu | %.2f (%s)%s |\n", qk_format_name(r->format), r->group, r->bpw,
                    qk_mode_name(r->mode), r->w_err.sqnr_db, r->q_err.sqnr_db, kap, nv, worst, who, worst <= r->k_bound ? "" : " **outside**");
            i = j;
        }
        fprintf(md, "\n");
    }
    acc_table_free(&u.t);
    return rc;
}
