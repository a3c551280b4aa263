/* Reference dequantization of every GGUF block format hearth reads (Q8_0 .. IQ4_XS, see
 * dtype.h and docs/quant.md) and reference quantizers for the ones hearth writes itself.
 * Both are bit-exact with gguf-py's numpy code (tests/unit/test_quant.c checks committed
 * gguf-py outputs; the K-quant quantizers, which gguf-py lacks, by error bounds): the
 * definition the CPU kernels are tested against. */
#ifndef HR_TENSOR_QUANT_H
#define HR_TENSOR_QUANT_H

#include <stdint.h>

#include "tensor/dtype.h"

/* Decodes n elements (a multiple of the block; F32/F16/BF16 too) from blocks into out. */
void hr_dequant_row(hr_dtype t, const void *blocks, float *out, int64_t n);
/* 1 when hr_quant_row can write t: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K. */
int hr_quant_can_write(hr_dtype t);
/* Encodes n floats (a multiple of the block: 32, or 256 for the K-quants); Q8_0 .. Q5_1 as
 * gguf-py's quantize does, the K-quants with tensor/quant_k.c's quantizers (gguf-py has
 * none). t must be one hr_quant_can_write accepts. */
void hr_quant_row(hr_dtype t, const float *x, void *blocks, int64_t n);

#endif
