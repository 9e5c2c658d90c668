/// `qkbench bench` and the default run (DESIGN §4, §6).
#ifndef QKB_BENCH_H
#define QKB_BENCH_H

/// The default run: info, probe, the quick suite and the accuracy summary,
/// a compact table on stdout, and a complete results folder.
int qkb_run_default(int argc, char **argv);
#endif
