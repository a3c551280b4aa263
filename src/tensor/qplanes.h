/* The planar row layout of GGUF blocks that the CUDA backend reads with 16-byte loads: a row's
 * codes of every block first, then its scales, so the codes of a block start 16-byte aligned
 * (a Q4_0 block is 18 bytes, a Q8_0 block 34 and a Q6_K super-block 210: in file order most
 * of them are only 2-byte aligned). The row keeps its bytes, padded to a multiple of 16:
 * - Q4_0: the 16 code bytes of each block, then the blocks' f16 scales;
 * - Q8_0: the 32 code bytes of each block, then the f16 scales;
 * - Q6_K: each super-block's 128 low-bit bytes, then the 64 high-bit bytes of each, then the 16
 *   int8 scales of each, then the f16 super-block scales.
 * Inside a plane a block's bytes keep their file order. Q4_K (144 bytes, its codes at offset 16)
 * is read in file order. */
#ifndef HR_TENSOR_QPLANES_H
#define HR_TENSOR_QPLANES_H

#include <stddef.h>
#include <stdint.h>

#include "tensor/dtype.h"

/* 1 for the formats with a planar layout: Q4_0, Q8_0, Q6_K. */
int hr_qplanes_has(hr_dtype t);
/* Bytes of one planar row of K elements: the file's row bytes rounded up to 16. */
size_t hr_qplanes_row_bytes(hr_dtype t, int64_t K);
/* One row of K elements from file layout (src) into the planar layout (dst, row_bytes long,
 * padding zeroed), and back. */
void hr_qplanes_pack(hr_dtype t, void *dst, const void *src, int64_t K);
void hr_qplanes_unpack(hr_dtype t, void *dst, const void *src, int64_t K);

#endif
