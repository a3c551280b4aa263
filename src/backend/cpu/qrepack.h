/* Row-interleaved ("repacked") Q4_0 / Q8_0 weights for the CPU matmul, made once when the
 * backend copies a weight in (llama.cpp's Q4_0_8x4 idea, our own layout): rows 8t .. 8t + 7
 * form tile t, stored block by block, so a kernel over a tile reads one sequential stream and
 * one vector of 8 f32 lanes holds the 8 rows' results (no horizontal sums, one FMA scales 8
 * rows' blocks). Block b of tile t sits where the 8 rows' blocks b sat in row-major order
 * (tile t at byte 8 t nb bb, block b at 8 b bb within it, bb the format's block bytes):
 *   bytes 0-15:  the 8 rows' f16 scales, row r at 2 r;
 *   then chunks of 32 bytes: chunk c holds the 4-byte word c of each row's codes, row r at
 *   4 r. Q4_0: codes bytes 4c .. 4c + 3 (low nibbles elements 4c .., high 16 + 4c ..), 4
 *   chunks; Q8_0: int8 codes 4c .. 4c + 3 stored as unsigned (code XOR 0x80), 8 chunks.
 * The N % 8 rows after the last whole tile stay row-major where they were. The tensor takes
 * the same bytes either way, so what counts weight bytes needs no change. */
#ifndef HR_BACKEND_CPU_QREPACK_H
#define HR_BACKEND_CPU_QREPACK_H

#include <stddef.h>
#include <stdint.h>

#include "base/pool.h"
#include "tensor/tensor.h"

enum { HR_QROWS = 8 }; /* rows per tile */

/* Whether the CPU backend repacks a [N, K] weight of type t (Q4_0 / Q8_0 matrices of at
 * least one tile). */
int hr_qrepack_fits(hr_dtype t, int ndim, int64_t N);
/* dst = the repacked form of row-major src ([N, K] of type t; N, K as hr_qrepack_fits
 * allows), tiles spread over pool (NULL: this thread). */
void hr_qrepack(hr_pool *pool, hr_dtype t, const void *src, void *dst, int64_t N, int64_t K);
/* Block blk of row `row` of w (repacked when w->row_tile) in its GGUF form, into out
 * (hr_dtype_get(w->dtype)->block_bytes of it). */
void hr_qrepack_block(const hr_tensor *w, int64_t row, int64_t blk, uint8_t *out);

#endif
