/* qkbench fleet: the dispatcher, and `fleet submit` (a Slurm array job per
 * target, one task per shard; the manifest of fleet.h). */
#include "fleet.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commands.h"
#include "json.h"
#include "results.h"

#define FL_MAX_TARGETS 64
#define FL_MAX_ARGS 256
#define FL_MAX_JOBS 256
#define FL_MAX_SHARDS 1000

typedef struct fl_strs {
    char **v;
    int n;
} fl_strs;

typedef struct fl_target {
    char name[33];
    fl_strs sbatch;
} fl_target;

typedef struct fl_job {
    char job_id[32];
    int target;
    char *array; /* "1-3" or "2,5" */
    char submitted[40];
    int only_missing;
    fl_strs sbatch; /* options given to this submission only (--only-missing) */
} fl_job;

/* A fleet run: what the manifest holds. */
typedef struct fl_run {
    char name[65];
    fl_strs command; /* COMMAND ARGS... */
    int shards;
    char results[PATH_MAX];
    char qkbench[PATH_MAX];
    fl_strs sbatch; /* common to every target */
    fl_target targets[FL_MAX_TARGETS];
    int ntargets;
    fl_job jobs[FL_MAX_JOBS];
    int njobs;
    char host[256];
    char created[40];
} fl_run;

static void strs_add(fl_strs *s, const char *v) {
    char **nv = realloc(s->v, (size_t)(s->n + 1) * sizeof *nv);
    char *c = strdup(v);
    if (!nv || !c) {
        fprintf(stderr, "qkbench fleet: out of memory\n");
        exit(2);
    }
    s->v = nv;
    s->v[s->n++] = c;
}

static void strs_free(fl_strs *s) {
    for (int i = 0; i < s->n; i++) free(s->v[i]);
    free(s->v);
    s->v = NULL;
    s->n = 0;
}

static void run_free(fl_run *r) {
    strs_free(&r->command);
    strs_free(&r->sbatch);
    for (int t = 0; t < r->ntargets; t++) strs_free(&r->targets[t].sbatch);
    for (int j = 0; j < r->njobs; j++) {
        free(r->jobs[j].array);
        strs_free(&r->jobs[j].sbatch);
    }
}

/* Run ids and target names: [A-Za-z0-9._-], 1..max characters, not starting with '.' or '-'. */
static int name_ok(const char *s, size_t max) {
    size_t n = strlen(s);
    if (n == 0 || n > max || s[0] == '.' || s[0] == '-') return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' || *p == '-'))
            return 0;
    return 1;
}

/* Shell-quote s for the batch script and the printed commands. */
static void put_sq(qkb_buf *b, const char *s) {
    int plain = *s != 0;
    for (const char *p = s; *p; p++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=,+@%-", *p)) plain = 0;
    if (plain) {
        qkb_buf_puts(b, s);
        return;
    }
    qkb_buf_putn(b, "'", 1);
    for (const char *p = s; *p; p++) {
        if (*p == '\'') qkb_buf_puts(b, "'\\''");
        else qkb_buf_putn(b, p, 1);
    }
    qkb_buf_putn(b, "'", 1);
}

static void path_join(char *out, size_t n, const char *a, const char *b) { snprintf(out, n, "%s/%s", a, b); }

/* An absolute form of `path` (relative to the working directory), without resolving links. */
static int absolute(const char *path, char *out, size_t n) {
    if (path[0] == '/') return snprintf(out, n, "%s", path) < (int)n ? 0 : -1;
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return -1;
    const char *p = path;
    while (p[0] == '.' && p[1] == '/') p += 2;
    if (!strcmp(p, ".")) p = "";
    return snprintf(out, n, "%s%s%s", cwd, *p ? "/" : "", p) < (int)n ? 0 : -1;
}

/* ---- the batch script ---- */

static void script_text(const fl_run *r, qkb_buf *b) {
    qkb_buf_printf(b, "#!/bin/bash\n# qkbench fleet run %s: written by `qkbench fleet submit`; manifest %s/fleet/%s.json.\n", r->name,
                   r->results, r->name);
    qkb_buf_printf(b, "# Submitted once per target as `sbatch --array=SHARDS [options] %s/fleet/%s.sbatch TARGET`:\n"
                      "# the array task id is the shard index (1..%d).\n",
                   r->results, r->name, r->shards);
    qkb_buf_printf(b, "#SBATCH --job-name=qk-%s\n", r->name);
    qkb_buf_puts(b, "#SBATCH --nodes=1\n#SBATCH --ntasks=1\n"
                    "# The whole node, as in a local run: every CPU and all memory; qkbench pins its own threads.\n"
                    "#SBATCH --exclusive\n#SBATCH --mem=0\n");
    qkb_buf_printf(b, "#SBATCH --output=%s/fleet/logs/%s-%%A_%%a.out\n", r->results, r->name);
    qkb_buf_printf(b, "#SBATCH --error=%s/fleet/logs/%s-%%A_%%a.err\n", r->results, r->name);
    qkb_buf_puts(b, "set -u\n"
                    "target=${1:?usage: sbatch --array=SHARDS THIS_SCRIPT TARGET}\n"
                    "shard=${SLURM_ARRAY_TASK_ID:?not a Slurm array task}\n"
                    "node=${SLURMD_NODENAME:-$(hostname)}\n");
    qkb_buf_printf(b, "tag=\"run=%s target=$target shard=$shard of=%d job=${SLURM_ARRAY_JOB_ID:-?}_$shard node=$node\"\n", r->name, r->shards);
    qkb_buf_puts(b, "echo \"qkbench-fleet: $tag cpus=$(nproc) start=$(date -u +%Y-%m-%dT%H:%M:%SZ)\"\n");
    put_sq(b, r->qkbench);
    qkb_buf_puts(b, " ");
    put_sq(b, r->command.v[0]);
    qkb_buf_printf(b, " --shard \"$shard/%d\" --run-id %s --results ", r->shards, r->name);
    put_sq(b, r->results);
    for (int i = 1; i < r->command.n; i++) {
        qkb_buf_puts(b, " ");
        put_sq(b, r->command.v[i]);
    }
    qkb_buf_puts(b, "\nrc=$?\n"
                    "echo \"qkbench-fleet: $tag exit=$rc end=$(date -u +%Y-%m-%dT%H:%M:%SZ)\"\n"
                    "exit $rc\n");
}

/* ---- the manifest ---- */

static void kstrs(qkw *w, const char *k, const fl_strs *s) {
    qkw_key(w, k);
    qkw_arr(w);
    for (int i = 0; i < s->n; i++) qkw_str(w, s->v[i]);
    qkw_end_arr(w);
}

static int manifest_write(const fl_run *r, char *err, size_t errlen) {
    qkb_buf b = {0};
    qkw w;
    char path[PATH_MAX + 128];
    qkw_init(&w, &b);
    qkw_obj(&w);
    qkw_kstr(&w, "name", r->name);
    qkw_kstr(&w, "run_id", r->name);
    qkw_kstr(&w, "job_id", r->njobs ? r->jobs[0].job_id : NULL);
    kstrs(&w, "command", &r->command);
    qkw_kint(&w, "shards", r->shards);
    qkw_kstr(&w, "results", r->results);
    path_join(path, sizeof path, r->results, "fleet");
    qkb_buf tmp = {0};
    qkb_buf_printf(&tmp, "%s/%s.sbatch", path, r->name);
    qkw_kstr(&w, "script", tmp.oom ? "" : tmp.p);
    tmp.n = 0;
    qkb_buf_printf(&tmp, "%s/logs/", path);
    qkw_kstr(&w, "logs", tmp.oom ? "" : tmp.p);
    qkb_buf_free(&tmp);
    qkw_kstr(&w, "qkbench", r->qkbench);
    kstrs(&w, "sbatch", &r->sbatch);
    qkw_key(&w, "targets");
    qkw_arr(&w);
    for (int t = 0; t < r->ntargets; t++) {
        qkw_obj(&w);
        qkw_kstr(&w, "name", r->targets[t].name);
        kstrs(&w, "sbatch", &r->targets[t].sbatch);
        qkw_end_obj(&w);
    }
    qkw_end_arr(&w);
    qkw_key(&w, "tasks");
    qkw_arr(&w);
    for (int t = 0, k = 0; t < r->ntargets; t++)
        for (int s = 1; s <= r->shards; s++, k++) {
            qkw_obj(&w);
            qkw_kint(&w, "index", k);
            qkw_kint(&w, "target", t);
            qkw_kint(&w, "shard", s);
            qkw_end_obj(&w);
        }
    qkw_end_arr(&w);
    qkw_key(&w, "jobs");
    qkw_arr(&w);
    for (int j = 0; j < r->njobs; j++) {
        qkw_obj(&w);
        qkw_kstr(&w, "job_id", r->jobs[j].job_id);
        qkw_kint(&w, "target", r->jobs[j].target);
        qkw_kstr(&w, "array", r->jobs[j].array);
        qkw_kstr(&w, "submitted", r->jobs[j].submitted);
        qkw_kbool(&w, "only_missing", r->jobs[j].only_missing);
        kstrs(&w, "sbatch", &r->jobs[j].sbatch);
        qkw_end_obj(&w);
    }
    qkw_end_arr(&w);
    qkw_kstr(&w, "host", r->host);
    qkw_kstr(&w, "created", r->created);
    qkw_end_obj(&w);
    qkb_buf_puts(&b, "\n");
    snprintf(path, sizeof path, "%s/fleet/%s.json", r->results, r->name);
    int rc = b.oom ? (snprintf(err, errlen, "out of memory"), -1) : qkb_write_atomic(path, b.p, b.n, err, errlen);
    qkb_buf_free(&b);
    return rc;
}

static int get_strs(const qkj *v, fl_strs *out) {
    if (!v || v->type != QKJ_ARR) return -1;
    for (size_t i = 0; i < v->n; i++) {
        if (v->items[i]->type != QKJ_STR) return -1;
        strs_add(out, v->items[i]->str);
    }
    return 0;
}

static int copy_str(const qkj *v, char *out, size_t n) {
    const char *s = qkj_str(v, NULL);
    if (!s || strlen(s) >= n) return -1;
    memcpy(out, s, strlen(s) + 1);
    return 0;
}

/* Read DIR/fleet/NAME.json back into r. 0, or -1 with a message. */
static int manifest_read(const char *path, fl_run *r, char *err, size_t errlen) {
    char e[512];
    qkj *m = qkj_parse_file(path, e, sizeof e);
    if (!m) {
        snprintf(err, errlen, "%s", e);
        return -1;
    }
    int bad = 0;
    bad |= copy_str(qkj_get(m, "name"), r->name, sizeof r->name);
    bad |= get_strs(qkj_get(m, "command"), &r->command);
    r->shards = (int)qkj_num(qkj_get(m, "shards"), 0);
    bad |= copy_str(qkj_get(m, "results"), r->results, sizeof r->results);
    bad |= copy_str(qkj_get(m, "qkbench"), r->qkbench, sizeof r->qkbench);
    bad |= get_strs(qkj_get(m, "sbatch"), &r->sbatch);
    copy_str(qkj_get(m, "host"), r->host, sizeof r->host);
    copy_str(qkj_get(m, "created"), r->created, sizeof r->created);
    const qkj *t = qkj_get(m, "targets");
    if (!t || t->type != QKJ_ARR || t->n == 0 || t->n > FL_MAX_TARGETS) bad = 1;
    for (size_t i = 0; !bad && i < t->n; i++) {
        bad |= copy_str(qkj_get(t->items[i], "name"), r->targets[i].name, sizeof r->targets[i].name);
        bad |= get_strs(qkj_get(t->items[i], "sbatch"), &r->targets[i].sbatch);
        r->ntargets++;
    }
    const qkj *j = qkj_get(m, "jobs");
    if (!j || j->type != QKJ_ARR || j->n >= FL_MAX_JOBS) bad = 1;
    for (size_t i = 0; !bad && i < j->n; i++) {
        fl_job *o = &r->jobs[i];
        bad |= copy_str(qkj_get(j->items[i], "job_id"), o->job_id, sizeof o->job_id);
        o->target = (int)qkj_num(qkj_get(j->items[i], "target"), -1);
        const char *a = qkj_str(qkj_get(j->items[i], "array"), NULL);
        o->array = a ? strdup(a) : NULL;
        copy_str(qkj_get(j->items[i], "submitted"), o->submitted, sizeof o->submitted);
        o->only_missing = qkj_num(qkj_get(j->items[i], "only_missing"), 0) != 0;
        get_strs(qkj_get(j->items[i], "sbatch"), &o->sbatch);
        r->njobs++;
        if (!o->array || o->target < 0 || o->target >= r->ntargets) bad = 1;
    }
    if (r->command.n < 1 || r->shards < 1 || r->shards > FL_MAX_SHARDS) bad = 1;
    qkj_free(m);
    if (bad) {
        snprintf(err, errlen, "%.900s is not a fleet manifest written by qkbench fleet submit (a field is missing or wrong)", path);
        return -1;
    }
    return 0;
}

/* ---- running sbatch ---- */

/* The program `prog` as found in PATH (or itself if it has a '/'); 0 if found. */
static int find_program(const char *prog, char *out, size_t n) {
    if (strchr(prog, '/')) {
        snprintf(out, n, "%s", prog);
        return access(prog, X_OK);
    }
    const char *path = getenv("PATH");
    if (!path) path = "/usr/bin:/bin";
    while (*path) {
        const char *c = strchr(path, ':');
        size_t l = c ? (size_t)(c - path) : strlen(path);
        snprintf(out, n, "%.*s/%s", (int)l, l ? path : ".", prog);
        if (access(out, X_OK) == 0) return 0;
        path += l + (c ? 1 : 0);
    }
    return -1;
}

static char *slurp_fd(int fd) {
    qkb_buf b = {0};
    char chunk[4096];
    lseek(fd, 0, SEEK_SET);
    for (;;) {
        ssize_t k = read(fd, chunk, sizeof chunk);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        qkb_buf_putn(&b, chunk, (size_t)k);
    }
    qkb_buf_putn(&b, "", 1);
    return qkb_buf_take(&b);
}

/* Run argv (argv[0] an absolute path) with QK_MACHINE and QK_RESULTS removed from its
 * environment; its stdout and stderr are returned (malloc'ed). The exit status, or -1. */
static int run_capture(char **argv, char **out, char **errout) {
    FILE *fo = tmpfile(), *fe = tmpfile();
    *out = *errout = NULL;
    if (!fo || !fe) {
        if (fo) fclose(fo);
        if (fe) fclose(fe);
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fclose(fo);
        fclose(fe);
        return -1;
    }
    if (pid == 0) {
        dup2(fileno(fo), 1);
        dup2(fileno(fe), 2);
        /* each node names its own machine; the results root is on the command line */
        unsetenv("QK_MACHINE");
        unsetenv("QK_RESULTS");
        execv(argv[0], argv);
        fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    *out = slurp_fd(fileno(fo));
    *errout = slurp_fd(fileno(fe));
    fclose(fo);
    fclose(fe);
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    return 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* The sbatch command line of target t for the array spec `array`. */
static void sbatch_argv(const fl_run *r, const char *sbatch, int t, const fl_strs *extra, const char *array, fl_strs *a) {
    char script[PATH_MAX + 128];
    strs_add(a, sbatch);
    strs_add(a, "--parsable");
    for (int i = 0; i < r->sbatch.n; i++) strs_add(a, r->sbatch.v[i]);
    for (int i = 0; i < r->targets[t].sbatch.n; i++) strs_add(a, r->targets[t].sbatch.v[i]);
    for (int i = 0; extra && i < extra->n; i++) strs_add(a, extra->v[i]);
    qkb_buf b = {0};
    qkb_buf_printf(&b, "--array=%s", array);
    strs_add(a, b.oom ? "--array=?" : b.p);
    qkb_buf_free(&b);
    snprintf(script, sizeof script, "%s/fleet/%s.sbatch", r->results, r->name);
    strs_add(a, script);
    strs_add(a, r->targets[t].name);
}

static void print_cmd(FILE *f, const char *prefix, const fl_strs *a) {
    qkb_buf b = {0};
    qkb_buf_puts(&b, prefix);
    for (int i = 0; i < a->n; i++) {
        if (i) qkb_buf_puts(&b, " ");
        put_sq(&b, a->v[i]);
    }
    if (!b.oom) fprintf(f, "%s\n", b.p);
    qkb_buf_free(&b);
}

/* Submit target t's array; on success the job is appended to r. 0, or 1 after printing why. */
static int submit_one(fl_run *r, const char *sbatch, int t, const fl_strs *extra, const char *array, int only_missing) {
    fl_strs a = {0};
    sbatch_argv(r, sbatch, t, extra, array, &a);
    strs_add(&a, ""); /* room for execv's NULL */
    a.n--;
    free(a.v[a.n]);
    a.v[a.n] = NULL;
    char *out, *errout;
    int rc = run_capture(a.v, &out, &errout);
    char id[32] = "";
    if (rc == 0 && out) {
        size_t k = 0;
        const char *p = out;
        while (*p == ' ' || *p == '\n') p++;
        while (p[k] >= '0' && p[k] <= '9' && k + 1 < sizeof id) {
            id[k] = p[k];
            k++;
        }
        id[k] = 0;
        if (p[k] && p[k] != ';' && p[k] != '\n') id[0] = 0;
    }
    int ok = rc == 0 && id[0];
    if (!ok) {
        fprintf(stderr, "qkbench fleet submit: sbatch failed for target '%s' (%s %d)\n", r->targets[t].name,
                rc < 0 ? "could not run it" : "exit status", rc);
        print_cmd(stderr, "  command: ", &a);
        if (errout && *errout) fprintf(stderr, "  sbatch said: %s%s", errout, errout[strlen(errout) - 1] == '\n' ? "" : "\n");
        if (out && *out) fprintf(stderr, "  sbatch printed: %s%s", out, out[strlen(out) - 1] == '\n' ? "" : "\n");
    } else {
        fl_job *j = &r->jobs[r->njobs++];
        memcpy(j->job_id, id, sizeof id);
        j->target = t;
        j->array = strdup(array);
        qkb_now(NULL, 0, j->submitted, sizeof j->submitted);
        j->only_missing = only_missing;
        for (int i = 0; extra && i < extra->n; i++) strs_add(&j->sbatch, extra->v[i]);
        printf("target %-12s job %s  shards %s of %d\n", r->targets[t].name, id, array, r->shards);
    }
    free(out);
    free(errout);
    strs_free(&a);
    return ok ? 0 : 1;
}

/* ---- the command line ---- */

static void submit_help(void) {
    printf("usage: qkbench fleet submit [options] -- COMMAND [ARGS...]\n"
           "       qkbench fleet submit --only-missing DIR [--name NAME] [slurm options]\n"
           "Runs `qkbench COMMAND ARGS` on Slurm, split in --shards N shards: writes a batch script and a manifest\n"
           "to DIR/fleet/ (DIR = --results) and submits one `sbatch --array=1-N` per target, one array task per\n"
           "shard. Each task gets a whole node (--exclusive, --nodes=1, --ntasks=1, --mem=0: every CPU, all\n"
           "memory; qkbench pins its threads as in a local run) and runs\n"
           "  QKBENCH COMMAND --shard I/N --run-id NAME --results DIR ARGS\n"
           "which writes DIR/<machine>/<date>-<commit>-NAME-shard<I>of<N>/. Logs: DIR/fleet/logs/NAME-<job>_<I>.out/.err.\n"
           "Then `qkbench fleet collect DIR` merges the shards per machine.\n\n"
           "COMMAND is bench, sweep or accuracy; ARGS are its own options (not --shard, --run-id, --out, --results).\n\n"
           "options:\n"
           "  --results DIR        the results root every node writes to (shared by all nodes; default $QK_RESULTS\n"
           "                       or ./results; made absolute)\n"
           "  --shards N           number of shards (1..%d; default 1)\n"
           "  --name NAME          the run id ([A-Za-z0-9._-], up to 64; default COMMAND-YYYYMMDD-HHMMSS)\n"
           "  --target NAME[:OPTS] one array job per target, with the sbatch options OPTS (separated by spaces),\n"
           "                       e.g. --target zen5:--constraint=zen5 --target 'a64:--nodelist=arm1 --partition=arm';\n"
           "                       repeatable; default one target 'default' with no options of its own\n"
           "  --partition P, --time T, --account A, --qos Q, --constraint C, --nodelist L, --exclude L\n"
           "                       sbatch's options of the same name, for every target\n"
           "  --sbatch-arg OPT     any other sbatch option, as is (repeatable), e.g. --sbatch-arg=--mail-type=END\n"
           "  --qkbench PATH       the qkbench the nodes run (default: this binary, %s)\n"
           "  --sbatch PATH        the sbatch to run (default: sbatch in PATH)\n"
           "  --dry-run            print the batch script and the sbatch commands; write and submit nothing\n"
           "  --only-missing DIR   resubmit only the shards of run NAME in DIR that are missing or incomplete (as\n"
           "                       `qkbench fleet collect` reports them), as new arrays (--array=3,7) with the same\n"
           "                       run id and N, the manifest's command and targets, and any slurm options given\n"
           "                       now; the manifest's jobs list grows, no result is overwritten\n"
           "The nodes get the submitting shell's environment (sbatch --export=ALL) except QK_MACHINE and QK_RESULTS:\n"
           "each node names its own machine (a target's OPTS may say --export=ALL,QK_MACHINE=NAME).\n"
           "Options --array, --output, --error, --parsable and --wrap are fleet submit's own and cannot be passed.\n"
           "Exit status: 0 submitted (or nothing missing); 1 sbatch failed (its message is shown); 2 a usage error,\n"
           "or sbatch not found.\n",
           FL_MAX_SHARDS, "/proc/self/exe");
}

typedef struct sub_opts {
    const char *results;
    int shards;
    const char *name;
    const char *qkbench;
    const char *sbatch;
    const char *only_missing;
    int dry_run;
    fl_strs slurm; /* common sbatch options from this command line */
    const char *target_spec[FL_MAX_TARGETS];
    int ntargets;
    int cmd_at; /* index of COMMAND in argv, 0 if none */
} sub_opts;

/* Options that fleet submit sets itself. */
static int reserved_sbatch(const char *o) {
    static const char *own[] = {"--array", "-a", "--output", "-o", "--error", "-e", "--parsable", "--wrap", NULL};
    for (int i = 0; own[i]; i++) {
        size_t l = strlen(own[i]);
        if (!strncmp(o, own[i], l) && (o[l] == 0 || o[l] == '=' || (own[i][1] != '-' && o[l] != 0))) return 1;
    }
    return 0;
}

static int check_sbatch_opt(const char *o, const char *where) {
    if (o[0] != '-') {
        fprintf(stderr, "qkbench fleet submit: %s: '%s' is not an sbatch option (they start with '-')\n", where, o);
        return 2;
    }
    if (reserved_sbatch(o)) {
        fprintf(stderr, "qkbench fleet submit: %s: '%s' is set by fleet submit itself and cannot be passed\n", where, o);
        return 2;
    }
    return 0;
}

static int parse_submit(int argc, char **argv, sub_opts *o) {
    static const char *mapped[] = {"--partition", "--time", "--account", "--qos", "--constraint", "--nodelist", "--exclude", NULL};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            if (i + 1 < argc) o->cmd_at = i + 1;
            else {
                fprintf(stderr, "qkbench fleet submit: nothing after '--': give the command to run (bench, sweep or accuracy)\n");
                return 2;
            }
            break;
        }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            submit_help();
            return -1;
        }
        if (!strcmp(a, "--dry-run")) {
            o->dry_run = 1;
            continue;
        }
        /* valued options: --opt V or --opt=V */
        char key[64];
        const char *v = NULL;
        const char *eq = strchr(a, '=');
        if (!strncmp(a, "--", 2) && eq && (size_t)(eq - a) < sizeof key) {
            memcpy(key, a, (size_t)(eq - a));
            key[eq - a] = 0;
            v = eq + 1;
        } else {
            snprintf(key, sizeof key, "%s", a);
        }
        static const char *valued[] = {"--results", "--shards", "--name", "--target", "--qkbench", "--sbatch", "--only-missing",
                                       "--sbatch-arg", NULL};
        int known = 0, is_mapped = 0;
        for (int k = 0; valued[k]; k++) known |= !strcmp(key, valued[k]);
        for (int k = 0; mapped[k]; k++) is_mapped |= !strcmp(key, mapped[k]);
        if (!known && !is_mapped) {
            if (a[0] == '-')
                fprintf(stderr, "qkbench fleet submit: unknown option '%s' (see qkbench fleet submit --help; sbatch options go\n"
                                "  through --sbatch-arg OPT or a --target's options)\n", a);
            else
                fprintf(stderr, "qkbench fleet submit: '%s': the command to run goes after '--' (qkbench fleet submit [options] -- %s ...)\n",
                        a, a);
            return 2;
        }
        if (!v) {
            if (i + 1 >= argc || !strcmp(argv[i + 1], "--")) {
                fprintf(stderr, "qkbench fleet submit: %s needs a value\n", key);
                return 2;
            }
            v = argv[++i];
        }
        if (!*v) {
            fprintf(stderr, "qkbench fleet submit: %s needs a value (got an empty one)\n", key);
            return 2;
        }
        if (is_mapped) {
            qkb_buf b = {0};
            qkb_buf_printf(&b, "%s=%s", key, v);
            strs_add(&o->slurm, b.oom ? "" : b.p);
            qkb_buf_free(&b);
        } else if (!strcmp(key, "--sbatch-arg")) {
            if (check_sbatch_opt(v, "--sbatch-arg")) return 2;
            strs_add(&o->slurm, v);
        } else if (!strcmp(key, "--results")) o->results = v;
        else if (!strcmp(key, "--name")) o->name = v;
        else if (!strcmp(key, "--qkbench")) o->qkbench = v;
        else if (!strcmp(key, "--sbatch")) o->sbatch = v;
        else if (!strcmp(key, "--only-missing")) o->only_missing = v;
        else if (!strcmp(key, "--shards")) {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end || end == v || n < 1 || n > FL_MAX_SHARDS) {
                fprintf(stderr, "qkbench fleet submit: --shards '%s': give a whole number from 1 to %d\n", v, FL_MAX_SHARDS);
                return 2;
            }
            o->shards = (int)n;
        } else if (!strcmp(key, "--target")) {
            if (o->ntargets == FL_MAX_TARGETS) {
                fprintf(stderr, "qkbench fleet submit: more than %d targets\n", FL_MAX_TARGETS);
                return 2;
            }
            o->target_spec[o->ntargets++] = v;
        }
    }
    return 0;
}

/* Fill r's targets from the --target specs. */
static int parse_targets(const sub_opts *o, fl_run *r) {
    if (o->ntargets == 0) {
        snprintf(r->targets[0].name, sizeof r->targets[0].name, "default");
        r->ntargets = 1;
        return 0;
    }
    for (int t = 0; t < o->ntargets; t++) {
        const char *spec = o->target_spec[t];
        const char *colon = strchr(spec, ':');
        size_t nl = colon ? (size_t)(colon - spec) : strlen(spec);
        fl_target *tg = &r->targets[r->ntargets++];
        if (nl >= sizeof tg->name) nl = sizeof tg->name; /* too long: name_ok says so below */
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)nl, spec);
        if (!name_ok(name, sizeof tg->name - 1)) {
            fprintf(stderr, "qkbench fleet submit: --target '%s': the name '%s' must be 1 to %zu characters of [A-Za-z0-9._-],\n"
                            "  not starting with '.' or '-' (form: NAME or NAME:SBATCH_OPTIONS)\n",
                    spec, name, sizeof tg->name - 1);
            return 2;
        }
        memcpy(tg->name, name, strlen(name) + 1);
        for (int u = 0; u < t; u++)
            if (!strcmp(r->targets[u].name, tg->name)) {
                fprintf(stderr, "qkbench fleet submit: --target '%s' is given twice\n", tg->name);
                return 2;
            }
        if (!colon) continue;
        char *opts = strdup(colon + 1);
        if (!opts) return 2;
        int rc = 0;
        for (char *save = NULL, *tok = strtok_r(opts, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
            char where[96];
            snprintf(where, sizeof where, "--target %s", tg->name);
            if ((rc = check_sbatch_opt(tok, where))) break;
            strs_add(&tg->sbatch, tok);
        }
        free(opts);
        if (rc) return rc;
        if (tg->sbatch.n == 0) {
            fprintf(stderr, "qkbench fleet submit: --target '%s': no sbatch options after ':'\n", spec);
            return 2;
        }
    }
    return 0;
}

static int check_command(const fl_run *r) {
    const char *c = r->command.v[0];
    if (strcmp(c, "bench") && strcmp(c, "sweep") && strcmp(c, "accuracy")) {
        fprintf(stderr, "qkbench fleet submit: cannot shard '%s': the command after '--' must be bench, sweep or accuracy\n", c);
        return 2;
    }
    static const char *own[] = {"--shard", "--run-id", "--out", "--results", NULL};
    for (int i = 1; i < r->command.n; i++)
        for (int k = 0; own[k]; k++) {
            size_t l = strlen(own[k]);
            const char *a = r->command.v[i];
            if (!strncmp(a, own[k], l) && (a[l] == 0 || a[l] == '=')) {
                fprintf(stderr, "qkbench fleet submit: '%s' in the command: fleet submit gives every shard its --shard, --run-id and\n"
                                "  --results (set them with --shards N, --name NAME, --results DIR; each shard names its own folder)\n",
                        a);
                return 2;
            }
        }
    return 0;
}

static int ensure_dirs(const fl_run *r) {
    char p[PATH_MAX + 32], err[512];
    snprintf(p, sizeof p, "%s/fleet/logs", r->results);
    if (qkb_mkdirs(p, err, sizeof err)) {
        fprintf(stderr, "qkbench fleet submit: %s\n", err);
        return 2;
    }
    return 0;
}

static int submit_new(sub_opts *o, char **argv, int argc, const char *sbatch_path) {
    fl_run r;
    memset(&r, 0, sizeof r);
    for (int i = o->cmd_at; i < argc; i++) strs_add(&r.command, argv[i]);
    int rc = check_command(&r);
    if (!rc) rc = parse_targets(o, &r);
    if (rc) goto done;
    r.shards = o->shards ? o->shards : 1;
    char stamp[32];
    qkb_now(stamp, sizeof stamp, r.created, sizeof r.created);
    if (o->name) {
        if (!name_ok(o->name, sizeof r.name - 1)) {
            fprintf(stderr, "qkbench fleet submit: --name '%s': a run id is 1 to 64 characters of [A-Za-z0-9._-], not starting with '.' or '-'\n",
                    o->name);
            rc = 2;
            goto done;
        }
        snprintf(r.name, sizeof r.name, "%s", o->name);
    } else {
        snprintf(r.name, sizeof r.name, "%s-%s", r.command.v[0], stamp);
    }
    if (absolute(o->results ? o->results : qkb_results_root(), r.results, sizeof r.results)) {
        fprintf(stderr, "qkbench fleet submit: the results path is too long or the working directory is unknown\n");
        rc = 2;
        goto done;
    }
    if (o->qkbench) {
        if (absolute(o->qkbench, r.qkbench, sizeof r.qkbench)) rc = 2;
    } else {
        ssize_t k = readlink("/proc/self/exe", r.qkbench, sizeof r.qkbench - 1);
        if (k <= 0) {
            fprintf(stderr, "qkbench fleet submit: cannot read /proc/self/exe (%s); give --qkbench PATH\n", strerror(errno));
            rc = 2;
            goto done;
        }
        r.qkbench[k] = 0;
    }
    for (int i = 0; i < o->slurm.n; i++) strs_add(&r.sbatch, o->slurm.v[i]);
    if (gethostname(r.host, sizeof r.host - 1)) snprintf(r.host, sizeof r.host, "unknown");

    qkb_buf script = {0};
    script_text(&r, &script);
    if (script.oom) {
        rc = 2;
        goto done;
    }
    if (o->dry_run) {
        fputs(script.p, stdout);
        printf("# --dry-run: nothing written or submitted. fleet submit would write %s/fleet/%s.sbatch and %s.json, then run:\n",
               r.results, r.name, r.name);
        char array[32];
        snprintf(array, sizeof array, "1-%d", r.shards);
        for (int t = 0; t < r.ntargets; t++) {
            fl_strs a = {0};
            sbatch_argv(&r, sbatch_path ? sbatch_path : "sbatch", t, NULL, array, &a);
            print_cmd(stdout, "#   ", &a);
            strs_free(&a);
        }
        qkb_buf_free(&script);
        goto done;
    }
    char path[PATH_MAX + 128], err[512];
    snprintf(path, sizeof path, "%s/fleet/%s.json", r.results, r.name);
    struct stat st;
    if (stat(path, &st) == 0) {
        fprintf(stderr, "qkbench fleet submit: run '%s' exists already (%s): choose another --name, or resubmit its\n"
                        "  missing shards with --only-missing %s --name %s\n",
                r.name, path, r.results, r.name);
        qkb_buf_free(&script);
        rc = 2;
        goto done;
    }
    if ((rc = ensure_dirs(&r))) {
        qkb_buf_free(&script);
        goto done;
    }
    snprintf(path, sizeof path, "%s/fleet/%s.sbatch", r.results, r.name);
    if (qkb_write_atomic(path, script.p, script.n, err, sizeof err) || manifest_write(&r, err, sizeof err)) {
        fprintf(stderr, "qkbench fleet submit: %s\n", err);
        qkb_buf_free(&script);
        rc = 2;
        goto done;
    }
    qkb_buf_free(&script);
    printf("run %s: %s, %d shard%s, results %s\n", r.name, r.command.v[0], r.shards, r.shards > 1 ? "s" : "", r.results);
    char array[32];
    snprintf(array, sizeof array, "1-%d", r.shards);
    for (int t = 0; t < r.ntargets; t++) {
        rc |= submit_one(&r, sbatch_path, t, NULL, array, 0);
        if (manifest_write(&r, err, sizeof err)) {
            fprintf(stderr, "qkbench fleet submit: %s\n", err);
            rc = 1;
        }
    }
    printf("manifest %s/fleet/%s.json; logs %s/fleet/logs/\n", r.results, r.name, r.results);
    if (!rc) printf("when the jobs are done: qkbench fleet collect %s\n", r.results);
done:
    run_free(&r);
    return rc;
}

/* The manifest of run `name` in results root `dir` (or the only one there when name is NULL). */
static int find_manifest(const char *dir, const char *name, char *path, size_t n) {
    if (name) {
        if (!name_ok(name, 64)) {
            fprintf(stderr, "qkbench fleet submit: --name '%s': a run id is 1 to 64 characters of [A-Za-z0-9._-]\n", name);
            return 2;
        }
        snprintf(path, n, "%s/fleet/%s.json", dir, name);
        if (access(path, R_OK)) {
            fprintf(stderr, "qkbench fleet submit: --only-missing %s: no run '%s' (%s: %s)\n", dir, name, path, strerror(errno));
            return 2;
        }
        return 0;
    }
    char fd[PATH_MAX + 16];
    snprintf(fd, sizeof fd, "%s/fleet", dir);
    DIR *d = opendir(fd);
    if (!d) {
        fprintf(stderr, "qkbench fleet submit: --only-missing %s: no fleet runs there (%s: %s)\n", dir, fd, strerror(errno));
        return 2;
    }
    int found = 0;
    qkb_buf names = {0};
    for (struct dirent *e; (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        if (l < 6 || e->d_name[0] == '.' || strcmp(e->d_name + l - 5, ".json")) continue;
        if (!found++) snprintf(path, n, "%s/%s", fd, e->d_name);
        qkb_buf_printf(&names, " %.*s", (int)(l - 5), e->d_name);
    }
    closedir(d);
    int rc = 0;
    if (found != 1) {
        fprintf(stderr, "qkbench fleet submit: --only-missing %s: %s; say which with --name NAME%s%s\n", dir,
                found ? "several runs there" : "no fleet run there (no fleet/*.json)", found ? ":" : "", found && !names.oom ? names.p : "");
        rc = 2;
    }
    qkb_buf_free(&names);
    return rc;
}

/* Tasks of the run's jobs that Slurm still has pending or running: 1 (printed), 0 none, -1 unknown. */
static int still_queued(const fl_run *r, const char *sbatch) {
    char squeue[PATH_MAX];
    const char *slash = strrchr(sbatch, '/');
    snprintf(squeue, sizeof squeue, "%.*ssqueue", slash ? (int)(slash - sbatch + 1) : 0, sbatch);
    if (access(squeue, X_OK) && find_program("squeue", squeue, sizeof squeue)) return -1;
    qkb_buf ids = {0};
    for (int j = 0; j < r->njobs; j++) qkb_buf_printf(&ids, "%s%s", j ? "," : "", r->jobs[j].job_id);
    if (!r->njobs || ids.oom) {
        qkb_buf_free(&ids);
        return 0;
    }
    char *argv[] = {squeue, "-h", "-o", "%i %T", "-j", ids.p, NULL};
    char *out, *err;
    int rc = run_capture(argv, &out, &err);
    int res = -1;
    if (rc == 0 && out) {
        res = out[0] != 0;
        if (res)
            fprintf(stderr, "qkbench fleet submit: run %s still has tasks in the queue (jobs %s); wait for them or scancel\n"
                            "  them first:\n%s", r->name, ids.p, out);
    } else if (err && strstr(err, "Invalid job id")) {
        res = 0; /* every job left the controller's memory */
    }
    free(out);
    free(err);
    qkb_buf_free(&ids);
    return res;
}

static int submit_missing(sub_opts *o, const char *sbatch_path) {
    char path[PATH_MAX + 128], err[1024], dir[PATH_MAX];
    if (o->cmd_at || o->shards || o->ntargets || o->qkbench || o->results) {
        fprintf(stderr, "qkbench fleet submit: --only-missing takes the command, --shards, --target, --qkbench and --results from the\n"
                        "  run's manifest; give only --name and slurm options\n");
        return 2;
    }
    if (absolute(o->only_missing, dir, sizeof dir)) return 2;
    int rc = find_manifest(dir, o->name, path, sizeof path);
    if (rc) return rc;
    fl_run r;
    memset(&r, 0, sizeof r);
    if (manifest_read(path, &r, err, sizeof err)) {
        fprintf(stderr, "qkbench fleet submit: %s\n", err);
        run_free(&r);
        return 2;
    }
    if (r.njobs + r.ntargets > FL_MAX_JOBS) {
        fprintf(stderr, "qkbench fleet submit: run %s has been submitted %d times; start a new run\n", r.name, r.njobs);
        run_free(&r);
        return 2;
    }
    /* the results root may be mounted elsewhere here: where the manifest is wins */
    snprintf(r.results, sizeof r.results, "%s", dir);
    if (!o->dry_run && still_queued(&r, sbatch_path) == 1) {
        run_free(&r);
        return 2;
    }
    qkf_scan sc;
    if (qkf_scan_dir(dir, &sc, err, sizeof err)) {
        fprintf(stderr, "qkbench fleet submit: %s\n", err);
        run_free(&r);
        return 2;
    }
    /* per target, which shards are not complete */
    unsigned char *want = calloc((size_t)r.ntargets * (size_t)(r.shards + 1), 1);
    int *seen = calloc((size_t)r.ntargets, sizeof *seen);
    if (!want || !seen) {
        free(want);
        free(seen);
        qkf_scan_free(&sc);
        run_free(&r);
        return 2;
    }
    for (size_t gi = 0; gi < sc.n; gi++) {
        const qkf_group *g = &sc.g[gi];
        if (strcmp(g->run_id, r.name)) continue;
        int t = -1;
        for (int k = 0; k < r.ntargets; k++)
            if (!strcmp(g->target, r.targets[k].name)) t = k;
        if (t < 0 && !g->target[0] && r.ntargets == 1) t = 0;
        if (t < 0) {
            fprintf(stderr, "qkbench fleet submit: run %s: shards on %s belong to no target of the manifest (%s); skipped\n", r.name,
                    g->machine, g->target[0] ? g->target : "target unknown");
            continue;
        }
        if (g->of != r.shards) {
            fprintf(stderr, "qkbench fleet submit: run %s on %s has shards of %d, the manifest says %d; skipped\n", r.name, g->machine, g->of,
                    r.shards);
            continue;
        }
        seen[t] = 1;
        for (int k = 0; k < g->nmissing; k++)
            if (g->missing[k] >= 1 && g->missing[k] <= r.shards) want[(size_t)t * (size_t)(r.shards + 1) + (size_t)g->missing[k]] = 1;
    }
    for (int t = 0; t < r.ntargets; t++)
        if (!seen[t]) /* no shard of this target reported at all */
            for (int i = 1; i <= r.shards; i++) want[(size_t)t * (size_t)(r.shards + 1) + (size_t)i] = 1;
    qkf_scan_free(&sc);
    int total = 0;
    rc = 0;
    for (int t = 0; t < r.ntargets; t++) {
        qkb_buf arr = {0};
        int n = 0;
        for (int i = 1; i <= r.shards; i++)
            if (want[(size_t)t * (size_t)(r.shards + 1) + (size_t)i]) qkb_buf_printf(&arr, "%s%d", n++ ? "," : "", i);
        total += n;
        if (!n || arr.oom) {
            qkb_buf_free(&arr);
            continue;
        }
        if (o->dry_run) {
            fl_strs a = {0};
            sbatch_argv(&r, sbatch_path ? sbatch_path : "sbatch", t, &o->slurm, arr.p, &a);
            print_cmd(stdout, "", &a);
            strs_free(&a);
        } else {
            rc |= submit_one(&r, sbatch_path, t, &o->slurm, arr.p, 1);
            if (manifest_write(&r, err, sizeof err)) {
                fprintf(stderr, "qkbench fleet submit: %s\n", err);
                rc = 1;
            }
        }
        qkb_buf_free(&arr);
    }
    if (!total) printf("run %s: every shard of every target is complete; nothing to submit\n", r.name);
    else if (o->dry_run) printf("# --dry-run: run %s, %d shard%s to resubmit; nothing submitted\n", r.name, total, total > 1 ? "s" : "");
    else if (!rc) printf("run %s: %d shard%s resubmitted; then: qkbench fleet collect %s\n", r.name, total, total > 1 ? "s" : "", r.results);
    free(want);
    free(seen);
    run_free(&r);
    return rc;
}

int qk_fleet_submit(int argc, char **argv) {
    sub_opts o;
    memset(&o, 0, sizeof o);
    int rc = parse_submit(argc, argv, &o);
    if (rc) {
        strs_free(&o.slurm);
        return rc < 0 ? 0 : rc;
    }
    char sbatch[PATH_MAX];
    const char *sbatch_path = o.sbatch;
    if (!o.dry_run) {
        if (find_program(o.sbatch ? o.sbatch : "sbatch", sbatch, sizeof sbatch)) {
            if (o.sbatch)
                fprintf(stderr, "qkbench fleet submit: --sbatch %s: not an executable file\n", o.sbatch);
            else
                fprintf(stderr, "qkbench fleet submit: sbatch not found in PATH: this needs a Slurm client (Debian: slurm-client or\n"
                                "  slurm-wlm) on a host of the cluster; --dry-run prints the script without it\n");
            strs_free(&o.slurm);
            return 2;
        }
        sbatch_path = sbatch;
    }
    if (o.only_missing) {
        rc = submit_missing(&o, sbatch_path);
    } else if (!o.cmd_at) {
        fprintf(stderr, "qkbench fleet submit: give the command to run after '--' (e.g. qkbench fleet submit --shards 4 -- bench\n"
                        "  --suite quick), or --only-missing DIR\n");
        rc = 2;
    } else {
        rc = submit_new(&o, argv, argc, sbatch_path);
    }
    strs_free(&o.slurm);
    return rc;
}

/* ---- the dispatcher ---- */

static void fleet_help(FILE *f) {
    fprintf(f, "usage: qkbench fleet submit [options] -- COMMAND [ARGS...]   run COMMAND sharded on Slurm (an array job per target)\n"
               "       qkbench fleet submit --only-missing DIR [--name NAME]  resubmit the shards that did not complete\n"
               "       qkbench fleet collect DIR [options]                    merge the shards, per machine and across machines\n"
               "'qkbench fleet submit --help' and 'qkbench fleet collect --help' for their options.\n");
}

int qk_cmd_fleet(int argc, char **argv) {
    if (argc < 2) {
        fleet_help(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fleet_help(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "submit")) return qk_fleet_submit(argc - 1, argv + 1);
    if (!strcmp(argv[1], "collect")) return qk_fleet_collect(argc - 1, argv + 1);
    fprintf(stderr, "qkbench fleet: unknown subcommand '%s' (submit or collect)\n", argv[1]);
    fleet_help(stderr);
    return 2;
}
