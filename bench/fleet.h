/// qkbench fleet (issue 8): run qkbench across machines with Slurm, and merge
/// the shards' results. `qk_cmd_fleet` (fleet.c) dispatches
///   qkbench fleet submit ...   fleet.c: write and submit the Slurm batch script
///   qkbench fleet collect ...  fleet_collect.c: merge shard folders, cross-machine table
///
/// What `fleet submit` writes in the shared results root DIR, for a run NAME
/// (the run id every shard carries in its shard.json):
///   DIR/fleet/NAME.sbatch   the batch script, one array task per shard: the
///                           task id is the shard index I (1..N) and the script's
///                           first argument is the target's name; it prints
///                           the line
///     qkbench-fleet: run=NAME target=T shard=I of=N job=A_I node=NODE cpus=C start=ISO
///                           to its log, runs
///     QKBENCH COMMAND --shard I/N --run-id NAME --results DIR ARGS...
///                           and then prints
///     qkbench-fleet: run=NAME target=T shard=I of=N job=A_I node=NODE exit=RC end=ISO
///   DIR/fleet/logs/NAME-%A_%a.out, .err   each task's stdout and stderr
///                           (%A the array job id, %a the task id = shard)
///   DIR/fleet/NAME.json     the manifest (written atomically):
///     name, run_id    NAME
///     command         [COMMAND, ARGS...] (qkbench's arguments, without the shard options)
///     shards          N
///     results         DIR (absolute); script; logs (DIR/fleet/logs/); qkbench (the binary the nodes run)
///     sbatch          sbatch options common to every target
///     targets         [{"name", "sbatch": [options of this target]}]; one array job per target
///     tasks           [{"index": k, "target": m, "shard": I}] for every target m and shard I
///     jobs            [{"job_id", "target": m, "array": "1-N" or "3,7", "submitted": ISO,
///                       "only_missing": bool, "sbatch": [options of this submission only]}]:
///                       every sbatch that ran, in order (a resubmission with --only-missing
///                       appends its jobs here)
///     job_id          the first job's id (null until sbatch answered)
///     host, created   where and when submit ran
///
/// The scan (fleet_scan.c) is what `fleet collect` checks and what
/// `fleet submit --only-missing` resubmits: it reads every shard folder (a
/// folder holding shard.json, see shard.h) under a results root, recursively,
/// the manifests DIR/fleet/*.json and the task logs DIR/fleet/logs/*.out.
#ifndef QKB_FLEET_H
#define QKB_FLEET_H
#include <stddef.h>
#include <stdio.h>

/// qkbench fleet submit [options] -- COMMAND ARGS...  (see its --help)
int qk_fleet_submit(int argc, char **argv);

/// qkbench fleet collect DIR [--out OUT]  (see its --help)
int qk_fleet_collect(int argc, char **argv);

/// What became of one shard index of a group.
typedef enum qkf_state {
    QKF_COMPLETE,   ///< a folder whose shard.json says "complete"
    QKF_INCOMPLETE, ///< only folders that say "running" or "failed" (or an unreadable shard.json)
    QKF_MISSING     ///< no folder at all (expected from N or a manifest)
} qkf_state;

/// One shard index I of a group. When several folders carry the same index
/// (a task resubmitted with --only-missing), the complete one that finished
/// last is chosen, else the latest attempt.
typedef struct qkf_shard {
    int index;            ///< I, 1..of
    qkf_state state;
    int attempts;         ///< folders found for this index
    char status[16];      ///< shard.json's status of the chosen attempt ("" if missing)
    char dir[1024];       ///< its folder ("" if missing)
    char host[256];       ///< host it ran on (shard.json), else the node from the task log ("" unknown)
    char node[128];       ///< Slurm node (shard.json's slurm.node or the log), "" unknown
    char job[64];         ///< Slurm job of the task: "ARRAYJOB_TASK" (or JOB), "" unknown
    char target[128];     ///< the manifest's target name, "" unknown
    int exit_code;        ///< the task's exit code from its log's end line, -1 unknown
    size_t ncases, ndone; ///< cases assigned, cases done
    int attempt;          ///< internal: the chosen attempt (-1 none)
} qkf_shard;

/// A group: the shards of one run on one machine, with one command and case
/// list: (machine, run_id, command, case_list_sha, of).
typedef struct qkf_group {
    char machine[96];     ///< machine key; "?" for a manifest target no shard reported from
    char run_id[72];
    char command[16];     ///< bench, sweep, accuracy
    char sha[24];         ///< case_list_sha ("" for a target with no shard folder)
    int of;               ///< N
    char **args;          ///< the command's arguments (without --shard/--run-id/--out/--results)
    int nargs;
    char target[128];     ///< the manifest's target the shards ran on ("" unknown)
    char manifest[1100];  ///< DIR/fleet/<run_id>.json if there is one ("" none)
    size_t cases_total;
    qkf_shard *shard;     ///< [of], shard[i].index == i + 1
    int *missing;         ///< the indices (1-based) not complete: missing or incomplete
    int nmissing;
    int complete;         ///< every shard complete and every case in exactly one shard
    char **problems;      ///< what is wrong, one line each (run, shard I/N, host/node, Slurm task)
    int nproblems;
} qkf_group;

typedef struct qkf_scan {
    qkf_group *g;
    size_t n;
    char **problems;      ///< problems not tied to one group (an unreadable shard.json, ...)
    int nproblems;
    void *priv;           ///< internal: the shard folders read
} qkf_scan;

/// Scan the results root dir. 0, or -1 with a message in err (dir unreadable).
int qkf_scan_dir(const char *dir, qkf_scan *out, char *err, size_t errlen);
void qkf_scan_free(qkf_scan *s);
/// Print the scan's groups and problems (what collect prints before merging).
/// Returns the number of problems.
int qkf_scan_print(const qkf_scan *s, FILE *f);

#endif
