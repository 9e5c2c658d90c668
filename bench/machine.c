/* machine.json: everything a result needs to be read later on another machine. */
#include "machine.h"

#include <hwloc.h>
#include <string.h>
#include <sys/utsname.h>

#include "emulation.h"
#include "qk/kernels.h"
#include "qk_build_config.h"
#include "qkb_build_info.h"
#include "results.h"
#include "topology.h"

static const struct {
    const char *tier, *flags;
} tier_flags[] = {QKB_TIER_FLAGS{NULL, NULL}};

static void cpu_json(qkw *w) {
    const qk_cpu_info *c = qk_cpu();
    qkw_key(w, "cpu");
    qkw_obj(w);
    qkw_kstr(w, "vendor", c->vendor);
    qkw_kstr(w, "brand", c->brand);
    qkw_kstr(w, "arch", c->is_x86 ? "x86_64" : c->is_arm ? "aarch64" : "other");
    if (c->is_x86) {
        char x[32];
        snprintf(x, sizeof x, "0x%llx", (unsigned long long)c->xcr0);
        qkw_kstr(w, "xcr0", c->xcr0_known ? x : NULL);
    }
    qkw_key(w, "features");
    qkw_obj(w);
    for (int f = 0; f < QK_F_COUNT; f++) {
        int arm = f >= QK_F_NEON;
        if ((arm && !c->is_arm) || (!arm && !c->is_x86)) continue;
        qkw_key(w, qk_feature_name((qk_feature)f));
        qkw_obj(w);
        qkw_kbool(w, "cpu", c->cpu_has[f]);
        qkw_kbool(w, "os", c->os_enabled[f]);
        qkw_end_obj(w);
    }
    qkw_end_obj(w);
    qkw_key(w, "tiers");
    qkw_obj(w);
    for (int t = 0; t < QK_TIER_COUNT; t++) {
        const char *why = qk_tier_unavailable_reason((qk_tier)t);
        qkw_kstr(w, qk_tier_name((qk_tier)t), why ? why : "usable");
    }
    qkw_end_obj(w);
    qkw_kstr(w, "tier_cap", qk_tier_name(qk_tier_cap()));
    qkw_end_obj(w);
}

static void emulation_json(qkw *w) {
    const qkb_emulation *e = qkb_emulation_get();
    qkw_kbool(w, "emulated", e->emulated);
    qkw_key(w, "emulation");
    qkw_obj(w);
    qkw_kbool(w, "emulated", e->emulated);
    qkw_kbool(w, "detected", e->detected);
    qkw_kstr(w, "method", e->method);
    qkw_kstr(w, "how", e->how);
    if (e->emulated) qkw_kstr(w, "note", QKB_EMULATED_LINE);
    qkw_end_obj(w);
}

static void topology_json(qkw *w) {
    const qk_topology *t = qk_topology_get();
    qkw_key(w, "topology");
    qkw_obj(w);
    qkw_kstr(w, "source", "hwloc " HWLOC_VERSION);
    qkw_kbool(w, "ok", t->ok);
    qkw_kint(w, "packages", t->packages);
    qkw_kint(w, "cores", t->cores);
    qkw_kint(w, "pus", t->pus);
    qkw_kint(w, "numa_nodes", t->numa_nodes);
    qkw_knum(w, "numa_bytes", (double)t->numa_bytes);
    qkw_key(w, "caches");
    qkw_arr(w);
    for (int i = 0; i < t->ncache; i++) {
        qkw_obj(w);
        qkw_kint(w, "level", t->cache[i].level);
        qkw_knum(w, "size_bytes", (double)t->cache[i].size);
        qkw_kint(w, "count", t->cache[i].count);
        qkw_kint(w, "line_bytes", t->cache[i].line);
        qkw_end_obj(w);
    }
    qkw_end_arr(w);
    qkw_kstr(w, "note", "cache sizes are hwloc's; the probe's levels are measured");
    qkw_end_obj(w);
}

static void build_json(qkw *w) {
    qkw_key(w, "build");
    qkw_obj(w);
    qkw_kstr(w, "qkbench_version", QK_VERSION);
    qkw_kstr(w, "commit", qkb_commit());
    qkw_kstr(w, "c_compiler", QK_COMPILER);
    qkw_kstr(w, "c_compiler_path", QKB_C_COMPILER);
    qkw_kstr(w, "cxx_compiler", QKB_CXX_COMPILER);
    qkw_kstr(w, "build_type", QK_BUILD_TYPE);
    qkw_kstr(w, "target", QK_TARGET_ARCH);
    qkw_kstr(w, "c_flags", QKB_C_FLAGS);
    qkw_kstr(w, "tiers_compiled", QKB_BUILT_TIERS);
    qkw_key(w, "tier_flags");
    qkw_obj(w);
    for (int i = 0; tier_flags[i].tier; i++) qkw_kstr(w, tier_flags[i].tier, tier_flags[i].flags);
    qkw_end_obj(w);
    qkw_kstr(w, "google_benchmark", QKB_BENCHMARK_VERSION);
    struct utsname u;
    if (uname(&u) == 0) {
        char os[300];
        snprintf(os, sizeof os, "%s %s %s", u.sysname, u.release, u.machine);
        qkw_kstr(w, "os", os);
        qkw_kstr(w, "host", u.nodename);
    }
    qkw_end_obj(w);
}

static void pick(qkw *w, const char *op, const char *fmt, const char *mode, const char *kernel) {
    qkw_obj(w);
    qkw_kstr(w, "op", op);
    if (fmt) qkw_kstr(w, "format", fmt);
    if (mode) qkw_kstr(w, "mode", mode);
    qkw_kstr(w, "kernel", kernel);
    qkw_end_obj(w);
}

static void dispatch_json(qkw *w) {
    qkw_key(w, "dispatch");
    qkw_arr(w);
    for (int f = 0; f < QK_FORMAT_COUNT; f++) {
        const qk_quantize_kernel *q = qk_pick_quantize((qk_format)f);
        const qk_dequantize_kernel *d = qk_pick_dequantize((qk_format)f);
        pick(w, "quantize", qk_format_name((qk_format)f), NULL, q ? q->name : NULL);
        pick(w, "dequantize", qk_format_name((qk_format)f), NULL, d ? d->name : NULL);
    }
    for (int r = QK_ACT_A8; r < QK_ACT_RULE_COUNT; r++) {
        const qk_actquant_kernel *a = qk_pick_actquant((qk_act_rule)r, QK_TIER_COUNT);
        pick(w, "actquant", qk_act_rule_name((qk_act_rule)r), NULL, a ? a->name : NULL);
    }
    for (int op = QK_OP_GEMV; op <= QK_OP_GEMM; op++)
        for (int m = 0; m < QK_MODE_COUNT; m++)
            for (int f = 0; f < QK_FORMAT_COUNT; f++) {
                if (!qk_mode_accepts((qk_mode)m, (qk_format)f)) continue;
                const qk_matmul_kernel *k = qk_pick_matmul((qk_op)op, (qk_format)f, (qk_mode)m);
                pick(w, op == QK_OP_GEMV ? "gemv" : "gemm", qk_format_name((qk_format)f), qk_mode_name((qk_mode)m), k ? k->name : NULL);
            }
    qkw_end_arr(w);
}

void qkb_machine_json(qkw *w, const qkb_limits *l) {
    char iso[40];
    qkb_now(NULL, 0, iso, sizeof iso);
    qkw_obj(w);
    qkw_kstr(w, "machine", qkb_machine_name());
    qkw_kstr(w, "date", iso);
    emulation_json(w);
    cpu_json(w);
    topology_json(w);
    build_json(w);
    qkw_key(w, "probe");
    if (l && l->ok) qkb_limits_json(w, l);
    else qkw_null(w);
    dispatch_json(w);
    qkw_end_obj(w);
}

int qkb_machine_write(const char *path, const qkb_limits *l, char *err, size_t errlen) {
    qkb_buf b = {0};
    qkw w;
    qkw_init(&w, &b);
    qkb_machine_json(&w, l);
    int rc = b.oom ? (snprintf(err, errlen, "out of memory"), -1) : qkb_write_atomic(path, b.p, b.n, err, errlen);
    qkb_buf_free(&b);
    return rc;
}
