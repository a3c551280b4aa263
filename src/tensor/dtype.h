/* Element types of tensors: plain (f32, f16, bf16, integers) and quantized block formats
 * (GGUF Q*_0/Q*_1, K-quants and IQ4, MLX affine 2..8-bit groups). A quantized format stores
 * `block` elements in `block_bytes` bytes; MLX affine keeps its scales and biases in
 * companion tensors (see tensor.h), so its block is the 32 elements that fill `bits` whole
 * u32 words of its little-endian bit stream (tensor/mlx_quant.h). */
#ifndef HR_TENSOR_DTYPE_H
#define HR_TENSOR_DTYPE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef enum {
    HR_F32,
    HR_F16,
    HR_BF16,
    HR_I8,
    HR_U8,
    HR_I32,
    HR_U32,
    HR_I64,
    HR_Q8_0, /* GGUF: 32 elements, f16 scale + 32 x i8 */
    HR_Q4_0, /* GGUF: 32 elements, f16 scale + 16 bytes of nibbles */
    HR_Q4_1, /* GGUF: 32 elements, f16 scale and min + 16 bytes of nibbles */
    HR_Q5_0, /* GGUF: 32 elements, f16 scale + 4 bytes of high bits + 16 of nibbles */
    HR_Q5_1, /* GGUF: 32 elements, f16 scale and min + high bits + nibbles */
    HR_Q2_K, /* GGUF K-quants: 256-element super-blocks */
    HR_Q3_K,
    HR_Q4_K,
    HR_Q5_K,
    HR_Q6_K,
    HR_IQ4_NL, /* GGUF: 32 elements, f16 scale + 16 bytes of indices into a fixed table */
    HR_IQ4_XS, /* GGUF: 256 elements, f16 scale + 6-bit sub-block scales + indices */
    HR_MLX_Q2, /* MLX affine, 2..8 bits per element packed in u32 words, low bits first; */
    HR_MLX_Q3, /* per-group scales and biases; value = scale * q + bias */
    HR_MLX_Q4,
    HR_MLX_Q5,
    HR_MLX_Q6,
    HR_MLX_Q8,
    HR_DTYPE_COUNT
} hr_dtype;

typedef struct {
    const char *name;
    int block;       /* elements per block (1 for plain types) */
    int block_bytes; /* bytes per block */
    int quantized;
} hr_dtype_info;

const hr_dtype_info *hr_dtype_get(hr_dtype t);
static inline const char *hr_dtype_name(hr_dtype t) { return hr_dtype_get(t)->name; }
/* Bytes for n elements (n must be a multiple of the block for quantized types). */
size_t hr_dtype_bytes(hr_dtype t, int64_t n);

static inline float hr_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Round to nearest even, as torch does; NaN stays NaN. */
static inline uint16_t hr_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float hr_f16_to_f32(uint16_t h);
uint16_t hr_f32_to_f16(float f);

#endif
