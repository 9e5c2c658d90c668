/// Where results go and how they are written (DESIGN §6):
/// <root>/<machine>/<date>-<commit>/ with machine.json, Google Benchmark's
/// JSON, results.json, results.csv and summary.md. Every file is written to a
/// temporary name in the same folder, flushed, and renamed into place, so a
/// reader never sees half a file.
#ifndef QKB_RESULTS_H
#define QKB_RESULTS_H
#include <stddef.h>

/// Root folder of all results: set by --results, else $QK_RESULTS, else "results".
const char *qkb_results_root(void);
void qkb_set_results_root(const char *dir);
/// Machine name: $QK_MACHINE, else a slug of the CPU brand and core count ("oxide-virtual-turin-like-2c").
const char *qkb_machine_name(void);
/// The CPU's brand string without its padding ("unknown CPU" if none).
const char *qkb_cpu_brand(void);
/// Short commit of the source tree, "-dirty" when tracked files changed; "nogit" outside git.
const char *qkb_commit(void);
/// Local time as "YYYYMMDD-HHMMSS" (for folder names) and ISO 8601 (for files).
void qkb_now(char *stamp, size_t n, char *iso, size_t niso);
/// mkdir -p. 0 on success; else a message in err.
int qkb_mkdirs(const char *path, char *err, size_t errlen);
/// Create a fresh run folder <root>/<machine>/<stamp>-<commit>; its path in out.
int qkb_make_run_dir(char *out, size_t n, char *err, size_t errlen);
/// Write n bytes to path atomically (temp file, fsync, rename). 0 on success; else a message in err.
int qkb_write_atomic(const char *path, const void *data, size_t n, char *err, size_t errlen);
/// path = dir + "/" + name
void qkb_path(char *out, size_t n, const char *dir, const char *name);
/// Seconds on a monotonic clock.
double qkb_seconds(void);
/// 1 if stderr is a terminal (progress lines go there only then).
int qkb_tty(void);
#endif
