/* libFuzzer target: one tensor-file parser of bench/tensor_io.c (FUZZ_KIND:
 * QK_TFILE_SAFETENSORS for fuzz_safetensors, QK_TFILE_NPY for fuzz_npy) and
 * the f32 conversion of every tensor it accepts. Built with clang
 * -fsanitize=fuzzer,address,undefined (tests/fuzz/CMakeLists.txt); any
 * crash, leak or out-of-bounds read fails. */
#include <stdint.h>
#include <stdlib.h>

#include "tensor_io.h"

#ifndef FUZZ_KIND
#error "compile with -DFUZZ_KIND=QK_TFILE_SAFETENSORS or QK_TFILE_NPY"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    qk_tfile f;
    char err[512];
    if (qk_tfile_parse(data, size, FUZZ_KIND, &f, err, sizeof err) != 0) return 0;
    for (size_t i = 0; i < f.count; i++) {
        float *v;
        size_t r, c;
        if (qk_tfile_read(&f, i, &v, &r, &c, err, sizeof err) == 0) free(v);
    }
    (void)qk_tfile_find(&f, "a");
    qk_tfile_close(&f);
    return 0;
}
