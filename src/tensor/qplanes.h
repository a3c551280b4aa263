/* The planar row layout of GGUF blocks that the CUDA backend reads with 16-byte loads: a row's
 * codes of every block first, then its scales, so the codes of a block start 16-byte aligned
 * (a Q4_0 block is 18 bytes, Q4_1 20, Q5_0 22, Q5_1 24, Q8_0 34 and a Q6_K super-block 210: in
 * file order most of them are only 2-, 4- or 8-byte aligned). The row keeps its bytes, padded
 * to a multiple of 16:
 * - Q4_0: the 16 code bytes of each block, then the blocks' f16 scales;
 * - Q4_1: the 16 code bytes of each block, then each block's f16 d and m (4 bytes);
 * - Q5_0: the 16 code bytes of each block, then the blocks' 4-byte qh, then the f16 scales;
 * - Q5_1: the 16 code bytes of each block, then the qh, then each block's d and m (4 bytes);
 * - Q8_0: the 32 code bytes of each block, then the f16 scales;
 * - Q6_K: each super-block's 128 low-bit bytes, then the 64 high-bit bytes of each, then the 16
 *   int8 scales of each, then the f16 super-block scales.
 * Inside a plane a block's bytes keep their file order. Q4_K and Q5_K (144 and 176 bytes, their
 * qh and codes at 16-byte offsets) are read in file order. */
#ifndef HR_TENSOR_QPLANES_H
#define HR_TENSOR_QPLANES_H

#include <stddef.h>
#include <stdint.h>

#include "tensor/dtype.h"

/* 1 for the formats with a planar layout: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q6_K. */
int hr_qplanes_has(hr_dtype t);
/* Bytes of one planar row of K elements: the file's row bytes rounded up to 16. */
size_t hr_qplanes_row_bytes(hr_dtype t, int64_t K);
/* One row of K elements from file layout (src) into the planar layout (dst, row_bytes long,
 * padding zeroed), and back. */
void hr_qplanes_pack(hr_dtype t, void *dst, const void *src, int64_t K);
void hr_qplanes_unpack(hr_dtype t, void *dst, const void *src, int64_t K);

#endif
