/* Names, shapes, allocation and error messages of libqk. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "internal.h"

static _Thread_local char qk_err_msg[512];

qk_status qk_fail(qk_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(qk_err_msg, sizeof qk_err_msg, fmt, ap);
    va_end(ap);
    return s;
}

void qk_clear_error(void) { qk_err_msg[0] = 0; }
const char *qk_last_error(void) { return qk_err_msg; }

const char *qk_status_name(qk_status s) {
    static const char *const n[] = {"QK_OK", "QK_ERR_ARG", "QK_ERR_SHAPE", "QK_ERR_MODE", "QK_ERR_NONFINITE",
                                    "QK_ERR_RANGE", "QK_ERR_NOMEM", "QK_ERR_UNSUPPORTED"};
    return (unsigned)s < sizeof n / sizeof n[0] ? n[s] : "QK_ERR_?";
}

static const char *const format_names[QK_FORMAT_COUNT] = {"w4s", "w4a", "w8s", "q4_0", "q8_0"};
static const char *const mode_names[QK_MODE_COUNT] = {"W4A32", "W8A32", "W4A8", "W8A8", "W4A4", "q4_0xq8_0", "q8_0xq8_0"};
static const char *const tier_names[QK_TIER_COUNT] = {"scalar", "avx2", "avxvnni", "avx512", "avx512vnni", "neon", "neondot", "neoni8mm"};
static const char *const rule_names[QK_ACT_RULE_COUNT] = {"f32", "a8", "a4", "q8_0"};

const char *qk_format_name(qk_format f) { return (unsigned)f < QK_FORMAT_COUNT ? format_names[f] : "?"; }
const char *qk_mode_name(qk_mode m) { return (unsigned)m < QK_MODE_COUNT ? mode_names[m] : "?"; }
const char *qk_tier_name(qk_tier t) { return (unsigned)t < QK_TIER_COUNT ? tier_names[t] : "?"; }
const char *qk_act_rule_name(qk_act_rule r) { return (unsigned)r < QK_ACT_RULE_COUNT ? rule_names[r] : "?"; }

static qk_status parse_name(const char *s, const char *const *names, int n, int *out, const char *what) {
    if (!s) return qk_fail(QK_ERR_ARG, "no %s given", what);
    for (int i = 0; i < n; i++)
        if (strcasecmp(s, names[i]) == 0) {
            *out = i;
            return QK_OK;
        }
    char list[256] = "";
    for (int i = 0; i < n; i++) {
        strncat(list, names[i], sizeof list - strlen(list) - 1);
        if (i + 1 < n) strncat(list, ", ", sizeof list - strlen(list) - 1);
    }
    return qk_fail(QK_ERR_ARG, "unknown %s '%s' (expected one of: %s)", what, s, list);
}

qk_status qk_format_parse(const char *s, qk_format *out) {
    int v = 0;
    qk_status st = parse_name(s, format_names, QK_FORMAT_COUNT, &v, "format");
    if (st == QK_OK) *out = (qk_format)v;
    return st;
}

qk_status qk_mode_parse(const char *s, qk_mode *out) {
    int v = 0;
    qk_status st = parse_name(s, mode_names, QK_MODE_COUNT, &v, "mode");
    if (st == QK_OK) *out = (qk_mode)v;
    return st;
}

qk_status qk_tier_parse(const char *s, qk_tier *out) {
    int v = 0;
    qk_status st = parse_name(s, tier_names, QK_TIER_COUNT, &v, "ISA tier");
    if (st == QK_OK) *out = (qk_tier)v;
    return st;
}

int qk_mode_accepts(qk_mode mode, qk_format f) {
    switch (mode) {
    case QK_W4A32: return f == QK_W4S || f == QK_W4A || f == QK_Q4_0;
    case QK_W8A32: return f == QK_W8S || f == QK_Q8_0;
    case QK_W4A8:
    case QK_W4A4: return f == QK_W4S || f == QK_W4A;
    case QK_W8A8: return f == QK_W8S;
    case QK_Q4_0_Q8_0: return f == QK_Q4_0;
    case QK_Q8_0_Q8_0: return f == QK_Q8_0;
    default: return 0;
    }
}

qk_act_rule qk_mode_act_rule(qk_mode mode) {
    switch (mode) {
    case QK_W4A8:
    case QK_W8A8: return QK_ACT_A8;
    case QK_W4A4: return QK_ACT_A4;
    case QK_Q4_0_Q8_0:
    case QK_Q8_0_Q8_0: return QK_ACT_Q8_0;
    default: return QK_ACT_F32;
    }
}

double qk_bpw(qk_format f, size_t group, qk_scale_type st) {
    double sbits = st == QK_SCALE_F16 ? 16.0 : 32.0;
    switch (f) {
    case QK_W4S: return 4.0 + sbits / (double)group;
    case QK_W4A: return 4.0 + 2.0 * sbits / (double)group;
    case QK_W8S: return 8.0 + sbits / (double)group;
    case QK_Q4_0: return 8.0 * QK_Q4_0_BYTES / 32.0;
    case QK_Q8_0: return 8.0 * QK_Q8_0_BYTES / 32.0;
    default: return 0.0;
    }
}

size_t qk_row_bytes(qk_format f, size_t K) {
    switch (f) {
    case QK_W4S:
    case QK_W4A: return K % 2 ? 0 : K / 2;
    case QK_W8S: return K;
    case QK_Q4_0: return K % 32 ? 0 : K / 32 * QK_Q4_0_BYTES;
    case QK_Q8_0: return K % 32 ? 0 : K / 32 * QK_Q8_0_BYTES;
    default: return 0;
    }
}

qk_status qk_check_shape(qk_format f, size_t rows, size_t K, size_t group, qk_scale_type st) {
    if ((unsigned)f >= QK_FORMAT_COUNT) return qk_fail(QK_ERR_ARG, "unknown format %d", (int)f);
    if ((unsigned)st > QK_SCALE_F16) return qk_fail(QK_ERR_ARG, "unknown scale type %d", (int)st);
    if (rows == 0 || K == 0) return qk_fail(QK_ERR_SHAPE, "empty matrix: rows=%zu K=%zu (both must be > 0)", rows, K);
    if (rows > ((size_t)1 << 31) || K > ((size_t)1 << 31))
        return qk_fail(QK_ERR_SHAPE, "rows=%zu K=%zu is too large (each must be <= 2^31; a negative size passed as size_t?)", rows, K);
    if (group == 0) return qk_fail(QK_ERR_SHAPE, "group size 0 (use 32, 64, 128, 256 or K)");
    if (f == QK_Q4_0 || f == QK_Q8_0) {
        if (group != 32) return qk_fail(QK_ERR_SHAPE, "%s has a fixed group size of 32, not %zu", qk_format_name(f), group);
        if (st != QK_SCALE_F16) return qk_fail(QK_ERR_ARG, "%s stores its scales as f16 only", qk_format_name(f));
    } else if (!(group == 32 || group == 64 || group == 128 || group == 256 || group == K)) {
        return qk_fail(QK_ERR_SHAPE, "group size %zu is not supported (use 32, 64, 128, 256 or K=%zu)", group, K);
    }
    if (K % group) return qk_fail(QK_ERR_SHAPE, "K=%zu is not a multiple of group size %zu", K, group);
    if ((f == QK_W4S || f == QK_W4A) && K % 2)
        return qk_fail(QK_ERR_SHAPE, "K=%zu is odd: %s packs two codes per byte", K, qk_format_name(f));
    return QK_OK;
}

static void *aligned_alloc64(size_t n) {
    void *p = NULL;
    if (posix_memalign(&p, 64, n ? (n + 63) / 64 * 64 : 64)) return NULL;
    return p;
}

qk_status qk_qmat_alloc(qk_qmat *m, qk_format f, qk_scale_type st, size_t rows, size_t K, size_t group) {
    if (!m) return qk_fail(QK_ERR_ARG, "qk_qmat_alloc: matrix pointer is NULL");
    qk_status s = qk_check_shape(f, rows, K, group, st);
    if (s) return s;
    qk_qmat r = {0};
    r.format = f;
    r.scale_type = st;
    r.rows = rows;
    r.cols = K;
    r.group = group;
    r.row_bytes = qk_row_bytes(f, K);
    size_t code_bytes = (rows * r.row_bytes + 63) / 64 * 64;
    size_t nscale = (f == QK_Q4_0 || f == QK_Q8_0) ? 0 : rows * (K / group);
    size_t scale_bytes = (nscale * qk_scale_size(st) + 63) / 64 * 64;
    size_t min_bytes = f == QK_W4A ? scale_bytes : 0;
    uint8_t *base = aligned_alloc64(code_bytes + scale_bytes + min_bytes);
    if (!base) return qk_fail(QK_ERR_NOMEM, "out of memory for a %zux%zu %s matrix", rows, K, qk_format_name(f));
    memset(base, 0, code_bytes + scale_bytes + min_bytes);
    r.owned_ = base;
    r.codes = base;
    r.scales = nscale ? base + code_bytes : NULL;
    r.mins = min_bytes ? base + code_bytes + scale_bytes : NULL;
    *m = r;
    return QK_OK;
}

void qk_qmat_free(qk_qmat *m) {
    if (!m) return;
    free(m->owned_);
    memset(m, 0, sizeof *m);
}

qk_qmat qk_qmat_rows(const qk_qmat *m, size_t r0, size_t r1) {
    qk_qmat v = *m;
    size_t ng = m->cols / m->group, ss = qk_scale_size(m->scale_type);
    v.rows = r1 - r0;
    v.codes = m->codes + r0 * m->row_bytes;
    if (m->scales) v.scales = (uint8_t *)m->scales + r0 * ng * ss;
    if (m->mins) v.mins = (uint8_t *)m->mins + r0 * ng * ss;
    v.owned_ = NULL;
    return v;
}

float qk_qmat_scale(const qk_qmat *m, size_t r, size_t j) {
    if (m->format == QK_Q4_0) return qk_h2f(qk_rd16(m->codes + r * m->row_bytes + j * QK_Q4_0_BYTES));
    if (m->format == QK_Q8_0) return qk_h2f(qk_rd16(m->codes + r * m->row_bytes + j * QK_Q8_0_BYTES));
    return qk_load_scale(m->scales, r * (m->cols / m->group) + j, m->scale_type);
}

float qk_qmat_min(const qk_qmat *m, size_t r, size_t j) {
    if (m->format != QK_W4A) return 0.0f;
    return qk_load_scale(m->mins, r * (m->cols / m->group) + j, m->scale_type);
}

int qk_qmat_code(const qk_qmat *m, size_t r, size_t k) {
    if ((unsigned)m->format >= QK_FORMAT_COUNT) return 0;
    return qk_row_code(m->codes + r * m->row_bytes, m->format, k);
}

qk_status qk_qact_alloc(qk_qact *a, qk_act_rule rule, size_t rows, size_t K, size_t group) {
    if (!a) return qk_fail(QK_ERR_ARG, "qk_qact_alloc: pointer is NULL");
    if (rule == QK_ACT_F32 || (unsigned)rule >= QK_ACT_RULE_COUNT)
        return qk_fail(QK_ERR_ARG, "activation rule %d does not quantize", (int)rule);
    qk_format like = rule == QK_ACT_Q8_0 ? QK_Q8_0 : QK_W8S;
    qk_status s = qk_check_shape(like, rows, K, group, like == QK_Q8_0 ? QK_SCALE_F16 : QK_SCALE_F32);
    if (s) return s;
    size_t ng = rows * (K / group);
    size_t cb = (rows * K + 63) / 64 * 64, sb = (ng * 4 + 63) / 64 * 64;
    uint8_t *base = aligned_alloc64(cb + 2 * sb);
    if (!base) return qk_fail(QK_ERR_NOMEM, "out of memory for %zux%zu quantized activations", rows, K);
    memset(base, 0, cb + 2 * sb);
    qk_qact r = {rule, rows, K, group, (int8_t *)base, (float *)(base + cb), (int32_t *)(base + cb + sb), base};
    *a = r;
    return QK_OK;
}

void qk_qact_free(qk_qact *a) {
    if (!a) return;
    free(a->owned_);
    memset(a, 0, sizeof *a);
}

uint16_t qk_fp32_to_fp16(float f) { return qk_f2h(f); }
float qk_fp16_to_fp32(uint16_t h) { return qk_h2f(h); }
