/// A growable text buffer, a JSON writer on top of it, and a small JSON
/// reader (a tree of values) for the files qkbench writes itself:
/// machine.json, results.json and Google Benchmark's JSON.
#ifndef QKB_JSON_H
#define QKB_JSON_H
#include <stddef.h>

/// Text buffer; `oom` is set (and further appends ignored) if memory runs out.
typedef struct qkb_buf {
    char *p;
    size_t n, cap;
    int oom;
} qkb_buf;

void qkb_buf_free(qkb_buf *b);
/// The text, the caller's to free; NULL (the buffer freed) if memory ran out.
char *qkb_buf_take(qkb_buf *b);
void qkb_buf_putn(qkb_buf *b, const char *s, size_t n);
void qkb_buf_puts(qkb_buf *b, const char *s);
void qkb_buf_printf(qkb_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/// JSON writer: commas and indentation are handled; nesting up to 32 levels.
/// Keys are given with qkw_key before each member of an object.
typedef struct qkw {
    qkb_buf *b;
    int depth;
    int first[32];
    int after_key;
} qkw;

void qkw_init(qkw *w, qkb_buf *b);
void qkw_obj(qkw *w);  ///< {
void qkw_arr(qkw *w);  ///< [
void qkw_end_obj(qkw *w);
void qkw_end_arr(qkw *w);
void qkw_key(qkw *w, const char *k);
void qkw_str(qkw *w, const char *s); ///< a string (NULL writes null)
void qkw_num(qkw *w, double v);      ///< a number (NaN/Inf write null)
void qkw_int(qkw *w, long long v);
void qkw_bool(qkw *w, int v);
void qkw_null(qkw *w);
/// key + value shorthands
void qkw_kstr(qkw *w, const char *k, const char *s);
void qkw_knum(qkw *w, const char *k, double v);
void qkw_kint(qkw *w, const char *k, long long v);
void qkw_kbool(qkw *w, const char *k, int v);

/// A parsed JSON value.
typedef enum qkj_type { QKJ_NULL, QKJ_BOOL, QKJ_NUM, QKJ_STR, QKJ_ARR, QKJ_OBJ } qkj_type;
typedef struct qkj {
    qkj_type type;
    double num;         ///< QKJ_NUM, QKJ_BOOL (0/1)
    char *str;          ///< QKJ_STR
    size_t n;           ///< items of QKJ_ARR / members of QKJ_OBJ
    struct qkj **items;
    char **keys;        ///< QKJ_OBJ: the member names
} qkj;

/// Parse `text`; NULL on error, with a message (and byte offset) in err.
qkj *qkj_parse(const char *text, char *err, size_t errlen);
/// Read and parse a file; NULL on error (err says why).
qkj *qkj_parse_file(const char *path, char *err, size_t errlen);
void qkj_free(qkj *v);
/// Member `key` of an object (NULL if absent or v is not an object).
const qkj *qkj_get(const qkj *v, const char *key);
/// The number of v, or dflt when v is not a number (or bool).
double qkj_num(const qkj *v, double dflt);
/// The string of v, or dflt when v is not a string.
const char *qkj_str(const qkj *v, const char *dflt);
#endif
