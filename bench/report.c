/* qkbench report DIR: plots of a results folder (roofline, bandwidth, speed-up
 * per tier, thread scaling) as PNG and SVG in DIR/plots/, drawn by matplotlib
 * through tools/qkbench_report.py. */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "commands.h"
#include "qkb_build_info.h"
#include "results.h"

extern char **environ;

static int readable(const char *p) { return p && access(p, R_OK) == 0; }

/* The plotting script: $QK_REPORT_SCRIPT, the source tree's tools/, or next to the installed binary. */
static const char *script_path(char *buf, size_t n) {
    const char *e = getenv("QK_REPORT_SCRIPT");
    if (readable(e)) return e;
    snprintf(buf, n, "%s/tools/qkbench_report.py", QKB_SOURCE_DIR);
    if (readable(buf)) return buf;
    char exe[1024];
    ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (l > 0) {
        exe[l] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = 0;
            snprintf(buf, n, "%s/../share/qkbench/qkbench_report.py", exe);
            if (readable(buf)) return buf;
        }
    }
    return NULL;
}

/* Run tools/qkbench_report.py with (a1, a2); quiet: its stdout to /dev/null. */
static int run_script(const char *a1, const char *a2, int quiet) {
    char sbuf[1200];
    const char *script = script_path(sbuf, sizeof sbuf);
    if (!script) {
        fprintf(stderr, "qkbench report: cannot find qkbench_report.py (set QK_REPORT_SCRIPT)\n");
        return 2;
    }
    const char *py = getenv("QK_PYTHON");
    if (!py || !*py) py = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
    char *args[] = {(char *)py, (char *)script, (char *)a1, (char *)a2, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (quiet) posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    fflush(stdout);
    int rc = posix_spawnp(&pid, py, &fa, NULL, args, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        fprintf(stderr, "qkbench report: cannot run %s (install python3 and python3-matplotlib)\n", py);
        return 2;
    }
    int st;
    if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st)) return 2;
    return WEXITSTATUS(st);
}

int qkb_report(const char *dir, int quiet) {
    char rj[1200];
    qkb_path(rj, sizeof rj, dir, "results.json");
    if (!readable(rj)) {
        fprintf(stderr, "qkbench report: %s is not a results folder (no results.json)\n", dir);
        return 2;
    }
    return run_script(dir, NULL, quiet);
}

int qkb_report_fleet(const char *out, int quiet) { return run_script("--fleet", out, quiet); }

int qk_cmd_report(int argc, char **argv) {
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: qkbench report DIR\n"
                   "Renders the plots of a results folder into DIR/plots/ as PNG and SVG:\n"
                   "  roofline           every matmul row (one thread) against the probe's limits\n"
                   "  bandwidth          quantize/dequantize/actquant/pack against the bandwidth of their level\n"
                   "  speedup            speed-up over the scalar reference per tier (the compact table's rows)\n"
                   "  roofline_fraction  %% of roofline per tier (the same rows)\n"
                   "  threads            time on 1 thread / time on N threads for rows measured at both\n"
                   "Uses matplotlib (Debian: python3-matplotlib) through tools/qkbench_report.py;\n"
                   "$QK_PYTHON picks the interpreter (default /usr/bin/python3).\n");
            return 0;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "qkbench report: unknown option '%s' (see qkbench report --help)\n", argv[i]);
            return 2;
        } else if (dir) {
            fprintf(stderr, "qkbench report: takes one results folder, got a second: '%s'\n", argv[i]);
            return 2;
        } else {
            dir = argv[i];
        }
    }
    if (!dir) {
        fprintf(stderr, "qkbench report: needs a results folder (see qkbench report --help)\n");
        return 2;
    }
    return qkb_report(dir, 0);
}
