/* Detection and dispatch.
 *  - QK_EXPECT_TIER=<tier> (set for the emulated runs): the best usable tier
 *    must be exactly that one.
 *  - Natively on Linux/x86, detection agrees with /proc/cpuinfo's flags.
 *  - The cap is lowered step by step (uncapped, avx512vnni, avx2, scalar on
 *    x86; neondot, neon, scalar on Arm): at each cap every op and mode picks
 *    the first listed variant whose tier is usable and <= the cap, its name
 *    ends in that tier, and the cap can never be raised again.
 *  - QK_EXPECT_CAP=<tier> (set together with QK_ISA): the environment cap holds.
 *  - QK_EXPECT_ISA_ERROR=1: an unknown QK_ISA is reported and caps at scalar. */
#include "test_util.h"

static qk_tier best_usable(void) {
    qk_tier best = QK_TIER_SCALAR;
    for (int t = 0; t < QK_TIER_COUNT; t++)
        if (qk_tier_allowed((qk_tier)t)) best = (qk_tier)t;
    return best;
}

static int ends_with_tier(const char *name, qk_tier t) {
    char suffix[32];
    snprintf(suffix, sizeof suffix, "__%s", qk_tier_name(t));
    size_t n = strlen(name), s = strlen(suffix);
    return n >= s && strcmp(name + n - s, suffix) == 0;
}

/* The variant the rule "first usable at or below the cap" must choose. */
static const qk_matmul_kernel *expected_matmul(qk_op op, qk_format f, qk_mode m) {
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < qk_matmul_kernel_count; i++) {
            const qk_matmul_kernel *k = &qk_matmul_kernels[i];
            qk_op want = pass ? QK_OP_GEMM : op;
            if (k->format == f && k->mode == m && k->op == want && !qk_tier_unavailable_reason(k->tier)) return k;
        }
    return NULL;
}

static void check_choices(qk_tier cap) {
    char ctx[64];
    snprintf(ctx, sizeof ctx, "cap %s", qk_tier_name(cap));
    tu_context = ctx;
    int nchecked = 0;
    for (int f = 0; f < QK_FORMAT_COUNT; f++) {
        const qk_quantize_kernel *q = qk_pick_quantize((qk_format)f);
        CHECK(q && (int)q->format == f && q->tier <= cap && qk_tier_allowed(q->tier), "quantize %s", qk_format_name((qk_format)f));
        if (q) CHECK(ends_with_tier(q->name, q->tier), "name %s does not end in its tier", q->name);
        for (size_t i = 0; q && i < qk_quantize_kernel_count; i++) /* nothing listed earlier was usable */
            if (&qk_quantize_kernels[i] == q) break;
            else CHECK((int)qk_quantize_kernels[i].format != f || !qk_tier_allowed(qk_quantize_kernels[i].tier),
                       "%s skipped the usable %s", q->name, qk_quantize_kernels[i].name);
        const qk_dequantize_kernel *d = qk_pick_dequantize((qk_format)f);
        CHECK(d && (int)d->format == f && d->tier <= cap, "dequantize %s", qk_format_name((qk_format)f));
        nchecked += 2;
    }
    for (int op = QK_OP_GEMV; op <= QK_OP_GEMM; op++)
        for (int m = 0; m < QK_MODE_COUNT; m++)
            for (int f = 0; f < QK_FORMAT_COUNT; f++) {
                const qk_matmul_kernel *k = qk_pick_matmul((qk_op)op, (qk_format)f, (qk_mode)m);
                if (!qk_mode_accepts((qk_mode)m, (qk_format)f)) {
                    CHECK(k == NULL, "%s picked for a mode that does not take the format", k ? k->name : "");
                    continue;
                }
                const qk_matmul_kernel *e = expected_matmul((qk_op)op, (qk_format)f, (qk_mode)m);
                CHECK(k != NULL && k == e, "%s %s %s: picked %s, expected %s", op ? "gemm" : "gemv", qk_mode_name((qk_mode)m),
                      qk_format_name((qk_format)f), k ? k->name : "none", e ? e->name : "none");
                if (k) {
                    CHECK(k->tier <= cap && ends_with_tier(k->name, k->tier), "%s above cap or misnamed", k->name);
                    printf("  %-9s %-4s %-10s %-5s -> %s\n", qk_tier_name(cap), op ? "gemm" : "gemv", qk_mode_name((qk_mode)m),
                           qk_format_name((qk_format)f), k->name);
                }
                nchecked++;
            }
    for (int r = QK_ACT_A8; r < QK_ACT_RULE_COUNT; r++) {
        const qk_actquant_kernel *a = qk_pick_actquant((qk_act_rule)r, QK_TIER_COUNT);
        CHECK(a && a->tier <= cap, "actquant %s", qk_act_rule_name((qk_act_rule)r));
    }
    if (cap == QK_TIER_SCALAR) /* everything scalar: the reference covers every op and mode */
        for (int op = QK_OP_GEMV; op <= QK_OP_GEMM; op++)
            for (int m = 0; m < QK_MODE_COUNT; m++)
                for (int f = 0; f < QK_FORMAT_COUNT; f++) {
                    const qk_matmul_kernel *k = qk_pick_matmul((qk_op)op, (qk_format)f, (qk_mode)m);
                    if (k) CHECK(k->tier == QK_TIER_SCALAR, "%s at cap scalar", k->name);
                }
    printf("cap %-10s: %d choices checked\n", qk_tier_name(cap), nchecked);
    tu_context = "";
}

#if defined(__linux__) && defined(__x86_64__)
static int cpuinfo_has(const char *flag) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return -1;
    char line[8192];
    int found = 0;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "flags", 5)) {
            char pat[64];
            snprintf(pat, sizeof pat, " %s", flag);
            char *p = line;
            while ((p = strstr(p, pat))) {
                char c = p[strlen(pat)];
                if (c == ' ' || c == '\n' || c == 0) {
                    found = 1;
                    break;
                }
                p++;
            }
            break;
        }
    fclose(f);
    return found;
}
#endif

int main(void) {
    const char *expect = getenv("QK_EXPECT_TIER"), *expect_cap = getenv("QK_EXPECT_CAP"), *expect_err = getenv("QK_EXPECT_ISA_ERROR");
    const qk_cpu_info *c = qk_cpu();
    printf("CPU: %s; tiers usable:", c->brand);
    for (int t = 0; t < QK_TIER_COUNT; t++)
        if ((c->tiers >> t) & 1) printf(" %s", qk_tier_name((qk_tier)t));
    printf("\n");

    /* every tier is usable exactly when the CPU has, and the OS enabled, each
     * feature the tier's instructions need (DESIGN §1; stated here, not read
     * from arch/cpu.c's table) */
    static const struct { qk_tier t; qk_feature need[8]; } needs[] = {
        {QK_TIER_AVX2, {QK_F_AVX2, QK_F_FMA, QK_F_F16C, QK_F_COUNT}},
        {QK_TIER_AVXVNNI, {QK_F_AVX2, QK_F_FMA, QK_F_F16C, QK_F_AVXVNNI, QK_F_COUNT}},
        {QK_TIER_AVX512, {QK_F_AVX2, QK_F_FMA, QK_F_F16C, QK_F_AVX512F, QK_F_AVX512BW, QK_F_AVX512DQ, QK_F_AVX512VL, QK_F_COUNT}},
        {QK_TIER_AVX512VNNI, {QK_F_AVX2, QK_F_FMA, QK_F_F16C, QK_F_AVX512F, QK_F_AVX512BW, QK_F_AVX512DQ, QK_F_AVX512VL, QK_F_AVX512VNNI}},
        {QK_TIER_NEON, {QK_F_NEON, QK_F_COUNT}},
        {QK_TIER_NEONDOT, {QK_F_NEON, QK_F_DOTPROD, QK_F_COUNT}},
        {QK_TIER_NEONI8MM, {QK_F_NEON, QK_F_DOTPROD, QK_F_I8MM, QK_F_COUNT}},
    };
    CHECK(c->tiers & 1u, "scalar is not usable");
    for (size_t i = 0; i < sizeof needs / sizeof needs[0]; i++) {
        int want = 1;
        for (int j = 0; j < 8 && needs[i].need[j] != QK_F_COUNT; j++)
            want &= c->cpu_has[needs[i].need[j]] && c->os_enabled[needs[i].need[j]];
        CHECK(((c->tiers >> needs[i].t) & 1) == (uint32_t)want, "tier %s usable = %u, its features say %d", qk_tier_name(needs[i].t),
              (c->tiers >> needs[i].t) & 1, want);
    }
    CHECK(c->brand[0] != 0, "no CPU name");
    /* and a tier that is not usable says why: not compiled, or the first feature it lacks */
    for (int t = 0; t < QK_TIER_COUNT; t++) {
        const char *why = qk_tier_unavailable_reason((qk_tier)t);
        if (!qk_tier_compiled((qk_tier)t)) {
            CHECK(why && strstr(why, "not compiled"), "tier %s is not compiled, reason '%s'", qk_tier_name((qk_tier)t), why ? why : "");
        } else if (!((c->tiers >> t) & 1)) {
            int named = 0;
            for (int f = 0; f < QK_F_COUNT && why; f++) {
                char lacks[64], off[64];
                snprintf(lacks, sizeof lacks, "CPU lacks %s", qk_feature_name((qk_feature)f));
                snprintf(off, sizeof off, "OS has not enabled %s state", qk_feature_name((qk_feature)f));
                if (!strcmp(why, lacks)) named = !c->cpu_has[f];
                if (!strncmp(why, off, strlen(off))) named = c->cpu_has[f] && !c->os_enabled[f];
            }
            CHECK(named, "tier %s is not usable, reason '%s' does not name a feature it lacks", qk_tier_name((qk_tier)t), why ? why : "");
        }
    }
    CHECK(qk_tier_unavailable_reason((qk_tier)QK_TIER_COUNT) && !strcmp(qk_tier_unavailable_reason((qk_tier)QK_TIER_COUNT), "unknown tier"),
          "an unknown tier");

    if (expect_err) {
        CHECK(qk_isa_env_error() != NULL, "an unknown QK_ISA was not reported");
        CHECK(qk_tier_cap() == QK_TIER_SCALAR, "an unknown QK_ISA must cap at scalar, cap is %s", qk_tier_name(qk_tier_cap()));
        return tu_finish("test_dispatch");
    }
    CHECK(qk_isa_env_error() == NULL, "QK_ISA error: %s", qk_isa_env_error());
    if (expect_cap) {
        qk_tier t;
        CHECK(qk_tier_parse(expect_cap, &t) == QK_OK, "QK_EXPECT_CAP=%s", expect_cap);
        CHECK(qk_tier_cap() == t, "cap %s, expected %s from QK_ISA", qk_tier_name(qk_tier_cap()), expect_cap);
        check_choices(qk_tier_cap());
        CHECK(qk_set_tier_cap(QK_TIER_COUNT - 1) == t, "the cap went up");
        return tu_finish("test_dispatch");
    }
    if (expect) {
        qk_tier t;
        CHECK(qk_tier_parse(expect, &t) == QK_OK, "QK_EXPECT_TIER=%s", expect);
        CHECK(best_usable() == t, "best usable tier is %s, expected %s", qk_tier_name(best_usable()), expect);
    }
#if defined(__linux__) && defined(__x86_64__)
    else {
        /* natively, detection agrees with the kernel's view of the CPU */
        static const struct { qk_feature f; const char *flag; } map[] = {
            {QK_F_AVX2, "avx2"}, {QK_F_FMA, "fma"}, {QK_F_F16C, "f16c"}, {QK_F_AVXVNNI, "avx_vnni"},
            {QK_F_AVX512F, "avx512f"}, {QK_F_AVX512BW, "avx512bw"}, {QK_F_AVX512DQ, "avx512dq"},
            {QK_F_AVX512VL, "avx512vl"}, {QK_F_AVX512VNNI, "avx512_vnni"}};
        for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
            int h = cpuinfo_has(map[i].flag);
            if (h < 0) break;
            CHECK(c->os_enabled[map[i].f] == h, "%s: detected %d, /proc/cpuinfo says %d", map[i].flag, c->os_enabled[map[i].f], h);
        }
    }
#endif
    /* lower the cap step by step */
#if defined(__x86_64__)
    const qk_tier caps[] = {QK_TIER_COUNT - 1, QK_TIER_AVX512VNNI, QK_TIER_AVX2, QK_TIER_SCALAR};
#else
    const qk_tier caps[] = {QK_TIER_COUNT - 1, QK_TIER_NEONDOT, QK_TIER_NEON, QK_TIER_SCALAR};
#endif
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        qk_tier before = qk_tier_cap();
        qk_tier now = qk_set_tier_cap(caps[i]);
        CHECK(now == (caps[i] < before ? caps[i] : before), "cap %s after asking %s", qk_tier_name(now), qk_tier_name(caps[i]));
        check_choices(now);
        /* with the cap at a usable tier, an op that has a variant of that tier must use it */
        if (qk_tier_allowed(now))
            for (size_t k = 0; k < qk_matmul_kernel_count; k++) {
                const qk_matmul_kernel *mk = &qk_matmul_kernels[k];
                if (mk->tier != now) continue;
                const qk_matmul_kernel *p = qk_pick_matmul(mk->op, mk->format, mk->mode);
                CHECK(p && p->tier == now, "cap %s: %s exists but %s was picked", qk_tier_name(now), mk->name, p ? p->name : "none");
            }
    }
    CHECK(qk_set_tier_cap(QK_TIER_COUNT - 1) == QK_TIER_SCALAR, "the cap went back up");
    return tu_finish("test_dispatch");
}
