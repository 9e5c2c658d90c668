/* A small test harness shared by the libqk tests: checks that count, visible
 * SKIPs, seeded data, and the closing line "N passed, N failed". */
#ifndef QK_TEST_UTIL_H
#define QK_TEST_UTIL_H

#include <fnmatch.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qk/kernels.h"

static int tu_pass, tu_fail, tu_skip;
static const char *tu_context = "";

#define CHECK(cond, ...)                                                                 \
    do {                                                                                 \
        if (cond) {                                                                      \
            tu_pass++;                                                                   \
        } else {                                                                         \
            tu_fail++;                                                                   \
            if (tu_fail <= 50) {                                                         \
                fprintf(stderr, "FAIL %s:%d [%s] %s: ", __FILE__, __LINE__, tu_context, #cond); \
                fprintf(stderr, __VA_ARGS__);                                            \
                fputc('\n', stderr);                                                     \
            }                                                                            \
        }                                                                                \
    } while (0)

static inline void tu_skipf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("SKIP ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    tu_skip++;
}

/* Ends main(): the plain closing line, and exit status. */
static inline int tu_finish(const char *name) {
    printf("%s: %d passed, %d failed, %d skipped\n", name, tu_pass, tu_fail, tu_skip);
    return tu_fail ? 1 : 0;
}

/* QK_TEST_QUICK=1 (set for emulated runs): fewer sizes, same code paths. */
static inline int tu_quick(void) {
    const char *q = getenv("QK_TEST_QUICK");
    return q && *q && strcmp(q, "0") != 0;
}

/* ---- seeded data: splitmix64 ---- */
typedef struct tu_rng { uint64_t s; } tu_rng;

static inline uint64_t tu_next(tu_rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static inline double tu_uniform(tu_rng *r) { return (double)(tu_next(r) >> 11) * 0x1p-53; }
static inline double tu_gauss(tu_rng *r) {
    double u = tu_uniform(r), v = tu_uniform(r);
    return sqrt(-2.0 * log(u + 1e-300)) * cos(6.283185307179586 * v);
}

/* QK_TEST_KERNELS=GLOB (fnmatch, e.g. 'qk_gemv_*__avx512*'): test_matmul runs
 * only the kernels whose name matches. */
static inline int tu_selected(const char *name) {
    const char *g = getenv("QK_TEST_KERNELS");
    return !g || !*g || fnmatch(g, name, 0) == 0;
}

/* A kernel's own stream, from the run's seed and its name: its data do not
 * depend on which kernels ran before it, so a run of one kernel
 * (QK_TEST_KERNELS) draws what the full run drew for it. */
static inline tu_rng tu_kernel_rng(uint64_t seed, const char *name) {
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (; *name; name++) h = (h ^ (unsigned char)*name) * 0x100000001b3ull;
    return (tu_rng){seed ^ h};
}

static inline uint64_t tu_seed(void) {
    const char *s = getenv("QK_TEST_SEED");
    uint64_t seed = s ? strtoull(s, NULL, 0) : 20261202ull;
    printf("seed %llu (set QK_TEST_SEED to change)\n", (unsigned long long)seed);
    return seed;
}

/* Per-channel K that is not a multiple of 32, short (i = 0) or long (i = 1):
 * every kernel's K tail (scalar, masked, per 16, per 32). 70 leaves 6 values
 * past the last 32 and 1078 leaves 22, so a tail with a partial second half
 * of 16 is run too. odd: the codes are bytes (w8s, the activation rules), so
 * K may be odd; 4-bit codes need it even. */
static inline size_t tu_tail_k(int i, int odd) { return (i ? 1078 : 70) + (odd ? 1 : 0); }

/* Kinds of test data: each stresses a different part of the rules. */
enum { TU_GAUSS, TU_UNIFORM, TU_OUTLIER, TU_TIES, TU_ZEROS, TU_TINY, TU_SMALL, TU_HUGE, TU_NEGEXT, TU_F16SUB, TU_OFFSET, TU_KINDS };
static const char *const tu_kind_names[TU_KINDS] = {"gauss", "uniform", "outlier", "ties", "zeros", "tiny",
                                                    "small", "huge", "negext", "f16sub", "offset"};

/* Fill n floats of one kind. "ties" puts many values on x·id = k + 0.5 for a
 * group absmax of 7 or 127; "zeros" makes every other 32-group zero; "tiny" is
 * f32 denormals; "small" is normal floats near 1e-38, whose groups' scales are
 * subnormal with an inverse that is finite but overflows when doubled; "huge" is up to 1e37; "negext" makes a group's extreme negative.
 * Two kinds make the f16-scale clamp of the quantizers act (test_quant's
 * test_clamp_reached checks it): "f16sub" is blocks of 256 values of magnitude 1e-7..1e-5,
 * whose f16 scales are subnormal and round far from the exact ones; "offset"
 * is blocks of 256 values within c·2^-11 of an offset c (|c| 64..4096),
 * whose w4a min, rounded to f16, misses the group's min by up to as much as
 * the group's range. */
static inline void tu_fill(tu_rng *r, float *x, size_t n, int kind) {
    double blk = 0.0;
    for (size_t i = 0; i < n; i++) {
        double v;
        if (i % 256 == 0 && kind == TU_F16SUB) blk = 1e-7 * pow(100.0, tu_uniform(r));
        if (i % 256 == 0 && kind == TU_OFFSET) blk = (64.0 + 4032.0 * tu_uniform(r)) * (tu_next(r) & 1 ? 1 : -1);
        switch (kind) {
        case TU_F16SUB: v = tu_gauss(r) * blk; break;
        case TU_OFFSET: v = blk * (1.0 + 0x1p-11 * (2.0 * tu_uniform(r) - 1.0)); break;
        case TU_UNIFORM: v = 2.0 * tu_uniform(r) - 1.0; break;
        case TU_OUTLIER: v = tu_gauss(r) * ((i % 97) == 5 ? 40.0 : 1.0); break;
        case TU_TIES: v = (i % 32 == 0) ? 127.0 : (double)((int)(tu_next(r) % 255) - 127) + 0.5 * (tu_next(r) & 1 ? 1 : -1); break;
        case TU_ZEROS: v = ((i / 32) % 2) ? 0.0 : tu_gauss(r); break;
        case TU_TINY: v = tu_gauss(r) * 1e-39; break;
        case TU_SMALL: v = tu_gauss(r) * 1.2e-38; break;
        case TU_HUGE: v = tu_gauss(r) * 1e37; break;
        case TU_NEGEXT: v = (i % 32 == 7) ? -50.0 : tu_gauss(r); break;
        default: v = tu_gauss(r); break;
        }
        x[i] = (float)v;
    }
}

/* n floats, or the test ends (exit 2) when memory runs out. */
static inline float *tu_floats(size_t n) {
    float *p = malloc(n * sizeof *p);
    if (!p) {
        fprintf(stderr, "out of memory (%zu floats)\n", n);
        exit(2);
    }
    return p;
}

/* Buffers with canaries: n floats behind and ahead of the data must survive. */
enum { TU_CANARY = 16 };
static const uint32_t tu_canary_bits = 0x7fc0dead; /* a NaN pattern no kernel writes */

static inline float *tu_canary_alloc(size_t n) {
    float *b = malloc((n + 2 * TU_CANARY) * sizeof(float));
    if (!b) abort();
    for (size_t i = 0; i < n + 2 * TU_CANARY; i++) memcpy(&b[i], &tu_canary_bits, 4);
    return b + TU_CANARY;
}
static inline int tu_is_canary(const float *p) { return memcmp(p, &tu_canary_bits, 4) == 0; }
static inline int tu_canaries_ok(const float *p, size_t n) {
    for (size_t i = 1; i <= TU_CANARY; i++)
        if (!tu_is_canary(p - i) || !tu_is_canary(p + n - 1 + i)) return 0;
    return 1;
}
static inline void tu_canary_free(float *p) { free(p - TU_CANARY); }

#endif
