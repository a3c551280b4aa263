/* Kernel benchmark for the GPU machine (bench/gpu.sh runs it): the decode products of a
 * Llama-3-8B layer (bf16 weights, T = 1..HR_CU_GEMV_MAX_T activation rows) through the
 * backend's own GEMV — fused as the backend launches them (q, k and v in one launch; gate and
 * up in another) — and through cuBLAS one matrix at a time (x rounded to bf16, as the
 * bf16-products mode does), timed with CUDA events over weight sets rotated so the 60 MB L2
 * never holds them; prints GB/s of weights read. Numbers, never pass/fail. */
#include <stdio.h>
#include <stdlib.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "backend/cuda/kernels.h"

enum { SETS = 6, REPS = 20, MAXM = 3 };

#define CK(x)                                                                  \
    do {                                                                       \
        cudaError_t e_ = (x);                                                  \
        if (e_ != cudaSuccess) {                                               \
            fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));           \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

typedef struct {
    const char *name;
    long K;
    int n;
    long N[MAXM];
} product;

static const product products[] = {
    {"q,k,v 6144x4096", 4096, 3, {4096, 1024, 1024}},
    {"o 4096x4096", 4096, 1, {4096}},
    {"gate,up 2x14336x4096", 4096, 2, {14336, 14336}},
    {"down 4096x14336", 14336, 1, {4096}},
    {"lm_head 128256x4096", 4096, 1, {128256}},
};

/* One timed pass: REPS launches over the rotated weight sets; v 0 own GEMV, 1 cuBLAS. */
static float pass(cudaStream_t s, cublasHandle_t h, const product *p, void *w[SETS][MAXM], int sets,
                  const float *x, void *xh, float *y[MAXM], int T, int v) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    CK(cudaEventRecord(a, s));
    for (int r = 0; r < REPS; r++) {
        void **wk = w[r % sets];
        if (v == 0) {
            hr_cu_gemv_set g = {.n = p->n};
            for (int i = 0; i < p->n; i++) {
                g.w[i] = wk[i];
                g.y[i] = y[i];
                g.start[i + 1] = g.start[i] + p->N[i];
            }
            hr_cu_gemv(s, &g, x, HR_CU_BF16, T, p->K);
        } else {
            const float one = 1, zero = 0;
            hr_cu_round(s, xh, NULL, HR_CU_BF16, x, (long)T * p->K);
            for (int i = 0; i < p->n; i++)
                cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, (int)p->N[i], T, (int)p->K, &one, wk[i],
                             CUDA_R_16BF, (int)p->K, xh, CUDA_R_16BF, (int)p->K, &zero, y[i],
                             CUDA_R_32F, (int)p->N[i], CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        }
    }
    float ms = 0;
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    CK(cudaEventElapsedTime(&ms, a, b));
    CK(cudaGetLastError());
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return ms / REPS;
}

int main(void) {
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 1;
    cublasSetStream(h, s);
    printf("%-22s %3s %12s %12s\n", "product", "T", "own GB/s", "cuBLAS GB/s");
    for (size_t pi = 0; pi < sizeof products / sizeof *products; pi++) {
        const product *p = &products[pi];
        size_t wb = 0;
        for (int i = 0; i < p->n; i++) wb += (size_t)p->N[i] * p->K * 2;
        int sets = wb * SETS > ((size_t)6 << 30) ? 2 : SETS;
        void *w[SETS][MAXM];
        float *x, *y[MAXM];
        void *xh;
        for (int k = 0; k < sets; k++)
            for (int i = 0; i < p->n; i++) {
                size_t b = (size_t)p->N[i] * p->K * 2;
                CK(cudaMalloc(&w[k][i], b));
                CK(cudaMemset(w[k][i], 0x3c, b)); /* bf16 ~0.01: not zeros */
            }
        CK(cudaMalloc((void **)&x, sizeof(float) * 8 * p->K));
        CK(cudaMalloc(&xh, 2 * 8 * p->K));
        CK(cudaMemset(x, 0x3f, sizeof(float) * 8 * p->K));
        for (int i = 0; i < p->n; i++) CK(cudaMalloc((void **)&y[i], sizeof(float) * 8 * p->N[i]));
        for (int T = 1; T <= HR_CU_GEMV_MAX_T; T *= 2) {
            float best[2] = {1e30f, 1e30f};
            for (int v = 0; v < 2; v++)
                for (int round = 0; round < 3; round++) {
                    float ms = pass(s, h, p, w, sets, x, xh, y, T, v);
                    if (ms < best[v]) best[v] = ms;
                }
            printf("%-22s %3d %12.0f %12.0f\n", p->name, T, wb / (best[0] * 1e-3) / 1e9, wb / (best[1] * 1e-3) / 1e9);
        }
        for (int k = 0; k < sets; k++)
            for (int i = 0; i < p->n; i++) cudaFree(w[k][i]);
        for (int i = 0; i < p->n; i++) cudaFree(y[i]);
        cudaFree(x);
        cudaFree(xh);
    }
    return 0;
}
