/* qkbench: the command-line program (DESIGN §6). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "commands.h"
#include "emulation.h"
#include "qk/kernels.h"
#include "qk_build_config.h"
#include "topology.h"

typedef int (*cmd_fn)(int argc, char **argv);

typedef struct command {
    const char *name;
    const char *summary;
    cmd_fn run;        /* NULL: not available yet */
    const char *issue; /* what will bring it */
} command;

static const command commands[] = {
    {"info", "CPU, features (and OS support), topology, and the kernel chosen for every op and mode", qk_cmd_info, NULL},
    {"probe", "measure this machine's limits: cache/DRAM bandwidth, FMA and int8-dot peaks", qk_cmd_probe, NULL},
    {"bench", "throughput of every kernel (Google Benchmark), with % of roofline", qk_cmd_bench, NULL},
    {"accuracy", "error against the FP32 reference, split into its sources", qk_cmd_accuracy, NULL},
    {"sweep", "every format x group size x tier: speed, bpw and error side by side", qk_cmd_sweep, NULL},
    {"depth", "error through a stack of quantized residual blocks", qk_cmd_depth, NULL},
    {"compare", "compare two result sets and flag regressions", qk_cmd_compare, NULL},
    {"report", "render plots from a results folder", qk_cmd_report, NULL},
    {"fleet", "run across machines with Slurm; collect and compare", qk_cmd_fleet, NULL},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f) {
    fprintf(f, "usage: qkbench [--isa TIER] <command> [options]\n"
               "       qkbench            the default run: info, probe, quick bench, accuracy summary -> results/\n\n"
               "commands:\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  %-9s %s%s\n", commands[i].name, commands[i].summary, commands[i].run ? "" : " [not available yet]");
    fprintf(f, "\noptions:\n"
               "  --isa TIER   cap the ISA tier (scalar, avx2, avxvnni, avx512, avx512vnni, neon, neondot, neoni8mm);\n"
               "               it can only remove tiers. QK_ISA=TIER in the environment does the same.\n"
               "  --help       this text; 'qkbench <command> --help' for a command's options\n");
}

/* --isa TIER: lower the cap; returns 0 or prints an error and returns 2. */
int qk_cli_apply_isa(const char *v) {
    qk_tier t;
    if (!v) {
        fprintf(stderr, "qkbench: --isa needs a tier name\n");
        return 2;
    }
    if (qk_tier_parse(v, &t) != QK_OK) {
        fprintf(stderr, "qkbench: --isa: %s\n", qk_last_error());
        return 2;
    }
    qk_set_tier_cap(t);
    return 0;
}

static void print_bytes(uint64_t b) {
    if (b >= (1ull << 30)) printf("%.1f GiB", (double)b / (1ull << 30));
    else if (b >= (1ull << 20)) printf("%.1f MiB", (double)b / (1ull << 20));
    else printf("%.0f KiB", (double)b / 1024);
}

int qk_cmd_info(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: qkbench info [--isa TIER]\n"
                   "Prints the CPU, each feature (whether the CPU has it and whether the OS enabled it),\n"
                   "the usable ISA tiers, the hwloc topology, and the kernel chosen for every op and mode.\n");
            return 0;
        } else if (!strcmp(argv[i], "--isa")) {
            if (qk_cli_apply_isa(i + 1 < argc ? argv[++i] : NULL)) return 2;
        } else {
            fprintf(stderr, "qkbench info: unknown option '%s' (see qkbench info --help)\n", argv[i]);
            return 2;
        }
    }
    const qk_cpu_info *c = qk_cpu();
    printf("qkbench %s (%s, %s build, target %s)\n\n", QK_VERSION, QK_COMPILER, QK_BUILD_TYPE, QK_TARGET_ARCH);
    printf("CPU: %s%s%s\n", c->brand[0] ? c->brand : "(unknown)", c->vendor[0] ? "  vendor " : "", c->vendor);
    const qkb_emulation *emu = qkb_emulation_get();
    if (emu->emulated) printf("%s (%s)\n", QKB_EMULATED_LINE, emu->how);
    else printf("emulation: none (%s)\n", emu->how);
    if (c->is_x86) printf("XCR0: %s0x%llx\n", c->xcr0_known ? "" : "(OSXSAVE off) ", (unsigned long long)c->xcr0);
    printf("\nfeatures (cpu = the CPU reports it; os = the OS enabled its register state):\n");
    for (int f = 0; f < QK_F_COUNT; f++) {
        int arm = f >= QK_F_NEON;
        if ((arm && !c->is_arm) || (!arm && !c->is_x86)) continue;
        printf("  %-11s cpu:%-3s os:%-3s%s\n", qk_feature_name((qk_feature)f), c->cpu_has[f] ? "yes" : "no",
               c->os_enabled[f] ? "yes" : "no", c->cpu_has[f] && !c->os_enabled[f] ? "  -> absent (not enabled by the OS)" : "");
    }
    const char *cap = qk_tier_cap() == QK_TIER_COUNT - 1 ? "none" : qk_tier_name(qk_tier_cap());
    printf("\ntiers (cap: %s):\n", cap);
    for (int t = 0; t < QK_TIER_COUNT; t++) {
        const char *why = qk_tier_unavailable_reason((qk_tier)t);
        if (!qk_tier_compiled((qk_tier)t) && ((c->is_x86 && t >= QK_TIER_NEON) || (c->is_arm && t >= QK_TIER_AVX2 && t <= QK_TIER_AVX512VNNI)))
            continue;
        printf("  %-11s %s\n", qk_tier_name((qk_tier)t), why ? why : "usable");
    }
    if (qk_isa_env_error()) printf("  warning: %s\n", qk_isa_env_error());

    const qk_topology *tp = qk_topology_get();
    printf("\ntopology (hwloc):\n");
    if (!tp->ok) {
        printf("  %s\n", tp->error);
    } else {
        printf("  packages %d, cores %d, PUs %d, NUMA nodes %d", tp->packages, tp->cores, tp->pus, tp->numa_nodes);
        if (tp->numa_bytes) {
            printf(" (");
            print_bytes(tp->numa_bytes);
            printf(")");
        }
        printf("\n");
        if (!tp->cache_sizes_known) printf("  caches: hwloc reports no cache sizes here (common in VMs); qkbench probe measures them\n");
        for (int i = 0; i < tp->ncache; i++) {
            const qk_cache_level *l = &tp->cache[i];
            printf("  L%d: %d x ", l->level, l->count);
            if (l->size) print_bytes(l->size);
            else printf("(size not reported)");
            if (l->line) printf(", %d-byte lines", l->line);
            printf("\n");
        }
        printf("  (sizes are what hwloc reports; in VMs they can be wrong: qkbench probe measures the real levels)\n");
    }

    printf("\nkernels chosen (cap: %s):\n", cap);
    for (int f = 0; f < QK_FORMAT_COUNT; f++) {
        const qk_quantize_kernel *q = qk_pick_quantize((qk_format)f);
        const qk_dequantize_kernel *d = qk_pick_dequantize((qk_format)f);
        printf("  quantize   %-5s  %s\n", qk_format_name((qk_format)f), q ? q->name : "(none)");
        printf("  dequantize %-5s  %s\n", qk_format_name((qk_format)f), d ? d->name : "(none)");
    }
    for (int r = QK_ACT_A8; r < QK_ACT_RULE_COUNT; r++) {
        const qk_actquant_kernel *a = qk_pick_actquant((qk_act_rule)r, QK_TIER_COUNT);
        printf("  actquant   %-5s  %s\n", qk_act_rule_name((qk_act_rule)r), a ? a->name : "(none)");
    }
    for (int op = QK_OP_GEMV; op <= QK_OP_GEMM; op++)
        for (int m = 0; m < QK_MODE_COUNT; m++)
            for (int f = 0; f < QK_FORMAT_COUNT; f++) {
                if (!qk_mode_accepts((qk_mode)m, (qk_format)f)) continue;
                const qk_matmul_kernel *k = qk_pick_matmul((qk_op)op, (qk_format)f, (qk_mode)m);
                printf("  %-4s %-9s %-5s  %s\n", op == QK_OP_GEMV ? "gemv" : "gemm", qk_mode_name((qk_mode)m),
                       qk_format_name((qk_format)f), k ? k->name : "(none)");
            }
    return 0;
}

/* The default run (bench/bench.c): info, probe, the quick suite, the accuracy summary. */
int qk_cmd_default(int argc, char **argv) { return qkb_run_default(argc, argv); }

int main(int argc, char **argv) {
    int i = 1;
    while (i < argc && argv[i][0] == '-') {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--isa")) {
            if (qk_cli_apply_isa(i + 1 < argc ? argv[i + 1] : NULL)) return 2;
            i += 2;
        } else {
            fprintf(stderr, "qkbench: unknown option '%s'\n\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (qk_isa_env_error()) {
        fprintf(stderr, "qkbench: %s (valid: scalar, avx2, avxvnni, avx512, avx512vnni, neon, neondot, neoni8mm)\n", qk_isa_env_error());
        return 2;
    }
    if (qkb_emulation_env_error()) {
        fprintf(stderr, "qkbench: %s\n", qkb_emulation_env_error());
        return 2;
    }
    if (i == argc) { /* the default run; grows with the benchmark and accuracy issues */
        char *args[] = {"qkbench", NULL};
        return qk_cmd_default(1, args);
    }
    for (size_t c = 0; c < NCOMMANDS; c++) {
        if (strcmp(argv[i], commands[c].name) != 0) continue;
        if (!commands[c].run) {
            fprintf(stderr, "qkbench %s: not available yet (it arrives with %s)\n", commands[c].name, commands[c].issue);
            return 2;
        }
        return commands[c].run(argc - i, argv + i);
    }
    fprintf(stderr, "qkbench: unknown command '%s'\n\n", argv[i]);
    usage(stderr);
    return 2;
}
