/* Row-interleaved ("repacked") Q4_0 / Q5_0 / Q8_0 / Q4_K / Q5_K / Q6_K weights for the CPU matmul,
 * made once when the backend copies a weight in (llama.cpp's Q4_0_8x4 idea, our own layout): rows
 * 8t .. 8t + 7 form tile t, stored block by block, so a kernel over a tile reads one sequential
 * stream and one vector of 8 f32 lanes holds the 8 rows' results (no horizontal sums, one FMA
 * scales 8 rows' blocks). Block b of tile t sits where the 8 rows' blocks b sat in row-major order
 * (tile t at byte 8 t nb bb, block b at 8 b bb within it, bb the format's block bytes): first
 * the 8 rows' heads, then chunks of 32 bytes, chunk c holding the 4-byte word c of each row's
 * code bytes (row r at 4 r).
 *   Q4_0 / Q8_0: heads = the 8 f16 scales (16 bytes); Q4_0's 4 chunks of nibbles (low:
 *   elements 4c .., high: 16 + 4c ..), Q8_0's 8 chunks of int8 codes stored as unsigned
 *   (code XOR 0x80).
 *   Q5_0: heads (48 bytes) = 8 d (f16), then row r's qh at 16 + 4r with bit 4v + k (the
 *   fifth bit of element 4v + k) moved to bit 8k + v; Q4_0's 4 chunks of nibbles.
 *   Q4_K: heads (128 bytes) = 8 d, 8 dmin (f16), then per sub-block j at 32 + 8j + r row r's
 *   6-bit scale with its min's low 2 bits on top, at 96 + 4j + r % 4 the min's high 4 bits
 *   (nibble r / 4); 32 chunks of nibbles (GGUF order: code byte l holds element l % 32 of
 *   sub-blocks 2 (l / 32) and 2 (l / 32) + 1).
 *   Q5_K: Q4_K's heads, then 8 chunks of qh (bit j of byte l: the fifth bit of element l of
 *   sub-block j), then Q4_K's 32 chunks of nibbles.
 *   Q6_K: heads (144 bytes) = 8 d (f16), then per 16-element sub-block k at 16 + 8k + r row
 *   r's int8 scale; then the 48 chunks of ql (GGUF word c < 32: ql byte 64h + 32p + l holds
 *   element l of 32-element sub-block 4h + p in its low nibble, of 4h + p + 2 in its high one)
 *   and qh (word 32 + c', qh byte 32h + l: bits 2s of element l of sub-block 4h + s) in the
 *   order the tile reads them (hr_q6_k_chunk): per quarter g = 2h + u (h: half of the
 *   super-block, u: half of each sub-block, l in 16u ..) 12 chunks, ql's words with p = 0, p =
 *   1, then qh's, 4 each: one sequential stream.
 *
 * The N % 8 rows after the last whole tile stay row-major where they were. The tensor takes
 * the same bytes either way, so what counts weight bytes needs no change. */
#ifndef HR_BACKEND_CPU_QREPACK_H
#define HR_BACKEND_CPU_QREPACK_H

#include <stddef.h>
#include <stdint.h>

#include "base/pool.h"
#include "tensor/tensor.h"

enum { HR_QROWS = 8 }; /* rows per tile */

/* Where GGUF code word c (ql's 0 .. 31, qh's 32 .. 47) of a Q6_K block sits among a repacked
 * block's 48 chunks. */
static inline int hr_q6_k_chunk(int c) {
    int h = c < 32 ? c / 16 : (c - 32) / 8, w = c < 32 ? c % 8 : (c - 32) % 8;
    return 12 * (2 * h + w / 4) + (c < 32 ? 4 * (c % 16 / 8) : 8) + w % 4;
}

/* Whether the CPU backend repacks a [N, K] weight of type t (Q4_0 / Q5_0 / Q8_0 / Q4_K / Q5_K /
 * Q6_K matrices of at least one tile). */
int hr_qrepack_fits(hr_dtype t, int ndim, int64_t N);
/* dst = the repacked form of row-major src ([N, K] of type t; N, K as hr_qrepack_fits
 * allows), tiles spread over pool (NULL: this thread). */
void hr_qrepack(hr_pool *pool, hr_dtype t, const void *src, void *dst, int64_t N, int64_t K);
/* Block blk of row `row` of w (repacked when w->row_tile) in its GGUF form, into out
 * (hr_dtype_get(w->dtype)->block_bytes of it). */
void hr_qrepack_block(const hr_tensor *w, int64_t row, int64_t blk, uint8_t *out);

#endif
