/* gpu_check's checks of GGUF-quantized weights on the CUDA backend (the GPU machine only).
 * Ops: for every block format the backend reads, random blocks (sane f16 scales) as a weight
 * of 4100 x 512, products with 1..8 rows (the 8-bit-activation product mmvq, within 1e-5 of
 * the CPU's plain C one) and, for Q8_0, Q4_0, Q4_K and Q6_K, 9..64 (mmq, the same arithmetic on
 * the tensor cores, likewise); on a backend made with HEARTH_CUDA_QGEMV=f32, 1..4 rows: the f32
 * GEMV, within 1e-5 of the f64 product of hr_dequant_row's weights; rows past those (decoded to
 * f16 for cuBLAS: within 2e-3), and 4 of its rows as an embedding table (exactly the decoded
 * rows); mmq again on sets of two weights of other shapes (check_mmq); on a backend with bf16
 * products and HEARTH_CUDA_MMQ=0, mmf (f16 x, weights decoded in registers) from 9 rows against
 * the f64 product of f16-rounded x (check_mmf). Models:
 * brown-llama-8m-Q4_K_M.gguf's held-out NLL on the GPU, whole prompt, in chunks of 64 and one
 * token at a time, against transformers' (fixtures/gguf/README.md), and e2e-qwen3-Q8_0.gguf's
 * last-position logits of its two cases against transformers'. Prints one line per check, "ok"
 * or "FAIL". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/qdot.h"
#include "backend/cuda/cuda_backend.h"
#include "base/json.h"
#include "engine/kv_pool.h"
#include "model/model.h"
#include "model/safetensors.h"
#include "tensor/qplanes.h"
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

static float f16_at(const uint8_t *p) { return hr_f16_to_f32((uint16_t)(p[0] | p[1] << 8)); }

/* Q4_1 / Q5_1 (five), which the CPU multiplies through decoded f32 rows: mmvq's arithmetic in
 * the form of the CPU's plain C dots (qdot_ref.c), x per 32 (hr_q8x, not paired) and per block
 * f16(d) * x_d * (q . x's codes) + f16(m) * x_d * sum(x's codes). */
static float dot_q_1(int five, const void *wv, const void *xv, long nb) {
    const uint8_t *w = wv;
    const hr_q8x *x = xv;
    float acc = 0;
    for (long b = 0; b < nb; b++, w += five ? 24 : 20) {
        const uint8_t *qs = w + (five ? 8 : 4);
        uint32_t qh = five ? (uint32_t)w[4] | (uint32_t)w[5] << 8 | (uint32_t)w[6] << 16 |
                                 (uint32_t)w[7] << 24
                           : 0;
        const hr_q8x *g = x + b / 8;
        int i = (int)(b % 8), s = 0;
        for (int j = 0; j < 16; j++) {
            int lo = (qs[j] & 15) | (int)(qh >> j & 1) << 4;
            int hi = (qs[j] >> 4) | (int)(qh >> (j + 16) & 1) << 4;
            s += lo * g->q[hr_q8x_pos(0, i, j)] + hi * g->q[hr_q8x_pos(0, i, j + 16)];
        }
        acc += f16_at(w) * g->d[i] * (float)s + f16_at(w + 2) * g->d[i] * (float)g->sum[i];
    }
    return acc;
}

/* The CPU's 8-bit-activation product (backend/cpu/qdot.h's plain C dots; Q4_1 / Q5_1: dot_q_1)
 * of x[T, K] with the weight's N rows of blocks: the reference of the CUDA backend's mmvq. */
static void int8_ref(hr_dtype t, const uint8_t *blocks, const float *x, int T, long N, long K,
                     double *ref) {
    const hr_cpu_qdots *q = &hr_cpu_qdots_ref;
    size_t rb = hr_dtype_bytes(t, K);
    void *xq = malloc(hr_qx_row_bytes(K));
    for (int i = 0; xq && i < T; i++) {
        q->quantize(t, x + (size_t)i * K, xq, K);
        for (long n = 0; n < N; n++) {
            const uint8_t *w = blocks + (size_t)n * rb;
            ref[(size_t)i * N + n] =
                q->dot[t] ? q->dot[t](w, xq, K / 32) : dot_q_1(t == HR_Q5_1, w, xq, K / 32);
        }
    }
    free(xq);
}

/* y[T, N] = x[T, K] times the device weight dev [N, K], with x filled at random in [-1, 1). */
static hr_err *run_product(hr_backend *be, const hr_tensor *dev, int T, float *x, float *y) {
    long N = dev->shape[0], K = dev->shape[1];
    size_t xb = sizeof(float) * (size_t)T * K, yb = sizeof(float) * (size_t)T * N;
    void *dx = NULL, *dy = NULL;
    for (size_t i = 0; i < (size_t)T * K; i++)
        x[i] = 2 * qrndf() - 1;
    hr_err *e = be->vt->alloc(be, xb, &dx);
    if (!e) e = be->vt->alloc(be, yb, &dy);
    if (!e) e = be->vt->write(be, dx, x, xb);
    if (!e) be->vt->matmul(be, dy, dx, dev, NULL, T);
    if (!e) e = be->vt->read(be, dy, y, yb);
    if (dx) be->vt->free(be, dx);
    if (dy) be->vt->free(be, dy);
    return e;
}

/* max |y - ref| / max |ref| for x[T, K] times the weight: ref the f64 product of the decoded
 * weights w, or (int8) the CPU's 8-bit-activation product. */
static hr_err *product_err(hr_backend *be, const hr_tensor *dev, const float *w, int T, int int8,
                           const uint8_t *blocks, double *err) {
    size_t xb = sizeof(float) * (size_t)T * QK, yb = sizeof(float) * (size_t)T * QN;
    float *x = malloc(xb), *y = malloc(yb);
    double *ref = malloc(sizeof(double) * (size_t)T * QN);
    hr_err *e = x && y && ref ? run_product(be, dev, T, x, y) : hr_err_oom();
    if (!e && int8) int8_ref(dev->dtype, blocks, x, T, QN, QK, ref);
    for (int t = 0; !e && !int8 && t < T; t++)
        for (int n = 0; n < QN; n++) {
            double r = 0;
            for (int k = 0; k < QK; k++)
                r += (double)x[t * QK + k] * w[n * QK + k];
            ref[t * QN + n] = r;
        }
    double mx = 0, mr = 0;
    for (size_t i = 0; !e && i < (size_t)T * QN; i++) {
        mx = fmax(mx, fabs(y[i] - ref[i]));
        mr = fmax(mr, fabs(ref[i]));
    }
    *err = mr > 0 ? mx / mr : mx;
    free(x);
    free(y);
    free(ref);
    return e;
}

/* Rows 0, 1, 4099 and 2050 of the weight as an embedding table: its decoded rows. */
static hr_err *check_embed(hr_backend *be, const hr_tensor *dev, const float *w, int *failures) {
    static const int32_t tok[] = {0, 1, QN - 1, QN / 2}, pos[] = {0, 1, 2, 3}, row[4] = {0},
                         q_start[] = {0, 4}, table[] = {0}, slots[] = {0};
    enum { NT = 4 };
    hr_step_meta m = {.n_tokens = NT,
                      .n_rows = 1,
                      .tokens = tok,
                      .pos = pos,
                      .row = row,
                      .q_start = q_start,
                      .max_blocks = 1,
                      .block_table = table,
                      .state_slots = slots};
    float *y = malloc(sizeof(float) * NT * QK);
    void *dy = NULL;
    hr_err *e = y ? NULL : hr_err_oom();
    if (!e) e = be->vt->alloc(be, sizeof(float) * NT * QK, &dy);
    if (!e) e = be->vt->step_begin(be, &m);
    if (!e) be->vt->embed(be, dy, dev, 1.0f);
    if (!e) e = be->vt->read(be, dy, y, sizeof(float) * NT * QK);
    double mx = 0;
    for (int i = 0; !e && i < NT; i++)
        for (int k = 0; k < QK; k++)
            mx = fmax(mx, fabs(y[i * QK + k] - w[(size_t)tok[i] * QK + k]));
    if (!e) {
        printf("%-18s %-22s %10s %10.2e %13s %s\n", hr_dtype_name(dev->dtype), "embed rows", "", mx,
               "", mx == 0 ? "ok" : "FAIL");
        *failures += mx != 0;
    }
    if (dy) be->vt->free(be, dy);
    free(y);
    return e;
}

/* Random weights of format t: n rows of k (blocks, and the backend's upload of them). */
static hr_err *random_weight(hr_backend *be, hr_dtype t, long n, long k, uint8_t **blocks,
                             hr_tensor *dev) {
    long n_blocks = n * k / hr_dtype_get(t)->block;
    *blocks = malloc((size_t)n_blocks * (size_t)hr_dtype_get(t)->block_bytes);
    if (!*blocks) return hr_err_oom();
    random_blocks(t, *blocks, n_blocks);
    hr_tensor host = {.dtype = t, .ndim = 2, .shape = {n, k}, .data = *blocks};
    return be->vt->upload(be, &host, dev);
}

/* max |y - ref| / max |ref| over both products of x[T, K] with a set of two weights of format
 * t (N0 and N1 rows, launched together as q and k are) against the CPU's 8-bit-activation dots. */
static hr_err *set_err(hr_backend *be, hr_dtype t, const hr_tensor dev[2], uint8_t *const blocks[2],
                       int T, long K, double *err) {
    long N[2] = {dev[0].shape[0], dev[1].shape[0]};
    size_t xb = sizeof(float) * (size_t)T * K;
    float *x = malloc(xb), *y = malloc(sizeof(float) * (size_t)T * (N[0] + N[1]));
    double *ref = malloc(sizeof(double) * (size_t)T * (N[0] + N[1]));
    void *dx = NULL, *dy[2] = {NULL, NULL};
    hr_err *e = x && y && ref ? NULL : hr_err_oom();
    for (size_t i = 0; !e && i < (size_t)T * K; i++)
        x[i] = 2 * qrndf() - 1;
    if (!e) e = be->vt->alloc(be, xb, &dx);
    for (int m = 0; m < 2 && !e; m++)
        e = be->vt->alloc(be, sizeof(float) * (size_t)T * N[m], &dy[m]);
    if (!e) e = be->vt->write(be, dx, x, xb);
    for (int m = 0; m < 2 && !e; m++)
        be->vt->matmul(be, dy[m], dx, &dev[m], NULL, T);
    double mx = 0, mr = 0;
    for (int m = 0; m < 2 && !e; m++) {
        size_t n = (size_t)T * N[m];
        e = be->vt->read(be, dy[m], y, sizeof(float) * n);
        if (!e) int8_ref(t, blocks[m], x, T, N[m], K, ref);
        for (size_t i = 0; !e && i < n; i++) {
            mx = fmax(mx, fabs(y[i] - ref[i]));
            mr = fmax(mr, fabs(ref[i]));
        }
    }
    *err = mr > 0 ? mx / mr : mx;
    if (dx) be->vt->free(be, dx);
    for (int m = 0; m < 2; m++)
        if (dy[m]) be->vt->free(be, dy[m]);
    free(x);
    free(y);
    free(ref);
    return e;
}

/* One check's line: format t, what, rows T, the error against tol. */
static void report(hr_dtype t, const char *what, int T, double err, double tol, int *failures) {
    printf("%-18s %-22s %10d %10.2e %13s %s\n", hr_dtype_name(t), what, T, err, "",
           err < tol ? "ok" : "FAIL");
    *failures += !(err < tol);
}

/* A check that could not run: its error, freed. */
static void report_err(hr_dtype t, const char *what, hr_err *e, int *failures) {
    printf("%-18s %-22s FAIL: %s\n", hr_dtype_name(t), what, hr_err_msg(e));
    hr_err_free(e);
    ++*failures;
}

/* The most rows of x the CUDA backend multiplies format t by with 8-bit activations on the
 * tensor cores (mmq.cu; 0: none; mmvq takes every format to 8). */
static int mmq_rows(hr_dtype t) { return hr_cu_mmq_max_t(hr_cu_qtype(t)); }

/* The tensor-core products (mmq.cu) of 9..mmq_rows(t) rows for format t with rows of k: a set
 * of a 1000- and a 260-row weight (tiles past each matrix's end, a set boundary inside a tile;
 * K split over blocks), within 1e-5 of the CPU's dots. */
static void check_mmq(hr_backend *be, hr_dtype t, long k, int *failures) {
    hr_tensor dev[2] = {{0}, {0}};
    uint8_t *blocks[2] = {NULL, NULL};
    static const long rows[2] = {1000, 260};
    hr_err *e = NULL;
    for (int m = 0; m < 2 && !e; m++)
        e = random_weight(be, t, rows[m], k, &blocks[m], &dev[m]);
    static const int Ts[] = {9, 16, 17, 32, 33, 40, 48, 49, 64};
    for (size_t i = 0; !e && i < sizeof Ts / sizeof *Ts && Ts[i] <= mmq_rows(t); i++) {
        double err;
        e = set_err(be, t, dev, blocks, Ts[i], k, &err);
        if (e) break;
        char what[32];
        snprintf(what, sizeof what, "mmq K=%ld (vs CPU's)", k);
        report(t, what, Ts[i], err, 1e-5, failures);
    }
    if (e) report_err(t, "mmq", e, failures);
    for (int m = 0; m < 2; m++) {
        if (dev[m].data) be->vt->release(be, &dev[m]);
        free(blocks[m]);
    }
}

/* max |y - ref| / max |ref| for x[T, K] (random) times a weight of N rows decoded to w, ref the
 * f64 product of x rounded to f16 and w: what mmf.cu computes, but for its f16 weights. */
static hr_err *mmf_err(hr_backend *be, const hr_tensor *dev, const float *w, int T, double *err) {
    long N = dev->shape[0], K = dev->shape[1];
    size_t xb = sizeof(float) * (size_t)T * K, yb = sizeof(float) * (size_t)T * N;
    float *x = malloc(xb), *y = malloc(yb);
    hr_err *e = x && y ? run_product(be, dev, T, x, y) : hr_err_oom();
    for (size_t i = 0; !e && i < (size_t)T * K; i++)
        x[i] = hr_f16_to_f32(hr_f32_to_f16(x[i]));
    double mx = 0, mr = 0;
    for (int t = 0; !e && t < T; t++)
        for (long n = 0; n < N; n++) {
            double r = 0;
            for (long k = 0; k < K; k++)
                r += (double)x[t * K + k] * w[n * K + k];
            mx = fmax(mx, fabs(y[t * N + n] - r));
            mr = fmax(mr, fabs(r));
        }
    *err = mr > 0 ? mx / mr : mx;
    free(x);
    free(y);
    return e;
}

/* mmf.cu (be: bf16 products, no mmq, so it takes 9..hr_cu_mmf_max_t rows) for format t on a
 * 1000 x k weight (a partial row tile; k = 2304: K split over blocks; 800: a partial chunk),
 * and one row past it (f16 cuBLAS), within 1e-3 of the f16-x product: what differs is the f16
 * rounding of each decoded weight (2^-11 relative) and, for Q4_K, of its sub-block scale and min
 * before it (so two roundings a weight; 4.9e-4 seen on the H200). */
static void check_mmf(hr_backend *be, hr_dtype t, long k, int *failures) {
    uint8_t *blocks = NULL;
    hr_tensor dev = {0};
    float *w = malloc(sizeof(float) * 1000 * (size_t)k);
    hr_err *e = w ? random_weight(be, t, 1000, k, &blocks, &dev) : hr_err_oom();
    if (!e) hr_dequant_row(t, blocks, w, (int64_t)1000 * k);
    long rb = (long)(dev.planes ? hr_qplanes_row_bytes(t, k) : hr_dtype_bytes(t, k));
    int most = e ? 0 : hr_cu_mmf_max_t(hr_cu_qtype(t), dev.planes, rb);
    const int Ts[] = {9, 33, 48, 64, 65, 100, 128, 129};
    for (size_t i = 0; !e && i < sizeof Ts / sizeof *Ts && Ts[i] <= most + 1; i++) {
        double err;
        e = mmf_err(be, &dev, w, Ts[i], &err);
        if (e) break;
        char what[32];
        snprintf(what, sizeof what, "%s K=%ld", Ts[i] > most ? "f16 gemm" : "mmf", k);
        report(t, what, Ts[i], err, 1e-3, failures);
    }
    if (e) report_err(t, "mmf", e, failures);
    if (dev.data) be->vt->release(be, &dev);
    free(blocks);
    free(w);
}

/* Products of a random 4100 x 512 weight in format t with 1..65 rows (f32: the f32 GEMV to 4
 * rows against the f64 product; else the 8-bit-activation products against the CPU's, mmvq to
 * 8 rows and mmq to 64 where t has it, and f16 cuBLAS past those); embedding rows of it as a
 * table. */
static void check_format(hr_backend *be, hr_dtype t, int f32, int *failures) {
    uint8_t *blocks = NULL;
    hr_tensor dev = {0};
    float *w = malloc(sizeof(float) * QN * QK);
    hr_err *e = w ? random_weight(be, t, QN, QK, &blocks, &dev) : hr_err_oom();
    if (!e) hr_dequant_row(t, blocks, w, (int64_t)QN * QK);
    static const int rows[] = {1, 2, 3, 4, 5, 8, 9, 33, 65};
    for (size_t i = 0; !e && i < sizeof rows / sizeof *rows; i++) {
        int int8 = !f32 && (rows[i] <= 8 || rows[i] <= mmq_rows(t));
        int small = int8 || rows[i] <= 4;
        if (f32 && rows[i] > 4) break;
        double err;
        e = product_err(be, &dev, w, rows[i], int8, blocks, &err);
        double tol = small ? 1e-5 : 2e-3;
        if (e) break;
        int ok = err < tol;
        printf("%-18s %-22s %10d %10.2e %13s %s\n", hr_dtype_name(t),
               int8 && rows[i] > 8 ? "mmq (vs the CPU's)"
               : int8              ? "mmvq (vs the CPU's)"
               : small             ? "qgemv f32"
                                   : "f16 gemm",
               rows[i], err, "", ok ? "ok" : "FAIL");
        *failures += !ok;
    }
    if (!e && !f32) e = check_embed(be, &dev, w, failures);
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
static void check_brown(hr_backend *be, const char *label, const char *shared, int *failures) {
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
    static const char *how[] = {"NLL whole prompt", "NLL one at a time", "NLL chunks of 64"};
    for (int pass = 0; !e && pass < 3; pass++) {
        e = run_chunks(m, tok, n, pass == 0 ? n : pass == 1 ? 1 : 64, lg);
        if (e) break;
        double nll = mean_nll(lg, tok, n, V);
        int ok = fabs(nll - want) < 2e-3;
        printf("%-18s %-22s %10.6f %10.6f %13s %s\n", label, how[pass], nll, want, "",
               ok ? "ok" : "FAIL");
        *failures += !ok;
    }
    if (e) {
        printf("%-18s %-22s FAIL: %s\n", label, "NLL", hr_err_msg(e));
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
            /* both take 8-bit activations (one at a time mmvq, the 10- and 15-token prompts
             * mmq), as the CPU backend's products: the CPU's bound (test_gguf_quant: 2% of max
             * |logit|) */
            double rel = mr > 0 ? mx / mr : mx, tol = 2e-2;
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
        check_format(be, formats[i], 0, failures);
    for (size_t i = 0; i < sizeof formats / sizeof *formats; i++)
        if (mmq_rows(formats[i])) {
            check_mmq(be, formats[i], 2304, failures);
            if (hr_dtype_get(formats[i])->block == 32) check_mmq(be, formats[i], 800, failures);
        }
    check_brown(be, "brown Q4_K_M gguf", shared, failures);
    check_e2e(be, shared, failures);
    hr_backend_destroy(be);
    /* mmf from 9 rows (bf16 products, HEARTH_CUDA_MMQ=0) */
    hr_backend_options ob = {.device = "cuda", .cpu = {.compute_bf16 = 1}};
    setenv("HEARTH_CUDA_MMQ", "0", 1);
    e = hr_backend_create(&ob, &be);
    unsetenv("HEARTH_CUDA_MMQ");
    static const hr_dtype mmf_formats[] = {HR_Q4_0, HR_Q4_K};
    for (size_t i = 0; !e && i < sizeof mmf_formats / sizeof *mmf_formats; i++) {
        check_mmf(be, mmf_formats[i], 2304, failures);
        if (hr_dtype_get(mmf_formats[i])->block == 32) check_mmf(be, mmf_formats[i], 800, failures);
    }
    if (!e) check_brown(be, "brown Q4_K_M mmf", shared, failures);
    if (e) {
        printf("quantized mmf: FAIL: %s\n", hr_err_msg(e));
        hr_err_free(e);
        ++*failures;
    }
    hr_backend_destroy(be);
    /* the f32 GEMV (HEARTH_CUDA_QGEMV=f32), on the rows mmvq reads */
    setenv("HEARTH_CUDA_QGEMV", "f32", 1);
    e = hr_backend_create(&o, &be);
    unsetenv("HEARTH_CUDA_QGEMV");
    for (size_t i = 0; !e && i < sizeof formats / sizeof *formats; i++)
        check_format(be, formats[i], 1, failures);
    if (e) {
        printf("quantized f32: FAIL: %s\n", hr_err_msg(e));
        hr_err_free(e);
        ++*failures;
    }
    hr_backend_destroy(be);
}
