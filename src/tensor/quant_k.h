/* The K-quant super-block quantizers behind hr_quant_row (tensor/quant.h): one 256-element
 * super-block of x into b, in the layouts tensor/quant.c's dequantizers read. */
#ifndef HR_TENSOR_QUANT_K_H
#define HR_TENSOR_QUANT_K_H

#include <stdint.h>

#include "tensor/dtype.h"

void hr_quant_q4_k(const float *x, uint8_t *b);
void hr_quant_q5_k(const float *x, uint8_t *b);
void hr_quant_q6_k(const float *x, uint8_t *b);

#endif
