/* bf16 / f16 weights into the 4-row tiles of tensor/tile16.h, made once when the CPU backend
 * copies a matrix in at the AVX2 level: the decode row dots then read one stream per tile
 * (about 1.4x the weight bandwidth of four row streams on a Zen 3, docs/perf-notes.md). */
#ifndef HR_BACKEND_CPU_WTILE16_H
#define HR_BACKEND_CPU_WTILE16_H

#include <stdint.h>

#include "base/pool.h"
#include "tensor/tensor.h"

/* Whether the CPU backend tiles a weight of this type and shape now: a bf16 / f16 matrix of
 * at least one tile, whole 8-column blocks per row, on a CPU at the AVX2 level (the
 * AVX-512 kernels, VDPBF16PS and AMX read rows). */
int hr_wtile16_fits(hr_dtype t, int ndim, const int64_t *shape);
/* dst = the tiled form of row-major src ([N, K] of 2-byte elements), tiles spread over pool
 * (NULL: this thread). */
void hr_wtile16_pack(hr_pool *pool, const void *src, void *dst, int64_t N, int64_t K);

#endif
