/// Readers for real tensors: `.safetensors` (F32, F16, BF16) and `.npy`
/// (float16, float32, float64, either byte order).
///
/// The parsers trust nothing in the file: every length, offset and shape is
/// checked against the bytes actually present before anything is read, and a
/// malformed file (truncated, a header that lies about sizes or offsets,
/// overlapping tensors, an unknown dtype, a huge header length) gets a message
/// naming the problem, never a crash or an out-of-bounds read. They depend on
/// libc only (the fuzz targets in tests/fuzz/ build them alone).
#ifndef QK_TENSOR_IO_H
#define QK_TENSOR_IO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { QK_TENSOR_MAXDIM = 8 };
/// The safetensors format's own limit on the JSON header (100 MB).
#define QK_SAFETENSORS_MAX_HEADER 100000000ull

typedef enum qk_tfile_kind { QK_TFILE_DETECT = 0, QK_TFILE_SAFETENSORS, QK_TFILE_NPY } qk_tfile_kind;

/// One tensor of a file, validated: [begin, end) lies inside the file image
/// and holds exactly prod(shape) elements of the dtype.
typedef struct qk_tinfo {
    char *name;       ///< NUL-terminated ("" for .npy)
    char dtype[16];   ///< as the file names it ("F32", "BF16", "<f4")
    int dt;           ///< internal dtype code
    int elsize;       ///< bytes per element
    int readable;     ///< 1 if qk_tfile_read converts this dtype
    int ndim;
    uint64_t shape[QK_TENSOR_MAXDIM];
    uint64_t begin, end; ///< byte offsets in the file image
    int fortran;      ///< .npy fortran_order (column major)
} qk_tinfo;

/// A parsed file: its image (memory-mapped by qk_tfile_open, or the caller's
/// buffer for qk_tfile_parse) and the index of its tensors, in header order.
typedef struct qk_tfile {
    const uint8_t *buf;
    size_t len;
    qk_tfile_kind kind;
    qk_tinfo *t;
    size_t count;
    void *map_;
    size_t maplen_;
} qk_tfile;

/// Parse an image buf[0..len) (kind DETECT: .npy if it starts with the .npy
/// magic, safetensors otherwise). The image must outlive f. Returns 0, or -1
/// with a message in err (f is then empty and needs no close).
int qk_tfile_parse(const uint8_t *buf, size_t len, qk_tfile_kind kind, qk_tfile *f, char *err, size_t errlen);
/// Map and parse a file; messages start with the path.
int qk_tfile_open(const char *path, qk_tfile *f, char *err, size_t errlen);
void qk_tfile_close(qk_tfile *f);

/// Index of the tensor called name, or -1.
long qk_tfile_find(const qk_tfile *f, const char *name);
/// Shape as text ("[4096, 11008]") into buf.
void qk_tinfo_shape_str(const qk_tinfo *t, char *buf, size_t len);

/// Tensor i as a row-major f32 matrix: 2-D as is (a Fortran-order .npy is
/// transposed into row order), 1-D as one row, N-D with the leading
/// dimensions folded into rows. *data is malloc'd (free it). Returns 0, or -1
/// with a message (unreadable dtype, no elements, out of memory).
int qk_tfile_read(const qk_tfile *f, size_t i, float **data, size_t *rows, size_t *cols, char *err, size_t errlen);

/// Split "FILE[:TENSOR]": the longest prefix ending before a ':' that names an
/// existing file wins, so paths holding ':' work. *path and *tensor are
/// malloc'd (*tensor NULL when absent). Returns 0, or -1 when out of memory.
int qk_tensor_spec_split(const char *spec, char **path, char **tensor);

/// Write a safetensors file of 2-D F32/F16/BF16 tensors (for tests and
/// examples): names[i], rows[i] × cols[i] values data[i], dtype "F32",
/// "F16" or "BF16". Returns 0, or -1 with a message.
int qk_safetensors_write(const char *path, size_t count, const char *const *names, const char *dtype,
                         const size_t *rows, const size_t *cols, const float *const *data, char *err, size_t errlen);
/// Write a 2-D little-endian float32 .npy file.
int qk_npy_write(const char *path, size_t rows, size_t cols, const float *data, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
