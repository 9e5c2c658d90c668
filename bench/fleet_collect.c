/* qkbench fleet collect DIR [--out OUT]: check the shards under a results root
 * (fleet_scan.c), merge every complete group into one result per machine in
 * the unsharded command's formats, and write the cross-machine table and
 * plots. Nothing under DIR is modified: OUT is a new folder. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "acc_report.h"
#include "bench.h"
#include "fleet.h"
#include "fleet_priv.h"
#include "json.h"
#include "results.h"
#include "rows.h"

/* ---- raw JSON: the text of the items of a top-level array, kept byte for byte ---- */

typedef struct span {
    size_t a, b;
} span;

static size_t skip_ws(const char *t, size_t i) {
    while (t[i] == ' ' || t[i] == '\n' || t[i] == '\r' || t[i] == '\t') i++;
    return i;
}

static size_t skip_val(const char *t, size_t i);

static size_t skip_str(const char *t, size_t i) {
    if (t[i] != '"') return (size_t)-1;
    for (i++; t[i] && t[i] != '"'; i++)
        if (t[i] == '\\' && t[i + 1]) i++;
    return t[i] == '"' ? i + 1 : (size_t)-1;
}

static size_t skip_container(const char *t, size_t i, char close, int keys) {
    i = skip_ws(t, i + 1);
    if (t[i] == close) return i + 1;
    for (;;) {
        if (keys) {
            i = skip_str(t, skip_ws(t, i));
            if (i == (size_t)-1) return i;
            i = skip_ws(t, i);
            if (t[i] != ':') return (size_t)-1;
            i++;
        }
        i = skip_val(t, skip_ws(t, i));
        if (i == (size_t)-1) return i;
        i = skip_ws(t, i);
        if (t[i] == close) return i + 1;
        if (t[i] != ',') return (size_t)-1;
        i++;
    }
}

static size_t skip_val(const char *t, size_t i) {
    i = skip_ws(t, i);
    if (t[i] == '"') return skip_str(t, i);
    if (t[i] == '{') return skip_container(t, i, '}', 1);
    if (t[i] == '[') return skip_container(t, i, ']', 0);
    size_t s = i;
    while (t[i] && !strchr(",]} \t\r\n", t[i])) i++;
    return i > s ? i : (size_t)-1;
}

/* The array member `key` of the root object: '[' at *open, the items' spans,
 * and *tail where the text after the last item starts. 0, or -1. */
static int array_items(const char *t, const char *key, size_t *open, size_t *tail, span **items, size_t *n) {
    *items = NULL, *n = 0;
    size_t i = skip_ws(t, 0);
    if (t[i] != '{') return -1;
    i = skip_ws(t, i + 1);
    size_t klen = strlen(key);
    while (t[i] == '"') {
        size_t ks = i + 1, ke = skip_str(t, i);
        if (ke == (size_t)-1) return -1;
        i = skip_ws(t, ke);
        if (t[i] != ':') return -1;
        i = skip_ws(t, i + 1);
        if (ke - 1 - ks == klen && !strncmp(t + ks, key, klen) && t[i] == '[') {
            *open = i;
            size_t cap = 64, j = skip_ws(t, i + 1);
            span *v = malloc(cap * sizeof *v);
            if (!v) return -1;
            *tail = i + 1;
            while (t[j] != ']') {
                size_t e = skip_val(t, j);
                if (e == (size_t)-1) {
                    free(v);
                    return -1;
                }
                if (*n == cap) {
                    span *nv = realloc(v, 2 * cap * sizeof *v);
                    if (!nv) {
                        free(v);
                        return -1;
                    }
                    v = nv, cap *= 2;
                }
                v[(*n)++] = (span){j, e};
                *tail = e;
                j = skip_ws(t, e);
                if (t[j] == ',') j = skip_ws(t, j + 1);
                else if (t[j] != ']') {
                    free(v);
                    return -1;
                }
            }
            *items = v;
            return 0;
        }
        i = skip_val(t, i);
        if (i == (size_t)-1) return -1;
        i = skip_ws(t, i);
        if (t[i] == ',') i = skip_ws(t, i + 1);
    }
    return -1;
}

static char *read_text(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    qkb_buf b = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) qkb_buf_putn(&b, chunk, n);
    fclose(f);
    if (b.oom) {
        qkb_buf_free(&b);
        return NULL;
    }
    if (!b.p) qkb_buf_putn(&b, "", 0), b.p = calloc(1, 1);
    else qkb_buf_putn(&b, "", 1), b.n--;
    if (len) *len = b.n;
    return b.p;
}

/* ---- the positions of a group's cases in its full list ---- */

typedef struct npos {
    const char *name;
    size_t pos;
} npos;

static int npos_cmp(const void *x, const void *y) { return strcmp(((const npos *)x)->name, ((const npos *)y)->name); }

typedef struct merge_ctx {
    const qkf_group *g;
    qkf_priv *p;
    npos *np;
    size_t nnp;
    const qkf_attempt *ref; /* the lowest complete shard: machine.json, headers */
    char dir[1400];
    char err[1200];
} merge_ctx;

/* The position of a case; a Google Benchmark name carries suffixes ("/real_time"). */
static size_t pos_of(const merge_ctx *m, const char *name) {
    char buf[600];
    snprintf(buf, sizeof buf, "%s", name);
    for (;;) {
        npos key = {buf, 0};
        const npos *f = bsearch(&key, m->np, m->nnp, sizeof *m->np, npos_cmp);
        if (f) return f->pos;
        char *slash = strrchr(buf, '/');
        if (!slash) return SIZE_MAX;
        *slash = 0;
    }
}

/* Items from every shard of a group, to be put in the full list's order. */
typedef struct item {
    char *text;   /* the JSON text of the item (owned) */
    char *csv;    /* the matching CSV record (owned), if any */
    size_t pos, seq;
} item;

static int item_cmp(const void *x, const void *y) {
    const item *a = x, *b = y;
    if (a->pos != b->pos) return a->pos < b->pos ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static char *dupn(const char *s, size_t n) {
    char *p = malloc(n + 1);
    if (p) memcpy(p, s, n), p[n] = 0;
    return p;
}

/* CSV records (a quoted field may hold commas, quotes and newlines). */
static size_t csv_records(const char *t, span **out) {
    size_t n = 0, cap = 0, i = 0;
    *out = NULL;
    while (t[i]) {
        size_t s = i;
        int q = 0;
        for (; t[i]; i++) {
            if (t[i] == '"') q = !q;
            else if (t[i] == '\n' && !q) break;
        }
        if (n == cap) {
            span *v = realloc(*out, (cap = cap ? 2 * cap : 64) * sizeof *v);
            if (!v) return n;
            *out = v;
        }
        (*out)[n++] = (span){s, i};
        if (t[i]) i++;
    }
    return n;
}

/* The case of an accuracy/sweep row: LAYER/FORMAT/gG/MODE (acc_case_name). */
static void acc_row_case(const char *text, char *out, size_t n) {
    char e[200];
    qkj *j = qkj_parse(text, e, sizeof e);
    snprintf(out, n, "%s/%s/g%.0f/%s", qkj_str(qkj_get(j, "layer"), "?"), qkj_str(qkj_get(j, "format"), "?"), qkj_num(qkj_get(j, "group"), 0),
             qkj_str(qkj_get(j, "mode"), "?"));
    qkj_free(j);
}

static void gbench_case(const char *text, char *out, size_t n) {
    char e[200];
    qkj *j = qkj_parse(text, e, sizeof e);
    snprintf(out, n, "%s", qkj_str(qkj_get(j, "run_name"), qkj_str(qkj_get(j, "name"), "?")));
    qkj_free(j);
}

static void free_items(item *v, size_t n) {
    for (size_t i = 0; i < n; i++) free(v[i].text), free(v[i].csv);
    free(v);
}

/* Merge DIR/<base>.json (array `key`) and, if csv, DIR/<base>.csv of every
 * shard into m->dir, in the full list's order; case_of names an item's case.
 * Returns the merged items (for the table) through out/nout if asked. */
static int merge_json(merge_ctx *m, const char *file, const char *key, const char *csvfile, void (*case_of)(const char *, char *, size_t),
                      item **out, size_t *nout) {
    const qkf_group *g = m->g;
    item *v = NULL;
    size_t n = 0, cap = 0, seq = 0;
    char *tmpl = NULL, *csv_head = NULL;
    size_t t_open = 0, t_tail = 0, t_items = 0;
    span t_first = {0, 0};
    int rc = -1, have_any = 0;
    for (int s = 0; s < g->of; s++) {
        const qkf_attempt *a = &m->p->att[g->shard[s].attempt];
        char path[1400];
        qkb_path(path, sizeof path, a->dir, file);
        char *t = read_text(path, NULL);
        if (!t) {
            if (errno == ENOENT && a->ncases == 0) continue; /* an empty shard ran nothing */
            snprintf(m->err, sizeof m->err, "cannot read %.400s", path);
            goto out;
        }
        have_any = 1;
        span *it;
        size_t ni, open, tail;
        if (array_items(t, key, &open, &tail, &it, &ni)) {
            snprintf(m->err, sizeof m->err, "%.400s: no \"%s\" array", path, key);
            free(t);
            goto out;
        }
        char *c = NULL;
        span *rec = NULL;
        size_t nrec = 0;
        if (csvfile) {
            qkb_path(path, sizeof path, a->dir, csvfile);
            c = read_text(path, NULL);
            nrec = c ? csv_records(c, &rec) : 0;
            if (!c || nrec != ni + 1) {
                snprintf(m->err, sizeof m->err, "%.400s has %zu rows, %.400s/%s has %zu", path, nrec ? nrec - 1 : 0, a->dir, file, ni);
                free(c), free(rec), free(it), free(t);
                goto out;
            }
            if (!csv_head) csv_head = dupn(c + rec[0].a, rec[0].b - rec[0].a);
        }
        for (size_t k = 0; k < ni; k++) {
            if (n == cap) {
                item *nv = realloc(v, (cap = cap ? 2 * cap : 128) * sizeof *v);
                if (!nv) break;
                v = nv;
            }
            item *x = &v[n];
            x->text = dupn(t + it[k].a, it[k].b - it[k].a);
            x->csv = c ? dupn(c + rec[k + 1].a, rec[k + 1].b - rec[k + 1].a) : NULL;
            char name[600];
            case_of(x->text, name, sizeof name);
            x->pos = pos_of(m, name);
            x->seq = seq++;
            n++;
        }
        if (!tmpl || ni > t_items) { /* the template: the shard with the most items */
            free(tmpl);
            tmpl = t, t_open = open, t_tail = tail, t_items = ni;
            if (ni) t_first = it[0];
        } else {
            free(t);
        }
        free(c), free(rec), free(it);
    }
    if (!have_any) { /* no shard wrote the file (every shard empty) */
        rc = 0;
        goto out;
    }
    qsort(v, n, sizeof *v, item_cmp);
    qkb_buf b = {0};
    qkb_buf_putn(&b, tmpl, t_open + 1);
    const char *lead = t_items ? tmpl + t_open + 1 : "";
    size_t llen = t_items ? t_first.a - (t_open + 1) : 0;
    for (size_t k = 0; k < n; k++) {
        if (k) qkb_buf_puts(&b, ",");
        qkb_buf_putn(&b, lead, llen);
        qkb_buf_puts(&b, v[k].text);
    }
    qkb_buf_puts(&b, tmpl + (t_items ? t_tail : t_open + 1));
    char path[1500];
    qkb_path(path, sizeof path, m->dir, file);
    int bad = b.oom || qkb_write_atomic(path, b.p, b.n, m->err, sizeof m->err);
    qkb_buf_free(&b);
    if (bad) goto out;
    if (csvfile) {
        qkb_buf c = {0};
        qkb_buf_puts(&c, csv_head ? csv_head : "");
        qkb_buf_puts(&c, "\n");
        for (size_t k = 0; k < n; k++) qkb_buf_puts(&c, v[k].csv), qkb_buf_puts(&c, "\n");
        qkb_path(path, sizeof path, m->dir, csvfile);
        bad = c.oom || qkb_write_atomic(path, c.p, c.n, m->err, sizeof m->err);
        qkb_buf_free(&c);
        if (bad) goto out;
    }
    rc = 0;
out:
    free(tmpl), free(csv_head);
    if (rc == 0 && out) {
        *out = v, *nout = n;
    } else {
        free_items(v, n);
    }
    return rc;
}

/* sweep.svg again from the merged rows (acc_svg's fields), titled with the shards' CPU. */
static int sweep_svg(merge_ctx *m, const item *v, size_t n) {
    char path[1500], e[300];
    qkb_path(path, sizeof path, m->dir, "sweep.json");
    qkj *j = qkj_parse_file(path, e, sizeof e);
    if (!j) return 0;
    acc_table t = {0};
    for (size_t i = 0; i < n; i++) {
        qkj *r = qkj_parse(v[i].text, e, sizeof e);
        if (!r) continue;
        acc_row x;
        memset(&x, 0, sizeof x);
        snprintf(x.layer, sizeof x.layer, "%s", qkj_str(qkj_get(r, "layer"), ""));
        x.M = (size_t)qkj_num(qkj_get(r, "M"), 0), x.N = (size_t)qkj_num(qkj_get(r, "N"), 0), x.K = (size_t)qkj_num(qkj_get(r, "K"), 0);
        x.group = (size_t)qkj_num(qkj_get(r, "group"), 0);
        x.bpw = qkj_num(qkj_get(r, "bpw"), 0);
        int ok = qk_format_parse(qkj_str(qkj_get(r, "format"), ""), &x.format) == QK_OK &&
                 qk_mode_parse(qkj_str(qkj_get(r, "mode"), ""), &x.mode) == QK_OK;
        x.q_err.sqnr_db = qkj_num(qkj_get(qkj_get(r, "quantization_error"), "sqnr_db"), NAN);
        if (strcmp(qkj_str(qkj_get(r, "status"), "ok"), "ok")) snprintf(x.skip, sizeof x.skip, "skipped");
        const qkj *gb = qkj_get(r, "gbps");
        if (gb) x.timed = 1, x.gbps = qkj_num(gb, 0);
        if (ok) acc_table_add(&t, &x);
        qkj_free(r);
    }
    acc_meta meta = {"sweep", (uint64_t)qkj_num(qkj_get(j, "seed"), 0), qkj_str(qkj_get(j, "weights"), ""), qkj_str(qkj_get(j, "activations"), ""),
                     qkj_str(qkj_get(j, "timing"), NULL), qkj_str(qkj_get(j, "cpu"), NULL)};
    char *svg = acc_svg(&t, &meta);
    qkb_path(path, sizeof path, m->dir, "sweep.svg");
    int rc = svg ? qkb_write_atomic(path, svg, strlen(svg), m->err, sizeof m->err) : 0;
    free(svg);
    acc_table_free(&t);
    qkj_free(j);
    return rc;
}

/* ---- bench: results.json/.csv (rows in the full list's order, speed-ups over
 * every shard's scalar rows), gbench.json, summary.md ---- */

typedef struct rowpos {
    qkb_row r;
    size_t pos, seq;
} rowpos;

static int rowpos_cmp(const void *x, const void *y) {
    const rowpos *a = x, *b = y;
    if (a->pos != b->pos) return a->pos < b->pos ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

typedef struct skippos {
    qkb_skip s;
    size_t pos, seq;
} skippos;

static int skippos_cmp(const void *x, const void *y) {
    const skippos *a = x, *b = y;
    if (a->pos != b->pos) return a->pos < b->pos ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int merge_bench(merge_ctx *m, qkb_buf *extra) {
    const qkf_group *g = m->g;
    rowpos *rows = NULL;
    skippos *skips = NULL;
    size_t nr = 0, ns = 0, seq = 0;
    qkb_run_meta meta;
    memset(&meta, 0, sizeof meta);
    char suite[16] = "", date[40] = "";
    int rc = -1;
    for (int s = 0; s < g->of; s++) {
        const qkf_attempt *a = &m->p->att[g->shard[s].attempt];
        char path[1400];
        qkb_path(path, sizeof path, a->dir, "results.json");
        qkb_run_meta sm;
        qkb_row *r = NULL;
        size_t n = 0;
        if (qkb_rows_load(path, &sm, &r, &n, m->err, sizeof m->err)) goto out;
        if (!suite[0]) snprintf(suite, sizeof suite, "%s", sm.suite);
        if (strcmp(sm.date, date) > 0) snprintf(date, sizeof date, "%s", sm.date);
        rowpos *nv = realloc(rows, (nr + n + 1) * sizeof *nv);
        if (!nv) {
            free(r);
            goto out;
        }
        rows = nv;
        for (size_t k = 0; k < n; k++) rows[nr++] = (rowpos){r[k], pos_of(m, r[k].name), seq++};
        free(r);
        qkj *j = qkj_parse_file(path, m->err, sizeof m->err);
        const qkj *sk = qkj_get(j, "skipped");
        if (sk && sk->type == QKJ_ARR && sk->n) {
            skippos *sv = realloc(skips, (ns + sk->n) * sizeof *sv);
            if (sv) {
                skips = sv;
                for (size_t k = 0; k < sk->n; k++) {
                    skippos *x = &skips[ns++];
                    snprintf(x->s.name, sizeof x->s.name, "%s", qkj_str(qkj_get(sk->items[k], "name"), ""));
                    snprintf(x->s.reason, sizeof x->s.reason, "%s", qkj_str(qkj_get(sk->items[k], "reason"), ""));
                    x->pos = pos_of(m, x->s.name), x->seq = seq++;
                }
            }
        }
        qkj_free(j);
    }
    qsort(rows, nr, sizeof *rows, rowpos_cmp);
    if (ns) qsort(skips, ns, sizeof *skips, skippos_cmp);
    qkb_row *flat = malloc((nr + 1) * sizeof *flat);
    qkb_skip *fs = malloc((ns + 1) * sizeof *fs);
    if (!flat || !fs) {
        free(flat), free(fs);
        goto out;
    }
    for (size_t k = 0; k < nr; k++) flat[k] = rows[k].r, flat[k].speedup = 0;
    for (size_t k = 0; k < ns; k++) fs[k] = skips[k].s;
    qkb_rows_speedups(flat, nr);
    snprintf(meta.machine, sizeof meta.machine, "%s", g->machine);
    snprintf(meta.commit, sizeof meta.commit, "%s", m->ref->commit);
    snprintf(meta.date, sizeof meta.date, "%s", date);
    size_t cl = (size_t)snprintf(meta.command, sizeof meta.command, "qkbench bench");
    for (int k = 0; k < g->nargs && cl < sizeof meta.command; k++) cl += (size_t)snprintf(meta.command + cl, sizeof meta.command - cl, " %s", g->args[k]);
    snprintf(meta.suite, sizeof meta.suite, "%s", suite);
    meta.complete = 1;
    int bad = qkb_rows_write(m->dir, &meta, flat, nr, fs, ns, m->err, sizeof m->err);
    if (!bad) {
        item *gv = NULL;
        size_t gn = 0;
        bad = merge_json(m, "gbench.json", "benchmarks", NULL, gbench_case, &gv, &gn);
        free_items(gv, gn);
    }
    if (!bad)
        bad = qkb_summary_write(m->dir, &meta, m->ref->has_limits ? &m->ref->limits : NULL, flat, nr, fs, ns, extra->p, m->err, sizeof m->err);
    free(flat), free(fs);
    rc = bad ? -1 : 0;
out:
    free(rows), free(skips);
    return rc;
}

/* ---- the cross-machine table ---- */

typedef struct accent { /* one accuracy/sweep row of a machine: the error of a kernel */
    char kernel[96], format[8], mode[24];
    size_t group, K;
    double q_sqnr, k_ratio;
} accent;

typedef struct mcol { /* one machine's merged bench result */
    char label[200], machine[96], run_id[72], dir[1400];
    int ncores;
    qkb_row *rows;
    size_t nrows;
    accent *acc;
    size_t nacc;
} mcol;

typedef struct collect {
    mcol *m;
    size_t nm;
    struct { /* accuracy/sweep rows per machine */
        char machine[96];
        accent *v;
        size_t n;
    } *am;
    size_t nam;
} collect;

static void add_acc_rows(collect *c, const char *machine, const item *v, size_t n) {
    size_t k;
    for (k = 0; k < c->nam && strcmp(c->am[k].machine, machine); k++) {}
    if (k == c->nam) {
        void *nv = realloc(c->am, (c->nam + 1) * sizeof *c->am);
        if (!nv) return;
        c->am = nv;
        memset(&c->am[c->nam], 0, sizeof c->am[0]);
        snprintf(c->am[c->nam].machine, sizeof c->am[0].machine, "%s", machine);
        c->nam++;
    }
    accent *a = realloc(c->am[k].v, (c->am[k].n + n + 1) * sizeof *a);
    if (!a) return;
    c->am[k].v = a;
    char e[200];
    for (size_t i = 0; i < n; i++) {
        qkj *r = qkj_parse(v[i].text, e, sizeof e);
        if (!r) continue;
        accent *x = &a[c->am[k].n];
        memset(x, 0, sizeof *x);
        snprintf(x->kernel, sizeof x->kernel, "%s", qkj_str(qkj_get(r, "kernel"), ""));
        snprintf(x->format, sizeof x->format, "%s", qkj_str(qkj_get(r, "format"), ""));
        snprintf(x->mode, sizeof x->mode, "%s", qkj_str(qkj_get(r, "mode"), ""));
        x->group = (size_t)qkj_num(qkj_get(r, "group"), 0);
        x->K = (size_t)qkj_num(qkj_get(r, "K"), 0);
        x->q_sqnr = qkj_num(qkj_get(qkj_get(r, "quantization_error"), "sqnr_db"), NAN);
        x->k_ratio = qkj_num(qkj_get(r, "kernel_ratio"), NAN);
        if (!strcmp(qkj_str(qkj_get(r, "status"), "ok"), "ok")) c->am[k].n++;
        qkj_free(r);
    }
}

/* The error of a bench row's kernel on its machine: the accuracy/sweep row of
 * the same kernel, format, mode and group (per channel: group = K). */
static const accent *acc_for(const mcol *mc, const qkb_row *r) {
    if (strcmp(r->op, "gemv") && strcmp(r->op, "gemm")) return NULL;
    const accent *best = NULL;
    for (size_t i = 0; i < mc->nacc; i++) {
        const accent *a = &mc->acc[i];
        if (strcmp(a->kernel, r->kernel) || strcmp(a->format, r->format) || strcmp(a->mode, r->what)) continue;
        if (a->group != r->group && !(r->group == r->K && a->group == a->K)) continue;
        if (!best || a->K == r->K) best = a;
    }
    return best;
}

static void threads_label(char *out, size_t n, int threads, int ncores) {
    if (threads > 1 && threads == ncores) snprintf(out, n, "all");
    else snprintf(out, n, "%d", threads);
}

static void shape_str(char *out, size_t n, const qkb_row *r) {
    if (!strcmp(r->op, "gemv") || !strcmp(r->op, "gemm") || (!strcmp(r->op, "outlier") && !strncmp(r->what, "gemm", 4)))
        snprintf(out, n, "%zux%zux%zu", r->M, r->N, r->K);
    else if (!strcmp(r->op, "actquant") || !strcmp(r->op, "outlier")) snprintf(out, n, "%zux%zu", r->M, r->K);
    else snprintf(out, n, "%zux%zu", r->N, r->K);
}

/* The row key across machines; with_kernel 0: the configuration only. */
static void row_key(char *out, size_t n, const qkb_row *r, int ncores, int with_kernel) {
    char sh[64], th[16];
    shape_str(sh, sizeof sh, r);
    threads_label(th, sizeof th, r->threads, ncores);
    snprintf(out, n, "%s|%s|%s|%zu|%s|%s|%s|%s|%s", r->op, r->what, r->format, r->group, r->scales, sh, th, r->cache,
             with_kernel ? r->kernel : "");
}

typedef struct keyrow {
    char key[400];
    const qkb_row *first; /* for the key columns */
    const qkb_row **per;  /* [nm] the row of each machine (best variant when keyed by configuration) */
} keyrow;

static keyrow *build_keys(const collect *c, int with_kernel, size_t *nk) {
    keyrow *k = NULL;
    size_t n = 0, cap = 0;
    char key[400];
    for (size_t mi = 0; mi < c->nm; mi++)
        for (size_t i = 0; i < c->m[mi].nrows; i++) {
            const qkb_row *r = &c->m[mi].rows[i];
            if (r->median_s <= 0) continue;
            row_key(key, sizeof key, r, c->m[mi].ncores, with_kernel);
            size_t j;
            for (j = 0; j < n && strcmp(k[j].key, key); j++) {}
            if (j == n) {
                if (n == cap) {
                    keyrow *nv = realloc(k, (cap = cap ? 2 * cap : 64) * sizeof *nv);
                    if (!nv) goto done;
                    k = nv;
                }
                snprintf(k[n].key, sizeof k[n].key, "%s", key);
                k[n].first = r;
                k[n].per = calloc(c->nm, sizeof *k[n].per);
                if (!k[n].per) goto done;
                n++;
            }
            const qkb_row *cur = k[j].per[mi];
            if (!cur || r->median_s < cur->median_s) k[j].per[mi] = r;
        }
done:
    *nk = n;
    return k;
}

static int is_mm(const qkb_row *r) { return !strcmp(r->op, "gemv") || !strcmp(r->op, "gemm"); }

static void csv_field(qkb_buf *b, const char *s) {
    if (strpbrk(s, ",\"\n")) {
        qkb_buf_puts(b, "\"");
        for (; *s; s++) {
            if (*s == '"') qkb_buf_puts(b, "\"");
            qkb_buf_putn(b, s, 1);
        }
        qkb_buf_puts(b, "\"");
    } else {
        qkb_buf_puts(b, s);
    }
}

static void csv_num(qkb_buf *b, double v) {
    if (isfinite(v)) qkb_buf_printf(b, ",%.6g", v);
    else qkb_buf_puts(b, ",");
}

static int write_table(const collect *c, const char *out, char *err, size_t errlen) {
    size_t nk = 0, nb = 0;
    keyrow *k = build_keys(c, 1, &nk), *best = build_keys(c, 0, &nb);
    qkb_buf b = {0};
    qkb_buf_puts(&b, "op,mode,format,group,scales,shape,threads,cache,kernel,tier");
    for (size_t mi = 0; mi < c->nm; mi++)
        for (int f = 0; f < 5; f++) {
            static const char *const col[5] = {"gops", "gbps", "roofline_pct", "q_sqnr_db", "kernel_ratio"};
            char h[300];
            snprintf(h, sizeof h, "%s %s", c->m[mi].label, col[f]);
            qkb_buf_puts(&b, ",");
            csv_field(&b, h);
        }
    qkb_buf_puts(&b, "\n");
    char sh[64], th[16];
    for (size_t i = 0; i < nk; i++) {
        const qkb_row *r = k[i].first;
        shape_str(sh, sizeof sh, r);
        const char *bar = strrchr(k[i].key, '|');
        (void)bar;
        /* threads label from the key (the "all" of each machine is the same column) */
        const char *p = k[i].key;
        for (int f = 0; f < 6 && p; f++) p = strchr(p, '|') ? strchr(p, '|') + 1 : NULL;
        snprintf(th, sizeof th, "%.*s", p ? (int)strcspn(p, "|") : 1, p ? p : "?");
        qkb_buf_printf(&b, "%s,%s,%s,%zu,%s,%s,%s,%s,%s,%s", r->op, r->what, r->format, r->group, r->scales, sh, th, r->cache, r->kernel, r->tier);
        for (size_t mi = 0; mi < c->nm; mi++) {
            const qkb_row *x = k[i].per[mi];
            const accent *a = x ? acc_for(&c->m[mi], x) : NULL;
            csv_num(&b, x ? x->gops : NAN), csv_num(&b, x ? x->gbps : NAN), csv_num(&b, x && x->roofline > 0 ? 100 * x->roofline : NAN);
            csv_num(&b, a ? a->q_sqnr : NAN), csv_num(&b, a ? a->k_ratio : NAN);
        }
        qkb_buf_puts(&b, "\n");
    }
    char path[1400];
    qkb_path(path, sizeof path, out, "fleet.csv");
    int rc = b.oom ? -1 : qkb_write_atomic(path, b.p, b.n, err, errlen);
    qkb_buf_free(&b);
    if (rc) goto done;

    /* Markdown: the best variant per configuration, then every kernel */
    qkb_buf md = {0};
    qkb_buf_puts(&md, "# qkbench fleet: every machine side by side\n\n");
    qkb_buf_puts(&md, "Each machine's merged result (`qkbench fleet collect`); throughput is GOP/s for gemv/gemm (2·M·N·K / median "
                      "time) and GB/s for the other ops; % of roofline is against the machine's own probe; error is the accuracy "
                      "or sweep run's quantization SQNR of the output and the kernel's error ratio (bound 2·(K+16)) for the same "
                      "kernel, format, group and mode, where such rows exist. Threads `all` = every core of that machine.\n\n");
    qkb_buf_puts(&md, "| machine | run | folder | cores |\n|---|---|---|---|\n");
    for (size_t mi = 0; mi < c->nm; mi++)
        qkb_buf_printf(&md, "| %s | %s | %s | %d |\n", c->m[mi].machine, c->m[mi].run_id, c->m[mi].dir, c->m[mi].ncores);
    qkb_buf_puts(&md, "\n## Best variant per configuration\n\n| op | mode | format | g | shape | threads | cache |");
    for (size_t mi = 0; mi < c->nm; mi++) qkb_buf_printf(&md, " %s |", c->m[mi].label);
    qkb_buf_puts(&md, "\n|---|---|---|---|---|---|---|");
    for (size_t mi = 0; mi < c->nm; mi++) qkb_buf_puts(&md, "---|");
    qkb_buf_puts(&md, "\n");
    for (size_t i = 0; i < nb; i++) {
        const qkb_row *r = best[i].first;
        shape_str(sh, sizeof sh, r);
        const char *p = best[i].key;
        for (int f = 0; f < 6 && p; f++) p = strchr(p, '|') ? strchr(p, '|') + 1 : NULL;
        snprintf(th, sizeof th, "%.*s", p ? (int)strcspn(p, "|") : 1, p ? p : "?");
        qkb_buf_printf(&md, "| %s | %s | %s | %zu | %s | %s | %s |", r->op, r->what, r->format, r->group, sh, th, r->cache);
        for (size_t mi = 0; mi < c->nm; mi++) {
            const qkb_row *x = best[i].per[mi];
            if (!x) {
                qkb_buf_puts(&md, " - |");
                continue;
            }
            const accent *a = acc_for(&c->m[mi], x);
            qkb_buf_printf(&md, " %.3g %s, %s, %.0f%%", is_mm(x) ? x->gops : x->gbps, is_mm(x) ? "GOP/s" : "GB/s", x->tier, 100 * x->roofline);
            if (a) qkb_buf_printf(&md, ", %.2f dB, ratio %.3g", a->q_sqnr, a->k_ratio);
            qkb_buf_puts(&md, " |");
        }
        qkb_buf_puts(&md, "\n");
    }
    qkb_buf_puts(&md, "\n## Every kernel\n\n| op | mode | format | g | shape | threads | cache | kernel |");
    for (size_t mi = 0; mi < c->nm; mi++) qkb_buf_printf(&md, " %s |", c->m[mi].label);
    qkb_buf_puts(&md, "\n|---|---|---|---|---|---|---|---|");
    for (size_t mi = 0; mi < c->nm; mi++) qkb_buf_puts(&md, "---|");
    qkb_buf_puts(&md, "\n");
    for (size_t i = 0; i < nk; i++) {
        const qkb_row *r = k[i].first;
        shape_str(sh, sizeof sh, r);
        const char *p = k[i].key;
        for (int f = 0; f < 6 && p; f++) p = strchr(p, '|') ? strchr(p, '|') + 1 : NULL;
        snprintf(th, sizeof th, "%.*s", p ? (int)strcspn(p, "|") : 1, p ? p : "?");
        qkb_buf_printf(&md, "| %s | %s | %s | %zu | %s | %s | %s | %s |", r->op, r->what, r->format, r->group, sh, th, r->cache, r->kernel);
        for (size_t mi = 0; mi < c->nm; mi++) {
            const qkb_row *x = k[i].per[mi];
            if (!x) {
                qkb_buf_puts(&md, " - |");
                continue;
            }
            const accent *a = acc_for(&c->m[mi], x);
            qkb_buf_printf(&md, " %.3g %s, %.0f%%", is_mm(x) ? x->gops : x->gbps, is_mm(x) ? "GOP/s" : "GB/s", 100 * x->roofline);
            if (a) qkb_buf_printf(&md, ", %.2f dB, ratio %.3g", a->q_sqnr, a->k_ratio);
            qkb_buf_puts(&md, " |");
        }
        qkb_buf_puts(&md, "\n");
    }
    if (c->nm) qkb_buf_puts(&md, "\n![roofline](plots/roofline.png)\n\n![speed-up](plots/speedup.png)\n\n![% of roofline](plots/roofline_fraction.png)\n\n"
                                 "![memory-bound ops](plots/bandwidth.png)\n\n![thread scaling](plots/threads.png)\n");
    qkb_path(path, sizeof path, out, "fleet.md");
    rc = md.oom ? -1 : qkb_write_atomic(path, md.p, md.n, err, errlen);
    qkb_buf_free(&md);
    /* the list the plotting script reads */
    qkb_buf j = {0};
    qkw w;
    qkw_init(&w, &j);
    qkw_obj(&w);
    qkw_key(&w, "machines");
    qkw_arr(&w);
    for (size_t mi = 0; mi < c->nm; mi++) {
        qkw_obj(&w);
        qkw_kstr(&w, "label", c->m[mi].label);
        qkw_kstr(&w, "machine", c->m[mi].machine);
        qkw_kstr(&w, "run_id", c->m[mi].run_id);
        qkw_kstr(&w, "dir", c->m[mi].dir);
        qkw_kint(&w, "cores", c->m[mi].ncores);
        qkw_end_obj(&w);
    }
    qkw_end_arr(&w);
    qkw_end_obj(&w);
    qkb_buf_puts(&j, "\n");
    qkb_path(path, sizeof path, out, "fleet.json");
    if (!rc) rc = j.oom ? -1 : qkb_write_atomic(path, j.p, j.n, err, errlen);
    qkb_buf_free(&j);
done:
    for (size_t i = 0; i < nk; i++) free(k[i].per);
    for (size_t i = 0; i < nb; i++) free(best[i].per);
    free(k), free(best);
    return rc;
}

/* ---- the command ---- */

static void usage(FILE *f) {
    fprintf(f, "usage: qkbench fleet collect DIR [--out OUT] [--no-plots] [--quiet]\n"
               "Scans DIR (a shared results root, recursively) for shard folders (shard.json, written by\n"
               "qkbench bench|sweep|accuracy --shard I/N) and fleet manifests (DIR/fleet/*.json, with the task\n"
               "logs in DIR/fleet/logs/), and groups the shards per machine, run id, command and case list. For\n"
               "each group it checks that every shard 1..N is there and complete, that every case is in exactly\n"
               "one shard, that the shards ran with the same arguments, and that the shards of one machine agree\n"
               "on its probe limits (one-thread bandwidths and peaks within %.0f%%, all-core ones within %.0f%%,\n"
               "the same cache levels); every problem names the run, shard I/N, the host or node and Slurm task.\n"
               "Every complete group is merged into OUT/<machine>/<run-id>/ in the unsharded command's files\n"
               "(bench: results.json/.csv, gbench.json, summary.md, machine.json; accuracy.json/.csv;\n"
               "sweep.json/.csv/.svg), so qkbench report and qkbench compare read it; then the cross-machine table\n"
               "OUT/fleet.csv and OUT/fleet.md (per kernel, mode, shape and tier: each machine's throughput, %% of\n"
               "its own roofline and error) and OUT/plots/ (the report plots, one series per machine).\n"
               "  --out OUT    a new folder (default DIR/collected/<YYYYMMDD-HHMMSS>); an existing one is an error:\n"
               "               nothing is ever overwritten, under DIR or OUT\n"
               "  --no-plots   no OUT/plots\n"
               "  --quiet      print only the problems\n"
               "Exit status: 0 all complete, 1 a shard missing or incomplete or any other problem (the complete\n"
               "groups are merged all the same), 2 a usage error.\n",
            100 * QKF_TOL_1T, 100 * QKF_TOL_ALL);
}

static void add_extra(qkb_buf *x, const qkf_group *g) {
    qkb_buf_printf(x, "## Shards\n\nMerged by `qkbench fleet collect` from %d shards of run `%s` (case list %s, %zu cases).\n\n", g->of, g->run_id,
                   g->sha, g->cases_total);
    qkb_buf_puts(x, "| shard | host | node | Slurm task | folder |\n|---|---|---|---|---|\n");
    for (int k = 0; k < g->of; k++)
        qkb_buf_printf(x, "| %d/%d | %s | %s | %s | %s |\n", k + 1, g->of, g->shard[k].host, g->shard[k].node[0] ? g->shard[k].node : "-",
                       g->shard[k].job[0] ? g->shard[k].job : "-", g->shard[k].dir);
    if (g->nproblems) {
        qkb_buf_puts(x, "\nProblems:\n\n");
        for (int k = 0; k < g->nproblems; k++) qkb_buf_printf(x, "- %s\n", g->problems[k]);
    }
}

static int write_provenance(const char *dir, const qkf_group *g, char *err, size_t errlen) {
    qkb_buf b = {0};
    qkw w;
    qkw_init(&w, &b);
    qkw_obj(&w);
    qkw_kstr(&w, "merged_by", "qkbench fleet collect");
    qkw_kstr(&w, "machine", g->machine);
    qkw_kstr(&w, "run_id", g->run_id);
    qkw_kstr(&w, "command", g->command);
    qkw_key(&w, "args");
    qkw_arr(&w);
    for (int i = 0; i < g->nargs; i++) qkw_str(&w, g->args[i]);
    qkw_end_arr(&w);
    qkw_kstr(&w, "case_list_sha", g->sha);
    qkw_kint(&w, "cases_total", (long long)g->cases_total);
    qkw_kint(&w, "of", g->of);
    qkw_key(&w, "shards");
    qkw_arr(&w);
    for (int i = 0; i < g->of; i++) {
        const qkf_shard *s = &g->shard[i];
        qkw_obj(&w);
        qkw_kint(&w, "shard", s->index);
        qkw_kstr(&w, "dir", s->dir);
        qkw_kstr(&w, "host", s->host);
        qkw_kstr(&w, "node", s->node[0] ? s->node : NULL);
        qkw_kstr(&w, "slurm_task", s->job[0] ? s->job : NULL);
        qkw_kint(&w, "attempts", s->attempts);
        qkw_end_obj(&w);
    }
    qkw_end_arr(&w);
    qkw_key(&w, "problems");
    qkw_arr(&w);
    for (int i = 0; i < g->nproblems; i++) qkw_str(&w, g->problems[i]);
    qkw_end_arr(&w);
    qkw_end_obj(&w);
    qkb_buf_puts(&b, "\n");
    char path[1500];
    qkb_path(path, sizeof path, dir, "collect.json");
    int rc = b.oom ? -1 : qkb_write_atomic(path, b.p, b.n, err, errlen);
    qkb_buf_free(&b);
    return rc;
}

static int copy_file(const char *from, const char *to, char *err, size_t errlen) {
    size_t n;
    char *t = read_text(from, &n);
    if (!t) {
        snprintf(err, errlen, "cannot read %.400s", from);
        return -1;
    }
    int rc = qkb_write_atomic(to, t, n, err, errlen);
    free(t);
    return rc;
}

static int exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

int qk_fleet_collect(int argc, char **argv) {
    const char *dir = NULL, *outopt = NULL;
    int plots = 1, quiet = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--out")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "qkbench fleet collect: --out needs a folder (see qkbench fleet collect --help)\n");
                return 2;
            }
            outopt = argv[++i];
        } else if (!strcmp(a, "--no-plots")) {
            plots = 0;
        } else if (!strcmp(a, "--quiet")) {
            quiet = 1;
        } else if (a[0] == '-') {
            fprintf(stderr, "qkbench fleet collect: unknown option '%s' (see qkbench fleet collect --help)\n", a);
            return 2;
        } else if (dir) {
            fprintf(stderr, "qkbench fleet collect: one results folder, not '%s' and '%s'\n", dir, a);
            return 2;
        } else {
            dir = a;
        }
    }
    if (!dir) {
        fprintf(stderr, "qkbench fleet collect: needs the results folder DIR (see qkbench fleet collect --help)\n");
        return 2;
    }
    char out[1100], err[700];
    if (outopt) {
        snprintf(out, sizeof out, "%s", outopt);
        if (exists(out)) {
            fprintf(stderr, "qkbench fleet collect: --out %s exists; collect writes a new folder and never overwrites one\n", out);
            return 2;
        }
    }
    qkf_scan s;
    if (qkf_scan_dir(dir, &s, err, sizeof err)) {
        fprintf(stderr, "qkbench fleet collect: %s\n", err);
        return 2;
    }
    int nprob = qkf_scan_print(&s, quiet ? stderr : stdout);
    if (quiet) fflush(stderr);
    size_t ncomplete = 0;
    for (size_t i = 0; i < s.n; i++) ncomplete += s.g[i].complete;
    if (s.n == 0) {
        fprintf(stderr, "qkbench fleet collect: no shard folder (shard.json) under %s\n", dir);
        qkf_scan_free(&s);
        return nprob ? 1 : 2;
    }
    int rc = nprob ? 1 : 0;
    if (!ncomplete) {
        fprintf(stderr, "qkbench fleet collect: no complete group to merge\n");
        qkf_scan_free(&s);
        return 1;
    }
    if (!outopt) {
        char stamp[32];
        qkb_now(stamp, sizeof stamp, NULL, 0);
        snprintf(out, sizeof out, "%s/collected/%s", dir, stamp);
        for (int k = 2; exists(out) && k < 100; k++) snprintf(out, sizeof out, "%s/collected/%s-%d", dir, stamp, k);
    }
    if (qkb_mkdirs(out, err, sizeof err)) {
        fprintf(stderr, "qkbench fleet collect: %s\n", err);
        qkf_scan_free(&s);
        return 2;
    }
    qkf_priv *p = s.priv;
    collect c;
    memset(&c, 0, sizeof c);
    for (size_t gi = 0; gi < s.n; gi++) {
        qkf_group *g = &s.g[gi];
        if (!g->complete) continue;
        merge_ctx m;
        memset(&m, 0, sizeof m);
        m.g = g, m.p = p;
        size_t total = 0;
        for (int k = 0; k < g->of; k++) total += p->att[g->shard[k].attempt].ncases;
        m.np = calloc(total + 1, sizeof *m.np);
        for (int k = 0; m.np && k < g->of; k++) {
            const qkf_attempt *a = &p->att[g->shard[k].attempt];
            if (!m.ref) m.ref = a;
            for (size_t q = 0; q < a->ncases; q++) m.np[m.nnp++] = (npos){a->cases[q], a->pos[q]};
        }
        if (!m.np) continue;
        qsort(m.np, m.nnp, sizeof *m.np, npos_cmp);
        /* OUT/<machine>/<run-id>; a second group of the same run and command gets its case list in the name */
        char sub[1300];
        snprintf(sub, sizeof sub, "%s/%s/%s", out, g->machine, g->run_id);
        char probe[1400];
        snprintf(probe, sizeof probe, "%s/%s.json", sub, !strcmp(g->command, "bench") ? "results" : g->command);
        if (exists(probe)) snprintf(sub, sizeof sub, "%s/%s/%s-%s-%.8s", out, g->machine, g->run_id, g->command, g->sha);
        snprintf(m.dir, sizeof m.dir, "%s", sub);
        int bad = qkb_mkdirs(m.dir, m.err, sizeof m.err);
        char mj[1500], src[1200];
        qkb_path(mj, sizeof mj, m.dir, "machine.json");
        qkb_path(src, sizeof src, m.ref->dir, "machine.json");
        if (!bad && !exists(mj) && exists(src)) bad = copy_file(src, mj, m.err, sizeof m.err);
        qkb_buf extra = {0};
        add_extra(&extra, g);
        item *v = NULL;
        size_t n = 0;
        if (!bad) {
            if (!strcmp(g->command, "bench")) {
                bad = merge_bench(&m, &extra);
            } else if (!strcmp(g->command, "accuracy") || !strcmp(g->command, "sweep")) {
                char fj[32], fc[32];
                snprintf(fj, sizeof fj, "%s.json", g->command);
                snprintf(fc, sizeof fc, "%s.csv", g->command);
                bad = merge_json(&m, fj, "rows", fc, acc_row_case, &v, &n);
                if (!bad && !strcmp(g->command, "sweep")) bad = sweep_svg(&m, v, n);
                if (!bad) add_acc_rows(&c, g->machine, v, n);
            } else {
                snprintf(m.err, sizeof m.err, "unknown command '%s'", g->command);
                bad = 1;
            }
        }
        free_items(v, n);
        qkb_buf_free(&extra);
        if (!bad) bad = write_provenance(m.dir, g, m.err, sizeof m.err);
        free(m.np);
        if (bad) {
            fprintf(stderr, "qkbench fleet collect: run %s, %s on %s: cannot merge: %s\n", g->run_id, g->command, g->machine, m.err);
            rc = 1;
            continue;
        }
        if (!quiet) printf("merged run %s, %s on %s (%d shards, %zu cases) -> %s\n", g->run_id, g->command, g->machine, g->of, g->cases_total, m.dir);
        if (!strcmp(g->command, "bench")) {
            mcol *nv = realloc(c.m, (c.nm + 1) * sizeof *nv);
            if (!nv) continue;
            c.m = nv;
            mcol *mc = &c.m[c.nm];
            memset(mc, 0, sizeof *mc);
            snprintf(mc->machine, sizeof mc->machine, "%s", g->machine);
            snprintf(mc->run_id, sizeof mc->run_id, "%s", g->run_id);
            snprintf(mc->dir, sizeof mc->dir, "%s", m.dir);
            mc->ncores = m.ref->has_limits ? m.ref->limits.ncores : 0;
            qkb_run_meta meta;
            if (qkb_rows_load(m.dir, &meta, &mc->rows, &mc->nrows, m.err, sizeof m.err) == 0) c.nm++;
        }
    }
    /* labels: the machine, plus the run where a machine has several */
    for (size_t i = 0; i < c.nm; i++) {
        int dup = 0;
        for (size_t k = 0; k < c.nm; k++) dup |= k != i && !strcmp(c.m[k].machine, c.m[i].machine);
        if (dup) snprintf(c.m[i].label, sizeof c.m[i].label, "%s/%s", c.m[i].machine, c.m[i].run_id);
        else snprintf(c.m[i].label, sizeof c.m[i].label, "%s", c.m[i].machine);
        for (size_t k = 0; k < c.nam; k++)
            if (!strcmp(c.am[k].machine, c.m[i].machine)) c.m[i].acc = c.am[k].v, c.m[i].nacc = c.am[k].n;
    }
    if (c.nm) {
        if (write_table(&c, out, err, sizeof err)) {
            fprintf(stderr, "qkbench fleet collect: %s\n", err);
            rc = rc ? rc : 1;
        } else {
            if (!quiet) printf("cross-machine table: %s/fleet.md, %s/fleet.csv\n", out, out);
            if (plots && qkb_report_fleet(out, 1)) fprintf(stderr, "qkbench fleet collect: no plots (needs python3-matplotlib)\n");
            else if (plots && !quiet) printf("plots: %s/plots/\n", out);
        }
    }
    for (size_t i = 0; i < c.nm; i++) free(c.m[i].rows);
    for (size_t k = 0; k < c.nam; k++) free(c.am[k].v);
    free(c.m), free(c.am);
    if (!quiet) printf("collected into %s%s\n", out, rc ? " (with problems: see above)" : "");
    qkf_scan_free(&s);
    return rc;
}
