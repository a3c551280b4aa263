/* Matrix-vector products for small batches (decode): y[T, N] = x[T, K] w[N, K]^T with T <= 8,
 * one warp per output row, the weight row read once with 16-byte loads and converted in
 * registers, f32 accumulation for every one of the T activation rows. Decode is bound by
 * reading the weights, so this is the kernel that sets batch-1 speed (docs/cuda.md). */
#include <stdint.h>

#include "backend/cuda/common.cuh"

enum { ROWS_PER_BLOCK = 8 };

static __device__ __forceinline__ void unpack8(uint4 p, int dtype, float *f) {
    const uint32_t u[4] = {p.x, p.y, p.z, p.w};
#pragma unroll
    for (int j = 0; j < 4; j++) {
        if (dtype == HR_CU_BF16) {
            f[2 * j] = __uint_as_float(u[j] << 16);
            f[2 * j + 1] = __uint_as_float(u[j] & 0xffff0000u);
        } else {
            __half2 h = *(const __half2 *)&u[j];
            float2 v = __half22float2(h);
            f[2 * j] = v.x;
            f[2 * j + 1] = v.y;
        }
    }
}

/* 16-bit weights, K % 8 == 0, 16-byte aligned rows and activations. */
template <int T, int DT>
static __global__ void __launch_bounds__(256) gemv_vec(float *y, const float *x, const void *w,
                                                       long N, long K) {
    long n = ((long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (n >= N) return;
    const uint4 *wr = (const uint4 *)((const uint16_t *)w + n * K);
    float acc[T];
#pragma unroll
    for (int t = 0; t < T; t++) acc[t] = 0;
    long nv = K / 8;
#pragma unroll 4
    for (long i = lane; i < nv; i += 32) {
        uint4 p = __ldg(wr + i);
        float wf[8];
        unpack8(p, DT, wf);
#pragma unroll
        for (int t = 0; t < T; t++) {
            const float4 *xp = (const float4 *)(x + t * K + i * 8);
            float4 a = __ldg(xp), b = __ldg(xp + 1);
            acc[t] += wf[0] * a.x + wf[1] * a.y + wf[2] * a.z + wf[3] * a.w + wf[4] * b.x +
                      wf[5] * b.y + wf[6] * b.z + wf[7] * b.w;
        }
    }
#pragma unroll
    for (int t = 0; t < T; t++) {
        float v = hr_warp_sum(acc[t]);
        if (lane == 0) y[t * N + n] = v;
    }
}

/* Any dtype and alignment, element by element. */
static __global__ void gemv_any(float *y, const float *x, const void *w, int dtype, int T, long N,
                                long K) {
    long n = ((long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (n >= N) return;
    float acc[HR_CU_GEMV_MAX_T] = {0};
    for (long k = lane; k < K; k += 32) {
        float wv = hr_ld(w, dtype, n * K + k);
        for (int t = 0; t < T; t++) acc[t] += wv * x[t * K + k];
    }
    for (int t = 0; t < T; t++) {
        float v = hr_warp_sum(acc[t]);
        if (lane == 0) y[t * N + n] = v;
    }
}

template <int DT>
static void launch_vec(cudaStream_t s, float *y, const float *x, const void *w, int T, long N,
                       long K) {
    unsigned blocks = (unsigned)((N + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK);
    switch (T) {
#define HR_GEMV_CASE(n) \
    case n: gemv_vec<n, DT><<<blocks, 32 * ROWS_PER_BLOCK, 0, s>>>(y, x, w, N, K); break;
        HR_GEMV_CASE(1) HR_GEMV_CASE(2) HR_GEMV_CASE(3) HR_GEMV_CASE(4)
        HR_GEMV_CASE(5) HR_GEMV_CASE(6) HR_GEMV_CASE(7) HR_GEMV_CASE(8)
#undef HR_GEMV_CASE
    }
}

extern "C" void hr_cu_gemv(cudaStream_t s, float *y, const float *x, const void *w, int dtype,
                           int T, long N, long K) {
    if (T <= 0 || N <= 0) return;
    int aligned = K % 8 == 0 && (uintptr_t)x % 16 == 0 && (uintptr_t)w % 16 == 0;
    if (aligned && dtype == HR_CU_BF16) launch_vec<HR_CU_BF16>(s, y, x, w, T, N, K);
    else if (aligned && dtype == HR_CU_F16) launch_vec<HR_CU_F16>(s, y, x, w, T, N, K);
    else
        gemv_any<<<(unsigned)((N + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK), 32 * ROWS_PER_BLOCK, 0, s>>>(
            y, x, w, dtype, T, N, K);
}
