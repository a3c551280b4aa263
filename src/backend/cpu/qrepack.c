/* Repacking Q4_0 / Q8_0 weights into tiles of HR_QROWS interleaved rows, and reading one
 * block of a repacked weight back in its GGUF form (layout: qrepack.h). */
#include "backend/cpu/qrepack.h"

#include <string.h>

#include "tensor/dtype.h"

int hr_qrepack_fits(hr_dtype t, int ndim, int64_t N) {
    return (t == HR_Q4_0 || t == HR_Q8_0) && ndim == 2 && N >= HR_QROWS;
}

/* The code bytes' XOR: Q8_0's signed codes are kept as unsigned ones. */
static uint8_t code_xor(hr_dtype t) { return t == HR_Q8_0 ? 0x80 : 0; }

/* Offset within a repacked block of row r's code byte j. */
static size_t code_at(int r, int j) { return 2 * HR_QROWS + 32 * (size_t)(j / 4) + 4 * r + j % 4; }

static void repack_tile(hr_dtype t, const uint8_t *src, uint8_t *dst, int64_t nb) {
    int bb = hr_dtype_get(t)->block_bytes, codes = bb - 2;
    uint8_t x = code_xor(t);
    for (int64_t b = 0; b < nb; b++) {
        uint8_t *o = dst + b * HR_QROWS * bb;
        for (int r = 0; r < HR_QROWS; r++) {
            const uint8_t *s = src + (r * nb + b) * bb;
            memcpy(o + 2 * r, s, 2);
            for (int j = 0; j < codes; j++)
                o[code_at(r, j)] = s[2 + j] ^ x;
        }
    }
}

typedef struct {
    hr_dtype t;
    const uint8_t *src;
    uint8_t *dst;
    int64_t N, K;
} repack_ctx;

static void repack_task(void *ctx, int th, int nth) {
    repack_ctx *c = ctx;
    int64_t tiles = c->N / HR_QROWS, nb = c->K / 32;
    size_t tile_bytes = (size_t)hr_dtype_bytes(c->t, HR_QROWS * c->K);
    for (int64_t i = tiles * th / nth; i < tiles * (th + 1) / nth; i++)
        repack_tile(c->t, c->src + i * tile_bytes, c->dst + i * tile_bytes, nb);
}

void hr_qrepack(hr_pool *pool, hr_dtype t, const void *src, void *dst, int64_t N, int64_t K) {
    repack_ctx c = {t, src, dst, N, K};
    if (pool)
        hr_pool_run(pool, repack_task, &c);
    else
        repack_task(&c, 0, 1);
    size_t done = (size_t)hr_dtype_bytes(t, N / HR_QROWS * HR_QROWS * K);
    memcpy((uint8_t *)dst + done, (const uint8_t *)src + done, hr_dtype_bytes(t, N * K) - done);
}

void hr_qrepack_block(const hr_tensor *w, int64_t row, int64_t blk, uint8_t *out) {
    int bb = hr_dtype_get(w->dtype)->block_bytes;
    int64_t nb = w->shape[1] / 32;
    const uint8_t *base = w->data;
    if (!w->row_tile || row >= w->shape[0] / HR_QROWS * HR_QROWS) {
        memcpy(out, base + (row * nb + blk) * bb, (size_t)bb);
        return;
    }
    int r = (int)(row % HR_QROWS);
    const uint8_t *o = base + ((row - r) * nb + blk * HR_QROWS) * bb;
    uint8_t x = code_xor(w->dtype);
    memcpy(out, o + 2 * r, 2);
    for (int j = 0; j < bb - 2; j++)
        out[2 + j] = o[code_at(r, j)] ^ x;
}
