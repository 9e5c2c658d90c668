/* Benchmark cases from the family lists: enumeration, byte/op accounting,
 * roofline, buffers (warm or rotated cold copies), and one timed call. */
#include "cases.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pool.h"
#include "results.h"

/* ---- suites (DESIGN §4) ---- */

/* LLM presets: N×K of the linear layers of 7B/8B-class models and an output head. */
static const qkb_shape presets[] = {
    {0, 4096, 4096}, {0, 11008, 4096}, {0, 4096, 11008}, {0, 14336, 4096}, {0, 4096, 14336}, {0, 32000, 4096},
};

typedef struct cfg {
    qkb_kind kind;
    int gemm_only; /* matmul: only gemm kernels (M > 1) */
    size_t M, N, K;
    int cold, headline, all_threads; /* headline: 1 its first thread count, cache state and g = 32 / K; 2 all */
} cfg;

/* quick: under 3 minutes on a 2-core machine with the scalar reference included */
static const cfg quick[] = {
    {QKB_QUANTIZE, 0, 0, 16, 4096, 0, 0, 0},
    {QKB_QUANTIZE, 0, 0, 1024, 4096, 1, 1, 0},
    {QKB_DEQUANTIZE, 0, 0, 16, 4096, 0, 0, 0},
    {QKB_DEQUANTIZE, 0, 0, 1024, 4096, 1, 1, 0},
    {QKB_ACTQUANT, 0, 1, 0, 4096, 0, 0, 0},
    {QKB_ACTQUANT, 0, 64, 0, 4096, 0, 1, 0},
    {QKB_PACK, 0, 0, 4096, 4096, 0, 1, 0},
    {QKB_MATMUL, 0, 1, 4096, 4096, 1, 1, 1},
    {QKB_MATMUL, 1, 64, 256, 4096, 0, 1, 0},
};
static const size_t quick_groups_mm[] = {32, 128, 0}, quick_groups[] = {32, 0};

static const size_t full_groups[] = {32, 64, 128, 256, QKB_GROUP_K, 0}, full_groups_mm[] = {32, 128, QKB_GROUP_K, 0};
static const size_t full_m[] = {16, 64, 256, 512};

/* Outlier families (DESIGN §5) at LLM sizes: K = 4096 channels, 41 of them
 * outliers (1%), N = 4096 outputs. quick: the rotation and the split's two
 * outlier-column products at M = 64; full: every family at M = 1, 64, 512. */
typedef struct ocfg {
    qkb_ofam fam;
    size_t M, N, K;
} ocfg;
static const ocfg quick_outlier[] = {{QKB_O_FWHT, 64, 0, 4096}, {QKB_O_GEMM_F32, 64, 4096, 41}, {QKB_O_GEMM_I8, 64, 4096, 41}};
static const size_t full_outlier_m[] = {1, 64, 512};
static const char *const ofam_names[QKB_O_COUNT] = {"fwht", "colscale", "colsplit", "gemm_f32", "gemm_i8"};
/* Outlier columns of a split on K channels: 1%, at least one. */
static size_t split_cols(size_t K) { return K / 100 ? K / 100 : 1; }
/* The largest power-of-two Hadamard block dividing K (1 if K is odd). */
static size_t hblock(size_t K) {
    size_t b = 1;
    while (K % (b * 2) == 0) b *= 2;
    return b;
}
/* The scalar reference runs ~1 GOP/s: the full suite leaves out its calls above this. */
#define SCALAR_MAX_OPS 1.5e9

/* ---- accounting ---- */

static size_t scale_bytes(qk_scale_type st) { return st == QK_SCALE_F16 ? 2 : 4; }

/* Bytes of a quantized N×K matrix: codes, scales, offsets. */
static double qmat_bytes(qk_format f, qk_scale_type st, size_t N, size_t K, size_t g) {
    double b = (double)N * (double)qk_row_bytes(f, K);
    if (f == QK_W4S || f == QK_W8S || f == QK_W4A) b += (double)N * (double)(K / g) * (double)scale_bytes(st);
    if (f == QK_W4A) b += (double)N * (double)(K / g) * (double)scale_bytes(st);
    return b;
}

static const char *kind_op(qkb_kind k, size_t M) {
    switch (k) {
    case QKB_QUANTIZE: return "quantize";
    case QKB_DEQUANTIZE: return "dequantize";
    case QKB_ACTQUANT: return "actquant";
    case QKB_PACK: return "pack";
    case QKB_OUTLIER: return "outlier";
    default: return M == 1 ? "gemv" : "gemm";
    }
}

void qkb_case_derive(qkb_case *c) {
    snprintf(c->op, sizeof c->op, "%s", kind_op(c->kind, c->M));
    const char *fmt = qk_format_name(c->format);
    double n_k = (double)c->N * (double)c->K, m_k = (double)c->M * (double)c->K;
    double w = qmat_bytes(c->format, c->st, c->N, c->K, c->group);
    char shape[64], g[24];
    snprintf(g, sizeof g, "g%zu%s", c->group, c->st == QK_SCALE_F16 && c->format != QK_Q4_0 && c->format != QK_Q8_0 ? "h" : "");
    switch (c->kind) {
    case QKB_QUANTIZE:
    case QKB_DEQUANTIZE:
        snprintf(c->what, sizeof c->what, "%s", fmt);
        snprintf(shape, sizeof shape, "%zux%zu", c->N, c->K);
        c->ops = n_k;
        c->bytes = c->ws = n_k * 4 + w;
        c->bpw = qk_bpw(c->format, c->group, c->st);
        snprintf(c->name, sizeof c->name, "%s/%s/%s/%s/t%d/%s/%s", c->op, fmt, g, shape, c->threads, c->cold ? "cold" : "warm",
                 c->kernel_name);
        break;
    case QKB_ACTQUANT:
        snprintf(c->what, sizeof c->what, "%s", qk_act_rule_name(c->rule));
        snprintf(shape, sizeof shape, "%zux%zu", c->M, c->K);
        c->ops = m_k;
        c->bytes = c->ws = m_k * 4 + m_k + (double)c->M * (double)(c->K / c->group) * 8;
        c->bpw = 8 + 64.0 / (double)c->group;
        snprintf(c->name, sizeof c->name, "%s/%s/%s/%s/t%d/%s/%s", c->op, c->what, g, shape, c->threads, c->cold ? "cold" : "warm",
                 c->kernel_name);
        break;
    case QKB_PACK:
    case QKB_MATMUL: {
        const qk_matmul_kernel *k = c->kernel;
        snprintf(c->what, sizeof c->what, "%s", qk_mode_name(c->mode));
        double packed = w;
        if (k && k->pack_size) {
            qk_qmat shape_only = {0};
            shape_only.format = c->format;
            shape_only.scale_type = c->st;
            shape_only.rows = c->N;
            shape_only.cols = c->K;
            shape_only.group = c->group;
            shape_only.row_bytes = qk_row_bytes(c->format, c->K);
            packed = (double)k->pack_size(&shape_only);
        }
        c->bpw = qk_bpw(c->format, c->group, c->st);
        if (c->kind == QKB_PACK) {
            snprintf(shape, sizeof shape, "%zux%zu", c->N, c->K);
            c->ops = n_k;
            c->bytes = c->ws = w + packed;
        } else {
            snprintf(shape, sizeof shape, "%zux%zux%zu", c->M, c->N, c->K);
            c->ops = 2.0 * (double)c->M * n_k;
            double acts = m_k * 4, out = (double)c->M * (double)c->N * 4;
            double qacts = c->rule != QK_ACT_F32 ? m_k + (double)c->M * (double)(c->K / c->group) * 8 : 0;
            c->bytes = w + acts + out;
            c->ws = packed + acts + out + qacts;
        }
        snprintf(c->name, sizeof c->name, "%s/%s/%s/%s/%s/t%d/%s/%s", c->op, c->what, fmt, g, shape, c->threads,
                 c->cold ? "cold" : "warm", c->kernel_name);
        break;
    }
    case QKB_OUTLIER: {
        /* outlier/FAMILY/PARAM/SHAPE/tN/cache/kernel */
        const double M = (double)c->M, N = (double)c->N, K = (double)c->K;
        char param[24];
        snprintf(c->what, sizeof c->what, "%s", ofam_names[c->ofam]);
        snprintf(shape, sizeof shape, "%zux%zu", c->M, c->K);
        c->bpw = 32;
        switch (c->ofam) {
        case QKB_O_FWHT:
            snprintf(param, sizeof param, "b%zu", c->group);
            c->ops = M * K * log2((double)c->group); /* one add or subtract per element and stage */
            c->bytes = 2 * M * K * 4;
            break;
        case QKB_O_COLSCALE:
            snprintf(param, sizeof param, "f32");
            c->ops = M * K;
            c->bytes = 2 * M * K * 4 + K * 4;
            break;
        case QKB_O_COLSPLIT:
            snprintf(param, sizeof param, "o%zu", c->N);
            c->ops = M * K;
            c->bytes = 2 * M * K * 4 + M * N * 4 + N * 4;
            break;
        case QKB_O_GEMM_F32:
        case QKB_O_GEMM_I8: {
            const int i8 = c->ofam == QKB_O_GEMM_I8;
            snprintf(param, sizeof param, "%s", i8 ? "int8" : "f32");
            snprintf(shape, sizeof shape, "%zux%zux%zu", c->M, c->N, c->K);
            c->ops = 2 * M * N * K;
            c->bytes = i8 ? M * K + N * K + (M + N) * 4 + 2 * M * N * 4 : (M * K + N * K + 2 * M * N) * 4; /* Y is accumulated */
            c->bpw = i8 ? 8 + 32 / K : 32;
            break;
        }
        default: param[0] = 0; break;
        }
        c->ws = c->bytes;
        snprintf(c->name, sizeof c->name, "%s/%s/%s/%s/t%d/%s/%s", c->op, c->what, param, shape, c->threads, c->cold ? "cold" : "warm",
                 c->kernel_name);
        break;
    }
    }
}

void qkb_case_roofline(qkb_case *c, const qkb_limits *l) {
    c->roof_s = 0;
    c->peak = c->bw = 0;
    snprintf(c->level, sizeof c->level, "?");
    snprintf(c->bound, sizeof c->bound, "?");
    if (!l || !l->ok) return;
    const qkb_level *lv = qkb_level_for(l, c->ws / (c->threads > 0 ? c->threads : 1), c->cold);
    if (!lv) return;
    snprintf(c->level, sizeof c->level, "%s", lv->name);
    c->bw = qkb_level_bw(l, lv, c->threads);
    double t_mem = c->bw > 0 ? c->bytes / c->bw : 0, t_ops = 0;
    if (c->kind == QKB_MATMUL || (c->kind == QKB_OUTLIER && (c->ofam == QKB_O_GEMM_F32 || c->ofam == QKB_O_GEMM_I8))) {
        const int int8 = c->kind == QKB_MATMUL ? c->rule != QK_ACT_F32 : c->ofam == QKB_O_GEMM_I8;
        c->peak = qkb_peak_ops(l, c->tier, int8, c->threads);
        t_ops = c->peak > 0 ? c->ops / c->peak : 0;
    }
    c->roof_s = t_ops > t_mem ? t_ops : t_mem;
    snprintf(c->bound, sizeof c->bound, "%s", t_ops > t_mem ? "compute" : "memory");
}

/* ---- enumeration ---- */

static qkb_case *push(qkb_cases *cs) {
    if (cs->n == cs->cap) {
        size_t cap = cs->cap ? cs->cap * 2 : 256;
        qkb_case *v = realloc(cs->v, cap * sizeof *v);
        if (!v) return NULL;
        cs->v = v;
        cs->cap = cap;
    }
    qkb_case *c = &cs->v[cs->n++];
    memset(c, 0, sizeof *c);
    return c;
}

void qkb_cases_free(qkb_cases *c) {
    free(c->v);
    memset(c, 0, sizeof *c);
}

static int is_block(qk_format f) { return f == QK_Q4_0 || f == QK_Q8_0; }

typedef struct enum_ctx {
    qkb_cases *out;
    const qkb_plan_opts *o;
    int threads[8], nthreads;
    int ncores;
    char *err;
    size_t errlen;
} enum_ctx;

/* The thread counts of a config: --threads, else 1 (and all cores where the
 * suite says; the quick suite only at g = 32). */
static int cfg_threads(const enum_ctx *e, const cfg *g, size_t group, int *t) {
    if (e->nthreads) {
        memcpy(t, e->threads, sizeof e->threads);
        return e->nthreads;
    }
    t[0] = 1;
    if ((e->o->full || (g->all_threads && group == 32)) && e->ncores > 1) return t[1] = e->ncores, 2;
    return 1;
}

/* The cache states of a config: --cache, else the config's own. */
static int cfg_colds(const enum_ctx *e, const cfg *g, int *colds) {
    switch (e->o->cache) {
    case 1: colds[0] = 0; return 1;
    case 2: colds[0] = 1; return 1;
    case 3: colds[0] = 0, colds[1] = 1; return 2;
    default:
        if (e->o->full && g->kind == QKB_MATMUL && g->M == 1) return colds[0] = 1, colds[1] = 0, 2;
        colds[0] = g->cold;
        return 1;
    }
}

static const char *tier_skip(qk_tier t, const qkb_plan_opts *o) {
    static char why[160];
    if (t > o->max_tier) {
        snprintf(why, sizeof why, "capped by --isa %s", qk_tier_name(o->max_tier));
        return why;
    }
    const char *r = qk_tier_unavailable_reason(t);
    if (r) snprintf(why, sizeof why, "%s", r);
    return r ? why : NULL;
}

static int check_group(enum_ctx *e, size_t K, size_t g) {
    if (g != QKB_GROUP_K && (g == 0 || K % g != 0)) {
        snprintf(e->err, e->errlen, "K=%zu is not a multiple of group size %zu: choose a shape whose K divides, or --group", K, g);
        return -1;
    }
    return 0;
}

static void add(enum_ctx *e, const cfg *g, qkb_kind kind, const void *kernel, const char *kname, qk_tier tier, qk_format f,
                qk_mode mode, qk_act_rule rule, unsigned nr, size_t group) {
    int ts[8], colds[2];
    int nt = cfg_threads(e, g, group, ts), nc = cfg_colds(e, g, colds);
    for (int ci = 0; ci < nc; ci++)
        for (int ti = 0; ti < nt; ti++) {
            if ((kind == QKB_PACK || kind == QKB_OUTLIER) && ts[ti] > 1) continue; /* packing, outlier families: one thread */
            qkb_case *c = push(e->out);
            if (!c) return;
            c->kind = kind;
            c->kernel = kernel;
            c->kernel_name = kname;
            c->tier = tier;
            c->format = f;
            c->mode = mode;
            c->rule = rule;
            c->nr = nr ? nr : 1;
            c->M = kind == QKB_ACTQUANT || kind == QKB_MATMUL || kind == QKB_OUTLIER ? (g->M ? g->M : 1) : 0;
            c->N = kind == QKB_ACTQUANT ? 0 : g->N;
            c->K = g->K;
            c->group = group == QKB_GROUP_K ? g->K : group;
            c->st = is_block(f) ? QK_SCALE_F16 : QK_SCALE_F32;
            c->threads = ts[ti];
            c->cold = colds[ci];
            c->headline = g->headline == 2 || (g->headline && ti == 0 && ci == 0 && (group == 32 || group == QKB_GROUP_K));
            qkb_case_derive(c);
            const char *why = tier_skip(tier, e->o);
            if (why) snprintf(c->skip, sizeof c->skip, "%s", why);
            else if (e->o->full && !e->o->shapes[0].K && tier == QK_TIER_SCALAR && c->ops > SCALAR_MAX_OPS)
                snprintf(c->skip, sizeof c->skip, "the scalar reference would take about %.0f s per call here; --shape runs it",
                         c->ops / 1e9);
        }
}

static const size_t *groups_for(const enum_ctx *e, const cfg *g) {
    if (e->o->groups[0]) return e->o->groups;
    if (e->o->full) return g->kind == QKB_MATMUL ? full_groups_mm : full_groups;
    return g->kind == QKB_MATMUL && g->M == 1 ? quick_groups_mm : quick_groups;
}

static int expand(enum_ctx *e, const cfg *g) {
    const size_t *gs = groups_for(e, g);
    for (const size_t *gp = gs; *gp; gp++) {
        size_t group = *gp;
        if (check_group(e, g->K, group)) return -1;
        for (int f = 0; f < QK_FORMAT_COUNT; f++) {
            if (is_block((qk_format)f) && group != 32 && !(group == QKB_GROUP_K && g->K == 32)) continue;
            switch (g->kind) {
            case QKB_QUANTIZE:
                for (size_t i = 0; i < qk_quantize_kernel_count; i++) {
                    const qk_quantize_kernel *k = &qk_quantize_kernels[i];
                    if (k->format == (qk_format)f)
                        add(e, g, g->kind, k, k->name, k->tier, k->format, QK_W4A32, QK_ACT_F32, 1, group);
                }
                break;
            case QKB_DEQUANTIZE:
                for (size_t i = 0; i < qk_dequantize_kernel_count; i++) {
                    const qk_dequantize_kernel *k = &qk_dequantize_kernels[i];
                    if (k->format == (qk_format)f)
                        add(e, g, g->kind, k, k->name, k->tier, k->format, QK_W4A32, QK_ACT_F32, 1, group);
                }
                break;
            case QKB_ACTQUANT:
                if (f != 0) break; /* rules, not formats */
                for (size_t i = 0; i < qk_actquant_kernel_count; i++) {
                    const qk_actquant_kernel *k = &qk_actquant_kernels[i];
                    if (k->rule == QK_ACT_Q8_0 && group != 32) continue;
                    add(e, g, g->kind, k, k->name, k->tier, k->rule == QK_ACT_Q8_0 ? QK_Q8_0 : QK_W8S, QK_W4A32, k->rule, 1, group);
                }
                break;
            case QKB_PACK:
            case QKB_MATMUL:
                for (size_t i = 0; i < qk_matmul_kernel_count; i++) {
                    const qk_matmul_kernel *k = &qk_matmul_kernels[i];
                    if (k->format != (qk_format)f) continue;
                    if (g->kind == QKB_PACK && !k->pack) continue;
                    if (g->kind == QKB_MATMUL && k->op == QK_OP_GEMV && (g->M ? g->M : 1) != 1) continue;
                    if (g->kind == QKB_MATMUL && g->gemm_only && k->op != QK_OP_GEMM) continue;
                    add(e, g, g->kind, k, k->name, k->tier, k->format, k->mode, qk_mode_act_rule(k->mode), k->nr, group);
                }
                break;
            case QKB_OUTLIER: break; /* expand_outlier() */
            }
        }
    }
    return 0;
}

/* Every variant of one outlier family (its family list) on M×K (N: outputs, or outlier columns). */
static int expand_outlier(enum_ctx *e, qkb_ofam fam, size_t M, size_t N, size_t K) {
    cfg g = {QKB_OUTLIER, 0, M, N, K, 0, 0, 0};
    size_t n = 0;
    switch (fam) {
    case QKB_O_FWHT: n = qk_fwht_kernel_count; break;
    case QKB_O_COLSCALE: n = qk_colscale_kernel_count; break;
    case QKB_O_COLSPLIT: n = qk_colsplit_kernel_count; break;
    case QKB_O_GEMM_F32: n = qk_gemm_f32_kernel_count; break;
    case QKB_O_GEMM_I8: n = qk_gemm_i8_kernel_count; break;
    default: break;
    }
    if (fam == QKB_O_FWHT && hblock(K) < 2) {
        snprintf(e->err, e->errlen, "K=%zu is odd: no Hadamard block divides it", K);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const void *k = NULL;
        const char *name = NULL;
        qk_tier t = QK_TIER_SCALAR;
#define OK_(list) k = &list[i], name = list[i].name, t = list[i].tier
        switch (fam) {
        case QKB_O_FWHT: OK_(qk_fwht_kernels); break;
        case QKB_O_COLSCALE: OK_(qk_colscale_kernels); break;
        case QKB_O_COLSPLIT: OK_(qk_colsplit_kernels); break;
        case QKB_O_GEMM_F32: OK_(qk_gemm_f32_kernels); break;
        case QKB_O_GEMM_I8: OK_(qk_gemm_i8_kernels); break;
        default: break;
        }
#undef OK_
        size_t before = e->out->n;
        add(e, &g, QKB_OUTLIER, k, name, t, QK_W4S, QK_W4A32, QK_ACT_F32, 1, fam == QKB_O_FWHT ? hblock(K) : 1);
        for (size_t j = before; j < e->out->n; j++) { /* add() derived the name before the family was known */
            e->out->v[j].ofam = fam;
            e->out->v[j].group = fam == QKB_O_FWHT ? hblock(K) : 1; /* unused (1: the shared accounting divides by it) */
            qkb_case_derive(&e->out->v[j]);
        }
    }
    return 0;
}

static int want_outliers(const qkb_plan_opts *o) { return !o->ops_mask || (o->ops_mask >> QKB_OUTLIER & 1); }

int qkb_cases_build(qkb_cases *out, const qkb_plan_opts *o, char *err, size_t errlen) {
    enum_ctx e = {out, o, {0}, 0, qkb_ncores(), err, errlen};
    memset(out, 0, sizeof *out);
    for (int i = 0; i < 8 && o->threads[i]; i++) e.threads[e.nthreads++] = o->threads[i];
    if (o->shapes[0].K) { /* --shape: every op on the given shapes, each configuration in the best-variant table */
        for (int s = 0; s < 16 && o->shapes[s].K; s++) {
            const qkb_shape *sh = &o->shapes[s];
            size_t M = sh->M ? sh->M : 1;
            cfg list[] = {
                {QKB_QUANTIZE, 0, 0, sh->N, sh->K, 1, 2, 0}, {QKB_DEQUANTIZE, 0, 0, sh->N, sh->K, 1, 2, 0},
                {QKB_ACTQUANT, 0, M, 0, sh->K, 0, 2, 0},    {QKB_PACK, 0, 0, sh->N, sh->K, 0, 2, 0},
                {QKB_MATMUL, M > 1, M, sh->N, sh->K, M == 1, 2, 0},
            };
            for (size_t i = 0; i < sizeof list / sizeof list[0]; i++)
                if ((!o->ops_mask || (o->ops_mask >> list[i].kind & 1)) && expand(&e, &list[i])) return qkb_cases_free(out), -1;
            if (want_outliers(o)) /* the outlier families on M×K, the split's products on M×N×(1% of K) */
                for (int f = 0; f < QKB_O_COUNT; f++) {
                    int gemm = f == QKB_O_GEMM_F32 || f == QKB_O_GEMM_I8;
                    if (f == QKB_O_FWHT && hblock(sh->K) < 2) continue;
                    if (expand_outlier(&e, (qkb_ofam)f, M, gemm ? sh->N : split_cols(sh->K), gemm ? split_cols(sh->K) : sh->K))
                        return qkb_cases_free(out), -1;
                }
        }
        return 0;
    }
    if (!o->full) {
        for (size_t i = 0; i < sizeof quick / sizeof quick[0]; i++)
            if ((!o->ops_mask || (o->ops_mask >> quick[i].kind & 1)) && expand(&e, &quick[i])) return qkb_cases_free(out), -1;
        for (size_t i = 0; i < sizeof quick_outlier / sizeof quick_outlier[0] && want_outliers(o); i++) {
            const ocfg *q = &quick_outlier[i];
            if (expand_outlier(&e, q->fam, q->M, q->N, q->K)) return qkb_cases_free(out), -1;
        }
        return 0;
    }
    /* full: quantize/dequantize and actquant as in quick with every group; every preset for
     * packing and decode; prefill M = 16..512 on 4096x4096 */
    static const cfg full_rows[] = {
        {QKB_QUANTIZE, 0, 0, 16, 4096, 0, 0, 0},   {QKB_QUANTIZE, 0, 0, 4096, 4096, 1, 1, 0},
        {QKB_DEQUANTIZE, 0, 0, 16, 4096, 0, 0, 0}, {QKB_DEQUANTIZE, 0, 0, 4096, 4096, 1, 1, 0},
        {QKB_ACTQUANT, 0, 1, 0, 4096, 0, 0, 0},    {QKB_ACTQUANT, 0, 64, 0, 4096, 0, 1, 0},
        {QKB_ACTQUANT, 0, 512, 0, 4096, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof full_rows / sizeof full_rows[0]; i++) {
        const cfg *q = &full_rows[i];
        if ((!o->ops_mask || (o->ops_mask >> q->kind & 1)) && expand(&e, q)) return qkb_cases_free(out), -1;
    }
    for (size_t p = 0; p < sizeof presets / sizeof presets[0]; p++) {
        cfg pk = {QKB_PACK, 0, 0, presets[p].N, presets[p].K, 0, p == 0, 0};
        cfg dec = {QKB_MATMUL, 0, 1, presets[p].N, presets[p].K, 1, p == 0, 1};
        if ((!o->ops_mask || (o->ops_mask >> QKB_PACK & 1)) && expand(&e, &pk)) return qkb_cases_free(out), -1;
        if ((!o->ops_mask || (o->ops_mask >> QKB_MATMUL & 1)) && expand(&e, &dec)) return qkb_cases_free(out), -1;
    }
    for (size_t m = 0; m < sizeof full_m / sizeof full_m[0]; m++) {
        cfg pre = {QKB_MATMUL, 1, full_m[m], 4096, 4096, 0, full_m[m] == 64, 1};
        if ((!o->ops_mask || (o->ops_mask >> QKB_MATMUL & 1)) && expand(&e, &pre)) return qkb_cases_free(out), -1;
    }
    for (size_t m = 0; m < sizeof full_outlier_m / sizeof full_outlier_m[0] && want_outliers(o); m++)
        for (int f = 0; f < QKB_O_COUNT; f++) {
            int gemm = f == QKB_O_GEMM_F32 || f == QKB_O_GEMM_I8;
            if (expand_outlier(&e, (qkb_ofam)f, full_outlier_m[m], gemm ? 4096 : split_cols(4096), gemm ? split_cols(4096) : 4096))
                return qkb_cases_free(out), -1;
        }
    return 0;
}

/* ---- data: random inputs and quantized weights, cached across consecutive cases ---- */

static void fill_random(float *x, size_t n, uint64_t seed) {
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
    for (size_t i = 0; i < n; i++) {
        s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
        uint64_t r = s * 0x2545F4914F6CDD1Dull;
        x[i] = (float)((double)(r >> 11) * (2.0 / 9007199254740992.0) - 1.0);
    }
}

static float *alloc_f32(size_t n) {
    void *p = NULL;
    if (posix_memalign(&p, 64, (n ? n : 1) * sizeof(float))) return NULL;
    return p;
}

typedef struct wentry {
    int valid;
    qk_format f;
    qk_scale_type st;
    size_t N, K, g;
    qk_qmat w;
    qk_qmat *copies; /* copies[0] is a view of w; the rest are owned copies (cold rotation) */
    int ncopies;
    unsigned long long used;
} wentry;

static wentry wcache[2];
static unsigned long long wclock;

/* Inputs of quantize cases: `n` copies of the same random N×K block. */
static struct {
    float **x;
    int n;
    size_t elems;
} xcache;

static void free_entry(wentry *e) {
    for (int i = 1; i < e->ncopies; i++) qk_qmat_free(&e->copies[i]);
    free(e->copies);
    if (e->valid) qk_qmat_free(&e->w);
    memset(e, 0, sizeof *e);
}

static void stash_release(void);

void qkb_cases_release_cache(void) {
    stash_release();
    for (int i = 0; i < 2; i++) free_entry(&wcache[i]);
    for (int i = 0; i < xcache.n; i++) free(xcache.x[i]);
    free(xcache.x);
    memset(&xcache, 0, sizeof xcache);
}

/* Quantized random weights, made 256 rows at a time by the dispatcher's quantizer. */
static const qk_qmat *weights(qk_format f, qk_scale_type st, size_t N, size_t K, size_t g, char *err, size_t errlen) {
    for (int i = 0; i < 2; i++)
        if (wcache[i].valid && wcache[i].f == f && wcache[i].st == st && wcache[i].N == N && wcache[i].K == K && wcache[i].g == g) {
            wcache[i].used = ++wclock;
            return &wcache[i].w;
        }
    wentry *e = wcache[0].used <= wcache[1].used ? &wcache[0] : &wcache[1];
    free_entry(e);
    if (qk_qmat_alloc(&e->w, f, st, N, K, g) != QK_OK) {
        snprintf(err, errlen, "%s", qk_last_error());
        return NULL;
    }
    size_t chunk = 256;
    float *x = alloc_f32(chunk * K);
    if (!x) {
        qk_qmat_free(&e->w);
        snprintf(err, errlen, "out of memory for %zux%zu weights", N, K);
        return NULL;
    }
    for (size_t r = 0; r < N; r += chunk) {
        size_t r1 = r + chunk < N ? r + chunk : N;
        fill_random(x, (r1 - r) * K, 1000 + r);
        qk_qmat v = qk_qmat_rows(&e->w, r, r1);
        if (qk_quantize(x, K, &v) != QK_OK) {
            snprintf(err, errlen, "%s", qk_last_error());
            free(x);
            qk_qmat_free(&e->w);
            return NULL;
        }
    }
    free(x);
    e->valid = 1;
    e->f = f, e->st = st, e->N = N, e->K = K, e->g = g;
    e->used = ++wclock;
    return &e->w;
}

static int copy_qmat(qk_qmat *dst, const qk_qmat *src) {
    if (qk_qmat_alloc(dst, src->format, src->scale_type, src->rows, src->cols, src->group) != QK_OK) return -1;
    memcpy(dst->codes, src->codes, src->rows * src->row_bytes);
    size_t sb = src->rows * (src->cols / src->group) * scale_bytes(src->scale_type);
    if (src->scales && dst->scales) memcpy(dst->scales, src->scales, sb);
    if (src->mins && dst->mins) memcpy(dst->mins, src->mins, sb);
    return 0;
}

/* n read-only copies of the cached weights (the first is the master itself). */
static const qk_qmat *weight_copies(qk_format f, qk_scale_type st, size_t N, size_t K, size_t g, int n, char *err, size_t errlen) {
    const qk_qmat *m = weights(f, st, N, K, g, err, errlen);
    if (!m) return NULL;
    wentry *e = wcache[0].valid && &wcache[0].w == m ? &wcache[0] : &wcache[1];
    if (e->ncopies >= n) return e->copies;
    qk_qmat *c = realloc(e->copies, (size_t)n * sizeof *c);
    if (!c) return snprintf(err, errlen, "out of memory"), NULL;
    e->copies = c;
    if (e->ncopies == 0) {
        c[0] = *m;
        c[0].owned_ = NULL;
        e->ncopies = 1;
    }
    for (; e->ncopies < n; e->ncopies++)
        if (copy_qmat(&c[e->ncopies], m)) {
            snprintf(err, errlen, "out of memory for weight copy %d of %zux%zu", e->ncopies, N, K);
            return NULL;
        }
    return e->copies;
}

/* n copies of random N×K inputs, shared by consecutive quantize cases. */
static float **input_copies(size_t elems, int n, char *err, size_t errlen) {
    if (xcache.elems != elems) {
        for (int i = 0; i < xcache.n; i++) free(xcache.x[i]);
        free(xcache.x);
        memset(&xcache, 0, sizeof xcache);
        xcache.elems = elems;
    }
    if (xcache.n >= n) return xcache.x;
    float **x = realloc(xcache.x, (size_t)n * sizeof *x);
    if (!x) return snprintf(err, errlen, "out of memory"), NULL;
    xcache.x = x;
    for (; xcache.n < n; xcache.n++) {
        if (!(x[xcache.n] = alloc_f32(elems))) return snprintf(err, errlen, "out of memory for %zu inputs", elems), NULL;
        if (xcache.n == 0) fill_random(x[0], elems, 7);
        else memcpy(x[xcache.n], x[0], elems * sizeof(float));
    }
    return xcache.x;
}

/* ---- buffers and calls ---- */

struct qkb_res {
    int ncopies, next;
    float **x, **y;        /* inputs / outputs per copy (or one) */
    int ny;                /* cold dequantize: y[i] is y[i % ny], the first ny allocated; 0: one per copy */
    float **xin;           /* quantize: inputs per copy (owned by the input cache) */
    qk_qmat *w;            /* per copy */
    qk_qact *a;            /* per copy */
    qk_matmul_plan *plan;  /* per copy */
    int *have_w, *have_a, *have_plan;
    /* outlier families, per copy: W (f32, N×K), int8 X (M×K) and W (N×K), X's gathered columns (M×N);
     * shared: the row scales, the column scales (K), the outlier columns (N) */
    float **w32, **xo;
    int8_t **x8, **w8;
    float *sx, *sw, *cs;
    uint32_t *idx;
    qkb_pool *pool;
    /* the call in flight, for the pool's tasks */
    int cur, status;
    char err[200];
};

/* The plans (packed weights) of the last matmul case, kept for the next case
 * with the same kernel, weights and M (its other thread count or cache state). */
static struct {
    const void *kernel;
    size_t M, N, K, group;
    int n;
    qk_matmul_plan *plan;
} pstash;

static void stash_release(void) {
    for (int i = 0; i < pstash.n; i++) qk_matmul_release(&pstash.plan[i]);
    free(pstash.plan);
    memset(&pstash, 0, sizeof pstash);
}

static void stash_keep(qkb_case *c) {
    qkb_res *r = c->res;
    if (c->kind != QKB_MATMUL && c->kind != QKB_PACK) return;
    for (int i = 0; i < r->ncopies; i++)
        if (!r->have_plan[i]) return;
    stash_release();
    pstash.kernel = c->kernel;
    pstash.M = c->kind == QKB_PACK ? 1 : c->M;
    pstash.N = c->N, pstash.K = c->K, pstash.group = c->group;
    pstash.n = r->ncopies;
    pstash.plan = r->plan;
    r->plan = NULL;
    memset(r->have_plan, 0, (size_t)r->ncopies * sizeof(int));
}

/* Adopt the stashed plans if they fit; 1 if adopted. */
static int stash_take(qkb_case *c) {
    qkb_res *r = c->res;
    size_t M = c->kind == QKB_PACK ? 1 : c->M;
    if (pstash.kernel != c->kernel || pstash.M != M || pstash.N != c->N || pstash.K != c->K || pstash.group != c->group ||
        pstash.n != r->ncopies) {
        stash_release();
        return 0;
    }
    free(r->plan);
    r->plan = pstash.plan;
    for (int i = 0; i < r->ncopies; i++) {
        r->plan[i].w = &r->w[i];
        r->have_plan[i] = 1;
    }
    memset(&pstash, 0, sizeof pstash);
    return 1;
}

void qkb_case_teardown(qkb_case *c) {
    qkb_res *r = c->res;
    if (!r) return;
    stash_keep(c);
    for (int i = 0; i < r->ncopies; i++) {
        if (r->x) free(r->x[i]);
        if (r->y && (!r->ny || i < r->ny)) free(r->y[i]);
        if (r->have_plan && r->have_plan[i]) qk_matmul_release(&r->plan[i]);
        if (r->have_w && r->have_w[i]) qk_qmat_free(&r->w[i]);
        if (r->have_a && r->have_a[i]) qk_qact_free(&r->a[i]);
    }
    free(r->x), free(r->xin), free(r->y), free(r->w), free(r->a), free(r->plan);
    free(r->have_w), free(r->have_a), free(r->have_plan);
    for (int i = 0; i < r->ncopies; i++) {
        if (r->w32) free(r->w32[i]);
        if (r->xo) free(r->xo[i]);
        if (r->x8) free(r->x8[i]);
        if (r->w8) free(r->w8[i]);
    }
    free(r->w32), free(r->xo), free(r->x8), free(r->w8), free(r->sx), free(r->sw), free(r->cs), free(r->idx);
    qkb_pool_destroy(r->pool);
    free(r);
    c->res = NULL;
}

#define FAIL(...)                                   \
    do {                                            \
        snprintf(err, errlen, __VA_ARGS__);         \
        qkb_case_teardown(c);                       \
        return -1;                                  \
    } while (0)

/* Copies of `bytes` each that, rotated, exceed QKB_DRAM_LLC_FACTOR x the LLC (1-4096). */
static int copies_beyond(double llc, double bytes) {
    double k = ceil(QKB_DRAM_LLC_FACTOR * llc / (bytes > 1 ? bytes : 1));
    return k < 1 ? 1 : k > 4096 ? 4096 : (int)k;
}

int qkb_case_setup(qkb_case *c, double llc, char *err, size_t errlen) {
    if (c->res) return 0;
    if (c->skip[0]) {
        snprintf(err, errlen, "%s", c->skip);
        return -1;
    }
    qkb_res *r = calloc(1, sizeof *r);
    if (!r) FAIL("out of memory");
    c->res = r;
    if (llc <= 0) llc = 64.0 * 1024 * 1024;
    int n = 1;
    if (c->cold) {
        /* the copies a call reads (a dequantize's streaming stores leave its outputs out of
         * the caches: its codes alone, rotated by the whole copy, would fit the LLC) */
        double in = c->kind == QKB_DEQUANTIZE ? c->ws - (double)c->N * (double)c->K * sizeof(float) : c->ws;
        n = copies_beyond(llc, in);
        if (c->kind == QKB_DEQUANTIZE) r->ny = copies_beyond(llc, (double)c->N * (double)c->K * sizeof(float));
        if (r->ny > n) r->ny = n;
    }
    r->ncopies = n;
    r->x = calloc((size_t)n, sizeof *r->x);
    r->xin = calloc((size_t)n, sizeof *r->xin);
    r->y = calloc((size_t)n, sizeof *r->y);
    r->w = calloc((size_t)n, sizeof *r->w);
    r->a = calloc((size_t)n, sizeof *r->a);
    r->plan = calloc((size_t)n, sizeof *r->plan);
    r->have_w = calloc((size_t)n, sizeof(int));
    r->have_a = calloc((size_t)n, sizeof(int));
    r->have_plan = calloc((size_t)n, sizeof(int));
    if (!r->x || !r->xin || !r->y || !r->w || !r->a || !r->plan || !r->have_w || !r->have_a || !r->have_plan) FAIL("out of memory");
    if (c->threads > 1) {
        r->pool = qkb_pool_create(c->threads, err, errlen);
        if (!r->pool) {
            qkb_case_teardown(c);
            return -1;
        }
    } else {
        qkb_pin_self(0);
    }
    size_t K = c->K;
    switch (c->kind) {
    case QKB_QUANTIZE: {
        float **x = input_copies(c->N * K, n, err, errlen);
        if (!x) {
            qkb_case_teardown(c);
            return -1;
        }
        for (int i = 0; i < n; i++) {
            r->xin[i] = x[i];
            if (qk_qmat_alloc(&r->w[i], c->format, c->st, c->N, K, c->group) != QK_OK) FAIL("%s", qk_last_error());
            r->have_w[i] = 1;
        }
        break;
    }
    case QKB_DEQUANTIZE:
    case QKB_PACK:
    case QKB_MATMUL: {
        const qk_qmat *m = weight_copies(c->format, c->st, c->N, K, c->group, n, err, errlen);
        if (!m) {
            qkb_case_teardown(c);
            return -1;
        }
        int adopted = 0;
        if (c->kind != QKB_DEQUANTIZE) {
            for (int i = 0; i < n; i++) r->w[i] = m[i], r->w[i].owned_ = NULL;
            adopted = stash_take(c);
        }
        for (int i = 0; i < n; i++) {
            r->w[i] = m[i]; /* a view: the cache owns the storage */
            r->w[i].owned_ = NULL;
            if (c->kind == QKB_DEQUANTIZE) {
                if (r->ny && i >= r->ny) r->y[i] = r->y[i % r->ny];
                else if (!(r->y[i] = alloc_f32(c->N * K))) FAIL("out of memory for %zux%zu outputs", c->N, K);
                else memset(r->y[i], 0, c->N * K * sizeof(float));
                continue;
            }
            const qk_matmul_kernel *k = c->kernel;
            qk_op op = c->kind == QKB_PACK ? k->op : (c->M == 1 && k->op == QK_OP_GEMV ? QK_OP_GEMV : QK_OP_GEMM);
            if (!adopted) {
                if (qk_matmul_prepare(&r->plan[i], k, op, c->mode, &r->w[i], c->kind == QKB_PACK ? 1 : c->M) != QK_OK)
                    FAIL("%s", qk_last_error());
                r->have_plan[i] = 1;
            }
            if (r->pool)
                for (int t = 0; t < c->threads; t++) {
                    size_t n0, n1;
                    qkb_split(c->N, c->nr, t, c->threads, &n0, &n1);
                    qkb_bind_local(r->w[i].codes + n0 * r->w[i].row_bytes, (n1 - n0) * r->w[i].row_bytes, t);
                }
        }
        if (c->kind == QKB_MATMUL) {
            if (!(r->x[0] = alloc_f32(c->M * K)) || !(r->y[0] = alloc_f32(c->M * c->N))) FAIL("out of memory for activations");
            fill_random(r->x[0], c->M * K, 3);
            memset(r->y[0], 0, c->M * c->N * sizeof(float));
        }
        break;
    }
    case QKB_OUTLIER: {
        const size_t M = c->M, N = c->N;
        const int gemm = c->ofam == QKB_O_GEMM_F32 || c->ofam == QKB_O_GEMM_I8, i8 = c->ofam == QKB_O_GEMM_I8;
        r->w32 = calloc((size_t)n, sizeof *r->w32), r->xo = calloc((size_t)n, sizeof *r->xo);
        r->x8 = calloc((size_t)n, sizeof *r->x8), r->w8 = calloc((size_t)n, sizeof *r->w8);
        r->sx = alloc_f32(M), r->sw = alloc_f32(N ? N : 1), r->cs = alloc_f32(K);
        r->idx = malloc((N ? N : 1) * sizeof *r->idx);
        if (!r->w32 || !r->xo || !r->x8 || !r->w8 || !r->sx || !r->sw || !r->cs || !r->idx) FAIL("out of memory");
        for (size_t m = 0; m < M; m++) r->sx[m] = 0.01f;
        for (size_t j = 0; j < N; j++) r->sw[j] = 0.001f, r->idx[j] = (uint32_t)(j * K / N); /* spread, increasing */
        fill_random(r->cs, K, 5);
        for (int i = 0; i < n; i++) {
            if (i8) {
                if (!(r->x8[i] = malloc(M * K)) || !(r->w8[i] = malloc(N * K))) FAIL("out of memory for int8 operands");
                for (size_t j = 0; j < M * K; j++) r->x8[i][j] = (int8_t)((j * 37 + 11) % 255 - 127);
                for (size_t j = 0; j < N * K; j++) r->w8[i][j] = (int8_t)((j * 53 + 7) % 255 - 127);
            } else {
                if (!(r->x[i] = alloc_f32(M * K))) FAIL("out of memory for activations");
                fill_random(r->x[i], M * K, 13 + (uint64_t)i);
            }
            if (gemm && !i8) {
                if (!(r->w32[i] = alloc_f32(N * K))) FAIL("out of memory for weights");
                fill_random(r->w32[i], N * K, 17 + (uint64_t)i);
            }
            size_t ny = gemm ? M * N : c->ofam == QKB_O_FWHT ? 0 : M * K;
            if (ny) {
                if (!(r->y[i] = alloc_f32(ny))) FAIL("out of memory for outputs");
                memset(r->y[i], 0, ny * sizeof(float));
            }
            if (c->ofam == QKB_O_COLSPLIT && !(r->xo[i] = alloc_f32(M * N))) FAIL("out of memory for outlier columns");
        }
        break;
    }
    case QKB_ACTQUANT:
        for (int i = 0; i < n; i++) {
            if (!(r->x[i] = alloc_f32(c->M * K))) FAIL("out of memory for activations");
            fill_random(r->x[i], c->M * K, 11 + (uint64_t)i);
            if (qk_qact_alloc(&r->a[i], c->rule, c->M, K, c->group) != QK_OK) FAIL("%s", qk_last_error());
            r->have_a[i] = 1;
        }
        break;
    }
    return 0;
}

/* The row view [r0, r1) of activation buffer a. */
static qk_qact qact_rows(const qk_qact *a, size_t r0, size_t r1) {
    qk_qact v = *a;
    size_t gpr = a->cols / a->group;
    v.rows = r1 - r0;
    v.codes = a->codes + r0 * a->cols;
    v.scales = a->scales + r0 * gpr;
    v.sums = a->sums + r0 * gpr;
    v.owned_ = NULL;
    return v;
}

static void set_err(qkb_res *r, qk_status s) {
    if (s != QK_OK && r->status == QK_OK) {
        r->status = s;
        snprintf(r->err, sizeof r->err, "%s", qk_last_error());
    }
}

static void task(void *ctx, int tid, int nt) {
    qkb_case *c = ctx;
    qkb_res *r = c->res;
    int i = r->cur;
    size_t lo, hi;
    switch (c->kind) {
    case QKB_QUANTIZE: {
        qkb_split(c->N, 1, tid, nt, &lo, &hi);
        if (lo == hi) return;
        qk_qmat v = qk_qmat_rows(&r->w[i], lo, hi);
        set_err(r, qk_quantize_with(c->kernel, r->xin[i] + lo * c->K, c->K, &v));
        break;
    }
    case QKB_DEQUANTIZE: {
        qkb_split(c->N, 1, tid, nt, &lo, &hi);
        if (lo == hi) return;
        qk_qmat v = qk_qmat_rows(&r->w[i], lo, hi);
        set_err(r, qk_dequantize_with(c->kernel, &v, r->y[i] + lo * c->K, c->K));
        break;
    }
    case QKB_ACTQUANT: {
        qkb_split(c->M, 1, tid, nt, &lo, &hi);
        if (lo == hi) return;
        qk_qact v = qact_rows(&r->a[i], lo, hi);
        set_err(r, qk_actquant_with(c->kernel, r->x[i] + lo * c->K, c->K, &v));
        break;
    }
    case QKB_MATMUL:
        qkb_split(c->N, c->nr, tid, nt, &lo, &hi);
        if (lo < hi) qk_matmul_run_cols(&r->plan[i], c->M, r->x[0], c->K, r->y[0], c->N, lo, hi);
        break;
    case QKB_PACK:
    case QKB_OUTLIER: break;
    }
}

/* One call of an outlier family on copy i (one thread). */
static qk_status outlier_call(const qkb_case *c, qkb_res *r, int i) {
    const size_t M = c->M, N = c->N, K = c->K;
    switch (c->ofam) {
    case QKB_O_FWHT: return qk_fwht_with(c->kernel, r->x[i], K, M, K, c->group);
    case QKB_O_COLSCALE: return qk_colscale_with(c->kernel, r->x[i], K, M, K, r->cs, r->y[i], K);
    case QKB_O_COLSPLIT: return qk_colsplit_with(c->kernel, r->x[i], K, M, K, r->idx, N, r->y[i], K, r->xo[i], N);
    case QKB_O_GEMM_F32: return qk_gemm_f32_with(c->kernel, M, N, K, r->x[i], K, r->w32[i], K, r->y[i], N, 1);
    case QKB_O_GEMM_I8: return qk_gemm_i8_with(c->kernel, M, N, K, r->x8[i], K, r->sx, r->w8[i], K, r->sw, r->y[i], N, 1);
    default: return QK_ERR_ARG;
    }
}

/* The buffers copy i of a set-up case streams, into reg (room for 4): first the nin
 * the call reads, then what it writes; their count. */
static size_t copy_regions(const qkb_case *c, int i, qkb_region *reg, size_t *nin) {
    const qkb_res *r = c->res;
    const qk_qmat *w = &r->w[i];
    size_t sb = w->rows * (w->cols / w->group) * (w->scale_type == QK_SCALE_F16 ? 2 : 4), n = 0;
    int quant = c->kind == QKB_QUANTIZE;
    if (quant) reg[n++] = (qkb_region){r->xin[i], c->N * c->K * sizeof(float)}; /* its input */
    reg[n++] = (qkb_region){w->codes, w->rows * w->row_bytes};                   /* the matrix */
    if (w->scales) reg[n++] = (qkb_region){w->scales, sb};
    if (w->mins) reg[n++] = (qkb_region){w->mins, sb};
    *nin = quant ? 1 : n; /* a quantize writes the matrix; the others read it */
    if (c->kind == QKB_DEQUANTIZE) reg[n++] = (qkb_region){r->y[i], c->N * c->K * sizeof(float)};
    return n;
}

static int streams_dram(const qkb_case *c) {
    return c->res && c->cold && (c->kind == QKB_QUANTIZE || c->kind == QKB_DEQUANTIZE || c->kind == QKB_MATMUL);
}

/* npairs (5 or more past `seconds`) of one timed call of the case, at `work` (bytes
 * or ops) per call, and right after it the reference rates the nb `beside`
 * functions measure, in turn, into ref[0..nb). */
typedef double (*beside_fn)(qkb_case *, double);
static int case_pairs(qkb_case *c, int npairs, double seconds, double work, int nb, const beside_fn *beside, double *kernel,
                      double *const *ref, char *err, size_t errlen) {
    if (!c->res->pool) qkb_pin_self(0);
    int n = 0;
    double t_end = qkb_seconds() + seconds;
    while (n < npairs && (n < 5 || qkb_seconds() < t_end)) {
        double t0 = qkb_seconds();
        if (qkb_case_call(c, err, errlen)) return -1;
        double dt = qkb_seconds() - t0;
        if (dt <= 0) return 0;
        for (int b = 0; b < nb; b++)
            if ((ref[b][n] = beside[b](c, dt)) <= 0) return 0;
        kernel[n++] = work / dt;
    }
    return n;
}

/* The copy the next call would take, which that call then skips: cold since its
 * last use; a warm case's one copy, in cache. */
static int take_next(qkb_res *r) {
    int i = r->next;
    r->next = r->next + 1 == r->ncopies ? 0 : r->next + 1;
    return i;
}

/* One plain read of every buffer of the next copy; cold, its lines are evicted after
 * (untimed): a dequantize's calls store past the caches, and would find the outputs
 * this read brought in there when they come round to the copy again. */
static double read_beside(qkb_case *c, double call_s) {
    (void)call_s;
    qkb_region reg[4];
    size_t nin, n = copy_regions(c, take_next(c->res), reg, &nin);
    double bw = qkb_read_regions_once(c->res->pool, reg, n);
    if (c->cold) qkb_evict_regions(reg, n);
    return bw;
}

/* One plain stream of the next copy's traffic: a read of what the call reads and
 * a streaming write over what it writes (its outputs, which the call rewrites); its
 * lines evicted after, as the read's. */
static double stream_beside(qkb_case *c, double call_s) {
    (void)call_s;
    qkb_region reg[4];
    size_t nin, n = copy_regions(c, take_next(c->res), reg, &nin);
    double bw = qkb_stream_regions_once(c->res->pool, reg, nin, reg + nin, n - nin);
    qkb_evict_regions(reg, n);
    return bw;
}

/* A burst of the tier's peak loop about as long as the call (0.5-5 ms). */
static double peak_beside(qkb_case *c, double call_s) {
    return qkb_peak_burst(c->tier, c->rule != QK_ACT_F32, call_s < 5e-4 ? 5e-4 : call_s > 5e-3 ? 5e-3 : call_s);
}

/* Cases held against a plain read of their own buffers: cold ones that stream
 * DRAM (two copies or more, so the read leaves the next call's cold), and warm
 * quantize and dequantize on one thread (their buffers in cache: the target of
 * a cache-resident conversion is a fraction of what reading them gives). */
static int reads_own(const qkb_case *c) {
    if (!c->res) return 0;
    if (c->cold) return streams_dram(c) && c->res->ncopies >= 2;
    return c->threads == 1 && (c->kind == QKB_QUANTIZE || c->kind == QKB_DEQUANTIZE);
}

int qkb_case_read_pairs(qkb_case *c, int npairs, double seconds, double *kernel_bw, double *read_bw, double *stream_bw, char *err,
                        size_t errlen) {
    stream_bw[0] = 0;
    if (!reads_own(c)) return 0;
    /* cold conversions, with a copy for the call, the read and the stream each */
    int streams = c->cold && c->kind != QKB_MATMUL && c->res->ncopies >= 3;
    const beside_fn beside[2] = {read_beside, stream_beside};
    double *const ref[2] = {read_bw, stream_bw};
    return case_pairs(c, npairs, seconds, c->bytes, streams ? 2 : 1, beside, kernel_bw, ref, err, errlen);
}

int qkb_case_peak_pairs(qkb_case *c, int npairs, double seconds, double *kernel_ops, double *peak_ops, char *err, size_t errlen) {
    if (!c->res || c->cold || c->threads != 1 || c->kind != QKB_MATMUL || strcmp(c->bound, "compute")) return 0;
    const beside_fn beside[1] = {peak_beside};
    double *const ref[1] = {peak_ops};
    return case_pairs(c, npairs, seconds, c->ops, 1, beside, kernel_ops, ref, err, errlen);
}

int qkb_case_call(qkb_case *c, char *err, size_t errlen) {
    qkb_res *r = c->res;
    int i = take_next(r);
    r->cur = i;
    r->status = QK_OK;
    qk_status s = QK_OK;
    if (!r->pool) {
        switch (c->kind) {
        case QKB_QUANTIZE: s = qk_quantize_with(c->kernel, r->xin[i], c->K, &r->w[i]); break;
        case QKB_DEQUANTIZE: s = qk_dequantize_with(c->kernel, &r->w[i], r->y[i], c->K); break;
        case QKB_ACTQUANT: s = qk_actquant_with(c->kernel, r->x[i], c->K, &r->a[i]); break;
        case QKB_PACK: s = qk_matmul_repack(&r->plan[i]); break;
        case QKB_MATMUL: s = qk_matmul_run(&r->plan[i], c->M, r->x[0], c->K, r->y[0], c->N); break;
        case QKB_OUTLIER: s = outlier_call(c, r, i); break;
        }
        if (s != QK_OK) {
            snprintf(err, errlen, "%s", qk_last_error());
            return -1;
        }
        return 0;
    }
    if (c->kind == QKB_MATMUL && (s = qk_matmul_quantize_acts(&r->plan[i], c->M, r->x[0], c->K)) != QK_OK) {
        snprintf(err, errlen, "%s", qk_last_error());
        return -1;
    }
    qkb_pool_run(r->pool, task, c);
    if (r->status != QK_OK) {
        snprintf(err, errlen, "%s", r->err);
        return -1;
    }
    return 0;
}
