/* Options and data shared by the accuracy commands (acc_cli.h). */
#include "acc_cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void acc_opts_init(acc_opts *o) {
    memset(o, 0, sizeof *o);
    o->M = 8, o->N = 2048, o->K = 4096;
    o->formats = (1u << QK_FORMAT_COUNT) - 1;
    o->modes = (1u << QK_MODE_COUNT) - 1;
    static const size_t all[] = {32, 64, 128, 256, ACC_GROUP_K};
    memcpy(o->groups, all, sizeof all);
    o->ngroups = 5;
    o->scales = QK_SCALE_F32;
    o->seed = 42;
    qk_gen_spec_default(&o->w.gen);
    qk_gen_spec_default(&o->x.gen);
}

void acc_opts_free(acc_opts *o) {
    free(o->w.path), free(o->w.tensor), free(o->x.path), free(o->x.tensor);
    o->w.path = o->w.tensor = o->x.path = o->x.tensor = NULL;
}

int acc_parse_size(const char *s, size_t *out) {
    if (!s || !isdigit((unsigned char)*s)) return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v > ((size_t)1 << 40)) return -1;
    *out = (size_t)v;
    return 0;
}

int acc_parse_double(const char *s, double *out) {
    if (!s || !*s) return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

int acc_parse_shape(const char *s, size_t *M, size_t *N, size_t *K) {
    size_t v[3];
    int n = 0;
    const char *p = s;
    if (!s) return -1;
    while (n < 3) {
        char *end;
        if (!isdigit((unsigned char)*p)) return -1;
        errno = 0;
        unsigned long long x = strtoull(p, &end, 10);
        if (errno || x == 0 || x > ((size_t)1 << 31)) return -1;
        v[n++] = (size_t)x;
        if (*end == 0) break;
        if (*end != 'x' && *end != 'X') return -1;
        p = end + 1;
    }
    if (n == 3) *M = v[0], *N = v[1], *K = v[2];
    else if (n == 2) *N = v[0], *K = v[1];
    else return -1;
    return 0;
}

/* Comma lists: each item through `one` (its enum value, or -1); "all" keeps
 * every one of `count`. */
static int parse_mask(const char *s, int count, int (*one)(const char *), unsigned *mask) {
    if (!s) return -1;
    if (!strcmp(s, "all")) {
        *mask = (1u << count) - 1;
        return 0;
    }
    unsigned m = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int v = one(tok);
        if (v < 0) return -1;
        m |= 1u << v;
    }
    if (!m) return -1;
    *mask = m;
    return 0;
}

static int one_format(const char *s) {
    qk_format f;
    return qk_format_parse(s, &f) == QK_OK ? (int)f : -1;
}

static int one_mode(const char *s) {
    qk_mode m;
    return qk_mode_parse(s, &m) == QK_OK ? (int)m : -1;
}

int acc_parse_formats(const char *s, unsigned *mask) { return parse_mask(s, QK_FORMAT_COUNT, one_format, mask); }
int acc_parse_modes(const char *s, unsigned *mask) { return parse_mask(s, QK_MODE_COUNT, one_mode, mask); }

int acc_parse_groups(const char *s, size_t *groups, int *n) {
    if (!s) return -1;
    if (!strcmp(s, "all")) {
        static const size_t all[] = {32, 64, 128, 256, ACC_GROUP_K};
        memcpy(groups, all, sizeof all);
        *n = 5;
        return 0;
    }
    int c = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        size_t g;
        if (!strcmp(tok, "K") || !strcmp(tok, "k")) g = ACC_GROUP_K;
        else if (acc_parse_size(tok, &g) || g == 0 || g % 2) return -1;
        if (c == ACC_MAX_GROUPS) return -1;
        groups[c++] = g;
    }
    if (!c) return -1;
    *n = c;
    return 0;
}

static int set_src_file(acc_src *s, const char *spec) {
    free(s->path), free(s->tensor);
    return qk_tensor_spec_split(spec, &s->path, &s->tensor);
}

int acc_opts_take(acc_opts *o, unsigned allowed, const char *cmd, int argc, char **argv, int *i) {
    const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
#define NEEDS(flag)                                                                                                    \
    do {                                                                                                               \
        if (!(allowed & (flag))) return 0;                                                                             \
        if (!v) {                                                                                                      \
            fprintf(stderr, "qkbench %s: %s needs a value (see qkbench %s --help)\n", cmd, a, cmd);                    \
            return -1;                                                                                                 \
        }                                                                                                              \
        ++*i;                                                                                                          \
    } while (0)
#define BAD(what)                                                                                                      \
    do {                                                                                                               \
        fprintf(stderr, "qkbench %s: %s '%s': %s\n", cmd, a, v, what);                                                 \
        return -1;                                                                                                     \
    } while (0)
    if (!strcmp(a, "--shape")) {
        NEEDS(ACC_O_SHAPE);
        if (acc_parse_shape(v, &o->M, &o->N, &o->K)) BAD("expected MxNxK (or NxK) with positive sizes, e.g. 8x4096x4096");
    } else if (!strcmp(a, "--format")) {
        NEEDS(ACC_O_FORMAT);
        if (acc_parse_formats(v, &o->formats)) BAD("expected 'all' or a comma list of w4s, w4a, w8s, q4_0, q8_0");
    } else if (!strcmp(a, "--group")) {
        NEEDS(ACC_O_GROUP);
        if (acc_parse_groups(v, o->groups, &o->ngroups))
            BAD("expected 'all' or a comma list of even group sizes and K (per channel), e.g. 32,128,K");
        o->groups_explicit = strcmp(v, "all") != 0;
    } else if (!strcmp(a, "--mode")) {
        NEEDS(ACC_O_MODE);
        if (acc_parse_modes(v, &o->modes)) BAD("expected 'all' or a comma list of W4A32, W8A32, W4A8, W8A8, W4A4, q4_0xq8_0, q8_0xq8_0");
    } else if (!strcmp(a, "--scales")) {
        NEEDS(ACC_O_SCALES);
        if (!strcmp(v, "f32")) o->scales = QK_SCALE_F32;
        else if (!strcmp(v, "f16")) o->scales = QK_SCALE_F16;
        else BAD("expected f32 or f16");
    } else if (!strcmp(a, "--dist") || !strcmp(a, "--act-dist")) {
        NEEDS(ACC_O_DATA);
        qk_dist d;
        if (qk_dist_parse(v, &d)) BAD("expected gauss, laplace, t, uniform, outlier or swiglu");
        (a[2] == 'd' ? &o->w : &o->x)->gen.dist = d;
    } else if (!strcmp(a, "--nu") || !strcmp(a, "--outlier-frac") || !strcmp(a, "--outlier-alpha")) {
        NEEDS(ACC_O_DATA);
        double d;
        if (acc_parse_double(v, &d)) BAD("expected a number");
        double *pw = a[2] == 'n' ? &o->w.gen.nu : !strcmp(a, "--outlier-frac") ? &o->w.gen.outlier_frac : &o->w.gen.outlier_alpha;
        double *px = a[2] == 'n' ? &o->x.gen.nu : !strcmp(a, "--outlier-frac") ? &o->x.gen.outlier_frac : &o->x.gen.outlier_alpha;
        *pw = *px = d;
    } else if (!strcmp(a, "--swiglu-dim")) {
        NEEDS(ACC_O_DATA);
        size_t d;
        if (acc_parse_size(v, &d) || d == 0) BAD("expected a positive integer");
        o->w.gen.swiglu_dim = o->x.gen.swiglu_dim = d;
    } else if (!strcmp(a, "--seed")) {
        NEEDS(ACC_O_DATA);
        char *end;
        errno = 0;
        unsigned long long s = strtoull(v, &end, 0);
        if (errno || *end || !*v || *v == '-') BAD("expected a non-negative integer");
        o->seed = s;
    } else if (!strcmp(a, "--weights") || !strcmp(a, "--acts")) {
        NEEDS(ACC_O_FILES);
        if (set_src_file(a[2] == 'w' ? &o->w : &o->x, v)) BAD("out of memory");
    } else if (!strcmp(a, "--csv") || !strcmp(a, "--json") || !strcmp(a, "--svg") || !strcmp(a, "--out")) {
        NEEDS(ACC_O_OUTPUT);
        if (a[2] == 'c') o->csv = v;
        else if (a[2] == 'j') o->json = v;
        else if (a[2] == 's') o->svg = v;
        else o->out = v;
    } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
        if (!(allowed & ACC_O_OUTPUT)) return 0;
        o->quiet = 1;
    } else {
        return 0;
    }
    return 1;
#undef NEEDS
#undef BAD
}

int acc_opts_check(const acc_opts *o, const char *cmd) {
    const char *bad;
    if ((bad = qk_gen_spec_check(&o->w.gen)) || (bad = qk_gen_spec_check(&o->x.gen))) {
        fprintf(stderr, "qkbench %s: %s\n", cmd, bad);
        return -1;
    }
    return 0;
}

void acc_opts_help(unsigned allowed) {
    if (allowed & ACC_O_SHAPE) printf("  --shape MxNxK        activations M x K, weights N x K (default for this command above)\n");
    if (allowed & ACC_O_FORMAT) printf("  --format LIST        all (default) or a comma list of w4s, w4a, w8s, q4_0, q8_0\n");
    if (allowed & ACC_O_GROUP) printf("  --group LIST         all (default: 32,64,128,256,K) or a comma list; K = per channel\n");
    if (allowed & ACC_O_MODE) printf("  --mode LIST          all (default) or a comma list of W4A32, W8A32, W4A8, W8A8, W4A4, q4_0xq8_0, q8_0xq8_0\n");
    if (allowed & ACC_O_SCALES) printf("  --scales f32|f16     storage type of w4s/w4a/w8s scales (default f32; q4_0/q8_0 are always f16)\n");
    if (allowed & ACC_O_DATA)
        printf("  --dist D             generated weights: gauss (default), laplace, t, uniform, outlier, swiglu\n"
               "  --act-dist D         generated activations (default gauss)\n"
               "  --nu V               Student-t degrees of freedom (default 4; unit variance for V > 2)\n"
               "  --outlier-frac P     outlier: fraction of channels that are outliers (default 0.01)\n"
               "  --outlier-alpha A    outlier: their scale (default 20)\n"
               "  --swiglu-dim D       swiglu: inner dimension of x·Wg, x·Wu (default 256)\n"
               "  --seed S             seed of every generator (default 42; always printed)\n");
    if (allowed & ACC_O_FILES)
        printf("  --weights FILE[:T]   weights from a .safetensors (F32/F16/BF16) or .npy file: tensor T, or every\n"
               "                       2-D tensor of the file\n"
               "  --acts FILE[:T]      activations from a file (their K must match the weights')\n");
    if (allowed & ACC_O_OUTPUT)
        printf("  --csv FILE, --json FILE, --svg FILE   write the table (files are replaced atomically, row by row)\n"
               "  --out DIR            write every output file into DIR\n"
               "  --quiet              no table on stdout\n");
}

int acc_groups_for(const acc_opts *o, qk_format f, size_t K, size_t *out, char *notes, size_t notes_len) {
    int c = 0;
    size_t nl = notes ? strlen(notes) : 0;
    if (f == QK_Q4_0 || f == QK_Q8_0) {
        int want = 0;
        for (int i = 0; i < o->ngroups; i++) want |= o->groups[i] == 32 || !o->groups_explicit;
        if (!want) {
            if (notes && nl < notes_len)
                nl += (size_t)snprintf(notes + nl, notes_len - nl, "  %s skipped: it has g = 32 only, not in --group\n", qk_format_name(f));
            return 0;
        }
        if (K % 32) {
            if (notes && nl < notes_len)
                nl += (size_t)snprintf(notes + nl, notes_len - nl, "  %s skipped: K=%zu is not a multiple of its block of 32\n", qk_format_name(f), K);
            return 0;
        }
        out[c++] = 32;
        return c;
    }
    for (int i = 0; i < o->ngroups; i++) {
        size_t g = o->groups[i] == ACC_GROUP_K ? K : o->groups[i];
        int dup = 0;
        for (int j = 0; j < c; j++) dup |= out[j] == g;
        if (dup) continue;
        if (K % g || g % 2) {
            if (notes && nl < notes_len)
                nl += (size_t)snprintf(notes + nl, notes_len - nl, "  %s g=%zu skipped: K=%zu is not a multiple of %zu\n", qk_format_name(f), g, K, g);
            continue;
        }
        out[c++] = g;
    }
    return c;
}

void acc_mat_free(acc_mat *m) {
    free(m->v);
    m->v = NULL;
}

int acc_mat_generate(acc_mat *m, const qk_gen_spec *g, uint64_t seed, uint64_t stream, size_t rows, size_t cols, char *err,
                     size_t errlen) {
    memset(m, 0, sizeof *m);
    if (rows && cols > SIZE_MAX / sizeof(float) / rows) {
        snprintf(err, errlen, "%zu x %zu is too large", rows, cols);
        return -1;
    }
    m->v = malloc(rows * cols * sizeof(float) + 1);
    if (!m->v) {
        snprintf(err, errlen, "out of memory for a %zu x %zu matrix", rows, cols);
        return -1;
    }
    if (qk_gen_matrix(g, seed, stream, m->v, rows, cols, cols, err, errlen)) {
        acc_mat_free(m);
        return -1;
    }
    m->rows = rows, m->cols = cols;
    char d[96];
    qk_gen_spec_describe(g, d, sizeof d);
    snprintf(m->name, sizeof m->name, "generated");
    snprintf(m->desc, sizeof m->desc, "%s, seed %llu, stream %llu", d, (unsigned long long)seed, (unsigned long long)stream);
    return 0;
}

int acc_mat_read(acc_mat *m, const qk_tfile *f, const char *path, size_t i, char *err, size_t errlen) {
    memset(m, 0, sizeof *m);
    char msg[400];
    if (qk_tfile_read(f, i, &m->v, &m->rows, &m->cols, msg, sizeof msg)) {
        snprintf(err, errlen, "%s: %s", path, msg);
        return -1;
    }
    const qk_tinfo *t = &f->t[i];
    size_t n = m->rows * m->cols;
    for (size_t k = 0; k < n; k++)
        if (!isfinite(m->v[k])) {
            snprintf(err, errlen, "%s: tensor '%s' holds a non-finite value (%g) at row %zu, column %zu", path, t->name, (double)m->v[k],
                     k / m->cols, k % m->cols);
            acc_mat_free(m);
            return -1;
        }
    char shape[128];
    qk_tinfo_shape_str(t, shape, sizeof shape);
    if (t->name[0]) snprintf(m->name, sizeof m->name, "%s", t->name);
    else { /* .npy: the file's base name */
        const char *b = strrchr(path, '/');
        snprintf(m->name, sizeof m->name, "%s", b ? b + 1 : path);
    }
    snprintf(m->desc, sizeof m->desc, "%s%s%s %s %s", path, t->name[0] ? ":" : "", t->name, shape, t->dtype);
    return 0;
}

long acc_select_tensors(const qk_tfile *f, const char *path, const char *tensor, size_t **idx, char *err, size_t errlen) {
    *idx = malloc((f->count ? f->count : 1) * sizeof **idx);
    if (!*idx) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    long n = 0;
    if (tensor) {
        long i = qk_tfile_find(f, tensor);
        if (i < 0) {
            snprintf(err, errlen, "%s: no tensor named '%s' (the file holds %zu tensors%s%s%s)", path, tensor, f->count,
                     f->count ? ", e.g. '" : "", f->count ? f->t[0].name : "", f->count ? "'" : "");
            free(*idx);
            *idx = NULL;
            return -1;
        }
        (*idx)[n++] = (size_t)i;
        return n;
    }
    for (size_t i = 0; i < f->count; i++) {
        const qk_tinfo *t = &f->t[i];
        int two_d = f->kind == QK_TFILE_NPY ? t->ndim >= 1 : t->ndim == 2;
        if (t->readable && two_d && t->end > t->begin) (*idx)[n++] = i;
    }
    if (!n) {
        snprintf(err, errlen, "%s: no 2-D tensor of dtype F32, F16 or BF16 in the file", path);
        free(*idx);
        *idx = NULL;
        return -1;
    }
    return n;
}
