/* CPU feature detection (DESIGN §3), done once, and the tier cap.
 * x86: CPUID for what the CPU has, XCR0 (xgetbv) for what the OS enabled;
 * a feature whose register state is not enabled counts as absent.
 * Linux/arm64: getauxval(AT_HWCAP, AT_HWCAP2). Unknown means absent.
 * Compiled for the baseline ISA: nothing here may use a vector extension. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define QK_X86 1
#elif defined(__aarch64__)
#define QK_ARM 1
#if defined(__linux__)
#include <sys/auxv.h>
#endif
#endif

static qk_cpu_info cpu_info;
static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;
static qk_tier env_cap = QK_TIER_COUNT - 1, api_cap = QK_TIER_COUNT - 1;
static char env_error[160];
static char cap_reason[QK_TIER_COUNT][96];

static const char *const feature_names[QK_F_COUNT] = {
    "sse2", "avx", "avx2", "fma", "f16c", "avxvnni", "avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512vnni", "avx512bf16",
    "neon", "dotprod", "i8mm"};

const char *qk_feature_name(qk_feature f) { return (unsigned)f < QK_F_COUNT ? feature_names[f] : "?"; }

#ifdef QK_X86
static uint64_t read_xcr0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

static void detect_x86(qk_cpu_info *c) {
    unsigned a, b, cx, d, max_leaf;
    c->is_x86 = 1;
    __cpuid(0, max_leaf, b, cx, d);
    memcpy(c->vendor, &b, 4);
    memcpy(c->vendor + 4, &d, 4);
    memcpy(c->vendor + 8, &cx, 4);
    unsigned ext;
    __cpuid(0x80000000u, ext, b, cx, d);
    if (ext >= 0x80000004u) {
        unsigned *p = (unsigned *)(void *)c->brand;
        for (unsigned i = 0; i < 3; i++) __cpuid(0x80000002u + i, p[4 * i], p[4 * i + 1], p[4 * i + 2], p[4 * i + 3]);
        c->brand[48] = 0;
    }
    uint8_t *has = c->cpu_has;
    __cpuid(1, a, b, cx, d);
    has[QK_F_SSE2] = (d >> 26) & 1;
    has[QK_F_FMA] = (cx >> 12) & 1;
    has[QK_F_AVX] = (cx >> 28) & 1;
    has[QK_F_F16C] = (cx >> 29) & 1;
    int osxsave = (cx >> 27) & 1;
    if (max_leaf >= 7) {
        __cpuid_count(7, 0, a, b, cx, d);
        has[QK_F_AVX2] = (b >> 5) & 1;
        has[QK_F_AVX512F] = (b >> 16) & 1;
        has[QK_F_AVX512DQ] = (b >> 17) & 1;
        has[QK_F_AVX512BW] = (b >> 30) & 1;
        has[QK_F_AVX512VL] = (b >> 31) & 1;
        has[QK_F_AVX512VNNI] = (cx >> 11) & 1;
        unsigned sub = a;
        if (sub >= 1) {
            __cpuid_count(7, 1, a, b, cx, d);
            has[QK_F_AVXVNNI] = (a >> 4) & 1;
            has[QK_F_AVX512BF16] = (a >> 5) & 1;
        }
    }
    /* OS support: XMM|YMM state (bits 1,2) for AVX*, plus opmask|ZMM_Hi256|Hi16_ZMM (bits 5,6,7) for AVX-512. */
    int ymm = 0, zmm = 0;
    if (osxsave) {
        c->xcr0_known = 1;
        c->xcr0 = read_xcr0();
        ymm = (c->xcr0 & 0x6) == 0x6;
        zmm = ymm && (c->xcr0 & 0xe0) == 0xe0;
    }
    for (int f = 0; f < QK_F_COUNT; f++) {
        if (f == QK_F_SSE2) c->os_enabled[f] = has[f];
        else if (f >= QK_F_AVX512F && f <= QK_F_AVX512BF16) c->os_enabled[f] = has[f] && zmm;
        else if (f <= QK_F_AVXVNNI) c->os_enabled[f] = has[f] && ymm;
    }
}
#endif

#ifdef QK_ARM
static void detect_arm(qk_cpu_info *c) {
    c->is_arm = 1;
    strcpy(c->vendor, "arm");
    strcpy(c->brand, "AArch64");
#if defined(__linux__)
    unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    c->cpu_has[QK_F_NEON] = (hw >> 1) & 1;     /* HWCAP_ASIMD */
    c->cpu_has[QK_F_DOTPROD] = (hw >> 20) & 1; /* HWCAP_ASIMDDP */
    c->cpu_has[QK_F_I8MM] = (hw2 >> 13) & 1;   /* HWCAP2_I8MM */
#endif
    for (int f = QK_F_NEON; f <= QK_F_I8MM; f++) c->os_enabled[f] = c->cpu_has[f];
}
#endif

static int on(const qk_cpu_info *c, qk_feature f) { return c->os_enabled[f]; }

static void detect(void) {
    qk_cpu_info *c = &cpu_info;
#ifdef QK_X86
    detect_x86(c);
#elif defined(QK_ARM)
    detect_arm(c);
#endif
    uint32_t t = 1u << QK_TIER_SCALAR;
    int avx2 = on(c, QK_F_AVX) && on(c, QK_F_AVX2) && on(c, QK_F_FMA) && on(c, QK_F_F16C);
    int avx512 = avx2 && on(c, QK_F_AVX512F) && on(c, QK_F_AVX512BW) && on(c, QK_F_AVX512DQ) && on(c, QK_F_AVX512VL);
    if (avx2) t |= 1u << QK_TIER_AVX2;
    if (avx2 && on(c, QK_F_AVXVNNI)) t |= 1u << QK_TIER_AVXVNNI;
    if (avx512) t |= 1u << QK_TIER_AVX512;
    if (avx512 && on(c, QK_F_AVX512VNNI)) t |= 1u << QK_TIER_AVX512VNNI;
    if (on(c, QK_F_NEON)) t |= 1u << QK_TIER_NEON;
    if (on(c, QK_F_NEON) && on(c, QK_F_DOTPROD)) t |= 1u << QK_TIER_NEONDOT;
    if (on(c, QK_F_NEON) && on(c, QK_F_DOTPROD) && on(c, QK_F_I8MM)) t |= 1u << QK_TIER_NEONI8MM;
    c->tiers = t;

    const char *env = getenv("QK_ISA");
    if (env && *env) {
        qk_tier cap;
        if (qk_tier_parse(env, &cap) == QK_OK) {
            env_cap = cap;
        } else {
            env_cap = QK_TIER_SCALAR;
            snprintf(env_error, sizeof env_error, "QK_ISA=%s is not a known tier; running scalar only", env);
        }
    }
}

const qk_cpu_info *qk_cpu(void) {
    pthread_once(&cpu_once, detect);
    return &cpu_info;
}

const char *qk_isa_env_error(void) {
    qk_cpu();
    return env_error[0] ? env_error : NULL;
}

qk_tier qk_tier_cap(void) {
    qk_cpu();
    qk_tier c = env_cap < api_cap ? env_cap : api_cap;
    return c;
}

qk_tier qk_set_tier_cap(qk_tier t) {
    qk_cpu();
    if ((unsigned)t < QK_TIER_COUNT && t < api_cap) api_cap = t;
    return qk_tier_cap();
}

int qk_tier_allowed(qk_tier t) {
    const qk_cpu_info *c = qk_cpu();
    return (unsigned)t < QK_TIER_COUNT && qk_tier_compiled(t) && ((c->tiers >> t) & 1) && t <= qk_tier_cap();
}

/* The features a tier needs, for the "why not" message. */
static const qk_feature tier_needs[QK_TIER_COUNT][8] = {
    [QK_TIER_AVX2] = {QK_F_AVX, QK_F_AVX2, QK_F_FMA, QK_F_F16C, QK_F_COUNT},
    [QK_TIER_AVXVNNI] = {QK_F_AVX, QK_F_AVX2, QK_F_FMA, QK_F_F16C, QK_F_AVXVNNI, QK_F_COUNT},
    [QK_TIER_AVX512] = {QK_F_AVX2, QK_F_FMA, QK_F_F16C, QK_F_AVX512F, QK_F_AVX512BW, QK_F_AVX512DQ, QK_F_AVX512VL, QK_F_COUNT},
    [QK_TIER_AVX512VNNI] = {QK_F_AVX2, QK_F_AVX512F, QK_F_AVX512BW, QK_F_AVX512DQ, QK_F_AVX512VL, QK_F_AVX512VNNI, QK_F_COUNT},
    [QK_TIER_NEON] = {QK_F_NEON, QK_F_COUNT},
    [QK_TIER_NEONDOT] = {QK_F_NEON, QK_F_DOTPROD, QK_F_COUNT},
    [QK_TIER_NEONI8MM] = {QK_F_NEON, QK_F_DOTPROD, QK_F_I8MM, QK_F_COUNT},
};

const char *qk_tier_unavailable_reason(qk_tier t) {
    const qk_cpu_info *c = qk_cpu();
    if ((unsigned)t >= QK_TIER_COUNT) return "unknown tier";
    if (!qk_tier_compiled(t)) return "not compiled in this build (compiler or target lacks it)";
    char *r = cap_reason[t];
    if (!((c->tiers >> t) & 1)) {
        for (int i = 0; i < 8 && t != QK_TIER_SCALAR; i++) {
            qk_feature f = tier_needs[t][i];
            if (f == QK_F_COUNT) break;
            if (!c->cpu_has[f]) {
                snprintf(r, sizeof cap_reason[t], "CPU lacks %s", qk_feature_name(f));
                return r;
            }
            if (!c->os_enabled[f]) {
                snprintf(r, sizeof cap_reason[t], "OS has not enabled %s state (XCR0=0x%llx)", qk_feature_name(f),
                         (unsigned long long)c->xcr0);
                return r;
            }
        }
        return "CPU lacks it";
    }
    if (t > qk_tier_cap()) {
        snprintf(r, sizeof cap_reason[t], "capped at %s (QK_ISA or --isa)", qk_tier_name(qk_tier_cap()));
        return r;
    }
    return NULL;
}
