/* The bf16 / f16 row tiles (wtile16.h, layout in tensor/tile16.h). */
#include "backend/cpu/wtile16.h"

#include <string.h>

#include "base/cpu.h"
#include "tensor/tile16.h"

int hr_wtile16_fits(hr_dtype t, int ndim, const int64_t *shape) {
    return (t == HR_BF16 || t == HR_F16) && ndim == 2 && shape[0] >= HR_TILE16_ROWS &&
           shape[1] % HR_TILE16_COLS == 0 && hr_cpu()->level == HR_CPU_AVX2;
}

typedef struct {
    const uint16_t *src;
    uint16_t *dst;
    int64_t N, K;
} pack_ctx;

static void pack_task(void *ctx, int th, int nth) {
    pack_ctx *c = ctx;
    int64_t tiles = c->N / HR_TILE16_ROWS, K = c->K;
    for (int64_t i = tiles * th / nth; i < tiles * (th + 1) / nth; i++) {
        int64_t n0 = i * HR_TILE16_ROWS;
        for (int r = 0; r < HR_TILE16_ROWS; r++)
            for (int64_t k = 0; k < K; k += HR_TILE16_COLS)
                memcpy(c->dst + hr_tile16_off(c->N, K, n0 + r, k), c->src + (n0 + r) * K + k,
                       sizeof(uint16_t) * HR_TILE16_COLS);
    }
}

void hr_wtile16_pack(hr_pool *pool, const void *src, void *dst, int64_t N, int64_t K) {
    pack_ctx c = {src, dst, N, K};
    if (pool)
        hr_pool_run(pool, pack_task, &c);
    else
        pack_task(&c, 0, 1);
    int64_t done = N / HR_TILE16_ROWS * HR_TILE16_ROWS * K;
    memcpy(c.dst + done, c.src + done, sizeof(uint16_t) * (size_t)(N * K - done));
}
