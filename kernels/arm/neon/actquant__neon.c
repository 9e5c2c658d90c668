/* Activation quantization, Armv8.0 ASIMD: bit-exact with
 * kernels/ref/actquant_scalar.c, codes, scales and per-group code sums
 * included. 16 values per step; a group whose length is not a multiple of 16
 * (g = K only) finishes with the reference's scalar expressions. */
#if !defined(__aarch64__) || !defined(__ARM_NEON)
#error "this file needs the neon tier's flags"
#endif
#include "arm/neon/neon_common.h"

static inline int actquant_rows(const float *x, size_t ldx, const qk_qact *out, int qmax, int q8_0) {
    size_t K = out->cols, g = out->group, ng = K / g;
    const int8x16_t lo = vdupq_n_s8((int8_t)-qmax), hi = vdupq_n_s8((int8_t)qmax);
    const float fq = (float)qmax;
    int bad = 0;
    for (size_t r = 0; r < out->rows; r++)
        for (size_t j = 0; j < ng; j++) {
            const float *xg = x + r * ldx + j * g;
            int8_t *q = out->codes + r * K + j * g;
            float amax = qk_neon_absmax(xg, g);
            if (!isfinite(amax)) {
                bad |= QK_ROW_NONFINITE;
                memset(q, 0, g);
                out->scales[r * ng + j] = 0.0f;
                out->sums[r * ng + j] = 0;
                continue;
            }
            float s = amax / fq, id = qk_inv_scale(s);
            if (q8_0) {
                uint16_t h = qk_f2h(s);
                if ((h & 0x7c00u) == 0x7c00u) bad |= QK_ROW_RANGE;
                s = qk_h2f(h);
            }
            float32x4_t vid = vdupq_n_f32(id);
            int32x4_t vsum = vdupq_n_s32(0);
            size_t i = 0;
            for (; i + 16 <= g; i += 16) {
                int8x16_t c = qk_neon_round16(xg + i, vid, lo, hi);
                vst1q_s8(q + i, c);
                vsum = qk_neon_sum16(vsum, c);
            }
            int32_t sum = vaddvq_s32(vsum);
            for (; i < g; i++) {
                float v = qk_round_half_away(xg[i] * id);
                v = v < -fq ? -fq : v > fq ? fq : v;
                q[i] = (int8_t)v;
                sum += q[i];
            }
            out->scales[r * ng + j] = s;
            out->sums[r * ng + j] = sum;
        }
    return bad;
}

int qk_actquant_a8__neon(const float *x, size_t ldx, const qk_qact *out) { return actquant_rows(x, ldx, out, 127, 0); }
int qk_actquant_a4__neon(const float *x, size_t ldx, const qk_qact *out) { return actquant_rows(x, ldx, out, 7, 0); }
int qk_actquant_q8_0__neon(const float *x, size_t ldx, const qk_qact *out) { return actquant_rows(x, ldx, out, 127, 1); }
