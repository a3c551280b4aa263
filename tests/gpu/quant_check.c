/* gpu_check's checks of GGUF-quantized weights on the CUDA backend (the GPU machine only).
 * Ops: for every block format the backend reads, random blocks (sane f16 scales) as a weight
 * of 4100 x 512, products with 1..4 rows (the quantized GEMV, f32 arithmetic: within 1e-5 of the
 * f64 product of hr_dequant_row's weights) and with 8 and 33 rows (decoded to f16 for cuBLAS:
 * within 2e-3). Models: brown-llama-8m-Q4_K_M.gguf's held-out NLL on the GPU, whole prompt and
 * one token at a time, against transformers' (fixtures/gguf/README.md), and
 * e2e-qwen3-Q8_0.gguf's last-position logits of its two cases against transformers'. Prints one
 * line per check, "ok" or "FAIL". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "base/json.h"
#include "engine/kv_pool.h"
#include "model/model.h"
#include "model/safetensors.h"
#include "tensor/quant.h"

void hr_gpu_quant_checks(const char *shared, int *failures);

enum { QN = 4100, QK = 512 }; /* past QGEMV_R_MIN_N, and not a multiple of a launch's rows */

static uint64_t qseed = 0x9e3779b97f4a7c15ull;

static uint32_t qrnd(void) {
    qseed ^= qseed << 13;
    qseed ^= qseed >> 7;
    qseed ^= qseed << 17;
    return (uint32_t)(qseed >> 16);
}

static float qrndf(void) { return (float)(qrnd() & 0xffffff) / 16777216.0f; }

/* Byte offsets of a block's f16 scale fields (-1 ends the list). */
static const int *scale_fields(hr_dtype t) {
    static const int at0[] = {0, -1}, at02[] = {0, 2, -1}, at208[] = {208, -1};
    switch (t) {
    case HR_Q8_0:
    case HR_Q4_0:
    case HR_Q5_0: return at0;
    case HR_Q6_K: return at208;
    default: return at02;
    }
}

/* Random blocks whose f16 scales are in [0.001, 0.05] (random bytes there could be inf/NaN). */
static void random_blocks(hr_dtype t, uint8_t *b, long n_blocks) {
    int bb = hr_dtype_get(t)->block_bytes;
    for (long i = 0; i < n_blocks * bb; i++)
        b[i] = (uint8_t)qrnd();
    for (long i = 0; i < n_blocks; i++)
        for (const int *f = scale_fields(t); *f >= 0; f++) {
            uint16_t h = hr_f32_to_f16(0.001f + 0.049f * qrndf());
            b[i * bb + *f] = (uint8_t)h;
            b[i * bb + *f + 1] = (uint8_t)(h >> 8);
        }
}

/* max |y - ref| / max |ref| for x[T, K] times the weight. */
static hr_err *product_err(hr_backend *be, const hr_tensor *dev, const float *w, int T,
                           double *err) {
    size_t xb = sizeof(float) * (size_t)T * QK, yb = sizeof(float) * (size_t)T * QN;
    float *x = malloc(xb), *y = malloc(yb);
    void *dx = NULL, *dy = NULL;
    hr_err *e = x && y ? NULL : hr_err_oom();
    for (size_t i = 0; !e && i < (size_t)T * QK; i++)
        x[i] = 2 * qrndf() - 1;
    if (!e) e = be->vt->alloc(be, xb, &dx);
    if (!e) e = be->vt->alloc(be, yb, &dy);
    if (!e) e = be->vt->write(be, dx, x, xb);
    if (!e) be->vt->matmul(be, dy, dx, dev, NULL, T);
    if (!e) e = be->vt->read(be, dy, y, yb);
    double mx = 0, mr = 0;
    for (int t = 0; !e && t < T; t++)
        for (int n = 0; n < QN; n++) {
            double r = 0;
            for (int k = 0; k < QK; k++)
                r += (double)x[t * QK + k] * w[n * QK + k];
            mx = fmax(mx, fabs(y[t * QN + n] - r));
            mr = fmax(mr, fabs(r));
        }
    *err = mr > 0 ? mx / mr : mx;
    if (dx) be->vt->free(be, dx);
    if (dy) be->vt->free(be, dy);
    free(x);
    free(y);
    return e;
}

static void check_format(hr_backend *be, hr_dtype t, int *failures) {
    long n_blocks = (long)QN * QK / hr_dtype_get(t)->block;
    uint8_t *blocks = malloc((size_t)n_blocks * (size_t)hr_dtype_get(t)->block_bytes);
    float *w = malloc(sizeof(float) * QN * QK);
    hr_tensor host = {.dtype = t, .ndim = 2, .shape = {QN, QK}, .data = blocks}, dev = {0};
    hr_err *e = blocks && w ? NULL : hr_err_oom();
    if (!e) {
        random_blocks(t, blocks, n_blocks);
        hr_dequant_row(t, blocks, w, (int64_t)QN * QK);
        e = be->vt->upload(be, &host, &dev);
    }
    static const int rows[] = {1, 2, 3, 4, 8, 33};
    for (size_t i = 0; !e && i < sizeof rows / sizeof *rows; i++) {
        double err;
        e = product_err(be, &dev, w, rows[i], &err);
        double tol = rows[i] <= 4 ? 1e-5 : 2e-3;
        if (e) break;
        int ok = err < tol;
        printf("%-18s %-22s %10s %10.2e %13s %s\n", hr_dtype_name(t),
               rows[i] <= 4 ? "qgemv" : "f16 gemm", "", err, "", ok ? "ok" : "FAIL");
        *failures += !ok;
    }
    if (e) {
        printf("%-18s %-22s FAIL: %s\n", hr_dtype_name(t), "products", hr_err_msg(e));
        hr_err_free(e);
        ++*failures;
    }
    if (dev.data) be->vt->release(be, &dev);
    free(blocks);
    free(w);
}

/* Logits of every position of tok[0..n) in chunks of `chunk` on m. */
static hr_err *run_chunks(hr_model *m, const int32_t *tok, int n, int chunk, float *logits) {
    hr_kv_pool pool;
    HR_TRY(hr_kv_pool_create_slots(&pool, m, n / 16 + 2, 16, 1, 0));
    hr_kv_seq seq = {0};
    int V = hr_model_cfg(m)->vocab;
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

static double mean_nll(const float *lg, const int32_t *tok, int n, int V) {
    double nll = 0;
    for (int i = 0; i + 1 < n; i++) {
        const float *l = lg + (size_t)i * V;
        double mx = -INFINITY, s = 0;
        for (int v = 0; v < V; v++)
            mx = fmax(mx, l[v]);
        for (int v = 0; v < V; v++)
            s += exp(l[v] - mx);
        nll += mx + log(s) - l[tok[i + 1]];
    }
    return nll / (n - 1);
}

/* brown-llama-8m-Q4_K_M: the held-out NLL, prefilled and decoded, against transformers'. */
static void check_brown(hr_backend *be, const char *shared, int *failures) {
    char path[600], refp[600];
    snprintf(path, sizeof path, "%s/fixtures/gguf/brown-llama-8m-Q4_K_M.gguf", shared);
    snprintf(refp, sizeof refp, "%s/fixtures/models/brown-llama-8m/reference.json", shared);
    json_t *ref = NULL;
    hr_model *m = NULL;
    hr_err *e = hr_json_load_file(refp, &ref);
    if (!e) e = hr_model_load(path, be, &m);
    const json_t *ids = ref ? json_object_get(ref, "heldout_ids") : NULL;
    int n = (int)json_array_size(ids), V = m ? hr_model_cfg(m)->vocab : 1;
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
    float *lg = malloc(sizeof(float) * (size_t)(n ? n : 1) * (size_t)V);
    if (!e && (!n || !tok || !lg)) e = hr_errf("no heldout_ids or out of memory");
    for (int i = 0; !e && i < n; i++)
        tok[i] = (int32_t)json_integer_value(json_array_get(ids, i));
    const double want = 5.153082; /* fixtures/gguf/README.md: transformers on this file */
    for (int pass = 0; !e && pass < 2; pass++) {
        e = run_chunks(m, tok, n, pass ? 1 : n, lg);
        if (e) break;
        double nll = mean_nll(lg, tok, n, V);
        int ok = fabs(nll - want) < 2e-3;
        printf("%-18s %-22s %10.6f %10.6f %13s %s\n", "brown Q4_K_M gguf",
               pass ? "NLL one at a time" : "NLL whole prompt", nll, want, "", ok ? "ok" : "FAIL");
        *failures += !ok;
    }
    if (e) {
        printf("%-18s %-22s FAIL: %s\n", "brown Q4_K_M gguf", "NLL", hr_err_msg(e));
        hr_err_free(e);
        ++*failures;
    }
    free(tok);
    free(lg);
    hr_model_free(m);
    json_decref(ref);
}

/* e2e-qwen3-Q8_0: each case's last-position logits against transformers'. */
static void check_e2e(hr_backend *be, const char *shared, int *failures) {
    char path[600], refp[600];
    snprintf(path, sizeof path, "%s/fixtures/gguf/e2e-qwen3-Q8_0.gguf", shared);
    snprintf(refp, sizeof refp, "%s/fixtures/gguf/e2e-qwen3-Q8_0.logits.safetensors", shared);
    hr_safetensors *st = NULL;
    hr_model *m = NULL;
    hr_err *e = hr_st_open(refp, &st);
    if (!e) e = hr_model_load(path, be, &m);
    for (int c = 1; !e && c <= 2; c++) {
        char name[64];
        snprintf(name, sizeof name, "case%d.tokens", c);
        const hr_tensor *tt = hr_st_get(st, name);
        snprintf(name, sizeof name, "case%d.logits", c);
        const hr_tensor *lt = hr_st_get(st, name);
        if (!tt || !lt) {
            e = hr_errf("%s lacks case%d", refp, c);
            break;
        }
        int n = (int)tt->shape[tt->ndim - 1], V = hr_model_cfg(m)->vocab;
        float *lg = malloc(sizeof(float) * (size_t)n * (size_t)V);
        for (int pass = 0; !e && pass < 2 && lg; pass++) {
            e = run_chunks(m, tt->data, n, pass ? 1 : n, lg);
            const float *got = lg + (size_t)(n - 1) * V, *want = lt->data;
            double mx = 0, mr = 0;
            for (int v = 0; !e && v < V; v++) {
                mx = fmax(mx, fabs(got[v] - want[v]));
                mr = fmax(mr, fabs(want[v]));
            }
            double rel = mr > 0 ? mx / mr : mx, tol = pass ? 1e-3 : 5e-3;
            int ok = !e && rel < tol;
            printf("%-18s case%d %-16s %10.2e %10.2e %13s %s\n", "e2e-qwen3 Q8_0", c,
                   pass ? "one at a time" : "whole prompt", mx, rel, "", ok ? "ok" : "FAIL");
            *failures += !ok && !e;
        }
        if (!lg) e = hr_err_oom();
        free(lg);
    }
    if (e) {
        printf("%-18s %-22s FAIL: %s\n", "e2e-qwen3 Q8_0", "logits", hr_err_msg(e));
        hr_err_free(e);
        ++*failures;
    }
    hr_model_free(m);
    if (st) hr_st_close(st);
}

void hr_gpu_quant_checks(const char *shared, int *failures) {
    hr_backend_options o = {.device = "cuda"};
    hr_backend *be = NULL;
    hr_err *e = hr_backend_create(&o, &be);
    if (e) {
        printf("quantized: FAIL: %s\n", hr_err_msg(e));
        hr_err_free(e);
        ++*failures;
        return;
    }
    static const hr_dtype formats[] = {HR_Q8_0, HR_Q4_0, HR_Q4_1, HR_Q5_0,
                                       HR_Q5_1, HR_Q4_K, HR_Q5_K, HR_Q6_K};
    for (size_t i = 0; i < sizeof formats / sizeof *formats; i++)
        check_format(be, formats[i], failures);
    check_brown(be, shared, failures);
    check_e2e(be, shared, failures);
    hr_backend_destroy(be);
}
