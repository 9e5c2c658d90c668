/* The evaluation engine of the accuracy commands (evaluate.h). */
#include "evaluate.h"
#include "metrics.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "refmath.h"

static const double U = 0x1p-24;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- the analytical RTN model on Gaussian data ---- */

static double Phi(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }
static double phi(double x) { return exp(-0.5 * x * x) * 0.39894228040143267794; }

/* ∫_a^b (x − c)² φ(x) dx = [(1 + c²)Φ(x) − xφ(x) + 2cφ(x)]_a^b */
static double sq_moment(double a, double b, double c) {
    double G = (1 + c * c) * (Phi(b) - Phi(a));
    G += -b * phi(b) + a * phi(a) + 2 * c * (phi(b) - phi(a));
    return G;
}

/* E[e² | max = m] for one of the other g−1 values: uniform on the bins of
 * step Δ = m/qmax inside [−m, m], weighted by the truncated normal density. */
static double cond_err2(double m, int qmax) {
    double d = m / qmax, s = 0;
    for (int j = 0; j <= qmax; j++) { /* x >= 0 half; doubled */
        double a = j == 0 ? 0 : (j - 0.5) * d, b = j == qmax ? m : (j + 0.5) * d;
        s += sq_moment(a, b, j * d);
    }
    return 2 * s / (2 * Phi(m) - 1);
}

double acc_rtn_gauss_nmse(int qmax, size_t g, int exact) {
    /* density of the max of g |Z|: g·2φ(m)·F(m)^(g−1), F(m) = 2Φ(m) − 1; Simpson on [0, 12]. */
    const int n = 6000;
    const double hi = 12.0, h = hi / n;
    double acc = 0;
    for (int i = 0; i <= n; i++) {
        double m = i * h, w = (i == 0 || i == n) ? 1 : (i % 2 ? 4 : 2);
        double F = 2 * Phi(m) - 1, f = (double)g * 2 * phi(m) * pow(F, (double)g - 1);
        if (m == 0) continue; /* f(0) = 0 for g > 1 */
        double e2 = exact ? cond_err2(m, qmax) : m * m / (12.0 * qmax * qmax);
        acc += w * f * e2;
    }
    acc *= h / 3;
    return acc * (double)(g - 1) / (double)g;
}

/* ---- the engine ---- */

typedef struct actcache {
    qk_act_rule rule;
    size_t g;
    int ready;
    double *xd;   /* x̂ as double, M×K */
    double n_a;   /* NMSE of x̂ vs x */
    double e_a;   /* NMSE of x̂·Wᵀ vs FP32 */
    int have_ea;
    char check[200]; /* other tiers' activation quantizers: "same" or which differ */
} actcache;

typedef struct ctx {
    const acc_eval_cfg *c;
    const acc_mat *w, *x;
    size_t M, N, K;
    double *xd, *yref;
    actcache cache[16];
    int ncache;
    size_t done, total;
    double t0;
} ctx;

static void note(const ctx *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(const ctx *e, const char *fmt, ...) {
    char buf[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (e->c->on_note) e->c->on_note(e->c->ctx, buf);
}

static double nmse_of(const double *ref, const double *y, size_t n) {
    double a = 0, b = 0;
    for (size_t i = 0; i < n; i++) {
        double d = y[i] - ref[i];
        a += d * d;
        b += ref[i] * ref[i];
    }
    return b > 0 ? a / b : (a == 0 ? 0 : NAN);
}

/* Quantized activations for (rule, g), from the scalar reference. */
static actcache *get_act(ctx *e, qk_act_rule rule, size_t g, int need_ea, char *err, size_t errlen) {
    actcache *a = NULL;
    for (int i = 0; i < e->ncache; i++)
        if (e->cache[i].rule == rule && e->cache[i].g == g) a = &e->cache[i];
    if (!a) {
        if (e->ncache == 16) { /* drop the oldest */
            free(e->cache[0].xd);
            memmove(e->cache, e->cache + 1, 15 * sizeof e->cache[0]);
            e->ncache--;
        }
        a = &e->cache[e->ncache++];
        memset(a, 0, sizeof *a);
        a->rule = rule, a->g = g;
    }
    if (!a->ready) {
        qk_qact q;
        if (qk_actquant_reference(rule, e->x->v, e->K, e->M, e->K, g, &q)) {
            snprintf(err, errlen, "activation quantization (%s, g=%zu) failed: %s", qk_act_rule_name(rule), g, qk_last_error());
            return NULL;
        }
        a->xd = malloc(e->M * e->K * sizeof(double));
        if (!a->xd) {
            qk_qact_free(&q);
            snprintf(err, errlen, "out of memory");
            return NULL;
        }
        qk_x_from_qact(&q, e->M, a->xd);
        snprintf(a->check, sizeof a->check, "same");
        size_t cl = 0, ng = e->M * (e->K / g);
        for (size_t i = 0; i < qk_actquant_kernel_count; i++) { /* every tier must write the same codes, scales, sums */
            const qk_actquant_kernel *k = &qk_actquant_kernels[i];
            if (k->rule != rule || k->tier == QK_TIER_SCALAR || !qk_tier_allowed(k->tier)) continue;
            qk_qact t;
            if (qk_qact_alloc(&t, rule, e->M, e->K, g)) continue;
            int same = qk_actquant_with(k, e->x->v, e->K, &t) == QK_OK && !memcmp(t.codes, q.codes, e->M * e->K) &&
                       !memcmp(t.scales, q.scales, ng * sizeof(float)) && !memcmp(t.sums, q.sums, ng * sizeof(int32_t));
            qk_qact_free(&t);
            if (!same && cl < sizeof a->check)
                cl += (size_t)snprintf(a->check + cl, sizeof a->check - cl, "%s%s", cl ? "," : "DIFFER: ", k->name);
        }
        qk_qact_free(&q);
        a->n_a = nmse_of(e->xd, a->xd, e->M * e->K);
        a->ready = 1;
    }
    if (need_ea && !a->have_ea) {
        double *y = malloc(e->M * e->N * sizeof(double));
        qk_rows wr = {e->w->v, e->K, NULL};
        if (!y || qk_exact_matmul(a->xd, e->M, e->K, &wr, e->N, y, NULL, e->c->threads)) {
            free(y);
            snprintf(err, errlen, "out of memory");
            return NULL;
        }
        a->e_a = nmse_of(e->yref, y, e->M * e->N);
        a->have_ea = 1;
        free(y);
    }
    return a;
}

/* Byte-compare two quantized matrices of the same shape. */
static int same_qmat(const qk_qmat *a, const qk_qmat *b) {
    if (memcmp(a->codes, b->codes, a->rows * a->row_bytes)) return 0;
    size_t ng = a->rows * (a->cols / a->group), ss = a->scale_type == QK_SCALE_F16 ? 2 : 4;
    if (a->scales && memcmp(a->scales, b->scales, ng * ss)) return 0;
    if (a->mins && memcmp(a->mins, b->mins, ng * ss)) return 0;
    return 1;
}

static int applicable(const qk_matmul_kernel *k, qk_format f, qk_mode m, size_t M) {
    (void)M; /* a gemv variant runs once per row when M > 1 */
    return k->format == f && k->mode == m;
}

/* Y = X·Wᵀ through a prepared plan: a gemv plan (max_m 1) row by row. */
static qk_status run_plan(qk_matmul_plan *p, size_t M, const float *x, size_t K, float *y, size_t N) {
    if (p->max_m >= M) return qk_matmul_run(p, M, x, K, y, N);
    for (size_t m = 0; m < M; m++) {
        qk_status s = qk_matmul_run(p, 1, x + m * K, K, y + m * N, N);
        if (s) return s;
    }
    return QK_OK;
}

size_t acc_count_rows(const acc_opts *o, size_t M, size_t K) {
    size_t n = 0, gs[ACC_MAX_GROUPS];
    for (int f = 0; f < QK_FORMAT_COUNT; f++) {
        if (!(o->formats >> f & 1)) continue;
        int ng = acc_groups_for(o, (qk_format)f, K, gs, NULL, 0);
        for (int m = 0; m < QK_MODE_COUNT; m++) {
            if (!(o->modes >> m & 1) || !qk_mode_accepts((qk_mode)m, (qk_format)f)) continue;
            for (size_t i = 0; i < qk_matmul_kernel_count; i++)
                if (applicable(&qk_matmul_kernels[i], (qk_format)f, (qk_mode)m, M)) n += (size_t)ng;
        }
    }
    return n;
}

void acc_case_name(char *out, size_t n, const char *layer, qk_format f, size_t g, qk_mode m) {
    snprintf(out, n, "%s/%s/g%zu/%s", layer, qk_format_name(f), g, qk_mode_name(m));
}

size_t acc_cases(const acc_opts *o, const char *layer, size_t M, size_t K,
                 void (*fn)(void *ctx, const char *name, qk_format f, size_t g, qk_mode m, size_t variants), void *ctx) {
    size_t n = 0, gs[ACC_MAX_GROUPS];
    char name[400];
    for (int f = 0; f < QK_FORMAT_COUNT; f++) {
        if (!(o->formats >> f & 1)) continue;
        int any = 0;
        for (int m = 0; m < QK_MODE_COUNT; m++) any |= (o->modes >> m & 1) && qk_mode_accepts((qk_mode)m, (qk_format)f);
        if (!any) continue;
        int ng = acc_groups_for(o, (qk_format)f, K, gs, NULL, 0);
        for (int i = 0; i < ng; i++)
            for (int m = 0; m < QK_MODE_COUNT; m++) {
                if (!(o->modes >> m & 1) || !qk_mode_accepts((qk_mode)m, (qk_format)f)) continue;
                size_t nv = 0;
                for (size_t k = 0; k < qk_matmul_kernel_count; k++) nv += applicable(&qk_matmul_kernels[k], (qk_format)f, (qk_mode)m, M);
                acc_case_name(name, sizeof name, layer, (qk_format)f, gs[i], (qk_mode)m);
                if (fn) fn(ctx, name, (qk_format)f, gs[i], (qk_mode)m, nv);
                n++;
            }
    }
    return n;
}

static int wanted(const acc_eval_cfg *c, const char *layer, qk_format f, size_t g, qk_mode m) {
    return !c->want || c->want(c->ctx, layer, f, g, m);
}

static void case_done(const acc_eval_cfg *c, const char *layer, qk_format f, size_t g, qk_mode m) {
    if (c->case_done) c->case_done(c->ctx, layer, f, g, m);
}

typedef struct want_count {
    const acc_eval_cfg *c;
    const char *layer;
    size_t cases, rows;
} want_count;

static void count_wanted(void *p, const char *name, qk_format f, size_t g, qk_mode m, size_t variants) {
    want_count *w = p;
    (void)name;
    if (wanted(w->c, w->layer, f, g, m)) w->cases++, w->rows += variants;
}

/* Median (and min) of repeated runs; the plan has already run once. */
static void time_plan(const acc_eval_cfg *c, qk_matmul_plan *p, const float *x, size_t M, size_t K, float *y, size_t N,
                      acc_row *r) {
    enum { MAXR = 200 };
    double t[MAXR], spent = 0;
    int n = 0, maxr = c->max_reps > 0 && c->max_reps < MAXR ? c->max_reps : MAXR;
    while (n < maxr && (n < c->min_reps || spent < c->min_time)) {
        double t0 = now_s();
        run_plan(p, M, x, K, y, N);
        t[n] = now_s() - t0;
        spent += t[n++];
    }
    r->timed = 1;
    r->reps = n;
    r->t_median = qk_median(t, n); /* t sorted */
    r->t_min = t[0];
    const qk_qmat *w = p->w;
    size_t ng = w->rows * (w->cols / w->group), ss = w->scale_type == QK_SCALE_F16 ? 2 : 4;
    double bytes = (double)(w->rows * w->row_bytes) + (w->scales ? (double)(ng * ss) : 0) + (w->mins ? (double)(ng * ss) : 0) +
                   4.0 * (double)(M * K) + 4.0 * (double)(M * N);
    r->gbps = bytes / r->t_median / 1e9;
    r->gops = 2.0 * (double)M * (double)N * (double)K / r->t_median / 1e9;
}

static void progress(ctx *e, const char *what) {
    if (!e->c->progress) return;
    double el = now_s() - e->t0, eta = e->done ? el / (double)e->done * (double)(e->total - e->done) : 0;
    fprintf(stderr, "\r\033[K[%zu/%zu] %s  (%.0f s, about %.0f s left)", e->done + 1 > e->total ? e->total : e->done + 1, e->total, what, el, eta);
    fflush(stderr);
}

/* One (format, g): quantize, weight error, then every mode and variant. */
static int eval_format(ctx *e, qk_format f, size_t g, char *err, size_t errlen) {
    const acc_eval_cfg *c = e->c;
    size_t M = e->M, N = e->N, K = e->K;
    qk_scale_type st = (f == QK_Q4_0 || f == QK_Q8_0) ? QK_SCALE_F16 : c->o->scales;
    qk_qmat qm, tmp;
    int rc = -1;
    double *yw = NULL, *yq = NULL, *absw = NULL, *absq = NULL, *wrow = NULL, *wf = NULL;
    float *yk = NULL;
    char codes[sizeof ((acc_row *)0)->codes_check] = "same";
    int any = 0;
    for (int mi = 0; mi < QK_MODE_COUNT; mi++)
        any |= (c->o->modes >> mi & 1) && qk_mode_accepts((qk_mode)mi, f) && wanted(c, e->w->name, f, g, (qk_mode)mi);
    if (!any) return 0; /* --shard: another shard's */
    if (qk_qmat_alloc(&qm, f, st, N, K, g)) {
        snprintf(err, errlen, "%s g=%zu: %s", qk_format_name(f), g, qk_last_error());
        return -1;
    }
    qk_status s = qk_quantize_with(qk_reference_quantize(f), e->w->v, K, &qm);
    if (s == QK_ERR_RANGE) {
        note(e, "  %s g=%zu %s skipped: %s", qk_format_name(f), g, st == QK_SCALE_F16 ? "f16" : "f32", qk_last_error());
        qk_qmat_free(&qm);
        for (int mi = 0; mi < QK_MODE_COUNT; mi++)
            if ((c->o->modes >> mi & 1) && qk_mode_accepts((qk_mode)mi, f) && wanted(c, e->w->name, f, g, (qk_mode)mi))
                case_done(c, e->w->name, f, g, (qk_mode)mi);
        return 0;
    }
    if (s) {
        snprintf(err, errlen, "%s g=%zu: %s", qk_format_name(f), g, qk_last_error());
        qk_qmat_free(&qm);
        return -1;
    }
    /* Every other tier's quantizer must write the same bytes. */
    size_t cl = 0;
    for (size_t i = 0; i < qk_quantize_kernel_count; i++) {
        const qk_quantize_kernel *k = &qk_quantize_kernels[i];
        if (k->format != f || k->tier == QK_TIER_SCALAR || !qk_tier_allowed(k->tier)) continue;
        if (qk_qmat_alloc(&tmp, f, st, N, K, g)) continue;
        int same = qk_quantize_with(k, e->w->v, K, &tmp) == QK_OK && same_qmat(&qm, &tmp);
        qk_qmat_free(&tmp);
        if (!same && cl < sizeof codes) cl += (size_t)snprintf(codes + cl, sizeof codes - cl, "%s%s", cl ? "," : "DIFFER: ", k->name);
    }
    /* Every other tier's dequantizer must write the reference's floats (64 rows at a time). */
    char deq[sizeof ((acc_row *)0)->deq_check] = "same";
    const qk_dequantize_kernel *dref = NULL;
    for (size_t i = 0; i < qk_dequantize_kernel_count; i++)
        if (qk_dequantize_kernels[i].format == f && qk_dequantize_kernels[i].tier == QK_TIER_SCALAR) dref = &qk_dequantize_kernels[i];
    size_t dl = 0, chunk = 64;
    float *d0 = malloc(chunk * K * sizeof *d0), *d1 = malloc(chunk * K * sizeof *d1);
    for (size_t i = 0; d0 && d1 && dref && i < qk_dequantize_kernel_count; i++) {
        const qk_dequantize_kernel *k = &qk_dequantize_kernels[i];
        if (k->format != f || k->tier == QK_TIER_SCALAR || !qk_tier_allowed(k->tier)) continue;
        int same = 1;
        for (size_t r0 = 0; r0 < N && same; r0 += chunk) {
            size_t r1 = r0 + chunk < N ? r0 + chunk : N;
            qk_qmat view = qk_qmat_rows(&qm, r0, r1);
            same = qk_dequantize_with(dref, &view, d0, K) == QK_OK && qk_dequantize_with(k, &view, d1, K) == QK_OK &&
                   !memcmp(d0, d1, (r1 - r0) * K * sizeof *d0);
        }
        if (!same && dl < sizeof deq) dl += (size_t)snprintf(deq + dl, sizeof deq - dl, "%s%s", dl ? "," : "DIFFER: ", k->name);
    }
    free(d0), free(d1);
    yw = malloc(M * N * sizeof *yw), yq = malloc(M * N * sizeof *yq), absw = malloc(M * N * sizeof *absw);
    absq = malloc(M * N * sizeof *absq), yk = malloc(M * N * sizeof *yk), wrow = malloc(K * sizeof *wrow), wf = malloc(K * sizeof *wf);
    if (!yw || !yq || !absw || !absq || !yk || !wrow || !wf) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    /* weight error, elementwise */
    qk_rows qr = {NULL, 0, &qm};
    qk_err_acc wa;
    qk_err_init(&wa);
    for (size_t n = 0; n < N; n++) {
        qk_rows_get(&qr, n, K, wrow);
        for (size_t k = 0; k < K; k++) wf[k] = e->w->v[n * K + k];
        qk_err_row_dd(&wa, wf, wrow, K);
    }
    qk_err w_err = qk_err_finish(&wa);
    double model = NAN;
    if (c->w_gauss && (f == QK_W4S || f == QK_W8S)) model = qk_sqnr_db(acc_rtn_gauss_nmse(f == QK_W4S ? 7 : 127, g, 1));
    /* x·Ŵᵀ: the A32 modes' exact math, and e_W */
    int have_yw = 0;
    for (int mi = 0; mi < QK_MODE_COUNT; mi++) {
        qk_mode m = (qk_mode)mi;
        if (!(c->o->modes >> m & 1) || !qk_mode_accepts(m, f) || !wanted(c, e->w->name, f, g, m)) continue;
        qk_act_rule rule = qk_mode_act_rule(m);
        if (!have_yw) {
            if (qk_exact_matmul(e->xd, M, K, &qr, N, yw, absw, c->threads)) {
                snprintf(err, errlen, "out of memory");
                goto out;
            }
            have_yw = 1;
        }
        const double *y_exact = yw, *abs_t = absw;
        acc_row r;
        memset(&r, 0, sizeof r);
        snprintf(r.layer, sizeof r.layer, "%s", e->w->name);
        r.M = M, r.N = N, r.K = K;
        r.format = f, r.group = g, r.scales = st, r.bpw = qk_bpw(f, g, st), r.mode = m;
        r.w_err = w_err;
        r.w_model_sqnr = model;
        snprintf(r.codes_check, sizeof r.codes_check, "%s", codes);
        snprintf(r.deq_check, sizeof r.deq_check, "%s", deq);
        r.n_w = w_err.nmse;
        if (rule != QK_ACT_F32) {
            actcache *a = get_act(e, rule, g, 1, err, errlen);
            if (!a) goto out;
            if (qk_exact_matmul(a->xd, M, K, &qr, N, yq, absq, c->threads)) {
                snprintf(err, errlen, "out of memory");
                goto out;
            }
            y_exact = yq, abs_t = absq;
            r.n_a = a->n_a;
            snprintf(r.act_check, sizeof r.act_check, "%s", a->check);
            r.has_decomp = 1;
            r.decomp = qk_decompose(nmse_of(e->yref, yw, M * N), a->e_a, nmse_of(e->yref, yq, M * N));
        }
        r.q_err = qk_err_dd(e->yref, N, y_exact, N, M, N);
        if (c->head && N >= 20) {
            double T = c->temperature;
            if (!(T > 0)) {
                double s2 = 0;
                for (size_t i = 0; i < M * N; i++) s2 += e->yref[i] * e->yref[i];
                double sd = sqrt(s2 / (double)(M * N));
                T = sd > 0 && c->logit_std > 0 ? sd / c->logit_std : 1.0;
            }
            r.temperature = T;
            r.has_head = qk_head_compare(e->yref, N, y_exact, N, M, N, T, &r.head) == 0;
        }
        for (size_t i = 0; i < qk_matmul_kernel_count; i++) {
            const qk_matmul_kernel *k = &qk_matmul_kernels[i];
            if (!applicable(k, f, m, M)) continue;
            acc_row v = r;
            v.kernel = k;
            v.k_bound = 2.0 * (double)(K + 16);
            char what[200];
            snprintf(what, sizeof what, "%s g=%zu %s %s", qk_format_name(f), g, qk_mode_name(m), k->name);
            progress(e, what);
            const char *why = qk_tier_unavailable_reason(k->tier);
            if (why) {
                snprintf(v.skip, sizeof v.skip, "%s", why);
            } else {
                qk_matmul_plan p;
                if (qk_matmul_prepare(&p, k, k->op, m, &qm, k->op == QK_OP_GEMV ? 1 : M) || run_plan(&p, M, e->x->v, K, yk, N)) {
                    snprintf(err, errlen, "%s: %s", k->name, qk_last_error());
                    goto out;
                }
                v.k_err = qk_err_df(y_exact, N, yk, N, M, N);
                double worst = 0;
                for (size_t j = 0; j < M * N; j++) {
                    double d = fabs((double)yk[j] - y_exact[j]), b = U * abs_t[j];
                    double q = d == 0 ? 0 : b > 0 ? d / b : INFINITY;
                    if (!(q <= worst)) worst = q; /* NaN propagates */
                }
                v.k_ratio = worst;
                v.k_ok = worst <= v.k_bound;
                if (c->timing) time_plan(c, &p, e->x->v, M, K, yk, N, &v);
                qk_matmul_release(&p);
            }
            e->done++;
            if (c->on_row) c->on_row(c->ctx, &v);
        }
        case_done(c, e->w->name, f, g, m);
    }
    rc = 0;
out:
    free(yw), free(yq), free(absw), free(absq), free(yk), free(wrow), free(wf);
    qk_qmat_free(&qm);
    return rc;
}

int acc_evaluate(const acc_eval_cfg *c, const acc_mat *w, const acc_mat *x, char *err, size_t errlen) {
    ctx e;
    memset(&e, 0, sizeof e);
    e.c = c, e.w = w, e.x = x;
    e.M = x->rows, e.N = w->rows, e.K = w->cols;
    if (x->cols != w->cols) {
        snprintf(err, errlen, "the activations have K=%zu columns but the weights have K=%zu", x->cols, w->cols);
        return -1;
    }
    want_count wc = {c, w->name, 0, 0};
    if (c->want) { /* --shard: nothing of this layer here, so not even its FP32 reference */
        acc_cases(c->o, w->name, e.M, e.K, count_wanted, &wc);
        if (!wc.cases) return 0;
    }
    e.xd = malloc(e.M * e.K * sizeof(double));
    e.yref = malloc(e.M * e.N * sizeof(double));
    int rc = -1;
    if (!e.xd || !e.yref) {
        snprintf(err, errlen, "out of memory for the FP32 reference (%zu x %zu)", e.M, e.N);
        goto out;
    }
    qk_x_from_f32(x->v, e.K, e.M, e.K, e.xd);
    qk_rows wr = {w->v, e.K, NULL};
    if (qk_exact_matmul(e.xd, e.M, e.K, &wr, e.N, e.yref, NULL, c->threads)) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    e.total = c->want ? wc.rows : acc_count_rows(c->o, e.M, e.K);
    e.t0 = now_s();
    char notes[2048] = "";
    size_t gs[ACC_MAX_GROUPS];
    for (int f = 0; f < QK_FORMAT_COUNT; f++) {
        if (!(c->o->formats >> f & 1)) continue;
        int any = 0;
        for (int m = 0; m < QK_MODE_COUNT; m++) any |= (c->o->modes >> m & 1) && qk_mode_accepts((qk_mode)m, (qk_format)f);
        if (!any) continue;
        for (int i = 0; c->o->groups_explicit && i < c->o->ngroups; i++) { /* asked for: an error, never a silent skip */
            size_t g = c->o->groups[i];
            if (f == QK_Q4_0 || f == QK_Q8_0) g = g == 32 ? 32 : 0;
            if (g && g != ACC_GROUP_K && e.K % g) {
                snprintf(err, errlen, "K=%zu is not a multiple of group size %zu (%s)", e.K, g, qk_format_name((qk_format)f));
                goto out;
            }
        }
        notes[0] = 0;
        int ng = acc_groups_for(c->o, (qk_format)f, e.K, gs, notes, sizeof notes);
        for (char *line = strtok(notes, "\n"); line; line = strtok(NULL, "\n")) note(&e, "%s", line);
        for (int i = 0; i < ng; i++)
            if (eval_format(&e, (qk_format)f, gs[i], err, errlen)) goto out;
    }
    rc = 0;
out:
    if (c->progress) fprintf(stderr, "\r\033[K");
    for (int i = 0; i < e.ncache; i++) free(e.cache[i].xd);
    free(e.xd), free(e.yref);
    return rc;
}
