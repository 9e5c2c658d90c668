/* libFuzzer target: the .npy parser and the f32 conversion of every
 * tensor it accepts. Built with clang -fsanitize=fuzzer,address,undefined
 * (tests/fuzz/CMakeLists.txt); any crash, leak or out-of-bounds read fails. */
#include <stdint.h>
#include <stdlib.h>

#include "tensor_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    qk_tfile f;
    char err[512];
    if (qk_tfile_parse(data, size, QK_TFILE_NPY, &f, err, sizeof err) != 0) return 0;
    for (size_t i = 0; i < f.count; i++) {
        float *v;
        size_t r, c;
        if (qk_tfile_read(&f, i, &v, &r, &c, err, sizeof err) == 0) free(v);
    }
    (void)qk_tfile_find(&f, "a");
    qk_tfile_close(&f);
    return 0;
}
