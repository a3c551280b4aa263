/* The CPU matmul kernels alone, one thread, bf16 weights [N, K] (4096 x 1024 by default)
 * times f32 activations [T, K] for several T: GFLOP/s (compute-bound large T) and weight
 * GB/s (memory-bound T = 1), median of 7 runs after one untimed, per kernel level, for the
 * 4-row tiles the backend makes on AVX2 (tensor/tile16.h) and for the two bf16-product paths
 * of --compute bf16 (VDPBF16PS, AMX), x preparation included.
 *   bench_matmul [N] [K] */
#include <stdio.h>

#include "backend/cpu/kernels.h"
#include "backend/cpu/matmul_bf16.h"
#include "backend/cpu/wtile16.h"
#include "common.h"
#include "tensor/dtype.h"
#include "tensor/tile16.h"

/* What one timed run multiplies: an f32-path kernel level, VDPBF16PS, or AMX. */
typedef enum { PATH_F32, PATH_TILES, PATH_BX, PATH_AMX } mm_path;

typedef struct {
    mm_path path;
    const hr_cpu_kernels *k; /* PATH_F32 */
    uint16_t *scratch;       /* bf16 / packed x for the bf16 paths */
    float *y;
    const float *x;
    const uint16_t *w, *wt; /* wt: w in 4-row tiles */
    int N, K;
} mm_bench;

/* One matmul of T tokens; the bf16 paths include preparing x, as the backend does. */
static void run_once(const mm_bench *b, int T) {
    switch (b->path) {
    case PATH_F32: b->k->mm_bf16(b->y, b->N, b->x, b->K, b->w, b->K, T, 0, b->N); break;
    case PATH_TILES: b->k->mm_bf16_t4(b->y, b->N, b->x, b->K, b->wt, b->K, T, 0, b->N); break;
    case PATH_BX:
        for (long i = 0; i < (long)T * b->K; i++)
            b->scratch[i] = hr_f32_to_bf16(b->x[i]);
        hr_cpu_kernels_avx512.mm_bx(b->y, b->N, b->scratch, b->K, b->w, b->K, T, 0, b->N);
        break;
    case PATH_AMX:
        hr_amx_pack(b->scratch, b->x, b->K, b->K, T, 0, (T + 15) / 16);
        hr_amx_mm(b->y, b->N, b->scratch, b->w, b->K, T, 0, b->N);
        break;
    }
}

/* Median of 7 runs at each T, one line each. */
static void report(const char *name, const mm_bench *b, const int *Ts, int n) {
    for (int i = 0; i < n; i++) {
        double t[7];
        run_once(b, Ts[i]);
        for (int r = 0; r < 7; r++) {
            uint64_t t0 = hr_now_ns();
            run_once(b, Ts[i]);
            t[r] = (double)(hr_now_ns() - t0) * 1e-9;
        }
        qsort(t, 7, sizeof *t, cmp_double);
        double s = t[3], NK = (double)b->N * b->K;
        printf("%-7s T=%-3d %8.3f ms  %7.1f GFLOP/s  %6.1f GB/s of weights\n", name, Ts[i], s * 1e3,
               2.0 * NK * Ts[i] / s * 1e-9, 2.0 * NK / s * 1e-9);
    }
}

int main(int argc, char **argv) {
    int N = argc > 1 ? atoi(argv[1]) : 4096, K = argc > 2 ? atoi(argv[2]) : 1024;
    int Ts[] = {1, 4, 8, 16, 64, 256};
    enum { NT = sizeof Ts / sizeof Ts[0], TMAX = 256 };
    uint16_t *w = malloc(sizeof(uint16_t) * (size_t)N * K),
             *wt = malloc(sizeof(uint16_t) * (size_t)N * K);
    float *x = malloc(sizeof(float) * TMAX * (size_t)K),
          *y = malloc(sizeof(float) * TMAX * (size_t)N);
    uint16_t *xp = malloc(sizeof(uint16_t) * (size_t)hr_amx_pack_elems(TMAX, K) +
                          sizeof(uint16_t) * TMAX * (size_t)K);
    if (!w || !wt || !x || !y || !xp) return 1;
    for (long i = 0; i < (long)N * K; i++)
        w[i] = hr_f32_to_bf16((float)((i * 7919) % 1000) / 1000.0f - 0.5f);
    for (long i = 0; i < (long)TMAX * K; i++)
        x[i] = (float)((i * 104729) % 1000) / 1000.0f - 0.5f;
    if (K % HR_TILE16_COLS == 0 && N >= HR_TILE16_ROWS) hr_wtile16_pack(NULL, w, wt, N, K);
    printf("bf16 matmul, N=%d K=%d, one thread\n", N, K);
    mm_bench b = {PATH_F32, &hr_cpu_kernels_avx2, xp, y, x, w, wt, N, K};
    if (hr_cpu()->level >= HR_CPU_AVX2) report("avx2", &b, Ts, NT);
    b.path = PATH_TILES;
    if (hr_cpu()->level >= HR_CPU_AVX2 && K % HR_TILE16_COLS == 0 && N >= HR_TILE16_ROWS)
        report("tiles", &b, Ts, NT);
    b.path = PATH_F32;
    b.k = &hr_cpu_kernels_avx512;
    if (hr_cpu()->level >= HR_CPU_AVX512) report("avx512", &b, Ts, NT);
    b.path = PATH_BX;
    if (hr_cpu()->avx512bf16) report("bf16dot", &b, Ts, NT);
    b.path = PATH_AMX;
    if (hr_amx_fits(N, K)) report("amx", &b, Ts, NT);
    free(xp);
    free(w);
    free(wt);
    free(x);
    free(y);
    return 0;
}
