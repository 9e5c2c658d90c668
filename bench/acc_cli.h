/// Options and data shared by `qkbench accuracy`, `sweep` and `depth`:
/// shapes, format/group/mode lists, data sources (a seeded generator or a
/// tensor file), and loading a matrix from either.
#ifndef QK_ACC_CLI_H
#define QK_ACC_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "gen.h"
#include "qk/kernels.h"
#include "tensor_io.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { ACC_MAX_GROUPS = 8 };
/// The group size that means "per channel" (g = K) in a list.
#define ACC_GROUP_K ((size_t)0)

/// A data source: generated (path NULL) or read from FILE[:TENSOR].
typedef struct acc_src {
    qk_gen_spec gen;
    char *path, *tensor;
} acc_src;

/// The options the three commands share. Flags a command does not take are
/// rejected by it (acc_opts_take's `allowed` mask).
typedef struct acc_opts {
    size_t M, N, K;
    unsigned formats;               ///< bit f: format f
    size_t groups[ACC_MAX_GROUPS];  ///< ACC_GROUP_K = per channel
    int ngroups;
    int groups_explicit;            ///< --group given: a group that does not fit K is an error, not a skip
    unsigned modes;                 ///< bit m: mode m
    qk_scale_type scales;
    uint64_t seed;
    acc_src w, x;                   ///< weights, activations
    const char *csv, *json, *svg, *out;
    int quiet;
} acc_opts;

/// Option groups a command accepts.
enum {
    ACC_O_SHAPE = 1, ACC_O_FORMAT = 2, ACC_O_GROUP = 4, ACC_O_MODE = 8, ACC_O_DATA = 16, ACC_O_FILES = 32,
    ACC_O_OUTPUT = 64, ACC_O_SCALES = 128
};

void acc_opts_init(acc_opts *o);
void acc_opts_free(acc_opts *o);
/// If argv[*i] is a shared option in `allowed`, consume it (and its value)
/// and return 1; return 0 if it is not one; print an error naming `cmd` and
/// return -1 for a bad value.
int acc_opts_take(acc_opts *o, unsigned allowed, const char *cmd, int argc, char **argv, int *i);
/// The help text of the shared options in `allowed`.
void acc_opts_help(unsigned allowed);
/// Check the combination (e.g. --acts without a K); -1 with a message.
int acc_opts_check(const acc_opts *o, const char *cmd);

/// Parse helpers (0 ok, -1 bad). Shapes: "MxNxK" (or "NxK" when M may be omitted).
int acc_parse_shape(const char *s, size_t *M, size_t *N, size_t *K);
int acc_parse_size(const char *s, size_t *out);
int acc_parse_double(const char *s, double *out);

/// The group sizes of o that apply to format f at K: q4_0/q8_0 take 32 only;
/// ACC_GROUP_K becomes K. Writes up to ACC_MAX_GROUPS sizes into out, and for
/// each skipped size a reason into notes (may be NULL). Returns the count.
int acc_groups_for(const acc_opts *o, qk_format f, size_t K, size_t *out, char *notes, size_t notes_len);

/// A matrix in memory: rows × cols f32 (row-major, contiguous) and a description.
typedef struct acc_mat {
    float *v;
    size_t rows, cols;
    char name[160]; ///< the tensor name, or "generated"
    char desc[256]; ///< "gauss, seed 42, stream 1" / "model.safetensors:w [4096, 4096] BF16"
} acc_mat;

void acc_mat_free(acc_mat *m);
/// Generate rows × cols of src's distribution (stream names the matrix).
int acc_mat_generate(acc_mat *m, const qk_gen_spec *g, uint64_t seed, uint64_t stream, size_t rows, size_t cols, char *err,
                     size_t errlen);
/// Read tensor i of an open file (readable dtype, finite values checked).
int acc_mat_read(acc_mat *m, const qk_tfile *f, const char *path, size_t i, char *err, size_t errlen);
/// The tensors of a file that a FILE[:TENSOR] spec selects: the named one, or
/// every readable 2-D tensor. Writes their indices into *idx (malloc'd) and
/// returns the count, or -1 with a message (no such tensor, none readable).
long acc_select_tensors(const qk_tfile *f, const char *path, const char *tensor, size_t **idx, char *err, size_t errlen);

/// Formats "w4s,q4_0" / "all"; modes "W4A8,w8a8" / "all".
int acc_parse_formats(const char *s, unsigned *mask);
int acc_parse_modes(const char *s, unsigned *mask);
/// Groups "32,128,K" / "all".
int acc_parse_groups(const char *s, size_t *groups, int *n);

#ifdef __cplusplus
}
#endif
#endif
