/// Benchmark cases, built from the kernel family lists (qk/kernels.h): every
/// variant × format × group size × mode × shape × threads × cache state of a
/// suite, so a new kernel in a list is benchmarked with no new benchmark code.
/// A case owns its buffers while it runs; `qkbench bench` times it through
/// Google Benchmark, and other commands (sweep) may time it directly.
#ifndef QKB_CASES_H
#define QKB_CASES_H
#include <stddef.h>

#include "probe.h"
#include "qk/kernels.h"

/// What a case times.
typedef enum qkb_kind {
    QKB_QUANTIZE,   ///< f32 rows N×K -> format (qk_quantize_with)
    QKB_DEQUANTIZE, ///< format -> f32 rows N×K (qk_dequantize_with)
    QKB_ACTQUANT,   ///< activations M×K -> int8 codes per group (qk_actquant_with)
    QKB_PACK,       ///< plain layout -> the kernel's packed layout (qk_matmul_repack)
    QKB_MATMUL,     ///< Y = X·Wᵀ: qk_matmul_run, or per thread qk_matmul_run_cols after
                    ///< qk_matmul_quantize_acts (activation quantization is timed)
    QKB_OUTLIER     ///< the outlier-handling families (DESIGN §5): see qkb_ofam; one thread
} qkb_kind;

/// The outlier family of a QKB_OUTLIER case.
typedef enum qkb_ofam {
    QKB_O_FWHT,     ///< M rows of K, in place, Hadamard block `group`
    QKB_O_COLSCALE, ///< M rows of K scaled per column
    QKB_O_COLSPLIT, ///< M rows of K, `N` outlier columns gathered and zeroed
    QKB_O_GEMM_F32, ///< Y (+)= X·Wᵀ over the K outlier columns (M×N×K), f32
    QKB_O_GEMM_I8,  ///< the same on int8 codes with per-row scales
    QKB_O_COUNT
} qkb_ofam;

typedef struct qkb_res qkb_res;

typedef struct qkb_case {
    qkb_kind kind;
    const void *kernel;      ///< the family-list entry
    const char *kernel_name;
    qk_tier tier;
    qk_format format;        ///< weights (all kinds but actquant)
    qk_mode mode;            ///< matmul, pack
    qk_act_rule rule;        ///< actquant; the matmul's activation rule
    unsigned nr;             ///< matmul: threads split N in multiples of this
    qkb_ofam ofam;           ///< outlier cases: the family
    size_t M, N, K, group;   ///< quantize/dequantize/pack: N rows of K; actquant: M rows of K
    qk_scale_type st;
    int threads, cold;
    int headline;            ///< shown in the compact table of the default run
    char op[12];             ///< "quantize", "dequantize", "actquant", "pack", "gemv" (M = 1), "gemm"
    char what[24];           ///< mode ("W4A8") or format/rule: the column the table groups by
    char name[200];          ///< op/what/format/g/shape/threads/cache/kernel: unique, filterable
    double ops;              ///< per call: 2·M·N·K for matmuls, elements for the others
    double bytes;            ///< per call: weights (codes+scales+offsets) + activations + output
    double ws;               ///< bytes the call touches (packed weights if the kernel packs)
    double bpw;              ///< bits per weight (actquant: bits per activation)
    double roof_s;           ///< roofline time per call: max(ops/peak, bytes/bandwidth)
    double peak, bw;         ///< the limits used (ops/s, bytes/s)
    char level[8];           ///< the level the working set lives in
    char bound[8];           ///< "compute" or "memory": which term sets the roofline
    char skip[200];          ///< non-empty: the case cannot run here, and why
    int batch;               ///< calls per Google Benchmark iteration (set when first run; 0 before)
    qkb_res *res;            ///< buffers while set up
} qkb_case;

/// A list of cases.
typedef struct qkb_cases {
    qkb_case *v;
    size_t n, cap;
} qkb_cases;

/// One shape of a suite. M = 0 means "the op's own rows" (decode for matmuls).
typedef struct qkb_shape {
    size_t M, N, K;
} qkb_shape;

/// What to enumerate. Lists end at a 0 entry; empty lists take the suite's own.
typedef struct qkb_plan_opts {
    int full;                  ///< --suite full
    qk_tier max_tier;          ///< --isa TIER (all tiers: QK_TIER_COUNT)
    int threads[8];            ///< --threads
    int cache;                 ///< 0 suite default, 1 warm, 2 cold, 3 both
    qkb_shape shapes[16];      ///< --shape
    size_t groups[8];          ///< --group (0 terminates; QKB_GROUP_K = per channel)
    int ops_mask;              ///< --op: bits of 1 << qkb_kind (0: all)
} qkb_plan_opts;

#define QKB_GROUP_K ((size_t)-1)

/// Enumerate the cases of a suite from the family lists. Shapes that do not
/// divide give -1 with a message in err (e.g. "K=4100 is not a multiple of
/// group size 32").
int qkb_cases_build(qkb_cases *out, const qkb_plan_opts *o, char *err, size_t errlen);
void qkb_cases_free(qkb_cases *c);

/// Fill the derived fields (name, ops, bytes, ws, bpw) of a case whose
/// identity fields are set; roofline fields need qkb_case_roofline.
void qkb_case_derive(qkb_case *c);
/// The roofline of a case under the probe's limits.
void qkb_case_roofline(qkb_case *c, const qkb_limits *l);

/// Allocate and fill the case's buffers (cold: copies rotated so that they
/// exceed QKB_DRAM_LLC_FACTOR x the last-level cache `llc` bytes, qkb_limits_llc:
/// where the probe measures DRAM; AMD L3s are not LRU), pin its threads.
/// One case is set up at a time: weights, their cold copies, quantize inputs and
/// packed plans are shared with the next case through a small cache, so tear a
/// case down before setting up the next (qkb_cases_release_cache at the end).
int qkb_case_setup(qkb_case *c, double llc, char *err, size_t errlen);
/// One call of the timed operation (the next buffer copy when cold).
/// 0, or -1 with a message in err.
int qkb_case_call(qkb_case *c, char *err, size_t errlen);
/// The kernel against a plain read, moment by moment: npairs times, one call of
/// the case (timed) and right after it one pass of the plain read (the probe's
/// loop, the case's threads) over the buffers the next copy streams: the weight
/// copy's codes, scales and offsets, and the f32 inputs of quantize or outputs of
/// dequantize (cold too), so that each pair sees the same DRAM. The rates
/// (bytes/s: the case's bytes per call, and the bytes read) into kernel_bw[i]
/// and read_bw[i]. Cold quantize and dequantize (3 copies or more) also get, after
/// the read, one plain stream of the traffic of the copy after (a read of what the
/// call reads and the tier's streaming write over what it writes, in turn: most of a
/// dequantize's bytes are writes, which DRAM takes slower than reads) into
/// stream_bw[i] (bytes read and written per second); otherwise stream_bw[0] = 0.
/// The number of pairs (0 for warm cases, other kinds, or a single copy), or -1
/// with a message in err if a call failed. Past `seconds` it stops at 5 pairs or
/// more (slow calls).
int qkb_case_read_pairs(qkb_case *c, int npairs, double seconds, double *kernel_bw, double *read_bw, double *stream_bw, char *err,
                        size_t errlen);
/// The same for warm compute-bound matmul rows on one thread: npairs times, one call of
/// the case (timed) and right after it a burst of the probe's peak loop of the case's
/// tier and kind (int8 dot or f32 FMA) about as long as the call. Rates (ops/s) into
/// kernel_ops[i] and peak_ops[i]; the number of pairs (0 when the case is not such a
/// row), or -1 with a message in err if a call failed. Past `seconds` it stops at 5 pairs
/// or more.
int qkb_case_peak_pairs(qkb_case *c, int npairs, double seconds, double *kernel_ops, double *peak_ops, char *err, size_t errlen);
void qkb_case_teardown(qkb_case *c);
/// Free the weight/data cache shared by consecutive cases.
void qkb_cases_release_cache(void);
#endif
