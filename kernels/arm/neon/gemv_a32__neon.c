/* f32-activation gemv (W4A32: w4s, w4a, q4_0; W8A32: w8s, q8_0) on the plain
 * weight layout, Armv8.0 ASIMD. Weight rows four at a time against one
 * activation row: codes widen to f32 and meet x in FMLA chains, one per row;
 * each group's sum is scaled once: y += s·Σ q·x, and for w4a
 * y += m·Σx + d·Σ q·x (Σx shared by the four rows). The low and high
 * nibbles of the plain int4 layout (elements 2i, 2i+1) meet x split by LD2
 * into even and odd elements. A group tail (g = K only) runs in scalar f32. */
#if !defined(__aarch64__) || !defined(__ARM_NEON)
#error "this file needs the neon tier's flags"
#endif
#include "arm/neon/neon_common.h"

#define QK_AI static inline __attribute__((always_inline))

/* acc += Σ c·x for 16 codes (as f32 vectors) and 16 activations */
QK_AI float32x4_t fma16(float32x4_t acc, const float32x4_t c[4], const float32x4_t x[4]) {
    acc = vfmaq_f32(acc, c[0], x[0]);
    acc = vfmaq_f32(acc, c[1], x[1]);
    acc = vfmaq_f32(acc, c[2], x[2]);
    return vfmaq_f32(acc, c[3], x[3]);
}

QK_AI void a32_rows(const qk_matmul_args *a, size_t n, const int R, const qk_format f) {
    const qk_qmat *w = a->w;
    const size_t g = a->group, ng = a->K / g;
    const float *x = a->x;
    const uint8_t *row[4];
    for (int r = 0; r < R; r++) row[r] = w->codes + (n + r) * w->row_bytes;
    const uint8x16_t mask = vdupq_n_u8(15);
    const int8x16_t eight = vdupq_n_s8(8);
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (size_t j = 0; j < ng; j++) {
        const float *xg = x + j * g;
        float32x4_t va[4], vx = vdupq_n_f32(0.0f);
        float tail[4] = {0.0f, 0.0f, 0.0f, 0.0f}, xtail = 0.0f;
        for (int r = 0; r < R; r++) va[r] = vdupq_n_f32(0.0f);
        size_t i = 0;
        if (f == QK_W4S || f == QK_W4A) {
            for (; i + 32 <= g; i += 32) {
                float32x4x2_t p0 = vld2q_f32(xg + i), p1 = vld2q_f32(xg + i + 8), p2 = vld2q_f32(xg + i + 16),
                              p3 = vld2q_f32(xg + i + 24);
                const float32x4_t xe[4] = {p0.val[0], p1.val[0], p2.val[0], p3.val[0]};
                const float32x4_t xo[4] = {p0.val[1], p1.val[1], p2.val[1], p3.val[1]};
                if (f == QK_W4A)
                    vx = vaddq_f32(vx, vaddq_f32(vaddq_f32(vaddq_f32(xe[0], xo[0]), vaddq_f32(xe[1], xo[1])),
                                                 vaddq_f32(vaddq_f32(xe[2], xo[2]), vaddq_f32(xe[3], xo[3]))));
                for (int r = 0; r < R; r++) {
                    uint8x16_t b = vld1q_u8(row[r] + (j * g + i) / 2);
                    float32x4_t cl[4], ch[4];
                    if (f == QK_W4S) {
                        qk_neon_s8_to_f32(vsubq_s8(vreinterpretq_s8_u8(vandq_u8(b, mask)), eight), cl);
                        qk_neon_s8_to_f32(vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(b, 4)), eight), ch);
                    } else {
                        qk_neon_u8_to_f32(vandq_u8(b, mask), cl);
                        qk_neon_u8_to_f32(vshrq_n_u8(b, 4), ch);
                    }
                    va[r] = fma16(fma16(va[r], cl, xe), ch, xo);
                }
            }
        } else if (f == QK_W8S) {
            for (; i + 16 <= g; i += 16) {
                const float32x4_t xv[4] = {vld1q_f32(xg + i), vld1q_f32(xg + i + 4), vld1q_f32(xg + i + 8), vld1q_f32(xg + i + 12)};
                for (int r = 0; r < R; r++) {
                    float32x4_t c[4];
                    qk_neon_s8_to_f32(vld1q_s8((const int8_t *)row[r] + j * g + i), c);
                    va[r] = fma16(va[r], c, xv);
                }
            }
        } else { /* q4_0, q8_0: one 32-block per group */
            const float32x4_t x0[4] = {vld1q_f32(xg), vld1q_f32(xg + 4), vld1q_f32(xg + 8), vld1q_f32(xg + 12)};
            const float32x4_t x1[4] = {vld1q_f32(xg + 16), vld1q_f32(xg + 20), vld1q_f32(xg + 24), vld1q_f32(xg + 28)};
            for (int r = 0; r < R; r++) {
                float32x4_t c0[4], c1[4];
                if (f == QK_Q4_0) {
                    uint8x16_t b = vld1q_u8(row[r] + j * QK_Q4_0_BYTES + 2);
                    qk_neon_s8_to_f32(vsubq_s8(vreinterpretq_s8_u8(vandq_u8(b, mask)), eight), c0);
                    qk_neon_s8_to_f32(vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(b, 4)), eight), c1);
                } else {
                    const int8_t *c = (const int8_t *)row[r] + j * QK_Q8_0_BYTES + 2;
                    qk_neon_s8_to_f32(vld1q_s8(c), c0);
                    qk_neon_s8_to_f32(vld1q_s8(c + 16), c1);
                }
                va[r] = fma16(fma16(va[r], c0, x0), c1, x1);
            }
            i = g;
        }
        for (; i < g; i++) {
            xtail += xg[i];
            for (int r = 0; r < R; r++) tail[r] += (float)qk_row_code(row[r], f, j * g + i) * xg[i];
        }
        float xsum = f == QK_W4A ? vaddvq_f32(vx) + xtail : 0.0f;
        for (int r = 0; r < R; r++) {
            float dot = vaddvq_f32(va[r]) + tail[r];
            size_t si = (n + r) * ng + j;
            if (f == QK_W4A) {
                float d = qk_load_scale(w->scales, si, w->scale_type), mw = qk_load_scale(w->mins, si, w->scale_type);
                acc[r] += mw * xsum + d * dot;
            } else {
                float s;
                if (f == QK_Q4_0) s = qk_h2f(qk_rd16(row[r] + j * QK_Q4_0_BYTES));
                else if (f == QK_Q8_0) s = qk_h2f(qk_rd16(row[r] + j * QK_Q8_0_BYTES));
                else s = qk_load_scale(w->scales, si, w->scale_type);
                acc[r] += s * dot;
            }
        }
    }
    for (int r = 0; r < R; r++) a->y[n + r] = acc[r];
}

QK_AI void a32_gemv(const qk_matmul_args *a, const qk_format f) {
    size_t n = 0;
    for (; n + 4 <= a->N; n += 4) a32_rows(a, n, 4, f);
    switch (a->N - n) {
    case 3: a32_rows(a, n, 3, f); break;
    case 2: a32_rows(a, n, 2, f); break;
    case 1: a32_rows(a, n, 1, f); break;
    default: break;
    }
}

void qk_gemv_w4s_a32__neon(const qk_matmul_args *a) { a32_gemv(a, QK_W4S); }
void qk_gemv_w4a_a32__neon(const qk_matmul_args *a) { a32_gemv(a, QK_W4A); }
void qk_gemv_q4_0_a32__neon(const qk_matmul_args *a) { a32_gemv(a, QK_Q4_0); }
void qk_gemv_w8s_a32__neon(const qk_matmul_args *a) { a32_gemv(a, QK_W8S); }
void qk_gemv_q8_0_a32__neon(const qk_matmul_args *a) { a32_gemv(a, QK_Q8_0); }
