/* Models with quantized matrices on the CPU backend: tiny-qwen3 with every 2-D weight
 * quantized (Q8_0, Q4_0, Q5_0, Q4_1) as it is uploaded, against the same model with those
 * weights quantized and dequantized back to f32 (equal where the type multiplies through
 * dequantized rows, within the measured 8-bit activation error where it has a dot), and the
 * same logits whatever the prefill chunking. Quantizing at upload stands in for a GGUF file
 * until the loader lands. */
#include "backend/cpu/qdot.h"
#include "engine/kv_pool.h"
#include "harness.h"
#include "model/model.h"
#include "tensor/quant.h"

enum { KEEP, QUANT, DEQUANT };
static int mode;
static hr_dtype qtype;
static hr_err *(*cpu_upload)(hr_backend *, const hr_tensor *, hr_tensor *);
static hr_backend_vt wrapped;
static void *bufs[256];
static int n_bufs, n_quantized;

static void *keep(size_t bytes) {
    void *p = malloc(bytes);
    if (p && n_bufs < 256)
        bufs[n_bufs++] = p;
    else
        free(p), p = NULL;
    return p;
}

/* Every 2-D tensor with rows of whole blocks goes up as qtype (QUANT) or as the f32 of its
 * qtype round trip (DEQUANT). */
static hr_err *quant_upload(hr_backend *be, const hr_tensor *host, hr_tensor *dev) {
    if (mode == KEEP || host->ndim != 2 || host->shape[1] % 32) return cpu_upload(be, host, dev);
    int64_t R = host->shape[0], K = host->shape[1];
    float *row = malloc(sizeof(float) * (size_t)K);
    hr_tensor t = *host;
    t.dtype = mode == QUANT ? qtype : HR_F32;
    t.data = keep(hr_tensor_bytes(&t));
    if (!row || !t.data) return hr_err_oom();
    size_t in_row = hr_dtype_bytes(host->dtype, K), q_row = hr_dtype_bytes(qtype, K);
    void *q = malloc(q_row);
    for (int64_t r = 0; r < R; r++) {
        hr_dequant_row(host->dtype, (const char *)host->data + r * in_row, row, K);
        hr_quant_row(qtype, row, q, K);
        if (mode == QUANT)
            memcpy((char *)t.data + r * q_row, q, q_row);
        else
            hr_dequant_row(qtype, q, (float *)t.data + r * K, K);
    }
    free(q);
    free(row);
    n_quantized += mode == QUANT;
    return cpu_upload(be, &t, dev);
}

static hr_err *load(int m, hr_dtype t, hr_backend **be, hr_model **model) {
    mode = m;
    qtype = t;
    n_quantized = 0;
    HR_TRY(hr_backend_cpu_create(&(hr_cpu_options){.n_threads = 2}, be));
    cpu_upload = (*be)->vt->upload;
    wrapped = *(*be)->vt;
    wrapped.upload = quant_upload;
    (*be)->vt = &wrapped;
    return hr_model_load(hr_fixture("models/tiny-qwen3"), *be, model);
}

/* Logits of every position of tokens[0..n), prefilled in chunks of `chunk`. */
static hr_err *run(hr_model *m, const int32_t *tok, int n, int chunk, float *logits) {
    int V = hr_model_cfg(m)->vocab;
    hr_kv_pool pool;
    HR_TRY(hr_kv_pool_create(&pool, m, n / 4 + 2, 4));
    hr_kv_seq seq = {0};
    hr_err *err = hr_kv_seq_reserve(&pool, &seq, n);
    for (int p = 0; p < n && !err; p += chunk) {
        int len = n - p < chunk ? n - p : chunk;
        hr_row row = {tok + p, len, p, seq.blocks, HR_LOGITS_ALL, 0};
        err = hr_model_forward(m, &pool.store, &row, 1, logits + (size_t)p * V);
    }
    hr_kv_seq_release(&pool, &seq);
    hr_kv_pool_destroy(&pool);
    return err;
}

static void free_model(hr_backend *be, hr_model *m) {
    hr_model_free(m);
    hr_backend_destroy(be);
}

enum { N_TOK = 19 };

/* max |a - b| over n floats, and the largest |b|. */
static float max_diff(const float *a, const float *b, size_t n, float *scale) {
    float d = 0;
    *scale = 0;
    for (size_t i = 0; i < n; i++) {
        d = fmaxf(d, fabsf(a[i] - b[i]));
        *scale = fmaxf(*scale, fabsf(b[i]));
    }
    return d;
}

static void check_type(hr_dtype t) {
    int32_t tok[N_TOK];
    for (int i = 0; i < N_TOK; i++)
        tok[i] = (i * 37 + 11) % 500;
    hr_backend *bq = NULL, *bf = NULL;
    hr_model *mq = NULL, *mf = NULL;
    HR_CHECK_OK(load(QUANT, t, &bq, &mq));
    int nq = n_quantized;
    int V = hr_model_cfg(mq)->vocab;
    size_t n = (size_t)N_TOK * V;
    float *lq = malloc(n * 4), *lc = malloc(n * 4), *lf = malloc(n * 4);
    hr_err *err = run(mq, tok, N_TOK, N_TOK, lq);
    if (!err) err = run(mq, tok, N_TOK, 3, lc);
    if (!err) err = load(DEQUANT, t, &bf, &mf);
    if (!err) err = run(mf, tok, N_TOK, N_TOK, lf);
    free_model(bf, mf);
    free_model(bq, mq);
    while (n_bufs)
        free(bufs[--n_bufs]);
    float scale, d = err ? 0 : max_diff(lq, lf, n, &scale);
    int same_chunks = err ? 0 : memcmp(lq, lc, n * 4) == 0;
    free(lq);
    free(lc);
    free(lf);
    HR_CHECK_OK(err);
    HR_CHECK(nq >= 3 * 7 + 1, "%s: %d matrices quantized", hr_dtype_name(t), nq);
    HR_CHECK(same_chunks, "%s: logits depend on the prefill chunking", hr_dtype_name(t));
    int q8 = hr_cpu_qdots_get()->dot[t] != NULL;
    if (q8)
        printf("  %s: max |logit - f32 twin| = %.3g (|logit| <= %.3g)\n", hr_dtype_name(t), d,
               scale);
    HR_CHECK(q8 ? d < 0.02f * scale : d == 0,
             "%s: quantized model differs from its dequantized f32 twin by %g (|logit| <= %g)",
             hr_dtype_name(t), d, scale);
}

static void test_q8_0_model(void) { check_type(HR_Q8_0); }
static void test_q4_0_model(void) { check_type(HR_Q4_0); }
static void test_q5_0_model(void) { check_type(HR_Q5_0); }
static void test_q4_1_model(void) { check_type(HR_Q4_1); }

int main(void) {
    HR_RUN(test_q8_0_model);
    HR_RUN(test_q4_0_model);
    HR_RUN(test_q5_0_model);
    HR_RUN(test_q4_1_model);
    return hr_test_summary();
}
