/* The 4-row tiles of bf16 / f16 matrices that the CPU backend makes when it copies a weight
 * in on AVX2 (backend/cpu/wtile16.h): rows 4t .. 4t + 3 form tile t, which starts where row 4t
 * started and holds the four rows 8 columns at a time (columns 8b .. 8b + 7 of row 4t + r at
 * 32b + 8r within the tile), so a kernel over the tile reads one sequential stream instead of
 * four. The N % 4 rows after the last tile stay row-major where they were; the matrix takes
 * the same bytes. Quantized weights tile differently (backend/cpu/qrepack.h). */
#ifndef HR_TENSOR_TILE16_H
#define HR_TENSOR_TILE16_H

#include <stdint.h>

#include "tensor/tensor.h"

enum { HR_TILE16_ROWS = 4, HR_TILE16_COLS = 8 };

/* Where element (n, k) of a [N, K] matrix in this layout sits, in elements from its start
 * (K a multiple of HR_TILE16_COLS). */
static inline int64_t hr_tile16_off(int64_t N, int64_t K, int64_t n, int64_t k) {
    if (n >= N / HR_TILE16_ROWS * HR_TILE16_ROWS) return n * K + k;
    return n / HR_TILE16_ROWS * HR_TILE16_ROWS * K + k / HR_TILE16_COLS * 32 +
           n % HR_TILE16_ROWS * HR_TILE16_COLS + k % HR_TILE16_COLS;
}

/* Where the element of row-major index i of a float tensor t (f32, bf16, f16) sits: i
 * itself unless the CPU backend tiled t. */
static inline int64_t hr_tensor_elem_off(const hr_tensor *t, int64_t i) {
    if (!t->row_tile) return i;
    int64_t K = t->shape[1];
    return hr_tile16_off(t->shape[0], K, i / K, i % K);
}

#endif
