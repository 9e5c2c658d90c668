/* Sharding: --shard I/N, --run-id, the case assignment and shard.json. */
#include "shard.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json.h"
#include "results.h"

const char qkb_shard_help[] =
    "  --shard I/N           run only shard I of N (1 <= I <= N): the full case list is split\n"
    "                        deterministically, balanced by expected cost, every case in exactly one\n"
    "                        shard; the shard writes its own folder <results>/<machine>/<date>-<commit>-\n"
    "                        <run-id>-shard<I>of<N>/ (or --out DIR) with shard.json (its cases, the\n"
    "                        ones done, status running/complete/failed, host, Slurm task); with --list,\n"
    "                        print that shard's cases. qkbench fleet collect merges the shards.\n"
    "  --run-id NAME         groups the shards of one run (default local; letters, digits, . _ -);\n"
    "                        alone it means --shard 1/1\n";

int qkb_shard_parse(const char *v, int *index, int *of, char *err, size_t errlen) {
    const char *p = v;
    long a = 0, b = 0;
    int ok = 1, da = 0, db = 0;
    for (; isdigit((unsigned char)*p) && da < 7; p++, da++) a = a * 10 + (*p - '0');
    if (*p == '/') {
        p++;
        for (; isdigit((unsigned char)*p) && db < 7; p++, db++) b = b * 10 + (*p - '0');
    } else {
        ok = 0;
    }
    if (!ok || !da || !db || *p) {
        snprintf(err, errlen, "--shard '%s': expected I/N, e.g. 2/4 (shard 2 of 4)", v);
        return -1;
    }
    if (b < 1 || b > 100000) {
        snprintf(err, errlen, "--shard '%s': N must be from 1 to 100000", v);
        return -1;
    }
    if (a < 1 || a > b) {
        snprintf(err, errlen, "--shard '%s': I must be from 1 to N = %ld (shards are numbered from 1)", v, b);
        return -1;
    }
    *index = (int)a, *of = (int)b;
    return 0;
}

int qkb_run_id_check(const char *v, char *err, size_t errlen) {
    size_t n = strlen(v);
    int ok = n >= 1 && n <= 64;
    for (size_t i = 0; ok && i < n; i++) ok = isalnum((unsigned char)v[i]) || v[i] == '.' || v[i] == '_' || v[i] == '-';
    if (ok && v[0] == '.') ok = 0;
    if (!ok) {
        snprintf(err, errlen, "--run-id '%s': expected 1 to 64 letters, digits, '.', '_' or '-' (not starting with '.')", v);
        return -1;
    }
    return 0;
}

int qkb_shard_take(qkb_shard_opts *s, const char *cmd, int argc, char **argv, int *i) {
    const char *a = argv[*i];
    int shard = !strcmp(a, "--shard"), rid = !strcmp(a, "--run-id");
    if (!shard && !rid) return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "qkbench %s: %s needs a value (see qkbench %s --help)\n", cmd, a, cmd);
        return -1;
    }
    const char *v = argv[++*i];
    char err[300];
    if (shard ? qkb_shard_parse(v, &s->index, &s->of, err, sizeof err) : qkb_run_id_check(v, err, sizeof err)) {
        fprintf(stderr, "qkbench %s: %s (see qkbench %s --help)\n", cmd, err, cmd);
        return -1;
    }
    if (rid) snprintf(s->run_id, sizeof s->run_id, "%s", v);
    return 1;
}

void qkb_shard_opts_finish(qkb_shard_opts *s) {
    if (!s->run_id[0] && s->of) snprintf(s->run_id, sizeof s->run_id, "local");
    if (s->run_id[0] && !s->of) s->index = s->of = 1;
}

/* ---- assignment ---- */

typedef struct item {
    const char *name;
    int64_t cost;
    size_t i;
} item;

static int by_cost(const void *a, const void *b) {
    const item *x = a, *y = b;
    if (x->cost != y->cost) return x->cost > y->cost ? -1 : 1;
    int c = strcmp(x->name, y->name);
    if (c) return c;
    return x->i < y->i ? -1 : x->i > y->i;
}

void qkb_shard_assign(const char *const *names, const double *cost, size_t n, int of, int *shard) {
    item *it = malloc((n ? n : 1) * sizeof *it);
    int64_t *load = calloc((size_t)of, sizeof *load);
    if (!it || !load) { /* no memory for balancing: round robin is still deterministic */
        for (size_t i = 0; i < n; i++) shard[i] = (int)(i % (size_t)of) + 1;
        free(it), free(load);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        double c = cost[i] > 0 && isfinite(cost[i]) ? cost[i] : 0;
        it[i] = (item){names[i], (int64_t)llround(c < 1e9 ? c * 1e6 : 1e15) + 1, i};
    }
    qsort(it, n, sizeof *it, by_cost);
    for (size_t k = 0; k < n; k++) {
        int best = 0;
        for (int s = 1; s < of; s++)
            if (load[s] < load[best]) best = s;
        load[best] += it[k].cost;
        shard[it[k].i] = best + 1;
    }
    free(it), free(load);
}

void qkb_case_list_hash(const char *const *names, size_t n, char out[17]) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        for (const unsigned char *p = (const unsigned char *)names[i]; *p; p++) h = (h ^ *p) * 1099511628211ull;
        h = (h ^ '\n') * 1099511628211ull;
    }
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}

int qkb_shard_make_dir(const qkb_shard_opts *s, char *out, size_t n, char *err, size_t errlen) {
    char stamp[32], parent[1100];
    qkb_now(stamp, sizeof stamp, NULL, 0);
    snprintf(parent, sizeof parent, "%s/%s", qkb_results_root(), qkb_machine_name());
    if (qkb_mkdirs(parent, err, errlen)) return -1;
    /* a folder of its own, claimed by mkdir: two shards started in the same second
     * (another command of the same run, a resubmitted task) get -2, -3, ... */
    for (int k = 1; k < 1000; k++) {
        char sfx[16] = "";
        if (k > 1) snprintf(sfx, sizeof sfx, "-%d", k);
        snprintf(out, n, "%s/%s-%s-%s-shard%dof%d%s", parent, stamp, qkb_commit(), s->run_id, s->index, s->of, sfx);
        if (mkdir(out, 0777) == 0) return 0;
        if (errno != EEXIST) break;
    }
    snprintf(err, errlen, "cannot create a shard folder %s: %s", out, strerror(errno));
    return -1;
}

/* ---- shard.json ---- */

static void kstr_env(qkw *w, const char *key, const char *env) {
    const char *v = getenv(env);
    if (v && *v) qkw_kstr(w, key, v);
    else {
        qkw_key(w, key);
        qkw_null(w);
    }
}

static int write_json(qkb_shard_run *r, char *err, size_t errlen) {
    qkb_buf b = {0};
    qkw w;
    qkw_init(&w, &b);
    qkw_obj(&w);
    qkw_kstr(&w, "command", r->command);
    qkw_key(&w, "args");
    qkw_arr(&w);
    for (int i = 0; i < r->nargs; i++) qkw_str(&w, r->args[i]);
    qkw_end_arr(&w);
    qkw_kstr(&w, "run_id", r->opt.run_id);
    qkw_kint(&w, "shard", r->opt.index);
    qkw_kint(&w, "of", r->opt.of);
    qkw_kint(&w, "cases_total", (long long)r->total);
    qkw_kstr(&w, "case_list_sha", r->sha);
    qkw_key(&w, "cases");
    qkw_arr(&w);
    for (size_t i = 0; i < r->ncases; i++) qkw_str(&w, r->cases[i]);
    qkw_end_arr(&w);
    qkw_key(&w, "case_index");
    qkw_arr(&w);
    for (size_t i = 0; i < r->ncases; i++) qkw_int(&w, (long long)r->pos[i]);
    qkw_end_arr(&w);
    for (int st = 1; st <= 2; st++) {
        qkw_key(&w, st == 1 ? "done" : "failed");
        qkw_arr(&w);
        for (size_t i = 0; i < r->ncases; i++)
            if (r->state[i] == st) qkw_str(&w, r->cases[i]);
        qkw_end_arr(&w);
    }
    qkw_kstr(&w, "status", r->status);
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0) snprintf(host, sizeof host, "unknown");
    qkw_kstr(&w, "host", host);
    qkw_kstr(&w, "machine", qkb_machine_name());
    qkw_kstr(&w, "commit", qkb_commit());
    qkw_kstr(&w, "started", r->started);
    qkw_kstr(&w, "finished", r->finished[0] ? r->finished : NULL);
    qkw_key(&w, "slurm");
    const char *job = getenv("SLURM_JOB_ID");
    if (job && *job) {
        qkw_obj(&w);
        kstr_env(&w, "job_id", "SLURM_JOB_ID");
        kstr_env(&w, "array_job_id", "SLURM_ARRAY_JOB_ID");
        kstr_env(&w, "array_task_id", "SLURM_ARRAY_TASK_ID");
        kstr_env(&w, "node", "SLURMD_NODENAME");
        qkw_end_obj(&w);
    } else {
        qkw_null(&w);
    }
    qkw_end_obj(&w);
    qkb_buf_puts(&b, "\n");
    int rc = b.oom ? (snprintf(err, errlen, "out of memory"), -1) : qkb_write_atomic(r->path, b.p, b.n, err, errlen);
    qkb_buf_free(&b);
    return rc;
}

void qkb_shard_free(qkb_shard_run *r) {
    for (int i = 0; i < r->nargs; i++) free(r->args[i]);
    for (size_t i = 0; i < r->ncases; i++) free(r->cases[i]);
    free(r->args), free(r->cases), free(r->state), free(r->pos);
    memset(r, 0, sizeof *r);
}

static char *str_dup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

int qkb_shard_begin(qkb_shard_run *r, const char *dir, const char *command, int argc, char **argv, const qkb_shard_opts *s,
                    const char *const *all_names, const int *shard, size_t n, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    qkb_path(r->path, sizeof r->path, dir, "shard.json");
    snprintf(r->command, sizeof r->command, "%s", command);
    r->opt = *s;
    r->total = n;
    qkb_case_list_hash(all_names, n, r->sha);
    r->args = calloc((size_t)argc + 1, sizeof *r->args);
    r->cases = calloc(n + 1, sizeof *r->cases);
    r->state = calloc(n + 1, 1);
    r->pos = calloc(n + 1, sizeof *r->pos);
    int oom = !r->args || !r->cases || !r->state || !r->pos;
    for (int i = 1; i < argc && !oom; i++) {
        const char *a = argv[i];
        if ((!strcmp(a, "--shard") || !strcmp(a, "--run-id") || !strcmp(a, "--out") || !strcmp(a, "--results")) && i + 1 < argc) {
            i++;
            continue;
        }
        oom = !(r->args[r->nargs++] = str_dup(a));
    }
    for (size_t i = 0; i < n && !oom; i++)
        if (shard[i] == s->index) {
            r->pos[r->ncases] = i;
            oom = !(r->cases[r->ncases++] = str_dup(all_names[i]));
        }
    if (oom) {
        qkb_shard_free(r);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    snprintf(r->status, sizeof r->status, "running");
    qkb_now(NULL, 0, r->started, sizeof r->started);
    if (write_json(r, err, errlen)) {
        qkb_shard_free(r);
        return -1;
    }
    return 0;
}

int qkb_shard_case(qkb_shard_run *r, const char *name, int ok) {
    if (!r->path[0]) return 0;
    for (size_t i = 0; i < r->ncases; i++)
        if (!strcmp(r->cases[i], name)) {
            r->state[i] = ok ? 1 : 2;
            break;
        }
    char err[400];
    if (write_json(r, err, sizeof err)) {
        fprintf(stderr, "qkbench %s: %s\n", r->command, err);
        return -1;
    }
    return 0;
}

int qkb_shard_end(qkb_shard_run *r, int ok) {
    if (!r->path[0]) return 0;
    for (size_t i = 0; i < r->ncases && ok; i++) ok = r->state[i] == 1;
    snprintf(r->status, sizeof r->status, "%s", ok ? "complete" : "failed");
    qkb_now(NULL, 0, r->finished, sizeof r->finished);
    char err[400];
    int rc = write_json(r, err, sizeof err);
    if (rc) fprintf(stderr, "qkbench %s: %s\n", r->command, err);
    qkb_shard_free(r);
    return rc;
}
