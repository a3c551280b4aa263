/* Mixture-of-experts kernels: routing (softmax, top-k with ties to the lower index, optional
 * renormalisation, one thread per token in the CPU op's order of operations), and the row
 * gather / weighted combine around the per-expert products that cuda_moe.c issues. */
#include <math.h>

#include "backend/cuda/common.cuh"

static __global__ void route_k(int32_t *ids, float *weights, const float *logits, int T, int E,
                               int k, int renorm) {
    HR_PDL_ENTRY();
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= T) return;
    const float *l = logits + (long)t * E;
    float mx = -INFINITY, sum = 0;
    for (int e = 0; e < E; e++)
        mx = fmaxf(mx, l[e]);
    for (int e = 0; e < E; e++)
        sum += expf(l[e] - mx);
    int32_t *id = ids + (long)t * k;
    float *w = weights + (long)t * k, wsum = 0;
    for (int j = 0; j < k; j++) {
        int best = -1;
        for (int e = 0; e < E; e++) {
            int taken = 0;
            for (int i = 0; i < j; i++)
                taken |= id[i] == e;
            if (!taken && (best < 0 || l[e] > l[best])) best = e;
        }
        id[j] = best;
        w[j] = expf(l[best] - mx) / sum;
        wsum += w[j];
    }
    if (renorm)
        for (int j = 0; j < k; j++)
            w[j] /= wsum;
}

extern "C" void hr_cu_moe_route(cudaStream_t s, int32_t *ids, float *weights, const float *logits,
                                int T, int n_experts, int k, int renorm) {
    if (T > 0)
        hr_launch(route_k, (T + 127) / 128, 128, 0, s, ids, weights, logits, T, n_experts, k,
                  renorm);
}

static __global__ void gather_k(float *dst, const float *src, const int32_t *idx, int k, long w) {
    HR_PDL_ENTRY();
    int r = blockIdx.x;
    const float *sr = src + (long)(idx[r] / k) * w;
    for (long i = threadIdx.x; i < w; i += blockDim.x)
        dst[(long)r * w + i] = sr[i];
}

extern "C" void hr_cu_gather_rows(cudaStream_t s, float *dst, const float *src, const int32_t *idx,
                                  int k, int n, long w) {
    if (n > 0) hr_launch(gather_k, n, 256, 0, s, dst, src, idx, k, w);
}

static __global__ void combine_k(float *y, const float *o, const int32_t *slot, const float *wt,
                                 int k, long w) {
    HR_PDL_ENTRY();
    int t = blockIdx.x;
    for (long i = threadIdx.x; i < w; i += blockDim.x) {
        float acc = 0;
        for (int j = 0; j < k; j++)
            acc += wt[(long)t * k + j] * o[(long)slot[(long)t * k + j] * w + i];
        y[(long)t * w + i] = acc;
    }
}

extern "C" void hr_cu_combine_rows(cudaStream_t s, float *y, const float *o, const int32_t *slot,
                                   const float *weights, int T, int k, long w) {
    if (T > 0) hr_launch(combine_k, T, 256, 0, s, y, o, slot, weights, k, w);
}
