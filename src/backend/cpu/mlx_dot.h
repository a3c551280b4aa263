/* Fast dot products of MLX 4- and 8-bit weight rows with f32 activations (decode GEMV and
 * every T alike): per group the codes are widened in registers and multiplied into f32
 * lanes, y = sum_g s_g * (x_g . q_g) + sum_g b_g * sum(x_g), with sum(x_g) computed once per
 * token (hr_mlx_xsums). AVX2 and AVX-512 variants; the reference is the dequantized-row path
 * of matmul_quant.c (the generic level and the other bit widths), which they are tested
 * against. A dot reads only its row and token, so matmuls built on it are batch invariant. */
#ifndef HR_BACKEND_CPU_MLX_DOT_H
#define HR_BACKEND_CPU_MLX_DOT_H

#include <stdint.h>

/* w: one packed row of K codes; s, b: its K / group scales and biases; x: K activations and
 * xs: their K / group group sums. */
typedef float (*hr_mlx_dot_fn)(const uint8_t *w, const float *s, const float *b, const float *x,
                               const float *xs, long K, int group);

typedef struct {
    const char *name;
    hr_mlx_dot_fn dot[9]; /* by bits; NULL: the dequantized-row path */
} hr_cpu_mlx_dots;

extern const hr_cpu_mlx_dots hr_cpu_mlx_dots_avx2;
extern const hr_cpu_mlx_dots hr_cpu_mlx_dots_avx512;

/* The table for the current hr_cpu() level, NULL at the generic level. */
const hr_cpu_mlx_dots *hr_cpu_mlx_dots_get(void);

/* xs[K / group]: the group sums of x[K], in order. */
void hr_mlx_xsums(const float *x, long K, int group, float *xs);

#endif
