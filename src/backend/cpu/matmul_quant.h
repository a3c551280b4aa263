/* Matmul with a quantized weight (GGUF block formats, MLX affine): what matmul.c's workers call for
 * the output columns they take. See matmul_quant.c. */
#ifndef HR_BACKEND_CPU_MATMUL_QUANT_H
#define HR_BACKEND_CPU_MATMUL_QUANT_H

#include <stddef.h>

#include "backend/cpu/kernels.h"
#include "backend/cpu/mlx_dot.h"
#include "backend/cpu/qdot.h"
#include "base/pool.h"
#include "tensor/tensor.h"

typedef struct {
    const hr_tensor *w; /* [N, K], a GGUF block type or MLX affine */
    const float *x;     /* [T, K] */
    int T;
    long K;
    hr_qdot_fn dot;      /* set: x quantized into xq; else the dequantized-row path */
    hr_qdot4_fn dot4;    /* NULL: dot per token */
    hr_qrows_fn rows1;   /* set: w is repacked (qrepack.h), its tiles through rows1 / rows4 */
    hr_qrows_fn rows4;   /* NULL: rows1 per token */
    hr_qrows_fn rows4x2; /* set: pairs of tiles with four tokens through it */
    const void *xq;      /* [T] rows of hr_qx_row_bytes(K): hr_q8x or hr_q8k blocks */
    hr_mlx_dot_fn mdot;  /* set: MLX dots over x with its group sums xs */
    const float *xs;     /* [T, K / group] */
    float *sb;           /* per thread: a row's scales and biases, 2 * K / 32 floats */
    const hr_cpu_kernels *k;
    float *rows; /* per thread: HR_QMM_ROWS dequantized weight rows of K floats */
} hr_qmm;

enum { HR_QMM_ROWS = 16 }; /* weight rows dequantized at a time (matmul chunks are multiples) */

/* Scratch bytes a T-token matmul with rows of K needs on n_threads threads. */
size_t hr_qmm_scratch_bytes(int T, long K, int n_threads);
/* Sets q up for y = x w^T in the scratch (hr_qmm_scratch_bytes of it), quantizing x on the
 * pool where w's type has an 8-bit dot product. */
void hr_qmm_prepare(hr_qmm *q, hr_pool *pool, const float *x, const hr_tensor *w, int T,
                    void *scratch);
/* Columns [n0, n1) of y[T, N] (no bias), on pool thread `thread`. */
void hr_qmm_cols(const hr_qmm *q, float *y, long n0, long n1, int thread);

#endif
