/* MLX affine quantization (mlx's quantize / dequantize, mode "affine"; docs/quant.md): a row
 * of n elements is n / group_size groups, each with a scale and a bias (companion tensors of
 * f32, f16 or bf16, one value per group), and element i's code q (`bits` wide) sits at bit
 * i * bits of the row's little-endian bit stream, stored as u32 words (for 3, 5 and 6 bits
 * codes straddle word boundaries). value = scale * q + bias, in f32. The quantizer is mlx's
 * CPU quantize (mlx/backend/cpu/quantized.cpp) operation for operation. */
#ifndef HR_TENSOR_MLX_QUANT_H
#define HR_TENSOR_MLX_QUANT_H

#include <stdint.h>

#include "tensor/tensor.h"

/* The bits of an MLX dtype (2..8), 0 for any other type. */
int hr_mlx_bits(hr_dtype t);
/* The MLX dtype of `bits`, HR_DTYPE_COUNT when bits is not 2, 3, 4, 5, 6 or 8. */
hr_dtype hr_mlx_dtype(int bits);
/* 1 for the group sizes mlx supports: 32, 64, 128. */
int hr_mlx_group_ok(int group_size);

/* Code i of a packed row. */
uint32_t hr_mlx_code(const void *row, int bits, int64_t i);
/* Element i (row-major) of an f32 / f16 / bf16 tensor (a scales or biases companion), tiled by
 * the CPU backend or not (tensor/tile16.h). */
float hr_mlx_companion(const hr_tensor *t, int64_t i);
/* Elements [c0, c0 + n) of row r of w, an MLX tensor with its companions: the reference
 * dequantization every CPU path is defined by. */
void hr_mlx_dequant(const hr_tensor *w, int64_t r, int64_t c0, int64_t n, float *out);

/* Quantizes x[n] (n a multiple of group) as mlx does: packed gets n * bits / 8 bytes, and
 * scales / biases n / group values as computed in f32, before rounding to the stored dtype
 * (the codes are computed from the unrounded ones, as in mlx). */
void hr_mlx_quantize(const float *x, int64_t n, int bits, int group, void *packed, float *scales,
                     float *biases);

/* v as a companion of dtype t stores it (rounded to bf16 / f16, or kept for f32). */
float hr_mlx_round_companion(float v, hr_dtype t);
/* x[n] quantized as hr_mlx_quantize, with scales and biases stored in dtype `companion`, and
 * dequantized back: what a converted checkpoint's weight reads as. */
void hr_mlx_fake_quant(const float *x, int64_t n, int bits, int group, hr_dtype companion,
                       float *out);

#endif
