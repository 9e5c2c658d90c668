/* Result folders, names and atomic writes. */
#include "results.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pool.h"
#include "qk/qk.h"
#include "qkb_build_info.h"

static char root[1024];

const char *qkb_results_root(void) {
    if (root[0]) return root;
    const char *e = getenv("QK_RESULTS");
    return e && *e ? e : "results";
}

void qkb_set_results_root(const char *dir) { snprintf(root, sizeof root, "%s", dir); }

static char machine[96];
static pthread_once_t machine_once = PTHREAD_ONCE_INIT;

static void make_machine(void) {
    const char *e = getenv("QK_MACHINE");
    if (e && *e) {
        snprintf(machine, sizeof machine, "%s", e);
        return;
    }
    const char *brand = qk_cpu()->brand[0] ? qk_cpu()->brand : "unknown-cpu";
    size_t n = 0;
    int dash = 1;
    for (const char *p = brand; *p && n < 60; p++) {
        if (isalnum((unsigned char)*p)) {
            machine[n++] = (char)tolower((unsigned char)*p);
            dash = 0;
        } else if (!dash) {
            machine[n++] = '-';
            dash = 1;
        }
    }
    while (n && machine[n - 1] == '-') n--;
    snprintf(machine + n, sizeof machine - n, "-%dc", qkb_ncores());
}

const char *qkb_machine_name(void) {
    pthread_once(&machine_once, make_machine);
    return machine;
}

static char brand[64];
static pthread_once_t brand_once = PTHREAD_ONCE_INIT;

static void make_brand(void) {
    const char *b = qk_cpu()->brand;
    while (*b == ' ') b++;
    snprintf(brand, sizeof brand, "%s", *b ? b : "unknown CPU");
    for (size_t k = strlen(brand); k && brand[k - 1] == ' '; k--) brand[k - 1] = 0;
}

const char *qkb_cpu_brand(void) {
    pthread_once(&brand_once, make_brand);
    return brand;
}

static char commit[64];
static pthread_once_t commit_once = PTHREAD_ONCE_INIT;

static int run_line(const char *cmd, char *out, size_t n) {
    FILE *f = popen(cmd, "r");
    if (!f) return -1;
    out[0] = 0;
    if (!fgets(out, (int)n, f)) out[0] = 0;
    int rc = pclose(f);
    out[strcspn(out, "\r\n")] = 0;
    return rc;
}

static void make_commit(void) {
    char cmd[1200], line[64];
    snprintf(cmd, sizeof cmd, "git -C '%s' rev-parse --short=10 HEAD 2>/dev/null", QKB_SOURCE_DIR);
    if (run_line(cmd, line, sizeof line) != 0 || !line[0]) {
        snprintf(commit, sizeof commit, "nogit");
        return;
    }
    /* dirty: the sources differ from HEAD (results/, which runs and the probe cache write to, does not count) */
    snprintf(cmd, sizeof cmd, "git -C '%s' diff --quiet HEAD -- . ':(exclude)results' 2>/dev/null; echo $?", QKB_SOURCE_DIR);
    char dirty[8];
    run_line(cmd, dirty, sizeof dirty);
    snprintf(commit, sizeof commit, "%s%s", line, strcmp(dirty, "0") ? "-dirty" : "");
}

const char *qkb_commit(void) {
    pthread_once(&commit_once, make_commit);
    return commit;
}

void qkb_now(char *stamp, size_t n, char *iso, size_t niso) {
    time_t t = time(NULL);
    struct tm tm;
    localtime_r(&t, &tm);
    if (stamp) strftime(stamp, n, "%Y%m%d-%H%M%S", &tm);
    if (iso) strftime(iso, niso, "%Y-%m-%dT%H:%M:%S%z", &tm);
}

int qkb_mkdirs(const char *path, char *err, size_t errlen) {
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1;; p++) {
        if (*p == '/' || *p == 0) {
            char c = *p;
            *p = 0;
            if (mkdir(tmp, 0777) != 0 && errno != EEXIST) {
                snprintf(err, errlen, "cannot create folder %s: %s", tmp, strerror(errno));
                return -1;
            }
            *p = c;
            if (!c) break;
        }
    }
    return 0;
}

int qkb_make_run_dir(char *out, size_t n, char *err, size_t errlen) {
    char stamp[32];
    qkb_now(stamp, sizeof stamp, NULL, 0);
    snprintf(out, n, "%s/%s/%s-%s", qkb_results_root(), qkb_machine_name(), stamp, qkb_commit());
    return qkb_mkdirs(out, err, errlen);
}

int qkb_write_atomic(const char *path, const void *data, size_t n, char *err, size_t errlen) {
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0) {
        snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
        return -1;
    }
    const char *p = data;
    size_t left = n;
    while (left) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
            close(fd);
            unlink(tmp);
            return -1;
        }
        p += w;
        left -= (size_t)w;
    }
    fsync(fd);
    close(fd);
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

void qkb_path(char *out, size_t n, const char *dir, const char *name) { snprintf(out, n, "%s/%s", dir, name); }

double qkb_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int qkb_tty(void) { return isatty(2); }
