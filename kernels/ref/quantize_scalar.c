/* Scalar reference: weight quantization, written for clarity (DESIGN §1).
 * These are the rules every SIMD variant must reproduce bit for bit:
 *   w4s: s = absmax/7,   id = 1/stored(s), q = clamp(round(x·id), -7, 7), stored as q+8
 *   w4a: m = min, d = (max-min)/15, id = 1/stored(d), q = clamp(round((x-stored(m))·id), 0, 15)
 *   w8s: s = absmax/127, id = 1/stored(s), q = clamp(round(x·id), -127, 127)
 *   q4_0, q8_0: llama.cpp's reference quantizers, byte for byte.
 * round() is half away from zero; id = 0 when the stored scale is 0 or its
 * inverse overflows (qk_inv_scale: a group of f32 denormals). The clamp
 * only acts when an f16 scale is subnormal and lost precision (then x·id can
 * exceed the code range by more than a rounding step). A group holding NaN or
 * Inf is reported (QK_ROW_NONFINITE) and its output left unspecified. */
#include "internal.h"

static int check_finite(const float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return QK_ROW_NONFINITE;
    return 0;
}

static float absmax_of(const float *x, size_t n) {
    float a = 0.0f;
    for (size_t i = 0; i < n; i++) a = fmaxf(a, fabsf(x[i]));
    return a;
}

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Symmetric formats: the group's inverse stored scale. */
static float sym_scale(const float *xg, size_t g, float qmax, const qk_qmat *out, size_t si, int *bad) {
    float s = qk_store_scale(out->scales, si, out->scale_type, absmax_of(xg, g) / qmax, bad);
    return qk_inv_scale(s);
}

int qk_quantize_w4s__scalar(const float *x, size_t ldx, const qk_qmat *out) {
    size_t K = out->cols, g = out->group, ng = K / g;
    int bad = 0;
    for (size_t r = 0; r < out->rows; r++) {
        uint8_t *codes = out->codes + r * out->row_bytes;
        for (size_t j = 0; j < ng; j++) {
            const float *xg = x + r * ldx + j * g;
            if (check_finite(xg, g)) {
                bad |= QK_ROW_NONFINITE;
                continue;
            }
            float id = sym_scale(xg, g, 7.0f, out, r * ng + j, &bad);
            for (size_t i = 0; i < g; i += 2) {
                int q0 = clampi((int)qk_round_half_away(xg[i] * id), -7, 7);
                int q1 = clampi((int)qk_round_half_away(xg[i + 1] * id), -7, 7);
                codes[(j * g + i) / 2] = (uint8_t)((q0 + 8) | ((q1 + 8) << 4));
            }
        }
    }
    return bad;
}

int qk_quantize_w8s__scalar(const float *x, size_t ldx, const qk_qmat *out) {
    size_t K = out->cols, g = out->group, ng = K / g;
    int bad = 0;
    for (size_t r = 0; r < out->rows; r++) {
        int8_t *codes = (int8_t *)(out->codes + r * out->row_bytes);
        for (size_t j = 0; j < ng; j++) {
            const float *xg = x + r * ldx + j * g;
            if (check_finite(xg, g)) {
                bad |= QK_ROW_NONFINITE;
                continue;
            }
            float id = sym_scale(xg, g, 127.0f, out, r * ng + j, &bad);
            for (size_t i = 0; i < g; i++) codes[j * g + i] = (int8_t)clampi((int)qk_round_half_away(xg[i] * id), -127, 127);
        }
    }
    return bad;
}

int qk_quantize_w4a__scalar(const float *x, size_t ldx, const qk_qmat *out) {
    size_t K = out->cols, g = out->group, ng = K / g;
    int bad = 0;
    for (size_t r = 0; r < out->rows; r++) {
        uint8_t *codes = out->codes + r * out->row_bytes;
        for (size_t j = 0; j < ng; j++) {
            const float *xg = x + r * ldx + j * g;
            if (check_finite(xg, g)) {
                bad |= QK_ROW_NONFINITE;
                continue;
            }
            float mn = xg[0], mx = xg[0];
            for (size_t i = 1; i < g; i++) {
                mn = qk_min_z(mn, xg[i]);
                mx = qk_max_z(mx, xg[i]);
            }
            float d = (mx - mn) / 15.0f;
            if (!isfinite(d)) bad |= QK_ROW_RANGE; /* max - min overflows f32 */
            float m = qk_store_scale(out->mins, r * ng + j, out->scale_type, mn, &bad);
            d = qk_store_scale(out->scales, r * ng + j, out->scale_type, d, &bad);
            float id = qk_inv_scale(d);
            for (size_t i = 0; i < g; i += 2) {
                int q0 = clampi((int)qk_round_half_away((xg[i] - m) * id), 0, 15);
                int q1 = clampi((int)qk_round_half_away((xg[i + 1] - m) * id), 0, 15);
                codes[(j * g + i) / 2] = (uint8_t)(q0 | (q1 << 4));
            }
        }
    }
    return bad;
}

/* llama.cpp quantize_row_q4_0_ref: d = (the value of largest magnitude, first
 * one on ties, with its sign) / -8; q = min(15, (int8_t)(x·id + 8.5f)). */
int qk_quantize_q4_0__scalar(const float *x, size_t ldx, const qk_qmat *out) {
    size_t nb = out->cols / 32;
    int bad = 0;
    for (size_t r = 0; r < out->rows; r++) {
        for (size_t b = 0; b < nb; b++) {
            const float *xb = x + r * ldx + b * 32;
            uint8_t *blk = out->codes + r * out->row_bytes + b * QK_Q4_0_BYTES;
            if (check_finite(xb, 32)) {
                bad |= QK_ROW_NONFINITE;
                continue;
            }
            float amax = 0.0f, max = 0.0f;
            for (int j = 0; j < 32; j++)
                if (amax < fabsf(xb[j])) {
                    amax = fabsf(xb[j]);
                    max = xb[j];
                }
            float d = max / -8.0f;
            float id = qk_inv_scale(d);
            uint16_t h = qk_f2h(d);
            if ((h & 0x7c00u) == 0x7c00u) bad |= QK_ROW_RANGE;
            qk_wr16(blk, h);
            for (int j = 0; j < 16; j++) {
                int q0 = (int8_t)(xb[j] * id + 8.5f), q1 = (int8_t)(xb[j + 16] * id + 8.5f);
                q0 = q0 < 15 ? q0 : 15;
                q1 = q1 < 15 ? q1 : 15;
                blk[2 + j] = (uint8_t)(q0 | (q1 << 4));
            }
        }
    }
    return bad;
}

/* llama.cpp quantize_row_q8_0_ref: d = absmax/127, id = 1/d (unrounded d), q = roundf(x·id). */
int qk_quantize_q8_0__scalar(const float *x, size_t ldx, const qk_qmat *out) {
    size_t nb = out->cols / 32;
    int bad = 0;
    for (size_t r = 0; r < out->rows; r++) {
        for (size_t b = 0; b < nb; b++) {
            const float *xb = x + r * ldx + b * 32;
            uint8_t *blk = out->codes + r * out->row_bytes + b * QK_Q8_0_BYTES;
            if (check_finite(xb, 32)) {
                bad |= QK_ROW_NONFINITE;
                continue;
            }
            float d = absmax_of(xb, 32) / 127.0f;
            float id = qk_inv_scale(d);
            uint16_t h = qk_f2h(d);
            if ((h & 0x7c00u) == 0x7c00u) bad |= QK_ROW_RANGE;
            qk_wr16(blk, h);
            for (int j = 0; j < 32; j++) blk[2 + j] = (uint8_t)(int8_t)roundf(xb[j] * id);
        }
    }
    return bad;
}
