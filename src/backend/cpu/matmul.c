/* CPU matmul op: y[T,N] = x[T,K] w[N,K]^T + bias. Output columns are handed out in chunks
 * from a shared counter (threads that finish early take more), each chunk computed by the
 * kernel of the weight's dtype. */
#include <stdatomic.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/kernels.h"

typedef struct {
    float *y;
    const float *x;
    const hr_tensor *w, *bias;
    int T;
    hr_mm_fn fn;
    long chunk;        /* columns per chunk, a multiple of 16 */
    atomic_long next;  /* first column not yet handed out */
} mm_ctx;

static void add_bias(const mm_ctx *c, long b, long e) {
    long N = c->w->shape[0];
    float bias[16];
    for (long n = b; n < e; n += 16) {
        long len = e - n < 16 ? e - n : 16;
        hr_cpu_to_f32(bias, c->bias, n, len);
        for (int r = 0; r < c->T; r++)
            for (long i = 0; i < len; i++) c->y[r * N + n + i] += bias[i];
    }
}

static void mm_task(void *ctx, int t, int nt) {
    mm_ctx *c = ctx;
    long N = c->w->shape[0], K = c->w->shape[1];
    for (;;) {
        long b = atomic_fetch_add(&c->next, c->chunk);
        if (b >= N) return;
        long e = b + c->chunk < N ? b + c->chunk : N;
        c->fn(c->y, N, c->x, K, c->w->data, (int)K, c->T, b, e);
        if (c->bias) add_bias(c, b, e);
    }
}

void hr_cpu_matmul(hr_backend *be, float *y, const float *x, const hr_tensor *w,
                   const hr_tensor *bias, int T) {
    const hr_cpu_kernels *k = hr_cpu_kernels_get();
    hr_pool *pool = ((hr_cpu_backend *)be)->pool;
    long N = w->shape[0], per_thread = N / (4 * hr_pool_size(pool));
    mm_ctx c = {.y = y, .x = x, .w = w, .bias = bias, .T = T,
                .fn = w->dtype == HR_BF16 ? k->mm_bf16 : w->dtype == HR_F16 ? k->mm_f16 : k->mm_f32};
    c.chunk = per_thread < 16 ? 16 : per_thread / 16 * 16;
    atomic_init(&c.next, 0);
    hr_pool_run(pool, mm_task, &c);
}
