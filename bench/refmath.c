/* Exact math (refmath.h): double accumulation over f32 or exactly
 * dequantized operands. */
#include "refmath.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static inline double h2d(uint16_t h) { return (double)qk_fp16_to_fp32(h); }

void qk_rows_get(const qk_rows *w, size_t n, size_t K, double *out) {
    if (!w->qm) {
        const float *r = w->f32 + n * w->ld;
        for (size_t k = 0; k < K; k++) out[k] = r[k];
        return;
    }
    const qk_qmat *m = w->qm;
    const uint8_t *row = m->codes + n * m->row_bytes;
    size_t g = m->group, ng = K / g;
    switch (m->format) {
    case QK_W4S:
    case QK_W4A:
        for (size_t j = 0; j < ng; j++) {
            double s = qk_qmat_scale(m, n, j), mn = qk_qmat_min(m, n, j);
            int off = m->format == QK_W4S ? 8 : 0;
            for (size_t i = 0; i < g; i++) {
                size_t k = j * g + i;
                int q = ((row[k / 2] >> (4 * (k & 1))) & 15) - off;
                out[k] = m->format == QK_W4S ? s * q : mn + s * q;
            }
        }
        break;
    case QK_W8S:
        for (size_t j = 0; j < ng; j++) {
            double s = qk_qmat_scale(m, n, j);
            for (size_t i = 0; i < g; i++) out[j * g + i] = s * (int8_t)row[j * g + i];
        }
        break;
    case QK_Q4_0:
        for (size_t j = 0; j < K / 32; j++) {
            const uint8_t *b = row + j * 18;
            double d = h2d((uint16_t)(b[0] | b[1] << 8));
            for (size_t i = 0; i < 16; i++) {
                out[j * 32 + i] = d * ((b[2 + i] & 15) - 8);
                out[j * 32 + 16 + i] = d * ((b[2 + i] >> 4) - 8);
            }
        }
        break;
    case QK_Q8_0:
        for (size_t j = 0; j < K / 32; j++) {
            const uint8_t *b = row + j * 34;
            double d = h2d((uint16_t)(b[0] | b[1] << 8));
            for (size_t i = 0; i < 32; i++) out[j * 32 + i] = d * (int8_t)b[2 + i];
        }
        break;
    default: memset(out, 0, K * sizeof *out); break;
    }
}

void qk_x_from_f32(const float *x, size_t ldx, size_t M, size_t K, double *out) {
    for (size_t m = 0; m < M; m++)
        for (size_t k = 0; k < K; k++) out[m * K + k] = x[m * ldx + k];
}

void qk_x_from_qact(const qk_qact *a, size_t M, double *out) {
    size_t K = a->cols, g = a->group, ng = K / g;
    for (size_t m = 0; m < M; m++)
        for (size_t j = 0; j < ng; j++) {
            double s = a->scales[m * ng + j];
            for (size_t i = 0; i < g; i++) out[m * K + j * g + i] = s * a->codes[m * K + j * g + i];
        }
}

typedef struct job {
    const double *x;
    size_t M, K, N, n0, n1;
    const qk_rows *w;
    double *y, *abs_terms;
    int failed;
} job;

/* Four partial sums: double accumulation, in a fixed order. */
static void *run_job(void *p) {
    job *j = p;
    double *wr = malloc(j->K * sizeof *wr);
    if (!wr) {
        j->failed = 1;
        return NULL;
    }
    for (size_t n = j->n0; n < j->n1; n++) {
        qk_rows_get(j->w, n, j->K, wr);
        for (size_t m = 0; m < j->M; m++) {
            const double *xr = j->x + m * j->K;
            double s0 = 0, s1 = 0, s2 = 0, s3 = 0, a0 = 0, a1 = 0, a2 = 0, a3 = 0;
            size_t k = 0;
            for (; k + 4 <= j->K; k += 4) {
                double t0 = xr[k] * wr[k], t1 = xr[k + 1] * wr[k + 1], t2 = xr[k + 2] * wr[k + 2], t3 = xr[k + 3] * wr[k + 3];
                s0 += t0, s1 += t1, s2 += t2, s3 += t3;
                if (j->abs_terms) a0 += fabs(t0), a1 += fabs(t1), a2 += fabs(t2), a3 += fabs(t3);
            }
            for (; k < j->K; k++) {
                double t = xr[k] * wr[k];
                s0 += t;
                a0 += fabs(t);
            }
            j->y[m * j->N + n] = (s0 + s1) + (s2 + s3);
            if (j->abs_terms) j->abs_terms[m * j->N + n] = (a0 + a1) + (a2 + a3);
        }
    }
    free(wr);
    return NULL;
}

int qk_exact_matmul(const double *x, size_t M, size_t K, const qk_rows *w, size_t N, double *y, double *abs_terms,
                    int threads) {
    if (threads < 1) threads = 1;
    if ((size_t)threads > N) threads = N ? (int)N : 1;
    job jobs[16];
    pthread_t tid[16];
    int started[16] = {0};
    if (threads > 16) threads = 16;
    for (int t = 0; t < threads; t++) {
        jobs[t] = (job){x, M, K, N, N * (size_t)t / (size_t)threads, N * (size_t)(t + 1) / (size_t)threads, w, y, abs_terms, 0};
        if (t > 0) started[t] = pthread_create(&tid[t], NULL, run_job, &jobs[t]) == 0;
    }
    run_job(&jobs[0]);
    int failed = jobs[0].failed;
    for (int t = 1; t < threads; t++) {
        if (started[t]) pthread_join(tid[t], NULL);
        else run_job(&jobs[t]);
        failed |= jobs[t].failed;
    }
    return failed ? -1 : 0;
}

qk_status qk_actquant_reference(qk_act_rule rule, const float *x, size_t ldx, size_t M, size_t K, size_t group,
                                qk_qact *out) {
    const qk_actquant_kernel *k = NULL;
    for (size_t i = 0; i < qk_actquant_kernel_count; i++)
        if (qk_actquant_kernels[i].rule == rule && qk_actquant_kernels[i].tier == QK_TIER_SCALAR) k = &qk_actquant_kernels[i];
    qk_status s = qk_qact_alloc(out, rule, M, K, group);
    if (s) return s;
    if (!k) {
        qk_qact_free(out);
        return QK_ERR_UNSUPPORTED;
    }
    s = qk_actquant_with(k, x, ldx, out);
    if (s) qk_qact_free(out);
    return s;
}

const qk_quantize_kernel *qk_reference_quantize(qk_format f) {
    for (size_t i = 0; i < qk_quantize_kernel_count; i++)
        if (qk_quantize_kernels[i].format == f && qk_quantize_kernels[i].tier == QK_TIER_SCALAR) return &qk_quantize_kernels[i];
    return NULL;
}

int qk_acc_threads(void) {
    const char *e = getenv("QK_ACC_THREADS");
    long n = e && *e ? strtol(e, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    if (n > 8) n = 8;
    return (int)n;
}
