/* The CPU matmul kernels alone, one thread, bf16 weights [N, K] (4096 x 1024 by default)
 * times f32 activations [T, K] for several T: GFLOP/s (compute-bound large T) and weight
 * GB/s (memory-bound T = 1), median of 7 runs, per kernel level.
 *   bench_matmul [N] [K] */
#include <stdio.h>

#include "backend/cpu/kernels.h"
#include "backend/cpu/matmul_bf16.h"
#include "common.h"
#include "tensor/dtype.h"

static double run(const hr_cpu_kernels *k, float *y, const float *x, const uint16_t *w, int N, int K,
                  int T) {
    double t[7];
    for (int r = 0; r < 7; r++) {
        uint64_t t0 = hr_now_ns();
        k->mm_bf16(y, N, x, K, w, K, T, 0, N);
        t[r] = (double)(hr_now_ns() - t0) * 1e-9;
    }
    qsort(t, 7, sizeof *t, cmp_double);
    return t[3];
}

/* --compute bf16 on AMX: packing x plus the tile kernel. */
static double run_amx(uint16_t *xp, float *y, const float *x, const uint16_t *w, int N, int K, int T) {
    double t[7];
    for (int r = 0; r < 7; r++) {
        uint64_t t0 = hr_now_ns();
        hr_amx_pack(xp, x, K, K, T, 0, (T + 15) / 16);
        hr_amx_mm(y, N, xp, w, K, T, 0, N);
        t[r] = (double)(hr_now_ns() - t0) * 1e-9;
    }
    qsort(t, 7, sizeof *t, cmp_double);
    return t[3];
}

/* --compute bf16 on VDPBF16PS: rounding x to bf16 plus the kernel. */
static double run_bx(uint16_t *xb, float *y, const float *x, const uint16_t *w, int N, int K, int T) {
    double t[7];
    for (int r = 0; r < 7; r++) {
        uint64_t t0 = hr_now_ns();
        for (long i = 0; i < (long)T * K; i++) xb[i] = hr_f32_to_bf16(x[i]);
        hr_cpu_kernels_avx512.mm_bx(y, N, xb, K, w, K, T, 0, N);
        t[r] = (double)(hr_now_ns() - t0) * 1e-9;
    }
    qsort(t, 7, sizeof *t, cmp_double);
    return t[3];
}

int main(int argc, char **argv) {
    int N = argc > 1 ? atoi(argv[1]) : 4096, K = argc > 2 ? atoi(argv[2]) : 1024;
    int Ts[] = {1, 4, 8, 16, 64, 256};
    enum { NT = sizeof Ts / sizeof Ts[0], TMAX = 256 };
    uint16_t *w = malloc(sizeof(uint16_t) * (size_t)N * K);
    float *x = malloc(sizeof(float) * TMAX * (size_t)K), *y = malloc(sizeof(float) * TMAX * (size_t)N);
    if (!w || !x || !y) return 1;
    for (long i = 0; i < (long)N * K; i++) w[i] = hr_f32_to_bf16((float)((i * 7919) % 1000) / 1000.0f - 0.5f);
    for (long i = 0; i < (long)TMAX * K; i++) x[i] = (float)((i * 104729) % 1000) / 1000.0f - 0.5f;
    const hr_cpu_kernels *levels[] = {&hr_cpu_kernels_avx2, &hr_cpu_kernels_avx512};
    hr_cpu_level need[] = {HR_CPU_AVX2, HR_CPU_AVX512};
    printf("bf16 matmul, N=%d K=%d, one thread\n", N, K);
    for (int l = 0; l < 2; l++) {
        if (hr_cpu()->level < need[l]) continue;
        for (int i = 0; i < NT; i++) {
            double s = run(levels[l], y, x, w, N, K, Ts[i]);
            printf("%-7s T=%-3d %8.3f ms  %7.1f GFLOP/s  %6.1f GB/s of weights\n", levels[l]->name, Ts[i],
                   s * 1e3, 2.0 * N * K * Ts[i] / s * 1e-9, 2.0 * N * K / s * 1e-9);
        }
    }
    uint16_t *xp = malloc(sizeof(uint16_t) * (size_t)hr_amx_pack_elems(TMAX, K));
    if (hr_cpu()->avx512bf16 && xp)
        for (int i = 0; i < NT; i++) {
            double s = run_bx(xp, y, x, w, N, K, Ts[i]);
            printf("%-7s T=%-3d %8.3f ms  %7.1f GFLOP/s  %6.1f GB/s of weights\n", "bf16dot", Ts[i],
                   s * 1e3, 2.0 * N * K * Ts[i] / s * 1e-9, 2.0 * N * K / s * 1e-9);
        }
    if (hr_cpu()->amx && hr_amx_init() && xp && K % 32 == 0 && N % 16 == 0)
        for (int i = 0; i < NT; i++) {
            double s = run_amx(xp, y, x, w, N, K, Ts[i]);
            printf("%-7s T=%-3d %8.3f ms  %7.1f GFLOP/s  %6.1f GB/s of weights\n", "amx", Ts[i],
                   s * 1e3, 2.0 * N * K * Ts[i] / s * 1e-9, 2.0 * N * K / s * 1e-9);
        }
    free(xp);
    free(w);
    free(x);
    free(y);
    return 0;
}
