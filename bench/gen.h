/// Seeded data generators for the accuracy commands (DESIGN §4).
///
/// Every generator is counter based: element i of stream `stream` under
/// `seed` depends only on (seed, stream, i), through splitmix64 hashes. The
/// SLEEF AVX2 path (gen_avx2.c, used when qk_tier_allowed(QK_TIER_AVX2)) and
/// the scalar libm path consume the same uniform bits in the same places, so
/// they produce the same values up to the last few ulps of exp/log/sin/cos
/// (uniform data is bit-identical). Each distribution is scaled to unit
/// variance (Student-t only when ν > 2; for ν <= 2 its scale parameter is 1).
#ifndef QK_GEN_H
#define QK_GEN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum qk_dist {
    QK_DIST_GAUSS = 0, ///< N(0, 1): Box–Muller, both outputs of each pair used
    QK_DIST_LAPLACE,   ///< Laplace with b = 1/√2
    QK_DIST_STUDENT,   ///< Student-t(ν) by Bailey's polar formula, one output per pair
    QK_DIST_UNIFORM,   ///< U(-√3, √3)
    QK_DIST_OUTLIER,   ///< N(0, 1) with a fraction p of columns (channels) scaled by α, the same in every row
    QK_DIST_SWIGLU,    ///< silu(x·Wgᵀ) ⊙ (x·Wuᵀ), x ~ N(0, 1) of inner dimension D, W ~ N(0, 1/D)
    QK_DIST_COUNT
} qk_dist;

/// What to generate. qk_gen_spec_default() fills the defaults.
typedef struct qk_gen_spec {
    qk_dist dist;
    double nu;            ///< Student-t degrees of freedom, 1 <= ν <= 1e6 (default 4)
    double outlier_frac;  ///< outlier: fraction p of channels (default 0.01; at least one channel)
    double outlier_alpha; ///< outlier: scale α of those channels (default 20)
    size_t swiglu_dim;    ///< swiglu: inner dimension D (default 256)
} qk_gen_spec;

void qk_gen_spec_default(qk_gen_spec *s);
const char *qk_dist_name(qk_dist d);
/// Parse "gauss" ("gaussian", "normal"), "laplace", "t" ("student"), "uniform",
/// "outlier", "swiglu". Returns 0, or -1 for an unknown name.
int qk_dist_parse(const char *s, qk_dist *out);
/// Checks the parameters; returns NULL or a message naming the bad one.
const char *qk_gen_spec_check(const qk_gen_spec *s);
/// One-line description ("t(nu=4)", "outlier(p=0.01, alpha=20)") into buf.
void qk_gen_spec_describe(const qk_gen_spec *s, char *buf, size_t len);

/// Elements [offset, offset + n) of an elementwise stream (gauss, laplace,
/// student, uniform only) into x. Uses the SLEEF AVX2 path when compiled and
/// allowed by the tier cap, scalar libm otherwise.
void qk_gen_fill(qk_dist d, double nu, uint64_t seed, uint64_t stream, uint64_t offset, float *x, size_t n);
/// The same elements through scalar libm only (the rate baseline; tests).
void qk_gen_fill_scalar(qk_dist d, double nu, uint64_t seed, uint64_t stream, uint64_t offset, float *x, size_t n);
/// The same elements through the SLEEF AVX2 path only; returns -1 (and writes
/// nothing) if that path is not compiled or AVX2 is not allowed here.
int qk_gen_fill_simd(qk_dist d, double nu, uint64_t seed, uint64_t stream, uint64_t offset, float *x, size_t n);
/// 1 if the SLEEF AVX2 path is compiled into this build and allowed here.
int qk_gen_simd_available(void);

/// A rows × cols matrix (row stride ld floats) of any distribution; stream
/// names the matrix (weights and activations use different streams).
/// Returns 0, or -1 with a message in err (bad parameters, out of memory).
int qk_gen_matrix(const qk_gen_spec *s, uint64_t seed, uint64_t stream, float *x, size_t rows, size_t cols, size_t ld,
                  char *err, size_t errlen);

/// The outlier channels of a cols-wide outlier matrix: writes their count
/// (max(1, round(p·cols))) indices, sorted, into idx (room for cols) and returns the count.
size_t qk_gen_outlier_channels(const qk_gen_spec *s, uint64_t seed, uint64_t stream, size_t cols, size_t *idx);

/* ---- internal: the SLEEF AVX2 path (gen_avx2.c), built when the avx2 tier and SLEEF are both there ---- */
/// Blocks [b0, b0 + nb) of 16 elements of an elementwise stream, into x (16·nb floats).
void qk_gen_blocks_avx2(qk_dist d, float nu, uint64_t key, uint64_t b0, size_t nb, float *x);
/// y[i] = silu(a[i]) · b[i] for n floats.
void qk_gen_swiglu_avx2(const float *a, const float *b, float *y, size_t n);
/// out[n] = Σ_k x[k]·w[n·D + k] for n < N (f32, FMA): one row of x·Wᵀ.
void qk_gen_rowdot_avx2(const float *x, const float *w, size_t D, size_t N, float *out);

/// splitmix64's finalizer, and the key of (seed, stream).
static inline uint64_t qk_gen_mix64(uint64_t z) {
    z ^= z >> 30;
    z *= 0xbf58476d1ce4e5b9ull;
    z ^= z >> 27;
    z *= 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static inline uint64_t qk_gen_key(uint64_t seed, uint64_t stream) {
    return qk_gen_mix64(seed ^ qk_gen_mix64(stream * 0xd1b54a32d192ed03ull + 0x632be59bd9b4e019ull));
}
/// Hash j of a stream: splitmix64's output number j (from 0) started at key.
static inline uint64_t qk_gen_hash(uint64_t key, uint64_t j) { return qk_gen_mix64(key + (j + 1) * 0x9e3779b97f4a7c15ull); }
/// A uniform in (0, 1) from the top 23 bits of v: (2⌊v/2⁹⌋ + 1)·2⁻²⁴, exact in f32.
static inline float qk_gen_u01(uint32_t v) { return (float)((v >> 8) | 1u) * 0x1p-24f; }

#ifdef __cplusplus
}
#endif
#endif
