/* Per-tensor quantization sensitivity (KL on a calibration sequence); see quant_sens.h. */
#include "engine/quant_sens.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kv_pool.h"
#include "tensor/mlx_quant.h"

hr_err *hr_model_logits_all(hr_model *m, const int32_t *tokens, int n, float *logits) {
    hr_kv_pool pool;
    HR_TRY(hr_kv_pool_create(&pool, m, (n + 15) / 16 + 1, 16));
    hr_kv_seq seq = {0};
    hr_err *err = hr_kv_seq_reserve(&pool, &seq, n);
    hr_row row = {tokens, n, 0, seq.blocks, HR_LOGITS_ALL, 0};
    if (!err) err = hr_model_forward(m, &pool.store, &row, 1, logits);
    hr_kv_seq_release(&pool, &seq);
    hr_kv_pool_destroy(&pool);
    return err;
}

/* log-softmax of x[V] into out. */
static void log_softmax(const float *x, int V, double *out) {
    double mx = -INFINITY, s = 0;
    for (int i = 0; i < V; i++)
        mx = fmax(mx, x[i]);
    for (int i = 0; i < V; i++)
        s += exp(x[i] - mx);
    double l = mx + log(s);
    for (int i = 0; i < V; i++)
        out[i] = x[i] - l;
}

double hr_mean_kl(const float *ref, const float *q, int n, int V) {
    double *a = malloc(sizeof(double) * 2 * (size_t)V), kl = 0;
    if (!a) return NAN;
    for (int t = 0; t < n; t++) {
        log_softmax(ref + (size_t)t * V, V, a);
        log_softmax(q + (size_t)t * V, V, a + V);
        for (int i = 0; i < V; i++)
            kl += exp(a[i]) * (a[i] - a[V + i]);
    }
    free(a);
    return kl / n;
}

/* The KL with weight w (entry e's uploaded tensor) replaced by its round trip at `bits`. */
static hr_err *measure(hr_model *m, hr_tensor *w, const hr_qplan_entry *e, int bits,
                       const int32_t *tok, int n, const float *ref, float *logits, float *buf,
                       double *kl) {
    const hr_tensor *src = w;
    float *row = malloc(sizeof(float) * (size_t)e->cols);
    if (!row) return hr_err_oom();
    for (int64_t r = 0; r < e->rows; r++) {
        for (int64_t k = 0; k < e->cols; k++)
            row[k] = hr_mlx_companion(src, r * e->cols + k);
        hr_mlx_fake_quant(row, e->cols, bits, e->group, e->dtype, buf + r * e->cols);
    }
    free(row);
    hr_tensor saved = *w;
    w->data = buf;
    w->dtype = HR_F32;
    w->row_tile = 0; /* buf is row-major */
    hr_err *err = hr_model_logits_all(m, tok, n, logits);
    *w = saved;
    *kl = err ? 0 : hr_mean_kl(ref, logits, n, hr_model_cfg(m)->vocab);
    return err;
}

/* Entries not measured get the mean of the measured ones, level by level. */
static void fill_unmeasured(const hr_qplan *p, const char *measured, double *sens) {
    for (int k = 0; k < HR_QPLAN_LEVELS; k++) {
        double s = 0;
        int c = 0;
        for (int i = 0; i < p->n; i++)
            if (measured[i]) s += sens[(size_t)i * HR_QPLAN_LEVELS + k], c++;
        for (int i = 0; i < p->n; i++)
            if (!measured[i] && p->e[i].candidate)
                sens[(size_t)i * HR_QPLAN_LEVELS + k] = c ? s / c : 0;
    }
}

hr_err *hr_quant_sensitivity(hr_model *m, const hr_qplan *p, const int32_t *tokens, int n,
                             int progress, double *sens) {
    int V = hr_model_cfg(m)->vocab, total = 0, done = 0;
    int64_t biggest = 0;
    for (int i = 0; i < p->n; i++)
        if (p->e[i].candidate && !p->e[i].fixed) {
            total++;
            if (p->e[i].rows * p->e[i].cols > biggest) biggest = p->e[i].rows * p->e[i].cols;
        }
    float *ref = malloc(sizeof(float) * 2 * (size_t)n * V),
          *buf = malloc(sizeof(float) * (size_t)biggest + 1);
    char *measured = calloc((size_t)p->n + 1, 1);
    hr_err *err = ref && buf && measured ? hr_model_logits_all(m, tokens, n, ref) : hr_err_oom();
    memset(sens, 0, sizeof(double) * (size_t)p->n * HR_QPLAN_LEVELS);
    for (int i = 0; i < p->n && !err; i++) {
        const hr_qplan_entry *e = &p->e[i];
        if (!e->candidate || e->fixed) continue;
        hr_tensor *w = hr_model_weight_dev(m, e->name);
        for (int k = 0; w && k < HR_QPLAN_LEVELS && !err; k++)
            err = measure(m, w, e, hr_qplan_levels[k], tokens, n, ref, ref + (size_t)n * V, buf,
                          &sens[(size_t)i * HR_QPLAN_LEVELS + k]);
        measured[i] = w != NULL;
        if (progress) fprintf(stderr, "\rsensitivity: %d/%d tensors", ++done, total);
    }
    if (progress) fputc('\n', stderr);
    if (!err) fill_unmeasured(p, measured, sens);
    free(ref);
    free(buf);
    free(measured);
    return err;
}
