/* Outlier handling (outliers.h): detection and the strategy comparison. */
#include "outliers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "metrics.h"
#include "refmath.h"

static const char *const strat_names[QK_OS_COUNT] = {"fp32", "W4A4", "W4A8", "split", "split8", "smooth", "rotate"};
const char *qk_ostrat_name(qk_ostrat s) { return (unsigned)s < QK_OS_COUNT ? strat_names[s] : "?"; }

void qk_outlier_rule_default(qk_outlier_rule *r) {
    r->abs_thr = 6.0;
    r->rel = 0;
    r->topk = 0;
}

void qk_outlier_rule_describe(const qk_outlier_rule *r, char *buf, size_t len) {
    if (r->topk) snprintf(buf, len, "top-%zu absmax", r->topk);
    else if (r->rel > 0) snprintf(buf, len, "absmax > %g x median channel absmax", r->rel);
    else snprintf(buf, len, "absmax > %g", r->abs_thr);
}

double qk_channel_stats(const float *x, size_t ldx, size_t M, size_t K, double *absmax, double *kurt, double *crest) {
    double *am = malloc(K * sizeof *am), *srt = malloc(K * sizeof *srt);
    if (!am || !srt) {
        free(am), free(srt);
        return NAN;
    }
    for (size_t k = 0; k < K; k++) {
        double mx = 0, s1 = 0;
        for (size_t m = 0; m < M; m++) {
            double v = x[m * ldx + k];
            mx = fmax(mx, fabs(v));
            s1 += v;
        }
        am[k] = mx;
        if (kurt) {
            double mu = s1 / (double)M, m2 = 0, m4 = 0;
            for (size_t m = 0; m < M; m++) {
                double d = x[m * ldx + k] - mu, d2 = d * d;
                m2 += d2, m4 += d2 * d2;
            }
            m2 /= (double)M, m4 /= (double)M;
            kurt[k] = m2 > 0 ? m4 / (m2 * m2) : 0;
        }
    }
    memcpy(srt, am, K * sizeof *srt);
    double med = qk_median(srt, (int)K);
    for (size_t k = 0; k < K; k++) {
        if (absmax) absmax[k] = am[k];
        if (crest) crest[k] = med > 0 ? am[k] / med : (am[k] > 0 ? INFINITY : 0);
    }
    free(am), free(srt);
    return med;
}

typedef struct ranked {
    double v;
    uint32_t k;
} ranked;

static int cmp_ranked_desc(const void *a, const void *b) {
    const ranked *x = a, *y = b;
    if (x->v != y->v) return x->v < y->v ? 1 : -1;
    return x->k < y->k ? -1 : x->k > y->k;
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

size_t qk_outlier_detect(const float *x, size_t ldx, size_t M, size_t K, const qk_outlier_rule *r, uint32_t *idx) {
    double *am = malloc(K * sizeof *am), *cr = malloc(K * sizeof *cr);
    if (!am || !cr || isnan(qk_channel_stats(x, ldx, M, K, am, NULL, cr))) {
        free(am), free(cr);
        return (size_t)-1;
    }
    size_t n = 0;
    if (r->topk) {
        ranked *rk = malloc(K * sizeof *rk);
        if (!rk) {
            free(am), free(cr);
            return (size_t)-1;
        }
        for (size_t k = 0; k < K; k++) rk[k] = (ranked){am[k], (uint32_t)k};
        qsort(rk, K, sizeof *rk, cmp_ranked_desc);
        n = r->topk < K ? r->topk : K;
        for (size_t j = 0; j < n; j++) idx[j] = rk[j].k;
        qsort(idx, n, sizeof *idx, cmp_u32);
        free(rk);
    } else {
        for (size_t k = 0; k < K; k++)
            if (r->rel > 0 ? cr[k] > r->rel : am[k] > r->abs_thr) idx[n++] = (uint32_t)k;
    }
    free(am), free(cr);
    return n;
}

/* ---- the comparison ---- */

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The kernels a run uses: NULL = the dispatcher's choice. */
typedef struct okern {
    const qk_fwht_kernel *fwht;
    const qk_colscale_kernel *colscale;
    const qk_colsplit_kernel *colsplit;
    const qk_gemm_f32_kernel *gemm_f32;
    const qk_gemm_i8_kernel *gemm_i8;
    const qk_matmul_kernel *a4, *a8;
} okern;

/* The first variant of a family list (priority order) at or below tier t that this CPU runs. */
#define PICK_AT(list, count, t)                                                   \
    do {                                                                         \
        for (size_t i_ = 0; i_ < (count); i_++)                                  \
            if ((list)[i_].tier <= (t) && qk_tier_allowed((list)[i_].tier)) return &(list)[i_]; \
        return NULL;                                                             \
    } while (0)
static const qk_fwht_kernel *fwht_at(qk_tier t) { PICK_AT(qk_fwht_kernels, qk_fwht_kernel_count, t); }
static const qk_colscale_kernel *colscale_at(qk_tier t) { PICK_AT(qk_colscale_kernels, qk_colscale_kernel_count, t); }
static const qk_colsplit_kernel *colsplit_at(qk_tier t) { PICK_AT(qk_colsplit_kernels, qk_colsplit_kernel_count, t); }
static const qk_gemm_f32_kernel *gemm_f32_at(qk_tier t) { PICK_AT(qk_gemm_f32_kernels, qk_gemm_f32_kernel_count, t); }
static const qk_gemm_i8_kernel *gemm_i8_at(qk_tier t) { PICK_AT(qk_gemm_i8_kernels, qk_gemm_i8_kernel_count, t); }
static const qk_matmul_kernel *matmul_at(qk_tier t, qk_mode mode) {
    for (size_t i = 0; i < qk_matmul_kernel_count; i++) {
        const qk_matmul_kernel *k = &qk_matmul_kernels[i];
        if (k->op == QK_OP_GEMM && k->format == QK_W4S && k->mode == mode && k->tier <= t && qk_tier_allowed(k->tier)) return k;
    }
    return NULL;
}

static int pick_kernels(const qk_outlier_cfg *c, okern *k, char *err, size_t errlen) {
    memset(k, 0, sizeof *k);
    if (!c->at_tier) {
        k->a4 = qk_pick_matmul(QK_OP_GEMM, QK_W4S, QK_W4A4), k->a8 = qk_pick_matmul(QK_OP_GEMM, QK_W4S, QK_W4A8);
        k->gemm_f32 = qk_pick_gemm_f32(), k->gemm_i8 = qk_pick_gemm_i8();
    } else {
        k->fwht = fwht_at(c->tier), k->colscale = colscale_at(c->tier), k->colsplit = colsplit_at(c->tier);
        k->gemm_f32 = gemm_f32_at(c->tier), k->gemm_i8 = gemm_i8_at(c->tier);
        k->a4 = matmul_at(c->tier, QK_W4A4), k->a8 = matmul_at(c->tier, QK_W4A8);
        if (!k->fwht || !k->colscale || !k->colsplit) k->a4 = NULL;
    }
    if (!k->a4 || !k->a8 || !k->gemm_f32 || !k->gemm_i8) {
        snprintf(err, errlen, "no kernels for the outlier strategies at tier %s", c->at_tier ? qk_tier_name(c->tier) : "(dispatcher)");
        return -1;
    }
    return 0;
}

/* Everything one strategy's timed path touches. */
typedef struct opath {
    qk_ostrat s;
    size_t M, N, K, no;
    const float *x, *w;           /* X (M×K), W (N×K) */
    float *xt, *xo, *y;           /* transformed X (M×K), X's outlier columns (M×no), Y (M×N) */
    const float *wo, *sinv;       /* W's outlier columns (N×no), 1/s (K) */
    int8_t *xoq;                  /* split8: X's outlier columns in int8 (M×no), their row scales sxo (M) */
    float *sxo;
    const int8_t *woq;            /* split8: W's outlier columns in int8 (N×no), their row scales (N) */
    const float *swo;
    const uint32_t *idx;
    size_t hblock;
    qk_matmul_plan *plan;
    const okern *k;
} opath;

static qk_status run_path(const opath *p) {
    const size_t M = p->M, N = p->N, K = p->K;
    const okern *k = p->k;
    switch (p->s) {
    case QK_OS_FP32: return qk_gemm_f32_with(k->gemm_f32, M, N, K, p->x, K, p->w, K, p->y, N, 0);
    case QK_OS_W4A4:
    case QK_OS_W4A8: return qk_matmul_run(p->plan, M, p->x, K, p->y, N);
    case QK_OS_SPLIT: {
        qk_status s = qk_colsplit_with(k->colsplit, p->x, K, M, K, p->idx, p->no, p->xt, K, p->xo, p->no ? p->no : 1);
        if (!s) s = qk_matmul_run(p->plan, M, p->xt, K, p->y, N);
        if (!s && p->no) s = qk_gemm_f32_with(k->gemm_f32, M, N, p->no, p->xo, p->no, p->wo, p->no, p->y, N, 1);
        return s;
    }
    case QK_OS_SPLIT8: {
        const size_t lo = p->no ? p->no : 1;
        qk_status s = qk_colsplit_with(k->colsplit, p->x, K, M, K, p->idx, p->no, p->xt, K, p->xo, lo);
        if (!s && p->no) s = qk_rowquant_i8(p->xo, lo, M, p->no, p->xoq, lo, p->sxo);
        if (!s) s = qk_matmul_run(p->plan, M, p->xt, K, p->y, N);
        if (!s && p->no) s = qk_gemm_i8_with(k->gemm_i8, M, N, p->no, p->xoq, lo, p->sxo, p->woq, lo, p->swo, p->y, N, 1);
        return s;
    }
    case QK_OS_SMOOTH: {
        qk_status s = qk_colscale_with(k->colscale, p->x, K, M, K, p->sinv, p->xt, K);
        return s ? s : qk_matmul_run(p->plan, M, p->xt, K, p->y, N);
    }
    case QK_OS_ROTATE: {
        memcpy(p->xt, p->x, M * K * sizeof(float));
        qk_status s = qk_fwht_with(k->fwht, p->xt, K, M, K, p->hblock);
        return s ? s : qk_matmul_run(p->plan, M, p->xt, K, p->y, N);
    }
    default: return QK_ERR_ARG;
    }
}

static double time_path(const opath *p, double min_time) {
    enum { MAXR = 101 };
    double t[MAXR], start = now_s();
    int n = 0;
    run_path(p); /* warm-up */
    while (n < MAXR && (n < 5 || now_s() - start < min_time)) {
        double t0 = now_s();
        run_path(p);
        t[n++] = now_s() - t0;
    }
    return qk_median(t, n);
}

/* NMSE of y (double) against ref. */
static double nmse_d(const double *ref, const double *y, size_t n) {
    double a = 0, b = 0;
    for (size_t i = 0; i < n; i++) a += (y[i] - ref[i]) * (y[i] - ref[i]), b += ref[i] * ref[i];
    return b > 0 ? a / b : NAN;
}

typedef struct ctx {
    const qk_outlier_cfg *c;
    size_t M, N, K;
    double *ref, *yd, *yd2, *xq;
    qk_rows wf; /* the f32 weights */
    char *err;
    size_t errlen;
} ctx;

/* xq ← the activations x quantized by `rule` at the configured group, exactly in double. */
static int quant_x(ctx *u, qk_act_rule rule, const float *x) {
    qk_qact a;
    qk_status s = qk_actquant_reference(rule, x, u->K, u->M, u->K, u->c->group, &a);
    if (s) {
        snprintf(u->err, u->errlen, "activation quantization: %s", qk_last_error());
        return -1;
    }
    qk_x_from_qact(&a, u->M, u->xq);
    qk_qact_free(&a);
    return 0;
}

static int exact(ctx *u, const double *x, size_t K, const qk_rows *w, double *y) {
    if (qk_exact_matmul(x, u->M, K, w, u->N, y, NULL, u->c->threads)) {
        snprintf(u->err, u->errlen, "out of memory in the exact matmul");
        return -1;
    }
    return 0;
}

static int quant_w(ctx *u, const float *w, qk_qmat *q) {
    if (qk_qmat_alloc(q, QK_W4S, QK_SCALE_F32, u->N, u->K, u->c->group) || qk_quantize(w, u->K, q)) {
        snprintf(u->err, u->errlen, "weight quantization: %s", qk_last_error());
        return -1;
    }
    return 0;
}

/* e_A (quantized activations, f32 weights) and e_WA (both quantized) of strategy st
 * by exact math on the quantized values, and its bpw. xuse/wuse: the f32
 * activations and weights it quantizes (transformed; for the split, with the
 * outlier columns zeroed), wq: wuse quantized; for the split, xo/wo: the
 * outlier columns (M×no, N×no) as the strategy multiplies them. */
static int strategy_errors(ctx *u, qk_ostrat st, const float *xuse, const float *wuse, const qk_qmat *wq,
                           const uint32_t *idx, size_t no, const float *xo, const float *wo, qk_outlier_row *r) {
    const size_t M = u->M, N = u->N, K = u->K, MN = M * N;
    const double wbpw = qk_bpw(QK_W4S, u->c->group, QK_SCALE_F32);
    if (quant_x(u, st == QK_OS_W4A8 ? QK_ACT_A8 : QK_ACT_A4, xuse)) return -1;
    qk_rows wf2 = {wuse, K, NULL}, wqr = {NULL, K, wq};
    if (st != QK_OS_SPLIT && st != QK_OS_SPLIT8) {
        if (exact(u, u->xq, K, &wf2, u->yd) || exact(u, u->xq, K, &wqr, u->yd2)) return -1;
        r->e_a = nmse_d(u->ref, u->yd, MN);
        r->e_wa = nmse_d(u->ref, u->yd2, MN);
        r->bpw = wbpw + (st == QK_OS_SMOOTH ? 32.0 / (double)N : 0.0);
        return 0;
    }
    /* e_A: the outlier columns as multiplied, the rest quantized, against the f32 weights */
    for (size_t m = 0; m < M; m++)
        for (size_t j = 0; j < no; j++) u->xq[m * K + idx[j]] = xo[m * no + j];
    if (exact(u, u->xq, K, &u->wf, u->yd)) return -1;
    r->e_a = nmse_d(u->ref, u->yd, MN);
    /* e_WA: X̂Z·ŴZᵀ + XO·WOᵀ (X̂Z is 0 on the outlier columns) */
    for (size_t m = 0; m < M; m++)
        for (size_t j = 0; j < no; j++) u->xq[m * K + idx[j]] = 0;
    if (exact(u, u->xq, K, &wqr, u->yd)) return -1;
    if (no) {
        double *yo = malloc(MN * sizeof(double)), *xo_d = malloc(M * no * sizeof(double));
        int bad = !yo || !xo_d;
        if (!bad) {
            qk_x_from_f32(xo, no, M, no, xo_d);
            qk_rows wor = {wo, no, NULL};
            bad = qk_exact_matmul(xo_d, M, no, &wor, N, yo, NULL, u->c->threads);
        }
        for (size_t i = 0; i < MN && !bad; i++) u->yd[i] += yo[i];
        free(yo), free(xo_d);
        if (bad) {
            snprintf(u->err, u->errlen, "out of memory in the exact matmul");
            return -1;
        }
    }
    r->e_wa = nmse_d(u->ref, u->yd, MN);
    /* the outlier columns' weights: f32, or int8 codes and one f32 scale per row */
    r->bpw = wbpw + (st == QK_OS_SPLIT ? 32.0 * (double)no : no ? 8.0 * (double)no + 32.0 : 0.0) / (double)K;
    return 0;
}

int qk_outlier_compare(const qk_outlier_cfg *c, const char *data, const float *w, size_t N, const float *xc, size_t Mc,
                       const float *x, size_t M, size_t K, qk_outlier_row rows[QK_OS_COUNT], char *err, size_t errlen) {
    int rc = -1;
    ctx u = {c, M, N, K, NULL, NULL, NULL, NULL, {NULL, 0, NULL}, err, errlen};
    size_t MK = M * K, NK = N * K, MN = M * N;
    u.ref = malloc(MN * sizeof(double));
    u.yd = malloc(MN * sizeof(double));
    u.yd2 = malloc(MN * sizeof(double));
    u.xq = malloc(MK * sizeof(double));
    double *xd = malloc(MK * sizeof(double));
    float *xt = malloc(MK * sizeof(float)), *wt = malloc(NK * sizeof(float)), *y = malloc(MN * sizeof(float));
    float *xo = malloc(M * K * sizeof(float) + 4), *wo = malloc(N * K * sizeof(float) + 4);
    float *s = malloc(K * sizeof(float)), *si = malloc(K * sizeof(float));
    uint32_t *idx = malloc(K * sizeof(uint32_t));
    int8_t *xoq = malloc(MK + 1), *woq = malloc(NK + 1);
    float *sxo = malloc(M * sizeof(float)), *swo = malloc(N * sizeof(float));
    float *xoe = malloc(MK * sizeof(float) + 4), *woe = malloc(NK * sizeof(float) + 4); /* split8's columns dequantized */
    qk_qmat wq = {0};
    qk_matmul_plan plan;
    int have_plan = 0;
    okern kern;
    memset(&plan, 0, sizeof plan);
    if (pick_kernels(c, &kern, err, errlen)) goto out;
    qk_tier run_tier = c->tier;
    if (!c->at_tier)
        for (int t = QK_TIER_COUNT - 1; t >= 0; t--)
            if (qk_tier_allowed((qk_tier)t)) {
                run_tier = (qk_tier)t;
                break;
            }
    if (!u.ref || !u.yd || !u.yd2 || !u.xq || !xd || !xt || !wt || !y || !xo || !wo || !s || !si || !idx || !xoq || !woq || !sxo || !swo || !xoe || !woe) {
        snprintf(err, errlen, "out of memory for %zu x %zu x %zu", M, N, K);
        goto out;
    }
    size_t no = qk_outlier_detect(xc, K, Mc, K, &c->rule, idx);
    if (no == (size_t)-1) {
        snprintf(err, errlen, "out of memory in detection");
        goto out;
    }
    qk_x_from_f32(x, K, M, K, xd);
    u.wf = (qk_rows){w, K, NULL};
    if (exact(&u, xd, K, &u.wf, u.ref)) goto out;

    for (int si_ = 0; si_ < QK_OS_COUNT; si_++) {
        qk_ostrat st = (qk_ostrat)si_;
        qk_outlier_row *r = &rows[si_];
        memset(r, 0, sizeof *r);
        snprintf(r->data, sizeof r->data, "%s", data);
        r->strategy = st, r->M = M, r->N = N, r->K = K, r->n_out = no;
        opath p = {st, M, N, K, no, x, w, xt, xo, y, wo, si, xoq, sxo, woq, swo, idx, c->hblock, &plan, &kern};
        const float *xoc = xo, *woc = wo; /* the outlier columns as the split multiplies them */
        const qk_matmul_kernel *mk = st == QK_OS_W4A8 ? kern.a8 : kern.a4;
        snprintf(r->tier, sizeof r->tier, "%s", qk_tier_name(run_tier));
        const qk_outlier_row *old = c->reuse ? &c->reuse[si_] : NULL;
        const float *wuse = w; /* the f32 weights the strategy quantizes */
        const float *xuse = x; /* the f32 activations it quantizes */
        qk_mode mode = st == QK_OS_W4A8 ? QK_W4A8 : QK_W4A4;
        if (st == QK_OS_SPLIT || st == QK_OS_SPLIT8) {
            if (qk_colsplit_with(kern.colsplit, w, K, N, K, idx, no, wt, K, wo, no ? no : 1) ||
                qk_colsplit_with(kern.colsplit, x, K, M, K, idx, no, xt, K, xo, no ? no : 1)) {
                snprintf(err, errlen, "colsplit: %s", qk_last_error());
                goto out;
            }
            wuse = wt, xuse = xt;
            if (st == QK_OS_SPLIT8 && no) {
                if (qk_rowquant_i8(wo, no, N, no, woq, no, swo) || qk_rowquant_i8(xo, no, M, no, xoq, no, sxo)) {
                    snprintf(err, errlen, "rowquant_i8: %s", qk_last_error());
                    goto out;
                }
                for (size_t n = 0; n < N; n++)
                    for (size_t j = 0; j < no; j++) woe[n * no + j] = swo[n] * (float)woq[n * no + j];
                for (size_t m = 0; m < M; m++)
                    for (size_t j = 0; j < no; j++) xoe[m * no + j] = sxo[m] * (float)xoq[m * no + j];
                xoc = xoe, woc = woe;
            }
        } else if (st == QK_OS_SMOOTH) {
            double *ax = malloc(K * sizeof *ax), *aw = malloc(K * sizeof *aw);
            if (!ax || !aw) {
                free(ax), free(aw);
                snprintf(err, errlen, "out of memory");
                goto out;
            }
            qk_channel_stats(xc, K, Mc, K, ax, NULL, NULL);
            qk_channel_stats(w, K, N, K, aw, NULL, NULL);
            for (size_t k = 0; k < K; k++) {
                double v = pow(fmax(ax[k], 1e-6), c->smooth_alpha) / pow(fmax(aw[k], 1e-6), 1.0 - c->smooth_alpha);
                s[k] = (float)v;
                si[k] = 1.0f / s[k];
            }
            free(ax), free(aw);
            if (qk_colscale_with(kern.colscale, w, K, N, K, s, wt, K) || qk_colscale_with(kern.colscale, x, K, M, K, si, xt, K)) {
                snprintf(err, errlen, "colscale: %s", qk_last_error());
                goto out;
            }
            wuse = wt, xuse = xt;
        } else if (st == QK_OS_ROTATE) {
            memcpy(wt, w, NK * sizeof(float));
            memcpy(xt, x, MK * sizeof(float));
            if (qk_fwht_with(kern.fwht, wt, K, N, K, c->hblock) || qk_fwht_with(kern.fwht, xt, K, M, K, c->hblock)) {
                snprintf(err, errlen, "fwht: %s", qk_last_error());
                goto out;
            }
            wuse = wt, xuse = xt;
        }

        if (st == QK_OS_FP32) {
            r->bpw = 32;
            if (run_path(&p)) {
                snprintf(err, errlen, "gemm_f32: %s", qk_last_error());
                goto out;
            }
        } else {
            if (quant_w(&u, wuse, &wq)) goto out;
            if (old) r->e_a = old->e_a, r->e_wa = old->e_wa, r->bpw = old->bpw;
            else if (strategy_errors(&u, st, xuse, wuse, &wq, idx, no, xoc, woc, r)) goto out;
            if (qk_matmul_prepare(&plan, mk, QK_OP_GEMM, mode, &wq, M)) {
                snprintf(err, errlen, "matmul prepare (%s): %s", qk_mode_name(mode), qk_last_error());
                goto out;
            }
            have_plan = 1;
            if (run_path(&p)) {
                snprintf(err, errlen, "%s path: %s", qk_ostrat_name(st), qk_last_error());
                goto out;
            }
        }
        qk_err e = qk_err_df(u.ref, N, y, N, M, N);
        r->sqnr_db = e.sqnr_db;
        if (c->timing) {
            r->t_median = time_path(&p, c->min_time);
            r->gops = 2.0 * (double)M * (double)N * (double)K / r->t_median / 1e9;
        }
        if (have_plan) qk_matmul_release(&plan), have_plan = 0;
        qk_qmat_free(&wq);
        memset(&wq, 0, sizeof wq);
    }
    {
        double a4 = rows[QK_OS_W4A4].e_wa, a8 = rows[QK_OS_W4A8].e_wa;
        double a4a = rows[QK_OS_W4A4].e_a, a8a = rows[QK_OS_W4A8].e_a;
        for (int i = 0; i < QK_OS_COUNT; i++) {
            rows[i].recovery = a4 > a8 ? (a4 - rows[i].e_wa) / (a4 - a8) : NAN;
            rows[i].recovery_a = a4a > a8a ? (a4a - rows[i].e_a) / (a4a - a8a) : NAN;
        }
    }
    rc = 0;
out:
    if (have_plan) qk_matmul_release(&plan);
    qk_qmat_free(&wq);
    free(u.ref), free(u.yd), free(u.yd2), free(u.xq), free(xd), free(xt), free(wt), free(y), free(xo), free(wo), free(s), free(si), free(idx);
    free(xoq), free(woq), free(sxo), free(swo), free(xoe), free(woe);
    return rc;
}

/* ---- output ---- */

void qk_outlier_print(FILE *f, const qk_outlier_row *rows, size_t n) {
    fprintf(f, "%-22s %-10s %-7s %5s %10s %10s %9s %6s %10s %8s %9s %9s\n", "data", "tier", "strategy", "n_out", "e_A", "e_WA",
            "SQNR dB", "bpw", "t (us)", "GOP/s", "recovery", "recov(eA)");
    for (size_t i = 0; i < n; i++) {
        const qk_outlier_row *r = &rows[i];
        char rec[16] = "-", reca[16] = "-", t[16] = "-", g[16] = "-";
        if (r->strategy != QK_OS_FP32 && isfinite(r->recovery)) snprintf(rec, sizeof rec, "%.3f", r->recovery);
        if (r->strategy != QK_OS_FP32 && isfinite(r->recovery_a)) snprintf(reca, sizeof reca, "%.3f", r->recovery_a);
        if (r->t_median > 0) snprintf(t, sizeof t, "%.1f", r->t_median * 1e6), snprintf(g, sizeof g, "%.1f", r->gops);
        fprintf(f, "%-22s %-10s %-7s %5zu %10.3e %10.3e %9.2f %6.3f %10s %8s %9s %9s\n",
                i && !strcmp(rows[i - 1].data, r->data) ? "" : r->data, r->tier, qk_ostrat_name(r->strategy), r->n_out, r->e_a, r->e_wa, r->sqnr_db, r->bpw, t, g, rec, reca);
    }
}

/* Write through a temporary file renamed into place. */
static FILE *open_tmp(const char *path, char *tmp, size_t len) {
    snprintf(tmp, len, "%s.tmp", path);
    return fopen(tmp, "w");
}
static int close_tmp(FILE *f, const char *tmp, const char *path) {
    int bad = ferror(f) | fclose(f);
    if (bad || rename(tmp, path)) {
        remove(tmp);
        return -1;
    }
    return 0;
}

static void num(FILE *f, double v) {
    if (isfinite(v)) fprintf(f, "%.6g", v);
    else fprintf(f, "null");
}

int qk_outlier_write_csv(const char *path, const qk_outlier_row *rows, size_t n) {
    char tmp[1200];
    FILE *f = open_tmp(path, tmp, sizeof tmp);
    if (!f) return -1;
    fprintf(f, "data,tier,strategy,M,N,K,n_out,e_a,e_wa,sqnr_db,bpw,t_median_s,gops,recovery,recovery_e_a\n");
    for (size_t i = 0; i < n; i++) {
        const qk_outlier_row *r = &rows[i];
        fprintf(f, "\"%s\",%s,%s,%zu,%zu,%zu,%zu,%.6g,%.6g,%.4f,%.4f,%.6g,%.4f,%.4f,%.4f\n", r->data, r->tier, qk_ostrat_name(r->strategy), r->M, r->N,
                r->K, r->n_out, r->e_a, r->e_wa, r->sqnr_db, r->bpw, r->t_median, r->gops, r->recovery, r->recovery_a);
    }
    return close_tmp(f, tmp, path);
}

int qk_outlier_write_json(const char *path, const qk_outlier_row *rows, size_t n, const char *command, const char *meta) {
    char tmp[1200];
    FILE *f = open_tmp(path, tmp, sizeof tmp);
    if (!f) return -1;
    fprintf(f, "{\n  \"command\": \"%s\",\n  \"meta\": \"%s\",\n  \"rows\": [\n", command, meta ? meta : "");
    for (size_t i = 0; i < n; i++) {
        const qk_outlier_row *r = &rows[i];
        fprintf(f, "    {\"data\": \"%s\", \"tier\": \"%s\", \"strategy\": \"%s\", \"M\": %zu, \"N\": %zu, \"K\": %zu, \"n_out\": %zu, \"e_a\": ",
                r->data, r->tier, qk_ostrat_name(r->strategy), r->M, r->N, r->K, r->n_out);
        num(f, r->e_a), fprintf(f, ", \"e_wa\": "), num(f, r->e_wa), fprintf(f, ", \"sqnr_db\": "), num(f, r->sqnr_db);
        fprintf(f, ", \"bpw\": "), num(f, r->bpw), fprintf(f, ", \"t_median_s\": "), num(f, r->t_median);
        fprintf(f, ", \"gops\": "), num(f, r->gops), fprintf(f, ", \"recovery\": "), num(f, r->recovery);
        fprintf(f, ", \"recovery_e_a\": "), num(f, r->recovery_a);
        fprintf(f, "}%s\n", i + 1 < n ? "," : "");
    }
    fprintf(f, "  ]\n}\n");
    return close_tmp(f, tmp, path);
}

static int same_group(const qk_outlier_row *a, const qk_outlier_row *b) { return !strcmp(a->data, b->data) && !strcmp(a->tier, b->tier); }

/* Grouped bars: output SQNR (dB) per data set, one bar per quantized strategy. */
int qk_outlier_write_svg(const char *path, const qk_outlier_row *rows, size_t n) {
    static const char *const col[QK_OS_COUNT] = {"#000000", "#d62728", "#7f7f7f", "#1f77b4", "#9467bd", "#2ca02c", "#ff7f0e"};
    size_t nd = 0;
    double ymax = 1;
    int tiers = 0; /* rows of several tiers: one group per data set and tier */
    for (size_t i = 1; i < n; i++) tiers |= strcmp(rows[i].tier, rows[0].tier) != 0;
    for (size_t i = 0; i < n; i++) {
        if (!i || !same_group(&rows[i - 1], &rows[i])) nd++;
        if (rows[i].strategy != QK_OS_FP32 && isfinite(rows[i].sqnr_db)) ymax = fmax(ymax, rows[i].sqnr_db);
    }
    ymax = ceil(ymax / 5) * 5;
    const double W = fmax(120.0 + 90.0 * (double)nd, 60.0 + 80.0 * (QK_OS_COUNT - 1) + 40.0), H = 420, L = 60, T = 40, PH = 280;
    char tmp[1200];
    FILE *f = open_tmp(path, tmp, sizeof tmp);
    if (!f) return -1;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" font-size=\"11\">\n", W, H);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    fprintf(f, "<text x=\"%.0f\" y=\"20\" font-size=\"14\">Output SQNR (dB) against FP32 by outlier strategy (w4s)</text>\n", L);
    for (double v = 0; v <= ymax + 1e-9; v += 5) {
        double yy = T + PH - PH * v / ymax;
        fprintf(f, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", L, W - 20, yy, yy);
        fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%.0f</text>\n", L - 4, yy + 4, v);
    }
    size_t d = 0;
    for (size_t i = 0; i < n; d++) {
        size_t j = i;
        double x0 = L + 10 + 90.0 * (double)d;
        for (; j < n && same_group(&rows[j], &rows[i]); j++) {
            const qk_outlier_row *r = &rows[j];
            if (r->strategy == QK_OS_FP32 || !isfinite(r->sqnr_db)) continue;
            double v = fmax(0, r->sqnr_db), h = PH * v / ymax, xx = x0 + 14.0 * (double)(r->strategy - 1);
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"%.1f\" fill=\"%s\"><title>%s %s %s: %.2f dB</title></rect>\n", xx,
                    T + PH - h, h, col[r->strategy], r->data, r->tier, qk_ostrat_name(r->strategy), r->sqnr_db);
        }
        fprintf(f, "<text transform=\"translate(%.1f,%.0f) rotate(30)\">%s%s%s</text>\n", x0, T + PH + 14, rows[i].data, tiers ? " " : "",
                tiers ? rows[i].tier : "");
        i = j;
    }
    for (int s = 1; s < QK_OS_COUNT; s++)
        fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"10\" height=\"10\" fill=\"%s\"/><text x=\"%.0f\" y=\"%.0f\">%s</text>\n",
                L + 80.0 * (s - 1), H - 22, col[s], L + 80.0 * (s - 1) + 14, H - 13, qk_ostrat_name((qk_ostrat)s));
    fprintf(f, "</svg>\n");
    return close_tmp(f, tmp, path);
}
