/* The tensor readers (issue 6, Tests): .safetensors and .npy files written
 * and read back; every malformed case (truncated, a header that lies about
 * sizes or offsets, overlapping tensors, an unknown dtype, a huge header
 * length, bad JSON, ...) rejected with the right message; every truncation of
 * a valid file rejected; and random corruptions parsed without a crash (run
 * it under the ASan build to see an out-of-bounds read). */
#include <sys/stat.h>
#include <unistd.h>

#include "tensor_io.h"
#include "test_util.h"

/* A safetensors image: 8-byte length (or `hl` when not ~0), header, `data` zero bytes. */
static uint8_t *st_image(const char *hdr, uint64_t hl, size_t data, size_t *len) {
    size_t n = strlen(hdr);
    *len = 8 + n + data;
    uint8_t *b = calloc(*len + 1, 1);
    uint64_t h = hl == ~0ull ? n : hl;
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(h >> (8 * i));
    memcpy(b + 8, hdr, n);
    return b;
}

/* Parse (and read every tensor); return the first message, or "" on success. */
static const char *parse_msg(const uint8_t *b, size_t len, qk_tfile_kind kind) {
    static char err[600];
    qk_tfile f;
    if (qk_tfile_parse(b, len, kind, &f, err, sizeof err)) return err;
    for (size_t i = 0; i < f.count; i++) {
        float *v;
        size_t r, c;
        if (qk_tfile_read(&f, i, &v, &r, &c, err, sizeof err)) {
            qk_tfile_close(&f);
            return err;
        }
        free(v);
    }
    qk_tfile_close(&f);
    return "";
}

static void expect_st(const char *name, const char *hdr, uint64_t hl, size_t data, const char *want) {
    size_t len;
    uint8_t *b = st_image(hdr, hl, data, &len);
    const char *m = parse_msg(b, len, QK_TFILE_SAFETENSORS);
    tu_context = name;
    CHECK(strstr(m, want) != NULL, "message \"%s\" lacks \"%s\"", m, want);
    printf("  %-26s -> %s\n", name, m);
    free(b);
}

static void safetensors_malformed(void) {
    printf("safetensors, malformed:\n");
    uint8_t five[5] = {1, 2, 3, 4, 5};
    tu_context = "5 bytes";
    CHECK(strstr(parse_msg(five, 5, QK_TFILE_SAFETENSORS), "too short") != NULL, "%s", parse_msg(five, 5, QK_TFILE_SAFETENSORS));
    CHECK(strstr(parse_msg(NULL, 0, QK_TFILE_SAFETENSORS), "too short") != NULL, "empty image");
    expect_st("huge header length", "{}", 1ull << 62, 0, "exceeds the format's limit");
    expect_st("header past the end", "{}", 1000, 0, "runs past the end of the file");
    expect_st("not JSON", "{abc}", ~0ull, 0, "not valid JSON");
    expect_st("header ends early", "{\"a\":{\"dtype\":\"F32\"", ~0ull, 0, "ends");
    expect_st("unknown dtype", "{\"a\":{\"dtype\":\"Q7\",\"shape\":[2],\"data_offsets\":[0,8]}}", ~0ull, 8, "unknown dtype 'Q7'");
    expect_st("offsets past the data", "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", ~0ull, 8,
              "ends at byte 16 of the data section, which holds only 8 bytes");
    expect_st("offsets lie about size", "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", ~0ull, 8,
              "data_offsets span 8 bytes, but shape [3] of F32 needs 12");
    expect_st("overlapping tensors",
              "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
              ~0ull, 12, "overlap");
    expect_st("offsets backwards", "{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,0]}}", ~0ull, 8, "run backwards");
    expect_st("duplicate name",
              "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
              ~0ull, 8, "appears twice");
    expect_st("negative dimension", "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", ~0ull, 4, "negative");
    expect_st("fractional offset", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4.0]}}", ~0ull, 4, "not fractions");
    expect_st("shape overflows",
              "{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],\"data_offsets\":[0,4]}}", ~0ull, 4, "overflows");
    expect_st("number overflows", "{\"a\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999999],\"data_offsets\":[0,4]}}", ~0ull, 4,
              "overflows 64 bits");
    expect_st("nine dimensions", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", ~0ull, 4,
              "more than 8 entries");
    expect_st("three offsets", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", ~0ull, 8, "more than 2 entries");
    expect_st("no dtype", "{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", ~0ull, 4, "has no dtype");
    expect_st("no offsets", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", ~0ull, 4, "has no data_offsets");
    expect_st("metadata not an object", "{\"__metadata__\":[1]}", ~0ull, 0, "__metadata__ must be an object");
    expect_st("trailing bytes", "{} x", ~0ull, 0, "unexpected bytes after");
    expect_st("NUL in a name", "{\"a\\u0000b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", ~0ull, 4, "NUL");
    expect_st("unpaired surrogate", "{\"a\\ud800\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", ~0ull, 4, "surrogate");
    expect_st("raw control byte", "{\"a\x01\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", ~0ull, 4, "control byte");
    char deep[400] = "{\"__metadata__\":{\"a\":";
    for (int i = 0; i < 80; i++) strcat(deep, "[");
    for (int i = 0; i < 80; i++) strcat(deep, "]");
    strcat(deep, "}}");
    expect_st("deep nesting", deep, ~0ull, 0, "nests deeper");
    expect_st("known dtype, not read", "{\"a\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]}}", ~0ull, 8,
              "has dtype I32; qkbench reads F32, F16 and BF16");
    expect_st("empty tensor", "{\"a\":{\"dtype\":\"F32\",\"shape\":[0,4],\"data_offsets\":[0,0]}}", ~0ull, 0, "has no elements");
    /* well-formed edge cases */
    expect_st("no tensors", "{}", ~0ull, 0, "");
    expect_st("metadata and escapes",
              "{\"__metadata__\":{\"format\":\"pt\",\"x\":[1,{\"y\":null},true,-1.5e3]},\"\\u00e9\\/t\\ud83d\\ude00\":{\"dtype\":\"BF16\","
              "\"shape\":[2,2],\"data_offsets\":[0,8],\"extra\":[1,2]}}   ",
              ~0ull, 8, "");
}

static void expect_npy(const char *name, const char *dict, int major, size_t data, long hl_override, const char *want) {
    size_t n = strlen(dict), pre = major == 1 ? 10 : 12, len = pre + n + data;
    uint8_t *b = calloc(len + 1, 1);
    memcpy(b, "\x93NUMPY", 6);
    b[6] = (uint8_t)major;
    size_t hl = hl_override >= 0 ? (size_t)hl_override : n;
    for (size_t i = 0; i < pre - 8; i++) b[8 + i] = (uint8_t)(hl >> (8 * i));
    memcpy(b + pre, dict, n);
    const char *m = parse_msg(b, len, QK_TFILE_NPY);
    tu_context = name;
    CHECK(strstr(m, want) != NULL, "message \"%s\" lacks \"%s\"", m, want);
    printf("  %-26s -> %s\n", name, m);
    free(b);
}

static void npy_malformed(void) {
    printf("npy, malformed:\n");
    uint8_t b[16] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
    tu_context = "npy too short";
    CHECK(strstr(parse_msg(b, 8, QK_TFILE_NPY), "too short") != NULL, "%s", parse_msg(b, 8, QK_TFILE_NPY));
    uint8_t bad[16] = "\x93NUMPX\x01\x00\x00\x00";
    tu_context = "npy bad magic";
    CHECK(strstr(parse_msg(bad, 16, QK_TFILE_NPY), "magic") != NULL, "%s", parse_msg(bad, 16, QK_TFILE_NPY));
    expect_npy("version 4", "{}", 4, 0, -1, "unsupported .npy format version 4.0");
    expect_npy("header past the end", "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 1, 0, 5000, "runs past the end");
    expect_npy("not a dict", "[1, 2]", 1, 0, -1, "not a Python dict literal");
    expect_npy("int dtype", "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", 1, 8, -1, "'<i4' is not supported");
    expect_npy("structured dtype", "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", 1, 8, -1, "structured");
    expect_npy("truncated data", "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 4), }", 1, 60, -1,
               "needs 64 data bytes, but the file holds 60");
    expect_npy("no shape", "{'descr': '<f4', 'fortran_order': False, }", 1, 8, -1, "lacks 'shape'");
    expect_npy("unknown key", "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 1, 8, -1, "unknown key 'x'");
    expect_npy("bad fortran_order", "{'descr': '<f4', 'fortran_order': 0, 'shape': (2,), }", 1, 8, -1, "True or False");
    expect_npy("shape overflows", "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }", 1, 8, -1,
               "overflows");
    expect_npy("Fortran 3-D", "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2, 2), }", 2, 32, -1, "Fortran-order");
    expect_npy("version 2 header", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 2, 24, -1, "");
}

static void npy_layouts(void) {
    /* big endian f4, Fortran order 2x3: column-major 1..6 -> rows [1 3 5; 2 4 6] */
    const char *d = "{'descr': '>f4', 'fortran_order': True, 'shape': (2, 3), }";
    size_t n = strlen(d), len = 10 + n + 24;
    uint8_t *b = calloc(len, 1);
    memcpy(b, "\x93NUMPY\x01\x00", 8);
    b[8] = (uint8_t)n;
    memcpy(b + 10, d, n);
    for (int i = 0; i < 6; i++) {
        float v = (float)(i + 1);
        uint32_t u;
        memcpy(&u, &v, 4);
        for (int k = 0; k < 4; k++) b[10 + n + 4 * i + k] = (uint8_t)(u >> (24 - 8 * k));
    }
    qk_tfile f;
    char err[300];
    tu_context = "npy >f4 Fortran";
    CHECK(qk_tfile_parse(b, len, QK_TFILE_DETECT, &f, err, sizeof err) == 0, "%s", err);
    float *v = NULL;
    size_t r = 0, c = 0;
    if (f.count) CHECK(qk_tfile_read(&f, 0, &v, &r, &c, err, sizeof err) == 0, "%s", err);
    static const float want[6] = {1, 3, 5, 2, 4, 6};
    CHECK(v && r == 2 && c == 3 && !memcmp(v, want, sizeof want), "got %zux%zu", r, c);
    free(v);
    qk_tfile_close(&f);
    free(b);
    /* f8 and f2, 3-D folded into rows */
    static const char *const ds[] = {"{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3, 4), }",
                                     "{'descr': '<f2', 'fortran_order': False, 'shape': (2, 3, 4), }"};
    for (int t = 0; t < 2; t++) {
        int es = t ? 2 : 8;
        n = strlen(ds[t]);
        len = 10 + n + 24 * (size_t)es;
        b = calloc(len, 1);
        memcpy(b, "\x93NUMPY\x01\x00", 8);
        b[8] = (uint8_t)n;
        memcpy(b + 10, ds[t], n);
        for (int i = 0; i < 24; i++) {
            double x = i * 0.25 - 2;
            if (t == 0) memcpy(b + 10 + n + 8 * i, &x, 8);
            else { /* fp16 of small quarter-steps: sign, exponent, mantissa by hand */
                float fx = (float)x;
                uint32_t u;
                memcpy(&u, &fx, 4);
                uint16_t h = fx == 0 ? 0 : (uint16_t)(((u >> 16) & 0x8000u) | ((((u >> 23) & 255) - 112) << 10) | ((u >> 13) & 0x3ffu));
                b[10 + n + 2 * i] = (uint8_t)h, b[11 + n + 2 * i] = (uint8_t)(h >> 8);
            }
        }
        tu_context = t ? "npy <f2 3-D" : "npy <f8 3-D";
        CHECK(qk_tfile_parse(b, len, QK_TFILE_NPY, &f, err, sizeof err) == 0, "%s", err);
        v = NULL;
        if (f.count) CHECK(qk_tfile_read(&f, 0, &v, &r, &c, err, sizeof err) == 0, "%s", err);
        int ok = v && r == 6 && c == 4;
        for (int i = 0; ok && i < 24; i++) ok = v[i] == (float)(i * 0.25 - 2);
        CHECK(ok, "values or shape %zux%zu wrong", r, c);
        free(v);
        qk_tfile_close(&f);
        free(b);
    }
}

static uint8_t *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(*len + 1);
    if (fread(b, 1, *len, f) != *len) *len = 0;
    fclose(f);
    return b;
}

/* Write, read back; every truncation must fail; random corruption must not crash. */
static void roundtrip_and_corrupt(const char *dir, tu_rng *rng) {
    char path[512], npy[512], err[600];
    snprintf(path, sizeof path, "%s/t.safetensors", dir);
    snprintf(npy, sizeof npy, "%s/t.npy", dir);
    float a[15], b2[8], c3[6];
    for (int i = 0; i < 15; i++) a[i] = (float)tu_gauss(rng);
    for (int i = 0; i < 8; i++) b2[i] = (float)(i - 4) * 0.5f;  /* exact in f16 and bf16 */
    for (int i = 0; i < 6; i++) c3[i] = (float)(1 << i) * -0.25f;
    const char *names[3] = {"layers.0.w", "layers.0.b", "z"};
    const size_t rows[3] = {3, 2, 1}, cols[3] = {5, 4, 6};
    const float *data[3] = {a, b2, c3};
    static const char *const dts[] = {"F32", "F16", "BF16"};
    for (int d = 0; d < 3; d++) {
        char ctx[64];
        snprintf(ctx, sizeof ctx, "roundtrip %s", dts[d]);
        tu_context = ctx;
        const float *dd[3] = {d == 0 ? a : b2, b2, c3};
        size_t rr[3] = {d == 0 ? 3 : 2, 2, 1}, cc[3] = {d == 0 ? 5 : 4, 4, 6};
        CHECK(qk_safetensors_write(path, 3, names, dts[d], rr, cc, dd, err, sizeof err) == 0, "%s", err);
        qk_tfile f;
        CHECK(qk_tfile_open(path, &f, err, sizeof err) == 0, "%s", err);
        for (int t = 0; t < 3 && f.count == 3; t++) {
            long i = qk_tfile_find(&f, names[t]);
            float *v = NULL;
            size_t r, c;
            CHECK(i >= 0 && qk_tfile_read(&f, (size_t)i, &v, &r, &c, err, sizeof err) == 0, "%s: %s", names[t], err);
            CHECK(v && r == rr[t] && c == cc[t] && !memcmp(v, dd[t], r * c * sizeof(float)), "%s: values differ", names[t]);
            free(v);
        }
        qk_tfile_close(&f);
    }
    (void)data, (void)rows, (void)cols;
    tu_context = "npy write";
    CHECK(qk_npy_write(npy, 3, 5, a, err, sizeof err) == 0, "%s", err);
    const char *files[2] = {path, npy};
    for (int k = 0; k < 2; k++) {
        size_t len;
        uint8_t *img = slurp(files[k], &len);
        tu_context = files[k];
        CHECK(img && len > 0, "cannot read back");
        if (!img) continue;
        CHECK(*parse_msg(img, len, QK_TFILE_DETECT) == 0, "the valid file fails: %s", parse_msg(img, len, QK_TFILE_DETECT));
        size_t fails = 0;
        for (size_t cut = 0; cut < len; cut++) {
            uint8_t *p = malloc(cut ? cut : 1); /* exact size: ASan sees any read past the end */
            memcpy(p, img, cut);
            fails += *parse_msg(p, cut, QK_TFILE_DETECT) != 0;
            free(p);
        }
        CHECK(fails == len, "%zu of %zu truncations were accepted", len - fails, len);
        size_t ok = 0, iters = tu_quick() ? 2000 : 20000;
        for (size_t it = 0; it < iters; it++) {
            size_t n = len;
            uint8_t *p = malloc(n);
            memcpy(p, img, n);
            int edits = 1 + (int)(tu_next(rng) % 4);
            for (int e = 0; e < edits; e++) {
                size_t at = tu_next(rng) % n;
                switch (tu_next(rng) % 4) {
                case 0: p[at] ^= (uint8_t)(1u << (tu_next(rng) % 8)); break;
                case 1: p[at] = (uint8_t)tu_next(rng); break;
                case 2: p[at] = "0123456789[]{}\",:-e."[tu_next(rng) % 20]; break;
                default: n = at ? at : 1; break;
                }
            }
            uint8_t *q = malloc(n);
            memcpy(q, p, n);
            free(p);
            ok += *parse_msg(q, n, QK_TFILE_DETECT) == 0;
            free(q);
        }
        printf("  %s: %zu truncations rejected; %zu random corruptions parsed without a crash (%zu still valid)\n", files[k], fails,
               iters, ok);
        free(img);
    }
    /* FILE[:TENSOR] with ':' inside the path */
    char colon[600];
    snprintf(colon, sizeof colon, "%s/a:b.npy", dir);
    CHECK(qk_npy_write(colon, 1, 2, a, err, sizeof err) == 0, "%s", err);
    char *p = NULL, *t = NULL, spec[700];
    tu_context = "spec split";
    CHECK(qk_tensor_spec_split(colon, &p, &t) == 0 && !strcmp(p, colon) && t == NULL, "'%s' split into '%s' and '%s'", colon, p, t ? t : "");
    free(p), free(t);
    snprintf(spec, sizeof spec, "%s:layers.0.w", colon);
    CHECK(qk_tensor_spec_split(spec, &p, &t) == 0 && !strcmp(p, colon) && t && !strcmp(t, "layers.0.w"), "'%s' split into '%s' and '%s'", spec,
          p, t ? t : "");
    free(p), free(t);
    qk_tfile f;
    CHECK(qk_tfile_open(dir, &f, err, sizeof err) != 0 && strstr(err, "not a regular file"), "a directory: %s", err);
    snprintf(spec, sizeof spec, "%s/missing.safetensors", dir);
    CHECK(qk_tfile_open(spec, &f, err, sizeof err) != 0 && strstr(err, "cannot open"), "a missing file: %s", err);
    unlink(colon);
    unlink(path);
    unlink(npy);
}

int main(void) {
    uint64_t seed = tu_seed();
    tu_rng rng = {seed};
    safetensors_malformed();
    npy_malformed();
    npy_layouts();
    char dir[] = "/tmp/qk_acc_io_XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    roundtrip_and_corrupt(dir, &rng);
    rmdir(dir);
    return tu_finish("test_acc_io");
}
