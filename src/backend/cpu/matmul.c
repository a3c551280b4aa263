/* CPU matmul op: y[T,N] = x[T,K] w[N,K]^T + bias, split over output columns (16-column
 * units) across the pool, each part computed by the kernel of the weight's dtype. */
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/kernels.h"

typedef struct {
    float *y;
    const float *x;
    const hr_tensor *w, *bias;
    int T;
    hr_mm_fn fn;
} mm_ctx;

static void mm_task(void *ctx, int t, int nt) {
    mm_ctx *c = ctx;
    long N = c->w->shape[0], K = c->w->shape[1], b, e;
    hr_split_range(N, 16, t, nt, &b, &e);
    if (b >= e) return;
    c->fn(c->y, N, c->x, K, c->w->data, (int)K, c->T, b, e);
    if (!c->bias) return;
    float bias[16];
    for (long n = b; n < e; n += 16) {
        long len = e - n < 16 ? e - n : 16;
        hr_cpu_to_f32(bias, c->bias, n, len);
        for (int r = 0; r < c->T; r++)
            for (long i = 0; i < len; i++) c->y[r * N + n + i] += bias[i];
    }
}

void hr_cpu_matmul(hr_backend *be, float *y, const float *x, const hr_tensor *w,
                   const hr_tensor *bias, int T) {
    const hr_cpu_kernels *k = hr_cpu_kernels_get();
    mm_ctx c = {y, x, w, bias, T, w->dtype == HR_BF16 ? k->mm_bf16 : w->dtype == HR_F16 ? k->mm_f16 : k->mm_f32};
    hr_pool_run(((hr_cpu_backend *)be)->pool, mm_task, &c);
}
