/* qkbench sweep: for one shape, every format × group size × mode × tier in
 * one table: throughput, bpw, weight SQNR and output SQNR (DESIGN §4), plus
 * the kernel-error ratio; CSV, JSON and an SVG plot (output SQNR against bpw,
 * point area = throughput).
 *
 * Timing here is a plain wall-clock loop (median of repetitions, warm cache,
 * one thread, activation quantization included), enough to place each
 * variant on the speed/accuracy plane; `qkbench bench` (Google Benchmark,
 * cold/warm cache, roofline) is the reference for throughput. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acc_report.h"
#include "acc_shard.h"
#include "commands.h"
#include "evaluate.h"
#include "outliers.h"
#include "refmath.h"
#include "results.h"

static const unsigned SWEEP_ALLOWED = ACC_O_SHAPE | ACC_O_FORMAT | ACC_O_GROUP | ACC_O_MODE | ACC_O_SCALES | ACC_O_DATA | ACC_O_FILES | ACC_O_OUTPUT;

static void help(void) {
    printf("usage: qkbench sweep [options]\n"
           "For one shape (default 1x4096x4096: a 4096x4096 layer at decode, M = 1), every format x group size x\n"
           "compute mode x kernel variant of every tier this CPU runs, side by side: time, GB/s, GOP/s, bits per\n"
           "weight, weight SQNR, output SQNR (quantization error against the FP32 reference) and the kernel-error\n"
           "ratio (the variant against exact math on the same quantized values; bound 2·(K+16)).\n"
           "Timing: wall clock, median of repetitions (at least --reps, and --min-time seconds), warm cache, one\n"
           "thread, activation quantization included; qkbench bench is the reference for throughput.\n\n"
           "options:\n");
    acc_opts_help(SWEEP_ALLOWED);
    printf("  --isa TIER|all       cap the tiers (default all: every tier this CPU supports)\n"
           "  --min-time S         seconds of repetitions per variant, at least (default 0.1)\n"
           "  --reps N             repetitions per variant, at least (default 5; at most 200)\n"
           "  --list               print the cases (LAYER/FORMAT/gG/MODE, each with all its variants) and exit\n"
           "  --results DIR        results root for --shard folders (default $QK_RESULTS or ./results)\n"
           "%s"
           "  --outliers           the outlier strategies (W4A4, W4A8, channel split f32/int8, smoothing, rotation) on\n"
           "                       outlier and SwiGLU activations, timed on every tier; see qkbench sweep --outliers --help\n"
           "--out DIR writes sweep.csv, sweep.json and sweep.svg (the plot); each is rewritten after every row.\n",
           qkb_shard_help);
}



int qk_cmd_sweep(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--outliers")) return qk_sweep_outliers(argc, argv);
    acc_opts o;
    acc_opts_init(&o);
    o.M = 1, o.N = 4096, o.K = 4096;
    double min_time = 0.1;
    size_t reps = 5;
    acc_shard sh;
    memset(&sh, 0, sizeof sh);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int took = acc_opts_take(&o, SWEEP_ALLOWED, "sweep", argc, argv, &i);
        if (took < 0) goto usage_error;
        if (took) continue;
        took = qkb_shard_take(&sh.opt, "sweep", argc, argv, &i);
        if (took < 0) goto usage_error;
        if (took) continue;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            help();
            acc_opts_free(&o);
            return 0;
        } else if (!strcmp(a, "--list")) {
            sh.list = 1;
        } else if (!strcmp(a, "--results")) {
            if (!v) {
                fprintf(stderr, "qkbench sweep: --results needs a folder (see qkbench sweep --help)\n");
                goto usage_error;
            }
            qkb_set_results_root(argv[++i]);
        } else if (!strcmp(a, "--isa") || !strcmp(a, "--min-time") || !strcmp(a, "--reps")) {
            if (!v) {
                fprintf(stderr, "qkbench sweep: %s needs a value (see qkbench sweep --help)\n", a);
                goto usage_error;
            }
            i++;
            if (!strcmp(a, "--isa")) {
                if (strcmp(v, "all") != 0 && qk_cli_apply_isa(v)) goto usage_error;
            } else if (!strcmp(a, "--min-time")) {
                if (acc_parse_double(v, &min_time) || min_time < 0 || min_time > 60) {
                    fprintf(stderr, "qkbench sweep: --min-time '%s': expected seconds in [0, 60]\n", v);
                    goto usage_error;
                }
            } else if (acc_parse_size(v, &reps) || reps < 1 || reps > 200) {
                fprintf(stderr, "qkbench sweep: --reps '%s': expected 1 to 200\n", v);
                goto usage_error;
            }
        } else {
            fprintf(stderr, "qkbench sweep: unknown option '%s' (see qkbench sweep --help)\n", a);
            goto usage_error;
        }
    }
    if (acc_opts_check(&o, "sweep")) goto usage_error;
    qkb_shard_opts_finish(&sh.opt);

    char err[600], wd[400], xd[400], g[96];
    acc_mat w = {0}, x = {0};
    int rc = 2;
    /* the data: one weight matrix (a file must name its tensor, or hold one 2-D tensor) */
    if (o.w.path) {
        qk_tfile f;
        size_t *idx;
        if (qk_tfile_open(o.w.path, &f, err, sizeof err)) goto fail;
        long n = acc_select_tensors(&f, o.w.path, o.w.tensor, &idx, err, sizeof err);
        if (n > 1) {
            snprintf(err, sizeof err, "%s holds %ld 2-D tensors; sweep takes one: name it with --weights FILE:TENSOR", o.w.path, n);
            free(idx);
            n = -1;
        }
        int bad = n < 0 || acc_mat_read(&w, &f, o.w.path, idx[0], err, sizeof err);
        if (n >= 0) free(idx);
        qk_tfile_close(&f);
        if (bad) goto fail;
        snprintf(wd, sizeof wd, "%s", w.desc);
    } else {
        if (acc_mat_generate(&w, &o.w.gen, o.seed, 1, o.N, o.K, err, sizeof err)) goto fail;
        qk_gen_spec_describe(&o.w.gen, g, sizeof g);
        snprintf(wd, sizeof wd, "generated %s", g);
    }
    if (o.x.path) {
        qk_tfile f;
        size_t *idx;
        if (qk_tfile_open(o.x.path, &f, err, sizeof err)) goto fail;
        long n = acc_select_tensors(&f, o.x.path, o.x.tensor, &idx, err, sizeof err);
        int bad = n < 0 || acc_mat_read(&x, &f, o.x.path, idx[0], err, sizeof err);
        if (n >= 0) free(idx);
        qk_tfile_close(&f);
        if (bad) goto fail;
        snprintf(xd, sizeof xd, "%s", x.desc);
    } else {
        if (acc_mat_generate(&x, &o.x.gen, o.seed, 2, o.M, w.cols, err, sizeof err)) goto fail;
        qk_gen_spec_describe(&o.x.gen, g, sizeof g);
        snprintf(xd, sizeof xd, "generated %s", g);
    }
    if (x.cols != w.cols) {
        snprintf(err, sizeof err, "the activations have K=%zu columns but the weights have K=%zu", x.cols, w.cols);
        goto fail;
    }

    sh.timing = 1, sh.min_time = min_time, sh.reps = reps;
    acc_shard_add_layer(&sh, &o, w.name, x.rows, w.rows, w.cols);
    int src = acc_shard_start(&sh, &o, "sweep", argc, argv);
    if (src) {
        acc_mat_free(&w), acc_mat_free(&x);
        acc_opts_free(&o);
        return src == 1 ? 0 : src;
    }
    acc_run u;
    memset(&u, 0, sizeof u);
    u.o = &o;
    u.cmd = "sweep";
    u.want_svg = 1;
    u.sh = &sh;
    char timing[200];
    snprintf(timing, sizeof timing, "wall clock, median of >= %zu repetitions and >= %.2g s, warm cache, one thread, activation quantization included",
             reps, min_time);
    u.meta = (acc_meta){"sweep", o.seed, wd, xd, timing, NULL};
    u.files = o.csv || o.json || o.svg || o.out;
    acc_eval_cfg cfg = {0};
    cfg.o = &o;
    cfg.w_gauss = !o.w.path && o.w.gen.dist == QK_DIST_GAUSS;
    cfg.timing = 1;
    cfg.min_time = min_time;
    cfg.min_reps = (int)reps;
    cfg.max_reps = 200;
    cfg.threads = qk_acc_threads();
    cfg.progress = isatty(2) && !o.quiet;
    acc_run_hook(&u, &cfg, o.quiet);
    if (!o.quiet) {
        printf("qkbench sweep: %zu x %zu x %zu (M x N x K); weights %s; activations %s; seed %llu\n", x.rows, w.rows, w.cols, wd, xd,
               (unsigned long long)o.seed);
        printf("tiers: %s%s; timing: %s\n", qk_tier_cap() == QK_TIER_COUNT - 1 ? "every tier this CPU supports" : "capped at ",
               qk_tier_cap() == QK_TIER_COUNT - 1 ? "" : qk_tier_name(qk_tier_cap()), timing);
        printf("ySQNR: quantization error of the output (exact math on the quantized values vs FP32), the same for every\n"
               "tier; k.ratio: kernel error, max |diff| / (u·Σ|terms|), bound 2·(K+16) = %zu.\n", 2 * (w.cols + 16));
    }
    if (acc_evaluate(&cfg, &w, &x, err, sizeof err)) {
        acc_table_free(&u.t);
        acc_shard_end(&sh, 0);
        goto fail;
    }
    if (sh.opt.of && !u.failed_write && acc_write_outputs(&u.t, &u.meta, &o, "sweep", 1, err, sizeof err)) { /* an empty shard too */
        fprintf(stderr, "qkbench sweep: %s\n", err);
        u.failed_write = 1;
    }
    if (!o.quiet) acc_print_sweep(stdout, &u.t, 0);
    rc = u.failed_write || u.t.oom ? 2 : 0;
    for (size_t i = 0; i < u.t.n && !rc; i++)
        if (!u.t.r[i].skip[0] && !u.t.r[i].k_ok) rc = 1;
    if (rc == 1) fprintf(stderr, "qkbench sweep: a kernel is outside its error model\n");
    int sig_rc = acc_shard_end(&sh, rc != 2);
    if (sig_rc) rc = sig_rc;
    if (o.out && !o.quiet && !rc) printf("wrote %s/sweep.csv, sweep.json, sweep.svg\n", o.out);
    acc_table_free(&u.t);
    acc_mat_free(&w), acc_mat_free(&x);
    acc_opts_free(&o);
    return rc;
fail:
    fprintf(stderr, "qkbench sweep: %s\n", err);
    acc_mat_free(&w), acc_mat_free(&x);
    acc_opts_free(&o);
    return rc;
usage_error:
    acc_opts_free(&o);
    return 2;
}
