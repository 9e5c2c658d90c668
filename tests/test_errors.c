/* Bad input: every call returns an error whose message names the problem,
 * and touches no output. */
#include "test_util.h"

#define N_OUT 64

static float out[N_OUT + 2 * 8];

static void fill_out(void) {
    for (size_t i = 0; i < sizeof out / sizeof out[0]; i++) out[i] = 1234.5f;
}
static int out_untouched(void) {
    for (size_t i = 0; i < sizeof out / sizeof out[0]; i++)
        if (out[i] != 1234.5f) return 0;
    return 1;
}

/* status s and a message containing `want` */
#define EXPECT_ERR(call, status, want)                                                                        \
    do {                                                                                                      \
        fill_out();                                                                                           \
        qk_status s_ = (call);                                                                                \
        CHECK(s_ == (status), "%s returned %s, expected %s (%s)", #call, qk_status_name(s_), #status, qk_last_error()); \
        CHECK(strstr(qk_last_error(), want) != NULL, "%s: message '%s' lacks '%s'", #call, qk_last_error(), want); \
        CHECK(out_untouched(), "%s wrote to its output", #call);                                              \
    } while (0)

int main(void) {
    qk_qmat w;
    float *y = out + 8;

    /* shapes that do not divide, zero and negative sizes, bad groups */
    EXPECT_ERR(qk_qmat_alloc(&w, QK_W4S, QK_SCALE_F32, 4, 4100, 128), QK_ERR_SHAPE, "K=4100 is not a multiple of group size 128");
    EXPECT_ERR(qk_qmat_alloc(&w, QK_W4S, QK_SCALE_F32, 0, 128, 32), QK_ERR_SHAPE, "rows=0");
    EXPECT_ERR(qk_qmat_alloc(&w, QK_W4S, QK_SCALE_F32, 4, 0, 32), QK_ERR_SHAPE, "K=0");
    EXPECT_ERR(qk_qmat_alloc(&w, QK_W8S, QK_SCALE_F32, (size_t)-4, 128, 32), QK_ERR_SHAPE, "too large");
    EXPECT_ERR(qk_qmat_alloc(&w, QK_W8S, QK_SCALE_F32, 4, 128, 48), QK_ERR_SHAPE, "group size 48 is not supported");
    EXPECT_ERR(qk_qmat_alloc(&w, QK_W8S, QK_SCALE_F32, 4, 128, 0), QK_ERR_SHAPE, "group size 0");
    EXPECT_ERR(qk_qmat_alloc(&w, QK_Q4_0, QK_SCALE_F16, 4, 128, 64), QK_ERR_SHAPE, "fixed group size of 32");
    EXPECT_ERR(qk_qmat_alloc(&w, QK_Q8_0, QK_SCALE_F32, 4, 128, 32), QK_ERR_ARG, "f16 only");
    EXPECT_ERR(qk_qmat_alloc(&w, (qk_format)99, QK_SCALE_F32, 4, 128, 32), QK_ERR_ARG, "unknown format");
    EXPECT_ERR(qk_qmat_alloc(&w, QK_W4S, (qk_scale_type)7, 4, 128, 32), QK_ERR_ARG, "unknown scale type");
    EXPECT_ERR(qk_qmat_alloc(NULL, QK_W4S, QK_SCALE_F32, 4, 128, 32), QK_ERR_ARG, "NULL");
    EXPECT_ERR(qk_qmat_alloc(&w, QK_W4S, QK_SCALE_F32, 4, 129, 129), QK_ERR_SHAPE, "odd");

    /* a valid matrix to misuse */
    float x[4 * 128];
    for (int i = 0; i < 4 * 128; i++) x[i] = (float)((i * 7) % 11) - 5.0f;
    if (qk_qmat_alloc(&w, QK_W4S, QK_SCALE_F32, 4, 128, 32) || qk_quantize(x, 128, &w)) return 2;

    /* NULL pointers and strides */
    EXPECT_ERR(qk_quantize(NULL, 128, &w), QK_ERR_ARG, "input x is NULL");
    EXPECT_ERR(qk_quantize(x, 100, &w), QK_ERR_ARG, "smaller than its 128 columns");
    EXPECT_ERR(qk_quantize(x, 128, NULL), QK_ERR_ARG, "NULL");
    EXPECT_ERR(qk_dequantize(&w, NULL, 128), QK_ERR_ARG, "output y is NULL");
    EXPECT_ERR(qk_dequantize(NULL, y, 128), QK_ERR_ARG, "NULL");
    EXPECT_ERR(qk_gemv(QK_W4A32, &w, NULL, y), QK_ERR_ARG, "activations x is NULL");
    EXPECT_ERR(qk_gemv(QK_W4A32, &w, x, NULL), QK_ERR_ARG, "output y is NULL");
    EXPECT_ERR(qk_gemv(QK_W4A32, NULL, x, y), QK_ERR_ARG, "NULL");
    EXPECT_ERR(qk_gemm(QK_W4A32, &w, 2, x, 100, y, 8), QK_ERR_ARG, "row stride of activations x (100)");
    EXPECT_ERR(qk_gemm(QK_W4A32, &w, 2, x, 128, y, 3), QK_ERR_ARG, "row stride of output y (3)");
    EXPECT_ERR(qk_gemm(QK_W4A32, &w, 0, x, 128, y, 8), QK_ERR_SHAPE, "M=0");
    EXPECT_ERR(qk_gemm(QK_W4A32, &w, (size_t)-1, x, 128, y, 8), QK_ERR_SHAPE, "too large");

    /* mismatched modes and unknown values */
    EXPECT_ERR(qk_gemv(QK_W8A8, &w, x, y), QK_ERR_MODE, "mode W8A8 does not take w4s weights");
    EXPECT_ERR(qk_gemv(QK_Q4_0_Q8_0, &w, x, y), QK_ERR_MODE, "does not take w4s");
    EXPECT_ERR(qk_gemv((qk_mode)42, &w, x, y), QK_ERR_ARG, "unknown compute mode");
    qk_qmat broken = w;
    broken.format = (qk_format)17;
    EXPECT_ERR(qk_gemv(QK_W4A32, &broken, x, y), QK_ERR_ARG, "unknown format");
    broken = w;
    broken.scales = NULL;
    EXPECT_ERR(qk_gemv(QK_W4A32, &broken, x, y), QK_ERR_ARG, "no scales");
    broken = w;
    broken.cols = 100;
    EXPECT_ERR(qk_gemv(QK_W4A32, &broken, x, y), QK_ERR_SHAPE, "K=100 is not a multiple of group size 32");

    /* a matrix struct filled or changed by hand: every field the kernels read is checked */
    broken = w;
    broken.codes = NULL;
    EXPECT_ERR(qk_quantize(x, 128, &broken), QK_ERR_ARG, "output matrix has no codes");
    broken = w;
    broken.scales = NULL;
    EXPECT_ERR(qk_quantize(x, 128, &broken), QK_ERR_ARG, "output matrix has no scales");
    broken = w;
    broken.row_bytes = 60;
    EXPECT_ERR(qk_dequantize(&broken, y, 128), QK_ERR_ARG, "matrix has row_bytes=60, expected 64");
    broken = w;
    broken.rows = 0;
    EXPECT_ERR(qk_quantize(x, 128, &broken), QK_ERR_SHAPE, "rows=0");
    broken = w;
    broken.group = 48;
    EXPECT_ERR(qk_gemv(QK_W4A32, &broken, x, y), QK_ERR_SHAPE, "group size 48");
    qk_qmat wa;
    if (qk_qmat_alloc(&wa, QK_W4A, QK_SCALE_F32, 4, 128, 32) || qk_quantize(x, 128, &wa)) return 2;
    broken = wa;
    broken.mins = NULL;
    EXPECT_ERR(qk_quantize(x, 128, &broken), QK_ERR_ARG, "(w4a) has no offsets");
    EXPECT_ERR(qk_gemv(QK_W4A8, &broken, x, y), QK_ERR_ARG, "(w4a) has no offsets");
    qk_qmat_free(&wa);

    /* an activation buffer changed by hand, a NULL kernel or plan */
    qk_qact act;
    if (qk_qact_alloc(&act, QK_ACT_A8, 1, 128, 32)) return 2;
    qk_qact bad_act = act;
    bad_act.sums = NULL;
    EXPECT_ERR(qk_actquant(x, 128, &bad_act), QK_ERR_ARG, "activation buffer is not allocated");
    bad_act = act;
    bad_act.rule = QK_ACT_F32;
    EXPECT_ERR(qk_actquant(x, 128, &bad_act), QK_ERR_ARG, "activation rule 0 does not quantize");
    EXPECT_ERR(qk_actquant(x, 100, &act), QK_ERR_ARG, "row stride of activations x (100)");
    EXPECT_ERR(qk_actquant(x, 128, NULL), QK_ERR_ARG, "activation buffer is NULL");
    EXPECT_ERR(qk_quantize_with(NULL, x, 128, &w), QK_ERR_ARG, "kernel is NULL");
    EXPECT_ERR(qk_dequantize_with(NULL, &w, y, 128), QK_ERR_ARG, "kernel is NULL");
    EXPECT_ERR(qk_actquant_with(NULL, x, 128, &act), QK_ERR_ARG, "kernel is NULL");
    EXPECT_ERR(qk_matmul_prepare(NULL, NULL, QK_OP_GEMV, QK_W4A32, &w, 1), QK_ERR_ARG, "plan is NULL");
    qk_matmul_plan unprepared = {0};
    EXPECT_ERR(qk_matmul_run(&unprepared, 1, x, 128, y, 4), QK_ERR_ARG, "plan is not prepared");
    EXPECT_ERR(qk_matmul_prepare(&unprepared, NULL, (qk_op)7, QK_W4A32, &w, 1), QK_ERR_ARG, "unknown op 7");
    EXPECT_ERR(qk_matmul_prepare(&unprepared, NULL, QK_OP_GEMV, QK_W4A32, &w, 2), QK_ERR_SHAPE, "gemv takes M=1, not M=2");

    EXPECT_ERR(qk_gemm(QK_W4A32, NULL, 2, x, 128, y, 8), QK_ERR_ARG, "weight matrix is NULL");
    for (size_t i = 0; i < qk_dequantize_kernel_count; i++)
        if (qk_dequantize_kernels[i].format == QK_W8S) {
            EXPECT_ERR(qk_dequantize_with(&qk_dequantize_kernels[i], &w, y, 128), QK_ERR_MODE, "reads w8s, but the matrix is w4s");
            break;
        }
    for (size_t i = 0; i < qk_actquant_kernel_count; i++)
        if (qk_actquant_kernels[i].rule == QK_ACT_A4) {
            EXPECT_ERR(qk_actquant_with(&qk_actquant_kernels[i], x, 128, &act), QK_ERR_MODE, "applies rule");
            break;
        }

    /* the plan API: its own checks, for callers that prepare once and run many times */
    EXPECT_ERR(qk_matmul_prepare(&unprepared, NULL, QK_OP_GEMM, QK_W4A8, NULL, 2), QK_ERR_ARG, "weight matrix is NULL");
    EXPECT_ERR(qk_matmul_prepare(&unprepared, NULL, QK_OP_GEMM, QK_W4A8, &w, 0), QK_ERR_SHAPE, "M=0");
    for (size_t i = 0; i < qk_matmul_kernel_count; i++)
        if (qk_matmul_kernels[i].format == QK_W4S && qk_matmul_kernels[i].mode == QK_W4A32 && qk_matmul_kernels[i].op == QK_OP_GEMM) {
            EXPECT_ERR(qk_matmul_prepare(&unprepared, &qk_matmul_kernels[i], QK_OP_GEMM, QK_W4A8, &w, 2), QK_ERR_MODE,
                       "computes W4A32 on w4s weights, not W4A8 on w4s");
            break;
        }
    EXPECT_ERR(qk_matmul_repack(NULL), QK_ERR_ARG, "plan is not prepared");
    qk_matmul_release(NULL); /* a no-op */
    qk_matmul_plan plan;
    if (qk_matmul_prepare(&plan, NULL, QK_OP_GEMM, QK_W4A8, &w, 2)) return 2;
    EXPECT_ERR(qk_matmul_run(&plan, 0, x, 128, y, 8), QK_ERR_SHAPE, "M=0");
    EXPECT_ERR(qk_matmul_run(&plan, 3, x, 128, y, 8), QK_ERR_SHAPE, "M=3 exceeds the plan's 2 rows");
    EXPECT_ERR(qk_matmul_run(&plan, 2, NULL, 128, y, 8), QK_ERR_ARG, "activations x is NULL");
    EXPECT_ERR(qk_matmul_run(&plan, 2, x, 127, y, 8), QK_ERR_ARG, "row stride of activations x (127)");
    EXPECT_ERR(qk_matmul_run(&plan, 2, x, 128, y, 3), QK_ERR_ARG, "row stride of output y (3)");
    qk_matmul_release(&plan);
    EXPECT_ERR(qk_matmul_run(&plan, 1, x, 128, y, 8), QK_ERR_ARG, "plan is not prepared"); /* released */

    /* the outlier transforms (k = NULL: the dispatcher's choice) */
    float xs[4 * 8], sc[8];
    for (int i = 0; i < 4 * 8; i++) xs[i] = (float)(i % 5) - 2.0f;
    for (int i = 0; i < 8; i++) sc[i] = 1.0f + (float)i;
    EXPECT_ERR(qk_fwht_with(NULL, xs, 8, 0, 8, 8), QK_ERR_SHAPE, "x is empty (0x8)");
    EXPECT_ERR(qk_fwht_with(NULL, xs, 8, (size_t)-1, 8, 8), QK_ERR_SHAPE, "x is too large");
    EXPECT_ERR(qk_fwht_with(NULL, NULL, 8, 4, 8, 8), QK_ERR_ARG, "x is NULL");
    EXPECT_ERR(qk_fwht_with(NULL, xs, 4, 4, 8, 8), QK_ERR_ARG, "row stride of x (4)");
    EXPECT_ERR(qk_fwht_with(NULL, xs, 8, 4, 8, 6), QK_ERR_SHAPE, "Hadamard block 6 is not a power of two");
    EXPECT_ERR(qk_fwht_with(NULL, xs, 8, 4, 8, 1), QK_ERR_SHAPE, "Hadamard block 1 is not a power of two");
    EXPECT_ERR(qk_fwht_with(NULL, xs, 8, 4, 6, 4), QK_ERR_SHAPE, "K=6 is not a multiple of the Hadamard block 4");
    EXPECT_ERR(qk_colscale_with(NULL, xs, 8, 4, 8, NULL, y, 8), QK_ERR_ARG, "column scales are NULL");
    EXPECT_ERR(qk_colscale_with(NULL, xs, 8, 4, 8, sc, NULL, 8), QK_ERR_ARG, "y is NULL");
    EXPECT_ERR(qk_colscale_with(NULL, xs, 8, 0, 8, sc, y, 8), QK_ERR_SHAPE, "x is empty");
    sc[3] = INFINITY;
    EXPECT_ERR(qk_colscale_with(NULL, xs, 8, 4, 8, sc, y, 8), QK_ERR_NONFINITE, "column scale 3 is not finite");
    sc[3] = 4.0f;
    const uint32_t cols2[2] = {1, 5}, cols_down[2] = {5, 1};
    EXPECT_ERR(qk_colsplit_with(NULL, xs, 8, 4, 8, cols2, 9, y, 8, y + 32, 2), QK_ERR_SHAPE, "9 outlier columns out of K=8");
    EXPECT_ERR(qk_colsplit_with(NULL, xs, 8, 4, 8, NULL, 2, y, 8, y + 32, 2), QK_ERR_ARG, "outlier indices are NULL");
    EXPECT_ERR(qk_colsplit_with(NULL, xs, 8, 4, 8, cols2, 2, y, 8, NULL, 2), QK_ERR_ARG, "xo is NULL");
    EXPECT_ERR(qk_colsplit_with(NULL, xs, 8, 4, 8, cols2, 2, y, 8, y + 32, 1), QK_ERR_ARG, "row stride of xo (1)");
    EXPECT_ERR(qk_colsplit_with(NULL, xs, 8, 4, 8, cols_down, 2, y, 8, y + 32, 2), QK_ERR_ARG, "not strictly increasing at 1");
    EXPECT_ERR(qk_colsplit_with(NULL, xs, 8, 4, 8, cols2, 2, NULL, 8, y + 32, 2), QK_ERR_ARG, "xz is NULL");
    EXPECT_ERR(qk_gemm_f32_with(NULL, 4, 2, 8, xs, 8, xs, 8, y, 1, 0), QK_ERR_ARG, "row stride of y (1)");
    EXPECT_ERR(qk_gemm_f32_with(NULL, 4, 0, 8, xs, 8, xs, 8, y, 8, 0), QK_ERR_SHAPE, "w is empty (0x8)");
    EXPECT_ERR(qk_gemm_f32_with(NULL, 4, 2, 8, xs, 8, NULL, 8, y, 8, 0), QK_ERR_ARG, "w is NULL");
    const int8_t c8[4 * 8] = {1, -2, 3};
    const float s4[4] = {1, 1, 1, 1};
    EXPECT_ERR(qk_gemm_i8_with(NULL, 0, 2, 8, c8, 8, s4, c8, 8, s4, y, 8, 0), QK_ERR_SHAPE, "empty int8 gemm (0x2x8)");
    EXPECT_ERR(qk_gemm_i8_with(NULL, (size_t)-1, 2, 8, c8, 8, s4, c8, 8, s4, y, 8, 0), QK_ERR_SHAPE, "int8 gemm too large");
    EXPECT_ERR(qk_gemm_i8_with(NULL, 2, 2, 8, c8, 4, s4, c8, 8, s4, y, 8, 0), QK_ERR_ARG, "int8 row stride below K=8 (x 4, w 8)");
    EXPECT_ERR(qk_gemm_i8_with(NULL, 2, 2, 8, c8, 8, s4, c8, 8, NULL, y, 8, 0), QK_ERR_ARG, "weight scales are NULL");
    EXPECT_ERR(qk_gemm_i8_with(NULL, 2, 2, 8, c8, 8, s4, c8, 8, s4, NULL, 8, 0), QK_ERR_ARG, "y is NULL");
    int8_t q8[4 * 8];
    float qs[4];
    EXPECT_ERR(qk_rowquant_i8(xs, 8, 4, 65537, q8, 8, qs), QK_ERR_ARG, "row stride of x (8)");
    EXPECT_ERR(qk_rowquant_i8(xs, 65537, 1, 65537, q8, 65537, qs), QK_ERR_SHAPE, "int8 rows of K=65537 are above 65536"); /* not read */
    EXPECT_ERR(qk_rowquant_i8(xs, 8, 4, 8, NULL, 8, qs), QK_ERR_ARG, "int8 codes or scales are NULL");
    EXPECT_ERR(qk_rowquant_i8(xs, 8, 4, 8, q8, 7, qs), QK_ERR_ARG, "int8 row stride 7 is below K=8");
    xs[10] = NAN;
    EXPECT_ERR(qk_rowquant_i8(xs, 8, 4, 8, q8, 8, qs), QK_ERR_NONFINITE, "x[1][2] is not finite");

    /* a kernel whose tier this CPU (or the QK_ISA cap) does not allow: refused, never run
     * (test_errors.qk_isa_avx2 caps the tiers, so this runs on every x86 host) */
    int refused = 0; /* one kernel of each family, the first whose tier is not allowed */
    for (size_t i = 0; i < qk_quantize_kernel_count; i++)
        if (qk_quantize_kernels[i].format == QK_W4S && qk_tier_unavailable_reason(qk_quantize_kernels[i].tier)) {
            EXPECT_ERR(qk_quantize_with(&qk_quantize_kernels[i], x, 128, &w), QK_ERR_UNSUPPORTED, "cannot run here");
            refused++;
            break;
        }
    for (size_t i = 0; i < qk_dequantize_kernel_count; i++)
        if (qk_dequantize_kernels[i].format == QK_W4S && qk_tier_unavailable_reason(qk_dequantize_kernels[i].tier)) {
            EXPECT_ERR(qk_dequantize_with(&qk_dequantize_kernels[i], &w, y, 128), QK_ERR_UNSUPPORTED, "cannot run here");
            refused++;
            break;
        }
    for (size_t i = 0; i < qk_actquant_kernel_count; i++)
        if (qk_actquant_kernels[i].rule == QK_ACT_A8 && qk_tier_unavailable_reason(qk_actquant_kernels[i].tier)) {
            EXPECT_ERR(qk_actquant_with(&qk_actquant_kernels[i], x, 128, &act), QK_ERR_UNSUPPORTED, "cannot run here");
            refused++;
            break;
        }
    for (size_t i = 0; i < qk_matmul_kernel_count; i++) {
        const qk_matmul_kernel *k = &qk_matmul_kernels[i];
        if (k->format == QK_W4S && k->mode == QK_W4A32 && k->op == QK_OP_GEMV && qk_tier_unavailable_reason(k->tier)) {
            EXPECT_ERR(qk_matmul_prepare(&unprepared, k, QK_OP_GEMV, QK_W4A32, &w, 1), QK_ERR_UNSUPPORTED, "cannot run here");
            refused++;
            break;
        }
    }
    for (size_t i = 0; i < qk_fwht_kernel_count; i++)
        if (qk_tier_unavailable_reason(qk_fwht_kernels[i].tier)) {
            float xf[8] = {1, 2, 3, 4, 5, 6, 7, 8};
            EXPECT_ERR(qk_fwht_with(&qk_fwht_kernels[i], xf, 8, 1, 8, 8), QK_ERR_UNSUPPORTED, "cannot run here");
            CHECK(xf[0] == 1.0f && xf[7] == 8.0f, "a refused fwht changed its input");
            refused++;
            break;
        }
    if (getenv("QK_EXPECT_REFUSED")) CHECK(refused == 5, "%d of 5 families had a kernel of an unavailable tier to refuse", refused);
    qk_qact_free(&act);

    /* a kernel for another format, a gemv kernel asked for M > 1 */
    for (size_t i = 0; i < qk_quantize_kernel_count; i++)
        if (qk_quantize_kernels[i].format == QK_W8S) {
            EXPECT_ERR(qk_quantize_with(&qk_quantize_kernels[i], x, 128, &w), QK_ERR_MODE, "writes w8s, but the output matrix is w4s");
            break;
        }
    for (size_t i = 0; i < qk_matmul_kernel_count; i++) {
        const qk_matmul_kernel *k = &qk_matmul_kernels[i];
        if (k->op != QK_OP_GEMV || qk_tier_unavailable_reason(k->tier)) continue;
        qk_qmat m;
        qk_scale_type st = k->format == QK_Q4_0 || k->format == QK_Q8_0 ? QK_SCALE_F16 : QK_SCALE_F32;
        if (qk_qmat_alloc(&m, k->format, st, 4, 128, 32)) return 2;
        qk_matmul_plan p;
        EXPECT_ERR(qk_matmul_prepare(&p, k, QK_OP_GEMM, k->mode, &m, 4), QK_ERR_SHAPE, "gemv kernel");
        qk_qmat_free(&m);
        break;
    }
    qk_format f;
    qk_mode md;
    qk_tier t;
    EXPECT_ERR(qk_format_parse("w5s", &f), QK_ERR_ARG, "unknown format 'w5s' (expected one of: w4s, w4a, w8s, q4_0, q8_0)");
    EXPECT_ERR(qk_mode_parse("W3A3", &md), QK_ERR_ARG, "unknown mode 'W3A3'");
    EXPECT_ERR(qk_tier_parse("sse9", &t), QK_ERR_ARG, "unknown ISA tier 'sse9'");
    CHECK(qk_format_parse("Q4_0", &f) == QK_OK && f == QK_Q4_0, "case-insensitive parse");
    CHECK(qk_mode_parse("w4a8", &md) == QK_OK && md == QK_W4A8, "mode parse");
    CHECK(qk_tier_parse("AVX512VNNI", &t) == QK_OK && t == QK_TIER_AVX512VNNI, "tier parse");
    EXPECT_ERR(qk_format_parse(NULL, &f), QK_ERR_ARG, "no format given");

    /* the small helpers around the structs */
    EXPECT_ERR(qk_qact_alloc(NULL, QK_ACT_A8, 1, 128, 32), QK_ERR_ARG, "qk_qact_alloc: pointer is NULL");
    qk_qact qa;
    EXPECT_ERR(qk_qact_alloc(&qa, QK_ACT_F32, 1, 128, 32), QK_ERR_ARG, "activation rule 0 does not quantize");
    EXPECT_ERR(qk_qact_alloc(&qa, QK_ACT_A8, 1, 100, 32), QK_ERR_SHAPE, "K=100 is not a multiple of group size 32");
    qk_qact_free(NULL); /* no-ops */
    qk_qmat_free(NULL);
    CHECK(qk_qmat_min(&w, 0, 0) == 0.0f, "the offset of a w4s group is 0");
    broken = w;
    broken.format = (qk_format)17;
    CHECK(qk_qmat_code(&broken, 0, 0) == 0, "the code of an unknown format is 0");
#if defined(__SANITIZE_ADDRESS__)
    tu_skipf("out of memory for a matrix: AddressSanitizer aborts on a 2^62-byte request");
#else
    EXPECT_ERR(qk_qmat_alloc(&broken, QK_W8S, QK_SCALE_F32, (size_t)1 << 31, (size_t)1 << 31, (size_t)1 << 31), QK_ERR_NOMEM,
               "out of memory for a 2147483648x2147483648 w8s matrix");
    EXPECT_ERR(qk_qact_alloc(&qa, QK_ACT_A8, (size_t)1 << 31, (size_t)1 << 31, (size_t)1 << 31), QK_ERR_NOMEM,
               "out of memory for 2147483648x2147483648 quantized activations");
#endif

    /* NaN/Inf in data: reported by name and position, whatever the mode */
    float xn[128];
    memcpy(xn, x, sizeof xn);
    xn[77] = NAN;
    qk_status s = qk_gemv(QK_W4A32, &w, xn, y);
    CHECK(s == QK_ERR_NONFINITE && strstr(qk_last_error(), "column 77"), "W4A32 NaN: %s %s", qk_status_name(s), qk_last_error());
    s = qk_gemv(QK_W4A8, &w, xn, y);
    CHECK(s == QK_ERR_NONFINITE && strstr(qk_last_error(), "column 77"), "W4A8 NaN: %s %s", qk_status_name(s), qk_last_error());
    xn[77] = -INFINITY;
    s = qk_gemv(QK_W4A4, &w, xn, y);
    CHECK(s == QK_ERR_NONFINITE && strstr(qk_last_error(), "column 77"), "W4A4 -Inf: %s %s", qk_status_name(s), qk_last_error());
    /* an all-finite input whose product overflows f32 is reported too */
    float xb[4 * 128];
    for (int i = 0; i < 4 * 128; i++) xb[i] = 3e38f;
    qk_qmat wb;
    if (qk_qmat_alloc(&wb, QK_W8S, QK_SCALE_F32, 4, 128, 32) || qk_quantize(xb, 128, &wb)) return 2;
    s = qk_gemv(QK_W8A32, &wb, xb, y);
    CHECK(s == QK_ERR_NONFINITE, "overflowing product: %s", qk_status_name(s));
    qk_qmat_free(&wb);

    qk_qmat_free(&w);
    return tu_finish("test_errors");
}
