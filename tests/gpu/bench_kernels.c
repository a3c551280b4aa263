/* Kernel benchmark for the GPU machine (bench/gpu.sh runs it): the decode products of a
 * Llama-3-8B layer (bf16 weights, T = 1..HR_CU_GEMV_MAX_T activation rows) through the
 * backend's own GEMV — fused as the backend launches them (q, k and v in one launch; gate and
 * up in another) — and through cuBLAS one matrix at a time (x rounded to bf16, as the
 * bf16-products mode does), then at 8..128 rows through cuBLAS, mmh (to 64 rows) and mmw
 * (`bench_kernels h`: only those), timed with CUDA events over weight sets rotated so the 60 MB L2
 * never holds them; prints GB/s of weights read; then the prefill products through cuBLAS
 * (gemm_section), and the decode products with GGUF weights (qsection); `bench_kernels q
 * [FORMAT [T]]`: only those (of one format, at one T). Numbers, never pass/fail. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "backend/cuda/kernels.h"

enum { SETS = 6, REPS = 20, MAXM = 3 };

#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));                               \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

typedef struct {
    const char *name;
    long K;
    int n;
    long N[MAXM];
} product;

static const product products[] = {
    {"q,k,v 6144x4096", 4096, 3, {4096, 1024, 1024}},  {"o 4096x4096", 4096, 1, {4096}},
    {"gate,up 2x14336x4096", 4096, 2, {14336, 14336}}, {"down 4096x14336", 14336, 1, {4096}},
    {"lm_head 128256x4096", 4096, 1, {128256}},
};

/* The set of p's matrices wk and outputs y as the backend launches it. */
static hr_cu_gemv_set set_of(const product *p, void **wk, float *y[MAXM]) {
    hr_cu_gemv_set g = {.n = p->n};
    for (int i = 0; i < p->n; i++) {
        g.w[i] = wk[i];
        g.y[i] = y[i];
        g.start[i + 1] = g.start[i] + p->N[i];
    }
    return g;
}

/* Events around a timed pass: started in s; then its milliseconds over REPS launches. */
static void timer_start(cudaStream_t s, cudaEvent_t ev[2]) {
    CK(cudaEventCreate(&ev[0]));
    CK(cudaEventCreate(&ev[1]));
    CK(cudaEventRecord(ev[0], s));
}

static float timer_ms_per_rep(cudaStream_t s, cudaEvent_t ev[2]) {
    float ms = 0;
    CK(cudaEventRecord(ev[1], s));
    CK(cudaEventSynchronize(ev[1]));
    CK(cudaEventElapsedTime(&ms, ev[0], ev[1]));
    CK(cudaGetLastError());
    cudaEventDestroy(ev[0]);
    cudaEventDestroy(ev[1]);
    return ms / REPS;
}

/* One timed pass: REPS launches over the rotated weight sets; v 0 own GEMV (K split over a
 * block), 1 own GEMV (a warp per row group), 2 cuBLAS a matrix at a time, 3 mmh (the set in one
 * launch; ws its split-K partials), 4 mmw (the set in one launch); x rounded to bf16 in each pass
 * of 2, 3 and 4. */
static float pass(cudaStream_t s, cublasHandle_t h, const product *p, void *w[SETS][MAXM], int sets,
                  const float *x, void *xh, float *ws, float *y[MAXM], int T, int v) {
    cudaEvent_t ev[2];
    timer_start(s, ev);
    for (int r = 0; r < REPS; r++) {
        void **wk = w[r % sets];
        if (v < 2) {
            hr_cu_gemv_split = v == 0;
            hr_cu_gemv_set g = set_of(p, wk, y);
            hr_cu_gemv(s, &g, (float *)x, HR_CU_BF16, T, p->K);
        } else if (v >= 3) {
            hr_cu_gemv_set g = set_of(p, wk, y);
            hr_cu_round(s, xh, NULL, HR_CU_BF16, x, (long)T * p->K);
            if (v == 3)
                hr_cu_mmh(s, &g, xh, HR_CU_BF16, T, p->K, ws);
            else if (!hr_cu_mmw(s, &g, xh, HR_CU_BF16, T, p->K)) {
                fprintf(stderr, "mmw refused %s at %d rows\n", p->name, T);
                exit(1);
            }
        } else {
            const float one = 1, zero = 0;
            hr_cu_round(s, xh, NULL, HR_CU_BF16, x, (long)T * p->K);
            for (int i = 0; i < p->n; i++)
                cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, (int)p->N[i], T, (int)p->K, &one, wk[i],
                             CUDA_R_16BF, (int)p->K, xh, CUDA_R_16BF, (int)p->K, &zero, y[i],
                             CUDA_R_32F, (int)p->N[i], CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        }
    }
    return timer_ms_per_rep(s, ev);
}

/* Prefill products (T = 2048 tokens, bf16 x and w as the bf16-products mode runs them) through
 * cuBLAS: TFLOP/s with an f32 output (what the backend does) and with a bf16 one, per matrix
 * of a Llama-3-8B layer and for q/k/v and gate/up as one matrix each. */
static void gemm_section(cudaStream_t s, cublasHandle_t h) {
    static const struct {
        const char *name;
        int N, K;
    } g[] = {{"q 4096x4096", 4096, 4096},         {"k or v 1024x4096", 1024, 4096},
             {"q,k,v 6144x4096", 6144, 4096},     {"gate or up 14336x4096", 14336, 4096},
             {"gate,up 28672x4096", 28672, 4096}, {"down 4096x14336", 4096, 14336}};
    enum { T = 2048 };
    printf("%-22s %5s %14s %14s\n", "prefill product", "T", "f32-out TFLOP/s", "bf16-out TFLOP/s");
    for (size_t i = 0; i < sizeof g / sizeof *g; i++) {
        void *w, *x, *y;
        CK(cudaMalloc(&w, (size_t)g[i].N * g[i].K * 2));
        CK(cudaMalloc(&x, (size_t)T * g[i].K * 2));
        CK(cudaMalloc(&y, (size_t)T * g[i].N * 4));
        CK(cudaMemset(w, 0x3c, (size_t)g[i].N * g[i].K * 2));
        CK(cudaMemset(x, 0x3c, (size_t)T * g[i].K * 2));
        float best[2] = {1e30f, 1e30f};
        for (int v = 0; v < 2; v++)
            for (int round = 0; round < 4; round++) {
                const float one = 1, zero = 0;
                cudaEvent_t a, b;
                CK(cudaEventCreate(&a));
                CK(cudaEventCreate(&b));
                CK(cudaEventRecord(a, s));
                for (int r = 0; r < 10; r++)
                    cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, g[i].N, T, g[i].K, &one, w,
                                 CUDA_R_16BF, g[i].K, x, CUDA_R_16BF, g[i].K, &zero, y,
                                 v ? CUDA_R_16BF : CUDA_R_32F, g[i].N, CUBLAS_COMPUTE_32F,
                                 CUBLAS_GEMM_DEFAULT);
                CK(cudaEventRecord(b, s));
                CK(cudaEventSynchronize(b));
                float ms;
                CK(cudaEventElapsedTime(&ms, a, b));
                if (round > 0 && ms / 10 < best[v]) best[v] = ms / 10;
                cudaEventDestroy(a);
                cudaEventDestroy(b);
            }
        double flop = 2.0 * T * g[i].N * g[i].K;
        printf("%-22s %5d %14.0f %14.0f\n", g[i].name, T, flop / (best[0] * 1e-3) / 1e12,
               flop / (best[1] * 1e-3) / 1e12);
        cudaFree(w);
        cudaFree(x);
        cudaFree(y);
    }
}

/* One timed pass of a GGUF product set: REPS launches over the rotated weight sets; v 0: the
 * backend's 8-bit-activation product (mmvq to 8 rows, mmq beyond; x quantized once, outside
 * the timing, as the norm kernel hands it over), 1: each matrix decoded to f16, then cuBLAS,
 * 2: mmf (f16 x, the weights decoded in registers; Q4_0, Q4_K), a launch per matrix as the
 * backend has it. */
static float qpass(cudaStream_t s, cublasHandle_t h, const product *p, void *w[SETS][MAXM],
                   int sets, int q, long rb, const void *xq, void *xh, void *wdq, float *ws,
                   float *y[MAXM], int T, int v) {
    cudaEvent_t ev[2];
    timer_start(s, ev);
    for (int r = 0; r < REPS; r++) {
        void **wk = w[r % sets];
        hr_cu_gemv_set g = set_of(p, wk, y);
        if (v == 0 && T <= HR_CU_MMVQ_MAX_T)
            hr_cu_mmvq(s, &g, xq, q, T, p->K, rb);
        else if (v == 0)
            hr_cu_mmq(s, &g, xq, q, T, p->K, rb, ws);
        for (int i = 0; v == 2 && i < p->n; i++) {
            hr_cu_gemv_set one = {.n = 1, .w = {wk[i]}, .y = {y[i]}, .start = {0, p->N[i]}};
            hr_cu_mmf(s, &one, xh, q, T, p->K, rb, ws);
        }
        for (int i = 0; v == 1 && i < p->n; i++) {
            const float one = 1, zero = 0;
            hr_cu_dequant_f16(s, wdq, wk[i], q, q != HR_CU_Q4_K, p->N[i], p->K, rb);
            cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, (int)p->N[i], T, (int)p->K, &one, wdq,
                         CUDA_R_16F, (int)p->K, xh, CUDA_R_16F, (int)p->K, &zero, y[i], CUDA_R_32F,
                         (int)p->N[i], CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        }
    }
    return timer_ms_per_rep(s, ev);
}

/* The decode products of a Llama-3-8B layer (lm_head left out) with GGUF weights (Q4_0, Q8_0
 * and Q6_K planar, Q4_K; bytes of 0x11, f16 scales of them ~7e-4) at T = 1..512 rows: GB/s of
 * weights read by the 8-bit-activation products, the f16 decode + cuBLAS path and mmf.
 */
static void qsection(cudaStream_t s, cublasHandle_t h, const char *only_fmt, int only_t) {
    static const struct {
        const char *name;
        int q, bb, be; /* format, block bytes, block elements */
    } fmts[] = {{"Q4_0", HR_CU_Q4_0, 18, 32},
                {"Q8_0", HR_CU_Q8_0, 34, 32},
                {"Q4_K", HR_CU_Q4_K, 144, 256},
                {"Q6_K", HR_CU_Q6_K, 210, 256}};
    static const int Ts[] = {1, 8, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512};
    enum { TMAX = 512 };
    printf("%-6s %-22s %3s %12s %12s %12s\n", "format", "product", "T", "8-bit GB/s", "f16 GB/s",
           "mmf GB/s");
    for (size_t f = 0; f < sizeof fmts / sizeof *fmts; f++)
        for (size_t pi = 0; pi < 4 && (!only_fmt || !strcmp(only_fmt, fmts[f].name)); pi++) {
            const product *p = &products[pi];
            long rb = (p->K / fmts[f].be * fmts[f].bb + 15) / 16 * 16;
            size_t wb = 0;
            for (int i = 0; i < p->n; i++)
                wb += (size_t)p->N[i] * rb;
            void *w[SETS][MAXM], *xq, *xh, *wdq;
            float *x, *y[MAXM], *ws;
            for (int k = 0; k < SETS; k++)
                for (int i = 0; i < p->n; i++) {
                    CK(cudaMalloc(&w[k][i], (size_t)p->N[i] * rb));
                    CK(cudaMemset(w[k][i], 0x11, (size_t)p->N[i] * rb));
                }
            CK(cudaMalloc((void **)&x, sizeof(float) * TMAX * p->K));
            CK(cudaMemset(x, 0x3f, sizeof(float) * TMAX * p->K));
            CK(cudaMalloc(&xq, hr_cu_xq_bytes(TMAX, p->K)));
            CK(cudaMalloc(&xh, 2 * TMAX * p->K));
            CK(cudaMemset(xh, 0x3c, 2 * TMAX * p->K));
            CK(cudaMalloc(&wdq, (size_t)14336 * 4096 * 2));
            CK(cudaMalloc((void **)&ws, hr_cu_mmq_ws_bytes(TMAX)));
            for (int i = 0; i < p->n; i++)
                CK(cudaMalloc((void **)&y[i], sizeof(float) * TMAX * p->N[i]));
            for (size_t ti = 0; ti < sizeof Ts / sizeof *Ts; ti++) {
                if (only_t && Ts[ti] != only_t) continue;
                int T = Ts[ti], per = fmts[f].q == HR_CU_Q4_K ? 256 : 32;
                int mmf = hr_cu_mmf_max_t(fmts[f].q, fmts[f].q != HR_CU_Q4_K, rb) > 0;
                hr_cu_quantize_x(s, xq, x, T, p->K, per);
                float best[3] = {1e30f, 1e30f, 1e30f};
                for (int v = 0; v < 3; v++)
                    for (int round = 0; round < 3 && (v != 2 || (T > HR_CU_GEMV_MAX_T && mmf));
                         round++) {
                        float ms = qpass(s, h, p, w, SETS, fmts[f].q, rb, xq, xh, wdq, ws, y, T, v);
                        if (ms < best[v]) best[v] = ms;
                    }
                printf("%-6s %-22s %3d %12.0f %12.0f %12.0f\n", fmts[f].name, p->name, T,
                       wb / (best[0] * 1e-3) / 1e9, wb / (best[1] * 1e-3) / 1e9,
                       wb / (best[2] * 1e-3) / 1e9);
            }
            for (int k = 0; k < SETS; k++)
                for (int i = 0; i < p->n; i++)
                    cudaFree(w[k][i]);
            for (int i = 0; i < p->n; i++)
                cudaFree(y[i]);
            cudaFree(x);
            cudaFree(xq);
            cudaFree(xh);
            cudaFree(wdq);
            cudaFree(ws);
        }
}

/* The bf16 decode products of a Llama-3-8B layer at the rows Ts: GB/s of weights read by the
 * backend's GEMV (split and warp versions) and cuBLAS (mmh 0), or by cuBLAS, mmh (to its rows)
 * and mmw (mmh 1; mmw only on a device that has it). */
static void bf16_section(cudaStream_t s, cublasHandle_t h, const int *Ts, int nT, int mmh) {
    enum { TMAX = HR_CU_MMW_MAX_T };
    static const char *const names[] = {"split GB/s", "warp GB/s", "cuBLAS GB/s", "mmh GB/s",
                                        "mmw GB/s"};
    int v0 = mmh ? 2 : 0, v1 = mmh ? (hr_cu_mmw_ok() ? 5 : 4) : 3;
    printf("%-22s %3s", "product", "T");
    for (int v = v0; v < v1; v++)
        printf(" %12s", names[v]);
    printf("\n");
    float *ws;
    CK(cudaMalloc((void **)&ws, hr_cu_mmq_ws_bytes(TMAX)));
    for (size_t pi = 0; pi < sizeof products / sizeof *products; pi++) {
        const product *p = &products[pi];
        size_t wb = 0;
        for (int i = 0; i < p->n; i++)
            wb += (size_t)p->N[i] * p->K * 2;
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
        CK(cudaMalloc((void **)&x, sizeof(float) * TMAX * p->K));
        CK(cudaMalloc(&xh, 2 * TMAX * p->K));
        CK(cudaMemset(x, 0x3f, sizeof(float) * TMAX * p->K));
        for (int i = 0; i < p->n; i++)
            CK(cudaMalloc((void **)&y[i], sizeof(float) * TMAX * p->N[i]));
        for (int ti = 0; ti < nT; ti++) {
            int T = Ts[ti];
            float best[5] = {1e30f, 1e30f, 1e30f, 1e30f, 1e30f};
            for (int v = v0; v < v1; v++)
                for (int round = 0; round < 3 && (v != 3 || T <= HR_CU_MMH_MAX_T); round++) {
                    float ms = pass(s, h, p, w, sets, x, xh, ws, y, T, v);
                    if (ms < best[v]) best[v] = ms;
                }
            printf("%-22s %3d", p->name, T);
            for (int v = v0; v < v1; v++)
                if (best[v] < 1e30f)
                    printf(" %12.0f", wb / (best[v] * 1e-3) / 1e9);
                else
                    printf(" %12s", "-");
            printf("\n");
        }
        for (int k = 0; k < sets; k++)
            for (int i = 0; i < p->n; i++)
                cudaFree(w[k][i]);
        for (int i = 0; i < p->n; i++)
            cudaFree(y[i]);
        cudaFree(x);
        cudaFree(xh);
    }
    cudaFree(ws);
}

/* mmw at 64 rows of x by the most K splits it may take (the cluster size), and how many such
 * clusters the device holds at once. */
static void mmw_splits_section(cudaStream_t s, cublasHandle_t h) {
    static const int caps[] = {1, 2, 4, 8}, one[] = {64};
    for (size_t i = 0; i < sizeof caps / sizeof *caps; i++) {
        hr_cu_mmw_max_splits = caps[i];
        printf("mmw with at most %d splits: %d clusters of %d resident (64-row tiles)\n", caps[i],
               hr_cu_mmw_clusters(64, caps[i]), caps[i]);
        bf16_section(s, h, one, 1, 1);
    }
    hr_cu_mmw_max_splits = HR_CU_MMW_SPLITS;
}

int main(int argc, char **argv) {
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 1;
    cublasSetStream(h, s);
    static const int gemv_ts[] = {1, 2, 4}, mmh_ts[] = {8, 16, 32, 48, 64, 96, 128};
    if (argc > 1 && argv[1][0] == 'q') {
        qsection(s, h, argc > 2 ? argv[2] : NULL, argc > 3 ? atoi(argv[3]) : 0);
        return 0;
    }
    if (argc > 1 && argv[1][0] == 'h') {
        bf16_section(s, h, mmh_ts, 7, 1);
        if (hr_cu_mmw_ok()) mmw_splits_section(s, h);
        return 0;
    }
    bf16_section(s, h, gemv_ts, 3, 0);
    bf16_section(s, h, mmh_ts, 7, 1);
    gemm_section(s, h);
    qsection(s, h, NULL, 0);
    return 0;
}
