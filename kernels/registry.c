/* The family lists expanded into descriptor arrays, and the dispatcher:
 * for each op the first listed variant whose tier is usable and allowed. */
#include "internal.h"

#define T(tier) QK_TIER_##tier
#define QK_TIER_scalar QK_TIER_SCALAR
#define QK_TIER_avx2 QK_TIER_AVX2
#define QK_TIER_avxvnni QK_TIER_AVXVNNI
#define QK_TIER_avx512 QK_TIER_AVX512
#define QK_TIER_avx512vnni QK_TIER_AVX512VNNI
#define QK_TIER_neon QK_TIER_NEON
#define QK_TIER_neondot QK_TIER_NEONDOT
#define QK_TIER_neoni8mm QK_TIER_NEONI8MM
#define QK_FMT_w4s QK_W4S
#define QK_FMT_w4a QK_W4A
#define QK_FMT_w8s QK_W8S
#define QK_FMT_q4_0 QK_Q4_0
#define QK_FMT_q8_0 QK_Q8_0
#define QK_RULE_a8 QK_ACT_A8
#define QK_RULE_a4 QK_ACT_A4
#define QK_RULE_q8_0 QK_ACT_Q8_0

const qk_quantize_kernel qk_quantize_kernels[] = {
#define QK_QUANTIZE(fmt, tier) {"qk_quantize_" #fmt "__" #tier, T(tier), QK_FMT_##fmt, qk_quantize_##fmt##__##tier},
#include "list/quantize.inc"
#undef QK_QUANTIZE
};
const size_t qk_quantize_kernel_count = sizeof qk_quantize_kernels / sizeof qk_quantize_kernels[0];

const qk_dequantize_kernel qk_dequantize_kernels[] = {
#define QK_DEQUANTIZE(fmt, tier) {"qk_dequantize_" #fmt "__" #tier, T(tier), QK_FMT_##fmt, qk_dequantize_##fmt##__##tier},
#include "list/dequantize.inc"
#undef QK_DEQUANTIZE
};
const size_t qk_dequantize_kernel_count = sizeof qk_dequantize_kernels / sizeof qk_dequantize_kernels[0];

const qk_actquant_kernel qk_actquant_kernels[] = {
#define QK_ACTQUANT(rule, tier) {"qk_actquant_" #rule "__" #tier, T(tier), QK_RULE_##rule, qk_actquant_##rule##__##tier},
#include "list/actquant.inc"
#undef QK_ACTQUANT
};
const size_t qk_actquant_kernel_count = sizeof qk_actquant_kernels / sizeof qk_actquant_kernels[0];

const qk_matmul_kernel qk_matmul_kernels[] = {
#define QK_MATMUL(stem, tier, op, fmt, mode, mr, nr) \
    {#stem, T(tier), QK_OP_##op, QK_##fmt, QK_##mode, mr, nr, NULL, NULL, NULL, stem},
#define QK_MATMUL_PACKED(stem, tier, op, fmt, mode, mr, nr) \
    {#stem, T(tier), QK_OP_##op, QK_##fmt, QK_##mode, mr, nr, stem##_pack_size, stem##_pack, stem##_packed_offset, stem},
#include "list/matmul.inc"
#undef QK_MATMUL
#undef QK_MATMUL_PACKED
};
const size_t qk_matmul_kernel_count = sizeof qk_matmul_kernels / sizeof qk_matmul_kernels[0];

int qk_tier_compiled(qk_tier t) {
    switch (t) {
    case QK_TIER_SCALAR: return 1;
    case QK_TIER_AVX2: return QK_HAVE_AVX2;
    case QK_TIER_AVXVNNI: return QK_HAVE_AVXVNNI;
    case QK_TIER_AVX512: return QK_HAVE_AVX512;
    case QK_TIER_AVX512VNNI: return QK_HAVE_AVX512VNNI;
    case QK_TIER_NEON: return QK_HAVE_NEON;
    case QK_TIER_NEONDOT: return QK_HAVE_NEONDOT;
    case QK_TIER_NEONI8MM: return QK_HAVE_NEONI8MM;
    default: return 0;
    }
}

const qk_quantize_kernel *qk_pick_quantize(qk_format f) {
    for (size_t i = 0; i < qk_quantize_kernel_count; i++)
        if (qk_quantize_kernels[i].format == f && qk_tier_allowed(qk_quantize_kernels[i].tier)) return &qk_quantize_kernels[i];
    return NULL;
}

const qk_dequantize_kernel *qk_pick_dequantize(qk_format f) {
    for (size_t i = 0; i < qk_dequantize_kernel_count; i++)
        if (qk_dequantize_kernels[i].format == f && qk_tier_allowed(qk_dequantize_kernels[i].tier)) return &qk_dequantize_kernels[i];
    return NULL;
}

const qk_actquant_kernel *qk_pick_actquant(qk_act_rule rule, qk_tier max_tier) {
    for (size_t i = 0; i < qk_actquant_kernel_count; i++) {
        const qk_actquant_kernel *k = &qk_actquant_kernels[i];
        if (k->rule == rule && k->tier <= max_tier && qk_tier_allowed(k->tier)) return k;
    }
    return NULL;
}

const qk_matmul_kernel *qk_pick_matmul(qk_op op, qk_format f, qk_mode mode) {
    if (!qk_mode_accepts(mode, f)) return NULL;
    /* gemm kernels take any M, so they also serve gemv when no gemv variant is allowed. */
    for (int pass = 0; pass < 2; pass++) {
        qk_op want = pass == 0 ? op : QK_OP_GEMM;
        for (size_t i = 0; i < qk_matmul_kernel_count; i++) {
            const qk_matmul_kernel *k = &qk_matmul_kernels[i];
            if (k->format == f && k->mode == mode && k->op == want && qk_tier_allowed(k->tier)) return k;
        }
    }
    return NULL;
}

/* ---- outlier-handling transforms ---- */
#define QK_FWHT(tier)
#define QK_COLSCALE(tier)
#define QK_COLSPLIT(tier)
#define QK_GEMM_F32(tier)
#define QK_GEMM_I8(tier)

#undef QK_FWHT
#define QK_FWHT(tier) {"qk_fwht__" #tier, T(tier), qk_fwht__##tier},
const qk_fwht_kernel qk_fwht_kernels[] = {
#include "list/outlier.inc"
};
#undef QK_FWHT
#define QK_FWHT(tier)
const size_t qk_fwht_kernel_count = sizeof qk_fwht_kernels / sizeof qk_fwht_kernels[0];

#undef QK_COLSCALE
#define QK_COLSCALE(tier) {"qk_colscale__" #tier, T(tier), qk_colscale__##tier},
const qk_colscale_kernel qk_colscale_kernels[] = {
#include "list/outlier.inc"
};
#undef QK_COLSCALE
#define QK_COLSCALE(tier)
const size_t qk_colscale_kernel_count = sizeof qk_colscale_kernels / sizeof qk_colscale_kernels[0];

#undef QK_COLSPLIT
#define QK_COLSPLIT(tier) {"qk_colsplit__" #tier, T(tier), qk_colsplit__##tier},
const qk_colsplit_kernel qk_colsplit_kernels[] = {
#include "list/outlier.inc"
};
#undef QK_COLSPLIT
#define QK_COLSPLIT(tier)
const size_t qk_colsplit_kernel_count = sizeof qk_colsplit_kernels / sizeof qk_colsplit_kernels[0];

#undef QK_GEMM_F32
#define QK_GEMM_F32(tier) {"qk_gemm_f32__" #tier, T(tier), qk_gemm_f32__##tier},
const qk_gemm_f32_kernel qk_gemm_f32_kernels[] = {
#include "list/outlier.inc"
};
#undef QK_GEMM_F32
#define QK_GEMM_F32(tier)
const size_t qk_gemm_f32_kernel_count = sizeof qk_gemm_f32_kernels / sizeof qk_gemm_f32_kernels[0];

#undef QK_GEMM_I8
#define QK_GEMM_I8(tier) {"qk_gemm_i8__" #tier, T(tier), qk_gemm_i8__##tier},
const qk_gemm_i8_kernel qk_gemm_i8_kernels[] = {
#include "list/outlier.inc"
};
#undef QK_GEMM_I8
const size_t qk_gemm_i8_kernel_count = sizeof qk_gemm_i8_kernels / sizeof qk_gemm_i8_kernels[0];
#undef QK_GEMM_F32

#undef QK_FWHT
#undef QK_COLSCALE
#undef QK_COLSPLIT

#define QK_PICK_FIRST(fn, type, list, count)               \
    const type *fn(void) {                                 \
        for (size_t i = 0; i < count; i++)                 \
            if (qk_tier_allowed(list[i].tier)) return &list[i]; \
        return NULL;                                       \
    }
QK_PICK_FIRST(qk_pick_fwht, qk_fwht_kernel, qk_fwht_kernels, qk_fwht_kernel_count)
QK_PICK_FIRST(qk_pick_colscale, qk_colscale_kernel, qk_colscale_kernels, qk_colscale_kernel_count)
QK_PICK_FIRST(qk_pick_colsplit, qk_colsplit_kernel, qk_colsplit_kernels, qk_colsplit_kernel_count)
QK_PICK_FIRST(qk_pick_gemm_f32, qk_gemm_f32_kernel, qk_gemm_f32_kernels, qk_gemm_f32_kernel_count)
QK_PICK_FIRST(qk_pick_gemm_i8, qk_gemm_i8_kernel, qk_gemm_i8_kernels, qk_gemm_i8_kernel_count)
