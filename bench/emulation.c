/* Emulated-CPU detection (see emulation.h): what the process sees of its CPU
 * (CPUID or HWCAP, through qk_cpu()) against what /proc/cpuinfo says. */
#include "emulation.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qk/qk.h"

static qkb_emulation emu;
static char env_error[160];
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* x86 flags in /proc/cpuinfo, by qk_feature (NULL: not an x86 feature). */
static const char *const x86_flag[QK_F_COUNT] = {
    [QK_F_SSE2] = "sse2", [QK_F_AVX] = "avx", [QK_F_AVX2] = "avx2", [QK_F_FMA] = "fma", [QK_F_F16C] = "f16c",
    [QK_F_AVXVNNI] = "avx_vnni", [QK_F_AVX512F] = "avx512f", [QK_F_AVX512BW] = "avx512bw", [QK_F_AVX512DQ] = "avx512dq",
    [QK_F_AVX512VL] = "avx512vl", [QK_F_AVX512VNNI] = "avx512_vnni", [QK_F_AVX512BF16] = "avx512_bf16"};
static const char *const arm_feature[QK_F_COUNT] = {[QK_F_NEON] = "asimd", [QK_F_DOTPROD] = "asimddp", [QK_F_I8MM] = "i8mm"};

static int has_word(const char *list, const char *w) {
    size_t n = strlen(w);
    for (const char *p = list; (p = strstr(p, w)) != NULL; p += n)
        if ((p == list || p[-1] == ' ' || p[-1] == '\t' || p[-1] == ':') && (p[n] == 0 || p[n] == ' ' || p[n] == '\n'))
            return 1;
    return 0;
}

/* What /proc/cpuinfo holds: x86 vendor and, per feature, on how many processors it is listed. */
typedef struct cpuinfo {
    int ok, procs, x86, arm;
    char vendor[32];
    int listed[QK_F_COUNT];
} cpuinfo;

static void read_cpuinfo(cpuinfo *ci) {
    memset(ci, 0, sizeof *ci);
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    ci->ok = 1;
    char line[8192];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon) continue;
        const char *v = colon + 1;
        while (*v == ' ' || *v == '\t') v++;
        if (!strncmp(line, "vendor_id", 9)) {
            ci->x86 = 1;
            if (!ci->vendor[0]) {
                snprintf(ci->vendor, sizeof ci->vendor, "%s", v);
                ci->vendor[strcspn(ci->vendor, " \t\n")] = 0;
            }
        } else if (!strncmp(line, "flags", 5) && (line[5] == ' ' || line[5] == '\t')) {
            ci->x86 = 1;
            ci->procs++;
            for (int k = 0; k < QK_F_COUNT; k++)
                if (x86_flag[k] && has_word(v, x86_flag[k])) ci->listed[k]++;
        } else if (!strncmp(line, "Features", 8)) {
            ci->arm = 1;
            ci->procs++;
            for (int k = 0; k < QK_F_COUNT; k++)
                if (arm_feature[k] && has_word(v, arm_feature[k])) ci->listed[k]++;
        } else if (!strncmp(line, "CPU implementer", 15)) {
            ci->arm = 1;
        }
    }
    fclose(f);
}

static void detect(void) {
    const qk_cpu_info *c = qk_cpu();
    cpuinfo ci;
    read_cpuinfo(&ci);
    const char *self = c->is_x86 ? "x86_64" : c->is_arm ? "aarch64" : NULL;
    emu.method = "none";
    if (!ci.ok) {
        emu.method = "unknown";
        snprintf(emu.how, sizeof emu.how, "/proc/cpuinfo is not readable: assumed native (QK_EMULATED=1 labels the timings)");
    } else if (!self) {
        snprintf(emu.how, sizeof emu.how, "no detection for this architecture: assumed native (QK_EMULATED=1 labels the timings)");
    } else if ((c->is_arm && !ci.arm) || (c->is_x86 && !ci.x86)) {
        emu.detected = 1;
        emu.method = "arch";
        snprintf(emu.how, sizeof emu.how, "this binary runs as %s but /proc/cpuinfo describes %s%s%s", self,
                 ci.x86 ? "an x86 CPU (vendor_id " : ci.arm ? "an Arm CPU" : "another architecture", ci.x86 ? ci.vendor : "",
                 ci.x86 ? ")" : "");
    } else if (c->is_x86 && ci.vendor[0] && strcmp(ci.vendor, c->vendor) != 0) {
        emu.detected = 1;
        emu.method = "vendor";
        snprintf(emu.how, sizeof emu.how, "CPUID says vendor %s, /proc/cpuinfo says %s", c->vendor, ci.vendor);
    } else {
        char diff[200] = "";
        size_t dl = 0;
        for (int k = 0; k < QK_F_COUNT && ci.procs; k++) {
            int listed = ci.listed[k] == ci.procs;
            int mismatch = c->is_x86 ? x86_flag[k] && listed && !c->cpu_has[k]
                                     : arm_feature[k] && listed != (c->cpu_has[k] != 0);
            if (mismatch && dl < sizeof diff)
                dl += (size_t)snprintf(diff + dl, sizeof diff - dl, "%s%s", dl ? ", " : "", c->is_x86 ? x86_flag[k] : arm_feature[k]);
        }
        if (diff[0]) {
            emu.detected = 1;
            emu.method = "features";
            snprintf(emu.how, sizeof emu.how, "%s and /proc/cpuinfo disagree on %s", c->is_x86 ? "CPUID" : "HWCAP", diff);
        } else {
            snprintf(emu.how, sizeof emu.how, "%s and /proc/cpuinfo agree (architecture, %sISA features)", c->is_x86 ? "CPUID" : "HWCAP",
                     c->is_x86 ? "vendor, " : "");
        }
    }
    emu.emulated = emu.detected;
    const char *e = getenv("QK_EMULATED");
    if (e && *e) {
        if (strcmp(e, "1") && strcmp(e, "0")) {
            snprintf(env_error, sizeof env_error, "QK_EMULATED=%.40s: expected 1 (emulated) or 0 (native)", e);
            return;
        }
        char det[sizeof emu.how];
        snprintf(det, sizeof det, "%s", emu.how);
        emu.emulated = e[0] == '1';
        emu.method = "env";
        snprintf(emu.how, sizeof emu.how, "QK_EMULATED=%s (detection: %s%.250s)", e, emu.detected ? "emulated, " : "native, ", det);
    }
}

const qkb_emulation *qkb_emulation_get(void) {
    pthread_once(&once, detect);
    return &emu;
}

const char *qkb_emulation_env_error(void) {
    qkb_emulation_get();
    return env_error[0] ? env_error : NULL;
}
