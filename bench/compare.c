/* qkbench compare A B: per matching row, the throughput ratio with a
 * noise-aware verdict; the change in error when both runs hold accuracy rows;
 * exit status 1 when anything regressed. Google Benchmark's own compare.py
 * (Debian libbenchmark-tools) adds its U-test report with --gbench. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "metrics.h"
#include "json.h"
#include "results.h"
#include "rows.h"

#define COMPARE_PY "/usr/share/benchmark/compare.py"

/* Robust relative sigma of a row's times: 1.4826 · MAD / median (falls back to
 * half the range over 2 when there are fewer than 3 repetitions). */
static double rel_sigma(const qkb_row *r) {
    if (r->median_s <= 0) return 0;
    if (r->ntimes >= 3) {
        double d[QKB_ROW_MAX_TIMES];
        for (int i = 0; i < r->ntimes; i++) d[i] = fabs(r->times[i] - r->median_s);
        return 1.4826 * qk_median(d, r->ntimes) / r->median_s;
    }
    return r->spread / 4;
}

/* `name` in the folder of p (p: a folder, or a .json file in it). */
static void folder_file(char *out, size_t n, const char *p, const char *name) {
    size_t l = strlen(p);
    if (l > 5 && !strcmp(p + l - 5, ".json")) {
        const char *slash = strrchr(p, '/');
        if (!slash) snprintf(out, n, "%s", name);
        else snprintf(out, n, "%.*s/%s", (int)(slash - p), p, name);
    } else {
        qkb_path(out, n, p, name);
    }
}

static void usage(void) {
    printf("usage: qkbench compare A B [--threshold PCT] [--noise K] [--gbench] [--all]\n"
           "Compares two result folders (or their results.json): for every row in both, the throughput ratio\n"
           "B/A (median time of A / median time of B) and a verdict:\n"
           "  slower   B is slower by more than the threshold (default 10%%) AND by more than K (default 3)\n"
           "           times the noise: the standard error of the two medians, 1.2533 sqrt(sA^2/nA + sB^2/nB),\n"
           "           s = 1.4826 MAD / median over the n repetitions of each row\n"
           "  faster   the same the other way\n"
           "  same     a change inside the noise or the threshold is not a regression\n"
           "When both folders hold accuracy.json (the default run), it also compares the error of every\n"
           "matching accuracy row: a kernel that left its error model, or a quantization SQNR that fell by\n"
           "more than 0.05 dB, is a regression.\n"
           "  --threshold PCT  smallest change that counts (default 10)\n"
           "  --noise K        noise multiple (default 3)\n"
           "  --gbench         also run Google Benchmark's compare.py (U test) on the two gbench.json\n"
           "  --all            print every row (default: the changed ones and a count of the rest)\n"
           "Exit status: 0 nothing regressed, 1 something regressed, 2 usage or file error.\n");
}

/* ---- accuracy ---- */

typedef struct acc_key_row {
    char key[320];
    double q_sqnr;
    int k_ok;
    double k_ratio;
} acc_key_row;

static int load_acc(const char *dir, acc_key_row **out, size_t *n) {
    char path[1200], err[300];
    folder_file(path, sizeof path, dir, "accuracy.json");
    *out = NULL;
    *n = 0;
    if (access(path, R_OK) != 0) return 0;
    qkj *root = qkj_parse_file(path, err, sizeof err);
    if (!root) {
        fprintf(stderr, "qkbench compare: %s\n", err);
        return -1;
    }
    const qkj *rs = qkj_get(root, "rows");
    if (rs && rs->type == QKJ_ARR) {
        *out = calloc(rs->n ? rs->n : 1, sizeof **out);
        for (size_t i = 0; i < rs->n; i++) {
            const qkj *o = rs->items[i];
            acc_key_row *a = &(*out)[(*n)++];
            snprintf(a->key, sizeof a->key, "%s %s/g%g/%s/%s %gx%gx%g %s", qkj_str(qkj_get(o, "layer"), ""), qkj_str(qkj_get(o, "format"), ""),
                     qkj_num(qkj_get(o, "group"), 0), qkj_str(qkj_get(o, "scales"), ""), qkj_str(qkj_get(o, "mode"), ""),
                     qkj_num(qkj_get(o, "M"), 0), qkj_num(qkj_get(o, "N"), 0), qkj_num(qkj_get(o, "K"), 0), qkj_str(qkj_get(o, "kernel"), ""));
            a->q_sqnr = qkj_num(qkj_get(qkj_get(o, "quantization_error"), "sqnr_db"), NAN);
            a->k_ok = (int)qkj_num(qkj_get(o, "kernel_ok"), 1);
            a->k_ratio = qkj_num(qkj_get(o, "kernel_ratio"), NAN);
        }
    }
    qkj_free(root);
    return 0;
}

static int compare_accuracy(const char *a, const char *b, int all) {
    acc_key_row *ra, *rb;
    size_t na, nb;
    if (load_acc(a, &ra, &na) || load_acc(b, &rb, &nb)) return -1;
    int regressed = 0;
    size_t matched = 0;
    if (na && nb) {
        printf("\naccuracy (quantization SQNR in dB; kernel error ratio against its bound):\n");
        for (size_t i = 0; i < nb; i++)
            for (size_t j = 0; j < na; j++) {
                if (strcmp(ra[j].key, rb[i].key)) continue;
                matched++;
                double d = rb[i].q_sqnr - ra[j].q_sqnr;
                int bad = (ra[j].k_ok && !rb[i].k_ok) || d < -0.05;
                regressed |= bad;
                if (bad || all || fabs(d) > 0.05)
                    printf("  %-7s %-70s SQNR %7.2f -> %7.2f dB (%+.2f)  kernel ratio %.3g -> %.3g%s\n", bad ? "WORSE" : "changed", rb[i].key,
                           ra[j].q_sqnr, rb[i].q_sqnr, d, ra[j].k_ratio, rb[i].k_ratio, !rb[i].k_ok ? "  OUTSIDE ITS ERROR MODEL" : "");
                break;
            }
        printf("  %zu accuracy rows compared, %s\n", matched, regressed ? "some got worse" : "no error got worse");
    }
    free(ra);
    free(rb);
    return regressed;
}

int qk_cmd_compare(int argc, char **argv) {
    const char *path[2] = {NULL, NULL};
    double threshold = 0.10, kn = 3;
    int gbench = 0, all = 0, np = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage();
            return 0;
        } else if (!strcmp(a, "--threshold") || !strcmp(a, "--noise")) {
            char *end;
            double v = i + 1 < argc ? strtod(argv[i + 1], &end) : -1;
            if (i + 1 >= argc || *end || !(v >= 0) || v > 1000) {
                fprintf(stderr, "qkbench compare: %s needs a non-negative number (see qkbench compare --help)\n", a);
                return 2;
            }
            i++;
            if (!strcmp(a, "--threshold")) threshold = v / 100;
            else kn = v;
        } else if (!strcmp(a, "--gbench")) {
            gbench = 1;
        } else if (!strcmp(a, "--all")) {
            all = 1;
        } else if (a[0] == '-') {
            fprintf(stderr, "qkbench compare: unknown option '%s' (see qkbench compare --help)\n", a);
            return 2;
        } else if (np < 2) {
            path[np++] = a;
        } else {
            fprintf(stderr, "qkbench compare: takes two result folders, got a third: '%s'\n", a);
            return 2;
        }
    }
    if (np != 2) {
        fprintf(stderr, "qkbench compare: needs two result folders A and B (see qkbench compare --help)\n");
        return 2;
    }
    qkb_run_meta ma, mb;
    qkb_row *ra = NULL, *rb = NULL;
    size_t na = 0, nb = 0;
    char err[400];
    if (qkb_rows_load(path[0], &ma, &ra, &na, err, sizeof err) || qkb_rows_load(path[1], &mb, &rb, &nb, err, sizeof err)) {
        fprintf(stderr, "qkbench compare: %s\n", err);
        free(ra);
        return 2;
    }
    printf("A: %s (%s, commit %s, %zu rows)\nB: %s (%s, commit %s, %zu rows)\n", path[0], ma.machine, ma.commit, na, path[1], mb.machine,
           mb.commit, nb);
    if (strcmp(ma.machine, mb.machine)) printf("note: different machines; ratios compare the machines as much as the code\n");
    printf("verdict: a change counts when it exceeds %.0f%% and %.0fx the noise (standard error of the medians)\n\n", threshold * 100, kn);
    printf("%-8s %8s %7s %10s %10s  %s\n", "verdict", "B/A", "noise", "A median", "B median", "row");
    size_t matched = 0, slower = 0, faster = 0, same = 0, only_b = 0;
    char *used = calloc(na ? na : 1, 1);
    for (size_t i = 0; i < nb; i++) {
        const qkb_row *b = &rb[i];
        const qkb_row *a = NULL;
        for (size_t j = 0; j < na; j++)
            if (!strcmp(ra[j].name, b->name)) {
                a = &ra[j];
                used[j] = 1;
                break;
            }
        if (!a) {
            only_b++;
            continue;
        }
        if (a->median_s <= 0 || b->median_s <= 0) continue;
        matched++;
        double ratio = a->median_s / b->median_s; /* throughput of B over A */
        /* standard error of the difference of two medians: 1.2533 sigma / sqrt(n) each */
        double sa = rel_sigma(a), sb = rel_sigma(b);
        double na_ = a->ntimes > 0 ? a->ntimes : 1, nb_ = b->ntimes > 0 ? b->ntimes : 1;
        double noise = 1.2533 * sqrt(sa * sa / na_ + sb * sb / nb_);
        double change = ratio >= 1 ? ratio - 1 : 1 / ratio - 1;
        int counts = change > threshold && change > kn * noise;
        const char *v = !counts ? "same" : ratio < 1 ? "SLOWER" : "faster";
        if (!counts) same++;
        else if (ratio < 1) slower++;
        else faster++;
        if (counts || all)
            printf("%-8s %7.3fx %6.1f%% %8.3g ms %8.3g ms  %s\n", v, ratio, 100 * noise, a->median_s * 1e3, b->median_s * 1e3, b->name);
    }
    size_t only_a = 0;
    for (size_t j = 0; j < na; j++) only_a += !used[j];
    printf("\n%zu rows compared: %zu slower, %zu faster, %zu the same within noise", matched, slower, faster, same);
    if (only_a || only_b) printf("; %zu only in A, %zu only in B", only_a, only_b);
    printf("\n");
    free(used);
    free(ra);
    free(rb);
    int acc = compare_accuracy(path[0], path[1], all);
    if (acc < 0) return 2;
    if (gbench) {
        char ga[1200], gb[1200];
        folder_file(ga, sizeof ga, path[0], "gbench.json");
        folder_file(gb, sizeof gb, path[1], "gbench.json");
        if (access(COMPARE_PY, R_OK) != 0) {
            fprintf(stderr, "qkbench compare: --gbench needs Google Benchmark's tools (apt-get install libbenchmark-tools)\n");
        } else {
            char cmd[3000];
            snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s --no-color -a benchmarks '%s' '%s'", COMPARE_PY, ga, gb);
            printf("\nGoogle Benchmark's compare.py (U test over the repetitions):\n");
            fflush(stdout);
            if (system(cmd) != 0) fprintf(stderr, "qkbench compare: compare.py failed (it needs python3-scipy)\n");
        }
    }
    return slower || acc ? 1 : 0;
}
