/* The public entry points: validate everything first (so a bad call touches
 * no output), then run the dispatcher's variant or a given one. */
#include <float.h>
#include <stdlib.h>

#include "internal.h"

static qk_status check_tier(qk_tier t, const char *name) {
    const char *why = qk_tier_unavailable_reason(t);
    if (why) return qk_fail(QK_ERR_UNSUPPORTED, "%s cannot run here: %s", name, why);
    return QK_OK;
}

static qk_status check_qmat(const qk_qmat *m, const char *what) {
    if (!m) return qk_fail(QK_ERR_ARG, "%s is NULL", what);
    qk_status s = qk_check_shape(m->format, m->rows, m->cols, m->group, m->scale_type);
    if (s) return s;
    if (!m->codes) return qk_fail(QK_ERR_ARG, "%s has no codes (allocate it with qk_qmat_alloc)", what);
    int blocks = m->format == QK_Q4_0 || m->format == QK_Q8_0;
    if (!blocks && !m->scales) return qk_fail(QK_ERR_ARG, "%s has no scales", what);
    if (m->format == QK_W4A && !m->mins) return qk_fail(QK_ERR_ARG, "%s (w4a) has no offsets", what);
    if (m->row_bytes != qk_row_bytes(m->format, m->cols))
        return qk_fail(QK_ERR_ARG, "%s has row_bytes=%zu, expected %zu for %s with K=%zu", what, m->row_bytes,
                       qk_row_bytes(m->format, m->cols), qk_format_name(m->format), m->cols);
    return QK_OK;
}

static qk_status check_f32(const float *p, size_t ld, size_t cols, const char *what) {
    if (!p) return qk_fail(QK_ERR_ARG, "%s is NULL", what);
    if (ld < cols) return qk_fail(QK_ERR_ARG, "row stride of %s (%zu) is smaller than its %zu columns", what, ld, cols);
    return QK_OK;
}

/* Name the first non-finite element of x (called only on the error path). */
static qk_status report_nonfinite(const float *x, size_t ldx, size_t rows, size_t cols, const char *what) {
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            if (!isfinite(x[r * ldx + c]))
                return qk_fail(QK_ERR_NONFINITE, "%s holds a non-finite value (%g) at row %zu, column %zu", what,
                               (double)x[r * ldx + c], r, c);
    return qk_fail(QK_ERR_NONFINITE, "%s produced a non-finite value", what);
}

/* f16: the scales are stored as f16 (else f32, where only w4a's max - min
 * of a group can overflow). */
static qk_status report_bits(int bad, const float *x, size_t ldx, size_t rows, size_t cols, const char *what, int f16) {
    if (bad & QK_ROW_NONFINITE) return report_nonfinite(x, ldx, rows, cols, what);
    if (bad & QK_ROW_RANGE) {
        float amax = 0.0f;
        for (size_t r = 0; r < rows; r++)
            for (size_t c = 0; c < cols; c++) amax = fmaxf(amax, fabsf(x[r * ldx + c]));
        if (!f16)
            return qk_fail(QK_ERR_RANGE, "the range (max - min) of a group of %s overflows f32 (largest |x| is %g): rescale the data", what,
                           (double)amax);
        return qk_fail(QK_ERR_RANGE,
                       "a group scale of %s does not fit its storage type (largest |x| is %g; f16 holds at most 65504%s): "
                       "store scales as f32 or rescale the data",
                       what, (double)amax, amax > FLT_MAX / 2 ? ", and a group's max - min may overflow f32" : "");
    }
    return QK_OK;
}

qk_status qk_quantize_with(const qk_quantize_kernel *k, const float *x, size_t ldx, qk_qmat *out) {
    qk_clear_error();
    qk_status s;
    if (!k) return qk_fail(QK_ERR_ARG, "kernel is NULL");
    if ((s = check_qmat(out, "output matrix")) || (s = check_f32(x, ldx, out->cols, "input x"))) return s;
    if (k->format != out->format)
        return qk_fail(QK_ERR_MODE, "%s writes %s, but the output matrix is %s", k->name, qk_format_name(k->format),
                       qk_format_name(out->format));
    if ((s = check_tier(k->tier, k->name))) return s;
    int bad = k->run(x, ldx, out);
    return report_bits(bad, x, ldx, out->rows, out->cols, "input x", out->scale_type == QK_SCALE_F16);
}

qk_status qk_quantize(const float *x, size_t ldx, qk_qmat *out) {
    qk_clear_error();
    if (!out || (unsigned)out->format >= QK_FORMAT_COUNT) return qk_fail(QK_ERR_ARG, "output matrix is NULL or has an unknown format");
    return qk_quantize_with(qk_pick_quantize(out->format), x, ldx, out);
}

qk_status qk_dequantize_with(const qk_dequantize_kernel *k, const qk_qmat *w, float *y, size_t ldy) {
    qk_clear_error();
    qk_status s;
    if (!k) return qk_fail(QK_ERR_ARG, "kernel is NULL");
    if ((s = check_qmat(w, "matrix")) || (s = check_f32(y, ldy, w->cols, "output y"))) return s;
    if (k->format != w->format)
        return qk_fail(QK_ERR_MODE, "%s reads %s, but the matrix is %s", k->name, qk_format_name(k->format), qk_format_name(w->format));
    if ((s = check_tier(k->tier, k->name))) return s;
    k->run(w, y, ldy);
    return QK_OK;
}

qk_status qk_dequantize(const qk_qmat *w, float *y, size_t ldy) {
    qk_clear_error();
    if (!w || (unsigned)w->format >= QK_FORMAT_COUNT) return qk_fail(QK_ERR_ARG, "matrix is NULL or has an unknown format");
    return qk_dequantize_with(qk_pick_dequantize(w->format), w, y, ldy);
}

static qk_status check_qact(const qk_qact *a) {
    if (!a) return qk_fail(QK_ERR_ARG, "activation buffer is NULL");
    if (a->rule == QK_ACT_F32 || (unsigned)a->rule >= QK_ACT_RULE_COUNT)
        return qk_fail(QK_ERR_ARG, "activation rule %d does not quantize", (int)a->rule);
    if (!a->codes || !a->scales || !a->sums) return qk_fail(QK_ERR_ARG, "activation buffer is not allocated (qk_qact_alloc)");
    return qk_check_shape(a->rule == QK_ACT_Q8_0 ? QK_Q8_0 : QK_W8S, a->rows, a->cols, a->group,
                          a->rule == QK_ACT_Q8_0 ? QK_SCALE_F16 : QK_SCALE_F32);
}

qk_status qk_actquant_with(const qk_actquant_kernel *k, const float *x, size_t ldx, qk_qact *out) {
    qk_clear_error();
    qk_status s;
    if (!k) return qk_fail(QK_ERR_ARG, "kernel is NULL");
    if ((s = check_qact(out)) || (s = check_f32(x, ldx, out->cols, "activations x"))) return s;
    if (k->rule != out->rule)
        return qk_fail(QK_ERR_MODE, "%s applies rule %s, the buffer wants %s", k->name, qk_act_rule_name(k->rule),
                       qk_act_rule_name(out->rule));
    if ((s = check_tier(k->tier, k->name))) return s;
    return report_bits(k->run(x, ldx, out), x, ldx, out->rows, out->cols, "activations x", 1);
}

qk_status qk_actquant(const float *x, size_t ldx, qk_qact *out) {
    qk_clear_error();
    qk_status s = check_qact(out);
    if (s) return s;
    return qk_actquant_with(qk_pick_actquant(out->rule, QK_TIER_COUNT), x, ldx, out);
}

/* ---- matmul ---- */

qk_status qk_matmul_prepare(qk_matmul_plan *p, const qk_matmul_kernel *k, qk_op op, qk_mode mode, const qk_qmat *w, size_t max_m) {
    qk_clear_error();
    qk_status s;
    if (!p) return qk_fail(QK_ERR_ARG, "plan is NULL");
    if ((unsigned)mode >= QK_MODE_COUNT) return qk_fail(QK_ERR_ARG, "unknown compute mode %d", (int)mode);
    if ((unsigned)op > QK_OP_GEMM) return qk_fail(QK_ERR_ARG, "unknown op %d", (int)op);
    if ((s = check_qmat(w, "weight matrix"))) return s;
    if (!qk_mode_accepts(mode, w->format))
        return qk_fail(QK_ERR_MODE, "mode %s does not take %s weights", qk_mode_name(mode), qk_format_name(w->format));
    if (max_m == 0) return qk_fail(QK_ERR_SHAPE, "M=0: no activation rows");
    if (max_m > ((size_t)1 << 31)) return qk_fail(QK_ERR_SHAPE, "M=%zu is too large (a negative size passed as size_t?)", max_m);
    if (op == QK_OP_GEMV && max_m != 1) return qk_fail(QK_ERR_SHAPE, "gemv takes M=1, not M=%zu", max_m);
    if (!k) k = qk_pick_matmul(op, w->format, mode);
    if (!k) return qk_fail(QK_ERR_UNSUPPORTED, "no kernel for %s %s %s", op == QK_OP_GEMV ? "gemv" : "gemm", qk_format_name(w->format), qk_mode_name(mode));
    if (k->format != w->format || k->mode != mode)
        return qk_fail(QK_ERR_MODE, "%s computes %s on %s weights, not %s on %s", k->name, qk_mode_name(k->mode),
                       qk_format_name(k->format), qk_mode_name(mode), qk_format_name(w->format));
    if (k->op == QK_OP_GEMV && max_m != 1) return qk_fail(QK_ERR_SHAPE, "%s is a gemv kernel (M=1), asked for M=%zu", k->name, max_m);
    if ((s = check_tier(k->tier, k->name))) return s;
    qk_matmul_plan r = {0};
    r.kernel = k;
    r.w = w;
    r.max_m = max_m;
    qk_act_rule rule = qk_mode_act_rule(mode);
    if (rule != QK_ACT_F32) {
        r.actq = qk_pick_actquant(rule, k->tier);
        if (!r.actq) return qk_fail(QK_ERR_UNSUPPORTED, "no activation quantizer for rule %s", qk_act_rule_name(rule));
        if ((s = qk_qact_alloc(&r.act, rule, max_m, w->cols, w->group))) return s;
    }
    if (k->pack) {
        size_t bytes = k->pack_size(w);
        if (posix_memalign(&r.packed, 64, (bytes + 63) / 64 * 64)) {
            qk_qact_free(&r.act);
            return qk_fail(QK_ERR_NOMEM, "out of memory packing weights for %s (%zu bytes)", k->name, bytes);
        }
        k->pack(w, r.packed);
    }
    *p = r;
    return QK_OK;
}

qk_status qk_matmul_repack(qk_matmul_plan *p) {
    if (!p || !p->kernel) return qk_fail(QK_ERR_ARG, "plan is not prepared");
    if (p->kernel->pack) p->kernel->pack(p->w, p->packed);
    return QK_OK;
}

static qk_status check_run(const qk_matmul_plan *p, size_t M, const float *x, size_t ldx, const float *y, size_t ldy) {
    qk_status s;
    if (!p || !p->kernel) return qk_fail(QK_ERR_ARG, "plan is not prepared");
    if (M == 0) return qk_fail(QK_ERR_SHAPE, "M=0: no activation rows");
    if (M > p->max_m) return qk_fail(QK_ERR_SHAPE, "M=%zu exceeds the plan's %zu rows", M, p->max_m);
    if ((s = check_f32(x, ldx, p->w->cols, "activations x")) || (s = check_f32(y, ldy, p->w->rows, "output y"))) return s;
    return QK_OK;
}

qk_status qk_matmul_quantize_acts(qk_matmul_plan *p, size_t M, const float *x, size_t ldx) {
    if (!p->actq) return QK_OK;
    qk_qact view = p->act;
    view.rows = M;
    int bad = p->actq->run(x, ldx, &view);
    return report_bits(bad, x, ldx, M, p->w->cols, "activations x", 1);
}

void qk_matmul_run_cols(const qk_matmul_plan *p, size_t M, const float *x, size_t ldx, float *y, size_t ldy, size_t n0, size_t n1) {
    const qk_matmul_kernel *k = p->kernel;
    qk_qmat wv = qk_qmat_rows(p->w, n0, n1);
    qk_qact av = p->act;
    av.rows = M;
    qk_matmul_args a = {M, n1 - n0, p->w->cols, p->w->group, &wv,
                        k->pack ? (const uint8_t *)p->packed + k->packed_offset(p->w, n0) : NULL,
                        x, ldx, p->actq ? &av : NULL, y + n0, ldy};
    k->run(&a);
}

qk_status qk_matmul_run(qk_matmul_plan *p, size_t M, const float *x, size_t ldx, float *y, size_t ldy) {
    qk_clear_error();
    qk_status s = check_run(p, M, x, ldx, y, ldy);
    if (s) return s;
    if ((s = qk_matmul_quantize_acts(p, M, x, ldx))) return s;
    qk_matmul_run_cols(p, M, x, ldx, y, ldy, 0, p->w->rows);
    if (!p->actq) /* f32 activations: a NaN/Inf in x reaches y; say so */
        for (size_t m = 0; m < M; m++)
            for (size_t n = 0; n < p->w->rows; n++)
                if (!isfinite(y[m * ldy + n])) {
                    s = report_nonfinite(x, ldx, M, p->w->cols, "activations x");
                    return s;
                }
    return QK_OK;
}

void qk_matmul_release(qk_matmul_plan *p) {
    if (!p) return;
    free(p->packed);
    qk_qact_free(&p->act);
    memset(p, 0, sizeof *p);
}

qk_status qk_gemm(qk_mode mode, const qk_qmat *w, size_t M, const float *x, size_t ldx, float *y, size_t ldy) {
    qk_clear_error();
    qk_status s;
    if ((s = check_qmat(w, "weight matrix"))) return s;
    if (M == 0) return qk_fail(QK_ERR_SHAPE, "M=0: no activation rows");
    if ((s = check_f32(x, ldx, w->cols, "activations x")) || (s = check_f32(y, ldy, w->rows, "output y"))) return s;
    qk_matmul_plan p;
    if ((s = qk_matmul_prepare(&p, NULL, M == 1 ? QK_OP_GEMV : QK_OP_GEMM, mode, w, M))) return s;
    s = qk_matmul_run(&p, M, x, ldx, y, ldy);
    qk_matmul_release(&p);
    return s;
}

qk_status qk_gemv(qk_mode mode, const qk_qmat *w, const float *x, float *y) {
    qk_clear_error();
    if (!w) return qk_fail(QK_ERR_ARG, "weight matrix is NULL");
    return qk_gemm(mode, w, 1, x, w->cols, y, w->rows);
}

/* ---- outlier-handling transforms ---- */

static qk_status check_rows(const float *p, size_t ld, size_t M, size_t K, const char *what) {
    if (M == 0 || K == 0) return qk_fail(QK_ERR_SHAPE, "%s is empty (%zux%zu)", what, M, K);
    if (M > ((size_t)1 << 31) || K > ((size_t)1 << 31)) return qk_fail(QK_ERR_SHAPE, "%s is too large (%zux%zu)", what, M, K);
    return check_f32(p, ld, K, what);
}

#define QK_PICK_OR(k, pick, what)                                          \
    do {                                                                   \
        if (!(k)) (k) = pick();                                            \
        if (!(k)) return qk_fail(QK_ERR_UNSUPPORTED, "no %s kernel", what); \
        qk_status ts_ = check_tier((k)->tier, (k)->name);                  \
        if (ts_) return ts_;                                               \
    } while (0)

qk_status qk_fwht_with(const qk_fwht_kernel *k, float *x, size_t ldx, size_t M, size_t K, size_t block) {
    qk_clear_error();
    qk_status s = check_rows(x, ldx, M, K, "x");
    if (s) return s;
    if (block < 2 || (block & (block - 1))) return qk_fail(QK_ERR_SHAPE, "Hadamard block %zu is not a power of two >= 2", block);
    if (K % block) return qk_fail(QK_ERR_SHAPE, "K=%zu is not a multiple of the Hadamard block %zu", K, block);
    QK_PICK_OR(k, qk_pick_fwht, "fwht");
    k->run(x, ldx, M, K, block);
    return QK_OK;
}

qk_status qk_colscale_with(const qk_colscale_kernel *k, const float *x, size_t ldx, size_t M, size_t K, const float *s, float *y,
                           size_t ldy) {
    qk_clear_error();
    qk_status st;
    if ((st = check_rows(x, ldx, M, K, "x")) || (st = check_f32(y, ldy, K, "y"))) return st;
    if (!s) return qk_fail(QK_ERR_ARG, "column scales are NULL");
    for (size_t j = 0; j < K; j++)
        if (!isfinite(s[j])) return qk_fail(QK_ERR_NONFINITE, "column scale %zu is not finite (%g)", j, (double)s[j]);
    QK_PICK_OR(k, qk_pick_colscale, "colscale");
    k->run(x, ldx, M, K, s, y, ldy);
    return QK_OK;
}

qk_status qk_colsplit_with(const qk_colsplit_kernel *k, const float *x, size_t ldx, size_t M, size_t K, const uint32_t *idx,
                           size_t nidx, float *xz, size_t ldxz, float *xo, size_t ldxo) {
    qk_clear_error();
    qk_status st;
    if ((st = check_rows(x, ldx, M, K, "x")) || (st = check_f32(xz, ldxz, K, "xz"))) return st;
    if (nidx > K) return qk_fail(QK_ERR_SHAPE, "%zu outlier columns out of K=%zu", nidx, K);
    if (nidx && (!idx || (st = check_f32(xo, ldxo, nidx, "xo")))) return st ? st : qk_fail(QK_ERR_ARG, "outlier indices are NULL");
    for (size_t j = 0; j < nidx; j++) {
        if (idx[j] >= K) return qk_fail(QK_ERR_ARG, "outlier column %u is out of range (K=%zu)", idx[j], K);
        if (j && idx[j] <= idx[j - 1]) return qk_fail(QK_ERR_ARG, "outlier columns are not strictly increasing at %zu", j);
    }
    QK_PICK_OR(k, qk_pick_colsplit, "colsplit");
    k->run(x, ldx, M, K, idx, nidx, xz, ldxz, xo, ldxo);
    return QK_OK;
}

qk_status qk_gemm_f32_with(const qk_gemm_f32_kernel *k, size_t M, size_t N, size_t K, const float *x, size_t ldx, const float *w,
                           size_t ldw, float *y, size_t ldy, int accumulate) {
    qk_clear_error();
    qk_status st;
    if ((st = check_rows(x, ldx, M, K, "x")) || (st = check_rows(w, ldw, N, K, "w")) || (st = check_f32(y, ldy, N, "y"))) return st;
    QK_PICK_OR(k, qk_pick_gemm_f32, "gemm_f32");
    k->run(M, N, K, x, ldx, w, ldw, y, ldy, accumulate);
    return QK_OK;
}

#define QK_I8_MAX_K 65536 /* 65536 · 128² < 2^31: the int32 sums are exact */

static qk_status check_scales(const float *s, size_t n, const char *what) {
    if (!s) return qk_fail(QK_ERR_ARG, "%s are NULL", what);
    for (size_t i = 0; i < n; i++)
        if (!isfinite(s[i])) return qk_fail(QK_ERR_NONFINITE, "%s[%zu] is not finite (%g)", what, i, (double)s[i]);
    return QK_OK;
}

qk_status qk_gemm_i8_with(const qk_gemm_i8_kernel *k, size_t M, size_t N, size_t K, const int8_t *x, size_t ldx, const float *sx,
                          const int8_t *w, size_t ldw, const float *sw, float *y, size_t ldy, int accumulate) {
    qk_clear_error();
    qk_status st;
    if (M == 0 || N == 0 || K == 0) return qk_fail(QK_ERR_SHAPE, "empty int8 gemm (%zux%zux%zu)", M, N, K);
    if (K > QK_I8_MAX_K) return qk_fail(QK_ERR_SHAPE, "int8 gemm K=%zu is above %d (int32 sums would overflow)", K, QK_I8_MAX_K);
    if (M > ((size_t)1 << 31) || N > ((size_t)1 << 31)) return qk_fail(QK_ERR_SHAPE, "int8 gemm too large (%zux%zu)", M, N);
    if (!x || !w) return qk_fail(QK_ERR_ARG, "int8 codes are NULL");
    if (ldx < K || ldw < K) return qk_fail(QK_ERR_ARG, "int8 row stride below K=%zu (x %zu, w %zu)", K, ldx, ldw);
    if ((st = check_scales(sx, M, "activation scales")) || (st = check_scales(sw, N, "weight scales")) || (st = check_f32(y, ldy, N, "y")))
        return st;
    QK_PICK_OR(k, qk_pick_gemm_i8, "gemm_i8");
    k->run(M, N, K, x, ldx, sx, w, ldw, sw, y, ldy, accumulate);
    return QK_OK;
}

qk_status qk_rowquant_i8(const float *x, size_t ldx, size_t M, size_t K, int8_t *q, size_t ldq, float *s) {
    qk_clear_error();
    qk_status st = check_rows(x, ldx, M, K, "x");
    if (st) return st;
    if (K > QK_I8_MAX_K) return qk_fail(QK_ERR_SHAPE, "int8 rows of K=%zu are above %d", K, QK_I8_MAX_K);
    if (!q || !s) return qk_fail(QK_ERR_ARG, "int8 codes or scales are NULL");
    if (ldq < K) return qk_fail(QK_ERR_ARG, "int8 row stride %zu is below K=%zu", ldq, K);
    for (size_t m = 0; m < M; m++) {
        const float *xr = x + m * ldx;
        float amax = 0.0f;
        for (size_t k = 0; k < K; k++) {
            if (!isfinite(xr[k])) return qk_fail(QK_ERR_NONFINITE, "x[%zu][%zu] is not finite (%g)", m, k, (double)xr[k]);
            amax = fmaxf(amax, fabsf(xr[k]));
        }
        const double id = amax > 0.0f ? 127.0 / (double)amax : 0.0; /* in double: finite for subnormal amax too */
        s[m] = amax / 127.0f;
        for (size_t k = 0; k < K; k++) {
            double v = round((double)xr[k] * id);
            q[m * ldq + k] = (int8_t)(v > 127.0 ? 127.0 : v < -127.0 ? -127.0 : v);
        }
    }
    return QK_OK;
}
