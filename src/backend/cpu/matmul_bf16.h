/* The bf16-product matmul of `--compute bf16`: x is rounded to bf16 (nearest even), the
 * products with bf16 weights are exact and accumulate in f32. On AMX CPUs it runs on tiles
 * (matmul_amx.c); elsewhere x is rounded and the f32 kernels do the rest. */
#ifndef HR_BACKEND_CPU_MATMUL_BF16_H
#define HR_BACKEND_CPU_MATMUL_BF16_H

#include <stdint.h>

/* Asks the kernel (once) for this process's AMX tile state; 1 if granted. Call only when
 * hr_cpu()->amx. */
int hr_amx_init(void);
/* 1 when a weight [N, K] multiplies on AMX tiles here: the CPU has them (not capped), the
 * kernel grants them, K is a multiple of 32 and N of 16. */
int hr_amx_fits(long N, long K);
/* uint16 elements of x[T, K] packed for hr_amx_mm (K a multiple of 32). */
long hr_amx_pack_elems(int T, int K);
/* Packs token groups [g0, g1) (16 tokens each) of x[T, K]. */
void hr_amx_pack(uint16_t *xp, const float *x, long ldx, int K, int T, int g0, int g1);
/* Columns [n0, n1) (multiples of 16) of y[T, ldy] = x w[N, K]^T from the packed x. */
void hr_amx_mm(float *y, long ldy, const uint16_t *xp, const uint16_t *w, int K, int T, long n0,
               long n1);

#endif
