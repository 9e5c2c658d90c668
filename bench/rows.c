/* Rows: statistics, speed-ups, results.json / results.csv / summary.md. */
#include "rows.h"
#include "metrics.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "emulation.h"
#include "qk/kernels.h"
#include "results.h"

void qkb_row_from_case(qkb_row *r, const qkb_case *c, const double *times, int n, int64_t iterations) {
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", c->name);
    snprintf(r->op, sizeof r->op, "%s", c->op);
    snprintf(r->what, sizeof r->what, "%s", c->what);
    snprintf(r->kernel, sizeof r->kernel, "%s", c->kernel_name);
    snprintf(r->tier, sizeof r->tier, "%s", qk_tier_name(c->tier));
    snprintf(r->format, sizeof r->format, "%s",
             c->kind == QKB_ACTQUANT ? qk_act_rule_name(c->rule)
             : c->kind == QKB_OUTLIER ? (c->ofam == QKB_O_GEMM_I8 ? "int8" : "f32")
                                      : qk_format_name(c->format));
    snprintf(r->scales, sizeof r->scales, "%s", c->st == QK_SCALE_F16 ? "f16" : "f32");
    snprintf(r->cache, sizeof r->cache, "%s", c->cold ? "cold" : "warm");
    snprintf(r->level, sizeof r->level, "%s", c->level);
    snprintf(r->bound, sizeof r->bound, "%s", c->bound);
    r->M = c->M, r->N = c->N, r->K = c->K, r->group = c->group;
    r->threads = c->threads;
    r->headline = c->headline;
    r->emulated = qkb_emulation_get()->emulated;
    r->reps = n;
    r->iterations = iterations;
    double t[256];
    int m = n < 256 ? n : 256;
    memcpy(t, times, (size_t)m * sizeof *t);
    r->ntimes = m < QKB_ROW_MAX_TIMES ? m : QKB_ROW_MAX_TIMES;
    memcpy(r->times, times, (size_t)r->ntimes * sizeof *t);
    if (m > 0) {
        r->median_s = qk_median(t, m); /* t sorted */
        r->min_s = t[0];
        r->max_s = t[m - 1];
        double s = 0, s2 = 0;
        for (int i = 0; i < m; i++) s += t[i];
        r->mean_s = s / m;
        for (int i = 0; i < m; i++) s2 += (t[i] - r->mean_s) * (t[i] - r->mean_s);
        r->stddev_s = m > 1 ? sqrt(s2 / (m - 1)) : 0;
        r->cv = r->mean_s > 0 ? r->stddev_s / r->mean_s : 0;
        r->spread = r->median_s > 0 ? (r->max_s - r->min_s) / r->median_s : 0;
    }
    r->ops = c->ops;
    r->bytes = c->bytes;
    r->bpw = c->bpw;
    r->ai = c->bytes > 0 ? c->ops / c->bytes : 0;
    if (r->median_s > 0) {
        r->gops = c->ops / r->median_s * 1e-9;
        r->gbps = c->bytes / r->median_s * 1e-9;
        r->roofline = c->roof_s / r->median_s;
    }
    r->bw_gbps = c->bw * 1e-9;
    r->peak_gops = c->peak * 1e-9;
    r->roofline_s = c->roof_s;
}

static int same_config(const qkb_row *a, const qkb_row *b) {
    return !strcmp(a->op, b->op) && !strcmp(a->what, b->what) && !strcmp(a->format, b->format) && !strcmp(a->scales, b->scales) &&
           !strcmp(a->cache, b->cache) && a->group == b->group && a->M == b->M && a->N == b->N && a->K == b->K &&
           a->threads == b->threads;
}

void qkb_rows_speedups(qkb_row *rows, size_t n) {
    for (size_t i = 0; i < n; i++) {
        rows[i].speedup = 0;
        for (size_t j = 0; j < n; j++)
            if (!strcmp(rows[j].tier, "scalar") && same_config(&rows[i], &rows[j]) && rows[i].median_s > 0) {
                rows[i].speedup = rows[j].median_s / rows[i].median_s;
                break;
            }
    }
}

/* ---- results.json / results.csv ---- */

/* results.json's core_during_run keys, [before, after][dot, FMA, L2] (qkb_run_meta.core_now). */
static const char *const core_keys[2][3] = {{"before_i8_gops", "before_f32_gflops", "before_l2_gbps"},
                                            {"after_i8_gops", "after_f32_gflops", "after_l2_gbps"}};

static void pairs_json(qkw *w, const char *key, const double (*p)[2], int n) {
    if (!n) return;
    qkw_key(w, key);
    qkw_arr(w);
    for (int i = 0; i < n; i++) {
        qkw_arr(w);
        qkw_num(w, p[i][0]);
        qkw_num(w, p[i][1]);
        qkw_end_arr(w);
    }
    qkw_end_arr(w);
}

static int pairs_load(const qkj *ps, double (*p)[2]) {
    int n = 0;
    for (size_t k = 0; ps && ps->type == QKJ_ARR && k < ps->n && n < QKB_ROW_MAX_PAIRS; k++) {
        const qkj *pk = ps->items[k];
        if (pk->type != QKJ_ARR || pk->n != 2) continue;
        p[n][0] = qkj_num(pk->items[0], 0);
        p[n++][1] = qkj_num(pk->items[1], 0);
    }
    return n;
}

static void row_json(qkw *w, const qkb_row *r) {
    qkw_obj(w);
    qkw_kstr(w, "name", r->name);
    qkw_kstr(w, "op", r->op);
    qkw_kstr(w, "what", r->what);
    qkw_kstr(w, "kernel", r->kernel);
    qkw_kstr(w, "tier", r->tier);
    qkw_kstr(w, "format", r->format);
    qkw_kint(w, "group", (long long)r->group);
    qkw_kstr(w, "scales", r->scales);
    qkw_kint(w, "M", (long long)r->M);
    qkw_kint(w, "N", (long long)r->N);
    qkw_kint(w, "K", (long long)r->K);
    qkw_kint(w, "threads", r->threads);
    qkw_kstr(w, "cache", r->cache);
    qkw_kint(w, "reps", r->reps);
    qkw_kint(w, "iterations", (long long)r->iterations);
    qkw_knum(w, "median_s", r->median_s);
    qkw_knum(w, "mean_s", r->mean_s);
    qkw_knum(w, "min_s", r->min_s);
    qkw_knum(w, "max_s", r->max_s);
    qkw_knum(w, "stddev_s", r->stddev_s);
    qkw_knum(w, "cv", r->cv);
    qkw_knum(w, "spread", r->spread);
    qkw_knum(w, "ops", r->ops);
    qkw_knum(w, "bytes", r->bytes);
    qkw_knum(w, "gops", r->gops);
    qkw_knum(w, "gbps", r->gbps);
    qkw_knum(w, "bpw", r->bpw);
    qkw_knum(w, "ai", r->ai);
    qkw_kstr(w, "level", r->level);
    qkw_knum(w, "bw_gbps", r->bw_gbps);
    qkw_knum(w, "peak_gops", r->peak_gops);
    qkw_knum(w, "roofline_s", r->roofline_s);
    qkw_knum(w, "roofline", r->roofline);
    qkw_kstr(w, "bound", r->bound);
    qkw_knum(w, "speedup_vs_scalar", r->speedup);
    qkw_knum(w, "read_gbps", r->read_gbps);
    qkw_knum(w, "of_read", r->of_read);
    qkw_knum(w, "stream_gbps", r->stream_gbps);
    qkw_knum(w, "of_stream", r->of_stream);
    qkw_knum(w, "peak_now_gops", r->peak_now_gops);
    qkw_knum(w, "of_peak_now", r->of_peak);
    qkw_kint(w, "headline", r->headline);
    qkw_kbool(w, "emulated", r->emulated);
    qkw_key(w, "times_s");
    qkw_arr(w);
    for (int i = 0; i < r->ntimes; i++) qkw_num(w, r->times[i]);
    qkw_end_arr(w);
    pairs_json(w, "read_pairs_gbps", r->pairs, r->npairs);
    pairs_json(w, "stream_pairs_gbps", r->sp, r->nsp);
    pairs_json(w, "peak_pairs_gops", r->pk, r->npk);
    qkw_end_obj(w);
}

static const char *csv_header =
    "name,op,what,kernel,tier,format,group,scales,M,N,K,threads,cache,reps,iterations,median_s,mean_s,min_s,max_s,"
    "stddev_s,cv,spread,ops,bytes,gops,gbps,bpw,ai,level,bw_gbps,peak_gops,roofline_s,roofline,bound,speedup_vs_scalar,headline,emulated,read_gbps,of_read,peak_now_gops,of_peak_now,stream_gbps,of_stream\n";

static void row_csv(qkb_buf *b, const qkb_row *r) {
    qkb_buf_printf(b, "%s,%s,%s,%s,%s,%s,%zu,%s,%zu,%zu,%zu,%d,%s,%d,%lld,%.6g,%.6g,%.6g,%.6g,%.6g,%.4g,%.4g,%.6g,%.6g,%.6g,%.6g,%.4g,%.4g,%s,"
                      "%.5g,%.5g,%.6g,%.4g,%s,%.4g,%d,%d,%.5g,%.4g,%.5g,%.4g,%.5g,%.4g\n",
                   r->name, r->op, r->what, r->kernel, r->tier, r->format, r->group, r->scales, r->M, r->N, r->K, r->threads, r->cache,
                   r->reps, (long long)r->iterations, r->median_s, r->mean_s, r->min_s, r->max_s, r->stddev_s, r->cv, r->spread, r->ops,
                   r->bytes, r->gops, r->gbps, r->bpw, r->ai, r->level, r->bw_gbps, r->peak_gops, r->roofline_s, r->roofline, r->bound,
                   r->speedup, r->headline, r->emulated, r->read_gbps, r->of_read, r->peak_now_gops, r->of_peak, r->stream_gbps, r->of_stream);
}

int qkb_rows_write(const char *dir, const qkb_run_meta *m, const qkb_row *rows, size_t n, const qkb_skip *skips, size_t nskip,
                   char *err, size_t errlen) {
    qkb_buf b = {0};
    qkw w;
    qkw_init(&w, &b);
    qkw_obj(&w);
    qkw_kstr(&w, "schema", "qkbench-results/1");
    qkw_kstr(&w, "machine", m->machine);
    qkw_kstr(&w, "commit", m->commit);
    qkw_kstr(&w, "date", m->date);
    qkw_kstr(&w, "command", m->command);
    qkw_kstr(&w, "suite", m->suite);
    qkw_kbool(&w, "complete", m->complete);
    qkw_kbool(&w, "interrupted", m->interrupted);
    if (m->dram_threads) {
        qkw_key(&w, "dram_read_during_run");
        qkw_obj(&w);
        qkw_kint(&w, "threads", m->dram_threads);
        qkw_knum(&w, "before_gbps_1t", m->dram_gbps[0][0]), qkw_knum(&w, "before_gbps_threads", m->dram_gbps[0][1]);
        qkw_knum(&w, "after_gbps_1t", m->dram_gbps[1][0]), qkw_knum(&w, "after_gbps_threads", m->dram_gbps[1][1]);
        qkw_end_obj(&w);
    }
    if (m->core_tier[0]) {
        qkw_key(&w, "core_during_run");
        qkw_obj(&w);
        qkw_kstr(&w, "tier", m->core_tier);
        for (int t = 0; t < 2; t++)
            for (int k = 0; k < 3; k++) qkw_knum(&w, core_keys[t][k], m->core_now[t][k]);
        qkw_end_obj(&w);
    }
    qkw_key(&w, "rows");
    qkw_arr(&w);
    for (size_t i = 0; i < n; i++) row_json(&w, &rows[i]);
    qkw_end_arr(&w);
    qkw_key(&w, "skipped");
    qkw_arr(&w);
    for (size_t i = 0; i < nskip; i++) {
        qkw_obj(&w);
        qkw_kstr(&w, "name", skips[i].name);
        qkw_kstr(&w, "reason", skips[i].reason);
        qkw_end_obj(&w);
    }
    qkw_end_arr(&w);
    qkw_end_obj(&w);
    char path[1200];
    qkb_path(path, sizeof path, dir, "results.json");
    int rc = b.oom ? (snprintf(err, errlen, "out of memory"), -1) : qkb_write_atomic(path, b.p, b.n, err, errlen);
    qkb_buf_free(&b);
    if (rc) return rc;
    qkb_buf_puts(&b, csv_header);
    for (size_t i = 0; i < n; i++) row_csv(&b, &rows[i]);
    qkb_path(path, sizeof path, dir, "results.csv");
    rc = b.oom ? (snprintf(err, errlen, "out of memory"), -1) : qkb_write_atomic(path, b.p, b.n, err, errlen);
    qkb_buf_free(&b);
    return rc;
}

static void cpy(char *dst, size_t n, const qkj *o, const char *key) { snprintf(dst, n, "%s", qkj_str(qkj_get(o, key), "")); }

int qkb_rows_load(const char *path, qkb_run_meta *m, qkb_row **rows, size_t *n, char *err, size_t errlen) {
    char file[1200];
    size_t len = strlen(path);
    if (len > 5 && !strcmp(path + len - 5, ".json")) snprintf(file, sizeof file, "%s", path);
    else qkb_path(file, sizeof file, path, "results.json");
    qkj *root = qkj_parse_file(file, err, errlen);
    if (!root) return -1;
    const qkj *rs = qkj_get(root, "rows");
    if (!rs || rs->type != QKJ_ARR) {
        snprintf(err, errlen, "%s has no \"rows\" array: not a qkbench results file", file);
        qkj_free(root);
        return -1;
    }
    memset(m, 0, sizeof *m);
    cpy(m->machine, sizeof m->machine, root, "machine");
    cpy(m->commit, sizeof m->commit, root, "commit");
    cpy(m->date, sizeof m->date, root, "date");
    cpy(m->command, sizeof m->command, root, "command");
    cpy(m->suite, sizeof m->suite, root, "suite");
    m->complete = (int)qkj_num(qkj_get(root, "complete"), 0);
    m->interrupted = (int)qkj_num(qkj_get(root, "interrupted"), 0);
    const qkj *dr = qkj_get(root, "dram_read_during_run");
    if (dr && dr->type == QKJ_OBJ) {
        m->dram_threads = (int)qkj_num(qkj_get(dr, "threads"), 0);
        m->dram_gbps[0][0] = qkj_num(qkj_get(dr, "before_gbps_1t"), 0), m->dram_gbps[0][1] = qkj_num(qkj_get(dr, "before_gbps_threads"), 0);
        m->dram_gbps[1][0] = qkj_num(qkj_get(dr, "after_gbps_1t"), 0), m->dram_gbps[1][1] = qkj_num(qkj_get(dr, "after_gbps_threads"), 0);
    }
    const qkj *cr = qkj_get(root, "core_during_run");
    if (cr && cr->type == QKJ_OBJ) {
        cpy(m->core_tier, sizeof m->core_tier, cr, "tier");
        for (int t = 0; t < 2; t++)
            for (int k = 0; k < 3; k++) m->core_now[t][k] = qkj_num(qkj_get(cr, core_keys[t][k]), 0);
    }
    *rows = calloc(rs->n ? rs->n : 1, sizeof **rows);
    *n = rs->n;
    for (size_t i = 0; i < rs->n; i++) {
        const qkj *o = rs->items[i];
        qkb_row *r = &(*rows)[i];
        cpy(r->name, sizeof r->name, o, "name");
        cpy(r->op, sizeof r->op, o, "op");
        cpy(r->what, sizeof r->what, o, "what");
        cpy(r->kernel, sizeof r->kernel, o, "kernel");
        cpy(r->tier, sizeof r->tier, o, "tier");
        cpy(r->format, sizeof r->format, o, "format");
        cpy(r->scales, sizeof r->scales, o, "scales");
        cpy(r->cache, sizeof r->cache, o, "cache");
        cpy(r->level, sizeof r->level, o, "level");
        cpy(r->bound, sizeof r->bound, o, "bound");
        r->group = (size_t)qkj_num(qkj_get(o, "group"), 0);
        r->M = (size_t)qkj_num(qkj_get(o, "M"), 0);
        r->N = (size_t)qkj_num(qkj_get(o, "N"), 0);
        r->K = (size_t)qkj_num(qkj_get(o, "K"), 0);
        r->threads = (int)qkj_num(qkj_get(o, "threads"), 1);
        r->headline = (int)qkj_num(qkj_get(o, "headline"), 0);
        r->emulated = (int)qkj_num(qkj_get(o, "emulated"), 0);
        r->reps = (int)qkj_num(qkj_get(o, "reps"), 0);
        r->iterations = (int64_t)qkj_num(qkj_get(o, "iterations"), 0);
        r->median_s = qkj_num(qkj_get(o, "median_s"), 0);
        r->mean_s = qkj_num(qkj_get(o, "mean_s"), 0);
        r->min_s = qkj_num(qkj_get(o, "min_s"), 0);
        r->max_s = qkj_num(qkj_get(o, "max_s"), 0);
        r->stddev_s = qkj_num(qkj_get(o, "stddev_s"), 0);
        r->cv = qkj_num(qkj_get(o, "cv"), 0);
        r->spread = qkj_num(qkj_get(o, "spread"), 0);
        r->ops = qkj_num(qkj_get(o, "ops"), 0);
        r->bytes = qkj_num(qkj_get(o, "bytes"), 0);
        r->gops = qkj_num(qkj_get(o, "gops"), 0);
        r->gbps = qkj_num(qkj_get(o, "gbps"), 0);
        r->bpw = qkj_num(qkj_get(o, "bpw"), 0);
        r->ai = qkj_num(qkj_get(o, "ai"), 0);
        r->bw_gbps = qkj_num(qkj_get(o, "bw_gbps"), 0);
        r->peak_gops = qkj_num(qkj_get(o, "peak_gops"), 0);
        r->roofline_s = qkj_num(qkj_get(o, "roofline_s"), 0);
        r->roofline = qkj_num(qkj_get(o, "roofline"), 0);
        r->speedup = qkj_num(qkj_get(o, "speedup_vs_scalar"), 0);
        r->read_gbps = qkj_num(qkj_get(o, "read_gbps"), 0);
        r->of_read = qkj_num(qkj_get(o, "of_read"), 0);
        r->stream_gbps = qkj_num(qkj_get(o, "stream_gbps"), 0);
        r->of_stream = qkj_num(qkj_get(o, "of_stream"), 0);
        const qkj *ts = qkj_get(o, "times_s");
        for (size_t k = 0; ts && ts->type == QKJ_ARR && k < ts->n && k < QKB_ROW_MAX_TIMES; k++) r->times[r->ntimes++] = qkj_num(ts->items[k], 0);
        r->peak_now_gops = qkj_num(qkj_get(o, "peak_now_gops"), 0);
        r->of_peak = qkj_num(qkj_get(o, "of_peak_now"), 0);
        r->npairs = pairs_load(qkj_get(o, "read_pairs_gbps"), r->pairs);
        r->nsp = pairs_load(qkj_get(o, "stream_pairs_gbps"), r->sp);
        r->npk = pairs_load(qkj_get(o, "peak_pairs_gops"), r->pk);
    }
    qkj_free(root);
    return 0;
}

/* ---- tables ---- */

static void fmt_time(char *out, size_t n, double s) {
    if (s <= 0) snprintf(out, n, "-");
    else if (s < 1e-3) snprintf(out, n, "%.1f us", s * 1e6);
    else if (s < 1) snprintf(out, n, "%.2f ms", s * 1e3);
    else snprintf(out, n, "%.2f s", s);
}

static void fmt_rate(char *out, size_t n, const qkb_row *r) {
    if (!strcmp(r->bound, "compute") || (!strcmp(r->op, "gemm") && strcmp(r->bound, "memory")))
        snprintf(out, n, "%.1f GOP/s", r->gops);
    else snprintf(out, n, "%.1f GB/s", r->gbps);
}

static void fmt_shape(char *out, size_t n, const qkb_row *r) {
    if (!strcmp(r->op, "gemv") || !strcmp(r->op, "gemm") || (!strcmp(r->op, "outlier") && !strncmp(r->what, "gemm", 4)))
        snprintf(out, n, "%zux%zux%zu", r->M, r->N, r->K);
    else if (!strcmp(r->op, "actquant") || !strcmp(r->op, "outlier")) snprintf(out, n, "%zux%zu", r->M, r->K);
    else snprintf(out, n, "%zux%zu", r->N, r->K);
}

/* Rows whose output is as large as or larger than a read-only limit can account for. */
static int writes_out(const qkb_row *r) { return !strcmp(r->op, "quantize") || !strcmp(r->op, "dequantize"); }

void qkb_rows_table(FILE *f, const qkb_row *rows, size_t n, int md) {
    const char *hdr[] = {"op", "mode", "format", "g", "shape", "thr", "cache", "best kernel", "time", "rate", "roofline", "of read", "vs scalar"};
    int emulated = 0;
    for (size_t i = 0; i < n; i++) emulated |= rows[i].emulated;
    if (emulated) fprintf(f, md ? "**%s** (an emulated CPU: compare nothing here with real hardware)\n\n" : "%s (an emulated CPU: compare nothing here with real hardware)\n", QKB_EMULATED_LINE);
    if (md) {
        fprintf(f, "| op | mode | format | g | shape | threads | cache | best kernel | time | rate | %% of roofline (level) | "
                   "%% of a plain read of its buffers (cold gemv/gemm; warm quantize/dequantize), of a plain stream of its own reads and "
                   "writes (st: cold quantize/dequantize) or of the peak loop now (pk: warm, compute-bound) | "
                   "speed-up vs scalar |\n");
        fprintf(f, "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    } else {
        fprintf(f, "%-10s %-9s %-6s %-4s %-12s %-3s %-5s %-38s %9s %13s %15s %9s %9s\n", hdr[0], hdr[1], hdr[2], hdr[3], hdr[4], hdr[5],
                hdr[6], hdr[7], hdr[8], hdr[9], hdr[10], hdr[11], hdr[12]);
    }
    char *done = calloc(n ? n : 1, 1);
    int over = 0, any = 0, streams = 0;
    for (size_t i = 0; i < n; i++) any |= rows[i].headline;
    for (size_t i = 0; i < n; i++) {
        if ((any && !rows[i].headline) || done[i]) continue;
        size_t best = i;
        for (size_t j = i; j < n; j++) {
            if ((any && !rows[j].headline) || strcmp(rows[j].op, rows[i].op) || strcmp(rows[j].what, rows[i].what) ||
                strcmp(rows[j].format, rows[i].format) || !same_config(&rows[i], &rows[j]))
                continue;
            done[j] = 1;
            if (rows[j].median_s > 0 && (rows[best].median_s <= 0 || rows[j].median_s < rows[best].median_s)) best = j;
        }
        const qkb_row *r = &rows[best];
        char t[32], rate[32], shape[48], roof[32], sp[32], g[16], rd[16] = "-";
        fmt_time(t, sizeof t, r->median_s);
        if (r->stream_gbps > 0) snprintf(rd, sizeof rd, "%.1f%% st", 100 * r->of_stream), streams = 1;
        else if (r->read_gbps > 0) snprintf(rd, sizeof rd, "%.1f%%", 100 * r->of_read);
        else if (r->peak_now_gops > 0) snprintf(rd, sizeof rd, "%.1f%% pk", 100 * r->of_peak);
        fmt_rate(rate, sizeof rate, r);
        fmt_shape(shape, sizeof shape, r);
        snprintf(roof, sizeof roof, "%.1f%%%s %s", 100 * r->roofline, r->roofline > 1.05 ? "!" : "", r->level);
        if (r->roofline > 1.05) over |= writes_out(r) ? 2 : 1;
        if (r->speedup > 0) snprintf(sp, sizeof sp, "%.2fx", r->speedup);
        else snprintf(sp, sizeof sp, "-");
        snprintf(g, sizeof g, "%zu", r->group);
        const char *mode = strcmp(r->what, r->format) ? r->what : "";
        if (md)
            fprintf(f, "| %s | %s | %s | %s | %s | %d | %s | `%s` | %s | %s | %s | %s | %s |\n", r->op, mode, r->format, g, shape, r->threads,
                    r->cache, r->kernel, t, rate, roof, rd, sp);
        else
            fprintf(f, "%-10s %-9s %-6s %-4s %-12s %-3d %-5s %-38s %9s %13s %15s %9s %9s\n", r->op, mode, r->format, g, shape, r->threads,
                    r->cache, r->kernel, t, rate, roof, rd, sp);
    }
    free(done);
    if (streams && !md)
        fprintf(f, "st: of a plain stream of the row's own reads and writes beside its calls (cold quantize/dequantize: "
                   "most of their bytes are writes); summary.md also gives their plain read\n");
    if (over & 1)
        fprintf(f, "%s! above 100%%: the probe underestimated that limit (measured while the machine was busy?): "
                   "qkbench probe --reprobe on a quiet machine\n", md ? "\n" : "");
    if (over & 2)
        fprintf(f, "%s! above 100%% on a row that writes a large output (quantize, dequantize): its bytes read and written "
                   "are held against the probe's read bandwidth, and streaming stores write to DRAM beside the reads\n",
                md ? "\n" : "");
}

/* Why a tier is not faster than the one below it, when the rows say so
 * themselves: both at the memory's speed (memory-bound rows at 70% of their
 * roofline or more: no instruction set moves DRAM faster), or a difference
 * within the spread of the repetitions. Empty otherwise (a real inversion). */
static const char *tie_reason(const qkb_row *a, const qkb_row *b, double x) {
    if (!strcmp(a->bound, "memory") && !strcmp(b->bound, "memory") && a->roofline >= 0.7 && b->roofline >= 0.7)
        return " (both at memory speed)";
    if (x >= 1 - (a->spread > b->spread ? a->spread : b->spread)) return " (within the spread)";
    return "";
}

/* Tiers side by side: per configuration, the best rate of each tier and its
 * ratio to the nearest lower tier that has a variant; a tier that is not at
 * least 3% faster than that one is named in the last column, with the reason
 * when the rows give one (tie_reason). */
static void tiers_table(FILE *f, const qkb_row *rows, size_t n) {
    int present[QK_TIER_COUNT] = {0};
    for (size_t i = 0; i < n; i++)
        for (int t = 0; t < QK_TIER_COUNT; t++)
            if (!strcmp(rows[i].tier, qk_tier_name((qk_tier)t))) present[t] = 1;
    fprintf(f, "## Tiers side by side\n\nEach tier's best variant per configuration (rate, and × over the nearest lower tier that has one; "
               "— where the family list has no variant of that tier). The last column names a tier that is not at least 3%% faster "
               "than the tier below it, and why when the rows show it: both at memory speed (memory-bound rows at 70%% of their "
               "roofline or more), or within the spread of their repetitions.\n\n| op | mode | format | g | shape | threads | cache |");
    for (int t = 0; t < QK_TIER_COUNT; t++)
        if (present[t]) fprintf(f, " %s |", qk_tier_name((qk_tier)t));
    fprintf(f, " not faster than the tier below |\n|---|---|---|---|---|---|---|");
    for (int t = 0; t < QK_TIER_COUNT; t++)
        if (present[t]) fprintf(f, "---|");
    fprintf(f, "---|\n");
    char *done = calloc(n ? n : 1, 1);
    for (size_t i = 0; i < n && done; i++) {
        if (done[i]) continue;
        const qkb_row *best[QK_TIER_COUNT] = {0};
        for (size_t j = i; j < n; j++) {
            if (!same_config(&rows[i], &rows[j])) continue;
            done[j] = 1;
            for (int t = 0; t < QK_TIER_COUNT; t++)
                if (!strcmp(rows[j].tier, qk_tier_name((qk_tier)t)) && rows[j].median_s > 0 &&
                    (!best[t] || rows[j].median_s < best[t]->median_s))
                    best[t] = &rows[j];
        }
        const qkb_row *r = &rows[i];
        char shape[48], slow[512] = "";
        fmt_shape(shape, sizeof shape, r);
        fprintf(f, "| %s | %s | %s | %zu | %s | %d | %s |", r->op, strcmp(r->what, r->format) ? r->what : "", r->format, r->group, shape,
                r->threads, r->cache);
        const qkb_row *below = NULL;
        size_t sl = 0;
        for (int t = 0; t < QK_TIER_COUNT; t++) {
            if (!present[t]) continue;
            const qkb_row *b = best[t];
            if (!b) {
                fprintf(f, " — |");
                continue;
            }
            char rate[32];
            fmt_rate(rate, sizeof rate, b);
            if (below) {
                double x = below->median_s / b->median_s;
                fprintf(f, " %s (%.2f×) |", rate, x);
                if (x < 1.03 && sl < sizeof slow)
                    sl += (size_t)snprintf(slow + sl, sizeof slow - sl, "%s%s %.2f× %s%s", sl ? "; " : "", b->tier, x, below->tier,
                                           tie_reason(below, b, x));
            } else {
                fprintf(f, " %s |", rate);
            }
            below = b;
        }
        fprintf(f, " %s |\n", slow);
    }
    free(done);
    fprintf(f, "\n");
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The first quartile of v[0..k) (the value that a quarter of them are at or under) in
 * *q1, the smallest in *lo; both 1 when k = 0. Sorts v. */
static void first_quartile(double *v, size_t k, double *q1, double *lo) {
    *q1 = *lo = 1;
    if (!k) return;
    qsort(v, k, sizeof *v, cmp_double);
    *q1 = v[(k + 3) / 4 - 1], *lo = v[0];
}

/* What the rows measured beside their own calls, against the probe: the warm
 * compute-bound rows' peak loop (peak_now_gops / peak_gops) when !reads, the warm
 * one-thread conversions' read of their own buffers in L2 (read_gbps / l2, the probe's
 * L2 read in B/s) when reads; its first quartile and smallest (first_quartile). A
 * quarter of the rows under 0.9 means a slow spell that the before / after figures can
 * miss, when it falls between them (a spell that slowed the quantizers to 60% of
 * their rate slowed those reads to 80% while the core checks around them read 96%).
 * tools/speed_targets.py --check-core applies the same. */
static void rows_beside(const qkb_row *rows, size_t n, int reads, double l2, double *q1, double *lo) {
    double *v = malloc((n ? n : 1) * sizeof *v);
    size_t k = 0;
    for (size_t i = 0; v && i < n; i++) {
        const qkb_row *r = &rows[i];
        if (!reads && r->peak_now_gops > 0 && r->peak_gops > 0) v[k++] = r->peak_now_gops / r->peak_gops;
        if (reads && l2 > 0 && r->read_gbps > 0 && r->threads == 1 && !strcmp(r->cache, "warm") && !strcmp(r->level, "L2") &&
            (!strcmp(r->op, "quantize") || !strcmp(r->op, "dequantize")))
            v[k++] = r->read_gbps * 1e9 / l2;
    }
    first_quartile(v, k, q1, lo);
    free(v);
}

/* The run's own measure of one core against the probe's: a line, and a warning when the
 * core ran more than 10% below the probe before or after the cases, or a quarter of the
 * warm compute-bound rows' peak loops beside their calls did, or a quarter of the warm
 * conversions' reads of their buffers in L2 beside their calls did (the roofline
 * fractions of the warm rows, taken against the probe, then understate the kernels). */
static void core_line(FILE *f, const qkb_run_meta *m, const qkb_limits *l, const qkb_row *rows, size_t n) {
    double worst = 1, q1, lo, rq1, rlo, l2 = 0;
    const char *wname = "";
    for (int i = 0; l && i < l->nlevels; i++)
        if (!strcmp(l->level[i].name, "L2")) l2 = l->level[i].bw1;
    if (m->core_tier[0]) {
        double probe[3] = {0, 0, l2};
        for (int i = 0; l && i < l->npeaks; i++)
            if (!strcmp(qk_tier_name(l->peak[i].tier), m->core_tier)) probe[0] = l->peak[i].i8_1, probe[1] = l->peak[i].f32_1;
        static const char *const what[3] = {"int8 dot", "f32 FMA", "L2 read"}, *const unit[3] = {"GOP/s", "GFLOP/s", "GB/s"};
        fprintf(f, "- one core measured by this run itself (1 thread, the probe's loops, %s), before / after its cases, "
                   "and the cached probe:", m->core_tier);
        for (int k = 0, sep = 0; k < 3; k++) {
            if (m->core_now[0][k] <= 0 && m->core_now[1][k] <= 0) continue;
            char v[2][24];
            for (int t = 0; t < 2; t++) snprintf(v[t], sizeof v[t], m->core_now[t][k] > 0 ? "%.0f" : "-", m->core_now[t][k]);
            char pv[24] = "-";
            if (probe[k] > 0) snprintf(pv, sizeof pv, "%.0f", probe[k] * 1e-9);
            fprintf(f, "%s %s %s / %s %s (probe %s)", sep++ ? "," : "", what[k], v[0], v[1], unit[k], pv);
            for (int t = 0; t < 2; t++)
                if (probe[k] > 0 && m->core_now[t][k] > 0 && m->core_now[t][k] * 1e9 / probe[k] < worst)
                    worst = m->core_now[t][k] * 1e9 / probe[k], wname = what[k];
        }
        fprintf(f, "\n");
    }
    rows_beside(rows, n, 0, l2, &q1, &lo);
    rows_beside(rows, n, 1, l2, &rq1, &rlo);
    if (worst >= 0.9 && q1 >= 0.9 && rq1 >= 0.9) return;
    char why[480];
    int w = 0;
    if (worst < 0.9) w = snprintf(why, sizeof why, "its %s ran at %.0f%% of the probe's", wname, 100 * worst);
    if (q1 < 0.9)
        w += snprintf(why + w, sizeof why - (size_t)w, "%sa quarter of its warm compute-bound rows saw the peak loop beside their calls "
                      "at %.0f%% of the probe's or less", w ? ", and " : "", 100 * q1);
    if (rq1 < 0.9)
        w += snprintf(why + w, sizeof why - (size_t)w, "%sa quarter of its warm conversions read their own buffers in L2 beside their "
                      "calls at %.0f%% of the probe's L2 read or less", w ? ", and " : "", 100 * rq1);
    if (worst >= 0.9) snprintf(why + w, sizeof why - (size_t)w, " (between its before and after figures)");
    double slowest = worst < lo ? worst : lo;
    if (rlo < slowest) slowest = rlo;
    fprintf(f, "- **this run met a slow core**: %s. The roofline fractions below are against "
               "the probe, so for cases that ran in a slow spell they understate the kernels (by up to %.2fx). Warm "
               "compute-bound rows also give their fraction of the peak loop run beside their own calls (pk); compare "
               "tiers and kernels within this run, or run again.\n",
            why, 1 / slowest);
}

int qkb_summary_write(const char *dir, const qkb_run_meta *m, const qkb_limits *l, const qkb_row *rows, size_t n,
                      const qkb_skip *skips, size_t nskip, const char *extra_md, char *err, size_t errlen) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return snprintf(err, errlen, "out of memory"), -1;
    const qk_cpu_info *c = qk_cpu();
    fprintf(f, "# qkbench results: %s\n\n", m->machine);
    fprintf(f, "- date: %s, commit `%s`, suite `%s`%s\n", m->date, m->commit, m->suite,
            m->interrupted ? " — **interrupted**: the rows below are the ones that completed" : "");
    fprintf(f, "- command: `%s`\n", m->command);
    const qkb_emulation *emu = qkb_emulation_get();
    int emulated = emu->emulated;
    for (size_t i = 0; i < n; i++) emulated |= rows[i].emulated;
    if (emulated) fprintf(f, "- **%s** (%s)\n", QKB_EMULATED_LINE, emu->emulated ? emu->how : "the rows were measured on an emulated CPU");
    fprintf(f, "- CPU: %s (%s); tiers run:", qkb_cpu_brand(), c->vendor);
    for (int t = 0; t < QK_TIER_COUNT; t++)
        if (qk_tier_allowed((qk_tier)t)) fprintf(f, " %s", qk_tier_name((qk_tier)t));
    fprintf(f, "\n");
    core_line(f, m, l, rows, n);
    fprintf(f, "- files: `machine.json` (CPU, features, topology, build, probe, dispatch), `results.json` / `results.csv` "
               "(every row), `gbench.json` (Google Benchmark's own output)\n\n");
    if (l && l->ok) {
        fprintf(f, "## Limits measured by `qkbench probe`\n\n| level | size | read 1 thread | read %d cores | hwloc reports |\n|---|---|---|---|---|\n",
                l->ncores);
        for (int i = 0; i < l->nlevels; i++) {
            const qkb_level *v = &l->level[i];
            char s[32] = "-", h[400] = "";
            if (v->size > 0) snprintf(s, sizeof s, "%.1f KiB", v->size / 1024);
            if (v->size >= 1048576) snprintf(s, sizeof s, "%.1f MiB", v->size / 1048576);
            if (v->hwloc_size > 0)
                snprintf(h, sizeof h, "%.1f %s%s", v->hwloc_size >= 1048576 ? v->hwloc_size / 1048576 : v->hwloc_size / 1024,
                         v->hwloc_size >= 1048576 ? "MiB" : "KiB", v->contradicted ? " (contradicted by the curve)" : "");
            fprintf(f, "| %s | %s | %.1f GB/s | %.1f GB/s | %s |\n", v->name, s, v->bw1 * 1e-9, v->bwall * 1e-9, h);
        }
        if (m->dram_threads) {
            fprintf(f, "\nDRAM read measured by this run itself (the probe's loop and DRAM working sets), before / after its cases: "
                       "%.1f / %.1f GB/s with 1 thread", m->dram_gbps[0][0], m->dram_gbps[1][0]);
            if (m->dram_threads > 1) fprintf(f, ", %.1f / %.1f GB/s with %d", m->dram_gbps[0][1], m->dram_gbps[1][1], m->dram_threads);
            fprintf(f, ". On a shared machine the cached probe above can be far from these: judge the cold rows against them too.\n");
        }
        fprintf(f, "\n| tier | f32 FMA GFLOP/s (1 / %d threads) | int8 dot GOP/s (1 / %d threads) | the dot with W8A8's per-group "
                   "rescale at g = 32 (1 / %d threads; of the dot) |\n|---|---|---|---|\n",
                l->ncores, l->ncores, l->ncores);
        for (int i = 0; i < l->npeaks; i++) {
            const qkb_peak *p = &l->peak[i];
            fprintf(f, "| %s | %.1f / %.1f (%s) | %.1f / %.1f (%s) | ", qk_tier_name(p->tier), p->f32_1 * 1e-9, p->f32_all * 1e-9,
                    p->f32_insn, p->i8_1 * 1e-9, p->i8_all * 1e-9, p->i8_insn);
            if (p->i8g32_1 > 0) fprintf(f, "%.1f / %.1f (%.0f%%) |\n", p->i8g32_1 * 1e-9, p->i8g32_all * 1e-9, 100 * p->i8g32_1 / p->i8_1);
            else fprintf(f, "- |\n");
        }
        fprintf(f, "\n");
    }
    fprintf(f, "## Best variant per op and mode\n\nroofline = min(peak ops of the tier, bandwidth of the level the working set lives in × "
               "arithmetic intensity); the %% is the measured rate over it. Cold rows also give their rate over a plain read "
               "(the probe's loop, same threads) of their own rotated buffers, call by call: one call, then one pass of the read over "
               "the next copy, 21 times, the median of the ratios. That is the fraction of what DRAM gave at that moment, which on a "
               "shared machine can be far from the cached probe and moves within tens of milliseconds. Warm quantize and dequantize rows "
               "on one thread give the same over a read of their own cached buffers (one copy): what their cache level gave the "
               "core right then. Cold quantize and dequantize rows also give their rate over a plain stream of their own traffic "
               "beside each call (st: a read of what the call reads and streaming stores of data over what it writes, in turn): a dequantize's bytes "
               "are mostly writes, which DRAM does not take at the rate of reads, so that is the limit their target is held against.\n\n");
    qkb_rows_table(f, rows, n, 1);
    fprintf(f, "\n");
    tiers_table(f, rows, n);
    if (extra_md && *extra_md) fprintf(f, "\n%s\n", extra_md);
    fprintf(f, "\n## All rows (%zu)\n\n| name | median | spread | GOP/s | GB/s | bpw | level | %% of roofline | bound | "
               "plain read of its buffers, and a plain stream of its reads and writes (st), or the peak loop now (pk) | vs scalar |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
            n);
    for (size_t i = 0; i < n; i++) {
        const qkb_row *r = &rows[i];
        char t[32], sp[32] = "-", rd[96] = "-";
        fmt_time(t, sizeof t, r->median_s);
        if (r->speedup > 0) snprintf(sp, sizeof sp, "%.2fx", r->speedup);
        if (r->stream_gbps > 0)
            snprintf(rd, sizeof rd, "%.1f GB/s (%.1f%%), st %.1f GB/s (%.1f%%)", r->read_gbps, 100 * r->of_read, r->stream_gbps,
                     100 * r->of_stream);
        else if (r->read_gbps > 0) snprintf(rd, sizeof rd, "%.1f GB/s (%.1f%%)", r->read_gbps, 100 * r->of_read);
        else if (r->peak_now_gops > 0) snprintf(rd, sizeof rd, "pk %.0f GOP/s (%.1f%%)", r->peak_now_gops, 100 * r->of_peak);
        fprintf(f, "| `%s` | %s | %.1f%% | %.2f | %.2f | %.2f | %s | %.1f%% | %s | %s | %s |\n", r->name, t, 100 * r->spread, r->gops,
                r->gbps, r->bpw, r->level, 100 * r->roofline, r->bound, rd, sp);
    }
    if (nskip) {
        fprintf(f, "\n## Skipped (%zu)\n\n", nskip);
        for (size_t i = 0; i < nskip; i++) fprintf(f, "- `%s`: %s\n", skips[i].name, skips[i].reason);
    }
    fclose(f);
    char path[1200];
    qkb_path(path, sizeof path, dir, "summary.md");
    int rc = qkb_write_atomic(path, text, len, err, errlen);
    free(text);
    return rc;
}
