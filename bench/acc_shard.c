/* --shard for qkbench accuracy and sweep: the case list, its assignment, shard.json. */
#include "acc_shard.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evaluate.h"
#include "machine.h"
#include "probe.h"
#include "results.h"

typedef struct layer_ctx {
    acc_shard *s;
    double M, N, K;
} layer_ctx;

static void add_case(void *p, const char *name, qk_format f, size_t g, qk_mode m, size_t variants) {
    layer_ctx *l = p;
    acc_shard *s = l->s;
    (void)f, (void)g, (void)m;
    if (s->oom) return;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        char **nv = realloc(s->names, cap * sizeof *nv);
        if (nv) s->names = nv;
        double *cv = realloc(s->cost, cap * sizeof *cv);
        if (cv) s->cost = cv;
        if (!nv || !cv) {
            s->oom = 1;
            return;
        }
        s->cap = cap;
    }
    double mm = 2 * l->M * l->N * l->K, v = (double)variants;
    double cost = mm * (v + 2) / 5e9 + l->N * l->K * 5e-9;
    if (s->timing) {
        double call = mm / 50e9;
        double reps_t = call * (double)s->reps;
        cost += v * (reps_t > s->min_time ? reps_t : s->min_time);
    }
    size_t len = strlen(name) + 1;
    if (!(s->names[s->n] = malloc(len))) {
        s->oom = 1;
        return;
    }
    memcpy(s->names[s->n], name, len);
    s->cost[s->n++] = cost;
}

void acc_shard_add_layer(acc_shard *s, const acc_opts *o, const char *layer, size_t M, size_t N, size_t K) {
    layer_ctx l = {s, (double)M, (double)N, (double)K};
    acc_cases(o, layer, M, K, add_case, &l);
}

/* SIGTERM (scancel) or SIGINT: no new case starts; the shard ends "failed". */
static volatile sig_atomic_t stop_sig;

static void on_stop(int sig) {
    if (stop_sig) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    stop_sig = sig;
}

static void free_list(acc_shard *s) {
    for (size_t i = 0; i < s->n; i++) free(s->names[i]);
    free(s->names), free(s->cost), free(s->assign);
    s->names = NULL, s->cost = NULL, s->assign = NULL;
    s->n = s->cap = 0;
}

int acc_shard_start(acc_shard *s, acc_opts *o, const char *cmd, int argc, char **argv) {
    char err[600];
    if (s->oom || (s->n && !(s->assign = calloc(s->n, sizeof *s->assign)))) {
        fprintf(stderr, "qkbench %s: out of memory\n", cmd);
        free_list(s);
        return 2;
    }
    if (s->opt.of) qkb_shard_assign((const char *const *)s->names, s->cost, s->n, s->opt.of, s->assign);
    if (s->list) {
        for (size_t i = 0; i < s->n; i++)
            if (!s->opt.of || s->assign[i] == s->opt.index) printf("%s\n", s->names[i]);
        free_list(s);
        return 1;
    }
    if (!s->opt.of) {
        free_list(s);
        return 0;
    }
    if (s->n == 0) {
        fprintf(stderr, "qkbench %s: no case to shard (no format, group size and mode apply)\n", cmd);
        free_list(s);
        return 2;
    }
    if (o->out) {
        snprintf(s->dir, sizeof s->dir, "%s", o->out);
        if (qkb_mkdirs(s->dir, err, sizeof err)) goto fail;
    } else {
        if (qkb_shard_make_dir(&s->opt, s->dir, sizeof s->dir, err, sizeof err)) goto fail;
        o->out = s->dir;
    }
    char path[1300];
    qkb_path(path, sizeof path, s->dir, "machine.json");
    if (qkb_machine_write(path, qkb_probe_cached(), err, sizeof err)) goto fail;
    if (qkb_shard_begin(&s->run, s->dir, cmd, argc, argv, &s->opt, (const char *const *)s->names, s->assign, s->n, err, sizeof err))
        goto fail;
    free_list(s);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    return 0;
fail:
    fprintf(stderr, "qkbench %s: %s\n", cmd, err);
    free_list(s);
    return 2;
}

static long find(const acc_shard *s, const char *layer, qk_format f, size_t g, qk_mode m) {
    char name[400];
    acc_case_name(name, sizeof name, layer, f, g, m);
    for (size_t i = 0; i < s->run.ncases; i++)
        if (!strcmp(s->run.cases[i], name)) return (long)i;
    return -1;
}

int acc_shard_want(acc_shard *s, const char *layer, qk_format f, size_t g, qk_mode m) {
    return !s->opt.of || (!stop_sig && find(s, layer, f, g, m) >= 0);
}

void acc_shard_done(acc_shard *s, const char *layer, qk_format f, size_t g, qk_mode m) {
    if (!s->opt.of) return;
    long i = find(s, layer, f, g, m);
    if (i >= 0) qkb_shard_case(&s->run, s->run.cases[i], 1);
}

int acc_shard_end(acc_shard *s, int ok) {
    if (s->opt.of) {
        if (stop_sig) fprintf(stderr, "qkbench %s: stopped by signal %d; the shard is marked failed, its completed cases are kept in %s\n", s->run.command,
                              (int)stop_sig, s->dir);
        qkb_shard_end(&s->run, ok && !stop_sig);
    }
    free_list(s);
    return stop_sig ? 128 + stop_sig : 0;
}

static int run_want(void *p, const char *layer, qk_format f, size_t g, qk_mode m) { return acc_shard_want(((acc_run *)p)->sh, layer, f, g, m); }
static void run_case_done(void *p, const char *layer, qk_format f, size_t g, qk_mode m) { acc_shard_done(((acc_run *)p)->sh, layer, f, g, m); }

static void run_row(void *p, const acc_row *r) {
    acc_run *u = p;
    acc_table_add(&u->t, r);
    if (u->files && !u->failed_write) {
        char err[512];
        if (acc_write_outputs(&u->t, &u->meta, u->o, u->cmd, u->want_svg, err, sizeof err)) {
            fprintf(stderr, "qkbench %s: %s\n", u->cmd, err);
            u->failed_write = 1;
        }
    }
}

static void run_note(void *p, const char *line) {
    (void)p;
    printf("%s\n", line);
}

void acc_run_hook(acc_run *u, acc_eval_cfg *cfg, int quiet) {
    cfg->ctx = u;
    cfg->on_row = run_row;
    cfg->on_note = quiet ? NULL : run_note;
    if (u->sh && u->sh->opt.of) cfg->want = run_want, cfg->case_done = run_case_done;
}
