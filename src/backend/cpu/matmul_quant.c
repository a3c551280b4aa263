/* Matmul with a quantized weight: HR_QMM_ROWS weight rows at a time are dequantized
 * (tensor/quant.c) into the thread's f32 buffer and multiplied by the f32 kernel, so the
 * result is bit for bit the f32 matmul of the dequantized weight, whatever T is and
 * however the columns are split. */
#include "backend/cpu/matmul_quant.h"

#include "tensor/quant.h"

size_t hr_qmm_scratch_bytes(int T, long K, int n_threads) {
    return sizeof(float) * (size_t)n_threads * HR_QMM_ROWS * (size_t)K;
}

void hr_qmm_prepare(hr_qmm *q, const hr_cpu_kernels *k, const float *x, const hr_tensor *w, int T,
                    void *scratch) {
    *q = (hr_qmm){.w = w, .x = x, .T = T, .K = w->shape[1], .k = k, .rows = scratch};
}

void hr_qmm_cols(const hr_qmm *q, float *y, long n0, long n1, int thread) {
    long N = q->w->shape[0], K = q->K;
    size_t row_bytes = hr_dtype_bytes(q->w->dtype, K);
    float *rows = q->rows + (long)thread * HR_QMM_ROWS * K;
    for (long nb = n0; nb < n1; nb += HR_QMM_ROWS) {
        long len = n1 - nb < HR_QMM_ROWS ? n1 - nb : HR_QMM_ROWS;
        for (long r = 0; r < len; r++)
            hr_dequant_row(q->w->dtype, (const char *)q->w->data + (nb + r) * row_bytes, rows + r * K, K);
        q->k->mm_f32(y + nb, N, q->x, K, rows, (int)K, q->T, 0, len);
    }
}
