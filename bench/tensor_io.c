/* .safetensors and .npy readers (tensor_io.h). Every number taken from a file
 * is checked before use; sizes are computed with overflow checks; the file
 * image is only read inside [0, len). */
#include "tensor_io.h"

#include "qk/fp16.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(char *err, size_t errlen, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static int fail(char *err, size_t errlen, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static uint64_t le64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* a·b and a+b with overflow detection (returns 1 on overflow). */
static int mul_ovf(uint64_t a, uint64_t b, uint64_t *r) {
    if (a && b > UINT64_MAX / a) return 1;
    *r = a * b;
    return 0;
}

/* Names are shown quoted and cut at 60 bytes; control bytes become '?'. */
static const char *shown(const char *name, char *buf) {
    size_t i = 0;
    for (; name[i] && i < 60; i++) buf[i] = (unsigned char)name[i] < 0x20 ? '?' : name[i];
    if (name[i]) memcpy(buf + i, "...", 4);
    else buf[i] = 0;
    return buf;
}

/* ---- dtypes ---- */

enum { DT_F32 = 1, DT_F16, DT_BF16, DT_F64, DT_OTHER };

typedef struct st_dtype {
    const char *name;
    int size, dt;
} st_dtype;

/* Every dtype of the safetensors format; only F32, F16, BF16 are read. */
static const st_dtype st_dtypes[] = {
    {"F32", 4, DT_F32},   {"F16", 2, DT_F16},     {"BF16", 2, DT_BF16},   {"F64", 8, DT_OTHER},
    {"BOOL", 1, DT_OTHER}, {"U8", 1, DT_OTHER},   {"I8", 1, DT_OTHER},    {"F8_E5M2", 1, DT_OTHER},
    {"F8_E4M3", 1, DT_OTHER}, {"I16", 2, DT_OTHER}, {"U16", 2, DT_OTHER}, {"I32", 4, DT_OTHER},
    {"U32", 4, DT_OTHER}, {"I64", 8, DT_OTHER},   {"U64", 8, DT_OTHER},
};

/* ---- a small JSON reader over [p, end) ---- */

typedef struct jcur {
    const uint8_t *p, *end, *start;
    char *err;
    size_t errlen;
} jcur;

static void jws(jcur *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

static int jexpect(jcur *c, char ch, const char *where) {
    jws(c);
    if (c->p >= c->end) return fail(c->err, c->errlen, "safetensors header ends early: expected '%c' %s", ch, where);
    if (*c->p != (uint8_t)ch)
        return fail(c->err, c->errlen, "safetensors header is not valid JSON: expected '%c' %s, found '%c' at header byte %ld", ch,
                    where, *c->p >= 0x20 && *c->p < 0x7f ? *c->p : '?', (long)(c->p - c->start));
    c->p++;
    return 0;
}

static int hexval(uint8_t h) {
    if (h >= '0' && h <= '9') return h - '0';
    if (h >= 'a' && h <= 'f') return h - 'a' + 10;
    if (h >= 'A' && h <= 'F') return h - 'A' + 10;
    return -1;
}

static int read_hex4(jcur *c, unsigned *v) {
    if (c->end - c->p < 4) return fail(c->err, c->errlen, "safetensors header ends inside a \\u escape");
    unsigned r = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(c->p[i]);
        if (h < 0) return fail(c->err, c->errlen, "safetensors header has a bad \\u escape");
        r = r << 4 | (unsigned)h;
    }
    c->p += 4;
    *v = r;
    return 0;
}

static int jdecode(jcur *c, char *buf, size_t *np);

/* A JSON string, decoded to UTF-8 into a malloc'd NUL-terminated buffer
 * (out may be NULL to skip). A \u0000 is refused (names are C strings). */
static int jstring(jcur *c, char **out) {
    jws(c);
    if (c->p >= c->end || *c->p != '"') return fail(c->err, c->errlen, "safetensors header is not valid JSON: expected a string");
    c->p++;
    const uint8_t *s = c->p;
    size_t cap = 1; /* decoded size <= raw size */
    while (s < c->end && *s != '"') {
        if (*s != '\\') s++;
        else if (c->end - s >= 2) s += 2;
        else s = c->end; /* a backslash as the header's last byte */
    }
    if (s >= c->end) return fail(c->err, c->errlen, "safetensors header ends inside a string");
    cap += (size_t)(s - c->p);
    char *buf = out ? malloc(cap) : NULL;
    if (out && !buf) return fail(c->err, c->errlen, "out of memory reading the safetensors header");
    size_t n = 0;
    /* Decode [p, s) only: escapes cannot reach past the closing quote. */
    const uint8_t *hdr_end = c->end;
    c->end = s;
    int rc = jdecode(c, buf, &n);
    c->end = hdr_end;
    if (rc) {
        free(buf);
        return -1;
    }
    c->p = s + 1;
    if (buf) {
        buf[n] = 0;
        *out = buf;
    }
    return 0;
}

/* The body of a string, [c->p, c->end), into buf (room for the raw size). */
static int jdecode(jcur *c, char *buf, size_t *np) {
    size_t n = 0;
    while (c->p < c->end) {
        uint8_t ch = *c->p++;
        unsigned cp;
        if (ch < 0x20) return fail(c->err, c->errlen, "safetensors header is not valid JSON: a raw control byte inside a string");
        if (ch != '\\') {
            if (buf) buf[n++] = (char)ch;
            continue;
        }
        if (c->p >= c->end) return fail(c->err, c->errlen, "safetensors header ends inside a string escape");
        ch = *c->p++;
        switch (ch) {
        case '"': case '\\': case '/': cp = ch; break;
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'n': cp = '\n'; break;
        case 'r': cp = '\r'; break;
        case 't': cp = '\t'; break;
        case 'u':
            if (read_hex4(c, &cp)) return -1;
            if (cp >= 0xd800 && cp < 0xdc00) { /* a surrogate pair */
                unsigned lo;
                if (c->end - c->p < 6 || c->p[0] != '\\' || c->p[1] != 'u')
                    return fail(c->err, c->errlen, "safetensors header has an unpaired surrogate in a string");
                c->p += 2;
                if (read_hex4(c, &lo) || lo < 0xdc00 || lo >= 0xe000)
                    return fail(c->err, c->errlen, "safetensors header has an unpaired surrogate in a string");
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            } else if (cp >= 0xdc00 && cp < 0xe000) {
                return fail(c->err, c->errlen, "safetensors header has an unpaired surrogate in a string");
            }
            if (cp == 0) return fail(c->err, c->errlen, "safetensors header has a NUL character (\\u0000) in a string");
            break;
        default: return fail(c->err, c->errlen, "safetensors header has a bad escape '\\%c'", ch >= 0x20 && ch < 0x7f ? ch : '?');
        }
        if (!buf) continue;
        /* An escape takes at least as many raw bytes as its UTF-8 encoding. */
        if (cp < 0x80) buf[n++] = (char)cp;
        else if (cp < 0x800) buf[n++] = (char)(0xc0 | cp >> 6), buf[n++] = (char)(0x80 | (cp & 63));
        else if (cp < 0x10000)
            buf[n++] = (char)(0xe0 | cp >> 12), buf[n++] = (char)(0x80 | (cp >> 6 & 63)), buf[n++] = (char)(0x80 | (cp & 63));
        else
            buf[n++] = (char)(0xf0 | cp >> 18), buf[n++] = (char)(0x80 | (cp >> 12 & 63)), buf[n++] = (char)(0x80 | (cp >> 6 & 63)),
            buf[n++] = (char)(0x80 | (cp & 63));
    }
    *np = n;
    return 0;
}

/* A non-negative integer. */
static int juint(jcur *c, uint64_t *v, const char *what, const char *name) {
    char nb[64];
    jws(c);
    if (c->p < c->end && *c->p == '-')
        return fail(c->err, c->errlen, "tensor '%s': %s holds a negative number", shown(name, nb), what);
    if (c->p >= c->end || *c->p < '0' || *c->p > '9')
        return fail(c->err, c->errlen, "tensor '%s': %s must hold non-negative integers", shown(name, nb), what);
    uint64_t r = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        unsigned d = *c->p++ - '0';
        if (r > (UINT64_MAX - d) / 10) return fail(c->err, c->errlen, "tensor '%s': a number in %s overflows 64 bits", shown(name, nb), what);
        r = r * 10 + d;
    }
    if (c->p < c->end && (*c->p == '.' || *c->p == 'e' || *c->p == 'E'))
        return fail(c->err, c->errlen, "tensor '%s': %s must hold integers, not fractions", shown(name, nb), what);
    *v = r;
    return 0;
}

enum { JSON_MAX_DEPTH = 64 };

/* Skip any JSON value (metadata, unknown keys). */
static int jskip(jcur *c, int depth) {
    if (depth > JSON_MAX_DEPTH) return fail(c->err, c->errlen, "safetensors header nests deeper than %d levels", JSON_MAX_DEPTH);
    jws(c);
    if (c->p >= c->end) return fail(c->err, c->errlen, "safetensors header ends early: expected a value");
    uint8_t ch = *c->p;
    if (ch == '"') return jstring(c, NULL);
    if (ch == '{' || ch == '[') {
        uint8_t close = ch == '{' ? '}' : ']';
        c->p++;
        jws(c);
        if (c->p < c->end && *c->p == close) {
            c->p++;
            return 0;
        }
        for (;;) {
            if (ch == '{') {
                if (jstring(c, NULL) || jexpect(c, ':', "after a key")) return -1;
            }
            if (jskip(c, depth + 1)) return -1;
            jws(c);
            if (c->p >= c->end) return fail(c->err, c->errlen, "safetensors header ends inside an %s", ch == '{' ? "object" : "array");
            if (*c->p == ',') {
                c->p++;
                continue;
            }
            if (*c->p == close) {
                c->p++;
                return 0;
            }
            return fail(c->err, c->errlen, "safetensors header is not valid JSON: expected ',' or '%c'", close);
        }
    }
    static const char *const lits[] = {"true", "false", "null"};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(lits[i]);
        if ((size_t)(c->end - c->p) >= n && !memcmp(c->p, lits[i], n)) {
            c->p += n;
            return 0;
        }
    }
    if (ch == '-' || (ch >= '0' && ch <= '9')) {
        c->p++;
        while (c->p < c->end && ((*c->p >= '0' && *c->p <= '9') || *c->p == '.' || *c->p == 'e' || *c->p == 'E' || *c->p == '+' || *c->p == '-'))
            c->p++;
        return 0;
    }
    return fail(c->err, c->errlen, "safetensors header is not valid JSON: unexpected byte 0x%02x", ch);
}

/* A list of non-negative integers: [a, b, ...] with at most max entries. */
static int jarray_u64(jcur *c, uint64_t *v, int max, int *count, const char *what, const char *name) {
    char nb[64];
    if (jexpect(c, '[', what)) return -1;
    int n = 0;
    jws(c);
    if (c->p < c->end && *c->p == ']') {
        c->p++;
        *count = 0;
        return 0;
    }
    for (;;) {
        if (n == max) return fail(c->err, c->errlen, "tensor '%s': %s has more than %d entries", shown(name, nb), what, max);
        if (juint(c, &v[n++], what, name)) return -1;
        jws(c);
        if (c->p >= c->end) return fail(c->err, c->errlen, "safetensors header ends inside %s", what);
        if (*c->p == ',') {
            c->p++;
            continue;
        }
        if (*c->p == ']') {
            c->p++;
            break;
        }
        return fail(c->err, c->errlen, "tensor '%s': %s is not a list of integers", shown(name, nb), what);
    }
    *count = n;
    return 0;
}

static void free_index(qk_tfile *f) {
    for (size_t i = 0; i < f->count; i++) free(f->t[i].name);
    free(f->t);
    f->t = NULL;
    f->count = 0;
}

static int cmp_name(const void *a, const void *b) {
    return strcmp((*(const qk_tinfo *const *)a)->name, (*(const qk_tinfo *const *)b)->name);
}
static int cmp_begin(const void *a, const void *b) {
    const qk_tinfo *x = *(const qk_tinfo *const *)a, *y = *(const qk_tinfo *const *)b;
    return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : (x->end > y->end) - (x->end < y->end);
}

/* One tensor entry {"dtype": ..., "shape": [...], "data_offsets": [b, e]}. */
static int parse_entry(jcur *c, qk_tinfo *t, uint64_t dlen) {
    char nb[64];
    int have_dtype = 0, have_shape = 0, have_off = 0;
    uint64_t off[2];
    if (jexpect(c, '{', "to open a tensor entry")) return -1;
    jws(c);
    if (c->p < c->end && *c->p == '}') c->p++;
    else
        for (;;) {
            char *key = NULL;
            if (jstring(c, &key)) return -1;
            if (jexpect(c, ':', "after a key")) {
                free(key);
                return -1;
            }
            int rc = 0;
            if (!strcmp(key, "dtype")) {
                char *dt = NULL;
                rc = jstring(c, &dt);
                if (!rc) {
                    have_dtype = 1;
                    size_t k = 0, nd = sizeof st_dtypes / sizeof st_dtypes[0];
                    while (k < nd && strcmp(dt, st_dtypes[k].name)) k++;
                    if (k == nd) {
                        char db[64];
                        rc = fail(c->err, c->errlen, "tensor '%s' has unknown dtype '%s'", shown(t->name, nb), shown(dt, db));
                    } else {
                        snprintf(t->dtype, sizeof t->dtype, "%s", st_dtypes[k].name);
                        t->elsize = st_dtypes[k].size;
                        t->dt = st_dtypes[k].dt;
                        t->readable = t->dt != DT_OTHER;
                    }
                    free(dt);
                }
            } else if (!strcmp(key, "shape")) {
                rc = jarray_u64(c, t->shape, QK_TENSOR_MAXDIM, &t->ndim, "shape", t->name);
                have_shape = !rc;
            } else if (!strcmp(key, "data_offsets")) {
                int n = 0;
                rc = jarray_u64(c, off, 2, &n, "data_offsets", t->name);
                if (!rc && n != 2) rc = fail(c->err, c->errlen, "tensor '%s': data_offsets must hold two numbers, not %d", shown(t->name, nb), n);
                have_off = !rc;
            } else {
                rc = jskip(c, 2);
            }
            free(key);
            if (rc) return -1;
            jws(c);
            if (c->p >= c->end) return fail(c->err, c->errlen, "safetensors header ends inside tensor '%s'", shown(t->name, nb));
            if (*c->p == ',') {
                c->p++;
                continue;
            }
            if (*c->p == '}') {
                c->p++;
                break;
            }
            return fail(c->err, c->errlen, "safetensors header is not valid JSON: expected ',' or '}' in tensor '%s'", shown(t->name, nb));
        }
    if (!have_dtype) return fail(c->err, c->errlen, "tensor '%s' has no dtype", shown(t->name, nb));
    if (!have_shape) return fail(c->err, c->errlen, "tensor '%s' has no shape", shown(t->name, nb));
    if (!have_off) return fail(c->err, c->errlen, "tensor '%s' has no data_offsets", shown(t->name, nb));
    uint64_t count = 1, bytes;
    for (int i = 0; i < t->ndim; i++)
        if (mul_ovf(count, t->shape[i], &count))
            return fail(c->err, c->errlen, "tensor '%s': its shape's element count overflows 64 bits", shown(t->name, nb));
    if (mul_ovf(count, (uint64_t)t->elsize, &bytes))
        return fail(c->err, c->errlen, "tensor '%s': its size in bytes overflows 64 bits", shown(t->name, nb));
    if (off[0] > off[1])
        return fail(c->err, c->errlen, "tensor '%s': data_offsets [%llu, %llu] run backwards", shown(t->name, nb),
                    (unsigned long long)off[0], (unsigned long long)off[1]);
    if (off[1] > dlen)
        return fail(c->err, c->errlen,
                    "tensor '%s' ends at byte %llu of the data section, which holds only %llu bytes: the file is truncated or "
                    "its header lies",
                    shown(t->name, nb), (unsigned long long)off[1], (unsigned long long)dlen);
    if (off[1] - off[0] != bytes) {
        char sb[160];
        qk_tinfo_shape_str(t, sb, sizeof sb);
        return fail(c->err, c->errlen, "tensor '%s': data_offsets span %llu bytes, but shape %s of %s needs %llu", shown(t->name, nb),
                    (unsigned long long)(off[1] - off[0]), sb, t->dtype, (unsigned long long)bytes);
    }
    t->begin = off[0];
    t->end = off[1];
    return 0;
}

static int parse_safetensors(const uint8_t *buf, size_t len, qk_tfile *f, char *err, size_t errlen) {
    if (len < 8) return fail(err, errlen, "file is %zu bytes: too short for a safetensors file (it starts with an 8-byte header length)", len);
    uint64_t hl = le64(buf);
    if (hl > QK_SAFETENSORS_MAX_HEADER)
        return fail(err, errlen,
                    "safetensors header length %llu exceeds the format's limit of %llu bytes: not a safetensors file, or a "
                    "corrupted one",
                    (unsigned long long)hl, (unsigned long long)QK_SAFETENSORS_MAX_HEADER);
    if (hl > len - 8)
        return fail(err, errlen, "safetensors header length %llu runs past the end of the file (%zu bytes): the file is truncated or not a safetensors file",
                    (unsigned long long)hl, len);
    if (hl < 2) return fail(err, errlen, "safetensors header is %llu bytes: too short for a JSON object", (unsigned long long)hl);
    uint64_t base = 8 + hl, dlen = len - base;
    jcur c = {buf + 8, buf + base, buf + 8, err, errlen};
    size_t cap = 0;
    int rc = -1;
    if (jexpect(&c, '{', "at the start of the header")) goto out;
    jws(&c);
    if (c.p < c.end && *c.p == '}') c.p++;
    else
        for (;;) {
            char *name = NULL;
            if (jstring(&c, &name)) goto out;
            if (jexpect(&c, ':', "after a tensor name")) {
                free(name);
                goto out;
            }
            if (!strcmp(name, "__metadata__")) {
                free(name);
                jws(&c);
                if (c.p >= c.end || *c.p != '{') {
                    fail(err, errlen, "safetensors __metadata__ must be an object");
                    goto out;
                }
                if (jskip(&c, 1)) goto out;
            } else {
                if (f->count == cap) {
                    size_t nc = cap ? 2 * cap : 16;
                    qk_tinfo *nt = realloc(f->t, nc * sizeof *nt);
                    if (!nt) {
                        free(name);
                        fail(err, errlen, "out of memory reading the safetensors header");
                        goto out;
                    }
                    f->t = nt;
                    cap = nc;
                }
                qk_tinfo *t = &f->t[f->count++];
                memset(t, 0, sizeof *t);
                t->name = name;
                if (parse_entry(&c, t, dlen)) goto out;
                t->begin += base;
                t->end += base;
            }
            jws(&c);
            if (c.p >= c.end) {
                fail(err, errlen, "safetensors header ends before its closing '}'");
                goto out;
            }
            if (*c.p == ',') {
                c.p++;
                continue;
            }
            if (*c.p == '}') {
                c.p++;
                break;
            }
            fail(err, errlen, "safetensors header is not valid JSON: expected ',' or '}' between tensors");
            goto out;
        }
    jws(&c);
    if (c.p != c.end) {
        fail(err, errlen, "safetensors header has %ld unexpected bytes after its JSON object", (long)(c.end - c.p));
        goto out;
    }
    if (f->count) {
        qk_tinfo **order = malloc(f->count * sizeof *order);
        if (!order) {
            fail(err, errlen, "out of memory checking the safetensors index");
            goto out;
        }
        for (size_t i = 0; i < f->count; i++) order[i] = &f->t[i];
        qsort(order, f->count, sizeof *order, cmp_name);
        for (size_t i = 1; i < f->count; i++)
            if (!strcmp(order[i - 1]->name, order[i]->name)) {
                char nb[64];
                fail(err, errlen, "tensor name '%s' appears twice in the safetensors header", shown(order[i]->name, nb));
                free(order);
                goto out;
            }
        qsort(order, f->count, sizeof *order, cmp_begin);
        const qk_tinfo *prev = NULL;
        for (size_t i = 0; i < f->count; i++) {
            const qk_tinfo *t = order[i];
            if (t->begin == t->end) continue; /* empty tensors take no bytes */
            if (prev && t->begin < prev->end) {
                char na[64], nb[64];
                fail(err, errlen, "tensors '%s' (data bytes %llu..%llu) and '%s' (bytes %llu..%llu) overlap: the header lies",
                     shown(prev->name, na), (unsigned long long)(prev->begin - base), (unsigned long long)(prev->end - base),
                     shown(t->name, nb), (unsigned long long)(t->begin - base), (unsigned long long)(t->end - base));
                free(order);
                goto out;
            }
            prev = t;
        }
        free(order);
    }
    rc = 0;
out:
    if (rc) free_index(f);
    return rc;
}

/* ---- .npy ---- */

typedef struct pcur {
    const uint8_t *p, *end;
} pcur;

static void pws(pcur *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

static int pstr(pcur *c, char *out, size_t cap) {
    pws(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return -1;
    uint8_t q = *c->p++;
    size_t n = 0;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\' || *c->p < 0x20) return -1;
        if (n + 1 < cap) out[n++] = (char)*c->p;
        c->p++;
    }
    if (c->p >= c->end) return -1;
    c->p++;
    out[n] = 0;
    return 0;
}

static int plit(pcur *c, const char *lit) {
    pws(c);
    size_t n = strlen(lit);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, lit, n)) return -1;
    c->p += n;
    return 0;
}

static int parse_npy(const uint8_t *buf, size_t len, qk_tfile *f, char *err, size_t errlen) {
    static const uint8_t magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
    if (len < 10) return fail(err, errlen, "file is %zu bytes: too short for a .npy header", len);
    if (memcmp(buf, magic, 6)) return fail(err, errlen, "not a .npy file: the \\x93NUMPY magic is missing");
    unsigned major = buf[6], minor = buf[7];
    uint64_t hl, start;
    if (major == 1) {
        hl = (uint64_t)buf[8] | (uint64_t)buf[9] << 8;
        start = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12) return fail(err, errlen, "file is %zu bytes: too short for a version %u .npy header", len, major);
        hl = (uint64_t)buf[8] | (uint64_t)buf[9] << 8 | (uint64_t)buf[10] << 16 | (uint64_t)buf[11] << 24;
        start = 12;
    } else {
        return fail(err, errlen, "unsupported .npy format version %u.%u (1.0, 2.0 and 3.0 are read)", major, minor);
    }
    if (hl > len - start)
        return fail(err, errlen, ".npy header length %llu runs past the end of the file (%zu bytes): the file is truncated", (unsigned long long)hl, len);
    pcur c = {buf + start, buf + start + hl};
    qk_tinfo t;
    memset(&t, 0, sizeof t);
    int have_descr = 0, have_order = 0, have_shape = 0;
    char key[32], descr[32];
    if (plit(&c, "{")) return fail(err, errlen, ".npy header is not a Python dict literal");
    for (;;) {
        pws(&c);
        if (c.p < c.end && *c.p == '}') {
            c.p++;
            break;
        }
        if (pstr(&c, key, sizeof key) || plit(&c, ":")) return fail(err, errlen, ".npy header is not a Python dict literal");
        if (!strcmp(key, "descr")) {
            pws(&c);
            if (c.p < c.end && *c.p == '[') return fail(err, errlen, ".npy file holds a structured dtype; only plain float arrays are read");
            if (pstr(&c, descr, sizeof descr)) return fail(err, errlen, ".npy header: 'descr' is not a string");
            have_descr = 1;
        } else if (!strcmp(key, "fortran_order")) {
            if (!plit(&c, "True")) t.fortran = 1;
            else if (!plit(&c, "False")) t.fortran = 0;
            else return fail(err, errlen, ".npy header: 'fortran_order' is not True or False");
            have_order = 1;
        } else if (!strcmp(key, "shape")) {
            if (plit(&c, "(")) return fail(err, errlen, ".npy header: 'shape' is not a tuple");
            for (;;) {
                pws(&c);
                if (c.p < c.end && *c.p == ')') {
                    c.p++;
                    break;
                }
                if (c.p >= c.end || *c.p < '0' || *c.p > '9') return fail(err, errlen, ".npy header: 'shape' must hold non-negative integers");
                if (t.ndim == QK_TENSOR_MAXDIM) return fail(err, errlen, ".npy array has more than %d dimensions", QK_TENSOR_MAXDIM);
                uint64_t v = 0;
                while (c.p < c.end && *c.p >= '0' && *c.p <= '9') {
                    unsigned d = *c.p++ - '0';
                    if (v > (UINT64_MAX - d) / 10) return fail(err, errlen, ".npy header: a dimension overflows 64 bits");
                    v = v * 10 + d;
                }
                if (c.p < c.end && *c.p == 'L') c.p++;
                t.shape[t.ndim++] = v;
                pws(&c);
                if (c.p < c.end && *c.p == ',') c.p++;
                else if (c.p < c.end && *c.p == ')') {
                    c.p++;
                    break;
                } else return fail(err, errlen, ".npy header: 'shape' is not a tuple of integers");
            }
            have_shape = 1;
        } else {
            return fail(err, errlen, ".npy header has an unknown key '%s'", key);
        }
        pws(&c);
        if (c.p < c.end && *c.p == ',') c.p++;
        else if (c.p < c.end && *c.p == '}') {
            c.p++;
            break;
        } else return fail(err, errlen, ".npy header is not a Python dict literal");
    }
    if (!have_descr || !have_order || !have_shape)
        return fail(err, errlen, ".npy header lacks '%s'", !have_descr ? "descr" : !have_order ? "fortran_order" : "shape");
    char order = descr[0];
    if (strlen(descr) == 3 && (order == '<' || order == '>' || order == '|' || order == '=') && descr[1] == 'f' &&
        (descr[2] == '2' || descr[2] == '4' || descr[2] == '8')) {
        t.elsize = descr[2] - '0';
        t.dt = t.elsize == 2 ? DT_F16 : t.elsize == 4 ? DT_F32 : DT_F64;
        t.readable = 1;
        t.fortran |= order == '>' ? 2 : 0; /* bit 1: big endian */
    } else {
        char db[64];
        return fail(err, errlen, ".npy dtype '%s' is not supported (float16, float32 and float64 are read)", shown(descr, db));
    }
    if ((t.fortran & 1) && t.ndim > 2) return fail(err, errlen, "Fortran-order .npy arrays of more than 2 dimensions are not supported");
    snprintf(t.dtype, sizeof t.dtype, "%.15s", descr); /* 3 characters here */
    uint64_t count = 1, bytes;
    for (int i = 0; i < t.ndim; i++)
        if (mul_ovf(count, t.shape[i], &count)) return fail(err, errlen, ".npy shape's element count overflows 64 bits");
    if (mul_ovf(count, (uint64_t)t.elsize, &bytes)) return fail(err, errlen, ".npy array's size in bytes overflows 64 bits");
    uint64_t data = start + hl;
    if (bytes > len - data) {
        char sb[160];
        qk_tinfo_shape_str(&t, sb, sizeof sb);
        return fail(err, errlen, ".npy shape %s of %s needs %llu data bytes, but the file holds %llu after its header: the file is truncated",
                    sb, descr, (unsigned long long)bytes, (unsigned long long)(len - data));
    }
    t.begin = data;
    t.end = data + bytes;
    t.name = calloc(1, 1);
    f->t = malloc(sizeof *f->t);
    if (!t.name || !f->t) {
        free(t.name);
        free(f->t);
        f->t = NULL;
        return fail(err, errlen, "out of memory");
    }
    f->t[0] = t;
    f->count = 1;
    return 0;
}

int qk_tfile_parse(const uint8_t *buf, size_t len, qk_tfile_kind kind, qk_tfile *f, char *err, size_t errlen) {
    memset(f, 0, sizeof *f);
    if (!buf && len) return fail(err, errlen, "no data");
    if (kind == QK_TFILE_DETECT) kind = len >= 6 && !memcmp(buf, "\x93NUMPY", 6) ? QK_TFILE_NPY : QK_TFILE_SAFETENSORS;
    f->buf = buf;
    f->len = len;
    f->kind = kind;
    int rc = kind == QK_TFILE_NPY ? parse_npy(buf, len, f, err, errlen) : parse_safetensors(buf, len, f, err, errlen);
    if (rc) memset(f, 0, sizeof *f);
    return rc;
}

int qk_tfile_open(const char *path, qk_tfile *f, char *err, size_t errlen) {
    memset(f, 0, sizeof *f);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return fail(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        return fail(err, errlen, "%s: not a regular file", path);
    }
    if (st.st_size == 0) {
        close(fd);
        return fail(err, errlen, "%s: the file is empty", path);
    }
    size_t len = (size_t)st.st_size;
    void *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return fail(err, errlen, "%s: cannot map: %s", path, strerror(errno));
    size_t n = strlen(path);
    qk_tfile_kind kind = QK_TFILE_DETECT;
    if (n >= 4 && !strcmp(path + n - 4, ".npy")) kind = QK_TFILE_NPY;
    if (len >= 6 && !memcmp(m, "\x93NUMPY", 6)) kind = QK_TFILE_NPY;
    char msg[512];
    if (qk_tfile_parse(m, len, kind, f, msg, sizeof msg)) {
        munmap(m, len);
        return fail(err, errlen, "%s: %s", path, msg);
    }
    f->map_ = m;
    f->maplen_ = len;
    return 0;
}

void qk_tfile_close(qk_tfile *f) {
    free_index(f);
    if (f->map_) munmap(f->map_, f->maplen_);
    memset(f, 0, sizeof *f);
}

long qk_tfile_find(const qk_tfile *f, const char *name) {
    for (size_t i = 0; i < f->count; i++)
        if (!strcmp(f->t[i].name, name)) return (long)i;
    return -1;
}

void qk_tinfo_shape_str(const qk_tinfo *t, char *buf, size_t len) {
    size_t n = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < t->ndim && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%llu", i ? ", " : "", (unsigned long long)t->shape[i]);
    if (n < len) snprintf(buf + n, len - n, "]");
}

static float load_elem(const uint8_t *p, int dt, int big) {
    uint8_t b[8];
    int n = dt == DT_F64 ? 8 : dt == DT_F32 ? 4 : 2;
    for (int i = 0; i < n; i++) b[i] = big ? p[n - 1 - i] : p[i];
    switch (dt) {
    case DT_F32: {
        uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
        float v;
        memcpy(&v, &u, 4);
        return v;
    }
    case DT_F64: {
        uint64_t u = le64(b);
        double v;
        memcpy(&v, &u, 8);
        return (float)v;
    }
    case DT_BF16: {
        uint32_t u = ((uint32_t)b[0] | (uint32_t)b[1] << 8) << 16;
        float v;
        memcpy(&v, &u, 4);
        return v;
    }
    default: return qk_h2f((uint16_t)(b[0] | b[1] << 8));
    }
}

int qk_tfile_read(const qk_tfile *f, size_t i, float **data, size_t *rows, size_t *cols, char *err, size_t errlen) {
    char nb[64];
    *data = NULL;
    if (i >= f->count) return fail(err, errlen, "no tensor number %zu", i);
    const qk_tinfo *t = &f->t[i];
    if (!t->readable)
        return fail(err, errlen, "tensor '%s' has dtype %s; qkbench reads F32, F16 and BF16", shown(t->name, nb), t->dtype);
    uint64_t c = t->ndim ? t->shape[t->ndim - 1] : 1, r = 1;
    for (int d = 0; d + 1 < t->ndim; d++) r *= t->shape[d]; /* cannot overflow: checked at parse time */
    uint64_t count = r * c;
    if (count == 0) return fail(err, errlen, "tensor '%s' has no elements", shown(t->name, nb));
    if (count != (t->end - t->begin) / (uint64_t)t->elsize || t->end > f->len)
        return fail(err, errlen, "tensor '%s': internal size mismatch", shown(t->name, nb));
    if (count > SIZE_MAX / sizeof(float)) return fail(err, errlen, "tensor '%s' is too large for this machine", shown(t->name, nb));
    float *out = malloc((size_t)count * sizeof(float));
    if (!out) return fail(err, errlen, "out of memory reading tensor '%s' (%llu values)", shown(t->name, nb), (unsigned long long)count);
    const uint8_t *p = f->buf + t->begin;
    int big = (t->fortran & 2) != 0, fortran = (t->fortran & 1) && t->ndim == 2;
    for (uint64_t k = 0; k < count; k++) {
        float v = load_elem(p + k * (uint64_t)t->elsize, t->dt, big);
        if (fortran) out[(k % r) * c + k / r] = v; /* element (k % r, k / r) in column-major order */
        else out[k] = v;
    }
    *data = out;
    *rows = (size_t)r;
    *cols = (size_t)c;
    return 0;
}

int qk_tensor_spec_split(const char *spec, char **path, char **tensor) {
    *path = *tensor = NULL;
    size_t n = strlen(spec), cut = n;
    struct stat st;
    if (stat(spec, &st) != 0) /* not a file as a whole: cut at the first ':' whose prefix is a file */
        for (size_t i = 0; i < n; i++) {
            if (spec[i] != ':') continue;
            char *pre = malloc(i + 1);
            if (!pre) return -1;
            memcpy(pre, spec, i);
            pre[i] = 0;
            int ok = stat(pre, &st) == 0;
            free(pre);
            if (ok) {
                cut = i;
                break;
            }
        }
    *path = malloc(cut + 1);
    if (!*path) return -1;
    memcpy(*path, spec, cut);
    (*path)[cut] = 0;
    if (cut < n) {
        *tensor = malloc(n - cut);
        if (!*tensor) {
            free(*path);
            *path = NULL;
            return -1;
        }
        memcpy(*tensor, spec + cut + 1, n - cut);
    }
    return 0;
}

/* ---- writers ---- */

static uint16_t float_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

static int write_all(FILE *fp, const void *p, size_t n) { return fwrite(p, 1, n, fp) == n ? 0 : -1; }

/* Write to path.tmp, then rename: readers never see a half-written file. */
int qk_safetensors_write(const char *path, size_t count, const char *const *names, const char *dtype, const size_t *rows,
                         const size_t *cols, const float *const *data, char *err, size_t errlen) {
    int es = !strcmp(dtype, "F32") ? 4 : (!strcmp(dtype, "F16") || !strcmp(dtype, "BF16")) ? 2 : 0;
    if (!es) return fail(err, errlen, "cannot write dtype %s (F32, F16, BF16)", dtype);
    for (size_t i = 0; i < count; i++)
        for (const char *q = names[i]; *q; q++)
            if (*q == '"' || *q == '\\' || (unsigned char)*q < 0x20) return fail(err, errlen, "tensor name '%s' needs JSON escaping; not written", names[i]);
    size_t cap = 256, hl = 0;
    for (size_t i = 0; i < count; i++) cap += strlen(names[i]) + 128;
    char *h = malloc(cap);
    if (!h) return fail(err, errlen, "out of memory");
    uint64_t off = 0;
    hl += (size_t)snprintf(h + hl, cap - hl, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (size_t i = 0; i < count; i++) {
        uint64_t bytes = (uint64_t)rows[i] * cols[i] * (uint64_t)es;
        hl += (size_t)snprintf(h + hl, cap - hl, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%zu,%zu],\"data_offsets\":[%llu,%llu]}", names[i],
                               dtype, rows[i], cols[i], (unsigned long long)off, (unsigned long long)(off + bytes));
        off += bytes;
    }
    hl += (size_t)snprintf(h + hl, cap - hl, "}");
    while (hl % 8) h[hl++] = ' ';
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 5);
    if (!tmp) {
        free(h);
        return fail(err, errlen, "out of memory");
    }
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp", 5);
    FILE *fp = fopen(tmp, "wb");
    if (!fp) {
        free(h);
        free(tmp);
        return fail(err, errlen, "%s: cannot create: %s", path, strerror(errno));
    }
    uint8_t lenb[8];
    for (int i = 0; i < 8; i++) lenb[i] = (uint8_t)((uint64_t)hl >> (8 * i));
    int bad = write_all(fp, lenb, 8) || write_all(fp, h, hl);
    for (size_t i = 0; i < count && !bad; i++)
        for (size_t k = 0; k < rows[i] * cols[i] && !bad; k++) {
            uint8_t b[4];
            float v = data[i][k];
            if (es == 4) {
                uint32_t u;
                memcpy(&u, &v, 4);
                for (int j = 0; j < 4; j++) b[j] = (uint8_t)(u >> (8 * j));
            } else {
                uint16_t u = dtype[0] == 'B' ? float_to_bf16(v) : qk_f2h(v);
                b[0] = (uint8_t)u, b[1] = (uint8_t)(u >> 8);
            }
            bad = write_all(fp, b, (size_t)es);
        }
    bad |= fclose(fp) != 0;
    free(h);
    if (bad || rename(tmp, path)) {
        remove(tmp);
        free(tmp);
        return fail(err, errlen, "%s: write failed: %s", path, strerror(errno));
    }
    free(tmp);
    return 0;
}

int qk_npy_write(const char *path, size_t rows, size_t cols, const float *data, char *err, size_t errlen) {
    char hdr[128];
    int n = snprintf(hdr, sizeof hdr, "{'descr': '<f4', 'fortran_order': False, 'shape': (%zu, %zu), }", rows, cols);
    size_t total = 10 + (size_t)n + 1, pad = (64 - total % 64) % 64;
    size_t hl = (size_t)n + pad + 1;
    FILE *fp = fopen(path, "wb");
    if (!fp) return fail(err, errlen, "%s: cannot create: %s", path, strerror(errno));
    uint8_t pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (uint8_t)hl, (uint8_t)(hl >> 8)};
    int bad = write_all(fp, pre, 10) || write_all(fp, hdr, (size_t)n);
    for (size_t i = 0; i < pad && !bad; i++) bad = write_all(fp, " ", 1);
    bad = bad || write_all(fp, "\n", 1);
    for (size_t k = 0; k < rows * cols && !bad; k++) {
        uint32_t u;
        memcpy(&u, &data[k], 4);
        uint8_t b[4] = {(uint8_t)u, (uint8_t)(u >> 8), (uint8_t)(u >> 16), (uint8_t)(u >> 24)};
        bad = write_all(fp, b, 4);
    }
    bad |= fclose(fp) != 0;
    return bad ? fail(err, errlen, "%s: write failed", path) : 0;
}
