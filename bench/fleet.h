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
///                       "only_missing": bool}]: every sbatch that ran, in order (a
///                       resubmission with --only-missing appends its jobs here)
///     job_id          the first job's id (null until sbatch answered)
///     host, created   where and when submit ran
#ifndef QKB_FLEET_H
#define QKB_FLEET_H

/// qkbench fleet submit [options] -- COMMAND ARGS...  (see its --help)
int qk_fleet_submit(int argc, char **argv);

#endif
