/* The fleet scan (fleet.h): shard folders, manifests and task logs under a
 * results root, grouped per (machine, run, command, case list, N) and checked:
 * every shard present and complete, every case in exactly one shard, the same
 * arguments, and probe limits that agree within noise. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fleet.h"
#include "fleet_priv.h"
#include "json.h"
#include "probe.h"
#include "results.h"

/* ---- small helpers ---- */

char *qkf_strdup(const char *s) {
    size_t n = strlen(s ? s : "") + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s ? s : "", n);
    return p;
}

static void add_line(char ***v, int *n, const char *fmt, va_list ap) {
    char *line = NULL;
    if (vasprintf(&line, fmt, ap) < 0) return;
    char **nv = realloc(*v, (size_t)(*n + 1) * sizeof *nv);
    if (!nv) {
        free(line);
        return;
    }
    *v = nv;
    (*v)[(*n)++] = line;
}

static void gproblem(qkf_group *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void gproblem(qkf_group *g, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    add_line(&g->problems, &g->nproblems, fmt, ap);
    va_end(ap);
}

static void sproblem(qkf_scan *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sproblem(qkf_scan *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    add_line(&s->problems, &s->nproblems, fmt, ap);
    va_end(ap);
}

static void cpy(char *dst, size_t n, const char *src) {
    size_t l = src ? strlen(src) : 0;
    if (l >= n) l = n - 1;
    if (l) memcpy(dst, src, l);
    dst[l] = 0;
}

/* ---- shard folders ---- */

static void attempt_free(qkf_attempt *a) {
    for (int i = 0; i < a->nargs; i++) free(a->args[i]);
    for (size_t i = 0; i < a->ncases; i++) free(a->cases[i]);
    free(a->args), free(a->cases), free(a->pos);
    qkj_free(a->probe_root);
}

static int read_attempt(const char *dir, qkf_attempt *a, char *err, size_t errlen) {
    memset(a, 0, sizeof *a);
    cpy(a->dir, sizeof a->dir, dir);
    char path[1200];
    qkb_path(path, sizeof path, dir, "shard.json");
    qkj *j = qkj_parse_file(path, err, errlen);
    if (!j) return -1;
    const qkj *cases = qkj_get(j, "cases"), *idx = qkj_get(j, "case_index"), *args = qkj_get(j, "args");
    cpy(a->command, sizeof a->command, qkj_str(qkj_get(j, "command"), ""));
    cpy(a->run_id, sizeof a->run_id, qkj_str(qkj_get(j, "run_id"), ""));
    cpy(a->sha, sizeof a->sha, qkj_str(qkj_get(j, "case_list_sha"), ""));
    cpy(a->status, sizeof a->status, qkj_str(qkj_get(j, "status"), ""));
    cpy(a->host, sizeof a->host, qkj_str(qkj_get(j, "host"), ""));
    cpy(a->machine, sizeof a->machine, qkj_str(qkj_get(j, "machine"), ""));
    cpy(a->commit, sizeof a->commit, qkj_str(qkj_get(j, "commit"), ""));
    cpy(a->started, sizeof a->started, qkj_str(qkj_get(j, "started"), ""));
    cpy(a->finished, sizeof a->finished, qkj_str(qkj_get(j, "finished"), ""));
    a->shard = (int)qkj_num(qkj_get(j, "shard"), 0);
    a->of = (int)qkj_num(qkj_get(j, "of"), 0);
    a->total = (size_t)qkj_num(qkj_get(j, "cases_total"), 0);
    const qkj *sl = qkj_get(j, "slurm");
    if (sl && sl->type == QKJ_OBJ) {
        cpy(a->sl_job, sizeof a->sl_job, qkj_str(qkj_get(sl, "job_id"), ""));
        cpy(a->sl_array, sizeof a->sl_array, qkj_str(qkj_get(sl, "array_job_id"), ""));
        cpy(a->sl_task, sizeof a->sl_task, qkj_str(qkj_get(sl, "array_task_id"), ""));
        cpy(a->sl_node, sizeof a->sl_node, qkj_str(qkj_get(sl, "node"), ""));
    }
    int bad = !a->command[0] || !a->run_id[0] || !a->machine[0] || a->of < 1 || a->shard < 1 || a->shard > a->of || !cases ||
              cases->type != QKJ_ARR || !idx || idx->type != QKJ_ARR || idx->n != cases->n;
    if (bad) {
        snprintf(err, errlen, "%.400s: not a shard.json qkbench writes (command, run_id, machine, shard/of, cases, case_index)", path);
        qkj_free(j);
        return -1;
    }
    a->cases = calloc(cases->n + 1, sizeof *a->cases);
    a->pos = calloc(cases->n + 1, sizeof *a->pos);
    a->args = calloc((args && args->type == QKJ_ARR ? args->n : 0) + 1, sizeof *a->args);
    int oom = !a->cases || !a->pos || !a->args;
    for (size_t i = 0; !oom && i < cases->n; i++) {
        oom = !(a->cases[i] = qkf_strdup(qkj_str(cases->items[i], "")));
        a->pos[i] = (size_t)qkj_num(idx->items[i], 0);
        a->ncases = i + 1;
    }
    for (size_t i = 0; !oom && args && args->type == QKJ_ARR && i < args->n; i++) {
        oom = !(a->args[i] = qkf_strdup(qkj_str(args->items[i], "")));
        a->nargs = (int)i + 1;
    }
    const qkj *done = qkj_get(j, "done");
    a->ndone = done && done->type == QKJ_ARR ? done->n : 0;
    qkj_free(j);
    if (oom) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* machine.json: the probe's limits and the CPU */
    qkb_path(path, sizeof path, dir, "machine.json");
    char e2[300];
    a->probe_root = qkj_parse_file(path, e2, sizeof e2);
    if (a->probe_root) {
        const qkj *cpu = qkj_get(a->probe_root, "cpu");
        cpy(a->cpu, sizeof a->cpu, qkj_str(qkj_get(cpu, "brand"), ""));
        a->has_limits = qkb_limits_from_json(qkj_get(a->probe_root, "probe"), &a->limits) == 0 && a->limits.ok;
    }
    return 0;
}

/* nftw has no context argument: the scan in progress. */
static qkf_scan *walk_scan;
static qkf_attempt *walk_v;
static size_t walk_n, walk_cap;

static int walk_fn(const char *path, const struct stat *st, int type, struct FTW *ftw) {
    (void)st;
    if (type != FTW_F || strcmp(path + ftw->base, "shard.json") != 0) return 0;
    char dir[1024];
    snprintf(dir, sizeof dir, "%.*s", ftw->base > 0 ? ftw->base - 1 : 0, path);
    if (walk_n == walk_cap) {
        size_t cap = walk_cap ? 2 * walk_cap : 32;
        qkf_attempt *v = realloc(walk_v, cap * sizeof *v);
        if (!v) return 1;
        walk_v = v, walk_cap = cap;
    }
    char err[600];
    if (read_attempt(dir, &walk_v[walk_n], err, sizeof err)) {
        attempt_free(&walk_v[walk_n]);
        sproblem(walk_scan, "%s", err);
        return 0;
    }
    walk_n++;
    return 0;
}

/* ---- manifests and task logs (written by fleet submit) ---- */

static void manifest_free(qkf_manifest *m) {
    for (int i = 0; i < m->ncmd; i++) free(m->cmd[i]);
    for (int i = 0; i < m->ntargets; i++) free(m->targets[i]);
    free(m->cmd), free(m->targets), free(m->jobs);
}

static void read_manifests(const char *root, qkf_priv *p, qkf_scan *s) {
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/fleet", root);
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 6 || strcmp(e->d_name + l - 5, ".json") != 0 || e->d_name[0] == '.') continue;
        char path[1400], err[400];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        qkj *j = qkj_parse_file(path, err, sizeof err);
        if (!j) {
            sproblem(s, "fleet manifest %s", err);
            continue;
        }
        qkf_manifest m;
        memset(&m, 0, sizeof m);
        cpy(m.path, sizeof m.path, path);
        const char *name = qkj_str(qkj_get(j, "run_id"), qkj_str(qkj_get(j, "name"), ""));
        cpy(m.name, sizeof m.name, name);
        m.shards = (int)qkj_num(qkj_get(j, "shards"), 0);
        const qkj *cmd = qkj_get(j, "command"), *tg = qkj_get(j, "targets"), *jobs = qkj_get(j, "jobs");
        if (!m.name[0] || m.shards < 1 || !cmd || cmd->type != QKJ_ARR || !cmd->n) {
            sproblem(s, "fleet manifest %s: no name, shards or command", path);
            qkj_free(j);
            continue;
        }
        m.cmd = calloc(cmd->n, sizeof *m.cmd);
        m.targets = calloc(tg && tg->type == QKJ_ARR ? tg->n + 1 : 1, sizeof *m.targets);
        m.jobs = calloc(jobs && jobs->type == QKJ_ARR ? jobs->n + 1 : 2, sizeof *m.jobs);
        if (!m.cmd || !m.targets || !m.jobs) {
            manifest_free(&m);
            qkj_free(j);
            continue;
        }
        for (size_t i = 0; i < cmd->n; i++) m.cmd[m.ncmd++] = qkf_strdup(qkj_str(cmd->items[i], ""));
        for (size_t i = 0; tg && tg->type == QKJ_ARR && i < tg->n; i++)
            m.targets[m.ntargets++] = qkf_strdup(qkj_str(qkj_get(tg->items[i], "name"), ""));
        for (size_t i = 0; jobs && jobs->type == QKJ_ARR && i < jobs->n; i++) {
            const qkj *jj = qkj_get(jobs->items[i], "job_id");
            if (!jj) continue;
            if (jj->type == QKJ_NUM) snprintf(m.jobs[m.njobs].id, sizeof m.jobs[m.njobs].id, "%.0f", jj->num);
            else cpy(m.jobs[m.njobs].id, sizeof m.jobs[m.njobs].id, qkj_str(jj, ""));
            m.jobs[m.njobs].target = (int)qkj_num(qkj_get(jobs->items[i], "target"), -1);
            if (m.jobs[m.njobs].id[0]) m.njobs++;
        }
        qkj_free(j);
        qkf_manifest *v = realloc(p->man, (p->nman + 1) * sizeof *v);
        if (!v) {
            manifest_free(&m);
            continue;
        }
        p->man = v;
        p->man[p->nman++] = m;
    }
    closedir(d);
}

/* "qkbench-fleet: run=NAME target=T shard=I of=N job=A_I node=NODE ... exit=RC end=ISO" */
static void parse_log_line(const char *line, qkf_priv *p) {
    qkf_logent e;
    memset(&e, 0, sizeof e);
    e.exit = -1;
    char buf[2048];
    cpy(buf, sizeof buf, line + strlen("qkbench-fleet:"));
    for (char *save = NULL, *tok = strtok_r(buf, " \t\r\n", &save); tok; tok = strtok_r(NULL, " \t\r\n", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) continue;
        *eq = 0;
        const char *k = tok, *v = eq + 1;
        if (!strcmp(k, "run")) cpy(e.run, sizeof e.run, v);
        else if (!strcmp(k, "target")) cpy(e.target, sizeof e.target, v);
        else if (!strcmp(k, "shard")) e.shard = atoi(v);
        else if (!strcmp(k, "of")) e.of = atoi(v);
        else if (!strcmp(k, "job")) cpy(e.job, sizeof e.job, v);
        else if (!strcmp(k, "node")) cpy(e.node, sizeof e.node, v);
        else if (!strcmp(k, "start")) cpy(e.start, sizeof e.start, v);
        else if (!strcmp(k, "exit")) e.exit = atoi(v), e.ended = 1;
    }
    if (!e.run[0] || !e.job[0]) return;
    for (size_t i = 0; i < p->nlog; i++) /* the end line completes the start line */
        if (!strcmp(p->log[i].run, e.run) && !strcmp(p->log[i].job, e.job)) {
            if (e.ended) p->log[i].exit = e.exit, p->log[i].ended = 1;
            if (e.node[0]) cpy(p->log[i].node, sizeof p->log[i].node, e.node);
            if (e.start[0]) cpy(p->log[i].start, sizeof p->log[i].start, e.start);
            return;
        }
    qkf_logent *v = realloc(p->log, (p->nlog + 1) * sizeof *v);
    if (!v) return;
    p->log = v;
    p->log[p->nlog++] = e;
}

static void read_logs(const char *root, qkf_priv *p) {
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/fleet/logs", root);
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 5 || strcmp(e->d_name + l - 4, ".out") != 0) continue;
        char path[1400], line[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        while (fgets(line, sizeof line, f))
            if (!strncmp(line, "qkbench-fleet:", 14)) parse_log_line(line, p);
        fclose(f);
    }
    closedir(d);
}

static const qkf_manifest *manifest_for(const qkf_priv *p, const char *run) {
    for (size_t i = 0; i < p->nman; i++)
        if (!strcmp(p->man[i].name, run)) return &p->man[i];
    return NULL;
}

/* The target an attempt ran for: its array job in the manifest's jobs, or its task log. */
static const char *attempt_target(const qkf_priv *p, const qkf_attempt *a) {
    const qkf_manifest *m = manifest_for(p, a->run_id);
    const char *job = a->sl_array[0] ? a->sl_array : a->sl_job;
    if (m && job[0])
        for (int i = 0; i < m->njobs; i++)
            if (!strcmp(m->jobs[i].id, job) && m->jobs[i].target >= 0 && m->jobs[i].target < m->ntargets) return m->targets[m->jobs[i].target];
    char tj[80];
    snprintf(tj, sizeof tj, "%s_%s", a->sl_array, a->sl_task);
    for (size_t i = 0; a->sl_array[0] && i < p->nlog; i++)
        if (!strcmp(p->log[i].run, a->run_id) && !strcmp(p->log[i].job, tj)) return p->log[i].target;
    return "";
}

/* The latest task log entry of (run, target, shard); target "" matches any. */
static const qkf_logent *log_for(const qkf_priv *p, const char *run, const char *target, int shard) {
    const qkf_logent *best = NULL;
    for (size_t i = 0; i < p->nlog; i++) {
        const qkf_logent *e = &p->log[i];
        if (strcmp(e->run, run) || e->shard != shard || (target[0] && strcmp(e->target, target))) continue;
        if (!best || strcmp(e->start, best->start) >= 0) best = e;
    }
    return best;
}

/* ---- grouping ---- */

static int attempt_cmp(const void *x, const void *y) {
    const qkf_attempt *a = x, *b = y;
    int c;
    if ((c = strcmp(a->machine, b->machine)) || (c = strcmp(a->run_id, b->run_id)) || (c = strcmp(a->command, b->command)) ||
        (c = strcmp(a->sha, b->sha)))
        return c;
    if (a->of != b->of) return a->of < b->of ? -1 : 1;
    if (a->shard != b->shard) return a->shard < b->shard ? -1 : 1;
    return strcmp(a->dir, b->dir);
}

static int same_group(const qkf_attempt *a, const qkf_attempt *b) {
    return !strcmp(a->machine, b->machine) && !strcmp(a->run_id, b->run_id) && !strcmp(a->command, b->command) && !strcmp(a->sha, b->sha) &&
           a->of == b->of;
}

/* Which attempt stands for a shard index: a complete one that finished last,
 * else the one that started last. */
static int better(const qkf_attempt *a, const qkf_attempt *cur) {
    int ca = !strcmp(a->status, "complete"), cc = !strcmp(cur->status, "complete");
    if (ca != cc) return ca;
    if (ca) return strcmp(a->finished, cur->finished) > 0;
    return strcmp(a->started, cur->started) > 0;
}

static void where(char *out, size_t n, const qkf_shard *s) {
    size_t k = 0;
    out[0] = 0;
    if (s->host[0]) k += (size_t)snprintf(out + k, n - k, "host %s", s->host);
    if (s->node[0] && strcmp(s->node, s->host) && k < n) k += (size_t)snprintf(out + k, n - k, "%snode %s", k ? ", " : "", s->node);
    if (s->target[0] && k < n) k += (size_t)snprintf(out + k, n - k, "%starget %s", k ? ", " : "", s->target);
    if (s->job[0] && k < n) k += (size_t)snprintf(out + k, n - k, "%sSlurm task %s", k ? ", " : "", s->job);
    if (s->exit_code >= 0 && k < n) k += (size_t)snprintf(out + k, n - k, "%sexit %d", k ? ", " : "", s->exit_code);
    if (!k) snprintf(out, n, "not run under Slurm, host unknown");
}

typedef struct name_pos {
    const char *name;
    int shard;
    size_t pos;
} name_pos;

static int np_cmp(const void *x, const void *y) {
    const name_pos *a = x, *b = y;
    int c = strcmp(a->name, b->name);
    return c ? c : a->shard - b->shard;
}

/* Probe limits of two shards of one machine agree within noise: one-thread
 * bandwidths and peaks within QKF_TOL_1T, all-core ones within QKF_TOL_ALL,
 * the same levels, sizes within 2x (the probe's own test for hwloc). */
static void compare_limits(qkf_group *g, const qkf_attempt *ref, const qkf_attempt *a, const char *pre) {
    const qkb_limits *x = &ref->limits, *y = &a->limits;
    char w0[600], w1[600];
    where(w0, sizeof w0, &g->shard[ref->shard - 1]);
    where(w1, sizeof w1, &g->shard[a->shard - 1]);
    if (strcmp(ref->cpu, a->cpu)) {
        gproblem(g, "%s: shard %d/%d ran on a different CPU (%s; %s) than shard %d/%d (%s; %s): one machine key for two kinds of machine",
                 pre, a->shard, g->of, a->cpu, w1, ref->shard, g->of, ref->cpu, w0);
        return;
    }
    if (x->nlevels != y->nlevels) {
        gproblem(g, "%s: the probe of shard %d/%d (%s) found %d memory levels, shard %d/%d's (%s) %d", pre, a->shard, g->of, w1,
                 y->nlevels, ref->shard, g->of, w0, x->nlevels);
        return;
    }
    char what[160];
    for (int i = 0; i < x->nlevels; i++) {
        double v[4][2] = {{x->level[i].bw1, y->level[i].bw1}, {x->level[i].bwall, y->level[i].bwall}, {x->level[i].size, y->level[i].size}};
        for (int k = 0; k < 3; k++) {
            double r = v[k][0] > 0 ? v[k][1] / v[k][0] : 1;
            double tol = k == 0 ? QKF_TOL_1T : k == 1 ? QKF_TOL_ALL : 1.0;
            int bad = k < 2 ? fabs(r - 1) > tol : (r > 2 || r < 0.5);
            if (!bad || (k == 2 && v[k][0] == 0)) continue;
            snprintf(what, sizeof what, "%s %s", x->level[i].name, k == 0 ? "read bandwidth, one thread" : k == 1 ? "read bandwidth, all cores" : "size");
            if (k < 2)
                gproblem(g, "%s: probe limits disagree: %s is %.1f GB/s on shard %d/%d (%s) and %.1f GB/s on shard %d/%d (%s): %+.0f%%, over the %.0f%% tolerance",
                         pre, what, v[k][1] / 1e9, a->shard, g->of, w1, v[k][0] / 1e9, ref->shard, g->of, w0, 100 * (r - 1), 100 * tol);
            else
                gproblem(g, "%s: probe limits disagree: %s is %.1f MiB on shard %d/%d (%s) and %.1f MiB on shard %d/%d (%s), more than 2x apart",
                         pre, what, v[k][1] / 1048576, a->shard, g->of, w1, v[k][0] / 1048576, ref->shard, g->of, w0);
        }
    }
    for (int i = 0; i < x->npeaks; i++)
        for (int j = 0; j < y->npeaks; j++) {
            if (x->peak[i].tier != y->peak[j].tier) continue;
            double v[4][2] = {{x->peak[i].f32_1, y->peak[j].f32_1}, {x->peak[i].i8_1, y->peak[j].i8_1}, {x->peak[i].f32_all, y->peak[j].f32_all},
                              {x->peak[i].i8_all, y->peak[j].i8_all}};
            static const char *const nm[4] = {"f32 peak, one thread", "int8 peak, one thread", "f32 peak, all cores", "int8 peak, all cores"};
            for (int k = 0; k < 4; k++) {
                double r = v[k][0] > 0 ? v[k][1] / v[k][0] : 1, tol = k < 2 ? QKF_TOL_1T : QKF_TOL_ALL;
                if (fabs(r - 1) <= tol) continue;
                gproblem(g, "%s: probe limits disagree: %s %s is %.1f GOP/s on shard %d/%d (%s) and %.1f GOP/s on shard %d/%d (%s): %+.0f%%, over the %.0f%% tolerance",
                         pre, qk_tier_name(x->peak[i].tier), nm[k], v[k][1] / 1e9, a->shard, g->of, w1, v[k][0] / 1e9, ref->shard, g->of, w0,
                         100 * (r - 1), 100 * tol);
            }
        }
}

static int args_equal(const qkf_attempt *a, const qkf_attempt *b) {
    if (a->nargs != b->nargs) return 0;
    for (int i = 0; i < a->nargs; i++)
        if (strcmp(a->args[i], b->args[i])) return 0;
    return 1;
}

static void args_str(char *out, size_t n, const qkf_attempt *a) {
    size_t k = 0;
    out[0] = 0;
    for (int i = 0; i < a->nargs && k < n; i++) k += (size_t)snprintf(out + k, n - k, "%s%s", i ? " " : "", a->args[i]);
}

static void check_group(qkf_group *g, qkf_priv *p) {
    char pre[400], w[600];
    snprintf(pre, sizeof pre, "run %s, %s on %s", g->run_id, g->command, g->machine);
    qkf_attempt *ref = NULL;
    for (int i = 0; i < g->of; i++) {
        qkf_shard *s = &g->shard[i];
        if (s->state == QKF_COMPLETE) {
            if (!ref) ref = &p->att[s->attempt];
            continue;
        }
        g->missing[g->nmissing++] = s->index;
        where(w, sizeof w, s);
        if (s->state == QKF_MISSING)
            gproblem(g, "%s: shard %d/%d missing: no results folder (%s)", pre, s->index, g->of, w);
        else
            gproblem(g, "%s: shard %d/%d incomplete: status %s, %zu of %zu cases done, folder %s (%s)", pre, s->index, g->of,
                     s->status[0] ? s->status : "unknown", s->ndone, s->ncases, s->dir, w);
    }
    /* every case in exactly one shard: the complete shards' case lists */
    size_t total = 0;
    for (int i = 0; i < g->of; i++)
        if (g->shard[i].attempt >= 0) total += p->att[g->shard[i].attempt].ncases;
    name_pos *np = calloc(total + 1, sizeof *np);
    size_t n = 0, dups = 0;
    for (int i = 0; np && i < g->of; i++) {
        if (g->shard[i].attempt < 0) continue;
        const qkf_attempt *a = &p->att[g->shard[i].attempt];
        for (size_t k = 0; k < a->ncases; k++) np[n++] = (name_pos){a->cases[k], a->shard, a->pos[k]};
    }
    if (np) qsort(np, n, sizeof *np, np_cmp);
    size_t unique = 0;
    for (size_t k = 0; np && k < n; k++) {
        if (k && !strcmp(np[k].name, np[k - 1].name)) {
            char w2[600];
            where(w, sizeof w, &g->shard[np[k - 1].shard - 1]);
            where(w2, sizeof w2, &g->shard[np[k].shard - 1]);
            if (dups++ < 20)
                gproblem(g, "%s: case %s is in shard %d/%d (%s) and in shard %d/%d (%s): duplicated", pre, np[k].name, np[k - 1].shard,
                         g->of, w, np[k].shard, g->of, w2);
            continue;
        }
        unique++;
    }
    if (dups > 20) gproblem(g, "%s: %zu duplicated cases in all", pre, dups);
    free(np);
    if (!g->nmissing && unique != g->cases_total)
        gproblem(g, "%s: the %d shards hold %zu different cases, the full list has %zu: %zu cases are in no shard", pre, g->of, unique,
                 g->cases_total, unique < g->cases_total ? g->cases_total - unique : 0);
    /* the same arguments, the same probe limits */
    for (int i = 0; ref && i < g->of; i++) {
        if (g->shard[i].attempt < 0) continue;
        const qkf_attempt *a = &p->att[g->shard[i].attempt];
        if (a == ref) continue;
        if (!args_equal(a, ref)) {
            char x[800], y[800];
            args_str(x, sizeof x, a);
            args_str(y, sizeof y, ref);
            gproblem(g, "%s: shard %d/%d ran with the arguments '%s', shard %d/%d with '%s' (the cost estimate, hence the assignment, can differ)",
                     pre, a->shard, g->of, x, ref->shard, g->of, y);
        }
        if (a->has_limits && ref->has_limits) compare_limits(g, ref, a, pre);
    }
    g->complete = g->nmissing == 0 && g->nproblems == 0;
    /* a group that only lacks agreement on the probe still merges: its data is whole */
    if (g->nmissing == 0 && !dups && unique == g->cases_total) g->complete = 1;
}

static qkf_group *new_group(qkf_scan *s) {
    qkf_group *v = realloc(s->g, (s->n + 1) * sizeof *v);
    if (!v) return NULL;
    s->g = v;
    qkf_group *g = &s->g[s->n++];
    memset(g, 0, sizeof *g);
    return g;
}

static int group_init_shards(qkf_group *g) {
    g->shard = calloc((size_t)g->of, sizeof *g->shard);
    g->missing = calloc((size_t)g->of, sizeof *g->missing);
    if (!g->shard || !g->missing) return -1;
    for (int i = 0; i < g->of; i++) {
        g->shard[i].index = i + 1;
        g->shard[i].state = QKF_MISSING;
        g->shard[i].attempt = -1;
        g->shard[i].exit_code = -1;
    }
    return 0;
}

static void fill_from_log(qkf_shard *s, const qkf_logent *e) {
    if (!e) return;
    if (!s->node[0]) cpy(s->node, sizeof s->node, e->node);
    if (!s->host[0]) cpy(s->host, sizeof s->host, e->node);
    if (!s->job[0]) cpy(s->job, sizeof s->job, e->job);
    if (!s->target[0]) cpy(s->target, sizeof s->target, e->target);
    if (e->ended) s->exit_code = e->exit;
}

int qkf_scan_dir(const char *dir, qkf_scan *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s is not a folder", dir);
        return -1;
    }
    qkf_priv *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    out->priv = p;
    walk_scan = out, walk_v = NULL, walk_n = walk_cap = 0;
    if (nftw(dir, walk_fn, 32, FTW_PHYS) != 0) sproblem(out, "could not read all of %s: %s", dir, strerror(errno));
    p->att = walk_v, p->natt = walk_n;
    walk_scan = NULL, walk_v = NULL;
    read_manifests(dir, p, out);
    read_logs(dir, p);
    if (p->natt) qsort(p->att, p->natt, sizeof *p->att, attempt_cmp);
    for (size_t i = 0; i < p->natt;) {
        size_t j = i;
        while (j < p->natt && same_group(&p->att[i], &p->att[j])) j++;
        qkf_group *g = new_group(out);
        if (!g) break;
        qkf_attempt *a0 = &p->att[i];
        cpy(g->machine, sizeof g->machine, a0->machine);
        cpy(g->run_id, sizeof g->run_id, a0->run_id);
        cpy(g->command, sizeof g->command, a0->command);
        cpy(g->sha, sizeof g->sha, a0->sha);
        g->of = a0->of;
        g->cases_total = a0->total;
        if (group_init_shards(g)) break;
        const qkf_manifest *m = manifest_for(p, g->run_id);
        if (m) cpy(g->manifest, sizeof g->manifest, m->path);
        for (size_t k = i; k < j; k++) {
            qkf_attempt *a = &p->att[k];
            qkf_shard *s = &g->shard[a->shard - 1];
            s->attempts++;
            if (s->attempt >= 0 && !better(a, &p->att[s->attempt])) continue;
            s->attempt = (int)k;
        }
        for (int k = 0; k < g->of; k++) {
            qkf_shard *s = &g->shard[k];
            if (s->attempt < 0) continue;
            qkf_attempt *a = &p->att[s->attempt];
            a->chosen = 1;
            s->state = !strcmp(a->status, "complete") ? QKF_COMPLETE : QKF_INCOMPLETE;
            cpy(s->status, sizeof s->status, a->status);
            cpy(s->dir, sizeof s->dir, a->dir);
            cpy(s->host, sizeof s->host, a->host);
            cpy(s->node, sizeof s->node, a->sl_node);
            if (a->sl_array[0]) snprintf(s->job, sizeof s->job, "%s_%s", a->sl_array, a->sl_task);
            else cpy(s->job, sizeof s->job, a->sl_job);
            cpy(s->target, sizeof s->target, attempt_target(p, a));
            s->ncases = a->ncases, s->ndone = a->ndone;
            if (!g->target[0]) cpy(g->target, sizeof g->target, s->target);
            if (!g->args) {
                g->args = calloc((size_t)a->nargs + 1, sizeof *g->args);
                for (int q = 0; g->args && q < a->nargs; q++) g->args[g->nargs++] = qkf_strdup(a->args[q]);
            }
        }
        for (int k = 0; k < g->of; k++) { /* a task that left no shard.json (or left it running): its log */
            qkf_shard *s = &g->shard[k];
            if (s->state == QKF_COMPLETE) continue;
            const qkf_logent *e = log_for(p, g->run_id, g->target, s->index);
            if (s->state == QKF_INCOMPLETE && e && s->job[0] && strcmp(e->job, s->job)) e = NULL;
            fill_from_log(s, e);
        }
        if (m && m->shards != g->of)
            gproblem(g, "run %s, %s on %s: the manifest %s says %d shards, these shards say %d", g->run_id, g->command, g->machine, m->path,
                     m->shards, g->of);
        check_group(g, p);
        i = j;
    }
    /* manifest targets no shard reported from */
    for (size_t mi = 0; mi < p->nman; mi++) {
        const qkf_manifest *m = &p->man[mi];
        for (int t = 0; t < m->ntargets; t++) {
            int seen = 0;
            for (size_t k = 0; k < out->n && !seen; k++)
                seen = !strcmp(out->g[k].run_id, m->name) && (!strcmp(out->g[k].target, m->targets[t]) || (!out->g[k].target[0] && m->ntargets == 1));
            if (seen) continue;
            qkf_group *g = new_group(out);
            if (!g) break;
            cpy(g->machine, sizeof g->machine, "?");
            cpy(g->run_id, sizeof g->run_id, m->name);
            cpy(g->command, sizeof g->command, m->cmd[0]);
            cpy(g->target, sizeof g->target, m->targets[t]);
            cpy(g->manifest, sizeof g->manifest, m->path);
            g->of = m->shards;
            if (group_init_shards(g)) break;
            g->args = calloc((size_t)m->ncmd + 1, sizeof *g->args);
            for (int q = 1; g->args && q < m->ncmd; q++) g->args[g->nargs++] = qkf_strdup(m->cmd[q]);
            char pre[400], w[600];
            snprintf(pre, sizeof pre, "run %s, %s on target %s", g->run_id, g->command, g->target);
            for (int k = 0; k < g->of; k++) {
                qkf_shard *s = &g->shard[k];
                cpy(s->target, sizeof s->target, m->targets[t]);
                fill_from_log(s, log_for(p, g->run_id, m->targets[t], s->index));
                g->missing[g->nmissing++] = s->index;
                where(w, sizeof w, s);
                gproblem(g, "%s: shard %d/%d missing: no results folder (%s)", pre, s->index, g->of, w);
            }
        }
    }
    return 0;
}

void qkf_scan_free(qkf_scan *s) {
    for (size_t i = 0; i < s->n; i++) {
        qkf_group *g = &s->g[i];
        for (int k = 0; k < g->nargs; k++) free(g->args[k]);
        for (int k = 0; k < g->nproblems; k++) free(g->problems[k]);
        free(g->args), free(g->problems), free(g->shard), free(g->missing);
    }
    for (int k = 0; k < s->nproblems; k++) free(s->problems[k]);
    free(s->g), free(s->problems);
    qkf_priv *p = s->priv;
    if (p) {
        for (size_t i = 0; i < p->natt; i++) attempt_free(&p->att[i]);
        for (size_t i = 0; i < p->nman; i++) manifest_free(&p->man[i]);
        free(p->att), free(p->man), free(p->log), free(p);
    }
    memset(s, 0, sizeof *s);
}

int qkf_scan_print(const qkf_scan *s, FILE *f) {
    int n = 0;
    for (size_t i = 0; i < s->n; i++) {
        const qkf_group *g = &s->g[i];
        int done = 0;
        for (int k = 0; k < g->of; k++) done += g->shard[k].state == QKF_COMPLETE;
        fprintf(f, "run %s: %s on %s%s%s%s, %zu cases in %d shards: %d complete%s\n", g->run_id, g->command, g->machine, g->target[0] ? " (target " : "",
                g->target, g->target[0] ? ")" : "", g->cases_total, g->of, done, g->complete ? "" : ", NOT complete");
        for (int k = 0; k < g->nproblems; k++) fprintf(f, "  problem: %s\n", g->problems[k]);
        n += g->nproblems;
    }
    for (int k = 0; k < s->nproblems; k++) fprintf(f, "problem: %s\n", s->problems[k]);
    return n + s->nproblems;
}
