/// Tables, CSV, JSON and the SVG plot of the accuracy commands' rows.
#ifndef QK_ACC_REPORT_H
#define QK_ACC_REPORT_H

#include <stdio.h>

#include "evaluate.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct acc_table {
    acc_row *r;
    size_t n, cap;
    int oom;
} acc_table;

void acc_table_add(acc_table *t, const acc_row *r);
void acc_table_free(acc_table *t);

/// What the output files record besides the rows.
typedef struct acc_meta {
    const char *command;  ///< "accuracy" or "sweep"
    uint64_t seed;
    const char *weights, *acts; ///< descriptions of the data
    const char *timing;   ///< how throughput was measured (NULL: not timed)
    const char *cpu;      ///< the CPU the rows come from (NULL: this one)
} acc_meta;

/// Print the rows [from, t->n) as the accuracy command's tables: weights,
/// variants (quantization and kernel error side by side), decomposition and,
/// when present, output-head metrics.
void acc_print_accuracy(FILE *f, const acc_table *t, size_t from);
/// Print the sweep table: format × g × mode × variant with time, GB/s,
/// GOP/s, bpw, weight and output SQNR and the kernel-error ratio.
void acc_print_sweep(FILE *f, const acc_table *t, size_t from);

/// CSV / JSON / SVG (error against bpw; point area = best throughput) of all
/// rows. Each returns a malloc'd NUL-terminated text (NULL if out of memory).
char *acc_csv(const acc_table *t);
char *acc_json(const acc_table *t, const acc_meta *m);
char *acc_svg(const acc_table *t, const acc_meta *m);

/// Write the files asked for by o (--csv, --json, --svg, --out DIR with
/// <base>.csv, <base>.json, <base>.svg), each replaced atomically. Returns 0
/// or -1 with a message.
int acc_write_outputs(const acc_table *t, const acc_meta *m, const acc_opts *o, const char *base, int want_svg, char *err,
                      size_t errlen);

/// mkdir -p; 0 or -1 with a message.
int acc_mkdirs(const char *path, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
