/// --shard I/N for `qkbench accuracy` and `qkbench sweep` (see shard.h). A
/// case is one (layer, format, group size, mode) with all its kernel variants
/// ("LAYER/FORMAT/gG/MODE", acc_cases): they share the quantized weights and
/// the exact math, so they stay together. The expected cost of a case is its
/// exact math and variant runs (2·M·N·K per variant and reference, at a
/// nominal 5 GOP/s) plus, when timed, each variant's repetitions.
#ifndef QK_ACC_SHARD_H
#define QK_ACC_SHARD_H

#include "acc_cli.h"
#include "acc_report.h"
#include "evaluate.h"
#include "shard.h"

typedef struct acc_shard {
    qkb_shard_opts opt;     ///< filled by qkb_shard_take; of = 0: not sharded
    int list;               ///< --list: print the (shard's) cases and stop
    char dir[1200];         ///< the shard's folder
    qkb_shard_run run;
    char **names;           ///< the full case list
    double *cost;
    size_t n, cap;
    int *assign;
    int timing;             ///< sweep: the cost includes timing
    double min_time;
    size_t reps;
    int oom;
} acc_shard;

/// Add the cases of one layer (N×K weights, M activation rows) to the full list.
void acc_shard_add_layer(acc_shard *s, const acc_opts *o, const char *layer, size_t M, size_t N, size_t K);
/// After every layer is added: assign the cases; with --list print them (the
/// shard's, or all when not sharded) and return 1; when sharded, create the
/// folder (--out, else <results>/<machine>/<date>-<commit>-<run-id>-shard<I>of<N>),
/// set o->out to it, write machine.json (with the cached probe, if any) and
/// shard.json (running). 0 to go on, 2 on an error (message printed).
int acc_shard_start(acc_shard *s, acc_opts *o, const char *cmd, int argc, char **argv);
/// For acc_eval_cfg.want / case_done (ctx: the acc_shard).
int acc_shard_want(acc_shard *s, const char *layer, qk_format f, size_t g, qk_mode m);
void acc_shard_done(acc_shard *s, const char *layer, qk_format f, size_t g, qk_mode m);
/// The end (ok: the run succeeded): shard.json complete or failed; frees s.
/// A SIGTERM or SIGINT during a sharded run lets the case in flight finish,
/// starts no other, and ends the shard "failed": then 128 + the signal is
/// returned (the exit status), else 0.
int acc_shard_end(acc_shard *s, int ok);

/// What `qkbench accuracy` and `qkbench sweep` give the evaluator as its ctx:
/// the rows so far, rewritten to the output files after every row.
typedef struct acc_run {
    acc_opts *o;
    acc_table t;
    acc_meta meta;
    const char *cmd; ///< "accuracy" or "sweep": the files' base name and the messages' prefix
    int want_svg;    ///< write <cmd>.svg too
    int files;       ///< write the output files after every row
    int failed_write; ///< a write failed (reported once; the run goes on)
    acc_shard *sh;   ///< NULL: not sharded
} acc_run;
/// Point cfg's callbacks and ctx at u: every row into u's table and files, the
/// notes printed unless quiet, the cases asked of u->sh when it is sharded.
void acc_run_hook(acc_run *u, acc_eval_cfg *cfg, int quiet);
#endif
