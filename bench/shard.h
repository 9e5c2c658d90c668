/// Sharding a run (issue 8): `qkbench bench|sweep|accuracy --shard I/N
/// [--run-id NAME]` builds the command's full case list exactly as without
/// --shard, assigns every case to one of N shards (LPT greedy on the case's
/// expected cost: costliest case first, to the least loaded shard; ties broken
/// by name and by the lower shard index, costs in integer microseconds, so the
/// assignment is the same on every node), and runs only shard I. A shard
/// writes its own results folder
///   <results>/<machine>/<YYYYMMDD-HHMMSS>-<commit>-<run-id>-shard<I>of<N>/
/// (or --out DIR) with the command's usual files and shard.json:
///   command      "bench", "sweep" or "accuracy"
///   args         the command's arguments without --shard, --run-id, --out, --results
///   run_id       NAME (default "local")
///   shard, of    I and N
///   cases_total  cases of the full list
///   case_list_sha  FNV-1a 64 (hex) of the full ordered list of case names, one per line
///   cases        the names assigned to this shard, in run order
///   case_index   the position (0-based) of each of them in the full list
///   done         the names completed so far (a case that failed is not done)
///   failed       the names that failed
///   status       "running" (written at start and after every case), "complete", or
///                "failed" (a case failed, the run was interrupted or cancelled, or an error)
///   host, machine, commit, started, finished (ISO 8601; null while running)
///   slurm        {"job_id", "array_job_id", "array_task_id", "node"} as strings from
///                SLURM_JOB_ID, SLURM_ARRAY_JOB_ID, SLURM_ARRAY_TASK_ID, SLURMD_NODENAME
///                (null when unset); null outside Slurm
/// Every write is atomic (temporary file and rename).
#ifndef QKB_SHARD_H
#define QKB_SHARD_H
#include <stddef.h>

/// --shard I/N and --run-id NAME as given on the command line.
typedef struct qkb_shard_opts {
    int index, of;     ///< 1 <= index <= of; of = 0: not sharded
    char run_id[65];   ///< [A-Za-z0-9._-], 1 to 64 characters
} qkb_shard_opts;

/// If argv[*i] is --shard or --run-id, consume it and its value and return 1;
/// 0 if it is neither; -1 after printing "qkbench CMD: ..." for a bad value.
/// --run-id without --shard means --shard 1/1 (see qkb_shard_opts_finish).
int qkb_shard_take(qkb_shard_opts *s, const char *cmd, int argc, char **argv, int *i);
/// After parsing: default run id "local", and --run-id alone makes shard 1/1.
void qkb_shard_opts_finish(qkb_shard_opts *s);
/// Parse "I/N" (1 <= I <= N <= 100000). 0, or -1 with a message.
int qkb_shard_parse(const char *v, int *index, int *of, char *err, size_t errlen);
/// A valid run id? 0, or -1 with a message.
int qkb_run_id_check(const char *v, char *err, size_t errlen);

/// Assign n cases (names in their deterministic run order, expected costs in
/// seconds) to `of` shards; shard[i] gets the 1-based shard of case i.
void qkb_shard_assign(const char *const *names, const double *cost, size_t n, int of, int *shard);
/// FNV-1a 64 of the names, each followed by '\n', as 16 hex digits.
void qkb_case_list_hash(const char *const *names, size_t n, char out[17]);

/// The shard folder <results>/<machine>/<stamp>-<commit>-<run-id>-shard<I>of<N>, created
/// (with -2, -3, ... appended if another shard took that name in the same second).
int qkb_shard_make_dir(const qkb_shard_opts *s, char *out, size_t n, char *err, size_t errlen);

/// A running shard and its shard.json.
typedef struct qkb_shard_run {
    char path[1300];
    char command[16];
    char **args;
    int nargs;
    qkb_shard_opts opt;
    size_t total;
    char sha[17];
    char **cases;
    size_t ncases;
    size_t *pos;          ///< per case of this shard: its position in the full list
    unsigned char *state; ///< per case of this shard: 0 pending, 1 done, 2 failed
    char status[12];
    char started[40], finished[40];
} qkb_shard_run;

/// Start: keep the names of the cases assigned to shard s->index (all_names[i]
/// with shard[i] == s->index), and write dir/shard.json with status "running".
/// argv: the command's arguments (argv[0] the command name). 0, or -1 with a message.
int qkb_shard_begin(qkb_shard_run *r, const char *dir, const char *command, int argc, char **argv, const qkb_shard_opts *s,
                    const char *const *all_names, const int *shard, size_t n, char *err, size_t errlen);
/// A case finished (ok = 0: it failed): shard.json is rewritten. 0 or -1 (message on stderr).
int qkb_shard_case(qkb_shard_run *r, const char *name, int ok);
/// The end: status "complete" if every case is done and `ok`, else "failed". Frees r.
int qkb_shard_end(qkb_shard_run *r, int ok);
void qkb_shard_free(qkb_shard_run *r);
/// The help text of --shard and --run-id (for the commands' --help).
extern const char qkb_shard_help[];
#endif
