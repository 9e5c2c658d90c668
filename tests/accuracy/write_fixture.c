/* Writes the files the accuracy CLI test reads: DIR/model.safetensors (BF16:
 * blocks.{0,1}.w1 256 x 128, blocks.{0,1}.w2 128 x 256, acts 4 x 128),
 * DIR/acts.npy (f32 4 x 128), and DIR/bad.safetensors (a header that claims
 * two overlapping tensors). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "tensor_io.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: write_fixture DIR\n");
        return 2;
    }
    enum { D = 128, F = 256, M = 4 };
    char path[1024], err[1200];
    static float w[4][F * D], x[M * D];
    for (int i = 0; i < 4; i++) qk_gen_fill(QK_DIST_GAUSS, 0, 7, 40 + (uint64_t)i, 0, w[i], F * D);
    qk_gen_fill(QK_DIST_GAUSS, 0, 7, 50, 0, x, M * D);
    const char *names[5] = {"blocks.0.w1", "blocks.0.w2", "blocks.1.w1", "blocks.1.w2", "acts"};
    const size_t rows[5] = {F, D, F, D, M}, cols[5] = {D, F, D, F, D};
    const float *data[5] = {w[0], w[1], w[2], w[3], x};
    snprintf(path, sizeof path, "%s/model.safetensors", argv[1]);
    if (qk_safetensors_write(path, 5, names, "BF16", rows, cols, data, err, sizeof err)) goto fail;
    snprintf(path, sizeof path, "%s/acts.npy", argv[1]);
    if (qk_npy_write(path, M, D, x, err, sizeof err)) goto fail;
    const char *hdr = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]},"
                      "\"b\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[8,24]}}";
    snprintf(path, sizeof path, "%s/bad.safetensors", argv[1]);
    FILE *f = fopen(path, "wb");
    if (!f) {
        snprintf(err, sizeof err, "cannot create %s", path);
        goto fail;
    }
    unsigned char len[8] = {0}, zero[24] = {0};
    size_t n = strlen(hdr);
    for (int i = 0; i < 8; i++) len[i] = (unsigned char)(n >> (8 * i));
    fwrite(len, 1, 8, f), fwrite(hdr, 1, n, f), fwrite(zero, 1, 24, f);
    if (fclose(f)) goto fail;
    printf("wrote the fixtures into %s\n", argv[1]);
    return 0;
fail:
    fprintf(stderr, "write_fixture: %s\n", err);
    return 1;
}
