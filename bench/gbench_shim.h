/// A thin C interface to Google Benchmark (the only C++ in qkbench).
/// Benchmark cases are C functions registered by name; they loop on
/// qkb_gb_keep_running() and may set counters, a label, or skip with a reason.
/// Results come back to C through a callback, one call per run (repetition
/// or aggregate), as Google Benchmark reports them.
#ifndef QKB_GBENCH_SHIM_H
#define QKB_GBENCH_SHIM_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qkb_gb_state qkb_gb_state; ///< a benchmark::State
typedef void (*qkb_gb_fn)(qkb_gb_state *st, void *arg);

/// Initialize Google Benchmark with its own flags only (--benchmark_*=VALUE
/// and --v=N, in order: a later flag overrides an earlier one). Returns 0, or
/// 2 if a flag is unknown or malformed (the message is printed).
int qkb_gb_init(int nflags, char **flags);
/// 1 if `arg` is one of Google Benchmark's flags (starts with --benchmark_ or --v=).
int qkb_gb_is_flag(const char *arg);
/// Register a case. Real (wall-clock) time is what is measured.
void qkb_gb_register(const char *name, qkb_gb_fn fn, void *arg);
/// Add a key/value to the "context" of Google Benchmark's JSON.
void qkb_gb_context(const char *key, const char *value);

/// The state loop: `while (qkb_gb_keep_running(st)) { ... }`.
int qkb_gb_keep_running(qkb_gb_state *st);
void qkb_gb_pause(qkb_gb_state *st);
void qkb_gb_resume(qkb_gb_state *st);
/// Counter flags: a plain value, a value per second, or (value × iterations) per second.
enum { QKB_GB_PLAIN = 0, QKB_GB_RATE = 1, QKB_GB_ITER_RATE = 2, QKB_GB_AVG_ITER = 3 };
void qkb_gb_counter(qkb_gb_state *st, const char *name, double value, int flags);
void qkb_gb_label(qkb_gb_state *st, const char *label);
/// Skip this case with a reason (it is reported as an error run).
void qkb_gb_skip(qkb_gb_state *st, const char *why);
int64_t qkb_gb_iterations(const qkb_gb_state *st);

/// One run as Google Benchmark reports it.
typedef struct qkb_gb_run {
    const char *name;      ///< the registered name
    const char *aggregate; ///< "" for a repetition; "mean", "median", "stddev", "cv" for aggregates
    int64_t repetition_index, repetitions;
    int64_t iterations;
    double real_s, cpu_s;  ///< per iteration, seconds
    int error;
    const char *error_message;
} qkb_gb_run;
typedef void (*qkb_gb_report_fn)(const qkb_gb_run *run, void *ctx);

/// Run the registered cases (those --benchmark_filter keeps). Every run goes
/// to `report`; Google Benchmark's own JSON goes to `json_path` unless the
/// user passed --benchmark_out (then to theirs). Returns the number of cases run.
size_t qkb_gb_run_all(const char *json_path, qkb_gb_report_fn report, void *ctx);
/// 1 if the user passed --benchmark_out; its path in *path.
int qkb_gb_user_out(const char **path);
/// 1 if the user passed --benchmark_list_tests=true (only names are printed).
int qkb_gb_list_only(void);
void qkb_gb_shutdown(void);

#ifdef __cplusplus
}
#endif
#endif
