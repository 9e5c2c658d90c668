/* Tables, CSV, JSON and SVG of the accuracy commands (acc_report.h). */
#include "acc_report.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json.h"

void acc_table_add(acc_table *t, const acc_row *r) {
    if (t->n == t->cap) {
        size_t nc = t->cap ? 2 * t->cap : 64;
        acc_row *p = realloc(t->r, nc * sizeof *p);
        if (!p) {
            t->oom = 1;
            return;
        }
        t->r = p, t->cap = nc;
    }
    t->r[t->n++] = *r;
}

void acc_table_free(acc_table *t) {
    free(t->r);
    memset(t, 0, sizeof *t);
}

/* "inf" or a number, in a fixed width. */
static const char *db(char *b, size_t n, double v, int w) {
    if (isinf(v) && v > 0) snprintf(b, n, "%*s", w, "inf");
    else if (isnan(v)) snprintf(b, n, "%*s", w, "-");
    else snprintf(b, n, "%*.2f", w, v);
    return b;
}

static const char *row_gstr(const acc_row *r, char *b, size_t n) {
    if (r->group == r->K && r->format != QK_Q4_0 && r->format != QK_Q8_0) snprintf(b, n, "K");
    else snprintf(b, n, "%zu", r->group);
    return b;
}

void acc_print_accuracy(FILE *f, const acc_table *t, size_t from) {
    char b1[32], b2[32], gs[16];
    /* weights: one line per (format, g) */
    fprintf(f, "\nweights (elementwise error of the quantized values; model = analytical SQNR of symmetric RTN on N(0,1)):\n");
    fprintf(f, "  %-5s %5s %6s %8s %8s %10s  %s\n", "fmt", "g", "bpw", "wSQNR", "model", "max|err|", "other tiers' quantizers and dequantizers");
    for (size_t i = from; i < t->n; i++) {
        const acc_row *r = &t->r[i];
        if (i > from && r->format == t->r[i - 1].format && r->group == t->r[i - 1].group) continue;
        int same = !strcmp(r->codes_check, "same") && !strcmp(r->deq_check, "same");
        fprintf(f, "  %-5s %5s %6.3f %s %s %10.3g  %s%s%s%s\n", qk_format_name(r->format), row_gstr(r, gs, sizeof gs), r->bpw,
                db(b1, sizeof b1, r->w_err.sqnr_db, 8), db(b2, sizeof b2, r->w_model_sqnr, 8), r->w_err.max_abs,
                same ? "same bytes as the scalar reference" : "quantize: ", same ? "" : r->codes_check, same ? "" : "; dequantize: ",
                same ? "" : r->deq_check);
    }
    fprintf(f, "\noutput y = X·Wᵀ. quantization error: exact math on the quantized values vs FP32 (the same for every tier);\n"
               "kernel error: the variant vs that exact math; ratio = max |Δ| / (u·Σ|terms|), u = 2^-24, bound 2·(K+16).\n");
    fprintf(f, "  %-5s %5s %-9s %-36s| %7s %9s %9s %8s %8s | %7s %8s %s\n", "fmt", "g", "mode", "variant", "ySQNR", "NMSE", "max|err|",
            "cos avg", "cos min", "kSQNR", "ratio", "");
    for (size_t i = from; i < t->n; i++) {
        const acc_row *r = &t->r[i];
        fprintf(f, "  %-5s %5s %-9s %-36s| %s %9.3e %9.3g %8.5f %8.5f | ", qk_format_name(r->format), row_gstr(r, gs, sizeof gs),
                qk_mode_name(r->mode), r->kernel->name, db(b1, sizeof b1, r->q_err.sqnr_db, 7), r->q_err.nmse, r->q_err.max_abs,
                r->q_err.cos_mean, r->q_err.cos_min);
        if (r->skip[0]) fprintf(f, "SKIP: %s\n", r->skip);
        else fprintf(f, "%s %8.2f %s\n", db(b2, sizeof b2, r->k_err.sqnr_db, 7), r->k_ratio, r->k_ok ? "ok" : "OUTSIDE THE ERROR MODEL");
    }
    int any = 0;
    for (size_t i = from; i < t->n; i++) any |= t->r[i].has_decomp;
    if (any) {
        fprintf(f, "\ndecomposition (NMSE of y vs FP32): e_W quantized W only, e_A quantized X only, e_WA both, κ = e_WA/(e_W + e_A);\n"
                   "n_W, n_A = elementwise NMSE of W and X; independent operands give e_WA ≈ n_W + n_A + n_W·n_A.\n");
        fprintf(f, "  %-5s %5s %-9s %10s %10s %10s %7s %10s %10s %12s  %s\n", "fmt", "g", "mode", "e_W", "e_A", "e_WA", "κ", "n_W", "n_A",
                "n_W+n_A+nn", "other tiers' activation quantizers");
        for (size_t i = from; i < t->n; i++) {
            const acc_row *r = &t->r[i];
            if (!r->has_decomp) continue;
            if (i > from && r->format == t->r[i - 1].format && r->group == t->r[i - 1].group && r->mode == t->r[i - 1].mode) continue;
            fprintf(f, "  %-5s %5s %-9s %10.3e %10.3e %10.3e %7.4f %10.3e %10.3e %12.3e  %s\n", qk_format_name(r->format),
                    row_gstr(r, gs, sizeof gs), qk_mode_name(r->mode), r->decomp.e_w, r->decomp.e_a, r->decomp.e_wa, r->decomp.kappa,
                    r->n_w, r->n_a, r->n_w + r->n_a + r->n_w * r->n_a,
                    !strcmp(r->act_check, "same") ? "same codes as the scalar reference" : r->act_check);
        }
    }
    any = 0;
    for (size_t i = from; i < t->n; i++) any |= t->r[i].has_head;
    if (any) {
        fprintf(f, "\noutput head (quantization error; logits divided by T for the KL):\n");
        fprintf(f, "  %-5s %5s %-9s %8s %7s %7s %7s %10s %10s %8s\n", "fmt", "g", "mode", "top1flip", "ret@5", "ret@10", "ret@20", "KL mean",
                "KL max", "T");
        for (size_t i = from; i < t->n; i++) {
            const acc_row *r = &t->r[i];
            if (!r->has_head) continue;
            if (i > from && r->format == t->r[i - 1].format && r->group == t->r[i - 1].group && r->mode == t->r[i - 1].mode) continue;
            fprintf(f, "  %-5s %5s %-9s %8.4f %7.4f %7.4f %7.4f %10.3e %10.3e %8.3g\n", qk_format_name(r->format),
                    row_gstr(r, gs, sizeof gs), qk_mode_name(r->mode), r->head.flip_rate, r->head.retention[0], r->head.retention[1],
                    r->head.retention[2], r->head.kl_mean, r->head.kl_max, r->temperature);
        }
    }
}

void acc_print_sweep(FILE *f, const acc_table *t, size_t from) {
    char b1[32], b2[32], gs[16];
    fprintf(f, "  %-5s %4s %6s %-9s %-36s %-10s %10s %8s %8s %8s %8s %8s\n", "fmt", "g", "bpw", "mode", "variant", "tier", "time us",
            "GB/s", "GOP/s", "wSQNR", "ySQNR", "k.ratio");
    for (size_t i = from; i < t->n; i++) {
        const acc_row *r = &t->r[i];
        fprintf(f, "  %-5s %4s %6.3f %-9s %-36s %-10s ", qk_format_name(r->format), row_gstr(r, gs, sizeof gs), r->bpw, qk_mode_name(r->mode),
                r->kernel->name, qk_tier_name(r->kernel->tier));
        if (r->skip[0]) {
            fprintf(f, "SKIP: %s\n", r->skip);
            continue;
        }
        if (r->timed) fprintf(f, "%10.1f %8.2f %8.2f ", r->t_median * 1e6, r->gbps, r->gops);
        else fprintf(f, "%10s %8s %8s ", "-", "-", "-");
        fprintf(f, "%s %s %8.2f%s\n", db(b1, sizeof b1, r->w_err.sqnr_db, 8), db(b2, sizeof b2, r->q_err.sqnr_db, 8), r->k_ratio,
                r->k_ok ? "" : " OUTSIDE THE ERROR MODEL");
    }
}

/* ---- CSV / JSON ---- */

static void csv_num(qkb_buf *b, double v) {
    if (isnan(v)) qkb_buf_puts(b, ",");
    else if (isinf(v)) qkb_buf_puts(b, v > 0 ? ",inf" : ",-inf");
    else qkb_buf_printf(b, ",%.6g", v);
}

static void csv_str(qkb_buf *b, const char *s, int first) {
    if (!first) qkb_buf_puts(b, ",");
    int quote = strpbrk(s, ",\"\n") != NULL;
    if (!quote) {
        qkb_buf_puts(b, s);
        return;
    }
    qkb_buf_puts(b, "\"");
    for (; *s; s++) qkb_buf_putn(b, *s == '"' ? "\"\"" : s, *s == '"' ? 2 : 1);
    qkb_buf_puts(b, "\"");
}

char *acc_csv(const acc_table *t) {
    qkb_buf b = {0};
    qkb_buf_puts(&b, "layer,M,N,K,format,group,scales,bpw,mode,kernel,tier,op,status,w_sqnr_db,w_model_sqnr_db,w_nmse,w_max_abs,codes,dequant,act_codes,"
                     "q_sqnr_db,q_nmse,q_max_abs,q_cos_mean,q_cos_min,k_sqnr_db,k_nmse,k_max_abs,k_ratio,k_bound,k_ok,"
                     "e_w,e_a,e_wa,kappa,n_w,n_a,head_T,top1_flip,ret5,ret10,ret20,kl_mean,kl_max,"
                     "t_median_s,t_min_s,reps,gbps,gops\n");
    for (size_t i = 0; i < t->n; i++) {
        const acc_row *r = &t->r[i];
        csv_str(&b, r->layer, 1);
        qkb_buf_printf(&b, ",%zu,%zu,%zu,%s,%zu,%s", r->M, r->N, r->K, qk_format_name(r->format), r->group,
                       r->scales == QK_SCALE_F16 ? "f16" : "f32");
        csv_num(&b, r->bpw);
        qkb_buf_printf(&b, ",%s,%s,%s,%s", qk_mode_name(r->mode), r->kernel->name, qk_tier_name(r->kernel->tier),
                       r->kernel->op == QK_OP_GEMV ? "gemv" : "gemm");
        csv_str(&b, r->skip[0] ? r->skip : "ok", 0);
        csv_num(&b, r->w_err.sqnr_db), csv_num(&b, r->w_model_sqnr), csv_num(&b, r->w_err.nmse), csv_num(&b, r->w_err.max_abs);
        csv_str(&b, r->codes_check, 0);
        csv_str(&b, r->deq_check, 0);
        csv_str(&b, r->act_check, 0);
        csv_num(&b, r->q_err.sqnr_db), csv_num(&b, r->q_err.nmse), csv_num(&b, r->q_err.max_abs), csv_num(&b, r->q_err.cos_mean);
        csv_num(&b, r->q_err.cos_min);
        int ran = !r->skip[0];
        csv_num(&b, ran ? r->k_err.sqnr_db : NAN), csv_num(&b, ran ? r->k_err.nmse : NAN), csv_num(&b, ran ? r->k_err.max_abs : NAN);
        csv_num(&b, ran ? r->k_ratio : NAN), csv_num(&b, r->k_bound);
        qkb_buf_printf(&b, ",%s", ran ? (r->k_ok ? "1" : "0") : "");
        double nd = NAN;
        csv_num(&b, r->has_decomp ? r->decomp.e_w : nd), csv_num(&b, r->has_decomp ? r->decomp.e_a : nd);
        csv_num(&b, r->has_decomp ? r->decomp.e_wa : nd), csv_num(&b, r->has_decomp ? r->decomp.kappa : nd);
        csv_num(&b, r->n_w), csv_num(&b, r->has_decomp ? r->n_a : nd);
        csv_num(&b, r->has_head ? r->temperature : nd), csv_num(&b, r->has_head ? r->head.flip_rate : nd);
        for (int k = 0; k < QK_HEAD_NK; k++) csv_num(&b, r->has_head ? r->head.retention[k] : nd);
        csv_num(&b, r->has_head ? r->head.kl_mean : nd), csv_num(&b, r->has_head ? r->head.kl_max : nd);
        csv_num(&b, r->timed ? r->t_median : nd), csv_num(&b, r->timed ? r->t_min : nd);
        if (r->timed) qkb_buf_printf(&b, ",%d", r->reps);
        else qkb_buf_puts(&b, ",");
        csv_num(&b, r->timed ? r->gbps : nd), csv_num(&b, r->timed ? r->gops : nd);
        qkb_buf_puts(&b, "\n");
    }
    return qkb_buf_take(&b);
}

static void jerr(qkw *w, const char *key, const qk_err *e) {
    qkw_key(w, key);
    qkw_obj(w);
    qkw_knum(w, "sqnr_db", e->sqnr_db);
    qkw_knum(w, "nmse", e->nmse);
    qkw_knum(w, "max_abs", e->max_abs);
    qkw_knum(w, "cos_mean", e->cos_mean);
    qkw_knum(w, "cos_min", e->cos_min);
    qkw_end_obj(w);
}

char *acc_json(const acc_table *t, const acc_meta *m) {
    qkb_buf b = {0};
    qkw w;
    qkw_init(&w, &b);
    qkw_obj(&w);
    qkw_kstr(&w, "command", m->command);
    qkw_kint(&w, "seed", (long long)m->seed);
    qkw_kstr(&w, "weights", m->weights);
    qkw_kstr(&w, "activations", m->acts);
    char brand[80];
    snprintf(brand, sizeof brand, "%s", qk_cpu()->brand);
    for (size_t k = strlen(brand); k && brand[k - 1] == ' '; k--) brand[k - 1] = 0;
    qkw_kstr(&w, "cpu", brand);
    qkw_kstr(&w, "tier_cap", qk_tier_name(qk_tier_cap()));
    qkw_kstr(&w, "reference", "FP32 inputs, double accumulation");
    qkw_kstr(&w, "quantization_error", "exact double math on the quantized values (scalar reference codes) vs the FP32 reference");
    qkw_kstr(&w, "kernel_error", "the variant's output vs that exact math; ratio = max|diff| / (2^-24 * sum|terms|)");
    if (m->timing) qkw_kstr(&w, "timing", m->timing);
    qkw_key(&w, "rows");
    qkw_arr(&w);
    for (size_t i = 0; i < t->n; i++) {
        const acc_row *r = &t->r[i];
        qkw_obj(&w);
        qkw_kstr(&w, "layer", r->layer);
        qkw_kint(&w, "M", (long long)r->M), qkw_kint(&w, "N", (long long)r->N), qkw_kint(&w, "K", (long long)r->K);
        qkw_kstr(&w, "format", qk_format_name(r->format));
        qkw_kint(&w, "group", (long long)r->group);
        qkw_kstr(&w, "scales", r->scales == QK_SCALE_F16 ? "f16" : "f32");
        qkw_knum(&w, "bpw", r->bpw);
        qkw_kstr(&w, "mode", qk_mode_name(r->mode));
        qkw_kstr(&w, "kernel", r->kernel->name);
        qkw_kstr(&w, "tier", qk_tier_name(r->kernel->tier));
        qkw_kstr(&w, "op", r->kernel->op == QK_OP_GEMV ? "gemv" : "gemm");
        qkw_kstr(&w, "status", r->skip[0] ? r->skip : "ok");
        jerr(&w, "weights", &r->w_err);
        qkw_knum(&w, "weights_model_sqnr_db", r->w_model_sqnr);
        qkw_kstr(&w, "codes", r->codes_check);
        qkw_kstr(&w, "dequantized", r->deq_check);
        if (r->act_check[0]) qkw_kstr(&w, "activation_codes", r->act_check);
        jerr(&w, "quantization_error", &r->q_err);
        if (!r->skip[0]) {
            jerr(&w, "kernel_error", &r->k_err);
            qkw_knum(&w, "kernel_ratio", r->k_ratio);
            qkw_knum(&w, "kernel_bound", r->k_bound);
            qkw_kbool(&w, "kernel_ok", r->k_ok);
        }
        if (r->has_decomp) {
            qkw_key(&w, "decomposition");
            qkw_obj(&w);
            qkw_knum(&w, "e_w", r->decomp.e_w), qkw_knum(&w, "e_a", r->decomp.e_a), qkw_knum(&w, "e_wa", r->decomp.e_wa);
            qkw_knum(&w, "kappa", r->decomp.kappa), qkw_knum(&w, "n_w", r->n_w), qkw_knum(&w, "n_a", r->n_a);
            qkw_end_obj(&w);
        }
        if (r->has_head) {
            qkw_key(&w, "head");
            qkw_obj(&w);
            qkw_knum(&w, "temperature", r->temperature);
            qkw_knum(&w, "top1_flip_rate", r->head.flip_rate);
            for (int k = 0; k < QK_HEAD_NK; k++) {
                char key[32];
                snprintf(key, sizeof key, "top%d_retention", qk_head_k[k]);
                qkw_knum(&w, key, r->head.retention[k]);
            }
            qkw_knum(&w, "kl_mean", r->head.kl_mean), qkw_knum(&w, "kl_max", r->head.kl_max);
            qkw_end_obj(&w);
        }
        if (r->timed) {
            qkw_knum(&w, "time_median_s", r->t_median), qkw_knum(&w, "time_min_s", r->t_min);
            qkw_kint(&w, "repetitions", r->reps);
            qkw_knum(&w, "gbps", r->gbps), qkw_knum(&w, "gops", r->gops);
        }
        qkw_end_obj(&w);
    }
    qkw_end_arr(&w);
    qkw_end_obj(&w);
    qkb_buf_puts(&b, "\n");
    return qkb_buf_take(&b);
}

/* ---- SVG: output SQNR against bpw, one point per (format, g, mode) ---- */

/* s with &, <, >, " escaped and surrounding blanks trimmed, into out. */
static const char *xml(const char *s, char *out, size_t n) {
    size_t k = 0;
    while (*s == ' ') s++;
    for (; *s && k + 7 < n; s++) {
        const char *e = *s == '&' ? "&amp;" : *s == '<' ? "&lt;" : *s == '>' ? "&gt;" : *s == '"' ? "&quot;" : NULL;
        if (e) k += (size_t)snprintf(out + k, n - k, "%s", e);
        else out[k++] = *s;
    }
    while (k && out[k - 1] == ' ') k--;
    out[k] = 0;
    return out;
}

static const char *const mode_colour[QK_MODE_COUNT] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2"};

char *acc_svg(const acc_table *t, const acc_meta *m) {
    qkb_buf b = {0};
    const double W = 900, H = 560, L = 70, R = 200, T = 50, B = 60;
    double xmin = 1e9, xmax = -1e9, ymin = 1e9, ymax = -1e9, gmax = 0;
    for (size_t i = 0; i < t->n; i++) {
        const acc_row *r = &t->r[i];
        if (!isfinite(r->q_err.sqnr_db)) continue;
        xmin = fmin(xmin, r->bpw), xmax = fmax(xmax, r->bpw);
        ymin = fmin(ymin, r->q_err.sqnr_db), ymax = fmax(ymax, r->q_err.sqnr_db);
        if (r->timed && !r->skip[0]) gmax = fmax(gmax, r->gbps);
    }
    if (xmin > xmax) xmin = 0, xmax = 1, ymin = 0, ymax = 1;
    xmin = floor(xmin) - 0.5, xmax = ceil(xmax) + 0.5;
    ymin = 5 * floor(ymin / 5) - 5, ymax = 5 * ceil(ymax / 5) + 5;
#define PX(v) (L + ((v) - xmin) / (xmax - xmin) * (W - L - R))
#define PY(v) (H - B - ((v) - ymin) / (ymax - ymin) * (H - T - B))
    qkb_buf_printf(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" font-size=\"12\">\n", W, H);
    qkb_buf_printf(&b, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    char e1[256], e2[512], e3[512];
    qkb_buf_printf(&b, "<text x=\"%.0f\" y=\"24\" font-size=\"15\">qkbench %s: output SQNR against bits per weight (%s)</text>\n", L,
                   m->command, xml(m->cpu ? m->cpu : qk_cpu()->brand, e1, sizeof e1));
    qkb_buf_printf(&b, "<text x=\"%.0f\" y=\"40\" fill=\"#555\">weights %s; activations %s; seed %llu</text>\n", L,
                   xml(m->weights, e2, sizeof e2), xml(m->acts, e3, sizeof e3), (unsigned long long)m->seed);
    for (double x = ceil(xmin); x <= xmax; x += 1) {
        qkb_buf_printf(&b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", PX(x), PY(ymin), PX(x), PY(ymax));
        qkb_buf_printf(&b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.0f</text>\n", PX(x), H - B + 18, x);
    }
    for (double y = ymin; y <= ymax; y += 5) {
        qkb_buf_printf(&b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", PX(xmin), PY(y), PX(xmax), PY(y));
        qkb_buf_printf(&b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.0f</text>\n", L - 6, PY(y) + 4, y);
    }
    qkb_buf_printf(&b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">bits per weight</text>\n", (L + W - R) / 2, H - 20);
    qkb_buf_printf(&b, "<text transform=\"translate(20,%.1f) rotate(-90)\" text-anchor=\"middle\">output SQNR (dB), quantization error</text>\n",
                   (T + H - B) / 2);
    /* one point per (format, g, mode): its fastest variant sets the area */
    for (size_t i = 0; i < t->n; i++) {
        const acc_row *r = &t->r[i];
        if (!isfinite(r->q_err.sqnr_db)) continue;
        if (i > 0 && r->format == t->r[i - 1].format && r->group == t->r[i - 1].group && r->mode == t->r[i - 1].mode &&
            !strcmp(r->layer, t->r[i - 1].layer))
            continue;
        double best = 0;
        for (size_t j = i; j < t->n && t->r[j].format == r->format && t->r[j].group == r->group && t->r[j].mode == r->mode; j++)
            if (t->r[j].timed && !t->r[j].skip[0]) best = fmax(best, t->r[j].gbps);
        double rad = gmax > 0 ? 3 + 14 * sqrt(best / gmax) : 5;
        char gs[16];
        qkb_buf_printf(&b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\" fill-opacity=\"0.55\" stroke=\"%s\"><title>%s g=%s %s: %.2f dB, %.2f GB/s</title></circle>\n",
                       PX(r->bpw), PY(r->q_err.sqnr_db), rad, mode_colour[r->mode], mode_colour[r->mode], qk_format_name(r->format),
                       row_gstr(r, gs, sizeof gs), qk_mode_name(r->mode), r->q_err.sqnr_db, best);
        qkb_buf_printf(&b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"9\" fill=\"#333\">%s/%s</text>\n", PX(r->bpw) + rad + 2, PY(r->q_err.sqnr_db) + 3,
                       qk_format_name(r->format), row_gstr(r, gs, sizeof gs));
    }
    double lx = W - R + 20, ly = T + 10;
    qkb_buf_printf(&b, "<text x=\"%.1f\" y=\"%.1f\" font-weight=\"bold\">compute mode</text>\n", lx, ly);
    for (int md = 0; md < QK_MODE_COUNT; md++) {
        ly += 18;
        qkb_buf_printf(&b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"6\" fill=\"%s\" fill-opacity=\"0.55\" stroke=\"%s\"/><text x=\"%.1f\" y=\"%.1f\">%s</text>\n",
                       lx + 6, ly - 4, mode_colour[md], mode_colour[md], lx + 18, ly, qk_mode_name((qk_mode)md));
    }
    ly += 30;
    if (gmax > 0) {
        qkb_buf_printf(&b, "<text x=\"%.1f\" y=\"%.1f\" font-weight=\"bold\">area: throughput</text>\n", lx, ly);
        qkb_buf_printf(&b, "<text x=\"%.1f\" y=\"%.1f\">(fastest variant; GB/s)</text>\n", lx, ly + 15);
        ly += 30;
        double vals[3] = {gmax, gmax / 4, gmax / 16};
        for (int k = 0; k < 3; k++) {
            double rad = 3 + 14 * sqrt(vals[k] / gmax);
            ly += 2 * rad + 6;
            qkb_buf_printf(&b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"#999\" fill-opacity=\"0.4\"/><text x=\"%.1f\" y=\"%.1f\">%.3g GB/s</text>\n",
                           lx + 17, ly - rad, rad, lx + 40, ly - rad + 4, vals[k]);
        }
    } else {
        qkb_buf_printf(&b, "<text x=\"%.1f\" y=\"%.1f\">(not timed)</text>\n", lx, ly);
    }
    qkb_buf_puts(&b, "</svg>\n");
#undef PX
#undef PY
    return qkb_buf_take(&b);
}

/* ---- files ---- */

int acc_mkdirs(const char *path, char *err, size_t errlen) {
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1;; p++) {
        if (*p == '/' || *p == 0) {
            char c = *p;
            *p = 0;
            if (mkdir(tmp, 0777) && errno != EEXIST) {
                snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
                return -1;
            }
            *p = c;
            if (!c) break;
        }
    }
    return 0;
}

/* path.tmp.<pid>, fsync, rename: a reader never sees half a file. */
static int write_atomic(const char *path, const char *text, char *err, size_t errlen) {
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    size_t n = strlen(text), off = 0;
    while (off < n) {
        ssize_t k = write(fd, text + off, n - off);
        if (k <= 0) {
            snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
            close(fd);
            unlink(tmp);
            return -1;
        }
        off += (size_t)k;
    }
    if (fsync(fd) || close(fd) || rename(tmp, path)) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

static int put(const char *path, char *text, char *err, size_t errlen) {
    if (!text) {
        snprintf(err, errlen, "out of memory writing %s", path);
        return -1;
    }
    int rc = write_atomic(path, text, err, errlen);
    free(text);
    return rc;
}

int acc_write_outputs(const acc_table *t, const acc_meta *m, const acc_opts *o, const char *base, int want_svg, char *err,
                      size_t errlen) {
    char p[1100];
    if (o->csv && put(o->csv, acc_csv(t), err, errlen)) return -1;
    if (o->json && put(o->json, acc_json(t, m), err, errlen)) return -1;
    if (o->svg && put(o->svg, acc_svg(t, m), err, errlen)) return -1;
    if (o->out) {
        if (acc_mkdirs(o->out, err, errlen)) return -1;
        snprintf(p, sizeof p, "%s/%s.csv", o->out, base);
        if (put(p, acc_csv(t), err, errlen)) return -1;
        snprintf(p, sizeof p, "%s/%s.json", o->out, base);
        if (put(p, acc_json(t, m), err, errlen)) return -1;
        if (want_svg) {
            snprintf(p, sizeof p, "%s/%s.svg", o->out, base);
            if (put(p, acc_svg(t, m), err, errlen)) return -1;
        }
    }
    return 0;
}
