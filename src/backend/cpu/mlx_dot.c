/* The MLX dot-product table for this CPU and the per-token group sums it takes; see
 * mlx_dot.h. */
#include "backend/cpu/mlx_dot.h"

#include <stddef.h>

#include "base/cpu.h"

const hr_cpu_mlx_dots *hr_cpu_mlx_dots_get(void) {
    switch (hr_cpu()->level) {
    case HR_CPU_AVX512: return &hr_cpu_mlx_dots_avx512;
    case HR_CPU_AVX2: return &hr_cpu_mlx_dots_avx2;
    default: return NULL;
    }
}

void hr_mlx_xsums(const float *x, long K, int group, float *xs) {
    for (long g = 0; g < K / group; g++) {
        float s = 0;
        for (long k = g * group; k < (g + 1) * group; k++)
            s += x[k];
        xs[g] = s;
    }
}
