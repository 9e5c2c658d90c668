/// `qkbench bench` and the default run (DESIGN §4, §6).
#ifndef QKB_BENCH_H
#define QKB_BENCH_H

/// The default run: info, probe, the quick suite and the accuracy summary,
/// a compact table on stdout, and a complete results folder.
int qkb_run_default(int argc, char **argv);
/// Render the plots of results folder dir into dir/plots (tools/qkbench_report.py).
/// quiet: do not list the files written. 0 on success.
int qkb_report(const char *dir, int quiet);
/// The cross-machine plots of a `qkbench fleet collect` folder (its fleet.json)
/// into out/plots (tools/qkbench_report.py --fleet). 0 on success.
int qkb_report_fleet(const char *out, int quiet);
#endif
