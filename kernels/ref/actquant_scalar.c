/* Scalar reference: on-the-fly activation quantization (DESIGN §2).
 *   a8:   s = absmax/127, id = 1/s, q = clamp(round(x·id), -127, 127)
 *   a4:   s = absmax/7,   id = 1/s, q = clamp(round(x·id), -7, 7) (one code per byte)
 *   q8_0: llama.cpp: d = absmax/127, id = 1/d, q = roundf(x·id); scale = fp16(d) as f32
 * round() is half away from zero; id = 0 when 1/s is 0 or overflows
 * (qk_inv_scale). sums[] holds each group's sum of codes. A group with NaN or
 * Inf is reported (QK_ROW_NONFINITE) and left as zeros. */
#include "internal.h"

static int actquant_rows(const float *x, size_t ldx, const qk_qact *out, float qmax, int q8_0) {
    size_t K = out->cols, g = out->group, ng = K / g;
    int bad = 0;
    for (size_t r = 0; r < out->rows; r++)
        for (size_t j = 0; j < ng; j++) {
            const float *xg = x + r * ldx + j * g;
            int8_t *q = out->codes + r * K + j * g;
            float amax = 0.0f;
            int finite = 1;
            for (size_t i = 0; i < g; i++) {
                finite &= isfinite(xg[i]) != 0;
                amax = fmaxf(amax, fabsf(xg[i]));
            }
            if (!finite) { /* reported; the group is left as zeros */
                bad |= QK_ROW_NONFINITE;
                memset(q, 0, g);
                out->scales[r * ng + j] = 0.0f;
                out->sums[r * ng + j] = 0;
                continue;
            }
            float s = amax / qmax, id;
            if (q8_0) {
                id = qk_inv_scale(s);
                uint16_t h = qk_f2h(s);
                if ((h & 0x7c00u) == 0x7c00u) bad |= QK_ROW_RANGE;
                s = qk_h2f(h);
            } else {
                id = qk_inv_scale(s);
            }
            int32_t sum = 0;
            for (size_t i = 0; i < g; i++) {
                float v = qk_round_half_away(xg[i] * id);
                v = v < -qmax ? -qmax : v > qmax ? qmax : v;
                q[i] = (int8_t)v;
                sum += q[i];
            }
            out->scales[r * ng + j] = s;
            out->sums[r * ng + j] = sum;
        }
    return bad;
}

int qk_actquant_a8__scalar(const float *x, size_t ldx, const qk_qact *out) { return actquant_rows(x, ldx, out, 127.0f, 0); }
int qk_actquant_a4__scalar(const float *x, size_t ldx, const qk_qact *out) { return actquant_rows(x, ldx, out, 7.0f, 0); }
int qk_actquant_q8_0__scalar(const float *x, size_t ldx, const qk_qact *out) { return actquant_rows(x, ldx, out, 127.0f, 1); }
