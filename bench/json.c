/* Text buffer, JSON writer and a small JSON reader. */
#include "json.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- buffer ---- */

void qkb_buf_free(qkb_buf *b) {
    free(b->p);
    memset(b, 0, sizeof *b);
}

char *qkb_buf_take(qkb_buf *b) {
    if (b->oom) {
        qkb_buf_free(b);
        return NULL;
    }
    return b->p;
}

static int reserve(qkb_buf *b, size_t extra) {
    if (b->oom) return 0;
    if (b->n + extra + 1 <= b->cap) return 1;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + extra + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = 1;
        return 0;
    }
    b->p = p;
    b->cap = cap;
    return 1;
}

void qkb_buf_putn(qkb_buf *b, const char *s, size_t n) {
    if (!reserve(b, n)) return;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

void qkb_buf_puts(qkb_buf *b, const char *s) { qkb_buf_putn(b, s, strlen(s)); }

void qkb_buf_printf(qkb_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)n;
}

/* ---- writer ---- */

void qkw_init(qkw *w, qkb_buf *b) {
    memset(w, 0, sizeof *w);
    w->b = b;
    w->first[0] = 1;
}

static void indent(qkw *w) {
    qkb_buf_putn(w->b, "\n", 1);
    for (int i = 0; i < w->depth; i++) qkb_buf_putn(w->b, "  ", 2);
}

/* Before any value: the comma and newline, unless it follows its key. */
static void pre_value(qkw *w) {
    if (w->after_key) {
        w->after_key = 0;
        return;
    }
    if (w->depth > 0) {
        if (!w->first[w->depth]) qkb_buf_putn(w->b, ",", 1);
        indent(w);
    }
    w->first[w->depth] = 0;
}

static void open(qkw *w, char c) {
    pre_value(w);
    qkb_buf_putn(w->b, &c, 1);
    if (w->depth < 31) w->depth++;
    w->first[w->depth] = 1;
}

static void close_(qkw *w, char c) {
    int empty = w->first[w->depth];
    if (w->depth > 0) w->depth--;
    if (!empty) indent(w);
    qkb_buf_putn(w->b, &c, 1);
    if (w->depth == 0) qkb_buf_putn(w->b, "\n", 1);
}

void qkw_obj(qkw *w) { open(w, '{'); }
void qkw_arr(qkw *w) { open(w, '['); }
void qkw_end_obj(qkw *w) { close_(w, '}'); }
void qkw_end_arr(qkw *w) { close_(w, ']'); }

static void put_string(qkb_buf *b, const char *s) {
    qkb_buf_putn(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': qkb_buf_puts(b, "\\\""); break;
        case '\\': qkb_buf_puts(b, "\\\\"); break;
        case '\n': qkb_buf_puts(b, "\\n"); break;
        case '\r': qkb_buf_puts(b, "\\r"); break;
        case '\t': qkb_buf_puts(b, "\\t"); break;
        default:
            if (*p < 0x20) qkb_buf_printf(b, "\\u%04x", *p);
            else qkb_buf_putn(b, (const char *)p, 1);
        }
    }
    qkb_buf_putn(b, "\"", 1);
}

void qkw_key(qkw *w, const char *k) {
    pre_value(w);
    put_string(w->b, k);
    qkb_buf_putn(w->b, ": ", 2);
    w->after_key = 1;
}

void qkw_str(qkw *w, const char *s) {
    pre_value(w);
    if (s) put_string(w->b, s);
    else qkb_buf_puts(w->b, "null");
}

void qkw_num(qkw *w, double v) {
    pre_value(w);
    if (!isfinite(v)) qkb_buf_puts(w->b, "null");
    else if (v == floor(v) && fabs(v) < 1e15) qkb_buf_printf(w->b, "%.0f", v);
    else qkb_buf_printf(w->b, "%.6g", v);
}

void qkw_int(qkw *w, long long v) {
    pre_value(w);
    qkb_buf_printf(w->b, "%lld", v);
}

void qkw_bool(qkw *w, int v) {
    pre_value(w);
    qkb_buf_puts(w->b, v ? "true" : "false");
}

void qkw_null(qkw *w) {
    pre_value(w);
    qkb_buf_puts(w->b, "null");
}

void qkw_kstr(qkw *w, const char *k, const char *s) { qkw_key(w, k), qkw_str(w, s); }
void qkw_knum(qkw *w, const char *k, double v) { qkw_key(w, k), qkw_num(w, v); }
void qkw_kint(qkw *w, const char *k, long long v) { qkw_key(w, k), qkw_int(w, v); }
void qkw_kbool(qkw *w, const char *k, int v) { qkw_key(w, k), qkw_bool(w, v); }

/* ---- reader ---- */

typedef struct parser {
    const char *s, *start;
    char *err;
    size_t errlen;
    int failed;
} parser;

static void fail(parser *p, const char *what) {
    if (!p->failed) snprintf(p->err, p->errlen, "%s at byte %zu", what, (size_t)(p->s - p->start));
    p->failed = 1;
}

static void ws(parser *p) {
    while (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r') p->s++;
}

static qkj *node(parser *p, qkj_type t) {
    qkj *v = calloc(1, sizeof *v);
    if (!v) fail(p, "out of memory");
    else v->type = t;
    return v;
}

static void put_utf8(qkb_buf *b, unsigned c) {
    char u[4];
    if (c < 0x80) u[0] = (char)c, qkb_buf_putn(b, u, 1);
    else if (c < 0x800) u[0] = (char)(0xc0 | c >> 6), u[1] = (char)(0x80 | (c & 63)), qkb_buf_putn(b, u, 2);
    else u[0] = (char)(0xe0 | c >> 12), u[1] = (char)(0x80 | ((c >> 6) & 63)), u[2] = (char)(0x80 | (c & 63)), qkb_buf_putn(b, u, 3);
}

static char *parse_string(parser *p) {
    if (*p->s != '"') {
        fail(p, "expected a string");
        return NULL;
    }
    p->s++;
    qkb_buf b = {0};
    qkb_buf_putn(&b, "", 0);
    while (*p->s && *p->s != '"') {
        if (*p->s == '\\') {
            p->s++;
            char c = *p->s++;
            switch (c) {
            case 'n': qkb_buf_putn(&b, "\n", 1); break;
            case 't': qkb_buf_putn(&b, "\t", 1); break;
            case 'r': qkb_buf_putn(&b, "\r", 1); break;
            case 'b': qkb_buf_putn(&b, "\b", 1); break;
            case 'f': qkb_buf_putn(&b, "\f", 1); break;
            case 'u': {
                unsigned v = 0;
                for (int i = 0; i < 4; i++) {
                    char h = *p->s++;
                    v = v * 16 + (unsigned)(h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : 0);
                }
                put_utf8(&b, v);
                break;
            }
            case 0: fail(p, "unterminated string"); qkb_buf_free(&b); return NULL;
            default: qkb_buf_putn(&b, &c, 1);
            }
        } else {
            qkb_buf_putn(&b, p->s, 1);
            p->s++;
        }
    }
    if (*p->s != '"') {
        fail(p, "unterminated string");
        qkb_buf_free(&b);
        return NULL;
    }
    p->s++;
    if (b.oom) fail(p, "out of memory");
    return b.p;
}

static int push(parser *p, qkj *v, qkj *item, char *key) {
    qkj **items = realloc(v->items, (v->n + 1) * sizeof *items);
    if (!items) return fail(p, "out of memory"), 0;
    v->items = items;
    if (v->type == QKJ_OBJ) {
        char **keys = realloc(v->keys, (v->n + 1) * sizeof *keys);
        if (!keys) return fail(p, "out of memory"), 0;
        v->keys = keys;
        v->keys[v->n] = key;
    }
    v->items[v->n++] = item;
    return 1;
}

static qkj *parse_value(parser *p, int depth) {
    ws(p);
    if (depth > 64) return fail(p, "nesting too deep"), NULL;
    char c = *p->s;
    qkj *v = NULL;
    if (c == '{' || c == '[') {
        v = node(p, c == '{' ? QKJ_OBJ : QKJ_ARR);
        if (!v) return NULL;
        char close = c == '{' ? '}' : ']';
        p->s++;
        ws(p);
        if (*p->s == close) {
            p->s++;
            return v;
        }
        for (;;) {
            char *key = NULL;
            if (v->type == QKJ_OBJ) {
                ws(p);
                key = parse_string(p);
                if (!key) break;
                ws(p);
                if (*p->s != ':') {
                    free(key);
                    fail(p, "expected ':'");
                    break;
                }
                p->s++;
            }
            qkj *item = parse_value(p, depth + 1);
            if (!item || !push(p, v, item, key)) {
                free(key);
                qkj_free(item);
                break;
            }
            ws(p);
            if (*p->s == ',') {
                p->s++;
                continue;
            }
            if (*p->s == close) {
                p->s++;
                return v;
            }
            fail(p, "expected ',' or a closing bracket");
            break;
        }
        qkj_free(v);
        return NULL;
    }
    if (c == '"') {
        char *s = parse_string(p);
        if (!s) return NULL;
        v = node(p, QKJ_STR);
        if (!v) return free(s), NULL;
        v->str = s;
        return v;
    }
    if (!strncmp(p->s, "true", 4) || !strncmp(p->s, "false", 5)) {
        v = node(p, QKJ_BOOL);
        if (v) v->num = c == 't';
        p->s += c == 't' ? 4 : 5;
        return v;
    }
    if (!strncmp(p->s, "null", 4)) {
        p->s += 4;
        return node(p, QKJ_NULL);
    }
    if (!strncmp(p->s, "NaN", 3) || !strncmp(p->s, "-nan", 4) || !strncmp(p->s, "nan", 3)) {
        p->s += *p->s == '-' ? 4 : 3;
        v = node(p, QKJ_NUM);
        if (v) v->num = NAN;
        return v;
    }
    char *end;
    double d = strtod(p->s, &end);
    if (end == p->s) return fail(p, "unexpected character"), NULL;
    p->s = end;
    v = node(p, QKJ_NUM);
    if (v) v->num = d;
    return v;
}

qkj *qkj_parse(const char *text, char *err, size_t errlen) {
    parser p = {text, text, err, errlen, 0};
    qkj *v = parse_value(&p, 0);
    if (v) {
        ws(&p);
        if (*p.s) {
            fail(&p, "trailing characters");
            qkj_free(v);
            v = NULL;
        }
    }
    return v;
}

qkj *qkj_parse_file(const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open %s", path);
        return NULL;
    }
    qkb_buf b = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) qkb_buf_putn(&b, chunk, n);
    fclose(f);
    if (b.oom || !b.p) {
        snprintf(err, errlen, "%s: %s", path, b.oom ? "out of memory" : "empty file");
        qkb_buf_free(&b);
        return NULL;
    }
    char e[200];
    qkj *v = qkj_parse(b.p, e, sizeof e);
    if (!v) snprintf(err, errlen, "%s: invalid JSON: %s", path, e);
    qkb_buf_free(&b);
    return v;
}

void qkj_free(qkj *v) {
    if (!v) return;
    for (size_t i = 0; i < v->n; i++) {
        qkj_free(v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    free(v);
}

const qkj *qkj_get(const qkj *v, const char *key) {
    if (!v || v->type != QKJ_OBJ) return NULL;
    for (size_t i = 0; i < v->n; i++)
        if (!strcmp(v->keys[i], key)) return v->items[i];
    return NULL;
}

double qkj_num(const qkj *v, double dflt) { return v && (v->type == QKJ_NUM || v->type == QKJ_BOOL) ? v->num : dflt; }

const char *qkj_str(const qkj *v, const char *dflt) { return v && v->type == QKJ_STR ? v->str : dflt; }
