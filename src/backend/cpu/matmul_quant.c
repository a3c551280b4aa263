/* Matmul with a quantized weight. Types with an 8-bit dot product (qdot.h) quantize x once
 * per call (rows split over the pool) and take one dot per output, four tokens per decode of
 * a weight row where the type has dot4 (bit for bit four dots). The other types dequantize HR_QMM_ROWS
 * weight rows at a time (tensor/quant.c) into the thread's f32 buffer for the f32 kernel,
 * bit for bit the f32 matmul of the dequantized weight. Either way an output depends on
 * its own row and column only, whatever T is and however the columns are split. */
#include "backend/cpu/matmul_quant.h"

#include "tensor/quant.h"

size_t hr_qmm_scratch_bytes(int T, long K, int n_threads) {
    size_t xq = sizeof(hr_q8x) * (size_t)T * (size_t)(K / 32);
    size_t rows = sizeof(float) * (size_t)n_threads * HR_QMM_ROWS * (size_t)K;
    return xq > rows ? xq : rows;
}

typedef struct {
    const float *x;
    hr_q8x *xq;
    long K;
    int T;
} quant_ctx;

static void quant_task(void *ctx, int t, int nt) {
    quant_ctx *c = ctx;
    for (int r = c->T * t / nt; r < c->T * (t + 1) / nt; r++)
        hr_q8x_quantize(c->x + r * c->K, c->xq + r * (c->K / 32), c->K);
}

void hr_qmm_prepare(hr_qmm *q, hr_pool *pool, const float *x, const hr_tensor *w, int T,
                    void *scratch) {
    const hr_cpu_qdots *qd = hr_cpu_qdots_get();
    *q = (hr_qmm){.w = w, .x = x, .T = T, .K = w->shape[1], .k = hr_cpu_kernels_get(),
                  .dot = qd->dot[w->dtype], .dot4 = qd->dot4[w->dtype]};
    if (!q->dot) {
        q->rows = scratch;
        return;
    }
    quant_ctx c = {x, scratch, q->K, T};
    if (T == 1) quant_task(&c, 0, 1);
    else hr_pool_run(pool, quant_task, &c);
    q->xq = scratch;
}

void hr_qmm_cols(const hr_qmm *q, float *y, long n0, long n1, int thread) {
    long N = q->w->shape[0], K = q->K, nb = K / 32;
    size_t row_bytes = hr_dtype_bytes(q->w->dtype, K);
    const char *w = q->w->data;
    if (q->dot) {
        /* groups of 4 tokens (their x blocks stay in L1) over the chunk's rows */
        for (int t0 = 0; t0 < q->T; t0 += 4) {
            const hr_q8x *x = q->xq + t0 * nb;
            int nt = q->T - t0 < 4 ? q->T - t0 : 4;
            for (long n = n0; n < n1; n++) {
                float o[4];
                if (nt == 4 && q->dot4) q->dot4(w + n * row_bytes, x, nb, nb, o);
                else
                    for (int t = 0; t < nt; t++) o[t] = q->dot(w + n * row_bytes, x + t * nb, nb);
                for (int t = 0; t < nt; t++) y[(t0 + t) * N + n] = o[t];
            }
        }
        return;
    }
    float *rows = q->rows + (long)thread * HR_QMM_ROWS * K;
    for (long nb0 = n0; nb0 < n1; nb0 += HR_QMM_ROWS) {
        long len = n1 - nb0 < HR_QMM_ROWS ? n1 - nb0 : HR_QMM_ROWS;
        for (long r = 0; r < len; r++)
            hr_dequant_row(q->w->dtype, w + (nb0 + r) * row_bytes, rows + r * K, K);
        q->k->mm_f32(y + nb0, N, q->x, K, rows, (int)K, q->T, 0, len);
    }
}
